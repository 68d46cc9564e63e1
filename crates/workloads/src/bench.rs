//! The workload families as one type: sysbench's tables and scripts,
//! pgbench's, BenchmarkSQL's TPC-C, or pgio — what each loads, runs, names
//! and drops.

use csdchar_core::oltp::OltpWorkload;

use crate::oltp::{self, OltpSpec};
use crate::pgio::{self, PgioSpec};
use crate::script::{self, ScriptSpec};
use crate::tpcb::{self, TpcbSpec};
use crate::tpcc::{self, TpccSpec};
use csdchar_dbloop::event::{Protocol, Workload};

/// One workload with its tables, as prepare, run and study handle it.
#[derive(Debug, Clone)]
pub enum Bench {
    /// A sysbench OLTP script on sbtest1..N.
    Sysbench(OltpSpec),
    /// A pgbench script on pgbench's four tables.
    Tpcb(TpcbSpec),
    /// BenchmarkSQL's TPC-C.
    Tpcc(TpccSpec),
    /// pgio on pgio1..N.
    Pgio(PgioSpec),
    /// pgbench custom scripts (`-f`, `-b`) on the user's tables.
    Script(ScriptSpec),
}

/// sysbench's name of a script (`oltp_read_write`, …).
pub fn sysbench_name(w: OltpWorkload) -> &'static str {
    match w {
        OltpWorkload::ReadOnly => "oltp_read_only",
        OltpWorkload::ReadWrite => "oltp_read_write",
        OltpWorkload::WriteOnly => "oltp_write_only",
        OltpWorkload::PointSelect => "oltp_point_select",
        OltpWorkload::UpdateIndex => "oltp_update_index",
        OltpWorkload::UpdateNonIndex => "oltp_update_non_index",
        OltpWorkload::Insert => "oltp_insert",
        OltpWorkload::Delete => "oltp_delete",
    }
}

impl Bench {
    /// Table fillfactor at prepare.
    pub fn fillfactor(&self) -> Option<u8> {
        match self {
            Bench::Sysbench(s) => s.fillfactor,
            Bench::Tpcb(t) => t.fillfactor,
            Bench::Tpcc(t) => t.fillfactor,
            // pgio's fillfactor 10 is its design (one row per block), not an option.
            Bench::Pgio(_) => None,
            Bench::Script(s) => s.fillfactor,
        }
    }

    /// Client connections for `threads`: pgio's threads are per schema.
    pub fn clients(&self, threads: u32) -> u32 {
        match self {
            Bench::Pgio(p) => threads * p.schemas,
            _ => threads,
        }
    }

    /// The same workload loaded at fillfactor `ff` (pgio keeps its own).
    pub fn with_fillfactor(&self, ff: u8) -> Bench {
        match self {
            Bench::Sysbench(s) => Bench::Sysbench(OltpSpec {
                fillfactor: Some(ff),
                ..s.clone()
            }),
            Bench::Tpcb(t) => Bench::Tpcb(TpcbSpec {
                fillfactor: Some(ff),
                ..t.clone()
            }),
            Bench::Tpcc(t) => Bench::Tpcc(TpccSpec {
                fillfactor: Some(ff),
                ..t.clone()
            }),
            Bench::Pgio(p) => Bench::Pgio(p.clone()),
            Bench::Script(s) => Bench::Script(ScriptSpec {
                fillfactor: Some(ff),
                ..s.clone()
            }),
        }
    }

    /// The workload's tables dropped from `schema`; returns those dropped.
    pub async fn drop_tables(&self, conninfo: &str, schema: &str) -> Result<Vec<String>, String> {
        match self {
            Bench::Sysbench(s) => oltp::cleanup(conninfo, schema, s.tables).await,
            Bench::Tpcb(_) => tpcb::cleanup(conninfo, schema).await,
            Bench::Tpcc(_) => tpcc::cleanup(conninfo, schema).await,
            Bench::Pgio(p) => pgio::cleanup(conninfo, schema, p.schemas).await,
            // The user's tables are theirs: dropped only when csdchar loads them (--script-init).
            Bench::Script(s) if s.init_sql.is_some() => {
                crate::catalog::drop_tables(conninfo, schema, &s.tables).await
            }
            Bench::Script(_) => Ok(Vec::new()),
        }
        .map_err(|e| e.message)
    }

