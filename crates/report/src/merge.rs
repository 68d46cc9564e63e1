//! `csdchar report --merge`: results of one run made on several load hosts
//! become one result, exactly — latency histograms and counts are added and
//! every percentile is recomputed from the summed histogram, never averaged.
//!
//! Which results merge (the matching key): the same kind (block or db), the
//! same `--label` (when given; unlabelled inputs merge among themselves, under
//! the first one's label), and the same spec apart from what names the host's
//! target — block: every [`BlockSpec`] field but `target` and `force`; db:
//! the whole [`DbSpec`] (workload, sizes, options, percentiles, `start_at`).
//! Within a db result, steps merge by their (per-host) thread count. Study,
//! capacity and estimate results pass unchanged, and so does a block or db
//! result alone in its label; one that matches no other result of its label
//! is refused (it is not a host's share of one run), and so is the same
//! result given twice (same start and measurements: it would count twice).
//!
//! What a merged result holds:
//! - counts (I/Os, bytes, transactions, statements, errors by SQLSTATE,
//!   rollbacks, reconnects) are sums; rates are recomputed from the summed
//!   counts over the longest measured time (intervals: per-host rates added,
//!   each over its own interval);
//! - latency: histograms added; count, min, max exact; mean and (population)
//!   standard deviation pooled from the parts'; percentiles from the sum;
//! - threads (db) and numjobs / jobs (block) are the hosts' together;
//! - intervals are matched by position (hosts started together with
//!   `--start-at` and the same interval length);
//! - db server-side figures (`io`, snapshots before and after) are the first
//!   file's: the hosts drove one server, so each saw the same counters; block
//!   device counters (`diskstats`, `capacity`) are per host and left out.

use std::collections::BTreeMap;
use std::path::PathBuf;

use csdchar_core::compressibility::PageTally;
use csdchar_core::result::RunStatus;
use csdchar_core::result::block::{
    BlockResult, BlockSpec, DirectionSummary, IntervalDirection, IntervalSample, JobSummary,
    SeriesStats, VerifyReport,
};
use csdchar_core::result::db::{DbInterval, DbResult, DbSpec, DbStep, DbTxType};
use csdchar_core::stats::{LatencyStats, MergeError, hist_percentile};

use crate::{InputSpec, LoadedResult, ReportError, ReportInput};

/// Why results cannot be merged; the CLI names `path`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct MergeFailure {
    /// Index of the part at fault in the slice given.
    pub part: usize,
    /// What is wrong.
    pub message: String,
}

const NO_HISTOGRAMS: &str = "has no latency histograms (written by a csdchar that did not store \
                             them), so --merge cannot add it to the other hosts' results; run it \
                             again, or report it without --merge";

/// The key results merge by (see the module documentation).
pub fn block_key(spec: &BlockSpec) -> String {
    let mut s = spec.clone();
    s.target = None;
    s.force = false;
    format!(
        "block {}",
        serde_json::to_string(&s).expect("a spec serializes")
    )
}

/// The key db results merge by: the whole spec.
pub fn db_key(spec: &DbSpec) -> String {
    format!(
        "db {}",
        serde_json::to_string(spec).expect("a spec serializes")
    )
}

fn no_histograms(part: usize) -> MergeFailure {
    MergeFailure {
        part,
        message: NO_HISTOGRAMS.to_string(),
    }
}

fn merged_latency(parts: &[(usize, &LatencyStats)]) -> Result<LatencyStats, MergeFailure> {
    let ps: Vec<f64> = parts
        .first()
        .map(|(_, l)| l.percentiles.iter().map(|p| p.percentile).collect())
        .unwrap_or_default();
    let stats: Vec<&LatencyStats> = parts.iter().map(|(_, l)| *l).collect();
    LatencyStats::merged(&stats, &ps).map_err(|e| match e {
        MergeError::NoHistogram(i) => no_histograms(parts[i].0),
        MergeError::Bad(e) => MergeFailure {
            part: parts.first().map_or(0, |p| p.0),
            message: format!("latency histogram: {e}"),
        },
    })
}

