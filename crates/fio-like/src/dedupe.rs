//! fio's whole-buffer deduplication in the engine: the contents
//! [`DedupePicker`] chooses, made bytes.
//!
//! Content `(thread, k)` is base buffer `k mod B` (generated as a write pool
//! of the job's data layout would be, kept aside) stamped with a key of
//! `(thread, k)`, B being the stamped pool's length at depth 1, which depends
//! on bs alone (not on iodepth, nor on whether the job's own buffers are
//! regenerated per write). Equal contents are
//! equal bytes; different ones differ in their stamps. Under
//! `dedupe_global` every thread generates the same pool
//! ([`GLOBAL_POOL_SEED`]), so a thread makes another's buffers exactly. Each
//! write copies its base into a free buffer (one `bs` copy per write, only
//! for jobs that deduplicate).

use csdchar_core::dedupe::{Content, DedupePicker, DedupeSpec};
use csdchar_core::pattern::{DataSpec, PatternGenerator, mix64, stamp};

use crate::buffers::{JobBuffers, write_pool_len};

/// Seed of every thread's write pool under `dedupe_global`.
pub const GLOBAL_POOL_SEED: u64 = 0xDEDE_6100_BA15;

/// The bytes of one thread's deduplicated writes.
pub struct DedupeWriter {
    picker: DedupePicker,
    bs: usize,
    bases: usize,
    pristine: Vec<u8>,
    stampable: Vec<Vec<u32>>,
}

impl DedupeWriter {
    /// The writer of fio thread `thread` (0-based over the job file) of a job
    /// of `size` bytes whose write data is `data` (layout and pool seed);
    /// None when the spec deduplicates nothing.
    pub fn new(
        spec: &DedupeSpec,
        thread: u32,
        size: u64,
        seed: u64,
        data: (DataSpec, u64),
        bs: usize,
    ) -> Option<DedupeWriter> {
        let picker = DedupePicker::new(spec, thread, size, bs as u64, seed)?;
        let bases = write_pool_len(bs, 1, false);
        let mut pristine = vec![0u8; bases * bs];
        let mut stampable = Vec::with_capacity(bases);
        let mut generator = PatternGenerator::new(data.0, data.1);
        for buf in pristine.chunks_mut(bs) {
            let mut list = Vec::new();
            generator.fill(buf, &mut list);
            stampable.push(list);
        }
        Some(DedupeWriter {
            picker,
            bs,
            bases,
            pristine,
            stampable,
        })
    }

    /// Fills a free write buffer with the next write's content; its index.
    pub fn acquire(&mut self, buffers: &mut JobBuffers) -> u32 {
        let (c, _) = self.picker.pick();
        let base = (c.k % self.bases as u64) as usize;
        let index = buffers.acquire_free();
        let buf = buffers.slice_mut(index);
        buf.copy_from_slice(&self.pristine[base * self.bs..(base + 1) * self.bs]);
        stamp(buf, &self.stampable[base], key(c));
        index
    }
}

fn key(c: Content) -> u64 {
    mix64(0x00DE_D0FE ^ (u64::from(c.thread) << 40) ^ c.k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use csdchar_core::dedupe::DedupeMode;
    use csdchar_core::pattern::Fill;
    use std::collections::HashSet;

    const DATA: DataSpec = DataSpec {
        compress_pct: 50,
        chunk: 4096,
        fill: Fill::Repeat,
        dedupe_pct: 0,
    };

    fn pool(seed: u64) -> JobBuffers {
        JobBuffers::new(4096, 4, false, Some((DATA, seed)))
    }

    #[test]
    fn equal_contents_are_equal_bytes_across_threads_of_one_pool() {
        let spec = DedupeSpec {
            pct: 50,
            mode: DedupeMode::WorkingSet,
            working_set_pct: 10,
            global: true,
            first_thread: 0,
            threads: 2,
        };
        let size = 8 << 20;
        let mut blocks: Vec<HashSet<Vec<u8>>> = Vec::new();
        for thread in 0..2 {
            let mut b = pool(GLOBAL_POOL_SEED);
            let mut w = DedupeWriter::new(
                &spec,
                thread,
                size,
                7 + u64::from(thread),
                (DATA, GLOBAL_POOL_SEED),
                4096,
            )
            .unwrap();
            let mut seen = HashSet::new();
            for _ in 0..2048 {
                let i = w.acquire(&mut b);
                seen.insert(b.slice(i).to_vec());
                b.release_write(i);
            }
            // Half the writes are duplicates.
            assert!((900..1200).contains(&seen.len()), "{}", seen.len());
            blocks.push(seen);
        }
        // Each thread wrote its own first pages and copies of the other's.
        let shared = blocks[0].intersection(&blocks[1]).count();
        assert!(shared > 100, "{shared}");
    }
}
