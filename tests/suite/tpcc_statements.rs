//! TPC-C statement mode (the default): what the server executed, read from
//! its own pg_stat_statements, is BenchmarkSQL 5.0's list per transaction
//! type; it runs on a database without any function of csdchar's (loaded
//! the BenchmarkSQL way, with batched INSERTs); procedure mode creates its
//! functions when missing; both keep the consistency conditions; results
//! record the mode.

use std::collections::BTreeMap;
use std::sync::Arc;

use csdchar_core::tpcc::{TpccKind, TpccMix};
use csdchar_dbloop::event::Protocol;
use csdchar_pgcluster::{ClusterSpec, ManagedCluster};
use csdchar_workloads::tpcc::{self, LoadMethod, TpccMode, TpccSpec};

use crate::common;
use common::psql;

// The tests whose runs take a different path on the io_uring client driver run again on it
// (the others load, check or clean up, where the driver plays no part).
crate::on_uring_too!("statement_mode_sends_benchmarksqls_statements");

/// BenchmarkSQL 5.0's statements as `jTPCCConnection.java` (release 5.0)
/// builds them, `?` numbered `$1`…: copied from its source here, apart
/// from csdchar's own list, so a change on either side shows.
const NO_SELECT_WHSE_CUST: &str = "SELECT c_discount, c_last, c_credit, w_tax     FROM bmsql_customer     JOIN bmsql_warehouse ON (w_id = c_w_id)     WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3";
const NO_SELECT_DIST: &str = "SELECT d_tax, d_next_o_id     FROM bmsql_district     WHERE d_w_id = $1 AND d_id = $2     FOR UPDATE";
const NO_UPDATE_DIST: &str = "UPDATE bmsql_district     SET d_next_o_id = d_next_o_id + 1     WHERE d_w_id = $1 AND d_id = $2";
const NO_INSERT_ORDER: &str = "INSERT INTO bmsql_oorder (    o_id, o_d_id, o_w_id, o_c_id, o_entry_d,     o_ol_cnt, o_all_local) VALUES ($1, $2, $3, $4, $5, $6, $7)";
const NO_INSERT_NEW_ORDER: &str =
    "INSERT INTO bmsql_new_order (    no_o_id, no_d_id, no_w_id) VALUES ($1, $2, $3)";
const NO_SELECT_STOCK: &str = "SELECT s_quantity, s_data,        s_dist_01, s_dist_02, s_dist_03, s_dist_04,        s_dist_05, s_dist_06, s_dist_07, s_dist_08,        s_dist_09, s_dist_10     FROM bmsql_stock     WHERE s_w_id = $1 AND s_i_id = $2     FOR UPDATE";
const NO_SELECT_ITEM: &str =
    "SELECT i_price, i_name, i_data     FROM bmsql_item     WHERE i_id = $1";
const NO_UPDATE_STOCK: &str = "UPDATE bmsql_stock     SET s_quantity = $1, s_ytd = s_ytd + $2,         s_order_cnt = s_order_cnt + 1,         s_remote_cnt = s_remote_cnt + $3     WHERE s_w_id = $4 AND s_i_id = $5";
const NO_INSERT_ORDER_LINE: &str = "INSERT INTO bmsql_order_line (    ol_o_id, ol_d_id, ol_w_id, ol_number,     ol_i_id, ol_supply_w_id, ol_quantity,     ol_amount, ol_dist_info) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
const PAY_SELECT_WAREHOUSE: &str = "SELECT w_name, w_street_1, w_street_2, w_city,        w_state, w_zip     FROM bmsql_warehouse     WHERE w_id = $1 ";
const PAY_SELECT_DISTRICT: &str = "SELECT d_name, d_street_1, d_street_2, d_city,        d_state, d_zip     FROM bmsql_district     WHERE d_w_id = $1 AND d_id = $2";
/// Payment's and Order-Status's (the same text).
const SELECT_CUSTOMER_LIST_BY_LAST: &str = "SELECT c_id     FROM bmsql_customer     WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3     ORDER BY c_first";
const PAY_SELECT_CUSTOMER: &str = "SELECT c_first, c_middle, c_last, c_street_1, c_street_2,        c_city, c_state, c_zip, c_phone, c_since, c_credit,        c_credit_lim, c_discount, c_balance     FROM bmsql_customer     WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3     FOR UPDATE";
const PAY_SELECT_CUSTOMER_DATA: &str =
    "SELECT c_data     FROM bmsql_customer     WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3";
const PAY_UPDATE_WAREHOUSE: &str =
    "UPDATE bmsql_warehouse     SET w_ytd = w_ytd + $1     WHERE w_id = $2";
