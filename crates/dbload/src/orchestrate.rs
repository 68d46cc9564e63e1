//! The database steps as library calls — prepare, run, alter,
//! cleanup and check — for `csdchar db`, campaigns and tests alike. Each
//! takes the server, a [`DbJob`] and a [`DbObserver`] that hears what happens
//! as it happens (notes, load progress, interval samples, finished steps), and
//! returns the result, or a [`JobError`] carrying whatever was measured before
//! it stopped. Nothing here prints.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use csdchar_core::result::ToolInfo;
use csdchar_core::result::db::{DB_SCHEMA, DbInterval, DbResult, DbStep, DbTxType};

use crate::job::DbJob;
use crate::session::DbServer;
use csdchar_dbloop::event::Protocol;
use csdchar_dbloop::runner;
use csdchar_dbloop::runner::{OltpInterval, OltpOutcome};
use csdchar_dbloop::settings::RunSettings;
use csdchar_pgwire::client;
use csdchar_pgwire::client::Client;
use csdchar_pgwire::error::DbErrorKind;
use csdchar_workloads::bench::Bench;
use csdchar_workloads::catalog;
use csdchar_workloads::oltp;
use csdchar_workloads::pgio::{self, PgioSpec};
use csdchar_workloads::tpcb::{self, TpcbSpec};
use csdchar_workloads::tpcc::{self, TpccSpec};

/// Unmeasured loads before a study's first measured one. Measured on a fresh
/// cluster (zram+ext4, default WAL settings, 2 x 150,000 sysbench rows): after
/// one, the first measured load still came out 12% above the same load
/// measured later; after two, within 1%.
pub const WARMUP_LOADS: usize = 2;

/// Where loaders count the rows they wrote (called from their threads).
pub type LoadProgress = Arc<dyn Fn(u64) + Send + Sync>;

/// Something the caller should know: what a run took from the tables
/// instead of what it was asked, or why its figures may mislead.
#[derive(Debug, Clone, PartialEq)]
pub enum DbNote {
    /// A line a pgbench script's client would write to stderr (`debug()`,
    /// `--verbose-errors`, a failed prepare).
    ScriptMessage(String),
    /// pgbench's scale is the count of pgbench_branches, not the one given.
    ScaleFromTables {
        /// The scale asked for.
        given: u32,
        /// The tables' scale, which the run uses.
        found: u32,
    },
    /// TPC-C's warehouses are those bmsql_config records, not the count given.
    WarehousesFromTables {
        /// The warehouses asked for.
        given: u32,
        /// The tables' warehouses, which the run uses.
        found: u32,
    },
    /// The tables have another fillfactor than the one given (the result records theirs).
    FillfactorFromTables {
        /// The fillfactor asked for.
        given: u8,
        /// The tables' fillfactor.
        found: u8,
    },
    /// pgio's tables hold another size than the one given (the run draws
    /// keys from, and the result records, theirs).
    PgioSizeFromTables {
        /// The blocks per schema asked for.
        given: u64,
        /// The blocks per schema the tables hold.
        found: u64,
    },
    /// `--client-threads` did not apply as given to a step: more driver
    /// threads than clients, or the threads driver chosen by `auto`.
    ClientThreadsAdjusted {
        /// The io_uring driver threads asked for.
        given: u32,
        /// The step's clients.
        clients: u32,
        /// The driver threads it ran on; None: on the threads driver.
        used: Option<u32>,
    },
    /// Memory could serve the reads pgio means to measure on the drive.
    CacheWarning(String),
    /// The first step's clock began later after `--start-at` than its limit allows.
    LateStart(csdchar_core::result::StartRecord),
    /// What a study is about to do, before it starts: its loads (the
    /// unmeasured warm-up ones and `fillfactors` x `repeat` measured ones)
    /// and its run steps; their length is known, the loads' is not yet.
    StudyPlan {
        /// Fillfactors studied.
        fillfactors: usize,
        /// Measured loads per fillfactor (`--repeat`).
        repeat: u32,
        /// Unmeasured warm-up loads first.
        warmup_loads: usize,
        /// Run steps (fillfactors x thread counts).
        run_steps: usize,
        /// Seconds each run step takes (its warm-up and measured time).
        step_s: f64,
    },
    /// A study's first load finished: the whole study's time, estimated
    /// from it (every load taken as long as the first, which loads the most
    /// when there is a warm-up at the lowest fillfactor).
    StudyEstimate {
        /// Seconds the first load took.
        first_load_s: f64,
        /// Loads in all, the first included.
        loads: usize,
        /// Estimated seconds from the study's start to its end.
        total_s: f64,
    },
    /// TPC-C procedure mode: the transaction functions were missing from
    /// the schema and were created.
    TpccFunctionsCreated {
        /// The schema.
        schema: String,
        /// The functions that were missing.
        missing: Vec<String>,
    },
}

