//! csdchar's database workloads as their peers run them: sysbench's OLTP ([`oltp`]),
//! pgbench's TPC-B ([`tpcb`]), BenchmarkSQL's TPC-C ([`tpcc`]) and pgio ([`pgio`]) —
//! tables created and loaded, cleaned up, and the events the measured loop runs — with
//! the catalog helpers they share ([`catalog`]) and [`bench::Bench`], one workload chosen.
//! Workloads never import each other.

pub mod bench;
pub mod catalog;
pub mod copy;
pub mod oltp;
pub mod pgio;
pub mod script;
pub mod script_log;
pub mod tpcb;
pub mod tpcc;
