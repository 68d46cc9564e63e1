//! pgio (SLOB for PostgreSQL): the loader (one table per schema, each in one
//! transaction, several at a time), the run as a runner workload — client-side
//! (one statement per event, like one mypgio loop iteration) or server-side
//! (one call of pgio's PL/pgSQL loop per event) — and cleanup.
//!
//! Physical-I/O figures (RIOPS against device reads) come from
//! [`csdchar_dbloop::iostat`], sampled around a run.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use csdchar_core::pgio::{
    self, FILLER_LEN, MYPGIO_SIGNATURE, OPS_PER_WINDOW, PgioMix, PgioOp, table_name,
};
use rand_core::SeedableRng;
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
pub struct PgioSpec {
    /// pgio's NUM_SCHEMAS: tables pgio1..pgioN.
    pub schemas: u32,
    /// pgio's SCALE: blocks (and rows) per table.
    pub blocks_per_schema: u64,
    /// pgio's UPDATE_PCT: 0–50 or 100.
    pub update_pct: u8,
    /// pgio's WORK_UNIT (255): a select reads keys k ..= k + work_unit.
    pub work_unit: u32,
    /// pgio's UPDATE_WORK_UNIT (8): an update changes keys k ..= k + update_work_unit.
    pub update_work_unit: u32,
    /// Seed of the load order and of the terminals' random streams.
    pub seed: u64,
    /// The database schema the tables live in (the connections' search_path).
    pub schema: String,
    /// Run pgio's PL/pgSQL loop on the server instead of sending each statement.
    pub server_side: bool,
}

impl PgioSpec {
    /// Checks the spec against pgio's limits.
    pub fn check(&self) -> Result<(), DbError> {
        if self.schemas == 0 {
            return Err(DbError::invalid("pgio needs at least one schema"));
        }
        pgio::check_update_pct(self.update_pct).map_err(DbError::invalid)?;
        pgio::check_blocks(self.blocks_per_schema, self.work_unit).map_err(DbError::invalid)
    }

    /// Bytes of heap the tables take (one 8 KiB block per row), indexes excluded.
    pub fn data_bytes(&self) -> u64 {
        u64::from(self.schemas) * self.blocks_per_schema * pgio::BLOCK_SIZE
    }
}

/// Retried SQLSTATEs: serialization failures and deadlocks (concurrent
/// updates of overlapping key ranges).
pub const PGIO_RETRY: &[&str] = &["40001", "40P01"];

/// Kinds of client-side events, in [`PgioOp::kind`] order.
pub const KINDS: [&str; 2] = ["select", "update"];

/// Loop iterations per server-side call: one full window of mypgio's
/// update quota, so every call does exactly `update_pct` updates.
pub const SERVER_SIDE_ITERATIONS: u64 = OPS_PER_WINDOW as u64;

/// pgio's tables pgio1..pgioN.
pub fn table_names(schemas: u32) -> Vec<String> {
    (1..=schemas).map(table_name).collect()
}

/// Blocks per schema the loaded tables hold: pgio1's rows (keys 1..=rows,
/// one row per block), read from its index.
pub async fn loaded_blocks(client: &Client, schema: &str) -> Result<u64, DbError> {
    let sql = format!("SELECT max(mykey) FROM {schema}.{}", table_name(1));
    let max: Option<i64> = client
        .query_one(&sql, &[])
        .await
        .map_err(|e| db_err(&sql, e))?
        .get(0);
    match max {
        Some(rows) if rows > 0 => Ok(rows as u64),
        _ => Err(DbError::other(format!(
            "{schema}.{} holds no rows: run `csdchar db prepare --workload pgio` first",
            table_name(1)
        ))),
    }
}

