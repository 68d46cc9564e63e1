//! The crate's integration tests in one binary (the allocation count, which needs a global
//! allocator of its own, is tests/alloc.rs).

mod common;
mod differential;
mod interpreter;
mod parse_errors;
mod props;
mod runs;
