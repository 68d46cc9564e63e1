//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use std::sync::Mutex;

use clap::Parser;
use csdchar_cli::{Cli, Io, Outcome, run};
use csdchar_fio_like::{Completion, Direction, EngineError, IoEngine, IoRequest};

/// What an in-process command run produced.
pub struct Ran {
    pub outcome: Outcome,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `csdchar ARGS...` in-process with a fresh interrupt flag.
pub fn csdchar(args: &[&str]) -> Ran {
    csdchar_with_interrupt(args, Arc::new(AtomicBool::new(false)))
}

/// Runs `csdchar ARGS...` in-process with the given interrupt flag.
pub fn csdchar_with_interrupt(args: &[&str], interrupt: Arc<AtomicBool>) -> Ran {
    let mut argv = vec!["csdchar"];
    argv.extend_from_slice(args);
    let mut out = Vec::new();
    let mut err = Vec::new();
    let outcome = match Cli::try_parse_from(&argv) {
        Ok(cli) => {
            let mut io = Io {
                stdout: &mut out,
                stderr: &mut err,
                interrupt,
            };
            run(cli, &mut io)
        }
        Err(e) => {
            err.extend_from_slice(csdchar_cli::one_line(&e).as_bytes());
            Outcome {
                exit_code: 2,
                block: None,
            }
        }
    };
    Ran {
        outcome,
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
    }
}

/// The committed JSON Schema `schemas/csdchar.NAME-1.schema.json`.
pub fn committed_schema(name: &str) -> serde_json::Value {
    let path = format!(
        "{}/schemas/csdchar.{name}-1.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("schema file is committed"))
        .expect("schema file is JSON")
}

/// Asserts `value` is valid against the committed schema `csdchar.NAME/1`.
pub fn assert_matches_schema(value: &serde_json::Value, name: &str) {
    let schema = committed_schema(name);
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "result does not match the schema: {errors:?}"
    );
}

/// True when running as root; otherwise prints why a test is skipped.
pub fn is_root_or_skip(test: &str) -> bool {
    // Safety: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped {test}: needs root (loop devices, zram)");
    }
    root
}

/// A test engine: completes every request at once, records (offset,
/// direction), and fails the request at `fail_at` with EIO.
pub struct RecordingEngine {
    done: Vec<Completion>,
    fail_at: Option<u64>,
    seen: Arc<Mutex<Vec<(u64, Direction)>>>,
}

impl RecordingEngine {
    pub fn new(seen: &Arc<Mutex<Vec<(u64, Direction)>>>, fail_at: Option<u64>) -> Self {
        RecordingEngine {
            done: Vec::new(),
            fail_at,
            seen: Arc::clone(seen),
        }
    }
}

impl IoEngine for RecordingEngine {
    fn register_buffers(&mut self, _: &[(*mut u8, usize)]) -> Result<(), EngineError> {
        Ok(())
    }
    fn queue(&mut self, req: &IoRequest) {
        self.seen.lock().unwrap().push((req.offset, req.dir));
        let result = if Some(req.offset) == self.fail_at {
            -libc::EIO
        } else {
            req.dir.success(req.len)
        };
        self.done.push(Completion {
            tag: req.tag,
            result,
        });
    }
    fn submit_and_wait(&mut self, _: u32) -> Result<(), EngineError> {
        Ok(())
    }
    fn reap(&mut self, out: &mut Vec<Completion>) {
        out.append(&mut self.done);
    }
    fn info(&self) -> csdchar_core::result::block::EngineInfo {
        csdchar_fio_like::NullEngine::new().info()
    }
}

/// The validated spec of `csdchar block ARGS...`.
pub fn block_spec(args: &[&str]) -> csdchar_core::result::block::BlockSpec {
    let mut argv = vec!["csdchar", "block"];
    argv.extend_from_slice(args);
    match Cli::try_parse_from(argv).expect("arguments parse").command {
        csdchar_cli::Command::Block(o) => o.validate().expect("arguments are valid"),
        _ => unreachable!("a block command"),
    }
}

