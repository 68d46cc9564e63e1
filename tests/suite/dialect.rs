//! The server dialect layer against a cluster csdchar starts itself: the
//! probe finds what PostgreSQL has; with everything hidden (the paths
//! openGauss and old PostgreSQL take) every loader writes the same data and
//! snapshots leave out what is missing; a database where '' is NULL is
//! refused before anything is written.

use std::sync::Arc;

use csdchar_core::oltp::{OltpOptions, OltpWorkload, RandType};
use csdchar_core::tpcb::TpcbScript;
use csdchar_core::tpcc::TpccMix;
use csdchar_dbload::snapshot;
use csdchar_dbloop::event::Protocol;
use csdchar_dbloop::iostat;
use csdchar_pgcluster::{ClusterSpec, ManagedCluster};
use csdchar_pgwire::client::connect;
use csdchar_pgwire::conn::with_search_path;
use csdchar_pgwire::dialect::{Dialect, Feature, STAT_DATABASE_COLUMNS, ServerKind, WalFunctions};
use csdchar_pgwire::env::ProcessEnv;
use csdchar_workloads::oltp::{self, OltpSpec};
use csdchar_workloads::pgio::{self, PgioSpec};
use csdchar_workloads::tpcb::{self, InitMode, TpcbSpec};
use csdchar_workloads::tpcc::{self, TpccSpec};

use crate::common;
use common::psql;

fn sysbench(schema: &str) -> OltpSpec {
    OltpSpec {
        workload: OltpWorkload::ReadWrite,
        tables: 2,
        table_size: 1000,
        range_size: 100,
        options: OltpOptions::default(),
        rand_type: RandType::Uniform,
        fillfactor: Some(80),
        string_dup: 0,
        create_secondary: true,
        seed: 3,
        schema: schema.into(),
    }
}

fn pgbench(schema: &str) -> TpcbSpec {
    TpcbSpec {
        script: TpcbScript::TpcbLike,
        scale: 1,
        fillfactor: Some(90),
        protocol: Protocol::Prepared,
        seed: 3,
        schema: schema.into(),
    }
}

fn benchmarksql(schema: &str) -> TpccSpec {
    TpccSpec {
        warehouses: 1,
        fillfactor: Some(85),
        mix: TpccMix::default(),
        seed: 3,
        schema: schema.into(),
        protocol: Protocol::Prepared,
        mode: Default::default(),
        load_method: Default::default(),
        c_load: None,
    }
}

fn slob(schema: &str) -> PgioSpec {
    PgioSpec {
        schemas: 1,
        blocks_per_schema: 1024,
        update_pct: 25,
        work_unit: 255,
        update_work_unit: 8,
        seed: 3,
        schema: schema.into(),
        server_side: true,
    }
}

fn conninfo(c: &ManagedCluster, schema: &str) -> String {
    with_search_path(&c.conninfo("postgres"), schema, &ProcessEnv).unwrap()
}

fn no_progress() -> Arc<dyn Fn(u64) + Send + Sync> {
    Arc::new(|_| {})
}

/// sysbench's, pgbench's and pgio's loaders into `schema` on a server of `d`.
fn load_all(rt: &tokio::runtime::Runtime, c: &ManagedCluster, d: &Dialect, schema: &str) {
    let ci = conninfo(c, schema);
    rt.block_on(async {
        oltp::prepare_with(&ci, &sysbench(schema), d, 1, false, no_progress())
            .await
            .unwrap_or_else(|e| panic!("sysbench: {e}"));
        tpcb::prepare_with(
            &ci,
            &pgbench(schema),
            d,
            InitMode::Client,
            2,
            false,
            no_progress(),
        )
        .await
        .unwrap_or_else(|e| panic!("pgbench: {e}"));
        pgio::prepare_with(&ci, &slob(schema), d, 1, false, no_progress())
            .await
            .unwrap_or_else(|e| panic!("pgio: {e}"));
    });
}

/// md5 of a table's rows in key order, with its row count.
fn digest(c: &ManagedCluster, schema: &str, table: &str, key: &str) -> String {
    psql(
        c,
        &format!(
            "select count(*) || ':' || md5(string_agg(t::text, '|' order by {key})) from {schema}.{table} t"
        ),
    )
}

