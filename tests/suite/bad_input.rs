//! Bad input, every command: one line on stderr naming the option (or the
//! path) and what is allowed, exit code 2, nothing on stdout, and nothing
//! created, truncated or extended.
//!
//! Each [`Case`] runs in a fresh directory laid out by [`workdir`]; `{dir}` in
//! its arguments is that directory and `{unreadable}` a file that cannot be
//! opened. Commands not covered here (db) append their rows to [`CASES`].

use crate::common;

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
    // Issue 31: TLS options are libpq's; a bad one is bad input.
    Case {
        args: &["db", "run", "--url", "host=127.0.0.1 sslmode=sometimes"],
        option: "--url",
        says: "verify-full",
    },
    Case {
        args: &[
            "db",
            "run",
            "--url",
            "host=127.0.0.1 sslmode=verify-full sslrootcert=/nonexistent/root.crt",
        ],
        option: "--url",
        says: "does not exist",
    },
    Case {
        args: &[
            "db",
            "run",
            "--url",
            "postgres://127.0.0.1/x?sslnegotiation=direct",
        ],
        option: "--url",
        says: "weak sslmode \"prefer\" may not be used with sslnegotiation=direct",
    },
    Case {
        args: &["db", "prepare", "--tls", "--table-size", "10"],
        option: "--listen",
        says: "required",
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

/// Issue 38's sweep: bad input to the block, job-file and output options
/// added since issue 30 (job files, --print-job, --parse-only,
/// --ignore-unsupported, fio-json, estimate's --output, report's --out).
/// A job file's refusal names its FILE:LINE (`option` here) and the option
/// (`says`); the job files are laid out by [`workdir`] in `{dir}/jobs`.
const SWEEP: &[Case] = &[
    // Row 2: job-file options need a job file (clap's `requires` was waived).
    Case {
        args: &[
            "block",
            "--parse-only",
            "--rw",
            "write",
            "--size",
            "1m",
            "{dir}/new.dat",
        ],
        option: "--parse-only",
        says: "--job-file",
    },
    Case {
        args: &[
            "block",
            "--ignore-unsupported",
            "--engine",
            "null",
            "--size",
            "1m",
        ],
        option: "--ignore-unsupported",
        says: "--job-file",
    },
    // Row 11: options a job file cannot honour are conflicts, like --compress.
    Case {
        args: &[
            "block",
            "--job-file",
            "{dir}/jobs/reads.fio",
            "--verify-only",
        ],
        option: "--verify-only",
        says: "cannot be used with",
    },
    Case {
        args: &[
            "block",
            "--job-file",
            "{dir}/jobs/reads.fio",
            "--start-at",
            "23:59",
        ],
        option: "--start-at",
        says: "cannot be used with",
    },
    Case {
        args: &[
            "block",
            "--job-file",
            "{dir}/jobs/reads.fio",
            "--log-interval",
            "5ms",
        ],
        option: "--log-interval",
        says: "at least 10ms",
    },
    Case {
        args: &["block", "--job-file", "{dir}/jobs/reads.fio", "--print-job"],
        option: "--print-job",
        says: "cannot be used with",
    },
    // Row 3: the result never lands on a file a job reads or writes.
    Case {
        args: &[
            "block",
            "--job-file",
            "{dir}/jobs/reads.fio",
            "--output",
            "{dir}/existing.dat",
        ],
        option: "--output",
        says: "same file",
    },
    Case {
        args: &[
            "block",
            "--job-file",
            "{dir}/jobs/reads.fio",
            "--output",
            "{dir}/jobs/reads.fio",
        ],
        option: "--output",
        says: "same file",
    },
    Case {
        args: &[
            "block",
            "--job-file",
            "{dir}/jobs/reads.fio",
            "--output-format",
            "fio-json",
            "--output",
            "{dir}/sub",
        ],
        option: "--output",
        says: "is a directory",
    },
    Case {
        args: &[
            "block",
            "--job-file",
            "{dir}/jobs/reads.fio",
            "--output-format",
            "fio-json+",
            "--output",
            "{dir}/nowhere/r.json",
        ],
        option: "--output",
        says: "does not exist",
    },
    Case {
        args: &[
            "block",
            "--job-file",
            "{dir}/jobs/reads.fio",
            "--parse-only",
            "--output",
            "{dir}/sub",
        ],
        option: "--output",
        says: "is a directory",
    },
    Case {
        args: &["block", "--job-file", "{dir}/missing.fio"],
        option: "--job-file",
        says: "cannot read",
    },
    Case {
        args: &["block", "--job-file", "{dir}/sub"],
        option: "--job-file",
        says: "cannot read",
    },
    // Row 6: --print-job prints what fio's grammar carries, or refuses.
    Case {
        args: &[
            "block",
            "--rw",
            "randwrite",
            "--size",
            "1m",
            "--print-job",
            "{dir}/a;b.dat",
        ],
        option: "--print-job",
        says: "';' or '#'",
    },
    Case {
        args: &[
            "block",
            "--rw",
            "read",
            "--size",
            "1m",
            "--print-job",
            "{dir}/x\n[evil]\nrw=write\nfilename={dir}/existing.dat",
        ],
        option: "--print-job",
        says: "control character",
    },
    Case {
        args: &[
            "block",
            "--rw",
            "write",
            "--size",
            "1m",
            "--print-job",
            "--output-format",
            "fio-json",
            "{dir}/new.dat",
        ],
        option: "--output-format",
        says: "--print-job",
    },
    Case {
        args: &[
            "block",
            "--rw",
            "write",
            "--size",
            "1m",
            "--print-job",
            "--verify-only",
            "{dir}/existing.dat",
        ],
        option: "--print-job",
        says: "cannot be used with",
    },
    Case {
        args: &[
            "block",
            "--size",
            "1m",
            "--print-job",
            "--output",
            "{dir}/sub",
            "{dir}/new.dat",
        ],
        option: "--output",
        says: "is a directory",
    },
    // Row 7: every job's size and room before the first job starts.
    Case {
        args: &["block", "--job-file", "{dir}/jobs/stonewall.fio"],
        option: "stonewall.fio:10",
        says: "size:",
    },
    Case {
        args: &["block", "--job-file", "{dir}/jobs/buffers.fio"],
        option: "buffers.fio:4",
        says: "of I/O buffers",
    },
    Case {
        args: &["block", "--job-file", "{dir}/jobs/nodir.fio"],
        option: "nodir.fio:2",
        says: "filename: directory",
    },
    // Row 12: fio's job limit, clones included.
    Case {
        args: &["block", "--job-file", "{dir}/jobs/limit.fio"],
        option: "limit.fio:12",
        says: "more than 4096 jobs",
    },
    // Row 19: a header is [NAME].
    Case {
        args: &["block", "--job-file", "{dir}/jobs/header.fio"],
        option: "header.fio:1",
        says: "no closing ']'",
    },
    // Row 21: a generated file name stays in directory=.
    Case {
        args: &["block", "--job-file", "{dir}/jobs/escape.fio"],
        option: "escape.fio:5",
        says: "holds '/'",
    },
    // Values and combinations, each with its line.
    Case {
        args: &["block", "--job-file", "{dir}/jobs/value.fio"],
        option: "value.fio:4",
        says: "bs=abc",
    },
    Case {
        args: &[
            "block",
            "--job-file",
            "{dir}/jobs/value.fio",
            "--ignore-unsupported",
        ],
        option: "value.fio:4",
        says: "bs=abc",
    },
    Case {
        args: &["block", "--job-file", "{dir}/jobs/unsupported.fio"],
        option: "unsupported.fio:4",
        says: "exec_prerun=true",
    },
    Case {
        args: &["block", "--job-file", "{dir}/jobs/unset.fio"],
        option: "unset.fio:2",
        says: "filename is empty",
    },
    Case {
        args: &["block", "--job-file", "{dir}/jobs/direct.fio"],
        option: "direct.fio:5",
        says: "bs=1000",
    },
    Case {
        args: &["block", "--job-file", "{dir}/jobs/batch.fio"],
        option: "batch.fio:5",
        says: "at most iodepth",
    },
    Case {
        args: &["block", "--job-file", "{dir}/jobs/waitfor.fio"],
        option: "waitfor.fio:4",
        says: "no job named zz",
    },
    Case {
        args: &["block", "--job-file", "{dir}/jobs/globalwait.fio"],
        option: "globalwait.fio:4",
        says: "in [global]",
    },
    Case {
        args: &["block", "--job-file", "{dir}/jobs/include.fio"],
        option: "include.fio:2",
        says: "include",
    },
    // estimate's --output and report's --out.
    Case {
        args: &[
            "estimate",
            "{dir}/existing.dat",
            "--output-format",
            "json",
            "--output",
            "{dir}/sub/../existing.dat",
        ],
        option: "--output",
        says: "same file",
    },
    Case {
        args: &[
            "estimate",
            "{dir}/existing.dat",
            "--output",
            "{dir}/nowhere/e.json",
        ],
        option: "--output",
        says: "does not exist",
    },
    Case {
        args: &[
            "report",
            "--out",
            "{dir}/existing.dat",
            "{dir}/missing.json",
        ],
        option: "--out",
        says: "not a directory",
    },
    Case {
        args: &["report", "--out", "{dir}/report", "--label", "drive"],
        option: "--label",
        says: "NAME=PATH",
    },
    Case {
        args: &["report", "--out", "{dir}/report", "{dir}/short.dat"],
        option: "short.dat",
        says: "not JSON",
    },
];

/// The job files of [`SWEEP`], `{d}` the case's directory.
const JOB_FILES: &[(&str, &str)] = &[
    (
        "reads.fio",
        "[rr]\nfilename={d}/existing.dat\nrw=read\nsize=64k\n",
    ),
    (
        "stonewall.fio",
        "[global]\nrw=write\nbs=1m\n[a]\nfilename={d}/a.dat\nsize=8m\n[b]\nstonewall\nfilename={d}/b.dat\nsize=100t\n",
    ),
    (
        "buffers.fio",
        "[j]\nioengine=null\nrw=randwrite\nbs=256m\niodepth=4096\nnumjobs=16\nsize=1g\n",
    ),
    (
        "nodir.fio",
        "[j]\nfilename={d}/nowhere/x.dat\nsize=1m\nrw=write\n",
    ),
    (
        "limit.fio",
        "[global]\nioengine=null\nsize=1m\n[a]\nnumjobs=1024\n[b]\nnumjobs=1024\n[c]\nnumjobs=1024\n[d]\nnumjobs=1024\n[e]\n",
    ),
    ("header.fio", "[job\nfilename={d}/new.dat\nsize=1m\n"),
    (
        "escape.fio",
        "[global]\ndirectory={d}/sub\nsize=1m\nrw=write\n[../../x]\n",
    ),
    ("value.fio", "[j]\nfilename={d}/new.dat\nsize=1m\nbs=abc\n"),
    (
        "unsupported.fio",
        "[j]\nfilename={d}/new.dat\nsize=1m\nexec_prerun=true\n",
    ),
    ("unset.fio", "[j]\nfilename=${CSDCHAR_TEST_NEVER_SET}\n"),
    (
        "direct.fio",
        "[j]\nfilename={d}/new.dat\nsize=1m\ndirect=1\nbs=1000\n",
    ),
    (
        "batch.fio",
        "[j]\nfilename={d}/new.dat\nsize=1m\niodepth=2\niodepth_batch=4\n",
    ),
    (
        "waitfor.fio",
        "[j]\nfilename={d}/new.dat\nsize=1m\nwait_for=zz\n",
    ),
    (
        "globalwait.fio",
        "[a]\nioengine=null\n[global]\nwait_for=a\n[b]\n",
    ),
    ("include.fio", "[j]\ninclude {d}/missing.fio\n"),
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
    std::fs::create_dir(dir.path().join("jobs")).unwrap();
    let d = dir.path().display().to_string();
    for (name, text) in JOB_FILES {
        std::fs::write(dir.path().join("jobs").join(name), text.replace("{d}", &d)).unwrap();
    }
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

/// Issue 38's sweep: bad input over the db options added since the last
/// pass (libpq's TLS keys, --tls, --listen, --client-io, --repeat,
/// --tpcc-mode and TPC-C's other options, --rate, --warmup, --start-at,
/// report --merge), each refused as [`check`] asserts: exit 2, one line
/// naming the option, nothing created. `host=127.0.0.1 port=1` is never
/// reached: a refusal comes first. The PG* variables' rows are in
/// tests/suite/db_env.rs (they need the process environment).
const DB_SWEEP: &[Case] = &[
    // Row 17: a file a TLS key names that holds nothing usable.
    Case {
        args: &[
            "db",
            "run",
            "--url",
            "host=127.0.0.1 port=1 sslmode=verify-full sslrootcert={dir}/existing.dat",
        ],
        option: "--url: sslrootcert=",
        says: "could not read root certificate file",
    },
    Case {
        args: &[
            "db",
            "run",
            "--url",
            "postgres://127.0.0.1:1/x?sslmode=verify-ca&sslrootcert={dir}/sub",
        ],
        option: "--url: sslrootcert=",
        says: "could not read root certificate file",
    },
    Case {
        args: &["db", "run", "--url", "host=127.0.0.1 port=1 sslsni=2"],
        option: "--url: sslsni=2",
        says: "0 or 1",
    },
    // Issue 40: libpq's protocol bounds, checked before anything connects.
    Case {
        args: &[
            "db",
            "run",
            "--url",
            "host=127.0.0.1 port=1 ssl_min_protocol_version=TLSv1.3 ssl_max_protocol_version=TLSv1.2",
        ],
        option: "--url:",
        says: "invalid SSL protocol version range",
    },
    // Row 5: --tls is for a managed cluster.
    Case {
        args: &["db", "prepare", "--url", "host=/nonexistent", "--tls"],
        option: "--tls",
        says: "sslmode",
    },
    Case {
        args: &["db", "run", "--url", "host=127.0.0.1 port=1", "--tls"],
        option: "--tls",
        says: "--url",
    },
    // Row 13: a --listen address the server could not listen on, before initdb.
    Case {
        args: &[
            "db",
            "prepare",
            "--pgdata",
            "{dir}/pg",
            "--listen",
            "999.1.1.1",
            "--tls",
        ],
        option: "--listen: '999.1.1.1'",
        says: "does not resolve",
    },
    Case {
        args: &[
            "db",
            "prepare",
            "--pgdata",
            "{dir}/pg",
            "--listen",
            "nosuch.invalid",
        ],
        option: "--listen: 'nosuch.invalid'",
        says: "does not resolve",
    },
    Case {
        // TEST-NET-1: an address of no interface here.
        args: &["db", "run", "--pgdata", "{dir}/pg", "--listen", "192.0.2.1"],
        option: "--listen: '192.0.2.1'",
        says: "no address of this host",
    },
    Case {
        args: &["db", "run", "--listen", "127.0.0.1,"],
        option: "--listen",
        says: "IP address",
    },
    Case {
        args: &["db", "run", "--client-threads", "0"],
        option: "--client-threads",
        says: "1..=1024",
    },
    // --repeat: a study's, and within its range.
    Case {
        args: &["db", "study", "--repeat", "0"],
        option: "--repeat",
        says: "1..=100",
    },
    Case {
        args: &["db", "run", "--repeat", "3"],
        option: "--repeat",
        says: "csdchar db study",
    },
    Case {
        args: &[
            "db",
            "prepare",
            "--url",
            "host=/nonexistent",
            "--repeat",
            "2",
        ],
        option: "--repeat",
        says: "prepare loads once",
    },
    Case {
        args: &["db", "study", "--fillfactor", "100,70,100"],
        option: "--fillfactor",
        says: "100 is listed twice",
    },
    // TPC-C's options: valid values, and only with --workload tpcc.
    Case {
        args: &["db", "run", "--tpcc-mode", "bogus"],
        option: "--tpcc-mode",
        says: "statements, procedures",
    },
    Case {
        args: &["db", "run", "--tpcc-mode", "procedures"],
        option: "--tpcc-mode",
        says: "applies to --workload tpcc",
    },
    Case {
        args: &["db", "run", "--workload", "tpcb", "--mix", "50,40,4,4,2"],
        option: "--mix",
        says: "applies to --workload tpcc",
    },
    Case {
        args: &["db", "run", "--load-method", "insert"],
        option: "--load-method",
        says: "applies to --workload tpcc",
    },
    Case {
        args: &[
            "db",
            "prepare",
            "--url",
            "host=/nonexistent",
            "--warehouse-range",
            "1-2",
        ],
        option: "--warehouse-range",
        says: "applies to --workload tpcc",
    },
    Case {
        args: &["db", "run", "--workload", "pgio", "--warehouses", "2"],
        option: "--warehouses",
        says: "not pgio",
    },
    Case {
        args: &["db", "run", "--rate", "inf"],
        option: "--rate",
        says: "above 0",
    },
    Case {
        args: &["db", "run", "--warmup", "10x"],
        option: "--warmup",
        says: "not a duration",
    },
    Case {
        args: &["db", "run", "--percentile", "0"],
        option: "--percentile",
        says: "at most 100",
    },
    Case {
        args: &["db", "run", "--start-at", "2099-01-01T00:00:00Z"],
        option: "--start-at",
        says: "24 hours",
    },
    // report --merge: what is not a result, and --out that is a file.
    Case {
        args: &[
            "report",
            "--merge",
            "--out",
            "{dir}/out",
            "{dir}/existing.dat",
        ],
        option: "existing.dat",
        says: "not JSON",
    },
    Case {
        args: &[
            "report",
            "--merge",
            "--out",
            "{dir}/existing.dat",
            "{dir}/sub",
        ],
        option: "--out",
        says: "not a directory",
    },
];

#[test]
fn the_db_options_added_since_refuse_bad_input() {
    for case in DB_SWEEP {
        check(case);
    }
}

/// Issue 38: the sweep's table.
#[test]
fn every_bad_block_job_file_and_output_input_exits_2_with_one_line_and_changes_nothing() {
    for case in SWEEP {
        check(case);
    }
}

/// Issue 38's sweep, what the table cannot say: a character device as an
/// output (only /dev/null, /dev/zero, /dev/full and terminals are), and a
/// TARGET that is not UTF-8 (the spec would name, and open, another file).
#[test]
fn a_device_or_a_path_that_is_not_text_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::FileTypeExt;
    let dir = workdir();
    let d = dir.path().display().to_string();
    // /dev/kmsg (1:11): writing it logs to the kernel; not an output.
    let kmsg = Path::new("/dev/kmsg");
    if std::fs::metadata(kmsg).is_ok_and(|m| m.file_type().is_char_device()) {
        for args in [
            vec![
                "block",
                "--engine",
                "null",
                "--size",
                "1m",
                "--output",
                "/dev/kmsg",
            ],
            vec!["estimate", "{dir}/existing.dat", "--output", "/dev/kmsg"],
            vec![
                "block",
                "--job-file",
                "{dir}/jobs/reads.fio",
                "--parse-only",
                "--output",
                "/dev/kmsg",
            ],
        ] {
            let args: Vec<String> = args.iter().map(|a| a.replace("{dir}", &d)).collect();
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let ran = csdchar(&argv);
            assert_eq!(ran.outcome.exit_code, 2, "{argv:?}: {}", ran.stderr);
            assert!(
                ran.stderr
                    .starts_with("error: --output: /dev/kmsg is a character device"),
                "{}",
                ran.stderr
            );
        }
    }
    let ran = csdchar(&[
        "estimate",
        &format!("{d}/existing.dat"),
        "--output",
        "/dev/null",
    ]);
    assert_eq!(ran.outcome.exit_code, 0, "{}", ran.stderr);
    // A TARGET that is not UTF-8.
    let before = snapshot(dir.path());
    let mut target = dir.path().as_os_str().to_os_string();
    target.push(std::ffi::OsStr::from_bytes(b"/\xff.dat"));
    for print in [false, true] {
        let mut argv: Vec<std::ffi::OsString> =
            ["csdchar", "block", "--rw", "write", "--size", "1m"]
                .iter()
                .map(Into::into)
                .collect();
        if print {
            argv.push("--print-job".into());
        }
        argv.push(target.clone());
        use clap::Parser;
        let cli = csdchar_cli::Cli::try_parse_from(argv).unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut io = csdchar_cli::Io {
            stdout: &mut out,
            stderr: &mut err,
            interrupt: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
        };
        let code = csdchar_cli::run(cli, &mut io).exit_code;
        let err = String::from_utf8_lossy(&err);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.starts_with("error: TARGET: the path is not valid UTF-8"),
            "{err}"
        );
        assert!(out.is_empty());
    }
    assert_eq!(before, snapshot(dir.path()), "nothing created");
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
    let mut cmd = csdchar_cli::cli::Cli::command();
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
    for absent in [
        "--tables <",
        "--listen <",
        "--pg-memory-limit <",
        "--threads <",
    ] {
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

/// The options' parsing and validation, in-process (were unit tests of the CLI crate).
mod block_options {
    use std::path::Path;

    use clap::Parser;
    use csdchar_cli::args::*;
    use csdchar_cli::cli::*;
    use csdchar_core::result::block::{BlockSpec, EngineKind, RwMode};

    fn spec(args: &[&str]) -> Result<BlockSpec, UsageError> {
        let mut argv = vec!["csdchar", "block"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Block(o) => o.validate(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn defaults_follow_fio_and_the_core_default() {
        let s = spec(&["/dev/null"]).unwrap();
        assert_eq!(s.rw, RwMode::Read);
        assert_eq!((s.bs, s.iodepth, s.numjobs, s.rwmixread), (4096, 1, 1, 50));
        assert!(s.direct);
        assert_eq!(s.percentiles.len(), 17);
        let core_default = BlockSpec {
            target: Some("/dev/null".into()),
            ..BlockSpec::default()
        };
        assert_eq!(s, core_default);
    }

    #[test]
    fn batch_complete_auto_and_explicit() {
        assert_eq!(
            spec(&["--iodepth", "1", "x"])
                .unwrap()
                .iodepth_batch_complete,
            1
        );
        assert_eq!(
            spec(&["--iodepth", "32", "x"])
                .unwrap()
                .iodepth_batch_complete,
            4
        );
        assert_eq!(
            spec(&["--iodepth", "1024", "x"])
                .unwrap()
                .iodepth_batch_complete,
            16
        );
        let s = spec(&["--iodepth", "32", "--iodepth-batch-complete", "1", "x"]).unwrap();
        assert_eq!(s.iodepth_batch_complete, 1);
        assert!(spec(&["--iodepth", "4", "--iodepth-batch-complete", "8", "x"]).is_err());
    }

    #[test]
    fn sizes_durations_and_booleans() {
        let s = spec(&[
            "--bs",
            "128k",
            "--size",
            "2g",
            "--offset",
            "1m",
            "--runtime",
            "5m",
            "--ramp-time",
            "500ms",
            "--direct",
            "0",
            "--compress-chunk",
            "1m",
            "x",
        ])
        .unwrap();
        assert_eq!((s.bs, s.size, s.offset), (128 << 10, 2 << 30, 1 << 20));
        assert_eq!((s.runtime_ms, s.ramp_time_ms), (Some(300_000), 500));
        assert!(!s.direct);
        assert_eq!(
            s.compress_chunk,
            128 << 10,
            "chunk is capped at bs, like fio"
        );
        assert_eq!(
            spec(&["--engine", "io_uring", "x"]).unwrap().engine,
            EngineKind::Uring
        );
        assert_eq!(
            spec(&["--ioengine", "null"]).unwrap().engine,
            EngineKind::Null
        );
    }

    #[test]
    fn check_output_refuses_directories_missing_dirs_and_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let existing = d.join("data.bin");
        std::fs::write(&existing, b"x").unwrap();
        let link = d.join("hard.bin");
        std::fs::hard_link(&existing, &link).unwrap();
        let fresh = d.join("new.bin");
        let fine = d.join("result.json");

        assert_eq!(check_output(None, &[&existing]), Ok(()));
        assert_eq!(check_output(Some(&fine), &[&existing, &fresh]), Ok(()));
        let err = |out: &Path, inputs: &[&Path]| check_output(Some(out), inputs).unwrap_err().0;
        let e = err(d, &[]);
        assert!(
            e.starts_with("--output:") && e.contains("is a directory"),
            "{e}"
        );
        let e = err(&d.join("no/such/dir/r.json"), &[]);
        assert!(
            e.starts_with("--output: directory") && e.contains("does not exist"),
            "{e}"
        );
        // The same file: literally, through `..`, through a hard link, or
        // not existing yet under two spellings.
        for (out, input) in [
            (existing.clone(), existing.clone()),
            (d.join("sub/../data.bin"), existing.clone()),
            (link.clone(), existing.clone()),
            (fresh.clone(), d.join(".").join("new.bin")),
        ] {
            if out.starts_with(d.join("sub")) {
                std::fs::create_dir_all(d.join("sub")).unwrap();
            }
            let e = err(&out, &[&fine, &input]);
            assert!(
                e.starts_with("--output:") && e.contains("same file as"),
                "{out:?} vs {input:?}: {e}"
            );
        }
        assert!(!fresh.exists(), "checking creates nothing");
    }

    #[test]
    fn capacity_watch_has_a_floor() {
        let parse = |args: &[&str]| {
            let mut argv = vec!["csdchar", "capacity", "/"];
            argv.extend_from_slice(args);
            match Cli::try_parse_from(argv).expect("parses").command {
                Command::Capacity(o) => o.validate(),
                _ => unreachable!(),
            }
        };
        assert_eq!(
            parse(&["--watch", "0s"]),
            Err(UsageError("--watch: must be at least 10ms".into()))
        );
        assert!(parse(&["--watch", "9ms"]).is_err());
        assert_eq!(parse(&["--watch", "10ms"]), Ok(()));
        assert_eq!(parse(&[]), Ok(()));
    }

    #[test]
    fn help_texts_name_what_each_command_writes() {
        use clap::CommandFactory;
        // Every option's help and the help of each of its values, unwrapped.
        let texts = |cmd: &clap::Command| {
            let mut out = Vec::new();
            for a in cmd.get_arguments() {
                out.extend(a.get_long_help().or(a.get_help()).map(|h| h.to_string()));
                for v in a.get_possible_values() {
                    out.extend(v.get_help().map(|h| h.to_string()));
                }
            }
            out.join("\n")
        };
        let cli = Cli::command();
        let sub = |name: &str| texts(cli.find_subcommand(name).expect("subcommand"));
        for name in ["block", "capacity", "estimate"] {
            let help = sub(name);
            // The shared --output-format doc must not claim block's schema.
            assert!(!help.contains("csdchar.block/1"), "{name}: {help}");
            assert!(help.contains("csdchar schema <command>"), "{name}: {help}");
        }
        let block = sub("block");
        for promise in [
            "at most 256m",
            "at least 10ms",
            "0 to --iodepth",
            "TARGET must exist",
            "not TARGET",
        ] {
            assert!(block.contains(promise), "block help lacks '{promise}'");
        }
        assert!(sub("capacity").contains("at least 10ms"));
        let estimate = sub("estimate");
        for promise in ["512 to 1m", "not one of the inputs", "1-1024"] {
            assert!(
                estimate.contains(promise),
                "estimate help lacks '{promise}'"
            );
        }
        assert!(sub("report").contains("not an existing file"));
    }
}

/// `csdchar db`'s options: spellings, defaults, per-step groups.
mod db_options {
    use clap::{Parser, ValueEnum};
    use csdchar_cli::db_opts::*;

    #[test]
    fn workloads_take_sysbench_and_pgbench_spellings() {
        for (ours, theirs) in [
            ("oltp-read-write", "oltp_read_write"),
            ("oltp-update-non-index", "oltp_update_non_index"),
            ("tpcb", "tpcb-like"),
            ("tpcb-simple-update", "simple-update"),
            ("tpcb-select-only", "select-only"),
        ] {
            let a = WorkloadArg::from_str(ours, false).unwrap();
            assert_eq!(WorkloadArg::from_str(theirs, false), Ok(a), "{theirs}");
        }
        assert!(WorkloadArg::from_str("oltp_read_writ", false).is_err());
    }

    fn parse(args: &[&str]) -> Result<(&'static str, DbOpts), String> {
        let mut argv = vec!["csdchar", "db"];
        argv.extend_from_slice(args);
        match csdchar_cli::cli::Cli::try_parse_from(argv) {
            Ok(cli) => match cli.command {
                csdchar_cli::cli::Command::Db(d) => Ok(d.step()),
                _ => unreachable!(),
            },
            Err(e) => Err(csdchar_cli::one_line(&e)),
        }
    }

    #[test]
    fn no_step_is_run_and_each_step_takes_only_its_options() {
        let (step, o) = parse(&["--fillfactor", "70"]).unwrap();
        assert_eq!((step, o.fillfactor()), ("run", Some(70)));
        assert_eq!(parse(&["run"]).unwrap().0, "run");
        for (args, bad) in [
            (&["cleanup", "--time", "5s"][..], "--time"),
            (&["cleanup", "--table-size", "5"][..], "--table-size"),
            (
                &["alter", "--threads", "4", "--fillfactor", "70"][..],
                "--threads",
            ),
            (&["prepare", "--time", "5s"][..], "--time"),
        ] {
            let e = parse(args).unwrap_err();
            assert!(e.contains(bad), "{args:?}: {e}");
        }
        let (step, o) = parse(&["alter", "--fillfactor", "70", "--tables", "3"]).unwrap();
        assert_eq!(
            (step, o.fillfactor(), o.tables.tables),
            ("alter", Some(70), 3)
        );
        // Steps that do not take an option get its declared default.
        let (_, o) = parse(&["cleanup"]).unwrap();
        assert_eq!(o.run.time, std::time::Duration::from_secs(10));
        assert_eq!(o.server.schema, "public");
        assert!(o.load.create_secondary);
    }

    #[test]
    fn booleans_and_durations_take_what_their_help_says() {
        for (v, want) in [("true", true), ("false", false), ("1", true), ("no", false)] {
            let (_, o) = parse(&["prepare", "--create-secondary", v]).unwrap();
            assert_eq!(o.load.create_secondary, want, "{v}");
        }
        let (_, o) = parse(&["run", "--time", "2m"]).unwrap();
        assert_eq!(o.run.time, std::time::Duration::from_secs(120));
        assert_eq!(
            parse(&["run", "--scale", "3"]).unwrap().1.load.scale,
            Some(3)
        );
        assert_eq!(parse(&["run"]).unwrap().1.load.scale, None);
    }
}
