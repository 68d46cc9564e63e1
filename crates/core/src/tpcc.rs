//! BenchmarkSQL-compatible TPC-C (5.x): the nine `bmsql_` tables and their
//! keys, the initial population of TPC-C clause 4.3.3 as PostgreSQL COPY text,
//! NURand with the C constants of clause 2.1.6, the five transactions' inputs
//! (clause 2), BenchmarkSQL's terminals and mix, and consistency conditions
//! 1–4 of clause 3.3.2. Driver-free: the database side is in csdchar-dbload.
//!
//! Over 1,200 lines on purpose: one specification's rules (schema, data
//! population, NURand, transaction inputs, consistency) with BenchmarkSQL's
//! choice beside each, kept in one file so they can be checked against the
//! specification and BenchmarkSQL's source in one reading.

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Rows of `bmsql_item`.
pub const ITEMS: u32 = 100_000;
/// Districts per warehouse.
pub const DISTRICTS: u32 = 10;
/// Customers per district.
pub const CUSTOMERS_PER_DISTRICT: u32 = 3_000;
/// Stock rows per warehouse (one per item).
pub const STOCK_PER_WAREHOUSE: u32 = ITEMS;
/// Orders per district at load.
pub const ORDERS_PER_DISTRICT: u32 = 3_000;
/// The first undelivered order of a district at load: 2101..3000 are in new_order.
pub const FIRST_NEW_ORDER: u32 = 2_101;
/// Fewest order lines per order.
pub const MIN_ORDER_LINES: u32 = 5;
/// Most order lines per order.
pub const MAX_ORDER_LINES: u32 = 15;

/// The history-id sequence (BenchmarkSQL's `extraHistID`).
pub const HISTORY_SEQUENCE: &str = "bmsql_hist_id_seq";

/// BenchmarkSQL's tables, in its creation order (`bmsql_config` first).
pub const TABLES: [&str; 10] = [
    "bmsql_config",
    "bmsql_warehouse",
    "bmsql_district",
    "bmsql_customer",
    "bmsql_history",
    "bmsql_new_order",
    "bmsql_oorder",
    "bmsql_order_line",
    "bmsql_item",
    "bmsql_stock",
];

/// The tables loaded per warehouse, in the order the loader copies them
/// (BenchmarkSQL's: the warehouse row, stock, districts, then per district
/// customers, history, orders, order lines, new orders).
pub const WAREHOUSE_TABLES: [&str; 8] = [
    "bmsql_warehouse",
    "bmsql_stock",
    "bmsql_district",
    "bmsql_customer",
    "bmsql_history",
    "bmsql_oorder",
    "bmsql_order_line",
    "bmsql_new_order",
];

/// The per-table fillfactors of BenchmarkSQL 5.x (`extraCommandsBeforeLoad.sql`
/// for PostgreSQL); tables not listed keep PostgreSQL's 100.
pub const DEFAULT_FILLFACTORS: [(&str, u8); 6] = [
    ("bmsql_oorder", 80),
    ("bmsql_order_line", 80),
    ("bmsql_warehouse", 50),
    ("bmsql_district", 79),
    ("bmsql_customer", 90),
    ("bmsql_stock", 95),
];

/// The fillfactor `table` is created with: `over` for every data table when
/// given, else BenchmarkSQL's default (None: PostgreSQL's 100).
pub fn table_fillfactor(table: &str, over: Option<u8>) -> Option<u8> {
    if table == "bmsql_config" {
        return None;
    }
    over.or_else(|| {
        DEFAULT_FILLFACTORS
            .iter()
            .find(|(t, _)| *t == table)
            .map(|(_, f)| *f)
    })
}

/// Column definitions as in BenchmarkSQL's `tableCreates.sql`; the COPY rows
/// below follow this column order.
pub fn columns(table: &str) -> &'static str {
    match table {
        "bmsql_config" => "cfg_name varchar(30) primary key, cfg_value varchar(50)",
        "bmsql_warehouse" => {
            "w_id integer not null, w_ytd decimal(12,2), w_tax decimal(4,4), w_name varchar(10), \
             w_street_1 varchar(20), w_street_2 varchar(20), w_city varchar(20), w_state char(2), w_zip char(9)"
        }
        "bmsql_district" => {
            "d_w_id integer not null, d_id integer not null, d_ytd decimal(12,2), d_tax decimal(4,4), \
             d_next_o_id integer, d_name varchar(10), d_street_1 varchar(20), d_street_2 varchar(20), \
             d_city varchar(20), d_state char(2), d_zip char(9)"
        }
        "bmsql_customer" => {
            "c_w_id integer not null, c_d_id integer not null, c_id integer not null, \
             c_discount decimal(4,4), c_credit char(2), c_last varchar(16), c_first varchar(16), \
             c_credit_lim decimal(12,2), c_balance decimal(12,2), c_ytd_payment decimal(12,2), \
             c_payment_cnt integer, c_delivery_cnt integer, c_street_1 varchar(20), \
             c_street_2 varchar(20), c_city varchar(20), c_state char(2), c_zip char(9), \
             c_phone char(16), c_since timestamp, c_middle char(2), c_data varchar(500)"
        }
        "bmsql_history" => {
            "hist_id integer, h_c_id integer, h_c_d_id integer, h_c_w_id integer, h_d_id integer, \
             h_w_id integer, h_date timestamp, h_amount decimal(6,2), h_data varchar(24)"
        }
        "bmsql_new_order" => {
            "no_w_id integer not null, no_d_id integer not null, no_o_id integer not null"
        }
        "bmsql_oorder" => {
            "o_w_id integer not null, o_d_id integer not null, o_id integer not null, o_c_id integer, \
             o_carrier_id integer, o_ol_cnt integer, o_all_local integer, o_entry_d timestamp"
        }
        "bmsql_order_line" => {
            "ol_w_id integer not null, ol_d_id integer not null, ol_o_id integer not null, \
             ol_number integer not null, ol_i_id integer not null, ol_delivery_d timestamp, \
             ol_amount decimal(6,2), ol_supply_w_id integer, ol_quantity integer, ol_dist_info char(24)"
        }
        "bmsql_item" => {
            "i_id integer not null, i_name varchar(24), i_price decimal(5,2), i_data varchar(50), \
             i_im_id integer"
        }
        _ => {
            "s_w_id integer not null, s_i_id integer not null, s_quantity integer, s_ytd integer, \
             s_order_cnt integer, s_remote_cnt integer, s_data varchar(50), s_dist_01 char(24), \
             s_dist_02 char(24), s_dist_03 char(24), s_dist_04 char(24), s_dist_05 char(24), \
             s_dist_06 char(24), s_dist_07 char(24), s_dist_08 char(24), s_dist_09 char(24), \
             s_dist_10 char(24)"
        }
    }
}

/// The history sequence and the ten CREATE TABLE statements; each data
/// table gets its fillfactor ([`table_fillfactor`]) in its WITH clause,
/// which is what BenchmarkSQL's ALTER TABLE … SET (FILLFACTOR) before the
/// load amounts to. The sequence is owned by `bmsql_history.hist_id` so
/// that dropping the table drops it too.
pub fn create_tables_sql(fillfactor: Option<u8>) -> Vec<String> {
    let mut v = vec![format!("create sequence {HISTORY_SEQUENCE}")];
    for t in TABLES {
        let with = table_fillfactor(t, fillfactor)
            .map(|f| format!(" with (fillfactor={f})"))
            .unwrap_or_default();
        v.push(format!("create table {t} ({}){with}", columns(t)));
    }
    v.push(format!(
        "alter sequence {HISTORY_SEQUENCE} owned by bmsql_history.hist_id"
    ));
    v
}

/// BenchmarkSQL's `indexCreates.sql`: the primary keys and the two
/// secondary indexes, built after the load. Largest tables first, so a
/// pool of connections finishes sooner. (The config table has its key from creation.)
pub fn index_sql() -> Vec<String> {
    INDEXES.iter().map(|(_, sql)| sql.to_string()).collect()
}

