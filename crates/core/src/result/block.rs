//! `csdchar.block/1`: the result of `csdchar block`, and the validated job spec
//! it was produced from.

use serde::{Deserialize, Serialize};

use super::{CpuUsage, RunStatus, ToolInfo};
use crate::bssplit::BsSplit;
use crate::capacity::CapacityReport;
use crate::compressibility::PageTally;
use crate::counters::DiskStats;
use crate::dedupe::DedupeSpec;
use crate::distribution::Distribution;
use crate::fileset::JobFiles;
use crate::iolog::LogSpec;
use crate::pace::Pacing;
use crate::pattern::Fill;
use crate::rate::RateLimit;
use crate::share::JobShare;
use crate::stats::LatencyStats;
use crate::steady::{SteadySpec, SteadyStateReport};
use crate::think::ThinkTime;
use crate::zones::ZoneSpec;

/// Schema identifier of block results.
pub const BLOCK_SCHEMA: &str = "csdchar.block/1";

/// I/O pattern, with fio's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RwMode {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Uniformly random reads.
    Randread,
    /// Uniformly random writes.
    Randwrite,
    /// Uniformly random mixed reads and writes (`rwmixread` % reads).
    Randrw,
    /// Sequential mixed reads and writes (`rwmixread` % reads).
    Readwrite,
    /// Sequential trims (discards on a block device, punched holes in a file).
    Trim,
    /// Uniformly random trims.
    Randtrim,
    /// Sequential trim then write of the same block, block after block (fio's trimwrite).
    Trimwrite,
    /// Random blocks, each trimmed then written (fio's randtrimwrite).
    Randtrimwrite,
}

impl RwMode {
    /// fio's name.
    pub fn name(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
            RwMode::Randread => "randread",
            RwMode::Randwrite => "randwrite",
            RwMode::Randrw => "randrw",
            RwMode::Readwrite => "readwrite",
            RwMode::Trim => "trim",
            RwMode::Randtrim => "randtrim",
            RwMode::Trimwrite => "trimwrite",
            RwMode::Randtrimwrite => "randtrimwrite",
        }
    }

    /// Whether offsets are random.
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwMode::Randread
                | RwMode::Randwrite
                | RwMode::Randrw
                | RwMode::Randtrim
                | RwMode::Randtrimwrite
        )
    }

    /// Whether the mode writes data at all.
    pub fn writes(self) -> bool {
        matches!(
            self,
            RwMode::Write
                | RwMode::Randwrite
                | RwMode::Randrw
                | RwMode::Readwrite
                | RwMode::Trimwrite
                | RwMode::Randtrimwrite
        )
    }

    /// Whether the mode reads at all.
    pub fn reads(self) -> bool {
        matches!(
            self,
            RwMode::Read | RwMode::Randread | RwMode::Randrw | RwMode::Readwrite
        )
    }

    /// Whether the mode trims (discards) at all.
    pub fn trims(self) -> bool {
        matches!(
            self,
            RwMode::Trim | RwMode::Randtrim | RwMode::Trimwrite | RwMode::Randtrimwrite
        )
    }

    /// The directions the mode uses, as the block-size lists see them.
    pub fn directions(self) -> crate::bssplit::Directions {
        crate::bssplit::Directions {
            used: [self.reads(), self.writes(), self.trims()],
            trimwrite: matches!(self, RwMode::Trimwrite | RwMode::Randtrimwrite),
        }
    }

    /// Whether the mode changes the target (writes or trims): the write
    /// safety rules apply to it.
    pub fn modifies(self) -> bool {
        self.writes() || self.trims()
    }

    /// Share of I/Os that are reads, given fio's `rwmixread`.
    pub fn read_share(self, rwmixread: u8) -> u8 {
        match self {
            RwMode::Read | RwMode::Randread => 100,
            RwMode::Randrw | RwMode::Readwrite => rwmixread,
            _ => 0,
        }
    }
}

/// Which engine performs the I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// io_uring with registered buffers and files, batched submit and reap.
    Uring,
    /// No I/O at all: every request completes at once (fio's `ioengine=null`), to measure overhead.
    Null,
}

