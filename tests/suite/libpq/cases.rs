//! The table: connection strings (with their environment and files) and
//! libpq's outcome for each, as psql 15 gives it on this test's servers. The
//! same table is what csdchar is to be run against (issue 40): same outcome,
//! a message naming the same causes.
//!
//! Placeholders in strings: `{u}` user=postgres dbname=postgres; `{t}` the
//! TLS server's port, `{p}` the primary's, `{s}` the standby's, `{dead}` a
//! closed port, `{hole}` a port that accepts and never answers; `{pki}` the
//! certificate directory; `{home}` the case's own HOME; `{psock}` the primary's
//! socket directory; `{pw}` the password of `postgres`.

use super::outcome::{Cause, Cause::*, Reached};
use super::servers::ServerCert::{self, *};

/// A file a case puts in place before it runs.
#[derive(Clone, Debug)]
pub struct File {
    /// Where (placeholders allowed).
    pub path: &'static str,
    /// A PKI file copied there, or text (placeholders allowed) written there.
    pub from: Src,
    pub mode: u32,
    /// Owned by postgres instead of the test's user (root).
    pub owned_by_postgres: bool,
}

#[derive(Clone, Debug)]
pub enum Src {
    Pki(&'static str),
    Text(&'static str),
}

/// What libpq does with the case.
#[derive(Clone, Debug)]
pub enum Expect {
    /// Connects to this server, over TLS or not; with the check query's answer when the case has one.
    Connects {
        reached: Reached,
        tls: bool,
        check: Option<&'static str>,
    },
    /// Refused, the message naming (at least) these causes.
    Refuses(Vec<Cause>),
}

#[derive(Clone, Debug)]
pub struct Case {
    pub id: &'static str,
    /// The TLS server's certificate for this case (None: the case does not use the TLS server).
    pub cert: Option<ServerCert>,
    pub conninfo: &'static str,
    pub env: Vec<(&'static str, &'static str)>,
    pub files: Vec<File>,
    /// PGPASSWORD given by the harness.
    pub password: bool,
    /// SQL whose answer the case records (`Connects::check`).
    pub check_sql: Option<&'static str>,
    pub expect: Expect,
    /// The first libpq major version that knows the case's key (15 unless said).
    pub since: u32,
    /// What the case shows, for the table in docs/libpq-parity.md.
    pub note: &'static str,
    /// The outcome on a libpq of version `since` or later, where it is not `expect`
    /// (`expect` is libpq 15's, recorded through psql 15).
    pub newer: Option<Expect>,
}

impl Case {
    fn new(id: &'static str, cert: Option<ServerCert>, conninfo: &'static str) -> Case {
        Case {
            id,
            cert,
            conninfo,
            env: Vec::new(),
            files: Vec::new(),
            password: true,
            check_sql: None,
            expect: Expect::Refuses(Vec::new()),
            since: 15,
            note: "",
            newer: None,
        }
    }
    fn env(mut self, k: &'static str, v: &'static str) -> Case {
        self.env.push((k, v));
        self
    }
    fn file(mut self, path: &'static str, from: Src, mode: u32) -> Case {
        self.files.push(File {
            path,
            from,
            mode,
            owned_by_postgres: false,
        });
        self
    }
    fn file_of_postgres(mut self, path: &'static str, from: Src, mode: u32) -> Case {
        self.files.push(File {
            path,
            from,
            mode,
            owned_by_postgres: true,
        });
        self
    }
    fn nopw(mut self) -> Case {
        self.password = false;
        self
    }
    fn check(mut self, sql: &'static str, answer: &'static str) -> Case {
        self.check_sql = Some(sql);
        if let Expect::Connects { check, .. } = &mut self.expect {
            *check = Some(answer);
        }
        self
    }
    fn since(mut self, v: u32) -> Case {
        self.since = v;
        self
    }
    /// From libpq `since` on: connects to `r` (over TLS when `tls`).
    fn newer_ok(mut self, r: Reached, tls: bool) -> Case {
        self.newer = Some(Expect::Connects {
            reached: r,
            tls,
            check: None,
        });
        self
    }
    /// From libpq `since` on: refused for `causes`.
    fn newer_refused(mut self, causes: &[Cause]) -> Case {
        let mut c = causes.to_vec();
        c.sort();
        self.newer = Some(Expect::Refuses(c));
        self
    }
    /// What a libpq of major version `major` does with the case.
    pub fn expect_for(&self, major: u32) -> &Expect {
        match &self.newer {
            Some(n) if major >= self.since => n,
            _ => &self.expect,
        }
    }
    fn note(mut self, n: &'static str) -> Case {
        self.note = n;
        self
    }
    /// Connects to `r` over TLS.
    fn tls_to(mut self, r: Reached) -> Case {
        self.expect = Expect::Connects {
            reached: r,
            tls: true,
            check: None,
        };
        self
    }
    fn ok_tls(self) -> Case {
        self.tls_to(Reached::Tls)
    }
    /// Connects to `r` without TLS.
    fn ok(mut self, r: Reached) -> Case {
        self.expect = Expect::Connects {
            reached: r,
            tls: false,
            check: None,
        };
        self
    }
    fn refused(mut self, causes: &[Cause]) -> Case {
        let mut c = causes.to_vec();
        c.sort();
        self.expect = Expect::Refuses(c);
        self
    }
}

fn t(id: &'static str, cert: ServerCert, conninfo: &'static str) -> Case {
    Case::new(id, Some(cert), conninfo)
}

fn p(id: &'static str, conninfo: &'static str) -> Case {
    Case::new(id, None, conninfo)
}

/// The connection cases (TLS first, grouped by the server's certificate).
pub fn cases() -> Vec<Case> {
    use Reached::{Primary, Standby};
    let pki = Src::Pki;
    let mut v = vec![
        // ---- the docs' self-signed server certificate, given to the client as its root
        t("ss-require", DocsSelfSigned, "host=localhost port={t} {u} sslmode=require").ok_tls(),
        t("ss-prefer-default", DocsSelfSigned, "host=localhost port={t} {u}").ok_tls()
            .note("prefer is the default; no certificate is checked"),
        t("ss-allow", DocsSelfSigned, "host=localhost port={t} {u} sslmode=allow").ok_tls()
            .note("plain first, refused by pg_hba, then TLS"),
        t("ss-disable", DocsSelfSigned, "host=localhost port={t} {u} sslmode=disable")
            .refused(&[HbaNoEncryption]),
        t("ss-verify-ca-own", DocsSelfSigned, "host=localhost port={t} {u} sslmode=verify-ca sslrootcert={pki}/ss.crt").ok_tls(),
        t("ss-verify-full-own", DocsSelfSigned, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/ss.crt").ok_tls()
            .note("the docs' recipe: a self-signed CA certificate as its own root"),
        t("ss-verify-full-ip", DocsSelfSigned, "host=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/ss.crt")
            .refused(&[HostMismatch]),
        t("ss-verify-ca-other-root", DocsSelfSigned, "host=localhost port={t} {u} sslmode=verify-ca sslrootcert={pki}/root.crt")
            .refused(&[CertVerifyFailed, SelfSigned]),
        t("ss-require-root-given", DocsSelfSigned, "host=localhost port={t} {u} sslmode=require sslrootcert={pki}/root.crt")
            .refused(&[CertVerifyFailed, SelfSigned])
            .note("require with a root file that exists verifies like verify-ca"),
        t("ss-require-root-absent", DocsSelfSigned, "host=localhost port={t} {u} sslmode=require sslrootcert={pki}/no-such.crt").ok_tls()
            .note("a root file that does not exist is ignored under require"),
        t("ss-verify-full-no-root", DocsSelfSigned, "host=localhost port={t} {u} sslmode=verify-full")
            .refused(&[RootCertMissing]),
        t("ss-verify-full-home-root", DocsSelfSigned, "host=localhost port={t} {u} sslmode=verify-full")
            .file("{home}/.postgresql/root.crt", pki("ss.crt"), 0o644).ok_tls()
            .note("~/.postgresql/root.crt is the default root"),
        t("ss-prefer-home-root-other", DocsSelfSigned, "host=localhost port={t} {u}")
            .file("{home}/.postgresql/root.crt", pki("other-root.crt"), 0o644)
            .refused(&[CertVerifyFailed, HbaNoEncryption, SelfSigned])
            .note("any sslmode verifies when a root file exists; prefer then falls back to plain"),
        t("ss-env-root", DocsSelfSigned, "host=localhost port={t} {u}")
            .env("PGSSLMODE", "verify-full").env("PGSSLROOTCERT", "{pki}/ss.crt").ok_tls(),
        t("ss-san-verify-full-ip", SelfSignedSan, "host=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/ss-san.crt").ok_tls(),
        // ---- CA-signed version-1 server certificate (x509 -req without extensions)
        t("v1-require", V1, "host=localhost port={t} {u} sslmode=require").ok_tls(),
        t("v1-verify-ca", V1, "host=localhost port={t} {u} sslmode=verify-ca sslrootcert={pki}/root.crt").ok_tls(),
        t("v1-verify-full", V1, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls()
            .note("the docs' CA-signed recipe: an X.509 v1 leaf"),
        t("v1-verify-full-ip", V1, "host=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .refused(&[HostMismatch]),
        t("v1-verify-ca-ip", V1, "host=127.0.0.1 port={t} {u} sslmode=verify-ca sslrootcert={pki}/root.crt").ok_tls(),
        t("v1-other-root", V1, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/other-root.crt")
            .refused(&[CertVerifyFailed, UnknownIssuer]),
        t("v1-both-roots", V1, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/both-roots.crt").ok_tls(),
        t("v1-hostaddr", V1, "host=localhost hostaddr=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls()
            .note("the name checked is host's, the address hostaddr's"),
        t("v1-hostaddr-other-name", V1, "host=db.csdchar.test hostaddr=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .refused(&[HostMismatch]),
        t("v1-hostaddr-verify-ca", V1, "host=db.csdchar.test hostaddr=127.0.0.1 port={t} {u} sslmode=verify-ca sslrootcert={pki}/root.crt").ok_tls(),
        t("v1-leaf-as-root", V1, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/v1.crt")
            .refused(&[CertVerifyFailed, UnknownIssuer])
            .note("a leaf is no trust anchor for OpenSSL without partial chains"),
        t("v1ip-verify-full-ip", V1Ip, "host=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls()
            .note("an IP address in the CN matches as text"),
        t("v1ip-verify-full-name", V1Ip, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .refused(&[HostMismatch]),
        // ---- the docs' chain: root -> intermediate -> v1 leaf
        t("chain-verify-full", Chain, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls()
            .note("the server sends leaf + intermediate, the client has the root"),
        t("chain-intermediate-as-root", Chain, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/intermediate.crt")
            .refused(&[CertVerifyFailed, UnknownIssuer]),
        t("chain-root-crl", Chain, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt sslcrl={pki}/root.crl")
            .refused(&[CertVerifyFailed, CrlMissing])
            .note("libpq checks CRLs for the whole chain: the intermediate has none"),
        t("chainleaf-verify-full", ChainLeafOnly, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .refused(&[CertVerifyFailed, UnknownIssuer]),
        t("chainleaf-root-and-intermediate", ChainLeafOnly, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root+intermediate.crt").ok_tls(),
        t("chainleaf-require", ChainLeafOnly, "host=localhost port={t} {u} sslmode=require").ok_tls(),
        // ---- v3 with SANs DNS:localhost IP:127.0.0.1 IP:::1
        t("v3san-localhost", V3San, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls(),
        t("v3san-ipv4", V3San, "host=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls(),
        t("v3san-ipv6", V3San, "host=::1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls(),
        t("v3san-other-name", V3San, "host=db.csdchar.test hostaddr=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .refused(&[HostMismatch]),
        t("v3san-leaf-as-root", V3San, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/v3san.crt")
            .refused(&[CertVerifyFailed, UnknownIssuer]),
        t("v3san-uri", V3San, "postgresql://postgres@localhost:{t}/postgres?sslmode=verify-full&sslrootcert={pki}/root.crt").ok_tls(),
        // ---- v3 without SAN: the CN
        t("cnonly-localhost", CnOnly, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls(),
        t("cnonly-ip", CnOnly, "host=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .refused(&[HostMismatch]),
        // ---- SAN DNS:localhost and no CN
        t("sanonly-localhost", SanOnly, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls(),
        t("sanonly-ip", SanOnly, "host=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .refused(&[HostMismatch]),
        // ---- SAN DNS:localhost, CN=127.0.0.1: no SAN of the IP kind, so the CN
        t("sandns-cnip-localhost", SanDnsCnIp, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls(),
        t("sandns-cnip-ip", SanDnsCnIp, "host=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls()
            .note("no IP SAN: libpq falls back to the CN for an IP host"),
        // ---- SAN IP:127.0.0.1, CN=db.csdchar.test: no SAN of the DNS kind, so the CN
        t("ipsan-ip", IpSan, "host=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls(),
        t("ipsan-localhost", IpSan, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .refused(&[HostMismatch]),
        t("ipsan-cn-name", IpSan, "host=db.csdchar.test hostaddr=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls()
            .note("no DNS SAN: libpq falls back to the CN for a name"),
        t("ipsan-ipv6", IpSan, "host=::1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .refused(&[HostMismatch]),
        // ---- wildcards
        t("wild-one-label", Wildcard, "host=db.csdchar.test hostaddr=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls(),
        t("wild-upper-case", Wildcard, "host=DB.CSDCHAR.TEST hostaddr=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls(),
        t("wild-two-labels", Wildcard, "host=a.b.csdchar.test hostaddr=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .refused(&[HostMismatch]),
        t("wild-bare-domain", Wildcard, "host=csdchar.test hostaddr=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .refused(&[HostMismatch]),
        t("wildcn-one-label", WildcardCn, "host=db.csdchar.test hostaddr=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls(),
        t("wildcn-bare-domain", WildcardCn, "host=csdchar.test hostaddr=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .refused(&[HostMismatch]),
        t("multi-none-match", Multi, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .refused(&[HostMismatch]).note("the message counts the other names"),
        t("multi-second", Multi, "host=db2.csdchar.test hostaddr=127.0.0.1 port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls(),
        // ---- validity
        t("expired-verify-ca", ExpiredLeaf, "host=localhost port={t} {u} sslmode=verify-ca sslrootcert={pki}/root.crt")
            .refused(&[CertVerifyFailed, Expired]),
        t("expired-require", ExpiredLeaf, "host=localhost port={t} {u} sslmode=require").ok_tls(),
        t("expired-require-root-given", ExpiredLeaf, "host=localhost port={t} {u} sslmode=require sslrootcert={pki}/root.crt")
            .refused(&[CertVerifyFailed, Expired]),
        t("notyet-verify-full", FutureLeaf, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .refused(&[CertVerifyFailed, NotYetValid]),
        // ---- revocation
        t("revoked-no-crl", RevokedLeaf, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").ok_tls(),
        t("revoked-crl-file", RevokedLeaf, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt sslcrl={pki}/root.crl")
            .refused(&[CertVerifyFailed, Revoked]),
        t("revoked-crl-v1", RevokedLeaf, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt sslcrl={pki}/root-v1.crl")
            .refused(&[CertVerifyFailed, Revoked]).note("a version-1 CRL (openssl ca -gencrl without crlnumber)"),
        t("revoked-crl-dir", RevokedLeaf, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt sslcrldir={pki}/crldir")
            .refused(&[CertVerifyFailed, Revoked]).note("openssl rehash layout (HASH.r0)"),
        t("revoked-crl-dir-unhashed", RevokedLeaf, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt sslcrldir={pki}/crldir-unhashed")
            .refused(&[CertVerifyFailed, CrlMissing]).note("a directory OpenSSL finds no HASH.rN in: CRL checking on, no CRL"),
        t("revoked-crl-der", RevokedLeaf, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt sslcrl={pki}/root.crl.der").ok_tls()
            .note("libpq loads CRL files as PEM; one it cannot load is silently ignored"),
        t("revoked-crl-garbage", RevokedLeaf, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt sslcrl={pki}/garbage.crl").ok_tls(),
        t("revoked-crl-absent", RevokedLeaf, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt sslcrl={pki}/no-such.crl").ok_tls(),
        t("revoked-home-crl", RevokedLeaf, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .file("{home}/.postgresql/root.crl", pki("root.crl"), 0o644).refused(&[CertVerifyFailed, Revoked])
            .note("~/.postgresql/root.crl is the default CRL"),
        t("revoked-env-crl", RevokedLeaf, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .env("PGSSLCRL", "{pki}/root.crl").refused(&[CertVerifyFailed, Revoked]),
        t("revoked-env-crldir", RevokedLeaf, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt")
            .env("PGSSLCRLDIR", "{pki}/crldir").refused(&[CertVerifyFailed, Revoked]),
        t("revoked-require-crl", RevokedLeaf, "host=localhost port={t} {u} sslmode=require sslcrl={pki}/root.crl").ok_tls()
            .note("no root file: nothing verified, the CRL unused"),
        t("goodca-crl-file", GoodCa, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt sslcrl={pki}/root.crl").ok_tls(),
        t("goodca-crl-dir-absent", GoodCa, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt sslcrldir={pki}/no-such-dir")
            .refused(&[CertVerifyFailed, CrlMissing]).note("a CRL directory that does not exist still turns CRL checking on"),
        t("goodca-crl-dir", GoodCa, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt sslcrldir={pki}/crldir").ok_tls(),
        // ---- client certificates (certdb: pg_hba `cert`, the server's CA is client-root)
        t("client-pem", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client.crt sslkey={pki}/client.key").nopw().ok_tls(),
        t("client-none", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt").nopw()
            .refused(&[ClientCertRequired]),
        t("client-home-default", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt").nopw()
            .file("{home}/.postgresql/postgresql.crt", pki("client.crt"), 0o644)
            .file("{home}/.postgresql/postgresql.key", pki("client.key"), 0o600).ok_tls(),
        t("client-env", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt").nopw()
            .env("PGSSLCERT", "{pki}/client.crt").env("PGSSLKEY", "{pki}/client.key").ok_tls(),
        t("client-cert-der", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client.crt.der sslkey={pki}/client.key").nopw()
            .refused(&[CertUnreadable]),
        t("client-key-der", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client.crt sslkey={pki}/client.key.der").nopw().ok_tls()
            .note("libpq tries the key as PEM, then as DER"),
        t("client-key-pkcs1", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client.crt sslkey={pki}/client-pkcs1.key").nopw().ok_tls(),
        t("client-key-enc-pw", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client.crt sslkey={pki}/client-enc.key sslpassword=key-pw-9").nopw().ok_tls(),
        t("client-key-enc-no-pw", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client.crt sslkey={pki}/client-enc.key").nopw()
            .refused(&[KeyUnreadable]).note("no terminal to ask on"),
        t("client-key-enc-wrong-pw", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client.crt sslkey={pki}/client-enc.key sslpassword=wrong").nopw()
            .refused(&[KeyUnreadable]),
        t("client-key-enc-pkcs1-pw", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client.crt sslkey={pki}/client-enc-pkcs1.key sslpassword=key-pw-9").nopw().ok_tls(),
        t("client-key-enc-der-pw", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client.crt sslkey={pki}/client-enc.key.der sslpassword=key-pw-9").nopw()
            .refused(&[KeyUnreadable]).note("libpq's DER fallback reads no encrypted PKCS#8"),
        t("client-key-absent", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client.crt sslkey={pki}/no-such.key").nopw()
            .refused(&[KeyMissing]),
        t("client-cert-absent", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/no-such.crt sslkey={pki}/client.key").nopw()
            .refused(&[ClientCertRequired]).note("a certificate file that does not exist is not sent"),
        t("client-cert-absent-unneeded", V3San, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/no-such.crt sslkey={pki}/no-such.key").ok_tls()
            .note("files named but not needed: libpq goes on"),
        t("client-key-0644", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client.crt sslkey={home}/k.key").nopw()
            .file("{home}/k.key", pki("client.key"), 0o644).refused(&[KeyPermissions]),
        t("client-key-0640-root", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client.crt sslkey={home}/k.key").nopw()
            .file("{home}/k.key", pki("client.key"), 0o640).ok_tls()
            .note("root-owned keys may be 0640"),
        t("client-key-0640-other-owner", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client.crt sslkey={home}/k.key").nopw()
            .file_of_postgres("{home}/k.key", pki("client.key"), 0o640).refused(&[KeyPermissions]),
        t("client-ec", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client-ec.crt sslkey={pki}/client-ec.key").nopw().ok_tls(),
        t("client-other-user", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client-alice.crt sslkey={pki}/client-alice.key").nopw()
            .refused(&[CertUserMismatch]),
        t("client-unknown-ca", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client-other.crt sslkey={pki}/client-other.key").nopw()
            .refused(&[ClientCertRejected]),
        t("client-one-file", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={pki}/client-both.pem sslkey={pki}/client-both.pem").nopw().ok_tls(),
        t("client-require", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=require sslcert={pki}/client.crt sslkey={pki}/client.key").nopw().ok_tls(),
        t("client-prefer-bad-key-fallback", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=prefer sslcert={pki}/client.crt sslkey={home}/k.key").nopw()
            .file("{home}/k.key", pki("client.key"), 0o644).refused(&[HbaNoEncryption, KeyPermissions])
            .note("prefer: the TLS failure, then the plain refusal, both reported"),
        t("client-allow-bad-key", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=allow sslcert={pki}/client.crt sslkey={home}/k.key").nopw()
            .file("{home}/k.key", pki("client.key"), 0o644).refused(&[HbaNoEncryption, KeyPermissions]),
        // ---- protocol bounds, SNI, compression, other TLS keys
        t("tls13-min", V3San, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt ssl_min_protocol_version=TLSv1.3").ok_tls()
            .check("select version from pg_stat_ssl where pid = pg_backend_pid()", "TLSv1.3"),
        t("tls12-max", V3San, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt ssl_max_protocol_version=TLSv1.2").ok_tls()
            .check("select version from pg_stat_ssl where pid = pg_backend_pid()", "TLSv1.2"),
        t("tls-range-empty", V3San, "host=localhost port={t} {u} sslmode=require ssl_min_protocol_version=TLSv1.3 ssl_max_protocol_version=TLSv1.2")
            .refused(&[ProtocolRange]),
        t("tls-min-bad", V3San, "host=localhost port={t} {u} sslmode=require ssl_min_protocol_version=TLSv1.4")
            .refused(&[BadValue]),
        t("tls-max-below-default-min", V3San, "host=localhost port={t} {u} sslmode=require ssl_max_protocol_version=TLSv1.1")
            .refused(&[ProtocolRange]).note("libpq's default minimum is TLSv1.2"),
        t("tls-max-below-server", V3San, "host=localhost port={t} {u} sslmode=require ssl_min_protocol_version=TLSv1 ssl_max_protocol_version=TLSv1.1")
            .refused(&[ProtocolVersion]).note("the server's minimum is TLSv1.2"),
        t("client-one-file-0644", V3San, "host=localhost port={t} user=postgres dbname=certdb sslmode=verify-full sslrootcert={pki}/root.crt sslcert={home}/both.pem sslkey={home}/both.pem").nopw()
            .file("{home}/both.pem", pki("client-both.pem"), 0o644).refused(&[KeyPermissions])
            .note("one file for both: the key's permission rule applies to it"),
        t("tls-env-bounds", V3San, "host=localhost port={t} {u} sslmode=require").env("PGSSLMINPROTOCOLVERSION", "TLSv1.2").env("PGSSLMAXPROTOCOLVERSION", "TLSv1.2").ok_tls()
            .check("select version from pg_stat_ssl where pid = pg_backend_pid()", "TLSv1.2"),
        t("sni-off", V3San, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt sslsni=0").ok_tls(),
        t("sni-env-off", V3San, "host=localhost port={t} {u} sslmode=verify-full sslrootcert={pki}/root.crt").env("PGSSLSNI", "0").ok_tls(),
        t("compression-on", V3San, "host=localhost port={t} {u} sslmode=require sslcompression=1").ok_tls().note("accepted and ignored"),
        t("compression-env", V3San, "host=localhost port={t} {u} sslmode=require").env("PGSSLCOMPRESSION", "1").ok_tls(),
        t("sslmode-bad", V3San, "host=localhost port={t} {u} sslmode=bogus").refused(&[BadValue]),
        t("env-sslmode-verify-full", V3San, "host=localhost port={t} {u} sslrootcert={pki}/root.crt").env("PGSSLMODE", "verify-full").ok_tls(),
        t("channel-binding-tls", V3San, "host=localhost port={t} {u} sslmode=require channel_binding=require").ok_tls(),
        t("channel-binding-env", V3San, "host=localhost port={t} {u} sslmode=require").env("PGCHANNELBINDING", "require").ok_tls(),
        t("sslcertmode-16", V3San, "host=localhost port={t} {u} sslmode=require sslcertmode=disable")
            .refused(&[UnknownOption]).since(16).newer_ok(Reached::Tls, true).note("16: sslcertmode"),
        t("rootcert-system-16", V3San, "host=localhost port={t} {u} sslmode=verify-full sslrootcert=system")
            .refused(&[RootCertMissing]).since(16).newer_refused(&[CertVerifyFailed])
            .note("15 reads a file named system; 16 verifies against the system store, which does not know this root"),
        t("require-auth-16", V3San, "host=localhost port={t} {u} sslmode=require require_auth=scram-sha-256")
            .refused(&[UnknownOption]).since(16).newer_ok(Reached::Tls, true),
        t("require-auth-other-16", V3San, "host=localhost port={t} {u} sslmode=require require_auth=md5")
            .refused(&[UnknownOption]).since(16).newer_refused(&[AuthNotAllowed]),
        t("sslnegotiation-17", V3San, "host=localhost port={t} {u} sslmode=require sslnegotiation=direct")
            .refused(&[UnknownOption]).since(17).newer_refused(&[TlsClosedByServer])
            .note("17: direct TLS, which a 15 server does not speak"),
        // ---- the plain primary and its standby: TLS keys against a server without TLS
        p("plain-require", "host=127.0.0.1 port={p} {u} sslmode=require").refused(&[ServerNoTls]),
        p("plain-verify-full", "host=127.0.0.1 port={p} {u} sslmode=verify-full sslrootcert={pki}/root.crt").refused(&[ServerNoTls]),
        p("plain-prefer", "host=127.0.0.1 port={p} {u} sslmode=prefer").ok(Primary),
        p("plain-allow", "host=127.0.0.1 port={p} {u} sslmode=allow").ok(Primary),
        p("plain-disable", "host=127.0.0.1 port={p} {u} sslmode=disable").ok(Primary),
        p("plain-requiressl", "host=127.0.0.1 port={p} {u} requiressl=1").refused(&[ServerNoTls])
            .note("requiressl=1 is sslmode=require (deprecated, not in 16)"),
        p("plain-requiressl-0", "host=127.0.0.1 port={p} {u} requiressl=0").ok(Primary),
        p("plain-env-requiressl", "host=127.0.0.1 port={p} {u}")
            .env("PGREQUIRESSL", "1")
            .refused(&[ServerNoTls])
            .note("15 still reads PGREQUIRESSL, though PQconndefaults does not list it"),
        p("plain-env-require", "host=127.0.0.1 port={p} {u}").env("PGSSLMODE", "require").refused(&[ServerNoTls]),
        p("plain-channel-binding", "host=127.0.0.1 port={p} {u} channel_binding=require").refused(&[ChannelBinding]),
        // ---- hostaddr
        p("hostaddr-skips-lookup", "host=no-such-host.invalid hostaddr=127.0.0.1 port={p} {u} sslmode=disable").ok(Primary)
            .note("the issue's case: host is not looked up"),
        p("hostaddr-only", "hostaddr=127.0.0.1 port={p} {u}").ok(Primary),
        p("hostaddr-ipv6", "hostaddr=::1 port={p} {u}").ok(Primary),
        p("hostaddr-bad", "hostaddr=not-an-address port={p} {u}").refused(&[BadHostaddr]),
        p("host-lookup-fails", "host=no-such-host.invalid port={p} {u}").refused(&[HostLookup]),
        p("hostaddr-list", "host=a.invalid,b.invalid hostaddr=127.0.0.1,127.0.0.1 port={dead},{p} {u}").ok(Primary),
        p("env-hostaddr", "host=no-such-host.invalid port={p} {u}").env("PGHOSTADDR", "127.0.0.1").ok(Primary),
        // ---- host and port lists, target_session_attrs
        p("list-any", "host=127.0.0.1,127.0.0.1 port={s},{p} {u}").ok(Standby).note("any: the first that answers"),
        p("list-read-write", "host=127.0.0.1,127.0.0.1 port={s},{p} {u} target_session_attrs=read-write").ok(Primary),
        p("list-read-only", "host=127.0.0.1,127.0.0.1 port={p},{s} {u} target_session_attrs=read-only").ok(Standby),
        p("list-primary", "host=127.0.0.1,127.0.0.1 port={s},{p} {u} target_session_attrs=primary").ok(Primary),
        p("list-standby", "host=127.0.0.1,127.0.0.1 port={p},{s} {u} target_session_attrs=standby").ok(Standby),
        p("list-prefer-standby", "host=127.0.0.1,127.0.0.1 port={p},{s} {u} target_session_attrs=prefer-standby").ok(Standby),
        p("list-prefer-standby-none", "host=127.0.0.1,127.0.0.1 port={p},{p} {u} target_session_attrs=prefer-standby").ok(Primary)
            .note("no standby: a second pass takes any"),
        p("list-standby-none", "host=127.0.0.1,127.0.0.1 port={p},{p} {u} target_session_attrs=standby").refused(&[NotInHotStandby]),
        p("list-primary-none", "host=127.0.0.1,127.0.0.1 port={s},{s} {u} target_session_attrs=primary").refused(&[InHotStandby]),
        p("read-write-standby", "host=127.0.0.1 port={s} {u} target_session_attrs=read-write").refused(&[SessionReadOnly]),
        p("read-only-primary", "host=127.0.0.1 port={p} {u} target_session_attrs=read-only").refused(&[SessionNotReadOnly]),
        p("read-only-by-options", "host=127.0.0.1 port={p} {u} target_session_attrs=read-only options='-c default_transaction_read_only=on'").ok(Primary)
            .note("read-only is the session's, not the server's role"),
        p("standby-by-options", "host=127.0.0.1 port={p} {u} target_session_attrs=standby options='-c default_transaction_read_only=on'").refused(&[NotInHotStandby]),
        p("tsa-bad", "host=127.0.0.1 port={p} {u} target_session_attrs=bogus").refused(&[BadValue]),
        p("tsa-env", "host=127.0.0.1,127.0.0.1 port={s},{p} {u}").env("PGTARGETSESSIONATTRS", "read-write").ok(Primary),
        p("list-dead-first", "host=127.0.0.1,127.0.0.1 port={dead},{p} {u}").ok(Primary),
        p("list-all-dead", "host=127.0.0.1,127.0.0.1 port={dead},{dead} {u}").refused(&[ConnectionRefused]),
        p("list-count-mismatch", "host=127.0.0.1,127.0.0.1,127.0.0.1 port={p},{s} {u}").refused(&[HostPortCount]),
        p("list-one-port", "host=127.0.0.1,localhost port={p} {u}").ok(Primary),
        p("list-empty-host", "host=,127.0.0.1 port={p} {u}").ok(Primary).note("an empty host is the default socket directory"),
        p("list-uri", "postgresql://postgres@127.0.0.1:{s},127.0.0.1:{p}/postgres?target_session_attrs=read-write").ok(Primary),
        p("load-balance-16", "host=127.0.0.1,127.0.0.1 port={p},{p} {u} load_balance_hosts=random").refused(&[UnknownOption])
            .since(16).newer_ok(Primary, false).note("the order random: both hosts the primary, so the outcome is not"),
        p("load-balance-disable-16", "host=127.0.0.1,127.0.0.1 port={s},{p} {u} load_balance_hosts=disable").refused(&[UnknownOption])
            .since(16).newer_ok(Standby, false),
        p("load-balance-env-16", "host=127.0.0.1,127.0.0.1 port={s},{p} {u}").env("PGLOADBALANCEHOSTS", "bogus").ok(Standby)
            .since(16).newer_refused(&[BadValue]).note("15 does not read PGLOADBALANCEHOSTS; 16 refuses a bad value"),
        // ---- Unix sockets, URIs, peers, GSSAPI
        p("socket", "host={psock} port={p} {u}").ok(Primary),
        p("socket-uri", "postgresql:///postgres?host={psock}&port={p}&user=postgres").ok(Primary),
        p("uri-hostaddr", "postgresql://postgres@no-such-host.invalid:{p}/postgres?hostaddr=127.0.0.1").ok(Primary),
        p("uri-percent", "postgresql://postgres@%31%32%37.0.0.1:{p}/postgres").ok(Primary),
        p("env-host-port", "{u}").env("PGHOST", "127.0.0.1").env("PGPORT", "{p}").ok(Primary),
        p("requirepeer-ok", "host={psock} port={p} {u} requirepeer=postgres").ok(Primary),
        p("requirepeer-other", "host={psock} port={p} {u} requirepeer=nobody").refused(&[RequirePeer]),
        p("requirepeer-env", "host={psock} port={p} {u}").env("PGREQUIREPEER", "nobody").refused(&[RequirePeer]),
        p("gssenc-require", "host=127.0.0.1 port={p} {u} gssencmode=require").refused(&[GssEncRequired]),
        p("gssenc-env", "host=127.0.0.1 port={p} {u}").env("PGGSSENCMODE", "require").refused(&[GssEncRequired]),
        p("gssenc-disable", "host=127.0.0.1 port={p} {u} gssencmode=disable").ok(Primary),
        p("krbsrvname", "host=127.0.0.1 port={p} {u} krbsrvname=other gsslib=gssapi").ok(Primary),
        p("krbsrvname-env", "host=127.0.0.1 port={p} {u}").env("PGKRBSRVNAME", "other").env("PGGSSLIB", "gssapi").ok(Primary),
        // ---- connect_timeout
        p("timeout", "host=127.0.0.1 port={hole} {u} connect_timeout=2").refused(&[Timeout]),
        p("timeout-next-host", "host=127.0.0.1,127.0.0.1 port={hole},{p} {u} connect_timeout=2").ok(Primary)
            .note("the timeout moves on to the next host"),
        p("timeout-env", "host=127.0.0.1 port={hole} {u}").env("PGCONNECT_TIMEOUT", "2").refused(&[Timeout]),
        p("timeout-bad", "host=127.0.0.1 port={p} {u} connect_timeout=abc").refused(&[BadValue]),
        // ---- passwords and pass files
        p("no-password", "host=127.0.0.1 port={p} {u}").nopw().refused(&[NoPassword]),
        p("wrong-password", "host=127.0.0.1 port={p} {u} password=wrong").nopw().refused(&[PasswordFailed]),
        p("password-in-string", "host=127.0.0.1 port={p} {u} password={pw}").nopw().ok(Primary),
        p("pgpass-home", "host=127.0.0.1 port={p} {u}").nopw()
            .file("{home}/.pgpass", Src::Text("127.0.0.1:{p}:postgres:postgres:{pw}\n"), 0o600).ok(Primary),
        p("pgpass-home-0644", "host=127.0.0.1 port={p} {u}").nopw()
            .file("{home}/.pgpass", Src::Text("127.0.0.1:{p}:postgres:postgres:{pw}\n"), 0o644)
            .refused(&[NoPassword, PassfilePermissions]).note("ignored with a warning"),
        p("pgpass-wildcards", "host=127.0.0.1 port={p} {u}").nopw()
            .file("{home}/.pgpass", Src::Text("# comment\n*:*:*:postgres:{pw}\n"), 0o600).ok(Primary),
        p("pgpass-other-port", "host=127.0.0.1 port={p} {u}").nopw()
            .file("{home}/.pgpass", Src::Text("127.0.0.1:1:*:*:{pw}\n"), 0o600).refused(&[NoPassword]),
        p("pgpass-first-match", "host=127.0.0.1 port={p} {u}").nopw()
            .file("{home}/.pgpass", Src::Text("127.0.0.1:{p}:*:*:wrong\n*:*:*:*:{pw}\n"), 0o600).refused(&[PasswordFailed])
            .note("the first matching line wins"),
        p("pgpass-escaped", "host=127.0.0.1 port={p} {u}").nopw()
            .file("{home}/.pgpass", Src::Text("127.0.0.1:{p}:postgres:postgres:{pw}\\:x\n"), 0o600).refused(&[PasswordFailed])
            .note("\\: is a colon in the password"),
        p("passfile-key", "host=127.0.0.1 port={p} {u} passfile={home}/pw").nopw()
            .file("{home}/pw", Src::Text("*:*:*:*:{pw}\n"), 0o600).ok(Primary),
        p("passfile-env", "host=127.0.0.1 port={p} {u}").nopw().env("PGPASSFILE", "{home}/pw")
            .file("{home}/pw", Src::Text("*:*:*:*:{pw}\n"), 0o600).ok(Primary),
        p("passfile-0600-other-owner", "host=127.0.0.1 port={p} {u} passfile={home}/pw").nopw()
            .file_of_postgres("{home}/pw", Src::Text("*:*:*:*:{pw}\n"), 0o644)
            .refused(&[NoPassword, PassfilePermissions]),
        p("password-beats-passfile", "host=127.0.0.1 port={p} {u} password={pw}").nopw()
            .file("{home}/.pgpass", Src::Text("*:*:*:*:wrong\n"), 0o600).ok(Primary),
        p("pgpass-by-hostaddr", "hostaddr=127.0.0.1 port={p} {u}").nopw()
            .file("{home}/.pgpass", Src::Text("127.0.0.1:{p}:*:*:{pw}\n"), 0o600).ok(Primary)
            .note("without host, the line is matched on hostaddr"),
        p("pgpass-by-host-not-hostaddr", "host=db.csdchar.test hostaddr=127.0.0.1 port={p} {u}").nopw()
            .file("{home}/.pgpass", Src::Text("db.csdchar.test:{p}:*:*:{pw}\n"), 0o600).ok(Primary),
        // ---- services
        p("service", "service=s1").nopw().env("PGSERVICEFILE", "{home}/svc.conf")
            .file("{home}/svc.conf", Src::Text("[s1]\nhost=127.0.0.1\nport={p}\nuser=postgres\ndbname=postgres\npassword={pw}\n"), 0o600).ok(Primary),
        p("service-env", "").nopw().env("PGSERVICE", "s1").env("PGSERVICEFILE", "{home}/svc.conf")
            .file("{home}/svc.conf", Src::Text("[s1]\nhost=127.0.0.1\nport={p}\nuser=postgres\ndbname=postgres\npassword={pw}\n"), 0o600).ok(Primary),
        p("service-home", "service=s1").nopw()
            .file("{home}/.pg_service.conf", Src::Text("[s1]\nhost=127.0.0.1\nport={p}\nuser=postgres\ndbname=postgres\npassword={pw}\n"), 0o600).ok(Primary),
        p("service-sysconfdir", "service=s1").nopw().env("PGSYSCONFDIR", "{home}/etc")
            .file("{home}/etc/pg_service.conf", Src::Text("[s1]\nhost=127.0.0.1\nport={p}\nuser=postgres\ndbname=postgres\npassword={pw}\n"), 0o644).ok(Primary),
        p("service-home-before-sysconf", "service=s1").nopw().env("PGSYSCONFDIR", "{home}/etc")
            .file("{home}/.pg_service.conf", Src::Text("[s1]\nhost=127.0.0.1\nport={s}\nuser=postgres\ndbname=postgres\npassword={pw}\n"), 0o600)
            .file("{home}/etc/pg_service.conf", Src::Text("[s1]\nhost=127.0.0.1\nport={p}\nuser=postgres\ndbname=postgres\npassword={pw}\n"), 0o644).ok(Standby),
        p("service-missing", "service=nosuch").nopw().env("PGSERVICEFILE", "{home}/svc.conf")
            .file("{home}/svc.conf", Src::Text("[s1]\nhost=127.0.0.1\n"), 0o600).refused(&[ServiceNotFound]),
        p("service-file-absent", "service=s1").nopw().env("PGSERVICEFILE", "{home}/no-such.conf")
            .refused(&[ServiceFileMissing]),
        p("service-overridden", "service=s1 port={s}").nopw().env("PGSERVICEFILE", "{home}/svc.conf")
            .file("{home}/svc.conf", Src::Text("[s1]\nhost=127.0.0.1\nport={p}\nuser=postgres\ndbname=postgres\npassword={pw}\n"), 0o600).ok(Standby)
            .note("the string's keys beat the service's"),
        p("service-syntax", "service=s1").nopw().env("PGSERVICEFILE", "{home}/svc.conf")
            .file("{home}/svc.conf", Src::Text("[s1]\nhost 127.0.0.1\n"), 0o600).refused(&[ServiceFileSyntax]),
        p("service-nested", "service=s1").nopw().env("PGSERVICEFILE", "{home}/svc.conf")
            .file("{home}/svc.conf", Src::Text("[s1]\nservice=s2\n[s2]\nhost=127.0.0.1\n"), 0o600).refused(&[ServiceFileSyntax]),
        p("service-uri", "postgresql://?service=s1").nopw().env("PGSERVICEFILE", "{home}/svc.conf")
            .file("{home}/svc.conf", Src::Text("[s1]\nhost=127.0.0.1\nport={p}\nuser=postgres\ndbname=postgres\npassword={pw}\n"), 0o600).ok(Primary),
        p("service-sslmode", "service=s1").nopw().env("PGSERVICEFILE", "{home}/svc.conf")
            .file("{home}/svc.conf", Src::Text("[s1]\nhost=127.0.0.1\nport={p}\nuser=postgres\ndbname=postgres\nsslmode=require\n"), 0o600).refused(&[ServerNoTls]),
        p("service-env-loses", "service=s1").nopw().env("PGPORT", "{s}").env("PGSERVICEFILE", "{home}/svc.conf")
            .file("{home}/svc.conf", Src::Text("[s1]\nhost=127.0.0.1\nport={p}\nuser=postgres\ndbname=postgres\npassword={pw}\n"), 0o600).ok(Primary)
            .note("a service's keys beat PG* variables"),
        // ---- options, application_name, encodings, keepalives
        p("options", "host=127.0.0.1 port={p} {u} options='-c search_path=matrix'").ok(Primary).check("show search_path", "matrix"),
        p("options-env", "host=127.0.0.1 port={p} {u}").env("PGOPTIONS", "-c search_path=matrix").ok(Primary).check("show search_path", "matrix"),
        p("application-name", "host=127.0.0.1 port={p} {u} application_name=matrix").ok(Primary).check("show application_name", "matrix"),
        p("application-name-env", "host=127.0.0.1 port={p} {u}").env("PGAPPNAME", "matrix").ok(Primary).check("show application_name", "matrix"),
        p("application-name-beats-env", "host=127.0.0.1 port={p} {u} application_name=a").env("PGAPPNAME", "b").ok(Primary).check("show application_name", "a"),
        p("fallback-application-name", "host=127.0.0.1 port={p} {u} fallback_application_name=fb").ok(Primary)
            .note("psql gives its own fallback_application_name after the string: not observable through psql"),
        p("client-encoding", "host=127.0.0.1 port={p} {u} client_encoding=LATIN1").ok(Primary).check("show client_encoding", "LATIN1"),
        p("client-encoding-env", "host=127.0.0.1 port={p} {u}").env("PGCLIENTENCODING", "LATIN1").ok(Primary).check("show client_encoding", "LATIN1"),
        p("replication-database", "host=127.0.0.1 port={p} {u} replication=database").ok(Primary)
            .note("a logical-replication walsender runs SQL"),
        p("replication-physical", "host=127.0.0.1 port={p} {u} replication=true").refused(&[HbaNoEncryption])
            .note("pg_hba's replication lines are separate: only the socket has one here"),
        p("keepalives-off", "host=127.0.0.1 port={p} {u} keepalives=0").ok(Primary),
        p("keepalives-set", "host=127.0.0.1 port={p} {u} keepalives=1 keepalives_idle=30 keepalives_interval=5 keepalives_count=3 tcp_user_timeout=5000").ok(Primary),
        p("keepalives-bad", "host=127.0.0.1 port={p} {u} keepalives_idle=abc").refused(&[BadValue]),
        p("tcp-user-timeout-bad", "host=127.0.0.1 port={p} {u} tcp_user_timeout=x").refused(&[BadValue]),
        // ---- users, databases, the string itself
        p("dbname-other", "host=127.0.0.1 port={p} user=postgres dbname=other").ok(Primary).check("select current_database()", "other"),
        p("dbname-missing", "host=127.0.0.1 port={p} user=postgres dbname=nosuch").refused(&[DatabaseMissing]),
        p("user-missing", "host=127.0.0.1 port={p} user=nosuch dbname=postgres").refused(&[PasswordFailed]),
        p("env-user-db", "host=127.0.0.1 port={p}").env("PGUSER", "postgres").env("PGDATABASE", "other").ok(Primary).check("select current_database()", "other"),
        p("dbname-expanded-once", "dbname='host=127.0.0.1 port={p} user=postgres dbname=other'").refused(&[NoSuchSocket])
            .note("only the outer string is expanded: the inner one is a database name, the host the default socket"),
        p("dbname-uri-expanded-once", "dbname=postgresql://postgres@127.0.0.1:{p}/other").refused(&[NoSuchSocket]),
        p("quoted-values", "host='127.0.0.1' port='{p}' user=postgres dbname='postgres' application_name='a b\\'c'").ok(Primary).check("show application_name", "a b'c"),
        p("conninfo-no-equals", "host=127.0.0.1 port").refused(&[ConninfoSyntax]),
        p("conninfo-unterminated", "host=127.0.0.1 port={p} {u} application_name='x").refused(&[ConninfoSyntax]),
        p("port-bad", "host=127.0.0.1 port=abc {u}").refused(&[BadValue]),
        p("unknown-key", "host=127.0.0.1 port={p} {u} nosuchkey=1").refused(&[UnknownOption]),
        p("uri-unknown-param", "postgresql://postgres@127.0.0.1:{p}/postgres?nosuchkey=1").refused(&[UnknownOption]),
    ];
    v.sort_by_key(|c| c.cert);
    v
}

/// `s` with the placeholders filled in.
pub fn fill(s: &str, vars: &[(&str, String)]) -> String {
    let mut out = s.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}
