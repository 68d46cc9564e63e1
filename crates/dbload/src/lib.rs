//! csdchar's database steps, the orchestration over the database crates: a
//! [`session`] on a managed cluster (csdchar_pgcluster) or a given server, the
//! steps as library calls ([`orchestrate`]: prepare, run, alter, cleanup,
//! check; [`study`]: the fillfactor study) from a [`job::DbJob`], the snapshots and space taken around them
//! ([`snapshot`], [`space`]) and the peers' text formats ([`text`]).

pub mod job;
pub mod orchestrate;
pub mod script_text;
pub mod session;
pub mod snapshot;
pub mod space;
pub mod study;
pub mod text;
