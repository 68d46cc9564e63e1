//! fio's io_piece list: the blocks a verify job wrote, read back and checked
//! in the order written — after the writes (fio's do_verify), or every
//! `verify_backlog` of them, `verify_backlog_batch` at a time, interleaved with the
//! writes. A block is read back only once its write has completed, so the
//! list works at any queue depth (fio's IP_F_IN_FLIGHT).
//!
//! Two planners use it: [`Log`] for a sequential write job that does not
//! write its region exactly once (io_size, loops, an offset modifier), and
//! [`Mixed`] for a job that reads and writes (rw, randrw), whose own reads
//! check nothing (fio verifies only the reads its list hands out).

use std::collections::VecDeque;

use csdchar_core::result::block::{BlockSpec, RwMode};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::offsets::{BlockPermutation, uniform_below};

/// The next I/O of a logged verify job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// A write of this block (listed for its check).
    Write(u64),
    /// A read of this block that checks it (from the list).
    Check(u64),
    /// A read of this block that checks nothing (a mixed job's own read).
    Read(u64),
    /// Nothing until an I/O in flight completes (the oldest listed write).
    Wait,
    /// The phase is done.
    Done,
}

/// fio's io_hist_list with its verify_backlog rule (io_u.c get_io_u).
#[derive(Debug, Default)]
pub struct Backlog {
    /// Written blocks not yet checked, oldest first, and whether each write
    /// has completed.
    pending: VecDeque<(u64, bool)>,
    /// fio's verify_backlog (0: check only after the writes).
    every: u64,
    /// fio's verify_backlog_batch (verify_backlog when not given).
    batch: u64,
    /// Checks left in the current batch (fio's td->verify_batch).
    left: u64,
    /// The last I/O to complete was a read (fio's last_ddir_completed).
    last_read: bool,
}

impl Backlog {
    /// A list checked every `every` writes (0: after them), `batch` at a time.
    pub fn new(every: u64, batch: u64) -> Self {
        Backlog {
            every,
            batch: if batch == 0 { every } else { batch },
            ..Backlog::default()
        }
    }

    /// A write of block `b` was issued (fio's log_io_piece).
    pub fn listed(&mut self, b: u64) {
        self.pending.push_back((b, false));
    }

    /// An I/O completed (`ok`: without an error): a write of block `b` may
    /// now be read back; a failed one leaves the list (fio's io_completed
    /// unlogs it: nothing of it is checked).
    pub fn completed(&mut self, write: bool, ok: bool, b: u64) {
        self.last_read = !write;
        if !write {
            return;
        }
        if let Some(i) = self.pending.iter().rposition(|p| p.0 == b && !p.1) {
            match ok {
                true => self.pending[i].1 = true,
                false => {
                    self.pending.remove(i);
                }
            }
        }
    }

    /// fio's rule for a check within the writes: when the list's length is a
    /// multiple of verify_backlog and the last completion was not a read, a
    /// batch starts; each of its checks takes the oldest block once its write
    /// has completed — until then a normal I/O goes instead (None).
    pub fn due(&mut self) -> Option<u64> {
        if self.every == 0 || self.pending.is_empty() {
            return None;
        }
        if self.left == 0 {
            if !(self.pending.len() as u64).is_multiple_of(self.every) || self.last_read {
                return None;
            }
            self.left = self.batch;
        }
        let b = self.oldest_done()?;
        self.left -= 1;
        Some(b)
    }

    fn oldest_done(&mut self) -> Option<u64> {
        match self.pending.front() {
            Some(&(b, true)) => {
                self.pending.pop_front();
                Some(b)
            }
            _ => None,
        }
    }

    /// After the writes (fio's do_verify): the next block to check.
    pub fn rest(&mut self) -> Next {
        if self.pending.is_empty() {
            return Next::Done;
        }
        self.oldest_done().map_or(Next::Wait, Next::Check)
    }
}

/// Whether a verify job reads and writes (fio's rw/randrw with verify): its
/// write phase is the whole job, its own reads plain, the list checked
/// within it ([`Mixed`]).
pub fn mixed(spec: &BlockSpec) -> bool {
    let reads_and_writes = matches!(spec.rw, RwMode::Randrw | RwMode::Readwrite);
    // A randwrite job's backlog is fio's random-map list too.
    let random_backlog = spec.rw == RwMode::Randwrite && spec.verify_backlog > 0;
    ((spec.verify || spec.verify_only) && reads_and_writes) || (spec.verify && random_backlog)
}

