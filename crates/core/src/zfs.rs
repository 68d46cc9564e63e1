//! ZFS: a dataset's and its pool's space figures and the ARC's, parsed from
//! what `zfs get -Hp`, `zpool get -Hp` (or `zpool list -H`, zfs-fuse's only
//! form) and `/proc/spl/kstat/zfs/arcstats` print. ZFS compresses in the
//! file system, so its figures are per dataset, not per device.
//!
//! Versions differ: OpenZFS 2.x has `logicalused`, `logicalreferenced`,
//! `refcompressratio`, lz4 and zstd and the ARC's kstats; zfs-fuse (pool
//! version 23) has none of them and prints `compressratio` as `1.00x` even
//! with `-p`. A figure a version lacks is null; the logical size is then
//! derived from `compressratio` and `derived_logical` says so.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A ZFS dataset's space and compression settings, its pool's space, and the
/// ARC's state where the kernel module exposes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ZfsUsage {
    /// The dataset (e.g. `tank/pgdata`).
    pub dataset: String,
    /// Its pool (the dataset name's first component).
    pub pool: String,
    /// Bytes the dataset and its descendants take in the pool (compressed,
    /// with metadata): `used`.
    pub used_bytes: u64,
    /// Bytes the dataset itself refers to (compressed): `referenced`.
    pub referenced_bytes: u64,
    /// `used` before compression: `logicalused` (OpenZFS); null where the
    /// version lacks it.
    pub logicalused_bytes: Option<u64>,
    /// `referenced` before compression: `logicalreferenced` (OpenZFS); null
    /// where the version lacks it.
    pub logicalreferenced_bytes: Option<u64>,
    /// The logical size used for ratios: `logicalused` where present, else
    /// `used × compressratio`.
    pub logical_bytes: u64,
    /// Whether `logical_bytes` was derived from `compressratio` (the version
    /// has no `logicalused`; two decimals of ratio make it approximate).
    pub derived_logical: bool,
    /// `compressratio`: logical over physical of the dataset and descendants.
    pub compressratio: f64,
    /// `refcompressratio` (of `referenced`); null where the version lacks it.
    pub refcompressratio: Option<f64>,
    /// The `compression` property (off, on, lzjb, gzip-N, zle, lz4, zstd, …).
    pub compression: String,
    /// The `recordsize` property, bytes.
    pub recordsize_bytes: u64,
    /// The `primarycache` property (all, metadata, none), where present.
    pub primarycache: Option<String>,
    /// The pool's size, bytes (rounded to the unit `zpool` printed where it
    /// cannot print exact bytes, as on zfs-fuse).
    pub pool_size_bytes: Option<u64>,
    /// The pool's allocated bytes (same rounding).
    pub pool_allocated_bytes: Option<u64>,
    /// The pool's free bytes (same rounding).
    pub pool_free_bytes: Option<u64>,
    /// Whether the pool's figures are rounded (`zpool` without `-p`).
    pub pool_rounded: bool,
    /// The ARC (OpenZFS on Linux), null where there are no arcstats.
    pub arc: Option<ArcStats>,
}

/// The ARC's figures from `/proc/spl/kstat/zfs/arcstats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArcStats {
    /// Bytes the ARC takes: `size`.
    pub size_bytes: u64,
    /// Data held compressed: `compressed_size`.
    pub compressed_bytes: Option<u64>,
    /// The same data uncompressed: `uncompressed_size`.
    pub uncompressed_bytes: Option<u64>,
    /// Reads served from the ARC: `hits`.
    pub hits: u64,
    /// Reads that missed: `misses`.
    pub misses: u64,
}

impl ArcStats {
    /// hits / (hits + misses), null before any read.
    pub fn hit_ratio(&self) -> Option<f64> {
        let all = self.hits + self.misses;
        (all > 0).then(|| self.hits as f64 / all as f64)
    }

    /// uncompressed / compressed, the seed's "8.92:1".
    pub fn compression_ratio(&self) -> Option<f64> {
        match (self.compressed_bytes, self.uncompressed_bytes) {
            (Some(c), Some(u)) if c > 0 => Some(u as f64 / c as f64),
            _ => None,
        }
    }

