//! Statement mode, the default: each transaction is BenchmarkSQL 5.0's
//! sequence of statements as its terminal sends them (`jTPCCConnection`,
//! `jTPCCTData` of the 5.0 release): the same SQL text, prepared, in its
//! order, one round trip each, autocommit off (the driver's implicit BEGIN
//! travels with a transaction's first statement), New-Order's stock updates
//! and order lines as two JDBC batches (one round trip each), COMMIT or
//! ROLLBACK where BenchmarkSQL ends. Every statement after the first depends
//! on rows an earlier one returned, so each transaction is a conversation
//! ([`EventSource::follow`]) run by the shared client state machine on both
//! drivers. It needs no object of csdchar's: any BenchmarkSQL 5.x database.
//!
//! Over 1,000 lines with its tests (840 without): the five conversations are
//! one state machine over one statement list, read beside BenchmarkSQL's
//! terminal code; split, each would import the others' states.

use std::time::SystemTime;

use super::procs::run_constants;
use std::sync::atomic::{AtomicU32, Ordering};

use csdchar_core::tpcc::{self, TpccDriver, TpccKind, TpccTxn};
use rand_xoshiro::Xoshiro256PlusPlus;

use csdchar_dbloop::event::{Event, EventSource, StatementSet, Workload};
use csdchar_pgwire::message::Param;

use csdchar_dbloop::event::Follow;
use csdchar_pgwire::message::{Reply, StatementRows};

use super::spec::TpccSpec;

