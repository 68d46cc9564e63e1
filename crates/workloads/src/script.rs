//! pgbench custom scripts (`-f FILE[@W]`, `-b NAME[@W]`) as a runner workload: each
//! client runs pgbench-script's interpreter ([`csdchar_pgbench_script::Client`]) as a
//! [`Session`] of the measured loop, so scripts run on both client drivers with the
//! loop's pacing, warm-up, intervals and I/O sampling. Messages are encoded from the
//! interpreter's buffers ([`csdchar_pgwire::raw`]), replies read in place; what pgbench
//! counts per script and per command is gathered into a [`ScriptTotals`] per step.

use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use csdchar_core::result::script::{
    CommandStat, ScriptAbort, ScriptEntry, ScriptParams, ScriptStats, ScriptStep,
};
use csdchar_dbloop::event::{Protocol, StatementSet, Workload};
use csdchar_dbloop::session::{Session, SessionEnd, Turn};
use csdchar_pgbench_script::{
    AutoValues, Client, ClientOptions, CommandStats, Context, Host, PgPrng, Program, QueryMode,
    ResultKind, SqlForm, Step, TxStatus, TxnStatus,
};
use csdchar_pgwire::message::Reply;
use csdchar_pgwire::raw;

/// The scripts of a run and the options that change what they send or count.
#[derive(Debug, Clone)]
pub struct ScriptSpec {
    /// The scripts compiled for the query mode.
    pub program: Arc<Program>,
    /// The seed the clients' random states derive from (`--random-seed`, resolved).
    pub random_seed: u64,
    /// `:scale` (unless `-D` sets it).
    pub scale: i64,
    /// `-t`: transactions per client; None: until the step's time is up.
    pub transactions: Option<u64>,
    /// `--max-tries`.
    pub max_tries: u32,
    /// `--latency-limit` in µs (no retry once a transaction has run longer).
    pub latency_limit_us: Option<i64>,
    /// `--verbose-errors`.
    pub verbose_errors: bool,
    /// `--failures-detailed`: reports split failures into serialization and deadlock.
    pub failures_detailed: bool,
    /// `--exit-on-abort` (pgbench 18): a client's abort ends the run.
    pub exit_on_abort: bool,
    /// `-l`: pgbench's transaction log of each client.
    pub log: Option<crate::script_log::LogSpec>,
    /// `-D` as given (for the result).
    pub defines: Vec<String>,
    /// The tables the step snapshots and the study loads: named by `--script-tables` or
    /// found in the scripts ([`tables_in`]).
    pub tables: Vec<String>,
    /// The database schema (the connections' search_path).
    pub schema: String,
    /// `--script-init FILE`: SQL that creates and fills the scripts' tables, sent as one
    /// simple query at each load of a study; None: the tables are the user's, never loaded.
    pub init_sql: Option<String>,
    /// The fillfactor a load sets on the tables (`ALTER TABLE … SET (fillfactor)`, then
    /// `VACUUM FULL` rewrites them at it); None: left as the init SQL made them.
    pub fillfactor: Option<u8>,
}

impl ScriptSpec {
    /// The result's description of the scripts.
    pub fn params(&self) -> ScriptParams {
        ScriptParams {
            scripts: self
                .program
                .scripts()
                .iter()
                .map(|s| ScriptEntry {
                    name: s.name().to_string(),
                    weight: s.weight(),
                })
                .collect(),
            query_mode: self.program.mode().name().to_string(),
            random_seed: self.random_seed,
            scale: self.scale,
            max_tries: self.max_tries,
            transactions_per_client: self.transactions,
            defines: self.defines.clone(),
        }
    }

    /// The loop's protocol name for the query mode.
    pub fn protocol(&self) -> Protocol {
        match self.program.mode() {
            QueryMode::Simple => Protocol::Simple,
            QueryMode::Extended => Protocol::Extended,
            QueryMode::Prepared => Protocol::Prepared,
        }
    }

    /// Whether a reply must carry rows (`\gset`, `\aset`).
    fn keeps_rows(&self) -> bool {
        self.program.scripts().iter().any(|s| {
            s.commands().iter().any(|c| {
                matches!(
                    c.kind,
                    csdchar_pgbench_script::script::CommandKind::Sql { store: Some(_), .. }
                )
            })
        })
    }
}

