//! How long a step is expected to take, from its options. Measured runs are
//! exact (`--time`, `--warmup` per thread count; `--runtime`, `--ramp-time`);
//! loads are a heuristic, calibrated on this project's 2-core VM
//! (BENCHMARKS.md), so a plan's total is right to within a factor of about
//! two on similar machines:
//!
//! | step | estimate |
//! |---|---|
//! | every db step | [`DB_OVERHEAD`] (server start/stop; initdb the first time) |
//! | `db run` | per `--threads` count: `--warmup` + `--time` (defaults 0s, 10s) + [`SWEEP_STEP_OVERHEAD`] |
//! | `db prepare` | the load: sysbench `tables × table-size` rows at [`SYSBENCH_ROWS_PER_S`]; tpcb `scale` × [`TPCB_S_PER_SCALE`]; tpcc `warehouses` × [`TPCC_S_PER_WAREHOUSE`]; pgio `schemas × pgio-size` at [`PGIO_BYTES_PER_S`] |
//! | `db alter` | VACUUM FULL: `tables × table-size` rows at [`ALTER_ROWS_PER_S`] |
//! | `db study` | per `--fillfactor` (default 3, plus 2 warm-up loads): a prepare and a run |
//! | `db cleanup`, `db check` | the overhead only |
//! | `block` | `--ramp-time` + `--runtime`, else `--size` at [`BLOCK_BYTES_PER_S`]; plus [`BLOCK_OVERHEAD`] |
//! | `estimate` | [`ESTIMATE_S`] |
//!
//! Values that do not parse count as the option's default (the CLI refuses
//! them before anything runs).

use std::time::Duration;

use csdchar_core::units::{parse_duration, parse_size};

use crate::spec::{ArgValue, CommandKind};

/// Start and stop of a managed server around each db command, seconds.
pub const DB_OVERHEAD: f64 = 4.0;
/// Per thread count of a sweep: connections, snapshots before and after, seconds.
pub const SWEEP_STEP_OVERHEAD: f64 = 1.0;
/// sysbench tables load (COPY over parallel connections, then indexes), rows/s.
pub const SYSBENCH_ROWS_PER_S: f64 = 150_000.0;
/// pgbench load per scale unit (100,000 accounts, keys, vacuum), seconds.
pub const TPCB_S_PER_SCALE: f64 = 0.25;
/// TPC-C load per warehouse (about 500,000 rows, keys, vacuum), seconds.
pub const TPCC_S_PER_WAREHOUSE: f64 = 1.5;
/// pgio table build (one row per 8 KiB block), bytes/s.
pub const PGIO_BYTES_PER_S: f64 = 40.0 * 1048576.0;
/// `db alter`'s VACUUM FULL ANALYZE rewrite, rows/s.
pub const ALTER_ROWS_PER_S: f64 = 250_000.0;
/// A block job that is not time-based writes or reads its region at, bytes/s.
pub const BLOCK_BYTES_PER_S: f64 = 300.0 * 1048576.0;
/// Buffer generation and counters around a block job, seconds.
pub const BLOCK_OVERHEAD: f64 = 2.0;
/// `csdchar estimate` of a scaled-down data directory, seconds.
pub const ESTIMATE_S: f64 = 10.0;

