//! The measured loop shared by every workload: events (transactions) drawn
//! in advance by the workload, executed in the chosen protocol, counted,
//! retried on the workload's retryable SQLSTATEs, reported per interval.
//! Each client is a sans-IO state machine ([`Client`]) run by one of two
//! drivers ([`ClientIo`]): one OS thread and blocking wire connection per
//! client, or a few threads each driving many connections through io_uring
//! ([`crate::uring_client`]).
//!
//! Over 1,200 lines on purpose: the client state machine, the start gate,
//! the run loop and its interval reporter are one protocol (what is counted,
//! when a retry or reconnect happens, when the clock starts) that both
//! drivers share; kept together so the counting rules the results depend on
//! read in one place.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use csdchar_core::oltp::{QueryClass, classify};
use csdchar_core::stats::{LatencyRecorder, LatencyStats};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::cluster::PostmasterWatch;
use crate::conn::DbError;
use crate::conn::{ConnTarget, ProcessEnv};
use bytes::BytesMut;

use crate::wire::{self, Param, Reply, WireConn, WireError};

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
/// the name each is prepared under (empty: never prepared, parsed at each use).
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
    /// Sent in one exchange with the call after it (one Sync for both).
    with_next: bool,
}

/// One event (transaction). Most are drawn whole in advance; a
/// conversation ([`EventSource::follow`]) adds calls as replies arrive,
/// when a statement depends on an earlier one's rows.
#[derive(Default)]
pub struct Event {
    calls: Vec<Call>,
    params: Vec<Param>,
    block: bool,
    kind: usize,
    intended_rollback: bool,
}

impl Event {
    /// Empties the event for the next draw.
    pub fn clear(&mut self) {
        self.calls.clear();
        self.params.clear();
        self.block = false;
        self.kind = 0;
        self.intended_rollback = false;
    }

    /// Appends statement `statement` with `params`, sent in the same
    /// exchange as the call pushed after it (JDBC's implicit BEGIN before a
    /// transaction's first statement, a JDBC batch: one Sync for all).
    pub fn push_with_next(&mut self, statement: usize, params: &[Param]) {
        self.push(statement, params);
        if let Some(c) = self.calls.last_mut() {
            c.with_next = true;
        }
    }

    /// The transaction ends in an intended rollback (the ROLLBACK is the
    /// event's own last call): counted as completed and as a rollback.
    pub fn set_intended_rollback(&mut self) {
        self.intended_rollback = true;
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
            with_next: false,
        });
    }

    /// Marks the event as one BEGIN … COMMIT block, which `--pipeline` may
    /// send in one round trip: an error makes the server skip the rest up to the Sync.
    pub fn set_block(&mut self) {
        self.block = true;
    }

    /// Calls pushed so far (tests).
    #[cfg(test)]
    pub(crate) fn len_for_test(&self) -> usize {
        self.calls.len()
    }

    /// The statement ids of calls `from..to` (tests).
    #[cfg(test)]
    pub(crate) fn statements_for_test(&self, from: usize, to: usize) -> Vec<usize> {
        self.calls[from..to].iter().map(|c| c.statement).collect()
    }

    /// Whether the event ends in an intended rollback (tests).
    #[cfg(test)]
    pub(crate) fn intended_rollback_for_test(&self) -> bool {
        self.intended_rollback
    }

    /// Encodes the exchange from `from` in the prepared protocol (tests).
    #[cfg(test)]
    pub(crate) fn encode_for_test(
        &self,
        from: usize,
        out: &mut BytesMut,
        set: &StatementSet,
    ) -> Result<usize, WireError> {
        self.encode_exchange(from, out, set, Protocol::Prepared, false)
    }

    /// Encodes the event's exchange that starts at call `from` into `out`
    /// and returns the call after it: one round trip per statement, or the
    /// whole block in one when `pipeline` (not in the simple protocol, as in
    /// pgbench).
    fn encode_exchange(
        &self,
        from: usize,
        out: &mut BytesMut,
        set: &StatementSet,
        protocol: Protocol,
        pipeline: bool,
    ) -> Result<usize, WireError> {
        let queue = |out: &mut BytesMut, c: &Call| {
            let params = &self.params[c.params.clone()];
            match protocol {
                // A statement without a name is parsed every time (a JDBC
                // driver's one-shot BEGIN, COMMIT and ROLLBACK).
                Protocol::Prepared if set.names[c.statement].is_empty() => {
                    wire::encode_unnamed(out, &set.sql[c.statement], params)
                }
                Protocol::Prepared => {
                    wire::encode_bind_execute(out, &set.names[c.statement], params)
                }
                Protocol::Extended => wire::encode_unnamed(out, &set.sql[c.statement], params),
                Protocol::Simple => {
                    wire::encode_query(out, &literal_sql(&set.sql[c.statement], params))
                }
            }
        };
        // The calls joined to `from` ([`Event::push_with_next`]).
        let mut end = from + 1;
        while end < self.calls.len() && self.calls[end - 1].with_next {
            end += 1;
        }
        if protocol == Protocol::Simple {
            if end == from + 1 {
                queue(out, &self.calls[from])?;
            } else {
                // One Query message with the statements joined.
                let sql: Vec<String> = self.calls[from..end]
                    .iter()
                    .map(|c| literal_sql(&set.sql[c.statement], &self.params[c.params.clone()]))
                    .collect();
                wire::encode_query(out, &sql.join("; "))?;
            }
            return Ok(end);
        }
        if pipeline && self.block {
            end = self.calls.len();
        }
        for c in &self.calls[from..end] {
            queue(out, c)?;
        }
        wire::encode_sync(out);
        Ok(end)
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

    /// Every call of `event` has completed; `reply` is the last exchange's
    /// (its rows kept when [`Workload::keeps_rows`]). A conversation pushes
    /// the next calls and says [`Follow::More`]; the default: done.
    fn follow(&mut self, reply: &Reply<'_>, event: &mut Event) -> Follow {
        let _ = (reply, event);
        Follow::Done
    }
}

