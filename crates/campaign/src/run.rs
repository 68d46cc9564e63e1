//! Running a plan: steps through a [`StepRunner`] (the CLI's, which parses
//! each argv with its own parser and calls the library path `csdchar db …`
//! and `csdchar block …` use), storage through a [`Provisioner`], progress to
//! a [`Progress`], and the manifest written after every change.
//!
//! Resume: a step that is done in `<out>/manifest.json`, with the same
//! command and a complete result file, is skipped; everything else runs
//! again. A changed campaign file or target is refused unless forced. A zram
//! target is made anew on every run, so the state steps already done
//! (`db prepare`, `db alter`, `db cleanup`) that come before a step still to
//! run are run again in their place on the fresh device ("replays"; their
//! status stays done).
//!
//! Faults: a failed step is recorded with its error and the campaign goes on
//! (stops with `fail_fast`); the target's later db steps are not run after a
//! failed state step, up to the next `db prepare` or `db study`. Ctrl-C: the
//! runner returns [`StepOutcome::Interrupted`], the step is marked
//! interrupted, storage is torn down and the campaign ends `Interrupted`.
//!
//! Over 1,000 lines: the step loop, resume, storage set-up and teardown and the fault paths
//! share one state (the manifest being written and the storage guard); they are kept together
//! so that every way out of a step passes the same teardown and manifest write.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use csdchar_devices::zfs::ZfsPool;
use csdchar_devices::zram::{ZramConfig, ZramMount};
use csdchar_devices::{DeviceError, DeviceErrorKind, Sysfs};

use crate::CampaignError;
use crate::manifest::{
    CampaignStatus, DeviceRecord, MANIFEST_FILE, MANIFEST_SCHEMA, Manifest, ManifestStep,
    ManifestTarget, Session, StepStatus, check_result, host_and_kernel, now,
};
use crate::plan::{Plan, PlannedStep, format_duration};
use crate::spec::{Campaign, CommandKind, Storage, Target};

/// How a step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepOutcome {
    /// It ran to its end (exit 0). A result file it should have written is
    /// still checked.
    Done,
    /// It failed: one line saying why.
    Failed(String),
    /// Ctrl-C/SIGTERM stopped it.
    Interrupted,
}

/// Runs csdchar commands. The CLI implements it with its clap parser and
/// the same library calls its subcommands make; tests use a mock.
pub trait StepRunner {
    /// Checks a step's argv before anything runs (parse it, validate the
    /// options). Nothing exists yet: a zram target's directory is still its
    /// placeholder, and the result directories (`<out>/<target>`) may not
    /// have been created (validate `--output` for its form only).
    fn check(&self, _step: &PlannedStep) -> Result<(), String> {
        Ok(())
    }

    /// Runs a step (its argv has real paths). Return soon after `interrupt`
    /// is set, with [`StepOutcome::Interrupted`].
    fn run(&mut self, step: &PlannedStep, interrupt: &AtomicBool) -> StepOutcome;
}

/// What the executor reports as it goes.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// Before the first step.
    Start {
        /// Steps in the plan.
        total: usize,
        /// Steps already done (a resume).
        done: usize,
        /// Estimated time of the steps to run.
        estimated: Duration,
    },
    /// A target's storage is ready.
    TargetReady {
        /// Target.
        target: &'a str,
        /// Its directory (a zram target's mount), if it has one.
        dir: Option<&'a Path>,
        /// What is there: device and model, or why not known.
        device: String,
    },
    /// Something making a target's storage did besides (a stale pool of a
    /// killed run removed).
    TargetNote {
        /// Target.
        target: &'a str,
        /// One line.
        note: &'a str,
    },
    /// A step is starting.
    StepStarted {
        /// Position, from 1.
        n: usize,
        /// Steps in the plan.
        total: usize,
        /// The step (real paths).
        step: &'a PlannedStep,
        /// Run again on fresh storage to restore state; not counted as a new result.
        replay: bool,
        /// Remaining time of the campaign, this step included.
        eta: Duration,
    },
    /// A step was skipped.
    StepSkipped {
        /// Position, from 1.
        n: usize,
        /// Steps in the plan.
        total: usize,
        /// The step.
        step: &'a PlannedStep,
        /// Why.
        reason: &'a str,
    },
    /// A step ended.
    StepFinished {
        /// Position, from 1.
        n: usize,
        /// Steps in the plan.
        total: usize,
        /// The step.
        step: &'a PlannedStep,
        /// How it ended.
        status: StepStatus,
        /// Why it failed.
        error: Option<&'a str>,
        /// How long it took.
        elapsed: Duration,
    },
    /// A target's steps are over and its storage is torn down.
    TargetDone {
        /// Target.
        target: &'a str,
        /// What teardown left behind.
        teardown_error: Option<&'a str>,
    },
    /// The campaign ended (the manifest says the same).
    Finished {
        /// How.
        status: CampaignStatus,
        /// Steps done (this run and earlier ones).
        done: usize,
        /// Steps that failed.
        failed: usize,
        /// Time of this run.
        elapsed: Duration,
    },
}

