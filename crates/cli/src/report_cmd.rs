//! `csdchar report`: options to inputs, the report built in memory, then
//! written under `--out` (the one place that writes its files).

use std::path::PathBuf;

use csdchar_fio_like::safety::OutputError;
use csdchar_report::{InputSpec, ReportOptions, build_report_with};

use clap::Args;

use crate::io::{EXIT_USAGE, Io, Outcome};

/// `csdchar report`.
#[derive(Debug, Args)]
pub struct ReportOpts {
    /// Result files (block, db, study, capacity, estimate JSON) or directories searched for *.json.
    pub results: Vec<PathBuf>,
    /// Directory the report is written to (created when missing; not an existing file).
    #[arg(long, default_value = "csdchar-report")]
    pub out: PathBuf,
    /// NAME=PATH: report the results in PATH (a file or directory) as NAME, e.g. the drive; repeatable. The first label is the baseline of comparisons.
    #[arg(long = "label", value_name = "NAME=PATH")]
    pub labels: Vec<String>,
    /// Do not print the tables.
    #[arg(long, short)]
    pub quiet: bool,
    /// Merge results of the same run from several hosts (same workload and options, started
    /// together with --start-at) into one before reporting: latency histograms and counts are
    /// added and percentiles recomputed, never averaged. Results merge within one --label.
    #[arg(long)]
    pub merge: bool,
}

/// The inputs the options name: `--label` paths first (the first label is the
/// comparisons' baseline), then the positional results.
pub fn input_specs(opts: &ReportOpts) -> Result<Vec<InputSpec>, String> {
    let mut specs = Vec::new();
    for l in &opts.labels {
        match l.split_once('=') {
            Some((name, path)) if !name.trim().is_empty() && !path.is_empty() => {
                specs.push(InputSpec {
                    path: PathBuf::from(path),
                    label: Some(name.trim().to_string()),
                })
            }
            _ => return Err(format!("--label: expected NAME=PATH, got '{l}'")),
        }
    }
    specs.extend(opts.results.iter().map(|p| InputSpec {
        path: p.clone(),
        label: None,
    }));
    if specs.is_empty() {
        return Err(
            "RESULT: give at least one result file or directory (or --label NAME=PATH)".into(),
        );
    }
    if opts.out.exists() && !opts.out.is_dir() {
        return Err(format!(
            "--out: {} exists and is not a directory",
            opts.out.display()
        ));
    }
    Ok(specs)
}

/// Runs `csdchar report`.
pub fn run_report(opts: &ReportOpts, io: &mut Io<'_>) -> Outcome {
    let specs = match input_specs(opts) {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return Outcome::code(EXIT_USAGE);
        }
    };
    let report = match build_report_with(&specs, ReportOptions { merge: opts.merge }) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            let code = if e.is_bad_input() { EXIT_USAGE } else { 1 };
            return Outcome::code(code);
        }
    };
    // The output rule of every --output, for each file (refused: exit 2, nothing written).
    if let Err(e) = csdchar_fio_like::safety::write_outputs(&opts.out, &report.files) {
        let _ = writeln!(io.stderr, "error: --out: {e}");
        let refused = matches!(e, OutputError::Refused(_));
        return Outcome::code(if refused { EXIT_USAGE } else { 1 });
    }
    if !opts.quiet {
        let _ = io.stdout.write_all(report.terminal.as_bytes());
    }
    for note in &report.notes {
        let _ = writeln!(io.stderr, "note: {note}");
    }
    let _ = writeln!(
        io.stderr,
        "report: {} files in {} (open {})",
        report.files.len(),
        opts.out.display(),
        opts.out.join("report.html").display()
    );
    Outcome::code(0)
}
