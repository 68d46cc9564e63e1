//! TLS to the server with libpq's semantics, on rustls (ring as the crypto
//! provider: already in our tree, no C library or CMake to build, and fast
//! AES-GCM on x86-64 and aarch64).
//!
//! - `sslmode`: disable, allow (plain first, TLS if the server refuses it),
//!   prefer (the default: TLS when the server agrees), require, verify-ca,
//!   verify-full — libpq's meanings, including that a root certificate file,
//!   when there is one, is checked in every mode that uses TLS.
//! - `sslrootcert`, `sslcert`, `sslkey`, `sslcrl`, `sslsni`; `PGSSLMODE`,
//!   `PGSSLROOTCERT`, `PGSSLCERT`, `PGSSLKEY`, `PGSSLCRL`; the defaults in
//!   `~/.postgresql/` (root.crt, postgresql.crt, postgresql.key, root.crl).
//! - Negotiation as libpq's: an SSLRequest before the startup message, the
//!   server's one-byte answer, then the handshake on the same socket. Unix
//!   sockets never use TLS (libpq does not either).
//!
//! The control connection and the thread driver negotiate and hand the
//! stream on; the io_uring client takes the session over after the
//! handshake and encrypts and decrypts in its own buffers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::ClientConfig;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::env::Env;
use crate::error::TargetError;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Never TLS.
    Disable,
    /// Plain first; TLS when the server refuses a plain connection.
    Allow,
    /// TLS when the server agrees, else plain (libpq's default).
    Prefer,
    /// TLS or nothing; the certificate is checked only against a root file that exists.
    Require,
    /// TLS, the certificate chain checked against the root file.
    VerifyCa,
    /// TLS, the chain and the host name checked.
    VerifyFull,
}

impl SslMode {
    /// libpq's name.
    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    fn parse(v: &str, from: &str) -> Result<SslMode, String> {
        Ok(match v {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => {
                return Err(format!(
                    "{from}={v}: invalid sslmode value (disable, allow, prefer, require, verify-ca, verify-full)"
                ));
            }
        })
    }

    /// Whether a plain connection is never acceptable.
    pub fn requires_tls(self) -> bool {
        matches!(
            self,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
        )
    }
}

/// The connection-string keys this module owns.
pub const SSL_KEYS: [&str; 13] = [
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "sslnegotiation",
    "sslpassword",
    "sslcompression",
    "sslcertmode",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
];

/// A TLS protocol version as libpq names it (`ssl_min_protocol_version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    /// TLSv1 (1.0).
    V1_0,
    /// TLSv1.1.
    V1_1,
    /// TLSv1.2 (libpq's default minimum).
    V1_2,
    /// TLSv1.3.
    V1_3,
}

impl TlsVersion {
    fn parse(v: &str) -> Option<TlsVersion> {
        Some(match v {
            "TLSv1" => TlsVersion::V1_0,
            "TLSv1.1" => TlsVersion::V1_1,
            "TLSv1.2" => TlsVersion::V1_2,
            "TLSv1.3" => TlsVersion::V1_3,
            _ => return None,
        })
    }
}

/// A key's password (`sslpassword`): never formatted.
#[derive(Clone, Default)]
pub struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(secret)")
    }
}

/// Where a file setting came from, for messages: a connection-string key,
/// a libpq environment variable, or libpq's default under `~/.postgresql/`.
#[derive(Debug, Clone, Default)]
struct Origin {
    /// The key (`sslrootcert`) or variable (`PGSSLROOTCERT`); None: the default file.
    name: Option<String>,
    /// The connection-string key it stands for.
    key: &'static str,
}

impl Origin {
    /// `what` about `path`, naming where it came from.
    fn error(&self, path: &Path, what: &str) -> TargetError {
        match &self.name {
            Some(n) => TargetError {
                variable: n.starts_with("PG").then(|| n.clone()),
                message: format!("{n}={}: {what}", path.display()),
            },
            None => TargetError {
                variable: None,
                message: format!("{} (libpq's default {}): {what}", path.display(), self.key),
            },
        }
    }
}

/// Where each file setting came from.
#[derive(Debug, Clone, Default)]
struct Origins {
    rootcert: Origin,
    cert: Origin,
    key: Origin,
}

