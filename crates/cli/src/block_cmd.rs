//! `csdchar block`: a command line or a fio job file → spec(s) → the engine →
//! csdchar's result, text, or fio's JSON.

use std::sync::Arc;

use csdchar_core::result::RunStatus;
use csdchar_core::result::block::BlockResult;
use csdchar_fio_like::jobfile::{load_job_file, run_job_file};
use csdchar_fio_like::{RunControl, run_block};

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use csdchar_core::bssplit::BsSplit;
use csdchar_core::distribution::Distribution;
use csdchar_core::pattern::Fill;
use csdchar_core::rate::{RateLimit, RateProcess};
use csdchar_core::result::block::{BlockSpec, EngineKind, RwMode};
use csdchar_core::stats::DEFAULT_PERCENTILES;

use crate::args::{
    MIN_INTERVAL, UsageError, bool_arg, check_output, duration_arg, percentile_arg, size_arg,
    start_at_arg,
};
use crate::io::{EXIT_USAGE, Io, Outcome, emit};

/// Engines, with fio's spellings accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// io_uring.
    #[value(alias = "io_uring")]
    Uring,
    /// No I/O (overhead measurement).
    Null,
}

/// Verification checksums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum VerifyArg {
    /// CRC32C (hardware accelerated) over each block, with a header.
    Crc32c,
}

