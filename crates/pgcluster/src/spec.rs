//! What a cluster is asked to be ([`ClusterSpec`]), why one fails ([`ClusterError`]),
//! the names csdchar gives its files and directories, and the user the server runs as.

use csdchar_pgwire::env::Env;
use std::path::PathBuf;

/// Where temporary clusters live (and stale ones are looked for).
/// Where temporary clusters are made.
pub const TEMP_ROOT: &str = "/var/tmp";
/// Name prefix of a temporary cluster's directory.
pub(crate) const TEMP_PREFIX: &str = "csdchar-pg";
/// The marker a temporary cluster's directory holds (see the module doc).
pub(crate) const RUN_MARKER: &str = "csdchar-run";
/// The socket directory inside the data directory.
pub(crate) const SOCKET_SUBDIR: &str = "csdchar-socket";
/// Records a socket directory outside the data directory (path too long).
pub(crate) const SOCKET_RECORD: &str = "csdchar-socket-dir";
/// Name prefix of such an outside socket directory (in /tmp).
pub(crate) const SOCKET_PREFIX: &str = "csdchar-pgsock";
/// The password file in the data directory.
pub(crate) const PASSWORD_FILE: &str = "csdchar-password";
/// Longest Unix socket path (`sun_path` is 108 bytes with the NUL).
pub(crate) const SUN_PATH_MAX: usize = 107;

/// Why a cluster could not be set up or started.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No PostgreSQL server binaries were found.
    #[error("PostgreSQL server binaries not found ({0}); install postgresql or pass --pg-bin DIR")]
    NoBinaries(String),
    /// A setting is not `key=value`.
    #[error("--pg-set: '{0}' is not key=value")]
    BadSetting(String),
    /// The listen address is not a host name, IP address or `*` (comma-separated).
    #[error("--listen: '{0}' is not a host name, IP address or * (comma-separated)")]
    BadListen(String),
    /// A listen address the server could not listen on: a name that does
    /// not resolve, or an address of no interface of this host.
    #[error("--listen: '{address}' is {why}; give an address of this host (e.g. 127.0.0.1) or *")]
    ListenUnusable {
        /// The address as given.
        address: String,
        /// Why it cannot be used.
        why: String,
    },
    /// Running as root but there is no `postgres` user to run the server as.
    #[error(
        "running as root, but there is no 'postgres' user to run the server as (initdb refuses root)"
    )]
    NoPostgresUser,
    /// A command failed; the message carries its output and, for the server, the log location.
    #[error("{0}")]
    Command(String),
    /// File-system trouble around the data directory.
    #[error("{0}")]
    Io(String),
    /// The memory limit cannot be applied (not root, no memory controller, cgroup trouble).
    #[error("--pg-memory-limit: {0}")]
    MemoryLimit(String),
    /// `--tls` without a TCP listener (TLS is for TCP; the Unix socket never uses it).
    #[error(
        "--tls: needs --listen ADDR (TLS is for TCP connections; the Unix socket does not use it)"
    )]
    TlsWithoutListen,
}

/// What cluster to run.
#[derive(Debug, Clone, Default)]
pub struct ClusterSpec {
    /// Data directory; None makes a temporary one that is removed afterwards.
    pub pgdata: Option<PathBuf>,
    /// Server binaries; None finds them.
    pub pg_bin: Option<PathBuf>,
    /// `key=value` settings (`--pg-set`), passed to the server at start.
    pub settings: Vec<String>,
    /// Leave the server running when the cluster is dropped (ignored for a temporary cluster).
    pub keep_running: bool,
    /// Also listen on TCP at this address (`listen_addresses`, e.g. `127.0.0.1`);
    /// TCP logins then need the cluster's password (see [`ManagedCluster::password_file`]).
    /// None: Unix socket only.
    pub listen: Option<String>,
    /// Run the server (and every process it starts) in a memory cgroup of its
    /// own with this limit in bytes, page cache included, so that the OS cache
    /// cannot absorb the server's reads (`--pg-memory-limit`). Needs root and
    /// a memory controller; ignored with a note when attaching. The limit must
    /// hold shared_buffers plus the backends, or the kernel's OOM killer ends
    /// server processes. None: no limit of csdchar's.
    pub memory_limit: Option<u64>,
    /// TLS on the TCP listener (`--tls`): a CA and server certificate of the
    /// cluster's own in the data directory, `ssl=on`, TCP logins `hostssl`.
    pub tls: bool,
}

/// The user the server runs as.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunAs {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

/// No libpq environment: the cluster's own connections say everything.
pub(crate) struct NoEnv;

impl Env for NoEnv {
    fn get(&self, _: &str) -> Option<String> {
        None
    }
}

/// Bytes for people: `256 MiB`, `1.5 GiB`, or plain bytes.
pub(crate) fn human_bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size {
            let v = n as f64 / size as f64;
            return if n.is_multiple_of(size) {
                format!("{} {unit}", n / size)
            } else {
                format!("{v:.1} {unit}")
            };
        }
    }
    format!("{n} B")
}
