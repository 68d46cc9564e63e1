//! pgbench's custom-script language as pgbench 15–18 runs it (`pgbench -f FILE[@W]`,
//! `-b NAME[@W]`, `-D`, `-M`, `--random-seed`), as a model without I/O: no sockets,
//! files, threads or clocks. The checklist it follows is
//! `shared/reference/pgbench-scripts.md`; the semantics were read from PostgreSQL
//! 15.18's and 18.6's `src/bin/pgbench`, `src/common/pg_prng.c` and
//! `src/fe_utils/psqlscan.l`.
//!
//! - [`ScriptSet`] reads scripts (split with psql's lexer, meta-commands checked, errors
//!   as pgbench's `FILE:LINE: message … in command "x"` with the column), `-D`
//!   definitions and builtins, and [`ScriptSet::compile`]s them for a [`QueryMode`] into
//!   a [`Program`]: SQL templates (substitution or `$n` parameters), prepared names.
//! - [`Program::startup`] derives pgbench's random states from the seed in its order;
//!   [`Program::choose_script`] picks a transaction's script by weight.
//! - [`Client`] is one client's interpreter. A driver loops:
//!   [`Client::begin`] a transaction, then [`Client::next`] until [`Step::End`] (count
//!   it), [`Step::Aborted`] or [`Step::Finished`]; [`Step::Sql`] and the other exchanges
//!   are answered with [`Client::on_reply`] (a [`Reply`] the driver implements over its
//!   wire reply). `\shell`, `\setshell` and `debug()`'s output go through [`Host`].
//!
//! Expressions are parsed once; SQL text is substituted into a buffer the client keeps,
//! and parameters into another: a transaction does not allocate once they have grown.

pub mod client;
pub mod error;
pub mod eval;
pub mod expr;
pub mod prng;
pub mod program;
mod psqlscan;
pub mod script;
pub mod sql;
pub mod value;
pub mod vars;

pub use client::{
    AutoValues, Client, ClientAbort, ClientOptions, CommandStats, Context, Host, NoHost, Reply,
    ResultKind, SqlError, SqlForm, SqlRequest, Step, TxStatus, TxnEnd, TxnStatus,
};
pub use error::{ScriptError, SyntaxError};
pub use prng::PgPrng;
pub use program::{
    BUILTINS, Builtin, Program, QueryMode, RandomSeed, Script, ScriptSet, Startup, ThreadRandom,
    find_builtin, parse_weight,
};
pub use value::Value;

/// Whose rules apply where pgbench's majors differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Version {
    /// pgbench 15 (to 17): no `\syncpipeline`; `\v` is not SQL whitespace; a `\gset`
    /// misplaced is reported at the line where its chunk of the script began.
    V15,
    /// pgbench 18: `\syncpipeline`; psql's lexer of 18.
    #[default]
    V18,
}