/// The validated description of a block job: what ran, in fio's terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BlockSpec {
    /// Target path (block device or regular file); null for the null engine without a target.
    pub target: Option<String>,
    /// I/O pattern.
    pub rw: RwMode,
    /// % of I/Os that are reads in mixed modes.
    pub rwmixread: u8,
    /// Block size of every I/O, bytes; with `bssplit`, the smallest size of the lists (offsets are
    /// multiples of it).
    pub bs: u64,
    /// fio's `bssplit`: block sizes and their shares per direction; absent: every I/O is `bs`.
    #[serde(default, skip_serializing_if = "BsSplit::is_none")]
    pub bssplit: BsSplit,
    /// I/Os kept in flight per job.
    pub iodepth: u32,
    /// Jobs (threads), each with its own ring, all on the same region.
    pub numjobs: u32,
    /// Bytes of the region each job works on.
    pub size: u64,
    /// Byte offset of the region in the target.
    pub offset: u64,
    /// Run-time limit of the measured period, ms; null for none.
    pub runtime_ms: Option<u64>,
    /// Keep running for `runtime_ms` even after `size` bytes, wrapping around.
    pub time_based: bool,
    /// Warm-up before measuring, ms (I/O runs but is not counted).
    pub ramp_time_ms: u64,
    /// O_DIRECT (bypass the page cache).
    pub direct: bool,
    /// Seed of offsets and data; the same seed gives the same run.
    pub seed: u64,
    /// I/O engine.
    pub engine: EngineKind,
    /// % of every chunk of written data that compresses away (fio's buffer_compress_percentage).
    pub compress_pct: u8,
    /// Chunk of the compression layout, bytes (fio's buffer_compress_chunk), capped at bs.
    pub compress_chunk: u64,
    /// What the compressible part is made of.
    pub compress_fill: Fill,
    /// % of chunks that are identical copies of earlier chunks.
    pub dedupe_pct: u8,
    /// fio's whole-buffer deduplication (`dedupe_percentage`, `dedupe_mode`,
    /// `dedupe_working_set_percentage`, `dedupe_global`) of a job file; absent: none.
    #[serde(default, skip_serializing_if = "DedupeSpec::is_none")]
    pub dedupe: DedupeSpec,
    /// Interval of the time series, ms.
    pub log_interval_ms: u64,
    /// Maximum I/Os submitted per io_uring_enter (0 = all that are ready).
    pub iodepth_batch_submit: u32,
    /// Minimum completions waited for per io_uring_enter (resolved when given as auto).
    pub iodepth_batch_complete: u32,
    /// Checksum every written block and read it back after the write phase.
    pub verify: bool,
    /// Only read back and check blocks written earlier with `verify` and the same seed.
    pub verify_only: bool,
    /// Write to a device even though it is in use or carries a signature.
    pub force: bool,
    /// Percentiles reported for latencies.
    pub percentiles: Vec<f64>,
    /// The instant the measured run was asked to start (`--start-at`), RFC 3339 UTC with
    /// milliseconds: the jobs are set up, then wait for it, so runs on several hosts start
    /// together. Absent: started at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    /// How random offsets are spread (fio's `random_distribution`); absent: uniform.
    #[serde(default, skip_serializing_if = "Distribution::is_uniform")]
    pub random_distribution: Distribution,
    /// Rate limits and minimums of each job (fio's rate options); absent: as fast as it goes.
    #[serde(default, skip_serializing_if = "RateLimit::is_none")]
    pub rate: RateLimit,
    /// I/O each job does, bytes (fio's `io_size`): may exceed the region, which is then
    /// wrapped around; 0: the region's size.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub io_size: u64,
    /// At most this many I/Os per job and loop (fio's `number_ios`); 0: no cap.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub number_ios: u64,
    /// Times the job's I/O is repeated (fio's `loops`); absent: once.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub loops: u32,
    /// fio's per-I/O or averaged logs the jobs write; absent: none.
    #[serde(default, skip_serializing_if = "LogSpec::is_none")]
    pub logs: LogSpec,
    /// fio's offset modifier of a sequential mode (`rw=read:-8k`): bytes added after each I/O's
    /// end (negative: backwards), a multiple of bs; absent: 0.
    #[serde(default, skip_serializing_if = "is_zero_i64")]
    pub rw_seq_add: i64,
    /// Stop once IOPS or bandwidth settle (fio's steadystate, ss_dur, ss_ramp); absent: no check.
    #[serde(default, skip_serializing_if = "SteadySpec::is_none")]
    pub steady_state: SteadySpec,
    /// fio's `nrfiles` above 1: the job's files, how each I/O's file is chosen and how many are
    /// open at once; absent: one file, `target`.
    #[serde(default, skip_serializing_if = "JobFiles::is_none")]
    pub files: JobFiles,
    /// fio's think time: a pause after every so many I/Os; absent: none.
    #[serde(default, skip_serializing_if = "ThinkTime::is_none")]
    pub think: ThinkTime,
    /// fio's zone mode (`zonemode=strided|zbd` and its options); absent: none.
    #[serde(default, skip_serializing_if = "ZoneSpec::is_none")]
    pub zones: ZoneSpec,
    /// How the job shares the machine: fio's flow and NUMA placement;
    /// absent: it does not.
    #[serde(default, skip_serializing_if = "JobShare::is_none")]
    pub share: JobShare,
    /// fio's blockalign, io_submit_mode and random_generator; absent: fio's defaults.
    #[serde(default, skip_serializing_if = "Pacing::is_none")]
    pub pacing: Pacing,
    /// fio's `offset_increment`: job (clone) N of `numjobs` works on the region starting at
    /// `offset + N * offset_increment` bytes; absent: 0, every job on the same region.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offset_increment: u64,
    /// fio's error policy (`continue_on_error`, `ignore_error`, `verify_fatal`) of a job file's
    /// job; absent: csdchar's own (an I/O error ends the run, every block is verified).
    #[serde(default, skip_serializing_if = "crate::on_error::ErrorPolicy::is_none")]
    pub errors: crate::on_error::ErrorPolicy,
    /// How a file the job creates or extends is laid out (fio's `fallocate`, or
    /// `create_on_open`: none); absent: csdchar's sparse file of the region's size.
    #[serde(default, skip_serializing_if = "Fallocate::is_sparse")]
    pub fallocate: Fallocate,
    /// With `verify`: write the blocks with their verify headers but do not read them back
    /// (fio's `do_verify=0`; a later job or `--verify-only` checks them); absent: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verify_write_only: bool,
    /// fio's `verify_backlog` with `verify`: after every N blocks written, the job reads those N
    /// back and checks them, between its writes (no read phase after); absent: 0, none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub verify_backlog: u64,
    /// fio's `verify_backlog_batch` with `verify_backlog`: how many of the blocks written are read back
    /// at each backlog (the oldest first, each once its write has completed); absent: 0, the
    /// backlog's size.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub verify_batch: u64,
    /// fio's `verify_dump` with `verify`: each block that fails its check is written, as read,
    /// to `<file name>.<offset>.received` in the working directory; absent: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verify_dump: bool,
    /// fio's `fill_device`: a file's region reaches past its file system's free space and
    /// the job writes until ENOSPC, which ends it normally (no verify phase after); absent: false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fill_device: bool,
    /// fio's `verify_pattern` with a checksum verify: each verified block's data after its
    /// header is this pattern repeated from the block's first byte (the read-back checks the
    /// checksum, as fio 3.33's); absent: csdchar's data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verify_pattern: Vec<u8>,
    /// fio's `verify=meta`: each verify unit starts with fio's own 40-byte header (magic,
    /// length, seed, offset, time, thread, numberio, and a crc32c of the header alone); the
    /// read-back checks the header and, with `verify_pattern`, the data after it; absent:
    /// csdchar's header with a crc32c of the whole unit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verify_meta: bool,
    /// fio's `verify_interval`: bytes of each verify unit, a header at the start of each (a
    /// divisor of `bs`); absent or 0: the whole block is one unit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub verify_interval: u64,
    /// fio's `create_on_open` in a job that reads: the file is not laid out (created empty
    /// when absent, grown only by the job's writes) and a read past its end comes back short,
    /// taken as fio's engine kind takes it; absent: the file is laid out first.
    #[serde(default, skip_serializing_if = "CreateOnOpen::is_no")]
    pub create_on_open: CreateOnOpen,
}

