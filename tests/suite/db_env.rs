//! libpq's environment variables as the `csdchar db` commands read them
//! (issue 38 rows 14 and 18): `PGSSLMODE` named when bad and ignored on a
//! Unix socket, as libpq ignores it there; `PGPASSFILE` honoured, so the
//! connection string a `--tls` cluster prints works as printed.
//!
//! The commands read the process environment, so the test runs by itself in
//! a child process of the test binary, where it sets and clears the variables
//! between its commands.

use crate::common;

use std::path::Path;

use csdchar_pgcluster::{ClusterSpec, ManagedCluster};

/// Sets (or with None clears) a variable for the commands that follow.
fn set(key: &str, value: Option<&str>) {
    // Safety (edition 2024 marks these unsafe): only in the child process that
    // runs this one test (CHILD), where no other thread reads the environment.
    unsafe {
        match value {
            Some(v) => std::env::set_var(key, v),
            None => std::env::remove_var(key),
        }
    }
}

/// Stops a cluster left running on `pgdata` (on drop, also after a failed assertion).
struct Stop<'a>(&'a Path);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        if let Ok(mut c) = ManagedCluster::start(&ClusterSpec {
            pgdata: Some(self.0.to_path_buf()),
            ..ClusterSpec::default()
        }) {
            let _ = c.stop();
        }
    }
}

/// The text between `start` and the next `end` in `text`.
fn between<'t>(text: &'t str, start: &str, end: &str) -> &'t str {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("no {start}: {text}"))
        + start.len();
    let len = text[from..]
        .find(end)
        .unwrap_or_else(|| panic!("no {end}: {text}"));
    &text[from..from + len]
}

/// Set in the child process the test runs in.
const CHILD: &str = "CSDCHAR_TEST_ENV_CHILD";

#[test]
fn libpq_environment_variables_as_libpq_reads_them() {
    if std::env::var_os(CHILD).is_none() {
        common::rerun_in_child(
            &["db_env::libpq_environment_variables_as_libpq_reads_them"],
            true,
            &[(CHILD, "1")],
        );
        return;
    }
    if !common::postgres_or_skip() {
        return;
    }
    for v in [
        "PGSSLMODE",
        "PGSSLROOTCERT",
        "PGPASSFILE",
        "PGPASSWORD",
        "PGHOST",
    ] {
        set(v, None);
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-env")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pgdata");
    let p = pgdata.to_str().unwrap();
    let tpcb = ["--workload", "tpcb", "--scale", "1"];

    // Row 14: a bad PGSSLMODE is named (not --schema), before anything is made.
    set("PGSSLMODE", Some("bogus"));
    let mut args = vec!["db", "prepare", "--pgdata", p];
    args.extend(tpcb);
    let ran = common::csdchar(&args);
    assert_eq!(ran.outcome.exit_code, 2, "{}", ran.stderr);
    let line = ran.stderr.trim_end();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.starts_with("error: PGSSLMODE=bogus") && line.contains("verify-full"),
        "{line}"
    );
    assert!(!pgdata.exists(), "nothing created");

    // libpq uses no TLS on a Unix socket: verify-full without a root file works there.
    set("PGSSLMODE", Some("verify-full"));
    set("PGSSLROOTCERT", Some("/nonexistent/root.crt"));
    let ran = common::csdchar(&args);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    set("PGSSLMODE", None);
    set("PGSSLROOTCERT", None);

    // Row 18: the --tls cluster's connection string, used as printed, with
    // the PGPASSFILE it names (csdchar reads it as libpq does).
    let ran = common::csdchar(&[
        "db",
        "prepare",
        "--pgdata",
        p,
        "--workload",
        "tpcb",
        "--scale",
        "1",
        "--force",
        "--listen",
        "127.0.0.1",
        "--tls",
        "--keep-running",
    ]);
    let _stop = Stop(&pgdata);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let printed = between(&ran.stderr, "TLS: connect with \"", "\"").to_string();
    let passfile = between(&ran.stderr, "\" and PGPASSFILE=", " (").to_string();
    assert!(
        printed.contains(" port=") && printed.contains("sslmode=verify-full"),
        "{printed}"
    );
    let run = |url: &str| {
        common::csdchar(&[
            "db",
            "run",
            "--url",
            url,
            "--workload",
            "tpcb",
            "--time",
            "1s",
            "--output-format",
            "json",
        ])
    };
    // Without the password file the login fails (scram wants the password) …
    let ran = run(&printed);
    assert_eq!(ran.outcome.exit_code, 1, "{}", ran.stderr);
    // … with it, the run goes over verified TLS.
    set("PGPASSFILE", Some(&passfile));
    let ran = run(&printed);
    assert_eq!(ran.outcome.exit_code, 0, "{printed}: {}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(v["steps"][0]["transport"], "tls", "{}", v["steps"][0]);
    // A password file others may read is not read, as libpq warns, and the
    // failed login says why.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o644)).unwrap();
    let ran = run(&printed);
    assert_eq!(ran.outcome.exit_code, 1, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("group or world access"),
        "{}",
        ran.stderr
    );
    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
    set("PGPASSFILE", None);
}
