//! The measured loop shared by every workload: one OS thread and one wire
//! connection per client, events (transactions) drawn in advance by the
//! workload, executed in the chosen protocol, counted, retried on the
//! workload's retryable SQLSTATEs, reported per interval.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use csdchar_core::oltp::{QueryClass, classify};
use csdchar_core::stats::{LatencyRecorder, LatencyStats};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::conn::{ConnTarget, ProcessEnv};
use crate::oltp::DbError;
use crate::wire::{Param, Reply, WireConn, WireError};

/// How statements travel (pgbench's `-M`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// A Query message with the values written into the SQL.
    Simple,
    /// Unnamed Parse, Bind, Execute every time.
    Extended,
    /// Named statements prepared once per connection (sysbench's way).
    Prepared,
}

impl Protocol {
    /// pgbench's name of the mode.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
            Protocol::Prepared => "prepared",
        }
    }
}

/// The statements a workload executes, by id: SQL with `$n` parameters and
/// the name each is prepared under.
#[derive(Debug, Default)]
pub struct StatementSet {
    sql: Vec<String>,
    names: Vec<String>,
}

impl StatementSet {
    /// Adds a statement; returns its id.
    pub fn push(&mut self, name: String, sql: String) -> usize {
        self.names.push(name);
        self.sql.push(sql);
        self.sql.len() - 1
    }

    fn to_prepare(&self) -> Vec<(String, String)> {
        self.names
            .iter()
            .cloned()
            .zip(self.sql.iter().cloned())
            .filter(|(n, _)| !n.is_empty())
            .collect()
    }
}

/// One statement of an event.
struct Call {
    statement: usize,
    params: std::ops::Range<usize>,
}

/// One event (transaction) drawn in advance: nothing in the built-in
/// workloads depends on an earlier statement's result.
#[derive(Default)]
pub struct Event {
    calls: Vec<Call>,
    params: Vec<Param>,
    block: bool,
    kind: usize,
}

impl Event {
    /// Empties the event for the next draw.
    pub fn clear(&mut self) {
        self.calls.clear();
        self.params.clear();
        self.block = false;
        self.kind = 0;
    }

    /// Sets the event's kind: an index into [`Workload::kinds`], counted and
    /// timed on its own (TPC-C's five transactions).
    pub fn set_kind(&mut self, kind: usize) {
        self.kind = kind;
    }

    /// Appends statement `statement` with `params`.
    pub fn push(&mut self, statement: usize, params: &[Param]) {
        let start = self.params.len();
        self.params.extend_from_slice(params);
        self.calls.push(Call {
            statement,
            params: start..self.params.len(),
        });
    }

    /// Marks the event as one BEGIN … COMMIT block, which `--pipeline` may
    /// send in one round trip: an error makes the server skip the rest up to the Sync.
    pub fn set_block(&mut self) {
        self.block = true;
    }

    /// Runs the event: one round trip per statement, or the whole block in
    /// one when `pipeline` (not in the simple protocol, as in pgbench).
    /// Completed statements are counted.
    fn execute(
        &self,
        conn: &mut WireConn,
        set: &StatementSet,
        protocol: Protocol,
        pipeline: bool,
        t: &mut Tally,
    ) -> Result<(), WireError> {
        let queue = |conn: &mut WireConn, c: &Call| {
            let params = &self.params[c.params.clone()];
            match protocol {
                Protocol::Prepared => conn.queue(&set.names[c.statement], params),
                Protocol::Extended => conn.queue_unnamed(&set.sql[c.statement], params),
                Protocol::Simple => conn.queue_simple(&literal_sql(&set.sql[c.statement], params)),
            }
        };
        if protocol == Protocol::Simple {
            for c in &self.calls {
                queue(conn, c)?;
                settle(conn.send_and_read()?, t)?;
            }
            return Ok(());
        }
        if pipeline && self.block {
            for c in &self.calls {
                queue(conn, c)?;
            }
            return settle(conn.sync()?, t);
        }
        for c in &self.calls {
            queue(conn, c)?;
            settle(conn.sync()?, t)?;
        }
        Ok(())
    }
}