/// Hears what a job does while it does it; every method defaults to nothing.
pub trait DbObserver {
    /// A note (see [`DbNote`]).
    fn note(&mut self, _note: &DbNote) {}
    /// The step's clients connect, then wait for this instant (`--start-at`)
    /// before the clock starts.
    fn waiting_until(&mut self, _at: std::time::SystemTime) {}
    /// A load of about `total_rows` rows starts; the returned function is
    /// called, from the loaders' threads, with each batch of rows written.
    fn load_started(&mut self, _bench: &Bench, _total_rows: u64) -> LoadProgress {
        Arc::new(|_| {})
    }
    /// A load ended, as [`prepare`] returns it (also each of a study's loads).
    fn load_ended(&mut self, _bench: &Bench, _end: &Result<LoadReport, LoadError>) {}
    /// A study's unmeasured warm-up starts: `loads` loads at `fillfactor`.
    fn warmup_started(&mut self, _loads: usize, _fillfactor: u8) {}
    /// A failure outside a load that the job records and goes past (the
    /// result's error then names the part of the job it broke).
    fn failed(&mut self, _message: &str) {}
    /// A run step starts: `threads` as given (pgio: per schema), `clients` connections, for `time`.
    fn step_started(&mut self, _bench: &Bench, _threads: u32, _clients: u32, _time: Duration) {}
    /// One report interval of the running step (only with a report interval).
    fn interval(&mut self, _bench: &Bench, _interval: &OltpInterval, _clients: u32) {}
    /// A run step ended; `protocol` is the one it ran with.
    fn step_finished(&mut self, _bench: &Bench, _step: &DbStep, _protocol: Protocol) {}
    /// `alter` finished rewriting `table` at `fillfactor`, `elapsed` after it began.
    fn table_altered(&mut self, _table: &str, _fillfactor: u8, _elapsed: Duration) {}
    /// A script step's `-l` logs: each client's text (client id, text), in client order.
    fn script_logs(&mut self, _clients: u32, _logs: &[(usize, Vec<u8>)]) {}
}

/// An observer that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl DbObserver for Quiet {}

/// What a finished load did.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// Rows the load was to write.
    pub total_rows: u64,
    /// Rows the loaders reported.
    pub loaded_rows: u64,
    /// Seconds from start to end.
    pub elapsed_s: f64,
    /// The tables' fillfactor.
    pub fillfactor: Option<u8>,
    /// Seconds per phase, where the peer reports them.
    pub phases: LoadPhases,
}

/// Seconds per load phase, as the peer tools report them.
#[derive(Debug, Clone)]
pub enum LoadPhases {
    /// sysbench and pgio report none.
    None,
    /// pgbench's init steps.
    Tpcb(tpcb::LoadTimes),
    /// The TPC-C loader's phases and what it loaded.
    Tpcc(tpcc::TpccLoadTimes),
}

/// Why a load stopped.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LoadError {
    /// Interrupted: what was committed stays (per table, or per TPC-C warehouse).
    #[error("the load stopped after {loaded} of {total} rows")]
    Interrupted {
        /// Rows loaded when it stopped.
        loaded: u64,
        /// Rows the load was to write.
        total: u64,
        /// TPC-C: what is complete, what is missing and how to finish, as
        /// read from the server afterwards (None when it could not tell).
        state: Option<String>,
    },
    /// The workload's tables exist and the load was not told to replace them.
    #[error("{0}")]
    TablesExist(String),
    /// The load failed.
    #[error("{0}")]
    Failed(String),
    /// Refused before anything was written (it cannot fit).
    #[error("{0}")]
    Refused(Refusal),
}

