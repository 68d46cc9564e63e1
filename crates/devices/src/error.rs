//! The errors of this crate: [`DeviceError`], what making, reading and removing
//! storage (zram, ZFS pools) returns, and [`ResolveError`], why no device was
//! found for a path.

/// A failure of the device edge: what callers decide on ([`DeviceErrorKind`]:
/// a refusal, root or a tool missing, a value not allowed, a system call's
/// [`std::io::ErrorKind`]) and, for people, what was being done and why it
/// failed, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DeviceError {
    /// What callers decide on (exit codes, hints, whether to go on).
    pub kind: DeviceErrorKind,
    /// What was being done and the cause, in words.
    pub message: String,
}

/// What kind of failure a [`DeviceError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceErrorKind {
    /// Refused for safety: what is there is not csdchar's to change (a ZFS
    /// pool of that name exists already); it is left untouched.
    Refused,
    /// It needs root, and this process is not.
    NeedsRoot,
    /// A program or kernel facility it needs is not here (`mkfs.xfs`, `zpool`,
    /// the zram module, zfs-fuse).
    Missing,
    /// A value the tool does not allow (a ZFS property's); the caller names
    /// the option or key it came from.
    Invalid,
    /// A system call failed, with this kind (`PermissionDenied`, `NotFound`, …).
    Os(std::io::ErrorKind),
    /// A tool ran and failed, or answered what csdchar did not expect; the
    /// message carries its own words.
    Tool,
    /// Teardown left something behind; the message names it and what removes it.
    LeftBehind,
}

impl DeviceError {
    /// A failure of `kind` described by `message`.
    pub fn new(kind: DeviceErrorKind, message: impl Into<String>) -> DeviceError {
        DeviceError {
            kind,
            message: message.into(),
        }
    }

    /// A failed system call about `what` (`what: error`), keeping its kind.
    pub fn os(what: impl std::fmt::Display, e: &std::io::Error) -> DeviceError {
        DeviceError::new(DeviceErrorKind::Os(e.kind()), format!("{what}: {e}"))
    }

    /// A tool that failed or answered unexpectedly.
    pub fn tool(message: impl Into<String>) -> DeviceError {
        DeviceError::new(DeviceErrorKind::Tool, message)
    }

    /// The same failure with `what` said first (`compression=lz4: …`).
    pub fn context(self, what: impl std::fmt::Display) -> DeviceError {
        DeviceError {
            kind: self.kind,
            message: format!("{what}: {}", self.message),
        }
    }

    /// Whether the machine lacks what is needed (root, a program, a kernel
    /// facility) rather than something having failed: the user can fix it
    /// before anything runs, or choose other storage.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self.kind,
            DeviceErrorKind::NeedsRoot | DeviceErrorKind::Missing
        )
    }
}

/// Why a device could not be found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The path does not exist or cannot be read.
    #[error("{0}")]
    Path(String),
    /// The path is on a file system without a block device (tmpfs, overlay, NFS).
    #[error("{0}")]
    NoBlockDevice(String),
    /// The path is on a ZFS dataset whose figures could not be read.
    #[error("{0}")]
    Zfs(DeviceError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_survive_context_and_os_errors_keep_theirs() {
        let e = DeviceError::new(DeviceErrorKind::Invalid, "'x' is not a value zfs allows")
            .context("compression=x");
        assert_eq!(
            e.to_string(),
            "compression=x: 'x' is not a value zfs allows"
        );
        assert_eq!(e.kind, DeviceErrorKind::Invalid);
        let io = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let e = DeviceError::os("/var/tmp/x", &io);
        assert_eq!(
            e.kind,
            DeviceErrorKind::Os(std::io::ErrorKind::PermissionDenied)
        );
        assert_eq!(e.to_string(), format!("/var/tmp/x: {io}"));
        assert!(!e.is_unavailable());
        assert!(DeviceError::new(DeviceErrorKind::Missing, "zpool").is_unavailable());
    }
}
