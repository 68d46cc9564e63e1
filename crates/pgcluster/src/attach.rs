//! Attaching to a server that already runs on a `--pgdata`: found through
//! its `postmaster.pid` and socket; settings, `--listen` and the memory
//! limit cannot change it, so each is noted instead.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::ManagedCluster;

use crate::binaries::PgBinaries;
use crate::process::{PidFile, process_alive};
use crate::spec::{ClusterError, PASSWORD_FILE, RunAs, human_bytes};

impl ManagedCluster {
    /// Attaches to the running server of `pgdata`, if there is one; a stale
    /// `postmaster.pid` (dead pid) is left to pg_ctl start.
    pub(super) fn attach(
        bin: &PgBinaries,
        pgdata: &Path,
        run_as: Option<RunAs>,
        settings: &[(String, String)],
        listen: &Option<String>,
        memory_limit: Option<u64>,
        notes: &mut Vec<String>,
    ) -> Result<Option<ManagedCluster>, ClusterError> {
        let Some(mut pf) = PidFile::read(pgdata) else {
            return Ok(None);
        };
        if !process_alive(pf.pid, None) {
            return Ok(None);
        }
        // A server another csdchar is starting right now: wait until it is up.
        let deadline = Instant::now() + Duration::from_secs(60);
        while pf.status == "starting" && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            match PidFile::read(pgdata) {
                Some(p) if process_alive(p.pid, None) => pf = p,
                // It went away meanwhile: start it ourselves.
                _ => return Ok(None),
            }
        }
        let stop_hint = format!("stop it with: pg_ctl stop -D {}", pgdata.display());
        if pf.socket_dir.is_empty() {
            return Err(ClusterError::Command(format!(
                "a server (pid {}) already runs on {} without a Unix socket, so csdchar cannot attach; {stop_hint}",
                pf.pid,
                pgdata.display()
            )));
        }
        let socket = Path::new(&pf.socket_dir).join(format!(".s.PGSQL.{}", pf.port));
        if let Err(e) = std::os::unix::net::UnixStream::connect(&socket) {
            return Err(ClusterError::Command(format!(
                "a server (pid {}) already runs on {} but its socket {} does not answer ({e}); {stop_hint}",
                pf.pid,
                pgdata.display(),
                socket.display()
            )));
        }
        notes.push(format!(
            "attached to the server already running on {} (pid {}); it keeps running afterwards",
            pgdata.display(),
            pf.pid
        ));
        if !settings.is_empty() {
            notes.push(
                "--pg-set ignored: the server already runs (stop it to apply settings)".into(),
            );
        }
        if listen.is_some() {
            notes.push(format!(
                "--listen ignored: the server already runs ({})",
                if pf.listen.is_empty() {
                    "Unix socket only".to_string()
                } else {
                    format!("it listens on {}", pf.listen)
                }
            ));
        }
        if let Some(limit) = memory_limit {
            notes.push(format!(
                "--pg-memory-limit {} ignored: the server already runs (pid {}) and was not started in a memory cgroup of this run (stop it to apply the limit)",
                human_bytes(limit),
                pf.pid
            ));
        }
        let password_file = pgdata.join(PASSWORD_FILE);
        if !pf.listen.is_empty() && !password_file.exists() {
            notes.push(format!(
                "warning: the server listens on TCP ({}) and has no csdchar password; its pg_hba.conf decides who may log in — restart it with csdchar to apply csdchar's defaults",
                pf.listen
            ));
        }
        Ok(Some(ManagedCluster {
            bin: bin.clone(),
            pgdata: pgdata.to_path_buf(),
            port: pf.port,
            socket_dir: PathBuf::from(&pf.socket_dir),
            socket_guard: None,
            log: pgdata.join("csdchar-server.log"),
            run_as,
            created: false,
            keep_running: true,
            running: true,
            attached: true,
            listen: (!pf.listen.is_empty()).then(|| pf.listen.clone()),
            password_file: (!pf.listen.is_empty() && password_file.exists())
                .then_some(password_file),
            notes: std::mem::take(notes),
            postmaster: None,
            watchdog: None,
            ephemeral: None,
            memory_limit: None,
            memory_cgroup: None,
            made: None,
        }))
    }
}
