//! The campaign file: parsed and checked into a [`Campaign`] before anything
//! is planned or run. Every error is one line naming the key and what it
//! allows.
//!
//! ```toml
//! name = "percona-sysbench"
//! [targets.disk]
//! dir = "/var/tmp/csdchar-campaign/percona"   # db steps: --pgdata DIR/pgdata; block steps: DIR/csdchar-block.dat
//! [targets.zram]
//! zram = { size = "6G" }                       # made for the campaign (root), removed after
//! [targets.zfs-gzip]
//! zfs = { size = "2G", compression = "gzip", recordsize = "8k" }   # a file-backed pool, likewise
//! [grid]                                       # the loop nest, outermost first
//! fillfactor = [100, 70]
//! workload = ["oltp_read_only", "oltp_read_write"]
//! [[steps]]
//! command = "db prepare"
//! args = { tables = 4, table-size = 100000, force = true }
//! [[steps]]
//! command = "db alter"
//! args = { tables = 4, fillfactor = "{fillfactor}" }
//! [[steps]]
//! command = "db run"
//! args = { workload = "{workload}", tables = 4, threads = "1,2,4", time = "20s" }
//! ```
//!
//! Over 1,000 lines: the campaign file's whole grammar — targets, storage, hosts, steps and
//! their matrices — is read and checked here in one pass, so every error can name its key
//! path (`steps[2].args.threads`); split by table, each part would need the others' names.

use std::path::{Path, PathBuf};

use csdchar_core::units::parse_size;
use csdchar_devices::zram::ZramFilesystem;
use sha2::{Digest, Sha256};
use toml::{Table, Value};

use crate::CampaignError;

/// The commands a step can run: csdchar's own subcommands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandKind {
    /// `csdchar block` on the target's file or device.
    Block,
    /// `csdchar db prepare`.
    DbPrepare,
    /// `csdchar db run`.
    DbRun,
    /// `csdchar db alter`.
    DbAlter,
    /// `csdchar db study`.
    DbStudy,
    /// `csdchar db cleanup`.
    DbCleanup,
    /// `csdchar db check`.
    DbCheck,
    /// `csdchar estimate` of the target's data directory.
    Estimate,
}

impl CommandKind {
    /// Every command, as written in a campaign file.
    pub const ALL: &'static [CommandKind] = &[
        CommandKind::Block,
        CommandKind::DbPrepare,
        CommandKind::DbRun,
        CommandKind::DbAlter,
        CommandKind::DbStudy,
        CommandKind::DbCleanup,
        CommandKind::DbCheck,
        CommandKind::Estimate,
    ];

    /// The command's words after `csdchar` (`["db", "run"]`).
    pub fn words(self) -> &'static [&'static str] {
        match self {
            CommandKind::Block => &["block"],
            CommandKind::DbPrepare => &["db", "prepare"],
            CommandKind::DbRun => &["db", "run"],
            CommandKind::DbAlter => &["db", "alter"],
            CommandKind::DbStudy => &["db", "study"],
            CommandKind::DbCleanup => &["db", "cleanup"],
            CommandKind::DbCheck => &["db", "check"],
            CommandKind::Estimate => &["estimate"],
        }
    }

    /// As written in a campaign file (`db run`).
    pub fn name(self) -> String {
        self.words().join(" ")
    }

    /// Parses `db run` (spaces collapsed).
    pub fn parse(text: &str) -> Option<CommandKind> {
        let words: Vec<&str> = text.split_whitespace().collect();
        CommandKind::ALL
            .iter()
            .copied()
            .find(|c| c.words() == words.as_slice())
    }

    /// Whether it talks to a database (gets `--pgdata` or `--url`).
    pub fn is_db(self) -> bool {
        self.words()[0] == "db"
    }

    /// Whether it writes a JSON result (`--output-format json --output FILE`).
    pub fn writes_result(self) -> bool {
        matches!(
            self,
            CommandKind::Block | CommandKind::DbRun | CommandKind::DbStudy | CommandKind::Estimate
        )
    }

    /// Whether it leaves database state later steps rely on (replayed on
    /// fresh storage when a campaign resumes; its failure holds back the
    /// target's db steps until the next prepare or study).
    pub fn sets_state(self) -> bool {
        matches!(
            self,
            CommandKind::DbPrepare | CommandKind::DbAlter | CommandKind::DbCleanup
        )
    }
}