    /// Parses arcstats: two header lines, then `name type data` rows.
    pub fn parse(text: &str) -> Result<ArcStats, String> {
        let rows: BTreeMap<&str, u64> = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (name, _type, data) = (f.next()?, f.next()?, f.next()?);
                Some((name, data.parse().ok()?))
            })
            .collect();
        let need = |k: &str| {
            rows.get(k)
                .copied()
                .ok_or_else(|| format!("arcstats: no `{k}` row"))
        };
        Ok(ArcStats {
            size_bytes: need("size")?,
            compressed_bytes: rows.get("compressed_size").copied(),
            uncompressed_bytes: rows.get("uncompressed_size").copied(),
            hits: need("hits")?,
            misses: need("misses")?,
        })
    }
}

/// `property → value` from `zfs get -Hp … DATASET` or `zpool get -Hp …
/// POOL` (tab-separated `name property value source`), or from their `-o
/// property,value` form.
pub fn parse_get(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            match f.len() {
                2 => Some((f[0].to_string(), f[1].to_string())),
                n if n >= 3 => Some((f[1].to_string(), f[2].to_string())),
                _ => None,
            }
        })
        .collect()
}

/// A ratio as ZFS prints it: `1.52` (OpenZFS with -p) or `1.52x`.
pub fn parse_ratio(v: &str) -> Option<f64> {
    v.trim().trim_end_matches('x').parse().ok()
}

/// A size as `zpool`/`zfs` print it without `-p`: `504M`, `616K`, `1.50G`,
/// `0`; with `-p`, plain bytes.
pub fn parse_size(v: &str) -> Option<u64> {
    let v = v.trim();
    if let Ok(n) = v.parse::<u64>() {
        return Some(n);
    }
    let (num, unit) = v.split_at(v.find(|c: char| c.is_ascii_alphabetic())?);
    let scale: u64 = match unit {
        "B" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        "P" => 1 << 50,
        "E" => 1 << 60,
        _ => return None,
    };
    let n: f64 = num.parse().ok()?;
    Some((n * scale as f64).round() as u64)
}

