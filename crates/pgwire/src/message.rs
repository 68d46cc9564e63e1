//! The protocol's messages without I/O, shared by the blocking client ([`crate::wire`])
//! and the io_uring driver: requests encoded with `postgres-protocol` (the codec
//! tokio-postgres is built on) into a caller's buffer, and replies framed and scanned
//! in place ([`InBuf`], [`ReplyScan`]) without building rows.

use std::io;

use bytes::BytesMut;
use postgres_protocol::IsNull;
use postgres_protocol::message::frontend;

/// How a wire exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// The server answered with an error; the connection is still usable.
    #[error("{message} ({code})")]
    Db {
        /// SQLSTATE.
        code: String,
        /// Primary message.
        message: String,
    },
    /// The connection is gone (server stopped, killed, network).
    #[error("connection to the server lost: {0}")]
    Lost(String),
    /// Told to stop while waiting for the server.
    #[error("interrupted while waiting for the server")]
    Aborted,
    /// Could not connect or authenticate, or the server said something we cannot read.
    #[error("{0}")]
    Setup(String),
}

/// One statement's outcome, from its CommandComplete tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The statement returned a result set (sysbench's TUPLES_OK).
    pub returned_rows: bool,
    /// Rows returned or affected.
    pub rows: u64,
}

/// A bind parameter, sent in text format so the server's inferred types apply.
#[derive(Debug, Clone)]
pub enum Param {
    /// An integer.
    Int(i64),
    /// A string.
    Text(String),
}

/// What one exchange (up to ReadyForQuery) brought back.
#[derive(Debug)]
pub struct Reply<'a> {
    /// Completed statements, in order.
    pub completed: &'a [Completion],
    /// The rows they returned, when the connection keeps them
    /// ([`ReplyScan::keep_rows`]); empty otherwise.
    pub rows: Rows<'a>,
    /// The first error, if any (the server skips the rest up to Sync).
    pub error: Option<(String, String)>,
    /// Transaction status after the exchange: b'I' idle, b'T' in a block, b'E' failed block.
    pub status: u8,
}

/// Appends Bind + Execute of prepared statement `statement` (parameters and
/// results in text format: the server's inferred types apply, only the
/// result's row count matters).
pub fn encode_bind_execute(
    out: &mut BytesMut,
    statement: &str,
    params: &[Param],
) -> Result<(), WireError> {
    frontend::bind(
        "",
        statement,
        std::iter::empty(),
        params,
        |p, buf| {
            use std::fmt::Write as _;
            match p {
                Param::Int(v) => write!(buf, "{v}")?,
                Param::Text(s) => buf.extend_from_slice(s.as_bytes()),
            }
            Ok(IsNull::No)
        },
        std::iter::empty(),
        out,
    )
    .map_err(|e| {
        WireError::Setup(match e {
            frontend::BindError::Conversion(e) => format!("encoding a parameter: {e}"),
            frontend::BindError::Serialization(e) => format!("encoding a statement: {e}"),
        })
    })?;
    frontend::execute("", 0, out).map_err(setup)
}

/// Appends an unnamed Parse of `sql`, then Bind + Execute.
pub fn encode_unnamed(out: &mut BytesMut, sql: &str, params: &[Param]) -> Result<(), WireError> {
    frontend::parse("", sql, std::iter::empty(), out).map_err(setup)?;
    encode_bind_execute(out, "", params)
}

/// Appends a simple-protocol Query.
pub fn encode_query(out: &mut BytesMut, sql: &str) -> Result<(), WireError> {
    frontend::query(sql, out).map_err(setup)
}

/// Appends a Sync (the end of an extended-protocol exchange).
pub fn encode_sync(out: &mut BytesMut) {
    frontend::sync(out);
}

/// Received bytes, framed into backend messages.
pub struct InBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl InBuf {
    pub fn new(capacity: usize) -> InBuf {
        InBuf {
            buf: vec![0; capacity],
            start: 0,
            end: 0,
        }
    }

    /// Whether a whole message is buffered; grows the buffer for a message
    /// larger than it.
    pub fn has_message(&mut self) -> Result<bool, WireError> {
        let avail = self.end - self.start;
        if avail < 5 {
            return Ok(false);
        }
        let len = be32(&self.buf[self.start + 1..]) as usize;
        if len < 4 {
            return Err(WireError::Setup(format!(
                "the server sent a malformed message (length {len})"
            )));
        }
        if avail > len {
            return Ok(true);
        }
        if 1 + len > self.buf.len() {
            let mut bigger = vec![0; (1 + len).next_power_of_two()];
            bigger[..avail].copy_from_slice(&self.buf[self.start..self.end]);
            self.buf = bigger;
            self.start = 0;
            self.end = avail;
        }
        Ok(false)
    }

