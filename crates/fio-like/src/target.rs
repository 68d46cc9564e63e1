//! Opening the target: size and alignment checks against the real device,
//! the safety refusal, and laying out a file's data when reads need it.
//! Everything that can reject the job is checked before anything is written.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

use csdchar_core::pattern::{DataSpec, PatternGenerator};
use csdchar_core::result::block::{BlockSpec, EngineKind, Fallocate, TargetInfo, TargetKind};
use csdchar_core::units::format_bytes;

use crate::error::BlockError;
use crate::safety::write_hazards;
use crate::sysinfo::sys_dev_block;
use csdchar_devices::{BlockDevice, Sysfs};

/// A target ready for I/O.
pub struct PreparedTarget {
    /// Open file (None for the null engine).
    pub file: Option<File>,
    /// What was found.
    pub info: TargetInfo,
    /// Bytes of the region each job works on (a whole number of blocks).
    pub size: u64,
    /// The block device holding the target, when there is one.
    pub device: Option<BlockDevice>,
    /// Whether `prepare` created the file (it did not exist before): only
    /// such a file may be removed when the run fails before any I/O.
    pub created: bool,
    /// The exclusive claim on a block device the run writes to (without
    /// --force), shared with the process's other runs on it.
    pub claim: Option<Arc<File>>,
}

/// Block devices this process holds claimed, by device number: an O_EXCL
/// descriptor each, alive while any run on the device holds it. The kernel
/// refuses a second exclusive open even from the same process, so a job
/// file's jobs on one device (fio's enospc-pressure.fio) share the first
/// one's claim, and nothing else can mount or claim the device until the
/// last of them ends.
static CLAIMS: Mutex<Vec<(u64, Weak<File>)>> = Mutex::new(Vec::new());

/// This process's claim on block device `rdev` at `path`: the one it holds,
/// or a new exclusive open (EBUSY: something else holds it).
fn claim(path: &Path, rdev: u64) -> std::io::Result<Arc<File>> {
    let mut claims = CLAIMS.lock().unwrap_or_else(|p| p.into_inner());
    claims.retain(|(_, w)| w.strong_count() > 0);
    if let Some(held) = (claims.iter())
        .find(|(d, _)| *d == rdev)
        .and_then(|(_, w)| w.upgrade())
    {
        return Ok(held);
    }
    let mut opts = OpenOptions::new();
    let held = Arc::new(opts.read(true).custom_flags(libc::O_EXCL).open(path)?);
    claims.push((rdev, Arc::downgrade(&held)));
    Ok(held)
}

impl PreparedTarget {
    /// Raw fd for engines (-1 without a file).
    pub fn fd(&self) -> i32 {
        self.file.as_ref().map_or(-1, |f| f.as_raw_fd())
    }
}

fn usage(msg: String) -> BlockError {
    BlockError::Usage(msg)
}

fn block_device_geometry(path: &Path) -> Result<(u64, u32), BlockError> {
    let f = File::open(path).map_err(|e| BlockError::Io(format!("{}: {e}", path.display())))?;
    csdchar_devices::block_geometry(&f).map_err(|e| {
        BlockError::Io(format!(
            "{}: cannot read the device size: {e}",
            path.display()
        ))
    })
}

/// Logical block size of the device holding a file (512 when unknown).
fn file_lbs(dev: u64) -> u32 {
    let sys = sys_dev_block(dev);
    [
        sys.join("queue/logical_block_size"),
        sys.join("../queue/logical_block_size"),
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok()?.trim().parse().ok())
    .unwrap_or(512)
}

/// Refuses to write to a target that is in use (mounted, held, stacked,
/// backing a loop device) or carries a signature, unless `spec.force`. A
/// target that does not exist yet is safe. Job files check every job with
/// this before the first one runs.
pub fn check_write_safety(spec: &BlockSpec) -> Result<(), BlockError> {
    let writes = spec.rw.modifies() && !spec.verify_only;
    let Some(path_str) = spec
        .target
        .as_deref()
        .filter(|_| writes && !spec.force && spec.engine != EngineKind::Null)
    else {
        return Ok(());
    };
    let path = Path::new(path_str);
    let hazards = match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_block_device() => write_hazards(path, m.rdev()),
        Ok(m) if m.is_file() => crate::safety::file_write_hazards(path),
        _ => Vec::new(),
    };
    if hazards.is_empty() {
        return Ok(());
    }
    Err(BlockError::Refused(format!(
        "refusing to write to {path_str}: {}; pass --force to write anyway",
        hazards.join("; ")
    )))
}

