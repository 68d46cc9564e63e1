//! fio's zone modes in a job: where each planned I/O really goes
//! (`csdchar_core::zones`), with the zone table of `zonemode=zbd` shared by
//! every job of a run on the same file, as fio shares a file's zone
//! information between its jobs (zbd.c, `zbd_init_zone_info`).
//!
//! The target is a regular file or a block device that is not zoned: fio
//! emulates zones on it (write pointers in memory, every zone empty when the
//! run starts). A host-managed or host-aware zoned device is refused before
//! any I/O ([`refuse_real_zoned`]): csdchar does not report or reset real
//! zones (BLKREPORTZONE, BLKRESETZONE).

use std::sync::{Arc, Mutex};

use csdchar_core::result::block::BlockSpec;
use csdchar_core::zones::{Placed, Strided, ZoneJob, ZoneMode, ZoneSpec, ZoneTable};

/// The zone tables of the run, by file.
type Tables = Vec<(std::path::PathBuf, Arc<Mutex<ZoneTable>>)>;

static TABLES: Mutex<Tables> = Mutex::new(Vec::new());

/// Forgets the zones of these files: a run of a job file starts with empty
/// zones, as a new fio process does (other runs in this process, on other
/// files, keep theirs).
pub fn forget<'a>(paths: impl IntoIterator<Item = &'a str>) {
    let keys: Vec<_> = paths
        .into_iter()
        .map(|p| crate::target::file_key(std::path::Path::new(p)))
        .collect();
    TABLES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|(k, _)| !keys.contains(k));
}

fn table_for(path: &str, spec: &ZoneSpec, real_size: u64) -> Result<Arc<Mutex<ZoneTable>>, String> {
    let key = crate::target::file_key(std::path::Path::new(path));
    let mut all = TABLES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, t)) = all.iter().find(|(k, _)| *k == key) {
        let t = Arc::clone(t);
        let size = t.lock().unwrap_or_else(|e| e.into_inner()).zone_size();
        if size != spec.size {
            return Err(format!(
                "zonesize {} differs from the zone size {size} another job gave {path}",
                spec.size
            ));
        }
        return Ok(t);
    }
    let t = Arc::new(Mutex::new(ZoneTable::new(spec, real_size)?));
    all.push((key, Arc::clone(&t)));
    Ok(t)
}

/// Refuses a target that is a zoned block device (sysfs `queue/zoned` of
/// its disk is not `none`): csdchar emulates zones only.
pub fn refuse_real_zoned(path: &str) -> Result<(), String> {
    zoned_refusal(&csdchar_devices::Sysfs::from_env(), path)
}

fn zoned_refusal(sys: &csdchar_devices::Sysfs, path: &str) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let p = std::path::Path::new(path);
    if !std::fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device()) {
        return Ok(());
    }
    match sys.resolve(p).ok().and_then(|d| sys.zoned_model(&d)) {
        None => Ok(()),
        Some(model) => Err(format!(
            "zonemode=zbd: {path} is a zoned block device ({model}); csdchar emulates zones on \
             files and devices that are not zoned and does not report or reset real zones"
        )),
    }
}

/// One job's zones.
pub enum JobZones {
    /// `zonemode=strided`.
    Strided(Strided),
    /// `zonemode=zbd`: the file's table and the job's view of it.
    Zbd {
        table: Arc<Mutex<ZoneTable>>,
        job: ZoneJob,
        /// Mixed reads and writes: a read before any data is a write
        /// (fio's `zbd_adjust_ddir`).
        mixed: bool,
        read_beyond_wp: bool,
    },
}

