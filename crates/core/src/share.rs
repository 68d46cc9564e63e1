//! How a job shares the machine with the others: fio's flow (`flow_id`,
//! `flow`, `flow_sleep`: jobs of one flow keep their I/O counts in the ratio
//! of their weights, flow.c) and NUMA placement (`numa_cpu_nodes`,
//! `numa_mem_policy`: the CPUs of some nodes, a memory policy, as libnuma
//! sets them in fio's thread_main). Pure: which nodes exist is the engine's
//! question.

use serde::{Deserialize, Serialize};

/// fio's largest flow weight (`FLOW_MAX_WEIGHT`, flow.h).
pub const FLOW_MAX_WEIGHT: u32 = 1000;

/// A job's place in a flow.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Flow {
    /// The flow the job counts in (`flow_id`, default 0).
    pub id: u32,
    /// The job's weight in it (`flow`); 0: the job is in no flow.
    pub weight: u32,
    /// How long a job ahead of its share sleeps, after its I/Os in flight
    /// complete, µs (`flow_sleep`); 0: it only waits.
    pub sleep_us: u64,
}

/// A set of NUMA nodes as libnuma's `numa_parse_nodestring` reads it:
/// `all`, or numbers and ranges separated by commas.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NodeSet {
    /// Every node the process may use (`all`).
    All,
    /// These nodes, ascending, each once.
    Nodes(Vec<u32>),
}

impl NodeSet {
    /// Parses `0`, `0-1`, `0,2-3`, `all`.
    pub fn parse(s: &str) -> Result<NodeSet, String> {
        let s = s.trim();
        if s == "all" {
            return Ok(NodeSet::All);
        }
        let mut nodes = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            if part.starts_with(['!', '+']) {
                return Err(format!(
                    "'{part}': csdchar takes node numbers, ranges and all (not ! or +)"
                ));
            }
            let num = |t: &str| {
                t.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("'{part}' is not a node number or range"))
            };
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => (num(part)?, num(part)?),
            };
            if hi < lo || hi >= 4096 {
                return Err(format!("'{part}' is not a node range"));
            }
            nodes.extend(lo..=hi);
        }
        nodes.sort_unstable();
        nodes.dedup();
        Ok(NodeSet::Nodes(nodes))
    }

    /// The nodes, `all` being `existing`.
    pub fn resolve(&self, existing: &[u32]) -> Vec<u32> {
        match self {
            NodeSet::All => existing.to_vec(),
            NodeSet::Nodes(n) => n.clone(),
        }
    }
}

/// The memory policy a job's thread sets (`numa_mem_policy`, set_mempolicy(2)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemPolicy {
    /// The system's policy (`default`: fio sets nothing).
    Default,
    /// Memory from this node first (`prefer:N`).
    Prefer(u32),
    /// Memory only from these nodes (`bind:LIST`).
    Bind(NodeSet),
    /// Memory spread over these nodes (`interleave[:LIST]`, all by default).
    Interleave(NodeSet),
    /// Memory from the node the thread runs on (`local`).
    Local,
}

impl MemPolicy {
    /// Parses `mode[:nodelist]` with fio's rules (options.c, `str_numa_mpol_cb`).
    pub fn parse(s: &str) -> Result<MemPolicy, String> {
        let (mode, list) = match s.split_once(':') {
            Some((m, l)) => (m, Some(l)),
            None => (s, None),
        };
        Ok(match (mode, list) {
            ("prefer", Some(l)) if !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()) => {
                MemPolicy::Prefer(
                    l.parse()
                        .map_err(|_| format!("prefer:{l}: not a node number"))?,
                )
            }
            ("prefer", _) => return Err("prefer takes one node (prefer:N)".into()),
            ("bind", Some(l)) => MemPolicy::Bind(NodeSet::parse(l)?),
            ("bind", None) => return Err("bind needs a node list (bind:LIST)".into()),
            ("interleave", l) => MemPolicy::Interleave(NodeSet::parse(l.unwrap_or("all"))?),
            ("local" | "default", Some(_)) => {
                return Err(format!("{mode} takes no node list"));
            }
            ("local", None) => MemPolicy::Local,
            ("default", None) => MemPolicy::Default,
            _ => {
                return Err(format!(
                    "{mode}: the memory policy is default, prefer, bind, interleave or local"
                ));
            }
        })
    }

    /// The node set it names, if any.
    pub fn nodes(&self) -> Option<&NodeSet> {
        match self {
            MemPolicy::Bind(n) | MemPolicy::Interleave(n) => Some(n),
            _ => None,
        }
    }
}

