//! `csdchar db prepare | run | cleanup`.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use csdchar_core::oltp::{OltpOptions, OltpWorkload, RandType};
use csdchar_core::result::ToolInfo;
use csdchar_core::result::db::{DB_SCHEMA, DbInterval, DbResult, DbSpec, DbStep};
use csdchar_core::result::study::{STUDY_SCHEMA, StudyResult, StudyRow, StudyRun};
use csdchar_core::tpcb::TpcbScript;
use csdchar_core::tpcc::TpccMix;
use csdchar_dbload::cluster::{ClusterSpec, ManagedCluster};
use csdchar_dbload::dialect::{Dialect, ServerKind};
use csdchar_dbload::oltp::{self, OltpInterval, OltpSpec};
use csdchar_dbload::pgio::{self, PgioSpec};
use csdchar_dbload::runner::{self, Protocol, Workload};
use csdchar_dbload::tpcb::{self, TpcbSpec};
use csdchar_dbload::tpcc::{self, TpccSpec};

use crate::db_opts::{
    DbArgs, DbOpts, InitModeArg, LoadMethodArg, ProtocolArg, RandArg, WorkloadArg,
};
use crate::opts::OutputFormat;
use crate::{EXIT_INTERRUPTED, EXIT_USAGE, Io, Outcome, emit, output};

/// The sysbench script behind an option value, and its sysbench name; None for pgbench's.
fn sysbench_workload(w: WorkloadArg) -> Option<(OltpWorkload, &'static str)> {
    Some(match w {
        WorkloadArg::OltpReadOnly => (OltpWorkload::ReadOnly, "oltp_read_only"),
        WorkloadArg::OltpReadWrite => (OltpWorkload::ReadWrite, "oltp_read_write"),
        WorkloadArg::OltpWriteOnly => (OltpWorkload::WriteOnly, "oltp_write_only"),
        WorkloadArg::OltpPointSelect => (OltpWorkload::PointSelect, "oltp_point_select"),
        WorkloadArg::OltpUpdateIndex => (OltpWorkload::UpdateIndex, "oltp_update_index"),
        WorkloadArg::OltpUpdateNonIndex => (OltpWorkload::UpdateNonIndex, "oltp_update_non_index"),
        WorkloadArg::OltpInsert => (OltpWorkload::Insert, "oltp_insert"),
        WorkloadArg::OltpDelete => (OltpWorkload::Delete, "oltp_delete"),
        WorkloadArg::Tpcb
        | WorkloadArg::TpcbSimpleUpdate
        | WorkloadArg::TpcbSelectOnly
        | WorkloadArg::Tpcc
        | WorkloadArg::Pgio => {
            return None;
        }
    })
}

fn protocol_of(p: ProtocolArg) -> Protocol {
    match p {
        ProtocolArg::Simple => Protocol::Simple,
        ProtocolArg::Extended => Protocol::Extended,
        ProtocolArg::Prepared => Protocol::Prepared,
    }
}

/// The workload family: sysbench's tables and scripts, pgbench's, or BenchmarkSQL's TPC-C.
enum Bench {
    Sysbench(OltpSpec, &'static str),
    Tpcb(TpcbSpec),
    Tpcc(TpccSpec),
    Pgio(PgioSpec),
}

/// `--mix` as BenchmarkSQL's five weights (validated up front).
fn tpcc_mix(m: &[f64]) -> Result<TpccMix, String> {
    let [new_order, payment, order_status, delivery, stock_level] = m else {
        return Err(format!("five percentages, not {}", m.len()));
    };
    let mix = TpccMix {
        new_order: *new_order,
        payment: *payment,
        order_status: *order_status,
        delivery: *delivery,
        stock_level: *stock_level,
    };
    mix.validate()?;
    Ok(mix)
}

impl Bench {
    fn of(o: &DbOpts) -> Bench {
        if o.tables.workload == WorkloadArg::Pgio {
            return Bench::Pgio(PgioSpec {
                schemas: o.load.schemas,
                blocks_per_schema: csdchar_core::pgio::blocks_for_bytes(o.load.pgio_size),
                update_pct: o.run.update_pct,
                work_unit: o.run.work_unit,
                update_work_unit: o.run.update_work_unit,
                seed: o.load.seed,
                schema: o.server.schema.clone(),
                server_side: o.load.pgio_server_side,
            });
        }
        if o.tables.workload == WorkloadArg::Tpcc {
            return Bench::Tpcc(TpccSpec {
                warehouses: o.load.warehouses.unwrap_or(1),
                fillfactor: o.fillfactor(),
                mix: tpcc_mix(&o.run.mix).unwrap_or_default(),
                seed: o.load.seed,
                schema: o.server.schema.clone(),
                // BenchmarkSQL's JDBC statements are prepared.
                protocol: o.run.protocol.map_or(Protocol::Prepared, protocol_of),
                c_load: None,
                load_method: match o.load.load_method {
                    LoadMethodArg::Copy => tpcc::LoadMethod::Copy,
                    LoadMethodArg::Insert => tpcc::LoadMethod::InsertBatch,
                },
            });
        }
        match sysbench_workload(o.tables.workload) {
            Some((w, name)) => Bench::Sysbench(spec_of(o, w), name),
            None => Bench::Tpcb(TpcbSpec {
                script: match o.tables.workload {
                    WorkloadArg::TpcbSimpleUpdate => TpcbScript::SimpleUpdate,
                    WorkloadArg::TpcbSelectOnly => TpcbScript::SelectOnly,
                    _ => TpcbScript::TpcbLike,
                },
                scale: o.load.scale.unwrap_or(1),
                fillfactor: o.fillfactor(),
                protocol: o.run.protocol.map_or(Protocol::Simple, protocol_of),
                seed: o.load.seed,
                schema: o.server.schema.clone(),
            }),
        }
    }

    /// Table fillfactor at prepare.
    fn fillfactor(&self) -> Option<u8> {
        match self {
            Bench::Sysbench(s, _) => s.fillfactor,
            Bench::Tpcb(t) => t.fillfactor,
            Bench::Tpcc(t) => t.fillfactor,
            // pgio's fillfactor 10 is its design (one row per block), not an option.
            Bench::Pgio(_) => None,
        }
    }

    /// Client connections for `threads`: pgio's threads are per schema.
    fn clients(&self, threads: u32) -> u32 {
        match self {
            Bench::Pgio(p) => threads * p.schemas,
            _ => threads,
        }
    }

    /// The same workload loaded at fillfactor `ff`.
    fn with_fillfactor(&self, ff: u8) -> Bench {
        match self {
            Bench::Sysbench(s, name) => Bench::Sysbench(
                OltpSpec {
                    fillfactor: Some(ff),
                    ..s.clone()
                },
                name,
            ),
            Bench::Tpcb(t) => Bench::Tpcb(TpcbSpec {
                fillfactor: Some(ff),
                ..t.clone()
            }),
            Bench::Tpcc(t) => Bench::Tpcc(TpccSpec {
                fillfactor: Some(ff),
                ..t.clone()
            }),
            Bench::Pgio(p) => Bench::Pgio(p.clone()),
        }
    }

    /// The workload's tables dropped from `schema`; returns those dropped.
    async fn drop_tables(&self, conninfo: &str, schema: &str) -> Result<Vec<String>, String> {
        match self {
            Bench::Sysbench(s, _) => oltp::cleanup(conninfo, schema, s.tables).await,
            Bench::Tpcb(_) => tpcb::cleanup(conninfo, schema).await,
            Bench::Tpcc(_) => tpcc::cleanup(conninfo, schema).await,
            Bench::Pgio(p) => pgio::cleanup(conninfo, schema, p.schemas).await,
        }
        .map_err(|e| e.0)
    }

    /// The name in results: sysbench's script name, or `tpcb-like` etc.
    fn name(&self) -> &'static str {
        match self {
            Bench::Sysbench(_, name) => name,
            Bench::Tpcb(t) => t.script.name(),
            Bench::Tpcc(_) => "tpcc",
            Bench::Pgio(_) => "pgio",
        }
    }

    /// The tables the workload creates.
    fn tables(&self) -> Vec<String> {
        match self {
            Bench::Sysbench(s, _) => (1..=s.tables).map(|n| format!("sbtest{n}")).collect(),
            Bench::Tpcb(_) => tpcb::table_names(),
            Bench::Tpcc(_) => tpcc::table_names(),
            Bench::Pgio(p) => pgio::table_names(p.schemas),
        }
    }

    /// The table whose fillfactor the result records.
    fn fillfactor_table(&self) -> String {
        match self {
            Bench::Sysbench(..) => "sbtest1".into(),
            // pgbench's -F applies to accounts, tellers and branches, not history.
            Bench::Tpcb(_) => "pgbench_accounts".into(),
            // The largest table; --fillfactor sets every table's.
            Bench::Tpcc(_) => "bmsql_stock".into(),
            Bench::Pgio(_) => csdchar_core::pgio::table_name(1),
        }
    }

