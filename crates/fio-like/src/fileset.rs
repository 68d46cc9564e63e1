//! A job over several files (fio's `nrfiles`): every file checked and laid
//! out as a job's one target is, and each I/O's file and block — the file
//! from fio's `file_service_type` and `openfiles`
//! ([`csdchar_core::fileset::FileChooser`]), the block within that file.

use csdchar_core::fileset::FileChooser;
use csdchar_core::result::block::BlockSpec;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::engine::Direction;
use crate::error::BlockError;
use crate::offsets::uniform_below;
use crate::target::{PreparedTarget, precheck, prepare};

/// The spec of each of the job's files on its own (its path as the target,
/// its size as the region), for the checks and the layout a single target
/// gets; the spec itself when the job has one file.
pub fn file_specs(spec: &BlockSpec) -> Vec<BlockSpec> {
    if spec.files.is_none() {
        return vec![spec.clone()];
    }
    spec.files
        .files
        .iter()
        .map(|f| BlockSpec {
            target: Some(f.path.clone()),
            size: f.size,
            files: Default::default(),
            ..spec.clone()
        })
        .collect()
}

/// Prepares the job's files: every one checked (region, room, write safety)
/// before any is touched, then each laid out and opened. The first is the
/// run's target, its size the job's I/O (fio's `size`); the others come
/// beside it. A file created here is removed again when a later one fails.
pub fn prepare_all(spec: &BlockSpec) -> Result<(PreparedTarget, Vec<PreparedTarget>), BlockError> {
    if spec.files.is_none() {
        return Ok((prepare(spec)?, Vec::new()));
    }
    let specs = file_specs(spec);
    for s in &specs {
        precheck(s, None)?;
    }
    let mut ready: Vec<PreparedTarget> = Vec::with_capacity(specs.len());
    for s in &specs {
        match prepare(s).and_then(|t| whole_length(t, s.offset + s.size)) {
            Ok(t) => ready.push(t),
            Err(e) => {
                for t in ready.iter().filter(|t| t.created) {
                    if let Some(p) = &t.info.path {
                        let _ = std::fs::remove_file(p);
                    }
                }
                return Err(e);
            }
        }
    }
    let mut first = ready.remove(0);
    first.size = spec.size;
    Ok((first, ready))
}

/// A file laid out here holds all of its `len` bytes, as fio makes it, its
/// last partial block too (the region covers whole blocks only).
fn whole_length(t: PreparedTarget, len: u64) -> Result<PreparedTarget, BlockError> {
    let short = t.info.laid_out && t.info.size_bytes < len;
    if let (true, Some(p)) = (short, &t.info.path) {
        let grow = std::fs::OpenOptions::new()
            .write(true)
            .open(p)
            .and_then(|f| f.set_len(len));
        if let Err(e) = grow {
            if t.created {
                let _ = std::fs::remove_file(p);
            }
            return Err(BlockError::Io(format!("laying out {p}: {e}")));
        }
    }
    Ok(t)
}

/// Where a multi-file job's I/Os go: the file fio's service type picks, and
/// in it the next block (sequential) or a random one. A file is done once
/// its blocks are used up — a sequential walk at its end, a random job
/// after as many I/Os as it has blocks (fio's random map, which hands out
/// each block once) — unless the job draws its files from a skewed
/// distribution, or is a time-based random one, which start a file over.
/// Once every file is done the job is, or with `loops` (and in a time-based
/// job, always) the next pass starts every file over (fio's clear_io_state
/// between loops; the job's I/O is counted over all passes, as fio's).
pub struct FilePlan {
    chooser: FileChooser,
    /// The chooser as a pass starts.
    fresh: FileChooser,
    /// Passes after this one (`loops` - 1; time based: no end).
    passes_left: u32,
    sizes: Vec<u64>,
    unit: [u64; 3],
    next: Vec<[u64; 3]>,
    ios: Vec<u64>,
    random: bool,
    /// Files are never done: fio's skewed file choice, or a time-based
    /// random job (fio starts such a file over instead).
    endless: bool,
}

impl FilePlan {
    /// The plan of a job with several files (a skewed file choice seeded
    /// with `seed`); None with one.
    pub fn new(spec: &BlockSpec, unit: [u64; 3], seed: u32) -> Option<Self> {
        let files = &spec.files;
        if files.is_none() {
            return None;
        }
        let n = files.files.len();
        let chooser = FileChooser::new(n, &files.service, files.open, seed);
        Some(FilePlan {
            fresh: chooser.clone(),
            chooser,
            passes_left: match spec.time_based {
                true => u32::MAX,
                false => spec.loops.max(1) - 1,
            },
            sizes: files.files.iter().map(|f| f.size).collect(),
            unit,
            next: vec![[0; 3]; n],
            ios: vec![0; n],
            random: spec.rw.is_random(),
            endless: files.service.nonuniform() || (spec.time_based && spec.rw.is_random()),
        })
    }

    /// Every file started over for the next of `loops`' passes.
    fn new_pass(&mut self) {
        self.passes_left -= 1;
        self.chooser = self.fresh.clone();
        self.next.iter_mut().for_each(|n| *n = [0; 3]);
        self.ios.iter_mut().for_each(|n| *n = 0);
    }

    /// The file and block (of `dir`'s unit) of the next I/O of `dir`; None
    /// once every file is done in the last pass.
    pub fn next(&mut self, dir: Direction, rng: &mut Xoshiro256PlusPlus) -> Option<(u32, u64)> {
        let f = match self.chooser.next(&mut |n| uniform_below(rng, n)) {
            Some(f) => f,
            None if self.passes_left > 0 => {
                self.new_pass();
                self.chooser.next(&mut |n| uniform_below(rng, n))?
            }
            None => return None,
        };
        let d = dir.index();
        let nb = (self.sizes[f] / self.unit[d]).max(1);
        let (block, done) = if self.random {
            self.ios[f] += 1;
            let smallest = *self.unit.iter().min().expect("three units");
            (
                uniform_below(rng, nb),
                self.ios[f] >= self.sizes[f] / smallest,
            )
        } else {
            let b = self.next[f][d];
            self.next[f][d] = if b + 1 >= nb && self.endless {
                0
            } else {
                b + 1
            };
            (b, self.next[f][d] >= nb)
        };
        if done && !self.endless {
            self.chooser.set_done(f);
        }
        Some((f as u32, block))
    }
}
