//! Versioned result schemas. Every field carries a `///` doc comment, which
//! becomes its description in the committed JSON Schema (`schemas/`).

pub mod block;
pub mod db;
pub mod study;

use serde::{Deserialize, Serialize};

/// The program that produced a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolInfo {
    /// Always "csdchar".
    pub name: String,
    /// csdchar's version (Cargo package version).
    pub version: String,
}

impl ToolInfo {
    /// This build of csdchar.
    pub fn current() -> Self {
        ToolInfo {
            name: "csdchar".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
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