/// `csdchar block`: options keep fio's names and meanings.
#[derive(Debug, Clone, Args)]
pub struct BlockOpts {
    /// Block device or regular file. Not needed with --engine null.
    pub target: Option<PathBuf>,
    /// I/O pattern.
    #[arg(long, value_enum, default_value = "read")]
    pub rw: RwArg,
    /// % of I/Os that are reads in randrw/readwrite (0-100).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub rwmixread: u8,
    /// Block size of each I/O (e.g. 4k, 128k, 1m; at most 256m; a multiple of 512 with --direct 1).
    #[arg(long, default_value = "4k", value_parser = size_arg)]
    pub bs: u64,
    /// A mix of block sizes, fio's bssplit: SIZE/PERCENT:… (a percentage left out shares the rest;
    /// per direction with commas: reads,writes,trims); offsets are multiples of the smallest.
    #[arg(long, value_name = "LIST", value_parser = bssplit_arg)]
    pub bssplit: Option<BsSplit>,
    /// I/Os in flight per job (1-4096).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub iodepth: u32,
    /// Jobs, each one thread with its own ring (1-1024).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub numjobs: u32,
    /// Bytes of the region the jobs work on (e.g. 1g); creates or extends a file, within its file
    /// system's free space. Default: the whole target.
    #[arg(long, value_parser = size_arg)]
    pub size: Option<u64>,
    /// Start of the region in the target (e.g. 1m; a multiple of the logical block size with --direct 1).
    #[arg(long, default_value = "0", value_parser = size_arg)]
    pub offset: u64,
    /// Time limit of the measured period (e.g. 30s, 5m).
    #[arg(long, value_parser = duration_arg)]
    pub runtime: Option<std::time::Duration>,
    /// Run for --runtime even after --size bytes, wrapping around.
    #[arg(long)]
    pub time_based: bool,
    /// Warm-up before measuring, e.g. 5s (I/O runs, nothing is counted).
    #[arg(long, default_value = "0s", value_parser = duration_arg)]
    pub ramp_time: std::time::Duration,
    /// O_DIRECT: 1/true (default) or 0/false.
    #[arg(long, default_value = "1", value_parser = bool_arg, num_args = 0..=1, default_missing_value = "1")]
    pub direct: bool,
    /// Seed for offsets and data; the same seed repeats the run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// I/O engine.
    #[arg(long, alias = "ioengine", value_enum, default_value = "uring")]
    pub engine: EngineArg,
    /// % of every chunk of written data that compresses away, 0-100 (fio's buffer_compress_percentage).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub compress: u8,
    /// Chunk of the compression layout, e.g. 4k (fio's buffer_compress_chunk); capped at --bs.
    #[arg(long, default_value = "4k", value_parser = size_arg)]
    pub compress_chunk: u64,
    /// Compressible part: zeros (fio's layout) or repeat (non-zero pattern that defeats zero-page detection).
    #[arg(long, value_enum, default_value = "repeat")]
    pub compress_fill: FillArg,
    /// % of chunks that are identical copies of earlier chunks (0-100).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub dedupe: u8,
    /// Interval of the time series and of the live lines (at least 10ms, e.g. 1s); with
    /// --job-file, every job's.
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub log_interval: std::time::Duration,
    /// Most I/Os per submit call, 0 to --iodepth; 0 submits all that are ready.
    #[arg(long, default_value_t = 0)]
    pub iodepth_batch_submit: u32,
    /// Fewest completions to wait for per io_uring_enter: a number, or auto (iodepth/8, 1-16;
    /// 1 below depth 16). 1 is fio's default: most exact latencies, most wake-ups.
    #[arg(long, default_value = "auto", value_parser = batch_complete_arg)]
    pub iodepth_batch_complete: BatchComplete,
    /// Write every block once with a header and checksum, then read it all back and check it.
    #[arg(long, value_enum)]
    pub verify: Option<VerifyArg>,
    /// Only read back and check blocks written earlier with --verify and the same
    /// --seed/--bs/--offset/--size (TARGET must exist and hold that region).
    #[arg(long, conflicts_with = "job_file")]
    pub verify_only: bool,
    /// Write even to a device that is mounted, in use or carries a signature.
    #[arg(long)]
    pub force: bool,
    /// Latency percentiles to report, comma-separated (each above 0 and at most 100; at most 20).
    #[arg(long, value_delimiter = ',', value_parser = percentile_arg)]
    pub percentile_list: Option<Vec<f64>>,
    /// How random offsets are spread, fio's random_distribution: random, zipf[:THETA[:CENTER]],
    /// pareto[:H[:CENTER]], normal[:SIGMA%[:CENTER]], zoned:ACCESS%/SIZE%:…,
    /// zoned_abs:ACCESS%/SIZE:… (per direction with commas: reads,writes,trims).
    #[arg(long, value_name = "DIST", value_parser = distribution_arg, default_value = "random")]
    pub random_distribution: Distribution,
    /// I/O each job does (fio's io_size), when not the region's size: more wraps around it.
    #[arg(long, value_name = "BYTES", value_parser = size_arg)]
    pub io_size: Option<u64>,
    /// At most N I/Os per job and loop (fio's number_ios).
    #[arg(long, value_name = "N")]
    pub number_ios: Option<u64>,
    /// Repeat each job's I/O N times (fio's loops).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub loops: u32,
    /// Cap each job's bandwidth at BYTES per second and direction (fio's rate, e.g. 100m).
    #[arg(long, value_name = "BYTES", value_parser = size_arg)]
    pub rate: Option<u64>,
    /// Cap each job at N I/Os per second and direction (fio's rate_iops).
    #[arg(long, value_name = "N")]
    pub rate_iops: Option<u64>,
    /// Fail the run when a job's bandwidth falls below BYTES per second over a --rate-cycle
    /// (after 2 s of settling; fio's rate_min).
    #[arg(long, value_name = "BYTES", value_parser = size_arg)]
    pub rate_min: Option<u64>,
    /// Fail the run when a job falls below N I/Os per second over a --rate-cycle (fio's rate_iops_min).
    #[arg(long, value_name = "N")]
    pub rate_iops_min: Option<u64>,
    /// Spacing of rate-limited I/Os: linear (even) or poisson (exponential gaps).
    #[arg(long, value_enum, default_value = "linear")]
    pub rate_process: RateProcessArg,
    /// Window of the minimum-rate check (fio's rate_cycle).
    #[arg(long, default_value = "1s", value_parser = duration_arg)]
    pub rate_cycle: std::time::Duration,
    /// Output format.
    #[arg(long, value_enum, default_value = "normal")]
    pub output_format: BlockOutputFormat,
    /// Write the result to FILE instead of stdout (not a directory, not TARGET).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Run the jobs of a fio job file (fio's format: [global], job sections, include, ${VAR},
    /// stonewall, numjobs, group_reporting) instead of the options above. Options csdchar does not
    /// implement are refused, every one named with its line.
    #[arg(long, value_name = "FILE", conflicts_with_all = JOB_OPTIONS)]
    pub job_file: Option<PathBuf>,
    /// With --job-file: run even with options csdchar does not implement; the result lists them.
    #[arg(long, requires = "job_file")]
    pub ignore_unsupported: bool,
    /// With --job-file: read and check the job file, print the runs it means, run nothing (fio's
    /// --parse-only).
    #[arg(long, requires = "job_file")]
    pub parse_only: bool,
    /// Print the fio job file this command line means (for fio users) and exit.
    #[arg(long, conflicts_with_all = ["job_file", "verify_only", "start_at"])]
    pub print_job: bool,
    /// Start the measured run at TIME: RFC 3339 (2026-05-01T14:30:00Z) or HH:MM[:SS] local time
    /// today, within the next 24 hours. The target and jobs are set up first, then wait (Ctrl-C
    /// ends the wait), so runs on several hosts start at the same instant. Not with --job-file.
    #[arg(long, value_name = "TIME", value_parser = start_at_arg, conflicts_with = "job_file")]
    pub start_at: Option<std::time::SystemTime>,
    /// With --start-at: how late the measured run may begin (its set-up overran the instant)
    /// before csdchar says so; the result records the lateness (`start`) either way.
    #[arg(long, value_name = "DURATION", default_value = "50ms", value_parser = duration_arg)]
    pub start_late_limit: std::time::Duration,
    /// Several load hosts (`--hosts FILE`).
    #[command(flatten)]
    pub fleet: crate::fleet_opts::FleetArgs,
}

