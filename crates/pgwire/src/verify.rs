//! The server's certificate checked as libpq checks it (docs/libpq-parity.md,
//! section 2): rustls keeps the handshake and the record layer, and this
//! verifier hands the chain to OpenSSL's `X509_verify_cert` with the store
//! libpq builds (the root file; a CRL file and a hashed CRL directory, with
//! CRL checking over the whole chain only when they load), under the
//! system's security level and the `ssl_server` purpose, as an OpenSSL
//! client gets them. Then, for verify-full, libpq's own host-name rule (not
//! OpenSSL's `X509_check_host`): the SANs of every kind are compared, and
//! the CN only when there is no SAN of the host's kind (DNS or IP); names
//! match case-insensitively, or as a `*.` wildcard over exactly one label.
//!
//! The handshake's signatures are checked by OpenSSL on the certificate's
//! key, so version-1 certificates (which webpki cannot parse) work, with or
//! without a root file.
//!
//! Failures are [`CertError`]s, carried through rustls as
//! `CertificateError::Other` and read back by [`cert_error`].

use std::path::Path;
use std::sync::Arc;

use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Public};
use openssl::sign::{RsaPssSaltlen, Verifier};
use openssl::ssl::SslFiletype;
use openssl::stack::Stack;
use openssl::x509::store::{X509Lookup, X509Store, X509StoreBuilder};
use openssl::x509::verify::{X509VerifyFlags, X509VerifyParam};
use openssl::x509::{X509, X509PurposeId, X509StoreContext};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// Why OpenSSL refused the chain, in the terms libpq's users meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyReason {
    /// The server's certificate is self-signed and not in the root file.
    SelfSigned,
    /// The chain ends in a self-signed certificate that is not in the root file.
    SelfSignedInChain,
    /// No issuer in the root file (or the chain) for a certificate: an unknown CA.
    UnknownIssuer,
    /// A certificate of the chain has expired.
    Expired,
    /// A certificate of the chain is not valid yet.
    NotYetValid,
    /// A certificate of the chain is revoked by a CRL.
    Revoked,
    /// CRL checking is on and a CA of the chain has no CRL.
    CrlMissing,
    /// Anything else OpenSSL refuses (its code).
    Other(i32),
}

impl VerifyReason {
    /// What it means, for a message after OpenSSL's words.
    fn explain(self) -> &'static str {
        match self {
            VerifyReason::SelfSigned => {
                "the server's certificate signs itself and is not in the root file; "
            }
            VerifyReason::SelfSignedInChain => {
                "the chain ends in a self-signed CA that is not in the root file, an unknown CA; "
            }
            VerifyReason::UnknownIssuer => {
                "signed by an unknown CA: its issuer is not in the root file; "
            }
            VerifyReason::CrlMissing => {
                "CRL checking is on (sslcrl or sslcrldir) and no CRL of this CA was found; "
            }
            VerifyReason::Revoked => "revoked by the CRL (sslcrl or sslcrldir); ",
            _ => "",
        }
    }

    fn from_code(code: i32) -> VerifyReason {
        // X509_V_ERR_* (openssl/x509_vfy.h).
        match code {
            18 => VerifyReason::SelfSigned,
            19 => VerifyReason::SelfSignedInChain,
            2 | 20 | 21 => VerifyReason::UnknownIssuer,
            10 => VerifyReason::Expired,
            9 => VerifyReason::NotYetValid,
            23 => VerifyReason::Revoked,
            3 => VerifyReason::CrlMissing,
            c => VerifyReason::Other(c),
        }
    }
}

