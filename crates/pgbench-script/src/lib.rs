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
//!
//! A driver's loop, with a connection that answers every command at once:
//!
//! ```
//! use std::sync::Arc;
//! use csdchar_pgbench_script::*;
//!
//! struct Ok1;
//! impl Reply for Ok1 {
//!     fn results(&self) -> usize { 1 }
//!     fn result(&self, _: usize) -> ResultKind<'_> { ResultKind::Command }
//!     fn columns(&self, _: usize) -> usize { 0 }
//!     fn column_name(&self, _: usize, _: usize) -> &[u8] { b"" }
//!     fn value(&self, _: usize, _: usize, _: usize) -> Option<&[u8]> { None }
//!     fn status(&self) -> TxStatus { TxStatus::Idle }
//! }
//!
//! let mut set = ScriptSet::new(Version::V18);
//! set.add_file(b"\\set aid random(1, 100000 * :scale)\nSELECT :aid;\n", "mine.sql", 1)?;
//! set.define("region=3")?;
//! let program = Arc::new(set.compile(QueryMode::Prepared)?);
//! let startup = program.startup(5432, 1, 1);
//! let mut client = Client::new(
//!     Arc::clone(&program),
//!     0,
//!     startup.clients[0],
//!     AutoValues { scale: 1, default_seed: startup.default_seed.unwrap(), random_seed: 5432 },
//!     ClientOptions::default(),
//! );
//! let mut choose = startup.threads[0].choose;
//! let mut host = NoHost;
//! let mut sent = Vec::new();
//! for _ in 0..3 {
//!     client.begin(program.choose_script(&mut choose), 0);
//!     loop {
//!         let mut cx = Context { now_us: 0, timer_exceeded: false, host: &mut host };
//!         match client.next(&mut cx) {
//!             Step::Sql(r) => {
//!                 if let SqlForm::Prepared { name, params } = r.form {
//!                     sent.push(format!("{name} {:?}", params.iter().collect::<Vec<_>>()));
//!                 }
//!             }
//!             Step::Prepare { .. } => {}
//!             Step::End(end) => { assert_eq!(end.status, TxnStatus::Success); continue; }
//!             Step::Idle => break,
//!             other => panic!("{other:?}"),
//!         }
//!         client.on_reply(&Ok1, &mut cx);
//!     }
//! }
//! assert_eq!(sent.len(), 3);
//! assert!(sent[0].starts_with("P_0 [Some("));
//! # Ok::<(), ScriptError>(())
//! ```

pub mod client;
pub mod error;
pub mod eval;
pub mod exchange;
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
