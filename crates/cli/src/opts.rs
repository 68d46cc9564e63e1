//! Raw command-line options (clap) and their validation into the spec the
//! engine runs. Nothing here writes; [`check_output`] only looks at the file
//! system to refuse an `--output` that cannot or must not be written.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use csdchar_core::pattern::Fill;
use csdchar_core::result::block::{BlockSpec, EngineKind, RwMode};
use csdchar_core::stats::DEFAULT_PERCENTILES;
use csdchar_core::units::{parse_duration, parse_size};

/// csdchar: characterize storage with transparent compression (computational
/// storage drives, zram, btrfs) and the databases that run on it.
#[derive(Debug, Parser)]
#[command(
    name = "csdchar",
    version = crate::build_info::short_version(),
    long_version = crate::build_info::long_version(),
    about,
    long_about = None
)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
// Parsed once per process: the size of the largest variant (db's many
// options) costs nothing, and boxing it would touch every match on it.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// fio-like block I/O on io_uring with compressible data.
    Block(BlockOpts),
    /// Logical vs physical capacity of the device holding TARGET (like csd-size.sh).
    Capacity(CapacityOpts),
    /// Predict what a compressing drive would store for files, directories or devices (like sfx-filesize).
    Estimate(EstimateOpts),
    /// Database workloads on PostgreSQL and openGauss: sysbench OLTP, pgbench TPC-B, BenchmarkSQL
    /// TPC-C, pgio; steps prepare, run, check, cleanup, alter, study (without a step: run, on a
    /// temporary cluster unless --url/--pgdata).
    Db(crate::db_opts::DbArgs),
    /// Tables, SVG charts, one HTML page and Parquet/CSV exports from result files.
    Report(ReportOpts),
    /// A whole experiment from a TOML file: targets × steps × parameter grids, resumable,
    /// ending with a report of the targets side by side (see examples/campaigns/).
    Campaign(crate::campaign_cmd::CampaignOpts),
    /// Print the JSON Schema of a result format.
    Schema {
        /// Which schema.
        #[arg(value_enum)]
        which: SchemaName,
    },
    /// Print the completion script of SHELL, generated from these options (the Debian package
    /// installs bash's, zsh's and fish's).
    Completions {
        /// Which shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages, generated from these options: csdchar.1 and one per command
    /// (csdchar-block.1, csdchar-db-run.1, ...), into DIR (created when missing).
    Manpages {
        /// Where the pages go, e.g. ~/.local/share/man/man1.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

/// Result schemas that `csdchar schema` prints.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemaName {
    /// csdchar.block/1
    Block,
    /// csdchar.capacity/1
    Capacity,
    /// csdchar.estimate/1
    Estimate,
    /// csdchar.db/1
    Db,
    /// csdchar.study/1
    Study,
}

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

/// `csdchar report`.
#[derive(Debug, Args)]
pub struct ReportOpts {
    /// Result files (block, db, study, capacity, estimate JSON) or directories searched for *.json.
    pub results: Vec<PathBuf>,
    /// Directory the report is written to (created when missing; not an existing file).
    #[arg(long, default_value = "csdchar-report")]
    pub out: PathBuf,
    /// NAME=PATH: report the results in PATH (a file or directory) as NAME, e.g. the drive; repeatable. The first label is the baseline of comparisons.
    #[arg(long = "label", value_name = "NAME=PATH")]
    pub labels: Vec<String>,
    /// Do not print the tables.
    #[arg(long, short)]
    pub quiet: bool,
    /// Merge results of the same run from several hosts (same workload and options, started
    /// together with --start-at) into one before reporting: latency histograms and counts are
    /// added and percentiles recomputed, never averaged. Results merge within one --label.
    #[arg(long)]
    pub merge: bool,
}

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

/// Shortest `--log-interval` of block and `--watch` of capacity: shorter
/// intervals measure the clock more than the device, and a zero one spins.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

impl CapacityOpts {
    /// Checks the options before anything is read.
    pub fn validate(&self) -> Result<(), UsageError> {
        if self.watch.is_some_and(|w| w < MIN_INTERVAL) {
            return Err(UsageError("--watch: must be at least 10ms".into()));
        }
        Ok(())
    }
}

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
/// Refused: an existing directory, a file in a directory that does not exist,
/// and a file that is one of `inputs` (the files or devices the command reads
/// or writes: block's TARGET, estimate's paths, db's inputs), compared by
/// canonical path and by device and inode; inputs and the output need not
/// exist yet. `None` (no `--output`) is always fine. The error names
/// `--output` and fits on one line.
pub fn check_output(output: Option<&Path>, inputs: &[&Path]) -> Result<(), UsageError> {
    let Some(out) = output else {
        return Ok(());
    };
    if out.is_dir() {
        return Err(UsageError(format!(
            "--output: {} is a directory; give a file name (e.g. {})",
            out.display(),
            out.join("result.json").display()
        )));
    }
    let dir = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(UsageError(format!(
            "--output: directory {} does not exist",
            dir.display()
        )));
    }
    if let Some(input) = inputs.iter().find(|i| same_file(out, i)) {
        return Err(UsageError(format!(
            "--output: {} is the same file as {}, which the command reads or writes; write the result to another file",
            out.display(),
            input.display()
        )));
    }
    Ok(())
}

