//! How a job's I/Os are generated and paced beyond its rate: fio's
//! `blockalign` (where random I/Os may start), `io_submit_mode` (whether rated
//! submissions wait for completions) and `random_generator` (independent
//! draws, or every block once per pass). No clock, no random source.

use serde::{Deserialize, Serialize};

/// fio's `random_generator`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RandomGenerator {
    /// Each random block drawn independently and uniformly (fio's
    /// `tausworthe` and `tausworthe64` with `norandommap`; csdchar's own
    /// generator is xoshiro256++).
    #[default]
    Uniform,
    /// Every block of the region exactly once per pass, in a pseudo-random
    /// order (fio's `lfsr`); a pass ends the job unless it is time_based,
    /// which starts the same order again.
    Lfsr,
}

/// A job's pacing options; the default is fio's.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Pacing {
    /// fio's `blockalign` per direction [read, write, trim], bytes: random
    /// offsets are multiples of it; 0: the direction's smallest block size
    /// (fio's default). Sequential I/O ignores it, as fio does.
    #[serde(default, skip_serializing_if = "is_zero3")]
    pub blockalign: [u64; 3],
    /// fio's `io_submit_mode=offload`: a rated job issues each I/O when it is
    /// due whatever is in flight; false (`inline`): ahead of the rate, the job
    /// first waits for everything in flight, then sleeps.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub offload: bool,
    /// How random blocks are chosen (fio's `random_generator`).
    #[serde(default, skip_serializing_if = "RandomGenerator::is_uniform")]
    pub generator: RandomGenerator,
    /// fio's `latency_target` profile: the depth searched for; absent: the job's iodepth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyTarget>,
}

/// fio's latency profile (`latency_target`, `latency_window`,
/// `latency_percentile`, `latency_run`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencyTarget {
    /// Latency (submission to completion) an I/O must stay under, ns.
    pub target_ns: u64,
    /// Window a depth is judged over, µs (0: after every completion).
    pub window_us: u64,
    /// Percent of a window's I/Os that must stay under the target.
    pub percentile: f64,
    /// Keep adjusting the depth for the whole run (`latency_run`); false:
    /// once the search settles, one more window at that depth, then the job
    /// ends, its statistics those of that last window (fio's default).
    pub run: bool,
}

/// What the engine does after [`DepthSearch`] looked at a completion or a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepthStep {
    /// Go on at [`DepthSearch::depth`].
    Keep,
    /// The depth went down: let everything in flight complete first.
    Quiesce,
    /// The search settled: let everything in flight complete, clear the
    /// statistics and run one more window (fio's reset_all_stats).
    FinalWindow,
    /// The final window is done: the job ends.
    Done,
    /// An I/O over the target at depth 1 with a 100% percentile: fio fails
    /// the job ("max latency exceeded").
    Fatal,
}

/// fio's queue-depth search for a latency target (io_u.c `lat_target_*`),
/// without a clock: the caller gives times (ns) and its count of completed I/Os.
#[derive(Debug, Clone)]
pub struct DepthSearch {
    t: LatencyTarget,
    iodepth: u32,
    qd: u32,
    low: u32,
    high: u32,
    stable: u32,
    final_window: bool,
    failed: u64,
    cycle_ios: u64,
    cycle_start_ns: u64,
}

impl DepthSearch {
    /// The search for a job of `iodepth` starting at `now_ns`: depth 1 first.
    pub fn new(t: &LatencyTarget, iodepth: u32, now_ns: u64) -> Self {
        DepthSearch {
            t: t.clone(),
            iodepth: iodepth.max(1),
            qd: 1,
            low: 1,
            high: iodepth.max(1),
            stable: 0,
            final_window: false,
            failed: 0,
            cycle_ios: 0,
            cycle_start_ns: now_ns,
        }
    }

    /// I/Os the job may have in flight now (fio's `latency_qd`).
    pub fn depth(&self) -> u32 {
        self.qd
    }

    fn new_cycle(&mut self, now_ns: u64, ios: u64) {
        self.cycle_start_ns = now_ns;
        self.cycle_ios = ios;
        self.failed = 0;
    }

    /// fio's `__lat_target_failed`: halve towards the last good depth.
    fn ramp_down(&mut self, now_ns: u64, ios: u64) -> DepthStep {
        if self.qd == 1 {
            return DepthStep::Fatal;
        }
        self.high = self.qd;
        if self.qd == self.low {
            self.low -= 1;
        }
        self.qd = (self.qd + self.low) / 2;
        self.stable = 0;
        self.new_cycle(now_ns, ios);
        DepthStep::Quiesce
    }

    /// One completion of latency `lat_ns`; `ios` completions so far.
    pub fn completed(&mut self, lat_ns: u64, now_ns: u64, ios: u64) -> DepthStep {
        if lat_ns <= self.t.target_ns {
            return DepthStep::Keep;
        }
        if self.t.percentile >= 100.0 {
            return self.ramp_down(now_ns, ios);
        }
        self.failed += 1;
        DepthStep::Keep
    }

