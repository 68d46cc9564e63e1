//! What a compressing drive would store for a set of files: the pure parts of
//! `csdchar estimate` — extrapolation from a sample with a confidence
//! interval, and telling PostgreSQL's files apart.

use serde::{Deserialize, Serialize};

/// Stored sizes of the chunks measured, enough to extrapolate from a sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChunkSample {
    /// Chunks measured.
    pub chunks: u64,
    /// Logical bytes measured.
    pub logical_bytes: u64,
    /// Stored bytes of the measured chunks.
    pub stored_bytes: u64,
    /// Sum of squared stored sizes (for the variance).
    pub stored_sq: f64,
}

impl ChunkSample {
    /// Adds one chunk.
    #[inline]
    pub fn add(&mut self, logical: usize, stored: usize) {
        self.chunks += 1;
        self.logical_bytes += logical as u64;
        self.stored_bytes += stored as u64;
        self.stored_sq += (stored as f64) * (stored as f64);
    }

    /// Adds another sample.
    pub fn merge(&mut self, o: &ChunkSample) {
        self.chunks += o.chunks;
        self.logical_bytes += o.logical_bytes;
        self.stored_bytes += o.stored_bytes;
        self.stored_sq += o.stored_sq;
    }

    /// The estimate for a population of `total_chunks` chunks holding
    /// `total_logical` bytes, of which this is a uniform random sample (or
    /// all of it). The 95% interval uses the normal approximation with the
    /// finite-population correction; it is exact (zero width) for a full scan.
    pub fn extrapolate(&self, total_chunks: u64, total_logical: u64) -> Estimate {
        let n = self.chunks as f64;
        let big_n = total_chunks.max(self.chunks) as f64;
        if self.chunks == 0 {
            return Estimate {
                logical_bytes: total_logical,
                stored_bytes: 0.0,
                ratio: None,
                stored_ci95: None,
                ratio_ci95: None,
                sampled_chunks: 0,
                total_chunks,
            };
        }
        let mean = self.stored_bytes as f64 / n;
        let stored = if self.chunks >= total_chunks {
            self.stored_bytes as f64
        } else {
            mean * big_n
        };
        let ci = if self.chunks >= total_chunks || self.chunks < 2 {
            None
        } else {
            let var = ((self.stored_sq - n * mean * mean) / (n - 1.0)).max(0.0);
            let fpc = ((big_n - n) / (big_n - 1.0)).max(0.0);
            let half = 1.96 * big_n * (var / n * fpc).sqrt();
            Some(((stored - half).max(0.0), stored + half))
        };
        let ratio_of = |s: f64| (s > 0.0).then(|| total_logical as f64 / s);
        Estimate {
            logical_bytes: total_logical,
            stored_bytes: stored,
            ratio: ratio_of(stored),
            stored_ci95: ci,
            // More stored bytes mean a lower ratio: the bounds swap.
            ratio_ci95: ci
                .and_then(|(lo, hi)| Some((ratio_of(hi)?, ratio_of(lo).unwrap_or(f64::INFINITY)))),
            sampled_chunks: self.chunks,
            total_chunks,
        }
    }
}

/// An estimate of stored size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Estimate {
    /// Logical bytes covered.
    pub logical_bytes: u64,
    /// Estimated stored bytes.
    pub stored_bytes: f64,
    /// logical / stored; null when nothing would be stored.
    pub ratio: Option<f64>,
    /// 95% confidence interval of stored bytes when sampled; null for a full scan.
    pub stored_ci95: Option<(f64, f64)>,
    /// 95% confidence interval of the ratio when sampled.
    pub ratio_ci95: Option<(f64, f64)>,
    /// Chunks actually compressed.
    pub sampled_chunks: u64,
    /// Chunks in the input.
    pub total_chunks: u64,
}

