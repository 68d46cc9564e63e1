//! The errors of this crate: [`DbError`], what every database call of the control
//! connection returns, and [`TargetError`], a connection string csdchar cannot use.

/// A database failure, in plain words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DbError(pub String);

/// A tokio-postgres error as a [`DbError`] about `what`.
pub fn db_err(what: &str, e: tokio_postgres::Error) -> DbError {
    match e.as_db_error() {
        Some(d) => DbError(format!("{what}: {} ({})", d.message(), d.code().code())),
        None => DbError(format!("{what}: {e}")),
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
