//! Scripts pgbench refuses before connecting, and scripts it accepts: the crate's
//! message against pgbench 15.18's own (its stderr after `pgbench: error: `), from
//! pgbench's TAP tests (002_pgbench_no_server.pl, the parse errors of
//! 001_pgbench_with_server.pl) and from corners of the lexers and the grammar.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use csdchar_pgbench_script::{QueryMode, ScriptSet, Version};

/// (case name, script, query mode).
fn cases() -> Vec<(String, String, QueryMode)> {
    use QueryMode::*;
    let mut v: Vec<(&str, String, QueryMode)> = vec![
        // 002_pgbench_no_server.pl
        ("missing endif", "\\if 1".into(), Simple),
        ("missing if on elif", "\\elif 1".into(), Simple),
        ("missing if on else", "\\else".into(), Simple),
        ("missing if on endif", "\\endif".into(), Simple),
        (
            "elif after else",
            "\\if 1\n\\else\n\\elif 0\n\\endif".into(),
            Simple,
        ),
        (
            "else after else",
            "\\if 1\n\\else\n\\else\n\\endif".into(),
            Simple,
        ),
        ("if syntax error", "\\if\n\\endif\n".into(), Simple),
        (
            "elif syntax error",
            "\\if 0\n\\elif +\n\\endif\n".into(),
            Simple,
        ),
        (
            "else syntax error",
            "\\if 0\n\\else BAD\n\\endif\n".into(),
            Simple,
        ),
        ("endif syntax error", "\\if 0\n\\endif BAD\n".into(), Simple),
        ("least no args", "\\set i least()\n".into(), Simple),
        ("greatest no args", "\\set i greatest()\n".into(), Simple),
        ("hash no args", "\\set i hash()\n".into(), Simple),
        ("hash 3 args", "\\set i hash(1,2,3)\n".into(), Simple),
        (
            "bigint overflow",
            "\\set i 100000000000000000000\n".into(),
            Simple,
        ),
        ("double overflow", "\\set d 1.0E309\n".into(), Simple),
        ("double overflow 3", "\\set d .1E310\n".into(), Simple),
        ("set i op", "\\set i 1 +\n".into(), Simple),
        ("permute 1 arg", "\\set i permute(1)\n".into(), Simple),
        (
            "permute 4 args",
            "\\set i permute(1, 2, 3, 4)\n".into(),
            Simple,
        ),
        // 001_pgbench_with_server.pl, status 1
        (
            "sql too many args",
            format!(
                "-- MAX_ARGS=256 for prepared\n\\set i 0\nSELECT LEAST({})",
                vec![":i"; 256].join(", ")
            ),
            Prepared,
        ),
        ("shell missing command", "\\shell".into(), Prepared),
        (
            "shell too many args",
            format!(
                "-- 256 arguments to \\shell\n\\shell echo {}",
                vec!["arg"; 255].join(" ")
            ),
            Prepared,
        ),
        ("set syntax error", "\\set i 1 +".into(), Prepared),
        (
            "set no such function",
            "\\set i noSuchFunction()".into(),
            Prepared,
        ),
        ("set unexpected char", "\\set i ;".into(), Prepared),
        ("set no expression", "\\set i".into(), Prepared),
        ("set missing argument", "\\set".into(), Prepared),
        (
            "set case error",
            "\\set i CASE TRUE THEN 1 ELSE 0 END".into(),
            Prepared,
        ),
        (
            "set number of args mismatch",
            "\\set d ln(1.0, 2.0))".into(),
            Prepared,
        ),
        (
            "set at least one arg",
            "\\set i greatest())".into(),
            Prepared,
        ),
        ("setshell missing arg", "\\setshell var".into(), Prepared),
        (
            "sleep too many args",
            "\\sleep too many args".into(),
            Prepared,
        ),
        ("sleep missing arg", "\\sleep".into(), Prepared),
        ("sleep unknown unit", "\\sleep 1 week".into(), Prepared),
        (
            "misc invalid backslash command",
            "\\nosuchcommand".into(),
            Prepared,
        ),
        ("misc empty script", "".into(), Prepared),
        ("gset alone", "\\gset".into(), Prepared),
        ("gset no SQL", "\\set i +1\n\\gset".into(), Prepared),
        (
            "gset too many arguments",
            "SELECT 1 \\gset a b".into(),
            Prepared,
        ),
        (
            "gset after gset",
            "SELECT 1 AS i \\gset\n\\gset".into(),
            Prepared,
        ),
        // Corners.
        (
            "nested lexer error replaces",
            "\\set i 1 2 ;\n".into(),
            Simple,
        ),
        (
            "lexer error after bad function",
            "\\set x foo(;)\n".into(),
            Simple,
        ),
        ("nonassoc comparison", "\\set x 1 < 2 < 3\n".into(), Simple),
        (
            "maxint plus one alone",
            "\\set x 9223372036854775808\n".into(),
            Simple,
        ),
        ("function without parens", "\\set x abs\n".into(), Simple),
        ("lone colon", "\\set x :\n".into(), Simple),
        ("bang", "\\set x 1 ! 2\n".into(), Simple),
        ("dot", "\\set x .\n".into(), Simple),
        ("trailing comma", "\\set x least(1,)\n".into(), Simple),
        (
            "continuation error",
            "\\set x 1 + \\\n   2 +\n".into(),
            Simple,
        ),
        ("error at eof with spaces", "\\set x 1 +   ".into(), Simple),
        ("double underflow", "\\set x 1e-400\n".into(), Simple),
        ("double subnormal", "\\set x 1e-310\n".into(), Simple),
        (
            "sleep glued unit and unit",
            "\\sleep 10ms s\n".into(),
            Simple,
        ),
        ("sleep not a number", "\\sleep x\n".into(), Simple),
        ("sleep sign only", "\\sleep -\n".into(), Simple),
        ("sleep 1 2 3", "\\sleep 1 2 3\n".into(), Simple),
        ("syncpipeline in 15", "\\syncpipeline\n".into(), Extended),
        ("startpipeline arg", "\\startpipeline x\n".into(), Extended),
        (
            "gset after meta line",
            "\\set i 1\n\n\n\\gset\n".into(),
            Simple,
        ),
        ("aset alone", "\\aset\n".into(), Simple),
        ("comments only", "-- nothing\n  \n-- here\n".into(), Simple),
        (
            "unknown with many words",
            format!("\\nope {}", vec!["w"; 300].join(" ")),
            Simple,
        ),
        ("tab in expression", "\\set x\t1 +\t\n".into(), Simple),
        (
            "if nested missing endif",
            "\\if 1\n\\if 0\n\\endif\nSELECT 1;\n".into(),
            Simple,
        ),
        (
            "unexpected char after continuation",
            "\\set x 1 \\\n ; \n".into(),
            Simple,
        ),
        (
            "set missing var name line",
            "SELECT 1;\n\\set\n".into(),
            Simple,
        ),
        (
            "weird caps",
            "\\SeT x ABS(-1) + Pi() * RANDOM(1, 2)\n\\SLEEP 0 MS\nSELECT 1 \\GSET\n".into(),
            Simple,
        ),
        // Accepted scripts (pgbench then fails to connect).
        (
            "ok tpcb-like text",
            "\\set aid random(1, 100000 * :scale)\nBEGIN;\nEND;\n".into(),
            Prepared,
        ),
        (
            "ok least leading comma",
            "\\set x least(, 1)\n".into(),
            Simple,
        ),
        (
            "ok sleep glued",
            "\\sleep 10ms\n\\sleep :x us\n\\sleep +5\n".into(),
            Simple,
        ),
        ("ok minint", "\\set x -9223372036854775808\n".into(), Simple),
        ("ok lone backslash", "\\\nSELECT 1".into(), Simple),
        (
            "ok gset after semicolon",
            "SELECT 1;\n\n\\gset\n".into(),
            Simple,
        ),
        (
            "ok aset compound",
            "\\; SELECT 1 \\; SELECT 2 \\aset\n".into(),
            Simple,
        ),
        (
            "ok 255 args",
            format!("SELECT LEAST({})", vec![":i"; 255].join(", ")),
            Prepared,
        ),
        (
            "ok is null chain",
            "\\set x 1 IS NULL IS NULL\n".into(),
            Simple,
        ),
        ("ok unterminated quote", "SELECT 'abc".into(), Simple),
        (
            "ok case no else",
            "\\set x case when 1 then 2 end\n".into(),
            Simple,
        ),
        ("ok 1.e5", "\\set x 1.e5 + .5 + 1e3\n".into(), Simple),
    ];
    v.drain(..)
        .map(|(n, s, m)| (n.replace(' ', "_"), s, m))
        .collect()
}

