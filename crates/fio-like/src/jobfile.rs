//! Runs the jobs of a fio job file in fio's order: every job starts at once
//! unless it waits — for everything before a `stonewall`, or for the job named
//! by `wait_for` — each job one engine run ([`run_block`]), jobs that do not
//! wait on each other running side by side.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use csdchar_core::fio_job::{JobFilePlan, JobPlan};
use csdchar_core::result::RunStatus;
use csdchar_core::result::block::{BlockResult, JobFileJob, JobOptionValue};

use crate::error::BlockError;
use crate::run::{RunControl, run_block};

/// How a job ended, as far as the jobs after it care.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Waiting,
    Done,
}

/// One job's outcome: its result, or why it could not start.
pub type JobOutcome = Result<BlockResult, BlockError>;

/// A job file's run.
pub struct JobFileRun {
    /// The results of the jobs that ran, in plan order.
    pub results: Vec<BlockResult>,
    /// What to say, in order: each job's start and end, and every error.
    pub lines: Vec<String>,
    /// The command's exit code: the first job's that did not complete, an
    /// error's (2 for a refusal), or 130 after Ctrl-C.
    pub exit_code: i32,
}

/// Runs every job of `plan`, `force` applied to each, and gathers what they
/// gave; a job that never started (an earlier one failed to start, or Ctrl-C)
/// has no result.
pub fn run_job_file(
    plan: &JobFilePlan,
    file: &str,
    force: bool,
    interrupt: &Arc<AtomicBool>,
) -> JobFileRun {
    // Lines are gathered: the jobs run on their own threads.
    let lines = Mutex::new(Vec::new());
    let say = |l: String| lines.lock().unwrap_or_else(|e| e.into_inner()).push(l);
    let outcomes = run_jobs(plan, file, force, interrupt, &say);
    let mut run = JobFileRun {
        results: Vec::new(),
        lines: lines.into_inner().unwrap_or_else(|e| e.into_inner()),
        exit_code: 0,
    };
    for o in outcomes.into_iter().flatten() {
        match o {
            Ok(r) => {
                if run.exit_code == 0 {
                    run.exit_code = crate::error::exit_code(r.status);
                }
                if let (RunStatus::IoError, Some(e)) = (r.status, &r.error) {
                    run.lines.push(format!("error: {}", e.message));
                }
                run.results.push(r);
            }
            Err(e) => {
                run.lines.push(format!("error: {e}"));
                run.exit_code = e.exit_code();
            }
        }
    }
    if interrupt.load(Ordering::Relaxed) && run.exit_code == 0 {
        run.exit_code = crate::error::exit_code(RunStatus::Interrupted);
    }
    run
}

/// Runs the jobs; one outcome per job in plan order, None for one that
/// never started. `on_event` hears each start and end as a line of text.
fn run_jobs(
    plan: &JobFilePlan,
    file: &str,
    force: bool,
    interrupt: &Arc<AtomicBool>,
    on_event: &(dyn Fn(String) + Sync),
) -> Vec<Option<JobOutcome>> {
    // Refusals first, for every job: a later job's unsafe target must not
    // be found after the earlier jobs have written.
    let refused: Vec<Option<JobOutcome>> = plan
        .jobs
        .iter()
        .map(|job| {
            let spec = csdchar_core::result::block::BlockSpec {
                force,
                ..job.spec.clone()
            };
            crate::target::check_write_safety(&spec)
                .and_then(|()| {
                    crate::buffers::check_buffer_memory(&spec).map_err(BlockError::Usage)
                })
                .err()
                .map(|e| Err(in_job_terms(e, job)))
        })
        .collect();
    if refused.iter().any(Option::is_some) {
        return refused;
    }
    let n = plan.jobs.len();
    let states = Mutex::new(vec![State::Waiting; n]);
    let changed = Condvar::new();
    // Set when a job could not start: the jobs not yet started do not start.
    let halt = AtomicBool::new(false);
    let outcomes: Vec<Mutex<Option<JobOutcome>>> = (0..n).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for (i, job) in plan.jobs.iter().enumerate() {
            let (states, changed, halt, outcomes) = (&states, &changed, &halt, &outcomes);
            s.spawn(move || {
                {
                    let mut st = states.lock().unwrap_or_else(|e| e.into_inner());
                    while job.after.iter().any(|&a| st[a] == State::Waiting)
                        && !halt.load(Ordering::Relaxed)
                        && !interrupt.load(Ordering::Relaxed)
                    {
                        st = changed
                            .wait_timeout(st, std::time::Duration::from_millis(50))
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                    }
                }
                // startdelay: counted from when the job could start, Ctrl-C ends it.
                let until = std::time::Instant::now()
                    + std::time::Duration::from_millis(job.start_delay_ms);
                while std::time::Instant::now() < until
                    && !halt.load(Ordering::Relaxed)
                    && !interrupt.load(Ordering::Relaxed)
                {
                    std::thread::sleep(
                        until
                            .saturating_duration_since(std::time::Instant::now())
                            .min(std::time::Duration::from_millis(20)),
                    );
                }
                let go = !halt.load(Ordering::Relaxed) && !interrupt.load(Ordering::Relaxed);
                if go {
                    on_event(start_line(job));
                    let spec = csdchar_core::result::block::BlockSpec {
                        force,
                        ..job.spec.clone()
                    };
                    let ctl = RunControl {
                        interrupt: Arc::clone(interrupt),
                        on_interval: None,
                    };
                    let outcome = run_block(&spec, ctl)
                        .map(|mut r| {
                            r.job_file = Some(provenance(plan, job, file));
                            r
                        })
                        .map_err(|e| in_job_terms(e, job));
                    match &outcome {
                        Ok(r) => on_event(format!("job {}: {:?}", label(job), r.status)),
                        Err(_) => halt.store(true, Ordering::Relaxed),
                    }
                    *outcomes[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
                }
                states.lock().unwrap_or_else(|e| e.into_inner())[i] = State::Done;
                changed.notify_all();
            });
        }
    });
    outcomes
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect()
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
    const NAMES: [(&str, &str); 7] = [
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
        format!("job {}: {m}", label(job))
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
    // Safety: sysconf only reads system configuration.
    let pagesize = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
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

/// What `--parse-only` prints: each run, its group and what it waits for.
pub fn describe(plan: &JobFilePlan) -> String {
    let mut text = String::new();
    for (i, j) in plan.jobs.iter().enumerate() {
        let after = if j.after.is_empty() {
            "starts at once".to_string()
        } else {
            format!("after runs {:?}", j.after)
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
