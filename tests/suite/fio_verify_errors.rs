//! fio's options for splitting a target among a job's clones and for
//! verification beside fio's runs of the same job files:
//! `offset_increment` (clone N starts at offset + N * increment, with its own
//! region or what is left of the file after its start); what ends a job and
//! what it counts and goes on after (`continue_on_error`, `ignore_error`,
//! `verify_fatal`: fio-json's `error`, `total_err`, `first_error`); how a new
//! file is laid out (`fallocate`, `create_on_open`); writes into a full file
//! system that the job goes on after (ENOSPC on a small tmpfs).

use crate::common;
use crate::fio_parity::fio;

use std::collections::BTreeMap;
use std::path::Path;

/// Which 4 KiB blocks of `path` hold anything but zeros ('X'), as a string.
fn written_map(path: &Path) -> String {
    let b = std::fs::read(path).unwrap();
    b.chunks(4096)
        .map(|c| if c.iter().any(|&x| x != 0) { 'X' } else { '.' })
        .collect()
}

/// Job name -> (write I/Os, read I/Os) summed over its clones, from fio's JSON.
fn ios_per_job(json: &str) -> BTreeMap<String, (u64, u64)> {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let mut out = BTreeMap::new();
    for j in v["jobs"].as_array().unwrap() {
        let e: &mut (u64, u64) = out
            .entry(j["jobname"].as_str().unwrap().to_string())
            .or_default();
        e.0 += j["write"]["total_ios"].as_u64().unwrap();
        e.1 += j["read"]["total_ios"].as_u64().unwrap();
    }
    out
}

/// Runs job file `path` through `who` with fio's JSON out; the JSON.
fn run_json(who: &str, path: &Path) -> String {
    let v = crate::fio_parity::fio_json_of(who, path, std::time::Duration::from_secs(120))
        .unwrap_or_else(|(code, e)| panic!("{who} exited {code}: {e}"))
        .unwrap_or_else(|| panic!("fio ran {} for over 2 minutes", path.display()));
    v.to_string()
}

const INCREMENTS: &str = "[global]\nbs=4k\nrw=write\noffset=8k\noffset_increment=64k\n\
                          [w]\nfilename=DIR/shared\nsize=16k\nnumjobs=3\n\
                          [x]\nstonewall\nfilename=DIR/rest\noffset=4k\noffset_increment=32k\nnumjobs=2\n\
                          [y]\nstonewall\ndirectory=DIR\nsize=8k\noffset_increment=12k\nnumjobs=2\n\
                          [z]\nstonewall\nfilename=DIR/verified\nsize=16k\noffset=4k\n\
                          offset_increment=32k\nnumjobs=2\nverify=crc32c\n\
                          [zr]\nstonewall\nfilename=DIR/verified\nrw=randread\nsize=16k\noffset=4k\n\
                          offset_increment=32k\nnumjobs=2\nverify=crc32c\n";

/// Clones sharing a file each write their own region; without size each
/// takes the file from its start on (x: 31 and 23 blocks); clones with files
/// of their own start as far into them (y), the files laid out to the end of
/// the last region; a verify job checks each clone's region.
#[test]
fn offset_increment_places_each_clone_as_fio_does() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut found = Vec::new();
    for who in ["fio", "csdchar"] {
        let dir = d.path().join(who);
        std::fs::create_dir(&dir).unwrap();
        for (name, len) in [
            ("shared", 256u64 << 10),
            ("rest", 128 << 10),
            ("verified", 128 << 10),
        ] {
            std::fs::File::create(dir.join(name))
                .unwrap()
                .set_len(len)
                .unwrap();
        }
        let job = d.path().join(format!("{who}.fio"));
        std::fs::write(&job, INCREMENTS.replace("DIR", dir.to_str().unwrap())).unwrap();
        let ios = run_json(who, &job);
        let maps: Vec<String> = ["shared", "rest", "y.0.0", "y.1.0", "verified"]
            .iter()
            .map(|f| written_map(&dir.join(f)))
            .collect();
        let mut ios = ios_per_job(&ios);
        // fio counts a write job's verify reads as reads; csdchar's fio-json
        // reports a verify job's writes only.
        ios.get_mut("z").unwrap().1 = 0;
        found.push((maps, ios));
    }
    assert_eq!(found[0], found[1], "fio's, then csdchar's");
    let (maps, ios) = &found[1];
    assert_eq!(
        maps[0],
        format!("..XXXX{0}XXXX{0}XXXX{1}", ".".repeat(12), ".".repeat(26))
    );
    assert_eq!(maps[1], format!(".{}", "X".repeat(31)));
    assert_eq!((maps[2].as_str(), maps[3].as_str()), ("..XX", ".....XX"));
    assert_eq!(ios["x"], (54, 0));
    assert_eq!(ios["zr"], (0, 8));
}

