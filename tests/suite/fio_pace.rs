//! How I/Os are generated and paced, against fio itself: `blockalign` (where
//! random I/Os start, with bssplit, a zoned distribution and a read/write mix
//! as in fio's examples/jesd219.fio), `random_generator=lfsr` (every block
//! exactly once per pass) and `io_submit_mode=offload` (rated I/Os issued on
//! schedule whatever the completions do).

use crate::fio_parity::{fio, fio_json_of, logs_in, run_job_file_ok};

use csdchar_core::result::block::EngineInfo;
use csdchar_fio_like::engine::{Completion, EngineError, IoEngine, IoRequest};
use csdchar_fio_like::run::{RunControl, run_block_with};

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Runs `body` (options of one job `[j]`, with a lat log with offsets into
/// the tool's own directory) through fio and csdchar; the lat log's lines of
/// each: time, latency, direction, size, offset.
fn both(dir: &Path, body: &str) -> [Vec<Vec<String>>; 2] {
    ["fio", "csdchar"].map(|who| {
        let out = dir.join(who);
        std::fs::create_dir(&out).unwrap();
        let job = format!(
            "[j]\n{body}\nwrite_lat_log={}/j\nlog_offset=1\n",
            out.display()
        );
        let path = dir.join(format!("{who}.fio"));
        std::fs::write(&path, job).unwrap();
        run_job_file_ok(who, &path);
        logs_in(&out).remove("j_lat.1.log").expect("a lat log")
    })
}

/// Offsets of direction `d` ("0" reads, "1" writes) in a lat log.
fn offsets(lines: &[Vec<String>], d: &str) -> Vec<u64> {
    lines
        .iter()
        .filter(|l| l[2] == d)
        .map(|l| l[4].parse().unwrap())
        .collect()
}

const JESD219: &str = "ioengine=null\nsize=32m\nrw=randrw\nnorandommap\nrwmixread=40\n\
    iodepth=16\nbssplit=512/4:1024/1:1536/1:2048/1:2560/1:3072/1:3584/1:4k/67:8k/10:16k/7:\
    32k/3:64k/3\nrandom_distribution=zoned:50/5:30/15:20/80";

#[test]
fn blockalign_starts_random_ios_where_fio_does() {
    if fio().is_none() {
        return;
    }
    let size = 32u64 << 20;
    // fio's jesd219 example: offsets on 4k whatever the size, the zones'
    // shares kept, every I/O inside the region.
    let d = tempfile::tempdir().unwrap();
    let logs = both(d.path(), &format!("{JESD219}\nblockalign=4k"));
    let mut hot = Vec::new();
    for (who, lines) in ["fio", "csdchar"].iter().zip(&logs) {
        assert!(lines.len() > 1000, "{who}: {} I/Os", lines.len());
        for l in lines {
            let (len, off): (u64, u64) = (l[3].parse().unwrap(), l[4].parse().unwrap());
            assert_eq!(off % 4096, 0, "{who}: offset {off} with blockalign=4k");
            assert!(
                off + len <= size,
                "{who}: {len} bytes at {off} pass the end"
            );
        }
        // Sizes under 4k start on 4k too (they would start on 512 without it).
        assert!(lines.iter().any(|l| l[3] == "512"), "{who}: 512-byte I/Os");
        let first = lines
            .iter()
            .filter(|l| l[4].parse::<u64>().unwrap() < size * 5 / 100)
            .count();
        hot.push(first as f64 / lines.len() as f64 * 100.0);
    }
    assert!(
        (hot[0] - hot[1]).abs() <= 4.0 && (hot[1] - 50.0).abs() <= 5.0,
        "share of I/Os on the first 5%: fio {:.1}%, csdchar {:.1}% (zone 50/5)",
        hot[0],
        hot[1]
    );
    // Without blockalign, both start small I/Os off 4k (the test can fail).
    let d = tempfile::tempdir().unwrap();
    for (who, lines) in ["fio", "csdchar"].iter().zip(&both(d.path(), JESD219)) {
        let off = lines
            .iter()
            .filter(|l| l[4].parse::<u64>().unwrap() % 4096 != 0);
        assert!(
            off.count() > 100,
            "{who}: offsets off 4k without blockalign"
        );
    }
    // Per direction (reads on 8k, writes on 4k), sizes larger than the
    // alignment: fio's last_block leaves room for the smallest size.
    let d = tempfile::tempdir().unwrap();
    let logs = both(
        d.path(),
        "ioengine=null\nsize=8m\nrw=randrw\nnorandommap\niodepth=4\n\
         bssplit=16k/50:32k/50\nblockalign=8k,4k",
    );
    for (who, lines) in ["fio", "csdchar"].iter().zip(&logs) {
        let (r, w) = (offsets(lines, "0"), offsets(lines, "1"));
        assert!(r.iter().all(|o| o % 8192 == 0), "{who}: reads on 8k");
        assert!(w.iter().all(|o| o % 4096 == 0), "{who}: writes on 4k");
        assert!(
            w.iter().filter(|o| *o % 8192 != 0).count() > w.len() / 4,
            "{who}: writes between 8k boundaries too"
        );
        assert!(
            r.iter().filter(|o| *o % 16384 != 0).count() > r.len() / 4,
            "{who}: reads between 16k boundaries"
        );
    }
}

#[test]
fn lfsr_visits_every_block_exactly_once_per_pass() {
    if fio().is_none() {
        return;
    }
    for (loops, rw) in [(1u64, "randread"), (2, "randwrite")] {
        let d = tempfile::tempdir().unwrap();
        let body =
            format!("ioengine=null\nsize=1m\nbs=4k\nrw={rw}\nrandom_generator=lfsr\nloops={loops}");
        for (who, lines) in ["fio", "csdchar"].iter().zip(&both(d.path(), &body)) {
            let offs: Vec<u64> = lines.iter().map(|l| l[4].parse().unwrap()).collect();
            assert_eq!(offs.len() as u64, 256 * loops, "{who}: I/Os");
            for pass in offs.chunks(256) {
                let mut sorted = pass.to_vec();
                sorted.sort_unstable();
                assert_eq!(
                    sorted,
                    (0..256u64).map(|b| b * 4096).collect::<Vec<_>>(),
                    "{who} {rw}: each block once per pass"
                );
                assert_ne!(pass, &sorted[..], "{who}: a random order, not sequential");
            }
        }
    }
    // Without lfsr (and without fio's random map) blocks repeat.
    let d = tempfile::tempdir().unwrap();
    let body = "ioengine=null\nsize=1m\nbs=4k\nrw=randread\nnorandommap";
    let [_, ours] = both(d.path(), body);
    let mut offs: Vec<&String> = ours.iter().map(|l| &l[4]).collect();
    offs.sort_unstable();
    offs.dedup();
    assert!(offs.len() < 240, "independent draws repeat blocks");
}

/// A test engine whose every request completes `lat` after it is queued;
/// records when each was queued.
struct SlowEngine {
    lat: Duration,
    /// Latency `lat` per request in flight (itself included), not fixed.
    per_inflight: bool,
    pending: Vec<(Instant, Completion)>,
    issued: Arc<Mutex<Vec<Instant>>>,
}

impl SlowEngine {
    /// Sleeps until `min` requests are done or `until`, whichever is first.
    fn wait(&mut self, min: u32, until: Option<Instant>) {
        let Some(k) = (min as usize).checked_sub(1) else {
            return;
        };
        let Some(&(due, _)) = self.pending.get(k) else {
            return;
        };
        let wake = until.map_or(due, |u| u.min(due));
        std::thread::sleep(wake.saturating_duration_since(Instant::now()));
    }
}

impl IoEngine for SlowEngine {
    fn register_buffers(&mut self, _: &[(*mut u8, usize)]) -> Result<(), EngineError> {
        Ok(())
    }
    fn queue(&mut self, req: &IoRequest) {
        let now = Instant::now();
        self.issued.lock().unwrap().push(now);
        let c = Completion {
            tag: req.tag,
            result: req.dir.success(req.len),
        };
        let lat = match self.per_inflight {
            true => self.lat * (self.pending.len() as u32 + 1),
            false => self.lat,
        };
        let at = self.pending.partition_point(|(due, _)| *due <= now + lat);
        self.pending.insert(at, (now + lat, c));
    }
    fn submit_and_wait(&mut self, min: u32) -> Result<(), EngineError> {
        self.wait(min, None);
        Ok(())
    }
    fn submit_and_wait_for(&mut self, min: u32, timeout_ns: u64) -> Result<(), EngineError> {
        self.wait(min, Some(Instant::now() + Duration::from_nanos(timeout_ns)));
        Ok(())
    }
    fn reap(&mut self, out: &mut Vec<Completion>) {
        let now = Instant::now();
        let k = self.pending.partition_point(|(due, _)| *due <= now);
        out.extend(self.pending.drain(..k).map(|(_, c)| c));
    }
    fn info(&self) -> EngineInfo {
        csdchar_fio_like::NullEngine::new().info()
    }
}

/// Gaps between consecutive issues, ms, sorted.
fn gaps_ms(issued: &[Instant]) -> Vec<f64> {
    let mut g: Vec<f64> = issued
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64() * 1e3)
        .collect();
    g.sort_by(f64::total_cmp);
    g
}

