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

/// Writes what --parse-only or --print-job prints: exit 0, or 1 when it
/// cannot be written.
fn print(bytes: &[u8], opts: &BlockOpts, io: &mut Io<'_>) -> Outcome {
    let written = emit(bytes, opts.output.as_deref(), io.stdout);
    if let Err(e) = &written {
        let _ = writeln!(io.stderr, "error: {e}");
    }
    Outcome::code(if written.is_ok() { 0 } else { 1 })
}

fn run_job_file_command(opts: &BlockOpts, path: &std::path::Path, io: &mut Io<'_>) -> Outcome {
    let usage = |io: &mut Io<'_>, e: &dyn std::fmt::Display| {
        let _ = writeln!(io.stderr, "error: {e}");
        Outcome::code(EXIT_USAGE)
    };
    if opts.log_interval < crate::opts::MIN_INTERVAL {
        return usage(io, &"--log-interval: must be at least 10ms");
    }
    let mut plan = match load_job_file(path, opts.ignore_unsupported) {
        Ok(p) => p,
        Err(e) => return usage(io, &e),
    };
    // The job file has no interval of its own: --log-interval is every job's.
    for j in &mut plan.jobs {
        j.spec.log_interval_ms = opts.log_interval.as_millis() as u64;
    }
    // The result must not land on the job file or a file a job reads or writes.
    let inputs = csdchar_fio_like::jobfile::files(path, &plan);
    if let Err(e) = crate::opts::check_output(opts.output.as_deref(), &inputs) {
        return usage(io, &e);
    }
    for n in csdchar_fio_like::jobfile::notes(&plan) {
        let _ = writeln!(io.stderr, "note: {n}");
    }
    if opts.parse_only {
        let text = csdchar_fio_like::jobfile::describe(&plan);
        return print(text.as_bytes(), opts, io);
    }
    let stderr = &mut *io.stderr;
    let run = run_job_file(
        &plan,
        &path.display().to_string(),
        opts.force,
        &Arc::clone(&io.interrupt),
        &mut |line| {
            let _ = writeln!(stderr, "{line}");
            let _ = stderr.flush();
        },
    );
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
        // args_os: an argument that is not UTF-8 must not panic the command.
        let command: Vec<String> = std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let text = match csdchar_core::fio_job::print_job(&spec, &command.join(" ")) {
            Ok(t) => t,
            Err(e) => {
                let _ = writeln!(io.stderr, "error: {e}");
                return Outcome::code(EXIT_USAGE);
            }
        };
        return print(text.as_bytes(), opts, io);
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
