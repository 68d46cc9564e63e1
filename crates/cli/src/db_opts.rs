//! Options of `csdchar db`: clap definitions and their validation.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use crate::opts::{OutputFormat, bool_arg, duration_arg, percentile_arg};

/// `csdchar db [STEP] [OPTIONS]`: without a step, `run`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct DbArgs {
    /// The step; none is `run`.
    #[command(subcommand)]
    pub command: Option<DbCommand>,
    /// Options of `run` when no step is named.
    #[command(flatten)]
    pub run: DbOpts,
}

/// `csdchar db` steps.
#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Create and load the tables (sbtest1..N).
    Prepare(DbOpts),
    /// Run the workload (a --threads list runs a sweep). Without --url or --pgdata: on a temporary cluster, prepared first.
    Run(DbOpts),
    /// Drop the tables the workload creates, nothing else.
    Cleanup(DbOpts),
    /// Change existing tables: --fillfactor N, c/pad STORAGE PLAIN, VACUUM FULL ANALYZE.
    Alter(DbOpts),
    /// For each --fillfactor (e.g. 100,70,50): load, checkpoint, measure logical and physical size
    /// (the drive's counters, or the estimator's prediction), run; one table of all.
    Study(DbOpts),
}

impl DbOpts {
    /// The single fillfactor of prepare/run/alter.
    pub fn fillfactor(&self) -> Option<u8> {
        self.fillfactor.first().copied()
    }
}

/// sysbench's and pgbench's scripts; their own spellings (`oltp_read_write`,
/// `tpcb-like`, `select-only`) are accepted too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WorkloadArg {
    /// oltp_read_only
    #[value(alias = "oltp_read_only")]
    OltpReadOnly,
    /// oltp_read_write
    #[value(alias = "oltp_read_write")]
    OltpReadWrite,
    /// oltp_write_only
    #[value(alias = "oltp_write_only")]
    OltpWriteOnly,
    /// oltp_point_select
    #[value(alias = "oltp_point_select")]
    OltpPointSelect,
    /// oltp_update_index
    #[value(alias = "oltp_update_index")]
    OltpUpdateIndex,
    /// oltp_update_non_index
    #[value(alias = "oltp_update_non_index")]
    OltpUpdateNonIndex,
    /// oltp_insert
    #[value(alias = "oltp_insert")]
    OltpInsert,
    /// oltp_delete
    #[value(alias = "oltp_delete")]
    OltpDelete,
    /// pgbench's tpcb-like (the default script)
    #[value(alias = "tpcb-like")]
    Tpcb,
    /// pgbench's simple-update (-N)
    #[value(alias = "simple-update")]
    TpcbSimpleUpdate,
    /// pgbench's select-only (-S)
    #[value(alias = "select-only")]
    TpcbSelectOnly,
}

impl WorkloadArg {
    /// One of pgbench's scripts (tables pgbench_*, --scale).
    pub fn is_tpcb(self) -> bool {
        matches!(
            self,
            WorkloadArg::Tpcb | WorkloadArg::TpcbSimpleUpdate | WorkloadArg::TpcbSelectOnly
        )
    }
}

/// pgbench's -M.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtocolArg {
    /// Query messages with literal values (pgbench's default).
    Simple,
    /// Unnamed Parse/Bind/Execute every time.
    Extended,
    /// Named statements prepared once per connection (sysbench's way).
    Prepared,
}

/// How prepare makes pgbench's rows (pgbench's init steps g and G).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InitModeArg {
    /// csdchar generates rows and sends them with binary COPY.
    Client,
    /// INSERT ... SELECT generate_series on the server.
    Server,
}

/// sysbench's --rand-type choices implemented so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RandArg {
    /// Uniform (the published runs' choice).
    Uniform,
    /// Mean of 12 uniforms.
    Gaussian,
    /// sysbench 1.0's default: 75% of ids in the central 1% of the range.
    Special,
    /// Pareto, h = 0.2.
    Pareto,
    /// Zipf, exponent 0.8 (sysbench HEAD).
    Zipfian,
}

