//! `csdchar completions` and `csdchar manpages`: shell completions and man pages generated
//! from the clap definitions (clap_complete, clap_mangen), so they cannot drift from `--help`.
//! The Debian package (scripts/package-deb.sh) installs what these write.

use std::path::{Path, PathBuf};

use clap::CommandFactory;

use crate::cli::Cli;
use crate::io::{EXIT_USAGE, Io, Outcome};

/// The command tree as the pages and completions describe it: clap's `help` subcommands
/// left out (`--help` is on every page), the run-time lines of `--version` too (io_uring on
/// the machine that generated them is not the reader's).
pub fn command() -> clap::Command {
    let mut cmd = Cli::command()
        .disable_help_subcommand(true)
        .long_version(None);
    cmd.build();
    cmd
}

/// Every command with its man page name, parents first: ("csdchar", …), ("csdchar-block", …),
/// ("csdchar-db-run", …). Hidden commands have no page.
pub fn pages() -> Vec<(String, clap::Command)> {
    fn walk(name: String, cmd: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
        out.push((name.clone(), cmd.clone()));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(format!("{name}-{}", sub.get_name()), sub, out);
        }
    }
    let mut out = Vec::new();
    walk("csdchar".to_string(), &command(), &mut out);
    out
}

/// The roff source of the page `name` for `cmd`.
pub fn render_page(name: &str, cmd: clap::Command) -> Vec<u8> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.display_name(name))
        .title(name)
        .source(format!("csdchar {}", crate::build_info::short_version()))
        .manual("csdchar manual")
        .render(&mut buf)
        .expect("rendering to memory");
    buf
}

/// The completion script for `shell`.
pub fn completion(shell: clap_complete::Shell) -> Vec<u8> {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut command(), "csdchar", &mut buf);
    buf
}

/// Writes every page into `dir` (created when missing) as NAME.1; returns the files written.
pub fn write_pages(dir: &Path) -> Result<Vec<PathBuf>, String> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!("DIR: {} is not a directory", dir.display()));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("DIR: cannot create {}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for (name, cmd) in pages() {
        let path = dir.join(format!("{name}.1"));
        // Never through a link or onto a device someone left under the page's name.
        if let Ok(meta) = std::fs::symlink_metadata(&path)
            && !meta.file_type().is_file()
        {
            return Err(format!(
                "{} exists and is not a regular file; not writing through it",
                path.display()
            ));
        }
        std::fs::write(&path, render_page(&name, cmd))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// `csdchar completions SHELL`.
pub fn run_completions(shell: clap_complete::Shell, io: &mut Io<'_>) -> Outcome {
    match crate::emit(&completion(shell), None, io.stdout) {
        Ok(()) => Outcome::code(0),
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            Outcome::code(1)
        }
    }
}

/// `csdchar manpages DIR`.
pub fn run_manpages(dir: &Path, io: &mut Io<'_>) -> Outcome {
    if dir.exists() && !dir.is_dir() {
        let _ = writeln!(
            io.stderr,
            "error: DIR: {} is not a directory",
            dir.display()
        );
        return Outcome::code(EXIT_USAGE);
    }
    match write_pages(dir) {
        Ok(files) => {
            for f in files {
                let _ = writeln!(io.stdout, "{}", f.display());
            }
            Outcome::code(0)
        }
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            Outcome::code(1)
        }
    }
}