const PAY_UPDATE_DISTRICT: &str =
    "UPDATE bmsql_district     SET d_ytd = d_ytd + $1     WHERE d_w_id = $2 AND d_id = $3";
const PAY_UPDATE_CUSTOMER: &str = "UPDATE bmsql_customer     SET c_balance = c_balance - $1,         c_ytd_payment = c_ytd_payment + $2,         c_payment_cnt = c_payment_cnt + 1     WHERE c_w_id = $3 AND c_d_id = $4 AND c_id = $5";
const PAY_UPDATE_CUSTOMER_WITH_DATA: &str = "UPDATE bmsql_customer     SET c_balance = c_balance - $1,         c_ytd_payment = c_ytd_payment + $2,         c_payment_cnt = c_payment_cnt + 1,         c_data = $3     WHERE c_w_id = $4 AND c_d_id = $5 AND c_id = $6";
const PAY_INSERT_HISTORY: &str = "INSERT INTO bmsql_history (    h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id,     h_date, h_amount, h_data) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
const OS_SELECT_CUSTOMER: &str = "SELECT c_first, c_middle, c_last, c_balance     FROM bmsql_customer     WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3";
const OS_SELECT_LAST_ORDER: &str = "SELECT o_id, o_entry_d, o_carrier_id     FROM bmsql_oorder     WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3       AND o_id = (          SELECT max(o_id)               FROM bmsql_oorder               WHERE o_w_id = $4 AND o_d_id = $5 AND o_c_id = $6          )";
const OS_SELECT_ORDER_LINE: &str = "SELECT ol_i_id, ol_supply_w_id, ol_quantity,        ol_amount, ol_delivery_d     FROM bmsql_order_line     WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3     ORDER BY ol_w_id, ol_d_id, ol_o_id, ol_number";
const SL_SELECT_LOW: &str = "SELECT count(*) AS low_stock FROM (    SELECT s_w_id, s_i_id, s_quantity         FROM bmsql_stock         WHERE s_w_id = $1 AND s_quantity < $2 AND s_i_id IN (            SELECT ol_i_id                 FROM bmsql_district                 JOIN bmsql_order_line ON ol_w_id = d_w_id                  AND ol_d_id = d_id                  AND ol_o_id >= d_next_o_id - 20                  AND ol_o_id < d_next_o_id                 WHERE d_w_id = $3 AND d_id = $4         )     ) AS L";
const DL_SELECT_OLDEST_NEW_ORDER: &str = "SELECT no_o_id     FROM bmsql_new_order     WHERE no_w_id = $1 AND no_d_id = $2     ORDER BY no_o_id ASC";
const DL_DELETE_OLDEST_NEW_ORDER: &str =
    "DELETE FROM bmsql_new_order     WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3";
const DL_SELECT_ORDER: &str =
    "SELECT o_c_id     FROM bmsql_oorder     WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3";
const DL_UPDATE_ORDER: &str = "UPDATE bmsql_oorder     SET o_carrier_id = $1     WHERE o_w_id = $2 AND o_d_id = $3 AND o_id = $4";
const DL_SELECT_SUM_OL_AMOUNT: &str = "SELECT sum(ol_amount) AS sum_ol_amount     FROM bmsql_order_line     WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3";
const DL_UPDATE_ORDER_LINE: &str = "UPDATE bmsql_order_line     SET ol_delivery_d = $1     WHERE ol_w_id = $2 AND ol_d_id = $3 AND ol_o_id = $4";
const DL_UPDATE_CUSTOMER: &str = "UPDATE bmsql_customer     SET c_balance = c_balance + $1,         c_delivery_cnt = c_delivery_cnt + 1     WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4";

