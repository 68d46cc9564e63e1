//! BenchmarkSQL-compatible TPC-C: the loader (COPY text over several
//! connections, one warehouse per transaction), the keys and foreign keys of
//! BenchmarkSQL's build, the five transactions as PL/pgSQL functions (one
//! round trip each) run by the shared runner, consistency checks, and
//! cleanup of BenchmarkSQL's objects only.
//!
//! Resuming a load: every warehouse is loaded in one transaction, so a load
//! cut short leaves whole warehouses. [`TpccLoadState`] reads how far a load
//! got; [`prepare`] with a warehouse range loads, into those tables, the
//! warehouses of the range that are missing (and the item table if it is
//! empty), then builds only the keys, foreign keys and history id not yet
//! built — a resume works from any point of the load. With `force`
//! instead, everything is dropped and loaded again. Run and check refuse a
//! load that is not complete.
//!
//! Files: this one (spec, cleanup, state, config, check), `load` (the load
//! and its build) and `procs` (the transactions and their workload).

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use csdchar_core::tpcc::{
    self, CONSISTENCY, CustomerRef, FOREIGN_KEYS, HISTORY_SEQUENCE, NurandC, TpccData, TpccDriver,
    TpccKind, TpccMix, TpccTxn, WAREHOUSE_TABLES,
};
use futures_util::SinkExt;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use tokio_postgres::Client;

mod load;
mod procs;
mod statements;

pub use load::{prepare, prepare_with};
pub use procs::{call_sql, functions_sql, workload};
pub use statements::{STATEMENT_ABANDON, STATEMENTS, statement_workload};

use crate::catalog::{drop_tables, ensure_schema, existing_tables};
use crate::conn::{DbError, connect, db_err};
use crate::dialect::Dialect;
use crate::runner::{Event, EventSource, Protocol, StatementSet, Workload};
use crate::wire::Param;

/// What to load and run.
#[derive(Debug, Clone)]
pub struct TpccSpec {
    /// Warehouses (BenchmarkSQL's `warehouses`).
    pub warehouses: u32,
    /// One fillfactor for every table; None: BenchmarkSQL 5.x's per-table ones.
    pub fillfactor: Option<u8>,
    /// The transaction mix.
    pub mix: TpccMix,
    /// Seed of the data and of the terminals' random streams.
    pub seed: u64,
    /// Schema the objects live in (the connections' search_path).
    pub schema: String,
    /// How the transaction calls travel.
    pub protocol: Protocol,
    /// Statements as BenchmarkSQL sends them, or one function call per transaction.
    pub mode: TpccMode,
    /// How rows reach the server at prepare.
    pub load_method: LoadMethod,
    /// The NURand constants the tables were loaded with (`bmsql_config`, see
    /// [`read_config`]); the run's C_LAST constant keeps clause 2.1.6.1's
    /// distance from them. None: those a load with `seed` uses.
    pub c_load: Option<NurandC>,
}

/// How a run sends its transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TpccMode {
    /// BenchmarkSQL 5.0's statements from the client, one round trip each
    /// (`statements`): tpmC comparable with BenchmarkSQL's; needs no
    /// object of csdchar's.
    #[default]
    Statements,
    /// One PL/pgSQL function call per transaction (`procedures`, HammerDB's
    /// way on PostgreSQL): the functions csdchar creates at prepare.
    Procedures,
}

impl TpccMode {
    /// The name results record: `statements` or `procedures`.
    pub fn name(self) -> &'static str {
        match self {
            TpccMode::Statements => "statements",
            TpccMode::Procedures => "procedures",
        }
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
            Some(d) if d.code().code() == "42501" => DbError(format!(
                "--tpcc-mode procedures needs BenchmarkSQL's transactions as functions in schema {schema}, \
                 and this user may not create them ({}): create them as a user who may (`csdchar db prepare` \
                 creates them), or run with --tpcc-mode statements, which needs none",
                d.message()
            )),
            _ => db_err("creating the transaction functions", e),
        })
}

