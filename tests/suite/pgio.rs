//! pgio (SLOB for PostgreSQL) against clusters csdchar starts itself: the
//! load's physical layout, the update mix, server-side mypgio, and RIOPS
//! beside device reads (root: caches dropped; zram: capacity counters).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use csdchar_dbloop::iostat::{self, IoRates, IoSampler};
use csdchar_pgcluster::{ClusterSpec, ManagedCluster};
use csdchar_pgwire::client::connect;
use csdchar_pgwire::conn::with_search_path;
use csdchar_pgwire::env::ProcessEnv;
use csdchar_workloads::pgio::{self, PgioSpec};

use crate::common;
use common::{Mounted, Zram, psql};

// The tests whose runs take a different path on the io_uring client driver run again on it
// (the others load, check or clean up, where the driver plays no part).
crate::on_uring_too!("load_layout_update_mix_server_side_and_cleanup_follow_pgio");

const SCHEMA: &str = "csdchar";

fn spec(schemas: u32, blocks: u64, update_pct: u8, server_side: bool) -> PgioSpec {
    PgioSpec {
        schemas,
        blocks_per_schema: blocks,
        update_pct,
        work_unit: 255,
        update_work_unit: 8,
        seed: 7,
        schema: SCHEMA.into(),
        server_side,
    }
}

/// The cluster's conninfo with the workload's search_path.
fn conninfo(c: &ManagedCluster) -> String {
    with_search_path(&c.conninfo("postgres"), SCHEMA, &ProcessEnv).unwrap()
}

/// Loads `spec` over 2 connections; returns rows reported and seconds taken.
fn load(rt: &tokio::runtime::Runtime, ci: &str, spec: &PgioSpec, force: bool) -> (u64, f64) {
    let rows = Arc::new(AtomicU64::new(0));
    let r2 = Arc::clone(&rows);
    let t0 = Instant::now();
    rt.block_on(pgio::prepare(
        ci,
        spec,
        2,
        force,
        Arc::new(move |n| {
            r2.fetch_add(n, Ordering::Relaxed);
        }),
    ))
    .unwrap_or_else(|e| panic!("prepare: {e}"));
    (rows.load(Ordering::Relaxed), t0.elapsed().as_secs_f64())
}