/// Histograms `texts` (all present) added; None when a part lacks one.
fn summed_hist(
    texts: &[(usize, Option<&str>)],
) -> Result<Option<hdrhistogram::Histogram<u64>>, MergeFailure> {
    if let Some((i, _)) = texts.iter().find(|(_, t)| t.is_none()) {
        return Err(no_histograms(*i));
    }
    csdchar_core::hdr::decode_sum(texts.iter().filter_map(|(_, t)| *t)).map_err(|e| MergeFailure {
        part: texts.first().map_or(0, |p| p.0),
        message: format!("interval latency histogram: {e}"),
    })
}

/// Merges db results of one run on several hosts (same [`db_key`]).
pub fn merge_db(parts: &[&DbResult]) -> Result<DbResult, MergeFailure> {
    let first = parts.first().expect("at least one result");
    let mut order: Vec<u32> = Vec::new();
    for p in parts {
        for s in &p.steps {
            if !order.contains(&s.threads) {
                order.push(s.threads);
            }
        }
    }
    let mut steps = Vec::new();
    for threads in order {
        let of: Vec<(usize, &DbStep)> = parts
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                p.steps
                    .iter()
                    .find(|s| s.threads == threads)
                    .map(|s| (i, s))
            })
            .collect();
        steps.push(merge_db_step(&of, &first.spec)?);
    }
    Ok(DbResult {
        schema: first.schema.clone(),
        tool: first.tool.clone(),
        started_at: parts
            .iter()
            .map(|p| p.started_at.clone())
            .min()
            .unwrap_or_default(),
        server: first.server.clone(),
        server_version: first.server_version.clone(),
        server_dialect: first.server_dialect.clone(),
        spec: first.spec.clone(),
        steps,
        interrupted: parts.iter().any(|p| p.interrupted),
        error: parts.iter().find_map(|p| p.error.clone()),
    })
}