    /// The whole message at the front (after `has_message` said so): tag and body.
    pub fn message(&self) -> (u8, &[u8]) {
        let s = self.start;
        let len = be32(&self.buf[s + 1..]) as usize;
        (self.buf[s], &self.buf[s + 5..s + 1 + len])
    }

    /// Drops the message at the front.
    pub fn consume(&mut self) {
        let len = be32(&self.buf[self.start + 1..]) as usize;
        self.start += 1 + len;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Free space to receive into (never empty: moves the data to the front when full).
    pub fn spare(&mut self) -> &mut [u8] {
        if self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.buf[self.end..]
    }

    /// Free space to receive into, at least `n` bytes (the buffer grows when
    /// moving the data to the front does not make room).
    pub fn spare_at_least(&mut self, n: usize) -> &mut [u8] {
        if self.buf.len() - self.end < n {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() - self.end < n {
                self.buf.resize((self.end + n).next_power_of_two(), 0);
            }
        }
        &mut self.buf[self.end..]
    }

    /// Appends received bytes (from a provided buffer).
    pub fn extend(&mut self, data: &[u8]) {
        let mut data = data;
        while !data.is_empty() {
            if self.end == self.buf.len() && self.start == 0 {
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let spare = self.spare();
            let n = spare.len().min(data.len());
            spare[..n].copy_from_slice(&data[..n]);
            self.end += n;
            data = &data[n..];
        }
    }

    /// `n` bytes were received into `spare()`.
    pub fn filled(&mut self, n: usize) {
        self.end += n;
    }
}

/// The rows an exchange's statements returned, in text format: values
/// copied out of the DataRow messages into one buffer.
#[derive(Debug, Default)]
pub struct RowStore {
    data: Vec<u8>,
    /// Per value: its range in `data`; None for NULL.
    cells: Vec<Option<(u32, u32)>>,
    /// Per row: its first cell.
    row_starts: Vec<u32>,
    /// Per completed statement: its first row.
    statement_starts: Vec<u32>,
    /// Column names of the RowDescriptions, one after the other.
    names: Vec<u8>,
    /// Per column name: its end in `names`.
    name_ends: Vec<u32>,
    /// Per completed statement: its first column name (its last is the next one's first).
    statement_names: Vec<u32>,
    /// First column name of the statement in progress.
    names_start: u32,
}

impl RowStore {
    fn clear(&mut self) {
        self.data.clear();
        self.cells.clear();
        self.row_starts.clear();
        self.statement_starts.clear();
        self.names.clear();
        self.name_ends.clear();
        self.statement_names.clear();
        self.names_start = 0;
    }

    /// Takes a RowDescription body: Int16 count, then per field its name (C string) and
    /// 18 bytes of type information. A second one for the same statement replaces the first.
    fn push_names(&mut self, body: &[u8]) {
        let keep = self.names_start as usize;
        self.name_ends.truncate(keep);
        let base = keep
            .checked_sub(1)
            .map_or(0, |i| self.name_ends[i] as usize);
        self.names.truncate(base);
        let n = body
            .get(..2)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
        let mut at = 2;
        for _ in 0..n {
            let Some(end) = body.get(at..).and_then(|t| t.iter().position(|b| *b == 0)) else {
                return;
            };
            self.names.extend_from_slice(&body[at..at + end]);
            self.name_ends.push(self.names.len() as u32);
            at += end + 1 + 18;
        }
    }

    /// Appends one DataRow body: Int16 count, then per value Int32 length (-1: NULL) and bytes.
    fn push_row(&mut self, body: &[u8]) {
        self.row_starts.push(self.cells.len() as u32);
        let n = body
            .get(..2)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
        let mut at = 2;
        for _ in 0..n {
            let Some(len) = body.get(at..at + 4).map(be32) else {
                return;
            };
            at += 4;
            if len == u32::MAX {
                self.cells.push(None);
                continue;
            }
            let Some(v) = body.get(at..at + len as usize) else {
                return;
            };
            let start = self.data.len() as u32;
            self.data.extend_from_slice(v);
            self.cells.push(Some((start, len)));
            at += len as usize;
        }
    }

    /// A statement completed: the rows since the last one are its.
    fn end_statement(&mut self, first_row: u32) {
        self.statement_starts.push(first_row);
        self.statement_names.push(self.names_start);
        self.names_start = self.name_ends.len() as u32;
    }

    fn view(&self) -> Rows<'_> {
        Rows { store: Some(self) }
    }
}

/// The rows of one exchange's completed statements ([`Reply::rows`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Rows<'a> {
    store: Option<&'a RowStore>,
}

