//! sysbench-compatible OLTP on PostgreSQL: prepare (tables loaded with COPY
//! over parallel connections), run (one connection per client, prepared
//! statements, sysbench's counting and retry rules), cleanup (only the tables
//! the workload creates).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use csdchar_core::oltp::{
    OltpOptions, OltpStatement, OltpStrings, OltpWorkload, RandType, StatementGroup,
    create_secondary_sql, create_table_sql, rand_id, transaction_plan,
};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::catalog::{drop_tables, ensure_schema, existing_tables};
use crate::copy::CopyIn;
use csdchar_dbloop::event::{Event, EventSource, Protocol, StatementSet, Workload};
use csdchar_pgwire::client::{Client, connect};
use csdchar_pgwire::dialect::Dialect;
use csdchar_pgwire::error::{DbError, DbErrorKind, db_err};
use csdchar_pgwire::message::Param;

/// What to prepare and run.
#[derive(Debug, Clone)]
pub struct OltpSpec {
    /// The script.
    pub workload: OltpWorkload,
    /// Tables sbtest1..N.
    pub tables: u32,
    /// Rows per table.
    pub table_size: u64,
    /// Rows per range select.
    pub range_size: u64,
    /// Statement counts and switches.
    pub options: OltpOptions,
    /// Row-id distribution.
    pub rand_type: RandType,
    /// `WITH (fillfactor=N)` at prepare.
    pub fillfactor: Option<u8>,
    /// % of c/pad values from a small repeated set.
    pub string_dup: u8,
    /// Secondary index on k after loading.
    pub create_secondary: bool,
    /// Seed of data and ids.
    pub seed: u64,
    /// Schema the tables live in (the connections' search_path, see
    /// [`csdchar_pgwire::conn::with_search_path`]).
    pub schema: String,
}

/// sysbench's tables sbtest1..N.
pub fn table_names(tables: u32) -> Vec<String> {
    (1..=tables).map(|n| format!("sbtest{n}")).collect()
}

/// Creates and loads the tables, `threads` at a time; `progress(rows)` is
/// called as rows are loaded. Refuses existing tables unless `force`.
/// Probes the server's dialect first; [`prepare_with`] takes one already probed.
pub async fn prepare(
    conninfo: &str,
    spec: &OltpSpec,
    threads: u32,
    force: bool,
    progress: Arc<dyn Fn(u64) + Send + Sync>,
) -> Result<(), DbError> {
    let dialect = Dialect::probe_conninfo(conninfo).await?;
    prepare_with(conninfo, spec, &dialect, threads, force, progress).await
}

/// [`prepare`] on a server of `dialect`: refused, before anything is
/// written, where the dialect cannot load ([`Dialect::check_loadable`]).
pub async fn prepare_with(
    conninfo: &str,
    spec: &OltpSpec,
    dialect: &Dialect,
    threads: u32,
    force: bool,
    progress: Arc<dyn Fn(u64) + Send + Sync>,
) -> Result<(), DbError> {
    dialect.check_loadable()?;
    let admin = connect(conninfo).await?;
    let existing = existing_tables(&admin, &spec.schema, &table_names(spec.tables)).await?;
    if !existing.is_empty() {
        if !force {
            return Err(DbError::new(
                DbErrorKind::ObjectsExist,
                format!(
                    "tables exist already in schema {} ({}); run `csdchar db cleanup` or pass --force",
                    spec.schema,
                    existing.join(", ")
                ),
            ));
        }
        cleanup(conninfo, &spec.schema, spec.tables).await?;
    }
    ensure_schema(&admin, &spec.schema).await?;
    let next = Arc::new(std::sync::atomic::AtomicU32::new(1));
    let mut tasks = Vec::new();
    for t in 0..threads.min(spec.tables).max(1) {
        let (conninfo, spec, next, progress) = (
            conninfo.to_string(),
            spec.clone(),
            Arc::clone(&next),
            Arc::clone(&progress),
        );
        tasks.push(tokio::spawn(async move {
            let client = connect(&conninfo).await?;
            let mut rng =
                Xoshiro256PlusPlus::seed_from_u64(spec.seed ^ u64::from(t).wrapping_mul(0x9E37));
            let strings = OltpStrings::new(
                spec.string_dup,
                &mut Xoshiro256PlusPlus::seed_from_u64(spec.seed),
            );
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n > spec.tables {
                    return Ok::<(), DbError>(());
                }
                load_table(&client, &spec, n, &strings, &mut rng, &*progress).await?;
            }
        }));
    }
    for t in tasks {
        t.await
            .map_err(|e| DbError::other(format!("loader task failed: {e}")))??;
    }
    Ok(())
}

