//! Results flattened into rows: one per interval sample (the export and the
//! basis of the statistics), one per database step, per block job, and per
//! space measurement.

use csdchar_core::result::block::{BlockResult, DirectionSummary, IntervalDirection};
use csdchar_core::result::db::{DbSpec, DbStep, IoRates, PgioParams};

use crate::load::{LoadedResult, ReportInput};

/// One documented column of the interval export.
#[derive(Debug, Clone, Copy)]
pub struct ColumnDoc {
    /// Column name in the Parquet and CSV files.
    pub name: &'static str,
    /// Value type: "string", "int64" or "float64".
    pub dtype: &'static str,
    /// What it holds.
    pub doc: &'static str,
}

/// The columns of `intervals.parquet` / `intervals.csv`, in order. Null where
/// a column does not apply (block columns on database rows and vice versa).
pub const INTERVAL_COLUMNS: &[ColumnDoc] = &[
    ColumnDoc {
        name: "source",
        dtype: "string",
        doc: "Result file the sample comes from.",
    },
    ColumnDoc {
        name: "label",
        dtype: "string",
        doc: "Device or run label: --label NAME, else the device the result recorded, else the file name.",
    },
    ColumnDoc {
        name: "kind",
        dtype: "string",
        doc: "\"db\" (csdchar db run / study) or \"block\" (csdchar block).",
    },
    ColumnDoc {
        name: "started_at",
        dtype: "string",
        doc: "When the run started, RFC 3339 UTC.",
    },
    ColumnDoc {
        name: "workload",
        dtype: "string",
        doc: "db: sysbench/pgbench script name; block: rw mode (randwrite, …).",
    },
    ColumnDoc {
        name: "fillfactor",
        dtype: "int64",
        doc: "Table fillfactor (db; null: PostgreSQL's default, 100).",
    },
    ColumnDoc {
        name: "threads",
        dtype: "int64",
        doc: "db: clients of the step; block: numjobs.",
    },
    ColumnDoc {
        name: "iodepth",
        dtype: "int64",
        doc: "block: queue depth per job.",
    },
    ColumnDoc {
        name: "bs_bytes",
        dtype: "int64",
        doc: "block: block size, bytes.",
    },
    ColumnDoc {
        name: "step",
        dtype: "int64",
        doc: "Index of the step within its result (thread sweeps; studies count across fillfactors); 0 for block.",
    },
    ColumnDoc {
        name: "t_s",
        dtype: "float64",
        doc: "Seconds since the step started, at the interval's end.",
    },
    ColumnDoc {
        name: "duration_s",
        dtype: "float64",
        doc: "Length of the interval, seconds (the last may be short).",
    },
    ColumnDoc {
        name: "tps",
        dtype: "float64",
        doc: "db: transactions per second.",
    },
    ColumnDoc {
        name: "qps",
        dtype: "float64",
        doc: "db: statements per second (reads + writes + others).",
    },
    ColumnDoc {
        name: "reads_per_s",
        dtype: "float64",
        doc: "db: statements that returned rows, per second (sysbench \"read\").",
    },
    ColumnDoc {
        name: "writes_per_s",
        dtype: "float64",
        doc: "db: statements that changed rows, per second (sysbench \"write\").",
    },
    ColumnDoc {
        name: "others_per_s",
        dtype: "float64",
        doc: "db: other statements (BEGIN, COMMIT, …), per second.",
    },
    ColumnDoc {
        name: "errors_per_s",
        dtype: "float64",
        doc: "db: ignored errors (deadlocks, serialization failures) per second.",
    },
    ColumnDoc {
        name: "lat_percentile",
        dtype: "float64",
        doc: "db: which percentile lat_pct_ms is (the run's first --percentile).",
    },
    ColumnDoc {
        name: "lat_pct_ms",
        dtype: "float64",
        doc: "db: transaction latency at lat_percentile over the interval, ms.",
    },
    ColumnDoc {
        name: "read_iops",
        dtype: "float64",
        doc: "block: read I/Os per second.",
    },
    ColumnDoc {
        name: "read_bw_bytes_per_s",
        dtype: "float64",
        doc: "block: read bytes per second.",
    },
    ColumnDoc {
        name: "read_lat_mean_us",
        dtype: "float64",
        doc: "block: mean read latency (submission to completion), µs.",
    },
    ColumnDoc {
        name: "read_lat_p99_us",
        dtype: "float64",
        doc: "block: 99th percentile read latency, µs.",
    },
    ColumnDoc {
        name: "write_iops",
        dtype: "float64",
        doc: "block: write I/Os per second.",
    },
    ColumnDoc {
        name: "write_bw_bytes_per_s",
        dtype: "float64",
        doc: "block: write bytes per second.",
    },
    ColumnDoc {
        name: "write_lat_mean_us",
        dtype: "float64",
        doc: "block: mean write latency, µs.",
    },
    ColumnDoc {
        name: "write_lat_p99_us",
        dtype: "float64",
        doc: "block: 99th percentile write latency, µs.",
    },
    ColumnDoc {
        name: "riops",
        dtype: "float64",
        doc: "db: shared-buffer misses per second (pgio's RIOPS, Δpg_stat_database.blks_read / s); null when the run did not sample I/O.",
    },
    ColumnDoc {
        name: "dev_read_iops",
        dtype: "float64",
        doc: "db: reads per second of the drive holding the data directory; null without its counters.",
    },
    ColumnDoc {
        name: "dev_read_latency_ms",
        dtype: "float64",
        doc: "db: the drive's mean read latency, ms (Δread ticks / Δreads); null without reads.",
    },
    ColumnDoc {
        name: "reads_per_miss",
        dtype: "float64",
        doc: "db: dev_read_iops / riops: 1 when every miss reached the drive, below 1 what the page cache absorbed.",
    },
];

