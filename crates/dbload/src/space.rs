//! What a load takes on disk: settled snapshots (after CHECKPOINT and
//! sync(2), once the drive's counters hold still), the workload's logical
//! size, and its physical size from a compressing drive's counters or, where
//! there are none, an estimate of the relation files.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use csdchar_core::capacity::CapacitySnapshot;
use csdchar_core::compressibility::Codec;
use csdchar_core::result::db::DbSnapshot;
use csdchar_core::result::study::PhysicalSplit;

use crate::session::DbServer;
use csdchar_pgwire::client::Client;

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
    /// Pages compressing to this many bytes or more count as stored whole.
    pub whole_page_at: Option<usize>,
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
            whole_page_at: request.whole_page_at,
        };
        let e = csdchar_estimate::run(&plan, interrupt, String::new()).ok()?;
        Some(Estimated {
            stored_bytes: e.total.stored_bytes,
            logical_bytes: e.total.logical_bytes,
        })
    }
}

/// A snapshot of a finished state: after CHECKPOINT and sync(2), once the
/// drive's counters hold still.
#[derive(Debug)]
pub struct Settled {
    /// The snapshot, drive counters included.
    pub snapshot: DbSnapshot,
    /// Whether the CHECKPOINT was permitted.
    pub checkpointed: bool,
    /// WAL segments a checkpoint removed that a server process still had
    /// open, held open by csdchar too until this is dropped: they are on the
    /// drive while the counters are read, and must still be there when
    /// [`wal_physical`] reads them (the WAL writer closes its segment at its
    /// next wake-up, up to seconds later; seen as 16 MiB in neither pg_wal
    /// nor the relations in some loads, issue 25).
    removed_wal: Vec<std::fs::File>,
}

/// CHECKPOINT, then a fresh WAL segment and a second checkpoint, which
/// removes (or recycles) the one the load left half full: the WAL's
/// footprint is the same small one at every settle, not whatever part of a
/// segment a load happened to fill (up to 16 MiB, issue 25). Where not
/// permitted (or on a server with other function names), the first
/// checkpoint stands. Whether the CHECKPOINT was permitted.
async fn checkpoint_and_switch(client: &Client) -> bool {
    let checkpointed = client.batch_execute("CHECKPOINT").await.is_ok();
    if checkpointed
        && (client.batch_execute("SELECT pg_switch_wal()").await.is_ok()
            || client
                .batch_execute("SELECT pg_switch_xlog()")
                .await
                .is_ok())
    {
        let _ = client.batch_execute("CHECKPOINT").await;
    }
    checkpointed
}

impl Settled {
    /// The snapshot alone; the removed segments held are let go.
    pub fn into_snapshot(self) -> DbSnapshot {
        self.snapshot
    }
}