/// What a conversation does after a reply ([`EventSource::follow`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Follow {
    /// The event is complete.
    Done,
    /// Calls were pushed: send them.
    More,
    /// The reply broke the workload's rules (a row that must exist did
    /// not): the run ends with this error, as BenchmarkSQL's does.
    Fail(String),
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
    /// SQLSTATEs after which the transaction is rolled back, counted as an
    /// error and as completed, and not retried (BenchmarkSQL's way with
    /// serialization failures and deadlocks).
    pub abandon_codes: &'static [&'static str],
    /// Replies carry the rows' values ([`EventSource::follow`] reads them).
    pub keeps_rows: bool,
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
    /// The interval's latency histogram (ns, 2 significant digits), HdrHistogram V2
    /// compressed, base64 ([`csdchar_core::hdr`]).
    pub lat_hdr_histogram: String,
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
    /// The driver that ran the clients ([`ClientIo::Auto`] resolved).
    pub client_io: ClientIo,
    /// io_uring driver threads the clients ran on; None on the threads driver.
    pub driver_threads: Option<u32>,
    /// What the clients' connections travelled over (it decides [`ClientIo::Auto`]).
    pub transport: Transport,
    /// The TLS protocol and cipher the clients' connections negotiated; None for plain ones.
    pub tls: Option<(String, String)>,
    /// Whether the step started: false when interrupted while waiting for
    /// [`RunSettings::start_at`] (nothing was measured).
    pub started: bool,
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
fn settle(reply: &Reply<'_>, t: &mut Tally) -> Result<(), WireError> {
    for c in reply.completed {
        t.count(classify(c.returned_rows, c.rows));
    }
    match &reply.error {
        Some((code, message)) => Err(WireError::Db {
            code: code.clone(),
            message: message.clone(),
        }),
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
    conn.keep_rows(workload.keeps_rows);
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
    /// Start the clock (warm-up, then the measured time) at this wall-clock
    /// instant, after every client has connected, so runs on several load
    /// hosts start together (`--start-at`); the wait ends early on Ctrl-C.
    /// None, or an instant already past: at once.
    pub start_at: Option<SystemTime>,
    /// The postmaster of the managed server the run talks to, when csdchar
    /// started it: once it has exited, a lost connection ends the run at once
    /// (with `reconnect` too: nobody brings that server back). None: a
    /// server csdchar does not manage, where reconnecting may succeed.
    pub postmaster: Option<PostmasterWatch>,
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
    /// `n` clients are ready (or have failed to connect); returns the start, or None if called off.
    fn arrive(&self, n: usize) -> Option<Instant> {
        let mut s = self.state.lock().expect("not poisoned");
        s.arrived += n;
        self.changed.notify_all();
        let s = self
            .changed
            .wait_while(s, |s| s.start.is_none() && !s.called_off)
            .expect("not poisoned");
        if s.called_off { None } else { s.start }
    }

    /// Waits for `clients` arrivals and then for `not_before` (in short
    /// sleeps), starts the clock and lets everyone go; None when `interrupt`
    /// is set during the wait: the run is called off before it starts.
    fn open_when(
        &self,
        clients: usize,
        not_before: Option<SystemTime>,
        interrupt: &AtomicBool,
    ) -> Option<Instant> {
        let s = self.state.lock().expect("not poisoned");
        let s = self
            .changed
            .wait_while(s, |s| s.arrived < clients)
            .expect("not poisoned");
        drop(s);
        if let Some(at) = not_before {
            loop {
                if interrupt.load(Ordering::Relaxed) {
                    self.call_off();
                    return None;
                }
                match at.duration_since(SystemTime::now()) {
                    Ok(left) if !left.is_zero() => {
                        std::thread::sleep(left.min(Duration::from_millis(50)))
                    }
                    _ => break,
                }
            }
        }
        let mut s = self.state.lock().expect("not poisoned");
        let start = Instant::now();
        s.start = Some(start);
        self.changed.notify_all();
        Some(start)
    }

    /// Releases the waiting clients without a run.
    fn call_off(&self) {
        self.state.lock().expect("not poisoned").called_off = true;
        self.changed.notify_all();
    }
}

/// Why one client stopped before the end of the step.
pub(crate) enum ClientEnd {
    /// Deadline, Ctrl-C, or another client's failure.
    Normal,
    /// A fatal error: the run ends with it.
    Failed(String),
}

/// How the clients' connections are driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientIo {
    /// [`ClientIo::Uring`] from the transport's [`AutoRule`] client count up where the
    /// kernel allows io_uring, [`ClientIo::Threads`] otherwise: each where it measured
    /// faster (BENCHMARKS.md, issues 18 and 29).
    #[default]
    Auto,
    /// One OS thread per connection, blocking reads and writes ([`crate::wire`]).
    Threads,
    /// A few threads, each with one io_uring and many connections ([`crate::uring_client`]).
    Uring,
}

