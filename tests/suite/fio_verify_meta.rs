//! fio's examples/surface-scan.fio beside fio 3.33: `verify=meta` (fio's
//! header-only verify), `verify_interval=512` (a header every 512 bytes of a
//! 64 KiB block) and `verify_pattern` (the data after each header). Scaled
//! down: `size=256k` on a temp file for `fill_device=1` on a disk. Both tools
//! write, then verify; a unit changed between the phases is named at the
//! same offset and length by both (fio 3.33 fails the job only for a bad
//! header or a block's last unit, csdchar for any: see `fio_fails`); each
//! tool verifies the other's meta data
//! (csdchar writes fio's header: the files differ only in the header's time
//! and the crc over it). crc32c's headers are each tool's own, so there each
//! tool checks its own data only.

use crate::fio_parity::fio;

use std::os::unix::fs::FileExt;
use std::path::Path;

const EXAMPLE: &str = "surface-scan.fio";

/// fio's example with its file at `data`.
fn example(data: &Path) -> String {
    std::fs::read_to_string(Path::new("/var/tmp/fioex/examples").join(EXAMPLE))
        .unwrap_or_else(|_| {
            // The example as fio 3.33 ships it, for a machine without the copy.
            "[global]\nthread\nbs=64k\ndirect=1\nioengine=sync\nverify=meta\n\
             verify_pattern=0xaa555aa5\nverify_interval=512\n\n[write-phase]\n\
             filename=datafile.tmp\nrw=write\nfill_device=1\ndo_verify=0\n\n\
             [verify-phase]\nstonewall\ncreate_serialize=0\nfilename=datafile.tmp\n\
             rw=read\ndo_verify=1\n"
                .into()
        })
        .replace("datafile.tmp", data.to_str().unwrap())
}

/// fio's example, its file at `data`, `size=256k` for `fill_device=1`, the
/// verify type `verify`; (write phase, verify phase) as two job files' text.
fn phases(verify: &str, data: &Path) -> (String, String) {
    let text = example(data)
        .replace("fill_device=1", "size=256k")
        .replace("verify=meta", &format!("verify={verify}"));
    let at = text.find("[verify-phase]").unwrap();
    let global = &text[..text.find("[write-phase]").unwrap()];
    (text[..at].to_string(), format!("{global}{}", &text[at..]))
}

/// Runs job file text `text` with `who` in `dir` (fio dumps nothing outside
/// it): exit code and stderr.
fn run(who: &str, dir: &Path, name: &str, text: &str) -> (i32, String) {
    let path = dir.join(format!("{who}-{name}.fio"));
    std::fs::write(&path, text).unwrap();
    // fio runs in `dir`, the job file's directory.
    crate::fio_parity::run_job_file(who, &path)
}

/// Headers and data of two meta files alike but for the time in each header
/// (bytes 24..32) and the header's crc over it (36..40).
fn assert_alike_but_the_time(f: &[u8], c: &[u8]) {
    assert_eq!(f.len(), c.len());
    for (u, (fu, cu)) in f.chunks(512).zip(c.chunks(512)).enumerate() {
        assert_eq!(fu[..24], cu[..24], "unit {u}: magic .. offset");
        assert_eq!(fu[32..36], cu[32..36], "unit {u}: thread, numberio");
        assert_eq!(fu[40..], cu[40..], "unit {u}: the pattern");
    }
}

fn corrupt(data: &Path, at: u64, bytes: &[u8]) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(data)
        .unwrap()
        .write_all_at(bytes, at)
        .unwrap();
}

#[test]
fn surface_scan_writes_verifies_and_names_a_bad_unit_as_fio_does() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    let mut written = Vec::new();
    for who in ["fio", "csdchar"] {
        let data = d.path().join(format!("{who}.dat"));
        let (write, verify) = phases("meta", &data);
        let (rc, err) = run(who, d.path(), "w", &write);
        assert_eq!(rc, 0, "{who}: write phase: {err}");
        let (rc, err) = run(who, d.path(), "v", &verify);
        assert_eq!(rc, 0, "{who}: verify phase: {err}");
        written.push(std::fs::read(&data).unwrap());
    }
    // fio's headers, fio's pattern: all but the time (bytes 24..32 of each
    // header) and the header's crc over it (36..40) are the same.
    let (f, c) = (&written[0], &written[1]);
    assert_eq!(f.len(), 256 << 10);
    assert_alike_but_the_time(f, c);
    assert_eq!(
        u16::from_le_bytes([c[3 * 65536 + 34], c[3 * 65536 + 35]]),
        3,
        "numberio of block 3"
    );
    // Each tool verifies the other's data.
    for (who, other) in [("fio", "csdchar"), ("csdchar", "fio")] {
        let (_, verify) = phases("meta", &d.path().join(format!("{other}.dat")));
        let (rc, err) = run(who, d.path(), "x", &verify);
        assert_eq!(rc, 0, "{who} verifies {other}'s data: {err}");
    }
    // A byte of a unit's pattern, a unit's header offset, a byte of a
    // block's last unit changed behind the tools' backs: both name the unit
    // (offset, 512 bytes). csdchar fails the job for each; fio 3.33 only for
    // a bad header or a bad last unit (see `fio_fails`).
    for (at, bytes, unit) in [
        (3 * 65536 + 5 * 512 + 100, &b"x"[..], 3 * 65536 + 5 * 512),
        (2 * 65536 + 7 * 512 + 17, &b"\x01"[..], 2 * 65536 + 7 * 512),
        (65536 + 127 * 512 + 300, &b"x"[..], 65536 + 127 * 512),
    ] {
        for who in ["fio", "csdchar"] {
            let data = d.path().join(format!("{who}.dat"));
            std::fs::write(&data, if who == "fio" { f } else { c }).unwrap();
            corrupt(&data, at, bytes);
            let (_, verify) = phases("meta", &data);
            let (rc, err) = run(who, d.path(), "bad", &verify);
            assert_bad_unit(who, rc, &err, unit, at % 512 < 40);
        }
    }
}

