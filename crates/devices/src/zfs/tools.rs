//! Running ZFS's tools (`zfs`, `zpool`, `zfs-fuse`, found in sbin too) and saying
//! which are missing.

use std::path::Path;
use std::process::Command;

use crate::{DeviceError, DeviceErrorKind};

/// Runs `cmd args…`, its stdout, or why not (not installed, or its own words).
pub(super) fn run(cmd: &str, args: &[&str]) -> Result<String, DeviceError> {
    let program = tool_dirs()
        .into_iter()
        .map(|d| d.join(cmd))
        .find(|p| p.is_file())
        .unwrap_or_else(|| cmd.into());
    let out = Command::new(program).args(args).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            not_installed(cmd)
        } else {
            DeviceError::os(cmd, &e)
        }
    })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("failed");
        return Err(DeviceError::tool(format!(
            "{cmd} {}: {}",
            args.join(" "),
            first.trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether a pool can be made here: root, and ZFS's tools, with either
/// the kernel module (OpenZFS) or zfs-fuse (whose daemon a pool then starts).
pub fn preflight() -> Result<(), DeviceError> {
    if rustix::process::geteuid().as_raw() != 0 {
        return Err(DeviceError::new(
            DeviceErrorKind::NeedsRoot,
            "making a ZFS pool needs root",
        ));
    }
    missing_tools(&tool_dirs(), Path::new(KERNEL_MODULE).exists()).map_or(Ok(()), Err)
}

/// Where ZFS's tools are looked for: PATH, then sbin, which the PATH of
/// `su` or a service may lack.
pub(super) fn tool_dirs() -> Vec<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain(["/usr/sbin", "/sbin"].map(std::path::PathBuf::from))
        .collect()
}

/// What is missing to make a pool, given the directories to look in and
/// whether the kernel module is loaded: `zpool` and `zfs`, and without the
/// module zfs-fuse.
pub(super) fn missing_tools(
    dirs: &[std::path::PathBuf],
    kernel_module: bool,
) -> Option<DeviceError> {
    let found = |tool: &str| dirs.iter().any(|d| d.join(tool).is_file());
    if let Some(tool) = ["zpool", "zfs"].into_iter().find(|t| !found(t)) {
        return Some(not_installed(tool));
    }
    (!kernel_module && !found("zfs-fuse")).then(|| {
        DeviceError::new(
            DeviceErrorKind::Missing,
            "neither the zfs kernel module nor zfs-fuse is available",
        )
    })
}

/// One of ZFS's tools is not installed.
fn not_installed(tool: &str) -> DeviceError {
    DeviceError::new(
        DeviceErrorKind::Missing,
        format!("`{tool}` is not installed (ZFS's tools: the zfsutils-linux or zfs-fuse package)"),
    )
}

/// Where OpenZFS's kernel module shows itself once loaded.
pub(super) const KERNEL_MODULE: &str = "/sys/module/zfs";