impl Estimate {
    /// The estimate for several disjoint inputs: stored bytes add up,
    /// interval half-widths add in quadrature (independent samples).
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a Estimate>) -> Estimate {
        let mut logical = 0u64;
        let mut stored = 0.0;
        let mut var = 0.0;
        let mut any_ci = false;
        let (mut sampled, mut total) = (0u64, 0u64);
        for e in parts {
            logical += e.logical_bytes;
            stored += e.stored_bytes;
            if let Some((lo, hi)) = e.stored_ci95 {
                any_ci = true;
                var += ((hi - lo) / 2.0).powi(2);
            }
            sampled += e.sampled_chunks;
            total += e.total_chunks;
        }
        let ratio_of = |s: f64| (s > 0.0).then(|| logical as f64 / s);
        let ci = any_ci.then(|| ((stored - var.sqrt()).max(0.0), stored + var.sqrt()));
        Estimate {
            logical_bytes: logical,
            stored_bytes: stored,
            ratio: ratio_of(stored),
            stored_ci95: ci,
            ratio_ci95: ci
                .and_then(|(lo, hi)| Some((ratio_of(hi)?, ratio_of(lo).unwrap_or(f64::INFINITY)))),
            sampled_chunks: sampled,
            total_chunks: total,
        }
    }
}

/// Schema identifier of `csdchar estimate` results.
pub const ESTIMATE_SCHEMA: &str = "csdchar.estimate/1";

/// The result of `csdchar estimate`, schema `csdchar.estimate/1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EstimateResult {
    /// Always "csdchar.estimate/1".
    pub schema: String,
    /// Program that produced the result.
    pub tool: crate::result::ToolInfo,
    /// When the estimate started, RFC 3339 UTC.
    pub started_at: String,
    /// Whether every chunk was read (false after Ctrl-C: figures are extrapolated from what was read).
    pub complete: bool,
    /// Per-chunk compression model.
    pub codec: crate::compressibility::Codec,
    /// Compression unit, bytes (each chunk is compressed on its own, stored size capped at the chunk).
    pub chunk: u64,
    /// % of chunks compressed (100 = all).
    pub sample_pct: f64,
    /// Seed of the chunk sample.
    pub seed: u64,
    /// Worker threads.
    pub threads: u32,
    /// Wall time, seconds.
    pub elapsed_s: f64,
    /// Logical bytes covered per second of wall time.
    pub throughput_bytes_per_s: f64,
    /// Every input file.
    pub files: Vec<FileEstimate>,
    /// All inputs together with the chosen codec.
    pub total: Estimate,
    /// All inputs with dynamic-Huffman deflate, the optimistic bound, when the codec is deflate-fixed.
    pub optimistic: Option<Estimate>,
    /// PostgreSQL breakdown when an input is a data directory (PG_VERSION present).
    pub postgres: Option<PgBreakdown>,
    /// When the inputs are on ZFS, which compresses them itself: the
    /// dataset and its `compression`; the files' `allocated_bytes` are then
    /// what ZFS stores, the file system's answer beside the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zfs: Option<String>,
}

/// One input file (or block device).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileEstimate {
    /// Path as found.
    pub path: String,
    /// Size, bytes.
    pub logical_bytes: u64,
    /// Bytes allocated on its file system (st_blocks × 512; holes are not allocated).
    pub allocated_bytes: u64,
    /// The estimate with the chosen codec.
    pub estimate: Estimate,
    /// PostgreSQL kind, when inside a data directory.
    pub pg_kind: Option<PgFileKind>,
}

/// A PostgreSQL data directory by relation and kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PgBreakdown {
    /// The data directory.
    pub data_dir: String,
    /// Totals per kind (heap, index, fsm, vm, wal, …).
    pub kinds: Vec<PgKindEstimate>,
    /// Per relation (relfilenode), main fork and its maps together, largest first.
    pub relations: Vec<PgRelationEstimate>,
}

/// One kind of file in a data directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PgKindEstimate {
    /// The kind.
    pub kind: PgFileKind,
    /// Files of this kind.
    pub files: u64,
    /// The estimate.
    pub estimate: Estimate,
}