/// Whether a sequential write job checks the blocks it wrote, in the order
/// written (fio's io_piece list), rather than every block of its region once:
/// with io_size, number_ios, loops, an offset modifier or verify_backlog
/// (the spec allows these only for rw=write with one size; fio's verify_only
/// replays the same writes) — a [`Log`].
pub fn follows(spec: &BlockSpec) -> bool {
    (spec.verify || spec.verify_only)
        && spec.rw == RwMode::Write
        && (spec.io_size > 0
            || spec.number_ios > 0
            || spec.loops > 1
            || spec.rw_seq_add != 0
            || spec.verify_backlog > 0)
}

/// Whether a verify job checks its blocks in its write phase (a backlog or a
/// mixed job) rather than in a read phase of its own.
pub fn checks_while_writing(spec: &BlockSpec) -> bool {
    spec.verify_backlog > 0 || mixed(spec)
}

/// fio's io_piece list of a sequential write job as a planner: the write
/// phase's blocks, with fio's verify_backlog reads interleaved, or the read
/// phase's replay of the blocks written.
#[derive(Debug)]
pub struct Log {
    /// The next block to write (None: the writes are done).
    next: Option<u64>,
    /// Writes left in this loop, writes per loop (fio's io_size or
    /// number_ios), loops after this one.
    left: u64,
    per_loop: u64,
    loops_left: u32,
    /// Blocks `nb`, the offset modifier in blocks.
    nb: u64,
    add: i64,
    /// The blocks written and not yet checked.
    list: Backlog,
    /// The read phase: only replay, never write.
    replay: bool,
}

impl Log {
    /// The write phase: `loops` times `per_loop` writes from block 0 of `nb`,
    /// each next one `add` blocks past the last one's end (fio's rw=write:N;
    /// a loop whose next block would pass the region's end is done, as fio's
    /// file then is; without `add` the writes wrap around, as fio's); with a
    /// `backlog`, checked every `backlog` writes, `batch` at a time.
    pub fn writes(nb: u64, add: i64, per_loop: u64, loops: u32, backlog: u64, batch: u64) -> Self {
        Log {
            next: (per_loop > 0 && nb > 0).then_some(0),
            left: per_loop,
            per_loop,
            loops_left: loops.max(1) - 1,
            nb,
            add,
            list: Backlog::new(backlog, batch),
            replay: false,
        }
    }

    /// The read phase: the blocks the write phase wrote, in its order (each
    /// write once: a block written twice is checked twice, as fio checks
    /// after each loop).
    pub fn reads(nb: u64, add: i64, per_loop: u64, loops: u32) -> Self {
        let mut w = Log::writes(nb, add, per_loop, loops, 0, 0);
        while let Some(b) = w.next_write() {
            w.list.pending.push_back((b, true));
        }
        w.replay = true;
        w
    }

    fn next_write(&mut self) -> Option<u64> {
        if (self.next.is_none() || self.left == 0) && self.loops_left > 0 && self.nb > 0 {
            // fio's next loop starts at the region's start again.
            self.loops_left -= 1;
            self.next = (self.per_loop > 0).then_some(0);
            self.left = self.per_loop;
        }
        let b = self.next.filter(|_| self.left > 0)?;
        self.left -= 1;
        self.next = match crate::offsets::next_seq_block(b, 1, self.nb, self.add, false) {
            // Skipping forward past the end: this loop is done.
            Some(n) if self.add > 0 && n <= b => None,
            n => n,
        };
        Some(b)
    }

    /// The next I/O.
    pub fn next_io(&mut self) -> Next {
        if self.replay {
            return self.list.rest();
        }
        if let Some(b) = self.list.due() {
            return Next::Check(b);
        }
        match self.next_write() {
            Some(b) => {
                if self.list.every > 0 {
                    self.list.listed(b);
                }
                Next::Write(b)
            }
            // Without a backlog the read phase checks them.
            None if self.list.every == 0 => Next::Done,
            // fio's do_verify after the writes: what is left.
            None => self.list.rest(),
        }
    }

    /// An I/O of block `b` completed (`ok`: without an error).
    pub fn completed(&mut self, write: bool, ok: bool, b: u64) {
        self.list.completed(write, ok, b);
    }
}

/// How a mixed job walks its blocks.
#[derive(Debug)]
enum Order {
    /// Each block once in a random order, reads and writes alike (fio's
    /// random map).
    Random(BlockPermutation),
    /// Reads and writes each from the region's start, on their own (fio's
    /// last_pos per direction).
    Sequential([u64; 2]),
}

/// A verify job that reads and writes (rw, randrw): its I/Os as fio's
/// workload issues them — `rwmixread` of them reads that check nothing, the
/// writes listed and checked as fio's io_piece list says — then the rest of
/// the list. With fio's verify_only the same I/Os are drawn again, the reads
/// skipped and each write a check.
#[derive(Debug)]
pub struct Mixed {
    order: Order,
    /// The job's blocks: `first`, `first + stride`, … below `nblocks`.
    first: u64,
    stride: u64,
    nblocks: u64,
    /// The job's own I/Os drawn so far and in all.
    drawn: u64,
    total: u64,
    read_share: u8,
    /// Draws each I/O's direction, apart from the job's other draws, so a
    /// replay draws the same.
    rng: Xoshiro256PlusPlus,
    list: Backlog,
    /// Writes are listed for a check (not with fio's do_verify=0).
    checks: bool,
    replay: bool,
}

