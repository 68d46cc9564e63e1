//! Jobs that pause and jobs that end others: `thinktime` (with
//! `thinktime_spin`, `thinktime_blocks`, `thinktime_blocks_type`) beside fio's
//! run of the same job file.

use crate::fio_parity::{fio, fio_json_of};

use std::path::Path;

/// fio's or csdchar's fio-json for the job file at `path`; None when fio
/// hung (20 s: these runs take well under a second), as fio 3.33 does now and
/// then on these think-time jobs with the null engine.
fn fio_json(who: &str, path: &Path) -> Option<serde_json::Value> {
    fio_json_of(who, path, std::time::Duration::from_secs(20))
        .unwrap_or_else(|(code, e)| panic!("{who} exited {code}: {e}"))
}

/// `job_runtime` (ms) and read I/Os of the first job; None when fio hung.
fn runtime_and_ios(who: &str, path: &Path) -> Option<(f64, u64)> {
    let v = fio_json(who, path)?;
    let j = &v["jobs"][0];
    Some((
        j["job_runtime"].as_f64().unwrap(),
        j["read"]["total_ios"].as_u64().unwrap(),
    ))
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
        // Both held to the count fio's documentation gives (fio's side left
        // out when it hangs, see fio_json).
        let runs = [
            ("csdchar", runtime_and_ios("csdchar", &path)),
            ("fio", runtime_and_ios("fio", &path)),
        ];
        for (who, (ms, ios)) in runs.into_iter().filter_map(|(w, r)| Some((w, r?))) {
            assert_eq!(ios, 48, "{count}: {who}");
            // Under 160 ms could not hold 11 pauses of 15 ms; the upper
            // bound only catches pauses far too long or too many.
            assert!(
                (160.0..600.0).contains(&ms),
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
    let (ours, ios) = runtime_and_ios("csdchar", &path).unwrap();
    assert!((1900.0..2800.0).contains(&ours), "ran {ours} ms");
    assert!((2..=3).contains(&ios), "{ios} I/Os in 2 s of 1 s pauses");
}

/// Each job's `job_runtime` (ms) by name; None when fio hung.
fn runtimes(who: &str, path: &Path) -> Option<Vec<(String, f64)>> {
    let v = fio_json(who, path)?;
    let jobs = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["job_runtime"].as_f64().unwrap(),
            )
        })
        .collect();
    Some(jobs)
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
    for (long_group, what, long_ended_early) in [
        ("", "group", true),
        ("new_group\n", "group", false),
        ("new_group\n", "stonewall", true),
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
            let Some(got) = runtimes(who, &path) else {
                continue;
            };
            let long = got.iter().find(|(n, _)| n == "long").unwrap().1;
            // Ended with the short job: about 1 s; ran out its own time: 3 s.
            // The midpoint tells them apart however loaded the machine is.
            assert_eq!(
                long < 2000.0,
                long_ended_early,
                "{who}, exit_what={what}, {long_group:?}: long ran {long} ms"
            );
            if !long_ended_early {
                assert!(long >= 2900.0, "{who}: long ran {long} ms of its 3 s");
            }
        }
    }
}
