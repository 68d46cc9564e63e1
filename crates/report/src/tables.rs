//! The report's tables: built once as data, rendered for the terminal
//! (comfy-table), Markdown, CSV and HTML.

use std::collections::BTreeMap;

use crate::analysis::DbGroupStats;
use crate::model::{BlockDirRow, BlockRow, DbKey, DbStepRow, SpaceRow};

/// One cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Text.
    Text(String),
    /// A number shown with this many decimals (CSV keeps full precision).
    Num(f64, usize),
    /// A ratio, shown as 1.234x.
    Ratio(f64),
    /// A fraction shown as a signed percentage (0.25 → +25.0%).
    Pct(f64),
    /// A byte count, shown in binary units.
    Bytes(f64),
    /// A change already in percent, shown signed (17.49 → +17.5%); CSV keeps the percent.
    Change(f64),
    /// No value.
    Empty,
}

impl Cell {
    pub(crate) fn num(v: Option<f64>, decimals: usize) -> Cell {
        match v {
            Some(v) if v.is_finite() => Cell::Num(v, decimals),
            _ => Cell::Empty,
        }
    }

    /// The change from `a` to `b` in percent; empty when `a` is zero or either is missing.
    pub(crate) fn change(a: Option<f64>, b: Option<f64>) -> Cell {
        match (a, b) {
            (Some(a), Some(b)) if a != 0.0 && (b / a).is_finite() => {
                Cell::Change((b / a - 1.0) * 100.0)
            }
            _ => Cell::Empty,
        }
    }

    fn ratio(v: Option<f64>) -> Cell {
        match v {
            Some(v) if v.is_finite() => Cell::Ratio(v),
            _ => Cell::Empty,
        }
    }

    /// As shown to people.
    pub fn display(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Num(v, d) => group_thousands(&format!("{v:.d$}", d = *d)),
            Cell::Ratio(v) => format!("{v:.3}x"),
            Cell::Pct(v) => format!("{:+.1}%", v * 100.0),
            Cell::Bytes(v) => human_bytes(*v),
            Cell::Change(v) => format!("{v:+.1}%"),
            Cell::Empty => "-".to_string(),
        }
    }

    /// As written to CSV: full precision, empty for no value.
    pub fn raw(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Num(v, _) | Cell::Ratio(v) | Cell::Pct(v) | Cell::Bytes(v) | Cell::Change(v) => {
                format!("{v}")
            }
            Cell::Empty => String::new(),
        }
    }

    /// Whether it is right-aligned (numbers).
    pub fn is_numeric(&self) -> bool {
        !matches!(self, Cell::Text(_))
    }
}

/// 1234567.5 → "1,234,567.5".
fn group_thousands(s: &str) -> String {
    let (sign, rest) = s.strip_prefix('-').map_or(("", s), |r| ("-", r));
    let (int, frac) = rest
        .split_once('.')
        .map_or((rest, None), |(i, f)| (i, Some(f)));
    let mut grouped = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

/// Bytes in binary units with three significant figures or so.
pub fn human_bytes(v: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut x = v;
    let mut u = 0;
    while x.abs() >= 1024.0 && u < UNITS.len() - 1 {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{x:.0} B")
    } else {
        format!("{x:.2} {}", UNITS[u])
    }
}

/// A titled table.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// File-name stem for its CSV (tables/NAME.csv).
    pub name: String,
    /// Heading.
    pub title: String,
    /// One line under the heading saying how to read it.
    pub note: String,
    /// Column headers.
    pub columns: Vec<String>,
    /// Rows, each as long as `columns`.
    pub rows: Vec<Vec<Cell>>,
    /// Columns from this index on are written to the CSV only, keeping the
    /// terminal, Markdown and HTML tables readable; None: every column is shown.
    pub csv_only_from: Option<usize>,
}

impl Table {
    /// The columns shown outside the CSV.
    pub fn shown_columns(&self) -> &[String] {
        &self.columns[..self.shown()]
    }

