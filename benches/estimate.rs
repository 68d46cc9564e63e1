//! Estimator throughput per core, per codec (targets: lz4 >= 1.5 GB/s,
//! deflate-fixed >= 150 MB/s). Input: 8 MiB of 4 KiB pages at 70 % compressible
//! with a 3-byte filler, like business data, plus a quarter incompressible.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use csdchar_core::compressibility::{Codec, PageCompressor};
use csdchar_core::pattern::{DataSpec, Fill, PatternGenerator};
use std::hint::black_box;

fn input() -> Vec<u8> {
    let mut data = vec![0u8; 8 << 20];
    let (compressible, random) = data.split_at_mut(6 << 20);
    let spec = |p| DataSpec {
        compress_pct: p,
        chunk: 4096,
        fill: Fill::Repeat,
        dedupe_pct: 0,
    };
    PatternGenerator::new(spec(70), 1).fill(compressible, &mut Vec::new());
    PatternGenerator::new(spec(0), 2).fill(random, &mut Vec::new());
    data
}

fn codecs(c: &mut Criterion) {
    let data = input();
    let mut group = c.benchmark_group("estimate");
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.sample_size(20);
    for codec in [Codec::Lz4, Codec::DeflateFixed, Codec::Deflate, Codec::Zstd] {
        let mut pc = PageCompressor::new(codec);
        group.bench_function(codec.name(), |b| {
            b.iter(|| {
                let mut stored = 0usize;
                for page in black_box(&data).chunks(4096) {
                    stored += pc.stored_len(page);
                }
                stored
            })
        });
    }
    group.finish();
}

criterion_group!(benches, codecs);
criterion_main!(benches);
