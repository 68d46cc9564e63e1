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
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::frontend;
use tokio_postgres::config::Host;

use crate::conn::ConnTarget;

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
    /// The first error, if any (the server skips the rest up to Sync).
    pub error: Option<(String, String)>,
    /// Transaction status after the exchange: b'I' idle, b'T' in a block, b'E' failed block.
    pub status: u8,
}

enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(t),
            Stream::Unix(s) => s.set_read_timeout(t),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// How often a blocked read looks at the abort flag.
const ABORT_POLL: Duration = Duration::from_millis(250);

/// One connection.
pub struct WireConn {
    stream: Stream,
    out: BytesMut,
    inbuf: Vec<u8>,
    start: usize,
    end: usize,
    completed: Vec<Completion>,
    abort: Option<Arc<AtomicBool>>,
}

impl WireConn {
    /// Connects and authenticates (trust, password, md5, SCRAM-SHA-256).
    /// `abort`, when set, ends waits for the server early.
    pub fn connect(
        target: &ConnTarget,
        abort: Option<Arc<AtomicBool>>,
    ) -> Result<WireConn, WireError> {
        let cfg = target.config();
        let fail = |e: &dyn std::fmt::Display| {
            WireError::Setup(format!("cannot connect to {}: {e}", target.describe()))
        };
        let mut last = None;
        let mut stream = None;
        for (i, host) in cfg.get_hosts().iter().enumerate() {
            let port = target.port(i);
            let s = match host {
                Host::Tcp(h) => {
                    TcpStream::connect((h.as_str(), port)).and_then(|s| {
                        // Requests are small and complete: send them at once.
                        s.set_nodelay(true)?;
                        Ok(Stream::Tcp(s))
                    })
                }
                Host::Unix(dir) => {
                    UnixStream::connect(dir.join(format!(".s.PGSQL.{port}"))).map(Stream::Unix)
                }
            };
            match s {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = match (stream, last) {
            (Some(s), _) => s,
            (None, Some(e)) => return Err(fail(&e)),
            (None, None) => return Err(fail(&"no host")),
        };
        if abort.is_some() {
            stream
                .set_read_timeout(Some(ABORT_POLL))
                .map_err(|e| fail(&e))?;
        }
        let mut conn = WireConn {
            stream,
            out: BytesMut::with_capacity(8192),
            inbuf: vec![0; 16 * 1024],
            start: 0,
            end: 0,
            completed: Vec::with_capacity(32),
            abort,
        };
        conn.startup(target).map_err(|e| match e {
            WireError::Db { code, message } => fail(&format!("{message} ({code})")),
            WireError::Lost(m) | WireError::Setup(m) => fail(&m),
            WireError::Aborted => WireError::Aborted,
        })?;
        Ok(conn)
    }

    fn startup(&mut self, target: &ConnTarget) -> Result<(), WireError> {
        let cfg = target.config();
        let user = cfg.get_user().unwrap_or("postgres");
        let mut params: Vec<(&str, &str)> = vec![
            ("user", user),
            ("database", cfg.get_dbname().unwrap_or(user)),
            ("client_encoding", "UTF8"),
        ];
        if let Some(a) = cfg.get_application_name() {
            params.push(("application_name", a));
        }
        if let Some(o) = cfg.get_options() {
            params.push(("options", o));
        }
        frontend::startup_message(params, &mut self.out).map_err(setup)?;
        self.send()?;
        let password = cfg.get_password();
        let need_password = || {
            password.ok_or_else(|| {
                WireError::Setup("the server asks for a password and none was given".into())
            })
        };
        let mut scram: Option<ScramSha256> = None;
        loop {
            let (tag, body) = self.next_message()?;
            match tag {
                b'R' => {
                    let code = be32(body);
                    let data = &body[4..];
                    match code {
                        0 => {}
                        3 => {
                            let pw = need_password()?.to_vec();
                            self.consume();
                            frontend::password_message(&pw, &mut self.out).map_err(setup)?;
                            self.send()?;
                            continue;
                        }
                        5 => {
                            let salt = [data[0], data[1], data[2], data[3]];
                            let hash = postgres_protocol::authentication::md5_hash(
                                user.as_bytes(),
                                need_password()?,
                                salt,
                            );
                            self.consume();
                            frontend::password_message(hash.as_bytes(), &mut self.out)
                                .map_err(setup)?;
                            self.send()?;
                            continue;
                        }
                        10 => {
                            let offers_scram = data
                                .split(|b| *b == 0)
                                .any(|m| m == SCRAM_SHA_256.as_bytes());
                            if !offers_scram {
                                return Err(WireError::Setup(
                                    "the server offers no SASL mechanism csdchar speaks (SCRAM-SHA-256)"
                                        .into(),
                                ));
                            }
                            let s =
                                ScramSha256::new(need_password()?, ChannelBinding::unsupported());
                            self.consume();
                            frontend::sasl_initial_response(
                                SCRAM_SHA_256,
                                s.message(),
                                &mut self.out,
                            )
                            .map_err(setup)?;
                            scram = Some(s);
                            self.send()?;
                            continue;
                        }
                        11 | 12 => {
                            let s = scram.as_mut().ok_or_else(|| {
                                WireError::Setup("SASL message out of order".into())
                            })?;
                            if code == 11 {
                                s.update(data).map_err(setup)?;
                                let msg = s.message().to_vec();
                                self.consume();
                                frontend::sasl_response(&msg, &mut self.out).map_err(setup)?;
                                self.send()?;
                                continue;
                            }
                            s.finish(data).map_err(setup)?;
                        }
                        other => {
                            return Err(WireError::Setup(format!(
                                "authentication method {other} is not supported (trust, password, md5, scram-sha-256 are)"
                            )));
                        }
                    }
                }
                b'E' => {
                    let (code, message) = error_fields(body);
                    return Err(WireError::Db { code, message });
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
        frontend::bind(
            "",
            statement,
            std::iter::empty(), // all parameters in text format
            params,
            |p, buf| {
                use std::fmt::Write as _;
                match p {
                    Param::Int(v) => write!(buf, "{v}")?,
                    Param::Text(s) => buf.extend_from_slice(s.as_bytes()),
                }
                Ok(IsNull::No)
            },
            std::iter::empty(), // results in text format: only their count matters
            &mut self.out,
        )
        .map_err(|e| {
            WireError::Setup(match e {
                frontend::BindError::Conversion(e) => format!("encoding a parameter: {e}"),
                frontend::BindError::Serialization(e) => format!("encoding a statement: {e}"),
            })
        })?;
        frontend::execute("", 0, &mut self.out).map_err(setup)?;
        Ok(())
    }

    /// Queues an unnamed Parse of `sql`, then Bind + Execute (the extended protocol without preparing).
    pub fn queue_unnamed(&mut self, sql: &str, params: &[Param]) -> Result<(), WireError> {
        frontend::parse("", sql, std::iter::empty(), &mut self.out).map_err(setup)?;
        self.queue("", params)
    }

    /// Queues a simple-protocol query (for ROLLBACK and the like).
    pub fn queue_simple(&mut self, sql: &str) -> Result<(), WireError> {
        frontend::query(sql, &mut self.out).map_err(setup)
    }

    /// Sends what is queued plus a Sync and reads the reply up to ReadyForQuery.
    pub fn sync(&mut self) -> Result<Reply<'_>, WireError> {
        frontend::sync(&mut self.out);
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
        self.completed.clear();
        let mut rows = 0u64;
        let mut error: Option<(String, String)> = None;
        loop {
            let next = self.next_message();
            let (tag, body) = match next {
                Ok(m) => m,
                // A FATAL error followed by the server closing: say what the server said.
                Err(WireError::Lost(m)) => {
                    return Err(WireError::Lost(match error {
                        Some((code, msg)) => format!("{msg} ({code})"),
                        None => m,
                    }));
                }
                Err(e) => return Err(e),
            };
            match tag {
                b'D' => rows += 1,
                b'C' => {
                    let c = completion(body, rows);
                    self.completed.push(c);
                    rows = 0;
                }
                b'I' => self.completed.push(Completion {
                    returned_rows: false,
                    rows: 0,
                }),
                b'E' if error.is_none() => error = Some(error_fields(body)),
                b'Z' => {
                    let status = body.first().copied().unwrap_or(b'I');
                    self.consume();
                    return Ok(Reply {
                        completed: &self.completed,
                        error,
                        status,
                    });
                }
                _ => {} // ParseComplete, BindComplete, RowDescription, notices, ParameterStatus
            }
            self.consume();
        }
    }

    /// The next whole message in the buffer (reading as needed): tag and body.
    /// It stays in the buffer until `consume`.
    fn next_message(&mut self) -> Result<(u8, &[u8]), WireError> {
        loop {
            let avail = self.end - self.start;
            if avail >= 5 {
                let len = be32(&self.inbuf[self.start + 1..]) as usize;
                if len < 4 {
                    return Err(WireError::Setup(format!(
                        "the server sent a malformed message (length {len})"
                    )));
                }
                if avail > len {
                    let s = self.start;
                    return Ok((self.inbuf[s], &self.inbuf[s + 5..s + 1 + len]));
                }
                if 1 + len > self.inbuf.len() {
                    let mut bigger = vec![0; (1 + len).next_power_of_two()];
                    bigger[..avail].copy_from_slice(&self.inbuf[self.start..self.end]);
                    self.inbuf = bigger;
                    self.start = 0;
                    self.end = avail;
                }
            }
            if self.end == self.inbuf.len() {
                self.inbuf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            match self.stream.read(&mut self.inbuf[self.end..]) {
                Ok(0) => return Err(WireError::Lost("the server closed the connection".into())),
                Ok(n) => self.end += n,
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
        let len = be32(&self.inbuf[self.start + 1..]) as usize;
        self.start += 1 + len;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
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

fn setup(e: io::Error) -> WireError {
    WireError::Setup(e.to_string())
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
fn error_fields(body: &[u8]) -> (String, String) {
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