/// BenchmarkSQL's `indexCreates.sql` as (index name, statement); a primary
/// key's index has the constraint's name, so the name tells whether it is built.
pub const INDEXES: [(&str, &str); 10] = [
    (
        "bmsql_stock_pkey",
        "alter table bmsql_stock add constraint bmsql_stock_pkey primary key (s_w_id, s_i_id)",
    ),
    (
        "bmsql_order_line_pkey",
        "alter table bmsql_order_line add constraint bmsql_order_line_pkey primary key (ol_w_id, ol_d_id, ol_o_id, ol_number)",
    ),
    (
        "bmsql_customer_pkey",
        "alter table bmsql_customer add constraint bmsql_customer_pkey primary key (c_w_id, c_d_id, c_id)",
    ),
    (
        "bmsql_customer_idx1",
        "create index bmsql_customer_idx1 on bmsql_customer (c_w_id, c_d_id, c_last, c_first)",
    ),
    (
        "bmsql_oorder_pkey",
        "alter table bmsql_oorder add constraint bmsql_oorder_pkey primary key (o_w_id, o_d_id, o_id)",
    ),
    (
        "bmsql_oorder_idx1",
        "create unique index bmsql_oorder_idx1 on bmsql_oorder (o_w_id, o_d_id, o_carrier_id, o_id)",
    ),
    (
        "bmsql_item_pkey",
        "alter table bmsql_item add constraint bmsql_item_pkey primary key (i_id)",
    ),
    (
        "bmsql_new_order_pkey",
        "alter table bmsql_new_order add constraint bmsql_new_order_pkey primary key (no_w_id, no_d_id, no_o_id)",
    ),
    (
        "bmsql_district_pkey",
        "alter table bmsql_district add constraint bmsql_district_pkey primary key (d_w_id, d_id)",
    ),
    (
        "bmsql_warehouse_pkey",
        "alter table bmsql_warehouse add constraint bmsql_warehouse_pkey primary key (w_id)",
    ),
];

/// The primary key [`history_id_sql`] adds last: the build's final step.
pub const HISTORY_KEY: &str = "bmsql_history_pkey";

/// BenchmarkSQL's `foreignKeys.sql` (after the keys they reference):
/// (table, constraint name, statement).
pub const FOREIGN_KEYS: [(&str, &str, &str); 10] = [
    (
        "bmsql_district",
        "d_warehouse_fkey",
        "alter table bmsql_district add constraint d_warehouse_fkey foreign key (d_w_id) references bmsql_warehouse (w_id)",
    ),
    (
        "bmsql_customer",
        "c_district_fkey",
        "alter table bmsql_customer add constraint c_district_fkey foreign key (c_w_id, c_d_id) references bmsql_district (d_w_id, d_id)",
    ),
    (
        "bmsql_history",
        "h_customer_fkey",
        "alter table bmsql_history add constraint h_customer_fkey foreign key (h_c_w_id, h_c_d_id, h_c_id) references bmsql_customer (c_w_id, c_d_id, c_id)",
    ),
    (
        "bmsql_history",
        "h_district_fkey",
        "alter table bmsql_history add constraint h_district_fkey foreign key (h_w_id, h_d_id) references bmsql_district (d_w_id, d_id)",
    ),
    (
        "bmsql_new_order",
        "no_order_fkey",
        "alter table bmsql_new_order add constraint no_order_fkey foreign key (no_w_id, no_d_id, no_o_id) references bmsql_oorder (o_w_id, o_d_id, o_id)",
    ),
    (
        "bmsql_oorder",
        "o_customer_fkey",
        "alter table bmsql_oorder add constraint o_customer_fkey foreign key (o_w_id, o_d_id, o_c_id) references bmsql_customer (c_w_id, c_d_id, c_id)",
    ),
    (
        "bmsql_order_line",
        "ol_order_fkey",
        "alter table bmsql_order_line add constraint ol_order_fkey foreign key (ol_w_id, ol_d_id, ol_o_id) references bmsql_oorder (o_w_id, o_d_id, o_id)",
    ),
    (
        "bmsql_order_line",
        "ol_stock_fkey",
        "alter table bmsql_order_line add constraint ol_stock_fkey foreign key (ol_supply_w_id, ol_i_id) references bmsql_stock (s_w_id, s_i_id)",
    ),
    (
        "bmsql_stock",
        "s_warehouse_fkey",
        "alter table bmsql_stock add constraint s_warehouse_fkey foreign key (s_w_id) references bmsql_warehouse (w_id)",
    ),
    (
        "bmsql_stock",
        "s_item_fkey",
        "alter table bmsql_stock add constraint s_item_fkey foreign key (s_i_id) references bmsql_item (i_id)",
    ),
];

/// BenchmarkSQL's `extraHistID.sql` for PostgreSQL: the sequence continues
/// after the loaded ids, is the column's default, and the column becomes the key.
pub fn history_id_sql() -> Vec<String> {
    vec![
        format!("select setval('{HISTORY_SEQUENCE}', (select max(hist_id) from bmsql_history))"),
        format!(
            "alter table bmsql_history alter column hist_id set default nextval('{HISTORY_SEQUENCE}')"
        ),
        "alter table bmsql_history add primary key (hist_id)".to_string(),
    ]
}

