//! Variable substitution in SQL commands, compiled once per command: pgbench's
//! `assignVariables` (`-M simple`: values written into the text) and `parseQuery`
//! (`-M extended|prepared`: `$1…$n`, one parameter per occurrence). Both find `:name`
//! everywhere (inside quotes and comments too), skip runs of colons (`::int` casts) and
//! take the longest name; as both scan the original text left to right, the scan is
//! done here once and the result is a template.

use std::ops::Range;

use crate::vars::{Interner, VarId, Vars};

/// The most variable references an SQL command may have under `-M extended|prepared`.
pub const MAX_PARAMS: usize = 255;

fn name_start(b: u8) -> bool {
    b >= 0x80 || b.is_ascii_alphabetic() || b == b'_'
}

fn name_cont(b: u8) -> bool {
    name_start(b) || b.is_ascii_digit()
}

/// The variable references of `sql`: (range of `:name`, name), as pgbench's scans find them.
pub fn variable_refs(sql: &[u8]) -> Vec<(Range<usize>, &[u8])> {
    let mut refs = Vec::new();
    let mut p = 0;
    while let Some(k) = sql[p..].iter().position(|&b| b == b':').map(|k| p + k) {
        if sql.get(k + 1).copied().is_some_and(name_start) {
            let mut e = k + 2;
            while sql.get(e).copied().is_some_and(name_cont) {
                e += 1;
            }
            refs.push((k..e, &sql[k + 1..e]));
            p = e;
        } else {
            p = k;
            while sql.get(p) == Some(&b':') {
                p += 1;
            }
        }
    }
    refs
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(Range<usize>),
    Var { id: VarId, written: Range<usize> },
}

/// One SQL command ready for its query mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlTemplate {
    /// Simple: the command as written. Extended/prepared: with `$n` for each reference.
    text: Box<[u8]>,
    /// Simple: the text's pieces and references.
    pieces: Box<[Piece]>,
    /// Extended/prepared: the variable of each parameter, in order.
    params: Box<[VarId]>,
}

impl SqlTemplate {
    /// The template for `-M simple`.
    pub fn simple(sql: &[u8], interner: &mut Interner) -> SqlTemplate {
        let mut pieces = Vec::new();
        let mut at = 0;
        for (r, name) in variable_refs(sql) {
            if r.start > at {
                pieces.push(Piece::Text(at..r.start));
            }
            at = r.end;
            pieces.push(Piece::Var {
                id: interner.intern(name),
                written: r,
            });
        }
        if at < sql.len() {
            pieces.push(Piece::Text(at..sql.len()));
        }
        SqlTemplate {
            text: sql.into(),
            pieces: pieces.into(),
            params: Box::new([]),
        }
    }

    /// The template for `-M extended|prepared`; None past [`MAX_PARAMS`] references.
    pub fn parameterized(sql: &[u8], interner: &mut Interner) -> Option<SqlTemplate> {
        let refs = variable_refs(sql);
        if refs.len() > MAX_PARAMS {
            return None;
        }
        let mut text = Vec::with_capacity(sql.len());
        let mut params = Vec::with_capacity(refs.len());
        let mut at = 0;
        for (n, (r, name)) in refs.into_iter().enumerate() {
            text.extend_from_slice(&sql[at..r.start]);
            text.push(b'$');
            crate::value::write_int(&mut text, n as i64 + 1);
            at = r.end;
            params.push(interner.intern(name));
        }
        text.extend_from_slice(&sql[at..]);
        Some(SqlTemplate {
            text: text.into(),
            pieces: Box::new([]),
            params: params.into(),
        })
    }

    /// The text sent (extended/prepared: with `$n`).
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// The variables of the parameters (extended/prepared).
    pub fn params(&self) -> &[VarId] {
        &self.params
    }

    /// Writes the simple-protocol text: each reference replaced by the variable's text,
    /// an undefined one left as written.
    pub fn write_simple(&self, vars: &Vars, out: &mut Vec<u8>) {
        for p in self.pieces.iter() {
            match p {
                Piece::Text(r) => out.extend_from_slice(&self.text[r.clone()]),
                Piece::Var { id, written } => {
                    if !vars.write_text(*id, out) {
                        out.extend_from_slice(&self.text[written.clone()]);
                    }
                }
            }
        }
    }
}

/// The parameter values of one extended/prepared execution: text of each (None is SQL
/// NULL: an undefined variable), kept in one reusable buffer.
#[derive(Debug, Clone, Default)]
pub struct ParamBuf {
    bytes: Vec<u8>,
    /// Start and end of each parameter in `bytes`; None for NULL.
    spans: Vec<Option<(u32, u32)>>,
}

impl ParamBuf {
    /// Fills the buffer with `template`'s parameters from `vars`.
    pub(crate) fn fill(&mut self, template: &SqlTemplate, vars: &Vars) {
        self.bytes.clear();
        self.spans.clear();
        for id in template.params() {
            let start = self.bytes.len();
            if vars.write_text(*id, &mut self.bytes) {
                self.spans
                    .push(Some((start as u32, self.bytes.len() as u32)));
            } else {
                self.spans.push(None);
            }
        }
    }

    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }

    /// Number of parameters.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Parameter `i`'s text, None for NULL.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        self.spans[i].map(|(s, e)| &self.bytes[s as usize..e as usize])
    }

    /// Every parameter, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Option<&[u8]>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    #[test]
    fn references_follow_pgbench() {
        let names = |s: &str| {
            variable_refs(s.as_bytes())
                .into_iter()
                .map(|(_, n)| String::from_utf8(n.to_vec()).unwrap())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names("SELECT :a, :b::int, ':c', a:::d, :1x, :_e9"),
            ["a", "b", "c", "_e9"]
        );
        assert_eq!(names("x::int"), Vec::<String>::new());
    }

    #[test]
    fn simple_and_parameterized_forms() {
        let mut i = Interner::default();
        let sql = b"UPDATE t SET v = :delta WHERE id = :aid AND x = ':aid' -- :u\n;";
        let s = SqlTemplate::simple(sql, &mut i);
        let p = SqlTemplate::parameterized(sql, &mut i).unwrap();
        assert_eq!(
            p.text(),
            b"UPDATE t SET v = $1 WHERE id = $2 AND x = '$3' -- $4\n;"
        );
        assert_eq!(p.params().len(), 4);
        let mut vars = Vars::new(i.len());
        vars.set_value(i.get(b"delta").unwrap(), Value::Int(-5));
        vars.set_text(i.get(b"aid").unwrap(), b"7");
        let mut out = Vec::new();
        s.write_simple(&vars, &mut out);
        assert_eq!(
            out,
            b"UPDATE t SET v = -5 WHERE id = 7 AND x = '7' -- :u\n;"
        );
        let mut pb = ParamBuf::default();
        pb.fill(&p, &vars);
        assert_eq!(
            pb.iter().collect::<Vec<_>>(),
            vec![Some(&b"-5"[..]), Some(b"7"), Some(b"7"), None]
        );
        let many = format!("SELECT {}", vec![":i"; 256].join(","));
        assert!(SqlTemplate::parameterized(many.as_bytes(), &mut i).is_none());
        let ok = format!("SELECT {}", vec![":i"; 255].join(","));
        assert!(SqlTemplate::parameterized(ok.as_bytes(), &mut i).is_some());
    }
}
