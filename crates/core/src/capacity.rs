//! Logical versus physical capacity of compressing storage, from every source
//! csdchar knows, in one format. Parsers only: the bytes and text come from
//! `csdchar-devices`, which reads sysfs and sends NVMe admin commands.
//!
//! Sources (see `shared/reference/capacity-counters.md`):
//! - zram `mm_stat` / `io_stat` ([`crate::counters::ZramMmStat`], [`ZramIoStat`]);
//! - ScaleFlux CSD 2000 sysfs `sfx_capacity_stat` ([`SfxCapacityStat`]), whose
//!   exact layout is not public, hence a tolerant parser;
//! - ScaleFlux CSD 3000 NVMe: free-space query ([`SfxFreeSpace`]), extended
//!   health log 0xC2/0xD2 ([`SfxExtendedHealth`]), log 0xCA with host and NAND
//!   bytes written ([`SfxWriteCounters`]);
//! - the standard NVMe SMART log 0x02 ([`SmartLog`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::counters::{CounterError, DiskStats, ZramMmStat, counter_fields};

/// zram's `io_stat`: failed reads and writes and slot frees.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct ZramIoStat {
    /// Reads that failed.
    pub failed_reads: u64,
    /// Writes that failed (out of memory under `mem_limit` counts here).
    pub failed_writes: u64,
    /// Slots freed by discards or overwrites.
    pub notify_free: u64,
}

impl ZramIoStat {
    /// Parses `failed_reads failed_writes 0 notify_free` (older kernels had
    /// `invalid_io` in the third place).
    pub fn parse(text: &str) -> Result<ZramIoStat, CounterError> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let v = counter_fields("zram io_stat", &fields, 4, 4)?;
        Ok(ZramIoStat {
            failed_reads: v[0],
            failed_writes: v[1],
            notify_free: v[3],
        })
    }
}

/// ScaleFlux `sfx_capacity_stat` (CSD 2000 sysfs). Every `key=value`,
/// `key: value` or `key value` line is kept; the known keys are also typed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SfxCapacityStat {
    /// Free physical space, as reported (unit as the driver prints it, usually bytes or sectors).
    pub free_space: Option<u64>,
    /// Physical space used.
    pub physical_size: Option<u64>,
    /// Logical data size.
    pub logical_size: Option<u64>,
    /// Compression ratio as reported (a plain number, a percentage or `N:1`).
    pub comp_ratio: Option<f64>,
    /// Out-of-physical-space flag.
    pub space_flag: Option<u64>,
    /// Every key found, lower-cased, with its raw value.
    pub raw: BTreeMap<String, String>,
}

impl SfxCapacityStat {
    /// Parses the file's text. Never fails: unknown shapes end up in `raw` only.
    pub fn parse(text: &str) -> SfxCapacityStat {
        let mut raw = BTreeMap::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            // Several `key=value` pairs may share a line.
            let pairs: Vec<&str> =
                if line.contains('=') && line.split_whitespace().all(|t| t.contains('=')) {
                    line.split_whitespace().collect()
                } else {
                    vec![line]
                };
            for pair in pairs {
                // The key ends at the first separator: '=', ':' or white space.
                let Some((i, sep)) = pair
                    .char_indices()
                    .find(|&(_, c)| c == '=' || c == ':' || c.is_whitespace())
                else {
                    continue;
                };
                let (k, v) = (
                    &pair[..i],
                    pair[i + sep.len_utf8()..].trim_start_matches([':', '=', ' ', '\t']),
                );
                let key = k.trim().to_ascii_lowercase().replace([' ', '-'], "_");
                if !key.is_empty() {
                    raw.insert(key, v.trim().to_string());
                }
            }
        }
        let int = |k: &str| raw.get(k).and_then(|v| leading_u64(v));
        SfxCapacityStat {
            free_space: int("free_space"),
            physical_size: int("physical_size"),
            logical_size: int("logical_size"),
            comp_ratio: raw.get("comp_ratio").and_then(|v| parse_ratio(v)),
            space_flag: int("space_flag"),
            raw,
        }
    }
}

/// The first unsigned integer in `v` (decimal, or hex with 0x).
fn leading_u64(v: &str) -> Option<u64> {
    let t = v.trim();
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        let end = h.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(h.len());
        return u64::from_str_radix(&h[..end], 16).ok();
    }
    let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    t[..end].parse().ok()
}

