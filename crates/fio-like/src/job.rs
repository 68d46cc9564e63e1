//! One job: a thread that keeps `iodepth` I/Os in flight on its own engine,
//! timestamps them once per batch (fio does the same for completions) and
//! records submission, completion and total latency per direction.
//!
//! Timestamps: `start` when the batch is prepared, `issue` when io_uring_enter
//! is entered, `done` after the reap. slat = issue − start, clat = done −
//! issue, lat = done − start, as in fio's io_uring engine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Barrier, OnceLock};
use std::time::Instant;

use crate::dedupe::DedupeWriter;
use csdchar_core::compressibility::{Codec, PageCompressor, PageTally};
use csdchar_core::distribution::BlockPicker;
use csdchar_core::iolog::LogRecorder;
use csdchar_core::on_error::{EILSEQ, ErrorKind};
use csdchar_core::pattern::{DataSpec, mix64};
use csdchar_core::rate::{MinRateCheck, Pacer};
use csdchar_core::result::block::{BadBlock, BatchCounts, BlockSpec, ErrorCount, RunError};
use csdchar_core::stats::LatencyRecorder;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::buffers::JobBuffers;
use crate::engine::{Completion, Direction, EngineError, IoEngine, IoRequest};
use crate::offsets::{
    BlockPermutation, PassOrder, io_units, next_seq_block, random_block, uniform_below,
};
use crate::outcome::count_error;
pub use crate::outcome::{DirTotals, IntervalDir, IntervalReport, JobEvent, JobOutcome};
use crate::verify;
use crate::verify_log;
use csdchar_core::pace::{DepthSearch, DepthStep, RandomGenerator};

/// What a job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The spec's workload.
    Workload,
    /// Write every block of the job's share once, with verify headers.
    VerifyWrite,
    /// Read every block of the job's share back and check it.
    VerifyRead,
}

/// Everything a job needs, fixed before it starts.
pub struct JobConfig<'a> {
    /// Job number.
    pub job: u32,
    /// The validated spec.
    pub spec: &'a BlockSpec,
    /// Region size in bytes (whole blocks).
    pub size: u64,
    /// First byte of the region (fio's offset, plus offset_increment per
    /// clone before this one).
    pub region: u64,
    /// Logical block size of the target, for LBAs.
    pub lbs: u32,
    /// The target's size in bytes (fio's real_file_size: where zones end).
    pub real_size: u64,
    /// What to do.
    pub phase: Phase,
}

/// Flags and clock shared by all jobs of a run.
pub struct Shared<'a> {
    /// Set by SIGINT/SIGTERM.
    pub interrupt: &'a AtomicBool,
    /// Set when another job ended this one (fio's `exitall`).
    pub terminate: &'a AtomicBool,
    /// The run's flows (fio's `flow`).
    pub flows: &'a crate::share::FlowTable,
    /// Set when a job hit an error: everyone stops.
    pub halt: &'a AtomicBool,
    /// Jobs and the run meet here twice: setup done, then clock set.
    pub gate: &'a Barrier,
    /// The common time base, set between the two gate meetings; the measured
    /// period starts `ramp` after it.
    pub base: &'a OnceLock<Instant>,
    /// Interval samples go here.
    pub events: Sender<JobEvent>,
}

impl Shared<'_> {
    /// Waits until every job is set up and the run has set the clock; returns it.
    pub fn start(&self) -> Instant {
        self.gate.wait();
        self.gate.wait();
        *self
            .base
            .get()
            .expect("the run sets the clock between the gates")
    }
}

#[derive(Clone, Copy)]
struct Slot {
    start: u64,
    issue: u64,
    offset: u64,
    len: u32,
    buf: u32,
    dir: Direction,
    /// The file (fio's nrfiles; 0 with one).
    file: u32,
    /// The I/O's priority (fio's io_u->ioprio).
    prio: u16,
    /// A verify read that checks its block.
    checks: bool,
}

/// How a workload picks each I/O's direction.
#[derive(Clone, Copy)]
enum Mix {
    /// Reads with this % chance, else writes.
    Share(u8),
    /// Trims only.
    Trim,
    /// A trim, then a write of the block just trimmed (fio's trimwrite and
    /// randtrimwrite); holds the block awaiting its write.
    TrimThenWrite(Option<u64>),
}

/// Decides the direction and block of each I/O.
enum Planner {
    /// Blocks of each direction's unit, `nb`.
    Random {
        /// fio's skewed distributions; None: uniform.
        skew: Option<BlockPicker>,
        /// fio's random_generator=lfsr: every block once per pass.
        lfsr: Option<PassOrder>,
    },
    /// Each direction's next block (of its unit).
    Sequential { next: [u64; 3] },
    /// Block `perm(i)` for i = job, job + numjobs, …
    Permuted {
        perm: BlockPermutation,
        next: u64,
        stride: u64,
    },
    /// fio's io_piece list: the blocks a verify job writes and checks.
    Listed(verify_log::Listed),
    /// Block i for i = job, job + numjobs, …
    Strided {
        next: u64,
        stride: u64,
        nblocks: u64,
    },
}

/// Bytes of written data measured for compressibility per job.
const SAMPLE_BYTES: usize = 2 << 20;

