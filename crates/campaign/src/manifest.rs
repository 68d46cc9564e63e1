//! `<out>/manifest.json`: what the campaign is (file hash, csdchar version,
//! host, kernel, the targets' devices) and where each step stands. Written
//! whole to a temporary file and renamed over the old one after every change,
//! so a reader (or a resume after Ctrl-C or a crash) always finds a complete
//! one.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::CampaignError;

/// `schema` of a manifest.
pub const MANIFEST_SCHEMA: &str = "csdchar.campaign/1";
/// Its file name in the output directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not run yet.
    Pending,
    /// Running now (or the process died while it ran: a resume runs it again).
    Running,
    /// Finished; its result file (if it writes one) is complete.
    Done,
    /// Failed; `error` says why. A resume runs it again.
    Failed,
    /// Stopped by Ctrl-C/SIGTERM. A resume runs it again.
    Interrupted,
}

/// Where the campaign stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CampaignStatus {
    /// Steps are running (or the process died).
    Running,
    /// Every step is done.
    Completed,
    /// It ended with failed steps (see each step's `error`).
    Failed,
    /// Stopped by Ctrl-C/SIGTERM; run the same command again to resume.
    Interrupted,
}

/// The device holding a target's directory, as sysfs describes it.
pub use csdchar_devices::identity::DeviceIdentity as DeviceRecord;

/// A target as this campaign ran it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestTarget {
    /// Name.
    pub name: String,
    /// What it is (`dir /x`, `zram 6G lz4 ext4`, `url sha256:…`, `block /dev/…`); a resume
    /// refuses a change unless forced.
    pub spec: String,
    /// Whether `--target` replaced the file's definition.
    pub overridden: bool,
    /// The directory its steps used last (a zram target's mount directory changes per run).
    pub dir: Option<String>,
    /// The device holding `dir` (or the block path) when its steps last ran.
    pub device: Option<DeviceRecord>,
    /// Why the device could not be described (tmpfs, overlay, not run yet).
    pub device_note: Option<String>,
    /// What tearing down its zram device left behind, if anything.
    pub teardown_error: Option<String>,
}

/// One step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestStep {
    /// Position in the plan, from 0.
    pub index: usize,
    /// Stable key (resume matches on it).
    pub key: String,
    /// Target.
    pub target: String,
    /// argv after `csdchar`, URL redacted, zram mount as its placeholder.
    pub command: Vec<String>,
    /// The result file, if the command writes one.
    pub result: Option<String>,
    /// Estimated duration, seconds.
    pub estimated_s: f64,
    /// Where it stands.
    pub status: StepStatus,
    /// Why it failed.
    pub error: Option<String>,
    /// When its last attempt started, RFC 3339 UTC.
    pub started_at: Option<String>,
    /// When its last attempt ended.
    pub ended_at: Option<String>,
    /// Duration of its last attempt, seconds.
    pub elapsed_s: Option<f64>,
    /// Attempts so far (a resume adds one per rerun).
    pub attempts: u32,
    /// Times it was run again on fresh storage (a zram target recreated by a resume) to restore the state later steps need.
    #[serde(default)]
    pub replays: u32,
}

/// One invocation (the first run, then each resume).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// When it started.
    pub started_at: String,
    /// csdchar's version.
    pub csdchar_version: String,
    /// Host name.
    pub host: String,
    /// Kernel release and version (`uname -r -v`).
    pub kernel: String,
    /// Whether `--force` let it resume over a changed file or targets.
    pub forced: bool,
}

/// The manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`MANIFEST_SCHEMA`].
    pub schema: String,
    /// The campaign's name.
    pub campaign: String,
    /// The campaign file as given.
    pub file: String,
    /// SHA-256 of the campaign file the steps were planned from.
    pub file_sha256: String,
    /// csdchar's version (of the latest session).
    pub csdchar_version: String,
    /// Host name (of the latest session).
    pub host: String,
    /// Kernel (of the latest session).
    pub kernel: String,
    /// When the campaign first started.
    pub created_at: String,
    /// Last write.
    pub updated_at: String,
    /// Where it stands.
    pub status: CampaignStatus,
    /// Every invocation, first one first.
    pub sessions: Vec<Session>,
    /// Targets in file order.
    pub targets: Vec<ManifestTarget>,
    /// Steps in plan order.
    pub steps: Vec<ManifestStep>,
}

