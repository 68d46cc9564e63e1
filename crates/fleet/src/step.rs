//! One step on every host at one instant.
//!
//! Each host runs `csdchar --stop-on-stdin-eof ARGS --start-instant AT
//! --output-format json --output WORKDIR/FILE` over its own ssh session, in a
//! process group of its own (a Ctrl-C at the controller's terminal reaches
//! the controller only, which then stops every host in order). The
//! controller holds each session's standard input open: closing it — on
//! Ctrl-C, when a host is lost, or because the controller died — makes every
//! remote csdchar end its step and save its partial result, within seconds.
//! A host is lost when its ssh exits 255 (refused, connection lost, or a
//! silent host caught by ServerAlive) or when it runs past the step's
//! expected end plus a grace (hung). Each host writes its result under a
//! temporary name and renames it when csdchar ends (atomic there); results are
//! fetched with `cat` over the same multiplexed connection and removed from the host.

use std::fs::File;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::error::FleetError;
use crate::hosts::Host;
use crate::preflight::last_line;
use crate::ssh::{Ssh, quote, shell_words};

/// What to run and when.
#[derive(Debug, Clone)]
pub struct StepPlan {
    /// csdchar's arguments (the command and its options, without `--start-at`,
    /// `--output`, `--output-format`).
    pub argv: Vec<String>,
    /// The instant every host starts at.
    pub start_at: SystemTime,
    /// How long after `start_at` the step should end; None when unknown (a run
    /// of a size rather than a time): then only ssh's ServerAlive finds a hung host.
    pub expected: Option<Duration>,
    /// Past the expected end, how long a host may still run before it counts as hung.
    pub hang_grace: Duration,
    /// After the lifelines are closed, how long a host may take to save and end.
    pub stop_grace: Duration,
    /// Names the remote result file (unique per run and step).
    pub run_id: String,
    /// Where each host's log (`NAME.log`: its ssh's and csdchar's output) is written.
    pub log_dir: PathBuf,
}

/// How a host's step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostStatus {
    /// csdchar ended there with this exit code (0 done, 130 stopped: interrupted
    /// or its lifeline closed, 1/2 its own error).
    Exited(i32),
    /// The ssh connection failed or was lost (exit 255); ssh's last message.
    Lost(String),
    /// It ran past the expected end plus the grace; the controller cut it off.
    Hung,
}

impl HostStatus {
    /// The manifest's word for it.
    pub fn word(&self) -> &'static str {
        match self {
            HostStatus::Exited(0) => "completed",
            HostStatus::Exited(130) => "stopped",
            HostStatus::Exited(_) => "failed",
            HostStatus::Lost(_) => "lost",
            HostStatus::Hung => "hung",
        }
    }
}

/// One host's share of a step.
#[derive(Debug, Clone)]
pub struct HostOutcome {
    /// The host's name.
    pub name: String,
    /// How it ended.
    pub status: HostStatus,
    /// Its result file's bytes, fetched; None when there was none to fetch.
    pub result: Option<Vec<u8>>,
    /// Seconds from the start instant to the moment its ssh ended (negative: before it).
    pub ended_s: f64,
    /// Its log file.
    pub log: PathBuf,
}

/// Why the step ended as it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepEnd {
    /// Every host ended on its own.
    Completed,
    /// Ctrl-C (or SIGTERM) at the controller: every host was stopped.
    Interrupted,
    /// This host was lost or hung first; the others were stopped.
    HostLost(String),
}

/// The remote file a host's result is written to.
fn remote_file(host: &Host, run_id: &str) -> String {
    format!(
        "{}/csdchar-fleet-{run_id}.json",
        host.workdir.trim_end_matches('/')
    )
}

/// The remote command of one host's step: csdchar writes its result under a
/// temporary name, renamed to the fetched one when it ends, so that a result
/// is either whole or absent (atomic on the host); the shell stays to rename
/// it and passes csdchar's exit code on.
pub fn run_command(host: &Host, plan: &StepPlan) -> String {
    let file = remote_file(host, &plan.run_id);
    let part = format!("{file}.part");
    let sudo: Vec<String> = if host.sudo {
        vec!["sudo".to_string(), "-n".to_string()]
    } else {
        Vec::new()
    };
    let mut words = sudo.clone();
    // Its own application_name on a database server: each host's end-of-step wait for
    // its clients' backends does not wait for the other hosts'.
    words.extend([
        "env".to_string(),
        format!("PGAPPNAME=csdchar@{}", host.name),
    ]);
    words.push(host.csdchar.clone());
    words.push("--stop-on-stdin-eof".to_string());
    words.extend(plan.argv.iter().cloned());
    words.extend([
        "--start-instant".to_string(),
        csdchar_core::start_at::format_rfc3339_millis(plan.start_at),
        "--output-format".to_string(),
        "json".to_string(),
        "--output".to_string(),
        part.clone(),
    ]);
    let mut mv = sudo;
    mv.extend(["mv", "-f", "--"].map(String::from));
    mv.extend([part, file]);
    format!(
        "cd {} && {{ {}; rc=$?; {} 2>/dev/null; exit $rc; }}",
        quote(&host.workdir),
        shell_words(&words),
        shell_words(&mv)
    )
}