/// One interval sample, database or block (see [`INTERVAL_COLUMNS`]).
#[derive(Debug, Clone, Default, PartialEq)]
#[allow(missing_docs)]
pub struct IntervalRow {
    pub source: String,
    pub label: String,
    pub kind: &'static str,
    pub started_at: String,
    pub workload: String,
    pub fillfactor: Option<i64>,
    pub threads: i64,
    pub iodepth: Option<i64>,
    pub bs_bytes: Option<i64>,
    pub step: i64,
    pub t_s: f64,
    pub duration_s: f64,
    pub tps: Option<f64>,
    pub qps: Option<f64>,
    pub reads_per_s: Option<f64>,
    pub writes_per_s: Option<f64>,
    pub others_per_s: Option<f64>,
    pub errors_per_s: Option<f64>,
    pub lat_percentile: Option<f64>,
    pub lat_pct_ms: Option<f64>,
    pub read_iops: Option<f64>,
    pub read_bw_bytes_per_s: Option<f64>,
    pub read_lat_mean_us: Option<f64>,
    pub read_lat_p99_us: Option<f64>,
    pub write_iops: Option<f64>,
    pub write_bw_bytes_per_s: Option<f64>,
    pub write_lat_mean_us: Option<f64>,
    pub write_lat_p99_us: Option<f64>,
    pub riops: Option<f64>,
    pub dev_read_iops: Option<f64>,
    pub dev_read_latency_ms: Option<f64>,
    pub reads_per_miss: Option<f64>,
}

/// Which run a database step belongs to: the grouping key of the tables.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DbKey {
    /// Label (device).
    pub label: String,
    /// Workload name.
    pub workload: String,
    /// Table fillfactor (None: default 100).
    pub fillfactor: Option<i64>,
    /// Clients.
    pub threads: i64,
}

/// One database step (one thread count of one run) with its whole-step latency.
#[derive(Debug, Clone, PartialEq)]
pub struct DbStepRow {
    /// Grouping key.
    pub key: DbKey,
    /// Result file.
    pub source: String,
    /// Run start, RFC 3339.
    pub started_at: String,
    /// Measured seconds.
    pub elapsed_s: f64,
    /// Transactions.
    pub transactions: u64,
    /// Transactions per second over the step.
    pub tps: f64,
    /// Statements per second over the step.
    pub qps: f64,
    /// Mean transaction latency, ms.
    pub lat_avg_ms: f64,
    /// 95th percentile, ms, when the run recorded it.
    pub lat_p95_ms: Option<f64>,
    /// 99th percentile, ms, when the run recorded it.
    pub lat_p99_ms: Option<f64>,
}