/// `2.43`, `243%` or `2.43:1` as a ratio (243% → 2.43).
fn parse_ratio(v: &str) -> Option<f64> {
    let t = v.trim();
    if let Some(p) = t.strip_suffix('%') {
        return p.trim().parse::<f64>().ok().map(|x| x / 100.0);
    }
    let head = t.split(':').next()?.trim();
    head.parse().ok()
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn need(what: &'static str, b: &[u8], len: usize) -> Result<(), CounterError> {
    if b.len() < len {
        Err(CounterError::TooFewFields {
            what,
            expected: len,
            found: b.len(),
        })
    } else {
        Ok(())
    }
}

/// ScaleFlux free-space query (`struct sfx_freespace_ctx`, 11 × u64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SfxFreeSpace {
    /// Free space, 512-byte sectors.
    pub free_space: u64,
    /// Physical capacity, sectors.
    pub phy_cap: u64,
    /// Physical space including over-provisioning, sectors.
    pub phy_space: u64,
    /// User-visible (logical) space, sectors.
    pub user_space: u64,
    /// Hardware space used, 4 KiB units.
    pub hw_used: u64,
    /// Application data written, 4 KiB units.
    pub app_written: u64,
    /// Out-of-space indicator.
    pub out_of_space: u64,
    /// Indirection unit in 4 KiB units.
    pub map_unit: u64,
    /// Largest user space the drive allows, sectors.
    pub max_user_space: u64,
}

impl SfxFreeSpace {
    /// Size of the structure in bytes.
    pub const LEN: usize = 88;

    /// Parses the 88-byte reply.
    pub fn parse(b: &[u8]) -> Result<SfxFreeSpace, CounterError> {
        need("ScaleFlux free-space reply", b, Self::LEN)?;
        let q = |i: usize| le_u64(b, i * 8);
        Ok(SfxFreeSpace {
            free_space: q(0),
            phy_cap: q(1),
            phy_space: q(2),
            user_space: q(3),
            hw_used: q(4),
            app_written: q(5),
            out_of_space: q(6),
            map_unit: q(7),
            max_user_space: q(8),
        })
    }

    /// Compression ratio of what applications wrote: app_written / hw_used.
    pub fn comp_ratio(&self) -> Option<f64> {
        (self.hw_used > 0).then(|| self.app_written as f64 / self.hw_used as f64)
    }

    /// Physical bytes used: (phy_space − free_space) sectors.
    pub fn physical_used_bytes(&self) -> u64 {
        self.phy_space.saturating_sub(self.free_space) * 512
    }
}

/// ScaleFlux extended-health log (0xC2, or 0xD2 on device id 0x0020), packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SfxExtendedHealth {
    /// Total physical capacity, sectors.
    pub total_physical_capability: u64,
    /// Free physical capacity, sectors.
    pub free_physical_capability: u64,
    /// Physical usage, %.
    pub physical_usage_ratio: u32,
    /// Compression ratio in % (100 = 1.00×).
    pub comp_ratio_pct: u32,
    /// Vendor critical-warning bits; bit 1 = physical capacity exceeded.
    pub sfx_critical_warning: u32,
    /// Indirection unit.
    pub map_unit: u32,
}

impl SfxExtendedHealth {
    /// Size of the log page in bytes.
    pub const LEN: usize = 152;

    /// Parses the 152-byte log page.
    pub fn parse(b: &[u8]) -> Result<SfxExtendedHealth, CounterError> {
        need("ScaleFlux extended-health log", b, Self::LEN)?;
        Ok(SfxExtendedHealth {
            total_physical_capability: le_u64(b, 80),
            free_physical_capability: le_u64(b, 88),
            physical_usage_ratio: le_u32(b, 96),
            comp_ratio_pct: le_u32(b, 100),
            sfx_critical_warning: le_u32(b, 36),
            map_unit: le_u32(b, 124),
        })
    }

    /// Whether the drive says it ran out of physical space.
    pub fn out_of_space(&self) -> bool {
        self.sfx_critical_warning & 0b10 != 0
    }
}

/// Host and NAND bytes written from ScaleFlux log 0xCA (12-byte items:
/// key, normalized value, 48-bit raw value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SfxWriteCounters {
    /// NAND writes (item 12), as the drive counts them (sectors).
    pub nand_written: u64,
    /// Host writes (item 13), sectors.
    pub host_written: u64,
}