/// Loads the scripts' tables: the init SQL (refused when one of the tables exists, unless
/// `force`, which drops them first), then each table the init made at the spec's
/// fillfactor (`ALTER TABLE … SET (fillfactor = N)`, `VACUUM FULL`, `ANALYZE`). Returns
/// the tables made.
pub async fn prepare(
    conninfo: &str,
    spec: &ScriptSpec,
    force: bool,
) -> Result<Vec<String>, csdchar_pgwire::error::DbError> {
    use csdchar_pgwire::error::DbError;
    let init = spec.init_sql.as_deref().ok_or_else(|| {
        DbError::invalid(
            "a script's tables are the user's: csdchar loads them only with --script-init FILE",
        )
    })?;
    if spec.tables.is_empty() {
        return Err(DbError::invalid(
            "the scripts name no table: name them with --script-tables",
        ));
    }
    let client = csdchar_pgwire::client::connect(conninfo).await?;
    let existing = crate::catalog::existing_tables(&client, &spec.schema, &spec.tables).await?;
    if !existing.is_empty() {
        if !force {
            return Err(DbError::new(
                csdchar_pgwire::error::DbErrorKind::ObjectsExist,
                format!(
                    "tables {} exist already in schema {}: pass --force to replace them",
                    existing.join(", "),
                    spec.schema
                ),
            ));
        }
        drop(client);
        crate::catalog::drop_tables(conninfo, &spec.schema, &spec.tables).await?;
        return Box::pin(prepare(conninfo, spec, false)).await;
    }
    crate::catalog::ensure_schema(&client, &spec.schema).await?;
    let err = csdchar_pgwire::error::db_err;
    client
        .batch_execute(init)
        .await
        .map_err(|e| err("--script-init", e))?;
    let made = crate::catalog::existing_tables(&client, &spec.schema, &spec.tables).await?;
    for t in &made {
        let q = format!(
            "\"{}\".\"{}\"",
            spec.schema.replace('"', "\"\""),
            t.replace('"', "\"\"")
        );
        if let Some(ff) = spec.fillfactor {
            client
                .batch_execute(&format!("ALTER TABLE {q} SET (fillfactor = {ff})"))
                .await
                .map_err(|e| err(&format!("setting the fillfactor of {t}"), e))?;
            client
                .batch_execute(&format!("VACUUM FULL {q}"))
                .await
                .map_err(|e| err(&format!("rewriting {t}"), e))?;
        }
        client
            .batch_execute(&format!("ANALYZE {q}"))
            .await
            .map_err(|e| err(&format!("analyzing {t}"), e))?;
    }
    Ok(made)
}

/// Per script: pgbench's counts and latency sums.
#[derive(Debug, Clone, Copy, Default)]
struct ScriptCounts {
    transactions: u64,
    serialization_failures: u64,
    deadlock_failures: u64,
    retried: u64,
    retries: u64,
    lat_sum_us: f64,
    lat_sum2_us: f64,
}

impl ScriptCounts {
    fn merge(&mut self, o: &ScriptCounts) {
        self.transactions += o.transactions;
        self.serialization_failures += o.serialization_failures;
        self.deadlock_failures += o.deadlock_failures;
        self.retried += o.retried;
        self.retries += o.retries;
        self.lat_sum_us += o.lat_sum_us;
        self.lat_sum2_us += o.lat_sum2_us;
    }
}

/// What a step's clients counted, gathered as each client ends.
#[derive(Debug, Default)]
pub struct ScriptTotals {
    scripts: Vec<ScriptCounts>,
    commands: Vec<Vec<CommandStats>>,
    aborted: Vec<ScriptAbort>,
    /// Lines pgbench would write to stderr (`debug()`, `--verbose-errors`, failed
    /// prepares), at most [`MAX_MESSAGES`].
    pub messages: Vec<String>,
    /// Each client's `-l` log text (client id, text), when asked.
    pub logs: Vec<(usize, Vec<u8>)>,
}

/// Lines kept of what clients would write to stderr.
pub const MAX_MESSAGES: usize = 1000;

