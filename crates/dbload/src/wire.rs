//! A lean, blocking PostgreSQL client for the measured loop: one socket per
//! client thread, messages encoded with `postgres-protocol` (the codec
//! tokio-postgres is built on), replies scanned in place without building
//! rows. It exists because the client's CPU per statement is what the
//! benchmarks compare with sysbench's libpq: one `write` per exchange and
//! usually one `read`, no runtime, no channels, no per-row allocation.
//! Everything else (loading, DDL, snapshots) uses tokio-postgres.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use postgres_protocol::IsNull;
use postgres_protocol::message::frontend;
use tokio_postgres::config::Host;

use crate::auth;
use crate::conn::ConnTarget;
use crate::tls::SslMode;

/// How a wire exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The server answered with an error; the connection is still usable.
    #[error("{message} ({code})")]
    Db {
        /// SQLSTATE.
        code: String,
        /// Primary message.
        message: String,
    },
    /// The connection is gone (server stopped, killed, network).
    #[error("connection to the server lost: {0}")]
    Lost(String),
    /// Told to stop while waiting for the server.
    #[error("interrupted while waiting for the server")]
    Aborted,
    /// Could not connect or authenticate, or the server said something we cannot read.
    #[error("{0}")]
    Setup(String),
}

/// One statement's outcome, from its CommandComplete tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The statement returned a result set (sysbench's TUPLES_OK).
    pub returned_rows: bool,
    /// Rows returned or affected.
    pub rows: u64,
}

/// A bind parameter, sent in text format so the server's inferred types apply.
#[derive(Debug, Clone)]
pub enum Param {
    /// An integer.
    Int(i64),
    /// A string.
    Text(String),
}

/// What one exchange (up to ReadyForQuery) brought back.
#[derive(Debug)]
pub struct Reply<'a> {
    /// Completed statements, in order.
    pub completed: &'a [Completion],
    /// The rows they returned, when the connection keeps them
    /// ([`ReplyScan::keep_rows`]); empty otherwise.
    pub rows: Rows<'a>,
    /// The first error, if any (the server skips the rest up to Sync).
    pub error: Option<(String, String)>,
    /// Transaction status after the exchange: b'I' idle, b'T' in a block, b'E' failed block.
    pub status: u8,
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// TLS over TCP (rustls): records are encrypted into the socket as they
    /// are written and decrypted as they are read.
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Stream {
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tls(s) => s.sock.set_read_timeout(t),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            // One exchange, one flight of records: StreamOwned writes the
            // ciphertext out before it returns.
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tls(s) => s.flush(),
            _ => Ok(()),
        }
    }
}

/// How libpq's negotiation went wrong.
enum Negotiation {
    /// The server said no to TLS (`N`), which this mode cannot accept.
    Refused,
    /// The TLS handshake failed (certificate, alert, I/O).
    Handshake(String),
    /// The socket failed.
    Io(io::Error),
}

/// libpq's negotiation on a fresh TCP socket: an SSLRequest, the server's
/// byte, then the handshake; `N` leaves the socket plain where the mode
/// allows it. Unix sockets stay plain (libpq does not use TLS on them).
fn negotiate(stream: Stream, target: &ConnTarget) -> Result<Stream, Negotiation> {
    let Stream::Tcp(mut tcp) = stream else {
        return Ok(stream);
    };
    let tls = target.tls();
    tcp.write_all(&crate::tls::SSL_REQUEST)
        .map_err(Negotiation::Io)?;
    let mut byte = [0u8; 1];
    tcp.read_exact(&mut byte).map_err(Negotiation::Io)?;
    match crate::tls::answer(byte[0]) {
        Ok(true) => {}
        Ok(false) if tls.mode.requires_tls() => return Err(Negotiation::Refused),
        Ok(false) => return Ok(Stream::Tcp(tcp)),
        Err(m) => return Err(Negotiation::Handshake(m)),
    }
    let host = target.tls_host();
    let config = tls.client_config().map_err(Negotiation::Handshake)?;
    let name = crate::tls::server_name(&host).map_err(Negotiation::Handshake)?;
    let conn = rustls::ClientConnection::new(config, name)
        .map_err(|e| Negotiation::Handshake(format!("TLS: {e}")))?;
    let mut s = rustls::StreamOwned::new(conn, tcp);
    // Finish the handshake now, so a certificate problem is the connect's error.
    while s.conn.is_handshaking() {
        if let Err(e) = s.conn.complete_io(&mut s.sock) {
            let m = match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                Some(r) => crate::tls::describe(r, &host, tls),
                None => format!("TLS handshake: {e}"),
            };
            return Err(Negotiation::Handshake(m));
        }
    }
    Ok(Stream::Tls(Box::new(s)))
}

