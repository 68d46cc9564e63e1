//! Campaigns end to end with a mock runner (writes a result file per step)
//! and a mock provisioner (a temporary directory stands for a zram mount).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use csdchar_campaign::manifest::Manifest;
use csdchar_campaign::*;
use csdchar_devices::{DeviceError, DeviceErrorKind};

fn recipe(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/campaigns")
        .join(name)
}

/// Records what ran; fails or interrupts on request.
#[derive(Default)]
struct Mock {
    ran: Vec<String>,
    argv: Vec<Vec<String>>,
    fail: Vec<String>,
    interrupt_at: Option<String>,
}

impl StepRunner for Mock {
    fn check(&self, step: &PlannedStep) -> Result<(), String> {
        if step.command.iter().any(|a| a == "--bogus") {
            return Err("error: unexpected argument '--bogus' found".into());
        }
        Ok(())
    }

    fn run(&mut self, step: &PlannedStep, interrupt: &AtomicBool) -> StepOutcome {
        self.ran.push(step.key.clone());
        self.argv.push(step.command.clone());
        if self.interrupt_at.as_deref() == Some(&step.key) {
            interrupt.store(true, Ordering::SeqCst);
            if let Some(p) = &step.result_path {
                std::fs::write(p, r#"{"schema":"csdchar.db/1","interrupted":true}"#).unwrap();
            }
            return StepOutcome::Interrupted;
        }
        if self.fail.contains(&step.key) {
            return StepOutcome::Failed("server said no\nsecond line".into());
        }
        if let Some(p) = &step.result_path {
            std::fs::write(
                p,
                r#"{"schema":"csdchar.db/1","interrupted":false,"error":null}"#,
            )
            .unwrap();
        }
        StepOutcome::Done
    }
}

/// A temporary directory per "zram" target; counts setups and teardowns.
#[derive(Default, Clone)]
struct FakeZram {
    made: Rc<RefCell<Vec<PathBuf>>>,
    removed: Rc<RefCell<usize>>,
    refuse: Option<DeviceError>,
}

struct FakeMount(tempfile::TempDir, Rc<RefCell<usize>>);

impl Provisioned for FakeMount {
    fn dir(&self) -> &Path {
        self.0.path()
    }
    fn teardown(self: Box<Self>) -> Result<(), DeviceError> {
        *self.1.borrow_mut() += 1;
        Ok(())
    }
}

impl Provisioner for FakeZram {
    fn preflight(&mut self, _: &Storage) -> Result<(), DeviceError> {
        self.refuse.clone().map_or(Ok(()), Err)
    }
    fn provision(
        &mut self,
        _: &str,
        _: &str,
        _: &Storage,
    ) -> Result<Box<dyn Provisioned>, DeviceError> {
        let d = tempfile::tempdir().unwrap();
        self.made.borrow_mut().push(d.path().to_path_buf());
        Ok(Box::new(FakeMount(d, self.removed.clone())))
    }
}

/// A Percona campaign whose disk target lives in `dir`.
fn percona(dir: &Path) -> Campaign {
    let mut c = Campaign::load(&recipe("percona-sysbench.toml")).unwrap();
    c.override_target("disk", dir.to_str().unwrap()).unwrap();
    c
}

fn execute(
    c: &Campaign,
    plan: &Plan,
    runner: &mut Mock,
    zram: &mut FakeZram,
    options: RunOptions,
) -> (Result<Summary, CampaignError>, Vec<String>) {
    let interrupt = AtomicBool::new(false);
    let mut lines = Vec::new();
    let mut progress = |e: &Event<'_>| match e {
        Event::StepStarted {
            n,
            total,
            step,
            replay,
            eta,
            ..
        } => lines.push(format!(
            "{n}/{total} {}{} eta {}",
            step.key,
            if *replay { " (replay)" } else { "" },
            format_duration(*eta)
        )),
        Event::StepSkipped { step, .. } => lines.push(format!("skip {}", step.key)),
        _ => {}
    };
    let r = Executor {
        runner,
        progress: &mut progress,
        provisioner: zram,
        interrupt: &interrupt,
        options,
    }
    .run(c, plan);
    (r, lines)
}

