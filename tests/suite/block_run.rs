//! `csdchar block` in-process on regular files, as any user.

use crate::common;

use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{RecordingEngine, assert_matches_schema, block_spec, csdchar, csdchar_with_interrupt};
use csdchar_core::result::RunStatus;
use csdchar_fio_like::{EngineError, RunControl, run_block_with};

fn tmp() -> tempfile::TempDir {
    // /var/tmp is disk-backed (O_DIRECT works), unlike a tmpfs /tmp on some hosts.
    tempfile::Builder::new()
        .prefix("csdchar-test")
        .tempdir_in("/var/tmp")
        .expect("temp dir")
}

#[test]
fn randwrite_json_has_iops_percentiles_series_and_matches_schema() {
    let dir = tmp();
    let file = dir.path().join("data");
    let f = file.to_str().unwrap();
    let ran = csdchar(&[
        "block",
        "--rw",
        "randwrite",
        "--bs",
        "4k",
        "--iodepth",
        "32",
        "--runtime",
        "2s",
        "--time-based",
        "--compress",
        "75",
        "--size",
        "64m",
        f,
        "--output-format",
        "json",
        "--log-interval",
        "500ms",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "stderr: {}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).expect("stdout is only JSON");
    assert_matches_schema(&v, "block");
    assert_eq!(v["schema"], "csdchar.block/1");
    assert_eq!(v["status"], "completed");
    assert!(v["read"].is_null());
    let w = &v["write"];
    assert!(w["iops"].as_f64().unwrap() > 0.0);
    let pcts = w["lat"]["percentiles"].as_array().unwrap();
    assert_eq!(pcts.len(), 17);
    assert!(pcts.iter().all(|p| p["value_ns"].as_u64().unwrap() > 0));
    let series = v["intervals"].as_array().unwrap();
    assert!(series.len() >= 4, "{} intervals", series.len());
    let ios: u64 = series
        .iter()
        .map(|s| s["write"]["ios"].as_u64().unwrap())
        .sum();
    assert_eq!(
        ios,
        w["ios"].as_u64().unwrap(),
        "series adds up to the total"
    );
    // The written data compresses as asked (per-4K lz4 within 5% of 4:1).
    let lz4 = v["data"]["lz4_ratio"].as_f64().unwrap();
    assert!((lz4 / 4.0 - 1.0).abs() < 0.05, "lz4 ratio {lz4}");
    assert!(v["cpu"]["user_s"].as_f64().unwrap() >= 0.0);
    let typed = ran.outcome.block.unwrap();
    assert!(typed.jobs[0].write.as_ref().unwrap().ios > 0);
}

#[test]
fn committed_schemas_are_current_and_document_every_field() {
    for (name, generated) in [
        ("block", csdchar_cli::block_schema()),
        ("capacity", csdchar_cli::capacity_schema()),
        ("estimate", csdchar_cli::estimate_schema()),
        ("db", csdchar_cli::db_schema()),
        ("study", csdchar_cli::study_schema()),
    ] {
        let generated: serde_json::Value = serde_json::from_str(&generated).unwrap();
        let committed = common::committed_schema(name);
        assert!(
            generated == committed,
            "schemas/csdchar.{name}-1.schema.json is stale: regenerate with \
             `cargo run -p csdchar-cli -- schema {name} > schemas/csdchar.{name}-1.schema.json`"
        );
        assert_documented(&generated);
    }
}

fn assert_documented(generated: &serde_json::Value) {
    let mut undocumented = Vec::new();
    fn walk(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
        if let Some(props) = v.get("properties").and_then(|p| p.as_object()) {
            for (name, p) in props {
                if p.get("description").is_none() {
                    out.push(format!("{path}.{name}"));
                }
            }
        }
        if let Some(defs) = v.get("$defs").and_then(|d| d.as_object()) {
            for (name, d) in defs {
                walk(d, name, out);
            }
        }
    }
    walk(generated, "result", &mut undocumented);
    assert!(
        undocumented.is_empty(),
        "fields without a description: {undocumented:?}"
    );
}

#[test]
fn bad_input_exits_2_with_one_line_and_writes_nothing() {
    let dir = tmp();
    let target = dir.path().join("never");
    let out = dir.path().join("out.json");
    let t = target.to_str().unwrap();
    let o = out.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["block", "--bs", "4x", "--size", "1m", t], "--bs"),
        (&["block", "--iodepth", "0", "--size", "1m", t], "--iodepth"),
        (
            &["block", "--compress", "101", "--size", "1m", t],
            "--compress",
        ),
        (&["block", "--rw", "sideways", "--size", "1m", t], "--rw"),
        (
            &["block", "--time-based", "--size", "1m", t, "--output", o],
            "--time-based",
        ),
        (
            &["block", "--runtime", "soon", "--size", "1m", t],
            "--runtime",
        ),
        (
            &[
                "block", "--verify", "crc32c", "--rw", "randread", "--size", "1m", t,
            ],
            "--verify",
        ),
        (&["block", "--rw", "write", t, "--output", o], "--size"),
        (&["block", "--bs", "1000", "--size", "1m", t], "--bs"),
        (
            &[
                "block",
                "--size",
                "1m",
                t,
                "--output",
                "/nonexistent/dir/x.json",
            ],
            "--output",
        ),
    ];
    for (args, option) in cases {
        let ran = csdchar(args);
        assert_eq!(ran.outcome.exit_code, 2, "{args:?}: {}", ran.stderr);
        let msg = ran.stderr.trim_end();
        assert_eq!(msg.lines().count(), 1, "{args:?}: not one line: {msg}");
        assert!(
            msg.contains(option),
            "{args:?}: '{msg}' does not name {option}"
        );
        assert!(ran.stdout.is_empty());
        assert!(!target.exists(), "{args:?} created the target");
        assert!(!out.exists(), "{args:?} wrote the output file");
    }
}

