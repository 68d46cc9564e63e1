//! fio's zone options in a job (`zonemode`, `zonesize`, `zonerange`,
//! `zoneskip`, `zonecapacity`, `max_open_zones`, `job_max_open_zones`,
//! `read_beyond_wp`, `zone_reset_threshold`, `zone_reset_frequency`) and the
//! `z` suffix of sizes (`size=8z`: eight zones), kept apart from the option
//! table in `mod.rs`. Checks are fio's (init.c `fixup_options`, zbd.c).

use super::value;
use crate::zones::{MAX_OPEN_ZONES, ZoneMode, ZoneSpec};

/// The zone options as written; sizes in zones (`z`) resolved at the end.
#[derive(Debug, Clone, Default)]
pub(super) struct ZoneOptions {
    mode: Option<ZoneMode>,
    size: u64,
    range: u64,
    skip: u64,
    skip_nz: u64,
    capacity: u64,
    max_open: u32,
    job_max_open: u32,
    read_beyond_wp: bool,
    reset_threshold: f64,
    reset_frequency: f64,
    /// `size=Nz`, `offset=Nz`, `io_size=Nz`: counts of zones.
    pub(super) size_nz: u64,
    pub(super) offset_nz: u64,
    pub(super) io_size_nz: u64,
}

impl ZoneOptions {
    /// `size`, `offset` or `io_size` given as a count of zones (`Nz`).
    pub(super) fn set_count(&mut self, name: &str, v: Option<&str>) {
        let n = zone_count(v).unwrap_or(0);
        match name {
            "size" => self.size_nz = n,
            "offset" => self.offset_nz = n,
            _ => self.io_size_nz = n,
        }
    }
}

/// Whether `name` is one of the zone options.
pub(super) fn takes(name: &str) -> bool {
    matches!(
        name,
        "zonemode"
            | "zonesize"
            | "zonerange"
            | "zoneskip"
            | "zonecapacity"
            | "max_open_zones"
            | "zbd_max_open_zones"
            | "job_max_open_zones"
            | "read_beyond_wp"
            | "zone_reset_threshold"
            | "zone_reset_frequency"
            | "ignore_zone_limits"
    )
}

/// `Nz`: a count of zones (fio's `str_size_cb`), else None.
pub(super) fn zone_count(v: Option<&str>) -> Option<u64> {
    let t = v?.trim();
    let n = t.strip_suffix('z').or_else(|| t.strip_suffix('Z'))?;
    n.trim().parse().ok()
}

fn share(name: &str, v: &str) -> Result<f64, String> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|f| (0.0..=1.0).contains(f))
        .ok_or_else(|| format!("{name}={v}: a fraction between 0 and 1"))
}

/// Sets one zone option. Ok(Err(why)): a value csdchar lacks.
pub(super) fn set(
    z: &mut ZoneOptions,
    name: &str,
    v: Option<&str>,
    kb_base: u64,
) -> Result<Result<(), String>, String> {
    let need = || v.ok_or_else(|| format!("{name} needs a value"));
    let wrap = |e: value::ValueError| e.to_string();
    let bytes = |t: &str| value::bytes(t, kb_base).map_err(wrap);
    match name {
        "zonemode" => {
            z.mode = Some(match need()? {
                "none" => ZoneMode::None,
                "strided" => ZoneMode::Strided,
                "zbd" => ZoneMode::Zbd,
                other => return Err(format!("zonemode={other}: none, strided or zbd")),
            })
        }
        "zonesize" => z.size = bytes(need()?)?,
        "zonerange" => z.range = bytes(need()?)?,
        "zoneskip" => match zone_count(v) {
            Some(n) => (z.skip, z.skip_nz) = (0, n),
            None => (z.skip, z.skip_nz) = (bytes(need()?)?, 0),
        },
        "zonecapacity" => z.capacity = bytes(need()?)?,
        "max_open_zones" | "zbd_max_open_zones" | "job_max_open_zones" => {
            let n = value::int(need()?).map_err(wrap)?;
            if n > u64::from(MAX_OPEN_ZONES) {
                return Err(format!("{name}={n}: at most {MAX_OPEN_ZONES}"));
            }
            if name == "job_max_open_zones" {
                z.job_max_open = n as u32;
            } else {
                z.max_open = n as u32;
            }
        }
        "read_beyond_wp" => z.read_beyond_wp = value::boolean(v).map_err(wrap)?,
        "zone_reset_threshold" => z.reset_threshold = share(name, need()?)?,
        "zone_reset_frequency" => z.reset_frequency = share(name, need()?)?,
        // Only the device's own limits are ignored: an emulated device has none.
        _ => {
            let _ = value::boolean(v).map_err(wrap)?;
        }
    }
    Ok(Ok(()))
}

