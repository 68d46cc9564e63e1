//! `--pg-memory-limit`: the memory cgroup (v1 or v2) the server runs in, so
//! the page cache cannot absorb its reads; stale cgroups of dead runs are
//! removed.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::process::process_alive;
use crate::spec::{ClusterError, human_bytes};

/// Name prefix of the memory cgroups csdchar creates: `csdchar-pg-<pid>-<n>`.
pub(super) const CGROUP_PREFIX: &str = "csdchar-pg-";

/// The cgroup interface that offers the memory controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CgroupVersion {
    V1,
    V2,
}

/// Where memory cgroups can be made on this machine (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MemoryHierarchy {
    pub(super) version: CgroupVersion,
    /// The hierarchy's mount point; csdchar's cgroups go right below it.
    pub(super) root: PathBuf,
}

impl MemoryHierarchy {
    /// The hierarchy to use: a v2 mount that offers `memory`, else a v1
    /// memory hierarchy; None when there is neither.
    pub(super) fn detect() -> Option<MemoryHierarchy> {
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mounts = cgroup_mounts(&mountinfo);
        let v2 = mounts.iter().find(|h| {
            h.version == CgroupVersion::V2
                && fs::read_to_string(h.root.join("cgroup.controllers"))
                    .is_ok_and(|c| c.split_whitespace().any(|w| w == "memory"))
        });
        let v1 = mounts.iter().find(|h| {
            h.version == CgroupVersion::V1 && h.root.join("memory.limit_in_bytes").exists()
        });
        v2.or(v1).cloned()
    }

    /// The hierarchy for `limit`, or why the limit cannot be applied.
    pub(super) fn for_limit(limit: u64) -> Result<MemoryHierarchy, ClusterError> {
        if limit == 0 {
            return Err(ClusterError::MemoryLimit(
                "the limit must be above 0".into(),
            ));
        }
        if rustix::process::geteuid().as_raw() != 0 {
            return Err(ClusterError::MemoryLimit(
                "needs root: the server is put in a memory cgroup of its own; run as root or leave the option out".into(),
            ));
        }
        Self::detect().ok_or_else(|| {
            ClusterError::MemoryLimit(
                "this machine offers no memory cgroup controller (no cgroup v2 mount listing memory in cgroup.controllers, no cgroup v1 memory hierarchy in /proc/self/mountinfo)".into(),
            )
        })
    }

    pub(super) fn limit_file(&self) -> &'static str {
        match self.version {
            CgroupVersion::V1 => "memory.limit_in_bytes",
            CgroupVersion::V2 => "memory.max",
        }
    }
}

/// The cgroup mounts in a `/proc/self/mountinfo` text: every cgroup2 mount
/// and every v1 mount with the `memory` controller, in mount order.
pub(super) fn cgroup_mounts(mountinfo: &str) -> Vec<MemoryHierarchy> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        // "id parent maj:min root mountpoint options [optional…] - fstype source superoptions"
        let Some((head, tail)) = line.split_once(" - ") else {
            continue;
        };
        let Some(mount_point) = head.split(' ').nth(4) else {
            continue;
        };
        let mut t = tail.split(' ');
        let (fstype, superopts) = (t.next(), t.nth(1).unwrap_or(""));
        let version = match fstype {
            Some("cgroup2") => CgroupVersion::V2,
            Some("cgroup") if superopts.split(',').any(|o| o == "memory") => CgroupVersion::V1,
            _ => continue,
        };
        out.push(MemoryHierarchy {
            version,
            root: PathBuf::from(unescape_mountinfo(mount_point)),
        });
    }
    out
}