/// How often a blocked read looks at the abort flag.
const ABORT_POLL: Duration = Duration::from_millis(250);

/// One connection.
pub struct WireConn {
    stream: Stream,
    /// The negotiated TLS protocol and cipher; None for a plain connection.
    tls_session: Option<(String, String)>,
    out: BytesMut,
    inbuf: InBuf,
    scan: ReplyScan,
    abort: Option<Arc<AtomicBool>>,
}

impl WireConn {
    /// Connects and authenticates (see [`crate::auth`] for the methods).
    /// `abort`, when set, ends waits for the server early.
    pub fn connect(
        target: &ConnTarget,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<WireConn, WireError> {
        let fail = |e: &dyn std::fmt::Display| {
            WireError::Setup(format!(
                "cannot connect to {}: {e}{}",
                target.describe(),
                target.passfile_note()
            ))
        };
        let mut protocol = auth::protocol_for(&target.describe());
        let mode = target.tls().mode;
        // allow: plain first; prefer and up: TLS first (libpq's order).
        let mut try_tls = !matches!(mode, SslMode::Disable | SslMode::Allow);
        loop {
            let stream = open(target).map_err(|e| fail(&e))?;
            let stream = if try_tls {
                match negotiate(stream, target) {
                    Ok(s) => s,
                    Err(Negotiation::Refused) => {
                        return Err(fail(&"server does not support SSL, but SSL was required"));
                    }
                    // prefer: a failed handshake is retried without TLS, as libpq does.
                    Err(Negotiation::Handshake(_)) if mode == SslMode::Prefer => {
                        try_tls = false;
                        continue;
                    }
                    Err(Negotiation::Handshake(m)) => return Err(fail(&m)),
                    Err(Negotiation::Io(e)) => return Err(fail(&e)),
                }
            } else {
                stream
            };
            let tls_used = matches!(stream, Stream::Tls(_));
            if abort.is_some() {
                stream
                    .set_read_timeout(Some(ABORT_POLL))
                    .map_err(|e| fail(&e))?;
            }
            let tls_session = match &stream {
                Stream::Tls(t) => Some(crate::tls::session(&t.conn)),
                _ => None,
            };
            let mut conn = WireConn {
                stream,
                tls_session,
                out: BytesMut::with_capacity(8192),
                inbuf: InBuf::new(16 * 1024),
                scan: ReplyScan::default(),
                abort: abort.clone(),
            };
            match conn.startup(target, protocol) {
                Ok(()) => return Ok(conn),
                Err(StartupError::Auth(auth::AuthError::NeedsProtocol351))
                    if protocol != auth::PROTOCOL_3_51 =>
                {
                    auth::remember_351(&target.describe());
                    protocol = auth::PROTOCOL_3_51;
                }
                // allow: a server that refuses the plain connection (pg_hba's
                // hostssl, class 28) gets a TLS one.
                Err(
                    StartupError::Wire(WireError::Db { code, .. })
                    | StartupError::Auth(auth::AuthError::Server { code, .. }),
                ) if mode == SslMode::Allow && !tls_used && code.starts_with("28") => {
                    try_tls = true;
                }
                Err(StartupError::Auth(e)) => return Err(fail(&e)),
                Err(StartupError::Wire(WireError::Aborted)) => return Err(WireError::Aborted),
                Err(StartupError::Wire(WireError::Db { code, message })) => {
                    return Err(fail(&format!("{message} ({code})")));
                }
                Err(StartupError::Wire(WireError::Lost(m) | WireError::Setup(m))) => {
                    return Err(fail(&m));
                }
            }
        }
    }

    fn startup(&mut self, target: &ConnTarget, protocol: u32) -> Result<(), StartupError> {
        let cfg = target.config();
        auth::startup_message(&auth::startup_params(cfg), protocol, &mut self.out);
        self.send()?;
        let mut handshake =
            auth::Handshake::new(cfg.get_user().unwrap_or("postgres"), cfg.get_password());
        let mut authenticated = false;
        let mut answer = BytesMut::new();
        loop {
            let (tag, body) = self.next_message()?;
            if !authenticated {
                let progress = handshake.on_message(tag, body, &mut answer)?;
                self.consume();
                if !answer.is_empty() {
                    self.out.extend_from_slice(&answer);
                    answer.clear();
                    self.send()?;
                }
                authenticated = progress == auth::Progress::Authenticated;
                continue;
            }
            match tag {
                b'E' => {
                    let (code, message) = error_fields(body);
                    return Err(WireError::Db { code, message }.into());
                }
                b'Z' => {
                    self.consume();
                    return Ok(());
                }
                _ => {} // ParameterStatus, BackendKeyData, notices
            }
            self.consume();
        }
    }

    /// The negotiated TLS protocol and cipher ("TLSv1.3", "TLS13_AES_256_GCM_SHA384"); None
    /// for a plain connection.
    pub fn tls_session(&self) -> Option<&(String, String)> {
        self.tls_session.as_ref()
    }

    /// Keep the values of returned rows in replies ([`Reply::rows`]).
    pub fn keep_rows(&mut self, keep: bool) {
        self.scan = ReplyScan::new(keep);
    }

    /// Prepares named statements in one exchange.
    pub fn prepare(&mut self, statements: &[(String, String)]) -> Result<(), WireError> {
        for (name, sql) in statements {
            frontend::parse(name, sql, std::iter::empty(), &mut self.out).map_err(setup)?;
        }
        frontend::sync(&mut self.out);
        self.send()?;
        let r = self.read_reply()?;
        match r.error {
            Some((code, message)) => Err(WireError::Db { code, message }),
            None => Ok(()),
        }
    }

    /// Queues Bind + Execute of a prepared statement (nothing is sent yet).
    pub fn queue(&mut self, statement: &str, params: &[Param]) -> Result<(), WireError> {
        encode_bind_execute(&mut self.out, statement, params)
    }

    /// Queues an unnamed Parse of `sql`, then Bind + Execute (the extended protocol without preparing).
    pub fn queue_unnamed(&mut self, sql: &str, params: &[Param]) -> Result<(), WireError> {
        encode_unnamed(&mut self.out, sql, params)
    }

    /// Queues a simple-protocol query (for ROLLBACK and the like).
    pub fn queue_simple(&mut self, sql: &str) -> Result<(), WireError> {
        encode_query(&mut self.out, sql)
    }

    /// Sends `out` (one exchange, encoded with the functions below), empties
    /// it and reads the reply up to ReadyForQuery.
    pub(crate) fn exchange(&mut self, out: &mut BytesMut) -> Result<Reply<'_>, WireError> {
        let r = self.stream.write_all(out);
        out.clear();
        r.map_err(|e| WireError::Lost(e.to_string()))?;
        self.read_reply()
    }

