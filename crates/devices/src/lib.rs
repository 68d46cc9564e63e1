//! The device edge: which block device holds a path, and what its capacity
//! counters say. Reads sysfs and sends read-only NVMe admin commands; the
//! parsing lives in `csdchar_core::capacity`.
//!
//! The sysfs root can be pointed at a fixture directory with the
//! `CSDCHAR_SYSFS_ROOT` environment variable (tests use it).

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use csdchar_core::capacity::{
    CapacitySnapshot, SfxCapacityStat, SfxExtendedHealth, SfxFreeSpace, SfxWriteCounters, SmartLog,
    ZramIoStat,
};
use csdchar_core::counters::{DiskStats, ZramMmStat};

pub mod btrfs;
mod error;
pub mod identity;
pub mod nvme;
pub mod zfs;
pub mod zram;

pub use error::{DeviceError, DeviceErrorKind, ResolveError};

/// Bytes available on the file system holding `path`, as `df` shows them:
/// root's reserve is left alone (filling it hurts the whole system). None
/// when the path cannot be statted.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let st = rustix::fs::statvfs(path).ok()?;
    Some(st.f_bavail.saturating_mul(st.f_frsize))
}

/// Bytes the file system has allocated for `path` (st_blocks × 512), asked
/// of the file system itself: `statx` with `AT_STATX_FORCE_SYNC`, so a FUSE
/// file system (zfs-fuse) answers rather than the kernel's attribute cache,
/// which keeps the st_blocks of before the pool's last commit (measured: a
/// 16 MiB WAL segment read as 512 bytes after the commit until asked so).
/// Falls back to a plain stat where statx is missing.
pub fn allocated_bytes(path: &Path) -> std::io::Result<u64> {
    use rustix::fs::{AtFlags, CWD, StatxFlags};
    use std::os::unix::fs::MetadataExt;
    match rustix::fs::statx(CWD, path, AtFlags::STATX_FORCE_SYNC, StatxFlags::BLOCKS) {
        Ok(st) if StatxFlags::from_bits_retain(st.stx_mask).contains(StatxFlags::BLOCKS) => {
            Ok(st.stx_blocks * 512)
        }
        Ok(_) | Err(rustix::io::Errno::NOSYS) => Ok(std::fs::metadata(path)?.blocks() * 512),
        Err(e) => Err(e.into()),
    }
}

/// What `csdchar capacity` reads for a target: a ZFS dataset (a path on one,
/// or its name) or the counters of the block device holding the path.
pub enum CapacityTarget {
    /// A ZFS dataset, by name.
    Dataset(String),
    /// A block device.
    Device(BlockDevice),
}

impl CapacityTarget {
    /// Resolves `target` against `sysfs`: a path on ZFS or a dataset's name
    /// first, then the block device holding the path.
    pub fn resolve(sysfs: &Sysfs, target: &Path) -> Result<CapacityTarget, ResolveError> {
        let dataset = zfs::dataset_of(target).or_else(|| {
            let name = target.to_string_lossy().into_owned();
            (!target.exists() && !name.starts_with('/'))
                .then_some(name)
                .filter(|n| zfs::usage(n).is_ok())
        });
        match dataset {
            Some(d) => Ok(CapacityTarget::Dataset(d)),
            None => sysfs.resolve(target).map(CapacityTarget::Device),
        }
    }

    /// One reading, as `csdchar capacity` reports it (with btrfs's own
    /// compression for a path on btrfs).
    pub fn take(
        &self,
        sysfs: &Sysfs,
        target: &Path,
    ) -> Result<csdchar_core::capacity::CapacityResult, DeviceError> {
        let snapshot = match self {
            CapacityTarget::Dataset(d) => {
                let mut s = CapacitySnapshot::default();
                s.add_zfs(zfs::usage(d)?);
                s
            }
            CapacityTarget::Device(dev) => sysfs.snapshot(dev),
        };
        Ok(csdchar_core::capacity::CapacityResult {
            schema: csdchar_core::capacity::CAPACITY_SCHEMA.to_string(),
            tool: csdchar_core::result::ToolInfo::current(),
            taken_at: csdchar_core::start_at::format_rfc3339_millis(std::time::SystemTime::now()),
            target: target.display().to_string(),
            snapshot,
            btrfs: btrfs::usage(target).ok().flatten(),
        })
    }
}

/// The path itself when it exists, else its nearest existing ancestor (where
/// a directory about to be created would get its space from).
pub fn nearest_existing(path: &Path) -> &Path {
    path.ancestors()
        .find(|p| !p.as_os_str().is_empty() && p.exists())
        .unwrap_or(Path::new("."))
}