/// A zram device the campaign makes for a target (root only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZramSpec {
    /// Disk size, bytes.
    pub size: u64,
    /// Compression algorithm (default lz4).
    pub algorithm: String,
    /// File system (default ext4), mounted with `-o discard`.
    pub filesystem: ZramFilesystem,
}

/// A ZFS pool the campaign makes for a target on a sparse file (root, the
/// zfs tools), with the dataset properties to compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZfsSpec {
    /// Size of the pool's file, bytes.
    pub size: u64,
    /// Dataset properties set on the pool's root dataset, in file order.
    pub properties: Vec<(String, String)>,
}

/// The dataset properties a zfs target may set: the seed's variants and
/// their neighbours.
pub const ZFS_PROPERTIES: &[&str] = &[
    "compression",
    "recordsize",
    "primarycache",
    "secondarycache",
    "atime",
    "logbias",
    "sync",
    "copies",
    "dedup",
    "checksum",
];

/// Default size of a zfs target's pool.
pub const DEFAULT_ZFS_SIZE: &str = "2G";

/// Where a target's files live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// None: the target has only a URL and/or a block device.
    None,
    /// A directory on the device under test (created when missing).
    Dir(PathBuf),
    /// A zram device with a file system, made for the campaign.
    Zram(ZramSpec),
    /// A file-backed ZFS pool, made for the campaign.
    Zfs(ZfsSpec),
}

impl Storage {
    /// Whether the campaign makes it (and removes it after).
    pub fn is_made(&self) -> bool {
        matches!(self, Storage::Zram(_) | Storage::Zfs(_))
    }
}

/// A named device under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Name (a report label and a directory of results).
    pub name: String,
    /// Its directory: db steps get `--pgdata <dir>/pgdata`, block steps
    /// `<dir>/csdchar-block.dat`, estimate steps `<dir>/pgdata`.
    pub storage: Storage,
    /// A server whose data is on the device: db steps get `--url` instead of `--pgdata`.
    pub url: Option<String>,
    /// A block device or file block steps use instead of `<dir>/csdchar-block.dat`.
    pub block: Option<PathBuf>,
    /// Whether `--target` replaced what the file says.
    pub overridden: bool,
}

impl Target {
    /// One line for plans and the manifest; the URL is shown as a hash.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        match &self.storage {
            Storage::None => {}
            Storage::Dir(d) => parts.push(format!("dir {}", d.display())),
            Storage::Zram(z) => parts.push(format!(
                "zram {} {} {}",
                human_size(z.size),
                z.algorithm,
                z.filesystem.name()
            )),
            Storage::Zfs(z) => {
                let mut s = format!("zfs {}", human_size(z.size));
                for (k, v) in &z.properties {
                    s.push_str(&format!(" {k}={v}"));
                }
                parts.push(s)
            }
        }
        if let Some(u) = &self.url {
            parts.push(format!("url sha256:{}", &sha256_hex(u.as_bytes())[..12]));
        }
        if let Some(b) = &self.block {
            parts.push(format!("block {}", b.display()));
        }
        parts.join(", ")
    }
}

/// A grid variable: a name and its values, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GridVar {
    /// Name, referenced as `{name}` in step arguments.
    pub name: String,
    /// Values as they are substituted.
    pub values: Vec<String>,
}

/// An argument value: text that may reference grid variables as `{name}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgValue {
    /// `true` adds `--key`; `false` passes `--key=false` (for options that take a boolean).
    Bool(bool),
    /// `--key VALUE`.
    One(String),
    /// An array: `--key V1 --key V2` (repeatable and comma-list options take both).
    Many(Vec<String>),
}