impl<'a> Rows<'a> {
    /// Completed statements with rows kept (0 when rows are not kept).
    pub fn statements(&self) -> usize {
        self.store.map_or(0, |s| s.statement_starts.len())
    }

    /// The rows of completed statement `i` of the exchange.
    pub fn statement(&self, i: usize) -> StatementRows<'a> {
        let Some(s) = self.store else {
            return StatementRows::default();
        };
        let first = s.statement_starts.get(i).copied().unwrap_or(0) as usize;
        let end = s
            .statement_starts
            .get(i + 1)
            .map_or(s.row_starts.len(), |e| *e as usize);
        let c0 = s.statement_names.get(i).copied().unwrap_or(0) as usize;
        let c1 = s
            .statement_names
            .get(i + 1)
            .map_or(s.names_start as usize, |e| *e as usize);
        StatementRows {
            store: Some(s),
            rows: first..end.max(first),
            columns: c0..c1.max(c0),
        }
    }

    /// The rows of the exchange's last completed statement.
    pub fn last(&self) -> StatementRows<'a> {
        match self.statements() {
            0 => StatementRows::default(),
            n => self.statement(n - 1),
        }
    }
}

/// The rows one statement returned.
#[derive(Debug, Clone, Default)]
pub struct StatementRows<'a> {
    store: Option<&'a RowStore>,
    rows: std::ops::Range<usize>,
    /// Its columns' entries in the store's names.
    columns: std::ops::Range<usize>,
}

impl<'a> StatementRows<'a> {
    /// Rows returned.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether it returned no row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Columns its RowDescription named (0 for a statement without rows).
    pub fn columns(&self) -> usize {
        self.columns.len()
    }

    /// The name of column `col`.
    pub fn column_name(&self, col: usize) -> &'a [u8] {
        let Some(s) = self.store else {
            return b"";
        };
        let i = self.columns.start + col;
        if i >= self.columns.end {
            return b"";
        }
        let start = i.checked_sub(1).map_or(0, |p| s.name_ends[p] as usize);
        &s.names[start..s.name_ends[i] as usize]
    }

    /// Value `col` of row `row` as bytes; None for NULL or out of range.
    pub fn get_bytes(&self, row: usize, col: usize) -> Option<&'a [u8]> {
        let s = self.store?;
        let r = self.rows.start + row;
        if r >= self.rows.end {
            return None;
        }
        let first = s.row_starts[r] as usize;
        let end = s
            .row_starts
            .get(r + 1)
            .map_or(s.cells.len(), |e| *e as usize);
        if first + col >= end {
            return None;
        }
        let (at, len) = s.cells[first + col]?;
        Some(&s.data[at as usize..(at + len) as usize])
    }

    /// Value `col` of row `row` as text; None for NULL or out of range.
    pub fn get(&self, row: usize, col: usize) -> Option<&'a str> {
        std::str::from_utf8(self.get_bytes(row, col)?).ok()
    }

    /// Value `col` of row `row` as a number; None for NULL or what does not parse.
    pub fn parse<T: std::str::FromStr>(&self, row: usize, col: usize) -> Option<T> {
        self.get(row, col)?.trim().parse().ok()
    }
}

/// One exchange's reply, message by message: counts completions, keeps the
/// first error (and the rows, when asked), ends at ReadyForQuery.
#[derive(Default)]
pub struct ReplyScan {
    completed: Vec<Completion>,
    rows: u64,
    error: Option<(String, String)>,
    status: u8,
    /// Keep the rows' values (workloads whose next statement depends on them).
    keep_rows: bool,
    kept: RowStore,
    statement_first_row: u32,
}

impl ReplyScan {
    /// A scan that keeps the rows' values when `keep_rows`.
    pub fn new(keep_rows: bool) -> ReplyScan {
        ReplyScan {
            keep_rows,
            ..ReplyScan::default()
        }
    }

    /// Starts a new exchange.
    pub fn reset(&mut self) {
        self.completed.clear();
        self.rows = 0;
        self.error = None;
        self.status = b'I';
        self.kept.clear();
        self.statement_first_row = 0;
    }

