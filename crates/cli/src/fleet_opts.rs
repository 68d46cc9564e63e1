//! The options of a run on several load hosts (`--hosts`), shared by
//! `csdchar block` and `csdchar db run`, and the remote side's
//! `--check-only`. A leaf: the commands embed these options, and
//! `fleet_cmd` runs them.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::args::duration_arg;

/// `--hosts FILE` and what goes with it.
#[derive(Debug, Clone, Args)]
pub struct FleetArgs {
    /// Run this command on every load host of FILE at one instant, over ssh (one destination per
    /// line: an ssh_config alias, user@host or ssh://user@host:port, optionally followed by
    /// csdchar=PATH, workdir=DIR, sudo, name=NAME). --output DIR names a new directory for the
    /// run: every host's result and log, the manifest (fleet.json) and the merged result.
    /// The controller picks the instant (not with --start-at).
    #[arg(long, value_name = "FILE", conflicts_with = "start_at")]
    pub hosts: Option<PathBuf>,
    /// With --hosts: how long after the preflight the instant every host starts at is (each
    /// host sets up first, then waits for it).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = duration_arg, requires = "hosts")]
    pub start_delay: Duration,
    /// With --hosts: the largest difference between the hosts' real starts; a step over it
    /// fails (results kept unmerged) unless --keep-spread.
    #[arg(long, value_name = "DURATION", default_value = "50ms", value_parser = duration_arg, requires = "hosts")]
    pub start_spread_limit: Duration,
    /// With --hosts: keep and merge a step whose start spread exceeds --start-spread-limit,
    /// with a note in the manifest.
    #[arg(long, requires = "hosts")]
    pub keep_spread: bool,
    /// With --hosts: the largest clock offset of a host from the controller (beyond the ssh
    /// round trip's uncertainty) the preflight accepts.
    #[arg(long, value_name = "DURATION", default_value = "50ms", value_parser = duration_arg, requires = "hosts")]
    pub clock_offset_limit: Duration,
    /// With --hosts: when a host is lost mid-step, merge the other hosts' results anyway (the
    /// manifest and the merged result's note record which hosts it holds). Without it they are
    /// kept unmerged.
    #[arg(long, requires = "hosts")]
    pub merge_survivors: bool,
    /// Check the options and the target as a run would (present, safe to write, room), run
    /// nothing, exit 0 when all is well (what a --hosts controller's preflight runs on each host).
    #[arg(long, conflicts_with = "hosts")]
    pub check_only: bool,
    /// The instant a --hosts controller picked (RFC 3339), as --start-at but also when already
    /// past: a host whose set-up overran it starts at once and records how late.
    #[arg(long, hide = true, value_name = "TIME", value_parser = instant_arg, conflicts_with_all = ["hosts", "start_at"])]
    pub start_instant: Option<std::time::SystemTime>,
}

/// `--start-instant`: any RFC 3339 time.
fn instant_arg(s: &str) -> Result<std::time::SystemTime, String> {
    csdchar_core::start_at::parse_rfc3339(s)
}

/// The options that configure the controller only: never passed to a host.
/// (name, takes a value)
pub const CONTROLLER_ONLY: &[(&str, bool)] = &[
    ("--hosts", true),
    ("--start-delay", true),
    ("--start-spread-limit", true),
    ("--keep-spread", false),
    ("--clock-offset-limit", true),
    ("--merge-survivors", false),
    ("--output", true),
    ("--output-format", true),
    ("--start-at", true),
    ("--stop-on-stdin-eof", false),
];

/// `argv` (csdchar's arguments, no program name) without the controller's
/// own options, in both spellings (`--opt VALUE`, `--opt=VALUE`).
pub fn host_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            out.push(a.clone());
            out.extend(it.cloned());
            break;
        }
        let (name, inline) = match a.split_once('=') {
            Some((n, _)) if n.starts_with("--") => (n, true),
            _ => (a.as_str(), false),
        };
        match CONTROLLER_ONLY.iter().find(|(n, _)| *n == name) {
            Some((_, true)) if !inline => {
                it.next();
            }
            Some(_) => {}
            None => out.push(a.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_controllers_options_stay_at_the_controller() {
        let argv: Vec<String> = [
            "db",
            "run",
            "--hosts",
            "h.txt",
            "--url",
            "host=db1",
            "--output=out",
            "--merge-survivors",
            "--threads",
            "16",
            "--output-format",
            "json",
            "--start-spread-limit=20ms",
            "--time",
            "1m",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            host_argv(&argv),
            [
                "db",
                "run",
                "--url",
                "host=db1",
                "--threads",
                "16",
                "--time",
                "1m"
            ]
        );
    }
}
