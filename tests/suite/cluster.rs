//! Managed PostgreSQL clusters: created, configured, stopped and removed by
//! csdchar itself — also when the test panics or csdchar is killed; reachable
//! by their owner only; attached to when already running. Skips (with the
//! reason) when no PostgreSQL server binaries are installed.

use std::io::BufRead;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use csdchar_pgcluster::{ClusterSpec, ManagedCluster, PgBinaries};

use crate::common;
use common::psql;

fn have_postgres() -> bool {
    match PgBinaries::find(None) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

/// Every start sweeps /var/tmp for stale clusters: the test that fabricates
/// stale directories holds this while the others start theirs, so no other
/// start removes its fixtures first.
static SWEEP: Mutex<()> = Mutex::new(());

fn sweep_lock() -> MutexGuard<'static, ()> {
    SWEEP.lock().unwrap_or_else(|e| e.into_inner())
}

fn start(spec: &ClusterSpec) -> ManagedCluster {
    let _g = sweep_lock();
    ManagedCluster::start(spec).unwrap()
}

fn is_root() -> bool {
    // Safety: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether any postgres process runs on this data directory.
fn server_running(pgdata: &Path) -> bool {
    pgrep(&format!("postgres.*-D {}", pgdata.display()))
}

/// Whether a watchdog for this data directory runs.
fn watchdog_running(pgdata: &Path) -> bool {
    pgrep(&format!("csdchar-watchdog .*{}", pgdata.display()))
}

fn pgrep(pattern: &str) -> bool {
    Command::new("pgrep")
        .args(["-f", pattern])
        .output()
        .unwrap()
        .status
        .success()
}

fn wait_until(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    cond()
}

/// uid and gid of a user.
fn ids(user: &str) -> (u32, u32) {
    let id = |flag: &str| -> u32 {
        let out = Command::new("id").args([flag, user]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    (id("-u"), id("-g"))
}

/// A server command (pg_ctl, initdb) as the server's user: postgres when root.
fn as_server_user(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"])
            .arg(program)
            .current_dir("/");
        c
    } else {
        Command::new(program)
    }
}

/// Stops whatever server runs on `pgdata` and removes a socket directory it
/// recorded outside: cleanup for tests that keep servers running, also when
/// they fail.
struct ServerGuard(PathBuf);

impl Drop for ServerGuard {
    fn drop(&mut self) {
        let bin = PgBinaries::find(None).unwrap().dir;
        if self.0.join("postmaster.pid").exists() {
            let _ = as_server_user(&bin.join("pg_ctl"))
                .args(["stop", "-w", "-m", "immediate", "-D"])
                .arg(&self.0)
                .output();
        }
        if let Ok(s) = std::fs::read_to_string(self.0.join("csdchar-socket-dir")) {
            let _ = std::fs::remove_dir_all(s.trim());
        }
    }
}

/// Kills (SIGKILL) and reaps a child process on drop.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A test data directory's parent, outside the `csdchar-pg` namespace of
/// temporary clusters, traversable by the server's user.
fn test_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("csdchar-test-{name}"))
        .tempdir_in("/var/tmp")
        .unwrap()
}