const WRITE: &str = "[global]\nfilename=FILE\nsize=64k\nbs=4k\nverify=crc32c\n[w]\nrw=write\n";
const READ: &str = "[global]\nfilename=FILE\nsize=64k\nbs=4k\nverify=crc32c\n[r]\nrw=read\n";

/// (error, reads, total_err, first_error) of a job in fio's JSON.
type Counts = (u64, u64, Option<u64>, Option<u64>);

/// [`Counts`] of fio's JSON's only job.
fn error_counts(json: &str) -> Counts {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let j = &v["jobs"][0];
    (
        j["error"].as_u64().unwrap(),
        j["read"]["total_ios"].as_u64().unwrap(),
        j["total_err"].as_u64(),
        j["first_error"].as_u64(),
    )
}

/// Two blocks changed behind the tools' backs (each tool's own data): the
/// first ends a verifying read job with EILSEQ, as fio's, unless
/// continue_on_error (or ignore_error) covers verify, when both are counted
/// (total_err, first_error) and every block is read; verify_fatal still ends
/// it; a read bit alone counts the fatal error as fio does (errno 1).
#[test]
fn verify_failures_end_or_count_as_fio_s_continue_on_error_says() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let cases: [(&str, Counts); 9] = [
        ("", (84, 3, None, None)),
        ("verify_fatal=1\n", (84, 3, None, None)),
        ("continue_on_error=verify\n", (84, 16, Some(2), Some(84))),
        (
            "continue_on_error=all\nverify_fatal=1\n",
            (84, 3, Some(1), Some(84)),
        ),
        ("ignore_error=,,84\n", (84, 16, Some(2), Some(84))),
        ("continue_on_error=read\n", (84, 3, Some(1), Some(1))),
        (
            "continue_on_error=write\nverify_async=2\n",
            (84, 3, Some(0), Some(0)),
        ),
        // An asynchronous engine's fio counts no error that ends the job.
        (
            "continue_on_error=read\nioengine=libaio\n",
            (84, 3, Some(0), Some(0)),
        ),
        (
            "continue_on_error=io\nioengine=psync\n",
            (84, 3, Some(1), Some(1)),
        ),
    ];
    for who in ["fio", "csdchar"] {
        let data = d.path().join(format!("{who}.dat"));
        let write = d.path().join(format!("{who}-w.fio"));
        std::fs::write(&write, WRITE.replace("FILE", data.to_str().unwrap())).unwrap();
        run_json(who, &write);
        let mut bytes = std::fs::read(&data).unwrap();
        bytes[8192 + 100] ^= 0xff;
        bytes[40960 + 200] ^= 0xff;
        for (extra, want) in &cases {
            std::fs::write(&data, &bytes).unwrap();
            let read = d.path().join(format!("{who}-r.fio"));
            let text = format!("{READ}{extra}").replace("FILE", data.to_str().unwrap());
            std::fs::write(&read, text).unwrap();
            let mut got = error_counts(&run_json_any(who, &read));
            // verify_async: fio checks off the submitting path and reads on
            // meanwhile (3 to 16 blocks read before the job ends); csdchar
            // checks as each read completes (3).
            if extra.contains("verify_async") {
                assert!((3..=16).contains(&got.1), "{who} with {extra:?}: {got:?}");
                got.1 = 3;
            }
            assert_eq!(got, *want, "{who} with {extra:?}");
        }
    }
}

/// [`run_json`] for a run that may fail (a verify failure exits non-zero).
fn run_json_any(who: &str, path: &Path) -> String {
    if who == "fio" {
        // fio leaves its verify state files in its working directory.
        let out = std::process::Command::new(fio().unwrap())
            .current_dir(path.parent().unwrap())
            .args(["--output-format=json", path.to_str().unwrap()])
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        text[text.find('{').expect("fio's JSON")..].to_string()
    } else {
        common::csdchar(&[
            "block",
            "--job-file",
            path.to_str().unwrap(),
            "--output-format",
            "fio-json",
        ])
        .stdout
    }
}

