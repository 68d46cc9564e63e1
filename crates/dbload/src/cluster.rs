//! Managed PostgreSQL clusters: find the server binaries, `initdb` a data
//! directory if there is none, start the server with the requested settings,
//! and stop it (and remove a temporary one) on drop — also when a test panics,
//! and, through a watchdog, also when csdchar itself is killed.
//!
//! initdb and postgres refuse to run as root: as root, every server command
//! runs as the `postgres` user (uid/gid switched for the child only), and the
//! directories it needs are handed to that user.
//!
//! # Who can connect
//!
//! A cluster is reachable by its owner only:
//! - No TCP listener by default (`listen_addresses=''`). The Unix socket lives
//!   in a private directory (mode 0700, owned by the server's user): inside the
//!   data directory (`<pgdata>/csdchar-socket`) when the socket path fits the
//!   107-byte `sun_path` limit, else in a fresh `/tmp/csdchar-pgsock*`
//!   directory whose path is recorded in `<pgdata>/csdchar-socket-dir` (and,
//!   while the server runs, in line 5 of `postmaster.pid`). So a kept-running
//!   `--pgdata` server stays findable after csdchar exits. Root can still
//!   connect to a server that runs as `postgres`; nobody else can.
//! - `local` lines in pg_hba are `trust` (the directory is private); `host`
//!   lines are `scram-sha-256`. initdb gets a random per-cluster password for
//!   `postgres` (`--pwfile`, never on a command line, never printed or
//!   logged); it is kept in `<pgdata>/csdchar-password` (mode 0600, libpq
//!   passfile format `*:<port>:*:postgres:<password>`, rewritten with the port
//!   at each start) for use with `PGPASSFILE`.
//! - [`ClusterSpec::listen`] (or `--pg-set listen_addresses=…`, treated the
//!   same) opens TCP on that address. Loopback addresses are covered by
//!   initdb's host lines; for any other address csdchar appends
//!   `host all all 0.0.0.0/0 scram-sha-256` and `::/0` lines, so connections
//!   work but always need the password.
//! - A data directory from an older csdchar (initdb `-A trust`) is never
//!   reachable over TCP without `listen`. With `listen`, csdchar rewrites its
//!   pg_hba `host … trust` lines to `scram-sha-256` (noted in
//!   [`ManagedCluster::notes`]) and, when there is no password file yet, gives
//!   `postgres` a new random password (sent as a SCRAM verifier, so the clear
//!   text never reaches the server) — rewriting beats refusing because the
//!   result is exactly what a new cluster gets. A custom `hba_file` given with
//!   `--pg-set` is the user's and is not touched.
//!
//! # Parent death
//!
//! Each started cluster has a watchdog: `sh` running as the server's user in
//! its own session (so terminal signals do not reach it), its stdin a pipe
//! held by csdchar. A normal drop stops the server and removes the temporary
//! directory itself, then writes `done` (or `keep` when the server is kept
//! running) and waits for the watchdog to exit. If csdchar dies without doing
//! so (SIGKILL, abort), the pipe reaches EOF and the watchdog stops the server
//! (fast, then immediate) and removes the temporary directory.
//!
//! # Stale temporary directories
//!
//! A temporary cluster lives in `/var/tmp/csdchar-pgXXXXXX/pgdata`, next to a
//! `csdchar-run` marker (csdchar's pid, its start time, uid, the watchdog's
//! pid and start time). At start, marked directories of the same uid whose
//! csdchar, watchdog and postmaster are all gone are removed; one whose
//! server still runs is only reported. Unmarked directories of an older
//! csdchar (`csdchar-pg` plus six characters, holding only `pgdata`) are only
//! reported. Each removal or report is one line in [`ManagedCluster::notes`].
//!
//! # Memory limit
//!
//! With [`ClusterSpec::memory_limit`] the server runs in a memory cgroup of
//! its own, so its page cache is capped too and reads that miss shared
//! buffers reach the device (dropping caches does not last: readahead refills
//! them within a second). csdchar looks for the memory controller in
//! `/proc/self/mountinfo`: a cgroup v2 mount whose `cgroup.controllers` lists
//! `memory` first (enabling `+memory` in its `cgroup.subtree_control` when
//! needed, with a note), else a v1 `memory` hierarchy. It creates
//! `csdchar-pg-<pid>-<n>` at the top of that hierarchy and writes the limit
//! (`memory.max`, v1 `memory.limit_in_bytes`).
//!
//! Nothing of the server escapes: `pg_ctl start` is spawned as a small `sh`
//! that waits on a pipe; csdchar writes that shell's pid to the cgroup's
//! `cgroup.procs`, then lets it `exec` pg_ctl, so pg_ctl, the postmaster and
//! every backend it forks start inside (no moving of running processes, no
//! `pre_exec` code). initdb and the watchdog run outside.
//!
//! The cgroup is removed (rmdir, once the server has exited) by
//! [`ManagedCluster::stop`] and drop. It stays with a server that is kept
//! running. The watchdog runs as the server's user and cannot remove it, so
//! after a killed csdchar (or a kept server that stopped since) the next start
//! as root removes `csdchar-pg-<pid>-<n>` cgroups that are empty and whose
//! csdchar pid is gone, one note each. Needs root; when attaching, the limit
//! is ignored with a note.
//!
//! # A server that dies
//!
//! csdchar is a child subreaper (see [`ManagedCluster::start`]), so a
//! postmaster that dies (`kill -9`, OOM killer) and its processes become
//! csdchar's zombies: nobody else reaps them, and `pg_ctl stop -w` would wait
//! its whole timeout for a pid that still exists. So [`ManagedCluster::stop`]
//! first looks whether the postmaster it started has exited (gone, a zombie,
//! or its pid reused); if so it does not ask pg_ctl but ends what is left of
//! the server itself: waits briefly for the server's remaining processes
//! (`postgres` processes working in the data directory) to notice and exit,
//! kills those that do not, reaps them, removes the server's SysV shared
//! memory segment once nothing is attached, and removes `postmaster.pid` and
//! the socket with its lock file, as a normal shutdown does. A run that loses
//! its connections asks the same question through a [`PostmasterWatch`] and
//! does not try to reconnect to a server that is gone for good.
//!
//! # Attaching
//!
//! Starting on a `--pgdata` whose server already runs (live pid in
//! `postmaster.pid`, socket answering) attaches to it: port and socket
//! directory come from `postmaster.pid`, settings and `listen` are ignored
//! with a note, and dropping the cluster never stops it (an explicit
//! [`ManagedCluster::stop`] does).

use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::conn::{ConnTarget, Env};
use crate::wire::WireConn;

/// Where temporary clusters live (and stale ones are looked for).
/// Where temporary clusters are made.
pub const TEMP_ROOT: &str = "/var/tmp";
/// Name prefix of a temporary cluster's directory.
const TEMP_PREFIX: &str = "csdchar-pg";
/// The marker a temporary cluster's directory holds (see the module doc).
const RUN_MARKER: &str = "csdchar-run";
/// The socket directory inside the data directory.
const SOCKET_SUBDIR: &str = "csdchar-socket";
/// Records a socket directory outside the data directory (path too long).
const SOCKET_RECORD: &str = "csdchar-socket-dir";
/// Name prefix of such an outside socket directory (in /tmp).
const SOCKET_PREFIX: &str = "csdchar-pgsock";
/// The password file in the data directory.
const PASSWORD_FILE: &str = "csdchar-password";
/// Longest Unix socket path (`sun_path` is 108 bytes with the NUL).
const SUN_PATH_MAX: usize = 107;

/// Why a cluster could not be set up or started.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No PostgreSQL server binaries were found.
    #[error("PostgreSQL server binaries not found ({0}); install postgresql or pass --pg-bin DIR")]
    NoBinaries(String),
    /// A setting is not `key=value`.
    #[error("--pg-set: '{0}' is not key=value")]
    BadSetting(String),
    /// The listen address is not a host name, IP address or `*` (comma-separated).
    #[error("--listen: '{0}' is not a host name, IP address or * (comma-separated)")]
    BadListen(String),
    /// Running as root but there is no `postgres` user to run the server as.
    #[error(
        "running as root, but there is no 'postgres' user to run the server as (initdb refuses root)"
    )]
    NoPostgresUser,
    /// A command failed; the message carries its output and, for the server, the log location.
    #[error("{0}")]
    Command(String),
    /// File-system trouble around the data directory.
    #[error("{0}")]
    Io(String),
    /// The memory limit cannot be applied (not root, no memory controller, cgroup trouble).
    #[error("--pg-memory-limit: {0}")]
    MemoryLimit(String),
}

/// The server binaries of one PostgreSQL installation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgBinaries {
    /// Directory holding initdb, pg_ctl, postgres.
    pub dir: PathBuf,
    /// Major version (e.g. 15).
    pub major: u32,
}

