//! Options of `csdchar db`: clap definitions and their validation.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use crate::args::{OutputFormat, bool_arg, duration_arg, percentile_arg};

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

/// `csdchar db` steps; each lists only the options it uses.
#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Create and load the workload's tables (sysbench's sbtest1..N, pgbench's, BenchmarkSQL's bmsql_, pgio's).
    Prepare(PrepareArgs),
    /// Run the workload (a --threads list runs a sweep). Without --url or --pgdata: on a temporary cluster, prepared first.
    Run(DbOpts),
    /// Drop the tables the workload creates in --schema, nothing else.
    Cleanup(CleanupArgs),
    /// Change existing sysbench tables: --fillfactor N, c/pad STORAGE PLAIN, VACUUM FULL ANALYZE.
    Alter(AlterArgs),
    /// tpcc: the TPC-C consistency conditions 1-4 (clause 3.3.2), each reported; exit 1 if one
    /// fails or the load is incomplete.
    Check(CheckArgs),
    /// For each --fillfactor (e.g. 100,70,50): load, checkpoint, measure logical and physical size
    /// (the drive's counters, or the estimator's prediction), run; one table of all.
    Study(DbOpts),
}

impl DbArgs {
    /// The step's name and every option, those the step does not take at their defaults.
    pub fn step(&self) -> (&'static str, DbOpts) {
        match &self.command {
            None => ("run", self.run.clone()),
            Some(DbCommand::Run(o)) => ("run", o.clone()),
            Some(DbCommand::Study(o)) => ("study", o.clone()),
            Some(DbCommand::Prepare(p)) => (
                "prepare",
                DbOpts {
                    server: p.server.clone(),
                    cluster: p.cluster.clone(),
                    tables: p.tables.clone(),
                    load: p.load.clone(),
                    threads: p.threads.clone(),
                    ..DbOpts::default()
                },
            ),
            Some(DbCommand::Check(c)) => (
                "check",
                DbOpts {
                    server: c.server.clone(),
                    tables: TablesArgs {
                        workload: c.workload.unwrap_or(defaults::<TablesArgs>().workload),
                        ..defaults()
                    },
                    ..DbOpts::default()
                },
            ),
            Some(DbCommand::Cleanup(c)) => (
                "cleanup",
                DbOpts {
                    server: c.server.clone(),
                    tables: c.tables.clone(),
                    ..DbOpts::default()
                },
            ),
            Some(DbCommand::Alter(a)) => (
                "alter",
                DbOpts {
                    server: a.server.clone(),
                    tables: a.tables.clone(),
                    load: LoadArgs {
                        fillfactor: vec![a.fillfactor],
                        ..defaults()
                    },
                    ..DbOpts::default()
                },
            ),
        }
    }
}

/// An option group at the defaults its clap attributes declare (the one place defaults are written).
fn defaults<T: clap::Args + clap::FromArgMatches>() -> T {
    let cmd = T::augment_args(clap::Command::new("defaults").no_binary_name(true));
    let m = cmd
        .try_get_matches_from(std::iter::empty::<String>())
        .expect("every option group parses with no arguments");
    T::from_arg_matches(&m).expect("defaults match the group")
}

/// Options of `run`, `study` and `csdchar db` alone: every group.
#[derive(Debug, Clone, Args)]
pub struct DbOpts {
    /// Which server.
    #[command(flatten)]
    pub server: ServerArgs,
    /// How a managed cluster serves.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Which tables.
    #[command(flatten)]
    pub tables: TablesArgs,
    /// How they are loaded.
    #[command(flatten)]
    pub load: LoadArgs,
    /// Clients.
    #[command(flatten)]
    pub threads: ThreadsArgs,
    /// How the workload runs.
    #[command(flatten)]
    pub run: RunArgs,
    /// pgbench custom scripts.
    #[command(flatten)]
    pub script: ScriptArgs,
    /// Where the result goes.
    #[command(flatten)]
    pub out: DbOutputArgs,
    /// Several load hosts (`db run --hosts FILE`).
    #[command(flatten)]
    pub fleet: crate::fleet_opts::FleetArgs,
}

