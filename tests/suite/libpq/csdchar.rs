//! csdchar as a client of the matrix: the blocking wire connection (the
//! thread driver's connect, whose TLS session the io_uring client takes over
//! after the handshake) and the control connection (tokio-postgres on
//! csdchar's own negotiation). Both hold themselves to libpq 17's outcomes
//! (the newest keys csdchar claims). csdchar's messages use libpq's words
//! and add the verify reason libpq 15 leaves out, so [`outcome::libpq_causes`]
//! reads them.

use std::sync::mpsc;
use std::time::Duration;

use super::{Attempt, Client, Reply, outcome};
use csdchar_pgwire::conn::ConnTarget;
use csdchar_pgwire::env::Env;

/// The case's environment, nothing inherited.
struct CaseEnv(Vec<(String, String)>);

impl Env for CaseEnv {
    fn get(&self, key: &str) -> Option<String> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    }
}

/// Where the session landed and whether it is TLS (as psql's probe asks).
const PROBE: &str = "select current_setting('port') || '|' || \
     coalesce((select ssl::text from pg_stat_ssl where pid = pg_backend_pid()), 'false')";

/// How long a connection may take before the harness gives up on it (psql's `timeout 30`).
const GIVE_UP: Duration = Duration::from_secs(30);

/// Runs `f` on a thread, giving up after [`GIVE_UP`].
fn bounded(f: impl FnOnce() -> Reply + Send + 'static) -> Reply {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(GIVE_UP).unwrap_or(Reply::Failed {
        message: "the harness gave up after 30 s".into(),
    })
}

fn connected(first: &str, check: Option<String>) -> Reply {
    match first.split_once('|') {
        Some((port, tls)) => Reply::Connected {
            port: port.parse().unwrap_or(0),
            tls: tls == "true",
            check,
        },
        None => Reply::Failed {
            message: format!("unexpected probe answer {first:?}"),
        },
    }
}

/// The blocking wire connection (both drivers connect through it).
pub struct CsdcharWire;

impl Client for CsdcharWire {
    fn name(&self) -> &str {
        "csdchar (wire connection: thread and io_uring drivers)"
    }
    fn libpq_major(&self) -> u32 {
        17
    }
    fn attempt(&self, a: &Attempt) -> Reply {
        let env = CaseEnv(a.env.to_vec());
        let conninfo = a.conninfo.to_string();
        let check_sql = a.check_sql.map(str::to_string);
        bounded(move || {
            let target = match ConnTarget::parse(&conninfo, &env) {
                Ok(t) => t,
                Err(e) => return Reply::Failed { message: e.message },
            };
            let mut conn = match csdchar_pgwire::wire::WireConn::connect(&target, None) {
                Ok(c) => c,
                Err(e) => {
                    return Reply::Failed {
                        message: e.to_string(),
                    };
                }
            };
            conn.keep_rows(true);
            let mut one = |sql: &str| -> Result<String, String> {
                let r = conn.simple(sql).map_err(|e| e.to_string())?;
                if let Some((code, m)) = &r.error {
                    return Err(format!("{m} ({code})"));
                }
                Ok(r.rows.last().get(0, 0).unwrap_or_default().to_string())
            };
            let first = match one(PROBE) {
                Ok(v) => v,
                Err(message) => return Reply::Failed { message },
            };
            let check = match check_sql.as_deref().map(&mut one) {
                Some(Ok(v)) => Some(v),
                Some(Err(message)) => return Reply::Failed { message },
                None => None,
            };
            connected(&first, check)
        })
    }
    fn causes(&self, message: &str) -> Vec<outcome::Cause> {
        outcome::libpq_causes(message)
    }
}

/// The control connection (loading, DDL, snapshots).
pub struct CsdcharControl;

impl Client for CsdcharControl {
    fn name(&self) -> &str {
        "csdchar (control connection)"
    }
    fn libpq_major(&self) -> u32 {
        17
    }
    fn attempt(&self, a: &Attempt) -> Reply {
        let env = CaseEnv(a.env.to_vec());
        let conninfo = a.conninfo.to_string();
        let check_sql = a.check_sql.map(str::to_string);
        bounded(move || {
            let target = match ConnTarget::parse(&conninfo, &env) {
                Ok(t) => t,
                Err(e) => return Reply::Failed { message: e.message },
            };
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let client = match csdchar_pgwire::client::connect_client(&target).await {
                    Ok(c) => c,
                    Err(message) => return Reply::Failed { message },
                };
                let one = async |sql: &str| -> Result<String, String> {
                    let rows = client
                        .simple_query(sql)
                        .await
                        .map_err(|e| csdchar_pgwire::client::describe_error(&e))?;
                    Ok(rows
                        .iter()
                        .find_map(|m| match m {
                            tokio_postgres::SimpleQueryMessage::Row(r) => {
                                r.get(0).map(str::to_string)
                            }
                            _ => None,
                        })
                        .unwrap_or_default())
                };
                let first = match one(PROBE).await {
                    Ok(v) => v,
                    Err(message) => return Reply::Failed { message },
                };
                let check = match check_sql.as_deref() {
                    Some(sql) => match one(sql).await {
                        Ok(v) => Some(v),
                        Err(message) => return Reply::Failed { message },
                    },
                    None => None,
                };
                connected(&first, check)
            })
        })
    }
    fn causes(&self, message: &str) -> Vec<outcome::Cause> {
        outcome::libpq_causes(message)
    }
}