/// What [`inspect`] found: the target as it is and the region the job covers.
struct Inspected {
    meta: Option<std::fs::Metadata>,
    kind: TargetKind,
    /// Bytes the target holds (for a file an earlier job grows: what it will hold).
    cur_size: u64,
    lbs: u32,
    /// The device number: the block device's own, or the file system's.
    dev: u64,
    /// Bytes of the region (whole blocks).
    size: u64,
    /// End of the region.
    end: u64,
}

/// A file a job creates or extends: what the file system must find room for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Growth {
    /// The file, canonical (its directory's canonical path when it is new).
    pub file: std::path::PathBuf,
    /// The directory whose file system holds it.
    pub dir: std::path::PathBuf,
    /// The file system's device number.
    pub fs_dev: u64,
    /// Bytes the file holds now (0 when it does not exist).
    pub now: u64,
    /// Bytes it holds after the job.
    pub end: u64,
    /// The job goes on when the file system is full ([`may_fill`]): its
    /// growth is not counted against the room.
    pub may_fill: bool,
}

/// Every check [`prepare`] makes, without touching anything: the target's
/// kind, size and alignment, room on its file system, `--verify-only`'s
/// region and the write-safety refusal. `planned`: bytes an earlier job of
/// the same run leaves in a file (a job file's jobs), counted as if written.
/// Returns the file's growth, when the job creates or extends one.
pub fn precheck(spec: &BlockSpec, planned: Option<u64>) -> Result<Option<Growth>, BlockError> {
    let Some(path_str) = spec
        .target
        .as_deref()
        .filter(|_| spec.engine != EngineKind::Null)
    else {
        return Ok(None);
    };
    let found = inspect(spec, path_str, planned)?;
    let actual = found.meta.as_ref().map_or(0, |m| m.len());
    if found.kind != TargetKind::File || found.end <= actual {
        return Ok(None);
    }
    let path = Path::new(path_str);
    let dir = match &found.meta {
        Some(_) => path.to_path_buf(),
        None => path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf(),
    };
    Ok(Some(Growth {
        file: file_key(path),
        dir,
        fs_dev: found.dev,
        now: actual,
        end: found.end,
        may_fill: may_fill(spec),
    }))
}

/// One name per file, whether it exists yet or not: the canonical path, or
/// its directory's joined with its name.
pub fn file_key(path: &Path) -> std::path::PathBuf {
    path.canonicalize().unwrap_or_else(|_| {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path.file_name().unwrap_or(path.as_os_str());
        dir.canonicalize()
            .unwrap_or_else(|_| dir.to_path_buf())
            .join(name)
    })
}

/// Whether the job fills its file system on purpose (fio's fill_device), or
/// goes on after it is full (fio's continue_on_error and ignore_error with
/// ENOSPC for writes) and lays its file out without taking the room first:
/// then the room is not checked beforehand, the writes that find none fail
/// and end the job or are counted. Nor is it for a job that never grows its
/// file (create_on_open in a job that only reads).
pub fn may_fill(spec: &BlockSpec) -> bool {
    const ENOSPC: i32 = 28;
    let goes_on = spec
        .errors
        .non_fatal(csdchar_core::on_error::ErrorKind::Write, ENOSPC);
    // Layouts that go on without the room (native and posix give up their
    // reservation, as fio's).
    let lazy = !matches!(spec.fallocate, Fallocate::Keep);
    // create_on_open in a job that only reads: the file never grows.
    let still = !spec.create_on_open.is_no() && !spec.rw.writes();
    spec.fill_device || goes_on && lazy || still
}

/// Where the last job's region starts: `offset`, plus fio's
/// `offset_increment` for each job before it.
pub fn last_region_start(spec: &BlockSpec) -> u64 {
    spec.offset + u64::from(spec.numjobs.saturating_sub(1)) * spec.offset_increment
}

