//! A job's files as fio names them: `filename_format` (`$jobname`, `$jobnum`,
//! `$filenum`; fio's default `$jobname.$jobnum.$filenum`), and the file
//! options that change nothing while a job has one file (`nrfiles=1`,
//! `openfiles`, `file_service_type`), read with fio's values.

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

/// Checks a `file_service_type` value as fio reads it: `random`,
/// `roundrobin` or `sequential` with an optional `:N` (I/Os before the next
/// file), or `zipf`, `pareto`, `normal`/`gauss` with an optional `:VALUE`.
pub fn check_file_service(text: &str) -> Result<(), String> {
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
    match arg {
        None => Ok(()),
        Some(a) if numeric && a.parse::<f64>().is_ok_and(|x| x > 0.0) => Ok(()),
        Some(a) if !numeric && a.parse::<u32>().is_ok_and(|n| n > 0) => Ok(()),
        Some(a) => Err(format!(
            "file_service_type={text}: '{a}' is not a positive number"
        )),
    }
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
    fn service_types_are_fio_s() {
        for ok in [
            "random",
            "roundrobin:4",
            "sequential",
            "zipf:1.2",
            "normal",
            "gauss:5",
        ] {
            assert!(check_file_service(ok).is_ok(), "{ok}");
        }
        for bad in ["rr", "roundrobin:0", "random:x", "zipf:-1"] {
            assert!(check_file_service(bad).is_err(), "{bad}");
        }
    }
}
