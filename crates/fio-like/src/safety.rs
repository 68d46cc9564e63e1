//! Refuse to write to a block device or file that is in use or holds data:
//! mounted (itself or a partition), active swap, claimed by device-mapper/RAID,
//! backing a loop device, or carrying a file-system / volume / partition-table
//! signature.
//!
//! Users are followed through stacks: a loop device over this one, a dm
//! device over a partition of it, a loop over that dm device, and so on, up
//! to what finally uses the data (a mount, swap). Loop devices do not claim
//! their backing device, so the exclusive open (O_EXCL) alone does not see
//! them; device-mapper does claim, but the refusal names what sits on top.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::Path;

/// Bytes read from the start of the device to look for signatures (btrfs's
/// superblock sits at 64 KiB).
pub const PROBE_BYTES: usize = 65536 + 4096;

/// Names the first known signature in the device's first [`PROBE_BYTES`].
pub fn detect_signature(head: &[u8]) -> Option<&'static str> {
    let at = |off: usize, magic: &[u8]| head.get(off..off + magic.len()) == Some(magic);
    if at(1080, &[0x53, 0xEF]) {
        return Some("an ext2/ext3/ext4 file system");
    }
    if at(0, b"XFSB") {
        return Some("an XFS file system");
    }
    if at(65536 + 64, b"_BHRfS_M") {
        return Some("a btrfs file system");
    }
    if (0..4).any(|s| at(s * 512, b"LABELONE") && at(s * 512 + 24, b"LVM2 001")) {
        return Some("an LVM2 physical volume");
    }
    if at(4086, b"SWAPSPACE2") || at(4086, b"SWAP-SPACE") {
        return Some("a swap area");
    }
    if at(512, b"EFI PART") {
        return Some("a GPT partition table");
    }
    if at(510, &[0x55, 0xAA]) {
        return Some("an MBR partition table or boot sector");
    }
    None
}

/// Everything that makes writing to block device `path` (device number
/// `rdev`) unsafe, one plain sentence each; empty when it looks unused and blank.
pub fn write_hazards(path: &Path, rdev: u64) -> Vec<String> {
    let mut found = Graph::system().device_hazards(&path.display().to_string(), &devno(rdev));
    if let Ok(f) = fs::File::open(path) {
        let mut head = vec![0u8; PROBE_BYTES];
        let n = f.read_at(&mut head, 0).unwrap_or(0);
        head.truncate(n);
        if let Some(sig) = detect_signature(&head) {
            found.push(format!("it carries {sig} signature"));
        }
    }
    found
}

/// Everything that makes writing to regular file `path` unsafe: loop devices
/// it backs (and what uses those). Empty for a file that does not exist yet.
pub fn file_write_hazards(path: &Path) -> Vec<String> {
    match fs::metadata(path) {
        Ok(m) if m.is_file() => {
            Graph::system().file_hazards(&path.display().to_string(), m.dev(), m.ino())
        }
        _ => Vec::new(),
    }
}

/// Why a result must not be written to `path` (`--output` of every command,
/// the files `report --out` writes), or None when it may. The one rule for
/// every output csdchar writes: a block device is always refused, mounted or
/// not (a result belongs in a file; `--force` does not apply), so is a
/// character device other than `/dev/null`, `/dev/zero`, `/dev/full` or a
/// terminal, and a regular file the write-safety rules refuse as a target
/// (one backing a loop device). A path that does not exist yet, a FIFO and a
/// harmless regular file may be written.
pub fn output_refusal(path: &Path) -> Option<String> {
    fs::metadata(path)
        .ok()
        .and_then(|m| refusal_of(&path.display().to_string(), &m))
}

