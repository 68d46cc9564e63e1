//! Who may reach a cluster: settings and `--listen` checked, pg_hba lines
//! (trust for the private socket only, scram over TCP), the private socket
//! directory, the random password and its 0600 file, and the data
//! directory handed to the server's user.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::ManagedCluster;

use crate::spec::{ClusterError, RunAs, SOCKET_PREFIX, SOCKET_RECORD, SUN_PATH_MAX};

/// Splits `key=value` settings; the key must be a plain parameter name.
pub(super) fn parse_settings(settings: &[String]) -> Result<Vec<(String, String)>, ClusterError> {
    settings
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
        .collect()
}

/// `listen_addresses` syntax: comma-separated host names, addresses or `*`.
pub(super) fn validate_listen(l: &str) -> Result<(), ClusterError> {
    let ok = l.split(',').all(|a| {
        let a = a.trim();
        !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || ".:-_*%".contains(c))
    });
    if ok {
        Ok(())
    } else {
        Err(ClusterError::BadListen(l.to_string()))
    }
}

/// Checks `listen_addresses` before anything is made for it: its syntax
/// ([`validate_listen`]), then that each entry but `*` is an address of
/// this host or a name resolving to one, as the server will need when it
/// binds (a name that does not resolve, or an address no interface has,
/// fails pg_ctl after initdb). Tried by binding a TCP socket to port 0
/// there, closed at once.
pub fn check_listen(l: &str) -> Result<(), ClusterError> {
    use std::net::ToSocketAddrs;
    validate_listen(l)?;
    for a in l.split(',').map(str::trim).filter(|a| *a != "*") {
        let unusable = |why: String| ClusterError::ListenUnusable {
            address: a.to_string(),
            why,
        };
        let addrs: Vec<std::net::SocketAddr> = match (a, 0u16).to_socket_addrs() {
            Ok(it) => it.collect(),
            Err(e) => {
                return Err(unusable(format!(
                    "not an IP address, and as a host name it does not resolve ({e})"
                )));
            }
        };
        let mut last = None;
        if !addrs
            .iter()
            .any(|sa| match std::net::TcpListener::bind(sa) {
                Ok(_) => true,
                Err(e) => {
                    last = Some(e);
                    false
                }
            })
        {
            return Err(unusable(format!(
                "no address of this host ({}: {})",
                addrs
                    .iter()
                    .map(|sa| sa.ip().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                last.map_or("nothing to bind".into(), |e| e.to_string())
            )));
        }
    }
    Ok(())
}

/// Whether every listen address is a loopback one (initdb's host lines cover those).
pub(super) fn is_loopback(l: &str) -> bool {
    l.split(',').all(|a| {
        let a = a.trim();
        a == "localhost"
            || a.parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

/// Makes a data directory's pg_hba.conf ask for the password over TCP:
/// `host…` lines with `trust` (an older csdchar's) become `host_auth`, and a
/// non-loopback `listen` gets password lines for any address.
pub(super) fn secure_hba(
    pgdata: &Path,
    host_auth: &str,
    any_address: bool,
    run_as: Option<RunAs>,
    notes: &mut Vec<String>,
) -> Result<(), ClusterError> {
    let path = pgdata.join("pg_hba.conf");
    let text = fs::read_to_string(&path)
        .map_err(|e| ClusterError::Io(format!("{}: {e}", path.display())))?;
    let (mut out, changed) = rewrite_trust_host_lines(&text, host_auth);
    let marker = "# csdchar --listen: password logins from any address";
    let add_any = any_address && !text.contains(marker);
    if add_any {
        if !out.ends_with('\n') && !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!(
            "{marker}\nhost all all 0.0.0.0/0 {host_auth}\nhost all all ::/0 {host_auth}\n"
        ));
    }
    if changed == 0 && !add_any {
        return Ok(());
    }
    let mode = fs::metadata(&path).map_or(0o600, |m| m.permissions().mode() & 0o777);
    write_file(&path, &out, mode, run_as)?;
    if changed > 0 {
        notes.push(format!(
            "{}: {changed} host line(s) changed from trust to {host_auth}, as --listen needs",
            path.display()
        ));
    }
    if add_any {
        notes.push(format!(
            "{}: added {host_auth} lines for any address, as --listen needs",
            path.display()
        ));
    }
    Ok(())
}

/// `text` with the method of its `host*` lines that end in `trust` replaced
/// by `auth`, and how many were.
pub(super) fn rewrite_trust_host_lines(text: &str, auth: &str) -> (String, usize) {
    let mut changed = 0;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let content = body.split('#').next().unwrap_or("");
        let is_host = content
            .split_whitespace()
            .next()
            .is_some_and(|t| t.starts_with("host"));
        let trimmed = content.trim_end();
        // trust takes no options, so it is the line's last word.
        if is_host
            && let Some(head) = trimmed.strip_suffix("trust")
            && head.ends_with(char::is_whitespace)
        {
            out.push_str(head);
            out.push_str(auth);
            out.push_str(&body[trimmed.len()..]);
            out.push_str(nl);
            changed += 1;
        } else {
            out.push_str(line);
        }
    }
    (out, changed)
}

/// Whether a socket in `dir` fits `sun_path` with any port number.
pub(super) fn socket_path_fits(dir: &Path) -> bool {
    dir.as_os_str().len() + "/.s.PGSQL.65535".len() <= SUN_PATH_MAX
}

/// Removes the socket directory outside `pgdata` a previous run recorded
/// (kept for a server that kept running and has stopped since), if it still
/// looks like ours.
pub(super) fn remove_recorded_socket_dir(pgdata: &Path) {
    let Ok(text) = fs::read_to_string(pgdata.join(SOCKET_RECORD)) else {
        return;
    };
    let dir = PathBuf::from(text.trim());
    let ours = dir.parent() == Some(Path::new("/tmp"))
        && dir
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(SOCKET_PREFIX))
        && fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
    if ours {
        let _ = fs::remove_dir_all(&dir);
    }
}

/// Creates (or resets) `dir` as a private directory of the server's user.
pub(super) fn private_dir(dir: &Path, run_as: Option<RunAs>) -> Result<(), ClusterError> {
    if let Ok(m) = fs::symlink_metadata(dir)
        && !m.is_dir()
    {
        fs::remove_file(dir).map_err(|e| ClusterError::Io(format!("{}: {e}", dir.display())))?;
    }
    if !dir.is_dir() {
        fs::DirBuilder::new()
            .mode(0o700)
            .create(dir)
            .map_err(|e| ClusterError::Io(format!("{}: {e}", dir.display())))?;
    }
    if run_as.is_some() {
        hand_over(dir, run_as)
    } else {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| ClusterError::Io(format!("{}: {e}", dir.display())))
    }
}

