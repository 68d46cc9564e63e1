//! The io_uring client driver: a few threads, each owning one ring and many
//! connections. Every client runs the same statement state machine as the
//! thread driver ([`crate::runner::Client`]) with one exchange in flight at a
//! time, so the statements, their order, the counting, retries and reconnects
//! are the thread driver's; only the waiting differs. A thread queues the
//! sends of every client that is ready, submits
//! them together in one `io_uring_enter` that also waits for completions,
//! and advances each client whose reply is complete.
//!
//! Connecting, authenticating and preparing stay blocking ([`WireConn`]),
//! before the clock starts, as sysbench does; the socket is then handed to the
//! ring, with its rustls session over TLS: an exchange is encrypted into the
//! connection's `wire` buffer before its send, and what a receive brings is
//! decrypted into `inbuf` before the reply is scanned. A reconnect after a lost connection is blocking too, but on a helper
//! thread of its own: the ring thread goes on with its other clients, and
//! takes the new socket (or the failure) when the helper hands it over, within
//! 2 ms (`RECONNECT_POLL`).
//!
//! # Latency without thread-sharing artefacts
//!
//! A transaction's latency runs from the clock read just before the
//! `io_uring_enter` that hands its first send to the kernel to the arrival of
//! its last reply. Arrival is a clock read taken when the completion is
//! reaped, before any completion of that batch is processed, so the time this
//! thread then spends on other clients' replies is charged to no one. Replies
//! that arrive while the thread is busy with a batch are not left waiting for
//! the end of it: the ring is set up with IORING_SETUP_TASKRUN_FLAG, the
//! kernel raises a flag in the shared ring as soon as a completion is pending,
//! and the loop checks it (one atomic load) after every completion it
//! processes, reaping and stamping the new ones at once. What remains is at
//! most one reply's processing (microseconds).
//!
//! Kernel receive timestamps (SO_TIMESTAMPNS via recvmsg) were the other
//! candidate; on this kernel (6.18) they exist for TCP only: AF_UNIX stream
//! sockets, which managed clusters use, return no SCM_TIMESTAMPNS (checked
//! with recvmsg), so both transports use the reap-time stamp.
//! `tests/uring_client.rs` shows the measured latencies matching a mock
//! server's known hold with 64 clients on one thread.
//!
//! # Receives
//!
//! Where the kernel has them (6.10 feature check), each connection has one
//! multishot receive armed for its whole life, filling buffers from a ring of
//! provided buffers shared by the thread's connections; each buffer is copied
//! into its connection's buffer and handed back at once, so a few small
//! buffers per connection suffice. Without them, a receive (POLL_FIRST: the
//! reply is not there yet) is queued with each exchange's send, into the
//! connection's own buffer.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use std::sync::atomic::{AtomicU16, Ordering as AtomicOrdering};

use io_uring::{IoUring, Probe, cqueue, opcode, squeue, types};

use crate::client::{Client, ClientEnd, Next, Shared, Sink};
use csdchar_pgwire::message::{InBuf, ReplyScan, WireError};
use csdchar_pgwire::wire::WireConn;

/// Applies one set of io_uring setup flags to a builder.
type SetupFn = fn(&mut io_uring::Builder);

/// How long in-flight exchanges may still finish after Ctrl-C (the thread
/// driver's read timeout).
const ABORT_GRACE: Duration = Duration::from_millis(250);

/// The longest wait in the ring: Ctrl-C and other clients' failures are
/// looked at this often.
const POLL: Duration = Duration::from_millis(50);

/// How soon a ring thread picks up a reconnect's outcome while one is pending.
const RECONNECT_POLL: Duration = Duration::from_millis(2);

/// A reconnect's outcome from its helper thread: (client, socket or why not).
/// A reconnect's outcome: the socket, and its TLS session when it has one.
type Reopened = (
    usize,
    Result<(OwnedFd, Option<Box<rustls::ClientConnection>>), String>,
);

const OP_SEND: u64 = 0;
const OP_RECV: u64 = 1;

