//! How a run is shaped ([`RunSettings`]) and which client driver runs it
//! ([`ClientIo`]: by the transport's [`AutoRule`] where io_uring measured faster), and
//! how the loop learns that a managed server is gone ([`ServerWatch`]).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use csdchar_pgwire::conn::Transport;

/// The liveness of a server csdchar manages, as the measured loop needs it: a lost
/// connection to a server known to be gone ends the run at once, with its name.
/// Managed clusters implement it (csdchar_dbload's session wraps
/// csdchar_pgcluster's postmaster watch), so the loop imports no cluster code.
pub trait ServerWatch: Send + Sync + std::fmt::Debug {
    /// Whether the server has exited, or does within `wait` (a dying process
    /// closes its sockets a moment before it shows as exited).
    fn exited_within(&self, wait: Duration) -> bool;
    /// The server in words, for messages.
    fn server(&self) -> String;
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
    pub postmaster: Option<Arc<dyn ServerWatch>>,
}

/// How the clients' connections are driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientIo {
    /// [`ClientIo::Uring`] from the transport's [`AutoRule`] client count up where the
    /// kernel allows io_uring, [`ClientIo::Threads`] otherwise: each where it measured
    /// faster (BENCHMARKS.md, issues 18 and 29).
    #[default]
    Auto,
    /// One OS thread per connection, blocking reads and writes ([`csdchar_pgwire::wire`]).
    Threads,
    /// A few threads, each with one io_uring and many connections ([`crate::uring_client`]).
    Uring,
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

impl AutoRule {
    /// [`ClientIo::Auto`]'s rule for `transport`.
    pub fn of(transport: Transport) -> AutoRule {
        match transport {
            Transport::Unix => AUTO_RULE_UNIX,
            Transport::Tcp => AUTO_RULE_TCP,
            Transport::Tls => AUTO_RULE_TLS,
        }
    }
}

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
        let rule = AutoRule::of(transport);
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
                .div_ceil(AutoRule::of(transport).clients_per_ring)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_picks_uring_by_transport_and_client_count_where_usable() {
        use ClientIo::*;
        use Transport::*;
        let (yes, no) = (|| true, || false);
        for t in [Unix, Tcp, Tls] {
            let from = AutoRule::of(t).uring_from_clients_per_core;
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
            let per = AutoRule::of(t).clients_per_ring;
            assert_eq!(ring_threads(per, 4, t, None), 1);
            assert_eq!(ring_threads(per + 1, 4, t, None), 2);
            assert_eq!(ring_threads(1000, 2, t, None), 2);
        }
        // Asked for: as asked, but never more threads than clients, nor none.
        assert_eq!(ring_threads(16, 2, Unix, Some(4)), 4);
        assert_eq!(ring_threads(3, 2, Tcp, Some(8)), 3);
        assert_eq!(ring_threads(0, 2, Tcp, Some(0)), 1);
    }
}