impl ScriptTotals {
    /// The step's figures in the result's terms.
    pub fn step(&self, program: &Program) -> ScriptStep {
        let mut aborted = self.aborted.clone();
        aborted.sort_by_key(|a| a.client);
        let scripts = program
            .scripts()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let c = self.scripts.get(i).copied().unwrap_or_default();
                let n = c.transactions as f64;
                let mean = if n > 0.0 { c.lat_sum_us / n } else { 0.0 };
                let var = if n > 0.0 {
                    (c.lat_sum2_us / n - mean * mean).max(0.0)
                } else {
                    0.0
                };
                ScriptStats {
                    name: s.name().to_string(),
                    weight: s.weight(),
                    transactions: c.transactions,
                    serialization_failures: c.serialization_failures,
                    deadlock_failures: c.deadlock_failures,
                    retried: c.retried,
                    retries: c.retries,
                    latency_avg_ms: mean / 1000.0,
                    latency_stddev_ms: var.sqrt() / 1000.0,
                    commands: s
                        .commands()
                        .iter()
                        .enumerate()
                        .map(|(k, cmd)| {
                            let st = self
                                .commands
                                .get(i)
                                .and_then(|v| v.get(k))
                                .copied()
                                .unwrap_or_default();
                            CommandStat {
                                line: cmd.line as u32,
                                text: cmd.first_line.clone(),
                                executions: st.count,
                                latency_avg_ms: if st.count > 0 {
                                    st.sum_us / st.count as f64 / 1000.0
                                } else {
                                    0.0
                                },
                                failures: st.failures,
                                retries: st.retries,
                            }
                        })
                        .collect(),
                }
            })
            .collect::<Vec<_>>();
        let sum = |f: fn(&ScriptStats) -> u64| scripts.iter().map(f).sum::<u64>();
        ScriptStep {
            serialization_failures: sum(|s| s.serialization_failures),
            deadlock_failures: sum(|s| s.deadlock_failures),
            retried: sum(|s| s.retried),
            retries: sum(|s| s.retries),
            aborted_clients: aborted,
            scripts,
        }
    }
}

/// A step's workload and where its clients' figures gather.
pub fn workload(spec: &ScriptSpec, clients: u32) -> (Workload, Arc<Mutex<ScriptTotals>>) {
    let totals = Arc::new(Mutex::new(ScriptTotals::default()));
    let program = Arc::clone(&spec.program);
    // pgbench with -j equal to -c: one thread, so one script-choice state, per client.
    let startup = Arc::new(program.startup(spec.random_seed, clients as usize, clients as usize));
    let auto_seed = startup.default_seed.unwrap_or(0);
    let options = ClientOptions {
        max_tries: spec.max_tries,
        latency_limit_us: spec.latency_limit_us,
        verbose_errors: spec.verbose_errors,
    };
    let (scale, random_seed, limit) = (spec.scale, spec.random_seed, spec.transactions);
    let (log, exit_on_abort) = (spec.log, spec.exit_on_abort);
    let sink = Arc::clone(&totals);
    let factory = move |i: usize| -> Box<dyn Session> {
        let client = Client::new(
            Arc::clone(&program),
            i,
            startup.clients[i],
            AutoValues {
                scale,
                default_seed: auto_seed,
                random_seed,
            },
            options,
        );
        let mut s = ScriptSession::new(client, startup.threads[i].choose, limit, Arc::clone(&sink));
        s.exit_on_abort = exit_on_abort;
        s.log = log
            .map(|l| crate::script_log::TxnLog::new(l, i, startup.threads[i].sample, s.wall0_us));
        Box::new(s)
    };
    let w = Workload {
        statements: StatementSet::default(),
        sources: Box::new(|| Box::new(csdchar_dbloop::event::NoEvents)),
        retry_codes: &[],
        rollback_codes: &[],
        abandon_codes: &[],
        keeps_rows: spec.keeps_rows(),
        kinds: Vec::new(),
        // Nothing is prepared at connect: the interpreter prepares at first use.
        protocol: Protocol::Extended,
        seed: spec.random_seed,
        sessions: Some(Box::new(factory)),
    };
    (w, totals)
}