/// `sql` with `$n` replaced by literals (simple protocol).
fn literal_sql(sql: &str, params: &[Param]) -> String {
    let mut out = String::with_capacity(sql.len() + 16 * params.len());
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let digits = rest[at + 1..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        let n: usize = rest[at + 1..at + 1 + digits].parse().unwrap_or(0);
        match params.get(n.wrapping_sub(1)) {
            Some(Param::Int(v)) => out.push_str(&v.to_string()),
            Some(Param::Text(s)) => {
                out.push('\'');
                out.push_str(&s.replace('\'', "''"));
                out.push('\'');
            }
            None => out.push_str(&rest[at..at + 1 + digits]),
        }
        rest = &rest[at + 1 + digits..];
    }
    out.push_str(rest);
    out
}

/// Draws a workload's events; one per client, seeded by the runner.
pub trait EventSource: Send {
    /// Fills `event` (cleared) with the next transaction.
    fn draw(&mut self, rng: &mut Xoshiro256PlusPlus, event: &mut Event);
}

/// Everything the runner needs to know about a workload.
pub struct Workload {
    /// The statements, prepared per connection in the prepared protocol.
    pub statements: StatementSet,
    /// Makes one client's event source.
    pub sources: Box<dyn Fn() -> Box<dyn EventSource> + Send + Sync>,
    /// SQLSTATEs after which the transaction is rolled back, counted and restarted.
    pub retry_codes: &'static [&'static str],
    /// SQLSTATEs that end a transaction as an intended rollback (TPC-C's 1%
    /// of New-Orders): counted as completed and as a rollback, not retried,
    /// not an error.
    pub rollback_codes: &'static [&'static str],
    /// Names of the event kinds ([`Event::set_kind`]), counted and timed on
    /// their own; empty for workloads with one kind.
    pub kinds: Vec<&'static str>,
    /// How statements travel.
    pub protocol: Protocol,
    /// Seed of the clients' random streams.
    pub seed: u64,
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
    /// Transactions that ended in an intended rollback (counted in `transactions` too).
    pub rollbacks: u64,
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
        self.rollbacks += o.rollbacks;
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
    /// Mean latency of the interval's transactions, ms (pgbench's progress "lat").
    pub lat_mean_ms: f64,
    /// Its standard deviation, ms (pgbench's "stddev").
    pub lat_stddev_ms: f64,
    /// Database misses next to device I/O over the interval, when sampled.
    pub io: Option<crate::iostat::IoRates>,
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
    /// Per event kind ([`Workload::kinds`]), in that order; empty for one-kind workloads.
    pub by_kind: Vec<KindOutcome>,
    /// Database misses next to device I/O over the measured time, when sampled.
    pub io: Option<crate::iostat::IoRates>,
}

/// Totals of one event kind.
#[derive(Debug, Clone)]
pub struct KindOutcome {
    /// The kind's name.
    pub name: &'static str,
    /// Transactions completed (rollbacks included).
    pub transactions: u64,
    /// Of those, intended rollbacks.
    pub rollbacks: u64,
    /// Their latency (ns), retries included.
    pub latency: LatencyStats,
}

/// Latency of every measured transaction, overall and per kind.
struct Latencies {
    total: LatencyRecorder,
    /// (transactions, rollbacks, latency) per kind.
    kinds: Vec<(u64, u64, LatencyRecorder)>,
}

