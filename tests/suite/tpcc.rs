//! BenchmarkSQL-compatible TPC-C against clusters csdchar starts itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use csdchar_core::tpcc::{TpccKind, TpccMix};
use csdchar_dbloop::event::Protocol;
use csdchar_pgcluster::{ClusterSpec, ManagedCluster};
use csdchar_workloads::tpcc::{self, TpccSpec};

use crate::common;
use common::psql;

// The tests whose runs take a different path on the io_uring client driver run again on it
// (the others load, check or clean up, where the driver plays no part).
crate::on_uring_too!(
    "load_run_check_and_cleanup_follow_benchmarksql",
    "new_order_rolls_back_about_1_percent"
);

fn spec(warehouses: u32, fillfactor: Option<u8>) -> TpccSpec {
    TpccSpec {
        warehouses,
        fillfactor,
        mix: TpccMix::default(),
        seed: 7,
        schema: "public".into(),
        protocol: Protocol::Prepared,
        mode: Default::default(),
        c_load: None,
        load_method: Default::default(),
    }
}

fn counts(cluster: &ManagedCluster) -> String {
    psql(
        cluster,
        "select (select count(*) from bmsql_item) || ',' || (select count(*) from bmsql_warehouse) \
         || ',' || (select count(*) from bmsql_district) || ',' || (select count(*) from bmsql_customer) \
         || ',' || (select count(*) from bmsql_history) || ',' || (select count(*) from bmsql_oorder) \
         || ',' || (select count(*) from bmsql_new_order) || ',' || (select count(*) from bmsql_stock) \
         || ',' || (select count(*) from bmsql_config)",
    )
}

fn expected_counts(w: u64) -> String {
    format!(
        "100000,{w},{},{},{},{},{},{},4",
        10 * w,
        30_000 * w,
        30_000 * w,
        30_000 * w,
        9_000 * w,
        100_000 * w
    )
}

/// Order lines: 5–15 per order, sum(o_ol_cnt) of them, about 10 per order.
fn assert_order_lines(cluster: &ManagedCluster, w: u64) {
    let v = psql(
        cluster,
        "select (select count(*) from bmsql_order_line) || ',' || (select sum(o_ol_cnt) from bmsql_oorder) \
         || ',' || (select min(o_ol_cnt) from bmsql_oorder) || ',' || (select max(o_ol_cnt) from bmsql_oorder)",
    );
    let f: Vec<u64> = v.split(',').map(|x| x.parse().unwrap()).collect();
    assert_eq!(f[0], f[1], "{v}");
    assert_eq!((f[2], f[3]), (5, 15), "{v}");
    let per_order = f[0] as f64 / (30_000 * w) as f64;
    assert!((9.9..10.1).contains(&per_order), "{v}");
}

fn assert_consistent(rt: &tokio::runtime::Runtime, conninfo: &str, when: &str) {
    let out = rt.block_on(tpcc::check(conninfo, "public")).unwrap();
    assert_eq!(out.len(), 4);
    for c in &out {
        assert_eq!(
            c.violations, 0,
            "{when}: {} ({}) violated",
            c.name, c.description
        );
    }
}

fn reloptions(cluster: &ManagedCluster) -> String {
    psql(
        cluster,
        "select string_agg(relname || '=' || coalesce(reloptions::text, '-'), ' ' order by relname) \
         from pg_class where relname like 'bmsql_%' and relkind = 'r'",
    )
}