/// `\shell` and `\setshell` through `sh -c`; stderr lines kept for the step.
struct ProcessHost {
    totals: Arc<Mutex<ScriptTotals>>,
}

impl Host for ProcessHost {
    fn shell(&mut self, command: &[u8]) -> Result<(), String> {
        use std::os::unix::ffi::OsStrExt;
        let status = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(std::ffi::OsStr::from_bytes(command))
            .status()
            .map_err(|e| e.to_string())?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("{status}"))
        }
    }

    fn shell_output(&mut self, command: &[u8]) -> Result<Option<Vec<u8>>, String> {
        use std::os::unix::ffi::OsStrExt;
        let mut child = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(std::ffi::OsStr::from_bytes(command))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        if let Some(mut o) = child.stdout.take() {
            let _ = o.read_to_end(&mut out);
        }
        let _ = child.wait();
        if out.is_empty() {
            return Ok(None);
        }
        // fgets into 64 bytes: at most 63 bytes of the first line, its newline included.
        let end = out
            .iter()
            .position(|b| *b == b'\n')
            .map_or(out.len(), |p| p + 1)
            .min(63);
        out.truncate(end);
        Ok(Some(out))
    }

    fn message(&mut self, line: &str) {
        let mut t = self.totals.lock().expect("not poisoned");
        if t.messages.len() < MAX_MESSAGES {
            t.messages.push(line.to_string());
        }
    }
}

/// One result of a pipeline segment that ended in `\syncpipeline`, kept until
/// `\endpipeline`'s reply.
#[derive(Debug, Clone)]
enum Kept {
    Command,
    Tuples(usize),
    Error(String, String),
}

/// A reply as the interpreter reads it: the wire reply, after the results of earlier
/// pipeline segments.
struct ScriptReply<'r, 'a> {
    kept: &'r [Kept],
    reply: &'r Reply<'a>,
}

impl ScriptReply<'_, '_> {
    fn own(&self) -> usize {
        self.reply.completed.len() + usize::from(self.reply.error.is_some())
    }
}

impl csdchar_pgbench_script::Reply for ScriptReply<'_, '_> {
    fn results(&self) -> usize {
        self.kept.len() + self.own()
    }

    fn result(&self, i: usize) -> ResultKind<'_> {
        if let Some(k) = self.kept.get(i) {
            return match k {
                Kept::Command => ResultKind::Command,
                Kept::Tuples(rows) => ResultKind::Tuples { rows: *rows },
                Kept::Error(code, m) => ResultKind::Error {
                    sqlstate: code,
                    message: m,
                },
            };
        }
        let i = i - self.kept.len();
        match self.reply.completed.get(i) {
            Some(c) if c.returned_rows => ResultKind::Tuples {
                rows: c.rows as usize,
            },
            Some(_) => ResultKind::Command,
            None => match &self.reply.error {
                Some((code, m)) => ResultKind::Error {
                    sqlstate: code,
                    message: m,
                },
                None => ResultKind::Command,
            },
        }
    }

    fn columns(&self, i: usize) -> usize {
        match i.checked_sub(self.kept.len()) {
            Some(i) => self.reply.rows.statement(i).columns(),
            None => 0,
        }
    }

    fn column_name(&self, i: usize, col: usize) -> &[u8] {
        match i.checked_sub(self.kept.len()) {
            Some(i) => self.reply.rows.statement(i).column_name(col),
            None => b"",
        }
    }

    fn value(&self, i: usize, row: usize, col: usize) -> Option<&[u8]> {
        self.reply
            .rows
            .statement(i.checked_sub(self.kept.len())?)
            .get_bytes(row, col)
    }

    fn status(&self) -> TxStatus {
        match self.reply.status {
            b'T' => TxStatus::InBlock,
            b'E' => TxStatus::Failed,
            _ => TxStatus::Idle,
        }
    }
}

/// What the exchange in flight is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InFlight {
    /// The interpreter awaits its reply.
    Reply,
    /// A pipeline segment ended by `\syncpipeline`: its results are kept, the
    /// interpreter goes on.
    Segment,
}

