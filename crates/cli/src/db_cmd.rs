//! `csdchar db prepare | run | study | alter | check | cleanup`: the options
//! become a [`DbJob`], the steps run in [`csdchar_dbload::orchestrate`] (the
//! path campaigns and tests take too), and this module prints what they
//! report — sysbench-, pgbench- and BenchmarkSQL-style lines and summaries —
//! and turns their ends into exit codes.
//!
//! Over 1,000 lines: each step's printer is the peer's text format for that step (sysbench,
//! pgbench, BenchmarkSQL lines) next to the call that produces what it prints; the
//! pgbench-script options live apart in `db_script`.

use std::sync::Arc;

use clap::ValueEnum;
use std::time::Duration;

use csdchar_core::oltp::{OltpOptions, OltpWorkload, RandType};
use csdchar_core::result::db::DbStep;
use csdchar_core::tpcb::TpcbScript;
use csdchar_core::tpcc::TpccMix;
use csdchar_dbload::job::{DbJob, LoadSettings, Requested, RunPlan};
use csdchar_dbload::orchestrate::{
    self, DbNote, DbObserver, JobError, LoadError, LoadProgress, LoadReport, Refusal,
};
use csdchar_dbload::session::{
    self, DbServer, DbSession, ServerChoice, ServerSource, SessionError,
};
use csdchar_dbload::space::RelationEstimator;
use csdchar_dbload::text;
use csdchar_dbloop::event::Protocol;
use csdchar_dbloop::runner::OltpInterval;
use csdchar_pgcluster::{ClusterError, ClusterSpec};
use csdchar_pgwire::dialect::{Dialect, ServerKind};
use csdchar_workloads::bench::Bench;
use csdchar_workloads::oltp::OltpSpec;
use csdchar_workloads::pgio::PgioSpec;
use csdchar_workloads::tpcb::{self, TpcbSpec};
use csdchar_workloads::tpcc::{self, TpccSpec};

use crate::args::OutputFormat;
use crate::db_opts::{
    ClientIoArg, DbArgs, DbOpts, InitModeArg, LoadMethodArg, ProtocolArg, RandArg, TpccModeArg,
    WorkloadArg,
};
use crate::io::{EXIT_INTERRUPTED, EXIT_USAGE, Io, Outcome, emit};

