//! Pools csdchar makes on a sparse image for a campaign target: marked as csdchar's
//! (a user property and a file beside the image), destroyed on drop (a dead daemon too),
//! and those of dead runs swept.

use std::path::Path;
use std::process::Command;

use super::daemon::{
    Daemon, start_time, start_zfs_fuse, stop_zfs_fuse, zfs_fuse_pids, zfs_reachable,
};
use super::properties::{Flavour, check_property};
use super::tools::{preflight, run};
use crate::{DeviceError, DeviceErrorKind};

/// The pool's user property holding its [`Marker`], set by the command that
/// creates the pool.
pub(super) const MARKER_PROPERTY: &str = "csdchar:run";

/// The file holding the same [`Marker`] in the pool's directory, beside its
/// image.
pub(super) const MARKER_FILE: &str = "csdchar-zfs-run";

/// The pool's image in its directory.
pub(super) const IMAGE_FILE: &str = "pool.img";

/// What proves a pool csdchar's, and whose: one line, in the pool's
/// [`MARKER_PROPERTY`] and in its directory's [`MARKER_FILE`]. A pool is
/// csdchar's when both say the same and the pool's only device is that
/// directory's image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Marker {
    /// The csdchar process that made it: pid and start time.
    pub(super) run: (i32, u64),
    /// Its effective uid.
    pub(super) uid: u32,
    /// The zfs-fuse daemon it would stop after, if any.
    pub(super) daemon: Option<Daemon>,
    /// The pool's name.
    pub(super) pool: String,
    /// The directory of its image and mount point.
    pub(super) dir: std::path::PathBuf,
}

impl Marker {
    pub(super) fn line(&self) -> String {
        let (dpid, dstart) = self.daemon.map_or((0, 0), |d| (d.pid, d.start));
        format!(
            "csdchar-zfs 1 pid {} {} uid {} daemon {dpid} {dstart} pool {} dir {}",
            self.run.0,
            self.run.1,
            self.uid,
            self.pool,
            self.dir.display()
        )
    }

    pub(super) fn parse(line: &str) -> Option<Marker> {
        let rest = line
            .trim_end_matches('\n')
            .strip_prefix("csdchar-zfs 1 pid ")?;
        let (head, dir) = rest.split_once(" dir ")?;
        let w: Vec<&str> = head.split(' ').collect();
        let [pid, start, "uid", uid, "daemon", dpid, dstart, "pool", pool] = w[..] else {
            return None;
        };
        let (dpid, dstart): (i32, u64) = (dpid.parse().ok()?, dstart.parse().ok()?);
        Some(Marker {
            run: (pid.parse().ok()?, start.parse().ok()?),
            uid: uid.parse().ok()?,
            daemon: (dpid > 0).then_some(Daemon {
                pid: dpid,
                start: dstart,
            }),
            pool: pool.to_string(),
            dir: dir.into(),
        })
    }

    /// Whether the process that made it is gone.
    pub(super) fn run_gone(&self) -> bool {
        start_time(self.run.0) != Some(self.run.1)
    }
}

/// This process's effective uid.
pub(super) fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The marker in `dir`, if `dir` is a directory (not a symlink) of this
/// uid holding one that names `dir` itself.
pub(super) fn dir_marker(dir: &Path) -> Option<Marker> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(dir).ok()?;
    if !meta.is_dir() || meta.uid() != euid() {
        return None;
    }
    let file = dir.join(MARKER_FILE);
    if !std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file() && m.uid() == euid()) {
        return None;
    }
    Marker::parse(&std::fs::read_to_string(file).ok()?).filter(|m| m.dir == dir)
}

