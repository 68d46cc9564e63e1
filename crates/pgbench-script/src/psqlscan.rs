//! psql's SQL lexer (`src/fe_utils/psqlscan.l`) as pgbench uses it to split a script:
//! standard-conforming strings, SQL_ASCII (bytes as they are), no psql variables.
//! Only what decides where a command ends and what text it keeps is modelled: quotes
//! (`'…'`, `E'…'`, `B'…'`, `X'…'`, `U&'…'`, `"…"`, `U&"…"`, `$tag$…$tag$`) with
//! their continuation across newlines, nested `/* */` and `--` comments, parentheses,
//! `BEGIN … END` bodies of `CREATE [OR REPLACE] FUNCTION|PROCEDURE`, `\;` and `\:`,
//! psql's `:{?name}` (always `FALSE` here, as pgbench gives psql no variables), and
//! the backslash that starts a meta-command.

use crate::Version;

/// Why a scan stopped (`PsqlScanResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScanResult {
    /// A `;` at the top level ended a command (it is in the output).
    Semicolon,
    /// A `\` starts a meta-command; the position is just after it.
    Backslash,
    /// The end of the script inside a quote, comment, parentheses or a routine body,
    /// or with nothing collected.
    Incomplete,
    /// The end of the script with a complete command collected.
    Eol,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Initial,
    /// Bit string `B'…'`.
    Xb,
    /// Hex string `X'…'`.
    Xh,
    /// Standard string `'…'`.
    Xq,
    /// Extended string `E'…'` (backslash escapes).
    Xe,
    /// Unicode string `U&'…'`.
    Xus,
    /// Quoted identifier `"…"` or `U&"…"`.
    Xd,
    /// C comment, with its nesting depth.
    Xc,
    /// Dollar-quoted string; the tag's range in the script.
    Xdolq,
}

/// The lexer's state across scans (psql keeps it from one command to the next).
pub(crate) struct PsqlScan<'a> {
    buf: &'a [u8],
    pub(crate) pos: usize,
    version: Version,
    state: State,
    xcdepth: usize,
    dolq: (usize, usize),
    paren_depth: usize,
    begin_depth: usize,
    idents: [u8; 8],
    ident_count: usize,
}

fn ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn ident_cont(b: u8) -> bool {
    ident_start(b) || b.is_ascii_digit() || b == b'$'
}

fn dolq_cont(b: u8) -> bool {
    ident_start(b) || b.is_ascii_digit()
}

fn variable_char(b: u8) -> bool {
    ident_start(b) || b.is_ascii_digit()
}

impl<'a> PsqlScan<'a> {
    /// A lexer at the start of `buf`.
    pub(crate) fn new(buf: &'a [u8], version: Version) -> Self {
        PsqlScan {
            buf,
            pos: 0,
            version,
            state: State::Initial,
            xcdepth: 0,
            dolq: (0, 0),
            paren_depth: 0,
            begin_depth: 0,
            idents: [0; 8],
            ident_count: 0,
        }
    }

