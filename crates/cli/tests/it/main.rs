//! The CLI crate's own integration tests, one binary: what needs the built `csdchar`
//! binary (signals, --version, completions run by bash) or the build script's code.

mod build_source;
mod fleet_sshd;
mod fleet_standin;
mod install_assets;
mod signals_and_exit_codes;
mod tool_block;