impl PgBinaries {
    /// Finds the binaries: `explicit` (--pg-bin), `pg_config --bindir`, `initdb` on PATH,
    /// then `/usr/lib/postgresql/*/bin`, newest first.
    pub fn find(explicit: Option<&Path>) -> Result<PgBinaries, ClusterError> {
        let mut tried = Vec::new();
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(dir) = explicit {
            return Self::at(dir)
                .ok_or_else(|| ClusterError::NoBinaries(format!("--pg-bin {}", dir.display())));
        }
        if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
            && out.status.success()
        {
            candidates.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
        }
        if let Some(path) = std::env::var_os("PATH") {
            for d in std::env::split_paths(&path) {
                // Debian's /usr/bin wrappers are not the server binaries; follow real files only.
                if d.join("initdb").is_file() && d.join("pg_ctl").is_file() {
                    candidates.push(d);
                }
            }
        }
        let mut versioned: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| {
                        Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin")))
                    })
                    .collect()
            })
            .unwrap_or_default();
        versioned.sort_by_key(|v| std::cmp::Reverse(v.0));
        candidates.extend(versioned.into_iter().map(|(_, p)| p));
        for c in candidates {
            if let Some(b) = Self::at(&c) {
                return Ok(b);
            }
            tried.push(c.display().to_string());
        }
        Err(ClusterError::NoBinaries(if tried.is_empty() {
            "searched pg_config, PATH and /usr/lib/postgresql".into()
        } else {
            format!("tried {}", tried.join(", "))
        }))
    }

    fn at(dir: &Path) -> Option<PgBinaries> {
        if !(dir.join("initdb").is_file()
            && dir.join("pg_ctl").is_file()
            && dir.join("postgres").is_file())
        {
            return None;
        }
        let out = Command::new(dir.join("postgres"))
            .arg("--version")
            .output()
            .ok()?;
        // "postgres (PostgreSQL) 15.18 (Debian ...)"
        let text = String::from_utf8_lossy(&out.stdout);
        let version = text
            .split_whitespace()
            .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))?;
        let major = version.split('.').next()?.parse().ok()?;
        Some(PgBinaries {
            dir: dir.to_path_buf(),
            major,
        })
    }

    fn bin(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// What cluster to run.
#[derive(Debug, Clone, Default)]
pub struct ClusterSpec {
    /// Data directory; None makes a temporary one that is removed afterwards.
    pub pgdata: Option<PathBuf>,
    /// Server binaries; None finds them.
    pub pg_bin: Option<PathBuf>,
    /// `key=value` settings (`--pg-set`), passed to the server at start.
    pub settings: Vec<String>,
    /// Leave the server running when the cluster is dropped (ignored for a temporary cluster).
    pub keep_running: bool,
    /// Also listen on TCP at this address (`listen_addresses`, e.g. `127.0.0.1`);
    /// TCP logins then need the cluster's password (see [`ManagedCluster::password_file`]).
    /// None: Unix socket only.
    pub listen: Option<String>,
    /// Run the server (and every process it starts) in a memory cgroup of its
    /// own with this limit in bytes, page cache included, so that the OS cache
    /// cannot absorb the server's reads (`--pg-memory-limit`). Needs root and
    /// a memory controller; ignored with a note when attaching. The limit must
    /// hold shared_buffers plus the backends, or the kernel's OOM killer ends
    /// server processes. None: no limit of csdchar's.
    pub memory_limit: Option<u64>,
}

/// The user the server runs as.
#[derive(Debug, Clone, Copy)]
struct RunAs {
    uid: u32,
    gid: u32,
}

/// The watchdog that stops the server (and removes a temporary directory)
/// when csdchar dies without dropping the cluster; see the module doc.
#[derive(Debug)]
struct Watchdog {
    child: Child,
    stdin: Option<ChildStdin>,
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

    fn spawn(
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
            cmd.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| ClusterError::Command(format!("cannot start the watchdog (sh): {e}")))?;
        let stdin = child.stdin.take();
        Ok(Watchdog { child, stdin })
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Tells the watchdog `line` (`done`, `keep`) and waits for it to exit.
    /// Without a line it sees EOF and does its cleanup first.
    fn finish(mut self, line: Option<&str>) {
        if let (Some(mut stdin), Some(line)) = (self.stdin.take(), line) {
            // A watchdog that is already gone cannot read it; nothing to do then.
            let _ = writeln!(stdin, "{line}");
        }
        let _ = self.child.wait();
    }
}

/// The lines of a `postmaster.pid` csdchar uses.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PidFile {
    pid: i32,
    port: u16,
    /// First socket directory (line 5); empty without a Unix socket.
    socket_dir: String,
    /// First listen address (line 6); empty without TCP.
    listen: String,
    /// `starting`, `ready`, `stopping`, `standby` (line 8).
    status: String,
    /// The SysV shared memory segment's key and id (line 7), when there is one.
    shmem: Option<(i64, i32)>,
}

