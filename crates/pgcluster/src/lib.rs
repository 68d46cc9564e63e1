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
//!
//! # Files
//!
//! This file holds [`ManagedCluster`] (its fields and accessors), its spec
//! and errors; by concern: `start` (initdb and start), `stop` (stop and
//! drop), `binaries` (finding the server), `access` (settings, pg_hba,
//! socket, password, handing directories to the server's user), `attach`
//! (a server that already runs), `process` (watchdog, postmaster, cleanup
//! after a dead one), `stale` (temporary clusters of dead runs), `cgroup`
//! (the memory limit) and `command` (running the server's commands).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cgroup::{MemCgroup, oom_kills};
use crate::command::{conninfo_value, shell_word};
use crate::process::Watchdog;
use crate::spec::RunAs;

mod access;
mod attach;
mod binaries;
mod cgroup;
mod command;
mod process;
mod spec;
mod stale;
mod start;
mod stop;
mod tls;

pub use spec::{ClusterError, ClusterSpec, TEMP_ROOT};
pub use tls::ROOT_CERT;

pub use access::{check_listen, check_pgdata_reachable};
pub use binaries::PgBinaries;
pub use cgroup::MemoryWatch;
pub use process::PostmasterWatch;

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
    /// What this start made for a new cluster in a given data directory,
    /// removed by drop unless the start completed (see [`MadeForStart`]).
    made: Option<MadeForStart>,
}

/// What a start that creates a cluster in a given data directory made
/// there: a start that fails (pg_ctl cannot start the server, a setting is
/// refused, a step after initdb fails) leaves nothing of it behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MadeForStart {
    /// The directory did not exist: it goes.
    Directory,
    /// The directory existed, empty: what is in it goes, and its owner
    /// and mode (handed to the server's user) are put back.
    Contents {
        /// Its owner.
        uid: u32,
        /// Its group.
        gid: u32,
        /// Its permission bits.
        mode: u32,
    },
}

impl ManagedCluster {
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

    /// A watch on the server's memory cgroup (see [`MemoryWatch`]), counting
    /// from now; None without a memory limit.
    pub fn memory_watch(&self) -> Option<MemoryWatch> {
        let cg = self.memory_cgroup.as_ref()?;
        Some(MemoryWatch {
            cgroup: cg.path.clone(),
            limit: cg.limit,
            kills_before: oom_kills(&cg.path).unwrap_or(0),
        })
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
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::access::{
        is_loopback, random_password, read_password, rewrite_trust_host_lines, secure_hba,
        socket_path_fits, validate_listen, write_private,
    };
    use crate::cgroup::{
        CgroupVersion, MemoryHierarchy, cgroup_mounts, cgroup_owner, oom_kill_count,
        unescape_mountinfo,
    };
    use crate::command::shell_quote;
    use crate::process::{proc_start_time, process_alive};
    use crate::spec::{RUN_MARKER, human_bytes};
    use crate::stale::read_marker;

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
    fn oom_kills_are_read_from_either_cgroup_version() {
        // v2 memory.events, v1 memory.oom_control (Linux 4.13 on).
        let v2 = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n";
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(oom_kill_count(v2), Some(2));
        assert_eq!(oom_kill_count(v1), Some(3));
        assert_eq!(oom_kill_count("oom_kill_disable 0\nunder_oom 0\n"), None);
        let gone = MemoryWatch {
            cgroup: PathBuf::from("/nonexistent/csdchar-pg-1-0"),
            limit: 64 << 20,
            kills_before: 0,
        };
        assert_eq!(gone.kills(), 0);
        assert_eq!(gone.explain(), None);
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
