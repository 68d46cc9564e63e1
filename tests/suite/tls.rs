//! TLS to the database with libpq's semantics, on managed clusters csdchar
//! starts with `--listen 127.0.0.1`: one with `--tls` (TLS only: pg_hba
//! hostssl, a CA and server certificate of its own) and one without. Every
//! sslmode against both; verify-full with the right and a wrong host name;
//! an unknown CA; an expired server certificate; the TPC-B run over TLS on
//! the thread driver with the negotiated protocol and cipher in the result.

use crate::common;

use std::path::{Path, PathBuf};

use common::csdchar;
use csdchar_pgcluster::{ClusterSpec, ManagedCluster};
use serde_json::Value;

/// A cluster left running by `db prepare --keep-running`, stopped on drop.
struct Kept {
    _dir: tempfile::TempDir,
    pgdata: PathBuf,
    port: String,
    password: String,
    /// What `db prepare` said (its notes).
    stderr: String,
}

impl Drop for Kept {
    fn drop(&mut self) {
        if let Ok(mut c) = ManagedCluster::start(&ClusterSpec {
            pgdata: Some(self.pgdata.clone()),
            ..ClusterSpec::default()
        }) {
            let _ = c.stop();
        }
    }
}

fn kept(tls: bool) -> Kept {
    let dir = tempfile::Builder::new()
        .prefix("csdchar-tls")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pgdata");
    let mut args = vec![
        "db",
        "prepare",
        "--pgdata",
        pgdata.to_str().unwrap(),
        "--workload",
        "tpcb",
        "--scale",
        "1",
        "--listen",
        "127.0.0.1",
        "--keep-running",
    ];
    if tls {
        args.push("--tls");
    }
    let ran = csdchar(&args);
    let port = std::fs::read_to_string(pgdata.join("postmaster.pid"))
        .ok()
        .and_then(|p| p.lines().nth(3).map(str::to_string))
        .unwrap_or_default();
    // A pgpass line: *:PORT:*:postgres:PASSWORD.
    let password = std::fs::read_to_string(pgdata.join("csdchar-password"))
        .unwrap_or_default()
        .trim()
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_string();
    let k = Kept {
        _dir: dir,
        pgdata,
        port,
        password,
        stderr: ran.stderr.clone(),
    };
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    if tls {
        assert!(
            ran.stderr.contains("sslmode=verify-full sslrootcert="),
            "how to verify is printed: {}",
            ran.stderr
        );
    }
    k
}

impl Kept {
    fn url(&self, host: &str, extra: &str) -> String {
        format!(
            "host={host} port={} user=postgres password={} dbname=postgres {extra}",
            self.port, self.password
        )
    }

    fn root(&self) -> String {
        self.pgdata.join("root.crt").display().to_string()
    }
}

/// A one-second TPC-B run over `url`; the result's first step when it ran.
fn run(url: &str, extra: &[&str]) -> (common::Ran, Option<Value>) {
    let mut args = vec![
        "db",
        "run",
        "--url",
        url,
        "--workload",
        "tpcb",
        "--scale",
        "1",
        "--threads",
        "2",
        "--time",
        "1s",
        "--output-format",
        "json",
    ];
    args.extend_from_slice(extra);
    let ran = csdchar(&args);
    let step = serde_json::from_str::<Value>(&ran.stdout)
        .ok()
        .map(|v| v["steps"][0].clone());
    (ran, step)
}

/// Every step of a run's JSON result.
fn steps_of(ran: &common::Ran) -> Vec<Value> {
    let v: Value = serde_json::from_str(&ran.stdout).unwrap();
    v["steps"].as_array().unwrap().clone()
}

fn ok_over_tls(url: &str) -> Value {
    let (ran, step) = run(url, &[]);
    assert_eq!(ran.outcome.exit_code, 0, "{url}: {}", ran.stderr);
    let step = step.unwrap();
    assert!(
        step["tls_protocol"].as_str().unwrap().starts_with("TLSv1."),
        "{step}"
    );
    assert!(step["transactions"].as_u64().unwrap() > 0, "{step}");
    step
}