#[test]
fn offload_issues_on_the_rate_schedule_whatever_completions_take() {
    // 500 IOPS (one I/O every 2 ms) on a target answering in 6 ms: inline,
    // fio waits for everything in flight when ahead, then issues what is due
    // at once (bursts); offload issues every 2 ms.
    let mut medians = Vec::new();
    for mode in ["inline", "offload"] {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("j.fio");
        std::fs::write(
            &path,
            format!(
                "[j]\nioengine=null\nsize=64m\nrw=randread\nbs=4k\niodepth=8\nrate_iops=500\n\
                 runtime=1\ntime_based\nio_submit_mode={mode}\n"
            ),
        )
        .unwrap();
        let plan = csdchar_fio_like::jobfile::load_job_file(&path, false).unwrap();
        let spec = &plan.jobs[0].spec;
        let issued = Arc::new(Mutex::new(Vec::new()));
        let r = run_block_with(spec, RunControl::quiet(), |_, _| {
            Ok(SlowEngine {
                lat: Duration::from_millis(6),
                per_inflight: false,
                pending: Vec::new(),
                issued: Arc::clone(&issued),
            })
        })
        .unwrap();
        let ios = r.jobs[0].read.as_ref().unwrap().ios;
        assert!(
            (440..=510).contains(&ios),
            "{mode}: {ios} I/Os in 1 s at 500 IOPS"
        );
        let g = gaps_ms(&issued.lock().unwrap());
        medians.push(g[g.len() / 2]);
    }
    assert!(
        medians[0] < 0.5,
        "inline: issues come in bursts (median gap {:.2} ms)",
        medians[0]
    );
    assert!(
        (1.5..=2.5).contains(&medians[1]),
        "offload: one issue every 2 ms (median gap {:.2} ms)",
        medians[1]
    );
}