/// One step of several hosts (`(part index, step)`), merged.
pub fn merge_db_step(of: &[(usize, &DbStep)], spec: &DbSpec) -> Result<DbStep, MergeFailure> {
    let (_, first) = of[0];
    let sum = |f: fn(&DbStep) -> u64| of.iter().map(|(_, s)| f(s)).sum::<u64>();
    let elapsed_s = of.iter().map(|(_, s)| s.elapsed_s).fold(0.0, f64::max);
    let secs = elapsed_s.max(1e-9);
    let transactions = sum(|s| s.transactions);
    let (reads, writes, others) = (sum(|s| s.reads), sum(|s| s.writes), sum(|s| s.others));
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for (_, s) in of {
        for (k, v) in &s.errors {
            *errors.entry(k.clone()).or_default() += v;
        }
    }
    // Transaction types, in the order first seen.
    let mut names: Vec<&str> = Vec::new();
    for (_, s) in of {
        for t in &s.by_type {
            if !names.contains(&t.name.as_str()) {
                names.push(&t.name);
            }
        }
    }
    let mut by_type = Vec::new();
    for name in names {
        let ts: Vec<(usize, &DbTxType)> = of
            .iter()
            .filter_map(|(i, s)| s.by_type.iter().find(|t| t.name == name).map(|t| (*i, t)))
            .collect();
        let n: u64 = ts.iter().map(|(_, t)| t.transactions).sum();
        let lat: Vec<(usize, &LatencyStats)> = ts.iter().map(|(i, t)| (*i, &t.latency)).collect();
        by_type.push(DbTxType {
            name: name.to_string(),
            transactions: n,
            rollbacks: ts.iter().map(|(_, t)| t.rollbacks).sum(),
            share_pct: 100.0 * n as f64 / transactions.max(1) as f64,
            latency: merged_latency(&lat)?,
        });
    }
    let lat: Vec<(usize, &LatencyStats)> = of.iter().map(|(i, s)| (*i, &s.latency)).collect();
    let latency = merged_latency(&lat)?;
    let interval_pct = spec.percentiles.first().copied().unwrap_or(95.0);
    let len = of.iter().map(|(_, s)| s.intervals.len()).max().unwrap_or(0);
    let mut intervals = Vec::with_capacity(len);
    for k in 0..len {
        let ivs: Vec<(usize, &DbInterval)> = of
            .iter()
            .filter_map(|(i, s)| s.intervals.get(k).map(|iv| (*i, iv)))
            .collect();
        let add = |f: fn(&DbInterval) -> f64| ivs.iter().map(|(_, iv)| f(iv)).sum::<f64>();
        let texts: Vec<(usize, Option<&str>)> = ivs
            .iter()
            .map(|(i, iv)| (*i, iv.lat_hdr_histogram.as_deref()))
            .collect();
        let hist = summed_hist(&texts)?;
        intervals.push(DbInterval {
            t_s: ivs.iter().map(|(_, iv)| iv.t_s).fold(0.0, f64::max),
            tps: add(|iv| iv.tps),
            qps: add(|iv| iv.qps),
            reads_per_s: add(|iv| iv.reads_per_s),
            writes_per_s: add(|iv| iv.writes_per_s),
            others_per_s: add(|iv| iv.others_per_s),
            lat_pct_ms: hist
                .as_ref()
                .map_or(0.0, |h| hist_percentile(h, interval_pct) as f64 / 1e6),
            errors_per_s: add(|iv| iv.errors_per_s),
            io: ivs[0].1.io.clone(),
            lat_hdr_histogram: hist.as_ref().map(csdchar_core::hdr::encode),
        });
    }
    let any_tpc = of.iter().any(|(_, s)| s.tpm_total.is_some());
    // A text field the hosts' steps agree on, or none.
    let same = |f: fn(&DbStep) -> &Option<String>| {
        of.iter()
            .all(|(_, s)| f(s) == f(first))
            .then(|| f(first).clone())
            .flatten()
    };
    Ok(DbStep {
        start: None,
        threads: of.iter().map(|(_, s)| s.threads).sum(),
        elapsed_s,
        transactions,
        reads,
        writes,
        others,
        tps: transactions as f64 / secs,
        qps: (reads + writes + others) as f64 / secs,
        errors,
        reconnects: sum(|s| s.reconnects),
        rollbacks: sum(|s| s.rollbacks),
        tpmc: of.iter().any(|(_, s)| s.tpmc.is_some()).then(|| {
            by_type
                .iter()
                .find(|t| t.name == "new_order")
                .map_or(0, |t| t.transactions) as f64
                * 60.0
                / secs
        }),
        tpm_total: any_tpc.then(|| transactions as f64 * 60.0 / secs),
        by_type,
        io: first.io.clone(),
        latency,
        intervals,
        // Hosts may have driven their clients differently (or connected or
        // negotiated differently); then there is no one figure.
        client_io: same(|s| &s.client_io),
        // The hosts' driver threads together, when every host ran on io_uring.
        client_threads: of
            .iter()
            .map(|(_, s)| s.client_threads)
            .sum::<Option<u32>>(),
        transport: same(|s| &s.transport),
        tls_protocol: same(|s| &s.tls_protocol),
        tls_cipher: same(|s| &s.tls_cipher),
        script: {
            let parts: Option<Vec<_>> = of.iter().map(|(_, s)| s.script.as_ref()).collect();
            parts.and_then(|p| csdchar_core::result::script::ScriptStep::merge(&p))
        },
        before: first.before.clone(),
        after: first.after.clone(),
    })
}