#[test]
fn load_layout_update_mix_server_side_and_cleanup_follow_pgio() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let ci = conninfo(&cluster);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let s = spec(2, 2048, 25, false);
    let (rows, secs) = load(&rt, &ci, &s, false);
    assert_eq!(rows, 4096);
    eprintln!(
        "loaded 2 × 2048 blocks in {secs:.2} s ({:.0} MiB/s)",
        32.0 / secs
    );
    // A second prepare without --force refuses.
    let again = rt.block_on(pgio::prepare(&ci, &s, 1, false, Arc::new(|_| {})));
    assert!(
        again.unwrap_err().0.contains("exist already"),
        "refuses existing tables"
    );
    for t in ["pgio1", "pgio2"] {
        // One row per block: as many distinct heap blocks as rows, keys 1..=2048.
        assert_eq!(
            psql(
                &cluster,
                &format!(
                    "select count(*) || ',' || count(distinct (ctid::text::point)[0]) || ',' || \
                     min(mykey) || ',' || max(mykey) || ',' || min(length(filler)) || ',' || \
                     bool_and(filler = repeat('X', 1024)) from {SCHEMA}.{t}"
                )
            ),
            "2048,2048,1,2048,1024,true",
            "{t}"
        );
        assert_eq!(
            psql(
                &cluster,
                &format!(
                    "select array_to_string(reloptions, ',') from pg_class where oid = '{SCHEMA}.{t}'::regclass"
                )
            ),
            "fillfactor=10"
        );
        // The mykey index points at random blocks, and scratch rises with the block.
        let corr: Vec<f64> = psql(
            &cluster,
            &format!(
                "select corr(mykey, (ctid::text::point)[0]) || ',' || corr(scratch, (ctid::text::point)[0]) \
                 from {SCHEMA}.{t}"
            ),
        )
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
        assert!(corr[0].abs() < 0.1, "key/block correlation {}", corr[0]);
        assert!(corr[1] > 0.99, "scratch/block correlation {}", corr[1]);
        assert_eq!(
            psql(
                &cluster,
                &format!(
                    "select indexdef like '%(mykey)' from pg_indexes where indexname = '{t}_idx'"
                )
            ),
            "t"
        );
    }
    // Client-side, 25% updates: the share of completed operations by kind.
    let sum_before: i64 = psql(
        &cluster,
        &format!("select sum(scratch) from {SCHEMA}.pgio1"),
    )
    .parse()
    .unwrap();
    let w = Arc::new(pgio::workload(&s));
    let out = rt
        .block_on(common::run_workload(
            &ci,
            w,
            &common::run_settings(4, 2000, None),
            |_, _| {},
        ))
        .unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    let (sel, upd) = (out.by_kind[0].transactions, out.by_kind[1].transactions);
    let share = upd as f64 / (sel + upd) as f64;
    eprintln!(
        "client-side: {sel} selects, {upd} updates ({:.1}% updates)",
        share * 100.0
    );
    assert_eq!(sel + upd, out.tally.transactions);
    assert!(sel + upd > 400, "too few operations: {sel} + {upd}");
    assert!((share - 0.25).abs() < 0.05, "update share {share}");
    let sum_after: i64 = psql(
        &cluster,
        &format!("select sum(scratch) from {SCHEMA}.pgio1"),
    )
    .parse()
    .unwrap();
    assert!(sum_after > sum_before, "updates added to scratch");

    // Server-side: mypgio created by prepare; one call = 100 iterations, 25 updates.
    let s = spec(2, 2048, 25, true);
    load(&rt, &ci, &s, true);
    assert_eq!(
        psql(
            &cluster,
            &format!(
                "select loop_iterations || ',' || sql_selects || ',' || sql_updates || ',' || \
                 select_blk_touch_cnt from {SCHEMA}.mypgio('{SCHEMA}.pgio1', 25, 0, 2048, 255, 8, 100)"
            )
        ),
        "100,75,25,19125"
    );
    let refused = cluster
        .client("psql")
        .args([
            "-At",
            "-d",
            "postgres",
            "-c",
            &format!("select * from {SCHEMA}.mypgio('{SCHEMA}.pgio1', 75, 0, 2048, 255, 8, 10)"),
        ])
        .output()
        .unwrap();
    assert!(
        !refused.status.success()
            && String::from_utf8_lossy(&refused.stderr).contains("not supported"),
        "mypgio refuses 51–99% updates"
    );
    let out = rt
        .block_on(common::run_workload(
            &ci,
            Arc::new(pgio::workload(&s)),
            &common::run_settings(2, 1500, None),
            |_, _| {},
        ))
        .unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    assert!(out.tally.transactions > 0 && out.by_kind.is_empty());
    assert_eq!(out.tally.reads, out.tally.transactions, "one row per call");

    let dropped = rt.block_on(pgio::cleanup(&ci, SCHEMA, 2)).unwrap();
    assert_eq!(dropped, vec!["pgio1", "pgio2", "mypgio()"]);
    assert_eq!(
        psql(
            &cluster,
            "select (select count(*) from pg_class where relname like 'pgio%') || ',' || \
             (select count(*) from pg_proc where proname = 'mypgio') || ',' || \
             (select count(*) from pg_namespace where nspname = 'csdchar')"
        ),
        "0,0,0"
    );
}

/// Runs a select-only pgio step of `ms` on `threads` terminals and returns
/// the rates between samples taken just before and after (clients gone).
fn measured_run(
    rt: &tokio::runtime::Runtime,
    ci: &str,
    s: &PgioSpec,
    threads: u32,
    ms: u64,
) -> (IoRates, IoSampler) {
    rt.block_on(async {
        let admin = connect(ci).await.unwrap();
        let mut sampler = IoSampler::new(&admin).await;
        let before = sampler.sample(&admin).await;
        let out = common::run_workload(
            ci,
            Arc::new(pgio::workload(s)),
            &common::run_settings(threads, ms, None),
            |_, _| {},
        )
        .await
        .unwrap();
        assert!(out.error.is_none(), "{:?}", out.error);
        assert!(iostat::settle(&admin, Duration::from_secs(10)).await);
        let after = sampler.sample(&admin).await;
        let secs = after.taken.duration_since(before.taken).as_secs_f64();
        (before.rates(&after, secs), sampler)
    })
}