/// The reloptions of `schema`'s tables named like `pattern`.
fn reloptions(c: &ManagedCluster, schema: &str, pattern: &str) -> String {
    psql(
        c,
        &format!(
            "select string_agg(relname || '=' || coalesce(reloptions::text, '-'), ' ' order by relname) \
             from pg_class where relnamespace = '{schema}'::regnamespace and relkind = 'r' and relname like '{pattern}'"
        ),
    )
}

/// Heap pages of `rel` and how many of them the visibility map has all-frozen;
/// None without the pg_visibility extension.
fn frozen_pages(c: &ManagedCluster, rel: &str) -> Option<(i64, i64)> {
    let out = c
        .client("psql")
        .args([
            "-At",
            "-d",
            "postgres",
            "-c",
            "create extension if not exists pg_visibility",
            "-c",
            &format!(
                "select pg_relation_size('{rel}') / 8192 || ',' || all_frozen \
                 from pg_visibility_map_summary('{rel}')"
            ),
        ])
        .output()
        .unwrap();
    if !out.status.success() {
        eprintln!(
            "no frozen-page check: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last()?;
    let (pages, frozen) = line.split_once(',')?;
    Some((pages.parse().ok()?, frozen.parse().ok()?))
}

#[test]
fn probe_finds_what_postgresql_has_and_snapshots_follow_it() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let num: u32 = psql(&cluster, "show server_version_num").parse().unwrap();
    let client = rt.block_on(connect(&cluster.conninfo("postgres"))).unwrap();
    let d = rt.block_on(Dialect::probe(&client)).unwrap();
    eprintln!("{}", d.describe());
    assert_eq!(d.kind, ServerKind::PostgreSql);
    assert_eq!(d.database, "postgres");
    assert_eq!(d.version_num, num);
    assert_eq!(d.server_version, psql(&cluster, "show server_version"));
    assert_eq!(d.compatibility, None);
    assert!(!d.empty_string_is_null);
    assert!(d.check_loadable().is_ok());
    assert_eq!((d.copy_freeze, d.on_conflict), (num >= 90300, num >= 90500));
    assert_eq!(
        d.wal,
        Some(if num >= 100000 {
            WalFunctions::WAL
        } else {
            WalFunctions::XLOG
        })
    );
    assert_eq!(d.wal_dir_listing, num >= 100000);
    assert_eq!(d.activity_backend_type, num >= 100000);
    assert_eq!(d.stat_checkpointer, num >= 170000);
    assert!(d.stat_bgwriter);
    assert_eq!(d.stat_database_columns, STAT_DATABASE_COLUMNS.to_vec());

    // Snapshots: what is there is recorded, what is hidden is left out.
    let hidden = d.clone().without(&Feature::ALL);
    let names = vec!["pg_class".to_string()];
    let full = rt.block_on(snapshot::take(&client, &d, &names));
    let bare = rt.block_on(snapshot::take(&client, &hidden, &names));
    assert!(full.wal_lsn_bytes.is_some_and(|b| b > 0), "{full:?}");
    assert_eq!(bare.wal_lsn_bytes, None);
    assert!(
        full.stat_database.contains_key("deadlocks")
            && full.stat_database.contains_key("temp_bytes")
    );
    assert!(
        bare.stat_database.contains_key("blks_read")
            && bare.stat_database.contains_key("xact_commit")
    );
    assert!(
        !bare.stat_database.contains_key("deadlocks")
            && !bare.stat_database.contains_key("temp_bytes")
    );
    assert!(!full.bgwriter.is_empty() && bare.bgwriter.is_empty());
    assert_eq!(
        full.bgwriter.keys().any(|k| k.starts_with("checkpointer_")),
        d.stat_checkpointer
    );
    assert!(full.database_bytes > 0 && bare.database_bytes > 0);
    // The WAL directory: superusers may list it from 10 on.
    assert_eq!(
        rt.block_on(snapshot::wal_dir_bytes(&client, &d)).is_some(),
        num >= 100000
    );
    assert_eq!(rt.block_on(snapshot::wal_dir_bytes(&client, &hidden)), None);
    // The WAL position by the found pair moves with writes.
    let a = rt.block_on(snapshot::wal_bytes(&client, &d)).unwrap();
    psql(
        &cluster,
        "create table wal_moves as select generate_series(1, 10000) g",
    );
    let b = rt.block_on(snapshot::wal_bytes(&client, &d)).unwrap();
    assert!(b > a, "{a} -> {b}");
    // Settling counts other sessions with and without backend_type.
    for dd in [&d, &hidden] {
        assert!(rt.block_on(iostat::settle_with(
            &client,
            dd,
            std::time::Duration::from_secs(5)
        )));
    }
    assert!(
        rt.block_on(iostat::shared_buffers_bytes(&client))
            .is_some_and(|b| b
                == psql(
                    &cluster,
                    "select pg_size_bytes(current_setting('shared_buffers'))"
                )
                .parse::<u64>()
                .unwrap())
    );
}

#[test]
fn loaders_without_any_feature_write_the_same_data() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let full = rt
        .block_on(Dialect::probe_conninfo(&cluster.conninfo("postgres")))
        .unwrap();
    let hidden = full.clone().without(&Feature::ALL);
    let t0 = std::time::Instant::now();
    load_all(&rt, &cluster, &full, "probed");
    load_all(&rt, &cluster, &hidden, "bare");
    eprintln!("loads: {:.1} s", t0.elapsed().as_secs_f64());

    // The same rows, whichever path loaded them.
    for (table, key) in [
        ("sbtest1", "id"),
        ("sbtest2", "id"),
        ("pgbench_branches", "bid"),
        ("pgbench_tellers", "tid"),
        ("pgbench_accounts", "aid"),
        ("pgio1", "mykey"),
    ] {
        let (a, b) = (
            digest(&cluster, "probed", table, key),
            digest(&cluster, "bare", table, key),
        );
        assert_eq!(a, b, "{table}");
    }
    assert!(digest(&cluster, "bare", "sbtest1", "id").starts_with("1000:"));
    assert!(digest(&cluster, "bare", "pgbench_accounts", "aid").starts_with("100000:"));
    assert!(digest(&cluster, "bare", "pgio1", "mykey").starts_with("1024:"));
    assert_eq!(
        psql(
            &cluster,
            "select count(*) from bare.pgbench_accounts where filler is null or octet_length(filler) <> 84"
        ),
        "0"
    );
    for schema in ["probed", "bare"] {
        assert_eq!(
            reloptions(&cluster, schema, "sbtest%"),
            "sbtest1={fillfactor=80} sbtest2={fillfactor=80}"
        );
        assert_eq!(
            reloptions(&cluster, schema, "pgbench%"),
            "pgbench_accounts={fillfactor=90} pgbench_branches={fillfactor=90} \
             pgbench_history=- pgbench_tellers={fillfactor=90}"
        );
        assert_eq!(
            reloptions(&cluster, schema, "pgio%"),
            "pgio1={fillfactor=10}"
        );
    }
    // FREEZE where the server has it, not where the dialect says it does not.
    if let (Some((pages, frozen)), Some((hpages, hfrozen))) = (
        frozen_pages(&cluster, "probed.pgio1"),
        frozen_pages(&cluster, "bare.pgio1"),
    ) {
        assert_eq!((frozen, hpages), (pages, pages), "probed.pgio1 frozen");
        // PostgreSQL 16 on may freeze opportunistically when vacuum prunes.
        if full.version_num < 160000 {
            assert_eq!(hfrozen, 0, "bare.pgio1 frozen");
        }
        let (apages, afrozen) = frozen_pages(&cluster, "probed.pgbench_accounts").unwrap();
        assert_eq!(afrozen, apages, "probed.pgbench_accounts frozen");
        let (_, hafrozen) = frozen_pages(&cluster, "bare.pgbench_accounts").unwrap();
        if full.version_num < 160000 {
            assert_eq!(hafrozen, 0, "bare.pgbench_accounts frozen");
        }
    }
}