/// Merges block results of one run on several hosts (same [`block_key`]).
pub fn merge_block(parts: &[&BlockResult]) -> Result<BlockResult, MergeFailure> {
    let first = parts.first().expect("at least one result");
    let spec = &first.spec;
    let elapsed_ns = parts.iter().map(|p| p.elapsed_ns).max().unwrap_or(1).max(1);
    let secs = elapsed_ns as f64 / 1e9;
    let len = parts.iter().map(|p| p.intervals.len()).max().unwrap_or(0);
    let mut intervals = Vec::with_capacity(len);
    for k in 0..len {
        let ss: Vec<(usize, &IntervalSample)> = parts
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.intervals.get(k).map(|s| (i, s)))
            .collect();
        let dir = |d: usize| -> Result<(Option<IntervalDirection>, Option<String>), MergeFailure> {
            let pick = |s: &IntervalSample| match d {
                0 => s.read,
                1 => s.write,
                _ => s.trim,
            };
            let present: Vec<(usize, IntervalDirection, Option<&str>)> = ss
                .iter()
                .filter_map(|(i, s)| {
                    let text = match d {
                        0 => s.read_lat_hdr_histogram.as_deref(),
                        1 => s.write_lat_hdr_histogram.as_deref(),
                        _ => s.trim_lat_hdr_histogram.as_deref(),
                    };
                    pick(s).map(|x| (*i, x, text))
                })
                .collect();
            if present.is_empty() {
                return Ok((None, None));
            }
            let texts: Vec<(usize, Option<&str>)> =
                present.iter().map(|(i, _, t)| (*i, *t)).collect();
            let hist = summed_hist(&texts)?;
            let ios: u64 = present.iter().map(|(_, x, _)| x.ios).sum();
            let mean = if ios == 0 {
                0.0
            } else {
                present
                    .iter()
                    .map(|(_, x, _)| x.lat_mean_ns * x.ios as f64)
                    .sum::<f64>()
                    / ios as f64
            };
            Ok((
                Some(IntervalDirection {
                    ios,
                    bytes: present.iter().map(|(_, x, _)| x.bytes).sum(),
                    iops: present.iter().map(|(_, x, _)| x.iops).sum(),
                    bw_bytes_per_s: present.iter().map(|(_, x, _)| x.bw_bytes_per_s).sum(),
                    lat_mean_ns: mean,
                    lat_p99_ns: hist.as_ref().map_or(0, |h| hist_percentile(h, 99.0)),
                }),
                hist.as_ref().map(csdchar_core::hdr::encode),
            ))
        };
        let (read, read_h) = dir(0)?;
        let (write, write_h) = dir(1)?;
        let (trim, trim_h) = dir(2)?;
        intervals.push(IntervalSample {
            index: k as u64,
            t_ms: ss.iter().map(|(_, s)| s.t_ms).max().unwrap_or(0),
            duration_ms: ss.iter().map(|(_, s)| s.duration_ms).max().unwrap_or(0),
            read,
            write,
            trim,
            read_lat_hdr_histogram: read_h,
            write_lat_hdr_histogram: write_h,
            trim_lat_hdr_histogram: trim_h,
        });
    }
    // As the engine does: a short last interval is left out of the spread.
    let short_tail = intervals.len() > 1
        && intervals
            .last()
            .is_some_and(|s| s.duration_ms < spec.log_interval_ms);
    let full = if short_tail {
        &intervals[..intervals.len() - 1]
    } else {
        &intervals[..]
    };
    let summary = |d: usize| -> Result<Option<DirectionSummary>, MergeFailure> {
        let present: Vec<(usize, &DirectionSummary)> = parts
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                match d {
                    0 => p.read.as_ref(),
                    1 => p.write.as_ref(),
                    _ => p.trim.as_ref(),
                }
                .map(|x| (i, x))
            })
            .collect();
        if present.is_empty() {
            return Ok(None);
        }
        let lat = |f: fn(&DirectionSummary) -> &LatencyStats| {
            let v: Vec<(usize, &LatencyStats)> = present.iter().map(|(i, x)| (*i, f(x))).collect();
            merged_latency(&v)
        };
        let ios: u64 = present.iter().map(|(_, x)| x.ios).sum();
        let bytes: u64 = present.iter().map(|(_, x)| x.bytes).sum();
        let short_ios: u64 = present.iter().map(|(_, x)| x.short_ios).sum();
        let series: Vec<f64> = full
            .iter()
            .filter_map(|s| match d {
                0 => s.read,
                1 => s.write,
                _ => s.trim,
            })
            .map(|x| x.iops)
            .collect();
        Ok(Some(DirectionSummary {
            ios,
            bytes,
            short_ios,
            iops: ios as f64 / secs,
            bw_bytes_per_s: bytes as f64 / secs,
            slat: lat(|x| &x.slat)?,
            clat: lat(|x| &x.clat)?,
            lat: lat(|x| &x.lat)?,
            // Per-priority latencies stay with each host's result.
            prios: Vec::new(),
            interval_iops: SeriesStats::of(&series),
        }))
    };
    let read = summary(0)?;
    let write = summary(1)?;
    let trim = summary(2)?;
    let status = [
        RunStatus::IoError,
        RunStatus::VerifyFailed,
        RunStatus::Interrupted,
    ]
    .into_iter()
    .find(|st| parts.iter().any(|p| p.status == *st))
    .unwrap_or(RunStatus::Completed);
    let mut jobs: Vec<JobSummary> = Vec::new();
    for p in parts {
        for j in &p.jobs {
            jobs.push(JobSummary {
                job: jobs.len() as u32,
                ..j.clone()
            });
        }
    }
    let data = first.data.as_ref().map(|d| {
        let mut d = d.clone();
        let (mut lz4, mut deflate) = (PageTally::default(), PageTally::default());
        for p in parts {
            if let Some(x) = &p.data {
                lz4.merge(&x.lz4);
                deflate.merge(&x.deflate);
            }
        }
        d.lz4_ratio = lz4.ratio();
        d.deflate_ratio = deflate.ratio();
        d.lz4 = lz4;
        d.deflate = deflate;
        d
    });
    let verify = parts.iter().any(|p| p.verify.is_some()).then(|| {
        let mut bad: Vec<_> = parts
            .iter()
            .filter_map(|p| p.verify.as_ref())
            .flat_map(|v| v.bad_blocks.iter().cloned())
            .collect();
        bad.sort_by_key(|b| b.offset);
        VerifyReport {
            blocks_checked: parts
                .iter()
                .filter_map(|p| p.verify.as_ref())
                .map(|v| v.blocks_checked)
                .sum(),
            bad_block_count: parts
                .iter()
                .filter_map(|p| p.verify.as_ref())
                .map(|v| v.bad_block_count)
                .sum(),
            bad_blocks: bad,
        }
    });
    let busy: Vec<f64> = parts
        .iter()
        .filter_map(|p| p.cpu.machine_busy_pct)
        .collect();
    let (user_s, system_s) = (
        parts.iter().map(|p| p.cpu.user_s).sum::<f64>(),
        parts.iter().map(|p| p.cpu.system_s).sum::<f64>(),
    );
    Ok(BlockResult {
        schema: first.schema.clone(),
        tool: first.tool.clone(),
        started_at: parts
            .iter()
            .map(|p| p.started_at.clone())
            .min()
            .unwrap_or_default(),
        status,
        error: parts.iter().find_map(|p| p.error.clone()),
        spec: BlockSpec {
            numjobs: parts.iter().map(|p| p.spec.numjobs).sum(),
            ..spec.clone()
        },
        target: first.target.clone(),
        engine: first.engine.clone(),
        elapsed_ns,
        read,
        write,
        trim,
        cpu: csdchar_core::result::CpuUsage {
            user_s,
            system_s,
            user_pct: user_s / secs * 100.0,
            system_pct: system_s / secs * 100.0,
            machine_busy_pct: (!busy.is_empty())
                .then(|| busy.iter().sum::<f64>() / busy.len() as f64),
            cores: parts.iter().map(|p| p.cpu.cores).sum(),
        },
        data,
        diskstats: None,
        capacity: None,
        intervals,
        jobs,
        verify,
        log_files: Vec::new(),
        dump_files: Vec::new(),
        steady_state: None,
        latency_depth: None,
        io_batches: parts.iter().try_fold(
            csdchar_core::result::block::BatchCounts::default(),
            |mut a, p| {
                a.merge(p.io_batches.as_ref()?);
                Some(a)
            },
        ),
        zone_resets: parts.iter().try_fold(0u64, |a, p| Some(a + p.zone_resets?)),
        job_file: None,
        // Each host began at its own moment: their records stay in the parts.
        start: None,
    })
}

