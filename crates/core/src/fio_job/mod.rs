//! fio job files: read with fio's rules, turned into block specs and the order
//! fio would run them in.
//!
//! - [`value`]: sizes, times, ranges, `${VAR}` and keywords as fio's parser
//!   reads them.
//! - [`ini`]: sections, inheritance from `[global]`, comments and `include`.
//! - [`print`]: a command line's spec as a job file (`--print-job`).
//! - [`plan`] (this module): each job's options mapped one to one onto a
//!   [`BlockSpec`]; `stonewall`, `new_group`, `wait_for`, `numjobs` and
//!   `group_reporting`; every option csdchar does not implement listed with
//!   its file and line.
//!
//! Defaults are fio's, not the command line's: `direct=0`, `randseed=0x89`,
//! `buffer_compress_chunk=512`, and compressible buffers filled with zeros
//! after the random part (fio's layout). A job without `filename` gets fio's
//! file name `JOB.CLONE.0` in `directory` (or the current directory), one per
//! clone, as fio makes them.
//!
//! Over 1,000 lines: turning fio's options into a job plan is one table of option
//! semantics (sizes, offsets, files, clones) that refer to each other; its parser
//! (`ini`) and its tests live apart.

mod bs_split;
mod errors;
pub mod files;
pub mod ini;
mod pacing;
pub mod print;
mod share;
mod spec;
mod think;
pub mod value;
mod zones;

use crate::bssplit::BsSplit;
use crate::dedupe::{DedupeMode, DedupeSpec};
use crate::distribution::Distribution;
use crate::iolog::LogSpec;
use crate::pattern::Fill;
use crate::rate::{RateLimit, RateProcess};
use crate::result::block::{BlockSpec, EngineKind, RwMode};
use crate::stats::DEFAULT_PERCENTILES;
use crate::steady::SteadySpec;
use ini::{JobOption, Section};

/// Largest block size the engine takes.
pub const MAX_BS: u64 = 256 << 20;

/// fio's `randseed` default.
pub const FIO_RANDSEED: u64 = 0x89;

/// One run of the engine: a job, or one clone of a job that has its own file.
#[derive(Debug, Clone, PartialEq)]
pub struct JobPlan {
    /// The job's name (its section, or `name=`).
    pub name: String,
    /// Which clone this is (0 when the clones share the engine's threads).
    pub clone: u32,
    /// Whether this clone runs apart from its siblings (each has its own file).
    pub apart: bool,
    /// What the engine runs; `numjobs` clones that share a file are its threads.
    pub spec: BlockSpec,
    /// fio's reporting group (`stonewall` and `new_group` start a new one).
    pub group_id: u32,
    /// Whether the group is reported as one (`group_reporting`).
    pub group_reporting: bool,
    /// Plans that must finish before this one starts: every plan below this
    /// index (everything before a `stonewall`)…
    pub after_all: usize,
    /// …and these (the job named by `wait_for`), each at or above `after_all`.
    /// Two numbers and a short list, not every index: a file of thousands of
    /// stonewalled jobs stays linear in memory.
    pub after_also: Vec<usize>,
    /// The job's own options as written (fio's `job options`), globals excluded.
    pub job_options: Vec<(String, String)>,
    /// `description=`.
    pub description: Option<String>,
    /// The engine it asked for, when csdchar runs it on io_uring instead.
    pub replaced_engine: Option<String>,
    /// The verify checksum it asked for, when csdchar checks with crc32c instead.
    pub replaced_verify: Option<String>,
    /// `startdelay`: how long the job waits before it starts, ms.
    pub start_delay_ms: u64,
    /// `FILE:LINE` of the job's section header.
    pub place: String,
    /// Where each option in force for the job was last set (its own or a
    /// `[global]` line): name as fio spells it, `FILE:LINE`. Refusals of a
    /// job name the line of the option at fault.
    pub option_places: Vec<(String, String)>,
    /// What this job ends when it ends, when a job of the file has `exitall`
    /// (fio's flag is the run's); None: nothing.
    pub exit_what: Option<ExitWhat>,
    /// fio's `allow_file_create`: false refuses a job whose file does not exist.
    pub allow_file_create: bool,
}

/// Which jobs a job ends when it ends under `exitall` (fio's `exit_what`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExitWhat {
    /// The jobs of its reporting group (fio's default).
    #[default]
    Group,
    /// Every job running.
    Stonewall,
    /// Every job, running or still to start.
    All,
}

impl JobPlan {
    /// Whether plan `k` must finish before this one starts.
    pub fn waits_for(&self, k: usize) -> bool {
        k < self.after_all || self.after_also.contains(&k)
    }

    /// `FILE:LINE` of option `name` as set for this job, or of its section.
    pub fn place_of(&self, name: &str) -> &str {
        self.option_places
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map_or(&self.place, |(_, p)| p)
    }
}

