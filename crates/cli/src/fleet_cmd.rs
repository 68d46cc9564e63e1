//! `--hosts FILE` on `csdchar block` and `csdchar db run`: the same command on
//! every load host of FILE, over the system ssh client, at one instant.
//!
//! Preflight on every host in parallel (ssh, csdchar's version and commit,
//! kernel, clock offset, the command's own `--check-only`), then an instant
//! `--start-delay` ahead, then every host's csdchar with its standard input as
//! a lifeline (`--stop-on-stdin-eof`), its result fetched over the same
//! connection into `DIR/hosts/NAME.json` beside its log, the lateness of every
//! host's start checked against `--start-spread-limit`, and the results merged
//! in-process with `report --merge`'s exact merge into `DIR/result.json`.
//! `DIR/fleet.json` records every host (version, kernel, clock offset, round
//! trip, lateness, status). The option is named `--hosts` after pdsh's and
//! MPI's host files, which it reads.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use csdchar_core::result::block::BlockResult;
use csdchar_core::result::db::DbResult;
use csdchar_fleet::{
    FleetManifest, HostOutcome, HostRecord, HostStatus, PreflightLimits, Ssh, StepEnd, StepPlan,
};

use crate::block_cmd::BlockOpts;
use crate::db_opts::DbArgs;
use crate::fleet_opts::{FleetArgs, host_argv};
use crate::io::{EXIT_INTERRUPTED, EXIT_USAGE, Io, Outcome};

/// Which command runs on the hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Block,
    Db,
}

fn usage(io: &mut Io<'_>, m: &str) -> Outcome {
    let _ = writeln!(io.stderr, "error: {m}");
    Outcome::code(EXIT_USAGE)
}

/// `csdchar block … --hosts FILE --output DIR`.
pub fn run_block_fleet(opts: &BlockOpts, argv: &[String], io: &mut Io<'_>) -> Outcome {
    if opts.job_file.is_some() || opts.print_job {
        return usage(io, "--hosts: not with --job-file or --print-job");
    }
    let mut local = opts.clone();
    local.output = None;
    local.fleet.hosts = None;
    // The options are checked here; each host checks its own target in the preflight.
    if let Err(e) = local.validate() {
        return usage(io, &e.to_string());
    }
    let expected = opts.runtime.map(|r| r + opts.ramp_time);
    let json = opts.output_format == crate::block_cmd::BlockOutputFormat::Json;
    run_fleet(
        Kind::Block,
        &opts.fleet,
        opts.output.as_deref(),
        json,
        argv,
        expected,
        io,
    )
}

/// Whether a connection string carries a password (`password=`, or a URL's
/// `user:password@`): it would travel on every host's command line.
pub fn url_has_password(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    if let Some(rest) = lower
        .strip_prefix("postgresql://")
        .or_else(|| lower.strip_prefix("postgres://"))
    {
        let authority = rest.split(['/', '?']).next().unwrap_or("");
        let userinfo = authority.rsplit_once('@').map_or("", |(u, _)| u);
        return userinfo.contains(':') || rest.contains("password=");
    }
    lower
        .split_whitespace()
        .any(|w| w.trim_start().starts_with("password") && w.contains('='))
        || lower.contains("password =")
}

/// `csdchar db run … --hosts FILE --output DIR`.
pub fn run_db_fleet(args: &DbArgs, argv: &[String], io: &mut Io<'_>) -> Outcome {
    let (step, o) = args.step();
    if step != "run" {
        return usage(
            io,
            "--hosts: with db run only (the load step every host runs)",
        );
    }
    let Some(url) = o.server.url.as_deref() else {
        return usage(
            io,
            "--hosts: db run needs --url, the server every host drives (prepare it once first)",
        );
    };
    if url_has_password(url) {
        return usage(
            io,
            "--url: with --hosts the URL travels on every host's command line, where any user \
             can read it: leave the password out and put it in each host's ~/.pgpass",
        );
    }
    let mut local = o.clone();
    local.out.output = None;
    local.fleet.hosts = None;
    if let Err(e) = crate::db_cmd::validate(step, &local) {
        return usage(io, &e);
    }
    let per_step = o.run.warmup + o.run.time;
    let expected = Some(per_step * o.threads.threads.len().max(1) as u32);
    let json = o.out.output_format == crate::args::OutputFormat::Json;
    run_fleet(
        Kind::Db,
        &o.fleet,
        o.out.output.as_deref(),
        json,
        argv,
        expected,
        io,
    )
}