#[test]
fn sequential_read_lays_out_the_file_and_reads_it() {
    let dir = tmp();
    let file = dir.path().join("seq");
    let f = file.to_str().unwrap();
    let ran = csdchar(&[
        "block",
        "--rw",
        "read",
        "--bs",
        "128k",
        "--iodepth",
        "4",
        "--size",
        "8m",
        f,
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let r = ran.outcome.block.unwrap();
    assert!(r.target.laid_out);
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 8 << 20);
    // Not time-based: exactly size / bs I/Os.
    assert_eq!(r.read.unwrap().ios, 64);
}

#[test]
fn randrw_mix_follows_rwmixread() {
    let ran = csdchar(&[
        "block",
        "--engine",
        "null",
        "--rw",
        "randrw",
        "--rwmixread",
        "70",
        "--size",
        "400m",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let r = ran.outcome.block.unwrap();
    let (reads, writes) = (r.read.unwrap().ios as f64, r.write.unwrap().ios as f64);
    assert_eq!(reads + writes, (400 << 20) as f64 / 4096.0);
    let share = reads / (reads + writes);
    assert!((share - 0.70).abs() < 0.01, "read share {share}");
}

#[test]
fn verify_finds_blocks_corrupted_behind_the_engines_back() {
    let dir = tmp();
    let file = dir.path().join("v");
    let f = file.to_str().unwrap();
    let common = [
        "--bs",
        "4k",
        "--size",
        "4m",
        "--seed",
        "77",
        "--iodepth",
        "8",
    ];
    let mut args = vec![
        "block",
        "--rw",
        "randwrite",
        "--verify",
        "crc32c",
        f,
        "--output-format",
        "json",
    ];
    args.extend_from_slice(&common);
    let ran = csdchar(&args);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v = ran.outcome.block.unwrap().verify.unwrap();
    assert_eq!((v.blocks_checked, v.bad_block_count), (1024, 0));

    let fh = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    fh.write_at(b"garbage", 4096 * 10 + 100).unwrap();
    fh.write_at(&[0u8; 4096], 4096 * 900).unwrap();
    fh.sync_all().unwrap();

    let mut args = vec!["block", "--verify-only", f, "--output-format", "json"];
    args.extend_from_slice(&common);
    let ran = csdchar(&args);
    assert_eq!(ran.outcome.exit_code, 1);
    let r = ran.outcome.block.unwrap();
    assert_eq!(r.status, RunStatus::VerifyFailed);
    let v = r.verify.unwrap();
    assert_eq!(v.blocks_checked, 1024);
    let lbas: Vec<u64> = v.bad_blocks.iter().map(|b| b.lba).collect();
    let lbs = u64::from(r.target.logical_block_size);
    assert_eq!(lbas, vec![4096 * 10 / lbs, 4096 * 900 / lbs]);
    assert!(v.bad_blocks[0].reason.contains("crc32c"));
    assert!(v.bad_blocks[1].reason.contains("magic"));

    // Another seed reads everything as stale.
    let ran = csdchar(&[
        "block",
        "--verify-only",
        f,
        "--bs",
        "4k",
        "--size",
        "4m",
        "--seed",
        "78",
    ]);
    assert_eq!(ran.outcome.exit_code, 1);
    assert!(ran.stdout.contains("stale"), "{}", ran.stdout);
}

#[test]
fn interrupt_saves_a_partial_result_with_exit_130() {
    let dir = tmp();
    let out = dir.path().join("partial.json");
    // Startup (buffer generation, compressibility check) takes longer on a
    // loaded machine: an interrupt that lands before the first I/O is retried
    // later rather than taken as a failure.
    for delay_ms in [700, 2_000, 6_000] {
        let flag = Arc::new(AtomicBool::new(false));
        let setter = Arc::clone(&flag);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(delay_ms));
            setter.store(true, Ordering::Relaxed);
        });
        let ran = csdchar_with_interrupt(
            &[
                "block",
                "--engine",
                "null",
                "--rw",
                "randread",
                "--runtime",
                "60s",
                "--time-based",
                "--output-format",
                "json",
                "--output",
                out.to_str().unwrap(),
            ],
            flag,
        );
        t.join().unwrap();
        assert_eq!(ran.outcome.exit_code, 130);
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        assert_matches_schema(&v, "block");
        assert_eq!(v["status"], "interrupted");
        assert!(v["elapsed_ns"].as_u64().unwrap() < 30_000_000_000);
        if v["read"]["ios"].as_u64().unwrap() > 0 {
            return;
        }
    }
    panic!("no I/O was counted before the interrupt, even after 6 s");
}

