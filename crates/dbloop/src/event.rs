//! What a workload hands the measured loop: events (transactions) drawn in advance,
//! each a list of calls to the run's statements ([`StatementSet`]) with their
//! parameters, encoded in the chosen protocol ([`Protocol`], pgbench's `-M`), and a
//! conversation's next statements when they depend on the last reply ([`Follow`]).

use bytes::BytesMut;
use csdchar_pgwire::message::{self, Param, Reply, WireError};
use rand_xoshiro::Xoshiro256PlusPlus;

/// How statements travel (pgbench's `-M`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// A Query message with the values written into the SQL.
    Simple,
    /// Unnamed Parse, Bind, Execute every time.
    Extended,
    /// Named statements prepared once per connection (sysbench's way).
    Prepared,
}

impl Protocol {
    /// pgbench's name of the mode.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
            Protocol::Prepared => "prepared",
        }
    }
}

/// The statements a workload executes, by id: SQL with `$n` parameters and
/// the name each is prepared under (empty: never prepared, parsed at each use).
#[derive(Debug, Default)]
pub struct StatementSet {
    sql: Vec<String>,
    names: Vec<String>,
}

impl StatementSet {
    /// Adds a statement; returns its id.
    pub fn push(&mut self, name: String, sql: String) -> usize {
        self.names.push(name);
        self.sql.push(sql);
        self.sql.len() - 1
    }

    pub(crate) fn to_prepare(&self) -> Vec<(String, String)> {
        self.names
            .iter()
            .cloned()
            .zip(self.sql.iter().cloned())
            .filter(|(n, _)| !n.is_empty())
            .collect()
    }
}

/// One statement of an event.
pub(crate) struct Call {
    statement: usize,
    params: std::ops::Range<usize>,
    /// Sent in one exchange with the call after it (one Sync for both).
    with_next: bool,
}

/// One event (transaction). Most are drawn whole in advance; a
/// conversation ([`EventSource::follow`]) adds calls as replies arrive,
/// when a statement depends on an earlier one's rows.
#[derive(Default)]
pub struct Event {
    pub(crate) calls: Vec<Call>,
    params: Vec<Param>,
    block: bool,
    pub(crate) kind: usize,
    pub(crate) intended_rollback: bool,
}

impl Event {
    /// Empties the event for the next draw.
    pub fn clear(&mut self) {
        self.calls.clear();
        self.params.clear();
        self.block = false;
        self.kind = 0;
        self.intended_rollback = false;
    }

    /// Appends statement `statement` with `params`, sent in the same
    /// exchange as the call pushed after it (JDBC's implicit BEGIN before a
    /// transaction's first statement, a JDBC batch: one Sync for all).
    pub fn push_with_next(&mut self, statement: usize, params: &[Param]) {
        self.push(statement, params);
        if let Some(c) = self.calls.last_mut() {
            c.with_next = true;
        }
    }

    /// The transaction ends in an intended rollback (the ROLLBACK is the
    /// event's own last call): counted as completed and as a rollback.
    pub fn set_intended_rollback(&mut self) {
        self.intended_rollback = true;
    }

    /// Sets the event's kind: an index into [`Workload::kinds`], counted and
    /// timed on its own (TPC-C's five transactions).
    pub fn set_kind(&mut self, kind: usize) {
        self.kind = kind;
    }

    /// Appends statement `statement` with `params`.
    pub fn push(&mut self, statement: usize, params: &[Param]) {
        let start = self.params.len();
        self.params.extend_from_slice(params);
        self.calls.push(Call {
            statement,
            params: start..self.params.len(),
            with_next: false,
        });
    }

    /// Marks the event as one BEGIN … COMMIT block, which `--pipeline` may
    /// send in one round trip: an error makes the server skip the rest up to the Sync.
    pub fn set_block(&mut self) {
        self.block = true;
    }

    /// Calls pushed so far.
    pub fn call_count(&self) -> usize {
        self.calls.len()
    }

    /// The statement ids of calls `from..to`.
    pub fn statement_ids(&self, from: usize, to: usize) -> Vec<usize> {
        self.calls[from..to].iter().map(|c| c.statement).collect()
    }

    /// Whether the event ends in an intended rollback.
    pub fn ends_in_intended_rollback(&self) -> bool {
        self.intended_rollback
    }

    /// Encodes the exchange from `from` in the prepared protocol, one round trip per
    /// statement (what a workload's own tests check a conversation against).
    pub fn encode_prepared_exchange(
        &self,
        from: usize,
        out: &mut BytesMut,
        set: &StatementSet,
    ) -> Result<usize, WireError> {
        self.encode_exchange(from, out, set, Protocol::Prepared, false)
    }