/// Options of `csdchar db`, with sysbench's names.
#[derive(Debug, Args)]
pub struct DbOpts {
    /// Server to use (libpq URL or key=value; PG* variables fill the rest). The password is never printed.
    #[arg(long, env = "CSDCHAR_DB_URL")]
    pub url: Option<String>,
    /// Data directory of a cluster csdchar manages (created with initdb when empty).
    #[arg(long, conflicts_with = "url")]
    pub pgdata: Option<PathBuf>,
    /// Server binaries (default: pg_config, PATH, /usr/lib/postgresql/*/bin).
    #[arg(long)]
    pub pg_bin: Option<PathBuf>,
    /// Server setting for a managed cluster, repeatable (e.g. --pg-set shared_buffers=1GB).
    #[arg(long = "pg-set")]
    pub pg_set: Vec<String>,
    /// Leave a --pgdata cluster running afterwards.
    #[arg(long)]
    pub keep_running: bool,
    /// Database name.
    #[arg(long, default_value = "postgres")]
    pub db: String,
    /// sysbench script.
    #[arg(long, value_enum, default_value = "oltp-read-write")]
    pub workload: WorkloadArg,
    /// Tables.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub tables: u32,
    /// Rows per table.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=2_000_000_000))]
    pub table_size: u64,
    /// Clients; a comma-separated list runs one step per count (e.g. 1,8,16,32).
    #[arg(long, value_delimiter = ',', default_value = "1", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub threads: Vec<u32>,
    /// Seconds per step.
    #[arg(long, default_value = "10s", value_parser = duration_arg)]
    pub time: std::time::Duration,
    /// Interval lines every DURATION (sysbench's --report-interval; 0 = none).
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub report_interval: std::time::Duration,
    /// Rows per range select.
    #[arg(long, default_value_t = 100)]
    pub range_size: u64,
    /// Point selects per transaction.
    #[arg(long, default_value_t = 10)]
    pub point_selects: u32,
    /// Simple ranges per transaction.
    #[arg(long, default_value_t = 1)]
    pub simple_ranges: u32,
    /// SUM ranges per transaction.
    #[arg(long, default_value_t = 1)]
    pub sum_ranges: u32,
    /// ORDER BY ranges per transaction.
    #[arg(long, default_value_t = 1)]
    pub order_ranges: u32,
    /// DISTINCT ranges per transaction.
    #[arg(long, default_value_t = 1)]
    pub distinct_ranges: u32,
    /// Index updates per transaction.
    #[arg(long, default_value_t = 1)]
    pub index_updates: u32,
    /// Non-index updates per transaction.
    #[arg(long, default_value_t = 1)]
    pub non_index_updates: u32,
    /// Delete + insert pairs per transaction.
    #[arg(long, default_value_t = 1)]
    pub delete_inserts: u32,
    /// No BEGIN/COMMIT.
    #[arg(long)]
    pub skip_trx: bool,
    /// Secondary index on k after prepare (true/false).
    #[arg(long, default_value = "true", value_parser = bool_arg)]
    pub create_secondary: bool,
    /// Row-id distribution.
    #[arg(long, value_enum, default_value = "uniform")]
    pub rand_type: RandArg,
    /// Latency percentiles of the summary, comma-separated; the first is the interval lines' one.
    #[arg(long, default_value = "95", value_delimiter = ',', value_parser = percentile_arg)]
    pub percentile: Vec<f64>,
    /// tpcb: pgbench's scale factor (100,000 accounts, 10 tellers, 1 branch per unit).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub scale: u32,
    /// Protocol (pgbench's -M); default: prepared for sysbench workloads, simple for tpcb, as the peers do.
    #[arg(long, value_enum)]
    pub protocol: Option<ProtocolArg>,
    /// tpcb prepare: where rows are generated.
    #[arg(long, value_enum, default_value = "client")]
    pub init_mode: InitModeArg,
    /// Send each transaction's statements in one round trip (BEGIN … COMMIT
    /// pipelined, same statements and order; sysbench waits for each).
    #[arg(long)]
    pub pipeline: bool,
    /// After losing the connection (server restarted, backend killed), reconnect and
    /// restart the transaction, counting reconnects; without it the run stops with its partial result.
    #[arg(long)]
    pub reconnect: bool,
    /// Table fillfactor at prepare (10-100); `db study` takes a list (default 100,70,50).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u8).range(10..=100))]
    pub fillfactor: Vec<u8>,
    /// % of c/pad values drawn from 16 repeated strings (business-like, compressible data).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub string_dup: u8,
    /// Seed of data and row ids.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// prepare: replace existing tables.
    #[arg(long)]
    pub force: bool,
    /// Output format of run.
    #[arg(long, value_enum, default_value = "normal")]
    pub output_format: OutputFormat,
    /// Write run's result to FILE.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_take_sysbench_and_pgbench_spellings() {
        for (ours, theirs) in [
            ("oltp-read-write", "oltp_read_write"),
            ("oltp-update-non-index", "oltp_update_non_index"),
            ("tpcb", "tpcb-like"),
            ("tpcb-simple-update", "simple-update"),
            ("tpcb-select-only", "select-only"),
        ] {
            let a = WorkloadArg::from_str(ours, false).unwrap();
            assert_eq!(WorkloadArg::from_str(theirs, false), Ok(a), "{theirs}");
        }
        assert!(WorkloadArg::from_str("oltp_read_writ", false).is_err());
    }
}
