//! What goes wrong on several hosts, each naming the host.

/// A fault of the fleet, naming the host it concerns.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The hosts file is unreadable or malformed (line and why).
    #[error("{0}")]
    Hosts(String),
    /// A host failed its preflight: nothing was started anywhere.
    #[error("host {host}: {why}")]
    Preflight {
        /// The host's name.
        host: String,
        /// What failed.
        why: String,
    },
    /// The controller's own I/O (the run's directory, starting `ssh`).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}