/// A job whose file is not laid out before it (fio's `create_on_open` in a job that reads),
/// and what a read past the file's end does.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum CreateOnOpen {
    /// The file is laid out before the job (csdchar's default): no read passes its end.
    #[default]
    No,
    /// An asynchronous ioengine's (fio's io_completed): a read that comes back short counts as
    /// an I/O of the bytes its last part brought back (0 past the end; a partial read is one of
    /// fio's `short_ios`, its rest read again past the end), not an error.
    Counted,
    /// A synchronous ioengine's (fio's io_queue_event): a read that comes back short ends the
    /// job with EIO (fio's "full resid").
    Fails,
}

impl CreateOnOpen {
    /// The file is laid out (the default).
    pub fn is_no(&self) -> bool {
        *self == CreateOnOpen::No
    }
}

/// How a new or extended file gets its size before the job's writes (fio's `fallocate`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Fallocate {
    /// ftruncate(2) to the file's size, sparse: csdchar's own runs (a compressing file system
    /// stores writes into preallocated extents uncompressed) and fio's `truncate`.
    #[default]
    #[serde(alias = "truncate")]
    Sparse,
    /// Nothing: the file grows as the job writes.
    None,
    /// fallocate(2) of the whole file (fio's `native`).
    Native,
    /// posix_fallocate(3) of the whole file.
    Posix,
    /// fallocate(2) with FALLOC_FL_KEEP_SIZE: blocks reserved, size unchanged.
    Keep,
}

