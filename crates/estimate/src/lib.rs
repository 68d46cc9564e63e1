//! The estimator engine behind `csdchar estimate` and the fillfactor study:
//! compress every chunk of the inputs on its own, as a drive with per-4 KiB
//! compression does, on all cores; optionally only a sample of the chunks,
//! with a confidence interval. A PostgreSQL data directory among the inputs
//! is broken down by relation and page kind.
//!
//! Its own crate because it is an engine of its own (a file walk and
//! compression on all cores, with fault reporting) that the CLI, the study
//! in `csdchar-dbload` and tests all call; it needs only the models in
//! `csdchar-core` and block-device geometry from `csdchar-devices`.
//! Naming relations over a database connection is the database's side
//! (`csdchar_dbload::snapshot::name_relations`).

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use csdchar_core::compressibility::{Codec, PageCompressor, is_same_filled};
use csdchar_core::estimate::{
    ChunkSample, ESTIMATE_SCHEMA, Estimate, EstimateResult, FileEstimate, PgBreakdown, PgFileKind,
    PgKindEstimate, PgPath, PgRelationEstimate, classify_pg_path, in_sample, pg_page_kind,
};

/// What to estimate and how.
pub struct EstimatePlan {
    /// Files, directories (walked) or block devices.
    pub paths: Vec<PathBuf>,
    /// Per-chunk model.
    pub codec: Codec,
    /// Compression unit.
    pub chunk: usize,
    /// % of chunks to compress.
    pub sample_pct: f64,
    /// Sample seed.
    pub seed: u64,
    /// Worker threads.
    pub threads: usize,
    /// Pages compressing to this many bytes or more count as stored whole
    /// (zram's rule, [`csdchar_core::compressibility::zram_whole_page_at`]).
    pub whole_page_at: Option<usize>,
}

/// One input.
struct Input {
    path: PathBuf,
    /// Path inside a PostgreSQL data directory, and that directory.
    pg: Option<(PathBuf, String)>,
    len: u64,
    allocated: u64,
}

/// The optimistic bound (dynamic deflate) is measured on this % of the chunks
/// the main model sees, and extrapolated with its confidence interval.
const BOUND_SAMPLE_PCT: f64 = 10.0;
const BOUND_SEED: u64 = 0xB0_B0;

/// Chunks read per unit of work (64 MiB of 4 KiB chunks).
const UNIT_CHUNKS: u64 = 16 * 1024;

/// Lists the inputs; an unreadable path is an error naming it.
fn collect(paths: &[PathBuf]) -> Result<Vec<Input>, String> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| format!("PATH: {}: {e}", p.display()))?;
        if meta.is_dir() {
            let pg_root = p.join("PG_VERSION").exists().then(|| p.clone());
            walk(p, pg_root.as_deref(), &mut out)?;
        } else if meta.file_type().is_block_device() {
            let f = File::open(p).map_err(|e| format!("PATH: {}: {e}", p.display()))?;
            let (len, _) = csdchar_devices::block_geometry(&f)
                .map_err(|e| format!("PATH: {}: {e}", p.display()))?;
            out.push(Input {
                path: p.clone(),
                pg: None,
                len,
                allocated: len,
            });
        } else if meta.is_file() {
            readable(p)?;
            out.push(Input {
                path: p.clone(),
                pg: None,
                len: meta.len(),
                allocated: csdchar_devices::allocated_bytes(p).unwrap_or(meta.blocks() * 512),
            });
        } else {
            return Err(format!(
                "PATH: {} is not a file, directory or block device",
                p.display()
            ));
        }
    }
    Ok(out)
}

/// An input that cannot be opened is bad input, found before any work: it
/// would otherwise be left out of the figures (or end the run as incomplete).
fn readable(path: &Path) -> Result<(), String> {
    File::open(path)
        .map(drop)
        .map_err(|e| format!("PATH: {}: cannot read: {e}", path.display()))
}

