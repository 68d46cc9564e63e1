//! The expression grammar against pgbench 15.18's bison parser: 400 random token
//! strings (a fixed sequence) as `\set`, `\if` commands; the crate must accept exactly
//! those pgbench accepts and report the others with pgbench's message, text and caret.
//! Also the builtin scripts' text against `pgbench --show-script`.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use csdchar_pgbench_script::{BUILTINS, PgPrng, QueryMode, ScriptError, ScriptSet, Version};

const TOKENS: &[&str] = &[
    "1",
    "2.5",
    "9223372036854775808",
    ":x",
    "+",
    "-",
    "*",
    "/",
    "%",
    "<",
    "<=",
    ">",
    ">=",
    "=",
    "<>",
    "!=",
    "&",
    "|",
    "#",
    "<<",
    ">>",
    "~",
    "NOT",
    "AND",
    "OR",
    "IS",
    "NULL",
    "TRUE",
    "FALSE",
    "ISNULL",
    "NOTNULL",
    "(",
    ")",
    ",",
    "abs(",
    "least(",
    "hash(",
    "pi(",
    "random(",
    "nosuch(",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "1e3",
    ".5",
    "x",
    "!",
    ";",
];

/// A random expression from the grammar (operators of every level, unary forms,
/// IS tests, CASE, calls), as tokens.
fn grammatical(rng: &mut PgPrng, depth: u32, out: &mut Vec<&'static str>) {
    let pick =
        |rng: &mut PgPrng, v: &[&'static str]| v[rng.uint64_range(0, v.len() as u64 - 1) as usize];
    let k = if depth == 0 {
        0
    } else {
        rng.uint64_range(0, 9)
    };
    match k {
        0..=2 => out.push(pick(
            rng,
            &["1", "2.5", ":x", "TRUE", "NULL", "1e3", ".5", "pi()"],
        )),
        3..=5 => {
            grammatical(rng, depth - 1, out);
            out.push(pick(
                rng,
                &[
                    "+", "-", "*", "/", "%", "<", "<=", ">", ">=", "=", "<>", "!=", "&", "|", "#",
                    "<<", ">>", "AND", "OR",
                ],
            ));
            grammatical(rng, depth - 1, out);
        }
        6 => {
            out.push(pick(rng, &["-", "+", "~", "NOT"]));
            grammatical(rng, depth - 1, out);
        }
        7 => {
            grammatical(rng, depth - 1, out);
            out.push(pick(
                rng,
                &["IS NULL", "IS NOT TRUE", "ISNULL", "NOTNULL", "IS FALSE"],
            ));
        }
        8 => {
            out.push("CASE WHEN");
            grammatical(rng, depth - 1, out);
            out.push("THEN");
            grammatical(rng, depth - 1, out);
            if rng.uint64_range(0, 1) == 1 {
                out.push("ELSE");
                grammatical(rng, depth - 1, out);
            }
            out.push("END");
        }
        _ => {
            let f = pick(rng, &["abs(", "least(", "hash(", "greatest(", "(", "int("]);
            out.push(f);
            grammatical(rng, depth - 1, out);
            if f != "(" && rng.uint64_range(0, 2) == 0 {
                out.push(",");
                grammatical(rng, depth - 1, out);
            }
            out.push(")");
        }
    }
}

/// 400 expressions: grammatical ones, some with one token changed, and token soup.
fn expressions() -> Vec<String> {
    let mut rng = PgPrng::seed(41);
    let any = |rng: &mut PgPrng| TOKENS[rng.uint64_range(0, TOKENS.len() as u64 - 1) as usize];
    (0..400)
        .map(|i| {
            let mut t: Vec<&str> = Vec::new();
            if i % 4 == 3 {
                let n = rng.uint64_range(1, 7) as usize;
                (0..n).for_each(|_| t.push(any(&mut rng)));
            } else {
                grammatical(&mut rng, 4, &mut t);
                if i % 4 == 2 {
                    let at = rng.uint64_range(0, t.len() as u64 - 1) as usize;
                    match rng.uint64_range(0, 2) {
                        0 => {
                            t.remove(at);
                        }
                        1 => t.insert(at, any(&mut rng)),
                        _ => t[at] = any(&mut rng),
                    }
                }
            }
            t.join(" ")
        })
        .collect()
}

fn ours(name: &str, script: &str) -> String {
    let mut set = ScriptSet::new(Version::V15);
    let r = set
        .add_file(script.as_bytes(), name, 1)
        .and_then(|()| set.compile(QueryMode::Simple).map(|_| ()));
    match r {
        Ok(()) => "OK".into(),
        Err(ScriptError::Syntax(e)) => e.pgbench_text(),
        Err(e) => e.to_string(),
    }
}

fn theirs(pgbench: &std::path::Path, dir: &std::path::Path, name: &str, script: &str) -> String {
    std::fs::write(dir.join(name), script).unwrap();
    let out = Command::new(pgbench)
        .current_dir(dir)
        .args(["-n", "-t", "1", "-h", "/nonexistent-csdchar", "-f", name])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    if err.contains("connection to server") {
        return "OK".into();
    }
    let err = err.trim_end_matches('\n');
    err.strip_prefix("pgbench: error: ")
        .unwrap_or(err)
        .to_string()
}

#[test]
fn random_expressions_parse_as_pgbench() {
    let golden = common::read_golden("expressions.txt");
    let live = common::pgbench();
    let dir = tempfile::tempdir().unwrap();
    let mut recorded = BTreeMap::new();
    let mut failures = Vec::new();
    let mut accepted = 0;
    for (i, e) in expressions().into_iter().enumerate() {
        let cmd = if i % 2 == 0 { "set v" } else { "if" };
        let script = if cmd == "if" {
            format!("\\{cmd} {e}\n\\endif\n")
        } else {
            format!("\\{cmd} {e}\n")
        };
        let key = format!("{i:03} {script:?}");
        let mine = ours("e.sql", &script);
        accepted += usize::from(mine == "OK");
        if let Some(p) = live {
            let t = theirs(p, dir.path(), "e.sql", &script);
            if t != mine {
                failures.push(format!(
                    "{key} (live)\n  pgbench: {t:?}\n  ours:    {mine:?}"
                ));
            }
            recorded.insert(key.clone(), t);
        }
        match golden.get(&key) {
            Some(g) if *g != mine => failures.push(format!(
                "{key} (golden)\n  golden: {g:?}\n  ours:   {mine:?}"
            )),
            None if !common::recording() => failures.push(format!("{key}: no golden")),
            _ => {}
        }
    }
    if common::recording() && live.is_some() {
        common::write_golden(
            "expressions.txt",
            "# pgbench 15.18's verdict on random expressions (tests/differential.rs).\n",
            &recorded,
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The sequence must exercise both sides.
    assert!(accepted > 100 && accepted < 350, "{accepted} accepted");
}

#[test]
fn builtins_are_pgbench_text() {
    let golden = common::read_golden("builtins.txt");
    let mut recorded = BTreeMap::new();
    for b in BUILTINS {
        let ours = format!("-- {}: {}\n{}", b.name, b.description, b.script);
        if let Some(p) = common::pgbench() {
            let out = Command::new(p)
                .arg(format!("--show-script={}", b.name))
                .output()
                .unwrap();
            let theirs = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
            assert_eq!(theirs, ours.trim_end(), "{}", b.name);
            recorded.insert(b.name.to_string(), theirs);
        }
        if !common::recording() {
            assert_eq!(
                golden.get(b.name).map(String::as_str),
                Some(ours.trim_end()),
                "{}",
                b.name
            );
        }
    }
    if common::recording() && common::pgbench().is_some() {
        common::write_golden(
            "builtins.txt",
            "# pgbench 15.18 --show-script=NAME (tests/differential.rs).\n",
            &recorded,
        );
    }
}