/// What the clients' connections travel over. [`ClientIo::Auto`]'s choice
/// depends on it: a statement's kernel work differs between a Unix socket and
/// TCP, and TLS adds the client's own encryption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A Unix-domain socket (managed clusters, `host=/dir`).
    Unix,
    /// TCP without TLS.
    Tcp,
    /// TCP with TLS.
    Tls,
}

impl Transport {
    /// The name results record: "unix", "tcp" or "tls".
    pub fn name(self) -> &'static str {
        match self {
            Transport::Unix => "unix",
            Transport::Tcp => "tcp",
            Transport::Tls => "tls",
        }
    }

    /// [`ClientIo::Auto`]'s rule for this transport.
    pub fn auto_rule(self) -> AutoRule {
        match self {
            Transport::Unix => AUTO_RULE_UNIX,
            Transport::Tcp => AUTO_RULE_TCP,
            Transport::Tls => AUTO_RULE_TLS,
        }
    }
}

/// When [`ClientIo::Auto`] takes io_uring, and how many ring threads it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoRule {
    /// io_uring from this many clients per core up; one thread per client below.
    pub uring_from_clients_per_core: usize,
    /// One ring thread per this many clients (at most one per core), unless
    /// `--client-threads` says otherwise.
    pub clients_per_ring: usize,
}

/// Over a Unix socket (BENCHMARKS.md, issue 18, 2 cores): the ring's TPS was 1.00–1.04x the
/// thread driver's at 16 clients and 1.07–1.24x at 32 and 64 (sysbench's three workloads), but
/// 0.90x at 8 for read_only and point_select, where one ring thread is one runnable task
/// among as many busy backends; a second ring below 64 clients added some TPS at 16 but
/// pushed CPU per transaction past half of sysbench's. The issue 29 sweep agrees from 16 up.
pub const AUTO_RULE_UNIX: AutoRule = AutoRule {
    uring_from_clients_per_core: 8,
    clients_per_ring: 32,
};

/// Over TCP (BENCHMARKS.md, issue 29, 2 cores): a send costs the sender the receiver's whole
/// TCP receive path and its wake-up (loopback), so one ring thread saturates sooner than on a
/// socket: at 16 and 32 clients two rings gave 3–20% more TPS than one for point_select and
/// read_only, and were at or above the thread driver. At 8 clients the thread driver's TPS was
/// above one ring's (0.81–0.88x) and, in most rounds, two rings' (0.87–1.06x).
pub const AUTO_RULE_TCP: AutoRule = AutoRule {
    uring_from_clients_per_core: 8,
    clients_per_ring: 8,
};

/// Over TLS (BENCHMARKS.md, issues 29 and 31, 2 cores): at 8 clients two rings had
/// 0.98–1.11x the thread driver's TPS (tpcb, oltp_read_write, 3 rounds each) at 0.80–0.95x
/// its CPU per transaction, where over plain TCP the thread driver was ahead.
pub const AUTO_RULE_TLS: AutoRule = AutoRule {
    uring_from_clients_per_core: 4,
    clients_per_ring: 4,
};

impl ClientIo {
    /// The name results record: "auto", "threads" or "uring".
    pub fn name(self) -> &'static str {
        match self {
            ClientIo::Auto => "auto",
            ClientIo::Threads => "threads",
            ClientIo::Uring => "uring",
        }
    }

    /// The driver for `clients` clients on `cores` cores over `transport`:
    /// [`ClientIo::Auto`] decided by the transport's [`AutoRule`] (io_uring
    /// only where `uring_usable` says so, asked only when the count would
    /// pick it), the others as they are.
    pub fn resolve(
        self,
        clients: usize,
        cores: usize,
        transport: Transport,
        uring_usable: impl FnOnce() -> bool,
    ) -> ClientIo {
        let rule = transport.auto_rule();
        match self {
            ClientIo::Auto
                if clients >= rule.uring_from_clients_per_core * cores.max(1) && uring_usable() =>
            {
                ClientIo::Uring
            }
            ClientIo::Auto => ClientIo::Threads,
            io => io,
        }
    }
}

