//! Write data whose compressibility is exact and reported.
//!
//! Like fio's `buffer_compress_percentage`, data is laid out in chunks
//! (`--compress-chunk`, capped at the block size): each chunk starts with a
//! random head and ends with a compressible filler, so that `compress_pct` % of
//! every chunk compresses away. Two differences from fio, both deliberate:
//!
//! - The head length is **calibrated**: a codec spends a few bytes on headers,
//!   literal-run lengths and match tokens, which makes fio's layout miss the
//!   intended ratio (lz4 stores 9.3:1 for fio's 90 %). The generator measures the
//!   per-page lz4 size of its own layout and shortens the head until the stored
//!   size matches `100 - compress_pct` % of the logical size.
//! - [`Fill::Repeat`] builds the filler from a short non-zero pattern whose
//!   period (3 bytes) is coprime with 8, so neither zero-sector detection nor
//!   zram's same-filled-page shortcut can store it for free, while it compresses
//!   as well as zeros.
//!
//! The random bytes come from xoshiro256++, which no LZ-class compressor can
//! exploit (fio's multiplicative generator is not statistically random).

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};

use crate::compressibility::{Codec, PAGE, PageCompressor, PageTally};

/// What the compressible part of a chunk is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Fill {
    /// Zero bytes: fio's layout.
    Zeros,
    /// A short repeated non-zero pattern (period 3 bytes) that defeats
    /// zero-page and zero-sector detection at the same ratio.
    Repeat,
}

impl Fill {
    /// Name as used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Fill::Zeros => "zeros",
            Fill::Repeat => "repeat",
        }
    }
}

/// The data layout a job writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataSpec {
    /// Share of every chunk that compresses away, 0–100.
    pub compress_pct: u8,
    /// Chunk size in bytes (already capped at the block size by the caller).
    pub chunk: usize,
    /// Filler for the compressible part.
    pub fill: Fill,
    /// Share of chunks that are identical copies of earlier chunks, 0–100.
    pub dedupe_pct: u8,
}

/// Bytes of the repeat filler's period: coprime with 8, so no 4 KiB page of
/// filler is one repeated machine word; short, so LZ4's accelerating skip
/// over incompressible data cannot step past its matches.
const REPEAT_PERIOD: usize = 3;
/// Distinct repeat-filler patterns.
const FILLER_TEMPLATES: usize = 64;
/// Bytes of one filler template: whole periods, about a page.
const TEMPLATE_LEN: usize = 4096 / REPEAT_PERIOD * REPEAT_PERIOD;
/// How many distinct source chunks dedupe copies are drawn from.
const DEDUPE_SOURCES: usize = 64;
/// Bytes at the start of a unique chunk overwritten by [`stamp`].
pub const STAMP_BYTES: usize = 8;

/// Generates chunked, compressible data deterministically from a seed.
pub struct PatternGenerator {
    spec: DataSpec,
    head: usize,
    rng: Xoshiro256PlusPlus,
    /// A second stream: random bytes come from both, interleaved, so the
    /// two generators' dependency chains overlap (≈1.5× the fill rate).
    rng2: Xoshiro256PlusPlus,
    dedupe_sources: Vec<u8>,
    /// [`FILLER_TEMPLATES`] blocks of repeat filler, each a whole number of
    /// periods with its own pattern; a chunk's filler is copied from one.
    filler_templates: Vec<u8>,
}

impl PatternGenerator {
    /// A generator for `spec`, seeded with `seed`. Calibrates the random-head
    /// length against per-page lz4 (a few hundred KiB of work).
    ///
    /// # Panics
    /// If `spec.chunk` is 0 or the percentages exceed 100 (validated upstream).
    pub fn new(spec: DataSpec, seed: u64) -> Self {
        assert!(spec.chunk > 0, "chunk must be positive");
        assert!(spec.compress_pct <= 100 && spec.dedupe_pct <= 100);
        let mut generator = PatternGenerator {
            spec,
            head: nominal_head(spec.chunk, spec.compress_pct),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            rng2: Xoshiro256PlusPlus::seed_from_u64(mix64(seed ^ 0x2_57EA)),
            dedupe_sources: Vec::new(),
            filler_templates: Vec::new(),
        };
        if spec.fill == Fill::Repeat {
            let mut templates = vec![0u8; FILLER_TEMPLATES * TEMPLATE_LEN];
            for t in templates.chunks_mut(TEMPLATE_LEN) {
                // Distinct non-zero bytes: never a zero sector, never one repeated word.
                let r = generator.rng.next_u64();
                let a = (r as u8) | 1;
                let b = a.wrapping_add(2 + ((r >> 8) as u8 % 100));
                let c = b.wrapping_add(2 + ((r >> 16) as u8 % 100));
                let pattern: [u8; REPEAT_PERIOD] = [a, b, c];
                for (i, byte) in t.iter_mut().enumerate() {
                    *byte = pattern[i % REPEAT_PERIOD];
                }
            }
            generator.filler_templates = templates;
        }
        generator.calibrate();
        if spec.dedupe_pct > 0 {
            let mut sources = vec![0u8; DEDUPE_SOURCES * spec.chunk];
            for c in sources.chunks_mut(spec.chunk) {
                generator.unique_chunk(c);
            }
            generator.dedupe_sources = sources;
        }
        generator
    }

