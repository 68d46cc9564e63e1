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
