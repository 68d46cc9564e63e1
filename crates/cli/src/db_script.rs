//! `csdchar db run -f FILE[@W] -b NAME[@W] -D NAME=VALUE …`: pgbench's custom-script
//! options ([`crate::db_opts::ScriptArgs`]), read and compiled before anything connects
//! ([`script_spec`]): a bad script is refused with pgbench's message naming
//! FILE:LINE:COLUMN, exit 2.

use std::path::PathBuf;
use std::sync::Arc;

use csdchar_pgbench_script::{
    QueryMode, RandomSeed, ScriptError, ScriptSet, Version, parse_weight,
};
use csdchar_workloads::script::{ScriptSpec, tables_in};

use crate::db_opts::{DbOpts, ProtocolArg};

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
        // One line: FILE:LINE:COLUMN, then pgbench's message after its own FILE:LINE.
        ScriptError::Syntax(s) => {
            let text = s.to_string();
            let prefix = format!("{}:{}: ", s.source, s.line);
            let message = text.strip_prefix(&prefix).unwrap_or(&text);
            match &s.text {
                Some(t) if s.column.is_some() => {
                    format!("{}: {message}: {}", s.location(), t.replace('\n', " "))
                }
                _ => format!("{}: {message}", s.location()),
            }
        }
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
            ("--exit-on-abort", a.exit_on_abort),
            ("--script-tables", !a.script_tables.is_empty()),
            ("--script-init", a.script_init.is_some()),
            ("--log", a.log),
            ("--aggregate-interval", a.aggregate_interval.is_some()),
            ("--sampling-rate", a.sampling_rate.is_some()),
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
    if (a.aggregate_interval.is_some() || a.sampling_rate.is_some()) && !a.log {
        return Err("--aggregate-interval and --sampling-rate: with --log".into());
    }
    if a.aggregate_interval.is_some() && a.sampling_rate.is_some() {
        return Err("--sampling-rate: not with --aggregate-interval (pgbench's rule)".into());
    }
    if let Some(r) = a.sampling_rate
        && !(r > 0.0 && r <= 1.0)
    {
        return Err(format!("--sampling-rate: {r} is not in (0, 1]"));
    }
    if a.log && o.threads.threads.len() > 1 {
        return Err("--log: one --threads count (each step would write the same files)".into());
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
    if a.script_init.is_some() && a.script_tables.is_empty() && tables_in(&program).is_empty() {
        return Err(
            "--script-init: the scripts name no table: name them with --script-tables".into(),
        );
    }
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
        failures_detailed: a.failures_detailed,
        exit_on_abort: a.exit_on_abort,
        log: a.log.then_some(csdchar_workloads::script_log::LogSpec {
            aggregate_interval_s: a.aggregate_interval,
            sampling_rate: a.sampling_rate,
            max_tries: a.max_tries,
            failures_detailed: a.failures_detailed,
        }),
        defines: a.defines.clone(),
        tables,
        schema: o.server.schema.clone(),
        init_sql: match &a.script_init {
            None => None,
            Some(p) => {
                Some(std::fs::read_to_string(p).map_err(|e| {
                    format!("--script-init: could not read \"{}\": {e}", p.display())
                })?)
            }
        },
        fillfactor: o.load.fillfactor.first().copied(),
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
