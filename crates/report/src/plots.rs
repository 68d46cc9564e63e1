//! Charts as SVG and PNG. Text is measured (and, in PNG, drawn) with DejaVu
//! Sans compiled into the binary through plotters' ab_glyph backend, so no
//! system fonts or fontconfig are involved; SVG text is left to the viewer.

use std::collections::BTreeMap;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::ReportError;
use crate::model::{DbKey, Flattened, IntervalRow, IoStepRow, SpaceRow};
use crate::tables::{GroupLatency, human_bytes, slug};
use crate::tpcc::TpccGroup;

/// One chart, rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// File-name stem (plots/NAME.svg, plots/NAME.png).
    pub name: String,
    /// Title, also the chart's caption.
    pub title: String,
    /// The SVG document.
    pub svg: String,
    /// The same chart as a PNG image.
    pub png: Vec<u8>,
}

impl Plot {
    /// Draws `chart` as SVG and as PNG.
    fn new(name: String, title: String, chart: &Chart) -> Result<Self, ReportError> {
        Ok(Plot {
            name,
            title,
            svg: render_svg(chart)?,
            png: render_png(chart)?,
        })
    }
}

/// What a chart shows, independent of the output format.
#[derive(Debug, Clone, PartialEq)]
pub enum Chart {
    /// Line panels side by side (one or two).
    Lines(Vec<LinePanel>),
    /// Grouped bars: logical and (when known) device-logical and physical bytes per category.
    SpaceBars {
        /// Caption.
        title: String,
        /// One group of bars per category.
        bars: Vec<SpaceBar>,
    },
    /// Grouped-bar panels side by side (one or two).
    Bars(Vec<BarPanel>),
}

/// A grouped-bar chart's content: per category, one bar per series.
#[derive(Debug, Clone, PartialEq)]
pub struct BarPanel {
    /// Caption.
    pub title: String,
    /// Y axis description, with unit.
    pub y_desc: String,
    /// Categories along x, in order.
    pub categories: Vec<String>,
    /// Series (legend entries), each with one value per category (None: no bar).
    pub series: Vec<BarSeries>,
}

/// One series of a [`BarPanel`].
#[derive(Debug, Clone, PartialEq)]
pub struct BarSeries {
    /// Legend entry.
    pub name: String,
    /// Values by category.
    pub values: Vec<Option<f64>>,
}

/// One category of a space chart. The data's logical size and the logical size
/// the physical figure stands for differ when the drive holds more than the data
/// (WAL, filesystem): the ratio is only meaningful between the last two.
#[derive(Debug, Clone, PartialEq)]
pub struct SpaceBar {
    /// Category (fillfactor or origin).
    pub name: String,
    /// Logical bytes of the data.
    pub logical: f64,
    /// Logical bytes the physical figure stands for, when not the data's own.
    pub device_logical: Option<f64>,
    /// Stored bytes.
    pub physical: Option<f64>,
    /// Compression ratio (logical the physical figure stands for / physical).
    pub ratio: Option<f64>,
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
    /// Whether x is a count (threads): each value that occurs is one evenly spaced, labelled category and points are marked.
    pub discrete_x: bool,
}

const SIZE: (u32, u32) = (960, 480);

/// Series colours (Tableau 10): distinct, and all dark enough to read on white.
fn series_color(i: usize) -> RGBAColor {
    const COLORS: [(u8, u8, u8); 10] = [
        (0x4e, 0x79, 0xa7),
        (0xf2, 0x8e, 0x2b),
        (0xe1, 0x57, 0x59),
        (0x59, 0xa1, 0x4f),
        (0xb0, 0x7a, 0xa1),
        (0x76, 0xb7, 0xb2),
        (0xed, 0xc9, 0x48),
        (0xff, 0x9d, 0xa7),
        (0x9c, 0x75, 0x5f),
        (0xba, 0xb0, 0xac),
    ];
    let (r, g, b) = COLORS[i % COLORS.len()];
    RGBColor(r, g, b).to_rgba()
}

/// The family every chart's text uses.
const FONT: &str = "sans-serif";

/// Registers DejaVu Sans as [`FONT`] with plotters once per process.
fn register_fonts() -> Result<(), ReportError> {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(ReportError::Plot(
            "the embedded font could not be loaded".into(),
        ))
    }
}

impl Chart {
    fn size(&self) -> (u32, u32) {
        match self {
            Chart::Lines(panels) if panels.len() > 1 => (1280, SIZE.1),
            Chart::Bars(panels) if panels.len() > 1 => (1280, SIZE.1),
            _ => SIZE,
        }
    }

