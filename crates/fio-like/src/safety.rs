//! Refuse to write to a block device that is in use or holds data: mounted
//! (itself or a partition), active swap, claimed by device-mapper/RAID, or
//! carrying a file-system / volume / partition-table signature.

use std::fs;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use crate::sysinfo::sys_dev_block;

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
/// `rdev`) unsafe, in plain words; empty when it looks unused and blank.
pub fn write_hazards(path: &Path, rdev: u64) -> Vec<String> {
    let mut found = Vec::new();
    let sys = sys_dev_block(rdev);
    // The device itself and its partitions.
    let mut devs = vec![(
        format!("{}:{}", libc::major(rdev), libc::minor(rdev)),
        path.display().to_string(),
    )];
    if let Ok(entries) = fs::read_dir(&sys) {
        for e in entries.flatten() {
            if let Ok(dev) = fs::read_to_string(e.path().join("dev"))
                && e.path().join("partition").exists()
            {
                devs.push((
                    dev.trim().to_string(),
                    e.file_name().to_string_lossy().into_owned(),
                ));
            }
        }
    }
    if let Ok(mi) = fs::read_to_string("/proc/self/mountinfo") {
        for line in mi.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 4
                && let Some((_, name)) = devs.iter().find(|(d, _)| d == f[2])
            {
                found.push(format!("{name} is mounted at {}", f[4]));
            }
        }
    }
    if let Ok(swaps) = fs::read_to_string("/proc/swaps") {
        for line in swaps.lines().skip(1) {
            if let Some(name) = line.split_whitespace().next()
                && let Ok(m) = fs::metadata(name)
                && devs.iter().any(|(d, _)| {
                    *d == format!("{}:{}", libc::major(m.rdev()), libc::minor(m.rdev()))
                })
            {
                found.push(format!("{name} is active swap"));
            }
        }
    }
    if let Ok(holders) = fs::read_dir(sys.join("holders")) {
        let names: Vec<String> = holders
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        if !names.is_empty() {
            found.push(format!(
                "it is held by {} (device-mapper, LVM or RAID)",
                names.join(", ")
            ));
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
