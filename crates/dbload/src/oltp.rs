//! sysbench-compatible OLTP on PostgreSQL: prepare (tables loaded with COPY
//! over parallel connections), run (one connection per client, prepared
//! statements, sysbench's counting and retry rules), cleanup (only the tables
//! the workload creates).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use csdchar_core::oltp::{
    OltpOptions, OltpStatement, OltpStrings, OltpWorkload, QueryClass, RandType, StatementGroup,
    classify, create_secondary_sql, create_table_sql, rand_id, transaction_plan,
};
use csdchar_core::stats::{LatencyRecorder, LatencyStats};
use futures_util::SinkExt;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use tokio_postgres::{Client, NoTls};

use crate::conn::{ConnTarget, ProcessEnv};
use crate::wire::{Param, Reply, WireConn, WireError};

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

/// Connects (tokio-postgres, for everything but the measured loop); a
/// refused connection names host and port, never a password.
pub async fn connect(conninfo: &str) -> Result<Client, DbError> {
    let target = ConnTarget::parse(conninfo, &ProcessEnv).map_err(DbError)?;
    let (client, conn) = target
        .config()
        .connect(NoTls)
        .await
        .map_err(|e| DbError(format!("cannot connect to {}: {e}", target.describe())))?;
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
fn ignorable(code: &str) -> bool {
    matches!(code, "40P01" | "23505" | "40001")
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

/// Every statement kind, in `OltpStatement` order (names are indexed by `s as usize`).
const KINDS: usize = 12;

/// Prepared-statement names of one client, `[table - 1][statement as usize]`,
/// and the SQL to prepare them with.
struct StatementSet {
    names: Vec<Vec<String>>,
    to_prepare: Vec<(String, String)>,
}

impl StatementSet {
    /// Like sysbench: every statement the script uses, prepared for every table.
    fn new(spec: &OltpSpec) -> StatementSet {
        let plan = transaction_plan(spec.workload, &spec.options);
        let mut needed: Vec<OltpStatement> = plan.iter().map(|g| g.statement).collect();
        if needed.contains(&OltpStatement::Delete) && spec.workload != OltpWorkload::Delete {
            needed.push(OltpStatement::InsertWithId);
        }
        needed.dedup();
        let mut to_prepare = Vec::new();
        let mut names = Vec::new();
        for n in 1..=spec.tables {
            let mut row = vec![String::new(); KINDS];
            for &s in &needed {
                let name = match s {
                    // Table-independent: prepared once.
                    OltpStatement::Begin | OltpStatement::Commit => key(s).to_string(),
                    _ => format!("{}_{n}", key(s)),
                };
                if n == 1 || !matches!(s, OltpStatement::Begin | OltpStatement::Commit) {
                    to_prepare.push((name.clone(), s.sql(n)));
                }
                row[s as usize] = name;
            }
            names.push(row);
        }
        StatementSet { names, to_prepare }
    }
}

/// One statement of an event: which, on which table, with which parameters.
struct Call {
    statement: OltpStatement,
    table: usize,
    params: std::ops::Range<usize>,
}

/// One event (transaction) drawn in advance: the random draws happen in the
/// order sysbench makes them, and nothing depends on an earlier statement's result.
#[derive(Default)]
struct Event {
    calls: Vec<Call>,
    params: Vec<Param>,
}

impl Event {
    fn push(&mut self, statement: OltpStatement, table: usize, params: &[Param]) {
        let start = self.params.len();
        self.params.extend_from_slice(params);
        self.calls.push(Call {
            statement,
            table,
            params: start..self.params.len(),
        });
    }

    /// Draws one transaction of `plan`: one random table per statement group.
    fn draw(
        &mut self,
        spec: &OltpSpec,
        plan: &[StatementGroup],
        strings: &OltpStrings,
        rng: &mut Xoshiro256PlusPlus,
    ) {
        self.calls.clear();
        self.params.clear();
        let id = |rng: &mut Xoshiro256PlusPlus| {
            Param::Int(rand_id(rng, spec.rand_type, spec.table_size) as i64)
        };
        for g in plan {
            let table = (rand_id(rng, RandType::Uniform, u64::from(spec.tables)) - 1) as usize;
            for _ in 0..g.count {
                match g.statement {
                    OltpStatement::Begin | OltpStatement::Commit => {
                        self.push(g.statement, table, &[])
                    }
                    OltpStatement::PointSelect
                    | OltpStatement::IndexUpdate
                    | OltpStatement::Delete => {
                        let row = id(rng);
                        self.push(g.statement, table, std::slice::from_ref(&row));
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
                            self.push(OltpStatement::InsertWithId, table, &p);
                        }
                    }
                    OltpStatement::SimpleRange
                    | OltpStatement::SumRange
                    | OltpStatement::OrderRange
                    | OltpStatement::DistinctRange => {
                        let lo = rand_id(rng, spec.rand_type, spec.table_size) as i64;
                        let hi = lo + spec.range_size as i64 - 1;
                        self.push(g.statement, table, &[Param::Int(lo), Param::Int(hi)]);
                    }
                    OltpStatement::NonIndexUpdate => {
                        let c = Param::Text(strings.c(rng));
                        let p = [c, id(rng)];
                        self.push(g.statement, table, &p);
                    }
                    OltpStatement::Insert => {
                        let p = [
                            id(rng),
                            Param::Text(strings.c(rng)),
                            Param::Text(strings.pad(rng)),
                        ];
                        self.push(g.statement, table, &p);
                    }
                    OltpStatement::InsertWithId => {}
                }
            }
        }
    }

    /// A BEGIN … COMMIT block of several statements: safe to pipeline,
    /// because an error makes the server skip the rest up to the Sync.
    fn is_block(&self) -> bool {
        self.calls.len() > 2
            && self.calls.first().map(|c| c.statement) == Some(OltpStatement::Begin)
            && self.calls.last().map(|c| c.statement) == Some(OltpStatement::Commit)
    }

    /// Runs the event: one round trip per statement as sysbench does, or the
    /// whole block in one when `pipeline`. Completed statements are counted.
    fn execute(
        &self,
        conn: &mut WireConn,
        set: &StatementSet,
        pipeline: bool,
        t: &mut Tally,
    ) -> Result<(), WireError> {
        let name = |c: &Call| set.names[c.table][c.statement as usize].as_str();
        if pipeline && self.is_block() {
            for c in &self.calls {
                conn.queue(name(c), &self.params[c.params.clone()])?;
            }
            return settle(conn.sync()?, t);
        }
        for c in &self.calls {
            conn.queue(name(c), &self.params[c.params.clone()])?;
            settle(conn.sync()?, t)?;
        }
        Ok(())
    }
}

/// Counts what completed the way sysbench does; the first error, if any, fails the event.
fn settle(reply: Reply<'_>, t: &mut Tally) -> Result<(), WireError> {
    for c in reply.completed {
        t.count(classify(c.returned_rows, c.rows));
    }
    match reply.error {
        Some((code, message)) => Err(WireError::Db { code, message }),
        None => Ok(()),
    }
}

/// Connects one client and prepares its statements.
fn open_client(
    target: &ConnTarget,
    set: &StatementSet,
    abort: &Arc<AtomicBool>,
) -> Result<WireConn, WireError> {
    let mut conn = WireConn::connect(target, Some(Arc::clone(abort)))?;
    conn.prepare(&set.to_prepare)?;
    Ok(conn)
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
    /// Latency percentiles of the summary; the first is the interval figure's.
    pub percentiles: Vec<f64>,
    /// Send BEGIN … COMMIT blocks in one round trip.
    pub pipeline: bool,
    /// Reconnect after a lost connection instead of ending the run.
    pub reconnect: bool,
    /// Set on Ctrl-C: clients stop after their current transaction.
    pub interrupt: Arc<AtomicBool>,
}

/// Where clients wait until all are connected; then the clock starts.
#[derive(Default)]
struct StartGate {
    state: Mutex<GateState>,
    changed: std::sync::Condvar,
}

#[derive(Default)]
struct GateState {
    arrived: usize,
    start: Option<Instant>,
    called_off: bool,
}

impl StartGate {
    /// A client is ready (or has failed to connect); returns the start, or None if called off.
    fn arrive(&self) -> Option<Instant> {
        let mut s = self.state.lock().expect("not poisoned");
        s.arrived += 1;
        self.changed.notify_all();
        let s = self
            .changed
            .wait_while(s, |s| s.start.is_none() && !s.called_off)
            .expect("not poisoned");
        if s.called_off { None } else { s.start }
    }

    /// Waits for `clients` arrivals, starts the clock and lets everyone go.
    fn open_when(&self, clients: usize) -> Instant {
        let s = self.state.lock().expect("not poisoned");
        let mut s = self
            .changed
            .wait_while(s, |s| s.arrived < clients)
            .expect("not poisoned");
        let start = Instant::now();
        s.start = Some(start);
        self.changed.notify_all();
        start
    }

    /// Releases the waiting clients without a run.
    fn call_off(&self) {
        self.state.lock().expect("not poisoned").called_off = true;
        self.changed.notify_all();
    }
}

/// Why one client stopped before the end of the step.
enum ClientEnd {
    /// Deadline, Ctrl-C, or another client's failure.
    Normal,
    /// A fatal error: the run ends with it.
    Failed(String),
}

/// Runs `spec` as `settings` say, calling `on_interval` every report interval.
pub async fn run(
    conninfo: &str,
    spec: &OltpSpec,
    settings: &RunSettings,
    mut on_interval: impl FnMut(&OltpInterval, u32),
) -> Result<OltpOutcome, DbError> {
    let target = ConnTarget::parse(conninfo, &ProcessEnv).map_err(DbError)?;
    let threads = settings.threads;
    let report_interval = settings.report_interval;
    let interval_pct = settings.percentiles.first().copied().unwrap_or(95.0);
    // One OS thread per client on a blocking socket (see wire.rs). Everyone
    // connects and prepares first, as sysbench does before its clock starts.
    let halt = Arc::new(AtomicBool::new(false));
    let error: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let gate = Arc::new(StartGate::default());
    let set = Arc::new(StatementSet::new(spec));
    // One precise histogram for all clients: 256 of them would cost ~70 MB.
    let total_lat = Arc::new(Mutex::new(LatencyRecorder::precise()));
    let mut stats = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..threads as usize {
        let st = Arc::new(Mutex::new(ClientStats {
            total: Tally::default(),
            interval: Tally::default(),
            interval_lat: LatencyRecorder::coarse(),
        }));
        stats.push(Arc::clone(&st));
        let (c_spec, c_settings, c_halt, error, c_gate, target, set) = (
            spec.clone(),
            settings.clone(),
            Arc::clone(&halt),
            Arc::clone(&error),
            Arc::clone(&gate),
            target.clone(),
            Arc::clone(&set),
        );
        let c_total_lat = Arc::clone(&total_lat);
        let client = move || {
            let ready = open_client(&target, &set, &c_settings.interrupt);
            let Some(start) = c_gate.arrive() else {
                return; // the run was called off before it started
            };
            let end = match ready {
                Ok(conn) => client_loop(
                    i,
                    conn,
                    &c_spec,
                    &c_settings,
                    &target,
                    &set,
                    &c_halt,
                    start,
                    &st,
                    &c_total_lat,
                ),
                Err(e) => ClientEnd::Failed(e.to_string()),
            };
            if let ClientEnd::Failed(m) = end {
                error.lock().expect("not poisoned").get_or_insert(m);
                c_halt.store(true, Ordering::Relaxed);
            }
        };
        // Small stacks: 256 clients must stay light.
        match std::thread::Builder::new()
            .name(format!("client-{i}"))
            .stack_size(256 * 1024)
            .spawn(client)
        {
            Ok(t) => tasks.push(t),
            Err(e) => {
                gate.call_off();
                return Err(DbError(format!("starting client thread {i}: {e}")));
            }
        }
    }
    // The clock starts when every client is connected (or has failed to).
    let start = {
        let gate = Arc::clone(&gate);
        tokio::task::spawn_blocking(move || gate.open_when(threads as usize))
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
                lat_pct_ms: lat.percentile(interval_pct) as f64 / 1e6,
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
        .min(settings.time.as_secs_f64().max(0.001) + 1.0);
    let mut tally = Tally::default();
    for s in &stats {
        let s = s.lock().expect("not poisoned");
        tally.merge(&s.total);
    }
    let mut ps = vec![50.0, 95.0, 99.0];
    for p in &settings.percentiles {
        if !ps.iter().any(|q| (q - p).abs() < 1e-9) {
            ps.push(*p);
        }
    }
    ps.sort_by(f64::total_cmp);
    Ok(OltpOutcome {
        threads,
        elapsed_s: elapsed,
        tally,
        latency: total_lat.lock().expect("not poisoned").summary(&ps),
        intervals,
        error: error.lock().expect("not poisoned").clone(),
    })
}

/// One client's events until the deadline, Ctrl-C or a fatal error.
#[allow(clippy::too_many_arguments)]
fn client_loop(
    i: usize,
    mut conn: WireConn,
    spec: &OltpSpec,
    settings: &RunSettings,
    target: &ConnTarget,
    set: &StatementSet,
    halt: &AtomicBool,
    start: Instant,
    st: &Mutex<ClientStats>,
    total_lat: &Mutex<LatencyRecorder>,
) -> ClientEnd {
    let deadline = start + settings.time;
    let interrupt = &settings.interrupt;
    let stopped = || halt.load(Ordering::Relaxed) || interrupt.load(Ordering::Relaxed);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(
        spec.seed ^ (i as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F),
    );
    let strings = OltpStrings::new(
        spec.string_dup,
        &mut Xoshiro256PlusPlus::seed_from_u64(spec.seed),
    );
    let plan = transaction_plan(spec.workload, &spec.options);
    let mut event = Event::default();
    while Instant::now() < deadline && !stopped() {
        let t0 = Instant::now();
        let mut local = Tally::default();
        loop {
            event.draw(spec, &plan, &strings, &mut rng);
            let err = match event.execute(&mut conn, set, settings.pipeline, &mut local) {
                Ok(()) => break,
                Err(e) => e,
            };
            let err = match err {
                WireError::Db { code, .. } if ignorable(&code) => {
                    *local.errors.entry(code).or_default() += 1;
                    match conn.simple("ROLLBACK") {
                        Ok(_) => {
                            local.others += 1;
                            continue;
                        }
                        Err(e) => e,
                    }
                }
                e => e,
            };
            match err {
                WireError::Lost(lost) if settings.reconnect => {
                    let mut last = lost.clone();
                    loop {
                        if stopped() {
                            return ClientEnd::Normal;
                        }
                        if Instant::now() >= deadline {
                            return ClientEnd::Failed(format!(
                                "{lost}; reconnecting did not succeed before the end of the step (last attempt: {last})"
                            ));
                        }
                        match open_client(target, set, interrupt) {
                            Ok(c) => {
                                conn = c;
                                local.reconnects += 1;
                                break;
                            }
                            Err(e) => last = e.to_string(),
                        }
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
                // Ctrl-C while waiting: the unfinished transaction is not counted.
                WireError::Aborted => return ClientEnd::Normal,
                WireError::Lost(m) => {
                    return ClientEnd::Failed(format!(
                        "connection to {} lost: {m} (pass --reconnect to resume after reconnecting)",
                        target.describe()
                    ));
                }
                e => return ClientEnd::Failed(format!("transaction: {e}")),
            }
        }
        local.transactions += 1;
        let ns = t0.elapsed().as_nanos() as u64;
        let mut s = st.lock().expect("not poisoned");
        s.total.merge(&local);
        s.interval.merge(&local);
        s.interval_lat.record(ns);
        drop(s);
        total_lat.lock().expect("not poisoned").record(ns);
    }
    ClientEnd::Normal
}
