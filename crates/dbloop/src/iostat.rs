//! I/O correlation: PostgreSQL's shared-buffer misses (pgio's RIOPS, Δ
//! `pg_stat_database.blks_read` per second) beside the data directory's
//! block-device counters, so a run shows how many misses the page cache
//! absorbed and what the device did with the rest.
//!
//! Caveats the figures carry: `blks_read` counts reads PostgreSQL asked the
//! kernel for, which the page cache may serve (PostgreSQL does not use
//! O_DIRECT); PostgreSQL 15 backends publish their counters at most once a
//! second (and at exit), so short windows lag; the device counters include
//! every other process's I/O to that device.

use std::path::Path;
use std::time::{Duration, Instant};

use csdchar_devices::{BlockDevice, Sysfs};
use tokio_postgres::Client;

use csdchar_pgwire::dialect::Dialect;

/// Finds the device under a server's data directory and samples both sides.
#[derive(Debug, Clone)]
pub struct IoSampler {
    sysfs: Sysfs,
    device: Option<BlockDevice>,
    data_directory: Option<String>,
    note: Option<String>,
}

/// Block-layer counters of the data directory's device at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceSample {
    /// Kernel name of the device the counters are of (a partition's own).
    pub name: String,
    /// Reads completed.
    pub read_ios: u64,
    /// 512-byte sectors read.
    pub read_sectors: u64,
    /// Milliseconds spent on reads (all reads added up).
    pub read_ticks_ms: u64,
    /// Writes completed.
    pub write_ios: u64,
    /// 512-byte sectors written.
    pub write_sectors: u64,
    /// Milliseconds spent on writes.
    pub write_ticks_ms: u64,
    /// Logical bytes the (whole) device holds, when it has capacity counters (zram, ScaleFlux).
    pub logical_bytes: Option<u64>,
    /// Physical bytes after compression, when the device reports them.
    pub physical_bytes: Option<u64>,
}

impl DeviceSample {
    /// Bytes read.
    pub fn read_bytes(&self) -> u64 {
        self.read_sectors * 512
    }

    /// Bytes written.
    pub fn write_bytes(&self) -> u64 {
        self.write_sectors * 512
    }
}

/// Both sides at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct IoSample {
    /// When it was taken.
    pub taken: Instant,
    /// `pg_stat_database.blks_read` of the current database (shared-buffer misses).
    pub blks_read: i64,
    /// `pg_stat_database.blks_hit` of the current database.
    pub blks_hit: i64,
    /// The device's counters; None when the data directory has no block device here.
    pub device: Option<DeviceSample>,
}

pub use csdchar_core::result::db::IoRates;

impl IoSample {
    /// Rates from `self` to `later` over `secs` seconds. Counters that went
    /// backwards (a reset) count as 0; device figures need the same device in both.
    pub fn rates(&self, later: &IoSample, secs: f64) -> IoRates {
        let secs = if secs > 0.0 { secs } else { f64::NAN };
        let per_s = |d: u64| d as f64 / secs;
        let riops = (later.blks_read - self.blks_read).max(0) as f64 / secs;
        let hits_per_s = (later.blks_hit - self.blks_hit).max(0) as f64 / secs;
        let mut r = IoRates {
            riops,
            hits_per_s,
            ..IoRates::default()
        };
        let (Some(a), Some(b)) = (&self.device, &later.device) else {
            return r;
        };
        if a.name != b.name {
            return r;
        }
        let reads = b.read_ios.saturating_sub(a.read_ios);
        let writes = b.write_ios.saturating_sub(a.write_ios);
        let latency = |ticks: u64, ios: u64| (ios > 0).then(|| ticks as f64 / ios as f64);
        r.dev_read_iops = Some(per_s(reads));
        r.dev_read_bytes_per_s = Some(per_s(b.read_bytes().saturating_sub(a.read_bytes())));
        r.dev_read_latency_ms = latency(b.read_ticks_ms.saturating_sub(a.read_ticks_ms), reads);
        r.dev_write_iops = Some(per_s(writes));
        r.dev_write_bytes_per_s = Some(per_s(b.write_bytes().saturating_sub(a.write_bytes())));
        r.dev_write_latency_ms = latency(b.write_ticks_ms.saturating_sub(a.write_ticks_ms), writes);
        r.reads_per_miss = (riops > 0.0).then(|| per_s(reads) / riops);
        r.logical_bytes = b.logical_bytes;
        r.physical_bytes = b.physical_bytes;
        let delta = |x: Option<u64>, y: Option<u64>| Some(y? as i64 - x? as i64);
        r.logical_delta_bytes = delta(a.logical_bytes, b.logical_bytes);
        r.physical_delta_bytes = delta(a.physical_bytes, b.physical_bytes);
        r
    }
}

