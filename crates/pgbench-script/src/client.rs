//! One client's interpreter: pgbench's connection state machine
//! (`advanceConnectionState`, `executeMetaCommand`, `readCommandResponse`) without the
//! connection. A driver asks [`Client::next`] what to do, does it (send SQL, prepare,
//! sleep until, roll back), reports replies with [`Client::on_reply`], and counts the
//! transactions [`Step::End`] reports. Expressions, substitution and parameters are
//! computed here into buffers the client reuses, so a transaction allocates nothing
//! once the buffers have grown.
//!
//! Over 1,000 lines: one state machine, as pgbench's is one function; its phases share the
//! client's buffers and counters, and the data it exchanges with a driver is in
//! [`crate::exchange`].

use std::sync::Arc;

use crate::eval::{EvalContext, EvalError, eval};
use crate::expr::Expr;
use crate::prng::PgPrng;
use crate::program::{Program, QueryMode};
use crate::script::{CommandKind, ShellArg, SleepTime, SleepUnit};
use crate::sql::ParamBuf;
use crate::value::{Value, strtol};
use crate::vars::{VarId, Vars, valid_variable_name};

pub use crate::exchange::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IfState {
    True,
    False,
    Ignored,
    ElseTrue,
    ElseFalse,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EStatus {
    None,
    Meta,
    Serialization,
    Deadlock,
    OtherSql,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    StartCommand,
    SkipCommand,
    WaitResult,
    WaitPrepare,
    Sleep,
    EndCommand,
    Error,
    WaitSync,
    AfterSync,
    WaitRollback,
    EndTx,
    AfterEnd,
    Aborted,
    Finished,
}

/// What [`Client::next`] returns, before it borrows the client.
enum Out {
    Sql { pipelined: bool, wants_rows: bool },
    Prepare(usize),
    PipelineSync,
    EndPipeline,
    Sync,
    Rollback,
    Sleep(i64),
    End(TxnEnd),
    Finished,
    Aborted,
    Idle,
}

/// One client's interpreter state (pgbench's `CState` less the connection).
pub struct Client {
    program: Arc<Program>,
    id: usize,
    options: ClientOptions,
    vars: Vars,
    rng: PgPrng,
    saved_rng: PgPrng,
    cstack: Vec<IfState>,
    script: usize,
    command: usize,
    phase: Phase,
    estatus: EStatus,
    tries: u32,
    prepared: Vec<Vec<bool>>,
    /// Commands of a `\startpipeline` still to prepare from here (prepared mode).
    prep_cursor: Option<usize>,
    /// The command being prepared.
    preparing: usize,
    /// The prepare just done was for the SQL command at `command`.
    resume_send: bool,
    pipeline: bool,
    tx_status: TxStatus,
    txn_scheduled: i64,
    stmt_begin: i64,
    sleep_until: i64,
    sql_buf: Vec<u8>,
    params: ParamBuf,
    stats: Vec<Vec<CommandStats>>,
    abort: Option<ClientAbort>,
}

impl Client {
    /// Client `id` (`:client_id`) of a run of `program`, drawing from `rng` (its entry
    /// of [`crate::Startup::clients`]).
    pub fn new(
        program: Arc<Program>,
        id: usize,
        rng: PgPrng,
        auto: AutoValues,
        options: ClientOptions,
    ) -> Client {
        let mut vars = Vars::new(program.interner.len());
        for (id, v) in &program.defines {
            vars.set_text(*id, v);
        }
        let a = program.auto;
        for (slot, v) in [
            (a.scale, Value::Int(auto.scale)),
            (a.client_id, Value::Int(id as i64)),
            (a.default_seed, Value::Int(auto.default_seed as i64)),
            (a.random_seed, Value::Int(auto.random_seed as i64)),
        ] {
            if !vars.is_defined(slot) {
                vars.set_value(slot, v);
            }
        }
        let prepared = program
            .scripts
            .iter()
            .map(|s| vec![false; s.commands().len()])
            .collect();
        let stats = program
            .scripts
            .iter()
            .map(|s| vec![CommandStats::default(); s.commands().len()])
            .collect();
        Client {
            program,
            id,
            options,
            vars,
            rng,
            saved_rng: rng,
            cstack: Vec::new(),
            script: 0,
            command: 0,
            phase: Phase::Idle,
            estatus: EStatus::None,
            tries: 1,
            prepared,
            prep_cursor: None,
            preparing: 0,
            resume_send: false,
            pipeline: false,
            tx_status: TxStatus::Idle,
            txn_scheduled: 0,
            stmt_begin: 0,
            sleep_until: 0,
            sql_buf: Vec::new(),
            params: ParamBuf::default(),
            stats,
            abort: None,
        }
    }

    /// The client's id.
    pub fn id(&self) -> usize {
        self.id
    }

    /// The program it runs.
    pub fn program(&self) -> &Arc<Program> {
        &self.program
    }

    /// Per script, per command figures so far.
    pub fn command_stats(&self) -> &[Vec<CommandStats>] {
        &self.stats
    }

    /// The value of variable `name`, if the scripts know it and it is defined (tests,
    /// reports).
    pub fn variable(&mut self, name: &str) -> Option<Value> {
        let id = self.program.interner.get(name.as_bytes())?;
        self.vars.value(id).ok()
    }

    /// The client's random state (`cs_func_rs`).
    pub fn rng(&self) -> PgPrng {
        self.rng
    }

    /// A new connection (`-C`, or a reconnect): nothing is prepared on it, no pipeline,
    /// no transaction.
    pub fn on_new_connection(&mut self) {
        for p in &mut self.prepared {
            p.iter_mut().for_each(|b| *b = false);
        }
        self.pipeline = false;
        self.tx_status = TxStatus::Idle;
    }

    /// Starts a transaction running script `script` (chosen with
    /// [`Program::choose_script`]), scheduled at `scheduled_us` (`--rate`'s slot, or now).
    pub fn begin(&mut self, script: usize, scheduled_us: i64) {
        debug_assert!(matches!(self.phase, Phase::Idle));
        self.script = script;
        self.estatus = EStatus::None;
        self.tries = 1;
        self.saved_rng = self.rng;
        self.txn_scheduled = scheduled_us;
        self.command = 0;
        self.cstack.clear();
        self.phase = Phase::StartCommand;
    }

    fn commands_len(&self) -> usize {
        self.program.scripts[self.script].commands().len()
    }

    fn active(&self) -> bool {
        matches!(
            self.cstack.last(),
            None | Some(IfState::True) | Some(IfState::ElseTrue)
        )
    }

    fn abort_with(&mut self, message: String, sql_error: Option<SqlError>) {
        self.abort = Some(ClientAbort {
            script: self.script,
            command: self.command,
            message,
            sql_error,
        });
        self.phase = Phase::Aborted;
    }

    /// pgbench's `commandFailed`, after the lines of the error itself.
    fn command_failed(&mut self, detail: Option<String>, cmd: &str, what: &str) {
        let mut m = String::new();
        if let Some(d) = detail {
            m.push_str(&d);
            m.push('\n');
        }
        m.push_str(&format!(
            "client {} aborted in command {} ({}) of script {}; {}",
            self.id, self.command, cmd, self.script, what
        ));
        self.abort_with(m, None);
    }

    /// What to do next.
    pub fn next(&mut self, cx: &mut Context<'_>) -> Step<'_> {
        let out = loop {
            if let Some(o) = self.advance(cx) {
                break o;
            }
        };
        match out {
            Out::Sql {
                pipelined,
                wants_rows,
            } => {
                let s = &self.program.scripts[self.script];
                let c = s.sql[self.command].as_ref().expect("an SQL command");
                let form = match self.program.mode {
                    QueryMode::Simple => SqlForm::Simple {
                        text: &self.sql_buf,
                    },
                    QueryMode::Extended => SqlForm::Extended {
                        text: c.template.text(),
                        params: &self.params,
                    },
                    QueryMode::Prepared => SqlForm::Prepared {
                        name: c.prepared_name.as_deref().expect("prepared mode"),
                        params: &self.params,
                    },
                };
                Step::Sql(SqlRequest {
                    script: self.script,
                    command: self.command,
                    form,
                    pipelined,
                    wants_rows,
                })
            }
            Out::Prepare(cmd) => {
                let c = self.program.scripts[self.script].sql[cmd]
                    .as_ref()
                    .expect("an SQL command");
                Step::Prepare {
                    name: c.prepared_name.as_deref().expect("prepared mode"),
                    text: c.template.text(),
                }
            }
            Out::PipelineSync => Step::PipelineSync,
            Out::EndPipeline => Step::EndPipeline,
            Out::Sync => Step::Sync,
            Out::Rollback => Step::Rollback,
            Out::Sleep(t) => Step::Sleep { until_us: t },
            Out::End(e) => Step::End(e),
            Out::Finished => Step::Finished,
            Out::Aborted => Step::Aborted(self.abort.as_ref().expect("set when aborting")),
            Out::Idle => Step::Idle,
        }
    }

    /// One state transition; Some when the driver has something to do.
    fn advance(&mut self, cx: &mut Context<'_>) -> Option<Out> {
        match self.phase {
            Phase::Idle => Some(Out::Idle),
            Phase::Aborted => Some(Out::Aborted),
            Phase::Finished => Some(Out::Finished),
            Phase::WaitResult | Phase::WaitPrepare | Phase::WaitSync | Phase::WaitRollback => {
                panic!("a reply is expected: call on_reply")
            }
            Phase::StartCommand => self.start_command(cx),
            Phase::SkipCommand => {
                self.skip_commands();
                None
            }
            Phase::Sleep => {
                if cx.now_us < self.sleep_until {
                    return Some(Out::Sleep(self.sleep_until));
                }
                self.phase = Phase::EndCommand;
                None
            }
            Phase::EndCommand => {
                let us = (cx.now_us - self.stmt_begin) as f64;
                self.stats[self.script][self.command].add(us);
                self.command += 1;
                self.phase = if self.active() {
                    Phase::StartCommand
                } else {
                    Phase::SkipCommand
                };
                None
            }
            Phase::Error => {
                self.cstack.clear();
                if self.pipeline {
                    self.phase = Phase::WaitSync;
                    return Some(Out::Sync);
                }
                self.phase = Phase::AfterSync;
                None
            }
            Phase::AfterSync => {
                if self.tx_status != TxStatus::Idle {
                    self.phase = Phase::WaitRollback;
                    return Some(Out::Rollback);
                }
                self.decide_retry(cx);
                None
            }
            Phase::EndTx => {
                let status = match self.estatus {
                    EStatus::Serialization => TxnStatus::SerializationFailure,
                    EStatus::Deadlock => TxnStatus::DeadlockFailure,
                    _ => TxnStatus::Success,
                };
                self.phase = Phase::AfterEnd;
                Some(Out::End(TxnEnd {
                    script: self.script,
                    status,
                    tries: self.tries,
                }))
            }
            Phase::AfterEnd => {
                if self.tx_status != TxStatus::Idle {
                    self.abort_with(
                        format!(
                            "client {} aborted: end of script reached without completing the last transaction",
                            self.id
                        ),
                        None,
                    );
                    return None;
                }
                self.phase = Phase::Idle;
                None
            }
        }
    }

    /// pgbench's `CSTATE_SKIP_COMMAND`: commands of a false branch, up to what must run.
    fn skip_commands(&mut self) {
        loop {
            let kind = &self.program.scripts[self.script].commands()[self.command].kind;
            let top = *self.cstack.last().expect("skipping inside an \\if");
            match kind {
                CommandKind::If(_)
                | CommandKind::Elif(_)
                | CommandKind::Else
                | CommandKind::Endif => match top {
                    IfState::False => match kind {
                        CommandKind::If(_) => {
                            self.cstack.push(IfState::Ignored);
                            self.command += 1;
                        }
                        CommandKind::Elif(_) => self.phase = Phase::StartCommand,
                        CommandKind::Else => {
                            *self.cstack.last_mut().expect("non-empty") = IfState::ElseTrue;
                            self.phase = Phase::StartCommand;
                            self.command += 1;
                        }
                        _ => {
                            self.cstack.pop();
                            if self.active() {
                                self.phase = Phase::StartCommand;
                            }
                            self.command += 1;
                        }
                    },
                    _ => {
                        match kind {
                            CommandKind::If(_) => self.cstack.push(IfState::Ignored),
                            CommandKind::Endif => {
                                self.cstack.pop();
                                if self.active() {
                                    self.phase = Phase::StartCommand;
                                }
                            }
                            _ => {}
                        }
                        self.command += 1;
                    }
                },
                _ => self.command += 1,
            }
            if self.phase != Phase::SkipCommand {
                return;
            }
        }
    }

    fn start_command(&mut self, cx: &mut Context<'_>) -> Option<Out> {
        if self.command >= self.commands_len() {
            if self.pipeline {
                self.abort_with(
                    format!(
                        "client {} aborted: end of script reached with pipeline open",
                        self.id
                    ),
                    None,
                );
                return None;
            }
            self.phase = Phase::EndTx;
            return None;
        }
        let program = Arc::clone(&self.program);
        let script = &program.scripts[self.script];
        let cmd = &script.commands()[self.command];
        if !std::mem::take(&mut self.resume_send) {
            self.stmt_begin = cx.now_us;
        }
        match &cmd.kind {
            CommandKind::Sql { store, .. } => {
                if self.pipeline
                    && let Some(s) = store
                {
                    let (name, msg) = if s.aset {
                        ("aset", "\\aset is not allowed in pipeline mode")
                    } else {
                        ("gset", "\\gset is not allowed in pipeline mode")
                    };
                    self.command_failed(None, name, msg);
                    return None;
                }
                let compiled = script.sql[self.command].as_ref().expect("compiled");
                if self.program.mode == QueryMode::Prepared
                    && !self.prepared[self.script][self.command]
                    && let Some(out) = self.prepare(self.command, cx)
                {
                    self.resume_send = true;
                    return Some(out);
                }
                match self.program.mode {
                    QueryMode::Simple => {
                        self.sql_buf.clear();
                        compiled
                            .template
                            .write_simple(&self.vars, &mut self.sql_buf);
                        self.params.clear();
                    }
                    _ => self.params.fill(&compiled.template, &self.vars),
                }
                let pipelined = self.pipeline;
                self.phase = if pipelined {
                    Phase::EndCommand
                } else {
                    Phase::WaitResult
                };
                Some(Out::Sql {
                    pipelined,
                    wants_rows: store.is_some(),
                })
            }
            kind => self.meta(kind, &cmd.written_name, cx),
        }
    }

    /// Prepares SQL command `cmd` of the current script if it is not yet (pgbench's
    /// `prepareCommand`): Some(Prepare) to send; None when nothing is sent (inside a
    /// pipeline libpq refuses the synchronous prepare, which pgbench only reports).
    fn prepare(&mut self, cmd: usize, cx: &mut Context<'_>) -> Option<Out> {
        if self.prepared[self.script][cmd] || self.program.scripts[self.script].sql[cmd].is_none() {
            return None;
        }
        if self.pipeline {
            cx.host.message(
                "synchronous command execution functions are not allowed in pipeline mode",
            );
            self.prepared[self.script][cmd] = true;
            return None;
        }
        self.preparing = cmd;
        self.phase = Phase::WaitPrepare;
        Some(Out::Prepare(cmd))
    }

    fn eval_ctx<'s>(&'s mut self, debug: &'s mut dyn FnMut(&str)) -> EvalContext<'s> {
        EvalContext {
            vars: &mut self.vars,
            names: &self.program.interner,
            rng: &mut self.rng,
            debug,
            script: self.script,
            command: self.command,
        }
    }

    fn evaluate(&mut self, e: &Expr, cx: &mut Context<'_>) -> Result<Value, EvalError> {
        let host = &mut *cx.host;
        let mut debug = |line: &str| host.message(line);
        let mut ecx = self.eval_ctx(&mut debug);
        eval(e, &mut ecx)
    }

    /// Sets `var` (named `name`) as pgbench's `putVariable*` does: a variable is
    /// created only under a valid name.
    fn assign(&mut self, var: VarId, name: &[u8], v: Value) -> bool {
        if !self.vars.is_defined(var) && !valid_variable_name(name) {
            return false;
        }
        self.vars.set_value(var, v);
        true
    }

    fn meta(&mut self, kind: &CommandKind, written: &str, cx: &mut Context<'_>) -> Option<Out> {
        match kind {
            CommandKind::Sleep { time, unit } => {
                let usec = match time {
                    SleepTime::Literal(n) => *n,
                    SleepTime::Var { id, name } => {
                        let mut text = Vec::new();
                        if !self.vars.write_text(*id, &mut text) {
                            let d = format!(
                                "{written}: undefined variable \"{}\"",
                                String::from_utf8_lossy(name)
                            );
                            self.command_failed(
                                Some(d),
                                "sleep",
                                "execution of meta-command failed",
                            );
                            return None;
                        }
                        let n = crate::value::atoi(&text);
                        if n == 0 && !text.first().is_some_and(u8::is_ascii_digit) {
                            let d = format!(
                                "{written}: invalid sleep time \"{}\" for variable \"{}\"",
                                String::from_utf8_lossy(&text),
                                String::from_utf8_lossy(name)
                            );
                            self.command_failed(
                                Some(d),
                                "sleep",
                                "execution of meta-command failed",
                            );
                            return None;
                        }
                        n
                    }
                };
                let usec = match unit {
                    SleepUnit::Micros => usec,
                    SleepUnit::Millis => usec.wrapping_mul(1000),
                    SleepUnit::Seconds => usec.wrapping_mul(1_000_000),
                };
                self.sleep_until = cx.now_us + usec as i64;
                self.phase = Phase::Sleep;
                None
            }
            CommandKind::Set { var, name, expr } => {
                match self.evaluate(expr, cx) {
                    Err(EvalError(d)) => {
                        self.command_failed(d, written, "evaluation of meta-command failed")
                    }
                    Ok(v) => {
                        if self.assign(*var, name, v) {
                            self.phase = Phase::EndCommand;
                        } else {
                            let d = format!(
                                "{written}: invalid variable name: \"{}\"",
                                String::from_utf8_lossy(name)
                            );
                            self.command_failed(
                                Some(d),
                                "set",
                                "assignment of meta-command failed",
                            );
                        }
                    }
                }
                None
            }
            CommandKind::If(e) => {
                match self.evaluate(e, cx) {
                    Err(EvalError(d)) => {
                        self.command_failed(d, written, "evaluation of meta-command failed")
                    }
                    Ok(v) => {
                        self.cstack.push(if v.truth() {
                            IfState::True
                        } else {
                            IfState::False
                        });
                        self.phase = Phase::EndCommand;
                    }
                }
                None
            }
            CommandKind::Elif(e) => {
                if self.cstack.last() == Some(&IfState::True) {
                    *self.cstack.last_mut().expect("non-empty") = IfState::Ignored;
                    self.phase = Phase::EndCommand;
                    return None;
                }
                match self.evaluate(e, cx) {
                    Err(EvalError(d)) => {
                        self.command_failed(d, written, "evaluation of meta-command failed")
                    }
                    Ok(v) => {
                        *self.cstack.last_mut().expect("checked by the parser") = if v.truth() {
                            IfState::True
                        } else {
                            IfState::False
                        };
                        self.phase = Phase::EndCommand;
                    }
                }
                None
            }
            CommandKind::Else => {
                if let Some(top @ IfState::True) = self.cstack.last_mut() {
                    *top = IfState::ElseFalse;
                }
                self.phase = Phase::EndCommand;
                None
            }
            CommandKind::Endif => {
                self.cstack.pop();
                self.phase = Phase::EndCommand;
                None
            }
            CommandKind::Shell { args } => {
                match self.shell(None, args, cx) {
                    Ok(()) => self.phase = Phase::EndCommand,
                    Err(d) => self.command_failed(d, "shell", "execution of meta-command failed"),
                }
                None
            }
            CommandKind::SetShell { var, name, args } => {
                match self.shell(Some((*var, name.as_slice())), args, cx) {
                    Ok(()) => self.phase = Phase::EndCommand,
                    Err(d) => {
                        self.command_failed(d, "setshell", "execution of meta-command failed")
                    }
                }
                None
            }
            CommandKind::StartPipeline => {
                if self.program.mode == QueryMode::Simple {
                    self.command_failed(
                        None,
                        "startpipeline",
                        "cannot use pipeline mode with the simple query protocol",
                    );
                    return None;
                }
                if self.program.mode == QueryMode::Prepared
                    && !self.prepared[self.script][self.command]
                {
                    // pgbench's prepareCommandsInPipeline: every command up to the first
                    // \endpipeline, before the pipeline starts.
                    let n = self.commands_len();
                    let mut j = self.prep_cursor.unwrap_or(self.command + 1);
                    while j < n {
                        if self.program.scripts[self.script].commands()[j].kind
                            == CommandKind::EndPipeline
                        {
                            break;
                        }
                        let out = self.prepare(j, cx);
                        j += 1;
                        if let Some(out) = out {
                            self.prep_cursor = Some(j);
                            self.resume_send = true;
                            return Some(out);
                        }
                    }
                    self.prep_cursor = None;
                    self.prepared[self.script][self.command] = true;
                }
                if self.pipeline {
                    self.command_failed(None, "startpipeline", "already in pipeline mode");
                    return None;
                }
                self.pipeline = true;
                self.phase = Phase::EndCommand;
                None
            }
            CommandKind::SyncPipeline => {
                if !self.pipeline {
                    self.command_failed(None, "syncpipeline", "not in pipeline mode");
                    return None;
                }
                self.phase = Phase::EndCommand;
                Some(Out::PipelineSync)
            }
            CommandKind::EndPipeline => {
                if !self.pipeline {
                    self.command_failed(None, "endpipeline", "not in pipeline mode");
                    return None;
                }
                self.phase = Phase::WaitResult;
                Some(Out::EndPipeline)
            }
            CommandKind::Sql { .. } => unreachable!("SQL handled by the caller"),
        }
    }

    /// pgbench's `runShellCommand`: the words joined with spaces (`:name` a variable's
    /// text, `::x` the text `:x`), under 256 bytes; `\setshell` stores the first line's
    /// integer as a C int.
    fn shell(
        &mut self,
        target: Option<(VarId, &[u8])>,
        args: &[ShellArg],
        cx: &mut Context<'_>,
    ) -> Result<(), Option<String>> {
        let first = match &args[0] {
            ShellArg::Literal(w) | ShellArg::Var { written: w, .. } => {
                String::from_utf8_lossy(w).into_owned()
            }
        };
        let mut command = Vec::with_capacity(64);
        for (i, a) in args.iter().enumerate() {
            let mut arg = Vec::new();
            match a {
                ShellArg::Literal(w) => arg.extend_from_slice(w),
                ShellArg::Var { id, written } => {
                    if !self.vars.write_text(*id, &mut arg) {
                        return Err(Some(format!(
                            "{first}: undefined variable \"{}\"",
                            String::from_utf8_lossy(written)
                        )));
                    }
                }
            }
            if command.len() + arg.len() + usize::from(i > 0) >= 255 {
                return Err(Some(format!("{first}: shell command is too long")));
            }
            if i > 0 {
                command.push(b' ');
            }
            command.extend_from_slice(&arg);
        }
        let Some((var, name)) = target else {
            return match cx.host.shell(&command) {
                Ok(()) => Ok(()),
                Err(_) if cx.timer_exceeded => Err(None),
                Err(_) => Err(Some(format!("{first}: could not launch shell command"))),
            };
        };
        let line = match cx.host.shell_output(&command) {
            Err(_) => return Err(Some(format!("{first}: could not launch shell command"))),
            Ok(None) if cx.timer_exceeded => return Err(None),
            Ok(None) => {
                return Err(Some(format!(
                    "{first}: could not read result of shell command"
                )));
            }
            Ok(Some(l)) => l,
        };
        let (v, used) = strtol(&line);
        let mut end = used;
        while end < line.len() && matches!(line[end], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
            end += 1;
        }
        if line.is_empty() || end != line.len() {
            return Err(Some(format!(
                "{first}: shell command must return an integer (not \"{}\")",
                String::from_utf8_lossy(&line)
            )));
        }
        if !self.assign(var, name, Value::Int(v as i32 as i64)) {
            return Err(Some(format!(
                "setshell: invalid variable name: \"{}\"",
                String::from_utf8_lossy(name)
            )));
        }
        Ok(())
    }

    /// Whether the reply to the SQL command just sent must carry rows' names and values.
    pub fn wants_rows(&self) -> bool {
        matches!(
            &self.program.scripts[self.script].commands()[self.command].kind,
            CommandKind::Sql { store: Some(_), .. }
        )
    }

    /// The reply to the last [`Step::Sql`], [`Step::Prepare`], [`Step::EndPipeline`],
    /// [`Step::Sync`] or [`Step::Rollback`].
    pub fn on_reply(&mut self, reply: &dyn Reply, cx: &mut Context<'_>) {
        self.tx_status = reply.status();
        match self.phase {
            Phase::WaitPrepare => {
                if let Some(e) = first_error(reply) {
                    cx.host.message(&format!("ERROR:  {}", e.message));
                }
                self.prepared[self.script][self.preparing] = true;
                self.phase = Phase::StartCommand;
            }
            Phase::WaitResult => {
                let in_pipeline = self.pipeline;
                if self.read_response(reply, in_pipeline, cx) {
                    if in_pipeline {
                        self.pipeline = false;
                    }
                    self.phase = Phase::EndCommand;
                } else if matches!(self.estatus, EStatus::Serialization | EStatus::Deadlock) {
                    self.phase = Phase::Error;
                } else if self.phase != Phase::Aborted {
                    self.phase = Phase::Aborted;
                }
            }
            Phase::WaitSync => {
                self.pipeline = false;
                self.phase = Phase::AfterSync;
            }
            Phase::WaitRollback => {
                if let Some(e) = first_error(reply) {
                    self.abort_with(
                        format!(
                            "client {} aborted while rolling back the transaction after an error; ERROR:  {}",
                            self.id, e.message
                        ),
                        Some(e),
                    );
                    return;
                }
                self.decide_retry(cx);
            }
            _ => panic!("no reply expected"),
        }
    }

    /// pgbench's `readCommandResponse`; false on an error (the client then retries or
    /// aborts, the abort already set).
    fn read_response(&mut self, reply: &dyn Reply, pipeline: bool, cx: &mut Context<'_>) -> bool {
        let program = Arc::clone(&self.program);
        let store = match &program.scripts[self.script].commands()[self.command].kind {
            CommandKind::Sql { store, .. } if !pipeline => store.as_ref(),
            _ => None,
        };
        let n = reply.results();
        if n == 0 && !pipeline {
            let m = format!("client {} command {}: no results", self.id, self.command);
            self.abort_with(m, None);
            return false;
        }
        for q in 0..n {
            let is_last = q + 1 == n;
            let gset = store.is_some_and(|s| !s.aset);
            let aset = store.is_some_and(|s| s.aset);
            match reply.result(q) {
                ResultKind::Command => {
                    if is_last && gset {
                        self.row_count_error(q, 0);
                        return false;
                    }
                }
                ResultKind::Tuples { rows } => {
                    if (is_last && gset) || aset {
                        if gset && rows != 1 {
                            self.row_count_error(q, rows);
                            return false;
                        }
                        if aset && rows == 0 {
                            continue;
                        }
                        let prefix = &store.expect("gset or aset").prefix;
                        if !self.store_row(reply, q, rows - 1, prefix, aset) {
                            return false;
                        }
                    }
                }
                ResultKind::Copy => {
                    self.abort_with("COPY is not supported in pgbench, aborting".into(), None);
                    return false;
                }
                ResultKind::Error { sqlstate, message } => {
                    self.estatus = match sqlstate {
                        "40001" => EStatus::Serialization,
                        "40P01" => EStatus::Deadlock,
                        _ => EStatus::OtherSql,
                    };
                    let e = SqlError {
                        sqlstate: sqlstate.into(),
                        message: message.into(),
                    };
                    if matches!(self.estatus, EStatus::Serialization | EStatus::Deadlock) {
                        if self.options.verbose_errors {
                            cx.host.message(&format!(
                                "client {} got an error in command {} (SQL) of script {}; ERROR:  {}",
                                self.id, self.command, self.script, message
                            ));
                        }
                        return false;
                    }
                    let m = format!(
                        "client {} script {} aborted in command {} query {}: ERROR:  {}",
                        self.id,
                        self.script,
                        self.command,
                        if pipeline { 0 } else { q },
                        message
                    );
                    self.abort_with(m, Some(e));
                    return false;
                }
            }
        }
        true
    }

    fn row_count_error(&mut self, q: usize, rows: usize) {
        self.estatus = EStatus::Meta;
        let m = format!(
            "client {} script {} command {} query {}: expected one row, got {}",
            self.id, self.script, self.command, q, rows
        );
        self.abort_with(m, None);
    }

    /// Stores row `row` of result `q` into `prefix` + column name, as strings.
    fn store_row(
        &mut self,
        reply: &dyn Reply,
        q: usize,
        row: usize,
        prefix: &[u8],
        aset: bool,
    ) -> bool {
        let mut name = Vec::with_capacity(prefix.len() + 16);
        for col in 0..reply.columns(q) {
            name.clear();
            name.extend_from_slice(prefix);
            name.extend_from_slice(reply.column_name(q, col));
            // PQgetvalue gives "" for NULL.
            let value = reply.value(q, row, col).unwrap_or_default();
            let id = self.program.interner.get(&name);
            let ok = match id {
                Some(id) if self.vars.is_defined(id) => true,
                _ => valid_variable_name(&name),
            };
            if !ok {
                self.estatus = EStatus::Meta;
                let n = String::from_utf8_lossy(&name);
                let m = format!(
                    "{}: invalid variable name: \"{n}\"\nclient {} script {} command {} query {}: error storing into variable {n}",
                    if aset { "aset" } else { "gset" },
                    self.id,
                    self.script,
                    self.command,
                    q
                );
                self.abort_with(m, None);
                return false;
            }
            // A name no script reads cannot be observed: it is not kept.
            if let Some(id) = id {
                self.vars.set_text(id, value);
            }
        }
        true
    }

    /// After a retryable error, once out of any block: retry, fail, or stop (`-T`).
    fn decide_retry(&mut self, cx: &mut Context<'_>) {
        if cx.timer_exceeded {
            self.phase = Phase::Finished;
            return;
        }
        let can_retry = matches!(self.estatus, EStatus::Serialization | EStatus::Deadlock)
            && !(self.options.max_tries != 0 && self.tries >= self.options.max_tries)
            && self
                .options
                .latency_limit_us
                .is_none_or(|l| cx.now_us - self.txn_scheduled <= l);
        let stat = &mut self.stats[self.script][self.command];
        if can_retry {
            stat.retries += 1;
            if self.options.verbose_errors {
                cx.host.message(&self.try_message(true));
            }
            self.tries += 1;
            self.rng = self.saved_rng;
            self.command = 0;
            self.estatus = EStatus::None;
            self.phase = Phase::StartCommand;
        } else {
            stat.failures += 1;
            if self.options.verbose_errors {
                cx.host.message(&self.try_message(false));
            }
            self.phase = Phase::EndTx;
        }
    }

    fn try_message(&self, retry: bool) -> String {
        let mut m = format!(
            "client {} {} (try {}",
            self.id,
            if retry {
                "repeats the transaction after the error"
            } else {
                "ends the failed transaction"
            },
            self.tries
        );
        if self.options.max_tries != 0 {
            m.push_str(&format!("/{}", self.options.max_tries));
        }
        m.push(')');
        m
    }
}

fn first_error(reply: &dyn Reply) -> Option<SqlError> {
    (0..reply.results()).find_map(|i| match reply.result(i) {
        ResultKind::Error { sqlstate, message } => Some(SqlError {
            sqlstate: sqlstate.into(),
            message: message.into(),
        }),
        _ => None,
    })
}