/// A server certificate libpq would refuse, with its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertError {
    /// OpenSSL's chain verification failed (`SSL error: certificate verify
    /// failed`, which is all libpq 15 says; the reason is OpenSSL's).
    #[error(
        "SSL error: certificate verify failed: {text} ({}certificate at depth {depth}: {subject})",
        reason.explain()
    )]
    Verify {
        /// The reason, typed.
        reason: VerifyReason,
        /// OpenSSL's words for it ("self-signed certificate", ...).
        text: String,
        /// Where in the chain (0: the server's certificate).
        depth: u32,
        /// That certificate's subject.
        subject: String,
    },
    /// verify-full: no name of the certificate matches the host.
    #[error("{}", host_mismatch(host, names))]
    HostMismatch {
        /// The host connected to (`host`, never `hostaddr`).
        host: String,
        /// The names compared, in order (SANs, then the CN when it was used).
        names: Vec<String>,
    },
    /// A certificate the client cannot parse.
    #[error("SSL error: the server's certificate cannot be read: {0}")]
    Unreadable(String),
}

fn host_mismatch(host: &str, names: &[String]) -> String {
    match names {
        [] => "could not get server's host name from server certificate".into(),
        [one] => format!("server certificate for \"{one}\" does not match host name \"{host}\""),
        [first, rest @ ..] => format!(
            "server certificate for \"{first}\" (and {} other name{}) does not match host name \"{host}\"",
            rest.len(),
            if rest.len() == 1 { "" } else { "s" }
        ),
    }
}

/// The [`CertError`] inside a rustls error, if that is what it carries.
pub fn cert_error(e: &rustls::Error) -> Option<&CertError> {
    match e {
        rustls::Error::InvalidCertificate(rustls::CertificateError::Other(o)) => {
            o.0.downcast_ref::<CertError>()
        }
        _ => None,
    }
}

fn reject(e: CertError) -> rustls::Error {
    rustls::Error::InvalidCertificate(rustls::CertificateError::Other(rustls::OtherError(
        Arc::new(e),
    )))
}

/// SCRAM's tls-server-end-point data (RFC 5929): the server certificate's
/// hash under its signature's digest (SHA-256 for MD5 and SHA-1).
pub fn end_point(conn: &rustls::ClientConnection) -> Option<Vec<u8>> {
    let der = conn.peer_certificates()?.first()?;
    let cert = X509::from_der(der).ok()?;
    let md = match cert
        .signature_algorithm()
        .object()
        .nid()
        .signature_algorithms()
        .map(|a| a.digest)
    {
        Some(openssl::nid::Nid::SHA384) => MessageDigest::sha384(),
        Some(openssl::nid::Nid::SHA512) => MessageDigest::sha512(),
        _ => MessageDigest::sha256(),
    };
    openssl::hash::hash(md, der).ok().map(|d| d.to_vec())
}

/// libpq's certificate store: the root file, and the CRLs that load.
pub(crate) struct Roots {
    store: X509Store,
}

/// The root file could not be read (libpq: `could not read root certificate file`).
#[derive(Debug)]
pub(crate) struct RootsUnreadable(pub String);

