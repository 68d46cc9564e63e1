//! The engine boundary: the job loop hands requests to an [`IoEngine`] and
//! reaps [`Completion`]s. Scheduling and statistics live above it, so they are
//! exercised with the [`NullEngine`] (or a test's own engine) without real I/O.

use csdchar_core::result::block::{EngineInfo, EngineKind};

/// Read, write or trim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Read from the target into the buffer.
    Read,
    /// Write the buffer to the target.
    Write,
    /// Discard the range (a block device's discard, a file's punched hole);
    /// no buffer. Completes with 0 bytes on success.
    Trim,
}

impl Direction {
    /// "read", "write" or "trim".
    pub fn name(self) -> &'static str {
        match self {
            Direction::Read => "read",
            Direction::Write => "write",
            Direction::Trim => "trim",
        }
    }

    /// 0 for read, 1 for write, 2 for trim: index into per-direction arrays.
    pub fn index(self) -> usize {
        match self {
            Direction::Read => 0,
            Direction::Write => 1,
            Direction::Trim => 2,
        }
    }

    /// The completion result of a request of `len` bytes that succeeded
    /// (a trim returns 0, as io_uring's discard and fallocate do).
    pub fn success(self, len: u32) -> i32 {
        match self {
            Direction::Trim => 0,
            _ => len as i32,
        }
    }
}

/// One I/O to perform.
#[derive(Debug, Clone, Copy)]
pub struct IoRequest {
    /// Caller's slot number, returned in the completion.
    pub tag: u32,
    /// Index of the buffer in the set registered with [`IoEngine::register_buffers`].
    pub buf_index: u32,
    /// Start of the buffer; valid for `len` bytes until the completion is reaped.
    pub addr: *mut u8,
    /// Bytes to transfer.
    pub len: u32,
    /// Byte offset in the target.
    pub offset: u64,
    /// The file: an index into [`IoEngine::set_files`]' list (0: the
    /// engine's own file when it was given none).
    pub file: u32,
    /// Read or write.
    pub dir: Direction,
    /// The I/O's priority (the SQE's `ioprio`; 0: the thread's).
    pub ioprio: u16,
}

/// A finished I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The request's tag.
    pub tag: u32,
    /// Bytes transferred, or a negative errno.
    pub result: i32,
}

/// An engine failure that is not an I/O result (those arrive as completions).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The engine cannot run here at all.
    #[error("{0}")]
    Unavailable(String),
    /// A system call of the engine itself failed.
    #[error("{what}: {source}")]
    Sys {
        /// What was being done.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Performs I/O requests asynchronously, up to the depth it was built for.
pub trait IoEngine {
    /// Registers the buffers requests will point into (index = position).
    /// Engines that cannot register them fall back to plain addresses.
    fn register_buffers(&mut self, buffers: &[(*mut u8, usize)]) -> Result<(), EngineError>;
    /// The job's files when it has several (fio's `nrfiles`), in the order
    /// requests' `file` index them; the engine's own file is then not used.
    /// Engines that touch no file ignore them.
    fn set_files(&mut self, fds: &[std::os::fd::RawFd]) -> Result<(), EngineError> {
        let _ = fds;
        Ok(())
    }
    /// Queues a request; nothing reaches the kernel before [`IoEngine::submit`].
    /// The caller never queues more than the depth it asked for.
    fn queue(&mut self, req: &IoRequest);
    /// Sends every queued request and blocks until at least `min`
    /// completions are ready (0: do not wait), in one system call where the
    /// engine can.
    fn submit_and_wait(&mut self, min: u32) -> Result<(), EngineError>;
    /// As [`IoEngine::submit_and_wait`], but waits at most `timeout_ns`
    /// (fio's io_submit_mode=offload: a rated job waits for a completion or
    /// its next I/O's due time, whichever comes first). The default hands the
    /// requests over without waiting (an engine whose completions are ready
    /// at once).
    fn submit_and_wait_for(&mut self, min: u32, timeout_ns: u64) -> Result<(), EngineError> {
        let _ = (min, timeout_ns);
        self.submit_and_wait(0)
    }
    /// Moves every ready completion into `out`.
    fn reap(&mut self, out: &mut Vec<Completion>);
    /// How the engine is set up, for the result.
    fn info(&self) -> EngineInfo;
}

/// Completes every request at once without touching memory or a device
/// (fio's `ioengine=null`): what is left is csdchar's own per-I/O cost.
#[derive(Debug, Default)]
pub struct NullEngine {
    queued: Vec<Completion>,
    done: Vec<Completion>,
}

impl NullEngine {
    /// A null engine.
    pub fn new() -> Self {
        Self::default()
    }
}

impl IoEngine for NullEngine {
    fn register_buffers(&mut self, _: &[(*mut u8, usize)]) -> Result<(), EngineError> {
        Ok(())
    }

    #[inline]
    fn queue(&mut self, req: &IoRequest) {
        self.queued.push(Completion {
            tag: req.tag,
            result: req.dir.success(req.len),
        });
    }

    fn submit_and_wait(&mut self, _: u32) -> Result<(), EngineError> {
        self.done.append(&mut self.queued);
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<Completion>) {
        out.append(&mut self.done);
    }

    fn info(&self) -> EngineInfo {
        EngineInfo {
            name: EngineKind::Null,
            fixed_buffers: false,
            fixed_files: false,
            setup_flags: Vec::new(),
        }
    }
}
