//! The server's processes: the watchdog that outlives csdchar to stop the
//! server, the postmaster's pid file and whether it still lives, and the
//! cleanup after a postmaster that died (orphans ended, shared memory
//! removed, zombies reaped).

use std::fs;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::spec::{ClusterError, RunAs};

/// The watchdog that stops the server (and removes a temporary directory)
/// when csdchar dies without dropping the cluster; see the module doc.
#[derive(Debug)]
pub(super) struct Watchdog {
    pub(super) child: Child,
    pub(super) stdin: Option<ChildStdin>,
}

impl Watchdog {
    /// The watchdog's program: waits for a line on stdin; `keep` or `done`
    /// end it quietly, EOF (csdchar died) stops the server and removes the
    /// directories. The second round catches a server whose start was under
    /// way when csdchar died.
    const SCRIPT: &'static str = r#"ctl=$1 data=$2 tmp=$3 sock=$4
IFS= read -r line
case "$line" in keep|done) exit 0 ;; esac
exec </dev/null >/dev/null 2>&1
stop() {
  [ -f "$data/postmaster.pid" ] || return 0
  "$ctl" stop -D "$data" -m fast -w -t 30 || "$ctl" stop -D "$data" -m immediate -w -t 30
}
stop
sleep 1
stop
[ -z "$tmp" ] || rm -rf -- "$tmp"
[ -z "$sock" ] || rm -rf -- "$sock"
"#;

    pub(super) fn spawn(
        pg_ctl: &Path,
        pgdata: &Path,
        temp: Option<&Path>,
        sock: Option<&Path>,
        run_as: Option<RunAs>,
    ) -> Result<Watchdog, ClusterError> {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(Self::SCRIPT)
            .arg("csdchar-watchdog")
            .arg(pg_ctl)
            .arg(pgdata)
            .arg(temp.unwrap_or(Path::new("")))
            .arg(sock.unwrap_or(Path::new("")))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Never keep a directory busy that it may have to remove.
            .current_dir("/");
        if let Some(r) = run_as {
            cmd.uid(r.uid).gid(r.gid);
        }
        // Safety: setsid is async-signal-safe and touches no memory; a new
        // session keeps terminal signals (Ctrl-C, hangup) aimed at csdchar
        // from reaching the watchdog, which must outlive csdchar.
        unsafe {
            cmd.pre_exec(|| rustix::process::setsid().map(drop).map_err(Into::into));
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| ClusterError::Command(format!("cannot start the watchdog (sh): {e}")))?;
        let stdin = child.stdin.take();
        Ok(Watchdog { child, stdin })
    }

    pub(super) fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Tells the watchdog `line` (`done`, `keep`) and waits for it to exit.
    /// Without a line it sees EOF and does its cleanup first.
    pub(super) fn finish(mut self, line: Option<&str>) {
        if let (Some(mut stdin), Some(line)) = (self.stdin.take(), line) {
            // A watchdog that is already gone cannot read it; nothing to do then.
            let _ = writeln!(stdin, "{line}");
        }
        let _ = self.child.wait();
    }
}

/// The lines of a `postmaster.pid` csdchar uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PidFile {
    pub(super) pid: i32,
    pub(super) port: u16,
    /// First socket directory (line 5); empty without a Unix socket.
    pub(super) socket_dir: String,
    /// First listen address (line 6); empty without TCP.
    pub(super) listen: String,
    /// `starting`, `ready`, `stopping`, `standby` (line 8).
    pub(super) status: String,
    /// The SysV shared memory segment's key and id (line 7), when there is one.
    pub(super) shmem: Option<(i64, i32)>,
}

impl PidFile {
    pub(super) fn read(pgdata: &Path) -> Option<PidFile> {
        let text = fs::read_to_string(pgdata.join("postmaster.pid")).ok()?;
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        Some(PidFile {
            pid: lines.first()?.parse().ok()?,
            port: lines.get(3).and_then(|p| p.parse().ok()).unwrap_or(0),
            socket_dir: lines.get(4).unwrap_or(&"").to_string(),
            listen: lines.get(5).unwrap_or(&"").to_string(),
            status: lines.get(7).unwrap_or(&"").to_string(),
            shmem: lines.get(6).and_then(|l| {
                let mut w = l.split_whitespace();
                Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
            }),
        })
    }
}

/// The postmaster of a server csdchar started, to ask whether it has
/// exited: then the server is gone for good (nobody restarts it), so a run
/// that lost its connections stops instead of reconnecting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostmasterWatch {
    pub(super) pgdata: PathBuf,
    pub(super) pid: i32,
    /// Its start time (clock ticks), so that a reused pid is not taken for it.
    pub(super) start: Option<u64>,
}

impl PostmasterWatch {
    /// Whether the postmaster has exited: gone, a zombie, or its pid reused.
    pub fn exited(&self) -> bool {
        !process_alive(self.pid, self.start)
    }

