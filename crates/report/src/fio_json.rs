//! fio 3.x's `json` and `json+` output from csdchar block results, so the
//! tools that read fio's output (fio-plot, fio2gnuplot, fio's own
//! `fio_jsonplus_clat2csv`, dashboards) read csdchar's.
//!
//! Shape and units are fio's (stat.c `show_thread_status_json`,
//! `add_ddir_status_json`): bandwidth `bw` in KiB/s and `bw_bytes` in B/s,
//! `runtime` in ms, latencies in ns under `slat_ns`/`clat_ns`/`lat_ns`,
//! percentiles under `clat_ns.percentile` keyed `"99.000000"`, and for json+
//! `clat_ns.bins`: fio's log-linear buckets (64 per power of two) keyed by
//! their midpoint in ns. csdchar's histograms are finer (3 significant
//! digits), so each recorded value is counted in the fio bucket it falls in.
//!
//! Runs of one `group_reporting` group are one entry, their I/Os summed and
//! latency histograms added. What fio's readers do not know — the written
//! data's measured compressibility, the drive's capacity counters — goes in a
//! `csdchar` object in each job, which they ignore.

use serde_json::{Map, Value, json};

use csdchar_core::result::block::{
    BatchCounts, BlockResult, DirectionSummary, IntervalSample, JobDirection,
};
use csdchar_core::stats::LatencyStats;

pub use csdchar_core::histlog::{PLAT_NR, plat_idx_to_val, plat_val_to_idx};

/// The runs of one output entry and what names it.
struct Entry<'a> {
    name: String,
    group_id: u32,
    parts: Vec<&'a BlockResult>,
    /// One of the engine's jobs (fio's clones sharing a file) of the only part.
    clone: Option<usize>,
}

/// One direction of a run or of one of its jobs.
struct DirView<'a> {
    ios: u64,
    bytes: u64,
    short: u64,
    iops: f64,
    bw_bytes: f64,
    slat: Option<&'a LatencyStats>,
    clat: Option<&'a LatencyStats>,
    lat: Option<&'a LatencyStats>,
    prios: &'a [csdchar_core::share::PrioLatency],
}

impl<'a> DirView<'a> {
    fn of_run(d: &'a DirectionSummary) -> Self {
        DirView {
            ios: d.ios,
            bytes: d.bytes,
            short: d.short_ios,
            iops: d.iops,
            bw_bytes: d.bw_bytes_per_s,
            slat: Some(&d.slat),
            clat: Some(&d.clat),
            lat: Some(&d.lat),
            prios: &d.prios,
        }
    }

    fn of_job(d: &'a JobDirection) -> Self {
        DirView {
            ios: d.ios,
            bytes: d.bytes,
            short: d.short_ios,
            iops: d.iops,
            bw_bytes: d.bw_bytes_per_s,
            slat: d.slat.as_ref(),
            clat: d.clat.as_ref(),
            lat: d.lat.as_ref(),
            prios: &d.prios,
        }
    }
}

/// Whether each of a run's jobs can be its own entry: fio reports clones
/// apart unless the group is reported as one.
fn clones_apart(r: &BlockResult) -> bool {
    let reported_as_one = r.job_file.as_ref().is_some_and(|j| j.group_reporting);
    !reported_as_one
        && r.jobs.len() > 1
        && r.jobs.iter().all(|j| {
            [&j.read, &j.write, &j.trim]
                .into_iter()
                .flatten()
                .all(|d| d.clat.is_some())
        })
}