/// A ring for `conns` connections with the cheapest setup the kernel accepts
/// (single issuer + deferred task work, else cooperative task run, else none),
/// checked for the send and receive operations.
fn ring(conns: usize) -> Result<(IoUring, bool), String> {
    // Two operations in flight per connection at most (send and receive).
    let entries = (2 * conns + 8).next_power_of_two().min(32768) as u32;
    // TASKRUN_FLAG: the kernel raises a flag in the shared ring when a
    // completion is waiting to be posted, which the loop checks between
    // replies without a system call (see the module's comment).
    let attempts: [(bool, SetupFn); 4] = [
        (true, |b| {
            b.setup_coop_taskrun()
                .setup_taskrun_flag()
                .setup_single_issuer()
                .setup_defer_taskrun();
        }),
        (true, |b| {
            b.setup_coop_taskrun().setup_taskrun_flag();
        }),
        (false, |b| {
            b.setup_coop_taskrun();
        }),
        (false, |_| {}),
    ];
    let mut last = None;
    for (taskrun_flag, apply) in attempts {
        let mut b = IoUring::builder();
        b.setup_cqsize(entries * 2);
        apply(&mut b);
        match b.build(entries) {
            Ok(ring) => {
                let mut probe = Probe::new();
                if ring.submitter().register_probe(&mut probe).is_ok()
                    && !(probe.is_supported(opcode::Send::CODE)
                        && probe.is_supported(opcode::Recv::CODE))
                {
                    return Err(
                        "io_uring lacks IORING_OP_SEND/RECV (Linux 5.6 or newer is needed); \
                         use --client-io threads"
                            .into(),
                    );
                }
                return Ok((ring, taskrun_flag));
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = Some(e),
            Err(e) => return Err(unavailable(&e)),
        }
    }
    Err(unavailable(&last.expect("an attempt failed")))
}

fn unavailable(e: &io::Error) -> String {
    let why = match e.raw_os_error() {
        Some(libc::ENOSYS) => "the kernel was built without io_uring".to_string(),
        Some(libc::EPERM | libc::EACCES) => {
            "io_uring_setup was denied (kernel.io_uring_disabled, or a seccomp/container policy)"
                .to_string()
        }
        Some(libc::ENOMEM) => "not enough locked memory for the ring (raise ulimit -l)".into(),
        _ => format!("io_uring_setup failed: {e}"),
    };
    format!("io_uring is unavailable for the database clients: {why}; use --client-io threads")
}

/// Whether this kernel and process can run the io_uring driver.
pub fn probe() -> Result<(), String> {
    ring(1).map(drop)
}

/// One client's connection in a ring.
struct Conn {
    /// None once the client has ended (or its socket was given up).
    fd: Option<OwnedFd>,
    /// The TLS session over TLS: `out` is encrypted into `wire`, which is
    /// what is sent, and what arrives is decrypted into `inbuf`.
    tls: Option<Box<rustls::ClientConnection>>,
    /// Ciphertext to send (TLS only).
    wire: BytesMut,
    /// Where one receive lands before decryption, when there are no provided
    /// buffers (TLS only).
    raw: Vec<u8>,
    client: Client,
    /// The exchange being sent; untouched while a send is in flight.
    out: BytesMut,
    /// Bytes of `out` the kernel has taken.
    sent: usize,
    inbuf: InBuf,
    scan: ReplyScan,
    send_busy: bool,
    recv_busy: bool,
    /// The exchange's outcome, delivered once no operation is in flight: the
    /// reply's arrival, or the failure.
    outcome: Option<Result<Instant, WireError>>,
    /// An exchange is in flight (its reply is awaited). A multishot receive
    /// stays armed between exchanges, so `recv_busy` does not say this.
    exchanging: bool,
    /// Shut down by us after Ctrl-C: a failure is an abort, not a lost connection.
    aborting: bool,
    /// A helper thread is connecting it again; nothing is in flight meanwhile.
    reconnecting: bool,
    ended: bool,
}

impl Conn {
    fn busy(&self) -> bool {
        self.send_busy || self.recv_busy
    }
}

/// Starts ring thread `t` for clients `ids` (their numbers seed their
/// random streams, as in the thread driver), counting into `sink`.
pub(crate) fn spawn(
    t: usize,
    ids: Vec<usize>,
    shared: Arc<Shared>,
    sink: Sink,
) -> io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("uring-client-{t}"))
        .stack_size(512 * 1024)
        .spawn(move || {
            // Every client connects and prepares first (blocking, as sysbench
            // does before its clock starts); then the ring takes the sockets.
            let ready = connect_all(&shared, ids.len());
            let ring = ring(ids.len());
            let Some(start) = shared.arrive(ids.len()) else {
                return; // the run was called off before it started
            };
            let (ring, taskrun_flag) = match ring {
                Ok(r) => r,
                Err(m) => return shared.ended(ClientEnd::Failed(m)),
            };
            let mut conns = Vec::with_capacity(ids.len());
            for (i, r) in ids.iter().zip(ready) {
                match r.map(WireConn::into_socket) {
                    Ok((fd, tls)) => conns.push(Conn {
                        fd: Some(fd),
                        raw: if tls.is_some() {
                            vec![0; 17 * 1024]
                        } else {
                            Vec::new()
                        },
                        tls,
                        wire: BytesMut::new(),
                        client: shared.client(*i, start, sink.clone()),
                        out: BytesMut::with_capacity(1024),
                        sent: 0,
                        inbuf: InBuf::new(8 * 1024),
                        scan: ReplyScan::new(shared.workload.keeps_rows),
                        send_busy: false,
                        recv_busy: false,
                        outcome: None,
                        exchanging: false,
                        aborting: false,
                        reconnecting: false,
                        ended: false,
                    }),
                    Err(e) => shared.ended(ClientEnd::Failed(e.to_string())),
                }
            }
            // Multishot receives into provided buffers where the kernel has
            // them (checked by a 6.10 feature; multishot receive is 6.0,
            // buffer rings 5.19), else one receive per exchange.
            let bufs = if ring.params().is_feature_recvsend_bundle() {
                let count = (2 * conns.len()).next_power_of_two().clamp(64, 4096) as u16;
                BufRing::new(&ring, count, 2048).ok()
            } else {
                None
            };
            let (reopened_tx, reopened) = std::sync::mpsc::channel();
            Driver {
                ring,
                bufs,
                taskrun_flag,
                conns,
                shared,
                reopened_tx,
                reopened,
                reconnecting: 0,
                timers: BinaryHeap::new(),
                just_sent: Vec::new(),
                cqes: Vec::new(),
            }
            .run();
        })
}

