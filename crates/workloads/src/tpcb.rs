//! pgbench-compatible TPC-B: the loader (binary COPY or server-side
//! generation over several connections, partitioned by key range), the
//! built-in scripts as a runner workload, and cleanup of pgbench's tables only.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use csdchar_core::tpcb::{
    self, ACCOUNTS_PER_SCALE, PRIMARY_KEYS, TELLERS_PER_SCALE, TpcbScript, TpcbStatement,
};
use rand_xoshiro::Xoshiro256PlusPlus;
use tokio_postgres::Client;

use crate::catalog::{drop_tables, ensure_schema, existing_tables};
use crate::copy::CopyIn;
use csdchar_dbloop::event::{Event, EventSource, Protocol, StatementSet, Workload};
use csdchar_pgwire::client::connect;
use csdchar_pgwire::dialect::Dialect;
use csdchar_pgwire::error::{DbError, DbErrorKind, db_err};
use csdchar_pgwire::message::Param;

/// What to load and run.
#[derive(Debug, Clone)]
pub struct TpcbSpec {
    /// The built-in script.
    pub script: TpcbScript,
    /// pgbench's scale factor.
    pub scale: u32,
    /// `-F`: fillfactor of accounts, tellers and branches.
    pub fillfactor: Option<u8>,
    /// `-M`.
    pub protocol: Protocol,
    /// Seed of the clients' random streams.
    pub seed: u64,
    /// Schema the tables live in (the connections' search_path).
    pub schema: String,
}

/// How rows are generated at prepare (pgbench's init steps `g` and `G`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitMode {
    /// Rows made by csdchar and sent with binary COPY.
    Client,
    /// `INSERT … SELECT … generate_series` on the server.
    Server,
}

/// Seconds per load step, as pgbench's `-i` reports them.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadTimes {
    /// Dropping existing tables (with --force) and creating them.
    pub create_s: f64,
    /// Generating rows (COPY or server-side).
    pub generate_s: f64,
    /// VACUUM ANALYZE.
    pub vacuum_s: f64,
    /// Primary keys.
    pub primary_keys_s: f64,
}

/// Retried SQLSTATEs (pgbench retries serialization failures and deadlocks).
pub const PGBENCH_RETRY: &[&str] = &["40001", "40P01"];

/// pgbench's tables, for snapshots and cleanup.
pub fn table_names() -> Vec<String> {
    tpcb::TABLES.iter().map(|t| t.to_string()).collect()
}

/// Drops pgbench's four tables in `schema` (and nothing else); returns those dropped.
pub async fn cleanup(conninfo: &str, schema: &str) -> Result<Vec<String>, DbError> {
    drop_tables(conninfo, schema, &table_names()).await
}

/// Creates and loads pgbench's tables at `spec.scale` over `jobs`
/// connections (accounts split into key ranges), then — like pgbench's
/// default steps — vacuum analyze and the primary keys, both in parallel
/// across tables. `progress(rows)` is called as account rows arrive.
/// Refuses existing tables unless `force`. A failure says how far the load got.
/// Probes the server's dialect first; [`prepare_with`] takes one already probed.
pub async fn prepare(
    conninfo: &str,
    spec: &TpcbSpec,
    mode: InitMode,
    jobs: u32,
    force: bool,
    progress: Arc<dyn Fn(u64) + Send + Sync>,
) -> Result<LoadTimes, DbError> {
    let dialect = Dialect::probe_conninfo(conninfo).await?;
    prepare_with(conninfo, spec, &dialect, mode, jobs, force, progress).await
}

