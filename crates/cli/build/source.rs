//! What the build script learns about the sources it builds: the git commit, whether the
//! sources compiled into the binary differ from it, the files to watch so that both stay true,
//! and the TLS library in Cargo.lock. Also compiled into the tests (`tests/build_source.rs`),
//! which run it on scratch repositories and a tree without git metadata.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The commit and the state of the sources, as far as git can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceState {
    /// Full commit hash; None outside a git checkout of these sources.
    pub commit: Option<String>,
    /// Whether the built sources differ from the commit; None when the commit is unknown.
    pub dirty: Option<bool>,
    /// Why the commit is unknown although the tree has git metadata (git missing or refusing).
    pub problem: Option<String>,
    /// git's files whose change means a new commit or checkout (absolute paths, all existing).
    pub git_watch: Vec<PathBuf>,
}

/// The workspace's paths compiled into the binary (relative to `workspace`, existing ones only):
/// each crate's `src/`, build script and manifest, the workspace manifest, Cargo.lock and the
/// toolchain pin. Tests, benches, docs and examples are not part of the binary, so editing them
/// neither makes a build dirty nor re-runs the build script (which would rebuild every test).
pub fn built_paths(workspace: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    for file in ["Cargo.toml", "Cargo.lock", "rust-toolchain.toml"] {
        if workspace.join(file).exists() {
            paths.push(file.to_string());
        }
    }
    let mut crates: Vec<String> = std::fs::read_dir(workspace.join("crates"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    crates.sort();
    for name in crates {
        for part in ["Cargo.toml", "src", "build.rs", "build"] {
            let rel = format!("crates/{name}/{part}");
            if workspace.join(&rel).exists() {
                paths.push(rel);
            }
        }
    }
    paths
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    // No optional locks: `git status` would otherwise refresh the index under index.lock, and a
    // build running beside the user's own git command would make theirs fail.
    let out = Command::new("git")
        .arg("--no-optional-locks")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "git {}: {}",
            args.join(" "),
            err.lines().next().unwrap_or("failed")
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

/// The state of the sources at `workspace`, whose file `marker` (e.g. "crates/cli/Cargo.toml")
/// must be tracked by the repository found there: a source tarball unpacked inside some other
/// repository (a home directory under git, a packaging repository) is not that repository's
/// commit.
pub fn source_state(workspace: &Path, marker: &str, built: &[String]) -> SourceState {
    let none = |problem: Option<String>| SourceState {
        commit: None,
        dirty: None,
        problem,
        git_watch: Vec::new(),
    };
    if let Err(e) = git(workspace, &["ls-files", "--error-unmatch", "--", marker]) {
        // No repository, or one that does not hold these sources: unknown, and only worth a
        // word when the tree itself has git metadata.
        let has_git = workspace.join(".git").exists();
        return none(has_git.then_some(e));
    }
    let commit = match git(workspace, &["rev-parse", "--verify", "HEAD"]) {
        Ok(c) if c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()) => c,
        Ok(c) => return none(Some(format!("git rev-parse HEAD said {c:?}"))),
        Err(e) => return none(Some(e)),
    };
    let mut args = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    args.extend(built.iter().map(String::as_str));
    let dirty = match git(workspace, &args) {
        Ok(s) => !s.is_empty(),
        Err(e) => return none(Some(e)),
    };
    // A commit, checkout, reset or merge moves HEAD and appends to its reflog; the branch's
    // ref changes with a commit. Only existing files: cargo re-runs the script on every build
    // while a watched path is missing.
    let mut names = vec![
        "HEAD".to_string(),
        "logs/HEAD".to_string(),
        "packed-refs".to_string(),
    ];
    if let Ok(r) = git(workspace, &["symbolic-ref", "-q", "HEAD"]) {
        names.push(r);
    }
    let mut git_watch = Vec::new();
    for name in names {
        if let Ok(p) = git(workspace, &["rev-parse", "--git-path", &name]) {
            let p = workspace.join(p);
            if p.is_file() {
                git_watch.push(p);
            }
        }
    }
    SourceState {
        commit: Some(commit),
        dirty: Some(dirty),
        problem: None,
        git_watch,
    }
}

/// The TLS library in Cargo.lock: "rustls VERSION (PROVIDER)", the provider being the crypto
/// crate rustls depends on (ring or aws-lc-rs). None when Cargo.lock has no rustls.
pub fn tls_library(cargo_lock: &str) -> Option<String> {
    let mut found = None;
    for block in cargo_lock.split("[[package]]") {
        let field = |key: &str| {
            block.lines().find_map(|l| {
                l.strip_prefix(key)
                    .and_then(|v| v.trim().strip_prefix('='))
                    .map(|v| v.trim().trim_matches('"').to_string())
            })
        };
        if field("name ").as_deref() != Some("rustls") {
            continue;
        }
        let version = field("version ")?;
        let deps: Vec<&str> = block
            .lines()
            .skip_while(|l| !l.starts_with("dependencies"))
            .skip(1)
            .take_while(|l| !l.starts_with(']'))
            .map(|l| l.trim().trim_end_matches(',').trim_matches('"'))
            .map(|d| d.split(' ').next().unwrap_or(d))
            .collect();
        let providers: Vec<&str> = ["ring", "aws-lc-rs"]
            .into_iter()
            .filter(|p| deps.contains(p))
            .collect();
        found = Some(if providers.is_empty() {
            format!("rustls {version}")
        } else {
            format!("rustls {version} ({})", providers.join(", "))
        });
    }
    found
}
