//! fio's error policy of a job (`continue_on_error`, `ignore_error`,
//! `verify_fatal`): which failed I/Os and failed verifications a job counts
//! and goes on after, and which end it (fio's `td_non_fatal_error`).

use serde::{Deserialize, Serialize};

/// The kinds of error fio tells apart (its `error_type_bit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A read failed.
    Read = 0,
    /// A write (or trim) failed.
    Write = 1,
    /// A block read back did not verify (errno EILSEQ).
    Verify = 2,
}

/// EILSEQ, the errno fio gives a block that did not verify.
pub const EILSEQ: i32 = 84;
/// EIO.
pub const EIO: i32 = 5;

/// A job's error policy as fio's job file set it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorPolicy {
    /// Whether the job came from a job file, where fio's rules hold: the first
    /// verify failure ends the job unless `continue_on_error` covers verify.
    /// False: csdchar's command line, which checks every block.
    pub fio_rules: bool,
    /// Kinds the job may go on after (bit 0 read, 1 write, 2 verify): fio's
    /// `continue_on_error`, plus each kind `ignore_error` lists errors for.
    pub continue_on: u8,
    /// errnos a kind goes on after (read, write, verify); an empty list is
    /// fio's default, EIO and EILSEQ.
    pub ignore: [Vec<i32>; 3],
    /// fio's `verify_fatal`: the first verify failure ends the job even when
    /// `continue_on_error` covers verify.
    pub verify_fatal: bool,
    /// The job file's ioengine completes I/Os apart from submitting them
    /// (libaio, io_uring, posixaio): fio then does not count an error that
    /// ends the job (see [`ErrorPolicy::counts_fatal`]); a synchronous engine
    /// (fio's default psync) does.
    #[serde(default)]
    pub async_engine: bool,
}

impl ErrorPolicy {
    /// csdchar's own rules (no job file).
    pub fn is_none(&self) -> bool {
        !self.fio_rules
    }

    /// Whether fio writes `total_err` and `first_error` for the job.
    pub fn counts(&self) -> bool {
        self.continue_on != 0
    }

    /// Whether an error of `kind` with `errno` is counted and the job goes on.
    pub fn non_fatal(&self, kind: ErrorKind, errno: i32) -> bool {
        if self.continue_on & (1 << kind as u8) == 0 {
            return false;
        }
        match &self.ignore[kind as usize] {
            l if l.is_empty() => errno == EIO || errno == EILSEQ,
            l => l.contains(&errno),
        }
    }

    /// Whether fio counts an error that ends the job on `dir` (Read or
    /// Write): with a synchronous engine its `break_on_this_error` counts one
    /// when the direction's `continue_on_error` bit is set, with the errno of
    /// a failed I/O, or 1 for a block that did not verify (the -1 its
    /// completion returned); with an asynchronous engine fio counts none
    /// (measured with fio 3.33, libaio and io_uring).
    pub fn counts_fatal(&self, dir: ErrorKind) -> bool {
        self.fio_rules && !self.async_engine && self.continue_on & (1 << dir as u8) != 0
    }

    /// Whether a block that did not verify ends the job.
    pub fn verify_ends_job(&self) -> bool {
        self.fio_rules && (self.verify_fatal || !self.non_fatal(ErrorKind::Verify, EILSEQ))
    }
}

/// fio's `continue_on_error` values: the kinds as bits.
pub fn continue_on_error(v: &str) -> Result<u8, String> {
    Ok(match v {
        "none" | "0" => 0,
        "read" => 1,
        "write" => 2,
        "io" => 3,
        "verify" => 4,
        "all" | "1" => 7,
        _ => return Err("none, read, write, io, verify or all (or 0, 1)".into()),
    })
}

/// fio 3.33's errno names (its `str2error`), numbered by position from 1:
/// EPERM to ERANGE; other errors are given by number.
const NAMES: [&str; 34] = [
    "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD",
    "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV",
    "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC",
    "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE",
];

/// One errno of an `ignore_error` list: a name (`ENOSPC`) or a number
/// (decimal or 0x hex; a negative one counts as its absolute value).
fn errno(s: &str) -> Result<i32, String> {
    let n = if s.starts_with('E') {
        NAMES
            .iter()
            .position(|n| *n == s)
            .map_or(0, |i| i as i64 + 1)
    } else if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).unwrap_or(0)
    } else {
        s.parse::<i64>().unwrap_or(0).abs()
    };
    match i32::try_from(n) {
        Ok(e) if e > 0 => Ok(e),
        _ => Err(format!(
            "unknown error {s}: an errno name fio 3.33 knows (EPERM to ERANGE, e.g. ENOSPC) or a number"
        )),
    }
}

/// fio's `ignore_error=READ,WRITE,VERIFY`: each kind's list of errnos
/// separated by ':'; a kind with a list goes on after those errors (its
/// `continue_on_error` bit is set). A list stops at an empty name, as fio's.
pub fn apply_ignore_error(p: &mut ErrorPolicy, v: &str) -> Result<(), String> {
    let v = v.trim();
    for (kind, list) in v.split(',').enumerate() {
        if kind >= 3 {
            return Err("at most three lists: read, write and verify errors".into());
        }
        let mut found = Vec::new();
        for name in list.split(':') {
            if name.is_empty() {
                break;
            }
            found.push(errno(name)?);
        }
        if !found.is_empty() {
            p.continue_on |= 1 << kind;
            p.ignore[kind] = found;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_s_defaults_and_lists() {
        let mut p = ErrorPolicy {
            fio_rules: true,
            ..Default::default()
        };
        assert!(p.verify_ends_job());
        assert!(!p.non_fatal(ErrorKind::Write, EIO));
        p.continue_on = continue_on_error("write").unwrap();
        assert!(p.non_fatal(ErrorKind::Write, EIO));
        assert!(
            !p.non_fatal(ErrorKind::Write, 28),
            "ENOSPC is not in fio's default list"
        );
        apply_ignore_error(&mut p, ",ENOSPC").unwrap();
        assert!(p.non_fatal(ErrorKind::Write, 28));
        assert!(!p.non_fatal(ErrorKind::Write, EIO));
        assert!(!p.non_fatal(ErrorKind::Read, EIO));
        apply_ignore_error(&mut p, "EIO:0x10:-22,,84").unwrap();
        assert_eq!(p.ignore[0], [5, 16, 22]);
        assert!(p.non_fatal(ErrorKind::Read, 22));
        assert!(!p.verify_ends_job());
        p.verify_fatal = true;
        assert!(p.verify_ends_job());
        assert!(p.counts_fatal(ErrorKind::Read) && p.counts_fatal(ErrorKind::Write));
        p.async_engine = true;
        assert!(!p.counts_fatal(ErrorKind::Read));
        assert_eq!(errno("ERANGE"), Ok(34));
        assert!(errno("EILSEQ").is_err(), "fio 3.33 knows it by number only");
        assert!(errno("ENOPE").is_err() && errno("0").is_err());
        assert!(continue_on_error("sometimes").is_err());
        assert!(apply_ignore_error(&mut p, "a,b,c,d").is_err());
    }
}