impl SfxWriteCounters {
    /// Parses log 0xCA (at least 14 items).
    pub fn parse(b: &[u8]) -> Result<SfxWriteCounters, CounterError> {
        need("ScaleFlux log 0xCA", b, 14 * 12)?;
        let raw48 = |item: usize| {
            let at = item * 12 + 6;
            let mut v = [0u8; 8];
            v[..6].copy_from_slice(&b[at..at + 6]);
            u64::from_le_bytes(v)
        };
        Ok(SfxWriteCounters {
            nand_written: raw48(12),
            host_written: raw48(13),
        })
    }

    /// Lifetime write amplification: NAND / host.
    pub fn waf(&self) -> Option<f64> {
        (self.host_written > 0).then(|| self.nand_written as f64 / self.host_written as f64)
    }
}

/// The standard NVMe SMART / health log (log 0x02, 512 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SmartLog {
    /// Critical warning bits.
    pub critical_warning: u8,
    /// Data units read (1 unit = 1000 × 512 bytes, rounded up).
    pub data_units_read: u64,
    /// Data units written (1 unit = 1000 × 512 bytes, rounded up).
    pub data_units_written: u64,
    /// Read commands completed.
    pub host_read_commands: u64,
    /// Write commands completed.
    pub host_write_commands: u64,
}

impl SmartLog {
    /// Size of the log page in bytes.
    pub const LEN: usize = 512;

    /// Parses the 512-byte log page (128-bit counters; values above 2^64 saturate).
    pub fn parse(b: &[u8]) -> Result<SmartLog, CounterError> {
        need("NVMe SMART log", b, Self::LEN)?;
        let u128_at = |at: usize| {
            let v = u128::from_le_bytes(b[at..at + 16].try_into().expect("16 bytes"));
            u64::try_from(v).unwrap_or(u64::MAX)
        };
        Ok(SmartLog {
            critical_warning: b[0],
            data_units_read: u128_at(32),
            data_units_written: u128_at(48),
            host_read_commands: u128_at(64),
            host_write_commands: u128_at(80),
        })
    }
}

/// On-disk versus uncompressed size of btrfs file extents (compsize's method):
/// each extent counted once per disk location, holes skipped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BtrfsUsage {
    /// Bytes on disk (compressed where compressed).
    pub disk_bytes: u64,
    /// Uncompressed bytes of the same extents.
    pub uncompressed_bytes: u64,
    /// Bytes the files reference (their logical extent lengths).
    pub referenced_bytes: u64,
    /// Extents counted.
    pub extents: u64,
    /// Extents stored compressed.
    pub compressed_extents: u64,
    /// Disk locations already counted (not serialized).
    #[serde(skip)]
    #[schemars(skip)]
    seen: std::collections::HashSet<u64>,
}

impl BtrfsUsage {
    /// uncompressed / disk.
    pub fn ratio(&self) -> Option<f64> {
        (self.disk_bytes > 0).then(|| self.uncompressed_bytes as f64 / self.disk_bytes as f64)
    }

    /// Adds the items of one `BTRFS_IOC_TREE_SEARCH_V2` reply: `nr` items,
    /// each a 32-byte header (transid, objectid, offset, type, len) and `len`
    /// bytes of item. Returns the key offset of the last item, to continue the
    /// search after it. Items other than EXTENT_DATA (108) are skipped.
    pub fn add_search_items(&mut self, buf: &[u8], nr: u32) -> Result<Option<u64>, CounterError> {
        const WHAT: &str = "btrfs search reply";
        let mut at = 0usize;
        let mut last = None;
        for _ in 0..nr {
            need(WHAT, buf, at + 32)?;
            let offset = le_u64(buf, at + 16);
            let typ = le_u32(buf, at + 24);
            let len = le_u32(buf, at + 28) as usize;
            let item_at = at + 32;
            need(WHAT, buf, item_at + len)?;
            let item = &buf[item_at..item_at + len];
            last = Some(offset);
            at = item_at + len;
            if typ != 108 || item.len() < 21 {
                continue;
            }
            let ram = le_u64(item, 8);
            let compression = item[16];
            match item[20] {
                0 => {
                    // Inline: the data follows the 21-byte header.
                    self.add_extent(None, (len - 21) as u64, ram, ram, compression);
                }
                _ if item.len() >= 53 => {
                    let bytenr = le_u64(item, 21);
                    if bytenr == 0 {
                        continue; // a hole
                    }
                    self.add_extent(
                        Some(bytenr),
                        le_u64(item, 29),
                        ram,
                        le_u64(item, 45),
                        compression,
                    );
                }
                _ => {
                    return Err(CounterError::TooFewFields {
                        what: WHAT,
                        expected: 53,
                        found: item.len(),
                    });
                }
            }
        }
        Ok(last)
    }