/// The run workload of `spec`'s mode.
pub fn run_workload(spec: &TpccSpec) -> Workload {
    match spec.mode {
        TpccMode::Statements => statement_workload(spec),
        TpccMode::Procedures => workload(spec),
    }
}

/// How prepare sends rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LoadMethod {
    /// COPY text, one transaction per warehouse, over `jobs` connections.
    #[default]
    Copy,
    /// BenchmarkSQL 5.0's JDBC batch path, for comparison: one connection,
    /// single-row INSERTs sent [`INSERT_BATCH`] at a time in one round trip,
    /// committed every [`INSERT_COMMIT_ROWS`] rows.
    InsertBatch,
}

/// INSERT statements per round trip of [`LoadMethod::InsertBatch`].
pub const INSERT_BATCH: usize = 1_000;
/// Rows per commit of [`LoadMethod::InsertBatch`] (BenchmarkSQL 5.0's).
pub const INSERT_COMMIT_ROWS: usize = 10_000;

/// Seconds per load step, and what was loaded.
#[derive(Debug, Clone, Default)]
pub struct TpccLoadTimes {
    /// Dropping (with `force`), creating tables and functions.
    pub create_s: f64,
    /// COPY of item and warehouses.
    pub load_s: f64,
    /// Primary keys, the two indexes, foreign keys, history id.
    pub keys_s: f64,
    /// VACUUM ANALYZE.
    pub vacuum_s: f64,
    /// Rows loaded.
    pub rows: u64,
    /// Warehouses loaded by this call.
    pub warehouses_loaded: Vec<u32>,
    /// Whether this call loaded the item table (and `bmsql_config`).
    pub item_loaded: bool,
    /// Whether a resume wrote an unusable `bmsql_config` anew (the
    /// warehouses from the tables, the NURand constants of the seed).
    pub config_rewritten: bool,
}

/// What `bmsql_config` says about a loaded database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpccConfig {
    /// `warehouses`.
    pub warehouses: u32,
    /// `nURandCLast`, `nURandCC_ID`, `nURandCI_ID`.
    pub constants: NurandC,
}

/// One consistency condition's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutcome {
    /// Short name (`condition-1` …).
    pub name: &'static str,
    /// The condition.
    pub description: &'static str,
    /// Warehouses or districts violating it (0: it holds).
    pub violations: i64,
}

/// The SQLSTATE New-Order raises for its unused item: the server rolls the
/// transaction back and the runner counts it as an intended rollback.
pub const NEW_ORDER_ROLLBACK: &str = "CSD01";

/// Retried SQLSTATEs: serialization failure, deadlock.
pub const TPCC_RETRY: &[&str] = &["40001", "40P01"];

/// The functions created at prepare, one per transaction, in [`TpccKind`] order.
pub const FUNCTIONS: [&str; 5] = [
    "bmsql_proc_new_order",
    "bmsql_proc_payment",
    "bmsql_proc_order_status",
    "bmsql_proc_delivery",
    "bmsql_proc_stock_level",
];

/// BenchmarkSQL's tables, for snapshots and cleanup.
pub fn table_names() -> Vec<String> {
    tpcc::TABLES.iter().map(|t| t.to_string()).collect()
}

/// `"name"` with embedded quotes doubled.
fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Connects with `schema` first in the search_path, so unqualified names
/// land where [`existing_tables`] looks.
/// The `application_name` of this process's load connections, so that an
/// interrupted prepare can cancel what they left running on the server.
fn loader_name() -> String {
    format!("csdchar-load-{}", std::process::id())
}

/// A load connection: in `schema`, named [`loader_name`].
async fn connect_loader(conninfo: &str, schema: &str) -> Result<Client, DbError> {
    let c = connect_in(conninfo, schema).await?;
    c.batch_execute(&format!("set application_name = '{}'", loader_name()))
        .await
        .map_err(|e| db_err("setting the application_name", e))?;
    Ok(c)
}

