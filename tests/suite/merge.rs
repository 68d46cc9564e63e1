//! `csdchar report --merge`: results of one run on several hosts merge
//! exactly. Property: merging two hosts' results gives what one run holding
//! both hosts' histograms reports — every count and every percentile equal,
//! step and interval, db (per transaction type too) and block. Plus: the
//! histograms survive the JSON round trip, old results without histograms
//! are refused naming the file, and `--start-at` is recorded in the spec.

use crate::common;

use std::path::{Path, PathBuf};

use csdchar_core::hdr;
use csdchar_core::result::block::{BlockResult, IntervalDirection, IntervalSample};
use csdchar_core::result::db::{DbInterval, DbResult, DbStep, DbTxType};
use csdchar_core::stats::LatencyRecorder;
use csdchar_report::merge::{merge_block, merge_db};
use csdchar_report::{InputSpec, LoadedResult, ReportInput, build_from_inputs};
use proptest::prelude::*;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(rel)
}

fn load_db(rel: &str) -> DbResult {
    serde_json::from_slice(&std::fs::read(fixture(rel)).unwrap()).unwrap()
}

/// One host's transactions: per interval (1 s each), (type, latency ns).
type DbHost = Vec<Vec<(usize, u64)>>;

const KINDS: [&str; 5] = [
    "new_order",
    "payment",
    "order_status",
    "delivery",
    "stock_level",
];

/// A TPC-C result with one step of `threads` clients that ran `host`, built
/// the way the runner and `db run` build it (precise step histograms,
/// coarse interval ones, interval rates over 1 s).
fn db_result(threads: u32, host: &DbHost) -> DbResult {
    let mut r = load_db("tpcc-ssd/db-tpcc.json");
    let ps: Vec<f64> = vec![50.0, 95.0, 99.0, 99.9];
    r.spec.percentiles = vec![95.0, 99.0];
    let mut total = LatencyRecorder::precise();
    let mut kinds: Vec<(u64, LatencyRecorder)> = KINDS
        .iter()
        .map(|_| (0, LatencyRecorder::precise()))
        .collect();
    let mut intervals = Vec::new();
    for (k, iv) in host.iter().enumerate() {
        let mut lat = LatencyRecorder::coarse();
        for &(kind, ns) in iv {
            total.record(ns);
            kinds[kind].0 += 1;
            kinds[kind].1.record(ns);
            lat.record(ns);
        }
        let n = iv.len() as f64;
        intervals.push(DbInterval {
            t_s: (k + 1) as f64,
            tps: n,
            qps: 4.0 * n,
            reads_per_s: 2.0 * n,
            writes_per_s: n,
            others_per_s: n,
            lat_pct_ms: lat.hist_percentile(95.0) as f64 / 1e6,
            errors_per_s: 0.0,
            io: None,
            lat_hdr_histogram: Some(lat.encoded()),
        });
    }
    let n = total.count();
    let secs = host.len().max(1) as f64;
    let rollbacks = host
        .iter()
        .flatten()
        .filter(|(k, ns)| *k == 0 && ns % 2 == 0)
        .count() as u64;
    let step = DbStep {
        start: None,
        threads,
        elapsed_s: secs,
        transactions: n,
        reads: 2 * n,
        writes: n,
        others: n,
        tps: n as f64 / secs,
        qps: (4 * n) as f64 / secs,
        // Deliveries stand for retried errors, even New-Order latencies for
        // rollbacks: counts that add up across hosts, as real ones do.
        errors: [("40001".to_string(), kinds[3].0)].into_iter().collect(),
        reconnects: 0,
        rollbacks,
        tpmc: Some(kinds[0].0 as f64 * 60.0 / secs),
        tpm_total: Some(n as f64 * 60.0 / secs),
        by_type: KINDS
            .iter()
            .zip(&kinds)
            .map(|(name, (c, l))| DbTxType {
                name: name.to_string(),
                transactions: *c,
                rollbacks: if *name == "new_order" { rollbacks } else { 0 },
                share_pct: 100.0 * *c as f64 / n.max(1) as f64,
                latency: l.summary(&ps),
            })
            .collect(),
        io: None,
        latency: total.summary(&ps),
        intervals,
        client_io: Some("uring".to_string()),
        client_threads: None,
        script: None,
        transport: None,
        tls_protocol: None,
        tls_cipher: None,
        before: None,
        after: None,
    };
    r.steps = vec![step];
    r.interrupted = false;
    r.error = None;
    r
}

