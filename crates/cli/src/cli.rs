//! The command line as clap parses it: [`Cli`] and its subcommands, each command's
//! options living beside the command.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::block_cmd::BlockOpts;
use crate::campaign_cmd::CampaignOpts;
use crate::capacity_cmd::CapacityOpts;
use crate::db_opts::DbArgs;
use crate::estimate_cmd::EstimateOpts;
use crate::report_cmd::ReportOpts;

/// csdchar: characterize storage with transparent compression (computational
/// storage drives, zram, btrfs) and the databases that run on it.
#[derive(Debug, Parser)]
#[command(
    name = "csdchar",
    version = crate::build_info::short_version(),
    long_version = crate::build_info::long_version(),
    about,
    long_about = None
)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
    /// End the command as Ctrl-C would (saving its partial result) when standard input reaches
    /// its end: a controller of several hosts holds it open over ssh, so the load stops when
    /// the controller stops or dies.
    #[arg(long, global = true)]
    pub stop_on_stdin_eof: bool,
    /// The arguments as given (without the program name), for `--hosts`, which runs them on
    /// every host; empty when the command line was built in-process.
    #[arg(skip)]
    pub argv: Vec<String>,
}

/// Subcommands.
// Parsed once per process: the size of the largest variant (db's many
// options) costs nothing, and boxing it would touch every match on it.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// fio-like block I/O on io_uring with compressible data.
    Block(BlockOpts),
    /// Logical vs physical capacity of the device holding TARGET (like csd-size.sh).
    Capacity(CapacityOpts),
    /// Predict what a compressing drive would store for files, directories or devices (like sfx-filesize).
    Estimate(EstimateOpts),
    /// Database workloads on PostgreSQL and openGauss: sysbench OLTP, pgbench TPC-B, BenchmarkSQL
    /// TPC-C, pgio; steps prepare, run, check, cleanup, alter, study (without a step: run, on a
    /// temporary cluster unless --url/--pgdata).
    Db(DbArgs),
    /// Tables, SVG charts, one HTML page and Parquet/CSV exports from result files.
    Report(ReportOpts),
    /// A whole experiment from a TOML file: targets × steps × parameter grids, resumable,
    /// ending with a report of the targets side by side (see examples/campaigns/).
    Campaign(CampaignOpts),
    /// Print the JSON Schema of a result format.
    Schema {
        /// Which schema.
        #[arg(value_enum)]
        which: SchemaName,
    },
    /// Print the completion script of SHELL, generated from these options (the Debian package
    /// installs bash's, zsh's and fish's).
    Completions {
        /// Which shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages, generated from these options: csdchar.1 and one per command
    /// (csdchar-block.1, csdchar-db-run.1, ...), into DIR (created when missing).
    Manpages {
        /// Where the pages go, e.g. ~/.local/share/man/man1.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

/// Result schemas that `csdchar schema` prints.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemaName {
    /// csdchar.block/1
    Block,
    /// csdchar.capacity/1
    Capacity,
    /// csdchar.estimate/1
    Estimate,
    /// csdchar.db/1
    Db,
    /// csdchar.study/1
    Study,
}
