//! The five transactions as PL/pgSQL functions (one round trip each, in
//! BenchmarkSQL's statement order) and the runner workload that calls them.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, Ordering};

use csdchar_core::tpcc::{self, CustomerRef, NurandC, TpccData, TpccDriver, TpccKind, TpccTxn};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use tokio_postgres::Client;

use csdchar_dbloop::event::{Event, EventSource, StatementSet, Workload};
use csdchar_pgwire::error::{DbError, db_err};
use csdchar_pgwire::message::Param;

use super::spec::{FUNCTIONS, NEW_ORDER_ROLLBACK, TPCC_RETRY, TpccSpec};

/// The five transactions as PL/pgSQL functions, each running BenchmarkSQL
/// 5.x's statements (`jTPCCConnection`/`jTPCCTData`) in its order, with its
/// row locks, in one call. Unqualified names: created and resolved in the
/// session's search_path (the target schema).
pub fn functions_sql() -> Vec<String> {
    let s_dist = (1..=10)
        .map(|d| format!("when {d} then v_s.s_dist_{d:02}"))
        .collect::<Vec<_>>()
        .join(" ");
    vec![
        // New-Order (jTPCCTData.executeNewOrder). The lines arrive sorted by
        // (supply warehouse, item), BenchmarkSQL's locking order, and are
        // numbered in that order. An unused item raises CSD01 after the
        // earlier lines' work, so the server rolls it all back (2.4.2.3).
        format!(
            "create or replace function bmsql_proc_new_order(
    in_w_id integer, in_d_id integer, in_c_id integer,
    in_ol_supply_w_id integer[], in_ol_i_id integer[], in_ol_quantity integer[])
returns integer language plpgsql as $fn$
declare
    v_ol_cnt integer := coalesce(array_length(in_ol_i_id, 1), 0);
    v_all_local integer := 1;
    v_d_tax decimal(4,4); v_o_id integer;
    v_w_tax decimal(4,4); v_c_last varchar(16); v_c_credit char(2); v_c_discount decimal(4,4);
    v_i record; v_s record;
    v_amount decimal(12,2); v_total decimal(12,2) := 0; v_brand char(1);
    x integer;
begin
    for x in 1 .. v_ol_cnt loop
        if in_ol_supply_w_id[x] <> in_w_id then v_all_local := 0; end if;
    end loop;
    select d_tax, d_next_o_id into v_d_tax, v_o_id
        from bmsql_district where d_w_id = in_w_id and d_id = in_d_id for update;
    if not found then
        raise exception 'District for W_ID=% D_ID=% not found', in_w_id, in_d_id;
    end if;
    select c_discount, c_last, c_credit, w_tax into v_c_discount, v_c_last, v_c_credit, v_w_tax
        from bmsql_customer join bmsql_warehouse on (w_id = c_w_id)
        where c_w_id = in_w_id and c_d_id = in_d_id and c_id = in_c_id;
    if not found then
        raise exception 'Warehouse or Customer for W_ID=% D_ID=% C_ID=% not found', in_w_id, in_d_id, in_c_id;
    end if;
    update bmsql_district set d_next_o_id = d_next_o_id + 1 where d_w_id = in_w_id and d_id = in_d_id;
    insert into bmsql_oorder (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local)
        values (v_o_id, in_d_id, in_w_id, in_c_id, current_timestamp, v_ol_cnt, v_all_local);
    insert into bmsql_new_order (no_o_id, no_d_id, no_w_id) values (v_o_id, in_d_id, in_w_id);
    for x in 1 .. v_ol_cnt loop
        select i_price, i_name, i_data into v_i from bmsql_item where i_id = in_ol_i_id[x];
        if not found then
            if in_ol_i_id[x] < 1 or in_ol_i_id[x] > {items} then
                raise exception 'Item number is not valid' using errcode = '{NEW_ORDER_ROLLBACK}';
            end if;
            raise exception 'ITEM % not found', in_ol_i_id[x];
        end if;
        select s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05,
               s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 into v_s
            from bmsql_stock where s_w_id = in_ol_supply_w_id[x] and s_i_id = in_ol_i_id[x] for update;
        if not found then
            raise exception 'STOCK with S_W_ID=% S_I_ID=% not found', in_ol_supply_w_id[x], in_ol_i_id[x];
        end if;
        v_amount := v_i.i_price * in_ol_quantity[x];
        v_brand := case when v_i.i_data like '%ORIGINAL%' and v_s.s_data like '%ORIGINAL%' then 'B' else 'G' end;
        v_total := v_total + v_amount * (1.0 - v_c_discount) * (1.0 + v_w_tax + v_d_tax);
        update bmsql_stock
            set s_quantity = case when v_s.s_quantity >= in_ol_quantity[x] + 10
                                  then v_s.s_quantity - in_ol_quantity[x] else v_s.s_quantity + 91 end,
                s_ytd = s_ytd + in_ol_quantity[x],
                s_order_cnt = s_order_cnt + 1,
                s_remote_cnt = s_remote_cnt + case when in_ol_supply_w_id[x] = in_w_id then 0 else 1 end
            where s_w_id = in_ol_supply_w_id[x] and s_i_id = in_ol_i_id[x];
        insert into bmsql_order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
                                      ol_quantity, ol_amount, ol_dist_info)
            values (v_o_id, in_d_id, in_w_id, x, in_ol_i_id[x], in_ol_supply_w_id[x],
                    in_ol_quantity[x], v_amount, case in_d_id {s_dist} end);
    end loop;
    return v_o_id;
end
$fn$",
            items = tpcc::ITEMS,
        ),
        // Payment (executePayment). in_c_last '' means by c_id.
        "create or replace function bmsql_proc_payment(
    in_w_id integer, in_d_id integer, in_c_w_id integer, in_c_d_id integer,
    in_c_id integer, in_c_last varchar(16), in_h_amount decimal(6,2))
