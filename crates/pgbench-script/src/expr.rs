//! The expression language of `\set`, `\if` and `\elif` (pgbench's `exprscan.l` and
//! `exprparse.y`, unchanged from 15 to 18): tokens, a parser that accepts exactly
//! bison's language with its precedences and reports errors at the same token, and the
//! tree the evaluator ([`crate::eval`]) walks.

use crate::value::{Value, strtod_whole, strtoint64};
use crate::vars::{Interner, VarId};

/// An operator or function of the language (`PgBenchFunction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    /// `+`
    Add,
    /// `-` (binary; unary minus is `0 - x`)
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%` and `mod()`
    Mod,
    /// `debug(x)`
    Debug,
    /// `abs(x)`
    Abs,
    /// `least(…)`
    Least,
    /// `greatest(…)`
    Greatest,
    /// `int(x)`
    Int,
    /// `double(x)`
    Double,
    /// `pi()`
    Pi,
    /// `sqrt(x)`
    Sqrt,
    /// `ln(x)`
    Ln,
    /// `exp(x)`
    Exp,
    /// `random(lb, ub)`
    Random,
    /// `random_gaussian(lb, ub, p)`
    RandomGaussian,
    /// `random_exponential(lb, ub, p)`
    RandomExponential,
    /// `random_zipfian(lb, ub, s)`
    RandomZipfian,
    /// `pow(x, y)`, `power(x, y)`
    Pow,
    /// `AND`
    And,
    /// `OR`
    Or,
    /// `NOT`
    Not,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `#` (and `~x` as `-1 # x`)
    BitXor,
    /// `<<`
    Lshift,
    /// `>>`
    Rshift,
    /// `=`
    Eq,
    /// `<>`, `!=`
    Ne,
    /// `<=` (and `>=` with the operands swapped)
    Le,
    /// `<` (and `>` with the operands swapped)
    Lt,
    /// `IS` (`IS [NOT] NULL|TRUE|FALSE`, `ISNULL`, `NOTNULL`)
    Is,
    /// `CASE WHEN c THEN v … ELSE e END` as (c, v, …, e)
    Case,
    /// `hash_fnv1a(v [, seed])`
    HashFnv1a,
    /// `hash(v [, seed])`, `hash_murmur2(v [, seed])`
    HashMurmur2,
    /// `permute(i, size [, seed])`
    Permute,
}

/// An expression tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A constant.
    Const(Value),
    /// A variable.
    Var(VarId),
    /// An operator or function applied to its arguments, in order.
    Call(Func, Box<[Expr]>),
}

/// How many arguments a function takes (`PGBENCH_NARGS_*`).
#[derive(Clone, Copy)]
enum Arity {
    Exactly(usize),
    AtLeastOne,
    Hash,
    Permute,
}

/// The callable names, matched case-insensitively (`PGBENCH_FUNCTIONS`, operators apart).
const FUNCTIONS: &[(&str, Arity, Func)] = &[
    ("mod", Arity::Exactly(2), Func::Mod),
    ("abs", Arity::Exactly(1), Func::Abs),
    ("least", Arity::AtLeastOne, Func::Least),
    ("greatest", Arity::AtLeastOne, Func::Greatest),
    ("debug", Arity::Exactly(1), Func::Debug),
    ("pi", Arity::Exactly(0), Func::Pi),
    ("sqrt", Arity::Exactly(1), Func::Sqrt),
    ("ln", Arity::Exactly(1), Func::Ln),
    ("exp", Arity::Exactly(1), Func::Exp),
    ("int", Arity::Exactly(1), Func::Int),
    ("double", Arity::Exactly(1), Func::Double),
    ("random", Arity::Exactly(2), Func::Random),
    ("random_gaussian", Arity::Exactly(3), Func::RandomGaussian),
    (
        "random_exponential",
        Arity::Exactly(3),
        Func::RandomExponential,
    ),
    ("random_zipfian", Arity::Exactly(3), Func::RandomZipfian),
    ("pow", Arity::Exactly(2), Func::Pow),
    ("power", Arity::Exactly(2), Func::Pow),
    ("hash", Arity::Hash, Func::HashMurmur2),
    ("hash_murmur2", Arity::Hash, Func::HashMurmur2),
    ("hash_fnv1a", Arity::Hash, Func::HashFnv1a),
    ("permute", Arity::Permute, Func::Permute),
];

