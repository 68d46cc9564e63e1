//! The io_uring engine: one ring per job, registered buffers and file,
//! batched submission, completions reaped in batches.

use std::io;
use std::os::fd::RawFd;

use csdchar_core::result::block::{EngineInfo, EngineKind};
use io_uring::{IoUring, Probe, opcode, squeue, types};

use crate::engine::{Completion, Direction, EngineError, IoEngine, IoRequest};

/// Applies one set of io_uring setup flags to a builder.
type SetupFn = fn(&mut io_uring::Builder);

/// io_uring engine for one job.
pub struct UringEngine {
    ring: IoUring,
    fd: RawFd,
    fixed_file: bool,
    fixed_buffers: bool,
    setup_flags: Vec<String>,
}

impl UringEngine {
    /// A ring for `depth` requests on `fd`, with the cheapest setup the kernel
    /// accepts (single issuer + deferred task work, else cooperative task run,
    /// else none) and the file registered when possible.
    pub fn new(fd: RawFd, depth: u32) -> Result<Self, EngineError> {
        let entries = depth.max(1).next_power_of_two();
        let attempts: [(&[&str], SetupFn); 3] = [
            (&["COOP_TASKRUN", "SINGLE_ISSUER", "DEFER_TASKRUN"], |b| {
                b.setup_coop_taskrun()
                    .setup_single_issuer()
                    .setup_defer_taskrun();
            }),
            (&["COOP_TASKRUN"], |b| {
                b.setup_coop_taskrun();
            }),
            (&[], |_| {}),
        ];
        let mut last_err = None;
        let mut built = None;
        for (names, apply) in attempts {
            let mut builder = IoUring::builder();
            builder.setup_cqsize(entries * 2);
            apply(&mut builder);
            match builder.build(entries) {
                Ok(ring) => {
                    built = Some((ring, names));
                    break;
                }
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last_err = Some(e),
                Err(e) => return Err(unavailable(e)),
            }
        }
        let (ring, names) =
            built.ok_or_else(|| unavailable(last_err.expect("an attempt failed")))?;
        let ring: IoUring = ring;

        let mut probe = Probe::new();
        if ring.submitter().register_probe(&mut probe).is_ok()
            && !(probe.is_supported(opcode::Read::CODE) && probe.is_supported(opcode::Write::CODE))
        {
            return Err(EngineError::Unavailable(
                "io_uring is unavailable: the kernel lacks IORING_OP_READ/WRITE (Linux 5.6 or newer is needed)"
                    .into(),
            ));
        }
        // -1 would register as an empty (sparse) slot: only register a real file.
        let fixed_file = fd >= 0 && ring.submitter().register_files(&[fd]).is_ok();
        Ok(UringEngine {
            ring,
            fd,
            fixed_file,
            fixed_buffers: false,
            setup_flags: names.iter().map(|s| s.to_string()).collect(),
        })
    }

    fn entry(&self, req: &IoRequest) -> squeue::Entry {
        macro_rules! build {
            ($fixed:ident, $plain:ident, $fd:expr) => {
                if self.fixed_buffers {
                    opcode::$fixed::new($fd, req.addr, req.len, req.buf_index as u16)
                        .offset(req.offset)
                        .build()
                } else {
                    opcode::$plain::new($fd, req.addr, req.len)
                        .offset(req.offset)
                        .build()
                }
            };
        }
        let e = match (req.dir, self.fixed_file) {
            (Direction::Read, true) => build!(ReadFixed, Read, types::Fixed(0)),
            (Direction::Read, false) => build!(ReadFixed, Read, types::Fd(self.fd)),
            (Direction::Write, true) => build!(WriteFixed, Write, types::Fixed(0)),
            (Direction::Write, false) => build!(WriteFixed, Write, types::Fd(self.fd)),
        };
        e.user_data(u64::from(req.tag))
    }
}

fn unavailable(e: io::Error) -> EngineError {
    let why = match e.raw_os_error() {
        Some(libc::ENOSYS) => "the kernel was built without io_uring".to_string(),
        Some(libc::EPERM) | Some(libc::EACCES) => {
            let knob = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
                .map(|s| format!("kernel.io_uring_disabled={}", s.trim()))
                .unwrap_or_else(|_| "kernel.io_uring_disabled".into());
            format!("io_uring_setup was denied ({knob}, or a seccomp/container policy blocks it)")
        }
        Some(libc::ENOMEM) => "not enough locked memory for the ring (raise ulimit -l)".to_string(),
        _ => format!("io_uring_setup failed: {e}"),
    };
    EngineError::Unavailable(format!("io_uring is unavailable: {why}"))
}

impl IoEngine for UringEngine {
    fn register_buffers(&mut self, buffers: &[(*mut u8, usize)]) -> Result<(), EngineError> {
        if buffers.is_empty() || buffers.len() > usize::from(u16::MAX) {
            return Ok(());
        }
        let iovecs: Vec<libc::iovec> = buffers
            .iter()
            .map(|&(p, len)| libc::iovec {
                iov_base: p.cast(),
                iov_len: len,
            })
            .collect();
        // Safety: every iovec points into the job's buffer allocation, which
        // outlives the ring (the job drops the engine before its buffers), and
        // the kernel pins the pages while they are registered.
        // Registration can fail for lack of locked memory (RLIMIT_MEMLOCK for
        // unprivileged users): fall back to plain reads and writes.
        self.fixed_buffers = unsafe { self.ring.submitter().register_buffers(&iovecs) }.is_ok();
        Ok(())
    }

    #[inline]
    fn queue(&mut self, req: &IoRequest) {
        let entry = self.entry(req);
        // Safety: the buffer stays valid and untouched until this request's
        // completion is reaped (the job loop owns it until then), and the
        // entry's fd is either registered index 0 or the open target fd.
        while unsafe { self.ring.submission().push(&entry) }.is_err() {
            // SQ full: cannot happen with entries >= depth, but never drop a request.
            let _ = self.ring.submit();
        }
    }

    fn submit_and_wait(&mut self, min: u32) -> Result<(), EngineError> {
        match self.ring.submit_and_wait(min as usize) {
            Ok(_) => Ok(()),
            // A signal (Ctrl-C) or a full completion queue: the loop reaps and looks again.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(source) => Err(EngineError::Sys {
                what: "io_uring_enter",
                source,
            }),
        }
    }

    #[inline]
    fn reap(&mut self, out: &mut Vec<Completion>) {
        for cqe in self.ring.completion() {
            out.push(Completion {
                tag: cqe.user_data() as u32,
                result: cqe.result(),
            });
        }
    }

    fn info(&self) -> EngineInfo {
        EngineInfo {
            name: EngineKind::Uring,
            fixed_buffers: self.fixed_buffers,
            fixed_files: self.fixed_file,
            setup_flags: self.setup_flags.clone(),
        }
    }
}
