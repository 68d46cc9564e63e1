//! `csdchar campaign FILE.toml`: the campaign crate plans and keeps the
//! manifest; this module supplies its [`StepRunner`] (each planned argv is
//! parsed by csdchar's own clap parser and run in-process through the same
//! path as the subcommand, both given by the crate root as [`StepCommands`]),
//! prints progress, and ends with `csdchar report` over the results, targets
//! side by side.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::Args;
use csdchar_campaign::{
    Campaign, CampaignError, CampaignStatus, Event, Executor, PlannedStep, RunOptions, StepOutcome,
    StepRunner, StorageProvisioner,
};
use csdchar_report::{InputSpec, ReportOptions, build_report_with};

use crate::io::{EXIT_INTERRUPTED, EXIT_USAGE, Io, Outcome};

/// Options of `csdchar campaign`.
#[derive(Debug, Clone, Args)]
pub struct CampaignOpts {
    /// The campaign file (TOML): targets, steps and parameter grids (see examples/campaigns/).
    pub file: PathBuf,
    /// Output directory: one result per step, manifest.json, logs and the report. Running
    /// the same command again resumes: steps whose results are complete are skipped.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Show the plan (steps, commands, estimated duration) and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Replace a target's storage: NAME=DIR (a directory on the device under test), NAME=DEVICE
    /// (block steps), or NAME=URL (db steps on that server). Repeatable.
    #[arg(long = "target", value_name = "NAME=PATH|URL")]
    pub targets: Vec<String>,
    /// Stop at the first failed step (default: record it and go on).
    #[arg(long)]
    pub fail_fast: bool,
    /// Resume although the campaign file or a target changed since the manifest was written.
    #[arg(long)]
    pub force: bool,
}

/// What campaign steps need of the other commands, given by the crate root
/// (which knows them all): a step's argv (without the program name) checked as
/// its command checks it before running, and run in-process.
pub struct StepCommands {
    /// Usage errors of the step, in one line.
    pub check: fn(&[String]) -> Result<(), String>,
    /// Runs the step; its exit code, or why its argv does not parse.
    pub run: fn(&[String], &mut Io<'_>) -> Result<i32, String>,
}

/// Runs campaign steps through csdchar's own parser and run path;
/// each step's output goes to `<out>/<target>/<step>.log`.
struct CliSteps<'c> {
    commands: &'c StepCommands,
    interrupt: Arc<AtomicBool>,
    /// The campaign's output directory.
    out: PathBuf,
}

/// The step's log: `<out>/<target>/<step>.log`, next to its result.
fn log_path(step: &PlannedStep, out: &std::path::Path) -> PathBuf {
    let stem = step.key.rsplit('/').next().unwrap_or(&step.key);
    out.join(&step.target).join(format!("{stem}.log"))
}

impl StepRunner for CliSteps<'_> {
    fn check(&self, step: &PlannedStep) -> Result<(), String> {
        (self.commands.check)(&step.command).map_err(|e| format!("{}: {e}", step.command_line()))
    }

    fn run(&mut self, step: &PlannedStep, _interrupt: &AtomicBool) -> StepOutcome {
        let mut stdout: Vec<u8> = Vec::new();
        let mut stderr: Vec<u8> = Vec::new();
        let ran = {
            let mut io = Io {
                stdout: &mut stdout,
                stderr: &mut stderr,
                interrupt: Arc::clone(&self.interrupt),
            };
            (self.commands.run)(&step.command, &mut io)
        };
        let code = match ran {
            Ok(code) => code,
            Err(e) => return StepOutcome::Failed(format!("{}: {e}", step.command_line())),
        };
        let mut log = format!("$ {}\n", step.command_line()).into_bytes();
        log.extend_from_slice(&stdout);
        log.extend_from_slice(&stderr);
        // The log goes where results go, under the same rule.
        let _ = csdchar_fio_like::safety::write_output(&log_path(step, &self.out), &log);
        let stderr = String::from_utf8_lossy(&stderr);
        match code {
            0 => StepOutcome::Done,
            EXIT_INTERRUPTED => StepOutcome::Interrupted,
            _ => StepOutcome::Failed(
                stderr
                    .lines()
                    .find(|l| l.starts_with("error:"))
                    .or_else(|| stderr.lines().rfind(|l| !l.trim().is_empty()))
                    .map(|l| l.trim_start_matches("error: ").to_string())
                    .unwrap_or_else(|| format!("exit code {code}")),
            ),
        }
    }
}

