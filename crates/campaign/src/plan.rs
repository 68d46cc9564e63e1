//! Expansion: targets × the grid's loop nest × steps, into the list of
//! commands a campaign runs, each with a key that stays the same from one run
//! of the same file to the next (resume matches on it).
//!
//! Order: targets one after the other, in file order (a zram target exists
//! only while its steps run). Within a target, `[grid]` is a loop nest,
//! outermost variable first, and each step sits in the loops up to the
//! deepest variable it references: consecutive steps share loops, and a step
//! that references fewer variables than the one before it closes the inner
//! loops. With `[grid] fillfactor, workload` and the steps `prepare` (no
//! variable), `alter {fillfactor}`, `run {workload}`:
//!
//! ```text
//! prepare
//! for fillfactor: alter; for workload: run
//! ```
//!
//! A step that uses no variable but belongs inside a loop says so with
//! `within = ["fillfactor"]`. A step's own `grid` expands that step alone,
//! innermost. Variables a step runs under are its bindings; they name its
//! result file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::CampaignError;
use crate::estimate::estimate;
use crate::spec::{
    ArgValue, Campaign, CommandKind, GridVar, StepSpec, Storage, Target, substitute,
};

/// The file block steps use in a target's directory.
pub const BLOCK_FILE: &str = "csdchar-block.dat";
/// The data directory db and estimate steps use in a target's directory.
pub const PGDATA_DIR: &str = "pgdata";

/// What stands for the mount directory of a target the campaign makes (zram
/// or zfs) in planned commands until it exists: `<mount:NAME>`.
pub fn mount_placeholder(target: &str) -> String {
    format!("<mount:{target}>")
}

/// One command of the campaign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedStep {
    /// Position in the plan, from 0.
    pub index: usize,
    /// Stable identity: `TARGET/NN-command[-var-value…]` (NN: the step's number in the file).
    pub key: String,
    /// The target it runs on.
    pub target: String,
    /// The `[[steps]]` entry it comes from, from 1.
    pub step: usize,
    /// What it runs.
    pub kind: CommandKind,
    /// Grid variables and the values it runs with, outermost first.
    pub bindings: Vec<(String, String)>,
    /// argv after `csdchar` (`["db", "run", "--pgdata", …, "--output", FILE]`).
    /// A made target's mount directory appears as [`mount_placeholder`] until
    /// the executor binds it (see [`PlannedStep::bind_mount`]).
    pub command: Vec<String>,
    /// The JSON result file, for commands that write one.
    pub result_path: Option<PathBuf>,
    /// Expected duration (see [`crate::estimate`]).
    pub estimated: Duration,
    /// Where its `[[steps]]` entry says it runs (`on`).
    pub on: crate::hosts::StepHosts,
}

impl PlannedStep {
    /// The command with the zram mount placeholder of its target replaced by `dir`.
    pub fn bind_mount(&self, dir: &Path) -> PlannedStep {
        let ph = mount_placeholder(&self.target);
        let d = dir.display().to_string();
        PlannedStep {
            command: self.command.iter().map(|a| a.replace(&ph, &d)).collect(),
            ..self.clone()
        }
    }

    /// The command for display and the manifest: the value of `--url` is
    /// shown as `<url>` (URLs may carry passwords).
    pub fn display_command(&self) -> Vec<String> {
        redact(&self.command)
    }

    /// `csdchar …` as one line (redacted).
    pub fn command_line(&self) -> String {
        let mut s = String::from("csdchar");
        for a in self.display_command() {
            s.push(' ');
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$\\".contains(c)) {
                s.push('\'');
                s.push_str(&a.replace('\'', "'\\''"));
                s.push('\'');
            } else {
                s.push_str(&a);
            }
        }
        s
    }
}

