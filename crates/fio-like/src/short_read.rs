//! A read that comes back short in a job whose file is not laid out (fio's
//! `create_on_open` in a job that reads: the file starts empty, or as it is,
//! and grows only by the job's writes), counted as fio's engines count it.

use csdchar_core::result::block::{BlockSpec, CreateOnOpen};

use crate::engine::Direction;

/// How fio counts a read that came back short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PastEnd {
    /// fio's total_ios beyond the one the completion counts (when
    /// `counted`): a partial read's rest is submitted again.
    pub extra_ios: u64,
    /// fio's short_ios: 1 for a partial read.
    pub short: u64,
    /// The I/O is counted, of 0 bytes, and the job goes on (an asynchronous
    /// engine's io_completed); otherwise it fails the job with EIO, as any
    /// short I/O (a synchronous engine's "full resid").
    pub counted: bool,
}

/// How a completion of `result` for a read of `len` bytes of such a job is
/// counted when it is short; None: as any other completion.
///
/// fio submits a partial read's rest again at the end of what came back,
/// which, past the end of the file, reads nothing: a short I/O, submitted
/// twice, of 0 bytes (the last part's). An asynchronous engine counts a read
/// of 0 bytes as an I/O of 0 bytes; a synchronous one fails the job with
/// EIO, after counting it.
pub fn past_end(spec: &BlockSpec, dir: Direction, result: i32, len: u32) -> Option<PastEnd> {
    let short = (0..i64::from(len)).contains(&i64::from(result));
    if spec.create_on_open.is_no() || dir != Direction::Read || !short {
        return None;
    }
    let partial = u64::from(result > 0);
    let counted = spec.create_on_open == CreateOnOpen::Counted;
    Some(PastEnd {
        extra_ios: partial + u64::from(!counted),
        short: partial,
        counted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_reads_of_a_create_on_open_job_count_as_fio_s() {
        let mut spec = BlockSpec {
            create_on_open: CreateOnOpen::Counted,
            ..BlockSpec::default()
        };
        let p = |extra_ios, short, counted| {
            Some(PastEnd {
                extra_ios,
                short,
                counted,
            })
        };
        assert_eq!(past_end(&spec, Direction::Read, 0, 4096), p(0, 0, true));
        assert_eq!(past_end(&spec, Direction::Read, 512, 4096), p(1, 1, true));
        assert_eq!(past_end(&spec, Direction::Read, 4096, 4096), None);
        assert_eq!(past_end(&spec, Direction::Read, -5, 4096), None);
        assert_eq!(past_end(&spec, Direction::Write, 0, 4096), None);
        spec.create_on_open = CreateOnOpen::Fails;
        assert_eq!(past_end(&spec, Direction::Read, 0, 4096), p(1, 0, false));
        assert_eq!(past_end(&spec, Direction::Read, 512, 4096), p(2, 1, false));
        spec.create_on_open = CreateOnOpen::No;
        assert_eq!(past_end(&spec, Direction::Read, 0, 4096), None);
    }
}
