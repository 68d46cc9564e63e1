//! BenchmarkSQL 5.x's nine `bmsql_` tables: cardinalities (TPC-C clause 4.3.3), columns,
//! fillfactors, keys, foreign keys, the history id, the rows a load leaves, and consistency
//! conditions 1–4 of clause 3.3.2.

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