/// What TLS a connection uses, resolved from the connection string, the
/// environment and `~/.postgresql/` by libpq's rules: a file is used when it
/// exists and ignored when it does not, except the root file under
/// verify-ca and verify-full and the key of a certificate that exists.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// The mode.
    pub mode: SslMode,
    /// The root certificate file in use (given, or the default that exists).
    pub rootcert: Option<PathBuf>,
    /// The client certificate and its key, when there is a certificate.
    pub client: Option<(PathBuf, PathBuf)>,
    /// The certificate revocation list file (`sslcrl`, or the default that exists).
    pub crl: Option<PathBuf>,
    /// The certificate revocation list directory (`sslcrldir`).
    pub crldir: Option<PathBuf>,
    /// Send the host name in the handshake (SNI).
    pub sni: bool,
    /// The lowest protocol version offered (libpq's default: TLSv1.2).
    pub min_version: TlsVersion,
    /// The highest protocol version offered; None: the newest.
    pub max_version: Option<TlsVersion>,
    /// `sslnegotiation=direct` (17): the handshake at once, without an SSLRequest.
    pub direct: bool,
    password: Option<Secret>,
    origins: Origins,
    config: Arc<std::sync::OnceLock<Result<Arc<ClientConfig>, String>>>,
}

impl TlsSettings {
    /// No TLS at all.
    pub fn disabled() -> TlsSettings {
        TlsSettings {
            mode: SslMode::Disable,
            rootcert: None,
            client: None,
            crl: None,
            crldir: None,
            sni: true,
            min_version: TlsVersion::V1_2,
            max_version: None,
            direct: false,
            password: None,
            origins: Origins::default(),
            config: Default::default(),
        }
    }

