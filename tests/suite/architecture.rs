//! ARCHITECTURE.md's rules, checked on the sources: which csdchar crate may depend on
//! which, no import loop between two files of one crate, and no I/O in the pure crates.
//! A new crate fails here until it has a row in [`ALLOWED`] (and in ARCHITECTURE.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each crate (its directory under crates/) and the csdchar crates it may depend on.
/// Nothing imports upward: core <- devices <- engines <- cli.
const ALLOWED: &[(&str, &[&str])] = &[
    ("core", &[]),
    ("pgwire", &[]),
    ("pgbench-script", &[]),
    ("devices", &["core"]),
    ("estimate", &["core", "devices"]),
    ("fio-like", &["core", "devices"]),
    ("pgcluster", &["pgwire"]),
    ("dbloop", &["core", "devices", "pgwire"]),
    ("workloads", &["core", "pgwire", "dbloop", "pgbench-script"]),
    (
        "dbload",
        &[
            "core",
            "devices",
            "estimate",
            "pgwire",
            "pgcluster",
            "dbloop",
            "workloads",
        ],
    ),
    ("report", &["core"]),
    ("campaign", &["core", "devices"]),
    ("fleet", &["core"]),
    (
        "cli",
        &[
            "core",
            "devices",
            "estimate",
            "fio-like",
            "pgwire",
            "pgcluster",
            "dbloop",
            "workloads",
            "dbload",
            "report",
            "campaign",
            "pgbench-script",
            "fleet",
        ],
    ),
];

/// Crates that do no I/O: no files, sockets, processes or environment.
const PURE: &[&str] = &["core", "pgbench-script"];

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates")
}

fn crate_dirs() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(crates_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// The csdchar crates `dir`'s Cargo.toml lists under [dependencies].
fn csdchar_dependencies(dir: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(crates_dir().join(dir).join("Cargo.toml")).unwrap();
    let doc: toml::Table = text.parse().unwrap();
    doc.get("dependencies")
        .and_then(|d| d.as_table())
        .map(|d| {
            d.keys()
                .filter_map(|k| k.strip_prefix("csdchar-").map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_crate_depends_only_on_the_crates_below_it() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    for dir in crate_dirs() {
        let Some(may) = allowed.get(dir.as_str()) else {
            wrong.push(format!(
                "crates/{dir} has no row in ALLOWED (tests/suite/architecture.rs) and ARCHITECTURE.md"
            ));
            continue;
        };
        for dep in csdchar_dependencies(&dir) {
            if !may.contains(&dep.as_str()) {
                wrong.push(format!(
                    "crates/{dir} depends on csdchar-{dep}, which it may not"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A crate's source with comments, string contents and `#[cfg(test)]` modules taken out.
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|n| n.trim_start().starts_with("mod "))
        {
            // Skip the module to its closing brace.
            let mut depth = 0i32;
            let mut opened = false;
            for l in lines.by_ref() {
                depth += l.matches('{').count() as i32 - l.matches('}').count() as i32;
                opened |= l.contains('{');
                if opened && depth <= 0 {
                    break;
                }
            }
            continue;
        }
        if t.starts_with("//") {
            continue;
        }
        // Drop string literals (paths in messages are not imports).
        let mut in_str = false;
        let mut prev = ' ';
        for ch in line.chars() {
            if ch == '"' && prev != '\\' && prev != '\'' {
                in_str = !in_str;
            } else if !in_str {
                out.push(ch);
            }
            prev = ch;
        }
        out.push('\n');
    }
    out
}

/// The identifier paths that follow `prefix` (`crate::a::b` gives ["a", "b"]).
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut path = Vec::new();
        let mut tail = rest;
        loop {
            let end = tail
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(tail.len());
            if end == 0 {
                break;
            }
            path.push(tail[..end].to_string());
            match tail[end..].strip_prefix("::") {
                Some(t) => tail = t,
                None => break,
            }
        }
        out.push(path);
    }
    out
}

/// Module path (`a::b`, "" for the crate root) -> source file, for one crate.
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files
        .into_iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(src).ok()?.with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            // A binary's main.rs beside lib.rs is its own root; leave it out.
            if f.file_name().is_some_and(|n| n == "main.rs") && src.join("lib.rs").exists() {
                return None;
            }
            Some((parts.join("::"), f))
        })
        .collect()
}

/// The modules of one crate each module refers to (`crate::x`, `super::x`, a child `x::`).
fn module_edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(src);
    let resolve = |parts: &[String]| -> Option<String> {
        (1..=parts.len())
            .rev()
            .map(|k| parts[..k].join("::"))
            .find(|c| mods.contains_key(c))
    };
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, file) in &mods {
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let parent: Vec<String> = if m.is_empty() {
            vec![]
        } else {
            let mut p: Vec<String> = m.split("::").map(str::to_string).collect();
            p.pop();
            p
        };
        let mut to = BTreeSet::new();
        for path in paths_after(&code, "crate::") {
            if let Some(t) = resolve(&path) {
                to.insert(t);
            }
        }
        for path in paths_after(&code, "super::") {
            let mut full = parent.clone();
            full.extend(path);
            match resolve(&full) {
                Some(t) => {
                    to.insert(t);
                }
                None => {
                    to.insert(parent.join("::"));
                }
            }
        }
        for child in mods.keys() {
            let prefix = if m.is_empty() {
                String::new()
            } else {
                format!("{m}::")
            };
            let Some(name) = child.strip_prefix(&prefix) else {
                continue;
            };
            if name.is_empty() || name.contains("::") || child == m {
                continue;
            }
            let uses = paths_after(&code, &format!("{name}::"))
                .into_iter()
                .next()
                .is_some();
            if uses {
                to.insert(child.clone());
            }
        }
        to.remove(m);
        to.retain(|t| mods.contains_key(t));
        edges.insert(m.clone(), to);
    }
    edges
}