/// Why a result must not be written to `out`, the file a command names
/// for its result (`--output`), or None: an existing directory, a file in a
/// directory that does not exist, what [`output_refusal`] refuses, and a file
/// that is one of `inputs` (the files or devices the command reads or writes),
/// compared by canonical path and by device and inode; inputs and the output
/// need not exist yet. One line, without the option's name.
pub fn output_problem(out: &Path, inputs: &[&Path]) -> Option<String> {
    if let Some(why) = output_refusal(out) {
        return Some(why);
    }
    if out.is_dir() {
        return Some(format!(
            "{} is a directory; give a file name (e.g. {})",
            out.display(),
            out.join("result.json").display()
        ));
    }
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Some(format!("directory {} does not exist", dir.display()));
    }
    if let Some(input) = inputs.iter().find(|i| same_file(out, i)) {
        return Some(format!(
            "{} is the same file as {}, which the command reads or writes; write the result to another file",
            out.display(),
            input.display()
        ));
    }
    None
}

/// Whether `a` and `b` name the same file: same inode (hard links, bind
/// mounts), same device node number, or the same canonical path.
fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(ma), Ok(mb)) = (fs::metadata(a), fs::metadata(b)) {
        if ma.dev() == mb.dev() && ma.ino() == mb.ino() {
            return true;
        }
        let device = |m: &std::fs::Metadata| {
            m.file_type().is_block_device() || m.file_type().is_char_device()
        };
        if device(&ma) && device(&mb) && ma.rdev() == mb.rdev() {
            return true;
        }
    }
    matches!((canonical(a), canonical(b)), (Some(x), Some(y)) if x == y)
}

/// The canonical path of `p`, which may not exist yet: then its directory's
/// canonical path joined with its name.
fn canonical(p: &Path) -> Option<std::path::PathBuf> {
    if let Ok(c) = p.canonicalize() {
        return Some(c);
    }
    let name = p.file_name()?;
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Some(dir.canonicalize().ok()?.join(name))
}

/// [`output_refusal`] for what `shown` names, as `meta` describes it.
fn refusal_of(shown: &str, meta: &fs::Metadata) -> Option<String> {
    let ft = meta.file_type();
    if ft.is_block_device() {
        let uses = write_hazards(Path::new(shown), meta.rdev());
        let uses = if uses.is_empty() {
            String::new()
        } else {
            format!(" ({})", uses.join("; "))
        };
        return Some(format!(
            "{shown} is a block device{uses}; results are written to files, never to a device"
        ));
    }
    if ft.is_char_device() && !harmless_char_device(meta.rdev()) {
        return Some(format!(
            "{shown} is a character device; results are written to files (or /dev/null, a terminal)"
        ));
    }
    if ft.is_file() {
        let uses = Graph::system().file_hazards(shown, meta.dev(), meta.ino());
        if !uses.is_empty() {
            return Some(format!(
                "{}; a result written there would land in that device",
                uses.join("; ")
            ));
        }
    }
    None
}

/// /dev/null, /dev/zero and /dev/full (major 1, minors 3, 5, 7), and
/// terminals: ttys (4), /dev/tty and the console (5), pseudo-terminals (136-143).
fn harmless_char_device(rdev: u64) -> bool {
    match rustix::fs::major(rdev) {
        1 => matches!(rustix::fs::minor(rdev), 3 | 5 | 7),
        4 | 5 | 136..=143 => true,
        _ => false,
    }
}

/// Why an output was not written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The path is one [`output_refusal`] refuses (bad input).
    #[error("{0}")]
    Refused(String),
    /// Opening or writing failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
}

