//! A job of one file whose `filesize` is not its `size`, and `create_on_open`
//! in a job that reads, beside fio's run of the same job file: the files
//! made, the bytes done, where the I/O lands (fio's and csdchar's latency
//! logs with `log_offset`), and how reads past the end of a file that grows
//! only by the job's writes are counted.

use crate::fio_parity::{fio, fio_json_of, logs_in, run_job_file_ok};

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The regular files `dir` holds (not logs or job files) and their sizes.
fn data_files(dir: &Path) -> BTreeMap<String, u64> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".0.0"))
        .map(|e| {
            let len = e.metadata().unwrap().len();
            (e.file_name().into_string().unwrap(), len)
        })
        .collect()
}

/// Per job: the offsets of its I/Os in the order logged, from a latency log
/// with offsets (its 5th column).
fn offsets(dir: &Path) -> BTreeMap<String, Vec<u64>> {
    logs_in(dir)
        .into_iter()
        .filter(|(name, _)| name.contains("_clat."))
        .map(|(name, lines)| {
            let job = name.split('_').next().unwrap().to_string();
            (job, lines.iter().map(|l| l[4].parse().unwrap()).collect())
        })
        .collect()
}

const FILESIZE_JOBS: &str = "[global]\ndirectory=DIR\nbs=4k\nioengine=psync\nlog_offset=1\n\
     [a]\nfilesize=2m\nsize=1m\nrw=randwrite\nwrite_lat_log=DIR/a\n\
     [b]\nfilesize=1m\nsize=4m\nrw=randwrite\nwrite_lat_log=DIR/b\n\
     [c]\nfilesize=2m\nsize=1m\nrw=write\nwrite_lat_log=DIR/c\n\
     [d]\nfilesize=2m\nsize=1m\nrw=randread\nwrite_lat_log=DIR/d\n\
     [e]\nfilesize=2m\noffset=512k\nrw=randwrite\nwrite_lat_log=DIR/e\n\
     [f]\nfilesize=1m\nsize=512k\nloops=3\nrw=read\nwrite_lat_log=DIR/f\n";

/// fio's setup_files with one file: the file is `filesize`, the region is
/// it less `offset`, and the I/O done is `size` when smaller (else the
/// region), spread over the whole region when random.
#[test]
fn one_file_s_filesize_is_its_region_and_size_its_io() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut found = Vec::new();
    for who in ["fio", "csdchar"] {
        let dir = d.path().join(who);
        std::fs::create_dir(&dir).unwrap();
        let job = d.path().join(format!("{who}.fio"));
        std::fs::write(&job, FILESIZE_JOBS.replace("DIR", dir.to_str().unwrap())).unwrap();
        run_job_file_ok(who, &job);
        found.push((data_files(&dir), offsets(&dir)));
    }
    let mb = 1u64 << 20;
    let files: BTreeMap<String, u64> = [
        ("a", 2 * mb),
        ("b", mb),
        ("c", 2 * mb),
        ("d", 2 * mb),
        ("e", 2 * mb),
        ("f", mb),
    ]
    .into_iter()
    .map(|(j, s)| (format!("{j}.0.0"), s))
    .collect();
    let k = 4096u64;
    for (who, (sizes, offsets)) in ["fio", "csdchar"].iter().zip(&found) {
        assert_eq!(sizes, &files, "{who}'s files");
        // I/Os: size when smaller than the file, else the file (less offset).
        let ios = [("a", 256), ("b", 256), ("c", 256), ("d", 256), ("e", 384)];
        for (j, n) in ios {
            assert_eq!(offsets[j].len(), n, "{who}: job {j}'s I/Os");
        }
        let spread = |j: &str| {
            let o = &offsets[j];
            (*o.iter().min().unwrap(), *o.iter().max().unwrap())
        };
        // Random I/O over the whole file (half of its blocks drawn: some in
        // its last quarter, some in its first).
        for j in ["a", "d"] {
            let (lo, hi) = spread(j);
            assert!(
                lo < mb / 2 && hi >= 3 * mb / 2 && hi < 2 * mb,
                "{who} {j}: {lo}..{hi}"
            );
        }
        assert!(spread("b").1 < mb, "{who}: b within its 1m file");
        // From offset to the end of the file.
        let (lo, hi) = spread("e");
        assert!(
            lo >= mb / 2 && hi < 2 * mb && hi >= 7 * mb / 4,
            "{who} e: {lo}..{hi}"
        );
        // Sequential: size's bytes from the start, the rest of the file
        // untouched; with loops, size times loops wrapping at the file's end
        // (fio's total_io_size): 1m, then 512k from the start again.
        let c: Vec<u64> = (0..256).map(|i| i * k).collect();
        assert_eq!(offsets["c"], c, "{who}: c");
        let f: Vec<u64> = (0..256).chain(0..128).map(|i| i * k).collect();
        assert_eq!(offsets["f"], f, "{who}: f");
    }
}

/// What fio refuses with one file of `filesize` is bad input in csdchar too;
/// a range of sizes with one file stays refused (fio keeps an existing file
/// whose size is in the range, which csdchar's spec cannot see).
#[test]
fn one_file_s_filesize_refusals() {
    let d = tempfile::tempdir().unwrap();
    let job = d.path().join("r.fio");
    let dir = d.path().display();
    for (body, code, says) in [
        (
            "filesize=1m\noffset=1m\n",
            2,
            "offset=1048576 at or beyond filesize",
        ),
        ("filesize=1m\noffset=1020k\nbs=8k\n", 2, "less than a block"),
        (
            "filesize=64k-128k\nsize=64k\n",
            2,
            "a range of file sizes with one file",
        ),
    ] {
        std::fs::write(
            &job,
            format!("[r]\ndirectory={dir}\nrw=write\nbs=4k\n{body}"),
        )
        .unwrap();
        let r = crate::common::csdchar(&["block", "--job-file", job.to_str().unwrap()]);
        assert_eq!(r.outcome.exit_code, code, "{body}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{body}: {}", r.stderr);
        assert_eq!(
            std::fs::read_dir(d.path()).unwrap().count(),
            1,
            "{body}: nothing written"
        );
    }
}

