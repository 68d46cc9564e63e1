//! A test driver for the interpreter: a fake server that answers every exchange, and a
//! log of what was sent in the server's `log_statement = all` words.

use csdchar_pgbench_script::{
    Client, Context, Host, Reply, ResultKind, SqlForm, Step, TxStatus, TxnEnd,
};

/// One result of a fake reply.
#[derive(Debug, Clone)]
pub enum FakeResult {
    Command,
    Rows(Vec<String>, Vec<Vec<Option<String>>>),
    Error(String, String),
    Copy,
}

/// A fake reply.
#[derive(Debug, Clone)]
pub struct FakeReply {
    pub results: Vec<FakeResult>,
    pub status: TxStatus,
}

impl FakeReply {
    pub fn ok(status: TxStatus) -> FakeReply {
        FakeReply {
            results: vec![FakeResult::Command],
            status,
        }
    }
}

impl Reply for FakeReply {
    fn results(&self) -> usize {
        self.results.len()
    }
    fn result(&self, i: usize) -> ResultKind<'_> {
        match &self.results[i] {
            FakeResult::Command => ResultKind::Command,
            FakeResult::Rows(_, rows) => ResultKind::Tuples { rows: rows.len() },
            FakeResult::Copy => ResultKind::Copy,
            FakeResult::Error(s, m) => ResultKind::Error {
                sqlstate: s,
                message: m,
            },
        }
    }
    fn columns(&self, i: usize) -> usize {
        match &self.results[i] {
            FakeResult::Rows(c, _) => c.len(),
            _ => 0,
        }
    }
    fn column_name(&self, i: usize, col: usize) -> &[u8] {
        match &self.results[i] {
            FakeResult::Rows(c, _) => c[col].as_bytes(),
            _ => b"",
        }
    }
    fn value(&self, i: usize, row: usize, col: usize) -> Option<&[u8]> {
        match &self.results[i] {
            FakeResult::Rows(_, r) => r[row][col].as_deref().map(str::as_bytes),
            _ => None,
        }
    }
    fn status(&self) -> TxStatus {
        self.status
    }
}

/// Collects messages; runs shell commands through `sh -c`.
#[derive(Default)]
pub struct TestHost {
    pub messages: Vec<String>,
}

impl Host for TestHost {
    fn shell(&mut self, command: &[u8]) -> Result<(), String> {
        let st = std::process::Command::new("sh")
            .arg("-c")
            .arg(String::from_utf8_lossy(command).as_ref())
            .stdout(std::process::Stdio::null())
            .status()
            .map_err(|e| e.to_string())?;
        if st.success() {
            Ok(())
        } else {
            Err(format!("{st}"))
        }
    }
    fn shell_output(&mut self, command: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(String::from_utf8_lossy(command).as_ref())
            .output()
            .map_err(|e| e.to_string())?;
        let mut line: Vec<u8> = Vec::new();
        for &b in &out.stdout {
            if line.len() == 63 {
                break;
            }
            line.push(b);
            if b == b'\n' {
                break;
            }
        }
        Ok((!line.is_empty()).then_some(line))
    }
    fn message(&mut self, line: &str) {
        self.messages.push(line.to_string());
    }
}

/// What a transaction sent, as PostgreSQL logs it with `log_statement = all`, and how
/// it ended.
#[derive(Debug, Default)]
pub struct Ran {
    pub log: Vec<String>,
    pub ends: Vec<TxnEnd>,
    pub aborted: Option<String>,
    pub finished: bool,
}

/// A fake server's answer to an SQL text (simple) or statement text (extended/prepared).
pub type Respond<'a> = dyn FnMut(&str, &[Option<String>]) -> FakeReply + 'a;

fn quote(p: &Option<String>) -> String {
    match p {
        None => "NULL".into(),
        Some(s) => format!("'{}'", s.replace('\'', "''")),
    }
}