fn fails(url: &str, says: &str) {
    let (ran, _) = run(url, &[]);
    assert_eq!(ran.outcome.exit_code, 1, "{url}: {}", ran.stderr);
    assert!(
        ran.stderr.contains(says),
        "{url}: expected '{says}': {}",
        ran.stderr
    );
    assert!(
        !ran.stderr.contains("password="),
        "no password in messages: {}",
        ran.stderr
    );
}

/// A CA of the test's own, and a server certificate it signs (expired when asked).
fn ca_and_server(expired: bool) -> (String, String, String) {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "someone else's CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let mut server = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    if expired {
        server.not_before = rcgen::date_time_ymd(2020, 1, 1);
        server.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = server.signed_by(&key, &ca_cert, &ca_key).unwrap();
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

#[test]
fn every_sslmode_against_a_tls_only_server() {
    if !common::postgres_or_skip() {
        return;
    }
    let k = kept(true);
    let root = k.root();
    // TLS only: a plain login is refused by pg_hba (hostssl), as libpq sees it.
    fails(&k.url("127.0.0.1", "sslmode=disable"), "no encryption");
    // allow: plain first, then TLS when the server refuses it.
    ok_over_tls(&k.url("127.0.0.1", "sslmode=allow"));
    // prefer is the default.
    let step = ok_over_tls(&k.url("127.0.0.1", ""));
    assert!(
        step["tls_cipher"].as_str().unwrap().contains("TLS13"),
        "{step}"
    );
    ok_over_tls(&k.url("127.0.0.1", "sslmode=require"));
    ok_over_tls(&k.url(
        "127.0.0.1",
        &format!("sslmode=verify-ca sslrootcert={root}"),
    ));
    ok_over_tls(&k.url(
        "127.0.0.1",
        &format!("sslmode=verify-full sslrootcert={root}"),
    ));
    // PGSSLMODE/PGSSLROOTCERT as libpq reads them are covered by the unit tests;
    // the URL form carries the same keys.
    ok_over_tls(&format!(
        "postgres://postgres:{}@127.0.0.1:{}/postgres?sslmode=verify-full&sslrootcert={root}",
        k.password, k.port
    ));
    // The certificate names 127.0.0.1; "localhost" reaches the same server.
    fails(
        &k.url(
            "localhost",
            &format!("sslmode=verify-full sslrootcert={root}"),
        ),
        "does not match host name \"localhost\"",
    );
    // verify-ca does not check the name.
    ok_over_tls(&k.url(
        "localhost",
        &format!("sslmode=verify-ca sslrootcert={root}"),
    ));
    // Someone else's CA.
    let d = tempfile::tempdir().unwrap();
    let (other_ca, _, _) = ca_and_server(false);
    let other = d.path().join("other.crt");
    std::fs::write(&other, other_ca).unwrap();
    fails(
        &k.url(
            "127.0.0.1",
            &format!("sslmode=verify-ca sslrootcert={}", other.display()),
        ),
        "unknown CA",
    );
    // Both drivers: the io_uring client encrypts into its sends and decrypts
    // what its receives bring.
    let url = k.url("127.0.0.1", "sslmode=require");
    // run() asks for 2 clients and --threads adds a step of 8: both on the driver.
    for io in ["threads", "uring"] {
        let (ran, _) = run(&url, &["--client-io", io, "--threads", "8"]);
        assert_eq!(ran.outcome.exit_code, 0, "{io}: {}", ran.stderr);
        let steps = steps_of(&ran);
        assert_eq!(steps.last().unwrap()["threads"], 8);
        for step in &steps {
            assert_eq!(step["client_io"], io, "{step}");
            assert!(
                step["tls_protocol"].as_str().unwrap().starts_with("TLSv1."),
                "{step}"
            );
            // Transactions over TLS on this driver; how many is the benchmarks' business (a
            // loaded CI machine gave 26 in one 1 s step where a quiet one gives hundreds).
            assert!(step["transactions"].as_u64().unwrap() > 5, "{io}: {step}");
            assert_eq!(step["transport"], "tls", "{step}");
        }
    }
    // auto over TLS: the ring from its TCP/TLS count up, with the rule's ring threads.
    {
        use csdchar_dbloop::runner::uring_probe;
        use csdchar_dbloop::settings::{AutoRule, ring_threads};
        use csdchar_pgwire::conn::Transport;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let many = AutoRule::of(Transport::Tls).uring_from_clients_per_core * cores;
        if many <= 90 {
            let n = many.to_string();
            // run() asks for 2 clients, and --threads adds a step: the last is this one.
            let (ran, _) = run(&url, &["--client-io", "auto", "--threads", &n]);
            assert_eq!(ran.outcome.exit_code, 0, "auto: {}", ran.stderr);
            let step = steps_of(&ran).pop().unwrap();
            assert_eq!(step["threads"], many as u64, "{step}");
            if uring_probe().is_ok() {
                assert_eq!(step["client_io"], "uring", "{step}");
                let rings = ring_threads(many, cores, Transport::Tls, None) as u64;
                assert_eq!(step["client_threads"], rings, "{step}");
            } else {
                assert_eq!(step["client_io"], "threads", "{step}");
            }
            assert_eq!(step["transport"], "tls", "{step}");
        }
    }
    // TPC-C over TLS: the load (COPY on the control connections) and
    // BenchmarkSQL's statements on the thread driver.
    let url = k.url(
        "127.0.0.1",
        &format!("sslmode=verify-full sslrootcert={root}"),
    );
    let ran = csdchar(&[
        "db",
        "prepare",
        "--url",
        &url,
        "--workload",
        "tpcc",
        "--warehouses",
        "1",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let ran = csdchar(&[
        "db",
        "run",
        "--url",
        &url,
        "--workload",
        "tpcc",
        "--threads",
        "2",
        "--time",
        "2s",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: Value = serde_json::from_str(&ran.stdout).unwrap();
    let step = &v["steps"][0];
    assert!(
        step["tls_protocol"].as_str().unwrap().starts_with("TLSv1."),
        "{step}"
    );
    assert!(step["transactions"].as_u64().unwrap() > 0, "{step}");
}

#[test]
fn an_expired_server_certificate_is_named() {
    if !common::postgres_or_skip()
        || !common::is_root_or_skip("an_expired_server_certificate_is_named")
    {
        return;
    }
    let k = kept(true);
    // Swap in an expired certificate from a CA of the test's own, then reload.
    let (ca, cert, key) = ca_and_server(true);
    let write = |name: &str, text: &str, mode: u32| {
        let p = k.pgdata.join(name);
        std::fs::write(&p, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        chown_like(&p, &k.pgdata);
    };
    write("server.crt", &cert, 0o644);
    write("server.key", &key, 0o600);
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("expired-ca.crt");
    std::fs::write(&root, ca).unwrap();
    reload(&k.pgdata);
    fails(
        &k.url(
            "127.0.0.1",
            &format!("sslmode=verify-full sslrootcert={}", root.display()),
        ),
        "expired",
    );
    // require without a root file does not check the chain: it connects.
    ok_over_tls(&k.url("127.0.0.1", "sslmode=require"));
}

#[test]
fn a_server_without_tls_answers_each_mode_as_libpq_says() {
    if !common::postgres_or_skip() {
        return;
    }
    let k = kept(false);
    for mode in ["disable", "allow", "prefer"] {
        let (ran, step) = run(&k.url("127.0.0.1", &format!("sslmode={mode}")), &[]);
        assert_eq!(ran.outcome.exit_code, 0, "{mode}: {}", ran.stderr);
        let step = step.unwrap();
        assert_eq!(step["tls_protocol"], Value::Null, "{mode}: plain");
        assert_eq!(step["transport"], "tcp", "{mode}");
    }
    // Any root file lets verify-* get as far as asking.
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("root.crt");
    std::fs::write(&root, ca_and_server(false).0).unwrap();
    for mode in ["require", "verify-ca", "verify-full"] {
        let url = k.url(
            "127.0.0.1",
            &format!("sslmode={mode} sslrootcert={}", root.display()),
        );
        fails(&url, "server does not support SSL, but SSL was required");
    }
}

fn chown_like(path: &Path, like: &Path) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(like).unwrap();
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // Safety: chown on a NUL-terminated path we own.
    unsafe { libc::chown(c.as_ptr(), m.uid(), m.gid()) };
}

/// Reloads the server's configuration (and its certificate) by signal.
fn reload(pgdata: &Path) {
    let pid = std::fs::read_to_string(pgdata.join("postmaster.pid")).unwrap();
    let pid: i32 = pid.lines().next().unwrap().trim().parse().unwrap();
    // Safety: SIGHUP to the postmaster we started.
    unsafe { libc::kill(pid, libc::SIGHUP) };
    std::thread::sleep(std::time::Duration::from_millis(500));
}

/// A CA of the test's own and a client certificate for user `postgres` it signs.
fn ca_and_client() -> (String, String, String) {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "clients' CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let mut client = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    client
        .distinguished_name
        .push(rcgen::DnType::CommonName, "postgres");
    client.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = client.signed_by(&key, &ca_cert, &ca_key).unwrap();
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

/// `hostssl … cert`: the server wants a client certificate; sslcert/sslkey give it.
#[test]
fn a_client_certificate_the_server_requires() {
    if !common::postgres_or_skip()
        || !common::is_root_or_skip("a_client_certificate_the_server_requires")
    {
        return;
    }
    let k = kept(true);
    let (ca, cert, key) = ca_and_client();
    let ca_file = k.pgdata.join("client-ca.crt");
    std::fs::write(&ca_file, ca).unwrap();
    chown_like(&ca_file, &k.pgdata);
    let auto = k.pgdata.join("postgresql.auto.conf");
    let mut conf = std::fs::read_to_string(&auto).unwrap();
    conf.push_str("ssl_ca_file = 'client-ca.crt'\n");
    std::fs::write(&auto, conf).unwrap();
    let hba = k.pgdata.join("pg_hba.conf");
    let rules = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(&hba, format!("hostssl all all 127.0.0.1/32 cert\n{rules}")).unwrap();
    reload(&k.pgdata);
    fails(&k.url("127.0.0.1", "sslmode=require"), "certificate");
    let d = tempfile::tempdir().unwrap();
    let (c, kf) = (d.path().join("client.crt"), d.path().join("client.key"));
    std::fs::write(&c, cert).unwrap();
    std::fs::write(&kf, key).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&kf, std::fs::Permissions::from_mode(0o600)).unwrap();
    ok_over_tls(&k.url(
        "127.0.0.1",
        &format!(
            "sslmode=require sslcert={} sslkey={}",
            c.display(),
            kf.display()
        ),
    ));
}

/// Issue 38 row 18: the connection string a `--tls` cluster prints works as
/// printed with libpq itself (psql), with the PGPASSFILE it names; and
/// csdchar reads that password file as libpq does.
#[test]
fn the_printed_connection_string_works_as_printed() {
    if !common::postgres_or_skip() {
        return;
    }
    let k = kept(true);
    let note = k
        .stderr
        .lines()
        .find(|l| l.contains("TLS: connect with"))
        .unwrap_or_else(|| panic!("no TLS note: {}", k.stderr))
        .to_string();
    let printed = note.split('"').nth(1).unwrap().to_string();
    let passfile = note
        .split("PGPASSFILE=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    assert!(printed.contains(&format!("port={}", k.port)), "{printed}");
    let psql = csdchar_pgcluster::PgBinaries::find(None)
        .unwrap()
        .dir
        .join("psql");
    let out = std::process::Command::new(psql)
        .arg(&printed)
        .args([
            "-At",
            "-c",
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
        ])
        .env("PGPASSFILE", &passfile)
        .env_remove("PGSSLMODE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "psql {printed}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "t");
    // csdchar's own client, with the same file through libpq's variable.
    struct PassFile(String);
    impl csdchar_pgwire::env::Env for PassFile {
        fn get(&self, key: &str) -> Option<String> {
            (key == "PGPASSFILE").then(|| self.0.clone())
        }
    }
    let target =
        csdchar_pgwire::conn::ConnTarget::parse(&printed, &PassFile(passfile.clone())).unwrap();
    assert!(
        target.config().get_password().is_some(),
        "read from the file"
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = csdchar_pgwire::client::connect_client(&target)
            .await
            .unwrap();
        let row = client
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .await
            .unwrap();
        assert!(row.get::<_, bool>(0), "over TLS");
    });
}