/// The io_uring driver's thread count for `clients` clients on `cores` cores over
/// `transport`: `asked` (`--client-threads`) or one per the transport's
/// [`AutoRule::clients_per_ring`], at most one per core; never more than the clients.
/// Fewer, fuller rings batch more replies per wake-up and leave the cores to the server
/// (issue 18: over a socket one thread for 8 clients cost 0.6x the client CPU per
/// transaction of two).
pub fn ring_threads(
    clients: usize,
    cores: usize,
    transport: Transport,
    asked: Option<usize>,
) -> usize {
    asked
        .unwrap_or_else(|| {
            clients
                .div_ceil(transport.auto_rule().clients_per_ring)
                .min(cores)
        })
        .clamp(1, clients.max(1))
}

/// The client driver of a run: [`run_with`]'s choice (the default: [`ClientIo::Auto`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientIoSettings {
    /// Threads, io_uring, or by the client count.
    pub client_io: ClientIo,
    /// io_uring: driver threads (each with one ring); None: [`ring_threads`]'s
    /// default for the transport.
    pub client_threads: Option<usize>,
}

/// Whether this kernel and process can run [`ClientIo::Uring`]; why not otherwise.
pub fn uring_probe() -> Result<(), String> {
    crate::uring_client::probe()
}

/// What every driver thread of a run shares.
pub(crate) struct Shared {
    pub(crate) workload: Arc<Workload>,
    pub(crate) settings: RunSettings,
    pub(crate) target: ConnTarget,
    pub(crate) describe: Arc<str>,
    pub(crate) halt: Arc<AtomicBool>,
    error: Mutex<Option<String>>,
    gate: StartGate,
}

impl Shared {
    /// Ctrl-C, or another client's failure.
    pub(crate) fn stopped(&self) -> bool {
        self.halt.load(Ordering::Relaxed) || self.settings.interrupt.load(Ordering::Relaxed)
    }

    /// A client's end: a failure is the run's error (the first one) and stops everyone.
    pub(crate) fn ended(&self, end: ClientEnd) {
        if let ClientEnd::Failed(m) = end {
            self.error.lock().expect("not poisoned").get_or_insert(m);
            self.halt.store(true, Ordering::Relaxed);
        }
    }

    /// Connects one client and prepares its statements (blocking).
    pub(crate) fn open(&self) -> Result<WireConn, WireError> {
        open_client(&self.target, &self.workload, &self.settings.interrupt)
    }

    /// `n` clients are connected (or failed to); waits for the clock's start,
    /// None if the run was called off.
    pub(crate) fn arrive(&self, n: usize) -> Option<Instant> {
        self.gate.arrive(n)
    }

    /// Client `i`'s state machine, counting into `sink`.
    pub(crate) fn client(&self, i: usize, start: Instant, sink: Sink) -> Client {
        let workload = Arc::clone(&self.workload);
        Client::new(
            i,
            &workload,
            &self.settings,
            start,
            sink,
            Arc::clone(&self.describe),
        )
    }
}

