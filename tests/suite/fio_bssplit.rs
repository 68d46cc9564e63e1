//! fio's `bssplit` against fio itself: the share of each block size in the
//! per-I/O latency log (column 4 is the block size) of the same job, the
//! sequential walk over the region, and what csdchar refuses.

use crate::common;
use crate::fio_parity::{fio, logs_in};

use std::collections::BTreeMap;
use std::path::Path;

/// Runs `body` (a job section's options after `[bsj]`, with a lat log into
/// the tool's own directory) through fio and csdchar; the lat log's lines of each.
fn both(dir: &Path, global: &str, body: &str) -> [Vec<Vec<String>>; 2] {
    ["fio", "csdchar"].map(|who| {
        let out = dir.join(who);
        std::fs::create_dir(&out).unwrap();
        let job = format!(
            "[global]\n{global}\n[bsj]\n{body}\nwrite_lat_log={}/bsj\nlog_offset=1\n",
            out.display()
        );
        let path = dir.join(format!("{who}.fio"));
        std::fs::write(&path, job).unwrap();
        crate::fio_parity::run_job_file_ok(who, &path);
        logs_in(&out).remove("bsj_lat.1.log").expect("a lat log")
    })
}

/// Percent of each direction's I/Os per block size: (ddir, bs) -> %.
fn shares(lines: &[Vec<String>]) -> BTreeMap<(String, u64), f64> {
    let mut count: BTreeMap<(String, u64), f64> = BTreeMap::new();
    let mut per_dir: BTreeMap<String, f64> = BTreeMap::new();
    for l in lines {
        *count
            .entry((l[2].clone(), l[3].parse().unwrap()))
            .or_default() += 1.0;
        *per_dir.entry(l[2].clone()).or_default() += 1.0;
    }
    count
        .into_iter()
        .map(|(k, c)| {
            let n = per_dir[&k.0];
            (k, c / n * 100.0)
        })
        .collect()
}

fn assert_shares_agree(what: &str, theirs: &[Vec<String>], ours: &[Vec<String>]) {
    let (t, o) = (shares(theirs), shares(ours));
    assert_eq!(
        t.keys().collect::<Vec<_>>(),
        o.keys().collect::<Vec<_>>(),
        "{what}: the same sizes per direction"
    );
    for (k, tv) in &t {
        let ov = o[k];
        assert!(
            (tv - ov).abs() <= 2.0,
            "{what}: {k:?} is {tv:.2}% of fio's I/Os and {ov:.2}% of csdchar's"
        );
    }
}

#[test]
fn block_sizes_take_fio_s_shares_per_direction() {
    if fio().is_none() {
        return;
    }
    // IOMeter's file server mix (fio's examples/iometer-file-access-server.fio); csdchar's
    // random offsets are fio's norandommap (fio's random map would shorten I/Os that run into
    // blocks already done), and a list per direction with a share left out.
    for (global, body) in [
        (
            "ioengine=null\nsize=1g\nrw=randrw\nrwmixread=80\niodepth=8\nnorandommap",
            "bssplit=512/10:1k/5:2k/5:4k/60:8k/2:16k/4:32k/4:64k/10",
        ),
        (
            "ioengine=null\nsize=2g\nrw=randrw\nrwmixread=50\nnorandommap",
            "bssplit=4k/50:64k/50,4k/20:16k:8k/30",
        ),
    ] {
        let d = tempfile::tempdir().unwrap();
        let [theirs, ours] = both(d.path(), global, body);
        assert_shares_agree(body, &theirs, &ours);
        // fio stops when the bytes reach size (not a number of I/Os): as many lines within 3%.
        let (nt, no) = (theirs.len() as f64, ours.len() as f64);
        assert!(
            (nt / no - 1.0).abs() < 0.03,
            "{body}: fio {nt} I/Os, csdchar {no}"
        );
    }
}

#[test]
fn reads_and_writes_of_their_own_sizes_land_as_fio_s() {
    if fio().is_none() {
        return;
    }
    // bs=R,W and lists whose smallest sizes differ (fio's examples/cmdprio-bssplit.fio):
    // each direction's offsets are multiples of its own smallest size.
    for (global, body, units) in [
        (
            "ioengine=null\nsize=1g\nrw=randrw\nnorandommap",
            "bs=4k,64k",
            [4096u64, 65536],
        ),
        (
            "ioengine=null\nsize=4g\nrw=randrw\nnorandommap",
            "bssplit=64k/40:1024k/60,1024k/100",
            [65536, 1 << 20],
        ),
    ] {
        let d = tempfile::tempdir().unwrap();
        let [theirs, ours] = both(d.path(), global, body);
        assert_shares_agree(body, &theirs, &ours);
        let (nt, no) = (theirs.len() as f64, ours.len() as f64);
        assert!(
            (nt / no - 1.0).abs() < 0.03,
            "{body}: fio {nt} I/Os, csdchar {no}"
        );
        for (who, lines) in [("fio", &theirs), ("csdchar", &ours)] {
            for l in lines.iter() {
                let (dir, off): (usize, u64) = (l[2].parse().unwrap(), l[4].parse().unwrap());
                assert_eq!(off % units[dir], 0, "{who} {body}: {l:?}");
            }
        }
    }
    // Sequential: each direction walks from the start on its own.
    let d = tempfile::tempdir().unwrap();
    let [theirs, ours] = both(d.path(), "ioengine=null\nsize=256m\nrw=rw", "bs=4k,64k");
    for (who, lines) in [("fio", &theirs), ("csdchar", &ours)] {
        let mut pos = [0u64; 2];
        for l in lines.iter() {
            let (dir, bs, off): (usize, u64, u64) = (
                l[2].parse().unwrap(),
                l[3].parse().unwrap(),
                l[4].parse().unwrap(),
            );
            assert_eq!(bs, [4096, 65536][dir], "{who}: {l:?}");
            assert_eq!(off, pos[dir], "{who}: {l:?}");
            pos[dir] += bs;
        }
    }
}

