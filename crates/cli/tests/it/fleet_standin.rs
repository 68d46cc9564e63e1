//! `--hosts` through a stand-in ssh (tests/fixtures/ssh-standin): every "host"
//! runs the built csdchar here, and the stand-in loses, silences, delays or
//! refuses hosts as each test asks. Real sshd on the loopback: `fleet_sshd`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Three (or more) stand-in hosts, each with its own work directory.
pub struct Standin {
    pub dir: tempfile::TempDir,
    pub names: Vec<String>,
}

impl Standin {
    pub fn new(names: &[&str]) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("csdchar-fleet")
            .tempdir()
            .unwrap();
        let mut hosts = String::from("# stand-in hosts\n");
        for n in names {
            let w = dir.path().join(format!("work-{n}"));
            std::fs::create_dir(&w).unwrap();
            hosts.push_str(&format!(
                "{n} csdchar={} workdir={}\n",
                env!("CARGO_BIN_EXE_csdchar"),
                w.display()
            ));
        }
        std::fs::write(dir.path().join("hosts"), hosts).unwrap();
        Standin {
            dir,
            names: names.iter().map(|s| s.to_string()).collect(),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Makes the stand-in misbehave for `host` (see the script's header).
    pub fn mode(&self, host: &str, mode: &str) {
        std::fs::write(self.path(&format!("{host}.mode")), mode).unwrap();
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_csdchar"));
        c.args(args)
            .arg("--hosts")
            .arg(self.path("hosts"))
            .arg("--output")
            .arg(self.path("run"))
            .env(
                "CSDCHAR_SSH",
                Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ssh-standin"),
            )
            .env("STANDIN_DIR", self.dir.path())
            .stdin(Stdio::null());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// The remote commands the stand-in ran that started a step.
    pub fn started(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("commands.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("--start-instant"))
            .map(str::to_string)
            .collect()
    }

    pub fn manifest(&self) -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(self.path("run/fleet.json")).unwrap()).unwrap()
    }
}

/// Processes whose command line mentions `needle` (the "remote" csdchar of a test).
pub fn processes_with(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(needle) && cmd.contains("--stop-on-stdin-eof") {
            found.push(pid);
        }
    }
    found
}

/// Waits until no process mentions `needle`, at most `limit`; true when none is left.
pub fn none_left(needle: &str, limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if processes_with(needle).is_empty() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    processes_with(needle).is_empty()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const NULL_READ: &[&str] = &[
    "block",
    "--engine",
    "null",
    "--rw",
    "randread",
    "--time-based",
    "--log-interval",
    "200ms",
    "--start-delay",
    "1s",
];

#[test]
fn three_hosts_start_together_and_merge_exactly() {
    let f = Standin::new(&["a", "b", "c"]);
    let mut args = NULL_READ.to_vec();
    args.extend(["--runtime", "1s", "--output-format", "json"]);
    let out = f.run(&args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("3 host(s) passed the preflight"), "{err}");
    let m = f.manifest();
    assert_eq!(m["outcome"], "completed");
    assert_eq!(m["merged"], true);
    let spread = m["start_spread_ms"].as_f64().unwrap();
    assert!(spread <= 50.0, "spread {spread} ms");
    // The merged result (stdout and result.json) is the exact merge of the three raw ones.
    let merged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(f.path("run/result.json")).unwrap()).unwrap();
    assert_eq!(merged, saved);
    let mut ios = 0;
    for h in m["hosts"].as_array().unwrap() {
        assert_eq!(h["status"], "completed", "{h}");
        assert!(h["version"].as_str().unwrap().starts_with("csdchar "));
        assert!(!h["kernel"].as_str().unwrap().is_empty());
        assert!(h["rtt_ms"].as_f64().unwrap() > 0.0);
        assert!(h["late_ms"].as_f64().unwrap() < 50.0, "{h}");
        let raw: serde_json::Value = serde_json::from_slice(
            &std::fs::read(f.path(&format!("run/{}", h["result"].as_str().unwrap()))).unwrap(),
        )
        .unwrap();
        assert_eq!(raw["spec"]["start_at"], m["start_at"]);
        assert!(raw["start"]["began"].as_str().unwrap() >= m["start_at"].as_str().unwrap());
        ios += raw["read"]["ios"].as_u64().unwrap();
        assert!(
            f.path(&format!("run/{}", h["log"].as_str().unwrap()))
                .is_file()
        );
    }
    assert_eq!(merged["read"]["ios"].as_u64().unwrap(), ios);
    assert_eq!(merged["spec"]["numjobs"], 3);
    // Every host's remote command held the lifeline and wrote JSON to its work directory.
    let started = f.started();
    assert_eq!(started.len(), 3, "{started:?}");
    assert!(started.iter().all(|c| c.contains("--stop-on-stdin-eof")));
    // Nothing is left on the hosts: results fetched and removed.
    for n in &f.names {
        let left: Vec<_> = std::fs::read_dir(f.path(&format!("work-{n}")))
            .unwrap()
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}

/// A preflight failure names the host and starts nothing anywhere.
#[test]
fn a_failed_preflight_names_the_host_and_starts_nothing() {
    for (mode, says) in [
        (
            "refuse",
            "host b: unreachable over ssh: ssh: connect to host b",
        ),
        ("mismatch", "host b: runs csdchar 9.9.9"),
        ("offset", "host b: its clock is +"),
        ("deny", "host b: csdchar not found"),
    ] {
        let f = Standin::new(&["a", "b", "c"]);
        f.mode("b", mode);
        let mut args = NULL_READ.to_vec();
        args.extend(["--runtime", "1s"]);
        let out = f.run(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{mode}: {err}");
        assert!(err.contains(says), "{mode}: {err}");
        assert!(err.contains("nothing was started"), "{err}");
        if mode == "offset" {
            // 5 s ahead, give or take the round trip.
            assert!(err.contains("ms off the controller's"), "{err}");
            assert!(err.contains("+49") || err.contains("+50"), "{err}");
        }
        assert!(f.started().is_empty(), "{mode}: {:?}", f.started());
    }
    // A host whose target is not usable refuses in its own words (the local run's checks).
    let f = Standin::new(&["a", "b"]);
    std::fs::create_dir(f.path("work-b/data.bin")).unwrap();
    let out = f.run(&[
        "block",
        "--rw",
        "read",
        "--size",
        "64k",
        "--runtime",
        "1s",
        "data.bin",
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("host b: refuses the step: TARGET: data.bin is neither"),
        "{err}"
    );
    assert!(f.started().is_empty());
}

#[test]
fn a_late_host_fails_the_step_unless_kept() {
    let f = Standin::new(&["a", "b"]);
    f.mode("b", "late");
    let mut args = NULL_READ.to_vec();
    args.extend(["--runtime", "500ms"]);
    let out = f.run(&args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("more than --start-spread-limit"), "{err}");
    let m = f.manifest();
    assert_eq!(m["outcome"], "start spread");
    assert_eq!(m["merged"], false);
    assert!(!f.path("run/result.json").exists());
    let b = &m["hosts"][1];
    assert!(b["late_ms"].as_f64().unwrap() > 1000.0, "{b}");
    let raw: serde_json::Value =
        serde_json::from_slice(&std::fs::read(f.path("run/hosts/b.json")).unwrap()).unwrap();
    assert_eq!(raw["start"]["too_late"], true);
    // Kept on request, with a note.
    let f = Standin::new(&["a", "b"]);
    f.mode("b", "late");
    args.push("--keep-spread");
    let out = f.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let m = f.manifest();
    assert_eq!(m["merged"], true);
    assert!(m["notes"][0].as_str().unwrap().contains("--keep-spread"));
}

#[test]
fn a_lost_host_ends_the_step_within_seconds_and_names_it() {
    for mode in ["lose", "silent"] {
        let f = Standin::new(&["a", "b", "c"]);
        f.mode("b", mode);
        let mut args = NULL_READ.to_vec();
        args.extend(["--runtime", "60s"]);
        let t0 = Instant::now();
        let out = f.run(&args);
        let took = t0.elapsed();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(took < Duration::from_secs(15), "{mode}: took {took:?}");
        assert!(err.contains("host b lost mid-step"), "{err}");
        assert!(err.contains("unmerged"), "{err}");
        let m = f.manifest();
        assert_eq!(m["outcome"], "host lost");
        assert_eq!(m["merged"], false);
        assert_eq!(m["hosts"][1]["status"], "lost");
        for i in [0, 2] {
            // The others were stopped by their lifeline and saved partial results.
            assert_eq!(m["hosts"][i]["status"], "stopped", "{}", m["hosts"][i]);
            assert!(m["hosts"][i]["result"].is_string());
        }
        assert!(none_left(
            &f.dir.path().display().to_string(),
            Duration::from_secs(10)
        ));
    }
    // Survivors merged on request, recorded.
    let f = Standin::new(&["a", "b", "c"]);
    f.mode("c", "lose");
    let mut args = NULL_READ.to_vec();
    args.extend(["--runtime", "60s", "--merge-survivors"]);
    let out = f.run(&args);
    assert_eq!(out.status.code(), Some(1));
    let m = f.manifest();
    assert_eq!(m["merged"], true);
    assert_eq!(m["merged_hosts"], serde_json::json!(["a", "b"]));
    assert!(m["notes"][0].as_str().unwrap().contains("without c"));
    assert!(none_left(
        &f.dir.path().display().to_string(),
        Duration::from_secs(10)
    ));
}

/// Waits until every host's step has started (its csdchar is running).
fn wait_running(f: &Standin, child: &mut Child, hosts: usize) {
    let t0 = Instant::now();
    let needle = f.dir.path().display().to_string();
    while processes_with(&needle).len() < hosts {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the controller ended early"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "hosts never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Past the start instant and into the measured run.
    std::thread::sleep(Duration::from_millis(2500));
}

#[test]
fn ctrl_c_or_a_dead_controller_stops_every_host() {
    for signal in [libc::SIGINT, libc::SIGKILL] {
        let f = Standin::new(&["a", "b", "c"]);
        let mut args = NULL_READ.to_vec();
        args.extend(["--runtime", "120s"]);
        let mut child = f
            .command(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_running(&f, &mut child, 3);
        // Safety: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, signal) };
        let t0 = Instant::now();
        let status = child.wait().unwrap();
        let needle = f.dir.path().display().to_string();
        assert!(
            none_left(&needle, Duration::from_secs(10)),
            "signal {signal}: csdchar left running: {:?}",
            processes_with(&needle)
        );
        assert!(t0.elapsed() < Duration::from_secs(15));
        if signal == libc::SIGINT {
            assert_eq!(status.code(), Some(130));
            let m = f.manifest();
            assert_eq!(m["outcome"], "interrupted");
            for h in m["hosts"].as_array().unwrap() {
                assert_eq!(h["status"], "stopped", "{h}");
                assert!(h["result"].is_string(), "{h}");
            }
            // The partial results were merged.
            assert_eq!(m["merged"], true);
        }
    }
}

#[test]
fn bad_fleet_input_is_refused_before_anything() {
    let f = Standin::new(&["a"]);
    for (args, says) in [
        (
            vec![
                "db",
                "run",
                "--url",
                "host=db1 password=secret",
                "--time",
                "1s",
            ],
            "--url: with --hosts",
        ),
        (vec!["db", "run", "--time", "1s"], "db run needs --url"),
        (
            vec![
                "block",
                "--engine",
                "null",
                "--runtime",
                "1s",
                "--start-at",
                "23:59",
            ],
            "--start-at",
        ),
    ] {
        let out = f.run(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(!f.path("run").exists());
    }
    std::fs::write(f.path("bad-hosts"), "-oProxyCommand=evil\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_csdchar"))
        .args(["block", "--engine", "null", "--runtime", "1s", "--hosts"])
        .arg(f.path("bad-hosts"))
        .arg("--output")
        .arg(f.path("run"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--hosts line 1"),
        "{}",
        text(&out.stderr)
    );
    let out = Command::new(env!("CARGO_BIN_EXE_csdchar"))
        .args(["block", "--engine", "null", "--runtime", "1s", "--hosts"])
        .arg(f.path("hosts"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--output: with --hosts"));
}

#[test]
fn a_campaign_runs_its_load_steps_on_the_hosts_and_the_rest_here() {
    let f = Standin::new(&["a", "b"]);
    let bin = env!("CARGO_BIN_EXE_csdchar");
    let d = f.dir.path().display().to_string();
    let campaign = format!(
        r#"name = "fleet-standin"
[targets.here]
dir = "{d}/data"

[hosts]
a = {{ destination = "a", csdchar = "{bin}", workdir = "{d}/work-a" }}
b = {{ destination = "b", csdchar = "{bin}", workdir = "{d}/work-b" }}

[[steps]]
command = "block"
args = {{ engine = "null", rw = "randread", size = "1m", runtime = "500ms", time-based = true, start-delay = "1s" }}

[[steps]]
command = "block"
on = "local"
args = {{ engine = "null", rw = "read", size = "1m", runtime = "200ms", time-based = true }}
"#
    );
    std::fs::write(f.path("c.toml"), campaign).unwrap();
    let campaign_cmd = |file: &str| {
        Command::new(bin)
            .args(["campaign", file, "--out"])
            .arg(f.path("out"))
            .env(
                "CSDCHAR_SSH",
                Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ssh-standin"),
            )
            .env("STANDIN_DIR", f.dir.path())
            .output()
            .unwrap()
    };
    let out = campaign_cmd(f.path("c.toml").to_str().unwrap());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let read = |rel: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(f.path(rel)).unwrap()).unwrap()
    };
    // The load step ran on both hosts and its result is their merge; the other one ran here.
    assert_eq!(read("out/here/01-block.json")["spec"]["numjobs"], 2);
    let m = read("out/here/01-block.d/fleet.json");
    assert_eq!(m["merged_hosts"], serde_json::json!(["a", "b"]));
    assert_eq!(read("out/here/02-block.json")["spec"]["numjobs"], 1);
    assert_eq!(f.started().len(), 2, "{:?}", f.started());

    // A one-off step cannot be sent to the hosts.
    let bad = std::fs::read_to_string(f.path("c.toml"))
        .unwrap()
        .replace("on = \"local\"", "on = \"all\"")
        .replace("command = \"block\"\non", "command = \"db cleanup\"\non")
        .replace(
            "args = { engine = \"null\", rw = \"read\", size = \"1m\", runtime = \"200ms\", time-based = true }",
            "",
        );
    std::fs::write(f.path("bad.toml"), bad).unwrap();
    let out = campaign_cmd(f.path("bad.toml").to_str().unwrap());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("db cleanup runs once"),
        "{}",
        text(&out.stderr)
    );
}
