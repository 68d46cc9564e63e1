//! `csdchar campaign` with the real engines: a block job on a file and db
//! steps on a cluster csdchar manages in a temporary directory, interrupted
//! in the middle and resumed without redoing finished steps; a changed
//! campaign file is refused for resume unless --force.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common;

fn campaign_file(dir: &Path, target_dir: &Path, time: &str) -> std::path::PathBuf {
    let text = format!(
        r#"name = "small"

[targets.disk]
dir = "{}"

[grid]
fillfactor = [100, 70]

[[steps]]
command = "block"
args = {{ rw = "write", bs = "64k", size = "16m", compress = 75 }}

[[steps]]
command = "db prepare"
args = {{ tables = 1, table-size = 2000, force = true }}

[[steps]]
command = "db alter"
args = {{ tables = 1, fillfactor = "{{fillfactor}}" }}

[[steps]]
command = "db run"
within = ["fillfactor"]
args = {{ workload = "oltp_read_write", tables = 1, table-size = 2000, threads = "1,2", time = "{time}" }}
"#,
        target_dir.display()
    );
    let path = dir.join("small.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn manifest(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap()
}

fn statuses(out: &Path) -> Vec<(String, String)> {
    manifest(out)["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["key"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_campaign_runs_is_interrupted_and_resumes_without_redoing_steps() {
    if !common::postgres_or_skip() {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-campaign")
        .tempdir_in("/var/tmp")
        .unwrap();
    let target = dir.path().join("disk");
    std::fs::create_dir(&target).unwrap();
    let out = dir.path().join("out");
    let file = campaign_file(dir.path(), &target, "2s");
    let (file_s, out_s) = (file.to_str().unwrap(), out.to_str().unwrap());

    // The plan: 1 block job + prepare + 2 × (alter + run).
    let plan = common::csdchar(&["campaign", file_s, "--out", out_s, "--dry-run"]);
    assert_eq!(plan.outcome.exit_code, 0, "{}", plan.stderr);
    assert!(plan.stdout.contains("6 steps"), "{}", plan.stdout);
    assert!(!out.exists(), "--dry-run writes nothing");

    // Interrupt while the first db run is under way.
    let interrupt = Arc::new(AtomicBool::new(false));
    let watcher = {
        let interrupt = Arc::clone(&interrupt);
        let out = out.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(120) {
                if let Ok(bytes) = std::fs::read(out.join("manifest.json"))
                    && let Ok(m) = serde_json::from_slice::<serde_json::Value>(&bytes)
                    && m["steps"].as_array().is_some_and(|s| {
                        s.iter().any(|s| {
                            s["status"] == "running"
                                && s["key"].as_str().is_some_and(|k| k.contains("db-run"))
                        })
                    })
                {
                    std::thread::sleep(Duration::from_millis(1500));
                    interrupt.store(true, Ordering::SeqCst);
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let first = common::csdchar_with_interrupt(
        &["campaign", file_s, "--out", out_s],
        Arc::clone(&interrupt),
    );
    watcher.join().unwrap();
    assert_eq!(first.outcome.exit_code, 130, "{}", first.stderr);
    assert!(first.stderr.contains("resume"), "{}", first.stderr);
    let after_first = statuses(&out);
    let done_first: Vec<&String> = after_first
        .iter()
        .filter(|(_, s)| s == "done")
        .map(|(k, _)| k)
        .collect();
    assert!(
        after_first.iter().any(|(_, s)| s == "interrupted"),
        "{after_first:?}"
    );
    assert!(
        done_first.iter().any(|k| k.contains("block")),
        "{after_first:?}"
    );
    let block_result = std::fs::read_dir(out.join("disk"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.extension().is_some_and(|e| e == "json")
                && p.file_name().unwrap().to_str().unwrap().contains("block")
        })
        .expect("the block job's result");
    let block_mtime = std::fs::metadata(&block_result)
        .unwrap()
        .modified()
        .unwrap();

    // A changed file is refused for resume, and nothing runs.
    let changed = campaign_file(dir.path(), &target, "3s");
    let refused = common::csdchar(&["campaign", changed.to_str().unwrap(), "--out", out_s]);
    assert_eq!(refused.outcome.exit_code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert_eq!(statuses(&out), after_first);
    campaign_file(dir.path(), &target, "2s");

    // Resume: finished steps are skipped, the rest runs, and the report follows.
    let second = common::csdchar(&["campaign", file_s, "--out", out_s]);
    assert_eq!(
        second.outcome.exit_code, 0,
        "{}\n{}",
        second.stdout, second.stderr
    );
    for k in &done_first {
        assert!(
            second
                .stdout
                .contains(&format!("skipped {k}: done in an earlier run")),
            "{k} was not skipped:\n{}",
            second.stdout
        );
    }
    assert!(statuses(&out).iter().all(|(_, s)| s == "done"));
    assert_eq!(
        std::fs::metadata(&block_result)
            .unwrap()
            .modified()
            .unwrap(),
        block_mtime,
        "the block job ran again"
    );
    let m = manifest(&out);
    assert_eq!(m["file_sha256"].as_str().map(str::len), Some(64), "{m}");
    assert!(m["kernel"].as_str().is_some_and(|k| !k.is_empty()), "{m}");
    assert!(out.join("report/report.html").is_file());
    // Every db run result is a csdchar.db/1 document with both thread counts.
    for (key, _) in statuses(&out).iter().filter(|(k, _)| k.contains("db-run")) {
        let stem = key.rsplit('/').next().unwrap();
        let v: serde_json::Value = serde_json::from_slice(
            &std::fs::read(out.join("disk").join(format!("{stem}.json"))).unwrap(),
        )
        .unwrap();
        common::assert_matches_schema(&v, "db");
        assert_eq!(v["steps"].as_array().unwrap().len(), 2, "{key}");
    }
}

/// Issue 38 row 10: a zfs target's property value that `zfs` would refuse
/// after the pool is made (`compression = "bogus"`, `recordsize = "3k"`) is
/// refused by the dry run, exit 2, with the values the ZFS here allows; so
/// is `sync` where zfs-fuse, which has no such property, would make the pool.
#[test]
fn a_zfs_targets_bad_property_values_are_refused_in_the_dry_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let fuse = !Path::new("/sys/module/zfs").exists();
    let mut cases = vec![
        (
            "compression",
            "bogus",
            "targets.gz.zfs.compression: 'bogus' is not a value",
            "(allowed: on | off | lzjb | gzip | gzip-[1-9] | zle",
        ),
        (
            "recordsize",
            "3k",
            "targets.gz.zfs.recordsize: '3k' is not a value",
            "(allowed: a power of 2 from 512 to ",
        ),
        (
            "copies",
            "4",
            "targets.gz.zfs.copies: '4' is not a value",
            "(allowed: 1 | 2 | 3)",
        ),
    ];
    if fuse {
        cases.push((
            "sync",
            "always",
            "targets.gz.zfs.sync: zfs-fuse has no dataset property sync",
            "",
        ));
    }
    for (property, value, says, allowed) in cases {
        let file = dir.path().join("z.toml");
        std::fs::write(
            &file,
            format!(
                r#"name = "zbad"
[targets.gz]
zfs = {{ size = "256m", {property} = "{value}" }}
[[steps]]
command = "block"
args = {{ rw = "write", size = "1m" }}
"#
            ),
        )
        .unwrap();
        let ran = common::csdchar(&[
            "campaign",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--dry-run",
        ]);
        assert_eq!(
            ran.outcome.exit_code, 2,
            "{property}={value}: {}",
            ran.stderr
        );
        let line = ran.stderr.trim();
        assert!(
            line.contains(says) && line.contains(allowed) && line.lines().count() == 1,
            "{property}={value}: {line}"
        );
        assert!(!out.exists(), "nothing written");
    }
}