/// `psql` as the given process, with `env` and `args`; returns (success, stderr).
fn psql_with(mut cmd: Command, env: &[(&str, &str)], args: &[&str]) -> (bool, String) {
    cmd.env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .args(["-w", "-X", "-At", "-d", "postgres"])
        .args(args)
        .current_dir("/");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// psql over TCP at 127.0.0.1.
fn tcp_psql(c: &ManagedCluster, nobody: bool) -> Command {
    let psql = PgBinaries::find(None).unwrap().dir.join("psql");
    let mut cmd = if nobody {
        let mut s = Command::new("setpriv");
        s.args(["--reuid", "nobody", "--regid", "nogroup", "--clear-groups"])
            .arg(psql);
        s
    } else {
        Command::new(psql)
    };
    cmd.args([
        "-h",
        "127.0.0.1",
        "-p",
        &c.port().to_string(),
        "-U",
        "postgres",
    ]);
    cmd
}

/// psql over the cluster's socket as user nobody.
fn socket_psql_as_nobody(c: &ManagedCluster) -> Command {
    let mut s = Command::new("setpriv");
    s.args(["--reuid", "nobody", "--regid", "nogroup", "--clear-groups"])
        .arg(PgBinaries::find(None).unwrap().dir.join("psql"))
        .arg("-h")
        .arg(c.socket_dir())
        .args(["-p", &c.port().to_string(), "-U", "postgres"]);
    s
}

fn tcp_refused(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
}

#[test]
fn ephemeral_cluster_with_settings_is_removed_on_drop() {
    if !have_postgres() {
        return;
    }
    let spec = ClusterSpec {
        settings: vec![
            "shared_buffers=32MB".into(),
            "work_mem = 8MB".into(),
            "autovacuum=off".into(),
        ],
        ..Default::default()
    };
    let c = start(&spec);
    assert!(c.created());
    assert!(!c.attached());
    assert_eq!(psql(&c, "select 1"), "1");
    assert_eq!(psql(&c, "show shared_buffers"), "32MB");
    assert_eq!(psql(&c, "show work_mem"), "8MB");
    assert_eq!(psql(&c, "show autovacuum"), "off");
    let sock = c.socket_dir().display().to_string();
    assert_eq!(
        c.conninfo("postgres"),
        format!(
            "host={sock} port={} user=postgres dbname=postgres",
            c.port()
        )
    );
    assert_eq!(
        c.connect_hint(),
        format!("psql -h {sock} -p {} -U postgres", c.port())
    );
    assert!(c.major_version() >= 10);
    let (pgdata, sock) = (c.pgdata().to_path_buf(), c.socket_dir().to_path_buf());
    assert!(
        sock.starts_with(&pgdata),
        "socket inside the data directory"
    );
    assert!(server_running(&pgdata));
    assert!(watchdog_running(&pgdata));
    let top = pgdata.parent().unwrap().to_path_buf();
    drop(c);
    assert!(!server_running(&pgdata), "server still running");
    assert!(!top.exists(), "temporary directory left behind");
    assert!(
        !watchdog_running(&pgdata),
        "the watchdog exits with the cluster"
    );
}

#[test]
fn existing_pgdata_is_reused_not_recreated() {
    if !have_postgres() {
        return;
    }
    let dir = test_dir("reuse");
    let pgdata = dir.path().join("pgdata");
    let spec = ClusterSpec {
        pgdata: Some(pgdata.clone()),
        ..Default::default()
    };
    {
        let c = start(&spec);
        assert!(c.created());
        psql(&c, "create table kept(x int); insert into kept values (42)");
    }
    assert!(!server_running(&pgdata));
    assert!(
        pgdata.join("PG_VERSION").exists(),
        "a user's data directory stays"
    );
    let c = start(&spec);
    assert!(!c.created());
    assert!(!c.attached());
    assert_eq!(psql(&c, "select x from kept"), "42");
    assert!(c.log().starts_with(&pgdata));
}

#[test]
fn a_panicking_test_still_stops_its_cluster() {
    if !have_postgres() {
        return;
    }
    let seen = std::sync::Mutex::new(None);
    let r = std::panic::catch_unwind(|| {
        let c = start(&ClusterSpec::default());
        *seen.lock().unwrap() = Some(c.pgdata().to_path_buf());
        panic!("test failure while the cluster runs");
    });
    assert!(r.is_err());
    let pgdata = seen.lock().unwrap().clone().unwrap();
    assert!(!server_running(&pgdata));
    assert!(!pgdata.exists());
}

#[test]
fn only_the_owner_can_connect() {
    if !have_postgres() {
        return;
    }
    let c = start(&ClusterSpec::default());
    assert_eq!(psql(&c, "select current_user"), "postgres");
    assert_eq!(c.listen(), None);
    assert_eq!(c.password_file(), None);
    assert_eq!(psql(&c, "show listen_addresses"), "");
    assert!(tcp_refused(c.port()), "no TCP listener without listen");
    let meta = std::fs::metadata(c.socket_dir()).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    // Safety: geteuid has no preconditions.
    let owner = if is_root() {
        ids("postgres").0
    } else {
        unsafe { libc::geteuid() }
    };
    assert_eq!(
        meta.uid(),
        owner,
        "the socket directory is the server user's"
    );
    if !is_root() {
        eprintln!("skipped the other-user part: needs root to switch users");
        return;
    }
    let (ok, err) = psql_with(socket_psql_as_nobody(&c), &[], &["-c", "select 1"]);
    assert!(!ok, "nobody connected over the socket");
    assert!(err.contains("Permission denied"), "{err}");
    let (ok, err) = psql_with(tcp_psql(&c, true), &[], &["-c", "select 1"]);
    assert!(!ok, "nobody connected over TCP");
    assert!(err.contains("refused"), "{err}");
    // The same command as the owner works: the failures are about the user.
    let mut owner = c.client("psql");
    owner.env_remove("PGUSER");
    assert!(psql_with(owner, &[], &["-c", "select 1"]).0);
}

#[test]
fn listen_opens_tcp_behind_the_password() {
    if !have_postgres() {
        return;
    }
    let c = start(&ClusterSpec {
        listen: Some("127.0.0.1".into()),
        ..Default::default()
    });
    assert_eq!(c.listen(), Some("127.0.0.1"));
    assert_eq!(psql(&c, "show listen_addresses"), "127.0.0.1");
    let file = c.password_file().expect("a password file").to_path_buf();
    assert!(file.starts_with(c.pgdata()));
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let text = std::fs::read_to_string(&file).unwrap();
    let pw = text.trim().rsplit(':').next().unwrap().to_string();
    assert!(pw.len() >= 32, "a long random password");
    assert_eq!(text.trim(), format!("*:{}:*:postgres:{pw}", c.port()));
    let passfile = file.to_str().unwrap();

    let no_file = [("PGPASSFILE", "/nonexistent")];
    let (ok, err) = psql_with(tcp_psql(&c, false), &no_file, &["-c", "select 1"]);
    assert!(!ok, "TCP without a password");
    assert!(err.contains("password"), "{err}");
    let (ok, err) = psql_with(
        tcp_psql(&c, false),
        &[("PGPASSWORD", "not-the-password")],
        &["-c", "select 1"],
    );
    assert!(!ok, "TCP with a wrong password");
    assert!(err.contains("password authentication failed"), "{err}");
    let (ok, err) = psql_with(
        tcp_psql(&c, false),
        &[("PGPASSFILE", passfile)],
        &["-c", "select 1"],
    );
    assert!(ok, "the password file works: {err}");
    // The socket needs no password.
    assert_eq!(psql(&c, "select 1"), "1");
    let hint = c.connect_hint();
    assert!(hint.contains(passfile), "{hint}");
    for shown in [
        hint,
        c.notes().join("\n"),
        std::fs::read_to_string(c.log()).unwrap(),
    ] {
        assert!(!shown.contains(&pw), "the password shows: {shown}");
    }
    if is_root() {
        // Another user can neither read the file nor log in without it.
        let (ok, _) = psql_with(
            tcp_psql(&c, true),
            &[("PGPASSFILE", passfile)],
            &["-c", "select 1"],
        );
        assert!(!ok, "nobody logged in over TCP");
        let (ok, _) = psql_with(socket_psql_as_nobody(&c), &[], &["-c", "select 1"]);
        assert!(!ok, "nobody connected over the socket");
    }
}

#[test]
fn an_older_trust_cluster_is_closed_and_secured_for_listen() {
    if !have_postgres() {
        return;
    }
    let bin = PgBinaries::find(None).unwrap().dir;
    let dir = test_dir("trust");
    if is_root() {
        let (u, g) = ids("postgres");
        std::os::unix::fs::chown(dir.path(), Some(u), Some(g)).unwrap();
    }
    let pgdata = dir.path().join("pgdata");
    let _guard = ServerGuard(pgdata.clone());
    // What csdchar used to create: trust for everyone, local and host.
    let out = as_server_user(&bin.join("initdb"))
        .arg("-D")
        .arg(&pgdata)
        .args(["-A", "trust", "-U", "postgres", "--no-sync"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hba = pgdata.join("pg_hba.conf");
    let trust_host_lines = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with("host") && l.trim_end().ends_with("trust"))
            .count()
    };
    assert!(trust_host_lines(&std::fs::read_to_string(&hba).unwrap()) > 0);
    let spec = ClusterSpec {
        pgdata: Some(pgdata.clone()),
        ..Default::default()
    };
    {
        let c = start(&spec);
        assert!(!c.created());
        assert!(tcp_refused(c.port()), "no TCP without listen");
        assert_eq!(c.password_file(), None);
        assert_eq!(psql(&c, "select 1"), "1");
    }
    let c = start(&ClusterSpec {
        listen: Some("127.0.0.1".into()),
        ..spec
    });
    let hba_text = std::fs::read_to_string(&hba).unwrap();
    assert_eq!(trust_host_lines(&hba_text), 0, "{hba_text}");
    assert!(hba_text.contains("scram-sha-256"), "{hba_text}");
    assert!(
        c.notes()
            .iter()
            .any(|n| n.contains("from trust to scram-sha-256")),
        "{:?}",
        c.notes()
    );
    let no_file = [("PGPASSFILE", "/nonexistent")];
    let (ok, _) = psql_with(tcp_psql(&c, false), &no_file, &["-c", "select 1"]);
    assert!(!ok, "TCP without a password");
    let passfile = c.password_file().expect("a new password file");
    let (ok, err) = psql_with(
        tcp_psql(&c, false),
        &[("PGPASSFILE", passfile.to_str().unwrap())],
        &["-c", "select 1"],
    );
    assert!(ok, "the new password works: {err}");
}

/// Set in the helper process of the SIGKILL test: start a temporary cluster,
/// say where, and wait to be killed.
const HOLDER: &str = "CSDCHAR_TEST_HOLD_CLUSTER";

/// Removes `dir` on drop (cleanup when an assertion fails).
fn scopeguard_remove(dir: PathBuf) -> impl Drop {
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    Remove(dir)
}

/// Start time (clock ticks) of a process, as csdchar's marker records it.
fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let tail = stat.rsplit_once(')').unwrap().1;
    tail.split_whitespace().nth(19).unwrap().parse().unwrap()
}

