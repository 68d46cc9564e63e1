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

use postgres_protocol::message::frontend;
use tokio_postgres::config::Host;

use crate::auth;
use crate::conn::ConnTarget;
use crate::message::{
    InBuf, Param, Reply, ReplyScan, WireError, encode_bind_execute, encode_query, encode_sync,
    encode_unnamed, error_fields, setup,
};
use crate::tls::SslMode;

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
fn negotiate(stream: Stream, target: &ConnTarget, host: &str) -> Result<Stream, Negotiation> {
    let Stream::Tcp(mut tcp) = stream else {
        return Ok(stream);
    };
    let tls = target.tls();
    if !tls.direct {
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
    }
    let config = tls.client_config().map_err(Negotiation::Handshake)?;
    let name = crate::tls::server_name(host).map_err(Negotiation::Handshake)?;
    let conn = rustls::ClientConnection::new(config, name)
        .map_err(|e| Negotiation::Handshake(format!("TLS: {e}")))?;
    let mut s = rustls::StreamOwned::new(conn, tcp);
    // Finish the handshake now, so a certificate problem is the connect's error.
    while s.conn.is_handshaking() {
        if let Err(e) = s.conn.complete_io(&mut s.sock) {
            let m = match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                Some(r) => crate::tls::describe(r, host, tls),
                None => crate::tls::io_words(&e),
            };
            return Err(Negotiation::Handshake(m));
        }
    }
    Ok(Stream::Tls(Box::new(s)))
}

