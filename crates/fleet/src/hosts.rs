//! Hosts files: one ssh destination per line, as pdsh's and MPI's.
//!
//! ```text
//! # comments and blank lines are ignored
//! load1
//! bench@load2.example.com csdchar=/opt/csdchar/bin/csdchar workdir=/var/tmp
//! ssh://load3:2222 sudo
//! ```
//!
//! A destination is anything `ssh` takes (an `ssh_config` alias, `user@host`,
//! `ssh://user@host:port`). After it, per-host overrides: `csdchar=PATH` (the
//! program on that host, default `csdchar` on its `PATH`), `workdir=DIR` (where
//! its result is written before it is fetched, default `/var/tmp`), `sudo`
//! (run it with `sudo -n`, for device targets), `name=NAME` (how results and
//! messages name it, default the destination).

use crate::error::FleetError;

/// One load host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// How files and messages name it (unique in a run).
    pub name: String,
    /// The ssh destination.
    pub destination: String,
    /// The csdchar program on the host.
    pub csdchar: String,
    /// The directory on the host its result is written in before it is fetched.
    pub workdir: String,
    /// Whether csdchar runs under `sudo -n` there.
    pub sudo: bool,
}

impl Host {
    /// A host reached as `destination` with the defaults.
    pub fn new(destination: &str) -> Self {
        Host {
            name: destination.to_string(),
            destination: destination.to_string(),
            csdchar: "csdchar".to_string(),
            workdir: "/var/tmp".to_string(),
            sudo: false,
        }
    }
}

/// Whether `s` is usable as a file name for a host's results.
fn file_safe(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-@:".contains(c))
}

/// Parses a hosts file's text; errors name the line.
pub fn parse_hosts(text: &str) -> Result<Vec<Host>, FleetError> {
    let mut hosts: Vec<Host> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let bad = |why: String| FleetError::Hosts(format!("--hosts line {}: {why}", i + 1));
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let dest = words.next().expect("a non-empty line has a word");
        if dest.starts_with('-') {
            return Err(bad(format!(
                "'{dest}' is not an ssh destination (it would be read as an option)"
            )));
        }
        let mut host = Host::new(dest);
        host.name = dest
            .trim_start_matches("ssh://")
            .replace('/', "_")
            .to_string();
        for w in words {
            match w.split_once('=') {
                Some(("csdchar", v)) if !v.is_empty() => host.csdchar = v.to_string(),
                Some(("workdir", v)) if v.starts_with('/') => host.workdir = v.to_string(),
                Some(("name", v)) if file_safe(v) => host.name = v.to_string(),
                None if w == "sudo" => host.sudo = true,
                _ => {
                    return Err(bad(format!(
                        "'{w}' is not one of csdchar=PATH, workdir=/ABSOLUTE/DIR, name=NAME \
                         (letters, digits, . _ - @ :), sudo"
                    )));
                }
            }
        }
        if !file_safe(&host.name) {
            return Err(bad(format!(
                "'{}' cannot name a host's files; add name=NAME",
                host.name
            )));
        }
        if hosts.iter().any(|h| h.name == host.name) {
            return Err(bad(format!("host '{}' is listed twice", host.name)));
        }
        hosts.push(host);
    }
    if hosts.is_empty() {
        return Err(FleetError::Hosts(
            "--hosts: the file names no host (one ssh destination per line)".to_string(),
        ));
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_and_overrides() {
        let h = parse_hosts(
            "# load hosts\n\nload1\nbench@load2 csdchar=/opt/c workdir=/srv sudo\n\
             ssh://load3:2222 name=three # a comment\n",
        )
        .unwrap();
        assert_eq!(h.len(), 3);
        assert_eq!(h[0], Host::new("load1"));
        assert_eq!(h[1].name, "bench@load2");
        assert_eq!(h[1].csdchar, "/opt/c");
        assert_eq!(h[1].workdir, "/srv");
        assert!(h[1].sudo);
        assert_eq!(h[2].destination, "ssh://load3:2222");
        assert_eq!(h[2].name, "three");
    }

    #[test]
    fn bad_lines_are_named() {
        for (text, line, what) in [
            ("a\n-oProxyCommand=x\n", 2, "not an ssh destination"),
            ("a\na\n", 2, "listed twice"),
            ("a workdir=rel\n", 1, "workdir=/ABSOLUTE/DIR"),
            ("a colour=blue\n", 1, "'colour=blue'"),
            ("a name=../x\n", 1, "name=NAME"),
        ] {
            let e = parse_hosts(text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--hosts line {line}: ")), "{e}");
            assert!(e.contains(what), "{e}");
        }
        assert!(
            parse_hosts("# none\n")
                .unwrap_err()
                .to_string()
                .contains("no host")
        );
    }
}
