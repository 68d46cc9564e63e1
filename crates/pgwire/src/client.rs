//! The control connection: a tokio-postgres client for everything but the
//! measured loop (loading, DDL, snapshots), authenticated by csdchar's own
//! handshake so that openGauss's methods work too, with TLS as libpq negotiates it.

use std::time::Duration;

/// A connection to the server (tokio-postgres), for everything but the measured loop.
pub use tokio_postgres::Client;
use tokio_postgres::config::Host;

use crate::conn::ConnTarget;
use crate::env::ProcessEnv;
use crate::error::DbError;
use crate::tls::SslMode;

/// A tokio-postgres client for `target`, authenticated by csdchar's own
/// handshake ([`crate::auth`], which also speaks openGauss's methods):
/// tokio-postgres then gets a stream on which its StartupMessage is dropped
/// and AuthenticationOk is the first thing it reads, so it needs no method
/// of its own. The connection task is spawned on the current runtime.
///
/// The hosts are tried as libpq tries them (see `WireConn::connect`): in
/// order or shuffled, on after any failure, the first session that suits
/// `target_session_attrs` kept.
pub async fn connect_client(target: &ConnTarget) -> Result<tokio_postgres::Client, String> {
    let order = target.host_order();
    let attrs = target.options().session_attrs;
    if order.len() == 1 && attrs == crate::options::SessionAttrs::Any {
        return connect_host(target, order[0]).await;
    }
    let mut failures = Vec::new();
    for want in attrs.passes() {
        for &i in &order {
            let client = match connect_host(target, i).await {
                Ok(c) => c,
                Err(e) => {
                    failures.push(e);
                    continue;
                }
            };
            if want == crate::options::SessionAttrs::Any {
                return Ok(client);
            }
            let refusal = match client.simple_query(crate::options::SESSION_QUERY).await {
                Ok(rows) => {
                    let row = rows.iter().find_map(|m| match m {
                        tokio_postgres::SimpleQueryMessage::Row(r) => {
                            Some((r.get(0) == Some("true"), r.get(1) == Some("on")))
                        }
                        _ => None,
                    });
                    let (standby, read_only) = row.unwrap_or_default();
                    want.refusal(standby, read_only).map(str::to_string)
                }
                Err(e) => Some(describe_error(&e)),
            };
            match refusal {
                None => return Ok(client),
                Some(why) => failures.push(format!(
                    "cannot connect to {}: {why}",
                    target.describe_host(i)
                )),
            }
        }
    }
    Err(failures.join("; "))
}

/// [`connect_client`] to host `i` of the target.
async fn connect_host(target: &ConnTarget, host: usize) -> Result<tokio_postgres::Client, String> {
    // prefer and allow try twice: the first failure is said with the second.
    let mut earlier: Option<String> = None;
    let fail = |earlier: &Option<String>, e: &dyn std::fmt::Display| {
        format!(
            "cannot connect to {}: {}{e}{}",
            target.describe_host(host),
            earlier.as_deref().unwrap_or_default(),
            target.passfile_note()
        )
    };
    let timeout = target
        .config()
        .get_connect_timeout()
        .copied()
        .unwrap_or(Duration::from_secs(3600));
    let mut protocol = crate::auth::protocol_for(&target.describe_host(host));
    let mode = target.tls().mode;
    // allow: plain first; prefer and up: TLS first (libpq's order).
    let mut try_tls = !matches!(mode, SslMode::Disable | SslMode::Allow);
    let stream = loop {
        let attempt =
            tokio::time::timeout(timeout, authenticate(target, host, protocol, try_tls)).await;
        match attempt {
            Err(_) => return Err(fail(&earlier, &"timeout expired")),
            Ok(Ok(s)) => break s,
            Ok(Err(HandshakeError::TlsRefused)) => {
                return Err(fail(
                    &earlier,
                    &"server does not support SSL, but SSL was required",
                ));
            }
            // prefer: a failed handshake is retried without TLS, as libpq does.
            Ok(Err(HandshakeError::Tls(m))) if mode == SslMode::Prefer && try_tls => {
                earlier = Some(format!("{m}; then without TLS: "));
                try_tls = false;
            }
            Ok(Err(HandshakeError::Tls(m))) => return Err(fail(&earlier, &m)),
            // allow: a server that refuses the plain connection gets a TLS one.
            Ok(Err(HandshakeError::Auth(crate::auth::AuthError::Server { code, message })))
                if mode == SslMode::Allow && !try_tls && code.starts_with("28") =>
            {
                earlier = Some(format!("without TLS: {message} ({code}); then with TLS: "));
                try_tls = true;
            }
            Ok(Err(HandshakeError::Auth(crate::auth::AuthError::NeedsProtocol351)))
                if protocol != crate::auth::PROTOCOL_3_51 =>
            {
                crate::auth::remember_351(&target.describe_host(host));
                protocol = crate::auth::PROTOCOL_3_51;
            }
            Ok(Err(HandshakeError::Auth(e))) => return Err(fail(&earlier, &e)),
            Ok(Err(HandshakeError::Io(e))) => {
                return Err(fail(&earlier, &crate::tls::io_words(&e)));
            }
        }
    };
    let (client, conn) = target
        .config()
        .connect_raw(stream, tokio_postgres::NoTls)
        .await
        .map_err(|e| fail(&earlier, &describe_error(&e)))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(client)
}

