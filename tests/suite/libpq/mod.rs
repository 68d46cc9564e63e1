//! libpq's connection semantics as a table to hold clients to (issue 40): the
//! certificates ([`pki`]), the servers ([`servers`]), the cases ([`cases`]),
//! what an outcome is ([`outcome`]), libpq's URI parsing ([`uri`]), and the
//! runner that puts each case through a client ([`Matrix::run`]). psql is the
//! client here; a csdchar client plugs in as another [`Client`].

#![allow(dead_code)]

pub mod cases;
pub mod csdchar;
pub mod outcome;
pub mod pki;
pub mod servers;
pub mod uri;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cases::{Case, Expect, Src, fill};
use outcome::{Outcome, Reached};
use servers::{PASSWORD, Servers, Silent};

/// One connection attempt, as a client is asked to make it.
pub struct Attempt<'a> {
    pub conninfo: &'a str,
    /// The whole environment (nothing else is inherited).
    pub env: &'a [(String, String)],
    /// SQL whose one-value answer is reported.
    pub check_sql: Option<&'a str>,
}

/// What a client reports of an attempt: the port and TLS of the session and
/// the check's answer, or its error text.
pub enum Reply {
    Connected {
        port: u16,
        tls: bool,
        check: Option<String>,
    },
    Failed {
        message: String,
    },
}

/// A client under test.
pub trait Client {
    fn name(&self) -> &str;
    fn attempt(&self, a: &Attempt) -> Reply;
    /// The causes its message names.
    fn causes(&self, message: &str) -> Vec<outcome::Cause>;
    /// The libpq major version whose behaviour the client is held to (15: psql here).
    fn libpq_major(&self) -> u32 {
        15
    }
    /// Whether its message says why a certificate failed verification (libpq 15's does
    /// not: the harness then asks OpenSSL itself, the library libpq verifies with).
    fn names_verify_reason(&self) -> bool {
        true
    }
}

/// psql 15 (libpq).
pub struct Psql;

