//! Which charts a report draws from its results: latency and throughput over time, the
//! thread sweeps, TPC-C's per-transaction views, pgio's database and device I/O, space per
//! step, and the block runs.

use std::collections::BTreeMap;

use crate::ReportError;
use crate::model::{DbKey, Flattened, IntervalRow, IoStepRow, SpaceRow};
use crate::tables::{GroupLatency, human_bytes, slug};
use crate::tpcc::TpccGroup;

use super::draw::{BarPanel, BarSeries, Chart, Line, LinePanel, Plot, SpaceBar};

pub(super) fn date_of(started_at: &str) -> &str {
    started_at.get(..10).unwrap_or(started_at)
}

pub(super) fn ff_name(ff: Option<i64>) -> String {
    ff.map_or("ff 100".to_string(), |f| format!("ff {f}"))
}

/// All charts for the flattened results.
pub fn all_plots(
    flat: &Flattened,
    latency: &BTreeMap<DbKey, GroupLatency>,
    tpcc: &[TpccGroup],
) -> Result<Vec<Plot>, ReportError> {
    let mut plots = Vec::new();
    db_time_plots(&flat.intervals, &mut plots)?;
    sweep_plots(flat, latency, &mut plots)?;
    tpcc_plots(tpcc, &mut plots)?;
    pgio_io_plots(&flat.io, &mut plots)?;
    space_plots(&flat.space, &mut plots)?;
    block_plots(&flat.intervals, &mut plots)?;
    // Names become file names: two charts must never share one (labels that
    // slug alike), or one would overwrite the other.
    let mut seen = std::collections::HashSet::new();
    for p in &mut plots {
        let stem = p.name.clone();
        let mut n = 1;
        while !seen.insert(p.name.clone()) {
            n += 1;
            p.name = format!("{stem}-{n}");
        }
    }
    Ok(plots)
}

/// Group of one run's series: label, workload, fillfactor, source.
pub(super) type RunKey = (String, String, Option<i64>, String);

/// A run's interval rows per thread count, in first-seen order.
pub(super) type RunSteps<'a> = Vec<(i64, Vec<&'a IntervalRow>)>;

/// Drops the intervals shorter than half the longest one (the stub a run
/// ends with): their rates are noise on a chart. The export keeps them.
pub(super) fn full_intervals(rows: Vec<&IntervalRow>) -> Vec<&IntervalRow> {
    let longest = rows.iter().map(|r| r.duration_s).fold(0.0, f64::max);
    rows.into_iter()
        .filter(|r| r.duration_s >= longest / 2.0)
        .collect()
}