/// The statements each type sends in BenchmarkSQL 5.0 (`jTPCCTData`),
/// with the driver's BEGIN/COMMIT/ROLLBACK (autocommit off).
fn benchmarksql_statements(kind: TpccKind) -> Vec<&'static str> {
    match kind {
        TpccKind::NewOrder => vec![
            "BEGIN",
            NO_SELECT_DIST,
            NO_SELECT_WHSE_CUST,
            NO_UPDATE_DIST,
            NO_INSERT_ORDER,
            NO_INSERT_NEW_ORDER,
            NO_SELECT_ITEM,
            NO_SELECT_STOCK,
            NO_UPDATE_STOCK,
            NO_INSERT_ORDER_LINE,
            "COMMIT",
            "ROLLBACK",
        ],
        TpccKind::Payment => vec![
            "BEGIN",
            PAY_UPDATE_DISTRICT,
            PAY_SELECT_DISTRICT,
            PAY_UPDATE_WAREHOUSE,
            PAY_SELECT_WAREHOUSE,
            SELECT_CUSTOMER_LIST_BY_LAST,
            PAY_SELECT_CUSTOMER,
            PAY_SELECT_CUSTOMER_DATA,
            PAY_UPDATE_CUSTOMER,
            PAY_UPDATE_CUSTOMER_WITH_DATA,
            PAY_INSERT_HISTORY,
            "COMMIT",
        ],
        TpccKind::OrderStatus => vec![
            "BEGIN",
            SELECT_CUSTOMER_LIST_BY_LAST,
            OS_SELECT_CUSTOMER,
            OS_SELECT_LAST_ORDER,
            OS_SELECT_ORDER_LINE,
            "ROLLBACK",
        ],
        TpccKind::StockLevel => vec!["BEGIN", SL_SELECT_LOW, "ROLLBACK"],
        TpccKind::Delivery => vec![
            "BEGIN",
            DL_SELECT_OLDEST_NEW_ORDER,
            DL_DELETE_OLDEST_NEW_ORDER,
            DL_UPDATE_ORDER,
            DL_SELECT_ORDER,
            DL_UPDATE_ORDER_LINE,
            DL_SELECT_SUM_OL_AMOUNT,
            DL_UPDATE_CUSTOMER,
            "COMMIT",
        ],
    }
}

/// `sql` as pg_stat_statements shows it: each integer constant replaced by
/// the next parameter number, in the order they appear; trailing blanks cut.
fn normalized(sql: &str) -> String {
    let sql = sql.trim_end();
    let mut next = (1..=20)
        .rev()
        .find(|n| sql.contains(&format!("${n}")))
        .unwrap_or(0)
        + 1;
    let b = sql.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let starts_word =
            i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'$');
        if b[i].is_ascii_digit() && starts_word {
            let end = (i..b.len())
                .find(|&j| !b[j].is_ascii_digit())
                .unwrap_or(b.len());
            if end == b.len() || !(b[end].is_ascii_alphabetic() || b[end] == b'_') {
                out.push_str(&format!("${next}"));
                next += 1;
                i = end;
                continue;
            }
        }
        out.push(b[i] as char);
        i += 1;
    }
    out
}

#[test]
fn constants_are_numbered_as_pg_stat_statements_does() {
    assert_eq!(
        normalized(NO_UPDATE_STOCK),
        "UPDATE bmsql_stock     SET s_quantity = $1, s_ytd = s_ytd + $2,         s_order_cnt = s_order_cnt + $6,         s_remote_cnt = s_remote_cnt + $3     WHERE s_w_id = $4 AND s_i_id = $5"
    );
    assert_eq!(
        normalized(NO_SELECT_STOCK),
        NO_SELECT_STOCK,
        "s_dist_01 is a name"
    );
    assert!(normalized(SL_SELECT_LOW).contains("d_next_o_id - $5"));
}

/// A mix of `kind` only.
fn only(kind: TpccKind) -> TpccMix {
    let p = |k: TpccKind| if k == kind { 100.0 } else { 0.0 };
    TpccMix::from_others(
        p(TpccKind::Payment),
        p(TpccKind::OrderStatus),
        p(TpccKind::Delivery),
        p(TpccKind::StockLevel),
    )
    .unwrap()
}

/// Calls per statement text since the last reset, the bookkeeping of this
/// test's own sessions left out.
fn executed(cluster: &ManagedCluster) -> BTreeMap<String, u64> {
    let out = psql(
        cluster,
        "select calls || E'\\t' || replace(query, E'\\n', ' ') from pg_stat_statements \
         where query not like '%pg_stat_statements%' and query not like 'select calls%' \
         and dbid = (select oid from pg_database where datname = 'postgres')",
    );
    out.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(n, q)| (q.to_string(), n.parse().unwrap()))
        .collect()
}

fn calls(m: &BTreeMap<String, u64>, q: &str) -> u64 {
    m.get(q).copied().unwrap_or(0)
}