/// Whether fio 3.33 fails a read whose unit `unit` of 512 is bad: its
/// verify_io_u checks a block's units in turn and keeps the last unit's
/// verdict on the data (a bad header returns at once), so a bad data unit
/// other than the block's last is logged and the job goes on (unless
/// verify_fatal=1). csdchar fails the job for any bad unit.
fn fio_fails(unit: u64, header: bool) -> bool {
    header || unit % 65536 == 65536 - 512
}

fn assert_bad_unit(who: &str, rc: i32, err: &str, unit: u64, header: bool) {
    assert!(
        err.contains(&format!("offset {unit}, length 512")),
        "{who}: names unit {unit}: {err}"
    );
    let fails = who == "csdchar" || fio_fails(unit, header);
    assert_eq!(rc != 0, fails, "{who}: exit {rc} for unit {unit}: {err}");
}

#[test]
fn crc32c_with_verify_interval_names_the_bad_unit_as_fio_does() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir_in("/var/tmp").unwrap();
    for who in ["fio", "csdchar"] {
        let data = d.path().join(format!("{who}.dat"));
        let (write, verify) = phases("crc32c", &data);
        let (rc, err) = run(who, d.path(), "w", &write);
        assert_eq!(rc, 0, "{who}: write phase: {err}");
        let (rc, err) = run(who, d.path(), "v", &verify);
        assert_eq!(rc, 0, "{who}: verify phase: {err}");
        let b = std::fs::read(&data).unwrap();
        let headers = b.chunks(512).filter(|u| u[..2] != [0xaa, 0x55]).count();
        assert_eq!(headers, 512, "{who}: a header in each 512-byte unit");
        let good = std::fs::read(&data).unwrap();
        for unit in [65536 + 9 * 512, 65536 + 127 * 512] {
            std::fs::write(&data, &good).unwrap();
            corrupt(&data, unit + 300, b"x");
            let (rc, err) = run(who, d.path(), "bad", &verify);
            assert_bad_unit(who, rc, &err, unit, false);
        }
    }
}

/// The example itself, fill_device=1 and direct=1, on a 1 MiB tmpfs: both
/// tools write until ENOSPC (16 blocks and the failed 17th, counted as
/// fio counts it), then verify all 16, with the same bytes but the time.
#[test]
fn surface_scan_fills_a_small_file_system_and_verifies_it_as_fio_does() {
    if fio().is_none() || !crate::common::is_root_or_skip("surface-scan (tmpfs)") {
        return;
    }
    let mnt = tempfile::Builder::new()
        .prefix("csdchar-scan")
        .tempdir_in("/var/tmp")
        .unwrap();
    let Some(_m) =
        crate::common::Mounted::new("tmpfs", mnt.path(), &["-t", "tmpfs", "-o", "size=1m"])
    else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let data = mnt.path().join("datafile.tmp");
    let mut written = Vec::new();
    for who in ["fio", "csdchar"] {
        let _ = std::fs::remove_file(&data);
        let path = d.path().join(format!("{who}.fio"));
        std::fs::write(&path, example(&data)).unwrap();
        let json = crate::fio_parity::fio_json_of(who, &path, std::time::Duration::from_secs(120))
            .unwrap_or_else(|(code, e)| panic!("{who} exited {code}: {e}"))
            .unwrap_or_else(|| panic!("fio ran {} for over 2 minutes", path.display()))
            .to_string();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let got: Vec<_> = v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| {
                (
                    j["jobname"].as_str().unwrap().to_string(),
                    j["error"].as_u64().unwrap(),
                    j["write"]["total_ios"].as_u64().unwrap(),
                    j["read"]["total_ios"].as_u64().unwrap(),
                    j["read"]["io_bytes"].as_u64().unwrap(),
                )
            })
            .collect();
        let want = [
            ("write-phase".to_string(), 0, 17, 0, 0),
            ("verify-phase".to_string(), 0, 0, 16, 1 << 20),
        ];
        assert_eq!(got, want, "{who}");
        written.push(std::fs::read(&data).unwrap());
    }
    assert_eq!(written[0].len(), 1 << 20);
    assert_alike_but_the_time(&written[0], &written[1]);
}