    /// The name in results: sysbench's script name, or `tpcb-like`, `tpcc`, `pgio`.
    pub fn name(&self) -> &'static str {
        match self {
            Bench::Sysbench(s) => sysbench_name(s.workload),
            Bench::Tpcb(t) => t.script.name(),
            Bench::Tpcc(_) => "tpcc",
            Bench::Pgio(_) => "pgio",
            Bench::Script(_) => "pgbench-script",
        }
    }

    /// The tables the workload creates.
    pub fn tables(&self) -> Vec<String> {
        match self {
            Bench::Sysbench(s) => oltp::table_names(s.tables),
            Bench::Tpcb(_) => tpcb::table_names(),
            Bench::Tpcc(_) => tpcc::table_names(),
            Bench::Pgio(p) => pgio::table_names(p.schemas),
            Bench::Script(s) => s.tables.clone(),
        }
    }

    /// The table whose fillfactor the result records.
    pub fn fillfactor_table(&self) -> String {
        match self {
            Bench::Sysbench(..) => "sbtest1".into(),
            // pgbench's -F applies to accounts, tellers and branches, not history.
            Bench::Tpcb(_) => "pgbench_accounts".into(),
            // The largest table; --fillfactor sets every table's.
            Bench::Tpcc(_) => "bmsql_stock".into(),
            Bench::Pgio(_) => csdchar_core::pgio::table_name(1),
            // The first table the scripts name.
            Bench::Script(s) => s.tables.first().cloned().unwrap_or_default(),
        }
    }

    /// Rows a full load writes: what load progress counts up to. `warehouse_range`
    /// limits a TPC-C load to those warehouses (the item table then stays as it is).
    pub fn rows_to_load(&self, warehouse_range: Option<(u32, u32)>) -> u64 {
        match self {
            Bench::Sysbench(spec) => spec.table_size * u64::from(spec.tables),
            Bench::Tpcb(t) => csdchar_core::tpcb::row_counts(t.scale).2,
            Bench::Tpcc(t) => {
                let (from, to) = warehouse_range.unwrap_or((1, t.warehouses));
                let n = to.saturating_sub(from) + 1;
                let per_w: u64 = csdchar_core::tpcc::WAREHOUSE_TABLES
                    .iter()
                    .filter_map(|t| csdchar_core::tpcc::expected_rows(t, 1))
                    .sum::<u64>()
                    // order_line: 5-15 lines per order, 10 on average.
                    + 10 * u64::from(
                        csdchar_core::tpcc::DISTRICTS * csdchar_core::tpcc::ORDERS_PER_DISTRICT,
                    );
                let item = if warehouse_range.is_none() {
                    u64::from(csdchar_core::tpcc::ITEMS)
                } else {
                    0
                };
                item + per_w * u64::from(n)
            }
            Bench::Pgio(p) => {
                u64::from(p.schemas) * csdchar_core::pgio::rows_for_blocks(p.blocks_per_schema)
            }
            Bench::Script(_) => 0,
        }
    }

    /// What a full load (a TPC-C one limited to `warehouse_range`) writes
    /// and holds in memory with `loaders` connections.
    pub fn load_footprint(
        &self,
        warehouse_range: Option<(u32, u32)>,
        loaders: u32,
    ) -> csdchar_core::load_size::LoadFootprint {
        use csdchar_core::load_size;
        match self {
            Bench::Sysbench(s) => load_size::sysbench(s.tables, s.table_size, s.fillfactor),
            Bench::Tpcb(t) => load_size::tpcb(t.scale, t.fillfactor),
            Bench::Tpcc(t) => {
                let (from, to) = warehouse_range.unwrap_or((1, t.warehouses));
                let n = to.saturating_sub(from).saturating_add(1);
                load_size::tpcc(n, warehouse_range.is_none(), t.fillfactor)
            }
            Bench::Pgio(p) => load_size::pgio(p.schemas, p.blocks_per_schema, loaders),
            Bench::Script(_) => load_size::LoadFootprint::default(),
        }
    }

    /// The option that sizes the load (named when a load cannot fit).
    pub fn size_option(&self) -> &'static str {
        match self {
            Bench::Sysbench(_) => "--table-size",
            Bench::Tpcb(_) => "--scale",
            Bench::Tpcc(_) => "--warehouses",
            Bench::Pgio(_) => "--pgio-size",
            Bench::Script(_) => "--file",
        }
    }

    /// The workload's transactions, with `protocol` replacing the default
    /// where the peer lets one choose (sysbench, pgio; pgbench's and
    /// TPC-C's protocol is in their spec).
    pub fn workload(&self, protocol: Option<Protocol>) -> Workload {
        match self {
            Bench::Sysbench(s) => {
                let mut w = oltp::workload(s);
                if let Some(p) = protocol {
                    w.protocol = p;
                }
                w
            }
            Bench::Tpcb(t) => tpcb::workload(t),
            Bench::Tpcc(t) => tpcc::run_workload(t),
            Bench::Pgio(p) => {
                let mut w = pgio::workload(p);
                if let Some(p) = protocol {
                    w.protocol = p;
                }
                w
            }
            Bench::Script(s) => script::workload(s, 1).0,
        }
    }

    /// The workload of a step of `clients` clients, and where a script workload's
    /// per-script figures gather (None for the others).
    pub fn step_workload(
        &self,
        protocol: Option<Protocol>,
        clients: u32,
    ) -> (
        Workload,
        Option<std::sync::Arc<std::sync::Mutex<script::ScriptTotals>>>,
    ) {
        match self {
            Bench::Script(s) => {
                let (w, t) = script::workload(s, clients);
                (w, Some(t))
            }
            _ => (self.workload(protocol), None),
        }
    }
}