impl Manifest {
    /// Reads `<out>/manifest.json`; `Ok(None)` when there is none.
    pub fn read(out: &Path) -> Result<Option<Manifest>, CampaignError> {
        let path = out.join(MANIFEST_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(CampaignError::Io(format!("{}: {e}", path.display()))),
        };
        let m: Manifest = serde_json::from_str(&text).map_err(|e| {
            CampaignError::Usage(format!(
                "{}: not a campaign manifest ({e}); use another --out",
                path.display()
            ))
        })?;
        if m.schema != MANIFEST_SCHEMA {
            return Err(CampaignError::Usage(format!(
                "{}: schema {} is not {MANIFEST_SCHEMA}; use another --out",
                path.display(),
                m.schema
            )));
        }
        Ok(Some(m))
    }

    /// Writes `<out>/manifest.json` atomically (temporary file, fsync, rename).
    pub fn write(&mut self, out: &Path) -> Result<(), CampaignError> {
        self.updated_at = now();
        let path = out.join(MANIFEST_FILE);
        let tmp = out.join(format!(".{MANIFEST_FILE}.tmp"));
        let io = |e: std::io::Error| CampaignError::Io(format!("{}: {e}", path.display()));
        let mut text = serde_json::to_vec_pretty(self).expect("the manifest serializes");
        text.push(b'\n');
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(&text).map_err(io)?;
        f.sync_all().map_err(io)?;
        drop(f);
        std::fs::rename(&tmp, &path).map_err(io)?;
        Ok(())
    }

    /// The step with `key`.
    pub fn step(&self, key: &str) -> Option<&ManifestStep> {
        self.steps.iter().find(|s| s.key == key)
    }

    /// Result files of done steps, per target in target order (the first is
    /// the report's baseline): what `csdchar report` reads, each file labelled
    /// with its target.
    pub fn results_by_target(&self) -> Vec<(String, Vec<PathBuf>)> {
        self.targets
            .iter()
            .map(|t| {
                let files = self
                    .steps
                    .iter()
                    .filter(|s| s.target == t.name && s.status == StepStatus::Done)
                    .filter_map(|s| s.result.as_ref().map(PathBuf::from))
                    .collect();
                (t.name.clone(), files)
            })
            .collect()
    }
}

/// Now, RFC 3339 UTC to the second.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// Host name and kernel (`uname -n`, `uname -r -v`).
pub fn host_and_kernel() -> (String, String) {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let host = read("/proc/sys/kernel/hostname");
    let kernel = format!(
        "{} {}",
        read("/proc/sys/kernel/osrelease"),
        read("/proc/sys/kernel/version")
    );
    (host, kernel.trim().to_string())
}

/// Whether `path` holds a complete csdchar result: JSON with a `csdchar.*`
/// schema, not interrupted, no error, status (if any) completed. `Err` says
/// what is wrong.
pub fn check_result(path: &Path) -> Result<(), String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("result {}: {e}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("result {}: not JSON ({e})", path.display()))?;
    let schema = v.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    if !schema.starts_with("csdchar.") {
        return Err(format!("result {}: no csdchar schema", path.display()));
    }
    if v.get("interrupted").and_then(|b| b.as_bool()) == Some(true) {
        return Err(format!(
            "result {}: the run was interrupted",
            path.display()
        ));
    }
    if let Some(s) = v.get("status").and_then(|s| s.as_str())
        && s != "completed"
    {
        return Err(format!("result {}: status {s}", path.display()));
    }
    match v.get("error") {
        None | Some(serde_json::Value::Null) => Ok(()),
        Some(e) => Err(format!(
            "result {}: {}",
            path.display(),
            e.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| e.to_string())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_checked_generically() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        let check = |text: &str| {
            std::fs::write(&p, text).unwrap();
            check_result(&p)
        };
        assert!(check(r#"{"schema":"csdchar.db/1","interrupted":false,"error":null}"#).is_ok());
        assert!(check(r#"{"schema":"csdchar.block/1","status":"completed"}"#).is_ok());
        assert!(check(r#"{"schema":"csdchar.db/1","interrupted":true}"#).is_err());
        assert!(check(r#"{"schema":"csdchar.block/1","status":"io_error"}"#).is_err());
        assert!(
            check(r#"{"schema":"csdchar.db/1","error":"server gone"}"#)
                .unwrap_err()
                .contains("server gone")
        );
        assert!(check("{").is_err());
        assert!(check_result(&d.path().join("none.json")).is_err());
    }

    #[test]
    fn host_and_kernel_are_read() {
        let (h, k) = host_and_kernel();
        assert!(!h.is_empty() && !k.is_empty());
    }
}