async fn connect_in(conninfo: &str, schema: &str) -> Result<Client, DbError> {
    let c = connect(conninfo).await?;
    c.batch_execute(&format!("set search_path to {}", quote_ident(schema)))
        .await
        .map_err(|e| db_err("setting the search_path", e))?;
    Ok(c)
}

/// Drops BenchmarkSQL's tables in `schema` (with their keys, the history
/// sequence, and the transaction functions) and nothing else; returns the tables dropped.
pub async fn cleanup(conninfo: &str, schema: &str) -> Result<Vec<String>, DbError> {
    let admin = connect(conninfo).await?;
    drop_functions(&admin, schema).await?;
    let s = quote_ident(schema);
    // Foreign keys first: drop_tables drops in name order, which they would block.
    let mut sql = String::new();
    for (table, name, _) in FOREIGN_KEYS {
        sql.push_str(&format!(
            "alter table if exists {s}.{table} drop constraint if exists {name};"
        ));
    }
    // The sequence goes with the table it is owned by; if creation stopped
    // before that, it is dropped here (after the default that uses it).
    sql.push_str(&format!(
        "alter table if exists {s}.bmsql_history alter column hist_id drop default;\
         drop sequence if exists {s}.{HISTORY_SEQUENCE};"
    ));
    admin
        .batch_execute(&sql)
        .await
        .map_err(|e| db_err("dropping foreign keys", e))?;
    drop_tables(conninfo, schema, &table_names()).await
}

async fn drop_functions(client: &Client, schema: &str) -> Result<(), DbError> {
    let names: Vec<String> = FUNCTIONS.iter().map(|f| f.to_string()).collect();
    let rows = client
        .query(
            "SELECT p.proname::text, pg_get_function_identity_arguments(p.oid) FROM pg_proc p \
             JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = ANY($2)",
            &[&schema, &names],
        )
        .await
        .map_err(|e| db_err("listing functions", e))?;
    for r in rows {
        let (name, args): (String, String) = (r.get(0), r.get(1));
        client
            .batch_execute(&format!(
                "drop function {}.{name}({args})",
                quote_ident(schema)
            ))
            .await
            .map_err(|e| db_err(&format!("dropping {name}"), e))?;
    }
    Ok(())
}

/// Warehouses in the tables (rows of `bmsql_warehouse`), as `run` takes W.
pub async fn warehouses_in(client: &Client, schema: &str) -> Result<u32, DbError> {
    let row = client
        .query_one(
            &format!(
                "select count(*) from {}.bmsql_warehouse",
                quote_ident(schema)
            ),
            &[],
        )
        .await
        .map_err(|e| db_err("counting warehouses", e))?;
    Ok(row.get::<_, i64>(0) as u32)
}

/// How far a TPC-C load got, read from the server: the one view of a load
/// that prepare's resume, run's refusal and check's verdict share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TpccLoadState {
    /// BenchmarkSQL's tables present in the schema.
    pub tables: usize,
    /// Warehouses committed (each loads in one transaction).
    pub warehouses: BTreeSet<u32>,
    /// Whether `bmsql_item` holds its rows.
    pub item_loaded: bool,
    /// The warehouses `bmsql_config` records, if it holds a valid count.
    pub config_warehouses: Option<u32>,
    /// Why `bmsql_config` cannot serve a run (the table missing, a key
    /// missing or holding a bad value, named with it); None when it can.
    pub config_problem: Option<String>,
    /// Keys and indexes built, by name, of [`tpcc::INDEXES`].
    pub indexes: BTreeSet<String>,
    /// Foreign keys built, by name, of [`FOREIGN_KEYS`].
    pub foreign_keys: BTreeSet<String>,
    /// Whether the history id's key, the build's last step, is there.
    pub history_key: bool,
}

