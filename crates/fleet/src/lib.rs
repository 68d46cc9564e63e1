//! csdchar on several load hosts, over the system OpenSSH client and nothing
//! else: no listening port, no daemon, no protocol of its own.
//!
//! - [`hosts`]: hosts files (one ssh destination per line, pdsh/MPI style, with
//!   optional per-host `csdchar=`, `workdir=`, `sudo`).
//! - [`ssh`]: how `ssh` is run (BatchMode, ConnectTimeout, ServerAlive, one
//!   multiplexed master per host in the run's directory; the user's
//!   `~/.ssh/config`, agent, keys and `known_hosts` honoured — host-key
//!   checking is never turned off) and shell quoting of remote commands.
//! - [`preflight`]: every host in parallel before anything runs — reachable,
//!   csdchar's version, the kernel, the clock offset, the remote command's own
//!   checks (`--check-only`: the same safety rules as a local run).
//! - [`step`]: one step on every host at one instant: the remote csdchar holds
//!   its standard input as a lifeline (`--stop-on-stdin-eof`), a lost or hung
//!   host ends the step and is named, results are fetched over the same
//!   connection.
//!
//! - [`manifest`]: `fleet.json`, per host: version, kernel, clock offset,
//!   round trip, lateness, status.
//!
//! The CLI decides what runs and merges the results; this crate never parses
//! a result beyond its start record.

pub mod error;
pub mod hosts;
pub mod manifest;
pub mod preflight;
pub mod ssh;
pub mod step;

pub use error::FleetError;
pub use hosts::{Host, parse_hosts};
pub use manifest::{FleetManifest, HostRecord};
pub use preflight::{HostFacts, PreflightLimits, preflight};
pub use ssh::Ssh;
pub use step::{HostOutcome, HostStatus, StepEnd, StepPlan, run_step};