/// [`prepare`] on a server of `dialect`: refused, before anything is
/// written, where the dialect cannot load ([`Dialect::check_loadable`]);
/// COPY FREEZE only where the server has it (the same transactions, with
/// TRUNCATE, otherwise: only the rows are not frozen).
pub async fn prepare_with(
    conninfo: &str,
    spec: &TpcbSpec,
    dialect: &Dialect,
    mode: InitMode,
    jobs: u32,
    force: bool,
    progress: Arc<dyn Fn(u64) + Send + Sync>,
) -> Result<LoadTimes, DbError> {
    dialect.check_loadable()?;
    let copy_freeze = dialect.copy_freeze;
    let mut times = LoadTimes::default();
    let mut t0 = std::time::Instant::now();
    let mut lap = move || {
        let now = std::time::Instant::now();
        let s = now.duration_since(t0).as_secs_f64();
        t0 = now;
        s
    };
    let admin = connect(conninfo).await?;
    let found = existing_tables(&admin, &spec.schema, &table_names()).await?;
    if !found.is_empty() {
        if !force {
            return Err(DbError::new(
                DbErrorKind::ObjectsExist,
                format!(
                    "tables exist already in schema {} ({}); run `csdchar db cleanup --workload tpcb` or pass --force",
                    spec.schema,
                    found.join(", ")
                ),
            ));
        }
        cleanup(conninfo, &spec.schema).await?;
    }
    ensure_schema(&admin, &spec.schema).await?;
    for sql in tpcb::create_tables_sql(spec.scale, spec.fillfactor) {
        admin
            .batch_execute(&sql)
            .await
            .map_err(|e| db_err("creating tables", e))?;
    }
    times.create_s = lap();
    let (branches, tellers, accounts) = tpcb::row_counts(spec.scale);
    let loaded = Arc::new(AtomicU64::new(0));
    let how_far = |loaded: &AtomicU64, step: &str, e: DbError| {
        DbError::new(
            e.kind.clone(),
            format!(
                "{}; the load stopped in step '{step}' after {} of {accounts} accounts rows \
             (run prepare again with --force to start over)",
                e.message,
                loaded.load(Ordering::Relaxed)
            ),
        )
    };
    // The small tables, each in one transaction that creates nothing new
    // but truncates first, so COPY FREEZE is allowed.
    for (table, rows) in [("pgbench_branches", branches), ("pgbench_tellers", tellers)] {
        load_range(&admin, table, mode, 1, rows, true, copy_freeze)
            .await
            .map_err(|e| how_far(&loaded, "generate", e))?;
    }
    // Accounts. Client-side: one connection with COPY FREEZE — FREEZE needs
    // the transaction that truncated the table, and one frozen binary COPY
    // measured faster than two unfrozen ones in parallel (whose rows vacuum
    // must then visit). Server-side: key ranges over `jobs` connections.
    let jobs = match mode {
        InitMode::Client => 1,
        InitMode::Server => u64::from(jobs.max(1)).min(accounts.div_ceil(10_000).max(1)),
    };
    let per = accounts.div_ceil(jobs);
    let mut tasks = Vec::new();
    for j in 0..jobs {
        let (from, to) = (j * per + 1, ((j + 1) * per).min(accounts));
        if from > to {
            continue;
        }
        let (conninfo, loaded, progress) = (
            conninfo.to_string(),
            Arc::clone(&loaded),
            Arc::clone(&progress),
        );
        tasks.push(tokio::spawn(async move {
            let client = connect(&conninfo).await?;
            let freeze = jobs == 1;
            load_accounts(
                &client,
                mode,
                from,
                to,
                freeze,
                copy_freeze,
                &loaded,
                &*progress,
            )
            .await
        }));
    }
    for t in tasks {
        t.await
            .map_err(|e| DbError::other(format!("loader task failed: {e}")))?
            .map_err(|e| how_far(&loaded, "generate", e))?;
    }
    times.generate_s = lap();
    // pgbench's `v` then `p`, each table on its own connection.
    parallel(
        conninfo,
        tpcb::TABLES.iter().map(|t| format!("vacuum analyze {t}")),
    )
    .await
    .map_err(|e| how_far(&loaded, "vacuum", e))?;
    times.vacuum_s = lap();
    // A sort in memory instead of on disk; this session only.
    parallel(
        conninfo,
        PRIMARY_KEYS
            .iter()
            .map(|s| format!("SET maintenance_work_mem = '1GB'; {s}")),
    )
    .await
    .map_err(|e| how_far(&loaded, "primary keys", e))?;
    times.primary_keys_s = lap();
    Ok(times)
}

