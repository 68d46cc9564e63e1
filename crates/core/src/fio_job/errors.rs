//! fio's error and file-layout options of a job (`continue_on_error`,
//! `ignore_error`, `verify_fatal`, `verify_async`, `error_dump`, `fallocate`,
//! `create_on_open`, `fill_device`), kept apart from the option table in
//! `mod.rs`.

use super::value;
use crate::on_error::ErrorPolicy;
use crate::result::block::{Fallocate, RwMode};

/// What the options set, before the job's spec is built.
#[derive(Debug, Clone, Default)]
pub(super) struct ErrorsAndLayout {
    errors: ErrorPolicy,
    fallocate: Fallocate,
    create_on_open: bool,
    fill_device: bool,
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
                self.fallocate = match need()? {
                    "none" | "0" => Fallocate::None,
                    "native" => Fallocate::Native,
                    "posix" | "1" => Fallocate::Posix,
                    "keep" => Fallocate::Keep,
                    "truncate" => Fallocate::Truncate,
                    _ => return Err(bad("none, native, posix, keep or truncate (or 0, 1)".into())),
                }
            }
            "create_on_open" => self.create_on_open = value::boolean(v).map_err(wrap)?,
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
    pub(super) fn lacks(&self, rw: RwMode, lacks: &mut Vec<(&'static str, String)>) {
        if self.fill_device && rw.reads() {
            lacks.push((
                "fill_device",
                "fill_device in a job that reads (csdchar fills with writes)".into(),
            ));
        }
        if self.create_on_open && rw.reads() {
            lacks.push((
                "create_on_open",
                "create_on_open in a job that reads (csdchar lays out what a job reads before it \
                 starts)"
                    .into(),
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

    /// fio's fill_device, in a job that writes.
    pub(super) fn fill_device(&self, rw: RwMode) -> bool {
        self.fill_device && rw.writes()
    }

    /// How the job lays its file out: create_on_open and fill_device lay
    /// nothing out (the file is made by the job's open and grows as it
    /// writes; fio's fallocate_file and extend_file skip a fill_device job).
    pub(super) fn fallocate(&self, rw: RwMode) -> Fallocate {
        if self.create_on_open || self.fill_device(rw) {
            Fallocate::None
        } else {
            self.fallocate
        }
    }
}
