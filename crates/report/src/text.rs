//! One result as text, the way `csdchar block`, `capacity` and `estimate`
//! print it (fio-, csd-size- and sfx-filesize-like), and as JSON. Renderers
//! return bytes; the CLI's `emit` is the one place that writes them.

use std::fmt::Write as _;

use csdchar_core::capacity::{CapacityResult, CapacitySnapshot};
use csdchar_core::estimate::{Estimate, EstimateResult};
use csdchar_core::result::RunStatus;
use csdchar_core::result::block::{
    BlockResult, DirectionSummary, IntervalDirection, IntervalSample,
};
use csdchar_core::stats::LatencyStats;
use csdchar_core::units::{format_bytes, format_count, format_ns};

/// Any result as pretty JSON with a trailing newline.
pub fn json_pretty<T: serde::Serialize>(result: &T) -> Vec<u8> {
    let mut v = serde_json::to_vec_pretty(result).expect("results always serialize");
    v.push(b'\n');
    v
}

/// The runs of a job file (or one command line) as text: each run's
/// summary, under its job's name and group when it came from a job file.
pub fn block_results_text(results: &[BlockResult]) -> Vec<u8> {
    let mut text = Vec::new();
    for r in results {
        if let Some(j) = &r.job_file {
            text.extend(format!("\njob {} (group {}):\n", j.job, j.group_id).bytes());
        }
        text.extend(block_text(r));
    }
    text
}

/// One live line per interval, sysbench-style.
pub fn interval_line(s: &IntervalSample) -> String {
    let dir = |name: &str, d: &IntervalDirection| {
        format!(
            "{name}: iops {} bw {}/s lat avg {} p99 {}",
            format_count(d.iops),
            format_bytes(d.bw_bytes_per_s),
            format_ns(d.lat_mean_ns),
            format_ns(d.lat_p99_ns as f64)
        )
    };
    let mut parts = Vec::new();
    if let Some(r) = &s.read {
        parts.push(dir("read", r));
    }
    if let Some(w) = &s.write {
        parts.push(dir("write", w));
    }
    if let Some(t) = &s.trim {
        parts.push(dir("trim", t));
    }
    format!(
        "[ {:>6.1}s ] {}\n",
        s.t_ms as f64 / 1000.0,
        parts.join(" | ")
    )
}

fn latency_line(out: &mut String, name: &str, l: &LatencyStats) {
    let _ = writeln!(
        out,
        "    {name:>4}: min={}, max={}, avg={}, stdev={}",
        format_ns(l.min_ns as f64),
        format_ns(l.max_ns as f64),
        format_ns(l.mean_ns),
        format_ns(l.stddev_ns)
    );
}

fn direction(out: &mut String, name: &str, d: &DirectionSummary, elapsed_ns: u64) {
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={}/s ({:.1}MB/s) ({} in {:.0}ms)",
        format_count(d.iops),
        format_bytes(d.bw_bytes_per_s),
        d.bw_bytes_per_s / 1e6,
        format_bytes(d.bytes as f64),
        elapsed_ns as f64 / 1e6
    );
    latency_line(out, "slat", &d.slat);
    latency_line(out, "clat", &d.clat);
    latency_line(out, "lat", &d.lat);
    let _ = writeln!(out, "    lat percentiles:");
    for row in d.lat.percentiles.chunks(4) {
        let cells: Vec<String> = row
            .iter()
            .map(|p| {
                format!(
                    "{:>6.2}th=[{:>9}]",
                    p.percentile,
                    format_ns(p.value_ns as f64)
                )
            })
            .collect();
        let _ = writeln!(out, "     | {}", cells.join(", "));
    }
    let s = &d.interval_iops;
    if s.samples > 0 {
        let _ = writeln!(
            out,
            "    iops per interval: min={}, max={}, avg={}, stdev={}, samples={}",
            format_count(s.min),
            format_count(s.max),
            format_count(s.mean),
            format_count(s.stddev),
            s.samples
        );
    }
}

