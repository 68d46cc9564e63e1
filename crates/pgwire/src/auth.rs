//! The startup and authentication exchange, written once (sans I/O) for both
//! of csdchar's clients: the blocking wire client of the measured loop and
//! the tokio-postgres control connection (which sees an already
//! authenticated stream, see [`crate::client::connect_client`]).
//!
//! PostgreSQL: trust, password, md5, SCRAM-SHA-256. openGauss reuses some
//! request codes with other meanings (10 = SHA256, 11 = MD5_SHA256, 13 =
//! SM3); the bodies tell them apart: PostgreSQL's SASL request (10) lists
//! mechanism names, openGauss's starts with an int32 "stored method", and
//! PostgreSQL only sends 11 after a SASL exchange has begun.

use bytes::{BufMut, BytesMut};
use hmac::{Hmac, KeyInit, Mac};
use md5::Md5;
use postgres_protocol::authentication::sasl::{
    ChannelBinding, SCRAM_SHA_256, SCRAM_SHA_256_PLUS, ScramSha256,
};
use postgres_protocol::message::frontend;
use sha2::{Digest, Sha256};

/// Protocol 3.0, what PostgreSQL speaks.
pub const PROTOCOL_3_0: u32 = 3 << 16;
/// Protocol 3.51: an openGauss server then sends the PBKDF2 iteration count
/// with its SHA256 request (to 3.0 clients it sends none). PostgreSQL answers
/// it with NegotiateProtocolVersion and carries on with 3.0.
pub const PROTOCOL_3_51: u32 = (3 << 16) | 51;

/// openGauss's default PBKDF2 iteration count (`auth_iteration_count`). The
/// MD5_SHA256 request carries none, so the answer assumes it.
const DEFAULT_ITERATIONS: u32 = 10000;

/// user.cpp's base string for the iteration count openGauss appends to a
/// stored sha256 password.
const ITERATION_BASE: &[u8; 11] = b"ecdfdcefade";

/// Why authentication did not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The server refused (ErrorResponse): its message and SQLSTATE.
    #[error("{message} ({code})")]
    Server {
        /// SQLSTATE.
        code: String,
        /// Primary message.
        message: String,
    },
    /// The server wants a password and none was given.
    #[error(
        "fe_sendauth: no password supplied (the server asks for one: give it in the URL, PGPASSWORD or a password file)"
    )]
    NoPassword,
    /// openGauss sent its SHA256 request without the iteration count, as it
    /// does to protocol 3.0 clients: connect again with protocol 3.51.
    #[error("the openGauss server sent no iteration count; reconnect with protocol 3.51")]
    NeedsProtocol351,
    /// A method csdchar does not speak, named, with how to switch the server.
    #[error("{0}")]
    Unsupported(String),
    /// The server sent something the handshake cannot read.
    #[error("unexpected authentication message: {0}")]
    Protocol(String),
    /// `channel_binding=require` and the authentication was not bound.
    #[error("{0}")]
    ChannelBinding(&'static str),
    /// `require_auth` does not allow what the server asked for.
    #[error("authentication method requirement \"{required}\" failed: {why}")]
    NotAllowed {
        /// The require_auth value.
        required: String,
        /// What the server did, in libpq's words.
        why: &'static str,
    },
}

/// Where the exchange stands after one server message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Keep reading (anything put in `out` must be sent first).
    Continue,
    /// AuthenticationOk arrived; ParameterStatus, BackendKeyData and
    /// ReadyForQuery follow.
    Authenticated,
}

/// Which method the server chose, for messages and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// No password asked.
    Trust,
    /// Cleartext password.
    Password,
    /// PostgreSQL md5.
    Md5,
    /// SCRAM-SHA-256 (SASL).
    ScramSha256,
    /// openGauss SHA256 (code 10, RFC 5802-like proof).
    OpenGaussSha256,
    /// openGauss MD5_SHA256 (code 11).
    OpenGaussMd5Sha256,
}

/// The client's side of one startup exchange.
pub struct Handshake<'a> {
    user: &'a str,
    password: Option<&'a [u8]>,
    scram: Option<ScramSha256>,
    method: Method,
    require: Option<crate::options::RequireAuth>,
    binding_mode: crate::options::ChannelBindingMode,
    /// tls-server-end-point data when the connection is TLS.
    binding: Option<Vec<u8>>,
    bound: bool,
}