/// Most jobs a job file may hold, clones (`numjobs`) included: fio's
/// `REAL_MAX_JOBS` (fio.h). fio keeps its jobs in shared memory segments of 8
/// and its check (`nr_segments + 1 >= REAL_MAX_SEG`, init.c) stops it at 4,088.
pub const MAX_JOBS: u64 = 4096;

/// An option csdchar does not implement, where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    /// `name=value` as written.
    pub option: String,
    /// `FILE:LINE`.
    pub place: String,
    /// Why (an option csdchar lacks, or a value it lacks).
    pub why: String,
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.option, self.place, self.why)
    }
}

/// A job file turned into runs.
#[derive(Debug, Clone, PartialEq)]
pub struct JobFilePlan {
    /// The runs in fio's order.
    pub jobs: Vec<JobPlan>,
    /// The `[global]` options as written (fio's `global options`).
    pub global_options: Vec<(String, String)>,
    /// Options skipped under `--ignore-unsupported`.
    pub ignored: Vec<Unsupported>,
}

/// Why a job file cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// Options csdchar does not implement: every one, with its place.
    Unsupported(Vec<Unsupported>),
    /// A value that is wrong for fio too, or a combination that cannot run.
    Invalid(String),
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::Unsupported(list) => {
                write!(
                    f,
                    "{} option{} csdchar does not implement: ",
                    list.len(),
                    if list.len() == 1 { "" } else { "s" }
                )?;
                let items: Vec<String> = list.iter().map(|u| u.to_string()).collect();
                write!(
                    f,
                    "{}; remove them or run with --ignore-unsupported",
                    items.join("; ")
                )
            }
            PlanError::Invalid(m) => f.write_str(m),
        }
    }
}

/// ioengines whose jobs run on io_uring (same semantics: the engine moves data
/// between the same buffers and offsets; only how the kernel is asked differs).
pub const REPLACED_ENGINES: [&str; 7] = [
    "libaio", "psync", "sync", "pvsync", "pvsync2", "posixaio", "vsync",
];

/// fio's verify checksums csdchar runs as crc32c (said in a note).
pub const VERIFY_TYPES: [&str; 13] = [
    "md5", "crc64", "crc32", "crc16", "crc7", "xxhash", "sha1", "sha256", "sha512", "sha3-224",
    "sha3-256", "sha3-384", "sha3-512",
];

/// Options that change nothing csdchar measures or does differently:
/// `thread` (csdchar's jobs are threads), `norandommap` (csdchar's random
/// offsets are always drawn independently, which is what it means),
/// the percentile switches
/// (csdchar keeps slat, clat and lat percentiles always), `refill_buffers`
/// (every write's data is fresh), `gtod_reduce` (fewer clock reads in fio;
/// csdchar takes its timestamps once per batch anyway), io_uring's
/// `fixedbufs` and `registerfiles` (csdchar always registers both),
/// `group_reporting`
/// and ordering options, read in [`plan`].
const NEUTRAL: [&str; 12] = [
    "gtod_reduce",
    "fixedbufs",
    "registerfiles",
    "thread",
    // fio 3.33's parser takes `threads=1` (examples/steadystate.fio) too.
    "threads",
    "norandommap",
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
    "refill_buffers",
    "fadvise_hint",
    "invalidate",
];

#[derive(Clone)]
struct Builder {
    name: String,
    description: Option<String>,
    filename: Option<String>,
    directory: Option<String>,
    rw: RwMode,
    rwmixread: u8,
    bs: [Option<u64>; 3],
    bssplit: BsSplit,
    iodepth: u32,
    numjobs: u32,
    size: u64,
    offset: u64,
    offset_increment: u64,
    layout: errors::ErrorsAndLayout,
    runtime_us: Option<u64>,
    time_based: bool,
    ramp_us: u64,
    direct: bool,
    seed: u64,
    engine: EngineKind,
    replaced_engine: Option<String>,
    compress_pct: u8,
    compress_chunk: u64,
    dedupe: DedupeSpec,
    batch_submit: Option<u32>,
    batch_complete: u32,
    verify: bool,
    replaced_verify: Option<String>,
    filesize: Option<u64>,
    start_delay_us: u64,
    percentiles: Vec<f64>,
    kb_base: u64,
    stonewall: bool,
    new_group: bool,
    wait_for: Option<(String, String)>,
    group_reporting: bool,
    random_distribution: Distribution,
    rate: RateLimit,
    io_size: u64,
    number_ios: u64,
    loops: u32,
    logs: LogSpec,
    steady: SteadySpec,
    rw_seq_add: i64,
    verify_only: bool,
    do_verify: bool,
    files: files::FileOptions,
    think: crate::think::ThinkTime,
    share: crate::share::JobShare,
    exitall: bool,
    exit_what: ExitWhat,
    randrepeat: bool,
    allow_file_create: bool,
    zones: zones::ZoneOptions,
    pace: crate::pace::Pacing,
    /// Each option's last setting as written, and where: for refusals that
    /// come from a combination.
    set_at: Vec<(String, String, String)>,
}

