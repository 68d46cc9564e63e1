//! A mock openGauss server for the authentication tests: the server side of
//! openGauss's startup and password exchange, written from openGauss-server's
//! own code (src/gausskernel/process/postmaster/postmaster.cpp
//! `ProcessStartupPacket`, src/common/backend/libpq/auth.cpp
//! `ClientAuthentication`/`sendAuthRequest`/`auth_failed`, crypt.cpp
//! `crypt_verify`, sha2.cpp `pg_sha256_encrypt`, user.cpp `encode_iteration`),
//! never from a client. It checks answers the way the server does, against a
//! stored `rolpassword` row, and records what every connection sent.
//!
//! After a successful login it either answers simple queries itself, or
//! (relay mode) logs in to a real PostgreSQL over a Unix socket with trust and
//! relays the session both ways, so whole csdchar commands can run through
//! openGauss authentication.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::crypto::{hex, hmac_sha256, md5, pbkdf2_hmac_sha1, server_unhex, sha256};

/// `AUTH_REQ_SHA256`, `AUTH_REQ_MD5_SHA256`, `AUTH_REQ_SM3` (libpq/pqcomm.h).
const AUTH_REQ_SHA256: u32 = 10;
const AUTH_REQ_MD5_SHA256: u32 = 11;
const AUTH_REQ_SM3: u32 = 13;
/// `SHA256_PASSWORD`, `SM3_PASSWORD` (libpq/sha2.h).
const SHA256_PASSWORD: u32 = 2;
const SM3_PASSWORD: u32 = 3;
/// `PG_PROTOCOL_GAUSS_BASE` (pqcomm.h): minor versions above it get the
/// iteration count, below it the server signature.
const GAUSS_BASE: u32 = 50;
/// auth_failed()'s text for md5/sha256 logins, with ERRCODE_INVALID_PASSWORD.
pub const LOGIN_DENIED: &str = "Invalid username/password,login denied.";

/// Which request the server sends, as pg_hba.conf and the stored password decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `sha256` in pg_hba.conf, sha256-stored password: request 10.
    Sha256,
    /// `md5` in pg_hba.conf, sha256-stored password: request 11.
    Md5Sha256,
    /// `sm3` in pg_hba.conf, sm3-stored password: request 13.
    Sm3,
}

/// A role's `pg_authid.rolpassword` as openGauss stores it with
/// password_encryption_type = 2: `sha256` + salt (64 hex) + ServerKey (64
/// hex) + StoredKey (64 hex) + the encoded iteration count (11 characters).
#[derive(Debug, Clone)]
pub struct Role {
    /// Login name.
    pub user: String,
    /// The stored row.
    pub row: String,
}

impl Role {
    /// What CREATE ROLE … PASSWORD stores (user.cpp `calculate_encrypted_password`:
    /// sha2.cpp `pg_sha256_encrypt`, then `encode_iteration` appended).
    pub fn new(user: &str, password: &[u8], salt_hex: &str, iterations: u32) -> Role {
        let k = pbkdf2_hmac_sha1(password, &server_unhex(salt_hex.as_bytes()), iterations, 32);
        // The server key's label is spelt "Sever Key" in pg_sha256_encrypt.
        let server_key = hmac_sha256(&k, b"Sever Key");
        let client_key = hmac_sha256(&k, b"Client Key");
        let stored_key = sha256(&client_key);
        Role {
            user: user.into(),
            row: format!(
                "sha256{salt_hex}{}{}{}",
                hex(&server_key),
                hex(&stored_key),
                encode_iteration(iterations)
            ),
        }
    }

    /// The salt ("random64code").
    pub fn salt(&self) -> &str {
        &self.row[6..70]
    }

    fn server_key(&self) -> Vec<u8> {
        server_unhex(&self.row.as_bytes()[70..134])
    }

    fn stored_key_hex(&self) -> &str {
        &self.row[134..198]
    }