/// libpq's negotiation on a fresh TCP socket (see `wire::negotiate`, the
/// blocking twin): an SSLRequest, the server's byte, then the handshake; `N`
/// leaves the socket plain where the mode allows it.
async fn negotiate(
    mut tcp: tokio::net::TcpStream,
    target: &ConnTarget,
    host: &str,
) -> Result<Socket, HandshakeError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let tls = target.tls();
    if !tls.direct {
        tcp.write_all(&crate::tls::SSL_REQUEST).await?;
        let byte = tcp.read_u8().await?;
        match crate::tls::answer(byte) {
            Ok(true) => {}
            Ok(false) if tls.mode.requires_tls() => return Err(HandshakeError::TlsRefused),
            Ok(false) => return Ok(Socket::Tcp(tcp)),
            Err(m) => return Err(HandshakeError::Tls(m)),
        }
    }
    let config = tls.client_config().map_err(HandshakeError::Tls)?;
    let name = crate::tls::server_name(host).map_err(HandshakeError::Tls)?;
    tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map(|s| Socket::Tls(Box::new(s)))
        .map_err(|e| {
            let m = match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                Some(r) => crate::tls::describe(r, host, tls),
                None => crate::tls::io_words(&e),
            };
            HandshakeError::Tls(m)
        })
}

enum HandshakeError {
    Auth(crate::auth::AuthError),
    Io(std::io::Error),
    /// The server said no to TLS, which the sslmode cannot accept.
    TlsRefused,
    /// The TLS handshake failed: the words say why.
    Tls(String),
}

impl From<std::io::Error> for HandshakeError {
    fn from(e: std::io::Error) -> Self {
        HandshakeError::Io(e)
    }
}