/// The estimate of a step with these (substituted) options.
pub fn estimate(kind: CommandKind, args: &[(String, ArgValue)]) -> Duration {
    let get = |k: &str| {
        args.iter().find(|(n, _)| n == k).map(|(_, v)| match v {
            ArgValue::Bool(b) => b.to_string(),
            ArgValue::One(s) => s.clone(),
            ArgValue::Many(m) => m.join(","),
        })
    };
    let num = |k: &str, default: f64| {
        get(k)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(default)
    };
    let dur = |k: &str, default: f64| {
        get(k)
            .and_then(|v| parse_duration(&v).ok())
            .map_or(default, |d| d.as_secs_f64())
    };
    let size = |k: &str, default: f64| {
        get(k)
            .and_then(|v| parse_size(&v).ok())
            .map_or(default, |b| b as f64)
    };
    let count = |k: &str, default: usize| {
        get(k).map_or(default, |v| {
            v.split(',').filter(|x| !x.trim().is_empty()).count().max(1)
        })
    };
    let workload = get("workload").unwrap_or_else(|| "oltp_read_write".into());
    let load = || -> f64 {
        match workload.as_str() {
            w if w.starts_with("tpcb") || w.ends_with("update") || w == "select-only" => {
                num("scale", 1.0) * TPCB_S_PER_SCALE
            }
            "tpcc" | "benchmarksql" => num("warehouses", 1.0) * TPCC_S_PER_WAREHOUSE,
            "pgio" => num("schemas", 1.0) * size("pgio-size", 64.0 * 1048576.0) / PGIO_BYTES_PER_S,
            _ => num("tables", 1.0) * num("table-size", 10_000.0) / SYSBENCH_ROWS_PER_S,
        }
    };
    let run = || {
        count("threads", 1) as f64 * (dur("warmup", 0.0) + dur("time", 10.0) + SWEEP_STEP_OVERHEAD)
    };
    let secs = match kind {
        CommandKind::DbRun => DB_OVERHEAD + run(),
        CommandKind::DbPrepare => DB_OVERHEAD + load(),
        CommandKind::DbAlter => {
            DB_OVERHEAD + num("tables", 1.0) * num("table-size", 10_000.0) / ALTER_ROWS_PER_S
        }
        CommandKind::DbStudy => {
            let ffs = count("fillfactor", 3) as f64;
            DB_OVERHEAD + (ffs + 2.0) * load() + ffs * run()
        }
        CommandKind::DbCleanup | CommandKind::DbCheck => DB_OVERHEAD,
        CommandKind::Block => {
            let timed = dur("ramp-time", 0.0) + dur("runtime", 0.0);
            BLOCK_OVERHEAD
                + if get("runtime").is_some() {
                    timed
                } else {
                    size("size", 0.0) / BLOCK_BYTES_PER_S
                }
        }
        CommandKind::Estimate => ESTIMATE_S,
    };
    Duration::from_secs_f64(secs.max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[(&str, &str)]) -> Vec<(String, ArgValue)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), ArgValue::One(v.to_string())))
            .collect()
    }

    #[test]
    fn runs_count_every_thread_step_and_loads_follow_the_workload() {
        let r = estimate(
            CommandKind::DbRun,
            &args(&[("threads", "1,2,4"), ("time", "20s"), ("warmup", "5s")]),
        );
        assert_eq!(
            r.as_secs_f64(),
            DB_OVERHEAD + 3.0 * (25.0 + SWEEP_STEP_OVERHEAD)
        );
        let p = estimate(
            CommandKind::DbPrepare,
            &args(&[("tables", "4"), ("table-size", "150000")]),
        );
        assert_eq!(p.as_secs_f64(), DB_OVERHEAD + 4.0);
        let t = estimate(
            CommandKind::DbPrepare,
            &args(&[("workload", "tpcc"), ("warehouses", "2")]),
        );
        assert_eq!(t.as_secs_f64(), DB_OVERHEAD + 3.0);
        let b = estimate(
            CommandKind::Block,
            &args(&[("runtime", "10s"), ("ramp-time", "2s"), ("size", "1g")]),
        );
        assert_eq!(b.as_secs_f64(), BLOCK_OVERHEAD + 12.0);
        let s = estimate(
            CommandKind::DbStudy,
            &args(&[
                ("workload", "tpcb"),
                ("scale", "4"),
                ("fillfactor", "100,70"),
                ("time", "10s"),
            ]),
        );
        assert_eq!(s.as_secs_f64(), DB_OVERHEAD + 4.0 * 1.0 + 2.0 * 11.0);
    }
}
