//! Golden files: what pgbench 15.18 printed, recorded by these tests when
//! `CSDCHAR_RECORD_GOLDEN=1` and the binary is there, compared with always; and where
//! the binary is there, compared with it live too.
#![allow(dead_code)]

pub mod driver;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The pgbench these goldens come from.
pub const PGBENCH: &str = "/usr/lib/postgresql/15/bin/pgbench";

pub fn pgbench() -> Option<&'static Path> {
    let p = Path::new(PGBENCH);
    p.exists().then_some(p)
}

pub fn golden_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Reads a golden file: `== case` headers, each followed by its text.
pub fn read_golden(name: &str) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(golden_path(name)).unwrap_or_default();
    let mut m = BTreeMap::new();
    let mut cur: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("== ") {
            if let Some((k, v)) = cur.take() {
                m.insert(k, v.join("\n"));
            }
            cur = Some((h.to_string(), Vec::new()));
        } else if let Some((_, v)) = cur.as_mut() {
            v.push(line);
        }
    }
    if let Some((k, v)) = cur {
        m.insert(k, v.join("\n"));
    }
    m
}

pub fn write_golden(name: &str, header: &str, cases: &BTreeMap<String, String>) {
    let mut s = String::from(header);
    for (k, v) in cases {
        s.push_str("== ");
        s.push_str(k);
        s.push('\n');
        s.push_str(v);
        s.push('\n');
    }
    std::fs::create_dir_all(golden_path("").parent().unwrap().join("golden")).unwrap();
    std::fs::write(golden_path(name), s).unwrap();
}

pub fn recording() -> bool {
    std::env::var("CSDCHAR_RECORD_GOLDEN").is_ok_and(|v| v == "1")
}