/// Rows of `table` after loading `warehouses` (None for order lines, 5–15 per order).
pub fn expected_rows(table: &str, warehouses: u32) -> Option<u64> {
    let w = u64::from(warehouses);
    let per_w = u64::from(DISTRICTS * CUSTOMERS_PER_DISTRICT);
    Some(match table {
        "bmsql_config" => 4,
        "bmsql_item" => u64::from(ITEMS),
        "bmsql_warehouse" => w,
        "bmsql_district" => u64::from(DISTRICTS) * w,
        "bmsql_customer" | "bmsql_history" | "bmsql_oorder" => per_w * w,
        "bmsql_new_order" => u64::from(DISTRICTS * (ORDERS_PER_DISTRICT - FIRST_NEW_ORDER + 1)) * w,
        "bmsql_stock" => u64::from(STOCK_PER_WAREHOUSE) * w,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------
// Random numbers (clause 2.1.6, 4.3.2)

/// Uniform integer in [lo, hi].
pub fn uniform(rng: &mut Xoshiro256PlusPlus, lo: u32, hi: u32) -> u32 {
    let span = u64::from(hi - lo) + 1;
    lo + ((u128::from(rng.next_u64()) * u128::from(span)) >> 64) as u32
}

/// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
pub fn nurand(rng: &mut Xoshiro256PlusPlus, a: u32, x: u32, y: u32, c: u32) -> u32 {
    (((uniform(rng, 0, a) | uniform(rng, x, y)) + c) % (y - x + 1)) + x
}

/// The C constants of NURand, one per field (clause 2.1.6); all terminals share them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NurandC {
    /// For C_LAST (A = 255), in [0, 255].
    pub c_last: u32,
    /// For C_ID (A = 1023), in [0, 1023].
    pub c_id: u32,
    /// For OL_I_ID (A = 8191), in [0, 8191].
    pub ol_i_id: u32,
}

impl NurandC {
    /// The constants of a load (C-Load), stored in `bmsql_config`.
    pub fn load(rng: &mut Xoshiro256PlusPlus) -> NurandC {
        NurandC {
            c_last: uniform(rng, 0, 255),
            c_id: uniform(rng, 0, 1023),
            ol_i_id: uniform(rng, 0, 8191),
        }
    }

    /// The constants of a run against a load whose C_LAST constant was
    /// `load_c_last`: C_LAST per 2.1.6.1 ([`c_delta_ok`]), the other two
    /// drawn afresh, as BenchmarkSQL does.
    pub fn run(load_c_last: u32, rng: &mut Xoshiro256PlusPlus) -> NurandC {
        let c_id = uniform(rng, 0, 1023);
        let ol_i_id = uniform(rng, 0, 8191);
        let c_last = loop {
            let c = uniform(rng, 0, 255);
            if c_delta_ok(load_c_last, c) {
                break c;
            }
        };
        NurandC {
            c_last,
            c_id,
            ol_i_id,
        }
    }
}

/// Clause 2.1.6.1: |C-Run − C-Load| for C_LAST is in [65, 119] and is neither 96 nor 112.
pub fn c_delta_ok(load: u32, run: u32) -> bool {
    let d = load.abs_diff(run);
    (65..=119).contains(&d) && d != 96 && d != 112
}

/// The syllables of C_LAST (clause 4.3.2.3).
pub const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// Appends the last name of `num` in [0, 999]: its three digits as syllables.
pub fn push_last_name(num: u32, out: &mut String) {
    for div in [100, 10, 1] {
        out.push_str(SYLLABLES[(num / div % 10) as usize]);
    }
}

/// The last name of `num` in [0, 999] (0 → BARBARBAR, 371 → PRICALLYOUGHT).
pub fn last_name(num: u32) -> String {
    let mut s = String::with_capacity(15);
    push_last_name(num, &mut s);
    s
}

const ALNUM: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Appends `len` random characters of `set`: several per 64-bit draw, each
/// the next digit of the draw read as a fraction in base `set.len()` —
/// unbiased to well under 0.1% at `per_draw` digits, and the loader's
/// dominant cost, so it matters in debug builds.
fn push_random_chars(
    rng: &mut Xoshiro256PlusPlus,
    out: &mut String,
    len: u32,
    set: &[u8],
    per_draw: u32,
) {
    let n = set.len() as u128;
    let (mut x, mut left) = (0u64, 0u32);
    for _ in 0..len {
        if left == 0 {
            x = rng.next_u64();
            left = per_draw;
        }
        let wide = u128::from(x) * n;
        out.push(set[(wide >> 64) as usize] as char);
        x = wide as u64;
        left -= 1;
    }
}

/// A random alphanumeric string of exactly `len` characters (a-string, 4.3.2.2).
fn push_alnum(rng: &mut Xoshiro256PlusPlus, out: &mut String, len: u32) {
    push_random_chars(rng, out, len, ALNUM, 8);
}

/// An a-string of random length in [lo, hi].
fn push_astring(rng: &mut Xoshiro256PlusPlus, out: &mut String, lo: u32, hi: u32) {
    let len = uniform(rng, lo, hi);
    push_alnum(rng, out, len);
}

/// An n-string (digits) of exactly `len` characters.
fn push_nstring(rng: &mut Xoshiro256PlusPlus, out: &mut String, len: u32) {
    push_random_chars(rng, out, len, b"0123456789", 15);
}

/// Two random upper-case letters (BenchmarkSQL's state).
fn push_state(rng: &mut Xoshiro256PlusPlus, out: &mut String) {
    push_random_chars(rng, out, 2, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", 2);
}

/// Zip code: four random digits and "11111" (4.3.2.7).
fn push_zip(rng: &mut Xoshiro256PlusPlus, out: &mut String) {
    push_nstring(rng, out, 4);
    out.push_str("11111");
}

/// i_data / s_data: 26–50 characters, 10% with "ORIGINAL" at a random place (4.3.3.1).
fn push_data_with_original(rng: &mut Xoshiro256PlusPlus, out: &mut String) {
    if uniform(rng, 1, 100) <= 10 {
        let len = uniform(rng, 26, 50);
        let at = uniform(rng, 0, len - 8);
        push_alnum(rng, out, at);
        out.push_str("ORIGINAL");
        push_alnum(rng, out, len - 8 - at);
    } else {
        push_astring(rng, out, 26, 50);
    }
}

/// Appends an unsigned integer without the formatting machinery (cheap in debug builds).
fn push_u64(out: &mut String, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for &b in &buf[i..] {
        out.push(b as char);
    }
}

/// `units / 10^scale` as a decimal literal with `scale` digits after the point.
fn push_decimal(out: &mut String, units: i64, scale: u32) {
    if units < 0 {
        out.push('-');
    }
    let u = units.unsigned_abs();
    let p = 10u64.pow(scale);
    push_u64(out, u / p);
    out.push('.');
    let frac = u % p;
    let mut d = p / 10;
    while d > 0 {
        out.push((b'0' + (frac / d % 10) as u8) as char);
        d /= 10;
    }
}

/// Column separator and row end of COPY text.
fn tab(out: &mut String) {
    out.push('\t');
}

fn u(out: &mut String, v: u32) {
    push_u64(out, u64::from(v));
    out.push('\t');
}

// ---------------------------------------------------------------------------
// Initial population (clause 4.3.3, BenchmarkSQL's LoadDataWorker)

/// Stream ids, so every table of every warehouse has its own random stream
/// and a warehouse's rows do not depend on which connection loads it.
#[derive(Clone, Copy)]
enum Stream {
    Constants = 1,
    Item,
    Warehouse,
    District,
    Stock,
    Customer,
    History,
    OrderLineCounts,
    Permutation,
    Order,
    OrderLine,
}

/// Generates the initial database as PostgreSQL COPY text (tab-separated,
/// `\N` for NULL, columns in [`create_tables_sql`]'s order), deterministic
/// from the seed and the load timestamp.
#[derive(Debug, Clone)]
pub struct TpccData {
    seed: u64,
    constants: NurandC,
    timestamp: String,
}

impl TpccData {
    /// Data of `seed`; `timestamp` (PostgreSQL text, e.g. `2024-05-01 12:00:00`)
    /// stands for "now" in c_since, h_date, o_entry_d and ol_delivery_d.
    pub fn new(seed: u64, timestamp: &str) -> TpccData {
        let mut d = TpccData {
            seed,
            constants: NurandC {
                c_last: 0,
                c_id: 0,
                ol_i_id: 0,
            },
            timestamp: timestamp.to_string(),
        };
        d.constants = NurandC::load(&mut d.rng(Stream::Constants, 0, 0));
        d
    }

    /// The load's NURand constants (C-Load), kept in `bmsql_config`.
    pub fn constants(&self) -> NurandC {
        self.constants
    }

    fn rng(&self, stream: Stream, w: u32, d: u32) -> Xoshiro256PlusPlus {
        // seed_from_u64 spreads the key through SplitMix64: distinct keys give unrelated streams.
        let key = self.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ (u64::from(w) << 16)
            ^ ((stream as u64) << 8)
            ^ u64::from(d);
        Xoshiro256PlusPlus::seed_from_u64(key)
    }

    /// `bmsql_config`: warehouses and the three C constants, as BenchmarkSQL
    /// stores them (its run reads them and will not start without them).
    pub fn config_rows(&self, warehouses: u32, out: &mut String) -> u64 {
        for (k, v) in [
            ("warehouses", warehouses),
            ("nURandCLast", self.constants.c_last),
            ("nURandCC_ID", self.constants.c_id),
            ("nURandCI_ID", self.constants.ol_i_id),
        ] {
            out.push_str(k);
            tab(out);
            push_u64(out, u64::from(v));
            out.push('\n');
        }
        4
    }

    /// `bmsql_item`: 100,000 rows.
    pub fn item_rows(&self, out: &mut String) -> u64 {
        let rng = &mut self.rng(Stream::Item, 0, 0);
        for i in 1..=ITEMS {
            u(out, i);
            push_astring(rng, out, 14, 24);
            tab(out);
            push_decimal(out, i64::from(uniform(rng, 100, 10_000)), 2);
            tab(out);
            push_data_with_original(rng, out);
            tab(out);
            push_u64(out, u64::from(uniform(rng, 1, 10_000)));
            out.push('\n');
        }
        u64::from(ITEMS)
    }

    /// Name, street 1 and 2, city, state, zip (warehouse and district).
    fn push_address(rng: &mut Xoshiro256PlusPlus, out: &mut String, name: bool) {
        if name {
            push_astring(rng, out, 6, 10);
            tab(out);
        }
        for _ in 0..3 {
            push_astring(rng, out, 10, 20);
            tab(out);
        }
        push_state(rng, out);
        tab(out);
        push_zip(rng, out);
    }

    /// `bmsql_warehouse`: the row of warehouse `w`.
    pub fn warehouse_rows(&self, w: u32, out: &mut String) -> u64 {
        let rng = &mut self.rng(Stream::Warehouse, w, 0);
        u(out, w);
        out.push_str("300000.00\t");
        push_decimal(out, i64::from(uniform(rng, 0, 2000)), 4);
        tab(out);
        Self::push_address(rng, out, true);
        out.push('\n');
        1
    }

    /// `bmsql_district`: the 10 districts of `w`.
    pub fn district_rows(&self, w: u32, out: &mut String) -> u64 {
        let rng = &mut self.rng(Stream::District, w, 0);
        for d in 1..=DISTRICTS {
            u(out, w);
            u(out, d);
            out.push_str("30000.00\t");
            push_decimal(out, i64::from(uniform(rng, 0, 2000)), 4);
            tab(out);
            u(out, ORDERS_PER_DISTRICT + 1);
            Self::push_address(rng, out, true);
            out.push('\n');
        }
        u64::from(DISTRICTS)
    }

    /// `bmsql_stock`: 100,000 rows of `w`.
    pub fn stock_rows(&self, w: u32, out: &mut String) -> u64 {
        let rng = &mut self.rng(Stream::Stock, w, 0);
        for i in 1..=STOCK_PER_WAREHOUSE {
            u(out, w);
            u(out, i);
            u(out, uniform(rng, 10, 100));
            out.push_str("0\t0\t0\t");
            push_data_with_original(rng, out);
            for _ in 0..10 {
                tab(out);
                push_alnum(rng, out, 24);
            }
            out.push('\n');
        }
        u64::from(STOCK_PER_WAREHOUSE)
    }

    /// `bmsql_customer`: 3,000 per district of `w`. C_LAST: c_id 1..1000 take
    /// the syllables of c_id − 1, the others NURand(255, 0, 999) with C-Load.
    pub fn customer_rows(&self, w: u32, out: &mut String) -> u64 {
        for d in 1..=DISTRICTS {
            let rng = &mut self.rng(Stream::Customer, w, d);
            for c in 1..=CUSTOMERS_PER_DISTRICT {
                u(out, w);
                u(out, d);
                u(out, c);
                push_decimal(out, i64::from(uniform(rng, 0, 5000)), 4);
                out.push_str(if uniform(rng, 1, 100) <= 10 {
                    "\tBC\t"
                } else {
                    "\tGC\t"
                });
                let num = if c <= 1000 {
                    c - 1
                } else {
                    nurand(rng, 255, 0, 999, self.constants.c_last)
                };
                push_last_name(num, out);
                tab(out);
                push_astring(rng, out, 8, 16);
                out.push_str("\t50000.00\t-10.00\t10.00\t1\t0\t");
                for _ in 0..3 {
                    push_astring(rng, out, 10, 20);
                    tab(out);
                }
                push_state(rng, out);
                tab(out);
                push_zip(rng, out);
                tab(out);
                push_nstring(rng, out, 16);
                tab(out);
                out.push_str(&self.timestamp);
                out.push_str("\tOE\t");
                push_astring(rng, out, 300, 500);
                out.push('\n');
            }
        }
        u64::from(DISTRICTS * CUSTOMERS_PER_DISTRICT)
    }

    /// `bmsql_history`: one row per customer of `w`, hist_id numbered as BenchmarkSQL does.
    pub fn history_rows(&self, w: u32, out: &mut String) -> u64 {
        let rng = &mut self.rng(Stream::History, w, 0);
        for d in 1..=DISTRICTS {
            for c in 1..=CUSTOMERS_PER_DISTRICT {
                u(
                    out,
                    (w - 1) * DISTRICTS * CUSTOMERS_PER_DISTRICT
                        + (d - 1) * CUSTOMERS_PER_DISTRICT
                        + c,
                );
                u(out, c);
                u(out, d);
                u(out, w);
                u(out, d);
                u(out, w);
                out.push_str(&self.timestamp);
                out.push_str("\t10.00\t");
                push_astring(rng, out, 12, 24);
                out.push('\n');
            }
        }
        u64::from(DISTRICTS * CUSTOMERS_PER_DISTRICT)
    }

    /// o_ol_cnt of the orders 1..3000 of district (w, d): shared by orders and order lines.
    fn order_line_counts(&self, w: u32, d: u32) -> Vec<u8> {
        let rng = &mut self.rng(Stream::OrderLineCounts, w, d);
        (0..ORDERS_PER_DISTRICT)
            .map(|_| uniform(rng, MIN_ORDER_LINES, MAX_ORDER_LINES) as u8)
            .collect()
    }

    /// `bmsql_oorder`: 3,000 per district of `w`, customers in a random
    /// permutation (4.3.3.1), delivered (a carrier) below o_id 2101.
    pub fn oorder_rows(&self, w: u32, out: &mut String) -> u64 {
        for d in 1..=DISTRICTS {
            let counts = self.order_line_counts(w, d);
            let perm = &mut self.rng(Stream::Permutation, w, d);
            let mut cids: Vec<u32> = (1..=CUSTOMERS_PER_DISTRICT).collect();
            for i in (1..cids.len()).rev() {
                let j = uniform(perm, 0, i as u32) as usize;
                cids.swap(i, j);
            }
            let rng = &mut self.rng(Stream::Order, w, d);
            for o in 1..=ORDERS_PER_DISTRICT {
                u(out, w);
                u(out, d);
                u(out, o);
                u(out, cids[(o - 1) as usize]);
                if o < FIRST_NEW_ORDER {
                    u(out, uniform(rng, 1, 10));
                } else {
                    out.push_str("\\N\t");
                }
                u(out, u32::from(counts[(o - 1) as usize]));
                out.push_str("1\t");
                out.push_str(&self.timestamp);
                out.push('\n');
            }
        }
        u64::from(DISTRICTS * ORDERS_PER_DISTRICT)
    }

    /// `bmsql_order_line`: o_ol_cnt lines per order of `w`; delivered orders'
    /// lines have the delivery date and amount 0, the others an amount in
    /// [0.01, 9999.99] and no date.
    pub fn order_line_rows(&self, w: u32, out: &mut String) -> u64 {
        let mut rows = 0;
        for d in 1..=DISTRICTS {
            let counts = self.order_line_counts(w, d);
            let rng = &mut self.rng(Stream::OrderLine, w, d);
            for o in 1..=ORDERS_PER_DISTRICT {
                for n in 1..=u32::from(counts[(o - 1) as usize]) {
                    u(out, w);
                    u(out, d);
                    u(out, o);
                    u(out, n);
                    u(out, uniform(rng, 1, ITEMS));
                    if o < FIRST_NEW_ORDER {
                        out.push_str(&self.timestamp);
                        out.push_str("\t0.00\t");
                    } else {
                        out.push_str("\\N\t");
                        push_decimal(out, i64::from(uniform(rng, 1, 999_999)), 2);
                        tab(out);
                    }
                    u(out, w);
                    out.push_str("5\t");
                    push_alnum(rng, out, 24);
                    out.push('\n');
                    rows += 1;
                }
            }
        }
        rows
    }

    /// `bmsql_new_order`: orders 2101..3000 of every district of `w`.
    pub fn new_order_rows(&self, w: u32, out: &mut String) -> u64 {
        for d in 1..=DISTRICTS {
            for o in FIRST_NEW_ORDER..=ORDERS_PER_DISTRICT {
                u(out, w);
                u(out, d);
                push_u64(out, u64::from(o));
                out.push('\n');
            }
        }
        u64::from(DISTRICTS * (ORDERS_PER_DISTRICT - FIRST_NEW_ORDER + 1))
    }

    /// The rows of `table` (one of [`WAREHOUSE_TABLES`]) for warehouse `w`.
    pub fn warehouse_table_rows(&self, table: &str, w: u32, out: &mut String) -> u64 {
        match table {
            "bmsql_warehouse" => self.warehouse_rows(w, out),
            "bmsql_stock" => self.stock_rows(w, out),
            "bmsql_district" => self.district_rows(w, out),
            "bmsql_customer" => self.customer_rows(w, out),
            "bmsql_history" => self.history_rows(w, out),
            "bmsql_oorder" => self.oorder_rows(w, out),
            "bmsql_order_line" => self.order_line_rows(w, out),
            "bmsql_new_order" => self.new_order_rows(w, out),
            _ => 0,
        }
    }
}

// ---------------------------------------------------------------------------
// Transactions (clause 2, BenchmarkSQL's jTPCCTData and jTPCCTerminal)

/// The five transactions, in the order of the runner's kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TpccKind {
    /// New-Order (2.4).
    NewOrder = 0,
    /// Payment (2.5).
    Payment = 1,
    /// Order-Status (2.6).
    OrderStatus = 2,
    /// Delivery (2.7), run inline by the terminal as BenchmarkSQL 5.x does.
    Delivery = 3,
    /// Stock-Level (2.8).
    StockLevel = 4,
}

impl TpccKind {
    /// All five, in kind-index order.
    pub const ALL: [TpccKind; 5] = [
        TpccKind::NewOrder,
        TpccKind::Payment,
        TpccKind::OrderStatus,
        TpccKind::Delivery,
        TpccKind::StockLevel,
    ];

    /// The name reported per kind.
    pub fn name(self) -> &'static str {
        match self {
            TpccKind::NewOrder => "new_order",
            TpccKind::Payment => "payment",
            TpccKind::OrderStatus => "order_status",
            TpccKind::Delivery => "delivery",
            TpccKind::StockLevel => "stock_level",
        }
    }
}

/// The transaction mix in percent. As in BenchmarkSQL 5.x, `new_order` is
/// never drawn directly: it is what the other four leave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TpccMix {
    /// New-Order %.
    pub new_order: f64,
    /// Payment %.
    pub payment: f64,
    /// Order-Status %.
    pub order_status: f64,
    /// Delivery %.
    pub delivery: f64,
    /// Stock-Level %.
    pub stock_level: f64,
}