/// The job's zone spec, with `size`, `offset` and `io_size` given in zones
/// turned into bytes. Err: fio's refusal.
pub(super) fn resolve(
    z: &ZoneOptions,
    [size, offset, io_size]: [&mut u64; 3],
    (rw, bs, several_files): (crate::result::block::RwMode, u64, bool),
    lacking: &mut Vec<(&'static str, String)>,
) -> Result<ZoneSpec, String> {
    let mode = match z.mode {
        Some(m) => m,
        // fio: zonesize without zonemode is the strided mode.
        None if z.size > 0 => ZoneMode::Strided,
        None => ZoneMode::None,
    };
    if mode == ZoneMode::None && z.size > 0 {
        return Err("zonemode=none and zonesize are not compatible".into());
    }
    if mode == ZoneMode::Strided && z.size == 0 {
        return Err("zonesize must be given with zonemode=strided".into());
    }
    if mode == ZoneMode::Zbd && z.size == 0 {
        return Err(
            "zonesize is required for zonemode=zbd on a regular file or a block device \
             that is not zoned"
                .into(),
        );
    }
    let nz = |n: u64| n.saturating_mul(z.size);
    if z.size > 0 {
        if z.size_nz > 0 {
            *size = nz(z.size_nz);
        }
        if z.offset_nz > 0 {
            *offset = nz(z.offset_nz);
        }
        if z.io_size_nz > 0 {
            *io_size = nz(z.io_size_nz);
        }
    } else if z.size_nz + z.offset_nz + z.io_size_nz > 0 {
        return Err("a size in zones (Nz) needs zonesize".into());
    }
    let skip = if z.skip_nz > 0 { nz(z.skip_nz) } else { z.skip };
    if mode == ZoneMode::Zbd {
        if z.capacity > z.size {
            return Err(format!(
                "zonecapacity {} is larger than zonesize {}",
                z.capacity, z.size
            ));
        }
        if skip % z.size != 0 {
            return Err(format!(
                "zoneskip {skip} is not a multiple of the zone size {}",
                z.size
            ));
        }
        if z.job_max_open > 0 && z.max_open == 0 {
            return Err("job_max_open_zones cannot be used without max_open_zones".into());
        }
    }
    if mode == ZoneMode::None {
        return Ok(ZoneSpec::default());
    }
    // fio's zbd_zone_align_file_sizes: a job that writes or trims starts at
    // a zone's start and covers whole zones.
    if mode == ZoneMode::Zbd && rw != crate::result::block::RwMode::Read && *size > 0 {
        let zs = z.size;
        let start = offset.next_multiple_of(zs);
        let end = (*offset + *size) / zs * zs;
        if end <= start {
            return Err(format!(
                "the region ({size} bytes at {offset}) holds no whole zone of {zs} bytes: \
                 io_size must be at least one zone"
            ));
        }
        (*offset, *size) = (start, end - start);
    }
    let spec = ZoneSpec {
        mode,
        size: z.size,
        range: if mode == ZoneMode::Strided && z.range == 0 {
            z.size
        } else {
            z.range
        },
        skip,
        capacity: z.capacity,
        max_open: z.max_open,
        job_max_open: z.job_max_open,
        read_beyond_wp: z.read_beyond_wp,
        reset_threshold: z.reset_threshold,
        reset_frequency: z.reset_frequency,
    };
    lacking.extend(lacks(&spec, rw, bs));
    if several_files {
        lacking.push((
            "zonemode",
            "zones with several files per job (csdchar's zones are those of one file)".into(),
        ));
    }
    Ok(spec)
}

/// What csdchar does not run of a zone spec (option, why), or fio's refusal
/// of a trim size.
fn lacks(
    z: &ZoneSpec,
    rw: crate::result::block::RwMode,
    bs: u64,
) -> Option<(&'static str, String)> {
    if z.mode != ZoneMode::Zbd {
        return None;
    }
    if z.skip > 0 {
        return Some((
            "zoneskip",
            "zoneskip with zonemode=zbd (csdchar skips zones only in zonemode=strided)".into(),
        ));
    }
    if rw.trims() && bs != z.size {
        return Some((
            "bs",
            format!(
                "with zonemode=zbd a trim resets a zone: fio takes only bs equal to the zone size ({})",
                z.size
            ),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::ini::{Expansion, parse};
    use super::super::value::Keywords;
    use super::super::{JobFilePlan, PlanError, plan};
    use crate::zones::ZoneMode;

    fn plan_of(text: &str) -> Result<JobFilePlan, PlanError> {
        let exp = Expansion {
            var: &|_| None,
            keywords: Keywords {
                pagesize: 4096,
                mb_memory: 1024,
                ncpus: 2,
            },
        };
        let s = parse("t.fio", text, &exp, &mut |n, _| Err(format!("{n}: none"))).unwrap();
        plan(&s, false)
    }

    #[test]
    fn sizes_in_zones_are_zonesize_multiples() {
        let p = plan_of(
            "[a]\nfilename=/tmp/x\nzonemode=zbd\nzonesize=256M\nsize=8z\noffset=524z\n\
             zone_reset_threshold=0.7\nzone_reset_frequency=0.125\nmax_open_zones=32\n",
        )
        .unwrap();
        let s = &p.jobs[0].spec;
        assert_eq!((s.size, s.offset), (8 << 28, 524 << 28));
        assert_eq!(s.zones.mode, ZoneMode::Zbd);
        assert_eq!((s.zones.max_open, s.zones.reset_frequency), (32, 0.125));
        // A later size in bytes wins over the count of zones.
        let p =
            plan_of("[a]\nfilename=/tmp/x\nzonemode=zbd\nzonesize=1m\nsize=8z\nsize=2m\n").unwrap();
        assert_eq!(p.jobs[0].spec.size, 2 << 20);
    }

    #[test]
    fn a_zbd_writer_s_region_is_whole_zones() {
        let p = plan_of(
            "[a]\nfilename=/tmp/x\nzonemode=zbd\nzonesize=1m\nrw=write\noffset=512k\nsize=3m\n",
        )
        .unwrap();
        let s = &p.jobs[0].spec;
        assert_eq!((s.offset, s.size), (1 << 20, 2 << 20));
        // A reader keeps its region.
        let p = plan_of("[a]\nfilename=/tmp/x\nzonemode=zbd\nzonesize=1m\noffset=512k\nsize=3m\n")
            .unwrap();
        assert_eq!(
            (p.jobs[0].spec.offset, p.jobs[0].spec.size),
            (512 << 10, 3 << 20)
        );
        let e = plan_of("[a]\nfilename=/tmp/x\nzonemode=zbd\nzonesize=1m\nrw=write\nsize=512k\n")
            .unwrap_err();
        assert!(e.to_string().contains("at least one zone"), "{e}");
    }

    #[test]
    fn zonesize_alone_is_strided_and_zonerange_defaults_to_it() {
        let p = plan_of("[a]\nfilename=/tmp/x\nsize=1g\nzonesize=256m\nzoneskip=2g\n").unwrap();
        let z = &p.jobs[0].spec.zones;
        assert_eq!(z.mode, ZoneMode::Strided);
        assert_eq!((z.size, z.range, z.skip), (256 << 20, 256 << 20, 2 << 30));
    }

    #[test]
    fn fio_s_refusals_name_the_option() {
        for (text, says) in [
            ("zonemode=zbd\n", "zonesize is required"),
            ("zonemode=strided\n", "zonesize must be given"),
            ("zonemode=none\nzonesize=1m\n", "not compatible"),
            (
                "zonemode=zbd\nzonesize=1m\nzonecapacity=2m\n",
                "larger than zonesize",
            ),
            (
                "zonemode=zbd\nzonesize=1m\njob_max_open_zones=2\n",
                "without max_open_zones",
            ),
            (
                "zonemode=zbd\nzonesize=1m\nzone_reset_threshold=2\n",
                "between 0 and 1",
            ),
            (
                "zonemode=zbd\nzonesize=1m\nmax_open_zones=5000\n",
                "at most 4096",
            ),
            ("zonemode=sideways\n", "none, strided or zbd"),
        ] {
            let e = plan_of(&format!("[a]\nfilename=/tmp/x\nsize=4m\n{text}")).unwrap_err();
            assert!(e.to_string().contains(says), "{text}: {e}");
        }
        // Trims in zbd mode reset whole zones: bs must be the zone size.
        let e = plan_of("[a]\nfilename=/tmp/x\nsize=4m\nrw=trim\nzonemode=zbd\nzonesize=1m\n")
            .unwrap_err();
        assert!(
            e.to_string().contains("bs=") || e.to_string().contains("[a]"),
            "{e}"
        );
        assert!(e.to_string().contains("zone size"), "{e}");
        assert!(
            plan_of("[a]\nfilename=/tmp/x\nsize=4m\nrw=trim\nbs=1m\nzonemode=zbd\nzonesize=1m\n")
                .is_ok()
        );
    }

    #[test]
    fn zones_with_several_files_are_refused_by_line() {
        let e = plan_of("[a]\nnrfiles=2\nsize=8m\nzonemode=zbd\nzonesize=1m\n").unwrap_err();
        assert!(e.to_string().contains("zonemode=zbd (t.fio:4)"), "{e}");
    }

    #[test]
    fn allow_file_create_is_kept_per_job() {
        let p = plan_of(
            "[global]\nfilename=/tmp/x\nsize=1m\nallow_file_create=0\n[a]\n[b]\nallow_file_create=1\n",
        )
        .unwrap();
        let got: Vec<bool> = p.jobs.iter().map(|j| j.allow_file_create).collect();
        assert_eq!(got, [false, true]);
    }
}
