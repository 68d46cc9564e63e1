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

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::{PemObject, SectionKind};
use rustls::pki_types::{
    CertificateDer, CertificateRevocationListDer, PrivateKeyDer, ServerName, UnixTime,
};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

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
                    "{from}={v}: not an sslmode (disable, allow, prefer, require, verify-ca, verify-full)"
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
pub const SSL_KEYS: [&str; 8] = [
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "sslcrl",
    "sslsni",
    "sslnegotiation",
    "sslpassword",
];

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
    crl: Origin,
}

/// What TLS a connection uses, resolved from the connection string, the
/// environment and `~/.postgresql/`.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// The mode.
    pub mode: SslMode,
    /// The root certificate file in use (given, or the default that exists).
    pub rootcert: Option<PathBuf>,
    /// The client certificate and its key, when there is a certificate.
    pub client: Option<(PathBuf, PathBuf)>,
    /// A certificate revocation list.
    pub crl: Option<PathBuf>,
    /// Send the host name in the handshake (SNI).
    pub sni: bool,
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
            sni: true,
            origins: Origins::default(),
            config: Default::default(),
        }
    }

    /// Resolves the settings from the connection string's ssl* keys, then the
    /// environment, then libpq's defaults. A bad value is an error naming the
    /// key or variable. `tcp`: whether a host of the connection is reached
    /// over TCP; without one libpq uses no TLS and reads none of its files
    /// (the values are still checked, as libpq checks `sslmode`'s), and
    /// neither does csdchar. With one, every file in use is read and checked
    /// now: a root certificate file, client certificate or key, or CRL that
    /// holds nothing usable (a directory, another kind of PEM, garbage) is
    /// refused with the cause, before anything connects — where libpq
    /// skips a CRL it cannot load without a word and checks no revocation.
    pub fn resolve(
        params: &[(String, String)],
        env: &dyn Env,
        tcp: bool,
    ) -> Result<TlsSettings, TargetError> {
        let get = |k: &str, var: &str| -> Option<(String, String)> {
            params
                .iter()
                .rev()
                .find(|(n, _)| n == k)
                .map(|(_, v)| (v.clone(), k.to_string()))
                .or_else(|| env.get(var).map(|v| (v, var.to_string())))
        };
        // A message about the value of `from` (a key, or a PG* variable).
        let bad = |from: &str, message: String| TargetError {
            variable: from.starts_with("PG").then(|| from.to_string()),
            message,
        };
        let mode = match get("sslmode", "PGSSLMODE") {
            Some((v, from)) => SslMode::parse(&v, &from).map_err(|m| bad(&from, m))?,
            None => SslMode::Prefer,
        };
        if let Some((v, from)) = get("sslnegotiation", "PGSSLNEGOTIATION")
            && v != "postgres"
        {
            return Err(bad(
                &from,
                format!(
                    "{from}={v}: csdchar negotiates TLS the PostgreSQL way (sslnegotiation=postgres)"
                ),
            ));
        }
        if get("sslpassword", "").is_some() {
            return Err(bad(
                "sslpassword",
                "sslpassword: encrypted client keys are not supported; give an unencrypted sslkey (0600)"
                    .into(),
            ));
        }
        let sni = match get("sslsni", "PGSSLSNI") {
            Some((v, _)) if v == "0" => false,
            Some((v, _)) if v == "1" => true,
            Some((v, from)) => return Err(bad(&from, format!("{from}={v}: 0 or 1"))),
            None => true,
        };
        // libpq reads no file for a connection without TLS.
        if !tcp || mode == SslMode::Disable {
            return Ok(TlsSettings {
                mode,
                sni,
                ..TlsSettings::disabled()
            });
        }
        let home = env.get("HOME").map(PathBuf::from);
        let default = |name: &str| home.as_ref().map(|h| h.join(".postgresql").join(name));
        let file = |key: &'static str, var: &str, name: &str| -> (Option<PathBuf>, Origin) {
            match get(key, var) {
                Some((v, from)) => (
                    Some(PathBuf::from(v)),
                    Origin {
                        name: Some(from),
                        key,
                    },
                ),
                None => (default(name), Origin { name: None, key }),
            }
        };
        let mut origins = Origins::default();
        let (rootcert, origin) = file("sslrootcert", "PGSSLROOTCERT", "root.crt");
        let named = origin.name.is_some();
        origins.rootcert = origin;
        let rootcert_exists = rootcert.as_deref().is_some_and(Path::exists);
        if matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) && !rootcert_exists {
            let shown = rootcert
                .as_deref()
                .map_or("~/.postgresql/root.crt".into(), |p| p.display().to_string());
            let message = format!(
                "sslmode={}: root certificate file \"{shown}\" does not exist; give the server's CA with sslrootcert=FILE, or use sslmode=require",
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
        if let Some(r) = rootcert.as_deref().filter(|_| named && !rootcert_exists) {
            return Err(origins.rootcert.error(r, "no such file"));
        }
        let (cert, cert_origin) = file("sslcert", "PGSSLCERT", "postgresql.crt");
        let (key, key_origin) = file("sslkey", "PGSSLKEY", "postgresql.key");
        let cert_named = cert_origin.name.is_some();
        origins.cert = cert_origin;
        origins.key = key_origin;
        let client = match (cert, key) {
            (Some(c), Some(k)) if c.exists() => {
                check_key_file(&k).map_err(|why| origins.key.error(&k, &why))?;
                Some((c, k))
            }
            (Some(c), _) if cert_named => {
                return Err(origins.cert.error(&c, "no such file"));
            }
            _ => None,
        };
        let (crl, crl_origin) = file("sslcrl", "PGSSLCRL", "root.crl");
        let crl_named = crl_origin.name.is_some();
        origins.crl = crl_origin;
        let crl = match crl {
            Some(c) if c.exists() => Some(c),
            Some(c) if crl_named => {
                return Err(origins.crl.error(&c, "no such file"));
            }
            _ => None,
        };
        let settings = TlsSettings {
            mode,
            rootcert: rootcert.filter(|_| rootcert_exists),
            client,
            crl,
            sni,
            origins,
            config: Default::default(),
        };
        // Every file in use read and checked now, once: a bad one is bad
        // input, not a failed connection later (or, for prefer, a silent
        // fallback to a plain one).
        let config = settings.build()?;
        let _ = settings.config.set(Ok(config));
        Ok(settings)
    }

    /// The rustls configuration for these settings (built once).
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
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(tls_error)?;
        // A CRL is checked whether or not a root file uses it: a bad one named is bad input.
        let crls = match &self.crl {
            Some(crl) => {
                let crls: Vec<CertificateRevocationListDer<'static>> =
                    pem_sections(crl, &o.crl, SectionKind::Crl, "certificate revocation list")?
                        .into_iter()
                        .map(CertificateRevocationListDer::from)
                        .collect();
                crls
            }
            None => Vec::new(),
        };
        let verifier: Arc<dyn ServerCertVerifier> = match &self.rootcert {
            None => Arc::new(AnyCertificate(provider)),
            Some(root) => {
                let mut roots = rustls::RootCertStore::empty();
                for c in pem_sections(root, &o.rootcert, SectionKind::Certificate, "certificate")? {
                    roots
                        .add(CertificateDer::from(c))
                        .map_err(|e| o.rootcert.error(root, &format!("{e}")))?;
                }
                let mut b = rustls::client::WebPkiServerVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                );
                if !crls.is_empty() {
                    b = b.with_crls(crls);
                }
                let inner = b.build().map_err(|e| match (e, &self.crl) {
                    (rustls::client::VerifierBuilderError::InvalidCrl(e), Some(crl)) => o
                        .crl
                        .error(crl, &format!("not a certificate revocation list ({e:?})")),
                    (e, _) => o.rootcert.error(root, &e.to_string()),
                })?;
                if self.mode == SslMode::VerifyFull {
                    inner
                } else {
                    Arc::new(ChainOnly(inner))
                }
            }
        };
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let mut config = match &self.client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain: Vec<CertificateDer<'static>> =
                    pem_sections(cert, &o.cert, SectionKind::Certificate, "certificate")?
                        .into_iter()
                        .map(CertificateDer::from)
                        .collect();
                let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                    o.key.error(
                        key,
                        &match e {
                            rustls::pki_types::pem::Error::NoItemsFound => {
                                "holds no private key (PEM \"BEGIN PRIVATE KEY\")".to_string()
                            }
                            e => e.to_string(),
                        },
                    )
                })?;
                builder
                    .with_client_auth_cert(chain, key_der)
                    .map_err(|e| o.cert.error(cert, &format!("with sslkey: {e}")))?
            }
        };
        config.enable_sni = self.sni;
        Ok(Arc::new(config))
    }
}