impl Default for TpccMix {
    /// BenchmarkSQL 5.x's sample properties ("pre-5.1 defaults"): 45/43/4/4/4.
    fn default() -> Self {
        TpccMix {
            new_order: 45.0,
            payment: 43.0,
            order_status: 4.0,
            delivery: 4.0,
            stock_level: 4.0,
        }
    }
}

impl TpccMix {
    /// The mix with New-Order taking what the other four leave.
    pub fn from_others(
        payment: f64,
        order_status: f64,
        delivery: f64,
        stock_level: f64,
    ) -> Result<TpccMix, String> {
        let rest = 100.0 - (payment + order_status + delivery + stock_level);
        let m = TpccMix {
            // Rounding must not make a mix whose four shares fill 100% invalid.
            new_order: if rest < 0.0 && rest > -1e-9 {
                0.0
            } else {
                rest
            },
            payment,
            order_status,
            delivery,
            stock_level,
        };
        m.validate().map(|_| m)
    }

    /// No share negative, the four others at most 100%, and `new_order`
    /// their remainder (within 0.01, so a disagreeing value is reported, not ignored).
    pub fn validate(&self) -> Result<(), String> {
        let all = [
            self.new_order,
            self.payment,
            self.order_status,
            self.delivery,
            self.stock_level,
        ];
        if all.iter().any(|p| !p.is_finite() || *p < 0.0) {
            return Err(format!(
                "transaction mix percentages must be 0 or more: {self:?}"
            ));
        }
        let others = self.payment + self.order_status + self.delivery + self.stock_level;
        if others > 100.0 + 1e-9 {
            return Err(format!(
                "payment, order-status, delivery and stock-level add up to {others}%, more than 100%"
            ));
        }
        if (100.0 - others - self.new_order).abs() > 0.01 {
            return Err(format!(
                "new-order is what the other four leave ({:.2}%), not {}%",
                100.0 - others,
                self.new_order
            ));
        }
        Ok(())
    }