/// Runs one job on `engine` until its budget, deadline, an error or a stop.
pub fn run_job<E: IoEngine>(mut engine: E, cfg: &JobConfig<'_>, shared: &Shared<'_>) -> JobOutcome {
    let spec = cfg.spec;
    // Offsets are multiples of bs; with bssplit each I/O is a whole number
    // of them, up to max_bs.
    let bs = spec.bs as usize;
    let max_bs = spec.max_bs() as usize;
    let depth = spec.iodepth as usize;
    let nblocks = cfg.size / spec.bs;
    // Each direction's offsets are multiples of its own smallest size (fio's
    // min_bs, blockalign's default); `nb` of them fit the region.
    let unit = [0, 1, 2].map(|d| spec.unit_of(d));
    let nb = unit.map(|u| cfg.size / u);
    // Random offsets are multiples of fio's blockalign (the unit without it);
    // `nbr` of them start an I/O of the smallest size inside the region.
    let random = cfg.phase == Phase::Workload && spec.rw.is_random();
    let align = [0, 1, 2].map(|d| match random {
        true => spec.pacing.align(d, unit[d]),
        false => unit[d],
    });
    let nbr = [0, 1, 2].map(|d| match random {
        true => spec.pacing.random_blocks(d, unit[d], cfg.size),
        false => nb[d],
    });
    let numjobs = u64::from(spec.numjobs);
    let job = u64::from(cfg.job);
    let seed = mix64(spec.seed ^ job.wrapping_mul(0x9E37));
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    // fio draws block sizes from a generator of their own (bsrange_state).
    let mut bs_rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x0B55_B117);

    let (read_share, writes, reads) = match cfg.phase {
        Phase::Workload => {
            let s = spec.rw.read_share(spec.rwmixread);
            (s, s < 100 && spec.rw.writes(), s > 0)
        }
        Phase::VerifyWrite if verify_log::mixed(spec) => {
            let s = spec.rw.read_share(spec.rwmixread);
            (s, true, true)
        }
        Phase::VerifyWrite => (0, true, spec.verify_backlog > 0),
        Phase::VerifyRead => (100, false, true),
    };
    let mut mix = match (cfg.phase, spec.rw.trims(), spec.rw.writes()) {
        (Phase::Workload, true, true) => Mix::TrimThenWrite(None),
        (Phase::Workload, true, false) => Mix::Trim,
        _ => Mix::Share(read_share),
    };
    // fio's NUMA placement, before the buffers are allocated, and the job's
    // I/O priority (ioprio_set, as fio's thread_main).
    let placed = crate::share::place_thread(&spec.share.numa)
        .and_then(|()| crate::share::set_thread_prio(&spec.share.prio));
    // fio's prio_state: which I/Os carry cmdprio's priority.
    let mut prio_rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5052_494F);
    let data = writes.then(|| {
        (
            DataSpec {
                compress_pct: spec.compress_pct,
                chunk: (spec.compress_chunk as usize).clamp(1, bs),
                fill: spec.compress_fill,
                dedupe_pct: spec.dedupe_pct,
            },
            if spec.dedupe.global && !spec.dedupe.is_none() {
                crate::dedupe::GLOBAL_POOL_SEED
            } else {
                seed ^ 0xDA7A
            },
        )
    });
    let mut buffers = JobBuffers::new(max_bs, depth, reads, data);
    let mut dedupe = writes
        .then(|| {
            let thread = spec.dedupe.first_thread + cfg.job;
            DedupeWriter::new(&spec.dedupe, thread, cfg.size, seed, data?, bs)
        })
        .flatten();
    let mut outcome = JobOutcome {
        job: cfg.job,
        zone_resets: 0,
        dirs: [DirTotals::new(), DirTotals::new(), DirTotals::new()],
        end_ns: 0,
        error: None,
        blocks_checked: 0,
        bad_blocks: Vec::new(),
        dumps: Vec::new(),
        lz4: None,
        deflate: None,
        random_bytes_per_chunk: buffers.random_bytes_per_chunk(),
        engine: Some(engine.info()),
        logs: Vec::new(),
        batches: BatchCounts::default(),
        stats_from_ns: 0,
        latency_depth: None,
        errors: ErrorCount::default(),
        filled: false,
    };
    let mut logger = match cfg.phase {
        Phase::Workload => LogRecorder::new(
            &spec.logs,
            cfg.job,
            [
                reads,
                writes,
                matches!(mix, Mix::Trim | Mix::TrimThenWrite(_)),
            ],
        ),
        _ => None,
    };
    let registered = placed
        .map_err(|source| EngineError::Sys {
            what: "numa_cpu_nodes/numa_mem_policy/prio/prioclass",
            source,
        })
        .and_then(|()| engine.register_buffers(&buffers.regions()));
    outcome.engine = Some(engine.info());
    let base = shared.start();
    if let Err(e) = registered {
        record_error(&mut outcome, shared, engine_error(e, cfg.job));
        let _ = shared.events.send(JobEvent::Done(cfg.job));
        return outcome;
    }

    // Verify phases split a shared region among the jobs; with fio's
    // offset_increment each job has a region of its own and covers it whole.
    let (share_first, share_stride) = match spec.offset_increment {
        0 => (job, numjobs),
        _ => (0, 1),
    };
    let mut planner = match cfg.phase {
        Phase::Workload if spec.rw.is_random() => Planner::Random {
            skew: (!spec.random_distribution.is_uniform()).then(|| {
                // One alignment for every direction it serves (the spec's rule).
                let d = spec
                    .rw
                    .directions()
                    .used
                    .iter()
                    .position(|&u| u)
                    .unwrap_or(0);
                BlockPicker::new(&spec.random_distribution, nbr[d], align[d], seed as u32)
            }),
            lfsr: (spec.pacing.generator == RandomGenerator::Lfsr)
                .then(|| PassOrder::new(nblocks.max(1), seed)),
        },
        Phase::Workload => Planner::Sequential { next: [0, 0, 0] },
        Phase::VerifyWrite if spec.rw.is_random() => Planner::Permuted {
            perm: BlockPermutation::new(nblocks, spec.seed),
            next: share_first,
            stride: share_stride,
        },
        Phase::VerifyWrite | Phase::VerifyRead => Planner::Strided {
            next: share_first,
            stride: share_stride,
            nblocks,
        },
    };
    // fio's zonemode: where each planned I/O really goes.
    let mut zones = match crate::zones::JobZones::new(spec, cfg.size, cfg.real_size) {
        Ok(z) => z,
        Err(message) => {
            let err = RunError {
                message,
                errno: None,
                offset: None,
                direction: None,
                job: Some(cfg.job),
            };
            record_error(&mut outcome, shared, err);
            let _ = shared.events.send(JobEvent::Done(cfg.job));
            return outcome;
        }
    };
    // Budget: fio's `size` per job; verify phases cover the job's share once.
    // fio's offset modifier (rw=read:-8k), in blocks.
    let seq_add = unit.map(|u| spec.rw_seq_add / u as i64);
    // fio's io_bytes_exceeded: io_size (else size) times loops, and at most
    // number_ios times loops.
    let workload_ios = {
        let per_loop = if spec.io_size > 0 {
            (spec.io_size / spec.bs).max(1)
        } else {
            nblocks
        };
        let loops = u64::from(spec.loops.max(1));
        let mut n = per_loop.saturating_mul(loops);
        if spec.number_ios > 0 {
            n = n.min(spec.number_ios.saturating_mul(loops));
        }
        n
    };
    let mut budget = match cfg.phase {
        Phase::Workload if spec.time_based => u64::MAX,
        // fio counts the written bytes of trimwrite against size: each block
        // is trimmed and written.
        Phase::Workload if matches!(mix, Mix::TrimThenWrite(_)) => workload_ios * 2,
        Phase::Workload => workload_ios,
        _ => nblocks.saturating_sub(share_first).div_ceil(share_stride),
    };
    // With bssplit fio counts bytes, not I/Os (io_issue_bytes_exceeded): the
    // I/O count above is then only number_ios'.
    let byte_budget = match cfg.phase {
        Phase::Workload if !spec.bssplit.is_none() && !spec.time_based => {
            if spec.number_ios == 0 {
                budget = u64::MAX;
            }
            let per_loop = if spec.io_size > 0 {
                spec.io_size
            } else {
                cfg.size
            };
            per_loop.saturating_mul(u64::from(spec.loops.max(1)))
        }
        _ => u64::MAX,
    };
    if cfg.phase != Phase::Workload {
        let (share, read) = ((share_first, share_stride), cfg.phase == Phase::VerifyRead);
        if let Some(l) = verify_log::Listed::new(spec, read, nb[1], seq_add[1], workload_ios, share)
        {
            planner = Planner::Listed(l);
            budget = u64::MAX;
        }
    }
    let mut issued_bytes = 0u64;

    let ns = |t: Instant| t.saturating_duration_since(base).as_nanos() as u64;
    let ramp_ns = if cfg.phase == Phase::VerifyRead {
        0
    } else {
        spec.ramp_time_ms * 1_000_000
    };
    let deadline_ns = match (cfg.phase, spec.runtime_ms) {
        (Phase::Workload, Some(r)) => ramp_ns + r * 1_000_000,
        _ => u64::MAX,
    };
    let interval_ns = spec.log_interval_ms.max(1) * 1_000_000;
    let mut cur_interval = 0u64;
    let mut iv = [new_interval_dir(), new_interval_dir(), new_interval_dir()];

    let mut slots = vec![
        Slot {
            start: 0,
            issue: 0,
            offset: 0,
            len: 0,
            buf: 0,
            dir: Direction::Read,
            file: 0,
            prio: 0,
            checks: false,
        };
        depth
    ];
    let mut free: Vec<u32> = (0..depth as u32).rev().collect();
    let mut queued_tags: Vec<u32> = Vec::with_capacity(depth);
    let mut completions: Vec<Completion> = Vec::with_capacity(depth * 2);
    let mut inflight = 0usize;
    let mut issued = 0u64;
    let mut seq = 0u64;
    let batch_submit = if spec.iodepth_batch_submit == 0 {
        depth
    } else {
        spec.iodepth_batch_submit as usize
    };
    let batch_complete = spec.iodepth_batch_complete.max(1) as usize;
    let region = cfg.region;
    let mut now_ns = ns(Instant::now());
    // fio's latency_target: the depth searched for, completions it counted,
    // and whether the job lets everything in flight complete first (then
    // clears its statistics, for the final window).
    let mut search = (spec.pacing.latency.as_ref())
        .filter(|_| cfg.phase == Phase::Workload)
        .map(|t| DepthSearch::new(t, spec.iodepth, now_ns));
    let (mut search_ios, mut quiesce, mut reset_stats) = (0u64, false, false);
    // fio's rate options: pacing from the job's start, and the minimum check.
    let mut pacer = match cfg.phase {
        Phase::Workload => Pacer::new(&spec.rate, unit, seed as u32 ^ 0x5241_5445),
        _ => None,
    };
    let mut min_rate = match cfg.phase {
        Phase::Workload => MinRateCheck::new(&spec.rate),
        _ => None,
    };
    // A sequential job with a forward offset modifier reached the end.
    let mut seq_end = false;
    // An I/O planned but not yet due under the rate.
    let mut planned: Option<(Direction, u64, u64)> = None;
    // fio's nrfiles: each I/O's file (the planned one's until it is issued).
    let mut files = match cfg.phase {
        Phase::Workload => crate::fileset::FilePlan::new(spec, unit, seed as u32 ^ 0x4649_4C45),
        _ => None,
    };
    let mut file = 0u32;
    // fio's thinktime: the count at the last pause, the count a pause is due
    // at (everything in flight completes first), and whether an I/O went out
    // since the last one (fio checks after each I/O it issues).
    let think = Some(&spec.think).filter(|t| cfg.phase == Phase::Workload && !t.is_none());
    let (mut think_last, mut thinking, mut completed_all) = (0u64, None::<u64>, 0u64);
    let mut issued_since_pause = false;
    // fio's flow: held back while ahead of the job's share (then, with
    // flow_sleep, everything in flight completes and the job sleeps).
    let mut flow = (cfg.phase == Phase::Workload)
        .then(|| shared.flows.member(&spec.share.flow))
        .flatten();
    let mut flow_sleep = false;
    // Blocks of the next I/O of `dir` at block `b` (1 without bssplit).
    let mut units = |dir: Direction, b: u64| {
        let d = dir.index();
        let room = cfg.size.saturating_sub(b * align[d]);
        io_units(spec, dir, room, unit[d], &mut bs_rng)
    };

    loop {
        let stopping = shared.interrupt.load(Ordering::Relaxed)
            || shared.terminate.load(Ordering::Relaxed)
            || shared.halt.load(Ordering::Relaxed)
            || now_ns >= deadline_ns
            || issued >= budget
            || issued_bytes >= byte_budget;
        // When the next I/O is due, if it is not yet.
        let mut gated: Option<u64> = None;
        let mut flow_held = false;
        if !stopping && !free.is_empty() && thinking.is_none() && !flow_sleep && !quiesce {
            let start = now_ns;
            while issued < budget && issued_bytes < byte_budget {
                if search
                    .as_ref()
                    .is_some_and(|s| inflight + queued_tags.len() >= s.depth() as usize)
                {
                    break;
                }
                if free.is_empty() {
                    break;
                }
                if planned.is_none()
                    && let Some(f) = flow.as_mut()
                    && f.held()
                {
                    (flow_held, flow_sleep) = (true, f.sleep_us() > 0);
                    break;
                }
                let Some(tag) = free.pop() else { break };
                if queued_tags.len() == batch_submit {
                    // A full batch goes to the kernel now; keep filling the depth.
                    let enter = ns(Instant::now());
                    for &t in &queued_tags {
                        slots[t as usize].issue = enter;
                    }
                    inflight += queued_tags.len();
                    outcome.batches.submit[BatchCounts::bucket(queued_tags.len())] += 1;
                    queued_tags.clear();
                    if let Err(e) = engine.submit_and_wait(0) {
                        record_error(&mut outcome, shared, engine_error(e, cfg.job));
                    }
                }
                // A mixed verify job's own read: it checks nothing.
                let mut plain_read = false;
                let (dir, block, k) = match planned.take() {
                    Some(p) => p,
                    None if files.is_some() => {
                        let dir = pick_dir(&mut rng, mix);
                        match files.as_mut().and_then(|f| f.next(dir, &mut rng)) {
                            Some((f, b)) => {
                                file = f;
                                (dir, b, 1)
                            }
                            None => {
                                // Every file is done, as fio's job then is.
                                free.push(tag);
                                budget = issued;
                                break;
                            }
                        }
                    }
                    None => match &mut planner {
                        Planner::Random { skew, lfsr } => match &mut mix {
                            Mix::TrimThenWrite(pending) => match pending.take() {
                                Some(b) => (Direction::Write, b, 1),
                                None => {
                                    let b = random_block(&mut rng, skew, nbr[2], Direction::Trim);
                                    *pending = Some(b);
                                    (Direction::Trim, b, 1)
                                }
                            },
                            m => {
                                let dir = pick_dir(&mut rng, *m);
                                let b = match lfsr {
                                    None => random_block(&mut rng, skew, nbr[dir.index()], dir),
                                    // A pass done ends the job, as fio's
                                    // lfsr_next does (time_based and loops
                                    // start it again).
                                    Some(o) => match o.next(spec.time_based || spec.loops > 1) {
                                        Some(b) => b,
                                        None => {
                                            free.push(tag);
                                            budget = issued;
                                            break;
                                        }
                                    },
                                };
                                (dir, b, units(dir, b))
                            }
                        },
                        Planner::Sequential { next } => {
                            // fio's trimwrite trims while the two positions meet
                            // (set_rw_ddir: last_start[WRITE] == last_start[TRIM]).
                            let dir = match mix {
                                Mix::TrimThenWrite(_) if next[1] == next[2] => Direction::Trim,
                                Mix::TrimThenWrite(_) => Direction::Write,
                                m => pick_dir(&mut rng, m),
                            };
                            let b = next[dir.index()];
                            let k = units(dir, b);
                            let d = dir.index();
                            match next_seq_block(b, k, nb[d], seq_add[d], spec.time_based) {
                                Some(n) => next[dir.index()] = n,
                                None => seq_end = true,
                            }
                            (dir, b, k)
                        }
                        Planner::Permuted { perm, next, stride } => {
                            let b = perm.get(*next);
                            *next += *stride;
                            (Direction::Write, b, 1)
                        }
                        Planner::Listed(l) => match l.next_io() {
                            verify_log::Next::Write(b) => (Direction::Write, b, 1),
                            verify_log::Next::Check(b) => (Direction::Read, b, 1),
                            verify_log::Next::Read(b) => {
                                plain_read = true;
                                (Direction::Read, b, 1)
                            }
                            // The oldest listed write is in flight.
                            verify_log::Next::Wait => {
                                free.push(tag);
                                break;
                            }
                            verify_log::Next::Done => {
                                free.push(tag);
                                budget = issued;
                                break;
                            }
                        },
                        Planner::Strided {
                            next,
                            stride,
                            nblocks,
                        } => {
                            let b = *next % *nblocks;
                            *next += *stride;
                            (
                                if read_share == 100 {
                                    Direction::Read
                                } else {
                                    Direction::Write
                                },
                                b,
                                1,
                            )
                        }
                    },
                };
                if let Some(p) = &pacer {
                    let due = p.due_ns(dir.index());
                    if due > now_ns {
                        // Ahead of the rate: this I/O waits (fio's rate_ddir).
                        planned = Some((dir, block, k));
                        free.push(tag);
                        gated = Some(due);
                        break;
                    }
                }
                let len = k * unit[dir.index()];
                if let Some(p) = &mut pacer {
                    p.issued(dir.index(), len);
                }
                let offset = region + block * align[dir.index()];
                let (dir, offset, len) = match zones.as_mut().map(|z| {
                    let d = dir.index();
                    z.place(d, offset, len, region, unit[d], spec.rw.is_random())
                }) {
                    None => (dir, offset, len),
                    Some(Ok(Some((d, o, l, reset)))) => {
                        outcome.zone_resets += u64::from(reset);
                        if let Planner::Sequential { next } = &mut planner {
                            // The next sequential I/O follows this one (fio's last_pos).
                            next[d] = (o + l).saturating_sub(region) / unit[d];
                        }
                        (
                            [Direction::Read, Direction::Write, Direction::Trim][d],
                            o,
                            l,
                        )
                    }
                    Some(r) => {
                        if let Err(message) = r {
                            let err = RunError {
                                message,
                                errno: None,
                                offset: Some(offset),
                                direction: None,
                                job: Some(cfg.job),
                            };
                            record_error(&mut outcome, shared, err);
                        }
                        // No zone takes it: the job ends (fio's io_u_eof).
                        free.push(tag);
                        budget = issued;
                        break;
                    }
                };
                let buf = match dir {
                    Direction::Trim => 0,
                    Direction::Read => buffers.read_buffer(tag),
                    Direction::Write => {
                        seq += 1;
                        let b = match &mut dedupe {
                            Some(d) => d.acquire(&mut buffers),
                            None => buffers.acquire_write(mix64(seed ^ seq)),
                        };
                        if cfg.phase == Phase::VerifyWrite {
                            verify::seal_block(
                                buffers.slice_mut(b),
                                spec,
                                offset,
                                (job << 48) | seq,
                                cfg.job as u16 + 1,
                            );
                        }
                        b
                    }
                };
                slots[tag as usize] = Slot {
                    start,
                    issue: 0,
                    offset,
                    len: len as u32,
                    buf,
                    dir,
                    file,
                    prio: crate::share::pick_prio(
                        &spec.share.prio,
                        dir.index(),
                        len,
                        &mut prio_rng,
                    ),
                    // A verify phase's read (verify_backlog's too) checks its block.
                    checks: dir == Direction::Read && cfg.phase != Phase::Workload && !plain_read,
                };
                engine.queue(&IoRequest {
                    tag,
                    buf_index: buf,
                    addr: if dir == Direction::Trim {
                        std::ptr::null_mut()
                    } else {
                        buffers.addr(buf)
                    },
                    // A zbd trim is a zone reset: nothing reaches the target
                    // (an empty trim completes at once), as in fio.
                    len: if dir == Direction::Trim && zones.as_ref().is_some_and(|z| z.is_zbd()) {
                        0
                    } else {
                        len as u32
                    },
                    offset,
                    file,
                    dir,
                    ioprio: slots[tag as usize].prio,
                });
                queued_tags.push(tag);
                issued += 1;
                issued_bytes += len;
                if seq_end {
                    // fio's file is done: no I/O after this one.
                    budget = issued;
                }
                issued_since_pause = true;
                if let Some(t) = think {
                    let b = t.counted(completed_all, issued);
                    if t.due(b, think_last) {
                        thinking = Some(b);
                        break;
                    }
                }
            }
            inflight += queued_tags.len();
        }
        if inflight == 0 {
            quiesce = false;
            if std::mem::take(&mut reset_stats) {
                outcome.dirs = [DirTotals::new(), DirTotals::new(), DirTotals::new()];
                outcome.stats_from_ns = ns(Instant::now());
            }
            if let Some(f) = flow.as_ref().filter(|_| flow_held || flow_sleep) {
                // Held back: sleep flow_sleep (cut to the run time left), or
                // let the flow's other jobs run and look again.
                let left_us = deadline_ns.saturating_sub(ns(Instant::now())) / 1000;
                crate::share::pause(f.sleep_us().min(left_us), &|| {
                    shared.interrupt.load(Ordering::Relaxed)
                        || shared.terminate.load(Ordering::Relaxed)
                        || shared.halt.load(Ordering::Relaxed)
                });
                flow_sleep = false;
            }
            if let (Some(t), Some(b)) = (think, thinking.take()) {
                // Everything in flight is done: spin, then sleep (cut to
                // the run time left), as fio's handle_thinktime.
                let now = ns(Instant::now());
                let left_us = deadline_ns.saturating_sub(now) / 1000;
                think_pause(t, left_us, shared);
                think_last = b;
                issued_since_pause = false;
            }
            if stopping || issued >= budget || issued_bytes >= byte_budget {
                break;
            }
            if let Some(due) = gated {
                // Nothing in flight and the next I/O not due: sleep until it
                // is (in short steps, so a stop is noticed).
                let wake = due.min(deadline_ns);
                let now = ns(Instant::now());
                if wake > now {
                    std::thread::sleep(std::time::Duration::from_nanos(
                        (wake - now).min(10_000_000),
                    ));
                }
            }
            now_ns = ns(Instant::now());
            continue;
        }
        // One io_uring_enter hands over the new requests and waits for
        // completions (as t/io_uring does); the requests count as issued when
        // it is entered, so the kernel's submission work falls into clat.
        let enter = ns(Instant::now());
        for &t in &queued_tags {
            slots[t as usize].issue = enter;
        }
        if !queued_tags.is_empty() {
            outcome.batches.submit[BatchCounts::bucket(queued_tags.len())] += 1;
        }
        queued_tags.clear();
        // Ahead of the rate, fio first completes everything in flight
        // (io_u_quiesce), then sleeps.
        // With io_submit_mode=offload the next I/O goes out when due,
        // whatever is in flight: wait for a completion or that time.
        let offload_due = gated.filter(|_| spec.pacing.offload && thinking.is_none());
        let want = if gated.is_some() || thinking.is_some() || quiesce || flow_sleep {
            inflight
        } else {
            batch_complete.min(inflight)
        };
        let waited = match offload_due {
            Some(due) => {
                let left = due.min(deadline_ns).saturating_sub(ns(Instant::now()));
                engine.submit_and_wait_for(1, left.max(1))
            }
            None => engine.submit_and_wait(want as u32),
        };
        if let Err(e) = waited {
            record_error(&mut outcome, shared, engine_error(e, cfg.job));
            // Buffers must outlive in-flight requests: reap what still arrives.
            drain(&mut engine, &mut completions, &mut inflight);
            break;
        }
        completions.clear();
        engine.reap(&mut completions);
        if !completions.is_empty() {
            outcome.batches.complete[BatchCounts::bucket(completions.len())] += 1;
        }
        now_ns = ns(Instant::now());
        let done = now_ns;
        completed_all += completions.len() as u64;
        if let Some(t) = think
            && thinking.is_none()
            && issued_since_pause
        {
            let b = t.counted(completed_all, issued);
            if t.due(b, think_last) {
                thinking = Some(b);
            }
        }
        // Close intervals the clock has passed.
        if done >= ramp_ns {
            while done >= ramp_ns + (cur_interval + 1) * interval_ns {
                send_interval(shared, cfg.job, cur_interval, interval_ns, &mut iv);
                cur_interval += 1;
            }
        }
        for c in &completions {
            let slot = slots[c.tag as usize];
            let dir = slot.dir;
            let checking = slot.checks;
            if let Planner::Listed(l) = &mut planner {
                let ok = c.result == dir.success(slot.len);
                l.completed(
                    dir == Direction::Write,
                    ok,
                    (slot.offset - region) / align[1],
                );
            }
            inflight -= 1;
            free.push(c.tag);
            if dir == Direction::Write {
                buffers.release_write(slot.buf);
            }
            let mut len = slot.len as usize;
            // fio's create_on_open: a read past the file's end (short_read).
            let past = crate::short_read::past_end(spec, dir, c.result, slot.len);
            let past = past.filter(|_| !checking);
            if let Some(p) = past.filter(|_| done >= ramp_ns) {
                let t = &mut outcome.dirs[dir.index()];
                (t.ios, t.short) = (t.ios + p.extra_ios, t.short + p.short);
            }
            if past.is_some_and(|p| p.counted) {
                len = 0;
            } else if c.result != dir.success(slot.len) {
                // fio's continue_on_error: an error its lists cover is
                // counted and the job goes on (a short I/O counts as EIO).
                let errno = if c.result < 0 { -c.result } else { libc::EIO };
                let kind = match dir {
                    Direction::Read => ErrorKind::Read,
                    _ => ErrorKind::Write,
                };
                if !checking {
                    let full = kind == ErrorKind::Write
                        && spec.fill_device
                        && (errno == libc::ENOSPC || errno == libc::EDQUOT);
                    let goes_on = spec.errors.non_fatal(kind, errno);
                    if goes_on || full {
                        // fio counts the I/O (total_ios), not its bytes.
                        if goes_on {
                            count_error(&mut outcome.errors, errno);
                        } else {
                            // fio's fill_device: the job ends, normally.
                            outcome.filled = true;
                            budget = issued;
                        }
                        if done >= ramp_ns {
                            outcome.dirs[dir.index()].ios += 1;
                        }
                        continue;
                    }
                    if outcome.error.is_none() && spec.errors.counts_fatal(kind) {
                        count_error(&mut outcome.errors, errno);
                    }
                }
                if checking {
                    outcome.blocks_checked += 1;
                    outcome.bad_blocks.push(BadBlock {
                        offset: slot.offset,
                        lba: slot.offset / u64::from(cfg.lbs),
                        reason: io_failure(c.result, len),
                    });
                    continue;
                }
                if outcome.error.is_none() {
                    // With several files, which one.
                    let of = spec.files.files.get(slot.file as usize);
                    let msg = format!(
                        "{} of {} bytes at offset {}{} failed: {}",
                        dir.name(),
                        len,
                        slot.offset,
                        of.map_or(String::new(), |f| format!(" of {}", f.path)),
                        io_failure(c.result, len)
                    );
                    record_error(
                        &mut outcome,
                        shared,
                        RunError {
                            message: msg,
                            errno: (c.result < 0).then_some(-c.result),
                            offset: Some(slot.offset),
                            direction: Some(dir.name().to_string()),
                            job: Some(cfg.job),
                        },
                    );
                }
                continue;
            }
            if checking {
                outcome.blocks_checked += 1;
                if let Err((at, reason)) =
                    verify::check_block(buffers.slice(slot.buf), spec, slot.offset)
                {
                    if spec.verify_dump {
                        let got = buffers.slice(slot.buf).to_vec();
                        outcome.dumps.push((slot.offset, got));
                    }
                    outcome.bad_blocks.push(BadBlock {
                        offset: at,
                        lba: at / u64::from(cfg.lbs),
                        reason,
                    });
                    // fio's rules: a block that does not verify ends the
                    // job (EILSEQ) unless continue_on_error covers verify,
                    // and then verify_fatal still ends it.
                    if spec.errors.non_fatal(ErrorKind::Verify, EILSEQ) {
                        count_error(&mut outcome.errors, EILSEQ);
                    } else if spec.errors.counts_fatal(ErrorKind::Read) {
                        count_error(&mut outcome.errors, 1);
                    }
                    if spec.errors.verify_ends_job() {
                        budget = issued;
                    }
                }
            }
            if let Some(s) = &mut search {
                search_ios += 1;
                match s.completed(done.saturating_sub(slot.start), done, search_ios) {
                    DepthStep::Quiesce => quiesce = true,
                    DepthStep::Fatal => latency_fatal(&mut outcome, shared, cfg.job),
                    _ => {}
                }
            }
            if done < ramp_ns {
                continue;
            }
            let lat = done.saturating_sub(slot.start);
            let (slat, clat) = (
                slot.issue.saturating_sub(slot.start),
                done.saturating_sub(slot.issue),
            );
            let t = &mut outcome.dirs[dir.index()];
            t.ios += 1;
            t.bytes += len as u64;
            t.slat.record(slat);
            t.clat.record(clat);
            t.lat.record(lat);
            if spec.share.prio.draws(dir.index()) {
                crate::share::record_prio(&mut t.prios, slot.prio, clat);
            }
            if let Some(l) = &mut logger {
                let t_ms = (done - ramp_ns) / 1_000_000;
                l.record_prio(
                    &spec.share.prio.log_value(slot.prio),
                    t_ms,
                    dir.index(),
                    len as u64,
                    slot.offset,
                    [slat, clat, lat],
                );
            }
            let i = &mut iv[dir.index()];
            i.ios += 1;
            i.bytes += len as u64;
            i.lat.record(lat);
        }
        if let Some(s) = &mut search
            && done >= ramp_ns
        {
            match s.check(done, search_ios) {
                DepthStep::Quiesce => quiesce = true,
                DepthStep::FinalWindow => (quiesce, reset_stats) = (true, true),
                DepthStep::Done => budget = issued,
                _ => {}
            }
        }
        if let Some(c) = &mut min_rate
            && done >= ramp_ns
        {
            let d = &outcome.dirs;
            let totals = [0, 1, 2].map(|k| (d[k].ios, d[k].bytes));
            if let Some(why) = c.check(done, totals) {
                record_error(
                    &mut outcome,
                    shared,
                    RunError {
                        message: format!("job {}: {why}", cfg.job),
                        errno: Some(libc::EIO),
                        offset: None,
                        direction: None,
                        job: Some(cfg.job),
                    },
                );
            }
        }
    }
    let end = ns(Instant::now()).max(ramp_ns);
    outcome.end_ns = end;
    outcome.latency_depth = search.map(|s| s.depth());
    if let Some(l) = logger {
        outcome.logs = l.finish((end - ramp_ns) / 1_000_000);
    }
    // The last, possibly partial interval.
    let last_len = end.saturating_sub(ramp_ns + cur_interval * interval_ns);
    if last_len > 0 || cur_interval == 0 {
        send_interval(shared, cfg.job, cur_interval, last_len.max(1), &mut iv);
    }
    let _ = shared.events.send(JobEvent::Done(cfg.job));
    drop(engine); // unregisters buffers before they are freed

    if buffers.write_count() > 0 {
        let (lz4, deflate) = measure_written(&mut buffers);
        outcome.lz4 = Some(lz4);
        outcome.deflate = Some(deflate);
    }
    outcome
}