    /// Draws the chart on any plotters backend.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), ReportError> {
        root.fill(&WHITE).map_err(draw_error)?;
        match self {
            Chart::Lines(panels) => {
                let areas = root.split_evenly((1, panels.len().max(1)));
                for (area, panel) in areas.iter().zip(panels) {
                    draw_lines(area, panel)?;
                }
            }
            Chart::SpaceBars { title, bars } => draw_space_bars(root, title, bars)?,
            Chart::Bars(panels) => {
                let areas = root.split_evenly((1, panels.len().max(1)));
                for (area, panel) in areas.iter().zip(panels) {
                    draw_bars(area, panel)?;
                }
            }
        }
        root.present().map_err(draw_error)
    }
}

/// The chart as an SVG document.
pub fn render_svg(chart: &Chart) -> Result<String, ReportError> {
    register_fonts()?;
    let mut svg = String::new();
    chart.draw(&SVGBackend::with_string(&mut svg, chart.size()).into_drawing_area())?;
    Ok(svg)
}

/// The chart as a PNG image (8-bit RGB).
pub fn render_png(chart: &Chart) -> Result<Vec<u8>, ReportError> {
    register_fonts()?;
    let (w, h) = chart.size();
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    chart.draw(&BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area())?;
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder
        .write_header()
        .and_then(|mut w| w.write_image_data(&rgb))
        .map_err(draw_error)?;
    Ok(out)
}

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

fn draw_lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &LinePanel,
) -> Result<(), ReportError> {
    // A count axis (threads: 1, 2, 4 … 256) is a category axis: one evenly
    // spaced, labelled position per value that occurs, nothing in between.
    let mut categories: Vec<f64> = Vec::new();
    if panel.discrete_x {
        categories = panel
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .collect();
        categories.sort_by(f64::total_cmp);
        categories.dedup();
    }
    let lines: Vec<Vec<(f64, f64)>> = panel
        .lines
        .iter()
        .map(|l| {
            l.points
                .iter()
                .map(|&(x, y)| match categories.iter().position(|c| *c == x) {
                    Some(i) => (i as f64, y),
                    None => (x, y),
                })
                .collect()
        })
        .collect();
    let (x0, x1) = if panel.discrete_x {
        (-0.5, categories.len().max(1) as f64 - 0.5)
    } else {
        range(lines.iter().flatten().map(|p| p.0), false)
    };
    let (y0, y1) = range(lines.iter().flatten().map(|p| p.1), true);
    let y1 = with_legend_room(y0, y1, panel.lines.len());
    let (x_ticks, y_ticks) = (TickFormat::new(x0, x1), TickFormat::new(y0, y1));
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, 17))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(78)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(draw_error)?;
    let mut mesh = chart.configure_mesh();
    if panel.discrete_x {
        mesh.x_labels(categories.len()).disable_x_mesh();
    }
    mesh.x_desc(&panel.x_desc)
        .y_desc(&panel.y_desc)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .y_label_formatter(&|v| y_ticks.label(*v))
        .x_label_formatter(&|v| {
            if panel.discrete_x {
                category_label(*v, |i| categories.get(i).map(|c| format!("{c}")))
            } else {
                x_ticks.label(*v)
            }
        })
        .draw()
        .map_err(draw_error)?;
    for (i, (line, points)) in panel.lines.iter().zip(&lines).enumerate() {
        let color = series_color(i);
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(draw_error)?
            .label(line.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        if panel.discrete_x {
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(draw_error)?;
        }
    }
    if !panel.lines.is_empty() {
        draw_legend(&mut chart)?;
    }
    Ok(())
}

/// The legend, upper right, over a translucent white box ([`with_legend_room`] keeps the data below it).
fn draw_legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
) -> Result<(), ReportError> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font((FONT, 14))
        .draw()
        .map_err(draw_error)?;
    Ok(())
}

/// Raises the top of a y range so that a legend of `entries` lines in the
/// upper right corner sits above the data instead of on it.
fn with_legend_room(y0: f64, y1: f64, entries: usize) -> f64 {
    if entries == 0 {
        return y1;
    }
    // About 19 px a legend line plus its frame, of a plot area about 380 px high.
    let share = ((entries as f64 * 19.0 + 24.0) / 380.0).min(0.5);
    y0 + (y1 - y0) / (1.0 - share)
}

/// Tick labels of one axis: one unit suffix (k, M, G) and as many decimals as
/// the tick spacing needs, the same for every tick (no "80.0" beside "100").
#[derive(Debug, Clone, Copy, PartialEq)]
struct TickFormat {
    scale: f64,
    suffix: &'static str,
    decimals: usize,
}

