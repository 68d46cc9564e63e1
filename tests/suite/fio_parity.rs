//! csdchar against fio itself on the same job: where random I/O lands under
//! fio's skewed distributions (fio's offsets from its `write_iolog`).
//! fio is installed by `scripts/test.sh`, which sets CSDCHAR_REQUIRE_FIO_TOOLS
//! so CI cannot skip; elsewhere the tests skip without it.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::RecordingEngine;
use csdchar_fio_like::{RunControl, run_block_with};

/// Runs job file `path` through `who`: fio itself, or csdchar's `block
/// --job-file`; the exit code and what it wrote to stderr.
pub(crate) fn run_job_file(who: &str, path: &std::path::Path) -> (i32, String) {
    if who == "fio" {
        // In the job file's directory: fio leaves its verify state and dump
        // files where it runs.
        let out = std::process::Command::new(fio().unwrap())
            .current_dir(path.parent().unwrap())
            .args(["--output=/dev/null", path.to_str().unwrap()])
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    } else {
        let r = common::csdchar(&["block", "--job-file", path.to_str().unwrap()]);
        (r.outcome.exit_code, r.stderr)
    }
}

/// [`run_job_file`], failing the test unless the run succeeds.
pub(crate) fn run_job_file_ok(who: &str, path: &std::path::Path) {
    let (code, stderr) = run_job_file(who, path);
    assert_eq!(code, 0, "{who}: {stderr}");
}

/// SIGKILL to every process whose command line names `path`: fio's job
/// processes (forked, each its own session) outlive the fio that started
/// them when it is killed.
fn kill_processes_naming(path: &Path) {
    let needle = path.to_string_lossy().into_owned();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        if pid != std::process::id() as i32
            && String::from_utf8_lossy(&cmd)
                .split('\0')
                .any(|a| a == needle)
        {
            // Safety: kill(2) of a fio process this test started (its job file
            // is the test's own temporary file).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// fio-json of job file `path` from `who`: fio itself, or csdchar's `block --job-file
/// --output-format fio-json`. `Ok(None)` when fio hung: fio 3.33 now and then never ends some
/// jobs here (think time, io_submit_mode=offload), so it is killed after `limit` and the
/// caller leaves its side out; `Err((exit code, stderr))` when the run failed. fio runs in
/// `path`'s directory and writes to files beside it, not pipes, so a large output cannot
/// stall it while it is polled.
pub(crate) fn fio_json_of(
    who: &str,
    path: &Path,
    limit: std::time::Duration,
) -> Result<Option<serde_json::Value>, (i32, String)> {
    let (code, stdout, stderr) = if who == "fio" {
        let (out, err) = (path.with_extension("out.json"), path.with_extension("err"));
        let mut child = std::process::Command::new(fio().unwrap())
            .current_dir(path.parent().unwrap())
            .arg("--output-format=json")
            .arg(format!("--output={}", out.display()))
            .arg(path)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + limit;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                kill_processes_naming(path);
                eprintln!(
                    "fio hung on {} (killed after {limit:?}): its side is left out",
                    path.display()
                );
                return Ok(None);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        (
            status.code().unwrap_or(-1),
            std::fs::read_to_string(out).unwrap_or_default(),
            std::fs::read_to_string(err).unwrap_or_default(),
        )
    } else {
        let r = common::csdchar(&[
            "block",
            "--job-file",
            path.to_str().unwrap(),
            "--output-format",
            "fio-json",
        ]);
        (r.outcome.exit_code, r.stdout, r.stderr)
    };
    if code != 0 {
        return Err((code, stderr));
    }
    let json = &stdout[stdout.find('{').unwrap_or(0)..];
    Ok(Some(serde_json::from_str(json).unwrap()))
}

pub(crate) fn fio() -> Option<PathBuf> {
    let found = std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("fio"))
        .find(|p| p.is_file());
    assert!(
        found.is_some() || std::env::var_os("CSDCHAR_REQUIRE_FIO_TOOLS").is_none(),
        "fio is not installed"
    );
    if found.is_none() {
        eprintln!("skipped: fio is not installed");
    }
    found
}

/// I/Os per block number, from fio's iolog (`FILE read OFFSET LEN` lines).
fn fio_counts(dir: &Path, job: &str, bs: u64) -> HashMap<u64, u64> {
    let fio = fio().expect("checked by the caller");
    let base = dir.join("base.fio");
    std::fs::write(&base, job).unwrap();
    let with_log = dir.join("fio.fio");
    let log = dir.join("offsets.iolog");
    std::fs::write(&with_log, format!("{job}write_iolog={}\n", log.display())).unwrap();
    let out = std::process::Command::new(fio)
        .arg("--output=/dev/null")
        .arg(&with_log)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut counts = HashMap::new();
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // Version 3 lines: MSEC FILE ACTION OFFSET LENGTH.
        if f.len() == 5 && matches!(f[2], "read" | "write" | "trim") {
            *counts.entry(f[3].parse::<u64>().unwrap() / bs).or_default() += 1;
        }
    }
    counts
}