    /// The cells of `row` shown outside the CSV.
    pub fn shown_cells<'a>(&self, row: &'a [Cell]) -> &'a [Cell] {
        &row[..self.shown().min(row.len())]
    }

    fn shown(&self) -> usize {
        self.csv_only_from
            .map_or(self.columns.len(), |n| n.min(self.columns.len()))
    }

    /// For the terminal.
    pub fn to_terminal(&self) -> String {
        let mut t = comfy_table::Table::new();
        t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
        t.set_header(self.shown_columns().to_vec());
        for row in &self.rows {
            t.add_row(self.shown_cells(row).iter().map(|c| {
                let cell = comfy_table::Cell::new(c.display());
                if c.is_numeric() {
                    cell.set_alignment(comfy_table::CellAlignment::Right)
                } else {
                    cell
                }
            }));
        }
        format!("{}\n{}\n{t}\n", self.title, self.note)
    }

    /// As a Markdown section.
    pub fn to_markdown(&self) -> String {
        let esc = |s: &str| s.replace('|', "\\|");
        let mut out = format!("## {}\n\n{}\n\n", self.title, self.note);
        out.push_str(&format!(
            "| {} |\n",
            self.shown_columns()
                .iter()
                .map(|c| esc(c))
                .collect::<Vec<_>>()
                .join(" | ")
        ));
        let align: Vec<&str> = (0..self.shown())
            .map(|i| {
                if self.rows.iter().any(|r| r[i].is_numeric()) {
                    "---:"
                } else {
                    "---"
                }
            })
            .collect();
        out.push_str(&format!("|{}|\n", align.join("|")));
        for row in &self.rows {
            out.push_str(&format!(
                "| {} |\n",
                self.shown_cells(row)
                    .iter()
                    .map(|c| esc(&c.display()))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ));
        }
        out.push('\n');
        out
    }

    /// As CSV (RFC 4180 quoting), raw values.
    pub fn to_csv(&self) -> Vec<u8> {
        let quote = |s: &str| {
            if s.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let mut out = String::new();
        let line =
            |cells: Vec<String>| cells.iter().map(|c| quote(c)).collect::<Vec<_>>().join(",");
        out.push_str(&line(self.columns.clone()));
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row.iter().map(Cell::raw).collect()));
            out.push('\n');
        }
        out.into_bytes()
    }
}

/// A fillfactor cell (see [`ff_words`]).
pub(crate) fn ff_text(workload: &str, ff: Option<i64>) -> Cell {
    Cell::Text(ff_words(workload, ff))
}

/// A fillfactor in words, the same in every table: none set is
/// PostgreSQL's 100, except for TPC-C, whose tables then have BenchmarkSQL's
/// own per-table fillfactors.
pub(crate) fn ff_words(workload: &str, ff: Option<i64>) -> String {
    match ff {
        Some(f) => f.to_string(),
        None if workload == "tpcc" => "BenchmarkSQL's per table".to_string(),
        None => "100 (default)".to_string(),
    }
}

/// Whole-step latency of a group; several runs in one group are combined
/// weighting by transactions (exact for the mean, an approximation for percentiles).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GroupLatency {
    /// Mean, ms.
    pub avg_ms: Option<f64>,
    /// 95th percentile, ms.
    pub p95_ms: Option<f64>,
    /// 99th percentile, ms.
    pub p99_ms: Option<f64>,
}

/// The latency of every group key, from the steps.
pub fn group_latency(steps: &[DbStepRow]) -> BTreeMap<DbKey, GroupLatency> {
    let mut by_key: BTreeMap<DbKey, Vec<&DbStepRow>> = BTreeMap::new();
    for s in steps {
        by_key.entry(s.key.clone()).or_default().push(s);
    }
    by_key
        .into_iter()
        .map(|(k, v)| {
            let weighted = |g: fn(&DbStepRow) -> Option<f64>| {
                let (mut sum, mut w) = (0.0, 0.0);
                for s in &v {
                    let x = g(s)?;
                    let n = s.transactions.max(1) as f64;
                    sum += x * n;
                    w += n;
                }
                (w > 0.0).then(|| sum / w)
            };
            let lat = GroupLatency {
                avg_ms: weighted(|s| Some(s.lat_avg_ms)),
                p95_ms: weighted(|s| s.lat_p95_ms),
                p99_ms: weighted(|s| s.lat_p99_ms),
            };
            (k, lat)
        })
        .collect()
}