/// Runs `workload` as `settings` say on the client driver `io`, calling
/// `on_interval` every report interval.
pub async fn run_with(
    conninfo: &str,
    workload: Arc<Workload>,
    settings: &RunSettings,
    io: ClientIoSettings,
    mut on_interval: impl FnMut(&OltpInterval, u32),
) -> Result<OltpOutcome, DbError> {
    let target = ConnTarget::parse(conninfo, &ProcessEnv).map_err(|e| DbError(e.message))?;
    let threads = settings.threads;
    let report_interval = settings.report_interval;
    let interval_pct = settings.percentiles.first().copied().unwrap_or(95.0);
    // Everyone connects and prepares first, as sysbench does before its clock starts.
    let shared = Arc::new(Shared {
        workload: Arc::clone(&workload),
        settings: settings.clone(),
        describe: target.describe().into(),
        target,
        halt: Arc::new(AtomicBool::new(false)),
        error: Mutex::new(None),
        gate: StartGate::default(),
    });
    // One precise histogram for all clients: 256 of them would cost ~70 MB.
    let total_lat = Arc::new(Mutex::new(Latencies {
        total: LatencyRecorder::precise(),
        kinds: workload
            .kinds
            .iter()
            .map(|_| (0, 0, LatencyRecorder::precise()))
            .collect(),
    }));
    let new_sink = || Sink {
        stats: Arc::new(Mutex::new(ClientStats {
            total: Tally::default(),
            interval: Tally::default(),
            interval_lat: LatencyRecorder::coarse(),
        })),
        total_lat: Arc::clone(&total_lat),
    };
    let mut stats = Vec::new();
    let mut tasks = Vec::new();
    let clients = threads as usize;
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    // TLS: what a connection negotiates here (one probe connection, for a TCP
    // target whose sslmode may use it), for the result.
    let tls = if shared.target.tls_possible() {
        let target = shared.target.clone();
        tokio::task::spawn_blocking(move || WireConn::connect(&target, None))
            .await
            .map_err(|e| DbError(format!("TLS probe: {e}")))?
            .map_err(|e| DbError(e.to_string()))?
            .tls_session()
            .cloned()
    } else {
        None
    };
    let transport = match (&tls, shared.target.transport()) {
        (Some(_), _) => Transport::Tls,
        (None, t) => t,
    };
    let driver = io
        .client_io
        .resolve(clients, cores, transport, || uring_probe().is_ok());
    let mut driver_threads = None;
    let spawned = match driver {
        ClientIo::Threads => (0..clients).try_for_each(|i| {
            let sink = new_sink();
            stats.push(Arc::clone(&sink.stats));
            let shared = Arc::clone(&shared);
            let client = move || {
                // One OS thread per client on a blocking socket (see wire.rs).
                let ready = shared.open();
                let Some(start) = shared.arrive(1) else {
                    return; // the run was called off before it started
                };
                let end = match ready {
                    Ok(conn) => {
                        let c = shared.client(i, start, sink);
                        thread_client(conn, c, &shared)
                    }
                    Err(e) => ClientEnd::Failed(e.to_string()),
                };
                shared.ended(end);
            };
            // Small stacks: 256 clients must stay light.
            std::thread::Builder::new()
                .name(format!("client-{i}"))
                .stack_size(256 * 1024)
                .spawn(client)
                .map(|t| tasks.push(t))
                .map_err(|e| format!("starting client thread {i}: {e}"))
        }),
        ClientIo::Auto => unreachable!("resolved above"),
        ClientIo::Uring => {
            let n = ring_threads(clients, cores, transport, io.client_threads);
            driver_threads = Some(n as u32);
            // Clients are dealt out evenly: thread t drives clients t, t+n, t+2n, …
            (0..n).try_for_each(|t| {
                let sink = new_sink();
                stats.push(Arc::clone(&sink.stats));
                let ids: Vec<usize> = (t..clients).step_by(n).collect();
                crate::uring_client::spawn(t, ids, Arc::clone(&shared), sink)
                    .map(|h| tasks.push(h))
                    .map_err(|e| format!("starting client thread {t}: {e}"))
            })
        }
    };
    if let Err(e) = spawned {
        shared.gate.call_off();
        return Err(DbError(e));
    }
    // The clock starts when every client is connected (or has failed to),
    // and the measurement after the warm-up.
    let opened = {
        let shared = Arc::clone(&shared);
        let (not_before, interrupt) = (settings.start_at, Arc::clone(&settings.interrupt));
        tokio::task::spawn_blocking(move || {
            shared
                .gate
                .open_when(threads as usize, not_before, &interrupt)
        })
        .await
        .map_err(|e| DbError(format!("client start: {e}")))?
    };
    // Interrupted while waiting for --start-at: the clients were released
    // without running, and the step did not start.
    let started = opened.is_some();
    let start = opened.unwrap_or_else(Instant::now) + settings.warmup;
    // The I/O sampler's own connection, opened while the clients warm up.
    let mut sampler = None;
    if started
        && settings.io_sampling
        && let Ok(client) = crate::conn::connect(conninfo).await
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
                lat_pct_ms: lat.hist_percentile(interval_pct) as f64 / 1e6,
                lat_mean_ms: lat.mean() / 1e6,
                lat_stddev_ms: lat.stddev() / 1e6,
                lat_hdr_histogram: lat.encoded(),
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
        error: shared.error.lock().expect("not poisoned").clone(),
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
        client_io: driver,
        driver_threads,
        transport,
        tls,
        started,
    })
}

/// Where a client's completed transactions are counted: its (or its ring
/// thread's) interval counters and the run's precise histograms.
#[derive(Clone)]
pub(crate) struct Sink {
    stats: Arc<Mutex<ClientStats>>,
    total_lat: Arc<Mutex<Latencies>>,
}

impl Sink {
    /// Counts one measured transaction: its tally and latency, overall and by kind.
    fn record(&self, local: &Tally, ns: u64, kind: usize) {
        let mut s = self.stats.lock().expect("not poisoned");
        s.total.merge(local);
        s.interval.merge(local);
        s.interval_lat.record(ns);
        drop(s);
        let mut lat = self.total_lat.lock().expect("not poisoned");
        lat.total.record(ns);
        if let Some(k) = lat.kinds.get_mut(kind) {
            k.0 += 1;
            k.1 += local.rollbacks;
            k.2.record(ns);
        }
    }
}

/// What a client's connection does next ([`Client::next`]).
pub(crate) enum Next {
    /// Send what the client wrote into `out` (one exchange: messages ending in
    /// Sync, or one simple Query) and deliver the reply with
    /// [`Client::on_reply`] or the failure with [`Client::on_error`].
    Exchange,
    /// Nothing before this instant (--rate's schedule, the pause between
    /// reconnect attempts); ask again then, or earlier.
    WaitUntil(Instant),
    /// Open a new connection and say how it went with [`Client::reconnected`].
    Reconnect,
    /// The client is done.
    End(ClientEnd),
}

/// Where a client is in its work.
enum Phase {
    /// Between transactions.
    Idle,
    /// An exchange of the event is in flight; `next` is the call after it.
    Event { next: usize },
    /// ROLLBACK is in flight, after an error: why decides what follows.
    RollingBack { why: RollbackCause },
    /// The connection was lost; reconnecting until the deadline.
    Reconnecting {
        lost: String,
        last: String,
        retry_at: Option<Instant>,
    },
    /// Done; how, until [`Client::next`] has said it.
    Ended(Option<ClientEnd>),
}