impl TickFormat {
    /// For an axis from `lo` to `hi`. plotters labels it at a step of 1, 2 or 5
    /// times a power of ten, at most ten labels: the decimals follow that step.
    fn new(lo: f64, hi: f64) -> Self {
        let max = lo.abs().max(hi.abs());
        let (scale, suffix) = [(1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")]
            .into_iter()
            .find(|(from, _, _)| max >= *from)
            .map_or((1.0, ""), |(_, s, u)| (s, u));
        let raw = (hi - lo) / 9.0 / scale;
        let decimals = if raw.is_finite() && raw > 0.0 {
            let pow = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .into_iter()
                .map(|m| m * pow)
                .find(|s| *s >= raw * (1.0 - 1e-9))
                .unwrap_or(10.0 * pow);
            ((-step.log10() - 1e-9).ceil().max(0.0) as usize).min(6)
        } else {
            0
        };
        TickFormat {
            scale,
            suffix,
            decimals,
        }
    }

    fn label(&self, v: f64) -> String {
        if v == 0.0 {
            return "0".into();
        }
        format!("{:.*}{}", self.decimals, v / self.scale, self.suffix)
    }
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

fn sweep_plots(
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
fn tpcc_plots(groups: &[TpccGroup], plots: &mut Vec<Plot>) -> Result<(), ReportError> {
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
fn pgio_io_plots(rows: &[IoStepRow], plots: &mut Vec<Plot>) -> Result<(), ReportError> {
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

/// Grouped bars: per category, one bar per series, side by side.
fn draw_bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &BarPanel,
) -> Result<(), ReportError> {
    let n = panel.categories.len().max(1);
    let max = panel
        .series
        .iter()
        .flat_map(|s| s.values.iter().flatten().copied())
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let (_, y1) = range(std::iter::once(max), true);
    let y1 = with_legend_room(0.0, y1, panel.series.len());
    let y_ticks = TickFormat::new(0.0, y1);
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, 17))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(78)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..y1)
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| category_label(*x, |i| panel.categories.get(i).cloned()))
        .y_label_formatter(&|v| y_ticks.label(*v))
        .y_desc(&panel.y_desc)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(draw_error)?;
    // As the space bars: the group takes 0.76 of a category's width.
    let width = 0.76 / panel.series.len().max(1) as f64;
    let left = |i: usize, k: usize| i as f64 - 0.38 + k as f64 * width;
    for (k, s) in panel.series.iter().enumerate() {
        let color = series_color(k);
        chart
            .draw_series(s.values.iter().enumerate().filter_map(|(i, v)| {
                let v = v.filter(|v| v.is_finite())?;
                Some(Rectangle::new(
                    [(left(i, k) + 0.01, 0.0), (left(i, k) + width - 0.01, v)],
                    color.filled(),
                ))
            }))
            .map_err(draw_error)?
            .label(s.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
    }
    if !panel.series.is_empty() {
        draw_legend(&mut chart)?;
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

/// Grouped bars per category: the data's logical size, the device's logical
/// size (when the physical figure covers more than the data) and the physical size.
fn draw_space_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    bars: &[SpaceBar],
) -> Result<(), ReportError> {
    type Get = fn(&SpaceBar) -> Option<f64>;
    let series: Vec<(&str, Get)> = [
        ("logical (data)", (|b: &SpaceBar| Some(b.logical)) as Get),
        ("logical (device)", |b: &SpaceBar| b.device_logical),
        ("physical", |b: &SpaceBar| b.physical),
    ]
    .into_iter()
    .filter(|(_, get)| bars.iter().any(|b| get(b).is_some()))
    .collect();
    let max = bars
        .iter()
        .flat_map(|b| series.iter().filter_map(|(_, get)| get(b)))
        .fold(0.0, f64::max)
        .max(1.0);
    let (scale, unit) = unit_for(max);
    let n = bars.len();
    let y1 = with_legend_room(0.0, max / scale * 1.12, series.len());
    let y_ticks = TickFormat::new(0.0, y1);
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, 17))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(78)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..y1)
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| category_label(*x, |i| bars.get(i).map(|b| b.name.clone())))
        .y_label_formatter(&|v| y_ticks.label(*v))
        .y_desc(format!("bytes ({unit})"))
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(draw_error)?;
    // The group takes 0.76 of a category's width, split among the series shown.
    let width = 0.76 / series.len() as f64;
    let left = |i: usize, k: usize| i as f64 - 0.38 + k as f64 * width;
    for (k, (name, get)) in series.iter().enumerate() {
        let color = series_color(k);
        chart
            .draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
                Some(Rectangle::new(
                    [
                        (left(i, k) + 0.01, 0.0),
                        (left(i, k) + width - 0.01, get(b)? / scale),
                    ],
                    color.filled(),
                ))
            }))
            .map_err(draw_error)?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
    }
    // The ratio above the physical bar, the same figure as the space table's.
    let k = series.len() - 1;
    chart
        .draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
            let (ratio, physical) = (b.ratio?, b.physical?);
            Some(Text::new(
                format!("{ratio:.2}:1"),
                (left(i, k) + 0.01, physical / scale + max / scale * 0.05),
                (FONT, 14),
            ))
        }))
        .map_err(draw_error)?;
    draw_legend(&mut chart)?;
    Ok(())
}