impl PidFile {
    fn read(pgdata: &Path) -> Option<PidFile> {
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
    pgdata: PathBuf,
    pid: i32,
    /// Its start time (clock ticks), so that a reused pid is not taken for it.
    start: Option<u64>,
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

/// No libpq environment: the cluster's own connections say everything.
struct NoEnv;

impl Env for NoEnv {
    fn get(&self, _: &str) -> Option<String> {
        None
    }
}

/// A running cluster that csdchar manages (or attached to).
#[derive(Debug)]
pub struct ManagedCluster {
    bin: PgBinaries,
    pgdata: PathBuf,
    port: u16,
    socket_dir: PathBuf,
    /// Removes a socket directory outside the data directory unless the server is kept running.
    socket_guard: Option<tempfile::TempDir>,
    log: PathBuf,
    run_as: Option<RunAs>,
    created: bool,
    keep_running: bool,
    running: bool,
    attached: bool,
    /// TCP listen addresses, when the server has them.
    listen: Option<String>,
    password_file: Option<PathBuf>,
    notes: Vec<String>,
    /// The postmaster this run started (our child, as we are a subreaper),
    /// reaped on stop; None when attached or before the start.
    postmaster: Option<PostmasterWatch>,
    watchdog: Option<Watchdog>,
    /// Owns the temporary directory of an ephemeral cluster.
    ephemeral: Option<tempfile::TempDir>,
    /// The memory limit in force (as the kernel reports it back).
    memory_limit: Option<u64>,
    /// The server's memory cgroup while it exists (see the module doc).
    memory_cgroup: Option<MemCgroup>,
}

impl ManagedCluster {
    /// Attaches to the server of `spec.pgdata` if it already runs; otherwise
    /// creates the cluster if its data directory has none and starts it on a
    /// free port, reachable as described in the module doc. Stale temporary
    /// directories of dead runs are cleaned up first (see [`Self::notes`]).
    pub fn start(spec: &ClusterSpec) -> Result<ManagedCluster, ClusterError> {
        let mut settings = parse_settings(&spec.settings)?;
        let mut listen = spec.listen.clone();
        // `--pg-set listen_addresses=…` gets the same hardening as `listen`.
        if let Some(i) = settings.iter().position(|(k, _)| k == "listen_addresses") {
            let (_, v) = settings.remove(i);
            let v = v.trim_matches('\'').trim().to_string();
            if listen.is_none() && !v.is_empty() {
                listen = Some(v);
            }
        }
        if let Some(l) = &listen {
            validate_listen(l)?;
        }
        let bin = PgBinaries::find(spec.pg_bin.as_deref())?;
        let run_as = Self::run_as()?;
        let io = |what: &str, e: std::io::Error| ClusterError::Io(format!("{what}: {e}"));
        let mut notes = sweep_stale(Path::new(TEMP_ROOT));
        if run_as.is_some() {
            notes.extend(sweep_stale_cgroups());
        }

        let user_pgdata = match &spec.pgdata {
            // The server's commands run from "/", so a relative path would point elsewhere.
            Some(p) => Some(std::path::absolute(p).map_err(|e| io(&p.display().to_string(), e))?),
            None => None,
        };
        if let Some(p) = &user_pgdata
            && let Some(c) = Self::attach(
                &bin,
                p,
                run_as,
                &settings,
                &listen,
                spec.memory_limit,
                &mut notes,
            )?
        {
            return Ok(c);
        }
        // Checked before initdb, so a limit that cannot work fails at once.
        let hierarchy = match spec.memory_limit {
            Some(limit) => Some(MemoryHierarchy::for_limit(limit)?),
            None => None,
        };

        let (pgdata, ephemeral) = match user_pgdata {
            Some(p) => (p, None),
            None => {
                let t = tempfile::Builder::new()
                    .prefix(TEMP_PREFIX)
                    .permissions(fs::Permissions::from_mode(0o700))
                    .tempdir_in(TEMP_ROOT)
                    .map_err(|e| io("temporary data directory", e))?;
                (t.path().join("pgdata"), Some(t))
            }
        };
        if let Some(t) = &ephemeral {
            hand_over(t.path(), run_as)?;
        }
        // The socket directory: inside the data directory when the path fits.
        let inside = pgdata.join(SOCKET_SUBDIR);
        let (socket_dir, socket_guard) = if socket_path_fits(&inside) {
            (inside, None)
        } else {
            remove_recorded_socket_dir(&pgdata);
            let t = tempfile::Builder::new()
                .prefix(SOCKET_PREFIX)
                .permissions(fs::Permissions::from_mode(0o700))
                .tempdir_in("/tmp")
                .map_err(|e| io("socket directory", e))?;
            hand_over(t.path(), run_as)?;
            (t.path().to_path_buf(), Some(t))
        };
        // From here on, a csdchar that dies leaves the cleanup to the watchdog.
        let watchdog = Watchdog::spawn(
            &bin.bin("pg_ctl"),
            &pgdata,
            ephemeral.as_ref().map(|t| t.path()),
            socket_guard.as_ref().map(|t| t.path()),
            run_as,
        )?;
        if let Some(t) = &ephemeral {
            write_marker(t.path(), &watchdog)?;
        }
        let mut cluster = ManagedCluster {
            bin,
            pgdata: pgdata.clone(),
            port: 0,
            socket_dir: socket_dir.clone(),
            socket_guard,
            log: pgdata.join("csdchar-server.log"),
            run_as,
            created: false,
            // A temporary cluster is always removed.
            keep_running: spec.keep_running && ephemeral.is_none(),
            running: false,
            attached: false,
            listen: listen.clone(),
            password_file: None,
            notes,
            postmaster: None,
            watchdog: Some(watchdog),
            ephemeral,
            memory_limit: None,
            memory_cgroup: None,
        };
        let host_auth = if cluster.bin.major >= 10 {
            "scram-sha-256"
        } else {
            "md5"
        };

        let mut password = read_password(&pgdata.join(PASSWORD_FILE));
        cluster.created = !pgdata.join("PG_VERSION").exists();
        if cluster.created {
            if let Some(r) = run_as {
                unreachable_ancestor(&pgdata, r)?;
            }
            let pw = random_password()?;
            fs::create_dir_all(&pgdata).map_err(|e| io(&pgdata.display().to_string(), e))?;
            hand_over(&pgdata, run_as)?;
            // initdb reads the password from a file the server's user can read;
            // it must not sit in the (still empty) data directory.
            let pw_dir = tempfile::Builder::new()
                .prefix("csdchar-pwfile")
                .permissions(fs::Permissions::from_mode(0o700))
                .tempdir()
                .map_err(|e| io("initdb password file", e))?;
            hand_over(pw_dir.path(), run_as)?;
            let pwfile = pw_dir.path().join("pw");
            write_private(&pwfile, &format!("{pw}\n"), run_as)?;
            let mut cmd = Command::new(cluster.bin.bin("initdb"));
            cmd.arg("-D")
                .arg(&pgdata)
                .arg("--auth-local=trust")
                .arg(format!("--auth-host={host_auth}"))
                .arg("--pwfile")
                .arg(&pwfile)
                .args(["-U", "postgres", "-E", "UTF8", "--no-sync"]);
            run(cmd, run_as, "initdb")?;
            password = Some(pw);
        }
        // The socket directory inside the data directory exists only after initdb.
        if cluster.socket_guard.is_none() {
            private_dir(&socket_dir, run_as)?;
            let _ = fs::remove_file(pgdata.join(SOCKET_RECORD));
        } else {
            write_private(
                &pgdata.join(SOCKET_RECORD),
                &format!("{}\n", socket_dir.display()),
                run_as,
            )?;
        }
        let custom_hba = settings.iter().any(|(k, _)| k == "hba_file");
        let mut set_password = false;
        if let Some(l) = &listen {
            if custom_hba {
                cluster.notes.push(
                    "--listen with a custom hba_file: its rules decide who may log in over TCP"
                        .into(),
                );
            } else {
                secure_hba(
                    &pgdata,
                    host_auth,
                    !is_loopback(l),
                    run_as,
                    &mut cluster.notes,
                )?;
            }
            if password.is_none() {
                password = Some(random_password()?);
                set_password = true;
            }
        }

        // The server writes its log as its own user, inside the data directory.
        let log = cluster.log.clone();
        fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| io(&log.display().to_string(), e))?;
        chown(&log, run_as);
        let port = free_port().map_err(|e| io("finding a free port", e))?;
        let mut opts = format!(
            "-p {port} -k {} -c {} -c unix_socket_permissions=0700",
            shell_quote(&socket_dir.display().to_string()),
            shell_quote(&format!(
                "listen_addresses={}",
                listen.as_deref().unwrap_or("")
            )),
        );
        for (k, v) in &settings {
            opts.push_str(&format!(" -c {}", shell_quote(&format!("{k}={v}"))));
        }
        // pg_ctl daemonizes the server; as a child subreaper we inherit it when
        // pg_ctl exits, so it can be reaped after stopping instead of lingering
        // as a zombie under an init that does not reap.
        // Safety: prctl with PR_SET_CHILD_SUBREAPER only sets a process flag.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        let mut cmd = Command::new(cluster.bin.bin("pg_ctl"));
        cmd.arg("start")
            .arg("-w")
            .arg("-t")
            .arg("120")
            .arg("-D")
            .arg(&pgdata)
            .arg("-l")
            .arg(&log)
            .arg("-o")
            .arg(&opts);
        if let (Some(h), Some(limit)) = (&hierarchy, spec.memory_limit) {
            let cg = MemCgroup::create(h, limit, &mut cluster.notes)?;
            cluster.memory_limit = Some(cg.limit);
            cluster.memory_cgroup = Some(cg);
        }
        let started = run_in(cmd, run_as, "pg_ctl start", cluster.memory_cgroup.as_ref());
        let pid_file = PidFile::read(&pgdata);
        // Whatever came up is stopped again by drop, also after a failed start.
        cluster.running = pid_file
            .as_ref()
            .is_some_and(|p| process_alive(p.pid, None));
        cluster.postmaster = pid_file.as_ref().map(|p| PostmasterWatch {
            pgdata: pgdata.clone(),
            pid: p.pid,
            start: proc_start_time(p.pid),
        });
        if let Err(e) = started {
            let limit = cluster.memory_limit.map_or(String::new(), |l| {
                format!(
                    "\n(the server runs under a memory limit of {}: shared_buffers and the backends must fit in it)",
                    human_bytes(l)
                )
            });
            return Err(ClusterError::Command(format!(
                "{e}\nserver log: {}\n{}{limit}",
                log.display(),
                tail(&log, 15)
            )));
        }
        cluster.running = true;
        // A --pg-set port or unix_socket_directories wins over ours; postmaster.pid knows.
        cluster.port = pid_file
            .as_ref()
            .map_or(port, |p| if p.port != 0 { p.port } else { port });
        if let Some(p) = &pid_file
            && !p.socket_dir.is_empty()
        {
            cluster.socket_dir = PathBuf::from(&p.socket_dir);
        }
        if let Some(pw) = &password {
            if set_password {
                cluster.set_password(pw, host_auth)?;
            }
            let file = pgdata.join(PASSWORD_FILE);
            write_private(
                &file,
                &format!("*:{}:*:postgres:{pw}\n", cluster.port),
                run_as,
            )?;
            cluster.password_file = Some(file);
        }
        Ok(cluster)
    }

    /// Attaches to the running server of `pgdata`, if there is one; a stale
    /// `postmaster.pid` (dead pid) is left to pg_ctl start.
    fn attach(
        bin: &PgBinaries,
        pgdata: &Path,
        run_as: Option<RunAs>,
        settings: &[(String, String)],
        listen: &Option<String>,
        memory_limit: Option<u64>,
        notes: &mut Vec<String>,
    ) -> Result<Option<ManagedCluster>, ClusterError> {
        let Some(mut pf) = PidFile::read(pgdata) else {
            return Ok(None);
        };
        if !process_alive(pf.pid, None) {
            return Ok(None);
        }
        // A server another csdchar is starting right now: wait until it is up.
        let deadline = Instant::now() + Duration::from_secs(60);
        while pf.status == "starting" && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            match PidFile::read(pgdata) {
                Some(p) if process_alive(p.pid, None) => pf = p,
                // It went away meanwhile: start it ourselves.
                _ => return Ok(None),
            }
        }
        let stop_hint = format!("stop it with: pg_ctl stop -D {}", pgdata.display());
        if pf.socket_dir.is_empty() {
            return Err(ClusterError::Command(format!(
                "a server (pid {}) already runs on {} without a Unix socket, so csdchar cannot attach; {stop_hint}",
                pf.pid,
                pgdata.display()
            )));
        }
        let socket = Path::new(&pf.socket_dir).join(format!(".s.PGSQL.{}", pf.port));
        if let Err(e) = std::os::unix::net::UnixStream::connect(&socket) {
            return Err(ClusterError::Command(format!(
                "a server (pid {}) already runs on {} but its socket {} does not answer ({e}); {stop_hint}",
                pf.pid,
                pgdata.display(),
                socket.display()
            )));
        }
        notes.push(format!(
            "attached to the server already running on {} (pid {}); it keeps running afterwards",
            pgdata.display(),
            pf.pid
        ));
        if !settings.is_empty() {
            notes.push(
                "--pg-set ignored: the server already runs (stop it to apply settings)".into(),
            );
        }
        if listen.is_some() {
            notes.push(format!(
                "--listen ignored: the server already runs ({})",
                if pf.listen.is_empty() {
                    "Unix socket only".to_string()
                } else {
                    format!("it listens on {}", pf.listen)
                }
            ));
        }
        if let Some(limit) = memory_limit {
            notes.push(format!(
                "--pg-memory-limit {} ignored: the server already runs (pid {}) and was not started in a memory cgroup of this run (stop it to apply the limit)",
                human_bytes(limit),
                pf.pid
            ));
        }
        let password_file = pgdata.join(PASSWORD_FILE);
        if !pf.listen.is_empty() && !password_file.exists() {
            notes.push(format!(
                "warning: the server listens on TCP ({}) and has no csdchar password; its pg_hba.conf decides who may log in — restart it with csdchar to apply csdchar's defaults",
                pf.listen
            ));
        }
        Ok(Some(ManagedCluster {
            bin: bin.clone(),
            pgdata: pgdata.to_path_buf(),
            port: pf.port,
            socket_dir: PathBuf::from(&pf.socket_dir),
            socket_guard: None,
            log: pgdata.join("csdchar-server.log"),
            run_as,
            created: false,
            keep_running: true,
            running: true,
            attached: true,
            listen: (!pf.listen.is_empty()).then(|| pf.listen.clone()),
            password_file: (!pf.listen.is_empty() && password_file.exists())
                .then_some(password_file),
            notes: std::mem::take(notes),
            postmaster: None,
            watchdog: None,
            ephemeral: None,
            memory_limit: None,
            memory_cgroup: None,
        }))
    }

