//! A database job as the library takes it: the workload, how it is loaded,
//! how its steps run and what the study varies — no command-line options,
//! the CLI and campaigns build one from theirs.

use std::time::{Duration, SystemTime};

use csdchar_core::result::db::{DbSpec, PgioParams};

use csdchar_dbloop::event::Protocol;
use csdchar_workloads::bench::Bench;
use csdchar_workloads::tpcb;

/// Default fillfactors of a study: the published studies' 100, 70 and 50.
pub const STUDY_FILLFACTORS: [u8; 3] = [100, 70, 50];

/// Everything prepare, run, study, alter and cleanup need besides the server.
#[derive(Debug, Clone)]
pub struct DbJob {
    /// The workload and its tables.
    pub bench: Bench,
    /// The database schema the tables live in (the conninfo's search_path).
    pub schema: String,
    /// How the tables are loaded.
    pub load: LoadSettings,
    /// How each run step goes.
    pub run: RunPlan,
    /// What the caller asked for that the existing tables decide at run time.
    pub requested: Requested,
    /// The study's fillfactors, in order; empty: [`STUDY_FILLFACTORS`].
    pub study_fillfactors: Vec<u8>,
    /// Study: measured loads per fillfactor (`--repeat`, at least 1).
    pub study_repeat: u32,
    /// The managed server's memory limit (cgroup, page cache included), if
    /// any: the page cache its reads can use, and recorded in the result.
    pub server_memory_limit: Option<u64>,
    /// Rows per range select (sysbench's), recorded in sysbench results' spec.
    pub range_size: u64,
    /// % of c/pad values from a repeated set (sysbench's), recorded in
    /// sysbench results' spec.
    pub string_dup: u8,
}

/// How prepare loads the tables.
#[derive(Debug, Clone)]
pub struct LoadSettings {
    /// Replace the workload's existing tables (prepare; the study always replaces them).
    pub force: bool,
    /// pgbench: where rows are generated.
    pub tpcb_init_mode: tpcb::InitMode,
    /// TPC-C: load only these warehouses (resuming a load cut short).
    pub warehouse_range: Option<(u32, u32)>,
}

/// How the run steps go: one step per thread count, each between two snapshots.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// Clients per step (pgio: per schema); the largest also sizes loads.
    pub threads: Vec<u32>,
    /// Measured length of each step.
    pub time: Duration,
    /// Uncounted time before each step's measured `time`.
    pub warmup: Duration,
    /// Transactions per second, all clients together; None: unlimited.
    pub rate: Option<f64>,
    /// Interval of the series and of interval reports; None: one per second, no reports.
    pub report_interval: Option<Duration>,
    /// Latency percentiles of the summary; the first is the interval figure's.
    pub percentiles: Vec<f64>,
    /// Protocol replacing the workload's default (sysbench, pgio).
    pub protocol: Option<Protocol>,
    /// Send BEGIN … COMMIT blocks in one round trip.
    pub pipeline: bool,
    /// Reconnect after a lost connection instead of ending the run.
    pub reconnect: bool,
    /// Drop the OS page cache before each step (root only).
    pub drop_caches: bool,
    /// Sample `pg_stat_database` and the drive at every interval.
    pub io_sampling: bool,
    /// Start the first step's clock at this instant (later steps start at once).
    pub start_at: Option<SystemTime>,
    /// How late after `start_at` the first step may begin before its record says it began
    /// too late ([`csdchar_core::result::StartRecord`]).
    pub start_late_limit: std::time::Duration,
    /// How the clients' connections are driven (threads or io_uring).
    pub client_io: csdchar_dbloop::settings::ClientIoSettings,
}

/// Sizes the caller gave that the tables, once loaded, decide instead: a
/// run notes where they differ and goes by the tables.
#[derive(Debug, Clone, Copy, Default)]
pub struct Requested {
    /// The table fillfactor.
    pub fillfactor: Option<u8>,
    /// pgbench's scale factor.
    pub scale: Option<u32>,
    /// TPC-C's warehouses.
    pub warehouses: Option<u32>,
}

impl DbJob {
    /// The largest thread count.
    pub fn max_threads(&self) -> u32 {
        self.run.threads.iter().copied().max().unwrap_or(1)
    }

    /// The most client connections a step opens (pgio's threads are per schema).
    pub fn max_clients(&self) -> u32 {
        self.bench.clients(self.max_threads())
    }

    /// Loader connections: the largest thread count, at least 2.
    pub fn loader_threads(&self) -> u32 {
        self.max_threads().max(2)
    }

