//! fio's examples/cross-stripe-verify.fio scaled down (a temporary file,
//! small offsets and increments, 3 clones) beside fio 3.33: verify in a
//! sequential write job that does not cover its region once (`io_size`,
//! `loops`, the offset modifier `rw=write:112k`) checks the blocks written,
//! each loop's; `verify_backlog` reads each block back right after its write;
//! a corruption between the writes and the check is found at fio's offset.

use crate::common;
use crate::fio_parity::fio;

use std::path::Path;

/// cross-stripe-verify.fio with a 1 MiB region per clone (fio's 124g apart),
/// 120k in, 16k written every 128k; `direct` off for any temporary directory.
const CROSS_STRIPE: &str = "[global]\nbs=16k\nrw=write:112k\nverify=crc32c\n\
                            filename=DIR/stripes\nsize=1m\nverify_backlog=1\n\
                            offset_increment=1m\nio_size=512k\noffset=120k\n\
                            group_reporting\nloops=2\n[write-verify]\nnumjobs=3\n";

/// Runs `job` (DIR replaced by `dir`) through fio or csdchar; (exit code,
/// JSON, stderr). csdchar's JSON is its own (`verify` there).
pub(crate) fn run(
    who: &str,
    dir: &Path,
    name: &str,
    job: &str,
) -> (i32, serde_json::Value, String) {
    let path = dir.join(name);
    std::fs::write(&path, job.replace("DIR", dir.to_str().unwrap())).unwrap();
    let p = path.to_str().unwrap();
    let (code, out, err) = if who == "fio" {
        // fio leaves its verify state files (local-*-verify.state) there.
        let o = std::process::Command::new(fio().unwrap())
            .current_dir(dir)
            .args(["--output-format=json", p])
            .output()
            .unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    } else {
        let r = common::csdchar(&["block", "--job-file", p, "--output-format", "json"]);
        (r.outcome.exit_code, r.stdout, r.stderr)
    };
    // fio prints its warnings ahead of the JSON.
    let json =
        serde_json::from_str(&out[out.find('{').unwrap_or(0)..]).unwrap_or(serde_json::Value::Null);
    (code, json, err)
}

/// fio's (read, write) I/Os summed over its jobs.
fn fio_ios(v: &serde_json::Value) -> (u64, u64) {
    v["jobs"].as_array().unwrap().iter().fold((0, 0), |a, j| {
        (
            a.0 + j["read"]["total_ios"].as_u64().unwrap(),
            a.1 + j["write"]["total_ios"].as_u64().unwrap(),
        )
    })
}

/// Each clone writes 8 blocks per loop (120k + k * 128k of its region, the
/// 9th would pass its end), twice; every one is read back and checked: 48 and
/// 48 in both tools; fio's iolog shows each read right after its write.
#[test]
fn cross_stripe_verify_scaled_down_beside_fio() {
    let Some(_) = fio() else {
        eprintln!("skipped: fio not installed");
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("fio.iolog");
    let job = CROSS_STRIPE.replace(
        "[global]\n",
        &format!("[global]\nwrite_iolog={}\n", log.display()),
    );
    let (code, f, err) = run("fio", d.path(), "fio.fio", &job);
    assert_eq!(code, 0, "{err}");
    assert_eq!(fio_ios(&f), (48, 48));
    // The clones' logs (appended to the one name): write, then its read, 16
    // times each.
    let ops: Vec<(String, u64)> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() == 5).then(|| (w[2].to_string(), w[3].parse().unwrap()))
        })
        .collect();
    assert_eq!(ops.len(), 96, "{ops:?}");
    for (i, pair) in ops.chunks(2).enumerate() {
        assert_eq!(pair[0].0, "write", "{ops:?}");
        assert_eq!(pair[1], ("read".to_string(), pair[0].1), "{ops:?}");
        let k = (i % 8) as u64;
        assert_eq!(
            (pair[0].1 - 120 * 1024) % (1 << 20),
            k * 128 * 1024,
            "{ops:?}"
        );
    }

    let c = tempfile::tempdir().unwrap();
    let (code, v, err) = run("csdchar", c.path(), "cs.fio", CROSS_STRIPE);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["write"]["ios"], 48, "{v}");
    // The read-backs are the job's reads, as fio counts them.
    assert_eq!(v["read"]["ios"], 48, "{v}");
    assert_eq!(v["verify"]["blocks_checked"], 48, "{v}");
    assert_eq!(v["verify"]["bad_block_count"], 0, "{v}");
    assert_eq!(v["spec"]["verify_backlog"], 1, "{v}");
    // The blocks written are fio's: 8 per clone, at fio's offsets.
    let data = std::fs::read(c.path().join("stripes")).unwrap();
    assert_eq!(data.len(), 120 * 1024 + (3 << 20));
    let written: Vec<usize> = data
        .chunks(8 * 1024)
        .enumerate()
        .filter(|(_, b)| b.iter().any(|&x| x != 0))
        .map(|(i, _)| i * 8 * 1024)
        .collect();
    let want: Vec<usize> = (0..3)
        .flat_map(|j| {
            (0..16).map(move |h| 120 * 1024 + (j << 20) + h / 2 * 128 * 1024 + h % 2 * 8192)
        })
        .collect();
    assert_eq!(written, want);
}