/// After an engine failure: collect outstanding completions for up to a
/// second so no request still points into buffers that are about to be freed.
fn drain<E: IoEngine>(engine: &mut E, completions: &mut Vec<Completion>, inflight: &mut usize) {
    let until = Instant::now() + std::time::Duration::from_secs(1);
    while *inflight > 0 && Instant::now() < until {
        completions.clear();
        if engine.submit_and_wait(1).is_err() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        engine.reap(completions);
        *inflight = inflight.saturating_sub(completions.len());
    }
}

fn new_interval_dir() -> IntervalDir {
    IntervalDir {
        ios: 0,
        bytes: 0,
        lat: LatencyRecorder::coarse(),
    }
}

fn send_interval(
    shared: &Shared<'_>,
    job: u32,
    index: u64,
    duration_ns: u64,
    iv: &mut [IntervalDir; 3],
) {
    let report = IntervalReport {
        job,
        index,
        duration_ns,
        dirs: iv.clone(),
    };
    for d in iv.iter_mut() {
        d.ios = 0;
        d.bytes = 0;
        d.lat.reset();
    }
    let _ = shared.events.send(JobEvent::Interval(Box::new(report)));
}

#[inline]
fn pick_dir(rng: &mut Xoshiro256PlusPlus, mix: Mix) -> Direction {
    let read_share = match mix {
        Mix::Share(s) => s,
        Mix::Trim => return Direction::Trim,
        Mix::TrimThenWrite(_) => return Direction::Write,
    };
    match read_share {
        100 => Direction::Read,
        0 => Direction::Write,
        s => {
            if uniform_below(rng, 100) < u64::from(s) {
                Direction::Read
            } else {
                Direction::Write
            }
        }
    }
}

