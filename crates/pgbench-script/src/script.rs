//! A script file into commands, as pgbench's `ParseScript` and
//! `process_backslash_command` do it: SQL commands split by psql's lexer, the 13
//! meta-commands read word by word (or as an expression), checked, and `\gset`/`\aset`
//! merged into the SQL command before them; then `\if` nesting checked.

use crate::Version;
use crate::error::{ScriptError, SyntaxError};
use crate::expr::{self, Expr, Parser, continuation_at};
use crate::psqlscan::{PsqlScan, ScanResult};
use crate::value::atoi;
use crate::vars::{Interner, VarId};

/// Where `\gset` or `\aset` stores an SQL command's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    /// `\aset` (every result of a `\;` compound, empty ones skipped) rather than
    /// `\gset` (the last result, exactly one row).
    pub aset: bool,
    /// Prefix of the variable names (the columns' names follow it).
    pub prefix: Vec<u8>,
}

/// A `\shell`/`\setshell` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellArg {
    /// Text as written (`::x` is the text `:x`).
    Literal(Vec<u8>),
    /// A whole word `:name`: the variable's text; undefined aborts the client.
    Var {
        /// The variable.
        id: VarId,
        /// The word as written, colon included (for messages).
        written: Vec<u8>,
    },
}

/// `\sleep`'s duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SleepTime {
    /// A number (C's `atoi` of the word).
    Literal(i32),
    /// `:name`: `atoi` of the variable's text at run time.
    Var {
        /// The variable.
        id: VarId,
        /// Its name (after the colon).
        name: Vec<u8>,
    },
}

/// `\sleep`'s unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SleepUnit {
    /// `s`, or no unit.
    Seconds,
    /// `ms`.
    Millis,
    /// `us`.
    Micros,
}

/// What a command does.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandKind {
    /// An SQL command (its text as sent, before substitution), with `\gset`/`\aset`.
    Sql {
        /// The text: comments and spaces before it dropped, the `;` kept, `\;` as `;`.
        text: Vec<u8>,
        /// `\gset` or `\aset` after it.
        store: Option<Store>,
    },
    /// `\set name expr`.
    Set {
        /// The target.
        var: VarId,
        /// The target's name as written.
        name: Vec<u8>,
        /// The expression.
        expr: Expr,
    },
    /// `\setshell name command args…`.
    SetShell {
        /// The target.
        var: VarId,
        /// The target's name as written.
        name: Vec<u8>,
        /// The command's words.
        args: Vec<ShellArg>,
    },
    /// `\shell command args…`.
    Shell {
        /// The command's words.
        args: Vec<ShellArg>,
    },
    /// `\sleep time [unit]`.
    Sleep {
        /// The duration.
        time: SleepTime,
        /// Its unit.
        unit: SleepUnit,
    },
    /// `\if expr`.
    If(Expr),
    /// `\elif expr`.
    Elif(Expr),
    /// `\else`.
    Else,
    /// `\endif`.
    Endif,
    /// `\startpipeline`.
    StartPipeline,
    /// `\syncpipeline` (18).
    SyncPipeline,
    /// `\endpipeline`.
    EndPipeline,
}

/// One command of a script.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    /// The line the command starts on, from 1.
    pub line: usize,
    /// pgbench's short form of the command (`first_line`): a meta-command's whole
    /// text, an SQL command's first line (at most 127 bytes), as in `-r`'s report.
    pub first_line: String,
    /// The name a meta-command was written with (`SET`, `sleep`), empty for SQL.
    pub written_name: String,
    /// What it does.
    pub kind: CommandKind,
}

impl Command {
    /// Whether it is an SQL command.
    pub fn is_sql(&self) -> bool {
        matches!(self.kind, CommandKind::Sql { .. })
    }
}

/// A parsed script.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedScript {
    /// Its name: the file name, or the builtin's description.
    pub name: String,
    /// Its weight.
    pub weight: u32,
    /// Its commands.
    pub commands: Vec<Command>,
}

/// Offsets of the newlines, for line numbers.
struct Lines(Vec<usize>);

