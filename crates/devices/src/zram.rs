//! A zram device with a file system on it, made for a run and removed after
//! it: what `scripts/bench/zram-ext4.sh` does, as a guard. Root only.
//!
//! The sequence: `hot_add` a device (loading the module if needed), set its
//! compression algorithm and disk size, make the file system, mount it with
//! `-o discard` (freed blocks leave the drive) on a new
//! `/var/tmp/<prefix>.XXXXXX` directory that everyone may enter (mode 0755, so
//! a server running as `postgres` reaches its data directory). Teardown
//! unmounts (retrying while the last writer lets go), removes the directory,
//! resets the device (retrying while udev still probes it) and hot-removes it;
//! dropping a [`ZramMount`] does the same.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::sleep;
use std::time::Duration;

use crate::{DeviceError, DeviceErrorKind};

/// zram's control directory.
const CONTROL: &str = "/sys/class/zram-control";

/// File systems a zram device can be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZramFilesystem {
    /// `mkfs.ext4 -q -F` (the default).
    Ext4,
    /// `mkfs.xfs -q -f`.
    Xfs,
    /// `mkfs.btrfs -q -f`.
    Btrfs,
}

impl ZramFilesystem {
    /// Names accepted by [`ZramFilesystem::parse`].
    pub const NAMES: &'static [&'static str] = &["ext4", "xfs", "btrfs"];

    /// `ext4`, `xfs` or `btrfs`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "ext4" => Some(ZramFilesystem::Ext4),
            "xfs" => Some(ZramFilesystem::Xfs),
            "btrfs" => Some(ZramFilesystem::Btrfs),
            _ => None,
        }
    }

    /// The name, as [`ZramFilesystem::parse`] takes it.
    pub fn name(self) -> &'static str {
        match self {
            ZramFilesystem::Ext4 => "ext4",
            ZramFilesystem::Xfs => "xfs",
            ZramFilesystem::Btrfs => "btrfs",
        }
    }

    /// The mkfs program and its quiet, force options.
    fn mkfs(self) -> (&'static str, [&'static str; 2]) {
        match self {
            ZramFilesystem::Ext4 => ("mkfs.ext4", ["-q", "-F"]),
            ZramFilesystem::Xfs => ("mkfs.xfs", ["-q", "-f"]),
            ZramFilesystem::Btrfs => ("mkfs.btrfs", ["-q", "-f"]),
        }
    }
}

/// What to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZramConfig {
    /// Disk size in bytes (what the device claims; memory is used for what it stores).
    pub disksize: u64,
    /// Compression algorithm (`lz4`, `zstd`, `lzo-rle`, …; one the kernel offers).
    pub algorithm: String,
    /// File system made on it.
    pub filesystem: ZramFilesystem,
    /// The mount directory is `/var/tmp/<prefix>.XXXXXX`.
    pub prefix: String,
}

/// Checks that [`ZramMount::create`] can work here, without changing
/// anything: root, zram available (or loadable), the mkfs program on PATH.
pub fn preflight(filesystem: ZramFilesystem) -> Result<(), DeviceError> {
    if rustix::process::geteuid().as_raw() != 0 {
        return Err(DeviceError::new(
            DeviceErrorKind::NeedsRoot,
            "making a zram device needs root",
        ));
    }
    if !Path::new(CONTROL).exists() && !Path::new("/sys/module/zram").exists() {
        let loaded = Command::new("modprobe")
            .arg("zram")
            .status()
            .is_ok_and(|s| s.success());
        if !loaded || !Path::new(CONTROL).exists() {
            return Err(DeviceError::new(
                DeviceErrorKind::Missing,
                "zram is not available (modprobe zram failed)",
            ));
        }
    }
    let (mkfs, _) = filesystem.mkfs();
    let on_path = std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p)
            .chain([PathBuf::from("/sbin"), PathBuf::from("/usr/sbin")])
            .any(|d| d.join(mkfs).exists())
    });
    if !on_path {
        return Err(DeviceError::new(
            DeviceErrorKind::Missing,
            format!("{mkfs} is not installed"),
        ));
    }
    Ok(())
}

/// A zram device, its file system and its mount; torn down on drop.
#[derive(Debug)]
pub struct ZramMount {
    id: u32,
    mountpoint: PathBuf,
    mounted: bool,
    released: bool,
}

