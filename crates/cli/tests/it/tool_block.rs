//! The binary names its build: `csdchar --version` and every result's `tool` block carry the
//! version, the commit of the checkout it was built from (and whether the built sources
//! differed), the profile, the TLS library and whether io_uring could be set up.

use std::path::Path;
use std::process::Command;

fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// What git says of the workspace now: (HEAD, whether the built sources differ from it), or
/// None outside a git checkout (a source tarball), where the build says "unknown".
fn git_state() -> Option<(String, bool)> {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("--no-optional-locks")
            .arg("-C")
            .arg(workspace())
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    git(&["ls-files", "--error-unmatch", "crates/cli/Cargo.toml"])?;
    let head = git(&["rev-parse", "HEAD"])?;
    // The paths build.rs watches: every crate's sources and manifests, Cargo.toml/lock.
    let mut args = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    let mut paths = vec!["Cargo.toml".to_string(), "Cargo.lock".to_string()];
    if workspace().join("rust-toolchain.toml").exists() {
        paths.push("rust-toolchain.toml".to_string());
    }
    for e in std::fs::read_dir(workspace().join("crates")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        for part in ["Cargo.toml", "src", "build.rs", "build"] {
            let rel = format!("crates/{name}/{part}");
            if workspace().join(&rel).exists() {
                paths.push(rel);
            }
        }
    }
    args.extend(paths.iter().map(String::as_str));
    let dirty = !git(&args)?.is_empty();
    Some((head, dirty))
}

fn expected_io_uring() -> bool {
    csdchar_fio_like::uring::UringEngine::new(-1, 1).is_ok()
}

#[test]
fn a_block_result_carries_the_commit_dirty_state_and_build() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_csdchar"))
        .args([
            "block", "--engine", "null", "--rw", "randread", "--size", "1m",
        ])
        .args([
            "--runtime",
            "200ms",
            "--time-based",
            "--output-format",
            "json",
        ])
        .arg(dir.path().join("data"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tool = &v["tool"];
    assert_eq!(tool["name"], "csdchar");
    assert_eq!(tool["version"], env!("CARGO_PKG_VERSION"));
    match git_state() {
        Some((head, dirty)) => {
            assert_eq!(tool["commit"], head.as_str());
            assert_eq!(tool["dirty"], dirty);
        }
        None => {
            assert_eq!(tool["commit"], "unknown");
            assert!(tool["dirty"].is_null());
        }
    }
    let build = &tool["build"];
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    assert_eq!(build["profile"], profile);
    assert!(
        build["target"].as_str().unwrap().contains("linux"),
        "{build}"
    );
    let tls = build["tls"].as_str().unwrap();
    assert!(
        tls.starts_with("rustls 0.") && tls.ends_with("(ring)"),
        "{tls}"
    );
    assert_eq!(build["io_uring"], expected_io_uring());
}

#[test]
fn an_estimate_result_made_in_process_carries_the_same_build() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, vec![7u8; 64 * 1024]).unwrap();
    let mut out = Vec::new();
    let mut err = Vec::new();
    let cli = <csdchar_cli::Cli as clap::Parser>::try_parse_from([
        "csdchar",
        "estimate",
        "--output-format",
        "json",
        file.to_str().unwrap(),
    ])
    .unwrap();
    let mut io = csdchar_cli::Io {
        stdout: &mut out,
        stderr: &mut err,
        interrupt: Default::default(),
    };
    assert_eq!(csdchar_cli::run(cli, &mut io).exit_code, 0);
    let result: csdchar_core::estimate::EstimateResult = serde_json::from_slice(&out).unwrap();
    assert_eq!(result.tool, csdchar_cli::build_info::tool_info());
    assert_ne!(result.tool.commit, "", "{:?}", result.tool);
    assert!(result.tool.build.is_some());
}

#[test]
fn version_names_the_commit_and_the_build() {
    let out = Command::new(env!("CARGO_BIN_EXE_csdchar"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(concat!("csdchar ", env!("CARGO_PKG_VERSION")))
    );
    let commit = lines.next().unwrap();
    match git_state() {
        Some((head, dirty)) => {
            assert!(commit.starts_with(&format!("commit: {head}")), "{text}");
            assert_eq!(commit.contains("changes to the sources"), dirty, "{text}");
        }
        None => assert!(commit.starts_with("commit: unknown"), "{text}"),
    }
    assert!(text.contains("\nbuild: "), "{text}");
    assert!(text.contains("\ntls: rustls "), "{text}");
    let uring = if expected_io_uring() {
        "io_uring: available"
    } else {
        "io_uring: unavailable"
    };
    assert!(text.contains(uring), "{text}");

    let short = Command::new(env!("CARGO_BIN_EXE_csdchar"))
        .arg("-V")
        .output()
        .unwrap();
    let short = String::from_utf8(short.stdout).unwrap();
    assert!(
        short.starts_with(concat!("csdchar ", env!("CARGO_PKG_VERSION"), " (")),
        "{short}"
    );
}