/// Strongly connected components of more than one module (Tarjan).
fn loops(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        let edges = s.edges;
        for w in edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn no_two_files_of_a_crate_import_each_other() {
    let mut found = Vec::new();
    for dir in crate_dirs() {
        for comp in loops(&module_edges(&crates_dir().join(&dir).join("src"))) {
            let names: Vec<String> = comp
                .iter()
                .map(|m| {
                    if m.is_empty() {
                        "(crate root)".into()
                    } else {
                        m.clone()
                    }
                })
                .collect();
            found.push(format!("crates/{dir}: {}", names.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "import loops:\n{}", found.join("\n"));
}

#[test]
fn the_loop_finder_sees_a_loop() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
    std::fs::write(dir.path().join("a.rs"), "use crate::b::X;\n// crate::c\n").unwrap();
    std::fs::write(
        dir.path().join("b.rs"),
        "pub struct X;\nfn f() { super::a::g() }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("c.rs"),
        "fn h() { let s = \"crate::a\"; }\n#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n",
    )
    .unwrap();
    assert_eq!(
        loops(&module_edges(dir.path())),
        vec![vec!["a".to_string(), "b".to_string()]]
    );
}

#[test]
fn the_pure_crates_do_no_io() {
    let io = [
        "std::fs",
        "std::net",
        "std::process",
        "std::env",
        "libc::",
        "File::",
    ];
    let mut found = Vec::new();
    for dir in PURE {
        for (m, file) in modules(&crates_dir().join(dir).join("src")) {
            let code = code_of(&std::fs::read_to_string(&file).unwrap());
            for what in io {
                if code.contains(what) {
                    found.push(format!("crates/{dir} ({m}) uses {what}"));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn every_unsafe_block_says_why_directly_above() {
    let mut missing = Vec::new();
    for dir in crate_dirs() {
        let root = crates_dir().join(&dir);
        let mut files = Vec::new();
        fn walk(d: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        walk(&root, &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let has_unsafe = code
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|w| w == "unsafe");
                if !has_unsafe || code.contains("unsafe fn") || code.contains("unsafe_code") {
                    continue;
                }
                let said = lines[..i]
                    .iter()
                    .rev()
                    .take_while(|l| l.trim_start().starts_with("//"))
                    .any(|l| l.contains("Safety:"));
                if !said {
                    missing.push(format!("{}:{}", f.display(), i + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "unsafe without a `// Safety:` comment directly above:\n{}",
        missing.join("\n")
    );
}