#[test]
fn io_error_stops_cleanly_with_offset_and_partial_totals() {
    let spec = block_spec(&[
        "--engine",
        "null",
        "--rw",
        "write",
        "--bs",
        "4k",
        "--size",
        "1m",
        "--iodepth",
        "4",
    ]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let r = run_block_with(&spec, RunControl::quiet(), |_, _| {
        Ok(RecordingEngine::new(&seen, Some(100 * 4096)))
    })
    .unwrap();
    assert_eq!(r.status, RunStatus::IoError);
    let e = r.error.unwrap();
    assert_eq!(e.offset, Some(100 * 4096));
    assert_eq!(e.errno, Some(libc::EIO));
    assert_eq!(e.direction.as_deref(), Some("write"));
    let w = r.write.unwrap();
    // Everything before the failed write completed; at most a batch after it.
    assert!(w.ios >= 100 && w.ios < 110, "{} ios", w.ios);
    assert!(seen.lock().unwrap().len() < 256);
}

#[test]
fn ramp_time_is_not_measured_and_percentile_list_is_honoured() {
    let ran = csdchar(&[
        "block",
        "--engine",
        "null",
        "--rw",
        "randread",
        "--ramp-time",
        "400ms",
        "--runtime",
        "600ms",
        "--time-based",
        "--log-interval",
        "100ms",
        "--percentile-list",
        "50,99.9",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let r = ran.outcome.block.unwrap();
    let ms = r.elapsed_ns / 1_000_000;
    assert!(
        (590..900).contains(&ms),
        "measured {ms} ms, ramp must not count"
    );
    let read = r.read.unwrap();
    let pcts: Vec<f64> = read.lat.percentiles.iter().map(|p| p.percentile).collect();
    assert_eq!(pcts, vec![50.0, 99.9]);
    let series_ios: u64 = r.intervals.iter().map(|s| s.read.unwrap().ios).sum();
    assert_eq!(series_ios, read.ios);
    assert!(r.intervals.len() >= 6, "{} intervals", r.intervals.len());
    // Without --size the null engine's region is recorded as used.
    assert_eq!(r.spec.size, 1 << 30);
}

#[test]
fn unavailable_engine_says_so_and_touches_nothing() {
    let dir = tmp();
    let target = dir.path().join("untouched");
    let spec = block_spec(&["--rw", "write", "--size", "1m", target.to_str().unwrap()]);
    let err = run_block_with(&spec, RunControl::quiet(), |_, _| {
        Err::<csdchar_fio_like::NullEngine, _>(EngineError::Unavailable(
            "io_uring is unavailable: io_uring_setup was denied (kernel.io_uring_disabled=2)"
                .into(),
        ))
    })
    .unwrap_err();
    assert_eq!(err.exit_code(), 1);
    assert!(err.to_string().contains("io_uring is unavailable"));
    assert!(!target.exists());
}

#[test]
fn a_run_that_fails_before_its_first_io_removes_only_the_file_it_created() {
    let dir = tmp();
    // The engine probe passes, then no job gets an engine for the target.
    let run = |target: &std::path::Path| {
        let spec = block_spec(&["--rw", "write", "--size", "1m", target.to_str().unwrap()]);
        run_block_with(&spec, RunControl::quiet(), |fd, _| {
            if fd < 0 {
                Ok(csdchar_fio_like::NullEngine::new())
            } else {
                Err(EngineError::Unavailable("no engine for this target".into()))
            }
        })
        .unwrap()
    };
    let fresh = dir.path().join("fresh.dat");
    let r = run(&fresh);
    assert_eq!(r.status, RunStatus::IoError);
    assert!(!fresh.exists(), "the file the run created is left behind");

    let kept = dir.path().join("kept.dat");
    std::fs::write(&kept, vec![5u8; 4096]).unwrap();
    let r = run(&kept);
    assert_eq!(r.status, RunStatus::IoError);
    assert!(kept.exists(), "a pre-existing file must never be removed");
}

#[test]
fn a_sliver_of_a_last_interval_is_folded_into_the_one_before() {
    // 1005 ms of 100 ms intervals: without care the last would be a ~5 ms
    // interval whose few I/Os give a meaningless rate and p99; it is folded
    // into the one before.
    let ran = csdchar(&[
        "block",
        "--engine",
        "null",
        "--runtime",
        "1005ms",
        "--time-based",
        "--log-interval",
        "100ms",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let r = ran.outcome.block.expect("a result");
    assert!(r.intervals.len() >= 9, "{} intervals", r.intervals.len());
    for s in &r.intervals {
        assert!(
            s.duration_ms >= 10,
            "interval {} lasted {} ms",
            s.index,
            s.duration_ms
        );
    }
    // The printed lines are the recorded intervals.
    let lines = ran.stdout.lines().filter(|l| l.starts_with("[ ")).count();
    assert_eq!(lines, r.intervals.len(), "{}", ran.stdout);
    // The sliver's I/Os are in the last interval: the series adds up to the total.
    let in_series: u64 = r
        .intervals
        .iter()
        .filter_map(|s| s.read)
        .map(|d| d.ios)
        .sum();
    assert_eq!(r.read.unwrap().ios, in_series);
}

#[test]
fn io_uring_engine_sets_up_or_says_why_not() {
    use csdchar_fio_like::IoEngine;
    match csdchar_fio_like::uring::UringEngine::new(-1, 8) {
        Ok(e) => {
            let info = e.info();
            assert_eq!(info.name, csdchar_core::result::block::EngineKind::Uring);
            // fd -1 cannot be registered: the engine must say it uses a plain fd.
            assert!(!info.fixed_files);
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("io_uring is unavailable"), "{msg}");
            eprintln!("skipped io_uring setup checks: {msg}");
        }
    }
}

/// Allocated bytes of a file (st_blocks × 512).
fn allocated(path: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().blocks() * 512
}

#[test]
fn trims_punch_holes_in_a_file_and_keep_its_size() {
    let dir = tmp();
    let file = dir.path().join("data");
    let f = file.to_str().unwrap();
    let ran = csdchar(&["block", "--rw", "write", "--size", "8m", "--bs", "64k", f]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let full = allocated(&file);
    if full < 8 << 20 {
        eprintln!("skipped: the file system did not allocate the written file ({full} bytes)");
        return;
    }
    let ran = csdchar(&[
        "block",
        "--rw",
        "randtrim",
        "--bs",
        "64k",
        "--size",
        "8m",
        "--iodepth",
        "4",
        f,
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let r = ran.outcome.block.unwrap();
    let t = r.trim.as_ref().expect("trim totals");
    assert_eq!((t.ios, t.bytes), (128, 8 << 20));
    assert!(r.read.is_none() && r.write.is_none() && r.data.is_none());
    assert!(r.intervals.iter().all(|s| s.trim.is_some()));
    let v = serde_json::to_value(&r).unwrap();
    assert_matches_schema(&v, "block");
    // Random trims repeat blocks: some of the file is still there.
    let left = allocated(&file);
    assert!(left < full * 8 / 10, "allocated {full} -> {left}");
    assert_eq!(
        std::fs::metadata(&file).unwrap().len(),
        8 << 20,
        "size kept"
    );
    // Sequential trims of the whole file free it all.
    let ran = csdchar(&["block", "--rw", "trim", "--bs", "1m", "--size", "8m", f]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("trim"), "{}", ran.stdout);
    assert_eq!(allocated(&file), 0);
    // trimwrite writes every block back after trimming it.
    let ran = csdchar(&[
        "block",
        "--rw",
        "trimwrite",
        "--bs",
        "64k",
        "--size",
        "8m",
        f,
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(allocated(&file) >= 8 << 20);
}

#[test]
fn start_at_records_the_measured_start_and_says_when_it_began_late() {
    // On time: the result's start is the instant waited for, not the moment the command began.
    let at = std::time::SystemTime::now() + Duration::from_millis(1500);
    let text = csdchar_core::start_at::format_rfc3339_millis(at);
    let ran = csdchar(&[
        "block",
        "--engine",
        "null",
        "--rw",
        "randread",
        "--runtime",
        "200ms",
        "--time-based",
        "--start-at",
        &text,
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let r = ran.outcome.block.unwrap();
    let start = r.start.expect("a start record");
    assert_eq!(start.requested, text);
    assert!(start.late_ms < start.limit_ms, "{start:?}");
    assert!(!start.too_late);
    assert_eq!(
        r.started_at, start.began,
        "the recorded start is the measured one"
    );
    assert!(r.started_at >= text, "{} before {text}", r.started_at);
    assert!(!ran.stderr.contains("began"), "{}", ran.stderr);

    // Late: an instant the set-up overran (here one already past) is recorded and reported.
    let mut spec = block_spec(&[
        "--engine",
        "null",
        "--rw",
        "randread",
        "--runtime",
        "100ms",
        "--time-based",
    ]);
    let past = std::time::SystemTime::now() - Duration::from_millis(700);
    spec.start_at = Some(csdchar_core::start_at::format_rfc3339_millis(past));
    let ctl = RunControl {
        start_late_limit: Duration::from_millis(50),
        ..RunControl::quiet()
    };
    let r = run_block_with(&spec, ctl, |_, _| {
        Ok::<_, EngineError>(csdchar_fio_like::NullEngine::new())
    })
    .unwrap();
    let start = r.start.expect("a start record");
    assert!(start.late_ms >= 650.0, "{start:?}");
    assert!(start.too_late);
    assert_eq!(r.started_at, start.began);
    assert!(csdchar_cli::block_cmd::late_start_note(&start).contains("--start-late-limit"));

    // Without --start-at there is no record.
    let ran = csdchar(&[
        "block",
        "--engine",
        "null",
        "--rw",
        "read",
        "--runtime",
        "50ms",
        "--time-based",
        "--output-format",
        "json",
    ]);
    assert!(ran.outcome.block.unwrap().start.is_none());
}

#[test]
fn loops_io_size_and_number_ios_set_the_amount_of_io_as_fio_does() {
    let ios = |args: &[&str]| {
        let mut a = vec![
            "block",
            "--engine",
            "null",
            "--rw",
            "randread",
            "--size",
            "1m",
            "--output-format",
            "json",
        ];
        a.extend_from_slice(args);
        let ran = csdchar(&a);
        assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
        ran.outcome.block.unwrap().read.unwrap().ios
    };
    assert_eq!(ios(&[]), 256);
    assert_eq!(ios(&["--loops", "3"]), 768);
    // io_size beyond the region wraps around it.
    assert_eq!(ios(&["--io-size", "4m"]), 1024);
    assert_eq!(ios(&["--number-ios", "10"]), 10);
    // fio: number_ios and loops multiply.
    assert_eq!(ios(&["--number-ios", "10", "--loops", "2"]), 20);
}