/// Writes `size` of `pct`%-compressible data to `target` with `csdchar block`
/// (sequential, 1 MiB blocks), plus `extra` options; asserts it succeeded.
pub fn write_compressible(target: &str, size: &str, pct: u8, extra: &[&str]) -> Ran {
    let pct = pct.to_string();
    let mut args = vec![
        "block",
        "--rw",
        "write",
        "--bs",
        "1m",
        "--size",
        size,
        "--compress",
        &pct,
        target,
    ];
    args.extend_from_slice(extra);
    let ran = csdchar(&args);
    assert_eq!(ran.outcome.exit_code, 0, "{args:?}: {}", ran.stderr);
    ran
}

/// `psql -At -c SQL` against a managed cluster; asserts success, returns stdout trimmed.
pub fn psql(c: &csdchar_pgcluster::ManagedCluster, sql: &str) -> String {
    let out = c
        .client("psql")
        .args(["-At", "-d", "postgres", "-c", sql])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Run settings for the database tests: `threads` clients for `ms` milliseconds,
/// intervals every `report_ms`, sysbench's defaults otherwise.
pub fn run_settings(
    threads: u32,
    ms: u64,
    report_ms: Option<u64>,
) -> csdchar_dbloop::settings::RunSettings {
    csdchar_dbloop::settings::RunSettings {
        threads,
        time: std::time::Duration::from_millis(ms),
        report_interval: report_ms.map(std::time::Duration::from_millis),
        percentiles: vec![95.0],
        pipeline: false,
        reconnect: false,
        interrupt: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        warmup: std::time::Duration::ZERO,
        rate: None,
        io_sampling: false,
        start_at: None,
        postmaster: None,
    }
}

/// The client driver the database tests run on: `CSDCHAR_CLIENT_IO` (threads, uring or
/// auto, as `--client-io` reads it; auto when unset). A module that drives the measured
/// loop runs its tests a second time on uring through [`rerun_on_uring`], so every one of
/// them also passes through the ring driver.
pub fn client_io() -> csdchar_dbloop::settings::ClientIo {
    use csdchar_dbloop::settings::ClientIo;
    match std::env::var("CSDCHAR_CLIENT_IO").as_deref() {
        Ok("uring") => ClientIo::Uring,
        Ok("threads") => ClientIo::Threads,
        Ok("auto") | Err(_) => ClientIo::Auto,
        Ok(other) => panic!("CSDCHAR_CLIENT_IO={other}: threads, uring or auto"),
    }
}

/// A run of `workload` on the driver [`client_io`] names; checks that an explicit driver was used.
pub async fn run_workload(
    conninfo: &str,
    workload: Arc<csdchar_dbloop::event::Workload>,
    settings: &csdchar_dbloop::settings::RunSettings,
    on_interval: impl FnMut(&csdchar_dbloop::runner::OltpInterval, u32),
) -> Result<csdchar_dbloop::runner::OltpOutcome, csdchar_pgwire::error::DbError> {
    use csdchar_dbloop::settings::{ClientIo, ClientIoSettings};
    let io = client_io();
    let out = csdchar_dbloop::runner::run_with(
        conninfo,
        workload,
        settings,
        ClientIoSettings {
            client_io: io,
            client_threads: None,
        },
        on_interval,
    )
    .await?;
    if io != ClientIo::Auto {
        assert_eq!(out.client_io, io, "the run used another driver");
    }
    Ok(out)
}

/// A run of sysbench's script `spec` on the driver [`client_io`] names.
pub async fn run_oltp(
    conninfo: &str,
    spec: &csdchar_workloads::oltp::OltpSpec,
    settings: &csdchar_dbloop::settings::RunSettings,
    on_interval: impl FnMut(&csdchar_dbloop::runner::OltpInterval, u32),
) -> Result<csdchar_dbloop::runner::OltpOutcome, csdchar_pgwire::error::DbError> {
    let workload = Arc::new(csdchar_workloads::oltp::workload(spec));
    run_workload(conninfo, workload, settings, on_interval).await
}

/// True when PostgreSQL server binaries are installed; otherwise prints why the test is skipped.
pub fn postgres_or_skip() -> bool {
    match csdchar_pgcluster::PgBinaries::find(None) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipped: {e}");
            false
        }
    }
}

