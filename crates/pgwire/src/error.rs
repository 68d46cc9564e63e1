//! The error every database call of the control connection returns.

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