/// Read totals of fio-json's first job: (total_ios, io_bytes, short_ios),
/// and its error.
fn reads_of(json: &serde_json::Value) -> ((u64, u64, u64), u64) {
    let j = &json["jobs"][0];
    let r = &j["read"];
    let n = |v: &serde_json::Value| v.as_u64().unwrap();
    (
        (n(&r["total_ios"]), n(&r["io_bytes"]), n(&r["short_ios"])),
        n(&j["error"]),
    )
}

/// fio-json of `job` run by `who`, whatever its exit code (a job that fails
/// still writes its figures); None when fio hung.
fn fio_json_anyway(who: &str, job: &Path) -> Option<serde_json::Value> {
    let text = if who == "fio" {
        match fio_json_of(who, job, Duration::from_secs(20)) {
            Ok(json) => return json,
            Err((code, stderr)) => {
                assert_eq!(code, 1, "fio: {stderr}");
                std::fs::read_to_string(job.with_extension("out.json")).unwrap()
            }
        }
    } else {
        let r = crate::common::csdchar(&[
            "block",
            "--job-file",
            job.to_str().unwrap(),
            "--output-format",
            "fio-json",
        ]);
        assert!([0, 1].contains(&r.outcome.exit_code), "{}", r.stderr);
        r.stdout
    };
    Some(serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap())
}

/// create_on_open in a job that reads a file of 64 KiB (then one of 64 KiB
/// and 1000 bytes): nothing is laid out, the reads past the end come back
/// empty. On an asynchronous engine each counts as an I/O of 0 bytes (a
/// partial one is a short I/O, submitted twice); on a synchronous one the
/// first fails the job with EIO, as fio's.
#[test]
fn create_on_open_reads_past_the_end_as_fio() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..70_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    for (len, engine, want) in [
        // (file bytes, ioengine, ((total_ios, io_bytes, short_ios), error))
        (65536, "io_uring", ((64, 65536, 0), 0)),
        (65536, "libaio", ((64, 65536, 0), 0)),
        (65536, "psync", ((17, 65536, 0), 5)),
        (66536, "io_uring", ((65, 65536, 1), 0)),
        (66536, "psync", ((18, 65536, 1), 5)),
    ] {
        for who in ["fio", "csdchar"] {
            let dir = d.path().join(format!("{who}-{engine}-{len}"));
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("x.0.0"), &data[..len]).unwrap();
            let job = dir.join("c.fio");
            let text = format!(
                "[x]\ndirectory={}\nioengine={engine}\nbs=4k\nrw=read\nsize=256k\n\
                 create_on_open=1\n",
                dir.display()
            );
            std::fs::write(&job, text).unwrap();
            let Some(json) = fio_json_anyway(who, &job) else {
                continue;
            };
            assert_eq!(reads_of(&json), want, "{who} {engine} on {len} bytes");
            let after = std::fs::read(dir.join("x.0.0")).unwrap();
            assert!(
                after == data[..len],
                "{who} {engine}: the file is as it was"
            );
        }
    }
}

/// create_on_open in a randrw job on no file: it starts empty and grows by
/// the job's writes; reads beyond its end so far come back empty, counted
/// as I/Os of 0 bytes (a few: csdchar's random draws are not fio's), every
/// other read a whole block, no error; the file ends at its last block
/// written.
#[test]
fn create_on_open_randrw_grows_the_file_by_its_writes() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    for who in ["fio", "csdchar"] {
        let dir = d.path().join(who);
        std::fs::create_dir(&dir).unwrap();
        let job = dir.join("c.fio");
        let text = format!(
            "[x]\ndirectory={}\nioengine=io_uring\ndirect=1\nbs=4k\nrw=randrw\nsize=1m\n\
             create_on_open=1\nwrite_lat_log={0}/x\nlog_offset=1\n",
            dir.display()
        );
        std::fs::write(&job, text).unwrap();
        let Some(json) = fio_json_anyway(who, &job) else {
            continue;
        };
        let ((reads, bytes, short), error) = reads_of(&json);
        let writes = json["jobs"][0]["write"]["total_ios"].as_u64().unwrap();
        assert_eq!((error, short), (0, 0), "{who}");
        assert_eq!(reads + writes, 256, "{who}: every I/O counted");
        assert_eq!(bytes % 4096, 0, "{who}");
        let empty = reads - bytes / 4096;
        // About ln(128) reads land beyond the last block written so far.
        assert!(
            (1..=30).contains(&empty),
            "{who}: {empty} empty reads of {reads}"
        );
        let logs = logs_in(&dir);
        let log = logs
            .iter()
            .find(|(n, _)| n.starts_with("x_clat."))
            .unwrap()
            .1;
        let last_write = log
            .iter()
            .filter(|l| l[2] == "1")
            .map(|l| l[4].parse::<u64>().unwrap())
            .max()
            .unwrap();
        let size = std::fs::metadata(dir.join("x.0.0")).unwrap().len();
        assert_eq!(
            size,
            last_write + 4096,
            "{who}: the file ends at its last write"
        );
    }
}