    /// crypt.cpp `get_iteration_by_password` → user.cpp `decode_iteration`.
    pub fn iterations(&self) -> u32 {
        self.row[198..]
            .bytes()
            .zip(ITERATION_BASE.bytes())
            .rev()
            .fold(0, |n, (c, b)| n * 10 + u32::from(c - b))
    }
}

/// user.cpp's `base_string` of the iteration encoding.
const ITERATION_BASE: &str = "ecdfdcefade";

/// user.cpp `encode_iteration`: decimal digits, least significant first,
/// each added to the base string's character at its position.
pub fn encode_iteration(mut n: u32) -> String {
    ITERATION_BASE
        .bytes()
        .map(|b| {
            let c = b + (n % 10) as u8;
            n /= 10;
            c as char
        })
        .collect()
}

/// How the mock behaves.
#[derive(Debug, Clone)]
pub struct Config {
    /// Request to send.
    pub method: Method,
    /// The one role that exists (other user names get the same request and fail).
    pub role: Role,
    /// The per-connection token (auth.cpp draws 4 random bytes); None: random.
    pub token: Option<[u8; 4]>,
    /// The md5 salt of request 11 (the postmaster's random `md5Salt`); None: random.
    pub md5_salt: Option<[u8; 4]>,
    /// Treat the first connection's StartupMessage as protocol 3.0 whatever
    /// minor it carried (as behind a proxy that rewrites it): the SHA256
    /// request then carries the server signature instead of the iteration count.
    pub first_as_3_0: bool,
    /// Relay mode: after openGauss authentication, log in to the PostgreSQL
    /// socket at this path as this user (trust) and relay the session.
    pub upstream: Option<(PathBuf, String)>,
    /// TLS: an SSLRequest is answered 'S' and the session goes on under this
    /// configuration (openGauss negotiates as PostgreSQL does, before its own
    /// authentication); None: 'N'. Not with relay mode.
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl Config {
    /// `method` for `role`, random tokens and salts, no relay.
    pub fn new(method: Method, role: Role) -> Config {
        Config {
            method,
            role,
            token: None,
            md5_salt: None,
            first_as_3_0: false,
            upstream: None,
            tls: None,
        }
    }
}

/// What one connection did.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    /// The StartupMessage's protocol version (e.g. 196659 for 3.51).
    pub protocol: u32,
    /// The minor version the request was built for.
    pub minor_used: u32,
    /// User name from the StartupMessage.
    pub user: String,
    /// The body of the authentication request sent (after the 'R' header).
    pub request: Vec<u8>,
    /// The token sent (hex), for SHA256/SM3.
    pub token: String,
    /// The password message's text, if the client sent one.
    pub answer: Option<String>,
    /// Whether the answer passed the server's check.
    pub accepted: bool,
    /// Whether the session ran over TLS.
    pub tls: bool,
}

/// A client's connection: plain, or TLS after an SSLRequest.
enum Client {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
}

impl Client {
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Client::Plain(s) => s.set_read_timeout(t),
            Client::Tls(s) => s.sock.set_read_timeout(t),
        }
    }
}

impl Read for Client {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Client::Plain(s) => s.read(buf),
            Client::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Client {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Client::Plain(s) => s.write(buf),
            Client::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Client::Plain(s) => s.flush(),
            Client::Tls(s) => s.flush(),
        }
    }
}

enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Sock {
    fn shutdown(&self) {
        let _ = match self {
            Sock::Tcp(s) => s.shutdown(Shutdown::Both),
            Sock::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }
}

struct Shared {
    config: Config,
    connections: Mutex<Vec<Connection>>,
    /// Every socket a worker uses, shut down when the server is dropped.
    sockets: Mutex<Vec<Sock>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    stop: AtomicBool,
}

/// A running mock server on 127.0.0.1; dropping it ends every connection and thread.
pub struct MockServer {
    port: u16,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Listens on a free port of 127.0.0.1.
    pub fn start(config: Config) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            config,
            connections: Mutex::new(Vec::new()),
            sockets: Mutex::new(Vec::new()),
            workers: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
        });
        let s = Arc::clone(&shared);
        let acceptor = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                s.sockets
                    .lock()
                    .unwrap()
                    .push(Sock::Tcp(stream.try_clone().unwrap()));
                let s2 = Arc::clone(&s);
                let worker = std::thread::spawn(move || {
                    // A connection ends with an error as often as not (the
                    // client closes after a refusal): nothing to report.
                    let _ = backend(&s2, stream);
                });
                s.workers.lock().unwrap().push(worker);
            }
        });
        MockServer {
            port,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What every connection so far did, in the order they arrived.
    pub fn connections(&self) -> Vec<Connection> {
        self.shared.connections.lock().unwrap().clone()
    }

    /// The connections whose answer passed the check.
    pub fn accepted(&self) -> Vec<Connection> {
        self.connections()
            .into_iter()
            .filter(|c| c.accepted)
            .collect()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wakes the acceptor, which then sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        for s in self.shared.sockets.lock().unwrap().iter() {
            s.shutdown();
        }
        let workers: Vec<_> = self.shared.workers.lock().unwrap().drain(..).collect();
        for w in workers {
            let _ = w.join();
        }
    }
}

/// Reads one typed message: (tag, body).
fn read_message(r: &mut impl Read) -> io::Result<(u8, Vec<u8>)> {
    let mut head = [0u8; 5];
    r.read_exact(&mut head)?;
    let len = u32::from_be_bytes(head[1..5].try_into().unwrap()) as usize;
    if !(4..=1 << 24).contains(&len) {
        return Err(io::Error::other(format!("bad message length {len}")));
    }
    let mut body = vec![0u8; len - 4];
    r.read_exact(&mut body)?;
    Ok((head[0], body))
}

/// One typed message.
fn message(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    m.extend_from_slice(body);
    m
}