/// Opens a socket to host `only` and authenticates on it.
async fn authenticate(
    target: &ConnTarget,
    only: usize,
    protocol: u32,
    try_tls: bool,
) -> Result<Authenticated, HandshakeError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let cfg = target.config();
    let mut last = None;
    let mut socket = None;
    for (i, host) in cfg.get_hosts().iter().enumerate() {
        if i != only {
            continue;
        }
        let port = target.port(i);
        let s = match host {
            // hostaddr, when given, is where to connect: the name is not looked up.
            Host::Tcp(h) => match cfg.get_hostaddrs().get(i) {
                Some(a) => tokio::net::TcpStream::connect((*a, port)).await,
                None => match tokio::net::lookup_host((h.as_str(), port)).await {
                    Ok(addrs) => {
                        tokio::net::TcpStream::connect(&addrs.collect::<Vec<_>>()[..]).await
                    }
                    Err(e) => Err(std::io::Error::new(
                        e.kind(),
                        format!("could not translate host name \"{h}\" to address: {e}"),
                    )),
                },
            }
            .and_then(|s| {
                s.set_nodelay(true)?;
                Ok(Socket::Tcp(s))
            }),
            Host::Unix(dir) => {
                let path = dir.join(format!(".s.PGSQL.{port}"));
                tokio::net::UnixStream::connect(&path)
                    .await
                    .and_then(|s| match &target.options().requirepeer {
                        Some(want) => crate::options::check_peer(&s, want).map(|()| s),
                        None => Ok(s),
                    })
                    .map(Socket::Unix)
                    .map_err(|e| {
                        std::io::Error::new(
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
            Ok(s) => {
                socket = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let mut socket = match socket {
        Some(s) => s,
        None => {
            return Err(last
                .unwrap_or_else(|| std::io::Error::other("no host"))
                .into());
        }
    };
    if try_tls && let Socket::Tcp(tcp) = socket {
        socket = negotiate(tcp, target, &target.tls_host_of(only)).await?;
    }
    let mut out = bytes::BytesMut::new();
    crate::auth::startup_message(&crate::auth::startup_params(cfg), protocol, &mut out);
    socket.write_all(&out).await?;
    socket.flush().await?;
    out.clear();
    let mut handshake =
        crate::auth::Handshake::new(cfg.get_user().unwrap_or("postgres"), cfg.get_password())
            .require_auth(target.options().require_auth.clone())
            .channel_binding(
                target.options().channel_binding,
                match &socket {
                    Socket::Tls(s) => crate::verify::end_point(s.get_ref().1),
                    _ => None,
                },
            );
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    loop {
        // Whole messages first; then read more.
        while buf.len() >= 5 {
            let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
            if len < 4 {
                return Err(HandshakeError::Auth(crate::auth::AuthError::Protocol(
                    format!("malformed message (length {len})"),
                )));
            }
            if buf.len() < 1 + len {
                break;
            }
            let progress = handshake
                .on_message(buf[0], &buf[5..1 + len], &mut out)
                .map_err(HandshakeError::Auth)?;
            buf.drain(..1 + len);
            if !out.is_empty() {
                socket.write_all(&out).await?;
                socket.flush().await?;
                out.clear();
            }
            if progress == crate::auth::Progress::Authenticated {
                // tokio-postgres reads AuthenticationOk, then what followed it.
                let mut prefix = vec![b'R', 0, 0, 0, 8, 0, 0, 0, 0];
                prefix.extend_from_slice(&buf);
                return Ok(Authenticated {
                    socket,
                    prefix,
                    prefix_at: 0,
                    startup: StartupSkip::Header { have: [0; 4], n: 0 },
                });
            }
        }
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the server closed the connection during authentication",
            )
            .into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A TCP or Unix socket.
enum Socket {
    Tcp(tokio::net::TcpStream),
    Unix(tokio::net::UnixStream),
    Tls(Box<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>),
}

/// How much of tokio-postgres's StartupMessage is still to be dropped.
enum StartupSkip {
    /// Reading its length.
    Header { have: [u8; 4], n: usize },
    /// Dropping this many more bytes.
    Body(usize),
    /// Passed: everything goes through.
    Done,
}

/// An authenticated connection as tokio-postgres sees it: its StartupMessage
/// goes nowhere, and reads start with AuthenticationOk.
struct Authenticated {
    socket: Socket,
    prefix: Vec<u8>,
    prefix_at: usize,
    startup: StartupSkip,
}

impl tokio::io::AsyncRead for Socket {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => std::pin::Pin::new(s).poll_read(cx, buf),
            Socket::Unix(s) => std::pin::Pin::new(s).poll_read(cx, buf),
            Socket::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl tokio::io::AsyncWrite for Socket {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        data: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Socket::Tcp(s) => std::pin::Pin::new(s).poll_write(cx, data),
            Socket::Unix(s) => std::pin::Pin::new(s).poll_write(cx, data),
            Socket::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_write(cx, data),
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => std::pin::Pin::new(s).poll_flush(cx),
            Socket::Unix(s) => std::pin::Pin::new(s).poll_flush(cx),
            Socket::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => std::pin::Pin::new(s).poll_shutdown(cx),
            Socket::Unix(s) => std::pin::Pin::new(s).poll_shutdown(cx),
            Socket::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

impl tokio::io::AsyncRead for Authenticated {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if this.prefix_at < this.prefix.len() {
            let n = buf.remaining().min(this.prefix.len() - this.prefix_at);
            buf.put_slice(&this.prefix[this.prefix_at..this.prefix_at + n]);
            this.prefix_at += n;
            return std::task::Poll::Ready(Ok(()));
        }
        std::pin::Pin::new(&mut this.socket).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Authenticated {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        data: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        match &mut this.startup {
            StartupSkip::Header { have, n } => {
                let take = (4 - *n).min(data.len());
                have[*n..*n + take].copy_from_slice(&data[..take]);
                *n += take;
                if *n == 4 {
                    let len = u32::from_be_bytes(*have) as usize;
                    this.startup = StartupSkip::Body(len.saturating_sub(4));
                }
                std::task::Poll::Ready(Ok(take))
            }
            StartupSkip::Body(left) => {
                let take = (*left).min(data.len());
                *left -= take;
                if *left == 0 {
                    this.startup = StartupSkip::Done;
                }
                std::task::Poll::Ready(Ok(take))
            }
            StartupSkip::Done => std::pin::Pin::new(&mut this.socket).poll_write(cx, data),
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().socket).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().socket).poll_shutdown(cx)
    }
}

/// A client error in plain words: the server's message and SQLSTATE
/// ("password authentication failed for user …", "database … does not
/// exist"), or the OS error under it ("Connection refused").
pub fn describe_error(e: &tokio_postgres::Error) -> String {
    if let Some(d) = e.as_db_error() {
        return format!("{} ({})", d.message(), d.code().code());
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = s.source();
    }
    text
}

/// Connects (tokio-postgres, for everything but the measured loop); a
/// refused connection names host and port, never a password.
pub async fn connect(conninfo: &str) -> Result<Client, DbError> {
    let target = ConnTarget::parse(conninfo, &ProcessEnv).map_err(DbError::from)?;
    connect_client(&target).await.map_err(DbError::other)
}