async fn load_table(
    client: &Client,
    spec: &OltpSpec,
    n: u32,
    strings: &OltpStrings,
    rng: &mut Xoshiro256PlusPlus,
    progress: &(dyn Fn(u64) + Send + Sync),
) -> Result<(), DbError> {
    // One transaction per table: a load cut short (Ctrl-C, lost server)
    // leaves every table complete or absent, never half-loaded.
    client
        .batch_execute("BEGIN")
        .await
        .map_err(|e| db_err(&format!("loading sbtest{n}"), e))?;
    client
        .batch_execute(&create_table_sql(n, true, spec.fillfactor))
        .await
        .map_err(|e| db_err(&format!("creating sbtest{n}"), e))?;
    let mut copy = CopyIn::start(
        client,
        &format!("COPY sbtest{n} (k, c, pad) FROM STDIN"),
        &format!("loading sbtest{n}"),
    )
    .await?;
    for _ in 0..spec.table_size {
        use std::io::Write;
        // Like sysbench, k follows --rand-type even while loading.
        let k = rand_id(rng, spec.rand_type, spec.table_size);
        let _ = writeln!(copy.buf, "{k}\t{}\t{}", strings.c(rng), strings.pad(rng));
        if copy.row_done() {
            progress(copy.send().await?);
        }
    }
    progress(copy.finish().await?);
    if spec.create_secondary {
        client
            .batch_execute(&create_secondary_sql(n))
            .await
            .map_err(|e| db_err(&format!("indexing sbtest{n}"), e))?;
    }
    client
        .batch_execute("COMMIT")
        .await
        .map_err(|e| db_err(&format!("loading sbtest{n}"), e))?;
    Ok(())
}

/// What the published fillfactor studies did to existing tables: set the
/// fillfactor, store c and pad PLAIN (uncompressed, in line), and rewrite
/// with VACUUM FULL ANALYZE so the new fillfactor applies to every page.
/// `progress(table)` is called after each table.
pub async fn alter_fillfactor(
    conninfo: &str,
    schema: &str,
    tables: u32,
    fillfactor: u8,
    mut progress: impl FnMut(&str),
) -> Result<(), DbError> {
    let client = connect(conninfo).await?;
    let existing = existing_tables(&client, schema, &table_names(tables)).await?;
    if existing.len() != tables as usize {
        return Err(DbError::other(format!(
            "tables {schema}.sbtest1..sbtest{tables} are missing: run `csdchar db prepare` first"
        )));
    }
    for t in existing.iter().map(|t| format!("{schema}.{t}")) {
        let t = &t;
        let alter = format!(
            "ALTER TABLE {t} SET (fillfactor={fillfactor}); \
             ALTER TABLE {t} ALTER COLUMN c SET STORAGE PLAIN, ALTER COLUMN pad SET STORAGE PLAIN"
        );
        client
            .batch_execute(&alter)
            .await
            .map_err(|e| db_err(&format!("altering {t}"), e))?;
        // Alone: several statements in one query form a transaction, and VACUUM refuses those.
        client
            .batch_execute(&format!("VACUUM FULL ANALYZE {t}"))
            .await
            .map_err(|e| db_err(&format!("rewriting {t}"), e))?;
        progress(t);
    }
    Ok(())
}

/// Drops the tables the workload creates (`schema`.sbtest1..N) and nothing
/// else; returns those dropped.
pub async fn cleanup(conninfo: &str, schema: &str, tables: u32) -> Result<Vec<String>, DbError> {
    drop_tables(conninfo, schema, &table_names(tables)).await
}

fn key(s: OltpStatement) -> &'static str {
    match s {
        OltpStatement::Begin => "begin",
        OltpStatement::Commit => "commit",
        OltpStatement::PointSelect => "point",
        OltpStatement::SimpleRange => "simple",
        OltpStatement::SumRange => "sum",
        OltpStatement::OrderRange => "order",
        OltpStatement::DistinctRange => "distinct",
        OltpStatement::IndexUpdate => "index_update",
        OltpStatement::NonIndexUpdate => "non_index_update",
        OltpStatement::Delete => "delete",
        OltpStatement::InsertWithId => "insert_id",
        OltpStatement::Insert => "insert",
    }
}

/// Every statement kind, in `OltpStatement` order.
const KINDS: usize = 12;

/// SQLSTATEs sysbench ignores: roll back, count, restart the transaction.
pub const SYSBENCH_RETRY: &[&str] = &["40P01", "23505", "40001"];

