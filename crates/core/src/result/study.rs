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
    /// The fillfactor the study stopped in before its rows (Ctrl-C or an error during its loads
    /// or its run step): every load of it that finished, measured in full, and what was cut
    /// short; absent when the study stopped between fillfactors, or did not stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished: Option<StudyUnfinished>,
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
    /// Physical bytes of the workload's relation files (heap, indexes, TOAST, free space and
    /// visibility maps): the headline figure. On a compressing drive it is the drive's model
    /// applied to each file (`physical_split` holds the drive's whole change beside it); on
    /// other storage the estimator's prediction. Results written before the split: the drive's
    /// whole change.
    pub physical_bytes: Option<f64>,
    /// The logical bytes `physical_bytes` stands for (the relation files' bytes; before the split,
    /// the drive's logical counter's change).
    pub physical_of_logical_bytes: Option<f64>,
    /// Where `physical_bytes` comes from, e.g. "lz4 per 4 KiB of the relation files (zram0's
    /// algorithm)" or "estimated (deflate-fixed per 4 KiB)"; "unknown" when neither is available.
    pub physical_source: String,
    /// Whether `physical_bytes` is a prediction rather than a device counter.
    pub physical_estimated: bool,
    /// physical_of_logical_bytes / physical_bytes.
    pub ratio: Option<f64>,
    /// The drive's change over the load split into the relations, the WAL and the rest (file
    /// system, anything else the load left on the drive); null without a compressing drive's
    /// counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_split: Option<PhysicalSplit>,
    /// Every measured load at this fillfactor (`--repeat`; one by default): the row's load and
    /// space figures are their mean.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<StudyLoad>,
    /// Spread of `physical_bytes` over `loads`; null with one load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_spread: Option<Spread>,
    /// Spread of the drive's whole change (`physical_split.drive_bytes`) over `loads`; null with
    /// one load or without the drive's counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive_spread: Option<Spread>,
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

/// A fillfactor the study stopped in before its rows: the loads that finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StudyUnfinished {
    /// The fillfactor.
    pub fillfactor: u8,
    /// Measured loads asked for (`--repeat`).
    pub loads_planned: u32,
    /// The loads that finished, in order, each measured as a row's `loads` are.
    pub loads: Vec<StudyLoad>,
    /// What was cut short, e.g. "load 3 of 3 (interrupted)" or "the run step (interrupted)".
    pub stopped_in: String,
}

/// One measured load of a fillfactor (a study repeats it with `--repeat`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StudyLoad {
    /// Seconds the load took.
    pub load_s: f64,
    /// The workload's tables, indexes and TOAST after it, bytes.
    pub relation_bytes: i64,
    /// The relations' physical bytes (as the row's `physical_bytes`).
    pub physical_bytes: Option<f64>,
    /// The logical bytes they stand for.
    pub physical_of_logical_bytes: Option<f64>,
    /// The drive's change split (as the row's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_split: Option<PhysicalSplit>,
    /// WAL written during the load, bytes.
    pub load_wal_bytes: Option<i64>,
    /// pg_wal's growth over the load, bytes.
    pub wal_dir_growth_bytes: Option<i64>,
}

/// How far repeated measurements spread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Spread {
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Sample standard deviation (n - 1).
    pub stddev: f64,
}

impl Spread {
    /// The spread of `values`; None for fewer than two.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.len() < 2 {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        Some(Spread {
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            stddev: var.sqrt(),
        })
    }
}

/// Where a load's physical bytes went on a compressing drive: `drive_bytes` =
/// `relations_bytes` + `wal_bytes` + `rest_bytes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhysicalSplit {
    /// The drive's physical counter's change over the load (after the settle in `physical_method`), bytes.
    pub drive_bytes: f64,
    /// The drive's logical counter's change over the load, bytes.
    pub drive_logical_bytes: f64,
    /// The workload's relation files' physical bytes, by `method` (= the row's `physical_bytes`).
    pub relations_bytes: f64,
    /// The change of the WAL directory's physical bytes over the load, by `method`; null when
    /// the WAL directory is not readable here.
    pub wal_bytes: Option<f64>,
    /// What is left: drive_bytes - relations_bytes - wal_bytes (the file system's metadata and
    /// journal, blocks freed but not yet discarded, the drive's own overhead). Shown, not hidden.
    pub rest_bytes: f64,
    /// How the relations' and the WAL's physical bytes were measured, e.g. "lz4 per 4 KiB
    /// (zram0's algorithm), every page".
    pub method: String,
}

/// The run steps of one fillfactor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StudyRun {
    /// Table fillfactor.
    pub fillfactor: u8,
    /// One step per thread count.
    pub steps: Vec<DbStep>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_min_max_and_the_sample_standard_deviation() {
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::of(&[5.0]), None, "one value has no spread");
        let s = Spread::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!((s.min, s.max), (2.0, 9.0));
        // Sum of squared deviations 32 over n - 1 = 7.
        assert!((s.stddev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
    }
}