/// Both hosts' transactions as one run: interval by interval together.
fn together(a: &DbHost, b: &DbHost) -> DbHost {
    (0..a.len().max(b.len()))
        .map(|k| {
            let mut v = a.get(k).cloned().unwrap_or_default();
            v.extend(b.get(k).cloned().unwrap_or_default());
            v
        })
        .collect()
}

fn latency() -> impl Strategy<Value = u64> {
    prop_oneof![
        50_000u64..5_000_000,
        1_000u64..1_000_000_000,
        1u64..10_000_000_000_000
    ]
}

/// Two hosts' transactions over the same number of intervals.
fn db_hosts() -> impl Strategy<Value = (DbHost, DbHost)> {
    (1usize..5).prop_flat_map(|n| {
        let host = || {
            proptest::collection::vec(proptest::collection::vec((0usize..5, latency()), 0..40), n)
        };
        (host(), host())
    })
}

/// Block I/Os (is read, slat, clat) per interval.
type BlockHost = Vec<Vec<(bool, u64, u64)>>;

fn block_hosts() -> impl Strategy<Value = (BlockHost, BlockHost)> {
    (1usize..5).prop_flat_map(|n| {
        let host = || {
            proptest::collection::vec(
                proptest::collection::vec((any::<bool>(), latency(), latency()), 1..40),
                n,
            )
        };
        (host(), host())
    })
}

fn report_terminal(result: LoadedResult) -> String {
    let input = ReportInput {
        path: PathBuf::from("r.json"),
        label: "ssd".into(),
        result,
    };
    build_from_inputs(vec![input], Vec::new()).unwrap().terminal
}

fn assert_same_latency(
    m: &csdchar_core::stats::LatencyStats,
    w: &csdchar_core::stats::LatencyStats,
) -> Result<(), TestCaseError> {
    prop_assert_eq!((m.count, m.min_ns, m.max_ns), (w.count, w.min_ns, w.max_ns));
    prop_assert_eq!(&m.percentiles, &w.percentiles);
    prop_assert_eq!(&m.hdr_histogram, &w.hdr_histogram);
    prop_assert!((m.mean_ns - w.mean_ns).abs() <= 1e-9 * w.mean_ns.max(1.0));
    prop_assert!((m.stddev_ns - w.stddev_ns).abs() <= 1e-6 * w.mean_ns.max(1.0));
    Ok(())
}