impl Default for DbOpts {
    fn default() -> Self {
        defaults()
    }
}

impl DbOpts {
    /// The single fillfactor of prepare/run/alter.
    pub fn fillfactor(&self) -> Option<u8> {
        self.load.fillfactor.first().copied()
    }
}

/// `csdchar db prepare`.
#[derive(Debug, Clone, Args)]
pub struct PrepareArgs {
    /// Which server.
    #[command(flatten)]
    pub server: ServerArgs,
    /// How a managed cluster serves.
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Which tables.
    #[command(flatten)]
    pub tables: TablesArgs,
    /// How they are loaded.
    #[command(flatten)]
    pub load: LoadArgs,
    /// Loader connections.
    #[command(flatten)]
    pub threads: ThreadsArgs,
}

/// `csdchar db cleanup`.
#[derive(Debug, Clone, Args)]
pub struct CleanupArgs {
    /// Which server.
    #[command(flatten)]
    pub server: ServerArgs,
    /// Which tables.
    #[command(flatten)]
    pub tables: TablesArgs,
}

/// `csdchar db check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    /// Which server.
    #[command(flatten)]
    pub server: ServerArgs,
    /// The workload whose consistency conditions to check: tpcc (alias benchmarksql), the only
    /// one that has them.
    #[arg(long, value_enum)]
    pub workload: Option<WorkloadArg>,
}

/// `csdchar db alter`.
#[derive(Debug, Clone, Args)]
pub struct AlterArgs {
    /// Which server.
    #[command(flatten)]
    pub server: ServerArgs,
    /// Which tables.
    #[command(flatten)]
    pub tables: TablesArgs,
    /// New fillfactor of the tables (10-100).
    #[arg(long, required = true, value_parser = clap::value_parser!(u8).range(10..=100))]
    pub fillfactor: u8,
}

/// The server: a URL, or a cluster csdchar manages.
#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// Server to use (libpq URL or key=value; PG* variables fill the rest). The password is never printed.
    #[arg(long, env = "CSDCHAR_DB_URL")]
    pub url: Option<String>,
    /// Data directory of a cluster csdchar manages: created with initdb when empty or missing,
    /// started, or attached to when its server already runs.
    #[arg(long, conflicts_with = "url")]
    pub pgdata: Option<PathBuf>,
    /// Server binaries (default: pg_config, PATH, /usr/lib/postgresql/*/bin).
    #[arg(long, conflicts_with = "url")]
    pub pg_bin: Option<PathBuf>,
    /// Server setting for a managed cluster, repeatable (e.g. --pg-set shared_buffers=1GB).
    #[arg(long = "pg-set", value_name = "KEY=VALUE", conflicts_with = "url")]
    pub pg_set: Vec<String>,
    /// Leave the --pgdata cluster running afterwards (reachable through its private socket; the command to connect is printed).
    #[arg(long)]
    pub keep_running: bool,
    /// Database name.
    #[arg(long, default_value = "postgres")]
    pub db: String,
    /// Schema the tables are created in, looked up in and dropped from (created when missing).
    #[arg(long, default_value = "public")]
    pub schema: String,
}

/// How a cluster csdchar manages serves the steps that load and run
/// (prepare, run, study).
#[derive(Debug, Clone, Args)]
pub struct ClusterArgs {
    /// A managed cluster also listens on TCP at this address (e.g. 127.0.0.1), with a random password
    /// (scram-sha-256) kept in a 0600 file in the data directory. Default: Unix socket only.
    #[arg(long, value_name = "ADDR", conflicts_with = "url")]
    pub listen: Option<String>,
    /// Run a managed cluster's server in a memory cgroup of this size (page cache included; e.g. 64m),
    /// so the OS cannot absorb the database's reads (pgio); root only. Pages cached before the server
    /// started still serve it: add --drop-caches. Load without it (a small limit makes loads crawl).
    #[arg(long, value_name = "SIZE", value_parser = crate::args::size_arg, conflicts_with = "url")]
    pub pg_memory_limit: Option<u64>,
    /// With --listen: TLS on the TCP listener. A CA and server certificate of the cluster's own are
    /// made in the data directory (root.crt; the key 0600), the server runs with ssl=on and TCP
    /// logins must use TLS (pg_hba hostssl). The connection string clients use (with the port
    /// and sslmode=verify-full sslrootcert=PGDATA/root.crt) and its PGPASSFILE are printed.
    /// Not with --url: put sslmode in the connection string.
    #[arg(long, requires = "listen")]
    pub tls: bool,
}

