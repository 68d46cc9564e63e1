//! pgbench custom scripts in `csdchar.db/1`: what ran (`spec.script`) and how each
//! script and statement fared (`steps[].script`), in pgbench's terms (its `-r` report).

use serde::{Deserialize, Serialize};

/// The scripts of a run and the options that change what they send or count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScriptParams {
    /// The scripts in the order given (`-f FILE[@W]`, `-b NAME[@W]`).
    pub scripts: Vec<ScriptEntry>,
    /// pgbench's `-M`: "simple", "extended" or "prepared".
    pub query_mode: String,
    /// The seed every client's random state was derived from (`--random-seed`; `:random_seed`).
    pub random_seed: u64,
    /// `:scale` as pgbench decides it: `--scale` or 1 for `-f` scripts alone, the row count
    /// of pgbench_branches when a builtin is among the scripts.
    pub scale: i64,
    /// `--max-tries` (1: no retry; 0: unlimited).
    pub max_tries: u32,
    /// Transactions per client (`-t`); absent when the step ran for `time_s` (`-T`). With it,
    /// `time_s` is only a bound (a year) and each step's `elapsed_s` says how long it took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions_per_client: Option<u64>,
    /// `-D NAME=VALUE` definitions, as given.
    pub defines: Vec<String>,
}

/// One script of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScriptEntry {
    /// Its name: the file as given, or `<builtin: NAME>`.
    pub name: String,
    /// Its weight.
    pub weight: u32,
}

/// How a step's scripts fared (pgbench's summary and `-r`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScriptStep {
    /// Transactions whose last try failed on a serialization failure (40001).
    pub serialization_failures: u64,
    /// Transactions whose last try failed on a deadlock (40P01).
    pub deadlock_failures: u64,
    /// Transactions retried at least once (successful or not).
    pub retried: u64,
    /// Retries in all (tries - 1, summed).
    pub retries: u64,
    /// Clients that aborted (pgbench's "client N aborted …"): the run goes on without them and
    /// pgbench would exit with status 2.
    pub aborted_clients: Vec<ScriptAbort>,
    /// Per script, in the order given.
    pub scripts: Vec<ScriptStats>,
}

/// A client that stopped on an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScriptAbort {
    /// The client (`:client_id`).
    pub client: u32,
    /// The script it was running (index in `spec.script.scripts`).
    pub script: u32,
    /// The command it stopped at (index in the script's commands, from 0).
    pub command: u32,
    /// pgbench's message.
    pub message: String,
    /// The SQLSTATE, when an SQL error ended it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sqlstate: Option<String>,
}

/// One script's figures over a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScriptStats {
    /// The script's name.
    pub name: String,
    /// Its weight.
    pub weight: u32,
    /// Successful transactions.
    pub transactions: u64,
    /// Failed on a serialization failure after the last try.
    pub serialization_failures: u64,
    /// Failed on a deadlock after the last try.
    pub deadlock_failures: u64,
    /// Transactions retried at least once.
    pub retried: u64,
    /// Retries in all.
    pub retries: u64,
    /// Mean latency of its successful transactions (retries and `\sleep` included), ms.
    pub latency_avg_ms: f64,
    /// Their standard deviation, ms.
    pub latency_stddev_ms: f64,
    /// Per command (SQL and meta-commands), in script order.
    pub commands: Vec<CommandStat>,
}

/// One command's figures (a line of pgbench's `-r`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandStat {
    /// Line of the script it starts at, from 1.
    pub line: u32,
    /// Its first line as pgbench prints it.
    pub text: String,
    /// Executions that completed.
    pub executions: u64,
    /// Their mean latency, ms (0 when none).
    pub latency_avg_ms: f64,
    /// Failed transactions that ended at this command.
    pub failures: u64,
    /// Retries after an error at this command.
    pub retries: u64,
}

impl ScriptStep {
    /// The figures of several hosts' clients running the same scripts together: counts
    /// added, latencies combined weighted by their counts, aborted clients listed. None
    /// when no part has them or their scripts differ.
    pub fn merge(parts: &[&ScriptStep]) -> Option<ScriptStep> {
        let first = parts.first()?;
        let same_shape = parts.iter().all(|p| {
            p.scripts.len() == first.scripts.len()
                && p.scripts
                    .iter()
                    .zip(&first.scripts)
                    .all(|(a, b)| a.name == b.name && a.commands.len() == b.commands.len())
        });
        if !same_shape {
            return None;
        }
        let sum = |f: fn(&ScriptStep) -> u64| parts.iter().map(|p| f(p)).sum::<u64>();
        let scripts = (0..first.scripts.len())
            .map(|i| {
                let of: Vec<&ScriptStats> = parts.iter().map(|p| &p.scripts[i]).collect();
                let s = |f: fn(&ScriptStats) -> u64| of.iter().map(|x| f(x)).sum::<u64>();
                let n = s(|x| x.transactions);
                let (mut m1, mut m2) = (0.0, 0.0);
                for x in &of {
                    let k = x.transactions as f64;
                    m1 += k * x.latency_avg_ms;
                    m2 += k * (x.latency_stddev_ms.powi(2) + x.latency_avg_ms.powi(2));
                }
                let mean = if n > 0 { m1 / n as f64 } else { 0.0 };
                let var = if n > 0 {
                    (m2 / n as f64 - mean * mean).max(0.0)
                } else {
                    0.0
                };
                let commands = (0..of[0].commands.len())
                    .map(|c| {
                        let cs: Vec<&CommandStat> = of.iter().map(|x| &x.commands[c]).collect();
                        let e: u64 = cs.iter().map(|x| x.executions).sum();
                        let lat: f64 = cs
                            .iter()
                            .map(|x| x.executions as f64 * x.latency_avg_ms)
                            .sum();
                        CommandStat {
                            line: cs[0].line,
                            text: cs[0].text.clone(),
                            executions: e,
                            latency_avg_ms: if e > 0 { lat / e as f64 } else { 0.0 },
                            failures: cs.iter().map(|x| x.failures).sum(),
                            retries: cs.iter().map(|x| x.retries).sum(),
                        }
                    })
                    .collect();
                ScriptStats {
                    name: of[0].name.clone(),
                    weight: of[0].weight,
                    transactions: n,
                    serialization_failures: s(|x| x.serialization_failures),
                    deadlock_failures: s(|x| x.deadlock_failures),
                    retried: s(|x| x.retried),
                    retries: s(|x| x.retries),
                    latency_avg_ms: mean,
                    latency_stddev_ms: var.sqrt(),
                    commands,
                }
            })
            .collect();
        Some(ScriptStep {
            serialization_failures: sum(|p| p.serialization_failures),
            deadlock_failures: sum(|p| p.deadlock_failures),
            retried: sum(|p| p.retried),
            retries: sum(|p| p.retries),
            aborted_clients: parts
                .iter()
                .flat_map(|p| p.aborted_clients.iter().cloned())
                .collect(),
            scripts,
        })
    }
}
