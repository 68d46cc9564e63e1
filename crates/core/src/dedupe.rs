//! fio's whole-buffer deduplication (`dedupe_percentage`, `dedupe_mode`,
//! `dedupe_working_set_percentage`, `dedupe_global`) as a choice of which
//! content each write carries, without a clock or I/O: the engine turns a
//! [`Content`] into bytes.
//!
//! fio (io_u.c `get_buf_state`, dedupe.c): a write's buffer is generated
//! from a random state. Each write draws 1..=100; at or below the
//! percentage the buffer is a duplicate:
//! - `repeat`: generated from the state the next unique buffer will start
//!   from, so it is that buffer's copy (runs of duplicates and the unique
//!   buffer after them are one content);
//! - `working_set`: a copy of page `i`, drawn uniformly from the working
//!   set of `size × dedupe_working_set_percentage / 100 / bs` pages, page `i`
//!   being the job's `i`-th unique buffer. With `dedupe_global` the pages
//!   are dealt out in runs of `pages / threads` (at least 1) over every
//!   thread of the job file, starting with the job's own: page `i` is unique
//!   buffer `i mod run` of thread `(own + i / run) mod threads`, so jobs
//!   write each other's data.
//!
//! At 100 every buffer is the first one. Content `(thread, k)` is thread
//! `thread`'s `k`-th unique buffer; the engine makes equal contents equal
//! bytes and different ones different.

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

/// How duplicate buffers are chosen (`dedupe_mode`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum DedupeMode {
    /// A copy of the neighbouring unique buffer (fio's default).
    #[default]
    Repeat,
    /// A copy of a page drawn from the working set.
    WorkingSet,
}

/// fio's whole-buffer deduplication of a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DedupeSpec {
    /// % of written buffers that duplicate another (`dedupe_percentage`); 0: none.
    pub pct: u8,
    /// How duplicates are chosen (`dedupe_mode`).
    pub mode: DedupeMode,
    /// Working set, % of the job's size (`dedupe_working_set_percentage`, default 5).
    pub working_set_pct: u8,
    /// Whether the working set spans every thread of the job file (`dedupe_global`).
    pub global: bool,
    /// fio's number of the run's first thread, 0-based over the job file.
    pub first_thread: u32,
    /// Threads in the job file (fio's `thread_number`), clones included.
    pub threads: u32,
}

impl Default for DedupeSpec {
    fn default() -> Self {
        DedupeSpec {
            pct: 0,
            mode: DedupeMode::Repeat,
            working_set_pct: 5,
            global: false,
            first_thread: 0,
            threads: 1,
        }
    }
}

impl DedupeSpec {
    /// Whether no buffer is deduplicated.
    pub fn is_none(&self) -> bool {
        self.pct == 0
    }

    /// Pages in the working set of a job of `size` bytes in blocks of `bs`
    /// (fio: `size × pct / 100 / bs`, integer division).
    pub fn working_set_pages(&self, size: u64, bs: u64) -> u64 {
        (u128::from(size) * u128::from(self.working_set_pct) / 100 / u128::from(bs.max(1))) as u64
    }
}

/// Why a job's dedupe cannot run, as fio refuses it (init.c
/// `fixup_options`): the working set needs the job's size, must hold a
/// block, and its share plus the duplicates' cannot pass 100%.
pub fn check(spec: &DedupeSpec, size: u64, bs: u64) -> Option<String> {
    if spec.is_none() || spec.mode != DedupeMode::WorkingSet {
        return None;
    }
    if size == 0 {
        return Some(
            "dedupe_mode=working_set needs size= (the working set is a share of it)".into(),
        );
    }
    if u32::from(spec.working_set_pct) + u32::from(spec.pct) > 100 {
        return Some(format!(
            "dedupe_percentage={} with dedupe_working_set_percentage={}: the working set's pages \
             are unique, so at most {}% of buffers can be duplicates",
            spec.pct,
            spec.working_set_pct,
            100 - spec.working_set_pct
        ));
    }
    if spec.working_set_pages(size, bs) == 0 {
        return Some(format!(
            "dedupe_working_set_percentage={} of size={size} holds no block of {bs} bytes",
            spec.working_set_pct
        ));
    }
    None
}

/// Which content a write carries: thread `thread`'s `k`-th unique buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Content {
    /// fio's thread number, 0-based over the job file.
    pub thread: u32,
    /// Index among that thread's unique buffers.
    pub k: u64,
}

/// One thread's choices, write after write.
#[derive(Debug, Clone)]
pub struct DedupePicker {
    pct: u32,
    mode: DedupeMode,
    thread: u32,
    threads: u32,
    pages: u64,
    run: u64,
    uniques: u64,
    draw: Xoshiro256PlusPlus,
    page: Xoshiro256PlusPlus,
}

