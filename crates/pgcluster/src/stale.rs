//! Temporary clusters of dead runs: the marker in each temporary directory
//! (watchdog and csdchar pids with start times) and the sweep that removes
//! the directories whose owners are gone.

use std::fs;
use std::path::Path;

use crate::access::write_file;
use crate::process::{PidFile, Watchdog, proc_start_time, process_alive};
use crate::spec::{ClusterError, RUN_MARKER, TEMP_PREFIX};

/// Writes the marker of a temporary cluster's directory (see the module doc).
pub(super) fn write_marker(dir: &Path, watchdog: &Watchdog) -> Result<(), ClusterError> {
    let me = std::process::id() as i32;
    let text = format!(
        "csdchar-run 1\npid {me} {}\nuid {}\nwatchdog {} {}\n",
        proc_start_time(me).unwrap_or(0),
        rustix::process::geteuid().as_raw(),
        watchdog.pid(),
        proc_start_time(watchdog.pid()).unwrap_or(0),
    );
    // Root's marker in the server user's directory: the watchdog can still remove it.
    write_file(&dir.join(RUN_MARKER), &text, 0o644, None)
}

/// A marker's content: (csdchar pid, start), uid, (watchdog pid, start).
pub(super) type Marker = ((i32, u64), u32, (i32, u64));

pub(super) fn read_marker(dir: &Path) -> Option<Marker> {
    let text = fs::read_to_string(dir.join(RUN_MARKER)).ok()?;
    let mut lines = text.lines();
    if lines.next()? != "csdchar-run 1" {
        return None;
    }
    let pair = |l: &str, key: &str| -> Option<(i32, u64)> {
        let mut w = l.strip_prefix(key)?.split_whitespace();
        Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
    };
    let run = pair(lines.next()?, "pid ")?;
    let uid = lines.next()?.strip_prefix("uid ")?.trim().parse().ok()?;
    let watchdog = pair(lines.next()?, "watchdog ")?;
    Some((run, uid, watchdog))
}

/// Removes the temporary cluster directories of dead runs under `root` and
/// reports the ones it must leave; one note each (see the module doc).
pub(super) fn sweep_stale(root: &Path) -> Vec<String> {
    let mut notes = Vec::new();
    let Ok(entries) = fs::read_dir(root) else {
        return notes;
    };
    let me = rustix::process::geteuid().as_raw();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(suffix) = name.strip_prefix(TEMP_PREFIX) else {
            continue;
        };
        let dir = e.path();
        // A symlink named like ours is not ours.
        if !fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let pgdata = dir.join("pgdata");
        let server = PidFile::read(&pgdata)
            .map(|p| p.pid)
            .filter(|&pid| process_alive(pid, None));
        match read_marker(&dir) {
            Some(((pid, start), uid, (wpid, wstart))) => {
                if uid != me || process_alive(pid, Some(start)) || process_alive(wpid, Some(wstart))
                {
                    continue; // another user's, or a live run, or cleanup under way
                }
                if let Some(spid) = server {
                    notes.push(format!(
                        "left {}: its csdchar run (pid {pid}) is gone but its server (pid {spid}) still runs; stop it with: pg_ctl stop -D {}",
                        dir.display(),
                        pgdata.display()
                    ));
                    continue;
                }
                match fs::remove_dir_all(&dir) {
                    Ok(()) => notes.push(format!(
                        "removed {}: temporary cluster of a csdchar run (pid {pid}) that is gone",
                        dir.display()
                    )),
                    Err(e) => notes.push(format!("could not remove {}: {e}", dir.display())),
                }
            }
            None => {
                // An older csdchar's directory: tempfile's six characters, only pgdata inside.
                let only_pgdata = fs::read_dir(&dir).is_ok_and(|rd| {
                    let names: Vec<_> = rd.flatten().map(|e| e.file_name()).collect();
                    names.len() == 1 && names[0] == "pgdata"
                });
                let owner = fs::metadata(&dir).map(|m| std::os::unix::fs::MetadataExt::uid(&m));
                let owned = owner.is_ok_and(|u| u == me || me == 0);
                if suffix.len() == 6 && only_pgdata && owned && pgdata.join("PG_VERSION").exists() {
                    notes.push(match server {
                        Some(spid) => format!(
                            "{} looks like a temporary cluster of an older csdchar; its server (pid {spid}) still runs: pg_ctl stop -D {}, then remove the directory",
                            dir.display(),
                            pgdata.display()
                        ),
                        None => format!(
                            "{} looks like a temporary cluster of an older csdchar, left behind; remove it if no one uses it",
                            dir.display()
                        ),
                    });
                }
            }
        }
    }
    notes
}
