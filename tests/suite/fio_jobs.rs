//! fio job files in, fio's JSON out: the job file's order and groups, refusals
//! of what csdchar does not implement (exit 2, nothing created), the examples,
//! `--print-job` read back, and fio-json's keys against fio's own output.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::csdchar;
use serde_json::Value;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

#[test]
fn unsupported_options_are_all_named_and_nothing_is_created() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("data.dat");
    let job = write(
        d.path(),
        "bad.fio",
        &format!(
            "[global]\nfilename={}\nsize=1m\nlockmem=64m\n[a]\nrw=randwrite\nexec_prerun=true\n",
            target.display()
        ),
    );
    let out = d.path().join("out.json");
    let r = csdchar(&[
        "block",
        "--job-file",
        &job,
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.outcome.exit_code, 2, "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("lockmem=64m (") && r.stderr.contains("bad.fio:4"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("exec_prerun=true (") && r.stderr.contains("bad.fio:7"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("--ignore-unsupported"), "{}", r.stderr);
    assert!(!target.exists() && !out.exists(), "nothing created");
    // A bad value names the option and its line too.
    let job = write(
        d.path(),
        "val.fio",
        "[a]\nfilename=/x\nbs=0,8k\nrw=randrw\n",
    );
    let r = csdchar(&["block", "--job-file", &job]);
    assert_eq!(r.outcome.exit_code, 2);
    assert!(
        r.stderr.contains("bs=0,8k (") && r.stderr.contains("val.fio:3"),
        "{}",
        r.stderr
    );
    // Options and a job file do not mix.
    let r = csdchar(&["block", "--job-file", &job, "--bs", "8k"]);
    assert_eq!(r.outcome.exit_code, 2);
    assert!(r.stderr.contains("--bs"), "{}", r.stderr);
}

#[test]
fn ignored_options_are_recorded_and_the_jobs_run_in_fios_order() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("data.dat");
    let job = write(
        d.path(),
        "two.fio",
        &format!(
            "[global]\nioengine=libaio\nfilename={}\nsize=2m\nbs=4k\nbuffer_compress_percentage=75\nbuffer_compress_chunk=4k\nexitall_on_error\n\n[fill]\nrw=write\n\n[check]\nstonewall\nrw=randread\niodepth=4\nruntime=300ms\ntime_based\n",
            target.display()
        ),
    );
    let r = csdchar(&[
        "block",
        "--job-file",
        &job,
        "--ignore-unsupported",
        "--output-format",
        "json",
    ]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("note: ignored exitall_on_error"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("ioengine=libaio runs on io_uring"),
        "{}",
        r.stderr
    );
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let runs = v.as_array().expect("two runs: an array");
    assert_eq!(runs.len(), 2);
    for run in runs {
        common::assert_matches_schema(run, "block");
    }
    let (fill, check) = (&runs[0], &runs[1]);
    assert_eq!(fill["job_file"]["job"], "fill");
    assert_eq!(fill["job_file"]["group_id"], 0);
    assert_eq!(check["job_file"]["group_id"], 1);
    assert_eq!(fill["job_file"]["replaced_engine"], "libaio");
    assert!(
        fill["job_file"]["ignored"][0]
            .as_str()
            .unwrap()
            .starts_with("exitall")
    );
    assert_eq!(
        fill["write"]["bytes"],
        2 << 20,
        "a sized job writes size once"
    );
    assert_eq!(fill["spec"]["direct"], false, "fio's default direct=0");
    assert_eq!(fill["spec"]["compress_fill"], "zeros", "fio's filler");
    // The stonewall: the reads start after the writes ended.
    let end = |r: &Value| {
        let start =
            csdchar_core::start_at::parse_rfc3339(r["started_at"].as_str().unwrap()).unwrap();
        start + std::time::Duration::from_nanos(r["elapsed_ns"].as_u64().unwrap())
    };
    let check_start =
        csdchar_core::start_at::parse_rfc3339(check["started_at"].as_str().unwrap()).unwrap();
    assert!(check_start >= end(fill) - std::time::Duration::from_millis(5));
    assert!(check["read"]["ios"].as_u64().unwrap() > 0);
}

#[test]
fn fio_json_has_the_keys_of_fios_own_output() {
    let fixture: Value = serde_json::from_slice(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio/fio-3.x-randrw.json+"),
        )
        .unwrap(),
    )
    .unwrap();
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("data.dat");
    let job = write(
        d.path(),
        "randrw.fio",
        &format!(
            "[global]\nioengine=io_uring\ndirect=1\nbs=4k\nsize=16m\nruntime=1\ntime_based\nfilename={}\n[randrw]\nrw=randrw\nrwmixread=70\niodepth=8\n",
            target.display()
        ),
    );
    let r = csdchar(&["block", "--job-file", &job, "--output-format", "fio-json+"]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
    let ours: Value = serde_json::from_str(&r.stdout).unwrap();
    // fio itself on the same job file, where it is installed (CI installs it);
    // the committed fixture is fio 3.33's output of this job.
    let live = which("fio").map(|fio| {
        let out = std::process::Command::new(fio)
            .args(["--output-format=json+", &job])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    });
    assert!(
        live.is_some() || std::env::var_os("CSDCHAR_REQUIRE_FIO_TOOLS").is_none(),
        "fio is not installed"
    );
    for fixture in std::iter::once(&fixture).chain(live.as_ref()) {
        same_keys_and_units(fixture, &ours);
    }
}

/// `ours` has the keys fio's own output has, in fio's units.
fn same_keys_and_units(fixture: &Value, ours: &Value) {
    let theirs_top = keys(fixture);
    let ours_top = keys(ours);
    for k in [
        "fio version",
        "timestamp",
        "timestamp_ms",
        "time",
        "global options",
        "jobs",
        "disk_util",
    ] {
        assert!(
            theirs_top.contains(k) == ours_top.contains(k) || k == "disk_util",
            "top {k}"
        );
    }
    let (tj, oj) = (&fixture["jobs"][0], &ours["jobs"][0]);
    let missing: Vec<_> = keys(tj).difference(&keys(oj)).cloned().collect();
    let allowed_missing = ["job_start", "latency_us_bins"];
    assert!(
        missing
            .iter()
            .all(|m| allowed_missing.contains(&m.as_str())),
        "job keys fio has and csdchar lacks: {missing:?}"
    );
    // fio's batch shares: the same buckets, adding up to 100 %.
    for key in ["iodepth_submit", "iodepth_complete"] {
        assert_eq!(keys(&tj[key]), keys(&oj[key]), "{key}");
        let sum: f64 = oj[key]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_f64().unwrap())
            .sum();
        assert!((sum - 100.0).abs() < 0.5, "{key}: {}", oj[key]);
    }
    for dir in ["read", "write", "trim"] {
        let missing: Vec<_> = keys(&tj[dir])
            .difference(&keys(&oj[dir]))
            .cloned()
            .collect();
        assert!(missing.is_empty(), "{dir}: {missing:?}");
        for lat in ["slat_ns", "clat_ns", "lat_ns"] {
            let mut theirs = keys(&tj[dir][lat]);
            let ours = keys(&oj[dir][lat]);
            // fio writes percentiles and bins where its options ask; csdchar's clat has both.
            theirs.remove("percentile");
            theirs.remove("bins");
            let missing: Vec<_> = theirs.difference(&ours).cloned().collect();
            assert!(missing.is_empty(), "{dir}.{lat}: {missing:?}");
        }
    }
    // fio's units: bw is KiB/s of bw_bytes, runtime ms, percentiles keyed like fio's.
    let rd = &oj["read"];
    let bw = rd["bw"].as_u64().unwrap() as f64;
    let bw_bytes = rd["bw_bytes"].as_u64().unwrap() as f64;
    assert!((bw - bw_bytes / 1024.0).abs() <= 1.0);
    assert!(rd["runtime"].as_u64().unwrap() >= 900 && rd["runtime"].as_u64().unwrap() < 5_000);
    assert!(rd["clat_ns"]["percentile"]["99.000000"].as_u64().unwrap() > 0);
    let fio_pcts = keys(&tj["read"]["clat_ns"]["percentile"]);
    assert_eq!(
        keys(&rd["clat_ns"]["percentile"]),
        fio_pcts,
        "fio's default list"
    );
    // json+ bins count every completion, at fio's bucket midpoints.
    let bins = rd["clat_ns"]["bins"].as_object().unwrap();
    let n: u64 = bins.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(n, rd["clat_ns"]["N"].as_u64().unwrap());
    for k in bins.keys() {
        let v: u64 = k.parse().unwrap();
        let idx = csdchar_report::fio_json::plat_val_to_idx(v);
        assert_eq!(
            csdchar_report::fio_json::plat_idx_to_val(idx),
            v,
            "bin {k} is a midpoint"
        );
    }
    // What fio's readers ignore carries the data's measured ratio.
    assert!(oj["csdchar"]["data"].is_array());
}

#[test]
fn a_printed_job_runs_back_as_the_same_spec() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("data.dat");
    let t = target.to_str().unwrap();
    let args = [
        "block",
        "--rw",
        "randwrite",
        "--bs",
        "8k",
        "--iodepth",
        "4",
        "--size",
        "2m",
        "--runtime",
        "300ms",
        "--time-based",
        "--compress",
        "60",
        "--compress-fill",
        "zeros",
        "--direct",
        "0",
        t,
    ];
    let mut printing = args.to_vec();
    printing.push("--print-job");
    let printed = csdchar(&printing);
    assert_eq!(printed.outcome.exit_code, 0, "{}", printed.stderr);
    assert!(!target.exists(), "--print-job runs nothing");
    let job = write(d.path(), "printed.fio", &printed.stdout);
    let from_file = csdchar(&["block", "--job-file", &job, "--output-format", "json"]);
    assert_eq!(from_file.outcome.exit_code, 0, "{}", from_file.stderr);
    let direct = csdchar(&[&args[..], &["--output-format", "json"]].concat());
    let spec = |s: &str| {
        let mut v: Value = serde_json::from_str(s).unwrap();
        v["spec"].as_object_mut().unwrap().remove("size");
        v["spec"].clone()
    };
    assert_eq!(
        spec(&from_file.stdout),
        spec(&direct.stdout),
        "{}",
        printed.stdout
    );
}

#[test]
fn the_examples_parse_and_the_opengauss_steps_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/fio");
    let mut n = 0;
    for e in std::fs::read_dir(&root).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "fio") {
            n += 1;
            let r = csdchar(&["block", "--job-file", p.to_str().unwrap(), "--parse-only"]);
            // TARGET is not set: filename is empty, which the plan names.
            if r.outcome.exit_code != 0 {
                assert!(
                    r.stderr.contains("filename"),
                    "{}: {}",
                    p.display(),
                    r.stderr
                );
            } else {
                assert!(r.stdout.starts_with("run 0: "), "{}", r.stdout);
            }
        }
    }
    assert!(n >= 3);
    // The study's steps, shortened through the environment-free copy of the file.
    let d = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root.join("opengauss-csd.fio")).unwrap();
    let target = d.path().join("og.dat");
    let text = text
        .replace(
            "/var/tmp/csdchar-opengauss-fio.dat",
            target.to_str().unwrap(),
        )
        .replace("size=1g", "size=8m")
        .replace("runtime=10", "runtime=200ms")
        .replace("numjobs=8", "numjobs=2");
    let job = write(d.path(), "og.fio", &text);
    let r = csdchar(&["block", "--job-file", &job, "--output-format", "fio-json"]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let names: Vec<&str> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["jobname"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "prefill",
            "randwrite-4k-qd32-8jobs",
            "randrw-70-30-4k-qd32-8jobs",
            "randread-4k-qd32-8jobs",
            "write-128k-qd128"
        ]
    );
    let groups: Vec<u64> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["groupid"].as_u64().unwrap())
        .collect();
    assert_eq!(groups, [0, 1, 2, 3, 4]);
    assert!(v["jobs"][1]["write"]["iops"].as_f64().unwrap() > 0.0);
    // A direction a job does not use is 0, not -0 (fio's readers compare).
    assert_eq!(v["jobs"][1]["read"]["iops"].to_string(), "0.0");
}