impl ZramMount {
    /// Makes the device, its file system and the mount. On error nothing is
    /// left behind (what was made is torn down).
    pub fn create(config: &ZramConfig) -> Result<ZramMount, DeviceError> {
        preflight(config.filesystem)?;
        let id: u32 = fs::read_to_string(Path::new(CONTROL).join("hot_add"))
            .map_err(|e| DeviceError::os("zram hot_add", &e))?
            .trim()
            .parse()
            .map_err(|e| DeviceError::tool(format!("zram hot_add: {e}")))?;
        let mut z = ZramMount {
            id,
            mountpoint: PathBuf::new(),
            mounted: false,
            released: false,
        };
        // On error, `z` is dropped here and removes the device.
        z.mountpoint = mkdtemp(&format!("/var/tmp/{}.XXXXXX", config.prefix))?;
        z.write_attr("comp_algorithm", &config.algorithm)?;
        z.write_attr("disksize", &config.disksize.to_string())?;
        let dev = z.device();
        // udev creates the node after hot_add; wait for it a little.
        for _ in 0..50 {
            if dev.exists() {
                break;
            }
            sleep(Duration::from_millis(100));
        }
        let (mkfs, opts) = config.filesystem.mkfs();
        run(Command::new(mkfs).args(opts).arg(&dev))?;
        run(Command::new("mount")
            .args(["-o", "discard"])
            .arg(&dev)
            .arg(&z.mountpoint))?;
        z.mounted = true;
        fs::set_permissions(&z.mountpoint, fs::Permissions::from_mode(0o755)).map_err(|e| {
            DeviceError::os(format_args!("chmod 0755 {}", z.mountpoint.display()), &e)
        })?;
        Ok(z)
    }

    /// The N of `/dev/zramN`.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// `/dev/zramN`.
    pub fn device(&self) -> PathBuf {
        PathBuf::from(format!("/dev/zram{}", self.id))
    }

    /// Where its file system is mounted.
    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// Unmounts, removes the directory and the device. Errors say what was
    /// left behind.
    pub fn teardown(mut self) -> Result<(), DeviceError> {
        self.release()
    }

    fn write_attr(&self, attr: &str, value: &str) -> Result<(), DeviceError> {
        let p = format!("/sys/block/zram{}/{attr}", self.id);
        fs::write(&p, value).map_err(|e| DeviceError::os(format_args!("echo {value} > {p}"), &e))
    }

    fn release(&mut self) -> Result<(), DeviceError> {
        if self.released {
            return Ok(());
        }
        self.released = true;
        let mut left = Vec::new();
        if self.mounted {
            // A server's last writes can keep the mount busy for a moment.
            let mut done = false;
            for _ in 0..50 {
                let ok = Command::new("umount")
                    .arg(&self.mountpoint)
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if ok || !is_mountpoint(&self.mountpoint) {
                    done = true;
                    break;
                }
                sleep(Duration::from_millis(200));
            }
            if !done {
                left.push(format!("{} is still mounted", self.mountpoint.display()));
            }
        }
        if !self.mountpoint.as_os_str().is_empty()
            && !is_mountpoint(&self.mountpoint)
            && fs::remove_dir(&self.mountpoint).is_err()
        {
            left.push(format!("directory {}", self.mountpoint.display()));
        }
        if !retry(50, Duration::from_millis(100), || {
            self.write_attr("reset", "1")
        }) {
            left.push(format!("zram{} could not be reset", self.id));
        } else if !retry(20, Duration::from_millis(100), || {
            fs::write(Path::new(CONTROL).join("hot_remove"), self.id.to_string())
        }) {
            left.push(format!("zram{} could not be removed", self.id));
        }
        if left.is_empty() {
            Ok(())
        } else {
            Err(DeviceError::new(
                DeviceErrorKind::LeftBehind,
                format!("zram teardown left: {}", left.join(", ")),
            ))
        }
    }
}

impl Drop for ZramMount {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            eprintln!("warning: {e}");
        }
    }
}

fn retry<E>(times: u32, pause: Duration, mut f: impl FnMut() -> Result<(), E>) -> bool {
    for _ in 0..times {
        if f().is_ok() {
            return true;
        }
        sleep(pause);
    }
    false
}

fn run(cmd: &mut Command) -> Result<(), DeviceError> {
    let shown = format!("{cmd:?}").replace('"', "");
    let out = cmd.output().map_err(|e| DeviceError::os(&shown, &e))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(DeviceError::tool(format!(
        "{shown}: {}",
        err.lines().next().unwrap_or("failed").trim()
    )))
}