impl Client for Psql {
    fn name(&self) -> &str {
        "psql"
    }
    fn attempt(&self, a: &Attempt) -> Reply {
        // setsid: no controlling terminal, so libpq cannot ask for a key's password.
        let mut cmd = Command::new("setsid");
        cmd.args(["-w", "timeout", "30"])
            .arg(Path::new(servers::BIN).join("psql"))
            .arg(a.conninfo)
            .args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-c"])
            .arg(
                "select current_setting('port') || '|' || \
                 coalesce((select ssl::text from pg_stat_ssl where pid = pg_backend_pid()), 'false')",
            );
        if let Some(sql) = a.check_sql {
            cmd.args(["-c", sql]);
        }
        cmd.env_clear()
            .envs(a.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        let out = cmd.output().expect("psql runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            return Reply::Failed { message: stderr };
        }
        let mut lines = stdout.lines();
        let first = lines.next().unwrap_or_default();
        let (port, tls) = first.split_once('|').expect("port|ssl");
        Reply::Connected {
            port: port.parse().unwrap(),
            tls: tls == "true",
            check: a
                .check_sql
                .map(|_| lines.next().unwrap_or_default().to_string()),
        }
    }
    fn causes(&self, message: &str) -> Vec<outcome::Cause> {
        outcome::libpq_causes(message)
    }
    fn names_verify_reason(&self) -> bool {
        false
    }
}

/// Why OpenSSL (`openssl s_client`, the library libpq verifies with, with the
/// case's root, CRL file and CRL directory as libpq would load them) refuses the
/// TLS server's certificate.
fn openssl_verify_reason(
    conninfo: &str,
    env: &[(String, String)],
    home: &Path,
) -> Option<outcome::Cause> {
    let key = |k: &str| {
        conninfo
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .map(str::to_string)
    };
    let var = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let port = key("port")?;
    let root = key("sslrootcert")
        .or_else(|| var("PGSSLROOTCERT"))
        .unwrap_or_else(|| home.join(".postgresql/root.crt").display().to_string());
    let crl = key("sslcrl").or_else(|| var("PGSSLCRL"));
    let crldir = key("sslcrldir").or_else(|| var("PGSSLCRLDIR"));
    let mut cmd = Command::new("openssl");
    cmd.args(["s_client", "-starttls", "postgres", "-connect"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["-CAfile", &root]);
    let home_crl = home.join(".postgresql/root.crl");
    let crl = match (&crl, &crldir) {
        (None, None) if home_crl.exists() => Some(home_crl.display().to_string()),
        _ => crl,
    };
    if let Some(f) = &crl {
        cmd.args(["-CRL", f, "-crl_check_all"]);
    }
    if let Some(d) = &crldir {
        // libpq turns CRL checking on for any directory name, even one that is not there.
        if Path::new(d).is_dir() {
            cmd.args(["-CApath", d]);
        }
        cmd.arg("-crl_check_all");
    }
    let out = cmd.stdin(Stdio::null()).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("Verify return code:"))?;
    outcome::libpq_causes(line)
        .into_iter()
        .find(|c| *c != outcome::Cause::CertVerifyFailed)
}

/// libpq as a Python driver bundles it (psycopg's binary wheel: a newer libpq than
/// Debian's), run by the interpreter `python`; its libpq major version in `major`.
pub struct PyLibpq {
    pub python: String,
    pub major: u32,
}

/// The script PyLibpq runs: connect with the string, print `port|ssl` and the
/// check's answer, or libpq's message on stderr.
const PY_CONNECT: &str = r#"
import sys, psycopg
try:
    with psycopg.connect(sys.argv[1], autocommit=True) as c:
        r = c.execute("select current_setting('port') || '|' || coalesce((select ssl::text from pg_stat_ssl where pid = pg_backend_pid()), 'false')").fetchone()
        print(r[0])
        if len(sys.argv) > 2:
            print(c.execute(sys.argv[2]).fetchone()[0])
except psycopg.Error as e:
    sys.stderr.write(str(e))
    sys.exit(2)
"#;

impl PyLibpq {
    /// From CSDCHAR_LIBPQ_PYTHON (a python with psycopg[binary]); None when unset.
    pub fn from_env() -> Option<PyLibpq> {
        let python = std::env::var("CSDCHAR_LIBPQ_PYTHON").ok()?;
        let out = Command::new(&python)
            .args(["-c", "import psycopg; print(psycopg.pq.version() // 10000)"])
            .output()
            .ok()?;
        let major = String::from_utf8_lossy(&out.stdout).trim().parse().ok()?;
        Some(PyLibpq { python, major })
    }
}

impl Client for PyLibpq {
    fn name(&self) -> &str {
        "libpq (psycopg)"
    }
    fn libpq_major(&self) -> u32 {
        self.major
    }
    fn attempt(&self, a: &Attempt) -> Reply {
        let mut cmd = Command::new("setsid");
        cmd.args(["-w", "timeout", "30"])
            .arg(&self.python)
            .args(["-c", PY_CONNECT])
            .arg(a.conninfo);
        if let Some(sql) = a.check_sql {
            cmd.arg(sql);
        }
        cmd.env_clear()
            .envs(a.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        let out = cmd.output().expect("python runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Reply::Failed {
                message: String::from_utf8_lossy(&out.stderr).into_owned(),
            };
        }
        let mut lines = stdout.lines();
        let (port, tls) = lines
            .next()
            .unwrap_or_default()
            .split_once('|')
            .expect("port|ssl");
        Reply::Connected {
            port: port.parse().unwrap(),
            tls: tls == "true",
            check: a
                .check_sql
                .map(|_| lines.next().unwrap_or_default().to_string()),
        }
    }
    fn causes(&self, message: &str) -> Vec<outcome::Cause> {
        outcome::libpq_causes(message)
    }
    fn names_verify_reason(&self) -> bool {
        false
    }
}

/// A case's result from one client.
pub struct Ran {
    pub case: Case,
    pub conninfo: String,
    pub env: Vec<(String, String)>,
    pub outcome: Outcome,
    pub message: String,
    /// The outcome is the table's.
    pub agrees: bool,
}

/// Certificates, servers and the placeholders' values of one run.
pub struct Matrix {
    pub pki: pki::Pki,
    /// Stopped before `root` goes (fields drop in order).
    pub servers: Servers,
    pub silent: Silent,
    pub dead_port: u16,
    pub root: tempfile::TempDir,
}

impl Matrix {
    pub fn start() -> Matrix {
        let root = tempfile::Builder::new()
            .prefix("csdchar-libpq")
            .tempdir_in("/var/tmp")
            .unwrap();
        pki::set_mode(root.path(), 0o755);
        let pki = pki::Pki::make(&root.path().join("pki"));
        let servers = Servers::start(root.path(), &pki);
        let silent = Silent::start();
        let dead_port = servers::free_port();
        Matrix {
            pki,
            servers,
            silent,
            dead_port,
            root,
        }
    }