/// The workload and its tables.
#[derive(Debug, Clone, Args)]
pub struct TablesArgs {
    /// The workload: a sysbench script, a pgbench script, BenchmarkSQL's TPC-C (tpcc, alias
    /// benchmarksql) or pgio.
    #[arg(long, value_enum, default_value = "oltp-read-write")]
    pub workload: WorkloadArg,
    /// sysbench workloads: tables sbtest1..N.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub tables: u32,
}

/// How the tables are loaded.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// sysbench workloads: rows per table.
    #[arg(long, default_value_t = 10_000, allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=2_000_000_000))]
    pub table_size: u64,
    /// tpcc: warehouses to load (BenchmarkSQL's warehouses); `run` takes the count from the tables.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub warehouses: Option<u32>,
    /// pgio: tables pgio1..N (pgio's NUM_SCHEMAS).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub schemas: u32,
    /// pgio: size of each table (pgio's SCALE, one row per 8 KiB block; e.g. 256m, 8g; at least 8m).
    #[arg(long, default_value = "64m", value_parser = crate::args::size_arg)]
    pub pgio_size: u64,
    /// pgio: run pgio's own PL/pgSQL loop on the server (one transaction = 100 operations)
    /// instead of csdchar's clients sending each operation.
    #[arg(long)]
    pub pgio_server_side: bool,
    /// tpcc prepare: resume a load cut short by loading only warehouses FROM-TO that are missing
    /// (into the tables it left, with the same --seed); keys and indexes are built afterwards.
    #[arg(long, value_name = "FROM-TO", value_parser = range_arg)]
    pub warehouse_range: Option<(u32, u32)>,
    /// tpcc prepare: copy (COPY over --threads connections, one transaction per warehouse) or insert
    /// (BenchmarkSQL 5.0's path for comparison: one connection, batched single-row INSERTs, commit every 10,000 rows).
    #[arg(long, value_enum, default_value = "copy")]
    pub load_method: LoadMethodArg,
    /// tpcb: pgbench's scale factor (100,000 accounts, 10 tellers, 1 branch per unit); `run` takes it from the tables.
    #[arg(long, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub scale: Option<u32>,
    /// Table fillfactor at prepare (10-100); `db study` takes a comma-separated list (default 100,70,50).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u8).range(10..=100))]
    pub fillfactor: Vec<u8>,
    /// db study only: measured loads per fillfactor; the table shows their mean and spread (min-max).
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// % of c/pad values drawn from 16 repeated strings (business-like, compressible data).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub string_dup: u8,
    /// Secondary index on k after loading: true or false (1/0, yes/no).
    #[arg(long, default_value = "true", value_parser = bool_arg, action = clap::ArgAction::Set)]
    pub create_secondary: bool,
    /// Seed of data and row ids.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// tpcb: where prepare generates rows.
    #[arg(long, value_enum, default_value = "client")]
    pub init_mode: InitModeArg,
    /// Replace the workload's existing tables (prepare, study).
    #[arg(long)]
    pub force: bool,
}

/// Client counts.
#[derive(Debug, Clone, Args)]
pub struct ThreadsArgs {
    /// Clients; a comma-separated list runs one step per count (e.g. 1,8,16,32); tpcc: terminals,
    /// pgio: clients per schema. prepare: loader connections.
    #[arg(short = 'c', long, value_delimiter = ',', default_value = "1", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub threads: Vec<u32>,
}

