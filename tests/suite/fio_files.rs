//! A job's files as fio names them: `filename_format` and the default
//! `$jobname.$jobnum.$filenum`, clones sharing a file when the format has no
//! `$jobnum`; `nrfiles` with `size` split over the files or `filesize` each,
//! and which files a job's I/O goes to under `file_service_type` and
//! `openfiles`, beside fio's run of the same job file.

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
                    [e]\nfilename=named\nnrfiles=4\nfile_service_type=random\n\
                    [f]\nnrfiles=3\nsize=768k\n\
                    [g]\nnrfiles=2\nfilesize=128k\nsize=64k\nfilename_format=g.$filenum\n\
                    [l]\nfilename=l1:l\\:2:l3\nsize=768k\n\
                    [m]\nnumjobs=2\nnrfiles=2\nsize=128k\n\
                    [u]\nnrfiles=3\nsize=1m\n\
                    [o]\nnrfiles=2\nsize=64k\noffset=16k\n\
                    [p]\nnrfiles=2\nfilesize=64k\nsize=64k\noffset=16k\n";

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
        ("f.0.0", 256 << 10),
        ("f.0.1", 256 << 10),
        ("f.0.2", 256 << 10),
        ("g.0", 128 << 10),
        ("g.1", 128 << 10),
        ("l1", 256 << 10),
        ("l:2", 256 << 10),
        ("l3", 256 << 10),
        ("m.0.0", 64 << 10),
        ("m.0.1", 64 << 10),
        ("m.1.0", 64 << 10),
        ("m.1.1", 64 << 10),
        // 1 MiB / 3: fio's files keep the partial block it never writes.
        ("u.0.0", 349525),
        ("u.0.1", 349525),
        ("u.0.2", 349525),
        // From offset: size's share (32k) after it, or the rest of filesize.
        ("o.0.0", 48 << 10),
        ("o.0.1", 48 << 10),
        ("p.0.0", 64 << 10),
        ("p.0.1", 64 << 10),
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
        (
            "[n]\nsize=1m\nnrfiles=4\nbssplit=4k/50:8k/50\n",
            3,
            "several files per job with bssplit",
        ),
        ("[n]\nsize=8k\nnrfiles=4\n", 3, "smaller than a block"),
        (
            "[n]\nfilesize=64k-128k\n",
            2,
            "a range of file sizes with one file",
        ),
        (
            "[n]\nsize=1m\nnrfiles=2\nfile_service_type=zipf:1\n",
            4,
            "file_service_type=zipf:1: zipf theta",
        ),
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

/// Runs `jobs` (DIR replaced) with fio and with csdchar, each in a directory
/// of its own; returns each tool's files.
fn run_both(d: &Path, jobs: &str) -> [BTreeMap<String, Vec<u8>>; 2] {
    let mut out = [BTreeMap::new(), BTreeMap::new()];
    for (i, who) in ["fio", "csdchar"].into_iter().enumerate() {
        let dir = d.join(who);
        std::fs::create_dir(&dir).unwrap();
        let job = d.join(format!("{who}.fio"));
        std::fs::write(&job, jobs.replace("DIR", dir.to_str().unwrap())).unwrap();
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
        for name in files_in(&dir).into_keys() {
            out[i].insert(name.clone(), std::fs::read(dir.join(&name)).unwrap());
        }
    }
    out
}

/// The blocks of 4 KiB written in a file (not all zeros), checked to be its
/// first ones: each file is written sequentially from its start.
fn written_blocks(name: &str, data: &[u8]) -> usize {
    let written: Vec<bool> = data
        .chunks(4096)
        .map(|b| b.iter().any(|x| *x != 0))
        .collect();
    let n = written.iter().filter(|w| **w).count();
    assert!(
        written[..n].iter().all(|w| *w),
        "{name}: written blocks {written:?} are not the file's first"
    );
    n
}

/// Each job's written blocks per file, in file order.
fn blocks_per_file(files: &BTreeMap<String, Vec<u8>>, job: &str) -> Vec<usize> {
    files
        .iter()
        .filter(|(n, _)| n.starts_with(&format!("{job}.")))
        .map(|(n, data)| written_blocks(n, data))
        .collect()
}