impl Mixed {
    /// The job's I/Os over its blocks (`first`, `first + stride`, … of
    /// `nblocks`), as its write phase (`replay` false) or fio's verify_only.
    pub fn new(spec: &BlockSpec, nblocks: u64, first: u64, stride: u64, replay: bool) -> Self {
        let total = nblocks.saturating_sub(first).div_ceil(stride.max(1));
        Mixed {
            order: match spec.rw.is_random() {
                true => Order::Random(BlockPermutation::new(nblocks.max(1), spec.seed)),
                false => Order::Sequential([0, 0]),
            },
            first,
            stride: stride.max(1),
            nblocks,
            drawn: 0,
            total,
            read_share: spec.rw.read_share(spec.rwmixread),
            rng: Xoshiro256PlusPlus::seed_from_u64(spec.seed ^ 0x4D49_5845),
            list: Backlog::new(spec.verify_backlog, spec.verify_batch),
            checks: !spec.verify_write_only,
            replay,
        }
    }

    /// The job's next own I/O: (a read, block); None when all are drawn.
    fn draw(&mut self) -> Option<(bool, u64)> {
        if self.drawn >= self.total {
            return None;
        }
        let k = self.drawn;
        self.drawn += 1;
        // fio's get_rand_ddir: a read with rwmixread % chance.
        let read = uniform_below(&mut self.rng, 100) < u64::from(self.read_share);
        let b = match &mut self.order {
            Order::Random(p) => p.get(self.first + k * self.stride),
            Order::Sequential(next) => {
                let n = &mut next[usize::from(!read)];
                let b = (self.first + *n * self.stride) % self.nblocks.max(1);
                *n += 1;
                b
            }
        };
        Some((read, b))
    }

    /// The next I/O.
    pub fn next_io(&mut self) -> Next {
        if self.replay {
            // verify_only: the writes' blocks, checked where they were written.
            return loop {
                match self.draw() {
                    Some((false, b)) => break Next::Check(b),
                    Some((true, _)) => continue,
                    None => break Next::Done,
                }
            };
        }
        if let Some(b) = self.list.due() {
            return Next::Check(b);
        }
        match self.draw() {
            Some((true, b)) => Next::Read(b),
            Some((false, b)) => {
                if self.checks {
                    self.list.listed(b);
                }
                Next::Write(b)
            }
            None => self.list.rest(),
        }
    }

    /// An I/O of block `b` completed (`ok`: without an error).
    pub fn completed(&mut self, write: bool, ok: bool, b: u64) {
        self.list.completed(write, ok, b);
    }
}

/// The planner of a verify phase that follows fio's io_piece list.
#[derive(Debug)]
pub enum Listed {
    /// A sequential write job that does not write its region once.
    Log(Log),
    /// A job that reads and writes, or a randwrite with a backlog.
    Mixed(Mixed),
}

impl Listed {
    /// The planner of a verify phase (`read`: the read phase, or fio's
    /// verify_only) if it follows the list: `nb` blocks of the write unit,
    /// the offset modifier `add` in blocks, `ios` writes in all its loops,
    /// and the job's share of the region's blocks (first, stride).
    pub fn new(
        spec: &BlockSpec,
        read: bool,
        nb: u64,
        add: i64,
        ios: u64,
        share: (u64, u64),
    ) -> Option<Listed> {
        if mixed(spec) {
            return Some(Listed::Mixed(Mixed::new(spec, nb, share.0, share.1, read)));
        }
        if !follows(spec) {
            return None;
        }
        let (per_loop, loops) = (ios / u64::from(spec.loops.max(1)), spec.loops);
        Some(Listed::Log(match read {
            true => Log::reads(nb, add, per_loop, loops),
            false => Log::writes(
                nb,
                add,
                per_loop,
                loops,
                spec.verify_backlog,
                spec.verify_batch,
            ),
        }))
    }

    /// The next I/O.
    pub fn next_io(&mut self) -> Next {
        match self {
            Listed::Log(l) => l.next_io(),
            Listed::Mixed(m) => m.next_io(),
        }
    }