impl IoSampler {
    /// Finds the block device under the server's data directory (`SHOW
    /// data_directory`, superusers and pg_read_all_settings members). The
    /// path is resolved on this machine: the server must run here. Without a
    /// device, samples carry database figures only and [`Self::note`] says why.
    pub async fn new(client: &Client) -> IoSampler {
        let sysfs = Sysfs::from_env();
        let data_directory: Option<String> = client
            .query_one("SHOW data_directory", &[])
            .await
            .ok()
            .map(|r| r.get(0));
        let (device, note) = match &data_directory {
            None => (
                None,
                Some("the server does not show its data_directory to this role".to_string()),
            ),
            Some(d) => match sysfs.resolve(Path::new(d)) {
                Ok(dev) if sysfs.diskstats(&dev).is_some() => (Some(dev), None),
                Ok(dev) => (
                    None,
                    Some(format!("device {} of {d} has no diskstats", dev.name)),
                ),
                Err(e) => (None, Some(format!("no device counters: {e}"))),
            },
        };
        IoSampler {
            sysfs,
            device,
            data_directory,
            note,
        }
    }

    /// The device sampled, if any.
    pub fn device(&self) -> Option<&BlockDevice> {
        self.device.as_ref()
    }

    /// The server's data directory, when it could be read.
    pub fn data_directory(&self) -> Option<&str> {
        self.data_directory.as_deref()
    }

    /// Why samples carry no device figures (None when they do).
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// Samples both sides now. A failed database query leaves the database
    /// figures at 0 (and so the rates at 0), never stops the run.
    pub async fn sample(&mut self, client: &Client) -> IoSample {
        // A fresh statistics snapshot: within a transaction PostgreSQL 15
        // would otherwise repeat the first one it took.
        let (blks_read, blks_hit) = match client
            .query_one(
                "SELECT pg_stat_clear_snapshot() IS NULL, blks_read, blks_hit FROM pg_stat_database \
                 WHERE datname = current_database()",
                &[],
            )
            .await
        {
            Ok(r) => (r.get::<_, i64>(1), r.get::<_, i64>(2)),
            Err(_) => (0, 0),
        };
        let device = self.device.as_ref().and_then(|dev| {
            let snap = self.sysfs.snapshot(dev);
            let st = snap.diskstats?;
            Some(DeviceSample {
                name: dev.name.clone(),
                read_ios: st.reads_completed,
                read_sectors: st.sectors_read,
                read_ticks_ms: st.read_ms,
                write_ios: st.writes_completed,
                write_sectors: st.sectors_written,
                write_ticks_ms: st.write_ms,
                logical_bytes: snap.logical_bytes,
                physical_bytes: snap.physical_bytes,
            })
        });
        IoSample {
            taken: Instant::now(),
            blks_read,
            blks_hit,
            device,
        }
    }
}

/// Waits until no other client backend is connected to the current database
/// (at most `timeout`): PostgreSQL 15 backends publish their last second of
/// counters when they exit, so an "after" sample taken sooner misses it.
/// Returns whether they were gone in time. Probes the server's dialect
/// first; [`settle_with`] takes one already probed.
pub async fn settle(client: &Client, timeout: Duration) -> bool {
    match Dialect::probe(client).await {
        Ok(d) => settle_with(client, &d, timeout).await,
        Err(_) => false,
    }
}