impl Roots {
    /// libpq's `SSL_CTX_load_verify_locations(root)` then
    /// `X509_STORE_load_locations(crl, crldir)`, with CRL checking over the
    /// whole chain only when that succeeds (a CRL file that is absent,
    /// garbage or DER is silently no CRL checking; a directory, even one that
    /// does not exist, turns checking on).
    pub(crate) fn load(
        root: &Path,
        crl: Option<&Path>,
        crldir: Option<&Path>,
    ) -> Result<Roots, RootsUnreadable> {
        let unreadable = |e: &dyn std::fmt::Display| RootsUnreadable(e.to_string());
        let mut b = X509StoreBuilder::new().map_err(|e| unreadable(&e))?;
        if root == Path::new("system") {
            // libpq 16's sslrootcert=system: OpenSSL's default locations
            // (SSL_CERT_FILE and SSL_CERT_DIR override them).
            b.set_default_paths().map_err(|e| unreadable(&e))?;
        } else {
            let pem = std::fs::read(root).map_err(|e| unreadable(&e))?;
            let certs = X509::stack_from_pem(&pem).map_err(|e| unreadable(&e))?;
            if certs.is_empty() {
                return Err(RootsUnreadable("no certificate in it".into()));
            }
            for c in certs {
                // A certificate twice in the file is not an error (OpenSSL skips it).
                let _ = b.add_cert(c);
            }
        }
        let mut crl_loaded = false;
        if let Some(f) = crl {
            // X509_load_cert_crl_file: every certificate and CRL of a PEM file;
            // success when it holds at least one.
            let pem = std::fs::read(f).unwrap_or_default();
            let certs = X509::stack_from_pem(&pem).unwrap_or_default();
            let lookup = b
                .add_lookup(X509Lookup::file())
                .map_err(|e| unreadable(&e))?;
            let crls = std::fs::metadata(f).is_ok_and(|m| m.is_file())
                && lookup.load_crl_file(f, SslFiletype::PEM).is_ok();
            let had_certs = !certs.is_empty();
            for c in certs {
                let _ = b.add_cert(c);
            }
            crl_loaded = crls || had_certs;
        }
        // X509_STORE_load_locations fails as a whole when its file fails.
        let file_ok = crl.is_none() || crl_loaded;
        if let Some(d) = crldir.and_then(Path::to_str)
            && file_ok
        {
            let lookup = b
                .add_lookup(X509Lookup::hash_dir())
                .map_err(|e| unreadable(&e))?;
            crl_loaded = lookup.add_dir(d, SslFiletype::PEM).is_ok();
        }
        if crl_loaded && file_ok {
            b.set_flags(X509VerifyFlags::CRL_CHECK | X509VerifyFlags::CRL_CHECK_ALL)
                .map_err(|e| unreadable(&e))?;
        }
        // What an OpenSSL client verifies with: the ssl_server purpose and the
        // security level of the system's configuration (Debian: 2).
        b.set_purpose(X509PurposeId::SSL_SERVER)
            .map_err(|e| unreadable(&e))?;
        let mut param = X509VerifyParam::new().map_err(|e| unreadable(&e))?;
        param.set_auth_level(security_level());
        b.set_param(&param).map_err(|e| unreadable(&e))?;
        // The system's default paths are not libpq's: nothing else is loaded.
        Ok(Roots { store: b.build() })
    }
}

/// The security level OpenSSL's configuration gives a new client context.
fn security_level() -> i32 {
    static LEVEL: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(|| {
        openssl::ssl::SslContext::builder(openssl::ssl::SslMethod::tls_client())
            .map(|b| b.build().security_level() as i32)
            .unwrap_or(1)
    })
}

/// The verifier for one connection string: the chain against libpq's store
/// when there is a root file (every sslmode that uses TLS), the host name
/// for verify-full.
pub(crate) struct LibpqVerifier {
    roots: Option<Roots>,
    check_host: bool,
}

impl std::fmt::Debug for LibpqVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LibpqVerifier")
            .field("roots", &self.roots.is_some())
            .field("check_host", &self.check_host)
            .finish()
    }
}

impl LibpqVerifier {
    pub(crate) fn new(roots: Option<Roots>, check_host: bool) -> LibpqVerifier {
        LibpqVerifier { roots, check_host }
    }
}

fn parse(der: &[u8]) -> Result<X509, rustls::Error> {
    X509::from_der(der).map_err(|e| reject(CertError::Unreadable(e.to_string())))
}

