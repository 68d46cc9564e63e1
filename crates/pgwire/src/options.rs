//! libpq's connection keys beyond where to connect and as whom: which keys
//! libpq 15–17 knows (anything else is `invalid connection option`), the
//! values it accepts (with its messages), and what csdchar does with each
//! ([`LibpqOptions`]). tokio-postgres's parser sees only the keys it takes
//! as libpq does ([`TOKIO_KEYS`]); the TLS keys are [`crate::tls`]'s.

use std::time::Duration;

use crate::env::Env;
use crate::error::TargetError;

/// Every key libpq 15–17 takes, and the deprecated `requiressl`.
pub const LIBPQ_KEYS: [&str; 42] = [
    "service",
    "user",
    "password",
    "passfile",
    "channel_binding",
    "connect_timeout",
    "dbname",
    "host",
    "hostaddr",
    "port",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "sslmode",
    "sslcompression",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslcertmode",
    "sslrootcert",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "requirepeer",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "gssencmode",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "replication",
    "target_session_attrs",
    "load_balance_hosts",
    "require_auth",
    "sslnegotiation",
    "requiressl",
];

/// The keys left to tokio-postgres's parser (where, as whom, and startup options).
pub const TOKIO_KEYS: [&str; 8] = [
    "host",
    "hostaddr",
    "port",
    "user",
    "password",
    "dbname",
    "options",
    "application_name",
];

/// Whether libpq knows `key`.
pub fn is_libpq_key(key: &str) -> bool {
    LIBPQ_KEYS.contains(&key)
}

/// Whether csdchar takes `key` out of the string before tokio-postgres parses the rest.
pub fn is_own_key(key: &str) -> bool {
    is_libpq_key(key) && !TOKIO_KEYS.contains(&key)
}

/// libpq's `target_session_attrs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionAttrs {
    /// Any server.
    Any,
    /// A session that can write.
    ReadWrite,
    /// A read-only session.
    ReadOnly,
    /// A server not in recovery.
    Primary,
    /// A server in recovery.
    Standby,
    /// A standby if there is one, else any.
    PreferStandby,
}

/// The keys csdchar handles itself, resolved with their `PG*` variables.
#[derive(Debug, Clone)]
pub struct LibpqOptions {
    /// `connect_timeout` (at least 2 s, as libpq); None: wait as long as the system does.
    pub connect_timeout: Option<Duration>,
    /// `target_session_attrs`.
    pub session_attrs: SessionAttrs,
    /// `fallback_application_name`.
    pub fallback_application_name: Option<String>,
    /// `passfile` (over `PGPASSFILE`).
    pub passfile: Option<String>,
    /// `load_balance_hosts=random` (16): hosts tried in a random order.
    pub load_balance_random: bool,
    /// `requirepeer`: the user the server on a Unix socket must run as.
    pub requirepeer: Option<String>,
    /// `require_auth` (16): the authentication methods the server may ask for.
    pub require_auth: Option<RequireAuth>,
    /// `channel_binding`: SCRAM's binding to the TLS session.
    pub channel_binding: ChannelBindingMode,
}

/// libpq's `channel_binding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelBindingMode {
    /// Never SCRAM-SHA-256-PLUS.
    Disable,
    /// SCRAM-SHA-256-PLUS over TLS when the server offers it (the default).
    Prefer,
    /// Only an authentication bound to the TLS session.
    Require,
}

/// libpq 16's `require_auth`: methods allowed, or (all with `!`) refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequireAuth {
    /// The value as given, for messages.
    pub raw: String,
    /// The methods named (password, md5, gss, sspi, scram-sha-256, none).
    pub methods: Vec<String>,
    /// Whether they are the methods refused (`!md5,!password`).
    pub negated: bool,
}

impl RequireAuth {
    fn parse(v: &str) -> Result<RequireAuth, String> {
        let mut methods = Vec::new();
        let mut negated = None;
        for m in v.split(',') {
            let (neg, name) = match m.strip_prefix('!') {
                Some(n) => (true, n),
                None => (false, m),
            };
            if !["password", "md5", "gss", "sspi", "scram-sha-256", "none"].contains(&name) {
                return Err(format!("invalid require_auth value: \"{m}\""));
            }
            if negated.is_some_and(|n| n != neg) {
                return Err(format!(
                    "invalid require_auth value: \"{v}\" (negative and positive methods cannot be mixed)"
                ));
            }
            negated = Some(neg);
            methods.push(name.to_string());
        }
        Ok(RequireAuth {
            raw: v.to_string(),
            methods,
            negated: negated.unwrap_or(false),
        })
    }