#[test]
fn statement_mode_sends_benchmarksqls_statements_on_a_database_without_csdchar_functions() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec {
        settings: vec![
            "shared_preload_libraries=pg_stat_statements".into(),
            "pg_stat_statements.track_utility=on".into(),
        ],
        ..ClusterSpec::default()
    })
    .unwrap();
    let conninfo = cluster.conninfo("postgres");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let spec = TpccSpec {
        warehouses: 1,
        fillfactor: None,
        mix: TpccMix::default(),
        seed: 11,
        schema: "public".into(),
        protocol: Protocol::Prepared,
        mode: TpccMode::Statements,
        c_load: None,
        load_method: LoadMethod::Copy,
    };
    rt.block_on(tpcc::prepare(
        &conninfo,
        &spec,
        1,
        false,
        Arc::new(|_| {}),
        None,
    ))
    .unwrap();
    // As on a database BenchmarkSQL loaded: none of csdchar's functions.
    psql(
        &cluster,
        "do $$ declare f text; begin for f in select oid::regprocedure::text from pg_proc \
         where proname like 'bmsql_proc_%' loop execute 'drop function ' || f; end loop; end $$",
    );
    assert_eq!(
        psql(
            &cluster,
            "select count(*) from pg_proc where proname like 'bmsql_proc_%'"
        ),
        "0"
    );
    psql(&cluster, "create extension pg_stat_statements");
    let cfg = rt
        .block_on(async {
            let c = csdchar_pgwire::client::connect(&conninfo).await?;
            tpcc::read_config(&c, "public").await
        })
        .unwrap();

    for kind in TpccKind::ALL {
        psql(&cluster, "select pg_stat_statements_reset()");
        let w = tpcc::run_workload(&TpccSpec {
            mix: only(kind),
            c_load: Some(cfg.constants),
            ..spec.clone()
        });
        let out = rt
            .block_on(common::run_workload(
                &conninfo,
                Arc::new(w),
                &common::run_settings(1, 2_000, None),
                |_, _| {},
            ))
            .unwrap();
        assert!(out.error.is_none(), "{kind:?}: {:?}", out.error);
        let n = out.by_kind[kind as usize].transactions;
        let rollbacks = out.by_kind[kind as usize].rollbacks;
        assert!(n > 10, "{kind:?}: only {n} transactions");
        assert_eq!(out.tally.transactions, n, "{kind:?}");
        let m = executed(&cluster);
        let list: Vec<String> = benchmarksql_statements(kind)
            .into_iter()
            .map(normalized)
            .collect();
        let extra: Vec<&String> = m.keys().filter(|q| !list.contains(q)).collect();
        assert!(
            extra.is_empty(),
            "{kind:?} sent what BenchmarkSQL does not: {extra:#?}"
        );
        let c = |q: &str| calls(&m, &normalized(q));
        // The client finished n transactions; the server may have seen a
        // part of one more when the step ended.
        let once = |q: &str| {
            let v = c(q);
            assert!(
                v == n || v == n + 1,
                "{kind:?}: {v} calls of {q} in {n} transactions"
            );
        };
        eprintln!("{kind:?}: {n} transactions, {rollbacks} rolled back: {m:#?}");
        once("BEGIN");
        match kind {
            TpccKind::NewOrder => {
                for q in [
                    NO_SELECT_DIST,
                    NO_SELECT_WHSE_CUST,
                    NO_UPDATE_DIST,
                    NO_INSERT_ORDER,
                    NO_INSERT_NEW_ORDER,
                ] {
                    once(q);
                }
                assert_eq!(c("COMMIT") + c("ROLLBACK"), n, "{m:#?}");
                assert_eq!(c("ROLLBACK"), rollbacks);
                // Each line: its item, its stock row locked, updated, its
                // order line; the rolled-back order's unused item has no stock.
                let lines = c(NO_SELECT_STOCK);
                assert!(c(NO_SELECT_ITEM) >= lines && c(NO_SELECT_ITEM) <= lines + rollbacks + 1);
                assert!(c(NO_UPDATE_STOCK) <= lines && c(NO_UPDATE_STOCK) + 15 >= lines);
                assert_eq!(c(NO_UPDATE_STOCK), c(NO_INSERT_ORDER_LINE));
                let per = lines as f64 / n as f64;
                assert!((8.0..=12.0).contains(&per), "{per} lines per New-Order");
            }
            TpccKind::Payment => {
                for q in [
                    PAY_UPDATE_DISTRICT,
                    PAY_SELECT_DISTRICT,
                    PAY_UPDATE_WAREHOUSE,
                    PAY_SELECT_WAREHOUSE,
                    PAY_SELECT_CUSTOMER,
                    PAY_INSERT_HISTORY,
                    "COMMIT",
                ] {
                    once(q);
                }
                // 60% by last name; 10% of customers have bad credit (C_DATA work).
                let by_last = c(SELECT_CUSTOMER_LIST_BY_LAST) as f64 / n as f64;
                assert!((0.3..0.9).contains(&by_last), "{by_last}");
                assert_eq!(
                    c(PAY_UPDATE_CUSTOMER) + c(PAY_UPDATE_CUSTOMER_WITH_DATA),
                    c(PAY_INSERT_HISTORY)
                );
                assert_eq!(
                    c(PAY_SELECT_CUSTOMER_DATA),
                    c(PAY_UPDATE_CUSTOMER_WITH_DATA)
                );
            }
            TpccKind::OrderStatus => {
                for q in [
                    OS_SELECT_CUSTOMER,
                    OS_SELECT_LAST_ORDER,
                    OS_SELECT_ORDER_LINE,
                    "ROLLBACK",
                ] {
                    once(q);
                }
                let by_last = c(SELECT_CUSTOMER_LIST_BY_LAST) as f64 / n as f64;
                assert!((0.3..0.9).contains(&by_last), "{by_last}");
            }
            TpccKind::StockLevel => {
                once(SL_SELECT_LOW);
                once("ROLLBACK");
            }
            TpccKind::Delivery => {
                once("COMMIT");
                // Ten districts, each with undelivered orders at this size:
                // one of each statement per district (one terminal: no
                // concurrent delivery takes an order first).
                for q in [
                    DL_SELECT_OLDEST_NEW_ORDER,
                    DL_DELETE_OLDEST_NEW_ORDER,
                    DL_UPDATE_ORDER,
                    DL_SELECT_ORDER,
                    DL_UPDATE_ORDER_LINE,
                    DL_SELECT_SUM_OL_AMOUNT,
                    DL_UPDATE_CUSTOMER,
                ] {
                    let v = c(q);
                    assert!(
                        v >= 10 * n && v <= 10 * (n + 1),
                        "{v} calls of {q} in {n} deliveries"
                    );
                }
            }
        }
    }
    // The consistency conditions hold after statement mode, on this database.
    for check in rt.block_on(tpcc::check(&conninfo, "public")).unwrap() {
        assert_eq!(
            check.violations, 0,
            "{} ({})",
            check.name, check.description
        );
    }
}

