//! fio's job-file layout (init.c `__parse_jobs_ini`): sections in brackets,
//! `key=value` or bare `key` lines, comments, `include FILE` inside a section.
//!
//! - A line whose first non-blank character is `;` or `#` is a comment; on
//!   other lines everything from the first `;` or `#` is cut (fio does the same,
//!   so a value cannot hold either).
//! - A section whose name starts with `global` holds defaults for the jobs that
//!   follow it (not for those before); every other section is a job.
//! - `include FILE` appends FILE's lines to the current section; FILE holds no
//!   sections and is looked up as given, then beside the including file.
//! - `${VAR}` and fio's `$keywords` are expanded in each option as it is read.
//!
//! Reading files is the caller's: [`parse`] takes a loader, so this stays free
//! of I/O.

use super::value::{Keywords, expand_env, replace_keywords};

/// One option line, where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOption {
    /// Option name as written (fio's names are case-sensitive).
    pub name: String,
    /// Value after `=`, expanded; None for a bare option (`time_based`).
    pub value: Option<String>,
    /// File the line is in.
    pub file: String,
    /// 1-based line number.
    pub line: usize,
}

impl JobOption {
    /// `name=value` or `name`, as fio's `job options` show it.
    pub fn as_written(&self) -> String {
        match &self.value {
            Some(v) => format!("{}={v}", self.name),
            None => self.name.clone(),
        }
    }

    /// `FILE:LINE`.
    pub fn place(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// A bracketed section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Name in the brackets.
    pub name: String,
    /// Whether it is a `[global…]` section.
    pub global: bool,
    /// Its options in file order (includes spliced in).
    pub options: Vec<JobOption>,
    /// File and line of the header.
    pub file: String,
    /// 1-based line of the header.
    pub line: usize,
}

/// Why a job file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IniError(pub String);

impl std::fmt::Display for IniError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Loads an included file: given the name as written and the including
/// file, returns the name it was found under and its text.
pub type Loader<'a> = dyn FnMut(&str, &str) -> Result<(String, String), String> + 'a;

/// Where values get their variables.
pub struct Expansion<'a> {
    /// Environment lookup for `${VAR}`.
    pub var: &'a dyn Fn(&str) -> Option<String>,
    /// Values of `$pagesize`, `$mb_memory`, `$ncpus`.
    pub keywords: Keywords,
}

/// Nested includes deeper than this are refused (a file including itself).
const MAX_INCLUDE_DEPTH: usize = 16;

/// Parses a job file's text into its sections.
pub fn parse(
    file: &str,
    text: &str,
    exp: &Expansion<'_>,
    load: &mut Loader<'_>,
) -> Result<Vec<Section>, IniError> {
    let mut sections: Vec<Section> = Vec::new();
    read_lines(file, text, exp, load, &mut sections, 0)?;
    Ok(sections)
}

fn is_comment(line: &str) -> bool {
    matches!(line.trim_start().chars().next(), None | Some(';' | '#'))
}

fn strip_end(line: &str) -> &str {
    let cut = line.find([';', '#']).unwrap_or(line.len());
    line[..cut].trim()
}