/// Where a job's thread runs and takes its memory.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Numa {
    /// Run on the CPUs of these nodes (`numa_cpu_nodes`); absent: anywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_nodes: Option<NodeSet>,
    /// The thread's memory policy (`numa_mem_policy`); absent: unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_policy: Option<MemPolicy>,
}

impl Numa {
    /// Whether the job asks for nothing.
    pub fn is_none(&self) -> bool {
        self.cpu_nodes.is_none() && self.mem_policy.is_none()
    }
}

/// How a job shares the machine with the others.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobShare {
    /// Its flow; weight 0: none.
    #[serde(default, skip_serializing_if = "Flow::is_none")]
    pub flow: Flow,
    /// Its NUMA placement.
    #[serde(default, skip_serializing_if = "Numa::is_none")]
    pub numa: Numa,
}

impl Flow {
    /// Whether the job is in no flow.
    pub fn is_none(&self) -> bool {
        self.weight == 0
    }

    /// fio's `flow_threshold_exceeded` test: whether a job that has done
    /// `mine` of the flow's `total` counted I/Os is ahead of its weight's
    /// share of the flow's `total_weight`.
    pub fn ahead(&self, mine: u64, total: u64, total_weight: u64) -> bool {
        let counter_ratio = mine as f64 / total.max(1) as f64;
        let weight_ratio = f64::from(self.weight) / total_weight.max(1) as f64;
        counter_ratio > weight_ratio
    }
}

impl JobShare {
    /// Whether the job asks for nothing.
    pub fn is_none(&self) -> bool {
        self.flow.is_none() && self.numa.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_lists_read_as_libnuma_reads_them() {
        assert_eq!(NodeSet::parse("0").unwrap(), NodeSet::Nodes(vec![0]));
        assert_eq!(
            NodeSet::parse("0-1,3,1").unwrap(),
            NodeSet::Nodes(vec![0, 1, 3])
        );
        assert_eq!(NodeSet::parse("all").unwrap(), NodeSet::All);
        assert!(NodeSet::parse("1-0").is_err());
        assert!(NodeSet::parse("x").is_err());
        assert!(NodeSet::parse("!0").is_err());
        assert_eq!(NodeSet::All.resolve(&[0, 1]), vec![0, 1]);
    }

    #[test]
    fn memory_policies_follow_fios_rules() {
        assert_eq!(MemPolicy::parse("prefer:1").unwrap(), MemPolicy::Prefer(1));
        assert!(MemPolicy::parse("prefer:0-1").is_err());
        assert!(MemPolicy::parse("prefer").is_err());
        assert!(MemPolicy::parse("bind").is_err());
        assert_eq!(
            MemPolicy::parse("interleave").unwrap(),
            MemPolicy::Interleave(NodeSet::All)
        );
        assert!(MemPolicy::parse("local:0").is_err());
        assert_eq!(MemPolicy::parse("default").unwrap(), MemPolicy::Default);
        assert!(MemPolicy::parse("spread:0").is_err());
    }

    #[test]
    fn a_job_ahead_of_its_weight_waits() {
        let f = Flow {
            id: 0,
            weight: 1,
            sleep_us: 0,
        };
        // Weights 1 and 8: one I/O in nine is this job's.
        assert!(!f.ahead(1, 10, 9));
        assert!(f.ahead(2, 10, 9));
        // The flow's counter starts at 1 (flow_get), so the first I/O goes.
        assert!(!f.ahead(0, 1, 9));
    }
}