/// The DER contents of the `kind` sections of the PEM file `path`; an error
/// naming the file's origin when it is not a readable file or holds no
/// such section (saying what it holds instead).
fn pem_sections(
    path: &Path,
    origin: &Origin,
    kind: SectionKind,
    what: &str,
) -> Result<Vec<Vec<u8>>, TargetError> {
    let fail = |why: &str| origin.error(path, why);
    let meta = std::fs::metadata(path).map_err(|e| fail(&e.to_string()))?;
    if meta.is_dir() {
        return Err(fail(&format!("is a directory, not a PEM file of a {what}")));
    }
    let file = std::fs::File::open(path).map_err(|e| fail(&e.to_string()))?;
    let mut rd = std::io::BufReader::new(file);
    let mut wanted = Vec::new();
    let mut other: Vec<SectionKind> = Vec::new();
    loop {
        match rustls::pki_types::pem::from_buf(&mut rd) {
            Ok(Some((k, der))) if k == kind => wanted.push(der),
            Ok(Some((k, _))) => {
                if !other.contains(&k) {
                    other.push(k);
                }
            }
            Ok(None) => break,
            Err(e) => return Err(fail(&format!("not a PEM file of a {what} ({e})"))),
        }
    }
    if wanted.is_empty() {
        let holds = if other.is_empty() {
            "no PEM section at all".to_string()
        } else {
            other
                .iter()
                .map(|k| match k {
                    SectionKind::Certificate => "a certificate".to_string(),
                    SectionKind::Crl => "a certificate revocation list".to_string(),
                    SectionKind::PrivateKey
                    | SectionKind::RsaPrivateKey
                    | SectionKind::EcPrivateKey => "a private key".to_string(),
                    SectionKind::PublicKey => "a public key".to_string(),
                    SectionKind::Csr => "a certificate request".to_string(),
                    k => format!("{k:?}"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let label = match kind {
            SectionKind::Crl => "X509 CRL",
            _ => "CERTIFICATE",
        };
        return Err(fail(&format!(
            "holds no {what} (PEM \"BEGIN {label}\"; it holds {holds})"
        )));
    }
    Ok(wanted)
}

/// libpq refuses a private key others may read.
fn check_key_file(key: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(key).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            "certificate present, but not this private key file; give sslkey=FILE".to_string()
        }
        _ => e.to_string(),
    })?;
    let uid = rustix::process::geteuid().as_raw();
    let limit = if m.uid() == uid { 0o077 } else { 0o037 };
    if m.mode() & limit != 0 {
        return Err(
            "the private key may be read by others; it must be mode 0600 (or 0640 owned by root)"
                .into(),
        );
    }
    Ok(())
}

/// The name the certificate is checked against and sent as SNI.
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.to_string()).map_err(|e| format!("host {host}: {e}"))
}