#[test]
fn a_sequential_mix_walks_the_region_end_to_end_as_fio_does() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let size = 1u64 << 30;
    let [theirs, ours] = both(
        d.path(),
        "ioengine=null\nsize=1g\nrw=write",
        "bssplit=4k/30:8k/30:64k",
    );
    assert_shares_agree("sequential", &theirs, &ours);
    for (who, lines) in [("fio", &theirs), ("csdchar", &ours)] {
        // Each I/O starts where the one before ended; the last ends at the region's end.
        let mut pos = 0u64;
        for l in lines.iter() {
            let (bs, off): (u64, u64) = (l[3].parse().unwrap(), l[4].parse().unwrap());
            assert_eq!(off, pos, "{who}: {l:?}");
            pos += bs;
        }
        assert_eq!(pos, size, "{who}: the writes cover the region once");
    }
}

#[test]
fn bssplit_on_the_command_line_is_the_job_file_s() {
    let d = tempfile::tempdir().unwrap();
    let job = d.path().join("j.fio");
    std::fs::write(
        &job,
        "[j]\nioengine=null\nsize=64m\nrw=randread\nrandseed=7\nbssplit=4k/25:16k\n",
    )
    .unwrap();
    let plan = csdchar_fio_like::jobfile::load_job_file(&job, false).unwrap();
    let cli = common::block_spec(&[
        "--engine",
        "null",
        "--size",
        "64m",
        "--rw",
        "randread",
        "--bssplit",
        "4k/25:16k",
    ]);
    assert_eq!(cli.bssplit, plan.jobs[0].spec.bssplit);
    assert_eq!((cli.bs, cli.max_bs()), (4096, 16384));
    // The result counts the bytes of both sizes: 16k is 75% of the I/Os.
    let r = common::csdchar(&[
        "block",
        "--engine",
        "null",
        "--size",
        "64m",
        "--rw",
        "randread",
        "--bssplit",
        "4k/25:16k",
        "--output-format",
        "json",
    ]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let read = &v["read"];
    let (ios, bytes) = (
        read["ios"].as_f64().unwrap(),
        read["bytes"].as_f64().unwrap(),
    );
    let mean = bytes / ios;
    let want = 0.25 * 4096.0 + 0.75 * 16384.0;
    assert!(
        (mean / want - 1.0).abs() < 0.02,
        "mean I/O {mean}, want {want}"
    );
    assert!(
        bytes >= (64u64 << 20) as f64,
        "stops once the bytes reach size"
    );
}

#[test]
fn what_csdchar_does_not_run_of_bssplit_is_refused_by_line() {
    let d = tempfile::tempdir().unwrap();
    for (body, line, why) in [
        ("rw=write\nverify=crc32c\nbssplit=4k/50:8k/50", 3, "verify"),
        ("rw=randtrimwrite\nbssplit=4k/50:8k/50", 2, "trimwrite"),
        (
            "rw=randrw\nrandom_distribution=zipf:1.2\nbssplit=4k/50:8k/50,8k/50:16k/50",
            3,
            "skewed",
        ),
        (
            "rw=randread\nbssplit=4k/50:8k/50\nbs_unaligned",
            3,
            "multiples",
        ),
    ] {
        let job = d.path().join("r.fio");
        std::fs::write(&job, format!("[r]\nioengine=null\nsize=64m\n{body}\n")).unwrap();
        let r = common::csdchar(&["block", "--job-file", job.to_str().unwrap()]);
        assert_eq!(r.outcome.exit_code, 2, "{body}: {}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
        assert!(
            r.stderr.contains(&format!("r.fio:{}", line + 3)) && r.stderr.contains(why),
            "{body}: {}",
            r.stderr
        );
    }
    let r = common::csdchar(&[
        "block",
        "--engine",
        "null",
        "--size",
        "64m",
        "--rw",
        "randrw",
        "--bssplit",
        "4k/50:8k/50,8k",
        "--random-distribution",
        "zipf:1.2",
    ]);
    assert_eq!(r.outcome.exit_code, 2);
    assert!(r.stderr.contains("--bssplit"), "{}", r.stderr);
}
