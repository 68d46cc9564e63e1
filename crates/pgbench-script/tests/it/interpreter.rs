//! The interpreter on pgbench's own TAP scripts (001_pgbench_with_server.pl), with a
//! fake server: the values its `debug()` lines must show for `--random-seed=5432`, and
//! the behaviour of `\if`, `\gset`, `\aset`, pipelines, retries and aborts.

use crate::common;

use std::sync::Arc;

use common::driver::{FakeReply, FakeResult, Ran, TestHost, plain_server, run_transaction};
use csdchar_pgbench_script::{
    AutoValues, Client, ClientOptions, Program, QueryMode, ScriptSet, TxStatus, TxnStatus, Version,
};

fn program(script: &str, mode: QueryMode, defines: &[&str]) -> Arc<Program> {
    let mut s = ScriptSet::new(Version::V15);
    s.add_file(script.as_bytes(), "script.sql", 1).unwrap();
    for d in defines {
        s.define(d).unwrap();
    }
    Arc::new(s.compile(mode).unwrap())
}

fn client(p: &Arc<Program>, seed: u64, options: ClientOptions) -> Client {
    let st = p.startup(seed, 1, 1);
    Client::new(
        Arc::clone(p),
        0,
        st.clients[0],
        AutoValues {
            scale: 1,
            default_seed: st.default_seed.unwrap_or(0),
            random_seed: seed,
        },
        options,
    )
}

fn run(p: &Arc<Program>, seed: u64, transactions: usize) -> (Ran, Vec<String>) {
    let mut c = client(p, seed, ClientOptions::default());
    let mut host = TestHost::default();
    let mut now = 1_000_000;
    let mut ran = Ran::default();
    let mut server = plain_server();
    for _ in 0..transactions {
        run_transaction(&mut c, 0, &mut host, &mut now, &mut server, &mut ran);
        if ran.aborted.is_some() {
            break;
        }
    }
    (ran, host.messages)
}

#[test]
fn tap_expressions_give_pgbench_values() {
    let p = program(
        include_str!("../scripts/tap_expressions.sql"),
        QueryMode::Simple,
        &[
            "foo=-10.1",
            "bla=false",
            "i=+3",
            "n=null",
            "t=t",
            "f=of",
            "d=1.0",
        ],
    );
    let (ran, debug) = run(&p, 5432, 1);
    assert_eq!(ran.aborted, None);
    assert_eq!(ran.ends.len(), 1);
    let want: &[(usize, &str)] = &[
        (1, "int 17"),
        (2, "int 104"),
        (3, "int 1498"),
        (4, "int 4"),
        (5, "int 5"),
        (6, "int 6"),
        (7, "int 7"),
        (8, "int 8"),
        (9, "int 9"),
        (10, "int 10"),
        (11, "int 11"),
        (12, "int 12"),
        (15, "double 15"),
        (16, "double 16"),
        (17, "double 17"),
        (20, "int 3"),
        (21, "double -27"),
        (22, "double 1024"),
        (23, "double 1"),
        (24, "double 1"),
        (25, "double -0.125"),
        (26, "double -0.125"),
        (27, "double -0.00032"),
        (28, "double 8.50705917302346e+37"),
        (29, "double 1e+30"),
        (30, "boolean false"),
        (31, "boolean true"),
        (32, "int 32"),
        (33, "int 33"),
        (34, "double 34"),
        (35, "int 35"),
        (36, "int 36"),
        (37, "double 37"),
        (38, "int 38"),
        (39, "int 39"),
        (40, "boolean true"),
        (41, "null"),
        (42, "null"),
        (43, "boolean true"),
        (44, "boolean true"),
        (45, "boolean true"),
        (46, "int 46"),
        (47, "boolean true"),
        (48, "boolean true"),
        (49, "int -5817877081768721676"),
        (50, "boolean true"),
        (51, "int -7793829335365542153"),
        (53, "boolean true"),
        (65, "int 65"),
        (74, "int 74"),
        (83, "int 83"),
        (86, "int 86"),
        (93, "int 93"),
        (95, "int 0"),
        (96, "int 1"),
        (97, "int 0"),
        (98, "int 5432"),
        (99, "int -9223372036854775808"),
        (100, "int 9223372036854775807"),
        (101, "boolean true"),
        (102, "boolean true"),
        (103, "boolean true"),
        (104, "boolean true"),
        (105, "boolean true"),
        (109, "boolean true"),
        (110, "boolean true"),
        (111, "boolean true"),
        (113, "boolean true"),
    ];
    // As the TAP test's regular expressions: the expected text, then a word boundary.
    for (cmd, v) in want {
        let line = format!("debug(script=0,command={cmd}): {v}");
        let found = debug.iter().any(|d| {
            d.strip_prefix(&line)
                .is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        });
        assert!(found, "missing {line:?} in {debug:#?}");
    }
    // The one SQL command, substituted with every type.
    assert!(
        ran.log
            .contains(&"statement: SELECT NULL, true, 5432, -0.5421;".to_string()),
        "{:?}",
        ran.log
    );
}

