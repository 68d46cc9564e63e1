//! Verify in jobs that read and write (rw=randrw, as fio's
//! examples/enospc-pressure.fio verifier) beside fio 3.33: the job's own
//! reads check nothing; every write is listed and read back in the order
//! written, by fio's verify_backlog rule within the writes (at any queue
//! depth: a block is read back once its write completed) and the rest after
//! them; verify_only replays the same writes and finds a corrupted block
//! where it was written.

use crate::common;
use crate::fio_parity::fio;
use crate::fio_verify_backlog::run;

use std::collections::{HashSet, VecDeque};

/// An I/O of a job's sequence: a read or a write of a block.
type Io = (bool, u64);

/// Checks `ios` (issued one at a time) against fio's io_piece list with
/// verify_backlog `every`: a read of a block written and not yet checked is a
/// check and must be of the oldest such block; a batch of `every` checks
/// starts when as many writes wait and the last I/O was no read; the job's
/// own I/Os touch each of `nblocks` blocks once. Returns (writes, checks).
fn follows_fio_s_list(ios: &[Io], every: usize, nblocks: u64) -> (usize, usize) {
    let mut pending: VecDeque<u64> = VecDeque::new();
    let (mut left, mut last_read, mut writes, mut checks) = (0usize, false, 0, 0);
    let mut own = HashSet::new();
    for (i, &(read, b)) in ios.iter().enumerate() {
        // After the job's own I/Os, the rest in the order written.
        let rest = own.len() as u64 == nblocks;
        let due = !pending.is_empty()
            && (left > 0 || rest || (pending.len().is_multiple_of(every) && !last_read));
        if due {
            assert!(
                read,
                "I/O {i}: a check of {:?} was due, not a write of {b}",
                pending.front()
            );
            assert_eq!(
                pending.front(),
                Some(&b),
                "I/O {i}: the oldest write is checked first"
            );
            pending.pop_front();
            left = if left == 0 { every - 1 } else { left - 1 };
            checks += 1;
        } else {
            assert!(
                !pending.contains(&b),
                "I/O {i}: block {b} checked out of turn"
            );
            assert!(own.insert(b), "I/O {i}: block {b} twice");
            if !read {
                pending.push_back(b);
                writes += 1;
            }
        }
        last_read = read;
    }
    assert!(pending.is_empty(), "unchecked: {pending:?}");
    assert_eq!(own.len() as u64, nblocks, "every block once");
    (writes, checks)
}

/// At queue depth 1 both tools issue fio's sequence: the job's own reads and
/// writes over every block once, each batch of 8 writes read back right
/// after it, oldest first, the last ones after the job's own I/Os.
#[test]
fn randrw_checks_its_writes_in_the_order_written_as_fio() {
    let Some(_) = fio() else {
        eprintln!("skipped: fio not installed");
        return;
    };
    let job = "[global]\nbs=4k\nrw=randrw\nverify=crc32c\nfilename=DIR/m\nsize=512k\n\
               verify_backlog=8\n[m]\n";
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("fio.iolog");
    let with_log = job.replace(
        "[global]\n",
        &format!("[global]\nwrite_iolog={}\n", log.display()),
    );
    let (code, v, err) = run("fio", d.path(), "fio.fio", &with_log);
    assert_eq!(code, 0, "{err}");
    let theirs: Vec<Io> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() == 5).then(|| (w[2] == "read", w[3].parse::<u64>().unwrap() / 4096))
        })
        .collect();
    let (w, c) = follows_fio_s_list(&theirs, 8, 128);
    assert_eq!(w, c, "fio checks every write");
    let job0 = &v["jobs"][0];
    assert_eq!(job0["read"]["total_ios"], 128, "fio: own reads and checks");
    assert_eq!(job0["write"]["total_ios"].as_u64(), Some(w as u64));

    let (r, recorded) = crate::fio_verify_backlog::csdchar_ios(job, "[m]");
    let ours: Vec<Io> = recorded.iter().map(|&(read, o)| (read, o / 4096)).collect();
    let (w, c) = follows_fio_s_list(&ours, 8, 128);
    assert_eq!(w, c, "csdchar checks every write");
    assert_eq!(r.verify.as_ref().unwrap().blocks_checked, w as u64);
    assert_eq!(
        r.read.as_ref().unwrap().ios,
        128,
        "csdchar: own reads and checks"
    );
    // rwmixread=50 in both: about half of the 128 are writes.
    assert!((40..=88).contains(&w), "{w} writes of 128");
}