/// Why a job was refused before it changed anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The server allows fewer connections than the steps need.
    MaxConnections {
        /// Connections the largest step needs (the I/O sampler's included).
        need: i64,
        /// The server's max_connections.
        allowed: i64,
    },
    /// More TPC-C terminals than BenchmarkSQL's 10 per warehouse.
    TooManyTerminals {
        /// Warehouses the tables hold.
        warehouses: u32,
        /// Terminals they allow.
        most: u32,
    },
    /// A study found the workload's tables and was not told to replace them.
    TablesExist {
        /// The schema.
        schema: String,
        /// The tables found.
        tables: Vec<String>,
    },
    /// A load would not fit on the data directory's file system or in memory.
    NoRoom(crate::space::NoRoom),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::MaxConnections { need, allowed } => write!(
                f,
                "{need} clients need max_connections >= {}; the server allows {allowed}",
                need + 3
            ),
            Refusal::TooManyTerminals { warehouses, most } => write!(
                f,
                "TPC-C allows at most 10 terminals per warehouse (BenchmarkSQL's rule); {warehouses} warehouse(s) allow {most}"
            ),
            Refusal::TablesExist { schema, tables } => write!(
                f,
                "tables exist already in schema {schema} ({}); the study loads them anew for every fillfactor",
                tables.join(", ")
            ),
            Refusal::NoRoom(n) => n.fmt(f),
        }
    }
}

/// Why a job did not complete; `partial` is the result of what it did before.
#[derive(Debug, Clone)]
pub enum JobError<R> {
    /// Refused before anything ran.
    Refused(Refusal),
    /// Failed (the server went away, a statement failed, …).
    Failed {
        /// What failed.
        message: String,
        /// The result so far, when the job had got as far as measuring.
        partial: Option<Box<R>>,
    },
    /// Stopped by the interrupt flag.
    Interrupted {
        /// The result so far, when the job makes one.
        partial: Option<Box<R>>,
    },
}

impl<R> JobError<R> {
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        JobError::Failed {
            message: message.into(),
            partial: None,
        }
    }
}

impl<R> std::fmt::Display for JobError<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobError::Refused(r) => r.fmt(f),
            JobError::Failed { message, .. } => f.write_str(message),
            JobError::Interrupted { .. } => f.write_str("interrupted"),
        }
    }
}

impl<R: std::fmt::Debug> std::error::Error for JobError<R> {}

/// Runs `fut` to its end, or until `interrupt` is set: then None, and `fut`
/// is dropped (its connections close, so the server rolls back what it had
/// not committed).
pub async fn until_interrupted<T>(
    fut: impl std::future::Future<Output = T>,
    interrupt: &AtomicBool,
) -> Option<T> {
    tokio::select! {
        r = fut => Some(r),
        () = async {
            while !interrupt.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        } => None,
    }
}

/// Creates and loads the job's tables (replacing them with `job.load.force`).
/// The observer hears the start, the rows and the end, which is also returned.
pub async fn prepare(
    server: &DbServer,
    job: &DbJob,
    observer: &mut dyn DbObserver,
    interrupt: &Arc<AtomicBool>,
) -> Result<LoadReport, LoadError> {
    load(server, job, &job.bench, job.load.force, observer, interrupt).await
}