/// Replaces the value after `--url` (and of `--url=…`) with `<url>`.
pub fn redact(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut next_is_url = false;
    for a in argv {
        if next_is_url {
            out.push("<url>".to_string());
            next_is_url = false;
        } else if a == "--url" {
            out.push(a.clone());
            next_is_url = true;
        } else if a.starts_with("--url=") {
            out.push("--url=<url>".to_string());
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// The expanded campaign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The campaign's name.
    pub campaign: String,
    /// The output directory (absolute): `manifest.json` and a directory of results per target.
    pub out: PathBuf,
    /// Target names in file order (the first is the report's baseline).
    pub targets: Vec<String>,
    /// Every command, in the order they run.
    pub steps: Vec<PlannedStep>,
}

impl Plan {
    /// Sum of the estimates.
    pub fn estimated_total(&self) -> Duration {
        self.steps.iter().map(|s| s.estimated).sum()
    }

    /// The steps of `target`, in order.
    pub fn steps_of<'a>(&'a self, target: &'a str) -> impl Iterator<Item = &'a PlannedStep> + 'a {
        self.steps.iter().filter(move |s| s.target == target)
    }

    /// The step with `key`.
    pub fn step(&self, key: &str) -> Option<&PlannedStep> {
        self.steps.iter().find(|s| s.key == key)
    }

    /// A human-readable plan: one line per step (`n/N key ~estimate: command`), then the total.
    pub fn render(&self) -> String {
        let n = self.steps.len();
        let w = n.to_string().len();
        let mut out = format!(
            "campaign {}: {n} steps on {} ({}), estimated {}; results in {}\n",
            self.campaign,
            if self.targets.len() == 1 {
                "1 target"
            } else {
                "targets"
            },
            self.targets.join(", "),
            format_duration(self.estimated_total()),
            self.out.display()
        );
        for s in &self.steps {
            out.push_str(&format!(
                "{:>w$}/{n} {:<8} ~{:>7}  {}\n",
                s.index + 1,
                s.target,
                format_duration(s.estimated),
                s.command_line()
            ));
        }
        out
    }

    /// Runs `check` over every step's command (the CLI parses each argv with
    /// its own parser): the first refusal is an error naming the step.
    pub fn check(
        &self,
        mut check: impl FnMut(&PlannedStep) -> Result<(), String>,
    ) -> Result<(), CampaignError> {
        for s in &self.steps {
            check(s).map_err(|e| {
                CampaignError::File(format!(
                    "steps[{}] ({}) on {}: {}",
                    s.step,
                    s.kind.name(),
                    s.target,
                    e.lines().next().unwrap_or("refused").trim()
                ))
            })?;
        }
        Ok(())
    }
}

/// `1h02m`, `3m05s`, `42s`.
pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600 + 30) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

impl Campaign {
    /// Expands the campaign into the commands it runs, results under `out`.
    /// Fails (one line) when a step cannot run on one of its targets.
    pub fn plan(&self, out: &Path) -> Result<Plan, CampaignError> {
        let out = std::path::absolute(out)
            .map_err(|e| CampaignError::Usage(format!("--out {}: {e}", out.display())))?;
        let mut steps = Vec::new();
        for target in &self.targets {
            for s in &self.steps {
                if s.targets.contains(&target.name) {
                    check_target(s, target)?;
                }
            }
            let mine: Vec<&StepSpec> = self
                .steps
                .iter()
                .filter(|s| s.targets.contains(&target.name))
                .collect();
            let mut instances = Vec::new();
            nest(&mine, &self.grid, 0, &mut Vec::new(), &mut instances);
            for (spec, bindings) in instances {
                steps.push(build(steps.len(), spec, bindings, target, &out));
            }
        }
        // Names are sanitized: make sure two steps never share a key or a file.
        let mut seen = std::collections::HashSet::new();
        for s in &mut steps {
            if !seen.insert(s.key.clone()) {
                s.key = format!("{}-{}", s.key, s.index + 1);
                if let Some(p) = &s.result_path {
                    s.result_path = Some(p.with_file_name(format!("{}.json", key_stem(&s.key))));
                    set_output(&mut s.command, s.result_path.as_ref().expect("set"));
                }
                seen.insert(s.key.clone());
            }
        }
        Ok(Plan {
            campaign: self.name.clone(),
            out,
            targets: self.targets.iter().map(|t| t.name.clone()).collect(),
            steps,
        })
    }
}