    fn add_extent(
        &mut self,
        bytenr: Option<u64>,
        disk: u64,
        ram: u64,
        referenced: u64,
        compression: u8,
    ) {
        self.referenced_bytes += referenced;
        if bytenr.is_some_and(|b| !self.seen.insert(b)) {
            return;
        }
        self.extents += 1;
        self.disk_bytes += disk;
        self.uncompressed_bytes += ram;
        if compression != 0 {
            self.compressed_extents += 1;
        }
    }
}

/// Bytes per NVMe data unit.
pub const NVME_DATA_UNIT: u64 = 512_000;

/// What kind of device figures came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CapacitySource {
    /// zram `mm_stat`.
    ZramMmStat,
    /// ScaleFlux sysfs `sfx_capacity_stat`.
    SfxSysfs,
    /// ScaleFlux NVMe free-space query.
    SfxFreeSpace,
    /// ScaleFlux NVMe extended-health log.
    SfxExtendedHealth,
    /// ScaleFlux NVMe log 0xCA.
    SfxLogCa,
    /// NVMe SMART log 0x02.
    NvmeSmart,
    /// The block layer (`/sys/block/X/size`, `stat`).
    Block,
    /// ZFS's `zfs get` / `zpool get` of the dataset and its pool.
    ZfsGet,
}

/// One figure and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FigureSource {
    /// Name of the figure in [`CapacitySnapshot`].
    pub figure: String,
    /// Where it came from.
    pub source: CapacitySource,
}

/// A device's capacity counters at one moment. Figures a device does not
/// expose are null — never 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CapacitySnapshot {
    /// Kernel name of the device (e.g. zram0, sfdv0n1, nvme0n1).
    pub device: String,
    /// Logical (user-visible) capacity, bytes.
    pub capacity_bytes: Option<u64>,
    /// Logical bytes the device holds (written and not discarded).
    pub logical_bytes: Option<u64>,
    /// Physical bytes the stored data occupies after compression.
    pub physical_bytes: Option<u64>,
    /// Physical bytes in use including the device's own overhead (zram: allocator pages).
    pub physical_used_bytes: Option<u64>,
    /// Physical capacity, bytes.
    pub physical_capacity_bytes: Option<u64>,
    /// Free physical space, bytes.
    pub physical_free_bytes: Option<u64>,
    /// logical / physical as the device computes or reports it.
    pub compression_ratio: Option<f64>,
    /// Whether the device reports running out of physical space.
    pub out_of_space: Option<bool>,
    /// NVMe data units written (512,000 bytes each).
    pub nvme_data_units_written: Option<u64>,
    /// NVMe data units read.
    pub nvme_data_units_read: Option<u64>,
    /// Bytes the host wrote, as the drive counts them (vendor log).
    pub host_written_bytes: Option<u64>,
    /// Bytes written to NAND (vendor log), for write amplification.
    pub nand_written_bytes: Option<u64>,
    /// Failed writes (zram io_stat).
    pub failed_writes: Option<u64>,
    /// Block-layer counters.
    pub diskstats: Option<DiskStats>,
    /// zram's `mm_stat` as read.
    pub zram: Option<ZramMmStat>,
    /// ScaleFlux sysfs fields as read.
    pub sfx_sysfs: Option<SfxCapacityStat>,
    /// Where each non-null figure came from.
    pub sources: Vec<FigureSource>,
    /// For a path on ZFS (a file system that compresses itself, so the
    /// figures are the dataset's, `device` being its name): the dataset's
    /// and pool's figures as read. Absent elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zfs: Option<crate::zfs::ZfsUsage>,
}