impl Fallocate {
    /// csdchar's default.
    pub fn is_sparse(&self) -> bool {
        *self == Fallocate::Sparse
    }
}

fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn one() -> u32 {
    1
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

impl Default for BlockSpec {
    /// fio's defaults, which are also the command line's (a test in the CLI
    /// crate keeps the two equal); no target.
    fn default() -> Self {
        BlockSpec {
            target: None,
            rw: RwMode::Read,
            rwmixread: 50,
            bs: 4096,
            bssplit: BsSplit::default(),
            iodepth: 1,
            numjobs: 1,
            size: 0,
            offset: 0,
            runtime_ms: None,
            time_based: false,
            ramp_time_ms: 0,
            direct: true,
            seed: 1,
            engine: EngineKind::Uring,
            compress_pct: 0,
            compress_chunk: 4096,
            compress_fill: Fill::Repeat,
            dedupe_pct: 0,
            dedupe: DedupeSpec::default(),
            log_interval_ms: 1000,
            iodepth_batch_submit: 0,
            iodepth_batch_complete: 1,
            verify: false,
            verify_only: false,
            force: false,
            percentiles: crate::stats::DEFAULT_PERCENTILES.to_vec(),
            start_at: None,
            random_distribution: Distribution::Random,
            rate: RateLimit::default(),
            io_size: 0,
            number_ios: 0,
            loops: 1,
            logs: LogSpec::default(),
            steady_state: SteadySpec::default(),
            rw_seq_add: 0,
            files: JobFiles::default(),
            think: ThinkTime::default(),
            zones: ZoneSpec::default(),
            share: JobShare::default(),
            pacing: Pacing::default(),
            offset_increment: 0,
            errors: Default::default(),
            fallocate: Fallocate::Sparse,
            verify_write_only: false,
            verify_backlog: 0,
            verify_batch: 0,
            verify_dump: false,
            fill_device: false,
            verify_pattern: Vec::new(),
            verify_meta: false,
            verify_interval: 0,
            create_on_open: CreateOnOpen::No,
        }
    }
}

/// What the job ran against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// A block device.
    BlockDevice,
    /// A regular file.
    File,
    /// Nothing (null engine).
    None,
}