/// A step of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepSpec {
    /// Position in the file, from 1.
    pub number: usize,
    /// What it runs.
    pub command: CommandKind,
    /// Options (names without `--`, `_` read as `-`), in file order.
    pub args: Vec<(String, ArgValue)>,
    /// The targets it runs on (all when the file does not say).
    pub targets: Vec<String>,
    /// Variables that expand this step only, innermost.
    pub grid: Vec<GridVar>,
    /// `[grid]` variables whose loops the step runs inside although its args
    /// do not use them (`within = ["fillfactor"]`: an estimate after each
    /// prepare).
    pub within: Vec<String>,
    /// Where it runs (`on`): here, or on load hosts.
    pub on: crate::hosts::StepHosts,
}

impl StepSpec {
    /// The grid variables its arguments reference, then those of `within`,
    /// in first-use order.
    pub fn referenced(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (_, v) in &self.args {
            let texts: Vec<&String> = match v {
                ArgValue::Bool(_) => vec![],
                ArgValue::One(s) => vec![s],
                ArgValue::Many(m) => m.iter().collect(),
            };
            for t in texts {
                for name in template_names(t).unwrap_or_default() {
                    if !out.contains(&name) {
                        out.push(name);
                    }
                }
            }
        }
        for w in &self.within {
            if !out.contains(w) {
                out.push(w.clone());
            }
        }
        out
    }
}

/// A checked campaign file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Campaign {
    /// `name`: names the zram mount directories and the manifest.
    pub name: String,
    /// `description`, if any.
    pub description: Option<String>,
    /// The file it was read from.
    pub source: PathBuf,
    /// SHA-256 of the file's bytes, hex.
    pub sha256: String,
    /// Targets in file order (the first is the report's baseline).
    pub targets: Vec<Target>,
    /// The loop nest, outermost first.
    pub grid: Vec<GridVar>,
    /// Steps in file order.
    pub steps: Vec<StepSpec>,
    /// `[hosts]` as hosts-file lines (`DESTINATION name=NAME …`), in file order; empty
    /// without it (`csdchar campaign --hosts FILE` gives them instead).
    pub hosts: Vec<String>,
}

/// Options the campaign sets itself from the target and the output directory.
pub const RESERVED_ARGS: &[&str] = &[
    "pgdata",
    "url",
    "output",
    "output-format",
    "paths",
    "target",
];

/// Default zram disk size.
pub const DEFAULT_ZRAM_SIZE: &str = "8G";

impl Campaign {
    /// Reads and checks a campaign file.
    pub fn load(path: &Path) -> Result<Campaign, CampaignError> {
        let bytes = std::fs::read(path)
            .map_err(|e| CampaignError::Usage(format!("{}: {e}", path.display())))?;
        let text = String::from_utf8(bytes.clone())
            .map_err(|_| CampaignError::File(format!("{}: not UTF-8 text", path.display())))?;
        let mut c = Campaign::parse(&text).map_err(|e| match e {
            CampaignError::File(m) => CampaignError::File(format!("{}: {m}", path.display())),
            other => other,
        })?;
        c.source = path.to_path_buf();
        c.sha256 = sha256_hex(&bytes);
        Ok(c)
    }

