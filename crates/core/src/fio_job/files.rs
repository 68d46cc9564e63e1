//! A job's files as fio names them: `filename_format` (`$jobname`, `$jobnum`,
//! `$filenum`; fio's default `$jobname.$jobnum.$filenum`), `nrfiles` with
//! `size` split over them as fio's setup_files splits it (or `filesize`
//! each), `openfiles` and `file_service_type`, read with fio's values.

use crate::fileset::{FileService, JobFile, JobFiles, ServiceKind};
use crate::result::block::BlockSpec;

/// A job's file options as written.
#[derive(Debug, Clone)]
pub struct FileOptions {
    /// `filename_format`.
    pub format: Option<String>,
    /// `nrfiles`.
    pub nrfiles: u32,
    /// `openfiles` (0: all).
    pub open: u32,
    /// `file_service_type`.
    pub service: FileService,
    /// `filename`'s files, in order.
    pub list: Vec<String>,
    /// The top of a `filesize` range (its bottom is the job's filesize).
    pub filesize_high: u64,
}

impl Default for FileOptions {
    fn default() -> Self {
        FileOptions {
            format: None,
            nrfiles: 1,
            open: 0,
            service: FileService::default(),
            list: Vec::new(),
            filesize_high: 0,
        }
    }
}

impl FileOptions {
    /// Whether `key` is one of these options.
    pub fn takes(key: &str) -> bool {
        matches!(
            key,
            "filename_format"
                | "nrfiles"
                | "nr_files"
                | "openfiles"
                | "open_files"
                | "file_service_type"
        )
    }

    /// Reads option `key` (one [`FileOptions::takes`]) set to `v`.
    pub fn set(&mut self, key: &str, v: &str) -> Result<(), String> {
        match key {
            "filename_format" => self.format = Some(v.to_string()),
            "nrfiles" | "nr_files" => self.nrfiles = count(v, "nrfiles", 1)?,
            // fio clamps openfiles to nrfiles (0: all).
            "openfiles" | "open_files" => self.open = count(v, "openfiles", 0)?,
            _ => self.service = check_file_service(v)?,
        }
        Ok(())
    }

    /// Whether the job has several files: `filename=`'s list, or
    /// `nrfiles` of its own without `filename=` (fio then ignores nrfiles).
    pub fn several(&self, filename: Option<&String>) -> bool {
        self.list.len() > 1 || (self.nrfiles > 1 && filename.is_none())
    }
}

/// A count option's value, `min` to `u32::MAX`.
fn count(t: &str, name: &str, min: u64) -> Result<u32, String> {
    let n = crate::fio_job::value::int(t).map_err(|e| e.to_string())?;
    if !(min..=u64::from(u32::MAX)).contains(&n) {
        return Err(format!(
            "{name}={t}: must be between {min} and {}",
            u32::MAX
        ));
    }
    Ok(n as u32)
}

/// The names of a `filename=` list as fio's get_next_str splits it: at each
/// ':' not escaped as '\:' (which stands for ':'), a leading ':' skipped, up
/// to an empty name.
pub fn split_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                cur.push(':');
                chars.next();
            }
            ':' if cur.is_empty() && names.is_empty() => {}
            ':' => names.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    names.push(cur);
    if let Some(k) = names.iter().position(|n| n.is_empty()) {
        names.truncate(k.max(1));
    }
    names
}