fn subject(c: &openssl::x509::X509Ref) -> String {
    c.subject_name()
        .entries()
        .map(|e| {
            format!(
                "{}={}",
                e.object().nid().short_name().unwrap_or("?"),
                String::from_utf8_lossy(e.data().as_slice())
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl ServerCertVerifier for LibpqVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(roots) = &self.roots else {
            // No root file: libpq checks nothing (require, prefer, allow).
            return Ok(ServerCertVerified::assertion());
        };
        let leaf = parse(end_entity)?;
        let mut chain = Stack::new().map_err(|e| reject(CertError::Unreadable(e.to_string())))?;
        for c in intermediates {
            chain
                .push(parse(c)?)
                .map_err(|e| reject(CertError::Unreadable(e.to_string())))?;
        }
        let mut ctx =
            X509StoreContext::new().map_err(|e| reject(CertError::Unreadable(e.to_string())))?;
        let failed = ctx
            .init(&roots.store, &leaf, &chain, |c| {
                Ok(match c.verify_cert()? {
                    true => None,
                    false => {
                        let e = c.error();
                        Some(CertError::Verify {
                            reason: VerifyReason::from_code(e.as_raw()),
                            text: e.error_string().to_string(),
                            depth: c.error_depth(),
                            subject: c.current_cert().map(subject).unwrap_or_default(),
                        })
                    }
                })
            })
            .map_err(|e| reject(CertError::Unreadable(e.to_string())))?;
        if let Some(e) = failed {
            return Err(reject(e));
        }
        if self.check_host {
            let host = server_name.to_str();
            check_host(&leaf, &host).map_err(reject)?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        use SignatureScheme as S;
        // TLS 1.3 signs with PSS, ECDSA and EdDSA only.
        if matches!(
            dss.scheme,
            S::RSA_PKCS1_SHA256 | S::RSA_PKCS1_SHA384 | S::RSA_PKCS1_SHA512
        ) {
            return Err(rustls::Error::PeerMisbehaved(
                rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme,
            ));
        }
        verify_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        SCHEMES.to_vec()
    }
}

/// The handshake signature schemes checked here.
const SCHEMES: [SignatureScheme; 10] = [
    SignatureScheme::ECDSA_NISTP256_SHA256,
    SignatureScheme::ECDSA_NISTP384_SHA384,
    SignatureScheme::ECDSA_NISTP521_SHA512,
    SignatureScheme::ED25519,
    SignatureScheme::RSA_PSS_SHA256,
    SignatureScheme::RSA_PSS_SHA384,
    SignatureScheme::RSA_PSS_SHA512,
    SignatureScheme::RSA_PKCS1_SHA256,
    SignatureScheme::RSA_PKCS1_SHA384,
    SignatureScheme::RSA_PKCS1_SHA512,
];

/// The server's handshake signature, checked by OpenSSL on the key of its
/// certificate (whatever the certificate's version).
fn verify_signature(
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
) -> Result<HandshakeSignatureValid, rustls::Error> {
    use SignatureScheme as S;
    let bad = || rustls::Error::InvalidCertificate(rustls::CertificateError::BadSignature);
    let key: PKey<Public> = parse(cert)?.public_key().map_err(|_| bad())?;
    let (md, pss) = match dss.scheme {
        S::RSA_PKCS1_SHA256 | S::ECDSA_NISTP256_SHA256 => (Some(MessageDigest::sha256()), false),
        S::RSA_PKCS1_SHA384 | S::ECDSA_NISTP384_SHA384 => (Some(MessageDigest::sha384()), false),
        S::RSA_PKCS1_SHA512 | S::ECDSA_NISTP521_SHA512 => (Some(MessageDigest::sha512()), false),
        S::RSA_PSS_SHA256 => (Some(MessageDigest::sha256()), true),
        S::RSA_PSS_SHA384 => (Some(MessageDigest::sha384()), true),
        S::RSA_PSS_SHA512 => (Some(MessageDigest::sha512()), true),
        S::ED25519 => (None, false),
        _ => return Err(bad()),
    };
    let sig = dss.signature();
    let ok = match md {
        Some(md) => (|| {
            let mut v = Verifier::new(md, &key)?;
            if pss {
                v.set_rsa_padding(openssl::rsa::Padding::PKCS1_PSS)?;
                v.set_rsa_pss_saltlen(RsaPssSaltlen::DIGEST_LENGTH)?;
                v.set_rsa_mgf1_md(md)?;
            }
            v.update(message)?;
            v.verify(sig)
        })(),
        None => Verifier::new_without_digest(&key).and_then(|mut v| v.verify_oneshot(sig, message)),
    };
    match ok {
        Ok(true) => Ok(HandshakeSignatureValid::assertion()),
        _ => Err(bad()),
    }
}

/// Whether `host` is an IP address, as libpq tells (inet_aton, or inet_pton for IPv6).
fn host_ip(host: &str) -> Option<std::net::IpAddr> {
    host.parse::<std::net::IpAddr>().ok()
}

/// libpq's name comparison: equal ignoring case, or a `*.` wildcard that
/// stands for exactly one leading label.
fn name_matches(name: &str, host: &str) -> bool {
    if name.eq_ignore_ascii_case(host) {
        return true;
    }
    let Some(suffix) = name.strip_prefix('*') else {
        return false;
    };
    if name.len() < 3 || !suffix.starts_with('.') || name.len() > host.len() {
        return false;
    }
    let start = host.len() - suffix.len();
    host.is_char_boundary(start)
        && host[start..].eq_ignore_ascii_case(suffix)
        && !host[..start].contains('.')
}

/// libpq's host-name rule on the server's certificate (see the module's comment).
pub(crate) fn check_host(cert: &openssl::x509::X509Ref, host: &str) -> Result<(), CertError> {
    let ip = host_ip(host);
    let mut names = Vec::new();
    let mut check_cn = true;
    if let Some(sans) = cert.subject_alt_names() {
        for san in sans.iter() {
            let (matched, name) = if let Some(dns) = san.dnsname() {
                if ip.is_none() {
                    check_cn = false;
                }
                (name_matches(dns, host), dns.to_string())
            } else if let Some(bytes) = san.ipaddress() {
                if ip.is_some() {
                    check_cn = false;
                }
                let addr: std::net::IpAddr = if let Ok(a) = <[u8; 4]>::try_from(bytes) {
                    a.into()
                } else if let Ok(a) = <[u8; 16]>::try_from(bytes) {
                    a.into()
                } else {
                    return Err(CertError::Unreadable(format!(
                        "certificate contains IP address with invalid length {}",
                        bytes.len()
                    )));
                };
                (ip == Some(addr), addr.to_string())
            } else {
                continue;
            };
            names.push(name);
            if matched {
                return Ok(());
            }
        }
    }
    if check_cn
        && let Some(cn) = cert
            .subject_name()
            .entries_by_nid(openssl::nid::Nid::COMMONNAME)
            .next()
    {
        let cn = String::from_utf8_lossy(cn.data().as_slice()).into_owned();
        if name_matches(&cn, host) {
            return Ok(());
        }
        names.push(cn);
    }
    Err(CertError::HostMismatch {
        host: host.to_string(),
        names,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_one_label_as_libpq_does() {
        assert!(name_matches("*.csdchar.test", "db.csdchar.test"));
        assert!(name_matches("*.csdchar.test", "DB.CSDCHAR.TEST"));
        assert!(!name_matches("*.csdchar.test", "a.b.csdchar.test"));
        assert!(!name_matches("*.csdchar.test", "csdchar.test"));
        assert!(name_matches("LocalHost", "localhost"));
        assert!(!name_matches("db*.csdchar.test", "db1.csdchar.test"));
        assert!(!name_matches("*", "x"));
    }

    #[test]
    fn mismatch_messages_name_the_host_and_the_certificates_names() {
        let e = CertError::HostMismatch {
            host: "h".into(),
            names: vec!["a".into(), "b".into(), "c".into()],
        };
        assert_eq!(
            e.to_string(),
            "server certificate for \"a\" (and 2 other names) does not match host name \"h\""
        );
        let e = CertError::HostMismatch {
            host: "h".into(),
            names: vec![],
        };
        assert!(e.to_string().contains("could not get server's host name"));
    }
}