    /// Whether the postmaster has exited or does within `wait`: a dying
    /// process closes its files (its backends notice) a moment before the
    /// kernel shows it as exited.
    pub fn exited_within(&self, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        loop {
            if self.exited() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The server in words, for messages: `the server of DIR (postmaster pid N)`.
    pub fn server(&self) -> String {
        format!(
            "the server of {} (postmaster pid {})",
            self.pgdata.display(),
            self.pid
        )
    }
}

/// `/proc/<pid>/stat` field 22 (start time in clock ticks), None when the
/// process is gone or a zombie.
pub(super) fn proc_start_time(pid: i32) -> Option<u64> {
    if pid <= 0 {
        return None;
    }
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid ..."; comm may hold spaces, so split at the last ')'.
    let (_, tail) = stat.rsplit_once(')')?;
    let rest: Vec<&str> = tail.split_whitespace().collect();
    if matches!(rest.first(), Some(&"Z") | Some(&"X") | None) {
        return None;
    }
    rest.get(19)?.parse().ok()
}

/// Whether `pid` runs (not a zombie) and, given `start`, is the same process
/// as when its start time was recorded (pids are reused).
pub(super) fn process_alive(pid: i32, start: Option<u64>) -> bool {
    match (proc_start_time(pid), start) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(t), Some(s)) => t == s,
    }
}

/// How long the processes of a server whose postmaster died get to notice
/// and exit by themselves (they do at their next wait) before they are killed.
pub(super) const ORPHANS_GRACE: Duration = Duration::from_secs(2);

/// Ends the processes left of a server whose postmaster has exited: the
/// `postgres` processes working in `pgdata` (every server process runs
/// there). They get [`ORPHANS_GRACE`] to exit, then SIGKILL (what they would
/// get from an immediate shutdown is SIGQUIT, but nobody is left to wait for
/// their answer); their zombies are reaped meanwhile. Waits at most a second
/// after the kill (a process stuck in the kernel cannot be helped).
pub(super) fn end_server_processes(pgdata: &Path) {
    let dir = fs::canonicalize(pgdata).unwrap_or_else(|_| pgdata.to_path_buf());
    let started = Instant::now();
    let mut killed = false;
    loop {
        reap_orphaned_postgres();
        let left = processes_in(&dir, "postgres");
        if left.is_empty() && exiting_children().is_empty() {
            // The last zombies, of processes that were still exiting above.
            reap_orphaned_postgres();
            return;
        }
        if started.elapsed() > ORPHANS_GRACE + Duration::from_secs(1) {
            return;
        }
        if !killed && started.elapsed() >= ORPHANS_GRACE {
            for &pid in &left {
                // A process of this server only.
                if let Some(p) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
                }
            }
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Live (not zombie) processes named `comm` whose working directory is `dir`.
pub(super) fn processes_in(dir: &Path, comm: &str) -> Vec<i32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            proc_stat(pid).is_some_and(|s| s.comm == comm && s.state != "Z" && s.state != "X")
                && fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == dir)
        })
        .collect()
}

/// Server processes orphaned to us (see [`reap_orphaned_postgres`]) that are
/// exiting: not a zombie yet, but their working directory is released
/// already (the kernel drops it early in an exit), so [`processes_in`] no
/// longer sees them. Reaping before they turn zombie would leave them as
/// zombies of ours. A live server's processes keep their directory, so this
/// never waits for another server this process runs.
fn exiting_children() -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            proc_stat(pid).is_some_and(|s| {
                s.comm == "postgres"
                    && s.ppid == me
                    && s.session == pid
                    && s.state != "Z"
                    && s.state != "X"
            }) && fs::read_link(format!("/proc/{pid}/cwd")).is_err()
        })
        .collect()
}

/// Removes the SysV shared memory segment `id` if postmaster `pid` created
/// it and nothing is attached any more (a running server's is never touched).
pub(super) fn remove_shmem_segment(id: i32, pid: i32) {
    // Safety: shmid_ds is plain data; IPC_STAT fills it or fails.
    let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
    // Safety: shmctl with IPC_STAT writes into `ds` only.
    if unsafe { libc::shmctl(id, libc::IPC_STAT, &mut ds) } != 0 {
        return; // gone already, or not ours to see
    }
    if ds.shm_cpid == pid && ds.shm_nattch == 0 {
        // Safety: IPC_RMID on the segment checked above; no buffer is used.
        unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
    }
}

/// The fields of `/proc/<pid>/stat` csdchar looks at.
pub(super) struct ProcStat {
    pub(super) comm: String,
    pub(super) state: String,
    pub(super) ppid: i32,
    pub(super) session: i32,
}

pub(super) fn proc_stat(pid: i32) -> Option<ProcStat> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid pgrp session ..."; comm may hold spaces, so split at the last ')'.
    let (head, tail) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_string();
    let mut rest = tail.split_whitespace();
    let state = rest.next()?.to_string();
    let ppid = rest.next()?.parse().ok()?;
    let session = rest.nth(1)?.parse().ok()?;
    Some(ProcStat {
        comm,
        state,
        ppid,
        session,
    })
}

/// Reaps exited server processes whose parent is this process: the
/// postmaster and the backends of a crashed server get reparented to us as
/// the subreaper. Only those zombies are waited for, never another child
/// (such as a `postgres --version` a [`Command`] waits for): every server
/// process leads a session of its own, which no child csdchar starts does.
pub(super) fn reap_orphaned_postgres() {
    let me = std::process::id() as i32;
    let Ok(entries) = fs::read_dir("/proc") else {
        return;
    };
    for pid in entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
    {
        let Some(s) = proc_stat(pid) else { continue };
        if s.comm == "postgres" && s.state == "Z" && s.ppid == me && s.session == pid {
            // One specific zombie child; WNOHANG never blocks.
            if let Some(p) = rustix::process::Pid::from_raw(pid) {
                let _ = rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG);
            }
        }
    }
}