/// Gives `spec` the files of clone `clone` of job `name` in `dir` (`filename=`'s
/// list, or `nrfiles` named by `filename_format`), each of fio's size (`size`
/// / files, or `filesize`), `size` becoming the job's I/O as fio's
/// setup_files leaves it (the files' total when not given or larger). Err:
/// what csdchar lacks for this job, for the refusal.
pub fn apply(
    o: &FileOptions,
    spec: &mut BlockSpec,
    dir: Option<&str>,
    name: &str,
    clone: u32,
    filesize: Option<u64>,
) -> Result<(), String> {
    let paths: Vec<String> = if o.list.len() > 1 {
        o.list
            .iter()
            .map(|f| dir.map_or(f.clone(), |d| format!("{d}/{f}")))
            .collect()
    } else {
        (0..o.nrfiles)
            .map(|i| {
                let f = file_name(o.format.as_deref(), name, clone, i);
                format!("{}/{f}", dir.unwrap_or("."))
            })
            .collect()
    };
    if o.list.len() > 1 && spec.rw.trims() {
        return Err("trims on a filename= list (its files may be devices and files)".into());
    }
    let n = paths.len() as u64;
    let with = |what: &str| Err(format!("several files per job with {what}"));
    if !spec.bssplit.is_none() {
        return with("bssplit");
    }
    if spec.rw_seq_add != 0 {
        return with("an offset modifier");
    }
    if spec.offset_increment != 0 {
        return with("offset_increment");
    }
    if !spec.random_distribution.is_uniform() {
        return with("a skewed random_distribution");
    }
    if spec.rw.trims() && spec.rw.writes() {
        return with("trimwrite");
    }
    if spec.verify || spec.verify_only {
        return with("verify");
    }
    if !spec.dedupe.is_none() {
        return with("fio's dedupe modes");
    }
    // A filesize range: each file's size drawn in it, as fio's
    // get_rand_file_size (uniform, rounded down to a block), from the job's seed.
    let drawn = |i: usize| match filesize {
        Some(lo) if o.filesize_high != lo => {
            let (lo, hi) = (lo.min(o.filesize_high), lo.max(o.filesize_high));
            let r = crate::pattern::mix64(spec.seed ^ 0x4653_495A ^ i as u64) >> 11;
            let size = lo + ((hi - lo) as f64 * (r as f64 / (1u64 << 53) as f64)) as u64;
            Some(size - size % spec.bs)
        }
        f => f,
    };
    // fio's io_size of a file: from offset, size's share or the rest of filesize.
    let each = match filesize {
        Some(f) if f <= spec.offset => {
            return Err(format!(
                "offset={} at or beyond filesize={f} (fio: offset exceeds file size)",
                spec.offset
            ));
        }
        Some(f) => f - spec.offset,
        None if spec.size == 0 => {
            return Err(
                "nrfiles without size= or filesize= (fio: you need to specify size=)".into(),
            );
        }
        None => spec.size / n,
    };
    if each < spec.bs {
        return Err(format!(
            "files of {each} bytes, smaller than a block of bs={} (fio: blocksize too large for \
             data set)",
            spec.bs
        ));
    }
    // fio's setup_files: what size leaves beyond whole multiples of the
    // files goes, a block each, to the first files; a file's last partial
    // block is in the file but never done.
    let extra = match filesize {
        Some(_) => 0,
        None => (spec.size - each * n) / spec.bs,
    };
    let mut files = Vec::with_capacity(paths.len());
    for (i, path) in paths.into_iter().enumerate() {
        let size = match drawn(i) {
            Some(f) if f <= spec.offset || f - spec.offset < spec.bs => {
                return Err(format!(
                    "a file of {f} bytes drawn from filesize, without a block after offset={}",
                    spec.offset
                ));
            }
            Some(f) => f - spec.offset,
            None => each + if (i as u64) < extra { spec.bs } else { 0 },
        };
        files.push(JobFile { path, size });
    }
    let total: u64 = files.iter().map(|f| f.size).sum();
    if spec.size == 0 || spec.size > total {
        spec.size = total;
    }
    if spec.io_size > total {
        return Err(format!(
            "io_size={} beyond the files' {total} bytes (csdchar does not start the files over \
             within a loop)",
            spec.io_size
        ));
    }
    spec.target = Some(files[0].path.clone());
    spec.files = JobFiles {
        files,
        service: o.service.clone(),
        open: o.open.min(n as u32),
    };
    Ok(())
}

/// fio's region and I/O for a job of one file with a fixed `filesize`
/// (setup_files): the region is the file less `offset`; `size` becomes the
/// smaller of itself and the region, and the I/O done is `io_size` or that
/// (fio's total_io_size; csdchar's `io_size` when it is less than the
/// region). Returns (region, io_size), or Err(option, message) when fio
/// refuses the job.
pub fn one_file(
    size: u64,
    offset: u64,
    io_size: u64,
    filesize: u64,
    bs: u64,
) -> Result<(u64, u64), (&'static str, String)> {
    if offset >= filesize {
        return Err((
            "offset",
            format!(
                "offset={offset} at or beyond filesize={filesize} (fio: you need to specify \
                 valid offset=)"
            ),
        ));
    }
    let region = filesize - offset;
    if region < bs {
        return Err((
            "filesize",
            format!(
                "{region} bytes after offset, less than a block of bs={bs} (fio: blocksize is \
                 larger than data set range)"
            ),
        ));
    }
    let io = match size.min(region) {
        s if io_size == 0 && s > 0 && s < region => s,
        _ => io_size,
    };
    Ok((region, io))
}

/// fio's `filename_format` default.
pub const DEFAULT_FORMAT: &str = "$jobname.$jobnum.$filenum";

/// The name of file `filenum` of clone `jobnum` of job `jobname` (fio's
/// `make_filename`: each keyword replaced wherever it stands, matched without
/// regard to case).
pub fn file_name(format: Option<&str>, jobname: &str, jobnum: u32, filenum: u32) -> String {
    let format = format.filter(|f| !f.is_empty()).unwrap_or(DEFAULT_FORMAT);
    let mut out = format.to_string();
    for (key, value) in [
        ("$jobname", jobname.to_string()),
        ("$jobnum", jobnum.to_string()),
        ("$filenum", filenum.to_string()),
    ] {
        // fio replaces the first match, then searches the result again.
        let mut from = 0;
        while let Some(at) = out[from..].to_ascii_lowercase().find(key) {
            let at = from + at;
            out.replace_range(at..at + key.len(), &value);
            from = at + value.len();
        }
    }
    out
}

/// Whether `format` holds the keyword (fio's `strcasestr`).
pub fn has_keyword(format: Option<&str>, key: &str) -> bool {
    format
        .filter(|f| !f.is_empty())
        .unwrap_or(DEFAULT_FORMAT)
        .to_ascii_lowercase()
        .contains(key)
}