    /// fio's `lat_target_check`: once a window has passed, judge it.
    pub fn check(&mut self, now_ns: u64, ios: u64) -> DepthStep {
        if now_ns.saturating_sub(self.cycle_start_ns) < self.t.window_us * 1000 {
            return DepthStep::Keep;
        }
        let n = ios - self.cycle_ios;
        // fio divides 0 by 0 here: a window without I/O fails.
        let ok = n > 0 && (n - self.failed) as f64 / n as f64 * 100.0 >= self.t.percentile;
        if !ok {
            // At depth 1 fio only fails on a completion, not on a window.
            return match self.ramp_down(now_ns, ios) {
                DepthStep::Fatal => DepthStep::Keep,
                s => s,
            };
        }
        // fio's lat_target_success.
        let qd = self.qd;
        self.low = self.qd;
        if self.qd + 1 == self.high {
            self.stable += 1;
            if self.stable >= 3 {
                self.high += 1;
                self.stable = 0;
            }
        }
        self.qd = if self.high != self.iodepth {
            (self.qd + self.high) / 2
        } else {
            self.qd * 2
        }
        .min(self.iodepth);
        let step = match (!self.t.run && self.qd == qd, self.final_window) {
            (true, true) => DepthStep::Done,
            (true, false) => {
                self.final_window = true;
                DepthStep::FinalWindow
            }
            _ => DepthStep::Keep,
        };
        self.new_cycle(now_ns, ios);
        step
    }
}

fn is_zero3(a: &[u64; 3]) -> bool {
    *a == [0; 3]
}

impl RandomGenerator {
    /// Whether it is the default (independent uniform draws).
    pub fn is_uniform(&self) -> bool {
        *self == RandomGenerator::Uniform
    }
}

impl Pacing {
    /// Whether every option is fio's default.
    pub fn is_none(&self) -> bool {
        *self == Pacing::default()
    }

    /// The unit random offsets of direction `d` are counted in: `blockalign`,
    /// or `unit` (the direction's smallest block size) without it.
    pub fn align(&self, d: usize, unit: u64) -> u64 {
        match self.blockalign[d] {
            0 => unit,
            a => a,
        }
    }

    /// Random starting blocks (of [`Pacing::align`] bytes) of direction `d`
    /// in a region of `size` bytes whose smallest I/O is `unit` bytes: fio's
    /// `last_block` (an I/O of the smallest size ends inside the region).
    pub fn random_blocks(&self, d: usize, unit: u64, size: u64) -> u64 {
        let align = self.align(d, unit).max(1);
        size.saturating_sub(unit.saturating_sub(align)) / align
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device whose latency is `per_qd` per I/O in flight, searched with
    /// one window per step: the depth settles where the latency meets the
    /// target, then one final window and the end.
    fn settle(per_qd_us: u64, target_us: u64, iodepth: u32) -> (u32, Vec<DepthStep>) {
        let t = LatencyTarget {
            target_ns: target_us * 1000,
            window_us: 1000,
            percentile: 99.0,
            run: false,
        };
        let mut s = DepthSearch::new(&t, iodepth, 0);
        let (mut now, mut ios, mut steps) = (0u64, 0u64, Vec::new());
        for _ in 0..200 {
            for _ in 0..100 {
                ios += 1;
                let lat = u64::from(s.depth()) * per_qd_us * 1000;
                assert_eq!(s.completed(lat, now, ios), DepthStep::Keep);
            }
            now += 1_000_000;
            let step = s.check(now, ios);
            if step != DepthStep::Keep {
                steps.push(step);
            }
            if step == DepthStep::Done {
                break;
            }
        }
        (s.depth(), steps)
    }

    #[test]
    fn the_depth_search_settles_where_fio_s_does() {
        // 100 µs per I/O in flight, 1 ms target: depth 10 is the most that fits.
        let (qd, steps) = settle(100, 1000, 128);
        assert_eq!(qd, 10);
        assert_eq!(steps.last(), Some(&DepthStep::Done));
        assert!(steps.contains(&DepthStep::FinalWindow));
        assert!(
            steps.contains(&DepthStep::Quiesce),
            "it went past and came back"
        );
        // Everything fits: the job's iodepth.
        assert_eq!(settle(1, 1000, 16).0, 16);
    }

    #[test]
    fn a_slow_io_at_depth_one_fails_only_with_a_100_percentile() {
        let mut t = LatencyTarget {
            target_ns: 1000,
            window_us: 1000,
            percentile: 100.0,
            run: false,
        };
        let mut s = DepthSearch::new(&t, 8, 0);
        assert_eq!(s.completed(2000, 1, 1), DepthStep::Fatal);
        t.percentile = 99.9;
        let mut s = DepthSearch::new(&t, 8, 0);
        assert_eq!(s.completed(2000, 1, 1), DepthStep::Keep);
        // Its window fails; at depth 1 that is no error.
        assert_eq!(s.check(2_000_000, 1), DepthStep::Keep);
        assert_eq!(s.depth(), 1);
    }

    #[test]
    fn blockalign_counts_fio_last_block() {
        let p = Pacing {
            blockalign: [4096, 4096, 0],
            ..Pacing::default()
        };
        // Smaller I/Os than the alignment: every aligned start fits.
        assert_eq!(p.random_blocks(0, 512, 1 << 20), 256);
        // Larger I/Os: the last start leaves room for the smallest one.
        assert_eq!(
            p.random_blocks(1, 16384, 1 << 20),
            (1_048_576 - 12288) / 4096
        );
        // No blockalign: the direction's own unit.
        assert_eq!(p.align(2, 8192), 8192);
        assert_eq!(p.random_blocks(2, 8192, 1 << 20), 128);
    }
}