/// The region of job `job` (from 0) of `target`: its first byte, and its
/// size in whole blocks. Without `size` each job takes what is left after
/// its start (fio: real_file_size less the job's file_offset).
pub fn job_region(spec: &BlockSpec, target: &PreparedTarget, job: u32) -> (u64, u64) {
    let start = spec.offset + u64::from(job) * spec.offset_increment;
    if spec.size > 0 || spec.offset_increment == 0 || target.info.kind == TargetKind::None {
        return (start, target.size);
    }
    let left = target.info.size_bytes.saturating_sub(start);
    (start, left / spec.bs * spec.bs)
}

/// The checks of [`prepare`] up to the first write.
fn inspect(
    spec: &BlockSpec,
    path_str: &str,
    planned: Option<u64>,
) -> Result<Inspected, BlockError> {
    let writes = spec.rw.modifies() && !spec.verify_only;
    let path = Path::new(path_str);
    let meta = match std::fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(BlockError::Io(format!("{path_str}: {e}"))),
    };
    let (kind, cur_size, lbs, dev) = match &meta {
        None => {
            // (A job file's earlier job that creates it is as good.)
            if spec.verify_only && planned.is_none() {
                return Err(usage(format!(
                    "--verify-only: TARGET {path_str} does not exist; it re-checks data an earlier --verify run wrote"
                )));
            }
            if spec.size == 0 && planned.is_none() && !spec.fill_device {
                return Err(usage(format!(
                    "--size: required when TARGET {path_str} does not exist (e.g. --size 1g)"
                )));
            }
            let parent = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let pm = std::fs::metadata(parent).map_err(|_| {
                usage(format!(
                    "TARGET: directory {} does not exist",
                    parent.display()
                ))
            })?;
            (
                TargetKind::File,
                planned.unwrap_or(0),
                file_lbs(pm.dev()),
                pm.dev(),
            )
        }
        Some(m) if m.file_type().is_block_device() => {
            let (size, lbs) = block_device_geometry(path)?;
            (TargetKind::BlockDevice, size, lbs, m.rdev())
        }
        Some(m) if m.is_file() => (
            TargetKind::File,
            m.len().max(planned.unwrap_or(0)),
            file_lbs(m.dev()),
            m.dev(),
        ),
        Some(_) => {
            return Err(usage(format!(
                "TARGET: {path_str} is neither a block device nor a regular file"
            )));
        }
    };

    // Region: --offset, then --size or what is left of the target. With
    // fio's offset_increment the last job's region starts furthest in.
    let last = last_region_start(spec);
    if last >= cur_size && kind == TargetKind::BlockDevice {
        return Err(usage(format!(
            "--offset: {last} is beyond the end of {path_str} ({cur_size} bytes)"
        )));
    }
    let size = if spec.size > 0 {
        spec.size
    } else if spec.fill_device && kind == TargetKind::File {
        // fio's fill_device on a file: on until ENOSPC, so a block more than
        // the file system has free (what the file holds after the start is
        // written over).
        let dir = if meta.is_some() {
            path
        } else {
            path.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
        };
        let free = csdchar_devices::free_bytes(dir).unwrap_or(0);
        cur_size.saturating_sub(last) + free + spec.bs
    } else {
        cur_size.saturating_sub(last)
    };
    if size == 0 {
        return Err(usage(format!(
            "--size: required, {path_str} is empty (e.g. --size 1g)"
        )));
    }
    if kind == TargetKind::BlockDevice && last + size > cur_size {
        return Err(usage(format!(
            "--size: region {}..{} ends beyond the end of {path_str} ({cur_size} bytes)",
            last,
            last + size
        )));
    }
    let size = size / spec.bs * spec.bs;
    if size == 0 {
        return Err(usage(format!(
            "--size: the region must hold at least one block of --bs {} bytes",
            spec.bs
        )));
    }
    let zones_end = spec.random_distribution.zoned_abs_end();
    if zones_end > size {
        return Err(usage(format!(
            "--random-distribution {}: the zones end at byte {zones_end}, beyond the region of {size} bytes \
             (fio: zoned_abs sizes exceed file size)",
            spec.random_distribution
        )));
    }
    let end = last + size;
    if spec.verify_only && cur_size.max(planned.unwrap_or(0)) < end {
        return Err(usage(format!(
            "--verify-only: TARGET {path_str} holds {cur_size} bytes, less than --offset + --size ({end}); \
             it re-checks data an earlier --verify run wrote there"
        )));
    }
    if kind == TargetKind::File && cur_size < end && !may_fill(spec) {
        check_room(path, path_str, cur_size, end)?;
    }
    if spec.direct
        && (!spec.bs.is_multiple_of(u64::from(lbs))
            || !spec.offset.is_multiple_of(u64::from(lbs))
            || !spec.offset_increment.is_multiple_of(u64::from(lbs))
            || spec
                .bssplit
                .0
                .iter()
                .flatten()
                .any(|e| !e.bs.is_multiple_of(u64::from(lbs))))
    {
        return Err(usage(format!(
            "--bs/--offset: must be multiples of {path_str}'s logical block size ({lbs} bytes) with --direct"
        )));
    }

    if writes {
        check_write_safety(spec)?;
    }
    Ok(Inspected {
        meta,
        kind,
        cur_size,
        lbs,
        dev,
        size,
        end,
    })
}