pub(super) fn db_time_plots(
    rows: &[IntervalRow],
    plots: &mut Vec<Plot>,
) -> Result<(), ReportError> {
    // Per run (file) and fillfactor: threads → rows, in first-seen order.
    let mut runs: Vec<(RunKey, RunSteps<'_>)> = Vec::new();
    for r in rows.iter().filter(|r| r.kind == "db") {
        let key = (
            r.label.clone(),
            r.workload.clone(),
            r.fillfactor,
            r.source.clone(),
        );
        let idx = match runs.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                runs.push((key, Vec::new()));
                runs.len() - 1
            }
        };
        let steps = &mut runs[idx].1;
        match steps.iter_mut().find(|(t, _)| *t == r.threads) {
            Some((_, v)) => v.push(r),
            None => steps.push((r.threads, vec![r])),
        }
    }
    for (_, steps) in runs.iter_mut() {
        for (_, v) in steps.iter_mut() {
            *v = full_intervals(std::mem::take(v));
        }
    }
    for (n, ((label, workload, ff, _source), steps)) in runs.iter().enumerate() {
        let date = steps
            .first()
            .and_then(|(_, v)| v.first())
            .map_or("", |r| date_of(&r.started_at));
        let stem = format!(
            "{}-{}-{}-{n}",
            slug(label),
            slug(workload),
            ff.unwrap_or(100)
        );
        let title = format!(
            "{workload} on {label}, {}: TPS per second ({date})",
            ff_name(*ff)
        );
        let lines = steps
            .iter()
            .map(|(threads, v)| Line {
                name: format!("{threads} thread{}", if *threads == 1 { "" } else { "s" }),
                points: v.iter().filter_map(|r| Some((r.t_s, r.tps?))).collect(),
            })
            .collect();
        let chart = Chart::Lines(vec![LinePanel {
            title: title.clone(),
            x_desc: "time (s)".into(),
            y_desc: "transactions per second".into(),
            lines,
            discrete_x: false,
        }]);
        plots.push(Plot::new(format!("tps-{stem}"), title, &chart)?);
        // QPS at the largest thread count, as the seeds charted at 128 threads.
        if let Some((threads, v)) = steps.iter().max_by_key(|(t, _)| *t) {
            let series = |name: &str, g: fn(&IntervalRow) -> Option<f64>| Line {
                name: name.to_string(),
                points: v.iter().filter_map(|r| Some((r.t_s, g(r)?))).collect(),
            };
            let title = format!(
                "{workload} on {label}, {}, {threads} threads: QPS total and read/write/other ({date})",
                ff_name(*ff)
            );
            let chart = Chart::Lines(vec![LinePanel {
                title: title.clone(),
                x_desc: "time (s)".into(),
                y_desc: "statements per second".into(),
                lines: vec![
                    series("total", |r| r.qps),
                    series("read", |r| r.reads_per_s),
                    series("write", |r| r.writes_per_s),
                    series("other", |r| r.others_per_s),
                ],
                discrete_x: false,
            }]);
            plots.push(Plot::new(format!("qps-{stem}-{threads}t"), title, &chart)?);
        }
    }
    Ok(())
}