/// The sysbench script behind an option value; None for the other families.
fn sysbench_workload(w: WorkloadArg) -> Option<OltpWorkload> {
    Some(match w {
        WorkloadArg::OltpReadOnly => OltpWorkload::ReadOnly,
        WorkloadArg::OltpReadWrite => OltpWorkload::ReadWrite,
        WorkloadArg::OltpWriteOnly => OltpWorkload::WriteOnly,
        WorkloadArg::OltpPointSelect => OltpWorkload::PointSelect,
        WorkloadArg::OltpUpdateIndex => OltpWorkload::UpdateIndex,
        WorkloadArg::OltpUpdateNonIndex => OltpWorkload::UpdateNonIndex,
        WorkloadArg::OltpInsert => OltpWorkload::Insert,
        WorkloadArg::OltpDelete => OltpWorkload::Delete,
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

/// The workload the options describe.
fn bench_of(o: &DbOpts) -> Bench {
    // Scripts were read and compiled once already by `validate`, which refuses bad ones.
    if let Ok(Some(spec)) = crate::db_script::script_spec(o) {
        return Bench::Script(spec);
    }
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
            mode: match o.run.tpcc_mode {
                TpccModeArg::Statements => tpcc::TpccMode::Statements,
                TpccModeArg::Procedures => tpcc::TpccMode::Procedures,
            },
            c_load: None,
            load_method: match o.load.load_method {
                LoadMethodArg::Copy => tpcc::LoadMethod::Copy,
                LoadMethodArg::Insert => tpcc::LoadMethod::InsertBatch,
            },
        });
    }
    match sysbench_workload(o.tables.workload) {
        Some(w) => Bench::Sysbench(spec_of(o, w)),
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

/// The library's job for validated options (see [`validate`]).
pub fn job_of(o: &DbOpts) -> DbJob {
    let ri = o.run.report_interval;
    DbJob {
        bench: bench_of(o),
        schema: o.server.schema.clone(),
        load: LoadSettings {
            force: o.load.force,
            tpcb_init_mode: match o.load.init_mode {
                InitModeArg::Client => tpcb::InitMode::Client,
                InitModeArg::Server => tpcb::InitMode::Server,
            },
            warehouse_range: o.load.warehouse_range,
        },
        run: RunPlan {
            threads: o.threads.threads.clone(),
            // pgbench's -t: the step ends when the clients have run their transactions.
            time: match o.script.transactions {
                Some(_) if o.script.given() => Duration::from_secs(365 * 86400),
                _ => o.run.time,
            },
            warmup: o.run.warmup,
            rate: o.run.rate,
            report_interval: (!ri.is_zero()).then_some(ri),
            percentiles: o.run.percentile.clone(),
            protocol: o.run.protocol.map(protocol_of),
            pipeline: o.run.pipeline,
            reconnect: o.run.reconnect,
            drop_caches: o.run.drop_caches,
            io_sampling: true,
            start_at: o.run.start_at.or(o.fleet.start_instant),
            start_late_limit: o.run.start_late_limit,
            client_io: o.run.client_io(),
        },
        requested: Requested {
            fillfactor: o.fillfactor(),
            scale: o.load.scale,
            warehouses: o.load.warehouses,
        },
        study_fillfactors: o.load.fillfactor.clone(),
        study_repeat: o.load.repeat,
        server_memory_limit: o.cluster.pg_memory_limit,
        range_size: o.run.range_size,
        string_dup: o.load.string_dup,
    }
}

/// The server the options name: `--url`, or a cluster csdchar manages.
pub fn server_choice(o: &DbOpts) -> ServerChoice {
    let s = &o.server;
    ServerChoice {
        url: s.url.clone(),
        cluster: ClusterSpec {
            pgdata: s.pgdata.clone(),
            pg_bin: s.pg_bin.clone(),
            settings: s.pg_set.clone(),
            keep_running: s.keep_running,
            listen: o.cluster.listen.clone(),
            memory_limit: o.cluster.pg_memory_limit,
            tls: o.cluster.tls,
        },
        db: s.db.clone(),
    }
}

/// `csdchar db check --workload tpcc`: TPC-C's consistency conditions 1-4,
/// one line each; exit 1 when one fails.
async fn check(conninfo: &str, job: &DbJob, io: &mut Io<'_>) -> i32 {
    let outcomes = match orchestrate::check(conninfo, job).await {
        Ok(o) => o,
        Err(e) => return fail(io, &e),
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
    } else {
        // TPC-C's options given to another workload would be ignored without a word.
        let defaults = DbOpts::default();
        let given = [
            ("--tpcc-mode", o.run.tpcc_mode != defaults.run.tpcc_mode),
            ("--mix", o.run.mix != defaults.run.mix),
            (
                "--load-method",
                o.load.load_method != defaults.load.load_method,
            ),
            ("--warehouse-range", o.load.warehouse_range.is_some()),
            ("--warehouses", o.load.warehouses.is_some()),
        ];
        if let Some((option, _)) = given.iter().find(|(_, g)| *g) {
            return Err(format!(
                "{option}: applies to --workload tpcc (BenchmarkSQL's TPC-C), not {}",
                o.tables
                    .workload
                    .to_possible_value()
                    .map_or("this workload".into(), |v| v.get_name().to_string())
            ));
        }
    }
    if let Some(spec) = crate::db_script::script_spec(o)? {
        if step == "study" && spec.init_sql.is_none() {
            return Err("-f/-b: a study loads the tables at each fillfactor: give the SQL that makes the scripts' tables with --script-init FILE".into());
        }
        if step != "study"
            && spec.init_sql.is_none()
            && o.server.url.is_none()
            && o.server.pgdata.is_none()
        {
            return Err("-f/-b: a script runs on tables you made: pass --url or --pgdata, or --script-init FILE to make them on a temporary cluster".into());
        }
        for (option, given) in [
            ("--reconnect", o.run.reconnect),
            ("--pipeline", o.run.pipeline),
        ] {
            if given {
                return Err(format!(
                    "{option}: not with pgbench scripts (a script's client aborts on a lost connection, and pipelines are the script's own \\startpipeline)"
                ));
            }
        }
    }
    if step != "study" && o.load.repeat > 1 {
        return Err(format!(
            "--repeat: measured loads per fillfactor of `csdchar db study`; {step} loads once"
        ));
    }
    if let Some(ff) = o
        .load
        .fillfactor
        .iter()
        .enumerate()
        .find_map(|(i, f)| o.load.fillfactor[..i].contains(f).then_some(f))
    {
        return Err(format!(
            "--fillfactor: {ff} is listed twice; list each once (--repeat measures each several times)"
        ));
    }
    if let (Some((from, to)), Some(w)) = (o.load.warehouse_range, o.load.warehouses)
        && to > w
    {
        return Err(format!(
            "--warehouse-range: {from}-{to} lies beyond --warehouses {w}; give a range within 1-{w}"
        ));
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
    if o.run.client_io == ClientIoArg::Uring
        && let Err(why) = csdchar_dbloop::runner::uring_probe()
    {
        return Err(format!(
            "--client-io: uring is not available here ({why}); use threads or auto"
        ));
    }
    if o.run.client_threads.is_some() && o.run.client_io == ClientIoArg::Threads {
        return Err(
            "--client-threads: sets the io_uring driver's threads; use it with --client-io uring or auto".into(),
        );
    }
    let root = rustix::process::geteuid().as_raw() == 0;
    if o.run.drop_caches && !root {
        return Err("--drop-caches: needs root (writes /proc/sys/vm/drop_caches)".into());
    }
    if o.cluster.pg_memory_limit.is_some() && !root {
        return Err(
            "--pg-memory-limit: needs root (creates a memory cgroup for the server)".into(),
        );
    }
    if o.cluster.pg_memory_limit.is_some_and(|m| m < 32 << 20) {
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
    if s.url.is_some() && o.cluster.tls {
        // clap's `requires = "listen"` does not fire when --listen conflicts with a given --url.
        return Err(
            "--tls: gives a cluster csdchar manages (--pgdata, or none) its own certificate; with --url put libpq's sslmode in the connection string (sslmode=require, or verify-full with sslrootcert=FILE)".into(),
        );
    }
    match &s.url {
        Some(url) => {
            csdchar_pgwire::conn::ConnTarget::parse(url, &csdchar_pgwire::env::ProcessEnv)
                .map_err(|e| e.for_option("--url"))?;
        }
        // A managed cluster's connections read the PG* variables too (as libpq would).
        None => csdchar_pgwire::conn::check_environment(&csdchar_pgwire::env::ProcessEnv)
            .map_err(|e| e.message)?,
    }
    if let Some(l) = &o.cluster.listen {
        // Before initdb: an address the server cannot listen on fails pg_ctl after it.
        csdchar_pgcluster::check_listen(l).map_err(|e| e.to_string())?;
    }
    if s.db.is_empty() || s.db.len() > 63 || s.db.contains('\0') {
        return Err(format!(
            "--db: a database name of 1 to 63 bytes, not '{}'",
            s.db.escape_debug()
        ));
    }
    if !csdchar_pgwire::conn::is_plain_identifier(&s.schema) {
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
    if let Some(p) = &s.pgdata {
        // As root the server runs as postgres: a directory it cannot enter is
        // bad input, found before a cluster is half made.
        csdchar_pgcluster::check_pgdata_reachable(p).map_err(|e| e.to_string())?;
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
    crate::args::check_output(o.out.output.as_deref(), &inputs).map_err(|e| e.0)?;
    Ok(())
}

/// Runs a `csdchar db` step.
pub fn run_db(args: &DbArgs, io: &mut Io<'_>) -> Outcome {
    let (step, o) = args.step();
    let o = &o;
    if let Err(m) = validate(step, o) {
        let _ = writeln!(io.stderr, "error: {m}");
        return Outcome::code(EXIT_USAGE);
    }
    let job = job_of(o);
    // A load that cannot fit is refused before a cluster is made for it.
    let choice = server_choice(o);
    let loads = match step {
        "prepare" | "study" => true,
        "run" => choice.url.is_none() && choice.cluster.pgdata.is_none(),
        _ => false,
    };
    if loads
        && let Err(r) = orchestrate::check_room_before_start(
            &job,
            step == "study",
            choice.new_data_directory().as_deref(),
        )
    {
        let _ = writeln!(io.stderr, "error: {}", refusal(&r));
        return Outcome::code(EXIT_USAGE);
    }
    if o.fleet.check_only {
        return Outcome::code(check_only(&choice, io));
    }
    let session = match open_session(o, step, &job, io) {
        Ok(s) => s,
        Err(code) => return Outcome::code(code),
    };
    let job = job.on_session(&session);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: cannot start the async runtime: {e}");
            return Outcome::code(1);
        }
    };
    let exit = rt.block_on(run_step(step, &session, &job, o, io));
    // Loader and client tasks end before the server they talk to stops.
    rt.shutdown_timeout(Duration::from_secs(2));
    if let Some(c) = session.left_running() {
        let _ = writeln!(
            io.stderr,
            "server in {} left running on port {}: {}",
            c.pgdata().display(),
            c.port(),
            c.connect_hint()
        );
    }
    drop(session); // stop (and remove a temporary) cluster before exiting
    Outcome::code(exit)
}

/// `--check-only`: the server `--url` names answers (a data directory given
/// exists); nothing is started or changed.
fn check_only(choice: &ServerChoice, io: &mut Io<'_>) -> i32 {
    if let Some(url) = &choice.url {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => return fail(io, &format!("cannot start the async runtime: {e}")),
        };
        if let Err(e) = rt.block_on(csdchar_pgwire::client::connect(url)) {
            return fail(io, &format!("--url: {e}"));
        }
    } else if let Some(p) = choice.cluster.pgdata.as_ref().filter(|p| !p.is_dir()) {
        return fail(io, &format!("--pgdata: {} is not a directory", p.display()));
    }
    let _ = writeln!(io.stdout, "ok");
    0
}

/// Opens the server the options name (starting a managed cluster) and
/// writes its notes; on failure the message is written and the exit code returned.
fn open_session(o: &DbOpts, step: &str, job: &DbJob, io: &mut Io<'_>) -> Result<DbSession, i32> {
    let choice = match step {
        "study" => server_choice(o).for_study(),
        _ => server_choice(o),
    };
    match session::open(&choice, &o.server.schema, job.max_clients()) {
        Ok(s) => {
            for n in s.cluster.iter().flat_map(|c| c.notes()) {
                let _ = writeln!(io.stderr, "note: {n}");
            }
            Ok(s)
        }
        Err(SessionError::Cluster(ClusterError::BadSetting(m))) => {
            let _ = writeln!(
                io.stderr,
                "error: --pg-set: '{m}' is not KEY=VALUE (e.g. shared_buffers=1GB)"
            );
            Err(EXIT_USAGE)
        }
        Err(SessionError::Cluster(
            e @ (ClusterError::BadListen(_) | ClusterError::ListenUnusable { .. }),
        )) => {
            let _ = writeln!(io.stderr, "error: {e}");
            Err(EXIT_USAGE)
        }
        Err(SessionError::Cluster(e)) => Err(fail(io, &e.to_string())),
        Err(SessionError::Schema(e)) => {
            let _ = writeln!(io.stderr, "error: --schema: {e}");
            Err(EXIT_USAGE)
        }
    }
}

/// The step on the open session; returns the exit code.
async fn run_step(
    step: &str,
    session: &DbSession,
    job: &DbJob,
    o: &DbOpts,
    io: &mut Io<'_>,
) -> i32 {
    let conninfo = session.conninfo.as_str();
    let schema = job.schema.as_str();
    match step {
        "prepare" => match probe(session, io).await {
            Ok(server) => prepare(&server, job, o, io).await,
            Err(code) => code,
        },
        "study" => match probe(session, io).await {
            Ok(server) => study(&server, job, o, io).await,
            Err(code) => code,
        },
        "alter" => {
            let interrupt = Arc::clone(&io.interrupt);
            let mut printer = Printer::new(io, o, LoadLeft::Prepare);
            let altered = orchestrate::alter(conninfo, job, &mut printer, &interrupt).await;
            match altered {
                Ok(()) => 0,
                Err(JobError::Interrupted { .. }) => {
                    let _ = writeln!(
                        io.stderr,
                        "interrupted: the table being rewritten keeps its old fillfactor; tables listed above are done"
                    );
                    EXIT_INTERRUPTED
                }
                Err(e) => job_failed(io, e),
            }
        }
        "check" => check(conninfo, job, io).await,
        "cleanup" => match orchestrate::cleanup(conninfo, job).await {
            Ok(names) if names.is_empty() => {
                let _ = writeln!(
                    io.stdout,
                    "dropped 0 tables: none of the workload's tables ({}) exist in schema {schema}",
                    table_range(&job.bench.tables())
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
        },
        _ => {
            let server = match probe(session, io).await {
                Ok(s) => s,
                Err(code) => return code,
            };
            if session.source == ServerSource::Ephemeral {
                let code = prepare(&server, job, o, io).await;
                if code != 0 {
                    return code;
                }
            }
            run(&server, job, o, io).await
        }
    }
}

/// Seconds for people: `42s`, `5m 10s`, `2h 3m 4s`.
fn whole_seconds(s: f64) -> String {
    humantime::format_duration(Duration::from_secs(s.max(0.0).round() as u64)).to_string()
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

/// Connects and probes the server's dialect (once per step: loaders,
/// snapshots and the study use it), noting what the loaders do differently
/// there; on failure the message is written and the exit code returned.
async fn probe(session: &DbSession, io: &mut Io<'_>) -> Result<DbServer, i32> {
    let server = session.probe().await.map_err(|e| fail(io, &e))?;
    note_dialect(&server.dialect, io);
    Ok(server)
}

/// A note on servers that are not a current PostgreSQL, saying what they lack.
fn note_dialect(d: &Dialect, io: &mut Io<'_>) {
    if d.kind != ServerKind::PostgreSql || !d.copy_freeze {
        let _ = writeln!(io.stderr, "note: server: {}", d.describe());
    }
}

/// `csdchar db prepare` (and the load before a run on a temporary cluster);
/// the printer writes how it went.
async fn prepare(server: &DbServer, job: &DbJob, o: &DbOpts, io: &mut Io<'_>) -> i32 {
    let interrupt = Arc::clone(&io.interrupt);
    let left = match server.source {
        ServerSource::Ephemeral => LoadLeft::Temporary,
        _ => LoadLeft::Prepare,
    };
    let mut printer = Printer::new(io, o, left);
    match orchestrate::prepare(server, job, &mut printer, &interrupt).await {
        Ok(_) => 0,
        Err(LoadError::Interrupted { .. }) => EXIT_INTERRUPTED,
        Err(LoadError::TablesExist(_) | LoadError::Refused(_)) => EXIT_USAGE,
        Err(LoadError::Failed(_)) => 1,
    }
}

/// `csdchar db run`: the steps, then the result (the summaries in normal format).
async fn run(server: &DbServer, job: &DbJob, o: &DbOpts, io: &mut Io<'_>) -> i32 {
    let interrupt = Arc::clone(&io.interrupt);
    let mut printer = Printer::new(io, o, LoadLeft::Prepare);
    let ended = orchestrate::run(server, job, &mut printer, &interrupt).await;
    let text = printer.text;
    // A script's client that aborted leaves the run incomplete (pgbench exits non-zero too).
    let aborted = matches!(&ended, Ok(r) if r.steps.iter().any(|s| {
        s.script.as_ref().is_some_and(|x| !x.aborted_clients.is_empty())
    }));
    match finish(ended, o, io, |_| text, |_| None) {
        0 if aborted => 1,
        code => code,
    }
}

/// `csdchar db study`: per fillfactor, load, measure space, run; then the
/// result, whose normal format ends in the study table.
async fn study(server: &DbServer, job: &DbJob, o: &DbOpts, io: &mut Io<'_>) -> i32 {
    let interrupt = Arc::clone(&io.interrupt);
    let left = match server.source {
        ServerSource::Ephemeral => LoadLeft::Temporary,
        _ => LoadLeft::Study,
    };
    let mut printer = Printer::new(io, o, left);
    let ended =
        csdchar_dbload::study::study(server, job, &mut printer, &RelationEstimator, &interrupt)
            .await;
    let text = printer.text;
    // The table is the point of a study: show it even when the result goes elsewhere.
    let elsewhere = o.out.output_format == OutputFormat::Json || o.out.output.is_some();
    finish(
        ended,
        o,
        io,
        |r| text + &study_text(r),
        |r| elsewhere.then(|| study_text(r)),
    )
}

/// The study's table, and what an unfinished fillfactor kept.
fn study_text(r: &csdchar_core::result::study::StudyResult) -> String {
    let mut t = text::study_table(&r.rows, &r.physical_method);
    if let Some(u) = &r.unfinished {
        t.push_str(&text::study_unfinished(u));
    }
    t
}

/// Writes a run's or study's result (stdout or --output) — `normal` is its
/// text format —, then `also_stderr`, and turns how the job ended into the
/// exit code: 1 after an error, 130 after Ctrl-C, with the partial result
/// saved either way.
fn finish<R: serde::Serialize>(
    ended: Result<R, JobError<R>>,
    o: &DbOpts,
    io: &mut Io<'_>,
    normal: impl FnOnce(&R) -> String,
    also_stderr: impl FnOnce(&R) -> Option<String>,
) -> i32 {
    let (result, error, interrupted) = match ended {
        Ok(r) => (r, None, false),
        Err(JobError::Failed {
            message,
            partial: Some(r),
        }) => (*r, Some(message), false),
        Err(JobError::Interrupted { partial: Some(r) }) => (*r, None, true),
        Err(e) => return job_failed(io, e),
    };
    let bytes = match o.out.output_format {
        OutputFormat::Json => csdchar_report::text::json_pretty(&result),
        OutputFormat::Normal => normal(&result).into_bytes(),
    };
    if let Err(e) = emit(&bytes, o.out.output.as_deref(), io.stdout) {
        return fail(io, &e);
    }
    if let Some(t) = also_stderr(&result) {
        let _ = io.stderr.write_all(t.as_bytes());
    }
    if let Some(e) = error {
        return fail(io, &format!("{e}; partial result saved"));
    }
    if interrupted {
        let _ = writeln!(io.stderr, "interrupted: partial result saved");
        return EXIT_INTERRUPTED;
    }
    0
}

/// A job that ended without a result: the message, and the exit code (2 when refused).
fn job_failed<R>(io: &mut Io<'_>, e: JobError<R>) -> i32 {
    match e {
        JobError::Refused(r) => {
            let _ = writeln!(io.stderr, "error: {}", refusal(&r));
            EXIT_USAGE
        }
        JobError::Failed { message, .. } => fail(io, &message),
        JobError::Interrupted { .. } => {
            let _ = writeln!(io.stderr, "interrupted");
            EXIT_INTERRUPTED
        }
    }
}

/// Why the job was refused, naming the option to change.
fn refusal(r: &Refusal) -> String {
    match r {
        Refusal::MaxConnections { need, .. } => format!(
            "--threads: {r} (raise it, e.g. --pg-set max_connections={})",
            need + 20
        ),
        Refusal::TooManyTerminals { .. } => format!("--threads: {r}"),
        Refusal::TablesExist { .. } => format!("{r}: pass --force"),
        Refusal::NoRoom(_) => r.to_string(),
    }
}

/// What to tell about the tables a load stopped by Ctrl-C leaves, which
/// depends on the step and the server it used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoadLeft {
    /// `prepare` on a server that stays: finish or clean up the load.
    Prepare,
    /// A study on a server that stays: the study loads them anew with --force.
    Study,
    /// A temporary cluster: it goes with the command, nothing is left.
    Temporary,
}

/// Prints what a job reports as the peers would: notes and load lines on
/// stderr, "Running …" and interval lines on stdout when the result is not
/// going there in another form (`live`), and each step's summary into `text`,
/// the normal-format result.
struct Printer<'i, 'o> {
    io: &'i mut Io<'o>,
    /// Live lines on stdout.
    live: bool,
    /// The interval lines' percentile.
    pct: f64,
    /// TPC-C: the warehouses a prepare loads, for its line.
    warehouse_range: Option<(u32, u32)>,
    /// The running load's progress bar (drawn only on a terminal).
    bar: Option<indicatif::ProgressBar>,
    /// The steps' summaries.
    text: String,
    /// What an interrupted load leaves to do.
    left: LoadLeft,
    /// `--log-prefix`.
    log_prefix: String,
}

impl<'i, 'o> Printer<'i, 'o> {
    fn new(io: &'i mut Io<'o>, o: &DbOpts, left: LoadLeft) -> Self {
        Printer {
            io,
            live: o.out.output_format == OutputFormat::Normal && o.out.output.is_none(),
            pct: o.run.percentile.first().copied().unwrap_or(95.0),
            warehouse_range: o.load.warehouse_range,
            bar: None,
            text: String::new(),
            left,
            log_prefix: o.script.log_prefix.clone(),
        }
    }
}

impl DbObserver for Printer<'_, '_> {
    fn script_logs(&mut self, _clients: u32, logs: &[(usize, Vec<u8>)]) {
        // pgbench's names: PREFIX.PID for its first thread, PREFIX.PID.N for thread N.
        let pid = std::process::id();
        let files: Vec<(std::path::PathBuf, Vec<u8>)> = logs
            .iter()
            .map(|(c, text)| {
                let name = match c {
                    0 => format!("{}.{pid}", self.log_prefix),
                    n => format!("{}.{pid}.{n}", self.log_prefix),
                };
                (std::path::PathBuf::from(name), text.clone())
            })
            .collect();
        match csdchar_fio_like::safety::write_outputs(std::path::Path::new("."), &files) {
            Ok(()) => {
                let _ = writeln!(
                    self.io.stderr,
                    "note: transaction logs written: {}.{pid}[.N] ({} file(s))",
                    self.log_prefix,
                    files.len()
                );
            }
            Err(e) => {
                let _ = writeln!(self.io.stderr, "error: --log: {e}");
            }
        }
    }

    fn note(&mut self, note: &DbNote) {
        let line = match note {
            DbNote::ScriptMessage(m) => m.clone(),
            DbNote::ScaleFromTables { given, found } => {
                format!("--scale {given} ignored, using the count of pgbench_branches ({found})")
            }
            DbNote::WarehousesFromTables { given, found } => {
                format!(
                    "--warehouses {given} ignored, using the {found} warehouses the tables hold"
                )
            }
            DbNote::FillfactorFromTables { given, found } => format!(
                "--fillfactor {given} ignored: the tables have fillfactor {found} (change it with `csdchar db alter`)"
            ),
            DbNote::PgioSizeFromTables { given, found } => format!(
                "--pgio-size {} ignored, using the {found} blocks ({}) per schema the tables hold",
                csdchar_core::units::format_bytes((given * csdchar_core::pgio::BLOCK_SIZE) as f64),
                csdchar_core::units::format_bytes((found * csdchar_core::pgio::BLOCK_SIZE) as f64),
            ),
            DbNote::ClientThreadsAdjusted {
                given,
                clients,
                used: Some(used),
            } => format!(
                "--client-threads {given}: {clients} clients keep at most {used} driver threads busy; the step ran on {used}"
            ),
            DbNote::ClientThreadsAdjusted {
                given,
                clients,
                used: None,
            } => format!(
                "--client-threads {given} unused: at {clients} clients --client-io auto chose threads (one OS thread per client)"
            ),
            DbNote::CacheWarning(w) => {
                format!("{w} (keep the page cache out with --pg-memory-limit on a managed cluster)")
            }
            DbNote::StudyPlan {
                fillfactors,
                repeat,
                warmup_loads,
                run_steps,
                step_s,
            } => format!(
                "study: {} load(s) ({warmup_loads} unmeasured warm-up, then {fillfactors} fillfactor(s) x --repeat {repeat}) and {run_steps} run step(s) of {}: {} of runs plus the loads; the estimate follows the first load",
                warmup_loads + fillfactors * *repeat as usize,
                whole_seconds(*step_s),
                whole_seconds(*step_s * *run_steps as f64),
            ),
            DbNote::StudyEstimate {
                first_load_s,
                loads,
                total_s,
            } => format!(
                "study: the first load took {}: about {} in all ({loads} loads as long as it, and the runs; the settling between loads comes on top)",
                whole_seconds(*first_load_s),
                whole_seconds(*total_s),
            ),
            DbNote::LateStart(s) => {
                let line = crate::block_cmd::late_start_note(s);
                line.trim_start_matches("note: ").to_string()
            }
            DbNote::TpccFunctionsCreated { schema, missing } => format!(
                "--tpcc-mode procedures: created the transaction functions missing from schema {schema} ({})",
                missing.join(", ")
            ),
        };
        let _ = writeln!(self.io.stderr, "note: {line}");
    }

    fn load_started(&mut self, _bench: &Bench, total_rows: u64) -> LoadProgress {
        // Drawn only when stderr is a terminal; the summary line always.
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(total_rows),
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
        let counter = bar.clone();
        self.bar = Some(bar);
        Arc::new(move |n| counter.inc(n))
    }

    fn load_ended(&mut self, bench: &Bench, end: &Result<LoadReport, LoadError>) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        let stderr = &mut *self.io.stderr;
        let _ = match end {
            Ok(r) => writeln!(
                stderr,
                "prepared {} = {} rows in {:.1}s ({:.0} rows/s){}{}",
                text::load_description(bench, self.warehouse_range),
                r.total_rows,
                r.elapsed_s,
                r.loaded_rows as f64 / r.elapsed_s.max(1e-9),
                r.fillfactor
                    .map_or(String::new(), |f| format!(", fillfactor {f}")),
                text::load_phases(&r.phases)
            ),
            Err(LoadError::Interrupted { loaded, total, .. })
                if self.left == LoadLeft::Temporary =>
            {
                writeln!(
                    stderr,
                    "interrupted: the load stopped after {loaded} of {total} rows; the temporary cluster goes with this command, nothing is left to clean up"
                )
            }
            Err(LoadError::Interrupted { loaded, total, .. }) if self.left == LoadLeft::Study => {
                writeln!(
                    stderr,
                    "interrupted: the load stopped after {loaded} of {total} rows; the tables hold a partial load: `csdchar db study --force` loads them anew, `csdchar db cleanup` drops them"
                )
            }
            Err(LoadError::Interrupted {
                loaded,
                total,
                state: Some(state),
            }) => writeln!(
                stderr,
                "interrupted: the load stopped after {loaded} of {total} rows; {state}"
            ),
            Err(LoadError::Interrupted { loaded, total, .. }) => writeln!(
                stderr,
                "interrupted: the load stopped after {loaded} of {total} rows; {}; \
                 run prepare again with --force to start over, or `csdchar db cleanup`",
                text::interrupted_load_state(bench)
            ),
            Err(LoadError::TablesExist(m) | LoadError::Failed(m)) => {
                writeln!(stderr, "error: {m}")
            }
            Err(LoadError::Refused(r)) => writeln!(stderr, "error: {}", refusal(r)),
        };
    }

    fn warmup_started(&mut self, loads: usize, fillfactor: u8) {
        let _ = writeln!(
            self.io.stderr,
            "warm-up: loading {loads} times at fillfactor {fillfactor}, unmeasured, so every measured load finds the WAL in steady state"
        );
    }

    fn failed(&mut self, message: &str) {
        let _ = writeln!(self.io.stderr, "error: {message}");
    }

    fn waiting_until(&mut self, at: std::time::SystemTime) {
        let left = at
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default();
        let _ = writeln!(
            self.io.stderr,
            "--start-at: waiting until {} (in {:.0} s) before the clock starts; Ctrl-C ends the wait without a run",
            csdchar_core::start_at::format_rfc3339_millis(at),
            left.as_secs_f64()
        );
    }

    fn step_started(&mut self, bench: &Bench, threads: u32, clients: u32, time: Duration) {
        if !self.live {
            return;
        }
        let who = match bench {
            Bench::Pgio(p) => format!("{threads} thread(s) per schema x {} schema(s)", p.schemas),
            _ => format!("{clients} thread(s)"),
        };
        let how_long = match bench {
            Bench::Script(sc) if sc.transactions.is_some() => format!(
                "{} transaction(s) per client",
                sc.transactions.unwrap_or_default()
            ),
            _ => format!("{:.0}s", time.as_secs_f64()),
        };
        let _ = writeln!(
            self.io.stdout,
            "Running {} with {who} for {how_long}",
            bench.name(),
        );
    }

    fn interval(&mut self, bench: &Bench, iv: &OltpInterval, clients: u32) {
        if !self.live {
            return;
        }
        let pct = self.pct;
        let line = match bench {
            Bench::Tpcb(_) | Bench::Script(_) => text::progress_line(iv, pct),
            Bench::Tpcc(_) => text::tpcc_interval_line(iv, clients, pct),
            Bench::Pgio(_) => text::pgio_interval_line(iv, clients, pct),
            Bench::Sysbench(..) => text::interval_line(iv, clients, pct),
        };
        let _ = self.io.stdout.write_all(line.as_bytes());
        let _ = self.io.stdout.flush();
    }

    fn step_finished(&mut self, bench: &Bench, step: &DbStep, protocol: Protocol) {
        text::summary(&mut self.text, step, bench, protocol);
    }

    fn table_altered(&mut self, table: &str, fillfactor: u8, elapsed: Duration) {
        let _ = writeln!(
            self.io.stderr,
            "{table}: fillfactor {fillfactor}, c/pad storage plain, VACUUM FULL ANALYZE done ({:.1}s)",
            elapsed.as_secs_f64()
        );
    }
}