/// One client: the interpreter and the figures it counts.
struct ScriptSession {
    client: Client,
    choose: PgPrng,
    host: ProcessHost,
    epoch: Instant,
    measured: Instant,
    txn_start: Instant,
    limit: Option<u64>,
    begun: u64,
    counts: Vec<ScriptCounts>,
    /// The interpreter's per-command figures when the measured time began.
    baseline: Option<Vec<Vec<CommandStats>>>,
    totals: Arc<Mutex<ScriptTotals>>,
    published: bool,
    in_flight: InFlight,
    kept: Vec<Kept>,
    /// The wall clock at `epoch`, µs since the Unix epoch (for `-l`).
    wall0_us: i64,
    /// `-l`'s log.
    log: Option<crate::script_log::TxnLog>,
    /// `--exit-on-abort`.
    exit_on_abort: bool,
}

impl ScriptSession {
    fn new(
        client: Client,
        choose: PgPrng,
        limit: Option<u64>,
        totals: Arc<Mutex<ScriptTotals>>,
    ) -> ScriptSession {
        let n = client.program().scripts().len();
        let now = Instant::now();
        ScriptSession {
            client,
            choose,
            host: ProcessHost {
                totals: Arc::clone(&totals),
            },
            epoch: now,
            measured: now,
            txn_start: now,
            limit,
            begun: 0,
            counts: vec![ScriptCounts::default(); n],
            baseline: None,
            totals,
            published: false,
            in_flight: InFlight::Reply,
            kept: Vec::new(),
            wall0_us: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as i64),
            log: None,
            exit_on_abort: false,
        }
    }

    fn us(&self, t: Instant) -> i64 {
        t.saturating_duration_since(self.epoch).as_micros() as i64
    }

    /// Runs the interpreter until the driver has something to do.
    fn drive(&mut self, now: Instant, timer_exceeded: bool, out: &mut BytesMut) -> Turn {
        let now_us = self.us(now);
        let id = self.client.id() as u32;
        loop {
            let mut cx = Context {
                now_us,
                timer_exceeded,
                host: &mut self.host,
            };
            let step = self.client.next(&mut cx);
            let encoded = match step {
                Step::Sql(r) => {
                    let e = match r.form {
                        SqlForm::Simple { text } => raw::query(out, text),
                        SqlForm::Extended { text, params } => raw::parse(out, "", text)
                            .and_then(|()| raw::bind_execute(out, "", params.iter(), true)),
                        SqlForm::Prepared { name, params } => {
                            raw::bind_execute(out, name, params.iter(), true)
                        }
                    };
                    if r.pipelined {
                        // Queued in `out`: sent with the pipeline's next Sync.
                        match e {
                            Ok(()) => continue,
                            Err(e) => Err(e),
                        }
                    } else {
                        if !matches!(r.form, SqlForm::Simple { .. }) {
                            raw::sync(out);
                        }
                        e.map(|()| InFlight::Reply)
                    }
                }
                Step::Prepare { name, text } => raw::parse(out, name, text).map(|()| {
                    raw::sync(out);
                    InFlight::Reply
                }),
                Step::PipelineSync => {
                    raw::sync(out);
                    Ok(InFlight::Segment)
                }
                Step::EndPipeline | Step::Sync => {
                    raw::sync(out);
                    Ok(InFlight::Reply)
                }
                Step::Rollback => raw::query(out, b"ROLLBACK").map(|()| InFlight::Reply),
                Step::Sleep { until_us } => {
                    let until = self.epoch + Duration::from_micros(until_us.max(0) as u64);
                    return Turn::WaitUntil(until);
                }
                Step::End(end) => {
                    let kind = end.script;
                    if self.txn_start >= self.measured {
                        if let Some(log) = self.log.as_mut() {
                            let lat =
                                now.saturating_duration_since(self.txn_start).as_secs_f64() * 1e6;
                            log.record(
                                self.wall0_us + now_us,
                                lat,
                                end.script,
                                end.status,
                                end.tries,
                            );
                        }
                        let c = &mut self.counts[end.script];
                        if end.tries > 1 {
                            c.retried += 1;
                            c.retries += u64::from(end.tries - 1);
                        }
                        match end.status {
                            TxnStatus::Success => {
                                let us =
                                    now.saturating_duration_since(self.txn_start).as_secs_f64()
                                        * 1e6;
                                c.transactions += 1;
                                c.lat_sum_us += us;
                                c.lat_sum2_us += us * us;
                            }
                            TxnStatus::SerializationFailure => c.serialization_failures += 1,
                            TxnStatus::DeadlockFailure => c.deadlock_failures += 1,
                        }
                    }
                    let failed = match end.status {
                        TxnStatus::Success => None,
                        TxnStatus::SerializationFailure => Some("40001"),
                        TxnStatus::DeadlockFailure => Some("40P01"),
                    };
                    // The interpreter may still abort (end of script inside a block):
                    // that shows at the next begin.
                    return Turn::End(SessionEnd { kind, failed });
                }
                Step::Finished => return Turn::Stop,
                Step::Aborted(a) => {
                    let abort = ScriptAbort {
                        client: id,
                        script: a.script as u32,
                        command: a.command as u32,
                        message: a.message.clone(),
                        sqlstate: a.sql_error.as_ref().map(|e| e.sqlstate.clone()),
                    };
                    let fail = self
                        .exit_on_abort
                        .then(|| format!("{} (--exit-on-abort: the run stops)", abort.message));
                    self.totals
                        .lock()
                        .expect("not poisoned")
                        .aborted
                        .push(abort);
                    return fail.map_or(Turn::Stop, Turn::Fail);
                }
                Step::Idle => return Turn::Stop,
            };
            return match encoded {
                Ok(f) => {
                    self.in_flight = f;
                    Turn::Exchange
                }
                Err(e) => {
                    let abort = ScriptAbort {
                        client: id,
                        script: 0,
                        command: 0,
                        message: format!("client {id} aborted: {e}"),
                        sqlstate: None,
                    };
                    self.totals
                        .lock()
                        .expect("not poisoned")
                        .aborted
                        .push(abort);
                    Turn::Stop
                }
            };
        }
    }
}