/// Whether `dir` is the root of a mount (its device differs from its parent's).
fn is_mountpoint(dir: &Path) -> bool {
    let (Ok(a), Some(Ok(b))) = (fs::metadata(dir), dir.parent().map(fs::metadata)) else {
        return false;
    };
    a.dev() != b.dev()
}

/// A new directory from a `…XXXXXX` template (six random characters, as mkdtemp),
/// mode 0755 so the server's user can enter it.
pub(crate) fn mkdtemp(template: &str) -> Result<PathBuf, DeviceError> {
    let stem = template.strip_suffix("XXXXXX").ok_or_else(|| {
        DeviceError::new(
            DeviceErrorKind::Invalid,
            format!("mkdtemp {template}: the template must end in XXXXXX"),
        )
    })?;
    let (dir, prefix) = stem.rsplit_once('/').unwrap_or((".", stem));
    let dir = if dir.is_empty() { "/" } else { dir };
    let path = tempfile::Builder::new()
        .prefix(prefix)
        .rand_bytes(6)
        .tempdir_in(dir)
        .map_err(|e| DeviceError::os(format_args!("mkdtemp {template}"), &e))?
        .keep();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
        .map_err(|e| DeviceError::os(format_args!("chmod 0755 {}", path.display()), &e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filesystems_round_trip() {
        for n in ZramFilesystem::NAMES {
            assert_eq!(ZramFilesystem::parse(n).unwrap().name(), *n);
        }
        assert_eq!(ZramFilesystem::parse("ntfs"), None);
    }

    #[test]
    fn mkdtemp_makes_an_enterable_directory() {
        let p = mkdtemp("/tmp/csdchar-zram-test.XXXXXX").unwrap();
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
        assert!(!is_mountpoint(&p));
        fs::remove_dir(&p).unwrap();
    }

    #[test]
    fn makes_mounts_and_removes_a_device_as_root() {
        if preflight(ZramFilesystem::Ext4).is_err() {
            eprintln!("skipped: needs root, zram and mkfs.ext4");
            return;
        }
        let z = ZramMount::create(&ZramConfig {
            disksize: 128 << 20,
            algorithm: "lz4".into(),
            filesystem: ZramFilesystem::Ext4,
            prefix: "csdchar-zram-test".into(),
        })
        .unwrap();
        let dir = z.mountpoint().to_path_buf();
        assert!(is_mountpoint(&dir));
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o755
        );
        let dev = crate::Sysfs::from_env().resolve(&dir).unwrap();
        assert_eq!(dev.name, format!("zram{}", z.id()));
        fs::write(dir.join("f"), vec![7u8; 1 << 20]).unwrap();
        let id = z.id();
        z.teardown().unwrap();
        assert!(!dir.exists());
        assert!(!Path::new(&format!("/sys/block/zram{id}")).exists());
    }
}

/// How many pages zram's allocator (zsmalloc) chains into one zspage on the
/// running kernel: `CONFIG_ZSMALLOC_CHAIN_SIZE` from `/boot/config-<release>`
/// when that file exists, else the kernel's default — 8 from Linux 6.2, 4
/// before. What [`csdchar_core::compressibility::zram_whole_page_at`] takes.
pub fn zsmalloc_chain_size() -> u32 {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let release = release.trim();
    let configured = fs::read_to_string(format!("/boot/config-{release}"))
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("CONFIG_ZSMALLOC_CHAIN_SIZE="))
                .and_then(|v| v.trim().parse().ok())
        });
    configured.unwrap_or_else(|| default_chain_size(release))
}

/// zsmalloc's default chain size for a kernel release like "6.18.44-fc".
fn default_chain_size(release: &str) -> u32 {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse::<u32>().ok());
    match (parts.next(), parts.next()) {
        (Some(major), Some(minor)) if (major, minor) >= (6, 2) => 8,
        (Some(_), Some(_)) => 4,
        _ => 8,
    }
}

#[cfg(test)]
mod chain_tests {
    #[test]
    fn default_chain_size_follows_the_kernel_release() {
        assert_eq!(super::default_chain_size("6.18.44-fc-v657"), 8);
        assert_eq!(super::default_chain_size("6.2.0"), 8);
        assert_eq!(super::default_chain_size("6.1.90-amd64"), 4);
        assert_eq!(super::default_chain_size("5.15.0-91-generic"), 4);
    }
}
