//! The interpreter against pgbench 15.18 on a real server (recorded in
//! tests/golden/runs.txt by tests/golden/record-runs.sh): for each script of
//! tests/runs/ with its options, the same statements and parameters in the server's
//! log (so the same random values, script choices and substitution), the same
//! `debug()` lines, the same abort messages and the same count of processed
//! transactions. The fake server answers as the recorded one did: its errors are
//! replayed from the log, and the rows `\gset`/`\aset` read are given below.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::driver::{FakeReply, FakeResult, TestHost};
use csdchar_pgbench_script::{
    AutoValues, Client, ClientOptions, Context, QueryMode, RandomSeed, ScriptSet, SqlForm, Step,
    TxStatus, TxnStatus, Version,
};

/// One statement as the server logged it.
#[derive(Debug, Clone, PartialEq)]
enum Entry {
    /// `statement: X` or `execute NAME: X`, with its parameters line.
    Stmt {
        head: String,
        params: Option<String>,
    },
    /// An error, and the statement it names (none for a Bind of a missing statement).
    Error {
        sqlstate: String,
        message: String,
        statement: Option<String>,
    },
}

fn parse_log(lines: &[&str]) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    let mut in_statement_text = false;
    for l in lines {
        if let Some(cont) = l.strip_prefix('\t') {
            match out.last_mut() {
                Some(Entry::Stmt { head, .. }) if !in_statement_text => {
                    head.push('\n');
                    head.push_str(cont);
                }
                Some(Entry::Error {
                    statement: Some(s), ..
                }) => {
                    s.push('\n');
                    s.push_str(cont);
                }
                _ => {}
            }
            continue;
        }
        let (state, rest) = l.split_once(' ').unwrap();
        if let Some(s) = rest.strip_prefix("LOG:  ") {
            in_statement_text = false;
            out.push(Entry::Stmt {
                head: s.to_string(),
                params: None,
            });
        } else if let Some(p) = rest.strip_prefix("DETAIL:  parameters: ") {
            if let Some(Entry::Stmt { params, .. }) = out.last_mut() {
                *params = Some(p.to_string());
            }
        } else if let Some(m) = rest.strip_prefix("ERROR:  ") {
            let m = match m.rfind(" at character ") {
                Some(k) if m[k + 14..].bytes().all(|b| b.is_ascii_digit()) => &m[..k],
                _ => m,
            };
            out.push(Entry::Error {
                sqlstate: state.to_string(),
                message: m.to_string(),
                statement: None,
            });
        } else if let Some(s) = rest.strip_prefix("STATEMENT:  ") {
            in_statement_text = true;
            if let Some(Entry::Error { statement, .. }) = out.last_mut() {
                *statement = Some(s.to_string());
            }
        }
    }
    out
}

/// The rows the recorded server returned for the queries `\gset`/`\aset` read.
fn rows_for(text: &str) -> Option<Vec<FakeResult>> {
    let one = |cols: &[&str], vals: &[Option<&str>]| {
        FakeResult::Rows(
            cols.iter().map(|c| c.to_string()).collect(),
            vec![vals.iter().map(|v| v.map(str::to_string)).collect()],
        )
    };
    Some(match text {
        "SELECT " => vec![FakeResult::Rows(vec![], vec![vec![]])],
        "SELECT 0 AS i0 " => vec![one(&["i0"], &[Some("0")])],
        "SELECT 1 AS i1, 2 AS i2 " => vec![one(&["i1", "i2"], &[Some("1"), Some("2")])],
        "SELECT 3 AS i3 " => vec![one(&["i3"], &[Some("3")])],
        "SELECT 0 AS i4, 4 AS i4 " => vec![one(&["i4", "i4"], &[Some("0"), Some("4")])],
        "; ; SELECT 0 AS i5 ; SELECT 5 AS i5 ; ; " => {
            vec![one(&["i5"], &[Some("0")]), one(&["i5"], &[Some("5")])]
        }
        "; SELECT 6 AS i6 ; SELECT 7 AS i7 ; " => {
            vec![one(&["i6"], &[Some("6")]), one(&["i7"], &[Some("7")])]
        }
        "SELECT 8 AS i6 UNION SELECT 9 ORDER BY 1 DESC " => vec![FakeResult::Rows(
            vec!["i6".into()],
            vec![vec![Some("9".into())], vec![Some("8".into())]],
        )],
        "SELECT 1.5 AS fl, 'yes' AS yn, NULL AS nu, ' 12 ' AS sp " => vec![one(
            &["fl", "yn", "nu", "sp"],
            &[Some("1.5"), Some("yes"), None, Some(" 12 ")],
        )],
        "select 7 as \"w\" " => vec![one(&["w"], &[Some("7")])],
        _ => return None,
    })
}