/// Loads `bench`'s tables with the job's load settings.
pub(crate) async fn load(
    server: &DbServer,
    job: &DbJob,
    bench: &Bench,
    force: bool,
    observer: &mut dyn DbObserver,
    interrupt: &AtomicBool,
) -> Result<LoadReport, LoadError> {
    if let Err(r) = check_room(server, job, bench, force).await {
        let end = Err(LoadError::Refused(r));
        observer.load_ended(bench, &end);
        return end;
    }
    let total = bench.rows_to_load(job.load.warehouse_range);
    let loaded = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let threads = job.loader_threads();
    let sink = observer.load_started(bench, total);
    let counted = Arc::clone(&loaded);
    let progress: LoadProgress = Arc::new(move |n| {
        counted.fetch_add(n, Ordering::Relaxed);
        sink(n);
    });
    let (conninfo, dialect) = (server.conninfo.as_str(), &server.dialect);
    let work = async {
        match bench {
            Bench::Sysbench(spec) => {
                oltp::prepare_with(conninfo, spec, dialect, threads, force, progress)
                    .await
                    .map(|()| LoadPhases::None)
            }
            Bench::Tpcb(t) => tpcb::prepare_with(
                conninfo,
                t,
                dialect,
                job.load.tpcb_init_mode,
                threads,
                force,
                progress,
            )
            .await
            .map(LoadPhases::Tpcb),
            Bench::Tpcc(t) => tpcc::prepare_with(
                conninfo,
                t,
                dialect,
                threads,
                force,
                progress,
                job.load.warehouse_range,
            )
            .await
            .map(LoadPhases::Tpcc),
            Bench::Pgio(p) => pgio::prepare_with(conninfo, p, dialect, threads, force, progress)
                .await
                .map(|()| LoadPhases::None),
            Bench::Script(s) => csdchar_workloads::script::prepare(conninfo, s, force)
                .await
                .map(|_| LoadPhases::None),
        }
    };
    let end = match until_interrupted(work, interrupt).await {
        None => Err(LoadError::Interrupted {
            loaded: loaded.load(Ordering::Relaxed),
            total,
            state: match bench {
                Bench::Tpcc(t) => {
                    tpcc::describe_stopped_load(conninfo, t, job.load.warehouse_range).await
                }
                _ => None,
            },
        }),
        Some(Ok(phases)) => Ok(LoadReport {
            total_rows: total,
            loaded_rows: loaded.load(Ordering::Relaxed),
            elapsed_s: t0.elapsed().as_secs_f64(),
            fillfactor: bench.fillfactor(),
            phases,
        }),
        Some(Err(e)) if e.kind == DbErrorKind::ObjectsExist => {
            Err(LoadError::TablesExist(e.message))
        }
        Some(Err(e)) => Err(LoadError::Failed(server.name_fault(&e.message))),
    };
    observer.load_ended(bench, &end);
    end
}

/// Before any server is started: refuses the job's load (a study's largest)
/// when it cannot fit in `new_data_dir` — where a cluster about to be
/// created would keep it — or in the client's memory, so nothing is created.
pub fn check_room_before_start(
    job: &DbJob,
    study: bool,
    new_data_dir: Option<&std::path::Path>,
) -> Result<(), Refusal> {
    let bench = if study {
        let lowest = job.study_fillfactors().into_iter().min().unwrap_or(100);
        job.bench.with_fillfactor(lowest)
    } else {
        job.bench.clone()
    };
    let footprint = bench.load_footprint(job.load.warehouse_range, job.loader_threads());
    crate::space::check_load_room(footprint, bench.size_option(), new_data_dir, 0)
        .map_err(Refusal::NoRoom)
}

/// Refuses a load that cannot fit on the server's data directory (when it
/// is on this machine) or in the client's memory; with `force`, the
/// workload's existing tables count as room, as the load drops them first.
pub(crate) async fn check_room(
    server: &DbServer,
    job: &DbJob,
    bench: &Bench,
    force: bool,
) -> Result<(), Refusal> {
    let footprint = bench.load_footprint(job.load.warehouse_range, job.loader_threads());
    let (dir, replaced) = match client::connect(&server.conninfo).await {
        Ok(c) => {
            let dir = crate::space::local_data_directory(&c).await;
            let replaced = if force {
                crate::space::existing_bytes(&c, &job.schema, &bench.tables()).await
            } else {
                0
            };
            (dir, replaced)
        }
        // The load's own connection reports why the server cannot be reached.
        Err(_) => (None, 0),
    };
    crate::space::check_load_room(footprint, bench.size_option(), dir.as_deref(), replaced)
        .map_err(Refusal::NoRoom)
}

/// Connects, reads the server version and checks `max_connections` against
/// the job's largest step.
pub(crate) async fn open_checked<R>(
    conninfo: &str,
    job: &DbJob,
) -> Result<(Client, String), JobError<R>> {
    let client = client::connect(conninfo)
        .await
        .map_err(|e| JobError::failed(e.message))?;
    let version: String = match client.query_one("SHOW server_version", &[]).await {
        Ok(r) => r.get(0),
        Err(e) => return Err(JobError::failed(format!("server_version: {e}"))),
    };
    let allowed: i64 = client
        .query_one(
            "SELECT setting::bigint FROM pg_settings WHERE name = 'max_connections'",
            &[],
        )
        .await
        .map(|r| r.get(0))
        .unwrap_or(i64::MAX);
    // One more for the I/O sampler.
    let need = i64::from(job.max_clients()) + 1;
    if need + 3 > allowed {
        return Err(JobError::Refused(Refusal::MaxConnections { need, allowed }));
    }
    Ok((client, version))
}

