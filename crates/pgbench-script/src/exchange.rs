//! What a driver and a [`crate::client::Client`] exchange: the requests the client makes
//! ([`Step`], [`SqlRequest`]), what the driver reports back ([`Reply`], [`ResultKind`],
//! [`TxStatus`]), the host the client asks for shell commands and the clock ([`Host`],
//! [`Context`]), and what it counts ([`TxnEnd`], [`CommandStats`], [`ClientAbort`]).
//! Plain data: the interpreter's state machine stays in `client`.

use crate::sql::ParamBuf;

/// The session's transaction status after an exchange (ReadyForQuery's byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxStatus {
    /// `I`: not in a transaction block.
    Idle,
    /// `T`: in a transaction block.
    InBlock,
    /// `E`: in a failed transaction block.
    Failed,
}

/// One result of an exchange, in the order libpq's `PQgetResult` returns them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultKind<'a> {
    /// A command without rows (or an empty query).
    Command,
    /// A result set of `rows` rows.
    Tuples {
        /// Its row count.
        rows: usize,
    },
    /// COPY IN/OUT started (pgbench refuses it).
    Copy,
    /// An error.
    Error {
        /// The SQLSTATE.
        sqlstate: &'a str,
        /// The primary message.
        message: &'a str,
    },
}

/// What a driver read for one exchange: its results in order (one per statement that
/// completed, then the error if one ended it; pipeline syncs left out), the rows'
/// names and values where [`Client::wants_rows`] asked for them, and the session's
/// status after it.
pub trait Reply {
    /// Number of results.
    fn results(&self) -> usize;
    /// Result `i`.
    fn result(&self, i: usize) -> ResultKind<'_>;
    /// Number of columns of result `i`.
    fn columns(&self, i: usize) -> usize;
    /// Name of column `col` of result `i`.
    fn column_name(&self, i: usize, col: usize) -> &[u8];
    /// Value of row `row`, column `col` of result `i` (None for NULL).
    fn value(&self, i: usize, row: usize, col: usize) -> Option<&[u8]>;
    /// The transaction status at the end of the exchange.
    fn status(&self) -> TxStatus;
}

/// What the interpreter needs from outside that is not a database exchange: shell
/// commands (`\shell`, `\setshell`) and the lines pgbench writes to stderr while a
/// client goes on (`debug()`, `--verbose-errors`, prepare failures).
pub trait Host {
    /// `\shell`: runs `command` with `sh -c` (C's `system`); Err with why when it could
    /// not run or did not exit 0.
    fn shell(&mut self, command: &[u8]) -> Result<(), String>;
    /// `\setshell`: runs `command` with `sh -c` (C's `popen`) and returns what `fgets`
    /// reads into 64 bytes: at most 63 bytes of the first line, its newline included;
    /// None when the output is empty. Err when it could not run.
    fn shell_output(&mut self, command: &[u8]) -> Result<Option<Vec<u8>>, String>;
    /// A line pgbench would write to stderr.
    fn message(&mut self, line: &str);
}

/// A [`Host`] that runs no shell command (they fail) and drops messages.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHost;

impl Host for NoHost {
    fn shell(&mut self, _: &[u8]) -> Result<(), String> {
        Err("shell commands are not available".into())
    }
    fn shell_output(&mut self, _: &[u8]) -> Result<Option<Vec<u8>>, String> {
        Err("shell commands are not available".into())
    }
    fn message(&mut self, _: &str) {}
}

/// The clock and host of one call.
pub struct Context<'h> {
    /// Now, in microseconds of any monotonic clock.
    pub now_us: i64,
    /// `-T`'s time is up (pgbench's `timer_exceeded`).
    pub timer_exceeded: bool,
    /// Shell and messages.
    pub host: &'h mut dyn Host,
}

/// Run options the interpreter applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientOptions {
    /// `--max-tries` (0: unlimited; 1, the default: no retry).
    pub max_tries: u32,
    /// `--latency-limit` in microseconds: no retry once a transaction has run longer.
    pub latency_limit_us: Option<i64>,
    /// `--verbose-errors`: every error and retry as a [`Host::message`].
    pub verbose_errors: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            max_tries: 1,
            latency_limit_us: None,
            verbose_errors: false,
        }
    }
}

/// The automatic variables' values for a client (unless `-D` set them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoValues {
    /// `:scale`.
    pub scale: i64,
    /// `:default_seed` ([`crate::Startup::default_seed`]).
    pub default_seed: u64,
    /// `:random_seed`.
    pub random_seed: u64,
}

/// How an SQL command is sent.
#[derive(Debug, Clone, Copy)]
pub enum SqlForm<'a> {
    /// A Query message with this text (values substituted).
    Simple {
        /// The text.
        text: &'a [u8],
    },
    /// Unnamed Parse of `text` (no parameter types), Bind of `params` as text,
    /// Describe portal, Execute.
    Extended {
        /// The text with `$n`.
        text: &'a [u8],
        /// The parameters (None: SQL NULL).
        params: &'a ParamBuf,
    },
    /// Bind of `params` to the statement `name`, Describe portal, Execute.
    Prepared {
        /// `P_n`.
        name: &'a str,
        /// The parameters.
        params: &'a ParamBuf,
    },
}