    /// Gives `postgres` the password `pw` (a data directory without csdchar's
    /// password file, about to be reachable over TCP). Only the verifier goes
    /// to the server, so the clear text shows up in no statement log.
    fn set_password(&self, pw: &str, host_auth: &str) -> Result<(), ClusterError> {
        let verifier = if host_auth == "md5" {
            postgres_protocol::password::md5(pw.as_bytes(), "postgres")
        } else {
            postgres_protocol::password::scram_sha_256(pw.as_bytes())
        };
        let fail = |e: &dyn std::fmt::Display| {
            ClusterError::Command(format!("setting the password of postgres: {e}"))
        };
        let target = ConnTarget::parse(&self.conninfo("postgres"), &NoEnv).map_err(|e| fail(&e))?;
        let mut conn = WireConn::connect(&target, None).map_err(|e| fail(&e))?;
        conn.simple(&format!("ALTER ROLE postgres PASSWORD '{verifier}'"))
            .map_err(|e| fail(&e))?;
        Ok(())
    }

    fn run_as() -> Result<Option<RunAs>, ClusterError> {
        // Safety: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Ok(None);
        }
        let name = CString::new("postgres").expect("static");
        // Safety: getpwnam returns NULL or a pointer to static storage we read at once.
        let pw = unsafe { libc::getpwnam(name.as_ptr()) };
        if pw.is_null() {
            return Err(ClusterError::NoPostgresUser);
        }
        // Safety: pw is non-NULL and points to a valid passwd entry.
        let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
        Ok(Some(RunAs { uid, gid }))
    }

    /// The server's port: the number of its Unix socket, and its TCP port
    /// when it listens (see [`Self::listen`]).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Directory of the server's Unix socket (private: mode 0700, the server's user).
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// Data directory (absolute).
    pub fn pgdata(&self) -> &Path {
        &self.pgdata
    }

    /// Server log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Whether this run created the data directory with initdb.
    pub fn created(&self) -> bool {
        self.created
    }

    /// Whether the server was already running and this cluster attached to
    /// it; dropping an attached cluster never stops the server.
    pub fn attached(&self) -> bool {
        self.attached
    }

    /// TCP listen addresses, when the server listens on TCP at all.
    pub fn listen(&self) -> Option<&str> {
        self.listen.as_deref()
    }

    /// The libpq password file (mode 0600, in the data directory) holding
    /// `postgres`'s password for TCP logins, when the server listens on TCP
    /// and has one: use it with `PGPASSFILE`. The password itself is never
    /// printed.
    pub fn password_file(&self) -> Option<&Path> {
        if self.listen.is_some() {
            self.password_file.as_deref()
        } else {
            None
        }
    }

    /// The memory limit (bytes, page cache included) the server runs under,
    /// as the kernel reports it; None without [`ClusterSpec::memory_limit`]
    /// or when attached.
    pub fn memory_limit(&self) -> Option<u64> {
        self.memory_limit
    }

    /// The server's memory cgroup directory (e.g.
    /// `/sys/fs/cgroup/memory/csdchar-pg-<pid>-<n>`) while it exists: from
    /// start until the server is stopped. None without a memory limit.
    pub fn memory_cgroup(&self) -> Option<&Path> {
        self.memory_cgroup.as_ref().map(|c| c.path.as_path())
    }

    /// What happened on the way that the user should hear about: stale
    /// temporary directories or cgroups removed or left, attaching, ignored
    /// settings, rewritten pg_hba lines, the memory cgroup (and its cgroup
    /// version) the server runs in. One line each, to be printed as they are.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// How to connect with psql, for a server that is kept running or
    /// attached (never a password).
    pub fn connect_hint(&self) -> String {
        let mut hint = format!(
            "psql -h {} -p {} -U postgres",
            shell_word(&self.socket_dir.display().to_string()),
            self.port
        );
        if let (Some(l), Some(f)) = (self.listen(), self.password_file()) {
            let host = match l.split(',').next().unwrap_or("").trim() {
                "*" | "0.0.0.0" | "::" | "" => "localhost",
                h => h,
            };
            hint.push_str(&format!(
                " (over TCP: PGPASSFILE={} psql -h {host} -p {} -U postgres)",
                shell_word(&f.display().to_string()),
                self.port
            ));
        }
        hint
    }

    /// Major version of the server.
    pub fn major_version(&self) -> u32 {
        self.bin.major
    }

    /// libpq-style connection string over the Unix socket (superuser
    /// `postgres`, local trust; no password).
    pub fn conninfo(&self, dbname: &str) -> String {
        format!(
            "host={} port={} user=postgres dbname={}",
            conninfo_value(&self.socket_dir.display().to_string()),
            self.port,
            conninfo_value(dbname)
        )
    }

    /// Runs a client binary of this installation (e.g. `psql`) against the
    /// cluster, over the Unix socket.
    pub fn client(&self, program: &str) -> Command {
        let mut cmd = Command::new(self.bin.bin(program));
        cmd.arg("-h")
            .arg(&self.socket_dir)
            .args(["-p", &self.port.to_string(), "-U", "postgres"]);
        cmd
    }

    /// Stops the server (fast shutdown). Idempotent. Also stops an attached
    /// server: an explicit request, unlike drop. A server this run started
    /// whose postmaster has exited is not waited for but cleaned up after
    /// (see "A server that dies" in the module doc).
    pub fn stop(&mut self) -> Result<(), ClusterError> {
        if !self.running {
            return Ok(());
        }
        // pg_ctl would wait its whole timeout for a dead postmaster's zombie.
        if self.postmaster_exited() {
            self.clean_up_after_postmaster();
            return Ok(());
        }
        let mut cmd = Command::new(self.bin.bin("pg_ctl"));
        cmd.arg("stop")
            .arg("-w")
            .arg("-m")
            .arg("fast")
            .arg("-D")
            .arg(&self.pgdata);
        run(cmd, self.run_as, "pg_ctl stop")?;
        self.running = false;
        self.reap();
        // The server has exited (pg_ctl -w waits for that), so it is empty now.
        drop(self.memory_cgroup.take());
        Ok(())
    }

    /// The postmaster this run started, to ask whether it has exited (None
    /// when attached: whoever started that server may restart it).
    pub fn postmaster_watch(&self) -> Option<PostmasterWatch> {
        self.postmaster.clone()
    }

    /// Whether the postmaster this run started has exited while it should run.
    fn postmaster_exited(&self) -> bool {
        self.postmaster
            .as_ref()
            .is_some_and(PostmasterWatch::exited)
    }

    /// Ends what is left of a server whose postmaster has exited, as its
    /// shutdown would have (see the module doc): processes, zombies, shared
    /// memory, `postmaster.pid`, the socket and its lock file.
    fn clean_up_after_postmaster(&mut self) {
        let Some(pid) = self.postmaster.as_ref().map(|w| w.pid) else {
            return;
        };
        // Only a file of that postmaster's is ours to remove.
        let pid_file = PidFile::read(&self.pgdata).filter(|p| p.pid == pid);
        end_server_processes(&self.pgdata);
        self.running = false;
        self.reap();
        if let Some((_, id)) = pid_file.as_ref().and_then(|p| p.shmem) {
            remove_shmem_segment(id, pid);
        }
        if let Some(p) = &pid_file {
            if !p.socket_dir.is_empty() {
                let socket = Path::new(&p.socket_dir).join(format!(".s.PGSQL.{}", p.port));
                let _ = fs::remove_file(&socket);
                let mut lock = socket.into_os_string();
                lock.push(".lock");
                let _ = fs::remove_file(lock);
            }
            let _ = fs::remove_file(self.pgdata.join("postmaster.pid"));
        }
        // No server process is left in it.
        drop(self.memory_cgroup.take());
    }

    /// Collects the exited postmaster if it is our child (see start), and
    /// server processes orphaned to us after a crash.
    fn reap(&mut self) {
        reap_orphaned_postgres();
        let Some(pid) = self.postmaster.take().map(|w| w.pid) else {
            return;
        };
        for _ in 0..200 {
            let mut status = 0;
            // Safety: waitpid on one specific pid; WNOHANG never blocks.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r != 0 {
                return; // reaped, or not our child (ECHILD)
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for ManagedCluster {
    fn drop(&mut self) {
        if self.attached {
            return;
        }
        if self.keep_running {
            // The running server still needs its socket directory.
            if let Some(t) = self.socket_guard.take() {
                let _ = t.keep();
            }
            if let Some(w) = self.watchdog.take() {
                w.finish(Some("keep"));
            }
            // The server still runs in it; a later sweep removes it once empty.
            if let Some(cg) = self.memory_cgroup.take() {
                cg.keep();
            }
            return;
        }
        if self.stop().is_err() && self.postmaster_exited() {
            // It died while pg_ctl stop waited.
            self.clean_up_after_postmaster();
        } else if self.running {
            // Last resort so no server outlives us: immediate shutdown.
            let mut cmd = Command::new(self.bin.bin("pg_ctl"));
            cmd.arg("stop")
                .arg("-m")
                .arg("immediate")
                .arg("-D")
                .arg(&self.pgdata);
            let _ = run(cmd, self.run_as, "pg_ctl stop -m immediate");
            self.reap();
            // Backends of a crashed server exit a moment after it.
            for _ in 0..20 {
                std::thread::sleep(Duration::from_millis(50));
                reap_orphaned_postgres();
            }
        }
        // Only now is the cgroup empty.
        drop(self.memory_cgroup.take());
        // Synchronously, as before; then the watchdog has nothing left to do.
        drop(self.ephemeral.take());
        drop(self.socket_guard.take());
        if let Some(w) = self.watchdog.take() {
            w.finish(Some("done"));
        }
    }
}

/// Name prefix of the memory cgroups csdchar creates: `csdchar-pg-<pid>-<n>`.
const CGROUP_PREFIX: &str = "csdchar-pg-";

/// The cgroup interface that offers the memory controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CgroupVersion {
    V1,
    V2,
}

/// Where memory cgroups can be made on this machine (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
struct MemoryHierarchy {
    version: CgroupVersion,
    /// The hierarchy's mount point; csdchar's cgroups go right below it.
    root: PathBuf,
}

impl MemoryHierarchy {
    /// The hierarchy to use: a v2 mount that offers `memory`, else a v1
    /// memory hierarchy; None when there is neither.
    fn detect() -> Option<MemoryHierarchy> {
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mounts = cgroup_mounts(&mountinfo);
        let v2 = mounts.iter().find(|h| {
            h.version == CgroupVersion::V2
                && fs::read_to_string(h.root.join("cgroup.controllers"))
                    .is_ok_and(|c| c.split_whitespace().any(|w| w == "memory"))
        });
        let v1 = mounts.iter().find(|h| {
            h.version == CgroupVersion::V1 && h.root.join("memory.limit_in_bytes").exists()
        });
        v2.or(v1).cloned()
    }

    /// The hierarchy for `limit`, or why the limit cannot be applied.
    fn for_limit(limit: u64) -> Result<MemoryHierarchy, ClusterError> {
        if limit == 0 {
            return Err(ClusterError::MemoryLimit(
                "the limit must be above 0".into(),
            ));
        }
        // Safety: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(ClusterError::MemoryLimit(
                "needs root: the server is put in a memory cgroup of its own; run as root or leave the option out".into(),
            ));
        }
        Self::detect().ok_or_else(|| {
            ClusterError::MemoryLimit(
                "this machine offers no memory cgroup controller (no cgroup v2 mount listing memory in cgroup.controllers, no cgroup v1 memory hierarchy in /proc/self/mountinfo)".into(),
            )
        })
    }

    fn limit_file(&self) -> &'static str {
        match self.version {
            CgroupVersion::V1 => "memory.limit_in_bytes",
            CgroupVersion::V2 => "memory.max",
        }
    }
}

