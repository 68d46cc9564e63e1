//! Bad input, every command: one line on stderr naming the option (or the
//! path) and what is allowed, exit code 2, nothing on stdout, and nothing
//! created, truncated or extended.
//!
//! Each [`Case`] runs in a fresh directory laid out by [`workdir`]; `{dir}` in
//! its arguments is that directory and `{unreadable}` a file that cannot be
//! opened. Commands not covered here (db) append their rows to [`CASES`].

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use common::csdchar;

/// One bad invocation.
struct Case {
    /// Arguments after `csdchar`, with `{dir}` and `{unreadable}` placeholders.
    args: &'static [&'static str],
    /// What the one stderr line must contain: the option (or the path) at fault.
    option: &'static str,
    /// More text the line must contain (what is allowed, or why); "" for none.
    says: &'static str,
}

const CASES: &[Case] = &[
    // Plain option errors.
    Case {
        args: &["block", "--bs", "0", "--size", "1m", "{dir}/new.dat"],
        option: "--bs",
        says: "between 1 byte and 256m",
    },
    Case {
        args: &["block", "--iodepth", "0", "--size", "1m", "{dir}/new.dat"],
        option: "--iodepth",
        says: "1..=4096",
    },
    Case {
        args: &["block", "--rw", "sideways", "--size", "1m", "{dir}/new.dat"],
        option: "--rw",
        says: "randwrite",
    },
    // 1. --verify-only re-checks existing data: a missing or short target is bad input.
    Case {
        args: &["block", "--verify-only", "--size", "1m", "{dir}/new.dat"],
        option: "--verify-only",
        says: "does not exist",
    },
    Case {
        args: &["block", "--verify-only", "--size", "1m", "{dir}/short.dat"],
        option: "--verify-only",
        says: "less than --offset + --size",
    },
    Case {
        args: &[
            "block",
            "--verify-only",
            "--offset",
            "8k",
            "--size",
            "1m",
            "{dir}/existing.dat",
        ],
        option: "--verify-only",
        says: "less than --offset + --size",
    },
    // 3. A zero watch interval would spin.
    Case {
        args: &["capacity", "--watch", "0", "{dir}"],
        option: "--watch",
        says: "at least 10ms",
    },
    Case {
        args: &["capacity", "--watch", "5ms", "--count", "3", "{dir}"],
        option: "--watch",
        says: "at least 10ms",
    },
    // 4. More than the file system holds: refused before the file is created or extended.
    Case {
        args: &["block", "--rw", "write", "--size", "1p", "{dir}/new.dat"],
        option: "--size",
        says: "free",
    },
    Case {
        args: &[
            "block",
            "--rw",
            "read",
            "--size",
            "1p",
            "{dir}/existing.dat",
        ],
        option: "--size",
        says: "free",
    },
    // 5. --output: a directory, or the very file the command reads or writes.
    Case {
        args: &[
            "block",
            "--size",
            "1m",
            "{dir}/new.dat",
            "--output",
            "{dir}",
        ],
        option: "--output",
        says: "is a directory",
    },
    Case {
        args: &[
            "block",
            "--size",
            "1m",
            "{dir}/new.dat",
            "--output",
            "{dir}/./new.dat",
        ],
        option: "--output",
        says: "same file",
    },
    Case {
        args: &[
            "block",
            "--size",
            "64k",
            "{dir}/existing.dat",
            "--output",
            "{dir}/sub/../existing.dat",
        ],
        option: "--output",
        says: "same file",
    },
    Case {
        args: &[
            "block",
            "--size",
            "1m",
            "{dir}/new.dat",
            "--output",
            "{dir}/nowhere/r.json",
        ],
        option: "--output",
        says: "does not exist",
    },
    Case {
        args: &["estimate", "{dir}/sub", "--output", "{dir}/sub"],
        option: "--output",
        says: "is a directory",
    },
    Case {
        args: &[
            "estimate",
            "{dir}/short.dat",
            "{dir}/existing.dat",
            "--output",
            "{dir}/existing.dat",
        ],
        option: "--output",
        says: "same file",
    },
    // 6. Buffers beyond the machine's memory: refused before the target is created.
    Case {
        args: &[
            "block",
            "--rw",
            "randwrite",
            "--bs",
            "256m",
            "--iodepth",
            "4096",
            "--numjobs",
            "16",
            "--size",
            "1g",
            "{dir}/new.dat",
        ],
        option: "--bs",
        says: "of I/O buffers, the machine has",
    },
    // 2. An input that cannot be read.
    Case {
        args: &["estimate", "{dir}/existing.dat", "{unreadable}"],
        option: "PATH",
        says: "cannot read",
    },
    Case {
        args: &[
            "estimate",
            "{unreadable}",
            "--output-format",
            "json",
            "--output",
            "{dir}/e.json",
        ],
        option: "PATH",
        says: "cannot read",
    },
    // Missing paths.
    Case {
        args: &["capacity", "{dir}/missing"],
        option: "TARGET",
        says: "missing",
    },
    Case {
        args: &["estimate", "{dir}/missing", "--output", "{dir}/e.json"],
        option: "PATH",
        says: "missing",
    },
    Case {
        args: &["report", "--out", "{dir}/report", "{dir}/missing.json"],
        option: "missing.json",
        says: "no such file",
    },
    // --start-at: a time in the next 24 hours, checked before anything starts.
    Case {
        args: &[
            "block",
            "--start-at",
            "2000-01-01T00:00:00Z",
            "--size",
            "1m",
            "{dir}/new.dat",
        ],
        option: "--start-at",
        says: "in the past",
    },
    Case {
        args: &[
            "block",
            "--start-at",
            "2999-01-01T00:00:00Z",
            "--size",
            "1m",
            "{dir}/new.dat",
        ],
        option: "--start-at",
        says: "more than 24 hours ahead",
    },
    Case {
        args: &[
            "block",
            "--start-at",
            "noon",
            "--size",
            "1m",
            "{dir}/new.dat",
        ],
        option: "--start-at",
        says: "HH:MM[:SS]",
    },
    Case {
        args: &["db", "run", "--start-at", "2000-01-01T00:00:00+02:00"],
        option: "--start-at",
        says: "in the past",
    },
    Case {
        args: &["db", "study", "--start-at", "25:00"],
        option: "--start-at",
        says: "RFC 3339",
    },
    // db: checked before any cluster starts or any connection is made.
    Case {
        args: &["db", "run", "--time", "0"],
        option: "--time",
        says: "at least 1s",
    },
    Case {
        args: &["db", "--time", "500ms"],
        option: "--time",
        says: "at least 1s",
    },
    Case {
        args: &["db", "run", "--db", ""],
        option: "--db",
        says: "1 to 63 bytes",
    },
    Case {
        args: &["db", "run", "--pgdata", "{dir}/existing.dat"],
        option: "--pgdata",
        says: "is not a directory",
    },
    Case {
        args: &["db", "prepare", "--pgdata", "{dir}"],
        option: "--pgdata",
        says: "holds no PostgreSQL cluster",
    },
    Case {
        args: &["db", "run", "--output", "{dir}"],
        option: "--output",
        says: "directory",
    },
    Case {
        args: &["db", "run", "--output", "{dir}/nowhere/r.json"],
        option: "--output",
        says: "does not exist",
    },
    Case {
        args: &["db", "run", "--schema", "Bench Mark"],
        option: "--schema",
        says: "lowercase SQL identifier",
    },
    Case {
        args: &["db", "run", "--create-secondary", "maybe"],
        option: "--create-secondary",
        says: "true/false",
    },
    Case {
        args: &["db", "run", "--report-interval", "5ms"],
        option: "--report-interval",
        says: "at least 100ms",
    },
    Case {
        args: &["db", "run", "--pg-set", "oops"],
        option: "--pg-set",
        says: "KEY=VALUE",
    },
    Case {
        args: &[
            "db",
            "run",
            "--client-io",
            "threads",
            "--client-threads",
            "2",
        ],
        option: "--client-threads",
        says: "--client-io uring or auto",
    },
    Case {
        args: &["db", "run", "--client-io", "rings"],
        option: "--client-io",
        says: "auto",
    },
    Case {
        args: &[
            "db",
            "cleanup",
            "--url",
            "host=/nonexistent",
            "--time",
            "5s",
        ],
        option: "--time",
        says: "unexpected argument",
    },
    Case {
        args: &["db", "alter", "--url", "host=/nonexistent"],
        option: "--fillfactor",
        says: "required",
    },
    Case {
        args: &["db", "run", "--keep-running"],
        option: "--keep-running",
        says: "--pgdata",
    },
    Case {
        args: &["db", "cleanup"],
        option: "cleanup",
        says: "needs --url or --pgdata",
    },
    Case {
        args: &["db", "run", "--listen", "not an address!"],
        option: "--listen",
        says: "IP address",
    },
    Case {
        args: &["db", "run", "--workload", "tpcc", "--mix", "50,43,4,4,4"],
        option: "--mix",
        says: "what the other four leave",
    },
    Case {
        args: &[
            "db",
            "prepare",
            "--workload",
            "tpcc",
            "--pgdata",
            "{dir}/pg",
            "--warehouse-range",
            "3-1",
        ],
        option: "--warehouse-range",
        says: "FROM-TO",
    },
    Case {
        args: &["db", "check", "--url", "host=/nonexistent"],
        option: "--workload",
        says: "tpcc",
    },
    Case {
        args: &["db", "run", "--workload", "pgio", "--update-pct", "70"],
        option: "--update-pct",
        says: "0 to 50, or 100",
    },
    Case {
        args: &["db", "run", "--workload", "pgio", "--pgio-size", "1m"],
        option: "--pgio-size",
        says: "minimum",
    },
    Case {
        args: &["db", "study", "--workload", "pgio"],
        option: "--workload",
        says: "fillfactor 10",
    },
    // Issue 30 rows 1 and 4: a load the data directory's file system (or the
    // client's memory) cannot hold is refused before anything is created.
    Case {
        args: &["db", "run", "--workload", "pgio", "--pgio-size", "100t"],
        option: "--pgio-size",
        says: "--force does not override this",
    },
    Case {
        args: &["db", "run", "--workload", "tpcc", "--warehouses", "100000"],
        option: "--warehouses",
        says: "free",
    },
    Case {
        args: &[
            "db",
            "study",
            "--workload",
            "oltp-read-write",
            "--tables",
            "64",
            "--table-size",
            "1000000000",
        ],
        option: "--table-size",
        says: "free",
    },
    // Issue 30 row 11: --out must be a new or empty directory, or one to
    // resume; the dry run checks what the run checks.
    Case {
        args: &[
            "campaign",
            "{dir}/campaign.toml",
            "--out",
            "{dir}/existing.dat",
        ],
        option: "--out",
        says: "not a directory",
    },
    Case {
        args: &["campaign", "{dir}/campaign.toml", "--out", "{dir}/sub"],
        option: "--out",
        says: "holds files but no manifest.json",
    },
    Case {
        args: &[
            "campaign",
            "{dir}/campaign.toml",
            "--dry-run",
            "--out",
            "{dir}/sub",
        ],
        option: "--out",
        says: "holds files but no manifest.json",
    },
    // Issue 30 row 2: a resume range must lie within the load's warehouses.
    Case {
        args: &[
            "db",
            "prepare",
            "--url",
            "host=/nonexistent",
            "--workload",
            "tpcc",
            "--warehouses",
            "4",
            "--warehouse-range",
            "3-6",
        ],
        option: "--warehouse-range",
        says: "within 1-4",
    },
    Case {
        args: &["db", "run", "--rate", "0"],
        option: "--rate",
        says: "above 0",
    },
];

