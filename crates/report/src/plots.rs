//! SVG charts (plotters' SVG backend: text is left to the viewer's fonts, so
//! no font files are needed to draw).

use std::collections::BTreeMap;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::ReportError;
use crate::model::{DbKey, Flattened, IntervalRow, SpaceRow};
use crate::tables::{GroupLatency, human_bytes, slug};

/// One chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// File-name stem (plots/NAME.svg).
    pub name: String,
    /// Title, also the chart's caption.
    pub title: String,
    /// The SVG document.
    pub svg: String,
}

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Legend entry.
    pub name: String,
    /// Points, x ascending.
    pub points: Vec<(f64, f64)>,
}

/// A line chart's content.
#[derive(Debug, Clone, PartialEq)]
pub struct LinePanel {
    /// Caption.
    pub title: String,
    /// X axis description, with unit.
    pub x_desc: String,
    /// Y axis description, with unit.
    pub y_desc: String,
    /// Lines.
    pub lines: Vec<Line>,
    /// Whether x is a count (threads): points are marked and only whole numbers labelled.
    pub discrete_x: bool,
}

const SIZE: (u32, u32) = (960, 480);

fn draw_error<E: std::fmt::Debug>(e: E) -> ReportError {
    ReportError::Plot(format!("{e:?}"))
}

/// Axis range with some headroom; a flat or empty series still gets a usable range.
fn range(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if from_zero {
        lo = lo.min(0.0);
    }
    if (hi - lo).abs() < f64::EPSILON {
        hi = lo + lo.abs().max(1.0);
    }
    (lo, hi + (hi - lo) * 0.05)
}

fn draw_lines(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    panel: &LinePanel,
) -> Result<(), ReportError> {
    let pts = || panel.lines.iter().flat_map(|l| l.points.iter());
    let (x0, x1) = range(pts().map(|p| p.0), false);
    // Room on the left too, so a first point is not drawn on the axis.
    let x0 = if panel.discrete_x {
        x0 - (x1 - x0) * 0.05
    } else {
        x0
    };
    let (y0, y1) = range(pts().map(|p| p.1), true);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(78)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .x_desc(&panel.x_desc)
        .y_desc(&panel.y_desc)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .y_label_formatter(&|v| short_number(*v))
        .x_label_formatter(&|v| {
            if panel.discrete_x && (v - v.round()).abs() > 1e-9 {
                String::new()
            } else {
                short_number(*v)
            }
        })
        .draw()
        .map_err(draw_error)?;
    for (i, line) in panel.lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                line.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(draw_error)?
            .label(line.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        if panel.discrete_x {
            chart
                .draw_series(
                    line.points
                        .iter()
                        .map(|&p| Circle::new(p, 3, color.filled())),
                )
                .map_err(draw_error)?;
        }
    }
    if !panel.lines.is_empty() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(draw_error)?;
    }
    Ok(())
}

/// 1234 → "1.2k", 2500000 → "2.5M"; small values keep decimals.
fn short_number(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.1}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Renders panels side by side (one or two) into one SVG.
pub fn render_panels(panels: &[LinePanel]) -> Result<String, ReportError> {
    let mut svg = String::new();
    {
        let width = if panels.len() > 1 { 1280 } else { SIZE.0 };
        let root = SVGBackend::with_string(&mut svg, (width, SIZE.1)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let areas = root.split_evenly((1, panels.len().max(1)));
        for (area, panel) in areas.iter().zip(panels) {
            draw_lines(area, panel)?;
        }
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

fn date_of(started_at: &str) -> &str {
    started_at.get(..10).unwrap_or(started_at)
}

fn ff_name(ff: Option<i64>) -> String {
    ff.map_or("ff 100".to_string(), |f| format!("ff {f}"))
}

/// All charts for the flattened results.
pub fn all_plots(
    flat: &Flattened,
    latency: &BTreeMap<DbKey, GroupLatency>,
) -> Result<Vec<Plot>, ReportError> {
    let mut plots = Vec::new();
    db_time_plots(&flat.intervals, &mut plots)?;
    sweep_plots(flat, latency, &mut plots)?;
    space_plots(&flat.space, &mut plots)?;
    block_plots(&flat.intervals, &mut plots)?;
    Ok(plots)
}

/// Group of one run's series: label, workload, fillfactor, source.
type RunKey = (String, String, Option<i64>, String);
/// A run's interval rows per thread count, in first-seen order.
type RunSteps<'a> = Vec<(i64, Vec<&'a IntervalRow>)>;

/// Drops the intervals shorter than half the longest one (the stub a run
/// ends with): their rates are noise on a chart. The export keeps them.
fn full_intervals(rows: Vec<&IntervalRow>) -> Vec<&IntervalRow> {
    let longest = rows.iter().map(|r| r.duration_s).fold(0.0, f64::max);
    rows.into_iter()
        .filter(|r| r.duration_s >= longest / 2.0)
        .collect()
}

fn db_time_plots(rows: &[IntervalRow], plots: &mut Vec<Plot>) -> Result<(), ReportError> {
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
                name: format!("{threads} threads"),
                points: v.iter().filter_map(|r| Some((r.t_s, r.tps?))).collect(),
            })
            .collect();
        plots.push(Plot {
            name: format!("tps-{stem}"),
            svg: render_panels(&[LinePanel {
                title: title.clone(),
                x_desc: "time (s)".into(),
                y_desc: "transactions per second".into(),
                lines,
                discrete_x: false,
            }])?,
            title,
        });
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
            plots.push(Plot {
                name: format!("qps-{stem}-{threads}t"),
                svg: render_panels(&[LinePanel {
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
                }])?,
                title,
            });
        }
    }
    Ok(())
}