/// Through the CLI on one database loaded with BenchmarkSQL's INSERTs and no
/// csdchar function: statement mode (the default) runs, procedure mode
/// creates the missing functions with a note, `db check` passes after each,
/// and the JSON records the mode.
#[test]
fn both_modes_run_and_check_through_the_cli_and_record_the_mode() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let url = cluster.conninfo("postgres");
    let dir = tempfile::tempdir().unwrap();
    let ran = common::csdchar(&[
        "db",
        "prepare",
        "--url",
        &url,
        "--workload",
        "tpcc",
        "--warehouses",
        "1",
        "--load-method",
        "insert",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    psql(
        &cluster,
        "do $$ declare f text; begin for f in select oid::regprocedure::text from pg_proc \
         where proname like 'bmsql_proc_%' loop execute 'drop function ' || f; end loop; end $$",
    );
    for (mode, note) in [
        ("statements", false),
        ("procedures", true),
        ("procedures", false),
    ] {
        let out = dir.path().join(format!("{mode}-{note}.json"));
        let mut args = vec![
            "db",
            "run",
            "--url",
            &url,
            "--workload",
            "tpcc",
            "--threads",
            "2",
            "--time",
            "2s",
            "--output-format",
            "json",
            "--output",
            out.to_str().unwrap(),
        ];
        if mode == "procedures" {
            args.extend(["--tpcc-mode", "procedures"]);
        }
        let ran = common::csdchar(&args);
        assert_eq!(ran.outcome.exit_code, 0, "{mode}: {}", ran.stderr);
        assert_eq!(
            ran.stderr
                .contains("created the transaction functions missing from schema public"),
            note,
            "{mode}: {}",
            ran.stderr
        );
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        common::assert_matches_schema(&v, "db");
        assert_eq!(v["spec"]["tpcc_mode"], mode);
        assert!(v["steps"][0]["tpmc"].as_f64().unwrap() > 0.0, "{mode}");
        let check = common::csdchar(&["db", "check", "--url", &url, "--workload", "tpcc"]);
        assert_eq!(
            check.outcome.exit_code, 0,
            "{mode}: {}{}",
            check.stdout, check.stderr
        );
    }
    // The summary says which mode ran.
    let ran = common::csdchar(&[
        "db",
        "run",
        "--url",
        &url,
        "--workload",
        "tpcc",
        "--time",
        "1s",
    ]);
    assert!(
        ran.stdout
            .contains("TPC-C (BenchmarkSQL 5.x), statements mode"),
        "{}",
        ran.stdout
    );
}
