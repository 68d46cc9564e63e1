//! How a job shares the machine with the others: fio's flow (`flow_id`,
//! `flow`, `flow_sleep`: jobs of one flow keep their I/O counts in the ratio
//! of their weights, flow.c) and NUMA placement (`numa_cpu_nodes`,
//! `numa_mem_policy`: the CPUs of some nodes, a memory policy, as libnuma
//! sets them in fio's thread_main) and I/O priorities (`prio`, `prioclass`:
//! the job's, set with ioprio_set and on every io_uring SQE; `cmdprio_percentage`,
//! `cmdprio_class`, `cmdprio`: a share of each direction's I/Os with another,
//! as fio's engines/cmdprio.c). Pure: which nodes exist is the engine's
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

/// Linux's ioprio value of `class` and `level` (`IOPRIO_PRIO_VALUE`).
pub fn ioprio_value(class: u8, level: u8) -> u16 {
    (u16::from(class) << 13) | u16::from(level)
}

/// A job's I/O priorities.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IoPrio {
    /// The job's priority class (`prioclass`, 0 to 3; 0 is taken as best
    /// effort, as fio's ioprio_value does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<u8>,
    /// The job's level in it (`prio`, 0 to 7). Neither set: the thread's
    /// priority is left alone and SQEs carry 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u8>,
    /// Percent of reads and of writes that carry `cmd` instead (`cmdprio_percentage`).
    #[serde(default)]
    pub cmd_percentage: [u8; 2],
    /// The class of those I/Os per direction (`cmdprio_class`; 0: real time, fio's default).
    #[serde(default)]
    pub cmd_class: [u8; 2],
    /// Their level per direction (`cmdprio`, 0 to 7).
    #[serde(default)]
    pub cmd_level: [u8; 2],
    /// Whether latency logs carry each I/O's priority (`log_prio`) rather
    /// than 1 for a real-time one and 0 otherwise.
    #[serde(default)]
    pub log_prio: bool,
}

impl IoPrio {
    /// Whether the job asks for nothing.
    pub fn is_none(&self) -> bool {
        self.job().is_none() && self.cmd_percentage == [0, 0] && !self.log_prio
    }

    /// The value every I/O carries unless cmdprio picks another (fio's
    /// `td->ioprio`): 0 without `prio`/`prioclass`.
    pub fn default_value(&self) -> u16 {
        self.job().unwrap_or(0)
    }

    /// The job's own priority, when `prio` or `prioclass` is set.
    pub fn job(&self) -> Option<u16> {
        if self.class.is_none() && self.level.is_none() {
            return None;
        }
        let class = match self.class.unwrap_or(0) {
            0 => 2,
            c => c,
        };
        Some(ioprio_value(class, self.level.unwrap_or(0)))
    }

    /// The cmdprio value of direction `d` (0 read, 1 write).
    pub fn cmd_value(&self, d: usize) -> u16 {
        let class = match self.cmd_class[d] {
            0 => 1,
            c => c,
        };
        ioprio_value(class, self.cmd_level[d])
    }

    /// Whether direction `d` draws per-I/O priorities (fio then keeps
    /// latencies per priority for it).
    pub fn draws(&self, d: usize) -> bool {
        d < 2 && self.cmd_percentage[d] > 0
    }

    /// The priority of an I/O of direction `d`, given fio's draw of 0 to 99
    /// (`rand_between(prio_state, 0, 99)`, drawn only when the direction
    /// has a percentage).
    pub fn pick(&self, d: usize, draw: u32) -> u16 {
        if self.draws(d) && draw < u32::from(self.cmd_percentage[d]) {
            self.cmd_value(d)
        } else {
            self.default_value()
        }
    }

    /// The lat logs' last column for an I/O of priority `value`.
    pub fn log_value(&self, value: u16) -> String {
        if self.log_prio {
            format!("0x{value:04x}")
        } else {
            u8::from(value >> 13 == 1).to_string()
        }
    }
}

/// Completion latency of one priority's I/Os (fio's `prios` entries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PrioLatency {
    /// The priority class (1 real time, 2 best effort, 3 idle, 0 none).
    pub prioclass: u8,
    /// The level in the class (0 to 7).
    pub prio: u8,
    /// Completion latency of the I/Os with it, ns.
    pub clat: crate::stats::LatencyStats,
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
    /// Its I/O priorities.
    #[serde(default, skip_serializing_if = "IoPrio::is_none")]
    pub prio: IoPrio,
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
        self.flow.is_none() && self.numa.is_none() && self.prio.is_none()
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
    fn priorities_are_fios_values() {
        let p = IoPrio {
            class: Some(3),
            cmd_percentage: [20, 0],
            ..IoPrio::default()
        };
        // cmdprio_class unset: real time, level 0.
        assert_eq!(p.pick(0, 19), 0x2000);
        assert_eq!(p.pick(0, 20), 0x6000);
        assert_eq!(p.pick(1, 0), 0x6000);
        assert_eq!(p.log_value(0x2000), "1");
        assert_eq!(p.log_value(0x6000), "0");
        let logged = IoPrio {
            log_prio: true,
            ..p
        };
        assert_eq!(logged.log_value(0x6000), "0x6000");
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