/// enospc-pressure's verifier scaled down: libaio (io_uring in csdchar),
/// iodepth 16, verify_backlog 16, verify_async, direct I/O. Reads count the
/// job's own and the checks (fio counts both): one per block in all; every
/// write checked and good.
#[test]
fn backlog_at_queue_depth_16_checks_every_write_as_fio() {
    let Some(_) = fio() else {
        eprintln!("skipped: fio not installed");
        return;
    };
    let job = "[v]\nioengine=libaio\niodepth=16\nverify=crc32c-intel\nverify_fatal=1\n\
               verify_backlog=16\nverify_async=4\ndirect=1\nbs=4k\nrw=randrw\nsize=2m\n\
               filename=DIR/v\n";
    for who in ["fio", "csdchar"] {
        let d = tempfile::tempdir().unwrap();
        let (code, v, err) = run(who, d.path(), "v.fio", job);
        assert_eq!(code, 0, "{who}: {err}");
        let (reads, writes) = match who {
            "fio" => {
                let j = &v["jobs"][0];
                assert_eq!(j["error"], 0, "{who}");
                (
                    j["read"]["total_ios"].clone(),
                    j["write"]["total_ios"].clone(),
                )
            }
            _ => {
                assert_eq!(v["verify"]["bad_block_count"], 0, "{v}");
                assert_eq!(v["verify"]["blocks_checked"], v["write"]["ios"], "{v}");
                (v["read"]["ios"].clone(), v["write"]["ios"].clone())
            }
        };
        assert_eq!(reads, 512, "{who}: own reads and checks, one per block");
        let w = writes.as_u64().unwrap();
        assert!((180..=330).contains(&w), "{who}: {w} writes of 512");
    }
}

/// do_verify=0 writes, a byte changed in the third block written (found by
/// its header's magic), verify_only: each tool replays its own writes and
/// names that block.
#[test]
fn a_corrupted_write_of_a_mixed_job_is_found_where_it_was_written() {
    let Some(_) = fio() else {
        eprintln!("skipped: fio not installed");
        return;
    };
    let write = "[m]\nbs=4k\nrw=randrw\nverify=crc32c\ndo_verify=0\nfilename=DIR/c\nsize=1m\n\
                 iodepth=8\nioengine=io_uring\n";
    let check = write.replace("do_verify=0", "verify_only=1");
    for who in ["fio", "csdchar"] {
        let d = tempfile::tempdir().unwrap();
        let (code, _, err) = run(who, d.path(), "w.fio", write);
        assert_eq!(code, 0, "{who}: {err}");
        let file = d.path().join("c");
        let mut data = std::fs::read(&file).unwrap();
        let magic: &[u8] = if who == "fio" {
            &[0xca, 0xac]
        } else {
            b"CSDCHRv1"
        };
        let headed: Vec<usize> = (0..data.len())
            .step_by(4096)
            .filter(|&o| data[o..].starts_with(magic))
            .collect();
        assert!(headed.len() > 64, "{who}: {} blocks written", headed.len());
        let bad = headed[2];
        data[bad + 1000] ^= 0xff;
        std::fs::write(&file, &data).unwrap();
        let (code, v, err) = run(who, d.path(), "v.fio", &check);
        assert_ne!(code, 0, "{who} found nothing: {err}");
        let at = if who == "fio" {
            err.split("verify failed at file ")
                .nth(1)
                .and_then(|t| t.split(" offset ").nth(1))
                .and_then(|t| t.split(',').next())
                .unwrap_or_else(|| panic!("{err}"))
                .parse::<u64>()
                .unwrap()
        } else {
            assert_eq!(v["verify"]["bad_block_count"], 1, "{v}");
            v["verify"]["bad_blocks"][0]["offset"].as_u64().unwrap()
        };
        assert_eq!(at, bad as u64, "{who}");
    }
}

