//! The property values a ZFS accepts, per flavour (zfs-fuse's own lists, OpenZFS's from
//! its source), checked before any pool is made.

use std::path::Path;

use super::tools::KERNEL_MODULE;
use crate::{DeviceError, DeviceErrorKind};

/// Which ZFS makes pools here; their `zfs set` takes different values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// OpenZFS, the kernel module (zfsutils-linux).
    OpenZfs,
    /// zfs-fuse (pool version 23): no lz4, zstd, sync, recordsize over 128k.
    ZfsFuse,
}

impl Flavour {
    /// The one that would make a pool here: the kernel module's when it is
    /// loaded, else zfs-fuse's (what [`preflight`] requires then).
    pub fn here() -> Flavour {
        if Path::new(KERNEL_MODULE).exists() {
            Flavour::OpenZfs
        } else {
            Flavour::ZfsFuse
        }
    }

    /// Its name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Flavour::OpenZfs => "OpenZFS",
            Flavour::ZfsFuse => "zfs-fuse",
        }
    }
}

/// The values `zfs set` of `flavour` takes for `property` as it prints them
/// when refusing one, and whether `value` is among them; None for a property
/// it does not know. zfs-fuse's are what its `zfs set` prints (checked
/// against it in tests/zfs.rs); OpenZFS's those of its `zfs_prop.c` (2.2),
/// whose older releases refuse the newest at `zpool create`, before a pool
/// exists.
pub(super) fn allowed(flavour: Flavour, property: &str, value: &str) -> Option<(String, bool)> {
    let fuse = flavour == Flavour::ZfsFuse;
    let level = |v: &str, prefix: &str, ok: &dyn Fn(u32) -> bool| {
        v.strip_prefix(prefix)
            .filter(|n| !n.starts_with('0') && !n.starts_with('+'))
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(ok)
    };
    let one_of = |shown: &str, names: &[&str], extra: bool| {
        Some((shown.to_string(), names.contains(&value) || extra))
    };
    match property {
        "compression" if fuse => one_of(
            "on | off | lzjb | gzip | gzip-[1-9] | zle",
            &["on", "off", "lzjb", "gzip", "zle"],
            level(value, "gzip-", &|n| (1..=9).contains(&n)),
        ),
        "compression" => one_of(
            "on | off | lzjb | gzip | gzip-[1-9] | zle | lz4 | zstd | zstd-[1-19] | \
             zstd-fast | zstd-fast-[1-10,20,30,40,50,60,70,80,90,100,500,1000]",
            &[
                "on",
                "off",
                "lzjb",
                "gzip",
                "zle",
                "lz4",
                "zstd",
                "zstd-fast",
            ],
            level(value, "gzip-", &|n| (1..=9).contains(&n))
                || level(value, "zstd-", &|n| (1..=19).contains(&n))
                || level(value, "zstd-fast-", &|n| {
                    (1..=10).contains(&n) || (n <= 100 && n % 10 == 0) || n == 500 || n == 1000
                }),
        ),
        "checksum" if fuse => one_of(
            "on | off | fletcher2 | fletcher4 | sha256",
            &["on", "off", "fletcher2", "fletcher4", "sha256"],
            false,
        ),
        "checksum" => one_of(
            "on | off | fletcher2 | fletcher4 | sha256 | noparity | sha512 | skein | edonr | blake3",
            &[
                "on",
                "off",
                "fletcher2",
                "fletcher4",
                "sha256",
                "noparity",
                "sha512",
                "skein",
                "edonr",
                "blake3",
            ],
            false,
        ),
        "dedup" if fuse => one_of(
            "on | off | verify | sha256[,verify]",
            &["on", "off", "verify", "sha256", "sha256,verify"],
            false,
        ),
        "dedup" => one_of(
            "on | off | verify | sha256[,verify] | sha512[,verify] | skein[,verify] | \
             edonr,verify | blake3[,verify]",
            &[
                "on",
                "off",
                "verify",
                "sha256",
                "sha256,verify",
                "sha512",
                "sha512,verify",
                "skein",
                "skein,verify",
                "edonr,verify",
                "blake3",
                "blake3,verify",
            ],
            false,
        ),
        "primarycache" | "secondarycache" => {
            one_of("all | none | metadata", &["all", "none", "metadata"], false)
        }
        "atime" => one_of("on | off", &["on", "off"], false),
        "logbias" => one_of("latency | throughput", &["latency", "throughput"], false),
        "copies" => one_of("1 | 2 | 3", &["1", "2", "3"], false),
        "sync" if fuse => None,
        "sync" => one_of(
            "standard | always | disabled",
            &["standard", "always", "disabled"],
            false,
        ),
        "recordsize" => {
            let max = if fuse {
                128 << 10
            } else {
                // What the module allows new pools (1M by default, 16M from 2.2).
                std::fs::read_to_string(format!("{KERNEL_MODULE}/parameters/zfs_max_recordsize"))
                    .ok()
                    .and_then(|t| t.trim().parse::<u64>().ok())
                    .unwrap_or(1 << 20)
            };
            let ok = parse_number(value)
                .is_some_and(|n| n.is_power_of_two() && (512..=max).contains(&n));
            Some((format!("a power of 2 from 512 to {}", short_size(max)), ok))
        }
        _ => None,
    }
}

/// `zfs`'s form of a size: 1k, 128k, 16M.
pub(super) fn short_size(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{}M", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{}k", n >> 10),
        n => n.to_string(),
    }
}

/// A number as `zfs` reads one (libzfs's `zfs_nicestrtonum`): digits, a
/// fraction allowed, then an optional suffix B K M G T P E (either case,
/// `KB` too, not `BB`), the fraction's result cut to an integer.
pub(super) fn parse_number(value: &str) -> Option<u64> {
    if !value.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let end = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (num, suffix) = value.split_at(end);
    let upper = suffix.to_ascii_uppercase();
    let letter = upper.chars().next();
    let shift = match letter {
        None => 0,
        Some(c) => {
            let i = "BKMGTPE".find(c)? as u32;
            if !(upper.len() == 1 || (upper == format!("{c}B") && c != 'B')) {
                return None;
            }
            10 * i
        }
    };
    if num.contains('.') {
        // strtoull reads the integer part, strtod the whole; one dot only.
        if num.matches('.').count() > 1 {
            return None;
        }
        let f: f64 = num.parse().ok()?;
        let v = f * 2f64.powi(shift as i32);
        (v < u64::MAX as f64).then_some(v as u64)
    } else {
        // shift is at most 60 (E).
        num.parse::<u64>().ok()?.checked_mul(1 << shift)
    }
}

/// Checks a dataset property a pool will be made with, as `zfs set` of
/// `flavour` would: the error names the values it allows.
pub fn check_property(flavour: Flavour, property: &str, value: &str) -> Result<(), DeviceError> {
    let invalid = |m| Err(DeviceError::new(DeviceErrorKind::Invalid, m));
    match allowed(flavour, property, value) {
        Some((_, true)) => Ok(()),
        Some((shown, false)) => invalid(format!(
            "'{value}' is not a value {}'s zfs allows (allowed: {shown})",
            flavour.name()
        )),
        None => invalid(format!(
            "{} has no dataset property {property}",
            flavour.name()
        )),
    }
}