returns integer language plpgsql as $fn$
declare
    v_c_id integer := in_c_id;
    v_ids integer[];
    v_w record; v_d record; v_c record;
    v_c_data varchar(500);
begin
    update bmsql_district set d_ytd = d_ytd + in_h_amount where d_w_id = in_w_id and d_id = in_d_id;
    select d_name, d_street_1, d_street_2, d_city, d_state, d_zip into v_d
        from bmsql_district where d_w_id = in_w_id and d_id = in_d_id;
    if not found then
        raise exception 'District for W_ID=% D_ID=% not found', in_w_id, in_d_id;
    end if;
    update bmsql_warehouse set w_ytd = w_ytd + in_h_amount where w_id = in_w_id;
    select w_name, w_street_1, w_street_2, w_city, w_state, w_zip into v_w
        from bmsql_warehouse where w_id = in_w_id;
    if not found then
        raise exception 'Warehouse for W_ID=% not found', in_w_id;
    end if;
    if in_c_last <> '' then
        select array_agg(c_id) into v_ids from (
            select c_id from bmsql_customer
                where c_w_id = in_c_w_id and c_d_id = in_c_d_id and c_last = in_c_last
                order by c_first) s;
        if v_ids is null then
            raise exception 'Customer(s) for C_W_ID=% C_D_ID=% C_LAST=% not found', in_c_w_id, in_c_d_id, in_c_last;
        end if;
        v_c_id := v_ids[(array_length(v_ids, 1) + 1) / 2];
    end if;
    select c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone,
           c_since, c_credit, c_credit_lim, c_discount, c_balance into v_c
        from bmsql_customer where c_w_id = in_c_w_id and c_d_id = in_c_d_id and c_id = v_c_id for update;
    if not found then
        raise exception 'Customer for C_W_ID=% C_D_ID=% C_ID=% not found', in_c_w_id, in_c_d_id, v_c_id;
    end if;
    if v_c.c_credit = 'GC' then
        update bmsql_customer
            set c_balance = c_balance - in_h_amount, c_ytd_payment = c_ytd_payment + in_h_amount,
                c_payment_cnt = c_payment_cnt + 1
            where c_w_id = in_c_w_id and c_d_id = in_c_d_id and c_id = v_c_id;
    else
        select c_data into v_c_data
            from bmsql_customer where c_w_id = in_c_w_id and c_d_id = in_c_d_id and c_id = v_c_id;
        v_c_data := substr(format('C_ID=%s C_D_ID=%s C_W_ID=%s D_ID=%s W_ID=%s H_AMOUNT=%s   ',
                                  v_c_id, in_c_d_id, in_c_w_id, in_d_id, in_w_id,
                                  to_char(in_h_amount, 'FM9990.00')) || v_c_data, 1, 500);
        update bmsql_customer
            set c_balance = c_balance - in_h_amount, c_ytd_payment = c_ytd_payment + in_h_amount,
                c_payment_cnt = c_payment_cnt + 1, c_data = v_c_data
            where c_w_id = in_c_w_id and c_d_id = in_c_d_id and c_id = v_c_id;
    end if;
    insert into bmsql_history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
        values (v_c_id, in_c_d_id, in_c_w_id, in_d_id, in_w_id, current_timestamp, in_h_amount,
                v_w.w_name || '    ' || v_d.d_name);
    return v_c_id;