    /// Parses and checks campaign text (`source` is empty, `sha256` that of the text).
    pub fn parse(text: &str) -> Result<Campaign, CampaignError> {
        let table: Table = text.parse::<Table>().map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
            let msg = e.message().trim().replace('\n', " ");
            CampaignError::File(match line {
                Some(l) => format!("line {l}: {msg}"),
                None => msg,
            })
        })?;
        let bad = |m: String| Err(CampaignError::File(m));
        for key in table.keys() {
            if !["name", "description", "targets", "grid", "steps", "hosts"].contains(&key.as_str())
            {
                return bad(format!(
                    "{key}: unknown key (allowed: name, description, targets, grid, steps, hosts)"
                ));
            }
        }
        let name = match table.get("name") {
            Some(Value::String(s)) if valid_name(s) => s.clone(),
            Some(_) => {
                return bad(
                    "name: must be a string of letters, digits, '-', '_' or '.' (it names directories)"
                        .into(),
                );
            }
            None => return bad("name: missing (e.g. name = \"percona-sysbench\")".into()),
        };
        let description = match table.get("description") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return bad("description: must be a string".into()),
        };
        let targets = parse_targets(table.get("targets"))?;
        let hosts = match table.get("hosts") {
            None => Vec::new(),
            Some(Value::Table(t)) => crate::hosts::parse_hosts_table(t)?,
            Some(_) => {
                return bad("hosts: must be a table (e.g. [hosts] load1 = \"bench@load1\")".into());
            }
        };
        let grid = match table.get("grid") {
            None => Vec::new(),
            Some(Value::Table(t)) => parse_grid("grid", t)?,
            Some(_) => {
                return bad(
                    "grid: must be a table of variables (e.g. [grid] threads = [1, 8])".into(),
                );
            }
        };
        let steps = match table.get("steps") {
            Some(Value::Array(a)) if !a.is_empty() => a
                .iter()
                .enumerate()
                .map(|(i, v)| parse_step(i + 1, v, &targets, &grid))
                .collect::<Result<Vec<_>, _>>()?,
            Some(Value::Array(_)) | None => {
                return bad(
                    "steps: at least one [[steps]] with command = \"db run\" (or block, db prepare, …) is needed"
                        .into(),
                );
            }
            Some(_) => return bad("steps: must be [[steps]] tables".into()),
        };
        for g in &grid {
            if !steps.iter().any(|s| s.referenced().contains(&g.name)) {
                return bad(format!(
                    "grid.{}: no step uses {{{}}}; reference it in a step's args or remove it",
                    g.name, g.name
                ));
            }
        }
        Ok(Campaign {
            name,
            description,
            source: PathBuf::new(),
            sha256: sha256_hex(text.as_bytes()),
            targets,
            grid,
            steps,
            hosts,
        })
    }

    /// `--target NAME=VALUE`: replaces where target NAME is. VALUE is a URL
    /// (`postgres://…`, `postgresql://…`, or libpq `key=value` words): db
    /// steps get `--url` (block steps keep the target's storage); an existing
    /// block device: block steps use it (db steps then need a URL); any other
    /// path: a directory replacing the target's `dir` or `zram`.
    pub fn override_target(&mut self, name: &str, value: &str) -> Result<(), CampaignError> {
        let names: Vec<&str> = self.targets.iter().map(|t| t.name.as_str()).collect();
        let names = names.join(", ");
        let Some(t) = self.targets.iter_mut().find(|t| t.name == name) else {
            return Err(CampaignError::Usage(format!(
                "--target {name}=…: no target {name} in the campaign (targets: {names})"
            )));
        };
        if value.is_empty() {
            return Err(CampaignError::Usage(format!(
                "--target {name}=…: give a directory, a block device or a URL"
            )));
        }
        t.overridden = true;
        if looks_like_url(value) {
            t.url = Some(value.to_string());
            return Ok(());
        }
        let p = PathBuf::from(value);
        let is_block = std::fs::metadata(&p).is_ok_and(|m| {
            use std::os::unix::fs::FileTypeExt;
            m.file_type().is_block_device()
        });
        if is_block {
            t.block = Some(p);
            t.storage = Storage::None;
        } else {
            if p.exists() && !p.is_dir() {
                return Err(CampaignError::Usage(format!(
                    "--target {name}={value}: not a directory, block device or URL"
                )));
            }
            // A zfs target compares ZFS settings: another file system
            // would answer a different question under its name.
            if matches!(t.storage, Storage::Zfs(_))
                && csdchar_devices::zfs::dataset_of(&p).is_none()
            {
                return Err(CampaignError::Usage(format!(
                    "--target {name}={value}: {name} is a zfs target and {value} is not on ZFS \
                     (give a directory on a ZFS dataset, or rename the target)"
                )));
            }
            t.storage = Storage::Dir(p);
            t.block = None;
        }
        t.url = None;
        Ok(())
    }

    /// Parses `NAME=VALUE` and applies it (see [`Campaign::override_target`]).
    pub fn override_from_arg(&mut self, arg: &str) -> Result<(), CampaignError> {
        match arg.split_once('=') {
            Some((n, v)) if !n.trim().is_empty() => self.override_target(n.trim(), v),
            _ => Err(CampaignError::Usage(format!(
                "--target: expected NAME=PATH or NAME=URL, got '{arg}'"
            ))),
        }
    }

    /// The target called `name`.
    pub fn target(&self, name: &str) -> Option<&Target> {
        self.targets.iter().find(|t| t.name == name)
    }
}