/// Writes `bytes` to `path` under [`output_refusal`]'s rule, checked on what
/// is actually opened: a new file is created exclusively (a symlink planted
/// meanwhile is not followed), an existing one is opened without truncation
/// and truncated only after the opened file proved to be the one checked and
/// allowed. Nothing is written to a refused path.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display().to_string();
    let io = |source| OutputError::Io {
        path: shown.clone(),
        source,
    };
    // A path that changes between the look and the open is looked at again.
    for _ in 0..8 {
        let before = match fs::metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io(e)),
        };
        if let Some(why) = before.as_ref().and_then(|m| refusal_of(&shown, m)) {
            return Err(OutputError::Refused(why));
        }
        let mut opts = fs::OpenOptions::new();
        opts.write(true)
            .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC);
        if before.is_none() {
            opts.create_new(true).mode(0o666);
        }
        let mut f = match opts.open(path) {
            Ok(f) => f,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::NotFound
                ) =>
            {
                continue;
            }
            Err(e) => return Err(io(e)),
        };
        if let Some(before) = &before {
            let now = f.metadata().map_err(io)?;
            if (now.dev(), now.ino()) != (before.dev(), before.ino()) {
                continue;
            }
            if let Some(why) = refusal_of(&shown, &now) {
                return Err(OutputError::Refused(why));
            }
            if now.is_file() {
                f.set_len(0).map_err(io)?;
            }
        }
        f.write_all(bytes).map_err(io)?;
        return f.flush().map_err(io);
    }
    Err(OutputError::Refused(format!(
        "{shown} kept changing while it was opened; write the result elsewhere"
    )))
}

/// Writes `files` (paths relative to `dir`, e.g. a report's) with
/// [`write_output`], making directories as needed; every path is checked
/// with [`output_refusal`] before the first is written, so a refused one
/// (say a `report.html` that is a symlink to a block device) leaves `dir`
/// as it was.
pub fn write_outputs(
    dir: &Path,
    files: &[(std::path::PathBuf, Vec<u8>)],
) -> Result<(), OutputError> {
    if let Some(why) = files
        .iter()
        .find_map(|(rel, _)| output_refusal(&dir.join(rel)))
    {
        return Err(OutputError::Refused(why));
    }
    for (rel, bytes) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|source| OutputError::Io {
                path: parent.display().to_string(),
                source,
            })?;
        }
        write_output(&path, bytes)?;
    }
    Ok(())
}

/// What a loop device reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backing {
    /// A block device, as "MAJ:MIN".
    Device(String),
    /// A regular file: `st_dev` and `st_ino` as stat(2) reports them.
    File { dev: u64, ino: u64 },
}

/// The backing of loop device `name` (e.g. "loop3") as the kernel reports it
/// with LOOP_GET_STATUS64: unlike sysfs's `backing_file` path it stays right
/// when the file was renamed, unlinked or lives in another mount namespace.
/// None for an unbound loop device, an auto-clearing one (closing it could
/// detach it), or when /dev/NAME cannot be opened.
pub fn loop_backing(name: &str) -> Option<Backing> {
    let sys = Path::new("/sys/block").join(name);
    let expect = read_trim(&sys.join("dev"))?;
    loop_status(name, &expect, &sys)
}

fn loop_status(name: &str, expect_devno: &str, sys_dir: &Path) -> Option<Backing> {
    // An auto-clearing loop device that nobody else holds open is detached on
    // our close: a safety check must not do that.
    if read_trim(&sys_dir.join("loop/autoclear")).as_deref() != Some("0") {
        return None;
    }
    let f = fs::File::open(Path::new("/dev").join(name)).ok()?;
    let m = f.metadata().ok()?;
    if !m.file_type().is_block_device() || devno(m.rdev()) != expect_devno {
        return None;
    }
    // Safety: loop_info64 is plain integers and byte arrays; all zeros is valid.
    let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
    // Safety: LOOP_GET_STATUS64 writes one struct loop_info64 (the layout
    // mirrored by LoopInfo64) into the buffer we own; the fd is open.
    let rc = unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&f),
            LOOP_GET_STATUS64,
            &mut info as *mut LoopInfo64,
        )
    };
    if rc != 0 {
        return None;
    }
    Some(if info.lo_rdevice != 0 {
        let (maj, min) = decode_kernel_dev(info.lo_rdevice);
        Backing::Device(format!("{maj}:{min}"))
    } else {
        let (maj, min) = decode_kernel_dev(info.lo_device);
        Backing::File {
            dev: rustix::fs::makedev(maj, min),
            ino: info.lo_inode,
        }
    })
}

/// `<linux/loop.h>`'s LOOP_GET_STATUS64.
const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;

