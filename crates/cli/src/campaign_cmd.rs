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
    Campaign, CampaignError, CampaignStatus, CommandKind, Event, Executor, PlannedStep, RunOptions,
    StepOutcome, StepRunner, StorageProvisioner,
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
    /// Load hosts, one ssh destination per line (as `block`/`db run --hosts`), instead of the
    /// file's [hosts]: load steps (db run, block) run on every host unless their `on` says
    /// otherwise, other steps once, here.
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
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
    /// The load hosts ([hosts] or --hosts).
    hosts: Vec<csdchar_fleet::Host>,
}

/// Whether a step of `kind` is a load step, which may run on hosts.
fn is_load(kind: CommandKind) -> bool {
    matches!(kind, CommandKind::DbRun | CommandKind::Block)
}

/// A host as a hosts-file line.
fn host_line(h: &csdchar_fleet::Host) -> String {
    format!(
        "{} name={} csdchar={} workdir={}{}",
        h.destination,
        h.name,
        h.csdchar,
        h.workdir,
        if h.sudo { " sudo" } else { "" }
    )
}

impl CliSteps<'_> {
    /// The hosts `step` runs on, or None (here).
    fn hosts_of(&self, step: &PlannedStep) -> Result<Option<Vec<String>>, String> {
        let names: Vec<String> = self.hosts.iter().map(|h| h.name.clone()).collect();
        step.on
            .resolve(&step.kind.words().join(" "), is_load(step.kind), &names)
            .map_err(|e| format!("{}: {e}", step.key))
    }

    /// `step`'s argv to run it on `names` (`--hosts` and its run directory, which a
    /// re-run replaces: a resumed step runs again on every host), and that directory.
    fn on_hosts(
        &self,
        step: &PlannedStep,
        names: &[String],
    ) -> Result<(Vec<String>, PathBuf), String> {
        let stem = step.key.rsplit('/').next().unwrap_or(&step.key);
        let dir = self.out.join(&step.target);
        let file = dir.join(format!("{stem}.hosts"));
        let run = dir.join(format!("{stem}.d"));
        let lines: Vec<String> = self
            .hosts
            .iter()
            .filter(|h| names.contains(&h.name))
            .map(host_line)
            .collect();
        let _ = std::fs::remove_file(&file);
        csdchar_fio_like::safety::write_output(&file, (lines.join("\n") + "\n").as_bytes())
            .map_err(|e| e.to_string())?;
        if run.exists() {
            std::fs::remove_dir_all(&run).map_err(|e| format!("{}: {e}", run.display()))?;
        }
        let mut argv = step.command.clone();
        if let Some(i) = argv.iter().position(|a| a == "--output") {
            argv[i + 1] = run.display().to_string();
        }
        argv.push("--hosts".to_string());
        argv.push(file.display().to_string());
        Ok((argv, run))
    }
}

/// The step's log: `<out>/<target>/<step>.log`, next to its result.
fn log_path(step: &PlannedStep, out: &std::path::Path) -> PathBuf {
    let stem = step.key.rsplit('/').next().unwrap_or(&step.key);
    out.join(&step.target).join(format!("{stem}.log"))
}

impl StepRunner for CliSteps<'_> {
    fn check(&self, step: &PlannedStep) -> Result<(), String> {
        let mut argv = step.command.clone();
        if self.hosts_of(step)?.is_some() {
            // Checked as it will run: with --hosts (the file is written when it runs).
            argv.extend(["--hosts".to_string(), "hosts".to_string()]);
        }
        (self.commands.check)(&argv).map_err(|e| format!("{}: {e}", step.command_line()))
    }

    fn run(&mut self, step: &PlannedStep, _interrupt: &AtomicBool) -> StepOutcome {
        let (argv, run_dir) = match self.hosts_of(step) {
            Ok(Some(names)) => match self.on_hosts(step, &names) {
                Ok((a, d)) => (a, Some(d)),
                Err(e) => return StepOutcome::Failed(e),
            },
            Ok(None) => (step.command.clone(), None),
            Err(e) => return StepOutcome::Failed(e),
        };
        let mut stdout: Vec<u8> = Vec::new();
        let mut stderr: Vec<u8> = Vec::new();
        let ran = {
            let mut io = Io {
                stdout: &mut stdout,
                stderr: &mut stderr,
                interrupt: Arc::clone(&self.interrupt),
            };
            (self.commands.run)(&argv, &mut io)
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
        // On hosts: the merged result is the step's result (the hosts' own stay in the run's directory).
        if let (Some(d), Some(result)) = (&run_dir, &step.result_path)
            && let Ok(bytes) = std::fs::read(d.join("result.json"))
        {
            let _ = std::fs::remove_file(result);
            if let Err(e) = csdchar_fio_like::safety::write_output(result, &bytes) {
                return StepOutcome::Failed(e.to_string());
            }
        }
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
    let hosts_text = match &opts.hosts {
        Some(f) => match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => return usage(io, &format!("--hosts: cannot read {}: {e}", f.display())),
        },
        None => campaign.hosts.join("\n"),
    };
    let hosts = if hosts_text.trim().is_empty() {
        Vec::new()
    } else {
        match csdchar_fleet::parse_hosts(&hosts_text) {
            Ok(h) => h,
            Err(e) => return usage(io, &e),
        }
    };
    let mut steps = CliSteps {
        commands,
        interrupt: Arc::clone(&io.interrupt),
        out: plan.out.clone(),
        hosts,
    };
    // Where every step runs is decided before anything runs.
    for step in &plan.steps {
        match steps.hosts_of(step) {
            Err(e) => return usage(io, &e),
            Ok(Some(_))
                if step.kind == CommandKind::DbRun
                    && !step.command.iter().any(|a| a == "--url") =>
            {
                return usage(
                    io,
                    &format!(
                        "{}: db run on load hosts needs a target with url (the server every host drives)",
                        step.key
                    ),
                );
            }
            Ok(_) => {}
        }
    }
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
