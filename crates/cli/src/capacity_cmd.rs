//! `csdchar capacity`: the logical and physical capacity of the device holding a path,
//! once or every `--watch` interval.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::args::{MIN_INTERVAL, OutputFormat, UsageError, duration_arg};
use crate::io::{EXIT_USAGE, Io, Outcome, emit};

/// `csdchar capacity`.
#[derive(Debug, Args)]
pub struct CapacityOpts {
    /// A block device, or any path on a file system (its device is found).
    pub target: PathBuf,
    /// Print a line every DURATION until Ctrl-C (at least 10ms, e.g. 1s).
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub watch: Option<Duration>,
    /// Stop after this many --watch lines (at least 1).
    #[arg(long, requires = "watch", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// Output format (json: one object; with --watch, one object per line).
    #[arg(long, value_enum, default_value = "normal")]
    pub output_format: OutputFormat,
}

impl CapacityOpts {
    /// Checks the options before anything is read.
    pub fn validate(&self) -> Result<(), UsageError> {
        if self.watch.is_some_and(|w| w < MIN_INTERVAL) {
            return Err(UsageError("--watch: must be at least 10ms".into()));
        }
        Ok(())
    }
}

/// Runs `csdchar capacity`.
pub fn run_capacity_command(opts: &CapacityOpts, io: &mut Io<'_>) -> Outcome {
    use std::sync::atomic::Ordering;
    if let Err(e) = opts.validate() {
        let _ = writeln!(io.stderr, "error: {e}");
        return Outcome::code(EXIT_USAGE);
    }
    let sysfs = csdchar_devices::Sysfs::from_env();
    let target = match csdchar_devices::CapacityTarget::resolve(&sysfs, &opts.target) {
        Ok(t) => t,
        Err(e) => {
            let code = match e {
                csdchar_devices::ResolveError::Path(_) => EXIT_USAGE,
                _ => 1,
            };
            let _ = match e {
                csdchar_devices::ResolveError::Path(m) => writeln!(io.stderr, "error: TARGET: {m}"),
                e => writeln!(io.stderr, "error: {e}"),
            };
            return Outcome::code(code);
        }
    };
    let take = || target.take(&sysfs, &opts.target);
    let json = opts.output_format == OutputFormat::Json;
    let Some(every) = opts.watch else {
        let r = match take() {
            Ok(r) => r,
            Err(e) => {
                let _ = writeln!(io.stderr, "error: {e}");
                return Outcome::code(1);
            }
        };
        let bytes = if json {
            csdchar_report::text::json_line(&r)
        } else {
            csdchar_report::text::capacity_text(&r)
        };
        let code = if emit(&bytes, None, io.stdout).is_ok() {
            0
        } else {
            1
        };
        return Outcome::code(code);
    };
    if !json {
        let _ = io
            .stdout
            .write_all(csdchar_report::text::CAPACITY_WATCH_HEADER.as_bytes());
    }
    let mut prev: Option<(std::time::Instant, csdchar_core::capacity::CapacitySnapshot)> = None;
    let mut lines = 0u64;
    // Ctrl-C ends a watch: that is how one stops it, so the exit code is 0.
    while !io.interrupt.load(Ordering::Relaxed) {
        let now = std::time::Instant::now();
        let r = match take() {
            Ok(r) => r,
            Err(e) => {
                let _ = writeln!(io.stderr, "error: {e}");
                return Outcome::code(1);
            }
        };
        let bytes = if json {
            csdchar_report::text::json_line(&r)
        } else {
            let secs = prev
                .as_ref()
                .map_or(0.0, |(t, _)| now.duration_since(*t).as_secs_f64());
            csdchar_report::text::capacity_watch_line(&r, prev.as_ref().map(|(_, s)| s), secs)
                .into_bytes()
        };
        if emit(&bytes, None, io.stdout).is_err() {
            return Outcome::code(1);
        }
        lines += 1;
        if opts.count.is_some_and(|c| lines >= c) {
            break;
        }
        prev = Some((now, r.snapshot));
        let until = now + every;
        while std::time::Instant::now() < until && !io.interrupt.load(Ordering::Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(20).min(every));
        }
    }
    Outcome::code(0)
}