/// Size and allocated 512-byte blocks of the file a two-block write made,
/// per fallocate mode and create_on_open, beside fio's.
#[test]
fn fallocate_modes_lay_files_out_as_fio_does() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    // "": fallocate not set, fio's default (native).
    let modes = [
        "",
        "fallocate=none",
        "fallocate=native",
        "fallocate=posix",
        "fallocate=keep",
    ];
    let modes = modes
        .iter()
        .chain(&["fallocate=truncate", "fallocate=1", "create_on_open=1"]);
    for (i, m) in modes.enumerate() {
        let mut found = Vec::new();
        for who in ["fio", "csdchar"] {
            let file = d.path().join(format!("{who}.{i}"));
            let job = d.path().join(format!("{who}-{i}.fio"));
            let text = format!(
                "[j]\nfilename={}\nbs=4k\nrw=write\nsize=64k\nnumber_ios=2\n{m}\n",
                file.display()
            );
            std::fs::write(&job, text).unwrap();
            run_json(who, &job);
            let meta = std::fs::metadata(&file).unwrap();
            use std::os::unix::fs::MetadataExt;
            found.push((meta.len(), meta.blocks()));
        }
        assert_eq!(
            found[0], found[1],
            "{m}: fio's (size, blocks), then csdchar's"
        );
    }
}

/// (error, write I/Os, bytes written, total_err, first_error) of fio's JSON's only job.
type WriteCounts = (u64, u64, u64, Option<u64>, Option<u64>);

/// A job that writes 8 MiB into a 4 MiB tmpfs and goes on after ENOSPC
/// (continue_on_error=write with ignore_error=,ENOSPC, or ignore_error
/// alone): the failed writes count as I/Os and errors, not bytes, as fio's.
/// Without ENOSPC among the errors it goes on after, csdchar refuses the job
/// before it starts (the room check), where fio runs into ENOSPC.
#[test]
fn writes_into_a_full_file_system_go_on_as_fio_s_ignore_error_says() {
    if fio().is_none() || !common::is_root_or_skip("writes_into_a_full_file_system (tmpfs)") {
        return;
    }
    let mnt = tempfile::Builder::new()
        .prefix("csdchar-enospc")
        .tempdir_in("/var/tmp")
        .unwrap();
    let Some(_m) = common::Mounted::new("tmpfs", mnt.path(), &["-t", "tmpfs", "-o", "size=4m"])
    else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let file = mnt.path().join("f");
    let cases = [
        "continue_on_error=write\nignore_error=,ENOSPC\nfallocate=none\n",
        "continue_on_error=all\nignore_error=EIO,ENOSPC\nfallocate=truncate\nioengine=libaio\n",
    ];
    let want: WriteCounts = (28, 128, 4 << 20, Some(64), Some(28));
    for extra in cases {
        for who in ["fio", "csdchar"] {
            let _ = std::fs::remove_file(&file);
            let job = d.path().join(format!("{who}.fio"));
            let text = format!(
                "[j]\nfilename={}\nbs=64k\nrw=write\nsize=8m\n{extra}",
                file.display()
            );
            std::fs::write(&job, text).unwrap();
            let v: serde_json::Value = serde_json::from_str(&run_json_any(who, &job)).unwrap();
            let j = &v["jobs"][0];
            let got: WriteCounts = (
                j["error"].as_u64().unwrap(),
                j["write"]["total_ios"].as_u64().unwrap(),
                j["write"]["io_bytes"].as_u64().unwrap(),
                j["total_err"].as_u64(),
                j["first_error"].as_u64(),
            );
            assert_eq!(got, want, "{who} with {extra:?}");
        }
    }
    let _ = std::fs::remove_file(&file);
    let job = d.path().join("plain.fio");
    let text = format!(
        "[j]\nfilename={}\nbs=64k\nrw=write\nsize=8m\n",
        file.display()
    );
    std::fs::write(&job, text).unwrap();
    let r = common::csdchar(&["block", "--job-file", job.to_str().unwrap()]);
    assert_eq!(r.outcome.exit_code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("only 4.00MiB free"), "{}", r.stderr);
    assert!(!file.exists(), "nothing written");
}

/// do_verify=0 in a job that writes: the blocks get their verify headers and
/// are not read back; a later read job checks them (surface-scan.fio's
/// write phase, then its verify phase).
#[test]
fn do_verify_0_writes_for_a_later_job_to_check_as_fio_does() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut found = Vec::new();
    for who in ["fio", "csdchar"] {
        let data = d.path().join(format!("{who}.dat"));
        let job = d.path().join(format!("{who}.fio"));
        let text = format!(
            "[global]\nfilename={}\nsize=64k\nbs=4k\nverify=crc32c\n[w]\nrw=write\ndo_verify=0\n\
             [r]\nstonewall\nrw=read\n",
            data.display()
        );
        std::fs::write(&job, text).unwrap();
        let ios = ios_per_job(&run_json(who, &job));
        found.push(ios);
    }
    assert_eq!(found[0], found[1], "fio's, then csdchar's");
    assert_eq!(found[1]["w"], (16, 0));
    assert_eq!(found[1]["r"], (0, 16));
}

