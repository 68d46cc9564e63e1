//! A job's files as fio names them: `filename_format` and the default
//! `$jobname.$jobnum.$filenum`, clones sharing a file when the format has no
//! `$jobnum`; the file options that change nothing with one file per job, and
//! `nrfiles` above 1, which csdchar refuses.

use crate::common;
use crate::fio_parity::fio;

use std::collections::BTreeMap;
use std::path::Path;

/// Every file under `dir` (relative name) and its size.
fn files_in(dir: &Path) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                let name = e.path().strip_prefix(dir).unwrap().display().to_string();
                out.insert(name, m.len());
            }
        }
    }
    out
}

const JOBS: &str = "[global]\ndirectory=DIR\nsize=1m\nbs=4k\nrw=write\n\
                    [a]\nnumjobs=2\nfilename_format=$jobname-$JOBNUM.dat\n\
                    [b]\nnumjobs=2\nsize=512k\nfilename_format=shared.$filenum\n\
                    [c]\nnrfiles=1\nopenfiles=4\nfile_service_type=roundrobin:2\n\
                    [d]\nnumjobs=2\nsize=256k\n\
                    [e]\nfilename=named\nnrfiles=4\nfile_service_type=random\n";

#[test]
fn job_files_get_fio_s_names_and_sizes() {
    if fio().is_none() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let mut found = Vec::new();
    for who in ["fio", "csdchar"] {
        let dir = d.path().join(who);
        std::fs::create_dir(&dir).unwrap();
        let job = d.path().join(format!("{who}.fio"));
        std::fs::write(&job, JOBS.replace("DIR", dir.to_str().unwrap())).unwrap();
        if who == "fio" {
            let st = std::process::Command::new(fio().unwrap())
                .args(["--output=/dev/null", job.to_str().unwrap()])
                .status()
                .unwrap();
            assert!(st.success());
        } else {
            let r = common::csdchar(&["block", "--job-file", job.to_str().unwrap()]);
            assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
        }
        found.push(files_in(&dir));
    }
    assert_eq!(found[0], found[1], "fio's files, then csdchar's");
    // a-0.dat a-1.dat, shared.0 (both clones of b), c.0.0, d.0.0 d.1.0, named.
    let want: BTreeMap<String, u64> = [
        ("a-0.dat", 1 << 20),
        ("a-1.dat", 1 << 20),
        ("shared.0", 512 << 10),
        ("c.0.0", 1 << 20),
        ("d.0.0", 256 << 10),
        ("d.1.0", 256 << 10),
        ("named", 1 << 20),
    ]
    .into_iter()
    .map(|(n, s)| (n.to_string(), s))
    .collect();
    assert_eq!(found[1], want);
}

#[test]
fn several_files_per_job_are_refused_by_line() {
    let d = tempfile::tempdir().unwrap();
    let job = d.path().join("n.fio");
    for (text, line, why) in [
        ("[n]\nsize=1m\nnrfiles=4\n", 3, "several files per job"),
        (
            "[n]\nsize=1m\nfile_service_type=rr\n",
            3,
            "file_service_type=rr",
        ),
    ] {
        std::fs::write(
            &job,
            format!("[global]\ndirectory={}\n{text}", d.path().display()),
        )
        .unwrap();
        let r = common::csdchar(&["block", "--job-file", job.to_str().unwrap()]);
        assert_eq!(r.outcome.exit_code, 2, "{}", r.stderr);
        assert_eq!(r.stderr.trim().lines().count(), 1, "{}", r.stderr);
        assert!(
            r.stderr.contains(&format!("n.fio:{}", line + 2)) && r.stderr.contains(why),
            "{}",
            r.stderr
        );
    }
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        1,
        "nothing created"
    );
}
