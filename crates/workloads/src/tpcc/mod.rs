//! BenchmarkSQL-compatible TPC-C: the loader (COPY text over several
//! connections, one warehouse per transaction), the keys and foreign keys of
//! BenchmarkSQL's build, the five transactions as PL/pgSQL functions (one
//! round trip each) run by the shared runner, consistency checks, and
//! cleanup of BenchmarkSQL's objects only.
//!
//! Resuming a load: every warehouse is loaded in one transaction, so a load
//! cut short leaves whole warehouses. [`TpccLoadState`] reads how far a load
//! got; [`prepare`] with a warehouse range loads, into those tables, the
//! warehouses of the range that are missing (and the item table if it is
//! empty), then builds only the keys, foreign keys and history id not yet
//! built — a resume works from any point of the load. With `force`
//! instead, everything is dropped and loaded again. Run and check refuse a
//! load that is not complete.
//!
//! Files: `spec` (what a load and a run are), `state` (how far a load got,
//! `bmsql_config`, checks, cleanup), `load` (the load and its build), `procs`
//! (procedure mode: the transactions as functions and their workload) and
//! `statements` (statement mode: BenchmarkSQL's statements as its terminal sends
//! them); this file only names what the crate uses of them.

mod load;
mod procs;
mod spec;
mod state;
mod statements;

pub use load::{prepare, prepare_with};
pub use procs::{call_sql, create_functions, functions_sql, missing_functions, workload};
pub use spec::*;
pub use state::*;
pub use statements::{STATEMENT_ABANDON, STATEMENTS, statement_workload};

use csdchar_dbloop::event::Workload;

/// The run workload of `spec`'s mode.
pub fn run_workload(spec: &TpccSpec) -> Workload {
    match spec.mode {
        TpccMode::Statements => statement_workload(spec),
        TpccMode::Procedures => workload(spec),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use csdchar_core::tpcc::{TpccKind, TpccMix};
    use csdchar_dbloop::event::Protocol;

    use super::load::push_literal;
    use super::state::ranges;
    use super::*;

    #[test]
    fn ranges_are_compact() {
        let s: BTreeSet<u32> = [1, 2, 3, 5, 7, 8].into_iter().collect();
        assert_eq!(ranges(&s), "1-3, 5, 7-8");
        assert_eq!(ranges(&BTreeSet::new()), "none");
    }

    #[test]
    fn every_kind_has_a_function_and_a_call() {
        let f = functions_sql();
        for (k, name) in TpccKind::ALL.iter().zip(FUNCTIONS) {
            assert!(call_sql(*k).contains(name));
            assert!(f[*k as usize].contains(&format!("function {name}(")));
        }
        assert!(f[0].contains("errcode = 'CSD01'") && f[0].contains("> 100000"));
        let mut lit = String::new();
        for field in ["\\N", "O'Brien", "a\\\\b\\tc", "12.50"] {
            push_literal(field, &mut lit);
            lit.push(',');
        }
        assert_eq!(lit, "NULL,'O''Brien','a\\b\tc','12.50',");
        let w = workload(&TpccSpec {
            warehouses: 2,
            fillfactor: None,
            mix: TpccMix::default(),
            seed: 1,
            schema: "public".into(),
            protocol: Protocol::Prepared,
            mode: TpccMode::Procedures,
            c_load: None,
            load_method: Default::default(),
        });
        assert_eq!(
            w.kinds,
            [
                "new_order",
                "payment",
                "order_status",
                "delivery",
                "stock_level"
            ]
        );
        assert_eq!(w.rollback_codes, [NEW_ORDER_ROLLBACK]);
    }
}