/// The target as found when the run started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TargetInfo {
    /// Path given on the command line.
    pub path: Option<String>,
    /// Kind of target.
    pub kind: TargetKind,
    /// Size of the target in bytes.
    pub size_bytes: u64,
    /// Logical block size of the device holding the target, bytes (the LBA unit).
    pub logical_block_size: u32,
    /// Kernel name of the block device whose counters were captured (e.g. zram0, nvme0n1).
    pub device: Option<String>,
    /// Whether csdchar created or extended the file and laid out its data before the run.
    pub laid_out: bool,
}

/// How the engine was set up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EngineInfo {
    /// Engine name.
    pub name: EngineKind,
    /// Buffers registered with the ring (READ_FIXED/WRITE_FIXED).
    pub fixed_buffers: bool,
    /// Target file registered with the ring (IOSQE_FIXED_FILE).
    pub fixed_files: bool,
    /// io_uring setup flags that the kernel accepted.
    pub setup_flags: Vec<String>,
}

/// Totals and latencies of one direction (read or write) over the measured period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DirectionSummary {
    /// I/Os completed.
    pub ios: u64,
    /// Bytes transferred.
    pub bytes: u64,
    /// Reads that came back partial and were counted (fio's `short_ios`; only in a job
    /// whose file is not laid out, `create_on_open`); absent: 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub short_ios: u64,
    /// I/Os per second over the measured period.
    pub iops: f64,
    /// Bytes per second over the measured period.
    pub bw_bytes_per_s: f64,
    /// Completion latency per I/O priority, when cmdprio gives the
    /// direction's I/Os several (fio's `prios`); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prios: Vec<crate::share::PrioLatency>,
    /// Submission latency: from preparing the I/O until io_uring_enter was called to submit it, ns.
    pub slat: LatencyStats,
    /// Completion latency: from that io_uring_enter call (the kernel's submission work included) until the completion was reaped, ns.
    pub clat: LatencyStats,
    /// Total latency: slat + clat, ns.
    pub lat: LatencyStats,
    /// Spread of per-interval IOPS.
    pub interval_iops: SeriesStats,
}

/// Mean and spread of a per-interval series.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SeriesStats {
    /// Intervals counted (the last, partial interval is left out when there are others).
    pub samples: u64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (n-1).
    pub stddev: f64,
}

impl SeriesStats {
    /// Statistics of `values`.
    pub fn of(values: &[f64]) -> SeriesStats {
        if values.is_empty() {
            return SeriesStats::default();
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = if values.len() > 1 {
            values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        SeriesStats {
            samples: values.len() as u64,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            mean,
            stddev: var.sqrt(),
        }
    }
}

/// One interval of the time series, all jobs together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IntervalSample {
    /// 0-based interval number.
    pub index: u64,
    /// End of the interval, ms since the measured period began.
    pub t_ms: u64,
    /// Length of the interval, ms (the last one may be short).
    pub duration_ms: u64,
    /// Reads in this interval; null when the job does not read.
    pub read: Option<IntervalDirection>,
    /// Writes in this interval; null when the job does not write.
    pub write: Option<IntervalDirection>,
    /// Trims in this interval; absent when the job does not trim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim: Option<IntervalDirection>,
    /// The interval's read latency (total: slat + clat) histogram, all jobs together, lossless:
    /// values in ns, 2 significant digits (1 % error), 1 ns to 1 h, in HdrHistogram's standard
    /// V2 compressed (deflate) encoding, base64 (starts with "HISTF"; HdrHistogram's tools read
    /// it). Absent when the job does not read, and in results written before csdchar stored
    /// histograms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_lat_hdr_histogram: Option<String>,
    /// The interval's write latency (total) histogram, as `read_lat_hdr_histogram`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_lat_hdr_histogram: Option<String>,
    /// The interval's trim latency (total) histogram, as `read_lat_hdr_histogram`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim_lat_hdr_histogram: Option<String>,
}

/// One direction within one interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IntervalDirection {
    /// I/Os completed in the interval.
    pub ios: u64,
    /// Bytes transferred in the interval.
    pub bytes: u64,
    /// I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes_per_s: f64,
    /// Mean total latency, ns (0 when no I/O completed).
    pub lat_mean_ns: f64,
    /// 99th percentile of total latency, ns (2 significant digits).
    pub lat_p99_ns: u64,
}