/// The run's directory: new (or empty), its parent existing.
fn make_run_dir(out: Option<&Path>) -> Result<PathBuf, String> {
    let Some(dir) = out else {
        return Err(
            "--output: with --hosts, name a new directory for the run (every host's \
                    result and log, fleet.json and the merged result.json go in it)"
                .to_string(),
        );
    };
    if dir.exists() {
        let empty = std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_none());
        if !dir.is_dir() || !empty {
            return Err(format!(
                "--output: {} exists; with --hosts give a new (or empty) directory",
                dir.display()
            ));
        }
    }
    if let Some(why) = csdchar_fio_like::safety::output_refusal(dir) {
        return Err(format!("--output: {why}"));
    }
    std::fs::create_dir_all(dir.join("hosts"))
        .map_err(|e| format!("--output: cannot create {}: {e}", dir.display()))?;
    Ok(dir.to_path_buf())
}

/// The instant `delay` from now, on a whole millisecond (what `--start-at` records).
fn instant_after(delay: Duration) -> SystemTime {
    let t = SystemTime::now() + delay;
    let ms = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64 + 1;
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// A host's lateness (ms) from its raw result: block's `start`, db's first step's.
fn lateness(kind: Kind, bytes: &[u8]) -> Option<f64> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let start = match kind {
        Kind::Block => v.get("start")?,
        Kind::Db => v.get("steps")?.get(0)?.get("start")?,
    };
    start.get("late_ms")?.as_f64()
}

/// What was merged: the result's bytes (JSON) and its text.
struct Merged {
    json: Vec<u8>,
    text: Vec<u8>,
}

