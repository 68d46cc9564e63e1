//! `csdchar.study/1`: the fillfactor study — per fillfactor, the space the
//! workload's data takes (logical and physical) and how the workload runs.

use serde::{Deserialize, Serialize};

use super::ToolInfo;
use super::db::{DbSpec, DbStep};

/// Schema identifier of study results.
pub const STUDY_SCHEMA: &str = "csdchar.study/1";

/// The result of `csdchar db study`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StudyResult {
    /// Always "csdchar.study/1".
    pub schema: String,
    /// Program that produced the result.
    pub tool: ToolInfo,
    /// When the study started, RFC 3339 UTC.
    pub started_at: String,
    /// Where the database came from: "url", "pgdata" or "ephemeral".
    pub server: String,
    /// Server version string.
    pub server_version: String,
    /// The server as csdchar's probe found it at connect: product (PostgreSQL or openGauss),
    /// version, database, compatibility mode, and which catalog features the snapshots and
    /// loaders used or went without (absent in results written before this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_dialect: Option<String>,
    /// The workload (its `fillfactor` is null: see `fillfactors`).
    pub spec: DbSpec,
    /// Fillfactors in the order they were studied.
    pub fillfactors: Vec<u8>,
    /// How `physical_bytes` was measured, as the table's footnote says it: the
    /// drive's counters' change over each load with the WAL in steady state
    /// (unmeasured warm-up loads first, so measured loads reuse WAL segments
    /// instead of adding new ones), or the estimator's prediction.
    #[serde(default)]
    pub physical_method: String,
    /// The table: one row per fillfactor and thread count.
    pub rows: Vec<StudyRow>,
    /// Every run step in full (intervals, snapshots), per fillfactor.
    pub runs: Vec<StudyRun>,
    /// Whether the study stopped early (Ctrl-C or an error).
    pub interrupted: bool,
    /// The error that stopped it, if any.
    pub error: Option<String>,
}

/// One line of the study table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StudyRow {
    /// Table fillfactor of this load.
    pub fillfactor: u8,
    /// Clients of the run step.
    pub threads: u32,
    /// Seconds the load (prepare) took.
    pub load_s: f64,
    /// WAL the server wrote during the load (change of its WAL position), bytes; null when not readable.
    #[serde(default)]
    pub load_wal_bytes: Option<i64>,
    /// Change of the pg_wal directory's size over the load (after its checkpoint), bytes: near 0
    /// when the load reused WAL segments, so the device's change is the data's; null when not readable.
    #[serde(default)]
    pub wal_dir_growth_bytes: Option<i64>,
    /// Logical size: the workload's tables, indexes and TOAST after the load and a checkpoint, bytes.
    pub relation_bytes: i64,
    /// Bytes of all files in the data directory, when it is local and readable.
    pub data_directory_bytes: Option<u64>,
    /// Physical bytes: the drive's counter (whole device) or the estimator's prediction for the relation files.
    pub physical_bytes: Option<f64>,
    /// The logical bytes `physical_bytes` stands for (the drive's logical counter, or the relation files' bytes).
    pub physical_of_logical_bytes: Option<f64>,
    /// Where `physical_bytes` comes from, e.g. "device zram0" or "estimated (deflate-fixed per 4 KiB)"; "unknown" when neither is available.
    pub physical_source: String,
    /// Whether `physical_bytes` is a prediction rather than a device counter.
    pub physical_estimated: bool,
    /// physical_of_logical_bytes / physical_bytes.
    pub ratio: Option<f64>,
    /// Transactions per second of the run step.
    pub tps: f64,
    /// Mean transaction latency, ms.
    pub lat_avg_ms: f64,
    /// 95th percentile latency, ms.
    pub lat_p95_ms: f64,
    /// 99th percentile latency, ms.
    pub lat_p99_ms: f64,
    /// relation_bytes relative to the first row, minus 1 (0.2 = 20% larger).
    pub logical_growth: f64,
    /// physical_bytes relative to the first row, minus 1; null when either is unknown.
    pub physical_growth: Option<f64>,
}

/// The run steps of one fillfactor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StudyRun {
    /// Table fillfactor.
    pub fillfactor: u8,
    /// One step per thread count.
    pub steps: Vec<DbStep>,
}