/// Per-job totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobSummary {
    /// Job number, 0-based.
    pub job: u32,
    /// Reads of this job.
    pub read: Option<JobDirection>,
    /// Writes of this job.
    pub write: Option<JobDirection>,
    /// Trims of this job; absent when the job does not trim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim: Option<JobDirection>,
    /// Errors the job counted and went on after (fio's `total_err`, `first_error`); absent
    /// unless fio's `continue_on_error` or `ignore_error` let it go on after any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<ErrorCount>,
}

/// Errors a job went on after, as fio counts them.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct ErrorCount {
    /// How many (fio's `total_err`).
    pub total: u64,
    /// errno of the first (fio's `first_error`); 0 when none.
    pub first: i32,
}

/// One direction of one job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobDirection {
    /// I/Os completed.
    pub ios: u64,
    /// Bytes transferred.
    pub bytes: u64,
    /// Reads that came back partial and were counted (fio's `short_ios`; only in a job
    /// whose file is not laid out, `create_on_open`); absent: 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub short_ios: u64,
    /// I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes_per_s: f64,
    /// Mean total latency, ns.
    pub lat_mean_ns: f64,
    /// This job's submission latency (no histogram); absent in results written before csdchar kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slat: Option<LatencyStats>,
    /// This job's completion latency, with its histogram (fio's per-job clat percentiles and json+ bins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clat: Option<LatencyStats>,
    /// This job's total latency (no histogram).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat: Option<LatencyStats>,
    /// This job's completion latency per I/O priority, when cmdprio gives
    /// the direction's I/Os several (fio's `prios`); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prios: Vec<crate::share::PrioLatency>,
}

/// The data the job wrote and how compressible it turned out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DataReport {
    /// Requested % compressible per chunk.
    pub compress_pct: u8,
    /// Chunk size, bytes.
    pub chunk: u64,
    /// Filler of the compressible part.
    pub fill: Fill,
    /// Requested % duplicate chunks.
    pub dedupe_pct: u8,
    /// Random bytes at the start of each chunk after calibration against per-page lz4.
    pub random_bytes_per_chunk: u64,
    /// Ideal logical/physical ratio, 100 / (100 - compress_pct); null at 100 %.
    pub target_ratio: Option<f64>,
    /// Measured per 4 KiB page on a sample of written buffers with lz4.
    pub lz4: PageTally,
    /// lz4 logical/stored ratio of the sample.
    pub lz4_ratio: Option<f64>,
    /// Measured per 4 KiB page with raw deflate (level 6, dynamic Huffman).
    pub deflate: PageTally,
    /// Deflate logical/stored ratio of the sample.
    pub deflate_ratio: Option<f64>,
}

/// Block-layer counters of the target's device around the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DiskStatsDelta {
    /// Kernel device name.
    pub device: String,
    /// Counters before the run.
    pub before: DiskStats,
    /// Counters after the run.
    pub after: DiskStats,
    /// after − before.
    pub delta: DiskStats,
}

/// Outcome of read-back verification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerifyReport {
    /// Blocks read back and checked.
    pub blocks_checked: u64,
    /// Blocks that failed a check.
    pub bad_block_count: u64,
    /// Every bad block, in offset order.
    pub bad_blocks: Vec<BadBlock>,
}

/// A block that failed verification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BadBlock {
    /// Byte offset in the target.
    pub offset: u64,
    /// Logical block address (offset / logical block size of the target).
    pub lba: u64,
    /// What was wrong: bad magic, wrong offset, wrong seed, checksum mismatch, or a read error.
    pub reason: String,
}

