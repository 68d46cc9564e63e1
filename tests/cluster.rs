//! Managed PostgreSQL clusters: created, configured, stopped and removed by
//! csdchar itself — also when the test panics. Skips (with the reason) when
//! no PostgreSQL server binaries are installed.

use std::path::Path;
use std::process::Command;

use csdchar_dbload::cluster::{ClusterSpec, ManagedCluster, PgBinaries};

mod common;
use common::psql;

fn have_postgres() -> bool {
    match PgBinaries::find(None) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

/// Whether any postgres process runs on this data directory.
fn server_running(pgdata: &Path) -> bool {
    let out = Command::new("pgrep")
        .args(["-f", &format!("postgres.*-D {}", pgdata.display())])
        .output()
        .unwrap();
    out.status.success()
}

#[test]
fn ephemeral_cluster_with_settings_is_removed_on_drop() {
    if !have_postgres() {
        return;
    }
    let spec = ClusterSpec {
        settings: vec![
            "shared_buffers=32MB".into(),
            "work_mem = 8MB".into(),
            "autovacuum=off".into(),
        ],
        ..Default::default()
    };
    let c = ManagedCluster::start(&spec).unwrap();
    assert!(c.created());
    assert_eq!(psql(&c, "select 1"), "1");
    assert_eq!(psql(&c, "show shared_buffers"), "32MB");
    assert_eq!(psql(&c, "show work_mem"), "8MB");
    assert_eq!(psql(&c, "show autovacuum"), "off");
    assert!(
        c.conninfo("postgres")
            .contains(&format!("port={}", c.port()))
    );
    assert!(c.major_version() >= 10);
    let (pgdata, sock) = (c.pgdata().to_path_buf(), c.socket_dir().to_path_buf());
    assert!(server_running(&pgdata));
    drop(c);
    assert!(!server_running(&pgdata), "server still running");
    assert!(!pgdata.exists(), "temporary data directory left behind");
    assert!(!sock.exists(), "socket directory left behind");
}

#[test]
fn existing_pgdata_is_reused_not_recreated() {
    if !have_postgres() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-pgdata")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pgdata");
    let spec = ClusterSpec {
        pgdata: Some(pgdata.clone()),
        ..Default::default()
    };
    {
        let c = ManagedCluster::start(&spec).unwrap();
        assert!(c.created());
        psql(&c, "create table kept(x int); insert into kept values (42)");
    }
    assert!(!server_running(&pgdata));
    assert!(
        pgdata.join("PG_VERSION").exists(),
        "a user's data directory stays"
    );
    let c = ManagedCluster::start(&spec).unwrap();
    assert!(!c.created());
    assert_eq!(psql(&c, "select x from kept"), "42");
    assert!(c.log().starts_with(&pgdata));
}

#[test]
fn a_panicking_test_still_stops_its_cluster() {
    if !have_postgres() {
        return;
    }
    let seen = std::sync::Mutex::new(None);
    let r = std::panic::catch_unwind(|| {
        let c = ManagedCluster::start(&ClusterSpec::default()).unwrap();
        *seen.lock().unwrap() = Some(c.pgdata().to_path_buf());
        panic!("test failure while the cluster runs");
    });
    assert!(r.is_err());
    let pgdata = seen.lock().unwrap().clone().unwrap();
    assert!(!server_running(&pgdata));
    assert!(!pgdata.exists());
}

#[test]
fn start_failure_names_the_log() {
    if !have_postgres() {
        return;
    }
    let spec = ClusterSpec {
        settings: vec!["no_such_setting_xyz=1".into()],
        ..Default::default()
    };
    let err = ManagedCluster::start(&spec).unwrap_err().to_string();
    assert!(err.contains("server log:"), "{err}");
    assert!(err.contains("no_such_setting_xyz"), "{err}");
}