/// The files every case starts from.
fn workdir() -> tempfile::TempDir {
    let base = if Path::new("/var/tmp").is_dir() {
        "/var/tmp"
    } else {
        "/tmp"
    };
    let dir = tempfile::Builder::new()
        .prefix("csdchar-bad-input")
        .tempdir_in(base)
        .unwrap();
    std::fs::write(dir.path().join("short.dat"), vec![7u8; 4096]).unwrap();
    std::fs::write(dir.path().join("existing.dat"), vec![9u8; 64 << 10]).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/inner.dat"), vec![1u8; 8192]).unwrap();
    // A campaign of one block step on a directory target.
    std::fs::write(
        dir.path().join("campaign.toml"),
        format!(
            "name = \"bad\"\n\n[targets.disk]\ndir = \"{}\"\n\n[[steps]]\ncommand = \"block\"\n\
             args = {{ rw = \"write\", bs = \"64k\", size = \"1m\" }}\n",
            dir.path().join("sub").display()
        ),
    )
    .unwrap();
    // A directory only its owner may enter, as `mktemp -d` makes.
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(dir.path().join("private")).unwrap();
    std::fs::set_permissions(
        dir.path().join("private"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    dir
}

/// A regular file this process cannot open: root opens any file of its own
/// file systems, but not a write-only sysfs attribute (a bus's `uevent`).
/// None when there is no such file here (no sysfs).
fn unreadable(dir: &Path) -> Option<PathBuf> {
    // Safety: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let buses = std::fs::read_dir("/sys/bus").ok()?;
        let mut candidates: Vec<PathBuf> =
            buses.flatten().map(|b| b.path().join("uevent")).collect();
        candidates.sort();
        return candidates
            .into_iter()
            .find(|p| p.is_file() && std::fs::File::open(p).is_err());
    }
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("locked.dat");
    std::fs::write(&p, vec![3u8; 8192]).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
    Some(p)
}

/// Every entry under `dir`: kind, length and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (bool, u64, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            if m.is_dir() {
                stack.push(e.path());
            }
            out.insert(e.path(), (m.is_dir(), m.len(), m.modified().unwrap()));
        }
    }
    out
}