#[test]
fn tpcc_without_any_feature_loads_consistent_warehouses() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let hidden = rt
        .block_on(Dialect::probe_conninfo(&cluster.conninfo("postgres")))
        .unwrap()
        .without(&Feature::ALL);
    let ci = conninfo(&cluster, "bare");
    let times = rt
        .block_on(tpcc::prepare_with(
            &ci,
            &benchmarksql("bare"),
            &hidden,
            2,
            false,
            no_progress(),
            None,
        ))
        .unwrap_or_else(|e| panic!("tpcc: {e}"));
    assert_eq!(times.warehouses_loaded, [1]);
    // TPC-C: BenchmarkSQL's row counts, the consistency conditions, one fillfactor.
    assert_eq!(
        psql(
            &cluster,
            "select (select count(*) from bare.bmsql_item) || ',' || (select count(*) from bare.bmsql_warehouse) \
             || ',' || (select count(*) from bare.bmsql_district) || ',' || (select count(*) from bare.bmsql_customer) \
             || ',' || (select count(*) from bare.bmsql_oorder) || ',' || (select count(*) from bare.bmsql_new_order) \
             || ',' || (select count(*) from bare.bmsql_stock)"
        ),
        "100000,1,10,30000,30000,9000,100000"
    );
    let checks = rt.block_on(tpcc::check(&ci, "bare")).unwrap();
    assert_eq!(checks.len(), 4);
    assert!(checks.iter().all(|c| c.violations == 0), "{checks:?}");
    let mut expected: Vec<String> = tpcc::table_names()
        .iter()
        .map(|t| match t.as_str() {
            "bmsql_config" => format!("{t}=-"),
            _ => format!("{t}={{fillfactor=85}}"),
        })
        .collect();
    expected.sort();
    assert_eq!(reloptions(&cluster, "bare", "bmsql%"), expected.join(" "));
    // The transaction functions (array_length, not 9.4's cardinality) work.
    let by_name = psql(
        &cluster,
        "set search_path to bare; \
         select bmsql_proc_payment(1, 1, 1, 1, 0, (select c_last from bmsql_customer where c_id = 1 and c_d_id = 1), 5.00) > 0",
    );
    assert_eq!(by_name.lines().last(), Some("t"));
    let order = psql(
        &cluster,
        "set search_path to bare; select bmsql_proc_new_order(1, 1, 1, '{1,1}', '{1,2}', '{3,4}') > 0",
    );
    assert_eq!(order.lines().last(), Some("t"));
}

