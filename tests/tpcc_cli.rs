//! `csdchar db … --workload tpcc` end to end: prepare, check, a terminal
//! sweep with the result's TPC-C figures, the terminal limit, the study.

mod common;

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
