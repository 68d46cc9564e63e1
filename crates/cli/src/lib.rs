//! The `csdchar` command as a library: [`run`] executes parsed options
//! in-process (integration tests call it directly); `main` only parses
//! arguments, installs signal handlers and exits with the code.
//!
//! Modules: [`cli`] (the parsed command line), one `*_cmd` module per command
//! with its options beside it (`db_opts` holds db's many), and two leaves every
//! command imports: [`args`] (value parsers, output format, `--output` check, usage
//! errors) and [`io`] (streams, outcome, exit codes, the one place results are
//! written). Nothing imports this root but `main`; campaigns reach the other
//! commands through the [`campaign_cmd::StepCommands`] this root gives them.

pub mod args;
pub mod block_cmd;
pub mod build_info;
pub mod campaign_cmd;
pub mod capacity_cmd;
pub mod cli;
pub mod db_cmd;
pub mod db_opts;
pub mod db_script;
pub mod estimate_cmd;
pub mod fleet_cmd;
pub mod fleet_opts;
pub mod install_cmd;
pub mod io;
pub mod report_cmd;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::Parser;
use csdchar_core::capacity::CapacityResult;
use csdchar_core::result::block::BlockResult;

pub use args::{OutputFormat, UsageError, one_line};
pub use block_cmd::BlockOpts;
pub use capacity_cmd::CapacityOpts;
pub use cli::{Cli, Command, SchemaName};
pub use io::{EXIT_INTERRUPTED, EXIT_USAGE, Io, Outcome, emit};

/// Runs a parsed command.
pub fn run(cli: Cli, io: &mut Io<'_>) -> Outcome {
    // Every result this process makes names this build.
    build_info::register();
    if cli.stop_on_stdin_eof {
        stop_on_stdin_eof(&io.interrupt);
    }
    match cli.command {
        Command::Block(opts) if opts.fleet.hosts.is_some() => {
            fleet_cmd::run_block_fleet(&opts, &cli.argv, io)
        }
        Command::Db(cmd) if cmd.step().1.fleet.hosts.is_some() => {
            fleet_cmd::run_db_fleet(&cmd, &cli.argv, io)
        }
        Command::Block(opts) => block_cmd::run_block_command(&opts, io),
        Command::Capacity(opts) => capacity_cmd::run_capacity_command(&opts, io),
        Command::Estimate(opts) => estimate_cmd::run_estimate_command(&opts, io),
        Command::Db(cmd) => db_cmd::run_db(&cmd, io),
        Command::Report(opts) => report_cmd::run_report(&opts, io),
        Command::Campaign(opts) => campaign_cmd::run_campaign(&opts, io, &STEP_COMMANDS),
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

/// Sets `interrupt` when standard input reaches its end (`--stop-on-stdin-eof`):
/// a controller of several hosts holds it open over ssh, and closes it (or
/// dies) to stop the load.
fn stop_on_stdin_eof(interrupt: &Arc<AtomicBool>) {
    let flag = Arc::clone(interrupt);
    std::thread::spawn(move || {
        use std::io::Read;
        let mut sink = [0u8; 512];
        let mut stdin = std::io::stdin();
        loop {
            match stdin.read(&mut sink) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    });
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

fn pretty_schema(schema: schemars::Schema) -> String {
    let mut s = serde_json::to_string_pretty(&schema).expect("schema serializes");
    s.push('\n');
    s
}

/// Parses `args`, installs SIGINT/SIGTERM handling and runs; returns the exit code.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(mut c) => {
            c.argv = args
                .iter()
                .skip(1)
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            c
        }
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

/// A campaign step's argv (without the program name) as csdchar parses it, or
/// clap's first line about it.
fn parse_step(argv: &[String]) -> Result<Cli, String> {
    let full = std::iter::once("csdchar".to_string()).chain(argv.iter().cloned());
    let parsed = Cli::try_parse_from(full).map(|mut c| {
        c.argv = argv.to_vec();
        c
    });
    parsed.map_err(|e| {
        let text = e.to_string();
        text.lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim_start_matches("error: ")
            .to_string()
    })
}

/// What a campaign's steps need of the other commands: their parser, their
/// checks before anything runs, and their run path.
const STEP_COMMANDS: campaign_cmd::StepCommands = campaign_cmd::StepCommands {
    check: |argv| match parse_step(argv)?.command {
        Command::Db(args) => {
            let (name, mut opts) = args.step();
            // The result's directory is made when the target's steps start.
            opts.out.output = None;
            db_cmd::validate(name, &opts)
        }
        Command::Block(mut opts) => {
            opts.output = None;
            opts.validate().map(|_| ()).map_err(|e| e.to_string())
        }
        _ => Ok(()),
    },
    run: |argv, io| match parse_step(argv) {
        Ok(cli) => Ok(run(cli, io).exit_code),
        Err(e) => Err(e),
    },
};