/// `n` connections, opened (connected, authenticated, prepared) by up to 16
/// short-lived threads at once: each waits for a backend to start, and a
/// thousand of them one after another would take seconds.
fn connect_all(shared: &Shared, n: usize) -> Vec<Result<WireConn, WireError>> {
    let mut slots: Vec<Option<Result<WireConn, WireError>>> = (0..n).map(|_| None).collect();
    let per = n.div_ceil(16).max(1);
    std::thread::scope(|s| {
        for chunk in slots.chunks_mut(per) {
            let opened = std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn_scoped(s, move || {
                    for slot in chunk.iter_mut() {
                        *slot = Some(shared.open());
                    }
                });
            // No thread: this chunk's slots stay empty and fail below.
            drop(opened);
        }
    });
    slots
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(WireError::Setup(
                    "could not start a thread to connect this client".into(),
                ))
            })
        })
        .collect()
}

struct Driver {
    ring: IoUring,
    /// The kernel flags waiting completions (IORING_SETUP_TASKRUN_FLAG).
    taskrun_flag: bool,
    conns: Vec<Conn>,
    /// Shared with the other ring threads and with the reconnect helpers.
    shared: Arc<Shared>,
    /// Where the helpers hand their outcome over, and where it is taken.
    reopened_tx: std::sync::mpsc::Sender<Reopened>,
    reopened: std::sync::mpsc::Receiver<Reopened>,
    /// Clients whose helper has not handed over yet.
    reconnecting: usize,
    /// Clients waiting (rate schedule, reconnect pause) until an instant.
    timers: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Clients whose exchange was queued since the last submission.
    just_sent: Vec<usize>,
    /// Completions reaped (user data, result, flags), with their arrival.
    cqes: Vec<(u64, i32, u32, Instant)>,
    /// Provided buffers of the multishot receives; None: one receive per
    /// exchange into the connection's buffer (kernels before 5.19).
    bufs: Option<BufRing>,
}

