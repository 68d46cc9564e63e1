//! The integration tests, one binary (as ripgrep keeps them): each module is one area, run
//! in parallel by the test harness; tests that share a machine-wide resource (the zfs-fuse
//! daemon, dm and loop devices, a sysfs redirected by environment) take its lock in [`common`].

mod architecture;
mod bad_input;
mod block_run;
mod campaign_cli;
mod campaign_lib;
mod capacity_fixture;
mod cluster;
mod common;
mod counter_props;
mod db;
mod db_env;
mod db_library;
mod db_safety;
mod dialect;
mod estimate;
mod fio_bssplit;
mod fio_dedupe;
mod fio_files;
mod fio_hist_log;
mod fio_jobs;
mod fio_latency;
mod fio_parity;
mod fio_pauses;
mod fio_verify;
mod fio_verify_errors;
mod libpq;
mod libpq_matrix;
mod merge;
mod opengauss_auth;
mod pgbench_scripts;
mod pgio;
mod pgio_cli;
mod privileged;
mod props;
mod report;
mod runner;
mod stacked_devices;
mod tls;
mod tpcb;
mod tpcc;
mod tpcc_cli;
mod tpcc_statements;
mod uring_client;
mod zfs;
