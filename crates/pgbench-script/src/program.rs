//! A run's scripts compiled for its query mode (pgbench's `-f`, `-b`, `-D`, `-M`):
//! weights, builtins, `-D` definitions, SQL templates, prepared statement names, and the
//! random state pgbench derives from `--random-seed`.

use crate::Version;
use crate::error::ScriptError;
use crate::prng::PgPrng;
use crate::script::{self, CommandKind, ParsedScript};
use crate::sql::SqlTemplate;
use crate::vars::{Interner, VarId, valid_variable_name};

/// How SQL commands travel (`-M`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryMode {
    /// One Query message with the values written into the text.
    Simple,
    /// Unnamed Parse, Bind, Describe, Execute, Sync each time; values as text parameters.
    Extended,
    /// Named statements `P_n`, each prepared on a connection at its first execution.
    Prepared,
}

impl QueryMode {
    /// pgbench's name of the mode.
    pub fn name(self) -> &'static str {
        match self {
            QueryMode::Simple => "simple",
            QueryMode::Extended => "extended",
            QueryMode::Prepared => "prepared",
        }
    }

    /// The mode of a `-M` argument (exact, lower case, as pgbench).
    pub fn parse(s: &str) -> Option<QueryMode> {
        match s {
            "simple" => Some(QueryMode::Simple),
            "extended" => Some(QueryMode::Extended),
            "prepared" => Some(QueryMode::Prepared),
            _ => None,
        }
    }
}

/// One of pgbench's builtin scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Builtin {
    /// The name `-b` takes (an unambiguous prefix suffices).
    pub name: &'static str,
    /// The description reports show (`<builtin: TPC-B (sort of)>`).
    pub description: &'static str,
    /// The script.
    pub script: &'static str,
}

/// pgbench's three builtins, text for text (`builtin_script[]`).
pub const BUILTINS: [Builtin; 3] = [
    Builtin {
        name: "tpcb-like",
        description: "<builtin: TPC-B (sort of)>",
        script: "\\set aid random(1, 100000 * :scale)\n\
\\set bid random(1, 1 * :scale)\n\
\\set tid random(1, 10 * :scale)\n\
\\set delta random(-5000, 5000)\n\
BEGIN;\n\
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;\n\
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;\n\
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
END;\n",
    },
    Builtin {
        name: "simple-update",
        description: "<builtin: simple update>",
        script: "\\set aid random(1, 100000 * :scale)\n\
\\set bid random(1, 1 * :scale)\n\
\\set tid random(1, 10 * :scale)\n\
\\set delta random(-5000, 5000)\n\
BEGIN;\n\
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
END;\n",
    },
    Builtin {
        name: "select-only",
        description: "<builtin: select only>",
        script: "\\set aid random(1, 100000 * :scale)\n\
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    },
];

/// The builtin `name` names: exact or an unambiguous prefix (`findBuiltin`).
pub fn find_builtin(name: &str) -> Result<&'static Builtin, ScriptError> {
    let found: Vec<&Builtin> = BUILTINS
        .iter()
        .filter(|b| b.name.starts_with(name))
        .collect();
    match found.len() {
        1 => Ok(found[0]),
        0 => Err(ScriptError::NoBuiltin(name.into())),
        n => Err(ScriptError::AmbiguousBuiltin {
            count: n,
            prefix: name.into(),
        }),
    }
}

/// Splits `-f`/`-b`'s `NAME[@WEIGHT]` at the last `@` (`parseScriptWeight`); the
/// weight is 1 when none is given.
pub fn parse_weight(option: &str) -> Result<(&str, u32), ScriptError> {
    let Some(at) = option.rfind('@') else {
        return Ok((option, 1));
    };
    let (name, w) = (&option[..at], &option[at + 1..]);
    let (v, used) = crate::value::strtol(w.as_bytes());
    // strtol: no digits, trailing text or ERANGE are all errors.
    let overflow = used > 0 && (v == i64::MAX || v == i64::MIN) && {
        let digits = w.trim_start().trim_start_matches(['+', '-']);
        digits.parse::<i64>().is_err()
    };
    if used == 0 || used != w.len() || overflow {
        return Err(ScriptError::BadWeight(option[at..].into()));
    }
    if !(0..=i32::MAX as i64).contains(&v) {
        return Err(ScriptError::WeightOutOfRange(v));
    }
    Ok((name, v as u32))
}