/// Runs `case` in a fresh directory and checks the rule.
fn check(case: &Case) {
    let dir = workdir();
    let d = dir.path().to_str().unwrap().to_string();
    let locked = unreadable(dir.path());
    if locked.is_none() && case.args.contains(&"{unreadable}") {
        eprintln!("skipped {:?}: no unreadable file on this system", case.args);
        return;
    }
    let locked = locked.unwrap_or_default();
    let args: Vec<String> = case
        .args
        .iter()
        .map(|a| {
            a.replace("{dir}", &d)
                .replace("{unreadable}", locked.to_str().unwrap())
        })
        .collect();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let before = snapshot(dir.path());
    let ran = csdchar(&argv);
    let after = snapshot(dir.path());

    assert_eq!(ran.outcome.exit_code, 2, "{argv:?}: {}", ran.stderr);
    let msg = ran.stderr.trim_end();
    assert_eq!(msg.lines().count(), 1, "{argv:?}: not one line: {msg}");
    assert!(
        msg.contains(case.option),
        "{argv:?}: '{msg}' does not name {}",
        case.option
    );
    assert!(
        msg.to_lowercase().contains(&case.says.to_lowercase()),
        "{argv:?}: '{msg}' does not say '{}'",
        case.says
    );
    assert!(ran.stdout.is_empty(), "{argv:?}: stdout: {}", ran.stdout);
    assert_eq!(before, after, "{argv:?} changed the directory");
}