    fn is_space(&self, b: u8) -> bool {
        matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0c)
            || (b == 0x0b && self.version >= Version::V18)
    }

    fn is_horiz_space(&self, b: u8) -> bool {
        matches!(b, b' ' | b'\t' | 0x0c) || (b == 0x0b && self.version >= Version::V18)
    }

    fn at(&self, i: usize) -> Option<u8> {
        self.buf.get(i).copied()
    }

    /// Scans from the current position, appending the command's text to `out`, until a
    /// top-level `;`, a backslash or the end of the script.
    pub(crate) fn scan(&mut self, out: &mut Vec<u8>) -> ScanResult {
        loop {
            if self.pos >= self.buf.len() {
                return match self.state {
                    State::Initial if self.paren_depth > 0 || self.begin_depth > 0 => {
                        ScanResult::Incomplete
                    }
                    State::Initial if !out.is_empty() => ScanResult::Eol,
                    _ => ScanResult::Incomplete,
                };
            }
            let r = match self.state {
                State::Initial => self.initial(out),
                State::Xc => {
                    self.comment(out);
                    None
                }
                State::Xdolq => {
                    self.dollar(out);
                    None
                }
                State::Xd => {
                    self.quoted_ident(out);
                    None
                }
                _ => {
                    self.string(out);
                    None
                }
            };
            if let Some(r) = r {
                return r;
            }
        }
    }

    fn emit(&mut self, out: &mut Vec<u8>, len: usize) {
        out.extend_from_slice(&self.buf[self.pos..self.pos + len]);
        self.pos += len;
    }

    /// One token in the INITIAL state.
    fn initial(&mut self, out: &mut Vec<u8>) -> Option<ScanResult> {
        let p = self.pos;
        let b = self.buf[p];
        let n1 = self.at(p + 1);
        // Whitespace and `--` comments: dropped while nothing has been collected.
        if self.is_space(b) {
            let mut e = p;
            while e < self.buf.len() && self.is_space(self.buf[e]) {
                e += 1;
            }
            if out.is_empty() {
                self.pos = e;
            } else {
                self.emit(out, e - p);
            }
            return None;
        }
        if b == b'-' && n1 == Some(b'-') {
            let mut e = p;
            while e < self.buf.len() && !matches!(self.buf[e], b'\n' | b'\r') {
                e += 1;
            }
            if out.is_empty() {
                self.pos = e;
            } else {
                self.emit(out, e - p);
            }
            return None;
        }
        if b == b'/' && n1 == Some(b'*') {
            self.state = State::Xc;
            self.xcdepth = 0;
            self.emit(out, 2);
            return None;
        }
        let quote_after = |k: usize| self.at(p + k) == Some(b'\'');
        match b | 0x20 {
            b'b' if quote_after(1) => {
                self.state = State::Xb;
                self.emit(out, 2);
                return None;
            }
            b'x' if quote_after(1) => {
                self.state = State::Xh;
                self.emit(out, 2);
                return None;
            }
            // N'…': the `n` alone, then the quote starts a standard string.
            b'n' if quote_after(1) => {
                self.emit(out, 1);
                return None;
            }
            b'e' if quote_after(1) => {
                self.state = State::Xe;
                self.emit(out, 2);
                return None;
            }
            b'u' if n1 == Some(b'&') => {
                match self.at(p + 2) {
                    Some(b'\'') => {
                        self.state = State::Xus;
                        self.emit(out, 3);
                    }
                    Some(b'"') => {
                        self.state = State::Xd;
                        self.emit(out, 3);
                    }
                    // xufailed: the `u` alone.
                    _ => self.emit(out, 1),
                }
                return None;
            }
            _ => {}
        }
        match b {
            b'\'' => {
                self.state = State::Xq;
                self.emit(out, 1);
                None
            }
            b'"' => {
                self.state = State::Xd;
                self.emit(out, 1);
                None
            }
            b'$' => {
                self.dollar_start(out);
                None
            }
            b'(' => {
                self.paren_depth += 1;
                self.emit(out, 1);
                None
            }
            b')' => {
                self.paren_depth = self.paren_depth.saturating_sub(1);
                self.emit(out, 1);
                None
            }
            b';' => {
                self.emit(out, 1);
                if self.paren_depth == 0 && self.begin_depth == 0 {
                    self.ident_count = 0;
                    return Some(ScanResult::Semicolon);
                }
                None
            }
            b'\\' => match n1 {
                Some(c @ (b';' | b':')) => {
                    out.push(c);
                    self.pos += 2;
                    if c == b';'
                        && (self.version < Version::V18
                            || (self.paren_depth == 0 && self.begin_depth == 0))
                    {
                        self.ident_count = 0;
                    }
                    None
                }
                _ => {
                    self.pos += 1;
                    Some(ScanResult::Backslash)
                }
            },
            b':' => {
                self.colon(out);
                None
            }
            _ if b.is_ascii_digit() || (b == b'.' && n1.is_some_and(|c| c.is_ascii_digit())) => {
                self.number(out);
                None
            }
            _ if ident_start(b) => {
                let mut e = p;
                while e < self.buf.len() && ident_cont(self.buf[e]) {
                    e += 1;
                }
                self.track_identifier(p, e);
                self.emit(out, e - p);
                None
            }
            _ if is_op_char(b) => {
                self.operator(out);
                None
            }
            _ => {
                self.emit(out, 1);
                None
            }
        }
    }

    /// A run of operator characters, cut before a comment start (`--`, `/*`).
    fn operator(&mut self, out: &mut Vec<u8>) {
        let p = self.pos;
        let mut e = p;
        while e < self.buf.len() && is_op_char(self.buf[e]) {
            if e > p
                && ((self.buf[e - 1] == b'-' && self.buf[e] == b'-')
                    || (self.buf[e - 1] == b'/' && self.buf[e] == b'*'))
            {
                e -= 1;
                break;
            }
            e += 1;
        }
        self.emit(out, (e - p).max(1));
    }

    /// `$`: a dollar quote's opening tag, a parameter, or a lone `$`.
    fn dollar_start(&mut self, out: &mut Vec<u8>) {
        let p = self.pos;
        let mut e = p + 1;
        if self.at(e).is_some_and(ident_start) {
            e += 1;
            while self.at(e).is_some_and(dolq_cont) {
                e += 1;
            }
        }
        if self.at(e) == Some(b'$') {
            self.dolq = (p, e + 1);
            self.state = State::Xdolq;
            self.emit(out, e + 1 - p);
            return;
        }
        // dolqfailed, a parameter `$1` (its junk included) or a lone `$`.
        let mut e = p + 1;
        if self.at(e).is_some_and(|c| c.is_ascii_digit()) {
            while self.at(e).is_some_and(|c| c.is_ascii_digit()) {
                e += 1;
            }
            if self.at(e).is_some_and(ident_start) {
                while self.at(e).is_some_and(ident_cont) {
                    e += 1;
                }
            }
        }
        self.emit(out, e - p);
    }

    /// Inside `$tag$…$tag$`.
    fn dollar(&mut self, out: &mut Vec<u8>) {
        let p = self.pos;
        if self.buf[p] != b'$' {
            let e = self.buf[p..]
                .iter()
                .position(|&c| c == b'$')
                .map_or(self.buf.len(), |k| p + k);
            self.emit(out, e - p);
            return;
        }
        // A delimiter candidate `$…$`.
        let mut e = p + 1;
        if self.at(e).is_some_and(ident_start) {
            e += 1;
            while self.at(e).is_some_and(dolq_cont) {
                e += 1;
            }
        }
        if self.at(e) == Some(b'$') {
            let (s0, s1) = self.dolq;
            if self.buf[p..=e] == self.buf[s0..s1] {
                self.state = State::Initial;
                self.emit(out, e + 1 - p);
            } else {
                // Not ours: keep all but the final `$`, which may open the real one.
                self.emit(out, e - p);
            }
        } else {
            self.emit(out, (e - p).max(1));
        }
    }

    /// Inside `"…"`.
    fn quoted_ident(&mut self, out: &mut Vec<u8>) {
        let p = self.pos;
        if self.buf[p] == b'"' {
            if self.at(p + 1) == Some(b'"') {
                self.emit(out, 2);
            } else {
                self.state = State::Initial;
                self.emit(out, 1);
            }
            return;
        }
        let e = self.buf[p..]
            .iter()
            .position(|&c| c == b'"')
            .map_or(self.buf.len(), |k| p + k);
        self.emit(out, e - p);
    }

    /// Inside a quoted string (`'`, `E'`, `B'`, `X'`, `U&'`).
    fn string(&mut self, out: &mut Vec<u8>) {
        let p = self.pos;
        let b = self.buf[p];
        if b == b'\'' {
            let doubles = matches!(self.state, State::Xq | State::Xe | State::Xus);
            if doubles && self.at(p + 1) == Some(b'\'') {
                self.emit(out, 2);
                return;
            }
            self.emit(out, 1);
            // xqs: a string continues after whitespace with a newline and a quote.
            if let Some(len) = self.quote_continue(self.pos) {
                self.emit(out, len);
            } else {
                self.state = State::Initial;
            }
            return;
        }
        if self.state == State::Xe && b == b'\\' {
            // Any escape: the backslash and what follows (octal, hex and unicode
            // escapes never contain a quote, so their length does not matter here).
            self.emit(out, if p + 1 < self.buf.len() { 2 } else { 1 });
            return;
        }
        let stop = |c: u8| c == b'\'' || (c == b'\\' && self.state == State::Xe);
        let e = self.buf[p..]
            .iter()
            .position(|&c| stop(c))
            .map_or(self.buf.len(), |k| p + k);
        self.emit(out, (e - p).max(1));
    }

    /// `{quotecontinue}` at `p`: horizontal whitespace or comments, a newline, any
    /// whitespace or comment lines, then a quote; its length.
    fn quote_continue(&self, p: usize) -> Option<usize> {
        let mut i = p;
        loop {
            match self.at(i) {
                Some(c) if self.is_horiz_space(c) => i += 1,
                Some(b'-') if self.at(i + 1) == Some(b'-') => {
                    while self.at(i).is_some_and(|c| !matches!(c, b'\n' | b'\r')) {
                        i += 1;
                    }
                }
                _ => break,
            }
        }
        if !matches!(self.at(i), Some(b'\n' | b'\r')) {
            return None;
        }
        i += 1;
        loop {
            match self.at(i) {
                Some(c) if self.is_space(c) => i += 1,
                Some(b'-') if self.at(i + 1) == Some(b'-') => {
                    let mut j = i;
                    while self.at(j).is_some_and(|c| !matches!(c, b'\n' | b'\r')) {
                        j += 1;
                    }
                    if self.at(j).is_none() {
                        break;
                    }
                    i = j + 1;
                }
                _ => break,
            }
        }
        (self.at(i) == Some(b'\'')).then_some(i + 1 - p)
    }

    /// Inside a C comment (nested).
    fn comment(&mut self, out: &mut Vec<u8>) {
        let p = self.pos;
        let b = self.buf[p];
        if b == b'/' && self.at(p + 1) == Some(b'*') {
            self.xcdepth += 1;
            self.emit(out, 2);
            return;
        }
        if b == b'*' {
            let mut e = p;
            while self.at(e) == Some(b'*') {
                e += 1;
            }
            if self.at(e) == Some(b'/') {
                if self.xcdepth == 0 {
                    self.state = State::Initial;
                } else {
                    self.xcdepth -= 1;
                }
                self.emit(out, e + 1 - p);
            } else {
                self.emit(out, e - p);
            }
            return;
        }
        if b == b'/' {
            self.emit(out, 1);
            return;
        }
        let e = self.buf[p..]
            .iter()
            .position(|&c| c == b'*' || c == b'/')
            .map_or(self.buf.len(), |k| p + k);
        self.emit(out, e - p);
    }

    /// `:` at the top level: `::`, `:=`, psql's `:name`, `:'name'`, `:"name"`
    /// (kept as written), `:{?name}` (`FALSE`), or a lone colon.
    fn colon(&mut self, out: &mut Vec<u8>) {
        let p = self.pos;
        match self.at(p + 1) {
            Some(b':') | Some(b'=') => self.emit(out, 2),
            Some(c) if variable_char(c) => {
                let mut e = p + 1;
                while self.at(e).is_some_and(variable_char) {
                    e += 1;
                }
                self.emit(out, e - p);
            }
            Some(q @ (b'\'' | b'"')) => {
                let mut e = p + 2;
                while self.at(e).is_some_and(variable_char) {
                    e += 1;
                }
                if e > p + 2 && self.at(e) == Some(q) {
                    self.emit(out, e + 1 - p);
                } else {
                    self.emit(out, 1);
                }
            }
            Some(b'{') if self.at(p + 2) == Some(b'?') => {
                let mut e = p + 3;
                while self.at(e).is_some_and(variable_char) {
                    e += 1;
                }
                if e > p + 3 && self.at(e) == Some(b'}') {
                    out.extend_from_slice(b"FALSE");
                    self.pos = e + 1;
                } else {
                    self.emit(out, 1);
                }
            }
            _ => self.emit(out, 1),
        }
    }

    /// A number, with any identifier glued to it (`1abc` is one token, not an identifier).
    fn number(&mut self, out: &mut Vec<u8>) {
        let p = self.pos;
        let digits = |s: &Self, mut i: usize| {
            while s.at(i).is_some_and(|c| c.is_ascii_digit() || c == b'_') {
                i += 1;
            }
            i
        };
        let mut e = digits(self, p);
        if self.at(e) == Some(b'.') && self.at(e + 1) != Some(b'.') {
            e = digits(self, e + 1);
        }
        if matches!(self.at(e), Some(b'e' | b'E')) {
            let mut k = e + 1;
            if matches!(self.at(k), Some(b'+' | b'-')) {
                k += 1;
            }
            if self.at(k).is_some_and(|c| c.is_ascii_digit()) {
                e = digits(self, k);
            }
        }
        if self.at(e).is_some_and(ident_start) {
            while self.at(e).is_some_and(ident_cont) {
                e += 1;
            }
        }
        self.emit(out, (e - p).max(1));
    }

    /// psql's BEGIN … END tracking inside `CREATE [OR REPLACE] FUNCTION|PROCEDURE`.
    fn track_identifier(&mut self, s: usize, e: usize) {
        let w = &self.buf[s..e];
        let is = |k: &str| w.eq_ignore_ascii_case(k.as_bytes());
        let v18 = self.version >= Version::V18;
        if v18 && self.paren_depth != 0 {
            return;
        }
        if self.ident_count == 0 {
            self.idents = [0; 8];
        }
        let cap = if v18 { 8 } else { 4 };
        if self.ident_count < cap {
            if is("create") || is("function") || is("procedure") || is("or") || is("replace") {
                self.idents[self.ident_count] = w[0].to_ascii_lowercase();
            } else if v18 && (is("copy") || is("from") || is("stdin") || is("stdout")) {
                self.idents[self.ident_count] = w[0].to_ascii_uppercase();
            }
        }
        if !v18 || self.ident_count < cap {
            self.ident_count += 1;
        }
        let i = &self.idents;
        let routine = i[0] == b'c'
            && (i[1] == b'f'
                || i[1] == b'p'
                || (i[1] == b'o' && i[2] == b'r' && (i[3] == b'f' || i[3] == b'p')));
        if routine && self.paren_depth == 0 {
            if is("begin") {
                self.begin_depth += 1;
            } else if is("case") {
                if self.begin_depth >= 1 {
                    self.begin_depth += 1;
                }
            } else if is("end") && self.begin_depth > 0 {
                self.begin_depth -= 1;
            }
        }
    }
}

