//! sysbench-compatible OLTP against a cluster csdchar starts itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use csdchar_core::oltp::{OltpOptions, OltpWorkload, RandType, expected_counts, transaction_plan};
use csdchar_pgcluster::{ClusterSpec, ManagedCluster};
use csdchar_workloads::oltp::{self, OltpSpec};

use crate::common;
use common::psql;

fn spec(workload: OltpWorkload) -> OltpSpec {
    OltpSpec {
        workload,
        tables: 2,
        table_size: 2000,
        range_size: 100,
        options: OltpOptions::default(),
        rand_type: RandType::Uniform,
        fillfactor: Some(70),
        string_dup: 0,
        create_secondary: true,
        seed: 1,
        schema: "public".into(),
    }
}

use common::run_settings as settings;

// The tests whose runs take a different path on the io_uring client driver run again on it
// (the others load, check or clean up, where the driver plays no part).
crate::on_uring_too!(
    "prepare_run_cleanup_with_sysbench_counting",
    "interrupt_and_server_loss_end_cleanly",
    "reconnect_resumes_after_backends_are_terminated",
    "passwords_md5_and_scram_authenticate",
    "protocol_351_is_negotiated_down"
);

#[test]
fn prepare_run_cleanup_with_sysbench_counting() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let conninfo = cluster.conninfo("postgres");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let loaded = Arc::new(AtomicU64::new(0));
    let l2 = Arc::clone(&loaded);
    let s = spec(OltpWorkload::ReadWrite);
    rt.block_on(oltp::prepare(
        &conninfo,
        &s,
        2,
        false,
        Arc::new(move |n| {
            l2.fetch_add(n, Ordering::Relaxed);
        }),
    ))
    .unwrap();
    assert_eq!(loaded.load(Ordering::Relaxed), 4000);
    assert_eq!(psql(&cluster, "select count(*) from sbtest1"), "2000");
    assert_eq!(psql(&cluster, "select count(*) from sbtest2"), "2000");
    assert_eq!(
        psql(
            &cluster,
            "select reloptions::text from pg_class where relname='sbtest2'"
        ),
        "{fillfactor=70}"
    );
    assert_eq!(
        psql(
            &cluster,
            "select count(*) from pg_indexes where indexname in ('k_1','k_2')"
        ),
        "2"
    );
    let c = psql(&cluster, "select c from sbtest1 where id = 7");
    assert_eq!(c.len(), 119);

    // Prepare again refuses, naming the tables.
    let err = rt
        .block_on(oltp::prepare(&conninfo, &s, 1, false, Arc::new(|_| {})))
        .unwrap_err()
        .to_string();
    assert!(err.contains("sbtest1") && err.contains("--force"), "{err}");

    // One client: every transaction is exactly sysbench's 14 reads, 4 writes, 2 others.
    let mut lines = 0;
    let out = rt
        .block_on(common::run_oltp(
            &conninfo,
            &s,
            &settings(1, 1500, Some(500)),
            |_, _| lines += 1,
        ))
        .unwrap();
    let t = &out.tally;
    assert!(t.transactions > 10, "{t:?}");
    assert_eq!(
        (t.reads, t.writes, t.others),
        (14 * t.transactions, 4 * t.transactions, 2 * t.transactions)
    );
    assert_eq!(t.error_total(), 0);
    assert!(lines >= 2);
    let series: u64 = out.intervals.iter().map(|i| i.tally.transactions).sum();
    assert_eq!(series, t.transactions);
    assert!(out.latency.mean_ns > 0.0);
    assert!(out.error.is_none());

    // Pipelined blocks: the same statements, counted the same way.
    let piped = csdchar_dbloop::settings::RunSettings {
        pipeline: true,
        ..settings(1, 1000, None)
    };
    let out = rt
        .block_on(common::run_oltp(&conninfo, &s, &piped, |_, _| {}))
        .unwrap();
    let t = &out.tally;
    assert!(t.transactions > 10, "{t:?}");
    assert_eq!(
        (t.reads, t.writes, t.others),
        (14 * t.transactions, 4 * t.transactions, 2 * t.transactions)
    );

    // Every script, one client: sysbench's statements per transaction.
    for w in [
        OltpWorkload::ReadOnly,
        OltpWorkload::WriteOnly,
        OltpWorkload::PointSelect,
        OltpWorkload::UpdateIndex,
        OltpWorkload::UpdateNonIndex,
        OltpWorkload::Insert,
    ] {
        let ws = OltpSpec {
            workload: w,
            ..s.clone()
        };
        let out = rt
            .block_on(common::run_oltp(
                &conninfo,
                &ws,
                &settings(1, 400, None),
                |_, _| {},
            ))
            .unwrap();
        let t = &out.tally;
        let (r, wr, o) = expected_counts(&transaction_plan(w, &ws.options));
        assert!(t.transactions > 0 && out.error.is_none(), "{w:?} {t:?}");
        assert_eq!(
            (t.reads, t.writes, t.others),
            (r * t.transactions, wr * t.transactions, o * t.transactions),
            "{w:?}"
        );
    }

    // Several clients on the same rows: duplicate keys and deadlocks are
    // ignored, counted, rolled back and retried, one statement at a time or pipelined.
    for pipeline in [false, true] {
        let out = rt
            .block_on(common::run_oltp(
                &conninfo,
                &OltpSpec {
                    table_size: 50,
                    ..s.clone()
                },
                &csdchar_dbloop::settings::RunSettings {
                    pipeline,
                    ..settings(4, 1000, None)
                },
                |_, _| {},
            ))
            .unwrap();
        assert!(out.error.is_none(), "{:?}", out.error);
        assert!(out.tally.transactions > 0);
        assert!(
            out.tally
                .errors
                .keys()
                .all(|k| ["23505", "40P01", "40001"].contains(&k.as_str()))
        );
    }

    // oltp_delete shrinks the table: a delete that finds no row counts as "other".
    let del = OltpSpec {
        workload: OltpWorkload::Delete,
        ..s.clone()
    };
    let out = rt
        .block_on(common::run_oltp(
            &conninfo,
            &del,
            &settings(1, 400, None),
            |_, _| {},
        ))
        .unwrap();
    let t = &out.tally;
    assert_eq!(t.reads, 0);
    assert_eq!(t.writes + t.others, t.transactions, "{t:?}");
    assert!(t.writes > 0);

    assert_eq!(
        rt.block_on(oltp::cleanup(&conninfo, "public", 2)).unwrap(),
        ["sbtest1", "sbtest2"]
    );
    assert_eq!(
        psql(
            &cluster,
            "select count(*) from pg_class where relname like 'sbtest%'"
        ),
        "0"
    );
}