/// Why a client rolls back after an error ([`Phase::RollingBack`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RollbackCause {
    /// [`Workload::rollback_codes`]: the transaction is done, as a rollback.
    Intended,
    /// [`Workload::retry_codes`]: the transaction is drawn again.
    Retry,
    /// [`Workload::abandon_codes`]: the transaction is done, as an error.
    Abandon,
}

/// One client's statement state machine, without I/O: it draws events,
/// encodes each exchange, counts replies, retries on the workload's retryable
/// SQLSTATEs, rolls back, reconnects, paces (--rate), skips the warm-up and
/// records measured transactions. The thread driver ([`thread_client`]) and
/// the io_uring driver ([`crate::uring_client`]) run the same machine, so both
/// send the same statements in the same order and count them the same way.
pub(crate) struct Client {
    workload: Arc<Workload>,
    pipeline: bool,
    reconnect: bool,
    measured: Instant,
    deadline: Instant,
    pace: Option<Duration>,
    postmaster: Option<PostmasterWatch>,
    next_start: Instant,
    rng: Xoshiro256PlusPlus,
    source: Box<dyn EventSource>,
    event: Event,
    phase: Phase,
    /// When the transaction started (its first send), retries included.
    t0: Instant,
    /// `t0` is taken again at the first send ([`Client::sent`]), if the driver reports it.
    t0_at_send: bool,
    local: Tally,
    sink: Sink,
    target: Arc<str>,
}

impl Client {
    /// Client `i` of a run whose clock (warm-up, then measured time) starts at `start`.
    pub(crate) fn new(
        i: usize,
        workload: &Arc<Workload>,
        settings: &RunSettings,
        start: Instant,
        sink: Sink,
        target: Arc<str>,
    ) -> Client {
        // `start` is the gate's opening: warm-up first, then the measured time.
        let measured = start + settings.warmup;
        Client {
            workload: Arc::clone(workload),
            pipeline: settings.pipeline,
            reconnect: settings.reconnect,
            measured,
            deadline: measured + settings.time,
            // Each client's share of --rate, as an even schedule.
            pace: settings
                .rate
                .filter(|r| *r > 0.0)
                .map(|r| Duration::from_secs_f64(f64::from(settings.threads.max(1)) / r)),
            postmaster: settings.postmaster.clone(),
            next_start: start,
            rng: Xoshiro256PlusPlus::seed_from_u64(
                workload.seed ^ (i as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F),
            ),
            source: (workload.sources)(),
            event: Event::default(),
            phase: Phase::Idle,
            t0: start,
            t0_at_send: false,
            local: Tally::default(),
            sink,
            target,
        }
    }

    /// What to do next; called whenever no exchange is in flight. `stopped`:
    /// Ctrl-C or another client's failure. After [`Next::Exchange`], `out`
    /// holds the exchange.
    pub(crate) fn next(&mut self, now: Instant, stopped: bool, out: &mut BytesMut) -> Next {
        loop {
            match &mut self.phase {
                Phase::Ended(_) => {
                    let Phase::Ended(end) = std::mem::replace(&mut self.phase, Phase::Ended(None))
                    else {
                        unreachable!("matched")
                    };
                    return Next::End(end.unwrap_or(ClientEnd::Normal));
                }
                Phase::Event { .. } | Phase::RollingBack { .. } => return Next::Exchange,
                Phase::Reconnecting {
                    lost,
                    last,
                    retry_at,
                } => {
                    if stopped {
                        self.end(ClientEnd::Normal);
                        continue;
                    }
                    if let Some(at) = *retry_at
                        && now < at
                    {
                        return Next::WaitUntil(at);
                    }
                    if now >= self.deadline {
                        let m = format!(
                            "{lost}; reconnecting did not succeed before the end of the step (last attempt: {last})"
                        );
                        self.end(ClientEnd::Failed(m));
                        continue;
                    }
                    return Next::Reconnect;
                }
                Phase::Idle => {
                    if now >= self.deadline || stopped {
                        self.end(ClientEnd::Normal);
                        continue;
                    }
                    if let Some(p) = self.pace {
                        let until = self.next_start.min(self.deadline);
                        if now < until {
                            return Next::WaitUntil(until);
                        }
                        self.next_start += p;
                    }
                    self.t0 = now;
                    self.t0_at_send = true;
                    self.local = Tally::default();
                    // An exchange, the end, or (no statements) done at once: see above.
                    self.attempt(now, out);
                }
            }
        }
    }

    /// Draws the event and encodes its first exchange; an event without
    /// statements is finished at once.
    fn attempt(&mut self, now: Instant, out: &mut BytesMut) {
        self.event.clear();
        self.source.draw(&mut self.rng, &mut self.event);
        if self.event.calls.is_empty() {
            self.finish(now);
        } else {
            self.encode(0, out);
        }
    }

