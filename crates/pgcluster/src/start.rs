//! Starting a cluster, step by step: stale runs swept; a server that already
//! runs attached to; else the data directory (given or temporary) and its
//! private socket directory, the watchdog, initdb with a random password when
//! there is no cluster yet, pg_hba secured for `--listen`, and `pg_ctl start`
//! on a free port (inside the memory cgroup when limited). Also the user the
//! server runs as (`postgres` when csdchar is root).

use std::ffi::CString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use csdchar_pgwire::conn::ConnTarget;
use csdchar_pgwire::wire::WireConn;

use crate::tls;
use crate::{MadeForStart, ManagedCluster};

use crate::access::{
    check_listen, chown, hand_over, is_loopback, parse_settings, private_dir, random_password,
    read_password, remove_recorded_socket_dir, secure_hba, socket_path_fits, unreachable_ancestor,
    write_private,
};
use crate::binaries::PgBinaries;
use crate::cgroup::{MemCgroup, MemoryHierarchy, sweep_stale_cgroups};
use crate::command::{conninfo_value, free_port, run, run_in, shell_quote, shell_word, tail};
use crate::process::{PidFile, PostmasterWatch, Watchdog, proc_start_time, process_alive};
use crate::spec::{
    ClusterError, ClusterSpec, NoEnv, PASSWORD_FILE, RunAs, SOCKET_PREFIX, SOCKET_RECORD,
    SOCKET_SUBDIR, TEMP_PREFIX, TEMP_ROOT, human_bytes,
};
use crate::stale::{sweep_stale, write_marker};