#[test]
fn nested_ifs_run_only_the_true_branches() {
    let script = "\\if false\n SELECT 1 / 0;\n \\if true\n SELECT 1 / 0;\n \\elif true\n SELECT 1 / 0;\n \\else\n SELECT 1 / 0;\n \\endif\n SELECT 1 / 0;\n\\elif false\n \\if true\n SELECT 1 / 0;\n \\endif\n\\else\n \\if false\n SELECT 1 / 0;\n \\elif false\n SELECT 1 / 0;\n \\else\n SELECT 'correct';\n \\endif\n\\endif\n\\if true\n SELECT 'correct';\n\\else\n \\if true\n SELECT 1 / 0;\n \\endif\n\\endif\n";
    let p = program(script, QueryMode::Simple, &[]);
    let (ran, _) = run(&p, 1, 2);
    assert_eq!(
        ran.log,
        vec!["statement: SELECT 'correct';"; 4],
        "two transactions, two statements each"
    );
    assert_eq!(ran.ends.len(), 2);
}

#[test]
fn gset_and_aset_store_rows_as_pgbench() {
    let script = "SELECT 0 AS i0 \\gset\n\\set i debug(:i0)\nSELECT 1 AS a, 2 AS b \\gset x_\n\\set i debug(:x_a + :x_b)\n\\; SELECT 6 AS i6 \\; SELECT 7 AS i7 \\; \\aset\n\\set i debug(:i6 * 10 + :i7)\n";
    let p = program(script, QueryMode::Simple, &[]);
    let mut c = client(&p, 1, ClientOptions::default());
    let mut host = TestHost::default();
    let mut ran = Ran::default();
    let mut now = 0;
    let row = |names: &[&str], vals: &[&str]| {
        FakeResult::Rows(
            names.iter().map(|s| s.to_string()).collect(),
            vec![vals.iter().map(|s| Some(s.to_string())).collect()],
        )
    };
    let mut server = |text: &str, _: &[Option<String>]| {
        let results = if text.contains("i0") {
            vec![row(&["i0"], &["0"])]
        } else if text.contains("AS a") {
            vec![row(&["a", "b"], &["1", "2"])]
        } else {
            vec![row(&["i6"], &["6"]), row(&["i7"], &["7"])]
        };
        FakeReply {
            results,
            status: TxStatus::Idle,
        }
    };
    run_transaction(&mut c, 0, &mut host, &mut now, &mut server, &mut ran);
    assert_eq!(ran.aborted, None);
    assert_eq!(
        host.messages,
        vec![
            "debug(script=0,command=2): int 0",
            "debug(script=0,command=4): int 3",
            "debug(script=0,command=6): int 67",
        ]
    );
    // Two rows under \gset abort the client, as pgbench.
    let mut c = client(&p, 1, ClientOptions::default());
    let mut ran = Ran::default();
    let mut two = |_: &str, _: &[Option<String>]| FakeReply {
        results: vec![FakeResult::Rows(
            vec!["i0".into()],
            vec![vec![Some("1".into())], vec![Some("2".into())]],
        )],
        status: TxStatus::Idle,
    };
    run_transaction(&mut c, 0, &mut host, &mut now, &mut two, &mut ran);
    assert_eq!(
        ran.aborted.as_deref(),
        Some("client 0 script 0 command 0 query 0: expected one row, got 2")
    );
    assert!(ran.ends.is_empty());
}