impl Lines {
    fn new(buf: &[u8]) -> Lines {
        Lines(
            buf.iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i)
                .collect(),
        )
    }

    /// The line of byte `offset`, from 1.
    fn line(&self, offset: usize) -> usize {
        self.0.partition_point(|&n| n < offset) + 1
    }
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// pgbench's `skip_sql_comments`: leading spaces and `--` lines; None if nothing is
/// left. Returns the offset where the command starts.
fn skip_sql_comments(sql: &[u8]) -> Option<usize> {
    let mut p = 0;
    loop {
        if p < sql.len() && is_c_space(sql[p]) {
            p += 1;
        } else if sql[p..].starts_with(b"--") {
            p += sql[p..].iter().position(|&b| b == b'\n')? + 1;
        } else {
            break;
        }
    }
    (p < sql.len()).then_some(p)
}

/// The first line of an SQL command as pgbench keeps it (127 bytes, up to CR or LF).
fn sql_first_line(text: &[u8]) -> String {
    let t = &text[..text.len().min(127)];
    let end = t
        .iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .unwrap_or(t.len());
    String::from_utf8_lossy(&t[..end]).into_owned()
}

/// `text[from..to]` without trailing newlines (`expr_scanner_get_substring(…, true)`).
fn chomped(buf: &[u8], from: usize, to: usize) -> String {
    let mut e = to;
    while e > from && matches!(buf[e - 1], b'\n' | b'\r') {
        e -= 1;
    }
    String::from_utf8_lossy(&buf[from..e]).into_owned()
}

