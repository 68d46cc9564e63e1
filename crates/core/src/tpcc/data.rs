//! The initial population of clause 4.3.3, as PostgreSQL COPY text per table and
//! warehouse, in BenchmarkSQL's order.

use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::random::{
    NurandC, nurand, push_alnum, push_astring, push_data_with_original, push_decimal,
    push_last_name, push_nstring, push_state, push_u64, push_zip, tab, u, uniform,
};
use super::schema::{
    CUSTOMERS_PER_DISTRICT, DISTRICTS, FIRST_NEW_ORDER, ITEMS, MAX_ORDER_LINES, MIN_ORDER_LINES,
    ORDERS_PER_DISTRICT, STOCK_PER_WAREHOUSE,
};

// ---------------------------------------------------------------------------
// Initial population (clause 4.3.3, BenchmarkSQL's LoadDataWorker)

/// Stream ids, so every table of every warehouse has its own random stream
/// and a warehouse's rows do not depend on which connection loads it.
#[derive(Clone, Copy)]
pub(super) enum Stream {
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
