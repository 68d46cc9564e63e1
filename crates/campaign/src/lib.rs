//! `csdchar campaign FILE.toml`: a declarative file of named targets, steps
//! written with csdchar's own option names, and parameter grids, expanded
//! into a [`Plan`] and run step by step through a [`StepRunner`], with
//! `<out>/manifest.json` recording where every step stands so that running
//! the same command again resumes.
//!
//! This crate knows no engine: the CLI's [`StepRunner`] parses each planned
//! argv with its own clap parser and calls the same library path its
//! subcommands use. Flow for the CLI:
//!
//! ```no_run
//! # use std::sync::atomic::AtomicBool;
//! # use csdchar_campaign::*;
//! # struct Cli;
//! # impl StepRunner for Cli { fn run(&mut self, _: &PlannedStep, _: &AtomicBool) -> StepOutcome { StepOutcome::Done } }
//! # fn main() -> Result<(), CampaignError> {
//! let mut campaign = Campaign::load("examples/campaigns/percona-sysbench.toml".as_ref())?;
//! campaign.override_from_arg("zram=/mnt/other")?;        // each --target NAME=PATH|URL
//! let plan = campaign.plan("campaign-out".as_ref())?;
//! let mut runner = Cli;                                   // the CLI's StepRunner
//! plan.check(|s| runner.check(s))?;                       // every argv parses: before anything runs
//! print!("{}", plan.render());                            // --dry-run stops here
//! let interrupt = AtomicBool::new(false);                 // set by the SIGINT/SIGTERM handler
//! let mut progress = |e: &Event<'_>| eprintln!("{e:?}");
//! let summary = Executor {
//!     runner: &mut runner,
//!     progress: &mut progress,
//!     provisioner: &mut StorageProvisioner,
//!     interrupt: &interrupt,
//!     options: RunOptions { fail_fast: false, force: false, csdchar_version: "0.1.0".into() },
//! }
//! .run(&campaign, &plan)?;
//! for (target, files) in summary.results_by_target() { /* csdchar report, labelled by target */ }
//! # Ok(()) }
//! ```

pub mod estimate;
pub mod hosts;
pub mod manifest;
pub mod plan;
pub mod run;
pub mod spec;

pub use hosts::StepHosts;
pub use manifest::{CampaignStatus, MANIFEST_FILE, Manifest, StepStatus, check_result};
pub use plan::{Plan, PlannedStep, format_duration, mount_placeholder};
pub use run::{
    Event, Executor, Progress, Provisioned, Provisioner, RunOptions, StepOutcome, StepRunner,
    StorageProvisioner, Summary,
};
pub use spec::{
    ArgValue, Campaign, CommandKind, GridVar, StepSpec, Storage, Target, ZfsSpec, ZramSpec,
};

/// Why a campaign cannot be planned, resumed or run. One line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CampaignError {
    /// The campaign file is wrong (names the key and what it allows), or a
    /// step's command is refused by the CLI's check.
    #[error("{0}")]
    File(String),
    /// Bad options (`--target`, `--out`).
    #[error("{0}")]
    Usage(String),
    /// A resume is refused: another campaign, a changed file or target.
    #[error("{0}")]
    Resume(String),
    /// Storage cannot be made here (zram without root).
    #[error("{0}")]
    Setup(String),
    /// Writing the manifest or the output directory failed, or checking
    /// whether a target's storage can be made failed for another reason than
    /// root or a tool missing (a fault, not the input).
    #[error("{0}")]
    Io(String),
}

impl CampaignError {
    /// Whether the user's input is at fault (exit code 2) rather than the machine.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, CampaignError::Io(_))
    }
}
