//! `csdchar.db/1`: the result of `csdchar db run` — one step per thread count.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ToolInfo;
use crate::stats::LatencyStats;

/// Schema identifier of database results.
pub const DB_SCHEMA: &str = "csdchar.db/1";

/// The result of `csdchar db run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DbResult {
    /// Always "csdchar.db/1".
    pub schema: String,
    /// Program that produced the result.
    pub tool: ToolInfo,
    /// When the run started, RFC 3339 UTC.
    pub started_at: String,
    /// Where the database came from: "url", "pgdata" or "ephemeral" (the URL itself is never recorded).
    pub server: String,
    /// Server version string (`SHOW server_version`).
    pub server_version: String,
    /// The server as csdchar's probe found it at connect: product (PostgreSQL or openGauss),
    /// version, database, compatibility mode, and which catalog features the snapshots and
    /// loaders used or went without (absent in results written before this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_dialect: Option<String>,
    /// The workload as run, in sysbench's terms.
    pub spec: DbSpec,
    /// One step per thread count of the sweep.
    pub steps: Vec<DbStep>,
    /// Whether the run was stopped early (Ctrl-C or an error).
    pub interrupted: bool,
    /// The error that stopped the run, if any.
    pub error: Option<String>,
}

/// The workload, with sysbench's option names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DbSpec {
    /// sysbench script name (oltp_read_write, …) or pgbench's (tpcb-like, simple-update, select-only).
    pub workload: String,
    /// Tables: sysbench's sbtest1..N, or pgbench's 4; absent for TPC-C and pgio (see
    /// `warehouses` and `pgio`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<u32>,
    /// Rows per table (tpcb: pgbench_accounts rows); absent for TPC-C and pgio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_size: Option<u64>,
    /// pgbench's scale factor (tpcb workloads; null for sysbench's).
    pub scale: Option<u32>,
    /// Protocol: "simple", "extended" or "prepared" (pgbench's -M; sysbench uses prepared).
    pub protocol: String,
    /// Seconds per step.
    pub time_s: f64,
    /// sysbench: rows per range select; absent for the other workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_size: Option<u64>,
    /// sysbench: statements per transaction and switches, with sysbench's names; absent for
    /// the other workloads.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub options: Option<crate::oltp::OltpOptions>,
    /// Row-id distribution.
    pub rand_type: String,
    /// Table fillfactor at prepare (null: PostgreSQL's default, 100).
    pub fillfactor: Option<u8>,
    /// sysbench: % of c/pad values drawn from a small repeated set; absent for the other workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string_dup: Option<u8>,
    /// Latency percentiles of the summary (`--percentile`); the first is the one in the interval series.
    pub percentiles: Vec<f64>,
    /// Whether BEGIN … COMMIT blocks were sent in one round trip (`--pipeline`); sysbench waits for each statement.
    pub pipeline: bool,
    /// Whether lost connections were re-established (`--reconnect`).
    pub reconnect: bool,
    /// Seconds each step ran before its measured time, uncounted (`--warmup`).
    #[serde(default)]
    pub warmup_s: f64,
    /// Transactions per second the clients were limited to, all together (`--rate`); null: unlimited.
    #[serde(default)]
    pub rate: Option<f64>,
    /// The database schema the tables live in (`--schema`).
    #[serde(default = "default_db_schema")]
    pub db_schema: String,
    /// TPC-C: warehouses (taken from the tables); null for other workloads.
    #[serde(default)]
    pub warehouses: Option<u32>,
    /// TPC-C: the transaction mix in percent by transaction type (new_order, payment, …); empty for other workloads.
    #[serde(default)]
    pub mix: BTreeMap<String, f64>,
    /// TPC-C: how the transactions were sent: `statements` (BenchmarkSQL 5.0's statements from the
    /// client, one round trip each; tpmC comparable with BenchmarkSQL's) or `procedures` (one
    /// PL/pgSQL function call per transaction, HammerDB's way on PostgreSQL); null for other
    /// workloads and for results written before the choice existed (procedures then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpcc_mode: Option<String>,
    /// pgio: its parameters; null for other workloads.
    #[serde(default)]
    pub pgio: Option<PgioParams>,
    /// What kept the OS page cache from absorbing the database's reads: e.g.
    /// "server memory limit 256.00MiB (cgroup v1)", "caches dropped before each step"; null: nothing.
    #[serde(default)]
    pub cache_control: Option<String>,
    /// The instant the first step's clients were asked to start (`--start-at`), RFC 3339 UTC
    /// with milliseconds: they connect, then wait for it, so runs on several load hosts start
    /// together; later steps follow as soon as the one before ends. Absent: started at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// How the clients' connections were to be driven (`--client-io`): "threads" (one OS thread
    /// and blocking socket per client, like sysbench and pgbench), "uring" (a few threads, each
    /// with one io_uring and many connections) or "auto" (by each step's client count and
    /// transport; the step's `client_io` and `transport` say which). Absent in results written before the choice existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_io: Option<String>,
    /// io_uring driver threads asked for (`--client-threads`); absent: the default (one per
    /// 32 clients over a Unix socket, 8 over TCP, 4 over TLS, at most one per core). Each step's
    /// `client_threads` says what it ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_threads: Option<u32>,
    /// pgbench custom scripts (`-f`, `-b`): the scripts and options; absent for the other
    /// workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<super::script::ScriptParams>,
}

