//! csdchar's block engine: fio's job model on io_uring, with compressible data
//! whose ratio is exact and reported.
//!
//! Flow: a validated [`BlockSpec`](csdchar_core::result::block::BlockSpec) →
//! [`target::prepare`] (open, check safety, lay out) → one thread and one
//! engine per job ([`job`]) → interval samples and totals → a
//! [`BlockResult`](csdchar_core::result::block::BlockResult) ([`run`]).

pub mod buffers;
pub mod dedupe;
pub mod engine;
pub mod error;
pub mod fileset;
pub mod job;
pub mod jobfile;
pub mod offsets;
pub mod outcome;
pub mod run;
pub mod safety;
pub mod share;
pub mod short_read;
pub mod sysinfo;
pub mod target;
pub mod uring;
pub mod verify;
pub mod verify_log;
pub mod zones;

pub use engine::{Completion, Direction, EngineError, IoEngine, IoRequest, NullEngine};
pub use error::BlockError;
pub use run::{RunControl, run_block, run_block_with};