/// One TPC-C step (a step that recorded tpmC): throughput and per-type latency.
#[derive(Debug, Clone, PartialEq)]
pub struct TpccRow {
    /// Grouping key (threads are the terminals).
    pub key: DbKey,
    /// Warehouses of the run, when recorded.
    pub warehouses: Option<u32>,
    /// How the transactions were sent (`statements`, `procedures`); results
    /// from before the choice ran procedures.
    pub mode: String,
    /// Result file.
    pub source: String,
    /// Measured seconds.
    pub elapsed_s: f64,
    /// Transactions of every type, rollbacks included.
    pub transactions: u64,
    /// New-Orders per minute, rollbacks included.
    pub tpmc: f64,
    /// Transactions of every type per minute, when recorded.
    pub tpm_total: Option<f64>,
    /// Per transaction type, in the result's order.
    pub by_type: Vec<TpccTypeRow>,
}

/// One transaction type of a [`TpccRow`].
#[derive(Debug, Clone, PartialEq)]
pub struct TpccTypeRow {
    /// Type name (new_order, payment, order_status, delivery, stock_level).
    pub name: String,
    /// Transactions, rollbacks included.
    pub transactions: u64,
    /// Of those, intended rollbacks.
    pub rollbacks: u64,
    /// Share of the step's transactions, percent.
    pub share_pct: f64,
    /// Mean latency, ms.
    pub avg_ms: f64,
    /// 95th percentile, ms, when recorded.
    pub p95_ms: Option<f64>,
    /// 99th percentile, ms, when recorded.
    pub p99_ms: Option<f64>,
}

/// One database step that sampled physical I/O: its rates over the step and
/// per interval, with what the I/O depends on besides the key (pgio's
/// parameters, what limited the page cache).
#[derive(Debug, Clone, PartialEq)]
pub struct IoStepRow {
    /// Grouping key.
    pub key: DbKey,
    /// pgio's parameters (pgio runs only).
    pub pgio: Option<PgioParams>,
    /// What kept the page cache from absorbing reads; None: nothing.
    pub cache_control: Option<String>,
    /// Result file.
    pub source: String,
    /// Run start, RFC 3339.
    pub started_at: String,
    /// Measured seconds.
    pub elapsed_s: f64,
    /// Rates over the whole step (None when only the intervals have them).
    pub io: Option<IoRates>,
    /// Rates per interval, for the intervals that have them.
    pub intervals: Vec<IoPoint>,
}

/// One interval of an [`IoStepRow`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IoPoint {
    /// Seconds since the step started, at the interval's end.
    pub t_s: f64,
    /// Length of the interval, seconds.
    pub duration_s: f64,
    /// Shared-buffer misses per second.
    pub riops: f64,
    /// Device reads per second, when the device was sampled.
    pub dev_read_iops: Option<f64>,
}

/// Block results: per job, plus the whole run (`job` None).
#[derive(Debug, Clone, PartialEq)]
pub struct BlockRow {
    /// Label (device).
    pub label: String,
    /// Result file.
    pub source: String,
    /// Run start, RFC 3339.
    pub started_at: String,
    /// rw mode.
    pub rw: String,
    /// Block size, bytes.
    pub bs: u64,
    /// Queue depth per job.
    pub iodepth: u32,
    /// Jobs.
    pub numjobs: u32,
    /// Job number; None for the whole run.
    pub job: Option<u32>,
    /// Read IOPS / bandwidth (bytes/s) / mean latency (µs) / p99 (µs, whole run only).
    pub read: Option<BlockDirRow>,
    /// Same for writes.
    pub write: Option<BlockDirRow>,
    /// Requested compressibility, % (whole run only).
    pub compress_pct: Option<u8>,
    /// Ideal ratio for that request.
    pub target_ratio: Option<f64>,
    /// Measured lz4 ratio of the written data (per 4 KiB).
    pub lz4_ratio: Option<f64>,
    /// Measured deflate ratio of the written data (per 4 KiB).
    pub deflate_ratio: Option<f64>,
    /// What the device stored: Δlogical / Δphysical of its counters.
    pub device_ratio: Option<f64>,
}