/// A TCP connection to the first of `addrs` that accepts, each attempt
/// bounded by `timeout` when there is one.
fn tcp_connect(addrs: &[std::net::SocketAddr], timeout: Option<Duration>) -> io::Result<TcpStream> {
    let mut last = None;
    for a in addrs {
        let s = match timeout {
            Some(t) => TcpStream::connect_timeout(a, t),
            None => TcpStream::connect(a),
        };
        match s {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("the host name has no address")))
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
    /// `abort`, when set, ends waits for the server early. The hosts are
    /// tried as libpq tries them: in order (or shuffled for
    /// `load_balance_hosts=random`), going on after any failure, keeping
    /// the first session that suits `target_session_attrs` (prefer-standby:
    /// a second pass for any server); a refusal says every host's failure.
    pub fn connect(
        target: &ConnTarget,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<WireConn, WireError> {
        let order = target.host_order();
        let attrs = target.options().session_attrs;
        if order.len() == 1 && attrs == crate::options::SessionAttrs::Any {
            return WireConn::connect_host(target, order[0], abort);
        }
        let mut failures = Vec::new();
        for want in attrs.passes() {
            for &i in &order {
                match WireConn::connect_host(target, i, abort.clone()) {
                    Ok(mut conn) => match conn.session_refusal(want) {
                        Ok(None) => return Ok(conn),
                        Ok(Some(why)) => failures.push(format!(
                            "cannot connect to {}: {why}",
                            target.describe_host(i)
                        )),
                        Err(e) => failures.push(format!(
                            "cannot connect to {}: {e}",
                            target.describe_host(i)
                        )),
                    },
                    Err(WireError::Aborted) => return Err(WireError::Aborted),
                    Err(e) => failures.push(e.to_string()),
                }
            }
        }
        Err(WireError::Setup(failures.join("; ")))
    }

    /// Whether the session suits `want`: None, or libpq's reason why not.
    fn session_refusal(
        &mut self,
        want: crate::options::SessionAttrs,
    ) -> Result<Option<&'static str>, WireError> {
        if want == crate::options::SessionAttrs::Any {
            return Ok(None);
        }
        self.keep_rows(true);
        let r = self.simple(crate::options::SESSION_QUERY)?;
        let rows = r.rows.last();
        let standby = rows.get(0, 0) == Some("true");
        let read_only = rows.get(0, 1) == Some("on");
        if let Some((code, m)) = r.error {
            return Err(WireError::Db { code, message: m });
        }
        self.keep_rows(false);
        Ok(want.refusal(standby, read_only))
    }

    /// Connects to host `i` of the target and authenticates.
    fn connect_host(
        target: &ConnTarget,
        host: usize,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<WireConn, WireError> {
        // prefer and allow try twice: the first failure is said with the second.
        let mut earlier: Option<String> = None;
        // connect_timeout: each wait of the connection's setup is bounded by it,
        // and running past it is libpq's "timeout expired".
        let timeout = target.config().get_connect_timeout().copied();
        let started = std::time::Instant::now();
        let fail = |earlier: &Option<String>, e: &dyn std::fmt::Display| {
            let e = match timeout {
                Some(t) if started.elapsed() >= t => "timeout expired".to_string(),
                _ => e.to_string(),
            };
            WireError::Setup(format!(
                "cannot connect to {}: {}{e}{}",
                target.describe_host(host),
                earlier.as_deref().unwrap_or_default(),
                target.passfile_note()
            ))
        };
        let tls_host = target.tls_host_of(host);
        let mut protocol = auth::protocol_for(&target.describe_host(host));
        let mode = target.tls().mode;
        // allow: plain first; prefer and up: TLS first (libpq's order).
        let mut try_tls = !matches!(mode, SslMode::Disable | SslMode::Allow);
        loop {
            let stream = open(target, host, timeout).map_err(|e| fail(&earlier, &e))?;
            if timeout.is_some() {
                stream
                    .set_read_timeout(timeout)
                    .map_err(|e| fail(&earlier, &e))?;
            }
            let stream = if try_tls {
                match negotiate(stream, target, &tls_host) {
                    Ok(s) => s,
                    Err(Negotiation::Refused) => {
                        return Err(fail(
                            &earlier,
                            &"server does not support SSL, but SSL was required",
                        ));
                    }
                    // prefer: a failed handshake is retried without TLS, as libpq does.
                    Err(Negotiation::Handshake(m))
                        if mode == SslMode::Prefer && earlier.is_none() =>
                    {
                        earlier = Some(format!("{m}; then without TLS: "));
                        try_tls = false;
                        continue;
                    }
                    Err(Negotiation::Handshake(m)) => return Err(fail(&earlier, &m)),
                    Err(Negotiation::Io(e)) => return Err(fail(&earlier, &e)),
                }
            } else {
                stream
            };
            let tls_used = matches!(stream, Stream::Tls(_));
            if abort.is_some() {
                stream
                    .set_read_timeout(Some(ABORT_POLL))
                    .map_err(|e| fail(&earlier, &e))?;
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
                Ok(()) => {
                    if timeout.is_some() {
                        let after = abort.is_some().then_some(ABORT_POLL);
                        conn.stream
                            .set_read_timeout(after)
                            .map_err(|e| fail(&earlier, &e))?;
                    }
                    return Ok(conn);
                }
                Err(StartupError::Auth(auth::AuthError::NeedsProtocol351))
                    if protocol != auth::PROTOCOL_3_51 =>
                {
                    auth::remember_351(&target.describe_host(host));
                    protocol = auth::PROTOCOL_3_51;
                }
                // allow: a server that refuses the plain connection (pg_hba's
                // hostssl, class 28) gets a TLS one.
                Err(
                    StartupError::Wire(WireError::Db { code, message })
                    | StartupError::Auth(auth::AuthError::Server { code, message }),
                ) if mode == SslMode::Allow && !tls_used && code.starts_with("28") => {
                    earlier = Some(format!("without TLS: {message} ({code}); then with TLS: "));
                    try_tls = true;
                }
                Err(StartupError::Auth(e)) => return Err(fail(&earlier, &e)),
                Err(StartupError::Wire(WireError::Aborted)) => return Err(WireError::Aborted),
                Err(StartupError::Wire(WireError::Db { code, message })) => {
                    return Err(fail(&earlier, &format!("{message} ({code})")));
                }
                Err(StartupError::Wire(WireError::Lost(m) | WireError::Setup(m))) => {
                    return Err(fail(&earlier, &m));
                }
            }
        }
    }

    fn startup(&mut self, target: &ConnTarget, protocol: u32) -> Result<(), StartupError> {
        let cfg = target.config();
        auth::startup_message(&auth::startup_params(cfg), protocol, &mut self.out);
        self.send()?;
        let mut handshake =
            auth::Handshake::new(cfg.get_user().unwrap_or("postgres"), cfg.get_password())
                .require_auth(target.options().require_auth.clone())
                .channel_binding(
                    target.options().channel_binding,
                    match &self.stream {
                        Stream::Tls(s) => crate::verify::end_point(&s.conn),
                        _ => None,
                    },
                );
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
    pub fn exchange(&mut self, out: &mut BytesMut) -> Result<Reply<'_>, WireError> {
        let r = self.stream.write_all(out);
        out.clear();
        r.map_err(|e| WireError::Lost(crate::tls::io_words(&e)))?;
        self.read_reply()
    }

    /// The socket, for the io_uring driver, which takes it over after the
    /// blocking connect, authentication and prepare (nothing is left unread
    /// then: every exchange ends with ReadyForQuery). No Terminate is sent.
    /// Over TLS the session comes along: the driver encrypts and decrypts.
    pub fn into_socket(self) -> (std::os::fd::OwnedFd, Option<Box<rustls::ClientConnection>>) {
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
        r.map_err(|e| WireError::Lost(crate::tls::io_words(&e)))
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
                Err(e) => return Err(WireError::Lost(crate::tls::io_words(&e))),
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
fn open(target: &ConnTarget, only: usize, timeout: Option<Duration>) -> io::Result<Stream> {
    let mut last = None;
    for (i, host) in target.config().get_hosts().iter().enumerate() {
        if i != only {
            continue;
        }
        let port = target.port(i);
        let s = match host {
            // hostaddr, when given, is where to connect: the name is not looked up.
            Host::Tcp(h) => match target.config().get_hostaddrs().get(i) {
                Some(a) => tcp_connect(&[std::net::SocketAddr::new(*a, port)], timeout),
                None => {
                    use std::net::ToSocketAddrs;
                    match (h.as_str(), port).to_socket_addrs() {
                        Ok(addrs) => tcp_connect(&addrs.collect::<Vec<_>>(), timeout),
                        Err(e) => Err(io::Error::new(
                            e.kind(),
                            format!("could not translate host name \"{h}\" to address: {e}"),
                        )),
                    }
                }
            }
            .and_then(|s| {
                // Requests are small and complete: send them at once.
                s.set_nodelay(true)?;
                Ok(Stream::Tcp(s))
            }),
            Host::Unix(dir) => {
                let path = dir.join(format!(".s.PGSQL.{port}"));
                UnixStream::connect(&path)
                    .and_then(|s| match &target.options().requirepeer {
                        Some(want) => crate::options::check_peer(&s, want).map(|()| s),
                        None => Ok(s),
                    })
                    .map(Stream::Unix)
                    .map_err(|e| {
                        io::Error::new(
                            e.kind(),
                            format!(
                                "connection to server on socket \"{}\" failed: {e}",
                                path.display()
                            ),
                        )
                    })
            }
        };
        match s {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no host")))
}