/// The human-readable summary.
pub fn block_text(r: &BlockResult) -> Vec<u8> {
    let mut out = String::new();
    let spec = &r.spec;
    let mut engine = format!("{:?}", r.engine.name).to_lowercase();
    let mut extras = Vec::new();
    if r.engine.fixed_buffers {
        extras.push("fixed buffers");
    }
    if r.engine.fixed_files {
        extras.push("fixed files");
    }
    if !extras.is_empty() {
        engine = format!("{engine} ({})", extras.join(", "));
    }
    let target = match &r.target.path {
        Some(p) => format!(
            "{p} ({}, {}{})",
            format!("{:?}", r.target.kind).to_lowercase(),
            format_bytes(r.target.size_bytes as f64),
            r.target
                .device
                .as_ref()
                .map(|d| format!(", device {d}"))
                .unwrap_or_default()
        ),
        None => "no target".into(),
    };
    let _ = writeln!(
        out,
        "csdchar block: rw={} bs={}{} iodepth={} numjobs={} engine={engine} on {target}",
        spec.rw.name(),
        format_bytes(spec.bs as f64),
        if spec.bssplit.is_none() {
            String::new()
        } else {
            format!(" bssplit={}", spec.bssplit.to_fio())
        },
        spec.iodepth,
        spec.numjobs
    );
    if let Some(d) = &r.read {
        direction(&mut out, "read", d, r.elapsed_ns);
    }
    if let Some(d) = &r.write {
        direction(&mut out, "write", d, r.elapsed_ns);
    }
    if let Some(d) = &r.trim {
        direction(&mut out, "trim", d, r.elapsed_ns);
    }
    if let Some(n) = r.zone_resets {
        // fio: "; N zone resets" after the write line.
        let _ = writeln!(out, "  zbd: {n} zone resets");
    }
    let c = &r.cpu;
    let _ = writeln!(
        out,
        "  cpu: usr={:.1}%, sys={:.1}% of one core (whole process, io_uring workers included){}",
        c.user_pct,
        c.system_pct,
        c.machine_busy_pct
            .map(|b| format!("; machine busy={b:.1}% of {} cores", c.cores))
            .unwrap_or_default()
    );
    if let Some(d) = &r.data {
        let ratio = |x: Option<f64>| x.map_or("n/a".to_string(), |v| format!("{v:.2}:1"));
        let _ = writeln!(
            out,
            "  data: compress={}% chunk={} fill={} dedupe={}%: {} random bytes per chunk; per-4KiB lz4 {}, deflate {} (target {})",
            d.compress_pct,
            format_bytes(d.chunk as f64),
            d.fill.name(),
            d.dedupe_pct,
            d.random_bytes_per_chunk,
            ratio(d.lz4_ratio),
            ratio(d.deflate_ratio),
            ratio(d.target_ratio)
        );
        let dd = &r.spec.dedupe;
        if !dd.is_none() {
            let _ = writeln!(
                out,
                "  fio dedupe: {}% of buffers duplicate, mode {}",
                dd.pct,
                match dd.mode {
                    csdchar_core::dedupe::DedupeMode::Repeat => "repeat".to_string(),
                    csdchar_core::dedupe::DedupeMode::WorkingSet => format!(
                        "working_set ({}% of size{})",
                        dd.working_set_pct,
                        if dd.global {
                            ", shared by every job"
                        } else {
                            ""
                        }
                    ),
                },
            );
        }
    }
    if let Some(ds) = &r.diskstats {
        let _ = writeln!(
            out,
            "  disk {}: read {} in {} ios, written {} in {} ios",
            ds.device,
            format_bytes(ds.delta.bytes_read() as f64),
            ds.delta.reads_completed,
            format_bytes(ds.delta.bytes_written() as f64),
            ds.delta.writes_completed
        );
    }
    if let Some(c) = &r.capacity
        && c.after.is_compressing()
    {
        let d = &c.delta;
        let signed = |v: Option<i64>| {
            v.map_or("-".to_string(), |x| {
                format!(
                    "{}{}",
                    if x < 0 { "-" } else { "+" },
                    format_bytes(x.unsigned_abs() as f64)
                )
            })
        };
        let _ = writeln!(
            out,
            "  device {}: logical {} physical {} during the run (ratio {}); now {} in {} ({})",
            c.after.device,
            signed(d.logical_bytes),
            signed(d.physical_bytes),
            d.compression_ratio
                .map_or("-".into(), |v| format!("{v:.2}:1")),
            c.after
                .logical_bytes
                .map_or("-".into(), |v| format_bytes(v as f64)),
            c.after
                .physical_bytes
                .map_or("-".into(), |v| format_bytes(v as f64)),
            c.after
                .compression_ratio
                .map_or("-".into(), |v| format!("{v:.2}:1")),
        );
    }
    if let Some(v) = &r.verify {
        let _ = writeln!(
            out,
            "  verify: {} blocks checked, {} bad",
            v.blocks_checked, v.bad_block_count
        );
        for b in v.bad_blocks.iter().take(20) {
            let _ = writeln!(
                out,
                "    bad block at LBA {} (offset {}): {}",
                b.lba, b.offset, b.reason
            );
        }
        if v.bad_blocks.len() > 20 {
            let _ = writeln!(
                out,
                "    ... {} more in the JSON result",
                v.bad_blocks.len() - 20
            );
        }
    }
    let status = match r.status {
        RunStatus::Completed => "completed".to_string(),
        RunStatus::Interrupted => "interrupted: partial result".to_string(),
        RunStatus::IoError => format!(
            "stopped by an I/O error: partial result ({})",
            r.error
                .as_ref()
                .map(|e| e.message.as_str())
                .unwrap_or("unknown")
        ),
        RunStatus::VerifyFailed => "verification failed".to_string(),
    };
    let _ = writeln!(out, "  status: {status}");
    out.into_bytes()
}