impl Session for ScriptSession {
    fn start(&mut self, measured: Instant) {
        self.measured = measured;
        // The first aggregation interval starts with the measured time.
        if let Some(log) = self.log.take() {
            let start =
                self.wall0_us + measured.saturating_duration_since(self.epoch).as_micros() as i64;
            self.log = Some(crate::script_log::TxnLog::new(
                log.spec(),
                log.client(),
                log.sample(),
                start,
            ));
        }
    }

    fn begin(&mut self, now: Instant, out: &mut BytesMut) -> Turn {
        // After a transaction's End the interpreter may abort (a block left open).
        let mut cx = Context {
            now_us: self.us(now),
            timer_exceeded: false,
            host: &mut self.host,
        };
        if !matches!(self.client.next(&mut cx), Step::Idle) {
            return self.drive(now, false, out);
        }
        if self.limit.is_some_and(|l| self.begun >= l) {
            return Turn::Stop;
        }
        if self.baseline.is_none() && now >= self.measured {
            self.baseline = Some(self.client.command_stats().to_vec());
        }
        self.begun += 1;
        self.txn_start = now;
        let script = self.client.program().choose_script(&mut self.choose);
        self.client.begin(script, self.us(now));
        self.drive(now, false, out)
    }

    fn on_reply(
        &mut self,
        reply: &Reply<'_>,
        now: Instant,
        timer_exceeded: bool,
        out: &mut BytesMut,
    ) -> Turn {
        if self.in_flight == InFlight::Segment {
            for c in reply.completed {
                self.kept.push(if c.returned_rows {
                    Kept::Tuples(c.rows as usize)
                } else {
                    Kept::Command
                });
            }
            if let Some((code, m)) = &reply.error {
                self.kept.push(Kept::Error(code.clone(), m.clone()));
            }
            return self.drive(now, timer_exceeded, out);
        }
        let kept = std::mem::take(&mut self.kept);
        let r = ScriptReply { kept: &kept, reply };
        let mut cx = Context {
            now_us: self.us(now),
            timer_exceeded,
            host: &mut self.host,
        };
        self.client.on_reply(&r, &mut cx);
        self.kept = kept;
        self.kept.clear();
        self.drive(now, timer_exceeded, out)
    }