/// An SQL command to send.
#[derive(Debug, Clone, Copy)]
pub struct SqlRequest<'a> {
    /// The script's index.
    pub script: usize,
    /// The command's index in the script.
    pub command: usize,
    /// How it travels.
    pub form: SqlForm<'a>,
    /// Inside `\startpipeline`: queue it (no Sync), do not wait, and call
    /// [`Client::next`] again; its results come with `\endpipeline`'s.
    pub pipelined: bool,
    /// `\gset`/`\aset` follows: the reply must carry the rows' names and values.
    pub wants_rows: bool,
}

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnStatus {
    /// It ran to the end of the script (pgbench's `cnt`).
    Success,
    /// Its last try failed on a serialization failure (40001).
    SerializationFailure,
    /// Its last try failed on a deadlock (40P01).
    DeadlockFailure,
}

/// A transaction's end, to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnEnd {
    /// The script it ran.
    pub script: usize,
    /// How it ended.
    pub status: TxnStatus,
    /// Tries (1 without retries).
    pub tries: u32,
}

/// An SQL error as the server reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError {
    /// The SQLSTATE.
    pub sqlstate: String,
    /// The primary message.
    pub message: String,
}

/// Why a client stopped (pgbench's `CSTATE_ABORTED`): nothing of the transaction in
/// progress is counted; other clients go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAbort {
    /// The script.
    pub script: usize,
    /// The command (index in the script).
    pub command: usize,
    /// pgbench's lines for it.
    pub message: String,
    /// The SQL error that ended it, if one did.
    pub sql_error: Option<SqlError>,
}

impl std::fmt::Display for ClientAbort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What the driver does next.
#[derive(Debug)]
pub enum Step<'a> {
    /// Send an SQL command; unless pipelined, report its reply with [`Client::on_reply`].
    Sql(SqlRequest<'a>),
    /// Prepare `name` as `text` (Parse without parameter types, then Sync) and report
    /// the reply with [`Client::on_reply`] (an error is only reported, as libpq's
    /// `PQprepare` failure is by pgbench).
    Prepare {
        /// `P_n`.
        name: &'a str,
        /// The text with `$n`.
        text: &'a [u8],
    },
    /// `\syncpipeline` (18): queue a Sync in the pipeline and call [`Client::next`] again.
    PipelineSync,
    /// `\endpipeline`: send a Sync, read every result of the pipeline through the last
    /// ReadyForQuery, and report them with [`Client::on_reply`].
    EndPipeline,
    /// After an error in a pipeline: send a Sync, read through its ReadyForQuery, report
    /// with [`Client::on_reply`] (pgbench's `discardUntilSync`).
    Sync,
    /// After a retryable error in a transaction block: send the simple Query `ROLLBACK`
    /// and report its reply with [`Client::on_reply`].
    Rollback,
    /// `\sleep`: call [`Client::next`] again at or after this time (other clients run).
    Sleep {
        /// When, on [`Context::now_us`]'s clock.
        until_us: i64,
    },
    /// The transaction ended: count it; then call [`Client::next`].
    End(TxnEnd),
    /// `-T` ended during error handling: the transaction is not counted; the client is done.
    Finished,
    /// The client stopped on an error.
    Aborted(&'a ClientAbort),
    /// Between transactions: call [`Client::begin`] for the next one (or stop).
    Idle,
}

/// Per-command figures (pgbench's `-r`): latency of each execution in microseconds, and
/// the retries and failures counted on the command that failed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CommandStats {
    /// Executions.
    pub count: u64,
    /// Sum of their latencies, µs.
    pub sum_us: f64,
    /// Sum of their squares.
    pub sum2_us: f64,
    /// Smallest, µs.
    pub min_us: f64,
    /// Largest, µs.
    pub max_us: f64,
    /// Retries after an error at this command.
    pub retries: u64,
    /// Failed transactions that ended at this command.
    pub failures: u64,
}

impl CommandStats {
    pub(crate) fn add(&mut self, us: f64) {
        if self.count == 0 || us < self.min_us {
            self.min_us = us;
        }
        if self.count == 0 || us > self.max_us {
            self.max_us = us;
        }
        self.count += 1;
        self.sum_us += us;
        self.sum2_us += us * us;
    }

    /// Adds another client's figures.
    pub fn merge(&mut self, o: &CommandStats) {
        if o.count > 0 {
            if self.count == 0 || o.min_us < self.min_us {
                self.min_us = o.min_us;
            }
            if self.count == 0 || o.max_us > self.max_us {
                self.max_us = o.max_us;
            }
        }
        self.count += o.count;
        self.sum_us += o.sum_us;
        self.sum2_us += o.sum2_us;
        self.retries += o.retries;
        self.failures += o.failures;
    }
}
