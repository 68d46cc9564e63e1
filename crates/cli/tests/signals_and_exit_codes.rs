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