/// The results as fio's JSON (`plus` = json+), pretty-printed with a newline.
/// `global_options` are the job file's `[global]` options as written.
pub fn fio_json(
    results: &[BlockResult],
    global_options: &[(String, String)],
    plus: bool,
) -> Vec<u8> {
    let mut entries: Vec<Entry<'_>> = Vec::new();
    for r in results {
        let (name, group, merged) = match &r.job_file {
            Some(j) => (j.job.clone(), j.group_id, j.group_reporting),
            None => ("csdchar".to_string(), 0, false),
        };
        if clones_apart(r) {
            for i in 0..r.jobs.len() {
                entries.push(Entry {
                    name: name.clone(),
                    group_id: group,
                    parts: vec![r],
                    clone: Some(i),
                });
            }
            continue;
        }
        match entries.iter_mut().find(|e| {
            merged
                && e.group_id == group
                && e.parts[0]
                    .job_file
                    .as_ref()
                    .is_some_and(|j| j.group_reporting)
        }) {
            Some(e) => e.parts.push(r),
            None => entries.push(Entry {
                name,
                group_id: group,
                parts: vec![r],
                clone: None,
            }),
        }
    }
    let start = results
        .iter()
        .filter_map(|r| csdchar_core::start_at::parse_rfc3339(&r.started_at).ok())
        .min()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .unwrap_or_default();
    let mut top = Map::new();
    top.insert(
        "fio version".into(),
        json!(format!(
            "csdchar-{} (fio-3 json)",
            env!("CARGO_PKG_VERSION")
        )),
    );
    top.insert("timestamp".into(), json!(start.as_secs()));
    top.insert("timestamp_ms".into(), json!(start.as_millis() as u64));
    top.insert(
        "time".into(),
        json!(
            results
                .first()
                .map_or(String::new(), |r| r.started_at.clone())
        ),
    );
    if !global_options.is_empty() {
        top.insert("global options".into(), options(global_options));
    }
    top.insert(
        "jobs".into(),
        Value::Array(
            entries
                .iter()
                .map(|e| job(e, global_options, plus))
                .collect(),
        ),
    );
    top.insert("disk_util".into(), disk_util(results));
    let mut out = serde_json::to_vec_pretty(&Value::Object(top)).expect("json values serialize");
    out.push(b'\n');
    out
}