/// Whether `a` and `b` name the same file: same inode (hard links, bind
/// mounts), same device node number, or the same canonical path.
fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        if ma.dev() == mb.dev() && ma.ino() == mb.ino() {
            return true;
        }
        let device = |m: &std::fs::Metadata| {
            m.file_type().is_block_device() || m.file_type().is_char_device()
        };
        if device(&ma) && device(&mb) && ma.rdev() == mb.rdev() {
            return true;
        }
    }
    matches!((canonical(a), canonical(b)), (Some(x), Some(y)) if x == y)
}

/// The canonical path of `p`, which may not exist yet: then its directory's
/// canonical path joined with its name.
fn canonical(p: &Path) -> Option<PathBuf> {
    if let Ok(c) = p.canonicalize() {
        return Some(c);
    }
    let name = p.file_name()?;
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Some(dir.canonicalize().ok()?.join(name))
}

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
#[derive(Debug, Args)]
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
    /// Interval of the time series and of the live lines (at least 10ms, e.g. 1s).
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
    #[arg(long)]
    pub verify_only: bool,
    /// Write even to a device that is mounted, in use or carries a signature.
    #[arg(long)]
    pub force: bool,
    /// Latency percentiles to report, comma-separated (each above 0 and at most 100; at most 20).
    #[arg(long, value_delimiter = ',', value_parser = percentile_arg)]
    pub percentile_list: Option<Vec<f64>>,
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
    #[arg(long, conflicts_with = "job_file")]
    pub print_job: bool,
    /// Start the measured run at TIME: RFC 3339 (2026-05-01T14:30:00Z) or HH:MM[:SS] local time
    /// today, within the next 24 hours. The target and jobs are set up first, then wait (Ctrl-C
    /// ends the wait), so runs on several hosts start at the same instant.
    #[arg(long, value_name = "TIME", value_parser = start_at_arg)]
    pub start_at: Option<std::time::SystemTime>,
}

/// The options a job file sets itself.
const JOB_OPTIONS: [&str; 22] = [
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

/// `--start-at`: a time in the next 24 hours ([`csdchar_core::start_at::parse_start_at`]).
pub(crate) fn start_at_arg(s: &str) -> Result<std::time::SystemTime, String> {
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
}

/// Fillers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FillArg {
    /// Zero bytes (fio's layout).
    Zeros,
    /// Repeated non-zero pattern.
    Repeat,
}

pub(crate) fn size_arg(s: &str) -> Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

pub(crate) fn duration_arg(s: &str) -> Result<std::time::Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
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

pub(crate) fn bool_arg(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("'{s}' is not a boolean (use 1/0, true/false)")),
    }
}

pub(crate) fn percentile_arg(s: &str) -> Result<f64, String> {
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
        let targets: Vec<&Path> = self.target.iter().map(PathBuf::as_path).collect();
        check_output(self.output.as_deref(), &targets)?;
        Ok(BlockSpec {
            target: self.target.as_ref().map(|p| p.display().to_string()),
            rw,
            rwmixread: self.rwmixread,
            bs: self.bs,
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
            compress_chunk: self.compress_chunk.min(self.bs),
            compress_fill: match self.compress_fill {
                FillArg::Zeros => Fill::Zeros,
                FillArg::Repeat => Fill::Repeat,
            },
            dedupe_pct: self.dedupe,
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
                .map(csdchar_core::start_at::format_rfc3339_millis),
        })
    }
}
