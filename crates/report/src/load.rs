//! Reading result files: which schema each one is, and what it is called in
//! the report (its label).

use std::path::{Path, PathBuf};

use csdchar_core::capacity::{CAPACITY_SCHEMA, CapacityResult};
use csdchar_core::estimate::{ESTIMATE_SCHEMA, EstimateResult};
use csdchar_core::result::block::{BLOCK_SCHEMA, BlockResult};
use csdchar_core::result::db::{DB_SCHEMA, DbResult, DbStep};
use csdchar_core::result::study::{STUDY_SCHEMA, StudyResult};

use crate::ReportError;

/// The schemas `csdchar report` reads.
pub const SUPPORTED_SCHEMAS: [&str; 5] = [
    BLOCK_SCHEMA,
    DB_SCHEMA,
    STUDY_SCHEMA,
    CAPACITY_SCHEMA,
    ESTIMATE_SCHEMA,
];

/// One parsed result.
#[derive(Debug, Clone)]
pub enum LoadedResult {
    /// `csdchar block`.
    Block(Box<BlockResult>),
    /// `csdchar db run`.
    Db(Box<DbResult>),
    /// `csdchar db study`.
    Study(Box<StudyResult>),
    /// `csdchar capacity`.
    Capacity(Box<CapacityResult>),
    /// `csdchar estimate`.
    Estimate(Box<EstimateResult>),
}

/// A result file and the label it is reported under.
#[derive(Debug, Clone)]
pub struct ReportInput {
    /// The file as found.
    pub path: PathBuf,
    /// `--label` name, else the device the result was measured on, else the file name.
    pub label: String,
    /// Its content.
    pub result: LoadedResult,
}

impl ReportInput {
    /// "block", "db", "study", "capacity" or "estimate".
    pub fn kind(&self) -> &'static str {
        match &self.result {
            LoadedResult::Block(_) => "block",
            LoadedResult::Db(_) => "db",
            LoadedResult::Study(_) => "study",
            LoadedResult::Capacity(_) => "capacity",
            LoadedResult::Estimate(_) => "estimate",
        }
    }

    /// Why the result does not cover the whole planned run (interrupted,
    /// stopped by an error, verification failed, estimate incomplete), in
    /// one line; None when it ran to its end.
    pub fn status_note(&self) -> Option<String> {
        use csdchar_core::result::RunStatus;
        let db_like = |interrupted: bool, error: &Option<String>| match error {
            Some(e) => Some(format!("failed: {}; partial result", one_line(e))),
            None => interrupted.then(|| "interrupted: partial result".to_string()),
        };
        match &self.result {
            LoadedResult::Block(b) => match b.status {
                RunStatus::Completed => None,
                RunStatus::Interrupted => Some("interrupted: partial result".into()),
                RunStatus::IoError => Some(format!(
                    "stopped by an I/O error: {}; partial result",
                    b.error
                        .as_ref()
                        .map_or("unknown error".to_string(), |e| one_line(&e.message))
                )),
                RunStatus::VerifyFailed => Some(format!(
                    "verification failed: {} bad blocks",
                    b.verify.as_ref().map_or(0, |v| v.bad_block_count)
                )),
            },
            LoadedResult::Db(d) => db_like(d.interrupted, &d.error),
            LoadedResult::Study(s) => db_like(s.interrupted, &s.error),
            LoadedResult::Estimate(e) => (!e.complete)
                .then(|| "incomplete: not every chunk was read; figures extrapolated".into()),
            LoadedResult::Capacity(_) => None,
        }
    }
}

/// Error texts from results can span lines; a note is one.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A path to read, with the label given to everything under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSpec {
    /// A result file or a directory searched for `*.json`.
    pub path: PathBuf,
    /// `--label NAME=PATH`.
    pub label: Option<String>,
}