/// Checks the target against the spec, refuses unsafe writes, opens it and
/// lays out file data where needed.
pub fn prepare(spec: &BlockSpec) -> Result<PreparedTarget, BlockError> {
    let writes = spec.rw.modifies() && !spec.verify_only;
    let reads_existing = spec.rw.reads() || spec.verify_only;
    let Some(path_str) = spec
        .target
        .as_deref()
        .filter(|_| spec.engine != EngineKind::Null)
    else {
        // The null engine touches nothing.
        let size = if spec.size == 0 { 1 << 30 } else { spec.size };
        return Ok(PreparedTarget {
            file: None,
            info: TargetInfo {
                path: spec.target.clone(),
                kind: TargetKind::None,
                size_bytes: size,
                logical_block_size: 512,
                device: None,
                laid_out: false,
            },
            size: size / spec.bs * spec.bs,
            device: None,
            created: false,
            claim: None,
        });
    };
    let path = Path::new(path_str);
    let Inspected {
        meta,
        kind,
        cur_size,
        lbs,
        dev,
        size,
        end,
    } = inspect(spec, path_str, None)?;

    // Nothing above wrote anything. From here on the target is touched; a
    // file created here is removed again if setting it up fails.
    let created = meta.is_none();
    let remove_created = |e: BlockError| {
        if created {
            let _ = std::fs::remove_file(path);
        }
        e
    };
    let mut laid_out = false;
    if !spec.create_on_open.is_no() {
        // fio's create_on_open: not laid out, opened with O_CREAT (empty
        // when new; grown only by the job's writes).
        if created {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(|e| BlockError::Io(format!("creating {path_str}: {e}")))?;
        }
    } else if kind == TargetKind::File && cur_size < end {
        lay_out(path, cur_size, end, reads_existing, spec).map_err(remove_created)?;
        laid_out = true;
    }

    let mut opts = OpenOptions::new();
    opts.read(true).write(writes);
    let mut flags = 0;
    if spec.direct {
        flags |= libc::O_DIRECT;
    }
    opts.custom_flags(flags);
    // Exclusive claim: fails with EBUSY if anything mounts or claims it meanwhile.
    let claimed = match (kind, meta.as_ref()) {
        (TargetKind::BlockDevice, Some(m)) if writes && !spec.force => Some(claim(path, m.rdev())),
        _ => None,
    }
    .transpose();
    let opened = claimed.and_then(|c| opts.open(path).map(|f| (f, c)));
    let (file, claim) = opened.map_err(|e| match e.raw_os_error() {
        Some(libc::EINVAL) if spec.direct => usage(format!(
            "--direct: {path_str}'s file system does not support O_DIRECT; pass --direct 0"
        )),
        Some(libc::EBUSY) => BlockError::Refused(format!(
            "refusing to write to {path_str}: the device is busy (mounted or claimed); pass --force to write anyway"
        )),
        _ => BlockError::Io(format!("{path_str}: {e}")),
    })
    .map_err(remove_created)?;

    let device = Sysfs::from_env().by_number(rustix::fs::major(dev), rustix::fs::minor(dev));
    Ok(PreparedTarget {
        file: Some(file),
        claim,
        info: TargetInfo {
            path: Some(path_str.to_string()),
            kind,
            size_bytes: cur_size.max(end),
            logical_block_size: lbs,
            device: device.as_ref().map(|d| d.name.clone()),
            laid_out,
        },
        size,
        device,
        created,
    })
}