    /// The study's fillfactors: those given, or [`STUDY_FILLFACTORS`].
    pub fn study_fillfactors(&self) -> Vec<u8> {
        if self.study_fillfactors.is_empty() {
            STUDY_FILLFACTORS.to_vec()
        } else {
            self.study_fillfactors.clone()
        }
    }

    /// The job as `session` runs it: the server memory limit is the one in
    /// force — the cgroup limit of a server this run started, none for a
    /// server that already ran (the limit was not applied) or a URL.
    pub fn on_session(mut self, session: &crate::session::DbSession) -> DbJob {
        self.server_memory_limit = session.cluster.as_ref().and_then(|c| c.memory_limit());
        self
    }

    /// What kept the page cache from absorbing reads, in the result's words.
    pub fn cache_control(&self) -> Option<String> {
        let mut what = Vec::new();
        if let Some(m) = self.server_memory_limit {
            what.push(format!(
                "server memory limit {} (cgroup, page cache included)",
                csdchar_core::units::format_bytes(m as f64)
            ));
        }
        if self.run.drop_caches {
            what.push("page cache dropped before each step".to_string());
        }
        (!what.is_empty()).then(|| what.join("; "))
    }

    /// The workload as run (`bench`, which may differ from the job's by what
    /// the tables hold), in the result's terms.
    pub fn db_spec(
        &self,
        bench: &Bench,
        tables: &[String],
        protocol: Protocol,
        fillfactor: Option<u8>,
    ) -> DbSpec {
        DbSpec {
            workload: bench.name().to_string(),
            tables: matches!(bench, Bench::Sysbench(_) | Bench::Tpcb(_))
                .then_some(tables.len() as u32),
            table_size: match bench {
                Bench::Sysbench(s) => Some(s.table_size),
                Bench::Tpcb(t) => Some(csdchar_core::tpcb::row_counts(t.scale).2),
                Bench::Tpcc(_) | Bench::Pgio(_) | Bench::Script(_) => None,
            },
            scale: match bench {
                Bench::Tpcb(t) => Some(t.scale),
                Bench::Script(s) => u32::try_from(s.scale).ok(),
                _ => None,
            },
            protocol: protocol.name().to_string(),
            time_s: self.run.time.as_secs_f64(),
            range_size: matches!(bench, Bench::Sysbench(_)).then_some(self.range_size),
            options: match bench {
                Bench::Sysbench(s) => Some(s.options.clone()),
                _ => None,
            },
            rand_type: match bench {
                Bench::Sysbench(s) => format!("{:?}", s.rand_type).to_lowercase(),
                Bench::Tpcb(_) => "uniform".into(),
                Bench::Tpcc(_) => "nurand".into(),
                Bench::Pgio(_) => "uniform".into(),
                Bench::Script(_) => "script".into(),
            },
            fillfactor,
            string_dup: matches!(bench, Bench::Sysbench(_)).then_some(self.string_dup),
            percentiles: self.run.percentiles.clone(),
            pipeline: self.run.pipeline,
            reconnect: self.run.reconnect,
            warmup_s: self.run.warmup.as_secs_f64(),
            rate: self.run.rate,
            db_schema: self.schema.clone(),
            warehouses: match bench {
                Bench::Tpcc(t) => Some(t.warehouses),
                _ => None,
            },
            mix: match bench {
                Bench::Tpcc(t) => csdchar_core::tpcc::TpccKind::ALL
                    .iter()
                    .map(|k| (k.name().to_string(), t.mix.share(*k)))
                    .collect(),
                _ => Default::default(),
            },
            tpcc_mode: match bench {
                Bench::Tpcc(t) => Some(t.mode.name().to_string()),
                _ => None,
            },
            pgio: match bench {
                Bench::Pgio(p) => Some(PgioParams {
                    schemas: p.schemas,
                    blocks_per_schema: p.blocks_per_schema,
                    update_pct: p.update_pct,
                    work_unit: p.work_unit,
                    update_work_unit: p.update_work_unit,
                    server_side: p.server_side,
                }),
                _ => None,
            },
            cache_control: self.cache_control(),
            start_at: self
                .run
                .start_at
                .map(csdchar_core::start_at::format_rfc3339_millis),
            client_io: Some(self.run.client_io.client_io.name().to_string()),
            client_threads: self.run.client_io.client_threads.map(|n| n as u32),
            script: match bench {
                Bench::Script(s) => Some(s.params()),
                _ => None,
            },
        }
    }
}