/// Drops `schema`.pgio1..N and the `mypgio` function (and the schema, if
/// csdchar created it and it is now empty). Returns what was dropped:
/// table names, then `mypgio()` if the function existed.
pub async fn cleanup(conninfo: &str, schema: &str, schemas: u32) -> Result<Vec<String>, DbError> {
    let client = connect(conninfo).await?;
    // Before the tables: drop_tables drops the schema only when nothing is left in it.
    let had_function = client
        .query_opt(
            "SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
             WHERE n.nspname = $1 AND p.proname = 'mypgio'",
            &[&schema],
        )
        .await
        .map_err(|e| db_err("looking up mypgio", e))?
        .is_some();
    if had_function {
        client
            .batch_execute(&format!(
                "DROP FUNCTION IF EXISTS {schema}.{MYPGIO_SIGNATURE}"
            ))
            .await
            .map_err(|e| db_err("dropping mypgio", e))?;
    }
    let mut dropped = drop_tables(conninfo, schema, &table_names(schemas)).await?;
    if had_function {
        dropped.push("mypgio()".into());
    }
    Ok(dropped)
}

/// Creates and loads pgio1..N over `jobs` connections, each table in one
/// transaction (CREATE, COPY FREEZE in random-`scratch` order, CREATE INDEX)
/// so an interrupted load leaves complete tables only, then VACUUM ANALYZE
/// each. Creates `mypgio` when `spec.server_side`. `progress(rows)` is called
/// as rows arrive. Refuses existing tables unless `force`.
///
/// Rows are generated here (from `spec.seed`) and sent as text COPY FREEZE
/// rather than made by pgio's `INSERT … SELECT … ORDER BY scratch`. Both
/// took the same time for a 1 GiB table on one connection on the 2-core
/// test VM (1.9 s with index and vacuum, debug build), so COPY won on the
/// rest: the same seed loads the same tables, progress moves per MiB, and
/// frozen rows spare VACUUM a rewrite of every page for hint bits. pgio
/// creates the index before inserting; here one sort builds it after loading.
///
/// Probes the server's dialect first; [`prepare_with`] takes one already probed.
pub async fn prepare(
    conninfo: &str,
    spec: &PgioSpec,
    jobs: u32,
    force: bool,
    progress: Arc<dyn Fn(u64) + Send + Sync>,
) -> Result<(), DbError> {
    spec.check()?;
    let dialect = Dialect::probe_conninfo(conninfo).await?;
    prepare_with(conninfo, spec, &dialect, jobs, force, progress).await
}

/// [`prepare`] on a server of `dialect`: refused, before anything is
/// written, where the dialect cannot load ([`Dialect::check_loadable`]);
/// COPY without FREEZE where the server lacks it (still in the transaction
/// that created the table; VACUUM then sets the hint bits).
pub async fn prepare_with(
    conninfo: &str,
    spec: &PgioSpec,
    dialect: &Dialect,
    jobs: u32,
    force: bool,
    progress: Arc<dyn Fn(u64) + Send + Sync>,
) -> Result<(), DbError> {
    spec.check()?;
    dialect.check_loadable()?;
    let copy_freeze = dialect.copy_freeze;
    let admin = connect(conninfo).await?;
    let names = table_names(spec.schemas);
    let found = existing_tables(&admin, &spec.schema, &names).await?;
    if !found.is_empty() {
        if !force {
            return Err(DbError::new(
                DbErrorKind::ObjectsExist,
                format!(
                    "tables exist already in schema {} ({}); run `csdchar db cleanup --workload pgio` or pass --force",
                    spec.schema,
                    found.join(", ")
                ),
            ));
        }
        cleanup(conninfo, &spec.schema, spec.schemas).await?;
    }
    ensure_schema(&admin, &spec.schema).await?;
    if spec.server_side {
        admin
            .batch_execute(&pgio::mypgio_function_sql(&spec.schema))
            .await
            .map_err(|e| db_err("creating mypgio", e))?;
    }
    let next = Arc::new(AtomicU32::new(1));
    let loaded = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..jobs.clamp(1, spec.schemas) {
        let (conninfo, spec, next, loaded, progress) = (
            conninfo.to_string(),
            spec.clone(),
            Arc::clone(&next),
            Arc::clone(&loaded),
            Arc::clone(&progress),
        );
        tasks.push(tokio::spawn(async move {
            let client = connect(&conninfo).await?;
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n > spec.schemas {
                    return Ok::<(), DbError>(());
                }
                load_table(&client, &spec, n, copy_freeze, &loaded, &*progress).await?;
                let t = format!("{}.{}", spec.schema, table_name(n));
                client
                    .batch_execute(&format!("VACUUM ANALYZE {t}"))
                    .await
                    .map_err(|e| db_err(&format!("vacuuming {t}"), e))?;
            }
        }));
    }
    let mut first_error = None;
    for t in tasks {
        let r = t
            .await
            .map_err(|e| DbError::other(format!("loader task failed: {e}")))
            .and_then(|r| r);
        if let Err(e) = r {
            first_error.get_or_insert(e);
        }
    }
    match first_error {
        None => Ok(()),
        Some(e) => Err(DbError::new(
            e.kind.clone(),
            format!(
                "{}; {} of {} rows were loaded, complete tables only \
             (run prepare again with --force to start over)",
                e.message,
                loaded.load(Ordering::Relaxed),
                u64::from(spec.schemas) * spec.blocks_per_schema
            ),
        )),
    }
}

