//! A workload that drives its connection itself ([`Session`]): it writes each exchange,
//! reads each reply, sleeps and decides when a transaction ends, where an
//! [`crate::event::EventSource`] only draws statements in advance. pgbench's scripts run
//! this way (their interpreter lives in the workloads crate); the client state machine
//! ([`crate::client`]) still paces, times, counts and ends the run, on both drivers.

use std::time::Instant;

use bytes::BytesMut;
use csdchar_pgwire::message::Reply;

/// What a session wants after a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// `out` holds one exchange (messages ending in Sync, or one Query): send it and
    /// deliver the reply with [`Session::on_reply`].
    Exchange,
    /// Nothing to send before this instant (`\sleep`): call [`Session::resume`] then.
    WaitUntil(Instant),
    /// The transaction ended; the next [`Session::begin`] starts another.
    End(SessionEnd),
    /// The client is done: its transaction count is reached or it aborted (the
    /// session keeps why). The transaction in progress, if any, is not counted.
    Stop,
    /// The client failed and the run ends with this error (pgbench's `--exit-on-abort`).
    Fail(String),
}

/// How a session's transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionEnd {
    /// Its kind (an index into [`crate::event::Workload::kinds`], 0 when it has none).
    pub kind: usize,
    /// The SQLSTATE it failed with (after its last try), None when it succeeded: a failed
    /// transaction is counted as an error under that code, not as a transaction.
    pub failed: Option<&'static str>,
}

/// One client's conversation with its connection, told the time at every call.
/// `timer_exceeded`: the step's time is up (a session may end its error handling early).
pub trait Session: Send {
    /// The measured time starts at `measured` (before it: warm-up); called once, before
    /// the first [`Session::begin`].
    fn start(&mut self, measured: Instant);
    /// Starts a transaction at `now`.
    fn begin(&mut self, now: Instant, out: &mut BytesMut) -> Turn;
    /// The reply to the last exchange, complete at `now`.
    fn on_reply(
        &mut self,
        reply: &Reply<'_>,
        now: Instant,
        timer_exceeded: bool,
        out: &mut BytesMut,
    ) -> Turn;
    /// Goes on after [`Turn::WaitUntil`].
    fn resume(&mut self, now: Instant, timer_exceeded: bool, out: &mut BytesMut) -> Turn;
    /// The client is ending (the step's time, Ctrl-C, another client's failure, a lost
    /// connection): the session publishes what it counted.
    fn finish(&mut self);
}

/// Makes client `i`'s session.
pub type SessionFactory = Box<dyn Fn(usize) -> Box<dyn Session> + Send + Sync>;