impl JobZones {
    /// The job's zones, None without a zone mode. `size` is the job's
    /// region, `real_size` the target's size.
    pub fn new(spec: &BlockSpec, size: u64, real_size: u64) -> Result<Option<Self>, String> {
        let z = &spec.zones;
        match z.mode {
            ZoneMode::None => Ok(None),
            ZoneMode::Strided => Ok(Some(JobZones::Strided(Strided::new(
                z,
                spec.offset,
                real_size,
            )))),
            ZoneMode::Zbd => {
                let path = spec.target.as_deref().unwrap_or("");
                refuse_real_zoned(path)?;
                let table = table_for(path, z, real_size)?;
                let min_bs = [0, 1, 2].map(|d| spec.unit_of(d));
                let job = table.lock().unwrap_or_else(|e| e.into_inner()).job(
                    spec.offset,
                    size,
                    spec.rw.is_random(),
                    min_bs,
                );
                Ok(Some(JobZones::Zbd {
                    table,
                    job,
                    mixed: spec.rw.reads() && spec.rw.writes(),
                    read_beyond_wp: z.read_beyond_wp,
                }))
            }
        }
    }

    /// Whether these are `zonemode=zbd` zones (trims reset zones, no I/O).
    pub fn is_zbd(&self) -> bool {
        matches!(self, JobZones::Zbd { .. })
    }

    /// Where the I/O of direction `dir` (0 read, 1 write, 2 trim) planned at
    /// `offset` for `len` bytes goes: (direction, offset, length, whether a
    /// zone was reset for it); None: the job ends. `random`: the job's
    /// offsets are random; `region` the start of its region, `unit` the
    /// direction's offset unit.
    pub fn place(
        &mut self,
        dir: usize,
        offset: u64,
        len: u64,
        region: u64,
        unit: u64,
        random: bool,
    ) -> Result<Option<(usize, u64, u64, bool)>, String> {
        match self {
            JobZones::Strided(s) => {
                let off = if random {
                    s.next_random(dir, offset - region, unit, len)
                } else {
                    s.next_seq(dir, len)
                };
                Ok(off.map(|o| (dir, o, len, false)))
            }
            JobZones::Zbd {
                table,
                job,
                mixed,
                read_beyond_wp,
            } => {
                let mut t = table.lock().unwrap_or_else(|e| e.into_inner());
                let dir = if dir == 0 && *mixed && !*read_beyond_wp && t.with_data == 0 {
                    1
                } else {
                    dir
                };
                Ok(match t.adjust(job, dir, offset, len)? {
                    Placed::Io { offset, len, reset } if len > 0 => Some((dir, offset, len, reset)),
                    _ => None,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};

    #[test]
    fn a_zoned_block_device_is_refused_and_a_file_is_not() {
        // Any block device node of this machine, described by a fixture sysfs.
        let Some((node, rdev)) = std::fs::read_dir("/dev").ok().and_then(|d| {
            d.flatten().find_map(|e| {
                let m = e.metadata().ok()?;
                m.file_type()
                    .is_block_device()
                    .then(|| (e.path().display().to_string(), m.rdev()))
            })
        }) else {
            eprintln!("skipped: no block device node in /dev");
            return;
        };
        let (ma, mi) = (rustix::fs::major(rdev), rustix::fs::minor(rdev));
        for (model, refused) in [
            ("host-managed", true),
            ("host-aware", true),
            ("none", false),
        ] {
            let d = tempfile::tempdir().unwrap();
            let dev = d.path().join("devices/virtual/block/zd0");
            std::fs::create_dir_all(dev.join("queue")).unwrap();
            std::fs::write(dev.join("queue/zoned"), format!("{model}\n")).unwrap();
            std::fs::create_dir_all(d.path().join("dev/block")).unwrap();
            std::fs::create_dir_all(d.path().join("block")).unwrap();
            std::os::unix::fs::symlink(&dev, d.path().join(format!("dev/block/{ma}:{mi}")))
                .unwrap();
            std::os::unix::fs::symlink(&dev, d.path().join("block/zd0")).unwrap();
            let sys = csdchar_devices::Sysfs::at(d.path());
            let r = zoned_refusal(&sys, &node);
            assert_eq!(r.is_err(), refused, "{model}: {r:?}");
            if let Err(m) = r {
                assert!(m.contains(model) && m.contains("zoned block device"), "{m}");
            }
        }
        let f = tempfile::NamedTempFile::new().unwrap();
        let sys = csdchar_devices::Sysfs::at("/nonexistent");
        assert!(zoned_refusal(&sys, f.path().to_str().unwrap()).is_ok());
    }
}