/// The options a job file sets itself.
const JOB_OPTIONS: [&str; 33] = [
    "target",
    "rw",
    "rwmixread",
    "bs",
    "iodepth",
    "numjobs",
    "size",
    "offset",
    "runtime",
    "time_based",
    "ramp_time",
    "direct",
    "seed",
    "engine",
    "compress",
    "compress_chunk",
    "compress_fill",
    "dedupe",
    "iodepth_batch_submit",
    "iodepth_batch_complete",
    "verify",
    "percentile_list",
    "random_distribution",
    "bssplit",
    "rate",
    "rate_iops",
    "rate_min",
    "rate_iops_min",
    "rate_process",
    "rate_cycle",
    "io_size",
    "number_ios",
    "loops",
];

/// `csdchar block --output-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BlockOutputFormat {
    /// Human-readable text: a line per interval, then a fio-like summary.
    Normal,
    /// csdchar's own JSON result (`csdchar schema <command>` prints its schema); a job file with
    /// several runs gives an array of them.
    Json,
    /// fio 3.x's `--output-format=json` shape, for the tools that read fio's output.
    #[value(name = "fio-json")]
    FioJson,
    /// fio 3.x's `json+`: fio-json with the completion latency histogram (`clat_ns.bins`).
    #[value(name = "fio-json+")]
    FioJsonPlus,
}

/// fio's rw modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RwArg {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    Randread,
    /// Random writes.
    Randwrite,
    /// Random mixed.
    Randrw,
    /// Sequential mixed.
    #[value(alias = "rw")]
    Readwrite,
    /// Sequential trims: discards on a block device, punched holes in a file (writes' safety rules).
    Trim,
    /// Random trims.
    Randtrim,
    /// Each block trimmed, then written, in order.
    Trimwrite,
    /// Random blocks, each trimmed, then written.
    Randtrimwrite,
}

/// fio's rate_process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RateProcessArg {
    /// Even spacing.
    Linear,
    /// Exponential gaps with the rate's mean.
    Poisson,
}

/// Fillers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FillArg {
    /// Zero bytes (fio's layout).
    Zeros,
    /// Repeated non-zero pattern.
    Repeat,
}

/// `--iodepth-batch-complete`: auto, or a count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchComplete {
    /// [`auto_batch_complete`] of the depth.
    Auto,
    /// This many.
    Count(u32),
}

fn batch_complete_arg(s: &str) -> Result<BatchComplete, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(BatchComplete::Auto);
    }
    match s.parse::<u32>() {
        Ok(n) if n > 0 => Ok(BatchComplete::Count(n)),
        _ => Err(format!("'{s}' is not 'auto' or a count of at least 1")),
    }
}