/// The same job written with do_verify=0, a block of clone 1 corrupted, then
/// checked with verify_only=1: both tools stop clone 1 at that block (its
/// third), after the other clones checked their 16 each.
#[test]
fn corruption_between_write_and_verify_found_at_fios_offset() {
    let Some(_) = fio() else {
        eprintln!("skipped: fio not installed");
        return;
    };
    let write = "[global]\nbs=16k\nrw=write:112k\nverify=crc32c\nfilename=DIR/d\nsize=1m\n\
                 offset_increment=1m\nio_size=512k\noffset=120k\nloops=2\nnumjobs=3\n\
                 do_verify=0\n[w]\n";
    let check = write.replace("do_verify=0", "verify_only=1");
    let bad = 120 * 1024 + (1 << 20) + 2 * 128 * 1024;
    let mut found = Vec::new();
    for who in ["fio", "csdchar"] {
        let d = tempfile::tempdir().unwrap();
        let (code, _, err) = run(who, d.path(), "w.fio", write);
        assert_eq!(code, 0, "{who}: {err}");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(d.path().join("d"))
            .unwrap();
        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(bad + 100)).unwrap();
        std::io::Write::write_all(&mut f, &[0xff; 64]).unwrap();
        drop(f);
        let (code, v, err) = run(who, d.path(), "v.fio", &check);
        assert_ne!(code, 0, "{who} found nothing: {err}");
        if who == "fio" {
            assert_eq!(fio_ios(&v).0, 35, "{v}");
            let at = err
                .split("verify failed at file ")
                .nth(1)
                .and_then(|t| t.split(" offset ").nth(1))
                .and_then(|t| t.split(',').next())
                .unwrap_or_else(|| panic!("{err}"));
            found.push(at.parse::<u64>().unwrap());
        } else {
            assert_eq!(v["verify"]["blocks_checked"], 35, "{v}");
            assert_eq!(v["verify"]["bad_block_count"], 1, "{v}");
            found.push(v["verify"]["bad_blocks"][0]["offset"].as_u64().unwrap());
        }
    }
    assert_eq!(found, [bad, bad]);
}