fn opts() -> RunOptions {
    RunOptions {
        csdchar_version: "test".into(),
        ..RunOptions::default()
    }
}

#[test]
fn percona_recipe_expands_phases_outside_workloads_inside() {
    let c = Campaign::load(&recipe("percona-sysbench.toml")).unwrap();
    let plan = c.plan(Path::new("/out")).unwrap();
    let keys: Vec<&str> = plan.steps.iter().map(|s| s.key.as_str()).collect();
    let per_target = |t: &str| {
        vec![
            format!("{t}/01-db-prepare"),
            format!("{t}/02-db-alter-fillfactor-100"),
            format!("{t}/03-db-run-fillfactor-100-workload-oltp_read_only"),
            format!("{t}/03-db-run-fillfactor-100-workload-oltp_read_write"),
            format!("{t}/03-db-run-fillfactor-100-workload-oltp_write_only"),
            format!("{t}/02-db-alter-fillfactor-70"),
            format!("{t}/03-db-run-fillfactor-70-workload-oltp_read_only"),
            format!("{t}/03-db-run-fillfactor-70-workload-oltp_read_write"),
            format!("{t}/03-db-run-fillfactor-70-workload-oltp_write_only"),
        ]
    };
    let want: Vec<String> = per_target("disk")
        .into_iter()
        .chain(per_target("zram"))
        .collect();
    assert_eq!(keys, want);
    let run = &plan.steps[3];
    assert_eq!(
        &run.command[..4],
        [
            "db",
            "run",
            "--pgdata",
            "/var/tmp/csdchar-campaign/percona-sysbench/pgdata"
        ]
    );
    assert!(
        run.command
            .windows(2)
            .any(|w| w == ["--workload", "oltp_read_write"])
    );
    assert!(
        run.command
            .windows(2)
            .any(|w| w == ["--threads", "1,8,16,32,64"])
    );
    assert_eq!(plan.steps[12].command[3], "<mount:zram>/pgdata");
    // 5 thread counts x (12 s + 1 s) + the server overhead.
    assert_eq!(run.estimated, Duration::from_secs(69));
    let total = plan.estimated_total().as_secs();
    assert!((800..1000).contains(&total), "{total} s");
    let text = plan.render();
    assert!(
        text.starts_with("campaign percona-sysbench: 18 steps on targets (disk, zram)"),
        "{text}"
    );
    assert!(text.contains(" 4/18 disk"), "{text}");
}

#[test]
fn the_two_host_recipe_runs_its_runs_on_its_hosts() {
    let c = Campaign::load(&recipe("sysbench-two-hosts.toml")).unwrap();
    assert_eq!(c.hosts.len(), 2);
    assert!(
        c.hosts[1].starts_with("bench@load2 name=load2"),
        "{:?}",
        c.hosts
    );
    let names = vec!["load1".to_string(), "load2".to_string()];
    let plan = c.plan(Path::new("/out")).unwrap();
    for s in &plan.steps {
        let words = s.kind.words().join(" ");
        let load = s.kind == CommandKind::DbRun;
        let on = s.on.resolve(&words, load, &names).unwrap();
        assert_eq!(on.is_some(), load, "{}", s.key);
    }
}