/// fio-json of `path` by `who`; None when fio hangs (fio 3.33 with
/// io_submit_mode=offload now and then never ends: killed after 20 s; the
/// job has `thread`, so the kill ends it whole).
fn fio_json(who: &str, path: &Path) -> Option<serde_json::Value> {
    fio_json_of(who, path, Duration::from_secs(20))
        .unwrap_or_else(|(code, e)| panic!("{who} failed on {} ({code}): {e}", path.display()))
}

#[test]
fn offload_holds_the_rate_beside_fio_on_a_file_with_direct_io() {
    if fio().is_none() {
        return;
    }
    // fio's fixed-rate-submission.fio, small and short, on a file (fio's
    // offload hangs on the null engine). Issue times from the lat log
    // (completion time minus latency, ms).
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = d.path().join("data");
    std::fs::write(&file, vec![7u8; 8 << 20]).unwrap();
    let mut iops = Vec::new();
    for who in ["fio", "csdchar"] {
        let out = d.path().join(who);
        std::fs::create_dir(&out).unwrap();
        let path = d.path().join(format!("{who}.fio"));
        std::fs::write(
            &path,
            format!(
                "[fixed-rate-submit]\nfilename={}\nsize=8m\nrw=read\nioengine=libaio\niodepth=32\n\
                 thread\ndirect=1\nio_submit_mode=offload\nrate_iops=200\nruntime=2\ntime_based\n\
                 write_lat_log={}/j\n",
                file.display(),
                out.display()
            ),
        )
        .unwrap();
        let Some(j) = fio_json(who, &path) else {
            continue;
        };
        iops.push((who, j["jobs"][0]["read"]["iops"].as_f64().unwrap()));
        let lines = logs_in(&out).remove("j_lat.1.log").expect("a lat log");
        let mut issued: Vec<f64> = lines
            .iter()
            .map(|l| l[0].parse::<f64>().unwrap() - l[1].parse::<f64>().unwrap() / 1e6)
            .collect();
        issued.sort_by(f64::total_cmp);
        let mut g: Vec<f64> = issued.windows(2).map(|w| w[1] - w[0]).collect();
        g.sort_by(f64::total_cmp);
        let median = g[g.len() / 2];
        assert!(
            (3.5..=6.5).contains(&median),
            "{who}: median gap between issues {median:.2} ms at 200 IOPS"
        );
    }
    assert!(iops.iter().any(|(w, _)| *w == "csdchar"));
    for (who, v) in &iops {
        assert!(
            (190.0..=205.0).contains(v),
            "{who}: {v:.1} IOPS at rate_iops=200"
        );
    }
}