impl Driver {
    fn run(mut self) {
        let mut live = self.conns.len();
        let mut stop_seen: Option<Instant> = None;
        let now = Instant::now();
        let stopped = self.shared.stopped();
        for c in 0..self.conns.len() {
            if self.advance(c, now, stopped) {
                live -= 1;
            }
        }
        while live > 0 {
            let before = self.stamp_sends();
            let longest = if self.reconnecting > 0 {
                RECONNECT_POLL
            } else {
                POLL
            };
            let wait = self
                .timers
                .peek()
                .map_or(longest, |Reverse((t, _))| {
                    t.saturating_duration_since(before)
                })
                .min(longest);
            let ts = types::Timespec::new()
                .sec(wait.as_secs())
                .nsec(wait.subsec_nanos());
            let args = types::SubmitArgs::new().timespec(&ts);
            match self.ring.submitter().submit_with_args(1, &args) {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ETIME | libc::EINTR | libc::EAGAIN | libc::EBUSY)
                    ) => {}
                Err(e) => {
                    self.shared
                        .ended(ClientEnd::Failed(format!("io_uring_enter: {e}")));
                    break;
                }
            }
            // Arrival of everything in this batch: before any of it is processed.
            self.cqes.clear();
            self.reap(Instant::now());
            let stopped = self.shared.stopped();
            let mut k = 0;
            while k < self.cqes.len() {
                let (ud, res, flags, arrived) = self.cqes[k];
                k += 1;
                let c = (ud >> 1) as usize;
                if self.complete(c, ud & 1, res, flags, arrived)
                    && self.advance(c, arrived, stopped)
                {
                    live -= 1;
                }
                // Replies that arrived while this thread was busy with the
                // batch: submit what is queued, and reap and stamp them now
                // rather than after the whole batch.
                if self.taskrun_flag && self.ring.submission().taskrun() {
                    self.stamp_sends();
                    let _ = self.ring.submit();
                    self.reap(Instant::now());
                }
            }
            let now = Instant::now();
            while self.reconnecting > 0
                && let Ok((c, r)) = self.reopened.try_recv()
            {
                self.reconnecting -= 1;
                let conn = &mut self.conns[c];
                conn.reconnecting = false;
                let r = r.map(|(fd, tls)| {
                    conn.fd = Some(fd);
                    conn.inbuf = InBuf::new(8 * 1024);
                    if tls.is_some() && conn.raw.is_empty() {
                        conn.raw = vec![0; 17 * 1024];
                    }
                    conn.tls = tls;
                });
                conn.client.reconnected(r, now, &mut conn.out);
                if self.advance(c, now, stopped) {
                    live -= 1;
                }
            }
            while let Some(&Reverse((t, c))) = self.timers.peek() {
                if t > now && !stopped {
                    break;
                }
                self.timers.pop();
                if !self.conns[c].exchanging
                    && !self.conns[c].ended
                    && !self.conns[c].reconnecting
                    && self.advance(c, now, stopped)
                {
                    live -= 1;
                }
            }
            // Ctrl-C: exchanges in flight get the thread driver's grace, then
            // their sockets are shut down and they end unfinished, uncounted.
            if self
                .shared
                .settings
                .interrupt
                .load(std::sync::atomic::Ordering::Relaxed)
            {
                let seen = *stop_seen.get_or_insert(now);
                if now.duration_since(seen) >= ABORT_GRACE {
                    for conn in &mut self.conns {
                        if conn.exchanging && !conn.aborting {
                            conn.aborting = true;
                            shutdown(conn.fd.as_ref());
                        }
                    }
                }
            }
        }
        self.drain();
    }

    /// The clock read closest to the sends, just before the submission: the
    /// transactions that start in it start here.
    fn stamp_sends(&mut self) -> Instant {
        let before = Instant::now();
        for c in self.just_sent.drain(..) {
            self.conns[c].client.sent(before);
        }
        before
    }

    /// Appends the completions in the ring to `cqes`, arrived `at`.
    fn reap(&mut self, at: Instant) {
        self.cqes.extend(
            self.ring
                .completion()
                .map(|cqe| (cqe.user_data(), cqe.result(), cqe.flags(), at)),
        );
    }

    /// Takes one completion of client `c`; true when its exchange is over
    /// (delivered to its state machine) and it should be advanced.
    fn complete(&mut self, c: usize, op: u64, res: i32, flags: u32, at: Instant) -> bool {
        let conn = &mut self.conns[c];
        if op == OP_SEND {
            conn.send_busy = false;
            if conn.ended {
                return false;
            }
            if res < 0 {
                fail(conn, lost(res));
            } else {
                conn.sent += res as usize;
                if conn.sent < outgoing(conn).len() && conn.outcome.is_none() {
                    // A short send: the rest goes in another.
                    push(&mut self.ring, send_entry(conn, c));
                    conn.send_busy = true;
                }
            }
        } else {
            // A multishot receive stays armed while the kernel says "more".
            if !cqueue::more(flags) {
                conn.recv_busy = false;
            }
            let provided = cqueue::buffer_select(flags);
            let mut tls_error = None;
            if res > 0 && !conn.ended {
                let n = res as usize;
                match (provided, &mut self.bufs, &mut conn.tls) {
                    (Some(bid), Some(bufs), Some(tls)) => {
                        tls_error = decrypt(tls, bufs.get(bid, n), &mut conn.inbuf).err();
                    }
                    (Some(bid), Some(bufs), None) => conn.inbuf.extend(bufs.get(bid, n)),
                    (_, _, Some(tls)) => {
                        tls_error = decrypt(tls, &conn.raw[..n], &mut conn.inbuf).err();
                    }
                    _ => conn.inbuf.filled(n),
                }
            }
            if let (Some(bid), Some(bufs)) = (provided, &mut self.bufs) {
                bufs.give_back(bid);
            }
            if conn.ended {
                return false;
            }
            if let Some(e) = tls_error {
                let e = conn.scan.lost(e);
                fail(conn, e);
                return false;
            }
            match res {
                n if n > 0 => match scan(conn) {
                    Ok(true) => {
                        conn.outcome.get_or_insert(Ok(at));
                    }
                    Ok(false) => {
                        if !conn.recv_busy && conn.outcome.is_none() {
                            self.arm_recv(c);
                        }
                    }
                    Err(e) => fail(conn, e),
                },
                0 => {
                    let e = conn.scan.lost("the server closed the connection".into());
                    fail(conn, e)
                }
                // Out of provided buffers: the multishot ended; the data waits in the socket.
                n if n == -libc::ENOBUFS && conn.outcome.is_none() => self.arm_recv(c),
                _ => {
                    let e = conn
                        .scan
                        .lost(io::Error::from_raw_os_error(-res).to_string());
                    fail(conn, e)
                }
            }
        }
        let conn = &mut self.conns[c];
        if !conn.exchanging {
            // The connection failed between exchanges: the next one hears of it.
            return false;
        }
        // A reply is complete once its send is; a failure once nothing is in flight.
        let ready = match &conn.outcome {
            Some(Ok(_)) => !conn.send_busy,
            Some(Err(_)) => !conn.busy(),
            None => false,
        };
        if !ready {
            return false;
        }
        let outcome = conn.outcome.take().expect("checked");
        conn.exchanging = false;
        conn.out.clear();
        conn.sent = 0;
        match outcome {
            Ok(at) => conn.client.on_reply(conn.scan.reply(), at, &mut conn.out),
            Err(_) if conn.aborting => conn.client.on_error(WireError::Aborted, at, &mut conn.out),
            Err(e) => conn.client.on_error(e, at, &mut conn.out),
        }
        true
    }

    /// Arms client `c`'s receive: multishot into the provided buffers, or
    /// one receive into its own buffer.
    fn arm_recv(&mut self, c: usize) {
        let conn = &mut self.conns[c];
        let fd = types::Fd(conn.fd.as_ref().map_or(-1, AsRawFd::as_raw_fd));
        let e = if self.bufs.is_some() {
            opcode::RecvMulti::new(fd, BGID).build()
        } else if conn.tls.is_some() {
            // Ciphertext first, decrypted on completion.
            opcode::Recv::new(fd, conn.raw.as_mut_ptr(), conn.raw.len() as u32)
                .ioprio(RECVSEND_POLL_FIRST)
                .build()
        } else {
            let spare = conn.inbuf.spare();
            // POLL_FIRST: the reply is not there yet; skip the attempt that would fail.
            opcode::Recv::new(fd, spare.as_mut_ptr(), spare.len() as u32)
                .ioprio(RECVSEND_POLL_FIRST)
                .build()
        };
        conn.recv_busy = true;
        push(&mut self.ring, e.user_data(((c as u64) << 1) | OP_RECV));
    }

    /// Asks client `c` what next and does it; true when the client has ended.
    fn advance(&mut self, c: usize, now: Instant, stopped: bool) -> bool {
        loop {
            let conn = &mut self.conns[c];
            match conn.client.next(now, stopped, &mut conn.out) {
                Next::Exchange if matches!(conn.outcome, Some(Err(_))) && !conn.busy() => {
                    // Lost while idle (the server closed it): this exchange fails without a send.
                    let Some(Err(e)) = conn.outcome.take() else {
                        unreachable!("matched")
                    };
                    conn.out.clear();
                    conn.client.on_error(e, now, &mut conn.out);
                }
                Next::Exchange => {
                    conn.exchanging = true;
                    conn.scan.reset();
                    conn.sent = 0;
                    if let Some(tls) = &mut conn.tls
                        && let Err(e) = encrypt(tls, &conn.out, &mut conn.wire)
                    {
                        let e = conn.scan.lost(e);
                        conn.exchanging = false;
                        conn.out.clear();
                        conn.client.on_error(e, now, &mut conn.out);
                        continue;
                    }
                    let s = send_entry(conn, c);
                    conn.send_busy = true;
                    push(&mut self.ring, s);
                    if !conn.recv_busy {
                        self.arm_recv(c);
                    }
                    self.just_sent.push(c);
                    return false;
                }
                Next::WaitUntil(t) => {
                    self.timers.push(Reverse((t, c)));
                    return false;
                }
                Next::Reconnect => {
                    // Blocking, on a helper thread: this one goes on with
                    // the others (see the module's comment). Nothing is in
                    // flight on the old socket: the failure was delivered.
                    conn.fd = None;
                    let (shared, tx) = (Arc::clone(&self.shared), self.reopened_tx.clone());
                    let helper = std::thread::Builder::new()
                        .name(format!("reconnect-{c}"))
                        .stack_size(256 * 1024)
                        .spawn(move || {
                            let r = shared
                                .open()
                                .map(WireConn::into_socket)
                                .map_err(|e| e.to_string());
                            // The ring thread may be gone (the run ended): nothing to hand over.
                            let _ = tx.send((c, r));
                        });
                    match helper {
                        Ok(_) => {
                            conn.reconnecting = true;
                            self.reconnecting += 1;
                            return false;
                        }
                        Err(e) => conn.client.reconnected(
                            Err(format!("could not start a thread to reconnect: {e}")),
                            Instant::now(),
                            &mut conn.out,
                        ),
                    }
                }
                Next::End(e) => {
                    conn.ended = true;
                    if let Some(fd) = conn.fd.take() {
                        terminate(&fd, conn.tls.as_deref_mut());
                        // An armed multishot receive ends with the socket.
                        if conn.recv_busy {
                            shutdown(Some(&fd));
                        }
                    }
                    self.shared.ended(e);
                    return true;
                }
            }
        }
    }

    /// Before the ring goes away: no operation may still point into a
    /// connection's buffers. Shuts down what is in flight and reaps it.
    fn drain(&mut self) {
        let mut busy = 0;
        for conn in &mut self.conns {
            if conn.busy() {
                shutdown(conn.fd.as_ref());
                busy += usize::from(conn.send_busy) + usize::from(conn.recv_busy);
            }
        }
        let give_up = Instant::now() + Duration::from_secs(10);
        while busy > 0 {
            let ts = types::Timespec::new().nsec(100_000_000);
            let r = self
                .ring
                .submitter()
                .submit_with_args(1, &types::SubmitArgs::new().timespec(&ts));
            let broken = matches!(&r, Err(e) if !matches!(
                e.raw_os_error(),
                Some(libc::ETIME | libc::EINTR | libc::EAGAIN | libc::EBUSY)
            ));
            if broken || Instant::now() > give_up {
                // Leak the buffers rather than free memory the kernel may still write.
                std::mem::forget(std::mem::take(&mut self.conns));
                std::mem::forget(self.bufs.take());
                return;
            }
            for cqe in self.ring.completion() {
                let conn = &mut self.conns[(cqe.user_data() >> 1) as usize];
                if cqe.user_data() & 1 == OP_SEND {
                    conn.send_busy = false;
                    busy -= 1;
                } else {
                    if let (Some(bid), Some(bufs)) =
                        (cqueue::buffer_select(cqe.flags()), &mut self.bufs)
                    {
                        bufs.give_back(bid);
                    }
                    if !cqueue::more(cqe.flags()) {
                        conn.recv_busy = false;
                        busy -= 1;
                    }
                }
            }
        }
        if self.bufs.is_some() {
            let _ = self.ring.submitter().unregister_buf_ring(BGID);
        }
    }
}

