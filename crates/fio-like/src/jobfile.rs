//! Runs the jobs of a fio job file in fio's order: every job starts at once
//! unless it waits — for everything before a `stonewall`, or for the job named
//! by `wait_for` — each job one engine run ([`run_block`]), jobs that do not
//! wait on each other running side by side.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use csdchar_core::fio_job::{ExitWhat, JobFilePlan, JobPlan};
use csdchar_core::result::RunStatus;
use csdchar_core::result::block::{BlockResult, JobFileJob, JobOptionValue};

use crate::error::BlockError;
use crate::run::{RunControl, run_block};

/// One job's outcome: its result, or why it could not start.
pub type JobOutcome = Result<BlockResult, BlockError>;

/// A job file's run.
pub struct JobFileRun {
    /// The results of the jobs that ran, in plan order.
    pub results: Vec<BlockResult>,
    /// The command's exit code: the first job's that did not complete, an
    /// error's (2 for a refusal), or 130 after Ctrl-C.
    pub exit_code: i32,
}

/// Runs every job of `plan`, `force` applied to each, and gathers what they
/// gave; a job that never started (an earlier one failed to start, or Ctrl-C)
/// has no result. `on_line` hears, as it happens, each job's start and end
/// and every error (called on this thread only).
pub fn run_job_file(
    plan: &JobFilePlan,
    file: &str,
    force: bool,
    interrupt: &Arc<AtomicBool>,
    on_line: &mut dyn FnMut(&str),
) -> JobFileRun {
    // A run starts with every emulated zone empty, as a fio process does.
    let targets = || plan.jobs.iter().filter_map(|j| j.spec.target.as_deref());
    crate::zones::forget(targets());
    let outcomes = match precheck_jobs(plan, force) {
        Err(e) => {
            on_line(&format!("error: {e}"));
            return JobFileRun {
                results: Vec::new(),
                exit_code: e.exit_code(),
            };
        }
        Ok(()) => run_jobs(plan, file, force, interrupt, on_line),
    };
    crate::zones::forget(targets());
    let mut run = JobFileRun {
        results: Vec::new(),
        exit_code: 0,
    };
    for o in outcomes.into_iter().flatten() {
        match o {
            Ok(r) => {
                if run.exit_code == 0 {
                    run.exit_code = crate::error::exit_code(r.status);
                }
                if let (RunStatus::IoError, Some(e)) = (r.status, &r.error) {
                    on_line(&format!("error: {}", e.message));
                }
                if let (RunStatus::VerifyFailed, Some(v)) = (r.status, &r.verify) {
                    let unit = crate::verify::unit_len(&r.spec, r.spec.bs as usize) as u64;
                    let line = crate::verify::failure_line(r.spec.target.as_deref(), unit, v);
                    on_line(&format!("error: {line}"));
                }
                run.results.push(r);
            }
            Err(e) => {
                on_line(&format!("error: {e}"));
                run.exit_code = e.exit_code();
            }
        }
    }
    if interrupt.load(Ordering::Relaxed) && run.exit_code == 0 {
        run.exit_code = crate::error::exit_code(RunStatus::Interrupted);
    }
    run
}

