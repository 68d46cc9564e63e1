//! fio's whole-buffer deduplication (`dedupe_percentage`, `dedupe_mode`,
//! `dedupe_working_set_percentage`, `dedupe_global`) against fio itself:
//! the same job writes a file with each tool, and the files' 4 KiB blocks
//! are hashed and counted.

use crate::fio_parity::fio;

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;

/// Copies of each distinct 4 KiB block of `files`, per file.
fn block_counts(files: &[&Path]) -> Vec<HashMap<u64, u64>> {
    files
        .iter()
        .map(|f| {
            let data = std::fs::read(f).unwrap();
            let mut counts = HashMap::new();
            for block in data.chunks(4096) {
                let mut h = DefaultHasher::new();
                block.hash(&mut h);
                *counts.entry(h.finish()).or_default() += 1;
            }
            counts
        })
        .collect()
}

/// (share of blocks that repeat an earlier one, distinct blocks, contents
/// written more than once).
fn shape(counts: &HashMap<u64, u64>) -> (f64, u64, u64) {
    let total: u64 = counts.values().sum();
    let distinct = counts.len() as u64;
    let repeated = counts.values().filter(|&&n| n > 1).count() as u64;
    (1.0 - distinct as f64 / total as f64, distinct, repeated)
}

/// Runs `job` (a job file whose files are `DIR/WHO.NAME`) with fio and with
/// csdchar in `dir`; the block counts of `names`' files, fio's first.
fn both(dir: &Path, job: &str, names: &[&str]) -> [Vec<HashMap<u64, u64>>; 2] {
    ["fio", "csdchar"].map(|who| {
        let text = job
            .replace("DIR", &dir.display().to_string())
            .replace("WHO", who);
        let path = dir.join(format!("{who}.fio"));
        std::fs::write(&path, text).unwrap();
        crate::fio_parity::run_job_file_ok(who, &path);
        let files: Vec<std::path::PathBuf> = names
            .iter()
            .map(|n| dir.join(format!("{who}.{n}")))
            .collect();
        let refs: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
        block_counts(&refs)
    })
}

#[test]
fn duplicate_blocks_are_fio_s_share_in_both_modes() {
    if fio().is_none() {
        return;
    }
    for (mode, pct) in [
        ("repeat", 30),
        ("repeat", 70),
        ("working_set", 30),
        ("working_set", 80),
    ] {
        let d = tempfile::tempdir().unwrap();
        // 16,384 blocks written once each; a 10% working set is 1,638 pages.
        let job = format!(
            "[global]\nrw=write\nbs=4k\nsize=64m\ndedupe_percentage={pct}\ndedupe_mode={mode}\n\
             dedupe_working_set_percentage=10\n[d]\nfilename=DIR/WHO.data\n"
        );
        let [theirs, ours] = both(d.path(), &job, &["data"]);
        let (t, o) = (shape(&theirs[0]), shape(&ours[0]));
        eprintln!("{mode} {pct}%: fio {t:?}, csdchar {o:?}");
        assert!(
            (t.0 - o.0).abs() <= 0.02 && (o.0 - f64::from(pct) / 100.0).abs() <= 0.02,
            "{mode} {pct}%: duplicate share fio {:.3}, csdchar {:.3}",
            t.0,
            o.0
        );
        // Contents written more than once: in repeat mode about one per run of
        // duplicates; in working_set mode the pages drawn, at most 1,638.
        let (tr, or) = (t.2 as f64, o.2 as f64);
        assert!(
            (tr / or - 1.0).abs() <= 0.08,
            "{mode} {pct}%: repeated contents fio {tr}, csdchar {or}"
        );
        if mode == "working_set" {
            assert!(o.2 <= 1638 && t.2 <= 1638, "{t:?} {o:?}");
        }
    }
}

#[test]
fn a_global_working_set_is_shared_between_jobs_as_fio_shares_it() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let job = "[global]\nrw=write\nbs=4k\nsize=32m\ndedupe_percentage=40\n\
               dedupe_mode=working_set\ndedupe_working_set_percentage=20\ndedupe_global=1\n\
               [a]\nfilename=DIR/WHO.a\n[b]\nfilename=DIR/WHO.b\n";
    let [theirs, ours] = both(d.path(), job, &["a", "b"]);
    let shared = |c: &[HashMap<u64, u64>]| c[0].keys().filter(|k| c[1].contains_key(k)).count();
    let (ts, os) = (shared(&theirs) as f64, shared(&ours) as f64);
    eprintln!("global: blocks in both files: fio {ts}, csdchar {os}");
    // 8,192 blocks each, 1,638 pages in runs of 819 per job: each job's first
    // 819 unique blocks are in the other's file too, where drawn.
    assert!(ts > 500.0, "fio shares {ts}");
    assert!(
        (ts / os - 1.0).abs() <= 0.05,
        "blocks in both files: fio {ts}, csdchar {os}"
    );
    for (t, o) in theirs.iter().zip(&ours) {
        let (t, o) = (shape(t), shape(o));
        assert!((t.0 - o.0).abs() <= 0.02, "fio {t:?}, csdchar {o:?}");
    }
    // Without dedupe_global no block is in both.
    let d = tempfile::tempdir().unwrap();
    let [_, ours] = both(
        d.path(),
        &job.replace("dedupe_global=1", "dedupe_global=0"),
        &["a", "b"],
    );
    assert_eq!(shared(&ours), 0);
}
