//! fio's steady state (`steadystate=iops|iops_slope|bw|bw_slope:LIMIT[%]`,
//! `ss_dur`, `ss_ramp`; steadystate.c): once a second the job's IOPS and
//! bandwidth are sampled; over the last `ss_dur` seconds the criterion is the
//! largest deviation from the mean (`iops`, `bw`) or the least-squares slope
//! (`*_slope`), as a % of the mean with `%`; below the limit, the job has
//! reached steady state and stops. Sampling starts one interval after
//! `ss_ramp`.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// What steady state is judged on.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SteadyMetric {
    /// I/Os per second.
    #[default]
    Iops,
    /// Bytes per second.
    Bw,
}

/// A job's steady-state rule; `dur_s` 0: none.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SteadySpec {
    /// IOPS or bandwidth.
    pub metric: SteadyMetric,
    /// Judge the slope (true) or the largest deviation from the mean.
    pub slope: bool,
    /// The limit the criterion must stay below.
    pub limit: f64,
    /// Whether the limit is a % of the mean.
    pub pct: bool,
    /// Seconds of samples judged (fio's `ss_dur`); 0: no steady state.
    pub dur_s: u64,
    /// Time before sampling starts, ms (fio's `ss_ramp`).
    pub ramp_ms: u64,
}

impl SteadySpec {
    /// Whether no steady state is asked for.
    pub fn is_none(&self) -> bool {
        self.dur_s == 0
    }

    /// Parses fio's `steadystate` value (`iops_slope:0.1%`, `bw:2000000`);
    /// the window and ramp stay as they are.
    pub fn parse_rule(&mut self, text: &str) -> Result<(), String> {
        let (kind, limit) = text
            .split_once(':')
            .ok_or_else(|| format!("'{text}': KIND:LIMIT[%] (iops, iops_slope, bw, bw_slope)"))?;
        (self.metric, self.slope) = match kind {
            "iops" => (SteadyMetric::Iops, false),
            "iops_slope" => (SteadyMetric::Iops, true),
            "bw" => (SteadyMetric::Bw, false),
            "bw_slope" => (SteadyMetric::Bw, true),
            other => {
                return Err(format!(
                    "'{other}' is not a steady-state kind (iops, iops_slope, bw, bw_slope)"
                ));
            }
        };
        let (num, pct) = match limit.strip_suffix('%') {
            Some(n) => (n, true),
            None => (limit, false),
        };
        self.limit = num
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| format!("'{limit}' is not a limit"))?;
        self.pct = pct;
        Ok(())
    }

    /// fio's name of the rule (`iops_slope:0.100000%`).
    pub fn name(&self) -> String {
        format!(
            "{}{}:{:.6}{}",
            match self.metric {
                SteadyMetric::Iops => "iops",
                SteadyMetric::Bw => "bw",
            },
            if self.slope { "_slope" } else { "" },
            self.limit,
            if self.pct { "%" } else { "" }
        )
    }
}

/// The steady-state outcome of a run, fio's `steadystate` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SteadyStateReport {
    /// The rule, as fio names it (`iops_slope:0.100000%`).
    pub ss: String,
    /// Seconds judged.
    pub duration_s: u64,
    /// Whether steady state was reached (the run then stopped).
    pub attained: bool,
    /// The last criterion computed (a % of the mean when the rule is).
    pub criterion: f64,
    /// Largest deviation from the mean of the last window (deviation rules).
    pub max_deviation: f64,
    /// Least-squares slope of the last window, per second (slope rules).
    pub slope: f64,
    /// Mean bandwidth of the window, bytes per second.
    pub bw_mean: u64,
    /// Mean IOPS of the window.
    pub iops_mean: u64,
    /// The window's bandwidth samples, bytes per second, oldest first.
    pub bw: Vec<u64>,
    /// The window's IOPS samples, oldest first.
    pub iops: Vec<u64>,
}

/// The running judgement.
#[derive(Debug, Clone)]
pub struct SteadyCheck {
    spec: SteadySpec,
    window: usize,
    iops: VecDeque<u64>,
    bw: VecDeque<u64>,
    attained: bool,
    criterion: f64,
    deviation: f64,
    slope: f64,
}

impl SteadyCheck {
    /// None without a rule; `interval_ms` is the sampling interval.
    pub fn new(spec: &SteadySpec, interval_ms: u64) -> Option<SteadyCheck> {
        (!spec.is_none()).then(|| SteadyCheck {
            spec: spec.clone(),
            window: ((spec.dur_s * 1000) / interval_ms.max(1)).max(2) as usize,
            iops: VecDeque::new(),
            bw: VecDeque::new(),
            attained: false,
            criterion: 0.0,
            deviation: 0.0,
            slope: 0.0,
        })
    }