impl Event<'_> {
    /// The progress line `csdchar campaign` prints for this event.
    pub fn line(&self) -> String {
        match self {
            Event::Start {
                total,
                done,
                estimated,
            } => format!(
                "campaign: {total} steps, {done} done earlier, about {} to run",
                format_duration(*estimated)
            ),
            Event::TargetReady {
                target,
                dir,
                device,
            } => match dir {
                Some(d) => format!("target {target}: {} on {device}", d.display()),
                None => format!("target {target}: {device}"),
            },
            Event::TargetNote { target, note } => format!("target {target}: {note}"),
            Event::StepStarted {
                n,
                total,
                step,
                replay,
                eta: left,
            } => format!(
                "[{n}/{total}] {}{} (ETA {})",
                if *replay { "replay: " } else { "" },
                step.command_line(),
                format_duration(*left)
            ),
            Event::StepSkipped {
                n,
                total,
                step,
                reason,
            } => format!("[{n}/{total}] skipped {}: {reason}", step.key),
            Event::StepFinished {
                n,
                total,
                step,
                status,
                error,
                elapsed,
            } => match (status, error) {
                (StepStatus::Done, _) => format!(
                    "[{n}/{total}] done {} in {}",
                    step.key,
                    format_duration(*elapsed)
                ),
                (s, Some(err)) => format!("[{n}/{total}] {s:?} {}: {err}", step.key).to_lowercase(),
                (s, None) => format!("[{n}/{total}] {s:?} {}", step.key).to_lowercase(),
            },
            Event::TargetDone {
                target,
                teardown_error,
            } => match teardown_error {
                Some(err) => format!("target {target}: teardown left something behind: {err}"),
                None => format!("target {target}: done"),
            },
            Event::Finished {
                status,
                done,
                failed,
                elapsed,
            } => format!(
                "campaign {status:?}: {done} steps done, {failed} failed, {} this run",
                format_duration(*elapsed)
            )
            .to_lowercase(),
        }
    }
}