/// One direction of a [`BlockRow`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockDirRow {
    /// I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes_per_s: f64,
    /// Mean latency, µs.
    pub lat_mean_us: f64,
    /// 99th percentile latency, µs (whole run only).
    pub lat_p99_us: Option<f64>,
}

/// One space measurement: how large the data is, and what the drive stores.
#[derive(Debug, Clone, PartialEq)]
pub struct SpaceRow {
    /// Label (device).
    pub label: String,
    /// Result file.
    pub source: String,
    /// "study", "db", "capacity" or "estimate".
    pub origin: &'static str,
    /// What was measured (workload, path or device).
    pub what: String,
    /// Table fillfactor, when the data is a database workload.
    pub fillfactor: Option<i64>,
    /// Logical size of the data, bytes (tables + indexes + TOAST; the device's logical bytes for capacity results).
    pub logical_bytes: Option<f64>,
    /// The logical bytes `physical_bytes` stands for (a whole device counts everything on it).
    pub device_logical_bytes: Option<f64>,
    /// Stored (physical) bytes.
    pub physical_bytes: Option<f64>,
    /// device_logical_bytes / physical_bytes.
    pub ratio: Option<f64>,
    /// logical_bytes relative to the first row of the same label and origin, minus 1.
    pub logical_growth: Option<f64>,
    /// physical_bytes relative to the first row of the same label and origin, minus 1.
    pub physical_growth: Option<f64>,
    /// Where physical_bytes comes from.
    pub physical_source: String,
    /// Sample standard deviation of physical_bytes over a study's repeated loads (`--repeat`).
    pub physical_stddev: Option<f64>,
    /// A study's drive-wide change over the load (relations, WAL and the rest), beside the
    /// relations' physical_bytes.
    pub drive_bytes: Option<f64>,
    /// A study's load time, seconds (the reproducible-pgbench seed's column).
    pub load_s: Option<f64>,
    /// A study's TPS at that fillfactor.
    pub tps: Option<f64>,
    /// A study's mean latency at that fillfactor, ms.
    pub lat_avg_ms: Option<f64>,
}

/// Everything the report is built from.
#[derive(Debug, Clone, Default)]
pub struct Flattened {
    /// Interval samples of every input, in input order.
    pub intervals: Vec<IntervalRow>,
    /// Database steps.
    pub db_steps: Vec<DbStepRow>,
    /// TPC-C steps (those with tpmC), also among `db_steps`.
    pub tpcc: Vec<TpccRow>,
    /// Database steps that sampled physical I/O, also among `db_steps`.
    pub io: Vec<IoStepRow>,
    /// Block results.
    pub block: Vec<BlockRow>,
    /// Space measurements.
    pub space: Vec<SpaceRow>,
}