    fn workload(&self, protocol: Option<ProtocolArg>) -> Workload {
        match self {
            Bench::Sysbench(s, _) => {
                let mut w = oltp::workload(s);
                if let Some(p) = protocol {
                    w.protocol = protocol_of(p);
                }
                w
            }
            Bench::Tpcb(t) => tpcb::workload(t),
            Bench::Tpcc(t) => tpcc::workload(t),
            Bench::Pgio(p) => {
                let mut w = pgio::workload(p);
                if let Some(proto) = protocol {
                    w.protocol = protocol_of(proto);
                }
                w
            }
        }
    }
}

fn spec_of(o: &DbOpts, workload: OltpWorkload) -> OltpSpec {
    OltpSpec {
        workload,
        tables: o.tables.tables,
        table_size: o.load.table_size,
        range_size: o.run.range_size,
        options: OltpOptions {
            point_selects: o.run.point_selects,
            simple_ranges: o.run.simple_ranges,
            sum_ranges: o.run.sum_ranges,
            order_ranges: o.run.order_ranges,
            distinct_ranges: o.run.distinct_ranges,
            index_updates: o.run.index_updates,
            non_index_updates: o.run.non_index_updates,
            delete_inserts: o.run.delete_inserts,
            range_selects: true,
            skip_trx: o.run.skip_trx,
        },
        rand_type: match o.run.rand_type {
            RandArg::Uniform => RandType::Uniform,
            RandArg::Gaussian => RandType::Gaussian,
            RandArg::Special => RandType::Special,
            RandArg::Pareto => RandType::Pareto,
            RandArg::Zipfian => RandType::Zipfian,
        },
        fillfactor: o.fillfactor(),
        string_dup: o.load.string_dup,
        create_secondary: o.load.create_secondary,
        seed: o.load.seed,
        schema: o.server.schema.clone(),
    }
}

/// The largest `--threads` value.
fn max_threads(o: &DbOpts) -> u32 {
    o.threads.threads.iter().copied().max().unwrap_or(1)
}

/// The most client connections a step opens (pgio's threads are per schema).
fn max_clients(o: &DbOpts) -> u32 {
    let per_schema = if o.tables.workload == WorkloadArg::Pgio {
        o.load.schemas
    } else {
        1
    };
    max_threads(o) * per_schema
}

/// `csdchar db check --workload tpcc`: TPC-C's consistency conditions 1-4,
/// one line each; exit 1 when one fails.
async fn check(conninfo: &str, schema: &str, io: &mut Io<'_>) -> i32 {
    let outcomes = match tpcc::check(conninfo, schema).await {
        Ok(o) => o,
        Err(e) => return fail(io, &e.0),
    };
    let mut failed = 0;
    for c in &outcomes {
        let verdict = if c.violations == 0 {
            "holds".to_string()
        } else {
            failed += 1;
            format!("FAILS ({} violation(s))", c.violations)
        };
        let _ = writeln!(io.stdout, "{}: {verdict}: {}", c.name, c.description);
    }
    if failed > 0 {
        let _ = writeln!(
            io.stderr,
            "error: {failed} of {} consistency conditions fail",
            outcomes.len()
        );
        return 1;
    }
    0
}

/// Checks everything that can be checked before anything starts; the error
/// is one line naming the option.
pub(crate) fn validate(step: &str, o: &DbOpts) -> Result<(), String> {
    let s = &o.server;
    if step != "study" && o.load.fillfactor.len() > 1 {
        return Err("--fillfactor: one value (a list is for `csdchar db study`)".into());
    }
    if step == "check" && o.tables.workload != WorkloadArg::Tpcc {
        return Err(
            "--workload: check runs TPC-C's consistency conditions: pass --workload tpcc".into(),
        );
    }
    if o.tables.workload == WorkloadArg::Tpcc {
        tpcc_mix(&o.run.mix).map_err(|e| format!("--mix: {e}"))?;
    }
    if o.tables.workload == WorkloadArg::Pgio {
        let blocks = csdchar_core::pgio::blocks_for_bytes(o.load.pgio_size);
        csdchar_core::pgio::check_blocks(blocks, o.run.work_unit)
            .map_err(|e| format!("--pgio-size: {e}"))?;
        csdchar_core::pgio::check_update_pct(o.run.update_pct)
            .map_err(|e| format!("--update-pct: {e}"))?;
        if matches!(step, "study" | "alter") {
            return Err(format!(
                "--workload: pgio's fillfactor 10 is its design (one row per block); {step} is for sysbench, pgbench and tpcc"
            ));
        }
    }
    // Safety: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if o.run.drop_caches && !root {
        return Err("--drop-caches: needs root (writes /proc/sys/vm/drop_caches)".into());
    }
    if o.server.pg_memory_limit.is_some() && !root {
        return Err(
            "--pg-memory-limit: needs root (creates a memory cgroup for the server)".into(),
        );
    }
    if o.server.pg_memory_limit.is_some_and(|m| m < 32 << 20) {
        return Err("--pg-memory-limit: at least 32m (the server itself needs some)".into());
    }
    if step == "alter" && o.tables.workload == WorkloadArg::Tpcc {
        return Err("--workload: alter changes sysbench tables only; for tpcc run prepare again with --fillfactor and --force".into());
    }
    if step == "alter" && o.tables.workload.is_tpcb() {
        return Err("--workload: alter changes sysbench tables only; for tpcb run prepare again with --fillfactor and --force".into());
    }
    if s.url.is_none()
        && s.pgdata.is_none()
        && matches!(step, "prepare" | "cleanup" | "alter" | "check")
    {
        return Err(format!(
            "{step}: needs --url or --pgdata (a temporary cluster would vanish with the command; `csdchar db run` alone uses one)"
        ));
    }
    if s.keep_running && s.pgdata.is_none() {
        return Err(
            "--keep-running: only with --pgdata (a temporary cluster is always removed)".into(),
        );
    }
    if let Some(url) = &s.url {
        csdchar_dbload::conn::ConnTarget::parse(url, &csdchar_dbload::conn::ProcessEnv)
            .map_err(|e| format!("--url: {e}"))?;
    }
    if s.db.is_empty() || s.db.len() > 63 || s.db.contains('\0') {
        return Err(format!(
            "--db: a database name of 1 to 63 bytes, not '{}'",
            s.db.escape_debug()
        ));
    }
    if !csdchar_dbload::conn::is_plain_identifier(&s.schema) {
        return Err(format!(
            "--schema: a lowercase SQL identifier (letters, digits, _; at most 63), not '{}'",
            s.schema.escape_debug()
        ));
    }
    if let Some(p) = &s.pgdata {
        if p.exists() && !p.is_dir() {
            return Err(format!(
                "--pgdata: {} exists and is not a directory (give a directory, new or empty for a new cluster)",
                p.display()
            ));
        }
        if p.is_dir()
            && !p.join("PG_VERSION").exists()
            && std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_some())
        {
            return Err(format!(
                "--pgdata: {} is not empty and holds no PostgreSQL cluster (give an empty or new directory)",
                p.display()
            ));
        }
    }
    for kv in &s.pg_set {
        let key = kv.split_once('=').map(|(k, _)| k.trim());
        if !key.is_some_and(|k| {
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        }) {
            return Err(format!(
                "--pg-set: '{}' is not KEY=VALUE (e.g. shared_buffers=1GB)",
                kv.escape_debug()
            ));
        }
    }
    if matches!(step, "run" | "study") && o.run.time < std::time::Duration::from_secs(1) {
        return Err("--time: must be at least 1s (e.g. 30s, 5m)".into());
    }
    let ri = o.run.report_interval;
    if !ri.is_zero() && ri < std::time::Duration::from_millis(100) {
        return Err("--report-interval: 0 (no interval lines) or at least 100ms".into());
    }
    // The result must not land on the cluster's own files.
    let inputs: Vec<&std::path::Path> = s.pgdata.iter().map(|p| p.as_path()).collect();
    crate::opts::check_output(o.out.output.as_deref(), &inputs).map_err(|e| e.0)?;
    Ok(())
}

