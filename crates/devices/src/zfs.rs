//! ZFS: which dataset a path is on (`/proc/self/mountinfo`: file system
//! type `zfs`, or `fuse.zfs` for zfs-fuse, mounted from the dataset's name),
//! and its figures through the `zfs` and `zpool` commands — no maintained
//! crate reads them without linking libzfs, whose ABI changes between
//! releases, so csdchar runs the tools, as the reference suggests.

use std::path::Path;
use std::process::Command;

use csdchar_core::zfs::{ArcStats, ZfsUsage, parse_get};

/// Where OpenZFS on Linux publishes the ARC's counters.
const ARCSTATS: &str = "/proc/spl/kstat/zfs/arcstats";

/// The ZFS dataset `path` is on: the mount (longest mount point containing
/// the path) whose type is `zfs` or `fuse.zfs`. None when it is not on ZFS.
pub fn dataset_of(path: &Path) -> Option<String> {
    let path = std::fs::canonicalize(crate::nearest_existing(path)).ok()?;
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<(usize, Option<String>)> = None;
    for line in info.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(mount_point), Some(fstype), Some(source)) =
            (fields.get(4), fields.get(sep + 1), fields.get(sep + 2))
        else {
            continue;
        };
        let mount_point = mount_point.replace("\\040", " ");
        if path.starts_with(&mount_point)
            && best.as_ref().is_none_or(|(n, _)| mount_point.len() > *n)
        {
            let zfs = matches!(*fstype, "zfs" | "fuse.zfs");
            best = Some((mount_point.len(), zfs.then(|| source.replace("\\040", " "))));
        }
    }
    best?.1
}

/// Runs `cmd args…`, its stdout, or why not (not installed, or its own words).
fn run(cmd: &str, args: &[&str]) -> Result<String, String> {
    let program = tool_dirs()
        .into_iter()
        .map(|d| d.join(cmd))
        .find(|p| p.is_file())
        .unwrap_or_else(|| cmd.into());
    let out = Command::new(program).args(args).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "`{cmd}` is not installed (ZFS's tools: the zfsutils-linux or zfs-fuse package)"
            )
        } else {
            format!("{cmd}: {e}")
        }
    })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("failed");
        return Err(format!("{cmd} {}: {}", args.join(" "), first.trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The figures of `dataset` and its pool now, and the ARC's where the
/// kernel module publishes them.
pub fn usage(dataset: &str) -> Result<ZfsUsage, String> {
    let props = parse_get(&run("zfs", &["get", "-Hp", "all", dataset])?);
    let pool_name = dataset.split('/').next().unwrap_or(dataset);
    // OpenZFS prints exact bytes; zfs-fuse's zpool knows neither -H nor -p
    // for `get`, only `list -H` in rounded units.
    let (pool, rounded) = match run("zpool", &["get", "-Hp", "size,allocated,free", pool_name]) {
        Ok(t) => (parse_get(&t), false),
        Err(_) => {
            let t = run(
                "zpool",
                &["list", "-H", "-o", "size,allocated,free", pool_name],
            )?;
            let v: Vec<&str> = t.trim().split('\t').collect();
            let pool = ["size", "allocated", "free"]
                .iter()
                .zip(v)
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            (pool, true)
        }
    };
    let mut u = ZfsUsage::from_properties(dataset, &props, &pool, rounded)?;
    u.arc = std::fs::read_to_string(ARCSTATS)
        .ok()
        .and_then(|t| ArcStats::parse(&t).ok());
    Ok(u)
}

/// The figures of the dataset `path` is on; None when it is not on ZFS.
pub fn usage_of(path: &Path) -> Option<Result<ZfsUsage, String>> {
    dataset_of(path).map(|d| usage(&d))
}

/// Makes the pool of `dataset` commit its open transaction groups, so that
/// `used` counts what was written and freed (ZFS applies both when a
/// transaction group syncs, seconds later; sync(2) only commits the intent
/// log). `zpool sync` where the version has it (OpenZFS 0.8 on); else a
/// property set and cleared again, each of which waits for a sync (zfs-fuse:
/// `used` fell by a removed file's 10 MiB only then, not in 30 s of sync(2)).
pub fn sync_pool(dataset: &str) -> Result<(), String> {
    let pool = dataset.split('/').next().unwrap_or(dataset);
    if run("zpool", &["sync", pool]).is_ok() {
        return Ok(());
    }
    run("zfs", &["set", "csdchar:settle=1", dataset])?;
    run("zfs", &["inherit", "csdchar:settle", dataset]).map(drop)
}

/// Whether a pool can be made here: root, and ZFS's tools, with either
/// the kernel module (OpenZFS) or zfs-fuse (whose daemon a pool then starts).
pub fn preflight() -> Result<(), String> {
    // Safety: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("making a ZFS pool needs root".into());
    }
    missing_tools(&tool_dirs(), Path::new("/sys/module/zfs").exists()).map_or(Ok(()), Err)
}

/// Where ZFS's tools are looked for: PATH, then sbin, which the PATH of
/// `su` or a service may lack.
fn tool_dirs() -> Vec<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain(["/usr/sbin", "/sbin"].map(std::path::PathBuf::from))
        .collect()
}