/// Everything that can refuse a job, for every job, before the first starts
/// (a later job's refusal must not come after earlier jobs wrote): each
/// job's target, region, room and write safety ([`crate::target::precheck`]);
/// the room all the files the jobs create or extend take together, per file
/// system (a file keeps the largest region any job gives it); and the I/O
/// buffers of the jobs that can run at the same time.
pub fn precheck_jobs(plan: &JobFilePlan, force: bool) -> Result<(), BlockError> {
    // File -> the end the jobs so far give it, and its growth.
    let mut files: Vec<crate::target::Growth> = Vec::new();
    // A job with several files (fio's nrfiles): each file as a job's one.
    let specs = plan.jobs.iter().flat_map(|job| {
        let spec = csdchar_core::result::block::BlockSpec {
            force,
            ..job.spec.clone()
        };
        crate::fileset::file_specs(&spec)
            .into_iter()
            .map(move |s| (job, s))
    });
    check_nodes(plan)?;
    for (job, spec) in specs {
        let planned = spec.target.as_deref().and_then(|t| {
            let key = crate::target::file_key(std::path::Path::new(t));
            files.iter().find(|g| g.file == key).map(|g| g.end)
        });
        if let (false, Some(t), None) = (job.allow_file_create, spec.target.as_deref(), planned)
            && !std::path::Path::new(t).exists()
        {
            return Err(in_job_terms(
                BlockError::Usage(format!(
                    "allow_file_create: filename {t} does not exist and allow_file_create=0 \
                     forbids creating it (fio: file creation disallowed by allow_file_create=0)"
                )),
                job,
            ));
        }
        if let (csdchar_core::zones::ZoneMode::Zbd, Some(t)) = (spec.zones.mode, &spec.target) {
            crate::zones::refuse_real_zoned(t)
                .map_err(|m| in_job_terms(BlockError::Refused(m), job))?;
            // fio's zbd_verify_bs.
            if (spec.verify || spec.verify_only) && spec.zones.size % spec.bs != 0 {
                return Err(in_job_terms(
                    BlockError::Usage(format!(
                        "bs: with verify and zonemode=zbd the block size {} must divide the zone \
                         size {}",
                        spec.bs, spec.zones.size
                    )),
                    job,
                ));
            }
        }
        let grows = crate::target::precheck(&spec, planned).map_err(|e| in_job_terms(e, job))?;
        if let Some(g) = grows {
            let fs_dev = g.fs_dev;
            match files.iter_mut().find(|f| f.file == g.file) {
                Some(f) => f.end = f.end.max(g.end),
                None => files.push(g),
            }
            check_room_together(&files, fs_dev, job)?;
        }
    }
    check_buffers_together(plan, force)
}

/// Refuses NUMA nodes this machine lacks (fio's run refuses them as
/// libnuma's numa_parse_nodestring does; its --parse-only does not look).
pub fn check_nodes(plan: &JobFilePlan) -> Result<(), BlockError> {
    for job in &plan.jobs {
        crate::share::check_numa(&job.spec.share.numa)
            .map_err(|e| in_job_terms(BlockError::Usage(e), job))?;
    }
    Ok(())
}

/// Refuses when the files on file system `fs_dev` grow by more than it has
/// free, all the jobs so far together.
fn check_room_together(
    files: &[crate::target::Growth],
    fs_dev: u64,
    job: &JobPlan,
) -> Result<(), BlockError> {
    use csdchar_core::units::format_bytes;
    let on_fs: Vec<&crate::target::Growth> = files
        .iter()
        .filter(|g| g.fs_dev == fs_dev && !g.may_fill)
        .collect();
    let total: u64 = on_fs.iter().map(|g| g.end.saturating_sub(g.now)).sum();
    let Some(free) = on_fs
        .first()
        .and_then(|g| csdchar_devices::free_bytes(&g.dir))
    else {
        return Ok(());
    };
    if total <= free {
        return Ok(());
    }
    let files = match on_fs.len() {
        1 => "file".to_string(),
        n => format!("{n} files"),
    };
    Err(in_job_terms(
        BlockError::Usage(format!(
            "--size: with this job the job file's {files} on the file system of {} would grow by \
             {} together, but it has only {} free",
            on_fs[0].dir.display(),
            format_bytes(total as f64),
            format_bytes(free as f64)
        )),
        job,
    ))
}

/// Refuses when the jobs that can run at the same time need more I/O
/// buffers than [`crate::buffers::BUFFER_MEMORY_SHARE_PCT`] % of the
/// available memory (each job alone is checked by the run itself).
fn check_buffers_together(plan: &JobFilePlan, force: bool) -> Result<(), BlockError> {
    let Some(available) = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| crate::buffers::parse_mem_available(&t))
    else {
        return Ok(());
    };
    let bytes: Vec<u64> = plan
        .jobs
        .iter()
        .map(|j| {
            crate::buffers::run_buffer_bytes(&csdchar_core::result::block::BlockSpec {
                force,
                ..j.spec.clone()
            })
        })
        .collect();
    let (peak, at, together) = peak_together(&plan.jobs, &bytes);
    let allowed = available / 100 * crate::buffers::BUFFER_MEMORY_SHARE_PCT;
    if peak <= allowed {
        return Ok(());
    }
    use csdchar_core::units::format_bytes;
    let job = &plan.jobs[at];
    Err(in_job_terms(
        BlockError::Usage(format!(
            "--bs: this job and the {} that can run beside it need {} of I/O buffers together, the \
             machine has {} available (at most {}% of it is used); lower bs, iodepth or numjobs, \
             or order the jobs with stonewall",
            together - 1,
            format_bytes(peak as f64),
            format_bytes(available as f64),
            crate::buffers::BUFFER_MEMORY_SHARE_PCT
        )),
        job,
    ))
}