/// Receives [`Event`]s (the CLI prints them). Closures implement it.
pub trait Progress {
    /// One event.
    fn event(&mut self, event: &Event<'_>);
}

impl<F: FnMut(&Event<'_>)> Progress for F {
    fn event(&mut self, event: &Event<'_>) {
        self(event)
    }
}

/// Storage made for a target; removed by [`Provisioned::teardown`] or on drop.
pub trait Provisioned {
    /// The directory the target's steps use.
    fn dir(&self) -> &Path;
    /// Removes it; the error says what was left behind.
    fn teardown(self: Box<Self>) -> Result<(), DeviceError>;
    /// What making it did besides, one line each (a stale pool of a killed
    /// run removed).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Makes the storage of targets the campaign makes ([`Storage::is_made`]:
/// zram and zfs).
pub trait Provisioner {
    /// Whether it can be made here, checked before anything runs: an error
    /// that [`DeviceError::is_unavailable`] (root or a tool missing) refuses
    /// the campaign as bad input (exit 2); any other is a fault.
    fn preflight(&mut self, storage: &Storage) -> Result<(), DeviceError>;
    /// Makes it.
    fn provision(
        &mut self,
        campaign: &str,
        target: &str,
        storage: &Storage,
    ) -> Result<Box<dyn Provisioned>, DeviceError>;
}

/// The real one (root only): a zram device and its file system, mounted
/// with discard, or a ZFS pool on a sparse file with the target's dataset
/// properties, on a new `/var/tmp/csdchar-campaign-<campaign>-<target>.XXXXXX`.
#[derive(Debug, Default, Clone, Copy)]
pub struct StorageProvisioner;

impl Provisioned for ZfsPool {
    fn dir(&self) -> &Path {
        self.mountpoint()
    }
    fn teardown(self: Box<Self>) -> Result<(), DeviceError> {
        ZfsPool::teardown(*self)
    }
    fn notes(&self) -> Vec<String> {
        ZfsPool::notes(self).to_vec()
    }
}

/// A zfs target's pool name: `csdchar_<campaign>_<target>`, in the
/// characters pool names allow.
fn pool_name(campaign: &str, target: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("csdchar_{}_{}", clean(campaign), clean(target))
}

impl Provisioned for ZramMount {
    fn dir(&self) -> &Path {
        self.mountpoint()
    }
    fn teardown(self: Box<Self>) -> Result<(), DeviceError> {
        ZramMount::teardown(*self)
    }
}

impl Provisioner for StorageProvisioner {
    fn preflight(&mut self, storage: &Storage) -> Result<(), DeviceError> {
        match storage {
            Storage::Zram(z) => csdchar_devices::zram::preflight(z.filesystem),
            Storage::Zfs(_) => csdchar_devices::zfs::preflight(),
            Storage::None | Storage::Dir(_) => Ok(()),
        }
    }
    fn provision(
        &mut self,
        campaign: &str,
        target: &str,
        storage: &Storage,
    ) -> Result<Box<dyn Provisioned>, DeviceError> {
        let prefix = format!("csdchar-campaign-{campaign}-{target}");
        match storage {
            Storage::Zram(spec) => Ok(Box::new(ZramMount::create(&ZramConfig {
                disksize: spec.size,
                algorithm: spec.algorithm.clone(),
                filesystem: spec.filesystem,
                prefix,
            })?)),
            Storage::Zfs(spec) => Ok(Box::new(ZfsPool::create(
                &pool_name(campaign, target),
                &prefix,
                spec.size,
                &spec.properties,
            )?)),
            Storage::None | Storage::Dir(_) => Err(DeviceError::new(
                DeviceErrorKind::Invalid,
                "nothing to make for this target",
            )),
        }
    }
}

/// Options of a run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Stop at the first failed step.
    pub fail_fast: bool,
    /// Resume even though the campaign file or a target changed (steps whose
    /// command changed, and every step of a changed target, run again).
    pub force: bool,
    /// csdchar's version, for the manifest.
    pub csdchar_version: String,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct Summary {
    /// How.
    pub status: CampaignStatus,
    /// Steps done (this run and earlier ones).
    pub done: usize,
    /// Steps that were already done and were skipped.
    pub skipped: usize,
    /// Steps that failed.
    pub failed: usize,
    /// Steps not run (after an interrupt or with fail_fast).
    pub pending: usize,
    /// The manifest as written last.
    pub manifest: Manifest,
    /// Time of this run.
    pub elapsed: Duration,
}

impl Summary {
    /// Result files of done steps per target, in target order (first: the
    /// report's baseline). The CLI reports them with each file labelled by
    /// its target.
    pub fn results_by_target(&self) -> Vec<(String, Vec<PathBuf>)> {
        self.manifest.results_by_target()
    }
}

/// Runs a plan.
pub struct Executor<'a> {
    /// Runs the steps.
    pub runner: &'a mut dyn StepRunner,
    /// Receives progress.
    pub progress: &'a mut dyn Progress,
    /// Makes zram targets' storage.
    pub provisioner: &'a mut dyn Provisioner,
    /// Set by Ctrl-C/SIGTERM.
    pub interrupt: &'a AtomicBool,
    /// Options.
    pub options: RunOptions,
}

/// A held lock on an output directory.
struct OutLock(fs::File);

impl OutLock {
    fn take(out: &Path) -> Result<OutLock, CampaignError> {
        let path = out.join(".campaign.lock");
        let f = fs::File::create(&path)
            .map_err(|e| CampaignError::Io(format!("{}: {e}", path.display())))?;
        if rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
            return Err(CampaignError::Usage(format!(
                "--out {}: another campaign is running there",
                out.display()
            )));
        }
        Ok(OutLock(f))
    }
}

impl Drop for OutLock {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self.0, rustix::fs::FlockOperation::Unlock);
    }
}

/// Creates `out` or accepts it (see [`check_out`]).
fn prepare_out(out: &Path) -> Result<(), CampaignError> {
    check_out(out)?;
    fs::create_dir_all(out).map_err(|e| CampaignError::Io(format!("--out {}: {e}", out.display())))
}