/// Completions to wait for per call when not given: an eighth of the depth,
/// 1 to 16. Fewer wake-ups leave the CPU to the device path (zram works in
/// io-wq threads on the same cores); low depths keep exact latencies.
pub fn auto_batch_complete(iodepth: u32) -> u32 {
    (iodepth / 8).clamp(1, 16)
}

/// Largest block size accepted.
const MAX_BS: u64 = 256 << 20;

impl BlockOpts {
    /// Checks option combinations and builds the engine's spec.
    pub fn validate(&self) -> Result<BlockSpec, UsageError> {
        let bad = |m: &str| Err(UsageError(m.to_string()));
        // clap's `requires` is waived when the required option conflicts with
        // one given (every option a job file sets does), so these are checked here.
        if self.parse_only {
            return bad("--parse-only: reads a job file; give --job-file FILE");
        }
        if self.ignore_unsupported {
            return bad("--ignore-unsupported: applies to a job file; give --job-file FILE");
        }
        if self.print_job && self.output_format != BlockOutputFormat::Normal {
            return bad(
                "--output-format: --print-job prints a fio job file; leave --output-format out",
            );
        }
        if self.bs == 0 || self.bs > MAX_BS {
            return bad("--bs: must be between 1 byte and 256m");
        }
        if self.direct && !self.bs.is_multiple_of(512) {
            return bad(
                "--bs: must be a multiple of 512 with --direct (use --direct 0 for other sizes)",
            );
        }
        if self.compress_chunk == 0 {
            return bad("--compress-chunk: must be positive (e.g. 4k)");
        }
        if self.size == Some(0) {
            return bad("--size: must be positive (e.g. 256m)");
        }
        if self.time_based && self.runtime.is_none() {
            return bad("--time-based: needs --runtime (e.g. --runtime 30s)");
        }
        if self.runtime.is_some_and(|r| r.is_zero()) {
            return bad("--runtime: must be positive (e.g. 30s)");
        }
        if self.log_interval < MIN_INTERVAL {
            return bad("--log-interval: must be at least 10ms");
        }
        if self.iodepth_batch_submit > self.iodepth {
            return bad("--iodepth-batch-submit: must be between 0 and --iodepth");
        }
        let batch_complete = match self.iodepth_batch_complete {
            BatchComplete::Auto => auto_batch_complete(self.iodepth),
            BatchComplete::Count(n) => n,
        };
        if batch_complete > self.iodepth {
            return bad("--iodepth-batch-complete: must be auto or between 1 and --iodepth");
        }
        if self.target.is_none() && self.engine != EngineArg::Null {
            return bad(
                "TARGET: a block device or file is required (only --engine null runs without one)",
            );
        }
        if self.target.as_ref().is_some_and(|t| t.to_str().is_none()) {
            // The spec and the result carry the target as text: a lossy
            // conversion would name (and open) another file.
            return bad(
                "TARGET: the path is not valid UTF-8; give it a UTF-8 name (or a symlink with one)",
            );
        }
        if let Some(p) = &self.percentile_list
            && p.len() > 20
        {
            return bad("--percentile-list: at most 20 percentiles");
        }
        let rw = match self.rw {
            RwArg::Read => RwMode::Read,
            RwArg::Write => RwMode::Write,
            RwArg::Randread => RwMode::Randread,
            RwArg::Randwrite => RwMode::Randwrite,
            RwArg::Randrw => RwMode::Randrw,
            RwArg::Readwrite => RwMode::Readwrite,
            RwArg::Trim => RwMode::Trim,
            RwArg::Randtrim => RwMode::Randtrim,
            RwArg::Trimwrite => RwMode::Trimwrite,
            RwArg::Randtrimwrite => RwMode::Randtrimwrite,
        };
        if self.verify.is_some() {
            if !matches!(rw, RwMode::Write | RwMode::Randwrite) {
                return bad("--verify: needs --rw write or randwrite");
            }
            if self.time_based {
                return bad("--verify: writes every block once, so it cannot be --time-based");
            }
            if self.verify_only {
                return bad(
                    "--verify-only: reads back an earlier --verify run; do not combine it with --verify",
                );
            }
        }
        let skewed = !self.random_distribution.is_uniform();
        let (bs, bssplit) = bssplit_unit(
            &self.bssplit.clone().unwrap_or_default(),
            rw,
            self.bs,
            self.direct,
            self.verify.is_some(),
            skewed,
        )
        .map_err(UsageError)?;
        let targets: Vec<&Path> = self.target.iter().map(PathBuf::as_path).collect();
        check_output(self.output.as_deref(), &targets)?;
        Ok(BlockSpec {
            target: self.target.as_ref().map(|p| p.display().to_string()),
            rw,
            rwmixread: self.rwmixread,
            bs,
            bssplit,
            iodepth: self.iodepth,
            numjobs: self.numjobs,
            size: self.size.unwrap_or(0),
            offset: self.offset,
            runtime_ms: self.runtime.map(|d| d.as_millis() as u64),
            time_based: self.time_based,
            ramp_time_ms: self.ramp_time.as_millis() as u64,
            direct: self.direct,
            seed: self.seed,
            engine: match self.engine {
                EngineArg::Uring => EngineKind::Uring,
                EngineArg::Null => EngineKind::Null,
            },
            compress_pct: self.compress,
            compress_chunk: self.compress_chunk.min(bs),
            compress_fill: match self.compress_fill {
                FillArg::Zeros => Fill::Zeros,
                FillArg::Repeat => Fill::Repeat,
            },
            dedupe_pct: self.dedupe,
            dedupe: Default::default(),
            log_interval_ms: self.log_interval.as_millis() as u64,
            iodepth_batch_submit: self.iodepth_batch_submit,
            iodepth_batch_complete: batch_complete,
            verify: self.verify.is_some(),
            verify_only: self.verify_only,
            force: self.force,
            percentiles: self
                .percentile_list
                .clone()
                .unwrap_or_else(|| DEFAULT_PERCENTILES.to_vec()),
            start_at: self
                .start_at
                .or(self.fleet.start_instant)
                .map(csdchar_core::start_at::format_rfc3339_millis),
            random_distribution: self.random_distribution.clone(),
            io_size: self.io_size.unwrap_or(0),
            number_ios: self.number_ios.unwrap_or(0),
            loops: self.loops,
            logs: Default::default(),
            steady_state: Default::default(),
            rw_seq_add: 0,
            files: Default::default(),
            think: Default::default(),
            rate: {
                let all = |v: Option<u64>| [v.unwrap_or(0); 3];
                let r = RateLimit {
                    bytes_per_s: all(self.rate),
                    iops: all(self.rate_iops),
                    min_bytes_per_s: all(self.rate_min),
                    min_iops: all(self.rate_iops_min),
                    process: match self.rate_process {
                        RateProcessArg::Linear => RateProcess::Linear,
                        RateProcessArg::Poisson => RateProcess::Poisson,
                    },
                    cycle_ms: (self.rate_cycle.as_millis() as u64).max(1),
                };
                if r.is_none() { RateLimit::default() } else { r }
            },
            // What only job files set (zones, flows, priorities, pacing, fio's
            // error and verify options) keeps BlockSpec's defaults.
            ..BlockSpec::default()
        })
    }
}