/// A certificate error in words, the way libpq's messages name it.
pub fn describe(e: &rustls::Error, host: &str, s: &TlsSettings) -> String {
    use rustls::CertificateError as C;
    let root = || {
        s.rootcert
            .as_deref()
            .map_or("no root file".into(), |p| p.display().to_string())
    };
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            C::Expired | C::ExpiredContext { .. } => "server certificate has expired".into(),
            C::NotValidYet | C::NotValidYetContext { .. } => {
                "server certificate is not valid yet".into()
            }
            C::UnknownIssuer => format!(
                "server certificate is signed by an unknown CA (not in sslrootcert {})",
                root()
            ),
            C::NotValidForName | C::NotValidForNameContext { .. } => format!(
                "server certificate does not match host name \"{host}\" (sslmode=verify-full)"
            ),
            C::Revoked => "server certificate has been revoked (sslcrl)".into(),
            other => format!("server certificate rejected: {other:?}"),
        },
        rustls::Error::AlertReceived(a) => format!(
            "the server ended the TLS handshake ({a:?}; a client certificate it wants: sslcert/sslkey?)"
        ),
        other => format!("TLS: {other}"),
    }
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

/// Accepts any certificate, checking only that the server holds its key
/// (libpq's require and prefer without a root file).
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The chain against the roots, not the host name (verify-ca, and require
/// or prefer with a root file).
#[derive(Debug)]
struct ChainOnly(Arc<rustls::client::WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use rustls::CertificateError as C;
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                C::NotValidForName | C::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
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
            e.contains("root certificate file") && e.contains("root.crt"),
            "{e}"
        );
        std::fs::create_dir(home.path().join(".postgresql")).unwrap();
        std::fs::write(home.path().join(".postgresql/root.crt"), &ca).unwrap();
        let s = resolve(&p(&[("sslmode", "verify-full")]), &env).unwrap();
        assert!(s.rootcert.is_some());
        // A client key others may read is refused, as libpq does.
        let d = home.path().join(".postgresql");
        std::fs::write(d.join("postgresql.crt"), &cert).unwrap();
        std::fs::write(d.join("postgresql.key"), &key).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            d.join("postgresql.key"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let e = resolve(&[], &env).unwrap_err();
        assert!(
            e.contains("0600") && e.contains("libpq's default sslkey"),
            "{e}"
        );
        std::fs::set_permissions(
            d.join("postgresql.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        assert!(resolve(&[], &env).unwrap().client.is_some());
        let e = resolve(&p(&[("sslrootcert", "/nonexistent.crt")]), &env).unwrap_err();
        assert!(e.contains("sslrootcert=/nonexistent.crt"), "{e}");
        let e = resolve(&p(&[("sslnegotiation", "direct")]), &env).unwrap_err();
        assert!(e.contains("sslnegotiation=direct"), "{e}");
    }

    /// Issue 38 rows 4 and 17: a file in use that holds nothing usable is
    /// refused with the cause, named by the key or variable that gave it.
    #[test]
    fn files_that_hold_nothing_usable_are_refused_with_the_cause() {
        let (ca, cert, key) = pems();
        let d = tempfile::tempdir().unwrap();
        let env = Map(vec![("HOME", d.path().display().to_string())]);
        let write = |name: &str, text: &str| {
            let f = d.path().join(name);
            std::fs::write(&f, text).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
            f.display().to_string()
        };
        let root = write("root.crt", &ca);
        let garbage = write("garbage", "not a certificate\n");
        let cert_file = write("client.crt", &cert);
        let key_file = write("client.key", &key);
        let dir = d.path().join("sub");
        std::fs::create_dir(&dir).unwrap();
        let dir = dir.display().to_string();
        let full = |extra: &[(&str, &str)]| {
            let mut kv = vec![("sslmode", "verify-full"), ("sslrootcert", root.as_str())];
            kv.extend_from_slice(extra);
            resolve(&p(&kv), &env)
        };
        assert!(full(&[]).is_ok());
        for (key_name, value, says) in [
            (
                "sslcrl",
                garbage.as_str(),
                "holds no certificate revocation list",
            ),
            // libpq takes a certificate here and then fails every verification.
            ("sslcrl", root.as_str(), "it holds a certificate"),
            ("sslcrl", dir.as_str(), "is a directory"),
            ("sslcert", garbage.as_str(), "holds no certificate"),
            ("sslkey", garbage.as_str(), "holds no private key"),
        ] {
            let mut extra = vec![(key_name, value)];
            match key_name {
                "sslkey" => extra.push(("sslcert", cert_file.as_str())),
                "sslcert" => extra.push(("sslkey", key_file.as_str())),
                _ => {}
            }
            let e = full(&extra).unwrap_err();
            assert!(
                e.starts_with(&format!("{key_name}={value}: ")) && e.contains(says),
                "{key_name}={value}: {e}"
            );
        }
        assert!(full(&[("sslcert", &cert_file), ("sslkey", &key_file)]).is_ok());
        for (value, says) in [
            (garbage.as_str(), "holds no certificate"),
            (dir.as_str(), "is a directory"),
        ] {
            let e =
                resolve(&p(&[("sslmode", "require"), ("sslrootcert", value)]), &env).unwrap_err();
            assert!(
                e.starts_with(&format!("sslrootcert={value}: ")) && e.contains(says),
                "{e}"
            );
        }
        // From the environment: the variable is named.
        let env_crl = Map(vec![
            ("HOME", d.path().display().to_string()),
            ("PGSSLCRL", garbage.clone()),
        ]);
        let e = TlsSettings::resolve(&p(&[("sslrootcert", root.as_str())]), &env_crl, true)
            .unwrap_err();
        assert_eq!(e.variable.as_deref(), Some("PGSSLCRL"), "{e}");
        assert!(e.message.starts_with("PGSSLCRL="), "{e}");
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
