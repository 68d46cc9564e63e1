//! fio's error and file-layout options of a job (`continue_on_error`,
//! `ignore_error`, `verify_fatal`, `verify_async`, `error_dump`, `fallocate`,
//! `create_on_open`, `fill_device`) and the verify layout (`verify_pattern`,
//! `verify_interval`, `verify=meta`'s header), kept apart from the option table in
//! `mod.rs`.

use super::value;
use crate::on_error::ErrorPolicy;
use crate::result::block::{CreateOnOpen, Fallocate, RwMode};

/// What the options set, before the job's spec is built.
#[derive(Debug, Clone, Default)]
pub(super) struct ErrorsAndLayout {
    errors: ErrorPolicy,
    /// fio's fallocate; None: fio's default, native.
    fallocate: Option<Fallocate>,
    create_on_open: bool,
    fill_device: bool,
    verify_pattern: Vec<u8>,
    verify_interval: u64,
    /// `verify=meta` (fio's header-only verify), set by `verify`.
    pub(super) meta: bool,
    /// fio's verify_backlog and verify_backlog_batch (0: unset).
    verify_backlog: u64,
    verify_batch: u64,
    /// fio's verify_dump.
    verify_dump: bool,
}

/// Whether `name` is one of these options.
pub(super) fn takes(name: &str) -> bool {
    matches!(
        name,
        "continue_on_error"
            | "ignore_error"
            | "verify_fatal"
            | "verify_async"
            | "error_dump"
            | "fallocate"
            | "create_on_open"
            | "fill_device"
            | "fill_fs"
            | "create_serialize"
            | "verify_pattern"
            | "verify_interval"
            | "verify_backlog"
            | "verify_backlog_batch"
            | "verify_dump"
    )
}

/// Whether a job file's ioengine completes I/Os apart from submitting them:
/// `set`, it named one; `replaced`, the one csdchar runs on io_uring (None:
/// io_uring or null itself). fio's default is psync.
pub(super) fn async_engine(set: bool, replaced: Option<&str>) -> bool {
    set && matches!(replaced, None | Some("libaio" | "posixaio"))
}

impl ErrorsAndLayout {
    /// Sets one option. Ok(Err(why)): a value csdchar lacks.
    pub(super) fn set(
        &mut self,
        name: &str,
        v: Option<&str>,
    ) -> Result<Result<(), String>, String> {
        let wrap = |e: value::ValueError| e.to_string();
        let need = || v.ok_or_else(|| format!("{name} needs a value"));
        let bad = |m: String| format!("{name}={}: {m}", v.unwrap_or(""));
        match name {
            "continue_on_error" => {
                self.errors.continue_on =
                    crate::on_error::continue_on_error(need()?).map_err(bad)?
            }
            "ignore_error" => {
                crate::on_error::apply_ignore_error(&mut self.errors, need()?).map_err(bad)?
            }
            "verify_fatal" => self.errors.verify_fatal = value::boolean(v).map_err(wrap)?,
            // fio checks blocks off the submitting path; csdchar checks each
            // as it completes: the same blocks, the same verdicts.
            "verify_async" => {
                value::int(need()?).map_err(wrap)?;
            }
            "error_dump" if !value::boolean(v).map_err(wrap)? => {}
            "error_dump" => {
                return Ok(Err(
                    "error_dump=1 (printing every error, the non-fatal ones too)".into(),
                ));
            }
            "fallocate" => {
                self.fallocate = Some(match need()? {
                    "none" | "0" => Fallocate::None,
                    "native" => Fallocate::Native,
                    "posix" | "1" => Fallocate::Posix,
                    "keep" => Fallocate::Keep,
                    "truncate" => Fallocate::Sparse,
                    _ => return Err(bad("none, native, posix, keep or truncate (or 0, 1)".into())),
                })
            }
            "verify_backlog" => self.verify_backlog = value::int(need()?).map_err(wrap)?,
            "verify_backlog_batch" => self.verify_batch = value::int(need()?).map_err(wrap)?,
            "verify_dump" => self.verify_dump = value::boolean(v).map_err(wrap)?,
            "create_on_open" => self.create_on_open = value::boolean(v).map_err(wrap)?,
            "verify_interval" => {
                let n = value::bytes(need()?, 1024).map_err(wrap)?;
                // fio's minimum: twice its verify header.
                if n < 80 {
                    return Err(bad("at least 80 bytes (twice fio's verify header)".into()));
                }
                self.verify_interval = n;
            }
            "verify_pattern" => match pattern(need()?) {
                Some(p) => self.verify_pattern = p,
                None => {
                    return Ok(Err(
                        "a verify_pattern other than hex (0x…) and double-quoted strings, \
                                   joined (fio's numbers and %o are refused)"
                            .into(),
                    ));
                }
            },
            // Jobs that start together lay their files out at once, each in
            // its own thread: fio's create_serialize=0.
            "create_serialize" if !value::boolean(v).map_err(wrap)? => {}
            "create_serialize" => {
                return Ok(Err(
                    "create_serialize=1 (csdchar lays out the files of jobs that \
                               start together at once, each in its job's thread)"
                        .into(),
                ));
            }
            _ => self.fill_device = value::boolean(v).map_err(wrap)?,
        }
        Ok(Ok(()))
    }

