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
    missing_tools(&tool_dirs(), Path::new(KERNEL_MODULE).exists()).map_or(Ok(()), Err)
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

/// Where OpenZFS's kernel module shows itself once loaded.
const KERNEL_MODULE: &str = "/sys/module/zfs";

/// Which ZFS makes pools here; their `zfs set` takes different values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// OpenZFS, the kernel module (zfsutils-linux).
    OpenZfs,
    /// zfs-fuse (pool version 23): no lz4, zstd, sync, recordsize over 128k.
    ZfsFuse,
}

impl Flavour {
    /// The one that would make a pool here: the kernel module's when it is
    /// loaded, else zfs-fuse's (what [`preflight`] requires then).
    pub fn here() -> Flavour {
        if Path::new(KERNEL_MODULE).exists() {
            Flavour::OpenZfs
        } else {
            Flavour::ZfsFuse
        }
    }

    /// Its name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Flavour::OpenZfs => "OpenZFS",
            Flavour::ZfsFuse => "zfs-fuse",
        }
    }
}

/// The values `zfs set` of `flavour` takes for `property` as it prints them
/// when refusing one, and whether `value` is among them; None for a property
/// it does not know. zfs-fuse's are what its `zfs set` prints (checked
/// against it in tests/zfs.rs); OpenZFS's those of its `zfs_prop.c` (2.2),
/// whose older releases refuse the newest at `zpool create`, before a pool
/// exists.
fn allowed(flavour: Flavour, property: &str, value: &str) -> Option<(String, bool)> {
    let fuse = flavour == Flavour::ZfsFuse;
    let level = |v: &str, prefix: &str, ok: &dyn Fn(u32) -> bool| {
        v.strip_prefix(prefix)
            .filter(|n| !n.starts_with('0') && !n.starts_with('+'))
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(ok)
    };
    let one_of = |shown: &str, names: &[&str], extra: bool| {
        Some((shown.to_string(), names.contains(&value) || extra))
    };
    match property {
        "compression" if fuse => one_of(
            "on | off | lzjb | gzip | gzip-[1-9] | zle",
            &["on", "off", "lzjb", "gzip", "zle"],
            level(value, "gzip-", &|n| (1..=9).contains(&n)),
        ),
        "compression" => one_of(
            "on | off | lzjb | gzip | gzip-[1-9] | zle | lz4 | zstd | zstd-[1-19] | \
             zstd-fast | zstd-fast-[1-10,20,30,40,50,60,70,80,90,100,500,1000]",
            &[
                "on",
                "off",
                "lzjb",
                "gzip",
                "zle",
                "lz4",
                "zstd",
                "zstd-fast",
            ],
            level(value, "gzip-", &|n| (1..=9).contains(&n))
                || level(value, "zstd-", &|n| (1..=19).contains(&n))
                || level(value, "zstd-fast-", &|n| {
                    (1..=10).contains(&n) || (n <= 100 && n % 10 == 0) || n == 500 || n == 1000
                }),
        ),
        "checksum" if fuse => one_of(
            "on | off | fletcher2 | fletcher4 | sha256",
            &["on", "off", "fletcher2", "fletcher4", "sha256"],
            false,
        ),
        "checksum" => one_of(
            "on | off | fletcher2 | fletcher4 | sha256 | noparity | sha512 | skein | edonr | blake3",
            &[
                "on",
                "off",
                "fletcher2",
                "fletcher4",
                "sha256",
                "noparity",
                "sha512",
                "skein",
                "edonr",
                "blake3",
            ],
            false,
        ),
        "dedup" if fuse => one_of(
            "on | off | verify | sha256[,verify]",
            &["on", "off", "verify", "sha256", "sha256,verify"],
            false,
        ),
        "dedup" => one_of(
            "on | off | verify | sha256[,verify] | sha512[,verify] | skein[,verify] | \
             edonr,verify | blake3[,verify]",
            &[
                "on",
                "off",
                "verify",
                "sha256",
                "sha256,verify",
                "sha512",
                "sha512,verify",
                "skein",
                "skein,verify",
                "edonr,verify",
                "blake3",
                "blake3,verify",
            ],
            false,
        ),
        "primarycache" | "secondarycache" => {
            one_of("all | none | metadata", &["all", "none", "metadata"], false)
        }
        "atime" => one_of("on | off", &["on", "off"], false),
        "logbias" => one_of("latency | throughput", &["latency", "throughput"], false),
        "copies" => one_of("1 | 2 | 3", &["1", "2", "3"], false),
        "sync" if fuse => None,
        "sync" => one_of(
            "standard | always | disabled",
            &["standard", "always", "disabled"],
            false,
        ),
        "recordsize" => {
            let max = if fuse {
                128 << 10
            } else {
                // What the module allows new pools (1M by default, 16M from 2.2).
                std::fs::read_to_string(format!("{KERNEL_MODULE}/parameters/zfs_max_recordsize"))
                    .ok()
                    .and_then(|t| t.trim().parse::<u64>().ok())
                    .unwrap_or(1 << 20)
            };
            let ok = parse_number(value)
                .is_some_and(|n| n.is_power_of_two() && (512..=max).contains(&n));
            Some((format!("a power of 2 from 512 to {}", short_size(max)), ok))
        }
        _ => None,
    }
}

