//! Stopping a cluster: `pg_ctl stop`, or, for a postmaster that died, ending
//! what is left of its server; and the drop that stops (or keeps) the server,
//! removes a temporary cluster and tells the watchdog it is done.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::{MadeForStart, ManagedCluster};

use crate::command::run;
use crate::process::{
    PidFile, PostmasterWatch, end_server_processes, reap_orphaned_postgres, remove_shmem_segment,
};
use crate::spec::ClusterError;

impl ManagedCluster {
    /// Stops the server (fast shutdown). Idempotent. Also stops an attached
    /// server: an explicit request, unlike drop. A server this run started
    /// whose postmaster has exited is not waited for but cleaned up after
    /// (see "A server that dies" in the module doc).
    pub fn stop(&mut self) -> Result<(), ClusterError> {
        if !self.running {
            return Ok(());
        }
        // pg_ctl would wait its whole timeout for a dead postmaster's zombie.
        if self.postmaster_exited() {
            self.clean_up_after_postmaster();
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
        // The server has exited (pg_ctl -w waits for that), so it is empty now.
        drop(self.memory_cgroup.take());
        Ok(())
    }

    /// The postmaster this run started, to ask whether it has exited (None
    /// when attached: whoever started that server may restart it).
    pub fn postmaster_watch(&self) -> Option<PostmasterWatch> {
        self.postmaster.clone()
    }

    /// Whether the postmaster this run started has exited while it should run.
    fn postmaster_exited(&self) -> bool {
        self.postmaster
            .as_ref()
            .is_some_and(PostmasterWatch::exited)
    }

    /// Ends what is left of a server whose postmaster has exited, as its
    /// shutdown would have (see the module doc): processes, zombies, shared
    /// memory, `postmaster.pid`, the socket and its lock file.
    fn clean_up_after_postmaster(&mut self) {
        let Some(pid) = self.postmaster.as_ref().map(|w| w.pid) else {
            return;
        };
        // Only a file of that postmaster's is ours to remove.
        let pid_file = PidFile::read(&self.pgdata).filter(|p| p.pid == pid);
        end_server_processes(&self.pgdata);
        self.running = false;
        self.reap();
        if let Some((_, id)) = pid_file.as_ref().and_then(|p| p.shmem) {
            remove_shmem_segment(id, pid);
        }
        if let Some(p) = &pid_file {
            if !p.socket_dir.is_empty() {
                let socket = Path::new(&p.socket_dir).join(format!(".s.PGSQL.{}", p.port));
                let _ = fs::remove_file(&socket);
                let mut lock = socket.into_os_string();
                lock.push(".lock");
                let _ = fs::remove_file(lock);
            }
            let _ = fs::remove_file(self.pgdata.join("postmaster.pid"));
        }
        // No server process is left in it.
        drop(self.memory_cgroup.take());
    }

    /// Collects the exited postmaster if it is our child (see start), and
    /// server processes orphaned to us after a crash.
    fn reap(&mut self) {
        reap_orphaned_postgres();
        let Some(pid) = self.postmaster.take().map(|w| w.pid) else {
            return;
        };
        let Some(pid) = rustix::process::Pid::from_raw(pid) else {
            return;
        };
        for _ in 0..200 {
            match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG) {
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                _ => return, // reaped, or not our child (ECHILD)
            }
        }
    }
}

impl ManagedCluster {
    /// Removes the cluster a failed start created in a given data directory
    /// (its server stopped before): the directory, or what it holds.
    fn remove_what_start_made(&self, made: MadeForStart) {
        match made {
            MadeForStart::Directory => {
                let _ = fs::remove_dir_all(&self.pgdata);
            }
            MadeForStart::Contents { uid, gid, mode } => {
                for e in fs::read_dir(&self.pgdata).into_iter().flatten().flatten() {
                    let p = e.path();
                    let _ = match e.file_type() {
                        Ok(t) if t.is_dir() => fs::remove_dir_all(&p),
                        _ => fs::remove_file(&p),
                    };
                }
                let _ = std::os::unix::fs::chown(&self.pgdata, Some(uid), Some(gid));
                let _ = fs::set_permissions(&self.pgdata, fs::Permissions::from_mode(mode));
            }
        }
    }
}

impl Drop for ManagedCluster {
    fn drop(&mut self) {
        if self.attached {
            return;
        }
        // A start that failed keeps nothing running.
        if self.keep_running && self.made.is_none() {
            // The running server still needs its socket directory.
            if let Some(t) = self.socket_guard.take() {
                let _ = t.keep();
            }
            if let Some(w) = self.watchdog.take() {
                w.finish(Some("keep"));
            }
            // The server still runs in it; a later sweep removes it once empty.
            if let Some(cg) = self.memory_cgroup.take() {
                cg.keep();
            }
            return;
        }
        if self.stop().is_err() && self.postmaster_exited() {
            // It died while pg_ctl stop waited.
            self.clean_up_after_postmaster();
        } else if self.running {
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
                std::thread::sleep(Duration::from_millis(50));
                reap_orphaned_postgres();
            }
        }
        // Only now is the cgroup empty.
        drop(self.memory_cgroup.take());
        // Synchronously, as before; then the watchdog has nothing left to do.
        drop(self.ephemeral.take());
        if let Some(made) = self.made.take() {
            self.remove_what_start_made(made);
        }
        drop(self.socket_guard.take());
        if let Some(w) = self.watchdog.take() {
            w.finish(Some("done"));
        }
    }
}
