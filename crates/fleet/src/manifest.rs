//! `fleet.json`: what a run on several hosts did, host by host.

use serde::{Deserialize, Serialize};

/// The manifest's schema name.
pub const FLEET_SCHEMA: &str = "csdchar.fleet/1";

/// A run on several hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetManifest {
    /// Always "csdchar.fleet/1".
    pub schema: String,
    /// The controller's csdchar (`csdchar -V`).
    pub controller_version: String,
    /// What every host ran (csdchar's arguments, before the controller's `--start-at` and output).
    pub command: Vec<String>,
    /// The instant every host was told to start at, RFC 3339 UTC.
    pub start_at: String,
    /// The hosts' real starts, from the earliest to the latest, ms (each host's lateness
    /// corrected by its clock offset); null when fewer than two hosts recorded one.
    pub start_spread_ms: Option<f64>,
    /// The spread allowed (`--start-spread-limit`), ms.
    pub start_spread_limit_ms: f64,
    /// How the step ended: "completed", "interrupted", "host lost", "start spread".
    pub outcome: String,
    /// What went wrong, naming the host; null when nothing did.
    pub error: Option<String>,
    /// Whether `result.json` holds the merge of the hosts' results.
    pub merged: bool,
    /// The hosts the merged result holds (all of them, or the survivors with
    /// `--merge-survivors`).
    pub merged_hosts: Vec<String>,
    /// Notes (a spread kept with `--keep-spread`, survivors merged).
    pub notes: Vec<String>,
    /// Per host, in the hosts file's order.
    pub hosts: Vec<HostRecord>,
}

/// One host of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    /// The host's name (its files are `hosts/NAME.json` and `hosts/NAME.log`).
    pub name: String,
    /// Its ssh destination.
    pub destination: String,
    /// `csdchar -V` there.
    pub version: String,
    /// `uname -r` there.
    pub kernel: String,
    /// Its clock minus the controller's, ms (known to ± rtt_ms / 2).
    pub clock_offset_ms: f64,
    /// The ssh round trip the offset was measured with, ms.
    pub rtt_ms: f64,
    /// chrony's offset from NTP time there, ms; null without chrony.
    pub ntp_offset_ms: Option<f64>,
    /// How late its measured period began after the instant, by its own clock, ms; null when
    /// it recorded no start.
    pub late_ms: Option<f64>,
    /// "completed", "stopped" (interrupted or its lifeline closed), "failed" (csdchar's own
    /// error), "lost" (ssh exit 255) or "hung" (ran past the end and was cut off).
    pub status: String,
    /// csdchar's exit code there; null when lost or hung.
    pub exit_code: Option<i32>,
    /// Why it was lost, or its last message when it failed.
    pub message: Option<String>,
    /// Its raw result, relative to the run's directory; null when none was fetched.
    pub result: Option<String>,
    /// Its log (ssh's and csdchar's output), relative to the run's directory.
    pub log: String,
}
