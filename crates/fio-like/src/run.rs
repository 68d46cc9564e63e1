//! A block run from spec to result: prepare the target, run the phases
//! (workload, or verify write + read back), merge job totals and interval
//! reports, capture CPU and device counters, assemble the `csdchar.block/1`
//! result. Stops early on Ctrl-C or an I/O error with a partial result.

use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use csdchar_core::capacity::CapacityReport;
use csdchar_core::result::block::{
    BLOCK_SCHEMA, BatchCounts, BlockResult, BlockSpec, DataReport, DirectionSummary,
    DiskStatsDelta, EngineInfo, EngineKind, IntervalDirection, IntervalSample, JobDirection,
    JobSummary, RunError, SeriesStats, VerifyReport,
};
use csdchar_core::result::{CpuUsage, RunStatus, StartRecord, ToolInfo};
use csdchar_core::stats::{LatencyRecorder, LatencyStats};
use csdchar_core::steady::{SteadyCheck, SteadyStateReport};
use csdchar_core::units::format_bytes;

use crate::engine::{EngineError, IoEngine, NullEngine};
use crate::error::BlockError;
use crate::job::{
    DirTotals, IntervalDir, JobConfig, JobEvent, JobOutcome, Phase, Shared, engine_error, run_job,
};
use crate::sysinfo::{cores, machine_jiffies, now_rfc3339, process_cpu};
use crate::target::PreparedTarget;
use crate::uring::UringEngine;

/// Outside control of a run.
pub struct RunControl<'a> {
    /// Set by SIGINT/SIGTERM: stop submitting, reap, report.
    pub interrupt: Arc<AtomicBool>,
    /// Set when another job of a job file ended this one (fio's `exitall`):
    /// stop as on an interrupt, but the run completed.
    pub terminate: Arc<AtomicBool>,
    /// The flows of the job file the run belongs to (fio's `flow`); None:
    /// the run's own jobs make up its flows.
    pub flows: Option<crate::share::FlowRun>,
    /// Called with each interval sample as it completes (live output).
    pub on_interval: Option<&'a mut dyn FnMut(&IntervalSample)>,
    /// How late after `--start-at` the run may begin before its [`StartRecord`] says it
    /// began too late.
    pub start_late_limit: Duration,
    /// Called once when the run's last I/O has completed, before its result
    /// is made (a job file's exitall ends the other jobs then, as fio's).
    pub on_io_done: Option<Box<dyn FnOnce() + Send + 'a>>,
}

/// The lateness after `--start-at` allowed by default (`--start-late-limit`).
pub const DEFAULT_START_LATE_LIMIT: Duration = Duration::from_millis(50);

impl RunControl<'_> {
    /// No live output, a fresh interrupt flag.
    pub fn quiet() -> Self {
        RunControl {
            interrupt: Arc::new(AtomicBool::new(false)),
            terminate: Arc::new(AtomicBool::new(false)),
            flows: None,
            on_interval: None,
            start_late_limit: DEFAULT_START_LATE_LIMIT,
            on_io_done: None,
        }
    }
}

/// Runs `spec` on the engine it names.
pub fn run_block(spec: &BlockSpec, ctl: RunControl<'_>) -> Result<BlockResult, BlockError> {
    match spec.engine {
        EngineKind::Uring => run_block_with(spec, ctl, UringEngine::new),
        EngineKind::Null => run_block_with(spec, ctl, |_, _| Ok(NullEngine::new())),
    }
}

