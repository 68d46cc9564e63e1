//! `csdchar report`: options to inputs, the report built in memory, then
//! written under `--out` (the one place that writes its files).

use std::path::{Path, PathBuf};

use csdchar_fio_like::safety::OutputError;
use csdchar_report::{InputSpec, ReportOptions, build_report_with};

use crate::opts::ReportOpts;
use crate::{EXIT_USAGE, Io, Outcome};

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

/// Writes the report's files under `dir`, each under the output rule every
/// `--output` follows ([`csdchar_fio_like::safety::output_refusal`]); all are
/// checked before the first is written, so a refused one (say a
/// `report.html` that is a symlink to a block device) leaves `dir` as it was.
pub fn write_files(dir: &Path, files: &[(PathBuf, Vec<u8>)]) -> Result<(), OutputError> {
    for (rel, _) in files {
        if let Some(why) = csdchar_fio_like::safety::output_refusal(&dir.join(rel)) {
            return Err(OutputError::Refused(format!("--out: {why}")));
        }
    }
    for (rel, bytes) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| OutputError::Io {
                path: parent.display().to_string(),
                source,
            })?;
        }
        csdchar_fio_like::safety::write_output(&path, bytes).map_err(|e| match e {
            OutputError::Refused(m) => OutputError::Refused(format!("--out: {m}")),
            e => e,
        })?;
    }
    Ok(())
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
    if let Err(e) = write_files(&opts.out, &report.files) {
        let code = match e {
            OutputError::Refused(_) => EXIT_USAGE,
            OutputError::Io { .. } => 1,
        };
        let _ = match e {
            OutputError::Refused(m) => writeln!(io.stderr, "error: {m}"),
            e => writeln!(io.stderr, "error: --out: {e}"),
        };
        return Outcome::code(code);
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
