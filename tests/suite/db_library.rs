//! prepare → run → study through dbload's library API (no CLI), on a
//! cluster csdchar manages: the results have the shape `csdchar db` gives
//! for the same options, because both take the same path.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use csdchar_core::oltp::{OltpOptions, OltpWorkload, RandType};
use csdchar_core::result::db::DbStep;
use csdchar_dbload::job::{DbJob, LoadSettings, Requested, RunPlan};
use csdchar_dbload::orchestrate::{
    self, DbNote, DbObserver, JobError, LoadError, LoadProgress, LoadReport, Quiet, Refusal,
};
use csdchar_dbload::session::{self, DbServer, ServerChoice, ServerSource};
use csdchar_dbloop::event::Protocol;
use csdchar_dbloop::runner::OltpInterval;
use csdchar_pgcluster::{ClusterSpec, ManagedCluster};
use csdchar_workloads::bench::Bench;
use csdchar_workloads::oltp::OltpSpec;
use csdchar_workloads::tpcb;

use crate::common;
use common::psql;

// The tests whose runs take a different path on the io_uring client driver run again on it
// (the others load, check or clean up, where the driver plays no part).
crate::on_uring_too!("prepare_and_run_through_the_library");

/// sysbench's oltp_read_only on 2 x 2000 rows at fillfactor 70, steps of 1
/// and 2 clients, 1 s each: what the CLI makes of [`CLI_ARGS`].
fn job() -> DbJob {
    DbJob {
        bench: Bench::Sysbench(OltpSpec {
            workload: OltpWorkload::ReadOnly,
            tables: 2,
            table_size: 2000,
            range_size: 100,
            options: OltpOptions::default(),
            rand_type: RandType::Uniform,
            fillfactor: Some(70),
            string_dup: 0,
            create_secondary: true,
            seed: 1,
            schema: "public".into(),
        }),
        schema: "public".into(),
        load: LoadSettings {
            force: false,
            tpcb_init_mode: tpcb::InitMode::Client,
            warehouse_range: None,
        },
        run: RunPlan {
            threads: vec![1, 2],
            time: Duration::from_secs(1),
            warmup: Duration::ZERO,
            rate: None,
            report_interval: Some(Duration::from_millis(500)),
            percentiles: vec![95.0],
            protocol: None,
            pipeline: false,
            reconnect: false,
            drop_caches: false,
            io_sampling: true,
            start_at: None,
            // The driver the CLI takes from CSDCHAR_CLIENT_IO too.
            client_io: csdchar_dbloop::settings::ClientIoSettings {
                client_io: common::client_io(),
                client_threads: None,
            },
        },
        requested: Requested {
            fillfactor: Some(70),
            ..Requested::default()
        },
        study_fillfactors: Vec::new(),
        study_repeat: 1,
        server_memory_limit: None,
        range_size: 100,
        string_dup: 0,
    }
}

/// The CLI options [`job`] stands for, but for `--fillfactor` and `--threads`.
const CLI_ARGS: &[&str] = &[
    "--workload",
    "oltp-read-only",
    "--tables",
    "2",
    "--table-size",
    "2000",
    "--time",
    "1s",
    "--report-interval",
    "500ms",
];

/// Everything the library reported, in order.
#[derive(Default)]
struct Recorder {
    events: Vec<String>,
    notes: Vec<DbNote>,
    rows: Arc<AtomicU64>,
    intervals: usize,
    steps: Vec<(u32, Protocol)>,
}

impl DbObserver for Recorder {
    fn note(&mut self, note: &DbNote) {
        self.notes.push(note.clone());
    }
    fn load_started(&mut self, bench: &Bench, total_rows: u64) -> LoadProgress {
        self.events.push(format!(
            "load {} {total_rows}",
            bench.fillfactor().unwrap_or(0)
        ));
        let rows = Arc::clone(&self.rows);
        Arc::new(move |n| {
            rows.fetch_add(n, Ordering::Relaxed);
        })
    }
    fn load_ended(&mut self, _: &Bench, end: &Result<LoadReport, LoadError>) {
        self.events.push(match end {
            Ok(r) => format!("loaded {}", r.loaded_rows),
            Err(e) => format!("load failed: {e}"),
        });
    }
    fn warmup_started(&mut self, loads: usize, fillfactor: u8) {
        self.events.push(format!("warm-up {loads} {fillfactor}"));
    }
    fn step_started(&mut self, _: &Bench, threads: u32, clients: u32, _: Duration) {
        self.events.push(format!("step {threads} {clients}"));
    }
    fn interval(&mut self, _: &Bench, _: &OltpInterval, _: u32) {
        self.intervals += 1;
    }
    fn step_finished(&mut self, _: &Bench, step: &DbStep, protocol: Protocol) {
        self.steps.push((step.threads, protocol));
    }
}

