//! ZFS on a real pool (issue 26): zfs-fuse, which `scripts/test.sh`
//! installs, on a file-backed pool these tests make and destroy. The
//! daemon is started here when none runs and stopped after; nothing is left
//! behind, even on failure. Root only; without zfs-fuse the tests skip, unless
//! `CSDCHAR_REQUIRE_ZFS` (set by scripts/test.sh as root) says they must run.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{csdchar, is_root_or_skip};

/// One pool at a time: the tests share the daemon.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn zfs_tools_or_skip(test: &str) -> bool {
    if !is_root_or_skip(test) {
        return false;
    }
    let have = Command::new("zfs-fuse").arg("--help").output().is_ok();
    if !have {
        assert!(
            std::env::var_os("CSDCHAR_REQUIRE_ZFS").is_none(),
            "zfs-fuse is not installed but CSDCHAR_REQUIRE_ZFS is set"
        );
        eprintln!("skipped {test}: zfs-fuse not installed");
    }
    have
}

fn run(cmd: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|e| format!("{cmd}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{cmd} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Pids of running `zfs-fuse` processes.
fn zfs_fuse_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "zfs-fuse")
        })
        .collect()
}

/// A file-backed pool with one dataset, gzip compression, mounted on a
/// directory everyone may enter (the server runs as `postgres`); the
/// daemon too when this started it. Dropping destroys them.
struct Pool {
    name: String,
    mount: PathBuf,
    _dir: tempfile::TempDir,
    daemon: Option<i32>,
}