/// BenchmarkSQL 5.0's statements, as `jTPCCConnection` prepares them (the
/// Java string concatenation with `?` numbered `$1`…), then the driver's
/// transaction commands (read-only transactions end with ROLLBACK, as
/// BenchmarkSQL's `db.rollback()`). Names are what csdchar prepares them
/// under; the order is [`S`]'s.
pub const STATEMENTS: [(&str, &str); 34] = [
    (
        "bmsql_no_select_whse_cust",
        "SELECT c_discount, c_last, c_credit, w_tax     FROM bmsql_customer     JOIN bmsql_warehouse ON (w_id = c_w_id)     WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
    ),
    (
        "bmsql_no_select_dist",
        "SELECT d_tax, d_next_o_id     FROM bmsql_district     WHERE d_w_id = $1 AND d_id = $2     FOR UPDATE",
    ),
    (
        "bmsql_no_update_dist",
        "UPDATE bmsql_district     SET d_next_o_id = d_next_o_id + 1     WHERE d_w_id = $1 AND d_id = $2",
    ),
    (
        "bmsql_no_insert_order",
        "INSERT INTO bmsql_oorder (    o_id, o_d_id, o_w_id, o_c_id, o_entry_d,     o_ol_cnt, o_all_local) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    ),
    (
        "bmsql_no_insert_new_order",
        "INSERT INTO bmsql_new_order (    no_o_id, no_d_id, no_w_id) VALUES ($1, $2, $3)",
    ),
    (
        "bmsql_no_select_stock",
        "SELECT s_quantity, s_data,        s_dist_01, s_dist_02, s_dist_03, s_dist_04,        s_dist_05, s_dist_06, s_dist_07, s_dist_08,        s_dist_09, s_dist_10     FROM bmsql_stock     WHERE s_w_id = $1 AND s_i_id = $2     FOR UPDATE",
    ),
    (
        "bmsql_no_select_item",
        "SELECT i_price, i_name, i_data     FROM bmsql_item     WHERE i_id = $1",
    ),
    (
        "bmsql_no_update_stock",
        "UPDATE bmsql_stock     SET s_quantity = $1, s_ytd = s_ytd + $2,         s_order_cnt = s_order_cnt + 1,         s_remote_cnt = s_remote_cnt + $3     WHERE s_w_id = $4 AND s_i_id = $5",
    ),
    (
        "bmsql_no_insert_order_line",
        "INSERT INTO bmsql_order_line (    ol_o_id, ol_d_id, ol_w_id, ol_number,     ol_i_id, ol_supply_w_id, ol_quantity,     ol_amount, ol_dist_info) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    ),
    (
        "bmsql_pay_select_warehouse",
        "SELECT w_name, w_street_1, w_street_2, w_city,        w_state, w_zip     FROM bmsql_warehouse     WHERE w_id = $1 ",
    ),
    (
        "bmsql_pay_select_district",
        "SELECT d_name, d_street_1, d_street_2, d_city,        d_state, d_zip     FROM bmsql_district     WHERE d_w_id = $1 AND d_id = $2",
    ),
    (
        "bmsql_pay_select_customer_list_by_last",
        "SELECT c_id     FROM bmsql_customer     WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3     ORDER BY c_first",
    ),
    (
        "bmsql_pay_select_customer",
        "SELECT c_first, c_middle, c_last, c_street_1, c_street_2,        c_city, c_state, c_zip, c_phone, c_since, c_credit,        c_credit_lim, c_discount, c_balance     FROM bmsql_customer     WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3     FOR UPDATE",
    ),
    (
        "bmsql_pay_select_customer_data",
        "SELECT c_data     FROM bmsql_customer     WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
    ),
    (
        "bmsql_pay_update_warehouse",
        "UPDATE bmsql_warehouse     SET w_ytd = w_ytd + $1     WHERE w_id = $2",
    ),
    (
        "bmsql_pay_update_district",
        "UPDATE bmsql_district     SET d_ytd = d_ytd + $1     WHERE d_w_id = $2 AND d_id = $3",
    ),
    (
        "bmsql_pay_update_customer",
        "UPDATE bmsql_customer     SET c_balance = c_balance - $1,         c_ytd_payment = c_ytd_payment + $2,         c_payment_cnt = c_payment_cnt + 1     WHERE c_w_id = $3 AND c_d_id = $4 AND c_id = $5",
    ),
    (
        "bmsql_pay_update_customer_with_data",
        "UPDATE bmsql_customer     SET c_balance = c_balance - $1,         c_ytd_payment = c_ytd_payment + $2,         c_payment_cnt = c_payment_cnt + 1,         c_data = $3     WHERE c_w_id = $4 AND c_d_id = $5 AND c_id = $6",
    ),
    (
        "bmsql_pay_insert_history",
        "INSERT INTO bmsql_history (    h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id,     h_date, h_amount, h_data) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    ),
    (
        "bmsql_os_select_customer_list_by_last",
        "SELECT c_id     FROM bmsql_customer     WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3     ORDER BY c_first",
    ),
    (
        "bmsql_os_select_customer",
        "SELECT c_first, c_middle, c_last, c_balance     FROM bmsql_customer     WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3",
    ),
    (
        "bmsql_os_select_last_order",
        "SELECT o_id, o_entry_d, o_carrier_id     FROM bmsql_oorder     WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3       AND o_id = (          SELECT max(o_id)               FROM bmsql_oorder               WHERE o_w_id = $4 AND o_d_id = $5 AND o_c_id = $6          )",
    ),
    (
        "bmsql_os_select_order_line",
        "SELECT ol_i_id, ol_supply_w_id, ol_quantity,        ol_amount, ol_delivery_d     FROM bmsql_order_line     WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3     ORDER BY ol_w_id, ol_d_id, ol_o_id, ol_number",
    ),
    (
        "bmsql_sl_select_low",
        "SELECT count(*) AS low_stock FROM (    SELECT s_w_id, s_i_id, s_quantity         FROM bmsql_stock         WHERE s_w_id = $1 AND s_quantity < $2 AND s_i_id IN (            SELECT ol_i_id                 FROM bmsql_district                 JOIN bmsql_order_line ON ol_w_id = d_w_id                  AND ol_d_id = d_id                  AND ol_o_id >= d_next_o_id - 20                  AND ol_o_id < d_next_o_id                 WHERE d_w_id = $3 AND d_id = $4         )     ) AS L",
    ),
    (
        "bmsql_dl_select_oldest_new_order",
        "SELECT no_o_id     FROM bmsql_new_order     WHERE no_w_id = $1 AND no_d_id = $2     ORDER BY no_o_id ASC",
    ),
    (
        "bmsql_dl_delete_oldest_new_order",
        "DELETE FROM bmsql_new_order     WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3",
    ),
    (
        "bmsql_dl_select_order",
        "SELECT o_c_id     FROM bmsql_oorder     WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3",
    ),
    (
        "bmsql_dl_update_order",
        "UPDATE bmsql_oorder     SET o_carrier_id = $1     WHERE o_w_id = $2 AND o_d_id = $3 AND o_id = $4",
    ),
    (
        "bmsql_dl_select_sum_ol_amount",
        "SELECT sum(ol_amount) AS sum_ol_amount     FROM bmsql_order_line     WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
    ),
    (
        "bmsql_dl_update_order_line",
        "UPDATE bmsql_order_line     SET ol_delivery_d = $1     WHERE ol_w_id = $2 AND ol_d_id = $3 AND ol_o_id = $4",
    ),
    (
        "bmsql_dl_update_customer",
        "UPDATE bmsql_customer     SET c_balance = c_balance + $1,         c_delivery_cnt = c_delivery_cnt + 1     WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4",
    ),
    // The JDBC driver's transaction commands: one-shot, parsed each time
    // (unnamed), so pg_stat_statements counts every one, as BenchmarkSQL's.
    ("", "BEGIN"),
    ("", "COMMIT"),
    ("", "ROLLBACK"),
];

/// Statement ids, in [`STATEMENTS`] order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
enum S {
    NoSelectWhseCust,
    NoSelectDist,
    NoUpdateDist,
    NoInsertOrder,
    NoInsertNewOrder,
    NoSelectStock,
    NoSelectItem,
    NoUpdateStock,
    NoInsertOrderLine,
    PaySelectWarehouse,
    PaySelectDistrict,
    PaySelectCustomerListByLast,
    PaySelectCustomer,
    PaySelectCustomerData,
    PayUpdateWarehouse,
    PayUpdateDistrict,
    PayUpdateCustomer,
    PayUpdateCustomerWithData,
    PayInsertHistory,
    OsSelectCustomerListByLast,
    OsSelectCustomer,
    OsSelectLastOrder,
    OsSelectOrderLine,
    SlSelectLow,
    DlSelectOldestNewOrder,
    DlDeleteOldestNewOrder,
    DlSelectOrder,
    DlUpdateOrder,
    DlSelectSumOlAmount,
    DlUpdateOrderLine,
    DlUpdateCustomer,
    Begin,
    Commit,
    Rollback,
}

fn statement_set() -> StatementSet {
    let mut set = StatementSet::default();
    for (name, sql) in STATEMENTS {
        set.push(name.to_string(), sql.to_string());
    }
    set
}

/// SQLSTATEs BenchmarkSQL 5.0 meets as an `SQLException` inside a
/// transaction: it rolls back, logs, and counts the transaction; no retry.
pub const STATEMENT_ABANDON: &[&str] = &["40001", "40P01"];

/// TPC-C in statement mode as a runner workload (see the module doc). Each
/// client made by `sources` is the next terminal, as in [`super::workload`].
pub fn statement_workload(spec: &TpccSpec) -> Workload {
    let c = run_constants(spec);
    let (warehouses, mix) = (spec.warehouses.max(1), spec.mix);
    let next = AtomicU32::new(0);
    Workload {
        statements: statement_set(),
        sources: Box::new(move || {
            let i = next.fetch_add(1, Ordering::Relaxed);
            Box::new(Conversation {
                driver: TpccDriver {
                    warehouses,
                    mix,
                    c,
                    terminal: tpcc::Terminal::nth(i, warehouses),
                },
                state: State::Idle,
            })
        }),
        retry_codes: &[],
        rollback_codes: &[],
        abandon_codes: STATEMENT_ABANDON,
        keeps_rows: true,
        kinds: TpccKind::ALL.iter().map(|k| k.name()).collect(),
        protocol: spec.protocol,
        seed: spec.seed,
        sessions: None,
    }
}

/// One New-Order line's work: its input, then what its item and stock rows gave.
#[derive(Debug, Clone)]
struct Line {
    input: tpcc::OrderLineInput,
    price: String,
    i_data: String,
}

/// Where a terminal's transaction is: what the last exchange it sent was.
#[derive(Debug)]
enum State {
    Idle,
    /// The statements up to the last are sent; the next reply ends it.
    Ending,
    NoDistrict(Box<NewOrder>),
    NoCustomer(Box<NewOrder>),
    NoItem(Box<NewOrder>),
    NoStock(Box<NewOrder>),
    PayDistrict(Box<Payment>),
    PayWarehouse(Box<Payment>),
    PayCustomerList(Box<Payment>),
    PayCustomer(Box<Payment>),
    PayCustomerData(Box<Payment>),
    OsCustomerList(tpcc::OrderStatusInput),
    OsCustomer(tpcc::OrderStatusInput, u32),
    OsLastOrder(tpcc::OrderStatusInput, u32),
    StockLevel(tpcc::StockLevelInput),
    DlOldest(Delivery),
    DlDelete(Delivery, u32),
    DlOrder(Delivery, u32),
    DlSum(Delivery, u32, u32),
}

#[derive(Debug)]
struct NewOrder {
    input: tpcc::NewOrderInput,
    /// Lines in BenchmarkSQL's processing order (supply warehouse, item).
    lines: Vec<Line>,
    /// The line whose item or stock row was asked for last.
    at: usize,
    o_id: u32,
    /// Per processed line: the stock update's and the order line's parameters.
    stock_updates: Vec<[Param; 5]>,
    order_lines: Vec<[Param; 9]>,
}

#[derive(Debug)]
struct Payment {
    input: tpcc::PaymentInput,
    amount: String,
    c_id: u32,
    d_name: String,
    w_name: String,
}

#[derive(Debug, Clone, Copy)]
struct Delivery {
    w_id: u32,
    carrier_id: u32,
    d_id: u32,
    /// The time every order line of this delivery is stamped with.
    now: SystemTime,
}

/// A terminal's conversation with the server.
struct Conversation {
    driver: TpccDriver,
    state: State,
}

fn int(v: u32) -> Param {
    Param::Int(i64::from(v))
}

fn text(s: &str) -> Param {
    Param::Text(s.to_string())
}

/// A timestamp parameter (BenchmarkSQL's `setTimestamp` of the client's clock).
fn timestamp(t: SystemTime) -> Param {
    Param::Text(humantime::format_rfc3339_millis(t).to_string())
}

/// Cents as BenchmarkSQL's `double` amount prints: `123.45`.
fn amount(cents: u32) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

fn push(ev: &mut Event, s: S, params: &[Param]) {
    ev.push(s as usize, params);
}

/// A transaction's first statement, with the implicit BEGIN before it.
fn begin_with(ev: &mut Event, s: S, params: &[Param]) {
    ev.push_with_next(S::Begin as usize, &[]);
    push(ev, s, params);
}

/// A JDBC batch: all in one exchange.
fn batch<const N: usize>(ev: &mut Event, s: S, rows: &[[Param; N]]) {
    for (i, p) in rows.iter().enumerate() {
        if i + 1 < rows.len() {
            ev.push_with_next(s as usize, p);
        } else {
            ev.push(s as usize, p);
        }
    }
}

/// The customer BenchmarkSQL picks from a by-last-name list: the middle one
/// (`(n + 1) / 2 - 1`, clause 2.5.2.2).
fn middle_customer(rows: &StatementRows<'_>) -> Option<u32> {
    if rows.is_empty() {
        return None;
    }
    rows.parse(rows.len().div_ceil(2) - 1, 0)
}

impl EventSource for Conversation {
    fn draw(&mut self, rng: &mut Xoshiro256PlusPlus, ev: &mut Event) {
        let txn = self.driver.draw(rng);
        ev.set_kind(txn.kind() as usize);
        self.state = match txn {
            TpccTxn::NewOrder(input) => {
                begin_with(ev, S::NoSelectDist, &[int(input.w_id), int(input.d_id)]);
                let lines = input
                    .lock_order()
                    .into_iter()
                    .map(|l| Line {
                        input: l,
                        price: String::new(),
                        i_data: String::new(),
                    })
                    .collect();
                State::NoDistrict(Box::new(NewOrder {
                    input,
                    lines,
                    at: 0,
                    o_id: 0,
                    stock_updates: Vec::new(),
                    order_lines: Vec::new(),
                }))
            }
            TpccTxn::Payment(input) => {
                let a = amount(input.amount_cents);
                begin_with(
                    ev,
                    S::PayUpdateDistrict,
                    &[text(&a), int(input.w_id), int(input.d_id)],
                );
                push(
                    ev,
                    S::PaySelectDistrict,
                    &[int(input.w_id), int(input.d_id)],
                );
                State::PayDistrict(Box::new(Payment {
                    input,
                    amount: a,
                    c_id: 0,
                    d_name: String::new(),
                    w_name: String::new(),
                }))
            }
            TpccTxn::OrderStatus(input) => match &input.customer {
                tpcc::CustomerRef::LastName(last) => {
                    begin_with(
                        ev,
                        S::OsSelectCustomerListByLast,
                        &[int(input.w_id), int(input.d_id), text(last)],
                    );
                    State::OsCustomerList(input)
                }
                tpcc::CustomerRef::Id(c_id) => {
                    let c_id = *c_id;
                    begin_with(
                        ev,
                        S::OsSelectCustomer,
                        &[int(input.w_id), int(input.d_id), int(c_id)],
                    );
                    State::OsCustomer(input, c_id)
                }
            },
            TpccTxn::StockLevel(input) => {
                begin_with(
                    ev,
                    S::SlSelectLow,
                    &[
                        int(input.w_id),
                        int(input.threshold),
                        int(input.w_id),
                        int(input.d_id),
                    ],
                );
                State::StockLevel(input)
            }
            TpccTxn::Delivery(input) => {
                let d = Delivery {
                    w_id: input.w_id,
                    carrier_id: input.carrier_id,
                    d_id: 1,
                    now: SystemTime::now(),
                };
                begin_with(ev, S::DlSelectOldestNewOrder, &[int(d.w_id), int(1)]);
                State::DlOldest(d)
            }
        };
    }

    fn follow(&mut self, reply: &Reply<'_>, ev: &mut Event) -> Follow {
        let rows = reply.rows.last();
        let state = std::mem::replace(&mut self.state, State::Idle);
        let (next, follow) = step(state, &rows, reply, ev);
        self.state = next;
        follow
    }
}

/// One step of a conversation: the state after the reply, and what the client does.
fn step(
    state: State,
    rows: &StatementRows<'_>,
    reply: &Reply<'_>,
    ev: &mut Event,
) -> (State, Follow) {
    let fail = |m: String| (State::Idle, Follow::Fail(m));
    match state {
        State::Idle | State::Ending => (State::Idle, Follow::Done),

        // ---- New-Order (executeNewOrder)
        State::NoDistrict(mut no) => {
            let (w, d) = (no.input.w_id, no.input.d_id);
            let Some(o_id) = rows.parse::<u32>(0, 1) else {
                return fail(format!("District for W_ID={w} D_ID={d} not found"));
            };
            no.o_id = o_id;
            push(
                ev,
                S::NoSelectWhseCust,
                &[int(w), int(d), int(no.input.c_id)],
            );
            (State::NoCustomer(no), Follow::More)
        }
        State::NoCustomer(no) => {
            let (w, d, c) = (no.input.w_id, no.input.d_id, no.input.c_id);
            if rows.is_empty() {
                return fail(format!(
                    "Warehouse or Customer for W_ID={w} D_ID={d} C_ID={c} not found"
                ));
            }
            let all_local = no.lines.iter().all(|l| l.input.supply_w_id == w);
            push(ev, S::NoUpdateDist, &[int(w), int(d)]);
            push(
                ev,
                S::NoInsertOrder,
                &[
                    int(no.o_id),
                    int(d),
                    int(w),
                    int(c),
                    timestamp(SystemTime::now()),
                    int(no.lines.len() as u32),
                    int(u32::from(all_local)),
                ],
            );
            push(ev, S::NoInsertNewOrder, &[int(no.o_id), int(d), int(w)]);
            push(ev, S::NoSelectItem, &[int(no.lines[0].input.i_id)]);
            (State::NoItem(no), Follow::More)
        }
        State::NoItem(mut no) => {
            let line = no.lines[no.at].input;
            if rows.is_empty() {
                // 1% name an unused item to simulate an entry error (2.4.1.4);
                // BenchmarkSQL sends the batches so far, then rolls back (2.4.2.3).
                if no.input.rollback && !(1..=tpcc::ITEMS).contains(&line.i_id) {
                    if !no.order_lines.is_empty() {
                        batch(ev, S::NoInsertOrderLine, &no.order_lines);
                        batch(ev, S::NoUpdateStock, &no.stock_updates);
                    }
                    push(ev, S::Rollback, &[]);
                    ev.set_intended_rollback();
                    return (State::Ending, Follow::More);
                }
                return fail(format!("ITEM {} not found", line.i_id));
            }
            let (Some(price), Some(i_data)) = (rows.get(0, 0), rows.get(0, 2)) else {
                return fail(format!("ITEM {} has no price or data", line.i_id));
            };
            let l = &mut no.lines[no.at];
            l.price = price.to_string();
            l.i_data = i_data.to_string();
            push(
                ev,
                S::NoSelectStock,
                &[int(line.supply_w_id), int(line.i_id)],
            );
            (State::NoStock(no), Follow::More)
        }
        State::NoStock(mut no) => {
            let (w, d) = (no.input.w_id, no.input.d_id);
            let l = no.lines[no.at].clone();
            let (supply, item, qty) = (l.input.supply_w_id, l.input.i_id, l.input.quantity);
            let (Some(s_quantity), Some(dist)) =
                (rows.parse::<u32>(0, 0), rows.get(0, 1 + d as usize))
            else {
                return fail(format!(
                    "STOCK with S_W_ID={supply} S_I_ID={item} not found"
                ));
            };
            let price: f64 = l.price.trim().parse().unwrap_or(0.0);
            let quantity = if s_quantity >= qty + 10 {
                s_quantity - qty
            } else {
                s_quantity + 91
            };
            no.stock_updates.push([
                int(quantity),
                int(qty),
                int(u32::from(supply != w)),
                int(supply),
                int(item),
            ]);
            no.order_lines.push([
                int(no.o_id),
                int(d),
                int(w),
                int(no.at as u32 + 1),
                int(item),
                int(supply),
                int(qty),
                Param::Text(format!("{:.2}", price * f64::from(qty))),
                text(dist),
            ]);
            no.at += 1;
            if no.at < no.lines.len() {
                push(ev, S::NoSelectItem, &[int(no.lines[no.at].input.i_id)]);
                return (State::NoItem(no), Follow::More);
            }
            batch(ev, S::NoUpdateStock, &no.stock_updates);
            batch(ev, S::NoInsertOrderLine, &no.order_lines);
            push(ev, S::Commit, &[]);
            (State::Ending, Follow::More)
        }

        // ---- Payment (executePayment)
        State::PayDistrict(mut p) => {
            let (w, d) = (p.input.w_id, p.input.d_id);
            let Some(name) = rows.get(0, 0) else {
                return fail(format!("District for W_ID={w} D_ID={d} not found"));
            };
            p.d_name = name.to_string();
            push(ev, S::PayUpdateWarehouse, &[text(&p.amount), int(w)]);
            push(ev, S::PaySelectWarehouse, &[int(w)]);
            (State::PayWarehouse(p), Follow::More)
        }
        State::PayWarehouse(mut p) => {
            let Some(name) = rows.get(0, 0) else {
                return fail(format!("Warehouse for W_ID={} not found", p.input.w_id));
            };
            p.w_name = name.to_string();
            let (cw, cd) = (p.input.c_w_id, p.input.c_d_id);
            match &p.input.customer {
                tpcc::CustomerRef::LastName(last) => {
                    push(
                        ev,
                        S::PaySelectCustomerListByLast,
                        &[int(cw), int(cd), text(last)],
                    );
                    (State::PayCustomerList(p), Follow::More)
                }
                tpcc::CustomerRef::Id(c) => {
                    p.c_id = *c;
                    push(ev, S::PaySelectCustomer, &[int(cw), int(cd), int(*c)]);
                    (State::PayCustomer(p), Follow::More)
                }
            }
        }
        State::PayCustomerList(mut p) => {
            let (cw, cd) = (p.input.c_w_id, p.input.c_d_id);
            let Some(c) = middle_customer(rows) else {
                let last = match &p.input.customer {
                    tpcc::CustomerRef::LastName(l) => l.as_str(),
                    tpcc::CustomerRef::Id(_) => "",
                };
                return fail(format!(
                    "Customer(s) for C_W_ID={cw} C_D_ID={cd} C_LAST={last} not found"
                ));
            };
            p.c_id = c;
            push(ev, S::PaySelectCustomer, &[int(cw), int(cd), int(c)]);
            (State::PayCustomer(p), Follow::More)
        }
        State::PayCustomer(p) => {
            let (cw, cd, c) = (p.input.c_w_id, p.input.c_d_id, p.c_id);
            let Some(credit) = rows.get(0, 10) else {
                return fail(format!(
                    "Customer for C_W_ID={cw} C_D_ID={cd} C_ID={c} not found"
                ));
            };
            if credit == "GC" {
                push(
                    ev,
                    S::PayUpdateCustomer,
                    &[text(&p.amount), text(&p.amount), int(cw), int(cd), int(c)],
                );
                history_and_commit(&p, ev);
                return (State::Ending, Follow::More);
            }
            push(ev, S::PaySelectCustomerData, &[int(cw), int(cd), int(c)]);
            (State::PayCustomerData(p), Follow::More)
        }
        State::PayCustomerData(p) => {
            let (cw, cd, c) = (p.input.c_w_id, p.input.c_d_id, p.c_id);
            if rows.is_empty() {
                return fail(format!(
                    "Customer.c_data for C_W_ID={cw} C_D_ID={cd} C_ID={c} not found"
                ));
            }
            let mut data = format!(
                "C_ID={c} C_D_ID={cd} C_W_ID={cw} D_ID={} W_ID={} H_AMOUNT={}   ",
                p.input.d_id, p.input.w_id, p.amount
            );
            data.push_str(rows.get(0, 0).unwrap_or(""));
            if let Some((at, _)) = data.char_indices().nth(500) {
                data.truncate(at);
            }
            push(
                ev,
                S::PayUpdateCustomerWithData,
                &[
                    text(&p.amount),
                    text(&p.amount),
                    Param::Text(data),
                    int(cw),
                    int(cd),
                    int(c),
                ],
            );
            history_and_commit(&p, ev);
            (State::Ending, Follow::More)
        }

        // ---- Order-Status (executeOrderStatus): read only, ends with ROLLBACK
        State::OsCustomerList(input) => {
            let Some(c) = middle_customer(rows) else {
                let last = match &input.customer {
                    tpcc::CustomerRef::LastName(l) => l.as_str(),
                    tpcc::CustomerRef::Id(_) => "",
                };
                return fail(format!(
                    "Customer(s) for C_W_ID={} C_D_ID={} C_LAST={last} not found",
                    input.w_id, input.d_id
                ));
            };
            push(
                ev,
                S::OsSelectCustomer,
                &[int(input.w_id), int(input.d_id), int(c)],
            );
            (State::OsCustomer(input, c), Follow::More)
        }
        State::OsCustomer(input, c) => {
            let (w, d) = (input.w_id, input.d_id);
            if rows.is_empty() {
                return fail(format!(
                    "Customer for C_W_ID={w} C_D_ID={d} C_ID={c} not found"
                ));
            }
            push(
                ev,
                S::OsSelectLastOrder,
                &[int(w), int(d), int(c), int(w), int(d), int(c)],
            );
            (State::OsLastOrder(input, c), Follow::More)
        }
        State::OsLastOrder(input, c) => {
            let (w, d) = (input.w_id, input.d_id);
            let Some(o_id) = rows.parse::<u32>(0, 0) else {
                return fail(format!(
                    "Last Order for W_ID={w} D_ID={d} C_ID={c} not found"
                ));
            };
            push(ev, S::OsSelectOrderLine, &[int(w), int(d), int(o_id)]);
            push(ev, S::Rollback, &[]);
            (State::Ending, Follow::More)
        }

        // ---- Stock-Level (executeStockLevel): read only, ends with ROLLBACK
        State::StockLevel(input) => {
            if rows.is_empty() {
                return fail(format!(
                    "Failed to get low-stock for W_ID={} D_ID={}",
                    input.w_id, input.d_id
                ));
            }
            push(ev, S::Rollback, &[]);
            (State::Ending, Follow::More)
        }

        // ---- Delivery, its background part inline (executeDeliveryBG)
        State::DlOldest(d) => match rows.parse::<u32>(0, 0) {
            Some(o_id) => {
                push(
                    ev,
                    S::DlDeleteOldestNewOrder,
                    &[int(d.w_id), int(d.d_id), int(o_id)],
                );
                (State::DlDelete(d, o_id), Follow::More)
            }
            // No undelivered order in this district: skipped.
            None => next_district(d, ev),
        },
        State::DlDelete(d, o_id) => {
            if reply.completed.last().is_none_or(|c| c.rows == 0) {
                // A concurrent delivery took it first (no FOR UPDATE above): look again.
                push(ev, S::DlSelectOldestNewOrder, &[int(d.w_id), int(d.d_id)]);
                return (State::DlOldest(d), Follow::More);
            }
            push(
                ev,
                S::DlUpdateOrder,
                &[int(d.carrier_id), int(d.w_id), int(d.d_id), int(o_id)],
            );
            push(ev, S::DlSelectOrder, &[int(d.w_id), int(d.d_id), int(o_id)]);
            (State::DlOrder(d, o_id), Follow::More)
        }
        State::DlOrder(d, o_id) => {
            let Some(c_id) = rows.parse::<u32>(0, 0) else {
                return fail(format!(
                    "ORDER in DELIVERY_BG for O_W_ID={} O_D_ID={} O_ID={o_id} not found",
                    d.w_id, d.d_id
                ));
            };
            push(
                ev,
                S::DlUpdateOrderLine,
                &[timestamp(d.now), int(d.w_id), int(d.d_id), int(o_id)],
            );
            push(
                ev,
                S::DlSelectSumOlAmount,
                &[int(d.w_id), int(d.d_id), int(o_id)],
            );
            (State::DlSum(d, o_id, c_id), Follow::More)
        }
        State::DlSum(d, o_id, c_id) => {
            if rows.is_empty() {
                return fail(format!(
                    "sum(OL_AMOUNT) for ORDER_LINEs with  OL_W_ID={} OL_D_ID={} OL_O_ID={o_id} not found",
                    d.w_id, d.d_id
                ));
            }
            // getDouble of a NULL sum is 0.
            let sum = rows.get(0, 0).unwrap_or("0").to_string();
            push(
                ev,
                S::DlUpdateCustomer,
                &[Param::Text(sum), int(d.w_id), int(d.d_id), int(c_id)],
            );
            next_district(d, ev)
        }
    }
}

/// Payment's history row and its commit.
fn history_and_commit(p: &Payment, ev: &mut Event) {
    let i = &p.input;
    push(
        ev,
        S::PayInsertHistory,
        &[
            int(p.c_id),
            int(i.c_d_id),
            int(i.c_w_id),
            int(i.d_id),
            int(i.w_id),
            timestamp(SystemTime::now()),
            text(&p.amount),
            Param::Text(format!("{}    {}", p.w_name, p.d_name)),
        ],
    );
    push(ev, S::Commit, &[]);
}

/// Delivery goes on with the next district, or commits after the tenth.
fn next_district(mut d: Delivery, ev: &mut Event) -> (State, Follow) {
    if d.d_id >= tpcc::DISTRICTS {
        push(ev, S::Commit, &[]);
        return (State::Ending, Follow::More);
    }
    d.d_id += 1;
    push(ev, S::DlSelectOldestNewOrder, &[int(d.w_id), int(d.d_id)]);
    (State::DlOldest(d), Follow::More)
}

#[cfg(test)]
mod tests {
    use csdchar_core::tpcc::{NurandC, TpccMix};

    use super::*;
    use bytes::BytesMut;
    use csdchar_pgwire::message::ReplyScan;

    /// A reply of one statement returning `rows` (text values) and tagged `tag`.
    fn reply_of(scan: &mut ScanHolder, rows: &[&[&str]], tag: &str) {
        let s = &mut scan.0;
        s.reset();
        for r in rows {
            let mut body = (r.len() as u16).to_be_bytes().to_vec();
            for v in *r {
                body.extend((v.len() as u32).to_be_bytes());
                body.extend(v.as_bytes());
            }
            s.on_message(b'D', &body);
        }
        let mut t = tag.as_bytes().to_vec();
        t.push(0);
        s.on_message(b'C', &t);
        s.on_message(b'Z', b"T");
    }

    struct ScanHolder(ReplyScan);

    fn conversation(state: State) -> Conversation {
        Conversation {
            driver: TpccDriver {
                warehouses: 1,
                mix: TpccMix::default(),
                c: NurandC {
                    c_last: 1,
                    c_id: 1,
                    ol_i_id: 1,
                },
                terminal: tpcc::Terminal::nth(0, 1),
            },
            state,
        }
    }

    fn statements_of(ev: &Event, from: usize) -> Vec<usize> {
        let mut out = BytesMut::new();
        let set = statement_set();
        let mut at = from;
        let mut ids = Vec::new();
        if at >= ev.call_count() {
            return ids;
        }
        // Walk the calls through the encoder: each exchange ends in one Sync.
        while let Ok(next) = ev.encode_prepared_exchange(at, &mut out, &set) {
            ids.extend(ev.statement_ids(at, next));
            if next >= ev.call_count() {
                break;
            }
            at = next;
        }
        ids
    }

    #[test]
    fn a_new_order_with_an_unused_item_sends_its_batches_then_rolls_back() {
        let input = tpcc::NewOrderInput {
            w_id: 1,
            d_id: 3,
            c_id: 7,
            lines: vec![
                tpcc::OrderLineInput {
                    i_id: 5,
                    supply_w_id: 1,
                    quantity: 2,
                },
                tpcc::OrderLineInput {
                    i_id: 3_000_004,
                    supply_w_id: 1,
                    quantity: 1,
                },
            ],
            rollback: true,
        };
        let lines: Vec<Line> = input
            .lock_order()
            .into_iter()
            .map(|l| Line {
                input: l,
                price: String::new(),
                i_data: String::new(),
            })
            .collect();
        let mut c = conversation(State::NoDistrict(Box::new(NewOrder {
            input,
            lines,
            at: 0,
            o_id: 0,
            stock_updates: Vec::new(),
            order_lines: Vec::new(),
        })));
        let mut ev = Event::default();
        let mut scan = ScanHolder(ReplyScan::new(true));
        let mut step = |c: &mut Conversation, ev: &mut Event, rows: &[&[&str]], tag: &str| {
            reply_of(&mut scan, rows, tag);
            let before = ev.call_count();
            let f = c.follow(&scan.0.reply(), ev);
            (f, before)
        };
        // District: d_tax, d_next_o_id.
        let (f, _) = step(&mut c, &mut ev, &[&["0.1000", "3001"]], "SELECT 1");
        assert_eq!(f, Follow::More);
        // Customer and warehouse: then the district update, both inserts and the first item.
        let (f, before) = step(
            &mut c,
            &mut ev,
            &[&["0.05", "BAR", "GC", "0.07"]],
            "SELECT 1",
        );
        assert_eq!(f, Follow::More);
        assert_eq!(
            statements_of(&ev, before),
            [
                S::NoUpdateDist as usize,
                S::NoInsertOrder as usize,
                S::NoInsertNewOrder as usize,
                S::NoSelectItem as usize
            ]
        );
        // Item 5 found, its stock row locked.
        let (f, _) = step(&mut c, &mut ev, &[&["12.50", "item", "data"]], "SELECT 1");
        assert_eq!(f, Follow::More);
        let mut stock = vec!["40", "sdata"];
        let dists: Vec<String> = (1..=10).map(|d| format!("dist{d:02}")).collect();
        stock.extend(dists.iter().map(String::as_str));
        let (f, _) = step(&mut c, &mut ev, &[&stock], "SELECT 1");
        assert_eq!(f, Follow::More);
        // The unused item: no row. The batches so far (order lines first,
        // then stock, as BenchmarkSQL's rollback path), then ROLLBACK.
        let (f, before) = step(&mut c, &mut ev, &[], "SELECT 0");
        assert_eq!(f, Follow::More);
        assert_eq!(
            statements_of(&ev, before),
            [
                S::NoInsertOrderLine as usize,
                S::NoUpdateStock as usize,
                S::Rollback as usize
            ]
        );
        assert!(ev.ends_in_intended_rollback());
        let (f, _) = step(&mut c, &mut ev, &[], "ROLLBACK");
        assert_eq!(f, Follow::Done);
    }

    #[test]
    fn a_delivery_looks_again_when_another_took_the_order_and_skips_empty_districts() {
        let d = Delivery {
            w_id: 1,
            carrier_id: 4,
            d_id: 1,
            now: SystemTime::UNIX_EPOCH,
        };
        let mut c = conversation(State::DlOldest(d));
        let mut ev = Event::default();
        let mut scan = ScanHolder(ReplyScan::new(true));
        let mut step = |c: &mut Conversation, ev: &mut Event, rows: &[&[&str]], tag: &str| {
            reply_of(&mut scan, rows, tag);
            let before = ev.call_count();
            (c.follow(&scan.0.reply(), ev), statements_of(ev, before))
        };
        let (_, sent) = step(&mut c, &mut ev, &[&["2101"], &["2102"]], "SELECT 2");
        assert_eq!(sent, [S::DlDeleteOldestNewOrder as usize]);
        // Deleted by a concurrent delivery first: select again.
        let (_, sent) = step(&mut c, &mut ev, &[], "DELETE 0");
        assert_eq!(sent, [S::DlSelectOldestNewOrder as usize]);
        // Nothing left in district 1: on to district 2.
        let (_, sent) = step(&mut c, &mut ev, &[], "SELECT 0");
        assert_eq!(sent, [S::DlSelectOldestNewOrder as usize]);
        assert!(matches!(c.state, State::DlOldest(Delivery { d_id: 2, .. })));
        // A missing order row breaks the rules: the run ends, as BenchmarkSQL's.
        let (_, _) = step(&mut c, &mut ev, &[&["7"]], "SELECT 1");
        let (_, _) = step(&mut c, &mut ev, &[], "DELETE 1");
        let (f, _) = step(&mut c, &mut ev, &[], "SELECT 0");
        assert!(matches!(f, Follow::Fail(m) if m.contains("O_D_ID=2 O_ID=7 not found")));
    }

    #[test]
    fn the_statements_are_benchmarksqls_with_transaction_commands_unprepared() {
        assert_eq!(STATEMENTS.len(), S::Rollback as usize + 1);
        assert_eq!(STATEMENTS[S::Begin as usize], ("", "BEGIN"));
        assert!(
            STATEMENTS[S::NoSelectDist as usize]
                .1
                .ends_with("FOR UPDATE")
        );
        assert!(
            STATEMENTS[..S::Begin as usize]
                .iter()
                .all(|(n, _)| n.starts_with("bmsql_"))
        );
    }
}