impl DedupePicker {
    /// The picker of thread `thread` (fio's number, 0-based over the file)
    /// of a job of `size` bytes in blocks of `bs`, seeded with `seed`; None
    /// when the spec deduplicates nothing.
    pub fn new(spec: &DedupeSpec, thread: u32, size: u64, bs: u64, seed: u64) -> Option<Self> {
        if spec.is_none() {
            return None;
        }
        let pages = spec.working_set_pages(size, bs).max(1);
        let threads = spec.threads.max(1);
        Some(DedupePicker {
            pct: u32::from(spec.pct.min(100)),
            mode: spec.mode,
            thread,
            threads,
            pages,
            run: if spec.global {
                (pages / u64::from(threads)).max(1)
            } else {
                u64::MAX
            },
            uniques: 0,
            draw: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xDED0),
            page: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xDED1),
        })
    }

    /// The content of the next write, and whether it is a unique buffer.
    pub fn pick(&mut self) -> (Content, bool) {
        let own = |k| Content {
            thread: self.thread,
            k,
        };
        if self.pct == 100 {
            return (own(0), false);
        }
        let v = below(&mut self.draw, 100) as u32 + 1;
        if v > self.pct {
            let c = own(self.uniques);
            self.uniques += 1;
            return (c, true);
        }
        match self.mode {
            DedupeMode::Repeat => (own(self.uniques), false),
            DedupeMode::WorkingSet => {
                let i = below(&mut self.page, self.pages);
                let m = i / self.run;
                // Without dedupe_global, m is 0: the job's own pages.
                let thread = if m == 0 {
                    self.thread
                } else {
                    ((u64::from(self.thread) + m) % u64::from(self.threads)) as u32
                };
                (
                    Content {
                        thread,
                        k: i % self.run,
                    },
                    false,
                )
            }
        }
    }
}

/// A uniform draw in `0..n` (Lemire's multiply-shift; n ≥ 1).
fn below(rng: &mut Xoshiro256PlusPlus, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn spec(pct: u8, mode: DedupeMode) -> DedupeSpec {
        DedupeSpec {
            pct,
            mode,
            ..DedupeSpec::default()
        }
    }

    /// Copies per content over `n` writes of one thread.
    fn tally(p: &mut DedupePicker, n: usize) -> HashMap<Content, u64> {
        let mut seen = HashMap::new();
        for _ in 0..n {
            *seen.entry(p.pick().0).or_default() += 1;
        }
        seen
    }

    #[test]
    fn repeat_duplicates_the_share_asked_as_runs_before_a_unique_buffer() {
        let mut p = DedupePicker::new(&spec(30, DedupeMode::Repeat), 0, 1 << 30, 4096, 7).unwrap();
        let mut last_unique = None;
        let mut pending: Option<Content> = None;
        for _ in 0..10_000 {
            let (c, unique) = p.pick();
            if unique {
                assert!(last_unique.is_none_or(|l: Content| c.k == l.k + 1));
                if let Some(d) = pending.take() {
                    assert_eq!(d, c, "duplicates are the next unique buffer's copies");
                }
                last_unique = Some(c);
            } else {
                pending = Some(c);
            }
        }
        let seen = tally(&mut p, 100_000);
        let dup_share = 1.0 - seen.len() as f64 / 100_000.0;
        assert!((dup_share - 0.30).abs() < 0.01, "{dup_share}");
    }

    #[test]
    fn working_set_copies_the_first_pages_of_the_job() {
        // 64 MiB of 4 KiB blocks, 10% working set: 1638 pages.
        let s = DedupeSpec {
            working_set_pct: 10,
            ..spec(40, DedupeMode::WorkingSet)
        };
        assert_eq!(s.working_set_pages(64 << 20, 4096), 1638);
        let mut p = DedupePicker::new(&s, 3, 64 << 20, 4096, 1).unwrap();
        let mut dups = 0;
        for _ in 0..16_384 {
            let (c, unique) = p.pick();
            assert_eq!(c.thread, 3);
            if !unique {
                dups += 1;
                assert!(c.k < 1638);
            }
        }
        assert!((dups as f64 / 16_384.0 - 0.40).abs() < 0.02, "{dups}");
    }

    #[test]
    fn global_working_set_is_dealt_over_every_thread_in_runs() {
        let s = DedupeSpec {
            global: true,
            threads: 4,
            first_thread: 0,
            working_set_pct: 10,
            ..spec(50, DedupeMode::WorkingSet)
        };
        // 1638 pages over 4 threads: runs of 409, the last 2 pages wrap to
        // the thread itself again.
        let mut p = DedupePicker::new(&s, 1, 64 << 20, 4096, 2).unwrap();
        let mut per_thread = [0u64; 4];
        for _ in 0..20_000 {
            let (c, unique) = p.pick();
            if !unique {
                assert!(c.k < 409, "{c:?}");
                per_thread[c.thread as usize] += 1;
            }
        }
        for n in per_thread {
            assert!((2200..2800).contains(&n), "{per_thread:?}");
        }
    }

    #[test]
    fn a_hundred_percent_is_one_buffer() {
        let mut p =
            DedupePicker::new(&spec(100, DedupeMode::WorkingSet), 0, 1 << 20, 4096, 0).unwrap();
        assert_eq!(tally(&mut p, 1000).len(), 1);
        assert!(DedupePicker::new(&spec(0, DedupeMode::Repeat), 0, 1 << 20, 4096, 0).is_none());
    }
}