/// The cgroup mounts in a `/proc/self/mountinfo` text: every cgroup2 mount
/// and every v1 mount with the `memory` controller, in mount order.
fn cgroup_mounts(mountinfo: &str) -> Vec<MemoryHierarchy> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        // "id parent maj:min root mountpoint options [optional…] - fstype source superoptions"
        let Some((head, tail)) = line.split_once(" - ") else {
            continue;
        };
        let Some(mount_point) = head.split(' ').nth(4) else {
            continue;
        };
        let mut t = tail.split(' ');
        let (fstype, superopts) = (t.next(), t.nth(1).unwrap_or(""));
        let version = match fstype {
            Some("cgroup2") => CgroupVersion::V2,
            Some("cgroup") if superopts.split(',').any(|o| o == "memory") => CgroupVersion::V1,
            _ => continue,
        };
        out.push(MemoryHierarchy {
            version,
            root: PathBuf::from(unescape_mountinfo(mount_point)),
        });
    }
    out
}

/// mountinfo writes space, tab, newline and backslash as `\ooo` octal.
fn unescape_mountinfo(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |n, c| n.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The memory cgroup of a started server; removed on drop (rmdir, which only
/// succeeds once no process is left in it) unless kept.
#[derive(Debug)]
struct MemCgroup {
    path: PathBuf,
    /// The limit as read back from the kernel.
    limit: u64,
    kept: bool,
}

impl MemCgroup {
    /// Creates `csdchar-pg-<pid>-<n>` in `h` with `limit` and notes which it is.
    fn create(
        h: &MemoryHierarchy,
        limit: u64,
        notes: &mut Vec<String>,
    ) -> Result<MemCgroup, ClusterError> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let fail =
            |what: String, e: std::io::Error| ClusterError::MemoryLimit(format!("{what}: {e}"));
        if h.version == CgroupVersion::V2 {
            // Children get memory.max only when their parent enables the controller.
            let control = h.root.join("cgroup.subtree_control");
            let enabled =
                fs::read_to_string(&control).map_err(|e| fail(control.display().to_string(), e))?;
            if !enabled.split_whitespace().any(|c| c == "memory") {
                fs::write(&control, "+memory")
                    .map_err(|e| fail(format!("enabling +memory in {}", control.display()), e))?;
                notes.push(format!(
                    "enabled the memory controller in {} (needed for --pg-memory-limit)",
                    control.display()
                ));
            }
        }
        let me = std::process::id();
        let path = loop {
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let p = h.root.join(format!("{CGROUP_PREFIX}{me}-{n}"));
            match fs::create_dir(&p) {
                Ok(()) => break p,
                // Left by an earlier process with our pid: take the next number.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(fail(format!("creating {}", p.display()), e)),
            }
        };
        let mut cg = MemCgroup {
            path,
            limit,
            kept: false,
        };
        let file = cg.path.join(h.limit_file());
        fs::write(&file, limit.to_string())
            .map_err(|e| fail(format!("writing {}", file.display()), e))?;
        // The kernel rounds down to whole pages; report what holds.
        cg.limit = fs::read_to_string(&file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(limit);
        notes.push(format!(
            "memory cgroup {}: the server runs in {} with {}={} ({}, page cache included)",
            match h.version {
                CgroupVersion::V1 => "v1",
                CgroupVersion::V2 => "v2",
            },
            cg.path.display(),
            h.limit_file(),
            cg.limit,
            human_bytes(cg.limit)
        ));
        Ok(cg)
    }

    /// Moves process `pid` (all its threads) into the cgroup.
    fn add(&self, pid: u32) -> std::io::Result<()> {
        fs::write(self.path.join("cgroup.procs"), pid.to_string())
    }

    /// Leaves the cgroup in place (its server keeps running).
    fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        // Exiting processes leave the cgroup a moment after the server is
        // reported stopped; a cgroup still busy after that is left to the
        // next run's sweep.
        for _ in 0..50 {
            match fs::remove_dir(&self.path) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                _ => return,
            }
        }
    }
}

/// The csdchar pid in a cgroup name of ours (`csdchar-pg-<pid>-<n>`).
fn cgroup_owner(name: &str) -> Option<i32> {
    let (pid, n) = name.strip_prefix(CGROUP_PREFIX)?.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !(digits(pid) && digits(n)) {
        return None;
    }
    pid.parse().ok()
}

/// Removes memory cgroups of dead csdchar runs (see the module doc): named
/// like ours, owner pid gone, no process inside. One note each.
fn sweep_stale_cgroups() -> Vec<String> {
    let mut notes = Vec::new();
    let Some(h) = MemoryHierarchy::detect() else {
        return notes;
    };
    let Ok(entries) = fs::read_dir(&h.root) else {
        return notes;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(cgroup_owner) else {
            continue;
        };
        let dir = e.path();
        if process_alive(pid, None) || !fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        // A kept server may still run in it: then it stays.
        let empty = fs::read_to_string(dir.join("cgroup.procs")).is_ok_and(|p| p.trim().is_empty());
        if !empty {
            continue;
        }
        match fs::remove_dir(&dir) {
            Ok(()) => notes.push(format!(
                "removed memory cgroup {}: left by a csdchar run (pid {pid}) that is gone",
                dir.display()
            )),
            Err(e) => notes.push(format!(
                "could not remove memory cgroup {}: {e}",
                dir.display()
            )),
        }
    }
    notes
}