/// Replaces every group of inputs with the same key (see the module
/// documentation) by one merged input, in the position of its first member;
/// returns the inputs and one note per merged group. `specs` tells which
/// labels were given with `--label`.
pub fn merge_inputs(
    inputs: Vec<ReportInput>,
    specs: &[InputSpec],
) -> Result<(Vec<ReportInput>, Vec<String>), ReportError> {
    let explicit = |label: &str| specs.iter().any(|s| s.label.as_deref() == Some(label));
    let key = |i: &ReportInput| -> Option<String> {
        let label = if explicit(&i.label) {
            i.label.as_str()
        } else {
            ""
        };
        match &i.result {
            LoadedResult::Block(b) => Some(format!("{label}\u{0}{}", block_key(&b.spec))),
            LoadedResult::Db(d) => Some(format!("{label}\u{0}{}", db_key(&d.spec))),
            _ => None,
        }
    };
    let keys: Vec<Option<String>> = inputs.iter().map(key).collect();
    let group_label = |i: &ReportInput| explicit(&i.label).then(|| i.label.clone());
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let mut used = vec![false; inputs.len()];
    for i in 0..inputs.len() {
        if used[i] {
            continue;
        }
        used[i] = true;
        let Some(k) = &keys[i] else {
            out.push(inputs[i].clone());
            continue;
        };
        let mut members = vec![i];
        for j in i + 1..inputs.len() {
            if !used[j] && keys[j].as_ref() == Some(k) {
                used[j] = true;
                members.push(j);
            }
        }
        if members.len() == 1 {
            // Under --merge a result left alone beside others of its label is
            // not one host's share of a run: refuse rather than report it as one.
            if let Some(j) = (0..inputs.len()).find(|&j| {
                j != i && keys[j].is_some() && group_label(&inputs[j]) == group_label(&inputs[i])
            }) {
                return Err(ReportError::input(
                    &inputs[i].path,
                    &format!(
                        "--merge: not the same run as {} ({}); merge only one run's results from \
                         several hosts, or report without --merge",
                        inputs[j].path.display(),
                        difference(&inputs[i], &inputs[j])
                    ),
                ));
            }
            out.push(inputs[i].clone());
            continue;
        }
        // The same file twice (or a copy) would count its run twice.
        for (n, &a) in members.iter().enumerate() {
            if let Some(&b) = members[n + 1..]
                .iter()
                .find(|&&b| same_run(&inputs[a].result, &inputs[b].result))
            {
                return Err(ReportError::input(
                    &inputs[b].path,
                    &format!(
                        "--merge: the same result as {} (same start and measurements); \
                         give each host's result once",
                        inputs[a].path.display()
                    ),
                ));
            }
        }
        if let LoadedResult::Db(_) = &inputs[i].result {
            let dbs: Vec<(usize, &DbResult)> = members
                .iter()
                .filter_map(|&m| match &inputs[m].result {
                    LoadedResult::Db(d) => Some((m, d.as_ref())),
                    _ => None,
                })
                .collect();
            // The hosts of one run drive one server: its snapshots are taken once.
            let (a, first) = dbs[0];
            if let Some(&(b, other)) = dbs
                .iter()
                .find(|(_, d)| d.server_version != first.server_version)
            {
                return Err(ReportError::input(
                    &inputs[b].path,
                    &format!(
                        "--merge: not the same run as {} (server '{}' vs '{}'): the hosts of one run drive one server",
                        inputs[a].path.display(),
                        other.server_version,
                        first.server_version
                    ),
                ));
            }
            let described: Vec<(usize, String)> =
                dbs.iter().map(|&(m, d)| (m, connections(d))).collect();
            if described.iter().any(|(_, c)| *c != described[0].1) {
                notes.push(format!(
                    "merged '{}' from hosts that connected differently ({}): the merged steps record \
                     no transport or TLS where theirs differ, and the figures mix them",
                    inputs[i].label,
                    described
                        .iter()
                        .map(|(m, c)| format!("{}: {c}", inputs[*m].path.display()))
                        .collect::<Vec<_>>()
                        .join("; ")
                ));
            }
        }
        let fail = |f: MergeFailure| {
            let input = &inputs[members[f.part]];
            ReportError::input(&input.path, &format!("--merge: {}", f.message))
        };
        let result = match &inputs[i].result {
            LoadedResult::Block(_) => {
                let parts: Vec<&BlockResult> = members
                    .iter()
                    .map(|&m| match &inputs[m].result {
                        LoadedResult::Block(b) => b.as_ref(),
                        _ => unreachable!("same key, same kind"),
                    })
                    .collect();
                LoadedResult::Block(Box::new(merge_block(&parts).map_err(fail)?))
            }
            LoadedResult::Db(_) => {
                let parts: Vec<&DbResult> = members
                    .iter()
                    .map(|&m| match &inputs[m].result {
                        LoadedResult::Db(d) => d.as_ref(),
                        _ => unreachable!("same key, same kind"),
                    })
                    .collect();
                LoadedResult::Db(Box::new(merge_db(&parts).map_err(fail)?))
            }
            _ => unreachable!("only block and db results have keys"),
        };
        let files: Vec<String> = members
            .iter()
            .map(|&m| inputs[m].path.display().to_string())
            .collect();
        notes.push(format!(
            "merged {} {} results as '{}': {}",
            members.len(),
            inputs[i].kind(),
            inputs[i].label,
            files.join(", ")
        ));
        out.push(ReportInput {
            path: PathBuf::from(format!(
                "{} (+{} merged)",
                inputs[i].path.display(),
                members.len() - 1
            )),
            label: inputs[i].label.clone(),
            result,
        });
    }
    Ok((out, notes))
}

