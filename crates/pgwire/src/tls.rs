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
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{
    CertificateDer, CertificateRevocationListDer, PrivateKeyDer, ServerName, UnixTime,
};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

use crate::env::Env;

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
            config: Default::default(),
        }
    }

    /// Resolves the settings from the connection string's ssl* keys, then the
    /// environment, then libpq's defaults. A bad value or a file a mode needs
    /// but cannot have is an error naming the key.
    pub fn resolve(params: &[(String, String)], env: &dyn Env) -> Result<TlsSettings, String> {
        let get = |k: &str, var: &str| -> Option<(String, String)> {
            params
                .iter()
                .rev()
                .find(|(n, _)| n == k)
                .map(|(_, v)| (v.clone(), k.to_string()))
                .or_else(|| env.get(var).map(|v| (v, var.to_string())))
        };
        let mode = match get("sslmode", "PGSSLMODE") {
            Some((v, from)) => SslMode::parse(&v, &from)?,
            None => SslMode::Prefer,
        };
        if let Some((v, _)) = get("sslnegotiation", "PGSSLNEGOTIATION")
            && v != "postgres"
        {
            return Err(format!(
                "sslnegotiation={v}: csdchar negotiates TLS the PostgreSQL way (sslnegotiation=postgres)"
            ));
        }
        if get("sslpassword", "").is_some() {
            return Err(
                "sslpassword: encrypted client keys are not supported; give an unencrypted sslkey (0600)"
                    .into(),
            );
        }
        let sni = match get("sslsni", "PGSSLSNI") {
            Some((v, _)) if v == "0" => false,
            Some((v, _)) if v == "1" => true,
            Some((v, from)) => return Err(format!("{from}={v}: 0 or 1")),
            None => true,
        };
        let home = env.get("HOME").map(PathBuf::from);
        let default = |name: &str| home.as_ref().map(|h| h.join(".postgresql").join(name));
        let file = |key: &str, var: &str, name: &str| -> (Option<PathBuf>, bool) {
            match get(key, var) {
                Some((v, _)) => (Some(PathBuf::from(v)), true),
                None => (default(name), false),
            }
        };
        let (rootcert, named) = file("sslrootcert", "PGSSLROOTCERT", "root.crt");
        let rootcert_exists = rootcert.as_deref().is_some_and(Path::exists);
        if matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) && !rootcert_exists {
            let shown = rootcert
                .as_deref()
                .map_or("~/.postgresql/root.crt".into(), |p| p.display().to_string());
            return Err(format!(
                "sslmode={}: root certificate file \"{shown}\" does not exist; give the server's CA with sslrootcert=FILE, or use sslmode=require",
                mode.name()
            ));
        }
        if let Some(r) = rootcert.as_deref().filter(|_| named && !rootcert_exists)
            && mode != SslMode::Disable
        {
            return Err(format!("sslrootcert={}: no such file", r.display()));
        }
        let (cert, cert_named) = file("sslcert", "PGSSLCERT", "postgresql.crt");
        let (key, _) = file("sslkey", "PGSSLKEY", "postgresql.key");
        let client = match (cert, key) {
            (Some(c), Some(k)) if c.exists() => {
                check_key_file(&k)?;
                Some((c, k))
            }
            (Some(c), _) if cert_named && mode != SslMode::Disable => {
                return Err(format!("sslcert={}: no such file", c.display()));
            }
            _ => None,
        };
        let (crl, crl_named) = file("sslcrl", "PGSSLCRL", "root.crl");
        let crl = match crl {
            Some(c) if c.exists() => Some(c),
            Some(c) if crl_named && mode != SslMode::Disable => {
                return Err(format!("sslcrl={}: no such file", c.display()));
            }
            _ => None,
        };
        Ok(TlsSettings {
            mode,
            rootcert: rootcert.filter(|_| rootcert_exists),
            client,
            crl,
            sni,
            config: Default::default(),
        })
    }

    /// The rustls configuration for these settings (built once).
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, String> {
        self.config.get_or_init(|| self.build()).clone()
    }

    fn build(&self) -> Result<Arc<ClientConfig>, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?;
        let verifier: Arc<dyn ServerCertVerifier> = match &self.rootcert {
            None => Arc::new(AnyCertificate(provider)),
            Some(root) => {
                let mut roots = rustls::RootCertStore::empty();
                let certs = CertificateDer::pem_file_iter(root)
                    .map_err(|e| format!("sslrootcert={}: {e}", root.display()))?;
                for c in certs {
                    let c = c.map_err(|e| format!("sslrootcert={}: {e}", root.display()))?;
                    roots
                        .add(c)
                        .map_err(|e| format!("sslrootcert={}: {e}", root.display()))?;
                }
                let mut b = rustls::client::WebPkiServerVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                );
                if let Some(crl) = &self.crl {
                    let crls: Result<Vec<_>, _> = CertificateRevocationListDer::pem_file_iter(crl)
                        .map_err(|e| format!("sslcrl={}: {e}", crl.display()))?
                        .collect();
                    b = b.with_crls(crls.map_err(|e| format!("sslcrl={}: {e}", crl.display()))?);
                }
                let inner = b
                    .build()
                    .map_err(|e| format!("sslrootcert={}: {e}", root.display()))?;
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
                let chain: Result<Vec<_>, _> = CertificateDer::pem_file_iter(cert)
                    .map_err(|e| format!("sslcert={}: {e}", cert.display()))?
                    .collect();
                let chain = chain.map_err(|e| format!("sslcert={}: {e}", cert.display()))?;
                let key = PrivateKeyDer::from_pem_file(key)
                    .map_err(|e| format!("sslkey={}: {e}", key.display()))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("sslcert/sslkey: {e}"))?
            }
        };
        config.enable_sni = self.sni;
        Ok(Arc::new(config))
    }
}