fn figure_source(s: &CapacitySnapshot, figure: &str) -> String {
    s.sources
        .iter()
        .find(|f| f.figure == figure)
        .map(|f| {
            serde_json::to_value(f.source)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .map_or(String::new(), |src| format!("[{src}]"))
}

/// What `csd-size.sh` prints, with the source of each figure.
pub fn capacity_text(r: &CapacityResult) -> Vec<u8> {
    let s = &r.snapshot;
    let mut out = String::new();
    let _ = writeln!(out, "{} (device {}) at {}", r.target, s.device, r.taken_at);
    let bytes = |v: Option<u64>| {
        v.map_or("-".to_string(), |b| {
            format!("{} ({b} bytes)", format_bytes(b as f64))
        })
    };
    let rows: [(&str, &str, String); 11] = [
        ("total capacity", "capacity_bytes", bytes(s.capacity_bytes)),
        ("logical data size", "logical_bytes", bytes(s.logical_bytes)),
        (
            "physical data size",
            "physical_bytes",
            bytes(s.physical_bytes),
        ),
        (
            "physical used",
            "physical_used_bytes",
            bytes(s.physical_used_bytes),
        ),
        (
            "physical capacity",
            "physical_capacity_bytes",
            bytes(s.physical_capacity_bytes),
        ),
        (
            "physical free",
            "physical_free_bytes",
            bytes(s.physical_free_bytes),
        ),
        (
            "compression ratio",
            "compression_ratio",
            s.compression_ratio
                .map_or("-".into(), |v| format!("{v:.2}:1")),
        ),
        (
            "out of space",
            "out_of_space",
            s.out_of_space
                .map_or("-".into(), |v| if v { "YES".into() } else { "no".into() }),
        ),
        (
            "NVMe data units written",
            "nvme_data_units_written",
            s.nvme_data_units_written.map_or("-".into(), |v| {
                format!("{v} ({})", format_bytes(v as f64 * 512_000.0))
            }),
        ),
        (
            "host bytes written (vendor)",
            "host_written_bytes",
            bytes(s.host_written_bytes),
        ),
        (
            "NAND bytes written (vendor)",
            "nand_written_bytes",
            bytes(s.nand_written_bytes),
        ),
    ];
    for (label, figure, value) in rows {
        let _ = writeln!(
            out,
            "  {label:<28} {value:<36} {}",
            figure_source(s, figure)
        );
    }
    if let Some(d) = &s.diskstats {
        let _ = writeln!(
            out,
            "  {:<28} read {}, written {}, discarded {}",
            "block layer (since boot)",
            format_bytes(d.bytes_read() as f64),
            format_bytes(d.bytes_written() as f64),
            format_bytes(d.sectors_discarded as f64 * 512.0)
        );
    }
    if let Some(b) = &r.btrfs {
        let _ = writeln!(
            out,
            "  btrfs: {} on disk for {} uncompressed ({} referenced), ratio {}, {} of {} extents compressed",
            format_bytes(b.disk_bytes as f64),
            format_bytes(b.uncompressed_bytes as f64),
            format_bytes(b.referenced_bytes as f64),
            b.ratio().map_or("-".to_string(), |v| format!("{v:.2}:1")),
            b.compressed_extents,
            b.extents
        );
    }
    if let Some(z) = &s.zfs {
        let opt = |v: Option<u64>| v.map_or("-".to_string(), |b| format_bytes(b as f64));
        let _ = writeln!(
            out,
            "  zfs dataset {}: used {}, referenced {}, logicalused {}, logicalreferenced {}{}",
            z.dataset,
            format_bytes(z.used_bytes as f64),
            format_bytes(z.referenced_bytes as f64),
            opt(z.logicalused_bytes),
            opt(z.logicalreferenced_bytes),
            if z.derived_logical {
                format!(
                    " (the version has no logicalused: logical {} derived from compressratio)",
                    format_bytes(z.logical_bytes as f64)
                )
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            out,
            "  zfs properties: compressratio {:.2}x, refcompressratio {}, compression {}, recordsize {}, primarycache {}",
            z.compressratio,
            z.refcompressratio
                .map_or("-".to_string(), |v| format!("{v:.2}x")),
            z.compression,
            format_bytes(z.recordsize_bytes as f64),
            z.primarycache.as_deref().unwrap_or("-")
        );
        let _ = writeln!(
            out,
            "  zfs pool {}: size {}, allocated {}, free {}{}  (zfs get -Hp, zpool get)",
            z.pool,
            opt(z.pool_size_bytes),
            opt(z.pool_allocated_bytes),
            opt(z.pool_free_bytes),
            if z.pool_rounded {
                " (rounded, as zpool printed them)"
            } else {
                ""
            }
        );
        if let Some(a) = &z.arc {
            let _ = writeln!(
                out,
                "  ARC: {} in memory, {} compressed for {} uncompressed ({}), hit ratio {}  (/proc/spl/kstat/zfs/arcstats)",
                format_bytes(a.size_bytes as f64),
                opt(a.compressed_bytes),
                opt(a.uncompressed_bytes),
                a.compression_ratio()
                    .map_or("-".to_string(), |v| format!("{v:.2}:1")),
                a.hit_ratio()
                    .map_or("-".to_string(), |v| format!("{:.1}%", v * 100.0)),
            );
        }
    }
    if !s.is_compressing() && r.btrfs.is_none() {
        let _ = writeln!(
            out,
            "  (no compression counters: not zram, not a ScaleFlux drive; `csdchar estimate` predicts what a compressing drive would store)"
        );
    }
    out.into_bytes()
}

/// Header of `--watch` lines.
pub const CAPACITY_WATCH_HEADER: &str =
    "time                      logical        physical       ratio     written/s    logical/s\n";

/// One `--watch` line: the counters now and their rates since `prev`.
pub fn capacity_watch_line(
    r: &CapacityResult,
    prev: Option<&CapacitySnapshot>,
    secs: f64,
) -> String {
    let s = &r.snapshot;
    let b = |v: Option<u64>| v.map_or("-".to_string(), |x| format_bytes(x as f64));
    let rate = |a: Option<u64>, p: Option<u64>| match (a, p) {
        (Some(a), Some(p)) if secs > 0.0 => {
            format!("{}/s", format_bytes(a.saturating_sub(p) as f64 / secs))
        }
        _ => "-".into(),
    };
    let written = rate(
        s.diskstats.map(|d| d.bytes_written()),
        prev.and_then(|p| p.diskstats.map(|d| d.bytes_written())),
    );
    let logical = rate(s.logical_bytes, prev.and_then(|p| p.logical_bytes));
    format!(
        "{:<25} {:<14} {:<14} {:<9} {:<12} {}\n",
        r.taken_at,
        b(s.logical_bytes),
        b(s.physical_bytes),
        s.compression_ratio
            .map_or("-".into(), |v| format!("{v:.2}:1")),
        written,
        logical
    )
}

/// A result as one line of JSON.
pub fn json_line<T: serde::Serialize>(v: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec(v).expect("results always serialize");
    out.push(b'\n');
    out
}

fn ratio_text(e: &Estimate) -> String {
    let r = e.ratio.map_or("-".to_string(), |r| format!("{r:.2}:1"));
    match e.ratio_ci95 {
        Some((lo, hi)) if hi.is_finite() => format!("{r} (95% CI {lo:.2}-{hi:.2})"),
        _ => r,
    }
}

/// What `sfx-filesize` prints per file, plus totals and the PostgreSQL breakdown.
pub fn estimate_text(r: &EstimateResult) -> Vec<u8> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>12} {:>12} {:>14} {:>10}  file",
        "logical", "allocated", "physical(est)", "ratio"
    );
    let shown = 200;
    for f in r.files.iter().take(shown) {
        let _ = writeln!(
            out,
            "{:>12} {:>12} {:>14} {:>10}  {}",
            format_bytes(f.logical_bytes as f64),
            format_bytes(f.allocated_bytes as f64),
            format_bytes(f.estimate.stored_bytes),
            f.estimate
                .ratio
                .map_or("-".to_string(), |v| format!("{v:.2}:1")),
            f.path
        );
    }
    if r.files.len() > shown {
        let _ = writeln!(
            out,
            "... {} more files in the JSON result",
            r.files.len() - shown
        );
    }
    let allocated: u64 = r.files.iter().map(|f| f.allocated_bytes).sum();
    let _ = writeln!(
        out,
        "{:>12} {:>12} {:>14} {:>10}  total ({} files)",
        format_bytes(r.total.logical_bytes as f64),
        format_bytes(allocated as f64),
        format_bytes(r.total.stored_bytes),
        r.total
            .ratio
            .map_or("-".to_string(), |v| format!("{v:.2}:1")),
        r.files.len()
    );
    if let Some(pg) = &r.postgres {
        let _ = writeln!(out, "\nPostgreSQL data directory {}:", pg.data_dir);
        for k in &pg.kinds {
            let name = serde_json::to_value(k.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {name:<9} {:>5} files {:>12} -> {:>12}  {}",
                k.files,
                format_bytes(k.estimate.logical_bytes as f64),
                format_bytes(k.estimate.stored_bytes),
                ratio_text(&k.estimate)
            );
        }
        let _ = writeln!(out, "  largest relations (db/relfilenode):");
        for rel in pg.relations.iter().take(10) {
            let kind = serde_json::to_value(rel.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "    {}/{} {kind:<8} {:>12} -> {:>12}  {}{}{}",
                rel.db.map_or("global".to_string(), |d| d.to_string()),
                rel.relfilenode,
                format_bytes(rel.main.logical_bytes as f64),
                format_bytes(rel.main.stored_bytes),
                ratio_text(&rel.main),
                if r.zfs.is_some() {
                    format!(
                        ", ZFS allocated {}",
                        format_bytes(rel.main_allocated_bytes as f64)
                    )
                } else {
                    String::new()
                },
                match (&rel.name, &rel.toast_of) {
                    (Some(n), Some(t)) => format!("  {n} (TOAST of {t})"),
                    (Some(n), None) => format!("  {n}"),
                    _ => String::new(),
                }
            );
        }
    }
    let _ = writeln!(
        out,
        "\nmodel: {} per {} chunk, stored size capped at the chunk; {}; ratio {}",
        r.codec.name(),
        format_bytes(r.chunk as f64),
        if r.sample_pct >= 100.0 {
            "every chunk compressed".to_string()
        } else {
            format!("{}% of chunks sampled", r.sample_pct)
        },
        ratio_text(&r.total)
    );
    if let Some(o) = &r.optimistic {
        let _ = writeln!(out, "optimistic bound (dynamic deflate): {}", ratio_text(o));
    }
    if let Some(z) = &r.zfs {
        let _ = writeln!(
            out,
            "on ZFS, dataset {z}: \"allocated\" is what ZFS stores for each file, compressed (its own figure \
             beside the model's)"
        );
    }
    let _ = writeln!(
        out,
        "{} in {:.2}s with {} threads ({}/s){}",
        format_bytes(r.total.logical_bytes as f64),
        r.elapsed_s,
        r.threads,
        format_bytes(r.throughput_bytes_per_s),
        if r.complete {
            ""
        } else {
            "; INCOMPLETE (interrupted or a read failed): figures extrapolated from the part read"
        }
    );
    out.into_bytes()
}