fn walk(dir: &Path, pg_root: Option<&Path>, out: &mut Vec<Input>) -> Result<(), String> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("PATH: {}: {e}", dir.display()))?
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let Ok(ft) = e.file_type() else { continue };
        let path = e.path();
        if ft.is_dir() {
            walk(&path, pg_root, out)?;
        } else if ft.is_file() {
            let Ok(meta) = e.metadata() else { continue };
            readable(&path)?;
            let pg = pg_root.map(|r| {
                let rel = path
                    .strip_prefix(r)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned();
                (r.to_path_buf(), rel)
            });
            out.push(Input {
                allocated: csdchar_devices::allocated_bytes(&path).unwrap_or(meta.blocks() * 512),
                path,
                pg,
                len: meta.len(),
            });
        }
    }
    Ok(())
}

#[derive(Default, Clone, Copy)]
struct UnitResult {
    main: ChunkSample,
    bound: ChunkSample,
}

/// Runs the estimate. `interrupt` stops it early (the result says so). An
/// input that cannot be read is an `Err` naming it; a read that fails later
/// ends the run with an incomplete result (see [`run_reporting_faults`]).
pub fn run(
    plan: &EstimatePlan,
    interrupt: &AtomicBool,
    started_at: String,
) -> Result<EstimateResult, String> {
    run_reporting_faults(plan, interrupt, started_at).map(|(r, _)| r)
}

