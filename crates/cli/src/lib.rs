//! The `csdchar` command as a library: [`run`] executes parsed options
//! in-process (integration tests call it directly); `main` only parses
//! arguments, installs signal handlers and exits with the code.

pub mod block_cmd;
pub mod build_info;
pub mod campaign_cmd;
pub mod db_cmd;
pub mod db_opts;
pub mod install_cmd;
pub mod opts;
pub mod report_cmd;

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::Parser;
use csdchar_core::capacity::CapacityResult;
use csdchar_core::result::block::BlockResult;

pub use opts::{BlockOpts, CapacityOpts, Cli, Command, OutputFormat, SchemaName, UsageError};

/// Exit code for bad input.
pub const EXIT_USAGE: i32 = 2;
/// Exit code after SIGINT/SIGTERM (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Where a command writes, and the flag signals set.
pub struct Io<'a> {
    /// Results and live lines.
    pub stdout: &'a mut dyn Write,
    /// Errors and notices.
    pub stderr: &'a mut dyn Write,
    /// Set on SIGINT/SIGTERM.
    pub interrupt: Arc<AtomicBool>,
}

/// What a command produced.
#[derive(Debug)]
pub struct Outcome {
    /// Process exit code.
    pub exit_code: i32,
    /// The block result, when a block run happened.
    pub block: Option<BlockResult>,
}

impl Outcome {
    pub(crate) fn code(exit_code: i32) -> Self {
        Outcome {
            exit_code,
            block: None,
        }
    }
}

/// Runs a parsed command.
pub fn run(cli: Cli, io: &mut Io<'_>) -> Outcome {
    // Every result this process makes names this build.
    build_info::register();
    match cli.command {
        Command::Block(opts) => block_cmd::run_block_command(&opts, io),
        Command::Capacity(opts) => run_capacity_command(&opts, io),
        Command::Estimate(opts) => run_estimate_command(&opts, io),
        Command::Db(cmd) => db_cmd::run_db(&cmd, io),
        Command::Report(opts) => report_cmd::run_report(&opts, io),
        Command::Campaign(opts) => campaign_cmd::run_campaign(&opts, io),
        Command::Schema { which } => {
            let text = match which {
                SchemaName::Block => block_schema(),
                SchemaName::Capacity => capacity_schema(),
                SchemaName::Estimate => estimate_schema(),
                SchemaName::Db => db_schema(),
                SchemaName::Study => pretty_schema(schemars::schema_for!(
                    csdchar_core::result::study::StudyResult
                )),
            };
            let _ = io.stdout.write_all(text.as_bytes());
            Outcome::code(0)
        }
        Command::Completions { shell } => install_cmd::run_completions(shell, io),
        Command::Manpages { dir } => install_cmd::run_manpages(&dir, io),
    }
}

/// The JSON Schema of `csdchar.block/1`, generated from the documented types.
pub fn block_schema() -> String {
    pretty_schema(schemars::schema_for!(BlockResult))
}

/// The JSON Schema of `csdchar.capacity/1`.
pub fn capacity_schema() -> String {
    pretty_schema(schemars::schema_for!(CapacityResult))
}

/// JSON schema of `csdchar.study/1`, pretty-printed.
pub fn study_schema() -> String {
    pretty_schema(schemars::schema_for!(
        csdchar_core::result::study::StudyResult
    ))
}

/// The JSON Schema of `csdchar.db/1`.
pub fn db_schema() -> String {
    pretty_schema(schemars::schema_for!(csdchar_core::result::db::DbResult))
}

/// The JSON Schema of `csdchar.estimate/1`.
pub fn estimate_schema() -> String {
    pretty_schema(schemars::schema_for!(
        csdchar_core::estimate::EstimateResult
    ))
}