fn key_stem(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or(key)
}

fn set_output(argv: &mut [String], path: &Path) {
    if let Some(i) = argv.iter().position(|a| a == "--output") {
        argv[i + 1] = path.display().to_string();
    }
}

/// Whether `s` can run on `t`: db steps need a URL or storage, block steps a
/// block path or storage, estimate storage.
fn check_target(s: &StepSpec, t: &Target) -> Result<(), CampaignError> {
    let has_storage = !matches!(t.storage, Storage::None);
    let why = if s.command.is_db() && t.url.is_none() && !has_storage {
        Some("db steps need dir, zram, zfs or url")
    } else if s.command == CommandKind::Block && t.block.is_none() && !has_storage {
        Some("block steps need dir, zram, zfs or block")
    } else if s.command == CommandKind::Estimate && !has_storage {
        Some("estimate reads the data directory in dir, zram or zfs")
    } else {
        None
    };
    if let Some(why) = why {
        return Err(CampaignError::File(format!(
            "steps[{}] ({}): cannot run on target {} ({}; {why}); list the targets it runs on with targets = [...]",
            s.number,
            s.command.name(),
            t.name,
            t.describe()
        )));
    }
    if s.command == CommandKind::Block
        && t.block.is_none()
        && !s.args.iter().any(|(k, _)| k == "size")
    {
        return Err(CampaignError::File(format!(
            "steps[{}] (block).args.size: needed on target {}, where block writes a file ({BLOCK_FILE} in its directory); e.g. size = \"1g\"",
            s.number, t.name
        )));
    }
    Ok(())
}

