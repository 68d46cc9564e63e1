//! How a job shares the machine, at run time: fio's flows (flow.c: one
//! counter and one total weight per flow id, shared by every job of a job
//! file; a job ahead of its weight's share waits) and NUMA placement (the
//! thread's CPUs and memory policy, as fio's thread_main sets them through
//! libnuma; the nodes checked against `/sys/devices/system/node`, as
//! libnuma's `numa_parse_nodestring` checks them).

use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use csdchar_core::share::{Flow, IoPrio, MemPolicy, Numa};
use csdchar_core::stats::LatencyRecorder;

/// One flow's shared counts (fio's `struct fio_flow`).
#[derive(Debug)]
struct FlowCounts {
    id: u32,
    /// I/Os counted by the flow's jobs, plus 1 (fio's starting value).
    counter: AtomicU64,
    /// Weights of the jobs set up in it and not yet ended.
    total_weight: AtomicU64,
}

/// The flows of a run (fio keeps one list for the whole job file).
#[derive(Debug, Default)]
pub struct FlowTable {
    flows: Mutex<Vec<Arc<FlowCounts>>>,
}

impl FlowTable {
    fn get(&self, id: u32) -> Arc<FlowCounts> {
        let mut flows = self.flows.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = flows.iter().find(|f| f.id == id) {
            return Arc::clone(f);
        }
        let f = Arc::new(FlowCounts {
            id,
            counter: AtomicU64::new(1),
            total_weight: AtomicU64::new(0),
        });
        flows.push(Arc::clone(&f));
        f
    }

    /// Adds the weight of `threads` jobs with `flow` (fio's flow_init_job,
    /// called as the job file is read: a job counts in its flow from then,
    /// started or not).
    pub fn register(&self, flow: &Flow, threads: u32) {
        if flow.is_none() {
            return;
        }
        let f = self.get(flow.id);
        f.total_weight.fetch_add(
            u64::from(flow.weight) * u64::from(threads),
            Ordering::Relaxed,
        );
    }

    /// A registered job's handle on its flow; None: the job is in none.
    pub fn member(&self, flow: &Flow) -> Option<FlowMember> {
        (!flow.is_none()).then(|| FlowMember {
            counts: self.get(flow.id),
            flow: *flow,
            mine: 0,
        })
    }
}

/// One job's place in its flow. Dropped when the job ends: its counts and
/// weight leave the flow (fio's flow_exit_job).
#[derive(Debug)]
pub struct FlowMember {
    counts: Arc<FlowCounts>,
    flow: Flow,
    mine: u64,
}

impl FlowMember {
    /// fio's `flow_threshold_exceeded`, before each I/O: true when the job is
    /// ahead and must hold back; otherwise the I/O is counted.
    pub fn held(&mut self) -> bool {
        let total = self.counts.counter.load(Ordering::Relaxed);
        let weight = self.counts.total_weight.load(Ordering::Relaxed);
        if self.flow.ahead(self.mine, total, weight) {
            return true;
        }
        self.counts.counter.fetch_add(1, Ordering::Relaxed);
        self.mine += 1;
        false
    }

    /// How long a held job sleeps once its I/Os in flight complete, µs.
    pub fn sleep_us(&self) -> u64 {
        self.flow.sleep_us
    }
}

impl Drop for FlowMember {
    fn drop(&mut self) {
        self.counts.counter.fetch_sub(self.mine, Ordering::Relaxed);
        self.counts
            .total_weight
            .fetch_sub(u64::from(self.flow.weight), Ordering::Relaxed);
    }
}

/// A job file's flows as one run of it sees them.
#[derive(Debug)]
pub struct FlowRun {
    /// The file's flows.
    pub table: Arc<FlowTable>,
    /// The run's place among the jobs that start with it.
    pub start: Option<StartTicket>,
}

/// Jobs the job file starts at one moment: they begin their I/O together,
/// once each is set up, as fio starts the jobs it forked together
/// (run_threads); a job that set up faster would otherwise run alone at
/// first (take a flow's counts, or end before the others began, and with
/// exitall end them unstarted).
#[derive(Debug)]
pub struct StartGroup {
    waiting: Mutex<usize>,
    cv: Condvar,
}

