//! The build script's view of the sources (`build/source.rs`, compiled in here as it is into
//! build.rs): the commit and dirty state from git, "unknown" without git metadata, the paths
//! that make the binary, and the TLS library read from Cargo.lock.

#[path = "../../build/source.rs"]
mod source;

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A workspace laid out like csdchar's: crates/cli with src, a test, and a README.
fn lay_out(root: &Path) {
    for (path, text) in [
        ("Cargo.toml", "[workspace]\n"),
        ("Cargo.lock", "version = 4\n"),
        ("README.md", "readme\n"),
        ("crates/cli/Cargo.toml", "[package]\n"),
        ("crates/cli/build.rs", "fn main() {}\n"),
        ("crates/cli/src/main.rs", "fn main() {}\n"),
        ("crates/cli/tests/t.rs", "\n"),
        ("crates/core/Cargo.toml", "[package]\n"),
        ("crates/core/src/lib.rs", "\n"),
        ("crates/notacrate/file", "\n"),
    ] {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    // The tests below need a scratch directory outside any repository.
    let inside = Command::new("git")
        .arg("-C")
        .arg(dir.path())
        .args(["rev-parse", "--git-dir"])
        .output()
        .unwrap();
    assert!(
        !inside.status.success(),
        "{} lies inside a git repository",
        dir.path().display()
    );
    dir
}

#[test]
fn built_paths_are_the_crates_sources_and_manifests_only() {
    let dir = scratch();
    lay_out(dir.path());
    assert_eq!(
        source::built_paths(dir.path()),
        [
            "Cargo.toml",
            "Cargo.lock",
            "crates/cli/Cargo.toml",
            "crates/cli/src",
            "crates/cli/build.rs",
            "crates/core/Cargo.toml",
            "crates/core/src",
        ]
    );
}

#[test]
fn a_tree_without_git_metadata_builds_with_commit_unknown() {
    let dir = scratch();
    lay_out(dir.path());
    let built = source::built_paths(dir.path());
    let state = source::source_state(dir.path(), "crates/cli/Cargo.toml", &built);
    assert_eq!(state.commit, None);
    assert_eq!(state.dirty, None);
    assert_eq!(state.problem, None, "no .git: nothing to warn about");
    assert!(state.git_watch.is_empty());
}

#[test]
fn a_tarball_unpacked_inside_another_repository_is_not_that_repositorys_commit() {
    let dir = scratch();
    git(dir.path(), &["init", "-q"]);
    std::fs::write(dir.path().join("notes"), "x\n").unwrap();
    git(dir.path(), &["add", "notes"]);
    git(dir.path(), &["commit", "-qm", "home"]);
    let ws = dir.path().join("src/csdchar-0.1.0");
    lay_out(&ws);
    let state = source::source_state(&ws, "crates/cli/Cargo.toml", &source::built_paths(&ws));
    assert_eq!(state.commit, None);
    assert_eq!(state.dirty, None);
}

#[test]
fn commit_and_dirty_come_from_git_and_only_built_sources_make_a_tree_dirty() {
    let dir = scratch();
    let ws = dir.path();
    lay_out(ws);
    git(ws, &["init", "-q", "-b", "main"]);
    git(ws, &["add", "."]);
    git(ws, &["commit", "-qm", "first"]);
    let built = source::built_paths(ws);
    let state = source::source_state(ws, "crates/cli/Cargo.toml", &built);
    assert_eq!(
        state.commit.as_deref(),
        Some(git(ws, &["rev-parse", "HEAD"]).as_str())
    );
    assert_eq!(state.dirty, Some(false));
    assert_eq!(state.problem, None);
    // A commit moves the branch's ref and appends to HEAD's reflog: both watched.
    let watched: Vec<String> = state
        .git_watch
        .iter()
        .map(|p| p.strip_prefix(ws).unwrap_or(p).display().to_string())
        .collect();
    for want in [".git/HEAD", ".git/logs/HEAD", ".git/refs/heads/main"] {
        assert!(
            watched.iter().any(|w| w == want),
            "{want} not in {watched:?}"
        );
    }

    // Docs and tests are not in the binary.
    std::fs::write(ws.join("README.md"), "changed\n").unwrap();
    std::fs::write(ws.join("crates/cli/tests/t.rs"), "// changed\n").unwrap();
    let state = source::source_state(ws, "crates/cli/Cargo.toml", &built);
    assert_eq!(state.dirty, Some(false));
    // A source that is.
    std::fs::write(ws.join("crates/core/src/lib.rs"), "// changed\n").unwrap();
    let state = source::source_state(ws, "crates/cli/Cargo.toml", &built);
    assert_eq!(state.dirty, Some(true));
    // Committed: clean again, at the new commit.
    git(ws, &["commit", "-qam", "second"]);
    let state = source::source_state(ws, "crates/cli/Cargo.toml", &built);
    assert_eq!(state.dirty, Some(false));
    assert_eq!(
        state.commit.as_deref(),
        Some(git(ws, &["rev-parse", "HEAD"]).as_str())
    );
}

#[test]
fn the_tls_library_is_read_from_cargo_lock() {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock"))
        .expect("the workspace's Cargo.lock");
    let tls = source::tls_library(&lock).expect("rustls is in Cargo.lock");
    assert!(tls.starts_with("rustls 0.23."), "{tls}");
    assert!(tls.ends_with(" (ring)"), "{tls}");

    let aws = "[[package]]\nname = \"rustls\"\nversion = \"0.23.9\"\nsource = \"registry\"\n\
               dependencies = [\n \"aws-lc-rs\",\n \"log\",\n]\n\n[[package]]\nname = \"x\"\n";
    assert_eq!(
        source::tls_library(aws).as_deref(),
        Some("rustls 0.23.9 (aws-lc-rs)")
    );
    assert_eq!(source::tls_library("[[package]]\nname = \"ring\"\n"), None);
}