/// Runs `fut` to its end, or until Ctrl-C/SIGTERM sets `interrupt`: then
/// None, and `fut` is dropped (its connections close, so the server rolls
/// back what it had not committed).
async fn until_interrupted<T>(
    fut: impl std::future::Future<Output = T>,
    interrupt: &AtomicBool,
) -> Option<T> {
    tokio::select! {
        r = fut => Some(r),
        () = async {
            while !interrupt.load(Ordering::Relaxed) {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        } => None,
    }
}

/// Runs a `csdchar db` step.
pub fn run_db(args: &DbArgs, io: &mut Io<'_>) -> Outcome {
    let (step, o) = args.step();
    let o = &o;
    let code = |exit_code| Outcome {
        exit_code,
        block: None,
    };
    if let Err(m) = validate(step, o) {
        let _ = writeln!(io.stderr, "error: {m}");
        return code(EXIT_USAGE);
    }
    let max_threads = max_clients(o);
    // A managed cluster gets enough connections for the sweep unless told otherwise.
    let mut settings = o.server.pg_set.clone();
    if !settings
        .iter()
        .any(|s| s.trim_start().starts_with("max_connections"))
        && max_threads + 10 > 100
    {
        settings.push(format!("max_connections={}", max_threads + 20));
    }
    let (cluster, conninfo, source) = match (&o.server.url, &o.server.pgdata) {
        (Some(url), _) => (None, url.clone(), "url"),
        (None, pgdata) => {
            let spec = ClusterSpec {
                pgdata: pgdata.clone(),
                pg_bin: o.server.pg_bin.clone(),
                settings,
                keep_running: o.server.keep_running,
                listen: o.server.listen.clone(),
                memory_limit: o.server.pg_memory_limit,
            };
            match ManagedCluster::start(&spec) {
                Ok(c) => {
                    for n in c.notes() {
                        let _ = writeln!(io.stderr, "note: {n}");
                    }
                    let ci = c.conninfo(&o.server.db);
                    let source = if pgdata.is_some() {
                        "pgdata"
                    } else {
                        "ephemeral"
                    };
                    (Some(c), ci, source)
                }
                Err(csdchar_dbload::cluster::ClusterError::BadSetting(m)) => {
                    let _ = writeln!(
                        io.stderr,
                        "error: --pg-set: '{m}' is not KEY=VALUE (e.g. shared_buffers=1GB)"
                    );
                    return code(EXIT_USAGE);
                }
                Err(e @ csdchar_dbload::cluster::ClusterError::BadListen(_)) => {
                    let _ = writeln!(io.stderr, "error: {e}");
                    return code(EXIT_USAGE);
                }
                Err(e) => {
                    let _ = writeln!(io.stderr, "error: {e}");
                    return code(1);
                }
            }
        }
    };
    // Every connection works in --schema and nowhere else.
    let conninfo = match csdchar_dbload::conn::with_search_path(
        &conninfo,
        &o.server.schema,
        &csdchar_dbload::conn::ProcessEnv,
    ) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: --schema: {e}");
            return code(EXIT_USAGE);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: cannot start the async runtime: {e}");
            return code(1);
        }
    };
    let bench = Bench::of(o);
    let schema = o.server.schema.as_str();
    let exit = match step {
        "prepare" => rt.block_on(async {
            match probe_dialect(&conninfo, io).await {
                Ok(d) => prepare(&conninfo, &d, &bench, o, o.load.force, io).await,
                Err(code) => code,
            }
        }),
        "study" => rt.block_on(study(&conninfo, &bench, o, io, source)),
        "alter" => {
            let ff = o.fillfactor().unwrap_or(100);
            let t0 = Instant::now();
            let interrupt = Arc::clone(&io.interrupt);
            let stderr = &mut *io.stderr;
            let r = rt.block_on(until_interrupted(
                oltp::alter_fillfactor(&conninfo, schema, o.tables.tables, ff, |t| {
                    let _ = writeln!(
                        stderr,
                        "{t}: fillfactor {ff}, c/pad storage plain, VACUUM FULL ANALYZE done ({:.1}s)",
                        t0.elapsed().as_secs_f64()
                    );
                }),
                &interrupt,
            ));
            match r {
                Some(Ok(())) => 0,
                Some(Err(e)) => fail(io, &e.0),
                None => {
                    let _ = writeln!(
                        io.stderr,
                        "interrupted: the table being rewritten keeps its old fillfactor; tables listed above are done"
                    );
                    EXIT_INTERRUPTED
                }
            }
        }
        "check" => rt.block_on(check(&conninfo, schema, io)),
        "cleanup" => {
            let dropped = rt.block_on(bench.drop_tables(&conninfo, schema));
            match dropped {
                Ok(names) if names.is_empty() => {
                    let _ = writeln!(
                        io.stdout,
                        "dropped 0 tables: none of the workload's tables ({}) exist in schema {schema}",
                        table_range(&bench.tables())
                    );
                    0
                }
                Ok(names) => {
                    let _ = writeln!(
                        io.stdout,
                        "dropped {} table(s) from schema {schema}: {}",
                        names.len(),
                        names.join(", ")
                    );
                    0
                }
                Err(e) => fail(io, &e),
            }
        }
        _ => rt.block_on(async {
            let d = match probe_dialect(&conninfo, io).await {
                Ok(d) => d,
                Err(code) => return code,
            };
            let mut c = 0;
            if source == "ephemeral" {
                c = prepare(&conninfo, &d, &bench, o, o.load.force, io).await;
            }
            if c == 0 {
                c = run(&conninfo, &d, &bench, o, io, source).await;
            }
            c
        }),
    };
    // Loader and client tasks end before the server they talk to stops.
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    if let Some(c) = &cluster
        && (c.attached() || o.server.keep_running)
    {
        let _ = writeln!(
            io.stderr,
            "server in {} left running on port {}: {}",
            c.pgdata().display(),
            c.port(),
            c.connect_hint()
        );
    }
    drop(cluster); // stop (and remove a temporary) cluster before exiting
    code(exit)
}

/// `first..last` of a table list, for messages.
fn table_range(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [first, .., last] => format!("{first}..{last}"),
    }
}

fn fail(io: &mut Io<'_>, m: &str) -> i32 {
    let _ = writeln!(io.stderr, "error: {m}");
    1
}

/// Connects, probes the server's dialect (once per step: loaders, snapshots
/// and the study use it) and notes what the loaders do differently there;
/// on failure the message is written and the exit code returned.
async fn probe_dialect(conninfo: &str, io: &mut Io<'_>) -> Result<Dialect, i32> {
    let client = oltp::connect(conninfo).await.map_err(|e| fail(io, &e.0))?;
    let d = Dialect::probe(&client).await.map_err(|e| fail(io, &e.0))?;
    note_dialect(&d, io);
    Ok(d)
}

/// A note on servers that are not a current PostgreSQL, saying what they lack.
fn note_dialect(d: &Dialect, io: &mut Io<'_>) {
    if d.kind != ServerKind::PostgreSql || !d.copy_freeze {
        let _ = writeln!(io.stderr, "note: server: {}", d.describe());
    }
}