/// `--random-seed`'s value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RandomSeed {
    /// `time` (the default): the driver seeds from its clock in microseconds.
    Time,
    /// `rand`: the driver seeds from a strong random source.
    Rand,
    /// A given seed.
    Given(u64),
}

impl RandomSeed {
    /// Reads `--random-seed` as pgbench does (`sscanf("%lu%c")`: spaces and a sign
    /// allowed, `-1` wraps, nothing may follow the digits).
    pub fn parse(s: &str) -> Result<RandomSeed, ScriptError> {
        match s {
            "time" => return Ok(RandomSeed::Time),
            "rand" => return Ok(RandomSeed::Rand),
            _ => {}
        }
        let bad = || ScriptError::BadRandomSeed(s.into());
        let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
        let (neg, digits) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let v = digits.parse::<u64>().unwrap_or(u64::MAX);
        Ok(RandomSeed::Given(if neg { v.wrapping_neg() } else { v }))
    }
}

/// An SQL command compiled for the query mode.
#[derive(Debug, Clone)]
pub(crate) struct CompiledSql {
    pub(crate) template: SqlTemplate,
    /// `P_n` under `-M prepared`.
    pub(crate) prepared_name: Option<String>,
}

/// One script of a [`Program`].
#[derive(Debug, Clone)]
pub struct Script {
    parsed: ParsedScript,
    pub(crate) sql: Vec<Option<CompiledSql>>,
}

impl Script {
    /// Its name (file name or builtin description).
    pub fn name(&self) -> &str {
        &self.parsed.name
    }

    /// Its weight.
    pub fn weight(&self) -> u32 {
        self.parsed.weight
    }

    /// Its commands.
    pub fn commands(&self) -> &[script::Command] {
        &self.parsed.commands
    }

    /// The text an SQL command is sent with under the program's mode (with `$n` under
    /// extended and prepared), None for a meta-command.
    pub fn sql_text(&self, command: usize) -> Option<&[u8]> {
        self.sql[command].as_ref().map(|c| c.template.text())
    }

    /// The name an SQL command is prepared under (`-M prepared`).
    pub fn prepared_name(&self, command: usize) -> Option<&str> {
        self.sql[command].as_ref()?.prepared_name.as_deref()
    }
}

/// The automatic variables' slots.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AutoVars {
    pub(crate) scale: VarId,
    pub(crate) client_id: VarId,
    pub(crate) default_seed: VarId,
    pub(crate) random_seed: VarId,
}

/// A run's scripts, compiled: what every client of the run interprets.
#[derive(Debug, Clone)]
pub struct Program {
    pub(crate) version: Version,
    pub(crate) mode: QueryMode,
    pub(crate) interner: Interner,
    pub(crate) scripts: Vec<Script>,
    total_weight: i64,
    uses_builtin: bool,
    pub(crate) defines: Vec<(VarId, Vec<u8>)>,
    pub(crate) auto: AutoVars,
}

/// The scripts and `-D` definitions of a run, as options are read.
#[derive(Debug, Clone)]
pub struct ScriptSet {
    version: Version,
    interner: Interner,
    scripts: Vec<ParsedScript>,
    uses_builtin: bool,
    defines: Vec<(VarId, Vec<u8>)>,
}

/// The most scripts a run may have (`MAX_SCRIPTS`).
pub const MAX_SCRIPTS: usize = 128;

impl ScriptSet {
    /// No scripts yet, parsed with `version`'s rules.
    pub fn new(version: Version) -> ScriptSet {
        ScriptSet {
            version,
            interner: Interner::default(),
            scripts: Vec::new(),
            uses_builtin: false,
            defines: Vec::new(),
        }
    }

    fn add(&mut self, text: &[u8], name: &str, weight: u32) -> Result<(), ScriptError> {
        let commands = script::parse_commands(text, name, self.version, &mut self.interner)?;
        if commands.is_empty() {
            return Err(ScriptError::Empty(name.into()));
        }
        if self.scripts.len() >= MAX_SCRIPTS {
            return Err(ScriptError::TooManyScripts);
        }
        script::check_conditionals(name, &commands)?;
        self.scripts.push(ParsedScript {
            name: name.into(),
            weight,
            commands,
        });
        Ok(())
    }

    /// Adds a script file's contents (`-f NAME@WEIGHT`; `name` is how reports and
    /// errors name it).
    pub fn add_file(&mut self, text: &[u8], name: &str, weight: u32) -> Result<(), ScriptError> {
        self.add(text, name, weight)
    }

