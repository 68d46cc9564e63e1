//! `csdchar`: see the library crate for everything but process setup.

fn main() {
    std::process::exit(csdchar_cli::main_with_args(std::env::args_os()));
}
