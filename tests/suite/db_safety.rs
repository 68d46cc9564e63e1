//! The database side as a careless or hostile user would try it: tables of
//! the same name in other schemas, Ctrl-C during a load, `csdchar db` with no
//! step, connection errors that must say what the server said.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use csdchar_pgcluster::{ClusterSpec, ManagedCluster};

use crate::common;
use common::psql;

// The tests whose runs take a different path on the io_uring client driver run again on it
// (the others load, check or clean up, where the driver plays no part).
crate::on_uring_too!("a_killed_postmaster_ends_the_run_at_once");

fn db(args: &[&str]) -> common::Ran {
    let mut a = vec!["db"];
    a.extend_from_slice(args);
    common::csdchar(&a)
}

#[test]
fn cleanup_and_prepare_touch_only_the_workload_schema() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let url = cluster.conninfo("postgres");
    // The user's own table of the same name, found first on the search path.
    psql(
        &cluster,
        "CREATE SCHEMA other; CREATE TABLE other.sbtest1 (id int); INSERT INTO other.sbtest1 VALUES (42); \
         ALTER DATABASE postgres SET search_path = other, public",
    );
    let common_args = ["--url", url.as_str(), "--tables", "1"];
    let with = |step: &str, extra: &[&str]| {
        let mut a = vec![step];
        a.extend_from_slice(&common_args);
        a.extend_from_slice(extra);
        db(&a)
    };
    let ran = with("prepare", &["--table-size", "100"]);
    assert_eq!(
        ran.outcome.exit_code, 0,
        "other.sbtest1 is not ours: {}",
        ran.stderr
    );
    assert_eq!(psql(&cluster, "SELECT count(*) FROM public.sbtest1"), "100");
    let ran = with("run", &["--time", "1s", "--table-size", "100"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert_eq!(psql(&cluster, "SELECT id FROM other.sbtest1"), "42");
    let ran = with("cleanup", &[]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert_eq!(
        ran.stdout.trim(),
        "dropped 1 table(s) from schema public: sbtest1"
    );
    assert_eq!(
        psql(&cluster, "SELECT id FROM other.sbtest1"),
        "42",
        "the user's table survives"
    );
    let ran = with("cleanup", &[]);
    assert!(ran.stdout.starts_with("dropped 0 tables"), "{}", ran.stdout);
    assert_eq!(psql(&cluster, "SELECT id FROM other.sbtest1"), "42");

    // --schema: created when missing, used by every step, dropped with the
    // tables because csdchar created it; a schema csdchar did not create stays.
    let ran = with("prepare", &["--schema", "bench", "--table-size", "50"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert_eq!(psql(&cluster, "SELECT count(*) FROM bench.sbtest1"), "50");
    let ran = with(
        "run",
        &[
            "--schema",
            "bench",
            "--time",
            "1s",
            "--output-format",
            "json",
        ],
    );
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert!(v["steps"][0]["transactions"].as_u64().unwrap() > 0);
    let ran = with("prepare", &["--schema", "other", "--table-size", "50"]);
    assert_eq!(ran.outcome.exit_code, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains("in schema other"), "{}", ran.stderr);
    let ran = with("cleanup", &["--schema", "bench"]);
    assert_eq!(
        ran.stdout.trim(),
        "dropped 1 table(s) from schema bench: sbtest1"
    );
    assert_eq!(
        psql(
            &cluster,
            "SELECT count(*) FROM pg_namespace WHERE nspname IN ('bench', 'other')"
        ),
        "1",
        "bench (csdchar's) is gone, other (the user's) stays"
    );
    psql(&cluster, "ALTER DATABASE postgres RESET search_path");
}

#[test]
fn db_without_a_step_runs_and_the_loaded_fillfactor_is_recorded() {
    if !common::postgres_or_skip() {
        return;
    }
    // The card's own command: a temporary cluster, prepared and run.
    let ran = db(&[
        "--fillfactor",
        "70",
        "--table-size",
        "500",
        "--time",
        "1s",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(v["server"], "ephemeral");
    assert_eq!(v["spec"]["fillfactor"], 70);
    common::assert_matches_schema(&v, "db");

    // run records what prepare loaded, not what run was told.
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let url = cluster.conninfo("postgres");
    let ran = db(&[
        "prepare",
        "--url",
        &url,
        "--fillfactor",
        "60",
        "--table-size",
        "300",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    for (extra, note) in [(&[][..], false), (&["--fillfactor", "80"][..], true)] {
        let mut a = vec![
            "run",
            "--url",
            &url,
            "--table-size",
            "300",
            "--time",
            "1s",
            "--output-format",
            "json",
        ];
        a.extend_from_slice(extra);
        let ran = db(&a);
        assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
        let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
        assert_eq!(v["spec"]["fillfactor"], 60, "{extra:?}");
        assert_eq!(
            ran.stderr.contains("--fillfactor 80 ignored"),
            note,
            "{}",
            ran.stderr
        );
        assert!(!ran.stderr.contains("--scale"), "{}", ran.stderr);
    }
}

/// The newest `/var/tmp/csdchar-pg*/pgdata` that was not in `before`, once it has one.
fn new_temporary_pgdata(before: &[std::path::PathBuf]) -> std::path::PathBuf {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = temporary_pgdatas()
            .into_iter()
            .find(|d| !before.contains(d) && d.join("postmaster.pid").exists());
        if let Some(d) = found {
            return d;
        }
        assert!(Instant::now() < deadline, "no temporary cluster appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn temporary_pgdatas() -> Vec<std::path::PathBuf> {
    std::fs::read_dir("/var/tmp")
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("csdchar-pg"))
                .map(|e| e.path().join("pgdata"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn ctrl_c_during_a_load_stops_promptly_and_stops_the_server() {
    if !common::postgres_or_skip() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-loadint")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pgdata");
    let p = pgdata.to_str().unwrap().to_string();
    // prepare on --pgdata, and the load `db run` does on a temporary cluster.
    for step in ["prepare", "run"] {
        let flag = Arc::new(AtomicBool::new(false));
        let f2 = Arc::clone(&flag);
        let raised = Arc::new(std::sync::Mutex::new(None));
        let r2 = Arc::clone(&raised);
        let (known, watched) = (temporary_pgdatas(), pgdata.clone());
        let t = std::thread::spawn(move || {
            let ready = if step == "prepare" {
                watched
            } else {
                new_temporary_pgdata(&known)
            };
            common::after_server_ready(&ready, Duration::from_millis(1500));
            *r2.lock().unwrap() = Some(Instant::now());
            f2.store(true, Ordering::Relaxed);
        });
        // Two tables of 3 million rows: tens of seconds of loading.
        let mut args = vec![
            "db",
            step,
            "--tables",
            "2",
            "--table-size",
            "3000000",
            "--threads",
            "2",
        ];
        if step == "prepare" {
            args.extend(["--pgdata", p.as_str()]);
        }
        let ran = common::csdchar_with_interrupt(&args, flag);
        let ended = Instant::now();
        t.join().unwrap();
        assert_eq!(ran.outcome.exit_code, 130, "{step}: {}", ran.stderr);
        assert!(
            ran.stderr.contains("interrupted: the load stopped after"),
            "{step}: {}",
            ran.stderr
        );
        let raised = raised.lock().unwrap().expect("the interrupt was raised");
        let took = ended.duration_since(raised);
        assert!(
            took < Duration::from_secs(10),
            "{step}: stopped {took:?} after Ctrl-C"
        );
        if step == "run" {
            // Issue 38 row 9: the advice fits the cluster: a temporary one is gone.
            assert!(
                ran.stderr
                    .contains("the temporary cluster goes with this command")
                    && !ran.stderr.contains("--force"),
                "{}",
                ran.stderr
            );
            continue;
        }
        // The server csdchar started is stopped.
        assert!(
            !pgdata.join("postmaster.pid").exists(),
            "the managed server still runs"
        );
        // Every table is complete or absent: each loads in one transaction.
        let cluster = ManagedCluster::start(&ClusterSpec {
            pgdata: Some(pgdata.clone()),
            ..ClusterSpec::default()
        })
        .unwrap();
        for t in psql(
            &cluster,
            "SELECT relname FROM pg_class WHERE relname LIKE 'sbtest%' AND relkind = 'r'",
        )
        .lines()
        {
            assert_eq!(
                psql(&cluster, &format!("SELECT count(*) FROM {t}")),
                "3000000",
                "{t} is half-loaded"
            );
        }
    }
}

#[test]
fn connection_errors_carry_the_servers_words() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let base = cluster.conninfo("postgres");
    for (extra, said) in [
        (" dbname=nope", "database \"nope\" does not exist"),
        (" user=ghost", "role \"ghost\" does not exist"),
    ] {
        let url = format!("{base}{extra}");
        let ran = db(&["cleanup", "--url", &url]);
        assert_eq!(ran.outcome.exit_code, 1, "{}", ran.stderr);
        assert!(ran.stderr.contains(said), "{extra}: {}", ran.stderr);
        assert_eq!(ran.stderr.trim_end().lines().count(), 1, "{}", ran.stderr);
    }
    // Port 1 on loopback: nothing listens.
    let ran = db(&[
        "cleanup",
        "--url",
        "host=127.0.0.1 port=1 user=postgres dbname=postgres",
    ]);
    assert_eq!(ran.outcome.exit_code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr.to_lowercase().contains("connection refused"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_kept_running_cluster_is_attached_by_the_next_step_and_says_how_to_connect() {
    if !common::postgres_or_skip() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-keep")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pgdata");
    let p = pgdata.to_str().unwrap();
    let ran = db(&[
        "prepare",
        "--pgdata",
        p,
        "--table-size",
        "100",
        "--keep-running",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    // Stop the server at the end whatever happens.
    struct Stop(std::path::PathBuf);
    impl Drop for Stop {
        fn drop(&mut self) {
            if let Ok(mut c) = ManagedCluster::start(&ClusterSpec {
                pgdata: Some(self.0.clone()),
                ..ClusterSpec::default()
            }) {
                let _ = c.stop();
            }
        }
    }
    let _stop = Stop(pgdata.clone());
    assert!(
        ran.stderr.contains("left running") && ran.stderr.contains("psql -h "),
        "the way in is printed: {}",
        ran.stderr
    );
    let port = std::fs::read_to_string(pgdata.join("postmaster.pid"))
        .unwrap()
        .lines()
        .nth(3)
        .unwrap()
        .to_string();
    assert!(ran.stderr.contains(&port), "{}", ran.stderr);
    // Issue 30 row 8: a memory limit asked of a server that already runs is
    // not applied, so the result must not claim it.
    let result = dir.path().join("limited.json");
    let ran = db(&[
        "run",
        "--pgdata",
        p,
        "--time",
        "1s",
        "--table-size",
        "100",
        "--pg-memory-limit",
        "64m",
        "--output-format",
        "json",
        "--output",
        result.to_str().unwrap(),
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(ran.stderr.contains("ignored"), "{}", ran.stderr);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
    let cache = &v["spec"]["cache_control"];
    assert!(
        !cache.as_str().unwrap_or("").contains("memory limit"),
        "the result claims a limit that was not in force: {cache}"
    );

    for step in [
        &["run", "--time", "1s", "--table-size", "100"][..],
        &["cleanup"][..],
    ] {
        let mut a = step.to_vec();
        a.extend(["--pgdata", p]);
        let ran = db(&a);
        assert_eq!(ran.outcome.exit_code, 0, "{step:?}: {}", ran.stderr);
        assert!(ran.stderr.contains("attached"), "{step:?}: {}", ran.stderr);
        assert!(
            pgdata.join("postmaster.pid").exists(),
            "{step:?} left the server it attached to running"
        );
    }

    // Issue 30 rows 1 and 4 on a server found by URL: the room check asks
    // the server for its data directory, then refuses before loading.
    let sock = std::fs::read_to_string(pgdata.join("postmaster.pid"))
        .unwrap()
        .lines()
        .nth(4)
        .unwrap()
        .to_string();
    let url = format!("host={sock} port={port} user=postgres dbname=postgres");
    let ran = db(&[
        "prepare",
        "--url",
        &url,
        "--workload",
        "tpcc",
        "--warehouses",
        "100000",
    ]);
    assert_eq!(ran.outcome.exit_code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("--warehouses") && ran.stderr.contains("free"),
        "{}",
        ran.stderr
    );
    let attached = ManagedCluster::start(&ClusterSpec {
        pgdata: Some(pgdata.clone()),
        ..ClusterSpec::default()
    })
    .unwrap();
    let tables = psql(
        &attached,
        "select count(*) from pg_tables where tablename like 'bmsql%'",
    );
    drop(attached);
    assert_eq!(tables.trim(), "0", "a refused load created tables");
}

/// The live processes working in `pgdata` (every server process does), with
/// their command lines (a server process's title).
fn processes_in(pgdata: &std::path::Path) -> Vec<(i32, String)> {
    let dir = std::fs::canonicalize(pgdata).unwrap_or_else(|_| pgdata.to_path_buf());
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == dir) {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            found.push((pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")));
        }
    }
    found
}

/// `/proc/<pid>/stat`'s state and parent, while the process exists.
fn state_and_parent(pid: i32) -> Option<(String, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, tail) = stat.rsplit_once(')')?;
    let mut w = tail.split_whitespace();
    Some((w.next()?.to_string(), w.next()?.parse().ok()?))
}

/// What the test saw of the server it killed.
struct Killed {
    pgdata: std::path::PathBuf,
    postmaster: i32,
    /// The SysV shared memory segment's id (`postmaster.pid` line 7).
    shmid: Option<i32>,
    /// Every process of the server just before the kill.
    processes: Vec<i32>,
    at: Instant,
}

/// Waits until the server titled `cluster_name` runs the workload (two
/// backends seen executing statements: the run's clients), lets it run
/// `then` more and kills its postmaster with SIGKILL, as the OOM killer or an
/// operator would.
fn kill_postmaster_mid_run(cluster_name: &str, then: Duration) -> Killed {
    let title = format!("postgres: {cluster_name}: ");
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut busy = std::collections::BTreeMap::new();
    let pgdata = loop {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).into_owned();
            let executing = [" SELECT", " UPDATE", " INSERT", " DELETE"]
                .iter()
                .any(|c| cmdline.contains(c));
            if cmdline.starts_with(&title)
                && executing
                && let Ok(cwd) = std::fs::read_link(format!("/proc/{pid}/cwd"))
            {
                busy.insert(pid, cwd);
            }
        }
        if busy.len() >= 2 {
            break busy.into_values().next().unwrap();
        }
        assert!(Instant::now() < deadline, "no run on {cluster_name} seen");
        std::thread::sleep(Duration::from_millis(5));
    };
    std::thread::sleep(then);
    let pid_file = std::fs::read_to_string(pgdata.join("postmaster.pid")).unwrap();
    let lines: Vec<&str> = pid_file.lines().collect();
    let postmaster: i32 = lines[0].trim().parse().unwrap();
    let shmid = lines
        .get(6)
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok());
    let processes = processes_in(&pgdata).into_iter().map(|p| p.0).collect();
    // Safety: SIGKILL to the postmaster of this test's own server.
    assert_eq!(unsafe { libc::kill(postmaster, libc::SIGKILL) }, 0);
    Killed {
        pgdata,
        postmaster,
        shmid,
        processes,
        at: Instant::now(),
    }
}

/// The run that lost its server ended within seconds with exit 1, saying
/// which server, with its partial result in `out`; nothing of the server is
/// left: no process, no zombie of ours, no `postmaster.pid`, socket or
/// shared memory.
fn assert_ended_cleanly(
    case: &str,
    ran: &common::Ran,
    ended: Instant,
    k: &Killed,
    out: &std::path::Path,
) {
    let took = ended.duration_since(k.at);
    eprintln!("{case}: ended {took:?} after the postmaster was killed");
    assert!(
        took < Duration::from_secs(10),
        "{case}: ended {took:?} after the postmaster was killed"
    );
    assert_eq!(ran.outcome.exit_code, 1, "{case}: {}", ran.stderr);
    let named = format!("(postmaster pid {}) has exited", k.postmaster);
    assert!(
        ran.stderr.contains(&named) && ran.stderr.contains("partial result saved"),
        "{case}: {}",
        ran.stderr
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out).unwrap()).unwrap();
    assert_eq!(v["interrupted"], true, "{case}");
    assert!(
        v["error"].as_str().is_some_and(|e| e.contains(&named)),
        "{case}: {}",
        v["error"]
    );
    assert_eq!(v["steps"].as_array().map(Vec::len), Some(1), "{case}");
    assert!(
        v["steps"][0]["transactions"].as_u64().unwrap() > 0,
        "{case}"
    );

    let me = std::process::id() as i32;
    for &pid in &k.processes {
        if let Some((state, ppid)) = state_and_parent(pid) {
            assert!(
                !(state == "Z" && ppid == me),
                "{case}: server process {pid} is left as a zombie of ours"
            );
        }
    }
    let left = processes_in(&k.pgdata);
    assert!(left.is_empty(), "{case}: server processes left: {left:?}");
    if let Some(id) = k.shmid {
        // Safety: shmid_ds is plain data; IPC_STAT fills it or fails.
        let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
        // Safety: IPC_STAT writes into `ds` only.
        let exists = unsafe { libc::shmctl(id, libc::IPC_STAT, &mut ds) } == 0;
        assert!(
            !(exists && ds.shm_cpid == k.postmaster),
            "{case}: the server's shared memory segment {id} is left"
        );
    }
}

/// A managed server whose postmaster is killed (`kill -9`) mid-run: the run
/// ends within seconds (also with --reconnect: that server does not come
/// back), exit 1, partial result saved; the dead server's processes are
/// reaped, not waited for, and its leftovers removed as a shutdown would.
#[test]
fn a_killed_postmaster_ends_the_run_at_once_and_leaves_nothing_behind() {
    if !common::postgres_or_skip() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-pmkill")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pgdata");
    let p = pgdata.to_str().unwrap().to_string();
    for load in [
        &["--workload", "tpcc", "--warehouses", "1"][..],
        &["--workload", "oltp-read-write", "--table-size", "1000"][..],
    ] {
        let mut args = vec!["prepare", "--pgdata", &p];
        args.extend_from_slice(load);
        let ran = db(&args);
        assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    }
    let cases = [
        ("tpcc", false),
        ("tpcc", true),
        ("oltp-read-write", false),
        ("oltp-read-write", true),
    ];
    for (i, (workload, reconnect)) in cases.into_iter().enumerate() {
        let case = format!("{workload} reconnect={reconnect}");
        let name = format!("csdchar-pmkill-{}-{i}", std::process::id());
        let setting = format!("cluster_name={name}");
        let out = dir.path().join(format!("partial-{i}.json"));
        let mut args = vec![
            "run",
            "--pgdata",
            &p,
            "--pg-set",
            &setting,
            "--workload",
            workload,
            "--threads",
            "2",
            "--time",
            "60s",
            "--output-format",
            "json",
            "--output",
            out.to_str().unwrap(),
        ];
        if reconnect {
            args.push("--reconnect");
        }
        let killer =
            std::thread::spawn(move || kill_postmaster_mid_run(&name, Duration::from_secs(1)));
        let ran = db(&args);
        let ended = Instant::now();
        let killed = killer.join().unwrap();
        assert_eq!(
            std::fs::canonicalize(&pgdata).unwrap(),
            killed.pgdata,
            "{case}"
        );
        assert_ended_cleanly(&case, &ran, ended, &killed, &out);
        let pid_file = pgdata.join("postmaster.pid");
        assert!(!pid_file.exists(), "{case}: {} is left", pid_file.display());
        let sockets: Vec<_> = std::fs::read_dir(pgdata.join("csdchar-socket"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert!(sockets.is_empty(), "{case}: socket files left: {sockets:?}");
    }
}

/// The same on a temporary cluster (`db run` without --pgdata): its
/// directory is removed too.
#[test]
fn a_killed_postmaster_of_a_temporary_cluster_leaves_no_directory() {
    if !common::postgres_or_skip() {
        return;
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("partial.json");
    let name = format!("csdchar-pmkill-{}-temporary", std::process::id());
    let setting = format!("cluster_name={name}");
    let killer = std::thread::spawn(move || kill_postmaster_mid_run(&name, Duration::from_secs(1)));
    let ran = db(&[
        "run",
        "--pg-set",
        &setting,
        "--workload",
        "oltp-read-write",
        "--table-size",
        "1000",
        "--threads",
        "2",
        "--time",
        "60s",
        "--output-format",
        "json",
        "--output",
        out.to_str().unwrap(),
    ]);
    let ended = Instant::now();
    let killed = killer.join().unwrap();
    assert_ended_cleanly("temporary", &ran, ended, &killed, &out);
    let temp_dir = killed.pgdata.parent().unwrap();
    assert!(
        !temp_dir.exists(),
        "the temporary cluster {} is left",
        temp_dir.display()
    );
}

/// Issue 30 row 12: `db run --start-at` says it waits and until when; Ctrl-C
/// during the wait ends the run at once with no step recorded (no all-zero
/// summary, no 0-transaction step in the result). Issue 42: an instant already
/// past starts at once and the first step records and reports how late.
#[test]
fn ctrl_c_while_waiting_for_start_at_records_no_step() {
    if !common::postgres_or_skip() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-startat")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pgdata");
    let p = pgdata.to_str().unwrap();
    let ran = db(&["prepare", "--pgdata", p, "--table-size", "100"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let at = std::time::SystemTime::now() + Duration::from_secs(3600);
    let text = csdchar_core::start_at::format_rfc3339_millis(at);
    let flag = Arc::new(AtomicBool::new(false));
    let (f2, watched) = (Arc::clone(&flag), pgdata.clone());
    let raised = std::thread::spawn(move || {
        common::after_server_ready(&watched, Duration::from_secs(2));
        f2.store(true, Ordering::Relaxed);
        Instant::now()
    });
    let ran = common::csdchar_with_interrupt(
        &[
            "db",
            "run",
            "--pgdata",
            p,
            "--table-size",
            "100",
            "--threads",
            "1,2",
            "--time",
            "1s",
            "--start-at",
            &text,
            "--output-format",
            "json",
        ],
        flag,
    );
    let raised = raised.join().unwrap();
    assert!(raised.elapsed() < Duration::from_secs(10), "ended late");
    assert_eq!(ran.outcome.exit_code, 130, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("waiting until") && ran.stderr.contains(&text[..16]),
        "{}",
        ran.stderr
    );
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(v["steps"].as_array().unwrap().len(), 0, "{}", ran.stdout);
    assert_eq!(v["interrupted"], true);
    assert!(
        !pgdata.join("postmaster.pid").exists(),
        "the managed server still runs"
    );

    // An instant the set-up overran (a controller's --start-instant, already past): the first
    // step starts at once, records how late, and says so; the later step records nothing.
    let past = std::time::SystemTime::now() - Duration::from_millis(800);
    let text = csdchar_core::start_at::format_rfc3339_millis(past);
    let ran = db(&[
        "run",
        "--pgdata",
        p,
        "--table-size",
        "100",
        "--threads",
        "1,2",
        "--time",
        "1s",
        "--start-instant",
        &text,
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let start = &v["steps"][0]["start"];
    assert_eq!(start["requested"], text);
    assert!(start["late_ms"].as_f64().unwrap() >= 750.0, "{start}");
    assert_eq!(start["too_late"], true);
    assert!(v["steps"][1].get("start").is_none(), "{}", v["steps"][1]);
    assert!(
        ran.stderr.contains("note: the measured run began")
            && ran.stderr.contains("--start-late-limit"),
        "{}",
        ran.stderr
    );
}

/// Issue 25 item 6: a server process killed by `--pg-memory-limit` (here
/// the pgio load's VACUUM at 64 MiB) is named as such — the limit, the
/// cgroup's OOM kill count and what to raise —, not left as "connection
/// closed"; exit 1, and a study's partial result carries the same words.
#[test]
fn a_server_process_the_memory_limit_kills_is_named() {
    if !common::postgres_or_skip() || !common::is_root_or_skip("memory_limit_kill") {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-oom")
        .tempdir_in("/var/tmp")
        .unwrap();
    let limited = |step: &str, name: &str, extra: &[&str]| {
        let pgdata = dir.path().join(name);
        let mut args = vec![
            step,
            "--pgdata",
            pgdata.to_str().unwrap(),
            "--pg-memory-limit",
            "64m",
        ];
        args.extend_from_slice(extra);
        let ran = db(&args);
        (ran, pgdata)
    };
    let (ran, pgdata) = limited(
        "prepare",
        "prepared",
        &["--workload", "pgio", "--pgio-size", "256m"],
    );
    if ran.stderr.contains("no memory cgroup controller") {
        eprintln!("skipped: {}", ran.stderr.trim());
        return;
    }
    assert_eq!(ran.outcome.exit_code, 1, "{}", ran.stderr);
    let named = |text: &str| {
        text.contains("the memory limit killed ")
            && text.contains("(--pg-memory-limit 64 MiB")
            && text.contains("OOM killer counted ")
            && text.contains("raise --pg-memory-limit")
    };
    assert!(named(&ran.stderr), "{}", ran.stderr);
    // What the client saw stays, after the cause.
    assert!(ran.stderr.contains("vacuuming"), "{}", ran.stderr);
    assert!(
        !pgdata.join("postmaster.pid").exists(),
        "the server is stopped"
    );

    // A study's load (pgbench's, scale 10) killed the same way.
    let out = dir.path().join("study.json");
    let (ran, _) = limited(
        "study",
        "studied",
        &[
            "--workload",
            "tpcb",
            "--scale",
            "10",
            "--fillfactor",
            "100",
            "--time",
            "1s",
            "--output-format",
            "json",
            "--output",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(ran.outcome.exit_code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("partial result saved"),
        "{}",
        ran.stderr
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(named(v["error"].as_str().unwrap_or("")), "{}", v["error"]);
}

/// Issue 38 row 9: Ctrl-C during a `db study --repeat 3` keeps every load
/// that finished (the result's `unfinished`, with what was cut short), exit
/// 130; the study says what it will do before it starts and, after its
/// first load, how long it will take.
#[test]
fn ctrl_c_in_a_repeated_study_keeps_the_finished_loads() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let url = cluster.conninfo("postgres");
    let oid = "SELECT coalesce((SELECT oid FROM pg_class WHERE relname = 'sbtest1' AND relkind = 'r'), 0)";
    let flag = Arc::new(AtomicBool::new(false));
    let f2 = Arc::clone(&flag);
    // Ctrl-C once the second load has committed (its table is a new one).
    let watcher = {
        let client = cluster.client("psql");
        let program = client.get_program().to_owned();
        let args: Vec<std::ffi::OsString> = client.get_args().map(|a| a.to_owned()).collect();
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            let mut first = None;
            while Instant::now() < deadline {
                let out = std::process::Command::new(&program)
                    .args(&args)
                    .args(["-At", "-d", "postgres", "-c", oid])
                    .output()
                    .unwrap();
                let now = String::from_utf8_lossy(&out.stdout).trim().to_string();
                match (&first, now.as_str()) {
                    (_, "0" | "") => {}
                    (None, o) => first = Some(o.to_string()),
                    (Some(f), o) if f != o => {
                        f2.store(true, Ordering::Relaxed);
                        return true;
                    }
                    _ => {}
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            false
        })
    };
    let ran = common::csdchar_with_interrupt(
        &[
            "db",
            "study",
            "--url",
            &url,
            "--table-size",
            "100000",
            "--fillfactor",
            "100",
            "--repeat",
            "3",
            "--time",
            "1s",
            "--output-format",
            "json",
        ],
        flag,
    );
    assert!(
        watcher.join().unwrap(),
        "the second load never committed: {}",
        ran.stderr
    );
    assert_eq!(ran.outcome.exit_code, 130, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("study: 3 load(s) (0 unmeasured warm-up, then 1 fillfactor(s) x --repeat 3)")
            && ran.stderr.contains("study: the first load took"),
        "the plan and the estimate: {}",
        ran.stderr
    );
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    common::assert_matches_schema(&v, "study");
    assert_eq!(v["interrupted"], true);
    assert_eq!(v["rows"].as_array().unwrap().len(), 0, "no run step ran");
    let u = &v["unfinished"];
    assert_eq!(u["fillfactor"], 100, "{u}");
    assert_eq!(u["loads_planned"], 3, "{u}");
    let loads = u["loads"].as_array().unwrap();
    assert!(
        (2..=3).contains(&loads.len()),
        "two loads had finished: {u}"
    );
    for l in loads {
        assert!(l["relation_bytes"].as_i64().unwrap() > 0, "{l}");
        assert!(l["load_s"].as_f64().unwrap() > 0.0, "{l}");
    }
    let stopped = u["stopped_in"].as_str().unwrap();
    assert!(stopped.contains("interrupted"), "{stopped}");
    // The table's text says it too.
    assert!(
        ran.stderr.contains("of 3 load(s) finished"),
        "{}",
        ran.stderr
    );
}