    /// Random bytes at the start of every full chunk after calibration.
    pub fn random_bytes_per_chunk(&self) -> usize {
        self.head
    }

    /// The spec this generator follows.
    pub fn spec(&self) -> DataSpec {
        self.spec
    }

    /// Fills `buf` chunk by chunk from its start. The byte offsets of the chunks
    /// that are unique and can carry a [`stamp`] are pushed to `stampable`
    /// (dedupe copies are left out so they stay identical to their source).
    pub fn fill(&mut self, buf: &mut [u8], stampable: &mut Vec<u32>) {
        let chunk = self.spec.chunk;
        let mut start = 0usize;
        for c in buf.chunks_mut(chunk) {
            let is_dup = self.spec.dedupe_pct > 0
                && (self.rng.next_u32() % 100) < u32::from(self.spec.dedupe_pct);
            if is_dup {
                let src = (self.rng.next_u32() as usize) % DEDUPE_SOURCES;
                let s = &self.dedupe_sources[src * chunk..src * chunk + c.len()];
                c.copy_from_slice(s);
            } else {
                let head = self.unique_chunk(c);
                if head >= STAMP_BYTES {
                    stampable.push(start as u32);
                }
            }
            start += c.len();
        }
    }

    /// Makes `buf`, which [`fill`](Self::fill) of this generator filled
    /// before, new data of the same layout: without dedupe only the random
    /// heads are drawn again (the filler behind them is already in place, so a
    /// refill costs the random bytes alone); with dedupe the buffer is filled
    /// anew (which chunks are copies is drawn again) and `stampable` replaced.
    pub fn refill(&mut self, buf: &mut [u8], stampable: &mut Vec<u32>) {
        if self.spec.dedupe_pct > 0 {
            stampable.clear();
            self.fill(buf, stampable);
            return;
        }
        let chunk = self.spec.chunk;
        for c in buf.chunks_mut(chunk) {
            let head = self.head_len(c.len());
            fill_random(&mut self.rng, &mut self.rng2, &mut c[..head]);
        }
    }

    /// Random head bytes of a chunk of `len` bytes: a short last chunk gets a
    /// proportional head.
    fn head_len(&self, len: usize) -> usize {
        if len == self.spec.chunk {
            self.head
        } else {
            self.head * len / self.spec.chunk
        }
    }

    /// Writes one unique chunk (a short last chunk gets a proportional head);
    /// returns the head length used.
    fn unique_chunk(&mut self, c: &mut [u8]) -> usize {
        let head = self.head_len(c.len());
        let (random, filler) = c.split_at_mut(head);
        fill_random(&mut self.rng, &mut self.rng2, random);
        match self.spec.fill {
            Fill::Zeros => filler.fill(0),
            Fill::Repeat => {
                let k = (self.rng.next_u32() as usize) % FILLER_TEMPLATES;
                let template = &self.filler_templates[k * TEMPLATE_LEN..(k + 1) * TEMPLATE_LEN];
                fill_periodic(filler, template);
            }
        }
        head
    }