struct Replay {
    entries: Vec<Entry>,
    at: usize,
    prepared: Vec<String>,
    in_block: bool,
    mismatches: Vec<String>,
}

impl Replay {
    fn status(&mut self, text: &str) -> TxStatus {
        let t = text.trim_start().to_ascii_uppercase();
        if t.starts_with("BEGIN") {
            self.in_block = true;
        } else if t.starts_with("END") || t.starts_with("COMMIT") || t.starts_with("ROLLBACK") {
            self.in_block = false;
        }
        if self.in_block {
            TxStatus::InBlock
        } else {
            TxStatus::Idle
        }
    }

    fn error(&self, sqlstate: &str, message: &str) -> FakeReply {
        FakeReply {
            results: vec![FakeResult::Error(sqlstate.into(), message.into())],
            status: if self.in_block {
                TxStatus::Failed
            } else {
                TxStatus::Idle
            },
        }
    }

    /// A statement sent: `head` as the log would show it, `text` its SQL.
    fn execute(
        &mut self,
        head: String,
        params: Option<String>,
        text: &str,
        missing: Option<&str>,
    ) -> FakeReply {
        let Some(e) = self.entries.get(self.at).cloned() else {
            self.mismatches.push(format!("extra statement {head:?}"));
            return FakeReply::ok(TxStatus::Idle);
        };
        self.at += 1;
        match e {
            Entry::Error {
                sqlstate,
                message,
                statement,
            } => {
                let ours = if missing.is_some() {
                    None
                } else {
                    Some(text.to_string())
                };
                if statement != ours {
                    self.mismatches
                        .push(format!("error statement {statement:?} vs ours {ours:?}"));
                }
                self.error(&sqlstate, &message)
            }
            Entry::Stmt { head: h, params: p } => {
                if missing.is_some() {
                    self.mismatches
                        .push(format!("{h:?} executed, but ours was never prepared"));
                }
                if h != head || p != params {
                    self.mismatches
                        .push(format!("logged {h:?} {p:?}\n   ours {head:?} {params:?}"));
                }
                let status = self.status(text);
                FakeReply {
                    results: rows_for(text).unwrap_or_else(|| vec![FakeResult::Command]),
                    status,
                }
            }
        }
    }

    /// A Parse of a named statement: not logged unless it failed.
    fn prepare(&mut self, name: &str, text: &str) -> FakeReply {
        if let Some(Entry::Error {
            sqlstate,
            message,
            statement: Some(s),
        }) = self.entries.get(self.at).cloned()
            && s == text
        {
            self.at += 1;
            return self.error(&sqlstate, &message);
        }
        self.prepared.push(name.to_string());
        FakeReply {
            results: vec![],
            status: if self.in_block {
                TxStatus::InBlock
            } else {
                TxStatus::Idle
            },
        }
    }
}

fn quote(p: Option<&[u8]>) -> String {
    match p {
        None => "NULL".into(),
        Some(b) => format!("'{}'", String::from_utf8_lossy(b).replace('\'', "''")),
    }
}