/// Runs `spec` with engines made by `factory(fd, iodepth)`, one per job, each
/// created on its job's thread. Tests pass their own engines here.
pub fn run_block_with<E, F>(
    spec: &BlockSpec,
    mut ctl: RunControl<'_>,
    factory: F,
) -> Result<BlockResult, BlockError>
where
    E: IoEngine,
    F: Fn(RawFd, u32) -> Result<E, EngineError> + Sync,
{
    // Replaced by the instant the first phase's clock started, once it has.
    let mut started_at = now_rfc3339();
    let mut start = None;
    // Buffers are allocated on the job threads, after the target is set up; a
    // spec whose buffers cannot fit must be refused before that.
    crate::buffers::check_buffer_memory(spec).map_err(BlockError::Usage)?;
    // Probe the engine before touching the target, so "io_uring unavailable"
    // leaves nothing behind.
    drop(factory(-1, spec.iodepth).map_err(|e| BlockError::Unavailable(e.to_string()))?);
    let start_at = match &spec.start_at {
        Some(t) => Some(
            csdchar_core::start_at::parse_rfc3339(t)
                .map_err(|e| BlockError::Usage(format!("--start-at: {e}")))?,
        ),
        None => None,
    };
    // fio's nrfiles: the job's other files beside the first, every one's
    // descriptor handed to the engines.
    let (target, others) = crate::fileset::prepare_all(spec)?;
    let fds: Vec<RawFd> = match others.is_empty() {
        true => Vec::new(),
        false => std::iter::once(&target)
            .chain(&others)
            .map(|t| t.fd())
            .collect(),
    };
    let sysfs = csdchar_devices::Sysfs::from_env();
    // A file on ZFS has no block device of its own: its dataset's figures,
    // once the pool has committed what was written.
    let zfs = match (&target.device, &spec.target) {
        (None, Some(t)) => csdchar_devices::zfs::dataset_of(std::path::Path::new(t)),
        _ => None,
    };
    let snapshot = || match (&target.device, &zfs) {
        (Some(d), _) => Some(sysfs.snapshot(d)),
        (None, Some(dataset)) => {
            rustix::fs::sync();
            let _ = csdchar_devices::zfs::sync_pool(dataset);
            csdchar_devices::zfs::usage(dataset).ok().map(|u| {
                let mut s = csdchar_core::capacity::CapacitySnapshot::default();
                s.add_zfs(u);
                s
            })
        }
        (None, None) => None,
    };
    let cap_before = snapshot();

    let phases: &[Phase] = if spec.verify_only {
        &[Phase::VerifyRead]
    } else if spec.verify
        && (spec.verify_write_only || crate::verify_log::checks_while_writing(spec))
    {
        &[Phase::VerifyWrite]
    } else if spec.verify {
        &[Phase::VerifyWrite, Phase::VerifyRead]
    } else {
        &[Phase::Workload]
    };
    let mut main: Option<PhaseOutcome> = None;
    let mut verify: Option<VerifyReport> = None;
    let mut dump_files = Vec::new();
    for (i, &phase) in phases.iter().enumerate() {
        // Only the first phase waits for --start-at.
        let not_before = if i == 0 { start_at } else { None };
        let last = i + 1 == phases.len();
        let out = run_phase(
            spec,
            &target,
            &fds,
            (phase, last),
            not_before,
            &mut ctl,
            &factory,
        );
        if i == 0 {
            // The recorded start is the measured one, after set-up and any wait.
            started_at = csdchar_core::start_at::format_rfc3339_millis(out.began);
            start = start_at.map(|at| StartRecord::new(at, out.began, ctl.start_late_limit));
        }
        // fio's fill_device: a job that filled its file system is done, its
        // verify phase too.
        let stop = out.jobs.iter().any(|j| j.error.is_some() || j.filled)
            || ctl.interrupt.load(Ordering::Relaxed)
            || ctl.terminate.load(Ordering::Relaxed);
        // verify_backlog and a mixed job check their blocks in the write phase.
        if phase == Phase::VerifyRead || crate::verify_log::checks_while_writing(spec) {
            dump_files.extend(crate::verify::dump_files(spec, &out.jobs));
            let mut bad: Vec<_> = out
                .jobs
                .iter()
                .flat_map(|j| j.bad_blocks.iter().cloned())
                .collect();
            bad.sort_by_key(|b| b.offset);
            verify = Some(VerifyReport {
                blocks_checked: out.jobs.iter().map(|j| j.blocks_checked).sum(),
                bad_block_count: bad.len() as u64,
                bad_blocks: bad,
            });
        }
        if main.is_none() {
            main = Some(out);
        } else if let Some(m) = main.as_mut() {
            // Errors of a later phase still end up in the result.
            for (mj, oj) in m.jobs.iter_mut().zip(out.jobs) {
                if mj.errors.total == 0 {
                    mj.errors.first = oj.errors.first;
                }
                mj.errors.total += oj.errors.total;
                if mj.error.is_none() {
                    mj.error = oj.error;
                }
            }
        }
        if stop {
            break;
        }
    }
    let main = main.expect("at least one phase ran");
    let cap_after = snapshot();
    let (capacity, diskstats) = match (cap_before, cap_after) {
        (Some(b), Some(a)) => {
            let ds = match (b.diskstats, a.diskstats, target.info.device.clone()) {
                (Some(x), Some(y), Some(device)) => Some(DiskStatsDelta {
                    device,
                    before: x,
                    after: y,
                    delta: y.delta_since(&x),
                }),
                _ => None,
            };
            (Some(CapacityReport::new(b, a)), ds)
        }
        _ => (None, None),
    };
    let mut result = assemble(
        spec, started_at, &target, main, verify, capacity, diskstats, &ctl,
    );
    result.start = start;
    result.dump_files = dump_files;
    if result.status == RunStatus::IoError && !any_io_completed(&result) {
        // The run failed before its first I/O: a file it created holds nothing
        // of value and must not be left behind (a pre-existing one is kept).
        for t in std::iter::once(&target).chain(&others) {
            if let Some(p) = t.info.path.as_ref().filter(|_| t.created) {
                let _ = std::fs::remove_file(p);
            }
        }
    }
    Ok(result)
}

