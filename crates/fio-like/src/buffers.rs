//! I/O buffers: one page-aligned allocation (O_DIRECT needs alignment), split
//! into per-slot read buffers and a pool of write buffers.
//!
//! Two ways to make write data, by layout:
//! - **Incompressible** (`compress_pct` 0): the data is generated once, before
//!   the run, into a 32 MiB pool; on each write the buffer's unique chunks get
//!   an 8-byte stamp so a reused buffer is not a duplicate of its earlier copy —
//!   a few stores per I/O instead of regenerating a whole block of random bytes.
//! - **Compressible** (`compress_pct` > 0): each write draws its buffer's random
//!   heads again (fio's `refill_buffers`, which fio turns on for
//!   `buffer_compress_percentage`; the filler stays in place, and with dedupe the
//!   whole buffer is filled anew) in a small pool of 2 × iodepth buffers. Only the
//!   random heads cost generator work, and the buffer is still in the CPU's cache when the
//!   device side reads it: on zram the kernel compresses every page with the CPU,
//!   and reading a page of a 32 MiB pool from memory cost it more than generating
//!   the head costs csdchar (BENCHMARKS.md, issue 43). Every write is new data, so
//!   no two blocks share a random head however large a compression unit is.

use std::alloc::{Layout, alloc_zeroed, dealloc};

use csdchar_core::pattern::{DataSpec, PatternGenerator, stamp};
use csdchar_core::result::block::BlockSpec;
use csdchar_core::units::format_bytes;

/// Alignment of every buffer: the largest logical block size in common use.
pub const BUFFER_ALIGN: usize = 4096;
/// Bytes of pre-generated write data per job, before the per-depth minimum.
const WRITE_POOL_BYTES: usize = 32 << 20;
/// Upper bound for the write pool when large blocks force more buffers.
const WRITE_POOL_MAX_BYTES: usize = 256 << 20;
/// Write buffers per slot when every write regenerates its buffer.
const REFILL_POOL_PER_SLOT: usize = 2;

/// A zeroed, page-aligned heap allocation.
pub struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