fn params_line(params: &csdchar_pgbench_script::sql::ParamBuf) -> Option<String> {
    (!params.is_empty()).then(|| {
        params
            .iter()
            .enumerate()
            .map(|(i, p)| format!("${} = {}", i + 1, quote(p)))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

struct Case {
    seed: u64,
    transactions: usize,
    clients: usize,
    threads: usize,
    mode: QueryMode,
    defines: Vec<String>,
    files: Vec<(String, u32)>,
}

fn parse_args(args: &str) -> Case {
    let mut c = Case {
        seed: 0,
        transactions: 10,
        clients: 1,
        threads: 1,
        mode: QueryMode::Simple,
        defines: vec![],
        files: vec![],
    };
    let mut it = args.split_whitespace();
    while let Some(a) = it.next() {
        if let Some(s) = a.strip_prefix("--random-seed=") {
            let RandomSeed::Given(v) = RandomSeed::parse(s).unwrap() else {
                panic!("a seed")
            };
            c.seed = v;
        } else if let Some(d) = a.strip_prefix("-D") {
            c.defines.push(d.to_string());
        } else {
            let v = it.next().unwrap();
            match a {
                "-t" => c.transactions = v.parse().unwrap(),
                "-c" => c.clients = v.parse().unwrap(),
                "-j" => c.threads = v.parse().unwrap(),
                "-M" => c.mode = QueryMode::parse(v).unwrap(),
                "-f" => {
                    let (n, w) = csdchar_pgbench_script::parse_weight(v).unwrap();
                    c.files.push((n.to_string(), w));
                }
                _ => panic!("option {a}"),
            }
        }
    }
    c
}

/// Runs a case: per client, the statements and their log, debug lines, the abort.
fn run_case(name: &str, golden: &str) -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/runs");
    let case = parse_args(
        std::fs::read_to_string(dir.join(format!("{name}.args")))
            .unwrap()
            .trim(),
    );
    let mut set = ScriptSet::new(Version::V15);
    for (f, w) in &case.files {
        set.add_file(&std::fs::read(dir.join(f)).unwrap(), f, *w)
            .unwrap();
    }
    for d in &case.defines {
        set.define(d).unwrap();
    }
    let program = Arc::new(set.compile(case.mode).unwrap());
    let st = program.startup(case.seed, case.clients, case.threads);

    let lines: Vec<&str> = golden.lines().collect();
    let pick = |p: &str| -> Vec<&str> { lines.iter().filter_map(|l| l.strip_prefix(p)).collect() };
    let log = parse_log(&pick("log "));
    // Several clients: each statement's first value is the client.
    let entries_of = |client: usize| -> Vec<Entry> {
        if case.clients == 1 {
            return log.clone();
        }
        let prefix = format!("statement: SELECT {client}, ");
        log.iter()
            .filter(|e| matches!(e, Entry::Stmt { head, .. } if head.starts_with(&prefix)))
            .cloned()
            .collect()
    };

    let mut failures = Vec::new();
    let mut debug = Vec::new();
    let mut aborts = Vec::new();
    let mut processed = 0;
    // Clients dealt to threads as pgbench deals them; each thread's clients share its
    // script-choice state (one client per thread, or one script, in these cases).
    let mut dealt = 0;
    for t in 0..case.threads {
        let n = (case.clients - dealt + case.threads - t - 1) / (case.threads - t);
        let mut choose = st.threads[t].choose;
        for id in dealt..dealt + n {
            let mut client = Client::new(
                Arc::clone(&program),
                id,
                st.clients[id],
                AutoValues {
                    scale: 1,
                    default_seed: st.default_seed.unwrap_or(0),
                    random_seed: case.seed,
                },
                ClientOptions::default(),
            );
            let mut replay = Replay {
                entries: entries_of(id),
                at: 0,
                prepared: vec![],
                in_block: false,
                mismatches: vec![],
            };
            let mut host = TestHost::default();
            let mut now = 0i64;
            'txns: for _ in 0..case.transactions {
                let script = program.choose_script(&mut choose);
                client.begin(script, now);
                loop {
                    let mut cx = Context {
                        now_us: now,
                        timer_exceeded: false,
                        host: &mut host,
                    };
                    let reply = match client.next(&mut cx) {
                        Step::Sql(r) => {
                            assert!(!r.pipelined || case.mode != QueryMode::Simple);
                            let sql = program.scripts()[r.script].sql_text(r.command).unwrap();
                            let sql = String::from_utf8_lossy(sql).into_owned();
                            let reply = match r.form {
                                SqlForm::Simple { text } => {
                                    let t = String::from_utf8_lossy(text).into_owned();
                                    replay.execute(format!("statement: {t}"), None, &t, None)
                                }
                                SqlForm::Extended { text, params } => {
                                    let t = String::from_utf8_lossy(text).into_owned();
                                    let p = params_line(params);
                                    replay.execute(format!("execute <unnamed>: {t}"), p, &t, None)
                                }
                                SqlForm::Prepared { name, params } => {
                                    let p = params_line(params);
                                    if replay.prepared.iter().any(|n| n == name) {
                                        replay.execute(
                                            format!("execute {name}: {sql}"),
                                            p,
                                            &sql,
                                            None,
                                        )
                                    } else {
                                        let m =
                                            format!("prepared statement \"{name}\" does not exist");
                                        replay.execute(String::new(), p, &sql, Some(&m))
                                    }
                                }
                            };
                            if r.pipelined {
                                // Pipelined commands' results come with \endpipeline's.
                                continue;
                            }
                            reply
                        }
                        Step::Prepare { name, text } => {
                            let t = String::from_utf8_lossy(text).into_owned();
                            let name = name.to_string();
                            replay.prepare(&name, &t)
                        }
                        Step::EndPipeline | Step::Sync => FakeReply {
                            results: vec![],
                            status: TxStatus::Idle,
                        },
                        Step::PipelineSync => continue,
                        Step::Rollback => FakeReply::ok(TxStatus::Idle),
                        Step::Sleep { until_us } => {
                            now = until_us;
                            continue;
                        }
                        Step::End(e) => {
                            if e.status == TxnStatus::Success {
                                processed += 1;
                            }
                            continue;
                        }
                        Step::Idle => break,
                        Step::Finished => break 'txns,
                        Step::Aborted(a) => {
                            aborts.push(a.message.clone());
                            break 'txns;
                        }
                    };
                    now += 100;
                    let mut cx = Context {
                        now_us: now,
                        timer_exceeded: false,
                        host: &mut host,
                    };
                    client.on_reply(&reply, &mut cx);
                }
            }
            if replay.at != replay.entries.len() {
                failures.push(format!(
                    "client {id}: {} of {} logged statements sent",
                    replay.at,
                    replay.entries.len()
                ));
            }
            failures.extend(
                replay
                    .mismatches
                    .iter()
                    .map(|m| format!("client {id}: {m}")),
            );
            debug.extend(
                host.messages
                    .into_iter()
                    .filter(|m| m.starts_with("debug(")),
            );
        }
        dealt += n;
    }
    let want_debug: Vec<&str> = pick("stderr ")
        .into_iter()
        .filter(|l| l.starts_with("debug("))
        .collect();
    if debug != want_debug {
        failures.push(format!(
            "debug lines\n  pgbench: {want_debug:#?}\n  ours: {debug:#?}"
        ));
    }
    let errors: Vec<&str> = pick("stderr pgbench: error: ");
    for a in &aborts {
        for line in a.lines() {
            if !errors.contains(&line) {
                failures.push(format!("abort line {line:?} not in pgbench's {errors:?}"));
            }
        }
    }
    let aborted_pgbench = errors.iter().any(|e| e.contains("Run was aborted"));
    if aborted_pgbench == aborts.is_empty() {
        failures.push(format!(
            "pgbench aborted: {aborted_pgbench}, ours: {aborts:?}"
        ));
    }
    let want_processed = pick("stdout number of transactions actually processed: ");
    let ours_processed = format!("{processed}/{}", case.transactions * case.clients);
    if want_processed != [ours_processed.as_str()] {
        failures.push(format!(
            "processed {want_processed:?}, ours {ours_processed}"
        ));
    }
    failures
}

#[test]
fn runs_match_pgbench() {
    let golden: BTreeMap<String, String> = common::read_golden("runs.txt");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/runs");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "args")
                .then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    assert!(names.len() >= 12, "{names:?}");
    let mut failures = Vec::new();
    for name in names {
        let Some(g) = golden.get(&name) else {
            failures.push(format!(
                "{name}: not recorded (tests/golden/record-runs.sh)"
            ));
            continue;
        };
        failures.extend(
            run_case(&name, g)
                .into_iter()
                .map(|f| format!("{name}: {f}")),
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
