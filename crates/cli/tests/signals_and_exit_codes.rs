//! The real binary: signals, exit codes and what reaches stdout/stderr.

use std::process::{Command, Stdio};
use std::time::Duration;

fn csdchar() -> Command {
    Command::new(env!("CARGO_BIN_EXE_csdchar"))
}

fn stop_with(signal: i32) {
    let child = csdchar()
        .args([
            "block",
            "--engine",
            "null",
            "--rw",
            "randrw",
            "--runtime",
            "60s",
            "--time-based",
            "--output-format",
            "json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    // Safety: signalling our own child process.
    unsafe { libc::kill(child.id() as i32, signal) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("partial result is JSON");
    assert_eq!(v["status"], "interrupted");
    assert!(v["read"]["ios"].as_u64().unwrap() > 0);
    assert!(String::from_utf8_lossy(&out.stderr).contains("partial result saved"));
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
