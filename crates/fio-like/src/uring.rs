//! The io_uring engine: one ring per job, registered buffers and file,
//! batched submission, completions reaped in batches.

use std::io;
use std::os::fd::RawFd;

use csdchar_core::result::block::{EngineInfo, EngineKind};
use io_uring::{IoUring, Probe, opcode, squeue, types};

use crate::engine::{Completion, Direction, EngineError, IoEngine, IoRequest};

/// Applies one set of io_uring setup flags to a builder.
type SetupFn = fn(&mut io_uring::Builder);

/// `BLOCK_URING_CMD_DISCARD` (linux/fs.h, `_IO(0x12, 0)`): a block device's
/// discard as an io_uring command (Linux 6.12), start in `addr`, length in `addr3`.
const BLOCK_URING_CMD_DISCARD: u32 = 0x12 << 8;

/// `BLKDISCARD` (linux/fs.h, `_IO(0x12, 119)`): the synchronous discard fio
/// falls back to (os_trim in os/os-linux.h).
const BLKDISCARD: libc::c_ulong = (0x12 << 8) | 119;

/// How trims reach the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TrimVia {
    /// A block device: `BLOCK_URING_CMD_DISCARD` through the ring (fio's io_uring engine).
    UringDiscard,
    /// A block device whose kernel lacks the discard command: `BLKDISCARD`,
    /// synchronously at queue time (fio's fallback, do_io_u_trim).
    Ioctl,
    /// A file: `fallocate(PUNCH_HOLE | KEEP_SIZE)` through the ring.
    PunchHole,
}

/// io_uring engine for one job.
pub struct UringEngine {
    ring: IoUring,
    fd: RawFd,
    /// The job's files when it has several (index = a request's `file`).
    fds: Vec<RawFd>,
    fixed_file: bool,
    fixed_buffers: bool,
    setup_flags: Vec<String>,
    trim_via: TrimVia,
    /// Offset and length of each tag's trim in flight (to redo one
    /// synchronously when the kernel lacks the discard command).
    trims: Vec<(u64, u64)>,
    /// Completions of requests done synchronously, handed out by `reap`.
    done_now: Vec<Completion>,
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        // Closing a ring tears it down in a kernel workqueue, after this
        // process may have exited, and a registered file stays open until
        // then. Unregistering drops the ring's reference now, so the target
        // is closed when the run ends (a block device's descriptor was once
        // its O_EXCL claim, which then outlived the run).
        if self.fixed_file {
            let _ = self.ring.submitter().unregister_files();
        }
    }
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
        let block_device = fd >= 0 && {
            // Safety: `fd` is the target's open descriptor (not -1, checked
            // above), borrowed only for this call while the caller holds it.
            let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
            rustix::fs::fstat(borrowed)
                .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_block_device())
        };
        let trim_via = if !block_device {
            TrimVia::PunchHole
        } else if probe_ok(&ring, opcode::UringCmd16::CODE) {
            TrimVia::UringDiscard
        } else {
            TrimVia::Ioctl
        };
        Ok(UringEngine {
            ring,
            fd,
            fds: vec![fd],
            fixed_file,
            fixed_buffers: false,
            setup_flags: names.iter().map(|s| s.to_string()).collect(),
            trim_via,
            trims: Vec::new(),
            done_now: Vec::new(),
        })
    }

    /// A trim's entry: the discard command on a block device, a punched hole in a file.
    fn trim_entry(&self, req: &IoRequest) -> squeue::Entry {
        macro_rules! with_fd {
            ($build:expr) => {
                if self.fixed_file {
                    $build(types::Fixed(req.file))
                } else {
                    $build(types::Fd(self.fds[req.file as usize]))
                }
            };
        }
        let len = u64::from(req.len);
        match self.trim_via {
            TrimVia::PunchHole => with_fd!(|fd| opcode::Fallocate::new(fd, len)
                .offset(req.offset)
                .mode(libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE)
                .build()),
            _ => {
                // addr3 (the first 8 bytes of the command area) holds the length.
                let mut cmd = [0u8; 16];
                cmd[..8].copy_from_slice(&len.to_ne_bytes());
                with_fd!(|fd| opcode::UringCmd16::new(fd, BLOCK_URING_CMD_DISCARD)
                    .addr(Some(req.offset))
                    .cmd(cmd)
                    .build())
            }
        }
    }

    /// `BLKDISCARD` on `offset..offset + len`: 0 or a negative errno.
    fn discard_now(&self, offset: u64, len: u64) -> i32 {
        let range: [u64; 2] = [offset, len];
        // Safety: BLKDISCARD reads two u64 (start, length) from the pointer,
        // which points at `range`, alive for the call; `fd` is the open device.
        let rc = unsafe { libc::ioctl(self.fd, BLKDISCARD, range.as_ptr()) };
        if rc == 0 {
            0
        } else {
            -io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO)
        }
    }

    fn entry(&self, req: &IoRequest) -> squeue::Entry {
        macro_rules! build {
            ($fixed:ident, $plain:ident, $fd:expr) => {
                if self.fixed_buffers {
                    opcode::$fixed::new($fd, req.addr, req.len, req.buf_index as u16)
                        .offset(req.offset)
                        .ioprio(req.ioprio)
                        .build()
                } else {
                    opcode::$plain::new($fd, req.addr, req.len)
                        .offset(req.offset)
                        .ioprio(req.ioprio)
                        .build()
                }
            };
        }
        if req.dir == Direction::Trim {
            return self.trim_entry(req).user_data(u64::from(req.tag));
        }
        let fd = self.fds[req.file as usize];
        let e = match (req.dir, self.fixed_file) {
            (Direction::Read, true) => build!(ReadFixed, Read, types::Fixed(req.file)),
            (Direction::Read, false) => build!(ReadFixed, Read, types::Fd(fd)),
            (Direction::Write, true) => build!(WriteFixed, Write, types::Fixed(req.file)),
            (Direction::Write, false) => build!(WriteFixed, Write, types::Fd(fd)),
            (Direction::Trim, _) => unreachable!("trims are built above"),
        };
        e.user_data(u64::from(req.tag))
    }
}