/// I/Os per block number when csdchar runs the same job file (null engine,
/// offsets recorded).
fn csdchar_counts(dir: &Path, bs: u64) -> HashMap<u64, u64> {
    let plan = csdchar_fio_like::jobfile::load_job_file(&dir.join("base.fio"), false).unwrap();
    let spec = &plan.jobs[0].spec;
    let seen = Arc::new(Mutex::new(Vec::new()));
    run_block_with(spec, RunControl::quiet(), |_, _| {
        Ok(RecordingEngine::new(&seen, None))
    })
    .unwrap();
    let mut counts = HashMap::new();
    for (off, _) in seen.lock().unwrap().iter() {
        *counts.entry((off - spec.offset) / bs).or_default() += 1;
    }
    counts
}

/// Share of all I/Os on the hottest `frac` of `nblocks` blocks.
fn hottest(counts: &HashMap<u64, u64>, nblocks: u64, frac: f64) -> f64 {
    let mut c: Vec<u64> = counts.values().copied().collect();
    c.sort_unstable_by(|a, b| b.cmp(a));
    let total: u64 = c.iter().sum();
    let k = ((nblocks as f64 * frac) as usize).min(c.len());
    c[..k].iter().sum::<u64>() as f64 / total as f64
}

#[test]
fn skewed_offsets_put_fio_s_share_on_the_hottest_blocks() {
    if fio().is_none() {
        return;
    }
    let bs = 4096u64;
    let size = 1u64 << 30;
    let nblocks = size / bs;
    for dist in [
        "zipf:1.2",
        "zipf:0.8",
        "pareto:0.9",
        "normal:5",
        "zoned:60/10:30/20:10/",
        "zoned_abs:70/100m:30/400m",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let job = format!(
            "[global]\nioengine=null\nsize=1g\nbs=4k\nrw=randread\nrandom_distribution={dist}\n[skew]\n"
        );
        let theirs = fio_counts(dir.path(), &job, bs);
        let ours = csdchar_counts(dir.path(), bs);
        let (t_total, o_total): (u64, u64) = (theirs.values().sum(), ours.values().sum());
        assert_eq!(
            t_total, nblocks,
            "{dist}: fio did one I/O per block of size"
        );
        assert_eq!(o_total, t_total, "{dist}");
        for frac in [0.001, 0.01, 0.1, 0.5] {
            let (t, o) = (
                hottest(&theirs, nblocks, frac),
                hottest(&ours, nblocks, frac),
            );
            assert!(
                (t - o).abs() <= 0.01,
                "{dist}: hottest {}% of blocks get {:.2}% of fio's I/Os and {:.2}% of csdchar's",
                frac * 100.0,
                t * 100.0,
                o * 100.0
            );
        }
        // As many blocks touched (within 2%).
        let (t, o) = (theirs.len() as f64, ours.len() as f64);
        assert!(
            (t / o - 1.0).abs() <= 0.02,
            "{dist}: fio touched {t} blocks, csdchar {o}"
        );
    }
}

/// Achieved IOPS of the first job of fio's JSON output for `job`.
fn fio_iops(dir: &Path, job: &str) -> f64 {
    let fio = fio().expect("checked by the caller");
    let path = dir.join("rate.fio");
    std::fs::write(&path, job).unwrap();
    let out = std::process::Command::new(fio)
        .args(["--output-format=json", path.to_str().unwrap()])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["jobs"][0]["read"]["iops"].as_f64().unwrap()
}