/// `<linux/loop.h>`'s struct loop_info64.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// (major, minor) of a device number in the kernel's `new_encode_dev` form,
/// which loop_info64 carries (it differs from glibc's for large numbers).
fn decode_kernel_dev(d: u64) -> (u32, u32) {
    let d = d as u32;
    ((d & 0xfff00) >> 8, (d & 0xff) | ((d >> 12) & 0xfff00))
}

fn devno(rdev: u64) -> String {
    format!("{}:{}", rustix::fs::major(rdev), rustix::fs::minor(rdev))
}

fn proc_text(name: &str) -> String {
    fs::read_to_string(Path::new("/proc/self").join(name))
        .or_else(|_| fs::read_to_string(Path::new("/proc").join(name)))
        .unwrap_or_default()
}

fn read_trim(p: &Path) -> Option<String> {
    Some(fs::read_to_string(p).ok()?.trim().to_string()).filter(|s| !s.is_empty())
}

/// Entry names of a directory, sorted (empty when it is missing).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Undoes the octal escapes (`\040` for a space) of /proc/self/mountinfo and /proc/swaps.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 4 <= b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// How paths named by sysfs, mountinfo and /proc/swaps map to devices and
/// files; the real machine stats them, unit tests use a table.
trait Resolve {
    /// What `path` is: a block device or a regular file.
    fn path(&self, path: &str) -> Option<Backing>;
    /// The backing of bound loop device `name` when its path did not resolve.
    fn loop_status(&self, name: &str, devno: &str, sys_dir: &Path) -> Option<Backing>;
}

struct System;

impl Resolve for System {
    fn path(&self, path: &str) -> Option<Backing> {
        let m = fs::metadata(path).ok()?;
        Some(if m.file_type().is_block_device() {
            Backing::Device(devno(m.rdev()))
        } else {
            Backing::File {
                dev: m.dev(),
                ino: m.ino(),
            }
        })
    }
    fn loop_status(&self, name: &str, devno: &str, sys_dir: &Path) -> Option<Backing> {
        loop_status(name, devno, sys_dir)
    }
}

/// One block device as sysfs shows it.
#[derive(Debug, Default)]
struct Node {
    /// "MAJ:MIN".
    devno: String,
    /// The disk of a partition.
    disk: Option<String>,
    partitions: Vec<String>,
    /// Kernel names of the devices that claim this one (dm, md, bcache).
    holders: Vec<String>,
    /// How messages name it.
    label: String,
    /// What a bound loop device sits on.
    backing: Option<Backing>,
}

/// One link of a chain of users, from the device being checked outwards.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// The device's partition (label) is what the following steps are about.
    Partition(String),
    MountedAt(String),
    Swap,
    BackingDeviceOf(String),
    BackingFileOf(String),
    HeldBy(String),
}

/// The block devices of the machine, what is mounted and what is swap.
#[derive(Debug, Default)]
struct Graph {
    nodes: BTreeMap<String, Node>,
    /// (MAJ:MIN, mount point).
    mounts: Vec<(String, String)>,
    /// (MAJ:MIN, name as /proc/swaps lists it).
    swaps: Vec<(String, String)>,
}

impl Graph {
    /// This machine's block devices, mounts and swap.
    fn system() -> Graph {
        Graph::read(
            Path::new("/sys"),
            &proc_text("mountinfo"),
            &proc_text("swaps"),
            &System,
        )
    }