fn is_op_char(b: u8) -> bool {
    matches!(
        b,
        b'~' | b'!'
            | b'@'
            | b'#'
            | b'^'
            | b'&'
            | b'|'
            | b'`'
            | b'?'
            | b'+'
            | b'-'
            | b'*'
            | b'/'
            | b'%'
            | b'<'
            | b'>'
            | b'='
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Vec<(String, ScanResult)> {
        let mut l = PsqlScan::new(s.as_bytes(), Version::V15);
        let mut v = Vec::new();
        loop {
            let mut out = Vec::new();
            let r = l.scan(&mut out);
            if r == ScanResult::Backslash {
                // Skip the meta-command's line for the test.
                while l.pos < s.len() && s.as_bytes()[l.pos] != b'\n' {
                    l.pos += 1;
                }
            }
            v.push((String::from_utf8(out).unwrap(), r));
            if matches!(r, ScanResult::Eol | ScanResult::Incomplete) {
                return v;
            }
        }
    }

    #[test]
    fn semicolons_outside_quotes_and_bodies_end_commands() {
        use ScanResult::*;
        assert_eq!(
            split("SELECT 1; SELECT ';' ; SELECT $$;$$;\n"),
            vec![
                ("SELECT 1;".into(), Semicolon),
                ("SELECT ';' ;".into(), Semicolon),
                ("SELECT $$;$$;".into(), Semicolon),
                ("".into(), Incomplete),
            ]
        );
        assert_eq!(
            split("-- c\n  SELECT (1;\n2); SELECT /* ; /* ; */ ; */ 3"),
            vec![
                ("SELECT (1;\n2);".into(), Semicolon),
                ("SELECT /* ; /* ; */ ; */ 3".into(), Eol),
            ]
        );
        assert_eq!(
            split("SELECT 1 \\; SELECT 2 \\gset\nSELECT x\\:y"),
            vec![
                ("SELECT 1 ; SELECT 2 ".into(), Backslash),
                ("SELECT x:y".into(), Eol),
            ]
        );
        assert_eq!(
            split(
                "CREATE FUNCTION f() RETURNS int BEGIN ATOMIC SELECT 1; SELECT 2; END; SELECT 3;"
            ),
            vec![
                (
                    "CREATE FUNCTION f() RETURNS int BEGIN ATOMIC SELECT 1; SELECT 2; END;".into(),
                    Semicolon
                ),
                ("SELECT 3;".into(), Semicolon),
                ("".into(), Incomplete),
            ]
        );
        // x$$ is an identifier, not a dollar quote; $a$ … $b$ … $a$ nests.
        assert_eq!(
            split("SELECT x$$; SELECT $a$ $b$ ; $a$;"),
            vec![
                ("SELECT x$$;".into(), Semicolon),
                ("SELECT $a$ $b$ ; $a$;".into(), Semicolon),
                ("".into(), Incomplete),
            ]
        );
        // E'' escapes, '' doubling, continuation after a newline.
        assert_eq!(
            split("SELECT E'\\';', 'a'';b', 'x'\n';y';"),
            vec![
                ("SELECT E'\\';', 'a'';b', 'x'\n';y';".into(), Semicolon),
                ("".into(), Incomplete)
            ]
        );
        assert_eq!(
            split("SELECT :{?x}, :'a', :'b c';"),
            vec![
                ("SELECT FALSE, :'a', :'b c';".into(), Semicolon),
                ("".into(), Incomplete)
            ]
        );
        assert_eq!(
            split("SELECT 'open"),
            vec![("SELECT 'open".into(), Incomplete)]
        );
        assert_eq!(
            split("a +-- x;\n b;"),
            vec![("a +-- x;\n b;".into(), Semicolon), ("".into(), Incomplete)]
        );
    }
}