/// `--random-distribution`: fio's syntax, sizes in powers of 1024.
fn bssplit_arg(s: &str) -> Result<BsSplit, String> {
    let mut split = BsSplit::default();
    split.parse(s, &size_arg)?;
    Ok(split)
}

/// The block size offsets are counted in with `--bssplit` (the smallest size
/// of the directions used), or `--bs` without, and the lists the engine runs;
/// the combinations csdchar does not run refused.
fn bssplit_unit(
    split: &BsSplit,
    rw: RwMode,
    bs: u64,
    direct: bool,
    verify: bool,
    skewed: bool,
) -> Result<(u64, BsSplit), String> {
    if split.is_none() {
        return Ok((bs, BsSplit::default()));
    }
    if verify {
        return Err(
            "--bssplit: not with --verify (csdchar's verify writes and checks one block size)"
                .into(),
        );
    }
    if matches!(rw, RwMode::Trimwrite | RwMode::Randtrimwrite) {
        return Err(format!(
            "--bssplit: not with --rw {} (fio writes what it trimmed, size for size)",
            rw.name()
        ));
    }
    let (unit, lists) = csdchar_core::bssplit::job_sizes(split, rw.directions(), [bs; 3], skewed)
        .map_err(|e| format!("--bssplit: {e}"))?;
    for e in split.0.iter().flatten() {
        if e.bs > MAX_BS {
            return Err(format!("--bssplit: {} bytes is over 256m", e.bs));
        }
        if direct && !e.bs.is_multiple_of(512) {
            return Err(format!(
                "--bssplit: {} bytes is not a multiple of 512, which --direct needs",
                e.bs
            ));
        }
    }
    Ok((unit, lists))
}