/// How the workload runs.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Duration of each step (e.g. 30s, 5m; at least 1s; pgbench's -T).
    #[arg(short = 'T', long, default_value = "10s", value_parser = duration_arg)]
    pub time: std::time::Duration,
    /// Run this long before each step's measured --time, counting nothing (sysbench's --warmup-time; e.g. 30s).
    #[arg(long, default_value = "0s", value_parser = duration_arg)]
    pub warmup: std::time::Duration,
    /// At most this many transactions per second, all clients together (sysbench's --rate; default: unlimited).
    #[arg(long, value_parser = rate_arg)]
    pub rate: Option<f64>,
    /// Interval lines every DURATION (sysbench's --report-interval; 0 = none).
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub report_interval: std::time::Duration,
    /// Rows per range select.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
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
    /// Row-id distribution.
    #[arg(long, value_enum, default_value = "uniform")]
    pub rand_type: RandArg,
    /// Latency percentiles of the summary, comma-separated; the first is the interval lines' one.
    #[arg(long, default_value = "95", value_delimiter = ',', value_parser = percentile_arg)]
    pub percentile: Vec<f64>,
    /// tpcc: transaction mix in percent, NEW_ORDER,PAYMENT,ORDER_STATUS,DELIVERY,STOCK_LEVEL summing to 100
    /// (BenchmarkSQL's sample properties: 45,43,4,4,4).
    #[arg(long, value_delimiter = ',', default_value = "45,43,4,4,4", value_parser = mix_arg)]
    pub mix: Vec<f64>,
    /// tpcc: how transactions are sent: BenchmarkSQL 5.0's statements from the client, one round trip
    /// each (its tpmC is comparable with BenchmarkSQL's), or one PL/pgSQL function call per transaction
    /// (HammerDB's way on PostgreSQL; the functions prepare creates).
    #[arg(long, value_enum, default_value = "statements")]
    pub tpcc_mode: TpccModeArg,
    /// pgio: updates per 100 operations (pgio's UPDATE_PCT: 0-50 or 100).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = update_pct_arg)]
    pub update_pct: u8,
    /// pgio: keys per select (pgio's WORK_UNIT).
    #[arg(long, default_value_t = 255, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub work_unit: u32,
    /// pgio: keys per update (pgio's UPDATE_WORK_UNIT).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub update_work_unit: u32,
    /// Drop the OS page cache (sync; echo 3 > /proc/sys/vm/drop_caches) before each step; root only.
    /// It does not keep the cache out during a step: --pg-memory-limit does.
    #[arg(long)]
    pub drop_caches: bool,
    /// Protocol (pgbench's -M); default: prepared for sysbench workloads, simple for tpcb and
    /// scripts, as the peers do.
    #[arg(short = 'M', long, value_enum)]
    pub protocol: Option<ProtocolArg>,
    /// Send each transaction's statements in one round trip (BEGIN … COMMIT
    /// pipelined, same statements and order; sysbench waits for each).
    #[arg(long)]
    pub pipeline: bool,
    /// After losing the connection (server restarted, backend killed), reconnect and
    /// restart the transaction, counting reconnects; without it the run stops with its partial result.
    #[arg(long)]
    pub reconnect: bool,
    /// Start the first step's clock at TIME: RFC 3339 (2026-05-01T14:30:00Z) or HH:MM[:SS] local
    /// time today, within the next 24 hours. Clients connect first, then wait (Ctrl-C ends the
    /// wait), so runs on several load hosts start at the same instant.
    #[arg(long, value_name = "TIME", value_parser = crate::args::start_at_arg)]
    pub start_at: Option<std::time::SystemTime>,
    /// With --start-at: how late the first step's clock may begin (its connecting overran the
    /// instant) before csdchar says so; the step records its lateness (`start`) either way.
    #[arg(long, value_name = "DURATION", default_value = "50ms", value_parser = crate::args::duration_arg)]
    pub start_late_limit: std::time::Duration,
    /// How the clients' connections are driven: threads (one OS thread and blocking socket per
    /// client), uring (a few threads, each with one io_uring and many connections; same
    /// statements, order and counting) or auto (per step, by client count and transport: uring
    /// from 8 clients per core over a Unix socket or TCP, from 4 over TLS, where the kernel
    /// allows it; threads below).
    #[arg(long, value_enum, default_value = "auto", env = "CSDCHAR_CLIENT_IO")]
    pub client_io: ClientIoArg,
    /// The io_uring driver's threads, each with one ring (default: one per 32 clients over a Unix
    /// socket, 8 over TCP, 4 over TLS, at most one per core); for --client-io uring, and auto
    /// where it picks uring.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub client_threads: Option<u32>,
}