/// Whether `out` can take the campaign: new, or a directory that is empty
/// or holds a manifest (of a run to resume). Creates nothing.
fn check_out(out: &Path) -> Result<(), CampaignError> {
    if out.exists() || out.is_symlink() {
        if !out.is_dir() {
            return Err(CampaignError::Usage(format!(
                "--out {}: exists and is not a directory",
                out.display()
            )));
        }
        let has_files = fs::read_dir(out)
            .map_err(|e| CampaignError::Io(format!("--out {}: {e}", out.display())))?
            .flatten()
            .any(|e| e.file_name() != ".campaign.lock");
        if has_files && !out.join(MANIFEST_FILE).exists() {
            return Err(CampaignError::Usage(format!(
                "--out {}: holds files but no {MANIFEST_FILE}; give a new or empty directory",
                out.display()
            )));
        }
    }
    Ok(())
}

fn device_record(path: &Path) -> Result<DeviceRecord, String> {
    Sysfs::from_env().identity_of(path).map_err(|e| {
        // A ZFS dataset has no block device of its own: say which it is.
        match csdchar_devices::zfs::dataset_of(path) {
            Some(d) => format!("ZFS dataset {d} (its figures are in each result's snapshots)"),
            None => e.to_string(),
        }
    })
}

fn describe_device(d: &DeviceRecord) -> String {
    let mut s = d.name.clone();
    if let Some(m) = &d.model {
        s.push_str(&format!(" ({m}"));
        if let Some(f) = &d.firmware_rev {
            s.push_str(&format!(", firmware {f}"));
        }
        s.push(')');
    }
    if let Some(a) = &d.zram_algorithm {
        s.push_str(&format!(" ({a})"));
    }
    s
}