/// Loads pgioN in one transaction (COPY FREEZE when `copy_freeze`).
async fn load_table(
    client: &Client,
    spec: &PgioSpec,
    n: u32,
    copy_freeze: bool,
    loaded: &AtomicU64,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<(), DbError> {
    let t = format!("{}.{}", spec.schema, table_name(n));
    let tx = |e| db_err(&format!("loading {t}"), e);
    let rows = pgio::rows_for_blocks(spec.blocks_per_schema);
    // Each table its own stream: the same seed loads the same tables whatever `jobs` is.
    let mut rng =
        Xoshiro256PlusPlus::seed_from_u64(spec.seed ^ u64::from(n).wrapping_mul(0x9E37_79B9));
    let order = pgio::load_order(rows, &mut rng);
    // FREEZE: the table was created in this transaction, so rows need no
    // later hint-bit writes or freezing — reads during the run stay reads.
    // (Servers before 9.3 and openGauss lack it: plain COPY, same transaction.)
    client
        .batch_execute(&format!("BEGIN; {}", pgio::create_table_sql(&t)))
        .await
        .map_err(tx)?;
    let mut copy = CopyIn::start(
        client,
        &format!(
            "COPY {t} FROM STDIN{}",
            if copy_freeze { " WITH (FREEZE)" } else { "" }
        ),
        &format!("loading {t}"),
    )
    .await?;
    let filler = "X".repeat(FILLER_LEN);
    for (key, scratch) in order {
        use std::io::Write;
        let _ = writeln!(copy.buf, "{key}\t{scratch}\t{filler}");
        if copy.row_done() {
            let sent = copy.send().await?;
            loaded.fetch_add(sent, Ordering::Relaxed);
            progress(sent);
        }
    }
    let pending = copy.finish().await?;
    client
        .batch_execute(&format!(
            "SET LOCAL maintenance_work_mem = '256MB'; {}; COMMIT",
            pgio::create_index_sql(&spec.schema, n)
        ))
        .await
        .map_err(tx)?;
    loaded.fetch_add(pending, Ordering::Relaxed);
    progress(pending);
    Ok(())
}

/// pgio's run as a runner workload.
///
/// Terminals are bound to tables round-robin in the order they start: with
/// `schemas × k` threads every table gets `k` (pgio's NUM_THREADS per schema).
///
/// Client-side (`!spec.server_side`): one event = one mypgio loop iteration,
/// a select or an update in its own (autocommit) transaction; kinds
/// [`KINDS`]. Each terminal keeps mypgio's 100-operation quota window, so
/// updates are exactly `update_pct` per 100 completed-or-retried draws.
/// Statements go in the extended protocol with unnamed statements, so each is
/// planned for its own key range like pgio's EXECUTE of a built string.
///
/// Server-side: one event = one `mypgio` call of
/// [`SERVER_SIDE_ITERATIONS`] loop iterations in one transaction (pgio runs
/// one call per session for the whole run). A "transaction" is then 100
/// pgio operations (`update_pct` of them updates); the run may end up to one
/// call after the deadline. One kind, no statement parameters.
pub fn workload(spec: &PgioSpec) -> Workload {
    let mut statements = StatementSet::default();
    let schemas = spec.schemas.max(1);
    for n in 1..=schemas {
        let t = table_name(n);
        if spec.server_side {
            statements.push(
                format!("{t}_mypgio"),
                pgio::mypgio_call_sql(
                    &t,
                    spec.update_pct,
                    spec.blocks_per_schema,
                    spec.work_unit,
                    spec.update_work_unit,
                    SERVER_SIDE_ITERATIONS,
                ),
            );
        } else {
            statements.push(format!("{t}_select"), PgioOp::Select.sql(&t));
            statements.push(format!("{t}_update"), PgioOp::Update.sql(&t));
        }
    }
    let terminals = Arc::new(AtomicU32::new(0));
    let (pct, rows, wu, uwu, server_side) = (
        spec.update_pct,
        pgio::rows_for_blocks(spec.blocks_per_schema),
        spec.work_unit,
        spec.update_work_unit,
        spec.server_side,
    );
    Workload {
        statements,
        sources: Box::new(move || {
            Box::new(PgioSource {
                table: bind_terminal(&terminals, schemas),
                mix: PgioMix::new(pct),
                rows,
                work_unit: wu,
                update_work_unit: uwu,
                server_side,
            })
        }),
        retry_codes: PGIO_RETRY,
        rollback_codes: &[],
        abandon_codes: &[],
        keeps_rows: false,
        kinds: if spec.server_side {
            Vec::new()
        } else {
            KINDS.to_vec()
        },
        protocol: Protocol::Extended,
        seed: spec.seed,
        sessions: None,
    }
}

/// The table (0-based) of the next terminal to start: round-robin.
fn bind_terminal(started: &AtomicU32, schemas: u32) -> usize {
    (started.fetch_add(1, Ordering::Relaxed) % schemas.max(1)) as usize
}

/// One terminal: its table (0-based) and its quota window.
struct PgioSource {
    table: usize,
    mix: PgioMix,
    rows: u64,
    work_unit: u32,
    update_work_unit: u32,
    server_side: bool,
}

impl EventSource for PgioSource {
    fn draw(&mut self, rng: &mut Xoshiro256PlusPlus, ev: &mut Event) {
        if self.server_side {
            ev.push(self.table, &[]);
            return;
        }
        let d = pgio::draw(
            rng,
            &mut self.mix,
            self.rows,
            self.work_unit,
            self.update_work_unit,
        );
        ev.push(
            self.table * 2 + d.op.kind(),
            &[Param::Int(d.lo), Param::Int(d.hi)],
        );
        ev.set_kind(d.op.kind());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(server_side: bool) -> PgioSpec {
        PgioSpec {
            schemas: 3,
            blocks_per_schema: 4096,
            update_pct: 25,
            work_unit: 255,
            update_work_unit: 8,
            seed: 1,
            schema: "csdchar".into(),
            server_side,
        }
    }

    #[test]
    fn terminals_are_bound_round_robin() {
        let next = AtomicU32::new(0);
        let tables: Vec<usize> = (0..7).map(|_| bind_terminal(&next, 3)).collect();
        assert_eq!(tables, vec![0, 1, 2, 0, 1, 2, 0]);
        assert_eq!(workload(&spec(false)).kinds, vec!["select", "update"]);
        assert!(workload(&spec(true)).kinds.is_empty());
    }

    #[test]
    fn spec_checks_and_sizes() {
        assert!(spec(false).check().is_ok());
        let bad = PgioSpec {
            update_pct: 75,
            ..spec(false)
        };
        assert!(bad.check().unwrap_err().message.contains("0 to 50"));
        assert_eq!(spec(false).data_bytes(), 3 * 4096 * 8192);
        assert_eq!(table_names(2), vec!["pgio1", "pgio2"]);
    }
}
