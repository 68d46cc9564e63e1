//! `csdchar db run -f FILE[@W] -b NAME[@W] -D NAME=VALUE …`: pgbench's custom-script
//! options ([`ScriptArgs`]), read and compiled before anything connects
//! ([`script_spec`]): a bad script is refused with pgbench's message naming
//! FILE:LINE:COLUMN, exit 2.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use csdchar_pgbench_script::{
    QueryMode, RandomSeed, ScriptError, ScriptSet, Version, parse_weight,
};
use csdchar_workloads::script::{ScriptSpec, tables_in};

use crate::db_opts::{DbOpts, ProtocolArg};

/// pgbench's script options (pgbench's names; csdchar's own where it has one: `--time`
/// is `-T`, `--threads` is `-c`, `--protocol` is `-M`, `--scale` is `-s`).
#[derive(Debug, Clone, Args)]
pub struct ScriptArgs {
    /// pgbench script FILE[@WEIGHT] (pgbench's -f; repeatable, `-` is stdin): run it instead of
    /// --workload, on tables you made, each client choosing a script per transaction by weight.
    #[arg(short = 'f', long = "file", value_name = "FILE[@W]")]
    pub files: Vec<String>,
    /// pgbench builtin NAME[@WEIGHT] (pgbench's -b: tpcb-like, simple-update, select-only, or an
    /// unambiguous prefix), run as a script beside the -f files; `:scale` then comes from
    /// pgbench_branches.
    #[arg(short = 'b', long = "builtin", value_name = "NAME[@W]")]
    pub builtins: Vec<String>,
    /// Script variable NAME=VALUE for every client (pgbench's -D; repeatable).
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE")]
    pub defines: Vec<String>,
    /// Scripts: transactions per client (pgbench's -t); the step ends when every client has
    /// run them (--time is then not used).
    #[arg(short = 't', long, value_parser = clap::value_parser!(u64).range(1..))]
    pub transactions: Option<u64>,
    /// Scripts: tries per transaction after serialization failures (40001) and deadlocks
    /// (40P01), with the same random values (pgbench's --max-tries; 1: no retry, 0: unlimited).
    #[arg(long, default_value_t = 1)]
    pub max_tries: u32,
    /// Scripts: seed of the clients' random states: an integer, `time` (the default) or `rand`
    /// (pgbench's --random-seed).
    #[arg(long, value_name = "SEED")]
    pub random_seed: Option<String>,
    /// Scripts: report serialization failures and deadlocks apart (pgbench's --failures-detailed).
    #[arg(long)]
    pub failures_detailed: bool,
    /// Scripts: every error and retry as a note (pgbench's --verbose-errors).
    #[arg(long)]
    pub verbose_errors: bool,
    /// Scripts: the tables to snapshot (and a study to measure), comma-separated; default: the
    /// tables the scripts name after FROM, JOIN, UPDATE, INTO, TABLE, TRUNCATE or LOCK.
    #[arg(long, value_delimiter = ',', value_name = "TABLE,...")]
    pub script_tables: Vec<String>,
    /// Scripts: the pgbench major whose rules apply where they differ (15 or 18: \syncpipeline).
    #[arg(long, default_value_t = 18, value_parser = clap::value_parser!(u32).range(15..=18))]
    pub pgbench_version: u32,
}

impl ScriptArgs {
    /// Whether scripts were given.
    pub fn given(&self) -> bool {
        !self.files.is_empty() || !self.builtins.is_empty()
    }
}

fn read_script(path: &str) -> Result<Vec<u8>, String> {
    if path == "-" {
        // Read once: the options are validated, then turned into the job.
        static STDIN: std::sync::OnceLock<Result<Vec<u8>, String>> = std::sync::OnceLock::new();
        return STDIN
            .get_or_init(|| {
                let mut v = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin(), &mut v)
                    .map(|_| v)
                    .map_err(|e| format!("-f -: could not read standard input: {e}"))
            })
            .clone();
    }
    std::fs::read(PathBuf::from(path))
        .map_err(|e| format!("-f: could not open file \"{path}\": {e}"))
}