/// fio's `job options`/`global options`: what was set with a value (fio
/// leaves out bare options such as `time_based`).
fn options(list: &[(String, String)]) -> Value {
    Value::Object(
        list.iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

fn job(e: &Entry<'_>, global_options: &[(String, String)], plus: bool) -> Value {
    let first = e.parts[0];
    let runtime_ms = e
        .parts
        .iter()
        .map(|p| p.elapsed_ns / 1_000_000)
        .max()
        .unwrap_or(0);
    let job_options: Vec<(String, String)> = match &first.job_file {
        Some(j) => j
            .job_options
            .iter()
            .map(|o| (o.name.clone(), o.value.clone()))
            .collect(),
        None => spec_options(first),
    };
    let switches = match &first.job_file {
        Some(_) => percentile_switches(global_options, &job_options),
        None => [false, true, false],
    };
    // CPU is the process's; a clone's share is an even split of it.
    let share = match e.clone {
        Some(_) => first.jobs.len() as f64,
        None => 1.0,
    };
    let n = e.parts.len() as f64;
    let usr = e.parts.iter().fold(0.0, |a, p| a + p.cpu.user_pct) / n / share;
    let sys = e.parts.iter().fold(0.0, |a, p| a + p.cpu.system_pct) / n / share;
    // fio's total_err and first_error: written when continue_on_error
    // (or ignore_error) lets the job go on after some errors.
    let counted: Vec<_> = match e.clone {
        Some(i) => first.jobs[i].errors.iter().copied().collect(),
        None => e
            .parts
            .iter()
            .flat_map(|p| p.jobs.iter().filter_map(|j| j.errors))
            .collect(),
    };
    let total_err: u64 = counted.iter().map(|c| c.total).sum();
    let first_error = counted
        .iter()
        .map(|c| c.first)
        .find(|&f| f != 0)
        .unwrap_or(0);
    // The job's error: what stopped it, a block that did not verify (fio's
    // EILSEQ), else the first error it went on after.
    let error = e
        .parts
        .iter()
        .find_map(|p| p.error.as_ref())
        .map(|er| er.errno.unwrap_or(5))
        .or_else(|| {
            e.parts
                .iter()
                .any(|p| p.verify.as_ref().is_some_and(|v| v.bad_block_count > 0))
                .then_some(csdchar_core::on_error::EILSEQ)
        })
        .unwrap_or(first_error);
    type Views<'v> = Vec<DirView<'v>>;
    let (reads, writes, trims): (Views<'_>, Views<'_>, Views<'_>) = match e.clone {
        Some(i) => (
            first.jobs[i].read.iter().map(DirView::of_job).collect(),
            first.jobs[i].write.iter().map(DirView::of_job).collect(),
            first.jobs[i].trim.iter().map(DirView::of_job).collect(),
        ),
        None => (
            e.parts
                .iter()
                .filter_map(|p| p.read.as_ref())
                .map(DirView::of_run)
                .collect(),
            e.parts
                .iter()
                .filter_map(|p| p.write.as_ref())
                .map(DirView::of_run)
                .collect(),
            e.parts
                .iter()
                .filter_map(|p| p.trim.as_ref())
                .map(DirView::of_run)
                .collect(),
        ),
    };
    let clat_all: Vec<&LatencyStats> = reads
        .iter()
        .chain(&writes)
        .chain(&trims)
        .filter_map(|d| d.clat)
        .collect();
    let clat_total = merged(&clat_all, &first.spec.percentiles);
    // Interval series are kept per run, not per job.
    let intervals: Vec<&IntervalSample> = match e.clone {
        Some(_) => Vec::new(),
        None => e.parts.iter().flat_map(|p| &p.intervals).collect(),
    };
    let mut j = Map::new();
    j.insert("jobname".into(), json!(e.name));
    j.insert("groupid".into(), json!(e.group_id));
    let job_start = e
        .parts
        .iter()
        .filter_map(|p| csdchar_core::start_at::parse_rfc3339(&p.started_at).ok())
        .min()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as u64);
    j.insert("job_start".into(), json!(job_start));
    j.insert("error".into(), json!(error));
    if !counted.is_empty() {
        j.insert("total_err".into(), json!(total_err));
        j.insert("first_error".into(), json!(first_error));
    }
    j.insert("eta".into(), json!(0));
    j.insert("elapsed".into(), json!(runtime_ms.div_ceil(1000)));
    j.insert("job options".into(), options(&job_options));
    j.insert(
        "read".into(),
        ddir(
            &reads,
            runtime_ms,
            &first.spec.percentiles,
            switches,
            plus,
            &intervals,
            0,
        ),
    );
    j.insert(
        "write".into(),
        ddir(
            &writes,
            runtime_ms,
            &first.spec.percentiles,
            switches,
            plus,
            &intervals,
            1,
        ),
    );
    j.insert(
        "trim".into(),
        ddir(
            &trims,
            runtime_ms,
            &first.spec.percentiles,
            switches,
            plus,
            &intervals,
            2,
        ),
    );
    j.insert(
        "sync".into(),
        json!({"total_ios": 0, "lat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}}),
    );
    j.insert("job_runtime".into(), json!(runtime_ms));
    if let Some(ss) = &first.steady_state {
        // stat.c's steadystate object.
        let pct = if ss.ss.ends_with('%') { "%" } else { "" };
        j.insert(
            "steadystate".into(),
            json!({
                "ss": ss.ss,
                "duration": ss.duration_s,
                "attained": u8::from(ss.attained),
                "criterion": format!("{:.6}{pct}", ss.criterion),
                "max_deviation": ss.max_deviation,
                "slope": ss.slope,
                "data": {
                    "bw_mean": ss.bw_mean,
                    "iops_mean": ss.iops_mean,
                    "iops": ss.iops,
                    "bw": ss.bw,
                },
            }),
        );
    }
    j.insert("usr_cpu".into(), json!(usr));
    j.insert("sys_cpu".into(), json!(sys));
    j.insert("ctx".into(), json!(0));
    j.insert("majf".into(), json!(0));
    j.insert("minf".into(), json!(0));
    let depth = first.spec.iodepth;
    j.insert("iodepth_level".into(), depth_levels(depth));
    let batches = e.parts.iter().try_fold(BatchCounts::default(), |mut a, p| {
        a.merge(p.io_batches.as_ref()?);
        Some(a)
    });
    if let Some(b) = batches {
        j.insert("iodepth_submit".into(), batch_shares(&b.submit));
        j.insert("iodepth_complete".into(), batch_shares(&b.complete));
    }
    j.insert("latency_ns".into(), coarse(&clat_total, 1, false));
    j.insert("latency_us".into(), coarse(&clat_total, 1_000, false));
    j.insert("latency_ms".into(), coarse(&clat_total, 1_000_000, true));
    // fio 3.33: the target in ns, the window in µs, the depth searched to.
    let lt = first.spec.pacing.latency.as_ref();
    j.insert(
        "latency_depth".into(),
        json!(first.latency_depth.unwrap_or(depth)),
    );
    j.insert(
        "latency_target".into(),
        json!(lt.map_or(0, |l| l.target_ns)),
    );
    j.insert(
        "latency_percentile".into(),
        json!(lt.map_or(100.0, |l| l.percentile)),
    );
    j.insert(
        "latency_window".into(),
        json!(lt.map_or(0, |l| l.window_us)),
    );
    j.insert(
        "csdchar".into(),
        json!({
            "schema": first.schema,
            "status": e.parts.iter().map(|p| p.status).collect::<Vec<_>>(),
            "targets": e.parts.iter().map(|p| p.target.path.clone()).collect::<Vec<_>>(),
            "data": e.parts.iter().map(|p| p.data.clone()).collect::<Vec<_>>(),
            "capacity": e.parts.iter().map(|p| p.capacity.clone()).collect::<Vec<_>>(),
            "replaced_engine": first.job_file.as_ref().and_then(|j| j.replaced_engine.clone()),
            "ignored_options": first.job_file.as_ref().map(|j| j.ignored.clone()).unwrap_or_default(),
            "iodepth_level": "the configured depth: csdchar keeps iodepth I/Os in flight and does not sample the depth",
            "clone": e.clone,
            "cpu": if e.clone.is_some() { "the process's CPU split evenly between the run's jobs" } else { "the process's CPU during the run" },
        }),
    );
    Value::Object(j)
}

/// The command line's options under fio's names, for a run without a job file.
fn spec_options(r: &BlockResult) -> Vec<(String, String)> {
    let s = &r.spec;
    let mut o = vec![
        ("rw".to_string(), s.rw.name().to_string()),
        ("bs".into(), s.bs.to_string()),
        ("iodepth".into(), s.iodepth.to_string()),
        ("numjobs".into(), s.numjobs.to_string()),
        ("size".into(), s.size.to_string()),
        ("direct".into(), u8::from(s.direct).to_string()),
        (
            "ioengine".into(),
            match s.engine {
                csdchar_core::result::block::EngineKind::Uring => "io_uring",
                csdchar_core::result::block::EngineKind::Null => "null",
            }
            .into(),
        ),
    ];
    if let Some(t) = &s.target {
        o.push(("filename".into(), t.clone()));
    }
    if s.rw.reads() && s.rw.writes() {
        o.push(("rwmixread".into(), s.rwmixread.to_string()));
    }
    if let Some(ms) = s.runtime_ms {
        o.push(("runtime".into(), format!("{ms}ms")));
    }
    if s.time_based {
        o.push(("time_based".into(), String::new()));
    }
    if s.compress_pct > 0 {
        o.push((
            "buffer_compress_percentage".into(),
            s.compress_pct.to_string(),
        ));
        o.push(("buffer_compress_chunk".into(), s.compress_chunk.to_string()));
    }
    o
}

/// fio's percentile switches `[slat, clat, lat]` of a job file's job
/// (`slat_percentiles`, `clat_percentiles`, `lat_percentiles`): fio's
/// defaults (clat only), then `[global]`'s settings, then the job's own.
/// Each `_ns` object carries `percentile` (and in json+ `bins`) only when its
/// switch is on, as fio's `add_ddir_lat_json`.
fn percentile_switches(global: &[(String, String)], own: &[(String, String)]) -> [bool; 3] {
    let mut on = [false, true, false];
    for (name, value) in global.iter().chain(own) {
        let k = match name.as_str() {
            "slat_percentiles" => 0,
            "clat_percentiles" => 1,
            "lat_percentiles" => 2,
            _ => continue,
        };
        let v = (!value.is_empty()).then_some(value.as_str());
        if let Ok(b) = csdchar_core::fio_job::value::boolean(v) {
            on[k] = b;
        }
    }
    on
}

fn merged(parts: &[&LatencyStats], percentiles: &[f64]) -> Option<LatencyStats> {
    match parts {
        [] => None,
        [one] => Some((*one).clone()),
        many => LatencyStats::merged(many, percentiles).ok(),
    }
}

fn lat_object(l: Option<&LatencyStats>, percentiles: bool, plus: bool) -> Value {
    let Some(l) = l else {
        return json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0});
    };
    let mut o = Map::new();
    o.insert("min".into(), json!(l.min_ns));
    o.insert("max".into(), json!(l.max_ns));
    o.insert("mean".into(), json!(l.mean_ns));
    o.insert("stddev".into(), json!(l.stddev_ns));
    o.insert("N".into(), json!(l.count));
    if percentiles && l.count > 0 {
        let p: Map<String, Value> = l
            .percentiles
            .iter()
            .map(|p| (format!("{:.6}", p.percentile), json!(p.value_ns)))
            .collect();
        o.insert("percentile".into(), Value::Object(p));
    }
    if plus && l.count > 0 {
        o.insert("bins".into(), bins(l));
    }
    Value::Object(o)
}

/// fio's json+ `bins`: count per fio bucket, keyed by the bucket's midpoint.
fn bins(l: &LatencyStats) -> Value {
    let Some(h) = l
        .hdr_histogram
        .as_deref()
        .and_then(|t| csdchar_core::hdr::decode(t).ok())
    else {
        return Value::Object(Map::new());
    };
    let mut counts: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    for v in h.iter_recorded() {
        let ns = h.median_equivalent(v.value_iterated_to());
        *counts.entry(plat_val_to_idx(ns)).or_default() += v.count_at_value();
    }
    Value::Object(
        counts
            .into_iter()
            .map(|(idx, n)| (plat_idx_to_val(idx).to_string(), json!(n)))
            .collect(),
    )
}

fn ddir<'a>(
    dirs: &[DirView<'a>],
    runtime_ms: u64,
    percentiles: &[f64],
    switches: [bool; 3],
    plus: bool,
    intervals: &[&IntervalSample],
    which: usize,
) -> Value {
    let ios: u64 = dirs.iter().map(|d| d.ios).sum();
    let bytes: u64 = dirs.iter().map(|d| d.bytes).sum();
    // Folded from +0.0: an empty f64 sum is -0.0, which fio never prints.
    let bw_bytes = dirs.iter().fold(0.0, |a, d| a + d.bw_bytes);
    let iops = dirs.iter().fold(0.0, |a, d| a + d.iops);
    let lat = |f: fn(&DirView<'a>) -> Option<&'a LatencyStats>| {
        let parts: Option<Vec<&LatencyStats>> = dirs.iter().map(f).collect();
        parts.and_then(|p| merged(&p, percentiles))
    };
    let (slat, clat, tlat) = (lat(|d| d.slat), lat(|d| d.clat), lat(|d| d.lat));
    // Interval series (one sample per log interval and run), as fio's bw/iops
    // logs feed bw_min…/iops_min….
    let series: Vec<(f64, f64)> = intervals
        .iter()
        .filter_map(|s| match which {
            0 => s.read.as_ref(),
            1 => s.write.as_ref(),
            _ => s.trim.as_ref(),
        })
        .map(|d| (d.bw_bytes_per_s / 1024.0, d.iops))
        .collect();
    let stat = |vals: Vec<f64>| csdchar_core::result::block::SeriesStats::of(&vals);
    let bw = stat(series.iter().map(|x| x.0).collect());
    let io = stat(series.iter().map(|x| x.1).collect());
    let mut o = Map::new();
    o.insert("io_bytes".into(), json!(bytes));
    o.insert("io_kbytes".into(), json!(bytes / 1024));
    o.insert("bw_bytes".into(), json!(bw_bytes.round() as u64));
    o.insert("bw".into(), json!((bw_bytes / 1024.0).round() as u64));
    o.insert("iops".into(), json!(iops));
    o.insert(
        "runtime".into(),
        json!(if ios > 0 { runtime_ms } else { 0 }),
    );
    o.insert("total_ios".into(), json!(ios));
    o.insert(
        "short_ios".into(),
        json!(dirs.iter().map(|d| d.short).sum::<u64>()),
    );
    o.insert("drop_ios".into(), json!(0));
    let [ps, pc, pl] = switches;
    o.insert("slat_ns".into(), lat_object(slat.as_ref(), ps, plus && ps));
    o.insert("clat_ns".into(), lat_object(clat.as_ref(), pc, plus && pc));
    o.insert("lat_ns".into(), lat_object(tlat.as_ref(), pl, plus && pl));
    // fio's per-priority completion latencies (cmdprio), in its order.
    let mut prios: Vec<(u8, u8, Vec<&LatencyStats>)> = Vec::new();
    for p in dirs.iter().flat_map(|d| d.prios) {
        match prios
            .iter_mut()
            .find(|q| (q.0, q.1) == (p.prioclass, p.prio))
        {
            Some(q) => q.2.push(&p.clat),
            None => prios.push((p.prioclass, p.prio, vec![&p.clat])),
        }
    }
    if prios.len() >= 2 {
        let list: Vec<Value> = prios
            .iter()
            .map(|(class, level, parts)| {
                let clat = merged(parts, percentiles);
                json!({
                    "prioclass": class,
                    "prio": level,
                    "clat_ns": lat_object(clat.as_ref(), pc, plus && pc),
                })
            })
            .collect();
        o.insert("prios".into(), Value::Array(list));
    }
    o.insert("bw_min".into(), json!(bw.min.round() as u64));
    o.insert("bw_max".into(), json!(bw.max.round() as u64));
    o.insert("bw_agg".into(), json!(if ios > 0 { 100.0 } else { 0.0 }));
    o.insert("bw_mean".into(), json!(bw.mean));
    o.insert("bw_dev".into(), json!(bw.stddev));
    o.insert("bw_samples".into(), json!(bw.samples));
    o.insert("iops_min".into(), json!(io.min.round() as u64));
    o.insert("iops_max".into(), json!(io.max.round() as u64));
    o.insert("iops_mean".into(), json!(io.mean));
    o.insert("iops_stddev".into(), json!(io.stddev));
    o.insert("iops_samples".into(), json!(io.samples));
    Value::Object(o)
}

/// fio's `iodepth_level`: csdchar keeps the configured depth in flight, so it
/// is 100% at that depth's bucket (said in the job's `csdchar` object).
/// fio's iodepth_submit/iodepth_complete: % of batches per bucket, keys
/// "0", "4" … "64", ">=64", a non-empty bucket at least 0.1 (stat_calc_dist).
fn batch_shares(counts: &[u64; 7]) -> Value {
    let total: u64 = counts.iter().sum();
    let keys = ["0", "4", "8", "16", "32", "64", ">=64"];
    Value::Object(
        keys.iter()
            .zip(counts)
            .map(|(k, &c)| {
                let mut pct = if total == 0 {
                    0.0
                } else {
                    c as f64 / total as f64 * 100.0
                };
                if c > 0 && pct < 0.1 {
                    pct = 0.1;
                }
                (k.to_string(), json!(pct))
            })
            .collect(),
    )
}

fn depth_levels(depth: u32) -> Value {
    let keys = ["1", "2", "4", "8", "16", "32", ">=64"];
    let at = match depth {
        0 | 1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    };
    Value::Object(
        keys.iter()
            .enumerate()
            .map(|(i, k)| (k.to_string(), json!(if i == at { 100.0 } else { 0.0 })))
            .collect(),
    )
}

/// fio's coarse latency shares (`latency_ns`, `_us`, `_ms`): % of completions
/// whose completion latency is at most each bound, per unit.
fn coarse(clat: &Option<LatencyStats>, unit_ns: u64, ms: bool) -> Value {
    let mut bounds: Vec<&str> = vec![
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    if ms {
        bounds.extend(["2000", ">=2000"]);
    }
    let hist = clat
        .as_ref()
        .and_then(|l| l.hdr_histogram.as_deref())
        .and_then(|t| csdchar_core::hdr::decode(t).ok());
    let mut out = Map::new();
    let total = hist.as_ref().map_or(0, |h| h.len());
    // The first bucket of latency_us starts where latency_ns ends, and so on.
    let mut prev_bound_ns = if unit_ns == 1 { 0 } else { unit_ns };
    for b in bounds {
        let share = match (&hist, b) {
            (Some(h), ">=2000") if total > 0 => {
                h.count_between(2000 * unit_ns + 1, u64::MAX) as f64 / total as f64 * 100.0
            }
            (Some(h), _) if total > 0 => {
                let upper = b.parse::<u64>().unwrap_or(0) * unit_ns;
                let n = h.count_between(prev_bound_ns + 1, upper);
                prev_bound_ns = upper;
                n as f64 / total as f64 * 100.0
            }
            _ => 0.0,
        };
        out.insert(b.to_string(), json!(share));
    }
    Value::Object(out)
}

fn disk_util(results: &[BlockResult]) -> Value {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for r in results {
        let Some(d) = &r.diskstats else { continue };
        if seen.contains(&d.device) {
            continue;
        }
        seen.push(d.device.clone());
        let ms = (r.elapsed_ns / 1_000_000).max(1);
        let x = &d.delta;
        out.push(json!({
            "name": d.device,
            "read_ios": x.reads_completed,
            "write_ios": x.writes_completed,
            "read_merges": x.reads_merged,
            "write_merges": x.writes_merged,
            "read_ticks": x.read_ms,
            "write_ticks": x.write_ms,
            "in_queue": x.weighted_io_ms,
            "util": (x.io_ms as f64 / ms as f64 * 100.0).min(100.0),
        }));
    }
    Value::Array(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_fios() {
        // Exact below 128 ns, then 64 buckets per power of two.
        for v in 0..128 {
            assert_eq!(plat_idx_to_val(plat_val_to_idx(v)), v);
        }
        assert_eq!(plat_val_to_idx(128), 128);
        assert_eq!(plat_idx_to_val(128), 129, "midpoint of [128, 130)");
        for v in [1_000u64, 55_555, 1_000_000, 123_456_789] {
            let mid = plat_idx_to_val(plat_val_to_idx(v));
            assert!(
                (mid as f64 - v as f64).abs() / v as f64 <= 1.0 / 128.0,
                "{v} -> {mid}"
            );
        }
        assert_eq!(plat_val_to_idx(u64::MAX), PLAT_NR - 1);
    }
}