/// Bytes for people: `256 MiB`, `1.5 GiB`, or plain bytes.
fn human_bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size {
            let v = n as f64 / size as f64;
            return if n.is_multiple_of(size) {
                format!("{} {unit}", n / size)
            } else {
                format!("{v:.1} {unit}")
            };
        }
    }
    format!("{n} B")
}

/// Splits `key=value` settings; the key must be a plain parameter name.
fn parse_settings(settings: &[String]) -> Result<Vec<(String, String)>, ClusterError> {
    settings
        .iter()
        .map(|s| {
            let (k, v) = s
                .split_once('=')
                .ok_or_else(|| ClusterError::BadSetting(s.clone()))?;
            let k = k.trim();
            if k.is_empty()
                || !k
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                return Err(ClusterError::BadSetting(s.clone()));
            }
            Ok((k.to_string(), v.trim().to_string()))
        })
        .collect()
}

/// `listen_addresses` syntax: comma-separated host names, addresses or `*`.
fn validate_listen(l: &str) -> Result<(), ClusterError> {
    let ok = l.split(',').all(|a| {
        let a = a.trim();
        !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || ".:-_*%".contains(c))
    });
    if ok {
        Ok(())
    } else {
        Err(ClusterError::BadListen(l.to_string()))
    }
}

/// Whether every listen address is a loopback one (initdb's host lines cover those).
fn is_loopback(l: &str) -> bool {
    l.split(',').all(|a| {
        let a = a.trim();
        a == "localhost"
            || a.parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

/// Makes a data directory's pg_hba.conf ask for the password over TCP:
/// `host…` lines with `trust` (an older csdchar's) become `host_auth`, and a
/// non-loopback `listen` gets password lines for any address.
fn secure_hba(
    pgdata: &Path,
    host_auth: &str,
    any_address: bool,
    run_as: Option<RunAs>,
    notes: &mut Vec<String>,
) -> Result<(), ClusterError> {
    let path = pgdata.join("pg_hba.conf");
    let text = fs::read_to_string(&path)
        .map_err(|e| ClusterError::Io(format!("{}: {e}", path.display())))?;
    let (mut out, changed) = rewrite_trust_host_lines(&text, host_auth);
    let marker = "# csdchar --listen: password logins from any address";
    let add_any = any_address && !text.contains(marker);
    if add_any {
        if !out.ends_with('\n') && !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!(
            "{marker}\nhost all all 0.0.0.0/0 {host_auth}\nhost all all ::/0 {host_auth}\n"
        ));
    }
    if changed == 0 && !add_any {
        return Ok(());
    }
    let mode = fs::metadata(&path).map_or(0o600, |m| m.permissions().mode() & 0o777);
    write_file(&path, &out, mode, run_as)?;
    if changed > 0 {
        notes.push(format!(
            "{}: {changed} host line(s) changed from trust to {host_auth}, as --listen needs",
            path.display()
        ));
    }
    if add_any {
        notes.push(format!(
            "{}: added {host_auth} lines for any address, as --listen needs",
            path.display()
        ));
    }
    Ok(())
}

/// `text` with the method of its `host*` lines that end in `trust` replaced
/// by `auth`, and how many were.
fn rewrite_trust_host_lines(text: &str, auth: &str) -> (String, usize) {
    let mut changed = 0;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let content = body.split('#').next().unwrap_or("");
        let is_host = content
            .split_whitespace()
            .next()
            .is_some_and(|t| t.starts_with("host"));
        let trimmed = content.trim_end();
        // trust takes no options, so it is the line's last word.
        if is_host
            && let Some(head) = trimmed.strip_suffix("trust")
            && head.ends_with(char::is_whitespace)
        {
            out.push_str(head);
            out.push_str(auth);
            out.push_str(&body[trimmed.len()..]);
            out.push_str(nl);
            changed += 1;
        } else {
            out.push_str(line);
        }
    }
    (out, changed)
}

/// Whether a socket in `dir` fits `sun_path` with any port number.
fn socket_path_fits(dir: &Path) -> bool {
    dir.as_os_str().len() + "/.s.PGSQL.65535".len() <= SUN_PATH_MAX
}

/// Removes the socket directory outside `pgdata` a previous run recorded
/// (kept for a server that kept running and has stopped since), if it still
/// looks like ours.
fn remove_recorded_socket_dir(pgdata: &Path) {
    let Ok(text) = fs::read_to_string(pgdata.join(SOCKET_RECORD)) else {
        return;
    };
    let dir = PathBuf::from(text.trim());
    let ours = dir.parent() == Some(Path::new("/tmp"))
        && dir
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(SOCKET_PREFIX))
        && fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
    if ours {
        let _ = fs::remove_dir_all(&dir);
    }
}

/// Creates (or resets) `dir` as a private directory of the server's user.
fn private_dir(dir: &Path, run_as: Option<RunAs>) -> Result<(), ClusterError> {
    if let Ok(m) = fs::symlink_metadata(dir)
        && !m.is_dir()
    {
        fs::remove_file(dir).map_err(|e| ClusterError::Io(format!("{}: {e}", dir.display())))?;
    }
    if !dir.is_dir() {
        fs::DirBuilder::new()
            .mode(0o700)
            .create(dir)
            .map_err(|e| ClusterError::Io(format!("{}: {e}", dir.display())))?;
    }
    if run_as.is_some() {
        hand_over(dir, run_as)
    } else {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| ClusterError::Io(format!("{}: {e}", dir.display())))
    }
}

/// Writes `contents` to `path` (mode 0600, the server's user) via a rename,
/// so no reader sees half a file and no other mode ever applies.
fn write_private(path: &Path, contents: &str, run_as: Option<RunAs>) -> Result<(), ClusterError> {
    write_file(path, contents, 0o600, run_as)
}

fn write_file(
    path: &Path,
    contents: &str,
    mode: u32,
    run_as: Option<RunAs>,
) -> Result<(), ClusterError> {
    let err = |e: std::io::Error| ClusterError::Io(format!("{}: {e}", path.display()));
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".csdchar-new");
    let tmp = PathBuf::from(tmp);
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .map_err(err)?;
    f.write_all(contents.as_bytes()).map_err(err)?;
    drop(f);
    chown(&tmp, run_as);
    fs::rename(&tmp, path).map_err(err)
}

/// Hands a file to the server's user (as root).
fn chown(path: &Path, run_as: Option<RunAs>) {
    if let Some(r) = run_as {
        let c = CString::new(path.as_os_str().as_encoded_bytes()).expect("no NUL in paths");
        // Safety: chown on a NUL-terminated path; a failure shows up when the server uses it.
        unsafe { libc::chown(c.as_ptr(), r.uid, r.gid) };
    }
}

/// The password in a passfile line `host:port:db:user:password` (last field;
/// `\:` and `\\` escaped).
fn read_password(path: &Path) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| !l.trim().is_empty())?;
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => cur.extend(chars.next()),
            ':' if fields.len() < 4 => fields.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    (fields.len() == 4 && !cur.is_empty()).then_some(cur)
}

/// 32 random letters and digits from the kernel's generator (~190 bits).
fn random_password() -> Result<String, ClusterError> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::with_capacity(32);
    let mut buf = [0u8; 64];
    while out.len() < 32 {
        // Safety: getrandom writes at most buf.len() bytes into buf.
        let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(ClusterError::Io(format!("random password: {e}")));
        }
        // 248 = 4 * 62: rejecting the rest keeps every character equally likely.
        for &b in buf[..n as usize].iter().filter(|&&b| b < 248) {
            if out.len() < 32 {
                out.push(ALPHABET[(b % 62) as usize] as char);
            }
        }
    }
    Ok(out)
}

/// `/proc/<pid>/stat` field 22 (start time in clock ticks), None when the
/// process is gone or a zombie.
fn proc_start_time(pid: i32) -> Option<u64> {
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
fn process_alive(pid: i32, start: Option<u64>) -> bool {
    match (proc_start_time(pid), start) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(t), Some(s)) => t == s,
    }
}

/// Writes the marker of a temporary cluster's directory (see the module doc).
fn write_marker(dir: &Path, watchdog: &Watchdog) -> Result<(), ClusterError> {
    let me = std::process::id() as i32;
    let text = format!(
        "csdchar-run 1\npid {me} {}\nuid {}\nwatchdog {} {}\n",
        proc_start_time(me).unwrap_or(0),
        // Safety: geteuid has no preconditions.
        unsafe { libc::geteuid() },
        watchdog.pid(),
        proc_start_time(watchdog.pid()).unwrap_or(0),
    );
    // Root's marker in the server user's directory: the watchdog can still remove it.
    write_file(&dir.join(RUN_MARKER), &text, 0o644, None)
}