#[test]
fn rate_iops_is_held_as_fio_holds_it() {
    if fio().is_none() {
        return;
    }
    for process in ["linear", "poisson"] {
        let dir = tempfile::tempdir().unwrap();
        let job = format!(
            "[global]\nioengine=null\nsize=1g\nbs=4k\nrw=randread\niodepth=4\nruntime=2\ntime_based\n\
             rate_iops=5000\nrate_process={process}\n[paced]\n"
        );
        let theirs = fio_iops(dir.path(), &job);
        let path = dir.path().join("rate.fio");
        let r = common::csdchar(&[
            "block",
            "--job-file",
            path.to_str().unwrap(),
            "--output-format",
            "fio-json",
        ]);
        assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        let ours = v["jobs"][0]["read"]["iops"].as_f64().unwrap();
        // Linear pacing is exact; Poisson's 10,000 gaps average within a
        // few percent. fio 3.33 falls behind on a loaded machine (Poisson:
        // 4.1k of 5k measured here; linear: 4.6k in a CI run beside a
        // build), so its figure is said, and csdchar's is the bound.
        let tol = if process == "linear" { 0.01 } else { 0.05 };
        if (theirs / 5000.0 - 1.0).abs() > tol {
            eprintln!(
                "{process}: fio held rate_iops=5000 at {theirs:.0} (behind: a loaded machine)"
            );
        }
        assert!(
            (ours / 5000.0 - 1.0).abs() <= tol,
            "{process}: csdchar held rate_iops=5000 at {ours:.0} (fio: {theirs:.0})"
        );
    }
}

#[test]
fn a_job_below_its_minimum_rate_fails_after_settling() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("min.fio");
    std::fs::write(
        &path,
        "[global]\nioengine=null\nsize=1g\nrw=randread\nruntime=30\ntime_based\n\
         rate_iops=100\nrate_iops_min=200\nrate_cycle=500\n[slow]\n",
    )
    .unwrap();
    let t = std::time::Instant::now();
    let r = common::csdchar(&["block", "--job-file", path.to_str().unwrap()]);
    assert_ne!(r.outcome.exit_code, 0, "{}", r.stdout);
    // The rate reached (about rate_iops's 100) is named, below the minimum.
    let got: f64 = r
        .stderr
        .split("rate_iops_min=200 not met, got ")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", r.stderr));
    assert!(got < 200.0, "{}", r.stderr);
    // fio's 2 s of settling, then one cycle: well before the 30 s runtime.
    assert!(t.elapsed() < std::time::Duration::from_secs(20));
}

/// The log files a run left in `dir`: name -> lines split into fields.
pub(crate) fn logs_in(dir: &Path) -> std::collections::BTreeMap<String, Vec<Vec<String>>> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.ends_with(".log").then(|| {
                let text = std::fs::read_to_string(dir.join(&name)).unwrap();
                let lines = text
                    .lines()
                    .map(|l| l.split(", ").map(str::to_string).collect())
                    .collect();
                (name, lines)
            })
        })
        .collect()
}

#[test]
fn logs_have_fio_s_names_columns_and_values() {
    if fio().is_none() {
        return;
    }
    for avg in ["", "log_avg_msec=500\nlog_offset=1\n"] {
        let d = tempfile::tempdir().unwrap();
        let mut runs = Vec::new();
        for who in ["fio", "csdchar"] {
            let out = d.path().join(who);
            std::fs::create_dir(&out).unwrap();
            let job = format!(
                "[global]\nioengine=null\nsize=64m\nbs=4k\nrw=randread\niodepth=4\nruntime=2\n\
                 time_based\nrate_iops=2000\n[lj]\nwrite_bw_log={p}/lj\nwrite_lat_log={p}/lj\n\
                 write_iops_log={p}/lj\n{avg}",
                p = out.display()
            );
            let path = d.path().join(format!("{who}.fio"));
            std::fs::write(&path, job).unwrap();
            run_job_file_ok(who, &path);
            runs.push(logs_in(&out));
        }
        let (theirs, ours) = (&runs[0], &runs[1]);
        assert_eq!(
            theirs.keys().collect::<Vec<_>>(),
            ours.keys().collect::<Vec<_>>(),
            "{avg:?}: the same files (lj_bw.1.log, lj_clat.1.log, …)"
        );
        for (name, t) in theirs {
            let o = &ours[name];
            // 2 s at 2000 IOPS: about 4000 lines per I/O (fio 3998), or 4
            // windows of 500 ms (fio drops a last partial one, and so does csdchar).
            let (nt, no) = (t.len() as f64, o.len() as f64);
            // (fio writes the window ending with the run or not, by timing).
            // Both tools pace to the same rate; on a loaded machine either may fall short for a
            // moment, so the counts agree within 15% (the format is what this test checks).
            assert!(
                (nt / no - 1.0).abs() < 0.15 || (nt - no).abs() <= 1.0,
                "{name}: fio {nt} lines, csdchar {no}"
            );
            assert_eq!(
                t[0].len(),
                o[0].len(),
                "{name}: columns {:?} vs {:?}",
                t[0],
                o[0]
            );
            for line in o {
                assert_eq!(line[2], "0", "{name}: reads are ddir 0");
                assert_eq!(line.last().unwrap(), "0", "{name}: prio");
                if avg.is_empty() {
                    assert_eq!(line[3], "4096", "{name}: bs");
                    if name.contains("iops") {
                        assert_eq!(line[1], "1");
                    }
                } else {
                    assert_eq!((line[3].as_str(), line[4].as_str()), ("0", "0"));
                }
            }
            if !avg.is_empty() && name.contains("iops") {
                // The windows hold the paced rate: none far above it, and on average close to it (a
                // loaded machine let one window of either tool fall to 1752 and catch up later).
                for lines in [o, t] {
                    let v: Vec<f64> = lines.iter().map(|l| l[1].parse().unwrap()).collect();
                    assert!(
                        v.iter().all(|&x| x > 0.0 && x < 2000.0 * 1.30),
                        "{name}: {v:?}"
                    );
                    let mean = v.iter().sum::<f64>() / v.len() as f64;
                    assert!((mean / 2000.0 - 1.0).abs() < 0.15, "{name}: {v:?}");
                }
            }
        }
    }
}

