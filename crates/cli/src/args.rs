//! What every command shares of the command line, a leaf the commands import: value
//! parsers (sizes, durations, booleans, percentiles, `--start-at`), the output format,
//! the check of an `--output FILE`, and the usage error (exit 2, one line).

use std::path::Path;
use std::time::Duration;

use clap::ValueEnum;
use csdchar_core::units::{parse_duration, parse_size};

/// Shortest `--log-interval` of block and `--watch` of capacity: shorter
/// intervals measure the clock more than the device, and a zero one spins.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// Output formats (every command's `--output-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Human-readable text (block: a fio-like summary after a line per interval).
    Normal,
    /// The command's JSON result only; `csdchar schema <command>` prints its schema.
    Json,
}

/// Checks an `--output FILE` before a command does any work, so a bad one is
/// a usage error (exit 2, nothing written) instead of a result lost at the end.
///
/// What is refused is [`csdchar_fio_like::safety::output_problem`]'s: a
/// directory, a file in a missing directory, what the output rule refuses (a
/// block device, mounted or not), one of `inputs` (the files or devices the
/// command reads or writes: block's TARGET and a job file's, estimate's
/// paths, db's inputs). `None` (no `--output`) is always fine. The error
/// names `--output` and fits on one line; [`crate::io::emit`] applies the output
/// rule again to what it opens.
pub fn check_output(output: Option<&Path>, inputs: &[&Path]) -> Result<(), UsageError> {
    match output.and_then(|out| csdchar_fio_like::safety::output_problem(out, inputs)) {
        Some(why) => Err(UsageError(format!("--output: {why}"))),
        None => Ok(()),
    }
}

/// `--start-at`: a time in the next 24 hours ([`csdchar_core::start_at::parse_start_at`]).
pub fn start_at_arg(s: &str) -> Result<std::time::SystemTime, String> {
    csdchar_core::start_at::parse_start_at(s, std::time::SystemTime::now(), local_offset_s)
}

/// Seconds east of UTC of the local time zone at `t` (0 when unknown).
fn local_offset_s(t: std::time::SystemTime) -> i64 {
    let secs = match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as libc::time_t,
        Err(_) => return 0,
    };
    // Safety: localtime_r only writes into the zeroed struct we own.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // Safety: valid pointers to a time_t and a tm.
    if unsafe { libc::localtime_r(&secs, &mut tm) }.is_null() {
        return 0;
    }
    tm.tm_gmtoff
}

pub fn size_arg(s: &str) -> Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

pub fn duration_arg(s: &str) -> Result<std::time::Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

pub fn bool_arg(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("'{s}' is not a boolean (use 1/0, true/false)")),
    }
}

pub fn percentile_arg(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(format!(
            "'{s}' is not a percentile (a number above 0 and at most 100)"
        )),
    }
}

/// Bad input: one line naming the option and what it allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Turns a clap error into one line: what is wrong, naming the option.
pub fn one_line(err: &clap::Error) -> String {
    let rendered = err.render().to_string();
    let text: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .collect();
    text.join(" ")
}
