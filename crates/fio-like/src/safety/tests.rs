use super::*;
use std::path::PathBuf;

fn blank() -> Vec<u8> {
    vec![0u8; PROBE_BYTES]
}

#[test]
fn signatures() {
    assert_eq!(detect_signature(&blank()), None);
    let mut b = blank();
    b[1080..1082].copy_from_slice(&[0x53, 0xEF]);
    assert!(detect_signature(&b).unwrap().contains("ext4"));
    let mut b = blank();
    b[..4].copy_from_slice(b"XFSB");
    assert!(detect_signature(&b).unwrap().contains("XFS"));
    let mut b = blank();
    b[65600..65608].copy_from_slice(b"_BHRfS_M");
    assert!(detect_signature(&b).unwrap().contains("btrfs"));
    let mut b = blank();
    b[512..520].copy_from_slice(b"LABELONE");
    b[536..544].copy_from_slice(b"LVM2 001");
    assert!(detect_signature(&b).unwrap().contains("LVM2"));
    let mut b = blank();
    b[4086..4096].copy_from_slice(b"SWAPSPACE2");
    assert!(detect_signature(&b).unwrap().contains("swap"));
    let mut b = blank();
    b[510] = 0x55;
    b[511] = 0xAA;
    b[512..520].copy_from_slice(b"EFI PART");
    assert!(detect_signature(&b).unwrap().contains("GPT"));
    b[512..520].fill(0);
    assert!(detect_signature(&b).unwrap().contains("MBR"));
    // Short input never panics.
    assert_eq!(detect_signature(&[0x53]), None);
}

/// A sysfs tree under a tempdir, built the way the kernel lays out
/// `/sys/block`, and a path table standing in for stat(2).
struct Fixture {
    dir: tempfile::TempDir,
    paths: BTreeMap<String, Backing>,
}

impl Resolve for Fixture {
    fn path(&self, path: &str) -> Option<Backing> {
        self.paths.get(path).cloned()
    }
    fn loop_status(&self, _: &str, _: &str, _: &Path) -> Option<Backing> {
        None
    }
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().unwrap(),
            paths: BTreeMap::new(),
        }
    }
    fn put(&self, rel: &str, text: &str) {
        let p = self.dir.path().join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, format!("{text}\n")).unwrap();
    }
    /// `block/NAME` (or `block/DISK/NAME` for a partition) with its dev
    /// file, an empty holders directory, and a /dev/NAME path entry.
    fn dev(&mut self, name: &str, disk: Option<&str>, devno: &str) -> PathBuf {
        let rel = match disk {
            Some(d) => format!("block/{d}/{name}"),
            None => format!("block/{name}"),
        };
        self.put(&format!("{rel}/dev"), devno);
        if disk.is_some() {
            self.put(&format!("{rel}/partition"), "1");
        }
        fs::create_dir_all(self.dir.path().join(&rel).join("holders")).unwrap();
        self.paths
            .insert(format!("/dev/{name}"), Backing::Device(devno.to_string()));
        self.dir.path().join(rel)
    }
    fn loop_over(&mut self, name: &str, devno: &str, backing_file: &str) {
        self.dev(name, None, devno);
        self.put(&format!("block/{name}/loop/backing_file"), backing_file);
        self.put(&format!("block/{name}/loop/offset"), "0");
    }
    fn hold(&self, holder_rel: &str, holder: &str) {
        let p = self
            .dir
            .path()
            .join(holder_rel)
            .join("holders")
            .join(holder);
        fs::write(p, "").unwrap();
    }
    fn graph(&self, mountinfo: &str, swaps: &str) -> Graph {
        Graph::read(self.dir.path(), mountinfo, swaps, self)
    }
}

fn mount_line(devno: &str, at: &str, src: &str) -> String {
    format!("40 27 {devno} / {at} rw,relatime shared:1 - ext4 {src} rw\n")
}

