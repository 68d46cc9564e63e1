//! `--tls` for a managed cluster listening on TCP: a certificate authority of
//! the cluster's own and a server certificate it signed for the `--listen`
//! addresses, kept in the data directory (root.crt 0644; server.crt, and
//! server.key 0600 as the server's user, which PostgreSQL insists on), the
//! server started with `ssl=on`, and TCP logins made `hostssl` so a plain
//! connection is refused. Made once; a restart keeps them. The CA's key is
//! not kept: nothing else can be signed with it.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::access::{write_file, write_private};
use crate::spec::{ClusterError, RunAs};

/// The CA certificate a client verifies the server with (`sslrootcert`).
pub const ROOT_CERT: &str = "root.crt";
const SERVER_CERT: &str = "server.crt";
const SERVER_KEY: &str = "server.key";

/// Makes the certificates unless they are there; returns the server
/// settings that use them.
pub(super) fn ensure_certificates(
    pgdata: &Path,
    listen: &str,
    run_as: Option<RunAs>,
) -> Result<Vec<(String, String)>, ClusterError> {
    let err = |e: rcgen::Error| ClusterError::Io(format!("making the cluster's certificate: {e}"));
    if !pgdata.join(SERVER_KEY).exists() || !pgdata.join(ROOT_CERT).exists() {
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "csdchar managed cluster CA");
        ca.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca_key = rcgen::KeyPair::generate().map_err(err)?;
        let ca_cert = ca.self_signed(&ca_key).map_err(err)?;
        // The names a client may use: the --listen addresses as given, and
        // for a wildcard (every address) this host's loopback names, which
        // the printed connection string uses.
        let mut names: Vec<String> = listen
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty() && s != "*")
            .collect();
        if listen
            .split(',')
            .any(|s| matches!(s.trim(), "*" | "0.0.0.0" | "::"))
        {
            for local in ["localhost", "127.0.0.1", "::1"] {
                if !names.iter().any(|n| n == local) {
                    names.push(local.to_string());
                }
            }
        }
        let mut server = rcgen::CertificateParams::new(names).map_err(err)?;
        server
            .distinguished_name
            .push(rcgen::DnType::CommonName, "csdchar managed cluster");
        server.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let key = rcgen::KeyPair::generate().map_err(err)?;
        let cert = server.signed_by(&key, &ca_cert, &ca_key).map_err(err)?;
        write_file(&pgdata.join(ROOT_CERT), &ca_cert.pem(), 0o644, run_as)?;
        write_file(&pgdata.join(SERVER_CERT), &cert.pem(), 0o644, run_as)?;
        write_private(&pgdata.join(SERVER_KEY), &key.serialize_pem(), run_as)?;
    }
    Ok(vec![
        ("ssl".into(), "on".into()),
        ("ssl_cert_file".into(), SERVER_CERT.into()),
        ("ssl_key_file".into(), SERVER_KEY.into()),
    ])
}

/// TCP logins over TLS only: pg_hba's `host` lines become `hostssl`.
pub(super) fn require_tls_logins(
    pgdata: &Path,
    run_as: Option<RunAs>,
    notes: &mut Vec<String>,
) -> Result<(), ClusterError> {
    let path = pgdata.join("pg_hba.conf");
    let text = fs::read_to_string(&path)
        .map_err(|e| ClusterError::Io(format!("{}: {e}", path.display())))?;
    let (out, changed) = host_lines_to_hostssl(&text);
    if changed > 0 {
        let mode = fs::metadata(&path).map_or(0o600, |m| m.permissions().mode() & 0o777);
        write_file(&path, &out, mode, run_as)?;
        notes.push(format!(
            "{}: {changed} host line(s) made hostssl, as --tls asks (plain TCP logins are refused)",
            path.display()
        ));
    }
    Ok(())
}

/// `text` with every line whose first word is `host` starting `hostssl`.
fn host_lines_to_hostssl(text: &str) -> (String, usize) {
    let mut changed = 0;
    let out = text
        .split_inclusive('\n')
        .map(|line| {
            let indent = line.len() - line.trim_start().len();
            let rest = &line[indent..];
            match rest.strip_prefix("host") {
                Some(after) if after.starts_with([' ', '\t']) => {
                    changed += 1;
                    format!("{}hostssl{after}", &line[..indent])
                }
                _ => line.to_string(),
            }
        })
        .collect();
    (out, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_host_lines_become_hostssl() {
        let (out, n) = host_lines_to_hostssl(
            "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n  host\tall all ::1/128 md5\nhostssl a b c d\nhostnossl x\n# host all\n",
        );
        assert_eq!(n, 2);
        assert_eq!(
            out,
            "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n  hostssl\tall all ::1/128 md5\nhostssl a b c d\nhostnossl x\n# host all\n"
        );
    }

    #[test]
    fn certificates_are_made_once_with_the_key_private() {
        let d = tempfile::tempdir().unwrap();
        let settings = ensure_certificates(d.path(), "127.0.0.1", None).unwrap();
        assert!(settings.contains(&("ssl".to_string(), "on".to_string())));
        let key = d.path().join(SERVER_KEY);
        assert_eq!(
            fs::metadata(&key).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let before = fs::read(&key).unwrap();
        ensure_certificates(d.path(), "127.0.0.1", None).unwrap();
        assert_eq!(fs::read(&key).unwrap(), before, "kept, not remade");
        let pem = fs::read_to_string(d.path().join(ROOT_CERT)).unwrap();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
    }
}
