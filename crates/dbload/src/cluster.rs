//! Managed PostgreSQL clusters: find the server binaries, `initdb` a data
//! directory if there is none, start the server on a free port with the
//! requested settings, and stop it (and remove a temporary one) on drop —
//! also when a test panics.
//!
//! initdb and postgres refuse to run as root: as root, every server command
//! runs as the `postgres` user (uid/gid switched for the child only), and the
//! directories it needs are handed to that user.

use std::ffi::CString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Why a cluster could not be set up or started.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No PostgreSQL server binaries were found.
    #[error("PostgreSQL server binaries not found ({0}); install postgresql or pass --pg-bin DIR")]
    NoBinaries(String),
    /// A setting is not `key=value`.
    #[error("--pg-set: '{0}' is not key=value")]
    BadSetting(String),
    /// Running as root but there is no `postgres` user to run the server as.
    #[error(
        "running as root, but there is no 'postgres' user to run the server as (initdb refuses root)"
    )]
    NoPostgresUser,
    /// A command failed; the message carries its output and, for the server, the log location.
    #[error("{0}")]
    Command(String),
    /// File-system trouble around the data directory.
    #[error("{0}")]
    Io(String),
}

/// The server binaries of one PostgreSQL installation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgBinaries {
    /// Directory holding initdb, pg_ctl, postgres.
    pub dir: PathBuf,
    /// Major version (e.g. 15).
    pub major: u32,
}