/// Runs each statement on its own connection, all at once.
async fn parallel(conninfo: &str, statements: impl Iterator<Item = String>) -> Result<(), DbError> {
    let mut tasks = Vec::new();
    for sql in statements {
        let conninfo = conninfo.to_string();
        tasks.push(tokio::spawn(async move {
            let c = connect(&conninfo).await?;
            c.batch_execute(&sql).await.map_err(|e| db_err(&sql, e))
        }));
    }
    for t in tasks {
        t.await
            .map_err(|e| DbError::other(format!("task failed: {e}")))??;
    }
    Ok(())
}

/// Loads keys [from, to] of a small table in one transaction (TRUNCATE
/// first when `freeze`, then COPY FREEZE if the server has it: `copy_freeze`).
async fn load_range(
    client: &Client,
    table: &str,
    mode: InitMode,
    from: u64,
    to: u64,
    freeze: bool,
    copy_freeze: bool,
) -> Result<(), DbError> {
    let tx = |e| db_err(&format!("loading {table}"), e);
    client.batch_execute("BEGIN").await.map_err(tx)?;
    if freeze {
        client
            .batch_execute(&format!("TRUNCATE {table}"))
            .await
            .map_err(tx)?;
    }
    match mode {
        InitMode::Server => client
            .batch_execute(&tpcb::generate_sql(table, from, to))
            .await
            .map_err(tx)?,
        InitMode::Client => {
            let sql = format!(
                "COPY {table} FROM STDIN WITH (FORMAT binary{})",
                if freeze && copy_freeze {
                    ", FREEZE"
                } else {
                    ""
                }
            );
            let mut copy = CopyIn::start(client, &sql, &format!("COPY {table}")).await?;
            let buf = &mut copy.buf;
            copy_header(buf);
            for key in from..=to {
                if table == "pgbench_branches" {
                    // bid, bbalance, filler NULL
                    copy_row(buf, &[Field::Int(key as i32), Field::Int(0), Field::Null]);
                } else {
                    let bid = ((key - 1) / TELLERS_PER_SCALE + 1) as i32;
                    copy_row(
                        buf,
                        &[
                            Field::Int(key as i32),
                            Field::Int(bid),
                            Field::Int(0),
                            Field::Null,
                        ],
                    );
                }
            }
            copy_finish(buf);
            copy.finish().await?;
        }
    }
    client.batch_execute("COMMIT").await.map_err(tx)?;
    Ok(())
}