fn merge(kind: Kind, parts: &[(&str, &[u8])]) -> Result<Merged, String> {
    fn parse<T: serde::de::DeserializeOwned>(parts: &[(&str, &[u8])]) -> Result<Vec<T>, String> {
        parts
            .iter()
            .map(|(name, b)| {
                serde_json::from_slice(b).map_err(|e| format!("host {name}: its result: {e}"))
            })
            .collect()
    }
    let named = |e: csdchar_report::merge::MergeFailure| {
        format!(
            "host {}: {}",
            parts.get(e.part).map_or("?", |p| p.0),
            e.message
        )
    };
    match kind {
        Kind::Block => {
            let rs: Vec<BlockResult> = parse(parts)?;
            let refs: Vec<&BlockResult> = rs.iter().collect();
            let m = if refs.len() == 1 {
                rs[0].clone()
            } else {
                csdchar_report::merge::merge_block(&refs).map_err(named)?
            };
            Ok(Merged {
                json: csdchar_report::text::json_pretty(&m),
                text: csdchar_report::text::block_text(&m),
            })
        }
        Kind::Db => {
            let rs: Vec<DbResult> = parse(parts)?;
            let refs: Vec<&DbResult> = rs.iter().collect();
            let m = if refs.len() == 1 {
                rs[0].clone()
            } else {
                csdchar_report::merge::merge_db(&refs).map_err(named)?
            };
            let mut text = String::new();
            for s in &m.steps {
                let p = s.latency.percentiles.first();
                text.push_str(&format!(
                    "threads {} (all hosts): {:.2} tps, {:.2} qps, latency avg {:.2} ms{}\n",
                    s.threads,
                    s.tps,
                    s.qps,
                    s.latency.mean_ns / 1e6,
                    p.map_or(String::new(), |p| format!(
                        ", p{} {:.2} ms",
                        p.percentile,
                        p.value_ns as f64 / 1e6
                    )),
                ));
            }
            Ok(Merged {
                json: csdchar_report::text::json_pretty(&m),
                text: text.into_bytes(),
            })
        }
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    csdchar_fio_like::safety::write_output(path, bytes).map_err(|e| e.to_string())
}

#[allow(clippy::too_many_arguments)]
fn run_fleet(
    kind: Kind,
    fleet: &FleetArgs,
    output: Option<&Path>,
    json: bool,
    argv: &[String],
    expected: Option<Duration>,
    io: &mut Io<'_>,
) -> Outcome {
    if argv.is_empty() {
        return usage(
            io,
            "--hosts: the command line is needed (run csdchar as a command)",
        );
    }
    let Some(file) = fleet.hosts.as_deref() else {
        return usage(io, "--hosts: no file");
    };
    let hosts = match std::fs::read_to_string(file)
        .map_err(|e| format!("--hosts: cannot read {}: {e}", file.display()))
        .and_then(|t| csdchar_fleet::parse_hosts(&t).map_err(|e| e.to_string()))
    {
        Ok(h) => h,
        Err(e) => return usage(io, &e),
    };
    let dir = match make_run_dir(output) {
        Ok(d) => d,
        Err(e) => return usage(io, &e),
    };
    let remote = host_argv(argv);
    let (ssh, own_dir) = match Ssh::new(&dir) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(
                io.stderr,
                "error: cannot make the ssh control directory: {e}"
            );
            return Outcome::code(1);
        }
    };
    let outcome = drive(kind, fleet, &hosts, &ssh, &dir, &remote, json, expected, io);
    for h in &hosts {
        ssh.close(h);
    }
    if let Some(d) = own_dir {
        let _ = std::fs::remove_dir_all(d);
    }
    outcome
}