    /// Encodes the event's exchange that starts at call `from` into `out`
    /// and returns the call after it: one round trip per statement, or the
    /// whole block in one when `pipeline` (not in the simple protocol, as in
    /// pgbench).
    pub(crate) fn encode_exchange(
        &self,
        from: usize,
        out: &mut BytesMut,
        set: &StatementSet,
        protocol: Protocol,
        pipeline: bool,
    ) -> Result<usize, WireError> {
        let queue = |out: &mut BytesMut, c: &Call| {
            let params = &self.params[c.params.clone()];
            match protocol {
                // A statement without a name is parsed every time (a JDBC
                // driver's one-shot BEGIN, COMMIT and ROLLBACK).
                Protocol::Prepared if set.names[c.statement].is_empty() => {
                    message::encode_unnamed(out, &set.sql[c.statement], params)
                }
                Protocol::Prepared => {
                    message::encode_bind_execute(out, &set.names[c.statement], params)
                }
                Protocol::Extended => message::encode_unnamed(out, &set.sql[c.statement], params),
                Protocol::Simple => {
                    message::encode_query(out, &literal_sql(&set.sql[c.statement], params))
                }
            }
        };
        // The calls joined to `from` ([`Event::push_with_next`]).
        let mut end = from + 1;
        while end < self.calls.len() && self.calls[end - 1].with_next {
            end += 1;
        }
        if protocol == Protocol::Simple {
            if end == from + 1 {
                queue(out, &self.calls[from])?;
            } else {
                // One Query message with the statements joined.
                let sql: Vec<String> = self.calls[from..end]
                    .iter()
                    .map(|c| literal_sql(&set.sql[c.statement], &self.params[c.params.clone()]))
                    .collect();
                message::encode_query(out, &sql.join("; "))?;
            }
            return Ok(end);
        }
        if pipeline && self.block {
            end = self.calls.len();
        }
        for c in &self.calls[from..end] {
            queue(out, c)?;
        }
        message::encode_sync(out);
        Ok(end)
    }
}

/// `sql` with `$n` replaced by literals (simple protocol).
pub(crate) fn literal_sql(sql: &str, params: &[Param]) -> String {
    let mut out = String::with_capacity(sql.len() + 16 * params.len());
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let digits = rest[at + 1..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        let n: usize = rest[at + 1..at + 1 + digits].parse().unwrap_or(0);
        match params.get(n.wrapping_sub(1)) {
            Some(Param::Int(v)) => out.push_str(&v.to_string()),
            Some(Param::Text(s)) => {
                out.push('\'');
                out.push_str(&s.replace('\'', "''"));
                out.push('\'');
            }
            None => out.push_str(&rest[at..at + 1 + digits]),
        }
        rest = &rest[at + 1 + digits..];
    }
    out.push_str(rest);
    out
}

/// Draws a workload's events; one per client, seeded by the runner.
pub trait EventSource: Send {
    /// Fills `event` (cleared) with the next transaction.
    fn draw(&mut self, rng: &mut Xoshiro256PlusPlus, event: &mut Event);

    /// Every call of `event` has completed; `reply` is the last exchange's
    /// (its rows kept when [`Workload::keeps_rows`]). A conversation pushes
    /// the next calls and says [`Follow::More`]; the default: done.
    fn follow(&mut self, reply: &Reply<'_>, event: &mut Event) -> Follow {
        let _ = (reply, event);
        Follow::Done
    }
}

/// The event source of a workload whose clients run sessions
/// ([`Workload::sessions`]): it draws nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEvents;

impl EventSource for NoEvents {
    fn draw(&mut self, _: &mut Xoshiro256PlusPlus, _: &mut Event) {}
}

/// What a conversation does after a reply ([`EventSource::follow`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Follow {
    /// The event is complete.
    Done,
    /// Calls were pushed: send them.
    More,
    /// The reply broke the workload's rules (a row that must exist did
    /// not): the run ends with this error, as BenchmarkSQL's does.
    Fail(String),
}

/// Everything the runner needs to know about a workload.
pub struct Workload {
    /// The statements, prepared per connection in the prepared protocol.
    pub statements: StatementSet,
    /// Makes one client's event source.
    pub sources: Box<dyn Fn() -> Box<dyn EventSource> + Send + Sync>,
    /// SQLSTATEs after which the transaction is rolled back, counted and restarted.
    pub retry_codes: &'static [&'static str],
    /// SQLSTATEs that end a transaction as an intended rollback (TPC-C's 1%
    /// of New-Orders): counted as completed and as a rollback, not retried,
    /// not an error.
    pub rollback_codes: &'static [&'static str],
    /// SQLSTATEs after which the transaction is rolled back, counted as an
    /// error and as completed, and not retried (BenchmarkSQL's way with
    /// serialization failures and deadlocks).
    pub abandon_codes: &'static [&'static str],
    /// Replies carry the rows' values ([`EventSource::follow`] reads them).
    pub keeps_rows: bool,
    /// Names of the event kinds ([`Event::set_kind`]), counted and timed on
    /// their own; empty for workloads with one kind.
    pub kinds: Vec<&'static str>,
    /// How statements travel.
    pub protocol: Protocol,
    /// Seed of the clients' random streams.
    pub seed: u64,
    /// Clients that drive their connection themselves (pgbench scripts): when set,
    /// each client runs its [`crate::session::Session`] and `sources` is not used.
    pub sessions: Option<crate::session::SessionFactory>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_replace_parameters_by_number_and_quote_strings() {
        let p = [
            Param::Int(-5),
            Param::Text("it's".into()),
            Param::Int(7),
            Param::Int(8),
            Param::Int(9),
            Param::Int(10),
            Param::Int(11),
            Param::Int(12),
            Param::Int(13),
            Param::Int(14),
        ];
        assert_eq!(
            literal_sql("UPDATE t SET a = a + $1, c = $2 WHERE id = $10", &p),
            "UPDATE t SET a = a + -5, c = 'it''s' WHERE id = 14"
        );
        assert_eq!(literal_sql("SELECT $", &p), "SELECT $");
        assert_eq!(literal_sql("SELECT $99", &p), "SELECT $99");
    }
}
