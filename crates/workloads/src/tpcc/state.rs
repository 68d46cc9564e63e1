//! What is in the database: how far a load got ([`TpccLoadState`]), BenchmarkSQL's
//! `bmsql_config`, the consistency checks, and cleanup of BenchmarkSQL's objects only.

use std::collections::BTreeSet;

use csdchar_core::tpcc::{self, CONSISTENCY, FOREIGN_KEYS, HISTORY_SEQUENCE, NurandC};
use tokio_postgres::Client;

use crate::catalog::{drop_tables, existing_tables};
use csdchar_pgwire::client::connect;
use csdchar_pgwire::error::{DbError, db_err};

use super::spec::{
    CheckOutcome, FUNCTIONS, TpccConfig, TpccSpec, connect_in, loader_name, quote_ident,
    table_names,
};

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

pub(super) async fn drop_functions(client: &Client, schema: &str) -> Result<(), DbError> {
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
    parse_config(&config_rows(client, schema).await?).map_err(DbError::other)
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

/// "1-3, 5" for {1, 2, 3, 5}; "none" when empty.
pub(super) fn ranges(set: &BTreeSet<u32>) -> String {
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