#[test]
fn loop_over_loop_over_loop_names_the_chain_to_the_mount() {
    let mut fx = Fixture::new();
    fx.loop_over("loop5", "7:5", "/var/tmp/img");
    fx.paths
        .insert("/var/tmp/img".into(), Backing::File { dev: 2049, ino: 12 });
    fx.loop_over("loop6", "7:6", "/dev/loop5");
    fx.loop_over("loop7", "7:7", "/dev/loop6");
    fx.loop_over("loop1", "7:1", "/var/tmp/other");
    let g = fx.graph(&mount_line("7:7", "/mnt/x", "/dev/loop7"), "");
    let want = "/dev/loop5 is the backing device of /dev/loop6, \
                which is the backing device of /dev/loop7, which is mounted at /mnt/x";
    assert_eq!(g.device_hazards("/dev/loop5", "7:5"), vec![want]);
    assert_eq!(
        g.device_hazards("/dev/loop6", "7:6"),
        vec!["/dev/loop6 is the backing device of /dev/loop7, which is mounted at /mnt/x"]
    );
    assert_eq!(
        g.device_hazards("/dev/loop7", "7:7"),
        vec!["/dev/loop7 is mounted at /mnt/x"]
    );
    // The top of the stack and an unrelated loop device are free.
    let g = fx.graph("", "");
    assert!(g.device_hazards("/dev/loop7", "7:7").is_empty());
    assert!(g.device_hazards("/dev/loop1", "7:1").is_empty());
    // An attached loop device is a user even when nothing mounts it.
    assert_eq!(
        g.device_hazards("/dev/loop6", "7:6"),
        vec!["/dev/loop6 is the backing device of /dev/loop7"]
    );
    // The backing file of the bottom loop device.
    assert_eq!(
        g.file_hazards("/var/tmp/img", 2049, 12),
        vec![
            "/var/tmp/img is the backing file of /dev/loop5, which is the backing device of \
             /dev/loop6, which is the backing device of /dev/loop7"
        ]
    );
    assert!(g.file_hazards("/var/tmp/img", 2049, 13).is_empty());
}

#[test]
fn dm_over_a_partition_is_named_with_its_use() {
    let mut fx = Fixture::new();
    fx.dev("sdb", None, "8:16");
    fx.dev("sdb1", Some("sdb"), "8:17");
    fx.dev("sdb2", Some("sdb"), "8:18");
    fx.dev("dm-0", None, "253:0");
    fx.put("block/dm-0/dm/name", "vg-data");
    fx.hold("block/sdb/sdb1", "dm-0");
    fx.dev("dm-1", None, "253:1");
    fx.put("block/dm-1/dm/name", "vg-swap");
    fx.hold("block/sdb/sdb2", "dm-1");
    // A loop device over the dm device, and swap on the other.
    fx.loop_over("loop0", "7:0", "/dev/mapper/vg-data");
    fx.paths.insert(
        "/dev/mapper/vg-data".into(),
        Backing::Device("253:0".into()),
    );
    fx.paths.insert(
        "/dev/mapper/vg-swap".into(),
        Backing::Device("253:1".into()),
    );
    // btrfs reports an anonymous device number; the source names the device.
    let mi = mount_line("0:45", "/srv/my\\040data", "/dev/loop0");
    let swaps = "Filename Type Size Used Priority\n/dev/mapper/vg-swap partition 1 0 -2\n";
    let g = fx.graph(&mi, swaps);
    assert_eq!(
        g.device_hazards("/dev/sdb", "8:16"),
        vec![
            "/dev/sdb1 is held by device-mapper device vg-data (/dev/dm-0), which is the \
             backing device of /dev/loop0, which is mounted at /srv/my data",
            "/dev/sdb2 is held by device-mapper device vg-swap (/dev/dm-1), which is active swap",
        ]
    );
    // A partition: only its own users, plus the disk's own (none here).
    assert_eq!(
        g.device_hazards("/dev/sdb2", "8:18"),
        vec!["/dev/sdb2 is held by device-mapper device vg-swap (/dev/dm-1), which is active swap"]
    );
    // A holder with nothing on top is still a hazard.
    let g = fx.graph("", "");
    assert_eq!(
        g.device_hazards("/dev/sdb2", "8:18"),
        vec!["/dev/sdb2 is held by device-mapper device vg-swap (/dev/dm-1)"]
    );
}

#[test]
fn a_loop_over_a_partition_or_the_disk_counts() {
    let mut fx = Fixture::new();
    fx.dev("loop3", None, "7:3");
    fx.dev("loop3p1", Some("loop3"), "259:0");
    fx.loop_over("loop4", "7:4", "/dev/loop3p1");
    fx.loop_over("loop5", "7:5", "/dev/loop3");
    let mi = mount_line("7:4", "/mnt/p", "/dev/loop4");
    let g = fx.graph(&mi, "");
    assert_eq!(
        g.device_hazards("/dev/loop3", "7:3"),
        vec![
            "/dev/loop3 is the backing device of /dev/loop5",
            "/dev/loop3p1 is the backing device of /dev/loop4, which is mounted at /mnt/p",
        ]
    );
    assert_eq!(
        g.device_hazards("/dev/loop3p1", "259:0"),
        vec![
            "/dev/loop3p1 is the backing device of /dev/loop4, which is mounted at /mnt/p",
            "its disk /dev/loop3 is the backing device of /dev/loop5",
        ]
    );
    // A partition of a stacked loop device is followed too.
    fx.dev("loop9", None, "7:9");
    fx.loop_over("loop10", "7:10", "/dev/loop9");
    fx.dev("loop10p2", Some("loop10"), "259:7");
    let g = fx.graph(&mount_line("259:7", "/boot", "/dev/loop10p2"), "");
    assert_eq!(
        g.device_hazards("/dev/loop9", "7:9"),
        vec![
            "/dev/loop9 is the backing device of /dev/loop10, whose partition \
             /dev/loop10p2 is mounted at /boot"
        ]
    );
}

