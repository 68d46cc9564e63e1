//! Properties of the data generator and of offset generation.

use crate::common;

use std::sync::{Arc, Mutex};

use common::RecordingEngine;
use csdchar_core::compressibility::{Codec, PageCompressor, PageTally, is_same_filled};
use csdchar_core::pattern::{DataSpec, Fill, PatternGenerator};
use csdchar_core::result::block::{BlockSpec, EngineKind, RwMode};
use csdchar_fio_like::offsets::{BlockPermutation, uniform_below};
use csdchar_fio_like::{Direction, RunControl, run_block_with};
use proptest::prelude::*;
use rand_core::SeedableRng;

fn generate(spec: DataSpec, seed: u64, len: usize) -> Vec<u8> {
    let mut g = PatternGenerator::new(spec, seed);
    let mut buf = vec![0u8; len];
    g.fill(&mut buf, &mut Vec::new());
    buf
}

fn ratio(codec: Codec, data: &[u8]) -> f64 {
    let mut t = PageTally::default();
    PageCompressor::new(codec).tally(data, &mut t);
    t.ratio().unwrap_or(f64::INFINITY)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Per-4K lz4 lands within 5% of 100/(100-P); deflate (not calibrated for) within 15%.
    #[test]
    fn achieved_ratio_tracks_target(
        p in 0u8..=90,
        chunk_k in prop::sample::select(vec![1usize, 2, 4, 8, 16]),
        repeat in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let fill = if repeat { Fill::Repeat } else { Fill::Zeros };
        let spec = DataSpec { compress_pct: p, chunk: chunk_k * 1024, fill, dedupe_pct: 0 };
        let data = generate(spec, seed, 2 << 20);
        let target = 100.0 / (100.0 - f64::from(p));
        let lz4 = ratio(Codec::Lz4, &data);
        prop_assert!((lz4 / target - 1.0).abs() < 0.05, "lz4 {lz4} target {target}");
        let deflate = ratio(Codec::Deflate, &data);
        prop_assert!((deflate / target - 1.0).abs() < 0.15, "deflate {deflate} target {target}");
    }

    /// The repeat filler never produces an all-zero or same-filled 4 KiB page,
    /// even when whole pages are filler (chunk > 4k).
    #[test]
    fn repeat_fill_has_no_zero_or_same_filled_page(
        p in 0u8..=100,
        chunk_k in prop::sample::select(vec![1usize, 4, 16, 64]),
        seed in any::<u64>(),
    ) {
        let spec = DataSpec { compress_pct: p, chunk: chunk_k * 1024, fill: Fill::Repeat, dedupe_pct: 0 };
        let data = generate(spec, seed, 1 << 20);
        for (i, page) in data.chunks(4096).enumerate() {
            prop_assert!(!page.iter().all(|&b| b == 0), "page {i} all zero");
            prop_assert!(!is_same_filled(page), "page {i} same-filled");
        }
    }

    #[test]
    fn uniform_below_stays_in_range(n in 1u64..u64::MAX, seed in any::<u64>()) {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        for _ in 0..64 {
            prop_assert!(uniform_below(&mut rng, n) < n);
        }
    }

    #[test]
    fn permutation_is_a_bijection(n in 1u64..5000, seed in any::<u64>()) {
        let p = BlockPermutation::new(n, seed);
        let mut seen = vec![false; n as usize];
        for i in 0..n {
            let x = p.get(i) as usize;
            prop_assert!(x < n as usize && !seen[x]);
            seen[x] = true;
        }
    }

    /// Every offset the engine is asked for is bs-aligned within the region,
    /// for every mode, block size and region.
    #[test]
    fn offsets_are_aligned_and_inside_the_region(
        mode in prop::sample::select(vec![RwMode::Read, RwMode::Write, RwMode::Randread, RwMode::Randwrite, RwMode::Randrw, RwMode::Readwrite, RwMode::Trim, RwMode::Randtrim, RwMode::Trimwrite, RwMode::Randtrimwrite]),
        bs_sectors in 1u64..64,
        blocks in 1u64..300,
        offset_sectors in 0u64..1000,
        numjobs in 1u32..4,
        iodepth in 1u32..40,
    ) {
        let bs = bs_sectors * 512;
        let spec = spec(mode, bs, blocks * bs + bs / 2, offset_sectors * 512, numjobs, iodepth);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let r = run_block_with(&spec, RunControl::quiet(), |_, _| Ok(RecordingEngine::new(&seen, None))).unwrap();
        let seen = seen.lock().unwrap();
        // Not time-based: each job does size / bs I/Os (fio's trimwrite
        // counts the writes: each block is trimmed and written).
        let per_block = if mode.trims() && mode.writes() { 2 } else { 1 };
        prop_assert_eq!(seen.len() as u64, per_block * blocks * u64::from(numjobs));
        let total = r.read.map_or(0, |d| d.ios) + r.write.map_or(0, |d| d.ios) + r.trim.map_or(0, |d| d.ios);
        prop_assert_eq!(total, seen.len() as u64);
        for &(off, dir) in seen.iter() {
            prop_assert!(off >= spec.offset && off + bs <= spec.offset + blocks * bs, "offset {} outside", off);
            prop_assert_eq!((off - spec.offset) % bs, 0);
            prop_assert!(mode.writes() || dir != Direction::Write);
            prop_assert!(mode.reads() || dir != Direction::Read);
            prop_assert!(mode.trims() || dir != Direction::Trim);
        }
        if mode.trims() && mode.writes() && numjobs == 1 {
            // Every write follows the trim of its block.
            for pair in seen.chunks(2) {
                prop_assert_eq!(pair[0].1, Direction::Trim);
                prop_assert_eq!(pair[1], (pair[0].0, Direction::Write));
            }
        }
        if !mode.is_random() && numjobs == 1 && !mode.reads() {
            // Sequential writes and trims walk the region in order.
            let offs: Vec<u64> = seen.iter().step_by(per_block as usize).map(|x| x.0).collect();
            let expect: Vec<u64> = (0..blocks).map(|b| spec.offset + b * bs).collect();
            prop_assert_eq!(offs, expect);
        }
    }
}

fn spec(rw: RwMode, bs: u64, size: u64, offset: u64, numjobs: u32, iodepth: u32) -> BlockSpec {
    BlockSpec {
        rw,
        bs,
        iodepth,
        numjobs,
        size,
        offset,
        direct: false,
        seed: 3,
        engine: EngineKind::Null,
        compress_pct: 50,
        compress_chunk: 4096.min(bs),
        ..BlockSpec::default()
    }
}