#[test]
fn load_run_check_and_cleanup_follow_benchmarksql() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let conninfo = cluster.conninfo("postgres");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let loaded = Arc::new(AtomicU64::new(0));
    let l2 = Arc::clone(&loaded);
    let t0 = std::time::Instant::now();
    let times = rt
        .block_on(tpcc::prepare(
            &conninfo,
            &spec(2, None),
            2,
            false,
            Arc::new(move |n| {
                l2.fetch_add(n, Ordering::Relaxed);
            }),
            None,
        ))
        .unwrap();
    let total_s = t0.elapsed().as_secs_f64();
    eprintln!(
        "load of 2 warehouses: {} rows, {:.0} rows/s during COPY, {total_s:.1} s in all ({times:?})",
        times.rows,
        times.rows as f64 / times.load_s
    );
    assert_eq!(loaded.load(Ordering::Relaxed), times.rows);
    assert_eq!(times.warehouses_loaded, [1, 2]);
    assert!(times.item_loaded && times.keys_s > 0.0 && times.vacuum_s > 0.0);
    assert_eq!(counts(&cluster), expected_counts(2));
    assert_order_lines(&cluster, 2);
    // BenchmarkSQL 5.x's fillfactors.
    assert_eq!(
        reloptions(&cluster),
        "bmsql_config=- bmsql_customer={fillfactor=90} bmsql_district={fillfactor=79} bmsql_history=- \
         bmsql_item=- bmsql_new_order=- bmsql_oorder={fillfactor=80} bmsql_order_line={fillfactor=80} \
         bmsql_stock={fillfactor=95} bmsql_warehouse={fillfactor=50}"
    );
    // Keys, the two indexes, foreign keys, history id from the sequence.
    assert_eq!(
        psql(
            &cluster,
            "select count(*) filter (where indisprimary) || ',' || count(*) from pg_index \
             where indrelid::regclass::text like 'bmsql_%'"
        ),
        "10,12"
    );
    assert_eq!(
        psql(
            &cluster,
            "select count(*) from pg_constraint where contype = 'f' and conrelid::regclass::text like 'bmsql_%'"
        ),
        "10"
    );
    assert_eq!(
        psql(&cluster, "select last_value from bmsql_hist_id_seq"),
        "60000"
    );
    // bmsql_config as BenchmarkSQL's run reads it; the run's C_LAST constant keeps its distance.
    let client = rt
        .block_on(csdchar_pgwire::client::connect(&conninfo))
        .unwrap();
    let cfg = rt.block_on(tpcc::read_config(&client, "public")).unwrap();
    assert_eq!(cfg.warehouses, 2);
    assert_eq!(
        rt.block_on(tpcc::warehouses_in(&client, "public")).unwrap(),
        2
    );
    assert_consistent(&rt, &conninfo, "after the load");

    // Without --force, existing tables are refused.
    let err = rt
        .block_on(tpcc::prepare(
            &conninfo,
            &spec(2, None),
            1,
            false,
            Arc::new(|_| {}),
            None,
        ))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--force") && err.contains("bmsql_stock"),
        "{err}"
    );

    // All five transactions at several terminals.
    let w = tpcc::workload(&TpccSpec {
        c_load: Some(cfg.constants),
        ..spec(2, None)
    });
    let out = rt
        .block_on(common::run_workload(
            &conninfo,
            Arc::new(w),
            &common::run_settings(4, 5_000, None),
            |_, _| {},
        ))
        .unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    let total = out.tally.transactions;
    eprintln!(
        "run: {total} transactions in {:.1} s, {:?}",
        out.elapsed_s,
        out.by_kind
            .iter()
            .map(|k| (k.name, k.transactions, k.rollbacks))
            .collect::<Vec<_>>()
    );
    assert!(total > 300, "{:?}", out.tally);
    let by = |k: TpccKind| &out.by_kind[k as usize];
    let mix = TpccMix::default();
    for k in TpccKind::ALL {
        assert_eq!(by(k).name, k.name());
        let share = by(k).transactions as f64 / total as f64 * 100.0;
        assert!(
            (share - mix.share(k)).abs() < 4.0,
            "{k:?}: {share:.1}% of {total}"
        );
    }
    let new_orders = by(TpccKind::NewOrder).transactions;
    let rollbacks = by(TpccKind::NewOrder).rollbacks;
    assert_eq!(out.tally.rollbacks, rollbacks);
    // Committed New-Orders added orders; rolled-back ones left nothing.
    assert_eq!(
        psql(&cluster, "select count(*) - 60000 from bmsql_oorder"),
        (new_orders - rollbacks).to_string()
    );
    assert_eq!(
        psql(&cluster, "select count(*) - 60000 from bmsql_history"),
        by(TpccKind::Payment).transactions.to_string()
    );
    assert!(
        psql(
            &cluster,
            "select count(*) from bmsql_oorder where o_id > 3000 and o_all_local = 0"
        )
        .parse::<u64>()
        .unwrap()
            <= new_orders
    );
    assert_consistent(&rt, &conninfo, "after the run");

    // The other protocols pass the same arguments (arrays, names, amounts).
    for protocol in [Protocol::Simple, Protocol::Extended] {
        let w = tpcc::workload(&TpccSpec {
            protocol,
            ..spec(2, None)
        });
        let out = rt
            .block_on(common::run_workload(
                &conninfo,
                Arc::new(w),
                &common::run_settings(2, 1_000, None),
                |_, _| {},
            ))
            .unwrap();
        assert!(out.error.is_none(), "{protocol:?}: {:?}", out.error);
        assert!(out.tally.transactions > 10, "{protocol:?}");
    }
    assert_consistent(&rt, &conninfo, "after the other protocols");

    // One warehouse with one fillfactor for all, replacing the tables.
    let times = rt
        .block_on(tpcc::prepare(
            &conninfo,
            &spec(1, Some(70)),
            2,
            true,
            Arc::new(|_| {}),
            None,
        ))
        .unwrap();
    assert_eq!(times.warehouses_loaded, [1]);
    assert_eq!(counts(&cluster), expected_counts(1));
    assert_order_lines(&cluster, 1);
    assert_eq!(
        reloptions(&cluster),
        "bmsql_config=- bmsql_customer={fillfactor=70} bmsql_district={fillfactor=70} \
         bmsql_history={fillfactor=70} bmsql_item={fillfactor=70} bmsql_new_order={fillfactor=70} \
         bmsql_oorder={fillfactor=70} bmsql_order_line={fillfactor=70} bmsql_stock={fillfactor=70} \
         bmsql_warehouse={fillfactor=70}"
    );
    assert_consistent(&rt, &conninfo, "after the reload");

    // Cleanup drops exactly BenchmarkSQL's objects.
    psql(&cluster, "create table bmsql_other (x int)");
    let dropped = rt.block_on(tpcc::cleanup(&conninfo, "public")).unwrap();
    assert_eq!(dropped.len(), 10, "{dropped:?}");
    assert_eq!(
        psql(
            &cluster,
            "select string_agg(relname, ',') from pg_class where relname like 'bmsql%' and relkind in ('r', 'S')"
        ),
        "bmsql_other"
    );
    assert_eq!(
        psql(
            &cluster,
            "select count(*) from pg_proc where proname like 'bmsql_proc_%'"
        ),
        "0"
    );
}