/// Size in bytes and logical block size of an open block device.
pub fn block_geometry(f: &fs::File) -> std::io::Result<(u64, u32)> {
    use std::io::{Seek, SeekFrom};
    // A block device's end is its size (what BLKGETSIZE64 says); the file's
    // position is put back where it was.
    let mut f2 = f;
    let at = f2.stream_position()?;
    let size = f2.seek(SeekFrom::End(0))?;
    f2.seek(SeekFrom::Start(at))?;
    let lbs = rustix::fs::ioctl_blksszget(f)?;
    Ok((size, lbs.max(512)))
}

/// Environment variable that moves the sysfs root (for fixtures).
pub const SYSFS_ROOT_ENV: &str = "CSDCHAR_SYSFS_ROOT";

/// Where sysfs is mounted: `/sys`, or the fixture directory named by
/// [`SYSFS_ROOT_ENV`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sysfs {
    root: PathBuf,
}

impl Default for Sysfs {
    fn default() -> Self {
        Sysfs::from_env()
    }
}

impl Sysfs {
    /// `/sys`, unless [`SYSFS_ROOT_ENV`] says otherwise.
    pub fn from_env() -> Self {
        let root =
            std::env::var_os(SYSFS_ROOT_ENV).map_or_else(|| PathBuf::from("/sys"), PathBuf::from);
        Sysfs { root }
    }

    /// A sysfs rooted at `root` (a fixture).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Sysfs { root: root.into() }
    }

    /// Whether this is the real /sys (NVMe commands are only sent then).
    pub fn is_real(&self) -> bool {
        self.root == Path::new("/sys")
    }

    fn read(&self, rel: impl AsRef<Path>) -> Option<String> {
        fs::read_to_string(self.root.join(rel)).ok()
    }
}

/// A block device as the kernel names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDevice {
    /// Kernel name (`nvme0n1p2`, `zram0`, `vda`).
    pub name: String,
    /// The whole disk (`nvme0n1` for `nvme0n1p2`; the device itself otherwise).
    pub disk: String,
    /// Device number, major.
    pub major: u32,
    /// Device number, minor.
    pub minor: u32,
}

impl BlockDevice {
    /// Whether this is a partition of `disk`.
    pub fn is_partition(&self) -> bool {
        self.name != self.disk
    }
}

impl Sysfs {
    /// The block device behind `path`: the device itself for a device node,
    /// else the device holding the file system the path is on.
    pub fn resolve(&self, path: &Path) -> Result<BlockDevice, ResolveError> {
        let meta = fs::metadata(path)
            .map_err(|e| ResolveError::Path(format!("{}: {e}", path.display())))?;
        let dev = if meta.file_type().is_block_device() {
            meta.rdev()
        } else {
            meta.dev()
        };
        self.by_number(rustix::fs::major(dev), rustix::fs::minor(dev))
            // btrfs (and other multi-device file systems) give files an anonymous
            // device number: take the device the file system was mounted from.
            .or_else(|| self.mount_source(path))
            .ok_or_else(|| {
            ResolveError::NoBlockDevice(format!(
                "{} is on device {}:{}, which is not a block device (tmpfs, overlay or a network file system?)",
                path.display(),
                rustix::fs::major(dev),
                rustix::fs::minor(dev)
            ))
        })
    }

