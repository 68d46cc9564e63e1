//! Where the next I/O goes: uniformly random blocks, sequential with
//! wrap-around, or a random permutation that visits every block exactly once
//! (used when writing data that will be verified).

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::engine::Direction;
use csdchar_core::distribution::BlockPicker;
use csdchar_core::result::block::BlockSpec;

/// A uniformly random block index in `0..n` (Lemire's multiply-shift; the
/// bias for n far below 2^64 is negligible).
#[inline]
pub fn uniform_below(rng: &mut Xoshiro256PlusPlus, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

/// A bijection on `0..n` computed without memory: a bijective mix on the
/// smallest power of two ≥ n, with cycle-walking to stay below n.
#[derive(Debug, Clone)]
pub struct BlockPermutation {
    n: u64,
    bits: u32,
    mask: u64,
    keys: [u64; 3],
}

impl BlockPermutation {
    /// A permutation of `0..n` chosen by `seed`. `n` must be positive.
    pub fn new(n: u64, seed: u64) -> Self {
        assert!(n > 0);
        let bits = (64 - (n - 1).leading_zeros()).max(2);
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5045_524D);
        BlockPermutation {
            n,
            bits,
            mask,
            keys: [rng.next_u64() | 1, rng.next_u64() | 1, rng.next_u64()],
        }
    }

    fn mix(&self, mut x: u64) -> u64 {
        let half = (self.bits / 2).max(1);
        // Each step is a bijection on `bits`-bit values.
        x = (x ^ self.keys[2]) & self.mask;
        x = x.wrapping_mul(self.keys[0]) & self.mask;
        x ^= x >> half;
        x = x.wrapping_mul(self.keys[1]) & self.mask;
        x ^= x >> half;
        x
    }

    /// The `i`-th element of the permutation (`i < n`).
    pub fn get(&self, i: u64) -> u64 {
        debug_assert!(i < self.n);
        let mut x = self.mix(i);
        while x >= self.n {
            x = self.mix(x);
        }
        x
    }

    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Never true (n > 0).
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// fio's `random_generator=lfsr`: the blocks of `0..n` in a pseudo-random
/// order, each exactly once per pass.
#[derive(Debug, Clone)]
pub struct PassOrder {
    perm: BlockPermutation,
    next: u64,
}

impl PassOrder {
    /// An order of `0..n` (`n` positive) chosen by `seed`.
    pub fn new(n: u64, seed: u64) -> Self {
        PassOrder {
            perm: BlockPermutation::new(n, seed ^ 0x4C46_5352),
            next: 0,
        }
    }

    /// The next block; at the end of a pass, the same order again when
    /// `again`, else None.
    pub fn next(&mut self, again: bool) -> Option<u64> {
        if self.next == self.perm.len() {
            if !again {
                return None;
            }
            self.next = 0;
        }
        let b = self.perm.get(self.next);
        self.next += 1;
        Some(b)
    }
}

/// The block after `b` in a sequential job: the next, wrapping at the
/// region's end, or with fio's offset modifier `add` blocks beyond it (fio's
/// get_next_seq_offset: from the end of the last I/O, wrapping to the start
/// going forwards and to `nblocks + add` going backwards).
///
/// None: a job that skips forward has reached the region's end, where fio's
/// file is done (unless time_based, which starts over).
#[inline]
pub(crate) fn next_seq_block(
    b: u64,
    k: u64,
    nblocks: u64,
    add: i64,
    time_based: bool,
) -> Option<u64> {
    let end = b + k;
    if add == 0 {
        return Some(if end >= nblocks { 0 } else { end });
    }
    if end >= nblocks && add > 0 {
        return time_based.then_some(0);
    }
    let pos = end as i64 + add;
    Some(if pos < 0 || pos as u64 >= nblocks {
        if add > 0 {
            0
        } else {
            (nblocks as i64 + add).max(0) as u64
        }
    } else {
        pos as u64
    })
}

/// Units (of `unit` bytes) the next I/O of `dir` spans: 1, or with fio's
/// bssplit a size of the direction's list that fits the `room` bytes from its
/// offset to the region's end.
#[inline]
pub(crate) fn io_units(
    spec: &BlockSpec,
    dir: Direction,
    room: u64,
    unit: u64,
    rng: &mut Xoshiro256PlusPlus,
) -> u64 {
    let d = dir.index();
    if spec.bssplit.list(d).is_empty() {
        return 1;
    }
    let mut draw = || rng.next_u32();
    spec.bssplit
        .next_len(d, &mut draw, &|len| len <= room)
        .map_or(1, |len| (len / unit).max(1))
}

/// A random block of `0..nblocks` for `dir`: uniform, or from fio's
/// distribution (whose zones draw uniformly inside with `rng`).
#[inline]
pub(crate) fn random_block(
    rng: &mut Xoshiro256PlusPlus,
    skew: &mut Option<BlockPicker>,
    nblocks: u64,
    dir: Direction,
) -> u64 {
    match skew {
        None => uniform_below(rng, nblocks),
        Some(p) => p.next(dir.index(), &mut |k| uniform_below(rng, k)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_visits_every_block_once() {
        for n in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let p = BlockPermutation::new(n, 42);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let x = p.get(i);
                assert!(!seen[x as usize], "n={n} dup {x}");
                seen[x as usize] = true;
            }
        }
    }

    #[test]
    fn pass_order_repeats_each_pass_and_ends_without_again() {
        let mut o = PassOrder::new(100, 3);
        let first: Vec<u64> = (0..100).map(|_| o.next(true).unwrap()).collect();
        let mut sorted = first.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        let second: Vec<u64> = (0..100).map(|_| o.next(true).unwrap()).collect();
        assert_eq!(first, second);
        let mut o = PassOrder::new(5, 3);
        assert_eq!((0..5).filter_map(|_| o.next(false)).count(), 5);
        assert_eq!(o.next(false), None);
    }

    #[test]
    fn permutation_is_not_identity() {
        let p = BlockPermutation::new(1 << 16, 7);
        let fixed = (0..1u64 << 16).filter(|&i| p.get(i) == i).count();
        assert!(fixed < 100, "{fixed} fixed points");
    }
}