impl TpccLoadState {
    /// Reads the state of the load in `schema`.
    pub async fn read(client: &Client, schema: &str) -> Result<TpccLoadState, DbError> {
        let names = table_names();
        let found = existing_tables(client, schema, &names).await?;
        let tables = found.len();
        // bmsql_config alone missing: the data is read all the same, so what
        // is said about the load (and advised) is about the data.
        let config_missing =
            tables + 1 == names.len() && !found.iter().any(|t| t == "bmsql_config");
        let q = quote_ident(schema);
        let mut state = TpccLoadState {
            tables,
            warehouses: BTreeSet::new(),
            item_loaded: false,
            config_warehouses: None,
            config_problem: None,
            indexes: BTreeSet::new(),
            foreign_keys: BTreeSet::new(),
            history_key: false,
        };
        if tables < names.len() && !config_missing {
            return Ok(state);
        }
        state.warehouses = client
            .query(&format!("select w_id from {q}.bmsql_warehouse"), &[])
            .await
            .map_err(|e| db_err("listing loaded warehouses", e))?
            .iter()
            .map(|r| r.get::<_, i32>(0) as u32)
            .collect();
        state.item_loaded = client
            .query_opt(&format!("select 1 from {q}.bmsql_item limit 1"), &[])
            .await
            .map_err(|e| db_err("looking at bmsql_item", e))?
            .is_some();
        if config_missing {
            state.config_problem = Some("the table bmsql_config is missing".into());
        } else {
            let rows = config_rows(client, schema).await?;
            state.config_warehouses =
                config_value(&rows, "warehouses", 1..=u32::MAX, CONFIG_WAREHOUSES).ok();
            state.config_problem = parse_config(&rows).err();
        }
        let index_names: Vec<String> = tpcc::INDEXES
            .iter()
            .map(|(n, _)| n.to_string())
            .chain(std::iter::once(tpcc::HISTORY_KEY.to_string()))
            .collect();
        let built: Vec<String> = client
            .query(
                "select c.relname::text from pg_class c join pg_namespace n on n.oid = c.relnamespace \
                 where n.nspname = $1 and c.relkind = 'i' and c.relname = any($2)",
                &[&schema, &index_names],
            )
            .await
            .map_err(|e| db_err("looking for keys", e))?
            .iter()
            .map(|r| r.get(0))
            .collect();
        state.indexes = built
            .iter()
            .filter(|b| b.as_str() != tpcc::HISTORY_KEY)
            .cloned()
            .collect();
        state.history_key = built.iter().any(|b| b == tpcc::HISTORY_KEY);
        let fk_names: Vec<String> = FOREIGN_KEYS.iter().map(|f| f.1.to_string()).collect();
        state.foreign_keys = client
            .query(
                "select k.conname::text from pg_constraint k join pg_namespace n on n.oid = k.connamespace \
                 where n.nspname = $1 and k.contype = 'f' and k.conname = any($2)",
                &[&schema, &fk_names],
            )
            .await
            .map_err(|e| db_err("looking for foreign keys", e))?
            .iter()
            .map(|r| r.get(0))
            .collect();
        Ok(state)
    }

    /// The warehouses the load is for: `bmsql_config`'s count, else `intended`.
    fn intended(&self, intended: Option<u32>) -> Option<u32> {
        self.config_warehouses.or(intended)
    }

    /// The warehouses of 1..=N (N: [`Self::intended`]) not committed.
    pub fn missing_warehouses(&self, intended: Option<u32>) -> BTreeSet<u32> {
        let n = self.intended(intended).unwrap_or(0);
        (1..=n).filter(|w| !self.warehouses.contains(w)).collect()
    }

    /// Whether anything of the build after the load (keys, foreign keys,
    /// history id) is there: then no warehouse can be added.
    pub fn build_started(&self) -> bool {
        !self.indexes.is_empty() || !self.foreign_keys.is_empty() || self.history_key
    }