/// The StartupMessage parameters csdchar sends (tokio-postgres sends the
/// same set, so a session looks alike through either client).
pub fn startup_params(cfg: &tokio_postgres::Config) -> Vec<(&str, &str)> {
    let user = cfg.get_user().unwrap_or("postgres");
    let mut params = vec![
        ("client_encoding", "UTF8"),
        ("user", user),
        ("database", cfg.get_dbname().unwrap_or(user)),
    ];
    if let Some(a) = cfg.get_application_name() {
        params.push(("application_name", a));
    }
    if let Some(o) = cfg.get_options() {
        params.push(("options", o));
    }
    params
}

/// Encodes a StartupMessage with the given protocol version.
pub fn startup_message(params: &[(&str, &str)], protocol: u32, out: &mut BytesMut) {
    let start = out.len();
    out.put_u32(0);
    out.put_u32(protocol);
    for (k, v) in params {
        out.put_slice(k.as_bytes());
        out.put_u8(0);
        out.put_slice(v.as_bytes());
        out.put_u8(0);
    }
    out.put_u8(0);
    let len = (out.len() - start) as u32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

impl<'a> Handshake<'a> {
    /// A handshake for `user` with an optional password.
    pub fn new(user: &'a str, password: Option<&'a [u8]>) -> Handshake<'a> {
        Handshake {
            user,
            password,
            scram: None,
            method: Method::Trust,
            require: None,
            binding_mode: crate::options::ChannelBindingMode::Prefer,
            binding: None,
            bound: false,
        }
    }

    /// libpq's `channel_binding`, with the TLS session's tls-server-end-point
    /// data ([`crate::verify::end_point`]; None on a plain connection).
    pub fn channel_binding(
        mut self,
        mode: crate::options::ChannelBindingMode,
        end_point: Option<Vec<u8>>,
    ) -> Handshake<'a> {
        self.binding_mode = mode;
        self.binding = end_point;
        self
    }

    /// Holds the server to libpq 16's `require_auth`.
    pub fn require_auth(mut self, require: Option<crate::options::RequireAuth>) -> Handshake<'a> {
        self.require = require;
        self
    }

    /// The method the server asked for (Trust until it asks for one).
    pub fn method(&self) -> Method {
        self.method
    }

    fn password(&self) -> Result<&'a [u8], AuthError> {
        self.password.ok_or(AuthError::NoPassword)
    }

    /// Handles one server message (`tag`, `body` without the length);
    /// whatever must be answered is appended to `out`.
    pub fn on_message(
        &mut self,
        tag: u8,
        body: &[u8],
        out: &mut BytesMut,
    ) -> Result<Progress, AuthError> {
        match tag {
            b'R' => self.on_request(body, out),
            b'E' => {
                let (code, mut message) = crate::message::error_fields(body);
                if self.method == Method::OpenGaussMd5Sha256 && code == "28P01" {
                    message.push_str(
                        " (md5_sha256 assumes the default auth_iteration_count 10000; for a password \
                         set with another count, use a sha256 line in pg_hba.conf)",
                    );
                }
                Err(AuthError::Server { code, message })
            }
            // NegotiateProtocolVersion (PostgreSQL's answer to 3.51) and notices.
            b'v' | b'N' => Ok(Progress::Continue),
            other => Err(AuthError::Protocol(format!(
                "message '{}' before authentication completed",
                other as char
            ))),
        }
    }

    fn on_request(&mut self, body: &[u8], out: &mut BytesMut) -> Result<Progress, AuthError> {
        if body.len() < 4 {
            return Err(AuthError::Protocol("short authentication request".into()));
        }
        let code = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        let data = &body[4..];
        let io = |e: std::io::Error| AuthError::Protocol(e.to_string());
        if let Some(r) = &self.require {
            let asked = match code {
                0 if self.method == Method::Trust => {
                    Some(("none", "server did not complete authentication"))
                }
                3 => Some(("password", "server requested a cleartext password")),
                5 => Some(("md5", "server requested a hashed password")),
                10 if data.first() != Some(&0) => {
                    Some(("scram-sha-256", "server requested SASL authentication"))
                }
                7 | 8 => Some(("gss", "server requested GSSAPI authentication")),
                9 => Some(("sspi", "server requested SSPI authentication")),
                _ => None,
            };
            if let Some((method, why)) = asked
                && !r.allows(method)
            {
                return Err(AuthError::NotAllowed {
                    required: r.raw.clone(),
                    why,
                });
            }
        }
        use crate::options::ChannelBindingMode as Cb;
        if code == 0 && self.binding_mode == Cb::Require && !self.bound {
            return Err(AuthError::ChannelBinding(if self.binding.is_none() {
                "channel binding required, but SSL not in use"
            } else {
                "channel binding required, but server authenticated client without channel binding"
            }));
        }
        match code {
            0 => return Ok(Progress::Authenticated),
            3 => {
                self.method = Method::Password;
                frontend::password_message(self.password()?, out).map_err(io)?;
            }
            5 => self.md5(data, out)?,
            10 if data.first() == Some(&0) => self.opengauss_sha256(data, out)?,
            10 => {
                let offers = |name: &str| data.split(|b| *b == 0).any(|m| m == name.as_bytes());
                // libpq's choice: PLUS over TLS when offered and not disabled.
                let (mechanism, binding) = match (&self.binding, self.binding_mode) {
                    (_, Cb::Disable) => (SCRAM_SHA_256, ChannelBinding::unsupported()),
                    (Some(d), _) if offers(SCRAM_SHA_256_PLUS) => (
                        SCRAM_SHA_256_PLUS,
                        ChannelBinding::tls_server_end_point(d.clone()),
                    ),
                    (None, Cb::Require) => {
                        return Err(AuthError::ChannelBinding(
                            "channel binding required, but SSL not in use",
                        ));
                    }
                    (Some(_), Cb::Require) => {
                        return Err(AuthError::ChannelBinding(
                            "channel binding is required, but server did not offer an authentication method that supports channel binding",
                        ));
                    }
                    (Some(_), _) => (SCRAM_SHA_256, ChannelBinding::unrequested()),
                    (None, _) => (SCRAM_SHA_256, ChannelBinding::unsupported()),
                };
                if !offers(mechanism) {
                    return Err(AuthError::Unsupported(
                        "the server offers no SASL mechanism csdchar speaks (SCRAM-SHA-256)".into(),
                    ));
                }
                self.method = Method::ScramSha256;
                self.bound = mechanism == SCRAM_SHA_256_PLUS;
                let s = ScramSha256::new(self.password()?, binding);
                frontend::sasl_initial_response(mechanism, s.message(), out).map_err(io)?;
                self.scram = Some(s);
            }
            11 if self.scram.is_none() => {
                // openGauss MD5_SHA256: 64 hex salt, then 4 raw md5-salt bytes.
                self.method = Method::OpenGaussMd5Sha256;
                let (salt, rest) = split_hex(data, 64, "salt")?;
                let md5_salt = four(rest)?;
                let answer = opengauss_md5_sha256_response(self.password()?, salt, md5_salt)?;
                password_message(answer.as_bytes(), out);
            }
            11 => {
                let s = self.scram.as_mut().expect("checked above");
                s.update(data).map_err(io)?;
                frontend::sasl_response(s.message(), out).map_err(io)?;
            }
            12 => {
                let s = self.scram.as_mut().ok_or_else(|| {
                    AuthError::Protocol("SASL final without a SASL exchange".into())
                })?;
                s.finish(data).map_err(io)?;
            }
            13 => {
                return Err(AuthError::Unsupported(
                    "the server asks for openGauss SM3 authentication, which csdchar does not speak; \
                     set password_encryption_type = 2 (sha256) on the server and reset the user's \
                     password (ALTER USER … PASSWORD '…')"
                        .into(),
                ));
            }
            other => {
                let name = match other {
                    2 => "Kerberos V5",
                    6 => "SCM credentials",
                    7 | 8 => "GSSAPI",
                    9 => "SSPI",
                    _ => "unknown",
                };
                return Err(AuthError::Unsupported(format!(
                    "the server asks for {name} authentication (request {other}), which csdchar does not speak; \
                     csdchar speaks trust, password, md5 and scram-sha-256 (PostgreSQL) and sha256 and \
                     md5_sha256 (openGauss): change the pg_hba.conf line for this client"
                )));
            }
        }
        Ok(Progress::Continue)
    }

    /// The md5 answer to a 4-byte salt (PostgreSQL's request 5, and
    /// openGauss's request 10 for a password stored as md5).
    fn md5(&mut self, data: &[u8], out: &mut BytesMut) -> Result<(), AuthError> {
        self.method = Method::Md5;
        let hash = postgres_protocol::authentication::md5_hash(
            self.user.as_bytes(),
            self.password()?,
            four(data)?,
        );
        password_message(hash.as_bytes(), out);
        Ok(())
    }

    /// openGauss code 10: int32 stored method, then per method its fields.
    fn opengauss_sha256(&mut self, data: &[u8], out: &mut BytesMut) -> Result<(), AuthError> {
        let stored = u32::from_be_bytes(four(data)?);
        let data = &data[4..];
        match stored {
            // 0 plain, 2 sha256: salt, token and (protocol > 3.50) iterations.
            0 | 2 => {
                self.method = Method::OpenGaussSha256;
                let (salt, rest) = split_hex(data, 64, "salt")?;
                let (token, rest) = split_hex(rest, 8, "token")?;
                // To protocol 3.0 clients the server sends its signature
                // (64 hex) instead of the iteration count.
                if rest.len() != 4 {
                    return Err(AuthError::NeedsProtocol351);
                }
                let iterations = u32::from_be_bytes(four(rest)?);
                let proof = opengauss_sha256_proof(self.password()?, salt, token, iterations)?;
                password_message(proof.as_bytes(), out);
            }
            // 1 md5: the role's password is stored as md5; classic md5 answer.
            1 => self.md5(data, out)?,
            other => {
                return Err(AuthError::Unsupported(format!(
                    "the openGauss server stores this user's password with method {other}, which \
                     csdchar does not speak; set password_encryption_type = 2 (sha256) and reset \
                     the user's password"
                )));
            }
        }
        Ok(())
    }
}