#[test]
fn serialization_failures_retry_with_the_same_random_values() {
    let script =
        "\\set delta random(-5000, 5000)\nBEGIN;\nUPDATE xy SET y = y + :delta;\nCOMMIT;\n";
    let p = program(script, QueryMode::Prepared, &[]);
    let mut c = client(
        &p,
        7,
        ClientOptions {
            max_tries: 3,
            ..ClientOptions::default()
        },
    );
    let mut host = TestHost::default();
    let mut ran = Ran::default();
    let mut now = 0;
    let mut failures_left = 2;
    let mut inner = plain_server();
    let mut server = |text: &str, params: &[Option<String>]| {
        if text.starts_with("UPDATE") && failures_left > 0 {
            failures_left -= 1;
            return FakeReply {
                results: vec![FakeResult::Error(
                    "40001".into(),
                    "could not serialize access due to concurrent update".into(),
                )],
                status: TxStatus::Failed,
            };
        }
        inner(text, params)
    };
    run_transaction(&mut c, 0, &mut host, &mut now, &mut server, &mut ran);
    assert_eq!(ran.aborted, None);
    assert_eq!(ran.ends.len(), 1);
    assert_eq!(ran.ends[0].status, TxnStatus::Success);
    assert_eq!(ran.ends[0].tries, 3);
    let updates: Vec<&String> = ran
        .log
        .iter()
        .filter(|l| l.starts_with("parameters"))
        .collect();
    assert_eq!(updates.len(), 3);
    assert!(updates.iter().all(|u| *u == updates[0]), "{updates:?}");
    // Each failure rolled back with a simple ROLLBACK; statements prepared once.
    assert_eq!(
        ran.log
            .iter()
            .filter(|l| *l == "statement: ROLLBACK")
            .count(),
        2
    );
    assert_eq!(
        ran.log.iter().filter(|l| l.starts_with("prepare")).count(),
        3
    );
    let stats = c.command_stats();
    assert_eq!(stats[0][2].retries, 2);

    // With --max-tries 1 the transaction fails and is counted as failed.
    let mut c = client(&p, 7, ClientOptions::default());
    let mut ran = Ran::default();
    let mut always = |text: &str, params: &[Option<String>]| {
        if text.starts_with("UPDATE") {
            return FakeReply {
                results: vec![FakeResult::Error(
                    "40P01".into(),
                    "deadlock detected".into(),
                )],
                status: TxStatus::Failed,
            };
        }
        plain_server()(text, params)
    };
    run_transaction(&mut c, 0, &mut host, &mut now, &mut always, &mut ran);
    assert_eq!(ran.ends.len(), 1);
    assert_eq!(ran.ends[0].status, TxnStatus::DeadlockFailure);
    assert_eq!(c.command_stats()[0][2].failures, 1);
}

