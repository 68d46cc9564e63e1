//! Running the server's commands (initdb, pg_ctl, psql) as its user, with
//! their output kept for errors; ports, shell and conninfo quoting, log tails.

use std::fs;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::cgroup::MemCgroup;
use crate::spec::{ClusterError, RunAs};

pub(super) fn run(cmd: Command, run_as: Option<RunAs>, what: &str) -> Result<Output, ClusterError> {
    run_in(cmd, run_as, what, None)
}

/// Runs `cmd` like [`run`], inside `cgroup` when given: from its first
/// instruction, so everything it starts is inside too (see the module doc).
pub(super) fn run_in(
    cmd: Command,
    run_as: Option<RunAs>,
    what: &str,
    cgroup: Option<&MemCgroup>,
) -> Result<Output, ClusterError> {
    let program = cmd.get_program().to_owned();
    let mut cmd = match cgroup {
        Some(_) => {
            // The shell waits for "go", written once its pid is in the
            // cgroup; EOF instead (the move failed) ends it before pg_ctl runs.
            let mut sh = Command::new("sh");
            sh.arg("-c")
                .arg("IFS= read -r go && [ \"$go\" = go ] || exit 97; exec \"$@\" </dev/null")
                .arg("csdchar-cgroup-entry")
                .arg(cmd.get_program())
                .args(cmd.get_args());
            sh
        }
        None => cmd,
    };
    if let Some(r) = run_as {
        cmd.uid(r.uid).gid(r.gid);
        // The server's user cannot enter root's working directory.
        cmd.current_dir("/");
    }
    let cannot =
        |e: std::io::Error| ClusterError::Command(format!("{what}: cannot run {program:?}: {e}"));
    let out = match cgroup {
        None => cmd.output().map_err(cannot)?,
        Some(cg) => {
            let mut child = cmd
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(cannot)?;
            let mut stdin = child.stdin.take().expect("piped");
            if let Err(e) = cg.add(child.id()) {
                drop(stdin);
                let _ = child.wait();
                return Err(ClusterError::MemoryLimit(format!(
                    "cannot put {what} into {}: {e}",
                    cg.path.display()
                )));
            }
            // A shell that is gone already shows up in its exit status.
            let _ = stdin.write_all(b"go\n");
            drop(stdin);
            child.wait_with_output().map_err(cannot)?
        }
    };
    if !out.status.success() {
        return Err(ClusterError::Command(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        )));
    }
    Ok(out)
}

/// A port that was free a moment ago on 127.0.0.1.
pub(super) fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Single-quotes `s` for the shell pg_ctl starts the server through.
pub(super) fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// `s` as one shell word, quoted only when it needs to be (for hints).
pub(super) fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c))
    {
        s.to_string()
    } else {
        shell_quote(s)
    }
}

/// A conninfo value, quoted when it holds spaces, quotes or backslashes.
pub(super) fn conninfo_value(s: &str) -> String {
    if !s.is_empty() && !s.contains([' ', '\'', '\\', '\t', '\n']) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// The last `n` lines of a file, for error messages.
pub(super) fn tail(path: &Path, n: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
