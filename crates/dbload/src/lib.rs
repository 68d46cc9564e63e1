//! csdchar's database side. So far: [`cluster`], PostgreSQL clusters that
//! csdchar creates, starts, stops and removes itself — on the device under
//! test (`--pgdata`) or in a temporary directory (the embedded default).

pub mod cluster;
pub mod conn;
pub mod iostat;
pub mod oltp;
pub mod pgio;
pub mod runner;
pub mod snapshot;
pub mod tpcb;
pub mod tpcc;
pub mod wire;