#[test]
fn steady_state_stops_the_job_as_fio_does_and_says_so_in_fio_s_keys() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("ss.fio");
    std::fs::write(
        &path,
        "[global]\nioengine=null\nsize=64m\nrw=randread\nruntime=30\ntime_based\nrate_iops=3000\n\
         [steady]\nsteadystate=iops:2%\nss_dur=3\nss_ramp=1\n",
    )
    .unwrap();
    let out = std::process::Command::new(fio().unwrap())
        .args(["--output-format=json", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let theirs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = common::csdchar(&[
        "block",
        "--job-file",
        path.to_str().unwrap(),
        "--output-format",
        "fio-json",
    ]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
    let ours: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let (t, o) = (&theirs["jobs"][0], &ours["jobs"][0]);
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&t["steadystate"]), keys(&o["steadystate"]));
    assert_eq!(
        keys(&t["steadystate"]["data"]),
        keys(&o["steadystate"]["data"])
    );
    for v in [t, o] {
        assert_eq!(v["steadystate"]["attained"], 1, "{}", v["steadystate"]);
        assert_eq!(v["steadystate"]["ss"], "iops:2.000000%");
        assert_eq!(
            v["steadystate"]["data"]["iops"].as_array().unwrap().len(),
            3
        );
        // Steady at 3000 IOPS within seconds, long before the 30 s runtime.
        assert!(
            v["job_runtime"].as_u64().unwrap() < 10_000,
            "{}",
            v["job_runtime"]
        );
    }
    // The csdchar result carries it too.
    let b = r.outcome.block.unwrap();
    let ss = b.steady_state.unwrap();
    // The window's mean at the paced 3000 IOPS (a loaded machine's window read 29xx).
    assert!(
        ss.attained && ss.iops_mean.abs_diff(3000) <= 30,
        "{}",
        ss.iops_mean
    );
}

#[test]
fn offset_modifiers_walk_the_blocks_in_fio_s_order() {
    if fio().is_none() {
        return;
    }
    for rw in ["read:-8k", "write:8k", "read:4k", "write:-4k"] {
        let d = tempfile::tempdir().unwrap();
        let job = format!("[global]\nioengine=null\nsize=64k\nbs=4k\nrw={rw}\n[walk]\n");
        let fio_job = d.path().join("fio.fio");
        let log = d.path().join("walk.iolog");
        std::fs::write(&fio_job, format!("{job}write_iolog={}\n", log.display())).unwrap();
        let out = std::process::Command::new(fio().unwrap())
            .arg("--output=/dev/null")
            .arg(&fio_job)
            .current_dir(d.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs: Vec<u64> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 5 && matches!(f[2], "read" | "write")).then(|| f[3].parse().unwrap())
            })
            .collect();
        let base = d.path().join("base.fio");
        std::fs::write(&base, &job).unwrap();
        let plan = csdchar_fio_like::jobfile::load_job_file(&base, false).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        run_block_with(&plan.jobs[0].spec, RunControl::quiet(), |_, _| {
            Ok(RecordingEngine::new(&seen, None))
        })
        .unwrap();
        let ours: Vec<u64> = seen.lock().unwrap().iter().map(|x| x.0).collect();
        assert_eq!(ours, theirs, "rw={rw}");
    }
}