    /// The share of `kind`, %.
    pub fn share(&self, kind: TpccKind) -> f64 {
        match kind {
            TpccKind::NewOrder => self.new_order,
            TpccKind::Payment => self.payment,
            TpccKind::OrderStatus => self.order_status,
            TpccKind::Delivery => self.delivery,
            TpccKind::StockLevel => self.stock_level,
        }
    }

    /// Draws the next transaction in BenchmarkSQL's order of comparison:
    /// payment, stock-level, order-status, delivery, else new-order.
    pub fn draw(&self, rng: &mut Xoshiro256PlusPlus) -> TpccKind {
        const ORDER: [TpccKind; 5] = [
            TpccKind::Payment,
            TpccKind::StockLevel,
            TpccKind::OrderStatus,
            TpccKind::Delivery,
            TpccKind::NewOrder,
        ];
        let total: f64 = ORDER.iter().map(|k| self.share(*k)).sum();
        let x = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
        let mut edge = 0.0;
        for kind in ORDER {
            edge += self.share(kind);
            if x < edge {
                return kind;
            }
        }
        // Rounding at the top edge: the last kind with a share.
        ORDER
            .into_iter()
            .rev()
            .find(|k| self.share(*k) > 0.0)
            .unwrap_or(TpccKind::NewOrder)
    }
}

/// A terminal's home: its warehouse for every transaction and its district
/// for Stock-Level (BenchmarkSQL 5.x binds both per terminal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminal {
    /// Home warehouse.
    pub w_id: u32,
    /// District of its Stock-Level transactions.
    pub d_id: u32,
}

impl Terminal {
    /// Terminal `i` (from 0): warehouse (i mod W) + 1, district (i / W mod 10) + 1,
    /// so the first 10·W terminals have distinct (warehouse, district) pairs,
    /// as BenchmarkSQL's assignment guarantees.
    pub fn nth(i: u32, warehouses: u32) -> Terminal {
        let w = warehouses.max(1);
        Terminal {
            w_id: i % w + 1,
            d_id: (i / w) % DISTRICTS + 1,
        }
    }
}

/// How a transaction names its customer (60% by last name in Payment and Order-Status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CustomerRef {
    /// By c_id, NURand(1023, 1, 3000).
    Id(u32),
    /// By c_last, the syllables of NURand(255, 0, 999).
    LastName(String),
}

/// One New-Order line's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderLineInput {
    /// Item, NURand(8191, 1, 100000); an unused id in the rolled-back 1%.
    pub i_id: u32,
    /// Supplying warehouse: home, or 1% another one when there are several.
    pub supply_w_id: u32,
    /// Quantity, 1..10.
    pub quantity: u32,
}

/// New-Order's input (2.4.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOrderInput {
    /// Home warehouse.
    pub w_id: u32,
    /// District, uniform 1..10.
    pub d_id: u32,
    /// Customer, NURand(1023, 1, 3000).
    pub c_id: u32,
    /// 5–15 lines in input order.
    pub lines: Vec<OrderLineInput>,
    /// The last line names an unused item: the transaction must roll back.
    pub rollback: bool,
}

impl NewOrderInput {
    /// The lines in BenchmarkSQL's processing order, by (supply warehouse,
    /// item), so concurrent New-Orders lock stock rows in one order and
    /// cannot deadlock; order-line numbers follow this order.
    pub fn lock_order(&self) -> Vec<OrderLineInput> {
        let mut l = self.lines.clone();
        l.sort_by_key(|x| (x.supply_w_id, x.i_id));
        l
    }
}