/// The label of a category axis at position `x`: categories sit at whole
/// numbers, anything between gets no label.
fn category_label(x: f64, name: impl Fn(usize) -> Option<String>) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 {
        name(i as usize).unwrap_or_default()
    } else {
        String::new()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of every `<text>` element of an SVG.
    fn svg_texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                Some(
                    t.split_once('>')?
                        .1
                        .split_once("</text>")?
                        .0
                        .trim()
                        .to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn thread_counts_are_evenly_spaced_categories() {
        let panel = LinePanel {
            title: "sweep".into(),
            x_desc: "threads".into(),
            y_desc: "tps".into(),
            lines: vec![Line {
                name: "A".into(),
                points: vec![(64.0, 0.4), (96.0, 0.5), (128.0, 0.6), (256.0, 0.7)],
            }],
            discrete_x: true,
        };
        let texts = svg_texts(&render_svg(&Chart::Lines(vec![panel])).unwrap());
        for t in ["64", "96", "128", "256"] {
            assert_eq!(
                texts.iter().filter(|x| *x == t).count(),
                1,
                "{t} in {texts:?}"
            );
        }
        // A linear axis from 64 to 256 would label 100, 150, 200.
        for t in ["100", "150", "200"] {
            assert!(!texts.iter().any(|x| x == t), "{t} in {texts:?}");
        }
    }

    #[test]
    fn space_bars_show_what_the_ratio_is_between() {
        let bar = |device_logical| SpaceBar {
            name: "db".into(),
            logical: 131.0 * 1048576.0,
            device_logical,
            physical: Some(246.0 * 1048576.0),
            ratio: Some(1.443),
        };
        let with_device = svg_texts(
            &render_svg(&Chart::SpaceBars {
                title: "space".into(),
                bars: vec![bar(Some(355.0 * 1048576.0))],
            })
            .unwrap(),
        );
        assert!(
            with_device.iter().any(|t| t == "logical (device)"),
            "{with_device:?}"
        );
        assert!(with_device.iter().any(|t| t == "1.44:1"), "{with_device:?}");
        let data_only = svg_texts(
            &render_svg(&Chart::SpaceBars {
                title: "space".into(),
                bars: vec![bar(None)],
            })
            .unwrap(),
        );
        assert!(
            !data_only.iter().any(|t| t == "logical (device)"),
            "{data_only:?}"
        );
        assert!(data_only.iter().any(|t| t == "physical"), "{data_only:?}");
    }

    #[test]
    fn tick_labels_share_one_precision_per_axis() {
        let f = TickFormat::new(0.0, 157.0);
        assert_eq!(
            (f.label(80.0), f.label(100.0), f.label(0.0)),
            ("80".into(), "100".into(), "0".into())
        );
        let f = TickFormat::new(0.0, 6.1);
        assert_eq!((f.label(1.0), f.label(4.0)), ("1".into(), "4".into()));
        let f = TickFormat::new(0.0, 2.5);
        assert_eq!((f.label(0.2), f.label(2.0)), ("0.2".into(), "2.0".into()));
        let f = TickFormat::new(0.0, 0.04);
        assert_eq!(f.label(0.005), "0.005");
        let f = TickFormat::new(0.0, 240_000.0);
        assert_eq!(
            (f.label(50_000.0), f.label(200_000.0)),
            ("50k".into(), "200k".into())
        );
        let f = TickFormat::new(0.0, 12_000.0);
        assert_eq!(f.label(2_000.0), "2k");
        let f = TickFormat::new(1.5e6, 1.9e6);
        assert_eq!(f.label(1.55e6), "1.55M");
    }
}