    /// Adds the builtin `name` names (`-b NAME@WEIGHT`, `-S`, `-N`).
    pub fn add_builtin(&mut self, name: &str, weight: u32) -> Result<(), ScriptError> {
        let b = find_builtin(name)?;
        self.uses_builtin = true;
        self.add(b.script.as_bytes(), b.description, weight)
    }

    /// A `-D NAME=VALUE` definition (the value is a string, typed on use; a later
    /// definition of the same name wins).
    pub fn define(&mut self, arg: &str) -> Result<(), ScriptError> {
        let bad = || ScriptError::BadDefinition(arg.into());
        let (name, value) = arg.split_once('=').ok_or_else(bad)?;
        if name.is_empty() || value.is_empty() {
            return Err(bad());
        }
        if !valid_variable_name(name.as_bytes()) {
            return Err(ScriptError::BadVariableName(name.into()));
        }
        let id = self.interner.intern(name.as_bytes());
        self.defines.retain(|(d, _)| *d != id);
        self.defines.push((id, value.as_bytes().to_vec()));
        Ok(())
    }

    /// Compiles the scripts for `mode` (pgbench's `postprocess_sql_command` and weight
    /// check); with no script at all, the default `tpcb-like`.
    pub fn compile(mut self, mode: QueryMode) -> Result<Program, ScriptError> {
        if self.scripts.is_empty() {
            self.add_builtin("tpcb-like", 1)?;
        }
        let mut prepnum = 0;
        let mut scripts = Vec::with_capacity(self.scripts.len());
        let mut total_weight = 0i64;
        for parsed in self.scripts {
            let mut sql = Vec::with_capacity(parsed.commands.len());
            for c in &parsed.commands {
                let CommandKind::Sql { text, .. } = &c.kind else {
                    sql.push(None);
                    continue;
                };
                let compiled = match mode {
                    QueryMode::Simple => CompiledSql {
                        template: SqlTemplate::simple(text, &mut self.interner),
                        prepared_name: None,
                    },
                    _ => {
                        let prepared_name = (mode == QueryMode::Prepared).then(|| {
                            prepnum += 1;
                            format!("P_{}", prepnum - 1)
                        });
                        let template = SqlTemplate::parameterized(text, &mut self.interner)
                            .ok_or_else(|| {
                                ScriptError::TooManyArguments(
                                    String::from_utf8_lossy(text).into_owned(),
                                )
                            })?;
                        CompiledSql {
                            template,
                            prepared_name,
                        }
                    }
                };
                sql.push(Some(compiled));
            }
            total_weight += parsed.weight as i64;
            scripts.push(Script { parsed, sql });
        }
        if total_weight == 0 {
            return Err(ScriptError::ZeroWeight);
        }
        let auto = AutoVars {
            scale: self.interner.intern(b"scale"),
            client_id: self.interner.intern(b"client_id"),
            default_seed: self.interner.intern(b"default_seed"),
            random_seed: self.interner.intern(b"random_seed"),
        };
        Ok(Program {
            version: self.version,
            mode,
            interner: self.interner,
            scripts,
            total_weight,
            uses_builtin: self.uses_builtin,
            defines: self.defines,
            auto,
        })
    }
}

/// Random states for one pgbench thread (`TState`): script choice, `--rate`'s
/// schedule, `--sampling-rate`'s draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadRandom {
    /// `ts_choose_rs`.
    pub choose: PgPrng,
    /// `ts_throttle_rs`.
    pub throttle: PgPrng,
    /// `ts_sample_rs`.
    pub sample: PgPrng,
}

/// The random states pgbench derives from the seed, in its order: one per client, then
/// `:default_seed` (unless `-D` set it), then three per thread.
#[derive(Debug, Clone)]
pub struct Startup {
    /// The seed (`:random_seed`).
    pub random_seed: u64,
    /// Each client's `cs_func_rs`.
    pub clients: Vec<PgPrng>,
    /// `:default_seed`, when not given by `-D`.
    pub default_seed: Option<u64>,
    /// Each thread's states.
    pub threads: Vec<ThreadRandom>,
}

impl Program {
    /// The random states of a run with `clients` clients on `threads` threads.
    pub fn startup(&self, random_seed: u64, clients: usize, threads: usize) -> Startup {
        let mut base = PgPrng::seed(random_seed);
        let derive = |b: &mut PgPrng| PgPrng::seed(b.next_u64());
        let clients_rs = (0..clients).map(|_| derive(&mut base)).collect();
        let default_seed = (!self.is_defined(self.auto.default_seed)).then(|| base.next_u64());
        let threads = (0..threads)
            .map(|_| ThreadRandom {
                choose: derive(&mut base),
                throttle: derive(&mut base),
                sample: derive(&mut base),
            })
            .collect();
        Startup {
            random_seed,
            clients: clients_rs,
            default_seed,
            threads,
        }
    }

