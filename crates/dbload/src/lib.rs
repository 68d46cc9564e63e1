//! csdchar's database side. So far: [`cluster`], PostgreSQL clusters that
//! csdchar creates, starts, stops and removes itself — on the device under
//! test (`--pgdata`) or in a temporary directory (the embedded default).

pub mod auth;
pub mod bench;
pub mod catalog;
pub mod cluster;
pub mod conn;
pub mod dialect;
pub mod iostat;
pub mod job;
pub mod oltp;
pub mod orchestrate;
pub mod pgio;
pub mod runner;
pub mod session;
pub mod snapshot;
pub mod space;
pub mod text;
pub mod tls;
pub mod tpcb;
pub mod tpcc;
pub mod uring_client;
pub mod wire;
