//! `csdchar estimate` in-process on generated files and a fixture data directory.

use crate::common;

use common::{csdchar, write_compressible};

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("csdchar-est")
        .tempdir_in("/var/tmp")
        .unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut a = vec!["estimate"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--output-format", "json"]);
    let ran = csdchar(&a);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    let v: serde_json::Value = serde_json::from_str(&ran.stdout).expect("JSON only");
    common::assert_matches_schema(&v, "estimate");
    v
}

#[test]
fn known_data_gives_known_ratios() {
    let d = tmp();
    let gen75 = d.path().join("c75");
    write_compressible(gen75.to_str().unwrap(), "16m", 75, &[]);
    let random = d.path().join("random");
    let mut s = 0x1234_5678u64;
    let bytes: Vec<u8> = (0..4 << 20)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 24) as u8
        })
        .collect();
    std::fs::write(&random, bytes).unwrap();
    let zeros = d.path().join("zeros");
    std::fs::File::create(&zeros)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();

    let v = json(&[d.path().to_str().unwrap(), "--codec", "lz4"]);
    let files = v["files"].as_array().unwrap();
    let by_name = |n: &str| {
        files
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with(n))
            .unwrap()
    };
    let r75 = by_name("c75")["estimate"]["ratio"].as_f64().unwrap();
    assert!((r75 / 4.0 - 1.0).abs() < 0.03, "lz4 on 75% data: {r75}");
    let rr = by_name("random")["estimate"]["ratio"].as_f64().unwrap();
    assert!((rr - 1.0).abs() < 0.001, "random: {rr}");
    // A sparse file of zeros: nothing stored, nothing allocated.
    assert_eq!(
        by_name("zeros")["estimate"]["stored_bytes"].as_f64(),
        Some(0.0)
    );
    assert_eq!(by_name("zeros")["allocated_bytes"].as_u64(), Some(0));
    assert_eq!(v["total"]["logical_bytes"].as_u64(), Some(28 << 20));
    assert!(v["optimistic"].is_null(), "bound only for deflate-fixed");

    // The default model reports the optimistic bound, which is not lower.
    let v = json(&[gen75.to_str().unwrap()]);
    assert_eq!(v["codec"], "deflate-fixed");
    let fixed = v["total"]["ratio"].as_f64().unwrap();
    let bound = v["optimistic"]["ratio"].as_f64().unwrap();
    assert!(bound >= fixed * 0.98, "bound {bound} fixed {fixed}");
}

#[test]
fn a_sample_brackets_the_full_scan() {
    let d = tmp();
    let f = d.path().join("c60");
    write_compressible(f.to_str().unwrap(), "64m", 60, &[]);
    let full = json(&[f.to_str().unwrap(), "--codec", "lz4"]);
    let sampled = json(&[
        f.to_str().unwrap(),
        "--codec",
        "lz4",
        "--sample",
        "5",
        "--threads",
        "2",
    ]);
    let exact = full["total"]["stored_bytes"].as_f64().unwrap();
    let (lo, hi) = (
        sampled["total"]["stored_ci95"][0].as_f64().unwrap(),
        sampled["total"]["stored_ci95"][1].as_f64().unwrap(),
    );
    assert!(lo <= exact && exact <= hi, "{lo} <= {exact} <= {hi}");
    let n = sampled["total"]["sampled_chunks"].as_u64().unwrap();
    assert!((600..1050).contains(&n), "{n} of 16384 chunks sampled");
    assert!(full["total"]["stored_ci95"].is_null());
}

#[test]
fn postgres_data_directory_is_broken_down_by_kind() {
    let d = tmp();
    let root = d.path();
    std::fs::write(root.join("PG_VERSION"), "15\n").unwrap();
    std::fs::create_dir_all(root.join("base/5")).unwrap();
    std::fs::create_dir_all(root.join("pg_wal")).unwrap();
    let page = |special: u16| {
        let mut p = vec![0u8; 8192];
        p[12..14].copy_from_slice(&40u16.to_le_bytes());
        p[14..16].copy_from_slice(&4000u16.to_le_bytes());
        p[16..18].copy_from_slice(&special.to_le_bytes());
        p[18..20].copy_from_slice(&(8192u16 | 4).to_le_bytes());
        for b in &mut p[4000..special as usize] {
            *b = b'x';
        }
        p
    };
    std::fs::write(root.join("base/5/16396"), page(8192).repeat(4)).unwrap();
    std::fs::write(root.join("base/5/16396.1"), page(8192).repeat(2)).unwrap();
    std::fs::write(root.join("base/5/16396_fsm"), vec![0u8; 24576]).unwrap();
    std::fs::write(root.join("base/5/16404"), page(8176).repeat(3)).unwrap();
    std::fs::write(
        root.join("pg_wal/000000010000000000000001"),
        vec![7u8; 65536],
    )
    .unwrap();
    let v = json(&[root.to_str().unwrap()]);
    let pg = &v["postgres"];
    let kind = |k: &str| {
        pg["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["kind"] == k)
            .cloned()
    };
    assert_eq!(
        kind("heap").unwrap()["files"].as_u64(),
        Some(2),
        "both segments of 16396"
    );
    assert_eq!(kind("index").unwrap()["files"].as_u64(), Some(1));
    assert_eq!(kind("fsm").unwrap()["files"].as_u64(), Some(1));
    assert_eq!(kind("wal").unwrap()["files"].as_u64(), Some(1));
    assert_eq!(
        kind("other").unwrap()["files"].as_u64(),
        Some(1),
        "PG_VERSION"
    );
    let rels = pg["relations"].as_array().unwrap();
    assert_eq!(rels[0]["relfilenode"].as_u64(), Some(16396));
    assert_eq!(rels[0]["main"]["logical_bytes"].as_u64(), Some(6 * 8192));
    assert_eq!(rels[0]["map_bytes"].as_u64(), Some(24576));
    assert_eq!(rels[1]["kind"], "index");
}

#[test]
fn bad_paths_and_options_exit_2() {
    for (args, option) in [
        (&["estimate", "/no/such/path"][..], "PATH"),
        (&["estimate", "/tmp", "--sample", "0"][..], "--sample"),
        (&["estimate", "/tmp", "--codec", "brotli"][..], "--codec"),
        (&["estimate", "/tmp", "--chunk", "100"][..], "--chunk"),
    ] {
        let ran = csdchar(args);
        assert_eq!(ran.outcome.exit_code, 2, "{args:?}");
        assert_eq!(ran.stderr.trim_end().lines().count(), 1, "{}", ran.stderr);
        assert!(ran.stderr.contains(option), "{}", ran.stderr);
    }
}