/// Settles the server and drive, then takes the snapshot (see [`Settled`]).
/// `client` takes the snapshot; the checkpoints run on a connection of
/// their own to `server`, closed before the drive is read.
pub async fn settled_snapshot(server: &DbServer, client: &Client, tables: &[String]) -> Settled {
    let dialect = &server.dialect;
    // The backend that writes the WAL switch keeps the old segment open
    // until it writes WAL again, so the drive keeps it after the checkpoint
    // removed it (16 MiB more on the drive in some loads, issue 25): that
    // backend goes when the settle is done.
    let own = csdchar_pgwire::client::connect(&server.conninfo).await.ok();
    let checkpointed = checkpoint_and_switch(own.as_ref().unwrap_or(client)).await;
    drop(own);
    let mut snap = crate::snapshot::take(client, dialect, tables).await;
    // Server processes close removed segments when they next write WAL or,
    // for the WAL writer, at its next wake-up (at most 5 s when it
    // hibernates): wait that long for them, then hold what is still open.
    let wal = wal_dir(&snap);
    if let Some(d) = &wal {
        for _ in 0..60 {
            if hold_removed_but_open(d).is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
    let removed_wal = wal.map(|d| hold_removed_but_open(&d)).unwrap_or_default();
    // File systems discard freed blocks after their journal commits (ext4
    // -o discard), which sync(2) forces, and ZFS counts writes and frees
    // when its pool commits a transaction group: commit, read, and again
    // every 0.5 s until the drive's logical and physical counters both hold
    // still (files closed or freed meanwhile show), at most 15 s.
    let zfs = snap
        .device
        .as_ref()
        .and_then(|d| d.zfs.as_ref())
        .map(|z| z.dataset.clone());
    let commit = || {
        rustix::fs::sync();
        if let Some(d) = &zfs {
            let _ = csdchar_devices::zfs::sync_pool(d);
        }
    };
    let counters = |s: &DbSnapshot| {
        s.device
            .as_ref()
            .and_then(|d| d.logical_bytes.zip(d.physical_bytes))
    };
    commit();
    snap = crate::snapshot::take(client, dialect, tables).await;
    for _ in 0..30 {
        let Some(before) = counters(&snap) else {
            break;
        };
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        commit();
        let next = crate::snapshot::take(client, dialect, tables).await;
        let still = counters(&next) == Some(before);
        snap = next;
        if still {
            break;
        }
    }
    Settled {
        snapshot: snap,
        checkpointed,
        removed_wal,
    }
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
    /// On a compressing drive: its change split into relations, WAL and the rest.
    pub split: Option<PhysicalSplit>,
}

/// How a drive compresses, as csdchar models it file by file: zram's
/// selected algorithm, or deflate with fixed codes per 4 KiB (the model
/// closest to published CSD ratios) for any other drive.
#[derive(Debug, Clone, PartialEq)]
pub struct DriveModel {
    /// The per-chunk model.
    pub codec: Codec,
    /// Compressed size from which the drive stores a page whole (zram).
    pub whole_page_at: Option<usize>,
    /// The file system says what each file takes (ZFS: its allocated
    /// blocks are its compressed size), so nothing is modelled.
    pub allocated_blocks: bool,
    /// In the result's words, e.g. "lz4 per 4 KiB (zram0's algorithm)".
    pub words: String,
}

impl DriveModel {
    /// The model for the drive (or ZFS dataset) of snapshot `s`.
    pub fn of_snapshot(s: &CapacitySnapshot) -> DriveModel {
        if s.zfs.is_some() {
            return DriveModel {
                codec: Codec::DeflateFixed,
                whole_page_at: None,
                allocated_blocks: true,
                words: "ZFS's allocated blocks per file (st_blocks: the compressed allocation)"
                    .to_string(),
            };
        }
        Self::of(&s.device)
    }

    /// What the drive stores for `paths`: their allocated blocks where the
    /// file system says, else `estimator` with this model on every page.
    pub fn stored(
        &self,
        paths: Vec<PathBuf>,
        estimator: &dyn SpaceEstimator,
        interrupt: &AtomicBool,
    ) -> Option<Estimated> {
        if self.allocated_blocks {
            // A file gone since it was listed counts for nothing in both.
            let sizes: Vec<(u64, u64)> = paths
                .iter()
                .filter_map(|p| {
                    let len = std::fs::metadata(p).ok()?.len();
                    Some((len, csdchar_devices::allocated_bytes(p).ok()?))
                })
                .collect();
            return Some(Estimated {
                stored_bytes: sizes.iter().map(|s| s.1 as f64).sum(),
                logical_bytes: sizes.iter().map(|s| s.0).sum(),
            });
        }
        estimator.estimate(&every_page(paths, self), interrupt)
    }

    /// The model of kernel block device `device`.
    pub fn of(device: &str) -> DriveModel {
        if device.starts_with("zram") {
            let algo = csdchar_devices::Sysfs::from_env().zram_algorithm(device);
            let codec = match algo.as_deref() {
                Some("zstd") => Some(Codec::Zstd),
                Some("deflate") => Some(Codec::Deflate),
                Some("lz4") => Some(Codec::Lz4),
                _ => None,
            };
            // zram stores a page whole when zsmalloc cannot pack it.
            let whole = csdchar_core::compressibility::zram_whole_page_at(
                csdchar_devices::zram::zsmalloc_chain_size(),
            );
            let rule = format!(
                "pages compressing to {whole} bytes or more stored whole, as zsmalloc does"
            );
            return match codec {
                Some(c) => DriveModel {
                    codec: c,
                    whole_page_at: Some(whole),
                    allocated_blocks: false,
                    words: format!("{} per 4 KiB ({device}'s algorithm; {rule})", c.name()),
                },
                None => DriveModel {
                    codec: Codec::Lz4,
                    whole_page_at: Some(whole),
                    allocated_blocks: false,
                    words: format!(
                        "lz4 per 4 KiB (standing in for {device}'s {}, which csdchar does not model; {rule})",
                        algo.as_deref().unwrap_or("unknown algorithm")
                    ),
                },
            };
        }
        DriveModel {
            codec: Codec::DeflateFixed,
            whole_page_at: None,
            allocated_blocks: false,
            words: "deflate-fixed per 4 KiB (csdchar's CSD model)".to_string(),
        }
    }
}

/// The WAL directory of a snapshot's server, when readable here: pg_wal
/// (PostgreSQL 10 on), else pg_xlog (before it, and openGauss).
fn wal_dir(snap: &DbSnapshot) -> Option<PathBuf> {
    let dir = Path::new(snap.data_directory.as_deref()?);
    [dir.join("pg_wal"), dir.join("pg_xlog")]
        .into_iter()
        .find(|d| d.is_dir())
}

/// Physical bytes of the WAL at a settled state under `model` (every
/// page): the WAL directory's files and the removed segments still open
/// then, or None when the data directory is not readable here.
pub fn wal_physical(
    settled: &Settled,
    model: &DriveModel,
    estimator: &dyn SpaceEstimator,
    interrupt: &AtomicBool,
) -> Option<f64> {
    use std::os::fd::AsRawFd;
    let wal = wal_dir(&settled.snapshot)?;
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&wal)
        .ok()?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect();
    // Removed segments stay on the drive while open: read through our own
    // descriptors, which kept them there since the counters were read.
    paths.extend(
        settled
            .removed_wal
            .iter()
            .map(|f| PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()))),
    );
    if paths.is_empty() {
        return Some(0.0);
    }
    model
        .stored(paths, estimator, interrupt)
        .map(|e| e.stored_bytes)
}

