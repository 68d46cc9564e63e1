//! The null engine: csdchar's own per-I/O cost (target: >= 3M IOPS per core;
//! fio's null engine does about 2.5M on the reference machine).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use csdchar_core::pattern::Fill;
use csdchar_core::result::block::{BlockSpec, EngineKind, RwMode};
use csdchar_core::stats::DEFAULT_PERCENTILES;
use csdchar_fio_like::{RunControl, run_block};

fn spec(rw: RwMode, ios: u64) -> BlockSpec {
    BlockSpec {
        target: None,
        rw,
        rwmixread: 50,
        bs: 4096,
        iodepth: 32,
        numjobs: 1,
        size: ios * 4096,
        offset: 0,
        runtime_ms: None,
        time_based: false,
        ramp_time_ms: 0,
        direct: true,
        seed: 1,
        engine: EngineKind::Null,
        compress_pct: 75,
        compress_chunk: 4096,
        compress_fill: Fill::Repeat,
        dedupe_pct: 0,
        log_interval_ms: 1000,
        iodepth_batch_submit: 0,
        iodepth_batch_complete: 1,
        verify: false,
        verify_only: false,
        force: false,
        percentiles: DEFAULT_PERCENTILES.to_vec(),
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