/// The most `bytes` any jobs that can run at once hold together, an upper
/// bound: for each job, itself and every job neither before nor after it.
/// Returns (bytes, the job where the peak is, how many jobs it counts).
/// Bit sets of the jobs before each: n²/8 bytes, 2 MiB at fio's 4,096 jobs.
pub fn peak_together(jobs: &[JobPlan], bytes: &[u64]) -> (u64, usize, usize) {
    let n = jobs.len();
    let words = n.div_ceil(64);
    // before[i]: every job that ends before i starts, transitively.
    let mut before = vec![0u64; n * words];
    for (i, job) in jobs.iter().enumerate() {
        let all = job.after_all.min(i);
        for w in 0..all / 64 {
            before[i * words + w] = u64::MAX;
        }
        if all % 64 != 0 {
            before[i * words + all / 64] |= (1u64 << (all % 64)) - 1;
        }
        for &a in job.after_also.iter().filter(|&&a| a < i) {
            before[i * words + a / 64] |= 1 << (a % 64);
            for w in 0..words {
                let v = before[a * words + w];
                before[i * words + w] |= v;
            }
        }
    }
    let ordered = |i: usize, k: usize| -> bool {
        before[i * words + k / 64] & (1 << (k % 64)) != 0
            || before[k * words + i / 64] & (1 << (i % 64)) != 0
    };
    let mut best = (0, 0, 0);
    for i in 0..n {
        let mut sum = 0u64;
        let mut count = 0;
        for (k, b) in bytes.iter().enumerate() {
            if k == i || !ordered(i, k) {
                sum = sum.saturating_add(*b);
                count += 1;
            }
        }
        if sum > best.0 {
            best = (sum, i, count);
        }
    }
    best
}

/// Gives the memory a finished job freed back to the system. A job's
/// latency histograms and buffers are large; glibc keeps what its threads
/// freed in their arenas, so without this a file of thousands of jobs grows
/// by about 200 KiB per job it ran though it holds only the results.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // Safety: malloc_trim only returns free heap pages to the kernel; it
    // takes no pointers and is safe to call from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// What a job's thread tells the loop in [`run_jobs`].
enum Event {
    /// The job starts its run (its start delay is over).
    Started(usize),
    /// The job ended, with what it gave (boxed: a result is large).
    Ended(usize, Box<JobOutcome>),
    /// The job never ran (stopped during its start delay).
    Skipped(usize),
    /// The job's last I/O completed (its result is being made).
    IoDone(usize),
}