/// One relation (relfilenode) in a data directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PgRelationEstimate {
    /// Database OID (null for shared catalogs in `global`).
    pub db: Option<u32>,
    /// relfilenode (`estimate --url` maps it to `name`).
    pub relfilenode: u32,
    /// Heap or index, from the first page of the main fork.
    pub kind: PgFileKind,
    /// Main fork, all segments.
    pub main: Estimate,
    /// Bytes the main fork's segments have allocated on their file system
    /// (st_blocks × 512): on ZFS what it stores, compressed, next to the
    /// model's `main.stored_bytes`.
    #[serde(default)]
    pub main_allocated_bytes: u64,
    /// Free-space and visibility maps, bytes (logical).
    pub map_bytes: u64,
    /// `schema.name` from the server (`estimate --url`); null when not mapped.
    pub name: Option<String>,
    /// For a TOAST table or its index: the table it belongs to (`schema.name`).
    pub toast_of: Option<String>,
}

/// Whether chunk `index` of input `file` is in a `pct` % sample: a hash
/// decision, so the same seed samples the same chunks.
pub fn in_sample(seed: u64, file: u64, index: u64, pct: f64) -> bool {
    if pct >= 100.0 {
        return true;
    }
    let h = crate::pattern::mix64(
        seed ^ crate::pattern::mix64(file) ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15),
    );
    (h as f64 / u64::MAX as f64) * 100.0 < pct
}

/// What a file in a PostgreSQL data directory is.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PgFileKind {
    /// Table data (main fork with heap pages; TOAST tables count here without a catalog).
    Heap,
    /// Index data (main fork with a special area).
    Index,
    /// A main fork whose first page is empty or unreadable.
    Relation,
    /// Free-space map fork.
    Fsm,
    /// Visibility map fork.
    Vm,
    /// Init fork of an unlogged relation.
    Init,
    /// Write-ahead log.
    Wal,
    /// Everything else (catalog files, configuration, transaction status).
    Other,
}

/// Where a file sits in a PostgreSQL data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PgPath {
    /// `base/DB/RELFILENODE[_fork][.segment]` or `global/…`.
    Relation {
        /// Database OID (None for `global`).
        db: Option<u32>,
        /// relfilenode.
        relfilenode: u32,
        /// Fork kind: Relation for the main fork (refined by its pages), Fsm, Vm, Init.
        fork: PgFileKind,
        /// Segment number (0 for the first 1 GiB).
        segment: u32,
    },
    /// `pg_wal/…`.
    Wal,
    /// Anything else.
    Other,
}

/// Classifies a path relative to the data directory (`base/16384/16397.1`).
pub fn classify_pg_path(rel: &str) -> PgPath {
    let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
    let (db, file) = match parts.as_slice() {
        ["pg_wal", ..] | ["pg_xlog", ..] => return PgPath::Wal,
        ["base", db, file] => match db.parse::<u32>() {
            Ok(d) => (Some(d), *file),
            Err(_) => return PgPath::Other,
        },
        ["global", file] => (None, *file),
        _ => return PgPath::Other,
    };
    let (stem, segment) = match file.split_once('.') {
        Some((s, seg)) => match seg.parse::<u32>() {
            Ok(n) => (s, n),
            Err(_) => return PgPath::Other,
        },
        None => (file, 0),
    };
    let (node, fork) = match stem.split_once('_') {
        Some((n, "fsm")) => (n, PgFileKind::Fsm),
        Some((n, "vm")) => (n, PgFileKind::Vm),
        Some((n, "init")) => (n, PgFileKind::Init),
        Some(_) => return PgPath::Other,
        None => (stem, PgFileKind::Relation),
    };
    match node.parse::<u32>() {
        Ok(relfilenode) => PgPath::Relation {
            db,
            relfilenode,
            fork,
            segment,
        },
        Err(_) => PgPath::Other,
    }
}