impl Pool {
    fn new(tag: &str) -> Pool {
        let daemon = if zfs_fuse_pids().is_empty() {
            let pid_file = format!("/run/csdchar-test-zfs-fuse-{}.pid", std::process::id());
            let _ = std::fs::remove_file(&pid_file);
            run("zfs-fuse", &["--pidfile", &pid_file, "--no-kstat-mount"]).unwrap();
            let t0 = Instant::now();
            while run("zpool", &["list"]).is_err() && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(100));
            }
            let pid = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|p| p.trim().parse().ok());
            let _ = std::fs::remove_file(&pid_file);
            pid.or_else(|| zfs_fuse_pids().first().copied())
        } else {
            None
        };
        let dir = tempfile::Builder::new()
            .prefix("csdchar-zfs")
            .tempdir_in("/var/tmp")
            .unwrap();
        let image = dir.path().join("pool.img");
        std::fs::File::create(&image)
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let name = format!("csdchar{tag}{}", std::process::id());
        let mount = dir.path().join("mnt");
        let mut pool = Pool {
            name: name.clone(),
            mount: mount.clone(),
            _dir: dir,
            daemon,
        };
        run(
            "zpool",
            &[
                "create",
                "-f",
                "-m",
                mount.to_str().unwrap(),
                &name,
                image.to_str().unwrap(),
            ],
        )
        .unwrap();
        run("zfs", &["set", "compression=gzip", &name]).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&mount, std::fs::Permissions::from_mode(0o755)).unwrap();
        // The tempdir itself must be enterable too.
        std::fs::set_permissions(pool._dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        pool.mount = mount;
        pool
    }

    fn get(&self, property: &str) -> String {
        run("zfs", &["get", "-H", "-o", "value", property, &self.name])
            .unwrap()
            .trim()
            .to_string()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // "pool is busy" right after a server on it stopped: retry.
        for _ in 0..40 {
            if run("zpool", &["destroy", "-f", &self.name]).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        if let Some(pid) = self.daemon {
            // Safety: kill(2) with a pid this test started and SIGTERM.
            unsafe { libc::kill(pid, libc::SIGTERM) };
            let t0 = Instant::now();
            while Path::new(&format!("/proc/{pid}")).exists()
                && t0.elapsed() < Duration::from_secs(15)
            {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

#[test]
fn capacity_reads_the_dataset_like_zfs_get() {
    if !zfs_tools_or_skip("capacity_reads_the_dataset_like_zfs_get") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let pool = Pool::new("cap");
    let file = pool.mount.join("data");
    // Buffered writes, 75% compressible; the run records the dataset's
    // figures around it, like a drive's counters.
    let ran = common::write_compressible(
        file.to_str().unwrap(),
        "48m",
        75,
        &["--direct", "0", "--output-format", "json"],
    );
    let b: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let cap = &b["capacity"];
    assert_eq!(cap["after"]["zfs"]["dataset"], pool.name.as_str(), "{cap}");
    let (grew, logical) = (
        cap["delta"]["physical_bytes"].as_i64().unwrap(),
        cap["delta"]["logical_bytes"].as_i64().unwrap(),
    );
    assert!(
        grew > 0 && grew < 24 << 20 && logical > 2 * grew,
        "48 MiB at 75% took {grew} bytes of {logical}: {cap}"
    );
    for target in [file.to_str().unwrap(), pool.name.as_str()] {
        let ran = csdchar(&["capacity", target, "--output-format", "json"]);
        assert_eq!(ran.outcome.exit_code, 0, "{target}: {}", ran.stderr);
        let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
        common::assert_matches_schema(&v, "capacity");
        let s = &v["snapshot"];
        let z = &s["zfs"];
        assert_eq!(z["dataset"], pool.name.as_str(), "{v}");
        assert_eq!(z["compression"], "gzip");
        // The ratio is zfs get's to two decimals (zfs-fuse prints "3.99x").
        let theirs: f64 = pool
            .get("compressratio")
            .trim_end_matches('x')
            .parse()
            .unwrap();
        assert_eq!(
            format!("{:.2}", z["compressratio"].as_f64().unwrap()),
            format!("{theirs:.2}")
        );
        assert!(theirs > 2.0, "gzip on 75%-compressible data: {theirs}");
        let used = z["used_bytes"].as_u64().unwrap();
        let logical = z["logical_bytes"].as_u64().unwrap();
        assert!(used > 0 && logical > 2 * used, "{z}");
        // zfs-fuse has no logicalused: derived, and said so.
        assert_eq!(z["logicalused_bytes"], serde_json::Value::Null);
        assert_eq!(z["derived_logical"], true);
        assert_eq!(s["physical_bytes"], z["used_bytes"]);
        let sources = s["sources"].to_string();
        assert!(sources.contains("zfs_get"), "{sources}");
    }
    let text = csdchar(&["capacity", file.to_str().unwrap()]).stdout;
    assert!(
        text.contains(&format!("zfs dataset {}", pool.name))
            && text.contains("compression gzip")
            && text.contains("derived from compressratio"),
        "{text}"
    );
}

#[test]
fn a_study_on_zfs_takes_zfs_own_figures() {
    if !zfs_tools_or_skip("a_study_on_zfs_takes_zfs_own_figures") || !common::postgres_or_skip() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let pool = Pool::new("study");
    let pgdata = pool.mount.join("pgdata");
    let ran = csdchar(&[
        "db",
        "study",
        "--pgdata",
        pgdata.to_str().unwrap(),
        "--tables",
        "2",
        "--table-size",
        "30000",
        "--fillfactor",
        "100,70",
        "--threads",
        "1",
        "--time",
        "1s",
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    common::assert_matches_schema(&v, "study");
    assert!(
        v["physical_method"]
            .as_str()
            .unwrap()
            .contains("as ZFS allocated them"),
        "{}",
        v["physical_method"]
    );
    let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap();
    let rows = v["rows"].as_array().unwrap();
    for r in rows {
        // ZFS's own figures, not the estimator's.
        assert_eq!(r["physical_estimated"], false, "{r}");
        assert!(
            r["physical_source"]
                .as_str()
                .unwrap()
                .contains("ZFS's allocated blocks"),
            "{r}"
        );
        assert!(
            f(r, "physical_bytes") < f(r, "physical_of_logical_bytes") / 1.5,
            "gzip compresses sysbench's pages: {r}"
        );
        // The dataset's used change is the relations' blocks and a little
        // metadata (measured: 0.7 MiB of 11.7), after the pool committed.
        let sp = &r["physical_split"];
        let (drive, rel, rest) = (
            f(sp, "drive_bytes"),
            f(sp, "relations_bytes"),
            f(sp, "rest_bytes"),
        );
        assert_eq!(rel, f(r, "physical_bytes"));
        assert!(rest.abs() < 0.15 * drive + f64::from(1u32 << 20), "{sp}");
    }
    assert!(f(&rows[1], "ratio") > f(&rows[0], "ratio"), "{rows:?}");

    // estimate on the data directory: ZFS's allocation per file and per
    // relation beside the model's figure.
    let ran = csdchar(&[
        "estimate",
        pgdata.to_str().unwrap(),
        "--output-format",
        "json",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let e: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert!(
        e["zfs"].as_str().unwrap().contains("compression gzip"),
        "{}",
        e["zfs"]
    );
    let biggest = &e["postgres"]["relations"][0];
    let allocated = biggest["main_allocated_bytes"].as_f64().unwrap();
    let logical = biggest["main"]["logical_bytes"].as_f64().unwrap();
    assert!(
        allocated > 0.0 && allocated < logical / 1.5,
        "ZFS stores the largest relation compressed: {biggest}"
    );
    let text = csdchar(&["estimate", pgdata.to_str().unwrap()]).stdout;
    assert!(
        text.contains("ZFS allocated") && text.contains("on ZFS, dataset"),
        "{text}"
    );
}