fn which(tool: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// fio's own `fio_jsonplus_clat2csv` and fio-plot read csdchar's fio-json.
/// `scripts/test.sh` installs both and sets CSDCHAR_REQUIRE_FIO_TOOLS, so CI
/// cannot skip this.
#[test]
fn fios_readers_read_csdchars_fio_json() {
    let require = std::env::var_os("CSDCHAR_REQUIRE_FIO_TOOLS").is_some();
    let clat2csv = which("fio_jsonplus_clat2csv");
    let fio_plot = std::env::var_os("CSDCHAR_FIO_PLOT")
        .map(std::path::PathBuf::from)
        .or_else(|| which("fio-plot"));
    let (Some(clat2csv), Some(fio_plot)) = (clat2csv, fio_plot) else {
        assert!(
            !require,
            "fio_jsonplus_clat2csv (package fio) or fio-plot (pip) is missing"
        );
        eprintln!(
            "skipped: fio_jsonplus_clat2csv (apt install fio) or fio-plot (pip install fio-plot) missing"
        );
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let results = d.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let target = d.path().join("data.dat");
    // fio-plot finds runs by the job options rw, iodepth, numjobs and bs.
    let job = write(
        d.path(),
        "qd4.fio",
        &format!(
            "[randread-qd4]\nfilename={}\nsize=8m\nrw=randread\nbs=4k\niodepth=4\nnumjobs=1\nruntime=500ms\ntime_based\ndirect=1\n",
            target.display()
        ),
    );
    let json = results.join("randread-4-1.json");
    let r = csdchar(&[
        "block",
        "--job-file",
        &job,
        "--output-format",
        "fio-json+",
        "--output",
        json.to_str().unwrap(),
    ]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
    let csv = d.path().join("lat.csv");
    for validate in [false, true] {
        let mut cmd = std::process::Command::new(&clat2csv);
        cmd.arg(&json).arg(&csv);
        if validate {
            cmd.arg("--validate");
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let lines = std::fs::read_to_string(d.path().join("lat_job0.csv")).unwrap();
    assert!(lines.lines().count() > 2, "{lines}");
    // fio-plot writes its metadata into the file named by -o, so it takes the .png.
    let png = d.path().join("chart.png");
    let out = std::process::Command::new(&fio_plot)
        .args([
            "-i",
            results.to_str().unwrap(),
            "-T",
            "csdchar",
            "-l",
            "-r",
            "randread",
        ])
        .args(["-d", "4", "-n", "1", "-o", png.to_str().unwrap()])
        .env("MPLBACKEND", "Agg")
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(
        out.status.success() && png.metadata().is_ok_and(|m| m.len() > 10_000),
        "fio-plot: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn clones_are_entries_of_their_own_unless_reported_as_one() {
    let d = tempfile::tempdir().unwrap();
    for (reporting, entries) in [("", 3), ("group_reporting\n", 1)] {
        let job = write(
            d.path(),
            "clones.fio",
            &format!("[global]\n{reporting}[c]\nioengine=null\nrw=randread\nsize=4m\nnumjobs=3\n"),
        );
        let r = csdchar(&["block", "--job-file", &job, "--output-format", "fio-json+"]);
        assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        let jobs = v["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), entries, "{reporting:?}");
        let ios: u64 = jobs
            .iter()
            .map(|j| j["read"]["total_ios"].as_u64().unwrap())
            .sum();
        assert_eq!(ios, 3 * 1024, "each clone reads size once");
        for j in jobs {
            assert_eq!(j["jobname"], "c");
            let n = j["read"]["clat_ns"]["N"].as_u64().unwrap();
            let binned: u64 = j["read"]["clat_ns"]["bins"]
                .as_object()
                .unwrap()
                .values()
                .map(|b| b.as_u64().unwrap())
                .sum();
            assert_eq!((n, binned), (j["read"]["total_ios"].as_u64().unwrap(), n));
        }
    }
}

/// Every job's target is checked before the first job writes: a later job
/// whose file backs a loop device is refused with nothing written at all.
#[test]
fn a_later_jobs_unsafe_target_is_refused_before_any_job_writes() {
    if !common::is_root_or_skip("a_later_jobs_unsafe_target_is_refused_before_any_job_writes") {
        return;
    }
    let d = tempfile::Builder::new()
        .prefix("csdchar-fio-jobs")
        .tempdir_in("/var/tmp")
        .unwrap();
    let backing = d.path().join("backing.img");
    std::fs::File::create(&backing)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let _loop = common::LoopDev::over(&backing);
    let first = d.path().join("first.dat");
    let job = write(
        d.path(),
        "two.fio",
        &format!(
            "[global]\nrw=write\nsize=1m\n[first]\nfilename={}\n[second]\nstonewall\nfilename={}\n",
            first.display(),
            backing.display()
        ),
    );
    let r = csdchar(&["block", "--job-file", &job, "--output-format", "json"]);
    assert_eq!(r.outcome.exit_code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("job second (") && r.stderr.contains("two.fio:6): refusing to write to"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("--force"), "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(!first.exists(), "the first job did not run");
}

/// A stderr that notes when each line arrived.
#[derive(Clone, Default)]
struct TimedLines(std::sync::Arc<std::sync::Mutex<Vec<(std::time::Instant, String)>>>);

impl std::io::Write for TimedLines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let now = std::time::Instant::now();
        let mut lines = self.0.lock().unwrap();
        for l in String::from_utf8_lossy(buf)
            .lines()
            .filter(|l| !l.is_empty())
        {
            lines.push((now, l.to_string()));
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Issue 38 row 20: each job's start and end are printed as they happen,
/// not when the last job ends.
#[test]
fn each_jobs_start_and_end_are_printed_as_they_happen() {
    use clap::Parser;
    let d = tempfile::tempdir().unwrap();
    let job = write(
        d.path(),
        "two.fio",
        "[global]\nioengine=null\nsize=1m\n[quick]\n[slow]\nstonewall\nruntime=1500ms\ntime_based\n",
    );
    let lines = TimedLines::default();
    let mut err = lines.clone();
    let mut out = Vec::new();
    let cli = csdchar_cli::Cli::try_parse_from(["csdchar", "block", "--job-file", &job]).unwrap();
    let mut io = csdchar_cli::Io {
        stdout: &mut out,
        stderr: &mut err,
        interrupt: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    };
    let outcome = csdchar_cli::run(cli, &mut io);
    let ended = std::time::Instant::now();
    assert_eq!(outcome.exit_code, 0);
    let lines = lines.0.lock().unwrap().clone();
    let at = |start: &str| {
        lines
            .iter()
            .find(|(_, l)| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line {start:?} in {lines:?}"))
            .0
    };
    for line in [
        "job quick: rw=read",
        "job quick: Completed",
        "job slow: rw=read",
    ] {
        let early = ended.duration_since(at(line));
        assert!(
            early >= std::time::Duration::from_millis(1000),
            "{line:?} came {early:?} before the end, not as it happened"
        );
    }
    assert!(at("job slow: Completed") >= at("job slow: rw=read"));
}

/// The highest `Threads:` of this process while `run` runs.
fn peak_threads(run: impl FnOnce()) -> u64 {
    let threads = || {
        std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap()
    };
    let done = std::sync::atomic::AtomicBool::new(false);
    let peak = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak.fetch_max(threads(), std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
        run();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    peak.into_inner()
}

/// The peak resident memory (VmHWM, KiB) of this test binary running
/// `csdchar block --job-file FILE` alone, in a child process.
fn peak_rss_kib_of(job: &str) -> u64 {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "fio_jobs::job_file_memory_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("CSDCHAR_TEST_JOB_FILE", job)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "no VmHWM from the child: {text} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// Runs the job file `CSDCHAR_TEST_JOB_FILE` and prints VmHWM; run by
/// [`peak_rss_kib_of`] only.
#[test]
#[ignore = "a child of job_memory_grows_by_the_results_only"]
fn job_file_memory_child() {
    let Ok(job) = std::env::var("CSDCHAR_TEST_JOB_FILE") else {
        return;
    };
    let r = csdchar(&[
        "block",
        "--job-file",
        &job,
        "--output-format",
        "json",
        "--output",
        "/dev/null",
    ]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let hwm = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    println!("\n{hwm}");
}

/// Issue 38 row 12: memory per job is bounded by its result: running 400
/// stonewalled jobs instead of 100 takes a few tens of KiB more per job
/// (each result), not the ~200 KiB a job's freed histograms and buffers
/// left behind in the allocator's per-thread arenas.
#[test]
fn job_memory_grows_by_the_results_only() {
    let d = tempfile::tempdir().unwrap();
    let file = |n: usize| {
        let mut text = String::from("[global]\nioengine=null\nsize=64k\nstonewall\n");
        for i in 0..n {
            text.push_str(&format!("[j{i}]\n"));
        }
        write(d.path(), &format!("j{n}.fio"), &text)
    };
    let (small, large) = (peak_rss_kib_of(&file(100)), peak_rss_kib_of(&file(400)));
    let per_job = large.saturating_sub(small) / 300;
    assert!(
        per_job < 100,
        "{per_job} KiB more per job ({small} KiB for 100 jobs, {large} KiB for 400)"
    );
}

/// Issue 38 row 7: every job's size and room are checked before the first
/// starts, the files of all jobs together too: two 40 MiB jobs on a 64 MiB
/// file system are refused though each fits alone; a stonewalled 100t job
/// is refused before the job before it writes.
#[test]
fn room_for_every_job_is_checked_before_the_first_starts() {
    let d = tempfile::tempdir().unwrap();
    let first = d.path().join("a.dat");
    let job = write(
        d.path(),
        "huge.fio",
        &format!(
            "[global]\nrw=write\nbs=1m\n[a]\nfilename={}\nsize=8m\n[b]\nstonewall\nfilename={}/b.dat\nsize=100t\n",
            first.display(),
            d.path().display()
        ),
    );
    let r = csdchar(&["block", "--job-file", &job]);
    assert_eq!(r.outcome.exit_code, 2, "{}", r.stderr);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("job b (") && r.stderr.contains("huge.fio:10): size:"),
        "{}",
        r.stderr
    );
    assert!(!first.exists(), "job a ran before job b was refused");

    if !common::is_root_or_skip("room_for_every_job_is_checked_before_the_first_starts (tmpfs)") {
        return;
    }
    let mnt = tempfile::Builder::new()
        .prefix("csdchar-room")
        .tempdir_in("/var/tmp")
        .unwrap();
    let Some(_m) = common::Mounted::new("tmpfs", mnt.path(), &["-t", "tmpfs", "-o", "size=64m"])
    else {
        return;
    };
    let m = mnt.path().display();
    let job = write(
        d.path(),
        "two.fio",
        &format!(
            "[global]\nrw=write\nbs=1m\nsize=40m\n[a]\nfilename={m}/a.dat\n[b]\nstonewall\nfilename={m}/b.dat\n"
        ),
    );
    let r = csdchar(&["block", "--job-file", &job]);
    assert_eq!(r.outcome.exit_code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("job b (")
            && r.stderr.contains("two.fio:4): size:")
            && r.stderr.contains("2 files"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_dir(mnt.path()).unwrap().count(),
        0,
        "nothing created"
    );
    // One file grown by two jobs counts once, at its largest.
    let job = write(
        d.path(),
        "same.fio",
        &format!("[global]\nrw=write\nbs=1m\nsize=40m\nfilename={m}/a.dat\n[a]\n[b]\nstonewall\n"),
    );
    let r = csdchar(&["block", "--job-file", &job, "--output", "/dev/null"]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
}

/// Issue 38 row 11: --log-interval is every job's interval; --verify-only
/// and --start-at are refused with a job file (see bad_input.rs).
#[test]
fn log_interval_applies_to_every_job_of_a_job_file() {
    let d = tempfile::tempdir().unwrap();
    let job = write(
        d.path(),
        "t.fio",
        "[global]\nioengine=null\nsize=1m\nruntime=600ms\ntime_based\n[a]\n[b]\nstonewall\n",
    );
    let r = csdchar(&[
        "block",
        "--job-file",
        &job,
        "--log-interval",
        "100ms",
        "--output-format",
        "json",
    ]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    for run in v.as_array().unwrap() {
        assert_eq!(run["spec"]["log_interval_ms"], 100);
        let samples = run["intervals"].as_array().unwrap().len();
        assert!(
            (4..=8).contains(&samples),
            "{samples} samples of 100 ms in 600 ms"
        );
    }
}

/// Issue 38 rows 3 and 21, and fio's directory rule: the result never lands
/// on a job's file; a job's generated file stays in `directory`; a filename
/// goes in `directory` as fio puts it.
#[test]
fn job_files_write_where_fio_would_and_never_onto_the_result() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("D");
    std::fs::create_dir(&dir).unwrap();
    let data = d.path().join("rr.dat");
    std::fs::write(&data, vec![3u8; 1 << 20]).unwrap();
    let job = write(
        d.path(),
        "rr.fio",
        &format!("[rr]\nfilename={}\nrw=read\n", data.display()),
    );
    for out in [data.clone(), d.path().join("D/../rr.dat")] {
        let r = csdchar(&[
            "block",
            "--job-file",
            &job,
            "--output-format",
            "json",
            "--output",
            out.to_str().unwrap(),
        ]);
        assert_eq!(r.outcome.exit_code, 2, "{}", r.stderr);
        assert!(
            r.stderr.starts_with("error: --output:") && r.stderr.contains("same file"),
            "{}",
            r.stderr
        );
    }
    assert_eq!(
        std::fs::read(&data).unwrap(),
        vec![3u8; 1 << 20],
        "the data file is intact"
    );
    // A job named ../../x without filename= would write outside D.
    let job = write(
        d.path(),
        "escape.fio",
        &format!(
            "[global]\ndirectory={}\nsize=1m\nrw=write\n[../../x]\n",
            dir.display()
        ),
    );
    let r = csdchar(&["block", "--job-file", &job]);
    assert_eq!(r.outcome.exit_code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("[../../x] (") && r.stderr.contains("escape.fio:5)"),
        "{}",
        r.stderr
    );
    assert!(!d.path().parent().unwrap().join("x.0.0").exists());
    // directory= and filename= together: the file is in the directory.
    let job = write(
        d.path(),
        "dir.fio",
        &format!(
            "[global]\ndirectory={}\nsize=1m\nrw=write\n[j]\nfilename=f.dat\n[k]\n",
            dir.display()
        ),
    );
    let r = csdchar(&["block", "--job-file", &job, "--output", "/dev/null"]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
    assert!(dir.join("f.dat").exists() && dir.join("k.0.0").exists());
}

/// Issue 38 row 6: --print-job writes a target fio's grammar carries (':'
/// escaped) or refuses it; what it prints reads back as the same target.
#[test]
fn print_job_carries_the_target_or_refuses_it() {
    let d = tempfile::tempdir().unwrap();
    for bad in ["a;b.dat", "x.dat\n[evil]\nrw=write\nfilename=/tmp/other"] {
        let target = d.path().join(bad);
        let r = csdchar(&[
            "block",
            "--rw",
            "randwrite",
            "--size",
            "1m",
            "--print-job",
            target.to_str().unwrap(),
        ]);
        assert_eq!(r.outcome.exit_code, 2, "{}", r.stderr);
        assert_eq!(r.stderr.trim_end().lines().count(), 1, "{}", r.stderr);
        assert!(
            r.stderr.starts_with("error: --print-job: TARGET"),
            "{}",
            r.stderr
        );
        assert!(r.stdout.is_empty());
    }
    let target = d.path().join("pci-0000:00:1f.2.dat");
    let t = target.to_str().unwrap();
    let printed = csdchar(&["block", "--rw", "read", "--size", "1m", "--print-job", t]);
    assert_eq!(printed.outcome.exit_code, 0, "{}", printed.stderr);
    let job = write(d.path(), "back.fio", &printed.stdout);
    let r = csdchar(&["block", "--job-file", &job, "--parse-only"]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.lines().count(), 1, "{}", r.stdout);
    assert!(
        r.stdout
            .contains(&format!("rw=read bs=4096 iodepth=1 numjobs=1 on {t};")),
        "{}",
        r.stdout
    );
}

/// Tests that need the machine to themselves (scripts/test.sh runs `alone::` tests after
/// the others, one at a time): see each test's comment for why.
mod alone {
    use super::*;

    /// Issue 38 row 12: a job holds a thread only while it can run: 400
    /// stonewalled jobs run one at a time, not as 400 waiting threads.
    #[test]
    fn waiting_jobs_hold_no_threads() {
        let d = tempfile::tempdir().unwrap();
        let mut text = String::from("[global]\nioengine=null\nsize=64k\nstonewall\n");
        for i in 0..400 {
            text.push_str(&format!("[j{i}]\n"));
        }
        let job = write(d.path(), "many.fio", &text);
        let mut ran = None;
        let peak = peak_threads(|| {
            ran = Some(csdchar(&[
                "block",
                "--job-file",
                &job,
                "--output",
                "/dev/null",
            ]));
        });
        let ran = ran.unwrap();
        assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
        assert_eq!(ran.stderr.matches(": Completed").count(), 400);
        // Alone: other tests running beside it would add their threads to the
        // count; 400 jobs at once would be more than 400 threads.
        assert!(peak < 150, "{peak} threads for jobs that run one at a time");
    }
}

#[test]
fn verify_only_checks_what_the_same_job_wrote() {
    use std::os::unix::fs::FileExt;
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("v.dat");
    let base = format!(
        "[v]\nfilename={}\nsize=1m\nrw=randwrite\nverify=crc32c\n",
        target.display()
    );
    let job = write(d.path(), "v.fio", &base);
    let r = csdchar(&["block", "--job-file", &job]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
    let again = write(d.path(), "again.fio", &format!("{base}verify_only=1\n"));
    let r = csdchar(&["block", "--job-file", &again]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
    let b = r.outcome.block.unwrap();
    assert!(b.write.is_none(), "verify_only writes nothing");
    let v = b.verify.unwrap();
    assert_eq!((v.blocks_checked, v.bad_block_count), (256, 0));
    // A block changed behind its back is found.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&target)
        .unwrap()
        .write_all_at(b"xx", 4096 * 7 + 100)
        .unwrap();
    let r = csdchar(&["block", "--job-file", &again]);
    assert_ne!(r.outcome.exit_code, 0);
    assert_eq!(r.outcome.block.unwrap().verify.unwrap().bad_block_count, 1);
}
