//! fio's think-time options in a job (`thinktime`, `thinktime_spin`,
//! `thinktime_blocks`, `thinktime_blocks_type`), kept apart from the option
//! table in `mod.rs`. Times without a unit are microseconds, as in fio.

use super::value;
use crate::think::{ThinkCount, ThinkTime};

/// Whether `name` is one of the think-time options.
pub(super) fn takes(name: &str) -> bool {
    matches!(
        name,
        "thinktime"
            | "thinktime_spin"
            | "thinktime_blocks"
            | "thinktime_blocks_type"
            | "thinktime_iotime"
            | "thinkcycles"
    )
}

/// Sets one think-time option. Ok(Err(why)): a value csdchar lacks.
pub(super) fn set(t: &mut ThinkTime, name: &str, v: &str) -> Result<Result<(), String>, String> {
    let wrap = |e: value::ValueError| e.to_string();
    match name {
        "thinktime" => t.think_us = value::time_us(v, false).map_err(wrap)?,
        "thinktime_spin" => t.spin_us = value::time_us(v, false).map_err(wrap)?,
        "thinktime_blocks" => t.blocks = value::int(v).map_err(wrap)?.max(1),
        "thinktime_blocks_type" => {
            t.count = match v {
                "complete" => ThinkCount::Complete,
                "issue" => ThinkCount::Issue,
                other => {
                    return Err(format!("thinktime_blocks_type={other}: complete or issue"));
                }
            }
        }
        // A pause every so much time, and cycles spun between I/Os: 0 is off.
        _ => {
            let zero = if name == "thinkcycles" {
                value::int(v).map_err(wrap)? == 0
            } else {
                value::time_us(v, false).map_err(wrap)? == 0
            };
            if !zero {
                return Ok(Err(format!(
                    "{name} (csdchar pauses after a count of I/Os, thinktime_blocks)"
                )));
            }
        }
    }
    Ok(Ok(()))
}
