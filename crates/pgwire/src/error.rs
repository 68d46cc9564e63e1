//! The errors of this crate: [`DbError`], what every database call of the control
//! connection returns, and [`TargetError`], a connection string csdchar cannot use.

/// A database failure: what callers decide on ([`DbErrorKind`]: a server's SQLSTATE, a
/// lost connection, objects that exist already) and, for people, what was being done
/// and why it failed.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct DbError {
    /// What callers decide on (exit codes, retries, `--force` hints).
    pub kind: DbErrorKind,
    /// What was being done and the cause, in words.
    pub message: String,
}

/// What kind of failure a [`DbError`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbErrorKind {
    /// The server refused a statement or a login: its SQLSTATE (`40001`, `42P07`, …).
    Server {
        /// The five-character SQLSTATE; its first two characters are the class.
        sqlstate: String,
    },
    /// No connection could be made, or the one in use was lost.
    Connection,
    /// The connection string cannot be used (refused before connecting).
    Target,
    /// The objects a load would create exist already and it was not told to replace
    /// them (`--force`).
    ObjectsExist,
    /// The request itself cannot be carried out (a value the workload does not allow).
    Invalid,
    /// Anything else: a task that failed, an answer csdchar did not expect.
    Other,
}

impl DbError {
    /// A failure of `kind` described by `message`.
    pub fn new(kind: DbErrorKind, message: impl Into<String>) -> DbError {
        DbError {
            kind,
            message: message.into(),
        }
    }

    /// A failure no caller decides on beyond reporting it.
    pub fn other(message: impl Into<String>) -> DbError {
        DbError::new(DbErrorKind::Other, message)
    }

    /// A request the workload does not allow.
    pub fn invalid(message: impl Into<String>) -> DbError {
        DbError::new(DbErrorKind::Invalid, message)
    }

    /// The server's SQLSTATE, when the server refused.
    pub fn sqlstate(&self) -> Option<&str> {
        match &self.kind {
            DbErrorKind::Server { sqlstate } => Some(sqlstate),
            _ => None,
        }
    }

    /// The SQLSTATE's class (its first two characters: `40` transaction rollback,
    /// `42` syntax error or access rule violation, …).
    pub fn class(&self) -> Option<&str> {
        self.sqlstate().and_then(|s| s.get(..2))
    }

    /// The same failure with `what` said first (`loading bmsql_stock: …`).
    pub fn context(self, what: &str) -> DbError {
        DbError {
            kind: self.kind,
            message: format!("{what}: {}", self.message),
        }
    }
}

impl From<TargetError> for DbError {
    fn from(e: TargetError) -> DbError {
        DbError::new(DbErrorKind::Target, e.message)
    }
}

/// A tokio-postgres error as a [`DbError`] about `what`, keeping the server's SQLSTATE.
pub fn db_err(what: &str, e: tokio_postgres::Error) -> DbError {
    match e.as_db_error() {
        Some(d) => DbError::new(
            DbErrorKind::Server {
                sqlstate: d.code().code().to_string(),
            },
            format!("{what}: {} ({})", d.message(), d.code().code()),
        ),
        None if e.is_closed() => DbError::new(DbErrorKind::Connection, format!("{what}: {e}")),
        None => DbError::other(format!("{what}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstate_and_class_come_from_the_kind() {
        let e = DbError::new(
            DbErrorKind::Server {
                sqlstate: "40001".into(),
            },
            "could not serialize access",
        );
        assert_eq!((e.sqlstate(), e.class()), (Some("40001"), Some("40")));
        let e = e.context("run");
        assert_eq!(e.message, "run: could not serialize access");
        assert_eq!(e.class(), Some("40"));
        assert_eq!(DbError::other("x").sqlstate(), None);
    }
}

/// A connection string, or a libpq environment variable filling it, that
/// csdchar cannot use: bad input, refused before anything connects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TargetError {
    /// The libpq environment variable at fault (`PGSSLMODE`, `PGPORT`, …);
    /// None: the connection string itself (or libpq's default files).
    pub variable: Option<String>,
    /// What is wrong, naming the key or variable and its value.
    pub message: String,
}

impl TargetError {
    /// A message about the connection string itself.
    pub(crate) fn conninfo(message: String) -> TargetError {
        TargetError {
            variable: None,
            message,
        }
    }

    /// A message about a value read from `from`: a key of the connection
    /// string, or a libpq variable (`PG…`), which is then the one at fault.
    pub(crate) fn about(from: &str, message: String) -> TargetError {
        TargetError {
            variable: from.starts_with("PG").then(|| from.to_string()),
            message,
        }
    }

    /// The one line for a user who gave the connection string as `option`
    /// (`--url`): the option named, unless a variable is at fault, which
    /// the message names instead.
    pub fn for_option(&self, option: &str) -> String {
        match self.variable {
            Some(_) => self.message.clone(),
            None => format!("{option}: {}", self.message),
        }
    }
}

impl From<TargetError> for String {
    fn from(e: TargetError) -> String {
        e.message
    }
}
