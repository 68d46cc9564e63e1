//! Before anything runs, every host in parallel: reachable over ssh, the same
//! csdchar as the controller, its kernel, its clock's offset from the
//! controller's, and the command's own checks on that host (`--check-only`:
//! options, targets present and safe by the same rules as a local run). The
//! first failure names its host and nothing starts anywhere.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::FleetError;
use crate::hosts::Host;
use crate::ssh::{Ssh, quote, shell_words};

/// What the preflight learnt of one host (the manifest records it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    /// The host's name.
    pub name: String,
    /// Its ssh destination.
    pub destination: String,
    /// `csdchar -V` there (version and commit).
    pub version: String,
    /// `uname -r` there.
    pub kernel: String,
    /// Its clock minus the controller's, ms, from the ssh round trip with the smallest time.
    pub clock_offset_ms: f64,
    /// That round trip's time, ms; the offset is known to within half of it.
    pub rtt_ms: f64,
    /// chrony's offset of the host's clock from NTP time (`chronyc tracking`), ms; absent
    /// without chrony.
    pub ntp_offset_ms: Option<f64>,
}

/// What the preflight allows.
#[derive(Debug, Clone)]
pub struct PreflightLimits {
    /// The largest clock offset from the controller's, beyond the round trip's uncertainty.
    pub clock_offset: Duration,
    /// How long one host's preflight may take.
    pub timeout: Duration,
}

/// The remote command of the preflight's first connection.
fn facts_command(host: &Host) -> String {
    format!(
        "uname -r; {} -V; (chronyc -c tracking 2>/dev/null || true)",
        quote(&host.csdchar)
    )
}

/// The remote command running csdchar's own checks of `argv` on `host`.
pub fn check_command(host: &Host, argv: &[String]) -> String {
    let mut words = Vec::new();
    if host.sudo {
        words.extend(["sudo".to_string(), "-n".to_string()]);
    }
    words.push(host.csdchar.clone());
    words.extend(argv.iter().cloned());
    words.push("--check-only".to_string());
    format!("cd {} && {}", quote(&host.workdir), shell_words(&words))
}

/// chrony's offset (ms) from `chronyc -c tracking`'s line: its fifth field is
/// the system time's offset from NTP time in seconds.
pub fn chrony_offset_ms(line: &str) -> Option<f64> {
    let f: Vec<&str> = line.trim().split(',').collect();
    (f.len() >= 10)
        .then(|| f[4].parse::<f64>().ok())
        .flatten()
        .map(|s| s * 1000.0)
}

/// The last non-empty line of `bytes` (ssh's or csdchar's message).
pub fn last_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string()
}

fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The clock offset (ms) and round trip (ms) from `rounds` round trips of
/// `date` over the (multiplexed) connection: the one with the smallest round
/// trip, the remote time against the midpoint.
fn clock_offset(
    ssh: &Ssh,
    host: &Host,
    rounds: u32,
    limit: Duration,
) -> Result<(f64, f64), String> {
    let mut best: Option<(f64, f64)> = None;
    for _ in 0..rounds {
        let (t0, i0) = (SystemTime::now(), Instant::now());
        let (code, out, err) = ssh
            .run(host, "date +%s.%N", limit)
            .map_err(|e| format!("cannot run ssh: {e}"))?;
        let rtt = i0.elapsed();
        if code != Some(0) {
            return Err(format!("reading its clock failed: {}", last_line(&err)));
        }
        let remote: f64 = String::from_utf8_lossy(&out)
            .trim()
            .parse()
            .map_err(|_| format!("its `date +%s.%N` printed '{}'", last_line(&out)))?;
        let mid = unix_s(t0) + rtt.as_secs_f64() / 2.0;
        let sample = ((remote - mid) * 1000.0, rtt.as_secs_f64() * 1000.0);
        if best.is_none_or(|b| sample.1 < b.1) {
            best = Some(sample);
        }
    }
    best.ok_or_else(|| "no round trip".to_string())
}