pub(super) fn sweep_plots(
    flat: &Flattened,
    latency: &BTreeMap<DbKey, GroupLatency>,
    plots: &mut Vec<Plot>,
) -> Result<(), ReportError> {
    // Per workload × fillfactor: one line per label over thread counts. An
    // unset fillfactor is PostgreSQL's 100: the same tables as an explicit 100.
    let effective_ff = |k: &DbKey| k.fillfactor.unwrap_or(100);
    let mut groups: Vec<(String, i64)> = Vec::new();
    for s in &flat.db_steps {
        let g = (s.key.workload.clone(), effective_ff(&s.key));
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    for (workload, ff) in groups {
        let mut labels: Vec<&str> = Vec::new();
        for s in flat
            .db_steps
            .iter()
            .filter(|s| s.key.workload == workload && effective_ff(&s.key) == ff)
        {
            if !labels.contains(&s.key.label.as_str()) {
                labels.push(&s.key.label);
            }
        }
        let line = |label: &str, value: &dyn Fn(&DbKey) -> Option<f64>| {
            let mut pts: BTreeMap<i64, f64> = BTreeMap::new();
            for s in flat.db_steps.iter().filter(|s| {
                s.key.label == label && s.key.workload == workload && effective_ff(&s.key) == ff
            }) {
                if let Some(v) = value(&s.key) {
                    pts.insert(s.key.threads, v);
                }
            }
            Line {
                name: label.to_string(),
                points: pts.into_iter().map(|(t, v)| (t as f64, v)).collect(),
            }
        };
        // TPS over the whole step: transactions-weighted over the group's steps.
        let tps = |k: &DbKey| {
            let steps: Vec<_> = flat.db_steps.iter().filter(|s| s.key == *k).collect();
            let secs: f64 = steps.iter().map(|s| s.elapsed_s).sum();
            let tx: u64 = steps.iter().map(|s| s.transactions).sum();
            (secs > 0.0).then(|| tx as f64 / secs)
        };
        let p95 = |k: &DbKey| latency.get(k).and_then(|l| l.p95_ms);
        let title = format!(
            "{workload}, {}: TPS and p95 latency by threads",
            ff_name(Some(ff))
        );
        let chart = Chart::Lines(vec![
            LinePanel {
                title: format!("{workload}, {}: TPS", ff_name(Some(ff))),
                x_desc: "threads".into(),
                y_desc: "transactions per second".into(),
                lines: labels.iter().map(|l| line(l, &tps)).collect(),
                discrete_x: true,
            },
            LinePanel {
                title: format!("{workload}, {}: p95 latency", ff_name(Some(ff))),
                x_desc: "threads".into(),
                y_desc: "p95 latency (ms)".into(),
                lines: labels.iter().map(|l| line(l, &p95)).collect(),
                discrete_x: true,
            },
        ]);
        plots.push(Plot::new(
            format!("sweep-{}-{}", slug(&workload), ff),
            title,
            &chart,
        )?);
    }
    Ok(())
}

/// TPC-C, per warehouses × fillfactor: tpmC by terminals (one line per
/// label), and p95/p99 latency by transaction type (one bar per label) at the
/// largest terminal count every label ran (else the largest any ran).
pub(super) fn tpcc_plots(groups: &[TpccGroup], plots: &mut Vec<Plot>) -> Result<(), ReportError> {
    let effective_ff = |g: &TpccGroup| g.key.fillfactor.unwrap_or(100);
    let mut configs: Vec<(Option<u32>, i64)> = Vec::new();
    for g in groups {
        let c = (g.key.warehouses, effective_ff(g));
        if !configs.contains(&c) {
            configs.push(c);
        }
    }
    for (warehouses, ff) in configs {
        let of: Vec<&TpccGroup> = groups
            .iter()
            .filter(|g| g.key.warehouses == warehouses && effective_ff(g) == ff)
            .collect();
        let mut labels: Vec<&str> = Vec::new();
        for g in &of {
            if !labels.contains(&g.key.label.as_str()) {
                labels.push(&g.key.label);
            }
        }
        let what = match warehouses {
            Some(w) => format!(
                "TPC-C, {w} warehouse{}, {}",
                if w == 1 { "" } else { "s" },
                ff_name(Some(ff))
            ),
            None => format!("TPC-C, {}", ff_name(Some(ff))),
        };
        let stem = format!(
            "{}-{ff}",
            warehouses.map_or("w_".to_string(), |w| format!("{w}w"))
        );
        let lines = labels
            .iter()
            .map(|l| {
                let mut pts: BTreeMap<i64, f64> = BTreeMap::new();
                for g in of.iter().filter(|g| g.key.label == *l) {
                    pts.insert(g.key.terminals, g.tpmc);
                }
                Line {
                    name: l.to_string(),
                    points: pts.into_iter().map(|(t, v)| (t as f64, v)).collect(),
                }
            })
            .collect();
        let title = format!("{what}: tpmC by terminals");
        let chart = Chart::Lines(vec![LinePanel {
            title: title.clone(),
            x_desc: "terminals".into(),
            y_desc: "tpmC (New-Orders per minute)".into(),
            lines,
            discrete_x: true,
        }]);
        plots.push(Plot::new(format!("tpcc-tpmc-{stem}"), title, &chart)?);

        let ran = |l: &str, t: i64| of.iter().any(|g| g.key.label == l && g.key.terminals == t);
        let all_terms = of.iter().map(|g| g.key.terminals);
        let Some(terminals) = all_terms
            .clone()
            .filter(|t| labels.iter().all(|l| ran(l, *t)))
            .max()
            .or_else(|| all_terms.max())
        else {
            continue;
        };
        let at: Vec<&TpccGroup> = of
            .iter()
            .copied()
            .filter(|g| g.key.terminals == terminals)
            .collect();
        let mut categories: Vec<String> = Vec::new();
        for name in crate::tpcc::TPCC_TYPES.iter().map(|n| n.to_string()).chain(
            at.iter()
                .flat_map(|g| g.types.iter().map(|t| t.name.clone())),
        ) {
            if !categories.contains(&name) && at.iter().any(|g| g.of_type(&name).is_some()) {
                categories.push(name);
            }
        }
        if categories.is_empty() {
            continue;
        }
        let panel = |pct: &str, get: fn(&crate::tpcc::TpccTypeStats) -> Option<f64>| BarPanel {
            title: format!("{what}: {pct} latency by type, {terminals} terminals"),
            y_desc: format!("{pct} latency (ms)"),
            categories: categories.clone(),
            series: labels
                .iter()
                .map(|l| BarSeries {
                    name: l.to_string(),
                    values: categories
                        .iter()
                        .map(|c| {
                            at.iter()
                                .find(|g| g.key.label == *l)
                                .and_then(|g| g.of_type(c))
                                .and_then(get)
                        })
                        .collect(),
                })
                .collect(),
        };
        let title =
            format!("{what}, {terminals} terminals: p95 and p99 latency by transaction type");
        let chart = Chart::Bars(vec![panel("p95", |t| t.p95_ms), panel("p99", |t| t.p99_ms)]);
        plots.push(Plot::new(
            format!("tpcc-latency-{stem}-{terminals}t"),
            title,
            &chart,
        )?);
    }
    Ok(())
}

/// pgio, per label × configuration (pgio's parameters and what limited the
/// page cache): RIOPS and the drive's read IOPS over the measured time, one
/// line each on one axis, the steps of a sweep one after another as they ran.
/// Where the two lines part, the page cache (or readahead) is at work.
pub(super) fn pgio_io_plots(rows: &[IoStepRow], plots: &mut Vec<Plot>) -> Result<(), ReportError> {
    type Config = (String, csdchar_core::result::db::PgioParams, Option<String>);
    let mut groups: Vec<(Config, Vec<&IoStepRow>)> = Vec::new();
    for r in rows.iter().filter(|r| !r.intervals.is_empty()) {
        let Some(p) = &r.pgio else {
            continue;
        };
        let key = (r.key.label.clone(), p.clone(), r.cache_control.clone());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    for ((label, p, cache), steps) in &groups {
        let (mut riops, mut dev) = (Vec::new(), Vec::new());
        let mut offset = 0.0;
        let mut clients: Vec<String> = Vec::new();
        for s in steps {
            // As full_intervals: a step's short last interval is noise here.
            let longest = s.intervals.iter().map(|i| i.duration_s).fold(0.0, f64::max);
            for i in s.intervals.iter().filter(|i| i.duration_s >= longest / 2.0) {
                riops.push((offset + i.t_s, i.riops));
                if let Some(d) = i.dev_read_iops {
                    dev.push((offset + i.t_s, d));
                }
            }
            let last = s.intervals.last().map_or(0.0, |i| i.t_s);
            offset += s.elapsed_s.max(last);
            let c = s.key.threads.to_string();
            if !clients.contains(&c) {
                clients.push(c);
            }
        }
        let mut lines = vec![Line {
            name: "RIOPS (buffer misses/s)".into(),
            points: riops,
        }];
        if !dev.is_empty() {
            lines.push(Line {
                name: "device read IOPS".into(),
                points: dev,
            });
        }
        let date = date_of(&steps[0].started_at);
        let clients = clients.join(", ");
        let title = format!(
            "pgio ({}) on {label}, cache control: {}, {clients} clients: RIOPS vs device read IOPS ({date})",
            crate::io::pgio_config(p),
            cache.as_deref().unwrap_or("none")
        );
        let chart = Chart::Lines(vec![LinePanel {
            title: format!("pgio on {label}: RIOPS vs device read IOPS ({clients} clients)"),
            x_desc: "measured time (s), steps in the order run".into(),
            y_desc: "per second".into(),
            lines,
            discrete_x: false,
        }]);
        let stem = format!(
            "{}x{}-u{}-w{}-{}{}",
            p.schemas,
            p.blocks_per_schema,
            p.update_pct,
            p.work_unit,
            p.update_work_unit,
            if p.server_side { "-ss" } else { "" }
        );
        plots.push(Plot::new(
            format!("pgio-riops-{}-{stem}", slug(label)),
            title,
            &chart,
        )?);
    }
    Ok(())
}

pub(super) fn space_plots(rows: &[SpaceRow], plots: &mut Vec<Plot>) -> Result<(), ReportError> {
    let mut labels: Vec<&str> = Vec::new();
    for r in rows {
        if !labels.contains(&r.label.as_str()) {
            labels.push(&r.label);
        }
    }
    for label in labels {
        let bars: Vec<SpaceBar> = rows
            .iter()
            .filter(|r| r.label == label)
            .filter_map(|r| {
                let name = match r.fillfactor {
                    Some(ff) => format!("ff {ff}"),
                    None => r.origin.to_string(),
                };
                let logical = r.logical_bytes?;
                Some(SpaceBar {
                    name,
                    logical,
                    device_logical: r.device_logical_bytes.filter(|d| *d != logical),
                    physical: r.physical_bytes,
                    ratio: r.ratio,
                })
            })
            .collect();
        if bars.is_empty() {
            continue;
        }
        let title = format!("Space on {label}: logical vs physical");
        let chart = Chart::SpaceBars {
            title: title.clone(),
            bars,
        };
        plots.push(Plot::new(format!("space-{}", slug(label)), title, &chart)?);
    }
    Ok(())
}

pub(super) fn block_plots(rows: &[IntervalRow], plots: &mut Vec<Plot>) -> Result<(), ReportError> {
    let mut sources: Vec<&str> = Vec::new();
    for r in rows.iter().filter(|r| r.kind == "block") {
        if !sources.contains(&r.source.as_str()) {
            sources.push(&r.source);
        }
    }
    for (n, source) in sources.iter().enumerate() {
        let v = full_intervals(rows.iter().filter(|r| r.source == *source).collect());
        let first = v[0];
        let what = format!(
            "{} {} QD{} x{} on {}",
            first.workload,
            human_bytes(first.bs_bytes.unwrap_or(0) as f64),
            first.iodepth.unwrap_or(0),
            first.threads,
            first.label
        );
        let series = |name: &str, g: fn(&IntervalRow) -> Option<f64>| {
            let points: Vec<(f64, f64)> = v.iter().filter_map(|r| Some((r.t_s, g(r)?))).collect();
            (!points.is_empty()).then(|| Line {
                name: name.to_string(),
                points,
            })
        };
        let iops: Vec<Line> = [
            series("read", |r| r.read_iops),
            series("write", |r| r.write_iops),
        ]
        .into_iter()
        .flatten()
        .collect();
        let lat: Vec<Line> = [
            series("read mean", |r| r.read_lat_mean_us),
            series("read p99", |r| r.read_lat_p99_us),
            series("write mean", |r| r.write_lat_mean_us),
            series("write p99", |r| r.write_lat_p99_us),
        ]
        .into_iter()
        .flatten()
        .collect();
        let title = format!("{what}: IOPS and latency ({})", date_of(&first.started_at));
        let chart = Chart::Lines(vec![
            LinePanel {
                title: format!("{what}: IOPS"),
                x_desc: "time (s)".into(),
                y_desc: "I/Os per second".into(),
                lines: iops,
                discrete_x: false,
            },
            LinePanel {
                title: format!("{what}: latency"),
                x_desc: "time (s)".into(),
                y_desc: "latency (µs)".into(),
                lines: lat,
                discrete_x: false,
            },
        ]);
        plots.push(Plot::new(
            format!("block-{}-{}-{n}", slug(&first.label), slug(&first.workload)),
            title,
            &chart,
        )?);
    }
    Ok(())
}