/// A marker's content: (csdchar pid, start), uid, (watchdog pid, start).
type Marker = ((i32, u64), u32, (i32, u64));

fn read_marker(dir: &Path) -> Option<Marker> {
    let text = fs::read_to_string(dir.join(RUN_MARKER)).ok()?;
    let mut lines = text.lines();
    if lines.next()? != "csdchar-run 1" {
        return None;
    }
    let pair = |l: &str, key: &str| -> Option<(i32, u64)> {
        let mut w = l.strip_prefix(key)?.split_whitespace();
        Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
    };
    let run = pair(lines.next()?, "pid ")?;
    let uid = lines.next()?.strip_prefix("uid ")?.trim().parse().ok()?;
    let watchdog = pair(lines.next()?, "watchdog ")?;
    Some((run, uid, watchdog))
}

/// Removes the temporary cluster directories of dead runs under `root` and
/// reports the ones it must leave; one note each (see the module doc).
fn sweep_stale(root: &Path) -> Vec<String> {
    let mut notes = Vec::new();
    let Ok(entries) = fs::read_dir(root) else {
        return notes;
    };
    // Safety: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(suffix) = name.strip_prefix(TEMP_PREFIX) else {
            continue;
        };
        let dir = e.path();
        // A symlink named like ours is not ours.
        if !fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let pgdata = dir.join("pgdata");
        let server = PidFile::read(&pgdata)
            .map(|p| p.pid)
            .filter(|&pid| process_alive(pid, None));
        match read_marker(&dir) {
            Some(((pid, start), uid, (wpid, wstart))) => {
                if uid != me || process_alive(pid, Some(start)) || process_alive(wpid, Some(wstart))
                {
                    continue; // another user's, or a live run, or cleanup under way
                }
                if let Some(spid) = server {
                    notes.push(format!(
                        "left {}: its csdchar run (pid {pid}) is gone but its server (pid {spid}) still runs; stop it with: pg_ctl stop -D {}",
                        dir.display(),
                        pgdata.display()
                    ));
                    continue;
                }
                match fs::remove_dir_all(&dir) {
                    Ok(()) => notes.push(format!(
                        "removed {}: temporary cluster of a csdchar run (pid {pid}) that is gone",
                        dir.display()
                    )),
                    Err(e) => notes.push(format!("could not remove {}: {e}", dir.display())),
                }
            }
            None => {
                // An older csdchar's directory: tempfile's six characters, only pgdata inside.
                let only_pgdata = fs::read_dir(&dir).is_ok_and(|rd| {
                    let names: Vec<_> = rd.flatten().map(|e| e.file_name()).collect();
                    names.len() == 1 && names[0] == "pgdata"
                });
                let owner = fs::metadata(&dir).map(|m| std::os::unix::fs::MetadataExt::uid(&m));
                let owned = owner.is_ok_and(|u| u == me || me == 0);
                if suffix.len() == 6 && only_pgdata && owned && pgdata.join("PG_VERSION").exists() {
                    notes.push(match server {
                        Some(spid) => format!(
                            "{} looks like a temporary cluster of an older csdchar; its server (pid {spid}) still runs: pg_ctl stop -D {}, then remove the directory",
                            dir.display(),
                            pgdata.display()
                        ),
                        None => format!(
                            "{} looks like a temporary cluster of an older csdchar, left behind; remove it if no one uses it",
                            dir.display()
                        ),
                    });
                }
            }
        }
    }
    notes
}

/// How long the processes of a server whose postmaster died get to notice
/// and exit by themselves (they do at their next wait) before they are killed.
const ORPHANS_GRACE: Duration = Duration::from_secs(2);