#[test]
fn auto_client_io_picks_the_driver_per_step_and_records_it() {
    if !common::postgres_or_skip() {
        return;
    }
    use csdchar_dbloop::runner::uring_probe;
    use csdchar_dbloop::settings::AutoRule;
    use csdchar_pgwire::conn::Transport;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // A temporary cluster is reached over its Unix socket.
    let many = AutoRule::of(Transport::Unix).uring_from_clients_per_core * cores;
    // A managed cluster allows 100 connections.
    if many > 90 {
        eprintln!(
            "skipped: auto picks io_uring from {many} clients here, more than the cluster allows"
        );
        return;
    }
    let threads = format!("1,{many}");
    let ran = common::csdchar(&[
        "db",
        "run",
        "--workload",
        "oltp-point-select",
        "--tables",
        "1",
        "--table-size",
        "1000",
        "--threads",
        &threads,
        "--time",
        "1s",
        "--report-interval",
        "0",
        "--client-io",
        "auto",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    common::assert_matches_schema(&v, "db");
    assert_eq!(v["spec"]["client_io"], "auto");
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps[0]["client_io"], "threads", "1 client");
    let expected = if uring_probe().is_ok() {
        "uring"
    } else {
        "threads"
    };
    assert_eq!(steps[1]["client_io"], expected, "{many} clients");
    for s in steps {
        assert_eq!(s["transport"], "unix");
        assert!(s["transactions"].as_u64().unwrap() > 0);
    }
}

#[test]
fn cli_run_on_a_temporary_cluster_and_on_pgdata() {
    if !common::postgres_or_skip() {
        return;
    }
    // Ephemeral: prepared, run (a two-step sweep), removed.
    let ran = common::csdchar(&[
        "db",
        "run",
        "--workload",
        "oltp-read-only",
        "--tables",
        "2",
        "--table-size",
        "1000",
        "--threads",
        "1,2",
        "--time",
        "1s",
        "--report-interval",
        "0",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    common::assert_matches_schema(&v, "db");
    assert_eq!(v["server"], "ephemeral");
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for s in steps {
        let tx = s["transactions"].as_u64().unwrap();
        assert!(tx > 0);
        assert_eq!(s["reads"].as_u64(), Some(14 * tx));
        assert_eq!(s["writes"].as_u64(), Some(0));
        // The correlation snapshot around the step.
        let (b, a) = (&s["before"], &s["after"]);
        assert_eq!(a["relations"].as_array().unwrap().len(), 2);
        assert!(a["relations"][0]["table_bytes"].as_i64().unwrap() > 0);
        assert!(a["relations"][0]["index_bytes"].as_i64().unwrap() > 0);
        assert!(a["database_bytes"].as_i64().unwrap() > 0);
        assert!(a["wal_lsn_bytes"].as_i64().unwrap() >= b["wal_lsn_bytes"].as_i64().unwrap());
        assert!(a["stat_database"]["blks_hit"].as_i64().is_some());
        assert!(a["data_directory"].as_str().is_some());
    }

    // A managed --pgdata cluster across separate commands.
    let dir = tempfile::Builder::new()
        .prefix("csdchar-db")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pgdata");
    let p = pgdata.to_str().unwrap();
    let base = ["--pgdata", p, "--tables", "1"];
    let with = |step: &str, extra: &[&str]| {
        let mut a = vec!["db", step];
        a.extend_from_slice(&base);
        // Only the steps that load or run take the table size.
        if matches!(step, "prepare" | "run") {
            a.extend_from_slice(&["--table-size", "500"]);
        }
        a.extend_from_slice(extra);
        common::csdchar(&a)
    };
    let ran = with("run", &["--time", "1s"]);
    assert_eq!(ran.outcome.exit_code, 1, "run before prepare");
    assert!(ran.stderr.contains("csdchar db prepare"), "{}", ran.stderr);
    let ran = with("prepare", &["--fillfactor", "50"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let ran = with("prepare", &[]);
    assert_eq!(ran.outcome.exit_code, 2, "prepare twice refuses");
    assert!(ran.stderr.contains("--force"), "{}", ran.stderr);
    let ran = with("run", &["--time", "1s", "--report-interval", "500ms"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("] thds: 1 tps: "), "{}", ran.stdout);
    assert!(ran.stdout.contains("(r/w/o: "), "{}", ran.stdout);
    let ran = with("alter", &["--fillfactor", "70"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("sbtest1: fillfactor 70"),
        "{}",
        ran.stderr
    );
    let ran = with("alter", &[]);
    assert_eq!(ran.outcome.exit_code, 2, "alter needs --fillfactor");
    {
        // The new fillfactor and plain storage are in the catalog.
        let c = ManagedCluster::start(&ClusterSpec {
            pgdata: Some(pgdata.clone()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            psql(
                &c,
                "select reloptions::text from pg_class where relname='sbtest1'"
            ),
            "{fillfactor=70}"
        );
        assert_eq!(
            psql(
                &c,
                "select string_agg(attstorage::text, '' order by attname) from pg_attribute where attrelid='sbtest1'::regclass and attname in ('c','pad')"
            ),
            "pp"
        );
    }
    let ran = with("cleanup", &[]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("dropped 1 table"), "{}", ran.stdout);

    // Bad input: one line, exit 2.
    for args in [
        &["db", "prepare"][..],
        &["db", "run", "--pg-set", "oops"][..],
        &["db", "run", "--fillfactor", "5"][..],
        &["db", "run", "--url", "host=h sslmode=sometimes"][..],
        &["db", "run", "--url", "port=notanumber"][..],
        &["db", "run", "--percentile", "0"][..],
        &["db", "run", "--rand-type", "bogus"][..],
        &["db", "prepare", "--url", "host=h", "--fillfactor", "70,50"][..],
    ] {
        let ran = common::csdchar(args);
        assert_eq!(ran.outcome.exit_code, 2, "{args:?}: {}", ran.stderr);
        assert_eq!(ran.stderr.trim_end().lines().count(), 1, "{}", ran.stderr);
    }
}

#[test]
fn interrupt_and_server_loss_end_cleanly_with_partial_results() {
    if !common::postgres_or_skip() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-dbkill")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pgdata");
    let p = pgdata.to_str().unwrap().to_string();
    let ran = common::csdchar(&["db", "prepare", "--pgdata", &p, "--table-size", "1000"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);

    // Ctrl-C: partial result, exit 130.
    let flag = Arc::new(AtomicBool::new(false));
    let f2 = Arc::clone(&flag);
    let ready_pgdata = pgdata.clone();
    let t = std::thread::spawn(move || {
        common::after_server_ready(&ready_pgdata, Duration::from_millis(1500));
        f2.store(true, Ordering::Relaxed);
    });
    let ran = common::csdchar_with_interrupt(
        &[
            "db",
            "run",
            "--pgdata",
            &p,
            "--table-size",
            "1000",
            "--time",
            "60s",
            "--output-format",
            "json",
        ],
        flag,
    );
    t.join().unwrap();
    assert_eq!(ran.outcome.exit_code, 130, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(v["interrupted"], true);
    assert!(v["steps"][0]["transactions"].as_u64().unwrap() > 0);
    assert!(v["steps"][0]["elapsed_s"].as_f64().unwrap() < 30.0);

    // The server goes away mid-run: a clean stop that says so, partial result, exit 1.
    let killer_pgdata = pgdata.clone();
    let killer = std::thread::spawn(move || {
        common::after_server_ready(&killer_pgdata, Duration::from_millis(1500));
        let pid: i32 = std::fs::read_to_string(killer_pgdata.join("postmaster.pid"))
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Safety: SIGQUIT to the test's own postmaster (an immediate shutdown).
        unsafe { libc::kill(pid, libc::SIGQUIT) };
    });
    let out_file = dir.path().join("partial.json");
    let ran = common::csdchar(&[
        "db",
        "run",
        "--pgdata",
        &p,
        "--table-size",
        "1000",
        "--time",
        "60s",
        "--threads",
        "2",
        "--output-format",
        "json",
        "--output",
        out_file.to_str().unwrap(),
    ]);
    killer.join().unwrap();
    assert_eq!(ran.outcome.exit_code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("partial result saved"),
        "{}",
        ran.stderr
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out_file).unwrap()).unwrap();
    assert_eq!(v["interrupted"], true);
    assert!(v["error"].as_str().is_some());
}

#[test]
fn reconnect_resumes_after_backends_are_terminated() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let conninfo = cluster.conninfo("postgres");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let s = OltpSpec {
        tables: 1,
        ..spec(OltpWorkload::ReadOnly)
    };
    rt.block_on(oltp::prepare(&conninfo, &s, 1, false, Arc::new(|_| {})))
        .unwrap();
    // The server ends every benchmark connection (as a restart or failover would) at 1.2 s.
    let kill_clients = |cluster: &ManagedCluster| {
        let cluster_psql = cluster
            .client("psql")
            .args(["-d", "postgres", "-Atc"])
            .arg(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE application_name = 'csdchar' AND pid <> pg_backend_pid()",
            )
            .output()
            .unwrap();
        String::from_utf8_lossy(&cluster_psql.stdout)
            .trim()
            .to_string()
    };
    let run = |reconnect: bool| {
        std::thread::scope(|sc| {
            let killer = sc.spawn(|| {
                std::thread::sleep(Duration::from_millis(1200));
                kill_clients(&cluster)
            });
            let out = rt
                .block_on(common::run_oltp(
                    &conninfo,
                    &s,
                    &csdchar_dbloop::settings::RunSettings {
                        reconnect,
                        ..settings(2, 3000, Some(500))
                    },
                    |_, _| {},
                ))
                .unwrap();
            (out, killer.join().unwrap())
        })
    };

    let (out, killed) = run(true);
    assert_eq!(killed, "2", "both clients' backends were terminated");
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.tally.reconnects, 2, "{:?}", out.tally);
    let after: u64 = out
        .intervals
        .iter()
        .filter(|i| i.t_s > 2.0)
        .map(|i| i.tally.transactions)
        .sum();
    assert!(after > 0, "transactions resumed after reconnecting");

    let (out, _) = run(false);
    let err = out.error.expect("the run stops without --reconnect");
    assert!(err.contains("--reconnect"), "{err}");
    assert!(out.tally.transactions > 0, "partial result kept");
    assert_eq!(out.tally.reconnects, 0);
}

#[test]
fn passwords_md5_and_scram_authenticate_and_never_show() {
    use csdchar_pgwire::conn::ConnTarget;
    use csdchar_pgwire::env::ProcessEnv;
    use csdchar_pgwire::message::WireError;
    use csdchar_pgwire::wire::WireConn;
    if !common::postgres_or_skip() {
        return;
    }
    // A pg_hba.conf that asks these two roles for passwords, each its own way.
    let dir = tempfile::Builder::new()
        .prefix("csdchar-hba")
        .tempdir_in("/var/tmp")
        .unwrap();
    let hba = dir.path().join("pg_hba.conf");
    std::fs::write(
        &hba,
        "host all scram_user 127.0.0.1/32 scram-sha-256\n\
         host all md5_user 127.0.0.1/32 md5\n\
         host all all 127.0.0.1/32 trust\n\
         local all all trust\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&hba, std::fs::Permissions::from_mode(0o644)).unwrap();
    let cluster = ManagedCluster::start(&ClusterSpec {
        settings: vec![format!("hba_file={}", hba.display())],
        listen: Some("127.0.0.1".into()),
        ..ClusterSpec::default()
    })
    .unwrap();
    psql(
        &cluster,
        "SET password_encryption = 'scram-sha-256'; CREATE ROLE scram_user LOGIN PASSWORD 'Sc-pw-4711'",
    );
    psql(
        &cluster,
        "SET password_encryption = 'md5'; CREATE ROLE md5_user LOGIN PASSWORD 'Md-pw-4711'",
    );
    // Over TCP: the Unix socket is local trust.
    let base = format!("host=127.0.0.1 port={} dbname=postgres", cluster.port());
    for (user, pw) in [("scram_user", "Sc-pw-4711"), ("md5_user", "Md-pw-4711")] {
        let with = |pw: &str| {
            ConnTarget::parse(&format!("{base} user={user} password={pw}"), &ProcessEnv).unwrap()
        };
        let mut conn = WireConn::connect(&with(pw), None).unwrap();
        let reply = conn.simple("SELECT 1").unwrap();
        assert_eq!(reply.completed.len(), 1, "{user}");
        assert!(reply.completed[0].returned_rows);
        let wrong = format!("{pw}-wrong");
        let err = match WireConn::connect(&with(&wrong), None) {
            Err(e @ WireError::Setup(_)) => e.to_string(),
            Err(e) => panic!("{user}: unexpected {e}"),
            Ok(_) => panic!("{user}: a wrong password was accepted"),
        };
        assert!(err.contains("password authentication failed"), "{err}");
        assert!(err.contains("127.0.0.1:"), "names the server: {err}");
        assert!(!err.contains(&wrong), "{err}");
        // The admin path (tokio-postgres) takes the same target.
        let rt = tokio::runtime::Runtime::new().unwrap();
        let info = format!("{base} user={user} password={pw}");
        assert!(
            rt.block_on(csdchar_pgwire::client::connect(&info)).is_ok(),
            "{user}"
        );
    }

    // The CLI against a server by URL, with a password that must show up nowhere.
    psql(&cluster, "GRANT ALL ON SCHEMA public TO scram_user");
    let url = format!(
        "postgres://scram_user:Sc-pw-4711@127.0.0.1:{}/postgres",
        cluster.port()
    );
    let opts = ["--url", url.as_str(), "--tables", "1"];
    let with = |step: &str, extra: &[&str]| {
        let mut a = vec!["db", step];
        a.extend_from_slice(&opts);
        if step != "cleanup" {
            a.extend_from_slice(&["--table-size", "500"]);
        }
        a.extend_from_slice(extra);
        common::csdchar(&a)
    };
    for (step, extra) in [
        ("prepare", &[][..]),
        (
            "run",
            &[
                "--time",
                "1s",
                "--report-interval",
                "500ms",
                "--output-format",
                "json",
            ][..],
        ),
        ("cleanup", &[][..]),
    ] {
        let ran = with(step, extra);
        assert_eq!(ran.outcome.exit_code, 0, "{step}: {}", ran.stderr);
        assert!(!ran.stdout.contains("Sc-pw-4711") && !ran.stderr.contains("Sc-pw-4711"));
        if step == "run" {
            let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
            assert_eq!(v["server"], "url");
            assert!(v["steps"][0]["transactions"].as_u64().unwrap() > 0);
        }
    }
    // A wrong password: one line naming the server, never the password.
    let bad = url.replace("Sc-pw-4711", "Wr0ng-pw");
    let ran = common::csdchar(&["db", "cleanup", "--url", &bad, "--tables", "1"]);
    assert_eq!(ran.outcome.exit_code, 1, "{}", ran.stderr);
    assert!(ran.stderr.contains("127.0.0.1:"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("password authentication failed"),
        "the server's words: {}",
        ran.stderr
    );
    assert!(!ran.stderr.contains("Wr0ng-pw"), "{}", ran.stderr);
}

#[test]
fn estimate_names_relations_and_tells_toast_from_heap_with_url() {
    if !common::postgres_or_skip() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-estname")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pgdata");
    let cluster = ManagedCluster::start(&ClusterSpec {
        pgdata: Some(pgdata.clone()),
        ..Default::default()
    })
    .unwrap();
    // Long, incompressible-enough values go to TOAST; a checkpoint puts them in the files.
    psql(
        &cluster,
        "CREATE TABLE docs(id int PRIMARY KEY, body text); \
         ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL; \
         INSERT INTO docs SELECT g, (SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 100)) \
         FROM generate_series(1, 200) g; CHECKPOINT",
    );
    let ran = common::csdchar(&[
        "estimate",
        pgdata.to_str().unwrap(),
        "--url",
        &cluster.conninfo("postgres"),
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    common::assert_matches_schema(&v, "estimate");
    let rels = v["postgres"]["relations"].as_array().unwrap();
    let named = |n: &str| rels.iter().find(|r| r["name"] == n);
    assert!(named("public.docs").is_some(), "{rels:?}");
    assert!(named("public.docs_pkey").is_some(), "{rels:?}");
    let toast: Vec<_> = rels
        .iter()
        .filter(|r| r["toast_of"] == "public.docs")
        .collect();
    assert!(!toast.is_empty(), "the TOAST table is told apart: {rels:?}");
    assert!(
        toast
            .iter()
            .any(|r| r["main"]["logical_bytes"].as_u64().unwrap() > 500_000),
        "the long values live there: {toast:?}"
    );
    // Catalogs of the connected database and the shared ones are named too.
    assert!(named("pg_catalog.pg_class").is_some());
    assert!(named("pg_catalog.pg_database").is_some());
}

/// Both clients start with protocol 3.51 once a target is known to want it
/// (an openGauss server, for its SHA256 iteration count); PostgreSQL answers
/// with NegotiateProtocolVersion and the session goes on with 3.0.
#[test]
fn protocol_351_is_negotiated_down_by_postgresql() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let conninfo = cluster.conninfo("postgres");
    let target =
        csdchar_pgwire::conn::ConnTarget::parse(&conninfo, &csdchar_pgwire::env::ProcessEnv)
            .unwrap();
    csdchar_pgwire::auth::remember_351(&target.describe());
    assert_eq!(
        csdchar_pgwire::auth::protocol_for(&target.describe()),
        csdchar_pgwire::auth::PROTOCOL_3_51
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let version: String = rt.block_on(async {
        let client = csdchar_pgwire::client::connect(&conninfo).await.unwrap();
        client
            .query_one("SELECT current_setting('server_version_num')", &[])
            .await
            .unwrap()
            .get(0)
    });
    assert!(version.parse::<u32>().unwrap() >= 90000, "{version}");
    let mut wire = csdchar_pgwire::wire::WireConn::connect(&target, None).unwrap();
    let reply = wire.simple("SELECT 1").unwrap();
    assert!(reply.error.is_none());
    assert_eq!(reply.completed.len(), 1);
}