/// The result of a run or study that got as far as measuring: Ok when it
/// completed, else the error carrying it.
pub(crate) fn ended<R>(
    result: R,
    error: Option<String>,
    interrupted: bool,
) -> Result<R, JobError<R>> {
    match error {
        Some(message) => Err(JobError::Failed {
            message,
            partial: Some(Box::new(result)),
        }),
        None if interrupted => Err(JobError::Interrupted {
            partial: Some(Box::new(result)),
        }),
        None => Ok(result),
    }
}

pub(crate) fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// Runs the job's steps on tables an earlier prepare loaded: one step per
/// thread count, each between two snapshots. Sizes the tables decide (scale,
/// warehouses, fillfactor) come from them, noted where the job said otherwise.
pub async fn run(
    server: &DbServer,
    job: &DbJob,
    observer: &mut dyn DbObserver,
    interrupt: &Arc<AtomicBool>,
) -> Result<DbResult, JobError<DbResult>> {
    let conninfo = server.conninfo.as_str();
    let mut adjusted = None;
    let bench = &job.bench;
    let tables = bench.tables();
    let started_at = now_rfc3339();
    let (client, version) = open_checked(conninfo, job).await?;
    let schema = job.schema.as_str();
    let mut tables = tables;
    match catalog::existing_tables(&client, schema, &tables).await {
        // A script's tables are those it names that exist (it may create the others).
        Ok(t) if matches!(bench, Bench::Script(_)) => tables.retain(|n| t.contains(n)),
        Ok(t) if t.len() == tables.len() => {}
        Ok(t) => {
            let missing: Vec<&str> = tables
                .iter()
                .filter(|n| !t.contains(n))
                .map(String::as_str)
                .collect();
            return Err(JobError::failed(format!(
                "tables {} are missing in schema {schema}: run `csdchar db prepare` first",
                missing.join(", ")
            )));
        }
        Err(e) => return Err(JobError::failed(e.message)),
    }
    // Like pgbench: the scale is what the tables hold, whatever was asked.
    if let Bench::Tpcb(t) = bench
        && let Ok(row) = client
            .query_one("SELECT count(*)::bigint FROM pgbench_branches", &[])
            .await
    {
        let found: i64 = row.get(0);
        if found > 0 && found != i64::from(t.scale) {
            if let Some(given) = job.requested.scale {
                observer.note(&DbNote::ScaleFromTables {
                    given,
                    found: found as u32,
                });
            }
            adjusted = Some(Bench::Tpcb(TpcbSpec {
                scale: found as u32,
                ..t.clone()
            }));
        }
    }
    // Like pgbench: with a builtin among the scripts, :scale is pgbench_branches' rows.
    if let Bench::Script(sc) = bench
        && sc.program.uses_builtin()
    {
        let found: i64 = client
            .query_one("select count(*) from pgbench_branches", &[])
            .await
            .map_err(|e| JobError::failed(format!("reading the scale from pgbench_branches: {e}")))?
            .get(0);
        if let Some(given) = job.requested.scale
            && i64::from(given) != found
        {
            observer.note(&DbNote::ScaleFromTables {
                given,
                found: found as u32,
            });
        }
        adjusted = Some(Bench::Script(csdchar_workloads::script::ScriptSpec {
            scale: found,
            ..sc.clone()
        }));
    }
    // Like pgio's SCALE, but from the tables: keys are drawn from the rows
    // they hold, and the result records their size, not the one given.
    if let Bench::Pgio(p) = bench {
        let found = pgio::loaded_blocks(&client, schema)
            .await
            .map_err(|e| JobError::failed(e.message))?;
        if found != p.blocks_per_schema {
            observer.note(&DbNote::PgioSizeFromTables {
                given: p.blocks_per_schema,
                found,
            });
            adjusted = Some(Bench::Pgio(PgioSpec {
                blocks_per_schema: found,
                ..p.clone()
            }));
        }
    }
    // pgio measures physical reads: say when memory could serve them instead.
    if let Bench::Pgio(p) = adjusted.as_ref().unwrap_or(bench) {
        let sb = csdchar_dbloop::iostat::shared_buffers_bytes(&client).await;
        let avail = csdchar_dbloop::iostat::mem_available_bytes();
        if let (Some(sb), Some(avail)) = (sb, avail) {
            // A server memory limit is all the page cache its reads can use.
            let cache = job.server_memory_limit.map_or(avail, |m| m.min(avail));
            if let Some(w) = csdchar_dbloop::iostat::cache_warning(p.data_bytes(), sb, cache) {
                observer.note(&DbNote::CacheWarning(w));
            }
        }
    }
    // Like BenchmarkSQL: the warehouses and NURand constants are what the
    // load recorded in bmsql_config.
    if let Bench::Tpcc(t) = bench {
        // A cut load fails late and misleads (New-Orders of missing stock):
        // refuse it, naming what is missing and how to finish it.
        let state = tpcc::TpccLoadState::read(&client, schema)
            .await
            .map_err(|e| JobError::failed(e.message))?;
        if !state.missing_to_run().is_empty() {
            return Err(JobError::failed(format!(
                "schema {schema}: {}",
                state.describe(None, None)
            )));
        }
        let cfg = tpcc::read_config(&client, schema)
            .await
            .map_err(|e| JobError::failed(e.message))?;
        if let Some(given) = job.requested.warehouses
            && given != cfg.warehouses
        {
            observer.note(&DbNote::WarehousesFromTables {
                given,
                found: cfg.warehouses,
            });
        }
        let most = 10 * cfg.warehouses;
        if job.max_threads() > most {
            return Err(JobError::Refused(Refusal::TooManyTerminals {
                warehouses: cfg.warehouses,
                most,
            }));
        }
        // Statement mode needs nothing of csdchar's; procedure mode its
        // functions, created here when missing (a BenchmarkSQL-loaded database).
        if t.mode == tpcc::TpccMode::Procedures {
            let missing = tpcc::missing_functions(&client, schema)
                .await
                .map_err(|e| JobError::failed(e.message))?;
            if !missing.is_empty() {
                tpcc::create_functions(&client, schema)
                    .await
                    .map_err(|e| JobError::failed(e.message))?;
                observer.note(&DbNote::TpccFunctionsCreated {
                    schema: schema.to_string(),
                    missing,
                });
            }
        }
        adjusted = Some(Bench::Tpcc(TpccSpec {
            warehouses: cfg.warehouses,
            c_load: Some(cfg.constants),
            ..t.clone()
        }));
    }
    let bench = adjusted.as_ref().unwrap_or(bench);
    // The fillfactor the tables were loaded with (by this run, an earlier
    // prepare or an alter) is what the result records.
    let ff = match bench {
        // BenchmarkSQL's own fillfactors differ per table: one figure only
        // when they were all set alike.
        Bench::Tpcc(_) => match (
            catalog::table_fillfactor(&client, schema, "bmsql_stock").await,
            catalog::table_fillfactor(&client, schema, "bmsql_order_line").await,
        ) {
            (Ok(a), Ok(b)) if a == b => Ok(Some(a)),
            (Ok(_), Ok(_)) => Ok(None),
            (Err(e), _) | (_, Err(e)) => Err(e),
        },
        _ => catalog::table_fillfactor(&client, schema, &bench.fillfactor_table())
            .await
            .map(Some),
    };
    let fillfactor = match ff {
        Ok(None) => None,
        Ok(Some(found)) => {
            if let Some(given) = job.requested.fillfactor
                && given != found
            {
                observer.note(&DbNote::FillfactorFromTables { given, found });
            }
            Some(found)
        }
        Err(_) => job.requested.fillfactor,
    };
    drop(client);
    let protocol = bench.workload(job.run.protocol).protocol;
    let (steps, error) = run_steps(server, bench, &tables, job, observer, interrupt).await;
    let interrupted = interrupt.load(Ordering::Relaxed);
    let result = DbResult {
        schema: DB_SCHEMA.to_string(),
        tool: ToolInfo::current(),
        started_at,
        server: server.source.name().to_string(),
        server_version: version,
        server_dialect: Some(server.dialect.describe()),
        spec: job.db_spec(bench, &tables, protocol, fillfactor),
        steps,
        interrupted: interrupted || error.is_some(),
        error: error.clone(),
    };
    ended(result, error, interrupted)
}