/// The marker of imported pool `pool` when it proves the pool csdchar's (see
/// [`Marker`]), else None.
pub(super) fn pool_marker(pool: &str) -> Option<Marker> {
    let got = run(
        "zfs",
        &["get", "-H", "-o", "value,source", MARKER_PROPERTY, pool],
    )
    .ok()?;
    let (value, source) = got.trim_end_matches('\n').rsplit_once('\t')?;
    if source != "local" {
        return None;
    }
    let m = Marker::parse(value).filter(|m| m.pool == pool)?;
    if dir_marker(&m.dir).as_ref() != Some(&m) {
        return None;
    }
    // Its config's devices: the lines under the pool's that name a path.
    let image = m.dir.join(IMAGE_FILE).to_string_lossy().into_owned();
    let status = run("zpool", &["status", pool]).ok()?;
    let devices: Vec<&str> = status
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("NAME"))
        .skip(2)
        .map(str::trim_start)
        .filter(|l| l.starts_with('/'))
        .collect();
    let only_image = matches!(devices[..], [d] if d.strip_prefix(image.as_str())
        .is_some_and(|r| r.starts_with(char::is_whitespace)));
    only_image.then_some(m)
}

/// Names of the imported pools.
pub(super) fn pool_names() -> Vec<String> {
    run("zpool", &["list", "-H", "-o", "name"])
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Unmounts what ZFS has mounted at or under `dir`, lazily (MNT_DETACH): the
/// FUSE mount of a killed zfs-fuse daemon answers "Transport endpoint is not
/// connected" to everything but a lazy unmount. Deepest first.
pub(super) fn unmount_dead_under(dir: &Path) {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return;
    };
    let mut points: Vec<std::path::PathBuf> = info
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let sep = f.iter().position(|x| *x == "-")?;
            matches!(*f.get(sep + 1)?, "zfs" | "fuse.zfs").then(|| unescape_mount(f.get(4)?))?
        })
        .map(std::path::PathBuf::from)
        .filter(|p| p.starts_with(dir))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for p in points {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(&p)
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// A mountinfo field with its octal escapes (`\040` for a space) undone.
pub(super) fn unescape_mount(field: &str) -> Option<String> {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && let Some(code) = field
                .get(i + 1..i + 4)
                .and_then(|o| u8::from_str_radix(o, 8).ok())
        {
            out.push(code);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// How long [`destroy_pool`] retries the pool of a run that is gone while it
/// stays busy: the files of a run killed in the middle of its I/O are
/// released by the kernel, and their last writes served by the zfs-fuse
/// daemon, some time after the process is gone (seconds, more on a loaded
/// machine).
const STALE_BUSY_FOR: std::time::Duration = std::time::Duration::from_secs(60);

/// How long [`destroy_pool`] retries this run's own pool while it stays busy
/// (a server that just stopped): short, as a Ctrl-C must end within seconds.
const OWN_BUSY_FOR: std::time::Duration = std::time::Duration::from_secs(15);

/// Destroys pool `name` (retrying while a server that just stopped, or I/O of
/// a run that is gone, keeps it busy). A pool that is not imported is gone
/// already: csdchar's pools are made with `cachefile=none`, so one whose
/// zfs-fuse daemon died went with it and no daemon imports it again. When it
/// stays busy the error names the processes holding files under `dir` (its
/// directory), or says that none does.
pub(super) fn destroy_pool(
    name: &str,
    dir: &Path,
    busy_for: std::time::Duration,
) -> Result<(), DeviceError> {
    let t0 = std::time::Instant::now();
    loop {
        let last = match run("zpool", &["destroy", "-f", name]) {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        if !zfs_reachable() || run("zpool", &["list", "-H", "-o", "name", name]).is_err() {
            return Ok(());
        }
        if t0.elapsed() > busy_for {
            let holders = processes_holding(dir);
            let kind = last.kind;
            let message = if holders.is_empty() {
                format!(
                    "{last} (for {} s; no process holds a file under {})",
                    t0.elapsed().as_secs(),
                    dir.display()
                )
            } else {
                format!(
                    "{last} (for {} s; held by {})",
                    t0.elapsed().as_secs(),
                    holders.join(", ")
                )
            };
            return Err(DeviceError::new(kind, message));
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// "pid N (comm)" of every process with an open file, working directory or
/// root under `dir` (those of other users are seen by root only).
fn processes_holding(dir: &Path) -> Vec<String> {
    let under =
        |link: std::path::PathBuf| std::fs::read_link(link).is_ok_and(|t| t.starts_with(dir));
    super::daemon::all_pids()
        .filter(|pid| {
            let p = std::path::PathBuf::from(format!("/proc/{pid}"));
            under(p.join("cwd"))
                || under(p.join("root"))
                || std::fs::read_dir(p.join("fd"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|fd| under(fd.path()))
        })
        .map(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            format!("pid {pid} ({})", comm.trim())
        })
        .collect()
}

/// Removes a pool's directory once its pool is gone: dead FUSE mounts first.
pub(super) fn remove_pool_dir(dir: &Path) -> Result<(), DeviceError> {
    unmount_dead_under(dir);
    std::fs::remove_dir_all(dir).map_err(|e| {
        DeviceError::new(
            DeviceErrorKind::Os(e.kind()),
            format!("{} ({e})", dir.display()),
        )
    })
}

/// What the sweep of csdchar's stale pools did.
#[derive(Debug, Default)]
pub(super) struct Swept {
    /// One line per pool or directory removed or left.
    notes: Vec<String>,
    /// The zfs-fuse daemon a gone run had started and would have stopped,
    /// still running: this run stops it instead.
    daemon: Option<Daemon>,
}

/// Removes what csdchar runs that are gone (killed: SIGKILL, a crash, the
/// machine's end) left of their pools, as the stale temporary clusters are
/// swept: only what a [`Marker`] proves csdchar's, of this uid, whose run is
/// gone. An imported pool is destroyed with its directory; a directory whose
/// pool is not imported (it went with its zfs-fuse daemon) is removed after
/// its dead mounts are unmounted. `tmp` is where pool directories are made.
pub(super) fn sweep_stale(tmp: &Path) -> Swept {
    let mut swept = Swept::default();
    let me = euid();
    let adopt = |swept: &mut Swept, m: &Marker| {
        if let Some(d) = m.daemon
            && swept.daemon.is_none()
            && d.alive()
            && zfs_fuse_pids().contains(&d.pid)
        {
            swept.daemon = Some(d);
        }
    };
    let pools = pool_names();
    for pool in &pools {
        let Some(m) = pool_marker(pool) else { continue };
        if m.uid != me || !m.run_gone() {
            continue; // another user's, or a live run's
        }
        match destroy_pool(pool, &m.dir, STALE_BUSY_FOR).and_then(|()| remove_pool_dir(&m.dir)) {
            Ok(()) => swept.notes.push(format!(
                "removed ZFS pool {pool} and {}: left by a csdchar run (pid {}) that is gone",
                m.dir.display(),
                m.run.0
            )),
            Err(e) => swept.notes.push(format!(
                "could not remove ZFS pool {pool} of a csdchar run (pid {}) that is gone: {e}",
                m.run.0
            )),
        }
        adopt(&mut swept, &m);
    }
    let pools = pool_names();
    for entry in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
        let dir = entry.path();
        let Some(m) = dir_marker(&dir) else { continue };
        // An imported pool of its name is a live run's, or not proven ours: left.
        if m.uid != me || !m.run_gone() || pools.contains(&m.pool) {
            continue;
        }
        match remove_pool_dir(&dir) {
            Ok(()) => swept.notes.push(format!(
                "removed {}: the image of ZFS pool {} of a csdchar run (pid {}) that is gone; \
                 the pool went with its zfs-fuse daemon",
                dir.display(),
                m.pool,
                m.run.0
            )),
            Err(e) => swept.notes.push(format!(
                "could not remove the image of ZFS pool {} of a csdchar run (pid {}) that is gone: {e}",
                m.pool, m.run.0
            )),
        }
        adopt(&mut swept, &m);
    }
    swept
}

/// Where pool directories are made.
pub(super) const POOL_ROOT: &str = "/var/tmp";

/// A pool made on a sparse file for a campaign target: mounted on
/// `<dir>/mnt` (mode 0755, so a server running as `postgres` reaches it),
/// with its dataset properties set. [`ZfsPool::teardown`] destroys it,
/// removes its directory and stops the zfs-fuse daemon if it started one.
///
/// The pool is made with `cachefile=none`: it never enters
/// `/var/lib/zfs/zpool.cache`, so a zfs-fuse daemon that dies takes it along
/// (teardown then unmounts the dead FUSE mount lazily and removes the image)
/// and no daemon started later imports it again. It carries a [`Marker`];
/// what a killed csdchar left is removed by the next [`ZfsPool::create`].
#[derive(Debug)]
pub struct ZfsPool {
    name: String,
    dir: std::path::PathBuf,
    mount: std::path::PathBuf,
    /// The zfs-fuse daemon this started (or took over from a gone run),
    /// stopped at teardown.
    daemon: Option<Daemon>,
    /// The pools that daemon held when this took it on (those it imported
    /// from zpool.cache at start), but a running csdchar's: stopping it
    /// leaves them as they were. A pool made in it since keeps it running.
    daemon_pools: Vec<String>,
    /// What the sweep of stale pools did.
    notes: Vec<String>,
}

impl ZfsPool {
    /// Makes pool `name` of `size` bytes in a new `/var/tmp/<prefix>.XXXXXX`
    /// with `properties` on its dataset, first removing what csdchar runs
    /// that are gone left of theirs ([`ZfsPool::notes`] says what). A
    /// property value `zfs` would refuse is refused before anything is made;
    /// a pool of that name that exists already is refused and left untouched.
    pub fn create(
        name: &str,
        prefix: &str,
        size: u64,
        properties: &[(String, String)],
    ) -> Result<ZfsPool, DeviceError> {
        let flavour = Flavour::here();
        for (k, v) in properties {
            check_property(flavour, k, v).map_err(|e| e.context(format_args!("{k}={v}")))?;
        }
        preflight()?;
        let daemon = match flavour {
            Flavour::OpenZfs => None,
            Flavour::ZfsFuse => start_zfs_fuse()?,
        };
        let mut pool = ZfsPool {
            name: String::new(),
            dir: std::path::PathBuf::new(),
            mount: std::path::PathBuf::new(),
            daemon,
            daemon_pools: Vec::new(),
            notes: Vec::new(),
        };
        let swept = sweep_stale(Path::new(POOL_ROOT));
        pool.notes = swept.notes;
        pool.daemon = pool.daemon.or(swept.daemon);
        if pool.daemon.is_some() {
            pool.daemon_pools = pool_names()
                .into_iter()
                .filter(|p| {
                    run("zfs", &["get", "-H", "-o", "value", MARKER_PROPERTY, p])
                        .ok()
                        .and_then(|v| Marker::parse(v.trim()))
                        .is_none_or(|m| m.run_gone())
                })
                .collect();
        }
        if run("zpool", &["list", "-H", "-o", "name", name]).is_ok() {
            let whose = match run("zfs", &["get", "-H", "-o", "value", MARKER_PROPERTY, name])
                .ok()
                .and_then(|v| Marker::parse(v.trim()))
            {
                Some(m) if !m.run_gone() => format!(" (a csdchar run, pid {}, uses it)", m.run.0),
                _ => String::new(),
            };
            let mut e = format!(
                "a ZFS pool named {name} exists already{whose}; csdchar leaves it untouched"
            );
            for note in &pool.notes {
                e.push_str(&format!("; {note}"));
            }
            let _ = pool.teardown(); // stops a daemon it started; the pool is not ours
            return Err(DeviceError::new(DeviceErrorKind::Refused, e));
        }
        pool.name = name.to_string();
        let made = (|| {
            pool.dir = crate::zram::mkdtemp(&format!("{POOL_ROOT}/{prefix}.XXXXXX"))?;
            let marker = Marker {
                run: (
                    std::process::id() as i32,
                    start_time(std::process::id() as i32).unwrap_or(0),
                ),
                uid: euid(),
                daemon: pool.daemon,
                pool: name.to_string(),
                dir: pool.dir.clone(),
            }
            .line();
            let file = pool.dir.join(MARKER_FILE);
            std::fs::write(&file, format!("{marker}\n"))
                .map_err(|e| DeviceError::os(file.display(), &e))?;
            let image = pool.dir.join(IMAGE_FILE);
            std::fs::File::create(&image)
                .and_then(|f| f.set_len(size))
                .map_err(|e| DeviceError::os(image.display(), &e))?;
            pool.mount = pool.dir.join("mnt");
            // Properties and marker in the creating command: a value zfs
            // refuses leaves no pool, and no pool is ever without its marker.
            let mut args: Vec<String> = ["create", "-f", "-o", "cachefile=none", "-m"]
                .map(String::from)
                .into();
            args.push(pool.mount.to_string_lossy().into_owned());
            for (k, v) in properties {
                args.extend(["-O".to_string(), format!("{k}={v}")]);
            }
            args.extend(["-O".to_string(), format!("{MARKER_PROPERTY}={marker}")]);
            args.extend([name.to_string(), image.to_string_lossy().into_owned()]);
            if let Err(e) = run(
                "zpool",
                &args.iter().map(String::as_str).collect::<Vec<_>>(),
            ) {
                // Not made: not ours to destroy (another may have made one of that name since).
                pool.name.clear();
                return Err(e);
            }
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&pool.mount, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| DeviceError::os(pool.mount.display(), &e))
        })();
        match made {
            Ok(()) => Ok(pool),
            Err(e) => match pool.teardown() {
                Ok(()) => Err(e),
                Err(left) => Err(DeviceError::new(e.kind, format!("{e}; {left}"))),
            },
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

    /// What [`ZfsPool::create`] removed (or had to leave) of the pools of
    /// csdchar runs that are gone, one line each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Destroys the pool (retrying while a server that just stopped keeps
    /// it busy; one whose zfs-fuse daemon died is gone with it), unmounts
    /// what is left mounted of it lazily, removes its directory, and stops a
    /// daemon it started; the error names what was left.
    pub fn teardown(mut self) -> Result<(), DeviceError> {
        // What is left, each with what removes it.
        let mut left: Vec<String> = Vec::new();
        let name = std::mem::take(&mut self.name);
        let dir = std::mem::take(&mut self.dir);
        let pool_gone = match (name.is_empty(), destroy_pool(&name, &dir, OWN_BUSY_FOR)) {
            (true, _) | (false, Ok(())) => true,
            (false, Err(e)) => {
                left.push(format!(
                    "ZFS pool {name} ({e}) and {} (its image): the next csdchar run that makes a ZFS \
                     pool removes them once this one has ended, or: zpool destroy -f {name}; rm -r {}",
                    dir.display(),
                    dir.display()
                ));
                false
            }
        };
        if pool_gone
            && !dir.as_os_str().is_empty()
            && let Err(e) = remove_pool_dir(&dir)
        {
            left.push(format!(
                "{e}: remove it once nothing uses it: umount -l {0}/mnt; rm -r {0}",
                dir.display()
            ));
        }
        if let Some(d) = self.daemon.take() {
            let others: Vec<String> = if zfs_reachable() {
                pool_names()
                    .into_iter()
                    .filter(|p| *p != name && !self.daemon_pools.contains(p))
                    .collect()
            } else {
                Vec::new()
            };
            if others.is_empty() {
                stop_zfs_fuse(d);
            } else {
                left.push(format!(
                    "the zfs-fuse daemon (pid {}) csdchar started, kept for the pool(s) made in it \
                     since: {}; stop it once they are gone: kill {}",
                    d.pid,
                    others.join(", "),
                    d.pid
                ));
            }
        }
        if left.is_empty() {
            Ok(())
        } else {
            Err(DeviceError::new(
                DeviceErrorKind::LeftBehind,
                format!("left behind: {}", left.join("; ")),
            ))
        }
    }
}

impl Drop for ZfsPool {
    fn drop(&mut self) {
        // Dropped without teardown (a panic): still leave nothing behind.
        if !self.name.is_empty() || !self.dir.as_os_str().is_empty() || self.daemon.is_some() {
            let me = ZfsPool {
                name: std::mem::take(&mut self.name),
                dir: std::mem::take(&mut self.dir),
                mount: std::mem::take(&mut self.mount),
                daemon: self.daemon.take(),
                daemon_pools: std::mem::take(&mut self.daemon_pools),
                notes: Vec::new(),
            };
            let _ = me.teardown();
        }
    }
}