fn distribution_arg(s: &str) -> Result<Distribution, String> {
    Distribution::parse(s, 1024)
}

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
    if opts.log_interval < MIN_INTERVAL {
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
    if let Err(e) = check_output(opts.output.as_deref(), &inputs) {
        return usage(io, &e);
    }
    for n in csdchar_fio_like::jobfile::notes(&plan) {
        let _ = writeln!(io.stderr, "note: {n}");
    }
    if opts.parse_only {
        if let Err(e) = csdchar_fio_like::jobfile::check_nodes(&plan) {
            let _ = writeln!(io.stderr, "error: {e}");
            return Outcome::code(e.exit_code());
        }
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
    // fio's logs, beside the job as fio writes them (its working directory),
    // under the rule for every file csdchar writes.
    let logs: Vec<(PathBuf, Vec<u8>)> = results
        .iter()
        .flat_map(|r| &r.log_files)
        .map(|(name, text)| (PathBuf::from(name), text.clone().into_bytes()))
        .chain(
            (results.iter().flat_map(|r| &r.dump_files))
                .map(|(name, bytes)| (PathBuf::from(name), bytes.clone())),
        )
        .collect();
    if !logs.is_empty()
        && let Err(e) = csdchar_fio_like::safety::write_outputs(Path::new("."), &logs)
    {
        let _ = writeln!(io.stderr, "error: fio logs: {e}");
        exit_code = 1;
    } else {
        // fio's line for each verify_dump file.
        for (name, _) in results.iter().flat_map(|r| &r.dump_files) {
            let _ = writeln!(io.stderr, "       received data dumped as {name}");
        }
    }
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
    if opts.fleet.check_only {
        return match csdchar_fio_like::target::precheck(&spec, None) {
            Ok(_) => {
                let _ = writeln!(io.stdout, "ok");
                Outcome::code(0)
            }
            Err(e) => {
                let _ = writeln!(io.stderr, "error: {e}");
                Outcome::code(e.exit_code())
            }
        };
    }
    if opts.print_job {
        // args_os: an argument that is not UTF-8 must not panic the command.
        let command: Vec<String> = std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let text = match csdchar_core::fio_job::print::print_job(&spec, &command.join(" ")) {
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
        terminate: Arc::default(),
        flows: None,
        on_interval: if live {
            Some(&mut print_interval)
        } else {
            None
        },
        start_late_limit: opts.start_late_limit,
        on_io_done: None,
    };
    let result = match run_block(&spec, ctl) {
        Ok(r) => r,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return Outcome::code(e.exit_code());
        }
    };
    if let Some(s) = result.start.as_ref().filter(|s| s.too_late) {
        let _ = writeln!(io.stderr, "{}", late_start_note(s));
    }
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
            if let Some(v) = &result.verify {
                let spec = &result.spec;
                let line =
                    csdchar_fio_like::verify::failure_line(spec.target.as_deref(), spec.bs, v);
                let _ = writeln!(io.stderr, "error: {line}");
            }
        }
        RunStatus::Completed => {}
    }
    Outcome {
        exit_code,
        block: Some(result),
    }
}

/// The line saying a run began later than `--start-at` allowed.
pub fn late_start_note(s: &csdchar_core::result::StartRecord) -> String {
    format!(
        "note: the measured run began {:.1} ms after --start-at {} (limit {} ms, --start-late-limit): \
         set-up overran the instant, so other hosts started at it measured an earlier period",
        s.late_ms, s.requested, s.limit_ms
    )
}
