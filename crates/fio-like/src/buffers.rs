//! I/O buffers: one page-aligned allocation (O_DIRECT needs alignment), split
//! into per-slot read buffers and a pool of pre-generated write buffers.
//!
//! Write data is generated once, before the run. On each write the buffer's
//! unique chunks get an 8-byte stamp so a reused buffer is not a duplicate of
//! its earlier copy — a few stores per I/O instead of fio's per-I/O refill.

use std::alloc::{Layout, alloc_zeroed, dealloc};

use csdchar_core::pattern::{DataSpec, PatternGenerator, stamp};

/// Alignment of every buffer: the largest logical block size in common use.
pub const BUFFER_ALIGN: usize = 4096;
/// Bytes of pre-generated write data per job, before the per-depth minimum.
const WRITE_POOL_BYTES: usize = 32 << 20;
/// Upper bound for the write pool when large blocks force more buffers.
const WRITE_POOL_MAX_BYTES: usize = 256 << 20;

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
}

impl JobBuffers {
    /// Buffers for a job of block size `bs` and depth `iodepth`; `reads` gives
    /// one read buffer per slot, `data` a generated write pool.
    pub fn new(bs: usize, iodepth: usize, reads: bool, data: Option<(DataSpec, u64)>) -> Self {
        let read_count = if reads { iodepth } else { 0 };
        let write_count = if data.is_some() {
            write_pool_len(bs, iodepth)
        } else {
            0
        };
        let mut mem = AlignedBuf::new((read_count + write_count) * bs);
        let mut stampable = Vec::with_capacity(write_count);
        let mut random_bytes_per_chunk = 0;
        if let Some((spec, seed)) = data {
            let mut generator = PatternGenerator::new(spec, seed);
            random_bytes_per_chunk = generator.random_bytes_per_chunk();
            let writes = &mut mem.as_mut_slice()[read_count * bs..(read_count + write_count) * bs];
            for buf in writes.chunks_mut(bs) {
                let mut list = Vec::new();
                generator.fill(buf, &mut list);
                stampable.push(list);
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

    /// Takes a write buffer that is not in flight, stamps it with `key` so the
    /// data is unique, and returns its buffer index.
    #[inline]
    pub fn acquire_write(&mut self, key: u64) -> u32 {
        let mut w = self.next_write;
        // The pool holds at least 2 × iodepth buffers, so a free one is near.
        while self.write_busy[w] {
            w = (w + 1) % self.write_count;
        }
        self.next_write = (w + 1) % self.write_count;
        self.write_busy[w] = true;
        let index = self.read_count + w;
        let start = index * self.bs;
        // Disjoint fields: the pool's bytes and its stamp lists.
        stamp(
            &mut self.mem.as_mut_slice()[start..start + self.bs],
            &self.stampable[w],
            key,
        );
        index as u32
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

/// Write buffers per job: about 32 MiB of distinct data, at least 2 × iodepth.
pub fn write_pool_len(bs: usize, iodepth: usize) -> usize {
    let want = (WRITE_POOL_BYTES / bs).max(2 * iodepth).max(2);
    let cap = (WRITE_POOL_MAX_BYTES / bs).max(iodepth + 1);
    want.min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use csdchar_core::pattern::Fill;

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