/// Per label × workload × fillfactor × threads: interval TPS/QPS moments and latency.
pub fn db_summary_table(stats: &[DbGroupStats], latency: &BTreeMap<DbKey, GroupLatency>) -> Table {
    let columns = [
        "label",
        "workload",
        "fillfactor",
        "threads",
        "intervals",
        "tps avg",
        "tps variance",
        "tps cv",
        "qps avg",
        "qps variance",
        "qps cv",
        "reads/s",
        "writes/s",
        "others/s",
        "lat avg ms",
        "lat p95 ms",
        "lat p99 ms",
    ];
    let rows = stats
        .iter()
        .map(|g| {
            let lat = latency.get(&g.key).copied().unwrap_or_default();
            let mut row = vec![
                Cell::Text(g.key.label.clone()),
                Cell::Text(g.key.workload.clone()),
                ff_text(&g.key.workload, g.key.fillfactor),
                Cell::Num(g.key.threads as f64, 0),
                Cell::Num(g.intervals as f64, 0),
            ];
            for s in [&g.tps, &g.qps] {
                row.push(Cell::num(Some(s.mean), 2));
                row.push(Cell::num(s.variance, 2));
                row.push(Cell::num(s.cv, 4));
            }
            row.push(Cell::num(Some(g.reads.mean), 2));
            row.push(Cell::num(Some(g.writes.mean), 2));
            row.push(Cell::num(Some(g.others.mean), 2));
            row.push(Cell::num(lat.avg_ms, 3));
            row.push(Cell::num(lat.p95_ms, 3));
            row.push(Cell::num(lat.p99_ms, 3));
            row
        })
        .collect();
    Table {
        name: "db-summary".into(),
        title: "Database runs: interval TPS and QPS, latency".into(),
        note: "Moments over the per-interval samples; variance is the sample variance (n-1), cv = stddev/avg. Latency is over all transactions of the step.".into(),
        columns: columns.iter().map(|s| s.to_string()).collect(),
        rows,
        csv_only_from: None,
    }
}

/// Device `other` against `base`, per workload × fillfactor × threads both have.
pub fn db_comparison_table(
    base: &str,
    other: &str,
    stats: &[DbGroupStats],
    latency: &BTreeMap<DbKey, GroupLatency>,
) -> Option<Table> {
    let find = |label: &str, k: &DbKey| {
        stats.iter().find(|g| {
            g.key.label == label
                && g.key.workload == k.workload
                && g.key.fillfactor == k.fillfactor
                && g.key.threads == k.threads
        })
    };
    let div = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    };
    let mut rows = Vec::new();
    for a in stats.iter().filter(|g| g.key.label == base) {
        let Some(b) = find(other, &a.key) else {
            continue;
        };
        let la = latency.get(&a.key).copied().unwrap_or_default();
        let lb = latency.get(&b.key).copied().unwrap_or_default();
        let trio = |x: Option<f64>, y: Option<f64>, d: usize| {
            [Cell::num(x, d), Cell::num(y, d), Cell::ratio(div(y, x))]
        };
        let mut row = vec![
            Cell::Text(a.key.workload.clone()),
            ff_text(&a.key.workload, a.key.fillfactor),
            Cell::Num(a.key.threads as f64, 0),
        ];
        row.extend(trio(Some(a.tps.mean), Some(b.tps.mean), 2));
        row.extend(trio(Some(a.qps.mean), Some(b.qps.mean), 2));
        row.extend(trio(la.avg_ms, lb.avg_ms, 3));
        row.extend(trio(la.p99_ms, lb.p99_ms, 3));
        row.extend(trio(a.tps.variance, b.tps.variance, 2));
        rows.push(row);
    }
    if rows.is_empty() {
        return None;
    }
    let mut columns = vec![
        "workload".to_string(),
        "fillfactor".into(),
        "threads".into(),
    ];
    for what in ["tps", "qps", "lat avg ms", "lat p99 ms", "tps variance"] {
        columns.push(format!("{what} {base}"));
        columns.push(format!("{what} {other}"));
        columns.push(format!("{what} ratio"));
    }
    Some(Table {
        name: format!("compare-{}-vs-{}", slug(other), slug(base)),
        title: format!("{other} vs {base}"),
        note: format!(
            "Ratios are {other} / {base}: above 1 means {other} is higher (better for TPS/QPS, worse for latency and variance)."
        ),
        columns,
        rows,
        csv_only_from: None,
    })
}