    fn resume(&mut self, now: Instant, timer_exceeded: bool, out: &mut BytesMut) -> Turn {
        self.drive(now, timer_exceeded, out)
    }

    fn finish(&mut self) {
        if std::mem::replace(&mut self.published, true) {
            return;
        }
        let now_us = self.wall0_us + self.us(Instant::now());
        let log = self.log.take().map(|mut l| {
            l.finish(now_us);
            std::mem::take(&mut l.text)
        });
        let stats = self.client.command_stats();
        let mut t = self.totals.lock().expect("not poisoned");
        if let Some(text) = log {
            t.logs.push((self.client.id(), text));
        }
        if t.scripts.len() < self.counts.len() {
            t.scripts.resize(self.counts.len(), ScriptCounts::default());
        }
        for (a, b) in t.scripts.iter_mut().zip(&self.counts) {
            a.merge(b);
        }
        if t.commands.len() < stats.len() {
            t.commands = stats
                .iter()
                .map(|s| vec![CommandStats::default(); s.len()])
                .collect();
        }
        for (i, script) in stats.iter().enumerate() {
            for (k, s) in script.iter().enumerate() {
                let mut s = *s;
                if let Some(b) = self.baseline.as_ref().map(|b| b[i][k]) {
                    // What ran in the warm-up is not counted (min and max stay whole).
                    s.count -= b.count;
                    s.sum_us -= b.sum_us;
                    s.sum2_us -= b.sum2_us;
                    s.retries -= b.retries;
                    s.failures -= b.failures;
                } else {
                    // Nothing was measured.
                    continue;
                }
                t.commands[i][k].merge(&s);
            }
        }
    }
}

impl Drop for ScriptSession {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The tables a script's SQL names after FROM, JOIN, UPDATE, INTO, TABLE and
/// (TRUNCATE/LOCK/VACUUM/ANALYZE) — unquoted, lower-cased, schema prefix dropped, each
/// once, in order of appearance. A heuristic for the study and the snapshots; a
/// `--script-tables` list replaces it.
pub fn tables_in(program: &Program) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for s in program.scripts() {
        for (k, c) in s.commands().iter().enumerate() {
            if !c.is_sql() {
                continue;
            }
            let Some(text) = s.sql_text(k) else { continue };
            let text = String::from_utf8_lossy(text).to_lowercase();
            let words: Vec<&str> = text
                .split(|ch: char| !(ch.is_alphanumeric() || ch == '_' || ch == '.' || ch == '"'))
                .filter(|w| !w.is_empty())
                .collect();
            for w in words.windows(2) {
                if matches!(
                    w[0],
                    "from" | "join" | "update" | "into" | "table" | "truncate" | "lock"
                ) {
                    let name = w[1].trim_matches('"');
                    let name = name.rsplit('.').next().unwrap_or(name);
                    let keyword = matches!(
                        name,
                        "only" | "table" | "select" | "lateral" | "if" | "exists" | "unnest"
                    );
                    let ident = name
                        .chars()
                        .next()
                        .is_some_and(|ch| ch.is_alphabetic() || ch == '_')
                        && name.chars().all(|ch| ch.is_alphanumeric() || ch == '_');
                    if !keyword && ident && !found.iter().any(|f| f == name) {
                        found.push(name.to_string());
                    }
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use csdchar_pgbench_script::{ScriptSet, Version};

    #[test]
    fn tables_are_found_in_the_builtin_and_a_user_script() {
        let mut set = ScriptSet::new(Version::V15);
        set.add_builtin("tpcb-like", 1).unwrap();
        set.add_file(
            b"SELECT * FROM public.orders o JOIN \"items\" i ON true;\nINSERT INTO log SELECT 1;\n",
            "mine.sql",
            1,
        )
        .unwrap();
        let p = set.compile(QueryMode::Simple).unwrap();
        assert_eq!(
            tables_in(&p),
            [
                "pgbench_accounts",
                "pgbench_tellers",
                "pgbench_branches",
                "pgbench_history",
                "orders",
                "items",
                "log"
            ]
        );
    }
}