/// Runs the jobs; one outcome per job in plan order, None for one that
/// never started. A job gets its thread when every job it waits for has
/// ended, so a job file of thousands of jobs holds threads only for the
/// jobs running; `on_line` hears each start and end as it happens.
fn run_jobs(
    plan: &JobFilePlan,
    file: &str,
    force: bool,
    interrupt: &Arc<AtomicBool>,
    on_line: &mut dyn FnMut(&str),
) -> Vec<Option<JobOutcome>> {
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum State {
        Waiting,
        Running,
        Done,
    }
    let n = plan.jobs.len();
    let mut states = vec![State::Waiting; n];
    // Every job below this has ended.
    let mut first_not_done = 0;
    let mut outcomes: Vec<Option<JobOutcome>> = (0..n).map(|_| None).collect();
    // Set when a job could not start: the jobs not yet started do not start.
    let halt = AtomicBool::new(false);
    // Set when another job's end ends this one (fio's exitall, exit_what).
    let ends: Vec<Arc<AtomicBool>> = (0..n).map(|_| Arc::default()).collect();
    // fio's flows: every job of the file counts in its flow from the start.
    let flows = Arc::new(crate::share::FlowTable::default());
    for job in &plan.jobs {
        flows.register(&job.spec.share.flow, job.spec.numjobs);
    }
    let (tx, rx) = std::sync::mpsc::channel::<Event>();
    let end_others = |i: usize, states: &[State]| {
        let Some(what) = plan.jobs[i].exit_what else {
            return;
        };
        let group = plan.jobs[i].group_id;
        for (j, other) in plan.jobs.iter().enumerate() {
            let hit = match what {
                ExitWhat::Group => other.group_id == group,
                ExitWhat::Stonewall => states[j] == State::Running,
                ExitWhat::All => true,
            };
            if hit {
                ends[j].store(true, Ordering::Relaxed);
            }
        }
    };
    std::thread::scope(|s| {
        let mut handles: Vec<Option<std::thread::ScopedJoinHandle<'_, ()>>> =
            (0..n).map(|_| None).collect();
        loop {
            let stopping = halt.load(Ordering::Relaxed) || interrupt.load(Ordering::Relaxed);
            while first_not_done < n && states[first_not_done] == State::Done {
                first_not_done += 1;
            }
            if !stopping {
                // The jobs started in this pass begin together once all are
                // set up (files laid out, buffers made), as fio starts the
                // jobs it forked: an exitall then finds the others running.
                let together = crate::share::StartGroup::new();
                // Jobs at or past `first_not_done`, up to where no job could start.
                for (i, job) in plan.jobs.iter().enumerate().skip(first_not_done) {
                    if job.after_all > first_not_done {
                        break;
                    }
                    if states[i] != State::Waiting
                        || first_not_done < job.after_all.min(n)
                        || job.after_also.iter().any(|&a| states[a] != State::Done)
                    {
                        continue;
                    }
                    states[i] = State::Running;
                    let (tx, halt, end) = (tx.clone(), &halt, Arc::clone(&ends[i]));
                    let flows = crate::share::FlowRun {
                        table: Arc::clone(&flows),
                        start: (job.start_delay_ms == 0).then(|| together.ticket()),
                    };
                    handles[i] = Some(s.spawn(move || {
                        let stop = || {
                            halt.load(Ordering::Relaxed)
                                || interrupt.load(Ordering::Relaxed)
                                || end.load(Ordering::Relaxed)
                        };
                        // startdelay: counted from when the job could start, Ctrl-C ends it.
                        let until = std::time::Instant::now()
                            + std::time::Duration::from_millis(job.start_delay_ms);
                        while std::time::Instant::now() < until && !stop() {
                            std::thread::sleep(
                                until
                                    .saturating_duration_since(std::time::Instant::now())
                                    .min(std::time::Duration::from_millis(20)),
                            );
                        }
                        if stop() {
                            let _ = tx.send(Event::Skipped(i));
                            return;
                        }
                        let _ = tx.send(Event::Started(i));
                        let spec = csdchar_core::result::block::BlockSpec {
                            force,
                            ..job.spec.clone()
                        };
                        let ctl = RunControl {
                            interrupt: Arc::clone(interrupt),
                            terminate: Arc::clone(&end),
                            flows: Some(flows),
                            on_interval: None,
                            start_late_limit: crate::run::DEFAULT_START_LATE_LIMIT,
                            on_io_done: Some(Box::new({
                                let tx = tx.clone();
                                move || {
                                    let _ = tx.send(Event::IoDone(i));
                                }
                            })),
                        };
                        let outcome = run_block(&spec, ctl)
                            .map(|mut r| {
                                r.job_file = Some(provenance(plan, job, file));
                                r
                            })
                            .map_err(|e| in_job_terms(e, job));
                        if outcome.is_err() {
                            halt.store(true, Ordering::Relaxed);
                        }
                        let _ = tx.send(Event::Ended(i, Box::new(outcome)));
                    }));
                }
                together.open();
            }
            if !states.contains(&State::Running) {
                break;
            }
            let Ok(event) = rx.recv() else { break };
            // A thread that ended is joined at once: an ended, unjoined
            // thread keeps its stack until the scope ends.
            let mut join = |i: usize| {
                if let Some(h) = handles[i].take() {
                    let _ = h.join();
                }
            };
            match event {
                Event::Started(i) => on_line(&start_line(&plan.jobs[i])),
                Event::Skipped(i) => {
                    join(i);
                    states[i] = State::Done;
                }
                // fio's exitall: a job that ends ends others
                // (fio_terminate_threads with the job's exit_what), from its
                // last I/O on.
                Event::IoDone(i) => end_others(i, &states),
                Event::Ended(i, outcome) => {
                    join(i);
                    states[i] = State::Done;
                    end_others(i, &states);
                    // Between runs (not while jobs run side by side, where
                    // each trim would stall the others' allocations).
                    if !states.contains(&State::Running) {
                        release_freed_memory();
                    }
                    if let Ok(r) = &*outcome {
                        on_line(&format!("job {}: {:?}", label(&plan.jobs[i]), r.status));
                    }
                    outcomes[i] = Some(*outcome);
                }
            }
        }
    });
    outcomes
}