impl StartGroup {
    /// A group held closed until [`StartGroup::open`].
    pub fn new() -> Arc<Self> {
        Arc::new(StartGroup {
            waiting: Mutex::new(1),
            cv: Condvar::new(),
        })
    }

    /// A ticket for one more job.
    pub fn ticket(self: &Arc<Self>) -> StartTicket {
        *self.waiting.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        StartTicket {
            group: Arc::clone(self),
            arrived: false,
        }
    }

    /// Every ticket is out: the jobs start when all have arrived.
    pub fn open(&self) {
        self.leave();
    }

    fn leave(&self) {
        let mut w = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        *w = w.saturating_sub(1);
        self.cv.notify_all();
    }
}

/// One job's place in a [`StartGroup`]; a job that ends before it arrives
/// (a failed set-up) leaves the group as it drops.
#[derive(Debug)]
pub struct StartTicket {
    group: Arc<StartGroup>,
    arrived: bool,
}

impl StartTicket {
    /// Set up: waits until every job of the group is (or `stop`).
    pub fn arrive(&mut self, stop: &AtomicBool) {
        if std::mem::replace(&mut self.arrived, true) {
            return;
        }
        self.group.leave();
        let mut w = self.group.waiting.lock().unwrap_or_else(|p| p.into_inner());
        while *w > 0 && !stop.load(Ordering::Relaxed) {
            w = self
                .group
                .cv
                .wait_timeout(w, std::time::Duration::from_millis(50))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

impl Drop for StartTicket {
    fn drop(&mut self) {
        if !self.arrived {
            self.group.leave();
        }
    }
}

/// A held job's wait: `us` asleep in short steps, ended early by `stop`;
/// 0: the thread only yields (fio looks again at once).
pub fn pause(us: u64, stop: &dyn Fn() -> bool) {
    if us == 0 {
        std::thread::yield_now();
        return;
    }
    let end = std::time::Instant::now() + std::time::Duration::from_micros(us);
    while !stop() {
        let now = std::time::Instant::now();
        if now >= end {
            return;
        }
        std::thread::sleep((end - now).min(std::time::Duration::from_millis(10)));
    }
}

/// The priority of the next I/O of direction `d` (fio's
/// fio_cmdprio_set_ioprio: a draw of 0 to 99 against the percentage).
pub fn pick_prio(
    p: &IoPrio,
    d: usize,
    len: u64,
    rng: &mut rand_xoshiro::Xoshiro256PlusPlus,
) -> u16 {
    if p.share(d, len) == 0 {
        return p.default_value();
    }
    p.pick(d, len, crate::offsets::uniform_below(rng, 100) as u32)
}

/// Adds an I/O's completion latency to its priority's (fio's clat_prio:
/// the job's own priority first).
pub fn record_prio(prios: &mut Vec<(u16, LatencyRecorder)>, prio: u16, clat_ns: u64) {
    match prios.iter_mut().find(|(p, _)| *p == prio) {
        Some((_, r)) => r.record(clat_ns),
        None => {
            let mut r = LatencyRecorder::precise();
            r.record(clat_ns);
            prios.push((prio, r));
        }
    }
}

/// Adds `from`'s per-priority latencies to `into`'s.
pub fn merge_prios(into: &mut Vec<(u16, LatencyRecorder)>, from: &[(u16, LatencyRecorder)]) {
    for (p, r) in from {
        match into.iter_mut().find(|(q, _)| q == p) {
            Some((_, mine)) => mine.merge(r),
            None => into.push((*p, r.clone())),
        }
    }
}

/// fio's `prios` of direction `d`: the job's priority first, then the
/// others as drawn, each with samples, and only when two or more have them
/// (stat.c, get_nr_prios_with_samples).
pub fn prio_latencies(
    spec: &csdchar_core::result::block::BlockSpec,
    d: usize,
    prios: &[(u16, LatencyRecorder)],
) -> Vec<csdchar_core::share::PrioLatency> {
    let with: Vec<&(u16, LatencyRecorder)> = prios.iter().filter(|(_, r)| r.count() > 0).collect();
    if with.len() < 2 || !spec.share.prio.draws(d) {
        return Vec::new();
    }
    let order = spec.share.prio.order(d);
    let mut ordered = with;
    ordered.sort_by_key(|(p, _)| order.iter().position(|q| q == p).unwrap_or(usize::MAX));
    ordered
        .into_iter()
        .map(|(p, r)| csdchar_core::share::PrioLatency {
            prioclass: (p >> 13) as u8,
            prio: (p & 7) as u8,
            clat: r.summary(&spec.percentiles),
        })
        .collect()
}

/// ioprio_set(2) for the calling thread with the job's priority, when
/// `prio` or `prioclass` is set (fio's thread_main).
pub fn set_thread_prio(p: &IoPrio) -> std::io::Result<()> {
    let Some(value) = p.job() else {
        return Ok(());
    };
    // IOPRIO_WHO_PROCESS with 0: the calling thread.
    // Safety: ioprio_set takes three integers and touches no memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            1 as libc::c_long,
            0 as libc::c_long,
            libc::c_long::from(value),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Where this machine's NUMA nodes are described.
const NODE_DIR: &str = "/sys/devices/system/node";

/// The machine's online nodes (one node 0 where the kernel has no NUMA).
pub fn online_nodes() -> Vec<u32> {
    std::fs::read_to_string(format!("{NODE_DIR}/online"))
        .ok()
        .and_then(|s| csdchar_core::share::NodeSet::parse(&s).ok())
        .map(|n| n.resolve(&[]))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| vec![0])
}

/// Refuses node lists naming nodes this machine lacks, as libnuma does
/// ("node argument N out of range"); Err names the option and the nodes there are.
pub fn check_numa(numa: &Numa) -> Result<(), String> {
    let online = online_nodes();
    let listed = |n: &[u32]| format!("{n:?}").replace(['[', ']', ' '], "");
    let check = |name: &str, nodes: Vec<u32>| match nodes.iter().find(|n| !online.contains(n)) {
        Some(n) => Err(format!(
            "{name}: node {n} does not exist (this machine's nodes: {})",
            listed(&online)
        )),
        None => Ok(()),
    };
    if let Some(c) = &numa.cpu_nodes {
        check("numa_cpu_nodes", c.resolve(&online))?;
    }
    match &numa.mem_policy {
        Some(MemPolicy::Prefer(n)) => check("numa_mem_policy", vec![*n]),
        Some(p) => match p.nodes() {
            Some(n) => check("numa_mem_policy", n.resolve(&online)),
            None => Ok(()),
        },
        None => Ok(()),
    }
}

/// The CPUs of `node` (its `cpulist`).
fn node_cpus(node: u32) -> std::io::Result<Vec<usize>> {
    let text = std::fs::read_to_string(format!("{NODE_DIR}/node{node}/cpulist"))?;
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let bad = || std::io::Error::other(format!("node{node}/cpulist: '{part}'"));
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi): (usize, usize) = (
            lo.parse().map_err(|_| bad())?,
            hi.parse().map_err(|_| bad())?,
        );
        cpus.extend(lo..=hi);
    }
    Ok(cpus)
}

/// Places the calling thread as the job asks: on the CPUs of its nodes
/// (numa_run_on_node_mask), with its memory policy (set_mempolicy(2), as
/// numa_set_membind, numa_set_interleave_mask, numa_set_preferred and
/// numa_set_localalloc; `default` sets nothing, as in fio). Called before the
/// job allocates its buffers.
pub fn place_thread(numa: &Numa) -> std::io::Result<()> {
    let online = online_nodes();
    if let Some(nodes) = &numa.cpu_nodes {
        let mut set = rustix::thread::CpuSet::new();
        for node in nodes.resolve(&online) {
            for cpu in node_cpus(node)? {
                if cpu < rustix::thread::CpuSet::MAX_CPU {
                    set.set(cpu);
                }
            }
        }
        rustix::thread::sched_setaffinity(None, &set)?;
    }
    // Linux's MPOL_* modes (uapi/linux/mempolicy.h).
    let (mode, nodes): (i32, Vec<u32>) = match &numa.mem_policy {
        None | Some(MemPolicy::Default) => return Ok(()),
        Some(MemPolicy::Prefer(n)) => (1, vec![*n]),
        Some(MemPolicy::Bind(n)) => (2, n.resolve(&online)),
        Some(MemPolicy::Interleave(n)) => (3, n.resolve(&online)),
        Some(MemPolicy::Local) => (4, Vec::new()),
    };
    set_mempolicy(mode, &nodes)
}

/// set_mempolicy(2) for the calling thread.
fn set_mempolicy(mode: i32, nodes: &[u32]) -> std::io::Result<()> {
    let mut mask = [0u64; 64];
    for &n in nodes.iter().filter(|n| **n < 64 * 64) {
        mask[n as usize / 64] |= 1 << (n % 64);
    }
    let maxnode = if nodes.is_empty() { 0 } else { 64 * 64 + 1 };
    // Safety: `mask` is a live array of 64 words (4,096 bits) and `maxnode`
    // never exceeds its bits plus the one the kernel's count skips; the call
    // reads the mask and changes only this thread's policy.
    let r = unsafe {
        libc::syscall(
            libc::SYS_set_mempolicy,
            mode as libc::c_long,
            if nodes.is_empty() {
                std::ptr::null()
            } else {
                mask.as_ptr()
            },
            maxnode as libc::c_ulong,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use csdchar_core::share::NodeSet;

    #[test]
    fn a_flow_keeps_its_jobs_in_the_ratio_of_their_weights() {
        let table = FlowTable::default();
        let (a, b) = (
            Flow {
                id: 0,
                weight: 1,
                sleep_us: 0,
            },
            Flow {
                id: 0,
                weight: 8,
                sleep_us: 0,
            },
        );
        table.register(&a, 1);
        table.register(&b, 1);
        let (mut ma, mut mb) = (table.member(&a).unwrap(), table.member(&b).unwrap());
        let (mut na, mut nb) = (0u64, 0u64);
        // Each tries as often as the other; the flow lets through 1:8.
        for _ in 0..9000 {
            na += u64::from(!ma.held());
            nb += u64::from(!mb.held());
        }
        assert!((na as f64 / nb as f64 - 0.125).abs() < 0.01, "{na}:{nb}");
        drop(ma);
        // Alone in the flow now, b is never held.
        assert!((0..100).all(|_| !mb.held()));
    }

    #[test]
    fn nodes_the_machine_lacks_are_refused_and_node_zero_is_taken() {
        let missing = online_nodes().iter().max().unwrap() + 1;
        let numa = Numa {
            cpu_nodes: Some(NodeSet::Nodes(vec![0, missing])),
            mem_policy: None,
        };
        let e = check_numa(&numa).unwrap_err();
        assert!(e.contains(&format!("node {missing} does not exist")), "{e}");
        let bind = Numa {
            cpu_nodes: None,
            mem_policy: Some(MemPolicy::Interleave(NodeSet::Nodes(vec![missing]))),
        };
        assert!(
            check_numa(&bind)
                .unwrap_err()
                .starts_with("numa_mem_policy")
        );
        let ok = Numa {
            cpu_nodes: Some(NodeSet::Nodes(vec![0])),
            mem_policy: Some(MemPolicy::Bind(NodeSet::Nodes(vec![0]))),
        };
        check_numa(&ok).unwrap();
        // The thread lands on node 0's CPUs with memory bound to node 0.
        std::thread::spawn(move || {
            place_thread(&ok).unwrap();
            let set = rustix::thread::sched_getaffinity(None).unwrap();
            for cpu in node_cpus(0).unwrap() {
                assert!(set.is_set(cpu));
            }
            let mut mode: libc::c_int = -1;
            let mut mask = [0u64; 64];
            // Safety: `mode` and `mask` are live and sized as told (4,096
            // bits); flags 0 asks for this thread's policy.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_get_mempolicy,
                    &mut mode as *mut libc::c_int,
                    mask.as_mut_ptr(),
                    64 * 64 as libc::c_ulong,
                    std::ptr::null::<libc::c_void>(),
                    0 as libc::c_ulong,
                )
            };
            assert_eq!(r, 0);
            assert_eq!((mode, mask[0]), (2, 1), "MPOL_BIND to node 0");
        })
        .join()
        .unwrap();
    }
}