/// Waits (up to 60 s) until the postmaster of `pgdata` reports it accepts
/// connections, then `then` more: lets a test interrupt a run after its
/// server start, whose length varies with machine load.
pub fn after_server_ready(pgdata: &std::path::Path, then: std::time::Duration) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        let pid_file = std::fs::read_to_string(pgdata.join("postmaster.pid")).unwrap_or_default();
        // Line 8 of postmaster.pid is the server's status.
        if pid_file.lines().nth(7).is_some_and(|l| l.trim() == "ready") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(then);
}

// Privileged fixtures: commands, mounts and zram devices that clean up after themselves.

/// Runs `cmd args`; panics with its stderr unless it succeeds; returns stdout trimmed.
/// A loop device, detached on drop (retried while busy: detaching is lazy
/// in the kernel), even when an assertion fails.
pub struct LoopDev {
    pub dev: String,
    _dir: Option<tempfile::TempDir>,
}

impl LoopDev {
    /// Over a new temporary file of `size` bytes in /var/tmp, direct I/O on.
    pub fn new(size: u64) -> LoopDev {
        let dir = tempfile::Builder::new()
            .prefix("csdchar-loop")
            .tempdir_in("/var/tmp")
            .unwrap();
        let backing = dir.path().join("backing");
        std::fs::File::create(&backing)
            .unwrap()
            .set_len(size)
            .unwrap();
        let b = backing.to_str().unwrap();
        let dev = sh("losetup", &["--find", "--show", "--direct-io=on", b]);
        LoopDev {
            dev,
            _dir: Some(dir),
        }
    }