fn sweep_plots(
    flat: &Flattened,
    latency: &BTreeMap<DbKey, GroupLatency>,
    plots: &mut Vec<Plot>,
) -> Result<(), ReportError> {
    // Per workload × fillfactor: one line per label over thread counts.
    let mut groups: Vec<(String, Option<i64>)> = Vec::new();
    for s in &flat.db_steps {
        let g = (s.key.workload.clone(), s.key.fillfactor);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    for (workload, ff) in groups {
        let mut labels: Vec<&str> = Vec::new();
        for s in flat
            .db_steps
            .iter()
            .filter(|s| s.key.workload == workload && s.key.fillfactor == ff)
        {
            if !labels.contains(&s.key.label.as_str()) {
                labels.push(&s.key.label);
            }
        }
        let line = |label: &str, value: &dyn Fn(&DbKey) -> Option<f64>| {
            let mut pts: BTreeMap<i64, f64> = BTreeMap::new();
            for s in flat.db_steps.iter().filter(|s| {
                s.key.label == label && s.key.workload == workload && s.key.fillfactor == ff
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
            ff_name(ff)
        );
        let svg = render_panels(&[
            LinePanel {
                title: format!("{workload}, {}: TPS", ff_name(ff)),
                x_desc: "threads".into(),
                y_desc: "transactions per second".into(),
                lines: labels.iter().map(|l| line(l, &tps)).collect(),
                discrete_x: true,
            },
            LinePanel {
                title: format!("{workload}, {}: p95 latency", ff_name(ff)),
                x_desc: "threads".into(),
                y_desc: "p95 latency (ms)".into(),
                lines: labels.iter().map(|l| line(l, &p95)).collect(),
                discrete_x: true,
            },
        ])?;
        plots.push(Plot {
            name: format!("sweep-{}-{}", slug(&workload), ff.unwrap_or(100)),
            title,
            svg,
        });
    }
    Ok(())
}

fn space_plots(rows: &[SpaceRow], plots: &mut Vec<Plot>) -> Result<(), ReportError> {
    let mut labels: Vec<&str> = Vec::new();
    for r in rows {
        if !labels.contains(&r.label.as_str()) {
            labels.push(&r.label);
        }
    }
    for label in labels {
        let bars: Vec<(String, f64, Option<f64>)> = rows
            .iter()
            .filter(|r| r.label == label)
            .filter_map(|r| {
                let name = match r.fillfactor {
                    Some(ff) => format!("ff {ff}"),
                    None => r.origin.to_string(),
                };
                Some((name, r.logical_bytes?, r.physical_bytes))
            })
            .collect();
        if bars.is_empty() {
            continue;
        }
        let title = format!("Space on {label}: logical vs physical");
        plots.push(Plot {
            name: format!("space-{}", slug(label)),
            svg: render_bars(&title, &bars)?,
            title,
        });
    }
    Ok(())
}

/// Grouped bars: logical and physical per category.
fn render_bars(title: &str, bars: &[(String, f64, Option<f64>)]) -> Result<String, ReportError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let max = bars
            .iter()
            .map(|b| b.1.max(b.2.unwrap_or(0.0)))
            .fold(0.0, f64::max)
            .max(1.0);
        let (scale, unit) = unit_for(max);
        let n = bars.len();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(78)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..(max / scale * 1.1))
            .map_err(draw_error)?;
        let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .y_desc(format!("bytes ({unit})"))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()
            .map_err(draw_error)?;
        let logical = Palette99::pick(0).to_rgba();
        let physical = Palette99::pick(1).to_rgba();
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                let x = i as f64;
                Rectangle::new([(x - 0.38, 0.0), (x - 0.02, b.1 / scale)], logical.filled())
            }))
            .map_err(draw_error)?
            .label("logical")
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], logical.filled()));
        chart
            .draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
                let x = i as f64;
                Some(Rectangle::new(
                    [(x + 0.02, 0.0), (x + 0.38, b.2? / scale)],
                    physical.filled(),
                ))
            }))
            .map_err(draw_error)?
            .label("physical")
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], physical.filled()));
        chart
            .draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
                let ratio = b.1 / b.2.filter(|p| *p > 0.0)?;
                Some(Text::new(
                    format!("{ratio:.2}:1 ({})", human_bytes(b.2?)),
                    (i as f64 + 0.02, b.2? / scale + max / scale * 0.05),
                    ("sans-serif", 13),
                ))
            }))
            .map_err(draw_error)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(draw_error)?;
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

fn unit_for(max: f64) -> (f64, &'static str) {
    const UNITS: [(f64, &str); 5] = [
        (1024f64 * 1024.0 * 1024.0 * 1024.0, "TiB"),
        (1024f64 * 1024.0 * 1024.0, "GiB"),
        (1024f64 * 1024.0, "MiB"),
        (1024.0, "KiB"),
        (1.0, "B"),
    ];
    UNITS
        .into_iter()
        .find(|(s, _)| max >= *s)
        .unwrap_or((1.0, "B"))
}

fn block_plots(rows: &[IntervalRow], plots: &mut Vec<Plot>) -> Result<(), ReportError> {
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
        plots.push(Plot {
            name: format!("block-{}-{}-{n}", slug(&first.label), slug(&first.workload)),
            svg: render_panels(&[
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
            ])?,
            title,
        });
    }
    Ok(())
}
