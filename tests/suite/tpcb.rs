//! pgbench-compatible TPC-B against clusters csdchar starts itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use csdchar_core::tpcb::TpcbScript;
use csdchar_dbloop::event::Protocol;
use csdchar_pgcluster::{ClusterSpec, ManagedCluster};
use csdchar_workloads::tpcb::{self, InitMode, TpcbSpec};

use crate::common;
use common::psql;

// The tests whose runs take a different path on the io_uring client driver run again on it
// (the others load, check or clean up, where the driver plays no part).
crate::on_uring_too!("load_schema_scripts_and_cleanup_follow_pgbench");

fn settings(pipeline: bool) -> csdchar_dbloop::settings::RunSettings {
    csdchar_dbloop::settings::RunSettings {
        pipeline,
        ..common::run_settings(1, 500, None)
    }
}

#[test]
fn load_schema_scripts_and_cleanup_follow_pgbench() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let conninfo = cluster.conninfo("postgres");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let spec = TpcbSpec {
        script: TpcbScript::TpcbLike,
        scale: 2,
        fillfactor: Some(70),
        protocol: Protocol::Simple,
        seed: 1,
        schema: "public".into(),
    };
    for mode in [InitMode::Client, InitMode::Server] {
        let loaded = Arc::new(AtomicU64::new(0));
        let l2 = Arc::clone(&loaded);
        let load = rt.block_on(tpcb::prepare(
            &conninfo,
            &spec,
            mode,
            3,
            mode == InitMode::Server, // the second load replaces the first
            Arc::new(move |n| {
                l2.fetch_add(n, Ordering::Relaxed);
            }),
        ));
        let times = load.unwrap_or_else(|e| panic!("{mode:?}: {e}"));
        assert!(
            times.generate_s > 0.0 && times.primary_keys_s > 0.0,
            "{times:?}"
        );
        assert_eq!(loaded.load(Ordering::Relaxed), 200_000, "{mode:?}");
        // pgbench's scale rule and row shapes.
        assert_eq!(
            psql(
                &cluster,
                "select (select count(*) from pgbench_branches) || ',' || \
                 (select count(*) from pgbench_tellers) || ',' || \
                 (select count(*) from pgbench_accounts) || ',' || \
                 (select count(*) from pgbench_history)"
            ),
            "2,20,200000,0",
            "{mode:?}"
        );
        assert_eq!(
            psql(
                &cluster,
                "select count(distinct aid) || ',' || min(aid) || ',' || max(aid) || ',' || \
                 max(bid) || ',' || sum(abalance) || ',' || min(octet_length(filler)) \
                 from pgbench_accounts"
            ),
            "200000,1,200000,2,0,84"
        );
        assert_eq!(
            psql(
                &cluster,
                "select count(*) from pgbench_tellers where filler is null and bid = (tid - 1) / 10 + 1"
            ),
            "20"
        );
        // -F on accounts, tellers and branches only; primary keys on the three.
        assert_eq!(
            psql(
                &cluster,
                "select string_agg(relname || '=' || coalesce(reloptions::text, '-'), ' ' order by relname) \
                 from pg_class where relname like 'pgbench_%' and relkind = 'r'"
            ),
            "pgbench_accounts={fillfactor=70} pgbench_branches={fillfactor=70} \
             pgbench_history=- pgbench_tellers={fillfactor=70}"
        );
        assert_eq!(
            psql(
                &cluster,
                "select string_agg(indexrelid::regclass::text, ',' order by indexrelid::regclass::text) from pg_index \
                 where indrelid::regclass::text like 'pgbench_%' and indisprimary"
            ),
            "pgbench_accounts_pkey,pgbench_branches_pkey,pgbench_tellers_pkey"
        );
    }
    // Without --force, existing tables are refused.
    let err = rt
        .block_on(tpcb::prepare(
            &conninfo,
            &spec,
            InitMode::Client,
            1,
            false,
            Arc::new(|_| {}),
        ))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--force") && err.contains("pgbench_accounts"),
        "{err}"
    );

    // The scripts' statements per transaction, in every protocol, one round trip each or pipelined.
    let mut history = 0;
    for (script, per_tx) in [
        (TpcbScript::TpcbLike, (1, 4, 2)),
        (TpcbScript::SimpleUpdate, (1, 2, 2)),
        (TpcbScript::SelectOnly, (1, 0, 0)),
    ] {
        for protocol in [Protocol::Simple, Protocol::Extended, Protocol::Prepared] {
            for pipeline in [false, true] {
                let w = tpcb::workload(&TpcbSpec {
                    script,
                    protocol,
                    ..spec.clone()
                });
                let out = rt
                    .block_on(common::run_workload(
                        &conninfo,
                        Arc::new(w),
                        &settings(pipeline),
                        |_, _| {},
                    ))
                    .unwrap();
                let t = &out.tally;
                assert!(out.error.is_none(), "{:?}", out.error);
                assert!(t.transactions > 5, "{script:?} {protocol:?}: {t:?}");
                assert_eq!(
                    (t.reads, t.writes, t.others),
                    (
                        per_tx.0 * t.transactions,
                        per_tx.1 * t.transactions,
                        per_tx.2 * t.transactions
                    ),
                    "{script:?} {protocol:?} pipeline {pipeline}"
                );
                if script != TpcbScript::SelectOnly {
                    history += t.transactions;
                }
            }
        }
    }
    // Every update transaction left one history row, and the balances add up.
    assert_eq!(
        psql(&cluster, "select count(*) from pgbench_history"),
        history.to_string()
    );
    assert_eq!(
        psql(
            &cluster,
            "select (select sum(abalance) from pgbench_accounts) = (select sum(delta) from pgbench_history)"
        ),
        "t"
    );

    assert_eq!(
        rt.block_on(tpcb::cleanup(&conninfo, "public"))
            .unwrap()
            .len(),
        4
    );
    assert_eq!(
        psql(
            &cluster,
            "select count(*) from pg_class where relname like 'pgbench%'"
        ),
        "0"
    );
}