/// Loads accounts [from, to], in 1 MiB COPY chunks (or server-side); with
/// `freeze`, in one transaction that truncates first, and with FREEZE when
/// the server has it (`copy_freeze`).
#[allow(clippy::too_many_arguments)]
async fn load_accounts(
    client: &Client,
    mode: InitMode,
    from: u64,
    to: u64,
    freeze: bool,
    copy_freeze: bool,
    loaded: &AtomicU64,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<(), DbError> {
    let tx = |e| db_err("loading pgbench_accounts", e);
    if freeze {
        client
            .batch_execute("BEGIN; TRUNCATE pgbench_accounts")
            .await
            .map_err(tx)?;
    }
    match mode {
        InitMode::Server => {
            // Slices so progress moves and a failure says how far it got.
            let step = ACCOUNTS_PER_SCALE;
            let mut a = from;
            while a <= to {
                let b = (a + step - 1).min(to);
                client
                    .batch_execute(&tpcb::generate_sql("pgbench_accounts", a, b))
                    .await
                    .map_err(tx)?;
                loaded.fetch_add(b - a + 1, Ordering::Relaxed);
                progress(b - a + 1);
                a = b + 1;
            }
        }
        InitMode::Client => {
            let sql = format!(
                "COPY pgbench_accounts FROM STDIN WITH (FORMAT binary{})",
                if freeze && copy_freeze {
                    ", FREEZE"
                } else {
                    ""
                }
            );
            let mut copy = CopyIn::start(client, &sql, "loading pgbench_accounts").await?;
            let bigint = to > i32::MAX as u64;
            copy_header(&mut copy.buf);
            for aid in from..=to {
                let bid = Field::Int(((aid - 1) / ACCOUNTS_PER_SCALE + 1) as i32);
                let key = if bigint {
                    Field::BigInt(aid as i64)
                } else {
                    Field::Int(aid as i32)
                };
                // filler: '' (blank-padded to char(84) by the server), as pgbench loads it.
                copy_row(&mut copy.buf, &[key, bid, Field::Int(0), Field::Text("")]);
                if copy.row_done() {
                    let sent = copy.send().await?;
                    loaded.fetch_add(sent, Ordering::Relaxed);
                    progress(sent);
                }
            }
            copy_finish(&mut copy.buf);
            let pending = copy.finish().await?;
            loaded.fetch_add(pending, Ordering::Relaxed);
            progress(pending);
        }
    }
    if freeze {
        client.batch_execute("COMMIT").await.map_err(tx)?;
    }
    Ok(())
}

/// One field of a binary COPY row.
enum Field<'a> {
    Int(i32),
    BigInt(i64),
    Text(&'a str),
    Null,
}

/// PostgreSQL's binary COPY signature, flags and header-extension length.
fn copy_header(b: &mut Vec<u8>) {
    b.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
    b.extend_from_slice(&0i32.to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes());
}

fn copy_row(b: &mut Vec<u8>, fields: &[Field<'_>]) {
    b.extend_from_slice(&(fields.len() as i16).to_be_bytes());
    for f in fields {
        match f {
            Field::Int(v) => {
                b.extend_from_slice(&4i32.to_be_bytes());
                b.extend_from_slice(&v.to_be_bytes());
            }
            Field::BigInt(v) => {
                b.extend_from_slice(&8i32.to_be_bytes());
                b.extend_from_slice(&v.to_be_bytes());
            }
            Field::Text(s) => {
                b.extend_from_slice(&(s.len() as i32).to_be_bytes());
                b.extend_from_slice(s.as_bytes());
            }
            Field::Null => b.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
}

/// The file trailer (a field count of -1).
fn copy_finish(b: &mut Vec<u8>) {
    b.extend_from_slice(&(-1i16).to_be_bytes());
}

/// pgbench's built-in script as a runner workload.
pub fn workload(spec: &TpcbSpec) -> Workload {
    let mut statements = StatementSet::default();
    for s in TpcbStatement::ALL {
        statements.push(format!("pgbench_{s:?}").to_lowercase(), s.sql().to_string());
    }
    let (script, scale) = (spec.script, spec.scale);
    Workload {
        statements,
        sources: Box::new(move || Box::new(TpcbSource { script, scale })),
        retry_codes: PGBENCH_RETRY,
        rollback_codes: &[],
        abandon_codes: &[],
        keeps_rows: false,
        kinds: Vec::new(),
        protocol: spec.protocol,
        seed: spec.seed,
        sessions: None,
    }
}

struct TpcbSource {
    script: TpcbScript,
    scale: u32,
}

impl EventSource for TpcbSource {
    fn draw(&mut self, rng: &mut Xoshiro256PlusPlus, ev: &mut Event) {
        let d = tpcb::draw(rng, self.script, self.scale);
        let mut params: Vec<Param> = Vec::with_capacity(4);
        for &s in self.script.statements() {
            params.clear();
            params.extend(s.params(&d).into_iter().map(Param::Int));
            ev.push(s as usize, &params);
        }
        if self.script.statements().first() == Some(&TpcbStatement::Begin) {
            ev.set_block();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_copy_rows_have_postgres_layout() {
        let mut b = Vec::new();
        copy_header(&mut b);
        assert_eq!(b.len(), 19);
        copy_row(&mut b, &[Field::Int(7), Field::Null, Field::Text("ab")]);
        assert_eq!(
            &b[19..],
            &[
                0, 3, 0, 0, 0, 4, 0, 0, 0, 7, 255, 255, 255, 255, 0, 0, 0, 2, b'a', b'b'
            ]
        );
        copy_finish(&mut b);
        assert_eq!(&b[b.len() - 2..], &[255, 255]);
    }
}