/// Space: logical vs physical.
pub fn space_table(rows: &[SpaceRow]) -> Table {
    let columns = [
        "label",
        "origin",
        "what",
        "fillfactor",
        "logical",
        "device logical",
        "physical",
        "physical stddev",
        "ratio",
        "logical growth",
        "physical growth",
        "drive change",
        "load s",
        "TPS",
        "latency avg ms",
        "physical from",
    ];
    let b = |v: Option<f64>| v.map_or(Cell::Empty, Cell::Bytes);
    let p = |v: Option<f64>| v.map_or(Cell::Empty, Cell::Pct);
    Table {
        name: "space".into(),
        title: "Space: logical vs physical".into(),
        note: "logical: the data (tables, indexes, TOAST; or what the device holds); physical: what the drive stores for 'device logical' (a study: the relation files under the drive's model; physical stddev: over its repeated loads; drive change: the drive's whole change over the load, WAL and file system included); growth relative to the first row of the same label and origin; a study's load time, TPS and mean latency beside its sizes (on ZFS the ratio is the tables' compressratio: the seed's columns).".into(),
        columns: columns.iter().map(|s| s.to_string()).collect(),
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    Cell::Text(r.label.clone()),
                    Cell::Text(r.origin.to_string()),
                    Cell::Text(r.what.clone()),
                    r.fillfactor.map_or(Cell::Empty, |f| Cell::Num(f as f64, 0)),
                    b(r.logical_bytes),
                    b(r.device_logical_bytes),
                    b(r.physical_bytes),
                    b(r.physical_stddev),
                    Cell::ratio(r.ratio),
                    p(r.logical_growth),
                    p(r.physical_growth),
                    b(r.drive_bytes),
                    r.load_s.map_or(Cell::Empty, |v| Cell::Num(v, 1)),
                    r.tps.map_or(Cell::Empty, |v| Cell::Num(v, 1)),
                    r.lat_avg_ms.map_or(Cell::Empty, |v| Cell::Num(v, 3)),
                    Cell::Text(r.physical_source.clone()),
                ]
            })
            .collect(),
        csv_only_from: None,
    }
}

/// Block runs: per job and in total, with the achieved compressibility.
pub fn block_table(rows: &[BlockRow]) -> Table {
    let columns = [
        "label",
        "rw",
        "bs",
        "iodepth",
        "jobs",
        "job",
        "read iops",
        "read MB/s",
        "read lat avg us",
        "read lat p99 us",
        "write iops",
        "write MB/s",
        "write lat avg us",
        "write lat p99 us",
        "compress %",
        "target ratio",
        "lz4 ratio",
        "deflate ratio",
        "device ratio",
    ];
    let dir = |d: &Option<BlockDirRow>| match d {
        Some(d) => vec![
            Cell::Num(d.iops, 0),
            Cell::Num(d.bw_bytes_per_s / 1e6, 1),
            Cell::Num(d.lat_mean_us, 1),
            Cell::num(d.lat_p99_us, 1),
        ],
        None => vec![Cell::Empty; 4],
    };
    Table {
        name: "block".into(),
        title: "Block runs".into(),
        note: "MB/s = 10^6 bytes/s. Ratios are logical/stored: target from --compress, lz4/deflate measured per 4 KiB on the written data, device from the drive's counters.".into(),
        columns: columns.iter().map(|s| s.to_string()).collect(),
        rows: rows
            .iter()
            .map(|r| {
                let mut row = vec![
                    Cell::Text(r.label.clone()),
                    Cell::Text(r.rw.clone()),
                    Cell::Text(human_bytes(r.bs as f64)),
                    Cell::Num(r.iodepth as f64, 0),
                    Cell::Num(r.numjobs as f64, 0),
                    Cell::Text(r.job.map_or("all".to_string(), |j| j.to_string())),
                ];
                row.extend(dir(&r.read));
                row.extend(dir(&r.write));
                row.push(r.compress_pct.map_or(Cell::Empty, |c| Cell::Num(c as f64, 0)));
                row.push(Cell::ratio(r.target_ratio));
                row.push(Cell::ratio(r.lz4_ratio));
                row.push(Cell::ratio(r.deflate_ratio));
                row.push(Cell::ratio(r.device_ratio));
                row
            })
            .collect(),
        csv_only_from: None,
    }
}

/// A file-name-safe form of a label.
pub fn slug(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() { "_".into() } else { out }
}

/// The inputs that did not run to their end, one row each (see
/// [`ReportInput::status_note`](crate::load::ReportInput::status_note)); None when all did.
pub fn incomplete_table(inputs: &[crate::load::ReportInput]) -> Option<Table> {
    let rows: Vec<Vec<Cell>> = inputs
        .iter()
        .filter_map(|i| {
            i.status_note().map(|note| {
                vec![
                    Cell::Text(i.label.clone()),
                    Cell::Text(i.kind().to_string()),
                    Cell::Text(i.path.display().to_string()),
                    Cell::Text(note),
                ]
            })
        })
        .collect();
    (!rows.is_empty()).then(|| Table {
        name: "incomplete".into(),
        title: "Incomplete inputs".into(),
        note: "These runs stopped early; their figures below cover only the part that ran.".into(),
        columns: ["label", "kind", "file", "status"]
            .map(String::from)
            .to_vec(),
        rows,
        csv_only_from: None,
    })
}