    /// The socket, for the io_uring driver, which takes it over after the
    /// blocking connect, authentication and prepare (nothing is left unread
    /// then: every exchange ends with ReadyForQuery). No Terminate is sent.
    /// Over TLS the session comes along: the driver encrypts and decrypts.
    pub(crate) fn into_socket(
        self,
    ) -> (std::os::fd::OwnedFd, Option<Box<rustls::ClientConnection>>) {
        let mut this = std::mem::ManuallyDrop::new(self);
        // Safety: `this` is never used or dropped again; each field is moved
        // out exactly once (the stream) or dropped in place exactly once.
        unsafe {
            std::ptr::drop_in_place(&mut this.out);
            std::ptr::drop_in_place(&mut this.inbuf);
            std::ptr::drop_in_place(&mut this.scan);
            std::ptr::drop_in_place(&mut this.abort);
            std::ptr::drop_in_place(&mut this.tls_session);
            match std::ptr::read(&this.stream) {
                Stream::Tcp(s) => (s.into(), None),
                Stream::Unix(s) => (s.into(), None),
                Stream::Tls(s) => {
                    let s = *s;
                    (s.sock.into(), Some(Box::new(s.conn)))
                }
            }
        }
    }

    /// Sends what is queued plus a Sync and reads the reply up to ReadyForQuery.
    pub fn sync(&mut self) -> Result<Reply<'_>, WireError> {
        encode_sync(&mut self.out);
        self.send()?;
        self.read_reply()
    }

    /// Sends a simple query and reads its reply.
    pub fn simple(&mut self, sql: &str) -> Result<Reply<'_>, WireError> {
        self.queue_simple(sql)?;
        self.send_and_read()
    }

    /// Sends what is queued (one simple query, or messages ending in Sync) and reads the reply.
    pub fn send_and_read(&mut self) -> Result<Reply<'_>, WireError> {
        self.send()?;
        self.read_reply()
    }

    fn send(&mut self) -> Result<(), WireError> {
        let r = self.stream.write_all(&self.out);
        self.out.clear();
        r.map_err(|e| WireError::Lost(e.to_string()))
    }

    fn read_reply(&mut self) -> Result<Reply<'_>, WireError> {
        self.scan.reset();
        loop {
            match self.inbuf.has_message() {
                Ok(true) => {}
                Ok(false) => match self.fill() {
                    Ok(()) => continue,
                    Err(WireError::Lost(m)) => return Err(self.scan.lost(m)),
                    Err(e) => return Err(e),
                },
                Err(e) => return Err(e),
            }
            let (tag, body) = self.inbuf.message();
            let done = self.scan.on_message(tag, body);
            self.inbuf.consume();
            if done {
                return Ok(self.scan.reply());
            }
        }
    }

    /// The next whole message in the buffer (reading as needed): tag and body.
    /// It stays in the buffer until `consume`.
    fn next_message(&mut self) -> Result<(u8, &[u8]), WireError> {
        while !self.inbuf.has_message()? {
            self.fill()?;
        }
        Ok(self.inbuf.message())
    }

    /// Reads what the server sent (at least one byte), looking at the abort
    /// flag when the read times out.
    fn fill(&mut self) -> Result<(), WireError> {
        loop {
            match self.stream.read(self.inbuf.spare()) {
                Ok(0) => return Err(WireError::Lost("the server closed the connection".into())),
                Ok(n) => {
                    self.inbuf.filled(n);
                    return Ok(());
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    if self
                        .abort
                        .as_ref()
                        .is_some_and(|a| a.load(Ordering::Relaxed))
                    {
                        return Err(WireError::Aborted);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(WireError::Lost(e.to_string())),
            }
        }
    }

    /// Drops the message `next_message` returned.
    fn consume(&mut self) {
        self.inbuf.consume();
    }
}

impl Drop for WireConn {
    fn drop(&mut self) {
        // Polite goodbye so the server logs no "unexpected EOF".
        self.out.clear();
        frontend::terminate(&mut self.out);
        let _ = self.stream.write_all(&self.out);
    }
}

// ---- Sans-IO parts, shared by this blocking client and the io_uring driver ----

/// Appends Bind + Execute of prepared statement `statement` (parameters and
/// results in text format: the server's inferred types apply, only the
/// result's row count matters).
pub(crate) fn encode_bind_execute(
    out: &mut BytesMut,
    statement: &str,
    params: &[Param],
) -> Result<(), WireError> {
    frontend::bind(
        "",
        statement,
        std::iter::empty(),
        params,
        |p, buf| {
            use std::fmt::Write as _;
            match p {
                Param::Int(v) => write!(buf, "{v}")?,
                Param::Text(s) => buf.extend_from_slice(s.as_bytes()),
            }
            Ok(IsNull::No)
        },
        std::iter::empty(),
        out,
    )
    .map_err(|e| {
        WireError::Setup(match e {
            frontend::BindError::Conversion(e) => format!("encoding a parameter: {e}"),
            frontend::BindError::Serialization(e) => format!("encoding a statement: {e}"),
        })
    })?;
    frontend::execute("", 0, out).map_err(setup)
}

/// Appends an unnamed Parse of `sql`, then Bind + Execute.
pub(crate) fn encode_unnamed(
    out: &mut BytesMut,
    sql: &str,
    params: &[Param],
) -> Result<(), WireError> {
    frontend::parse("", sql, std::iter::empty(), out).map_err(setup)?;
    encode_bind_execute(out, "", params)
}

/// Appends a simple-protocol Query.
pub(crate) fn encode_query(out: &mut BytesMut, sql: &str) -> Result<(), WireError> {
    frontend::query(sql, out).map_err(setup)
}

/// Appends a Sync (the end of an extended-protocol exchange).
pub(crate) fn encode_sync(out: &mut BytesMut) {
    frontend::sync(out);
}

/// Received bytes, framed into backend messages.
pub(crate) struct InBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl InBuf {
    pub(crate) fn new(capacity: usize) -> InBuf {
        InBuf {
            buf: vec![0; capacity],
            start: 0,
            end: 0,
        }
    }

    /// Whether a whole message is buffered; grows the buffer for a message
    /// larger than it.
    pub(crate) fn has_message(&mut self) -> Result<bool, WireError> {
        let avail = self.end - self.start;
        if avail < 5 {
            return Ok(false);
        }
        let len = be32(&self.buf[self.start + 1..]) as usize;
        if len < 4 {
            return Err(WireError::Setup(format!(
                "the server sent a malformed message (length {len})"
            )));
        }
        if avail > len {
            return Ok(true);
        }
        if 1 + len > self.buf.len() {
            let mut bigger = vec![0; (1 + len).next_power_of_two()];
            bigger[..avail].copy_from_slice(&self.buf[self.start..self.end]);
            self.buf = bigger;
            self.start = 0;
            self.end = avail;
        }
        Ok(false)
    }

    /// The whole message at the front (after `has_message` said so): tag and body.
    pub(crate) fn message(&self) -> (u8, &[u8]) {
        let s = self.start;
        let len = be32(&self.buf[s + 1..]) as usize;
        (self.buf[s], &self.buf[s + 5..s + 1 + len])
    }

    /// Drops the message at the front.
    pub(crate) fn consume(&mut self) {
        let len = be32(&self.buf[self.start + 1..]) as usize;
        self.start += 1 + len;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Free space to receive into (never empty: moves the data to the front when full).
    pub(crate) fn spare(&mut self) -> &mut [u8] {
        if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.buf[self.end..]
    }

    /// Free space to receive into, at least `n` bytes (the buffer grows when
    /// moving the data to the front does not make room).
    pub(crate) fn spare_at_least(&mut self, n: usize) -> &mut [u8] {
        if self.buf.len() - self.end < n {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() - self.end < n {
                self.buf.resize((self.end + n).next_power_of_two(), 0);
            }
        }
        &mut self.buf[self.end..]
    }

    /// Appends received bytes (from a provided buffer).
    pub(crate) fn extend(&mut self, data: &[u8]) {
        let mut data = data;
        while !data.is_empty() {
            if self.end == self.buf.len() && self.start == 0 {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let spare = self.spare();
            let n = spare.len().min(data.len());
            spare[..n].copy_from_slice(&data[..n]);
            self.end += n;
            data = &data[n..];
        }
    }

    /// `n` bytes were received into `spare()`.
    pub(crate) fn filled(&mut self, n: usize) {
        self.end += n;
    }
}

/// The rows an exchange's statements returned, in text format: values
/// copied out of the DataRow messages into one buffer.
#[derive(Debug, Default)]
pub(crate) struct RowStore {
    data: Vec<u8>,
    /// Per value: its range in `data`; None for NULL.
    cells: Vec<Option<(u32, u32)>>,
    /// Per row: its first cell.
    row_starts: Vec<u32>,
    /// Per completed statement: its first row.
    statement_starts: Vec<u32>,
}

impl RowStore {
    fn clear(&mut self) {
        self.data.clear();
        self.cells.clear();
        self.row_starts.clear();
        self.statement_starts.clear();
    }

    /// Appends one DataRow body: Int16 count, then per value Int32 length (-1: NULL) and bytes.
    fn push_row(&mut self, body: &[u8]) {
        self.row_starts.push(self.cells.len() as u32);
        let n = body
            .get(..2)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
        let mut at = 2;
        for _ in 0..n {
            let Some(len) = body.get(at..at + 4).map(be32) else {
                return;
            };
            at += 4;
            if len == u32::MAX {
                self.cells.push(None);
                continue;
            }
            let Some(v) = body.get(at..at + len as usize) else {
                return;
            };
            let start = self.data.len() as u32;
            self.data.extend_from_slice(v);
            self.cells.push(Some((start, len)));
            at += len as usize;
        }
    }

    /// A statement completed: the rows since the last one are its.
    fn end_statement(&mut self, first_row: u32) {
        self.statement_starts.push(first_row);
    }

    fn view(&self) -> Rows<'_> {
        Rows { store: Some(self) }
    }
}

/// The rows of one exchange's completed statements ([`Reply::rows`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Rows<'a> {
    store: Option<&'a RowStore>,
}

impl<'a> Rows<'a> {
    /// Completed statements with rows kept (0 when rows are not kept).
    pub fn statements(&self) -> usize {
        self.store.map_or(0, |s| s.statement_starts.len())
    }

    /// The rows of completed statement `i` of the exchange.
    pub fn statement(&self, i: usize) -> StatementRows<'a> {
        let Some(s) = self.store else {
            return StatementRows::default();
        };
        let first = s.statement_starts.get(i).copied().unwrap_or(0) as usize;
        let end = s
            .statement_starts
            .get(i + 1)
            .map_or(s.row_starts.len(), |e| *e as usize);
        StatementRows {
            store: Some(s),
            rows: first..end.max(first),
        }
    }

    /// The rows of the exchange's last completed statement.
    pub fn last(&self) -> StatementRows<'a> {
        match self.statements() {
            0 => StatementRows::default(),
            n => self.statement(n - 1),
        }
    }
}