fn any_io_completed(r: &BlockResult) -> bool {
    [&r.read, &r.write, &r.trim]
        .iter()
        .any(|d| d.as_ref().is_some_and(|d| d.ios > 0))
        || r.verify.as_ref().is_some_and(|v| v.blocks_checked > 0)
}

/// Process CPU (user, system) seconds and machine (busy, total) jiffies.
type CpuSnapshot = ((f64, f64), Option<(u64, u64)>);

struct PhaseOutcome {
    /// When the phase's clock started (after set-up and any wait).
    began: SystemTime,
    /// The steady-state judgement, when the spec asks for one.
    steady: Option<SteadyStateReport>,
    jobs: Vec<JobOutcome>,
    intervals: Vec<IntervalSample>,
    elapsed_ns: u64,
    cpu: CpuUsage,
}

/// Sleeps until `at` (wall clock) in short steps; returns early when
/// `interrupt` is set. Returns at once for an instant already past.
pub fn wait_until(at: SystemTime, interrupt: &AtomicBool) {
    while !interrupt.load(Ordering::Relaxed) {
        let Ok(left) = at.duration_since(SystemTime::now()) else {
            return;
        };
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

#[allow(clippy::too_many_arguments)]
fn run_phase<E, F>(
    spec: &BlockSpec,
    target: &PreparedTarget,
    fds: &[RawFd],
    (phase, last): (Phase, bool),
    not_before: Option<SystemTime>,
    ctl: &mut RunControl<'_>,
    factory: &F,
) -> PhaseOutcome
where
    E: IoEngine,
    F: Fn(RawFd, u32) -> Result<E, EngineError> + Sync,
{
    let numjobs = spec.numjobs as usize;
    let halt = AtomicBool::new(false);
    let gate = Barrier::new(numjobs + 1);
    let base_cell = OnceLock::new();
    let (tx, rx) = mpsc::channel::<JobEvent>();
    let fd = target.fd();
    let ramp = if phase == Phase::VerifyRead {
        Duration::ZERO
    } else {
        Duration::from_millis(spec.ramp_time_ms)
    };
    let interval_ns = spec.log_interval_ms.max(1) * 1_000_000;
    let interrupt = Arc::clone(&ctl.interrupt);
    let terminate = Arc::clone(&ctl.terminate);
    let flows = match &ctl.flows {
        Some(f) => Arc::clone(&f.table),
        None => {
            let own = crate::share::FlowTable::default();
            own.register(&spec.share.flow, spec.numjobs);
            Arc::new(own)
        }
    };

    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(numjobs);
        for j in 0..numjobs as u32 {
            let tx = tx.clone();
            let (halt, gate, base_cell, interrupt) = (&halt, &gate, &base_cell, &*interrupt);
            let (terminate, flows) = (&*terminate, &*flows);
            handles.push(scope.spawn(move || {
                let shared = Shared {
                    interrupt,
                    terminate,
                    flows,
                    halt,
                    gate,
                    base: base_cell,
                    events: tx,
                };
                let (region, size) = crate::target::job_region(spec, target, j);
                let cfg = JobConfig {
                    job: j,
                    spec,
                    size,
                    region,
                    lbs: target.info.logical_block_size,
                    real_size: target.info.size_bytes,
                    phase,
                };
                match factory(fd, spec.iodepth).and_then(|mut e| e.set_files(fds).map(|()| e)) {
                    Ok(engine) => run_job(engine, &cfg, &shared),
                    Err(e) => {
                        shared.start();
                        halt.store(true, Ordering::Relaxed);
                        let _ = shared.events.send(JobEvent::Done(j));
                        JobOutcome::failed(j, engine_error(e, j))
                    }
                }
            }));
        }
        drop(tx);
        gate.wait();
        // A job file's jobs started together begin together, once each is
        // set up (a later phase's arrival is a no-op).
        if let Some(t) = ctl.flows.as_mut().and_then(|f| f.start.as_mut()) {
            t.arrive(&interrupt);
        }
        // Every job is set up (buffers generated, engine ready): wait for
        // --start-at here, so the measured period begins at that instant.
        if let Some(at) = not_before {
            wait_until(at, &interrupt);
        }
        let began = SystemTime::now();
        let base = Instant::now();
        base_cell.set(base).expect("set once");
        gate.wait();

        // Collect intervals until every job is done; CPU from the end of ramp-up.
        let mut cpu0: Option<CpuSnapshot> = None;
        let mut agg = IntervalMerger::new(numjobs, spec, interval_ns);
        // fio's steady state: judged on the merged samples; once reached the
        // jobs stop (not an error).
        let mut steady = match phase {
            Phase::Workload => SteadyCheck::new(&spec.steady_state, spec.log_interval_ms),
            _ => None,
        };
        let mut done = 0;
        while done < numjobs {
            if cpu0.is_none() && base.elapsed() >= ramp {
                cpu0 = Some((process_cpu(), machine_jiffies()));
            }
            let wait = if cpu0.is_none() {
                ramp.saturating_sub(base.elapsed())
                    .max(Duration::from_millis(1))
            } else {
                Duration::from_millis(200)
            };
            match rx.recv_timeout(wait) {
                Ok(JobEvent::Interval(r)) => agg.add(*r),
                Ok(JobEvent::Done(j)) => {
                    agg.job_done(j);
                    done += 1;
                    if done == numjobs
                        && last
                        && let Some(f) = ctl.on_io_done.take()
                    {
                        f();
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            for s in agg.ready() {
                if let Some(c) = steady.as_mut()
                    && s.duration_ms * 10 >= spec.log_interval_ms * 9
                    && c.counts(s.t_ms, spec.log_interval_ms)
                {
                    let dirs = [s.read, s.write, s.trim];
                    let sum = |f: fn(&IntervalDirection) -> f64| {
                        dirs.iter().flatten().map(f).sum::<f64>().round() as u64
                    };
                    if c.add(sum(|d| d.iops), sum(|d| d.bw_bytes_per_s)) {
                        halt.store(true, Ordering::Relaxed);
                    }
                }
                if let Some(cb) = ctl.on_interval.as_mut() {
                    cb(&s);
                }
            }
        }
        let cpu1 = (process_cpu(), machine_jiffies());
        let jobs: Vec<JobOutcome> = handles
            .into_iter()
            .map(|h| h.join().expect("job thread panicked"))
            .collect();
        for s in agg.ready_all() {
            if let Some(cb) = ctl.on_interval.as_mut() {
                cb(&s);
            }
        }
        let ramp_ns = ramp.as_nanos() as u64;
        let elapsed_ns = jobs
            .iter()
            .map(|j| j.end_ns)
            .max()
            .unwrap_or(0)
            // latency_target's final window: statistics from its start.
            .saturating_sub(ramp_ns.max(jobs.iter().map(|j| j.stats_from_ns).max().unwrap_or(0)))
            .max(1);
        let ((u0, s0), j0) = cpu0.unwrap_or(cpu1);
        let ((u1, s1), j1) = cpu1;
        let secs = elapsed_ns as f64 / 1e9;
        let cpu = CpuUsage {
            user_s: u1 - u0,
            system_s: s1 - s0,
            user_pct: (u1 - u0) / secs * 100.0,
            system_pct: (s1 - s0) / secs * 100.0,
            machine_busy_pct: match (j0, j1) {
                (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => {
                    Some((b1 - b0) as f64 / (t1 - t0) as f64 * 100.0)
                }
                _ => None,
            },
            cores: cores(),
        };
        PhaseOutcome {
            began,
            steady: steady.map(|c| c.report()),
            jobs,
            intervals: agg.samples,
            elapsed_ns,
            cpu,
        }
    })
}

/// A last, partial interval shorter than this share of `--log-interval` is
/// folded into the one before (see [`IntervalMerger::is_degenerate_tail`]).
pub const MIN_TAIL_SHARE_PCT: u64 = 10;

/// Merges the jobs' interval reports into run-wide samples, in order, as
/// soon as every job has reported an interval (or finished).
struct IntervalMerger {
    numjobs: usize,
    reads: bool,
    writes: bool,
    trims: bool,
    interval_ns: u64,
    pending: BTreeMap<u64, (Vec<bool>, u64, [IntervalDir; 3])>,
    done: Vec<bool>,
    next: u64,
    samples: Vec<IntervalSample>,
    /// The last sample emitted, unmerged: a sliver after it is folded into it.
    last: Option<(u64, u64, [IntervalDir; 3])>,
}

impl IntervalMerger {
    fn new(numjobs: usize, spec: &BlockSpec, interval_ns: u64) -> Self {
        // verify_backlog's reads are the job's, as fio counts them, and so
        // are a mixed verify job's own reads and checks.
        let reads = spec.verify_only || spec.verify_backlog > 0 || spec.rw.reads();
        let writes = !spec.verify_only && spec.rw.writes();
        let trims = !spec.verify_only && !spec.verify && spec.rw.trims();
        IntervalMerger {
            numjobs,
            reads,
            writes,
            trims,
            interval_ns,
            pending: BTreeMap::new(),
            done: vec![false; numjobs],
            next: 0,
            samples: Vec::new(),
            last: None,
        }
    }

    fn add(&mut self, r: crate::job::IntervalReport) {
        let n = self.numjobs;
        let e = self.pending.entry(r.index).or_insert_with(|| {
            let empty = || IntervalDir {
                ios: 0,
                bytes: 0,
                lat: LatencyRecorder::coarse(),
            };
            (vec![false; n], 0, [empty(), empty(), empty()])
        });
        e.0[r.job as usize] = true;
        e.1 = e.1.max(r.duration_ns);
        for (m, d) in e.2.iter_mut().zip(r.dirs.iter()) {
            m.ios += d.ios;
            m.bytes += d.bytes;
            m.lat.merge(&d.lat);
        }
    }

    fn job_done(&mut self, j: u32) {
        self.done[j as usize] = true;
    }

    fn ready(&mut self) -> Vec<IntervalSample> {
        let mut out = Vec::new();
        while let Some((seen, dur, _)) = self.pending.get(&self.next) {
            if !seen.iter().zip(&self.done).all(|(s, d)| *s || *d) {
                break;
            }
            // Only a job's last interval is short, so a short merged one is
            // every job's last: wait for them to finish to know it is the tail.
            if self.is_sliver(*dur) && !self.done.iter().all(|d| *d) {
                break;
            }
            let (_, dur, dirs) = self.pending.remove(&self.next).expect("present");
            self.emit(self.next, dur, dirs, &mut out);
            self.next += 1;
        }
        out
    }

    fn ready_all(&mut self) -> Vec<IntervalSample> {
        let mut out = Vec::new();
        while let Some((index, (_, dur, dirs))) = self.pending.pop_first() {
            self.emit(index, dur, dirs, &mut out);
        }
        out
    }

    /// Records interval `index` (already taken out of `pending`) and adds it
    /// to `out` for live output, except a degenerate tail: that is folded
    /// into the previous sample, so the series still adds up to the totals,
    /// and is not shown on its own.
    fn emit(
        &mut self,
        index: u64,
        duration_ns: u64,
        dirs: [IntervalDir; 3],
        out: &mut Vec<IntervalSample>,
    ) {
        if self.is_degenerate_tail(index, duration_ns)
            && let Some((li, ldur, mut ldirs)) = self.last.take()
        {
            for (l, d) in ldirs.iter_mut().zip(dirs.iter()) {
                l.ios += d.ios;
                l.bytes += d.bytes;
                l.lat.merge(&d.lat);
            }
            let merged = self.sample(li, ldur + duration_ns, &ldirs);
            if let Some(prev) = self.samples.last_mut() {
                *prev = merged;
            }
            self.last = Some((li, ldur + duration_ns, ldirs));
            return;
        }
        let s = self.sample(index, duration_ns, &dirs);
        self.samples.push(s.clone());
        out.push(s);
        self.last = Some((index, duration_ns, dirs));
    }

    /// Whether interval `index` is the run's last and a sliver of under
    /// [`MIN_TAIL_SHARE_PCT`] % of the interval after full ones: on its own,
    /// its few I/Os make a rate and a p99 that mean nothing.
    fn is_degenerate_tail(&self, index: u64, duration_ns: u64) -> bool {
        index > 0
            && self.done.iter().all(|d| *d)
            && self.pending.keys().all(|&k| k < index)
            && self.is_sliver(duration_ns)
    }

    fn is_sliver(&self, duration_ns: u64) -> bool {
        duration_ns.saturating_mul(100) < self.interval_ns.saturating_mul(MIN_TAIL_SHARE_PCT)
    }

    fn sample(&self, index: u64, duration_ns: u64, dirs: &[IntervalDir; 3]) -> IntervalSample {
        let secs = duration_ns.max(1) as f64 / 1e9;
        let dir = |d: &IntervalDir| IntervalDirection {
            ios: d.ios,
            bytes: d.bytes,
            iops: d.ios as f64 / secs,
            bw_bytes_per_s: d.bytes as f64 / secs,
            lat_mean_ns: d.lat.mean(),
            lat_p99_ns: d.lat.hist_percentile(99.0),
        };
        IntervalSample {
            index,
            t_ms: (index * self.interval_ns + duration_ns) / 1_000_000,
            duration_ms: duration_ns / 1_000_000,
            read: self.reads.then(|| dir(&dirs[0])),
            write: self.writes.then(|| dir(&dirs[1])),
            trim: self.trims.then(|| dir(&dirs[2])),
            read_lat_hdr_histogram: self.reads.then(|| dirs[0].lat.encoded()),
            write_lat_hdr_histogram: self.writes.then(|| dirs[1].lat.encoded()),
            trim_lat_hdr_histogram: self.trims.then(|| dirs[2].lat.encoded()),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    spec: &BlockSpec,
    started_at: String,
    target: &PreparedTarget,
    main: PhaseOutcome,
    verify: Option<VerifyReport>,
    capacity: Option<CapacityReport>,
    diskstats: Option<DiskStatsDelta>,
    ctl: &RunControl<'_>,
) -> BlockResult {
    let secs = main.elapsed_ns as f64 / 1e9;
    let mut error = main.jobs.iter().find_map(|j| j.error.clone());
    if let (Some(e), Some(c)) = (error.as_mut(), capacity.as_ref()) {
        explain_out_of_space(e, c);
    }
    let status = if error.is_some() {
        RunStatus::IoError
    } else if ctl.interrupt.load(Ordering::Relaxed) {
        RunStatus::Interrupted
    } else if verify.as_ref().is_some_and(|v| v.bad_block_count > 0) {
        RunStatus::VerifyFailed
    } else {
        RunStatus::Completed
    };
    let (reads, writes, trims) = if spec.verify_only {
        (true, false, false)
    } else if spec.verify {
        (spec.verify_backlog > 0 || spec.rw.reads(), true, false)
    } else {
        (spec.rw.reads(), spec.rw.writes(), spec.rw.trims())
    };
    // Intervals that are full length describe the steady state; the last may be short.
    let short_tail = main.intervals.len() > 1
        && main
            .intervals
            .last()
            .is_some_and(|s| s.duration_ms < spec.log_interval_ms);
    let full: Vec<&IntervalSample> = if short_tail {
        main.intervals[..main.intervals.len() - 1].iter().collect()
    } else {
        main.intervals.iter().collect()
    };
    let summary = |d: usize| {
        let mut t = DirTotals::new();
        for j in &main.jobs {
            let s = &j.dirs[d];
            t.ios += s.ios;
            t.bytes += s.bytes;
            t.short += s.short;
            t.slat.merge(&s.slat);
            t.clat.merge(&s.clat);
            t.lat.merge(&s.lat);
            crate::share::merge_prios(&mut t.prios, &s.prios);
        }
        let series: Vec<f64> = full
            .iter()
            .filter_map(|s| match d {
                0 => s.read,
                1 => s.write,
                _ => s.trim,
            })
            .map(|x| x.iops)
            .collect();
        DirectionSummary {
            ios: t.ios,
            bytes: t.bytes,
            short_ios: t.short,
            iops: t.ios as f64 / secs,
            bw_bytes_per_s: t.bytes as f64 / secs,
            slat: t.slat.summary(&spec.percentiles),
            clat: t.clat.summary(&spec.percentiles),
            lat: t.lat.summary(&spec.percentiles),
            prios: crate::share::prio_latencies(spec, d, &t.prios),
            interval_iops: SeriesStats::of(&series),
        }
    };
    let jobs = main
        .jobs
        .iter()
        .map(|j| {
            let dir = |d: usize| JobDirection {
                ios: j.dirs[d].ios,
                bytes: j.dirs[d].bytes,
                short_ios: j.dirs[d].short,
                iops: j.dirs[d].ios as f64 / secs,
                bw_bytes_per_s: j.dirs[d].bytes as f64 / secs,
                lat_mean_ns: j.dirs[d].lat.mean(),
                // Per job, only clat keeps its histogram: that is what fio
                // reports per job, and it keeps the result small.
                slat: Some(LatencyStats {
                    hdr_histogram: None,
                    ..j.dirs[d].slat.summary(&spec.percentiles)
                }),
                clat: Some(j.dirs[d].clat.summary(&spec.percentiles)),
                lat: Some(LatencyStats {
                    hdr_histogram: None,
                    ..j.dirs[d].lat.summary(&spec.percentiles)
                }),
                prios: crate::share::prio_latencies(spec, d, &j.dirs[d].prios),
            };
            JobSummary {
                job: j.job,
                read: reads.then(|| dir(0)),
                write: writes.then(|| dir(1)),
                trim: trims.then(|| dir(2)),
                errors: spec.errors.counts().then_some(j.errors),
            }
        })
        .collect();
    let data = writes.then(|| {
        let mut lz4 = Default::default();
        let mut deflate = Default::default();
        for j in &main.jobs {
            if let (Some(l), Some(d)) = (&j.lz4, &j.deflate) {
                csdchar_core::compressibility::PageTally::merge(&mut lz4, l);
                csdchar_core::compressibility::PageTally::merge(&mut deflate, d);
            }
        }
        DataReport {
            compress_pct: spec.compress_pct,
            chunk: spec.compress_chunk.min(spec.bs),
            fill: spec.compress_fill,
            dedupe_pct: spec.dedupe_pct,
            random_bytes_per_chunk: main
                .jobs
                .iter()
                .map(|j| j.random_bytes_per_chunk)
                .max()
                .unwrap_or(0) as u64,
            target_ratio: (spec.compress_pct < 100)
                .then(|| 100.0 / f64::from(100 - spec.compress_pct)),
            lz4_ratio: lz4.ratio(),
            lz4,
            deflate_ratio: deflate.ratio(),
            deflate,
        }
    });
    let engine = main
        .jobs
        .iter()
        .find_map(|j| j.engine.clone())
        .unwrap_or(EngineInfo {
            name: spec.engine,
            fixed_buffers: false,
            fixed_files: false,
            setup_flags: Vec::new(),
        });
    BlockResult {
        schema: BLOCK_SCHEMA.to_string(),
        tool: ToolInfo::current(),
        started_at,
        status,
        error,
        // The region actually used (the whole target when --size was not given).
        spec: BlockSpec {
            size: target.size,
            ..spec.clone()
        },
        target: target.info.clone(),
        engine,
        elapsed_ns: main.elapsed_ns,
        read: reads.then(|| summary(0)),
        write: writes.then(|| summary(1)),
        trim: trims.then(|| summary(2)),
        cpu: main.cpu,
        data,
        diskstats,
        capacity,
        intervals: main.intervals,
        jobs,
        verify,
        log_files: main.jobs.iter().flat_map(|j| j.logs.clone()).collect(),
        dump_files: Vec::new(),
        steady_state: main.steady.clone(),
        latency_depth: main.jobs.first().and_then(|j| j.latency_depth),
        io_batches: Some(main.jobs.iter().fold(BatchCounts::default(), |mut a, j| {
            a.merge(&j.batches);
            a
        })),
        zone_resets: (spec.zones.mode == csdchar_core::zones::ZoneMode::Zbd)
            .then(|| main.jobs.iter().map(|j| j.zone_resets).sum()),
        job_file: None,
        start: None,
    }
}

/// When a write failed because a compressing device ran out of physical room
/// (zram over `mem_limit` answers EIO; a CSD raises its space flag), say so in
/// plain words with the device's figures at the point of failure.
fn explain_out_of_space(e: &mut RunError, c: &CapacityReport) {
    let a = &c.after;
    let more_failed =
        matches!((c.before.failed_writes, a.failed_writes), (Some(x), Some(y)) if y > x);
    let full = a.out_of_space == Some(true) || (more_failed && a.physical_capacity_bytes.is_some());
    if !full
        || !matches!(e.errno, Some(libc::EIO | libc::ENOSPC))
        || e.direction.as_deref() != Some("write")
    {
        return;
    }
    let bytes = |v: Option<u64>| v.map_or("unknown".to_string(), |b| format_bytes(b as f64));
    let ratio = a
        .compression_ratio
        .map_or("unknown".to_string(), |r| format!("{r:.2}:1"));
    e.message = format!(
        "{dev} is out of physical space: it holds {logical} of logical data in {physical} physical \
         ({used} used of {cap}), compression {ratio}, and refused the write at offset {off} ({orig})",
        dev = a.device,
        logical = bytes(a.logical_bytes),
        physical = bytes(a.physical_bytes),
        used = bytes(a.physical_used_bytes),
        cap = bytes(a.physical_capacity_bytes),
        off = e.offset.unwrap_or(0),
        orig = e.errno.map_or("I/O error".to_string(), |n| {
            std::io::Error::from_raw_os_error(n).to_string()
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::IntervalReport;
    use csdchar_core::result::block::RwMode;

    fn report(job: u32, index: u64, duration_ms: u64, ios: u64) -> IntervalReport {
        let mut lat = LatencyRecorder::coarse();
        for _ in 0..ios {
            lat.record(1000);
        }
        let dir = |ios, lat: LatencyRecorder| IntervalDir {
            ios,
            bytes: ios * 4096,
            lat,
        };
        IntervalReport {
            job,
            index,
            duration_ns: duration_ms * 1_000_000,
            dirs: [
                dir(ios, lat),
                dir(0, LatencyRecorder::coarse()),
                dir(0, LatencyRecorder::coarse()),
            ],
        }
    }

    fn merger(numjobs: usize) -> IntervalMerger {
        let spec = BlockSpec {
            rw: RwMode::Randread,
            ..BlockSpec::default()
        };
        IntervalMerger::new(numjobs, &spec, 100_000_000)
    }

    #[test]
    fn a_sliver_at_the_end_is_folded_into_the_interval_before() {
        for numjobs in [1, 2] {
            let mut m = merger(numjobs);
            let mut shown = Vec::new();
            for j in 0..numjobs as u32 {
                m.add(report(j, 0, 100, 50));
                m.add(report(j, 1, 100, 50));
                // 3 ms of a 100 ms interval.
                m.add(report(j, 2, 3, 2));
                shown.extend(m.ready());
            }
            for j in 0..numjobs as u32 {
                m.job_done(j);
                shown.extend(m.ready());
            }
            shown.extend(m.ready_all());
            let indexes: Vec<u64> = shown.iter().map(|s| s.index).collect();
            assert_eq!(
                indexes,
                [0, 1],
                "numjobs {numjobs}: the sliver is not shown"
            );
            // It is recorded as part of the interval before, so the series
            // still adds up to the totals.
            assert_eq!(m.samples.len(), 2);
            let last = &m.samples[1];
            let n = numjobs as u64;
            assert_eq!(last.read.unwrap().ios, 52 * n);
            assert_eq!(last.duration_ms, 103);
            assert_eq!(last.t_ms, 203);
            assert_eq!(
                shown[1].read.unwrap().ios,
                50 * n,
                "shown before the sliver came"
            );
        }
    }

    #[test]
    fn a_real_partial_interval_and_a_lone_short_one_are_kept() {
        // 40 ms of 100: a real partial interval.
        let mut m = merger(1);
        m.add(report(0, 0, 100, 50));
        m.add(report(0, 1, 40, 20));
        m.job_done(0);
        let mut shown = m.ready();
        shown.extend(m.ready_all());
        assert_eq!(shown.iter().map(|s| s.index).collect::<Vec<_>>(), [0, 1]);
        // A run shorter than one interval keeps its only sample.
        let mut m = merger(1);
        m.add(report(0, 0, 3, 5));
        m.job_done(0);
        let mut shown = m.ready();
        shown.extend(m.ready_all());
        assert_eq!(shown.len(), 1);
    }
}