/// One step per thread count of the job, each between two snapshots of
/// `tables`; returns the steps done and the error that ended them early.
pub async fn run_steps(
    server: &DbServer,
    bench: &Bench,
    tables: &[String],
    job: &DbJob,
    observer: &mut dyn DbObserver,
    interrupt: &Arc<AtomicBool>,
) -> (Vec<DbStep>, Option<String>) {
    let (conninfo, dialect) = (server.conninfo.as_str(), &server.dialect);
    let plan = &job.run;
    let mut steps = Vec::new();
    let mut error = None;
    for &per in &plan.threads {
        // Built per step: TPC-C numbers its terminals from 0 in every step.
        let threads = bench.clients(per);
        let (workload, script_totals) = bench.step_workload(plan.protocol, threads);
        let workload = Arc::new(workload);
        let protocol = workload.protocol;
        if interrupt.load(Ordering::Relaxed) {
            break;
        }
        if plan.drop_caches
            && let Err(e) = csdchar_dbloop::iostat::drop_caches()
        {
            error = Some(format!("--drop-caches: {e}"));
            break;
        }
        observer.step_started(bench, per, threads, plan.time);
        if let Some(at) = plan.start_at
            && at > std::time::SystemTime::now()
        {
            observer.waiting_until(at);
        }
        let before = match client::connect(conninfo).await {
            Ok(c) => Some(crate::snapshot::take(&c, dialect, tables).await),
            Err(_) => None,
        };
        let settings = RunSettings {
            threads,
            time: plan.time,
            report_interval: plan.report_interval,
            percentiles: plan.percentiles.clone(),
            pipeline: plan.pipeline,
            reconnect: plan.reconnect,
            interrupt: Arc::clone(interrupt),
            warmup: plan.warmup,
            rate: plan.rate,
            io_sampling: plan.io_sampling,
            // An instant already past (every step after the first) starts at once.
            start_at: plan.start_at,
            postmaster: server.postmaster.clone(),
        };
        let out = runner::run_with(
            conninfo,
            Arc::clone(&workload),
            &settings,
            plan.client_io,
            |iv, clients| {
                observer.interval(bench, iv, clients);
            },
        )
        .await;
        if let (Ok(out), Some(given)) = (&out, plan.client_io.client_threads)
            && out.started
            && out.driver_threads != Some(given as u32)
        {
            observer.note(&DbNote::ClientThreadsAdjusted {
                given: given as u32,
                clients: threads,
                used: out.driver_threads,
            });
        }
        let out = match out {
            Ok(out) if !out.started => break, // interrupted waiting for --start-at: no step
            Ok(out) => out,
            Err(e) => {
                error = Some(server.name_fault(&e.message));
                break;
            }
        };
        let after = match client::connect(conninfo).await {
            Ok(c) => Some(crate::snapshot::take(&c, dialect, tables).await),
            Err(_) => None,
        };
        let mut step = db_step(threads, &out, before, after);
        // The step that waited for --start-at records how late its clock began.
        if steps.is_empty()
            && let (Some(at), Some(began)) = (plan.start_at, out.began)
        {
            let record = csdchar_core::result::StartRecord::new(at, began, plan.start_late_limit);
            if record.too_late {
                observer.note(&DbNote::LateStart(record.clone()));
            }
            step.start = Some(record);
        }
        if let (Bench::Script(sc), Some(t)) = (bench, &script_totals) {
            let t = t.lock().expect("not poisoned");
            for m in &t.messages {
                observer.note(&DbNote::ScriptMessage(m.clone()));
            }
            step.script = Some(t.step(&sc.program));
            if sc.log.is_some() {
                let mut logs = t.logs.clone();
                logs.sort_by_key(|(c, _)| *c);
                observer.script_logs(threads, &logs);
            }
        }
        observer.step_finished(bench, &step, protocol);
        steps.push(step);
        if let Some(e) = out.error {
            error = Some(server.name_fault(&e));
            break;
        }
    }
    (steps, error)
}