#[test]
fn new_order_rolls_back_about_1_percent() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let conninfo = cluster.conninfo("postgres");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(tpcc::prepare(
        &conninfo,
        &spec(1, None),
        2,
        false,
        Arc::new(|_| {}),
        None,
    ))
    .unwrap();
    // New-Order only, until enough have run for a 1% rate to show (a slow
    // machine takes more rounds, not a looser bound).
    let w = Arc::new(tpcc::workload(&TpccSpec {
        mix: TpccMix::from_others(0.0, 0.0, 0.0, 0.0).unwrap(),
        ..spec(1, None)
    }));
    let (mut n, mut rb) = (0u64, 0u64);
    let started = std::time::Instant::now();
    while n < 6_000 && started.elapsed().as_secs() < 120 {
        let out = rt
            .block_on(common::run_workload(
                &conninfo,
                Arc::clone(&w),
                &common::run_settings(2, 3_000, None),
                |_, _| {},
            ))
            .unwrap();
        assert!(out.error.is_none(), "{:?}", out.error);
        assert_eq!(out.by_kind[0].transactions, out.tally.transactions);
        n += out.by_kind[0].transactions;
        rb += out.by_kind[0].rollbacks;
    }
    assert!(n >= 2_000, "only {n} New-Orders in 2 minutes");
    let rate = rb as f64 / n as f64;
    eprintln!("{rb} rollbacks of {n} New-Orders: {:.2}%", rate * 100.0);
    // 1% of n: sd = sqrt(n * 0.0099); with n >= 2000 this is well over 4 sd wide.
    assert!((0.004..0.018).contains(&rate), "{rb} of {n}");
    assert_eq!(
        psql(&cluster, "select count(*) - 30000 from bmsql_oorder"),
        (n - rb).to_string()
    );
    assert_consistent(&rt, &conninfo, "after New-Orders");
}

