//! `csdchar db … --workload pgio` end to end: the run's RIOPS next to the
//! device's reads in the result, per step and per interval.

use crate::common;

// The tests whose runs take a different path on the io_uring client driver run again on it
// (the others load, check or clean up, where the driver plays no part).
crate::on_uring_too!("pgio_run_records_the_io_correlation");

#[test]
fn pgio_run_records_the_io_correlation() {
    if !common::postgres_or_skip() {
        return;
    }
    let ran = common::csdchar(&[
        "db",
        "run",
        "--workload",
        "pgio",
        "--schemas",
        "2",
        "--pgio-size",
        "16m",
        "--threads",
        "1",
        "--update-pct",
        "20",
        "--time",
        "2s",
        "--report-interval",
        "500ms",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    common::assert_matches_schema(&v, "db");
    let spec = &v["spec"];
    assert_eq!(spec["workload"], "pgio");
    assert_eq!(spec["pgio"]["schemas"], 2);
    assert_eq!(spec["pgio"]["blocks_per_schema"], 2048);
    assert_eq!(spec["pgio"]["update_pct"], 20);
    let step = &v["steps"][0];
    // --threads is per schema, as in pgio.
    assert_eq!(step["threads"], 2);
    let kinds: Vec<(&str, u64)> = step["by_type"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap(),
                k["transactions"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(kinds.len(), 2);
    let (sel, upd) = (kinds[0].1 as f64, kinds[1].1 as f64);
    assert_eq!((kinds[0].0, kinds[1].0), ("select", "update"));
    // Each transaction is an update with probability 0.2: the share of a short run on a loaded
    // machine (a few hundred transactions) is allowed four standard deviations of the binomial.
    let share = upd / (sel + upd);
    let allowed = 4.0 * (0.2 * 0.8 / (sel + upd)).sqrt();
    assert!(
        (share - 0.20).abs() < allowed.max(0.03),
        "update share {share} of {} transactions",
        sel + upd
    );
    // The correlation is recorded for the step and for its intervals.
    let io = &step["io"];
    assert!(io["riops"].as_f64().is_some(), "{io}");
    assert!(io["hits_per_s"].as_f64().unwrap() > 0.0, "{io}");
    let intervals = step["intervals"].as_array().unwrap();
    assert!(intervals.len() >= 3);
    assert!(intervals.iter().all(|i| i["io"]["riops"].is_number()));
}

/// Issue 30 row 7: a run asked for another --pgio-size than the tables hold
/// draws its keys from, and records, the tables' size, with a note.
#[test]
fn a_run_goes_by_the_size_the_pgio_tables_hold() {
    if !common::postgres_or_skip() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-pgio-size")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pg");
    let p = pgdata.to_str().unwrap();
    let prepared = common::csdchar(&[
        "db",
        "prepare",
        "--pgdata",
        p,
        "--workload",
        "pgio",
        "--pgio-size",
        "8m",
    ]);
    assert_eq!(prepared.outcome.exit_code, 0, "{}", prepared.stderr);
    for (given, noted) in [("16m", true), ("8m", false)] {
        let ran = common::csdchar(&[
            "db",
            "run",
            "--pgdata",
            p,
            "--workload",
            "pgio",
            "--pgio-size",
            given,
            "--threads",
            "1",
            "--time",
            "1s",
            "--output-format",
            "json",
        ]);
        assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
        assert_eq!(
            ran.stderr
                .contains("--pgio-size 16.00MiB ignored, using the 1024 blocks"),
            noted,
            "{}",
            ran.stderr
        );
        let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
        assert_eq!(v["spec"]["pgio"]["blocks_per_schema"], 1024, "{given}");
    }
}