/// Expands directories (recursively, `*.json`, sorted) and parses every file.
/// Any file that is not a csdchar result of a supported schema is an error
/// naming it: a report silently missing a run would mislead.
pub fn load_inputs(specs: &[InputSpec]) -> Result<Vec<ReportInput>, ReportError> {
    let mut out: Vec<ReportInput> = Vec::new();
    for spec in specs {
        let files = if spec.path.is_dir() {
            let mut files = Vec::new();
            collect_json(&spec.path, &mut files)?;
            if files.is_empty() {
                return Err(ReportError::input(
                    &spec.path,
                    "directory holds no *.json result files",
                ));
            }
            files
        } else if spec.path.exists() {
            vec![spec.path.clone()]
        } else {
            return Err(ReportError::input(&spec.path, "no such file or directory"));
        };
        for file in files {
            // The same file named twice (positional and --label) counts once; the label wins.
            if let Some(seen) = out.iter_mut().find(|i| same_file(&i.path, &file)) {
                if let Some(l) = &spec.label {
                    seen.label = l.clone();
                }
                continue;
            }
            let result = parse_result(&file, &read(&file)?)?;
            let label = spec
                .label
                .clone()
                .or_else(|| device_of(&result))
                .unwrap_or_else(|| file_stem(&file));
            out.push(ReportInput {
                path: file,
                label,
                result,
            });
        }
    }
    if out.is_empty() {
        return Err(ReportError::Usage(
            "RESULT: give at least one result file or directory".into(),
        ));
    }
    Ok(out)
}

fn read(path: &Path) -> Result<Vec<u8>, ReportError> {
    std::fs::read(path).map_err(|e| ReportError::input(path, &format!("cannot read: {e}")))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn collect_json(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), ReportError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| ReportError::input(dir, &format!("cannot list: {e}")))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect_json(&p, files)?;
        } else if p.extension().is_some_and(|e| e == "json") {
            files.push(p);
        }
    }
    Ok(())
}

/// Parses one result file's bytes, by its `schema` field.
pub fn parse_result(path: &Path, bytes: &[u8]) -> Result<LoadedResult, ReportError> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| ReportError::input(path, &format!("not JSON ({e})")))?;
    let Some(schema) = value.get("schema").and_then(|s| s.as_str()) else {
        return Err(ReportError::input(
            path,
            "not a csdchar result (no \"schema\" field)",
        ));
    };
    let schema = schema.to_string();
    let bad =
        |e: serde_json::Error| ReportError::input(path, &format!("does not match {schema}: {e}"));
    Ok(match schema.as_str() {
        BLOCK_SCHEMA => LoadedResult::Block(serde_json::from_value(value).map_err(bad)?),
        DB_SCHEMA => LoadedResult::Db(serde_json::from_value(value).map_err(bad)?),
        STUDY_SCHEMA => LoadedResult::Study(serde_json::from_value(value).map_err(bad)?),
        CAPACITY_SCHEMA => LoadedResult::Capacity(serde_json::from_value(value).map_err(bad)?),
        ESTIMATE_SCHEMA => LoadedResult::Estimate(serde_json::from_value(value).map_err(bad)?),
        other => {
            return Err(ReportError::input(
                path,
                &format!(
                    "schema {other} is not supported (reads {})",
                    SUPPORTED_SCHEMAS.join(", ")
                ),
            ));
        }
    })
}

fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// The device a result was measured on, when it recorded one.
fn device_of(result: &LoadedResult) -> Option<String> {
    let from_steps = |steps: &[DbStep]| {
        steps.iter().find_map(|s| {
            s.after
                .as_ref()
                .or(s.before.as_ref())
                .and_then(|snap| snap.device.as_ref())
                .map(|d| d.device.clone())
        })
    };
    match result {
        LoadedResult::Block(b) => b
            .target
            .device
            .clone()
            .or_else(|| b.capacity.as_ref().map(|c| c.after.device.clone())),
        LoadedResult::Db(d) => from_steps(&d.steps),
        LoadedResult::Study(s) => s.runs.iter().find_map(|r| from_steps(&r.steps)),
        LoadedResult::Capacity(c) => Some(c.snapshot.device.clone()),
        LoadedResult::Estimate(_) => None,
    }
    .filter(|d| !d.is_empty())
}
