//! Where a command writes and what it ends with: [`Io`] (its streams and the
//! interrupt flag), [`Outcome`] (the exit code), the exit codes themselves and [`emit`],
//! the one place results are written.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use csdchar_core::result::block::BlockResult;

/// Exit code for bad input.
pub const EXIT_USAGE: i32 = 2;

/// Exit code after SIGINT/SIGTERM (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Where a command writes, and the flag signals set.
pub struct Io<'a> {
    /// Results and live lines.
    pub stdout: &'a mut dyn Write,
    /// Errors and notices.
    pub stderr: &'a mut dyn Write,
    /// Set on SIGINT/SIGTERM.
    pub interrupt: Arc<AtomicBool>,
}

/// What a command produced.
#[derive(Debug)]
pub struct Outcome {
    /// Process exit code.
    pub exit_code: i32,
    /// The block result, when a block run happened.
    pub block: Option<BlockResult>,
}

impl Outcome {
    pub fn code(exit_code: i32) -> Self {
        Outcome {
            exit_code,
            block: None,
        }
    }
}

/// The one place results are written: to `path`, or to `stdout` without one.
/// A path goes through [`csdchar_fio_like::safety::write_output`]: the output
/// rule checked on the file actually opened, nothing written to a refused one.
pub fn emit(bytes: &[u8], path: Option<&Path>, stdout: &mut dyn Write) -> Result<(), String> {
    match path {
        Some(p) => {
            csdchar_fio_like::safety::write_output(p, bytes).map_err(|e| format!("--output: {e}"))
        }
        None => stdout
            .write_all(bytes)
            .and_then(|_| stdout.flush())
            .map_err(|e| format!("cannot write the result: {e}")),
    }
}