impl CapacitySnapshot {
    /// The figures of a ZFS dataset: logical (`logicalused`, or derived
    /// from `compressratio`), physical (`used`), the ratio, and the pool's
    /// size and free space as its physical capacity.
    pub fn add_zfs(&mut self, z: crate::zfs::ZfsUsage) {
        use CapacitySource::ZfsGet as Z;
        self.device = z.dataset.clone();
        self.put(
            "logical_bytes",
            |s| &mut s.logical_bytes,
            z.logical_bytes,
            Z,
        );
        self.put("physical_bytes", |s| &mut s.physical_bytes, z.used_bytes, Z);
        self.put(
            "compression_ratio",
            |s| &mut s.compression_ratio,
            z.compressratio,
            Z,
        );
        if let Some(size) = z.pool_size_bytes {
            self.put(
                "physical_capacity_bytes",
                |s| &mut s.physical_capacity_bytes,
                size,
                Z,
            );
        }
        if let Some(free) = z.pool_free_bytes {
            self.put(
                "physical_free_bytes",
                |s| &mut s.physical_free_bytes,
                free,
                Z,
            );
        }
        self.zfs = Some(z);
    }

    /// Sets a figure and records its source.
    fn put<T>(
        &mut self,
        figure: &str,
        slot: fn(&mut Self) -> &mut Option<T>,
        v: T,
        source: CapacitySource,
    ) {
        *slot(self) = Some(v);
        self.sources.retain(|s| s.figure != figure);
        self.sources.push(FigureSource {
            figure: figure.to_string(),
            source,
        });
    }

    /// Adds zram's figures.
    pub fn add_zram(&mut self, mm: ZramMmStat, io: Option<ZramIoStat>) {
        use CapacitySource::ZramMmStat as Z;
        self.put(
            "logical_bytes",
            |s| &mut s.logical_bytes,
            mm.orig_data_size,
            Z,
        );
        self.put(
            "physical_bytes",
            |s| &mut s.physical_bytes,
            mm.compr_data_size,
            Z,
        );
        self.put(
            "physical_used_bytes",
            |s| &mut s.physical_used_bytes,
            mm.mem_used_total,
            Z,
        );
        if mm.mem_limit > 0 {
            self.put(
                "physical_capacity_bytes",
                |s| &mut s.physical_capacity_bytes,
                mm.mem_limit,
                Z,
            );
            let free = mm.mem_limit.saturating_sub(mm.mem_used_total);
            self.put(
                "physical_free_bytes",
                |s| &mut s.physical_free_bytes,
                free,
                Z,
            );
            self.put("out_of_space", |s| &mut s.out_of_space, free < 4096, Z);
        }
        if mm.compr_data_size > 0 {
            let r = mm.orig_data_size as f64 / mm.compr_data_size as f64;
            self.put("compression_ratio", |s| &mut s.compression_ratio, r, Z);
        }
        if let Some(io) = io {
            self.put(
                "failed_writes",
                |s| &mut s.failed_writes,
                io.failed_writes,
                Z,
            );
        }
        self.zram = Some(mm);
    }

    /// Adds ScaleFlux sysfs figures (values taken as bytes).
    pub fn add_sfx_sysfs(&mut self, st: SfxCapacityStat) {
        use CapacitySource::SfxSysfs as S;
        if let Some(v) = st.logical_size {
            self.put("logical_bytes", |s| &mut s.logical_bytes, v, S);
        }
        if let Some(v) = st.physical_size {
            self.put("physical_bytes", |s| &mut s.physical_bytes, v, S);
        }
        if let Some(v) = st.free_space {
            self.put("physical_free_bytes", |s| &mut s.physical_free_bytes, v, S);
        }
        if let Some(v) = st.comp_ratio {
            self.put("compression_ratio", |s| &mut s.compression_ratio, v, S);
        }
        if let Some(v) = st.space_flag {
            self.put("out_of_space", |s| &mut s.out_of_space, v != 0, S);
        }
        self.sfx_sysfs = Some(st);
    }

    /// Adds the ScaleFlux NVMe free-space figures.
    pub fn add_sfx_free_space(&mut self, f: SfxFreeSpace) {
        use CapacitySource::SfxFreeSpace as F;
        self.put(
            "logical_bytes",
            |s| &mut s.logical_bytes,
            f.app_written * 4096,
            F,
        );
        self.put(
            "physical_bytes",
            |s| &mut s.physical_bytes,
            f.hw_used * 4096,
            F,
        );
        self.put(
            "physical_used_bytes",
            |s| &mut s.physical_used_bytes,
            f.physical_used_bytes(),
            F,
        );
        self.put(
            "physical_capacity_bytes",
            |s| &mut s.physical_capacity_bytes,
            f.phy_space * 512,
            F,
        );
        self.put(
            "physical_free_bytes",
            |s| &mut s.physical_free_bytes,
            f.free_space * 512,
            F,
        );
        if let Some(r) = f.comp_ratio() {
            self.put("compression_ratio", |s| &mut s.compression_ratio, r, F);
        }
        self.put(
            "out_of_space",
            |s| &mut s.out_of_space,
            f.out_of_space != 0,
            F,
        );
    }

