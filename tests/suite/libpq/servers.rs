//! Throwaway PostgreSQL servers for the matrix, run as `postgres` (initdb refuses
//! root): a TLS-only server whose certificate is switched between case groups
//! (reload, checked with `openssl s_client`), and a plain primary with a
//! streaming standby made by `pg_basebackup -R`. Stopped on drop.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use super::pki::{Pki, set_mode};

pub const BIN: &str = "/usr/lib/postgresql/15/bin";
/// The password of `postgres` on every server.
pub const PASSWORD: &str = "matrix-pw-7";

fn postgres_ids() -> (u32, u32) {
    let out = Command::new("id")
        .args(["-u", "postgres"])
        .output()
        .unwrap();
    let uid = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let out = Command::new("id")
        .args(["-g", "postgres"])
        .output()
        .unwrap();
    let gid = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    (uid, gid)
}

/// Runs BIN/`program` as postgres; panics with its output on failure.
fn as_postgres(program: &str, args: &[&str]) -> Output {
    let (uid, gid) = postgres_ids();
    let out = Command::new(Path::new(BIN).join(program))
        .args(args)
        .uid(uid)
        .gid(gid)
        .current_dir("/")
        .env("LANG", "C")
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

fn chown_postgres(p: &Path) {
    let (uid, gid) = postgres_ids();
    std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One running server.
pub struct Server {
    pub pgdata: PathBuf,
    pub port: u16,
    /// Its Unix socket directory.
    pub sock: PathBuf,
    running: bool,
}

impl Server {
    /// initdb into `root`/NAME, config `conf` appended, `hba` as pg_hba.conf.
    fn init(root: &Path, name: &str, conf: &str, hba: &str) -> Server {
        let pgdata = root.join(name);
        let sock = root.join(format!("{name}-sock"));
        for d in [&pgdata, &sock] {
            fs::create_dir_all(d).unwrap();
            chown_postgres(d);
            set_mode(d, 0o700);
        }
        as_postgres(
            "initdb",
            &[
                "-D",
                pgdata.to_str().unwrap(),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ],
        );
        let port = free_port();
        let mut s = Server {
            pgdata,
            port,
            sock,
            running: false,
        };
        s.configure(conf, hba);
        s
    }

    fn configure(&mut self, conf: &str, hba: &str) {
        let mut text = fs::read_to_string(self.pgdata.join("postgresql.conf")).unwrap();
        text.push_str(&format!(
            "\nport = {}\nlisten_addresses = '127.0.0.1,::1'\nunix_socket_directories = '{}'\n\
             fsync = off\nshared_buffers = 16MB\nmax_connections = 30\nlogging_collector = off\n{conf}\n",
            self.port,
            self.sock.display()
        ));
        fs::write(self.pgdata.join("postgresql.conf"), text).unwrap();
        fs::write(self.pgdata.join("pg_hba.conf"), hba).unwrap();
    }

    fn start(&mut self) {
        let log = self.pgdata.join("server.log");
        as_postgres(
            "pg_ctl",
            &[
                "start",
                "-w",
                "-t",
                "60",
                "-D",
                self.pgdata.to_str().unwrap(),
                "-l",
                log.to_str().unwrap(),
            ],
        );
        self.running = true;
    }

    /// `psql -At -c SQL` as postgres over the Unix socket (trust).
    pub fn sql(&self, sql: &str) -> String {
        let out = as_postgres(
            "psql",
            &[
                "-X",
                "-At",
                "-h",
                self.sock.to_str().unwrap(),
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-c",
                sql,
            ],
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.running {
            let _ = Command::new(Path::new(BIN).join("pg_ctl"))
                .args(["stop", "-m", "immediate", "-w", "-D"])
                .arg(&self.pgdata)
                .uid(postgres_ids().0)
                .gid(postgres_ids().1)
                .current_dir("/")
                .output();
        }
    }
}

/// A server certificate configuration of the TLS server: certificate file (the
/// chain the server sends) and key file, both in the PKI directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ServerCert {
    /// The docs' self-signed quick recipe (a v3 CA certificate, CN=localhost).
    DocsSelfSigned,
    /// Self-signed with SANs DNS:localhost, IP:127.0.0.1.
    SelfSignedSan,
    /// CA-signed without extensions: X.509 v1, CN=localhost.
    V1,
    /// v1 with CN=127.0.0.1.
    V1Ip,
    /// The docs' chain: v1 leaf under a v3 intermediate, the server sending both.
    Chain,
    /// The same leaf, the server sending only it.
    ChainLeafOnly,
    /// v3, CN=localhost, SANs DNS:localhost IP:127.0.0.1 IP:::1.
    V3San,
    /// v3 without SAN, CN=localhost.
    CnOnly,
    /// v3, no CN, SAN DNS:localhost.
    SanOnly,
    /// v3, CN=127.0.0.1, SAN DNS:localhost.
    SanDnsCnIp,
    /// v3, CN=db.csdchar.test, SAN IP:127.0.0.1.
    IpSan,
    /// v3, SAN DNS:*.csdchar.test.
    Wildcard,
    /// v1, CN=*.csdchar.test.
    WildcardCn,
    /// v3, three DNS SANs none of which is localhost.
    Multi,
    /// From `openssl ca`, valid 2020–2021.
    ExpiredLeaf,
    /// From `openssl ca`, valid from 2040.
    FutureLeaf,
    /// From `openssl ca`, revoked in root.crl.
    RevokedLeaf,
    /// From `openssl ca`, not revoked.
    GoodCa,
}

impl ServerCert {
    /// (certificate file, key file) in the PKI directory.
    pub fn files(self) -> (&'static str, &'static str) {
        match self {
            ServerCert::DocsSelfSigned => ("ss.crt", "ss.key"),
            ServerCert::SelfSignedSan => ("ss-san.crt", "ss-san.key"),
            ServerCert::V1 => ("v1.crt", "v1.key"),
            ServerCert::V1Ip => ("v1-ip.crt", "v1-ip.key"),
            ServerCert::Chain => ("chain.crt", "chain.key"),
            ServerCert::ChainLeafOnly => ("chain-leaf.crt", "chain-leaf.key"),
            ServerCert::V3San => ("v3san.crt", "v3san.key"),
            ServerCert::CnOnly => ("cnonly.crt", "cnonly.key"),
            ServerCert::SanOnly => ("sanonly.crt", "sanonly.key"),
            ServerCert::SanDnsCnIp => ("sandns-cnip.crt", "sandns-cnip.key"),
            ServerCert::IpSan => ("ipsan.crt", "ipsan.key"),
            ServerCert::Wildcard => ("wild.crt", "wild.key"),
            ServerCert::WildcardCn => ("wildcn.crt", "wildcn.key"),
            ServerCert::Multi => ("multi.crt", "multi.key"),
            ServerCert::ExpiredLeaf => ("expired.crt", "expired.key"),
            ServerCert::FutureLeaf => ("notyet.crt", "notyet.key"),
            ServerCert::RevokedLeaf => ("revoked.crt", "revoked.key"),
            ServerCert::GoodCa => ("good-ca.crt", "good-ca.key"),
        }
    }
}

/// The servers of one matrix run.
pub struct Servers {
    pub tls: Server,
    pub primary: Server,
    pub standby: Server,
    /// The server-readable copies of the PKI (owned by postgres).
    srv: PathBuf,
    current: Option<ServerCert>,
}

impl Servers {
    pub fn start(root: &Path, pki: &Pki) -> Servers {
        let srv = root.join("srv");
        fs::create_dir_all(&srv).unwrap();
        for e in fs::read_dir(&pki.dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                let to = srv.join(p.file_name().unwrap());
                fs::copy(&p, &to).unwrap();
                chown_postgres(&to);
                set_mode(&to, 0o600);
            }
        }
        chown_postgres(&srv);
        set_mode(&srv, 0o700);
        let (crt, key) = ServerCert::V3San.files();
        let tls_conf = format!(
            "ssl = on\nssl_cert_file = '{s}/{crt}'\nssl_key_file = '{s}/{key}'\nssl_ca_file = '{s}/client-root.crt'\n\
             password_encryption = 'scram-sha-256'\n",
            s = srv.display()
        );
        // TLS only: no host (plain) line; certdb logs in by client certificate.
        let tls_hba = "local all all trust\n\
                       hostssl certdb all 127.0.0.1/32 cert\n\
                       hostssl certdb all ::1/128 cert\n\
                       hostssl all all 127.0.0.1/32 scram-sha-256\n\
                       hostssl all all ::1/128 scram-sha-256\n";
        let mut tls = Server::init(root, "tls", &tls_conf, tls_hba);
        tls.start();
        tls.sql(&format!("ALTER ROLE postgres PASSWORD '{PASSWORD}'"));
        tls.sql("CREATE DATABASE certdb");
        tls.sql("CREATE ROLE alice LOGIN");
        let plain_hba = "local all all trust\nlocal replication all trust\n\
                         host all all 127.0.0.1/32 scram-sha-256\n\
                         host all all ::1/128 scram-sha-256\n";
        let mut primary = Server::init(
            root,
            "primary",
            "ssl = off\npassword_encryption = 'scram-sha-256'\n",
            plain_hba,
        );
        primary.start();
        primary.sql(&format!("ALTER ROLE postgres PASSWORD '{PASSWORD}'"));
        primary.sql("CREATE DATABASE other");
        let standby = Self::standby(root, &primary);
        Servers {
            tls,
            primary,
            standby,
            srv,
            current: Some(ServerCert::V3San),
        }
    }

    fn standby(root: &Path, primary: &Server) -> Server {
        let pgdata = root.join("standby");
        let sock = root.join("standby-sock");
        for d in [&pgdata, &sock] {
            fs::create_dir_all(d).unwrap();
            chown_postgres(d);
            set_mode(d, 0o700);
        }
        as_postgres(
            "pg_basebackup",
            &[
                "-D",
                pgdata.to_str().unwrap(),
                "-R",
                "-c",
                "fast",
                "-X",
                "stream",
                "-h",
                primary.sock.to_str().unwrap(),
                "-p",
                &primary.port.to_string(),
                "-U",
                "postgres",
            ],
        );
        let port = free_port();
        let mut s = Server {
            pgdata,
            port,
            sock,
            running: false,
        };
        let mut auto = fs::read_to_string(s.pgdata.join("postgresql.auto.conf")).unwrap();
        auto.push_str(&format!(
            "port = {}\nunix_socket_directories = '{}'\n",
            s.port,
            s.sock.display()
        ));
        fs::write(s.pgdata.join("postgresql.auto.conf"), auto).unwrap();
        s.start();
        assert_eq!(
            s.sql("SELECT pg_is_in_recovery()"),
            "t",
            "the standby is one"
        );
        s
    }

    /// Makes the TLS server present `cert` to new connections.
    pub fn use_cert(&mut self, cert: ServerCert) {
        if self.current == Some(cert) {
            return;
        }
        let (crt, key) = cert.files();
        let (crt, key) = (self.srv.join(crt), self.srv.join(key));
        self.tls.sql(&format!(
            "ALTER SYSTEM SET ssl_cert_file = '{}'",
            crt.display()
        ));
        self.tls.sql(&format!(
            "ALTER SYSTEM SET ssl_key_file = '{}'",
            key.display()
        ));
        self.tls.sql("SELECT pg_reload_conf()");
        // The postmaster reloads on SIGHUP; a new session sees the new setting once it has.
        let want_fp = fingerprint_of_file(&crt);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if self.tls.sql("SHOW ssl_cert_file") == crt.display().to_string()
                && served_fingerprint(self.tls.port).as_deref() == Some(want_fp.as_str())
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the TLS server did not take {cert:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        self.current = Some(cert);
    }
}

fn fingerprint_of(pem: &[u8]) -> String {
    let mut child = Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    let _ = child.stdin.take().unwrap().write_all(pem);
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn fingerprint_of_file(p: &Path) -> String {
    fingerprint_of(&fs::read(p).unwrap())
}

/// The fingerprint of the leaf certificate the TLS server at `port` presents.
fn served_fingerprint(port: u16) -> Option<String> {
    let out = Command::new("openssl")
        .args([
            "s_client",
            "-starttls",
            "postgres",
            "-connect",
            &format!("127.0.0.1:{port}"),
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let start = text.find("-----BEGIN CERTIFICATE-----")?;
    let end = text.find("-----END CERTIFICATE-----")? + "-----END CERTIFICATE-----".len();
    Some(fingerprint_of(text[start..end].as_bytes()))
}

/// A TCP listener that accepts and never answers (connect_timeout's target).
pub struct Silent {
    pub port: u16,
}

impl Silent {
    pub fn start() -> Silent {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            // Bounded: the test runs well under this many connections to it.
            for s in l.incoming().take(64) {
                held.push(s);
            }
        });
        Silent { port }
    }
}
