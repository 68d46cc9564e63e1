//! What a block device is: model, firmware, size, and for zram its
//! compression algorithm, as sysfs says. For records (a campaign's manifest),
//! not for decisions.

use std::path::Path;

use crate::{BlockDevice, Sysfs};

/// A block device's identity. Figures sysfs does not have are `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeviceIdentity {
    /// Kernel name of the device holding the path (`nvme0n1p2`, `zram1`).
    pub name: String,
    /// The whole disk (`nvme0n1`).
    pub disk: String,
    /// `device/model` (NVMe, SCSI/SATA).
    pub model: Option<String>,
    /// `device/vendor` (SCSI/SATA).
    pub vendor: Option<String>,
    /// `device/firmware_rev` (NVMe) or `device/rev` (SCSI/SATA).
    pub firmware_rev: Option<String>,
    /// Size of the device (the partition's, if it is one), bytes.
    pub size_bytes: Option<u64>,
    /// Whether the kernel takes the disk for a rotating one (`queue/rotational`).
    pub rotational: Option<bool>,
    /// zram: the selected compression algorithm.
    pub zram_algorithm: Option<String>,
}

impl Sysfs {
    /// The identity of `dev`.
    pub fn identity(&self, dev: &BlockDevice) -> DeviceIdentity {
        let read = |rel: String| {
            self.read(rel)
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
        };
        let disk = format!("block/{}", dev.disk);
        DeviceIdentity {
            name: dev.name.clone(),
            disk: dev.disk.clone(),
            model: read(format!("{disk}/device/model")),
            vendor: read(format!("{disk}/device/vendor")),
            firmware_rev: read(format!("{disk}/device/firmware_rev"))
                .or_else(|| read(format!("{disk}/device/rev"))),
            size_bytes: read(format!("class/block/{}/size", dev.name))
                .and_then(|s| s.parse::<u64>().ok())
                .map(|sectors| sectors * 512),
            rotational: read(format!("{disk}/queue/rotational")).map(|r| r == "1"),
            zram_algorithm: self.zram_algorithm(&dev.disk),
        }
    }

    /// The zoned model of `dev`'s disk (`queue/zoned`: `host-managed`,
    /// `host-aware`); None for a disk that is not zoned (`none`) or unknown.
    pub fn zoned_model(&self, dev: &BlockDevice) -> Option<String> {
        self.read(format!("block/{}/queue/zoned", dev.disk))
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty() && t != "none")
    }

    /// The compressor zram disk `disk` uses: `comp_algorithm`'s bracketed choice.
    pub fn zram_algorithm(&self, disk: &str) -> Option<String> {
        self.read(format!("block/{disk}/comp_algorithm"))
            .and_then(|t| selected(t.trim()))
    }

    /// The identity of the device holding `path` (see [`Sysfs::resolve`]).
    pub fn identity_of(&self, path: &Path) -> Result<DeviceIdentity, crate::ResolveError> {
        Ok(self.identity(&self.resolve(path)?))
    }
}

/// The bracketed choice of a sysfs list (`lzo [lz4] zstd` → `lz4`), or the
/// only word.
fn selected(list: &str) -> Option<String> {
    let words: Vec<&str> = list.split_whitespace().collect();
    words
        .iter()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .or(if words.len() == 1 {
            Some(words[0])
        } else {
            None
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    #[test]
    fn model_firmware_and_zram_algorithm_from_a_fixture() {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        let mk = |rel: &str, text: &str| {
            let p = r.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        };
        mk("devices/pci/block/nvme0n1/dev", "259:0\n");
        mk("devices/pci/block/nvme0n1/size", "2048\n");
        mk("devices/pci/block/nvme0n1/device/model", "CSDU5SPC38  \n");
        mk(
            "devices/pci/block/nvme0n1/device/firmware_rev",
            "U5400610\n",
        );
        mk("devices/pci/block/nvme0n1/queue/rotational", "0\n");
        mk("devices/pci/block/nvme0n1/queue/zoned", "host-managed\n");
        mk("devices/virtual/block/zram3/queue/zoned", "none\n");
        mk("devices/virtual/block/zram3/dev", "252:3\n");
        mk(
            "devices/virtual/block/zram3/comp_algorithm",
            "lzo lzo-rle [lz4] zstd\n",
        );
        fs::create_dir_all(r.join("dev/block")).unwrap();
        fs::create_dir_all(r.join("class/block")).unwrap();
        fs::create_dir_all(r.join("block")).unwrap();
        for (num, name, target) in [
            ("259:0", "nvme0n1", "devices/pci/block/nvme0n1"),
            ("252:3", "zram3", "devices/virtual/block/zram3"),
        ] {
            symlink(r.join(target), r.join("dev/block").join(num)).unwrap();
            symlink(r.join(target), r.join("class/block").join(name)).unwrap();
            symlink(r.join(target), r.join("block").join(name)).unwrap();
        }
        let sys = Sysfs::at(r);
        let n = sys.identity(&sys.by_name("nvme0n1").unwrap());
        assert_eq!(n.model.as_deref(), Some("CSDU5SPC38"));
        assert_eq!(n.firmware_rev.as_deref(), Some("U5400610"));
        assert_eq!((n.size_bytes, n.rotational), (Some(1 << 20), Some(false)));
        assert_eq!(n.zram_algorithm, None);
        let z = sys.identity(&sys.by_name("zram3").unwrap());
        assert_eq!(z.zram_algorithm.as_deref(), Some("lz4"));
        assert_eq!((z.model, z.firmware_rev), (None, None));
        let zoned = |name: &str| sys.zoned_model(&sys.by_name(name).unwrap());
        assert_eq!(zoned("nvme0n1").as_deref(), Some("host-managed"));
        assert_eq!(zoned("zram3"), None);
    }
}
