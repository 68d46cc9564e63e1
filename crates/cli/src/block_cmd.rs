//! `csdchar block`: a command line or a fio job file → spec(s) → the engine →
//! csdchar's result, text, or fio's JSON.

use std::sync::Arc;

use csdchar_core::result::RunStatus;
use csdchar_core::result::block::BlockResult;
use csdchar_fio_like::jobfile::{load_job_file, run_job_file};
use csdchar_fio_like::{RunControl, run_block};

use crate::opts::BlockOutputFormat;
use crate::{BlockOpts, EXIT_USAGE, Io, Outcome, emit};

/// The bytes of `results` in the chosen format.
fn render(results: &[BlockResult], globals: &[(String, String)], f: BlockOutputFormat) -> Vec<u8> {
    match f {
        BlockOutputFormat::Json if results.len() == 1 => {
            csdchar_report::text::json_pretty(&results[0])
        }
        BlockOutputFormat::Json => csdchar_report::text::json_pretty(&results),
        BlockOutputFormat::Normal => csdchar_report::text::block_results_text(results),
        BlockOutputFormat::FioJson => csdchar_report::fio_json::fio_json(results, globals, false),
        BlockOutputFormat::FioJsonPlus => {
            csdchar_report::fio_json::fio_json(results, globals, true)
        }
    }
}

fn run_job_file_command(opts: &BlockOpts, path: &std::path::Path, io: &mut Io<'_>) -> Outcome {
    if let Err(e) = crate::opts::check_output(opts.output.as_deref(), &[path]) {
        let _ = writeln!(io.stderr, "error: {e}");
        return Outcome::code(EXIT_USAGE);
    }
    let plan = match load_job_file(path, opts.ignore_unsupported) {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return Outcome::code(EXIT_USAGE);
        }
    };
    for n in csdchar_fio_like::jobfile::notes(&plan) {
        let _ = writeln!(io.stderr, "note: {n}");
    }
    if opts.parse_only {
        let _ = io
            .stdout
            .write_all(csdchar_fio_like::jobfile::describe(&plan).as_bytes());
        return Outcome::code(0);
    }
    let run = run_job_file(
        &plan,
        &path.display().to_string(),
        opts.force,
        &Arc::clone(&io.interrupt),
    );
    for line in &run.lines {
        let _ = writeln!(io.stderr, "{line}");
    }
    let (results, mut exit_code) = (run.results, run.exit_code);
    if !results.is_empty() {
        let bytes = render(&results, &plan.global_options, opts.output_format);
        if let Err(e) = emit(&bytes, opts.output.as_deref(), io.stdout) {
            let _ = writeln!(io.stderr, "error: {e}");
            exit_code = 1;
        }
        if exit_code != 0 {
            let _ = writeln!(
                io.stderr,
                "{} of {} jobs ran; their results are saved",
                results.len(),
                plan.jobs.len()
            );
        }
    }
    Outcome {
        exit_code,
        block: results.into_iter().next(),
    }
}

pub(crate) fn run_block_command(opts: &BlockOpts, io: &mut Io<'_>) -> Outcome {
    if let Some(path) = &opts.job_file {
        return run_job_file_command(opts, path, io);
    }
    let spec = match opts.validate() {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return Outcome::code(EXIT_USAGE);
        }
    };
    if opts.print_job {
        let command: Vec<String> = std::env::args().collect();
        let text = csdchar_core::fio_job::print_job(&spec, &command.join(" "));
        return match emit(text.as_bytes(), opts.output.as_deref(), io.stdout) {
            Ok(()) => Outcome::code(0),
            Err(e) => {
                let _ = writeln!(io.stderr, "error: {e}");
                Outcome::code(1)
            }
        };
    }
    let live = opts.output_format == BlockOutputFormat::Normal && opts.output.is_none();
    let stdout = &mut *io.stdout;
    let mut print_interval = |s: &csdchar_core::result::block::IntervalSample| {
        let _ = stdout.write_all(csdchar_report::text::interval_line(s).as_bytes());
    };
    let ctl = RunControl {
        interrupt: Arc::clone(&io.interrupt),
        on_interval: if live {
            Some(&mut print_interval)
        } else {
            None
        },
    };
    let result = match run_block(&spec, ctl) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return Outcome::code(e.exit_code());
        }
    };
    let bytes = render(std::slice::from_ref(&result), &[], opts.output_format);
    let mut exit_code = csdchar_fio_like::error::exit_code(result.status);
    if let Err(e) = emit(&bytes, opts.output.as_deref(), io.stdout) {
        let _ = writeln!(io.stderr, "error: {e}");
        exit_code = 1;
    }
    match result.status {
        RunStatus::Interrupted => {
            let _ = writeln!(io.stderr, "interrupted: partial result saved");
        }
        RunStatus::IoError => {
            let msg = result
                .error
                .as_ref()
                .map_or("unknown error", |e| e.message.as_str());
            let done: u64 = [&result.read, &result.write]
                .iter()
                .filter_map(|d| d.as_ref())
                .map(|d| d.bytes)
                .sum();
            let _ = writeln!(
                io.stderr,
                "error: {msg}; {} completed before the error; partial result saved",
                csdchar_core::units::format_bytes(done as f64)
            );
        }
        RunStatus::VerifyFailed => {
            let n = result.verify.as_ref().map_or(0, |v| v.bad_block_count);
            let _ = writeln!(io.stderr, "error: verification found {n} bad blocks");
        }
        RunStatus::Completed => {}
    }
    Outcome {
        exit_code,
        block: Some(result),
    }
}