/// Payment's input (2.5.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentInput {
    /// Home warehouse.
    pub w_id: u32,
    /// District, uniform 1..10.
    pub d_id: u32,
    /// Customer's warehouse: home, or 15% a remote one when there are several.
    pub c_w_id: u32,
    /// Customer's district: d_id, or random for a remote customer.
    pub c_d_id: u32,
    /// The customer.
    pub customer: CustomerRef,
    /// Amount in cents, 100..500000 (1.00..5000.00).
    pub amount_cents: u32,
}

/// Order-Status's input (2.6.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderStatusInput {
    /// Home warehouse.
    pub w_id: u32,
    /// District, uniform 1..10.
    pub d_id: u32,
    /// The customer.
    pub customer: CustomerRef,
}

/// Delivery's input (2.7.1): all ten districts of the home warehouse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryInput {
    /// Home warehouse.
    pub w_id: u32,
    /// Carrier, 1..10.
    pub carrier_id: u32,
}

/// Stock-Level's input (2.8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StockLevelInput {
    /// Home warehouse.
    pub w_id: u32,
    /// The terminal's district.
    pub d_id: u32,
    /// Threshold, 10..20.
    pub threshold: u32,
}

/// One drawn transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TpccTxn {
    /// New-Order.
    NewOrder(NewOrderInput),
    /// Payment.
    Payment(PaymentInput),
    /// Order-Status.
    OrderStatus(OrderStatusInput),
    /// Delivery.
    Delivery(DeliveryInput),
    /// Stock-Level.
    StockLevel(StockLevelInput),
}

impl TpccTxn {
    /// Which of the five.
    pub fn kind(&self) -> TpccKind {
        match self {
            TpccTxn::NewOrder(_) => TpccKind::NewOrder,
            TpccTxn::Payment(_) => TpccKind::Payment,
            TpccTxn::OrderStatus(_) => TpccKind::OrderStatus,
            TpccTxn::Delivery(_) => TpccKind::Delivery,
            TpccTxn::StockLevel(_) => TpccKind::StockLevel,
        }
    }
}

/// One terminal's transaction generator.
#[derive(Debug, Clone)]
pub struct TpccDriver {
    /// Warehouses in the database.
    pub warehouses: u32,
    /// The mix.
    pub mix: TpccMix,
    /// The run's NURand constants (the same for all terminals).
    pub c: NurandC,
    /// This terminal's home.
    pub terminal: Terminal,
}

impl TpccDriver {
    /// The next transaction: kind from the mix, then its input.
    pub fn draw(&self, rng: &mut Xoshiro256PlusPlus) -> TpccTxn {
        match self.mix.draw(rng) {
            TpccKind::NewOrder => TpccTxn::NewOrder(self.new_order(rng)),
            TpccKind::Payment => TpccTxn::Payment(self.payment(rng)),
            TpccKind::OrderStatus => TpccTxn::OrderStatus(self.order_status(rng)),
            TpccKind::Delivery => TpccTxn::Delivery(DeliveryInput {
                w_id: self.terminal.w_id,
                carrier_id: uniform(rng, 1, 10),
            }),
            TpccKind::StockLevel => TpccTxn::StockLevel(StockLevelInput {
                w_id: self.terminal.w_id,
                d_id: self.terminal.d_id,
                threshold: uniform(rng, 10, 20),
            }),
        }
    }

    fn customer_id(&self, rng: &mut Xoshiro256PlusPlus) -> u32 {
        nurand(rng, 1023, 1, CUSTOMERS_PER_DISTRICT, self.c.c_id)
    }

    /// 60% by last name, else by id.
    fn customer(&self, rng: &mut Xoshiro256PlusPlus) -> CustomerRef {
        if uniform(rng, 1, 100) <= 60 {
            CustomerRef::LastName(last_name(nurand(rng, 255, 0, 999, self.c.c_last)))
        } else {
            CustomerRef::Id(self.customer_id(rng))
        }
    }

    /// A warehouse other than `home`, uniform (needs 2 or more).
    fn other_warehouse(&self, rng: &mut Xoshiro256PlusPlus, home: u32) -> u32 {
        let w = uniform(rng, 1, self.warehouses - 1);
        if w >= home { w + 1 } else { w }
    }

    /// New-Order's input (2.4.1).
    pub fn new_order(&self, rng: &mut Xoshiro256PlusPlus) -> NewOrderInput {
        let w_id = self.terminal.w_id;
        let d_id = uniform(rng, 1, DISTRICTS);
        let c_id = self.customer_id(rng);
        let n = uniform(rng, MIN_ORDER_LINES, MAX_ORDER_LINES);
        let mut lines: Vec<OrderLineInput> = (0..n)
            .map(|_| {
                let i_id = nurand(rng, 8191, 1, ITEMS, self.c.ol_i_id);
                let supply_w_id = if self.warehouses > 1 && uniform(rng, 1, 100) == 1 {
                    self.other_warehouse(rng, w_id)
                } else {
                    w_id
                };
                OrderLineInput {
                    i_id,
                    supply_w_id,
                    quantity: uniform(rng, 1, 10),
                }
            })
            .collect();
        // 2.4.1.4: 1% name an unused item in the last line. BenchmarkSQL adds k million.
        let rollback = uniform(rng, 1, 100) == 1;
        if rollback {
            lines.last_mut().expect("5 or more lines").i_id += uniform(rng, 1, 9) * 1_000_000;
        }
        NewOrderInput {
            w_id,
            d_id,
            c_id,
            lines,
            rollback,
        }
    }

    /// Payment's input (2.5.1).
    pub fn payment(&self, rng: &mut Xoshiro256PlusPlus) -> PaymentInput {
        let w_id = self.terminal.w_id;
        let d_id = uniform(rng, 1, DISTRICTS);
        let (mut c_w_id, mut c_d_id) = (w_id, d_id);
        if self.warehouses > 1 && uniform(rng, 1, 100) > 85 {
            c_d_id = uniform(rng, 1, DISTRICTS);
            c_w_id = self.other_warehouse(rng, w_id);
        }
        let customer = self.customer(rng);
        PaymentInput {
            w_id,
            d_id,
            c_w_id,
            c_d_id,
            customer,
            amount_cents: uniform(rng, 100, 500_000),
        }
    }

    /// Order-Status's input (2.6.1).
    pub fn order_status(&self, rng: &mut Xoshiro256PlusPlus) -> OrderStatusInput {
        let d_id = uniform(rng, 1, DISTRICTS);
        OrderStatusInput {
            w_id: self.terminal.w_id,
            d_id,
            customer: self.customer(rng),
        }
    }
}

// ---------------------------------------------------------------------------
// Consistency (clause 3.3.2)

/// One consistency condition: SQL returning the number of offending rows (0 = holds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Consistency {
    /// Short name.
    pub name: &'static str,
    /// The condition in the spec's words.
    pub description: &'static str,
    /// A query with one bigint column: the rows (warehouses or districts) that violate it.
    pub sql: &'static str,
}