    /// Whether a sample ending at `t_ms` counts (one interval after ss_ramp).
    pub fn counts(&self, t_ms: u64, interval_ms: u64) -> bool {
        self.spec.ramp_ms == 0 || t_ms >= self.spec.ramp_ms + interval_ms
    }

    /// Adds one interval's IOPS and bytes per second; true once steady.
    pub fn add(&mut self, iops: u64, bw: u64) -> bool {
        if self.attained {
            return true;
        }
        self.iops.push_back(iops);
        self.bw.push_back(bw);
        if self.iops.len() > self.window {
            self.iops.pop_front();
            self.bw.pop_front();
        }
        if self.iops.len() < self.window {
            return false;
        }
        let y: Vec<f64> = match self.spec.metric {
            SteadyMetric::Iops => self.iops.iter().map(|&v| v as f64).collect(),
            SteadyMetric::Bw => self.bw.iter().map(|&v| v as f64).collect(),
        };
        let n = y.len() as f64;
        let mean = y.iter().sum::<f64>() / n;
        if self.spec.slope {
            // steadystate.c: (Σxy − Σx·Σy/n) / (Σx² − (Σx)²/n), x = 0..n−1.
            let sum_x: f64 = (0..y.len()).map(|i| i as f64).sum();
            let sum_x2: f64 = (0..y.len()).map(|i| (i * i) as f64).sum();
            let sum_xy: f64 = y.iter().enumerate().map(|(i, v)| i as f64 * v).sum();
            let sum_y = mean * n;
            self.slope = (sum_xy - sum_x * sum_y / n) / (sum_x2 - sum_x * sum_x / n);
            self.criterion = if self.spec.pct {
                100.0 * self.slope / mean
            } else {
                self.slope
            };
        } else {
            self.deviation = y.iter().map(|v| (v - mean).abs()).fold(0.0, f64::max);
            self.criterion = if self.spec.pct {
                100.0 * self.deviation / mean
            } else {
                self.deviation
            };
        }
        self.attained = self.criterion.abs() < self.spec.limit;
        self.attained
    }

    /// fio's `steadystate` figures.
    pub fn report(&self) -> SteadyStateReport {
        let mean = |v: &VecDeque<u64>| {
            if v.is_empty() {
                0
            } else {
                v.iter().sum::<u64>() / v.len() as u64
            }
        };
        SteadyStateReport {
            ss: self.spec.name(),
            duration_s: self.spec.dur_s,
            attained: self.attained,
            criterion: self.criterion,
            max_deviation: self.deviation,
            slope: self.slope,
            bw_mean: mean(&self.bw),
            iops_mean: mean(&self.iops),
            bw: self.bw.iter().copied().collect(),
            iops: self.iops.iter().copied().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(rule: &str, dur_s: u64) -> SteadySpec {
        let mut s = SteadySpec {
            dur_s,
            ..SteadySpec::default()
        };
        s.parse_rule(rule).unwrap();
        s
    }

    #[test]
    fn a_settling_series_becomes_steady_where_fio_says() {
        // IOPS falling towards 10,000 as a drive fills: 20000, 15000, 12500, …
        let series: Vec<u64> = (0..40).map(|i| 10_000 + (10_000 >> i.min(40))).collect();
        let mut c = SteadyCheck::new(&spec("iops:1%", 5), 1000).unwrap();
        let at = series.iter().position(|&v| c.add(v, v * 4096)).unwrap();
        // Window 5: steady once the window's largest deviation is below 1 %
        // of its mean: 10000 + 10000/2^k, k = at-4..=at, spread < 1 %.
        assert_eq!(at, 10);
        let r = c.report();
        assert!(r.attained && r.criterion < 1.0 && r.iops.len() == 5);
        assert_eq!(r.ss, "iops:1.000000%");
        // The slope rule on a straight ramp: slope 100/s, 10 % of a mean of 1000 → not below 5 %.
        let mut c = SteadyCheck::new(&spec("iops_slope:5%", 5), 1000).unwrap();
        for v in [800u64, 900, 1000, 1100, 1200] {
            assert!(!c.add(v, 0));
        }
        let r = c.report();
        assert!((r.slope - 100.0).abs() < 1e-9 && (r.criterion - 10.0).abs() < 1e-9);
        // A flat series is steady on every rule.
        let mut c = SteadyCheck::new(&spec("bw_slope:100", 3), 1000).unwrap();
        assert!(!c.add(5, 1000) && !c.add(5, 1000) && c.add(5, 1000));
    }

    #[test]
    fn rules_parse_as_fio_s() {
        let s = spec("bw:2000000", 30);
        assert_eq!(
            (s.metric, s.slope, s.pct, s.limit),
            (SteadyMetric::Bw, false, false, 2e6)
        );
        let mut s = SteadySpec::default();
        assert!(s.parse_rule("lat:5%").is_err());
        assert!(s.parse_rule("iops").is_err());
        assert!(s.parse_rule("iops:x%").is_err());
    }
}