// Safety: AlignedBuf owns its allocation exclusively; moving it to another
// thread moves that ownership.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` zero bytes (at least one page) aligned to [`BUFFER_ALIGN`].
    pub fn new(len: usize) -> Self {
        let layout = Layout::from_size_align(len.max(BUFFER_ALIGN), BUFFER_ALIGN)
            .expect("buffer size fits a Layout");
        // Safety: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, layout }
    }

    /// The bytes.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // Safety: ptr is valid for layout.size() bytes and uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }

    /// The bytes, read-only.
    pub fn as_slice(&self) -> &[u8] {
        // Safety: ptr is valid for layout.size() bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }

    /// Start address.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // Safety: allocated in `new` with this layout and not freed before.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// All buffers of one job.
pub struct JobBuffers {
    mem: AlignedBuf,
    bs: usize,
    read_count: usize,
    write_count: usize,
    stampable: Vec<Vec<u32>>,
    write_busy: Vec<bool>,
    next_write: usize,
    random_bytes_per_chunk: usize,
    /// Set when every write regenerates its buffer (compressible layouts).
    refill: Option<PatternGenerator>,
}

impl JobBuffers {
    /// Buffers for a job of block size `bs` and depth `iodepth`; `reads` gives
    /// one read buffer per slot, `data` a generated write pool.
    pub fn new(bs: usize, iodepth: usize, reads: bool, data: Option<(DataSpec, u64)>) -> Self {
        let read_count = if reads { iodepth } else { 0 };
        let write_count = match data {
            Some((spec, _)) => write_pool_len(bs, iodepth, refills(&spec)),
            None => 0,
        };
        let mut mem = AlignedBuf::new((read_count + write_count) * bs);
        let mut stampable = Vec::with_capacity(write_count);
        let mut random_bytes_per_chunk = 0;
        let mut refill = None;
        if let Some((spec, seed)) = data {
            let mut generator = PatternGenerator::new(spec, seed);
            random_bytes_per_chunk = generator.random_bytes_per_chunk();
            let writes = &mut mem.as_mut_slice()[read_count * bs..(read_count + write_count) * bs];
            for buf in writes.chunks_mut(bs) {
                let mut list = Vec::new();
                generator.fill(buf, &mut list);
                stampable.push(list);
            }
            if refills(&spec) {
                refill = Some(generator);
            }
        }
        JobBuffers {
            mem,
            bs,
            read_count,
            write_count,
            stampable,
            write_busy: vec![false; write_count],
            next_write: 0,
            random_bytes_per_chunk,
            refill,
        }
    }

    /// (address, length) of every buffer, in index order, for registration.
    pub fn regions(&self) -> Vec<(*mut u8, usize)> {
        (0..self.read_count + self.write_count)
            .map(|i| (self.addr(i as u32), self.bs))
            .collect()
    }

    /// Address of buffer `index`.
    #[inline]
    pub fn addr(&self, index: u32) -> *mut u8 {
        // Safety: index < buffer count, so the offset stays inside the allocation.
        unsafe { self.mem.as_ptr().add(index as usize * self.bs) }
    }

    /// Buffer index of the read buffer owned by slot `tag`.
    #[inline]
    pub fn read_buffer(&self, tag: u32) -> u32 {
        debug_assert!((tag as usize) < self.read_count);
        tag
    }

    /// Takes a write buffer that is not in flight, bytes as they are, and
    /// returns its buffer index.
    #[inline]
    pub fn acquire_free(&mut self) -> u32 {
        let mut w = self.next_write;
        // The pool holds at least 2 × iodepth buffers, so a free one is near.
        while self.write_busy[w] {
            w = (w + 1) % self.write_count;
        }
        self.next_write = (w + 1) % self.write_count;
        self.write_busy[w] = true;
        (self.read_count + w) as u32
    }

    /// Offsets of the chunks of write buffer `w` (0-based within the pool) a
    /// stamp may overwrite, as generated.
    pub fn stampable(&self, w: usize) -> &[u32] {
        &self.stampable[w]
    }

    /// Takes a write buffer that is not in flight, makes its data unique
    /// (regenerated for a compressible layout, else stamped with `key`), and
    /// returns its buffer index.
    #[inline]
    pub fn acquire_write(&mut self, key: u64) -> u32 {
        let index = self.acquire_free() as usize;
        let w = index - self.read_count;
        let start = index * self.bs;
        // Disjoint fields: the pool's bytes, its stamp lists and the generator.
        let buf = &mut self.mem.as_mut_slice()[start..start + self.bs];
        match &mut self.refill {
            Some(generator) => generator.refill(buf, &mut self.stampable[w]),
            None => stamp(buf, &self.stampable[w], key),
        }
        index as u32
    }

    /// Calls `f` with up to `max_bytes` of write data as the run wrote it,
    /// buffers spread evenly over the pool; a pool that regenerates its
    /// buffers per write is regenerated for the sample (call it only when no
    /// write is in flight).
    pub fn sample_written(&mut self, max_bytes: usize, mut f: impl FnMut(&[u8])) {
        let n = self.write_count;
        if n == 0 {
            return;
        }
        let take = (max_bytes / self.bs).max(1);
        if self.refill.is_some() {
            for k in 0..take {
                let index = self.acquire_write(k as u64);
                f(self.slice(index));
                self.release_write(index);
            }
        } else {
            for k in 0..take.min(n) {
                let w = k * n / take.min(n);
                f(self.slice(self.write_buffer_index(w)));
            }
        }
    }

    /// Returns a write buffer to the pool once its I/O completed.
    #[inline]
    pub fn release_write(&mut self, index: u32) {
        let w = index as usize - self.read_count;
        self.write_busy[w] = false;
    }

    /// The bytes of buffer `index` (not while it is in flight).
    pub fn slice_mut(&mut self, index: u32) -> &mut [u8] {
        let start = index as usize * self.bs;
        &mut self.mem.as_mut_slice()[start..start + self.bs]
    }

    /// The bytes of buffer `index`, read-only.
    pub fn slice(&self, index: u32) -> &[u8] {
        let start = index as usize * self.bs;
        &self.mem.as_slice()[start..start + self.bs]
    }

    /// Number of write buffers.
    pub fn write_count(&self) -> usize {
        self.write_count
    }

    /// Buffer index of write buffer `w` (0-based within the pool).
    pub fn write_buffer_index(&self, w: usize) -> u32 {
        (self.read_count + w) as u32
    }

    /// Random head bytes per chunk after calibration (0 without write data).
    pub fn random_bytes_per_chunk(&self) -> usize {
        self.random_bytes_per_chunk
    }
}

/// Whether every write regenerates its buffer: layouts with a compressible
/// part, whose random head is a fraction of the block.
pub fn refills(spec: &DataSpec) -> bool {
    spec.compress_pct > 0
}

/// Write buffers per job: 2 × iodepth when each write regenerates its buffer
/// (`refill`); else about 32 MiB of distinct data, at least 2 × iodepth.
pub fn write_pool_len(bs: usize, iodepth: usize, refill: bool) -> usize {
    if refill {
        return (REFILL_POOL_PER_SLOT * iodepth).max(2);
    }
    let want = (WRITE_POOL_BYTES / bs).max(2 * iodepth).max(2);
    let cap = (WRITE_POOL_MAX_BYTES / bs).max(iodepth + 1);
    want.min(cap)
}

/// Bytes [`JobBuffers::new`] allocates for one job that reads (`reads`)
/// and/or writes (`writes`, regenerating each buffer per write if `refill`).
pub fn job_buffer_bytes(bs: u64, iodepth: u32, reads: bool, writes: bool, refill: bool) -> u64 {
    let bs_usize = usize::try_from(bs).unwrap_or(usize::MAX);
    let read_count = if reads { u64::from(iodepth) } else { 0 };
    let write_count = if writes {
        write_pool_len(bs_usize, iodepth as usize, refill) as u64
    } else {
        0
    };
    (read_count + write_count)
        .saturating_mul(bs)
        .max(BUFFER_ALIGN as u64)
}

/// Bytes of I/O buffers all jobs of `spec` hold at once: the phase that needs
/// most (phases run one after the other and free their buffers in between).
pub fn run_buffer_bytes(spec: &BlockSpec) -> u64 {
    // (reads, writes) of each phase the run goes through, as `run_job` decides.
    let phases: &[(bool, bool)] = if spec.verify_only {
        &[(true, false)]
    } else if spec.verify {
        &[(false, true), (true, false)]
    } else {
        let share = spec.rw.read_share(spec.rwmixread);
        &[(share > 0, share < 100 && spec.rw.writes())]
    };
    let per_job = phases
        .iter()
        .map(|&(r, w)| {
            // A deduplicating job keeps its bases aside (crate::dedupe).
            let aside = if w && !spec.dedupe.is_none() {
                let bs = usize::try_from(spec.bs).unwrap_or(usize::MAX);
                (write_pool_len(bs, 1, false) as u64).saturating_mul(spec.bs)
            } else {
                0
            };
            let refill = spec.compress_pct > 0;
            job_buffer_bytes(spec.max_bs(), spec.iodepth, r, w, refill) + aside
        })
        .max()
        .unwrap_or(0);
    per_job.saturating_mul(u64::from(spec.numjobs))
}

/// Share of `MemAvailable` the I/O buffers may take: the page cache, the
/// kernel's io_uring state and the rest of the machine need the remainder.
pub const BUFFER_MEMORY_SHARE_PCT: u64 = 80;

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
pub fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// The usage error when `needed` bytes of buffers do not fit in
/// [`BUFFER_MEMORY_SHARE_PCT`] % of `available` bytes; None when they fit.
pub fn buffer_memory_error(spec: &BlockSpec, needed: u64, available: u64) -> Option<String> {
    let allowed = available / 100 * BUFFER_MEMORY_SHARE_PCT;
    (needed > allowed).then(|| {
        format!(
            "--bs {} --iodepth {} --numjobs {}: needs {} of I/O buffers, the machine has {} available \
             (at most {BUFFER_MEMORY_SHARE_PCT}% of it is used); lower --bs, --iodepth or --numjobs",
            format_bytes(spec.bs as f64),
            spec.iodepth,
            spec.numjobs,
            format_bytes(needed as f64),
            format_bytes(available as f64),
        )
    })
}

/// Refuses a spec whose I/O buffers would not fit in the machine's available
/// memory, before anything is created: allocating them later aborts the
/// process. Without a readable `/proc/meminfo` nothing is refused.
pub fn check_buffer_memory(spec: &BlockSpec) -> Result<(), String> {
    let Some(available) = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| parse_mem_available(&t))
    else {
        return Ok(());
    };
    match buffer_memory_error(spec, run_buffer_bytes(spec), available) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use csdchar_core::pattern::Fill;
    use csdchar_core::result::block::RwMode;

    #[test]
    fn run_buffer_bytes_matches_what_jobs_allocate() {
        let spec = |rw, bs, iodepth, numjobs| BlockSpec {
            rw,
            bs,
            iodepth,
            numjobs,
            ..BlockSpec::default()
        };
        // Reads only: one buffer per slot.
        assert_eq!(
            run_buffer_bytes(&spec(RwMode::Randread, 4096, 32, 2)),
            2 * 32 * 4096
        );
        // Writes only: the 32 MiB pool.
        assert_eq!(
            run_buffer_bytes(&spec(RwMode::Randwrite, 4096, 32, 1)),
            32 << 20
        );
        // Mixed: both.
        assert_eq!(
            run_buffer_bytes(&spec(RwMode::Randrw, 4096, 32, 1)),
            (32 << 20) + 32 * 4096
        );
        // Large blocks at a large depth: depth + 1 write buffers beyond the pool cap.
        let big = spec(RwMode::Randwrite, 256 << 20, 4096, 16);
        assert_eq!(run_buffer_bytes(&big), 16 * 4097 * (256u64 << 20));
        // Verify: the larger of the write and read phases, not their sum.
        let v = BlockSpec {
            verify: true,
            ..spec(RwMode::Write, 1 << 20, 64, 1)
        };
        assert_eq!(run_buffer_bytes(&v), 128 << 20);
        // The figure is what JobBuffers really allocates.
        let b = JobBuffers::new(8192, 4, true, None);
        assert_eq!(
            b.regions().len() as u64 * 8192,
            job_buffer_bytes(8192, 4, true, false, false)
        );
        // A compressible layout regenerates its buffers: 2 × iodepth of them.
        let c = BlockSpec {
            compress_pct: 75,
            ..spec(RwMode::Randwrite, 4096, 16, 1)
        };
        assert_eq!(run_buffer_bytes(&c), 32 * 4096);
        let data = DataSpec {
            compress_pct: 75,
            chunk: 4096,
            fill: Fill::Repeat,
            dedupe_pct: 0,
        };
        let b = JobBuffers::new(4096, 16, false, Some((data, 1)));
        assert_eq!(b.regions().len() as u64 * 4096, run_buffer_bytes(&c));
    }

    #[test]
    fn memory_check_names_the_options_and_both_figures() {
        let text = "MemTotal:       32000000 kB\nMemFree:  100 kB\nMemAvailable:    4194304 kB\n";
        assert_eq!(parse_mem_available(text), Some(4 << 30));
        assert_eq!(parse_mem_available("MemTotal: 5 kB\n"), None);
        let spec = BlockSpec {
            rw: RwMode::Randwrite,
            bs: 256 << 20,
            iodepth: 4096,
            numjobs: 16,
            ..BlockSpec::default()
        };
        let e = buffer_memory_error(&spec, run_buffer_bytes(&spec), 4 << 30).unwrap();
        assert!(
            e.starts_with("--bs 256.00MiB --iodepth 4096 --numjobs 16: needs 16.00TiB"),
            "{e}"
        );
        assert!(e.contains("the machine has 4.00GiB available"), "{e}");
        // Within the share: fine; just above it: refused.
        assert_eq!(buffer_memory_error(&spec, 3 << 30, 4 << 30), None);
        assert!(buffer_memory_error(&spec, (4 << 30) / 100 * 80 + 1, 4 << 30).is_some());
    }

    #[test]
    fn aligned_and_sized() {
        let spec = DataSpec {
            compress_pct: 50,
            chunk: 4096,
            fill: Fill::Repeat,
            dedupe_pct: 0,
        };
        let mut b = JobBuffers::new(8192, 4, true, Some((spec, 1)));
        assert_eq!(b.regions().len(), 4 + b.write_count());
        for (p, len) in b.regions() {
            assert_eq!(p as usize % BUFFER_ALIGN, 0);
            assert_eq!(len, 8192);
        }
        // Acquire never hands out a busy buffer.
        let mut held = std::collections::HashSet::new();
        for k in 0..b.write_count() as u64 {
            assert!(held.insert(b.acquire_write(k)));
        }
        let first = *held.iter().next().unwrap();
        b.release_write(first);
        assert_eq!(b.acquire_write(99), first);
    }
}
