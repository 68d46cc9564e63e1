//! Where to connect and how: a libpq-style connection string or URL, completed
//! from the libpq `PG*` environment variables the way libpq does, a redacted
//! description for messages (host and port, never a password), and what the
//! connection travels over ([`Transport`]).

use tokio_postgres::config::Host;

use crate::env::Env;
use crate::error::TargetError;

/// What a connection travels over. The measured loop's choice of client driver
/// depends on it: a statement's kernel work differs between a Unix socket and TCP,
/// and TLS adds the client's own encryption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A Unix-domain socket (managed clusters, `host=/dir`).
    Unix,
    /// TCP without TLS.
    Tcp,
    /// TCP with TLS.
    Tls,
}

impl Transport {
    /// The name results record: "unix", "tcp" or "tls".
    pub fn name(self) -> &'static str {
        match self {
            Transport::Unix => "unix",
            Transport::Tcp => "tcp",
            Transport::Tls => "tls",
        }
    }
}

/// A resolved connection target.
#[derive(Debug, Clone)]
pub struct ConnTarget {
    config: tokio_postgres::Config,
    tls: crate::tls::TlsSettings,
    /// Why a password file that applies was not read (libpq warns and goes
    /// on without it), said again when the login fails.
    passfile_ignored: Option<String>,
    /// libpq's keys that tokio-postgres does not take.
    opts: crate::options::LibpqOptions,
}

/// Checks the libpq environment variables that apply to a managed cluster's
/// connections (a Unix socket, every other key given): their values must
/// be usable, as libpq refuses `PGSSLMODE=bogus` on any connection. TLS
/// files are not read: the socket never uses TLS.
pub fn check_environment(env: &dyn Env) -> Result<(), TargetError> {
    ConnTarget::parse("host=/ port=5432 user=postgres dbname=postgres", env).map(drop)
}