end
$fn$"
            .to_string(),
        // Order-Status (executeOrderStatus). in_c_last '' means by c_id.
        "create or replace function bmsql_proc_order_status(
    in_w_id integer, in_d_id integer, in_c_id integer, in_c_last varchar(16))
returns integer language plpgsql as $fn$
declare
    v_c_id integer := in_c_id;
    v_ids integer[];
    v_c record; v_o record; v_ol record;
    v_lines integer := 0;
begin
    if in_c_last <> '' then
        select array_agg(c_id) into v_ids from (
            select c_id from bmsql_customer
                where c_w_id = in_w_id and c_d_id = in_d_id and c_last = in_c_last
                order by c_first) s;
        if v_ids is null then
            raise exception 'Customer(s) for C_W_ID=% C_D_ID=% C_LAST=% not found', in_w_id, in_d_id, in_c_last;
        end if;
        v_c_id := v_ids[(array_length(v_ids, 1) + 1) / 2];
    end if;
    select c_first, c_middle, c_last, c_balance into v_c
        from bmsql_customer where c_w_id = in_w_id and c_d_id = in_d_id and c_id = v_c_id;
    if not found then
        raise exception 'Customer for C_W_ID=% C_D_ID=% C_ID=% not found', in_w_id, in_d_id, v_c_id;
    end if;
    select o_id, o_entry_d, o_carrier_id into v_o
        from bmsql_oorder
        where o_w_id = in_w_id and o_d_id = in_d_id and o_c_id = v_c_id
          and o_id = (select max(o_id) from bmsql_oorder
                          where o_w_id = in_w_id and o_d_id = in_d_id and o_c_id = v_c_id);
    if not found then
        raise exception 'Last Order for W_ID=% D_ID=% C_ID=% not found', in_w_id, in_d_id, v_c_id;
    end if;
    for v_ol in select ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d
                    from bmsql_order_line
                    where ol_w_id = in_w_id and ol_d_id = in_d_id and ol_o_id = v_o.o_id
                    order by ol_w_id, ol_d_id, ol_o_id, ol_number loop
        v_lines := v_lines + 1;
    end loop;
    return v_o.o_id;
end
$fn$"
            .to_string(),
        // Delivery, foreground and background inline as the 5.x terminal
        // runs it (executeDeliveryBG): per district the oldest new order,
        // retried when a concurrent delivery deleted it first.
        "create or replace function bmsql_proc_delivery(in_w_id integer, in_o_carrier_id integer)
returns integer language plpgsql as $fn$
declare
    v_d_id integer; v_o_id integer; v_c_id integer;
    v_sum decimal(12,2);
    v_delivered integer := 0;