/// The error that stopped a run early.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunError {
    /// Plain-words description.
    pub message: String,
    /// errno of the failed I/O, when an I/O failed.
    pub errno: Option<i32>,
    /// Byte offset of the failed I/O.
    pub offset: Option<u64>,
    /// Direction of the failed I/O ("read" or "write").
    pub direction: Option<String>,
    /// Job that saw the error.
    pub job: Option<u32>,
}

/// How many I/Os each submission and each reap carried, in fio's buckets
/// (0, 1–4, 5–8, 9–16, 17–32, 33–64, more): what fio's `iodepth_submit` and
/// `iodepth_complete` are shares of.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct BatchCounts {
    /// io_uring_enter calls that submitted, by the number of I/Os they carried.
    pub submit: [u64; 7],
    /// Reaps that found completions, by the number found.
    pub complete: [u64; 7],
}

impl BatchCounts {
    /// fio's bucket of a batch of `n` (io_u.c `__io_u_mark_map`).
    pub fn bucket(n: usize) -> usize {
        match n {
            0 => 0,
            1..=4 => 1,
            5..=8 => 2,
            9..=16 => 3,
            17..=32 => 4,
            33..=64 => 5,
            _ => 6,
        }
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &BatchCounts) {
        for i in 0..7 {
            self.submit[i] += other.submit[i];
            self.complete[i] += other.complete[i];
        }
    }
}

/// The result of `csdchar block`, schema `csdchar.block/1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BlockResult {
    /// Always "csdchar.block/1".
    pub schema: String,
    /// Program that produced the result.
    pub tool: ToolInfo,
    /// When the run started, RFC 3339 UTC.
    pub started_at: String,
    /// How the run ended.
    pub status: RunStatus,
    /// The error that stopped the run, if any.
    pub error: Option<RunError>,
    /// The job as validated.
    pub spec: BlockSpec,
    /// The target as found.
    pub target: TargetInfo,
    /// Engine setup.
    pub engine: EngineInfo,
    /// Length of the measured period (after ramp-up), ns.
    pub elapsed_ns: u64,
    /// Read totals and latencies; null when the job does not read.
    pub read: Option<DirectionSummary>,
    /// Write totals and latencies; null when the job does not write.
    pub write: Option<DirectionSummary>,
    /// Trim totals and latencies (bytes are bytes discarded); absent when the job does not trim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim: Option<DirectionSummary>,
    /// CPU use.
    pub cpu: CpuUsage,
    /// Written data layout and its measured compressibility; null when nothing was written.
    pub data: Option<DataReport>,
    /// Block-layer counters of the target's device; null when the target has no device (null engine) or the counters could not be read.
    pub diskstats: Option<DiskStatsDelta>,
    /// Capacity counters (logical vs physical, NVMe data units, out-of-space) of the device
    /// holding the target, before and after the run; null without a device.
    pub capacity: Option<CapacityReport>,
    /// Time series, one sample per log interval.
    pub intervals: Vec<IntervalSample>,
    /// Per-job totals.
    pub jobs: Vec<JobSummary>,
    /// Verification outcome; null without verify.
    pub verify: Option<VerifyReport>,
    /// Submission and completion batch sizes of the measured phase (fio's iodepth_submit and
    /// iodepth_complete); absent in results written before csdchar counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_batches: Option<BatchCounts>,
    /// Zones reset under `zonemode=zbd`, all jobs together (fio's "zone resets"); absent without
    /// zonemode=zbd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_resets: Option<u64>,
    /// Steady-state outcome (fio's `steadystate`); absent when the job asked for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<SteadyStateReport>,
    /// The queue depth fio's latency_target search ended at (the first job's); absent without
    /// latency_target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_depth: Option<u32>,
    /// fio's log files of the run, `(name, text)`, for the caller to write; not part of the
    /// result's JSON.
    #[serde(skip)]
    #[schemars(skip)]
    pub log_files: Vec<(String, String)>,
    /// fio's verify_dump files of the run, `(name, bytes)`, for the caller to write; not part
    /// of the result's JSON.
    #[serde(skip)]
    #[schemars(skip)]
    pub dump_files: Vec<(String, Vec<u8>)>,
    /// The job of a fio job file this run was (`--job-file`); absent for a command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_file: Option<JobFileJob>,
    /// With `--start-at`: when the measured period (ramp-up first) really began and how late;
    /// absent without `--start-at` and in results written before this field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<super::StartRecord>,
}