    /// What a run or a consistency check needs and the tables lack: the
    /// data and the keys (foreign keys and the history id's key, which a
    /// BenchmarkSQL build may skip, are not needed); empty when none.
    pub fn missing_to_run(&self) -> Vec<String> {
        self.gaps(None, false)
    }

    /// What keeps the load from being complete, in a few words each; empty
    /// when it is complete (VACUUM ANALYZE, which changes no data, aside).
    pub fn missing(&self, intended: Option<u32>) -> Vec<String> {
        self.gaps(intended, true)
    }

    /// The data and keys missing, and with `whole_build` the foreign keys
    /// and the history id's key too.
    fn gaps(&self, intended: Option<u32>, whole_build: bool) -> Vec<String> {
        let names = table_names();
        if self.tables == 0 {
            return vec!["BenchmarkSQL's tables".into()];
        }
        if self.tables < names.len() && self.config_problem.is_none() {
            return vec![format!(
                "{} of BenchmarkSQL's {} tables",
                names.len() - self.tables,
                names.len()
            )];
        }
        let mut out = Vec::new();
        if !self.item_loaded {
            out.push("the item table".into());
        }
        if let Some(p) = &self.config_problem {
            out.push(p.clone());
        }
        let missing = self.missing_warehouses(intended);
        if !missing.is_empty() {
            out.push(format!("warehouses {}", ranges(&missing)));
        } else if self.intended(intended).is_none() && self.warehouses.is_empty() {
            out.push("every warehouse".into());
        }
        if self.indexes.len() < tpcc::INDEXES.len() {
            out.push(format!(
                "keys ({} of {} built)",
                self.indexes.len(),
                tpcc::INDEXES.len()
            ));
        }
        if !whole_build {
            return out;
        }
        if self.foreign_keys.len() < FOREIGN_KEYS.len() {
            out.push(format!(
                "foreign keys ({} of {} built)",
                self.foreign_keys.len(),
                FOREIGN_KEYS.len()
            ));
        }
        if !self.history_key {
            out.push("the history id's key".into());
        }
        out
    }

    /// One line: what is complete, what is missing, and the prepare options
    /// that finish the load from here (`intended`: the warehouses of the
    /// load when `bmsql_config` does not say; `seed`: the first load's, when known).
    pub fn describe(&self, intended: Option<u32>, seed: Option<u64>) -> String {
        let missing = self.missing(intended);
        if missing.is_empty() {
            return format!(
                "the load is complete (warehouses {})",
                ranges(&self.warehouses)
            );
        }
        let seed = seed.map_or("the first load's --seed".to_string(), |s| {
            format!("--seed {s}")
        });
        // Only bmsql_config is wrong: the rows are all there, and starting
        // over (--force) would drop a complete load to mend four values.
        if let Some(problem) = &self.config_problem
            && missing.len() == 1
            && self.item_loaded
        {
            let n = self.warehouses.len();
            return format!(
                "the data is complete (warehouses {}, items{}), but {problem}: mend it with \
                 `csdchar db prepare --workload tpcc --warehouses {n} --warehouse-range 1-{n}` and {seed} \
                 (loads nothing, rewrites bmsql_config from the tables and the seed's NURand constants), \
                 or restore its rows (warehouses = {n}, nURandCLast, nURandCC_ID, nURandCI_ID) as the load wrote them",
                ranges(&self.warehouses),
                if self.indexes.len() == tpcc::INDEXES.len() {
                    ", keys"
                } else {
                    ""
                }
            );
        }
        let resume = match self.intended(intended) {
            _ if self.tables < table_names().len() && self.config_problem.is_none() => {
                "run prepare again with --force to start over".to_string()
            }
            Some(n) => format!(
                "finish it with `csdchar db prepare --workload tpcc --warehouses {n} --warehouse-range 1-{n}` and {seed} \
                 (loads only what is missing, then builds what is not built), or start over with --force"
            ),
            None => format!(
                "finish it with `csdchar db prepare --workload tpcc --warehouses N --warehouse-range 1-N` (N: the \
                 warehouses of the first load) and {seed}, or start over with --force"
            ),
        };
        format!(
            "the load is incomplete: warehouses complete: {}; missing: {}; {resume}",
            ranges(&self.warehouses),
            missing.join(", ")
        )
    }
}