impl Builder {
    fn fio_defaults(name: &str) -> Self {
        Builder {
            name: name.to_string(),
            description: None,
            filename: None,
            directory: None,
            rw: RwMode::Read,
            rwmixread: 50,
            bs: [Some(4096); 3],
            bssplit: BsSplit::default(),
            iodepth: 1,
            numjobs: 1,
            size: 0,
            offset: 0,
            offset_increment: 0,
            layout: Default::default(),
            runtime_us: None,
            time_based: false,
            ramp_us: 0,
            direct: false,
            seed: FIO_RANDSEED,
            engine: EngineKind::Uring,
            replaced_engine: None,
            compress_pct: 0,
            compress_chunk: 512,
            dedupe: DedupeSpec::default(),
            batch_submit: None,
            batch_complete: 1,
            verify: false,
            replaced_verify: None,
            filesize: None,
            start_delay_us: 0,
            percentiles: DEFAULT_PERCENTILES.to_vec(),
            kb_base: 1024,
            stonewall: false,
            new_group: false,
            wait_for: None,
            group_reporting: false,
            random_distribution: Distribution::Random,
            rate: RateLimit {
                cycle_ms: 1000,
                ..RateLimit::default()
            },
            io_size: 0,
            number_ios: 0,
            loops: 1,
            logs: LogSpec::default(),
            steady: SteadySpec::default(),
            rw_seq_add: 0,
            verify_only: false,
            do_verify: true,
            files: files::FileOptions::default(),
            think: Default::default(),
            share: Default::default(),
            exitall: false,
            exit_what: ExitWhat::Group,
            randrepeat: true,
            allow_file_create: true,
            zones: Default::default(),
            pace: Default::default(),
            set_at: Vec::new(),
        }
    }

    /// The option as written and its place, or the job's own header.
    fn where_set(&self, name: &str, section: &Section) -> (String, String) {
        self.set_at
            .iter()
            .rev()
            .find(|(n, _, _)| n == name)
            .map(|(_, w, p)| (w.clone(), p.clone()))
            .unwrap_or_else(|| {
                (
                    format!("[{}]", section.name),
                    format!("{}:{}", section.file, section.line),
                )
            })
    }