    /// Over the existing file `backing` (left in place).
    pub fn over(backing: &std::path::Path) -> LoopDev {
        let dev = sh("losetup", &["--find", "--show", backing.to_str().unwrap()]);
        LoopDev { dev, _dir: None }
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        for _ in 0..50 {
            if std::process::Command::new("losetup")
                .args(["-d", &self.dev])
                .status()
                .is_ok_and(|s| s.success())
            {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

pub fn sh(cmd: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A mount point that is unmounted on drop (retrying while busy: the processes of a server
/// stopped just before may take seconds to exit on a loaded machine).
pub struct Mounted(std::path::PathBuf);

impl Mounted {
    /// Mounts `dev` at `dir` with `options`; None (reason printed) when mount fails.
    pub fn new(dev: &str, dir: &std::path::Path, options: &[&str]) -> Option<Mounted> {
        let ok = std::process::Command::new("mount")
            .args(options)
            .arg(dev)
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipped: cannot mount {dev} {options:?}");
            return None;
        }
        Some(Mounted(dir.to_path_buf()))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        for _ in 0..300 {
            if std::process::Command::new("umount")
                .arg(&self.0)
                .status()
                .is_ok_and(|s| s.success())
            {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        eprintln!("warning: could not unmount {}", self.0.display());
    }
}

/// A zram device of its own (hot-added), removed on drop.
pub struct Zram {
    /// The N of /dev/zramN.
    pub id: u32,
}

impl Zram {
    /// None (with a printed reason) when zram is not available.
    pub fn new(disksize: &str, algo: &str) -> Option<Zram> {
        if !std::path::Path::new("/sys/class/zram-control/hot_add").exists() {
            let _ = std::process::Command::new("modprobe").arg("zram").status();
        }
        let id: u32 = match std::fs::read_to_string("/sys/class/zram-control/hot_add") {
            Ok(s) => s.trim().parse().unwrap(),
            Err(e) => {
                eprintln!("skipped: zram unavailable ({e})");
                return None;
            }
        };
        let z = Zram { id };
        std::fs::write(z.sys("comp_algorithm"), algo).unwrap();
        std::fs::write(z.sys("disksize"), disksize).unwrap();
        Some(z)
    }
    /// A file of its sysfs directory.
    pub fn sys(&self, f: &str) -> std::path::PathBuf {
        std::path::PathBuf::from(format!("/sys/block/zram{}/{f}", self.id))
    }
    /// Its device node.
    pub fn dev(&self) -> String {
        format!("/dev/zram{}", self.id)
    }
    /// Its mm_stat counters.
    pub fn mm_stat(&self) -> csdchar_core::counters::ZramMmStat {
        csdchar_core::counters::ZramMmStat::parse(
            &std::fs::read_to_string(self.sys("mm_stat")).unwrap(),
        )
        .unwrap()
    }
}

impl Drop for Zram {
    fn drop(&mut self) {
        // udev may still hold the device open to probe it after our writes, and the file
        // system on it may still be going away on a loaded machine: retry for up to 30 s
        // instead of leaving it configured.
        let retry = |what: &dyn Fn() -> std::io::Result<()>| {
            for _ in 0..600 {
                if what().is_ok() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            eprintln!("warning: could not reset/remove zram{}", self.id);
        };
        retry(&|| std::fs::write(self.sys("reset"), "1"));
        retry(&|| std::fs::write("/sys/class/zram-control/hot_remove", self.id.to_string()));
    }
}

/// The test harness's name of a test: `module_path!()` without the crate's name.
fn test_path(module_path: &str) -> &str {
    module_path
        .split_once("::")
        .map_or(module_path, |(_, rest)| rest)
}

/// Runs this test binary again in a child process on the tests the filters name (libtest
/// filters: any substring of a test's path), with `env` set, and fails with the child's
/// output if any of them fails. For what a test cannot do in-process next to the others:
/// an environment variable read deep inside (the client driver, a fixture sysfs root).
/// The child leaves out `alone::` tests (scripts/test.sh runs those by themselves).
pub fn rerun_in_child(filters: &[&str], exact: bool, env: &[(&str, &str)]) {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(filters).args(["--skip", "alone::"]);
    if exact {
        cmd.arg("--exact");
    }
    // The child's tests run two at a time: its parent is already running others beside it.
    cmd.arg("--test-threads=2");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "the child run of {filters:?} with {env:?} failed:\n{text}"
    );
    assert!(
        !text.contains("running 0 tests"),
        "the child run of {filters:?} found no test"
    );
}

/// The marker of a module whose tests drive the database client: its tests again, in a
/// child process, on the io_uring driver (`CSDCHAR_CLIENT_IO=uring`, which the CLI and
/// [`client_io`] read), while the in-process run takes the default driver. `only` narrows
/// the rerun to tests whose names contain one of its strings (all of the module's when
/// empty). Does nothing inside that child.
pub fn rerun_on_uring(module_path: &str, only: &[&str]) {
    if std::env::var("CSDCHAR_CLIENT_IO").as_deref() == Ok("uring") {
        return;
    }
    let module = test_path(module_path);
    let filters: Vec<String> = if only.is_empty() {
        vec![format!("{module}::")]
    } else {
        only.iter().map(|o| format!("{module}::{o}")).collect()
    };
    let filters: Vec<&str> = filters.iter().map(String::as_str).collect();
    let mut with_skip = filters.clone();
    // Not this marker itself.
    let me = format!("{module}::{URING_MARKER}");
    with_skip.extend(["--skip", me.as_str()]);
    rerun_in_child(&with_skip, false, &[("CSDCHAR_CLIENT_IO", "uring")]);
}

/// The name of the test [`on_uring_too!`] adds to a module.
pub const URING_MARKER: &str = "all_again_on_the_io_uring_driver";

/// Marks a module whose tests drive the database client: adds the test that runs them all
/// again on the io_uring driver ([`rerun_on_uring`]), optionally only those whose names
/// contain one of the given strings.
#[macro_export]
macro_rules! on_uring_too {
    ($($only:literal),*) => {
        #[test]
        fn all_again_on_the_io_uring_driver() {
            $crate::common::rerun_on_uring(module_path!(), &[$($only),*]);
        }
    };
}