/// `--client-io`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientIoArg {
    /// By the step's client count: uring from 8 clients per core up, threads below.
    Auto,
    /// One OS thread per client.
    Threads,
    /// io_uring: many clients per thread.
    Uring,
}

impl RunArgs {
    /// The run's client driver, as the runner takes it.
    pub fn client_io(&self) -> csdchar_dbloop::settings::ClientIoSettings {
        csdchar_dbloop::settings::ClientIoSettings {
            client_io: match self.client_io {
                ClientIoArg::Auto => csdchar_dbloop::settings::ClientIo::Auto,
                ClientIoArg::Threads => csdchar_dbloop::settings::ClientIo::Threads,
                ClientIoArg::Uring => csdchar_dbloop::settings::ClientIo::Uring,
            },
            client_threads: self.client_threads.map(|n| n as usize),
        }
    }
}

/// pgbench's script options (pgbench's names; csdchar's own where it has one: `--time`
/// is `-T`, `--threads` is `-c`, `--protocol` is `-M`, `--scale` is `-s`).
#[derive(Debug, Clone, Args)]
pub struct ScriptArgs {
    /// pgbench script FILE[@WEIGHT] (pgbench's -f; repeatable, `-` is stdin): run it instead of
    /// --workload, on tables you made, each client choosing a script per transaction by weight.
    #[arg(short = 'f', long = "file", value_name = "FILE[@W]")]
    pub files: Vec<String>,
    /// pgbench builtin NAME[@WEIGHT] (pgbench's -b: tpcb-like, simple-update, select-only, or an
    /// unambiguous prefix), run as a script beside the -f files; `:scale` then comes from
    /// pgbench_branches.
    #[arg(short = 'b', long = "builtin", value_name = "NAME[@W]")]
    pub builtins: Vec<String>,
    /// Script variable NAME=VALUE for every client (pgbench's -D; repeatable).
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE")]
    pub defines: Vec<String>,
    /// Scripts: transactions per client (pgbench's -t); the step ends when every client has
    /// run them (--time is then not used).
    #[arg(short = 't', long, value_parser = clap::value_parser!(u64).range(1..))]
    pub transactions: Option<u64>,
    /// Scripts: tries per transaction after serialization failures (40001) and deadlocks
    /// (40P01), with the same random values (pgbench's --max-tries; 1: no retry, 0: unlimited).
    #[arg(long, default_value_t = 1)]
    pub max_tries: u32,
    /// Scripts: seed of the clients' random states: an integer, `time` (the default) or `rand`
    /// (pgbench's --random-seed).
    #[arg(long, value_name = "SEED")]
    pub random_seed: Option<String>,
    /// Scripts: report serialization failures and deadlocks apart (pgbench's --failures-detailed).
    #[arg(long)]
    pub failures_detailed: bool,
    /// Scripts: a client's abort ends the run (pgbench 18's --exit-on-abort): the result so far
    /// is saved and the exit code is 1.
    #[arg(long)]
    pub exit_on_abort: bool,
    /// Scripts: every error and retry as a note (pgbench's --verbose-errors).
    #[arg(long)]
    pub verbose_errors: bool,
    /// Scripts: the tables to snapshot (and a study to measure), comma-separated; default: the
    /// tables the scripts name after FROM, JOIN, UPDATE, INTO, TABLE, TRUNCATE or LOCK.
    #[arg(long, value_delimiter = ',', value_name = "TABLE,...")]
    pub script_tables: Vec<String>,
    /// Scripts: write pgbench's transaction log of each client (pgbench's -l): PREFIX.PID for
    /// client 0, PREFIX.PID.N for client N (pgbench's per-thread files with -j = -c), in the
    /// current directory, under the output rule.
    #[arg(short = 'l', long)]
    pub log: bool,
    /// Scripts: the log files' prefix (pgbench's --log-prefix).
    #[arg(long, default_value = "pgbench_log")]
    pub log_prefix: String,
    /// Scripts: one log line per this many seconds instead of one per transaction (pgbench's
    /// --aggregate-interval; with --log).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub aggregate_interval: Option<u64>,
    /// Scripts: log this fraction of the transactions, 0 < RATE <= 1 (pgbench's --sampling-rate;
    /// with --log, not with --aggregate-interval).
    #[arg(long, value_name = "RATE")]
    pub sampling_rate: Option<f64>,
    /// Scripts: SQL FILE that creates and fills the scripts' tables (one simple query; e.g. a
    /// pg_dump of them): `db study` runs it at each load, then sets each table's --fillfactor
    /// (ALTER TABLE … SET (fillfactor), VACUUM FULL); without it a study of a script is refused.
    #[arg(long, value_name = "FILE")]
    pub script_init: Option<PathBuf>,
    /// Scripts: the pgbench major whose rules apply where they differ (15 or 18: \syncpipeline).
    #[arg(long, default_value_t = 18, value_parser = clap::value_parser!(u32).range(15..=18))]
    pub pgbench_version: u32,
}

