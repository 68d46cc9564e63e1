//! libpq's connection service file (`pg_service.conf`): `service=NAME` (or
//! `PGSERVICE`) fills the keys the connection string leaves out, before the
//! `PG*` variables do. The file is `PGSERVICEFILE` (an error when it does not
//! exist), else `~/.pg_service.conf`, then `PGSYSCONFDIR/pg_service.conf`
//! (Debian's libpq: `/etc/postgresql-common`). Lines are `[name]`,
//! `key=value`, `#` comments and blanks; a line without `=`, an unknown key or
//! a `service=` inside a service is a syntax error naming the file and line.

use std::path::{Path, PathBuf};

use crate::env::Env;
use crate::error::TargetError;

/// Debian's libpq's compiled sysconfdir.
const SYSCONFDIR: &str = "/etc/postgresql-common";

/// The keys and values of service `name`, as libpq finds them.
pub fn lookup(name: &str, env: &dyn Env) -> Result<Vec<(String, String)>, TargetError> {
    let err = TargetError::conninfo;
    let mut files: Vec<PathBuf> = Vec::new();
    match env.get("PGSERVICEFILE") {
        Some(f) => {
            if !Path::new(&f).exists() {
                return Err(TargetError::about(
                    "PGSERVICEFILE",
                    format!("service file \"{f}\" not found"),
                ));
            }
            files.push(f.into());
        }
        None => {
            if let Some(h) = env.get("HOME") {
                files.push(Path::new(&h).join(".pg_service.conf"));
            }
        }
    }
    let sysconf = env.get("PGSYSCONFDIR").unwrap_or_else(|| SYSCONFDIR.into());
    files.push(Path::new(&sysconf).join("pg_service.conf"));
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        if let Some(found) = parse(&text, name, &file).map_err(err)? {
            return Ok(found);
        }
    }
    Err(err(format!("definition of service \"{name}\" not found")))
}

/// Service `name` in a file's `text`: None when the file has no such group.
fn parse(text: &str, name: &str, file: &Path) -> Result<Option<Vec<(String, String)>>, String> {
    let mut found: Option<Vec<(String, String)>> = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(group) = line.strip_prefix('[') {
            if found.is_some() {
                break;
            }
            if group.strip_suffix(']') == Some(name) {
                found = Some(Vec::new());
            }
            continue;
        }
        let Some(values) = found.as_mut() else {
            continue;
        };
        let syntax = || {
            format!(
                "syntax error in service file \"{}\", line {}",
                file.display(),
                n + 1
            )
        };
        let (key, value) = line.split_once('=').ok_or_else(syntax)?;
        if key == "service" {
            return Err(format!(
                "nested service specifications not supported in service file \"{}\", line {}",
                file.display(),
                n + 1
            ));
        }
        if !crate::options::is_libpq_key(key) {
            return Err(syntax());
        }
        values.push((key.to_string(), value.to_string()));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_keys_and_errors_follow_libpq() {
        let f = Path::new("/s.conf");
        let text = "# c\n[a]\nhost=h1\n[b]\nhost=h2\nport=5\n\n[c]\nhost=h3\n";
        assert_eq!(
            parse(text, "b", f).unwrap(),
            Some(vec![
                ("host".into(), "h2".into()),
                ("port".into(), "5".into())
            ])
        );
        assert_eq!(parse(text, "z", f).unwrap(), None);
        let e = parse("[a]\nhost h\n", "a", f).unwrap_err();
        assert_eq!(e, "syntax error in service file \"/s.conf\", line 2");
        let e = parse("[a]\nservice=b\n", "a", f).unwrap_err();
        assert!(e.starts_with("nested service specifications"), "{e}");
        assert!(parse("[a]\nnosuchkey=1\n", "a", f).is_err());
    }
}