begin
    for v_d_id in 1 .. 10 loop
        v_o_id := null;
        loop
            select no_o_id into v_o_id from bmsql_new_order
                where no_w_id = in_w_id and no_d_id = v_d_id order by no_o_id asc;
            exit when not found;
            delete from bmsql_new_order
                where no_w_id = in_w_id and no_d_id = v_d_id and no_o_id = v_o_id;
            exit when found;
        end loop;
        -- No undelivered order in this district.
        continue when v_o_id is null;
        update bmsql_oorder set o_carrier_id = in_o_carrier_id
            where o_w_id = in_w_id and o_d_id = v_d_id and o_id = v_o_id;
        select o_c_id into v_c_id from bmsql_oorder
            where o_w_id = in_w_id and o_d_id = v_d_id and o_id = v_o_id;
        if not found then
            raise exception 'ORDER in DELIVERY_BG for O_W_ID=% O_D_ID=% O_ID=% not found', in_w_id, v_d_id, v_o_id;
        end if;
        update bmsql_order_line set ol_delivery_d = current_timestamp
            where ol_w_id = in_w_id and ol_d_id = v_d_id and ol_o_id = v_o_id;
        select sum(ol_amount) into v_sum from bmsql_order_line
            where ol_w_id = in_w_id and ol_d_id = v_d_id and ol_o_id = v_o_id;
        update bmsql_customer set c_balance = c_balance + v_sum, c_delivery_cnt = c_delivery_cnt + 1
            where c_w_id = in_w_id and c_d_id = v_d_id and c_id = v_c_id;
        v_delivered := v_delivered + 1;
    end loop;
    return v_delivered;
end
$fn$"
            .to_string(),
        // Stock-Level (executeStockLevel, BenchmarkSQL's PostgreSQL statement).
        "create or replace function bmsql_proc_stock_level(in_w_id integer, in_d_id integer, in_threshold integer)
returns integer language plpgsql as $fn$
declare
    v_low integer;
begin
    select count(*) into v_low from (
        select s_w_id, s_i_id, s_quantity from bmsql_stock
            where s_w_id = in_w_id and s_quantity < in_threshold and s_i_id in (
                select ol_i_id from bmsql_district
                    join bmsql_order_line on ol_w_id = d_w_id and ol_d_id = d_id
                     and ol_o_id >= d_next_o_id - 20 and ol_o_id < d_next_o_id
                    where d_w_id = in_w_id and d_id = in_d_id)) as l;
    return v_low;
end
$fn$"
            .to_string(),
    ]
}

/// The call of `kind`'s function, with `$n` parameters.
pub fn call_sql(kind: TpccKind) -> &'static str {
    match kind {
        TpccKind::NewOrder => {
            "SELECT bmsql_proc_new_order($1, $2, $3, $4::integer[], $5::integer[], $6::integer[])"
        }
        TpccKind::Payment => "SELECT bmsql_proc_payment($1, $2, $3, $4, $5, $6, $7)",
        TpccKind::OrderStatus => "SELECT bmsql_proc_order_status($1, $2, $3, $4)",
        TpccKind::Delivery => "SELECT bmsql_proc_delivery($1, $2)",
        TpccKind::StockLevel => "SELECT bmsql_proc_stock_level($1, $2, $3)",
    }
}

/// TPC-C as a runner workload: one call per transaction, kinds named as
/// [`TpccKind::name`]. Each client made by `sources` is the next terminal
/// ([`tpcc::Terminal::nth`]); the count goes on across runs of the same
/// `Workload`, so build one per run for terminals 0..threads.
pub fn workload(spec: &TpccSpec) -> Workload {
    let mut statements = StatementSet::default();
    for k in TpccKind::ALL {
        statements.push(format!("tpcc_{}", k.name()), call_sql(k).to_string());
    }
    let c = run_constants(spec);
    let (warehouses, mix) = (spec.warehouses.max(1), spec.mix);
    let next = AtomicU32::new(0);
    Workload {
        statements,
        sources: Box::new(move || {
            let i = next.fetch_add(1, Ordering::Relaxed);
            Box::new(TpccSource {
                driver: TpccDriver {
                    warehouses,
                    mix,
                    c,
                    terminal: tpcc::Terminal::nth(i, warehouses),
                },
                params: Vec::with_capacity(7),
            })
        }),
        retry_codes: TPCC_RETRY,
        rollback_codes: &[NEW_ORDER_ROLLBACK],
        abandon_codes: &[],
        keeps_rows: false,
        kinds: TpccKind::ALL.iter().map(|k| k.name()).collect(),
        protocol: spec.protocol,
        seed: spec.seed,
        sessions: None,
    }
}

