//! The real binary: signals, exit codes and what reaches stdout/stderr.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

fn csdchar() -> Command {
    Command::new(env!("CARGO_BIN_EXE_csdchar"))
}

/// Stops a running block job with `signal` once it has reported its first
/// interval (so I/O has certainly begun: startup time varies with load).
fn stop_with(signal: i32) {
    let mut child = csdchar()
        .args([
            "block",
            "--engine",
            "null",
            "--rw",
            "randrw",
            "--runtime",
            "60s",
            "--time-based",
            "--log-interval",
            "100ms",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.contains("read: iops"), "first line: {first}");
    // Safety: signalling our own child process, which is still running.
    unsafe { libc::kill(child.id() as i32, signal) };
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "stderr: {stderr}");
    assert!(rest.contains("interrupted: partial result"), "{rest}");
    assert!(rest.contains("read"), "{rest}");
    assert!(stderr.contains("partial result saved"), "{stderr}");
}

#[test]
fn sigint_saves_partial_result_and_exits_130() {
    stop_with(libc::SIGINT);
}

#[test]
fn sigterm_saves_partial_result_and_exits_130() {
    stop_with(libc::SIGTERM);
}

#[test]
fn bad_option_is_one_line_exit_2() {
    let out = csdchar()
        .args(["block", "--rwmixread", "150", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("--rwmixread") && err.contains("0..=100"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    let out = csdchar()
        .args(["block", "--no-such-option"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr)
            .trim_end()
            .lines()
            .count(),
        1
    );
}

#[test]
fn help_and_version_exit_0() {
    let out = csdchar().args(["block", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--compress-fill"));
    let out = csdchar().arg("--version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
}

/// A second Ctrl-C while the first is being handled exits at once, says so,
/// and the managed server still goes away (its watchdog stops it).
#[test]
fn second_sigint_during_a_load_exits_at_once_and_the_server_stops() {
    if let Err(e) = csdchar_pgcluster::PgBinaries::find(None) {
        eprintln!("skipped: {e}");
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("csdchar-sigint2")
        .tempdir_in("/var/tmp")
        .unwrap();
    let pgdata = dir.path().join("pgdata");
    let mut child = csdchar()
        .args(["db", "prepare", "--tables", "2", "--table-size", "3000000"])
        .arg("--pgdata")
        .arg(&pgdata)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the server is up and the load has begun.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        let pid_file = std::fs::read_to_string(pgdata.join("postmaster.pid")).unwrap_or_default();
        if pid_file.lines().nth(7).is_some_and(|l| l.trim() == "ready") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let postmaster: i32 = std::fs::read_to_string(pgdata.join("postmaster.pid"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for _ in 0..2 {
        // Safety: signalling our own child process.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "stderr: {stderr}");
    assert!(
        stderr.contains("interrupted again") || stderr.contains("interrupted: the load stopped"),
        "{stderr}"
    );
    // Whichever way it exited, the server it started must be gone soon.
    let gone = std::time::Instant::now() + std::time::Duration::from_secs(20);
    // Safety: kill with signal 0 only asks whether the process exists.
    while unsafe { libc::kill(postmaster, 0) } == 0 {
        assert!(
            std::time::Instant::now() < gone,
            "the managed server {postmaster} still runs: {stderr}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
