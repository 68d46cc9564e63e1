//! Device safety through stacks (issue 13): a loop device over a loop device,
//! a loop device over a partition, device-mapper over a loop device, and a
//! regular file that backs a loop device. Loop devices do not claim their
//! backing device, so only the safety check stands between a write and the
//! file system mounted on top.
//!
//! Root only (they print why they skip otherwise). Every device, mount and
//! file is created here and removed by a guard, also when an assertion fails;
//! no other loop device is touched.

use crate::common;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Mounted, csdchar, is_root_or_skip, sh};
use csdchar_fio_like::safety::{Backing, loop_backing};

/// Runs `what` until it succeeds, up to ~5 s (udev or a lazy release may
/// hold a device for a moment); warns when it never does.
fn retry(label: &str, what: impl Fn() -> bool) {
    for _ in 0..100 {
        if what() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("warning: could not {label}");
}

fn ok(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A scratch directory under /var/tmp (not tmpfs: loop devices with
/// direct I/O and ext4 behave as on a disk), removed on drop.
fn scratch(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/var/tmp")
        .unwrap()
}

/// A sparse file of `size` bytes.
fn image(dir: &Path, name: &str, size: u64) -> PathBuf {
    let p = dir.join(name);
    std::fs::File::create(&p).unwrap().set_len(size).unwrap();
    p
}

/// A loop device this test attached; detached on drop.
struct Loop {
    dev: String,
}

impl Loop {
    /// `losetup --find --show [extra] BACKING`.
    fn attach(backing: &str, extra: &[&str]) -> Loop {
        let mut args = vec!["--find", "--show"];
        args.extend_from_slice(extra);
        args.push(backing);
        Loop {
            dev: sh("losetup", &args),
        }
    }
    fn name(&self) -> &str {
        self.dev.trim_start_matches("/dev/")
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        retry(&format!("detach {}", self.dev), || {
            ok("losetup", &["-d", &self.dev])
        });
    }
}

/// A device-mapper device this test created; removed on drop.
struct Dm {
    name: String,
}

impl Drop for Dm {
    fn drop(&mut self) {
        retry(&format!("remove dm device {}", self.name), || {
            ok("dmsetup", &["remove", &self.name])
        });
    }
}

fn mkfs_or_skip(test: &str) -> bool {
    if !is_root_or_skip(test) {
        return false;
    }
    if Command::new("mkfs.ext4").arg("-V").output().is_err() {
        eprintln!("skipped {test}: mkfs.ext4 not installed");
        return false;
    }
    true
}

fn mkfs(dev: &str) {
    sh("mkfs.ext4", &["-q", "-F", dev]);
}

/// A file in a freshly made file system, so the check after the refusal has
/// something to find.
fn put_marker(mnt: &Path) {
    std::fs::write(mnt.join("marker"), b"still here").unwrap();
    sh("sync", &[]);
}

/// Unmounted `dev` checks clean (`e2fsck -fn`), mounts again and still holds
/// the marker.
fn assert_intact(dev: &str, mnt: &Path) {
    let out = Command::new("e2fsck").args(["-fn", dev]).output().unwrap();
    assert!(
        out.status.success(),
        "e2fsck -fn {dev} found damage: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _m = Mounted::new(dev, mnt, &[]).expect("the file system mounts");
    assert_eq!(std::fs::read(mnt.join("marker")).unwrap(), b"still here");
}

fn write_1m(target: &str, force: bool) -> common::Ran {
    let mut args = vec!["block", "--rw", "write", "--size", "1m", target];
    if force {
        args.push("--force");
    }
    csdchar(&args)
}

/// Asserts a refusal (exit 2, like every other refusal) whose message holds `want`.
fn assert_refused(ran: &common::Ran, want: &str) {
    assert_eq!(ran.outcome.exit_code, 2, "not refused: {}", ran.stderr);
    assert!(
        ran.stderr.contains(want),
        "want {want:?} in: {}",
        ran.stderr
    );
    assert!(ran.stderr.contains("--force"), "{}", ran.stderr);
}

fn dev_number(dev: &str) -> String {
    let rdev = std::fs::metadata(dev).unwrap().rdev();
    format!("{}:{}", libc::major(rdev), libc::minor(rdev))
}

#[test]
fn lower_loop_of_a_mounted_stack_is_refused_and_the_file_system_survives() {
    if !mkfs_or_skip("lower_loop_of_a_mounted_stack") {
        return;
    }
    let dir = scratch("csdchar-stack");
    let img = image(dir.path(), "img", 64 << 20);
    let lower = Loop::attach(img.to_str().unwrap(), &[]);
    let upper = Loop::attach(&lower.dev, &["-o", "1M"]);
    mkfs(&upper.dev);
    let mnt = scratch("csdchar-mnt");
    let mounted = Mounted::new(&upper.dev, mnt.path(), &[]).expect("the file system mounts");
    put_marker(mnt.path());

    // What the kernel says each loop device sits on (LOOP_GET_STATUS64).
    let img_meta = std::fs::metadata(&img).unwrap();
    assert_eq!(
        loop_backing(lower.name()),
        Some(Backing::File {
            dev: img_meta.dev(),
            ino: img_meta.ino()
        })
    );
    assert_eq!(
        loop_backing(upper.name()),
        Some(Backing::Device(dev_number(&lower.dev)))
    );

    let chain = format!(
        "{} is the backing device of {}, which is mounted at {}",
        lower.dev,
        upper.dev,
        mnt.path().display()
    );
    for rw in ["write", "randwrite", "randrw"] {
        let ran = csdchar(&["block", "--rw", rw, "--size", "1m", &lower.dev]);
        assert_refused(&ran, &chain);
    }
    // The image file under both is refused the same way.
    assert_refused(
        &write_1m(img.to_str().unwrap(), false),
        &format!(
            "is the backing file of {}, which is the backing device of",
            lower.dev
        ),
    );
    // Reading stays allowed.
    let ran = csdchar(&["block", "--rw", "read", "--size", "1m", &lower.dev]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);

    drop(mounted);
    assert_intact(&upper.dev, mnt.path());
}

#[test]
fn three_loops_deep_names_the_whole_chain_and_force_overrides_on_a_fresh_stack() {
    if !mkfs_or_skip("three_loops_deep") {
        return;
    }
    let dir = scratch("csdchar-stack");
    let img = image(dir.path(), "img", 64 << 20);
    let a = Loop::attach(img.to_str().unwrap(), &[]);
    let b = Loop::attach(&a.dev, &["-o", "1M"]);
    let c = Loop::attach(&b.dev, &["-o", "1M"]);
    mkfs(&c.dev);
    let mnt = scratch("csdchar-mnt");
    let mounted = Mounted::new(&c.dev, mnt.path(), &[]).expect("the file system mounts");
    put_marker(mnt.path());

    let at = mnt.path().display();
    assert_refused(
        &write_1m(&a.dev, false),
        &format!(
            "{} is the backing device of {}, which is the backing device of {}, which is mounted at {at}",
            a.dev, b.dev, c.dev
        ),
    );
    assert_refused(
        &write_1m(&b.dev, false),
        &format!(
            "{} is the backing device of {}, which is mounted at {at}",
            b.dev, c.dev
        ),
    );
    drop(mounted);
    assert_intact(&c.dev, mnt.path());

    // A fresh stack that nothing mounts: still refused (the loop device on
    // top is a user), and --force writes. Only this scratch stack is written.
    let img2 = image(dir.path(), "img2", 16 << 20);
    let lower = Loop::attach(img2.to_str().unwrap(), &[]);
    let upper = Loop::attach(&lower.dev, &["-o", "1M"]);
    let ran = write_1m(&lower.dev, false);
    assert_refused(
        &ran,
        &format!("{} is the backing device of {}", lower.dev, upper.dev),
    );
    assert!(!ran.stderr.contains("mounted"), "{}", ran.stderr);
    let ran = write_1m(&lower.dev, true);
    assert_eq!(ran.outcome.exit_code, 0, "--force: {}", ran.stderr);
    assert!(
        std::fs::read(&img2).unwrap()[..1 << 20]
            .iter()
            .any(|&x| x != 0),
        "--force wrote nothing"
    );
}

/// An MBR with one Linux partition from sector 2048 to the end.
fn write_mbr(img: &Path, size: u64) {
    let mut mbr = [0u8; 512];
    let start: u32 = 2048;
    let sectors = (size / 512) as u32 - start;
    let e = &mut mbr[446..462];
    e[4] = 0x83;
    e[8..12].copy_from_slice(&start.to_le_bytes());
    e[12..16].copy_from_slice(&sectors.to_le_bytes());
    mbr[510] = 0x55;
    mbr[511] = 0xAA;
    std::os::unix::fs::FileExt::write_all_at(
        &std::fs::File::options().write(true).open(img).unwrap(),
        &mbr,
        0,
    )
    .unwrap();
}

#[test]
fn a_loop_over_a_partition_of_the_target_is_followed() {
    if !mkfs_or_skip("a_loop_over_a_partition") {
        return;
    }
    let dir = scratch("csdchar-stack");
    let img = image(dir.path(), "img", 64 << 20);
    write_mbr(&img, 64 << 20);
    let disk = Loop::attach(img.to_str().unwrap(), &["--partscan"]);
    let part = format!("{}p1", disk.dev);
    // devtmpfs adds the partition node right after the scan; give it a moment.
    for _ in 0..100 {
        if Path::new(&part).exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if !Path::new(&part).exists() {
        eprintln!(
            "skipped a_loop_over_a_partition: the kernel made no {part} \
             (built without MSDOS partition support?)"
        );
        return;
    }
    let upper = Loop::attach(&part, &[]);
    mkfs(&upper.dev);
    let mnt = scratch("csdchar-mnt");
    let mounted = Mounted::new(&upper.dev, mnt.path(), &[]).expect("the file system mounts");
    put_marker(mnt.path());

    let chain = format!(
        "{part} is the backing device of {}, which is mounted at {}",
        upper.dev,
        mnt.path().display()
    );
    assert_refused(&write_1m(&disk.dev, false), &chain);
    assert_refused(&write_1m(&part, false), &chain);
    drop(mounted);
    assert_intact(&upper.dev, mnt.path());
}

#[test]
fn a_file_backing_a_loop_device_is_refused() {
    if !is_root_or_skip("a_file_backing_a_loop_device") {
        return;
    }
    let dir = scratch("csdchar-backing");
    let img = image(dir.path(), "img", 16 << 20);
    let lo = Loop::attach(img.to_str().unwrap(), &[]);
    let img_s = img.to_str().unwrap();
    let want = format!("{img_s} is the backing file of {}", lo.dev);
    let before = std::fs::read(&img).unwrap();
    assert_refused(&write_1m(img_s, false), &want);
    assert_eq!(
        std::fs::read(&img).unwrap(),
        before,
        "the backing file changed"
    );

    // Another name for the same inode is the same file; once the original
    // name is gone sysfs shows "img (deleted)" and only the kernel's
    // LOOP_GET_STATUS64 still tells which file backs the loop device.
    let link = dir.path().join("link");
    std::fs::hard_link(&img, &link).unwrap();
    let link_s = link.to_str().unwrap();
    assert_refused(
        &write_1m(link_s, false),
        &format!("{link_s} is the backing file of {}", lo.dev),
    );
    std::fs::remove_file(&img).unwrap();
    assert_refused(
        &write_1m(link_s, false),
        &format!("{link_s} is the backing file of {}", lo.dev),
    );

    // A file next to it that backs nothing is written as always.
    let other = dir.path().join("other");
    let ran = write_1m(other.to_str().unwrap(), false);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    // --force writes the backing file (only this test's scratch loop device).
    let ran = write_1m(link_s, true);
    assert_eq!(ran.outcome.exit_code, 0, "--force: {}", ran.stderr);
}

#[test]
fn device_mapper_over_a_loop_device_is_followed_to_its_mount() {
    if !mkfs_or_skip("device_mapper_over_a_loop_device") {
        return;
    }
    match Command::new("dmsetup").arg("version").output() {
        Err(_) => {
            eprintln!("skipped device_mapper_over_a_loop_device: dmsetup is not installed");
            return;
        }
        Ok(o) if !o.status.success() => {
            eprintln!(
                "skipped device_mapper_over_a_loop_device: no device-mapper in this kernel ({})",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .next()
                    .unwrap_or("")
            );
            return;
        }
        Ok(_) => {}
    }
    let size: u64 = 64 << 20;
    let dir = scratch("csdchar-dm");
    let img = image(dir.path(), "img", size);
    let lo = Loop::attach(img.to_str().unwrap(), &[]);
    let name = format!(
        "csdchar-test-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let table = format!("0 {} linear {} 0", size / 512, lo.dev);
    sh("dmsetup", &["create", &name, "--table", &table]);
    let dm = Dm { name };
    // The kernel names it dm-MINOR; devtmpfs makes that node without udev.
    let minor = sh(
        "dmsetup",
        &["info", "-c", "--noheadings", "-o", "minor", &dm.name],
    );
    let dm_dev = format!("/dev/dm-{minor}");
    mkfs(&dm_dev);
    let mnt = scratch("csdchar-mnt");
    let mounted = Mounted::new(&dm_dev, mnt.path(), &[]).expect("the file system mounts");
    put_marker(mnt.path());

    let want = format!(
        "{} is held by device-mapper device {} ({dm_dev}), which is mounted at {}",
        lo.dev,
        dm.name,
        mnt.path().display()
    );
    assert_refused(&write_1m(&lo.dev, false), &want);
    drop(mounted);
    assert_intact(&dm_dev, mnt.path());
}

/// Asserts `csdchar ARGS` refused its output (exit 2, one line naming
/// `option` and saying `want`, nothing on stdout).
fn assert_output_refused(args: &[&str], option: &str, want: &str) {
    let ran = csdchar(args);
    assert_eq!(ran.outcome.exit_code, 2, "{args:?}: {}", ran.stderr);
    let msg = ran.stderr.trim_end();
    assert_eq!(msg.lines().count(), 1, "{args:?}: {msg}");
    assert!(
        msg.contains(option) && msg.contains(want),
        "{args:?}: want {option} and {want:?} in: {msg}"
    );
    assert!(ran.stdout.is_empty(), "{args:?}: {}", ran.stdout);
}

/// Issue 38 row 1: an output on a block device — mounted or not, under any
/// name, for every command and format, `report --out`'s files too — is
/// refused before anything is written, by the one rule every output follows;
/// so is a file that backs a loop device. /dev/null stays an output.
#[test]
fn an_output_on_a_block_device_is_refused_for_every_command_and_format() {
    if !mkfs_or_skip("an_output_on_a_block_device") {
        return;
    }
    let dir = scratch("csdchar-output");
    let img = image(dir.path(), "img", 64 << 20);
    let lo = Loop::attach(img.to_str().unwrap(), &[]);
    mkfs(&lo.dev);
    let mnt = scratch("csdchar-mnt");
    let mounted = Mounted::new(&lo.dev, mnt.path(), &[]).expect("the file system mounts");
    put_marker(mnt.path());
    let d = dir.path().display().to_string();
    let data = format!("{d}/data.dat");
    std::fs::write(&data, vec![5u8; 1 << 20]).unwrap();
    let job = format!("{d}/read.fio");
    std::fs::write(&job, format!("[r]\nfilename={data}\nrw=read\nsize=1m\n")).unwrap();
    // Another name for the device: a symlink to it.
    let link = format!("{d}/result.json");
    std::os::unix::fs::symlink(&lo.dev, &link).unwrap();
    let mounted_at = format!("is mounted at {}", mnt.path().display());
    for out in [lo.dev.as_str(), link.as_str()] {
        for format in ["normal", "json", "fio-json", "fio-json+"] {
            assert_output_refused(
                &[
                    "block",
                    "--rw",
                    "read",
                    "--size",
                    "1m",
                    "--output-format",
                    format,
                    "--output",
                    out,
                    &data,
                ],
                "--output",
                "is a block device",
            );
            assert_output_refused(
                &[
                    "block",
                    "--job-file",
                    &job,
                    "--output-format",
                    format,
                    "--output",
                    out,
                ],
                "--output",
                &mounted_at,
            );
        }
        assert_output_refused(
            &["block", "--job-file", &job, "--parse-only", "--output", out],
            "--output",
            "is a block device",
        );
        assert_output_refused(
            &[
                "block",
                "--rw",
                "write",
                "--size",
                "1m",
                "--print-job",
                "--output",
                out,
                &data,
            ],
            "--output",
            "is a block device",
        );
        assert_output_refused(
            &["estimate", &d, "--output-format", "json", "--output", out],
            "--output",
            "is a block device",
        );
        assert_output_refused(
            &["db", "run", "--url", "host=/nonexistent", "--output", out],
            "--output",
            "is a block device",
        );
    }
    // report --out: a file it would write is a symlink to the device; no
    // file of the report is written.
    let result = format!("{d}/r.json");
    let ran = csdchar(&[
        "block",
        "--engine",
        "null",
        "--size",
        "1m",
        "--output-format",
        "json",
        "--output",
        &result,
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let out_dir = dir.path().join("report");
    std::fs::create_dir(&out_dir).unwrap();
    std::os::unix::fs::symlink(&lo.dev, out_dir.join("report.html")).unwrap();
    assert_output_refused(
        &[
            "report",
            "--quiet",
            "--out",
            out_dir.to_str().unwrap(),
            &result,
        ],
        "--out",
        "is a block device",
    );
    assert_eq!(
        std::fs::read_dir(&out_dir).unwrap().count(),
        1,
        "only the symlink"
    );
    // The image under the file system: a file the write-safety rules refuse.
    assert_output_refused(
        &["estimate", &data, "--output", img.to_str().unwrap()],
        "--output",
        &format!("is the backing file of {}", lo.dev),
    );
    drop(mounted);
    assert_intact(&lo.dev, mnt.path());

    // Not mounted, no file system: refused all the same, not a byte changed.
    let img2 = image(dir.path(), "img2", 16 << 20);
    std::fs::write(&img2, vec![0xA5u8; 16 << 20]).unwrap();
    let bare = Loop::attach(img2.to_str().unwrap(), &[]);
    assert_output_refused(
        &[
            "block",
            "--rw",
            "read",
            "--size",
            "1m",
            "--output-format",
            "json",
            "--output",
            &bare.dev,
            &data,
        ],
        "--output",
        "is a block device",
    );
    assert_output_refused(
        &["estimate", &data, "--output", &bare.dev],
        "--output",
        "is a block device",
    );
    drop(bare);
    assert!(
        std::fs::read(&img2).unwrap().iter().all(|&b| b == 0xA5),
        "the unmounted device was written"
    );
    // A result may still be thrown away.
    let ran = csdchar(&["estimate", &data, "--output", "/dev/null"]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
}