/// mountinfo writes space, tab, newline and backslash as `\ooo` octal.
pub(super) fn unescape_mountinfo(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |n, c| n.wrapping_mul(8) + (c - b'0')));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The memory cgroup of a started server; removed on drop (rmdir, which only
/// succeeds once no process is left in it) unless kept.
#[derive(Debug)]
pub(super) struct MemCgroup {
    pub(super) path: PathBuf,
    /// The limit as read back from the kernel.
    pub(super) limit: u64,
    pub(super) kept: bool,
}

impl MemCgroup {
    /// Creates `csdchar-pg-<pid>-<n>` in `h` with `limit` and notes which it is.
    pub(super) fn create(
        h: &MemoryHierarchy,
        limit: u64,
        notes: &mut Vec<String>,
    ) -> Result<MemCgroup, ClusterError> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let fail =
            |what: String, e: std::io::Error| ClusterError::MemoryLimit(format!("{what}: {e}"));
        if h.version == CgroupVersion::V2 {
            // Children get memory.max only when their parent enables the controller.
            let control = h.root.join("cgroup.subtree_control");
            let enabled =
                fs::read_to_string(&control).map_err(|e| fail(control.display().to_string(), e))?;
            if !enabled.split_whitespace().any(|c| c == "memory") {
                fs::write(&control, "+memory")
                    .map_err(|e| fail(format!("enabling +memory in {}", control.display()), e))?;
                notes.push(format!(
                    "enabled the memory controller in {} (needed for --pg-memory-limit)",
                    control.display()
                ));
            }
        }
        let me = std::process::id();
        let path = loop {
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let p = h.root.join(format!("{CGROUP_PREFIX}{me}-{n}"));
            match fs::create_dir(&p) {
                Ok(()) => break p,
                // Left by an earlier process with our pid: take the next number.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(fail(format!("creating {}", p.display()), e)),
            }
        };
        let mut cg = MemCgroup {
            path,
            limit,
            kept: false,
        };
        let file = cg.path.join(h.limit_file());
        fs::write(&file, limit.to_string())
            .map_err(|e| fail(format!("writing {}", file.display()), e))?;
        // The kernel rounds down to whole pages; report what holds.
        cg.limit = fs::read_to_string(&file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(limit);
        notes.push(format!(
            "memory cgroup {}: the server runs in {} with {}={} ({}, page cache included)",
            match h.version {
                CgroupVersion::V1 => "v1",
                CgroupVersion::V2 => "v2",
            },
            cg.path.display(),
            h.limit_file(),
            cg.limit,
            human_bytes(cg.limit)
        ));
        Ok(cg)
    }

    /// Moves process `pid` (all its threads) into the cgroup.
    pub(super) fn add(&self, pid: u32) -> std::io::Result<()> {
        fs::write(self.path.join("cgroup.procs"), pid.to_string())
    }

    /// Leaves the cgroup in place (its server keeps running).
    pub(super) fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        // Exiting processes leave the cgroup a moment after the server is
        // reported stopped; a cgroup still busy after that is left to the
        // next run's sweep.
        for _ in 0..50 {
            match fs::remove_dir(&self.path) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                _ => return,
            }
        }
    }
}

/// The OOM kills a memory cgroup has counted: `oom_kill` in `memory.events`
/// (v2) or `memory.oom_control` (v1, Linux 4.13 on). None when neither
/// file says.
pub(super) fn oom_kills(cgroup: &Path) -> Option<u64> {
    ["memory.events", "memory.oom_control"]
        .iter()
        .find_map(|f| fs::read_to_string(cgroup.join(f)).ok())
        .and_then(|t| oom_kill_count(&t))
}

/// The `oom_kill N` line of a memory.events or memory.oom_control text.
pub(super) fn oom_kill_count(text: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (key, n) = l.split_once(' ')?;
        (key == "oom_kill").then(|| n.trim().parse().ok()).flatten()
    })
}

/// The memory limit a managed server runs under, to ask whether the kernel
/// has killed one of its processes for it: a backend killed that way takes
/// its connection with it, and every other backend's too while the server
/// recovers, so the client only sees "connection closed" (issue 25).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryWatch {
    pub(super) cgroup: PathBuf,
    /// The limit in force, bytes.
    pub(super) limit: u64,
    /// OOM kills the cgroup had counted when the watch was made.
    pub(super) kills_before: u64,
}

impl MemoryWatch {
    /// OOM kills in the server's cgroup since the watch was made (0 once
    /// the cgroup is gone).
    pub fn kills(&self) -> u64 {
        oom_kills(&self.cgroup).map_or(0, |n| n.saturating_sub(self.kills_before))
    }

    /// Why a server process died, when the memory limit killed it: the
    /// limit, the kernel's count and what to do. None when it did not.
    pub fn explain(&self) -> Option<String> {
        let n = self.kills();
        (n > 0).then(|| {
            format!(
                "the memory limit killed {} (--pg-memory-limit {}, page cache included; the kernel's \
                 OOM killer counted {n} kill{} in {}): raise --pg-memory-limit or leave it out",
                if n == 1 { "a server process" } else { "server processes" },
                human_bytes(self.limit),
                if n == 1 { "" } else { "s" },
                self.cgroup.display()
            )
        })
    }
}

/// The csdchar pid in a cgroup name of ours (`csdchar-pg-<pid>-<n>`).
pub(super) fn cgroup_owner(name: &str) -> Option<i32> {
    let (pid, n) = name.strip_prefix(CGROUP_PREFIX)?.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !(digits(pid) && digits(n)) {
        return None;
    }
    pid.parse().ok()
}

/// Removes memory cgroups of dead csdchar runs (see the module doc): named
/// like ours, owner pid gone, no process inside. One note each.
pub(super) fn sweep_stale_cgroups() -> Vec<String> {
    let mut notes = Vec::new();
    let Some(h) = MemoryHierarchy::detect() else {
        return notes;
    };
    let Ok(entries) = fs::read_dir(&h.root) else {
        return notes;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(cgroup_owner) else {
            continue;
        };
        let dir = e.path();
        if process_alive(pid, None) || !fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        // A kept server may still run in it: then it stays.
        let empty = fs::read_to_string(dir.join("cgroup.procs")).is_ok_and(|p| p.trim().is_empty());
        if !empty {
            continue;
        }
        match fs::remove_dir(&dir) {
            Ok(()) => notes.push(format!(
                "removed memory cgroup {}: left by a csdchar run (pid {pid}) that is gone",
                dir.display()
            )),
            Err(e) => notes.push(format!(
                "could not remove memory cgroup {}: {e}",
                dir.display()
            )),
        }
    }
    notes
}