#[test]
fn every_recipe_plans() {
    for (name, steps) in [
        ("percona-sysbench.toml", 18),
        ("pgbench-fillfactor.toml", 2),
        ("opengauss-study.toml", 2 * (4 + 2 * (2 + 3) + 2)),
        ("pgio.toml", 2 * 3),
        ("zfs-pgbench.toml", 5),
        ("sysbench-two-hosts.toml", 1 + 3 * 5),
    ] {
        let c = Campaign::load(&recipe(name)).unwrap();
        let plan = c.plan(Path::new("/out")).unwrap();
        assert_eq!(plan.steps.len(), steps, "{name}\n{}", plan.render());
        let minutes = plan.estimated_total().as_secs_f64() / 60.0;
        eprintln!(
            "{name}: {} steps, {}",
            plan.steps.len(),
            format_duration(plan.estimated_total())
        );
        assert!((3.0..25.0).contains(&minutes), "{name}: {minutes:.1} min");
    }
    // openGauss: the estimate sits inside the fillfactor loop, after its prepare.
    let c = Campaign::load(&recipe("opengauss-study.toml")).unwrap();
    let plan = c.plan(Path::new("/out")).unwrap();
    let keys: Vec<&str> = plan.steps_of("disk").map(|s| s.key.as_str()).collect();
    assert_eq!(
        keys[4..7],
        [
            "disk/03-db-prepare-fillfactor-100",
            "disk/04-estimate-fillfactor-100",
            "disk/05-db-run-fillfactor-100-workload-oltp_read_only"
        ]
    );
    assert_eq!(keys[14], "disk/06-db-prepare");
}

#[test]
fn interrupted_campaign_resumes_without_redoing_finished_steps() {
    let d = tempfile::tempdir().unwrap();
    let c = percona(&d.path().join("disk"));
    let plan = c.plan(&d.path().join("out")).unwrap();
    let mut zram = FakeZram::default();

    // Interrupted in the zram target, at its third step.
    let mut first = Mock {
        interrupt_at: Some("zram/03-db-run-fillfactor-100-workload-oltp_read_only".into()),
        ..Mock::default()
    };
    let (r, _) = execute(&c, &plan, &mut first, &mut zram, opts());
    let s = r.unwrap();
    assert_eq!(s.status, CampaignStatus::Interrupted);
    assert_eq!((s.done, s.failed, s.pending), (11, 0, 7));
    assert_eq!(first.ran.len(), 12);
    assert_eq!(
        *zram.removed.borrow(),
        1,
        "the zram target is torn down on interrupt"
    );
    let m = Manifest::read(&plan.out).unwrap().unwrap();
    assert_eq!(m.status, CampaignStatus::Interrupted);
    assert_eq!(m.steps[11].status, StepStatus::Interrupted);
    assert_eq!(m.steps[12].status, StepStatus::Pending);
    // The disk's steps ran in its directory; the zram's in the mount.
    assert!(
        first.argv[1]
            .iter()
            .any(|a| a.starts_with(d.path().join("disk").to_str().unwrap()))
    );
    let mount = zram.made.borrow()[0].display().to_string();
    assert!(
        first.argv[9].contains(&format!("{mount}/pgdata")),
        "{:?}",
        first.argv[9]
    );

    // Resume: disk skipped, the zram target made anew, its prepare and alter
    // replayed on it, then the interrupted step and the rest.
    let mut second = Mock::default();
    let (r, lines) = execute(&c, &plan, &mut second, &mut zram, opts());
    let s = r.unwrap();
    assert_eq!(s.status, CampaignStatus::Completed, "{lines:#?}");
    assert_eq!((s.done, s.skipped, s.failed), (18, 11, 0));
    assert_eq!(
        second.ran[..3],
        [
            "zram/01-db-prepare",
            "zram/02-db-alter-fillfactor-100",
            "zram/03-db-run-fillfactor-100-workload-oltp_read_only"
        ]
    );
    assert_eq!(second.ran.len(), 2 + 7);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("10/18 zram/01-db-prepare (replay)")),
        "{lines:#?}"
    );
    assert!(lines.iter().any(|l| l == "skip disk/01-db-prepare"));
    let m = Manifest::read(&plan.out).unwrap().unwrap();
    assert_eq!(m.sessions.len(), 2);
    assert_eq!(m.steps[9].replays, 1);
    assert_eq!(m.steps[11].attempts, 2);
    let results = s.results_by_target();
    assert_eq!(results.len(), 2);
    assert_eq!((results[0].0.as_str(), results[0].1.len()), ("disk", 6));
    assert_eq!((results[1].0.as_str(), results[1].1.len()), ("zram", 6));

    // A third run has nothing left to do.
    let mut third = Mock::default();
    let (r, _) = execute(&c, &plan, &mut third, &mut zram, opts());
    assert_eq!(r.unwrap().status, CampaignStatus::Completed);
    assert!(third.ran.is_empty());
}