    /// Takes one message; true at ReadyForQuery (the reply is complete).
    pub fn on_message(&mut self, tag: u8, body: &[u8]) -> bool {
        match tag {
            b'D' => {
                self.rows += 1;
                if self.keep_rows {
                    self.kept.push_row(body);
                }
            }
            b'C' => {
                self.completed.push(completion(body, self.rows));
                self.rows = 0;
                if self.keep_rows {
                    self.kept.end_statement(self.statement_first_row);
                    self.statement_first_row = self.kept.row_starts.len() as u32;
                }
            }
            b'I' => {
                self.completed.push(Completion {
                    returned_rows: false,
                    rows: 0,
                });
                if self.keep_rows {
                    self.kept.end_statement(self.statement_first_row);
                }
            }
            b'T' if self.keep_rows => self.kept.push_names(body),
            b'E' if self.error.is_none() => self.error = Some(error_fields(body)),
            b'Z' => {
                self.status = body.first().copied().unwrap_or(b'I');
                return true;
            }
            _ => {} // ParseComplete, BindComplete, RowDescription, notices, ParameterStatus
        }
        false
    }

    /// The complete reply.
    pub fn reply(&self) -> Reply<'_> {
        Reply {
            completed: &self.completed,
            rows: if self.keep_rows {
                self.kept.view()
            } else {
                Rows::default()
            },
            error: self.error.clone(),
            status: self.status,
        }
    }

    /// The connection was lost mid-reply: a FATAL error followed by the
    /// server closing says what the server said.
    pub fn lost(&self, m: String) -> WireError {
        WireError::Lost(match &self.error {
            Some((code, msg)) => format!("{msg} ({code})"),
            None => m,
        })
    }
}

pub(crate) fn setup(e: io::Error) -> WireError {
    WireError::Setup(e.to_string())
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A CommandComplete tag (`SELECT 10`, `UPDATE 1`, `INSERT 0 1`, `BEGIN`).
fn completion(body: &[u8], data_rows: u64) -> Completion {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let rows = tag
        .rsplit(|b| *b == b' ')
        .next()
        .and_then(|n| std::str::from_utf8(n).ok()?.parse().ok());
    let returned_rows = tag.starts_with(b"SELECT") || tag.starts_with(b"FETCH") || data_rows > 0;
    Completion {
        returned_rows,
        rows: rows.unwrap_or(data_rows),
    }
}

/// SQLSTATE and message of an ErrorResponse body.
pub fn error_fields(body: &[u8]) -> (String, String) {
    let (mut code, mut message) = (String::new(), String::new());
    let mut rest = body;
    while let Some((&kind, tail)) = rest.split_first() {
        if kind == 0 {
            break;
        }
        let end = tail.iter().position(|b| *b == 0).unwrap_or(tail.len());
        let value = String::from_utf8_lossy(&tail[..end]).into_owned();
        match kind {
            b'C' => code = value,
            b'M' => message = value,
            _ => {}
        }
        rest = tail.get(end + 1..).unwrap_or(&[]);
    }
    (code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spare_at_least_moves_then_grows_and_keeps_what_is_buffered() {
        let mut b = InBuf::new(16);
        // A whole 9-byte message (tag, length 8, 4 bytes) and the start of the next.
        b.extend(&[b'D', 0, 0, 0, 8, 1, 2, 3, 4, b'C', 0, 0]);
        assert!(b.has_message().unwrap());
        b.consume();
        // 4 bytes free at the end; moving the 3 buffered to the front frees 13.
        assert_eq!(b.spare_at_least(10).len(), 13);
        // More than the buffer holds: it grows, and the 3 bytes stay first.
        let s = b.spare_at_least(100);
        assert!(s.len() >= 100);
        s[..3].copy_from_slice(&[0, 5, b'x']);
        b.filled(3);
        assert!(b.has_message().unwrap());
        assert_eq!(b.message(), (b'C', &b"x"[..]));
    }

    #[test]
    fn command_tags_give_counts_and_kind() {
        assert_eq!(
            completion(b"SELECT 10\0", 10),
            Completion {
                returned_rows: true,
                rows: 10
            }
        );
        assert_eq!(
            completion(b"INSERT 0 1\0", 0),
            Completion {
                returned_rows: false,
                rows: 1
            }
        );
        assert_eq!(completion(b"UPDATE 0\0", 0).rows, 0);
        assert_eq!(
            completion(b"BEGIN\0", 0),
            Completion {
                returned_rows: false,
                rows: 0
            }
        );
    }

    #[test]
    fn error_fields_are_read_and_malformed_bodies_do_not_panic() {
        let body = b"SERROR\0C23505\0Mduplicate key value\0\0";
        assert_eq!(
            error_fields(body),
            ("23505".to_string(), "duplicate key value".to_string())
        );
        assert_eq!(error_fields(b"C4"), ("4".to_string(), String::new()));
        assert_eq!(error_fields(b""), (String::new(), String::new()));
    }
}