/// Runs one transaction of `script` on `client`, answering with `respond`.
pub fn run_transaction(
    client: &mut Client,
    script: usize,
    host: &mut TestHost,
    now_us: &mut i64,
    respond: &mut Respond<'_>,
    ran: &mut Ran,
) {
    client.begin(script, *now_us);
    let program = client.program().clone();
    let mut pending: Vec<(String, Vec<Option<String>>)> = Vec::new();
    loop {
        let mut cx = Context {
            now_us: *now_us,
            timer_exceeded: false,
            host,
        };
        let reply = match client.next(&mut cx) {
            Step::Sql(r) => {
                let (text, params, log) = match r.form {
                    SqlForm::Simple { text } => {
                        let t = String::from_utf8_lossy(text).into_owned();
                        (t.clone(), vec![], format!("statement: {t}"))
                    }
                    SqlForm::Extended { text, params } => {
                        let t = String::from_utf8_lossy(text).into_owned();
                        let p: Vec<_> = params
                            .iter()
                            .map(|p| p.map(|b| String::from_utf8_lossy(b).into_owned()))
                            .collect();
                        (t.clone(), p, format!("execute <unnamed>: {t}"))
                    }
                    SqlForm::Prepared { name, params } => {
                        let p: Vec<_> = params
                            .iter()
                            .map(|p| p.map(|b| String::from_utf8_lossy(b).into_owned()))
                            .collect();
                        let t = String::from_utf8_lossy(
                            program.scripts()[r.script].sql_text(r.command).unwrap(),
                        )
                        .into_owned();
                        (t.clone(), p, format!("execute {name}: {t}"))
                    }
                };
                ran.log.push(log);
                if !params.is_empty() {
                    let d: Vec<String> = params
                        .iter()
                        .enumerate()
                        .map(|(i, p)| format!("${} = {}", i + 1, quote(p)))
                        .collect();
                    ran.log.push(format!("parameters: {}", d.join(", ")));
                }
                if r.pipelined {
                    pending.push((text, params));
                    continue;
                }
                respond(&text, &params)
            }
            Step::Prepare { name, text } => {
                ran.log
                    .push(format!("prepare {name}: {}", String::from_utf8_lossy(text)));
                FakeReply {
                    results: vec![],
                    status: TxStatus::Idle,
                }
            }
            Step::PipelineSync => continue,
            Step::EndPipeline => {
                let mut all = FakeReply {
                    results: vec![],
                    status: TxStatus::Idle,
                };
                for (t, p) in pending.drain(..) {
                    let r = respond(&t, &p);
                    all.status = r.status;
                    let err = r.results.iter().any(|x| matches!(x, FakeResult::Error(..)));
                    all.results.extend(r.results);
                    if err {
                        break;
                    }
                }
                all
            }
            Step::Sync => FakeReply {
                results: vec![],
                status: TxStatus::Idle,
            },
            Step::Rollback => {
                ran.log.push("statement: ROLLBACK".into());
                FakeReply::ok(TxStatus::Idle)
            }
            Step::Sleep { until_us } => {
                *now_us = until_us;
                continue;
            }
            Step::End(e) => {
                ran.ends.push(e);
                continue;
            }
            Step::Finished => {
                ran.finished = true;
                return;
            }
            Step::Aborted(a) => {
                ran.aborted = Some(a.message.clone());
                return;
            }
            Step::Idle => return,
        };
        *now_us += 10;
        let mut cx = Context {
            now_us: *now_us,
            timer_exceeded: false,
            host,
        };
        client.on_reply(&reply, &mut cx);
    }
}

/// A server that answers everything with a command completion, tracking BEGIN/END.
pub fn plain_server() -> impl FnMut(&str, &[Option<String>]) -> FakeReply {
    let mut in_block = false;
    move |text: &str, _: &[Option<String>]| {
        let t = text.trim_start().to_ascii_uppercase();
        if t.starts_with("BEGIN") || t.starts_with("START") {
            in_block = true;
        } else if t.starts_with("END") || t.starts_with("COMMIT") || t.starts_with("ROLLBACK") {
            in_block = false;
        }
        FakeReply::ok(if in_block {
            TxStatus::InBlock
        } else {
            TxStatus::Idle
        })
    }
}
