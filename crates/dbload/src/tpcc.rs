//! BenchmarkSQL-compatible TPC-C: the loader (COPY text over several
//! connections, one warehouse per transaction), the keys and foreign keys of
//! BenchmarkSQL's build, the five transactions as PL/pgSQL functions (one
//! round trip each) run by the shared runner, consistency checks, and
//! cleanup of BenchmarkSQL's objects only.
//!
//! Resuming a load: every warehouse is loaded in one transaction, so a load
//! cut short leaves whole warehouses and no keys. [`prepare`] with a
//! warehouse range loads, into those tables, the warehouses of the range
//! that are missing (and the item table if it is empty), then builds the
//! keys. With `force` instead, everything is dropped and loaded again.

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
    /// How rows reach the server at prepare.
    pub load_method: LoadMethod,
    /// The NURand constants the tables were loaded with (`bmsql_config`, see
    /// [`read_config`]); the run's C_LAST constant keeps clause 2.1.6.1's
    /// distance from them. None: those a load with `seed` uses.
    pub c_load: Option<NurandC>,
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
        let tables = existing_tables(client, schema, &names).await?.len();
        let q = quote_ident(schema);
        let mut state = TpccLoadState {
            tables,
            warehouses: BTreeSet::new(),
            item_loaded: false,
            config_warehouses: None,
            indexes: BTreeSet::new(),
            foreign_keys: BTreeSet::new(),
            history_key: false,
        };
        if tables < names.len() {
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
        state.config_warehouses = read_config(client, schema).await.ok().map(|c| c.warehouses);
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
        if self.tables < names.len() {
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
        if self.config_warehouses.is_none() {
            out.push("bmsql_config's warehouse count".into());
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
        let resume = match self.intended(intended) {
            _ if self.tables < table_names().len() => {
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

/// Reads `bmsql_config` (BenchmarkSQL will not run without it either).
pub async fn read_config(client: &Client, schema: &str) -> Result<TpccConfig, DbError> {
    let rows = client
        .query(
            &format!(
                "select cfg_name::text, cfg_value::text from {}.bmsql_config",
                quote_ident(schema)
            ),
            &[],
        )
        .await
        .map_err(|e| db_err("reading bmsql_config", e))?;
    let get = |k: &str| -> Result<u32, DbError> {
        rows.iter()
            .find(|r| r.get::<_, String>(0) == k)
            .and_then(|r| r.get::<_, String>(1).trim().parse().ok())
            .ok_or_else(|| {
                DbError(format!(
                    "bmsql_config has no valid {k} (was the load completed?)"
                ))
            })
    };
    Ok(TpccConfig {
        warehouses: get("warehouses")?,
        constants: NurandC {
            c_last: get("nURandCLast")?,
            c_id: get("nURandCC_ID")?,
            ol_i_id: get("nURandCI_ID")?,
        },
    })
}

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

/// Creates the tables and functions and loads `spec.warehouses` warehouses
/// over `jobs` connections, then builds BenchmarkSQL's keys, foreign keys
/// and history id, and runs VACUUM ANALYZE. `progress(rows)` is called as
/// tables are copied. Refuses existing tables unless `force`.
///
/// `warehouse_range = Some((from, to))` resumes a load that stopped: the
/// tables must exist without keys (as a failed load leaves them); the
/// warehouses of the range not yet present are loaded (and the item table
/// if it is empty), then the keys are built. It needs the seed of the first load.
///
/// Probes the server's dialect first; [`prepare_with`] takes one already probed.
pub async fn prepare(
    conninfo: &str,
    spec: &TpccSpec,
    jobs: u32,
    force: bool,
    progress: Arc<dyn Fn(u64) + Send + Sync>,
    warehouse_range: Option<(u32, u32)>,
) -> Result<TpccLoadTimes, DbError> {
    let dialect = Dialect::probe_conninfo(conninfo).await?;
    prepare_with(
        conninfo,
        spec,
        &dialect,
        jobs,
        force,
        progress,
        warehouse_range,
    )
    .await
}

/// [`prepare`] on a server of `dialect`: refused, before anything is
/// written, where the dialect cannot load ([`Dialect::check_loadable`]).
pub async fn prepare_with(
    conninfo: &str,
    spec: &TpccSpec,
    dialect: &Dialect,
    jobs: u32,
    force: bool,
    progress: Arc<dyn Fn(u64) + Send + Sync>,
    warehouse_range: Option<(u32, u32)>,
) -> Result<TpccLoadTimes, DbError> {
    dialect.check_loadable()?;
    let mut times = TpccLoadTimes::default();
    let mut t0 = std::time::Instant::now();
    let mut lap = move || {
        let now = std::time::Instant::now();
        let s = now.duration_since(t0).as_secs_f64();
        t0 = now;
        s
    };
    let schema = spec.schema.as_str();
    let admin = connect(conninfo).await?;
    let names = table_names();
    let found = existing_tables(&admin, schema, &names).await?;
    ensure_schema(&admin, schema).await?;
    admin
        .batch_execute(&format!("set search_path to {}", quote_ident(schema)))
        .await
        .map_err(|e| db_err("setting the search_path", e))?;
    // The load's "now" (c_since, o_entry_d, …), from the server's clock.
    let now: String = admin
        .query_one("select to_char(now(), 'YYYY-MM-DD HH24:MI:SS')", &[])
        .await
        .map_err(|e| db_err("reading the server's time", e))?
        .get(0);
    let data = Arc::new(TpccData::new(spec.seed, &now));
    let mut todo: Vec<Job> = Vec::new();
    let config_warehouses;
    match warehouse_range {
        None => {
            if spec.warehouses == 0 {
                return Err(DbError("warehouses must be 1 or more".into()));
            }
            if !found.is_empty() {
                if !force {
                    return Err(DbError(format!(
                        "tables exist already in schema {schema} ({}); run `csdchar db cleanup --workload tpcc` \
                         or pass --force (or load missing warehouses with a warehouse range)",
                        found.join(", ")
                    )));
                }
                cleanup(conninfo, schema).await?;
                ensure_schema(&admin, schema).await?;
            }
            admin
                .batch_execute(&tpcc::create_tables_sql(spec.fillfactor).join(";\n"))
                .await
                .map_err(|e| db_err("creating tables", e))?;
            todo.push(Job::Item);
            todo.extend((1..=spec.warehouses).map(Job::Warehouse));
            config_warehouses = spec.warehouses;
        }
        Some((from, to)) => {
            if from == 0 || from > to {
                return Err(DbError(format!(
                    "warehouse range {from}-{to}: needs 1 <= from <= to"
                )));
            }
            if force {
                return Err(DbError(
                    "--force starts the load over; a warehouse range resumes one: use one of them"
                        .into(),
                ));
            }
            if found.len() != names.len() {
                return Err(DbError(format!(
                    "a warehouse range resumes a load into existing tables, but schema {schema} has {} of \
                     BenchmarkSQL's {} tables; run prepare without a range",
                    found.len(),
                    names.len()
                )));
            }
            let state = TpccLoadState::read(&admin, schema).await?;
            let present = &state.warehouses;
            let to_load: Vec<u32> = (from..=to).filter(|w| !present.contains(w)).collect();
            // Keys are built only once every warehouse is in: past that
            // point a resume finishes the build, it adds no warehouse.
            if state.build_started() && !to_load.is_empty() {
                return Err(DbError(format!(
                    "the tables in schema {schema} have keys already, so warehouses {} cannot be added; \
                     use --force to load again",
                    ranges(&to_load.iter().copied().collect())
                )));
            }
            if state.item_loaded {
                let cfg = read_config(&admin, schema).await?;
                if cfg.constants != data.constants() {
                    return Err(DbError(format!(
                        "the tables were loaded with another seed (NURand constants {:?}, this seed's {:?}); \
                         resume with the seed of the first load",
                        cfg.constants,
                        data.constants()
                    )));
                }
            } else {
                todo.push(Job::Item);
            }
            todo.extend(to_load.into_iter().map(Job::Warehouse));
            config_warehouses = present.len() as u32 + todo.len() as u32
                - u32::from(todo.iter().any(|j| matches!(j, Job::Item)));
        }
    }
    admin
        .batch_execute(&functions_sql().join(";\n"))
        .await
        .map_err(|e| db_err("creating the transaction functions", e))?;
    times.create_s = lap();

    // Load: BenchmarkSQL's job queue (item, then warehouses), `jobs` connections.
    let queue = Arc::new(Mutex::new(todo.iter().copied().collect::<VecDeque<Job>>()));
    let done = Arc::new(Mutex::new(BTreeSet::<u32>::new()));
    let item_done = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let rows = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    // The INSERT path is the single-connection peer it is compared with.
    let jobs = match spec.load_method {
        LoadMethod::Copy => jobs,
        LoadMethod::InsertBatch => 1,
    };
    let method = spec.load_method;
    for _ in 0..(jobs.max(1) as usize).min(todo.len()) {
        let (conninfo, schema) = (conninfo.to_string(), schema.to_string());
        let (queue, done, item_done, stop, rows, progress, data) = (
            Arc::clone(&queue),
            Arc::clone(&done),
            Arc::clone(&item_done),
            Arc::clone(&stop),
            Arc::clone(&rows),
            Arc::clone(&progress),
            Arc::clone(&data),
        );
        tasks.push(tokio::spawn(async move {
            let client = connect_loader(&conninfo, &schema).await?;
            loop {
                if stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                let Some(job) = queue.lock().expect("not poisoned").pop_front() else {
                    return Ok(());
                };
                let r = load_job(
                    &client,
                    &data,
                    job,
                    config_warehouses,
                    method,
                    &rows,
                    &*progress,
                )
                .await;
                match (r, job) {
                    (Ok(()), Job::Item) => item_done.store(true, Ordering::Relaxed),
                    (Ok(()), Job::Warehouse(w)) => {
                        done.lock().expect("not poisoned").insert(w);
                    }
                    (Err(e), _) => {
                        stop.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                }
            }
        }));
    }
    let mut first_err: Option<DbError> = None;
    for t in tasks {
        let r = t
            .await
            .unwrap_or_else(|e| Err(DbError(format!("loader task failed: {e}"))));
        if let Err(e) = r {
            first_err.get_or_insert(e);
        }
    }
    let done = done.lock().expect("not poisoned").clone();
    times.rows = rows.load(Ordering::Relaxed);
    times.warehouses_loaded = done.iter().copied().collect();
    times.item_loaded = item_done.load(Ordering::Relaxed);
    if let Some(e) = first_err {
        let all: BTreeSet<u32> = match warehouse_range {
            None => (1..=spec.warehouses).collect(),
            Some((a, b)) => (a..=b).collect(),
        };
        let (lo, hi) = warehouse_range.unwrap_or((1, spec.warehouses));
        let present: BTreeSet<u32> =
            match admin.query("select w_id from bmsql_warehouse", &[]).await {
                Ok(r) => r.iter().map(|r| r.get::<_, i32>(0) as u32).collect(),
                Err(_) => done.clone(),
            };
        let missing: BTreeSet<u32> = all.difference(&present).copied().collect();
        return Err(DbError(format!(
            "{}; the load stopped: warehouses complete: {} (each is loaded in one transaction, so none is \
             partial), missing: {}; item table {}. To resume, run prepare again with the warehouse range \
             {lo}-{hi} and the same seed (only missing warehouses are loaded, then the keys are built), \
             or with --force to start over",
            e.0,
            ranges(&present),
            ranges(&missing),
            if times.item_loaded || !todo.iter().any(|j| matches!(j, Job::Item)) {
                "loaded"
            } else {
                "not loaded"
            },
        )));
    }
    times.load_s = lap();
    // The warehouses count BenchmarkSQL's run reads.
    admin
        .batch_execute(
            "update bmsql_config set cfg_value = (select count(*) from bmsql_warehouse)::text \
             where cfg_name = 'warehouses'",
        )
        .await
        .map_err(|e| db_err("updating bmsql_config", e))?;
    // BenchmarkSQL's build after the load: indexCreates, foreignKeys, extraHistID.
    let after = |step: &str, e: DbError| {
        DbError(format!(
            "{}; all warehouses are loaded but the step '{step}' failed: finish the load with prepare \
             --warehouses {n} --warehouse-range 1-{n} and the same --seed, or start over with --force",
            e.0,
            n = config_warehouses
        ))
    };
    // A resume builds only what an earlier prepare did not.
    let built = TpccLoadState::read(&admin, schema).await?;
    let mem = "set maintenance_work_mem = '512MB'";
    pool(
        conninfo,
        schema,
        jobs,
        mem,
        tpcc::INDEXES
            .iter()
            .filter(|(n, _)| !built.indexes.contains(*n))
            .map(|(_, sql)| sql.to_string())
            .collect(),
    )
    .await
    .map_err(|e| after("keys", e))?;
    pool(
        conninfo,
        schema,
        jobs,
        mem,
        FOREIGN_KEYS
            .iter()
            .filter(|f| !built.foreign_keys.contains(f.1))
            .map(|f| f.2.to_string())
            .collect(),
    )
    .await
    .map_err(|e| after("foreign keys", e))?;
    if !built.history_key {
        admin
            .batch_execute(&format!("{mem}; {}", tpcc::history_id_sql().join(";\n")))
            .await
            .map_err(|e| after("history id", db_err("history id", e)))?;
    }
    times.keys_s = lap();
    pool(
        conninfo,
        schema,
        jobs,
        "",
        names
            .iter()
            .map(|t| format!("vacuum analyze {t}"))
            .collect(),
    )
    .await
    .map_err(|e| after("vacuum", e))?;
    times.vacuum_s = lap();
    Ok(times)
}

/// Runs `statements` over up to `jobs` connections, each taking the next one.
async fn pool(
    conninfo: &str,
    schema: &str,
    jobs: u32,
    setup: &str,
    statements: Vec<String>,
) -> Result<(), DbError> {
    let n = (jobs.max(1) as usize).min(statements.len());
    let queue = Arc::new(Mutex::new(VecDeque::from(statements)));
    let mut tasks = Vec::new();
    for _ in 0..n {
        let (conninfo, schema, setup, queue) = (
            conninfo.to_string(),
            schema.to_string(),
            setup.to_string(),
            Arc::clone(&queue),
        );
        tasks.push(tokio::spawn(async move {
            let c = connect_loader(&conninfo, &schema).await?;
            if !setup.is_empty() {
                c.batch_execute(&setup)
                    .await
                    .map_err(|e| db_err(&setup, e))?;
            }
            loop {
                let Some(sql) = queue.lock().expect("not poisoned").pop_front() else {
                    return Ok::<(), DbError>(());
                };
                c.batch_execute(&sql).await.map_err(|e| db_err(&sql, e))?;
            }
        }));
    }
    let mut first = None;
    for t in tasks {
        if let Err(e) = t
            .await
            .unwrap_or_else(|e| Err(DbError(format!("task failed: {e}"))))
        {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}

/// Generates one table's rows off the async threads.
fn generate(
    data: &Arc<TpccData>,
    job: Job,
    table: &'static str,
    config_warehouses: u32,
) -> tokio::task::JoinHandle<(String, u64)> {
    let data = Arc::clone(data);
    tokio::task::spawn_blocking(move || {
        let mut s = String::with_capacity(1 << 20);
        let n = match job {
            Job::Item if table == "bmsql_config" => data.config_rows(config_warehouses, &mut s),
            Job::Item => data.item_rows(&mut s),
            Job::Warehouse(w) => data.warehouse_table_rows(table, w, &mut s),
        };
        (s, n)
    })
}

/// Loads one job in one transaction; the next table is generated while the
/// current one is copied.
async fn load_job(
    client: &Client,
    data: &Arc<TpccData>,
    job: Job,
    config_warehouses: u32,
    method: LoadMethod,
    rows: &AtomicU64,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<(), DbError> {
    let what = match job {
        Job::Item => "the item table".to_string(),
        Job::Warehouse(w) => format!("warehouse {w}"),
    };
    let tables: &[&'static str] = match job {
        Job::Item => &["bmsql_config", "bmsql_item"],
        Job::Warehouse(_) => &WAREHOUSE_TABLES,
    };
    client
        .batch_execute("BEGIN")
        .await
        .map_err(|e| db_err(&format!("loading {what}"), e))?;
    let mut next = Some(generate(data, job, tables[0], config_warehouses));
    for (i, &table) in tables.iter().enumerate() {
        let (text, n) = next
            .take()
            .expect("generated ahead")
            .await
            .map_err(|e| DbError(format!("generating {table}: {e}")))?;
        if let Some(&t) = tables.get(i + 1) {
            next = Some(generate(data, job, t, config_warehouses));
        }
        match method {
            LoadMethod::Copy => copy_text(client, table, text).await,
            LoadMethod::InsertBatch => insert_text(client, table, &text).await,
        }
        .map_err(|e| DbError(format!("loading {what}: {}", e.0)))?;
        rows.fetch_add(n, Ordering::Relaxed);
        progress(n);
    }
    client
        .batch_execute("COMMIT")
        .await
        .map_err(|e| db_err(&format!("committing {what}"), e))
}

/// COPY text of `table`, sent in 1 MiB pieces.
async fn copy_text(client: &Client, table: &str, text: String) -> Result<(), DbError> {
    let tx = |e| db_err(&format!("COPY {table}"), e);
    let sink = client
        .copy_in::<_, bytes::Bytes>(&format!("COPY {table} FROM STDIN"))
        .await
        .map_err(tx)?;
    futures_util::pin_mut!(sink);
    let all = bytes::Bytes::from(text);
    let mut at = 0;
    while at < all.len() {
        let end = (at + (1 << 20)).min(all.len());
        sink.send(all.slice(at..end)).await.map_err(tx)?;
        at = end;
    }
    sink.finish().await.map_err(tx)?;
    Ok(())
}

/// The rows of COPY text `text` as single-row INSERTs of literals,
/// [`INSERT_BATCH`] per round trip, committing every [`INSERT_COMMIT_ROWS`]
/// rows (the caller's transaction goes on after each commit).
async fn insert_text(client: &Client, table: &str, text: &str) -> Result<(), DbError> {
    let mut batch = String::with_capacity(1 << 20);
    let (mut in_batch, mut since_commit) = (0, 0);
    for line in text.lines() {
        batch.push_str("INSERT INTO ");
        batch.push_str(table);
        batch.push_str(" VALUES (");
        for (i, field) in line.split('\t').enumerate() {
            if i > 0 {
                batch.push(',');
            }
            push_literal(field, &mut batch);
        }
        batch.push_str(");");
        in_batch += 1;
        since_commit += 1;
        if since_commit == INSERT_COMMIT_ROWS {
            batch.push_str("COMMIT;BEGIN;");
            since_commit = 0;
        }
        if in_batch == INSERT_BATCH {
            client
                .batch_execute(&batch)
                .await
                .map_err(|e| db_err(&format!("INSERT INTO {table}"), e))?;
            batch.clear();
            in_batch = 0;
        }
    }
    if !batch.is_empty() {
        client
            .batch_execute(&batch)
            .await
            .map_err(|e| db_err(&format!("INSERT INTO {table}"), e))?;
    }
    Ok(())
}

/// A COPY text field as an SQL literal: `\N` is NULL, backslash escapes are
/// undone, quotes doubled; the server casts the untyped literal to the column's type.
fn push_literal(field: &str, out: &mut String) {
    if field == "\\N" {
        out.push_str("NULL");
        return;
    }
    out.push('\'');
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('t') => out.push('\t'),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some(other) => out.push(other),
                None => {}
            },
            '\'' => out.push_str("''"),
            c => out.push(c),
        }
    }
    out.push('\'');
}

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
    let c_load = spec
        .c_load
        .unwrap_or_else(|| TpccData::new(spec.seed, "").constants());
    // One set of run constants for all terminals (2.1.6).
    let c = NurandC::run(
        c_load.c_last,
        &mut Xoshiro256PlusPlus::seed_from_u64(spec.seed ^ 0x5450_4343_5255_4e43),
    );
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
        kinds: TpccKind::ALL.iter().map(|k| k.name()).collect(),
        protocol: spec.protocol,
        seed: spec.seed,
    }
}

struct TpccSource {
    driver: TpccDriver,
    params: Vec<Param>,
}

/// `{1,2,3}`: an integer array literal.
fn int_array(v: impl Iterator<Item = u32>) -> Param {
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

fn customer_params(c: &CustomerRef) -> [Param; 2] {
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

#[cfg(test)]
mod tests {
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