/// How a db result's clients connected, for a note: each distinct
/// transport (with the TLS protocol and cipher) of its steps.
fn connections(d: &DbResult) -> String {
    let mut seen: Vec<String> = Vec::new();
    for s in &d.steps {
        let mut c = s.transport.clone().unwrap_or_else(|| "unrecorded".into());
        if let Some(p) = &s.tls_protocol {
            c.push_str(&format!(
                " {p}{}",
                s.tls_cipher
                    .as_ref()
                    .map_or(String::new(), |c| format!(" {c}"))
            ));
        }
        if !seen.contains(&c) {
            seen.push(c);
        }
    }
    if seen.is_empty() {
        "no steps".into()
    } else {
        seen.join(", ")
    }
}

/// Whether two results are one run's, not two hosts' shares of it: the same
/// start and the same measurements (two hosts never record identical
/// histograms; an empty run counts only with the same start).
fn same_run(a: &LoadedResult, b: &LoadedResult) -> bool {
    let measured = |r: &LoadedResult| match r {
        LoadedResult::Block(b) => Some((
            b.started_at.clone(),
            serde_json::to_string(&(&b.read, &b.write)).expect("serializes"),
            b.read.is_none() && b.write.is_none(),
        )),
        LoadedResult::Db(d) => Some((
            d.started_at.clone(),
            serde_json::to_string(&d.steps).expect("serializes"),
            d.steps.is_empty(),
        )),
        _ => None,
    };
    match (measured(a), measured(b)) {
        (Some((sa, ma, empty)), Some((sb, mb, _))) => ma == mb && (!empty || sa == sb),
        _ => false,
    }
}

