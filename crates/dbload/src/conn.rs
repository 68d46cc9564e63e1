//! Where to connect: a libpq-style connection string or URL, completed from
//! the libpq `PG*` environment variables the way libpq does, and a redacted
//! description for messages (host and port, never a password).

use std::time::Duration;

use tokio_postgres::config::Host;

/// A resolved connection target.
#[derive(Debug, Clone)]
pub struct ConnTarget {
    config: tokio_postgres::Config,
}

/// One place the libpq environment comes from: the process, or a map in tests.
pub trait Env {
    /// The variable's value, if set and not empty.
    fn get(&self, key: &str) -> Option<String>;
}

/// The process environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn get(&self, key: &str) -> Option<String> {
        std::env::var(key).ok().filter(|v| !v.is_empty())
    }
}

/// Default socket directories of libpq builds (Debian's first).
const SOCKET_DIRS: [&str; 2] = ["/var/run/postgresql", "/tmp"];

impl ConnTarget {
    /// Parses `conninfo` (`postgres://…` or `key=value …`) and fills what it
    /// leaves out from PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE,
    /// PGAPPNAME, PGOPTIONS and PGCONNECT_TIMEOUT, then libpq's defaults
    /// (Unix socket, the OS user, database = user).
    pub fn parse(conninfo: &str, env: &dyn Env) -> Result<ConnTarget, String> {
        // The parser's message quotes no values, so no password can leak through it.
        let mut c: tokio_postgres::Config = conninfo
            .parse()
            .map_err(|e| format!("not a connection string or postgres:// URL ({e})"))?;
        if c.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
            // Never fall back to plain text when the user asked for TLS.
            return Err(
                "sslmode=require: csdchar does not speak TLS yet (use sslmode=disable or prefer)"
                    .into(),
            );
        }
        if c.get_hosts().is_empty() {
            match env.get("PGHOST") {
                Some(hosts) => {
                    for h in hosts.split(',') {
                        if h.starts_with('/') {
                            c.host_path(h);
                        } else {
                            c.host(h);
                        }
                    }
                }
                None => {
                    let dir = SOCKET_DIRS
                        .iter()
                        .find(|d| std::path::Path::new(d).is_dir())
                        .unwrap_or(&"/tmp");
                    c.host_path(dir);
                }
            }
        }
        if c.get_ports().is_empty()
            && let Some(p) = env.get("PGPORT")
        {
            let port = p
                .parse()
                .map_err(|_| format!("PGPORT '{p}' is not a port number"))?;
            c.port(port);
        }
        if c.get_user().is_none() {
            let user = env
                .get("PGUSER")
                .or_else(|| env.get("USER"))
                .unwrap_or_else(|| "postgres".into());
            c.user(&user);
        }
        if c.get_password().is_none()
            && let Some(p) = env.get("PGPASSWORD")
        {
            c.password(p);
        }
        if c.get_dbname().is_none() {
            let db = env
                .get("PGDATABASE")
                .unwrap_or_else(|| c.get_user().unwrap_or("postgres").to_string());
            c.dbname(&db);
        }
        if c.get_application_name().is_none() {
            c.application_name(env.get("PGAPPNAME").unwrap_or_else(|| "csdchar".into()));
        }
        if c.get_options().is_none()
            && let Some(o) = env.get("PGOPTIONS")
        {
            c.options(&o);
        }
        if c.get_connect_timeout().is_none()
            && let Some(t) = env.get("PGCONNECT_TIMEOUT").and_then(|t| t.parse().ok())
        {
            c.connect_timeout(Duration::from_secs(t));
        }
        Ok(ConnTarget { config: c })
    }

    /// The tokio-postgres configuration.
    pub fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// The port of host `i` (libpq: one port for all hosts, default 5432).
    pub fn port(&self, i: usize) -> u16 {
        let ports = self.config.get_ports();
        ports
            .get(i)
            .or_else(|| ports.first())
            .copied()
            .unwrap_or(5432)
    }

    /// `host:port` of the first host, for messages; never credentials.
    pub fn describe(&self) -> String {
        match self.config.get_hosts().first() {
            Some(Host::Tcp(h)) => format!("{h}:{}", self.port(0)),
            Some(Host::Unix(p)) => format!("{}/.s.PGSQL.{}", p.display(), self.port(0)),
            None => "the server".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct MapEnv(HashMap<&'static str, &'static str>);
    impl Env for MapEnv {
        fn get(&self, key: &str) -> Option<String> {
            self.0.get(key).map(|v| v.to_string())
        }
    }

    #[test]
    fn environment_fills_what_the_url_leaves_out() {
        let env = MapEnv(HashMap::from([
            ("PGHOST", "db.example"),
            ("PGPORT", "6543"),
            ("PGUSER", "bench"),
            ("PGPASSWORD", "s3cret"),
            ("PGDATABASE", "sb"),
        ]));
        let t = ConnTarget::parse("postgres://", &env).unwrap();
        assert_eq!(t.describe(), "db.example:6543");
        assert_eq!(t.config().get_user(), Some("bench"));
        assert_eq!(t.config().get_dbname(), Some("sb"));
        assert_eq!(t.config().get_password(), Some(&b"s3cret"[..]));
        assert!(!t.describe().contains("s3cret"));
        // What the string says wins over the environment.
        let t = ConnTarget::parse("host=10.0.0.1 port=5433 user=u dbname=d", &env).unwrap();
        assert_eq!(t.describe(), "10.0.0.1:5433");
        assert_eq!(t.config().get_user(), Some("u"));
        assert_eq!(t.config().get_dbname(), Some("d"));
    }

    #[test]
    fn defaults_are_libpqs() {
        let env = MapEnv(HashMap::from([("USER", "alice")]));
        let t = ConnTarget::parse("", &env).unwrap();
        assert_eq!(t.config().get_user(), Some("alice"));
        assert_eq!(t.config().get_dbname(), Some("alice"));
        assert!(t.describe().ends_with("/.s.PGSQL.5432"), "{}", t.describe());
        let err = ConnTarget::parse("port=x", &env).unwrap_err();
        assert!(err.contains("not a connection string"), "{err}");
        let tls = ConnTarget::parse("host=h sslmode=require", &env).unwrap_err();
        assert!(tls.contains("sslmode=require"), "{tls}");
        let bad_port = MapEnv(HashMap::from([("PGPORT", "abc")]));
        assert!(
            ConnTarget::parse("", &bad_port)
                .unwrap_err()
                .contains("PGPORT")
        );
    }
}