/// After a prepare stopped: cancels what the load's connections left
/// running on the server, then [`TpccLoadState::describe`]s what the load
/// left; None when the server cannot tell within a few seconds.
pub async fn describe_stopped_load(
    conninfo: &str,
    spec: &TpccSpec,
    warehouse_range: Option<(u32, u32)>,
) -> Option<String> {
    let read = async {
        let client = connect(conninfo).await.ok()?;
        // The load's connections closed, but a statement the server is busy
        // with (a key being built, a VACUUM) runs on until it checks on its
        // client: cancel them, so nothing is left running and their locks go.
        let busy_sql = "select count(*) from pg_stat_activity where application_name = $1 \
                      and pid <> pg_backend_pid() and (state <> 'idle' or backend_xid is not null)";
        let name = loader_name();
        for _ in 0..40 {
            let busy: i64 = client.query_one(busy_sql, &[&name]).await.ok()?.get(0);
            if busy == 0 {
                break;
            }
            let _ = client
                .execute(
                    "select pg_cancel_backend(pid) from pg_stat_activity where application_name = $1 \
                     and pid <> pg_backend_pid()",
                    &[&name],
                )
                .await;
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        client
            .batch_execute("set lock_timeout = '2s'; set statement_timeout = '4s'")
            .await
            .ok()?;
        TpccLoadState::read(&client, &spec.schema).await.ok()
    };
    let state = tokio::time::timeout(std::time::Duration::from_secs(6), read)
        .await
        .ok()??;
    let intended = warehouse_range.map_or(spec.warehouses, |(_, to)| to);
    Some(state.describe(Some(intended), Some(spec.seed)))
}

/// Reads `bmsql_config` (BenchmarkSQL will not run without it either); a
/// key missing or holding a bad value is an error naming both.
pub async fn read_config(client: &Client, schema: &str) -> Result<TpccConfig, DbError> {
    parse_config(&config_rows(client, schema).await?).map_err(DbError)
}

/// `bmsql_config`'s rows, name and value (NULL: None).
async fn config_rows(
    client: &Client,
    schema: &str,
) -> Result<Vec<(String, Option<String>)>, DbError> {
    Ok(client
        .query(
            &format!(
                "select cfg_name::text, cfg_value::text from {}.bmsql_config",
                quote_ident(schema)
            ),
            &[],
        )
        .await
        .map_err(|e| db_err("reading bmsql_config", e))?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect())
}

/// One value of `bmsql_config`: `key`'s, an integer in `range` (`what` it
/// is, for the message naming the key and what it holds instead).
fn config_value(
    rows: &[(String, Option<String>)],
    key: &str,
    range: std::ops::RangeInclusive<u32>,
    what: &str,
) -> Result<u32, String> {
    let Some((_, value)) = rows.iter().find(|(k, _)| k == key) else {
        return Err(format!("bmsql_config has no {key} row ({what})"));
    };
    let Some(value) = value else {
        return Err(format!("bmsql_config's {key} is NULL, not {what}"));
    };
    match value.trim().parse::<u32>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(format!(
            "bmsql_config's {key} is '{}', not {what}",
            value.escape_debug()
        )),
    }
}