fn label(job: &JobPlan) -> String {
    if job.apart {
        format!("{} (clone {})", job.name, job.clone)
    } else {
        job.name.clone()
    }
}

/// One line saying what a job runs, fio's names.
pub fn start_line(job: &JobPlan) -> String {
    let s = &job.spec;
    let mut line = format!(
        "job {}: rw={} bs={} iodepth={} numjobs={} on {}",
        label(job),
        s.rw.name(),
        s.bs,
        s.iodepth,
        s.numjobs,
        s.target.as_deref().unwrap_or("the null engine")
    );
    if s.files.files.len() > 1 {
        line.push_str(&format!(" and {} more files", s.files.files.len() - 1));
    }
    if let Some(e) = &job.replaced_engine {
        line.push_str(&format!(" (ioengine={e} runs on io_uring)"));
    }
    if let Some(v) = &job.replaced_verify {
        line.push_str(&format!(" (verify={v} checks with crc32c)"));
    }
    if job.start_delay_ms > 0 {
        line.push_str(&format!(
            " after a start delay of {} ms",
            job.start_delay_ms
        ));
    }
    line
}

fn provenance(plan: &JobFilePlan, job: &JobPlan, file: &str) -> JobFileJob {
    JobFileJob {
        file: file.to_string(),
        job: job.name.clone(),
        clone: job.clone,
        group_id: job.group_id,
        group_reporting: job.group_reporting,
        job_options: job
            .job_options
            .iter()
            .map(|(name, value)| JobOptionValue {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
        description: job.description.clone(),
        replaced_engine: job.replaced_engine.clone(),
        replaced_verify: job.replaced_verify.clone(),
        start_delay_ms: job.start_delay_ms,
        ignored: plan.ignored.iter().map(|u| u.to_string()).collect(),
    }
}

/// The engine names the command line's options; a job file names fio's.
fn in_job_terms(e: BlockError, job: &JobPlan) -> BlockError {
    const NAMES: [(&str, &str); 8] = [
        ("TARGET", "filename"),
        ("--verify-only", "verify"),
        ("--offset", "offset"),
        ("--direct", "direct"),
        ("--size", "size"),
        ("--bs", "bs"),
        ("--iodepth", "iodepth"),
        ("--numjobs", "numjobs"),
    ];
    let say = |m: String| {
        let mut m = m;
        for (cli, fio) in NAMES {
            m = m.replace(cli, fio);
        }
        // The line of the option the message is about, else the job's header.
        let option = m.split([':', '/', ' ']).next().unwrap_or("");
        format!("job {} ({}): {m}", label(job), job.place_of(option))
    };
    match e {
        BlockError::Usage(m) => BlockError::Usage(say(m)),
        BlockError::Refused(m) => BlockError::Refused(say(m)),
        BlockError::Unavailable(m) => BlockError::Unavailable(say(m)),
        BlockError::Io(m) => BlockError::Io(say(m)),
    }
}

/// Reads a job file (and its includes) with this process's environment and
/// machine facts, and plans its jobs. The error is one line naming the file,
/// line and option.
pub fn load_job_file(
    path: &std::path::Path,
    ignore_unsupported: bool,
) -> Result<JobFilePlan, String> {
    use csdchar_core::fio_job::{ini, plan, value::Keywords};
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--job-file: cannot read {shown}: {e}"))?;
    let pagesize = rustix::param::page_size().max(4096) as u64;
    let mb_memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib / 1024);
    let exp = ini::Expansion {
        var: &|name| std::env::var(name).ok(),
        keywords: Keywords {
            pagesize,
            mb_memory,
            ncpus: u64::from(crate::sysinfo::cores()),
        },
    };
    // An include is looked up as written, then beside the including file (fio's rule).
    let mut load = |name: &str, from: &str| {
        let direct = std::path::Path::new(name);
        let beside = std::path::Path::new(from)
            .parent()
            .map(|d| d.join(name))
            .unwrap_or_else(|| direct.to_path_buf());
        let found = if direct.exists() {
            direct.to_path_buf()
        } else {
            beside
        };
        std::fs::read_to_string(&found)
            .map(|t| (found.display().to_string(), t))
            .map_err(|e| e.to_string())
    };
    let sections =
        ini::parse(&shown, &text, &exp, &mut load).map_err(|e| format!("--job-file: {e}"))?;
    plan(&sections, ignore_unsupported).map_err(|e| format!("--job-file {shown}: {e}"))
}

/// The files a job file's run reads or writes: the job file and every
/// job's target and other files (what a result must never be written over).
pub fn files<'a>(job_file: &'a std::path::Path, plan: &'a JobFilePlan) -> Vec<&'a std::path::Path> {
    let targets = plan.jobs.iter().flat_map(|j| {
        let more = j.spec.files.files.iter().skip(1).map(|f| f.path.as_str());
        j.spec.target.as_deref().into_iter().chain(more)
    });
    std::iter::once(job_file)
        .chain(targets.map(std::path::Path::new))
        .collect()
}

/// What `--parse-only` prints: each run, its group and what it waits for.
pub fn describe(plan: &JobFilePlan) -> String {
    let mut text = String::new();
    for (i, j) in plan.jobs.iter().enumerate() {
        let mut waits: Vec<String> = match j.after_all {
            0 => Vec::new(),
            1 => vec!["0".into()],
            n => vec![format!("0-{}", n - 1)],
        };
        waits.extend(j.after_also.iter().map(|k| k.to_string()));
        let after = if waits.is_empty() {
            "starts at once".to_string()
        } else {
            format!("after runs {}", waits.join(", "))
        };
        let one = if j.group_reporting {
            " (reported as one)"
        } else {
            ""
        };
        text.push_str(&format!(
            "run {i}: {}; group {}{one}; {after}\n",
            start_line(j),
            j.group_id
        ));
    }
    text
}

/// The notes a job file's run starts with: what was ignored, and each
/// engine or checksum csdchar runs in place of the one named, once.
pub fn notes(plan: &JobFilePlan) -> Vec<String> {
    let mut notes: Vec<String> = plan
        .ignored
        .iter()
        .map(|u| format!("ignored {u}"))
        .collect();
    for j in &plan.jobs {
        let replaced = [
            j.replaced_engine.as_ref().map(|e| {
                format!("ioengine={e} runs on io_uring (same offsets, sizes and data; csdchar's engine)")
            }),
            j.replaced_verify.as_ref().map(|v| {
                format!("verify={v} checks every block with crc32c (csdchar's verify header and checksum)")
            }),
        ];
        for n in replaced.into_iter().flatten() {
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use csdchar_core::fio_job::{ini, plan, value::Keywords};

    fn plan_of(text: &str) -> JobFilePlan {
        let exp = ini::Expansion {
            var: &|_| None,
            keywords: Keywords {
                pagesize: 4096,
                mb_memory: 1024,
                ncpus: 2,
            },
        };
        let sections =
            ini::parse("t.fio", text, &exp, &mut |n, _| Err(format!("{n}: none"))).unwrap();
        plan(&sections, false).unwrap()
    }

    #[test]
    fn buffers_add_up_over_the_jobs_that_can_run_at_once() {
        // a and b run together; c after both; d with c; e waits for c only.
        let p = plan_of(
            "[global]\nioengine=null\nsize=1m\n[a]\n[b]\n[c]\nstonewall\n[d]\n[e]\nwait_for=c\n",
        );
        let bytes = [1, 2, 4, 8, 16];
        // d overlaps c and e (an upper bound: c and e never overlap).
        assert_eq!(peak_together(&p.jobs, &bytes), (28, 3, 3));
        let p = plan_of("[global]\nioengine=null\nsize=1m\n[a]\n[b]\n[c]\n");
        assert_eq!(peak_together(&p.jobs, &[5, 6, 7]), (18, 0, 3));
        // Everything stonewalled: one at a time.
        let p = plan_of("[global]\nioengine=null\nsize=1m\nstonewall\n[a]\n[b]\n[c]\n");
        assert_eq!(peak_together(&p.jobs, &[5, 9, 7]), (9, 1, 1));
        // Beyond 64 jobs the sets span words.
        let mut text = String::from("[global]\nioengine=null\nsize=1m\n");
        for i in 0..130 {
            text.push_str(&format!(
                "[j{i}]\n{}",
                if i == 70 { "stonewall\n" } else { "" }
            ));
        }
        let p = plan_of(&text);
        let (peak, _, n) = peak_together(&p.jobs, &vec![1; 130]);
        assert_eq!((peak, n), (70, 70));
    }
}