    /// An I/O of block `b` completed (`ok`: without an error).
    pub fn completed(&mut self, write: bool, ok: bool, b: u64) {
        match self {
            Listed::Log(l) => l.completed(write, ok, b),
            Listed::Mixed(m) => m.completed(write, ok, b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The I/Os a planner gives at queue depth 1 (each completes before the
    /// next is asked for).
    fn at_depth_1(
        mut next: impl FnMut() -> Next,
        mut done: impl FnMut(bool, bool, u64),
    ) -> Vec<Next> {
        let mut v = Vec::new();
        loop {
            let n = next();
            match n {
                Next::Write(b) => done(true, true, b),
                Next::Check(b) | Next::Read(b) => done(false, true, b),
                Next::Wait => panic!("nothing in flight to wait for"),
                Next::Done => return v,
            }
            v.push(n);
        }
    }

    fn log_ios(mut l: Log) -> Vec<Next> {
        let l = std::cell::RefCell::new(&mut l);
        at_depth_1(
            || l.borrow_mut().next_io(),
            |w, ok, b| l.borrow_mut().completed(w, ok, b),
        )
    }

    #[test]
    fn log_orders() {
        use Next::{Check as R, Write as W};
        // fio's rw=write:112k with bs=16k on 16 blocks: 0 and 8, per loop.
        assert_eq!(
            log_ios(Log::writes(16, 7, 32, 2, 0, 0)),
            [W(0), W(8), W(0), W(8)]
        );
        assert_eq!(log_ios(Log::reads(16, 7, 32, 2)), [R(0), R(8), R(0), R(8)]);
        // io_size past size without a modifier wraps around.
        assert_eq!(log_ios(Log::writes(2, 0, 3, 1, 0, 0)), [W(0), W(1), W(0)]);
        assert_eq!(
            log_ios(Log::writes(16, 0, 3, 1, 2, 0)),
            [W(0), W(1), R(0), R(1), W(2), R(2)]
        );
        // verify_backlog_batch=1: one check after every second write.
        assert_eq!(
            log_ios(Log::writes(16, 0, 4, 1, 2, 1)),
            [W(0), W(1), R(0), W(2), R(1), W(3), R(2), R(3)]
        );
    }

    #[test]
    fn a_block_in_flight_is_not_read_back() {
        let mut l = Backlog::new(2, 0);
        l.listed(5);
        l.listed(6);
        l.completed(true, true, 6);
        assert_eq!(l.due(), None, "5 is still in flight");
        l.completed(true, true, 5);
        assert_eq!(l.due(), Some(5), "the batch waited for it");
        assert_eq!(l.due(), Some(6));
        assert_eq!(l.rest(), Next::Done);
        // After a read completed, fio starts no batch.
        let mut r = Backlog::new(1, 0);
        r.listed(1);
        r.completed(true, true, 1);
        r.completed(false, true, 9);
        assert_eq!(r.due(), None);
        assert_eq!(r.rest(), Next::Check(1));
        // A failed write is not checked.
        r.listed(2);
        r.completed(true, false, 2);
        assert_eq!(r.rest(), Next::Done);
    }

    #[test]
    fn mixed_jobs_check_every_write_once_and_replay_the_same_writes() {
        let spec = BlockSpec {
            rw: RwMode::Randrw,
            verify: true,
            verify_backlog: 4,
            seed: 7,
            ..BlockSpec::default()
        };
        let mut m = Mixed::new(&spec, 64, 0, 1, false);
        let m = std::cell::RefCell::new(&mut m);
        let ios = at_depth_1(
            || m.borrow_mut().next_io(),
            |w, ok, b| m.borrow_mut().completed(w, ok, b),
        );
        let writes: Vec<u64> = (ios.iter())
            .filter_map(|n| {
                if let Next::Write(b) = n {
                    Some(*b)
                } else {
                    None
                }
            })
            .collect();
        let checks: Vec<u64> = (ios.iter())
            .filter_map(|n| {
                if let Next::Check(b) = n {
                    Some(*b)
                } else {
                    None
                }
            })
            .collect();
        let reads = ios.iter().filter(|n| matches!(n, Next::Read(_))).count();
        assert_eq!(writes.len() + reads, 64, "each block once");
        assert!(
            (16..=48).contains(&reads),
            "{reads} of 64 read at rwmixread=50"
        );
        assert_eq!(checks, writes, "every write checked, in the order written");
        let mut every: Vec<u64> = ios
            .iter()
            .filter_map(|n| match n {
                Next::Write(b) | Next::Read(b) => Some(*b),
                _ => None,
            })
            .collect();
        every.sort_unstable();
        assert_eq!(every, (0..64).collect::<Vec<_>>());
        let mut again = Mixed::new(&spec, 64, 0, 1, true);
        let replayed: Vec<u64> = std::iter::from_fn(|| match again.next_io() {
            Next::Check(b) => Some(b),
            _ => None,
        })
        .collect();
        assert_eq!(replayed, writes, "verify_only checks the same writes");
    }
}