    /// Reads `<sys_root>/block` (disks, their partitions, holders, dm names,
    /// loop backings) and the text of mountinfo and /proc/swaps.
    fn read(sys_root: &Path, mountinfo: &str, swaps: &str, r: &dyn Resolve) -> Graph {
        let mut g = Graph::default();
        let mut loops = Vec::new();
        for name in names(&sys_root.join("block")) {
            let dir = sys_root.join("block").join(&name);
            let Some(devno) = read_trim(&dir.join("dev")) else {
                continue;
            };
            let label = if let Some(dm) = read_trim(&dir.join("dm/name")) {
                format!("device-mapper device {dm} (/dev/{name})")
            } else if dir.join("md").is_dir() {
                format!("RAID device /dev/{name}")
            } else {
                format!("/dev/{name}")
            };
            let mut partitions = Vec::new();
            for sub in names(&dir) {
                let pdir = dir.join(&sub);
                if let Some(pdev) = read_trim(&pdir.join("dev"))
                    && pdir.join("partition").exists()
                {
                    g.nodes.insert(
                        sub.clone(),
                        Node {
                            devno: pdev,
                            disk: Some(name.clone()),
                            holders: names(&pdir.join("holders")),
                            label: format!("/dev/{sub}"),
                            ..Node::default()
                        },
                    );
                    partitions.push(sub);
                }
            }
            // An unbound loop device has no backing_file.
            if let Some(file) = read_trim(&dir.join("loop/backing_file")) {
                loops.push((name.clone(), file, dir.clone()));
            }
            g.nodes.insert(
                name,
                Node {
                    devno,
                    partitions,
                    holders: names(&dir.join("holders")),
                    label,
                    ..Node::default()
                },
            );
        }
        for (name, file, dir) in loops {
            let devno = g.nodes[&name].devno.clone();
            // The path first (no side effects); the kernel's answer when the
            // path is stale; last, a "/dev/NAME" path naming a device we know.
            let backing = r
                .path(&file)
                .or_else(|| r.loop_status(&name, &devno, &dir))
                .or_else(|| {
                    let n = file.strip_prefix("/dev/")?;
                    Some(Backing::Device(g.nodes.get(n)?.devno.clone()))
                });
            g.nodes.get_mut(&name).expect("inserted above").backing = backing;
        }
        for line in mountinfo.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            if f.len() < 5 {
                continue;
            }
            let at = unescape(f[4]);
            g.mounts.push((f[2].to_string(), at.clone()));
            // btrfs and others report an anonymous device number in field 3;
            // the source after " - fstype" names the real device.
            if let Some(sep) = f.iter().position(|x| *x == "-")
                && let Some(src) = f.get(sep + 2)
                && src.starts_with("/dev/")
                && let Some(Backing::Device(d)) = r.path(&unescape(src))
                && d != f[2]
            {
                g.mounts.push((d, at));
            }
        }
        for line in swaps.lines().skip(1) {
            if let Some(name) = line.split_whitespace().next() {
                let name = unescape(name);
                if let Some(Backing::Device(d)) = r.path(&name) {
                    g.swaps.push((d, name));
                }
            }
        }
        g
    }

    /// Kernel name of the device numbered `devno`.
    fn by_devno(&self, devno: &str) -> Option<&str> {
        self.nodes
            .iter()
            .find(|(_, n)| n.devno == devno)
            .map(|(k, _)| k.as_str())
    }

    /// Hazards of writing block device `shown` (numbered `devno`).
    fn device_hazards(&self, shown: &str, devno: &str) -> Vec<String> {
        let mut visited = BTreeSet::new();
        let Some(name) = self.by_devno(devno) else {
            // Not in sysfs (odd): still check its own mounts, swap and loops.
            return self
                .direct_uses(devno, &[], &mut visited)
                .iter()
                .map(|c| render(shown, c))
                .collect();
        };
        visited.insert(name.to_string());
        let mut found: Vec<String> = self
            .uses(name, &mut visited)
            .iter()
            .map(|c| render(shown, c))
            .collect();
        // Writing a partition writes its disk too: what uses the disk itself
        // (not its other partitions) is at risk as well.
        if let Some(disk) = &self.nodes[name].disk
            && let Some(d) = self.nodes.get(disk)
            && visited.insert(disk.clone())
        {
            let subject = format!("its disk {}", d.label);
            found.extend(
                self.direct_uses(&d.devno, &d.holders, &mut visited)
                    .iter()
                    .map(|c| render(&subject, c)),
            );
        }
        found
    }

    /// Hazards of writing regular file `shown` (stat's `dev`, `ino`).
    fn file_hazards(&self, shown: &str, dev: u64, ino: u64) -> Vec<String> {
        let file = Backing::File { dev, ino };
        let mut visited = BTreeSet::new();
        let mut found = Vec::new();
        for (name, n) in &self.nodes {
            if n.backing.as_ref() == Some(&file) {
                found.extend(
                    self.follow(Step::BackingFileOf(n.label.clone()), name, &mut visited)
                        .iter()
                        .map(|c| render(shown, c)),
                );
            }
        }
        found
    }

    /// Every use of device `name` and of its partitions, as chains of steps.
    fn uses(&self, name: &str, visited: &mut BTreeSet<String>) -> Vec<Vec<Step>> {
        let Some(node) = self.nodes.get(name) else {
            return Vec::new();
        };
        let mut out = self.direct_uses(&node.devno, &node.holders, visited);
        for p in &node.partitions {
            if !visited.insert(p.clone()) {
                continue;
            }
            let pn = &self.nodes[p];
            for chain in self.direct_uses(&pn.devno, &pn.holders, visited) {
                let mut c = vec![Step::Partition(pn.label.clone())];
                c.extend(chain);
                out.push(c);
            }
        }
        out
    }

    /// Mounts, swap, holders and loop devices of the one device `devno`.
    fn direct_uses(
        &self,
        devno: &str,
        holders: &[String],
        visited: &mut BTreeSet<String>,
    ) -> Vec<Vec<Step>> {
        let mut out = Vec::new();
        let mut mounted: Vec<&str> = self
            .mounts
            .iter()
            .filter(|(d, _)| d == devno)
            .map(|(_, at)| at.as_str())
            .collect();
        mounted.sort();
        mounted.dedup();
        out.extend(
            mounted
                .iter()
                .map(|at| vec![Step::MountedAt(at.to_string())]),
        );
        if self.swaps.iter().any(|(d, _)| d == devno) {
            out.push(vec![Step::Swap]);
        }
        for h in holders {
            let label = self
                .nodes
                .get(h)
                .map_or(format!("/dev/{h}"), |n| n.label.clone());
            out.extend(self.follow(Step::HeldBy(label), h, visited));
        }
        let backing = Some(Backing::Device(devno.to_string()));
        for (name, n) in &self.nodes {
            if n.backing == backing {
                out.extend(self.follow(Step::BackingDeviceOf(n.label.clone()), name, visited));
            }
        }
        out
    }

    /// `step` to user `name`, then every use of `name`; just `step` when
    /// nothing uses it or it was already followed (cycles, shared users).
    fn follow(&self, step: Step, name: &str, visited: &mut BTreeSet<String>) -> Vec<Vec<Step>> {
        let further = if visited.insert(name.to_string()) {
            self.uses(name, visited)
        } else {
            Vec::new()
        };
        if further.is_empty() {
            return vec![vec![step]];
        }
        further
            .into_iter()
            .map(|f| {
                let mut c = vec![step.clone()];
                c.extend(f);
                c
            })
            .collect()
    }
}

/// One sentence: "/dev/loop5 is the backing device of /dev/loop6, which is mounted at /mnt/x".
fn render(subject: &str, chain: &[Step]) -> String {
    let mut s = subject.to_string();
    // Whether the next verb has its subject just before it (no ", which").
    let mut fresh = true;
    for (i, step) in chain.iter().enumerate() {
        let lead = if fresh { " " } else { ", which " };
        fresh = false;
        match step {
            Step::Partition(p) => {
                if i == 0 {
                    s = p.clone();
                } else {
                    s += &format!(", whose partition {p}");
                }
                fresh = true;
            }
            Step::MountedAt(at) => s += &format!("{lead}is mounted at {at}"),
            Step::Swap => s += &format!("{lead}is active swap"),
            Step::BackingDeviceOf(l) => s += &format!("{lead}is the backing device of {l}"),
            Step::BackingFileOf(l) => s += &format!("{lead}is the backing file of {l}"),
            Step::HeldBy(h) => s += &format!("{lead}is held by {h}"),
        }
    }
    s
}

#[cfg(test)]
mod tests;