async fn prepare(
    conninfo: &str,
    dialect: &Dialect,
    bench: &Bench,
    o: &DbOpts,
    force: bool,
    io: &mut Io<'_>,
) -> i32 {
    let (total, what) = match bench {
        Bench::Sysbench(spec, _) => (
            spec.table_size * u64::from(spec.tables),
            format!("{} table(s) x {} rows", spec.tables, spec.table_size),
        ),
        Bench::Tpcb(t) => {
            let (_, _, accounts) = csdchar_core::tpcb::row_counts(t.scale);
            (accounts, format!("pgbench scale {}: accounts", t.scale))
        }
        Bench::Tpcc(t) => {
            let (from, to) = o.load.warehouse_range.unwrap_or((1, t.warehouses));
            let n = to.saturating_sub(from) + 1;
            let per_w: u64 = csdchar_core::tpcc::WAREHOUSE_TABLES
                .iter()
                .filter_map(|t| csdchar_core::tpcc::expected_rows(t, 1))
                .sum::<u64>()
                // order_line: 5-15 lines per order, 10 on average.
                + 10 * u64::from(
                    csdchar_core::tpcc::DISTRICTS * csdchar_core::tpcc::ORDERS_PER_DISTRICT,
                );
            let item = if o.load.warehouse_range.is_none() {
                u64::from(csdchar_core::tpcc::ITEMS)
            } else {
                0
            };
            (
                item + per_w * u64::from(n),
                format!("TPC-C warehouses {from}..{to}: all tables"),
            )
        }
        Bench::Pgio(p) => (
            u64::from(p.schemas) * csdchar_core::pgio::rows_for_blocks(p.blocks_per_schema),
            format!(
                "pgio {} schema(s) x {} blocks ({})",
                p.schemas,
                p.blocks_per_schema,
                csdchar_core::units::format_bytes(p.data_bytes() as f64)
            ),
        ),
    };
    let loaded = Arc::new(AtomicU64::new(0));
    let l2 = Arc::clone(&loaded);
    let t0 = Instant::now();
    let threads = o.threads.threads.iter().copied().max().unwrap_or(1).max(2);
    // Drawn only when stderr is a terminal; the summary line below always.
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(total),
        indicatif::ProgressDrawTarget::stderr_with_hz(4),
    )
    .with_style(
        indicatif::ProgressStyle::with_template(
            "loading {bar:30} {human_pos}/{human_len} rows  {rate}  {elapsed} elapsed, ETA {eta}",
        )
        .expect("static template is valid")
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0} rows/s", state.per_sec());
            },
        ),
    );
    let b2 = bar.clone();
    let progress: Arc<dyn Fn(u64) + Send + Sync> = Arc::new(move |n| {
        l2.fetch_add(n, Ordering::Relaxed);
        b2.inc(n);
    });
    let load = async {
        match bench {
            Bench::Sysbench(spec, _) => {
                oltp::prepare_with(conninfo, spec, dialect, threads, force, progress)
                    .await
                    .map(|()| String::new())
            }
            Bench::Tpcb(t) => {
                let mode = match o.load.init_mode {
                    InitModeArg::Client => tpcb::InitMode::Client,
                    InitModeArg::Server => tpcb::InitMode::Server,
                };
                tpcb::prepare_with(conninfo, t, dialect, mode, threads, force, progress)
                    .await
                    .map(|t| {
                        format!(
                            " (create tables {:.2} s, generate {:.2} s, vacuum {:.2} s, primary keys {:.2} s)",
                            t.create_s, t.generate_s, t.vacuum_s, t.primary_keys_s
                        )
                    })
            }
            Bench::Tpcc(t) => tpcc::prepare_with(
                conninfo,
                t,
                dialect,
                threads,
                force,
                progress,
                o.load.warehouse_range,
            )
            .await
            .map(|t| {
                format!(
                    " (create {:.2} s, load {:.2} s, keys {:.2} s, vacuum {:.2} s; {} warehouse(s){})",
                    t.create_s,
                    t.load_s,
                    t.keys_s,
                    t.vacuum_s,
                    t.warehouses_loaded.len(),
                    if t.item_loaded { " and item" } else { "" }
                )
            }),
            Bench::Pgio(p) => pgio::prepare_with(conninfo, p, dialect, threads, force, progress)
                .await
                .map(|()| String::new()),
        }
    };
    let Some(result) = until_interrupted(load, &io.interrupt).await else {
        bar.finish_and_clear();
        let done = loaded.load(Ordering::Relaxed);
        let state = match bench {
            Bench::Sysbench(..) => {
                "each table loads in one transaction: complete tables stay, the one being loaded was rolled back"
            }
            Bench::Tpcb(_) => "the rows being loaded were rolled back",
            Bench::Tpcc(_) => {
                "each warehouse loads in one transaction: complete warehouses stay, those being loaded were rolled back \
                 (resume with --warehouse-range FROM-TO and the same --seed)"
            }
            Bench::Pgio(_) => {
                "each table loads in one transaction: complete tables stay, the one being loaded was rolled back"
            }
        };
        let _ = writeln!(
            io.stderr,
            "interrupted: the load stopped after {done} of {total} rows; {state}; \
             run prepare again with --force to start over, or `csdchar db cleanup`"
        );
        return EXIT_INTERRUPTED;
    };
    bar.finish_and_clear();
    match result {
        Ok(steps) => {
            let secs = t0.elapsed().as_secs_f64();
            let _ = writeln!(
                io.stderr,
                "prepared {what} = {total} rows in {secs:.1}s ({:.0} rows/s){}{steps}",
                loaded.load(Ordering::Relaxed) as f64 / secs.max(1e-9),
                bench
                    .fillfactor()
                    .map_or(String::new(), |f| format!(", fillfactor {f}"))
            );
            0
        }
        Err(e) if e.0.contains("--force") && e.0.contains("exist already") => {
            let _ = writeln!(io.stderr, "error: {}", e.0);
            EXIT_USAGE
        }
        Err(e) => fail(io, &e.0),
    }
}

/// pgbench's `--progress` line, plus the interval's first `--percentile`.
fn progress_line(iv: &OltpInterval, pct: f64) -> String {
    let d = iv.duration_s.max(1e-9);
    let t = &iv.tally;
    format!(
        "progress: {:.1} s, {:.1} tps, lat {:.3} ms stddev {:.3}, {} failed, lat p{pct} {:.3} ms\n",
        iv.t_s,
        t.transactions as f64 / d,
        iv.lat_mean_ms,
        iv.lat_stddev_ms,
        t.error_total(),
        iv.lat_pct_ms,
    )
}

fn interval_line(iv: &OltpInterval, threads: u32, pct: f64) -> String {
    let d = iv.duration_s.max(1e-9);
    let t = &iv.tally;
    format!(
        "[ {:.0}s ] thds: {threads} tps: {:.2} qps: {:.2} (r/w/o: {:.2}/{:.2}/{:.2}) lat (ms,{pct}%): {:.2} err/s: {:.2} reconn/s: {:.2}\n",
        iv.t_s,
        t.transactions as f64 / d,
        (t.reads + t.writes + t.others) as f64 / d,
        t.reads as f64 / d,
        t.writes as f64 / d,
        t.others as f64 / d,
        iv.lat_pct_ms,
        t.error_total() as f64 / d,
        t.reconnects as f64 / d,
    )
}

/// The physical-I/O correlation in one line: the database's misses (pgio's
/// RIOPS) next to the drive's reads, and how many reads each miss caused.
fn io_line(r: &csdchar_core::result::db::IoRates) -> String {
    let opt = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |v| format!("{v:.d$}"));
    format!(
        "I/O: RIOPS {:.0} (hits/s {:.0}); device reads/s {}, read MiB/s {}, read latency {} ms, writes/s {}; reads per miss {}{}",
        r.riops,
        r.hits_per_s,
        opt(r.dev_read_iops, 0),
        opt(r.dev_read_bytes_per_s.map(|b| b / 1048576.0), 1),
        opt(r.dev_read_latency_ms, 3),
        opt(r.dev_write_iops, 0),
        opt(r.reads_per_miss, 2),
        match (r.logical_bytes, r.physical_bytes) {
            (Some(l), Some(p)) => format!(
                "; drive logical {:.1} MiB, physical {:.1} MiB",
                l as f64 / 1048576.0,
                p as f64 / 1048576.0
            ),
            _ => String::new(),
        }
    )
}

/// An interval of a pgio run: operations like sysbench's line, then RIOPS
/// next to the drive's reads (what pgio users compute by hand from
/// pg_stat_database and iostat).
fn pgio_interval_line(iv: &OltpInterval, clients: u32, pct: f64) -> String {
    let d = iv.duration_s.max(1e-9);
    let t = &iv.tally;
    let io = iv.io.as_ref().map_or(String::new(), |r| {
        format!(
            " RIOPS: {:.0} dev r/s: {} dev rMiB/s: {} dev r lat (ms): {} reads/miss: {}",
            r.riops,
            r.dev_read_iops.map_or("-".into(), |v| format!("{v:.0}")),
            r.dev_read_bytes_per_s
                .map_or("-".into(), |v| format!("{:.1}", v / 1048576.0)),
            r.dev_read_latency_ms
                .map_or("-".into(), |v| format!("{v:.3}")),
            r.reads_per_miss.map_or("-".into(), |v| format!("{v:.2}")),
        )
    });
    format!(
        "[ {:.0}s ] thds: {clients} ops/s: {:.2} lat (ms,{pct}%): {:.2} err/s: {:.2}{io}\n",
        iv.t_s,
        t.transactions as f64 / d,
        iv.lat_pct_ms,
        t.error_total() as f64 / d,
    )
}

/// pgio's parameters and operation counts for one step (the I/O line follows).
fn pgio_summary(out: &mut String, s: &DbStep, p: &PgioSpec) {
    let ms = |ns: f64| ns / 1e6;
    let _ = writeln!(
        out,
        "pgio: NUM_SCHEMAS {} x SCALE {} blocks, {} client(s), UPDATE_PCT {}, WORK_UNIT {}, UPDATE_WORK_UNIT {}{}",
        p.schemas,
        p.blocks_per_schema,
        s.threads,
        p.update_pct,
        p.work_unit,
        p.update_work_unit,
        if p.server_side {
            " (server-side mypgio, 100 operations per call)"
        } else {
            ""
        }
    );
    let by = |n: &str| {
        s.by_type
            .iter()
            .find(|k| k.name == n)
            .map_or(0, |k| k.transactions)
    };
    let _ = writeln!(
        out,
        "{} in {:.0} s: {:.1}/s ({} selects, {} updates); latency avg {:.3} ms, p95 {:.3} ms, p99 {:.3} ms",
        if p.server_side { "calls" } else { "operations" },
        s.elapsed_s,
        s.tps,
        by("select"),
        by("update"),
        ms(s.latency.mean_ns),
        s.latency.at(95.0).map_or(f64::NAN, |v| ms(v as f64)),
        s.latency.at(99.0).map_or(f64::NAN, |v| ms(v as f64)),
    );
}

