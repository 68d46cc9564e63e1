//! The null engine: csdchar's own per-I/O cost (target: >= 3M IOPS per core;
//! fio's null engine does about 2.5M on the reference machine).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use csdchar_core::result::block::{BlockSpec, EngineKind, RwMode};
use csdchar_fio_like::{RunControl, run_block};

fn spec(rw: RwMode, ios: u64) -> BlockSpec {
    BlockSpec {
        rw,
        iodepth: 32,
        size: ios * 4096,
        engine: EngineKind::Null,
        compress_pct: 75,
        ..BlockSpec::default()
    }
}

fn null_engine(c: &mut Criterion) {
    let ios = 2_000_000;
    let mut group = c.benchmark_group("null_engine");
    group.sample_size(10);
    group.throughput(Throughput::Elements(ios));
    for rw in [RwMode::Randread, RwMode::Randwrite] {
        let s = spec(rw, ios);
        group.bench_function(format!("{}/4k/qd32", rw.name()), |b| {
            b.iter(|| {
                let r = run_block(&s, RunControl::quiet()).expect("null run");
                assert_eq!(
                    r.read.map_or(0, |d| d.ios) + r.write.map_or(0, |d| d.ios),
                    ios
                );
            })
        });
    }
    group.finish();
}

criterion_group!(benches, null_engine);
criterion_main!(benches);