#[test]
fn every_bad_input_exits_2_with_one_line_and_changes_nothing() {
    for case in CASES {
        check(case);
    }
}

/// Issue 30 row 14: as root the server runs as postgres, which cannot enter
/// `{dir}/private` (a 0700 directory of root's, as `mktemp -d` makes):
/// bad input, refused before a cluster is half made.
#[test]
fn a_data_directory_the_server_cannot_reach_is_bad_input() {
    if !common::is_root_or_skip("a_data_directory_the_server_cannot_reach_is_bad_input") {
        return;
    }
    const UNREACHABLE: &[Case] = &[
        Case {
            args: &[
                "db",
                "prepare",
                "--pgdata",
                "{dir}/private/pg",
                "--workload",
                "tpcc",
            ],
            option: "--pgdata",
            says: "cannot enter",
        },
        Case {
            args: &["db", "run", "--pgdata", "{dir}/private/pg", "--time", "2s"],
            option: "--pgdata",
            says: "cannot enter",
        },
    ];
    for case in UNREACHABLE {
        check(case);
    }
}

/// The help text of `csdchar ARGS… --help`, as clap renders it.
fn help(args: &[&str]) -> String {
    use clap::CommandFactory;
    let mut cmd = csdchar_cli::opts::Cli::command();
    let mut sub = &mut cmd;
    for a in args {
        sub = sub.find_subcommand_mut(a).expect("subcommand");
    }
    sub.render_long_help().to_string()
}

/// Issue 30 row 15: help says what each step and workload takes, and the
/// errors say what is allowed.
#[test]
fn help_says_what_each_db_step_and_workload_takes() {
    for (args, promises) in [
        (&[][..], &["TPC-C", "pgio", "check"][..]),
        (&["db"][..], &["TPC-C", "pgio", "check"][..]),
        (
            &["db", "run"][..],
            &[
                "BenchmarkSQL's TPC-C (tpcc, alias",
                "benchmarksql",
                "pgio",
                "0-50 or 100",
            ][..],
        ),
        (
            &["db", "prepare"][..],
            &["loader connections", "bmsql_"][..],
        ),
    ] {
        let text = help(args);
        for p in promises {
            assert!(text.contains(p), "{args:?} help lacks '{p}':\n{text}");
        }
    }
    // prepare takes a single loader connection: the help must not ask for two.
    assert!(!help(&["db", "prepare"]).contains("at least 2"));
    let ran = csdchar(&[
        "db",
        "prepare",
        "--threads",
        "1",
        "--url",
        "host=/nonexistent",
    ]);
    assert_ne!(ran.outcome.exit_code, 2, "{}", ran.stderr);
    // check lists only what it takes.
    let check = help(&["db", "check"]);
    for absent in ["--tables <", "--listen <", "--pg-memory-limit <", "--threads <"] {
        assert!(
            !check.contains(absent),
            "check help lists {absent}:\n{check}"
        );
    }
    // Values clap refuses still name the option and what is allowed.
    for (args, option, says) in [
        (
            &["db", "run", "--warehouses", "-1"][..],
            "--warehouses",
            "1..=100000",
        ),
        (
            &["db", "run", "--update-pct", "101"][..],
            "--update-pct",
            "0 to 50, or 100",
        ),
        (
            &["db", "run", "--start-at", "25:00"][..],
            "--start-at",
            "HH:MM[:SS]",
        ),
    ] {
        let ran = csdchar(args);
        assert_eq!(ran.outcome.exit_code, 2, "{args:?}");
        assert!(
            ran.stderr.contains(option) && ran.stderr.contains(says),
            "{args:?}: {}",
            ran.stderr
        );
    }
}