    /// Applies one option. Ok(false): an option (or value) csdchar lacks.
    fn apply(&mut self, o: &JobOption) -> Result<Result<(), String>, String> {
        let v = o.value.as_deref();
        let need = || v.ok_or_else(|| format!("{} needs a value", o.name));
        let wrap = |e: value::ValueError| e.to_string();
        let pct = |t: &str| -> Result<u8, String> {
            let n = value::int(t).map_err(wrap)?;
            u8::try_from(n)
                .ok()
                .filter(|n| *n <= 100)
                .ok_or_else(|| format!("'{t}' is not a percentage (0 to 100)"))
        };
        let lacks = |why: &str| Ok(Err(why.to_string()));
        match o.name.as_str() {
            "name" => self.name = need()?.to_string(),
            "description" => self.description = Some(need()?.to_string()),
            "filename" => {
                let f = need()?;
                if f.is_empty() {
                    return Err("filename is empty (an unset ${VAR}?)".into());
                }
                // fio separates several files with ':' ('\:' escapes one).
                self.files.list = files::split_names(f);
                self.filename = self.files.list.first().cloned();
            }
            "directory" => {
                let d = need()?;
                if d.replace("\\:", "").contains(':') {
                    return lacks("several directories in one job");
                }
                self.directory = Some(d.replace("\\:", ":"));
            }
            "rw" | "readwrite" => {
                let t = need()?;
                let (t, modifier) = match t.split_once(':') {
                    Some((m, n)) => (m, Some(n.trim())),
                    None => (t, None),
                };
                self.rw_seq_add = 0;
                if let Some(n) = modifier {
                    let (neg, n) = match n.strip_prefix('-') {
                        Some(n) => (true, n),
                        None => (false, n),
                    };
                    let v = value::bytes(n, self.kb_base).map_err(wrap)? as i64;
                    self.rw_seq_add = if neg { -v } else { v };
                }
                self.rw = match t {
                    "read" => RwMode::Read,
                    "write" => RwMode::Write,
                    "randread" => RwMode::Randread,
                    "randwrite" => RwMode::Randwrite,
                    "rw" | "readwrite" => RwMode::Readwrite,
                    "randrw" => RwMode::Randrw,
                    "trim" => RwMode::Trim,
                    "randtrim" => RwMode::Randtrim,
                    "trimwrite" => RwMode::Trimwrite,
                    "randtrimwrite" => RwMode::Randtrimwrite,
                    other => {
                        return Err(format!(
                            "rw={other}: not a mode (read, write, randread, randwrite, rw, readwrite, randrw, trim, randtrim, trimwrite, randtrimwrite)"
                        ));
                    }
                };
            }
            "rwmixread" => self.rwmixread = pct(need()?)?,
            "rwmixwrite" => self.rwmixread = 100 - pct(need()?)?,
            "bs" | "blocksize" => {
                let parts = value::per_direction(need()?);
                for (slot, part) in self.bs.iter_mut().zip(parts) {
                    if let Some(p) = part {
                        *slot = Some(value::bytes(p, self.kb_base).map_err(wrap)?);
                    }
                }
            }
            "bssplit" => {
                let kb = self.kb_base;
                let bytes = |t: &str| value::bytes(t, kb).map_err(wrap);
                self.bssplit
                    .parse(need()?, &bytes)
                    .map_err(|e| format!("bssplit: {e}"))?
            }
            "blocksize_unaligned" | "bs_unaligned" | "bs_is_seq_rand" => {
                if value::boolean(v).map_err(wrap)? {
                    return lacks(if o.name == "bs_is_seq_rand" {
                        "block sizes per sequential and random I/O (csdchar's are per direction)"
                    } else {
                        "block sizes that are not multiples of the smallest"
                    });
                }
            }
            "iodepth" => self.iodepth = small(need()?, "iodepth", 1, 4096)?,
            "numjobs" => self.numjobs = small(need()?, "numjobs", 1, 1024)?,
            "size" | "offset" | "io_size" if zones::zone_count(v).is_some() => {
                self.zones.set_count(&o.name, v)
            }
            "size" => match value::size(need()?, self.kb_base).map_err(wrap)? {
                value::Size::Bytes(b) => (self.size, self.zones.size_nz) = (b, 0),
                value::Size::Percent(_) => return lacks("a size as a percentage of the target"),
            },
            "offset" => match value::size(need()?, self.kb_base).map_err(wrap)? {
                value::Size::Bytes(b) => (self.offset, self.zones.offset_nz) = (b, 0),
                value::Size::Percent(_) => return lacks("an offset as a percentage of the target"),
            },
            k if errors::takes(k) => return self.layout.set(k, v),
            "offset_increment" => match value::size(need()?, self.kb_base).map_err(wrap)? {
                value::Size::Bytes(b) => self.offset_increment = b,
                value::Size::Percent(_) => {
                    return lacks("an offset_increment as a percentage of the target");
                }
            },
            "runtime" | "timeout" => {
                self.runtime_us = Some(value::time_us(need()?, true).map_err(wrap)?)
            }
            "time_based" => self.time_based = value::boolean(v).map_err(wrap)?,
            "ramp_time" => self.ramp_us = value::time_us(need()?, true).map_err(wrap)?,
            "direct" => self.direct = value::boolean(v).map_err(wrap)?,
            "buffered" => self.direct = !value::boolean(v).map_err(wrap)?,
            "randseed" => self.seed = value::int(need()?).map_err(wrap)?,
            "randrepeat" => {
                // fio: without randseed, each run draws new seeds.
                self.randrepeat = value::boolean(v).map_err(wrap)?
            }
            "ioengine" => {
                let e = need()?;
                match e {
                    "io_uring" => {
                        self.engine = EngineKind::Uring;
                        self.replaced_engine = None;
                    }
                    "null" => {
                        self.engine = EngineKind::Null;
                        self.replaced_engine = None;
                    }
                    e if REPLACED_ENGINES.contains(&e) => {
                        self.engine = EngineKind::Uring;
                        self.replaced_engine = Some(e.to_string());
                    }
                    _ => {
                        return lacks(
                            "this ioengine (csdchar runs io_uring and takes libaio, psync, sync, pvsync, pvsync2, posixaio and null)",
                        );
                    }
                }
            }
            "buffer_compress_percentage" => self.compress_pct = pct(need()?)?,
            "buffer_compress_chunk" => {
                self.compress_chunk = value::bytes(need()?, self.kb_base).map_err(wrap)?
            }
            "dedupe_percentage" => self.dedupe.pct = pct(need()?)?,
            "dedupe_mode" => {
                self.dedupe.mode = match need()? {
                    "repeat" => DedupeMode::Repeat,
                    "working_set" => DedupeMode::WorkingSet,
                    other => return Err(format!("dedupe_mode={other}: repeat or working_set")),
                }
            }
            "dedupe_working_set_percentage" => self.dedupe.working_set_pct = pct(need()?)?,
            "dedupe_global" => self.dedupe.global = value::boolean(v).map_err(wrap)?,
            "verify" => match need()? {
                "0" | "null" => {
                    self.verify = false;
                    self.replaced_verify = None;
                }
                "crc32c" | "crc32c-intel" | "meta" => {
                    self.verify = true;
                    self.replaced_verify = None;
                    self.layout.meta = v == Some("meta");
                }
                // Every block is checked against a checksum either way; only
                // the checksum differs (fio's headers are not csdchar's).
                t if VERIFY_TYPES.contains(&t) => {
                    self.verify = true;
                    self.layout.meta = false;
                    self.replaced_verify = Some(t.to_string());
                }
                _ => return lacks("this verify type (csdchar verifies with crc32c)"),
            },
            "bsrange" | "blocksize_range" => {
                // One size per direction (bsrange=4k-4k) is bs; a range is not.
                let mut sizes = [None; 3];
                for (slot, part) in sizes.iter_mut().zip(value::per_direction(need()?)) {
                    let Some(p) = part else { continue };
                    let (lo, hi) = p.split_once('-').unwrap_or((p, p));
                    let (lo, hi) = (
                        value::bytes(lo, self.kb_base).map_err(wrap)?,
                        value::bytes(hi, self.kb_base).map_err(wrap)?,
                    );
                    if lo != hi {
                        return lacks("a range of block sizes (csdchar's jobs use one)");
                    }
                    *slot = Some(lo);
                }
                for (slot, v) in self.bs.iter_mut().zip(sizes) {
                    if v.is_some() {
                        *slot = v;
                    }
                }
            }
            "filesize" => {
                // The file's size (LOW-HIGH: each of several files drawn in
                // it); with one file and no other size, the region and I/O.
                let t = need()?;
                let (lo, hi) = t.split_once('-').unwrap_or((t, t));
                self.filesize = Some(value::bytes(lo, self.kb_base).map_err(wrap)?);
                self.files.filesize_high = value::bytes(hi, self.kb_base).map_err(wrap)?;
            }
            "startdelay" => {
                let t = need()?;
                if t.contains('-') {
                    return lacks("a random start delay (a range)");
                }
                self.start_delay_us = value::time_us(t, true).map_err(wrap)?;
            }
            "iodepth_batch" | "iodepth_batch_submit" => {
                self.batch_submit = Some(small(need()?, &o.name, 0, 4096)?)
            }
            "iodepth_batch_complete" | "iodepth_batch_complete_min" => {
                self.batch_complete = small(need()?, &o.name, 0, 4096)?.max(1)
            }
            "percentile_list" => {
                let list: Result<Vec<f64>, String> = need()?
                    .split(':')
                    .map(|p| {
                        p.trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|x| (0.0..=100.0).contains(x))
                            .ok_or_else(|| {
                                format!("percentile_list: '{p}' is not a percentile (0 to 100)")
                            })
                    })
                    .collect();
                let list = list?;
                if list.len() > 20 {
                    return Err("percentile_list: at most 20 percentiles".into());
                }
                self.percentiles = list;
            }
            "kb_base" => {
                self.kb_base = match need()? {
                    "1024" => 1024,
                    "1000" => 1000,
                    other => return Err(format!("kb_base={other}: 1024 or 1000")),
                }
            }
            "stonewall" | "wait_for_previous" => {
                self.stonewall = value::boolean(v).map_err(wrap)?
            }
            "new_group" => self.new_group = value::boolean(v).map_err(wrap)?,
            "wait_for" => self.wait_for = Some((need()?.to_string(), o.place())),
            "group_reporting" => self.group_reporting = value::boolean(v).map_err(wrap)?,
            "rate" | "rate_min" | "ratemin" | "rate_iops" | "rate_iops_min" => {
                let slots = match o.name.as_str() {
                    "rate" => &mut self.rate.bytes_per_s,
                    "rate_min" | "ratemin" => &mut self.rate.min_bytes_per_s,
                    "rate_iops" => &mut self.rate.iops,
                    _ => &mut self.rate.min_iops,
                };
                for (slot, part) in slots.iter_mut().zip(value::per_direction(need()?)) {
                    if let Some(p) = part {
                        *slot = if o.name.contains("iops") {
                            value::int(p).map_err(wrap)?
                        } else {
                            value::bytes(p, self.kb_base).map_err(wrap)?
                        };
                    }
                }
            }
            "io_size" | "io_limit" => match value::size(need()?, self.kb_base).map_err(wrap)? {
                value::Size::Bytes(b) => (self.io_size, self.zones.io_size_nz) = (b, 0),
                value::Size::Percent(_) => return lacks("io_size as a percentage"),
            },
            "number_ios" => self.number_ios = value::int(need()?).map_err(wrap)?,
            "loops" => self.loops = small(need()?, "loops", 1, u64::from(u32::MAX))?,
            "write_bw_log" | "write_iops_log" | "write_lat_log" | "write_hist_log" => {
                // A bare option logs under the job's name (fio).
                let prefix = match v {
                    Some(p) if !p.is_empty() => p.to_string(),
                    _ => self.name.clone(),
                };
                match o.name.as_str() {
                    "write_bw_log" => self.logs.bw = Some(prefix),
                    "write_iops_log" => self.logs.iops = Some(prefix),
                    "write_hist_log" => self.logs.hist = Some(prefix),
                    _ => self.logs.lat = Some(prefix),
                }
            }
            "steadystate" | "ss" => {
                self.steady
                    .parse_rule(need()?)
                    .map_err(|e| format!("steadystate: {e}"))?;
                // fio's ss_dur default is 0 (no check) until set.
            }
            "steadystate_duration" | "ss_dur" => {
                self.steady.dur_s = value::time_us(need()?, true)
                    .map_err(wrap)?
                    .div_ceil(1_000_000)
            }
            "steadystate_ramp_time" | "ss_ramp" => {
                self.steady.ramp_ms = value::time_us(need()?, true).map_err(wrap)?.div_ceil(1000)
            }
            "verify_only" => self.verify_only = value::boolean(v).map_err(wrap)?,
            "do_verify" => self.do_verify = value::boolean(v).map_err(wrap)?,
            k if files::FileOptions::takes(k) => self.files.set(k, need()?)?,
            "exitall" => self.exitall = value::boolean(v).map_err(wrap)?,
            "exit_what" => {
                self.exit_what = match need()? {
                    "group" => ExitWhat::Group,
                    "stonewall" => ExitWhat::Stonewall,
                    "all" => ExitWhat::All,
                    other => return Err(format!("exit_what={other}: group, stonewall or all")),
                }
            }
            k if think::takes(k) => return think::set(&mut self.think, k, need()?),
            "allow_file_create" => self.allow_file_create = value::boolean(v).map_err(wrap)?,
            k if zones::takes(k) => return zones::set(&mut self.zones, k, v, self.kb_base),
            k if share::takes(k) => return share::set(&mut self.share, k, need()?),
            k if share::takes_prio(k) => share::set_prio(&mut self.share, k, v)?,
            k if Self::takes_pace(k) => {
                let t = if k == "latency_run" {
                    v.unwrap_or("1")
                } else {
                    need()?
                };
                return self.set_pace(k, t);
            }
            "log_avg_msec" => self.logs.avg_msec = value::int(need()?).map_err(wrap)?,
            "log_max_value" => {
                self.logs.max_value = match need()? {
                    "0" | "avg" => 0,
                    "1" | "max" => 1,
                    "2" | "both" => 2,
                    other => {
                        return Err(format!("log_max_value={other}: 0, 1 or 2 (avg, max, both)"));
                    }
                }
            }
            "log_offset" => self.logs.offset = value::boolean(v).map_err(wrap)?,
            "log_hist_msec" => self.logs.hist_msec = value::int(need()?).map_err(wrap)?,
            "log_hist_coarseness" => {
                self.logs.hist_coarseness = small(need()?, "log_hist_coarseness", 0, 6)? as u8
            }
            "rate_process" => {
                self.rate.process = match need()? {
                    "linear" => RateProcess::Linear,
                    "poisson" => RateProcess::Poisson,
                    other => return Err(format!("rate_process={other}: linear or poisson")),
                }
            }
            "rate_cycle" | "ratecycle" => {
                self.rate.cycle_ms = value::int(need()?).map_err(wrap)?.max(1)
            }
            "random_distribution" => {
                self.random_distribution = Distribution::parse(need()?, self.kb_base)
                    .map_err(|e| format!("random_distribution: {e}"))?
            }
            n if NEUTRAL.contains(&n) => {
                if n == "invalidate" && !value::boolean(v).map_err(wrap)? {
                    return lacks(
                        "invalidate=0 (csdchar leaves the page cache as it is, and direct=1 bypasses it)",
                    );
                }
            }
            _ => return lacks("an option csdchar does not implement"),
        }
        Ok(Ok(()))
    }
}