/// A managed cluster, its URL, and the library's session on it.
fn server(rt: &tokio::runtime::Runtime) -> (ManagedCluster, String, DbServer) {
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let url = cluster.conninfo("postgres");
    let session = session::open(
        &ServerChoice {
            url: Some(url.clone()),
            cluster: ClusterSpec::default(),
            db: "postgres".into(),
        },
        "public",
        2,
    )
    .unwrap();
    assert_eq!(session.source, ServerSource::Url);
    assert!(session.cluster.is_none() && session.left_running().is_none());
    let server = rt.block_on(session.probe()).unwrap();
    (cluster, url, server)
}

/// `csdchar db STEP --url URL CLI_ARGS EXTRA --output-format json`, as JSON.
fn cli_json(step: &str, url: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["db", step, "--url", url];
    args.extend_from_slice(CLI_ARGS);
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--output-format", "json"]);
    let ran = common::csdchar(&args);
    assert_eq!(ran.outcome.exit_code, 0, "{args:?}: {}", ran.stderr);
    serde_json::from_str(&ran.stdout).unwrap()
}

/// Relation names of a step's snapshot.
fn relations(snapshot: &serde_json::Value) -> Vec<String> {
    snapshot["relations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn prepare_and_run_through_the_library_give_the_cli_result() {
    if !common::postgres_or_skip() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (cluster, url, server) = server(&rt);
    let interrupt = Arc::new(AtomicBool::new(false));
    let job = job();

    let mut seen = Recorder::default();
    let loaded = rt
        .block_on(orchestrate::prepare(&server, &job, &mut seen, &interrupt))
        .unwrap();
    assert_eq!((loaded.total_rows, loaded.loaded_rows), (4000, 4000));
    assert_eq!(loaded.fillfactor, Some(70));
    assert_eq!(seen.rows.load(Ordering::Relaxed), 4000);
    assert_eq!(seen.events, ["load 70 4000", "loaded 4000"]);
    assert_eq!(psql(&cluster, "select count(*) from sbtest2"), "2000");

    // Loading again without force is refused, and says so to the observer too.
    let again = rt.block_on(orchestrate::prepare(&server, &job, &mut Quiet, &interrupt));
    assert!(
        matches!(&again, Err(LoadError::TablesExist(m)) if m.contains("exist already")),
        "{again:?}"
    );

    let mut seen = Recorder::default();
    let lib = rt
        .block_on(orchestrate::run(&server, &job, &mut seen, &interrupt))
        .unwrap();
    assert_eq!(seen.events, ["step 1 1", "step 2 2"]);
    assert_eq!(
        seen.steps,
        [(1, Protocol::Prepared), (2, Protocol::Prepared)]
    );
    assert!(seen.intervals >= 2, "{} intervals", seen.intervals);
    assert!(seen.notes.is_empty(), "{:?}", seen.notes);
    assert!(!lib.interrupted && lib.error.is_none());
    assert_eq!(lib.server, "url");
    let lib = serde_json::to_value(&lib).unwrap();
    common::assert_matches_schema(&lib, "db");

    let cli = cli_json("run", &url, &["--fillfactor", "70", "--threads", "1,2"]);
    common::assert_matches_schema(&cli, "db");
    // The same options make the same spec, and the same steps measured the same way.
    assert_eq!(lib["spec"], cli["spec"]);
    for v in [&lib, &cli] {
        let steps = v["steps"].as_array().unwrap();
        let threads: Vec<u64> = steps
            .iter()
            .map(|s| s["threads"].as_u64().unwrap())
            .collect();
        assert_eq!(threads, [1, 2]);
        for s in steps {
            assert!(s["transactions"].as_u64().unwrap() > 0, "{s}");
            assert!(!s["intervals"].as_array().unwrap().is_empty());
            for snap in [&s["before"], &s["after"]] {
                assert_eq!(relations(snap), ["sbtest1", "sbtest2"]);
            }
        }
        assert_eq!(v["spec"]["fillfactor"], 70);
    }

    // The tables decide: asked for another fillfactor, the run notes theirs.
    let mut seen = Recorder::default();
    let asked_80 = DbJob {
        requested: Requested {
            fillfactor: Some(80),
            ..Requested::default()
        },
        run: RunPlan {
            threads: vec![1],
            ..job.run.clone()
        },
        ..job.clone()
    };
    let r = rt
        .block_on(orchestrate::run(&server, &asked_80, &mut seen, &interrupt))
        .unwrap();
    assert_eq!(
        seen.notes,
        [DbNote::FillfactorFromTables {
            given: 80,
            found: 70
        }]
    );
    assert_eq!(r.spec.fillfactor, Some(70));

    // Interrupted before its first step, a run still returns its (empty) result.
    let stopped = Arc::new(AtomicBool::new(true));
    match rt.block_on(orchestrate::run(&server, &job, &mut Quiet, &stopped)) {
        Err(JobError::Interrupted {
            partial: Some(partial),
        }) => {
            assert!(partial.interrupted && partial.steps.is_empty());
        }
        other => panic!("{other:?}"),
    }

    let dropped = rt
        .block_on(orchestrate::cleanup(&server.conninfo, &job))
        .unwrap();
    assert_eq!(dropped, ["sbtest1", "sbtest2"]);
    // Without tables a run fails before measuring anything.
    match rt.block_on(orchestrate::run(&server, &job, &mut Quiet, &interrupt)) {
        Err(JobError::Failed {
            message,
            partial: None,
        }) => assert!(message.contains("missing"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn study_through_the_library_gives_the_cli_result() {
    if !common::postgres_or_skip() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (_cluster, url, server) = server(&rt);
    let interrupt = Arc::new(AtomicBool::new(false));
    let job = DbJob {
        study_fillfactors: vec![100, 70],
        study_repeat: 1,
        run: RunPlan {
            threads: vec![1],
            ..job().run
        },
        ..job()
    };
    // The CLI's estimator: where the drive has no counters, both estimate alike.
    let estimator = csdchar_dbload::space::RelationEstimator;

    let mut seen = Recorder::default();
    let lib = rt
        .block_on(orchestrate::study(
            &server, &job, &mut seen, &estimator, &interrupt,
        ))
        .unwrap();
    let loads: Vec<&String> = seen
        .events
        .iter()
        .filter(|e| e.starts_with("load "))
        .collect();
    // Two measured loads, after the warm-up's two where the drive has counters.
    assert!(
        loads.ends_with(&[&"load 100 4000".to_string(), &"load 70 4000".to_string()]),
        "{:?}",
        seen.events
    );
    assert_eq!(lib.fillfactors, [100, 70]);
    assert_eq!(lib.rows.len(), 2);
    assert_eq!(lib.runs.len(), 2);
    for (row, ff) in lib.rows.iter().zip([100, 70]) {
        assert_eq!((row.fillfactor, row.threads), (ff, 1));
        assert!(row.relation_bytes > 0);
        assert!(row.physical_bytes.is_some(), "{row:?}");
    }
    // Lower fillfactor, more pages.
    assert!(lib.rows[1].relation_bytes > lib.rows[0].relation_bytes);
    let lib = serde_json::to_value(&lib).unwrap();
    common::assert_matches_schema(&lib, "study");

    // The tables are there now: a study without force is refused, nothing touched.
    let refused = rt.block_on(orchestrate::study(
        &server, &job, &mut Quiet, &estimator, &interrupt,
    ));
    match refused {
        Err(JobError::Refused(Refusal::TablesExist { schema, tables })) => {
            assert_eq!(schema, "public");
            assert_eq!(tables, ["sbtest1", "sbtest2"]);
        }
        other => panic!("{other:?}"),
    }

    let cli = cli_json(
        "study",
        &url,
        &["--threads", "1", "--fillfactor", "100,70", "--force"],
    );
    common::assert_matches_schema(&cli, "study");
    assert_eq!(lib["spec"], cli["spec"]);
    assert_eq!(lib["fillfactors"], cli["fillfactors"]);
    assert_eq!(lib["physical_method"], cli["physical_method"]);
    let shape = |v: &serde_json::Value| -> Vec<(u64, u64, bool)> {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["fillfactor"].as_u64().unwrap(),
                    r["threads"].as_u64().unwrap(),
                    r["physical_estimated"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(shape(&lib), shape(&cli));
    // Same data, same sizes.
    for (l, c) in lib["rows"]
        .as_array()
        .unwrap()
        .iter()
        .zip(cli["rows"].as_array().unwrap())
    {
        assert_eq!(l["relation_bytes"], c["relation_bytes"]);
    }
}