    /// Adds the ScaleFlux extended-health figures (ratio and space flag).
    pub fn add_sfx_health(&mut self, h: SfxExtendedHealth) {
        use CapacitySource::SfxExtendedHealth as H;
        if self.compression_ratio.is_none() && h.comp_ratio_pct > 0 {
            self.put(
                "compression_ratio",
                |s| &mut s.compression_ratio,
                f64::from(h.comp_ratio_pct) / 100.0,
                H,
            );
        }
        if self.physical_capacity_bytes.is_none() {
            let v = h.total_physical_capability * 512;
            self.put(
                "physical_capacity_bytes",
                |s| &mut s.physical_capacity_bytes,
                v,
                H,
            );
        }
        if self.physical_free_bytes.is_none() {
            let v = h.free_physical_capability * 512;
            self.put("physical_free_bytes", |s| &mut s.physical_free_bytes, v, H);
        }
        let oos = h.out_of_space() || self.out_of_space == Some(true);
        self.put("out_of_space", |s| &mut s.out_of_space, oos, H);
    }

    /// Adds host/NAND bytes written from log 0xCA (sectors → bytes).
    pub fn add_sfx_writes(&mut self, w: SfxWriteCounters) {
        use CapacitySource::SfxLogCa as C;
        self.put(
            "host_written_bytes",
            |s| &mut s.host_written_bytes,
            w.host_written * 512,
            C,
        );
        self.put(
            "nand_written_bytes",
            |s| &mut s.nand_written_bytes,
            w.nand_written * 512,
            C,
        );
    }

    /// Adds the NVMe SMART data units.
    pub fn add_smart(&mut self, l: SmartLog) {
        use CapacitySource::NvmeSmart as N;
        self.put(
            "nvme_data_units_written",
            |s| &mut s.nvme_data_units_written,
            l.data_units_written,
            N,
        );
        self.put(
            "nvme_data_units_read",
            |s| &mut s.nvme_data_units_read,
            l.data_units_read,
            N,
        );
    }

    /// Adds block-layer size (512-byte sectors) and counters.
    pub fn add_block(&mut self, size_sectors: Option<u64>, stats: Option<DiskStats>) {
        if let Some(n) = size_sectors {
            self.put(
                "capacity_bytes",
                |s| &mut s.capacity_bytes,
                n * 512,
                CapacitySource::Block,
            );
        }
        self.diskstats = stats;
    }

    /// Whether any compression figure is known (the device compresses, or says how).
    pub fn is_compressing(&self) -> bool {
        self.physical_bytes.is_some() || self.compression_ratio.is_some()
    }
}

/// How counters moved between two snapshots of the same device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CapacityDelta {
    /// Device name.
    pub device: String,
    /// Change of logical bytes held (negative after discards).
    pub logical_bytes: Option<i64>,
    /// Change of physical bytes held.
    pub physical_bytes: Option<i64>,
    /// Δlogical / Δphysical: the compression ratio of what was written (null unless both grew).
    pub compression_ratio: Option<f64>,
    /// Bytes the host wrote (block layer).
    pub host_written_bytes: Option<u64>,
    /// Bytes the host read (block layer).
    pub host_read_bytes: Option<u64>,
    /// NVMe data units written during the interval.
    pub nvme_data_units_written: Option<u64>,
    /// NAND bytes written during the interval (vendor log).
    pub nand_written_bytes: Option<u64>,
    /// Out-of-space flag at the end.
    pub out_of_space: Option<bool>,
}

