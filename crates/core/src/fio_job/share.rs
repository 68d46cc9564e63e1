//! fio's options for how a job shares the machine (`flow_id`, `flow`,
//! `flow_sleep`, `numa_cpu_nodes`, `numa_mem_policy`), kept apart from the
//! option table in `mod.rs`.

use super::value;
use crate::share::{FLOW_MAX_WEIGHT, JobShare, MemPolicy, NodeSet};

/// Whether `name` is one of these options.
pub(super) fn takes(name: &str) -> bool {
    matches!(
        name,
        "flow_id" | "flow" | "flow_sleep" | "numa_cpu_nodes" | "numa_mem_policy"
    )
}

/// Sets one option.
pub(super) fn set(s: &mut JobShare, name: &str, v: &str) -> Result<Result<(), String>, String> {
    let wrap = |e: value::ValueError| e.to_string();
    match name {
        "flow_id" => {
            s.flow.id = u32::try_from(value::int(v).map_err(wrap)?)
                .map_err(|_| format!("flow_id={v}: a number up to {}", u32::MAX))?
        }
        "flow" => {
            s.flow.weight = value::int(v)
                .ok()
                .and_then(|w| u32::try_from(w).ok())
                .filter(|w| *w <= FLOW_MAX_WEIGHT)
                .ok_or_else(|| format!("flow={v}: a weight from 0 to {FLOW_MAX_WEIGHT}"))?
        }
        // fio reads a plain number, microseconds.
        "flow_sleep" => s.flow.sleep_us = value::int(v).map_err(wrap)?,
        "numa_cpu_nodes" => {
            s.numa.cpu_nodes =
                Some(NodeSet::parse(v).map_err(|e| format!("numa_cpu_nodes={v}: {e}"))?)
        }
        _ => {
            s.numa.mem_policy =
                Some(MemPolicy::parse(v).map_err(|e| format!("numa_mem_policy={v}: {e}"))?)
        }
    }
    Ok(Ok(()))
}

/// Whether `name` is one of the priority options.
pub(super) fn takes_prio(name: &str) -> bool {
    matches!(
        name,
        "prio"
            | "prioclass"
            | "cmdprio_percentage"
            | "cmdprio_class"
            | "cmdprio"
            | "cmdprio_bssplit"
            | "log_prio"
    )
}

/// Sets one priority option (a bare `log_prio` is 1).
pub(super) fn set_prio(s: &mut JobShare, name: &str, v: Option<&str>) -> Result<(), String> {
    let wrap = |e: value::ValueError| e.to_string();
    if name == "log_prio" {
        s.prio.log_prio = value::boolean(v).map_err(wrap)?;
        return Ok(());
    }
    let v = v.ok_or_else(|| format!("{name} needs a value"))?;
    let ranged = |t: &str, lo: u64, hi: u64| -> Result<u8, String> {
        value::int(t)
            .ok()
            .filter(|n| (lo..=hi).contains(n))
            .map(|n| n as u8)
            .ok_or_else(|| format!("{name}={v}: {lo} to {hi}"))
    };
    // Read and write values, "R,W" or one for both (fio's per-direction options).
    let per_dir = |slots: &mut [u8; 2], lo: u64, hi: u64| -> Result<(), String> {
        for (slot, part) in slots.iter_mut().zip(value::per_direction(v)) {
            if let Some(p) = part {
                *slot = ranged(p, lo, hi)?;
            }
        }
        Ok(())
    };
    match name {
        "prio" => s.prio.level = Some(ranged(v, 0, 7)?),
        "prioclass" => s.prio.class = Some(ranged(v, 0, 3)?),
        "cmdprio_percentage" => per_dir(&mut s.prio.cmd_percentage, 0, 100)?,
        "cmdprio_class" => per_dir(&mut s.prio.cmd_class, 1, 3)?,
        "cmdprio_bssplit" => {
            let bytes = |t: &str| value::bytes(t, 1024).map_err(wrap);
            s.prio.cmd_bssplit = crate::share::parse_bssplit(v, &bytes)
                .map_err(|e| format!("cmdprio_bssplit={v}: {e}"))?;
        }
        _ => per_dir(&mut s.prio.cmd_level, 0, 7)?,
    }
    let p = &s.prio;
    if p.cmd_percentage != [0, 0] && !(p.cmd_bssplit[0].is_empty() && p.cmd_bssplit[1].is_empty()) {
        return Err("cmdprio_percentage and cmdprio_bssplit are mutually exclusive".into());
    }
    Ok(())
}

/// The first cmdprio option set (fio's engine options of io_uring and
/// libaio, which it refuses with other engines) unless `engine_has_them`.
pub(super) fn engine_option(
    set_at: &[(String, String, String)],
    engine_has_them: bool,
) -> Option<&'static str> {
    const CMDPRIO: [&str; 4] = [
        "cmdprio_percentage",
        "cmdprio_class",
        "cmdprio",
        "cmdprio_bssplit",
    ];
    if engine_has_them {
        return None;
    }
    set_at
        .iter()
        .find_map(|(n, _, _)| CMDPRIO.iter().find(|c| *c == n).copied())
}