/// The loop nest over `grid[depth..]` around `steps` (see the module docs).
fn nest<'a>(
    steps: &[&'a StepSpec],
    grid: &[GridVar],
    depth: usize,
    binding: &mut Vec<(String, String)>,
    out: &mut Vec<(&'a StepSpec, Vec<(String, String)>)>,
) {
    let level = |s: &StepSpec| {
        s.referenced()
            .iter()
            .filter_map(|n| grid.iter().position(|g| g.name == *n))
            .map(|p| p + 1)
            .max()
            .unwrap_or(0)
    };
    let mut i = 0;
    while i < steps.len() {
        if level(steps[i]) <= depth {
            local(steps[i], 0, binding, out);
            i += 1;
            continue;
        }
        let mut j = i;
        while j < steps.len() && level(steps[j]) > depth {
            j += 1;
        }
        let var = &grid[depth];
        for v in &var.values {
            binding.push((var.name.clone(), v.clone()));
            nest(&steps[i..j], grid, depth + 1, binding, out);
            binding.pop();
        }
        i = j;
    }
}

/// The step's own grid, innermost.
fn local<'a>(
    s: &'a StepSpec,
    depth: usize,
    binding: &mut Vec<(String, String)>,
    out: &mut Vec<(&'a StepSpec, Vec<(String, String)>)>,
) {
    let Some(var) = s.grid.get(depth) else {
        out.push((s, binding.clone()));
        return;
    };
    for v in &var.values {
        binding.push((var.name.clone(), v.clone()));
        local(s, depth + 1, binding, out);
        binding.pop();
    }
}

/// Letters, digits, `.`, `_`, `-`; anything else becomes `_`.
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn build(
    index: usize,
    spec: &StepSpec,
    bindings: Vec<(String, String)>,
    target: &Target,
    out: &Path,
) -> PlannedStep {
    let mut stem = format!("{:02}-{}", spec.number, spec.command.words().join("-"));
    for (n, v) in &bindings {
        stem.push_str(&format!("-{}-{}", sanitize(n), sanitize(v)));
    }
    let key = format!("{}/{stem}", target.name);
    let base = match &target.storage {
        Storage::None => None,
        Storage::Dir(d) => Some(d.display().to_string()),
        Storage::Zram(_) | Storage::Zfs(_) => Some(mount_placeholder(&target.name)),
    };
    let join = |b: &str, leaf: &str| format!("{}/{leaf}", b.trim_end_matches('/'));
    // The options, as written, with the bindings substituted.
    let args: Vec<(String, ArgValue)> = spec
        .args
        .iter()
        .map(|(k, v)| {
            let v = match v {
                ArgValue::Bool(b) => ArgValue::Bool(*b),
                ArgValue::One(s) => ArgValue::One(substitute(s, &bindings)),
                ArgValue::Many(m) => {
                    ArgValue::Many(m.iter().map(|s| substitute(s, &bindings)).collect())
                }
            };
            (k.clone(), v)
        })
        .collect();
    let mut argv: Vec<String> = spec.command.words().iter().map(|w| w.to_string()).collect();
    if spec.command.is_db() {
        match (&target.url, &base) {
            (Some(u), _) => argv.extend(["--url".to_string(), u.clone()]),
            (None, Some(b)) => argv.extend(["--pgdata".to_string(), join(b, PGDATA_DIR)]),
            (None, None) => unreachable!("checked by check_target"),
        }
    }
    for (k, v) in &args {
        let opt = format!("--{k}");
        let mut one = |val: &str| {
            if val.starts_with('-') {
                argv.push(format!("{opt}={val}"));
            } else {
                argv.push(opt.clone());
                argv.push(val.to_string());
            }
        };
        match v {
            ArgValue::Bool(true) => argv.push(opt.clone()),
            ArgValue::Bool(false) => argv.push(format!("{opt}=false")),
            ArgValue::One(s) => one(s),
            ArgValue::Many(m) => m.iter().for_each(|s| one(s)),
        }
    }
    let result_path = spec
        .command
        .writes_result()
        .then(|| out.join(&target.name).join(format!("{stem}.json")));
    if let Some(p) = &result_path {
        argv.extend([
            "--output-format".to_string(),
            "json".to_string(),
            "--output".to_string(),
            p.display().to_string(),
        ]);
    }
    match spec.command {
        CommandKind::Block => argv.push(match (&target.block, &base) {
            (Some(b), _) => b.display().to_string(),
            (None, Some(b)) => join(b, BLOCK_FILE),
            (None, None) => unreachable!("checked by check_target"),
        }),
        CommandKind::Estimate => argv.push(join(base.as_deref().expect("checked"), PGDATA_DIR)),
        _ => {}
    }
    let estimated = estimate(spec.command, &args);
    PlannedStep {
        index,
        key,
        target: target.name.clone(),
        step: spec.number,
        kind: spec.command,
        bindings,
        command: argv,
        result_path,
        estimated,
        on: spec.on.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Plan {
        Campaign::parse(text)
            .unwrap()
            .plan(Path::new("/out"))
            .unwrap()
    }

    #[test]
    fn loops_nest_by_the_deepest_variable_and_close_after_it() {
        let p = plan(
            r#"
name = "n"
[targets.a]
dir = "/d"
[grid]
ff = [100, 70]
wl = ["ro", "rw"]
[[steps]]
command = "db prepare"
[[steps]]
command = "db alter"
args = { fillfactor = "{ff}" }
[[steps]]
command = "db run"
args = { workload = "{wl}" }
[[steps]]
command = "db cleanup"
"#,
        );
        let keys: Vec<&str> = p.steps.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "a/01-db-prepare",
                "a/02-db-alter-ff-100",
                "a/03-db-run-ff-100-wl-ro",
                "a/03-db-run-ff-100-wl-rw",
                "a/02-db-alter-ff-70",
                "a/03-db-run-ff-70-wl-ro",
                "a/03-db-run-ff-70-wl-rw",
                "a/04-db-cleanup",
            ]
        );
        let run = &p.steps[2];
        assert_eq!(
            run.command,
            [
                "db",
                "run",
                "--pgdata",
                "/d/pgdata",
                "--workload",
                "ro",
                "--output-format",
                "json",
                "--output",
                "/out/a/03-db-run-ff-100-wl-ro.json"
            ]
        );
        assert_eq!(
            run.result_path.as_deref(),
            Some(Path::new("/out/a/03-db-run-ff-100-wl-ro.json"))
        );
        assert_eq!(p.steps[0].result_path, None);
    }

    #[test]
    fn targets_urls_block_files_zram_placeholders_and_local_grids() {
        let p = plan(
            r#"
name = "n"
[targets.pg]
url = "postgres://u:secret@h/db"
block = "/dev/nvme9n1"
[targets.z]
zram = {}
[[steps]]
command = "block"
args = { rw = "{rw}", size = "64m", runtime = "5s", time-based = true, direct = false, percentile-list = [50, 99] }
grid = { rw = ["randwrite", "randread"] }
[[steps]]
command = "db run"
targets = ["pg"]
args = { threads = "1,2" }
"#,
        );
        assert_eq!(p.steps.len(), 5);
        assert_eq!(p.steps[0].key, "pg/01-block-rw-randwrite");
        assert_eq!(
            &p.steps[0].command[..],
            [
                "block",
                "--rw",
                "randwrite",
                "--size",
                "64m",
                "--runtime",
                "5s",
                "--time-based",
                "--direct=false",
                "--percentile-list",
                "50",
                "--percentile-list",
                "99",
                "--output-format",
                "json",
                "--output",
                "/out/pg/01-block-rw-randwrite.json",
                "/dev/nvme9n1"
            ]
        );
        let db = &p.steps[2];
        assert_eq!(db.command[2..4], ["--url", "postgres://u:secret@h/db"]);
        assert!(
            !db.command_line().contains("secret"),
            "{}",
            db.command_line()
        );
        let z = &p.steps[3];
        assert_eq!(z.command.last().unwrap(), "<mount:z>/csdchar-block.dat");
        let bound = z.bind_mount(Path::new("/var/tmp/m.1"));
        assert_eq!(
            bound.command.last().unwrap(),
            "/var/tmp/m.1/csdchar-block.dat"
        );
        assert_eq!(p.steps.iter().filter(|s| s.target == "z").count(), 2);
    }

    #[test]
    fn steps_that_cannot_run_on_a_target_are_refused() {
        let c = Campaign::parse(
            "name = \"n\"\n[targets.pg]\nurl = \"host=x\"\n[targets.d]\ndir = \"/d\"\n[[steps]]\ncommand = \"block\"\nargs = { size = \"1g\" }\n",
        )
        .unwrap();
        let e = c.plan(Path::new("/out")).unwrap_err().to_string();
        assert!(
            e.contains("steps[1] (block): cannot run on target pg")
                && e.contains("targets = [...]"),
            "{e}"
        );
        let c = Campaign::parse(
            "name = \"n\"\n[targets.d]\ndir = \"/d\"\n[[steps]]\ncommand = \"block\"\n",
        )
        .unwrap();
        let e = c.plan(Path::new("/out")).unwrap_err().to_string();
        assert!(e.contains("(block).args.size: needed on target d"), "{e}");
    }

    #[test]
    fn durations_format() {
        assert_eq!(format_duration(Duration::from_secs(42)), "42s");
        assert_eq!(format_duration(Duration::from_secs(185)), "3m05s");
        assert_eq!(format_duration(Duration::from_secs(3720)), "1h02m");
    }
}