/// Each option's last place, once per name: bounded by the options csdchar
/// implements, however many lines set them.
fn last_places(set_at: &[(String, String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (name, _, place) in set_at {
        match out.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = place.clone(),
            None => out.push((name.clone(), place.clone())),
        }
    }
    out
}

fn small(t: &str, name: &str, min: u64, max: u64) -> Result<u32, String> {
    let n = value::int(t).map_err(|e| e.to_string())?;
    if !(min..=max).contains(&n) {
        return Err(format!("{name}={t}: must be between {min} and {max}"));
    }
    Ok(n as u32)
}

/// Turns a job file's sections into runs. With `ignore_unsupported`, options
/// csdchar lacks are skipped and listed in the plan; without, they are the
/// error, every one of them.
pub fn plan(sections: &[Section], ignore_unsupported: bool) -> Result<JobFilePlan, PlanError> {
    let mut defaults = Builder::fio_defaults("global");
    let mut unsupported = Vec::new();
    let mut global_options = Vec::new();
    let mut jobs: Vec<JobPlan> = Vec::new();
    // Index of the first plan of each job section, by name, for wait_for.
    let mut by_name: Vec<(String, Vec<usize>)> = Vec::new();
    let mut group_id = 0u32;
    let mut jobs_in_group = 0u32;
    let mut barrier_before: usize = 0;
    let mut fio_jobs = 0u64;
    // Whether a job has exitall (fio: then every job ends others as it ends).
    let mut exitall = false;
    // The first value fio would refuse too; reported only when nothing is
    // unsupported (a skipped option can make a job look wrong).
    let mut invalid: Option<String> = None;
    let invalid_at = |o: &JobOption, m: String| format!("{} ({}): {m}", o.as_written(), o.place());
    for section in sections {
        let mut b = if section.global {
            defaults.clone()
        } else {
            // Every option of [global] is each job's, as fio copies it
            // (get_new_job): `stonewall` there makes every job wait.
            let mut b = defaults.clone();
            b.name = section.name.clone();
            b
        };
        for o in &section.options {
            match b.apply(o) {
                Ok(Ok(())) => {
                    // One name per option, for refusals that look it up.
                    let name = match o.name.as_str() {
                        "blocksize" => "bs",
                        "blocksize_range" => "bsrange",
                        "readwrite" => "rw",
                        "iodepth_batch" => "iodepth_batch_submit",
                        "iodepth_batch_complete_min" => "iodepth_batch_complete",
                        "timeout" => "runtime",
                        "buffered" => "direct",
                        "wait_for_previous" => "stonewall",
                        "ba" => "blockalign",
                        n => n,
                    };
                    b.set_at.push((name.to_string(), o.as_written(), o.place()));
                }
                Ok(Err(why)) => unsupported.push(Unsupported {
                    option: o.as_written(),
                    place: o.place(),
                    why,
                }),
                Err(m) => {
                    invalid.get_or_insert(invalid_at(o, m));
                }
            }
        }
        if section.global {
            if let Some((name, place)) = &b.wait_for {
                return Err(PlanError::Invalid(format!(
                    "wait_for={name} ({place}): in [global] every job would wait for {name}, \
                     itself included; put it in the section of the job that waits"
                )));
            }
            global_options.extend(
                section
                    .options
                    .iter()
                    .map(|o| (o.name.clone(), o.value.clone().unwrap_or_default())),
            );
            defaults = b;
            continue;
        }
        if (b.stonewall || b.new_group) && jobs_in_group > 0 {
            group_id += 1;
            jobs_in_group = 0;
        }
        if b.stonewall {
            barrier_before = jobs.len();
        }
        let mut after_also: Vec<usize> = Vec::new();
        if let Some((name, place)) = &b.wait_for {
            let Some((_, idx)) = by_name.iter().find(|(n, _)| n == name) else {
                return Err(PlanError::Invalid(format!(
                    "wait_for={name} ({place}): no job named {name} before it"
                )));
            };
            after_also.extend(idx.iter().copied().filter(|&k| k >= barrier_before));
        }
        let job_options: Vec<(String, String)> = section
            .options
            .iter()
            .map(|o| (o.name.clone(), o.value.clone().unwrap_or_default()))
            .collect();
        // fio's limit counts every clone; stopping here bounds the time and
        // memory a huge file takes before it is refused.
        fio_jobs += u64::from(b.numjobs);
        if fio_jobs > MAX_JOBS {
            return Err(PlanError::Invalid(format!(
                "[{}] ({}:{}): the file holds more than {MAX_JOBS} jobs with this one (numjobs clones \
                 included), fio's limit; split the file",
                section.name, section.file, section.line
            )));
        }
        // Clones share the job's file as the engine's threads; without a
        // filename fio gives each clone a file of its own, so each is a run.
        // fio puts a filename in `directory` too (filesetup.c add_file).
        let runs: Vec<(u32, Option<String>, u32)> = match (&b.filename, b.engine) {
            (Some(f), _) => {
                let path = match &b.directory {
                    Some(d) => format!("{d}/{f}"),
                    None => f.clone(),
                };
                vec![(0, Some(path), b.numjobs)]
            }
            (None, EngineKind::Null) => vec![(0, None, b.numjobs)],
            (None, _) => {
                // fio writes `directory/NAME.CLONE.0` (filename_format's
                // default) whatever NAME holds; a name with '/' would put the
                // file outside the directory.
                let format = b.files.format.as_deref();
                if b.name.contains(['/', '\0']) && files::has_keyword(format, "$jobname") {
                    let (written, place) = b.where_set("name", section);
                    return Err(PlanError::Invalid(format!(
                        "{written} ({place}): a job without filename= writes a file named after \
                         the job (NAME.CLONE.0) in directory=; this name holds '/', which would \
                         put it elsewhere: give filename= or a name without '/'"
                    )));
                }
                let dir = b.directory.as_deref().unwrap_or(".");
                let names: Vec<String> = (0..b.numjobs)
                    .map(|c| format!("{dir}/{}", files::file_name(format, &b.name, c, 0)))
                    .collect();
                if names.iter().all(|n| *n == names[0]) {
                    // A format without $jobnum: the clones share one file, as
                    // with filename=.
                    vec![(0, Some(names[0].clone()), b.numjobs)]
                } else {
                    names
                        .into_iter()
                        .enumerate()
                        .map(|(c, n)| (c as u32, Some(n), 1))
                        .collect()
                }
            }
        };
        let first = jobs.len();
        let apart = runs.len() > 1;
        for (clone, target, threads) in runs {
            // fio seeds each job from randseed and its number.
            // randrepeat=0 without randseed: fresh seeds per run (fio's
            // setup_random_seeds draws them from the OS).
            let base = if b.randrepeat || b.set_at.iter().any(|(n, _, _)| n == "randseed") {
                b.seed
            } else {
                std::hash::BuildHasher::hash_one(
                    &std::collections::hash_map::RandomState::new(),
                    0u8,
                )
            };
            let seed = base.wrapping_add(u64::from(clone));
            let mut lacks = Vec::new();
            let mut spec = match b.spec(target, threads, seed, section, &mut lacks) {
                Ok(s) => s,
                Err(m) => {
                    invalid.get_or_insert(m);
                    continue;
                }
            };
            // fio's offset_increment: a clone with a file of its own starts
            // at offset + clone * increment there (filesetup.c get_start_offset).
            if apart {
                spec.offset += u64::from(clone) * b.offset_increment;
            }
            // fio gives a job with filename= the files it names, whatever nrfiles says.
            if b.files.several(b.filename.as_ref()) && b.engine != EngineKind::Null {
                let dir = b.directory.as_deref();
                if let Err(why) = files::apply(&b.files, &mut spec, dir, &b.name, clone, b.filesize)
                {
                    lacks.push((
                        if b.files.list.len() > 1 {
                            "filename"
                        } else {
                            "nrfiles"
                        },
                        why,
                    ));
                }
            }
            // fio numbers threads from 1 over the file, clones included:
            // the logs are named after it.
            if !spec.logs.is_none() {
                spec.logs.first_job = (fio_jobs - u64::from(b.numjobs)) as u32 + 1 + clone;
            }
            // fio's thread numbers, for dedupe_global's shared working set.
            if !spec.dedupe.is_none() {
                spec.dedupe.first_thread = (fio_jobs - u64::from(b.numjobs)) as u32 + clone;
            }
            // Clones repeat their job's refusals: say them once.
            for (name, why) in lacks.into_iter().filter(|_| clone == 0) {
                let (option, place) = b.where_set(name, section);
                unsupported.push(Unsupported { option, place, why });
            }
            jobs.push(JobPlan {
                name: b.name.clone(),
                clone,
                apart,
                spec,
                group_id,
                group_reporting: b.group_reporting,
                after_all: barrier_before,
                after_also: after_also.clone(),
                job_options: job_options.clone(),
                description: b.description.clone(),
                replaced_engine: b.replaced_engine.clone(),
                replaced_verify: b.replaced_verify.clone(),
                start_delay_ms: b.start_delay_us.div_ceil(1000),
                place: format!("{}:{}", section.file, section.line),
                option_places: last_places(&b.set_at),
                exit_what: Some(b.exit_what),
                allow_file_create: b.allow_file_create,
            });
            exitall |= b.exitall;
        }
        jobs_in_group += 1;
        by_name.push((b.name.clone(), (first..jobs.len()).collect()));
    }
    if !unsupported.is_empty() && !ignore_unsupported {
        return Err(PlanError::Unsupported(unsupported));
    }
    if let Some(m) = invalid {
        return Err(PlanError::Invalid(m));
    }
    if jobs.is_empty() {
        return Err(PlanError::Invalid(
            "the job file has no job section (only [global])".into(),
        ));
    }
    if !exitall {
        jobs.iter_mut().for_each(|j| j.exit_what = None);
    }
    for j in jobs.iter_mut().filter(|j| !j.spec.dedupe.is_none()) {
        j.spec.dedupe.threads = fio_jobs as u32;
    }
    // A group reports as one when any of its jobs asks (fio keeps the flag
    // per group).
    let reporting: Vec<u32> = jobs
        .iter()
        .filter(|j| j.group_reporting)
        .map(|j| j.group_id)
        .collect();
    for j in &mut jobs {
        j.group_reporting = reporting.contains(&j.group_id);
    }
    Ok(JobFilePlan {
        jobs,
        global_options,
        ignored: unsupported,
    })
}

#[cfg(test)]
mod tests;
