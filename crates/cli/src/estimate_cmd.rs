//! `csdchar estimate`: what a compressing drive would store for files, directories or
//! devices (csdchar-estimate's engine), as text or JSON.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::args::{OutputFormat, check_output, size_arg};
use crate::io::{EXIT_INTERRUPTED, EXIT_USAGE, Io, Outcome, emit};

/// Per-chunk compression models for `csdchar estimate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CodecArg {
    /// Raw deflate with fixed Huffman codes (tracks published CSD ratios best).
    DeflateFixed,
    /// Raw deflate, dynamic Huffman (optimistic bound for zlib drives).
    Deflate,
    /// LZ4 (what zram's lz4 backend stores).
    Lz4,
    /// zstd level 3.
    Zstd,
}

/// `csdchar estimate`.
#[derive(Debug, Args)]
pub struct EstimateOpts {
    /// Files, directories (walked; a PostgreSQL data directory is broken down by relation) or block devices.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Per-chunk compression model.
    #[arg(long, value_enum, default_value = "deflate-fixed")]
    pub codec: CodecArg,
    /// Compression unit, 512 to 1m (each chunk compressed on its own, like a drive's 4 KiB blocks).
    #[arg(long, default_value = "4k", value_parser = size_arg)]
    pub chunk: u64,
    /// Compress only this % of chunks (above 0, at most 100), chosen at random, and report a 95%
    /// confidence interval.
    #[arg(long, default_value = "100", value_parser = sample_arg)]
    pub sample: f64,
    /// Seed of the sample.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Worker threads, 1-1024 (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Name the relations of a PostgreSQL data directory (and tell TOAST from heap) by asking
    /// this server (libpq URL or key=value; PG* variables fill the rest).
    #[arg(long)]
    pub url: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "normal")]
    pub output_format: OutputFormat,
    /// Write the result to FILE instead of stdout (not a directory, not one of the inputs).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

fn sample_arg(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(format!("'{s}' is not a percentage above 0 and at most 100")),
    }
}

/// Runs `csdchar estimate`.
pub fn run_estimate_command(opts: &EstimateOpts, io: &mut Io<'_>) -> Outcome {
    use std::sync::atomic::Ordering;
    if opts.chunk < 512 || opts.chunk > (1 << 20) {
        let _ = writeln!(io.stderr, "error: --chunk: must be between 512 and 1m");
        return Outcome::code(EXIT_USAGE);
    }
    let inputs: Vec<&Path> = opts.paths.iter().map(|p| p.as_path()).collect();
    if let Err(e) = check_output(opts.output.as_deref(), &inputs) {
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
            csdchar_pgwire::conn::ConnTarget::parse(url, &csdchar_pgwire::env::ProcessEnv)
    {
        let _ = writeln!(io.stderr, "error: {}", e.for_option("--url"));
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