/// The pid of a process that has exited (and been reaped).
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

#[test]
fn a_running_server_is_attached_not_restarted() {
    if !have_postgres() {
        return;
    }
    let dir = test_dir("attach");
    // A short path (socket inside the data directory) and one too long for
    // sun_path (socket in a recorded directory in /tmp).
    for pgdata in [
        dir.path().join("pgdata"),
        dir.path().join("d".repeat(80)).join("pgdata"),
    ] {
        let _guard = ServerGuard(pgdata.clone());
        let spec = ClusterSpec {
            pgdata: Some(pgdata.clone()),
            keep_running: true,
            ..Default::default()
        };
        let first = start(&spec);
        assert!(!first.attached());
        let (port, sock) = (first.port(), first.socket_dir().to_path_buf());
        let long = pgdata.as_os_str().len() > 80;
        assert_eq!(sock.starts_with(&pgdata), !long, "{}", sock.display());
        if long {
            assert!(
                sock.to_str().unwrap().starts_with("/tmp/csdchar-pgsock"),
                "{}",
                sock.display()
            );
            let mode = std::fs::metadata(&sock).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        psql(&first, "create table t(x int); insert into t values (7)");
        drop(first);
        assert!(server_running(&pgdata), "kept running");
        assert!(
            !watchdog_running(&pgdata),
            "a kept server's watchdog is done"
        );

        let attached = start(&ClusterSpec {
            settings: vec!["work_mem=7MB".into()],
            keep_running: false,
            memory_limit: Some(64 << 20),
            ..spec.clone()
        });
        assert!(attached.attached());
        assert_eq!(
            (attached.port(), attached.socket_dir()),
            (port, sock.as_path())
        );
        assert_eq!(psql(&attached, "select x from t"), "7");
        assert_ne!(psql(&attached, "show work_mem"), "7MB");
        assert!(
            attached
                .notes()
                .iter()
                .any(|n| n.contains("--pg-set ignored")),
            "{:?}",
            attached.notes()
        );
        // A running server cannot be limited: a note, not an error (also as non-root).
        assert!(
            attached
                .notes()
                .iter()
                .any(|n| n.contains("--pg-memory-limit 64 MiB ignored")),
            "{:?}",
            attached.notes()
        );
        assert_eq!(
            (attached.memory_limit(), attached.memory_cgroup()),
            (None, None)
        );
        let hint = attached.connect_hint();
        assert!(hint.contains(&format!("-p {port}")), "{hint}");
        assert!(hint.contains(sock.to_str().unwrap()), "{hint}");
        drop(attached);
        assert!(
            server_running(&pgdata),
            "dropping an attached cluster never stops it"
        );

        let mut again = start(&spec);
        assert!(again.attached());
        assert_eq!(psql(&again, "select x from t"), "7");
        again.stop().unwrap();
        assert!(!server_running(&pgdata));
        drop(again);

        // Started anew (not kept): a socket directory left in /tmp goes.
        let fresh = start(&ClusterSpec {
            keep_running: false,
            ..spec
        });
        assert!(!fresh.attached());
        assert_eq!(psql(&fresh, "select x from t"), "7");
        if long {
            assert!(!sock.exists(), "the old socket directory is removed");
        }
        let fresh_sock = fresh.socket_dir().to_path_buf();
        drop(fresh);
        assert!(!server_running(&pgdata));
        if long {
            assert!(!fresh_sock.exists());
        }
    }
}

/// The memory hierarchy csdchar uses, as the test sees it: the v2 root when
/// it offers memory, else the v1 memory hierarchy.
fn memory_hierarchy() -> Option<PathBuf> {
    let v2 = Path::new("/sys/fs/cgroup");
    if std::fs::read_to_string(v2.join("cgroup.controllers"))
        .is_ok_and(|c| c.split_whitespace().any(|w| w == "memory"))
    {
        return Some(v2.to_path_buf());
    }
    let v1 = Path::new("/sys/fs/cgroup/memory");
    v1.join("memory.limit_in_bytes")
        .exists()
        .then(|| v1.to_path_buf())
}

/// Removes a cgroup directory on drop (cleanup when an assertion fails).
struct CgroupGuard(PathBuf);

impl Drop for CgroupGuard {
    fn drop(&mut self) {
        for _ in 0..50 {
            if !self.0.exists() || std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("warning: could not remove {}", self.0.display());
    }
}

/// Whether a `/proc/<pid>/cgroup` text puts the process's memory in the
/// top-level cgroup `name` (v1 `N:…memory…:/name`, v2 `0::/name`).
fn in_memory_cgroup(proc_cgroup: &str, name: &str) -> bool {
    proc_cgroup.lines().any(|l| {
        let mut f = l.splitn(3, ':');
        let (ctl, path) = (f.nth(1).unwrap_or("-"), f.next().unwrap_or(""));
        path == format!("/{name}") && (ctl.is_empty() || ctl.split(',').any(|c| c == "memory"))
    })
}

/// Tests that need the machine to themselves (scripts/test.sh runs `alone::` tests after
/// the others, one at a time): see each test's comment for why.
mod alone {
    use super::*;

    #[test]
    fn stale_temporary_directories_are_removed_live_ones_kept() {
        if !have_postgres() {
            return;
        }
        let _sweep = sweep_lock();
        // Safety: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        let fixture = |marker: Option<String>, server_pid: Option<u32>| {
            let d = tempfile::Builder::new()
                .prefix("csdchar-pg")
                .tempdir_in("/var/tmp")
                .unwrap();
            let pgdata = d.path().join("pgdata");
            std::fs::create_dir(&pgdata).unwrap();
            std::fs::write(pgdata.join("PG_VERSION"), "15\n").unwrap();
            if let Some(pid) = server_pid {
                std::fs::write(
                    pgdata.join("postmaster.pid"),
                    format!("{pid}\n{}\n0\n5432\n\n\n0\nready\n", pgdata.display()),
                )
                .unwrap();
            }
            if let Some(m) = marker {
                std::fs::write(d.path().join("csdchar-run"), m).unwrap();
            }
            d
        };
        let marker = |pid: u32, start: u64, uid: u32| {
            format!(
                "csdchar-run 1\npid {pid} {start}\nuid {uid}\nwatchdog {} 1\n",
                dead_pid()
            )
        };
        let mut live_server = ChildGuard(Command::new("sleep").arg("600").spawn().unwrap());
        let dead = fixture(Some(marker(dead_pid(), 1, me)), Some(dead_pid()));
        let running = fixture(Some(marker(dead_pid(), 1, me)), Some(live_server.0.id()));
        let my_pid = std::process::id();
        let live_run = fixture(Some(marker(my_pid, start_time(my_pid), me)), None);
        let others = fixture(Some(marker(dead_pid(), 1, me ^ 1)), None);
        let reused = fixture(Some(marker(my_pid, start_time(my_pid) + 1, me)), None);
        let unmarked = tempfile::Builder::new()
            .prefix("csdchar-pgdata-not-ours")
            .tempdir_in("/var/tmp")
            .unwrap();
        std::fs::write(unmarked.path().join("file"), "x").unwrap();

        let c = ManagedCluster::start(&ClusterSpec::default()).unwrap();
        let notes = c.notes().join("\n");
        let noted = |d: &tempfile::TempDir| notes.contains(&d.path().display().to_string());
        assert!(!dead.path().exists(), "a dead run's directory is removed");
        assert!(noted(&dead), "{notes}");
        assert!(!reused.path().exists(), "a reused pid is not a live run");
        assert!(noted(&reused), "{notes}");
        assert!(running.path().exists(), "a live server's directory stays");
        assert!(noted(&running) && notes.contains("still runs"), "{notes}");
        for kept in [&live_run, &others, &unmarked] {
            assert!(kept.path().exists());
            assert!(!noted(kept), "{notes}");
        }
        assert!(!noted(&tempfile::TempDir::new().unwrap()));
        drop(c);
        let _ = live_server.0.kill();
    }

    #[test]
    fn a_killed_csdchar_leaves_no_server_or_directory() {
        if std::env::var_os(HOLDER).is_some() {
            // The helper process: csdchar's part, killed by the test below. As
            // root, in a memory cgroup: the watchdog cannot remove that, the next
            // start's sweep must.
            let c = ManagedCluster::start(&ClusterSpec {
                memory_limit: (is_root() && memory_hierarchy().is_some()).then_some(256 << 20),
                ..Default::default()
            })
            .unwrap();
            println!(
                "PGDATA={} CGROUP={}",
                c.pgdata().display(),
                c.memory_cgroup()
                    .map_or(String::new(), |p| p.display().to_string())
            );
            std::thread::sleep(Duration::from_secs(600));
            panic!("the helper was not killed");
        }
        if !have_postgres() {
            return;
        }
        let sweep = sweep_lock();
        let mut helper = ChildGuard(
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "cluster::alone::a_killed_csdchar_leaves_no_server_or_directory",
                    "--exact",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(HOLDER, "1")
                .stdout(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let out = helper.0.stdout.take().unwrap();
        let (pgdata, cgroup) = std::io::BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            // The harness may print its "test … " on the same line.
            .find_map(|l| {
                let (p, g) = l.split_once("PGDATA=")?.1.split_once(" CGROUP=")?;
                Some((PathBuf::from(p), (!g.is_empty()).then(|| PathBuf::from(g))))
            })
            .expect("the helper started a cluster");
        drop(sweep);
        let _cgroup = cgroup.clone().map(CgroupGuard);
        assert_eq!(cgroup.is_some(), is_root() && memory_hierarchy().is_some());
        let top = pgdata.parent().unwrap().to_path_buf();
        // Cleanup if the watchdog fails: stop the server, then remove the directory.
        let _top = scopeguard_remove(top.clone());
        let _server = ServerGuard(pgdata.clone());
        assert!(
            top.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("csdchar-pg")
        );
        assert!(server_running(&pgdata));
        assert!(watchdog_running(&pgdata));
        helper.0.kill().unwrap(); // SIGKILL: no drop, no unwinding
        helper.0.wait().unwrap();
        assert!(
            wait_until(30, || !server_running(&pgdata) && !top.exists()),
            "server running: {}, directory there: {}",
            server_running(&pgdata),
            top.exists()
        );
        assert!(wait_until(10, || !watchdog_running(&pgdata)));
        // The watchdog (the server's user) cannot remove root's cgroup: the next
        // start's sweep does. Tests run in parallel, so another test's start may
        // already have swept it (the sweep itself is also tested in
        // memory_limit_runs_the_server_in_its_own_cgroup).
        if let Some(cg) = cgroup {
            let _sweep = sweep_lock();
            if cg.exists() {
                let next = ManagedCluster::start(&ClusterSpec::default()).unwrap();
                assert!(!cg.exists(), "the next start removes {}", cg.display());
                let notes = next.notes().join("\n");
                assert!(notes.contains(&cg.display().to_string()), "{notes}");
            } else {
                eprintln!("{} was swept by a concurrent start", cg.display());
            }
        }
    }

    #[test]
    fn memory_limit_runs_the_server_in_its_own_cgroup() {
        if !have_postgres() {
            return;
        }
        let spec = ClusterSpec {
            memory_limit: Some(256 << 20),
            ..Default::default()
        };
        // Also keeps other tests' starts from sweeping the fixtures below.
        let sweep = sweep_lock();
        if !is_root() {
            let e = ManagedCluster::start(&spec).unwrap_err().to_string();
            assert!(
                e.contains("--pg-memory-limit") && e.contains("needs root"),
                "{e}"
            );
            eprintln!("skipped the cgroup checks: not root; start says: {e}");
            return;
        }
        let Some(top) = memory_hierarchy() else {
            let e = ManagedCluster::start(&spec).unwrap_err().to_string();
            assert!(e.contains("no memory cgroup controller"), "{e}");
            eprintln!("skipped the cgroup checks: no memory controller; start says: {e}");
            return;
        };
        // An empty cgroup of a dead run is swept; one of a live run is kept.
        let stale = top.join(format!("csdchar-pg-{}-0", dead_pid()));
        let live = top.join(format!("csdchar-pg-{}-999999", std::process::id()));
        let _fixtures = (CgroupGuard(stale.clone()), CgroupGuard(live.clone()));
        std::fs::create_dir(&stale).unwrap();
        std::fs::create_dir(&live).unwrap();

        let c = ManagedCluster::start(&spec).unwrap();
        drop(sweep);
        let cg = c.memory_cgroup().expect("a memory cgroup").to_path_buf();
        let _cleanup = CgroupGuard(cg.clone());
        let notes = c.notes().join("\n");
        assert!(!stale.exists(), "a dead run's cgroup is removed");
        assert!(notes.contains(&stale.display().to_string()), "{notes}");
        assert!(live.exists(), "a live run's cgroup stays");
        assert!(!notes.contains(&live.display().to_string()), "{notes}");

        assert_eq!(cg.parent(), Some(top.as_path()));
        let name = cg.file_name().unwrap().to_str().unwrap().to_string();
        assert!(
            name.starts_with(&format!("csdchar-pg-{}-", std::process::id())),
            "{name}"
        );
        assert_eq!(c.memory_limit(), Some(256 << 20));
        let limit_file = ["memory.max", "memory.limit_in_bytes"]
            .map(|f| cg.join(f))
            .into_iter()
            .find(|f| f.exists())
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&limit_file).unwrap().trim(),
            "268435456"
        );
        let version = if limit_file.ends_with("memory.max") {
            "v2"
        } else {
            "v1"
        };
        assert!(
            notes.contains(&format!(
                "memory cgroup {version}: the server runs in {}",
                cg.display()
            )),
            "{notes}"
        );

        // The postmaster and all its children (checkpointer, walwriter, …).
        let pm: i32 = std::fs::read_to_string(c.pgdata().join("postmaster.pid"))
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let children = std::fs::read_to_string(format!("/proc/{pm}/task/{pm}/children")).unwrap();
        let children: Vec<i32> = children
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        assert!(!children.is_empty());
        for pid in std::iter::once(pm).chain(children) {
            let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
            // A child that exited meanwhile has no file left.
            if !text.is_empty() {
                assert!(in_memory_cgroup(&text, &name), "pid {pid}: {text}");
            }
        }
        let procs = std::fs::read_to_string(cg.join("cgroup.procs")).unwrap();
        assert!(procs.lines().any(|p| p == pm.to_string()), "{procs}");
        // A backend reads its own /proc/self/cgroup.
        let out = psql(
            &c,
            "select pg_backend_pid() || ' ' || pg_read_file('/proc/self/cgroup')",
        );
        let (backend, text) = out.split_once(' ').unwrap();
        assert_ne!(backend, pm.to_string());
        assert!(in_memory_cgroup(text, &name), "backend {backend}: {text}");

        drop(c);
        assert!(!cg.exists(), "cgroup {} left behind", cg.display());
    }

    #[test]
    fn start_failure_names_the_log() {
        if !have_postgres() {
            return;
        }
        let spec = ClusterSpec {
            settings: vec!["no_such_setting_xyz=1".into()],
            ..Default::default()
        };
        let err = {
            let _g = sweep_lock();
            ManagedCluster::start(&spec).unwrap_err().to_string()
        };
        assert!(err.contains("server log:"), "{err}");
        assert!(err.contains("no_such_setting_xyz"), "{err}");
    }
}

/// Issue 38 row 13: a start that fails after initdb (here the server
/// refuses a setting) leaves nothing of the cluster it made: a data
/// directory that did not exist is removed, keys and all; an empty one it
/// was given is emptied and gets its owner and mode back. A server is not
/// left running.
#[test]
fn a_start_that_fails_removes_the_cluster_it_made() {
    if !have_postgres() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-failstart")
        .tempdir_in("/var/tmp")
        .unwrap();
    let new = dir.path().join("new");
    let ran = {
        let _g = sweep_lock();
        common::csdchar(&[
            "db",
            "prepare",
            "--pgdata",
            new.to_str().unwrap(),
            "--listen",
            "127.0.0.1",
            "--tls",
            "--pg-set",
            "shared_buffers=nonsense",
        ])
    };
    assert_eq!(ran.outcome.exit_code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("invalid value for parameter \"shared_buffers\""),
        "the server's words: {}",
        ran.stderr
    );
    assert!(
        !new.exists(),
        "the cluster it made (with its TLS keys) is left"
    );
    assert!(!server_running(&new));

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o751)).unwrap();
    let before = std::fs::metadata(&empty).unwrap();
    let started = {
        let _g = sweep_lock();
        ManagedCluster::start(&ClusterSpec {
            pgdata: Some(empty.clone()),
            settings: vec!["shared_buffers=nonsense".into()],
            ..ClusterSpec::default()
        })
    };
    assert!(started.is_err());
    drop(started);
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0, "emptied");
    let after = std::fs::metadata(&empty).unwrap();
    assert_eq!(
        (after.uid(), after.gid(), after.mode() & 0o7777),
        (before.uid(), before.gid(), 0o751),
        "owner and mode put back"
    );
}
