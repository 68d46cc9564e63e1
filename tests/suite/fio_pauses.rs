//! Jobs that pause and jobs that end others: `thinktime` (with
//! `thinktime_spin`, `thinktime_blocks`, `thinktime_blocks_type`) beside fio's
//! run of the same job file.

use crate::common;
use crate::fio_parity::fio;

use std::path::Path;

/// `job_runtime` (ms) and read I/Os of the first job, from fio's JSON or
/// csdchar's fio-json for the job file at `path`.
fn runtime_and_ios(who: &str, path: &Path) -> (f64, u64) {
    let stdout = if who == "fio" {
        let out = std::process::Command::new(fio().unwrap())
            .args(["--output-format=json", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    } else {
        let r = common::csdchar(&[
            "block",
            "--job-file",
            path.to_str().unwrap(),
            "--output-format",
            "fio-json",
        ]);
        assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
        r.stdout
    };
    let v: serde_json::Value = serde_json::from_str(&stdout[stdout.find('{').unwrap()..]).unwrap();
    let j = &v["jobs"][0];
    (
        j["job_runtime"].as_f64().unwrap(),
        j["read"]["total_ios"].as_u64().unwrap(),
    )
}

#[test]
fn thinktime_pauses_after_every_thinktime_blocks_as_fio() {
    if fio().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // 48 I/Os, a 15 ms pause (5 ms of it spinning) after every 4 issued or
    // completed: 11 or 12 pauses (counting completions, the last I/Os may
    // complete after the last check), 165-180 ms; without think time the
    // null engine takes well under a millisecond.
    for count in ["issue", "complete"] {
        let path = dir.path().join(format!("{count}.fio"));
        std::fs::write(
            &path,
            format!(
                "[global]\nioengine=null\nsize=1g\nbs=4k\nrw=randread\niodepth=4\nnumber_ios=48\n\
                 [think]\nthinktime=15ms\nthinktime_spin=5000\nthinktime_blocks=4\n\
                 thinktime_blocks_type={count}\n"
            ),
        )
        .unwrap();
        let (theirs, their_ios) = runtime_and_ios("fio", &path);
        let (ours, our_ios) = runtime_and_ios("csdchar", &path);
        assert_eq!((their_ios, our_ios), (48, 48), "{count}");
        for (who, ms) in [("fio", theirs), ("csdchar", ours)] {
            assert!(
                (160.0..400.0).contains(&ms),
                "{count}: {who} ran {ms} ms for 11-12 pauses of 15 ms"
            );
        }
    }
    // A job without thinktime_blocks pauses after every I/O, and a runtime
    // cuts the pause: 2 s of 1 s pauses end at 2 s, not 3.
    let path = dir.path().join("cut.fio");
    std::fs::write(
        &path,
        "[global]\nioengine=null\nsize=1g\nbs=4k\nrw=randread\nruntime=2\ntime_based\n\
         [cut]\nthinktime=1s\n",
    )
    .unwrap();
    let (ours, ios) = runtime_and_ios("csdchar", &path);
    assert!((1900.0..2600.0).contains(&ours), "ran {ours} ms");
    assert!((2..=3).contains(&ios), "{ios} I/Os in 2 s of 1 s pauses");
}

/// Each job's `job_runtime` (ms) by name, from fio's JSON or csdchar's fio-json.
fn runtimes(who: &str, path: &Path) -> Vec<(String, f64)> {
    let stdout = if who == "fio" {
        let out = std::process::Command::new(fio().unwrap())
            .args(["--output-format=json", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    } else {
        let r = common::csdchar(&[
            "block",
            "--job-file",
            path.to_str().unwrap(),
            "--output-format",
            "fio-json",
        ]);
        assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
        r.stdout
    };
    let v: serde_json::Value = serde_json::from_str(&stdout[stdout.find('{').unwrap()..]).unwrap();
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["job_runtime"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn exitall_ends_the_jobs_exit_what_names_as_fio() {
    if fio().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A 1 s job beside a 3 s one: with exitall the short one's end ends the
    // long one when they share a group (exit_what=group) or when it is
    // running (exit_what=stonewall), not when it is in another group.
    for (long_group, what, long_ms) in [
        ("", "group", 1000.0),
        ("new_group\n", "group", 3000.0),
        ("new_group\n", "stonewall", 1000.0),
    ] {
        let path = dir.path().join("exitall.fio");
        std::fs::write(
            &path,
            format!(
                "[global]\nioengine=null\nsize=100g\nbs=4k\nrw=randread\ntime_based\nexitall\n\
                 [short]\nruntime=1\nexit_what={what}\n[long]\n{long_group}runtime=3\n"
            ),
        )
        .unwrap();
        for who in ["fio", "csdchar"] {
            let got = runtimes(who, &path);
            let long = got.iter().find(|(n, _)| n == "long").unwrap().1;
            assert!(
                (long - long_ms).abs() < 400.0,
                "{who}, exit_what={what}, {long_group:?}: long ran {long} ms, not about {long_ms}"
            );
        }
    }
}