/// Counts what completed, the way sysbench does; the first error, if any, fails the event.
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
    workload: &Workload,
    abort: &Arc<AtomicBool>,
) -> Result<WireConn, WireError> {
    let mut conn = WireConn::connect(target, Some(Arc::clone(abort)))?;
    if workload.protocol == Protocol::Prepared {
        conn.prepare(&workload.statements.to_prepare())?;
    }
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
    /// Run this long before the measured `time` starts; nothing done in it is counted.
    pub warmup: Duration,
    /// At most this many transactions per second, all clients together, each
    /// client on an even schedule; None: as fast as they go.
    pub rate: Option<f64>,
    /// Sample `pg_stat_database` and the data directory's drive at every
    /// interval and around the step (one more connection).
    pub io_sampling: bool,
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

/// Runs `workload` as `settings` say, calling `on_interval` every report interval.
pub async fn run(
    conninfo: &str,
    workload: Arc<Workload>,
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
    // One precise histogram for all clients: 256 of them would cost ~70 MB.
    let total_lat = Arc::new(Mutex::new(Latencies {
        total: LatencyRecorder::precise(),
        kinds: workload
            .kinds
            .iter()
            .map(|_| (0, 0, LatencyRecorder::precise()))
            .collect(),
    }));
    let mut stats = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..threads as usize {
        let st = Arc::new(Mutex::new(ClientStats {
            total: Tally::default(),
            interval: Tally::default(),
            interval_lat: LatencyRecorder::coarse(),
        }));
        stats.push(Arc::clone(&st));
        let (c_workload, c_settings, c_halt, error, c_gate, target) = (
            Arc::clone(&workload),
            settings.clone(),
            Arc::clone(&halt),
            Arc::clone(&error),
            Arc::clone(&gate),
            target.clone(),
        );
        let c_total_lat = Arc::clone(&total_lat);
        let client = move || {
            let ready = open_client(&target, &c_workload, &c_settings.interrupt);
            let Some(start) = c_gate.arrive() else {
                return; // the run was called off before it started
            };
            let end = match ready {
                Ok(conn) => client_loop(
                    i,
                    conn,
                    &c_workload,
                    &c_settings,
                    &target,
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
    // The clock starts when every client is connected (or has failed to),
    // and the measurement after the warm-up.
    let start = {
        let gate = Arc::clone(&gate);
        tokio::task::spawn_blocking(move || gate.open_when(threads as usize))
            .await
            .map_err(|e| DbError(format!("client start: {e}")))?
    } + settings.warmup;
    // The I/O sampler's own connection, opened while the clients warm up.
    let mut sampler = None;
    if settings.io_sampling
        && let Ok(client) = crate::oltp::connect(conninfo).await
    {
        let s = crate::iostat::IoSampler::new(&client).await;
        sampler = Some((client, s));
    }
    while Instant::now() < start && tasks.iter().any(|t| !t.is_finished()) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let first_io = match &mut sampler {
        Some((client, s)) => Some(s.sample(client).await),
        None => None,
    };
    let mut last_io = first_io.clone();
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
            let io = match (&mut sampler, &last_io) {
                (Some((client, s)), Some(prev)) => {
                    let now_io = s.sample(client).await;
                    let r = prev.rates(
                        &now_io,
                        now_io.taken.duration_since(prev.taken).as_secs_f64(),
                    );
                    last_io = Some(now_io);
                    Some(r)
                }
                _ => None,
            };
            let iv = OltpInterval {
                t_s: now.duration_since(start).as_secs_f64(),
                duration_s: now.duration_since(last).as_secs_f64(),
                tally,
                lat_pct_ms: lat.percentile(interval_pct) as f64 / 1e6,
                lat_mean_ms: lat.mean() / 1e6,
                lat_stddev_ms: lat.stddev() / 1e6,
                io,
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
    // The step's figures: after the clients' backends have published their
    // last counters (at exit), over the measured time.
    let io = match (&mut sampler, &first_io) {
        (Some((client, s)), Some(first)) => {
            crate::iostat::settle(client, Duration::from_secs(3)).await;
            let end = s.sample(client).await;
            let secs = start
                .elapsed()
                .as_secs_f64()
                .min(settings.time.as_secs_f64().max(0.001) + 1.0);
            Some(first.rates(&end, secs))
        }
        _ => None,
    };
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
    let lat = total_lat.lock().expect("not poisoned");
    Ok(OltpOutcome {
        threads,
        elapsed_s: elapsed,
        tally,
        latency: lat.total.summary(&ps),
        intervals,
        error: error.lock().expect("not poisoned").clone(),
        by_kind: workload
            .kinds
            .iter()
            .zip(&lat.kinds)
            .map(|(name, (n, rb, l))| KindOutcome {
                name,
                transactions: *n,
                rollbacks: *rb,
                latency: l.summary(&ps),
            })
            .collect(),
        io,
    })
}

/// One client's events until the deadline, Ctrl-C or a fatal error.
#[allow(clippy::too_many_arguments)]
fn client_loop(
    i: usize,
    mut conn: WireConn,
    workload: &Workload,
    settings: &RunSettings,
    target: &ConnTarget,
    halt: &AtomicBool,
    start: Instant,
    st: &Mutex<ClientStats>,
    total_lat: &Mutex<Latencies>,
) -> ClientEnd {
    // `start` is the gate's opening: warm-up first, then the measured time.
    let measured = start + settings.warmup;
    let deadline = measured + settings.time;
    // Each client's share of --rate, as an even schedule.
    let pace = settings
        .rate
        .filter(|r| *r > 0.0)
        .map(|r| Duration::from_secs_f64(f64::from(settings.threads.max(1)) / r));
    let mut next_start = start;
    let interrupt = &settings.interrupt;
    let stopped = || halt.load(Ordering::Relaxed) || interrupt.load(Ordering::Relaxed);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(
        workload.seed ^ (i as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F),
    );
    let mut source = (workload.sources)();
    let mut event = Event::default();
    while Instant::now() < deadline && !stopped() {
        if let Some(p) = pace {
            // Sleep in short steps so Ctrl-C and the deadline still end the wait.
            while Instant::now() < next_start.min(deadline) && !stopped() {
                std::thread::sleep(
                    next_start
                        .saturating_duration_since(Instant::now())
                        .min(Duration::from_millis(50)),
                );
            }
            next_start += p;
            if Instant::now() >= deadline || stopped() {
                break;
            }
        }
        let t0 = Instant::now();
        let mut local = Tally::default();
        loop {
            event.clear();
            source.draw(&mut rng, &mut event);
            let err = match event.execute(
                &mut conn,
                &workload.statements,
                workload.protocol,
                settings.pipeline,
                &mut local,
            ) {
                Ok(()) => break,
                Err(e) => e,
            };
            let err = match err {
                WireError::Db { code, .. } if workload.rollback_codes.contains(&code.as_str()) => {
                    // An intended rollback ends the transaction: it counts as done.
                    match conn.simple("ROLLBACK") {
                        Ok(_) => {
                            local.others += 1;
                            local.rollbacks += 1;
                            break;
                        }
                        Err(e) => e,
                    }
                }
                WireError::Db { code, .. } if workload.retry_codes.contains(&code.as_str()) => {
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
                        match open_client(target, workload, interrupt) {
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
        if t0 < measured {
            continue; // warm-up: done, not counted
        }
        local.transactions += 1;
        let ns = t0.elapsed().as_nanos() as u64;
        let mut s = st.lock().expect("not poisoned");
        s.total.merge(&local);
        s.interval.merge(&local);
        s.interval_lat.record(ns);
        drop(s);
        let mut lat = total_lat.lock().expect("not poisoned");
        lat.total.record(ns);
        if let Some(k) = lat.kinds.get_mut(event.kind) {
            k.0 += 1;
            k.1 += local.rollbacks;
            k.2.record(ns);
        }
    }
    ClientEnd::Normal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_replace_parameters_by_number_and_quote_strings() {
        let p = [
            Param::Int(-5),
            Param::Text("it's".into()),
            Param::Int(7),
            Param::Int(8),
            Param::Int(9),
            Param::Int(10),
            Param::Int(11),
            Param::Int(12),
            Param::Int(13),
            Param::Int(14),
        ];
        assert_eq!(
            literal_sql("UPDATE t SET a = a + $1, c = $2 WHERE id = $10", &p),
            "UPDATE t SET a = a + -5, c = 'it''s' WHERE id = 14"
        );
        assert_eq!(literal_sql("SELECT $", &p), "SELECT $");
        assert_eq!(literal_sql("SELECT $99", &p), "SELECT $99");
    }
}