/// Ends the processes left of a server whose postmaster has exited: the
/// `postgres` processes working in `pgdata` (every server process runs
/// there). They get [`ORPHANS_GRACE`] to exit, then SIGKILL (what they would
/// get from an immediate shutdown is SIGQUIT, but nobody is left to wait for
/// their answer); their zombies are reaped meanwhile. Waits at most a second
/// after the kill (a process stuck in the kernel cannot be helped).
fn end_server_processes(pgdata: &Path) {
    let dir = fs::canonicalize(pgdata).unwrap_or_else(|_| pgdata.to_path_buf());
    let started = Instant::now();
    let mut killed = false;
    loop {
        reap_orphaned_postgres();
        let left = processes_in(&dir, "postgres");
        if left.is_empty() || started.elapsed() > ORPHANS_GRACE + Duration::from_secs(1) {
            return;
        }
        if !killed && started.elapsed() >= ORPHANS_GRACE {
            for &pid in &left {
                // Safety: kill sends a signal to a process of this server only.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Live (not zombie) processes named `comm` whose working directory is `dir`.
fn processes_in(dir: &Path, comm: &str) -> Vec<i32> {
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

/// Removes the SysV shared memory segment `id` if postmaster `pid` created
/// it and nothing is attached any more (a running server's is never touched).
fn remove_shmem_segment(id: i32, pid: i32) {
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
struct ProcStat {
    comm: String,
    state: String,
    ppid: i32,
    session: i32,
}

fn proc_stat(pid: i32) -> Option<ProcStat> {
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
fn reap_orphaned_postgres() {
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
            let mut status = 0;
            // Safety: waitpid on one specific zombie child; WNOHANG never blocks.
            unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        }
    }
}

/// Checks, before anything starts, that the server's user can reach
/// `pgdata` (relative paths are taken from the working directory): the
/// error names `--pgdata` and the directory it cannot enter. Running as the
/// server's own user there is nothing to check; a missing `postgres` user is
/// left to [`ManagedCluster::start`] to report.
pub fn check_pgdata_reachable(pgdata: &Path) -> Result<(), ClusterError> {
    let Ok(Some(r)) = ManagedCluster::run_as() else {
        return Ok(());
    };
    let pgdata = std::path::absolute(pgdata)
        .map_err(|e| ClusterError::Io(format!("--pgdata: {}: {e}", pgdata.display())))?;
    unreachable_ancestor(&pgdata, r)
}

/// As root the server runs as `postgres`, which must be able to enter every
/// directory above the data directory: say which one it cannot (a 0700
/// directory of root's, such as `mktemp -d` makes) instead of initdb's
/// "Permission denied" after the fact.
fn unreachable_ancestor(pgdata: &Path, r: RunAs) -> Result<(), ClusterError> {
    use std::os::unix::fs::MetadataExt;
    for dir in pgdata.ancestors().skip(1) {
        let Ok(m) = fs::metadata(dir) else {
            continue; // created below by us, handed over
        };
        let mode = m.mode();
        let can_enter = if m.uid() == r.uid {
            mode & 0o100 != 0
        } else if m.gid() == r.gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !can_enter {
            return Err(ClusterError::Io(format!(
                "--pgdata: the server runs as user postgres, which cannot enter {} (mode {:o}, owner uid {}); \
                 choose a directory it can reach or allow it (chmod o+x {})",
                dir.display(),
                mode & 0o7777,
                m.uid(),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Gives `dir` to the server's user (mode 0700, as initdb wants).
fn hand_over(dir: &Path, run_as: Option<RunAs>) -> Result<(), ClusterError> {
    let Some(r) = run_as else { return Ok(()) };
    let c = CString::new(dir.as_os_str().as_encoded_bytes()).expect("no NUL in paths");
    // Safety: chown on a path we own; errors are reported below.
    if unsafe { libc::chown(c.as_ptr(), r.uid, r.gid) } != 0 {
        return Err(ClusterError::Io(format!(
            "cannot hand {} to user postgres: {}",
            dir.display(),
            std::io::Error::last_os_error()
        )));
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .map_err(|e| ClusterError::Io(format!("{}: {e}", dir.display())))
}

fn run(cmd: Command, run_as: Option<RunAs>, what: &str) -> Result<Output, ClusterError> {
    run_in(cmd, run_as, what, None)
}

/// Runs `cmd` like [`run`], inside `cgroup` when given: from its first
/// instruction, so everything it starts is inside too (see the module doc).
fn run_in(
    cmd: Command,
    run_as: Option<RunAs>,
    what: &str,
    cgroup: Option<&MemCgroup>,
) -> Result<Output, ClusterError> {
    let program = cmd.get_program().to_owned();
    let mut cmd = match cgroup {
        Some(_) => {
            // The shell waits for "go", written once its pid is in the
            // cgroup; EOF instead (the move failed) ends it before pg_ctl runs.
            let mut sh = Command::new("sh");
            sh.arg("-c")
                .arg("IFS= read -r go && [ \"$go\" = go ] || exit 97; exec \"$@\" </dev/null")
                .arg("csdchar-cgroup-entry")
                .arg(cmd.get_program())
                .args(cmd.get_args());
            sh
        }
        None => cmd,
    };
    if let Some(r) = run_as {
        cmd.uid(r.uid).gid(r.gid);
        // The server's user cannot enter root's working directory.
        cmd.current_dir("/");
    }
    let cannot =
        |e: std::io::Error| ClusterError::Command(format!("{what}: cannot run {program:?}: {e}"));
    let out = match cgroup {
        None => cmd.output().map_err(cannot)?,
        Some(cg) => {
            let mut child = cmd
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(cannot)?;
            let mut stdin = child.stdin.take().expect("piped");
            if let Err(e) = cg.add(child.id()) {
                drop(stdin);
                let _ = child.wait();
                return Err(ClusterError::MemoryLimit(format!(
                    "cannot put {what} into {}: {e}",
                    cg.path.display()
                )));
            }
            // A shell that is gone already shows up in its exit status.
            let _ = stdin.write_all(b"go\n");
            drop(stdin);
            child.wait_with_output().map_err(cannot)?
        }
    };
    if !out.status.success() {
        return Err(ClusterError::Command(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        )));
    }
    Ok(out)
}

/// A port that was free a moment ago on 127.0.0.1.
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Single-quotes `s` for the shell pg_ctl starts the server through.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// `s` as one shell word, quoted only when it needs to be (for hints).
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c))
    {
        s.to_string()
    } else {
        shell_quote(s)
    }
}

/// A conninfo value, quoted when it holds spaces, quotes or backslashes.
fn conninfo_value(s: &str) -> String {
    if !s.is_empty() && !s.contains([' ', '\'', '\\', '\t', '\n']) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// The last `n` lines of a file, for error messages.
fn tail(path: &Path, n: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_and_settings() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_word("/var/tmp/x"), "/var/tmp/x");
        assert_eq!(shell_word("/a b"), "'/a b'");
        assert_eq!(conninfo_value("/tmp/s"), "/tmp/s");
        assert_eq!(conninfo_value("/a b'c\\"), "'/a b\\'c\\\\'");
        let bad = ClusterSpec {
            settings: vec!["novalue".into()],
            ..Default::default()
        };
        assert!(matches!(
            ManagedCluster::start(&bad),
            Err(ClusterError::BadSetting(_))
        ));
        let bad = ClusterSpec {
            settings: vec!["a b=1".into()],
            ..Default::default()
        };
        assert!(matches!(
            ManagedCluster::start(&bad),
            Err(ClusterError::BadSetting(_))
        ));
        for l in ["", "1.2.3.4 -c x=y", "a;b", "127.0.0.1,"] {
            let bad = ClusterSpec {
                listen: Some(l.into()),
                ..Default::default()
            };
            assert!(
                matches!(ManagedCluster::start(&bad), Err(ClusterError::BadListen(_))),
                "{l:?}"
            );
        }
        assert!(validate_listen("127.0.0.1,::1,localhost,*,fe80::1%eth0").is_ok());
        assert!(is_loopback("127.0.0.1,::1,localhost"));
        assert!(!is_loopback("127.0.0.1,0.0.0.0"));
        assert!(!is_loopback("*"));
    }

    #[test]
    fn explicit_bin_dir_must_hold_the_server() {
        let d = tempfile::tempdir().unwrap();
        assert!(matches!(
            PgBinaries::find(Some(d.path())),
            Err(ClusterError::NoBinaries(_))
        ));
    }

    #[test]
    fn trust_host_lines_become_password_lines() {
        let hba = "# comment with trust\n\
                   local   all   all   trust\n\
                   host    all   all   127.0.0.1/32   trust\n\
                   host all all ::1 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff trust # old\n\
                   hostssl all   all   10.0.0.0/8     md5\n\
                   host    replication all 127.0.0.1/32 trust";
        let (out, n) = rewrite_trust_host_lines(hba, "scram-sha-256");
        assert_eq!(n, 3);
        assert_eq!(
            out,
            "# comment with trust\n\
             local   all   all   trust\n\
             host    all   all   127.0.0.1/32   scram-sha-256\n\
             host all all ::1 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff scram-sha-256 # old\n\
             hostssl all   all   10.0.0.0/8     md5\n\
             host    replication all 127.0.0.1/32 scram-sha-256"
        );
        let (same, n) = rewrite_trust_host_lines(&out, "scram-sha-256");
        assert_eq!((same.as_str(), n), (out.as_str(), 0));
        // "nottrust" is not trust.
        assert_eq!(rewrite_trust_host_lines("host a b c nottrust\n", "x").1, 0);
    }

    #[test]
    fn listen_beyond_loopback_adds_password_lines_once() {
        let d = tempfile::tempdir().unwrap();
        let hba = d.path().join("pg_hba.conf");
        fs::write(
            &hba,
            "local all all trust\nhost all all 127.0.0.1/32 trust\n",
        )
        .unwrap();
        let mut notes = Vec::new();
        secure_hba(d.path(), "scram-sha-256", true, None, &mut notes).unwrap();
        let text = fs::read_to_string(&hba).unwrap();
        assert!(
            text.contains("host all all 127.0.0.1/32 scram-sha-256\n"),
            "{text}"
        );
        assert!(
            text.contains("host all all 0.0.0.0/0 scram-sha-256\n"),
            "{text}"
        );
        assert!(text.contains("host all all ::/0 scram-sha-256\n"), "{text}");
        assert!(text.starts_with("local all all trust\n"), "{text}");
        assert_eq!(notes.len(), 2, "{notes:?}");
        secure_hba(d.path(), "scram-sha-256", true, None, &mut notes).unwrap();
        assert_eq!(fs::read_to_string(&hba).unwrap(), text, "nothing twice");
        assert_eq!(notes.len(), 2, "{notes:?}");
    }

    #[test]
    fn passwords_are_random_and_read_back() {
        let a = random_password().unwrap();
        let b = random_password().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, b);
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("pass");
        write_private(&f, &format!("*:5432:*:postgres:{a}\n"), None).unwrap();
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(read_password(&f).as_deref(), Some(a.as_str()));
        fs::write(&f, "h\\:x:1:*:u:p\\:w\\\\\n").unwrap();
        assert_eq!(read_password(&f).as_deref(), Some("p:w\\"));
        fs::write(&f, "only:three:fields\n").unwrap();
        assert_eq!(read_password(&f), None);
    }

    #[test]
    fn socket_paths_are_checked_against_sun_path() {
        assert!(socket_path_fits(Path::new(
            "/var/tmp/csdchar-pgABCDEF/pgdata/csdchar-socket"
        )));
        let long = format!("/{}", "x".repeat(92));
        assert!(!socket_path_fits(Path::new(&long)));
        assert!(socket_path_fits(Path::new(&long[..92])));
    }

    #[test]
    fn cgroup_mounts_and_names() {
        // A hybrid machine (this VM's): v2 holds no memory, v1 does.
        let hybrid = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                      32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
                      35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
                      41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        let m = cgroup_mounts(hybrid);
        assert_eq!(
            m,
            [
                MemoryHierarchy {
                    version: CgroupVersion::V1,
                    root: "/sys/fs/cgroup/memory".into()
                },
                MemoryHierarchy {
                    version: CgroupVersion::V2,
                    root: "/sys/fs/cgroup/unified".into()
                }
            ]
        );
        // Pure v2, optional fields, an escaped mount point.
        let v2 = "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n\
                  30 23 0:27 / /mnt/a\\040b rw master:1 - cgroup cgroup rw,cpu,memory\n";
        let m = cgroup_mounts(v2);
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[0].version, m[0].root.as_path()),
            (CgroupVersion::V2, Path::new("/sys/fs/cgroup"))
        );
        assert_eq!(m[1].root, Path::new("/mnt/a b"));
        assert_eq!(m[0].limit_file(), "memory.max");
        assert_eq!(m[1].limit_file(), "memory.limit_in_bytes");
        assert_eq!(unescape_mountinfo("a\\134b\\011"), "a\\b\t");
        assert_eq!(unescape_mountinfo("x\\9"), "x\\9");

        assert_eq!(cgroup_owner("csdchar-pg-123-0"), Some(123));
        for other in [
            "csdchar-pgio-123",
            "csdchar-pg-123",
            "csdchar-pg-x-1",
            "csdchar-pg-12-",
            "csdchar-pg-1-2-3",
            "csdchar-pgABCDEF",
        ] {
            assert_eq!(cgroup_owner(other), None, "{other}");
        }
        assert_eq!(human_bytes(256 << 20), "256 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(human_bytes(100), "100 B");
        assert!(matches!(
            MemoryHierarchy::for_limit(0),
            Err(ClusterError::MemoryLimit(_))
        ));
    }

    #[test]
    fn markers_and_liveness() {
        let me = std::process::id() as i32;
        let start = proc_start_time(me).unwrap();
        assert!(process_alive(me, Some(start)));
        assert!(
            !process_alive(me, Some(start + 1)),
            "a reused pid is not the same process"
        );
        assert!(!process_alive(0, None));
        let d = tempfile::tempdir().unwrap();
        fs::write(
            d.path().join(RUN_MARKER),
            format!("csdchar-run 1\npid {me} {start}\nuid 7\nwatchdog 12 34\n"),
        )
        .unwrap();
        assert_eq!(read_marker(d.path()), Some(((me, start), 7, (12, 34))));
        fs::write(d.path().join(RUN_MARKER), "csdchar-run 1\npid x\n").unwrap();
        assert_eq!(read_marker(d.path()), None);
    }
}