#[test]
fn latency_target_settles_on_the_depth_that_keeps_the_target() {
    // A target answering in 2 ms per I/O in flight: 9 ms holds up to depth 4
    // (8 ms), depth 5 (10 ms) misses it. The search doubles to 8, halves back
    // to 4 and ends by itself after one final window. A loaded machine only
    // adds latency, and the target leaves depth 3 three milliseconds and
    // depth 2 five of slack at the 90th percentile: 2 to 4 (no search: 32).
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("j.fio");
    std::fs::write(
        &path,
        "[j]\nioengine=null\nsize=64m\nrw=randread\nbs=4k\niodepth=32\nruntime=20\ntime_based\n\
         latency_target=9000\nlatency_window=200000\nlatency_percentile=90\n",
    )
    .unwrap();
    let plan = csdchar_fio_like::jobfile::load_job_file(&path, false).unwrap();
    let t = Instant::now();
    let r = run_block_with(&plan.jobs[0].spec, RunControl::quiet(), |_, _| {
        Ok(SlowEngine {
            lat: Duration::from_millis(2),
            per_inflight: true,
            pending: Vec::new(),
            issued: Arc::new(Mutex::new(Vec::new())),
        })
    })
    .unwrap();
    let depth = r.latency_depth.expect("a depth");
    assert!((2..=4).contains(&depth), "settled at depth {depth}");
    assert!(t.elapsed() < Duration::from_secs(10), "ended by itself");
    // The statistics are the final window's: about 200 ms.
    assert!(r.elapsed_ns < 1_000_000_000, "elapsed {} ns", r.elapsed_ns);
}

#[test]
fn latency_profile_ends_and_reports_as_fio_does() {
    if fio().is_none() {
        return;
    }
    // fio's latency-profile.fio on the null engine, short windows: every
    // depth keeps the target, so both double to iodepth, run one final
    // window and end long before the runtime, with fio 3.33's keys. The
    // target is a second: a 10 ms one was missed at p99.9 on a loaded CI
    // machine (a thread preempted that long), and the search settled at 10.
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("lp.fio");
    std::fs::write(
        &path,
        "[global]\nbs=4k\nrw=randread\nrandom_generator=lfsr\nioengine=null\niodepth=16\n\
         latency_target=1000000\nlatency_window=50000\nlatency_percentile=99.9\nthread\n\
         runtime=20\ntime_based\n[device]\nsize=1g\n",
    )
    .unwrap();
    for who in ["fio", "csdchar"] {
        let t = Instant::now();
        let Some(v) = fio_json(who, &path) else {
            continue;
        };
        let j = &v["jobs"][0];
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "{who}: ended by itself"
        );
        assert_eq!(j["latency_depth"], 16, "{who}");
        assert_eq!(j["latency_target"], 1_000_000_000, "{who}: ns");
        assert_eq!(j["latency_window"], 50_000, "{who}: µs");
        assert_eq!(j["latency_percentile"], 99.9, "{who}");
    }
}