/// Whether the ring's kernel has opcode `code` (false when it cannot say).
fn probe_ok(ring: &IoUring, code: u8) -> bool {
    let mut probe = Probe::new();
    ring.submitter().register_probe(&mut probe).is_ok() && probe.is_supported(code)
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

    fn set_files(&mut self, fds: &[RawFd]) -> Result<(), EngineError> {
        if fds.is_empty() {
            return Ok(());
        }
        let submitter = self.ring.submitter();
        if self.fixed_file {
            let _ = submitter.unregister_files();
        }
        // Registered files are indexed as the requests' `file`; without
        // registration, the descriptors themselves.
        self.fixed_file = submitter.register_files(fds).is_ok();
        self.fds = fds.to_vec();
        self.fd = fds[0];
        Ok(())
    }

    #[inline]
    fn queue(&mut self, req: &IoRequest) {
        if req.dir == Direction::Trim {
            let len = u64::from(req.len);
            // An empty trim (a zbd zone reset) is done: nothing to send.
            if self.trim_via == TrimVia::Ioctl || len == 0 {
                let result = if len == 0 {
                    0
                } else {
                    self.discard_now(req.offset, len)
                };
                self.done_now.push(Completion {
                    tag: req.tag,
                    result,
                });
                return;
            }
            let t = req.tag as usize;
            if self.trims.len() <= t {
                self.trims.resize(t + 1, (0, 0));
            }
            self.trims[t] = (req.offset, len);
        }
        let entry = self.entry(req);
        // Safety: the buffer stays valid and untouched until this request's
        // completion is reaped (the job loop owns it until then), and the
        // entry's fd is either a registered index (`set_files`' position, 0 by
        // default) or an open descriptor of the job's.
        while unsafe { self.ring.submission().push(&entry) }.is_err() {
            // SQ full: cannot happen with entries >= depth, but never drop a request.
            let _ = self.ring.submit();
        }
    }

    fn submit_and_wait(&mut self, min: u32) -> Result<(), EngineError> {
        // Requests done at queue time count towards `min`.
        let min = (min as usize).saturating_sub(self.done_now.len());
        match self.ring.submit_and_wait(min) {
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

    fn submit_and_wait_for(&mut self, min: u32, timeout_ns: u64) -> Result<(), EngineError> {
        let min = (min as usize).saturating_sub(self.done_now.len());
        // Without IORING_FEAT_EXT_ARG (before Linux 5.11) the caller looks
        // again without waiting.
        if min == 0 || !self.ring.params().is_feature_ext_arg() {
            return self.submit_and_wait(0);
        }
        let ts = types::Timespec::new()
            .sec(timeout_ns / 1_000_000_000)
            .nsec((timeout_ns % 1_000_000_000) as u32);
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(min, &args) {
            Ok(_) => Ok(()),
            // The time ran out (ETIME), a signal, or a full completion queue.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EAGAIN | libc::EBUSY)
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
        out.append(&mut self.done_now);
        let via = self.trim_via;
        let mut redo = Vec::new();
        for cqe in self.ring.completion() {
            let tag = cqe.user_data() as u32;
            let result = cqe.result();
            // A kernel without the block discard command answers it with
            // EOPNOTSUPP (or ENOTTY): do it as fio does then, with BLKDISCARD.
            if via == TrimVia::UringDiscard
                && matches!(-result, libc::EOPNOTSUPP | libc::ENOTTY)
                && let Some(&(offset, len)) = self.trims.get(tag as usize)
                && len > 0
            {
                redo.push((tag, offset, len));
                continue;
            }
            out.push(Completion { tag, result });
        }
        if !redo.is_empty() {
            self.trim_via = TrimVia::Ioctl;
            for (tag, offset, len) in redo {
                let result = self.discard_now(offset, len);
                out.push(Completion { tag, result });
            }
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