fn looks_like_url(v: &str) -> bool {
    v.starts_with("postgres://")
        || v.starts_with("postgresql://")
        || (!v.starts_with('/') && !v.starts_with('.') && v.contains('='))
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn parse_targets(v: Option<&Value>) -> Result<Vec<Target>, CampaignError> {
    let bad = |m: String| Err(CampaignError::File(m));
    let t = match v {
        Some(Value::Table(t)) if !t.is_empty() => t,
        _ => {
            return bad(
                "targets: at least one [targets.NAME] with dir, zram, zfs, url or block is needed"
                    .into(),
            );
        }
    };
    let mut out = Vec::new();
    for (name, spec) in t {
        let key = format!("targets.{name}");
        if !valid_name(name) || name == "manifest.json" {
            return bad(format!(
                "{key}: target names are letters, digits, '-', '_' or '.' (they name result directories)"
            ));
        }
        let Value::Table(spec) = spec else {
            return bad(format!(
                "{key}: must be a table (dir = \"/path\", zram = {{ size = \"6G\" }}, url = \"…\" or block = \"/dev/…\")"
            ));
        };
        let mut storage = Storage::None;
        let mut url = None;
        let mut block = None;
        for (k, v) in spec {
            match (k.as_str(), v) {
                ("dir" | "zram" | "zfs", _) if !matches!(storage, Storage::None) => {
                    return bad(format!("{key}: give one of dir, zram or zfs"));
                }
                ("dir", Value::String(s)) if !s.is_empty() => {
                    storage = Storage::Dir(PathBuf::from(s));
                }
                ("zram", Value::Table(z)) => {
                    storage = Storage::Zram(parse_zram(&key, z)?);
                }
                ("zram", Value::Boolean(true)) => {
                    storage = Storage::Zram(parse_zram(&key, &Table::new())?);
                }
                ("zfs", Value::Table(z)) => {
                    storage = Storage::Zfs(parse_zfs(&key, z)?);
                }
                ("zfs", Value::Boolean(true)) => {
                    storage = Storage::Zfs(parse_zfs(&key, &Table::new())?);
                }
                ("zfs", _) => {
                    return bad(format!(
                        "{key}.zfs: must be a table (size and dataset properties: {}) or true",
                        ZFS_PROPERTIES.join(", ")
                    ));
                }
                ("url", Value::String(s)) if !s.is_empty() => url = Some(s.clone()),
                ("block", Value::String(s)) if s.starts_with('/') => block = Some(PathBuf::from(s)),
                ("dir" | "url", _) => return bad(format!("{key}.{k}: must be a non-empty string")),
                ("block", _) => {
                    return bad(format!(
                        "{key}.block: must be an absolute path (a block device or file)"
                    ));
                }
                ("zram", _) => {
                    return bad(format!(
                        "{key}.zram: must be a table (size, algorithm, filesystem) or true"
                    ));
                }
                _ => {
                    return bad(format!(
                        "{key}.{k}: unknown key (allowed: dir, zram, zfs, url, block)"
                    ));
                }
            }
        }
        if matches!(storage, Storage::None) && url.is_none() && block.is_none() {
            return bad(format!(
                "{key}: give dir = \"/path\", zram = {{ size = \"6G\" }}, url = \"…\" or block = \"/dev/…\""
            ));
        }
        out.push(Target {
            name: name.clone(),
            storage,
            url,
            block,
            overridden: false,
        });
    }
    Ok(out)
}

fn parse_zram(key: &str, z: &Table) -> Result<ZramSpec, CampaignError> {
    let bad = |m: String| Err(CampaignError::File(m));
    let mut spec = ZramSpec {
        size: parse_size(DEFAULT_ZRAM_SIZE).expect("default size parses"),
        algorithm: "lz4".into(),
        filesystem: ZramFilesystem::Ext4,
    };
    for (k, v) in z {
        match (k.as_str(), v) {
            ("size", Value::String(s)) => match parse_size(s) {
                Ok(n) if n >= 64 << 20 => spec.size = n,
                _ => {
                    return bad(format!(
                        "{key}.zram.size: '{s}' is not a size of at least 64m (e.g. \"6G\")"
                    ));
                }
            },
            ("algorithm", Value::String(s))
                if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') =>
            {
                spec.algorithm = s.clone()
            }
            ("filesystem", Value::String(s)) => match ZramFilesystem::parse(s) {
                Some(f) => spec.filesystem = f,
                None => {
                    return bad(format!(
                        "{key}.zram.filesystem: '{s}' is not one of {}",
                        ZramFilesystem::NAMES.join(", ")
                    ));
                }
            },
            ("size" | "algorithm" | "filesystem", _) => {
                return bad(format!(
                    "{key}.zram.{k}: must be a string (e.g. size = \"6G\", algorithm = \"lz4\", filesystem = \"ext4\")"
                ));
            }
            _ => {
                return bad(format!(
                    "{key}.zram.{k}: unknown key (allowed: size, algorithm, filesystem)"
                ));
            }
        }
    }
    Ok(spec)
}

fn parse_zfs(key: &str, z: &Table) -> Result<ZfsSpec, CampaignError> {
    let bad = |m: String| Err(CampaignError::File(m));
    let mut spec = ZfsSpec {
        size: parse_size(DEFAULT_ZFS_SIZE).expect("default size parses"),
        properties: Vec::new(),
    };
    for (k, v) in z {
        match (k.as_str(), scalar(v)) {
            ("size", Some(s)) => match parse_size(&s) {
                Ok(n) if n >= 64 << 20 => spec.size = n,
                _ => {
                    return bad(format!(
                        "{key}.zfs.size: '{s}' is not a size of at least 64m (e.g. \"2G\")"
                    ));
                }
            },
            (p, Some(s)) if ZFS_PROPERTIES.contains(&p) => {
                // What zfs accepts as values: names, sizes, numbers.
                if s.is_empty()
                    || !s
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ','))
                {
                    return bad(format!(
                        "{key}.zfs.{p}: '{s}' is not a property value (letters, digits, '-', '_', '.', ',')"
                    ));
                }
                // What `zfs` would refuse after the pool is made: refused now,
                // in the dry run too, against the ZFS that would make it here.
                let flavour = csdchar_devices::zfs::Flavour::here();
                if let Err(e) = csdchar_devices::zfs::check_property(flavour, p, &s) {
                    return bad(format!("{key}.zfs.{p}: {e}"));
                }
                spec.properties.push((p.to_string(), s));
            }
            (_, None) => {
                return bad(format!(
                    "{key}.zfs.{k}: must be a string or number (e.g. compression = \"gzip\")"
                ));
            }
            _ => {
                return bad(format!(
                    "{key}.zfs.{k}: unknown key (allowed: size, {})",
                    ZFS_PROPERTIES.join(", ")
                ));
            }
        }
    }
    Ok(spec)
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Integer(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn parse_grid(key: &str, t: &Table) -> Result<Vec<GridVar>, CampaignError> {
    let bad = |m: String| Err(CampaignError::File(m));
    let mut out = Vec::new();
    for (name, v) in t {
        let k = format!("{key}.{name}");
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return bad(format!(
                "{k}: variable names are letters, digits, '_' or '-'"
            ));
        }
        let Value::Array(a) = v else {
            return bad(format!(
                "{k}: must be a list of values (e.g. {name} = [100, 70])"
            ));
        };
        if a.is_empty() {
            return bad(format!("{k}: empty; give at least one value"));
        }
        let mut values = Vec::new();
        for x in a {
            let Some(s) = scalar(x) else {
                return bad(format!(
                    "{k}: values must be strings or numbers (a list of thread counts is one string: \"1,8,16\")"
                ));
            };
            if values.contains(&s) {
                return bad(format!("{k}: value {s} is listed twice"));
            }
            values.push(s);
        }
        out.push(GridVar {
            name: name.clone(),
            values,
        });
    }
    Ok(out)
}

