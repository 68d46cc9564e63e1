//! Man pages and shell completions against the clap definitions they are generated from:
//! a page for every command, every option (with its value name and possible values) on its
//! command's page, and in every shell's completions; bash run on its script completes what
//! `--help` lists.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use clap::CommandFactory;
use csdchar_cli::Cli;
use csdchar_cli::install_cmd;

/// Every visible command of the clap definitions as its path of names: [], ["block"], ["db",
/// "run"], ... (clap's own `help` subcommand aside).
fn command_paths() -> Vec<(Vec<String>, clap::Command)> {
    fn walk(path: Vec<String>, cmd: &clap::Command, out: &mut Vec<(Vec<String>, clap::Command)>) {
        out.push((path.clone(), cmd.clone()));
        for sub in cmd.get_subcommands() {
            if sub.is_hide_set() || sub.get_name() == "help" {
                continue;
            }
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            walk(p, sub, out);
        }
    }
    let mut cmd = Cli::command();
    cmd.build();
    let mut out = Vec::new();
    walk(Vec::new(), &cmd, &mut out);
    out
}

fn page_name(path: &[String]) -> String {
    std::iter::once("csdchar".to_string())
        .chain(path.iter().cloned())
        .collect::<Vec<_>>()
        .join("-")
}

fn visible_args(cmd: &clap::Command) -> impl Iterator<Item = &clap::Arg> {
    cmd.get_arguments().filter(|a| !a.is_hide_set())
}

/// roff source as text: the escapes clap_mangen writes for '-' and quotes undone.
fn unroff(page: &[u8]) -> String {
    String::from_utf8_lossy(page)
        .replace("\\-", "-")
        .replace("\\*(Aq", "'")
        .replace("\\(aq", "'")
}

#[test]
fn there_is_a_page_for_every_command_and_subcommand() {
    let want: BTreeSet<String> = command_paths().iter().map(|(p, _)| page_name(p)).collect();
    let have: BTreeSet<String> = install_cmd::pages().into_iter().map(|(n, _)| n).collect();
    assert_eq!(have, want);
    for name in [
        "csdchar",
        "csdchar-block",
        "csdchar-db",
        "csdchar-db-run",
        "csdchar-db-study",
    ] {
        assert!(have.contains(name), "no page {name}");
    }
}