struct Running {
    child: Child,
    lifeline: Option<ChildStdin>,
    status: Option<HostStatus>,
    ended: Option<SystemTime>,
}

fn secs_after(t: SystemTime, base: SystemTime) -> f64 {
    match t.duration_since(base) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// Runs `plan` on every host; returns each host's outcome (in `hosts` order)
/// and why the step ended. `interrupt` is the controller's Ctrl-C flag.
pub fn run_step(
    ssh: &Ssh,
    hosts: &[Host],
    plan: &StepPlan,
    interrupt: &AtomicBool,
) -> Result<(Vec<HostOutcome>, StepEnd), FleetError> {
    let io = |what: String| move |source| FleetError::Io { what, source };
    let mut running: Vec<Running> = Vec::with_capacity(hosts.len());
    let logs: Vec<PathBuf> = hosts
        .iter()
        .map(|h| plan.log_dir.join(format!("{}.log", h.name)))
        .collect();
    for (host, log) in hosts.iter().zip(&logs) {
        let out = File::create(log).map_err(io(format!("creating {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(io(format!("opening {}", log.display())))?;
        let mut command = ssh.command(host, &run_command(host, plan));
        command
            .stdin(Stdio::piped())
            .stdout(out)
            .stderr(err)
            // Ctrl-C at the terminal reaches the controller, which stops the hosts in order.
            .process_group(0);
        // An ssh program still open for writing somewhere (just installed, or
        // written by a thread of this process whose fork has not yet
        // exec'd) is refused with ETXTBSY for a moment: try again, briefly.
        let mut spawned = command.spawn();
        for _ in 0..50 {
            match &spawned {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                    std::thread::sleep(Duration::from_millis(10));
                    spawned = command.spawn();
                }
                _ => break,
            }
        }
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                // Whatever started is stopped: closing its lifeline ends it.
                for r in &mut running {
                    r.lifeline = None;
                    let _ = r.child.wait();
                }
                return Err(io(format!(
                    "starting {} for {}",
                    ssh.program.to_string_lossy(),
                    host.name
                ))(e));
            }
        };
        let lifeline = child.stdin.take();
        running.push(Running {
            child,
            lifeline,
            status: None,
            ended: None,
        });
    }
    let mut end = StepEnd::Completed;
    let mut stop_since: Option<Instant> = None;
    let hang_at = plan.expected.map(|d| plan.start_at + d + plan.hang_grace);
    loop {
        for (i, r) in running.iter_mut().enumerate() {
            if r.status.is_some() {
                continue;
            }
            if let Ok(Some(s)) = r.child.try_wait() {
                r.ended = Some(SystemTime::now());
                r.lifeline = None;
                r.status = Some(match s.code() {
                    Some(255) => {
                        let text = std::fs::read(&logs[i]).unwrap_or_default();
                        HostStatus::Lost(last_line(&text))
                    }
                    Some(c) => HostStatus::Exited(c),
                    None => HostStatus::Lost("ssh was killed".to_string()),
                });
                if matches!(r.status, Some(HostStatus::Lost(_))) && end == StepEnd::Completed {
                    end = StepEnd::HostLost(hosts[i].name.clone());
                }
            }
        }
        if running.iter().all(|r| r.status.is_some()) {
            break;
        }
        if end == StepEnd::Completed && interrupt.load(Ordering::Relaxed) {
            end = StepEnd::Interrupted;
        }
        if end == StepEnd::Completed
            && let Some(at) = hang_at
            && SystemTime::now() > at
        {
            // The first host still running past the end is the hung one.
            if let Some(i) = running.iter().position(|r| r.status.is_none()) {
                let r = &mut running[i];
                let _ = r.child.kill();
                let _ = r.child.wait();
                r.status = Some(HostStatus::Hung);
                r.ended = Some(SystemTime::now());
                end = StepEnd::HostLost(hosts[i].name.clone());
            }
        }
        if end != StepEnd::Completed {
            // Stop every host: their csdchar ends at its stdin's end, saving what it has.
            for r in &mut running {
                r.lifeline = None;
            }
            let since = *stop_since.get_or_insert_with(Instant::now);
            if since.elapsed() > plan.stop_grace {
                for r in running.iter_mut().filter(|r| r.status.is_none()) {
                    let _ = r.child.kill();
                    let _ = r.child.wait();
                    r.status = Some(HostStatus::Hung);
                    r.ended = Some(SystemTime::now());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut outcomes = Vec::with_capacity(hosts.len());
    for ((host, r), log) in hosts.iter().zip(running).zip(logs) {
        let status = r.status.expect("every host ended");
        let result = match status {
            HostStatus::Exited(_) => fetch(ssh, host, &plan.run_id, &log),
            _ => None,
        };
        outcomes.push(HostOutcome {
            name: host.name.clone(),
            status,
            result,
            ended_s: secs_after(r.ended.unwrap_or_else(SystemTime::now), plan.start_at),
            log,
        });
    }
    Ok((outcomes, end))
}

/// The host's result file, read over the (multiplexed) connection and then
/// removed there; a failure is appended to the host's log.
fn fetch(ssh: &Ssh, host: &Host, run_id: &str, log: &Path) -> Option<Vec<u8>> {
    let file = quote(&remote_file(host, run_id));
    let mut rm = Vec::new();
    if host.sudo {
        rm.extend(["sudo".to_string(), "-n".to_string()]);
    }
    rm.extend(["rm".to_string(), "-f".to_string(), "--".to_string()]);
    let remote = format!("cat -- {file} && {} {file}", shell_words(&rm));
    match ssh.run(host, &remote, Duration::from_secs(60)) {
        Ok((Some(0), bytes, _)) if !bytes.is_empty() => Some(bytes),
        Ok((_, _, err)) => {
            if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(log) {
                let _ = writeln!(
                    f,
                    "csdchar fleet: no result fetched from {}: {}",
                    remote_file(host, run_id),
                    last_line(&err)
                );
            }
            None
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_remote_step_holds_the_lifeline_and_renames_its_result() {
        let mut h = Host::new("x");
        h.csdchar = "/opt/csdchar".into();
        let plan = StepPlan {
            argv: vec!["block".into(), "--rw".into(), "read".into()],
            start_at: std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
            expected: None,
            hang_grace: Duration::from_secs(30),
            stop_grace: Duration::from_secs(10),
            run_id: "7-1".into(),
            log_dir: PathBuf::new(),
        };
        assert_eq!(
            run_command(&h, &plan),
            "cd /var/tmp && { env PGAPPNAME=csdchar@x /opt/csdchar --stop-on-stdin-eof block --rw read --start-instant \
             2027-01-15T08:00:00.000Z --output-format json --output \
             /var/tmp/csdchar-fleet-7-1.json.part; rc=$?; mv -f -- \
             /var/tmp/csdchar-fleet-7-1.json.part /var/tmp/csdchar-fleet-7-1.json 2>/dev/null; \
             exit $rc; }"
        );
        h.sudo = true;
        let c = run_command(&h, &plan);
        assert!(
            c.contains("{ sudo -n env PGAPPNAME=csdchar@x /opt/csdchar "),
            "{c}"
        );
        assert!(c.contains("sudo -n mv -f -- "), "{c}");
    }
}

#[cfg(test)]
mod standin {
    //! run_step through a stand-in ssh: a shell script that takes ssh's command
    //! line and plays a host that hangs, one that holds its lifeline, one that ends.

    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const SCRIPT: &str = r#"#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in --) shift; break ;; -O) exit 0 ;; *) shift ;; esac; done
case "$1" in
  hang) sleep 30 ;;
  lifeline) case "$2" in *--start-instant*) cat > /dev/null; exit 130 ;; esac ;;
  done) case "$2" in *--start-instant*) exit 0 ;; esac ;;
esac
exit 1
"#;

    fn setup(dir: &Path) -> Ssh {
        let script = dir.join("ssh");
        std::fs::write(&script, SCRIPT).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        Ssh {
            program: script.into_os_string(),
            config: None,
            control_dir: dir.to_path_buf(),
            connect_timeout_s: 10,
            alive_interval_s: 5,
        }
    }

    fn plan(dir: &Path, expected: Option<Duration>) -> StepPlan {
        StepPlan {
            argv: vec!["block".into()],
            start_at: SystemTime::now(),
            expected,
            hang_grace: Duration::from_millis(500),
            stop_grace: Duration::from_secs(3),
            run_id: "t".into(),
            log_dir: dir.to_path_buf(),
        }
    }

    #[test]
    fn a_hung_host_is_cut_off_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let ssh = setup(dir.path());
        let hosts = [Host::new("done"), Host::new("hang")];
        let t0 = Instant::now();
        let (out, end) = run_step(
            &ssh,
            &hosts,
            &plan(dir.path(), Some(Duration::from_millis(500))),
            &AtomicBool::new(false),
        )
        .unwrap();
        assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
        assert_eq!(end, StepEnd::HostLost("hang".into()));
        assert_eq!(out[1].status, HostStatus::Hung);
        assert_eq!(out[1].status.word(), "hung");
        assert_eq!(out[0].status, HostStatus::Exited(0));
    }

    #[test]
    fn an_interrupt_closes_every_lifeline() {
        let dir = tempfile::tempdir().unwrap();
        let ssh = setup(dir.path());
        let hosts = [Host::new("lifeline"), Host::new("done")];
        let stop = AtomicBool::new(false);
        let (out, end) = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                stop.store(true, Ordering::Relaxed);
            });
            run_step(&ssh, &hosts, &plan(dir.path(), None), &stop).unwrap()
        });
        assert_eq!(end, StepEnd::Interrupted);
        assert_eq!(out[0].status, HostStatus::Exited(130));
        assert_eq!(out[1].status, HostStatus::Exited(0));
        assert_eq!(out[0].status.word(), "stopped");
        assert!(out.iter().all(|o| o.result.is_none()));
    }
}