    /// Whether the server may authenticate with `method` ("none": not at all).
    pub fn allows(&self, method: &str) -> bool {
        self.methods.iter().any(|m| m == method) != self.negated
    }
}

/// libpq's `requirepeer` check on a Unix socket: the server process's user
/// (SO_PEERCRED, named from the password database) must be `want`.
pub fn check_peer(fd: impl std::os::fd::AsFd, want: &str) -> std::io::Result<()> {
    let cred = rustix::net::sockopt::socket_peercred(fd)?;
    let uid = cred.uid.as_raw();
    let name = std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                let mut f = l.split(':');
                let name = f.next()?;
                (f.nth(1)? == uid.to_string()).then(|| name.to_string())
            })
        })
        .ok_or_else(|| std::io::Error::other(format!("could not look up local user ID {uid}")))?;
    if name != want {
        return Err(std::io::Error::other(format!(
            "requirepeer specifies \"{want}\", but actual peer user name is \"{name}\""
        )));
    }
    Ok(())
}

impl SessionAttrs {
    /// libpq's verdict on a session of a server in recovery or not
    /// (`standby`) whose transactions are read-only by default or not
    /// (`read_only`): None when it will do, else libpq's reason.
    pub fn refusal(self, standby: bool, read_only: bool) -> Option<&'static str> {
        match self {
            SessionAttrs::Any => None,
            SessionAttrs::ReadWrite => (standby || read_only).then_some("session is read-only"),
            SessionAttrs::ReadOnly => {
                (!standby && !read_only).then_some("session is not read-only")
            }
            SessionAttrs::Primary => standby.then_some("server is in hot standby mode"),
            SessionAttrs::Standby | SessionAttrs::PreferStandby => {
                (!standby).then_some("server is not in hot standby mode")
            }
        }
    }

    /// The passes over the hosts: what each wants (prefer-standby takes any
    /// server in a second pass when no standby answered).
    pub fn passes(self) -> Vec<SessionAttrs> {
        match self {
            SessionAttrs::PreferStandby => vec![SessionAttrs::Standby, SessionAttrs::Any],
            other => vec![other],
        }
    }
}

/// What a session is asked to tell whether it suits `target_session_attrs`:
/// in recovery, and read-only by default ("true"/"false", "on"/"off").
pub const SESSION_QUERY: &str =
    "select pg_is_in_recovery()::text, current_setting('default_transaction_read_only')";

/// libpq's integer check: `invalid integer value "abc" for connection option "k"`.
fn int(key: &str, from: &str, v: &str) -> Result<i64, TargetError> {
    v.trim().parse::<i64>().map_err(|_| {
        TargetError::about(
            from,
            format!("invalid integer value \"{v}\" for connection option \"{key}\""),
        )
    })
}

/// A key's value and where it came from: the connection string's own key (the last one wins),
/// else the libpq variable `var` (none when `var` is empty). Shared by the option table and the
/// TLS settings, which read the same way.
pub(crate) fn key_or_var(
    params: &[(String, String)],
    env: &dyn Env,
    k: &str,
    var: &str,
) -> Option<(String, String)> {
    params
        .iter()
        .rev()
        .find(|(n, _)| n == k)
        .map(|(_, v)| (v.clone(), k.to_string()))
        .or_else(|| {
            (!var.is_empty())
                .then(|| env.get(var).map(|v| (v, var.to_string())))
                .flatten()
        })
}