fn print_rates(label: &str, r: &IoRates) {
    eprintln!(
        "{label}: RIOPS {:.0}, hits/s {:.0}, device reads/s {:?}, read MB/s {:?}, read latency ms {:?}, device reads per miss {:?}",
        r.riops,
        r.hits_per_s,
        r.dev_read_iops.map(|v| v.round()),
        r.dev_read_bytes_per_s
            .map(|v| (v / 1e6 * 10.0).round() / 10.0),
        r.dev_read_latency_ms.map(|v| (v * 1000.0).round() / 1000.0),
        r.reads_per_miss.map(|v| (v * 1000.0).round() / 1000.0),
    );
}

#[test]
fn riops_and_device_reads_with_small_shared_buffers_and_dropped_caches() {
    if !common::postgres_or_skip() || !common::is_root_or_skip("pgio device reads") {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec {
        settings: vec!["shared_buffers=16MB".into()],
        ..ClusterSpec::default()
    })
    .unwrap();
    let ci = conninfo(&cluster);
    let rt = tokio::runtime::Runtime::new().unwrap();
    // 2 × 64 MiB: eight times shared_buffers.
    let s = spec(2, 8192, 0, false);
    let (_, secs) = load(&rt, &ci, &s, false);
    eprintln!(
        "loaded 2 × 64 MiB in {secs:.2} s ({:.0} MiB/s)",
        128.0 / secs
    );
    iostat::drop_caches().unwrap();
    let (r, sampler) = measured_run(&rt, &ci, &s, 4, 3000);
    print_rates("dropped caches, shared_buffers 16MB", &r);
    assert!(r.riops > 100.0, "RIOPS {}", r.riops);
    match sampler.device() {
        Some(dev) => {
            let reads = r.dev_read_iops.unwrap();
            eprintln!("data directory on {}", dev.name);
            assert!(reads > 0.0, "device reads {reads}");
        }
        None => eprintln!(
            "device part skipped: {}",
            sampler.note().unwrap_or("no device")
        ),
    }
}

#[test]
fn sampler_reports_logical_and_physical_bytes_on_zram() {
    if !common::postgres_or_skip() || !common::is_root_or_skip("pgio on zram") {
        return;
    }
    if Command::new("mkfs.ext4").arg("-V").output().is_err() {
        eprintln!("skipped: mkfs.ext4 not installed");
        return;
    }
    // Guards drop in reverse order: cluster, then umount, then zram reset.
    let Some(z) = Zram::new("1G", "lz4") else {
        return;
    };
    let mkfs = Command::new("mkfs.ext4")
        .args(["-q", "-F", &z.dev()])
        .status()
        .unwrap();
    assert!(mkfs.success());
    let mnt = tempfile::Builder::new()
        .prefix("csdchar-pgio")
        .tempdir_in("/var/tmp")
        .unwrap();
    let Some(_m) = Mounted::new(&z.dev(), mnt.path(), &[]) else {
        return;
    };
    let cluster = ManagedCluster::start(&ClusterSpec {
        pgdata: Some(mnt.path().join("pgdata")),
        settings: vec!["shared_buffers=16MB".into()],
        ..ClusterSpec::default()
    })
    .unwrap();
    let ci = conninfo(&cluster);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let s = spec(1, 4096, 0, false);
    load(&rt, &ci, &s, false);
    // Checkpoint, so the tables are on zram and not only in the page cache.
    psql(&cluster, "checkpoint");
    iostat::drop_caches().unwrap();
    let (r, sampler) = measured_run(&rt, &ci, &s, 2, 1500);
    print_rates("zram", &r);
    let dev = sampler.device().expect("zram has diskstats");
    assert_eq!(dev.disk, format!("zram{}", z.id));
    let (logical, physical) = (r.logical_bytes.unwrap(), r.physical_bytes.unwrap());
    eprintln!("zram logical {logical} bytes, physical {physical} bytes");
    // 32 MiB of pgio heap alone; its 'X' filler and 90% empty pages compress very well.
    assert!(logical > 32 << 20, "logical {logical}");
    assert!(
        physical > 0 && physical * 4 < logical,
        "physical {physical}"
    );
    assert!(r.riops > 0.0 && r.dev_read_iops.unwrap() > 0.0, "{r:?}");
}

/// A memory cgroup (v1, /sys/fs/cgroup/memory) holding the server's
/// processes; they go back to the root group and the group is removed on drop.
struct MemCgroup(PathBuf);