/// The crate's verdict: "OK" or pgbench's text of the error.
fn ours(name: &str, script: &str, mode: QueryMode) -> String {
    let mut set = ScriptSet::new(Version::V15);
    let r = set
        .add_file(script.as_bytes(), name, 1)
        .and_then(|()| set.compile(mode).map(|_| ()));
    match r {
        Ok(()) => "OK".into(),
        Err(csdchar_pgbench_script::ScriptError::Syntax(e)) => e.pgbench_text(),
        Err(e) => e.to_string(),
    }
}

/// pgbench's verdict, run in `dir` on the script saved as `name`.
fn theirs(
    pgbench: &std::path::Path,
    dir: &std::path::Path,
    name: &str,
    script: &str,
    mode: QueryMode,
) -> String {
    std::fs::write(dir.join(name), script).unwrap();
    let out = Command::new(pgbench)
        .current_dir(dir)
        .args([
            "-n",
            "-t",
            "1",
            "-h",
            "/nonexistent-csdchar",
            "-M",
            mode.name(),
            "-f",
            name,
        ])
        .env_remove("PGBENCH_RANDOM_SEED")
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
fn parse_errors_match_pgbench() {
    let golden = common::read_golden("parse_errors.txt");
    let live = common::pgbench();
    let dir = tempfile::tempdir().unwrap();
    let mut recorded = BTreeMap::new();
    let mut failures = Vec::new();
    for (name, script, mode) in cases() {
        let file = format!("{name}.sql");
        let mine = ours(&file, &script, mode);
        if let Some(pgbench) = live {
            let t = theirs(pgbench, dir.path(), &file, &script, mode);
            if t != mine {
                failures.push(format!(
                    "{name} (live pgbench)\n  pgbench: {t:?}\n  ours:    {mine:?}"
                ));
            }
            recorded.insert(name.clone(), t);
        }
        match golden.get(&name) {
            Some(g) if *g != mine => failures.push(format!(
                "{name} (golden)\n  golden: {g:?}\n  ours:   {mine:?}"
            )),
            None if !common::recording() => failures.push(format!("{name}: no golden recorded")),
            _ => {}
        }
    }
    if common::recording() && live.is_some() {
        common::write_golden(
            "parse_errors.txt",
            "# pgbench 15.18's verdict per script (tests/parse_errors.rs): OK, or its stderr after `pgbench: error: `.\n",
            &recorded,
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