/// The word lexer of backslash commands (`expr_lex_one_word`): the next word and its
/// offset, or None at the end of the command (the newline is consumed).
fn next_word(buf: &[u8], pos: &mut usize) -> Option<(Vec<u8>, usize)> {
    let space = |b: u8| matches!(b, b' ' | b'\t' | b'\r' | 0x0c | 0x0b);
    loop {
        if *pos >= buf.len() {
            return None;
        }
        let b = buf[*pos];
        if b == b'\n' {
            *pos += 1;
            return None;
        }
        if space(b) {
            *pos += 1;
            continue;
        }
        let c = continuation_at(buf, *pos);
        if c > 0 {
            *pos += c;
            continue;
        }
        let start = *pos;
        let mut e = start;
        while e < buf.len() && !space(buf[e]) && buf[e] != b'\n' {
            e += 1;
        }
        // "word\" followed by a newline: the word, the continuation skipped.
        if e > start + 1 && buf[e - 1] == b'\\' {
            let c = continuation_at(buf, e - 1);
            if c > 0 {
                *pos = e - 1 + c;
                return Some((buf[start..e - 1].to_vec(), start));
            }
        }
        *pos = e;
        return Some((buf[start..e].to_vec(), start));
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Meta {
    Set,
    SetShell,
    Shell,
    Sleep,
    Gset,
    Aset,
    If,
    Elif,
    Else,
    Endif,
    StartPipeline,
    SyncPipeline,
    EndPipeline,
}

fn meta_of(word: &[u8], version: Version) -> Option<Meta> {
    let names: &[(&str, Meta)] = &[
        ("set", Meta::Set),
        ("setshell", Meta::SetShell),
        ("shell", Meta::Shell),
        ("sleep", Meta::Sleep),
        ("if", Meta::If),
        ("elif", Meta::Elif),
        ("else", Meta::Else),
        ("endif", Meta::Endif),
        ("gset", Meta::Gset),
        ("aset", Meta::Aset),
        ("startpipeline", Meta::StartPipeline),
        ("syncpipeline", Meta::SyncPipeline),
        ("endpipeline", Meta::EndPipeline),
    ];
    names
        .iter()
        .find(|(n, _)| word.eq_ignore_ascii_case(n.as_bytes()))
        .map(|(_, m)| *m)
        .filter(|m| *m != Meta::SyncPipeline || version >= Version::V18)
}

/// The most words a backslash command may have, its name included (`MAX_ARGS`).
const MAX_ARGS: usize = 256;

/// A backslash command before `\gset`/`\aset` merging.
enum Parsed {
    Command(Command),
    Store { aset: bool, prefix: Vec<u8> },
}

struct ScriptParser<'a, 'i> {
    buf: &'a [u8],
    source: &'a str,
    version: Version,
    lines: Lines,
    interner: &'i mut Interner,
}

impl ScriptParser<'_, '_> {
    #[allow(clippy::too_many_arguments)]
    fn error(
        &self,
        line: usize,
        message: &str,
        more: Option<String>,
        command: Option<&[u8]>,
        text: Option<String>,
        column: Option<usize>,
    ) -> ScriptError {
        ScriptError::Syntax(Box::new(SyntaxError {
            source: self.source.to_string(),
            line,
            message: message.to_string(),
            more,
            command: command.map(|c| String::from_utf8_lossy(c).into_owned()),
            text,
            column,
        }))
    }

    /// One backslash command; `pos` is just after the backslash and ends after the
    /// command's newline. None for a backslash alone on its line.
    fn backslash(&mut self, pos: &mut usize) -> Result<Option<Parsed>, ScriptError> {
        let buf = self.buf;
        let start = *pos - 1;
        let line = self.lines.line(start);
        let Some((name, _)) = next_word(buf, pos) else {
            return Ok(None);
        };
        let meta = meta_of(&name, self.version);
        if let Some(meta @ (Meta::Set | Meta::If | Meta::Elif)) = meta {
            let mut target = None;
            if meta == Meta::Set {
                let Some((w, _)) = next_word(buf, pos) else {
                    return Err(self.error(
                        line,
                        "missing argument",
                        None,
                        Some(&name),
                        None,
                        None,
                    ));
                };
                target = Some(w);
            }
            let mut p = Parser::new(buf, *pos, self.interner);
            let parsed = p.parse_command_expr();
            let after = p.pos();
            let expr = match parsed {
                Ok(e) => e,
                Err(e) => {
                    let from = if e.end > after { e.end } else { after };
                    let ended = expr::ended_at(buf, from);
                    let (e, end) = expr::finish_line(buf, e, from, ended);
                    return Err(self.error(
                        line,
                        &e.message,
                        e.more,
                        Some(&name),
                        Some(chomped(buf, start, end)),
                        Some(e.end - 1 - start),
                    ));
                }
            };
            *pos = after;
            let first_line = chomped(buf, start, after);
            let kind = match meta {
                Meta::Set => {
                    let t = target.expect("read above");
                    CommandKind::Set {
                        var: self.interner.intern(&t),
                        name: t,
                        expr,
                    }
                }
                Meta::If => CommandKind::If(expr),
                _ => CommandKind::Elif(expr),
            };
            return Ok(Some(Parsed::Command(Command {
                line,
                first_line,
                written_name: String::from_utf8_lossy(&name).into_owned(),
                kind,
            })));
        }
        let mut words = vec![name.clone()];
        let mut offsets = vec![0usize];
        while let Some((w, off)) = next_word(buf, pos) {
            if words.len() >= MAX_ARGS {
                return Err(self.error(line, "too many arguments", None, Some(&name), None, None));
            }
            words.push(w);
            offsets.push(off);
        }
        let first_line = chomped(buf, start, *pos);
        let err = |s: &Self, msg: &str, more: Option<String>, column: Option<usize>| {
            s.error(
                line,
                msg,
                more,
                Some(&name),
                Some(first_line.clone()),
                column,
            )
        };
        let Some(meta) = meta else {
            return Err(err(self, "invalid command", None, None));
        };
        let kind = match meta {
            Meta::Sleep => {
                if words.len() < 2 {
                    return Err(err(self, "missing argument", None, None));
                }
                if words.len() > 3 {
                    return Err(err(
                        self,
                        "too many arguments",
                        None,
                        Some(offsets[3] - start),
                    ));
                }
                let arg = words[1].clone();
                let mut unit_word = words.get(2).cloned();
                let mut unit_off = offsets.get(2).copied();
                let time = if arg.first() == Some(&b':') {
                    let n = arg[1..].to_vec();
                    SleepTime::Var {
                        id: self.interner.intern(&n),
                        name: n,
                    }
                } else {
                    let mut c = 0;
                    if matches!(arg.first(), Some(b'+' | b'-')) {
                        c = 1;
                    }
                    let have_digit = arg.get(c).is_some_and(u8::is_ascii_digit);
                    while arg.get(c).is_some_and(u8::is_ascii_digit) {
                        c += 1;
                    }
                    if c < arg.len() {
                        if words.len() == 2 && have_digit {
                            unit_word = Some(arg[c..].to_vec());
                            unit_off = Some(offsets[1] + c);
                        } else {
                            return Err(err(
                                self,
                                "invalid sleep time, must be an integer",
                                Some(String::from_utf8_lossy(&arg).into_owned()),
                                Some(offsets[1] - start),
                            ));
                        }
                    }
                    SleepTime::Literal(atoi(&arg))
                };
                let unit = match unit_word {
                    None => SleepUnit::Seconds,
                    Some(u) if u.eq_ignore_ascii_case(b"us") => SleepUnit::Micros,
                    Some(u) if u.eq_ignore_ascii_case(b"ms") => SleepUnit::Millis,
                    Some(u) if u.eq_ignore_ascii_case(b"s") => SleepUnit::Seconds,
                    Some(u) => {
                        return Err(err(
                            self,
                            "unrecognized time unit, must be us, ms or s",
                            Some(String::from_utf8_lossy(&u).into_owned()),
                            Some(unit_off.expect("with the word") - start),
                        ));
                    }
                };
                CommandKind::Sleep { time, unit }
            }
            Meta::SetShell => {
                if words.len() < 3 {
                    return Err(err(self, "missing argument", None, None));
                }
                let n = words[1].clone();
                CommandKind::SetShell {
                    var: self.interner.intern(&n),
                    name: n,
                    args: self.shell_args(&words[2..]),
                }
            }
            Meta::Shell => {
                if words.len() < 2 {
                    return Err(err(self, "missing command", None, None));
                }
                CommandKind::Shell {
                    args: self.shell_args(&words[1..]),
                }
            }
            Meta::Else
            | Meta::Endif
            | Meta::StartPipeline
            | Meta::EndPipeline
            | Meta::SyncPipeline => {
                if words.len() != 1 {
                    return Err(err(self, "unexpected argument", None, None));
                }
                match meta {
                    Meta::Else => CommandKind::Else,
                    Meta::Endif => CommandKind::Endif,
                    Meta::StartPipeline => CommandKind::StartPipeline,
                    Meta::SyncPipeline => CommandKind::SyncPipeline,
                    _ => CommandKind::EndPipeline,
                }
            }
            Meta::Gset | Meta::Aset => {
                if words.len() > 2 {
                    return Err(err(self, "too many arguments", None, None));
                }
                return Ok(Some(Parsed::Store {
                    aset: meta == Meta::Aset,
                    prefix: words.get(1).cloned().unwrap_or_default(),
                }));
            }
            Meta::Set | Meta::If | Meta::Elif => unreachable!("expressions above"),
        };
        Ok(Some(Parsed::Command(Command {
            line,
            first_line,
            written_name: String::from_utf8_lossy(&name).into_owned(),
            kind,
        })))
    }

    fn shell_args(&mut self, words: &[Vec<u8>]) -> Vec<ShellArg> {
        words
            .iter()
            .map(|w| match (w.first(), w.get(1)) {
                (Some(b':'), Some(b':')) => ShellArg::Literal(w[1..].to_vec()),
                (Some(b':'), _) => ShellArg::Var {
                    id: self.interner.intern(&w[1..]),
                    written: w.clone(),
                },
                _ => ShellArg::Literal(w.clone()),
            })
            .collect()
    }
}

/// Parses a script as pgbench does (`ParseScript`), interning its variables into
/// `interner`; `name` is how errors name it. The text ends at its first NUL byte, as
/// pgbench reads it as a C string.
pub fn parse_script(
    text: &[u8],
    name: &str,
    weight: u32,
    version: Version,
    interner: &mut Interner,
) -> Result<ParsedScript, ScriptError> {
    let commands = parse_commands(text, name, version, interner)?;
    if commands.is_empty() {
        return Err(ScriptError::Empty(name.to_string()));
    }
    check_conditionals(name, &commands)?;
    Ok(ParsedScript {
        name: name.to_string(),
        weight,
        commands,
    })
}

/// The commands of a script, before the empty-script and `\if` checks.
pub(crate) fn parse_commands(
    text: &[u8],
    name: &str,
    version: Version,
    interner: &mut Interner,
) -> Result<Vec<Command>, ScriptError> {
    let text = &text[..text.iter().position(|&b| b == 0).unwrap_or(text.len())];
    let mut p = ScriptParser {
        buf: text,
        source: name,
        version,
        lines: Lines::new(text),
        interner,
    };
    let mut scan = PsqlScan::new(text, version);
    let mut commands: Vec<Command> = Vec::new();
    let mut out = Vec::new();
    loop {
        out.clear();
        let scan_start = scan.pos;
        let r = scan.scan(&mut out);
        if let Some(skip) = skip_sql_comments(&out) {
            let sql = out[skip..].to_vec();
            // The line of the command's first byte: where the lexer began emitting.
            let line =
                p.lines.line(first_text_offset(text, scan_start)) + count_lines(&out[..skip]);
            commands.push(Command {
                line,
                first_line: sql_first_line(&sql),
                written_name: String::new(),
                kind: CommandKind::Sql {
                    text: sql,
                    store: None,
                },
            });
        }
        if r == ScanResult::Backslash {
            let backslash = scan.pos - 1;
            let parsed = p.backslash(&mut scan.pos)?;
            match parsed {
                None => {}
                Some(Parsed::Command(c)) => commands.push(c),
                Some(Parsed::Store { aset, prefix }) => {
                    // pgbench 15 names the line where this scan began, 18 the backslash's.
                    let line = if version >= Version::V18 {
                        p.lines.line(backslash)
                    } else {
                        p.lines.line(scan_start)
                    };
                    let must = "\\gset must follow an SQL command";
                    let Some(prev) = commands.last_mut() else {
                        return Err(p.error(line, must, None, None, None, None));
                    };
                    match &mut prev.kind {
                        CommandKind::Sql {
                            store: s @ None, ..
                        } => *s = Some(Store { aset, prefix }),
                        // pgbench names the command before, but an SQL command's
                        // short form does not exist yet when it parses.
                        kind => {
                            let more = (!matches!(kind, CommandKind::Sql { .. }))
                                .then(|| prev.first_line.clone());
                            return Err(p.error(line, must, more, None, None, None));
                        }
                    }
                }
            }
        }
        if matches!(r, ScanResult::Incomplete | ScanResult::Eol) {
            break;
        }
    }
    Ok(commands)
}

/// Where the lexer starts emitting from `from`: after spaces and `--` comments.
fn first_text_offset(buf: &[u8], from: usize) -> usize {
    let mut p = from;
    loop {
        if p < buf.len() && matches!(buf[p], b' ' | b'\t' | b'\n' | b'\r' | 0x0c | 0x0b) {
            p += 1;
        } else if buf[p.min(buf.len())..].starts_with(b"--") {
            while p < buf.len() && !matches!(buf[p], b'\n' | b'\r') {
                p += 1;
            }
        } else {
            return p;
        }
    }
}

fn count_lines(s: &[u8]) -> usize {
    s.iter().filter(|&&b| b == b'\n').count()
}

/// pgbench's `CheckConditional`: `\if` … `\endif` nest, no `\elif`/`\else` after `\else`.
pub(crate) fn check_conditionals(name: &str, commands: &[Command]) -> Result<(), ScriptError> {
    // Per open \if: whether its \else was seen.
    let mut stack: Vec<bool> = Vec::new();
    let err = |i: usize, message: &'static str| ScriptError::Condition {
        script: name.to_string(),
        command: i + 1,
        message,
    };
    for (i, c) in commands.iter().enumerate() {
        match c.kind {
            CommandKind::If(_) => stack.push(false),
            CommandKind::Elif(_) => match stack.last() {
                None => return Err(err(i, "\\elif without matching \\if")),
                Some(true) => return Err(err(i, "\\elif after \\else")),
                _ => {}
            },
            CommandKind::Else => match stack.last_mut() {
                None => return Err(err(i, "\\else without matching \\if")),
                Some(true) => return Err(err(i, "\\else after \\else")),
                Some(e) => *e = true,
            },
            CommandKind::Endif if stack.pop().is_none() => {
                return Err(err(i, "\\endif without matching \\if"));
            }
            _ => {}
        }
    }
    if !stack.is_empty() {
        return Err(err(commands.len(), "\\if without matching \\endif"));
    }
    Ok(())
}
