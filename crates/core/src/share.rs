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
    /// Per block size, shares of reads and of writes with given priorities
    /// (`cmdprio_bssplit`), sorted by block size; empty: none.
    #[serde(default, skip_serializing_if = "is_empty_pair")]
    pub cmd_bssplit: [Vec<BsPrio>; 2],
    /// Whether latency logs carry each I/O's priority (`log_prio`) rather
    /// than 1 for a real-time one and 0 otherwise.
    #[serde(default)]
    pub log_prio: bool,
}

impl IoPrio {
    /// Whether the job asks for nothing.
    pub fn is_none(&self) -> bool {
        self.job().is_none()
            && self.cmd_percentage == [0, 0]
            && self.cmd_class == [0, 0]
            && self.cmd_level == [0, 0]
            && is_empty_pair(&self.cmd_bssplit)
            && !self.log_prio
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
        d < 2 && (self.cmd_percentage[d] > 0 || !self.cmd_bssplit[d].is_empty())
    }

    /// The share in percent of direction `d`'s I/Os of `len` bytes that
    /// carry a cmdprio priority (fio's fio_cmdprio_percentage).
    pub fn share(&self, d: usize, len: u64) -> u32 {
        if d >= 2 {
            return 0;
        }
        if self.cmd_bssplit[d].is_empty() {
            return u32::from(self.cmd_percentage[d]);
        }
        self.cmd_bssplit[d]
            .iter()
            .filter(|b| b.bs == len)
            .map(|b| u32::from(b.perc))
            .sum()
    }

    /// The priority of an I/O of direction `d` and `len` bytes, given fio's
    /// draw of 0 to 99 (`rand_between(prio_state, 0, 99)`, drawn only when
    /// [`IoPrio::share`] is not 0).
    pub fn pick(&self, d: usize, len: u64, draw: u32) -> u16 {
        if draw >= self.share(d, len) {
            return self.default_value();
        }
        if self.cmd_bssplit[d].is_empty() {
            return self.cmd_value(d);
        }
        let mut sum = 0;
        for b in self.cmd_bssplit[d].iter().filter(|b| b.bs == len) {
            sum += u32::from(b.perc);
            if draw < sum {
                return b.prio.unwrap_or_else(|| self.cmd_value(d));
            }
        }
        self.default_value()
    }