fn script_error(e: ScriptError) -> String {
    match e {
        ScriptError::Syntax(s) => format!("{}: {}", s.location(), s.pgbench_text()),
        e => e.to_string(),
    }
}

/// The scripts the options name, read and compiled for the query mode (None when no `-f`
/// or `-b` was given); the error is pgbench's message, with FILE:LINE:COLUMN first for a
/// syntax error.
pub fn script_spec(o: &DbOpts) -> Result<Option<ScriptSpec>, String> {
    let a = &o.script;
    if !a.given() {
        for (option, given) in [
            ("--define", !a.defines.is_empty()),
            ("--transactions", a.transactions.is_some()),
            ("--max-tries", a.max_tries != 1),
            ("--random-seed", a.random_seed.is_some()),
            ("--failures-detailed", a.failures_detailed),
            ("--verbose-errors", a.verbose_errors),
            ("--script-tables", !a.script_tables.is_empty()),
        ] {
            if given {
                return Err(format!(
                    "{option}: applies to pgbench scripts: give them with -f FILE[@W] or -b NAME[@W]"
                ));
            }
        }
        return Ok(None);
    }
    let version = if a.pgbench_version >= 18 {
        Version::V18
    } else {
        Version::V15
    };
    let mut set = ScriptSet::new(version);
    // pgbench reads -b and -f in the order given; clap keeps each list's order, and the
    // builtins go first (their P_n names then come first under -M prepared).
    for b in &a.builtins {
        let (name, w) = parse_weight(b).map_err(|e| format!("-b: {}", script_error(e)))?;
        set.add_builtin(name, w)
            .map_err(|e| format!("-b: {}", script_error(e)))?;
    }
    for f in &a.files {
        let (path, w) = parse_weight(f).map_err(|e| format!("-f: {}", script_error(e)))?;
        let text = read_script(path)?;
        set.add_file(&text, path, w).map_err(script_error)?;
    }
    for d in &a.defines {
        set.define(d)
            .map_err(|e| format!("-D: {}", script_error(e)))?;
    }
    let mode = match o.run.protocol.unwrap_or(ProtocolArg::Simple) {
        ProtocolArg::Simple => QueryMode::Simple,
        ProtocolArg::Extended => QueryMode::Extended,
        ProtocolArg::Prepared => QueryMode::Prepared,
    };
    let program = set.compile(mode).map_err(script_error)?;
    if a.max_tries == 0 && a.transactions.is_some() {
        return Err(
            "--max-tries: 0 (unlimited) needs the step to end by --time, not --transactions".into(),
        );
    }
    let random_seed = match a.random_seed.as_deref() {
        None | Some("time") => seed_now(),
        Some(s) => match RandomSeed::parse(s).map_err(|e| format!("--random-seed: {e}"))? {
            RandomSeed::Given(v) => v,
            RandomSeed::Time => seed_now(),
            RandomSeed::Rand => {
                let mut b = [0u8; 8];
                getrandom(&mut b).map_err(|e| format!("--random-seed rand: {e}"))?;
                u64::from_ne_bytes(b)
            }
        },
    };
    let tables = if a.script_tables.is_empty() {
        tables_in(&program)
    } else {
        a.script_tables.clone()
    };
    Ok(Some(ScriptSpec {
        program: Arc::new(program),
        random_seed,
        scale: i64::from(o.load.scale.unwrap_or(1)),
        transactions: a.transactions,
        max_tries: a.max_tries,
        latency_limit_us: None,
        verbose_errors: a.verbose_errors,
        defines: a.defines.clone(),
        tables,
        schema: o.server.schema.clone(),
    }))
}

/// `--random-seed time`: the clock in microseconds, as pgbench seeds.
fn seed_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

fn getrandom(b: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(b)
}