fn parse_step(
    number: usize,
    v: &Value,
    targets: &[Target],
    grid: &[GridVar],
) -> Result<StepSpec, CampaignError> {
    let key = format!("steps[{number}]");
    let bad = |m: String| Err(CampaignError::File(m));
    let Value::Table(t) = v else {
        return bad(format!("{key}: must be a table"));
    };
    let allowed = CommandKind::ALL
        .iter()
        .map(|c| c.name())
        .collect::<Vec<_>>()
        .join(", ");
    let command = match t.get("command") {
        Some(Value::String(s)) => match CommandKind::parse(s) {
            Some(c) => c,
            None => {
                return bad(format!(
                    "{key}.command: unknown command '{s}' (allowed: {allowed})"
                ));
            }
        },
        Some(_) => return bad(format!("{key}.command: must be a string ({allowed})")),
        None => return bad(format!("{key}.command: missing ({allowed})")),
    };
    let key = format!("{key} ({})", command.name());
    let mut args = Vec::new();
    let mut step_targets: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
    let mut local = Vec::new();
    let mut within = Vec::new();
    let mut on = crate::hosts::StepHosts::Default;
    for (k, v) in t {
        match (k.as_str(), v) {
            ("command", _) => {}
            ("on", v) => on = crate::hosts::StepHosts::parse(&key, v)?,
            ("args", Value::Table(a)) => {
                for (name, v) in a {
                    let opt = name.trim_start_matches('-').replace('_', "-");
                    let ak = format!("{key}.args.{name}");
                    if RESERVED_ARGS.contains(&opt.as_str()) {
                        return bad(format!(
                            "{ak}: set by the campaign from the target and --out; remove it (override targets with --target NAME=PATH)"
                        ));
                    }
                    if opt.is_empty() || !opt.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                    {
                        return bad(format!("{ak}: not an option name"));
                    }
                    if args.iter().any(|(o, _)| *o == opt) {
                        return bad(format!("{ak}: given twice"));
                    }
                    let value = match v {
                        Value::Boolean(b) => ArgValue::Bool(*b),
                        Value::Array(items) => {
                            let mut out = Vec::new();
                            for x in items {
                                match scalar(x) {
                                    Some(s) => out.push(s),
                                    None => {
                                        return bad(format!(
                                            "{ak}: list items must be strings or numbers"
                                        ));
                                    }
                                }
                            }
                            if out.is_empty() {
                                return bad(format!("{ak}: empty list"));
                            }
                            ArgValue::Many(out)
                        }
                        other => match scalar(other) {
                            Some(s) => ArgValue::One(s),
                            None => {
                                return bad(format!(
                                    "{ak}: must be a string, number, boolean or list"
                                ));
                            }
                        },
                    };
                    args.push((opt, value));
                }
            }
            ("args", _) => {
                return bad(format!(
                    "{key}.args: must be a table of options (e.g. args = {{ threads = 8, time = \"20s\" }})"
                ));
            }
            ("targets", Value::Array(a)) => {
                let names: Vec<String> = targets.iter().map(|t| t.name.clone()).collect();
                let mut chosen = Vec::new();
                for x in a {
                    match x {
                        Value::String(s) if names.contains(s) => {
                            if !chosen.contains(s) {
                                chosen.push(s.clone())
                            }
                        }
                        Value::String(s) => {
                            return bad(format!(
                                "{key}.targets: no target '{s}' (targets: {})",
                                names.join(", ")
                            ));
                        }
                        _ => return bad(format!("{key}.targets: must be a list of target names")),
                    }
                }
                if chosen.is_empty() {
                    return bad(format!(
                        "{key}.targets: empty; omit it to run on every target"
                    ));
                }
                // File order of targets, whatever order the step lists them in.
                step_targets.retain(|n| chosen.contains(n));
            }
            ("targets", _) => return bad(format!("{key}.targets: must be a list of target names")),
            ("grid", Value::Table(g)) => {
                local = parse_grid(&format!("{key}.grid"), g)?;
                for l in &local {
                    if grid.iter().any(|g| g.name == l.name) {
                        return bad(format!(
                            "{key}.grid.{}: also in [grid]; a variable lives in one of them",
                            l.name
                        ));
                    }
                }
            }
            ("grid", _) => return bad(format!("{key}.grid: must be a table of variables")),
            ("within", Value::Array(a)) => {
                for x in a {
                    match x {
                        Value::String(n) if grid.iter().any(|g| g.name == *n) => {
                            within.push(n.clone())
                        }
                        _ => {
                            return bad(format!(
                                "{key}.within: must list [grid] variables ({})",
                                grid.iter()
                                    .map(|g| g.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ));
                        }
                    }
                }
            }
            ("within", _) => {
                return bad(format!("{key}.within: must be a list of [grid] variables"));
            }
            _ => {
                return bad(format!(
                    "{key}.{k}: unknown key (allowed: command, args, targets, grid, within, on)"
                ));
            }
        }
    }
    let step = StepSpec {
        number,
        command,
        args,
        targets: step_targets,
        grid: local,
        within,
        on,
    };
    // Every {name} must be a variable of [grid] or of this step's grid.
    let known: Vec<&str> = grid
        .iter()
        .chain(&step.grid)
        .map(|g| g.name.as_str())
        .collect();
    for (opt, v) in &step.args {
        let texts: Vec<&String> = match v {
            ArgValue::Bool(_) => vec![],
            ArgValue::One(s) => vec![s],
            ArgValue::Many(m) => m.iter().collect(),
        };
        for t in texts {
            let names = template_names(t)
                .map_err(|e| CampaignError::File(format!("{key}.args.{opt}: {e}")))?;
            for n in names {
                if !known.contains(&n.as_str()) {
                    let list = if known.is_empty() {
                        "there is no [grid]".to_string()
                    } else {
                        format!("grid variables: {}", known.join(", "))
                    };
                    return bad(format!(
                        "{key}.args.{opt}: {{{n}}} is not a grid variable ({list})"
                    ));
                }
            }
        }
    }
    for l in &step.grid {
        if !step.referenced().contains(&l.name) {
            return bad(format!(
                "{key}.grid.{}: the step's args do not use {{{}}}",
                l.name, l.name
            ));
        }
    }
    Ok(step)
}

/// The `{name}` references of a template (`{{` and `}}` are literal braces).
pub fn template_names(t: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
            }
            '{' => {
                let mut name = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(c) => name.push(c),
                        None => {
                            return Err(format!(
                                "'{t}': '{{' without '}}' (write {{{{ for a brace)"
                            ));
                        }
                    }
                }
                out.push(name);
            }
            '}' => return Err(format!("'{t}': '}}' without '{{' (write }}}} for a brace)")),
            _ => {}
        }
    }
    Ok(out)
}

/// Substitutes `{name}` from `binding` (names are checked at parse time).
pub fn substitute(t: &str, binding: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let name: String = chars.by_ref().take_while(|c| *c != '}').collect();
                match binding.iter().find(|(n, _)| *n == name) {
                    Some((_, v)) => out.push_str(v),
                    None => {
                        out.push('{');
                        out.push_str(&name);
                        out.push('}');
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// SHA-256 as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn human_size(n: u64) -> String {
    for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{}{unit}", n >> shift);
        }
    }
    n.to_string()
}

#[cfg(test)]
mod tests;