/// Consistency conditions 1–4 (3.3.2.1–3.3.2.4).
pub const CONSISTENCY: [Consistency; 4] = [
    Consistency {
        name: "condition-1",
        description: "W_YTD = sum(D_YTD) for each warehouse",
        sql: "select count(*) from bmsql_warehouse w \
              left join (select d_w_id, sum(d_ytd) as s from bmsql_district group by d_w_id) d \
              on d.d_w_id = w.w_id where d.s is null or w.w_ytd <> d.s",
    },
    Consistency {
        name: "condition-2",
        description: "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) for each district \
                      (new-order part only where it has outstanding orders)",
        sql: "select count(*) from bmsql_district d \
              left join (select o_w_id, o_d_id, max(o_id) as m from bmsql_oorder group by 1, 2) o \
              on o.o_w_id = d.d_w_id and o.o_d_id = d.d_id \
              left join (select no_w_id, no_d_id, max(no_o_id) as m from bmsql_new_order group by 1, 2) n \
              on n.no_w_id = d.d_w_id and n.no_d_id = d.d_id \
              where o.m is null or d.d_next_o_id - 1 <> o.m or (n.m is not null and n.m <> o.m)",
    },
    Consistency {
        name: "condition-3",
        description: "max(NO_O_ID) - min(NO_O_ID) + 1 = number of NEW-ORDER rows for each district",
        sql: "select count(*) from (select 1 from bmsql_new_order group by no_w_id, no_d_id \
              having max(no_o_id) - min(no_o_id) + 1 <> count(*)) x",
    },
    Consistency {
        name: "condition-4",
        description: "sum(O_OL_CNT) = number of ORDER-LINE rows for each district",
        sql: "select count(*) from \
              (select o_w_id, o_d_id, sum(o_ol_cnt) as s from bmsql_oorder group by 1, 2) o \
              full join (select ol_w_id, ol_d_id, count(*) as c from bmsql_order_line group by 1, 2) l \
              on l.ol_w_id = o.o_w_id and l.ol_d_id = o.o_d_id \
              where coalesce(o.s, 0) <> coalesce(l.c, 0)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rng(seed: u64) -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(seed)
    }

    #[test]
    fn last_names_follow_the_syllables() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
        assert_eq!(last_name(40), "BARPRESBAR");
    }

    #[test]
    fn run_constants_keep_the_c_last_delta_rule() {
        let r = &mut rng(3);
        for load in 0..=255 {
            let c = NurandC::run(load, r);
            let d = load.abs_diff(c.c_last);
            assert!(
                (65..=119).contains(&d) && d != 96 && d != 112,
                "{load} {c:?}"
            );
            assert!(c.c_last <= 255 && c.c_id <= 1023 && c.ol_i_id <= 8191);
        }
        assert!(c_delta_ok(0, 65) && !c_delta_ok(0, 64) && !c_delta_ok(200, 104));
        assert!(!c_delta_ok(10, 122) && c_delta_ok(130, 11) && !c_delta_ok(120, 0));
    }

    #[test]
    fn nurand_uses_its_constant() {
        // With A covering the whole range the OR is still skewed; shifting C shifts every value.
        let (mut a, mut b) = (rng(9), rng(9));
        for _ in 0..1000 {
            let x = nurand(&mut a, 255, 0, 999, 0);
            let y = nurand(&mut b, 255, 0, 999, 17);
            assert_eq!((x + 17) % 1000, y);
        }
        // NURand is not uniform: the 1% most frequent last names take far more than 1%.
        let r = &mut rng(1);
        let mut hist = vec![0u32; 1000];
        for _ in 0..200_000 {
            hist[nurand(r, 255, 0, 999, 123) as usize] += 1;
        }
        hist.sort_unstable_by(|x, y| y.cmp(x));
        let top: u32 = hist[..10].iter().sum();
        assert!(top > 200_000 / 100 * 2, "top 1% share {top}");
    }

    proptest! {
        #[test]
        fn nurand_stays_in_range(seed in any::<u64>(), c in 0u32..8192, which in 0usize..3) {
            let (a, x, y) = [(255, 0, 999), (1023, 1, 3000), (8191, 1, 100_000)][which];
            let r = &mut rng(seed);
            for _ in 0..200 {
                let v = nurand(r, a, x, y, c % (a + 1));
                prop_assert!((x..=y).contains(&v));
            }
        }

        #[test]
        fn mixes_validate_and_draw_only_configured_kinds(p in 0.0f64..60.0, o in 0.0f64..10.0, seed in any::<u64>()) {
            let m = TpccMix::from_others(p, o, 0.0, 100.0 - p - o).unwrap();
            prop_assert!(m.new_order.abs() < 1e-9);
            let r = &mut rng(seed);
            for _ in 0..100 {
                let k = m.draw(r);
                prop_assert!(m.share(k) > 0.0, "{:?} drawn at 0%", k);
            }
        }
    }

    #[test]
    fn mix_validation_reports_disagreements() {
        assert!(TpccMix::default().validate().is_ok());
        assert!(TpccMix::from_others(50.0, 30.0, 20.0, 10.0).is_err());
        let m = TpccMix {
            new_order: 50.0,
            ..TpccMix::default()
        };
        assert!(m.validate().unwrap_err().contains("45.00"));
        assert!(TpccMix::from_others(-1.0, 1.0, 1.0, 1.0).is_err());
    }

    #[test]
    fn the_mix_is_drawn_as_configured() {
        for mix in [
            TpccMix::default(),
            TpccMix::from_others(43.48, 4.35, 4.35, 4.35).unwrap(),
            TpccMix::from_others(10.0, 30.0, 20.0, 15.0).unwrap(),
        ] {
            let r = &mut rng(42);
            let mut n = [0u32; 5];
            let total = 100_000;
            for _ in 0..total {
                n[mix.draw(r) as usize] += 1;
            }
            for k in TpccKind::ALL {
                let got = f64::from(n[k as usize]) / f64::from(total) * 100.0;
                assert!((got - mix.share(k)).abs() < 1.0, "{k:?}: {got} vs {mix:?}");
            }
        }
    }

    #[test]
    fn terminals_spread_over_warehouses_and_districts() {
        let t: Vec<Terminal> = (0..20).map(|i| Terminal::nth(i, 2)).collect();
        assert_eq!(t[0], Terminal { w_id: 1, d_id: 1 });
        assert_eq!(t[1], Terminal { w_id: 2, d_id: 1 });
        assert_eq!(t[2], Terminal { w_id: 1, d_id: 2 });
        let mut pairs: Vec<(u32, u32)> = t.iter().map(|t| (t.w_id, t.d_id)).collect();
        pairs.sort_unstable();
        pairs.dedup();
        assert_eq!(pairs.len(), 20);
    }

    fn driver(warehouses: u32) -> TpccDriver {
        TpccDriver {
            warehouses,
            mix: TpccMix::default(),
            c: NurandC::run(100, &mut rng(5)),
            terminal: Terminal::nth(1, warehouses),
        }
    }

    #[test]
    fn new_orders_roll_back_1_percent_and_go_remote_1_percent_of_lines() {
        let d = driver(3);
        let r = &mut rng(7);
        let (mut rollbacks, mut lines, mut remote) = (0u32, 0u32, 0u32);
        let n = 50_000;
        for _ in 0..n {
            let o = d.new_order(r);
            assert_eq!(o.w_id, 2);
            assert!((1..=10).contains(&o.d_id) && (1..=3000).contains(&o.c_id));
            assert!((5..=15).contains(&o.lines.len()));
            for (i, l) in o.lines.iter().enumerate() {
                let last_bad = o.rollback && i == o.lines.len() - 1;
                assert_eq!((1..=ITEMS).contains(&l.i_id), !last_bad, "{o:?}");
                assert!((1..=10).contains(&l.quantity) && (1..=3).contains(&l.supply_w_id));
                lines += 1;
                remote += u32::from(l.supply_w_id != o.w_id);
            }
            rollbacks += u32::from(o.rollback);
            let sorted = o.lock_order();
            assert!(
                sorted
                    .windows(2)
                    .all(|p| (p[0].supply_w_id, p[0].i_id) <= (p[1].supply_w_id, p[1].i_id))
            );
        }
        let rb = f64::from(rollbacks) / f64::from(n);
        let rm = f64::from(remote) / f64::from(lines);
        assert!((0.008..0.012).contains(&rb), "rollbacks {rb}");
        assert!((0.008..0.012).contains(&rm), "remote lines {rm}");
        // One warehouse: never remote.
        let d1 = driver(1);
        for _ in 0..5000 {
            assert!(d1.new_order(r).lines.iter().all(|l| l.supply_w_id == 1));
        }
    }

    #[test]
    fn payments_and_order_status_pick_customers_as_the_spec_says() {
        let d = driver(2);
        let r = &mut rng(11);
        let (mut by_name, mut remote) = (0u32, 0u32);
        let n = 50_000;
        for _ in 0..n {
            let p = d.payment(r);
            assert!((100..=500_000).contains(&p.amount_cents));
            if p.c_w_id != p.w_id {
                remote += 1;
            } else {
                assert_eq!(p.c_d_id, p.d_id);
            }
            match p.customer {
                CustomerRef::LastName(s) => {
                    by_name += 1;
                    assert!(s.len() >= 9 && s.len() <= 15, "{s}");
                }
                CustomerRef::Id(c) => assert!((1..=3000).contains(&c)),
            }
        }
        let share = |x: u32| f64::from(x) / f64::from(n);
        assert!((0.59..0.61).contains(&share(by_name)), "{by_name}");
        assert!((0.14..0.16).contains(&share(remote)), "{remote}");
        let os = (0..10_000)
            .filter(|_| matches!(d.order_status(r).customer, CustomerRef::LastName(_)))
            .count();
        assert!((5700..6300).contains(&os), "{os}");
        // Delivery and Stock-Level take the terminal's home.
        for _ in 0..2000 {
            match d.draw(r) {
                TpccTxn::Delivery(x) => assert!(x.w_id == 2 && (1..=10).contains(&x.carrier_id)),
                TpccTxn::StockLevel(x) => {
                    assert!(x.w_id == 2 && x.d_id == 1 && (10..=20).contains(&x.threshold))
                }
                _ => {}
            }
        }
    }

    fn lines(s: &str) -> Vec<Vec<&str>> {
        s.lines().map(|l| l.split('\t').collect()).collect()
    }

    #[test]
    fn rows_per_table_and_warehouse() {
        let data = TpccData::new(1, "2024-01-02 03:04:05");
        for (table, cols) in [
            ("bmsql_warehouse", 9),
            ("bmsql_district", 11),
            ("bmsql_customer", 21),
            ("bmsql_history", 9),
            ("bmsql_oorder", 8),
            ("bmsql_order_line", 10),
            ("bmsql_new_order", 3),
            ("bmsql_stock", 17),
        ] {
            let mut s = String::new();
            let n = data.warehouse_table_rows(table, 2, &mut s);
            let rows = lines(&s);
            assert_eq!(rows.len() as u64, n, "{table}");
            if let Some(e) = expected_rows(table, 1) {
                assert_eq!(n, e, "{table}");
            } else {
                assert!((300_000 - 40_000..300_000 + 40_000).contains(&n), "{n}");
            }
            assert!(rows.iter().all(|r| r.len() == cols), "{table}");
            // Column count matches the CREATE TABLE.
            assert_eq!(columns(table).split(", ").count(), cols, "{table}");
            assert!(rows.iter().all(|r| r[0] == "2" || table == "bmsql_history"));
        }
        let mut s = String::new();
        assert_eq!(data.item_rows(&mut s), 100_000);
        assert!(lines(&s).iter().all(|r| r.len() == 5));
        // The same seed gives the same rows, whichever warehouse is generated first.
        let (mut a, mut b) = (String::new(), String::new());
        TpccData::new(1, "2024-01-02 03:04:05").customer_rows(2, &mut a);
        data.customer_rows(2, &mut b);
        assert_eq!(a, b);
    }

    #[test]
    fn orders_and_lines_agree_and_deliveries_are_set_for_old_orders() {
        let data = TpccData::new(4, "2024-01-02 03:04:05");
        let (mut o, mut ol) = (String::new(), String::new());
        data.oorder_rows(1, &mut o);
        data.order_line_rows(1, &mut ol);
        let orders = lines(&o);
        let ol_rows = lines(&ol);
        let sum: usize = orders.iter().map(|r| r[5].parse::<usize>().unwrap()).sum();
        assert_eq!(sum, ol_rows.len());
        // A permutation of customers per district.
        let mut cids: Vec<u32> = orders[..3000]
            .iter()
            .map(|r| r[3].parse().unwrap())
            .collect();
        cids.sort_unstable();
        assert_eq!(cids, (1..=3000).collect::<Vec<_>>());
        for r in &orders {
            let id: u32 = r[2].parse().unwrap();
            assert_eq!(r[4] == "\\N", id >= FIRST_NEW_ORDER);
        }
        for r in &ol_rows {
            let id: u32 = r[2].parse().unwrap();
            if id < FIRST_NEW_ORDER {
                assert_eq!((r[5], r[6]), ("2024-01-02 03:04:05", "0.00"));
            } else {
                assert_eq!(r[5], "\\N");
                let amt: f64 = r[6].parse().unwrap();
                assert!((0.01..=9999.99).contains(&amt));
            }
            assert_eq!(r[9].len(), 24);
        }
    }

    #[test]
    fn original_in_a_tenth_of_item_and_stock_data() {
        let data = TpccData::new(8, "2024-01-02 03:04:05");
        let (mut items, mut stock) = (String::new(), String::new());
        data.item_rows(&mut items);
        data.stock_rows(1, &mut stock);
        for (s, col) in [(&items, 3), (&stock, 6)] {
            let rows = lines(s);
            let orig = rows.iter().filter(|r| r[col].contains("ORIGINAL")).count();
            let share = orig as f64 / rows.len() as f64;
            assert!((0.09..0.11).contains(&share), "{share}");
            assert!(rows.iter().all(|r| (26..=50).contains(&r[col].len())));
        }
        let rows = lines(&items);
        for r in &rows {
            let price: f64 = r[2].parse().unwrap();
            assert!((1.0..=100.0).contains(&price));
            assert!(
                (14..=24).contains(&r[1].len()) && r[1].bytes().all(|b| b.is_ascii_alphanumeric())
            );
        }
    }

    #[test]
    fn customers_follow_4_3_3() {
        let data = TpccData::new(2, "2024-01-02 03:04:05");
        let mut s = String::new();
        data.customer_rows(1, &mut s);
        let rows = lines(&s);
        let bc = rows.iter().filter(|r| r[4] == "BC").count();
        assert!((2500..3500).contains(&bc), "{bc}");
        // c_id 1..1000 take the syllables of c_id - 1.
        assert_eq!(rows[0][5], "BARBARBAR");
        assert_eq!(rows[371][5], "PRICALLYOUGHT");
        for r in &rows {
            assert_eq!(
                (r[7], r[8], r[9], r[10], r[11], r[19]),
                ("50000.00", "-10.00", "10.00", "1", "0", "OE")
            );
            assert!((300..=500).contains(&r[20].len()));
            assert_eq!(r[16].len(), 9);
            assert!(r[16].ends_with("11111") && r[17].bytes().all(|b| b.is_ascii_digit()));
            let disc: f64 = r[3].parse().unwrap();
            assert!((0.0..=0.5).contains(&disc));
        }
        // Names beyond 1000 are NURand with the load constant: some names repeat often.
        let mut names: Vec<&str> = rows[1000..3000].iter().map(|r| r[5]).collect();
        names.sort_unstable();
        names.dedup();
        assert!(names.len() < 1000, "{}", names.len());
    }

    #[test]
    fn schema_has_benchmarksqls_fillfactors_and_override() {
        let t = create_tables_sql(None);
        assert_eq!(t.len(), 12);
        let find = |v: &[String], name: &str| {
            v.iter()
                .find(|s| s.starts_with(&format!("create table {name} ")))
                .cloned()
                .unwrap()
        };
        assert!(find(&t, "bmsql_stock").ends_with("with (fillfactor=95)"));
        assert!(find(&t, "bmsql_order_line").ends_with("with (fillfactor=80)"));
        assert!(!find(&t, "bmsql_item").contains("fillfactor"));
        let o = create_tables_sql(Some(70));
        assert!(find(&o, "bmsql_item").ends_with("with (fillfactor=70)"));
        assert!(!find(&o, "bmsql_config").contains("fillfactor"));
        assert_eq!(index_sql().len(), 10);
        assert_eq!(expected_rows("bmsql_new_order", 2), Some(18_000));
        let mut s = String::new();
        push_decimal(&mut s, -1000, 2);
        push_decimal(&mut s, 5, 4);
        assert_eq!(s, "-10.000.0005");
    }
}