#[test]
fn empty_string_as_null_is_refused_before_anything_is_written() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let probed = rt
        .block_on(Dialect::probe_conninfo(&cluster.conninfo("postgres")))
        .unwrap();
    // What openGauss reports in its default compatibility mode.
    let a_mode = Dialect {
        kind: ServerKind::OpenGauss,
        compatibility: Some("A".into()),
        empty_string_is_null: true,
        ..probed.clone()
    }
    .without(&[Feature::CopyFreeze, Feature::OnConflict]);
    // An existing table that --force would otherwise drop.
    psql(
        &cluster,
        "create schema kept; create table kept.sbtest1 (id int); insert into kept.sbtest1 values (1)",
    );
    let ci = conninfo(&cluster, "refused");
    let kept = conninfo(&cluster, "kept");
    let errors = rt.block_on(async {
        vec![
            oltp::prepare_with(&ci, &sysbench("refused"), &a_mode, 1, false, no_progress())
                .await
                .map(|_| ()),
            oltp::prepare_with(&kept, &sysbench("kept"), &a_mode, 1, true, no_progress())
                .await
                .map(|_| ()),
            tpcb::prepare_with(
                &ci,
                &pgbench("refused"),
                &a_mode,
                InitMode::Server,
                1,
                true,
                no_progress(),
            )
            .await
            .map(|_| ()),
            tpcc::prepare_with(
                &ci,
                &benchmarksql("refused"),
                &a_mode,
                1,
                true,
                no_progress(),
                None,
            )
            .await
            .map(|_| ()),
            pgio::prepare_with(&ci, &slob("refused"), &a_mode, 1, true, no_progress())
                .await
                .map(|_| ()),
        ]
    });
    for r in errors {
        let e = r.expect_err("refused").0;
        for part in [
            "database postgres",
            "compatibility mode A",
            "openGauss",
            "CREATE DATABASE postgres_pg DBCOMPATIBILITY 'PG'",
            "dbname=postgres_pg",
        ] {
            assert!(e.contains(part), "{part}: {e}");
        }
    }
    // Nothing created, nothing dropped.
    assert_eq!(
        psql(
            &cluster,
            "select count(*) from pg_namespace where nspname = 'refused'"
        ),
        "0"
    );
    assert_eq!(psql(&cluster, "select count(*) from kept.sbtest1"), "1");
    assert_eq!(
        psql(
            &cluster,
            "select count(*) from pg_class where relname like 'sbtest%' or relname like 'pgbench%' or relname like 'bmsql%' or relname like 'pgio%'"
        ),
        "1"
    );
    // The same server in its own dialect loads.
    rt.block_on(oltp::prepare_with(
        &ci,
        &sysbench("refused"),
        &probed,
        1,
        false,
        no_progress(),
    ))
    .unwrap();
    assert_eq!(
        psql(&cluster, "select count(*) from refused.sbtest2"),
        "1000"
    );
}