/// `zfs`'s form of a size: 1k, 128k, 16M.
fn short_size(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{}M", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{}k", n >> 10),
        n => n.to_string(),
    }
}

/// A number as `zfs` reads one (libzfs's `zfs_nicestrtonum`): digits, a
/// fraction allowed, then an optional suffix B K M G T P E (either case,
/// `KB` too, not `BB`), the fraction's result cut to an integer.
fn parse_number(value: &str) -> Option<u64> {
    if !value.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let end = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (num, suffix) = value.split_at(end);
    let upper = suffix.to_ascii_uppercase();
    let letter = upper.chars().next();
    let shift = match letter {
        None => 0,
        Some(c) => {
            let i = "BKMGTPE".find(c)? as u32;
            if !(upper.len() == 1 || (upper == format!("{c}B") && c != 'B')) {
                return None;
            }
            10 * i
        }
    };
    if num.contains('.') {
        // strtoull reads the integer part, strtod the whole; one dot only.
        if num.matches('.').count() > 1 {
            return None;
        }
        let f: f64 = num.parse().ok()?;
        let v = f * 2f64.powi(shift as i32);
        (v < u64::MAX as f64).then_some(v as u64)
    } else {
        // shift is at most 60 (E).
        num.parse::<u64>().ok()?.checked_mul(1 << shift)
    }
}

/// Checks a dataset property a pool will be made with, as `zfs set` of
/// `flavour` would: the error names the values it allows.
pub fn check_property(flavour: Flavour, property: &str, value: &str) -> Result<(), String> {
    match allowed(flavour, property, value) {
        Some((_, true)) => Ok(()),
        Some((shown, false)) => Err(format!(
            "'{value}' is not a value {}'s zfs allows (allowed: {shown})",
            flavour.name()
        )),
        None => Err(format!(
            "{} has no dataset property {property}",
            flavour.name()
        )),
    }
}

/// `/proc/<pid>/stat`'s start time (clock ticks after boot); None when the
/// process is gone or a zombie. With the pid it names one process: pids are
/// reused.
fn start_time(pid: i32) -> Option<u64> {
    if pid <= 0 {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid …": comm may hold spaces and parentheses.
    let (_, tail) = stat.rsplit_once(')')?;
    let rest: Vec<&str> = tail.split_whitespace().collect();
    if matches!(rest.first(), Some(&"Z") | Some(&"X") | None) {
        return None;
    }
    rest.get(19)?.parse().ok()
}

/// Pids of running `zfs-fuse` daemons (not the zombie of one that exited).
fn zfs_fuse_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "zfs-fuse")
                && start_time(*pid).is_some()
        })
        .collect()
}