    /// Resolves the settings from the connection string's ssl* keys, then the
    /// environment, then libpq's defaults. A bad value is an error naming the
    /// key or variable. `tcp`: whether a host of the connection is reached
    /// over TCP; without one libpq uses no TLS and reads none of its files
    /// (the values are still checked, as libpq checks `sslmode`'s), and
    /// neither does csdchar.
    ///
    /// Files follow libpq: a root file that does not exist is no
    /// verification (an error for verify-ca and verify-full only); a client
    /// certificate that does not exist is no client certificate; a CRL that
    /// does not load is no revocation check. For the modes that require TLS
    /// the files in use are read now, so a bad one is refused before anything
    /// connects; for prefer and allow they are read when TLS is tried, and a
    /// failure there falls back to a plain connection as libpq's does.
    pub fn resolve(
        params: &[(String, String)],
        env: &dyn Env,
        tcp: bool,
    ) -> Result<TlsSettings, TargetError> {
        let get = |k: &str, var: &str| crate::options::key_or_var(params, env, k, var);
        let bad = TargetError::about;
        let mode = match get("sslmode", "PGSSLMODE") {
            Some((v, from)) => SslMode::parse(&v, &from).map_err(|m| bad(&from, m))?,
            // The deprecated requiressl (and PGREQUIRESSL): 1 is require.
            None => match get("requiressl", "PGREQUIRESSL") {
                Some((v, _)) if v.starts_with('1') => SslMode::Require,
                _ => SslMode::Prefer,
            },
        };
        // libpq 17: direct TLS (no SSLRequest, ALPN "postgresql"), for the
        // modes that require TLS only.
        let direct = match get("sslnegotiation", "PGSSLNEGOTIATION") {
            Some((v, _)) if v == "postgres" => false,
            Some((v, from)) if v == "direct" => {
                if !mode.requires_tls() {
                    return Err(bad(
                        &from,
                        format!(
                            "weak sslmode \"{}\" may not be used with sslnegotiation=direct (use \"require\", \"verify-ca\", or \"verify-full\")",
                            mode.name()
                        ),
                    ));
                }
                true
            }
            Some((v, from)) => {
                return Err(bad(
                    &from,
                    format!("invalid sslnegotiation value: \"{v}\" ({from}: postgres, direct)"),
                ));
            }
            None => false,
        };
        let sni = match get("sslsni", "PGSSLSNI") {
            Some((v, _)) if v == "0" => false,
            Some((v, _)) if v == "1" => true,
            Some((v, from)) => return Err(bad(&from, format!("{from}={v}: 0 or 1"))),
            None => true,
        };
        if let Some((v, from)) = get("sslcompression", "PGSSLCOMPRESSION")
            && v != "0"
            && v != "1"
        {
            return Err(bad(&from, format!("{from}={v}: 0 or 1")));
        }
        let certmode = match get("sslcertmode", "PGSSLCERTMODE") {
            Some((v, from)) if !matches!(v.as_str(), "disable" | "allow" | "require") => {
                return Err(bad(
                    &from,
                    format!("invalid sslcertmode value: \"{v}\" ({from}: disable, allow, require)"),
                ));
            }
            Some((v, _)) => v,
            None => "allow".into(),
        };
        let version = |k: &str, var: &str| -> Result<Option<TlsVersion>, TargetError> {
            match get(k, var) {
                Some((v, _)) if v.is_empty() => Ok(None),
                Some((v, from)) => TlsVersion::parse(&v).map(Some).ok_or_else(|| {
                    bad(
                        &from,
                        format!(
                            "invalid {k} value: \"{v}\" ({from}: TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)"
                        ),
                    )
                }),
                None => Ok(None),
            }
        };
        let min_version = version("ssl_min_protocol_version", "PGSSLMINPROTOCOLVERSION")?
            .unwrap_or(TlsVersion::V1_2);
        let max_version = version("ssl_max_protocol_version", "PGSSLMAXPROTOCOLVERSION")?;
        if max_version.is_some_and(|m| m < min_version) {
            return Err(bad(
                "ssl_max_protocol_version",
                "invalid SSL protocol version range (ssl_min_protocol_version is above ssl_max_protocol_version; the minimum defaults to TLSv1.2)".into(),
            ));
        }
        let password = get("sslpassword", "").map(|(v, _)| Secret(v));
        // libpq reads no file for a connection without TLS.
        if !tcp || mode == SslMode::Disable {
            return Ok(TlsSettings {
                mode,
                sni,
                min_version,
                max_version,
                direct,
                password,
                ..TlsSettings::disabled()
            });
        }
        let home = env.get("HOME").map(PathBuf::from);
        let default = |name: &str| home.as_ref().map(|h| h.join(".postgresql").join(name));
        let file = |key: &'static str, var: &str, name: &str| -> (Option<PathBuf>, Origin) {
            match get(key, var) {
                Some((v, from)) if !v.is_empty() => (
                    Some(PathBuf::from(v)),
                    Origin {
                        name: Some(from),
                        key,
                    },
                ),
                _ => (default(name), Origin { name: None, key }),
            }
        };
        let mut origins = Origins::default();
        let (rootcert, origin) = file("sslrootcert", "PGSSLROOTCERT", "root.crt");
        origins.rootcert = origin;
        // libpq 16: `system` is OpenSSL's default trust store, for verify-full only.
        let system = rootcert.as_deref() == Some(Path::new("system"));
        if system && mode != SslMode::VerifyFull {
            return Err(bad(
                origins.rootcert.name.as_deref().unwrap_or("sslrootcert"),
                format!(
                    "weak sslmode \"{}\" may not be used with sslrootcert=system (use \"verify-full\")",
                    mode.name()
                ),
            ));
        }
        let rootcert_exists = system || rootcert.as_deref().is_some_and(Path::exists);
        if matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) && !rootcert_exists {
            let shown = rootcert
                .as_deref()
                .map_or("~/.postgresql/root.crt".into(), |p| p.display().to_string());
            let message = format!(
                "root certificate file \"{shown}\" does not exist (sslmode={} verifies the server's certificate: give its CA with sslrootcert=FILE, or use sslmode=require)",
                mode.name()
            );
            // Named by whichever of the two the user can change.
            return Err(
                match (&origins.rootcert.name, get("sslmode", "PGSSLMODE")) {
                    (Some(n), _) if n.starts_with("PG") => bad(n, message),
                    (_, Some((_, from))) => bad(&from, message),
                    _ => bad("sslmode", message),
                },
            );
        }
        let (cert, cert_origin) = file("sslcert", "PGSSLCERT", "postgresql.crt");
        let (key, key_origin) = file("sslkey", "PGSSLKEY", "postgresql.key");
        origins.cert = cert_origin;
        origins.key = key_origin;
        let client = match (cert, key) {
            _ if certmode == "disable" => None,
            (Some(c), Some(k)) if c.exists() => Some((c, k)),
            (Some(c), None) if c.exists() => Some((c.clone(), c)),
            _ => None,
        };
        // The CRL file and directory: libpq's default file only when neither is given.
        let crldir = get("sslcrldir", "PGSSLCRLDIR")
            .filter(|(v, _)| !v.is_empty())
            .map(|(v, _)| PathBuf::from(v));
        let crl = match get("sslcrl", "PGSSLCRL").filter(|(v, _)| !v.is_empty()) {
            Some((v, _)) => Some(PathBuf::from(v)),
            None if crldir.is_none() => default("root.crl"),
            None => None,
        };
        let settings = TlsSettings {
            mode,
            rootcert: rootcert.filter(|_| rootcert_exists),
            client,
            crl,
            crldir,
            sni,
            min_version,
            max_version,
            direct,
            password,
            origins,
            config: Default::default(),
        };
        // TLS or nothing: a file in use that cannot be read is refused now.
        if mode.requires_tls() {
            let config = settings.build()?;
            let _ = settings.config.set(Ok(config));
        }
        Ok(settings)
    }

    /// The rustls configuration for these settings (built once): an error
    /// in libpq's words when a file in use cannot be read.
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, String> {
        self.config
            .get_or_init(|| self.build().map_err(|e| e.message))
            .clone()
    }

    fn build(&self) -> Result<Arc<ClientConfig>, TargetError> {
        let o = &self.origins;
        let tls_error = |e: rustls::Error| TargetError {
            variable: None,
            message: format!("TLS: {e}"),
        };
        let versions: Vec<&'static rustls::SupportedProtocolVersion> = [
            (TlsVersion::V1_2, &rustls::version::TLS12),
            (TlsVersion::V1_3, &rustls::version::TLS13),
        ]
        .into_iter()
        .filter(|(v, _)| *v >= self.min_version && self.max_version.is_none_or(|m| *v <= m))
        .map(|(_, r)| r)
        .collect();
        if versions.is_empty() {
            return Err(TargetError::conninfo(
                "SSL error: no protocols available (csdchar's TLS speaks TLSv1.2 and TLSv1.3; ssl_max_protocol_version is below TLSv1.2)".into(),
            ));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(tls_error)?;
        let roots = match &self.rootcert {
            None => None,
            Some(root) => Some(
                crate::verify::Roots::load(root, self.crl.as_deref(), self.crldir.as_deref())
                    .map_err(|e| {
                        o.rootcert.error(
                            root,
                            &format!(
                                "could not read root certificate file \"{}\": {}",
                                root.display(),
                                e.0
                            ),
                        )
                    })?,
            ),
        };
        let verifier: Arc<dyn ServerCertVerifier> = Arc::new(crate::verify::LibpqVerifier::new(
            roots,
            self.mode == SslMode::VerifyFull,
        ));
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let mut config = match &self.client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let (chain, key_der) = self.client_identity(cert, key)?;
                // Not with_client_auth_cert: it parses the certificate with
                // webpki, which refuses the version-1 certificates OpenSSL's
                // recipes make (and libpq sends).
                let signing = provider
                    .key_provider
                    .load_private_key(key_der)
                    .map_err(|e| {
                        o.key.error(
                            key,
                            &format!("could not load private key file \"{}\": {e}", key.display()),
                        )
                    })?;
                let identity = rustls::sign::CertifiedKey::new(chain, signing);
                builder.with_client_cert_resolver(Arc::new(ClientIdentity(Arc::new(identity))))
            }
        };
        config.enable_sni = self.sni;
        if self.direct {
            config.alpn_protocols = vec![b"postgresql".to_vec()];
        }
        Ok(Arc::new(config))
    }

    /// The client certificate chain and key as libpq reads them: the
    /// certificate as PEM; the key checked for its permissions, then read as
    /// PEM (decrypted with sslpassword), else as unencrypted DER.
    fn client_identity(
        &self,
        cert: &Path,
        key: &Path,
    ) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TargetError> {
        let o = &self.origins;
        let unreadable = |why: &dyn std::fmt::Display| {
            o.cert.error(
                cert,
                &format!(
                    "could not read certificate file \"{}\": {why}",
                    cert.display()
                ),
            )
        };
        if std::fs::metadata(cert).is_ok_and(|m| m.is_dir()) {
            return Err(unreadable(&"is a directory"));
        }
        let pem = std::fs::read(cert).map_err(|e| unreadable(&e))?;
        let certs = openssl::x509::X509::stack_from_pem(&pem).unwrap_or_default();
        if certs.is_empty() {
            return Err(unreadable(
                &"holds no certificate (PEM \"BEGIN CERTIFICATE\")",
            ));
        }
        let mut chain = Vec::new();
        for c in certs {
            chain.push(CertificateDer::from(
                c.to_der().map_err(|e| unreadable(&e))?,
            ));
        }
        check_key_file(key).map_err(|why| o.key.error(key, &why))?;
        let cannot = |why: &dyn std::fmt::Display| {
            o.key.error(
                key,
                &format!(
                    "could not load private key file \"{}\": {why}",
                    key.display()
                ),
            )
        };
        let bytes = std::fs::read(key).map_err(|e| cannot(&e))?;
        let password = self.password.as_ref().map(|p| p.0.as_bytes().to_vec());
        let pem = openssl::pkey::PKey::private_key_from_pem_callback(&bytes, |buf| {
            // No terminal to ask on: without sslpassword an encrypted key is unreadable.
            let pw = password.as_deref().unwrap_or_default();
            let n = pw.len().min(buf.len());
            buf[..n].copy_from_slice(&pw[..n]);
            Ok(n)
        });
        let pkey = match pem {
            Ok(k) => k,
            Err(pem_err) => match openssl::pkey::PKey::private_key_from_der(&bytes) {
                Ok(k) => k,
                Err(_) if self.password.is_none() && is_encrypted(&bytes) => {
                    return Err(cannot(&"the key is encrypted and no sslpassword was given"));
                }
                Err(_) if self.password.is_some() && is_encrypted(&bytes) => {
                    return Err(cannot(&"bad decrypt (a wrong sslpassword?)"));
                }
                Err(_) => return Err(cannot(&format!("no private key in it ({pem_err})"))),
            },
        };
        let der = pkey.private_key_to_pkcs8().map_err(|e| cannot(&e))?;
        Ok((chain, PrivateKeyDer::Pkcs8(der.into())))
    }
}