/// Flattens the inputs.
pub fn flatten(inputs: &[ReportInput]) -> Flattened {
    let mut f = Flattened::default();
    for input in inputs {
        let source = input.path.display().to_string();
        let label = input.label.clone();
        match &input.result {
            LoadedResult::Db(d) => {
                let steps: Vec<(Option<u8>, &DbStep)> =
                    d.steps.iter().map(|s| (d.spec.fillfactor, s)).collect();
                add_db(&mut f, &source, &label, &d.started_at, &d.spec, &steps);
                if let Some(row) =
                    db_space_row(&source, &label, &d.spec, d.spec.fillfactor, &d.steps)
                {
                    f.space.push(row);
                }
            }
            LoadedResult::Study(s) => {
                let steps: Vec<(Option<u8>, &DbStep)> = s
                    .runs
                    .iter()
                    .flat_map(|r| r.steps.iter().map(move |st| (Some(r.fillfactor), st)))
                    .collect();
                add_db(&mut f, &source, &label, &s.started_at, &s.spec, &steps);
                let mut seen = Vec::new();
                for row in &s.rows {
                    if seen.contains(&row.fillfactor) {
                        continue;
                    }
                    seen.push(row.fillfactor);
                    f.space.push(SpaceRow {
                        label: label.clone(),
                        source: source.clone(),
                        origin: "study",
                        what: s.spec.workload.clone(),
                        fillfactor: Some(row.fillfactor as i64),
                        logical_bytes: Some(row.relation_bytes as f64),
                        device_logical_bytes: row.physical_of_logical_bytes,
                        physical_bytes: row.physical_bytes,
                        ratio: row.ratio,
                        logical_growth: None,
                        physical_growth: None,
                        physical_source: row.physical_source.clone(),
                        physical_stddev: row.physical_spread.map(|s| s.stddev),
                        drive_bytes: row.physical_split.as_ref().map(|s| s.drive_bytes),
                        load_s: Some(row.load_s),
                        tps: Some(row.tps),
                        lat_avg_ms: Some(row.lat_avg_ms),
                    });
                }
            }
            LoadedResult::Block(b) => add_block(&mut f, &source, &label, b),
            LoadedResult::Capacity(c) => {
                let s = &c.snapshot;
                f.space.push(SpaceRow {
                    label: label.clone(),
                    source: source.clone(),
                    origin: "capacity",
                    what: format!("{} ({})", c.target, s.device),
                    fillfactor: None,
                    logical_bytes: s.logical_bytes.map(|v| v as f64),
                    device_logical_bytes: s.logical_bytes.map(|v| v as f64),
                    physical_bytes: s.physical_bytes.map(|v| v as f64),
                    ratio: ratio(
                        s.logical_bytes.map(|v| v as f64),
                        s.physical_bytes.map(|v| v as f64),
                    ),
                    logical_growth: None,
                    physical_growth: None,
                    physical_source: format!("device {}", s.device),
                    physical_stddev: None,
                    drive_bytes: None,
                    load_s: None,
                    tps: None,
                    lat_avg_ms: None,
                });
            }
            LoadedResult::Estimate(e) => {
                let what = match e.files.len() {
                    1 => e.files[0].path.clone(),
                    n => format!("{n} files"),
                };
                f.space.push(SpaceRow {
                    label: label.clone(),
                    source: source.clone(),
                    origin: "estimate",
                    what,
                    fillfactor: None,
                    logical_bytes: Some(e.total.logical_bytes as f64),
                    device_logical_bytes: Some(e.total.logical_bytes as f64),
                    physical_bytes: Some(e.total.stored_bytes),
                    ratio: e.total.ratio,
                    logical_growth: None,
                    physical_growth: None,
                    physical_source: format!("estimated ({} per {} B)", e.codec.name(), e.chunk),
                    physical_stddev: None,
                    drive_bytes: None,
                    load_s: None,
                    tps: None,
                    lat_avg_ms: None,
                });
            }
        }
    }
    add_growth(&mut f.space);
    f
}

fn ratio(logical: Option<f64>, physical: Option<f64>) -> Option<f64> {
    match (logical, physical) {
        (Some(l), Some(p)) if p > 0.0 => Some(l / p),
        _ => None,
    }
}

