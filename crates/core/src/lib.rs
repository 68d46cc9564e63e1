//! csdchar's core: everything that needs no I/O.
//!
//! - [`units`]: sizes (`4k`, `1g`) and durations (`30s`, `5m`) as fio writes them.
//! - [`pattern`]: compressible / dedupable data with an exact, reported layout.
//! - [`compressibility`]: per-4 KiB compression ratios (lz4, deflate), the way a
//!   compressing drive sees data.
//! - [`stats`]: latency recording (exact min/mean/stddev/max plus HDR percentiles).
//! - [`hdr`]: lossless histograms in results (HdrHistogram V2 compressed, base64) and their sums.
//! - [`load_size`]: what a database load writes and buffers, checked before it starts.
//! - [`fio_job`]: fio job files read with fio's rules and planned into block specs.
//! - [`start_at`]: `--start-at` times (RFC 3339 or local HH:MM[:SS]).
//! - [`counters`]: parsers for kernel counter files (diskstats, zram).
//! - [`capacity`]: logical vs physical capacity from zram, ScaleFlux and NVMe, in one format.
//! - [`estimate`]: what a compressing drive would store: sampling, PostgreSQL file kinds.
//! - [`oltp`]: sysbench's OLTP model (schema, statements, counting), driver-free.
//! - [`result`]: the versioned, documented result schemas.

pub mod bssplit;
pub mod capacity;
pub mod compressibility;
pub mod counters;
pub mod dedupe;
pub mod distribution;
pub mod estimate;
pub mod fileset;
pub mod fio_job;
pub mod hdr;
pub mod heap_page;
pub mod histlog;
pub mod iolog;
pub mod load_size;
pub mod oltp;
pub mod on_error;
pub mod pace;
pub mod pattern;
pub mod pgio;
pub mod rate;
pub mod result;
pub mod share;
pub mod start_at;
pub mod stats;
pub mod steady;
pub mod think;
pub mod tpcb;
pub mod tpcc;
pub mod units;
pub mod zfs;
pub mod zones;