/// fio's examples/enospc-pressure.fio, scaled: a 16 MiB region instead of
/// 128 GiB, the raicer jobs on a loop device (fio 3.33 trims only block
/// devices; on a file its first trim fails with ENOTTY), the verifier's file
/// in a temporary directory, 5 s instead of 100, and the punch-hole job over
/// 256 MiB so that the verifier ends first. Both tools run it through: the
/// verifier checks every write and finds none bad, and its end ends the
/// other two (exitall) long before their own ends.
#[test]
fn enospc_pressure_scaled_runs_as_fio() {
    if !common::is_root_or_skip("enospc_pressure_scaled_runs_as_fio") {
        return;
    }
    let Some(_) = fio() else {
        eprintln!("skipped: fio not installed");
        return;
    };
    let lo = common::LoopDev::new(300 << 20);
    let job = format!(
        "[global]\nioengine=libaio\nfilesize=16m\nsize=999G\niodepth=128\n\
         continue_on_error=write\nignore_error=,ENOSPC\nerror_dump=0\nfallocate=none\nexitall\n\
         [dio-raicer]\nbs=128k\ndirect=1\nbuffered=0\nrw=randwrite\nruntime=5\n\
         filename={dev}\ntime_based\n\
         [punch_hole-raicer]\nbs=4k\nrw=randtrim\nfilesize=256m\nfilename={dev}\n\
         [aio-dio-verifier]\ncreate_on_open=1\nverify=crc32c-intel\nverify_fatal=1\n\
         verify_dump=1\nverify_backlog=1024\nverify_async=4\ndirect=1\nbs=4k\nrw=randrw\n\
         filename=DIR/aio-dio-verifier\n",
        dev = lo.dev
    );
    for who in ["fio", "csdchar"] {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("e.fio");
        std::fs::write(&path, job.replace("DIR", d.path().to_str().unwrap())).unwrap();
        let v = crate::fio_parity::fio_json_of(who, &path, std::time::Duration::from_secs(60))
            .unwrap_or_else(|(code, err)| panic!("{who} exited {code}: {err}"))
            .unwrap_or_else(|| panic!("{who} hung"));
        let jobs = v["jobs"].as_array().unwrap();
        let by = |name: &str| jobs.iter().find(|j| j["jobname"] == name).unwrap();
        for j in jobs {
            assert_eq!(
                (&j["error"], &j["total_err"]),
                (&0.into(), &0.into()),
                "{who}: {j}"
            );
        }
        let verifier = by("aio-dio-verifier");
        assert_eq!(
            verifier["read"]["total_ios"], 4096,
            "{who}: own reads and checks"
        );
        let w = verifier["write"]["total_ios"].as_u64().unwrap();
        assert!((1700..=2400).contains(&w), "{who}: {w} writes of 4096");
        let dio = by("dio-raicer");
        assert!(
            dio["write"]["total_ios"].as_u64().unwrap() > 0,
            "{who}: {dio}"
        );
        let ran = dio["job_runtime"].as_u64().unwrap();
        assert!(
            ran < 4000,
            "{who}: dio-raicer ran {ran} ms of its 5 s: exitall"
        );
        let trims = by("punch_hole-raicer")["trim"]["total_ios"]
            .as_u64()
            .unwrap();
        assert!(
            (1..65536).contains(&trims),
            "{who}: {trims} trims of 65536: exitall"
        );
    }
}