fn io_failure(result: i32, len: usize) -> String {
    if result < 0 {
        std::io::Error::from_raw_os_error(-result).to_string()
    } else {
        format!("short transfer: {result} of {len} bytes")
    }
}

pub fn engine_error(e: EngineError, job: u32) -> RunError {
    RunError {
        message: e.to_string(),
        errno: match &e {
            EngineError::Sys { source, .. } => source.raw_os_error(),
            EngineError::Unavailable(_) => None,
        },
        offset: None,
        direction: None,
        job: Some(job),
    }
}

/// fio's lat_fatal for latency_target: an I/O over the target at depth 1.
fn latency_fatal(outcome: &mut JobOutcome, shared: &Shared<'_>, job: u32) {
    record_error(
        outcome,
        shared,
        RunError {
            message: format!(
                "job {job}: max latency exceeded (an I/O over latency_target at depth 1)"
            ),
            errno: Some(libc::ETIMEDOUT),
            offset: None,
            direction: None,
            job: Some(job),
        },
    );
}

fn record_error(outcome: &mut JobOutcome, shared: &Shared<'_>, err: RunError) {
    if outcome.error.is_none() {
        outcome.error = Some(err);
    }
    shared.halt.store(true, Ordering::Relaxed);
}

/// Per-page lz4 and deflate of up to [`SAMPLE_BYTES`] of write data as the
/// run wrote it (see [`JobBuffers::sample_written`]).
fn measure_written(buffers: &mut JobBuffers) -> (PageTally, PageTally) {
    let mut lz4 = PageTally::default();
    let mut deflate = PageTally::default();
    let mut c_lz4 = PageCompressor::new(Codec::Lz4);
    let mut c_def = PageCompressor::new(Codec::Deflate);
    buffers.sample_written(SAMPLE_BYTES, |data| {
        c_lz4.tally(data, &mut lz4);
        c_def.tally(data, &mut deflate);
    });
    (lz4, deflate)
}

/// One think-time pause: `thinktime_spin` on the CPU, the rest asleep in
/// short steps so an interrupt or a halt ends it (fio's usec_spin, usec_sleep).
fn think_pause(t: &csdchar_core::think::ThinkTime, left_us: u64, shared: &Shared) {
    let (spin, sleep) = t.split(left_us);
    let spin_end = Instant::now() + std::time::Duration::from_micros(spin);
    while Instant::now() < spin_end {
        std::hint::spin_loop();
    }
    if sleep > 0 {
        crate::share::pause(sleep, &|| {
            shared.interrupt.load(Ordering::Relaxed)
                || shared.terminate.load(Ordering::Relaxed)
                || shared.halt.load(Ordering::Relaxed)
        });
    }
}