impl MemCgroup {
    fn new(limit: u64, pids: &[i32]) -> Option<MemCgroup> {
        let base = Path::new("/sys/fs/cgroup/memory");
        if !base.join("memory.limit_in_bytes").exists() {
            eprintln!("no memory cgroup v1 hierarchy at {}", base.display());
            return None;
        }
        let dir = base.join(format!("csdchar-pgio-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let g = MemCgroup(dir);
        std::fs::write(g.0.join("memory.limit_in_bytes"), limit.to_string()).ok()?;
        for p in pids {
            std::fs::write(g.0.join("cgroup.procs"), p.to_string()).ok()?;
        }
        Some(g)
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        let procs = std::fs::read_to_string(self.0.join("cgroup.procs")).unwrap_or_default();
        for p in procs.lines() {
            let _ = std::fs::write("/sys/fs/cgroup/memory/cgroup.procs", p);
        }
        for _ in 0..50 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("warning: could not remove {}", self.0.display());
    }
}

/// The postmaster and its children.
fn server_pids(pgdata: &Path) -> Vec<i32> {
    let pid: i32 = std::fs::read_to_string(pgdata.join("postmaster.pid"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    std::iter::once(pid)
        .chain(children.split_whitespace().filter_map(|p| p.parse().ok()))
        .collect()
}

/// The cache-control comparison of issue 15 (prints a table; run with
/// `--ignored --nocapture`): RIOPS against device reads for a read-only run
/// with no cache control, with caches dropped first, and with the server in a
/// memory-limited cgroup.
#[test]
#[ignore = "measurement, ~1 minute; run with --ignored --nocapture"]
fn cache_control_methods_compared() {
    if !common::postgres_or_skip() || !common::is_root_or_skip("cache control comparison") {
        return;
    }
    let mut cluster = ManagedCluster::start(&ClusterSpec {
        settings: vec!["shared_buffers=16MB".into()],
        ..ClusterSpec::default()
    })
    .unwrap();
    let ci = conninfo(&cluster);
    let rt = tokio::runtime::Runtime::new().unwrap();
    // 4 × 128 MiB = 512 MiB: small next to 22 GiB of free memory.
    let s = spec(4, 16384, 0, false);
    let (_, secs) = load(&rt, &ci, &s, false);
    eprintln!(
        "loaded 4 × 128 MiB in {secs:.2} s ({:.0} MiB/s)",
        512.0 / secs
    );
    let mut rows = Vec::new();
    // Warm page cache: read everything once, then run.
    for t in 1..=4 {
        psql(
            &cluster,
            &format!("select sum(scratch) from {SCHEMA}.pgio{t}"),
        );
    }
    rows.push(("warm page cache", measured_run(&rt, &ci, &s, 4, 5000).0));
    iostat::drop_caches().unwrap();
    rows.push(("drop_caches before", measured_run(&rt, &ci, &s, 4, 5000).0));
    // A second run without dropping again: the cache fills back up.
    rows.push((
        "after drop_caches, 2nd run",
        measured_run(&rt, &ci, &s, 4, 5000).0,
    ));
    iostat::drop_caches().unwrap();
    if let Some(g) = MemCgroup::new(64 << 20, &server_pids(cluster.pgdata())) {
        rows.push((
            "cgroup v1 memory 64MiB",
            measured_run(&rt, &ci, &s, 4, 5000).0,
        ));
        rows.push((
            "cgroup v1 memory 64MiB, 2nd",
            measured_run(&rt, &ci, &s, 4, 5000).0,
        ));
        cluster.stop().unwrap();
        drop(g);
    }
    eprintln!("| method | RIOPS | device reads/s | reads per miss | read latency ms |");
    eprintln!("|---|---:|---:|---:|---:|");
    for (label, r) in &rows {
        eprintln!(
            "| {label} | {:.0} | {:.0} | {:.3} | {:.3} |",
            r.riops,
            r.dev_read_iops.unwrap_or(f64::NAN),
            r.reads_per_miss.unwrap_or(f64::NAN),
            r.dev_read_latency_ms.unwrap_or(f64::NAN)
        );
        assert!(r.riops > 0.0, "{label}");
    }
    // A memory-limited server keeps the page cache out: device reads track misses.
    for (label, r) in rows.iter().filter(|(l, _)| l.starts_with("cgroup")) {
        let ratio = r.reads_per_miss.unwrap();
        assert!((0.85..1.15).contains(&ratio), "{label}: {ratio}");
    }
}