fn add_db(
    f: &mut Flattened,
    source: &str,
    label: &str,
    started_at: &str,
    spec: &DbSpec,
    steps: &[(Option<u8>, &DbStep)],
) {
    let pct = spec.percentiles.first().copied();
    for (i, (ff, step)) in steps.iter().enumerate() {
        let key = DbKey {
            label: label.to_string(),
            workload: spec.workload.clone(),
            fillfactor: ff.map(i64::from),
            threads: step.threads as i64,
        };
        let ms = |ns: u64| ns as f64 / 1e6;
        f.db_steps.push(DbStepRow {
            key: key.clone(),
            source: source.to_string(),
            started_at: started_at.to_string(),
            elapsed_s: step.elapsed_s,
            transactions: step.transactions,
            tps: step.tps,
            qps: step.qps,
            lat_avg_ms: step.latency.mean_ns / 1e6,
            lat_p95_ms: step.latency.at(95.0).map(ms),
            lat_p99_ms: step.latency.at(99.0).map(ms),
        });
        if let Some(tpmc) = step.tpmc {
            f.tpcc.push(TpccRow {
                key: key.clone(),
                warehouses: spec.warehouses,
                mode: spec
                    .tpcc_mode
                    .clone()
                    .unwrap_or_else(|| "procedures".to_string()),
                source: source.to_string(),
                elapsed_s: step.elapsed_s,
                transactions: step.transactions,
                tpmc,
                tpm_total: step.tpm_total,
                by_type: step
                    .by_type
                    .iter()
                    .map(|t| TpccTypeRow {
                        name: t.name.clone(),
                        transactions: t.transactions,
                        rollbacks: t.rollbacks,
                        share_pct: t.share_pct,
                        avg_ms: t.latency.mean_ns / 1e6,
                        p95_ms: t.latency.at(95.0).map(ms),
                        p99_ms: t.latency.at(99.0).map(ms),
                    })
                    .collect(),
            });
        }
        let mut io_points = Vec::new();
        let mut prev_t = 0.0;
        for iv in &step.intervals {
            let io = iv.io.as_ref();
            if let Some(io) = io {
                io_points.push(IoPoint {
                    t_s: iv.t_s,
                    duration_s: iv.t_s - prev_t,
                    riops: io.riops,
                    dev_read_iops: io.dev_read_iops,
                });
            }
            f.intervals.push(IntervalRow {
                source: source.to_string(),
                label: label.to_string(),
                kind: "db",
                started_at: started_at.to_string(),
                workload: key.workload.clone(),
                fillfactor: key.fillfactor,
                threads: key.threads,
                step: i as i64,
                t_s: iv.t_s,
                duration_s: iv.t_s - prev_t,
                tps: Some(iv.tps),
                qps: Some(iv.qps),
                reads_per_s: Some(iv.reads_per_s),
                writes_per_s: Some(iv.writes_per_s),
                others_per_s: Some(iv.others_per_s),
                errors_per_s: Some(iv.errors_per_s),
                lat_percentile: pct,
                lat_pct_ms: Some(iv.lat_pct_ms),
                riops: io.map(|io| io.riops),
                dev_read_iops: io.and_then(|io| io.dev_read_iops),
                dev_read_latency_ms: io.and_then(|io| io.dev_read_latency_ms),
                reads_per_miss: io.and_then(|io| io.reads_per_miss),
                ..IntervalRow::default()
            });
            prev_t = iv.t_s;
        }
        if step.io.is_some() || !io_points.is_empty() {
            f.io.push(IoStepRow {
                key: key.clone(),
                pgio: spec.pgio.clone(),
                cache_control: spec.cache_control.clone(),
                source: source.to_string(),
                started_at: started_at.to_string(),
                elapsed_s: step.elapsed_s,
                io: step.io.clone(),
                intervals: io_points,
            });
        }
    }
}

/// Space after a database run: the workload's relations and the drive's counters.
fn db_space_row(
    source: &str,
    label: &str,
    spec: &DbSpec,
    fillfactor: Option<u8>,
    steps: &[DbStep],
) -> Option<SpaceRow> {
    let snap = steps.iter().rev().find_map(|s| s.after.as_ref())?;
    let logical: i64 = snap
        .relations
        .iter()
        .map(|r| r.table_bytes + r.index_bytes + r.toast_bytes)
        .sum();
    let device = snap.device.as_ref();
    let dev_logical = device.and_then(|d| d.logical_bytes).map(|v| v as f64);
    let physical = device.and_then(|d| d.physical_bytes).map(|v| v as f64);
    Some(SpaceRow {
        label: label.to_string(),
        source: source.to_string(),
        origin: "db",
        what: spec.workload.clone(),
        fillfactor: fillfactor.map(i64::from),
        logical_bytes: Some(logical as f64),
        device_logical_bytes: dev_logical,
        physical_bytes: physical,
        ratio: ratio(dev_logical, physical),
        logical_growth: None,
        physical_growth: None,
        physical_source: match device {
            Some(d) if physical.is_some() => format!("device {}", d.device),
            _ => "unknown".to_string(),
        },
        physical_stddev: None,
        drive_bytes: None,
        load_s: None,
        tps: None,
        lat_avg_ms: None,
    })
}