/// [`run`], also returning the read error that stopped the run early, if
/// one did (the result then has `complete: false`).
pub fn run_reporting_faults(
    plan: &EstimatePlan,
    interrupt: &AtomicBool,
    started_at: String,
) -> Result<(EstimateResult, Option<String>), String> {
    let inputs = collect(&plan.paths)?;
    // The first read error; it stops every worker.
    let fault: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    let stop = AtomicBool::new(false);
    let record_fault = |msg: String| {
        let mut f = fault.lock().unwrap_or_else(|p| p.into_inner());
        f.get_or_insert(msg);
        stop.store(true, Ordering::Relaxed);
    };
    let chunk = plan.chunk as u64;
    let bound = plan.codec == Codec::DeflateFixed;
    // Units of work: (input, first chunk, end chunk).
    let mut units = Vec::new();
    for (i, inp) in inputs.iter().enumerate() {
        let chunks = inp.len.div_ceil(chunk);
        let mut c = 0;
        while c < chunks {
            units.push((i, c, (c + UNIT_CHUNKS).min(chunks)));
            c += UNIT_CHUNKS;
        }
    }
    let next = AtomicUsize::new(0);
    let t0 = Instant::now();
    let threads = plan.threads.max(1);
    let mut per_unit: Vec<Option<UnitResult>> = vec![None; units.len()];
    let results: Vec<Vec<(usize, UnitResult)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut main_c =
                        PageCompressor::new(plan.codec).storing_whole_at(plan.whole_page_at);
                    let mut bound_c = bound.then(|| PageCompressor::new(Codec::Deflate));
                    let mut buf = vec![0u8; (UNIT_CHUNKS * chunk) as usize];
                    let mut open: Option<(usize, File)> = None;
                    let mut done = Vec::new();
                    loop {
                        if interrupt.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(i, first, end)) = units.get(k) else {
                            break;
                        };
                        if open.as_ref().is_none_or(|(j, _)| *j != i) {
                            match File::open(&inputs[i].path) {
                                Ok(f) => open = Some((i, f)),
                                Err(e) => {
                                    record_fault(format!(
                                        "PATH: {}: cannot read: {e}",
                                        inputs[i].path.display()
                                    ));
                                    break;
                                }
                            }
                        }
                        let f = &open.as_ref().expect("opened above").1;
                        let len = inputs[i].len;
                        let mut r = UnitResult::default();
                        let mut measure = |index: u64, data: &[u8], r: &mut UnitResult| {
                            // Same-filled chunks cost nothing, as on zram and CSDs.
                            let same = is_same_filled(data);
                            let stored = if same { 0 } else { main_c.stored_len(data) };
                            r.main.add(data.len(), stored);
                            // The optimistic bound is extrapolated from a sub-sample.
                            if let Some(b) = bound_c.as_mut()
                                && in_sample(
                                    plan.seed ^ BOUND_SEED,
                                    i as u64,
                                    index,
                                    BOUND_SAMPLE_PCT,
                                )
                            {
                                r.bound
                                    .add(data.len(), if same { 0 } else { b.stored_len(data) });
                            }
                        };
                        if plan.sample_pct >= 100.0 {
                            let start = first * chunk;
                            let n = ((end * chunk).min(len) - start) as usize;
                            if let Err(e) = f.read_exact_at(&mut buf[..n], start) {
                                record_fault(read_fault(&inputs[i].path, start, &e));
                                break;
                            }
                            for (k, c) in buf[..n].chunks(plan.chunk).enumerate() {
                                measure(first + k as u64, c, &mut r);
                            }
                        } else {
                            for c in first..end {
                                if !in_sample(plan.seed, i as u64, c, plan.sample_pct) {
                                    continue;
                                }
                                let start = c * chunk;
                                let n = ((start + chunk).min(len) - start) as usize;
                                if let Err(e) = f.read_exact_at(&mut buf[..n], start) {
                                    record_fault(read_fault(&inputs[i].path, start, &e));
                                    break;
                                }
                                measure(c, &buf[..n], &mut r);
                            }
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                        }
                        done.push((k, r));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("estimate worker panicked"))
            .collect()
    });
    for (k, r) in results.into_iter().flatten() {
        per_unit[k] = Some(r);
    }
    let complete = per_unit.iter().all(Option::is_some);
    let elapsed = t0.elapsed().as_secs_f64();

    // Per input: merge its units, extrapolate to its size.
    let mut main_by_input = vec![ChunkSample::default(); inputs.len()];
    let mut bound_by_input = vec![ChunkSample::default(); inputs.len()];
    for (u, r) in units.iter().zip(&per_unit) {
        if let Some(r) = r {
            main_by_input[u.0].merge(&r.main);
            bound_by_input[u.0].merge(&r.bound);
        }
    }
    let mut pg_kinds: Vec<Option<PgFileKind>> = Vec::with_capacity(inputs.len());
    let mut main_kind: BTreeMap<(Option<u32>, u32), PgFileKind> = BTreeMap::new();
    for inp in &inputs {
        let kind = inp.pg.as_ref().map(|(_, rel)| match classify_pg_path(rel) {
            PgPath::Wal => PgFileKind::Wal,
            PgPath::Other => PgFileKind::Other,
            PgPath::Relation {
                fork: PgFileKind::Relation,
                db,
                relfilenode,
                segment,
            } => {
                // Segments sort after segment 0, which decides the kind.
                *main_kind.entry((db, relfilenode)).or_insert_with(|| {
                    if segment != 0 {
                        return PgFileKind::Relation;
                    }
                    first_page_kind(&inp.path).unwrap_or(PgFileKind::Relation)
                })
            }
            PgPath::Relation { fork, .. } => fork,
        });
        pg_kinds.push(kind);
    }
    let files: Vec<FileEstimate> = inputs
        .iter()
        .enumerate()
        .map(|(i, inp)| FileEstimate {
            path: inp.path.display().to_string(),
            logical_bytes: inp.len,
            allocated_bytes: inp.allocated,
            estimate: main_by_input[i].extrapolate(inp.len.div_ceil(chunk), inp.len),
            pg_kind: pg_kinds[i],
        })
        .collect();
    let total = Estimate::sum(files.iter().map(|f| &f.estimate));
    let optimistic = bound.then(|| {
        let parts: Vec<Estimate> = inputs
            .iter()
            .enumerate()
            .map(|(i, inp)| bound_by_input[i].extrapolate(inp.len.div_ceil(chunk), inp.len))
            .collect();
        Estimate::sum(parts.iter())
    });
    let postgres = pg_breakdown(&inputs, &files, &main_kind);
    let fault = fault.into_inner().unwrap_or_else(|p| p.into_inner());
    let result = EstimateResult {
        schema: ESTIMATE_SCHEMA.to_string(),
        tool: csdchar_core::result::ToolInfo::current(),
        started_at,
        complete,
        codec: plan.codec,
        chunk,
        sample_pct: plan.sample_pct,
        seed: plan.seed,
        threads: threads as u32,
        elapsed_s: elapsed,
        throughput_bytes_per_s: total.logical_bytes as f64 / elapsed.max(1e-9),
        files,
        total,
        optimistic,
        postgres,
        zfs: plan.paths.first().and_then(|p| {
            let d = csdchar_devices::zfs::dataset_of(p)?;
            let compression = csdchar_devices::zfs::usage(&d)
                .map(|u| u.compression)
                .unwrap_or_else(|_| "unknown".into());
            Some(format!("{d} (compression {compression})"))
        }),
    };
    Ok((result, fault))
}

