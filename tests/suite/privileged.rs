//! Tests on real block devices: loop devices and zram. They run as root (CI
//! is root) and print why they skip otherwise. Guards detach loop devices and
//! remove zram devices even when an assertion fails.

use crate::common;

use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::process::Command;

use common::{LoopDev, Mounted, Zram, csdchar, is_root_or_skip, sh};

// The tests whose runs take a different path on the io_uring client driver run again on it
// (the others load, check or clean up, where the driver plays no part).
crate::on_uring_too!("fillfactor_study_on_zram");

/// ext4 on a zram device of its own (2 GiB, lz4), mounted with discard so a
/// dropped table's blocks leave the drive; None (reason printed) when
/// mkfs.ext4, zram or mount is missing. Fields drop in order: unmount, then
/// the directory, then the zram reset.
struct ZramExt4 {
    _mounted: Mounted,
    dir: tempfile::TempDir,
    zram: Zram,
}

impl ZramExt4 {
    fn new(prefix: &str) -> Option<ZramExt4> {
        if Command::new("mkfs.ext4").arg("-V").output().is_err() {
            eprintln!("skipped: mkfs.ext4 not installed");
            return None;
        }
        let zram = Zram::new("2G", "lz4")?;
        sh("mkfs.ext4", &["-q", "-F", &zram.dev()]);
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in("/var/tmp")
            .unwrap();
        let _mounted = Mounted::new(&zram.dev(), dir.path(), &["-o", "discard"])?;
        Some(ZramExt4 {
            _mounted,
            dir,
            zram,
        })
    }
}

/// A loop device with btrfs mounted `compress-force=zstd` on a directory
/// under /var/tmp, or None (with the reason printed) when mkfs.btrfs is
/// missing or the mount fails. Fields drop in order: unmount, directory, device.
struct BtrfsZstd {
    _mounted: Mounted,
    dir: tempfile::TempDir,
    _lo: LoopDev,
}

impl BtrfsZstd {
    fn new(size: u64, prefix: &str) -> Option<BtrfsZstd> {
        if Command::new("mkfs.btrfs")
            .arg("--version")
            .output()
            .is_err()
        {
            eprintln!("skipped: mkfs.btrfs not installed");
            return None;
        }
        let lo = LoopDev::new(size);
        sh("mkfs.btrfs", &["-q", "-f", &lo.dev]);
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in("/var/tmp")
            .unwrap();
        let _mounted = Mounted::new(&lo.dev, dir.path(), &["-o", "compress-force=zstd"])?;
        Some(BtrfsZstd {
            _mounted,
            dir,
            _lo: lo,
        })
    }
}

/// A loop device formatted as ext4, or None (with the reason printed) when
/// mkfs.ext4 is missing.
fn ext4_loop(size: u64) -> Option<LoopDev> {
    if Command::new("mkfs.ext4").arg("-V").output().is_err() {
        eprintln!("skipped: mkfs.ext4 not installed");
        return None;
    }
    let lo = LoopDev::new(size);
    sh("mkfs.ext4", &["-q", "-F", &lo.dev]);
    Some(lo)
}

fn read_all(dev: &str, len: usize) -> Vec<u8> {
    let f = std::fs::File::open(dev).unwrap();
    let mut buf = vec![0u8; len];
    f.read_exact_at(&mut buf, 0).unwrap();
    buf
}

