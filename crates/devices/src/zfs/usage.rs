//! What a path on ZFS uses: its dataset (from mountinfo), the dataset's and pool's
//! figures, the ARC's counters, and a pool's commit before they are read.

use csdchar_core::zfs::{ArcStats, ZfsUsage, parse_get};
use std::path::Path;

use super::tools::run;
use crate::DeviceError;

/// Where OpenZFS on Linux publishes the ARC's counters.
pub(super) const ARCSTATS: &str = "/proc/spl/kstat/zfs/arcstats";

/// The ZFS dataset `path` is on: the mount (longest mount point containing
/// the path) whose type is `zfs` or `fuse.zfs`. None when it is not on ZFS.
pub fn dataset_of(path: &Path) -> Option<String> {
    let path = std::fs::canonicalize(crate::nearest_existing(path)).ok()?;
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<(usize, Option<String>)> = None;
    for line in info.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(mount_point), Some(fstype), Some(source)) =
            (fields.get(4), fields.get(sep + 1), fields.get(sep + 2))
        else {
            continue;
        };
        let mount_point = mount_point.replace("\\040", " ");
        if path.starts_with(&mount_point)
            && best.as_ref().is_none_or(|(n, _)| mount_point.len() > *n)
        {
            let zfs = matches!(*fstype, "zfs" | "fuse.zfs");
            best = Some((mount_point.len(), zfs.then(|| source.replace("\\040", " "))));
        }
    }
    best?.1
}

/// The figures of `dataset` and its pool now, and the ARC's where the
/// kernel module publishes them.
pub fn usage(dataset: &str) -> Result<ZfsUsage, DeviceError> {
    let props = parse_get(&run("zfs", &["get", "-Hp", "all", dataset])?);
    let pool_name = dataset.split('/').next().unwrap_or(dataset);
    // OpenZFS prints exact bytes; zfs-fuse's zpool knows neither -H nor -p
    // for `get`, only `list -H` in rounded units.
    let (pool, rounded) = match run("zpool", &["get", "-Hp", "size,allocated,free", pool_name]) {
        Ok(t) => (parse_get(&t), false),
        Err(_) => {
            let t = run(
                "zpool",
                &["list", "-H", "-o", "size,allocated,free", pool_name],
            )?;
            let v: Vec<&str> = t.trim().split('\t').collect();
            let pool = ["size", "allocated", "free"]
                .iter()
                .zip(v)
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            (pool, true)
        }
    };
    let mut u =
        ZfsUsage::from_properties(dataset, &props, &pool, rounded).map_err(DeviceError::tool)?;
    u.arc = std::fs::read_to_string(ARCSTATS)
        .ok()
        .and_then(|t| ArcStats::parse(&t).ok());
    Ok(u)
}

/// The figures of the dataset `path` is on; None when it is not on ZFS.
pub fn usage_of(path: &Path) -> Option<Result<ZfsUsage, DeviceError>> {
    dataset_of(path).map(|d| usage(&d))
}

/// Makes the pool of `dataset` commit its open transaction groups, so that
/// `used` counts what was written and freed (ZFS applies both when a
/// transaction group syncs, seconds later; sync(2) only commits the intent
/// log). `zpool sync` where the version has it (OpenZFS 0.8 on); else a
/// property set and cleared again, each of which waits for a sync (zfs-fuse:
/// `used` fell by a removed file's 10 MiB only then, not in 30 s of sync(2)).
pub fn sync_pool(dataset: &str) -> Result<(), DeviceError> {
    let pool = dataset.split('/').next().unwrap_or(dataset);
    if run("zpool", &["sync", pool]).is_ok() {
        return Ok(());
    }
    run("zfs", &["set", "csdchar:settle=1", dataset])?;
    run("zfs", &["inherit", "csdchar:settle", dataset]).map(drop)
}