/// Whether a pool's commands can reach ZFS: the kernel module, or a
/// zfs-fuse daemon that runs.
fn zfs_reachable() -> bool {
    Path::new(KERNEL_MODULE).exists() || !zfs_fuse_pids().is_empty()
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

/// A zfs-fuse daemon csdchar stops after: its pid and start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Daemon {
    pid: i32,
    start: u64,
}

impl Daemon {
    /// Whether it still runs (the same process, not a reused pid).
    fn alive(self) -> bool {
        start_time(self.pid) == Some(self.start)
    }
}

/// A zfs-fuse daemon that answers: the running one, or one started here
/// (returned, to stop it after). A daemon still exiting (it takes seconds
/// after SIGTERM, longer after a pool was destroyed) is waited for first:
/// commands sent to it fail.
fn start_zfs_fuse() -> Result<Option<Daemon>, String> {
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
    let daemon = pid.and_then(|pid| {
        Some(Daemon {
            pid,
            start: start_time(pid)?,
        })
    });
    if !up {
        if let Some(d) = daemon {
            stop_zfs_fuse(d);
        }
        return Err("zfs-fuse did not start (its daemon does not answer `zpool list`)".into());
    }
    Ok(daemon)
}

/// Stops a zfs-fuse daemon (SIGTERM) and waits up to 30 s for it to exit;
/// one that is gone already (killed) is left alone, its pid maybe another
/// process's now. The daemon forks away from the process that started it;
/// when csdchar is a child subreaper (it is once it has started a PostgreSQL
/// server, to reap that server's orphans) the daemon becomes csdchar's child,
/// and its exit a zombie of ours until reaped here.
fn stop_zfs_fuse(daemon: Daemon) {
    let pid = daemon.pid;
    if daemon.alive() {
        // Safety: kill(2) with SIGTERM on the daemon csdchar started (or
        // adopted), the same process: its start time was checked just now.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
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
            // Another process under a reused pid: not ours to wait for.
            Some(false) => !daemon.alive(),
        }
    });
}

/// The pool's user property holding its [`Marker`], set by the command that
/// creates the pool.
const MARKER_PROPERTY: &str = "csdchar:run";
/// The file holding the same [`Marker`] in the pool's directory, beside its
/// image.
const MARKER_FILE: &str = "csdchar-zfs-run";
/// The pool's image in its directory.
const IMAGE_FILE: &str = "pool.img";

/// What proves a pool csdchar's, and whose: one line, in the pool's
/// [`MARKER_PROPERTY`] and in its directory's [`MARKER_FILE`]. A pool is
/// csdchar's when both say the same and the pool's only device is that
/// directory's image.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Marker {
    /// The csdchar process that made it: pid and start time.
    run: (i32, u64),
    /// Its effective uid.
    uid: u32,
    /// The zfs-fuse daemon it would stop after, if any.
    daemon: Option<Daemon>,
    /// The pool's name.
    pool: String,
    /// The directory of its image and mount point.
    dir: std::path::PathBuf,
}