impl ZfsUsage {
    /// The usage of `dataset` from its `zfs get` properties and its pool's
    /// (`size`, `allocated`, `free`; `rounded` when printed without `-p`).
    pub fn from_properties(
        dataset: &str,
        zfs: &BTreeMap<String, String>,
        pool: &BTreeMap<String, String>,
        rounded: bool,
    ) -> Result<ZfsUsage, String> {
        let bytes = |k: &str| {
            zfs.get(k)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| format!("zfs get: no byte value for `{k}` of {dataset}"))
        };
        // "-" is how zfs prints a property that does not apply.
        let optional = |k: &str| zfs.get(k).and_then(|v| v.trim().parse::<u64>().ok());
        let used = bytes("used")?;
        let compressratio = zfs
            .get("compressratio")
            .and_then(|v| parse_ratio(v))
            .ok_or_else(|| format!("zfs get: no compressratio for {dataset}"))?;
        let logicalused = optional("logicalused");
        let pool_size = |k: &str| pool.get(k).and_then(|v| parse_size(v));
        Ok(ZfsUsage {
            dataset: dataset.to_string(),
            pool: dataset.split('/').next().unwrap_or(dataset).to_string(),
            used_bytes: used,
            referenced_bytes: bytes("referenced")?,
            logicalused_bytes: logicalused,
            logicalreferenced_bytes: optional("logicalreferenced"),
            logical_bytes: logicalused.unwrap_or((used as f64 * compressratio).round() as u64),
            derived_logical: logicalused.is_none(),
            compressratio,
            refcompressratio: zfs.get("refcompressratio").and_then(|v| parse_ratio(v)),
            compression: zfs.get("compression").cloned().unwrap_or_default(),
            recordsize_bytes: bytes("recordsize")?,
            primarycache: zfs.get("primarycache").cloned(),
            pool_size_bytes: pool_size("size"),
            pool_allocated_bytes: pool_size("allocated"),
            pool_free_bytes: pool_size("free"),
            pool_rounded: rounded,
            arc: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `zfs get -Hp all tank/pg` of OpenZFS 2.1 (trimmed to what is read),
    /// as its documentation shows the columns.
    const OPENZFS_GET: &str = "tank/pg\ttype\tfilesystem\t-\n\
        tank/pg\tused\t1889785610\t-\n\
        tank/pg\treferenced\t1889755136\t-\n\
        tank/pg\tcompressratio\t9.02\t-\n\
        tank/pg\trefcompressratio\t9.03\t-\n\
        tank/pg\tcompression\tlz4\tlocal\n\
        tank/pg\trecordsize\t8192\tlocal\n\
        tank/pg\tprimarycache\tall\tdefault\n\
        tank/pg\tlogicalused\t17045998592\t-\n\
        tank/pg\tlogicalreferenced\t17045721088\t-\n";

    /// `zfs get -Hp all csdzt` of zfs-fuse 0.7.0 (pool version 23), as
    /// printed on this machine: no logical sizes, the ratio with its x.
    const ZFS_FUSE_GET: &str = "csdzt\ttype\tfilesystem\t-\n\
        csdzt\tused\t372736\t-\n\
        csdzt\tavailable\t494555136\t-\n\
        csdzt\treferenced\t114688\t-\n\
        csdzt\tcompressratio\t14.21x\t-\n\
        csdzt\trecordsize\t131072\tdefault\n\
        csdzt\tcompression\tgzip\tlocal\n\
        csdzt\tprimarycache\tall\tdefault\n";

    #[test]
    fn openzfs_figures_are_read_exactly() {
        let pool = parse_get(
            "tank\tsize\t107374182400\t-\ntank\tallocated\t1889785856\t-\ntank\tfree\t105484396544\t-\n",
        );
        let u =
            ZfsUsage::from_properties("tank/pg", &parse_get(OPENZFS_GET), &pool, false).unwrap();
        assert_eq!(u.pool, "tank");
        assert_eq!(u.used_bytes, 1_889_785_610);
        assert_eq!(u.logicalused_bytes, Some(17_045_998_592));
        assert_eq!(u.logical_bytes, 17_045_998_592);
        assert!(!u.derived_logical);
        assert_eq!(u.compressratio, 9.02);
        assert_eq!(u.refcompressratio, Some(9.03));
        assert_eq!(u.compression, "lz4");
        assert_eq!(u.recordsize_bytes, 8192);
        assert_eq!(u.pool_size_bytes, Some(107_374_182_400));
        assert!(!u.pool_rounded);
    }

    #[test]
    fn zfs_fuse_lacks_logical_sizes_so_they_are_derived_and_marked() {
        let pool: BTreeMap<String, String> =
            [("size", "504M"), ("allocated", "616K"), ("free", "503M")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .into();
        let u = ZfsUsage::from_properties("csdzt", &parse_get(ZFS_FUSE_GET), &pool, true).unwrap();
        assert_eq!(u.logicalused_bytes, None);
        assert_eq!(u.refcompressratio, None);
        assert!(u.derived_logical);
        assert_eq!(u.compressratio, 14.21);
        assert_eq!(u.logical_bytes, (372_736.0f64 * 14.21).round() as u64);
        assert_eq!(u.pool_size_bytes, Some(504 << 20));
        assert_eq!(u.pool_allocated_bytes, Some(616 << 10));
        assert!(u.pool_rounded);
    }

    #[test]
    fn sizes_and_ratios_as_zfs_prints_them() {
        assert_eq!(parse_size("1.50G"), Some(3 << 29));
        assert_eq!(parse_size("0"), Some(0));
        assert_eq!(parse_size("12345"), Some(12345));
        assert_eq!(parse_size("-"), None);
        assert_eq!(parse_ratio("1.00x"), Some(1.0));
        assert_eq!(parse_ratio("8.92"), Some(8.92));
        assert_eq!(parse_ratio("-"), None);
    }

    #[test]
    fn arcstats_of_openzfs() {
        // Two header lines, then name type data (OpenZFS 2.1 on Linux).
        let text = "13 1 0x01 123 33456 5018759890 181846297463\n\
            name                            type data\n\
            hits                            4    900\n\
            misses                          4    100\n\
            size                            4    18253611008\n\
            compressed_size                 4    18253611008\n\
            uncompressed_size               4    162822210560\n";
        let a = ArcStats::parse(text).unwrap();
        assert_eq!(a.hit_ratio(), Some(0.9));
        assert!((a.compression_ratio().unwrap() - 8.92).abs() < 0.01);
        assert!(ArcStats::parse("name type data\n").is_err());
    }

    #[test]
    fn a_missing_figure_is_an_error_naming_it() {
        let e =
            ZfsUsage::from_properties("t", &BTreeMap::new(), &BTreeMap::new(), false).unwrap_err();
        assert!(e.contains("used") && e.contains('t'), "{e}");
    }
}
