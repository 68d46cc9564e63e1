//! Errors of script parsing and compiling: what pgbench refuses before it connects
//! (exit status 1), with its messages.

use std::fmt;

/// A syntax error in a script, as pgbench's `syntax_error` reports it:
/// `FILE:LINE: message (more) in command "name"`, then the command's line and a caret
/// under the column where the error was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// The script's name (file name or builtin description).
    pub source: String,
    /// Line of the backslash command, from 1.
    pub line: usize,
    /// The error (`syntax error`, `unexpected function name`, …).
    pub message: String,
    /// What it is about (a function name, a constant, a unit), when pgbench says.
    pub more: Option<String>,
    /// The backslash command's name as written (`set`, `SLEEP`), when pgbench says.
    pub command: Option<String>,
    /// The whole command as written (continuation lines included), when pgbench prints it.
    pub text: Option<String>,
    /// Zero-based column of the error within `text` (or within the line), when known.
    pub column: Option<usize>,
}

impl SyntaxError {
    /// `FILE:LINE:COLUMN` (column from 1), or `FILE:LINE` when the column is unknown.
    pub fn location(&self) -> String {
        match self.column {
            Some(c) => format!("{}:{}:{}", self.source, self.line, c + 1),
            None => format!("{}:{}", self.source, self.line),
        }
    }

    /// Everything pgbench writes for it after `pgbench: error: `: the first line, then
    /// the command's text and the caret line when it prints them.
    pub fn pgbench_text(&self) -> String {
        let mut s = self.to_string();
        if let Some(text) = &self.text {
            s.push('\n');
            s.push_str(text);
            if let Some(c) = self.column {
                s.push('\n');
                s.push_str(&" ".repeat(c));
                s.push_str("^ error found here");
            }
        }
        s
    }
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.source, self.line, self.message)?;
        if let Some(m) = &self.more {
            write!(f, " ({m})")?;
        }
        if let (Some(c), None) = (self.column, &self.text) {
            write!(f, " at column {}", c + 1)?;
        }
        if let Some(c) = &self.command {
            write!(f, " in command \"{c}\"")?;
        }
        Ok(())
    }
}

impl std::error::Error for SyntaxError {}

/// A script or script option pgbench refuses before connecting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// A syntax error in a backslash command.
    #[error("{0}")]
    Syntax(Box<SyntaxError>),
    /// `\if`/`\elif`/`\else`/`\endif` do not nest (`CheckConditional`).
    #[error("condition error in script \"{script}\" command {command}: {message}")]
    Condition {
        /// The script's name.
        script: String,
        /// The command's number in the script, from 1 (SQL and meta-commands).
        command: usize,
        /// What is wrong (`\else after \else`, …).
        message: &'static str,
    },
    /// A script without a command.
    #[error("empty command list for script \"{0}\"")]
    Empty(String),
    /// An SQL command with more than 255 variable references under `-M extended|prepared`.
    #[error("statement has too many arguments (maximum is 255): {0}")]
    TooManyArguments(String),
    /// More than 128 scripts.
    #[error("at most 128 SQL scripts are allowed")]
    TooManyScripts,
    /// Every script has weight 0.
    #[error("total script weight must not be zero")]
    ZeroWeight,
    /// A weight that is not a number (`-f file@x`): the text from the `@`.
    #[error("invalid weight specification: {0}")]
    BadWeight(String),
    /// A weight outside 0..INT_MAX.
    #[error("weight specification out of range (0 .. 2147483647): {0}")]
    WeightOutOfRange(i64),
    /// `-b NAME` names no builtin.
    #[error("no builtin script found for name \"{0}\"")]
    NoBuiltin(String),
    /// `-b NAME` is a prefix of several builtins.
    #[error("ambiguous builtin name: {count} builtin scripts found for prefix \"{prefix}\"")]
    AmbiguousBuiltin {
        /// How many builtins start with it.
        count: usize,
        /// The prefix given.
        prefix: String,
    },
    /// A `-D` without `=`, with an empty name or an empty value.
    #[error("invalid variable definition: \"{0}\"")]
    BadDefinition(String),
    /// A `-D` whose name is not a variable name.
    #[error("option: invalid variable name: \"{0}\"")]
    BadVariableName(String),
    /// `--random-seed` is neither an unsigned integer, `time` nor `rand`.
    #[error("unrecognized random seed option \"{0}\"")]
    BadRandomSeed(String),
}

impl From<SyntaxError> for ScriptError {
    fn from(e: SyntaxError) -> Self {
        ScriptError::Syntax(Box::new(e))
    }
}
