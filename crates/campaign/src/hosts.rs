//! Load hosts in a campaign: the `[hosts]` table and where each step runs
//! (`on = "all" | "local" | ["name", …]`). The campaign only records them; the
//! CLI runs a step on hosts with `--hosts` (crates/fleet).
//!
//! ```toml
//! [hosts]
//! load1 = "bench@load1.example.com"                                 # an ssh destination
//! load2 = { destination = "load2", csdchar = "/opt/csdchar/bin/csdchar", workdir = "/srv", sudo = true }
//! ```

use toml::{Table, Value};

use crate::CampaignError;

/// Where a step runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StepHosts {
    /// Not said: load steps (`db run`, `block`) on every host when there are hosts,
    /// every other step once, here.
    #[default]
    Default,
    /// Here only (`on = "local"`).
    Local,
    /// On every host (`on = "all"`).
    All,
    /// On these hosts (`on = ["load1", …]`).
    Names(Vec<String>),
}

impl StepHosts {
    /// Reads a step's `on`.
    pub fn parse(key: &str, v: &Value) -> Result<StepHosts, CampaignError> {
        let bad = || {
            CampaignError::File(format!(
                "{key}.on: must be \"all\", \"local\" or a list of [hosts] names"
            ))
        };
        match v {
            Value::String(s) if s == "all" => Ok(StepHosts::All),
            Value::String(s) if s == "local" => Ok(StepHosts::Local),
            Value::Array(a) if !a.is_empty() => a
                .iter()
                .map(|x| x.as_str().map(str::to_string).ok_or_else(bad))
                .collect::<Result<Vec<_>, _>>()
                .map(StepHosts::Names),
            _ => Err(bad()),
        }
    }

    /// Which hosts of `names` a step runs on (`command`: its words, e.g. "db run";
    /// `load`: a `db run` or `block` step); None: here, once. A step that names
    /// hosts or says `all` but is not a load step is an error.
    pub fn resolve(
        &self,
        command: &str,
        load: bool,
        names: &[String],
    ) -> Result<Option<Vec<String>>, String> {
        let wanted = match self {
            StepHosts::Local => return Ok(None),
            StepHosts::Default if !load || names.is_empty() => return Ok(None),
            StepHosts::Default | StepHosts::All => names.to_vec(),
            StepHosts::Names(n) => n.clone(),
        };
        if !load {
            return Err(format!(
                "{command} runs once, not on load hosts (only db run and block do): use on = \"local\""
            ));
        }
        if names.is_empty() {
            return Err("on: names load hosts, but there are none ([hosts] or --hosts)".into());
        }
        if let Some(n) = wanted.iter().find(|n| !names.contains(n)) {
            return Err(format!("on: no host '{n}' (hosts: {})", names.join(", ")));
        }
        Ok(Some(wanted))
    }
}

/// `[hosts]` as hosts-file lines (`DESTINATION name=NAME [csdchar=…] [workdir=…] [sudo]`).
pub fn parse_hosts_table(t: &Table) -> Result<Vec<String>, CampaignError> {
    let bad = |m: String| Err(CampaignError::File(m));
    let word = |s: &str| !s.is_empty() && !s.chars().any(char::is_whitespace) && !s.contains('#');
    let mut lines = Vec::new();
    for (name, v) in t {
        let key = format!("hosts.{name}");
        if !word(name) {
            return bad(format!("{key}: a host's name is one word"));
        }
        let line = match v {
            Value::String(d) if word(d) => format!("{d} name={name}"),
            Value::Table(o) => {
                let Some(d) = o
                    .get("destination")
                    .and_then(Value::as_str)
                    .filter(|d| word(d))
                else {
                    return bad(format!(
                        "{key}.destination: missing (an ssh destination: alias, user@host, ssh://…)"
                    ));
                };
                let mut line = format!("{d} name={name}");
                for (k, v) in o {
                    match (k.as_str(), v) {
                        ("destination", _) => {}
                        ("csdchar" | "workdir", Value::String(s)) if word(s) => {
                            line.push_str(&format!(" {k}={s}"))
                        }
                        ("sudo", Value::Boolean(true)) => line.push_str(" sudo"),
                        ("sudo", Value::Boolean(false)) => {}
                        _ => {
                            return bad(format!(
                                "{key}.{k}: allowed: destination, csdchar (a path), workdir (a path), sudo (true/false)"
                            ));
                        }
                    }
                }
                line
            }
            _ => {
                return bad(format!(
                    "{key}: an ssh destination (\"user@host\") or a table with destination"
                ));
            }
        };
        lines.push(line);
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn where_steps_run() {
        let names = vec!["a".to_string(), "b".to_string()];
        let d = StepHosts::Default;
        assert_eq!(
            d.resolve("db run", true, &names).unwrap(),
            Some(names.clone())
        );
        assert_eq!(d.resolve("db prepare", false, &names).unwrap(), None);
        assert_eq!(d.resolve("block", true, &[]).unwrap(), None);
        assert_eq!(
            StepHosts::Local.resolve("db run", true, &names).unwrap(),
            None
        );
        let one = StepHosts::Names(vec!["b".into()]);
        assert_eq!(
            one.resolve("block", true, &names).unwrap(),
            Some(vec!["b".into()])
        );
        let e = StepHosts::All
            .resolve("db prepare", false, &names)
            .unwrap_err();
        assert!(e.contains("on = \"local\""), "{e}");
        let e = StepHosts::Names(vec!["c".into()])
            .resolve("db run", true, &names)
            .unwrap_err();
        assert!(e.contains("no host 'c'"), "{e}");
    }

    #[test]
    fn hosts_table() {
        let t: Table =
            "a = \"bench@a\"\nb = { destination = \"b\", sudo = true, workdir = \"/srv\" }\n"
                .parse()
                .unwrap();
        assert_eq!(
            parse_hosts_table(&t).unwrap(),
            ["bench@a name=a", "b name=b sudo workdir=/srv"]
        );
        let t: Table = "a = { sudo = true }".parse().unwrap();
        assert!(
            parse_hosts_table(&t)
                .unwrap_err()
                .to_string()
                .contains("destination")
        );
    }
}