/// One host's preflight.
fn one(
    ssh: &Ssh,
    host: &Host,
    version: &str,
    argv: &[String],
    limits: &PreflightLimits,
) -> Result<HostFacts, String> {
    let (code, out, err) = ssh
        .run(host, &facts_command(host), limits.timeout)
        .map_err(|e| format!("cannot run ssh ({}): {e}", ssh.program.to_string_lossy()))?;
    match code {
        None => {
            return Err(format!(
                "no answer within {} s (ssh hung)",
                limits.timeout.as_secs()
            ));
        }
        Some(255) => {
            return Err(format!("unreachable over ssh: {}", last_line(&err)));
        }
        Some(_) => {}
    }
    let text = String::from_utf8_lossy(&out).into_owned();
    let mut lines = text.lines();
    let kernel = lines.next().unwrap_or("").trim().to_string();
    let theirs = lines.next().unwrap_or("").trim().to_string();
    if !theirs.starts_with("csdchar ") {
        return Err(format!(
            "csdchar not found as '{}' ({}); install {version} there (cargo install --locked --path \
             crates/cli, or the package), or name it with csdchar=PATH in the hosts file",
            host.csdchar,
            last_line(&err)
        ));
    }
    if theirs != version {
        return Err(format!(
            "runs {theirs}, the controller {version}: install the same version on every host"
        ));
    }
    let ntp_offset_ms = lines.find_map(chrony_offset_ms);
    let (clock_offset_ms, rtt_ms) = clock_offset(ssh, host, 3, limits.timeout)?;
    let allowed = limits.clock_offset.as_secs_f64() * 1000.0;
    if clock_offset_ms.abs() - rtt_ms / 2.0 > allowed {
        return Err(format!(
            "its clock is {clock_offset_ms:+.1} ms off the controller's (± {:.1} ms), more than \
             --clock-offset-limit {allowed} ms: synchronize the clocks (chrony, NTP)",
            rtt_ms / 2.0
        ));
    }
    let (code, out, err) = ssh
        .run(host, &check_command(host, argv), limits.timeout)
        .map_err(|e| format!("cannot run ssh: {e}"))?;
    match code {
        Some(0) => {}
        Some(255) => return Err(format!("lost over ssh: {}", last_line(&err))),
        None => return Err("its checks did not end (ssh hung)".to_string()),
        Some(_) => {
            let why = last_line(&err);
            let why = if why.is_empty() { last_line(&out) } else { why };
            return Err(format!(
                "refuses the step: {}",
                why.trim_start_matches("error: ")
            ));
        }
    }
    Ok(HostFacts {
        name: host.name.clone(),
        destination: host.destination.clone(),
        version: theirs,
        kernel,
        clock_offset_ms,
        rtt_ms,
        ntp_offset_ms,
    })
}

/// Every host's preflight, in parallel; `version` is the controller's
/// `csdchar --version` line, `argv` the command each host will run (checked
/// there with `--check-only`). The first failure in hosts order is returned.
pub fn preflight(
    ssh: &Ssh,
    hosts: &[Host],
    version: &str,
    argv: &[String],
    limits: &PreflightLimits,
) -> Result<Vec<HostFacts>, FleetError> {
    let results: Vec<Result<HostFacts, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = hosts
            .iter()
            .map(|h| s.spawn(move || one(ssh, h, version, argv, limits)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("preflight panicked".into()))
            })
            .collect()
    });
    results
        .into_iter()
        .zip(hosts)
        .map(|(r, h)| {
            r.map_err(|why| FleetError::Preflight {
                host: h.name.clone(),
                why,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chrony_csv_offset() {
        let line = "A29FC87B,162.159.200.123,3,1700000000.123,0.000012345,-0.000001,0.000002,\
                    -3.2,0.01,0.05,0.02,0.01,64.5,Normal";
        assert!((chrony_offset_ms(line).unwrap() - 0.012345).abs() < 1e-9);
        assert_eq!(chrony_offset_ms("506 Cannot talk to daemon"), None);
    }

    #[test]
    fn check_command_quotes_every_word() {
        let mut h = Host::new("x");
        h.sudo = true;
        h.workdir = "/var/tmp/my dir".into();
        let c = check_command(&h, &["block".into(), "--target".into(), "a'b".into()]);
        assert_eq!(
            c,
            "cd '/var/tmp/my dir' && sudo -n csdchar block --target 'a'\\''b' --check-only"
        );
    }
}