/// The rows one statement returned.
#[derive(Debug, Clone, Default)]
pub struct StatementRows<'a> {
    store: Option<&'a RowStore>,
    rows: std::ops::Range<usize>,
}

impl<'a> StatementRows<'a> {
    /// Rows returned.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether it returned no row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Value `col` of row `row` as text; None for NULL or out of range.
    pub fn get(&self, row: usize, col: usize) -> Option<&'a str> {
        let s = self.store?;
        let r = self.rows.start + row;
        if r >= self.rows.end {
            return None;
        }
        let first = s.row_starts[r] as usize;
        let end = s
            .row_starts
            .get(r + 1)
            .map_or(s.cells.len(), |e| *e as usize);
        if first + col >= end {
            return None;
        }
        let (at, len) = s.cells[first + col]?;
        std::str::from_utf8(&s.data[at as usize..(at + len) as usize]).ok()
    }

    /// Value `col` of row `row` as a number; None for NULL or what does not parse.
    pub fn parse<T: std::str::FromStr>(&self, row: usize, col: usize) -> Option<T> {
        self.get(row, col)?.trim().parse().ok()
    }
}

/// One exchange's reply, message by message: counts completions, keeps the
/// first error (and the rows, when asked), ends at ReadyForQuery.
#[derive(Default)]
pub(crate) struct ReplyScan {
    completed: Vec<Completion>,
    rows: u64,
    error: Option<(String, String)>,
    status: u8,
    /// Keep the rows' values (workloads whose next statement depends on them).
    keep_rows: bool,
    kept: RowStore,
    statement_first_row: u32,
}