/// [`settle`] with the server's dialect: sessions are counted by
/// `backend_type` where `pg_stat_activity` has it (PostgreSQL 10 and
/// later), else every session but autovacuum's.
pub async fn settle_with(client: &Client, dialect: &Dialect, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        let others: i64 = client
            .query_one(dialect.other_clients_sql(), &[])
            .await
            .map(|r| r.get(0))
            .unwrap_or(0);
        if others == 0 {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `shared_buffers` in bytes (its `pg_settings` value times its unit, which
/// works from 8.2 on, where `pg_size_bytes` needs 9.6); None when it cannot be read.
pub async fn shared_buffers_bytes(client: &Client) -> Option<u64> {
    let row = client
        .query_one(
            "SELECT setting::text, COALESCE(unit, '')::text FROM pg_settings WHERE name = 'shared_buffers'",
            &[],
        )
        .await
        .ok()?;
    let (setting, unit): (String, String) = (row.get(0), row.get(1));
    setting_bytes(&setting, &unit)
}

/// A memory setting's bytes from `pg_settings` `setting` and `unit`
/// ("16384" and "8kB" → 128 MiB).
fn setting_bytes(setting: &str, unit: &str) -> Option<u64> {
    let n: u64 = setting.trim().parse().ok()?;
    let unit = unit.trim();
    let digits: String = unit.chars().take_while(char::is_ascii_digit).collect();
    let count: u64 = if digits.is_empty() {
        1
    } else {
        digits.parse().ok()?
    };
    let scale: u64 = match &unit[digits.len()..] {
        "" | "B" => 1,
        "kB" => 1 << 10,
        "MB" => 1 << 20,
        "GB" => 1 << 30,
        "TB" => 1 << 40,
        _ => return None,
    };
    n.checked_mul(count)?.checked_mul(scale)
}

/// `MemAvailable` of /proc/meminfo, bytes: roughly what the page cache could grow to.
pub fn mem_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// How many times the memory that could cache it the data set must be for
/// [`cache_warning`] to stay quiet.
pub const CACHE_MARGIN: u64 = 4;

/// A warning when a data set of `data_bytes` is not several
/// ([`CACHE_MARGIN`]) times what shared_buffers plus the page cache could
/// hold: then many shared-buffer misses are page-cache hits, and RIOPS
/// overstates what the device does.
pub fn cache_warning(
    data_bytes: u64,
    shared_buffers_bytes: u64,
    mem_available_bytes: u64,
) -> Option<String> {
    let cache = shared_buffers_bytes.saturating_add(mem_available_bytes);
    if data_bytes >= cache.saturating_mul(CACHE_MARGIN) {
        return None;
    }
    // Of the blocks outside shared_buffers, the share the page cache can hold.
    let outside = data_bytes.saturating_sub(shared_buffers_bytes).max(1);
    let absorbable = (mem_available_bytes as f64 / outside as f64).min(1.0);
    let mib = |b: u64| b as f64 / 1048576.0;
    Some(format!(
        "the data set ({:.0} MiB) is not {CACHE_MARGIN}× what shared_buffers ({:.0} MiB) \
         and the page cache (up to {:.0} MiB available) can hold: up to {:.0}% of \
         shared-buffer misses (RIOPS) may be served from memory, not the device; \
         drop caches before the run, limit the server's memory, or load more data",
        mib(data_bytes),
        mib(shared_buffers_bytes),
        mib(mem_available_bytes),
        absorbable * 100.0
    ))
}

/// Flushes dirty pages and empties the page cache (`sync`, then 3 into
/// /proc/sys/vm/drop_caches): root only, and not inside most containers.
pub fn drop_caches() -> Result<(), String> {
    if rustix::process::geteuid().as_raw() != 0 {
        return Err(
            "dropping the page cache needs root (it writes /proc/sys/vm/drop_caches)".into(),
        );
    }
    // Dirty pages cannot be dropped: flush first.
    rustix::fs::sync();
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").map_err(|e| {
        format!(
            "cannot write /proc/sys/vm/drop_caches: {e} (a container with a read-only /proc/sys?)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(blks_read: i64, blks_hit: i64, dev: Option<DeviceSample>) -> IoSample {
        IoSample {
            taken: Instant::now(),
            blks_read,
            blks_hit,
            device: dev,
        }
    }

    fn dev(reads: u64, sectors: u64, ticks: u64, logical: Option<u64>) -> DeviceSample {
        DeviceSample {
            name: "vda".into(),
            read_ios: reads,
            read_sectors: sectors,
            read_ticks_ms: ticks,
            write_ios: reads / 10,
            write_sectors: sectors / 10,
            write_ticks_ms: 0,
            logical_bytes: logical,
            physical_bytes: logical.map(|l| l / 4),
        }
    }

    #[test]
    fn rates_correlate_misses_and_device_reads() {
        let a = sample(1_000, 50_000, Some(dev(100, 800, 10, Some(4096))));
        let b = sample(
            21_000,
            250_000,
            Some(dev(16_100, 128_800, 4_010, Some(8192))),
        );
        let r = a.rates(&b, 2.0);
        assert_eq!(r.riops, 10_000.0);
        assert_eq!(r.hits_per_s, 100_000.0);
        assert_eq!(r.dev_read_iops, Some(8_000.0));
        assert_eq!(r.dev_read_bytes_per_s, Some(128_000.0 * 512.0 / 2.0));
        assert_eq!(r.dev_read_latency_ms, Some(0.25));
        assert_eq!(r.reads_per_miss, Some(0.8));
        assert_eq!(r.dev_write_iops, Some(800.0));
        assert_eq!(r.dev_write_latency_ms, Some(0.0));
        assert_eq!(
            (r.logical_bytes, r.physical_bytes),
            (Some(8192), Some(2048))
        );
        assert_eq!(
            (r.logical_delta_bytes, r.physical_delta_bytes),
            (Some(4096), Some(1024))
        );
    }

    #[test]
    fn rates_without_device_reads_or_misses_stay_empty() {
        let a = sample(5, 5, Some(dev(100, 800, 10, None)));
        let b = sample(5, 9, Some(dev(100, 800, 10, None)));
        let r = a.rates(&b, 1.0);
        assert_eq!((r.riops, r.hits_per_s), (0.0, 4.0));
        assert_eq!(r.dev_read_iops, Some(0.0));
        assert_eq!(r.dev_read_latency_ms, None);
        assert_eq!(r.reads_per_miss, None);
        assert_eq!(r.logical_delta_bytes, None);
        // No device on one side, or another device: database figures only.
        let r = a.rates(&sample(10, 9, None), 1.0);
        assert_eq!((r.riops, r.dev_read_iops), (5.0, None));
        let mut other = dev(200, 900, 20, None);
        other.name = "vdb".into();
        assert_eq!(
            a.rates(&sample(10, 9, Some(other)), 1.0).dev_read_iops,
            None
        );
        // A reset counter reads as no activity, not a negative rate.
        assert_eq!(b.rates(&sample(0, 0, None), 1.0).riops, 0.0);
    }

    #[test]
    fn settings_scale_by_their_unit() {
        assert_eq!(setting_bytes("16384", "8kB"), Some(128 << 20));
        assert_eq!(setting_bytes("131072", "kB"), Some(128 << 20));
        assert_eq!(setting_bytes("4", "MB"), Some(4 << 20));
        assert_eq!(setting_bytes("100", ""), Some(100));
        assert_eq!(setting_bytes("x", "8kB"), None);
        assert_eq!(setting_bytes("1", "s"), None);
    }

    #[test]
    fn cache_warning_when_memory_could_hold_much_of_the_data() {
        const GIB: u64 = 1 << 30;
        assert_eq!(cache_warning(200 * GIB, GIB, 22 * GIB), None);
        let w = cache_warning(128 << 20, 16 << 20, 22 * GIB).unwrap();
        assert!(w.contains("up to 100%"), "{w}");
        // 40 GiB outside shared_buffers, 20 GiB of page cache: half may be absorbed.
        let w = cache_warning(48 * GIB, 8 * GIB, 20 * GIB).unwrap();
        assert!(w.contains("up to 50%"), "{w}");
        assert_eq!(cache_warning(112 * GIB, 8 * GIB, 20 * GIB), None);
    }
}
