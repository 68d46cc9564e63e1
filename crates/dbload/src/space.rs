//! What a load takes on disk: settled snapshots (after CHECKPOINT and
//! sync(2), once the drive's counters hold still), the workload's logical
//! size, and its physical size from a compressing drive's counters or, where
//! there are none, an estimate of the relation files.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use csdchar_core::capacity::CapacitySnapshot;
use csdchar_core::result::db::DbSnapshot;

use crate::conn::Client;
use crate::dialect::Dialect;

/// Predicts what a compressing drive would store for some files; the study
/// uses it where the drive has no counters. Callers pass it in:
/// [`RelationEstimator`] is `csdchar estimate`'s engine, [`NoEstimator`]
/// declines, and tests can count what was asked.
pub trait SpaceEstimator {
    /// The stored and logical bytes of `request.paths`, or None when they
    /// cannot be estimated; stops early when `interrupt` is set.
    fn estimate(&self, request: &EstimateRequest, interrupt: &AtomicBool) -> Option<Estimated>;
}

/// Which files to estimate and how: the model and sampling the study chose.
#[derive(Debug, Clone)]
pub struct EstimateRequest {
    /// The relation files.
    pub paths: Vec<PathBuf>,
    /// Per-chunk compression model.
    pub codec: csdchar_core::compressibility::Codec,
    /// Compression unit, bytes.
    pub chunk: usize,
    /// % of chunks compressed (the rest extrapolated).
    pub sample_pct: f64,
    /// Sample seed.
    pub seed: u64,
    /// Worker threads.
    pub threads: usize,
}

/// An estimator's answer.
#[derive(Debug, Clone, Copy)]
pub struct Estimated {
    /// Bytes the drive would store.
    pub stored_bytes: f64,
    /// Bytes of the files.
    pub logical_bytes: u64,
}

/// The estimator that never estimates: physical sizes stay unknown where
/// the drive has no counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEstimator;

impl SpaceEstimator for NoEstimator {
    fn estimate(&self, _: &EstimateRequest, _: &AtomicBool) -> Option<Estimated> {
        None
    }
}

/// The study's estimates where the drive has no counters: `csdchar
/// estimate`'s engine ([`csdchar_estimate`]) on the relation files.
#[derive(Debug, Clone, Copy, Default)]
pub struct RelationEstimator;

impl SpaceEstimator for RelationEstimator {
    fn estimate(&self, request: &EstimateRequest, interrupt: &AtomicBool) -> Option<Estimated> {
        let plan = csdchar_estimate::EstimatePlan {
            paths: request.paths.clone(),
            codec: request.codec,
            chunk: request.chunk,
            sample_pct: request.sample_pct,
            seed: request.seed,
            threads: request.threads,
        };
        let e = csdchar_estimate::run(&plan, interrupt, String::new()).ok()?;
        Some(Estimated {
            stored_bytes: e.total.stored_bytes,
            logical_bytes: e.total.logical_bytes,
        })
    }
}

/// A snapshot after CHECKPOINT and sync(2), so the drive has seen every
/// write; the flag says whether the CHECKPOINT was permitted.
pub async fn settled_snapshot(
    client: &Client,
    dialect: &Dialect,
    tables: &[String],
) -> (DbSnapshot, bool) {
    let checkpointed = client.batch_execute("CHECKPOINT").await.is_ok();
    // Safety: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    // File systems discard freed blocks in the background (ext4 -o discard
    // after its journal commit): wait until the drive's logical counter
    // holds still for 0.5 s, at most 15 s.
    let mut snap = crate::snapshot::take(client, dialect, tables).await;
    for _ in 0..30 {
        let Some(before) = snap.device.as_ref().and_then(|d| d.logical_bytes) else {
            break;
        };
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let next = crate::snapshot::take(client, dialect, tables).await;
        let still = next.device.as_ref().and_then(|d| d.logical_bytes) == Some(before);
        snap = next;
        if still {
            break;
        }
    }
    (snap, checkpointed)
}

/// Space of one load.
#[derive(Debug, Clone)]
pub struct Space {
    /// The workload's tables, indexes and TOAST.
    pub relation_bytes: i64,
    /// All regular files of the data directory, when readable here.
    pub data_directory_bytes: Option<u64>,
    /// Physical bytes the load added (or the estimate's stored bytes).
    pub physical: Option<f64>,
    /// Logical bytes `physical` is of.
    pub of_logical: Option<f64>,
    /// Where `physical` comes from, in the result's words.
    pub source: String,
    /// Whether `physical` is an estimate.
    pub estimated: bool,
    /// The server's WAL position after the load's checkpoint.
    pub wal_lsn_bytes: Option<i64>,
}

