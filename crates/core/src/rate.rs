//! fio's rate options (`rate`, `rate_iops`, `rate_min`, `rate_iops_min`,
//! `rate_process`, `rate_cycle`) and its pacing, without a clock: the job
//! loop asks [`Pacer::due_ns`] when the next I/O of a direction may start and
//! tells it what was issued; [`MinRateCheck`] says when a job fell below its
//! minimum.
//!
//! As in fio (backend.c `usec_for_io`, init.c `__setup_rate`): a rate is per
//! job and direction; `rate_iops` is `rate` of `iops × bs`; with the linear
//! process the next I/O is due when the bytes issued so far would have taken
//! their time at the rate, from the job's start; with `poisson` the gaps are
//! exponential with the rate's mean. The minimum is checked once per
//! `rate_cycle` after a 2 s settling period (backend.c `__check_min_rate`).

use serde::{Deserialize, Serialize};

use crate::distribution::Taus88;

/// How I/Os are spaced under a rate.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RateProcess {
    /// Evenly: each I/O when the bytes before it are due (fio's default).
    #[default]
    Linear,
    /// Exponential gaps with the rate's mean (a Poisson arrival process).
    Poisson,
}

/// A job's rate limits, per direction [read, write, trim] (0: none).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RateLimit {
    /// Bytes per second (fio's `rate`).
    pub bytes_per_s: [u64; 3],
    /// I/Os per second (fio's `rate_iops`), used where `bytes_per_s` is 0.
    pub iops: [u64; 3],
    /// Least bytes per second over each cycle, else the job fails (fio's `rate_min`).
    pub min_bytes_per_s: [u64; 3],
    /// Least I/Os per second over each cycle (fio's `rate_iops_min`), where `min_bytes_per_s` is 0.
    pub min_iops: [u64; 3],
    /// How I/Os are spaced.
    pub process: RateProcess,
    /// Window of the minimum-rate check, ms (fio's `rate_cycle`, 1000).
    pub cycle_ms: u64,
}

impl RateLimit {
    /// Whether nothing is limited or checked.
    pub fn is_none(&self) -> bool {
        self.bytes_per_s == [0; 3]
            && self.iops == [0; 3]
            && self.min_bytes_per_s == [0; 3]
            && self.min_iops == [0; 3]
    }

    /// Bytes per second of direction `d` for blocks of `bs` (0: unlimited).
    pub fn bps(&self, d: usize, bs: u64) -> u64 {
        if self.bytes_per_s[d] > 0 {
            self.bytes_per_s[d]
        } else {
            self.iops[d].saturating_mul(bs)
        }
    }
}

/// When each direction's next I/O may start.
#[derive(Debug, Clone)]
pub struct Pacer {
    bps: [u64; 3],
    bs: [u64; 3],
    process: RateProcess,
    issued_bytes: [u64; 3],
    /// Poisson: the running due time of each direction, ns.
    next_ns: [u64; 3],
    rng: Taus88,
}

impl Pacer {
    /// A pacer for blocks of `bs` per direction (fio's `min_bs`, which
    /// `rate_iops` is counted in); None when no direction is limited.
    pub fn new(rate: &RateLimit, bs: [u64; 3], seed: u32) -> Option<Pacer> {
        let bps = [0, 1, 2].map(|d| rate.bps(d, bs[d]));
        (bps != [0; 3]).then(|| Pacer {
            bps,
            bs: bs.map(|b| b.max(1)),
            process: rate.process,
            issued_bytes: [0; 3],
            next_ns: [0; 3],
            rng: Taus88::new(seed),
        })
    }

    /// When direction `d`'s next I/O is due, ns from the job's start (0: now).
    #[inline]
    pub fn due_ns(&self, d: usize) -> u64 {
        let bps = self.bps[d];
        if bps == 0 {
            return 0;
        }
        match self.process {
            RateProcess::Poisson => self.next_ns[d],
            RateProcess::Linear => {
                let bytes = u128::from(self.issued_bytes[d]);
                (bytes * 1_000_000_000 / u128::from(bps)) as u64
            }
        }
    }

    /// Records an I/O of `bytes` issued in direction `d`.
    #[inline]
    pub fn issued(&mut self, d: usize, bytes: u64) {
        self.issued_bytes[d] += bytes;
        if self.process == RateProcess::Poisson && self.bps[d] > 0 {
            // fio: (1e6 / iops) µs × −ln(U), U in (0, 1].
            let iops = (self.bps[d] / self.bs[d]).max(1);
            let u = (f64::from(self.rng.next_u32()) + 1.0) / 4_294_967_296.0;
            let gap_us = (1_000_000 / iops) as f64 * -u.ln();
            self.next_ns[d] += (gap_us as u64) * 1000;
        }
    }
}

