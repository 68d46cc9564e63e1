//! The system OpenSSH client as the transport.
//!
//! Every connection: `BatchMode=yes` (never a prompt: a host that wants a
//! password or an unknown host key fails at once, exit 255), `ConnectTimeout`,
//! `ServerAliveInterval`/`ServerAliveCountMax` (a host that stops answering is
//! detected in about 15 s, exit 255), and one multiplexed master per host
//! (`ControlMaster=auto`, `ControlPath` in the run's directory,
//! `ControlPersist` a short idle time, so a dead controller leaves no master
//! behind for long). Nothing about host keys is set: the user's
//! `StrictHostKeyChecking` and `known_hosts` decide, as for any ssh command.
//! The user's `~/.ssh/config`, agent and keys apply; `CSDCHAR_SSH_CONFIG`
//! names another config file (`ssh -F`), `CSDCHAR_SSH` another ssh program
//! (tests use a stand-in).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::hosts::Host;

/// Quotes `s` for a POSIX shell (the remote user's login shell runs the command).
pub fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A command line for the remote shell, every word quoted.
pub fn shell_words(words: &[String]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// How `ssh` is run for a run of several hosts.
#[derive(Debug, Clone)]
pub struct Ssh {
    /// The ssh program (`CSDCHAR_SSH`, else `ssh` on the PATH).
    pub program: OsString,
    /// Another client config (`CSDCHAR_SSH_CONFIG`: `ssh -F`).
    pub config: Option<PathBuf>,
    /// Where the multiplexing masters' sockets live.
    pub control_dir: PathBuf,
    /// `ConnectTimeout`, seconds.
    pub connect_timeout_s: u32,
    /// `ServerAliveInterval`, seconds (`ServerAliveCountMax` is 3).
    pub alive_interval_s: u32,
}

/// The longest socket path the kernel takes is 108 bytes; ssh adds a
/// 17-character suffix while it creates a master, and `%C` is 40 characters.
const MAX_CONTROL_DIR: usize = 108 - 1 - 40 - 17 - 1;

impl Ssh {
    /// The transport with its sockets under `run_dir/ssh` — or, when that path
    /// is too long for a socket, in a directory under `/tmp` (returned second, for
    /// removal at the end).
    pub fn new(run_dir: &Path) -> std::io::Result<(Self, Option<PathBuf>)> {
        let mut dir = run_dir.join("ssh");
        let mut own = None;
        if dir.as_os_str().len() > MAX_CONTROL_DIR {
            let short = std::env::temp_dir().join(format!("csdchar-ssh-{}", std::process::id()));
            own = Some(short.clone());
            dir = short;
        }
        std::fs::create_dir_all(&dir)?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        let ssh = Ssh {
            program: std::env::var_os("CSDCHAR_SSH").unwrap_or_else(|| "ssh".into()),
            config: std::env::var_os("CSDCHAR_SSH_CONFIG").map(PathBuf::from),
            control_dir: dir,
            connect_timeout_s: 10,
            alive_interval_s: 5,
        };
        Ok((ssh, own))
    }

    /// The options every connection gets (before the destination).
    pub fn options(&self) -> Vec<OsString> {
        let mut v: Vec<OsString> = Vec::new();
        if let Some(c) = &self.config {
            v.push("-F".into());
            v.push(c.clone().into_os_string());
        }
        for o in [
            "BatchMode=yes".to_string(),
            format!("ConnectTimeout={}", self.connect_timeout_s),
            format!("ServerAliveInterval={}", self.alive_interval_s),
            "ServerAliveCountMax=3".to_string(),
            "ControlMaster=auto".to_string(),
            format!("ControlPath={}/%C", self.control_dir.display()),
            "ControlPersist=30".to_string(),
            // Remote commands get no terminal: their output stays byte-exact.
            "RequestTTY=no".to_string(),
        ] {
            v.push("-o".into());
            v.push(o.into());
        }
        v
    }

    /// `ssh … -- DESTINATION 'remote command'`, standard streams not set.
    pub fn command(&self, host: &Host, remote: &str) -> Command {
        let mut c = Command::new(&self.program);
        c.args(self.options())
            .arg("--")
            .arg(&host.destination)
            .arg(remote);
        c
    }

    /// Runs `remote` on `host` and waits at most `limit`; stdin is empty.
    /// Returns the exit code (None: killed at the limit), stdout and stderr.
    pub fn run(
        &self,
        host: &Host,
        remote: &str,
        limit: Duration,
    ) -> std::io::Result<(Option<i32>, Vec<u8>, Vec<u8>)> {
        let mut child = self
            .command(host, remote)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        fn drain<R: std::io::Read + Send + 'static>(mut r: R) -> std::thread::JoinHandle<Vec<u8>> {
            std::thread::spawn(move || {
                let mut v = Vec::new();
                let _ = r.read_to_end(&mut v);
                v
            })
        }
        let o = drain(child.stdout.take().expect("piped"));
        let e = drain(child.stderr.take().expect("piped"));
        let t0 = Instant::now();
        let code = loop {
            if let Some(s) = child.try_wait()? {
                break s.code();
            }
            if t0.elapsed() >= limit {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        Ok((
            code,
            o.join().unwrap_or_default(),
            e.join().unwrap_or_default(),
        ))
    }

    /// Stops `host`'s multiplexing master (`ssh -O exit`), if one runs.
    pub fn close(&self, host: &Host) {
        let _ = Command::new(&self.program)
            .args(self.options())
            .args(["-O", "exit", "--"])
            .arg(&host.destination)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