/// What is missing to make a pool, given the directories to look in and
/// whether the kernel module is loaded: `zpool` and `zfs`, and without the
/// module zfs-fuse.
fn missing_tools(dirs: &[std::path::PathBuf], kernel_module: bool) -> Option<String> {
    let found = |tool: &str| dirs.iter().any(|d| d.join(tool).is_file());
    for tool in ["zpool", "zfs"] {
        if !found(tool) {
            return Some(format!(
                "`{tool}` is not installed (ZFS's tools: the zfsutils-linux or zfs-fuse package)"
            ));
        }
    }
    (!kernel_module && !found("zfs-fuse"))
        .then(|| "neither the zfs kernel module nor zfs-fuse is available".to_string())
}

/// Pids of running `zfs-fuse` daemons.
fn zfs_fuse_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "zfs-fuse")
        })
        .collect()
}

/// Waits up to `secs` for `until` to hold.
fn wait_for(secs: u64, until: impl Fn() -> bool) -> bool {
    let t0 = std::time::Instant::now();
    while !until() {
        if t0.elapsed() > std::time::Duration::from_secs(secs) {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    true
}

/// A zfs-fuse daemon that answers: the running one, or one started here
/// (its pid returned, to stop it after). A daemon still exiting (it takes
/// seconds after SIGTERM, longer after a pool was destroyed) is waited for
/// first: commands sent to it fail.
fn start_zfs_fuse() -> Result<Option<i32>, String> {
    let answers = || run("zpool", &["list"]).is_ok();
    if !zfs_fuse_pids().is_empty() && (answers() || !wait_for(30, || zfs_fuse_pids().is_empty())) {
        return if answers() {
            Ok(None)
        } else {
            Err("a zfs-fuse daemon runs but does not answer `zpool list`".into())
        };
    }
    // A stale pid file makes zfs-fuse exit silently: a fresh name.
    let pid_file = format!("/run/csdchar-zfs-fuse-{}.pid", std::process::id());
    let _ = std::fs::remove_file(&pid_file);
    run("zfs-fuse", &["--pidfile", &pid_file, "--no-kstat-mount"])?;
    let up = wait_for(10, answers);
    let pid = std::fs::read_to_string(&pid_file)
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .or_else(|| zfs_fuse_pids().first().copied());
    let _ = std::fs::remove_file(&pid_file);
    if !up {
        if let Some(pid) = pid {
            stop_zfs_fuse(pid);
        }
        return Err("zfs-fuse did not start (its daemon does not answer `zpool list`)".into());
    }
    Ok(pid)
}

/// Stops a zfs-fuse daemon (SIGTERM) and waits up to 30 s for it to exit.
/// The daemon forks away from the process that started it; when csdchar is a
/// child subreaper (it is once it has started a PostgreSQL server, to reap
/// that server's orphans) the daemon becomes csdchar's child, and its exit
/// a zombie of ours until reaped here.
fn stop_zfs_fuse(pid: i32) {
    // Safety: kill(2) on a daemon this process started, with SIGTERM.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    wait_for(30, || {
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|t| {
                t.rsplit_once(')')
                    .map(|(_, r)| r.trim_start().starts_with('Z'))
            });
        match zombie {
            None => true,
            Some(true) => {
                // Safety: waitpid on one pid with WNOHANG; a pid that is not
                // our child just fails with ECHILD.
                unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
                !Path::new(&format!("/proc/{pid}")).exists()
            }
            Some(false) => false,
        }
    });
}

/// A pool made on a sparse file for a campaign target: mounted on
/// `<dir>/mnt` (mode 0755, so a server running as `postgres` reaches it),
/// with its dataset properties set. [`ZfsPool::teardown`] destroys it,
/// removes its directory and stops the zfs-fuse daemon if it started one.
#[derive(Debug)]
pub struct ZfsPool {
    name: String,
    dir: std::path::PathBuf,
    mount: std::path::PathBuf,
    /// The zfs-fuse daemon this started, stopped at teardown.
    daemon: Option<i32>,
}