/// The provided-buffer ring of one driver thread: `count` buffers of `size`
/// bytes the kernel picks from for every multishot receive; each is copied
/// into its connection's buffer and given back at once.
struct BufRing {
    /// The ring of buffer descriptors shared with the kernel (page-aligned mapping).
    entries: *mut types::BufRingEntry,
    map_len: usize,
    mask: u16,
    tail: u16,
    size: usize,
    bufs: Vec<u8>,
}

/// The buffer group id of the multishot receives.
const BGID: u16 = 0;

/// IORING_RECVSEND_POLL_FIRST (ioprio of a receive).
const RECVSEND_POLL_FIRST: u16 = 1;

impl BufRing {
    /// Registers `count` (a power of two) buffers of `size` bytes with `ring`.
    fn new(ring: &IoUring, count: u16, size: usize) -> io::Result<BufRing> {
        let map_len = (usize::from(count) * std::mem::size_of::<types::BufRingEntry>())
            .next_multiple_of(4096);
        use rustix::mm::{MapFlags, ProtFlags, mmap_anonymous};
        // Safety: an anonymous private mapping, no file, no fixed address.
        let addr = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                map_len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        }?;
        let mut r = BufRing {
            entries: addr.cast(),
            map_len,
            mask: count - 1,
            tail: 0,
            size,
            // calloc'd: pages become resident only as the kernel fills them.
            bufs: vec![0; usize::from(count) * size],
        };
        // Safety: the mapping is page-aligned, zeroed (tail 0) and `count`
        // entries long; it and `bufs` outlive the registration (`drain`
        // unregisters it after the last receive, before they are freed).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(addr as u64, count, BGID, 0)?;
        }
        for bid in 0..count {
            r.give_back(bid);
        }
        Ok(r)
    }

    /// The first `n` bytes of buffer `bid`, which the kernel filled.
    fn get(&self, bid: u16, n: usize) -> &[u8] {
        let at = usize::from(bid) * self.size;
        &self.bufs[at..at + n.min(self.size)]
    }

    /// Hands buffer `bid` back to the kernel.
    fn give_back(&mut self, bid: u16) {
        let at = usize::from(bid) * self.size;
        // Safety: `tail & mask` indexes the mapping's `count` entries; the
        // kernel only reads entries between its head and the published tail,
        // and this one is past the tail until the store below publishes it.
        unsafe {
            let e = &mut *self.entries.add(usize::from(self.tail & self.mask));
            e.set_addr(self.bufs.as_ptr().add(at) as u64);
            e.set_len(self.size as u32);
            e.set_bid(bid);
            self.tail = self.tail.wrapping_add(1);
            let tail = types::BufRingEntry::tail(self.entries).cast::<AtomicU16>();
            (*tail).store(self.tail, AtomicOrdering::Release);
        }
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // Safety: the mapping made in `new`, unregistered (or leaked with the ring) by now.
        let _ = unsafe { rustix::mm::munmap(self.entries.cast(), self.map_len) };
    }
}