    /// Finds the head length at which per-page LZ4 stores `100 - compress_pct` %
    /// of the logical bytes, by bisection: stored size grows with the head but
    /// in steps (LZ4 skips ahead faster the longer it finds no match), so a
    /// linear correction can overshoot.
    fn calibrate(&mut self) {
        let p = self.spec.compress_pct;
        if p == 0 || p == 100 {
            return;
        }
        let chunk = self.spec.chunk;
        // At least 64 pages and 16 chunks, so the page/chunk phase averages out.
        let sample_len = (64 * PAGE).max(16 * chunk).div_ceil(chunk) * chunk;
        let target = sample_len as f64 * f64::from(100 - p) / 100.0;
        let mut compressor = PageCompressor::new(Codec::Lz4);
        let mut buf = vec![0u8; sample_len];
        let saved_rng = (self.rng.clone(), self.rng2.clone());
        let mut stored_at = |g: &mut Self, head: usize| {
            g.head = head;
            // The same random bytes for every trial.
            (g.rng, g.rng2) = saved_rng.clone();
            for c in buf.chunks_mut(chunk) {
                g.unique_chunk(c);
            }
            let mut tally = PageTally::default();
            compressor.tally(&buf, &mut tally);
            tally.stored_bytes as f64
        };
        // Largest head whose stored size is at most the target.
        let (mut lo, mut hi) = (0usize, chunk);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if stored_at(self, mid) <= target {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let below = (target - stored_at(self, lo)).abs();
        let above = if lo < chunk {
            (stored_at(self, lo + 1) - target).abs()
        } else {
            f64::INFINITY
        };
        self.head = if above < below { lo + 1 } else { lo };
        // Calibration must not change the data a seed produces afterwards.
        (self.rng, self.rng2) = saved_rng;
    }
}

/// fio's head length: `chunk * (100 - pct) / 100` random bytes.
pub fn nominal_head(chunk: usize, compress_pct: u8) -> usize {
    chunk * usize::from(100 - compress_pct) / 100
}

/// Overwrites the first [`STAMP_BYTES`] of each stampable chunk with a value
/// derived from `key`, so a pool buffer written again is not a duplicate of
/// its earlier copy. Costs a few stores per chunk.
pub fn stamp(buf: &mut [u8], stampable: &[u32], key: u64) {
    for (i, &off) in stampable.iter().enumerate() {
        let v = mix64(key ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let off = off as usize;
        buf[off..off + STAMP_BYTES].copy_from_slice(&v.to_le_bytes());
    }
}

/// A strong 64-bit finalizer (splitmix64's), for stamps and seeds.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn fill_random(a: &mut Xoshiro256PlusPlus, b: &mut Xoshiro256PlusPlus, out: &mut [u8]) {
    let mut pairs = out.chunks_exact_mut(16);
    for w in &mut pairs {
        w[..8].copy_from_slice(&a.next_u64().to_le_bytes());
        w[8..].copy_from_slice(&b.next_u64().to_le_bytes());
    }
    let rest = pairs.into_remainder();
    let mut words = rest.chunks_mut(8);
    for w in &mut words {
        let v = a.next_u64().to_le_bytes();
        let n = w.len();
        w.copy_from_slice(&v[..n]);
    }
}

/// Fills `out` with `block` (a whole number of pattern periods) repeated:
/// one copy, then doubling copies, which run at memmove speed.
fn fill_periodic(out: &mut [u8], block: &[u8]) {
    let first = block.len().min(out.len());
    out[..first].copy_from_slice(&block[..first]);
    let mut done = first;
    while done < out.len() {
        // Copy whole blocks so the phase stays right.
        let n = (done / block.len() * block.len()).min(out.len() - done);
        out.copy_within(0..n, done);
        done += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periodic_fill_keeps_phase() {
        for pattern in [&b"abcabc"[..], b"abcdefghijkl"] {
            let mut out = vec![0u8; 1000];
            fill_periodic(&mut out, pattern);
            for (i, &b) in out.iter().enumerate() {
                assert_eq!(b, pattern[i % pattern.len()]);
            }
        }
    }

    #[test]
    fn same_seed_same_data_after_calibration() {
        let spec = DataSpec {
            compress_pct: 75,
            chunk: 4096,
            fill: Fill::Repeat,
            dedupe_pct: 0,
        };
        let mut a = vec![0u8; 65536];
        let mut b = vec![0u8; 65536];
        PatternGenerator::new(spec, 9).fill(&mut a, &mut Vec::new());
        PatternGenerator::new(spec, 9).fill(&mut b, &mut Vec::new());
        assert_eq!(a, b);
    }

    #[test]
    fn extremes() {
        for fill in [Fill::Zeros, Fill::Repeat] {
            let mut g = PatternGenerator::new(
                DataSpec {
                    compress_pct: 0,
                    chunk: 4096,
                    fill,
                    dedupe_pct: 0,
                },
                1,
            );
            assert_eq!(g.random_bytes_per_chunk(), 4096);
            let mut buf = vec![0u8; 8192];
            let mut st = Vec::new();
            g.fill(&mut buf, &mut st);
            assert_eq!(st, vec![0, 4096]);
            let g = PatternGenerator::new(
                DataSpec {
                    compress_pct: 100,
                    chunk: 4096,
                    fill,
                    dedupe_pct: 0,
                },
                1,
            );
            assert_eq!(g.random_bytes_per_chunk(), 0);
        }
    }

    #[test]
    fn dedupe_copies_are_exact_and_not_stampable() {
        let spec = DataSpec {
            compress_pct: 50,
            chunk: 4096,
            fill: Fill::Zeros,
            dedupe_pct: 100,
        };
        let mut g = PatternGenerator::new(spec, 3);
        let mut buf = vec![0u8; 4096 * 200];
        let mut st = Vec::new();
        g.fill(&mut buf, &mut st);
        assert!(st.is_empty());
        let distinct: std::collections::HashSet<&[u8]> = buf.chunks(4096).collect();
        assert!(distinct.len() <= DEDUPE_SOURCES);
    }

    #[test]
    fn refill_draws_new_heads_and_keeps_the_layout() {
        for (fill, dedupe_pct) in [(Fill::Zeros, 0), (Fill::Repeat, 0), (Fill::Repeat, 50)] {
            let spec = DataSpec {
                compress_pct: 75,
                chunk: 4096,
                fill,
                dedupe_pct,
            };
            // A short last chunk too.
            let len = 3 * 4096 + 2048;
            let mut g = PatternGenerator::new(spec, 5);
            let head = g.random_bytes_per_chunk();
            let mut buf = vec![0u8; len];
            let mut st = Vec::new();
            g.fill(&mut buf, &mut st);
            let before = buf.clone();
            g.refill(&mut buf, &mut st);
            // Without dedupe the layout is kept: the same stampable chunks as
            // a fresh generator's fill.
            let mut fresh = PatternGenerator::new(spec, 5);
            let mut again = vec![0u8; len];
            let mut st2 = Vec::new();
            fresh.fill(&mut again, &mut st2);
            if dedupe_pct == 0 {
                for (i, (a, b)) in before.chunks(4096).zip(buf.chunks(4096)).enumerate() {
                    let h = if a.len() == 4096 {
                        head
                    } else {
                        head * a.len() / 4096
                    };
                    assert_ne!(a[..h], b[..h], "chunk {i}: new random head");
                    assert_eq!(a[h..], b[h..], "chunk {i}: filler kept");
                }
                assert_eq!(st, st2);
            } else {
                assert_ne!(before, buf);
                assert!(st.iter().all(|&o| o % 4096 == 0));
            }
            // The layout still compresses as calibrated (75 %: stored ≈ 1/4).
            let mut c = PageCompressor::new(Codec::Lz4);
            let mut big = vec![0u8; 64 * 4096];
            let mut st3 = Vec::new();
            let mut g = PatternGenerator::new(spec, 7);
            g.fill(&mut big, &mut st3);
            g.refill(&mut big, &mut st3);
            let mut tally = PageTally::default();
            c.tally(&big, &mut tally);
            let ratio = tally.ratio().unwrap();
            if dedupe_pct == 0 {
                assert!((ratio / 4.0 - 1.0).abs() < 0.05, "{fill:?}: ratio {ratio}");
            }
        }
    }

    #[test]
    fn stamp_makes_rewrites_unique() {
        let spec = DataSpec {
            compress_pct: 75,
            chunk: 4096,
            fill: Fill::Zeros,
            dedupe_pct: 0,
        };
        let mut g = PatternGenerator::new(spec, 3);
        let mut buf = vec![0u8; 8192];
        let mut st = Vec::new();
        g.fill(&mut buf, &mut st);
        let mut a = buf.clone();
        stamp(&mut a, &st, 1);
        let mut b = buf.clone();
        stamp(&mut b, &st, 2);
        assert_ne!(a[..4096], b[..4096]);
        assert_ne!(a[4096..], b[4096..]);
        assert_eq!(a[8..4096], b[8..4096]);
    }
}