/// Growth relative to the first row of each (label, origin).
fn add_growth(rows: &mut [SpaceRow]) {
    for i in 0..rows.len() {
        let first = rows
            .iter()
            .position(|r| r.label == rows[i].label && r.origin == rows[i].origin)
            .expect("row i itself matches");
        let grow = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b - 1.0),
            _ => None,
        };
        rows[i].logical_growth = grow(rows[i].logical_bytes, rows[first].logical_bytes);
        rows[i].physical_growth = grow(rows[i].physical_bytes, rows[first].physical_bytes);
    }
}

fn add_block(f: &mut Flattened, source: &str, label: &str, b: &BlockResult) {
    let spec = &b.spec;
    let us = |ns: f64| ns / 1e3;
    for s in &b.intervals {
        let dir = |d: &Option<IntervalDirection>| {
            d.as_ref().map(|d| {
                (
                    d.iops,
                    d.bw_bytes_per_s,
                    us(d.lat_mean_ns),
                    us(d.lat_p99_ns as f64),
                )
            })
        };
        let (r, w) = (dir(&s.read), dir(&s.write));
        f.intervals.push(IntervalRow {
            source: source.to_string(),
            label: label.to_string(),
            kind: "block",
            started_at: b.started_at.clone(),
            workload: spec.rw.name().to_string(),
            threads: spec.numjobs as i64,
            iodepth: Some(spec.iodepth as i64),
            bs_bytes: Some(spec.bs as i64),
            step: 0,
            t_s: s.t_ms as f64 / 1e3,
            duration_s: s.duration_ms as f64 / 1e3,
            read_iops: r.map(|d| d.0),
            read_bw_bytes_per_s: r.map(|d| d.1),
            read_lat_mean_us: r.map(|d| d.2),
            read_lat_p99_us: r.map(|d| d.3),
            write_iops: w.map(|d| d.0),
            write_bw_bytes_per_s: w.map(|d| d.1),
            write_lat_mean_us: w.map(|d| d.2),
            write_lat_p99_us: w.map(|d| d.3),
            ..IntervalRow::default()
        });
    }
    let total = |d: &Option<DirectionSummary>| {
        d.as_ref().map(|d| BlockDirRow {
            iops: d.iops,
            bw_bytes_per_s: d.bw_bytes_per_s,
            lat_mean_us: us(d.lat.mean_ns),
            lat_p99_us: d.lat.at(99.0).map(|v| us(v as f64)),
        })
    };
    let base = BlockRow {
        label: label.to_string(),
        source: source.to_string(),
        started_at: b.started_at.clone(),
        rw: spec.rw.name().to_string(),
        bs: spec.bs,
        iodepth: spec.iodepth,
        numjobs: spec.numjobs,
        job: None,
        read: total(&b.read),
        write: total(&b.write),
        compress_pct: b.data.as_ref().map(|d| d.compress_pct),
        target_ratio: b.data.as_ref().and_then(|d| d.target_ratio),
        lz4_ratio: b.data.as_ref().and_then(|d| d.lz4_ratio),
        deflate_ratio: b.data.as_ref().and_then(|d| d.deflate_ratio),
        device_ratio: b.capacity.as_ref().and_then(|c| c.delta.compression_ratio),
    };
    // Per-job rows only say something when there are several jobs.
    if b.jobs.len() > 1 {
        for j in &b.jobs {
            let dir = |d: &Option<csdchar_core::result::block::JobDirection>| {
                d.as_ref().map(|d| BlockDirRow {
                    iops: d.iops,
                    bw_bytes_per_s: d.bw_bytes_per_s,
                    lat_mean_us: us(d.lat_mean_ns),
                    lat_p99_us: None,
                })
            };
            f.block.push(BlockRow {
                job: Some(j.job),
                read: dir(&j.read),
                write: dir(&j.write),
                compress_pct: None,
                target_ratio: None,
                lz4_ratio: None,
                deflate_ratio: None,
                device_ratio: None,
                ..base.clone()
            });
        }
    }
    f.block.push(base);
}