#[test]
fn a_job_s_io_is_spread_over_its_files_as_fio_spreads_it() {
    if fio().is_none() {
        return;
    }
    // Sequential writes of less than the files hold: where each file's
    // writes stop shows which files the job served, and in what share.
    // 4 files of 16 blocks, 10 blocks of I/O; 128 of 256 blocks for random.
    let jobs = "[global]\ndirectory=DIR\nbs=4k\nrw=write\nioengine=io_uring\n\
                nrfiles=4\nfilesize=64k\nsize=40k\n\
                [rr]\n\
                [rr4]\nfile_service_type=roundrobin:4\n\
                [seq]\nfile_service_type=sequential\n\
                [open]\nopenfiles=2\nfile_service_type=roundrobin:3\n\
                [rand]\nfile_service_type=random\nfilesize=256k\nsize=512k\n";
    let d = tempfile::tempdir().unwrap();
    let [fio_files, ours] = run_both(d.path(), jobs);
    for (job, want) in [
        // In turn, one I/O each: 3 3 2 2.
        ("rr", vec![3, 3, 2, 2]),
        // In turn, 4 I/Os each.
        ("rr4", vec![4, 4, 2, 0]),
        // One file until it is done.
        ("seq", vec![10, 0, 0, 0]),
        // Two files open, 3 I/Os each in turn: the other two wait (without
        // openfiles, 3 3 3 1).
        ("open", vec![6, 4, 0, 0]),
    ] {
        assert_eq!(blocks_per_file(&fio_files, job), want, "fio's {job}");
        assert_eq!(blocks_per_file(&ours, job), want, "csdchar's {job}");
    }
    // Random: every I/O in some file, not in turn (fio's and csdchar's draws
    // differ; both are fixed by their seeds).
    for (who, files) in [("fio", &fio_files), ("csdchar", &ours)] {
        let per_file = blocks_per_file(files, "rand");
        assert_eq!(per_file.len(), 4, "{who}");
        assert_eq!(per_file.iter().sum::<usize>(), 128, "{who}: {per_file:?}");
        assert_ne!(per_file, [32; 4], "{who}: random files came in turn");
    }
}

/// The write-safety rules apply to every file of a job, as to its one: a
/// third file that backs a loop device refuses the job before any file is
/// made.
#[test]
fn every_file_of_a_job_is_checked_before_any_is_written() {
    if !common::is_root_or_skip("every_file_of_a_job_is_checked_before_any_is_written") {
        return;
    }
    let d = tempfile::Builder::new()
        .prefix("csdchar-fio-files")
        .tempdir_in("/var/tmp")
        .unwrap();
    let backing = d.path().join("j.0.2");
    std::fs::File::create(&backing)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let _loop = common::LoopDev::over(&backing);
    let job = d.path().join("j.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\ndirectory={}\nrw=write\nbs=4k\n[j]\nnrfiles=4\nsize=4m\n",
            d.path().display()
        ),
    )
    .unwrap();
    let r = common::csdchar(&["block", "--job-file", job.to_str().unwrap()]);
    assert_eq!(r.outcome.exit_code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("refusing to write to {}", backing.display()))
            && r.stderr.contains("--force"),
        "{}",
        r.stderr
    );
    for n in ["j.0.0", "j.0.1", "j.0.3"] {
        assert!(!d.path().join(n).exists(), "{n} was made");
    }
    assert_eq!(std::fs::metadata(&backing).unwrap().len(), 1 << 20);
}

/// fio's skewed file choice (`zipf`, `pareto`, `normal`/`gauss` with a
/// center): the I/Os each file gets are fio's within four binomial standard
/// deviations of the difference of two draws (fio's and csdchar's draws
/// differ; both are fixed by their seeds). Uniform files would be 128 each.
#[test]
fn a_skewed_file_choice_gives_each_file_fio_s_share() {
    if fio().is_none() {
        return;
    }
    // 8 files of 1024 blocks, 1024 sequential writes: no file wraps, so its
    // written blocks are its I/Os.
    let jobs = "[global]\ndirectory=DIR\nbs=4k\nrw=write\nnrfiles=8\nfilesize=4m\nsize=4m\n\
                [zipf]\nfile_service_type=zipf:1.2:0\n\
                [pareto]\nfile_service_type=pareto:0.3:0\n\
                [gauss]\nfile_service_type=gauss:10:0.5\n";
    let d = tempfile::tempdir().unwrap();
    let [fio_files, ours] = run_both(d.path(), jobs);
    for job in ["zipf", "pareto", "gauss"] {
        let theirs = blocks_per_file(&fio_files, job);
        let mine = blocks_per_file(&ours, job);
        assert_eq!(
            theirs.iter().sum::<usize>(),
            1024,
            "fio's {job}: {theirs:?}"
        );
        assert_eq!(
            mine.iter().sum::<usize>(),
            1024,
            "csdchar's {job}: {mine:?}"
        );
        for (t, m) in theirs.iter().zip(&mine) {
            let p = (*t as f64 / 1024.0).clamp(0.01, 0.99);
            let allowed = 4.0 * (2.0 * p * (1.0 - p) * 1024.0).sqrt();
            assert!(
                (t.abs_diff(*m) as f64) <= allowed,
                "{job}: fio {theirs:?}, csdchar {mine:?}"
            );
        }
    }
    // The hot file is the first from center 0 (zipf 943 of 1024 in fio).
    assert!(blocks_per_file(&ours, "zipf")[0] > 800);
}