impl Marker {
    fn line(&self) -> String {
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

    fn parse(line: &str) -> Option<Marker> {
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
    fn run_gone(&self) -> bool {
        start_time(self.run.0) != Some(self.run.1)
    }
}

/// This process's effective uid.
fn euid() -> u32 {
    // Safety: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// The marker in `dir`, if `dir` is a directory (not a symlink) of this
/// uid holding one that names `dir` itself.
fn dir_marker(dir: &Path) -> Option<Marker> {
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
fn pool_marker(pool: &str) -> Option<Marker> {
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
fn pool_names() -> Vec<String> {
    run("zpool", &["list", "-H", "-o", "name"])
        .map(|t| t.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Unmounts what ZFS has mounted at or under `dir`, lazily (MNT_DETACH): the
/// FUSE mount of a killed zfs-fuse daemon answers "Transport endpoint is not
/// connected" to everything but a lazy unmount. Deepest first.
fn unmount_dead_under(dir: &Path) {
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
fn unescape_mount(field: &str) -> Option<String> {
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

/// Destroys pool `name` (retrying while a server that just stopped keeps it
/// busy). A pool that is not imported is gone already: csdchar's pools are
/// made with `cachefile=none`, so one whose zfs-fuse daemon died went with
/// it and no daemon imports it again.
fn destroy_pool(name: &str) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..40 {
        match run("zpool", &["destroy", "-f", name]) {
            Ok(_) => return Ok(()),
            Err(e) => last = e,
        }
        if !zfs_reachable() || run("zpool", &["list", "-H", "-o", "name", name]).is_err() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    Err(last)
}

/// Removes a pool's directory once its pool is gone: dead FUSE mounts first.
fn remove_pool_dir(dir: &Path) -> Result<(), String> {
    unmount_dead_under(dir);
    std::fs::remove_dir_all(dir).map_err(|e| format!("{} ({e})", dir.display()))
}

/// What the sweep of csdchar's stale pools did.
#[derive(Debug, Default)]
struct Swept {
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
fn sweep_stale(tmp: &Path) -> Swept {
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
        match destroy_pool(pool).and_then(|()| remove_pool_dir(&m.dir)) {
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
const POOL_ROOT: &str = "/var/tmp";

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
    ) -> Result<ZfsPool, String> {
        let flavour = Flavour::here();
        for (k, v) in properties {
            check_property(flavour, k, v).map_err(|e| format!("{k}={v}: {e}"))?;
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
            return Err(e);
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
                .map_err(|e| format!("{}: {e}", file.display()))?;
            let image = pool.dir.join(IMAGE_FILE);
            std::fs::File::create(&image)
                .and_then(|f| f.set_len(size))
                .map_err(|e| format!("{}: {e}", image.display()))?;
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

    /// What [`ZfsPool::create`] removed (or had to leave) of the pools of
    /// csdchar runs that are gone, one line each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Destroys the pool (retrying while a server that just stopped keeps
    /// it busy; one whose zfs-fuse daemon died is gone with it), unmounts
    /// what is left mounted of it lazily, removes its directory, and stops a
    /// daemon it started; the error names what was left.
    pub fn teardown(mut self) -> Result<(), String> {
        // What is left, each with what removes it.
        let mut left: Vec<String> = Vec::new();
        let name = std::mem::take(&mut self.name);
        let dir = std::mem::take(&mut self.dir);
        let pool_gone = match (name.is_empty(), destroy_pool(&name)) {
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
            Err(format!("left behind: {}", left.join("; ")))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_zfs_reads_them() {
        for (v, n) in [
            ("512", Some(512)),
            ("8k", Some(8192)),
            ("8K", Some(8192)),
            ("8KB", Some(8192)),
            ("8kb", Some(8192)),
            ("128k", Some(128 << 10)),
            ("1M", Some(1 << 20)),
            ("0.5k", Some(512)),
            (".5k", Some(512)),
            ("1.5k", Some(1536)),
            ("4096b", Some(4096)),
            ("4096BB", None),
            ("8kk", None),
            ("8x", None),
            ("k8", None),
            ("1.2.3k", None),
            ("", None),
            ("16E", None),
        ] {
            assert_eq!(parse_number(v), n, "{v}");
        }
    }

    #[test]
    fn property_values_are_checked_per_flavour() {
        let fuse = Flavour::ZfsFuse;
        for (p, v) in [
            ("compression", "gzip-9"),
            ("compression", "zle"),
            ("recordsize", "8k"),
            ("recordsize", "128K"),
            ("recordsize", "512"),
            ("copies", "3"),
            ("dedup", "sha256,verify"),
            ("primarycache", "metadata"),
        ] {
            assert_eq!(check_property(fuse, p, v), Ok(()), "{p}={v}");
        }
        let e = check_property(fuse, "compression", "bogus").unwrap_err();
        assert_eq!(
            e,
            "'bogus' is not a value zfs-fuse's zfs allows \
             (allowed: on | off | lzjb | gzip | gzip-[1-9] | zle)"
        );
        let e = check_property(fuse, "recordsize", "3k").unwrap_err();
        assert!(
            e.ends_with("(allowed: a power of 2 from 512 to 128k)"),
            "{e}"
        );
        for (p, v) in [
            ("compression", "lz4"),
            ("compression", "gzip-0"),
            ("compression", "gzip-10"),
            ("compression", "gzip-01"),
            ("compression", "GZIP"),
            ("recordsize", "256k"),
            ("recordsize", "256"),
            ("copies", "4"),
            ("checksum", "sha512"),
        ] {
            assert!(check_property(fuse, p, v).is_err(), "{p}={v}");
        }
        assert_eq!(
            check_property(fuse, "sync", "always").unwrap_err(),
            "zfs-fuse has no dataset property sync"
        );
        let open = Flavour::OpenZfs;
        for (p, v) in [
            ("compression", "lz4"),
            ("compression", "zstd-19"),
            ("compression", "zstd-fast-1000"),
            ("compression", "zstd-fast-30"),
            ("sync", "always"),
            ("checksum", "blake3"),
            ("recordsize", "1M"),
        ] {
            assert_eq!(check_property(open, p, v), Ok(()), "{p}={v}");
        }
        for (p, v) in [
            ("compression", "zstd-20"),
            ("compression", "zstd-fast-11"),
            ("compression", "zstd-fast-200"),
            ("sync", "sometimes"),
        ] {
            assert!(check_property(open, p, v).is_err(), "{p}={v}");
        }
    }

    #[test]
    fn a_marker_reads_back_and_refuses_other_text() {
        let m = Marker {
            run: (4242, 987654),
            uid: 0,
            daemon: Some(Daemon { pid: 77, start: 12 }),
            pool: "csdchar_c_gz".into(),
            dir: "/var/tmp/csdchar-campaign-a b-gz.Xy12Ab".into(),
        };
        assert_eq!(Marker::parse(&m.line()), Some(m.clone()));
        assert_eq!(Marker::parse(&format!("{}\n", m.line())), Some(m.clone()));
        let none = Marker { daemon: None, ..m };
        assert!(none.line().contains(" daemon 0 0 "), "{}", none.line());
        assert_eq!(Marker::parse(&none.line()), Some(none.clone()));
        for bad in [
            "",
            "csdchar-zfs 2 pid 1 2 uid 0 daemon 0 0 pool p dir /x",
            "csdchar-zfs 1 pid 1 2 uid 0 daemon 0 0 pool p",
            "csdchar-zfs 1 pid x 2 uid 0 daemon 0 0 pool p dir /x",
            "csdchar-run 1\npid 1 2\nuid 0\nwatchdog 3 4\n",
        ] {
            assert_eq!(Marker::parse(bad), None, "{bad}");
        }
        // A process that runs is not gone; one with another start time is.
        let me = std::process::id() as i32;
        let live = Marker {
            run: (me, start_time(me).unwrap()),
            ..none.clone()
        };
        assert!(!live.run_gone());
        assert!(
            Marker {
                run: (me, 1),
                ..live
            }
            .run_gone()
        );
    }

    #[test]
    fn mount_points_are_unescaped() {
        assert_eq!(
            unescape_mount("/var/tmp/a\\040b/mnt").as_deref(),
            Some("/var/tmp/a b/mnt")
        );
        assert_eq!(unescape_mount("/plain").as_deref(), Some("/plain"));
    }

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