impl PgBinaries {
    /// Finds the binaries: `explicit` (--pg-bin), `pg_config --bindir`, `initdb` on PATH,
    /// then `/usr/lib/postgresql/*/bin`, newest first.
    pub fn find(explicit: Option<&Path>) -> Result<PgBinaries, ClusterError> {
        let mut tried = Vec::new();
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(dir) = explicit {
            return Self::at(dir)
                .ok_or_else(|| ClusterError::NoBinaries(format!("--pg-bin {}", dir.display())));
        }
        if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
            && out.status.success()
        {
            candidates.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
        }
        if let Some(path) = std::env::var_os("PATH") {
            for d in std::env::split_paths(&path) {
                // Debian's /usr/bin wrappers are not the server binaries; follow real files only.
                if d.join("initdb").is_file() && d.join("pg_ctl").is_file() {
                    candidates.push(d);
                }
            }
        }
        let mut versioned: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| {
                        Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin")))
                    })
                    .collect()
            })
            .unwrap_or_default();
        versioned.sort_by_key(|v| std::cmp::Reverse(v.0));
        candidates.extend(versioned.into_iter().map(|(_, p)| p));
        for c in candidates {
            if let Some(b) = Self::at(&c) {
                return Ok(b);
            }
            tried.push(c.display().to_string());
        }
        Err(ClusterError::NoBinaries(if tried.is_empty() {
            "searched pg_config, PATH and /usr/lib/postgresql".into()
        } else {
            format!("tried {}", tried.join(", "))
        }))
    }

    fn at(dir: &Path) -> Option<PgBinaries> {
        if !(dir.join("initdb").is_file()
            && dir.join("pg_ctl").is_file()
            && dir.join("postgres").is_file())
        {
            return None;
        }
        let out = Command::new(dir.join("postgres"))
            .arg("--version")
            .output()
            .ok()?;
        // "postgres (PostgreSQL) 15.18 (Debian ...)"
        let text = String::from_utf8_lossy(&out.stdout);
        let version = text
            .split_whitespace()
            .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))?;
        let major = version.split('.').next()?.parse().ok()?;
        Some(PgBinaries {
            dir: dir.to_path_buf(),
            major,
        })
    }

    fn bin(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// What cluster to run.
#[derive(Debug, Clone, Default)]
pub struct ClusterSpec {
    /// Data directory; None makes a temporary one that is removed afterwards.
    pub pgdata: Option<PathBuf>,
    /// Server binaries; None finds them.
    pub pg_bin: Option<PathBuf>,
    /// `key=value` settings (`--pg-set`), passed to the server at start.
    pub settings: Vec<String>,
    /// Leave the server running when the cluster is dropped (ignored for a temporary cluster).
    pub keep_running: bool,
}

/// The user the server runs as.
#[derive(Debug, Clone, Copy)]
struct RunAs {
    uid: u32,
    gid: u32,
}

/// A running cluster that csdchar manages.
#[derive(Debug)]
pub struct ManagedCluster {
    bin: PgBinaries,
    pgdata: PathBuf,
    port: u16,
    socket_dir: PathBuf,
    /// Removes the socket directory unless the server is kept running.
    socket_guard: Option<tempfile::TempDir>,
    log: PathBuf,
    run_as: Option<RunAs>,
    created: bool,
    keep_running: bool,
    running: bool,
    /// The postmaster's PID (our child, as we are a subreaper), reaped on stop.
    postmaster: Option<i32>,
    /// Owns the temporary data directory of an ephemeral cluster.
    _ephemeral: Option<tempfile::TempDir>,
}

impl ManagedCluster {
    /// Creates the cluster if its data directory has none, and starts it on a
    /// free loopback port.
    pub fn start(spec: &ClusterSpec) -> Result<ManagedCluster, ClusterError> {
        let settings = spec
            .settings
            .iter()
            .map(|s| {
                let (k, v) = s
                    .split_once('=')
                    .ok_or_else(|| ClusterError::BadSetting(s.clone()))?;
                let k = k.trim();
                if k.is_empty()
                    || !k
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                {
                    return Err(ClusterError::BadSetting(s.clone()));
                }
                Ok((k.to_string(), v.trim().to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let bin = PgBinaries::find(spec.pg_bin.as_deref())?;
        let run_as = Self::run_as()?;
        let io = |what: &str, e: std::io::Error| ClusterError::Io(format!("{what}: {e}"));

        let (pgdata, ephemeral) = match &spec.pgdata {
            Some(p) => (p.clone(), None),
            None => {
                let t = tempfile::Builder::new()
                    .prefix("csdchar-pg")
                    .tempdir_in("/var/tmp")
                    .map_err(|e| io("temporary data directory", e))?;
                (t.path().join("pgdata"), Some(t))
            }
        };
        if let Some(t) = &ephemeral {
            hand_over(t.path(), run_as)?;
        }
        let socket_dir = tempfile::Builder::new()
            .prefix("csdchar-pgsock")
            .tempdir()
            .map_err(|e| io("socket directory", e))?;
        hand_over(socket_dir.path(), run_as)?;

        let created = !pgdata.join("PG_VERSION").exists();
        if created {
            fs::create_dir_all(&pgdata).map_err(|e| io(&pgdata.display().to_string(), e))?;
            hand_over(&pgdata, run_as)?;
            let mut cmd = Command::new(bin.bin("initdb"));
            cmd.arg("-D").arg(&pgdata).args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-sync",
            ]);
            run(cmd, run_as, "initdb")?;
        }
        // The server writes its log as its own user, inside the data directory.
        let log = pgdata.join("csdchar-server.log");
        fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| io(&log.display().to_string(), e))?;
        if let Some(r) = run_as {
            let c = CString::new(log.as_os_str().as_encoded_bytes()).expect("no NUL in paths");
            // Safety: chown on a file we just created.
            unsafe { libc::chown(c.as_ptr(), r.uid, r.gid) };
        }
        let port = free_port().map_err(|e| io("finding a free port", e))?;
        let mut opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1",
            shell_quote(&socket_dir.path().display().to_string())
        );
        for (k, v) in &settings {
            opts.push_str(&format!(" -c {}", shell_quote(&format!("{k}={v}"))));
        }
        // pg_ctl daemonizes the server; as a child subreaper we inherit it when
        // pg_ctl exits, so it can be reaped after stopping instead of lingering
        // as a zombie under an init that does not reap.
        // Safety: prctl with PR_SET_CHILD_SUBREAPER only sets a process flag.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        let mut cmd = Command::new(bin.bin("pg_ctl"));
        cmd.arg("start")
            .arg("-w")
            .arg("-t")
            .arg("120")
            .arg("-D")
            .arg(&pgdata)
            .arg("-l")
            .arg(&log)
            .arg("-o")
            .arg(&opts);
        let mut cluster = ManagedCluster {
            bin,
            pgdata,
            port,
            socket_dir: socket_dir.path().to_path_buf(),
            socket_guard: Some(socket_dir),
            log,
            run_as,
            created,
            // A temporary cluster is always removed.
            keep_running: spec.keep_running && spec.pgdata.is_some(),
            running: false,
            postmaster: None,
            _ephemeral: ephemeral,
        };
        run(cmd, run_as, "pg_ctl start").map_err(|e| {
            ClusterError::Command(format!(
                "{e}\nserver log: {}\n{}",
                cluster.log.display(),
                tail(&cluster.log, 15)
            ))
        })?;
        cluster.running = true;
        cluster.postmaster = fs::read_to_string(cluster.pgdata.join("postmaster.pid"))
            .ok()
            .and_then(|t| t.lines().next()?.trim().parse().ok());
        Ok(cluster)
    }

    fn run_as() -> Result<Option<RunAs>, ClusterError> {
        // Safety: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Ok(None);
        }
        let name = CString::new("postgres").expect("static");
        // Safety: getpwnam returns NULL or a pointer to static storage we read at once.
        let pw = unsafe { libc::getpwnam(name.as_ptr()) };
        if pw.is_null() {
            return Err(ClusterError::NoPostgresUser);
        }
        // Safety: pw is non-NULL and points to a valid passwd entry.
        let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
        Ok(Some(RunAs { uid, gid }))
    }

    /// TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Directory of the server's Unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// Data directory.
    pub fn pgdata(&self) -> &Path {
        &self.pgdata
    }

    /// Server log file.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Whether this run created the data directory with initdb.
    pub fn created(&self) -> bool {
        self.created
    }

    /// Major version of the server.
    pub fn major_version(&self) -> u32 {
        self.bin.major
    }

    /// libpq-style connection string (superuser `postgres`, trust auth; no password).
    pub fn conninfo(&self, dbname: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname={dbname}",
            self.port
        )
    }

    /// Runs a client binary of this installation (e.g. `psql`) against the cluster.
    pub fn client(&self, program: &str) -> Command {
        let mut cmd = Command::new(self.bin.bin(program));
        cmd.args([
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-U",
            "postgres",
        ]);
        cmd
    }

    /// Stops the server (fast shutdown). Idempotent.
    pub fn stop(&mut self) -> Result<(), ClusterError> {
        if !self.running {
            return Ok(());
        }
        let mut cmd = Command::new(self.bin.bin("pg_ctl"));
        cmd.arg("stop")
            .arg("-w")
            .arg("-m")
            .arg("fast")
            .arg("-D")
            .arg(&self.pgdata);
        run(cmd, self.run_as, "pg_ctl stop")?;
        self.running = false;
        self.reap();
        Ok(())
    }

    /// Collects the exited postmaster if it is our child (see start), and
    /// server processes orphaned to us after a crash.
    fn reap(&mut self) {
        reap_orphaned_postgres();
        let Some(pid) = self.postmaster.take() else {
            return;
        };
        for _ in 0..200 {
            let mut status = 0;
            // Safety: waitpid on one specific pid; WNOHANG never blocks.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r != 0 {
                return; // reaped, or not our child (ECHILD)
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

impl Drop for ManagedCluster {
    fn drop(&mut self) {
        if self.keep_running {
            // The running server still needs its socket directory.
            if let Some(t) = self.socket_guard.take() {
                let _ = t.keep();
            }
            return;
        }
        if self.stop().is_err() {
            // Last resort so no server outlives us: immediate shutdown.
            let mut cmd = Command::new(self.bin.bin("pg_ctl"));
            cmd.arg("stop")
                .arg("-m")
                .arg("immediate")
                .arg("-D")
                .arg(&self.pgdata);
            let _ = run(cmd, self.run_as, "pg_ctl stop -m immediate");
            self.reap();
            // Backends of a crashed server exit a moment after it.
            for _ in 0..20 {
                std::thread::sleep(std::time::Duration::from_millis(50));
                reap_orphaned_postgres();
            }
        }
    }
}

/// Reaps exited `postgres` processes whose parent is this process: backends
/// of a crashed server get reparented to us as the subreaper. Only those
/// specific zombies are waited for, never any other child.
fn reap_orphaned_postgres() {
    let me = std::process::id() as i32;
    let Ok(entries) = fs::read_dir("/proc") else {
        return;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ..."; comm may hold spaces, so split at the last ')'.
        let Some((head, tail)) = stat.rsplit_once(')') else {
            continue;
        };
        let comm = head.split_once('(').map_or("", |(_, c)| c);
        let mut rest = tail.split_whitespace();
        let (state, ppid) = (rest.next(), rest.next().and_then(|p| p.parse::<i32>().ok()));
        if comm == "postgres" && state == Some("Z") && ppid == Some(me) {
            let mut status = 0;
            // Safety: waitpid on one specific zombie child; WNOHANG never blocks.
            unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        }
    }
}

/// Gives `dir` to the server's user (mode 0700, as initdb wants).
fn hand_over(dir: &Path, run_as: Option<RunAs>) -> Result<(), ClusterError> {
    let Some(r) = run_as else { return Ok(()) };
    let c = CString::new(dir.as_os_str().as_encoded_bytes()).expect("no NUL in paths");
    // Safety: chown on a path we own; errors are reported below.
    if unsafe { libc::chown(c.as_ptr(), r.uid, r.gid) } != 0 {
        return Err(ClusterError::Io(format!(
            "cannot hand {} to user postgres: {}",
            dir.display(),
            std::io::Error::last_os_error()
        )));
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .map_err(|e| ClusterError::Io(format!("{}: {e}", dir.display())))
}

fn run(mut cmd: Command, run_as: Option<RunAs>, what: &str) -> Result<Output, ClusterError> {
    if let Some(r) = run_as {
        cmd.uid(r.uid).gid(r.gid);
        // The server's user cannot enter root's working directory.
        cmd.current_dir("/");
    }
    let out = cmd.output().map_err(|e| {
        ClusterError::Command(format!("{what}: cannot run {:?}: {e}", cmd.get_program()))
    })?;
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
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Single-quotes `s` for the shell pg_ctl starts the server through.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The last `n` lines of a file, for error messages.
fn tail(path: &Path, n: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_and_settings() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        let bad = ClusterSpec {
            settings: vec!["novalue".into()],
            ..Default::default()
        };
        assert!(matches!(
            ManagedCluster::start(&bad),
            Err(ClusterError::BadSetting(_))
        ));
        let bad = ClusterSpec {
            settings: vec!["a b=1".into()],
            ..Default::default()
        };
        assert!(matches!(
            ManagedCluster::start(&bad),
            Err(ClusterError::BadSetting(_))
        ));
    }

    #[test]
    fn explicit_bin_dir_must_hold_the_server() {
        let d = tempfile::tempdir().unwrap();
        assert!(matches!(
            PgBinaries::find(Some(d.path())),
            Err(ClusterError::NoBinaries(_))
        ));
    }
}