#[test]
fn cycles_and_shared_users_end() {
    let mut fx = Fixture::new();
    // A cycle the kernel would not allow, and a RAID over two dm devices of one disk.
    fx.loop_over("loop1", "7:1", "/dev/loop2");
    fx.loop_over("loop2", "7:2", "/dev/loop1");
    fx.dev("vdb", None, "252:16");
    fx.dev("vdb1", Some("vdb"), "252:17");
    fx.dev("dm-0", None, "253:0");
    fx.dev("dm-1", None, "253:1");
    fx.hold("block/vdb", "dm-0");
    fx.hold("block/vdb/vdb1", "dm-1");
    fx.dev("md0", None, "9:0");
    fs::create_dir_all(fx.dir.path().join("block/md0/md")).unwrap();
    fx.hold("block/dm-0", "md0");
    fx.hold("block/dm-1", "md0");
    let g = fx.graph(&mount_line("9:0", "/data", "/dev/md0"), "");
    assert_eq!(
        g.device_hazards("/dev/loop1", "7:1"),
        vec![
            "/dev/loop1 is the backing device of /dev/loop2, which is the backing device of /dev/loop1"
        ]
    );
    assert_eq!(
        g.device_hazards("/dev/vdb", "252:16"),
        vec![
            "/dev/vdb is held by /dev/dm-0, which is held by RAID device /dev/md0, which is mounted at /data",
            "/dev/vdb1 is held by /dev/dm-1, which is held by RAID device /dev/md0",
        ]
    );
}

#[test]
fn unknown_devices_unbound_loops_and_stale_paths() {
    let mut fx = Fixture::new();
    // An unbound loop device has no loop/backing_file.
    fx.dev("loop0", None, "7:0");
    // A backing path that no longer resolves, named as /dev/NAME.
    fx.loop_over("loop1", "7:1", "/dev/loop0");
    fx.paths.remove("/dev/loop0");
    let g = fx.graph(&mount_line("7:99", "/m", "/dev/nowhere"), "");
    assert_eq!(
        g.device_hazards("/dev/loop0", "7:0"),
        vec!["/dev/loop0 is the backing device of /dev/loop1"]
    );
    // A device sysfs does not list: its own mounts still count.
    assert_eq!(
        g.device_hazards("/dev/odd", "7:99"),
        vec!["/dev/odd is mounted at /m"]
    );
    assert!(g.device_hazards("/dev/loop1", "7:1").is_empty());
}

#[test]
fn kernel_device_numbers_decode() {
    // new_encode_dev: minor's low byte, major << 8, minor's high bits << 12.
    assert_eq!(decode_kernel_dev(0x0703), (7, 3));
    assert_eq!(
        decode_kernel_dev((259 << 8) | 0x34 | (0x12 << 20)),
        (259, 0x1234)
    );
    assert_eq!(std::mem::size_of::<LoopInfo64>(), 232);
}

#[test]
fn outputs_go_to_files_and_harmless_devices_only() {
    let dir = tempfile::tempdir().unwrap();
    let new = dir.path().join("new.json");
    write_output(&new, b"first").unwrap();
    assert_eq!(fs::read(&new).unwrap(), b"first");
    // An existing file is replaced, shorter content included.
    write_output(&new, b"2nd").unwrap();
    assert_eq!(fs::read(&new).unwrap(), b"2nd");
    // Through a symlink to a file, or to /dev/null.
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&new, &link).unwrap();
    write_output(&link, b"via link").unwrap();
    assert_eq!(fs::read(&new).unwrap(), b"via link");
    if Path::new("/dev/null").exists() {
        assert_eq!(output_refusal(Path::new("/dev/null")), None);
        write_output(Path::new("/dev/null"), b"gone").unwrap();
    }
    // A directory is no output; the error says why.
    let e = write_output(dir.path(), b"x").unwrap_err();
    assert!(matches!(e, OutputError::Io { .. }), "{e}");
    let mk = |maj, min| rustix::fs::makedev(maj, min);
    assert!(harmless_char_device(mk(1, 3)) && harmless_char_device(mk(136, 4)));
    assert!(!harmless_char_device(mk(1, 1)) && !harmless_char_device(mk(1, 11)));
    assert!(!harmless_char_device(mk(10, 259)) && !harmless_char_device(mk(21, 0)));
}

#[test]
fn mountinfo_escapes() {
    assert_eq!(unescape("/mnt/a\\040b\\011c"), "/mnt/a b\tc");
    assert_eq!(unescape("/x\\04"), "/x\\04");
    assert_eq!(unescape("\\134"), "\\");
}