/// The run's NURand constants, one set for all terminals, at clause
/// 2.1.6's distance from those the tables were loaded with.
pub(super) fn run_constants(spec: &TpccSpec) -> NurandC {
    let c_load = spec
        .c_load
        .unwrap_or_else(|| TpccData::new(spec.seed, "").constants());
    NurandC::run(
        c_load.c_last,
        &mut Xoshiro256PlusPlus::seed_from_u64(spec.seed ^ 0x5450_4343_5255_4e43),
    )
}

pub(super) struct TpccSource {
    pub(super) driver: TpccDriver,
    pub(super) params: Vec<Param>,
}

/// `{1,2,3}`: an integer array literal.
pub(super) fn int_array(v: impl Iterator<Item = u32>) -> Param {
    let mut s = String::from("{");
    for (i, x) in v.enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&x.to_string());
    }
    s.push('}');
    Param::Text(s)
}

pub(super) fn customer_params(c: &CustomerRef) -> [Param; 2] {
    match c {
        CustomerRef::Id(id) => [Param::Int(i64::from(*id)), Param::Text(String::new())],
        CustomerRef::LastName(n) => [Param::Int(0), Param::Text(n.clone())],
    }
}

impl EventSource for TpccSource {
    fn draw(&mut self, rng: &mut Xoshiro256PlusPlus, ev: &mut Event) {
        let txn = self.driver.draw(rng);
        let kind = txn.kind();
        let p = &mut self.params;
        p.clear();
        let int = |v: u32| Param::Int(i64::from(v));
        match &txn {
            TpccTxn::NewOrder(o) => {
                let lines = o.lock_order();
                p.extend([int(o.w_id), int(o.d_id), int(o.c_id)]);
                p.push(int_array(lines.iter().map(|l| l.supply_w_id)));
                p.push(int_array(lines.iter().map(|l| l.i_id)));
                p.push(int_array(lines.iter().map(|l| l.quantity)));
            }
            TpccTxn::Payment(x) => {
                p.extend([int(x.w_id), int(x.d_id), int(x.c_w_id), int(x.c_d_id)]);
                p.extend(customer_params(&x.customer));
                p.push(Param::Text(format!(
                    "{}.{:02}",
                    x.amount_cents / 100,
                    x.amount_cents % 100
                )));
            }
            TpccTxn::OrderStatus(x) => {
                p.extend([int(x.w_id), int(x.d_id)]);
                p.extend(customer_params(&x.customer));
            }
            TpccTxn::Delivery(x) => p.extend([int(x.w_id), int(x.carrier_id)]),
            TpccTxn::StockLevel(x) => p.extend([int(x.w_id), int(x.d_id), int(x.threshold)]),
        }
        ev.set_kind(kind as usize);
        ev.push(kind as usize, p);
    }
}

/// Procedure mode's functions missing from `schema`, in [`FUNCTIONS`] order.
pub async fn missing_functions(client: &Client, schema: &str) -> Result<Vec<String>, DbError> {
    let rows = client
        .query(
            "select p.proname::text from pg_proc p join pg_namespace n on n.oid = p.pronamespace \
             where n.nspname = $1 and p.proname = any($2)",
            &[&schema, &FUNCTIONS.to_vec()],
        )
        .await
        .map_err(|e| db_err("reading the transaction functions", e))?;
    let present: BTreeSet<String> = rows.iter().map(|r| r.get(0)).collect();
    Ok(FUNCTIONS
        .iter()
        .filter(|f| !present.contains(**f))
        .map(|f| f.to_string())
        .collect())
}

/// Creates procedure mode's functions in `schema` (the connection's
/// search_path must lead there); a user who may not gets an error that says how.
pub async fn create_functions(client: &Client, schema: &str) -> Result<(), DbError> {
    client
        .batch_execute(&functions_sql().join(";\n"))
        .await
        .map_err(|e| match e.as_db_error() {
            Some(d) if d.code().code() == "42501" => DbError::other(format!(
                "--tpcc-mode procedures needs BenchmarkSQL's transactions as functions in schema {schema}, \
                 and this user may not create them ({}): create them as a user who may (`csdchar db prepare` \
                 creates them), or run with --tpcc-mode statements, which needs none",
                d.message()
            )),
            _ => db_err("creating the transaction functions", e),
        })
}