#[test]
fn every_option_is_on_its_commands_page_with_value_name_and_possible_values() {
    let pages: std::collections::BTreeMap<String, String> = install_cmd::pages()
        .into_iter()
        .map(|(name, cmd)| {
            let text = unroff(&install_cmd::render_page(&name, cmd));
            (name, text)
        })
        .collect();
    let mut missing = Vec::new();
    for (path, cmd) in command_paths() {
        let name = page_name(&path);
        let page = &pages[&name];
        assert!(
            page.contains(&format!("\n.TH {name} 1 ")),
            "{name}: {}",
            &page[..200]
        );
        let options = page.split(".SH OPTIONS").nth(1).unwrap_or("");
        for arg in visible_args(&cmd) {
            let mut wanted = Vec::new();
            if let Some(long) = arg.get_long() {
                wanted.push(format!("\\fB--{long}\\fR"));
            } else if let Some(short) = arg.get_short() {
                wanted.push(format!("\\fB-{short}\\fR"));
            }
            if arg.get_action().takes_values() {
                for v in arg.get_value_names().unwrap_or_default() {
                    wanted.push(format!("{v}"));
                }
                for v in arg
                    .get_possible_values()
                    .iter()
                    .filter(|v| !v.is_hide_set())
                {
                    wanted.push(v.get_name().to_string());
                }
            }
            for w in wanted {
                if !options.contains(&w) {
                    missing.push(format!("{name}: {} ({w})", arg.get_id()));
                }
            }
        }
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let see = format!("{name}-{}(1)", sub.get_name());
            if !page.contains(&see) {
                missing.push(format!("{name}: subcommand {see}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "missing from the man pages: {missing:#?}"
    );
}

#[test]
fn every_option_is_in_every_shells_completions() {
    let bash = String::from_utf8(install_cmd::completion(clap_complete::Shell::Bash)).unwrap();
    let zsh = String::from_utf8(install_cmd::completion(clap_complete::Shell::Zsh)).unwrap();
    let fish = String::from_utf8(install_cmd::completion(clap_complete::Shell::Fish)).unwrap();
    let mut missing = Vec::new();
    for (path, cmd) in command_paths() {
        for arg in visible_args(&cmd) {
            let Some(long) = arg.get_long() else { continue };
            if !bash.contains(&format!("--{long}")) {
                missing.push(format!("bash: {path:?} --{long}"));
            }
            // '--long=[help]', '--long[help]', '(--url)--pgdata=[…]', '*--label=[…]'
            if !["=[", "[", "+["]
                .iter()
                .any(|end| zsh.contains(&format!("--{long}{end}")))
            {
                missing.push(format!("zsh: {path:?} --{long}"));
            }
            if !fish_offers(&fish, &path, long) {
                missing.push(format!("fish: {path:?} --{long}"));
            }
        }
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            if !fish.contains(&format!("-a \"{}\"", sub.get_name())) {
                missing.push(format!("fish: {path:?} subcommand {}", sub.get_name()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "missing from the completions: {missing:#?}"
    );
}

/// Whether a `complete` line of fish's script offers `--long` under the command at `path`:
/// its -n condition names the command ("needs_command" for csdchar itself, "using_subcommand
/// block", "using_subcommand db; and __fish_seen_subcommand_from run").
fn fish_offers(fish: &str, path: &[String], long: &str) -> bool {
    fish.lines().any(|line| {
        let Some(cond) = line.split("-n \"").nth(1).and_then(|c| c.split('"').next()) else {
            return false;
        };
        let rest = &line[line.find(cond).unwrap() + cond.len()..];
        let offers =
            rest.contains(&format!(" -l {long} ")) || rest.ends_with(&format!(" -l {long}"));
        let under = match path {
            [] => cond.contains("needs_command"),
            [only] => {
                cond.starts_with(&format!("__fish_csdchar_using_subcommand {only}"))
                    && (!cond.contains(';') || cond.contains("; and not "))
            }
            [.., parent, last] => {
                cond.starts_with(&format!("__fish_csdchar_using_subcommand {parent}"))
                    && cond.ends_with(&format!("__fish_seen_subcommand_from {last}"))
            }
        };
        offers && under
    })
}

/// What bash offers for the last word of `words` (as TAB does: the script's function run with
/// COMP_WORDS set), or None without bash.
fn bash_completes(script: &Path, words: &[&str]) -> Option<BTreeSet<String>> {
    let line = words.join(" ");
    let program = format!(
        ". {script}\n\
         COMP_LINE={line:?}; COMP_POINT=${{#COMP_LINE}}\n\
         COMP_WORDS=({words}); COMP_CWORD={cword}\n\
         fn=$(complete -p csdchar | sed -n 's/.* -F \\([^ ]*\\) .*/\\1/p')\n\
         \"$fn\" csdchar {cur:?} {prev:?}\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script = script.display(),
        words = words
            .iter()
            .map(|w| format!("{w:?}"))
            .collect::<Vec<_>>()
            .join(" "),
        cword = words.len() - 1,
        cur = words[words.len() - 1],
        prev = words[words.len() - 2],
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "bash: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect(),
    )
}

#[test]
fn bash_completes_db_run_wo_and_every_commands_options() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("csdchar.bash");
    std::fs::write(&script, install_cmd::completion(clap_complete::Shell::Bash)).unwrap();
    let Some(offered) = bash_completes(&script, &["csdchar", "db", "run", "--wo"]) else {
        eprintln!("note: no bash here; the completion script was not run");
        return;
    };
    assert!(
        offered.contains("--workload"),
        "csdchar db run --wo<TAB>: {offered:?}"
    );
    assert!(offered.iter().all(|o| o.starts_with("--wo")), "{offered:?}");

    let mut missing = Vec::new();
    for (path, cmd) in command_paths() {
        let mut words = vec!["csdchar"];
        words.extend(path.iter().map(String::as_str));
        words.push("--");
        let offered = bash_completes(&script, &words).expect("bash ran above");
        for arg in visible_args(&cmd) {
            if let Some(long) = arg.get_long()
                && !offered.contains(&format!("--{long}"))
            {
                missing.push(format!("{} --{long}", words[..words.len() - 1].join(" ")));
            }
        }
        // The command's subcommands, after the command and a space.
        *words.last_mut().unwrap() = "";
        let offered = bash_completes(&script, &words).expect("bash ran above");
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            if !offered.contains(sub.get_name()) {
                missing.push(format!("{} {}", words.join(" "), sub.get_name()));
            }
        }
    }
    assert!(missing.is_empty(), "bash does not complete: {missing:#?}");
}

#[test]
fn manpages_writes_every_page_and_refuses_what_is_not_a_directory_or_a_regular_page() {
    let bin = env!("CARGO_BIN_EXE_csdchar");
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("man1");
    let out = Command::new(bin)
        .arg("manpages")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: BTreeSet<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let want: BTreeSet<String> = command_paths()
        .iter()
        .map(|(p, _)| format!("{}.1", page_name(p)))
        .collect();
    assert_eq!(written, want);

    // A file where DIR should be: bad input, exit 2, nothing written.
    let file = dir.path().join("file");
    std::fs::write(&file, "keep\n").unwrap();
    let out = Command::new(bin)
        .arg("manpages")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: DIR: ") && err.lines().count() == 1,
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep\n");

    // A link planted under a page's name is not written through.
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep\n").unwrap();
    let planted = dir.path().join("planted");
    std::fs::create_dir(&planted).unwrap();
    std::os::unix::fs::symlink(&victim, planted.join("csdchar-block.1")).unwrap();
    let out = Command::new(bin)
        .arg("manpages")
        .arg(&planted)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");
}

#[test]
fn completions_prints_the_shells_script() {
    let out = Command::new(env!("CARGO_BIN_EXE_csdchar"))
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        out.stdout,
        install_cmd::completion(clap_complete::Shell::Bash)
    );
    let out = Command::new(env!("CARGO_BIN_EXE_csdchar"))
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