/// Scans what arrived; true once the reply is complete (ReadyForQuery).
fn scan(conn: &mut Conn) -> Result<bool, WireError> {
    while conn.inbuf.has_message()? {
        let (tag, body) = conn.inbuf.message();
        let done = conn.scan.on_message(tag, body);
        conn.inbuf.consume();
        if done {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The exchange failed: the first failure is its outcome; the socket is shut
/// down so the other operation in flight ends too.
fn fail(conn: &mut Conn, e: WireError) {
    if conn.outcome.is_none() {
        conn.outcome = Some(Err(e));
    }
    if conn.busy() {
        shutdown(conn.fd.as_ref());
    }
}

fn lost(res: i32) -> WireError {
    WireError::Lost(io::Error::from_raw_os_error(-res).to_string())
}

/// What goes on the wire: the exchange, or its ciphertext over TLS.
fn outgoing(conn: &Conn) -> &[u8] {
    if conn.tls.is_some() {
        &conn.wire
    } else {
        &conn.out
    }
}

/// Encrypts an exchange into `wire` (replacing what was there).
fn encrypt(
    tls: &mut rustls::ClientConnection,
    plain: &[u8],
    wire: &mut BytesMut,
) -> Result<(), String> {
    use std::io::Write;
    wire.clear();
    tls.writer()
        .write_all(plain)
        .map_err(|e| format!("TLS: {e}"))?;
    let mut w = wire.writer();
    while tls.wants_write() {
        tls.write_tls(&mut w).map_err(|e| format!("TLS: {e}"))?;
    }
    Ok(())
}

/// Decrypts what arrived into `inbuf`.
fn decrypt(
    tls: &mut rustls::ClientConnection,
    mut cipher: &[u8],
    inbuf: &mut InBuf,
) -> Result<(), String> {
    use std::io::Read;
    while !cipher.is_empty() {
        if tls.read_tls(&mut cipher).map_err(|e| format!("TLS: {e}"))? == 0 {
            break;
        }
        let state = tls.process_new_packets().map_err(|e| format!("TLS: {e}"))?;
        let mut left = state.plaintext_bytes_to_read();
        while left > 0 {
            // Straight into the reply buffer: no bounce buffer to clear and copy.
            let spare = inbuf.spare_at_least(left.min(16 * 1024));
            let room = left.min(spare.len());
            let n = tls
                .reader()
                .read(&mut spare[..room])
                .map_err(|e| format!("TLS: {e}"))?;
            if n == 0 {
                break;
            }
            inbuf.filled(n);
            left -= n;
        }
    }
    Ok(())
}

fn send_entry(conn: &Conn, c: usize) -> squeue::Entry {
    let fd = conn.fd.as_ref().map_or(-1, AsRawFd::as_raw_fd);
    let rest = &outgoing(conn)[conn.sent..];
    // MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE.
    opcode::Send::new(types::Fd(fd), rest.as_ptr(), rest.len() as u32)
        .flags(rustix::net::SendFlags::NOSIGNAL.bits() as i32)
        .build()
        .user_data(((c as u64) << 1) | OP_SEND)
}

fn push(ring: &mut IoUring, e: squeue::Entry) {
    // Safety: the entry points into its connection's `out` (send) or `inbuf`
    // (receive); neither is touched, moved or freed while the operation is in
    // flight (`send_busy`/`recv_busy`: the state machine only writes `out`
    // and the scan only reads `inbuf` after both completed, and `drain` reaps
    // every operation before the connections are dropped). The fd stays open
    // until then too.
    while unsafe { ring.submission().push(&e) }.is_err() {
        // SQ full (more than two entries per connection cannot happen; never drop one).
        let _ = ring.submit();
    }
}

/// Shuts a socket down so the operations in flight on it complete.
fn shutdown(fd: Option<&OwnedFd>) {
    if let Some(fd) = fd {
        let _ = rustix::net::shutdown(fd, rustix::net::Shutdown::Both);
    }
}

/// Polite goodbye (Terminate) so the server logs no "unexpected EOF"; the
/// socket closes when `fd` drops.
fn terminate(fd: &OwnedFd, tls: Option<&mut rustls::ClientConnection>) {
    let plain = [b'X', 0, 0, 0, 4];
    // Over TLS: the Terminate encrypted, then close_notify.
    let mut wire = BytesMut::new();
    let msg: &[u8] = match tls {
        Some(t) => {
            if encrypt(t, &plain, &mut wire).is_err() {
                return;
            }
            t.send_close_notify();
            let mut w = (&mut wire).writer();
            while t.wants_write() {
                if t.write_tls(&mut w).is_err() {
                    break;
                }
            }
            &wire
        }
        None => &plain,
    };
    let _ = rustix::net::send(
        fd,
        msg,
        rustix::net::SendFlags::NOSIGNAL | rustix::net::SendFlags::DONTWAIT,
    );
}