/// A PasswordMessage ('p', the text, NUL).
fn password_message(text: &[u8], out: &mut BytesMut) {
    out.put_u8(b'p');
    out.put_u32((4 + text.len() + 1) as u32);
    out.put_slice(text);
    out.put_u8(0);
}

fn four(data: &[u8]) -> Result<[u8; 4], AuthError> {
    data.get(..4)
        .map(|b| [b[0], b[1], b[2], b[3]])
        .ok_or_else(|| AuthError::Protocol("short authentication request".into()))
}

/// The first `n` bytes as a hex string, and the rest.
fn split_hex<'d>(data: &'d [u8], n: usize, what: &str) -> Result<(&'d str, &'d [u8]), AuthError> {
    let bad = || {
        AuthError::Protocol(format!(
            "the {what} in the SHA256 request is not {n} hex digits"
        ))
    };
    let head = data.get(..n).ok_or_else(bad)?;
    let text = std::str::from_utf8(head).map_err(|_| bad())?;
    if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    Ok((text, &data[n..]))
}

fn unhex(s: &str) -> Result<Vec<u8>, AuthError> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        b'A'..=b'F' => Ok(c - b'A' + 10),
        _ => Err(AuthError::Protocol(format!("'{s}' is not hex"))),
    };
    if !s.len().is_multiple_of(2) {
        return Err(AuthError::Protocol(format!(
            "'{s}' has an odd number of hex digits"
        )));
    }
    s.as_bytes()
        .chunks(2)
        .map(|p| Ok(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// openGauss's keys for a password: (ServerKey, ClientKey, StoredKey).
/// K = PBKDF2-HMAC-SHA1(password, salt, iterations, 32 bytes); the server
/// key's label is spelt "Sever Key" in openGauss and must stay so.
fn opengauss_keys(password: &[u8], salt: &[u8], iterations: u32) -> ([u8; 32], [u8; 32], [u8; 32]) {
    let mut k = [0u8; 32];
    pbkdf2::pbkdf2_hmac::<sha1::Sha1>(password, salt, iterations, &mut k);
    let server_key = hmac_sha256(&k, b"Sever Key");
    let client_key = hmac_sha256(&k, b"Client Key");
    let stored_key: [u8; 32] = Sha256::digest(client_key).into();
    (server_key, client_key, stored_key)
}

/// The openGauss SHA256 proof: HMAC-SHA256(StoredKey, token) XOR ClientKey,
/// as 64 lowercase hex digits (the server's decoder takes only a–f).
pub fn opengauss_sha256_proof(
    password: &[u8],
    salt_hex: &str,
    token_hex: &str,
    iterations: u32,
) -> Result<String, AuthError> {
    if iterations == 0 {
        return Err(AuthError::Protocol("iteration count 0".into()));
    }
    let (_, client_key, stored_key) = opengauss_keys(password, &unhex(salt_hex)?, iterations);
    let signature = hmac_sha256(&stored_key, &unhex(token_hex)?);
    let proof: Vec<u8> = signature
        .iter()
        .zip(client_key.iter())
        .map(|(a, b)| a ^ b)
        .collect();
    Ok(hex(&proof))
}

/// user.cpp `encode_iteration`: the count's decimal digits, least
/// significant first, each added to the base string's character.
fn encode_iteration(mut n: u32) -> String {
    ITERATION_BASE
        .iter()
        .map(|b| {
            let c = b + (n % 10) as u8;
            n /= 10;
            c as char
        })
        .collect()
}

/// The openGauss MD5_SHA256 answer, as the server checks it (crypt.cpp:
/// md5 over the stored sha256 password after its "sha256" prefix, then the
/// md5 salt): "md5" + hex(MD5(salt hex + hex(ServerKey) + hex(StoredKey) +
/// encode_iteration(10000) + md5 salt)). The JDBC and Go drivers leave the
/// iteration suffix out and derive at 2048, which the server refuses.
pub fn opengauss_md5_sha256_response(
    password: &[u8],
    salt_hex: &str,
    md5_salt: [u8; 4],
) -> Result<String, AuthError> {
    let (server_key, _, stored_key) =
        opengauss_keys(password, &unhex(salt_hex)?, DEFAULT_ITERATIONS);
    let mut md5 = Md5::new();
    md5.update(salt_hex.as_bytes());
    md5.update(hex(&server_key).as_bytes());
    md5.update(hex(&stored_key).as_bytes());
    md5.update(encode_iteration(DEFAULT_ITERATIONS).as_bytes());
    md5.update(md5_salt);
    Ok(format!("md5{}", hex(&md5.finalize())))
}

/// Targets (by `host:port`) known to be openGauss servers that need protocol
/// 3.51 for SHA256; later connections start with it instead of learning it again.
fn needs_351() -> &'static std::sync::Mutex<std::collections::HashSet<String>> {
    static SEEN: std::sync::OnceLock<std::sync::Mutex<std::collections::HashSet<String>>> =
        std::sync::OnceLock::new();
    SEEN.get_or_init(Default::default)
}

/// The protocol version to start a connection to `target` with: 3.0, unless
/// the target is known to want 3.51 (poolers such as PgBouncer reject 3.51).
pub fn protocol_for(target: &str) -> u32 {
    if needs_351().lock().unwrap().contains(target) {
        PROTOCOL_3_51
    } else {
        PROTOCOL_3_0
    }
}

/// Remembers that `target` wants protocol 3.51.
pub fn remember_351(target: &str) {
    needs_351().lock().unwrap().insert(target.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(code: u32, data: &[u8]) -> Vec<u8> {
        let mut b = code.to_be_bytes().to_vec();
        b.extend_from_slice(data);
        b
    }

    /// The server's check (openGauss auth.cpp): recover ClientKey from the
    /// proof with the stored key and compare its hash with StoredKey.
    fn server_accepts(proof_hex: &str, password: &[u8], salt: &str, token: &str, it: u32) -> bool {
        let (_, _, stored_key) = opengauss_keys(password, &unhex(salt).unwrap(), it);
        let signature = hmac_sha256(&stored_key, &unhex(token).unwrap());
        let proof = unhex(proof_hex).unwrap();
        let client_key: Vec<u8> = proof.iter().zip(signature).map(|(a, b)| a ^ b).collect();
        Sha256::digest(&client_key).as_slice() == stored_key
    }

    const SALT: &str = "5ae737626add65f8da1b063104a6c4e2dc25b7343d8512a74826dc5b5e3e5188";

    #[test]
    fn sha256_request_with_iterations_is_answered_with_a_proof_the_server_accepts() {
        let mut data = 2u32.to_be_bytes().to_vec();
        data.extend_from_slice(SALT.as_bytes());
        data.extend_from_slice(b"0a1b2c3d");
        data.extend_from_slice(&4096u32.to_be_bytes());
        let mut out = BytesMut::new();
        let mut h = Handshake::new("u", Some(b"Gauss@123"));
        assert_eq!(
            h.on_message(b'R', &request(10, &data), &mut out),
            Ok(Progress::Continue)
        );
        assert_eq!(h.method(), Method::OpenGaussSha256);
        assert_eq!(out[0], b'p');
        let text = std::str::from_utf8(&out[5..out.len() - 1]).unwrap();
        assert_eq!(text.len(), 64);
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        );
        assert!(server_accepts(text, b"Gauss@123", SALT, "0a1b2c3d", 4096));
        assert!(!server_accepts(text, b"Gauss@124", SALT, "0a1b2c3d", 4096));
        assert_eq!(
            h.on_message(b'R', &request(0, &[]), &mut out),
            Ok(Progress::Authenticated)
        );
    }

    #[test]
    fn sha256_request_without_iterations_asks_for_protocol_351() {
        let mut data = 2u32.to_be_bytes().to_vec();
        data.extend_from_slice(SALT.as_bytes());
        data.extend_from_slice(b"0a1b2c3d");
        data.extend_from_slice(&[b'f'; 64]);
        let mut h = Handshake::new("u", Some(b"x"));
        assert_eq!(
            h.on_message(b'R', &request(10, &data), &mut BytesMut::new()),
            Err(AuthError::NeedsProtocol351)
        );
    }

    #[test]
    fn sasl_and_opengauss_requests_are_told_apart() {
        let mut out = BytesMut::new();
        let mut h = Handshake::new("u", Some(b"x"));
        h.on_message(b'R', &request(10, b"SCRAM-SHA-256\0\0"), &mut out)
            .unwrap();
        assert_eq!(h.method(), Method::ScramSha256);
        assert_eq!(out[0], b'p');
        // Code 11 before any SASL exchange is openGauss MD5_SHA256.
        let mut data = SALT.as_bytes().to_vec();
        data.extend_from_slice(&[1, 2, 3, 4]);
        let mut out = BytesMut::new();
        let mut h = Handshake::new("u", Some(b"x"));
        h.on_message(b'R', &request(11, &data), &mut out).unwrap();
        assert_eq!(h.method(), Method::OpenGaussMd5Sha256);
        let text = std::str::from_utf8(&out[5..out.len() - 1]).unwrap();
        assert_eq!(
            text,
            opengauss_md5_sha256_response(b"x", SALT, [1, 2, 3, 4]).unwrap()
        );
        assert!(text.starts_with("md5") && text.len() == 35);
    }

    #[test]
    fn unsupported_methods_and_refusals_are_named() {
        let mut h = Handshake::new("u", Some(b"x"));
        let e = h
            .on_message(b'R', &request(13, &[0; 80]), &mut BytesMut::new())
            .unwrap_err();
        assert!(
            e.to_string().contains("SM3") && e.to_string().contains("password_encryption_type")
        );
        let e = h
            .on_message(b'R', &request(7, &[]), &mut BytesMut::new())
            .unwrap_err();
        assert!(e.to_string().contains("GSSAPI"), "{e}");
        let e = h
            .on_message(
                b'E',
                b"SFATAL\0C28P01\0MInvalid username/password,login denied.\0\0",
                &mut BytesMut::new(),
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Invalid username/password,login denied. (28P01)"
        );
        let mut h = Handshake::new("u", None);
        assert_eq!(
            h.on_message(b'R', &request(3, &[]), &mut BytesMut::new()),
            Err(AuthError::NoPassword)
        );
    }

    /// libpq 16's require_auth: a method not allowed is refused in libpq's words.
    #[test]
    fn require_auth_refuses_what_it_does_not_allow() {
        use crate::env::Env;
        struct NoEnv;
        impl Env for NoEnv {
            fn get(&self, _: &str) -> Option<String> {
                None
            }
        }
        let opts = |v: &str| {
            crate::options::LibpqOptions::resolve(&[("require_auth".into(), v.into())], &NoEnv)
                .map(|o| o.require_auth)
        };
        let sasl = request(10, b"SCRAM-SHA-256\0\0");
        let mut h = Handshake::new("u", Some(b"x")).require_auth(opts("md5").unwrap());
        let e = h.on_message(b'R', &sasl, &mut BytesMut::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "authentication method requirement \"md5\" failed: server requested SASL authentication"
        );
        let mut h = Handshake::new("u", Some(b"x")).require_auth(opts("scram-sha-256").unwrap());
        assert!(h.on_message(b'R', &sasl, &mut BytesMut::new()).is_ok());
        let mut h = Handshake::new("u", Some(b"x")).require_auth(opts("!none").unwrap());
        let e = h
            .on_message(b'R', &request(0, &[]), &mut BytesMut::new())
            .unwrap_err();
        assert!(
            e.to_string().contains("did not complete authentication"),
            "{e}"
        );
        assert!(opts("md5,!password").is_err());
        assert!(opts("kerberos").is_err());
    }

    /// libpq's channel binding: SCRAM-SHA-256-PLUS over TLS when offered;
    /// require refuses what is not bound.
    #[test]
    fn channel_binding_follows_libpq() {
        use crate::options::ChannelBindingMode as Cb;
        let both = request(10, b"SCRAM-SHA-256-PLUS\0SCRAM-SHA-256\0\0");
        let plain_only = request(10, b"SCRAM-SHA-256\0\0");
        let mut out = BytesMut::new();
        let mut h = Handshake::new("u", Some(b"x")).channel_binding(Cb::Prefer, Some(vec![7; 32]));
        h.on_message(b'R', &both, &mut out).unwrap();
        assert!(out.windows(18).any(|w| w == b"SCRAM-SHA-256-PLUS"));
        let mut out = BytesMut::new();
        let mut h = Handshake::new("u", Some(b"x")).channel_binding(Cb::Disable, Some(vec![7; 32]));
        h.on_message(b'R', &both, &mut out).unwrap();
        assert!(!out.windows(18).any(|w| w == b"SCRAM-SHA-256-PLUS"));
        let mut h = Handshake::new("u", Some(b"x")).channel_binding(Cb::Require, None);
        let e = h
            .on_message(b'R', &plain_only, &mut BytesMut::new())
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "channel binding required, but SSL not in use"
        );
        let mut h = Handshake::new("u", Some(b"x")).channel_binding(Cb::Require, Some(vec![7; 32]));
        assert!(
            h.on_message(b'R', &plain_only, &mut BytesMut::new())
                .is_err()
        );
        let mut h = Handshake::new("u", None).channel_binding(Cb::Require, Some(vec![7; 32]));
        let e = h
            .on_message(b'R', &request(0, &[]), &mut BytesMut::new())
            .unwrap_err();
        assert!(e.to_string().contains("without channel binding"), "{e}");
    }

    #[test]
    fn iteration_counts_are_encoded_like_opengauss_user_cpp() {
        assert_eq!(encode_iteration(10000), "ecdfecefade");
        assert_eq!(encode_iteration(0), "ecdfdcefade");
        assert_eq!(encode_iteration(2048), "mgdhdcefade");
    }

    #[test]
    fn startup_message_carries_the_protocol_version() {
        let mut out = BytesMut::new();
        startup_message(&[("user", "u")], PROTOCOL_3_51, &mut out);
        assert_eq!(&out[..4], &(out.len() as u32).to_be_bytes());
        assert_eq!(&out[4..8], &196659u32.to_be_bytes());
        assert_eq!(&out[8..], b"user\0u\0\0");
    }
}