/// pgio's parameters, with its names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PgioParams {
    /// NUM_SCHEMAS: tables pgio1..N.
    pub schemas: u32,
    /// SCALE: 8 KiB blocks (and rows) per table.
    pub blocks_per_schema: u64,
    /// UPDATE_PCT: updates per 100 operations.
    pub update_pct: u8,
    /// WORK_UNIT: keys per select.
    pub work_unit: u32,
    /// UPDATE_WORK_UNIT: keys per update.
    pub update_work_unit: u32,
    /// Whether pgio's server-side PL/pgSQL loop ran (one transaction = one call of 100 operations)
    /// instead of csdchar's clients issuing each operation.
    pub server_side: bool,
}

fn default_db_schema() -> String {
    "public".into()
}

/// One thread count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DbStep {
    /// Clients (threads).
    pub threads: u32,
    /// Measured seconds.
    pub elapsed_s: f64,
    /// Transactions.
    pub transactions: u64,
    /// Statements that returned rows (sysbench "read").
    pub reads: u64,
    /// Statements that changed rows (sysbench "write").
    pub writes: u64,
    /// Other statements (BEGIN, COMMIT, ROLLBACK, updates that matched nothing).
    pub others: u64,
    /// Transactions per second.
    pub tps: f64,
    /// Statements per second.
    pub qps: f64,
    /// Ignored errors by SQLSTATE (40P01, 23505, 40001), each followed by a retry.
    pub errors: BTreeMap<String, u64>,
    /// Reconnects.
    pub reconnects: u64,
    /// Transactions that ended in an intended rollback (TPC-C's 1% of New-Orders); included in `transactions`.
    #[serde(default)]
    pub rollbacks: u64,
    /// TPC-C: New-Order transactions per minute of measured time, rollbacks included (BenchmarkSQL's count); null for other workloads.
    #[serde(default)]
    pub tpmc: Option<f64>,
    /// TPC-C: transactions of every type per minute (BenchmarkSQL's tpmTOTAL); null for other workloads.
    #[serde(default)]
    pub tpm_total: Option<f64>,
    /// Per transaction type (TPC-C's five), in the workload's order; empty for one-type workloads.
    #[serde(default)]
    pub by_type: Vec<DbTxType>,
    /// Database misses next to device I/O over the measured time (null when not sampled).
    #[serde(default)]
    pub io: Option<IoRates>,
    /// Transaction latency, retries included, ns.
    pub latency: LatencyStats,
    /// Per-interval series.
    pub intervals: Vec<DbInterval>,
    /// The client driver that ran this step: "threads" or "uring" (`spec.client_io` "auto"
    /// resolved). Absent in results written before the choice existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_io: Option<String>,
    /// io_uring driver threads this step ran on (each with one ring); absent when it ran on
    /// the threads driver (one OS thread per client) or in results written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_threads: Option<u32>,
    /// What the clients' connections travelled over: "unix" (a Unix socket), "tcp" or "tls"
    /// (TCP with TLS). `spec.client_io` "auto" decides by it (the ring's advantage differs per
    /// transport). Absent in results written before the choice depended on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The TLS protocol the clients' connections negotiated (e.g. "TLSv1.3"); absent for plain
    /// connections and in results written before csdchar spoke TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_protocol: Option<String>,
    /// The TLS cipher suite they negotiated (e.g. "TLS13_AES_256_GCM_SHA384"); absent as above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_cipher: Option<String>,
    /// With `--start-at`, on the step that waited for it (the first): when its clock (warm-up
    /// first) really began and how late; absent otherwise and in results written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<super::StartRecord>,
    /// pgbench custom scripts: failures, retries, aborted clients, per script and per
    /// statement; absent for the other workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<super::script::ScriptStep>,
    /// Database and device state before the step.
    pub before: Option<DbSnapshot>,
    /// Database and device state after the step.
    pub after: Option<DbSnapshot>,
}