fn run_estimate_command(opts: &opts::EstimateOpts, io: &mut Io<'_>) -> Outcome {
    use opts::CodecArg;
    use std::sync::atomic::Ordering;
    if opts.chunk < 512 || opts.chunk > (1 << 20) {
        let _ = writeln!(io.stderr, "error: --chunk: must be between 512 and 1m");
        return Outcome::code(EXIT_USAGE);
    }
    let inputs: Vec<&Path> = opts.paths.iter().map(|p| p.as_path()).collect();
    if let Err(e) = opts::check_output(opts.output.as_deref(), &inputs) {
        let _ = writeln!(io.stderr, "error: {e}");
        return Outcome::code(EXIT_USAGE);
    }
    let plan = csdchar_estimate::EstimatePlan {
        paths: opts.paths.clone(),
        codec: match opts.codec {
            CodecArg::DeflateFixed => csdchar_core::compressibility::Codec::DeflateFixed,
            CodecArg::Deflate => csdchar_core::compressibility::Codec::Deflate,
            CodecArg::Lz4 => csdchar_core::compressibility::Codec::Lz4,
            CodecArg::Zstd => csdchar_core::compressibility::Codec::Zstd,
        },
        chunk: opts.chunk as usize,
        whole_page_at: None,
        sample_pct: opts.sample,
        seed: opts.seed,
        threads: opts.threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, |n| n.get()),
            |t| t as usize,
        ),
    };
    if let Some(url) = &opts.url
        && let Err(e) =
            csdchar_dbload::conn::ConnTarget::parse(url, &csdchar_dbload::conn::ProcessEnv)
    {
        let _ = writeln!(io.stderr, "error: --url: {e}");
        return Outcome::code(EXIT_USAGE);
    }
    let started = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
    let (mut result, fault) =
        match csdchar_estimate::run_reporting_faults(&plan, &io.interrupt, started) {
            Ok(r) => r,
            Err(e) => {
                let _ = writeln!(io.stderr, "error: {e}");
                return Outcome::code(EXIT_USAGE);
            }
        };
    if let (Some(url), Some(pg)) = (&opts.url, result.postgres.as_mut()) {
        if let Err(e) = csdchar_dbload::snapshot::name_relations(url, pg) {
            let _ = writeln!(io.stderr, "error: {e}");
            return Outcome::code(1);
        }
    } else if opts.url.is_some() {
        let _ = writeln!(
            io.stderr,
            "note: --url ignored: no PostgreSQL data directory among the inputs"
        );
    }
    let bytes = match opts.output_format {
        OutputFormat::Json => csdchar_report::text::json_pretty(&result),
        OutputFormat::Normal => csdchar_report::text::estimate_text(&result),
    };
    if let Err(e) = emit(&bytes, opts.output.as_deref(), io.stdout) {
        let _ = writeln!(io.stderr, "error: {e}");
        return Outcome::code(1);
    }
    if let Some(fault) = fault {
        let _ = writeln!(io.stderr, "error: {fault}; partial result saved");
        return Outcome::code(1);
    }
    if io.interrupt.load(Ordering::Relaxed) || !result.complete {
        let _ = writeln!(io.stderr, "interrupted: partial result saved");
        return Outcome::code(EXIT_INTERRUPTED);
    }
    Outcome::code(0)
}

fn pretty_schema(schema: schemars::Schema) -> String {
    let mut s = serde_json::to_string_pretty(&schema).expect("schema serializes");
    s.push('\n');
    s
}

fn run_capacity_command(opts: &CapacityOpts, io: &mut Io<'_>) -> Outcome {
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

/// The one place results are written: to `path`, or to `stdout` without one.
pub fn emit(bytes: &[u8], path: Option<&Path>, stdout: &mut dyn Write) -> Result<(), String> {
    match path {
        Some(p) => std::fs::write(p, bytes)
            .map_err(|e| format!("--output: cannot write {}: {e}", p.display())),
        None => stdout
            .write_all(bytes)
            .and_then(|_| stdout.flush())
            .map_err(|e| format!("cannot write the result: {e}")),
    }
}

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

/// Parses `args`, installs SIGINT/SIGTERM handling and runs; returns the exit code.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            if e.use_stderr() {
                eprintln!("{}", one_line(&e));
                return EXIT_USAGE;
            }
            let _ = e.print(); // --help, --version
            return 0;
        }
    };
    let interrupt = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal while the first is being handled exits at once,
        // saying so (a managed server is then stopped by its watchdog).
        let again = Arc::clone(&interrupt);
        // Safety: the action only loads an atomic and calls write(2) and
        // _exit(2), which are async-signal-safe.
        let _ = unsafe {
            signal_hook::low_level::register(sig, move || {
                if again.load(std::sync::atomic::Ordering::SeqCst) {
                    let msg = b"\ninterrupted again: exiting at once, no result saved\n";
                    libc::write(2, msg.as_ptr().cast(), msg.len());
                    libc::_exit(EXIT_INTERRUPTED);
                }
            })
        };
        let _ = signal_hook::flag::register(sig, Arc::clone(&interrupt));
    }
    // Not locked for the whole run: progress bars write to stderr from other threads.
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let mut io = Io {
        stdout: &mut out,
        stderr: &mut err,
        interrupt,
    };
    run(cli, &mut io).exit_code
}