#[test]
fn a_load_cut_short_fails_cleanly_says_how_far_it_got_and_resumes() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let conninfo = cluster.conninfo("postgres");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let loaded = Arc::new(AtomicU64::new(0));
    let l2 = Arc::clone(&loaded);
    let finished = AtomicBool::new(false);
    let err = std::thread::scope(|sc| {
        // Once rows flow, the server ends a loader's connection (as a crash or an operator would).
        sc.spawn(|| {
            while loaded.load(Ordering::Relaxed) < 150_000 && !finished.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            while !finished.load(Ordering::Relaxed) {
                let n = psql(
                    &cluster,
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE application_name LIKE 'csdchar-load-%' AND query LIKE 'COPY%'",
                );
                if n != "0" {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        });
        let r = rt.block_on(tpcc::prepare(
            &conninfo,
            &spec(2, None),
            2,
            false,
            Arc::new(move |n| {
                l2.fetch_add(n, Ordering::Relaxed);
            }),
            None,
        ));
        finished.store(true, Ordering::Relaxed);
        r
    })
    .unwrap_err()
    .to_string();
    eprintln!("{err}");
    assert!(
        err.contains("the load stopped: warehouses complete: ")
            && err.contains("warehouse range 1-2")
            && err.contains("--force"),
        "{err}"
    );
    // Whole warehouses only, no keys yet.
    let w: u64 = psql(&cluster, "select count(*) from bmsql_warehouse")
        .parse()
        .unwrap();
    assert!(w < 2, "{err}");
    assert_eq!(
        psql(&cluster, "select count(*) from bmsql_district")
            .parse::<u64>()
            .unwrap(),
        10 * w
    );
    assert_eq!(
        psql(&cluster, "select count(*) from bmsql_stock")
            .parse::<u64>()
            .unwrap(),
        100_000 * w
    );
    // Resume: only the missing warehouses (and item, if it was cut), then the keys.
    let times = rt
        .block_on(tpcc::prepare(
            &conninfo,
            &spec(2, None),
            2,
            false,
            Arc::new(|_| {}),
            Some((1, 2)),
        ))
        .unwrap();
    assert_eq!(times.warehouses_loaded.len() as u64, 2 - w, "{times:?}");
    assert_eq!(counts(&cluster), expected_counts(2));
    assert_order_lines(&cluster, 2);
    assert_consistent(&rt, &conninfo, "after resuming");
    // Resuming a complete load loads and builds nothing (a resume works
    // from any point, the end included).
    let again = rt
        .block_on(tpcc::prepare(
            &conninfo,
            &spec(2, None),
            2,
            false,
            Arc::new(|_| {}),
            Some((1, 2)),
        ))
        .unwrap();
    assert!(
        again.warehouses_loaded.is_empty() && !again.item_loaded,
        "{again:?}"
    );
    assert_eq!(counts(&cluster), expected_counts(2));
    assert_consistent(&rt, &conninfo, "after resuming a complete load");
    // Keys built: a range beyond the load cannot add warehouses.
    let err = rt
        .block_on(tpcc::prepare(
            &conninfo,
            &spec(3, None),
            2,
            false,
            Arc::new(|_| {}),
            Some((1, 3)),
        ))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("keys already") && err.contains("warehouses 3"),
        "{err}"
    );
    assert_eq!(
        rt.block_on(tpcc::cleanup(&conninfo, "public"))
            .unwrap()
            .len(),
        10
    );
}