impl ZfsPool {
    /// Makes pool `name` of `size` bytes in a new `/var/tmp/<prefix>.XXXXXX`
    /// and sets `properties` on its dataset. A pool of that name that exists
    /// already is refused and left untouched.
    pub fn create(
        name: &str,
        prefix: &str,
        size: u64,
        properties: &[(String, String)],
    ) -> Result<ZfsPool, String> {
        preflight()?;
        let daemon = if Path::new("/sys/module/zfs").exists() {
            None
        } else {
            start_zfs_fuse()?
        };
        let mut pool = ZfsPool {
            name: name.to_string(),
            dir: std::path::PathBuf::new(),
            mount: std::path::PathBuf::new(),
            daemon,
        };
        if run("zpool", &["list", "-H", "-o", "name", name]).is_ok() {
            let e = format!("a ZFS pool named {name} exists already; csdchar leaves it untouched");
            pool.name.clear(); // not ours: teardown must not destroy it
            let _ = pool.teardown();
            return Err(e);
        }
        let made = (|| {
            pool.dir = crate::zram::mkdtemp(&format!("/var/tmp/{prefix}.XXXXXX"))?;
            let image = pool.dir.join("pool.img");
            std::fs::File::create(&image)
                .and_then(|f| f.set_len(size))
                .map_err(|e| format!("{}: {e}", image.display()))?;
            pool.mount = pool.dir.join("mnt");
            run(
                "zpool",
                &[
                    "create",
                    "-f",
                    "-m",
                    &pool.mount.to_string_lossy(),
                    name,
                    &image.to_string_lossy(),
                ],
            )?;
            for (k, v) in properties {
                run("zfs", &["set", &format!("{k}={v}"), name])?;
            }
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&pool.mount, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| format!("{}: {e}", pool.mount.display()))
        })();
        match made {
            Ok(()) => Ok(pool),
            Err(e) => {
                let left = pool.teardown().err();
                Err(left.map_or(e.clone(), |l| format!("{e}; {l}")))
            }
        }
    }

    /// Where the dataset is mounted.
    pub fn mountpoint(&self) -> &Path {
        &self.mount
    }

    /// The pool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Destroys the pool (retrying while a server that just stopped keeps
    /// it busy), removes its directory, and stops a daemon it started; the
    /// error names what was left.
    pub fn teardown(mut self) -> Result<(), String> {
        let mut left = Vec::new();
        if !self.name.is_empty() {
            let mut last = Ok(String::new());
            for _ in 0..40 {
                last = run("zpool", &["destroy", "-f", &self.name]);
                if last.is_ok() || run("zpool", &["list", "-H", "-o", "name", &self.name]).is_err()
                {
                    last = Ok(String::new());
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(250));
            }
            if let Err(e) = last {
                left.push(format!("pool {} ({e})", self.name));
            }
            self.name.clear();
        }
        if !self.dir.as_os_str().is_empty()
            && left.is_empty()
            && let Err(e) = std::fs::remove_dir_all(&self.dir)
        {
            left.push(format!("{} ({e})", self.dir.display()));
        }
        if let Some(pid) = self.daemon.take() {
            stop_zfs_fuse(pid);
        }
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("left behind: {}", left.join(", ")))
        }
    }
}

impl Drop for ZfsPool {
    fn drop(&mut self) {
        // Dropped without teardown (a panic): still leave nothing behind.
        if !self.name.is_empty() || self.daemon.is_some() {
            let me = ZfsPool {
                name: std::mem::take(&mut self.name),
                dir: std::mem::take(&mut self.dir),
                mount: std::mem::take(&mut self.mount),
                daemon: self.daemon.take(),
            };
            let _ = me.teardown();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tools_are_named() {
        let d = tempfile::tempdir().unwrap();
        let dirs = [d.path().to_path_buf()];
        let e = missing_tools(&dirs, false).unwrap();
        assert!(e.starts_with("`zpool` is not installed"), "{e}");
        for tool in ["zpool", "zfs"] {
            std::fs::write(d.path().join(tool), "").unwrap();
        }
        assert_eq!(missing_tools(&dirs, true), None);
        let e = missing_tools(&dirs, false).unwrap();
        assert!(e.contains("nor zfs-fuse"), "{e}");
        std::fs::write(d.path().join("zfs-fuse"), "").unwrap();
        assert_eq!(missing_tools(&dirs, false), None);
    }
}