impl ScriptArgs {
    /// Whether scripts were given.
    pub fn given(&self) -> bool {
        !self.files.is_empty() || !self.builtins.is_empty()
    }
}

/// Where the result goes.
#[derive(Debug, Clone, Args)]
pub struct DbOutputArgs {
    /// normal: the peers' summaries and interval lines; json: the csdchar.db/1 (study: csdchar.study/1) result.
    #[arg(long, value_enum, default_value = "normal")]
    pub output_format: OutputFormat,
    /// Write the result to FILE instead of stdout.
    #[arg(long)]
    pub output: Option<PathBuf>,
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
    /// BenchmarkSQL 5.x's TPC-C, alias benchmarksql (bmsql_ tables, --warehouses, --threads = terminals)
    #[value(alias = "benchmarksql")]
    Tpcc,
    /// pgio (SLOB for PostgreSQL): random block reads past shared_buffers (--schemas, --pgio-size, --threads per schema)
    Pgio,
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

/// How tpcc prepare sends rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoadMethodArg {
    /// COPY over several connections.
    Copy,
    /// Batched single-row INSERTs on one connection (BenchmarkSQL 5.0's loader).
    Insert,
}

/// How tpcc sends its transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TpccModeArg {
    /// BenchmarkSQL 5.0's statements, one round trip each; needs no function of csdchar's.
    Statements,
    /// One function call per transaction (created when missing).
    Procedures,
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

/// `--update-pct`: pgio's UPDATE_PCT, 0-50 or 100.
fn update_pct_arg(s: &str) -> Result<u8, String> {
    let pct: u8 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage: use 0 to 50, or 100"))?;
    csdchar_core::pgio::check_update_pct(pct)?;
    Ok(pct)
}

fn range_arg(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("'{s}' is not FROM-TO (warehouse numbers, 1 <= FROM <= TO)");
    let (a, b) = s.split_once('-').ok_or_else(bad)?;
    match (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
        (Ok(a), Ok(b)) if a >= 1 && a <= b => Ok((a, b)),
        _ => Err(bad()),
    }
}

fn mix_arg(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!("'{s}' is not a percentage from 0 to 100")),
    }
}

fn rate_arg(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(r) if r > 0.0 && r.is_finite() => Ok(r),
        _ => Err(format!(
            "'{s}' is not a rate (transactions per second above 0)"
        )),
    }
}