    /// Direction `d`'s priorities in fio's order (its clat_prio indexes):
    /// the job's, then each cmdprio one as its entries name it.
    pub fn order(&self, d: usize) -> Vec<u16> {
        let mut out = vec![self.default_value()];
        let cmd: Vec<u16> = if self.cmd_bssplit[d.min(1)].is_empty() {
            vec![self.cmd_value(d.min(1))]
        } else {
            self.cmd_bssplit[d.min(1)]
                .iter()
                .map(|b| b.prio.unwrap_or_else(|| self.cmd_value(d.min(1))))
                .collect()
        };
        for p in cmd {
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
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

/// One `cmdprio_bssplit` entry: `perc`% of the I/Os of size `bs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BsPrio {
    /// Block size, bytes.
    pub bs: u64,
    /// Percent of that size's I/Os.
    pub perc: u8,
    /// Their priority; None: cmdprio_class and cmdprio's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prio: Option<u16>,
}

fn is_empty_pair(v: &[Vec<BsPrio>; 2]) -> bool {
    v[0].is_empty() && v[1].is_empty()
}

/// Parses `cmdprio_bssplit` as fio 3.33 does (options.c,
/// split_parse_prio_ddir): per direction (`R,W`; one list for both),
/// `:`-separated `bs/perc[/class/level]` entries (fields after the fourth
/// ignored, as fio's sscanf does), entries of 0% dropped, sorted by size, at
/// most 100% per size.
pub fn parse_bssplit(
    s: &str,
    bytes: &dyn Fn(&str) -> Result<u64, String>,
) -> Result<[Vec<BsPrio>; 2], String> {
    let mut parts = s.trim().split(',');
    let first = parts.next().unwrap_or("");
    let second = parts.next();
    let one = |list: &str| -> Result<Vec<BsPrio>, String> {
        let mut out = Vec::new();
        for e in list.split(':').take_while(|e| !e.is_empty()) {
            let f: Vec<&str> = e.split('/').collect();
            let num = |t: &str| {
                t.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("'{e}': bs/perc[/class/level]"))
            };
            let perc = match f.get(1) {
                Some(p) if !p.is_empty() => num(p)?.min(100) as u8,
                _ => 0,
            };
            let prio = match f.len() {
                0..=2 => None,
                3 => return Err(format!("'{e}': bs/perc[/class/level]")),
                _ => Some(ioprio_value(
                    num(f[2])?.min(3) as u8,
                    num(f[3])?.min(7) as u8,
                )),
            };
            let bs = bytes(f[0])?;
            if perc > 0 {
                out.push(BsPrio { bs, perc, prio });
            }
        }
        out.sort_by_key(|b| b.bs);
        for b in &out {
            let total: u32 = out
                .iter()
                .filter(|o| o.bs == b.bs)
                .map(|o| u32::from(o.perc))
                .sum();
            if total > 100 {
                return Err(format!("the shares of {} bytes add up to over 100%", b.bs));
            }
        }
        Ok(out)
    };
    let read = one(first)?;
    let write = match second {
        Some(w) => one(w)?,
        None => read.clone(),
    };
    Ok([read, write])
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
        assert_eq!(p.pick(0, 4096, 19), 0x2000);
        assert_eq!(p.pick(0, 4096, 20), 0x6000);
        assert_eq!(p.pick(1, 4096, 0), 0x6000);
        assert_eq!(p.log_value(0x2000), "1");
        assert_eq!(p.log_value(0x6000), "0");
        let logged = IoPrio {
            log_prio: true,
            ..p
        };
        assert_eq!(logged.log_value(0x6000), "0x6000");
    }

    #[test]
    fn cmdprio_bssplit_reads_as_fio_reads_it() {
        let bytes = |t: &str| -> Result<u64, String> {
            let (n, m) = match t.strip_suffix('k') {
                Some(n) => (n, 1024),
                None => (t.strip_suffix('M').unwrap_or(t), 1 << 20),
            };
            n.parse::<u64>().map(|n| n * m).map_err(|e| e.to_string())
        };
        // cmdprio-bssplit.fio's [cmdprio-adv] and [cmdprio-hints] lists.
        let [r, w] = parse_bssplit("64k/25/1/1:64k/75/3/2:1024k/0,1024k/0", &bytes).unwrap();
        assert!(w.is_empty());
        let p = IoPrio {
            class: Some(2),
            level: Some(7),
            cmd_bssplit: [r, w],
            ..IoPrio::default()
        };
        assert_eq!(p.share(0, 65536), 100);
        assert_eq!(p.pick(0, 65536, 24), ioprio_value(1, 1));
        assert_eq!(p.pick(0, 65536, 25), ioprio_value(3, 2));
        assert_eq!(p.pick(0, 1 << 20, 0), ioprio_value(2, 7));
        assert_eq!(p.order(0), [0x4007, 0x2001, 0x6002]);
        let [r, _] = parse_bssplit("1M/10/2/0/1:1M/30/2/0/2:2M/10/2/0/3", &bytes).unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].prio, Some(0x4000));
        // The implicit priority: cmdprio_class (real time by default) and cmdprio.
        let [r, _] = parse_bssplit("64k/100:1024k/0", &bytes).unwrap();
        assert_eq!(
            r,
            [BsPrio {
                bs: 65536,
                perc: 100,
                prio: None
            }]
        );
        assert!(parse_bssplit("64k/60:64k/50", &bytes).is_err());
        assert!(parse_bssplit("64k/60/1", &bytes).is_err());
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