proptest! {
    // Each case builds two whole reports (tables, charts, PNGs): few cases.
    #![proptest_config(ProptestConfig { cases: 4, ..ProptestConfig::default() })]

    #[test]
    fn the_report_of_a_merge_is_the_report_of_one_run_with_both_histograms((a, b) in db_hosts()) {
        let m = merge_db(&[&db_result(4, &a), &db_result(4, &b)]).unwrap();
        let both = db_result(8, &together(&a, &b));
        prop_assert_eq!(
            report_terminal(LoadedResult::Db(Box::new(m))),
            report_terminal(LoadedResult::Db(Box::new(both)))
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn merged_db_results_equal_one_run_with_both_histograms((a, b) in db_hosts()) {
        let (ra, rb) = (db_result(4, &a), db_result(4, &b));
        let both = db_result(8, &together(&a, &b));
        let m = merge_db(&[&ra, &rb]).unwrap();
        let (ms, ws) = (&m.steps[0], &both.steps[0]);
        prop_assert_eq!(ms.threads, 8);
        prop_assert_eq!(
            (ms.transactions, ms.reads, ms.writes, ms.others, ms.rollbacks),
            (ws.transactions, ws.reads, ws.writes, ws.others, ws.rollbacks)
        );
        prop_assert_eq!(&ms.errors, &ws.errors);
        prop_assert_eq!(ms.tps, ws.tps);
        prop_assert_eq!(ms.tpmc, ws.tpmc);
        assert_same_latency(&ms.latency, &ws.latency)?;
        for (mt, wt) in ms.by_type.iter().zip(&ws.by_type) {
            prop_assert_eq!(&mt.name, &wt.name);
            prop_assert_eq!(mt.transactions, wt.transactions);
            prop_assert_eq!(mt.share_pct, wt.share_pct);
            assert_same_latency(&mt.latency, &wt.latency)?;
        }
        prop_assert_eq!(ms.intervals.len(), ws.intervals.len());
        for (mi, wi) in ms.intervals.iter().zip(&ws.intervals) {
            prop_assert_eq!(mi.tps, wi.tps);
            prop_assert_eq!(mi.lat_pct_ms, wi.lat_pct_ms);
            prop_assert_eq!(&mi.lat_hdr_histogram, &wi.lat_hdr_histogram);
        }
    }

    #[test]
    fn merged_block_results_equal_one_run_with_both_histograms((a, b) in block_hosts()) {
        let both: Vec<Vec<_>> = a.iter().zip(&b).map(|(x, y)| x.iter().chain(y).copied().collect()).collect();
        let (ra, rb, rw) = (block_result(1, &a), block_result(1, &b), block_result(2, &both));
        let m = merge_block(&[&ra, &rb]).unwrap();
        for (md, wd) in [(&m.read, &rw.read), (&m.write, &rw.write)] {
            let (md, wd) = (md.as_ref().unwrap(), wd.as_ref().unwrap());
            prop_assert_eq!((md.ios, md.bytes), (wd.ios, wd.bytes));
            prop_assert_eq!(md.iops, wd.iops);
            assert_same_latency(&md.slat, &wd.slat)?;
            assert_same_latency(&md.clat, &wd.clat)?;
            assert_same_latency(&md.lat, &wd.lat)?;
        }
        prop_assert_eq!(m.spec.numjobs, 2);
        prop_assert_eq!(m.jobs.len(), 2);
        for (mi, wi) in m.intervals.iter().zip(&rw.intervals) {
            prop_assert_eq!(mi.read.unwrap().ios, wi.read.unwrap().ios);
            prop_assert_eq!(mi.write.unwrap().lat_p99_ns, wi.write.unwrap().lat_p99_ns);
            prop_assert_eq!(mi.read.unwrap().lat_p99_ns, wi.read.unwrap().lat_p99_ns);
            prop_assert_eq!(&mi.read_lat_hdr_histogram, &wi.read_lat_hdr_histogram);
            prop_assert_eq!(&mi.write_lat_hdr_histogram, &wi.write_lat_hdr_histogram);
        }
    }
}

/// A randrw block result of `numjobs` jobs over 1 s intervals of I/Os
/// (is read, slat, clat), built the way the engine builds it.
fn block_result(numjobs: u32, ios: &BlockHost) -> BlockResult {
    let mut r: BlockResult =
        serde_json::from_slice(&std::fs::read(fixture("block.json")).unwrap()).unwrap();
    let ps = r.spec.percentiles.clone();
    r.spec.numjobs = numjobs;
    r.jobs.truncate(1);
    let job = r.jobs[0].clone();
    r.jobs = (0..numjobs)
        .map(|j| csdchar_core::result::block::JobSummary {
            job: j,
            ..job.clone()
        })
        .collect();
    let rec = || {
        [
            LatencyRecorder::precise(),
            LatencyRecorder::precise(),
            LatencyRecorder::precise(),
        ]
    };
    let mut dirs = [rec(), rec()];
    let mut counts = [0u64; 2];
    r.intervals = ios
        .iter()
        .enumerate()
        .map(|(k, iv)| {
            let mut lat = [LatencyRecorder::coarse(), LatencyRecorder::coarse()];
            let mut n = [0u64; 2];
            for &(read, slat, clat) in iv {
                let d = usize::from(!read);
                dirs[d][0].record(slat);
                dirs[d][1].record(clat);
                dirs[d][2].record(slat + clat);
                lat[d].record(slat + clat);
                n[d] += 1;
                counts[d] += 1;
            }
            let dir = |d: usize| IntervalDirection {
                ios: n[d],
                bytes: n[d] * 4096,
                iops: n[d] as f64,
                bw_bytes_per_s: (n[d] * 4096) as f64,
                lat_mean_ns: lat[d].mean(),
                lat_p99_ns: lat[d].hist_percentile(99.0),
            };
            IntervalSample {
                index: k as u64,
                t_ms: (k as u64 + 1) * 1000,
                duration_ms: 1000,
                read: Some(dir(0)),
                write: Some(dir(1)),
                trim: None,
                read_lat_hdr_histogram: Some(lat[0].encoded()),
                write_lat_hdr_histogram: Some(lat[1].encoded()),
                trim_lat_hdr_histogram: None,
            }
        })
        .collect();
    r.elapsed_ns = ios.len() as u64 * 1_000_000_000;
    for (d, summary) in [r.read.as_mut().unwrap(), r.write.as_mut().unwrap()]
        .into_iter()
        .enumerate()
    {
        summary.ios = counts[d];
        summary.bytes = counts[d] * 4096;
        summary.iops = counts[d] as f64 / ios.len() as f64;
        summary.bw_bytes_per_s = summary.bytes as f64 / ios.len() as f64;
        summary.slat = dirs[d][0].summary(&ps);
        summary.clat = dirs[d][1].summary(&ps);
        summary.lat = dirs[d][2].summary(&ps);
    }
    r
}

#[test]
fn histograms_survive_the_json_round_trip() {
    let host: DbHost = vec![vec![(0, 1_234_567), (1, 9_999), (4, 77_000_000)]; 3];
    let r = db_result(2, &host);
    let back: DbResult = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back, r);
    let text = back.steps[0].latency.hdr_histogram.as_deref().unwrap();
    assert!(text.starts_with(hdr::BASE64_PREFIX), "{text}");
    let h = hdr::decode(text).unwrap();
    assert_eq!(h.len(), 9);
    assert_eq!(hdr::encode(&h), text);
}

#[test]
fn merge_of_results_without_histograms_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    // An old result (no histograms) and a new one of the same run.
    let old = fixture("tpcc-ssd/db-tpcc.json");
    let mut new = load_db("tpcc-ssd/db-tpcc.json");
    let fresh = db_result(1, &vec![vec![(0, 5_000_000)]; 5]);
    new.steps[0] = fresh.steps[0].clone();
    new.spec = serde_json::from_slice::<DbResult>(&std::fs::read(&old).unwrap())
        .unwrap()
        .spec;
    let new_path = dir.path().join("host-b.json");
    std::fs::write(&new_path, serde_json::to_vec(&new).unwrap()).unwrap();
    let out = dir.path().join("out");
    let ran = common::csdchar(&[
        "report",
        "--merge",
        "--out",
        out.to_str().unwrap(),
        new_path.to_str().unwrap(),
        old.to_str().unwrap(),
    ]);
    assert_eq!(ran.outcome.exit_code, 2, "{}", ran.stderr);
    assert_eq!(ran.stderr.lines().count(), 1, "{}", ran.stderr);
    assert!(ran.stderr.contains("db-tpcc.json"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("no latency histograms"),
        "{}",
        ran.stderr
    );
    assert!(!out.exists(), "nothing written");
    // Without --merge the same files report as before.
    let ran = common::csdchar(&[
        "report",
        "-q",
        "--out",
        out.to_str().unwrap(),
        new_path.to_str().unwrap(),
        old.to_str().unwrap(),
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
}

#[test]
fn cli_merges_two_hosts_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::create_dir(&hosts).unwrap();
    let a = db_result(4, &vec![vec![(0, 2_000_000), (1, 3_000_000)]; 5]);
    let b = db_result(4, &vec![vec![(2, 4_000_000)]; 5]);
    for (name, r) in [("a.json", &a), ("b.json", &b)] {
        std::fs::write(hosts.join(name), serde_json::to_vec(r).unwrap()).unwrap();
    }
    let labelled = format!("ssd={}", hosts.display());
    // Unrelated results pass through: a block result is not merged with db ones.
    let block = fixture("block.json").display().to_string();
    let out = dir.path().join("out");
    let ran = common::csdchar(&[
        "report",
        "--merge",
        "-q",
        "--out",
        out.to_str().unwrap(),
        "--label",
        &labelled,
        &block,
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("note: merged 2 db results as 'ssd'"),
        "{}",
        ran.stderr
    );
    // The summary table shows one row at 8 threads with both hosts' transactions.
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| 8 |") || md.contains("| 8"), "{md}");
    let specs = [InputSpec {
        path: hosts.clone(),
        label: Some("ssd".into()),
    }];
    let merged =
        csdchar_report::build_report_with(&specs, csdchar_report::ReportOptions { merge: true })
            .unwrap();
    let both = db_result(
        8,
        &together(
            &vec![vec![(0, 2_000_000), (1, 3_000_000)]; 5],
            &vec![vec![(2, 4_000_000)]; 5],
        ),
    );
    assert_eq!(
        merged.terminal,
        report_terminal(LoadedResult::Db(Box::new(both)))
    );
}

#[test]
fn start_at_is_recorded_in_the_block_spec() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let at = std::time::SystemTime::now() + std::time::Duration::from_millis(1500);
    let text = csdchar_core::start_at::format_rfc3339_millis(at);
    let t0 = std::time::Instant::now();
    let ran = common::csdchar(&[
        "block",
        "--engine",
        "null",
        "--rw",
        "randread",
        "--size",
        "4m",
        "--start-at",
        &text,
        "--output-format",
        "json",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(
        t0.elapsed() >= std::time::Duration::from_millis(1000),
        "waited for the start"
    );
    let r: BlockResult = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(r.spec.start_at.as_deref(), Some(text.as_str()));
    assert!(r.read.unwrap().lat.hdr_histogram.is_some());
    assert!(
        r.intervals
            .iter()
            .all(|s| s.read_lat_hdr_histogram.is_some())
    );
}

#[test]
fn ctrl_c_ends_the_wait_for_start_at() {
    let at = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    let text = csdchar_core::start_at::format_rfc3339_millis(at);
    let interrupt = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = std::sync::Arc::clone(&interrupt);
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let t0 = std::time::Instant::now();
    let ran = common::csdchar_with_interrupt(
        &[
            "block",
            "--engine",
            "null",
            "--size",
            "4m",
            "--start-at",
            &text,
            "--output-format",
            "json",
        ],
        interrupt,
    );
    stopper.join().unwrap();
    assert_eq!(ran.outcome.exit_code, 130, "{}", ran.stderr);
    assert!(t0.elapsed() < std::time::Duration::from_secs(10));
}

/// Issue 30 row 9: `--merge` never adds a result to itself, and results of
/// different runs (workloads, kinds) are refused, not reported side by side.
#[test]
fn merge_refuses_the_same_result_twice_and_results_of_different_runs() {
    let dir = tempfile::tempdir().unwrap();
    let a = db_result(4, &vec![vec![(0, 2_000_000), (1, 3_000_000)]; 5]);
    let a_path = dir.path().join("a.json");
    std::fs::write(&a_path, serde_json::to_vec(&a).unwrap()).unwrap();
    let copy = dir.path().join("a-copy.json");
    std::fs::copy(&a_path, &copy).unwrap();
    let a_s = a_path.to_str().unwrap();
    let tpcc = fixture("tpcc-ssd/db-tpcc.json").display().to_string();
    let pgio = fixture("pgio-zram/db-pgio.json").display().to_string();
    let block = fixture("block.json").display().to_string();
    let out = dir.path().join("out");
    for (files, says) in [
        (vec![a_s, copy.to_str().unwrap()], "the same result as"),
        (vec![tpcc.as_str(), pgio.as_str()], "workload tpcc vs pgio"),
        (
            vec![pgio.as_str(), block.as_str()],
            "a db result and a block result",
        ),
    ] {
        let mut args = vec!["report", "--merge", "-q", "--out", out.to_str().unwrap()];
        args.extend(&files);
        let ran = common::csdchar(&args);
        assert_eq!(ran.outcome.exit_code, 2, "{files:?}: {}", ran.stderr);
        assert_eq!(ran.stderr.lines().count(), 1, "{}", ran.stderr);
        assert!(ran.stderr.contains("--merge"), "{}", ran.stderr);
        assert!(ran.stderr.contains(says), "{files:?}: {}", ran.stderr);
        let names: Vec<&str> = files
            .iter()
            .map(|f| {
                std::path::Path::new(f)
                    .file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
            })
            .collect();
        assert!(
            names.iter().all(|n| ran.stderr.contains(n)),
            "names the files {names:?}: {}",
            ran.stderr
        );
        assert!(!out.exists(), "nothing written");
    }
}

/// Issue 38 row 16: hosts that connected differently (plain TCP, TLS) merge
/// with a note saying so; results of two servers are not one run.
#[test]
fn merge_states_transport_differences_and_refuses_two_servers() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::create_dir(&hosts).unwrap();
    let mut a = db_result(4, &vec![vec![(0, 2_000_000), (1, 3_000_000)]; 5]);
    let mut b = db_result(4, &vec![vec![(2, 4_000_000)]; 5]);
    a.steps[0].transport = Some("tcp".into());
    b.steps[0].transport = Some("tls".into());
    b.steps[0].tls_protocol = Some("TLSv1.3".into());
    b.steps[0].tls_cipher = Some("TLS13_AES_256_GCM_SHA384".into());
    let write = |name: &str, r: &DbResult| {
        let p = hosts.join(name);
        std::fs::write(&p, serde_json::to_vec(r).unwrap()).unwrap();
        p.display().to_string()
    };
    let (a_path, b_path) = (write("a.json", &a), write("b.json", &b));
    let out = dir.path().join("out");
    let ran = common::csdchar(&[
        "report",
        "--merge",
        "-q",
        "--out",
        out.to_str().unwrap(),
        &a_path,
        &b_path,
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("connected differently")
            && ran.stderr.contains("a.json: tcp")
            && ran
                .stderr
                .contains("b.json: tls TLSv1.3 TLS13_AES_256_GCM_SHA384"),
        "{}",
        ran.stderr
    );
    // The same transport on both: no such note.
    b.steps[0].transport = Some("tcp".into());
    b.steps[0].tls_protocol = None;
    b.steps[0].tls_cipher = None;
    let b_path = write("b.json", &b);
    let ran = common::csdchar(&[
        "report",
        "--merge",
        "-q",
        "--out",
        out.to_str().unwrap(),
        &a_path,
        &b_path,
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(
        !ran.stderr.contains("connected differently"),
        "{}",
        ran.stderr
    );
    // Another server: not one run.
    b.server_version = format!("{} (another build)", a.server_version);
    let b_path = write("b.json", &b);
    let out2 = dir.path().join("out2");
    let ran = common::csdchar(&[
        "report",
        "--merge",
        "-q",
        "--out",
        out2.to_str().unwrap(),
        &a_path,
        &b_path,
    ]);
    assert_eq!(ran.outcome.exit_code, 2, "{}", ran.stderr);
    assert_eq!(ran.stderr.lines().count(), 1, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("--merge") && ran.stderr.contains("one server"),
        "{}",
        ran.stderr
    );
    assert!(!out2.exists(), "nothing written");
}
