//! Versioned result schemas. Every field carries a `///` doc comment, which
//! becomes its description in the committed JSON Schema (`schemas/`).

pub mod block;
pub mod db;
pub mod script;
pub mod study;

use serde::{Deserialize, Serialize};

/// The program that produced a result, and which build of it: two results whose `version`,
/// `commit`, `dirty` and `build` agree were made by the same build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolInfo {
    /// Always "csdchar".
    pub name: String,
    /// csdchar's version (Cargo package version).
    pub version: String,
    /// The git commit the binary was built from (40 hex digits), or "unknown": built from a
    /// tree without git metadata (a source tarball), or a result made by a program that did not
    /// register its build (results written before this field existed read as "unknown" too).
    #[serde(default = "unknown")]
    pub commit: String,
    /// Whether the sources compiled into the binary (the crates' `src/`, build scripts and
    /// manifests, `Cargo.lock`, `rust-toolchain.toml`) differed from `commit` when it was built;
    /// null when unknown.
    #[serde(default)]
    pub dirty: Option<bool>,
    /// How the binary was built and what it found on this machine; null when unknown.
    #[serde(default)]
    pub build: Option<BuildInfo>,
}

/// A build's profile and features.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BuildInfo {
    /// Cargo's profile kind: "release" (optimized) or "debug" (a test build: unoptimized, its
    /// figures are not comparable with a release build's).
    pub profile: String,
    /// The target triple, e.g. "x86_64-unknown-linux-gnu".
    pub target: String,
    /// Whether the process could set up an io_uring on this kernel when it started (the block
    /// engine and the io_uring database client need it; kernel.io_uring_disabled or a seccomp
    /// policy can deny it).
    pub io_uring: bool,
    /// The TLS library of database connections, its version and crypto provider, e.g.
    /// "rustls 0.23.46 (ring)".
    pub tls: String,
}

fn unknown() -> String {
    "unknown".to_string()
}

/// The running program's build, registered once by the binary ([`ToolInfo::register`]).
static REGISTERED: std::sync::OnceLock<ToolInfo> = std::sync::OnceLock::new();

impl ToolInfo {
    /// This build of csdchar: what the binary registered, else the version alone (commit
    /// "unknown", no build).
    pub fn current() -> Self {
        REGISTERED.get().cloned().unwrap_or_else(|| ToolInfo {
            name: "csdchar".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            commit: unknown(),
            dirty: None,
            build: None,
        })
    }

    /// Makes `make()`'s build the one every result of this process carries. Only the first
    /// registration counts (a process is one build); returns the registered one.
    pub fn register(make: impl FnOnce() -> ToolInfo) -> &'static ToolInfo {
        REGISTERED.get_or_init(make)
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Ran to its planned end.
    Completed,
    /// Stopped early by SIGINT/SIGTERM; figures cover the time until the stop.
    Interrupted,
    /// Stopped early by an I/O error (see `error`); figures cover the time until the error.
    IoError,
    /// Ran to its end but verification found bad blocks (see `verify`).
    VerifyFailed,
}

/// When a run was told to start at an instant (`--start-at`, or the instant a controller of
/// several hosts picked): the instant, when its measured period really began, and how late.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StartRecord {
    /// The instant asked for, RFC 3339 UTC with milliseconds.
    pub requested: String,
    /// When the run's clock really started (its ramp-up or warm-up first, then the measured
    /// period), RFC 3339 UTC with milliseconds, read after the wait.
    pub began: String,
    /// How late it began, ms (`began` − `requested`, to the microsecond; 0 when it began
    /// before, which a wait never lets happen).
    pub late_ms: f64,
    /// The lateness allowed (`--start-late-limit`), ms.
    pub limit_ms: f64,
    /// Whether `late_ms` exceeded `limit_ms`: the set-up overran the instant, so this run
    /// measured a later period than the other hosts started at the same instant.
    pub too_late: bool,
}

impl StartRecord {
    /// The record of a run asked to start at `requested` whose clock started at `began`.
    pub fn new(
        requested: std::time::SystemTime,
        began: std::time::SystemTime,
        limit: std::time::Duration,
    ) -> Self {
        let late = began
            .duration_since(requested)
            .unwrap_or_default()
            .as_micros() as f64
            / 1000.0;
        let limit_ms = limit.as_micros() as f64 / 1000.0;
        StartRecord {
            requested: crate::start_at::format_rfc3339_millis(requested),
            began: crate::start_at::format_rfc3339_millis(began),
            late_ms: late,
            limit_ms,
            too_late: late > limit_ms,
        }
    }
}

/// CPU time used by csdchar during the measured period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CpuUsage {
    /// User CPU seconds of the whole process (all threads, io_uring workers included).
    pub user_s: f64,
    /// System CPU seconds of the whole process (all threads, io_uring workers included).
    pub system_s: f64,
    /// User CPU as % of one core over the measured period (fio's `usr_cpu`, for the whole process).
    pub user_pct: f64,
    /// System CPU as % of one core over the measured period.
    pub system_pct: f64,
    /// Machine-wide busy % from /proc/stat over the measured period (100 = all cores busy).
    pub machine_busy_pct: Option<f64>,
    /// Online CPU cores.
    pub cores: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_block_written_before_commits_were_recorded_reads_as_unknown() {
        let old: ToolInfo =
            serde_json::from_str(r#"{"name": "csdchar", "version": "0.1.0"}"#).unwrap();
        assert_eq!(old.commit, "unknown");
        assert_eq!(old.dirty, None);
        assert_eq!(old.build, None);
    }

    #[test]
    fn a_start_record_measures_lateness_against_its_limit() {
        use std::time::{Duration, UNIX_EPOCH};
        let at = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let r = StartRecord::new(
            at,
            at + Duration::from_micros(3_250),
            Duration::from_millis(50),
        );
        assert_eq!(r.late_ms, 3.25);
        assert!(!r.too_late);
        assert_eq!(r.requested, "2027-01-15T08:00:00.000Z");
        let r = StartRecord::new(
            at,
            at + Duration::from_millis(900),
            Duration::from_millis(50),
        );
        assert!(r.too_late);
        assert_eq!(r.began, "2027-01-15T08:00:00.900Z");
        let early = StartRecord::new(at, at - Duration::from_millis(1), Duration::ZERO);
        assert_eq!(early.late_ms, 0.0);
        assert!(!early.too_late);
    }
}