impl ManagedCluster {
    /// Attaches to the server of `spec.pgdata` if it already runs; otherwise
    /// creates the cluster if its data directory has none and starts it on a
    /// free port, reachable as described in the module doc. Stale temporary
    /// directories of dead runs are cleaned up first (see [`Self::notes`]).
    pub fn start(spec: &ClusterSpec) -> Result<ManagedCluster, ClusterError> {
        let mut settings = parse_settings(&spec.settings)?;
        let mut listen = spec.listen.clone();
        // `--pg-set listen_addresses=…` gets the same hardening as `listen`.
        if let Some(i) = settings.iter().position(|(k, _)| k == "listen_addresses") {
            let (_, v) = settings.remove(i);
            let v = v.trim_matches('\'').trim().to_string();
            if listen.is_none() && !v.is_empty() {
                listen = Some(v);
            }
        }
        if let Some(l) = &listen {
            check_listen(l)?;
        }
        if spec.tls && listen.is_none() {
            return Err(ClusterError::TlsWithoutListen);
        }
        let bin = PgBinaries::find(spec.pg_bin.as_deref())?;
        let run_as = Self::run_as()?;
        let io = |what: &str, e: std::io::Error| ClusterError::Io(format!("{what}: {e}"));
        let mut notes = sweep_stale(Path::new(TEMP_ROOT));
        if run_as.is_some() {
            notes.extend(sweep_stale_cgroups());
        }

        let user_pgdata = match &spec.pgdata {
            // The server's commands run from "/", so a relative path would point elsewhere.
            Some(p) => Some(std::path::absolute(p).map_err(|e| io(&p.display().to_string(), e))?),
            None => None,
        };
        if let Some(p) = &user_pgdata
            && let Some(c) = Self::attach(
                &bin,
                p,
                run_as,
                &settings,
                &listen,
                spec.memory_limit,
                &mut notes,
            )?
        {
            return Ok(c);
        }
        // Checked before initdb, so a limit that cannot work fails at once.
        let hierarchy = match spec.memory_limit {
            Some(limit) => Some(MemoryHierarchy::for_limit(limit)?),
            None => None,
        };

        let (pgdata, ephemeral) = match user_pgdata {
            Some(p) => (p, None),
            None => {
                let t = tempfile::Builder::new()
                    .prefix(TEMP_PREFIX)
                    .permissions(fs::Permissions::from_mode(0o700))
                    .tempdir_in(TEMP_ROOT)
                    .map_err(|e| io("temporary data directory", e))?;
                (t.path().join("pgdata"), Some(t))
            }
        };
        if let Some(t) = &ephemeral {
            hand_over(t.path(), run_as)?;
        }
        // The socket directory: inside the data directory when the path fits.
        let inside = pgdata.join(SOCKET_SUBDIR);
        let (socket_dir, socket_guard) = if socket_path_fits(&inside) {
            (inside, None)
        } else {
            remove_recorded_socket_dir(&pgdata);
            let t = tempfile::Builder::new()
                .prefix(SOCKET_PREFIX)
                .permissions(fs::Permissions::from_mode(0o700))
                .tempdir_in("/tmp")
                .map_err(|e| io("socket directory", e))?;
            hand_over(t.path(), run_as)?;
            (t.path().to_path_buf(), Some(t))
        };
        // From here on, a csdchar that dies leaves the cleanup to the watchdog.
        let watchdog = Watchdog::spawn(
            &bin.bin("pg_ctl"),
            &pgdata,
            ephemeral.as_ref().map(|t| t.path()),
            socket_guard.as_ref().map(|t| t.path()),
            run_as,
        )?;
        if let Some(t) = &ephemeral {
            write_marker(t.path(), &watchdog)?;
        }
        let mut cluster = ManagedCluster {
            bin,
            pgdata: pgdata.clone(),
            port: 0,
            socket_dir: socket_dir.clone(),
            socket_guard,
            log: pgdata.join("csdchar-server.log"),
            run_as,
            created: false,
            // A temporary cluster is always removed.
            keep_running: spec.keep_running && ephemeral.is_none(),
            running: false,
            attached: false,
            listen: listen.clone(),
            password_file: None,
            notes,
            postmaster: None,
            watchdog: Some(watchdog),
            ephemeral,
            memory_limit: None,
            memory_cgroup: None,
            made: None,
        };
        let host_auth = if cluster.bin.major >= 10 {
            "scram-sha-256"
        } else {
            "md5"
        };

        let mut password = read_password(&pgdata.join(PASSWORD_FILE));
        cluster.created = !pgdata.join("PG_VERSION").exists();
        if cluster.created {
            if let Some(r) = run_as {
                unreachable_ancestor(&pgdata, r)?;
            }
            let pw = random_password()?;
            // A temporary directory goes anyway; a given one is put back as it was.
            if cluster.ephemeral.is_none() {
                use std::os::unix::fs::MetadataExt;
                cluster.made = Some(match fs::metadata(&pgdata) {
                    Ok(m) => MadeForStart::Contents {
                        uid: m.uid(),
                        gid: m.gid(),
                        mode: m.mode() & 0o7777,
                    },
                    Err(_) => MadeForStart::Directory,
                });
            }
            fs::create_dir_all(&pgdata).map_err(|e| io(&pgdata.display().to_string(), e))?;
            hand_over(&pgdata, run_as)?;
            // initdb reads the password from a file the server's user can read;
            // it must not sit in the (still empty) data directory.
            let pw_dir = tempfile::Builder::new()
                .prefix("csdchar-pwfile")
                .permissions(fs::Permissions::from_mode(0o700))
                .tempdir()
                .map_err(|e| io("initdb password file", e))?;
            hand_over(pw_dir.path(), run_as)?;
            let pwfile = pw_dir.path().join("pw");
            write_private(&pwfile, &format!("{pw}\n"), run_as)?;
            let mut cmd = Command::new(cluster.bin.bin("initdb"));
            cmd.arg("-D")
                .arg(&pgdata)
                .arg("--auth-local=trust")
                .arg(format!("--auth-host={host_auth}"))
                .arg("--pwfile")
                .arg(&pwfile)
                .args(["-U", "postgres", "-E", "UTF8", "--no-sync"]);
            run(cmd, run_as, "initdb")?;
            password = Some(pw);
        }
        // The socket directory inside the data directory exists only after initdb.
        if cluster.socket_guard.is_none() {
            private_dir(&socket_dir, run_as)?;
            let _ = fs::remove_file(pgdata.join(SOCKET_RECORD));
        } else {
            write_private(
                &pgdata.join(SOCKET_RECORD),
                &format!("{}\n", socket_dir.display()),
                run_as,
            )?;
        }
        let custom_hba = settings.iter().any(|(k, _)| k == "hba_file");
        let mut set_password = false;
        if let Some(l) = &listen {
            if custom_hba {
                cluster.notes.push(
                    "--listen with a custom hba_file: its rules decide who may log in over TCP"
                        .into(),
                );
            } else {
                secure_hba(
                    &pgdata,
                    host_auth,
                    !is_loopback(l),
                    run_as,
                    &mut cluster.notes,
                )?;
            }
            if password.is_none() {
                password = Some(random_password()?);
                set_password = true;
            }
            if spec.tls {
                if !custom_hba {
                    tls::require_tls_logins(&pgdata, run_as, &mut cluster.notes)?;
                }
                settings.extend(tls::ensure_certificates(&pgdata, l, run_as)?);
            }
        }

        // The server writes its log as its own user, inside the data directory.
        let log = cluster.log.clone();
        fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| io(&log.display().to_string(), e))?;
        chown(&log, run_as);
        let port = free_port().map_err(|e| io("finding a free port", e))?;
        let mut opts = format!(
            "-p {port} -k {} -c {} -c unix_socket_permissions=0700",
            shell_quote(&socket_dir.display().to_string()),
            shell_quote(&format!(
                "listen_addresses={}",
                listen.as_deref().unwrap_or("")
            )),
        );
        for (k, v) in &settings {
            opts.push_str(&format!(" -c {}", shell_quote(&format!("{k}={v}"))));
        }
        // pg_ctl daemonizes the server; as a child subreaper we inherit it when
        // pg_ctl exits, so it can be reaped after stopping instead of lingering
        // as a zombie under an init that does not reap.
        // (Any pid given sets the flag; init is the conventional one.)
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::Pid::INIT));
        let mut cmd = Command::new(cluster.bin.bin("pg_ctl"));
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
        if let (Some(h), Some(limit)) = (&hierarchy, spec.memory_limit) {
            let cg = MemCgroup::create(h, limit, &mut cluster.notes)?;
            cluster.memory_limit = Some(cg.limit);
            cluster.memory_cgroup = Some(cg);
        }
        let started = run_in(cmd, run_as, "pg_ctl start", cluster.memory_cgroup.as_ref());
        let pid_file = PidFile::read(&pgdata);
        // Whatever came up is stopped again by drop, also after a failed start.
        cluster.running = pid_file
            .as_ref()
            .is_some_and(|p| process_alive(p.pid, None));
        cluster.postmaster = pid_file.as_ref().map(|p| PostmasterWatch {
            pgdata: pgdata.clone(),
            pid: p.pid,
            start: proc_start_time(p.pid),
        });
        if let Err(e) = started {
            let limit = cluster.memory_limit.map_or(String::new(), |l| {
                format!(
                    "\n(the server runs under a memory limit of {}: shared_buffers and the backends must fit in it)",
                    human_bytes(l)
                )
            });
            let log_is = if cluster.made.is_some() {
                format!(
                    "server log (removed with the new cluster in {}, which did not start)",
                    pgdata.display()
                )
            } else {
                format!("server log: {}", log.display())
            };
            return Err(ClusterError::Command(format!(
                "{e}\n{log_is}\n{}{limit}",
                tail(&log, 15)
            )));
        }
        cluster.running = true;
        // A --pg-set port or unix_socket_directories wins over ours; postmaster.pid knows.
        cluster.port = pid_file
            .as_ref()
            .map_or(port, |p| if p.port != 0 { p.port } else { port });
        if let Some(p) = &pid_file
            && !p.socket_dir.is_empty()
        {
            cluster.socket_dir = PathBuf::from(&p.socket_dir);
        }
        if let Some(pw) = &password {
            if set_password {
                cluster.set_password(pw, host_auth)?;
            }
            let file = pgdata.join(PASSWORD_FILE);
            write_private(
                &file,
                &format!("*:{}:*:postgres:{pw}\n", cluster.port),
                run_as,
            )?;
            cluster.password_file = Some(file);
        }
        if let (true, Some(l), Some(file)) = (spec.tls, &listen, &cluster.password_file) {
            // A connection string that works as printed: host, port, user
            // and the CA; the password from the file libpq's PGPASSFILE reads.
            let host = match l.split(',').next().unwrap_or("").trim() {
                "*" | "0.0.0.0" | "::" | "" => "localhost",
                h => h,
            };
            cluster.notes.push(format!(
                "TLS: connect with \"host={host} port={} user=postgres sslmode=verify-full sslrootcert={}\" and PGPASSFILE={} (psql, any libpq client, or csdchar's --url; from another host, copies of both files)",
                cluster.port,
                conninfo_value(&pgdata.join(tls::ROOT_CERT).display().to_string()),
                shell_word(&file.display().to_string()),
            ));
        }
        // Started: from here on the cluster is the user's.
        cluster.made = None;
        Ok(cluster)
    }

    /// Gives `postgres` the password `pw` (a data directory without csdchar's
    /// password file, about to be reachable over TCP). Only the verifier goes
    /// to the server, so the clear text shows up in no statement log.
    fn set_password(&self, pw: &str, host_auth: &str) -> Result<(), ClusterError> {
        let verifier = if host_auth == "md5" {
            postgres_protocol::password::md5(pw.as_bytes(), "postgres")
        } else {
            postgres_protocol::password::scram_sha_256(pw.as_bytes())
        };
        let fail = |e: &dyn std::fmt::Display| {
            ClusterError::Command(format!("setting the password of postgres: {e}"))
        };
        let target = ConnTarget::parse(&self.conninfo("postgres"), &NoEnv).map_err(|e| fail(&e))?;
        let mut conn = WireConn::connect(&target, None).map_err(|e| fail(&e))?;
        conn.simple(&format!("ALTER ROLE postgres PASSWORD '{verifier}'"))
            .map_err(|e| fail(&e))?;
        Ok(())
    }

    pub(super) fn run_as() -> Result<Option<RunAs>, ClusterError> {
        if rustix::process::geteuid().as_raw() != 0 {
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
}
