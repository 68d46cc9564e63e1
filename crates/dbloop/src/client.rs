//! One client of a run as a sans-IO state machine ([`Client`]): what it sends next, how
//! a reply or a failure is counted the way the peers count (sysbench's query classes,
//! retries on the workload's retryable SQLSTATEs, intended rollbacks, reconnects),
//! where counts go ([`Sink`]), and what the clients of a run share ([`Shared`]: the
//! start gate, the first error, Ctrl-C). Both drivers run this same machine, so the
//! counting rules the results depend on read in one place.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bytes::BytesMut;
use csdchar_core::oltp::{QueryClass, classify};
use csdchar_core::stats::LatencyRecorder;
use csdchar_pgwire::conn::ConnTarget;
use csdchar_pgwire::message::{self, Reply, WireError};
use csdchar_pgwire::wire::WireConn;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::event::{Event, EventSource, Follow, Protocol, Workload};
use crate::session::{Session, Turn};
use crate::settings::{RunSettings, ServerWatch};

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
    pub(crate) fn merge(&mut self, o: &Tally) {
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
pub(crate) struct ClientStats {
    pub(crate) total: Tally,
    pub(crate) interval: Tally,
    pub(crate) interval_lat: LatencyRecorder,
}

/// Latency of every measured transaction, overall and per kind.
pub(crate) struct Latencies {
    pub(crate) total: LatencyRecorder,
    /// (transactions, rollbacks, latency) per kind.
    pub(crate) kinds: Vec<(u64, u64, LatencyRecorder)>,
}

/// Counts what completed, the way sysbench does; the first error, if any, fails the event.
pub(crate) fn settle(reply: &Reply<'_>, t: &mut Tally) -> Result<(), WireError> {
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
pub(crate) fn open_client(
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

/// Where clients wait until all are connected; then the clock starts.
#[derive(Default)]
pub(crate) struct StartGate {
    state: Mutex<GateState>,
    changed: std::sync::Condvar,
}

#[derive(Default)]
pub(crate) struct GateState {
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
    pub(crate) fn open_when(
        &self,
        clients: usize,
        not_before: Option<SystemTime>,
        interrupt: &AtomicBool,
    ) -> Option<(Instant, SystemTime)> {
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
        let (start, wall) = (Instant::now(), SystemTime::now());
        s.start = Some(start);
        self.changed.notify_all();
        Some((start, wall))
    }

    /// Releases the waiting clients without a run.
    pub(crate) fn call_off(&self) {
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

/// What every driver thread of a run shares.
pub(crate) struct Shared {
    pub(crate) workload: Arc<Workload>,
    pub(crate) settings: RunSettings,
    pub(crate) target: ConnTarget,
    pub(crate) describe: Arc<str>,
    pub(crate) halt: Arc<AtomicBool>,
    pub(crate) error: Mutex<Option<String>>,
    pub(crate) gate: StartGate,
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

/// Where a client's completed transactions are counted: its (or its ring
/// thread's) interval counters and the run's precise histograms.
#[derive(Clone)]
pub(crate) struct Sink {
    pub(crate) stats: Arc<Mutex<ClientStats>>,
    pub(crate) total_lat: Arc<Mutex<Latencies>>,
}

impl Sink {
    /// Counts a measured transaction that failed: its tally, no latency.
    fn record_failed(&self, local: &Tally) {
        let mut s = self.stats.lock().expect("not poisoned");
        s.total.merge(local);
        s.interval.merge(local);
    }

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
pub(crate) enum Phase {
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
    /// A session's exchange is in flight ([`Workload::sessions`]).
    Session,
    /// A session waits (`\sleep`) until this instant.
    SessionWait(Instant),
    /// Done; how, until [`Client::next`] has said it.
    Ended(Option<ClientEnd>),
}

/// Why a client rolls back after an error ([`Phase::RollingBack`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RollbackCause {
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
    postmaster: Option<Arc<dyn ServerWatch>>,
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
    /// The client's session, for workloads that drive their connection themselves.
    session: Option<Box<dyn Session>>,
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
        let session = workload.sessions.as_ref().map(|f| {
            let mut s = f(i);
            s.start(measured);
            s
        });
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
            session,
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
                Phase::Event { .. } | Phase::RollingBack { .. } | Phase::Session => {
                    return Next::Exchange;
                }
                Phase::SessionWait(until) => {
                    if stopped {
                        self.end(ClientEnd::Normal);
                        continue;
                    }
                    if now < *until {
                        return Next::WaitUntil(*until);
                    }
                    let exceeded = now >= self.deadline;
                    let turn = match self.session.as_mut() {
                        Some(s) => s.resume(now, exceeded, out),
                        None => Turn::Stop,
                    };
                    self.turn(turn, now);
                }
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
                    self.local = Tally::default();
                    if let Some(s) = self.session.as_mut() {
                        // A session's transaction starts now (pgbench's clock starts
                        // before its first command, which may be a meta-command).
                        self.t0_at_send = false;
                        let turn = s.begin(now, out);
                        self.turn(turn, now);
                        continue;
                    }
                    self.t0_at_send = true;
                    // An exchange, the end, or (no statements) done at once: see above.
                    self.attempt(now, out);
                }
            }
        }
    }

    /// What a session's call said, applied at `at`.
    fn turn(&mut self, turn: Turn, at: Instant) {
        match turn {
            Turn::Exchange => self.phase = Phase::Session,
            Turn::WaitUntil(t) => self.phase = Phase::SessionWait(t),
            Turn::End(end) => match end.failed {
                None => {
                    self.event.kind = end.kind;
                    self.finish(at);
                }
                Some(code) => {
                    self.phase = Phase::Idle;
                    if self.t0 >= self.measured {
                        *self.local.errors.entry(code.to_string()).or_default() += 1;
                        self.sink.record_failed(&self.local);
                    }
                }
            },
            Turn::Stop => self.end(ClientEnd::Normal),
            Turn::Fail(m) => self.end(ClientEnd::Failed(m)),
        }
    }

    /// Draws the event and encodes its first exchange; an event without
    /// statements is finished at once.
    fn attempt(&mut self, now: Instant, out: &mut BytesMut) {
        if self.session.is_some() {
            // A session does not restart on a new connection: pgbench's client aborts.
            self.end(ClientEnd::Failed(
                "a pgbench script's client cannot go on after a reconnect".into(),
            ));
            return;
        }
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
            Phase::Session => {
                for c in reply.completed {
                    self.local.count(classify(c.returned_rows, c.rows));
                }
                let exceeded = at >= self.deadline;
                let turn = match self.session.as_mut() {
                    Some(s) => s.on_reply(&reply, at, exceeded, out),
                    None => Turn::Stop,
                };
                self.turn(turn, at);
            }
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
        match message::encode_query(out, "ROLLBACK") {
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
        if let Some(s) = self.session.as_mut() {
            s.finish();
        }
        self.phase = Phase::Ended(Some(e));
    }
}

/// How long a client that lost its connection without --reconnect waits for
/// the managed server's postmaster to show as exited (see [`Client::on_error`]).
pub(crate) const POSTMASTER_EXIT_WAIT: Duration = Duration::from_millis(500);