#[allow(clippy::too_many_arguments)]
fn drive(
    kind: Kind,
    fleet: &FleetArgs,
    hosts: &[csdchar_fleet::Host],
    ssh: &Ssh,
    dir: &Path,
    remote: &[String],
    json: bool,
    expected: Option<Duration>,
    io: &mut Io<'_>,
) -> Outcome {
    let version = format!("csdchar {}", crate::build_info::short_version());
    let limits = PreflightLimits {
        clock_offset: fleet.clock_offset_limit,
        timeout: Duration::from_secs(u64::from(ssh.connect_timeout_s) + 30),
    };
    let facts = match csdchar_fleet::preflight(ssh, hosts, &version, remote, &limits) {
        Ok(f) => f,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}; nothing was started on any host");
            return Outcome::code(1);
        }
    };
    let start_at = instant_after(fleet.start_delay);
    let at_text = csdchar_core::start_at::format_rfc3339_millis(start_at);
    let worst = facts
        .iter()
        .map(|f| f.clock_offset_ms.abs())
        .fold(0.0, f64::max);
    let _ = writeln!(
        io.stderr,
        "{} host(s) passed the preflight (largest clock offset {worst:.1} ms); every host starts at {at_text}",
        hosts.len()
    );
    let plan = StepPlan {
        argv: remote.to_vec(),
        start_at,
        expected,
        hang_grace: Duration::from_secs(30),
        stop_grace: Duration::from_secs(10),
        run_id: format!(
            "{}-{}",
            std::process::id(),
            start_at
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis()
        ),
        log_dir: dir.join("hosts"),
    };
    let (outcomes, end) = match csdchar_fleet::run_step(ssh, hosts, &plan, &io.interrupt) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return Outcome::code(1);
        }
    };
    let mut records = Vec::new();
    for (f, o) in facts.iter().zip(&outcomes) {
        records.push(record(kind, dir, f, o));
    }
    for (r, o) in records.iter_mut().zip(&outcomes) {
        if let (Some(bytes), Some(rel)) = (&o.result, &r.result)
            && let Err(e) = write(&dir.join(rel), bytes)
        {
            let _ = writeln!(io.stderr, "error: {e}");
            r.result = None;
        }
    }
    let lates: Vec<f64> = records.iter().filter_map(|r| r.late_ms).collect();
    let spread = (lates.len() >= 2).then(|| {
        lates.iter().copied().fold(f64::MIN, f64::max)
            - lates.iter().copied().fold(f64::MAX, f64::min)
    });
    let limit_ms = fleet.start_spread_limit.as_secs_f64() * 1000.0;
    let mut manifest = FleetManifest {
        schema: csdchar_fleet::manifest::FLEET_SCHEMA.to_string(),
        controller_version: version,
        command: remote.to_vec(),
        start_at: at_text,
        start_spread_ms: spread,
        start_spread_limit_ms: limit_ms,
        outcome: "completed".to_string(),
        error: None,
        merged: false,
        merged_hosts: Vec::new(),
        notes: Vec::new(),
        hosts: records,
    };
    let mut exit = 0;
    let mut merge_these: Vec<usize> = Vec::new();
    let with_result = |m: &FleetManifest| -> Vec<usize> {
        (0..m.hosts.len())
            .filter(|&i| m.hosts[i].result.is_some())
            .collect()
    };
    match &end {
        StepEnd::HostLost(name) => {
            let r = manifest.hosts.iter().find(|r| &r.name == name);
            let why = r
                .and_then(|r| r.message.clone())
                .unwrap_or_else(|| "no answer".to_string());
            let state = r.map_or("lost", |r| r.status.as_str());
            let msg = format!(
                "host {name} {state} mid-step ({why}); the step ended and the other hosts were stopped"
            );
            manifest.outcome = "host lost".to_string();
            manifest.error = Some(msg.clone());
            exit = 1;
            if fleet.merge_survivors {
                merge_these = with_result(&manifest);
                manifest
                    .notes
                    .push(format!("--merge-survivors: merged without {name}"));
            }
            let _ = writeln!(
                io.stderr,
                "error: {msg}; their results are in {}{}",
                dir.join("hosts").display(),
                if fleet.merge_survivors {
                    ", merged as --merge-survivors asks"
                } else {
                    ", unmerged (--merge-survivors merges them)"
                }
            );
        }
        StepEnd::Interrupted => {
            manifest.outcome = "interrupted".to_string();
            exit = EXIT_INTERRUPTED;
            merge_these = with_result(&manifest);
            let _ = writeln!(
                io.stderr,
                "interrupted: every host stopped; partial results saved"
            );
        }
        StepEnd::Completed => {
            let failed: Vec<&HostRecord> = manifest
                .hosts
                .iter()
                .filter(|r| r.exit_code != Some(0))
                .collect();
            if let Some(f) = failed.first() {
                let msg = format!(
                    "host {}: {} (exit {}): {}",
                    f.name,
                    f.status,
                    f.exit_code.map_or("none".to_string(), |c| c.to_string()),
                    f.message.clone().unwrap_or_default()
                );
                manifest.outcome = "host failed".to_string();
                manifest.error = Some(msg.clone());
                exit = 1;
                let _ = writeln!(
                    io.stderr,
                    "error: {msg}; results kept unmerged in {}",
                    dir.join("hosts").display()
                );
            } else if let Some(s) = spread.filter(|s| *s > limit_ms) {
                let msg = format!(
                    "the hosts' starts spread over {s:.1} ms, more than --start-spread-limit {limit_ms} ms \
                     (a host's set-up overran the instant: raise --start-delay)"
                );
                if fleet.keep_spread {
                    manifest.notes.push(format!("--keep-spread: {msg}"));
                    let _ = writeln!(io.stderr, "note: {msg}; kept as --keep-spread asks");
                    merge_these = with_result(&manifest);
                } else {
                    manifest.outcome = "start spread".to_string();
                    manifest.error = Some(msg.clone());
                    exit = 1;
                    let _ = writeln!(
                        io.stderr,
                        "error: {msg}; results kept unmerged in {}",
                        dir.join("hosts").display()
                    );
                }
            } else {
                merge_these = with_result(&manifest);
            }
        }
    }
    let mut merged_out = None;
    if !merge_these.is_empty() {
        let parts: Vec<(&str, &[u8])> = merge_these
            .iter()
            .filter_map(|&i| {
                outcomes[i]
                    .result
                    .as_deref()
                    .map(|b| (manifest.hosts[i].name.as_str(), b))
            })
            .collect();
        match merge(kind, &parts) {
            Ok(m) => match write(&dir.join("result.json"), &m.json) {
                Ok(()) => {
                    manifest.merged = true;
                    manifest.merged_hosts = parts.iter().map(|p| p.0.to_string()).collect();
                    merged_out = Some(m);
                }
                Err(e) => {
                    let _ = writeln!(io.stderr, "error: {e}");
                    exit = exit.max(1);
                }
            },
            Err(e) => {
                let _ = writeln!(io.stderr, "error: cannot merge: {e}");
                manifest.error.get_or_insert(format!("cannot merge: {e}"));
                exit = exit.max(1);
            }
        }
    }
    let bytes = serde_json::to_vec_pretty(&manifest).expect("a manifest serializes");
    if let Err(e) = write(&dir.join("fleet.json"), &bytes) {
        let _ = writeln!(io.stderr, "error: {e}");
        exit = exit.max(1);
    }
    if let Some(m) = merged_out {
        let _ = io.stdout.write_all(if json { &m.json } else { &m.text });
    }
    if let Some(s) = spread {
        let _ = writeln!(
            io.stderr,
            "start spread across hosts: {s:.1} ms (limit {limit_ms} ms)"
        );
    }
    Outcome::code(exit)
}