/// The names of every function the language has (21, with `power` and `hash`).
pub fn function_names() -> impl Iterator<Item = &'static str> {
    FUNCTIONS.iter().map(|f| f.0)
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Op(&'static str),
    LParen,
    RParen,
    Comma,
    And,
    Or,
    Not,
    Is,
    IsNull,
    NotNull,
    Case,
    When,
    Then,
    Else,
    End,
    Variable(Vec<u8>),
    Null,
    Bool(bool),
    MaxIntPlusOne,
    Int(i64),
    Double(f64),
    Function(Vec<u8>),
    /// End of the command: a newline (consumed) or the end of the script.
    Eol,
}

/// A lexer error: message, detail, and the offset just past the offending text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LexError {
    pub message: &'static str,
    pub more: String,
    pub end: usize,
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | 0x0c | 0x0b)
}

fn is_alpha(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn is_alnum(b: u8) -> bool {
    is_alpha(b) || b.is_ascii_digit()
}

/// Length of a line continuation (`\` then an optional CR and a newline) at `i`.
pub(crate) fn continuation_at(buf: &[u8], i: usize) -> usize {
    if buf.get(i) != Some(&b'\\') {
        return 0;
    }
    match (buf.get(i + 1), buf.get(i + 2)) {
        (Some(b'\n'), _) => 2,
        (Some(b'\r'), Some(b'\n')) => 3,
        _ => 0,
    }
}

/// The expression lexer (`exprscan.l`'s EXPR state): the next token from `pos` and the
/// offset after it. Spaces and line continuations are skipped; a newline ends the
/// command (and is consumed).
pub(crate) fn next_token(buf: &[u8], mut pos: usize) -> Result<(Tok, usize), LexError> {
    loop {
        if pos >= buf.len() {
            return Ok((Tok::Eol, pos));
        }
        let b = buf[pos];
        if is_space(b) {
            pos += 1;
            continue;
        }
        let c = continuation_at(buf, pos);
        if c > 0 {
            pos += c;
            continue;
        }
        break;
    }
    let b = buf[pos];
    let at = |i: usize| buf.get(i).copied();
    let two = (b, at(pos + 1).unwrap_or(0));
    let op2 = match two {
        (b'<', b'>') | (b'!', b'=') => Some("<>"),
        (b'<', b'=') => Some("<="),
        (b'>', b'=') => Some(">="),
        (b'<', b'<') => Some("<<"),
        (b'>', b'>') => Some(">>"),
        _ => None,
    };
    if let Some(op) = op2 {
        return Ok((Tok::Op(op), pos + 2));
    }
    let single = match b {
        b'+' => Some(Tok::Op("+")),
        b'-' => Some(Tok::Op("-")),
        b'*' => Some(Tok::Op("*")),
        b'/' => Some(Tok::Op("/")),
        b'%' => Some(Tok::Op("%")),
        b'=' => Some(Tok::Op("=")),
        b'<' => Some(Tok::Op("<")),
        b'>' => Some(Tok::Op(">")),
        b'|' => Some(Tok::Op("|")),
        b'&' => Some(Tok::Op("&")),
        b'#' => Some(Tok::Op("#")),
        b'~' => Some(Tok::Op("~")),
        b'(' => Some(Tok::LParen),
        b')' => Some(Tok::RParen),
        b',' => Some(Tok::Comma),
        b'\n' => Some(Tok::Eol),
        _ => None,
    };
    if let Some(t) = single {
        return Ok((t, pos + 1));
    }
    if b == b':' && at(pos + 1).is_some_and(is_alnum) {
        let mut e = pos + 1;
        while e < buf.len() && is_alnum(buf[e]) {
            e += 1;
        }
        return Ok((Tok::Variable(buf[pos + 1..e].to_vec()), e));
    }
    if b.is_ascii_digit() || (b == b'.' && at(pos + 1).is_some_and(|c| c.is_ascii_digit())) {
        return number(buf, pos);
    }
    if is_alpha(b) {
        let mut e = pos;
        while e < buf.len() && is_alnum(buf[e]) {
            e += 1;
        }
        let w = &buf[pos..e];
        let kw = |k: &str| w.eq_ignore_ascii_case(k.as_bytes());
        let t = if kw("and") {
            Tok::And
        } else if kw("or") {
            Tok::Or
        } else if kw("not") {
            Tok::Not
        } else if kw("is") {
            Tok::Is
        } else if kw("isnull") {
            Tok::IsNull
        } else if kw("notnull") {
            Tok::NotNull
        } else if kw("case") {
            Tok::Case
        } else if kw("when") {
            Tok::When
        } else if kw("then") {
            Tok::Then
        } else if kw("else") {
            Tok::Else
        } else if kw("end") {
            Tok::End
        } else if kw("null") {
            Tok::Null
        } else if kw("true") {
            Tok::Bool(true)
        } else if kw("false") {
            Tok::Bool(false)
        } else {
            Tok::Function(w.to_vec())
        };
        return Ok((t, e));
    }
    Err(LexError {
        message: "unexpected character",
        more: String::from_utf8_lossy(&buf[pos..pos + 1]).into_owned(),
        end: pos + 1,
    })
}

/// A numeric constant at `pos` (a digit, or `.` then a digit), by flex's longest match.
fn number(buf: &[u8], pos: usize) -> Result<(Tok, usize), LexError> {
    let digits = |mut i: usize| {
        while i < buf.len() && buf[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let int_end = digits(pos);
    // The double rules: {digit}+(\.{digit}*)?(exp)? and \.{digit}+(exp)?
    let mut d_end = int_end;
    if buf.get(d_end) == Some(&b'.') {
        d_end = digits(d_end + 1);
    }
    if matches!(buf.get(d_end), Some(b'e' | b'E')) {
        let mut k = d_end + 1;
        if matches!(buf.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        if buf.get(k).is_some_and(u8::is_ascii_digit) {
            d_end = digits(k);
        }
    }
    if d_end > int_end {
        let text = &buf[pos..d_end];
        return match strtod_whole(text) {
            Some(Ok(d)) => Ok((Tok::Double(d), d_end)),
            _ => Err(LexError {
                message: "double constant overflow",
                more: String::from_utf8_lossy(text).into_owned(),
                end: d_end,
            }),
        };
    }
    let text = &buf[pos..int_end];
    if text == b"9223372036854775808" {
        return Ok((Tok::MaxIntPlusOne, int_end));
    }
    match strtoint64(text) {
        Some(i) => Ok((Tok::Int(i), int_end)),
        None => Err(LexError {
            message: "bigint constant overflow",
            more: String::from_utf8_lossy(text).into_owned(),
            end: int_end,
        }),
    }
}

/// An expression error: the message, its detail, and the offset just past the text
/// where it was found (pgbench's caret goes on the byte before).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ParseError {
    pub message: String,
    pub more: Option<String>,
    pub end: usize,
}

impl From<LexError> for ParseError {
    fn from(e: LexError) -> Self {
        ParseError {
            message: e.message.into(),
            more: Some(e.more),
            end: e.end,
        }
    }
}

/// Binary operators: (function, level, swap operands, non-associative).
fn binary(t: &Tok) -> Option<(Func, u8, bool, bool)> {
    Some(match t {
        Tok::Or => (Func::Or, 1, false, false),
        Tok::And => (Func::And, 2, false, false),
        Tok::Op(op) => match *op {
            "=" => (Func::Eq, 5, false, true),
            "<>" => (Func::Ne, 5, false, true),
            "<" => (Func::Lt, 5, false, true),
            "<=" => (Func::Le, 5, false, true),
            ">" => (Func::Lt, 5, true, true),
            ">=" => (Func::Le, 5, true, true),
            "|" => (Func::BitOr, 6, false, false),
            "#" => (Func::BitXor, 6, false, false),
            "&" => (Func::BitAnd, 6, false, false),
            "<<" => (Func::Lshift, 6, false, false),
            ">>" => (Func::Rshift, 6, false, false),
            "+" => (Func::Add, 7, false, false),
            "-" => (Func::Sub, 7, false, false),
            "*" => (Func::Mul, 8, false, false),
            "/" => (Func::Div, 8, false, false),
            "%" => (Func::Mod, 8, false, false),
            _ => return None,
        },
        _ => return None,
    })
}

/// The `IS` family's level, between `NOT` and the comparisons.
const IS_LEVEL: u8 = 4;

/// A parser over one backslash command's expression.
pub(crate) struct Parser<'a, 'i> {
    buf: &'a [u8],
    pos: usize,
    tok: Option<(Tok, usize)>,
    interner: &'i mut Interner,
}

fn call(f: Func, args: Vec<Expr>) -> Expr {
    Expr::Call(f, args.into_boxed_slice())
}

fn is_null_test(e: Expr) -> Expr {
    call(Func::Is, vec![e, Expr::Const(Value::Null)])
}

fn not(e: Expr) -> Expr {
    call(Func::Not, vec![e])
}

impl<'a, 'i> Parser<'a, 'i> {
    /// A parser of the expression that starts at `pos` in `buf`.
    pub(crate) fn new(buf: &'a [u8], pos: usize, interner: &'i mut Interner) -> Self {
        Parser {
            buf,
            pos,
            tok: None,
            interner,
        }
    }

    /// Where the lexer is: just past the last token read.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    fn peek(&mut self) -> Result<&Tok, ParseError> {
        if self.tok.is_none() {
            let (t, end) = next_token(self.buf, self.pos)?;
            self.pos = end;
            self.tok = Some((t, end));
        }
        Ok(&self.tok.as_ref().expect("just read").0)
    }

    fn take(&mut self) -> Result<Tok, ParseError> {
        self.peek()?;
        Ok(self.tok.take().expect("peeked").0)
    }

    /// A syntax error at the token just read.
    fn syntax_error(&self) -> ParseError {
        ParseError {
            message: "syntax error".into(),
            more: None,
            end: self.pos,
        }
    }

    /// The whole expression, up to and including the end of the command.
    pub(crate) fn parse_command_expr(&mut self) -> Result<Expr, ParseError> {
        let e = self.expr(0)?;
        match self.take()? {
            Tok::Eol => Ok(e),
            _ => Err(self.syntax_error()),
        }
    }

    fn expr(&mut self, min: u8) -> Result<Expr, ParseError> {
        let mut left = self.prefix()?;
        loop {
            let t = self.peek()?.clone();
            if matches!(t, Tok::Is | Tok::IsNull | Tok::NotNull) {
                if IS_LEVEL < min {
                    return Ok(left);
                }
                self.take()?;
                left = match t {
                    Tok::IsNull => is_null_test(left),
                    Tok::NotNull => not(is_null_test(left)),
                    _ => self.is_suffix(left)?,
                };
                continue;
            }
            let Some((f, level, swap, nonassoc)) = binary(&t) else {
                return Ok(left);
            };
            if level < min {
                return Ok(left);
            }
            self.take()?;
            let right = self.expr(level + 1)?;
            left = if swap {
                call(f, vec![right, left])
            } else {
                call(f, vec![left, right])
            };
            if nonassoc
                && let Some((_, l2, _, _)) = binary(self.peek()?)
                && l2 == level
            {
                // %nonassoc: `a < b < c` is an error at the second operator.
                self.take()?;
                return Err(self.syntax_error());
            }
        }
    }

    /// After `IS`: `NULL`, `TRUE`, `FALSE`, or `NOT` and one of them.
    fn is_suffix(&mut self, left: Expr) -> Result<Expr, ParseError> {
        let negate = matches!(self.peek()?, Tok::Not);
        if negate {
            self.take()?;
        }
        let rhs = match self.take()? {
            Tok::Null => Value::Null,
            Tok::Bool(b) => Value::Bool(b),
            _ => return Err(self.syntax_error()),
        };
        let e = call(Func::Is, vec![left, Expr::Const(rhs)]);
        Ok(if negate { not(e) } else { e })
    }

    fn prefix(&mut self) -> Result<Expr, ParseError> {
        match self.take()? {
            Tok::LParen => {
                let e = self.expr(0)?;
                match self.take()? {
                    Tok::RParen => Ok(e),
                    _ => Err(self.syntax_error()),
                }
            }
            Tok::Op("+") => self.expr(9),
            Tok::Op("-") => {
                if matches!(self.peek()?, Tok::MaxIntPlusOne) {
                    self.take()?;
                    return Ok(Expr::Const(Value::Int(i64::MIN)));
                }
                let e = self.expr(9)?;
                Ok(call(Func::Sub, vec![Expr::Const(Value::Int(0)), e]))
            }
            // `~` has the bit operators' (left-associative) precedence, not UNARY's.
            Tok::Op("~") => {
                let e = self.expr(7)?;
                Ok(call(Func::BitXor, vec![Expr::Const(Value::Int(-1)), e]))
            }
            Tok::Not => {
                let e = self.expr(3)?;
                Ok(not(e))
            }
            Tok::Null => Ok(Expr::Const(Value::Null)),
            Tok::Bool(b) => Ok(Expr::Const(Value::Bool(b))),
            Tok::Int(i) => Ok(Expr::Const(Value::Int(i))),
            Tok::Double(d) => Ok(Expr::Const(Value::Double(d))),
            Tok::Variable(name) => Ok(Expr::Var(self.interner.intern(&name))),
            Tok::Function(name) => self.function(&name),
            Tok::Case => self.case(),
            _ => Err(self.syntax_error()),
        }
    }

    /// `name ( [args] )`; the name is checked as soon as it is read, the argument count
    /// as soon as `)` is (bison's reductions).
    fn function(&mut self, name: &[u8]) -> Result<Expr, ParseError> {
        let Some(&(fname, arity, f)) = FUNCTIONS
            .iter()
            .find(|(n, _, _)| name.eq_ignore_ascii_case(n.as_bytes()))
        else {
            return Err(ParseError {
                message: "unexpected function name".into(),
                more: Some(String::from_utf8_lossy(name).into_owned()),
                end: self.pos,
            });
        };
        if !matches!(self.take()?, Tok::LParen) {
            return Err(self.syntax_error());
        }
        let mut args = Vec::new();
        if !matches!(self.peek()?, Tok::RParen) {
            // bison's `elist` may start empty: `least(, 1)` is `least(1)`.
            if !matches!(self.peek()?, Tok::Comma) {
                args.push(self.expr(0)?);
            }
            while matches!(self.peek()?, Tok::Comma) {
                self.take()?;
                args.push(self.expr(0)?);
            }
        }
        if !matches!(self.take()?, Tok::RParen) {
            return Err(self.syntax_error());
        }
        let n = args.len();
        let bad = |message: &str| ParseError {
            message: message.into(),
            more: Some(fname.into()),
            end: self.pos,
        };
        match arity {
            Arity::Exactly(k) if k != n => return Err(bad("unexpected number of arguments")),
            Arity::AtLeastOne if n == 0 => return Err(bad("at least one argument expected")),
            Arity::Hash if !(1..=2).contains(&n) => {
                return Err(bad("unexpected number of arguments"));
            }
            Arity::Permute if !(2..=3).contains(&n) => {
                return Err(bad("unexpected number of arguments"));
            }
            Arity::Hash if n == 1 => args.push(Expr::Var(self.interner.intern(b"default_seed"))),
            Arity::Permute if n == 2 => args.push(Expr::Var(self.interner.intern(b"default_seed"))),
            _ => {}
        }
        Ok(call(f, args))
    }

    /// `CASE WHEN c THEN v [WHEN c THEN v]… [ELSE e] END` (no ELSE: NULL).
    fn case(&mut self) -> Result<Expr, ParseError> {
        let mut args = Vec::new();
        loop {
            match self.take()? {
                Tok::When => {}
                Tok::Else if !args.is_empty() => {
                    args.push(self.expr(0)?);
                    if !matches!(self.take()?, Tok::End) {
                        return Err(self.syntax_error());
                    }
                    return Ok(call(Func::Case, args));
                }
                Tok::End if !args.is_empty() => {
                    args.push(Expr::Const(Value::Null));
                    return Ok(call(Func::Case, args));
                }
                _ => return Err(self.syntax_error()),
            }
            args.push(self.expr(0)?);
            if !matches!(self.take()?, Tok::Then) {
                return Err(self.syntax_error());
            }
            args.push(self.expr(0)?);
        }
    }
}

/// After an error at `from`, pgbench lexes on to the end of the command to print it
/// whole; a lexer error on the way replaces the first one (its caret is then there).
/// Returns the error that stands and the offset of the end of the command.
pub(crate) fn finish_line(
    buf: &[u8],
    mut err: ParseError,
    from: usize,
    ended: bool,
) -> (ParseError, usize) {
    let mut pos = from;
    if ended {
        return (err, pos);
    }
    loop {
        match next_token(buf, pos) {
            Ok((Tok::Eol, end)) => return (err, end),
            Ok((_, end)) => pos = end,
            Err(e) => {
                pos = e.end;
                err = e.into();
            }
        }
    }
}

/// Whether the text just before `pos` ended the command (a newline was consumed, or the
/// script ended).
pub(crate) fn ended_at(buf: &[u8], pos: usize) -> bool {
    pos >= buf.len() || (pos > 0 && buf[pos - 1] == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Expr, ParseError> {
        let mut i = Interner::default();
        Parser::new(s.as_bytes(), 0, &mut i).parse_command_expr()
    }

    fn int(i: i64) -> Expr {
        Expr::Const(Value::Int(i))
    }

    #[test]
    fn precedence_follows_bison() {
        // `| # & << >>` are one left-associative level.
        assert_eq!(
            parse("4 | 6 & 3").unwrap(),
            call(
                Func::BitAnd,
                vec![call(Func::BitOr, vec![int(4), int(6)]), int(3)]
            )
        );
        // `~` binds like the bit operators: ~(1 + 2).
        assert_eq!(
            parse("~ 1 + 2").unwrap(),
            call(
                Func::BitXor,
                vec![int(-1), call(Func::Add, vec![int(1), int(2)])]
            )
        );
        // Unary minus binds tighter than `*`.
        assert_eq!(
            parse("-1 * 2").unwrap(),
            call(
                Func::Mul,
                vec![call(Func::Sub, vec![int(0), int(1)]), int(2)]
            )
        );
        // a > b is b < a.
        assert_eq!(
            parse("1 > 2").unwrap(),
            call(Func::Lt, vec![int(2), int(1)])
        );
        assert_eq!(parse("-9223372036854775808").unwrap(), int(i64::MIN));
        assert!(parse("1 < 2 < 3").is_err());
        assert!(parse("1 = 2 <> 3").is_err());
        assert!(parse("1 IS NULL IS NULL").is_ok());
        assert!(parse("9223372036854775808").is_err());
        assert_eq!(
            parse("least(, 1)").unwrap(),
            call(Func::Least, vec![int(1)])
        );
        assert!(parse("least(1,)").is_err());
        assert!(parse("CASE TRUE THEN 1 ELSE 0 END").is_err());
        assert!(parse("case when 1 then 2 end").is_ok());
    }

    #[test]
    fn errors_are_found_at_pgbench_positions() {
        // The offending token's end, minus one, is the caret's column.
        let e = parse("1 +\n").unwrap_err();
        assert_eq!((e.message.as_str(), e.end - 1), ("syntax error", 3));
        let e = parse("1 +").unwrap_err();
        assert_eq!(e.end - 1, 2);
        let e = parse("noSuchFunction()").unwrap_err();
        assert_eq!(e.message, "unexpected function name");
        assert_eq!(e.end - 1, 13);
        let e = parse("ln(1.0, 2.0))").unwrap_err();
        assert_eq!(e.message, "unexpected number of arguments");
        assert_eq!(e.end - 1, 11);
        let e = parse("100000000000000000000").unwrap_err();
        assert_eq!(e.message, "bigint constant overflow");
        let e = parse("1.0E309").unwrap_err();
        assert_eq!(e.message, "double constant overflow");
        let e = parse(";").unwrap_err();
        assert_eq!(e.message, "unexpected character");
        assert_eq!(e.more.as_deref(), Some(";"));
    }
}
