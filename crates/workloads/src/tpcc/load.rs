//! The TPC-C load: BenchmarkSQL's job queue (item, then one warehouse per
//! transaction) over several connections with COPY text (or BenchmarkSQL's
//! batched INSERTs), then the keys, foreign keys and history id of its build
//! and VACUUM ANALYZE; a resume loads and builds only what is missing.

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use csdchar_core::tpcc::{self, FOREIGN_KEYS, TpccData, WAREHOUSE_TABLES};
use tokio_postgres::Client;

use crate::catalog::{ensure_schema, existing_tables};
use crate::copy::CopyIn;
use csdchar_pgwire::client::connect;
use csdchar_pgwire::dialect::Dialect;
use csdchar_pgwire::error::{DbError, DbErrorKind, db_err};

use super::procs::functions_sql;

use super::spec::{
    INSERT_BATCH, INSERT_COMMIT_ROWS, Job, LoadMethod, TpccLoadTimes, TpccSpec, connect_loader,
    quote_ident, table_names,
};
use super::state::{TpccLoadState, cleanup, ranges, read_config};

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
    // A resume on a load whose bmsql_config is unusable writes it anew.
    let mut rewrite_config = false;
    match warehouse_range {
        None => {
            if spec.warehouses == 0 {
                return Err(DbError::invalid("warehouses must be 1 or more"));
            }
            if !found.is_empty() {
                if !force {
                    return Err(DbError::new(
                        DbErrorKind::ObjectsExist,
                        format!(
                            "tables exist already in schema {schema} ({}); run `csdchar db cleanup --workload tpcc` \
                         or pass --force (or load missing warehouses with a warehouse range)",
                            found.join(", ")
                        ),
                    ));
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
                return Err(DbError::other(format!(
                    "warehouse range {from}-{to}: needs 1 <= from <= to"
                )));
            }
            if force {
                return Err(DbError::invalid(
                    "--force starts the load over; a warehouse range resumes one: use one of them",
                ));
            }
            // bmsql_config alone missing: recreated, and written after the load.
            if found.len() + 1 == names.len() && !found.iter().any(|t| t == "bmsql_config") {
                admin
                    .batch_execute(&format!(
                        "create table bmsql_config ({})",
                        tpcc::columns("bmsql_config")
                    ))
                    .await
                    .map_err(|e| db_err("creating bmsql_config", e))?;
            } else if found.len() != names.len() {
                return Err(DbError::other(format!(
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
                return Err(DbError::other(format!(
                    "the tables in schema {schema} have keys already, so warehouses {} cannot be added; \
                     use --force to load again",
                    ranges(&to_load.iter().copied().collect())
                )));
            }
            if state.item_loaded && state.config_problem.is_some() {
                // Missing or bad values: the count comes from the tables, the
                // constants from this seed (those of the first load's, as a
                // resume needs anyway).
                rewrite_config = true;
            } else if state.item_loaded {
                let cfg = read_config(&admin, schema).await?;
                if cfg.constants != data.constants() {
                    return Err(DbError::other(format!(
                        "the tables were loaded with another seed (NURand constants {:?}, this seed's {:?}); \
                         resume with the seed of the first load",
                        cfg.constants,
                        data.constants()
                    )));
                }
            } else {
                // The item job writes bmsql_config with the items: whatever is there goes.
                admin
                    .batch_execute("delete from bmsql_config")
                    .await
                    .map_err(|e| db_err("emptying bmsql_config", e))?;
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
            .unwrap_or_else(|e| Err(DbError::other(format!("loader task failed: {e}"))));
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
        return Err(DbError::new(
            e.kind.clone(),
            format!(
                "{}; the load stopped: warehouses complete: {} (each is loaded in one transaction, so none is \
             partial), missing: {}; item table {}. To resume, run prepare again with the warehouse range \
             {lo}-{hi} and the same seed (only missing warehouses are loaded, then the keys are built), \
             or with --force to start over",
                e.message,
                ranges(&present),
                ranges(&missing),
                if times.item_loaded || !todo.iter().any(|j| matches!(j, Job::Item)) {
                    "loaded"
                } else {
                    "not loaded"
                },
            ),
        ));
    }
    times.load_s = lap();
    if rewrite_config {
        let c = data.constants();
        admin
            .batch_execute(&format!(
                "delete from bmsql_config; insert into bmsql_config values \
                 ('warehouses', '0'), ('nURandCLast', '{}'), ('nURandCC_ID', '{}'), ('nURandCI_ID', '{}')",
                c.c_last, c.c_id, c.ol_i_id
            ))
            .await
            .map_err(|e| db_err("rewriting bmsql_config", e))?;
        times.config_rewritten = true;
    }
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
        DbError::new(
            e.kind.clone(),
            format!(
                "{}; all warehouses are loaded but the step '{step}' failed: finish the load with prepare \
             --warehouses {n} --warehouse-range 1-{n} and the same --seed, or start over with --force",
                e.message,
                n = config_warehouses
            ),
        )
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
    // Statistics before the foreign keys: without them the planner validates
    // a key by a plan that took 4.0 s for o_customer_fkey at 2 warehouses,
    // 36 ms with them (the final VACUUM ANALYZE comes too late for that).
    // ANALYZE changes no schema: the build ends as BenchmarkSQL's does.
    pool(
        conninfo,
        schema,
        jobs,
        "",
        FOREIGN_KEYS
            .iter()
            .filter(|f| !built.foreign_keys.contains(f.1))
            .flat_map(|f| [f.0, foreign_key_target(f.2)])
            .collect::<BTreeSet<&str>>()
            .into_iter()
            .map(|t| format!("analyze {t}"))
            .collect(),
    )
    .await
    .map_err(|e| after("analyze", e))?;
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

/// The table a foreign key's statement references (`... references <table> (...)`).
fn foreign_key_target(sql: &str) -> &str {
    sql.split(" references ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or("")
}

/// Runs `statements` over up to `jobs` connections, each taking the next one.
pub(super) async fn pool(
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
            .unwrap_or_else(|e| Err(DbError::other(format!("task failed: {e}"))))
        {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}

/// Generates one table's rows off the async threads.
pub(super) fn generate(
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
pub(super) async fn load_job(
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
            .map_err(|e| DbError::other(format!("generating {table}: {e}")))?;
        if let Some(&t) = tables.get(i + 1) {
            next = Some(generate(data, job, t, config_warehouses));
        }
        match method {
            LoadMethod::Copy => copy_text(client, table, text).await,
            LoadMethod::InsertBatch => insert_text(client, table, &text).await,
        }
        .map_err(|e| e.context(&format!("loading {what}")))?;
        rows.fetch_add(n, Ordering::Relaxed);
        progress(n);
    }
    client
        .batch_execute("COMMIT")
        .await
        .map_err(|e| db_err(&format!("committing {what}"), e))
}

/// COPY text of `table`, sent in 1 MiB pieces.
pub(super) async fn copy_text(client: &Client, table: &str, text: String) -> Result<(), DbError> {
    let mut copy = CopyIn::start(
        client,
        &format!("COPY {table} FROM STDIN"),
        &format!("COPY {table}"),
    )
    .await?;
    copy.send_all(bytes::Bytes::from(text)).await?;
    copy.finish().await.map(drop)
}

/// The rows of COPY text `text` as single-row INSERTs of literals,
/// [`INSERT_BATCH`] per round trip, committing every [`INSERT_COMMIT_ROWS`]
/// rows (the caller's transaction goes on after each commit).
pub(super) async fn insert_text(client: &Client, table: &str, text: &str) -> Result<(), DbError> {
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
pub(super) fn push_literal(field: &str, out: &mut String) {
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