/// verify_dump=1: fio writes the bad block as read to
/// `<file>.<offset>.received` in its working directory (and the block it
/// regenerates to `.expected`); csdchar's run hands the same `.received`
/// (the bytes at that offset of its own file) to the command, which writes
/// it there under the rule for files csdchar writes (no `.expected`).
#[test]
fn verify_dump_writes_the_received_block_as_fio_names_it() {
    let Some(_) = fio() else {
        eprintln!("skipped: fio not installed");
        return;
    };
    let write = "[global]\nbs=16k\nrw=write:112k\nverify=crc32c\nfilename=DIR/d\nsize=256k\n\
                 io_size=64k\nloops=2\ndo_verify=0\n[w]\n";
    let check = write.replace("do_verify=0", "verify_only=1\nverify_dump=1");
    let bad: u64 = 128 * 1024;
    let corrupt = |dir: &Path| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("d"))
            .unwrap();
        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(bad + 4000)).unwrap();
        std::io::Write::write_all(&mut f, &[0x5a; 32]).unwrap();
    };
    let name = format!("d.{bad}.received");
    let block_at = |dir: &Path| {
        let b = std::fs::read(dir.join("d")).unwrap();
        b[bad as usize..bad as usize + 16384].to_vec()
    };

    let f = tempfile::tempdir().unwrap();
    assert_eq!(run("fio", f.path(), "w.fio", write).0, 0);
    corrupt(f.path());
    let (code, _, err) = run("fio", f.path(), "v.fio", &check);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains(&format!("dumped as {name}")), "{err}");
    assert_eq!(
        std::fs::read(f.path().join(&name)).unwrap(),
        block_at(f.path())
    );
    assert!(f.path().join(format!("d.{bad}.expected")).exists());

    let c = tempfile::tempdir().unwrap();
    assert_eq!(run("csdchar", c.path(), "w.fio", write).0, 0);
    corrupt(c.path());
    let path = c.path().join("v.fio");
    std::fs::write(&path, check.replace("DIR", c.path().to_str().unwrap())).unwrap();
    let plan = csdchar_fio_like::jobfile::load_job_file(&path, false).unwrap();
    let interrupt = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ran = csdchar_fio_like::jobfile::run_job_file(
        &plan,
        path.to_str().unwrap(),
        false,
        &interrupt,
        &mut |_| {},
    );
    assert_ne!(ran.exit_code, 0);
    let dumps: Vec<_> = ran.results.iter().flat_map(|r| &r.dump_files).collect();
    assert_eq!(dumps.len(), 1, "one bad block");
    assert_eq!(dumps[0].0, name);
    assert_eq!(dumps[0].1, block_at(c.path()));
}

/// verify_backlog=2: fio's iolog, write, write, read them, … each loop; the
/// I/Os csdchar's job hands its engine come in the same order at the same
/// offsets (a recording engine, its reads left unfilled: continue_on_error
/// lets the job go on past the checks that then fail).
#[test]
fn backlog_interleaves_reads_and_writes_as_fio_s_iolog() {
    let Some(_) = fio() else {
        eprintln!("skipped: fio not installed");
        return;
    };
    let job = "[global]\nbs=16k\nrw=write:112k\nverify=crc32c\nfilename=DIR/b\nsize=1m\n\
               verify_backlog=2\nio_size=512k\noffset=120k\nloops=2\n[w]\n";
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("fio.iolog");
    let with_log = job.replace(
        "[global]\n",
        &format!("[global]\nwrite_iolog={}\n", log.display()),
    );
    let (code, _, err) = run("fio", d.path(), "fio.fio", &with_log);
    assert_eq!(code, 0, "{err}");
    let theirs: Vec<(bool, u64)> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() == 5).then(|| (w[2] == "read", w[3].parse().unwrap()))
        })
        .collect();
    assert_eq!(theirs.len(), 32, "{theirs:?}");
    assert_eq!(
        &theirs[..4],
        [
            (false, 122880),
            (false, 253952),
            (true, 122880),
            (true, 253952)
        ]
    );

    let (r, ours) = csdchar_ios(job, "[w]");
    assert_eq!(r.verify.as_ref().unwrap().blocks_checked, 16);
    assert_eq!(ours, theirs);
}

/// The I/Os csdchar issues for `job` (DIR: a temporary directory), in order:
/// (a read, offset), from an engine that records them and returns no data
/// (`continue_on_error=verify` goes into section `section`: the checks of
/// what it returns fail and are counted); with the run's result.
pub(crate) fn csdchar_ios(
    job: &str,
    section: &str,
) -> (csdchar_core::result::block::BlockResult, Vec<(bool, u64)>) {
    use crate::common::RecordingEngine;
    use csdchar_fio_like::engine::Direction;
    let c = tempfile::tempdir().unwrap();
    let path = c.path().join("cs.fio");
    let text = job.replace("DIR", c.path().to_str().unwrap());
    let with = text.replace(
        &format!("{section}\n"),
        &format!("continue_on_error=verify\n{section}\n"),
    );
    std::fs::write(&path, with).unwrap();
    let plan = csdchar_fio_like::jobfile::load_job_file(&path, false).unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let r = csdchar_fio_like::run_block_with(
        &plan.jobs[0].spec,
        csdchar_fio_like::RunControl::quiet(),
        |_, _| Ok(RecordingEngine::new(&seen, None)),
    )
    .unwrap();
    let ios = (seen.lock().unwrap().iter())
        .map(|&(o, dir)| (dir == Direction::Read, o))
        .collect();
    (r, ios)
}
