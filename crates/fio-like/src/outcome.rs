//! What a job reports: its totals per direction, the interval reports it
//! sends while it runs, and the outcome it returns.

use csdchar_core::compressibility::PageTally;
use csdchar_core::result::block::{BadBlock, BatchCounts, EngineInfo, ErrorCount, RunError};
use csdchar_core::stats::LatencyRecorder;

/// Counts and latencies of one direction.
#[derive(Clone, Debug)]
pub struct DirTotals {
    /// I/Os completed in the measured period.
    pub ios: u64,
    /// Bytes completed in the measured period.
    pub bytes: u64,
    /// Partial reads counted in the measured period (fio's short_ios).
    pub short: u64,
    /// Submission latency.
    pub slat: LatencyRecorder,
    /// Completion latency.
    pub clat: LatencyRecorder,
    /// Total latency.
    pub lat: LatencyRecorder,
    /// Completion latency per I/O priority, when cmdprio draws them (fio's
    /// clat_prio): `(ioprio, latencies)`.
    pub prios: Vec<(u16, LatencyRecorder)>,
}

impl DirTotals {
    /// Nothing recorded yet.
    pub fn new() -> Self {
        DirTotals {
            ios: 0,
            bytes: 0,
            short: 0,
            slat: LatencyRecorder::precise(),
            clat: LatencyRecorder::precise(),
            lat: LatencyRecorder::precise(),
            prios: Vec::new(),
        }
    }
}

impl Default for DirTotals {
    fn default() -> Self {
        Self::new()
    }
}

/// One direction of one job's interval.
#[derive(Clone, Debug)]
pub struct IntervalDir {
    /// I/Os completed.
    pub ios: u64,
    /// Bytes completed.
    pub bytes: u64,
    /// Total latency of those I/Os.
    pub lat: LatencyRecorder,
}

/// A job's report for one interval.
#[derive(Clone, Debug)]
pub struct IntervalReport {
    /// Job number.
    pub job: u32,
    /// Interval number.
    pub index: u64,
    /// Interval length (the last one may be short), ns.
    pub duration_ns: u64,
    /// [read, write, trim].
    pub dirs: [IntervalDir; 3],
}

/// Messages from jobs to the run.
pub enum JobEvent {
    /// An interval closed (boxed: it carries histograms).
    Interval(Box<IntervalReport>),
    /// The job finished.
    Done(u32),
}

/// What a job returns.
#[derive(Debug)]
pub struct JobOutcome {
    /// Job number.
    pub job: u32,
    /// Zones reset under `zonemode=zbd` (fio's `nr_zone_resets`).
    pub zone_resets: u64,
    /// [read, write, trim] totals.
    pub dirs: [DirTotals; 3],
    /// End of the job's measured period, ns since `base`.
    pub end_ns: u64,
    /// The error that stopped it.
    pub error: Option<RunError>,
    /// Blocks checked (verify read).
    pub blocks_checked: u64,
    /// Bad blocks found (verify read).
    pub bad_blocks: Vec<BadBlock>,
    /// Per-page lz4 measurement of a sample of the written buffers.
    pub lz4: Option<PageTally>,
    /// Per-page deflate measurement of the same sample.
    pub deflate: Option<PageTally>,
    /// Random head bytes per chunk of the written data.
    pub random_bytes_per_chunk: usize,
    /// Engine setup.
    pub engine: Option<EngineInfo>,
    /// fio's log files of the job, `(name, text)`.
    pub logs: Vec<(String, String)>,
    /// fio's verify_dump: each bad block's offset and the bytes read.
    pub dumps: Vec<(u64, Vec<u8>)>,
    /// Submission and reap batch sizes.
    pub batches: BatchCounts,
    /// When the statistics kept start (latency_target's final window), ns
    /// from the start; 0: the start.
    pub stats_from_ns: u64,
    /// The depth latency_target's search ended at; None without it.
    pub latency_depth: Option<u32>,
    /// Errors counted and gone on after (fio's continue_on_error).
    pub errors: ErrorCount,
    /// fio's fill_device: a write found the file system full, which ended
    /// the job normally.
    pub filled: bool,
}

/// Counts an error the job goes on after, as fio's update_error_count.
pub(crate) fn count_error(c: &mut ErrorCount, errno: i32) {
    c.total += 1;
    if c.total == 1 {
        c.first = errno;
    }
}

impl JobOutcome {
    /// The outcome of a job whose engine could not be created.
    pub fn failed(job: u32, error: RunError) -> Self {
        JobOutcome {
            job,
            zone_resets: 0,
            dirs: [DirTotals::new(), DirTotals::new(), DirTotals::new()],
            end_ns: 0,
            error: Some(error),
            blocks_checked: 0,
            bad_blocks: Vec::new(),
            dumps: Vec::new(),
            lz4: None,
            deflate: None,
            random_bytes_per_chunk: 0,
            engine: None,
            logs: Vec::new(),
            batches: BatchCounts::default(),
            stats_from_ns: 0,
            latency_depth: None,
            errors: ErrorCount::default(),
            filled: false,
        }
    }
}
