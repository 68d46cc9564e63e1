//! zfs-fuse's daemon: found, started and stopped (only the one csdchar started, and only
//! when no pool made since still uses it).

use std::path::Path;

use super::tools::{KERNEL_MODULE, run};
use crate::DeviceError;

/// `/proc/<pid>/stat`'s start time (clock ticks after boot); None when the
/// process is gone or a zombie. With the pid it names one process: pids are
/// reused.
pub(super) fn start_time(pid: i32) -> Option<u64> {
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

/// Every process's pid, as `/proc` lists them.
pub(super) fn all_pids() -> impl Iterator<Item = i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
}

/// Pids of running `zfs-fuse` daemons (not the zombie of one that exited).
pub(super) fn zfs_fuse_pids() -> Vec<i32> {
    all_pids()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "zfs-fuse")
                && start_time(*pid).is_some()
        })
        .collect()
}

/// Whether a pool's commands can reach ZFS: the kernel module, or a
/// zfs-fuse daemon that runs.
pub(super) fn zfs_reachable() -> bool {
    Path::new(KERNEL_MODULE).exists() || !zfs_fuse_pids().is_empty()
}

/// Waits up to `secs` for `until` to hold.
pub(super) fn wait_for(secs: u64, until: impl Fn() -> bool) -> bool {
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
pub(super) struct Daemon {
    pub(super) pid: i32,
    pub(super) start: u64,
}

impl Daemon {
    /// Whether it still runs (the same process, not a reused pid).
    pub(super) fn alive(self) -> bool {
        start_time(self.pid) == Some(self.start)
    }
}

/// A zfs-fuse daemon that answers: the running one, or one started here
/// (returned, to stop it after). A daemon still exiting (it takes seconds
/// after SIGTERM, longer after a pool was destroyed) is waited for first:
/// commands sent to it fail.
pub(super) fn start_zfs_fuse() -> Result<Option<Daemon>, DeviceError> {
    let answers = || run("zpool", &["list"]).is_ok();
    if !zfs_fuse_pids().is_empty() && (answers() || !wait_for(30, || zfs_fuse_pids().is_empty())) {
        return if answers() {
            Ok(None)
        } else {
            Err(DeviceError::tool(
                "a zfs-fuse daemon runs but does not answer `zpool list`",
            ))
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
        return Err(DeviceError::tool(
            "zfs-fuse did not start (its daemon does not answer `zpool list`)",
        ));
    }
    Ok(daemon)
}

/// Stops a zfs-fuse daemon (SIGTERM) and waits up to 30 s for it to exit (then SIGKILL);
/// one that is gone already (killed) is left alone, its pid maybe another
/// process's now. The daemon forks away from the process that started it;
/// when csdchar is a child subreaper (it is once it has started a PostgreSQL
/// server, to reap that server's orphans) the daemon becomes csdchar's child,
/// and its exit a zombie of ours until reaped here.
pub(super) fn stop_zfs_fuse(daemon: Daemon) {
    let pid = daemon.pid;
    if daemon.alive() {
        // The daemon csdchar started (or adopted), the same process: its start
        // time was checked just now.
        if let Some(p) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::TERM);
        }
    }
    let gone = || {
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|t| {
                t.rsplit_once(')')
                    .map(|(_, r)| r.trim_start().starts_with('Z'))
            });
        match zombie {
            None => true,
            Some(true) => {
                // A pid that is not our child just fails with ECHILD.
                if let Some(p) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG);
                }
                !Path::new(&format!("/proc/{pid}")).exists()
            }
            // Another process under a reused pid: not ours to wait for.
            Some(false) => !daemon.alive(),
        }
    };
    // A daemon csdchar started serves none of its pools by now (they are destroyed before
    // it is stopped), so one that outlives SIGTERM by 30 s — seen on a loaded machine after
    // a pool was destroyed — is killed rather than left running.
    if !wait_for(30, gone) && daemon.alive() {
        if let Some(p) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
        }
        wait_for(5, gone);
    }
}
