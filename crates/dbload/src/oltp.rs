//! sysbench-compatible OLTP on PostgreSQL: prepare (tables loaded with COPY
//! over parallel connections), run (one connection per client, prepared
//! statements, sysbench's counting and retry rules), cleanup (only the tables
//! the workload creates).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use csdchar_core::oltp::{
    OltpOptions, OltpStatement, OltpStrings, OltpWorkload, QueryClass, RandType, classify,
    create_secondary_sql, create_table_sql, rand_id, transaction_plan,
};
use csdchar_core::stats::{LatencyRecorder, LatencyStats};
use futures_util::SinkExt;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls, Statement};

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
}

/// A database failure, in plain words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DbError(pub String);

fn db_err(what: &str, e: tokio_postgres::Error) -> DbError {
    match e.as_db_error() {
        Some(d) => DbError(format!("{what}: {} ({})", d.message(), d.code().code())),
        None => DbError(format!("{what}: {e}")),
    }
}

/// Connects; a refused connection names host and port, never a password.
pub async fn connect(conninfo: &str) -> Result<Client, DbError> {
    let (client, conn) = tokio_postgres::connect(conninfo, NoTls)
        .await
        .map_err(|e| {
            let cfg: Option<tokio_postgres::Config> = conninfo.parse().ok();
            let target = cfg
                .map(|c| {
                    let host = c.get_hosts().first().map_or("?".to_string(), |h| match h {
                        tokio_postgres::config::Host::Tcp(s) => s.clone(),
                        tokio_postgres::config::Host::Unix(p) => p.display().to_string(),
                    });
                    format!("{host}:{}", c.get_ports().first().copied().unwrap_or(5432))
                })
                .unwrap_or_else(|| "the server".into());
            DbError(format!("cannot connect to {target}: {e}"))
        })?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// Names of the tables of `spec` that exist already.
pub async fn existing_tables(client: &Client, tables: u32) -> Result<Vec<String>, DbError> {
    let names: Vec<String> = (1..=tables).map(|n| format!("sbtest{n}")).collect();
    let rows = client
        .query("SELECT relname::text FROM pg_class WHERE relkind = 'r' AND relname = ANY($1) ORDER BY relname", &[&names])
        .await
        .map_err(|e| db_err("listing tables", e))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Creates and loads the tables, `threads` at a time; `progress(rows)` is
/// called as rows are loaded. Refuses existing tables unless `force`.
pub async fn prepare(
    conninfo: &str,
    spec: &OltpSpec,
    threads: u32,
    force: bool,
    progress: Arc<dyn Fn(u64) + Send + Sync>,
) -> Result<(), DbError> {
    let admin = connect(conninfo).await?;
    let existing = existing_tables(&admin, spec.tables).await?;
    if !existing.is_empty() {
        if !force {
            return Err(DbError(format!(
                "tables exist already ({}); run `csdchar db cleanup` or pass --force",
                existing.join(", ")
            )));
        }
        cleanup(conninfo, spec.tables).await?;
    }
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
            .map_err(|e| DbError(format!("loader task failed: {e}")))??;
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
    client
        .batch_execute(&create_table_sql(n, true, spec.fillfactor))
        .await
        .map_err(|e| db_err(&format!("creating sbtest{n}"), e))?;
    let sink = client
        .copy_in::<_, std::io::Cursor<Vec<u8>>>(&format!("COPY sbtest{n} (k, c, pad) FROM STDIN"))
        .await
        .map_err(|e| db_err("COPY", e))?;
    futures_util::pin_mut!(sink);
    let mut buf = String::with_capacity(1 << 20);
    let mut pending = 0u64;
    for _ in 0..spec.table_size {
        // Like sysbench, k follows --rand-type even while loading.
        let k = rand_id(rng, spec.rand_type, spec.table_size);
        buf.push_str(&format!("{k}\t{}\t{}\n", strings.c(rng), strings.pad(rng)));
        pending += 1;
        if buf.len() > (1 << 20) - 256 {
            sink.send(bytes_of(&mut buf))
                .await
                .map_err(|e| db_err("COPY", e))?;
            progress(pending);
            pending = 0;
        }
    }
    if !buf.is_empty() {
        sink.send(bytes_of(&mut buf))
            .await
            .map_err(|e| db_err("COPY", e))?;
    }
    sink.finish().await.map_err(|e| db_err("COPY", e))?;
    progress(pending);
    if spec.create_secondary {
        client
            .batch_execute(&create_secondary_sql(n))
            .await
            .map_err(|e| db_err(&format!("indexing sbtest{n}"), e))?;
    }
    Ok(())
}

fn bytes_of(buf: &mut String) -> std::io::Cursor<Vec<u8>> {
    std::io::Cursor::new(std::mem::take(buf).into_bytes())
}

/// What the published fillfactor studies did to existing tables: set the
/// fillfactor, store c and pad PLAIN (uncompressed, in line), and rewrite
/// with VACUUM FULL ANALYZE so the new fillfactor applies to every page.
/// `progress(table)` is called after each table.
pub async fn alter_fillfactor(
    conninfo: &str,
    tables: u32,
    fillfactor: u8,
    mut progress: impl FnMut(&str),
) -> Result<(), DbError> {
    let client = connect(conninfo).await?;
    let existing = existing_tables(&client, tables).await?;
    if existing.len() != tables as usize {
        return Err(DbError(format!(
            "tables sbtest1..sbtest{tables} are missing: run `csdchar db prepare` first"
        )));
    }
    for t in &existing {
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

/// Drops the tables the workload creates (sbtest1..N) and nothing else.
pub async fn cleanup(conninfo: &str, tables: u32) -> Result<u32, DbError> {
    let client = connect(conninfo).await?;
    let existing = existing_tables(&client, tables).await?;
    for t in &existing {
        client
            .batch_execute(&format!("DROP TABLE IF EXISTS {t}"))
            .await
            .map_err(|e| db_err(&format!("dropping {t}"), e))?;
    }
    Ok(existing.len() as u32)
}

/// SQLSTATEs sysbench ignores: roll back, count, restart the transaction.
fn ignorable(e: &tokio_postgres::Error) -> Option<&'static str> {
    let code = e.code()?;
    if *code == SqlState::T_R_DEADLOCK_DETECTED {
        Some("40P01")
    } else if *code == SqlState::UNIQUE_VIOLATION {
        Some("23505")
    } else if *code == SqlState::T_R_SERIALIZATION_FAILURE {
        Some("40001")
    } else {
        None
    }
}

/// Counts of one client or one interval.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Transactions (events) completed.
    pub transactions: u64,
    /// Statements that returned rows.
    pub reads: u64,
    /// Statements that changed rows.
    pub writes: u64,
    /// Everything else (BEGIN, COMMIT, ROLLBACK, updates that matched nothing).
    pub others: u64,
    /// Ignored errors by SQLSTATE.
    pub errors: BTreeMap<String, u64>,
    /// Reconnects.
    pub reconnects: u64,
}

impl Tally {
    fn merge(&mut self, o: &Tally) {
        self.transactions += o.transactions;
        self.reads += o.reads;
        self.writes += o.writes;
        self.others += o.others;
        for (k, v) in &o.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
        self.reconnects += o.reconnects;
    }

    fn count(&mut self, c: QueryClass) {
        match c {
            QueryClass::Read => self.reads += 1,
            QueryClass::Write => self.writes += 1,
            QueryClass::Other => self.others += 1,
        }
    }

    /// All ignored errors.
    pub fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// One client's counters, read by the reporter at every interval.
struct ClientStats {
    total: Tally,
    interval: Tally,
    lat: LatencyRecorder,
    interval_lat: LatencyRecorder,
}

/// One interval of a run, all clients together.
#[derive(Debug, Clone)]
pub struct OltpInterval {
    /// Seconds since the run started, at the end of the interval.
    pub t_s: f64,
    /// Interval length, seconds.
    pub duration_s: f64,
    /// Counts in the interval.
    pub tally: Tally,
    /// Latency percentile of the interval's transactions, ms (sysbench's "lat (ms,95%)").
    pub lat_pct_ms: f64,
}

/// Totals of a run.
#[derive(Debug, Clone)]
pub struct OltpOutcome {
    /// Clients.
    pub threads: u32,
    /// Measured time, seconds.
    pub elapsed_s: f64,
    /// Totals.
    pub tally: Tally,
    /// Transaction latency (ns), retries included.
    pub latency: LatencyStats,
    /// The interval series.
    pub intervals: Vec<OltpInterval>,
    /// The error that stopped the run early, if any.
    pub error: Option<String>,
}

struct Prepared {
    by_table: Vec<BTreeMap<&'static str, Statement>>,
    begin: Statement,
    commit: Statement,
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

async fn prepare_statements(
    client: &Client,
    spec: &OltpSpec,
) -> Result<Prepared, tokio_postgres::Error> {
    let plan = transaction_plan(spec.workload, &spec.options);
    let mut needed: Vec<OltpStatement> = plan.iter().map(|g| g.statement).collect();
    if needed.contains(&OltpStatement::Delete) && spec.workload != OltpWorkload::Delete {
        needed.push(OltpStatement::InsertWithId);
    }
    needed.retain(|s| !matches!(s, OltpStatement::Begin | OltpStatement::Commit));
    let mut by_table = Vec::new();
    for n in 1..=spec.tables {
        let mut m = BTreeMap::new();
        for s in &needed {
            m.insert(key(*s), client.prepare(&s.sql(n)).await?);
        }
        by_table.push(m);
    }
    Ok(Prepared {
        by_table,
        begin: client.prepare("BEGIN").await?,
        commit: client.prepare("COMMIT").await?,
    })
}

/// How long and how wide a run step is.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Clients.
    pub threads: u32,
    /// Length of the step.
    pub time: Duration,
    /// Interval of the series and of `on_interval` calls; None: one per second, no calls.
    pub report_interval: Option<Duration>,
    /// Percentile of the interval latency figure.
    pub percentile: f64,
    /// Set on Ctrl-C: clients stop after their current transaction.
    pub interrupt: Arc<AtomicBool>,
}

/// Runs `spec` as `settings` say, calling `on_interval` every report interval.
pub async fn run(
    conninfo: &str,
    spec: &OltpSpec,
    settings: &RunSettings,
    mut on_interval: impl FnMut(&OltpInterval, u32),
) -> Result<OltpOutcome, DbError> {
    let RunSettings {
        threads,
        time,
        report_interval,
        percentile,
        ref interrupt,
    } = *settings;
    // One OS thread per client with its own single-threaded runtime: the
    // client and its connection task never wake each other across threads.
    // Everyone connects and prepares first, as sysbench does before its clock starts.
    let halt = Arc::new(AtomicBool::new(false));
    let error: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let gate = Arc::new(std::sync::Barrier::new(threads as usize + 1));
    let clock: Arc<std::sync::OnceLock<Instant>> = Arc::new(std::sync::OnceLock::new());
    let mut stats = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..threads as usize {
        let st = Arc::new(Mutex::new(ClientStats {
            total: Tally::default(),
            interval: Tally::default(),
            lat: LatencyRecorder::precise(),
            interval_lat: LatencyRecorder::coarse(),
        }));
        stats.push(Arc::clone(&st));
        let (spec, halt, interrupt, error, gate, clock, conninfo) = (
            spec.clone(),
            Arc::clone(&halt),
            Arc::clone(interrupt),
            Arc::clone(&error),
            Arc::clone(&gate),
            Arc::clone(&clock),
            conninfo.to_string(),
        );
        tasks.push(std::thread::spawn(move || {
            let fail = |m: String| {
                error.lock().expect("not poisoned").get_or_insert(m);
                halt.store(true, Ordering::Relaxed);
            };
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    fail(format!("client runtime: {e}"));
                    gate.wait();
                    gate.wait();
                    return;
                }
            };
            rt.block_on(async {
                let ready = async {
                    let c = connect(&conninfo).await?;
                    let p = prepare_statements(&c, &spec)
                        .await
                        .map_err(|e| db_err("preparing statements", e))?;
                    Ok::<_, DbError>((c, p))
                }
                .await;
                // First meeting: connected; second: the clock is set.
                gate.wait();
                gate.wait();
                let (client, prepared) = match ready {
                    Ok(x) => x,
                    Err(e) => return fail(e.0),
                };
                let deadline = *clock.get().expect("set before the gate opens") + time;
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(
                    spec.seed ^ (i as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F),
                );
                let strings = OltpStrings::new(
                    spec.string_dup,
                    &mut Xoshiro256PlusPlus::seed_from_u64(spec.seed),
                );
                let plan = transaction_plan(spec.workload, &spec.options);
                while Instant::now() < deadline
                    && !halt.load(Ordering::Relaxed)
                    && !interrupt.load(Ordering::Relaxed)
                {
                    let t0 = Instant::now();
                    let mut local = Tally::default();
                    loop {
                        match run_event(
                            &client, &prepared, &spec, &plan, &strings, &mut rng, &mut local,
                        )
                        .await
                        {
                            Ok(()) => break,
                            Err(e) => match ignorable(&e) {
                                Some(code) => {
                                    *local.errors.entry(code.to_string()).or_default() += 1;
                                    if client.batch_execute("ROLLBACK").await.is_ok() {
                                        local.others += 1;
                                    }
                                }
                                None => return fail(db_err("transaction", e).0),
                            },
                        }
                    }
                    local.transactions += 1;
                    let ns = t0.elapsed().as_nanos() as u64;
                    let mut s = st.lock().expect("not poisoned");
                    s.total.merge(&local);
                    s.interval.merge(&local);
                    s.lat.record(ns);
                    s.interval_lat.record(ns);
                }
            });
        }));
    }
    // The clock starts when every client is connected (or has failed to).
    let start = {
        let (gate, clock) = (Arc::clone(&gate), Arc::clone(&clock));
        tokio::task::spawn_blocking(move || {
            gate.wait();
            let start = *clock.get_or_init(Instant::now);
            gate.wait();
            start
        })
        .await
        .map_err(|e| DbError(format!("client start: {e}")))?
    };
    // Reporter: sysbench-style interval lines.
    let mut intervals = Vec::new();
    let mut last = start;
    let tick = report_interval.unwrap_or(Duration::from_secs(1));
    while tasks.iter().any(|t| !t.is_finished()) {
        tokio::time::sleep(Duration::from_millis(20).min(tick)).await;
        let now = Instant::now();
        let finished = tasks.iter().all(|t| t.is_finished());
        if now.duration_since(last) >= tick || finished {
            let mut tally = Tally::default();
            let mut lat = LatencyRecorder::coarse();
            for s in &stats {
                let mut s = s.lock().expect("not poisoned");
                tally.merge(&s.interval);
                lat.merge(&s.interval_lat);
                s.interval = Tally::default();
                s.interval_lat.reset();
            }
            let iv = OltpInterval {
                t_s: now.duration_since(start).as_secs_f64(),
                duration_s: now.duration_since(last).as_secs_f64(),
                tally,
                lat_pct_ms: lat.percentile(percentile) as f64 / 1e6,
            };
            if report_interval.is_some() {
                on_interval(&iv, threads);
            }
            intervals.push(iv);
            last = now;
        }
    }
    for t in tasks {
        let _ = t.join();
    }
    let elapsed = start
        .elapsed()
        .as_secs_f64()
        .min(time.as_secs_f64().max(0.001) + 1.0);
    let mut tally = Tally::default();
    let mut lat = LatencyRecorder::precise();
    for s in &stats {
        let s = s.lock().expect("not poisoned");
        tally.merge(&s.total);
        lat.merge(&s.lat);
    }
    Ok(OltpOutcome {
        threads,
        elapsed_s: elapsed,
        tally,
        latency: {
            let mut ps = vec![50.0, 95.0, 99.0];
            if !ps.iter().any(|p| (p - percentile).abs() < 1e-9) {
                ps.push(percentile);
                ps.sort_by(f64::total_cmp);
            }
            lat.summary(&ps)
        },
        intervals,
        error: error.lock().expect("not poisoned").clone(),
    })
}

/// One transaction of the plan, sysbench's way: one random table per group.
async fn run_event(
    client: &Client,
    p: &Prepared,
    spec: &OltpSpec,
    plan: &[csdchar_core::oltp::StatementGroup],
    strings: &OltpStrings,
    rng: &mut Xoshiro256PlusPlus,
    t: &mut Tally,
) -> Result<(), tokio_postgres::Error> {
    let id = |rng: &mut Xoshiro256PlusPlus| rand_id(rng, spec.rand_type, spec.table_size) as i32;
    for g in plan {
        let table = (rand_id(rng, RandType::Uniform, u64::from(spec.tables)) - 1) as usize;
        let stmts = &p.by_table[table];
        for _ in 0..g.count {
            let class = match g.statement {
                OltpStatement::Begin => classify(false, client.execute(&p.begin, &[]).await?),
                OltpStatement::Commit => classify(false, client.execute(&p.commit, &[]).await?),
                OltpStatement::PointSelect => {
                    let rows = client.query(&stmts["point"], &[&id(rng)]).await?;
                    classify(true, rows.len() as u64)
                }
                OltpStatement::SimpleRange
                | OltpStatement::SumRange
                | OltpStatement::OrderRange
                | OltpStatement::DistinctRange => {
                    let lo = id(rng);
                    let hi = lo + spec.range_size as i32 - 1;
                    client.query(&stmts[key(g.statement)], &[&lo, &hi]).await?;
                    QueryClass::Read
                }
                OltpStatement::IndexUpdate => classify(
                    false,
                    client.execute(&stmts["index_update"], &[&id(rng)]).await?,
                ),
                OltpStatement::NonIndexUpdate => {
                    let c = strings.c(rng);
                    classify(
                        false,
                        client
                            .execute(&stmts["non_index_update"], &[&c, &id(rng)])
                            .await?,
                    )
                }
                OltpStatement::Delete => {
                    let row = id(rng);
                    let deleted = client.execute(&stmts["delete"], &[&row]).await?;
                    t.count(classify(false, deleted));
                    if spec.workload == OltpWorkload::Delete {
                        continue;
                    }
                    let (k, c, pad) = (id(rng), strings.c(rng), strings.pad(rng));
                    classify(
                        false,
                        client
                            .execute(&stmts["insert_id"], &[&row, &k, &c, &pad])
                            .await?,
                    )
                }
                OltpStatement::InsertWithId => continue,
                OltpStatement::Insert => {
                    let (k, c, pad) = (id(rng), strings.c(rng), strings.pad(rng));
                    classify(
                        false,
                        client.execute(&stmts["insert"], &[&k, &c, &pad]).await?,
                    )
                }
            };
            t.count(class);
        }
    }
    Ok(())
}