    /// Encodes the exchange starting at call `from`.
    fn encode(&mut self, from: usize, out: &mut BytesMut) {
        let w = &self.workload;
        match self
            .event
            .encode_exchange(from, out, &w.statements, w.protocol, self.pipeline)
        {
            Ok(next) => self.phase = Phase::Event { next },
            Err(e) => self.end(ClientEnd::Failed(format!("transaction: {e}"))),
        }
    }

    /// The exchange's first byte was handed to the kernel at `at`: the
    /// transaction's clock starts there if this is its first exchange.
    pub(crate) fn sent(&mut self, at: Instant) {
        if self.t0_at_send {
            self.t0 = at;
            self.t0_at_send = false;
        }
    }

    /// The exchange's reply, complete at `at`. The next step (or exchange,
    /// into `out`) is what [`Client::next`] says.
    pub(crate) fn on_reply(&mut self, reply: Reply<'_>, at: Instant, out: &mut BytesMut) {
        self.t0_at_send = false;
        match self.phase {
            Phase::Event { next } => match settle(&reply, &mut self.local) {
                Ok(()) if next < self.event.calls.len() => {
                    self.encode(next, out);
                }
                Ok(()) => match self.source.follow(&reply, &mut self.event) {
                    Follow::More if next < self.event.calls.len() => self.encode(next, out),
                    Follow::More | Follow::Done => {
                        if self.event.intended_rollback {
                            self.local.rollbacks += 1;
                        }
                        self.finish(at)
                    }
                    Follow::Fail(m) => self.end(ClientEnd::Failed(format!("transaction: {m}"))),
                },
                Err(e) => self.on_failure(e, at, out),
            },
            Phase::RollingBack { why } => {
                self.local.others += 1;
                match why {
                    // An intended rollback ends the transaction: it counts as done.
                    RollbackCause::Intended => {
                        self.local.rollbacks += 1;
                        self.finish(at);
                    }
                    RollbackCause::Abandon => self.finish(at),
                    // Retried: the event is drawn again.
                    RollbackCause::Retry => self.attempt(at, out),
                }
            }
            _ => {}
        }
    }

    /// The exchange failed (connection lost, Ctrl-C while waiting, malformed reply).
    pub(crate) fn on_error(&mut self, e: WireError, at: Instant, out: &mut BytesMut) {
        self.t0_at_send = false;
        self.on_failure(e, at, out);
    }

    fn on_failure(&mut self, e: WireError, _at: Instant, out: &mut BytesMut) {
        let rolling_back = matches!(self.phase, Phase::RollingBack { .. });
        let w = Arc::clone(&self.workload);
        let e = match e {
            WireError::Db { code, .. }
                if !rolling_back && w.rollback_codes.contains(&code.as_str()) =>
            {
                self.rollback(RollbackCause::Intended, out);
                return;
            }
            WireError::Db { code, .. }
                if !rolling_back && w.retry_codes.contains(&code.as_str()) =>
            {
                *self.local.errors.entry(code).or_default() += 1;
                self.rollback(RollbackCause::Retry, out);
                return;
            }
            WireError::Db { code, .. }
                if !rolling_back && w.abandon_codes.contains(&code.as_str()) =>
            {
                *self.local.errors.entry(code).or_default() += 1;
                self.rollback(RollbackCause::Abandon, out);
                return;
            }
            e => e,
        };
        // A server gone for good is not worth reconnecting to. Its backends
        // can report its death a moment before it shows as exited; a run
        // that ends here anyway waits that moment to say why.
        let gone = match e {
            WireError::Lost(_) if self.reconnect => self.server_gone(Duration::ZERO),
            WireError::Lost(_) => self.server_gone(POSTMASTER_EXIT_WAIT),
            _ => None,
        };
        let end = match (e, gone) {
            (WireError::Lost(m), Some(gone)) => {
                ClientEnd::Failed(format!("connection to {} lost: {m}; {gone}", self.target))
            }
            (WireError::Lost(lost), None) if self.reconnect => {
                self.phase = Phase::Reconnecting {
                    last: lost.clone(),
                    lost,
                    retry_at: None,
                };
                return;
            }
            // Ctrl-C while waiting: the unfinished transaction is not counted.
            (WireError::Aborted, _) => ClientEnd::Normal,
            (WireError::Lost(m), None) => ClientEnd::Failed(format!(
                "connection to {} lost: {m} (pass --reconnect to resume after reconnecting)",
                self.target
            )),
            (e, _) => ClientEnd::Failed(format!("transaction: {e}")),
        };
        self.end(end);
    }

    fn rollback(&mut self, why: RollbackCause, out: &mut BytesMut) {
        match wire::encode_query(out, "ROLLBACK") {
            Ok(()) => self.phase = Phase::RollingBack { why },
            Err(e) => {
                self.end(ClientEnd::Failed(format!("transaction: {e}")));
            }
        }
    }