/// What keeps two results from being one run, in a few words.
fn difference(a: &ReportInput, b: &ReportInput) -> String {
    let spec = |r: &LoadedResult| match r {
        LoadedResult::Block(b) => {
            let mut s = b.spec.clone();
            s.target = None;
            s.force = false;
            serde_json::to_value(s).ok()
        }
        LoadedResult::Db(d) => serde_json::to_value(&d.spec).ok(),
        _ => None,
    };
    match (&a.result, &b.result) {
        (LoadedResult::Db(x), LoadedResult::Db(y)) if x.spec.workload != y.spec.workload => {
            format!("workload {} vs {}", x.spec.workload, y.spec.workload)
        }
        (LoadedResult::Db(_), LoadedResult::Db(_))
        | (LoadedResult::Block(_), LoadedResult::Block(_)) => {
            let (Some(serde_json::Value::Object(x)), Some(serde_json::Value::Object(y))) =
                (spec(&a.result), spec(&b.result))
            else {
                return "different options".to_string();
            };
            let fields: Vec<&str> = x
                .iter()
                .filter(|(k, v)| y.get(*k) != Some(*v))
                .map(|(k, _)| k.as_str())
                .chain(y.keys().filter(|k| !x.contains_key(*k)).map(String::as_str))
                .collect();
            format!("options differ: {}", fields.join(", "))
        }
        _ => format!("a {} result and a {} result", a.kind(), b.kind()),
    }
}