/// Heap or index, from an 8 KiB page's header: a heap page has no special
/// area (`pd_special` = page size), an index page has one. None for an
/// empty or foreign page.
pub fn pg_page_kind(page: &[u8]) -> Option<PgFileKind> {
    if page.len() < 24 {
        return None;
    }
    let u16_at = |at: usize| u16::from_le_bytes([page[at], page[at + 1]]);
    let (lower, upper, special, size_version) = (u16_at(12), u16_at(14), u16_at(16), u16_at(18));
    let size = usize::from(size_version & 0xFF00);
    if size != 8192 || size_version & 0x00FF != 4 || lower < 24 || lower > upper || upper > special
    {
        return None;
    }
    Some(if usize::from(special) == size {
        PgFileKind::Heap
    } else {
        PgFileKind::Index
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_scan_is_exact_and_sample_has_an_interval() {
        let mut all = ChunkSample::default();
        for i in 0..1000 {
            all.add(4096, if i % 2 == 0 { 1024 } else { 2048 });
        }
        let e = all.extrapolate(1000, 4096 * 1000);
        assert_eq!(e.stored_bytes, 1_536_000.0);
        assert!(e.stored_ci95.is_none());
        assert!((e.ratio.unwrap() - 4096.0 / 1536.0).abs() < 1e-9);

        let mut sample = ChunkSample::default();
        for i in 0..100 {
            sample.add(4096, if i % 2 == 0 { 1024 } else { 2048 });
        }
        let e = sample.extrapolate(10_000, 4096 * 10_000);
        assert!((e.stored_bytes - 15_360_000.0).abs() < 1.0);
        let (lo, hi) = e.stored_ci95.unwrap();
        assert!(lo < e.stored_bytes && e.stored_bytes < hi);
        let (rlo, rhi) = e.ratio_ci95.unwrap();
        assert!(rlo < e.ratio.unwrap() && e.ratio.unwrap() < rhi);
        assert_eq!(ChunkSample::default().extrapolate(5, 100).ratio, None);
    }

    #[test]
    fn sampling_is_deterministic_and_near_the_rate() {
        let hits = (0..100_000).filter(|&i| in_sample(1, 7, i, 10.0)).count();
        assert!((9_000..11_000).contains(&hits), "{hits}");
        assert_eq!(in_sample(1, 7, 42, 10.0), in_sample(1, 7, 42, 10.0));
        assert!(in_sample(1, 7, 42, 100.0));
    }

    #[test]
    fn pg_paths() {
        assert_eq!(
            classify_pg_path("base/16384/16397.2"),
            PgPath::Relation {
                db: Some(16384),
                relfilenode: 16397,
                fork: PgFileKind::Relation,
                segment: 2
            }
        );
        assert_eq!(
            classify_pg_path("base/5/1259_fsm"),
            PgPath::Relation {
                db: Some(5),
                relfilenode: 1259,
                fork: PgFileKind::Fsm,
                segment: 0
            }
        );
        assert!(matches!(
            classify_pg_path("global/1262_vm"),
            PgPath::Relation {
                db: None,
                fork: PgFileKind::Vm,
                ..
            }
        ));
        assert_eq!(
            classify_pg_path("pg_wal/000000010000000000000001"),
            PgPath::Wal
        );
        for other in [
            "PG_VERSION",
            "base/16384/PG_VERSION",
            "base/x/1",
            "base/1/2_foo",
            "postgresql.conf",
            "pg_xact/0000",
        ] {
            assert_eq!(classify_pg_path(other), PgPath::Other, "{other}");
        }
    }

    #[test]
    fn pg_pages() {
        let mut heap = vec![0u8; 8192];
        heap[12..14].copy_from_slice(&40u16.to_le_bytes());
        heap[14..16].copy_from_slice(&7000u16.to_le_bytes());
        heap[16..18].copy_from_slice(&8192u16.to_le_bytes());
        heap[18..20].copy_from_slice(&(8192u16 | 4).to_le_bytes());
        assert_eq!(pg_page_kind(&heap), Some(PgFileKind::Heap));
        let mut index = heap.clone();
        index[16..18].copy_from_slice(&8176u16.to_le_bytes());
        assert_eq!(pg_page_kind(&index), Some(PgFileKind::Index));
        assert_eq!(pg_page_kind(&[0u8; 8192]), None);
        assert_eq!(pg_page_kind(&heap[..10]), None);
    }
}