impl ReplyScan {
    /// A scan that keeps the rows' values when `keep_rows`.
    pub(crate) fn new(keep_rows: bool) -> ReplyScan {
        ReplyScan {
            keep_rows,
            ..ReplyScan::default()
        }
    }

    /// Starts a new exchange.
    pub(crate) fn reset(&mut self) {
        self.completed.clear();
        self.rows = 0;
        self.error = None;
        self.status = b'I';
        self.kept.clear();
        self.statement_first_row = 0;
    }

    /// Takes one message; true at ReadyForQuery (the reply is complete).
    pub(crate) fn on_message(&mut self, tag: u8, body: &[u8]) -> bool {
        match tag {
            b'D' => {
                self.rows += 1;
                if self.keep_rows {
                    self.kept.push_row(body);
                }
            }
            b'C' => {
                self.completed.push(completion(body, self.rows));
                self.rows = 0;
                if self.keep_rows {
                    self.kept.end_statement(self.statement_first_row);
                    self.statement_first_row = self.kept.row_starts.len() as u32;
                }
            }
            b'I' => {
                self.completed.push(Completion {
                    returned_rows: false,
                    rows: 0,
                });
                if self.keep_rows {
                    self.kept.end_statement(self.statement_first_row);
                }
            }
            b'E' if self.error.is_none() => self.error = Some(error_fields(body)),
            b'Z' => {
                self.status = body.first().copied().unwrap_or(b'I');
                return true;
            }
            _ => {} // ParseComplete, BindComplete, RowDescription, notices, ParameterStatus
        }
        false
    }