impl LibpqOptions {
    /// The options from the string's own keys (`params`, last wins) and the environment.
    pub fn resolve(
        params: &[(String, String)],
        env: &dyn Env,
    ) -> Result<LibpqOptions, TargetError> {
        let get = |k: &str, var: &str| crate::options::key_or_var(params, env, k, var);
        let bad = TargetError::about;
        let one_of =
            |k: &str, var: &str, allowed: &[&str]| -> Result<Option<String>, TargetError> {
                match get(k, var) {
                    Some((v, from)) if !allowed.contains(&v.as_str()) => Err(bad(
                        &from,
                        format!(
                            "invalid {k} value: \"{v}\" ({from}: {})",
                            allowed.join(", ")
                        ),
                    )),
                    other => Ok(other.map(|(v, _)| v)),
                }
            };
        let connect_timeout = match get("connect_timeout", "PGCONNECT_TIMEOUT") {
            Some((v, from)) => match int("connect_timeout", &from, &v)? {
                n if n <= 0 => None,
                n => Some(Duration::from_secs(n.max(2) as u64)),
            },
            None => None,
        };
        for (k, var) in [
            ("keepalives", ""),
            ("keepalives_idle", ""),
            ("keepalives_interval", ""),
            ("keepalives_count", ""),
            ("tcp_user_timeout", ""),
        ] {
            if let Some((v, from)) = get(k, var) {
                int(k, &from, &v)?;
            }
        }
        let session_attrs = match one_of(
            "target_session_attrs",
            "PGTARGETSESSIONATTRS",
            &[
                "any",
                "read-write",
                "read-only",
                "primary",
                "standby",
                "prefer-standby",
            ],
        )?
        .as_deref()
        {
            None | Some("any") => SessionAttrs::Any,
            Some("read-write") => SessionAttrs::ReadWrite,
            Some("read-only") => SessionAttrs::ReadOnly,
            Some("primary") => SessionAttrs::Primary,
            Some("standby") => SessionAttrs::Standby,
            Some(_) => SessionAttrs::PreferStandby,
        };
        let gss = one_of(
            "gssencmode",
            "PGGSSENCMODE",
            &["disable", "prefer", "require"],
        )?;
        if gss.as_deref() == Some("require") {
            let (_, from) = get("gssencmode", "PGGSSENCMODE").unwrap_or_default();
            return Err(bad(
                &from,
                "GSSAPI encryption required but csdchar has no GSSAPI (gssencmode=require)".into(),
            ));
        }
        one_of("gsslib", "PGGSSLIB", &["gssapi", "sspi"])?;
        one_of("gssdelegation", "PGGSSDELEGATION", &["0", "1"])?;
        let channel_binding = one_of(
            "channel_binding",
            "PGCHANNELBINDING",
            &["disable", "prefer", "require"],
        )?;
        let load_balance = one_of(
            "load_balance_hosts",
            "PGLOADBALANCEHOSTS",
            &["disable", "random"],
        )?;
        if let Some((v, from)) = get("client_encoding", "PGCLIENTENCODING")
            && !v.eq_ignore_ascii_case("UTF8")
            && !v.eq_ignore_ascii_case("UTF-8")
            && !v.eq_ignore_ascii_case("auto")
        {
            return Err(bad(
                &from,
                format!(
                    "{from}={v}: csdchar speaks UTF8 only (the statements it sends and the rows it reads)"
                ),
            ));
        }
        for (k, var, why) in [(
            "replication",
            "",
            "replication connections are not csdchar's: it measures SQL sessions",
        )] {
            if let Some((v, from)) = get(k, var) {
                return Err(bad(&from, format!("{from}={v}: {why}")));
            }
        }
        Ok(LibpqOptions {
            connect_timeout,
            session_attrs,
            fallback_application_name: get("fallback_application_name", "").map(|(v, _)| v),
            passfile: get("passfile", "").map(|(v, _)| v),
            load_balance_random: load_balance.as_deref() == Some("random"),
            channel_binding: match channel_binding.as_deref() {
                Some("disable") => ChannelBindingMode::Disable,
                Some("require") => ChannelBindingMode::Require,
                _ => ChannelBindingMode::Prefer,
            },
            require_auth: match get("require_auth", "PGREQUIREAUTH") {
                Some((v, from)) => Some(RequireAuth::parse(&v).map_err(|m| bad(&from, m))?),
                None => None,
            },
            requirepeer: get("requirepeer", "PGREQUIREPEER")
                .map(|(v, _)| v)
                .filter(|v| !v.is_empty()),
        })
    }
}
