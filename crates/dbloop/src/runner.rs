//! The measured loop shared by every workload: every client connected and prepared
//! first, the clock started for all at once (`--start-at` too), the clients run by one
//! of two drivers ([`crate::settings::ClientIo`]: one OS thread and blocking wire
//! connection per client, or a few threads each driving many connections through
//! io_uring, [`crate::uring_client`]), and the run reported per interval and in total.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use csdchar_core::stats::{LatencyRecorder, LatencyStats};
use csdchar_pgwire::conn::{ConnTarget, Transport};
use csdchar_pgwire::env::ProcessEnv;
use csdchar_pgwire::error::DbError;
use csdchar_pgwire::wire::WireConn;

use crate::client::{
    Client, ClientEnd, ClientStats, Latencies, Next, Shared, Sink, StartGate, Tally,
};
use crate::event::Workload;
use crate::settings::{ClientIo, ClientIoSettings, RunSettings, ring_threads};

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
    /// When the clients' clock started (the warm-up first), by the wall clock; None when the
    /// step did not start.
    pub began: Option<std::time::SystemTime>,
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

/// Whether this kernel and process can run [`ClientIo::Uring`]; why not otherwise.
pub fn uring_probe() -> Result<(), String> {
    crate::uring_client::probe()
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
    let target = ConnTarget::parse(conninfo, &ProcessEnv).map_err(DbError::from)?;
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
            .map_err(|e| DbError::other(format!("TLS probe: {e}")))?
            .map_err(|e| DbError::other(e.to_string()))?
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
        return Err(DbError::other(e));
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
        .map_err(|e| DbError::other(format!("client start: {e}")))?
    };
    // Interrupted while waiting for --start-at: the clients were released
    // without running, and the step did not start.
    let started = opened.is_some();
    let began = opened.map(|o| o.1);
    let start = opened.map_or_else(Instant::now, |o| o.0) + settings.warmup;
    // The I/O sampler's own connection, opened while the clients warm up.
    let mut sampler = None;
    if started
        && settings.io_sampling
        && let Ok(client) = csdchar_pgwire::client::connect(conninfo).await
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
    // The measured time ends with the clients, before the wait for their
    // backends below (which other load hosts' backends on the same server
    // can stretch to its timeout).
    let elapsed = start
        .elapsed()
        .as_secs_f64()
        .min(settings.time.as_secs_f64().max(0.001) + 1.0);
    // The step's figures: after the clients' backends have published their
    // last counters (at exit), over the measured time.
    let io = match (&mut sampler, &first_io) {
        (Some((client, s)), Some(first)) => {
            crate::iostat::settle(client, Duration::from_secs(3)).await;
            let end = s.sample(client).await;
            Some(first.rates(&end, elapsed))
        }
        _ => None,
    };
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
        began,
    })
}

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