/// Runs `csdchar campaign`, its steps through `commands`.
pub fn run_campaign(opts: &CampaignOpts, io: &mut Io<'_>, commands: &StepCommands) -> Outcome {
    let usage = |io: &mut Io<'_>, e: &dyn std::fmt::Display| {
        let _ = writeln!(io.stderr, "error: {e}");
        Outcome::code(EXIT_USAGE)
    };
    let mut campaign = match Campaign::load(&opts.file) {
        Ok(c) => c,
        Err(e) => return usage(io, &e),
    };
    for t in &opts.targets {
        if let Err(e) = campaign.override_from_arg(t) {
            return usage(io, &e);
        }
    }
    let plan = match campaign.plan(&opts.out) {
        Ok(p) => p,
        Err(e) => return usage(io, &e),
    };
    let mut steps = CliSteps {
        commands,
        interrupt: Arc::clone(&io.interrupt),
        out: plan.out.clone(),
    };
    let interrupt = Arc::clone(&io.interrupt);
    let options = RunOptions {
        fail_fast: opts.fail_fast,
        force: opts.force,
        csdchar_version: env!("CARGO_PKG_VERSION").to_string(),
    };
    if opts.dry_run {
        // The dry run checks what the run would check before it starts.
        let checked = Executor {
            runner: &mut steps,
            progress: &mut |_: &Event<'_>| {},
            provisioner: &mut StorageProvisioner,
            interrupt: &interrupt,
            options,
        }
        .check(&campaign, &plan);
        if let Err(e) = checked {
            let code = if e.is_bad_input() { EXIT_USAGE } else { 1 };
            let _ = writeln!(io.stderr, "error: {e}");
            return Outcome::code(code);
        }
        let _ = io.stdout.write_all(plan.render().as_bytes());
        return Outcome::code(0);
    }
    let summary = {
        let stdout = &mut *io.stdout;
        let mut progress = |e: &Event<'_>| print_event(stdout, e);
        Executor {
            runner: &mut steps,
            progress: &mut progress,
            provisioner: &mut StorageProvisioner,
            interrupt: &interrupt,
            options,
        }
        .run(&campaign, &plan)
    };
    let summary = match summary {
        Ok(s) => s,
        Err(e @ CampaignError::Io(_)) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return Outcome::code(1);
        }
        Err(e) => {
            let code = if e.is_bad_input() { EXIT_USAGE } else { 1 };
            let _ = writeln!(io.stderr, "error: {e}");
            return Outcome::code(code);
        }
    };
    let _ = writeln!(
        io.stderr,
        "campaign: manifest {}",
        plan.out.join(csdchar_campaign::MANIFEST_FILE).display()
    );
    let report_code = report(&summary.results_by_target(), &plan.out.join("report"), io);
    match summary.status {
        CampaignStatus::Completed => Outcome::code(report_code),
        CampaignStatus::Interrupted => {
            let _ = writeln!(
                io.stderr,
                "campaign interrupted: run the same command again to resume"
            );
            Outcome::code(EXIT_INTERRUPTED)
        }
        _ => Outcome::code(1),
    }
}

/// One progress line per event.
fn print_event(out: &mut dyn Write, e: &Event<'_>) {
    let _ = writeln!(out, "{}", e.line());
}

/// `csdchar report` over the results, each labelled by its target (the first
/// target is the baseline of the comparisons).
fn report(by_target: &[(String, Vec<PathBuf>)], dir: &std::path::Path, io: &mut Io<'_>) -> i32 {
    let specs: Vec<InputSpec> = by_target
        .iter()
        .flat_map(|(target, files)| {
            files.iter().map(move |f| InputSpec {
                path: f.clone(),
                label: Some(target.clone()),
            })
        })
        .collect();
    if specs.is_empty() {
        let _ = writeln!(io.stderr, "campaign: no results to report");
        return 0;
    }
    let report = match build_report_with(&specs, ReportOptions::default()) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: report: {e}");
            return 1;
        }
    };
    if let Err(e) = csdchar_fio_like::safety::write_outputs(dir, &report.files) {
        let _ = writeln!(io.stderr, "error: {e}");
        return 1;
    }
    let _ = io.stdout.write_all(report.terminal.as_bytes());
    let _ = writeln!(
        io.stderr,
        "report: {} files in {} (open {})",
        report.files.len(),
        dir.display(),
        dir.join("report.html").display()
    );
    0
}