/// fio's minimum-rate check.
#[derive(Debug, Clone)]
pub struct MinRateCheck {
    min_bytes: [u64; 3],
    min_iops: [u64; 3],
    cycle_ns: u64,
    last: [Option<(u64, u64, u64)>; 3],
}

/// The settling period before the minimum is checked (fio: 2 s).
const SETTLE_NS: u64 = 2_000_000_000;

impl MinRateCheck {
    /// None when no minimum is set.
    pub fn new(rate: &RateLimit) -> Option<MinRateCheck> {
        (rate.min_bytes_per_s != [0; 3] || rate.min_iops != [0; 3]).then(|| MinRateCheck {
            min_bytes: rate.min_bytes_per_s,
            min_iops: rate.min_iops,
            cycle_ns: rate.cycle_ms.max(1) * 1_000_000,
            last: [None; 3],
        })
    }

    /// At `now_ns` from the job's start, with `done[d] = (ios, bytes)`
    /// completed so far: the failure message when a direction fell below its
    /// minimum over the last cycle.
    pub fn check(&mut self, now_ns: u64, done: [(u64, u64); 3]) -> Option<String> {
        if now_ns < SETTLE_NS {
            return None;
        }
        for (d, &(ios, bytes)) in done.iter().enumerate() {
            if (self.min_bytes[d] == 0 && self.min_iops[d] == 0) || bytes == 0 {
                continue;
            }
            if let Some((t, i0, b0)) = self.last[d] {
                let spent_ms = (now_ns - t) / 1_000_000;
                if spent_ms * 1_000_000 < self.cycle_ns || spent_ms == 0 {
                    continue;
                }
                if self.min_bytes[d] > 0 {
                    let got = (bytes - b0) * 1000 / spent_ms;
                    if got < self.min_bytes[d] {
                        return Some(format!(
                            "rate_min={}B/s not met, got {got}B/s",
                            self.min_bytes[d]
                        ));
                    }
                } else {
                    let got = (ios - i0) * 1000 / spent_ms;
                    if got < self.min_iops[d] {
                        return Some(format!(
                            "rate_iops_min={} not met, got {got} IOPS",
                            self.min_iops[d]
                        ));
                    }
                }
            }
            self.last[d] = Some((now_ns, ios, bytes));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(iops: u64, process: RateProcess) -> RateLimit {
        RateLimit {
            iops: [iops, 0, 0],
            process,
            cycle_ms: 1000,
            ..RateLimit::default()
        }
    }

    #[test]
    fn linear_spaces_ios_evenly() {
        let mut p = Pacer::new(&limit(5000, RateProcess::Linear), [4096; 3], 1).unwrap();
        assert_eq!(p.due_ns(0), 0);
        for _ in 0..5000 {
            p.issued(0, 4096);
        }
        assert_eq!(p.due_ns(0), 1_000_000_000);
        assert_eq!(p.due_ns(1), 0, "writes are not limited");
        assert!(Pacer::new(&RateLimit::default(), [4096; 3], 1).is_none());
    }

    #[test]
    fn poisson_gaps_average_the_rate() {
        let mut p = Pacer::new(&limit(1000, RateProcess::Poisson), [4096; 3], 7).unwrap();
        for _ in 0..100_000 {
            p.issued(0, 4096);
        }
        // 100,000 I/Os at 1000/s: 100 s, within 1%.
        let s = p.due_ns(0) as f64 / 1e9;
        assert!((s / 100.0 - 1.0).abs() < 0.01, "{s}");
    }

    #[test]
    fn minimum_is_checked_per_cycle_after_settling() {
        let mut r = limit(0, RateProcess::Linear);
        r.min_iops = [100, 0, 0];
        let mut c = MinRateCheck::new(&r).unwrap();
        assert_eq!(
            c.check(1_000_000_000, [(50, 4096 * 50), (0, 0), (0, 0)]),
            None
        );
        assert_eq!(
            c.check(2_000_000_000, [(200, 200 * 4096), (0, 0), (0, 0)]),
            None
        );
        // 150 I/Os in the next second: fine; then 20: too few.
        assert_eq!(
            c.check(3_000_000_000, [(350, 350 * 4096), (0, 0), (0, 0)]),
            None
        );
        let m = c
            .check(4_000_000_000, [(370, 370 * 4096), (0, 0), (0, 0)])
            .unwrap();
        assert_eq!(m, "rate_iops_min=100 not met, got 20 IOPS");
    }
}