#[test]
fn failed_steps_are_recorded_and_the_campaign_goes_on_unless_fail_fast() {
    let d = tempfile::tempdir().unwrap();
    let c = percona(&d.path().join("disk"));
    let mut zram = FakeZram::default();

    let plan = c.plan(&d.path().join("out1")).unwrap();
    let mut m = Mock {
        fail: vec!["disk/02-db-alter-fillfactor-70".into()],
        ..Mock::default()
    };
    let (r, _) = execute(&c, &plan, &mut m, &mut zram, opts());
    let s = r.unwrap();
    assert_eq!(s.status, CampaignStatus::Failed);
    assert_eq!((s.done, s.failed), (14, 4));
    let man = &s.manifest;
    assert_eq!(man.steps[5].error.as_deref(), Some("server said no"));
    assert_eq!(
        man.steps[6].error.as_deref(),
        Some("not run: it needs disk/02-db-alter-fillfactor-70, which failed")
    );
    assert!(
        m.ran
            .iter()
            .all(|k| !k.starts_with("disk/03-db-run-fillfactor-70"))
    );
    assert!(
        m.ran
            .contains(&"zram/03-db-run-fillfactor-70-workload-oltp_write_only".to_string())
    );

    let plan = c.plan(&d.path().join("out2")).unwrap();
    let mut m = Mock {
        fail: vec!["disk/03-db-run-fillfactor-100-workload-oltp_read_only".into()],
        ..Mock::default()
    };
    let options = RunOptions {
        fail_fast: true,
        ..opts()
    };
    let (r, _) = execute(&c, &plan, &mut m, &mut zram, options);
    let s = r.unwrap();
    assert_eq!(s.status, CampaignStatus::Failed);
    assert_eq!((s.done, s.failed, s.pending), (2, 1, 15));
    assert_eq!(m.ran.len(), 3);

    // A missing or partial result file fails a step the runner called done.
    struct Silent;
    impl StepRunner for Silent {
        fn run(&mut self, _: &PlannedStep, _: &AtomicBool) -> StepOutcome {
            StepOutcome::Done
        }
    }
    let plan = c.plan(&d.path().join("out3")).unwrap();
    let interrupt = AtomicBool::new(false);
    let s = Executor {
        runner: &mut Silent,
        progress: &mut |_: &Event<'_>| {},
        provisioner: &mut zram,
        interrupt: &interrupt,
        options: opts(),
    }
    .run(&c, &plan)
    .unwrap();
    assert_eq!(
        s.manifest.steps[0].status,
        StepStatus::Done,
        "prepare writes no result"
    );
    let e = s.manifest.steps[2].error.as_deref().unwrap();
    assert!(
        e.starts_with("result ") && e.contains("No such file"),
        "{e}"
    );
}

