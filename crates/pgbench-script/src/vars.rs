//! Client variables. Every name a script can read or write (`:name` in expressions, SQL
//! and shell arguments, `\set`/`\setshell` targets, `-D` and the automatic variables) is
//! interned once when the scripts are compiled, so a client's variables are a vector
//! indexed by slot: no hashing or string comparison per transaction. Names seen only at
//! run time (a `\gset` column no script reads) are validated as pgbench does and then
//! dropped, which nothing can observe.

use std::collections::HashMap;

use crate::value::{TextValueError, Value, parse_text_value};

/// A variable's slot in every client's [`Vars`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub(crate) u32);

impl VarId {
    /// The slot's index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The names of all variable slots of a compiled program.
#[derive(Debug, Clone, Default)]
pub struct Interner {
    names: Vec<Box<[u8]>>,
    ids: HashMap<Box<[u8]>, VarId>,
}

impl Interner {
    /// The slot of `name`, created if new.
    pub fn intern(&mut self, name: &[u8]) -> VarId {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = VarId(self.names.len() as u32);
        self.names.push(name.into());
        self.ids.insert(name.into(), id);
        id
    }

    /// The slot of `name`, if any script mentions it.
    pub fn get(&self, name: &[u8]) -> Option<VarId> {
        self.ids.get(name).copied()
    }

    /// The name of slot `id`.
    pub fn name(&self, id: VarId) -> &[u8] {
        &self.names[id.index()]
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there are no slots.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// pgbench's `valid_variable_name`: ASCII letters, `_` or any byte ≥ 0x80, then also
/// digits; not empty.
pub fn valid_variable_name(name: &[u8]) -> bool {
    let first_ok = |b: u8| b >= 0x80 || b.is_ascii_alphabetic() || b == b'_';
    match name.split_first() {
        None => false,
        Some((f, rest)) => first_ok(*f) && rest.iter().all(|&b| first_ok(b) || b.is_ascii_digit()),
    }
}

/// One variable's state.
#[derive(Debug, Clone, Default)]
pub(crate) enum Slot {
    /// Not defined.
    #[default]
    Undefined,
    /// A string (from `-D`, `\gset`, `\aset`), typed on first use in an expression; the
    /// buffer is reused when it is overwritten.
    Text { text: Vec<u8>, typed: Option<Value> },
    /// A value (from `\set`, `\setshell` and the automatic variables).
    Typed(Value),
}

/// Why a variable cannot be read as a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// Not defined: `undefined variable "name"`.
    Undefined,
    /// Its text is not a value.
    Text(TextValueError),
}

/// One client's variables.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    slots: Vec<Slot>,
}

impl Vars {
    /// `n` undefined variables.
    pub fn new(n: usize) -> Vars {
        Vars {
            slots: vec![Slot::Undefined; n],
        }
    }

    /// Whether slot `id` is defined.
    pub fn is_defined(&self, id: VarId) -> bool {
        !matches!(self.slots[id.index()], Slot::Undefined)
    }

    /// Sets slot `id` to a value.
    pub fn set_value(&mut self, id: VarId, v: Value) {
        self.slots[id.index()] = Slot::Typed(v);
    }

    /// Sets slot `id` to a string (typed lazily), reusing its buffer.
    pub fn set_text(&mut self, id: VarId, text: &[u8]) {
        match &mut self.slots[id.index()] {
            Slot::Text { text: t, typed } => {
                t.clear();
                t.extend_from_slice(text);
                *typed = None;
            }
            s => {
                *s = Slot::Text {
                    text: text.to_vec(),
                    typed: None,
                }
            }
        }
    }

    /// The value of slot `id`, typing its text on first use as pgbench does (the result
    /// is kept; a failure is not, and repeats at every use).
    pub fn value(&mut self, id: VarId) -> Result<Value, ReadError> {
        match &mut self.slots[id.index()] {
            Slot::Undefined => Err(ReadError::Undefined),
            Slot::Typed(v) => Ok(*v),
            Slot::Text { text, typed } => match typed {
                Some(v) => Ok(*v),
                None => {
                    let v = parse_text_value(text).map_err(ReadError::Text)?;
                    *typed = Some(v);
                    Ok(v)
                }
            },
        }
    }

    /// The raw text of a string variable (for error messages).
    pub fn text(&self, id: VarId) -> Option<&[u8]> {
        match &self.slots[id.index()] {
            Slot::Text { text, .. } => Some(text),
            _ => None,
        }
    }

    /// Appends slot `id`'s text form (`getVariable`): the string as given, or the value
    /// formatted. Returns false, appending nothing, when it is undefined.
    pub fn write_text(&self, id: VarId, out: &mut Vec<u8>) -> bool {
        match &self.slots[id.index()] {
            Slot::Undefined => false,
            Slot::Text { text, .. } => {
                out.extend_from_slice(text);
                true
            }
            Slot::Typed(v) => {
                v.write_text(out);
                true
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_pgbench() {
        assert!(valid_variable_name(b"a"));
        assert!(valid_variable_name(b"_x1"));
        assert!(valid_variable_name("é".as_bytes()));
        assert!(!valid_variable_name(b""));
        assert!(!valid_variable_name(b"1x"));
        assert!(!valid_variable_name(b"?column?"));
        assert!(!valid_variable_name(b"bad name!"));
        assert!(!valid_variable_name(b"."));
    }

    #[test]
    fn text_is_typed_once_and_failures_repeat() {
        let mut i = Interner::default();
        let a = i.intern(b"a");
        assert_eq!(i.intern(b"a"), a);
        let mut v = Vars::new(i.len());
        assert_eq!(v.value(a), Err(ReadError::Undefined));
        v.set_text(a, b"bla");
        assert!(v.value(a).is_err());
        assert!(v.value(a).is_err());
        v.set_text(a, b"12");
        assert_eq!(v.value(a), Ok(Value::Int(12)));
        let mut out = Vec::new();
        assert!(v.write_text(a, &mut out));
        assert_eq!(out, b"12");
        v.set_value(a, Value::Double(0.5));
        out.clear();
        v.write_text(a, &mut out);
        assert_eq!(out, b"0.5");
    }
}