    /// The complete reply.
    pub(crate) fn reply(&self) -> Reply<'_> {
        Reply {
            completed: &self.completed,
            rows: if self.keep_rows {
                self.kept.view()
            } else {
                Rows::default()
            },
            error: self.error.clone(),
            status: self.status,
        }
    }

    /// The connection was lost mid-reply: a FATAL error followed by the
    /// server closing says what the server said.
    pub(crate) fn lost(&self, m: String) -> WireError {
        WireError::Lost(match &self.error {
            Some((code, msg)) => format!("{msg} ({code})"),
            None => m,
        })
    }
}

fn setup(e: io::Error) -> WireError {
    WireError::Setup(e.to_string())
}

/// A failed startup: the handshake's verdict or the connection's.
enum StartupError {
    Auth(auth::AuthError),
    Wire(WireError),
}

impl From<auth::AuthError> for StartupError {
    fn from(e: auth::AuthError) -> Self {
        StartupError::Auth(e)
    }
}

impl From<WireError> for StartupError {
    fn from(e: WireError) -> Self {
        StartupError::Wire(e)
    }
}

/// A socket to the first host of `target` that accepts one.
fn open(target: &ConnTarget) -> io::Result<Stream> {
    let mut last = None;
    for (i, host) in target.config().get_hosts().iter().enumerate() {
        let port = target.port(i);
        let s = match host {
            Host::Tcp(h) => TcpStream::connect((h.as_str(), port)).and_then(|s| {
                // Requests are small and complete: send them at once.
                s.set_nodelay(true)?;
                Ok(Stream::Tcp(s))
            }),
            Host::Unix(dir) => {
                UnixStream::connect(dir.join(format!(".s.PGSQL.{port}"))).map(Stream::Unix)
            }
        };
        match s {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no host")))
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A CommandComplete tag (`SELECT 10`, `UPDATE 1`, `INSERT 0 1`, `BEGIN`).
fn completion(body: &[u8], data_rows: u64) -> Completion {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let rows = tag
        .rsplit(|b| *b == b' ')
        .next()
        .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok());
    let returned_rows = tag.starts_with(b"SELECT") || tag.starts_with(b"FETCH") || data_rows > 0;
    Completion {
        returned_rows,
        rows: rows.unwrap_or(data_rows),
    }
}

/// SQLSTATE and message of an ErrorResponse body.
pub(crate) fn error_fields(body: &[u8]) -> (String, String) {
    let (mut code, mut message) = (String::new(), String::new());
    let mut rest = body;
    while let Some((&kind, tail)) = rest.split_first() {
        if kind == 0 {
            break;
        }
        let end = tail.iter().position(|b| *b == 0).unwrap_or(tail.len());
        let value = String::from_utf8_lossy(&tail[..end]).into_owned();
        match kind {
            b'C' => code = value,
            b'M' => message = value,
            _ => {}
        }
        rest = tail.get(end + 1..).unwrap_or(&[]);
    }
    (code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spare_at_least_moves_then_grows_and_keeps_what_is_buffered() {
        let mut b = InBuf::new(16);
        // A whole 9-byte message (tag, length 8, 4 bytes) and the start of the next.
        b.extend(&[b'D', 0, 0, 0, 8, 1, 2, 3, 4, b'C', 0, 0]);
        assert!(b.has_message().unwrap());
        b.consume();
        // 4 bytes free at the end; moving the 3 buffered to the front frees 13.
        assert_eq!(b.spare_at_least(10).len(), 13);
        // More than the buffer holds: it grows, and the 3 bytes stay first.
        let s = b.spare_at_least(100);
        assert!(s.len() >= 100);
        s[..3].copy_from_slice(&[0, 5, b'x']);
        b.filled(3);
        assert!(b.has_message().unwrap());
        assert_eq!(b.message(), (b'C', &b"x"[..]));
    }

    #[test]
    fn command_tags_give_counts_and_kind() {
        assert_eq!(
            completion(b"SELECT 10\0", 10),
            Completion {
                returned_rows: true,
                rows: 10
            }
        );
        assert_eq!(
            completion(b"INSERT 0 1\0", 0),
            Completion {
                returned_rows: false,
                rows: 1
            }
        );
        assert_eq!(completion(b"UPDATE 0\0", 0).rows, 0);
        assert_eq!(
            completion(b"BEGIN\0", 0),
            Completion {
                returned_rows: false,
                rows: 0
            }
        );
    }

    #[test]
    fn error_fields_are_read_and_malformed_bodies_do_not_panic() {
        let body = b"SERROR\0C23505\0Mduplicate key value\0\0";
        assert_eq!(
            error_fields(body),
            ("23505".to_string(), "duplicate key value".to_string())
        );
        assert_eq!(error_fields(b"C4"), ("4".to_string(), String::new()));
        assert_eq!(error_fields(b""), (String::new(), String::new()));
    }
}