    /// Combinations csdchar cannot run, as (option, why).
    pub(super) fn lacks(&self, rw: RwMode, verify: bool, lacks: &mut Vec<(&'static str, String)>) {
        if !self.verify_pattern.is_empty() && !verify {
            lacks.push((
                "verify_pattern",
                "verify_pattern without a checksum or meta verify= (fio's verify=pattern checks \
                 blocks with no header; csdchar's blocks carry one)"
                    .into(),
            ));
        }
        if self.fill_device && rw.reads() {
            lacks.push((
                "fill_device",
                "fill_device in a job that reads (csdchar fills with writes)".into(),
            ));
        }
    }

    /// The spec's error policy: fio's rules where they differ from
    /// csdchar's own, in a job that verifies or goes on after some errors;
    /// `async_engine`: the job file named an asynchronous ioengine.
    pub(super) fn policy(&self, verifies: bool, async_engine: bool) -> ErrorPolicy {
        if !verifies && self.errors.continue_on == 0 {
            return ErrorPolicy::default();
        }
        ErrorPolicy {
            fio_rules: true,
            async_engine,
            ..self.errors.clone()
        }
    }

    /// fio's verify_backlog and verify_backlog_batch (0: none; a batch of 0 is the
    /// backlog's size).
    pub(super) fn verify_backlog(&self) -> (u64, u64) {
        (self.verify_backlog, self.verify_batch)
    }

    /// fio's verify_dump.
    pub(super) fn verify_dump(&self) -> bool {
        self.verify_dump
    }

    /// fio's verify_pattern bytes (empty: none).
    pub(super) fn verify_pattern(&self) -> Vec<u8> {
        self.verify_pattern.clone()
    }

    /// The verify unit of a job of block size `bs`, as fio's fixup: a
    /// verify_interval over `bs`, or not dividing it, is the whole block
    /// (0: not set, the whole block).
    pub(super) fn verify_interval(&self, bs: u64) -> u64 {
        let iv = self.verify_interval;
        if iv == 0 || iv >= bs || !bs.is_multiple_of(iv) {
            0
        } else {
            iv
        }
    }

    /// fio's create_on_open in a job that reads (`async_engine`: the job
    /// file named an asynchronous ioengine): the file is not laid out, and a
    /// read past its end is taken as fio's engine kind takes it.
    pub(super) fn create_on_open(&self, rw: RwMode, async_engine: bool) -> CreateOnOpen {
        match (self.create_on_open && rw.reads(), async_engine) {
            (false, _) => CreateOnOpen::No,
            (true, true) => CreateOnOpen::Counted,
            (true, false) => CreateOnOpen::Fails,
        }
    }

    /// fio's fill_device, in a job that writes.
    pub(super) fn fill_device(&self, rw: RwMode) -> bool {
        self.fill_device && rw.writes()
    }

    /// How the job lays its file out: fio's fallocate, native when not set
    /// (fio's default where fallocate(2) exists); create_on_open and
    /// fill_device lay nothing out (the file is made by the job's open and
    /// grows as it writes; fio's fallocate_file and extend_file skip a
    /// fill_device job).
    pub(super) fn fallocate(&self, rw: RwMode) -> Fallocate {
        if self.create_on_open || self.fill_device(rw) {
            Fallocate::None
        } else {
            self.fallocate.unwrap_or(Fallocate::Native)
        }
    }
}

/// fio's verify_pattern: `0x` hex (bytes in the order written; an odd digit
/// count makes the first digit a byte) and double-quoted strings, joined with
/// nothing between, as fio 3.33 parses them; None for fio's other forms
/// (decimal numbers, `%o`) or a malformed one.
fn pattern(v: &str) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = v.trim();
    while !rest.is_empty() {
        if let Some(h) = rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
            let n = h.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(h.len());
            let digits = &h[..n];
            if digits.is_empty() {
                return None;
            }
            // An odd count: the first digit is a byte of its own, as fio's.
            let (first, pairs) = digits.split_at(digits.len() % 2);
            if !first.is_empty() {
                out.push(u8::from_str_radix(first, 16).ok()?);
            }
            for i in (0..pairs.len()).step_by(2) {
                out.push(u8::from_str_radix(&pairs[i..i + 2], 16).ok()?);
            }
            rest = &h[n..];
        } else if let Some(body) = rest.strip_prefix('"') {
            let end = body.find('"')?;
            out.extend_from_slice(&body.as_bytes()[..end]);
            rest = &body[end + 1..];
        } else {
            return None;
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn patterns_as_fio_writes_them() {
        assert_eq!(
            super::pattern("0xaa555aa5"),
            Some(vec![0xaa, 0x55, 0x5a, 0xa5])
        );
        assert_eq!(super::pattern("\"abc\""), Some(b"abc".to_vec()));
        assert_eq!(super::pattern("0xff\"ab\""), Some(vec![0xff, b'a', b'b']));
        assert_eq!(
            super::pattern("'ab'"),
            None,
            "fio 3.33 takes double quotes only"
        );
        assert_eq!(super::pattern("0x01,\"ab\""), None);
        assert_eq!(super::pattern("0xabc"), Some(vec![0x0a, 0xbc]));
        assert_eq!(super::pattern("%o"), None);
        assert_eq!(super::pattern("1234"), None);
        assert_eq!(super::pattern("\"open"), None);
    }
}
