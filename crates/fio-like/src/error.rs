//! Why a block run could not start, and the exit code of one that ran.

use csdchar_core::result::RunStatus;

/// Why a run could not start (a run that started returns a result, possibly partial).
#[derive(Debug, thiserror::Error)]
pub enum BlockError {
    /// Bad input: an option or the target does not fit. Exit code 2.
    #[error("{0}")]
    Usage(String),
    /// Writing would be unsafe without --force. Exit code 2.
    #[error("{0}")]
    Refused(String),
    /// The engine cannot run on this system. Exit code 1.
    #[error("{0}")]
    Unavailable(String),
    /// The target could not be opened or laid out. Exit code 1.
    #[error("{0}")]
    Io(String),
}

impl BlockError {
    /// Process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            BlockError::Usage(_) | BlockError::Refused(_) => 2,
            BlockError::Unavailable(_) | BlockError::Io(_) => 1,
        }
    }
}

/// The exit code of a run that ended with `status`: 0 completed, 1 an I/O
/// error or failed verification, 130 interrupted (128 + SIGINT).
pub fn exit_code(status: RunStatus) -> i32 {
    match status {
        RunStatus::Completed => 0,
        RunStatus::Interrupted => 130,
        RunStatus::IoError | RunStatus::VerifyFailed => 1,
    }
}