/// The physical-I/O correlation between two moments: the database's
/// shared-buffer misses (pgio's RIOPS) next to the drive's reads and writes
/// (diskstats) and, on a compressing drive, its logical and physical bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IoRates {
    /// pgio's RIOPS: shared-buffer misses per second (Δblks_read / s).
    pub riops: f64,
    /// Shared-buffer hits per second.
    pub hits_per_s: f64,
    /// Device reads per second.
    pub dev_read_iops: Option<f64>,
    /// Device read bytes per second.
    pub dev_read_bytes_per_s: Option<f64>,
    /// Mean device read latency, ms (Δread ticks / Δreads; None without reads).
    pub dev_read_latency_ms: Option<f64>,
    /// Device writes per second.
    pub dev_write_iops: Option<f64>,
    /// Device write bytes per second.
    pub dev_write_bytes_per_s: Option<f64>,
    /// Mean device write latency, ms.
    pub dev_write_latency_ms: Option<f64>,
    /// Device reads per shared-buffer miss (dev_read_iops / riops): 1.0 when
    /// every miss reached the device as one read; below 1 the page cache
    /// absorbed the rest (or the kernel merged reads); above 1 readahead or
    /// other processes added reads. None without misses or a device.
    pub reads_per_miss: Option<f64>,
    /// Logical bytes on the device at the later sample.
    pub logical_bytes: Option<u64>,
    /// Physical bytes on the device at the later sample.
    pub physical_bytes: Option<u64>,
    /// Change of logical bytes between the samples.
    pub logical_delta_bytes: Option<i64>,
    /// Change of physical bytes between the samples.
    pub physical_delta_bytes: Option<i64>,
}

/// One transaction type of a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DbTxType {
    /// Its name (new_order, payment, order_status, delivery, stock_level).
    pub name: String,
    /// Transactions completed, rollbacks included.
    pub transactions: u64,
    /// Of those, intended rollbacks.
    pub rollbacks: u64,
    /// Share of all the step's transactions, percent.
    pub share_pct: f64,
    /// Latency of this type, retries included, ns (HDR histogram, no cap).
    pub latency: LatencyStats,
}

/// What the database and its drive looked like at one moment — the figures
/// that tie TPS to space and I/O.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DbSnapshot {
    /// When it was taken, RFC 3339 UTC.
    pub taken_at: String,
    /// `pg_database_size` of the current database, bytes.
    pub database_bytes: i64,
    /// Sizes of the workload's tables.
    pub relations: Vec<RelationSize>,
    /// `pg_stat_database` counters of the current database (blks_read, blks_hit, xact_commit, tup_*, …).
    pub stat_database: BTreeMap<String, i64>,
    /// WAL position in bytes (`pg_current_wal_lsn() - '0/0'`); null on a standby.
    pub wal_lsn_bytes: Option<i64>,
    /// `pg_stat_bgwriter` (and, from PostgreSQL 17, `pg_stat_checkpointer`) counters.
    pub bgwriter: BTreeMap<String, i64>,
    /// The server's data directory, when it could be read.
    pub data_directory: Option<String>,
    /// Capacity counters of the drive holding the data directory, when it is local.
    pub device: Option<crate::capacity::CapacitySnapshot>,
}

/// One table and its satellites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RelationSize {
    /// Table name.
    pub name: String,
    /// Main fork, bytes.
    pub table_bytes: i64,
    /// All indexes, bytes.
    pub index_bytes: i64,
    /// TOAST table and its index, bytes.
    pub toast_bytes: i64,
}

/// One report interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DbInterval {
    /// Seconds since the step started, at the interval's end.
    pub t_s: f64,
    /// Transactions per second.
    pub tps: f64,
    /// Statements per second.
    pub qps: f64,
    /// Reads per second.
    pub reads_per_s: f64,
    /// Writes per second.
    pub writes_per_s: f64,
    /// Others per second.
    pub others_per_s: f64,
    /// The spec's first latency percentile over the interval's transactions, ms.
    pub lat_pct_ms: f64,
    /// Ignored errors per second.
    pub errors_per_s: f64,
    /// The interval's transaction latency histogram, all clients together, lossless: values in
    /// ns, 2 significant digits (1 % error), 1 ns to 1 h, in HdrHistogram's standard V2 compressed
    /// (deflate) encoding, base64 (starts with "HISTF"; HdrHistogram's tools read it).
    /// Absent in results written before csdchar stored histograms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_hdr_histogram: Option<String>,
    /// Database misses next to device I/O over the interval (null when not sampled).
    #[serde(default)]
    pub io: Option<IoRates>,
}