/// The one client certificate, offered whenever the server asks for one.
#[derive(Debug)]
struct ClientIdentity(Arc<rustls::sign::CertifiedKey>);

impl rustls::client::ResolvesClientCert for ClientIdentity {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// Whether a key file is an encrypted PEM key (PKCS#8 or traditional).
fn is_encrypted(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.contains("ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED")
}

/// libpq's rule for the client key's file: it must exist, and no one but its
/// owner may read it (0600), or the group too when root owns it (0640).
fn check_key_file(key: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(key).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "certificate present, but not private key file \"{}\"",
            key.display()
        ),
        _ => e.to_string(),
    })?;
    if !m.is_file() {
        return Err(format!(
            "private key file \"{}\" is not a regular file",
            key.display()
        ));
    }
    let limit = if m.uid() == 0 { 0o037 } else { 0o077 };
    if m.mode() & limit != 0 {
        return Err(format!(
            "private key file \"{}\" has group or world access; file must have permissions u=rw (0600) or less if owned by the current user, or permissions u=rw,g=r (0640) or less if owned by root",
            key.display()
        ));
    }
    Ok(())
}

/// The name the certificate is checked against and sent as SNI.
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.to_string()).map_err(|e| format!("host {host}: {e}"))
}

/// A TLS failure in libpq's words (OpenSSL's, which libpq passes on),
/// with the reason libpq 15 leaves out: why the certificate failed
/// verification, which names did not match the host.
pub fn describe(e: &rustls::Error, _host: &str, _s: &TlsSettings) -> String {
    tls_words(e)
}

