//! fio's clat histogram log (`write_hist_log`, `log_hist_msec`,
//! `log_hist_coarseness`): read by fio's own `fiologparser_hist.py` and
//! compared with fio's log of the same job. The tool ships with fio
//! (Debian: `/usr/share/doc/fio/fiologparser_hist.py.gz`) and needs Python's
//! numpy and pandas, which `scripts/test.sh` installs; once they are there it
//! sets CSDCHAR_REQUIRE_FIO_HIST and the tests cannot skip.

use crate::common;
use crate::fio_parity::{fio, logs_in};

use std::path::{Path, PathBuf};

use csdchar_core::histlog::{PLAT_NR, plat_val_to_idx};

/// `(python, fiologparser_hist.py)`: a Python that has numpy and pandas,
/// and fio's tool (copied into `dir` when Debian ships it compressed).
fn hist_parser(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let python = ["/usr/bin/python3", "python3"].into_iter().find(|p| {
        std::process::Command::new(p)
            .args(["-c", "import numpy, pandas"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let script = if Path::new("/usr/bin/fiologparser_hist.py").is_file() {
        Some(PathBuf::from("/usr/bin/fiologparser_hist.py"))
    } else {
        let gz = Path::new("/usr/share/doc/fio/fiologparser_hist.py.gz");
        gz.is_file().then(|| {
            let out = std::process::Command::new("gzip")
                .arg("-dc")
                .arg(gz)
                .output()
                .unwrap();
            assert!(out.status.success());
            let p = dir.join("fiologparser_hist.py");
            std::fs::write(&p, out.stdout).unwrap();
            p
        })
    };
    let found = python.zip(script).map(|(p, s)| (PathBuf::from(p), s));
    assert!(
        found.is_some() || std::env::var_os("CSDCHAR_REQUIRE_FIO_HIST").is_none(),
        "fiologparser_hist.py or Python's numpy and pandas are missing"
    );
    if found.is_none() {
        eprintln!("skipped: fiologparser_hist.py or Python's numpy and pandas are missing");
    }
    found
}

/// fio's tool over `log` as one interval without weighting: (samples, min,
/// median, p90, p99, max), ns.
fn parse_with_fio_tool(tool: &(PathBuf, PathBuf), log: &Path) -> [f64; 6] {
    let out = std::process::Command::new(&tool.0)
        .arg(&tool.1)
        .args(["--noweight", "-i", "1000000", "--percentiles", "90:99"])
        .arg(log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    // end-time, samples, min, avg, median, 90%, 99%, max
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "one interval: {text}");
    let v: Vec<f64> = lines[1]
        .split(',')
        .map(|c| c.trim().parse().unwrap())
        .collect();
    [v[1], v[2], v[4], v[5], v[6], v[7]]
}

/// Lower and upper edges of fio's bucket `idx`, ns.
fn bucket_edges(idx: u64) -> (f64, f64) {
    if idx < 128 {
        return (idx as f64, idx as f64 + 1.0);
    }
    let error_bits = (idx >> 6) - 1;
    let base = 1u64 << (error_bits + 6);
    let lo = base + (idx % 64) * (1 << error_bits);
    (lo as f64, (lo + (1 << error_bits)) as f64)
}

/// The job: 3 s of paced 4k random reads of a file, with the hist log and
/// (for csdchar's exact values) the latency logs.
fn job(dir: &Path, who: &str, extra: &str) -> PathBuf {
    let out = dir.join(who);
    std::fs::create_dir(&out).unwrap();
    let path = dir.join(format!("{who}.fio"));
    std::fs::write(
        &path,
        format!(
            "[global]\nioengine=io_uring\nfilename={d}/{who}.data\nsize=32m\nbs=4k\nrw=randread\n\
             iodepth=4\nruntime=3\ntime_based\nrate_iops=4000\n[hj]\nwrite_hist_log={o}/hj\n\
             log_hist_msec=100\n{extra}",
            d = dir.display(),
            o = out.display()
        ),
    )
    .unwrap();
    path
}

#[test]
fn hist_log_is_fio_s_and_fio_s_parser_reads_csdchar_s_latencies_from_it() {
    let Some(_) = fio() else { return };
    let d = tempfile::tempdir().unwrap();
    let Some(tool) = hist_parser(d.path()) else {
        return;
    };
    let path = job(
        d.path(),
        "csdchar",
        &format!("write_lat_log={}/csdchar/hj\n", d.path().display()),
    );
    let r = common::csdchar(&[
        "block",
        "--job-file",
        path.to_str().unwrap(),
        "--output-format",
        "json",
    ]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
    let ours = logs_in(&d.path().join("csdchar"));
    let hist = &ours["hj_clat_hist.1.log"];
    let clat = &ours["hj_clat.1.log"];
    // 3 s in windows of 100 ms from the first I/O: about 29 lines.
    assert!((25..=30).contains(&hist.len()), "{} lines", hist.len());
    let mut binned = 0u64;
    let mut last_t = 0u64;
    for (k, line) in hist.iter().enumerate() {
        assert_eq!(
            line.len(),
            3 + PLAT_NR as usize,
            "msec, ddir, bs, 1856 buckets"
        );
        // Windows of 100 ms from the first I/O, without drift: a late line
        // does not push the next ones back.
        let t: u64 = line[0].parse().unwrap();
        assert!(
            t > last_t && t >= 100 * (k as u64 + 1),
            "line {k} at {t} ms"
        );
        last_t = t;
        assert_eq!((line[1].as_str(), line[2].as_str()), ("0", "4096"));
        binned += line[3..]
            .iter()
            .map(|c| c.parse::<u64>().unwrap())
            .sum::<u64>();
    }
    // Every I/O up to the last line is in the histograms, once: the per-I/O
    // clat log in the same run says which (I/Os of the last line's own
    // millisecond may fall either side of it).
    let upto = |pred: &dyn Fn(u64) -> bool| {
        clat.iter().filter(|l| pred(l[0].parse().unwrap())).count() as u64
    };
    let (before, at) = (upto(&|t| t < last_t), upto(&|t| t == last_t));
    assert!(
        binned > before && binned <= before + at,
        "{binned} binned, {before} I/Os before {last_t} ms and {at} in it"
    );
    // fio's tool reads it: its count is the log's, and its percentiles are
    // those of the same I/Os' exact latencies within fio's bucket resolution
    // (its interpolation may reach a neighbouring bucket's middle).
    let [samples, min, median, p90, p99, max] =
        parse_with_fio_tool(&tool, &d.path().join("csdchar/hj_clat_hist.1.log"));
    assert_eq!(samples as u64, binned);
    let mut exact: Vec<u64> = clat
        .iter()
        .take(binned as usize)
        .map(|l| l[1].parse().unwrap())
        .collect();
    exact.sort_unstable();
    let at_pct = |p: f64| exact[((p / 100.0 * exact.len() as f64) as usize).min(exact.len() - 1)];
    for (name, p, got) in [
        ("median", 50.0, median),
        ("p90", 90.0, p90),
        ("p99", 99.0, p99),
    ] {
        let lo = bucket_edges(plat_val_to_idx(at_pct(p - 0.5)).saturating_sub(1)).0;
        let hi = bucket_edges(plat_val_to_idx(at_pct(p + 0.5)) + 1).1;
        assert!(
            (lo..=hi).contains(&got),
            "{name}: fio's tool says {got} ns, the I/Os' own lie in [{lo}, {hi}]"
        );
    }
    // The extremes among every I/O the histograms may hold: those of the
    // last line's own millisecond may be on either side of it (one of them,
    // slow on a loaded machine, can be the maximum).
    let maybe: Vec<u64> = (clat.iter().take((before + at) as usize))
        .map(|l| l[1].parse().unwrap())
        .collect();
    let (lo, hi) = (maybe.iter().min().unwrap(), maybe.iter().max().unwrap());
    assert!(
        bucket_edges(plat_val_to_idx(*lo)).0 <= min,
        "min {min} ns, I/Os' {lo}"
    );
    assert!(
        bucket_edges(plat_val_to_idx(*hi)).1 >= max,
        "max {max} ns, I/Os' {hi}"
    );
    // And csdchar's own result: the same distribution (its median over all
    // I/Os, the log's being 3 s less its last partial window).
    let b = r.outcome.block.unwrap();
    let own = b.read.unwrap().clat;
    assert!(binned <= own.count && own.count - binned < 4000 * 2 / 10);
    let own_median = own
        .percentiles
        .iter()
        .find(|p| p.percentile == 50.0)
        .unwrap()
        .value_ns as f64;
    assert!(
        (median / own_median - 1.0).abs() < 0.10,
        "median: fio's tool {median} ns from the log, csdchar's result {own_median} ns"
    );

    // fio's log of the same job: the same file, columns and about as many lines.
    let path = job(d.path(), "fio", "");
    let st = std::process::Command::new(fio().unwrap())
        .args(["--output=/dev/null", path.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(st.success());
    let theirs = logs_in(&d.path().join("fio"));
    assert_eq!(
        theirs.keys().collect::<Vec<_>>(),
        ["hj_clat_hist.1.log"],
        "fio's file name"
    );
    let t = &theirs["hj_clat_hist.1.log"];
    assert_eq!(t[0].len(), hist[0].len(), "columns");
    let (nt, no) = (t.len() as f64, hist.len() as f64);
    assert!(
        (nt / no - 1.0).abs() <= 0.15,
        "fio {nt} lines, csdchar {no}"
    );
    parse_with_fio_tool(&tool, &d.path().join("fio/hj_clat_hist.1.log"));
}

#[test]
fn coarseness_folds_buckets_as_fio_does() {
    let Some(_) = fio() else { return };
    let d = tempfile::tempdir().unwrap();
    let Some(tool) = hist_parser(d.path()) else {
        return;
    };
    for c in [2u32, 6] {
        let mut cols = Vec::new();
        for who in ["fio", "csdchar"] {
            let sub = d.path().join(format!("c{c}"));
            std::fs::create_dir_all(&sub).unwrap();
            let path = job(&sub, who, &format!("log_hist_coarseness={c}\nruntime=1\n"));
            crate::fio_parity::run_job_file_ok(who, &path);
            let log = sub.join(who).join("hj_clat_hist.1.log");
            let logs = logs_in(&sub.join(who));
            let lines = &logs["hj_clat_hist.1.log"];
            assert!(!lines.is_empty(), "{who}: coarseness {c}");
            cols.push(lines[0].len());
            // fio's tool infers the coarseness from the column count.
            let [samples, ..] = parse_with_fio_tool(&tool, &log);
            assert!(samples > 0.0);
        }
        assert_eq!(cols, [3 + (PLAT_NR >> c) as usize; 2], "coarseness {c}");
    }
}