    fn is_defined(&self, id: VarId) -> bool {
        self.defines.iter().any(|(d, _)| *d == id)
    }

    /// Whether `-D` defines `name`.
    pub fn defines(&self, name: &str) -> bool {
        self.interner
            .get(name.as_bytes())
            .is_some_and(|id| self.is_defined(id))
    }

    /// The scripts, in the order given.
    pub fn scripts(&self) -> &[Script] {
        &self.scripts
    }

    /// The query mode.
    pub fn mode(&self) -> QueryMode {
        self.mode
    }

    /// The pgbench version whose rules apply.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Whether a builtin is among the scripts: pgbench then takes `:scale` from
    /// `select count(*) from pgbench_branches` (and ignores `-s`); otherwise `:scale` is
    /// `-s` or 1.
    pub fn uses_builtin(&self) -> bool {
        self.uses_builtin
    }

    /// The sum of the weights.
    pub fn total_weight(&self) -> i64 {
        self.total_weight
    }

    /// Chooses the next transaction's script by weight from a thread's `choose` state
    /// (`chooseScript`; a single script draws nothing).
    pub fn choose_script(&self, rng: &mut PgPrng) -> usize {
        if self.scripts.len() == 1 {
            return 0;
        }
        let mut w = rng.getrand(0, self.total_weight - 1);
        let mut i = 0;
        loop {
            w -= self.scripts[i].weight() as i64;
            i += 1;
            if w < 0 {
                return i - 1;
            }
        }
    }

    /// Names of every variable the scripts use, `-D` and the automatic ones included.
    pub fn variable_names(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.interner.len()).map(|i| self.interner.name(VarId(i as u32)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_and_builtins() {
        assert_eq!(parse_weight("a.sql").unwrap(), ("a.sql", 1));
        assert_eq!(parse_weight("filen@me@3").unwrap(), ("filen@me", 3));
        assert_eq!(parse_weight("x@0").unwrap(), ("x", 0));
        assert_eq!(
            parse_weight("select-only@one").unwrap_err().to_string(),
            "invalid weight specification: @one"
        );
        assert_eq!(
            parse_weight("s@-1").unwrap_err().to_string(),
            "weight specification out of range (0 .. 2147483647): -1"
        );
        assert!(parse_weight("s@").is_err());
        assert_eq!(find_builtin("t").unwrap().name, "tpcb-like");
        assert_eq!(find_builtin("se").unwrap().name, "select-only");
        assert!(matches!(
            find_builtin("s"),
            Err(ScriptError::AmbiguousBuiltin { count: 2, .. })
        ));
        assert!(matches!(find_builtin("x"), Err(ScriptError::NoBuiltin(_))));
    }

    #[test]
    fn seeds_parse_as_sscanf() {
        assert_eq!(RandomSeed::parse("5432").unwrap(), RandomSeed::Given(5432));
        assert_eq!(RandomSeed::parse(" +7").unwrap(), RandomSeed::Given(7));
        assert_eq!(
            RandomSeed::parse("-1").unwrap(),
            RandomSeed::Given(u64::MAX)
        );
        assert_eq!(RandomSeed::parse("time").unwrap(), RandomSeed::Time);
        assert!(RandomSeed::parse("one").is_err());
        assert!(RandomSeed::parse("12x").is_err());
    }

    #[test]
    fn prepared_names_count_across_scripts() {
        let mut s = ScriptSet::new(Version::V15);
        s.add_file(b"SELECT 1;\n\\set x 1\nSELECT :x;", "a", 1)
            .unwrap();
        s.add_builtin("select-only", 2).unwrap();
        let p = s.compile(QueryMode::Prepared).unwrap();
        assert_eq!(p.scripts()[0].prepared_name(0), Some("P_0"));
        assert_eq!(p.scripts()[0].prepared_name(1), None);
        assert_eq!(p.scripts()[0].prepared_name(2), Some("P_1"));
        assert_eq!(p.scripts()[1].prepared_name(1), Some("P_2"));
        assert_eq!(p.scripts()[0].sql_text(2), Some(&b"SELECT $1;"[..]));
        assert!(p.uses_builtin());
        assert_eq!(p.total_weight(), 3);
    }
}