#[test]
fn cli_tpcb_on_a_temporary_cluster() {
    if !common::postgres_or_skip() {
        return;
    }
    let ran = common::csdchar(&[
        "db",
        "run",
        "--workload",
        "tpcb",
        "--scale",
        "1",
        "--threads",
        "2",
        "--time",
        "1s",
        "--protocol",
        "prepared",
        "--percentile",
        "99,50",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    common::assert_matches_schema(&v, "db");
    assert_eq!(v["spec"]["workload"], "tpcb-like");
    assert_eq!(v["spec"]["scale"], 1);
    assert_eq!(v["spec"]["protocol"], "prepared");
    let step = &v["steps"][0];
    let tx = step["transactions"].as_u64().unwrap();
    assert!(tx > 0);
    assert_eq!(step["writes"].as_u64(), Some(4 * tx));
    let names: Vec<&str> = step["after"]["relations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "pgbench_accounts",
            "pgbench_branches",
            "pgbench_history",
            "pgbench_tellers"
        ]
    );
    // A --pgdata cluster across commands; run takes the scale from the tables, as pgbench does.
    let dir = tempfile::Builder::new()
        .prefix("csdchar-tpcb")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pgdata");
    let p = pgdata.to_str().unwrap();
    let with = |step: &str, extra: &[&str]| {
        let mut a = vec!["db", step, "--pgdata", p, "--workload", "tpcb"];
        a.extend_from_slice(extra);
        common::csdchar(&a)
    };
    let ran = with("prepare", &["--scale", "2", "--init-mode", "server"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(ran.stderr.contains("primary keys"), "{}", ran.stderr);
    let ran = with("run", &["--time", "1s", "--report-interval", "500ms"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("progress: "), "{}", ran.stdout);
    assert!(
        !ran.stderr.contains("--scale"),
        "no note about an option never given: {}",
        ran.stderr
    );
    let ran = with("run", &["--time", "1s", "--scale", "1"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(ran.stderr.contains("--scale 1 ignored"), "{}", ran.stderr);
    assert!(ran.stdout.contains("scaling factor: 2"), "{}", ran.stdout);
    let ran = with("prepare", &[]);
    assert_eq!(
        ran.outcome.exit_code, 2,
        "prepare twice refuses: {}",
        ran.stderr
    );
    let ran = with("study", &["--fillfactor", "90"]);
    assert_eq!(
        ran.outcome.exit_code, 2,
        "study replaces tables only with --force: {}",
        ran.stderr
    );
    assert!(ran.stderr.contains("--force"), "{}", ran.stderr);
    let ran = with("cleanup", &[]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("dropped 4 table(s)"), "{}", ran.stdout);

    // alter is sysbench's; tpcb says what to do instead, exit 2.
    let ran = common::csdchar(&[
        "db",
        "alter",
        "--workload",
        "tpcb",
        "--fillfactor",
        "70",
        "--url",
        "host=127.0.0.1",
    ]);
    assert_eq!(ran.outcome.exit_code, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains("--force"), "{}", ran.stderr);
}

#[test]
fn study_on_a_plain_directory_estimates_physical_size() {
    if !common::postgres_or_skip() {
        return;
    }
    let study = |args: &[&str]| {
        let mut a = vec![
            "db",
            "study",
            "--threads",
            "2",
            "--time",
            "1s",
            "--report-interval",
            "0",
            "--output-format",
            "json",
        ];
        a.extend_from_slice(args);
        let ran = common::csdchar(&a);
        assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
        assert!(
            ran.stderr.contains("logical MiB"),
            "the table: {}",
            ran.stderr
        );
        let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
        common::assert_matches_schema(&v, "study");
        v
    };
    let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap();
    // TPC-B at the default fillfactors.
    let v = study(&["--workload", "tpcb", "--scale", "2"]);
    assert_eq!(v["fillfactors"], serde_json::json!([100, 70, 50]));
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        assert_eq!(r["physical_estimated"], true, "{r}");
        assert!(
            r["physical_source"]
                .as_str()
                .unwrap()
                .starts_with("estimated")
        );
        assert!(f(r, "physical_bytes") < f(r, "physical_of_logical_bytes"));
    }
    let lg = f(&rows[2], "logical_growth");
    assert!(lg > 0.5, "fillfactor 50 takes more pages: {lg}");
    assert!(f(&rows[2], "physical_growth") < lg / 2.0, "{rows:?}");
    assert_eq!(v["runs"].as_array().unwrap().len(), 3);
    // sysbench's tables the same way.
    let v = study(&[
        "--workload",
        "oltp-read-only",
        "--tables",
        "1",
        "--table-size",
        "5000",
        "--fillfactor",
        "100,60",
        "--repeat",
        "2",
    ]);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(f(&rows[1], "logical_growth") > 0.2, "{rows:?}");
    assert!(f(&rows[1], "tps") > 0.0);
    // --repeat 2: each fillfactor loaded and measured twice; the row is their
    // mean, with the spread (the same seeded data: the same estimate).
    for r in rows {
        let loads = r["loads"].as_array().unwrap();
        assert_eq!(loads.len(), 2, "{r}");
        let p: Vec<f64> = loads.iter().map(|l| f(l, "physical_bytes")).collect();
        assert!(
            ((p[0] + p[1]) / 2.0 - f(r, "physical_bytes")).abs() < 1.0,
            "{r}"
        );
        let s = &r["physical_spread"];
        assert_eq!(f(s, "min"), p[0].min(p[1]), "{r}");
        assert_eq!(f(s, "max"), p[0].max(p[1]), "{r}");
        assert!(f(s, "stddev") < 0.01 * f(r, "physical_bytes"), "{r}");
    }
    assert_eq!(
        v["runs"].as_array().unwrap().len(),
        2,
        "one run step per fillfactor"
    );
}

#[test]
fn a_load_cut_short_fails_cleanly_and_says_how_far_it_got() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let conninfo = cluster.conninfo("postgres");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let spec = TpcbSpec {
        script: TpcbScript::TpcbLike,
        scale: 50,
        fillfactor: None,
        protocol: Protocol::Simple,
        seed: 1,
        schema: "public".into(),
    };
    let loaded = Arc::new(AtomicU64::new(0));
    let l2 = Arc::clone(&loaded);
    let err = std::thread::scope(|sc| {
        // Once rows flow, the server ends the loader's connection (as a crash or an operator would).
        sc.spawn(|| {
            while loaded.load(Ordering::Relaxed) < 200_000 {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            psql(
                &cluster,
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                 WHERE application_name = 'csdchar' AND query LIKE 'COPY%'",
            )
        });
        rt.block_on(tpcb::prepare(
            &conninfo,
            &spec,
            InitMode::Client,
            2,
            false,
            Arc::new(move |n| {
                l2.fetch_add(n, Ordering::Relaxed);
            }),
        ))
        .unwrap_err()
        .to_string()
    });
    assert!(err.contains("step 'generate'"), "{err}");
    assert!(err.contains("of 5000000 accounts rows"), "{err}");
    assert!(err.contains("--force"), "says how to start over: {err}");
}