fn cstr(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

/// ErrorResponse fields as elog.cpp `send_message_to_frontend` writes them
/// for a 9.2-based server (no 'V' field).
fn error_response(severity: &str, code: &str, text: &str, routine: &str) -> Vec<u8> {
    let mut b = Vec::new();
    for (f, v) in [
        (b'S', severity),
        (b'C', code),
        (b'M', text),
        (b'F', "auth.cpp"),
        (b'R', routine),
    ] {
        b.push(f);
        b.extend_from_slice(&cstr(v));
    }
    b.push(0);
    message(b'E', &b)
}

fn random4() -> [u8; 4] {
    let mut b = [0u8; 4];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .unwrap();
    b
}

/// The startup packet (postmaster.cpp `ProcessStartupPacket`): an SSL
/// request is answered 'S' (then the handshake) when the mock has TLS, else
/// 'N'; GSS encryption requests 'N'; the real packet is read next; a
/// CancelRequest is returned as such.
enum Startup {
    Session {
        protocol: u32,
        params: Vec<(String, String)>,
    },
    Cancel(Vec<u8>),
    /// An SSLRequest the mock accepts: the caller does the handshake.
    Tls,
}

fn read_startup(s: &mut Client, tls: bool) -> io::Result<Startup> {
    loop {
        let mut len = [0u8; 4];
        s.read_exact(&mut len)?;
        let len = u32::from_be_bytes(len) as usize;
        if !(8..=10_000).contains(&len) {
            return Err(io::Error::other("invalid length of startup packet"));
        }
        let mut body = vec![0u8; len - 4];
        s.read_exact(&mut body)?;
        let code = u32::from_be_bytes(body[..4].try_into().unwrap());
        match code {
            80877103 if tls && matches!(s, Client::Plain(_)) => {
                s.write_all(b"S")?;
                return Ok(Startup::Tls);
            }
            80877103 | 80877104 => s.write_all(b"N")?,
            80877102 => {
                let mut packet = (len as u32).to_be_bytes().to_vec();
                packet.extend_from_slice(&body);
                return Ok(Startup::Cancel(packet));
            }
            protocol => {
                let fields: Vec<String> = body[4..]
                    .split(|b| *b == 0)
                    .map(|f| String::from_utf8_lossy(f).into_owned())
                    .collect();
                let params = fields
                    .chunks(2)
                    .filter(|p| p.len() == 2 && !p[0].is_empty())
                    .map(|p| (p[0].clone(), p[1].clone()))
                    .collect();
                return Ok(Startup::Session { protocol, params });
            }
        }
    }
}

/// One connection: the postmaster's startup handling and the backend's
/// ClientAuthentication, then queries or the relay.
fn backend(shared: &Shared, client: TcpStream) -> io::Result<()> {
    let config = &shared.config;
    // The server's authentication_timeout (60 s by default).
    client.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut client = Client::Plain(client);
    let (protocol, params) = loop {
        match read_startup(&mut client, config.tls.is_some())? {
            Startup::Session { protocol, params } => break (protocol, params),
            Startup::Cancel(packet) => {
                // Passed on to the real server in relay mode; ignored otherwise.
                if let Some((path, _)) = &config.upstream {
                    UnixStream::connect(path)?.write_all(&packet)?;
                }
                return Ok(());
            }
            Startup::Tls => {
                let (Client::Plain(tcp), Some(tls)) = (client, &config.tls) else {
                    return Ok(());
                };
                let conn =
                    rustls::ServerConnection::new(Arc::clone(tls)).map_err(io::Error::other)?;
                let mut stream = rustls::StreamOwned::new(conn, tcp);
                while stream.conn.is_handshaking() {
                    stream.conn.complete_io(&mut stream.sock)?;
                }
                client = Client::Tls(Box::new(stream));
            }
        }
    };
    let over_tls = matches!(client, Client::Tls(_));
    let param = |k: &str| {
        params
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let index = {
        let mut all = shared.connections.lock().unwrap();
        all.push(Connection {
            protocol,
            user: param("user"),
            tls: over_tls,
            ..Connection::default()
        });
        all.len() - 1
    };
    let record = |f: &dyn Fn(&mut Connection)| f(&mut shared.connections.lock().unwrap()[index]);
    let minor = if config.first_as_3_0 && index == 0 {
        0
    } else {
        protocol & 0xffff
    };
    let role = &config.role;
    let token_bytes = config.token.unwrap_or_else(random4);
    let token = hex(&token_bytes);
    let md5_salt = config.md5_salt.unwrap_or_else(random4);

    // sendAuthRequest: the request and its fields.
    let mut request = Vec::new();
    match config.method {
        Method::Sha256 | Method::Sm3 => {
            let (code, stored) = match config.method {
                Method::Sha256 => (AUTH_REQ_SHA256, SHA256_PASSWORD),
                _ => (AUTH_REQ_SM3, SM3_PASSWORD),
            };
            request.extend_from_slice(&code.to_be_bytes());
            request.extend_from_slice(&stored.to_be_bytes());
            request.extend_from_slice(role.salt().as_bytes());
            request.extend_from_slice(token.as_bytes());
            if minor < GAUSS_BASE {
                // "Send the sever_signature before client_signature is not safe."
                let signature = hmac_sha256(&role.server_key(), &token_bytes);
                request.extend_from_slice(hex(&signature).as_bytes());
            }
            if minor > GAUSS_BASE {
                request.extend_from_slice(&role.iterations().to_be_bytes());
            }
        }
        Method::Md5Sha256 => {
            request.extend_from_slice(&AUTH_REQ_MD5_SHA256.to_be_bytes());
            request.extend_from_slice(role.salt().as_bytes());
            request.extend_from_slice(&md5_salt);
        }
    }
    record(&|c| {
        c.minor_used = minor;
        c.request = request.clone();
        c.token = token.clone();
    });
    client.write_all(&message(b'R', &request))?;

    // recv_password_packet: a 'p' message, or the client hung up (STATUS_EOF:
    // the backend exits without a word).
    let (tag, body) = match read_message(&mut client) {
        Ok(m) => m,
        Err(_) => return Ok(()),
    };
    if tag != b'p' {
        return Ok(());
    }
    let text = body.split(|b| *b == 0).next().unwrap_or_default().to_vec();
    let answer = String::from_utf8_lossy(&text).into_owned();
    let accepted = param("user") == role.user
        && match config.method {
            Method::Sha256 => sha256_check(role, &token_bytes, &text),
            Method::Md5Sha256 => md5_sha256_check(role, md5_salt, &text),
            // The mock has no SM3; no client should answer it anyway.
            Method::Sm3 => false,
        };
    record(&|c| {
        c.answer = Some(answer.clone());
        c.accepted = accepted;
    });
    if !accepted {
        // auth_failed: uaSHA256 and uaMD5 both give this text with
        // ERRCODE_INVALID_PASSWORD (28P01), at FATAL; then the backend exits.
        client.write_all(&error_response(
            "FATAL",
            "28P01",
            LOGIN_DENIED,
            "auth_failed",
        ))?;
        return Ok(());
    }
    client.set_read_timeout(None)?;
    match (&config.upstream, client) {
        (Some((path, user)), Client::Plain(client)) => relay(shared, client, path, user, &params),
        (Some(_), Client::Tls(_)) => Err(io::Error::other("the mock relays plain sessions only")),
        (None, client) => serve(client, &param("user")),
    }
}

/// crypt.cpp `crypt_verify`, uaSHA256 with a sha256-stored password: the
/// answer must be 64 characters; ClientKey = answer XOR HMAC(StoredKey,
/// token), and SHA256(ClientKey) must be the StoredKey.
fn sha256_check(role: &Role, token: &[u8; 4], answer: &[u8]) -> bool {
    if answer.len() != 64 {
        return false;
    }
    let stored_key = server_unhex(role.stored_key_hex().as_bytes());
    let signature = hmac_sha256(&stored_key, token);
    let client_key: Vec<u8> = server_unhex(answer)
        .iter()
        .zip(signature)
        .map(|(a, b)| a ^ b)
        .collect();
    hex(&sha256(&client_key)) == role.stored_key_hex()
}

/// crypt.cpp `crypt_verify`, uaMD5 with a sha256-stored password:
/// `pg_md5_encrypt(shadow_pass + SHA256_LENGTH, md5Salt, 4)`, i.e. "md5" +
/// MD5 of the stored row after its `sha256` prefix — salt, ServerKey and
/// StoredKey hex and the encoded iteration count — followed by the md5 salt.
fn md5_sha256_check(role: &Role, md5_salt: [u8; 4], answer: &[u8]) -> bool {
    let mut input = role.row.as_bytes()[6..].to_vec();
    input.extend_from_slice(&md5_salt);
    answer == format!("md5{}", hex(&md5(&input))).as_bytes()
}

/// After AuthenticationOk, what an openGauss backend reports
/// (postinit/guc: GUC_REPORT settings), its key and ReadyForQuery; then one
/// canned row for any simple query, until Terminate.
fn serve(mut client: Client, user: &str) -> io::Result<()> {
    let mut out = message(b'R', &0u32.to_be_bytes());
    for (k, v) in [
        ("application_name", "csdchar"),
        ("client_encoding", "UTF8"),
        ("DateStyle", "ISO, MDY"),
        ("integer_datetimes", "on"),
        ("IntervalStyle", "postgres"),
        ("is_sysadmin", "off"),
        ("server_encoding", "UTF8"),
        ("server_version", "9.2.4"),
        ("session_authorization", user),
        ("standard_conforming_strings", "on"),
        ("TimeZone", "UTC"),
    ] {
        let mut b = cstr(k);
        b.extend_from_slice(&cstr(v));
        out.extend_from_slice(&message(b'S', &b));
    }
    let mut key = 4242u32.to_be_bytes().to_vec();
    key.extend_from_slice(&random4());
    out.extend_from_slice(&message(b'K', &key));
    out.extend_from_slice(&message(b'Z', b"I"));
    client.write_all(&out)?;
    loop {
        let (tag, _) = read_message(&mut client)?;
        let reply = match tag {
            b'Q' => {
                // One int4 column "?column?" and the row (1).
                let mut desc = 1u16.to_be_bytes().to_vec();
                desc.extend_from_slice(&cstr("?column?"));
                desc.extend_from_slice(&0u32.to_be_bytes()); // table oid
                desc.extend_from_slice(&0u16.to_be_bytes()); // column number
                desc.extend_from_slice(&23u32.to_be_bytes()); // int4
                desc.extend_from_slice(&4i16.to_be_bytes()); // size
                desc.extend_from_slice(&(-1i32).to_be_bytes()); // typmod
                desc.extend_from_slice(&0u16.to_be_bytes()); // text format
                let mut row = 1u16.to_be_bytes().to_vec();
                row.extend_from_slice(&1u32.to_be_bytes());
                row.push(b'1');
                let mut r = message(b'T', &desc);
                r.extend_from_slice(&message(b'D', &row));
                r.extend_from_slice(&message(b'C', &cstr("SELECT 1")));
                r.extend_from_slice(&message(b'Z', b"I"));
                r
            }
            b'X' => return Ok(()),
            // The extended protocol is not mocked: refuse, then resync on Sync.
            b'S' => message(b'Z', b"I"),
            b'P' => error_response(
                "ERROR",
                "0A000",
                "the mock openGauss server answers simple queries only",
                "serve",
            ),
            _ => continue,
        };
        client.write_all(&reply)?;
    }
}

/// Relay mode: a trust login to the real server as `user` with the client's
/// other startup parameters; its AuthenticationOk is dropped (the client got
/// ours), everything else is passed on both ways until either side closes.
fn relay(
    shared: &Shared,
    mut client: TcpStream,
    path: &std::path::Path,
    user: &str,
    params: &[(String, String)],
) -> io::Result<()> {
    let mut upstream = UnixStream::connect(path)?;
    shared
        .sockets
        .lock()
        .unwrap()
        .push(Sock::Unix(upstream.try_clone()?));
    let mut body = 196608u32.to_be_bytes().to_vec();
    body.extend_from_slice(&cstr("user"));
    body.extend_from_slice(&cstr(user));
    for (k, v) in params.iter().filter(|(k, _)| k != "user") {
        body.extend_from_slice(&cstr(k));
        body.extend_from_slice(&cstr(v));
    }
    body.push(0);
    let mut startup = (body.len() as u32 + 4).to_be_bytes().to_vec();
    startup.extend_from_slice(&body);
    upstream.write_all(&startup)?;
    match read_message(&mut upstream)? {
        (b'R', b) if b == 0u32.to_be_bytes() => {
            client.write_all(&message(b'R', &0u32.to_be_bytes()))?;
        }
        (b'E', b) => {
            client.write_all(&message(b'E', &b))?;
            return Ok(());
        }
        (tag, _) => {
            return Err(io::Error::other(format!(
                "upstream asked for more than trust ('{}')",
                tag as char
            )));
        }
    }
    let mut client_in = client.try_clone()?;
    let mut upstream_out = upstream.try_clone()?;
    let up = std::thread::spawn(move || {
        let _ = io::copy(&mut client_in, &mut upstream_out);
        let _ = upstream_out.shutdown(Shutdown::Write);
    });
    let _ = io::copy(&mut upstream, &mut client);
    let _ = client.shutdown(Shutdown::Both);
    let _ = upstream.shutdown(Shutdown::Both);
    let _ = up.join();
    Ok(())
}