    fn vars(&self, home: &Path) -> Vec<(&'static str, String)> {
        let s = &self.servers;
        vec![
            ("u", "user=postgres dbname=postgres".to_string()),
            ("t", s.tls.port.to_string()),
            ("p", s.primary.port.to_string()),
            ("s", s.standby.port.to_string()),
            ("dead", self.dead_port.to_string()),
            ("hole", self.silent.port.to_string()),
            ("pki", self.pki.dir.display().to_string()),
            ("home", home.display().to_string()),
            ("psock", s.primary.sock.display().to_string()),
            ("pw", PASSWORD.to_string()),
        ]
    }

    fn reached(&self, port: u16) -> Reached {
        let s = &self.servers;
        if port == s.tls.port {
            Reached::Tls
        } else if port == s.primary.port {
            Reached::Primary
        } else if port == s.standby.port {
            Reached::Standby
        } else {
            panic!("connected to an unknown port {port}")
        }
    }

    /// Runs `case` through `client` in a fresh HOME with the case's files and environment.
    pub fn run(&mut self, client: &dyn Client, case: &Case) -> Ran {
        if let Some(cert) = case.cert {
            self.servers.use_cert(cert);
        }
        let home = tempfile::Builder::new()
            .prefix("home")
            .tempdir_in(self.root.path())
            .unwrap();
        let vars = self.vars(home.path());
        for f in &case.files {
            let path = PathBuf::from(fill(f.path, &vars));
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            match &f.from {
                Src::Pki(name) => {
                    fs::copy(self.pki.path(name), &path).unwrap();
                }
                Src::Text(t) => fs::write(&path, fill(t, &vars)).unwrap(),
            }
            pki::set_mode(&path, f.mode);
            if f.owned_by_postgres {
                let out = Command::new("chown").arg("postgres").arg(&path).status();
                assert!(out.unwrap().success());
            }
        }
        let mut env: Vec<(String, String)> = vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("HOME".into(), home.path().display().to_string()),
            ("LANG".into(), "C".into()),
            ("LC_ALL".into(), "C".into()),
        ];
        if case.password {
            env.push(("PGPASSWORD".into(), PASSWORD.into()));
        }
        for (k, v) in &case.env {
            env.push((k.to_string(), fill(v, &vars)));
        }
        let conninfo = fill(case.conninfo, &vars);
        let reply = client.attempt(&Attempt {
            conninfo: &conninfo,
            env: &env,
            check_sql: case.check_sql,
        });
        let (outcome, message) = match reply {
            Reply::Connected { port, tls, check } => (
                Outcome::Connects {
                    reached: self.reached(port),
                    tls,
                    check,
                },
                String::new(),
            ),
            Reply::Failed { message } => {
                let mut causes = client.causes(&message);
                if causes.contains(&outcome::Cause::CertVerifyFailed)
                    && !client.names_verify_reason()
                    && let Some(why) = openssl_verify_reason(&conninfo, &env, home.path())
                {
                    causes.push(why);
                    causes.sort();
                }
                (Outcome::Refuses(causes), message)
            }
        };
        let agrees = match (case.expect_for(client.libpq_major()), &outcome) {
            (
                Expect::Connects {
                    reached,
                    tls,
                    check,
                },
                Outcome::Connects {
                    reached: r,
                    tls: t,
                    check: c,
                },
            ) => reached == r && tls == t && check.map(str::to_string) == *c,
            (Expect::Refuses(want), Outcome::Refuses(got)) => {
                !want.is_empty() && want.iter().all(|w| got.contains(w))
            }
            _ => false,
        };
        Ran {
            case: case.clone(),
            conninfo,
            env,
            outcome,
            message,
            agrees,
        }
    }
}

/// The outcome in words for the tables.
pub fn describe(o: &Outcome) -> String {
    match o {
        Outcome::Connects {
            reached,
            tls,
            check,
        } => {
            let server = match reached {
                Reached::Tls => "the TLS server",
                Reached::Primary => "the primary",
                Reached::Standby => "the standby",
            };
            let mut s = format!(
                "connects to {server}, {}",
                if *tls { "TLS" } else { "plain" }
            );
            if let Some(c) = check {
                s.push_str(&format!(", `{c}`"));
            }
            s
        }
        Outcome::Refuses(c) => {
            let names: Vec<String> = c.iter().map(|c| format!("{c:?}")).collect();
            format!("refused: {}", names.join(", "))
        }
    }
}