/// An I/O error in a job with several files names the file, and the job's
/// I/O up to it went to the files in turn (the engine is handed each
/// request's file; a test engine records them).
#[test]
fn an_io_error_names_the_file_it_happened_in() {
    use csdchar_core::fileset::{JobFile, JobFiles};
    use csdchar_fio_like::{RunControl, run_block_with};
    use std::sync::{Arc, Mutex};
    let mut spec = common::block_spec(&[
        "--engine", "null", "--rw", "write", "--bs", "4k", "--size", "16k",
    ]);
    spec.files = JobFiles {
        files: ["/x/a", "/x/b"]
            .map(|p| JobFile {
                path: p.to_string(),
                size: 8192,
            })
            .to_vec(),
        ..Default::default()
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let r = run_block_with(&spec, RunControl::quiet(), |_, _| {
        Ok(common::RecordingEngine::new(&seen, Some(4096)))
    })
    .unwrap();
    let e = r.error.expect("the write at 4096 failed");
    assert!(
        e.message
            .contains("write of 4096 bytes at offset 4096 of /x/a failed"),
        "{}",
        e.message
    );
    let offsets: Vec<u64> = seen.lock().unwrap().iter().map(|(o, _)| *o).collect();
    // a's first block, b's first, then a's second, which fails.
    assert_eq!(offsets, [0, 0, 4096]);
}

/// Each job's written I/Os in fio's JSON (fio's own, or csdchar's fio-json).
fn ios_per_job(json: &str) -> BTreeMap<String, u64> {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            let name = j["jobname"].as_str().unwrap().to_string();
            (name, j["write"]["total_ios"].as_u64().unwrap())
        })
        .collect()
}

/// `loops` with several files: the job's I/O counts over all passes, and a
/// pass that has done every file starts them all over, as fio's; a size that
/// does not split into whole blocks leaves each file's partial block undone
/// in every pass (255 of 256 blocks).
#[test]
fn loops_start_every_file_over_as_fio_does() {
    if fio().is_none() {
        return;
    }
    let jobs = "[global]\ndirectory=DIR\nbs=4k\nrw=write\n\
                [l]\nnrfiles=3\nsize=1m\nloops=2\n\
                [k]\nnrfiles=4\nfilesize=16k\nsize=40k\nloops=3\nfile_service_type=roundrobin:3\n";
    let d = tempfile::tempdir().unwrap();
    let mut found = Vec::new();
    for who in ["fio", "csdchar"] {
        let dir = d.path().join(who);
        std::fs::create_dir(&dir).unwrap();
        let job = d.path().join(format!("{who}.fio"));
        std::fs::write(&job, jobs.replace("DIR", dir.to_str().unwrap())).unwrap();
        let json = if who == "fio" {
            let out = std::process::Command::new(fio().unwrap())
                .args(["--output-format=json", job.to_str().unwrap()])
                .output()
                .unwrap();
            assert!(out.status.success());
            String::from_utf8(out.stdout).unwrap()
        } else {
            let r = common::csdchar(&[
                "block",
                "--job-file",
                job.to_str().unwrap(),
                "--output-format",
                "fio-json",
            ]);
            assert_eq!(r.outcome.exit_code, 0, "{}", r.stderr);
            r.stdout
        };
        found.push(ios_per_job(&json));
    }
    let want: BTreeMap<String, u64> = [("l".to_string(), 510), ("k".to_string(), 30)].into();
    assert_eq!(found[0], want, "fio");
    assert_eq!(found[1], want, "csdchar");
}

/// The room check counts every file of a job: four files that each fit the
/// file system but together do not are refused before any is made.
#[test]
fn the_files_of_a_job_must_fit_together() {
    let d = tempfile::tempdir().unwrap();
    let free = csdchar_devices::free_bytes(d.path()).expect("free space of a temporary directory");
    // Each file half the free space, the four twice it.
    let each = (free / 2) >> 20 << 20;
    let job = d.path().join("big.fio");
    std::fs::write(
        &job,
        format!(
            "[global]\ndirectory={}\nbs=4k\nrw=write\n[big]\nnrfiles=4\nsize={}\n",
            d.path().display(),
            each * 4
        ),
    )
    .unwrap();
    let r = common::csdchar(&["block", "--job-file", job.to_str().unwrap(), "--check-only"]);
    assert_eq!(r.outcome.exit_code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("would grow"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        1,
        "nothing made"
    );
}

/// A `filesize` range: each file's size drawn in it (fio's and csdchar's
/// draws differ), a whole number of blocks, and the job writes every file
/// whole (its I/O is the files' total).
#[test]
fn a_filesize_range_gives_each_file_a_size_in_it() {
    if fio().is_none() {
        return;
    }
    let jobs = "[global]\ndirectory=DIR\nbs=4k\nrw=write\n[r]\nnrfiles=8\nfilesize=64k-256k\n";
    let d = tempfile::tempdir().unwrap();
    for (who, files) in ["fio", "csdchar"].into_iter().zip(run_both(d.path(), jobs)) {
        assert_eq!(files.len(), 8, "{who}");
        let sizes: Vec<usize> = files.values().map(|f| f.len()).collect();
        for (name, data) in &files {
            let len = data.len();
            assert!((64 << 10..=256 << 10).contains(&len), "{who}: {name} {len}");
            assert_eq!(len % 4096, 0, "{who}: {name} {len}");
            assert_eq!(written_blocks(name, data), len / 4096, "{who}: {name}");
        }
        assert!(sizes.iter().any(|s| *s != sizes[0]), "{who}: {sizes:?}");
    }
}
