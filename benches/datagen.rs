//! Data generator throughput per core (target: >= 8 GB/s at --compress 75).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use csdchar_core::pattern::{DataSpec, Fill, PatternGenerator, stamp};
use std::hint::black_box;

fn generator(c: &mut Criterion) {
    let len = 8 << 20;
    let mut group = c.benchmark_group("datagen");
    group.throughput(Throughput::Bytes(len as u64));
    for fill in [Fill::Zeros, Fill::Repeat] {
        for pct in [0u8, 75] {
            let spec = DataSpec {
                compress_pct: pct,
                chunk: 4096,
                fill,
                dedupe_pct: 0,
            };
            let mut g = PatternGenerator::new(spec, 1);
            let mut buf = vec![1u8; len];
            let mut stamps = Vec::with_capacity(len / 4096);
            group.bench_function(format!("fill/{}/compress{pct}", fill.name()), |b| {
                b.iter(|| {
                    stamps.clear();
                    g.fill(black_box(&mut buf), &mut stamps);
                })
            });
        }
    }
    // The per-write cost of an incompressible layout (which replaces fio's
    // refill): stamping a 4 KiB buffer of the pre-generated pool.
    let spec = DataSpec {
        compress_pct: 75,
        chunk: 4096,
        fill: Fill::Repeat,
        dedupe_pct: 0,
    };
    let mut g = PatternGenerator::new(spec, 1);
    let mut buf = vec![0u8; 4096];
    let mut stamps = Vec::new();
    g.fill(&mut buf, &mut stamps);
    group.throughput(Throughput::Elements(1));
    let mut key = 0u64;
    group.bench_function("stamp/4k-write", |b| {
        b.iter(|| {
            key += 1;
            stamp(black_box(&mut buf), &stamps, key);
        })
    });
    // The per-write cost of a compressible layout: drawing a 4 KiB buffer's
    // random head again (75 %: about 1 KiB of random bytes; the filler stays).
    group.bench_function("refill/4k-write/compress75", |b| {
        b.iter(|| g.refill(black_box(&mut buf), &mut stamps))
    });
    group.finish();
}

criterion_group!(benches, generator);
criterion_main!(benches);