    /// The block device a path's file system was mounted from, via
    /// /proc/self/mountinfo (the longest mount point containing the path).
    fn mount_source(&self, path: &Path) -> Option<BlockDevice> {
        let path = fs::canonicalize(path).ok()?;
        let info = fs::read_to_string("/proc/self/mountinfo").ok()?;
        let mut best: Option<(usize, String)> = None;
        for line in info.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let Some(sep) = fields.iter().position(|f| *f == "-") else {
                continue;
            };
            let (Some(mount_point), Some(source)) = (fields.get(4), fields.get(sep + 2)) else {
                continue;
            };
            let mount_point = mount_point.replace("\\040", " ");
            if path.starts_with(&mount_point)
                && best.as_ref().is_none_or(|(n, _)| mount_point.len() > *n)
            {
                best = Some((mount_point.len(), source.to_string()));
            }
        }
        let source = best?.1;
        let rdev = fs::metadata(&source)
            .ok()
            .filter(|m| m.file_type().is_block_device())?
            .rdev();
        self.by_number(rustix::fs::major(rdev), rustix::fs::minor(rdev))
    }

    /// The block device with number `major:minor`, if sysfs knows it.
    pub fn by_number(&self, major: u32, minor: u32) -> Option<BlockDevice> {
        let link = self.root.join(format!("dev/block/{major}:{minor}"));
        let target = fs::read_link(&link).ok()?;
        let name = target.file_name()?.to_string_lossy().into_owned();
        // A partition's sysfs directory sits inside its disk's and has a `partition` file.
        let disk = if link.join("partition").exists() {
            target.parent()?.file_name()?.to_string_lossy().into_owned()
        } else {
            name.clone()
        };
        Some(BlockDevice {
            name,
            disk,
            major,
            minor,
        })
    }

    /// The block device called `name` (e.g. `zram0`), if sysfs has it.
    pub fn by_name(&self, name: &str) -> Option<BlockDevice> {
        let dev = self.read(format!("class/block/{name}/dev"))?;
        let (ma, mi) = dev.trim().split_once(':')?;
        self.by_number(ma.parse().ok()?, mi.parse().ok()?)
    }

    /// Block-layer counters of `dev` (a partition's own, if it is one).
    pub fn diskstats(&self, dev: &BlockDevice) -> Option<DiskStats> {
        DiskStats::parse_sys_stat(&self.read(format!("class/block/{}/stat", dev.name))?).ok()
    }

    /// The capacity figures for `path`: its ZFS dataset's when it is on ZFS
    /// (the file system compresses; there is no block device of its own),
    /// else those of the block device behind it ([`Sysfs::resolve`]).
    pub fn snapshot_of(&self, path: &Path) -> Result<CapacitySnapshot, ResolveError> {
        if let Some(dataset) = zfs::dataset_of(path) {
            let usage = zfs::usage(&dataset).map_err(ResolveError::Zfs)?;
            let mut s = CapacitySnapshot::default();
            s.add_zfs(usage);
            return Ok(s);
        }
        let dev = self.resolve(path)?;
        Ok(self.snapshot(&dev))
    }

    /// Everything known about `dev`'s capacity now. Sources that do not
    /// exist on this device leave their figures null.
    pub fn snapshot(&self, dev: &BlockDevice) -> CapacitySnapshot {
        let mut s = CapacitySnapshot {
            device: dev.disk.clone(),
            ..Default::default()
        };
        let size = self
            .read(format!("class/block/{}/size", dev.name))
            .and_then(|t| t.trim().parse().ok());
        s.add_block(size, self.diskstats(dev));
        let disk = format!("block/{}", dev.disk);
        if let Some(mm) = self
            .read(format!("{disk}/mm_stat"))
            .and_then(|t| ZramMmStat::parse(&t).ok())
        {
            let io = self
                .read(format!("{disk}/io_stat"))
                .and_then(|t| ZramIoStat::parse(&t).ok());
            s.add_zram(mm, io);
        }
        if let Some(t) = self.read(format!("{disk}/sfx_smart_features/sfx_capacity_stat")) {
            s.add_sfx_sysfs(SfxCapacityStat::parse(&t));
        }
        if self.is_real() && dev.disk.starts_with("nvme") {
            self.add_nvme(&mut s, dev);
        }
        s
    }

    fn add_nvme(&self, s: &mut CapacitySnapshot, dev: &BlockDevice) {
        let Some(ctrl) = self.nvme_controller(dev) else {
            return;
        };
        let node = PathBuf::from(format!("/dev/{ctrl}"));
        if let Ok(page) = nvme::get_log_page(&node, 0x02, SmartLog::LEN)
            && let Ok(l) = SmartLog::parse(&page)
        {
            s.add_smart(l);
        }
        let model = self
            .read(format!("block/{}/device/model", dev.disk))
            .unwrap_or_default();
        if !model.to_ascii_lowercase().contains("scaleflux") && !model.contains("CSD") {
            return;
        }
        // ScaleFlux vendor pages: read-only log pages and the free-space query.
        if let Ok(b) = nvme::sfx_free_space(&PathBuf::from(format!("/dev/{}", dev.disk)))
            && let Ok(f) = SfxFreeSpace::parse(&b)
        {
            s.add_sfx_free_space(f);
        }
        for lid in [0xC2u8, 0xD2] {
            if let Ok(b) = nvme::get_log_page(&node, lid, SfxExtendedHealth::LEN)
                && let Ok(h) = SfxExtendedHealth::parse(&b)
                && h.total_physical_capability > 0
            {
                s.add_sfx_health(h);
                break;
            }
        }
        if let Ok(b) = nvme::get_log_page(&node, 0xCA, 512)
            && let Ok(w) = SfxWriteCounters::parse(&b)
        {
            s.add_sfx_writes(w);
        }
    }

    /// `nvme0` for `nvme0n1`.
    fn nvme_controller(&self, dev: &BlockDevice) -> Option<String> {
        let device = fs::read_link(self.root.join(format!("block/{}/device", dev.disk))).ok()?;
        let name = device.file_name()?.to_string_lossy().into_owned();
        name.starts_with("nvme").then_some(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A fixture sysfs with a zram disk and a partitioned ScaleFlux-like disk.
    fn fixture() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        let mk = |rel: &str, text: &str| {
            let p = r.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        };
        // zram0 252:0
        mk("devices/virtual/block/zram0/dev", "252:0\n");
        mk("devices/virtual/block/zram0/size", "2097152\n");
        mk(
            "devices/virtual/block/zram0/stat",
            "1 0 8 0 2 0 16 0 0 0 0 0 0 0 0 0 0\n",
        );
        mk(
            "devices/virtual/block/zram0/mm_stat",
            "134217728 33554432 34000000 0 34000000 0 0 0 0\n",
        );
        mk("devices/virtual/block/zram0/io_stat", "0 0 0 0\n");
        // sfdv0n1 250:0 with partition sfdv0n1p1 250:1
        mk("devices/pci/block/sfdv0n1/dev", "250:0\n");
        mk("devices/pci/block/sfdv0n1/size", "7814037168\n");
        mk(
            "devices/pci/block/sfdv0n1/sfx_smart_features/sfx_capacity_stat",
            "free_space=100\nphysical_size=25\nlogical_size=227\ncomp_ratio=9.08\nspace_flag=0\n",
        );
        mk("devices/pci/block/sfdv0n1/sfdv0n1p1/dev", "250:1\n");
        mk("devices/pci/block/sfdv0n1/sfdv0n1p1/partition", "1\n");
        mk("devices/pci/block/sfdv0n1/sfdv0n1p1/size", "1000\n");
        mk(
            "devices/pci/block/sfdv0n1/sfdv0n1p1/stat",
            "0 0 0 0 5 0 40 0 0 0 0\n",
        );
        for (num, target) in [
            ("252:0", "devices/virtual/block/zram0"),
            ("250:0", "devices/pci/block/sfdv0n1"),
            ("250:1", "devices/pci/block/sfdv0n1/sfdv0n1p1"),
        ] {
            fs::create_dir_all(r.join("dev/block")).unwrap();
            symlink(r.join(target), r.join("dev/block").join(num)).unwrap();
        }
        fs::create_dir_all(r.join("class/block")).unwrap();
        fs::create_dir_all(r.join("block")).unwrap();
        for (name, target) in [
            ("zram0", "devices/virtual/block/zram0"),
            ("sfdv0n1", "devices/pci/block/sfdv0n1"),
            ("sfdv0n1p1", "devices/pci/block/sfdv0n1/sfdv0n1p1"),
        ] {
            symlink(r.join(target), r.join("class/block").join(name)).unwrap();
            if !name.contains('p') {
                symlink(r.join(target), r.join("block").join(name)).unwrap();
            }
        }
        d
    }

    #[test]
    fn zram_from_fixture() {
        let d = fixture();
        let sys = Sysfs::at(d.path());
        let dev = sys.by_name("zram0").unwrap();
        assert!(!dev.is_partition());
        let s = sys.snapshot(&dev);
        assert_eq!(s.capacity_bytes, Some(1 << 30));
        assert_eq!(s.logical_bytes, Some(128 << 20));
        assert_eq!(s.physical_bytes, Some(32 << 20));
        assert_eq!(s.compression_ratio, Some(4.0));
        assert_eq!(s.diskstats.unwrap().sectors_written, 16);
        assert_eq!(s.nvme_data_units_written, None);
    }

    #[test]
    fn partition_resolves_to_its_disk() {
        let d = fixture();
        let sys = Sysfs::at(d.path());
        let p = sys.by_number(250, 1).unwrap();
        assert_eq!((p.name.as_str(), p.disk.as_str()), ("sfdv0n1p1", "sfdv0n1"));
        assert!(p.is_partition());
        let s = sys.snapshot(&p);
        assert_eq!(s.device, "sfdv0n1");
        assert_eq!(s.logical_bytes, Some(227));
        assert_eq!(s.compression_ratio, Some(9.08));
        assert_eq!(s.out_of_space, Some(false));
        assert_eq!(
            s.diskstats.unwrap().writes_completed,
            5,
            "the partition's own counters"
        );
        assert!(sys.by_number(9, 9).is_none());
    }

    #[test]
    fn real_paths_resolve_or_say_why() {
        let sys = Sysfs::at("/sys");
        match sys.resolve(Path::new("/var/tmp")) {
            Ok(dev) => assert!(!dev.name.is_empty()),
            Err(e) => assert!(matches!(e, ResolveError::NoBlockDevice(_)), "{e}"),
        }
        assert!(matches!(
            sys.resolve(Path::new("/no/such/path")),
            Err(ResolveError::Path(_))
        ));
    }
}
