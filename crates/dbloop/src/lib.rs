//! csdchar's measured database loop: the events a workload draws, each client's
//! counting state machine, the two client drivers (one thread per connection, or
//! io_uring with many connections per thread) and the server's I/O sampled around a run.

pub mod client;
pub mod event;
pub mod iostat;
pub mod runner;
pub mod session;
pub mod settings;
pub mod uring_client;