/// An I/O error in words: a TLS failure inside it (an alert the server sent
/// after the handshake, such as its refusal of the client certificate) as
/// [`describe`] says it.
pub fn io_words(e: &std::io::Error) -> String {
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(r) => tls_words(r),
        None if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            "SSL error: unexpected eof while reading (the server closed the connection during the TLS handshake)"
                .into()
        }
        None => e.to_string(),
    }
}

fn tls_words(e: &rustls::Error) -> String {
    if let Some(c) = crate::verify::cert_error(e) {
        return c.to_string();
    }
    match e {
        rustls::Error::AlertReceived(a) => {
            use rustls::AlertDescription as A;
            match a {
                A::UnknownCA => "SSL error: tlsv1 alert unknown ca (the server does not know the CA of the client certificate)".into(),
                A::BadCertificate => "SSL error: sslv3 alert bad certificate (the server refused the client certificate)".into(),
                A::CertificateRequired => "SSL error: tlsv13 alert certificate required (the server wants a client certificate: sslcert and sslkey)".into(),
                A::ProtocolVersion => "SSL error: tlsv1 alert protocol version (no protocol version both sides allow)".into(),
                other => format!("SSL error: the server ended the handshake: {}", words(&format!("{other:?}"))),
            }
        }
        other => format!("SSL error: {other}"),
    }
}

/// `CamelCase` as `camel case`.
fn words(camel: &str) -> String {
    let mut out = String::new();
    for (i, ch) in camel.chars().enumerate() {
        if ch.is_ascii_uppercase() && i > 0 {
            out.push(' ');
        }
        out.push(ch.to_ascii_lowercase());
    }
    out
}

