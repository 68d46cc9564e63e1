//! Finding a PostgreSQL installation's server binaries (`--pg-bin`,
//! `pg_config`, PATH, `/usr/lib/postgresql/*/bin`) and its major version.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::spec::ClusterError;

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

    pub(super) fn at(dir: &Path) -> Option<PgBinaries> {
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

    pub(super) fn bin(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}