/// Refuses to grow a file to `end` bytes when its file system cannot hold
/// that (free space plus what the file already has) or the process may not
/// write a file that large: the run would fail part-way with nothing learned.
fn check_room(path: &Path, path_str: &str, cur_size: u64, end: u64) -> Result<(), BlockError> {
    if let Some(limit) = rustix::process::getrlimit(rustix::process::Resource::Fsize).current
        && end > limit
    {
        return Err(usage(format!(
            "--size: {path_str} would grow to {end} bytes, beyond the largest file this process may write ({limit} bytes, ulimit -f)"
        )));
    }
    let dir = if cur_size == 0 && !path.exists() {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
    } else {
        path
    };
    let Some(free) = csdchar_devices::free_bytes(dir) else {
        return Ok(());
    };
    if end - cur_size > free {
        return Err(usage(format!(
            "--size: {path_str} would grow to {} ({end} bytes), but its file system has only {} free{}",
            format_bytes(end as f64),
            format_bytes(free as f64),
            if cur_size > 0 {
                format!(" beyond the file's {cur_size} bytes")
            } else {
                String::new()
            }
        )));
    }
    Ok(())
}

/// Extends a file to `end`. When the job reads, the new part gets real data
/// in the job's layout (reading holes would measure nothing); otherwise the
/// file is only extended, sparsely.
fn lay_out(
    path: &Path,
    from: u64,
    end: u64,
    with_data: bool,
    spec: &BlockSpec,
) -> Result<(), BlockError> {
    let io = |e: std::io::Error| BlockError::Io(format!("laying out {}: {e}", path.display()));
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(io)?;
    // fio's fallocate: the whole file, before any data (fio's fallocate_file).
    let reserve = |f: &std::fs::File, flags: rustix::fs::FallocateFlags| {
        rustix::fs::fallocate(f, flags, 0, end).map_err(|e| io(e.into()))
    };
    match spec.fallocate {
        // fio's native and posix fallocate: a file system without it (or
        // short of room, which the room check has ruled out) leaves the file
        // to grow as written; fio ignores native's failure and only logs
        // posix's.
        Fallocate::Native | Fallocate::Posix => {
            let _ = reserve(&f, rustix::fs::FallocateFlags::empty());
        }
        Fallocate::Keep => reserve(&f, rustix::fs::FallocateFlags::KEEP_SIZE)?,
        Fallocate::Sparse | Fallocate::None => {}
    }
    if !with_data {
        match spec.fallocate {
            // Sparse, not fallocated: compressing file systems (btrfs) store
            // writes into preallocated extents uncompressed.
            Fallocate::Sparse => f.set_len(end).map_err(io)?,
            // The file grows as the job writes (keep: in blocks reserved).
            Fallocate::None | Fallocate::Keep | Fallocate::Native | Fallocate::Posix => {}
        }
        return Ok(());
    }
    let chunk = (spec.compress_chunk as usize).clamp(1, spec.bs as usize);
    let mut generator = PatternGenerator::new(
        DataSpec {
            compress_pct: spec.compress_pct,
            chunk,
            fill: spec.compress_fill,
            dedupe_pct: spec.dedupe_pct,
        },
        spec.seed ^ 0x4C41_594F_5554,
    );
    let mut buf = vec![0u8; 1 << 20];
    let mut stamps = Vec::new();
    use std::io::{Seek, SeekFrom};
    f.seek(SeekFrom::Start(from)).map_err(io)?;
    let mut pos = from;
    while pos < end {
        let n = ((end - pos) as usize).min(buf.len());
        stamps.clear();
        generator.fill(&mut buf[..n], &mut stamps);
        csdchar_core::pattern::stamp(&mut buf[..n], &stamps, pos);
        f.write_all(&buf[..n]).map_err(io)?;
        pos += n as u64;
    }
    f.sync_all().map_err(io)?;
    Ok(())
}