/// A step's outcome in the result's terms, between its two snapshots.
pub(crate) fn db_step(
    threads: u32,
    out: &OltpOutcome,
    before: Option<csdchar_core::result::db::DbSnapshot>,
    after: Option<csdchar_core::result::db::DbSnapshot>,
) -> DbStep {
    let t = &out.tally;
    let secs = out.elapsed_s.max(1e-9);
    DbStep {
        threads,
        elapsed_s: out.elapsed_s,
        transactions: t.transactions,
        reads: t.reads,
        writes: t.writes,
        others: t.others,
        tps: t.transactions as f64 / secs,
        qps: (t.reads + t.writes + t.others) as f64 / secs,
        errors: t.errors.clone(),
        reconnects: t.reconnects,
        rollbacks: t.rollbacks,
        // BenchmarkSQL's tpmC: New-Orders (rollbacks included) per minute.
        tpmc: out
            .by_kind
            .iter()
            .find(|k| k.name == "new_order")
            .map(|k| k.transactions as f64 * 60.0 / secs),
        tpm_total: (!out.by_kind.is_empty()).then(|| t.transactions as f64 * 60.0 / secs),
        by_type: out
            .by_kind
            .iter()
            .map(|k| DbTxType {
                name: k.name.to_string(),
                transactions: k.transactions,
                rollbacks: k.rollbacks,
                share_pct: 100.0 * k.transactions as f64 / t.transactions.max(1) as f64,
                latency: k.latency.clone(),
            })
            .collect(),
        latency: out.latency.clone(),
        io: out.io.clone(),
        intervals: out
            .intervals
            .iter()
            .map(|iv| {
                let d = iv.duration_s.max(1e-9);
                DbInterval {
                    t_s: iv.t_s,
                    tps: iv.tally.transactions as f64 / d,
                    qps: (iv.tally.reads + iv.tally.writes + iv.tally.others) as f64 / d,
                    reads_per_s: iv.tally.reads as f64 / d,
                    writes_per_s: iv.tally.writes as f64 / d,
                    others_per_s: iv.tally.others as f64 / d,
                    lat_pct_ms: iv.lat_pct_ms,
                    errors_per_s: iv.tally.error_total() as f64 / d,
                    lat_hdr_histogram: Some(iv.lat_hdr_histogram.clone()),
                    io: iv.io.clone(),
                }
            })
            .collect(),
        client_io: Some(out.client_io.name().to_string()),
        client_threads: out.driver_threads,
        transport: Some(out.transport.name().to_string()),
        tls_protocol: out.tls.as_ref().map(|t| t.0.clone()),
        tls_cipher: out.tls.as_ref().map(|t| t.1.clone()),
        start: None,
        script: None,
        before,
        after,
    }
}