/// The load's warehouses and NURand constants from `bmsql_config`'s rows,
/// or the first key missing or bad, named with its value.
fn parse_config(rows: &[(String, Option<String>)]) -> Result<TpccConfig, String> {
    Ok(TpccConfig {
        warehouses: config_value(rows, "warehouses", 1..=u32::MAX, CONFIG_WAREHOUSES)?,
        constants: NurandC {
            c_last: config_value(
                rows,
                "nURandCLast",
                0..=255,
                "a NURand C for C_LAST (0-255)",
            )?,
            c_id: config_value(
                rows,
                "nURandCC_ID",
                0..=1023,
                "a NURand C for C_ID (0-1023)",
            )?,
            ol_i_id: config_value(
                rows,
                "nURandCI_ID",
                0..=8191,
                "a NURand C for OL_I_ID (0-8191)",
            )?,
        },
    })
}

/// What `bmsql_config`'s warehouses must be.
const CONFIG_WAREHOUSES: &str = "a warehouse count (1 or more)";

/// Runs consistency conditions 1–4 (TPC-C 3.3.2.1–3.3.2.4).
pub async fn check(conninfo: &str, schema: &str) -> Result<Vec<CheckOutcome>, DbError> {
    let client = connect_in(conninfo, schema).await?;
    let mut out = Vec::new();
    for c in CONSISTENCY {
        let row = client
            .query_one(c.sql, &[])
            .await
            .map_err(|e| db_err(&format!("consistency {}", c.name), e))?;
        out.push(CheckOutcome {
            name: c.name,
            description: c.description,
            violations: row.get(0),
        });
    }
    Ok(out)
}

/// Which load unit a connection works on.
#[derive(Debug, Clone, Copy)]
enum Job {
    /// `bmsql_config` and `bmsql_item` (BenchmarkSQL's job 0).
    Item,
    /// One warehouse's rows in all its tables.
    Warehouse(u32),
}

/// "1-3, 5" for {1, 2, 3, 5}; "none" when empty.
fn ranges(set: &BTreeSet<u32>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut it = set.iter().copied().peekable();
    while let Some(a) = it.next() {
        let mut b = a;
        while it.peek() == Some(&(b + 1)) {
            b = it.next().expect("peeked");
        }
        out.push(if a == b {
            a.to_string()
        } else {
            format!("{a}-{b}")
        });
    }
    if out.is_empty() {
        "none".into()
    } else {
        out.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::load::push_literal;
    use super::*;

    #[test]
    fn ranges_are_compact() {
        let s: BTreeSet<u32> = [1, 2, 3, 5, 7, 8].into_iter().collect();
        assert_eq!(ranges(&s), "1-3, 5, 7-8");
        assert_eq!(ranges(&BTreeSet::new()), "none");
    }

    #[test]
    fn every_kind_has_a_function_and_a_call() {
        let f = functions_sql();
        for (k, name) in TpccKind::ALL.iter().zip(FUNCTIONS) {
            assert!(call_sql(*k).contains(name));
            assert!(f[*k as usize].contains(&format!("function {name}(")));
        }
        assert!(f[0].contains("errcode = 'CSD01'") && f[0].contains("> 100000"));
        let mut lit = String::new();
        for field in ["\\N", "O'Brien", "a\\\\b\\tc", "12.50"] {
            push_literal(field, &mut lit);
            lit.push(',');
        }
        assert_eq!(lit, "NULL,'O''Brien','a\\b\tc','12.50',");
        let w = workload(&TpccSpec {
            warehouses: 2,
            fillfactor: None,
            mix: TpccMix::default(),
            seed: 1,
            schema: "public".into(),
            protocol: Protocol::Prepared,
            mode: TpccMode::Procedures,
            c_load: None,
            load_method: Default::default(),
        });
        assert_eq!(
            w.kinds,
            [
                "new_order",
                "payment",
                "order_status",
                "delivery",
                "stock_level"
            ]
        );
        assert_eq!(w.rollback_codes, [NEW_ORDER_ROLLBACK]);
    }
}