/// Files under `dir` that are deleted but still open in some process,
/// opened here too (through `/proc/PID/fd/N`, readable for their owner and
/// root), one per file.
fn hold_removed_but_open(dir: &Path) -> Vec<std::fs::File> {
    use std::os::unix::fs::MetadataExt;
    let prefix = dir.to_string_lossy().to_string();
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        if !p
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let t = target.to_string_lossy();
            if t.starts_with(&prefix) && t.ends_with(" (deleted)") {
                // The magic link opens the file itself, deleted or not.
                if let Ok(f) = std::fs::File::open(fd.path())
                    && let Ok(m) = f.metadata()
                    && m.is_file()
                    && seen.insert((m.dev(), m.ino()))
                {
                    out.push(f);
                }
            }
        }
    }
    out
}

/// A request that compresses every 4 KiB page of `paths` with `codec`.
fn every_page(paths: Vec<PathBuf>, model: &DriveModel) -> EstimateRequest {
    EstimateRequest {
        paths,
        codec: model.codec,
        whole_page_at: model.whole_page_at,
        chunk: 4096,
        sample_pct: 100.0,
        seed: 1,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// After a CHECKPOINT and sync(2), so the drive has seen the data: the
/// workload's relation sizes, the data directory's bytes, and the physical
/// size — from the drive's counters when it compresses (their change since
/// `baseline`, taken with the tables dropped), else `estimator`'s
/// prediction for the relation files (deflate with fixed codes per 4 KiB, the
/// model closest to published CSD ratios).
pub async fn measure_space(
    server: &DbServer,
    client: &Client,
    tables: &[String],
    baseline: Option<&CapacitySnapshot>,
    wal_before: Option<f64>,
    estimator: &dyn SpaceEstimator,
    interrupt: &AtomicBool,
) -> Space {
    let settled = settled_snapshot(server, client, tables).await;
    let (snap, checkpointed) = (&settled.snapshot, settled.checkpointed);
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
        // What the load added to the drive: the relations, the WAL, and
        // whatever else (file system, late discards) — split, so the
        // headline is the relations' own figure and the rest stays visible.
        let (drive, drive_logical) = (p as f64 - p0 as f64, l as f64 - l0 as f64);
        let model = DriveModel::of_snapshot(dev);
        let files = match dir {
            Some(d) => crate::snapshot::relation_files(client, tables, d).await,
            None => Vec::new(),
        };
        let relations = (!files.is_empty())
            .then(|| model.stored(files, estimator, interrupt))
            .flatten();
        if let Some(rel) = relations {
            let wal = wal_before
                .zip(wal_physical(&settled, &model, estimator, interrupt))
                .map(|(a, b)| b - a);
            return Space {
                relation_bytes,
                data_directory_bytes,
                physical: Some(rel.stored_bytes),
                of_logical: Some(rel.logical_bytes as f64),
                source: format!("{} of the relation files{note}", model.words),
                estimated: !model.allocated_blocks,
                wal_lsn_bytes: snap.wal_lsn_bytes,
                split: Some(PhysicalSplit {
                    drive_bytes: drive,
                    drive_logical_bytes: drive_logical,
                    relations_bytes: rel.stored_bytes,
                    wal_bytes: wal,
                    rest_bytes: drive - rel.stored_bytes - wal.unwrap_or(0.0),
                    method: format!("{}, every page", model.words),
                }),
            };
        }
        // The files are not readable here: the drive's whole change.
        return Space {
            relation_bytes,
            data_directory_bytes,
            physical: Some(drive),
            of_logical: Some(drive_logical),
            source: format!(
                "device {} (counters' change over the load{note})",
                dev.device
            ),
            estimated: false,
            wal_lsn_bytes: snap.wal_lsn_bytes,
            split: None,
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
        // On btrfs the file system says what the files take: their extents'
        // on-disk bytes, compressed where it compressed them (compsize's
        // method; needs CAP_SYS_ADMIN, else the estimate below).
        if let Ok(Some(u)) = csdchar_devices::btrfs::usage_of(&files) {
            return Space {
                relation_bytes,
                data_directory_bytes,
                physical: Some(u.disk_bytes as f64),
                of_logical: Some(logical as f64),
                source: format!("{BTRFS_WORDS}{note}"),
                estimated: false,
                wal_lsn_bytes: snap.wal_lsn_bytes,
                split: None,
            };
        }
        let request = EstimateRequest {
            paths: files,
            codec: csdchar_core::compressibility::Codec::DeflateFixed,
            whole_page_at: None,
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
                split: None,
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
        split: None,
    }
}

/// Where the study's physical figure comes from on btrfs, in the result's words.
pub const BTRFS_WORDS: &str = "btrfs: on-disk bytes of the relation files' extents (compressed where the file \
     system compressed them; BTRFS_IOC_TREE_SEARCH_V2, compsize's method)";

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
        && let Some(avail) = csdchar_dbloop::iostat::mem_available_bytes()
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
