//! The block engine on a real block device: 4 KiB random writes and reads at
//! depth 32 on a loop device over a file in /var/tmp, made by the bench
//! itself and detached afterwards. Needs root (losetup) and io_uring; without
//! them it says why and measures nothing. Figures go to the log only.

use std::process::Command;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use csdchar_core::result::block::{BlockSpec, EngineKind, RwMode};
use csdchar_fio_like::{RunControl, run_block};

/// Size of the backing file, and bytes moved per iteration.
const SIZE: u64 = 64 << 20;
const PER_ITERATION: u64 = 8 << 20;

/// A loop device over a temporary file; detached and removed on drop.
struct LoopDevice {
    dev: String,
    _file: tempfile::NamedTempFile,
}

impl LoopDevice {
    fn new() -> Result<LoopDevice, String> {
        // Safety: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("needs root to set up a loop device".into());
        }
        let file = tempfile::Builder::new()
            .prefix("csdchar-bench-loop")
            .tempfile_in("/var/tmp")
            .map_err(|e| e.to_string())?;
        file.as_file().set_len(SIZE).map_err(|e| e.to_string())?;
        let out = Command::new("losetup")
            .args(["--find", "--show", "--direct-io=on"])
            .arg(file.path())
            .output()
            .map_err(|e| format!("losetup: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "losetup: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok(LoopDevice { dev, _file: file })
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

fn spec(dev: &str, rw: RwMode) -> BlockSpec {
    BlockSpec {
        target: Some(dev.to_string()),
        rw,
        bs: 4096,
        iodepth: 32,
        size: PER_ITERATION,
        engine: EngineKind::Uring,
        direct: true,
        compress_pct: 75,
        // The bench made this device a moment ago; udev's probe after each
        // run may still hold it open, which the safety check reads as busy.
        force: true,
        ..BlockSpec::default()
    }
}

fn block_loop(c: &mut Criterion) {
    let lo = match LoopDevice::new() {
        Ok(l) => l,
        Err(why) => {
            eprintln!("skipping block_loop: {why}");
            return;
        }
    };
    // Lay the data down once so reads find written blocks.
    let mut fill = spec(&lo.dev, RwMode::Write);
    fill.size = SIZE;
    fill.bs = 1 << 20;
    if let Err(e) = run_block(&fill, RunControl::quiet()) {
        eprintln!(
            "skipping block_loop: the engine cannot write to {}: {e}",
            lo.dev
        );
        return;
    }
    let mut group = c.benchmark_group("block_loop");
    group.sample_size(10);
    group.throughput(Throughput::Elements(PER_ITERATION / 4096));
    for rw in [RwMode::Randwrite, RwMode::Randread] {
        let s = spec(&lo.dev, rw);
        group.bench_function(format!("{}/4k/qd32", rw.name()), |b| {
            b.iter(|| {
                let r = run_block(&s, RunControl::quiet()).expect("loop device run");
                assert_eq!(
                    r.read.map_or(0, |d| d.ios) + r.write.map_or(0, |d| d.ios),
                    PER_ITERATION / 4096
                );
            })
        });
    }
    group.finish();
}

criterion_group!(benches, block_loop);
criterion_main!(benches);
