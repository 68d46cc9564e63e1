//! fio's verify in read jobs: a read or randread job with `verify=` checks
//! what an earlier job with the same verify settings wrote, fails naming the
//! offset of a block changed behind its back, and does so whatever
//! `do_verify` says. Each tool checks its own data (their headers differ).

use crate::common;
use crate::fio_parity::fio;

use std::os::unix::fs::FileExt;
use std::path::Path;

const WRITE_THEN_READ: &str = "[global]\nfilename=FILE\nsize=1m\nbs=4k\nverify=crc32c\n\
                               [w]\nrw=randwrite\n[r]\nstonewall\nrw=randread\n";
const READ: &str =
    "[global]\nfilename=FILE\nsize=1m\nbs=4k\nverify=crc32c\n[r]\nrw=randread\nEXTRA\n";

/// Runs job file `text` (FILE: the data file) with `who`: exit code and stderr.
fn run(who: &str, dir: &Path, name: &str, text: &str) -> (i32, String) {
    let data = dir.join(format!("{who}.dat"));
    let path = dir.join(format!("{who}-{name}.fio"));
    std::fs::write(&path, text.replace("FILE", data.to_str().unwrap())).unwrap();
    crate::fio_parity::run_job_file(who, &path)
}

#[test]
fn a_read_job_checks_what_a_write_job_wrote_and_names_a_bad_block_as_fio_does() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    for who in ["fio", "csdchar"] {
        let (rc, err) = run(who, d.path(), "wr", WRITE_THEN_READ);
        assert_eq!(rc, 0, "{who}: write, then read with verify: {err}");
        let (rc, err) = run(who, d.path(), "r", &READ.replace("EXTRA", ""));
        assert_eq!(rc, 0, "{who}: a read job alone: {err}");
        // Two bytes of block 7's data changed behind its back.
        std::fs::OpenOptions::new()
            .write(true)
            .open(d.path().join(format!("{who}.dat")))
            .unwrap()
            .write_all_at(b"xx", 4096 * 7 + 100)
            .unwrap();
        for extra in ["", "do_verify=0", "rw=read"] {
            let (rc, err) = run(who, d.path(), "bad", &READ.replace("EXTRA", extra));
            assert_eq!(rc, 1, "{who} {extra:?}: the read job fails: {err}");
            assert!(
                err.contains("verify") && err.contains("offset 28672, length 4096"),
                "{who} {extra:?}: names the block: {err}"
            );
        }
    }
}

#[test]
fn a_csdchar_read_verify_reports_the_blocks_it_checked() {
    let d = tempfile::tempdir().unwrap();
    let (rc, err) = run("csdchar", d.path(), "wr", WRITE_THEN_READ);
    assert_eq!(rc, 0, "{err}");
    let path = d.path().join("again.fio");
    let data = d.path().join("csdchar.dat");
    std::fs::write(
        &path,
        READ.replace("FILE", data.to_str().unwrap())
            .replace("EXTRA", "numjobs=2\n"),
    )
    .unwrap();
    let r = common::csdchar(&["block", "--job-file", path.to_str().unwrap()]);
    assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
    let b = r.outcome.block.unwrap();
    assert!(b.write.is_none(), "a read job writes nothing");
    let v = b.verify.unwrap();
    assert_eq!((v.blocks_checked, v.bad_block_count), (256, 0));
}

#[test]
fn read_verify_csdchar_does_not_run_is_refused_by_line() {
    let d = tempfile::tempdir().unwrap();
    for (extra, why) in [
        ("rw=randtrim", "trims"),
        ("number_ios=10", "once"),
        ("random_distribution=zipf:1.2", "once"),
        ("time_based\nruntime=1", "time_based"),
    ] {
        let path = d.path().join("x.fio");
        std::fs::write(
            &path,
            READ.replace("FILE", "/nonexistent/x")
                .replace("EXTRA", extra),
        )
        .unwrap();
        let r = common::csdchar(&["block", "--job-file", path.to_str().unwrap()]);
        assert_eq!(r.outcome.exit_code, 2, "{extra}: {}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
        assert!(
            r.stderr.contains("x.fio:") && r.stderr.contains(why),
            "{extra}: {}",
            r.stderr
        );
    }
}