/// sysbench's script as a runner workload: every statement the script uses,
/// prepared for every table, like sysbench does.
pub fn workload(spec: &OltpSpec) -> Workload {
    let plan = transaction_plan(spec.workload, &spec.options);
    let mut needed: Vec<OltpStatement> = plan.iter().map(|g| g.statement).collect();
    if needed.contains(&OltpStatement::Delete) && spec.workload != OltpWorkload::Delete {
        needed.push(OltpStatement::InsertWithId);
    }
    needed.dedup();
    let mut statements = StatementSet::default();
    // ids[table - 1][kind]; BEGIN and COMMIT are table-independent: prepared once.
    let mut ids = vec![[usize::MAX; KINDS]; spec.tables as usize];
    let mut shared = [usize::MAX; KINDS];
    for n in 1..=spec.tables {
        for &s in &needed {
            let id = match s {
                OltpStatement::Begin | OltpStatement::Commit => {
                    if shared[s as usize] == usize::MAX {
                        shared[s as usize] = statements.push(key(s).to_string(), s.sql(n));
                    }
                    shared[s as usize]
                }
                _ => statements.push(format!("{}_{n}", key(s)), s.sql(n)),
            };
            ids[n as usize - 1][s as usize] = id;
        }
    }
    let spec2 = spec.clone();
    let ids = Arc::new(ids);
    Workload {
        statements,
        sources: Box::new(move || {
            Box::new(OltpSource {
                strings: OltpStrings::new(
                    spec2.string_dup,
                    &mut Xoshiro256PlusPlus::seed_from_u64(spec2.seed),
                ),
                plan: transaction_plan(spec2.workload, &spec2.options),
                spec: spec2.clone(),
                ids: Arc::clone(&ids),
            })
        }),
        retry_codes: SYSBENCH_RETRY,
        rollback_codes: &[],
        abandon_codes: &[],
        keeps_rows: false,
        kinds: Vec::new(),
        protocol: Protocol::Prepared,
        seed: spec.seed,
        sessions: None,
    }
}

/// One client's sysbench event generator.
struct OltpSource {
    spec: OltpSpec,
    plan: Vec<StatementGroup>,
    strings: OltpStrings,
    ids: Arc<Vec<[usize; KINDS]>>,
}

impl EventSource for OltpSource {
    /// One transaction of the plan, drawn in the order sysbench draws: one
    /// random table per statement group.
    fn draw(&mut self, rng: &mut Xoshiro256PlusPlus, ev: &mut Event) {
        let spec = &self.spec;
        let strings = &self.strings;
        let id = |rng: &mut Xoshiro256PlusPlus| {
            Param::Int(rand_id(rng, spec.rand_type, spec.table_size) as i64)
        };
        for g in &self.plan {
            let table = (rand_id(rng, RandType::Uniform, u64::from(spec.tables)) - 1) as usize;
            let ids = &self.ids[table];
            let st = ids[g.statement as usize];
            for _ in 0..g.count {
                match g.statement {
                    OltpStatement::Begin | OltpStatement::Commit => ev.push(st, &[]),
                    OltpStatement::PointSelect
                    | OltpStatement::IndexUpdate
                    | OltpStatement::Delete => {
                        let row = id(rng);
                        ev.push(st, std::slice::from_ref(&row));
                        if g.statement == OltpStatement::Delete
                            && spec.workload != OltpWorkload::Delete
                        {
                            // sysbench re-inserts the deleted id.
                            let p = [
                                row,
                                id(rng),
                                Param::Text(strings.c(rng)),
                                Param::Text(strings.pad(rng)),
                            ];
                            ev.push(ids[OltpStatement::InsertWithId as usize], &p);
                        }
                    }
                    OltpStatement::SimpleRange
                    | OltpStatement::SumRange
                    | OltpStatement::OrderRange
                    | OltpStatement::DistinctRange => {
                        let lo = rand_id(rng, spec.rand_type, spec.table_size) as i64;
                        let hi = lo + spec.range_size as i64 - 1;
                        ev.push(st, &[Param::Int(lo), Param::Int(hi)]);
                    }
                    OltpStatement::NonIndexUpdate => {
                        let c = Param::Text(strings.c(rng));
                        let p = [c, id(rng)];
                        ev.push(st, &p);
                    }
                    OltpStatement::Insert => {
                        let p = [
                            id(rng),
                            Param::Text(strings.c(rng)),
                            Param::Text(strings.pad(rng)),
                        ];
                        ev.push(st, &p);
                    }
                    OltpStatement::InsertWithId => {}
                }
            }
        }
        if self.plan.first().map(|g| g.statement) == Some(OltpStatement::Begin)
            && self.plan.len() > 2
        {
            ev.set_block();
        }
    }
}