    /// How the reconnect attempt went; after a failure the next is 100 ms later.
    pub(crate) fn reconnected(&mut self, r: Result<(), String>, now: Instant, out: &mut BytesMut) {
        match r {
            Ok(()) => {
                self.local.reconnects += 1;
                // The transaction restarts on the new connection, drawn again.
                self.attempt(now, out);
            }
            Err(e) => {
                if let Some(gone) = self.server_gone(Duration::ZERO)
                    && let Phase::Reconnecting { lost, .. } = &self.phase
                {
                    let m = format!(
                        "connection to {} lost: {lost}; {gone} (last attempt: {e})",
                        self.target
                    );
                    self.end(ClientEnd::Failed(m));
                } else if let Phase::Reconnecting { last, retry_at, .. } = &mut self.phase {
                    *last = e;
                    *retry_at = Some(now + Duration::from_millis(100));
                }
            }
        }
    }

    /// Why reconnecting cannot succeed: the managed server's postmaster has
    /// exited, or does within `wait` (see [`RunSettings::postmaster`]).
    fn server_gone(&self, wait: Duration) -> Option<String> {
        self.postmaster
            .as_ref()
            .filter(|p| p.exited_within(wait))
            .map(|p| format!("{} has exited", p.server()))
    }

    /// The transaction is done at `at`: counted unless it started in the warm-up.
    fn finish(&mut self, at: Instant) {
        self.phase = Phase::Idle;
        if self.t0 < self.measured {
            return; // warm-up: done, not counted
        }
        self.local.transactions += 1;
        let ns = at.saturating_duration_since(self.t0).as_nanos() as u64;
        self.sink.record(&self.local, ns, self.event.kind);
    }

    /// The client ends: the next [`Client::next`] says how (once; Normal after).
    fn end(&mut self, e: ClientEnd) {
        self.phase = Phase::Ended(Some(e));
    }
}

/// How long a client that lost its connection without --reconnect waits for
/// the managed server's postmaster to show as exited (see [`Client::on_error`]).
const POSTMASTER_EXIT_WAIT: Duration = Duration::from_millis(500);

/// The thread driver: one client on its own OS thread and blocking socket,
/// until the deadline, Ctrl-C or a fatal error.
fn thread_client(mut conn: WireConn, mut client: Client, shared: &Shared) -> ClientEnd {
    let mut out = BytesMut::with_capacity(8192);
    loop {
        match client.next(Instant::now(), shared.stopped(), &mut out) {
            Next::Exchange => match conn.exchange(&mut out) {
                Ok(reply) => client.on_reply(reply, Instant::now(), &mut out),
                Err(e) => client.on_error(e, Instant::now(), &mut out),
            },
            // Sleep in short steps so Ctrl-C and the deadline still end the wait.
            Next::WaitUntil(t) => std::thread::sleep(
                t.saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(50)),
            ),
            Next::Reconnect => match shared.open() {
                Ok(c) => {
                    conn = c;
                    client.reconnected(Ok(()), Instant::now(), &mut out);
                }
                Err(e) => client.reconnected(Err(e.to_string()), Instant::now(), &mut out),
            },
            Next::End(e) => return e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_picks_uring_by_transport_and_client_count_where_usable() {
        use ClientIo::*;
        use Transport::*;
        let (yes, no) = (|| true, || false);
        for t in [Unix, Tcp, Tls] {
            let from = t.auto_rule().uring_from_clients_per_core;
            assert_eq!(Auto.resolve(2 * from - 1, 2, t, yes), Threads, "{t:?}");
            assert_eq!(Auto.resolve(2 * from, 2, t, yes), Uring, "{t:?}");
            assert_eq!(Auto.resolve(from, 1, t, yes), Uring, "{t:?}");
            assert_eq!(Auto.resolve(from, 0, t, yes), Uring, "{t:?}");
            assert_eq!(Auto.resolve(1000, 2, t, no), Threads, "{t:?}");
            assert_eq!(Threads.resolve(1000, 2, t, yes), Threads);
            assert_eq!(Uring.resolve(1, 64, t, no), Uring);
            // Below the count the kernel is not asked.
            assert_eq!(Auto.resolve(1, 2, t, || panic!("probed")), Threads);
        }
        assert_eq!(Auto.name(), "auto");
        assert_eq!(Tls.name(), "tls");
    }

    #[test]
    fn ring_threads_follow_the_transport_the_cores_and_the_ask() {
        use Transport::*;
        // A socket: one ring up to 32 clients.
        assert_eq!(ring_threads(16, 2, Unix, None), 1);
        assert_eq!(ring_threads(33, 2, Unix, None), 2);
        assert_eq!(ring_threads(1000, 2, Unix, None), 2);
        // TCP and TLS: one ring per few clients, at most one per core.
        for t in [Tcp, Tls] {
            let per = t.auto_rule().clients_per_ring;
            assert_eq!(ring_threads(per, 4, t, None), 1);
            assert_eq!(ring_threads(per + 1, 4, t, None), 2);
            assert_eq!(ring_threads(1000, 2, t, None), 2);
        }
        // Asked for: as asked, but never more threads than clients, nor none.
        assert_eq!(ring_threads(16, 2, Unix, Some(4)), 4);
        assert_eq!(ring_threads(3, 2, Tcp, Some(8)), 3);
        assert_eq!(ring_threads(0, 2, Tcp, Some(0)), 1);
    }

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