#[test]
fn other_errors_abort_and_incomplete_blocks_abort_after_counting() {
    let p = program("SELECT 1 +;\n", QueryMode::Prepared, &[]);
    let mut c = client(&p, 1, ClientOptions::default());
    let mut host = TestHost::default();
    let mut ran = Ran::default();
    let mut now = 0;
    let mut err = |_: &str, _: &[Option<String>]| FakeReply {
        results: vec![FakeResult::Error(
            "42601".into(),
            "syntax error at end of input".into(),
        )],
        status: TxStatus::Idle,
    };
    run_transaction(&mut c, 0, &mut host, &mut now, &mut err, &mut ran);
    assert_eq!(
        ran.aborted.as_deref(),
        Some(
            "client 0 script 0 aborted in command 0 query 0: ERROR:  syntax error at end of input"
        )
    );
    assert!(ran.ends.is_empty());

    let p = program("BEGIN;SELECT 1;", QueryMode::Simple, &[]);
    let (ran, _) = run(&p, 1, 10);
    assert_eq!(ran.ends.len(), 1, "counted, then the client aborts");
    assert_eq!(
        ran.aborted.as_deref(),
        Some("client 0 aborted: end of script reached without completing the last transaction")
    );
}

#[test]
fn meta_command_errors_abort_with_pgbench_messages() {
    let cases: &[(&str, &str)] = &[
        (
            "\\set i 1/0",
            "division by zero\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set i :nosuchvariable",
            "undefined variable \"nosuchvariable\"\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set . 1",
            "set: invalid variable name: \".\"\nclient 0 aborted in command 0 (set) of script 0; assignment of meta-command failed",
        ),
        (
            "\\set i random(5,3)",
            "empty range given to random\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set i random(:minint, :maxint)",
            "random range is too large\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set i random_gaussian(0, 10, 1.0)",
            "gaussian parameter must be at least 2.000000 (not 1.000000)\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set i random_exponential(0, 10, 0.0)",
            "exponential parameter must be greater than zero (not 0.000000)\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set i random_zipfian(0, 10, 1)",
            "zipfian parameter must be in range [1.001, 1000] (not 1.000000)\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set i :foo + 1",
            "malformed variable \"foo\" value: \"bla\"\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set b NOT 0.0",
            "cannot coerce double to boolean\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set i TRUE + 2",
            "cannot coerce boolean to int\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set d ln(TRUE)",
            "cannot coerce boolean to double\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set i int(1E32)",
            "double to int overflow for 100000000000000005366162204393472.000000\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set i (1<<62) + (1<<62)",
            "bigint add out of range\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set i :minint / -1",
            "bigint div out of range\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set b :badtrue or true",
            "malformed variable \"badtrue\" value: \"trueXXX\"\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set i permute(0, 0)",
            "permute size parameter must be greater than zero\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\set i least(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16)",
            "too many function arguments, maximum is 16\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
        (
            "\\sleep :nosuchvariable",
            "sleep: undefined variable \"nosuchvariable\"\nclient 0 aborted in command 0 (sleep) of script 0; execution of meta-command failed",
        ),
        (
            "\\shell echo ::foo :nosuchvariable",
            "echo: undefined variable \":nosuchvariable\"\nclient 0 aborted in command 0 (shell) of script 0; execution of meta-command failed",
        ),
        (
            "\\setshell i echo -n one",
            "echo: shell command must return an integer (not \"one\")\nclient 0 aborted in command 0 (setshell) of script 0; execution of meta-command failed",
        ),
        (
            "\\startpipeline\n\\endpipeline",
            "client 0 aborted in command 0 (startpipeline) of script 0; cannot use pipeline mode with the simple query protocol",
        ),
        (
            "\\endpipeline",
            "client 0 aborted in command 0 (endpipeline) of script 0; not in pipeline mode",
        ),
        (
            "\\set i 5 or 0",
            "cannot coerce int to boolean\nclient 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed",
        ),
    ];
    let defines = [
        "foo=bla",
        "null=null",
        "true=true",
        "one=1",
        "zero=0.0",
        "badtrue=trueXXX",
        "maxint=9223372036854775807",
        "minint=-9223372036854775808",
    ];
    for (script, want) in cases {
        let p = program(script, QueryMode::Simple, &defines);
        let (ran, _) = run(&p, 1, 1);
        assert_eq!(ran.aborted.as_deref(), Some(*want), "{script}");
        assert!(ran.ends.is_empty(), "{script}");
    }
}

#[test]
fn shell_commands_and_sleeps() {
    let script = "\\set one 1.0\n\\sleep :one ms\n\\sleep 100 us\n\\sleep 0 s\n\\setshell another_one\\\n  echo \\\n    :one\n\\set n debug(:another_one)\n\\setshell big echo 4294967297\n\\set n debug(:big)\n\\shell true\n";
    let p = program(script, QueryMode::Simple, &[]);
    let (ran, debug) = run(&p, 1, 1);
    assert_eq!(ran.aborted, None);
    assert_eq!(
        debug,
        vec![
            "debug(script=0,command=6): int 1",
            "debug(script=0,command=8): int 1",
        ]
    );
}

#[test]
fn pipelines_queue_and_prepare_ahead() {
    let script = "\\startpipeline\nBEGIN ISOLATION LEVEL SERIALIZABLE;\nSELECT 1;\nSELECT :client_id;\nEND;\n\\endpipeline\n";
    let p = program(script, QueryMode::Prepared, &[]);
    let (ran, _) = run(&p, 1, 2);
    assert_eq!(ran.aborted, None);
    assert_eq!(ran.ends.len(), 2);
    // Prepared before the pipeline, once per connection; then Bind/Execute only.
    let prepares: Vec<&String> = ran
        .log
        .iter()
        .filter(|l| l.starts_with("prepare"))
        .collect();
    assert_eq!(
        prepares,
        vec![
            "prepare P_0: BEGIN ISOLATION LEVEL SERIALIZABLE;",
            "prepare P_1: SELECT 1;",
            "prepare P_2: SELECT $1;",
            "prepare P_3: END;",
        ]
    );
    assert_eq!(
        ran.log.first().unwrap(),
        "prepare P_0: BEGIN ISOLATION LEVEL SERIALIZABLE;"
    );

    // \gset in a pipeline, a pipeline left open, \startpipeline twice.
    for (script, want) in [
        (
            "\\startpipeline\nselect 1 \\gset f\n\\endpipeline\n",
            "client 0 aborted in command 1 (gset) of script 0; \\gset is not allowed in pipeline mode",
        ),
        (
            "\\startpipeline\n",
            "client 0 aborted: end of script reached with pipeline open",
        ),
        (
            "\\startpipeline\n\\startpipeline\n",
            "client 0 aborted in command 1 (startpipeline) of script 0; already in pipeline mode",
        ),
    ] {
        let p = program(script, QueryMode::Extended, &[]);
        let (ran, _) = run(&p, 1, 1);
        assert_eq!(ran.aborted.as_deref(), Some(want));
    }
}

#[test]
fn substitution_in_each_mode() {
    // An undefined variable: left as written (simple), NULL (extended); a NULL one: 'NULL'.
    let script = "\\set n NULL\nSELECT :n, :undefined, ':n', :n::int;\n";
    let (simple, _) = run(&program(script, QueryMode::Simple, &[]), 1, 1);
    assert_eq!(
        simple.log,
        vec!["statement: SELECT NULL, :undefined, 'NULL', NULL::int;"]
    );
    let (ext, _) = run(&program(script, QueryMode::Extended, &[]), 1, 1);
    assert_eq!(
        ext.log,
        vec![
            "execute <unnamed>: SELECT $1, $2, '$3', $4::int;",
            "parameters: $1 = 'NULL', $2 = NULL, $3 = 'NULL', $4 = 'NULL'",
        ]
    );
}

#[test]
fn choice_by_weight_and_startup_order() {
    let mut s = ScriptSet::new(Version::V15);
    s.add_file(b"SELECT 1;", "a", 9).unwrap();
    s.add_file(b"SELECT 2;", "b", 1).unwrap();
    s.add_file(b"SELECT 3;", "c", 0).unwrap();
    let p = s.compile(QueryMode::Simple).unwrap();
    let st = p.startup(42, 3, 2);
    assert_eq!(st.clients.len(), 3);
    assert_eq!(st.threads.len(), 2);
    let mut rng = st.threads[0].choose;
    let mut n = [0; 3];
    for _ in 0..10_000 {
        n[p.choose_script(&mut rng)] += 1;
    }
    assert_eq!(n[2], 0, "weight 0 is never chosen");
    assert!((8800..9200).contains(&n[0]), "{n:?}");
    // -D default_seed: no draw for it, so the threads' states shift.
    let mut s = ScriptSet::new(Version::V15);
    s.add_file(b"SELECT 1;", "a", 1).unwrap();
    s.define("default_seed=5").unwrap();
    let q = s.compile(QueryMode::Simple).unwrap();
    let st2 = q.startup(42, 3, 2);
    assert_eq!(st2.default_seed, None);
    assert_eq!(st2.clients, st.clients);
    assert_ne!(st2.threads[0], st.threads[0]);
}

#[test]
fn syncpipeline_is_18_only() {
    let script = "\\startpipeline\nSELECT 1;\n\\syncpipeline\nSELECT 2;\n\\endpipeline\n";
    let mut s = ScriptSet::new(Version::V15);
    assert!(s.add_file(script.as_bytes(), "s.sql", 1).is_err());
    let mut s = ScriptSet::new(Version::V18);
    s.add_file(script.as_bytes(), "s.sql", 1).unwrap();
    let p = Arc::new(s.compile(QueryMode::Extended).unwrap());
    let (ran, _) = run(&p, 1, 2);
    assert_eq!(ran.aborted, None);
    assert_eq!(ran.ends.len(), 2);
    assert_eq!(
        ran.log.iter().filter(|l| l.starts_with("execute")).count(),
        4
    );
    // Outside a pipeline it aborts the client.
    let mut s = ScriptSet::new(Version::V18);
    s.add_file(b"\\syncpipeline\n", "s.sql", 1).unwrap();
    let p = Arc::new(s.compile(QueryMode::Extended).unwrap());
    let (ran, _) = run(&p, 1, 1);
    assert_eq!(
        ran.aborted.as_deref(),
        Some("client 0 aborted in command 0 (syncpipeline) of script 0; not in pipeline mode")
    );
}

#[test]
fn timer_during_error_handling_finishes_uncounted() {
    use csdchar_pgbench_script::{Context, Step};
    let p = program(
        "BEGIN;\nUPDATE t SET x = 1;\nEND;\n",
        QueryMode::Simple,
        &[],
    );
    let mut c = client(
        &p,
        1,
        ClientOptions {
            max_tries: 0,
            latency_limit_us: None,
            verbose_errors: true,
        },
    );
    let mut host = TestHost::default();
    c.begin(0, 0);
    let mut status = TxStatus::Idle;
    loop {
        let mut cx = Context {
            now_us: 0,
            timer_exceeded: true,
            host: &mut host,
        };
        let reply = match c.next(&mut cx) {
            Step::Sql(r) if r.command == 1 => FakeReply {
                results: vec![FakeResult::Error(
                    "40001".into(),
                    "could not serialize".into(),
                )],
                status: TxStatus::Failed,
            },
            Step::Sql(_) => {
                status = TxStatus::InBlock;
                FakeReply::ok(status)
            }
            Step::Rollback => FakeReply::ok(TxStatus::Idle),
            Step::Finished => break,
            s => panic!("unexpected {s:?}"),
        };
        let mut cx = Context {
            now_us: 0,
            timer_exceeded: true,
            host: &mut host,
        };
        c.on_reply(&reply, &mut cx);
    }
    let _ = status;
    assert_eq!(
        host.messages,
        vec!["client 0 got an error in command 1 (SQL) of script 0; ERROR:  could not serialize"]
    );
}
