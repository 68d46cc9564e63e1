//! `csdchar db … --workload tpcc` end to end: prepare, check, a terminal
//! sweep with the result's TPC-C figures, the terminal limit, the study.

use crate::common;

// The tests whose runs take a different path on the io_uring client driver run again on it
// (the others load, check or clean up, where the driver plays no part).
crate::on_uring_too!("tpcc_prepare_check_sweep_check_cleanup");

fn db(args: &[&str]) -> common::Ran {
    let mut a = vec!["db"];
    a.extend_from_slice(args);
    common::csdchar(&a)
}

#[test]
fn tpcc_prepare_check_sweep_check_cleanup() {
    if !common::postgres_or_skip() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-tpcc")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pgdata");
    let p = pgdata.to_str().unwrap();
    let with = |step: &str, extra: &[&str]| {
        let mut a = vec![step, "--workload", "tpcc", "--pgdata", p];
        a.extend_from_slice(extra);
        db(&a)
    };
    let ran = with("prepare", &["--warehouses", "2"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("2 warehouse(s) and item"),
        "{}",
        ran.stderr
    );
    let ran = with("check", &[]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert_eq!(ran.stdout.matches(": holds: ").count(), 4, "{}", ran.stdout);

    let ran = with(
        "run",
        &[
            "--threads",
            "1,4",
            "--time",
            "3s",
            "--warmup",
            "1s",
            "--output-format",
            "json",
        ],
    );
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    common::assert_matches_schema(&v, "db");
    assert_eq!(v["spec"]["workload"], "tpcc");
    assert_eq!(v["spec"]["warehouses"], 2);
    // Issue 30 row 15: the spec holds TPC-C's fields, not sysbench's.
    for sysbench_only in [
        "tables",
        "table_size",
        "point_selects",
        "range_size",
        "string_dup",
    ] {
        assert!(
            v["spec"].get(sysbench_only).is_none(),
            "{sysbench_only} in a tpcc spec: {}",
            v["spec"]
        );
    }
    assert_eq!(v["spec"]["mix"]["payment"], 43.0);
    assert_eq!(v["spec"]["warmup_s"], 1.0);
    // BenchmarkSQL's per-table fillfactors differ: no single figure.
    assert!(v["spec"]["fillfactor"].is_null(), "{}", v["spec"]);
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for s in steps {
        let types = s["by_type"].as_array().unwrap();
        let names: Vec<&str> = types.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "new_order",
                "payment",
                "order_status",
                "delivery",
                "stock_level"
            ]
        );
        let tx = s["transactions"].as_u64().unwrap();
        let sum: u64 = types
            .iter()
            .map(|t| t["transactions"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, tx);
        let new_orders = types[0]["transactions"].as_f64().unwrap();
        let tpmc = s["tpmc"].as_f64().unwrap();
        let minutes = s["elapsed_s"].as_f64().unwrap() / 60.0;
        assert!(
            (tpmc - new_orders / minutes).abs() < 1e-6 * tpmc.max(1.0),
            "tpmC is New-Orders per minute: {tpmc} vs {new_orders}/{minutes}"
        );
        assert!(s["tpm_total"].as_f64().unwrap() > tpmc);
        assert_eq!(
            s["rollbacks"].as_u64(),
            types[0]["rollbacks"].as_u64(),
            "only New-Order rolls back"
        );
        assert!(
            s["errors"]
                .as_object()
                .unwrap()
                .values()
                .all(|e| e.as_u64().unwrap() < tx / 10 + 1)
        );
    }
    let ran = with("check", &[]);
    assert_eq!(
        ran.outcome.exit_code, 0,
        "consistent after the run: {}{}",
        ran.stdout, ran.stderr
    );

    // BenchmarkSQL's limit: 10 terminals per warehouse.
    let ran = with("run", &["--threads", "21", "--time", "1s"]);
    assert_eq!(ran.outcome.exit_code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("10 terminals per warehouse"),
        "{}",
        ran.stderr
    );

    let ran = with("cleanup", &[]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(
        ran.stdout
            .starts_with("dropped 10 table(s) from schema public"),
        "{}",
        ran.stdout
    );
}

#[test]
fn tpcc_study_loads_and_measures_each_fillfactor() {
    if !common::postgres_or_skip() {
        return;
    }
    let ran = db(&[
        "study",
        "--workload",
        "tpcc",
        "--warehouses",
        "1",
        "--fillfactor",
        "100,70",
        "--threads",
        "2",
        "--time",
        "1s",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    common::assert_matches_schema(&v, "study");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let logical = |i: usize| rows[i]["relation_bytes"].as_f64().unwrap();
    assert!(
        logical(1) > logical(0) * 1.2,
        "fillfactor 70 takes more pages: {} vs {}",
        logical(1),
        logical(0)
    );
    assert!(rows.iter().all(|r| r["tps"].as_f64().unwrap() > 0.0));
}

/// Raises `flag` once a load connection of this process runs a statement
/// matching `pattern` (SQL LIKE) on the server of `pgdata`; returns when
/// raised, or when `done` is set first.
fn interrupt_when(
    pgdata: &std::path::Path,
    pattern: &str,
    flag: &std::sync::atomic::AtomicBool,
    done: &std::sync::atomic::AtomicBool,
) -> Option<std::time::Instant> {
    use std::sync::atomic::Ordering;
    common::after_server_ready(pgdata, std::time::Duration::ZERO);
    let cluster = csdchar_pgcluster::ManagedCluster::start(&csdchar_pgcluster::ClusterSpec {
        pgdata: Some(pgdata.to_path_buf()),
        ..Default::default()
    })
    .ok()?;
    let sql = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'csdchar-load-%' \
         AND state = 'active' AND query ILIKE '{pattern}'"
    );
    while !done.load(Ordering::Relaxed) {
        let out = std::process::Command::new("su")
            .args(["postgres", "-c"])
            .arg(format!(
                "psql -h {} -p {} -d postgres -Atc \"{sql}\"",
                cluster.socket_dir().display(),
                cluster.port()
            ))
            .output();
        let busy = out
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        if busy.as_deref().is_some_and(|n| n != "0" && !n.is_empty()) {
            flag.store(true, Ordering::Relaxed);
            return Some(std::time::Instant::now());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    None
}

/// Issue 30 rows 5, 6 and 10: a prepare interrupted while loading, then
/// while building keys, names what is complete and a resume that works
/// from there; run and check refuse the cut load before doing anything.
#[test]
fn an_interrupted_tpcc_prepare_names_what_is_complete_and_resumes_from_any_point() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    if !common::postgres_or_skip() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-tpcc-cut")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pg");
    let p = pgdata.to_str().unwrap();
    let prepare = [
        "prepare",
        "--pgdata",
        p,
        "--workload",
        "tpcc",
        "--warehouses",
        "2",
        "--threads",
        "2",
    ];
    for (phase, pattern, range) in [
        ("load", "COPY%", None),
        ("keys", "alter table % add constraint %", Some("1-2")),
    ] {
        let flag = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let (f2, d2, watched) = (Arc::clone(&flag), Arc::clone(&done), pgdata.clone());
        let watcher = std::thread::spawn(move || interrupt_when(&watched, pattern, &f2, &d2));
        let mut args = prepare.to_vec();
        if let Some(r) = range {
            args.extend(["--warehouse-range", r]);
        }
        let ran = db_with_interrupt(&args, flag);
        let ended = std::time::Instant::now();
        done.store(true, Ordering::Relaxed);
        let raised = watcher.join().unwrap();
        let raised =
            raised.unwrap_or_else(|| panic!("{phase}: never saw {pattern}: {}", ran.stderr));
        assert_eq!(ran.outcome.exit_code, 130, "{phase}: {}", ran.stderr);
        assert!(
            ended.duration_since(raised) < std::time::Duration::from_secs(10),
            "{phase}: ended {:?} after the interrupt",
            ended.duration_since(raised)
        );
        let e = &ran.stderr;
        assert!(
            e.contains("warehouses complete: ")
                && e.contains("missing: ")
                && e.contains("--warehouse-range 1-2")
                && e.contains("--seed 1"),
            "{phase}: {e}"
        );
        if phase == "keys" {
            assert!(
                e.contains("warehouses complete: 1-2;") && e.contains("keys ("),
                "{e}"
            );
        }
        // Row 6: check fails on the cut load, naming what is missing.
        let check = db(&["check", "--pgdata", p, "--workload", "tpcc"]);
        assert_eq!(check.outcome.exit_code, 1, "{phase}: {}", check.stderr);
        assert!(
            check.stderr.contains("the load is incomplete"),
            "{}",
            check.stderr
        );
        // Row 5: run refuses it before running.
        let t0 = std::time::Instant::now();
        let run = db(&["run", "--pgdata", p, "--workload", "tpcc", "--time", "5s"]);
        assert_eq!(run.outcome.exit_code, 1, "{phase}: {}", run.stderr);
        assert!(
            run.stderr.contains("the load is incomplete")
                && run.stderr.contains("--warehouse-range"),
            "{}",
            run.stderr
        );
        assert!(t0.elapsed() < std::time::Duration::from_secs(5), "it ran");
    }
    // The resume the messages name finishes the load from where it stopped.
    let mut args = prepare.to_vec();
    args.extend(["--warehouse-range", "1-2"]);
    let resumed = db(&args);
    assert_eq!(resumed.outcome.exit_code, 0, "{}", resumed.stderr);
    let check = db(&["check", "--pgdata", p, "--workload", "tpcc"]);
    assert_eq!(check.outcome.exit_code, 0, "{}", check.stderr);
    assert_eq!(check.stdout.matches("holds").count(), 4, "{}", check.stdout);
}

fn db_with_interrupt(
    args: &[&str],
    flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> common::Ran {
    let mut a = vec!["db"];
    a.extend_from_slice(args);
    common::csdchar_with_interrupt(&a, flag)
}

/// Issue 38 row 15: a bmsql_config with bad values (warehouses 0, -1 or
/// 'abc'; nURandCLast -7, 'xyz' or missing; the table gone) is named with
/// the key and the value, and the advice never drops the complete load:
/// the resume it advises writes bmsql_config anew and loads nothing.
#[test]
fn a_bad_bmsql_config_is_named_and_mended_without_dropping_the_load() {
    if !common::postgres_or_skip() {
        return;
    }
    use csdchar_pgcluster::{ClusterSpec, ManagedCluster};
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let url = cluster.conninfo("postgres");
    let with = |step: &str, extra: &[&str]| {
        let mut a = vec![step, "--workload", "tpcc", "--url", url.as_str()];
        a.extend_from_slice(extra);
        db(&a)
    };
    let ran = with("prepare", &["--warehouses", "1"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let orders = common::psql(&cluster, "SELECT count(*) FROM bmsql_oorder");
    let set = |key: &str, value: &str| {
        common::psql(
            &cluster,
            &format!("UPDATE bmsql_config SET cfg_value = {value} WHERE cfg_name = '{key}'"),
        );
    };
    let good_c_last = common::psql(
        &cluster,
        "SELECT cfg_value FROM bmsql_config WHERE cfg_name = 'nURandCLast'",
    );
    for (key, value, says) in [
        (
            "warehouses",
            "'0'",
            "bmsql_config's warehouses is '0', not a warehouse count",
        ),
        ("warehouses", "'-1'", "bmsql_config's warehouses is '-1'"),
        ("warehouses", "'abc'", "bmsql_config's warehouses is 'abc'"),
        (
            "nURandCLast",
            "'-7'",
            "bmsql_config's nURandCLast is '-7', not a NURand C for C_LAST (0-255)",
        ),
        (
            "nURandCLast",
            "'xyz'",
            "bmsql_config's nURandCLast is 'xyz'",
        ),
        ("nURandCLast", "NULL", "bmsql_config's nURandCLast is NULL"),
    ] {
        set(key, value);
        for step in ["check", "run"] {
            let extra: &[&str] = if step == "run" {
                &["--time", "1s"]
            } else {
                &[]
            };
            let ran = with(step, extra);
            assert_eq!(
                ran.outcome.exit_code, 1,
                "{key}={value} {step}: {}",
                ran.stderr
            );
            assert!(
                ran.stderr.contains(says),
                "{key}={value} {step}: {}",
                ran.stderr
            );
            assert!(
                !ran.stderr.contains("--force") || ran.stderr.contains("without --force"),
                "{key}={value} {step}: advice that would drop the load: {}",
                ran.stderr
            );
            assert!(
                ran.stderr.contains("--warehouse-range 1-1"),
                "{key}={value} {step}: {}",
                ran.stderr
            );
        }
        set("warehouses", "'1'");
        set("nURandCLast", &format!("'{good_c_last}'"));
    }
    // A key missing, then the whole table: named, and mended by the resume advised.
    common::psql(
        &cluster,
        "DELETE FROM bmsql_config WHERE cfg_name = 'nURandCLast'",
    );
    let ran = with("check", &[]);
    assert!(
        ran.stderr.contains("bmsql_config has no nURandCLast row"),
        "{}",
        ran.stderr
    );
    common::psql(&cluster, "DROP TABLE bmsql_config");
    let ran = with("check", &[]);
    assert_eq!(ran.outcome.exit_code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("the table bmsql_config is missing")
            && ran.stderr.contains("the data is complete")
            && !ran.stderr.contains("start over"),
        "{}",
        ran.stderr
    );
    let ran = with(
        "prepare",
        &[
            "--warehouses",
            "1",
            "--warehouse-range",
            "1-1",
            "--seed",
            "1",
        ],
    );
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("bmsql_config written anew"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("0 warehouse(s)"),
        "loads nothing: {}",
        ran.stderr
    );
    assert_eq!(
        common::psql(&cluster, "SELECT count(*) FROM bmsql_oorder"),
        orders,
        "the load's rows are untouched"
    );
    assert_eq!(
        common::psql(
            &cluster,
            "SELECT cfg_value FROM bmsql_config WHERE cfg_name = 'nURandCLast'"
        ),
        good_c_last,
        "the seed's constant, the load's"
    );
    let ran = with("check", &[]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
}
