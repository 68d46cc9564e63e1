//! `csdchar report`: turns csdchar results (block, db, study, capacity,
//! estimate) into tables, SVG charts, one self-contained HTML page and
//! Parquet/CSV exports of every interval sample.
//!
//! [`build_report`] returns every artifact as bytes; the caller decides where
//! they go (the CLI writes them under `--out`).

pub mod analysis;
pub mod fio_json;
pub mod html;
pub mod io;
pub mod load;
pub mod merge;
pub mod model;
pub mod plots;
pub mod script;
pub mod tables;
pub mod text;
pub mod tpcc;

use std::path::{Path, PathBuf};

pub use load::{InputSpec, LoadedResult, ReportInput, load_inputs};
pub use model::INTERVAL_COLUMNS;
pub use tables::{Cell, Table};

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A result file is missing, malformed or of an unsupported schema.
    #[error("{path}: {message}")]
    Input {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// Bad options.
    #[error("{0}")]
    Usage(String),
    /// The analysis failed (polars).
    #[error("analysis: {0}")]
    Analysis(String),
    /// Drawing a chart failed.
    #[error("plot: {0}")]
    Plot(String),
}

impl ReportError {
    pub(crate) fn input(path: &Path, message: &str) -> Self {
        ReportError::Input {
            path: path.to_path_buf(),
            message: message.to_string(),
        }
    }

    /// Whether the user's input is at fault (exit code 2) rather than csdchar.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, ReportError::Input { .. } | ReportError::Usage(_))
    }
}

/// Everything a report consists of.
#[derive(Debug, Clone)]
pub struct Report {
    /// Tables in the order shown.
    pub tables: Vec<Table>,
    /// Charts.
    pub plots: Vec<plots::Plot>,
    /// Files to write, relative paths under the output directory.
    pub files: Vec<(PathBuf, Vec<u8>)>,
    /// The tables rendered for a terminal.
    pub terminal: String,
    /// Labels in first-seen order; the first is the baseline of comparisons.
    pub labels: Vec<String>,
    /// One line per input that did not run to its end ("FILE (LABEL): why"),
    /// for the caller to show; the tables and the page mark them too.
    pub notes: Vec<String>,
}

/// How the report treats its inputs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportOptions {
    /// Merge results of one run on several hosts first ([`merge`]).
    pub merge: bool,
}

/// Reads the inputs and builds every artifact. Nothing is written.
pub fn build_report(specs: &[InputSpec]) -> Result<Report, ReportError> {
    build_report_with(specs, ReportOptions::default())
}

/// [`build_report`] with options: `--merge` merges results of the same run
/// from several hosts (histograms and counts added) before anything else.
pub fn build_report_with(
    specs: &[InputSpec],
    options: ReportOptions,
) -> Result<Report, ReportError> {
    let inputs = load_inputs(specs)?;
    let (inputs, merge_notes) = if options.merge {
        merge::merge_inputs(inputs, specs)?
    } else {
        (inputs, Vec::new())
    };
    build_from_inputs(inputs, merge_notes)
}

/// Builds every artifact from results already read (and merged); `notes`
/// come first in the report's notes.
pub fn build_from_inputs(
    inputs: Vec<ReportInput>,
    notes: Vec<String>,
) -> Result<Report, ReportError> {
    let flat = model::flatten(&inputs);
    let frame = analysis::interval_frame(&flat.intervals)?;
    let stats = analysis::db_group_stats(&frame)?;
    let latency = tables::group_latency(&flat.db_steps);
    let tpcc = tpcc::tpcc_groups(&flat.tpcc);
    let io = io::io_groups(&flat.io);

    let mut labels: Vec<String> = Vec::new();
    for i in &inputs {
        if !labels.contains(&i.label) {
            labels.push(i.label.clone());
        }
    }
    let mut tables = Vec::new();
    // First, so nobody reads a partial run's figures as a whole one's.
    tables.extend(tables::incomplete_table(&inputs));
    let mut notes = notes;
    notes.extend(inputs.iter().filter_map(|i| {
        i.status_note()
            .map(|n| format!("{} ({}): {n}", i.path.display(), i.label))
    }));
    if !stats.is_empty() {
        tables.push(tables::db_summary_table(&stats, &latency));
        if let Some((base, others)) = labels.split_first() {
            for other in others {
                if let Some(t) = tables::db_comparison_table(base, other, &stats, &latency) {
                    tables.push(t);
                }
            }
        }
    }
    if !tpcc.is_empty() {
        tables.push(tpcc::tpcc_table(&tpcc));
        if let Some((base, others)) = labels.split_first() {
            for other in others {
                tables.extend(tpcc::tpcc_comparison_table(base, other, &tpcc));
            }
        }
    }
    if !io.is_empty() {
        tables.push(io::io_table(&io));
        if let Some((base, others)) = labels.split_first() {
            for other in others {
                tables.extend(io::io_comparison_table(base, other, &io));
            }
        }
    }
    if !flat.space.is_empty() {
        tables.push(tables::space_table(&flat.space));
    }
    if !flat.block.is_empty() {
        tables.push(tables::block_table(&flat.block));
    }
    tables.extend(script::script_statements_table(&inputs));
    let plots = plots::all_plots(&flat, &latency, &tpcc)?;

    let title = format!("csdchar report: {}", labels.join(" vs "));
    let page = html::render(&title, &inputs, &tables, &plots);
    let mut markdown = format!("# {title}\n\n");
    for t in &tables {
        markdown.push_str(&t.to_markdown());
    }
    let mut files: Vec<(PathBuf, Vec<u8>)> = vec![
        ("report.html".into(), page.into_bytes()),
        ("report.md".into(), markdown.into_bytes()),
        ("intervals.parquet".into(), analysis::to_parquet(&frame)?),
        ("intervals.csv".into(), analysis::to_csv(&frame)?),
    ];
    for t in &tables {
        files.push((
            PathBuf::from("tables").join(format!("{}.csv", t.name)),
            t.to_csv(),
        ));
    }
    for p in &plots {
        files.push((
            PathBuf::from("plots").join(format!("{}.svg", p.name)),
            p.svg.clone().into_bytes(),
        ));
        files.push((
            PathBuf::from("plots").join(format!("{}.png", p.name)),
            p.png.clone(),
        ));
    }
    let terminal = tables
        .iter()
        .map(Table::to_terminal)
        .collect::<Vec<_>>()
        .join("\n");
    Ok(Report {
        tables,
        plots,
        files,
        terminal,
        labels,
        notes,
    })
}

/// The interval columns as a Markdown table (docs/report.md carries it; a test keeps them in step).
pub fn interval_columns_markdown() -> String {
    let mut out = String::from("| column | type | meaning |\n|---|---|---|\n");
    for c in INTERVAL_COLUMNS {
        out.push_str(&format!("| `{}` | {} | {} |\n", c.name, c.dtype, c.doc));
    }
    out
}