/// An interval of a TPC-C run: transactions of every type per minute, like
/// BenchmarkSQL's "Current tpmTOTAL", with sysbench's latency and errors.
fn tpcc_interval_line(iv: &OltpInterval, terminals: u32, pct: f64) -> String {
    let d = iv.duration_s.max(1e-9);
    let t = &iv.tally;
    format!(
        "[ {:.0}s ] terminals: {terminals} tpmTOTAL: {:.0} tps: {:.2} rollbacks/s: {:.2} lat (ms,{pct}%): {:.2} err/s: {:.2}\n",
        iv.t_s,
        t.transactions as f64 * 60.0 / d,
        t.transactions as f64 / d,
        t.rollbacks as f64 / d,
        iv.lat_pct_ms,
        t.error_total() as f64 / d,
    )
}

async fn run(
    conninfo: &str,
    dialect: &Dialect,
    bench: &Bench,
    o: &DbOpts,
    io: &mut Io<'_>,
    source: &str,
) -> i32 {
    let mut adjusted = None;
    let tables = bench.tables();
    let started_at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    let (client, version) = match open_checked(conninfo, o, io).await {
        Ok(x) => x,
        Err(code) => return code,
    };
    let schema = o.server.schema.as_str();
    match oltp::existing_tables(&client, schema, &tables).await {
        Ok(t) if t.len() == tables.len() => {}
        Ok(t) => {
            let missing: Vec<&str> = tables
                .iter()
                .filter(|n| !t.contains(n))
                .map(String::as_str)
                .collect();
            return fail(
                io,
                &format!(
                    "tables {} are missing in schema {schema}: run `csdchar db prepare` first",
                    missing.join(", ")
                ),
            );
        }
        Err(e) => return fail(io, &e.0),
    }
    // Like pgbench: the scale is what the tables hold, whatever --scale says.
    if let Bench::Tpcb(t) = bench
        && let Ok(row) = client
            .query_one("SELECT count(*)::bigint FROM pgbench_branches", &[])
            .await
    {
        let found: i64 = row.get(0);
        if found > 0 && found != i64::from(t.scale) {
            if let Some(given) = o.load.scale {
                let _ = writeln!(
                    io.stderr,
                    "note: --scale {given} ignored, using the count of pgbench_branches ({found})"
                );
            }
            adjusted = Some(Bench::Tpcb(TpcbSpec {
                scale: found as u32,
                ..t.clone()
            }));
        }
    }
    // pgio measures physical reads: say when memory could serve them instead.
    if let Bench::Pgio(p) = bench {
        let sb = csdchar_dbload::iostat::shared_buffers_bytes(&client).await;
        let avail = csdchar_dbload::iostat::mem_available_bytes();
        if let (Some(sb), Some(avail)) = (sb, avail) {
            // A server memory limit is all the page cache its reads can use.
            let cache = o.server.pg_memory_limit.map_or(avail, |m| m.min(avail));
            if let Some(w) = csdchar_dbload::iostat::cache_warning(p.data_bytes(), sb, cache) {
                let _ = writeln!(
                    io.stderr,
                    "note: {w} (keep the page cache out with --pg-memory-limit on a managed cluster)"
                );
            }
        }
    }
    // Like BenchmarkSQL: the warehouses and NURand constants are what the
    // load recorded in bmsql_config.
    if let Bench::Tpcc(t) = bench {
        let cfg = match tpcc::read_config(&client, schema).await {
            Ok(c) => c,
            Err(e) => return fail(io, &e.0),
        };
        if let Some(given) = o.load.warehouses
            && given != cfg.warehouses
        {
            let _ = writeln!(
                io.stderr,
                "note: --warehouses {given} ignored, using the {} warehouses the tables hold",
                cfg.warehouses
            );
        }
        let most = 10 * cfg.warehouses;
        if max_threads(o) > most {
            let _ = writeln!(
                io.stderr,
                "error: --threads: TPC-C allows at most 10 terminals per warehouse (BenchmarkSQL's rule); {} warehouse(s) allow {most}",
                cfg.warehouses
            );
            return EXIT_USAGE;
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
        // when --fillfactor set them all alike.
        Bench::Tpcc(_) => match (
            oltp::table_fillfactor(&client, schema, "bmsql_stock").await,
            oltp::table_fillfactor(&client, schema, "bmsql_order_line").await,
        ) {
            (Ok(a), Ok(b)) if a == b => Ok(Some(a)),
            (Ok(_), Ok(_)) => Ok(None),
            (Err(e), _) | (_, Err(e)) => Err(e),
        },
        _ => oltp::table_fillfactor(&client, schema, &bench.fillfactor_table())
            .await
            .map(Some),
    };
    let fillfactor = match ff {
        Ok(None) => None,
        Ok(Some(ff)) => {
            if let Some(given) = o.fillfactor()
                && given != ff
            {
                let _ = writeln!(
                    io.stderr,
                    "note: --fillfactor {given} ignored: the tables have fillfactor {ff} (change it with `csdchar db alter`)"
                );
            }
            Some(ff)
        }
        Err(_) => o.fillfactor(),
    };
    drop(client);
    let protocol = bench.workload(o.run.protocol).protocol;
    let mut text = String::new();
    let (steps, error) = run_steps(conninfo, dialect, bench, &tables, o, io, &mut text).await;
    let interrupted = io.interrupt.load(Ordering::Relaxed) || error.is_some();
    let result = DbResult {
        schema: DB_SCHEMA.to_string(),
        tool: ToolInfo::current(),
        started_at,
        server: source.to_string(),
        server_version: version,
        spec: db_spec(bench, o, &tables, protocol, fillfactor),
        steps,
        interrupted,
        error: error.clone(),
    };
    let bytes = match o.out.output_format {
        OutputFormat::Json => output::json_pretty(&result),
        OutputFormat::Normal => text.into_bytes(),
    };
    finish(&bytes, o, io, error, None)
}

/// Writes the result (stdout or --output), then `also_stderr`, and turns the
/// outcome into the exit code: 1 after an error, 130 after Ctrl-C, with the
/// partial result saved either way.
fn finish(
    bytes: &[u8],
    o: &DbOpts,
    io: &mut Io<'_>,
    error: Option<String>,
    also_stderr: Option<&str>,
) -> i32 {
    if let Err(e) = emit(bytes, o.out.output.as_deref(), io.stdout) {
        return fail(io, &e);
    }
    if let Some(t) = also_stderr {
        let _ = io.stderr.write_all(t.as_bytes());
    }
    if let Some(e) = error {
        return fail(io, &format!("{e}; partial result saved"));
    }
    if io.interrupt.load(Ordering::Relaxed) {
        let _ = writeln!(io.stderr, "interrupted: partial result saved");
        return EXIT_INTERRUPTED;
    }
    0
}

/// One step per `--threads` value, each between two snapshots; summaries go to `text`.
async fn run_steps(
    conninfo: &str,
    dialect: &Dialect,
    bench: &Bench,
    tables: &[String],
    o: &DbOpts,
    io: &mut Io<'_>,
    text: &mut String,
) -> (Vec<DbStep>, Option<String>) {
    let live = o.out.output_format == OutputFormat::Normal && o.out.output.is_none();
    let report = (!o.run.report_interval.is_zero()).then_some(o.run.report_interval);
    let mut steps = Vec::new();
    let mut error = None;
    let name = bench.name();
    for &per in &o.threads.threads {
        // Built per step: TPC-C numbers its terminals from 0 in every step.
        let workload = Arc::new(bench.workload(o.run.protocol));
        let protocol = workload.protocol;
        let threads = bench.clients(per);
        if io.interrupt.load(Ordering::Relaxed) {
            break;
        }
        if o.run.drop_caches
            && let Err(e) = csdchar_dbload::iostat::drop_caches()
        {
            error = Some(format!("--drop-caches: {e}"));
            break;
        }
        if live {
            let who = match bench {
                Bench::Pgio(p) => format!("{per} thread(s) per schema x {} schema(s)", p.schemas),
                _ => format!("{threads} thread(s)"),
            };
            let _ = writeln!(
                io.stdout,
                "Running {name} with {who} for {:.0}s",
                o.run.time.as_secs_f64()
            );
        }
        let stdout = &mut *io.stdout;
        let before = match oltp::connect(conninfo).await {
            Ok(c) => Some(csdchar_dbload::snapshot::take(&c, dialect, tables).await),
            Err(_) => None,
        };
        let settings = oltp::RunSettings {
            threads,
            time: o.run.time,
            report_interval: report,
            percentiles: o.run.percentile.clone(),
            pipeline: o.run.pipeline,
            reconnect: o.run.reconnect,
            interrupt: Arc::clone(&io.interrupt),
            warmup: o.run.warmup,
            rate: o.run.rate,
            io_sampling: true,
            // An instant already past (every step after the first) starts at once.
            start_at: o.run.start_at,
        };
        let out = runner::run(conninfo, Arc::clone(&workload), &settings, |iv, th| {
            if live {
                let pct = o.run.percentile[0];
                let line = match bench {
                    Bench::Tpcb(_) => progress_line(iv, pct),
                    Bench::Tpcc(_) => tpcc_interval_line(iv, th, pct),
                    Bench::Pgio(_) => pgio_interval_line(iv, th, pct),
                    Bench::Sysbench(..) => interval_line(iv, th, pct),
                };
                let _ = stdout.write_all(line.as_bytes());
                let _ = stdout.flush();
            }
        })
        .await;
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                error = Some(e.0);
                break;
            }
        };
        let t = &out.tally;
        let secs = out.elapsed_s.max(1e-9);
        let step = DbStep {
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
                .map(|k| csdchar_core::result::db::DbTxType {
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
            before,
            after: match oltp::connect(conninfo).await {
                Ok(c) => Some(csdchar_dbload::snapshot::take(&c, dialect, tables).await),
                Err(_) => None,
            },
        };
        summary(text, &step, bench, protocol);
        steps.push(step);
        if let Some(e) = out.error {
            error = Some(e);
            break;
        }
    }
    (steps, error)
}

/// The peer's end-of-run summary for one step (sysbench's or pgbench's), then
/// what the step did to space and I/O.
fn summary(out: &mut String, s: &DbStep, bench: &Bench, protocol: Protocol) {
    match bench {
        Bench::Sysbench(..) => sysbench_summary(out, s),
        Bench::Tpcb(t) => pgbench_summary(out, s, t, protocol),
        Bench::Tpcc(t) => tpcc_summary(out, s, t),
        Bench::Pgio(p) => pgio_summary(out, s, p),
    }
    if let Some(r) = &s.io {
        let _ = writeln!(out, "{}", io_line(r));
    }
    let (Some(b), Some(a)) = (&s.before, &s.after) else {
        return;
    };
    let get = |m: &std::collections::BTreeMap<String, i64>, k: &str| m.get(k).copied().unwrap_or(0);
    let mib = |v: i64| v as f64 / (1 << 20) as f64;
    let _ = writeln!(
        out,
        "Database: {:.1} MiB -> {:.1} MiB; WAL written {}; blocks read {} / hit {}",
        mib(b.database_bytes),
        mib(a.database_bytes),
        match (b.wal_lsn_bytes, a.wal_lsn_bytes) {
            (Some(x), Some(y)) => format!("{:.1} MiB", mib(y - x)),
            _ => "-".into(),
        },
        get(&a.stat_database, "blks_read") - get(&b.stat_database, "blks_read"),
        get(&a.stat_database, "blks_hit") - get(&b.stat_database, "blks_hit"),
    );
    if let (Some(db), Some(da)) = (&b.device, &a.device) {
        let d = csdchar_core::capacity::CapacityDelta::between(db, da);
        let _ = writeln!(
            out,
            "Device {}: host wrote {} MiB; logical {} physical {}{}",
            da.device,
            d.host_written_bytes.map_or("-".into(), |v| format!(
                "{:.1}",
                v as f64 / (1 << 20) as f64
            )),
            da.logical_bytes
                .map_or("-".into(), |v| format!("{:.1} MiB", mib(v as i64))),
            da.physical_bytes
                .map_or("-".into(), |v| format!("{:.1} MiB", mib(v as i64))),
            da.compression_ratio
                .map_or(String::new(), |r| format!(" ({r:.2}:1)")),
        );
    }
    let _ = writeln!(out);
}

fn sysbench_summary(out: &mut String, s: &DbStep) {
    let secs = s.elapsed_s.max(1e-9);
    let total = s.reads + s.writes + s.others;
    let errors: u64 = s.errors.values().sum();
    let _ = writeln!(out, "SQL statistics ({} thread(s)):", s.threads);
    let _ = writeln!(out, "    queries performed:");
    let _ = writeln!(out, "        read:                            {}", s.reads);
    let _ = writeln!(out, "        write:                           {}", s.writes);
    let _ = writeln!(out, "        other:                           {}", s.others);
    let _ = writeln!(out, "        total:                           {total}");
    let _ = writeln!(
        out,
        "    transactions:                        {:<8} ({:.2} per sec.)",
        s.transactions, s.tps
    );
    let _ = writeln!(
        out,
        "    queries:                             {total:<8} ({:.2} per sec.)",
        s.qps
    );
    let by_code: Vec<String> = s.errors.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let _ = writeln!(
        out,
        "    ignored errors:                      {errors:<8} ({:.2} per sec.){}",
        errors as f64 / secs,
        if by_code.is_empty() {
            String::new()
        } else {
            format!(" [{}]", by_code.join(", "))
        }
    );
    let _ = writeln!(
        out,
        "    reconnects:                          {:<8} ({:.2} per sec.)",
        s.reconnects,
        s.reconnects as f64 / secs
    );
    let _ = writeln!(out, "Latency (ms):");
    let ms = |ns: f64| ns / 1e6;
    let _ = writeln!(
        out,
        "         min:                            {:.2}",
        ms(s.latency.min_ns as f64)
    );
    let _ = writeln!(
        out,
        "         avg:                            {:.2}",
        ms(s.latency.mean_ns)
    );
    let _ = writeln!(
        out,
        "         max:                            {:.2}",
        ms(s.latency.max_ns as f64)
    );
    for p in &s.latency.percentiles {
        let _ = writeln!(
            out,
            "         {:>4}th percentile:              {:.2}",
            p.percentile,
            ms(p.value_ns as f64)
        );
    }
    let _ = writeln!(out);
}

/// pgbench's end-of-run report, with the percentiles pgbench lacks.
fn pgbench_summary(out: &mut String, s: &DbStep, t: &TpcbSpec, protocol: Protocol) {
    let ms = |ns: f64| ns / 1e6;
    let failed: u64 = s.errors.values().sum();
    let title = match t.script {
        TpcbScript::TpcbLike => "<builtin: TPC-B (sort of)>",
        TpcbScript::SimpleUpdate => "<builtin: simple update>",
        TpcbScript::SelectOnly => "<builtin: select only>",
    };
    let _ = writeln!(out, "transaction type: {title}");
    let _ = writeln!(out, "scaling factor: {}", t.scale);
    let _ = writeln!(out, "query mode: {}", protocol.name());
    let _ = writeln!(out, "number of clients: {}", s.threads);
    let _ = writeln!(out, "number of threads: {}", s.threads);
    let _ = writeln!(out, "duration: {:.0} s", s.elapsed_s);
    let _ = writeln!(
        out,
        "number of transactions actually processed: {}",
        s.transactions
    );
    let _ = writeln!(
        out,
        "number of retried transactions: {failed} (serialization failures and deadlocks, each retried)"
    );
    let _ = writeln!(out, "latency average = {:.3} ms", ms(s.latency.mean_ns));
    let _ = writeln!(out, "latency stddev = {:.3} ms", ms(s.latency.stddev_ns));
    for p in &s.latency.percentiles {
        let _ = writeln!(
            out,
            "latency {}th percentile = {:.3} ms",
            p.percentile,
            ms(p.value_ns as f64)
        );
    }
    let _ = writeln!(out, "tps = {:.6} (without initial connection time)", s.tps);
}

/// The workload as run, in the result's terms.
fn db_spec(
    bench: &Bench,
    o: &DbOpts,
    tables: &[String],
    protocol: Protocol,
    fillfactor: Option<u8>,
) -> DbSpec {
    DbSpec {
        workload: bench.name().to_string(),
        tables: tables.len() as u32,
        table_size: match bench {
            Bench::Sysbench(s, _) => s.table_size,
            Bench::Tpcb(t) => csdchar_core::tpcb::row_counts(t.scale).2,
            Bench::Tpcc(t) => {
                u64::from(csdchar_core::tpcc::STOCK_PER_WAREHOUSE) * u64::from(t.warehouses)
            }
            Bench::Pgio(p) => csdchar_core::pgio::rows_for_blocks(p.blocks_per_schema),
        },
        scale: match bench {
            Bench::Tpcb(t) => Some(t.scale),
            _ => None,
        },
        protocol: protocol.name().to_string(),
        time_s: o.run.time.as_secs_f64(),
        range_size: o.run.range_size,
        options: match bench {
            Bench::Sysbench(s, _) => s.options.clone(),
            _ => Default::default(),
        },
        rand_type: match bench {
            Bench::Sysbench(..) => format!("{:?}", o.run.rand_type).to_lowercase(),
            Bench::Tpcb(_) => "uniform".into(),
            Bench::Tpcc(_) => "nurand".into(),
            Bench::Pgio(_) => "uniform".into(),
        },
        fillfactor,
        string_dup: o.load.string_dup,
        percentiles: o.run.percentile.clone(),
        pipeline: o.run.pipeline,
        reconnect: o.run.reconnect,
        warmup_s: o.run.warmup.as_secs_f64(),
        rate: o.run.rate,
        db_schema: o.server.schema.clone(),
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
        pgio: match bench {
            Bench::Pgio(p) => Some(csdchar_core::result::db::PgioParams {
                schemas: p.schemas,
                blocks_per_schema: p.blocks_per_schema,
                update_pct: p.update_pct,
                work_unit: p.work_unit,
                update_work_unit: p.update_work_unit,
                server_side: p.server_side,
            }),
            _ => None,
        },
        cache_control: cache_control(o),
        start_at: o
            .run
            .start_at
            .map(csdchar_core::start_at::format_rfc3339_millis),
    }
}

/// What kept the page cache from absorbing reads, in the result's words.
fn cache_control(o: &DbOpts) -> Option<String> {
    let mut what = Vec::new();
    if let Some(m) = o.server.pg_memory_limit {
        what.push(format!(
            "server memory limit {} (cgroup, page cache included)",
            csdchar_core::units::format_bytes(m as f64)
        ));
    }
    if o.run.drop_caches {
        what.push("page cache dropped before each step".to_string());
    }
    (!what.is_empty()).then(|| what.join("; "))
}

/// BenchmarkSQL's end-of-run figures (tpmC, tpmTOTAL), then per transaction
/// type the counts and the latency percentiles BenchmarkSQL 5.x lacks.
fn tpcc_summary(out: &mut String, s: &DbStep, t: &TpccSpec) {
    let ms = |ns: f64| ns / 1e6;
    let _ = writeln!(
        out,
        "TPC-C (BenchmarkSQL 5.x), {} warehouse(s), {} terminal(s), {:.0} s measured",
        t.warehouses, s.threads, s.elapsed_s
    );
    let _ = writeln!(
        out,
        "Measured tpmC (NewOrders) = {:.2}",
        s.tpmc.unwrap_or(0.0)
    );
    let _ = writeln!(out, "Measured tpmTOTAL = {:.2}", s.tpm_total.unwrap_or(0.0));
    let _ = writeln!(
        out,
        "Transaction count = {} ({} rolled back, {} retried)",
        s.transactions,
        s.rollbacks,
        s.errors.values().sum::<u64>()
    );
    let _ = writeln!(
        out,
        "{:<14} {:>10} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "type", "count", "share", "rollback", "avg ms", "p50 ms", "p95 ms", "p99 ms"
    );
    for k in &s.by_type {
        let p = |q: f64| k.latency.at(q).map_or(f64::NAN, |v| ms(v as f64));
        let _ = writeln!(
            out,
            "{:<14} {:>10} {:>6.2}% {:>9} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            k.name,
            k.transactions,
            k.share_pct,
            k.rollbacks,
            ms(k.latency.mean_ns),
            p(50.0),
            p(95.0),
            p(99.0)
        );
    }
}

/// Connects, reads the server version and checks `max_connections` against
/// the largest `--threads`; on failure the message is written and the exit code returned.
async fn open_checked(
    conninfo: &str,
    o: &DbOpts,
    io: &mut Io<'_>,
) -> Result<(csdchar_dbload::oltp::Client, String), i32> {
    let client = match oltp::connect(conninfo).await {
        Ok(c) => c,
        Err(e) => return Err(fail(io, &e.0)),
    };
    let version: String = match client.query_one("SHOW server_version", &[]).await {
        Ok(r) => r.get(0),
        Err(e) => return Err(fail(io, &format!("server_version: {e}"))),
    };
    let max_conn: i64 = client
        .query_one(
            "SELECT setting::bigint FROM pg_settings WHERE name = 'max_connections'",
            &[],
        )
        .await
        .map(|r| r.get(0))
        .unwrap_or(i64::MAX);
    // One more for the I/O sampler.
    let need = i64::from(max_clients(o)) + 1;
    if need + 3 > max_conn {
        let _ = writeln!(
            io.stderr,
            "error: --threads: {need} clients need max_connections >= {}; the server allows {max_conn} (raise it, e.g. --pg-set max_connections={})",
            need + 3,
            need + 20
        );
        return Err(EXIT_USAGE);
    }
    Ok((client, version))
}

/// Default fillfactors of `db study`: the published studies' 100, 70 and 50.
const STUDY_FILLFACTORS: [u8; 3] = [100, 70, 50];

/// Unmeasured loads before a study's first measured one. Measured on a fresh
/// cluster (zram+ext4, default WAL settings, 2 x 150,000 sysbench rows): after
/// one, the first measured load still came out 12% above the same load
/// measured later; after two, within 1%.
const WARMUP_LOADS: usize = 2;

/// `csdchar db study`: per fillfactor, load, checkpoint, measure space, run.
async fn study(conninfo: &str, bench: &Bench, o: &DbOpts, io: &mut Io<'_>, source: &str) -> i32 {
    let started_at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    let (client, version) = match open_checked(conninfo, o, io).await {
        Ok(x) => x,
        Err(code) => return code,
    };
    let dialect = match Dialect::probe(&client).await {
        Ok(d) => d,
        Err(e) => return fail(io, &e.0),
    };
    note_dialect(&dialect, io);
    let dialect = &dialect;
    let tables = bench.tables();
    let schema = o.server.schema.as_str();
    match oltp::existing_tables(&client, schema, &tables).await {
        Ok(t) if !t.is_empty() && !o.load.force => {
            let _ = writeln!(
                io.stderr,
                "error: tables exist already in schema {schema} ({}); the study loads them anew for every fillfactor: pass --force",
                t.join(", ")
            );
            return EXIT_USAGE;
        }
        Ok(_) => {}
        Err(e) => return fail(io, &e.0),
    }
    let fillfactors = if o.load.fillfactor.is_empty() {
        STUDY_FILLFACTORS.to_vec()
    } else {
        o.load.fillfactor.clone()
    };
    let mut rows: Vec<StudyRow> = Vec::new();
    let mut runs = Vec::new();
    let mut error = None;
    let mut text = String::new();
    let mut protocol = None;
    // The drive's counters change by whatever the load writes, WAL included:
    // a first load adds new WAL segments, later ones overwrite recycled ones.
    // One unmeasured load at the lowest fillfactor (the most data, so the most
    // WAL) first puts the WAL in the steady state every measured load then
    // finds, whatever the server's WAL settings.
    let counters = settled_snapshot(&client, dialect, &tables)
        .await
        .0
        .device
        .is_some_and(|d| d.physical_bytes.is_some() && d.logical_bytes.is_some());
    let warm_ff = fillfactors.iter().copied().min().unwrap_or(100);
    let physical_method = if counters {
        format!(
            "the drive's counters' change over each load, after CHECKPOINT and sync; WAL in steady state \
             ({WARMUP_LOADS} unmeasured warm-up loads at fillfactor {warm_ff} first, so measured loads reuse WAL segments)"
        )
    } else {
        "estimated: deflate-fixed per 4 KiB of the workload's relation files (no compressing drive's counters)"
            .to_string()
    };
    if counters && !io.interrupt.load(Ordering::Relaxed) {
        let _ = writeln!(
            io.stderr,
            "warm-up: loading {WARMUP_LOADS} times at fillfactor {warm_ff}, unmeasured, so every measured load finds the WAL in steady state"
        );
        let warm = bench.with_fillfactor(warm_ff);
        let mut code = 0;
        for _ in 0..WARMUP_LOADS {
            code = match warm.drop_tables(conninfo, schema).await {
                Ok(_) => prepare(conninfo, dialect, &warm, o, true, io).await,
                Err(e) => fail(io, &e),
            };
            if code != 0 {
                break;
            }
            // Its checkpoint recycles the segments the load filled.
            let _ = settled_snapshot(&client, dialect, &tables).await;
        }
        if code == EXIT_INTERRUPTED {
            // prepare said how far it got; the study's (empty) result follows.
        } else if code != 0 {
            error = Some("the warm-up load failed".to_string());
        }
    }
    for &ff in &fillfactors {
        if io.interrupt.load(Ordering::Relaxed) || error.is_some() {
            break;
        }
        let b = bench.with_fillfactor(ff);
        // The drive's baseline without the workload's tables: what the load adds is measured against it.
        if let Err(e) = b.drop_tables(conninfo, schema).await {
            error = Some(e);
            break;
        }
        let base = settled_snapshot(&client, dialect, &tables).await.0;
        let wal_dir_before = csdchar_dbload::snapshot::wal_dir_bytes(&client, dialect).await;
        let t0 = Instant::now();
        match prepare(conninfo, dialect, &b, o, true, io).await {
            0 => {}
            EXIT_INTERRUPTED => break,
            _ => {
                error = Some(format!("loading at fillfactor {ff} failed"));
                break;
            }
        }
        let load_s = t0.elapsed().as_secs_f64();
        let space = measure_space(
            &client,
            dialect,
            &tables,
            base.device.as_ref(),
            &io.interrupt,
        )
        .await;
        let wal_dir_after = csdchar_dbload::snapshot::wal_dir_bytes(&client, dialect).await;
        let load_wal_bytes = base
            .wal_lsn_bytes
            .zip(space.wal_lsn_bytes)
            .map(|(a, b)| b - a);
        let wal_dir_growth_bytes = wal_dir_before.zip(wal_dir_after).map(|(a, b)| b - a);
        protocol = Some(b.workload(o.run.protocol).protocol);
        let (steps, err) = run_steps(conninfo, dialect, &b, &tables, o, io, &mut text).await;
        for st in &steps {
            let pct = |p: f64| st.latency.at(p).map_or(f64::NAN, |v| v as f64 / 1e6);
            let first = rows.iter().find(|r| r.threads == st.threads);
            rows.push(StudyRow {
                fillfactor: ff,
                threads: st.threads,
                load_s,
                load_wal_bytes,
                wal_dir_growth_bytes,
                relation_bytes: space.relation_bytes,
                data_directory_bytes: space.data_directory_bytes,
                physical_bytes: space.physical,
                physical_of_logical_bytes: space.of_logical,
                physical_source: space.source.clone(),
                physical_estimated: space.estimated,
                ratio: match (space.of_logical, space.physical) {
                    (Some(l), Some(p)) if p > 0.0 => Some(l / p),
                    _ => None,
                },
                tps: st.tps,
                lat_avg_ms: st.latency.mean_ns / 1e6,
                lat_p95_ms: pct(95.0),
                lat_p99_ms: pct(99.0),
                logical_growth: first.map_or(0.0, |f| {
                    space.relation_bytes as f64 / f.relation_bytes.max(1) as f64 - 1.0
                }),
                physical_growth: match (first, space.physical) {
                    (None, Some(_)) => Some(0.0),
                    (Some(f), Some(p)) => f.physical_bytes.map(|fp| p / fp - 1.0),
                    _ => None,
                },
            });
        }
        runs.push(StudyRun {
            fillfactor: ff,
            steps,
        });
        if err.is_some() {
            error = err;
            break;
        }
    }
    let table = study_table(&rows, &physical_method);
    text.push_str(&table);
    let protocol = protocol.unwrap_or(Protocol::Prepared);
    let result = StudyResult {
        schema: STUDY_SCHEMA.to_string(),
        tool: ToolInfo::current(),
        started_at,
        server: source.to_string(),
        server_version: version,
        spec: db_spec(bench, o, &tables, protocol, None),
        fillfactors,
        physical_method: physical_method.clone(),
        rows,
        runs,
        interrupted: io.interrupt.load(Ordering::Relaxed) || error.is_some(),
        error: error.clone(),
    };
    let bytes = match o.out.output_format {
        OutputFormat::Json => output::json_pretty(&result),
        OutputFormat::Normal => text.into_bytes(),
    };
    // The table is the point of a study: show it even when the result goes elsewhere.
    let elsewhere = o.out.output_format == OutputFormat::Json || o.out.output.is_some();
    finish(&bytes, o, io, error, elsewhere.then_some(table.as_str()))
}

/// A snapshot after CHECKPOINT and sync(2), so the drive has seen every
/// write; the flag says whether the CHECKPOINT was permitted.
async fn settled_snapshot(
    client: &csdchar_dbload::oltp::Client,
    dialect: &Dialect,
    tables: &[String],
) -> (csdchar_core::result::db::DbSnapshot, bool) {
    let checkpointed = client.batch_execute("CHECKPOINT").await.is_ok();
    // Safety: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    // File systems discard freed blocks in the background (ext4 -o discard
    // after its journal commit): wait until the drive's logical counter
    // holds still for 0.5 s, at most 15 s.
    let mut snap = csdchar_dbload::snapshot::take(client, dialect, tables).await;
    for _ in 0..30 {
        let Some(before) = snap.device.as_ref().and_then(|d| d.logical_bytes) else {
            break;
        };
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let next = csdchar_dbload::snapshot::take(client, dialect, tables).await;
        let still = next.device.as_ref().and_then(|d| d.logical_bytes) == Some(before);
        snap = next;
        if still {
            break;
        }
    }
    (snap, checkpointed)
}

/// Space of one load.
struct Space {
    relation_bytes: i64,
    data_directory_bytes: Option<u64>,
    physical: Option<f64>,
    of_logical: Option<f64>,
    source: String,
    estimated: bool,
    /// The server's WAL position after the load's checkpoint.
    wal_lsn_bytes: Option<i64>,
}

/// After a CHECKPOINT and sync(2), so the drive has seen the data: the
/// workload's relation sizes, the data directory's bytes, and the physical
/// size — from the drive's counters when it compresses (their change since
/// `baseline`, taken with the tables dropped), else the estimator's
/// prediction for the relation files (deflate with fixed codes per 4 KiB, the
/// model closest to published CSD ratios).
async fn measure_space(
    client: &csdchar_dbload::oltp::Client,
    dialect: &Dialect,
    tables: &[String],
    baseline: Option<&csdchar_core::capacity::CapacitySnapshot>,
    interrupt: &AtomicBool,
) -> Space {
    let (snap, checkpointed) = settled_snapshot(client, dialect, tables).await;
    let relation_bytes = snap
        .relations
        .iter()
        .map(|r| r.table_bytes + r.index_bytes + r.toast_bytes)
        .sum();
    let dir = snap.data_directory.as_deref().map(std::path::Path::new);
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
        Some(d) => csdchar_dbload::snapshot::relation_files(client, tables, d).await,
        None => Vec::new(),
    };
    if !files.is_empty() {
        let logical: u64 = files
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum();
        let plan = crate::estimate::EstimatePlan {
            paths: files,
            codec: csdchar_core::compressibility::Codec::DeflateFixed,
            chunk: 4096,
            // Every chunk up to 4 GiB; a 10% sample (with its interval) beyond.
            sample_pct: if logical <= 4 << 30 { 100.0 } else { 10.0 },
            seed: 1,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        if let Ok(e) = crate::estimate::run(&plan, interrupt, String::new()) {
            return Space {
                relation_bytes,
                data_directory_bytes,
                physical: Some(e.total.stored_bytes),
                of_logical: Some(e.total.logical_bytes as f64),
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

/// Bytes of all regular files under `dir`.
fn directory_bytes(dir: &std::path::Path) -> std::io::Result<u64> {
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

/// The study table, as the published studies tabulate it.
fn study_table(rows: &[StudyRow], method: &str) -> String {
    let mib = |b: f64| b / (1u64 << 20) as f64;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{:>10} {:>7} {:>8} {:>12} {:>12} {:>7} {:>10} {:>9} {:>9} {:>9} {:>8} {:>9}",
        "fillfactor",
        "threads",
        "load s",
        "logical MiB",
        "physical MiB",
        "ratio",
        "TPS",
        "avg ms",
        "p95 ms",
        "p99 ms",
        "logical+",
        "physical+"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:>10} {:>7} {:>8.1} {:>12.1} {:>12} {:>7} {:>10.1} {:>9.3} {:>9.3} {:>9.3} {:>7.1}% {:>9}",
            r.fillfactor,
            r.threads,
            r.load_s,
            mib(r.relation_bytes as f64),
            r.physical_bytes.map_or("-".into(), |p| format!(
                "{:.1}{}",
                mib(p),
                if r.physical_estimated { "*" } else { "" }
            )),
            r.ratio.map_or("-".into(), |x| format!("{x:.2}")),
            r.tps,
            r.lat_avg_ms,
            r.lat_p95_ms,
            r.lat_p99_ms,
            100.0 * r.logical_growth,
            r.physical_growth
                .map_or("-".into(), |g| format!("{:.1}%", 100.0 * g)),
        );
    }
    if let Some(r) = rows.first() {
        let wal: Vec<String> = rows
            .iter()
            .filter(|r| r.threads == rows[0].threads)
            .filter_map(|r| {
                Some(format!(
                    "ff {}: {:.1} MiB written, pg_wal {:+.1} MiB",
                    r.fillfactor,
                    mib(r.load_wal_bytes? as f64),
                    mib(r.wal_dir_growth_bytes.unwrap_or(0) as f64)
                ))
            })
            .collect();
        let _ = writeln!(
            out,
            "logical: the workload's tables, indexes and TOAST; physical ({}): {method}{}; growth versus the first row",
            r.physical_source,
            if r.physical_estimated {
                " (* = estimated)"
            } else {
                ""
            }
        );
        if !wal.is_empty() {
            let _ = writeln!(out, "WAL over each load: {}", wal.join("; "));
        }
    }
    out
}