fn read_lines(
    file: &str,
    text: &str,
    exp: &Expansion<'_>,
    load: &mut Loader<'_>,
    sections: &mut Vec<Section>,
    depth: usize,
) -> Result<(), IniError> {
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        if is_comment(raw) {
            continue;
        }
        let line = strip_end(raw);
        if line.is_empty() {
            continue;
        }
        if let Some(head) = line.strip_prefix('[') {
            if depth > 0 {
                return Err(IniError(format!(
                    "{file}:{line_no}: an included file holds options only, not sections ({line})"
                )));
            }
            // fio reads `[%255[^\n]]` and drops the last character, whatever
            // it is: `[job` would run as `jo`. A header is `[NAME]`, nothing else.
            let Some(name) = head.strip_suffix(']') else {
                return Err(IniError(format!(
                    "{file}:{line_no}: section header {line} has no closing ']' (a header is [NAME])"
                )));
            };
            if name.contains([']', '[']) {
                return Err(IniError(format!(
                    "{file}:{line_no}: section header {line} holds a bracket in its name (a header is [NAME])"
                )));
            }
            let name = name.trim().to_string();
            if name.is_empty() {
                return Err(IniError(format!("{file}:{line_no}: empty section name")));
            }
            sections.push(Section {
                global: name.starts_with("global"),
                name,
                options: Vec::new(),
                file: file.to_string(),
                line: line_no,
            });
            continue;
        }
        let Some(section) = sections.last_mut() else {
            return Err(IniError(format!(
                "{file}:{line_no}: option <{line}> outside of a [job] section"
            )));
        };
        if let Some(rest) = line.strip_prefix("include")
            && (rest.is_empty() || rest.starts_with([' ', '\t']))
        {
            let name = rest.trim();
            if name.is_empty() {
                return Err(IniError(format!(
                    "{file}:{line_no}: include needs a file name"
                )));
            }
            if depth >= MAX_INCLUDE_DEPTH {
                return Err(IniError(format!(
                    "{file}:{line_no}: includes nested deeper than {MAX_INCLUDE_DEPTH} (does a file include itself?)"
                )));
            }
            let (found, inner) = load(name, file)
                .map_err(|e| IniError(format!("{file}:{line_no}: include {name}: {e}")))?;
            read_lines(&found, &inner, exp, load, sections, depth + 1)?;
            continue;
        }
        let (name, value) = match line.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim())),
            None => (line, None),
        };
        let value = match value {
            Some(v) => {
                let v = expand_env(v, exp.var);
                Some(
                    replace_keywords(&v, &exp.keywords)
                        .map_err(|e| IniError(format!("{file}:{line_no}: {name}: {e}")))?,
                )
            }
            None => None,
        };
        section.options.push(JobOption {
            name: name.to_string(),
            value,
            file: file.to_string(),
            line: line_no,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp() -> Expansion<'static> {
        Expansion {
            var: &|n| (n == "SIZE").then(|| "64m".to_string()),
            keywords: Keywords {
                pagesize: 4096,
                mb_memory: 1000,
                ncpus: 2,
            },
        }
    }

    fn no_files(name: &str, _: &str) -> Result<(String, String), String> {
        Err(format!("{name}: no such file"))
    }

    #[test]
    fn sections_options_comments_and_variables() {
        let text = "; a comment\n[global]\nbs=4k ; trailing\nsize=${SIZE}\n\n# another\n[job1]\nrw=randread\ntime_based\nnumjobs=$ncpus\n";
        let s = parse("a.fio", text, &exp(), &mut no_files).unwrap();
        assert_eq!(s.len(), 2);
        assert!(s[0].global && !s[1].global);
        assert_eq!(s[0].options[0].as_written(), "bs=4k");
        assert_eq!(s[0].options[1].value.as_deref(), Some("64m"));
        assert_eq!(s[1].options[1].value, None);
        assert_eq!(s[1].options[2].value.as_deref(), Some("2"));
        assert_eq!(s[1].options[0].place(), "a.fio:8");
    }

    #[test]
    fn a_header_is_name_in_brackets_and_nothing_else() {
        for (text, says) in [
            (
                "[job\nrw=read\n",
                "a.fio:1: section header [job has no closing ']'",
            ),
            (
                "[g]\n[job] x\n",
                "a.fio:2: section header [job] x has no closing",
            ),
            ("[a]b]\n", "holds a bracket"),
        ] {
            let e = parse("a.fio", text, &exp(), &mut no_files).unwrap_err();
            assert!(e.0.contains(says), "{text:?}: {e}");
        }
        // A comment after the header is cut first.
        let s = parse("a.fio", "[job] ; note\n", &exp(), &mut no_files).unwrap();
        assert_eq!(s[0].name, "job");
    }

    #[test]
    fn an_option_before_any_section_is_refused() {
        let e = parse("a.fio", "bs=4k\n[j]\n", &exp(), &mut no_files).unwrap_err();
        assert!(e.0.contains("a.fio:1") && e.0.contains("outside"), "{e}");
    }

    #[test]
    fn includes_splice_options_and_may_not_open_sections() {
        let mut load = |name: &str, _: &str| match name {
            "common.fio" => Ok(("dir/common.fio".to_string(), "iodepth=8\n".to_string())),
            "bad.fio" => Ok(("bad.fio".to_string(), "[x]\n".to_string())),
            "self.fio" => Ok(("self.fio".to_string(), "include self.fio\n".to_string())),
            _ => Err("no such file".to_string()),
        };
        let s = parse(
            "a.fio",
            "[j]\nbs=4k\ninclude common.fio\nrw=read\n",
            &exp(),
            &mut load,
        )
        .unwrap();
        let names: Vec<_> = s[0].options.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["bs", "iodepth", "rw"]);
        assert_eq!(s[0].options[1].place(), "dir/common.fio:1");
        let e = parse("a.fio", "[j]\ninclude bad.fio\n", &exp(), &mut load).unwrap_err();
        assert!(e.0.contains("not sections"), "{e}");
        let e = parse("a.fio", "[j]\ninclude self.fio\n", &exp(), &mut load).unwrap_err();
        assert!(e.0.contains("nested deeper"), "{e}");
        let e = parse("a.fio", "[j]\ninclude gone.fio\n", &exp(), &mut load).unwrap_err();
        assert!(e.0.contains("a.fio:2: include gone.fio"), "{e}");
    }
}