/// Writes `contents` to `path` (mode 0600, the server's user) via a rename,
/// so no reader sees half a file and no other mode ever applies.
pub(super) fn write_private(
    path: &Path,
    contents: &str,
    run_as: Option<RunAs>,
) -> Result<(), ClusterError> {
    write_file(path, contents, 0o600, run_as)
}

pub(super) fn write_file(
    path: &Path,
    contents: &str,
    mode: u32,
    run_as: Option<RunAs>,
) -> Result<(), ClusterError> {
    let err = |e: std::io::Error| ClusterError::Io(format!("{}: {e}", path.display()));
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".csdchar-new");
    let tmp = PathBuf::from(tmp);
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .map_err(err)?;
    f.write_all(contents.as_bytes()).map_err(err)?;
    drop(f);
    chown(&tmp, run_as);
    fs::rename(&tmp, path).map_err(err)
}

/// Hands a file to the server's user (as root).
pub(super) fn chown(path: &Path, run_as: Option<RunAs>) {
    if let Some(r) = run_as {
        // A failure shows up when the server uses the file.
        let _ = std::os::unix::fs::chown(path, Some(r.uid), Some(r.gid));
    }
}

/// The password in a passfile line `host:port:db:user:password` (last field;
/// `\:` and `\\` escaped).
pub(super) fn read_password(path: &Path) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| !l.trim().is_empty())?;
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => cur.extend(chars.next()),
            ':' if fields.len() < 4 => fields.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    (fields.len() == 4 && !cur.is_empty()).then_some(cur)
}

/// 32 random letters and digits from the kernel's generator (~190 bits).
pub(super) fn random_password() -> Result<String, ClusterError> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::with_capacity(32);
    let mut buf = [0u8; 64];
    while out.len() < 32 {
        let n = match rustix::rand::getrandom(&mut buf[..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(ClusterError::Io(format!("random password: {e}"))),
        };
        // 248 = 4 * 62: rejecting the rest keeps every character equally likely.
        for &b in buf[..n].iter().filter(|&&b| b < 248) {
            if out.len() < 32 {
                out.push(ALPHABET[(b % 62) as usize] as char);
            }
        }
    }
    Ok(out)
}

/// Checks, before anything starts, that the server's user can reach
/// `pgdata` (relative paths are taken from the working directory): the
/// error names `--pgdata` and the directory it cannot enter. Running as the
/// server's own user there is nothing to check; a missing `postgres` user is
/// left to [`ManagedCluster::start`] to report.
pub fn check_pgdata_reachable(pgdata: &Path) -> Result<(), ClusterError> {
    let Ok(Some(r)) = ManagedCluster::run_as() else {
        return Ok(());
    };
    let pgdata = std::path::absolute(pgdata)
        .map_err(|e| ClusterError::Io(format!("--pgdata: {}: {e}", pgdata.display())))?;
    unreachable_ancestor(&pgdata, r)
}

/// As root the server runs as `postgres`, which must be able to enter every
/// directory above the data directory: say which one it cannot (a 0700
/// directory of root's, such as `mktemp -d` makes) instead of initdb's
/// "Permission denied" after the fact.
pub(super) fn unreachable_ancestor(pgdata: &Path, r: RunAs) -> Result<(), ClusterError> {
    use std::os::unix::fs::MetadataExt;
    for dir in pgdata.ancestors().skip(1) {
        let Ok(m) = fs::metadata(dir) else {
            continue; // created below by us, handed over
        };
        let mode = m.mode();
        let can_enter = if m.uid() == r.uid {
            mode & 0o100 != 0
        } else if m.gid() == r.gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !can_enter {
            return Err(ClusterError::Io(format!(
                "--pgdata: the server runs as user postgres, which cannot enter {} (mode {:o}, owner uid {}); \
                 choose a directory it can reach or allow it (chmod o+x {})",
                dir.display(),
                mode & 0o7777,
                m.uid(),
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Gives `dir` to the server's user (mode 0700, as initdb wants).
pub(super) fn hand_over(dir: &Path, run_as: Option<RunAs>) -> Result<(), ClusterError> {
    let Some(r) = run_as else { return Ok(()) };
    if let Err(e) = std::os::unix::fs::chown(dir, Some(r.uid), Some(r.gid)) {
        return Err(ClusterError::Io(format!(
            "cannot hand {} to user postgres: {e}",
            dir.display(),
        )));
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .map_err(|e| ClusterError::Io(format!("{}: {e}", dir.display())))
}