impl Executor<'_> {
    /// Runs `plan` (made from `campaign`): checks every step, reads the
    /// manifest of an earlier run, then runs what is not done.
    pub fn run(&mut self, campaign: &Campaign, plan: &Plan) -> Result<Summary, CampaignError> {
        let started = Instant::now();
        self.check(campaign, plan)?;
        prepare_out(&plan.out)?;
        self.run_checked(campaign, plan, started)
    }

    /// Everything [`Self::run`] checks before it creates anything: every
    /// step's options, `--out`, and the zram targets that would run steps
    /// here. `--dry-run` checks the same.
    pub fn check(&mut self, campaign: &Campaign, plan: &Plan) -> Result<(), CampaignError> {
        {
            let runner = &*self.runner;
            plan.check(|s| runner.check(s))?;
        }
        check_out(&plan.out)?;
        // zram targets that will run steps must be possible here before
        // anything is created (--out included): bad input writes nothing.
        {
            let before = Manifest::read(&plan.out)?;
            if let Some(old) = &before {
                self.verify_resume(old, campaign, plan)?;
            }
            for t in &campaign.targets {
                if !t.storage.is_made() {
                    continue;
                }
                let pending = plan.steps_of(&t.name).any(|s| {
                    self.options.force
                        || before
                            .as_ref()
                            .and_then(|m| m.step(&s.key))
                            .is_none_or(|st| st.status != StepStatus::Done)
                });
                if pending {
                    self.provisioner.preflight(&t.storage).map_err(|e| {
                        if !e.is_unavailable() {
                            return CampaignError::Io(format!("target {}: {e}", t.name));
                        }
                        let (how, dir) = match t.storage {
                            Storage::Zfs(_) => (
                                "install ZFS's tools and run as root",
                                "a directory on a ZFS dataset",
                            ),
                            _ => ("run as root", "a directory"),
                        };
                        CampaignError::Setup(format!(
                            "target {}: {e}; {how}, or give the target {dir}: --target {}=DIR",
                            t.name, t.name
                        ))
                    })?;
                }
            }
        }
        Ok(())
    }

    /// [`Self::run`] once checked and `--out` is there.
    fn run_checked(
        &mut self,
        campaign: &Campaign,
        plan: &Plan,
        started: Instant,
    ) -> Result<Summary, CampaignError> {
        let _lock = OutLock::take(&plan.out)?;
        let old = Manifest::read(&plan.out)?;
        let changed_targets = match &old {
            Some(old) => self.verify_resume(old, campaign, plan)?,
            None => Vec::new(),
        };
        let mut m = self.new_manifest(campaign, plan, old.as_ref(), &changed_targets);
        for t in &campaign.targets {
            let dir = plan.out.join(&t.name);
            fs::create_dir_all(&dir)
                .map_err(|e| CampaignError::Io(format!("{}: {e}", dir.display())))?;
        }
        m.status = CampaignStatus::Running;
        m.write(&plan.out)?;

        let total = plan.steps.len();
        let already = m
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Done)
            .count();
        let to_run: Duration = plan
            .steps
            .iter()
            .filter(|s| m.steps[s.index].status != StepStatus::Done)
            .map(|s| s.estimated)
            .sum();
        self.progress.event(&Event::Start {
            total,
            done: already,
            estimated: to_run,
        });

        let mut ctx = RunState {
            ratio_actual: 0.0,
            ratio_estimated: 0.0,
            stop: None,
        };
        for target in &campaign.targets {
            self.run_target(target, campaign, plan, &mut m, &mut ctx)?;
            if ctx.stop.is_some() {
                break;
            }
        }

        let count = |st: StepStatus| m.steps.iter().filter(|s| s.status == st).count();
        let (done, failed) = (count(StepStatus::Done), count(StepStatus::Failed));
        let pending = total - done - failed;
        m.status = if ctx.stop == Some(Stop::Interrupted) {
            CampaignStatus::Interrupted
        } else if failed > 0 || pending > 0 {
            CampaignStatus::Failed
        } else {
            CampaignStatus::Completed
        };
        m.write(&plan.out)?;
        let elapsed = started.elapsed();
        self.progress.event(&Event::Finished {
            status: m.status,
            done,
            failed,
            elapsed,
        });
        Ok(Summary {
            status: m.status,
            done,
            skipped: already,
            failed,
            pending,
            manifest: m,
            elapsed,
        })
    }

    /// Refuses a resume over a different campaign, a changed file or changed
    /// targets (unless forced); returns the targets that changed.
    fn verify_resume(
        &self,
        old: &Manifest,
        c: &Campaign,
        plan: &Plan,
    ) -> Result<Vec<String>, CampaignError> {
        let out = plan.out.display();
        if old.campaign != c.name {
            return Err(CampaignError::Resume(format!(
                "--out {out}: holds campaign {}, not {}; use another --out",
                old.campaign, c.name
            )));
        }
        let force = self.options.force;
        if old.file_sha256 != c.sha256 && !force {
            return Err(CampaignError::Resume(format!(
                "{}: changed since {out}/{MANIFEST_FILE} was written (sha256 {} -> {}); resume anyway with --force (steps whose command changed run again) or use another --out",
                c.source.display(),
                &old.file_sha256[..12.min(old.file_sha256.len())],
                &c.sha256[..12]
            )));
        }
        let mut changed = Vec::new();
        for t in &c.targets {
            let before = old.targets.iter().find(|o| o.name == t.name);
            let now = t.describe();
            if let Some(b) = before
                && b.spec != now
            {
                if !force {
                    return Err(CampaignError::Resume(format!(
                        "target {}: was '{}' in {out}/{MANIFEST_FILE}, now '{now}'; resume with --force (its steps run again) or use another --out",
                        t.name, b.spec
                    )));
                }
                changed.push(t.name.clone());
            }
        }
        Ok(changed)
    }

    fn new_manifest(
        &self,
        c: &Campaign,
        plan: &Plan,
        old: Option<&Manifest>,
        changed_targets: &[String],
    ) -> Manifest {
        let (host, kernel) = host_and_kernel();
        let session = Session {
            started_at: now(),
            csdchar_version: self.options.csdchar_version.clone(),
            host: host.clone(),
            kernel: kernel.clone(),
            forced: old.is_some_and(|o| o.file_sha256 != c.sha256) || !changed_targets.is_empty(),
        };
        let mut sessions = old.map(|o| o.sessions.clone()).unwrap_or_default();
        sessions.push(session);
        let targets = c
            .targets
            .iter()
            .map(|t| {
                let before = old.and_then(|o| o.targets.iter().find(|x| x.name == t.name));
                ManifestTarget {
                    name: t.name.clone(),
                    spec: t.describe(),
                    overridden: t.overridden,
                    dir: before.and_then(|b| b.dir.clone()),
                    device: before.and_then(|b| b.device.clone()),
                    device_note: before.and_then(|b| b.device_note.clone()),
                    teardown_error: None,
                }
            })
            .collect();
        let steps = plan
            .steps
            .iter()
            .map(|s| {
                let command = s.display_command();
                let mut st = ManifestStep {
                    index: s.index,
                    key: s.key.clone(),
                    target: s.target.clone(),
                    command: command.clone(),
                    result: s.result_path.as_ref().map(|p| p.display().to_string()),
                    estimated_s: s.estimated.as_secs_f64(),
                    status: StepStatus::Pending,
                    error: None,
                    started_at: None,
                    ended_at: None,
                    elapsed_s: None,
                    attempts: 0,
                    replays: 0,
                };
                if let Some(o) = old.and_then(|o| o.step(&s.key)) {
                    st.attempts = o.attempts;
                    st.replays = o.replays;
                    let still_valid = o.status == StepStatus::Done
                        && o.command == command
                        && !changed_targets.contains(&s.target)
                        && s.result_path
                            .as_deref()
                            .is_none_or(|p| check_result(p).is_ok());
                    if still_valid {
                        st.status = StepStatus::Done;
                        st.started_at = o.started_at.clone();
                        st.ended_at = o.ended_at.clone();
                        st.elapsed_s = o.elapsed_s;
                    } else if o.status != StepStatus::Done {
                        // Keep the last error visible until the step runs again.
                        st.error = o.error.clone();
                    }
                }
                st
            })
            .collect();
        let created = old.map_or_else(now, |o| o.created_at.clone());
        Manifest {
            schema: MANIFEST_SCHEMA.into(),
            campaign: c.name.clone(),
            file: c.source.display().to_string(),
            file_sha256: c.sha256.clone(),
            csdchar_version: self.options.csdchar_version.clone(),
            host,
            kernel,
            created_at: created.clone(),
            updated_at: created,
            status: CampaignStatus::Running,
            sessions,
            targets,
            steps,
        }
    }

    fn run_target(
        &mut self,
        target: &Target,
        campaign: &Campaign,
        plan: &Plan,
        m: &mut Manifest,
        ctx: &mut RunState,
    ) -> Result<(), CampaignError> {
        let total = plan.steps.len();
        let steps: Vec<&PlannedStep> = plan.steps_of(&target.name).collect();
        let ti = campaign
            .targets
            .iter()
            .position(|t| t.name == target.name)
            .expect("a campaign target");
        if steps
            .iter()
            .all(|s| m.steps[s.index].status == StepStatus::Done)
        {
            for s in &steps {
                self.progress.event(&Event::StepSkipped {
                    n: s.index + 1,
                    total,
                    step: s,
                    reason: "done in an earlier run",
                });
            }
            return Ok(());
        };
        if self.interrupt.load(Ordering::SeqCst) {
            ctx.stop = Some(Stop::Interrupted);
            return Ok(());
        }

        // Storage.
        let mut guard: Option<Box<dyn Provisioned>> = None;
        let (dir, fresh): (Option<PathBuf>, bool) = match &target.storage {
            Storage::None => (None, false),
            Storage::Dir(d) => {
                if let Err(e) = fs::create_dir_all(d) {
                    let msg = format!("target {}: cannot create {}: {e}", target.name, d.display());
                    self.fail_all(&steps, m, &plan.out, &msg, ctx)?;
                    return Ok(());
                }
                (Some(d.clone()), false)
            }
            Storage::Zram(_) | Storage::Zfs(_) => {
                match self
                    .provisioner
                    .provision(&campaign.name, &target.name, &target.storage)
                {
                    Ok(g) => {
                        for note in g.notes() {
                            self.progress.event(&Event::TargetNote {
                                target: &target.name,
                                note: &note,
                            });
                        }
                        let d = g.dir().to_path_buf();
                        guard = Some(g);
                        (Some(d), true)
                    }
                    Err(e) => {
                        let msg = format!("target {}: {e}", target.name);
                        self.fail_all(&steps, m, &plan.out, &msg, ctx)?;
                        return Ok(());
                    }
                }
            }
        };
        let probe = dir.clone().or_else(|| target.block.clone());
        let mt = &mut m.targets[ti];
        mt.dir = dir.as_ref().map(|d| d.display().to_string());
        match probe.as_deref().map(device_record) {
            Some(Ok(d)) => {
                mt.device = Some(d);
                mt.device_note = None;
            }
            Some(Err(e)) => {
                mt.device = None;
                mt.device_note = Some(e);
            }
            None => {
                mt.device = None;
                mt.device_note = Some("a server at a URL: its device is not known here".into());
            }
        }
        let device = match (&mt.device, &mt.device_note) {
            (Some(d), _) => describe_device(d),
            (None, Some(n)) => n.clone(),
            (None, None) => String::new(),
        };
        m.write(&plan.out)?;
        self.progress.event(&Event::TargetReady {
            target: &target.name,
            dir: dir.as_deref(),
            device,
        });
        let bind = |s: &PlannedStep| match &dir {
            Some(d) if target.storage.is_made() => s.bind_mount(d),
            _ => s.clone(),
        };

        // Fresh storage (a zram target made anew by a resume): every state
        // step already done runs again, in its place, when steps that are not
        // done come after it.
        let last_pending = steps
            .iter()
            .rposition(|s| m.steps[s.index].status != StepStatus::Done)
            .unwrap_or(0);
        let mut blocked: Option<String> = None;
        for s in &steps {
            if ctx.stop.is_some() {
                break;
            }
            if self.interrupt.load(Ordering::SeqCst) {
                ctx.stop = Some(Stop::Interrupted);
                break;
            }
            if m.steps[s.index].status == StepStatus::Done {
                let pos = steps
                    .iter()
                    .position(|x| x.index == s.index)
                    .expect("own step");
                if fresh && s.kind.sets_state() && pos < last_pending && blocked.is_none() {
                    let bound = bind(s);
                    match self.replay(&bound, plan, m, ctx)? {
                        StepOutcome::Done => {}
                        StepOutcome::Interrupted => ctx.stop = Some(Stop::Interrupted),
                        StepOutcome::Failed(e) => {
                            blocked = Some(format!(
                                "not run: replaying {} on the fresh {} storage failed: {e}",
                                s.key, target.name
                            ))
                        }
                    }
                    continue;
                }
                self.progress.event(&Event::StepSkipped {
                    n: s.index + 1,
                    total,
                    step: s,
                    reason: "done in an earlier run",
                });
                continue;
            }
            if matches!(s.kind, CommandKind::DbPrepare | CommandKind::DbStudy) {
                blocked = None;
            }
            if let Some(why) = &blocked
                && s.kind != CommandKind::Block
            {
                let ms = &mut m.steps[s.index];
                ms.status = StepStatus::Failed;
                ms.error = Some(why.clone());
                m.write(&plan.out)?;
                self.progress.event(&Event::StepFinished {
                    n: s.index + 1,
                    total,
                    step: s,
                    status: StepStatus::Failed,
                    error: Some(why),
                    elapsed: Duration::ZERO,
                });
                if self.options.fail_fast {
                    ctx.stop = Some(Stop::Failed);
                }
                continue;
            }
            let bound = bind(s);
            {
                let ms = &mut m.steps[s.index];
                ms.status = StepStatus::Running;
                ms.error = None;
                ms.started_at = Some(now());
                ms.ended_at = None;
                ms.elapsed_s = None;
                ms.attempts += 1;
            }
            m.write(&plan.out)?;
            let eta = self.eta(plan, m, ctx);
            self.progress.event(&Event::StepStarted {
                n: s.index + 1,
                total,
                step: &bound,
                replay: false,
                eta,
            });
            let t0 = Instant::now();
            let mut outcome = self.runner.run(&bound, self.interrupt);
            let elapsed = t0.elapsed();
            if outcome == StepOutcome::Done
                && let Some(p) = &s.result_path
                && let Err(e) = check_result(p)
            {
                outcome = StepOutcome::Failed(e);
            }
            if matches!(outcome, StepOutcome::Failed(_)) && self.interrupt.load(Ordering::SeqCst) {
                outcome = StepOutcome::Interrupted;
            }
            let (status, error) = match &outcome {
                StepOutcome::Done => (StepStatus::Done, None),
                StepOutcome::Failed(e) => (
                    StepStatus::Failed,
                    Some(e.lines().next().unwrap_or("failed").trim().to_string()),
                ),
                StepOutcome::Interrupted => (
                    StepStatus::Interrupted,
                    Some("interrupted (Ctrl-C/SIGTERM)".to_string()),
                ),
            };
            {
                let ms = &mut m.steps[s.index];
                ms.status = status;
                ms.error = error.clone();
                ms.ended_at = Some(now());
                ms.elapsed_s = Some(elapsed.as_secs_f64());
            }
            m.write(&plan.out)?;
            if status == StepStatus::Done {
                ctx.ratio_actual += elapsed.as_secs_f64();
                ctx.ratio_estimated += s.estimated.as_secs_f64();
            }
            self.progress.event(&Event::StepFinished {
                n: s.index + 1,
                total,
                step: &bound,
                status,
                error: error.as_deref(),
                elapsed,
            });
            match status {
                StepStatus::Interrupted => ctx.stop = Some(Stop::Interrupted),
                StepStatus::Failed => {
                    if s.kind.sets_state() {
                        blocked = Some(format!("not run: it needs {}, which failed", s.key));
                    }
                    if self.options.fail_fast {
                        ctx.stop = Some(Stop::Failed);
                    }
                }
                _ => {}
            }
        }

        let teardown_error = guard
            .take()
            .and_then(|g| g.teardown().err())
            .map(|e| e.to_string());
        m.targets[ti].teardown_error = teardown_error.clone();
        m.write(&plan.out)?;
        self.progress.event(&Event::TargetDone {
            target: &target.name,
            teardown_error: teardown_error.as_deref(),
        });
        Ok(())
    }

    /// Runs a done state step again on fresh storage; its status stays done.
    fn replay(
        &mut self,
        bound: &PlannedStep,
        plan: &Plan,
        m: &mut Manifest,
        ctx: &RunState,
    ) -> Result<StepOutcome, CampaignError> {
        let total = plan.steps.len();
        let eta = self.eta(plan, m, ctx);
        self.progress.event(&Event::StepStarted {
            n: bound.index + 1,
            total,
            step: bound,
            replay: true,
            eta,
        });
        let t0 = Instant::now();
        let outcome = self.runner.run(bound, self.interrupt);
        m.steps[bound.index].replays += 1;
        m.write(&plan.out)?;
        let (status, error) = match &outcome {
            StepOutcome::Done => (StepStatus::Done, None),
            StepOutcome::Failed(e) => (StepStatus::Failed, Some(e.as_str())),
            StepOutcome::Interrupted => (StepStatus::Interrupted, None),
        };
        self.progress.event(&Event::StepFinished {
            n: bound.index + 1,
            total,
            step: bound,
            status,
            error,
            elapsed: t0.elapsed(),
        });
        Ok(outcome)
    }

    /// Marks every step of a target that is not done as failed with `msg`.
    fn fail_all(
        &mut self,
        steps: &[&PlannedStep],
        m: &mut Manifest,
        out: &Path,
        msg: &str,
        ctx: &mut RunState,
    ) -> Result<(), CampaignError> {
        for s in steps {
            let ms = &mut m.steps[s.index];
            if ms.status != StepStatus::Done {
                ms.status = StepStatus::Failed;
                ms.error = Some(msg.to_string());
            }
        }
        m.write(out)?;
        for s in steps {
            if m.steps[s.index].status == StepStatus::Failed {
                self.progress.event(&Event::StepFinished {
                    n: s.index + 1,
                    total: m.steps.len(),
                    step: s,
                    status: StepStatus::Failed,
                    error: Some(msg),
                    elapsed: Duration::ZERO,
                });
            }
        }
        if self.options.fail_fast {
            ctx.stop = Some(Stop::Failed);
        }
        Ok(())
    }

    /// Remaining time: the estimates of the steps not done, scaled by how
    /// this run's finished steps compared with their estimates (0.25×-4×).
    fn eta(&self, plan: &Plan, m: &Manifest, ctx: &RunState) -> Duration {
        let left: f64 = plan
            .steps
            .iter()
            .filter(|s| m.steps[s.index].status != StepStatus::Done)
            .map(|s| s.estimated.as_secs_f64())
            .sum();
        let ratio = if ctx.ratio_estimated > 0.0 {
            (ctx.ratio_actual / ctx.ratio_estimated).clamp(0.25, 4.0)
        } else {
            1.0
        };
        Duration::from_secs_f64(left * ratio)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Interrupted,
    Failed,
}

struct RunState {
    ratio_actual: f64,
    ratio_estimated: f64,
    stop: Option<Stop>,
}