impl CapacityDelta {
    /// `after − before`; figures missing from either side stay null.
    pub fn between(before: &CapacitySnapshot, after: &CapacitySnapshot) -> CapacityDelta {
        let signed = |a: Option<u64>, b: Option<u64>| Some(a? as i64 - b? as i64);
        let grew = |a: Option<u64>, b: Option<u64>| Some(a?.saturating_sub(b?));
        let logical = signed(after.logical_bytes, before.logical_bytes);
        let physical = signed(after.physical_bytes, before.physical_bytes);
        let ds = match (&before.diskstats, &after.diskstats) {
            (Some(b), Some(a)) => Some(a.delta_since(b)),
            _ => None,
        };
        CapacityDelta {
            device: after.device.clone(),
            logical_bytes: logical,
            physical_bytes: physical,
            compression_ratio: match (logical, physical) {
                (Some(l), Some(p)) if l > 0 && p > 0 => Some(l as f64 / p as f64),
                _ => None,
            },
            host_written_bytes: ds.map(|d| d.bytes_written()),
            host_read_bytes: ds.map(|d| d.bytes_read()),
            nvme_data_units_written: grew(
                after.nvme_data_units_written,
                before.nvme_data_units_written,
            ),
            nand_written_bytes: grew(after.nand_written_bytes, before.nand_written_bytes),
            out_of_space: after.out_of_space,
        }
    }
}

/// Schema identifier of `csdchar capacity` results.
pub const CAPACITY_SCHEMA: &str = "csdchar.capacity/1";

/// The result of `csdchar capacity`, schema `csdchar.capacity/1` (one object,
/// or one per line with `--watch`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CapacityResult {
    /// Always "csdchar.capacity/1".
    pub schema: String,
    /// Program that produced the result.
    pub tool: crate::result::ToolInfo,
    /// When the counters were read, RFC 3339 UTC.
    pub taken_at: String,
    /// The path given (a device node or any path on a file system).
    pub target: String,
    /// The counters.
    pub snapshot: CapacitySnapshot,
    /// For a path on btrfs: its extents on disk versus uncompressed (the file
    /// system compresses, not the device).
    pub btrfs: Option<BtrfsUsage>,
}

/// A device's counters around a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CapacityReport {
    /// Before the run (block-layer counters are in the result's `diskstats`).
    pub before: CapacitySnapshot,
    /// After the run.
    pub after: CapacitySnapshot,
    /// What moved.
    pub delta: CapacityDelta,
}