fn read_fault(path: &Path, offset: u64, e: &std::io::Error) -> String {
    // A short read means the file shrank after it was listed.
    let what = if e.kind() == std::io::ErrorKind::UnexpectedEof {
        "it became shorter while being read".to_string()
    } else {
        e.to_string()
    };
    format!(
        "PATH: {}: read at offset {offset} failed: {what}",
        path.display()
    )
}

/// Heap or index from the first 8 KiB page of a main fork.
fn first_page_kind(path: &Path) -> Option<PgFileKind> {
    let f = File::open(path).ok()?;
    let mut page = vec![0u8; 8192];
    f.read_exact_at(&mut page, 0).ok()?;
    pg_page_kind(&page)
}

fn pg_breakdown(
    inputs: &[Input],
    files: &[FileEstimate],
    main_kind: &BTreeMap<(Option<u32>, u32), PgFileKind>,
) -> Option<PgBreakdown> {
    let data_dir = inputs
        .iter()
        .find_map(|i| i.pg.as_ref().map(|(d, _)| d.display().to_string()))?;
    let mut kinds: BTreeMap<PgFileKind, (u64, Vec<Estimate>)> = BTreeMap::new();
    // Per relation: its main fork's estimates, its maps' bytes, its main
    // fork's allocated bytes.
    type Parts = (Vec<Estimate>, u64, u64);
    let mut rels: BTreeMap<(Option<u32>, u32), Parts> = BTreeMap::new();
    for (inp, f) in inputs.iter().zip(files) {
        let (Some((_, rel)), Some(kind)) = (&inp.pg, f.pg_kind) else {
            continue;
        };
        let e = kinds.entry(kind).or_default();
        e.0 += 1;
        e.1.push(f.estimate);
        if let PgPath::Relation {
            db,
            relfilenode,
            fork,
            ..
        } = classify_pg_path(rel)
        {
            let r = rels.entry((db, relfilenode)).or_default();
            if fork == PgFileKind::Relation {
                r.0.push(f.estimate);
                r.2 += f.allocated_bytes;
            } else {
                r.1 += f.logical_bytes;
            }
        }
    }
    let mut relations: Vec<PgRelationEstimate> = rels
        .into_iter()
        .map(
            |((db, relfilenode), (main, map_bytes, main_allocated_bytes))| PgRelationEstimate {
                db,
                relfilenode,
                kind: main_kind
                    .get(&(db, relfilenode))
                    .copied()
                    .unwrap_or(PgFileKind::Relation),
                main: Estimate::sum(main.iter()),
                main_allocated_bytes,
                map_bytes,
                name: None,
                toast_of: None,
            },
        )
        .collect();
    relations.sort_by_key(|r| std::cmp::Reverse(r.main.logical_bytes));
    Some(PgBreakdown {
        data_dir,
        kinds: kinds
            .into_iter()
            .map(|(kind, (files, parts))| PgKindEstimate {
                kind,
                files,
                estimate: Estimate::sum(parts.iter()),
            })
            .collect(),
        relations,
    })
}