/// Where a run came from in a fio job file, and what csdchar changed or skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobFileJob {
    /// The job file as given.
    pub file: String,
    /// The job's name (its section, or `name=`).
    pub job: String,
    /// The clone (of `numjobs`) this run was, when each clone has its own file; 0 otherwise.
    pub clone: u32,
    /// fio's reporting group (`stonewall` and `new_group` start a new one).
    pub group_id: u32,
    /// Whether the group is reported as one (`group_reporting`).
    pub group_reporting: bool,
    /// The job's own options as written, in file order (fio's `job options`).
    pub job_options: Vec<JobOptionValue>,
    /// `description=`.
    pub description: Option<String>,
    /// The ioengine the job named when csdchar ran it on io_uring instead (e.g. "libaio").
    pub replaced_engine: Option<String>,
    /// The verify checksum the job named when csdchar checked with crc32c instead (e.g. "md5").
    #[serde(default)]
    pub replaced_verify: Option<String>,
    /// `startdelay`: how long the job waited before it started, ms.
    #[serde(default)]
    pub start_delay_ms: u64,
    /// Options skipped under `--ignore-unsupported`: `name=value (FILE:LINE): why`.
    pub ignored: Vec<String>,
}

/// One option of a job file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobOptionValue {
    /// Option name.
    pub name: String,
    /// Its value as written ("" for a bare option such as `time_based`).
    pub value: String,
}

impl BlockSpec {
    /// The size direction `d`'s offsets are multiples of: its list's smallest,
    /// else `bs`.
    pub fn unit_of(&self, d: usize) -> u64 {
        self.bssplit.min_bs(d).unwrap_or(self.bs)
    }

    /// The largest I/O of direction `d` (`bs` without a list).
    pub fn max_bs_of(&self, d: usize) -> u64 {
        self.bssplit.max_bs(d).unwrap_or(self.bs)
    }

    /// The largest I/O the job does in any direction: its buffers' size.
    pub fn max_bs(&self) -> u64 {
        let [r, w, t] = [0, 1, 2].map(|d| self.max_bs_of(d));
        let dirs = [self.rw.reads(), self.rw.writes(), self.rw.trims()];
        [r, w, t]
            .into_iter()
            .zip(dirs)
            .filter(|(_, used)| *used)
            .map(|(b, _)| b)
            .max()
            .unwrap_or(self.bs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_stats() {
        let s = SeriesStats::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(s.samples, 8);
        assert_eq!(s.min, 2.0);
        assert_eq!(s.max, 9.0);
        assert!((s.mean - 5.0).abs() < 1e-12);
        assert!((s.stddev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(SeriesStats::of(&[]).samples, 0);
    }

    #[test]
    fn modes() {
        assert!(RwMode::Randrw.is_random() && RwMode::Randrw.writes() && RwMode::Randrw.reads());
        assert_eq!(RwMode::Randread.read_share(10), 100);
        assert_eq!(RwMode::Readwrite.read_share(30), 30);
        // Trims change the target (the write rules apply) but write no data.
        assert!(RwMode::Trim.trims() && RwMode::Trim.modifies() && !RwMode::Trim.writes());
        assert!(!RwMode::Randtrim.reads() && RwMode::Randtrim.is_random());
        assert!(RwMode::Trimwrite.trims() && RwMode::Trimwrite.writes());
        assert!(!RwMode::Randwrite.trims() && !RwMode::Read.modifies());
        assert_eq!(RwMode::Trimwrite.read_share(50), 0);
    }
}