/// libpq refuses a private key others may read.
fn check_key_file(key: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(key).map_err(|e| format!("sslkey={}: {e}", key.display()))?;
    // Safety: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let limit = if m.uid() == uid { 0o077 } else { 0o037 };
    if m.mode() & limit != 0 {
        return Err(format!(
            "sslkey={}: the private key may be read by others; it must be mode 0600 (or 0640 owned by root)",
            key.display()
        ));
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

    #[test]
    fn modes_env_and_defaults_follow_libpq() {
        let home = tempfile::tempdir().unwrap();
        let env = Map(vec![("HOME", home.path().display().to_string())]);
        let s = TlsSettings::resolve(&[], &env).unwrap();
        assert_eq!(s.mode, SslMode::Prefer);
        assert!(s.rootcert.is_none() && s.client.is_none());
        let env2 = Map(vec![
            ("HOME", home.path().display().to_string()),
            ("PGSSLMODE", "require".into()),
        ]);
        assert_eq!(
            TlsSettings::resolve(&[], &env2).unwrap().mode,
            SslMode::Require
        );
        // The connection string wins over the environment.
        let s = TlsSettings::resolve(&p(&[("sslmode", "disable")]), &env2).unwrap();
        assert_eq!(s.mode, SslMode::Disable);
        let e = TlsSettings::resolve(&p(&[("sslmode", "sometimes")]), &env).unwrap_err();
        assert!(
            e.contains("sslmode=sometimes") && e.contains("verify-full"),
            "{e}"
        );
        let e = TlsSettings::resolve(&[], &Map(vec![("PGSSLMODE", "x".into())])).unwrap_err();
        assert!(e.starts_with("PGSSLMODE=x"), "{e}");
        // verify-* need a root file; the default one counts when it exists.
        let e = TlsSettings::resolve(&p(&[("sslmode", "verify-full")]), &env).unwrap_err();
        assert!(
            e.contains("root certificate file") && e.contains("root.crt"),
            "{e}"
        );
        std::fs::create_dir(home.path().join(".postgresql")).unwrap();
        std::fs::write(home.path().join(".postgresql/root.crt"), "x").unwrap();
        let s = TlsSettings::resolve(&p(&[("sslmode", "verify-full")]), &env).unwrap();
        assert!(s.rootcert.is_some());
        // A client key others may read is refused, as libpq does.
        let d = home.path().join(".postgresql");
        std::fs::write(d.join("postgresql.crt"), "x").unwrap();
        std::fs::write(d.join("postgresql.key"), "x").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            d.join("postgresql.key"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let e = TlsSettings::resolve(&[], &env).unwrap_err();
        assert!(e.contains("0600"), "{e}");
        std::fs::set_permissions(
            d.join("postgresql.key"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        assert!(TlsSettings::resolve(&[], &env).unwrap().client.is_some());
        let e = TlsSettings::resolve(&p(&[("sslrootcert", "/nonexistent.crt")]), &env).unwrap_err();
        assert!(e.contains("sslrootcert=/nonexistent.crt"), "{e}");
        let e = TlsSettings::resolve(&p(&[("sslnegotiation", "direct")]), &env).unwrap_err();
        assert!(e.contains("sslnegotiation=direct"), "{e}");
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