/// fill_device on a 4 MiB tmpfs: the job writes until ENOSPC, which ends it
/// normally (the failed write counted as an I/O, no verify phase after), or
/// stops at its size; then a read job checks what was written, as
/// surface-scan.fio's two phases do (with crc32c headers here; fio wants the
/// read job's size, its file not being there when it sets its jobs up).
#[test]
fn fill_device_writes_until_the_file_system_is_full_as_fio_does() {
    if fio().is_none() || !common::is_root_or_skip("fill_device (tmpfs)") {
        return;
    }
    let mnt = tempfile::Builder::new()
        .prefix("csdchar-fill")
        .tempdir_in("/var/tmp")
        .unwrap();
    let Some(_m) = common::Mounted::new("tmpfs", mnt.path(), &["-t", "tmpfs", "-o", "size=4m"])
    else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let file = mnt.path().join("f");
    let cases = [
        ("", (65, 1 << 22, 0)),
        ("size=2m\n", (32, 1 << 21, 0)),
        ("verify=crc32c\n", (65, 1 << 22, 0)),
    ];
    for (extra, want) in cases {
        for who in ["fio", "csdchar"] {
            let _ = std::fs::remove_file(&file);
            let job = d.path().join(format!("{who}.fio"));
            let text = format!(
                "[j]\nfilename={}\nbs=64k\nrw=write\nfill_device=1\n{extra}",
                file.display()
            );
            std::fs::write(&job, text).unwrap();
            let v: serde_json::Value = serde_json::from_str(&run_json(who, &job)).unwrap();
            let j = &v["jobs"][0];
            assert_eq!(j["error"], 0, "{who} with {extra:?}");
            let got = (
                j["write"]["total_ios"].as_u64().unwrap(),
                j["write"]["io_bytes"].as_u64().unwrap(),
                j["read"]["total_ios"].as_u64().unwrap(),
            );
            assert_eq!(got, want, "{who} with {extra:?}");
            assert_eq!(std::fs::metadata(&file).unwrap().len(), want.1, "{who}");
        }
    }
    for who in ["fio", "csdchar"] {
        let _ = std::fs::remove_file(&file);
        let job = d.path().join(format!("{who}-scan.fio"));
        let text = format!(
            "[global]\nfilename={}\nbs=64k\nverify=crc32c\n[w]\nrw=write\nfill_device=1\n\
             do_verify=0\n[r]\nstonewall\nrw=read\nsize=4m\n",
            file.display()
        );
        std::fs::write(&job, text).unwrap();
        let ios = ios_per_job(&run_json(who, &job));
        assert_eq!(ios["w"], (65, 0), "{who}");
        assert_eq!(ios["r"], (0, 64), "{who}");
    }
}

/// verify_pattern with crc32c: each block's data after the header is the
/// pattern repeated from the block's first byte, as fio writes it (the
/// headers differ: compared from byte 64 of each block); a read job with
/// another pattern passes in both tools (fio 3.33 checks the checksum only).
#[test]
fn verify_pattern_fills_and_checks_blocks_as_fio_does() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut bodies = Vec::new();
    for who in ["fio", "csdchar"] {
        let data = d.path().join(format!("{who}.dat"));
        let job = d.path().join(format!("{who}-w.fio"));
        let text = format!(
            "[global]\nfilename={}\nsize=16k\nbs=4k\nverify=crc32c\n\
             verify_pattern=0xaa555aa5\"ab\"\n[w]\nrw=write\n",
            data.display()
        );
        std::fs::write(&job, text).unwrap();
        let v: serde_json::Value = serde_json::from_str(&run_json(who, &job)).unwrap();
        assert_eq!(v["jobs"][0]["error"], 0, "{who}");
        let bytes = std::fs::read(&data).unwrap();
        let body: Vec<u8> = bytes.chunks(4096).flat_map(|b| b[64..].to_vec()).collect();
        bodies.push(body);
        let read = d.path().join(format!("{who}-r.fio"));
        let text = format!(
            "[global]\nfilename={}\nsize=16k\nbs=4k\nverify=crc32c\n\
             verify_pattern=0xaa555aa6\"ab\"\n[r]\nrw=read\n",
            data.display()
        );
        std::fs::write(&read, text).unwrap();
        let got = error_counts(&run_json_any(who, &read));
        assert_eq!(got, (0, 4, None, None), "{who}: another pattern");
    }
    assert_eq!(bodies[0], bodies[1], "fio's data, then csdchar's");
    // Byte 64 of a block is the pattern's 64 % 6 = 4th byte.
    assert_eq!(bodies[1][..6], [b'a', b'b', 0xaa, 0x55, 0x5a, 0xa5]);
}