#[test]
fn a_changed_file_is_refused_for_resume_unless_forced() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("c.toml");
    let text = std::fs::read_to_string(recipe("percona-sysbench.toml")).unwrap();
    std::fs::write(&file, &text).unwrap();
    let load = || {
        let mut c = Campaign::load(&file).unwrap();
        c.override_target("disk", d.path().join("disk").to_str().unwrap())
            .unwrap();
        c
    };
    let out = d.path().join("out");
    let mut zram = FakeZram::default();
    let c = load();
    let (r, _) = execute(
        &c,
        &c.plan(&out).unwrap(),
        &mut Mock::default(),
        &mut zram,
        opts(),
    );
    assert_eq!(r.unwrap().status, CampaignStatus::Completed);

    std::fs::write(&file, text.replace("time = \"12s\"", "time = \"15s\"")).unwrap();
    let c = load();
    let plan = c.plan(&out).unwrap();
    let mut m = Mock::default();
    let (r, _) = execute(&c, &plan, &mut m, &mut zram, opts());
    let e = r.unwrap_err();
    assert!(matches!(e, CampaignError::Resume(_)));
    let e = e.to_string();
    assert!(
        e.contains("c.toml: changed since") && e.contains("--force"),
        "{e}"
    );
    assert!(!e.contains('\n'));
    assert!(m.ran.is_empty(), "nothing runs");

    // Forced: only the steps whose command changed (the runs) run again.
    let (r, _) = execute(
        &c,
        &plan,
        &mut m,
        &mut zram,
        RunOptions {
            force: true,
            ..opts()
        },
    );
    assert_eq!(r.unwrap().status, CampaignStatus::Completed);
    assert_eq!(
        m.ran.len(),
        12 + 3,
        "12 runs, plus prepare and both alters replayed on the new zram"
    );
    let zram_ran: Vec<&str> = m
        .ran
        .iter()
        .filter(|k| k.starts_with("zram/"))
        .map(|k| k.as_str())
        .collect();
    assert_eq!(
        zram_ran[5], "zram/02-db-alter-fillfactor-70",
        "{zram_ran:?}"
    );
    assert!(
        m.ran
            .iter()
            .filter(|k| k.starts_with("disk/"))
            .all(|k| k.contains("db-run"))
    );
    let man = Manifest::read(&out).unwrap().unwrap();
    assert!(man.sessions[1].forced);
    assert_eq!(man.file_sha256, c.sha256);

    // A changed target is refused the same way.
    let mut c2 = load();
    c2.override_target("disk", d.path().join("elsewhere").to_str().unwrap())
        .unwrap();
    let (r, _) = execute(
        &c2,
        &c2.plan(&out).unwrap(),
        &mut Mock::default(),
        &mut zram,
        opts(),
    );
    let e = r.unwrap_err().to_string();
    assert!(e.starts_with("target disk: was 'dir "), "{e}");
}

#[test]
fn refusals_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    let c = percona(&d.path().join("disk"));
    // The provisioner's preflight refusing: as bad input when root or a tool is
    // missing (zram without root), as a fault otherwise (a system call failed).
    let mut m = Mock::default();
    let mut refused = |kind, message: &str| {
        let mut zram = FakeZram {
            refuse: Some(DeviceError::new(kind, message)),
            ..FakeZram::default()
        };
        let (r, _) = execute(
            &c,
            &c.plan(&d.path().join("o1")).unwrap(),
            &mut m,
            &mut zram,
            opts(),
        );
        assert!(m.ran.is_empty());
        assert!(!d.path().join("o1").exists(), "nothing is written");
        r.unwrap_err()
    };
    let e = refused(
        DeviceErrorKind::NeedsRoot,
        "making a zram device needs root",
    );
    assert!(
        matches!(e, CampaignError::Setup(_)) && e.is_bad_input(),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "target zram: making a zram device needs root; run as root, or give the target a directory: --target zram=DIR"
    );
    let e = refused(
        DeviceErrorKind::Os(std::io::ErrorKind::PermissionDenied),
        "/sys/class/zram-control: Permission denied",
    );
    assert!(!e.is_bad_input(), "{e:?}");
    assert_eq!(
        e.to_string(),
        "target zram: /sys/class/zram-control: Permission denied"
    );
    // An argv the CLI refuses.
    let text = std::fs::read_to_string(recipe("percona-sysbench.toml"))
        .unwrap()
        .replace("force = true", "bogus = true");
    let c = Campaign::parse(&text).unwrap();
    let e = c
        .plan(&d.path().join("o2"))
        .unwrap()
        .check(|s| Mock::default().check(s))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "steps[1] (db prepare) on disk: error: unexpected argument '--bogus' found"
    );
    // An output directory with other files in it.
    let busy = d.path().join("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("notes.txt"), "x").unwrap();
    let c = percona(&d.path().join("disk"));
    let (r, _) = execute(
        &c,
        &c.plan(&busy).unwrap(),
        &mut m,
        &mut FakeZram::default(),
        opts(),
    );
    assert!(
        r.unwrap_err()
            .to_string()
            .contains("holds files but no manifest.json")
    );
}