/// Rewrites the job's sysbench tables at the job's fillfactor (c/pad
/// storage plain, VACUUM FULL ANALYZE), telling the observer table by table.
/// Interrupted, the table being rewritten keeps its old fillfactor.
pub async fn alter(
    conninfo: &str,
    job: &DbJob,
    observer: &mut dyn DbObserver,
    interrupt: &AtomicBool,
) -> Result<(), JobError<()>> {
    let Bench::Sysbench(spec) = &job.bench else {
        return Err(JobError::failed(
            "alter changes sysbench tables only; load other workloads again at the fillfactor",
        ));
    };
    let ff = spec.fillfactor.unwrap_or(100);
    let t0 = Instant::now();
    let altered = oltp::alter_fillfactor(conninfo, &job.schema, spec.tables, ff, |t| {
        observer.table_altered(t, ff, t0.elapsed());
    });
    match until_interrupted(altered, interrupt).await {
        Some(Ok(())) => Ok(()),
        Some(Err(e)) => Err(JobError::failed(e.message)),
        None => Err(JobError::Interrupted { partial: None }),
    }
}

/// Drops the job's tables from its schema, nothing else; returns those dropped.
pub async fn cleanup(conninfo: &str, job: &DbJob) -> Result<Vec<String>, String> {
    job.bench.drop_tables(conninfo, &job.schema).await
}

/// TPC-C's consistency conditions 1-4 on the job's tables, each with its violations.
pub async fn check(conninfo: &str, job: &DbJob) -> Result<Vec<tpcc::CheckOutcome>, String> {
    if !matches!(job.bench, Bench::Tpcc(_)) {
        return Err("check runs TPC-C's consistency conditions: the workload is not tpcc".into());
    }
    // The conditions hold trivially on missing rows: an incomplete load fails.
    let client = client::connect(conninfo).await.map_err(|e| e.message)?;
    let state = tpcc::TpccLoadState::read(&client, &job.schema)
        .await
        .map_err(|e| e.message)?;
    if !state.missing_to_run().is_empty() {
        return Err(format!(
            "schema {}: {}",
            job.schema,
            state.describe(None, None)
        ));
    }
    drop(client);
    tpcc::check(conninfo, &job.schema)
        .await
        .map_err(|e| e.message)
}
