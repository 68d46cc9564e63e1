//! Which build this binary is (compiled in by `build.rs`) and what it found on this machine
//! at start (io_uring): the `tool` block of every result and `csdchar --version`.

use std::sync::OnceLock;

use csdchar_core::result::{BuildInfo, ToolInfo};

/// The git commit the binary was built from, or "unknown".
pub const COMMIT: &str = env!("CSDCHAR_BUILD_COMMIT");
/// "true", "false" or "unknown": whether the built sources differed from [`COMMIT`].
pub const DIRTY: &str = env!("CSDCHAR_BUILD_DIRTY");
/// Cargo's profile kind ("release" or "debug").
pub const PROFILE: &str = env!("CSDCHAR_BUILD_PROFILE");
/// The target triple.
pub const TARGET: &str = env!("CSDCHAR_BUILD_TARGET");
/// The TLS library of database connections, e.g. "rustls 0.23.46 (ring)".
pub const TLS: &str = env!("CSDCHAR_BUILD_TLS");

/// Whether this process can set up an io_uring (Err: why not), probed once.
pub fn io_uring() -> Result<(), String> {
    static PROBED: OnceLock<Result<(), String>> = OnceLock::new();
    PROBED
        .get_or_init(|| {
            // fd -1: a ring without a registered file, set up as the block engine's are.
            csdchar_fio_like::uring::UringEngine::new(-1, 1)
                .map(drop)
                .map_err(|e| e.to_string())
        })
        .clone()
}

/// This build, as results record it.
pub fn tool_info() -> ToolInfo {
    ToolInfo {
        name: "csdchar".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        commit: COMMIT.to_string(),
        dirty: match DIRTY {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        },
        build: Some(BuildInfo {
            profile: PROFILE.to_string(),
            target: TARGET.to_string(),
            io_uring: io_uring().is_ok(),
            tls: TLS.to_string(),
        }),
    }
}

/// Makes this build the one every result of the process carries (idempotent).
pub fn register() -> &'static ToolInfo {
    ToolInfo::register(tool_info)
}

/// The commit as a person reads it: 12 digits and the tree's state.
fn commit_words() -> String {
    match (COMMIT, DIRTY) {
        ("unknown", _) => "commit unknown".to_string(),
        (c, "true") => format!("{}, dirty", &c[..12.min(c.len())]),
        (c, _) => c[..12.min(c.len())].to_string(),
    }
}

/// `csdchar -V`: the version and commit on one line.
pub fn short_version() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| format!("{} ({})", env!("CARGO_PKG_VERSION"), commit_words()))
}

/// `csdchar --version`: the version, the full commit, the build and what it found here.
pub fn long_version() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(long_version_text)
}

fn long_version_text() -> String {
    let dirty = match DIRTY {
        "true" => " (built with changes to the sources)",
        "false" => "",
        _ => "",
    };
    let commit = if COMMIT == "unknown" {
        "unknown (built without git metadata)".to_string()
    } else {
        format!("{COMMIT}{dirty}")
    };
    let uring = match io_uring() {
        Ok(()) => "available".to_string(),
        Err(e) => e
            .strip_prefix("io_uring is ")
            .unwrap_or(e.as_str())
            .to_string(),
    };
    format!(
        "{}\ncommit: {commit}\nbuild: {PROFILE}, {TARGET}\ntls: {TLS}\nio_uring: {uring}",
        env!("CARGO_PKG_VERSION")
    )
}