/// Reads a `file_service_type` value as fio does: `random`, `roundrobin` or
/// `sequential` with an optional `:N` (I/Os before the next file), or a
/// random file drawn from `zipf`, `pareto`, `normal`/`gauss` with an
/// optional `:VALUE[:CENTER]` (fio's defaults 1.1, 0.2 and 0).
pub fn check_file_service(text: &str) -> Result<FileService, String> {
    let (kind, arg) = match text.split_once(':') {
        Some((k, a)) => (k, Some(a)),
        None => (text, None),
    };
    let numeric = matches!(kind, "zipf" | "pareto" | "normal" | "gauss");
    if !numeric && !matches!(kind, "random" | "roundrobin" | "sequential") {
        return Err(format!(
            "file_service_type={text}: random, roundrobin, sequential, zipf, pareto, normal or \
             gauss, with an optional :N"
        ));
    }
    if numeric {
        // fio's str_fst_cb: split_parse_distr as random_distribution's.
        let name = if kind == "gauss" { "normal" } else { kind };
        let text_as = arg.map_or(name.to_string(), |a| format!("{name}:{a}"));
        let skew = crate::distribution::Distribution::parse(&text_as, 1024)
            .map_err(|e| format!("file_service_type={text}: {e}"))?;
        return Ok(FileService {
            kind: ServiceKind::Random,
            ios: 1,
            skew: Some(skew),
        });
    }
    let ios = match arg {
        None => 1,
        Some(a) if !numeric && a.parse::<u32>().is_ok_and(|n| n > 0) => {
            a.parse::<u32>().unwrap_or(1)
        }
        Some(a) => {
            return Err(format!(
                "file_service_type={text}: '{a}' is not a positive number"
            ));
        }
    };
    let kind = match kind {
        "random" => ServiceKind::Random,
        "sequential" => ServiceKind::Sequential,
        _ => ServiceKind::Roundrobin,
    };
    Ok(FileService {
        kind,
        ios,
        skew: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_fio_s_format() {
        assert_eq!(file_name(None, "seq", 2, 0), "seq.2.0");
        assert_eq!(file_name(Some(""), "seq", 0, 0), "seq.0.0");
        assert_eq!(
            file_name(Some("$JOBNAME-$jobnum/$jobname.$filenum.dat"), "j", 3, 0),
            "j-3/j.0.dat"
        );
        assert_eq!(file_name(Some("shared"), "j", 3, 0), "shared");
        // As fio: a keyword the job name brings in is replaced too.
        assert_eq!(file_name(Some("$jobname$jobnum"), "$jobnum", 1, 0), "11");
        assert!(has_keyword(Some("x$JobNum"), "$jobnum"));
        assert!(!has_keyword(Some("x"), "$jobnum"));
    }

    #[test]
    fn one_file_s_region_and_io_are_fio_s() {
        let (k, m) = (4096, 1 << 20);
        // (size, offset, io_size, filesize) -> (region, io_size)
        assert_eq!(one_file(m, 0, 0, 2 * m, k), Ok((2 * m, m)));
        assert_eq!(one_file(4 * m, 0, 0, m, k), Ok((m, 0)));
        assert_eq!(one_file(0, m / 2, 0, 2 * m, k), Ok((3 * m / 2, 0)));
        assert_eq!(one_file(m, 0, 3 * m, 2 * m, k), Ok((2 * m, 3 * m)));
        assert_eq!(one_file(2 * m, m, 0, 2 * m, k), Ok((m, 0)));
        assert_eq!(one_file(0, m, 0, m, k).unwrap_err().0, "offset");
        assert_eq!(one_file(0, m - k, 0, m, 2 * k).unwrap_err().0, "filesize");
    }

    #[test]
    fn filename_lists_split_as_fio_s() {
        assert_eq!(split_names("a:b"), ["a", "b"]);
        assert_eq!(split_names(r"a\:b:c"), ["a:b", "c"]);
        assert_eq!(split_names(":a:b:"), ["a", "b"]);
        assert_eq!(split_names("a::b"), ["a"]);
        assert_eq!(split_names("/dev/x"), ["/dev/x"]);
    }

    #[test]
    fn service_types_are_fio_s() {
        for ok in [
            "random",
            "roundrobin:4",
            "sequential",
            "zipf:1.2",
            "normal",
            "gauss:5",
            "pareto:0.3:0.5",
        ] {
            assert!(check_file_service(ok).is_ok(), "{ok}");
        }
        assert_eq!(
            check_file_service("roundrobin:4").unwrap(),
            FileService {
                kind: ServiceKind::Roundrobin,
                ios: 4,
                skew: None
            }
        );
        assert!(check_file_service("gauss").unwrap().nonuniform());
        for bad in [
            "rr",
            "roundrobin:0",
            "random:x",
            "zipf:-1",
            "zipf:1",
            "pareto:1.5",
            "gauss:x",
        ] {
            assert!(check_file_service(bad).is_err(), "{bad}");
        }
    }
}
