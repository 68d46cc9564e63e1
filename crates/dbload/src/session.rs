//! The server a database job talks to: a URL, or a cluster csdchar starts
//! (on `pgdata`, or a temporary one) and stops again when the session ends;
//! either way a conninfo whose connections work in the job's schema only.

use csdchar_pgcluster::{ClusterError, ClusterSpec, ManagedCluster, MemoryWatch, PostmasterWatch};
use csdchar_pgwire::conn::with_search_path;
use csdchar_pgwire::dialect::Dialect;
use csdchar_pgwire::env::ProcessEnv;
use std::sync::Arc;
use std::time::Duration;

use csdchar_dbloop::settings::ServerWatch;

/// How the server was reached, as results record it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerSource {
    /// A server given by URL.
    Url,
    /// A managed cluster on a given data directory.
    Pgdata,
    /// A managed cluster in a temporary directory, removed afterwards.
    Ephemeral,
}

impl ServerSource {
    /// The result's `server` value: `url`, `pgdata` or `ephemeral`.
    pub fn name(self) -> &'static str {
        match self {
            ServerSource::Url => "url",
            ServerSource::Pgdata => "pgdata",
            ServerSource::Ephemeral => "ephemeral",
        }
    }
}

/// Which server to use.
#[derive(Debug, Clone)]
pub struct ServerChoice {
    /// A server's URL; None: a managed cluster as `cluster` says.
    pub url: Option<String>,
    /// The managed cluster (without a URL).
    pub cluster: ClusterSpec,
    /// The database name on a managed cluster.
    pub db: String,
}

impl ServerChoice {
    /// The choice as a study runs it: a managed cluster removes WAL segments
    /// after a checkpoint instead of recycling them (`wal_recycle=off`,
    /// PostgreSQL 12 on), unless its settings say otherwise. Recycled
    /// segments keep older WAL until overwritten, so the drive's change over
    /// a load moved by up to 20 points with what the load happened to
    /// overwrite (issue 25); removed ones are discarded, and new ones are
    /// zero-filled, which a compressing drive stores as nothing.
    pub fn for_study(mut self) -> ServerChoice {
        let given = self
            .cluster
            .settings
            .iter()
            .any(|s| s.trim_start().starts_with("wal_recycle"));
        if self.url.is_none()
            && !given
            && csdchar_pgcluster::PgBinaries::find(self.cluster.pg_bin.as_deref())
                .is_ok_and(|b| b.major >= 12)
        {
            self.cluster.settings.push("wal_recycle=off".into());
        }
        self
    }

    /// Where a cluster that does not exist yet would be created: `pgdata`
    /// when it holds no cluster, the temporary root without one; None for a
    /// URL or an existing cluster.
    pub fn new_data_directory(&self) -> Option<std::path::PathBuf> {
        if self.url.is_some() {
            return None;
        }
        match &self.cluster.pgdata {
            Some(p) if p.join("PG_VERSION").exists() => None,
            Some(p) => Some(p.clone()),
            None => Some(csdchar_pgcluster::TEMP_ROOT.into()),
        }
    }
}

/// Why a session could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The managed cluster did not start (or a setting was malformed).
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The schema cannot be put in the conninfo.
    #[error("{0}")]
    Schema(String),
}

/// An open session: the conninfo, and the managed cluster, which stops
/// (and, if temporary, is removed) when the session is dropped.
#[derive(Debug)]
pub struct DbSession {
    /// Connections to the server, working in the job's schema.
    pub conninfo: String,
    /// How the server was reached.
    pub source: ServerSource,
    /// The managed cluster, if csdchar manages one.
    pub cluster: Option<ManagedCluster>,
    keep_running: bool,
}

/// Opens a session: the URL as given, or the managed cluster started (with
/// enough `max_connections` for `max_clients` unless its settings say
/// otherwise); its connections get `schema` as their search_path.
pub fn open(
    choice: &ServerChoice,
    schema: &str,
    max_clients: u32,
) -> Result<DbSession, SessionError> {
    let (cluster, conninfo, source) = match &choice.url {
        Some(url) => (None, url.clone(), ServerSource::Url),
        None => {
            let mut spec = choice.cluster.clone();
            // A managed cluster gets enough connections for the sweep unless told otherwise.
            if !spec
                .settings
                .iter()
                .any(|s| s.trim_start().starts_with("max_connections"))
                && max_clients + 10 > 100
            {
                spec.settings
                    .push(format!("max_connections={}", max_clients + 20));
            }
            let c = ManagedCluster::start(&spec)?;
            let conninfo = c.conninfo(&choice.db);
            let source = if spec.pgdata.is_some() {
                ServerSource::Pgdata
            } else {
                ServerSource::Ephemeral
            };
            (Some(c), conninfo, source)
        }
    };
    // Every connection works in `schema` and nowhere else.
    let conninfo =
        with_search_path(&conninfo, schema, &ProcessEnv).map_err(SessionError::Schema)?;
    Ok(DbSession {
        conninfo,
        source,
        keep_running: choice.cluster.keep_running,
        cluster,
    })
}

impl DbSession {
    /// The managed cluster's server when it stays running after the session:
    /// attached to (it ran before) or kept running on request.
    pub fn left_running(&self) -> Option<&ManagedCluster> {
        self.cluster
            .as_ref()
            .filter(|c| c.attached() || self.keep_running)
    }

    /// Connects and probes the server's dialect.
    pub async fn probe(&self) -> Result<DbServer, String> {
        let mut server = DbServer::probe(self.conninfo.clone(), self.source).await?;
        server.postmaster = self
            .cluster
            .as_ref()
            .and_then(|c| c.postmaster_watch())
            .map(|w| Arc::new(Postmaster(w)) as Arc<dyn ServerWatch>);
        server.memory = self.cluster.as_ref().and_then(|c| c.memory_watch());
        Ok(server)
    }
}

/// A server a job runs against, probed.
#[derive(Debug, Clone)]
pub struct DbServer {
    /// Connections to it, working in the job's schema.
    pub conninfo: String,
    /// What the server is and supports (probed once per job).
    pub dialect: Dialect,
    /// How it was reached.
    pub source: ServerSource,
    /// The postmaster of a managed server csdchar started (not one it
    /// attached to): a run stops reconnecting once it has exited.
    pub postmaster: Option<Arc<dyn ServerWatch>>,
    /// The memory limit of a managed server csdchar started with one: a
    /// failure it caused is named as such (see [`DbServer::name_fault`]).
    pub memory: Option<MemoryWatch>,
}

impl DbServer {
    /// Connects to `conninfo` and probes the dialect.
    pub async fn probe(conninfo: String, source: ServerSource) -> Result<DbServer, String> {
        let dialect = Dialect::probe_conninfo(&conninfo)
            .await
            .map_err(|e| e.message)?;
        Ok(DbServer {
            conninfo,
            dialect,
            source,
            postmaster: None,
            memory: None,
        })
    }

    /// `message` about a failure, with its cause first when the server's
    /// memory limit killed one of its processes meanwhile (a client only
    /// sees its connection closed).
    pub fn name_fault(&self, message: &str) -> String {
        match self.memory.as_ref().and_then(MemoryWatch::explain) {
            Some(why) => format!("{why}; what the client saw: {message}"),
            None => message.to_string(),
        }
    }
}

/// A managed server's postmaster as the measured loop watches it.
#[derive(Debug)]
struct Postmaster(PostmasterWatch);

impl ServerWatch for Postmaster {
    fn exited_within(&self, wait: Duration) -> bool {
        self.0.exited_within(wait)
    }

    fn server(&self) -> String {
        self.0.server()
    }
}