fn record(kind: Kind, dir: &Path, f: &csdchar_fleet::HostFacts, o: &HostOutcome) -> HostRecord {
    let rel = |ext: &str| format!("hosts/{}.{ext}", o.name);
    let log_rel = o
        .log
        .strip_prefix(dir)
        .map_or_else(|_| o.log.display().to_string(), |p| p.display().to_string());
    let message = match &o.status {
        HostStatus::Lost(why) => Some(why.clone()),
        HostStatus::Hung => Some("ran past the step's end and was cut off".to_string()),
        HostStatus::Exited(0) => None,
        HostStatus::Exited(_) => {
            let text = std::fs::read(&o.log).unwrap_or_default();
            Some(csdchar_fleet::preflight::last_line(&text))
        }
    };
    HostRecord {
        name: f.name.clone(),
        destination: f.destination.clone(),
        version: f.version.clone(),
        kernel: f.kernel.clone(),
        clock_offset_ms: f.clock_offset_ms,
        rtt_ms: f.rtt_ms,
        ntp_offset_ms: f.ntp_offset_ms,
        late_ms: o.result.as_deref().and_then(|b| lateness(kind, b)),
        status: o.status.word().to_string(),
        exit_code: match o.status {
            HostStatus::Exited(c) => Some(c),
            _ => None,
        },
        message,
        result: o.result.as_ref().map(|_| rel("json")),
        log: log_rel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_urls_are_seen() {
        for (url, has) in [
            ("host=db1 user=bench dbname=bench", false),
            ("host=db1 password=secret", true),
            ("host=db1 password = secret", true),
            ("postgresql://bench:secret@db1/bench", true),
            ("postgres://bench@db1/bench?sslmode=require", false),
            ("postgresql://bench@db1/bench?password=x", true),
        ] {
            assert_eq!(url_has_password(url), has, "{url}");
        }
    }
}