#[test]
fn refuses_an_ext4_loop_device_and_leaves_it_unchanged() {
    if !is_root_or_skip("refuses_an_ext4_loop_device") {
        return;
    }
    let Some(lo) = ext4_loop(64 << 20) else {
        return;
    };
    let before = read_all(&lo.dev, 64 << 20);
    // Trims change the device as writes do: the same refusal.
    for rw in [
        "write",
        "randwrite",
        "randrw",
        "trim",
        "randtrim",
        "trimwrite",
    ] {
        let ran = csdchar(&["block", "--rw", rw, "--size", "4m", &lo.dev]);
        assert_eq!(ran.outcome.exit_code, 2, "{rw}: {}", ran.stderr);
        assert!(ran.stderr.contains("ext2/ext3/ext4"), "{}", ran.stderr);
        assert!(ran.stderr.contains("--force"), "{}", ran.stderr);
    }
    // Reading is always allowed.
    let ran = csdchar(&[
        "block",
        "--rw",
        "randread",
        "--size",
        "4m",
        "--runtime",
        "300ms",
        &lo.dev,
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert_eq!(
        read_all(&lo.dev, 64 << 20),
        before,
        "device contents changed"
    );
    // --force writes.
    let ran = csdchar(&["block", "--rw", "write", "--size", "1m", "--force", &lo.dev]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert_ne!(read_all(&lo.dev, 64 << 20), before);
}

#[test]
fn refuses_a_mounted_loop_device() {
    if !is_root_or_skip("refuses_a_mounted_loop_device") {
        return;
    }
    let Some(lo) = ext4_loop(32 << 20) else {
        return;
    };
    let mnt = tempfile::Builder::new()
        .prefix("csdchar-mnt")
        .tempdir_in("/var/tmp")
        .unwrap();
    let _m = Mounted::new(&lo.dev, mnt.path(), &[]).expect("ext4 mounts");
    let ran = csdchar(&["block", "--rw", "write", "--size", "1m", &lo.dev]);
    assert_eq!(ran.outcome.exit_code, 2);
    assert!(ran.stderr.contains("mounted at"), "{}", ran.stderr);
}

#[test]
fn verify_on_a_loop_device_detects_corruption() {
    if !is_root_or_skip("verify_on_a_loop_device") {
        return;
    }
    let lo = LoopDev::new(16 << 20);
    let args = [
        "--bs",
        "8k",
        "--size",
        "8m",
        "--iodepth",
        "16",
        "--numjobs",
        "2",
        "--seed",
        "5",
    ];
    let mut w = vec![
        "block",
        "--rw",
        "randwrite",
        "--verify",
        "crc32c",
        lo.dev.as_str(),
    ];
    w.extend_from_slice(&args);
    let ran = csdchar(&w);
    assert_eq!(ran.outcome.exit_code, 0, "{}{}", ran.stdout, ran.stderr);
    let r = ran.outcome.block.unwrap();
    assert_eq!(r.verify.as_ref().unwrap().blocks_checked, 1024);
    assert_eq!(r.diskstats.as_ref().unwrap().delta.bytes_written(), 8 << 20);

    // Corrupt two blocks through the device, bypassing csdchar.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&lo.dev)
        .unwrap();
    f.write_at(&[0xFFu8; 16], 8192 * 3 + 4000).unwrap();
    f.write_at(&[0u8; 8192], 8192 * 1000).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let mut v = vec![
        "block",
        "--verify-only",
        lo.dev.as_str(),
        "--output-format",
        "json",
    ];
    v.extend_from_slice(&args);
    let ran = csdchar(&v);
    assert_eq!(ran.outcome.exit_code, 1);
    let rep = ran.outcome.block.unwrap().verify.unwrap();
    let lba: Vec<u64> = rep.bad_blocks.iter().map(|b| b.lba).collect();
    assert_eq!(lba, vec![8192 * 3 / 512, 8192 * 1000 / 512]);
}

#[test]
fn zram_stores_compress_writes_at_the_requested_ratio() {
    if !is_root_or_skip("zram_stores_compress_writes") {
        return;
    }
    for (p, fill) in [
        (75u8, "repeat"),
        (75, "zeros"),
        (50, "repeat"),
        (90, "repeat"),
    ] {
        let Some(z) = Zram::new("256M", "lz4") else {
            return;
        };
        let dev = z.dev();
        let ran = csdchar(&[
            "block",
            "--rw",
            "write",
            "--bs",
            "128k",
            "--iodepth",
            "16",
            "--size",
            "128m",
            "--compress",
            &p.to_string(),
            "--compress-fill",
            fill,
            &dev,
            "--output-format",
            "json",
        ]);
        assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
        let m = z.mm_stat();
        assert_eq!(m.orig_data_size, 128 << 20);
        let ratio = m.orig_data_size as f64 / m.compr_data_size as f64;
        let target = 100.0 / (100.0 - f64::from(p));
        assert!(
            (ratio / target - 1.0).abs() < 0.05,
            "p={p} {fill}: zram ratio {ratio:.3}, target {target}"
        );
        if fill == "repeat" {
            assert_eq!(
                m.same_pages, 0,
                "repeat fill must not produce same-filled pages"
            );
        }
        let r = ran.outcome.block.unwrap();
        let ds = r.diskstats.unwrap();
        assert_eq!(ds.device, format!("zram{}", z.id));
        assert_eq!(ds.delta.bytes_written(), 128 << 20);
    }
}

#[test]
fn zram_randread_uses_fixed_buffers_and_files() {
    if !is_root_or_skip("zram_randread") {
        return;
    }
    let Some(z) = Zram::new("64M", "lz4") else {
        return;
    };
    let dev = z.dev();
    common::write_compressible(&dev, "64m", 50, &[]);
    let ran = csdchar(&[
        "block",
        "--rw",
        "randread",
        "--iodepth",
        "32",
        "--runtime",
        "1s",
        "--time-based",
        &dev,
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let r = ran.outcome.block.unwrap();
    assert!(
        r.engine.fixed_buffers && r.engine.fixed_files,
        "{:?}",
        r.engine
    );
    assert!(r.read.unwrap().iops > 1000.0);
}

/// `csdchar` with `args`, again while udev still probes the device after the
/// last run's writes (the exclusive open then fails as busy), for up to 5 s.
fn after_udev(args: &[&str]) -> common::Ran {
    for _ in 0..50 {
        let ran = csdchar(args);
        if !(ran.outcome.exit_code == 2 && ran.stderr.contains("busy")) {
            return ran;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    csdchar(args)
}

#[test]
fn trims_free_zram_space_and_the_capacity_counters_show_it() {
    if !is_root_or_skip("trims_free_zram_space") {
        return;
    }
    let Some(z) = Zram::new("64M", "lz4") else {
        return;
    };
    let dev = z.dev();
    common::write_compressible(&dev, "64m", 50, &[]);
    let full = z.mm_stat();
    assert_eq!(full.orig_data_size, 64 << 20);
    // Sequential trims of the first half, as discards through io_uring.
    let ran = after_udev(&[
        "block",
        "--rw",
        "trim",
        "--bs",
        "1m",
        "--size",
        "32m",
        &dev,
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let half = z.mm_stat();
    assert_eq!(half.orig_data_size, 32 << 20, "the trimmed half is gone");
    assert!(
        half.compr_data_size * 10 < full.compr_data_size * 6,
        "compressed bytes {} -> {}",
        full.compr_data_size,
        half.compr_data_size
    );
    let r = ran.outcome.block.unwrap();
    assert!(r.read.is_none() && r.write.is_none());
    let t = r.trim.as_ref().expect("trim totals");
    assert_eq!((t.ios, t.bytes), (32, 32 << 20));
    assert!(t.clat.count > 0);
    let c = r.capacity.as_ref().expect("zram counters around the run");
    assert_eq!(
        c.before.logical_bytes.unwrap() - c.after.logical_bytes.unwrap(),
        32 << 20,
        "the capacity counters show the space coming back"
    );
    // Random trims over the rest, with fio's JSON: trims land in "trim".
    let ran = after_udev(&[
        "block",
        "--rw",
        "randtrim",
        "--size",
        "64m",
        "--iodepth",
        "8",
        &dev,
        "--output-format",
        "fio-json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(v["jobs"][0]["trim"]["total_ios"].as_u64(), Some(16384));
    assert_eq!(v["jobs"][0]["write"]["total_ios"].as_u64(), Some(0));
    assert!(z.mm_stat().orig_data_size < 32 << 20);
    // trimwrite: each block trimmed, then written.
    let ran = after_udev(&[
        "block",
        "--rw",
        "trimwrite",
        "--size",
        "8m",
        &dev,
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let r = ran.outcome.block.unwrap();
    assert_eq!(r.trim.unwrap().ios, 2048);
    assert_eq!(r.write.unwrap().ios, 2048);
}

#[test]
fn capacity_matches_mm_stat_and_block_runs_carry_the_delta() {
    if !is_root_or_skip("capacity_matches_mm_stat") {
        return;
    }
    let Some(z) = Zram::new("256M", "lz4") else {
        return;
    };
    let dev = z.dev();
    let ran = common::write_compressible(&dev, "96m", 75, &["--output-format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    common::assert_matches_schema(&v, "block");
    let delta = &v["capacity"]["delta"];
    assert_eq!(delta["logical_bytes"].as_i64(), Some(96 << 20));
    let ratio = delta["compression_ratio"].as_f64().unwrap();
    assert!((ratio / 4.0 - 1.0).abs() < 0.05, "run's ratio {ratio}");
    assert!(
        v["capacity"]["after"]["nvme_data_units_written"].is_null(),
        "absent, not zero"
    );

    let ran = csdchar(&["capacity", &dev, "--output-format", "json"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let c: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let mm = z.mm_stat();
    assert_eq!(c["schema"], "csdchar.capacity/1");
    assert_eq!(
        c["snapshot"]["logical_bytes"].as_u64(),
        Some(mm.orig_data_size)
    );
    assert_eq!(
        c["snapshot"]["physical_bytes"].as_u64(),
        Some(mm.compr_data_size)
    );
    assert_eq!(
        c["snapshot"]["physical_used_bytes"].as_u64(),
        Some(mm.mem_used_total)
    );
    let text = csdchar(&["capacity", &dev]).stdout;
    assert!(
        text.contains("compression ratio") && text.contains("[zram_mm_stat]"),
        "{text}"
    );
}

#[test]
fn zram_out_of_memory_stops_cleanly_and_says_so() {
    if !is_root_or_skip("zram_out_of_memory") {
        return;
    }
    let Some(z) = Zram::new("64M", "lz4") else {
        return;
    };
    std::fs::write(z.sys("mem_limit"), "4M").unwrap();
    let dev = z.dev();
    let out_file = tempfile::NamedTempFile::new_in("/var/tmp").unwrap();
    let ran = csdchar(&[
        "block",
        "--rw",
        "write",
        "--bs",
        "64k",
        "--iodepth",
        "4",
        "--compress",
        "0",
        &dev,
        "--output-format",
        "json",
        "--output",
        out_file.path().to_str().unwrap(),
    ]);
    assert_eq!(ran.outcome.exit_code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("out of physical space"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("partial result saved"),
        "{}",
        ran.stderr
    );
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_file.path()).unwrap()).unwrap();
    assert_eq!(v["status"], "io_error");
    assert_eq!(v["error"]["errno"].as_i64(), Some(i64::from(libc::EIO)));
    let written = v["write"]["bytes"].as_u64().unwrap();
    assert!(
        ((3 << 20)..=(5 << 20)).contains(&written),
        "{written} bytes before the limit"
    );
    assert!(v["capacity"]["after"]["failed_writes"].as_u64().unwrap() > 0);
    assert!(
        v["error"]["message"].as_str().unwrap().contains("4.00MiB"),
        "{}",
        v["error"]["message"]
    );
}

#[test]
fn lz4_estimate_is_within_3_percent_of_zram() {
    if !is_root_or_skip("lz4_estimate_vs_zram") {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-est")
        .tempdir_in("/var/tmp")
        .unwrap();
    let file = dir.path().join("data");
    let f = file.to_str().unwrap();
    // Mixed compressibility, so the comparison is not one ratio everywhere.
    for (p, off) in [(30, "0"), (70, "32m"), (90, "64m")] {
        common::write_compressible(f, "32m", p, &["--offset", off]);
    }
    let Some(z) = Zram::new("256M", "lz4") else {
        return;
    };
    let data = std::fs::read(&file).unwrap();
    let dev = std::fs::OpenOptions::new()
        .write(true)
        .open(z.dev())
        .unwrap();
    dev.write_all_at(&data, 0).unwrap();
    dev.sync_all().unwrap();
    drop(dev);
    let zram = z.mm_stat().compr_data_size as f64;
    let ran = csdchar(&["estimate", f, "--codec", "lz4", "--output-format", "json"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let est = v["total"]["stored_bytes"].as_f64().unwrap();
    assert!(
        (est / zram - 1.0).abs() < 0.03,
        "estimate {est} vs zram compr_data_size {zram}"
    );
    // Read-only on the device itself: its unwritten tail reads as zeros, which cost nothing.
    let ran = csdchar(&[
        "estimate",
        &z.dev(),
        "--codec",
        "lz4",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(v["total"]["logical_bytes"].as_u64(), Some(256 << 20));
    let dev_est = v["total"]["stored_bytes"].as_f64().unwrap();
    assert!(
        (dev_est / zram - 1.0).abs() < 0.03,
        "device estimate {dev_est} vs zram {zram}"
    );
}

#[test]
fn btrfs_compression_is_measured_like_compsize() {
    if !is_root_or_skip("btrfs_compression") {
        return;
    }
    let Some(fs) = BtrfsZstd::new(512 << 20, "csdchar-btrfs") else {
        return;
    };
    let mnt = &fs.dir;
    let file = mnt.path().join("data");
    // Buffered writes: btrfs does not compress O_DIRECT writes.
    common::write_compressible(file.to_str().unwrap(), "64m", 75, &["--direct", "0"]);
    sh("sync", &[]);
    let ran = csdchar(&[
        "capacity",
        file.to_str().unwrap(),
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let b = &v["btrfs"];
    assert_eq!(b["uncompressed_bytes"].as_u64(), Some(64 << 20), "{b}");
    let disk = b["disk_bytes"].as_u64().unwrap();
    let ratio = (64u64 << 20) as f64 / disk as f64;
    assert!(ratio > 3.0, "zstd on 75%-compressible data: {ratio:.2}");
    assert!(b["compressed_extents"].as_u64().unwrap() > 0);
    // The directory sums its files.
    let ran = csdchar(&[
        "capacity",
        mnt.path().to_str().unwrap(),
        "--output-format",
        "json",
    ]);
    let d: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(d["btrfs"]["disk_bytes"].as_u64(), Some(disk));
}

/// Issue 25: on btrfs the study's physical figure is the file system's own,
/// the relation files' extents as stored (compressed), not a model's.
#[test]
fn fillfactor_study_on_btrfs_takes_the_relations_extents() {
    if !is_root_or_skip("fillfactor_study_on_btrfs") || !common::postgres_or_skip() {
        return;
    }
    let Some(fs) = BtrfsZstd::new(1 << 30, "csdchar-btrfs-study") else {
        return;
    };
    let mnt = &fs.dir;
    let pgdata = mnt.path().join("pgdata");
    let ran = csdchar(&[
        "db",
        "study",
        "--pgdata",
        pgdata.to_str().unwrap(),
        "--tables",
        "1",
        "--table-size",
        "20000",
        "--fillfactor",
        "100,50",
        "--threads",
        "1",
        "--time",
        "1s",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    common::assert_matches_schema(&v, "study");
    assert!(
        v["physical_method"]
            .as_str()
            .unwrap()
            .contains("as btrfs stores them"),
        "{}",
        v["physical_method"]
    );
    let rows = v["rows"].as_array().unwrap();
    for r in rows {
        assert_eq!(r["physical_estimated"], false, "{r}");
        assert!(
            r["physical_source"].as_str().unwrap().contains("extents"),
            "{r}"
        );
        let (phys, logical) = (
            r["physical_bytes"].as_f64().unwrap(),
            r["physical_of_logical_bytes"].as_f64().unwrap(),
        );
        // zstd stores sysbench's pages in well under half; the half-empty
        // pages of fillfactor 50 in less still.
        assert!(phys > 0.0 && phys < logical / 2.0, "{r}");
    }
    let ratio = |r: &serde_json::Value| r["ratio"].as_f64().unwrap();
    assert!(ratio(&rows[1]) > ratio(&rows[0]), "{rows:?}");
}

#[test]
fn fillfactor_study_on_zram_ext4_grows_logical_much_more_than_physical() {
    if !is_root_or_skip("fillfactor_study_on_zram_ext4") {
        return;
    }
    if !common::postgres_or_skip() {
        return;
    }
    let Some(fs) = ZramExt4::new("csdchar-study") else {
        return;
    };
    let z = &fs.zram;
    let pgdata = fs.dir.path().join("pgdata");
    let p = pgdata.to_str().unwrap();
    let ran = csdchar(&[
        "db",
        "study",
        "--pgdata",
        p,
        "--workload",
        "tpcb",
        "--scale",
        "5",
        "--fillfactor",
        "100,70,50",
        "--repeat",
        "2",
        "--threads",
        "2",
        "--time",
        "2s",
        // Loads skip WAL (COPY FREEZE into a table truncated in the same transaction),
        // so the drive holds the tables, not WAL copies of them.
        "--pg-set",
        "wal_level=minimal",
        "--pg-set",
        "max_wal_senders=0",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("fillfactor"),
        "the table: {}",
        ran.stderr
    );
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    common::assert_matches_schema(&v, "study");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap();
    for r in rows {
        // The headline is the relation files under zram's own algorithm.
        assert_eq!(r["physical_estimated"], true, "{r}");
        let source = r["physical_source"].as_str().unwrap();
        assert!(
            source.contains(&format!("lz4 per 4 KiB (zram{}'s algorithm; ", z.id))
                && source.contains("stored whole, as zsmalloc does"),
            "{r}"
        );
        assert!(f(r, "tps") > 0.0);
        // The split adds up to the drive's change over the load, the
        // relations' part is the headline, and with WAL segments removed
        // rather than recycled (the study's managed cluster) little is left
        // beside the relations: the model and the drive agree.
        let sp = &r["physical_split"];
        let (drive, rel) = (f(sp, "drive_bytes"), f(sp, "relations_bytes"));
        let wal = sp["wal_bytes"].as_f64().unwrap_or(0.0);
        assert!(
            (rel + wal + f(sp, "rest_bytes") - drive).abs() < 1.0,
            "{sp}"
        );
        assert_eq!(rel, f(r, "physical_bytes"));
        // What neither the relations nor the WAL explain stays small: the
        // model agrees with the drive, and no removed WAL segment is left
        // on it (0.1-0.6 MiB in 75 loads measured, BENCHMARKS.md).
        let rest = f(sp, "rest_bytes");
        assert!(
            rest.abs() < 0.03 * drive + f64::from(2u32 << 20),
            "rest {rest} of drive {drive}: {sp}"
        );
        // Two loads per fillfactor, and their spread.
        assert_eq!(r["loads"].as_array().unwrap().len(), 2, "{r}");
        assert!(r["drive_spread"]["stddev"].as_f64().is_some(), "{r}");
    }
    assert!(
        v["physical_method"]
            .as_str()
            .unwrap()
            .contains("wal_recycle=off"),
        "{}",
        v["physical_method"]
    );
    // Properties of the measured numbers, not fixed values: lower fillfactor,
    // more logical bytes; the drive stores the empty space for almost nothing.
    let (lg70, lg50) = (f(&rows[1], "logical_growth"), f(&rows[2], "logical_growth"));
    let pg50 = f(&rows[2], "physical_growth");
    assert!(
        lg70 > 0.2 && lg50 > lg70 + 0.2,
        "logical growth {lg70} {lg50}"
    );
    assert!(
        pg50 < lg50 / 2.0,
        "physical growth {pg50} vs logical {lg50}"
    );
    assert!(f(&rows[2], "ratio") > f(&rows[0], "ratio"), "{rows:?}");
}

/// The review's reproduction: sysbench tables at fillfactor 100 then 70 on
/// zram+ext4 with the server's default WAL settings. Before the warm-up load,
/// the first load's device change included the WAL segments it created and
/// the second reused them, so physical size "fell" by half at fillfactor 70.
#[test]
fn study_with_default_wal_settings_measures_comparable_rows() {
    if !is_root_or_skip("study_with_default_wal_settings") {
        return;
    }
    if !common::postgres_or_skip() {
        return;
    }
    let Some(fs) = ZramExt4::new("csdchar-study-wal") else {
        return;
    };
    let pgdata = fs.dir.path().join("pgdata");
    let ran = csdchar(&[
        "db",
        "study",
        "--pgdata",
        pgdata.to_str().unwrap(),
        "--workload",
        "oltp-read-write",
        "--tables",
        "2",
        "--table-size",
        "150000",
        "--fillfactor",
        "100,70",
        "--time",
        "1s",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    assert!(ran.stderr.contains("warm-up"), "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    common::assert_matches_schema(&v, "study");
    assert!(
        v["physical_method"].as_str().unwrap().contains("warm-up"),
        "{}",
        v["physical_method"]
    );
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap();
    let (lg, pg) = (
        f(&rows[1], "logical_growth"),
        f(&rows[1], "physical_growth"),
    );
    // Fillfactor 70 adds ~40% pages of mostly empty space: logical grows a
    // lot, physical a little — it must never shrink as it did (-51%).
    assert!(lg > 0.25, "logical growth {lg}");
    assert!(pg > -0.05 && pg < lg, "physical growth {pg} (logical {lg})");
    assert!(f(&rows[1], "ratio") > f(&rows[0], "ratio"), "{rows:?}");
    for r in rows {
        // The measured loads reused WAL segments: pg_wal grew by at most one
        // 16 MiB segment (its granularity), not by a load's worth (~80 MiB here).
        let growth = r["wal_dir_growth_bytes"].as_i64().unwrap();
        let rel = r["relation_bytes"].as_i64().unwrap();
        assert!(
            growth <= 16 << 20,
            "pg_wal grew {growth} over a load of {rel}"
        );
        assert!(r["load_wal_bytes"].as_i64().unwrap() > 0, "{r}");
    }
}

/// Issue 41: a study of the user's own workload — a pgbench script on tables its
/// `--script-init` SQL makes, rewritten at each fillfactor — on zram, with the drive's split.
#[test]
fn fillfactor_study_on_zram_of_a_user_script() {
    if !is_root_or_skip("fillfactor_study_on_zram_of_a_user_script") || !common::postgres_or_skip()
    {
        return;
    }
    let Some(fs) = ZramExt4::new("csdchar-script-study") else {
        return;
    };
    let init = fs.dir.path().join("init.sql");
    std::fs::write(
        &init,
        "CREATE TABLE items (id int PRIMARY KEY, qty int, note text);\n\
         INSERT INTO items SELECT g, g % 100, repeat(md5(g::text), 3) FROM generate_series(1, 100000) g;\n",
    )
    .unwrap();
    let script = fs.dir.path().join("mine.sql");
    std::fs::write(
        &script,
        "\\set id random(1, 100000)\n\
         UPDATE items SET qty = qty + 1 WHERE id = :id;\n\
         SELECT note FROM items WHERE id = :id;\n",
    )
    .unwrap();
    // The data directory sits beside the scripts, on the zram file system.
    std::fs::set_permissions(
        fs.dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let pgdata = fs.dir.path().join("pgdata");
    let ran = csdchar(&[
        "db",
        "study",
        "--pgdata",
        pgdata.to_str().unwrap(),
        "-f",
        script.to_str().unwrap(),
        "--script-init",
        init.to_str().unwrap(),
        "--fillfactor",
        "100,70,50",
        "-M",
        "prepared",
        "-c",
        "2",
        "-T",
        "2",
        "--pg-set",
        "wal_level=minimal",
        "--pg-set",
        "max_wal_senders=0",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    common::assert_matches_schema(&v, "study");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{v}");
    let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap();
    for r in rows {
        assert!(f(r, "tps") > 0.0, "{r}");
        let sp = &r["physical_split"];
        let (drive, rel) = (f(sp, "drive_bytes"), f(sp, "relations_bytes"));
        let wal = sp["wal_bytes"].as_f64().unwrap_or(0.0);
        assert!(
            (rel + wal + f(sp, "rest_bytes") - drive).abs() < 1.0,
            "{sp}"
        );
    }
    // The tables the script names are the study's, rewritten at each fillfactor.
    let (lg70, lg50) = (f(&rows[1], "logical_growth"), f(&rows[2], "logical_growth"));
    assert!(lg70 > 0.1 && lg50 > lg70, "logical growth {lg70} {lg50}");
    assert_eq!(
        v["spec"]["script"]["query_mode"], "prepared",
        "{}",
        v["spec"]
    );
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    for run in runs {
        let step = &run["steps"][0];
        assert!(step["transactions"].as_u64().unwrap() > 0, "{step}");
        let commands = &step["script"]["scripts"][0]["commands"];
        assert_eq!(commands.as_array().unwrap().len(), 3, "{commands}");
    }
}

/// Set in the child process of [`a_device_is_free_again_when_a_run_on_it_exits`]: the device
/// to run on.
const RUN_ONCE_ON: &str = "CSDCHAR_TEST_RUN_ONCE_ON";

#[test]
fn a_device_is_free_again_when_a_run_on_it_exits() {
    const TEST: &str = "privileged::a_device_is_free_again_when_a_run_on_it_exits";
    if let Some(dev) = std::env::var_os(RUN_ONCE_ON) {
        // The child: one run, then the process exits.
        let ran = csdchar(&[
            "block",
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--iodepth",
            "16",
            "--size",
            "2m",
            "--compress",
            "75",
            dev.to_str().unwrap(),
        ]);
        assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
        return;
    }
    if !is_root_or_skip("a_device_is_free_again") {
        return;
    }
    let Some(z) = Zram::new("64M", "lz4") else {
        return;
    };
    let dev = z.dev();
    // A run's exclusive claim on the device must end with its process: a
    // script's next csdchar (or mkfs) on it would otherwise be refused as busy.
    // It outlived the process when the ring's registered file was left to the
    // kernel's teardown of the ring, which runs in a workqueue after the exit
    // (3-5 runs in 30 refused on a busy machine, 1 in 30 on a quiet one).
    for round in 0..30 {
        let child = Command::new(std::env::current_exe().unwrap())
            .args([TEST, "--exact", "--test-threads=1"])
            .env(RUN_ONCE_ON, &dev)
            .output()
            .unwrap();
        assert!(
            child.status.success(),
            "round {round}: {}",
            String::from_utf8_lossy(&child.stdout)
        );
        let claimed = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_EXCL)
            .open(&dev);
        assert!(
            claimed.is_ok(),
            "round {round}: {dev} still claimed after the run's process exited: {claimed:?}"
        );
    }
}