/// The service's keys that tokio-postgres's configuration holds, where the
/// string did not give them.
fn apply_service(
    c: &mut tokio_postgres::Config,
    service: &[(String, String)],
) -> Result<(), TargetError> {
    for (k, v) in service {
        check_value(k, v).map_err(TargetError::conninfo)?;
        match k.as_str() {
            "host" if c.get_hosts().is_empty() => {
                for h in v.split(',') {
                    if h.starts_with('/') {
                        c.host_path(h);
                    } else {
                        c.host(h);
                    }
                }
            }
            "hostaddr" if c.get_hostaddrs().is_empty() => {
                for a in v.split(',') {
                    if let Ok(ip) = a.parse() {
                        c.hostaddr(ip);
                    }
                }
            }
            "port" if c.get_ports().is_empty() => {
                for p in v.split(',') {
                    c.port(p.trim().parse().unwrap_or(5432));
                }
            }
            "user" if c.get_user().is_none() => {
                c.user(v);
            }
            "password" if c.get_password().is_none() => {
                c.password(v);
            }
            "dbname" if c.get_dbname().is_none() => {
                c.dbname(v);
            }
            "options" if c.get_options().is_none() => {
                c.options(v);
            }
            "application_name" if c.get_application_name().is_none() => {
                c.application_name(v);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Default socket directories of libpq builds (Debian's first).
const SOCKET_DIRS: [&str; 2] = ["/var/run/postgresql", "/tmp"];

impl ConnTarget {
    /// Parses `conninfo` (`postgres://…` or `key=value …`) and fills what it
    /// leaves out from PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE,
    /// PGAPPNAME, PGOPTIONS and PGCONNECT_TIMEOUT, then libpq's defaults
    /// (Unix socket, the OS user, database = user).
    pub fn parse(conninfo: &str, env: &dyn Env) -> Result<ConnTarget, TargetError> {
        // TLS is ours (libpq's six modes and its files); the rest is
        // tokio-postgres's parser, whose message quotes no values, so no
        // password can leak through it.
        let (rest, mut ssl) = split_ssl(conninfo).map_err(TargetError::conninfo)?;
        // A service's keys fill what the string leaves out, before the environment.
        let service_name = ssl
            .iter()
            .rev()
            .find(|(k, _)| k == "service")
            .map(|(_, v)| v.clone())
            .or_else(|| env.get("PGSERVICE"));
        let service = match service_name {
            Some(name) => crate::service::lookup(&name, env)?,
            None => Vec::new(),
        };
        for (k, v) in service.iter().rev() {
            if crate::options::is_own_key(k) && !ssl.iter().any(|(n, _)| n == k) {
                ssl.insert(0, (k.clone(), v.clone()));
            }
        }
        let mut c: tokio_postgres::Config = rest.parse().map_err(|e: tokio_postgres::Error| {
            let e = e.to_string();
            TargetError::conninfo(if e.contains("hostaddr") {
                format!("could not parse network address in hostaddr ({e})")
            } else {
                format!("not a connection string or postgres:// URL ({e})")
            })
        })?;
        apply_service(&mut c, &service)?;
        if c.get_hostaddrs().is_empty()
            && let Some(addrs) = env.get("PGHOSTADDR")
        {
            for a in addrs.split(',') {
                let ip = a.trim().parse().map_err(|_| {
                    TargetError::about(
                        "PGHOSTADDR",
                        format!("could not parse network address \"{a}\" (PGHOSTADDR)"),
                    )
                })?;
                c.hostaddr(ip);
            }
        }
        // hostaddr without host: the addresses are the hosts (libpq).
        if c.get_hosts().is_empty() && !c.get_hostaddrs().is_empty() && env.get("PGHOST").is_none()
        {
            for a in c.get_hostaddrs().to_vec() {
                c.host(a.to_string());
            }
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
            let port = p.parse().map_err(|_| {
                TargetError::about("PGPORT", format!("PGPORT '{p}' is not a port number"))
            })?;
            c.port(port);
        }
        // libpq's counts: one port for all hosts, or one per host; one hostaddr per host.
        let (hosts, ports, addrs) = (
            c.get_hosts().len(),
            c.get_ports().len(),
            c.get_hostaddrs().len(),
        );
        if ports > 1 && ports != hosts {
            return Err(TargetError::conninfo(format!(
                "could not match {ports} port numbers to {hosts} hosts"
            )));
        }
        if addrs > 0 && addrs != hosts {
            return Err(TargetError::conninfo(format!(
                "could not match {hosts} host names to {addrs} hostaddr values"
            )));
        }
        // libpq uses TLS (and reads its files) only on TCP.
        let tcp = c.get_hosts().iter().any(|h| matches!(h, Host::Tcp(_)));
        let tls = crate::tls::TlsSettings::resolve(&ssl, env, tcp)?;
        let opts = crate::options::LibpqOptions::resolve(&ssl, env)?;
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
        let mut passfile_ignored = None;
        if c.get_password().is_none() {
            match password_from_file(&c, opts.passfile.as_deref(), env) {
                Ok(Some(p)) => {
                    c.password(p);
                }
                Ok(None) => {}
                Err(why) => passfile_ignored = Some(why),
            }
        }
        if c.get_application_name().is_none() {
            c.application_name(
                env.get("PGAPPNAME")
                    .or_else(|| opts.fallback_application_name.clone())
                    .unwrap_or_else(|| "csdchar".into()),
            );
        }
        if c.get_options().is_none()
            && let Some(o) = env.get("PGOPTIONS")
        {
            c.options(&o);
        }
        if let Some(t) = opts.connect_timeout {
            c.connect_timeout(t);
        }
        Ok(ConnTarget {
            config: c,
            tls,
            passfile_ignored,
            opts,
        })
    }

    /// The host name TLS checks the certificate against and sends as SNI: the
    /// first TCP host (libpq checks the host it connected to; csdchar's
    /// connections go to the first that accepts, which for one host is it).
    pub fn tls_host(&self) -> String {
        self.config
            .get_hosts()
            .iter()
            .find_map(|h| match h {
                Host::Tcp(h) => Some(h.clone()),
                Host::Unix(_) => None,
            })
            .unwrap_or_else(|| "localhost".into())
    }

    /// The host name of host `i` for TLS (checked against the certificate,
    /// sent as SNI): its `host`, never its `hostaddr`.
    pub fn tls_host_of(&self, i: usize) -> String {
        match self.config.get_hosts().get(i) {
            Some(Host::Tcp(h)) => h.clone(),
            _ => self.tls_host(),
        }
    }

    /// `host:port` of host `i`, for messages.
    pub fn describe_host(&self, i: usize) -> String {
        match self.config.get_hosts().get(i) {
            Some(Host::Tcp(h)) => format!("{h}:{}", self.port(i)),
            Some(Host::Unix(p)) => format!("{}/.s.PGSQL.{}", p.display(), self.port(i)),
            None => "the server".into(),
        }
    }

    /// The order the hosts are tried in: as given, or shuffled for
    /// `load_balance_hosts=random` (libpq 16).
    pub fn host_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.config.get_hosts().len().max(1)).collect();
        if self.opts.load_balance_random {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            for i in (1..order.len()).rev() {
                h.write_usize(i);
                order.swap(i, h.finish() as usize % (i + 1));
            }
        }
        order
    }

    /// libpq's keys beyond where to connect (target_session_attrs, ...).
    pub fn options(&self) -> &crate::options::LibpqOptions {
        &self.opts
    }

    /// Whether connections may use TLS: a TCP host and an sslmode other than
    /// disable (libpq uses no TLS on Unix sockets).
    pub fn tls_possible(&self) -> bool {
        self.tls.mode != crate::tls::SslMode::Disable
            && self
                .config
                .get_hosts()
                .iter()
                .any(|h| matches!(h, Host::Tcp(_)))
    }

    /// What the clients' connections go over before TLS: the first host's kind
    /// (connections go to the first host that accepts, which for one host is it).
    pub fn transport(&self) -> Transport {
        match self.config.get_hosts().first() {
            Some(Host::Unix(_)) => Transport::Unix,
            _ => Transport::Tcp,
        }
    }

    /// The TLS settings (sslmode and its files).
    pub fn tls(&self) -> &crate::tls::TlsSettings {
        &self.tls
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

    /// Why a password file was not read, as a clause to add to a failed
    /// login's message ("" when there is none to tell).
    pub fn passfile_note(&self) -> String {
        self.passfile_ignored
            .as_ref()
            .map_or(String::new(), |why| format!(" ({why})"))
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

/// The socket directory libpq matches as `localhost` in a password file
/// (Debian's libpq's DEFAULT_PGSOCKET_DIR; upstream's is /tmp).
const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

/// The password a libpq password file gives the connection `c` has no
/// password for, as libpq looks it up: the file `PGPASSFILE` names, else
/// `~/.pgpass`; lines `host:port:database:user:password` (`*` matches any
/// value, `\:` and `\\` escape, `#` starts a comment line), the first line
/// matching a host of `c` (in order; a Unix socket's directory is its host,
/// the default one `localhost`), its port (default 5432), database and
/// user. A missing file is no password; a file that is not a plain file or
/// that its group or others may read is not read (libpq warns and goes on
/// without it): the error says why.
fn password_from_file(
    c: &tokio_postgres::Config,
    passfile: Option<&str>,
    env: &dyn Env,
) -> Result<Option<String>, String> {
    use std::os::unix::fs::MetadataExt;
    let path = match passfile
        .map(str::to_string)
        .or_else(|| env.get("PGPASSFILE"))
    {
        Some(p) => std::path::PathBuf::from(p),
        None => match env.get("HOME") {
            Some(h) => std::path::Path::new(&h).join(".pgpass"),
            None => return Ok(None),
        },
    };
    let Ok(meta) = std::fs::metadata(&path) else {
        return Ok(None);
    };
    if !meta.is_file() {
        return Err(format!(
            "password file \"{}\" is not a plain file (not read)",
            path.display()
        ));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!(
            "password file \"{}\" has group or world access; permissions should be u=rw (0600) or less (not read)",
            path.display()
        ));
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let user = c.get_user().unwrap_or("");
    let db = c.get_dbname().unwrap_or("");
    let ports = c.get_ports();
    for (i, host) in c.get_hosts().iter().enumerate() {
        let host = match host {
            Host::Tcp(h) => h.clone(),
            Host::Unix(p) if p == std::path::Path::new(DEFAULT_SOCKET_DIR) => "localhost".into(),
            Host::Unix(p) => p.display().to_string(),
        };
        let port = ports
            .get(i)
            .or(ports.first())
            .copied()
            .unwrap_or(5432)
            .to_string();
        let wanted = [host.as_str(), port.as_str(), db, user];
        for line in text.lines() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.starts_with('#') {
                continue;
            }
            if let Some(pw) = passfile_match(line, &wanted) {
                return Ok((!pw.is_empty()).then_some(pw));
            }
        }
    }
    Ok(None)
}

/// The password of a password-file `line` whose first four fields match
/// `wanted` (host, port, database, user); None when it does not match.
fn passfile_match(line: &str, wanted: &[&str; 4]) -> Option<String> {
    let mut rest = line;
    for want in wanted {
        // A field is `*` or the value, backslash-escaped, ended by ':'.
        if let Some(after) = rest.strip_prefix("*:") {
            rest = after;
            continue;
        }
        let mut chars = rest.char_indices();
        let mut value = String::new();
        let mut end = None;
        while let Some((i, ch)) = chars.next() {
            match ch {
                '\\' => value.extend(chars.next().map(|(_, c)| c)),
                ':' => {
                    end = Some(i + 1);
                    break;
                }
                c => value.push(c),
            }
        }
        if value != *want {
            return None;
        }
        rest = &rest[end?..];
    }
    let mut pw = String::new();
    let mut chars = rest.chars();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => pw.extend(chars.next()),
            c => pw.push(c),
        }
    }
    Some(pw)
}

/// Takes libpq's ssl* keys ([`crate::tls::SSL_KEYS`]) out of a connection
/// string (`key=value …` with libpq's quoting, or a URL's query), returning
/// the rest as written and the keys with their values.
pub fn split_ssl(conninfo: &str) -> Result<(String, Vec<(String, String)>), String> {
    let is_ssl = crate::options::is_own_key;
    let mut ssl = Vec::new();
    let t = conninfo.trim();
    if t.starts_with("postgres://") || t.starts_with("postgresql://") {
        let Some((base, query)) = t.split_once('?') else {
            return Ok((t.to_string(), ssl));
        };
        let mut kept = Vec::new();
        for part in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            if k == "ssl" && v == "true" {
                ssl.push(("sslmode".into(), "require".into()));
            } else if !crate::options::is_libpq_key(k) && k != "ssl" {
                return Err(format!("invalid URI query parameter: \"{k}\""));
            } else if is_ssl(k) {
                ssl.push((k.to_string(), percent_decode(v)?));
            } else {
                kept.push(part);
            }
        }
        let rest = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return Ok((rest, ssl));
    }
    // key = value pairs; a value is bare (backslash escapes) or single-quoted.
    let b = t.as_bytes();
    let mut i = 0;
    let mut kept: Vec<&str> = Vec::new();
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let start = i;
        while i < b.len() && b[i] != b'=' && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = &t[start..i];
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() || b[i] != b'=' {
            return Err(format!(
                "missing \"=\" after \"{key}\" in the connection string"
            ));
        }
        i += 1;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = String::new();
        if i < b.len() && b[i] == b'\'' {
            i += 1;
            loop {
                match b.get(i) {
                    None => {
                        return Err(format!(
                            "unterminated quoted string in connection info string (the value of {key})"
                        ));
                    }
                    Some(b'\\') if i + 1 < b.len() => {
                        value.push(b[i + 1] as char);
                        i += 2;
                    }
                    Some(b'\'') => {
                        i += 1;
                        break;
                    }
                    Some(_) => {
                        let ch = t[i..].chars().next().unwrap_or(' ');
                        value.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
        } else {
            while i < b.len() && !b[i].is_ascii_whitespace() {
                if b[i] == b'\\' && i + 1 < b.len() {
                    i += 1;
                }
                let ch = t[i..].chars().next().unwrap_or(' ');
                value.push(ch);
                i += ch.len_utf8();
            }
        }
        if !crate::options::is_libpq_key(key) {
            return Err(format!("invalid connection option \"{key}\""));
        }
        check_value(key, &value)?;
        if is_ssl(key) {
            ssl.push((key.to_string(), value));
        } else {
            kept.push(&t[start..i]);
        }
    }
    Ok((kept.join(" "), ssl))
}

/// libpq's checks of the values tokio-postgres parses: the ports and the
/// numeric addresses (each entry of a list; an empty one is the default).
fn check_value(key: &str, value: &str) -> Result<(), String> {
    match key {
        "port" => {
            for p in value.split(',') {
                if !p.is_empty() && !p.trim().parse::<u16>().is_ok_and(|n| n > 0) {
                    return Err(format!("invalid port number: \"{p}\""));
                }
            }
        }
        "hostaddr" => {
            for a in value.split(',') {
                if !a.is_empty() && a.parse::<std::net::IpAddr>().is_err() {
                    return Err(format!("could not parse network address \"{a}\""));
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn percent_decode(v: &str) -> Result<String, String> {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = v
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent-encoding in \"{v}\""))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("\"{v}\" is not UTF-8"))
}

/// Whether `name` is a plain lowercase SQL identifier (letters, digits and
/// `_`, not starting with a digit, at most 63 bytes): usable unquoted in SQL
/// and in a `search_path` setting, and equal to its catalog spelling.
pub fn is_plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 63
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// `conninfo` with `-c search_path=<schema>` added to the startup options
/// (after any the string or PGOPTIONS give, so it wins over them and over
/// role or database defaults): every connection made from the result creates,
/// finds and drops unqualified tables in `schema` and nowhere else.
/// `schema` must be a [`is_plain_identifier`].
pub fn with_search_path(conninfo: &str, schema: &str, env: &dyn Env) -> Result<String, String> {
    if !is_plain_identifier(schema) {
        return Err(format!(
            "'{schema}' is not a plain lowercase identifier (letters, digits, _)"
        ));
    }
    let target = ConnTarget::parse(conninfo, env)?;
    let options = match target.config.get_options() {
        Some(o) if !o.trim().is_empty() => format!("{o} -c search_path={schema}"),
        _ => format!("-c search_path={schema}"),
    };
    let trimmed = conninfo.trim();
    if trimmed.starts_with("postgres://") || trimmed.starts_with("postgresql://") {
        let sep = if trimmed.contains('?') { '&' } else { '?' };
        Ok(format!(
            "{trimmed}{sep}options={}",
            percent_encode(&options)
        ))
    } else {
        let quoted = options.replace('\\', "\\\\").replace('\'', "\\'");
        Ok(format!("{trimmed} options='{quoted}'"))
    }
}

/// Percent-encodes everything but unreserved URL characters.
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
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
        assert!(err.message.contains("invalid port number: \"x\""), "{err}");
        assert_eq!(err.variable, None);
        // libpq's keys only; the ones tokio-postgres does not take are csdchar's.
        let err = ConnTarget::parse("host=h nosuchkey=1", &env).unwrap_err();
        assert_eq!(err.message, "invalid connection option \"nosuchkey\"");
        let err = ConnTarget::parse("postgres://h/d?nosuchkey=1", &env).unwrap_err();
        assert_eq!(err.message, "invalid URI query parameter: \"nosuchkey\"");
        let err = ConnTarget::parse("host=h hostaddr=nope", &env).unwrap_err();
        assert!(
            err.message.contains("could not parse network address"),
            "{err}"
        );
        let err = ConnTarget::parse("host=h connect_timeout=abc", &env).unwrap_err();
        assert!(
            err.message.contains("invalid integer value \"abc\""),
            "{err}"
        );
        let t = ConnTarget::parse(
            "host=h connect_timeout=1 keepalives=1 gssencmode=disable fallback_application_name=fb",
            &env,
        )
        .unwrap();
        assert_eq!(
            t.config().get_connect_timeout(),
            Some(&std::time::Duration::from_secs(2))
        );
        assert_eq!(t.config().get_application_name(), Some("fb"));
        let t = ConnTarget::parse("hostaddr=127.0.0.1 port=1", &env).unwrap();
        assert_eq!(t.describe(), "127.0.0.1:1");
        let (rest, ssl) =
            split_ssl("host=h sslmode=require password='a b\\' c' sslrootcert=/r.crt").unwrap();
        assert_eq!(rest, "host=h password='a b\\' c'");
        assert_eq!(
            ssl,
            [
                ("sslmode".to_string(), "require".to_string()),
                ("sslrootcert".to_string(), "/r.crt".to_string())
            ]
        );
        let (rest, ssl) = split_ssl(
            "postgres://u@h:5/db?sslmode=verify-full&application_name=x&sslrootcert=%2Fr.crt",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u@h:5/db?application_name=x");
        assert_eq!(ssl[1], ("sslrootcert".to_string(), "/r.crt".to_string()));
        let t = ConnTarget::parse("host=h sslmode=require", &env).unwrap();
        assert_eq!(t.tls().mode, crate::tls::SslMode::Require);
        let bad_port = MapEnv(HashMap::from([("PGPORT", "abc")]));
        let err = ConnTarget::parse("", &bad_port).unwrap_err();
        assert_eq!(err.variable.as_deref(), Some("PGPORT"));
        assert_eq!(err.for_option("--url"), "PGPORT 'abc' is not a port number");
    }

    /// Issue 38 row 18: libpq's password file, as libpq reads it.
    #[test]
    fn the_password_file_fills_a_missing_password() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("pgpass");
        std::fs::write(
            &file,
            "# comment\n\
             db1:5433:*:bench:wrong-port\n\
             db1:5432:other:bench:wrong-db\n\
             db1:5432:*:bench:p\\:w\\\\d\n\
             localhost:*:*:*:socket-pw\n\
             *:*:*:*:fallback\n",
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let leaked: &'static str = Box::leak(file.display().to_string().into_boxed_str());
        let env = MapEnv(HashMap::from([("PGPASSFILE", leaked)]));
        let pw = |conninfo: &str| {
            ConnTarget::parse(conninfo, &env)
                .unwrap()
                .config()
                .get_password()
                .map(|p| String::from_utf8(p.to_vec()).unwrap())
        };
        assert_eq!(
            pw("host=db1 user=bench dbname=sb").as_deref(),
            Some("p:w\\d")
        );
        assert_eq!(
            pw("host=db1 port=5433 user=bench").as_deref(),
            Some("wrong-port")
        );
        assert_eq!(
            pw("host=/var/run/postgresql user=x").as_deref(),
            Some("socket-pw")
        );
        assert_eq!(pw("host=elsewhere user=x").as_deref(), Some("fallback"));
        // A password given wins; PGPASSWORD too.
        assert_eq!(
            pw("host=db1 user=bench password=given").as_deref(),
            Some("given")
        );
        // A file others may read is not read, as libpq warns; the reason is kept.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let t = ConnTarget::parse("host=db1 user=bench", &env).unwrap();
        assert_eq!(t.config().get_password(), None);
        assert!(
            t.passfile_note().contains("group or world access"),
            "{}",
            t.passfile_note()
        );
        // No file, no password, no note.
        let none = MapEnv(HashMap::from([("PGPASSFILE", "/nonexistent/pgpass")]));
        let t = ConnTarget::parse("host=db1 user=bench", &none).unwrap();
        assert_eq!(
            (t.config().get_password(), t.passfile_note().as_str()),
            (None, "")
        );
    }

    #[test]
    fn search_path_is_added_to_the_options_and_wins() {
        let env = MapEnv(HashMap::from([("PGOPTIONS", "-c work_mem=64MB")]));
        let kv = with_search_path("host=/tmp port=5 user=u", "bench", &env).unwrap();
        let t = ConnTarget::parse(&kv, &env).unwrap();
        assert_eq!(
            t.config().get_options(),
            Some("-c work_mem=64MB -c search_path=bench")
        );
        let url = with_search_path("postgres://u@h:5/db?options=-c%20a%3Db", "s1", &env).unwrap();
        let t = ConnTarget::parse(&url, &env).unwrap();
        assert_eq!(t.config().get_options(), Some("-c a=b -c search_path=s1"));
        let url = with_search_path("postgresql://u@h/db", "public", &env).unwrap();
        assert_eq!(
            ConnTarget::parse(&url, &env)
                .unwrap()
                .config()
                .get_options(),
            Some("-c work_mem=64MB -c search_path=public")
        );
        for bad in ["", "Public", "a b", "x;drop", "1abc", &"a".repeat(64)] {
            assert!(with_search_path("", bad, &env).is_err(), "{bad}");
        }
        assert!(is_plain_identifier("_s3"));
    }
}