impl CapacityReport {
    /// The report for two snapshots; their block-layer counters are dropped
    /// after the delta is taken, since results carry them once elsewhere.
    pub fn new(mut before: CapacitySnapshot, mut after: CapacitySnapshot) -> Self {
        let delta = CapacityDelta::between(&before, &after);
        before.diskstats = None;
        after.diskstats = None;
        CapacityReport {
            before,
            after,
            delta,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sfx_sysfs_in_every_shape() {
        for text in [
            "free_space=1000\nphysical_size=2000\nlogical_size=8000\ncomp_ratio=4.00\nspace_flag=0\n",
            "Free_Space: 1000\nPhysical_Size: 2000\nLogical_Size: 8000\nComp_Ratio: 400%\nSpace_Flag: 0\n",
            "free_space 1000\nphysical_size 2000\nlogical_size 8000\ncomp_ratio 4.00:1\nspace_flag 0\n",
            "free_space=1000 physical_size=2000 logical_size=8000 comp_ratio=4 space_flag=0",
        ] {
            let s = SfxCapacityStat::parse(text);
            assert_eq!(s.free_space, Some(1000), "{text}");
            assert_eq!(s.physical_size, Some(2000));
            assert_eq!(s.logical_size, Some(8000));
            assert_eq!(s.comp_ratio, Some(4.0));
            assert_eq!(s.space_flag, Some(0));
        }
        let s = SfxCapacityStat::parse("vendor_thing=abc\nfree_space=0x10 GB\n\ngarbage\n");
        assert_eq!(s.raw.get("vendor_thing").map(String::as_str), Some("abc"));
        assert_eq!(s.free_space, Some(16));
        assert_eq!(s.logical_size, None);
    }

    #[test]
    fn nvme_structures() {
        let mut fs = vec![0u8; 88];
        for (i, v) in [100u64, 200, 300, 400, 50, 200, 0, 1, 999]
            .iter()
            .enumerate()
        {
            fs[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
        let f = SfxFreeSpace::parse(&fs).unwrap();
        assert_eq!(f.comp_ratio(), Some(4.0));
        assert_eq!(f.physical_used_bytes(), 200 * 512);
        assert!(SfxFreeSpace::parse(&fs[..87]).is_err());

        let mut h = vec![0u8; 152];
        h[36..40].copy_from_slice(&2u32.to_le_bytes());
        h[80..88].copy_from_slice(&1_000_000u64.to_le_bytes());
        h[100..104].copy_from_slice(&317u32.to_le_bytes());
        let e = SfxExtendedHealth::parse(&h).unwrap();
        assert!(e.out_of_space());
        assert_eq!(e.comp_ratio_pct, 317);
        assert_eq!(e.total_physical_capability, 1_000_000);

        let mut ca = vec![0u8; 14 * 12];
        ca[12 * 12 + 6..12 * 12 + 12].copy_from_slice(&[0x10, 0, 0, 0, 0, 0x01]);
        ca[13 * 12 + 6..13 * 12 + 8].copy_from_slice(&[0x08, 0]);
        let w = SfxWriteCounters::parse(&ca).unwrap();
        assert_eq!(w.nand_written, 0x0100_0000_0010);
        assert_eq!(w.host_written, 8);

        let mut smart = vec![0u8; 512];
        smart[48] = 7;
        smart[32] = 3;
        smart[63] = 1; // > 2^64: saturates
        let l = SmartLog::parse(&smart).unwrap();
        assert_eq!(l.data_units_read, 3);
        assert_eq!(l.data_units_written, u64::MAX);
    }

    fn item(offset: u64, typ: u32, body: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; 32];
        v[16..24].copy_from_slice(&offset.to_le_bytes());
        v[24..28].copy_from_slice(&typ.to_le_bytes());
        v[28..32].copy_from_slice(&(body.len() as u32).to_le_bytes());
        v.extend_from_slice(body);
        v
    }

    fn extent(bytenr: u64, disk: u64, ram: u64, num: u64, compression: u8) -> Vec<u8> {
        let mut b = vec![0u8; 53];
        b[8..16].copy_from_slice(&ram.to_le_bytes());
        b[16] = compression;
        b[20] = 1;
        b[21..29].copy_from_slice(&bytenr.to_le_bytes());
        b[29..37].copy_from_slice(&disk.to_le_bytes());
        b[45..53].copy_from_slice(&num.to_le_bytes());
        b
    }

    #[test]
    fn btrfs_extents_like_compsize() {
        let mut buf = item(0, 108, &extent(1 << 20, 32768, 131072, 131072, 3));
        buf.extend(item(131072, 108, &extent(1 << 20, 32768, 131072, 65536, 3))); // same extent again
        buf.extend(item(196608, 108, &extent(0, 0, 65536, 65536, 0))); // hole
        buf.extend(item(262144, 1, &[0u8; 10])); // not an extent
        let mut inline = vec![0u8; 21 + 100];
        inline[8..16].copy_from_slice(&300u64.to_le_bytes());
        buf.extend(item(300_000, 108, &inline));
        let mut u = BtrfsUsage::default();
        assert_eq!(u.add_search_items(&buf, 5).unwrap(), Some(300_000));
        assert_eq!(u.disk_bytes, 32768 + 100);
        assert_eq!(u.uncompressed_bytes, 131072 + 300);
        assert_eq!(u.referenced_bytes, 131072 + 65536 + 300);
        assert_eq!((u.extents, u.compressed_extents), (2, 1));
        assert!(u.add_search_items(&buf[..40], 1).is_err(), "truncated");
    }

    #[test]
    fn zram_snapshot_and_delta() {
        let mut a = CapacitySnapshot {
            device: "zram0".into(),
            ..Default::default()
        };
        a.add_zram(ZramMmStat::parse("0 0 0 0 0 0 0 0 0").unwrap(), None);
        let mut b = CapacitySnapshot {
            device: "zram0".into(),
            ..Default::default()
        };
        b.add_zram(
            ZramMmStat::parse("134217728 33554432 34000000 0 0 0 0 0 0").unwrap(),
            Some(ZramIoStat::parse("0 1 0 16").unwrap()),
        );
        assert_eq!(b.compression_ratio, Some(4.0));
        assert_eq!(b.failed_writes, Some(1));
        assert!(
            b.sources
                .iter()
                .any(|s| s.figure == "physical_bytes" && s.source == CapacitySource::ZramMmStat)
        );
        let d = CapacityDelta::between(&a, &b);
        assert_eq!(d.logical_bytes, Some(134_217_728));
        assert_eq!(d.compression_ratio, Some(4.0));
        assert_eq!(d.nvme_data_units_written, None, "absent stays absent");
        assert!(ZramIoStat::parse("1 2").is_err());
    }
}
