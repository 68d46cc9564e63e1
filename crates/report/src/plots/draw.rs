//! Drawing a chart: the chart model ([`Chart`]: line panels, bar panels, space bars),
//! fonts, axes, legends, tick formats, and the SVG and PNG renderings. Text is measured
//! (and, in PNG, drawn) with DejaVu Sans compiled into the binary through plotters'
//! ab_glyph backend, so no system fonts or fontconfig are involved; SVG text is left
//! to the viewer.

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::ReportError;

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
    pub(super) fn new(name: String, title: String, chart: &Chart) -> Result<Self, ReportError> {
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

pub(super) const SIZE: (u32, u32) = (960, 480);

/// Series colours (Tableau 10): distinct, and all dark enough to read on white.
pub(super) fn series_color(i: usize) -> RGBAColor {
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
pub(super) const FONT: &str = "sans-serif";

/// Registers DejaVu Sans as [`FONT`] with plotters once per process.
pub(super) fn register_fonts() -> Result<(), ReportError> {
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
    pub(super) fn size(&self) -> (u32, u32) {
        match self {
            Chart::Lines(panels) if panels.len() > 1 => (1280, SIZE.1),
            Chart::Bars(panels) if panels.len() > 1 => (1280, SIZE.1),
            _ => SIZE,
        }
    }

    /// Draws the chart on any plotters backend.
    pub(super) fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<(), ReportError> {
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

pub(super) fn draw_error<E: std::fmt::Debug>(e: E) -> ReportError {
    ReportError::Plot(format!("{e:?}"))
}

/// Axis range with some headroom; a flat or empty series still gets a usable range.
pub(super) fn range(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
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

pub(super) fn draw_lines<DB: DrawingBackend>(
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
pub(super) fn draw_legend<'a, DB: DrawingBackend + 'a>(
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
pub(super) fn with_legend_room(y0: f64, y1: f64, entries: usize) -> f64 {
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
pub(super) struct TickFormat {
    scale: f64,
    suffix: &'static str,
    decimals: usize,
}

impl TickFormat {
    /// For an axis from `lo` to `hi`. plotters labels it at a step of 1, 2 or 5
    /// times a power of ten, at most ten labels: the decimals follow that step.
    pub(super) fn new(lo: f64, hi: f64) -> Self {
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

    pub(super) fn label(&self, v: f64) -> String {
        if v == 0.0 {
            return "0".into();
        }
        format!("{:.*}{}", self.decimals, v / self.scale, self.suffix)
    }
}

/// Grouped bars: per category, one bar per series, side by side.
pub(super) fn draw_bars<DB: DrawingBackend>(
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

/// Grouped bars per category: the data's logical size, the device's logical
/// size (when the physical figure covers more than the data) and the physical size.
pub(super) fn draw_space_bars<DB: DrawingBackend>(
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
pub(super) fn category_label(x: f64, name: impl Fn(usize) -> Option<String>) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 {
        name(i as usize).unwrap_or_default()
    } else {
        String::new()
    }
}

pub(super) fn unit_for(max: f64) -> (f64, &'static str) {
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