#[test]
fn manifest_is_written_atomically_and_reads_back() {
    let d = tempfile::tempdir().unwrap();
    let c = percona(&d.path().join("disk"));
    let plan = c.plan(&d.path().join("out")).unwrap();
    let (r, _) = execute(
        &c,
        &plan,
        &mut Mock::default(),
        &mut FakeZram::default(),
        opts(),
    );
    let mut m = r.unwrap().manifest;
    let back = Manifest::read(&plan.out).unwrap().unwrap();
    assert_eq!(back, m);
    assert_eq!(back.schema, "csdchar.campaign/1");
    assert_eq!(back.file_sha256, c.sha256);
    assert!(!back.host.is_empty() && !back.kernel.is_empty());
    assert!(back.targets[0].device.is_some() || back.targets[0].device_note.is_some());
    m.steps[0].error = Some("edited".into());
    m.write(&plan.out).unwrap();
    assert_eq!(
        Manifest::read(&plan.out).unwrap().unwrap().steps[0]
            .error
            .as_deref(),
        Some("edited")
    );
    let leftovers: Vec<_> = std::fs::read_dir(&plan.out)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn real_zram_target_is_made_recorded_and_removed_as_root() {
    let spec = ZramSpec {
        size: 256 << 20,
        algorithm: "lz4".into(),
        filesystem: csdchar_devices::zram::ZramFilesystem::Ext4,
    };
    if StorageProvisioner.preflight(&Storage::Zram(spec)).is_err() {
        eprintln!("skipped: needs root, zram and mkfs.ext4");
        return;
    }
    let c = Campaign::parse(
        "name = \"zram-e2e\"\n[targets.z]\nzram = { size = \"256m\" }\n[[steps]]\ncommand = \"db run\"\n",
    )
    .unwrap();
    let d = tempfile::tempdir().unwrap();
    let plan = c.plan(&d.path().join("out")).unwrap();
    let mut m = Mock::default();
    let interrupt = AtomicBool::new(false);
    let mut dirs = Vec::new();
    let s = Executor {
        runner: &mut m,
        progress: &mut |e: &Event<'_>| {
            if let Event::TargetReady { dir, device, .. } = e {
                dirs.push((dir.unwrap().to_path_buf(), device.clone()));
            }
        },
        provisioner: &mut StorageProvisioner,
        interrupt: &interrupt,
        options: opts(),
    }
    .run(&c, &plan)
    .unwrap();
    assert_eq!(s.status, CampaignStatus::Completed);
    let (mount, device) = &dirs[0];
    assert!(
        device.starts_with("zram") && device.ends_with("(lz4)"),
        "{device}"
    );
    assert!(
        m.argv[0][3].starts_with(mount.to_str().unwrap()),
        "{:?}",
        m.argv[0]
    );
    assert!(!mount.exists(), "unmounted and removed");
    let t = &s.manifest.targets[0];
    assert_eq!(
        t.device.as_ref().unwrap().zram_algorithm.as_deref(),
        Some("lz4")
    );
    assert_eq!(t.teardown_error, None);
    assert_eq!(s.manifest.steps[0].command[3], "<mount:z>/pgdata");
}