/// The negotiated protocol and cipher, for results.
pub fn session(c: &rustls::ClientConnection) -> (String, String) {
    let protocol = c
        .protocol_version()
        .map_or("-".into(), |v| format!("{v:?}").replace('_', "."));
    let cipher = c
        .negotiated_cipher_suite()
        .map_or("-".into(), |s| format!("{:?}", s.suite()));
    (protocol, cipher)
}

/// libpq's SSLRequest: length 8, code 1234.5679.
pub const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

/// What the server answered an SSLRequest.
pub fn answer(byte: u8) -> Result<bool, String> {
    match byte {
        b'S' => Ok(true),
        b'N' => Ok(false),
        // An old or odd server answers with an error message.
        b'E' => Err("the server answered the SSLRequest with an error (a server older than PostgreSQL 7.0?)".into()),
        b => Err(format!("unexpected answer to the SSLRequest: 0x{b:02x}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Map(Vec<(&'static str, String)>);
    impl Env for Map {
        fn get(&self, key: &str) -> Option<String> {
            self.0
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.clone())
        }
    }

    fn p(kv: &[(&str, &str)]) -> Vec<(String, String)> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A CA certificate, and a client certificate with its key that it signs.
    fn pems() -> (String, String, String) {
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let client = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = client.signed_by(&key, &ca_cert, &ca_key).unwrap();
        (ca_cert.pem(), cert.pem(), key.serialize_pem())
    }

    fn resolve(params: &[(String, String)], env: &dyn Env) -> Result<TlsSettings, String> {
        TlsSettings::resolve(params, env, true).map_err(|e| e.message)
    }

    fn write(dir: &Path, name: &str, text: &[u8], mode: u32) -> String {
        use std::os::unix::fs::PermissionsExt;
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
        f.display().to_string()
    }

    #[test]
    fn modes_env_and_defaults_follow_libpq() {
        let (ca, cert, key) = pems();
        let home = tempfile::tempdir().unwrap();
        let env = Map(vec![("HOME", home.path().display().to_string())]);
        let s = resolve(&[], &env).unwrap();
        assert_eq!(s.mode, SslMode::Prefer);
        assert!(s.rootcert.is_none() && s.client.is_none());
        let env2 = Map(vec![
            ("HOME", home.path().display().to_string()),
            ("PGSSLMODE", "require".into()),
        ]);
        assert_eq!(resolve(&[], &env2).unwrap().mode, SslMode::Require);
        // The connection string wins over the environment.
        let s = resolve(&p(&[("sslmode", "disable")]), &env2).unwrap();
        assert_eq!(s.mode, SslMode::Disable);
        // requiressl=1 is require (deprecated, still read).
        let s = resolve(&p(&[("requiressl", "1")]), &env).unwrap();
        assert_eq!(s.mode, SslMode::Require);
        let e = resolve(&p(&[("sslmode", "sometimes")]), &env).unwrap_err();
        assert!(
            e.contains("sslmode=sometimes") && e.contains("verify-full"),
            "{e}"
        );
        let e = TlsSettings::resolve(&[], &Map(vec![("PGSSLMODE", "x".into())]), true).unwrap_err();
        assert!(e.message.starts_with("PGSSLMODE=x"), "{e}");
        assert_eq!(e.variable.as_deref(), Some("PGSSLMODE"));
        // verify-* need a root file; the default one counts when it exists.
        let e = resolve(&p(&[("sslmode", "verify-full")]), &env).unwrap_err();
        assert!(
            e.contains("root certificate file")
                && e.contains("root.crt")
                && e.contains("does not exist"),
            "{e}"
        );
        let d = home.path().join(".postgresql");
        std::fs::create_dir(&d).unwrap();
        write(&d, "root.crt", ca.as_bytes(), 0o644);
        let s = resolve(&p(&[("sslmode", "verify-full")]), &env).unwrap();
        assert!(s.rootcert.is_some());
        // A client key others may read: refused where TLS is required; for
        // prefer, when TLS is tried (libpq then falls back to a plain connection).
        write(&d, "postgresql.crt", cert.as_bytes(), 0o644);
        write(&d, "postgresql.key", key.as_bytes(), 0o644);
        let e = resolve(&p(&[("sslmode", "require")]), &env).unwrap_err();
        assert!(
            e.contains("has group or world access") && e.contains("libpq's default sslkey"),
            "{e}"
        );
        let s = resolve(&[], &env).unwrap();
        let e = s.client_config().unwrap_err();
        assert!(e.contains("has group or world access"), "{e}");
        write(&d, "postgresql.key", key.as_bytes(), 0o600);
        let s = resolve(&p(&[("sslmode", "require")]), &env).unwrap();
        assert!(s.client.is_some());
        // sslcertmode=disable sends none.
        let s = resolve(&p(&[("sslcertmode", "disable")]), &env).unwrap();
        assert!(s.client.is_none());
        let e = resolve(&p(&[("sslnegotiation", "direct")]), &env).unwrap_err();
        assert!(e.contains("weak sslmode \"prefer\""), "{e}");
        let s = resolve(
            &p(&[("sslnegotiation", "direct"), ("sslmode", "require")]),
            &env,
        );
        assert!(s.unwrap().direct);
        let e = resolve(&p(&[("sslnegotiation", "x")]), &env).unwrap_err();
        assert!(e.contains("invalid sslnegotiation value"), "{e}");
    }

    /// libpq's file rules: a named file the connection does not need is
    /// ignored; one it needs and cannot read is refused in libpq's words.
    #[test]
    fn files_are_used_ignored_or_refused_as_libpq_does() {
        let (ca, cert, key) = pems();
        let d = tempfile::tempdir().unwrap();
        let env = Map(vec![("HOME", d.path().display().to_string())]);
        let root = write(d.path(), "root.crt", ca.as_bytes(), 0o644);
        let garbage = write(d.path(), "garbage", b"not a certificate\n", 0o600);
        let cert_file = write(d.path(), "client.crt", cert.as_bytes(), 0o644);
        let key_file = write(d.path(), "client.key", key.as_bytes(), 0o600);
        let missing = d.path().join("missing").display().to_string();
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let sub = sub.display().to_string();
        let with = |mode: &str, extra: &[(&str, &str)]| {
            let mut kv = vec![("sslmode", mode)];
            kv.extend_from_slice(extra);
            resolve(&p(&kv), &env)
        };
        // Ignored: not there, or not needed.
        for extra in [
            vec![("sslrootcert", missing.as_str())],
            vec![("sslcert", missing.as_str())],
            vec![("sslcrl", missing.as_str()), ("sslrootcert", root.as_str())],
            vec![("sslcrl", garbage.as_str()), ("sslrootcert", root.as_str())],
            vec![("sslcrl", sub.as_str()), ("sslrootcert", root.as_str())],
            vec![
                ("sslcrldir", missing.as_str()),
                ("sslrootcert", root.as_str()),
            ],
            vec![("sslcrl", garbage.as_str())],
            vec![("sslkey", missing.as_str())],
        ] {
            let s = with("require", &extra);
            assert!(s.is_ok(), "{extra:?}: {}", s.unwrap_err());
        }
        // Refused: needed and unreadable.
        for (extra, says) in [
            (
                vec![("sslrootcert", garbage.as_str())],
                "could not read root certificate file",
            ),
            (
                vec![("sslrootcert", sub.as_str())],
                "could not read root certificate file",
            ),
            (
                vec![("sslcert", garbage.as_str()), ("sslkey", key_file.as_str())],
                "could not read certificate file",
            ),
            (
                vec![
                    ("sslcert", cert_file.as_str()),
                    ("sslkey", garbage.as_str()),
                ],
                "could not load private key file",
            ),
            (
                vec![
                    ("sslcert", cert_file.as_str()),
                    ("sslkey", missing.as_str()),
                ],
                "certificate present, but not private key file",
            ),
        ] {
            let e = with(
                "verify-ca",
                &[&extra[..], &[("sslrootcert", root.as_str())][..]].concat(),
            );
            // The first sslrootcert given wins only when it is the only one.
            let e = match extra[0].0 {
                "sslrootcert" => with("require", &extra),
                _ => e,
            };
            let e = e.unwrap_err();
            assert!(e.contains(says), "{extra:?}: {e}");
        }
        // From the environment: the variable is named.
        let env_cert = Map(vec![
            ("HOME", d.path().display().to_string()),
            ("PGSSLCERT", garbage.clone()),
            ("PGSSLKEY", key_file.clone()),
        ]);
        let e = TlsSettings::resolve(&p(&[("sslmode", "require")]), &env_cert, true).unwrap_err();
        assert_eq!(e.variable.as_deref(), Some("PGSSLCERT"), "{e}");
        assert!(e.message.starts_with("PGSSLCERT="), "{e}");
    }

    /// Client keys as libpq reads them: PEM, else DER; encrypted PEM with
    /// sslpassword; never a password in a message.
    #[test]
    fn der_and_encrypted_keys_are_read_as_libpq_reads_them() {
        let (_, cert, key) = pems();
        let d = tempfile::tempdir().unwrap();
        let env = Map(vec![("HOME", d.path().display().to_string())]);
        let pkey = openssl::pkey::PKey::private_key_from_pem(key.as_bytes()).unwrap();
        let cert_file = write(d.path(), "client.crt", cert.as_bytes(), 0o644);
        let der = write(
            d.path(),
            "der.key",
            &pkey.private_key_to_der().unwrap(),
            0o600,
        );
        let enc = pkey
            .private_key_to_pem_pkcs8_passphrase(openssl::symm::Cipher::aes_256_cbc(), b"s3cret")
            .unwrap();
        let enc = write(d.path(), "enc.key", &enc, 0o600);
        let with = |key: &str, pw: Option<&str>| {
            let mut kv = vec![
                ("sslmode", "require"),
                ("sslcert", cert_file.as_str()),
                ("sslkey", key),
            ];
            if let Some(pw) = pw {
                kv.push(("sslpassword", pw));
            }
            resolve(&p(&kv), &env)
        };
        assert!(with(&der, None).is_ok());
        assert!(with(&enc, Some("s3cret")).is_ok());
        let e = with(&enc, None).unwrap_err();
        assert!(
            e.contains("could not load private key file") && e.contains("no sslpassword"),
            "{e}"
        );
        let e = with(&enc, Some("xyzzy-pw")).unwrap_err();
        assert!(
            e.contains("could not load private key file") && !e.contains("xyzzy-pw"),
            "{e}"
        );
        let s = with(&enc, Some("s3cret")).unwrap();
        assert!(!format!("{s:?}").contains("s3cret"));
    }

    #[test]
    fn protocol_bounds_follow_libpq() {
        let d = tempfile::tempdir().unwrap();
        let env = Map(vec![("HOME", d.path().display().to_string())]);
        let s = resolve(&p(&[("ssl_min_protocol_version", "TLSv1.3")]), &env).unwrap();
        assert_eq!(s.min_version, TlsVersion::V1_3);
        assert!(s.client_config().is_ok());
        let e = resolve(&p(&[("ssl_min_protocol_version", "TLSv1.4")]), &env).unwrap_err();
        assert!(e.contains("invalid ssl_min_protocol_version value"), "{e}");
        // The minimum defaults to TLSv1.2.
        let e = resolve(&p(&[("ssl_max_protocol_version", "TLSv1.1")]), &env).unwrap_err();
        assert!(e.contains("invalid SSL protocol version range"), "{e}");
        let s = resolve(
            &p(&[
                ("ssl_min_protocol_version", "TLSv1"),
                ("ssl_max_protocol_version", "TLSv1.1"),
            ]),
            &env,
        )
        .unwrap();
        assert!(
            s.client_config()
                .unwrap_err()
                .contains("no protocols available")
        );
        let env = Map(vec![
            ("HOME", d.path().display().to_string()),
            ("PGSSLMAXPROTOCOLVERSION", "TLSv1.2".into()),
        ]);
        assert_eq!(
            resolve(&[], &env).unwrap().max_version,
            Some(TlsVersion::V1_2)
        );
    }

    /// Issue 38 row 14: libpq uses no TLS on a Unix socket and reads none of
    /// its files there; a bad value is still refused.
    #[test]
    fn a_unix_socket_ignores_sslmode_as_libpq_does() {
        let d = tempfile::tempdir().unwrap();
        let env = Map(vec![
            ("HOME", d.path().display().to_string()),
            ("PGSSLMODE", "verify-full".into()),
            ("PGSSLROOTCERT", "/nonexistent/root.crt".into()),
        ]);
        assert!(TlsSettings::resolve(&[], &env, false).is_ok());
        assert!(TlsSettings::resolve(&[], &env, true).is_err());
        let bogus = Map(vec![("PGSSLMODE", "bogus".into())]);
        let e = TlsSettings::resolve(&[], &bogus, false).unwrap_err();
        assert_eq!(e.variable.as_deref(), Some("PGSSLMODE"));
    }

    #[test]
    fn the_ssl_request_and_its_answers() {
        assert_eq!(
            u32::from_be_bytes(SSL_REQUEST[4..].try_into().unwrap()),
            80877103
        );
        assert_eq!(answer(b'S'), Ok(true));
        assert_eq!(answer(b'N'), Ok(false));
        assert!(answer(b'E').is_err());
    }
}