/// After a CHECKPOINT and sync(2), so the drive has seen the data: the
/// workload's relation sizes, the data directory's bytes, and the physical
/// size — from the drive's counters when it compresses (their change since
/// `baseline`, taken with the tables dropped), else `estimator`'s
/// prediction for the relation files (deflate with fixed codes per 4 KiB, the
/// model closest to published CSD ratios).
pub async fn measure_space(
    client: &Client,
    dialect: &Dialect,
    tables: &[String],
    baseline: Option<&CapacitySnapshot>,
    estimator: &dyn SpaceEstimator,
    interrupt: &AtomicBool,
) -> Space {
    let (snap, checkpointed) = settled_snapshot(client, dialect, tables).await;
    let relation_bytes = snap
        .relations
        .iter()
        .map(|r| r.table_bytes + r.index_bytes + r.toast_bytes)
        .sum();
    let dir = snap.data_directory.as_deref().map(Path::new);
    let data_directory_bytes = dir.and_then(|d| directory_bytes(d).ok());
    let note = if checkpointed {
        ""
    } else {
        ", no CHECKPOINT (not permitted)"
    };
    if let Some(dev) = &snap.device
        && let (Some(p), Some(l)) = (dev.physical_bytes, dev.logical_bytes)
        && let Some(base) = baseline
        && let (Some(p0), Some(l0)) = (base.physical_bytes, base.logical_bytes)
    {
        // What the load added to the drive (WAL included, if the server wrote any).
        return Space {
            relation_bytes,
            data_directory_bytes,
            physical: Some(p as f64 - p0 as f64),
            of_logical: Some(l as f64 - l0 as f64),
            source: format!(
                "device {} (counters' change over the load{note})",
                dev.device
            ),
            estimated: false,
            wal_lsn_bytes: snap.wal_lsn_bytes,
        };
    }
    let files = match dir {
        Some(d) => crate::snapshot::relation_files(client, tables, d).await,
        None => Vec::new(),
    };
    if !files.is_empty() {
        let logical: u64 = files
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum();
        let request = EstimateRequest {
            paths: files,
            codec: csdchar_core::compressibility::Codec::DeflateFixed,
            chunk: 4096,
            // Every chunk up to 4 GiB; a 10% sample (with its interval) beyond.
            sample_pct: if logical <= 4 << 30 { 100.0 } else { 10.0 },
            seed: 1,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        if let Some(e) = estimator.estimate(&request, interrupt) {
            return Space {
                relation_bytes,
                data_directory_bytes,
                physical: Some(e.stored_bytes),
                of_logical: Some(e.logical_bytes as f64),
                source: format!("estimated (deflate-fixed per 4 KiB of the relation files{note})"),
                estimated: true,
                wal_lsn_bytes: snap.wal_lsn_bytes,
            };
        }
    }
    Space {
        relation_bytes,
        data_directory_bytes,
        physical: None,
        of_logical: None,
        source: "unknown (data directory not readable here, drive not compressing)".into(),
        estimated: false,
        wal_lsn_bytes: snap.wal_lsn_bytes,
    }
}

/// A load that cannot fit, found before it starts: what it would take and
/// what there is, per resource. `--force` does not override it (it replaces
/// tables; it cannot make room).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoRoom {
    /// The option that sizes the load.
    pub option: &'static str,
    /// One phrase per resource that is short, naming both figures.
    pub reasons: Vec<String>,
}

impl std::fmt::Display for NoRoom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: the load would {}; lower {} or make room (--force does not override this)",
            self.option,
            self.reasons.join(", and "),
            self.option
        )
    }
}

/// Checks a load's `footprint` against the file system holding `data_dir`
/// (its free space plus `replaced_bytes`, the tables the load drops first)
/// and against the memory this machine has available for the client's
/// buffers. An unknown free space or memory passes.
pub fn check_load_room(
    footprint: csdchar_core::load_size::LoadFootprint,
    option: &'static str,
    data_dir: Option<&Path>,
    replaced_bytes: u64,
) -> Result<(), NoRoom> {
    use csdchar_core::units::format_bytes;
    let mut reasons = Vec::new();
    if let Some(dir) = data_dir {
        let at = csdchar_devices::nearest_existing(dir);
        if let Some(free) = csdchar_devices::free_bytes(at) {
            let room = free.saturating_add(replaced_bytes);
            if footprint.table_bytes > room {
                reasons.push(format!(
                    "write about {} of tables and indexes, but the file system of {} has {} free{}",
                    format_bytes(footprint.table_bytes as f64),
                    dir.display(),
                    format_bytes(free as f64),
                    if replaced_bytes > 0 {
                        format!(
                            " (plus {} of tables it replaces)",
                            format_bytes(replaced_bytes as f64)
                        )
                    } else {
                        String::new()
                    }
                ));
            }
        }
    }
    if footprint.client_buffer_bytes > 0
        && let Some(avail) = crate::iostat::mem_available_bytes()
        && footprint.client_buffer_bytes > avail
    {
        reasons.push(format!(
            "hold about {} in the client's memory while it orders the rows, but {} is available",
            format_bytes(footprint.client_buffer_bytes as f64),
            format_bytes(avail as f64)
        ));
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(NoRoom { option, reasons })
    }
}

/// The data directory of the server behind `client` when it is on this
/// machine: the server shows it (superusers, pg_read_all_settings) and the
/// `postmaster.pid` there names the server's port. None otherwise (a remote
/// server's space cannot be checked from here).
pub async fn local_data_directory(client: &Client) -> Option<PathBuf> {
    let dir: String = client
        .query_one("SHOW data_directory", &[])
        .await
        .ok()?
        .get(0);
    let port: String = client.query_one("SHOW port", &[]).await.ok()?.get(0);
    let dir = PathBuf::from(dir);
    let pid_file = std::fs::read_to_string(dir.join("postmaster.pid")).ok()?;
    // postmaster.pid: pid, data directory, start time, port, ...
    (pid_file.lines().nth(3).map(str::trim) == Some(port.trim())).then_some(dir)
}

/// Bytes the workload's `tables` in `schema` hold now (tables, indexes,
/// TOAST): what a load with --force drops before it writes.
pub async fn existing_bytes(client: &Client, schema: &str, tables: &[String]) -> u64 {
    let names: Vec<&str> = tables.iter().map(String::as_str).collect();
    client
        .query_one(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = ANY($2) AND c.relkind = 'r'",
            &[&schema, &names],
        )
        .await
        .map_or(0, |r| r.get::<_, i64>(0).max(0) as u64)
}

/// Bytes of all regular files under `dir`.
pub fn directory_bytes(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let t = e.file_type()?;
        if t.is_dir() {
            total += directory_bytes(&e.path())?;
        } else if t.is_file() {
            total += e.metadata()?.len();
        }
    }
    Ok(total)
}
