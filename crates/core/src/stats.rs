//! Latency recording: exact min / max / mean / standard deviation plus HDR
//! histogram percentiles with no upper cap short of an hour.
//!
//! fio keeps a log-linear histogram with 0.78 % error and clamps at ~17 s;
//! here the summary histogram has 3 significant digits (0.1 %), interval
//! histograms 2 (1 %), both up to one hour.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Largest latency a histogram resolves (1 h in ns); larger values saturate.
pub const MAX_TRACKED_NS: u64 = 3_600_000_000_000;

/// fio's default percentile list.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// Accumulates latencies in nanoseconds.
#[derive(Clone, Debug)]
pub struct LatencyRecorder {
    hist: Histogram<u64>,
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
    sum_sq: u128,
}

impl LatencyRecorder {
    /// A recorder with 3 significant digits, for run summaries.
    pub fn precise() -> Self {
        Self::with_digits(3)
    }

    /// A recorder with 2 significant digits, small enough to keep per interval.
    pub fn coarse() -> Self {
        Self::with_digits(2)
    }

    fn with_digits(digits: u8) -> Self {
        LatencyRecorder {
            hist: Histogram::new_with_bounds(1, MAX_TRACKED_NS, digits)
                .expect("static histogram bounds are valid"),
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
        }
    }

    /// Records one latency.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns);
        self.count += 1;
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += u128::from(ns);
        self.sum_sq += u128::from(ns) * u128::from(ns);
    }

    /// Adds everything `other` recorded.
    pub fn merge(&mut self, other: &LatencyRecorder) {
        if other.count == 0 {
            return;
        }
        self.hist
            .add(&other.hist)
            .expect("histograms with equal bounds always add");
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }

    /// Forgets everything (keeps the allocation).
    pub fn reset(&mut self) {
        self.hist.reset();
        self.count = 0;
        self.min = u64::MAX;
        self.max = 0;
        self.sum = 0;
        self.sum_sq = 0;
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Exact mean, 0 when empty.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// Exact population standard deviation (fio's), 0 when fewer than 2 values.
    pub fn stddev(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as f64;
        let mean = self.sum as f64 / n;
        let var = (self.sum_sq as f64 / n) - mean * mean;
        var.max(0.0).sqrt()
    }

    /// The value at percentile `p` (0–100): the highest value equivalent, within
    /// the histogram's precision, to the smallest recorded value with at least
    /// p % of values at or below it. 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        self.hist.value_at_quantile(p / 100.0).min(self.max)
    }

    /// The histogram itself (values in ns).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// The histogram in HdrHistogram's V2 compressed encoding, base64 ([`crate::hdr`]).
    pub fn encoded(&self) -> String {
        crate::hdr::encode(&self.hist)
    }

    /// The value at percentile `p` from the histogram alone ([`hist_percentile`]):
    /// what a merge of stored histograms reproduces exactly. Interval figures use it.
    pub fn hist_percentile(&self, p: f64) -> u64 {
        hist_percentile(&self.hist, p)
    }

    /// The summary at the given percentiles, with the histogram itself.
    pub fn summary(&self, percentiles: &[f64]) -> LatencyStats {
        LatencyStats {
            hdr_histogram: Some(self.encoded()),
            count: self.count,
            min_ns: if self.count == 0 { 0 } else { self.min },
            max_ns: self.max,
            mean_ns: self.mean(),
            stddev_ns: self.stddev(),
            percentiles: percentiles
                .iter()
                .map(|&p| Percentile {
                    percentile: p,
                    value_ns: self.percentile(p),
                })
                .collect(),
        }
    }
}

/// The value at percentile `p` (0–100) of `h`: the highest value equivalent,
/// within the histogram's precision, to the smallest recorded value with at
/// least p % of values at or below it. 0 when empty. A function of the
/// histogram only, so figures computed with it from a stored (or merged)
/// histogram are exactly the ones recorded.
pub fn hist_percentile(h: &Histogram<u64>, p: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(p / 100.0)
    }
}

/// Summary of one latency distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencyStats {
    /// Number of values (I/Os or transactions).
    pub count: u64,
    /// Smallest value, ns (exact).
    pub min_ns: u64,
    /// Largest value, ns (exact).
    pub max_ns: u64,
    /// Arithmetic mean, ns (exact).
    pub mean_ns: f64,
    /// Population standard deviation, ns (exact).
    pub stddev_ns: f64,
    /// Percentiles from an HDR histogram with 3 significant digits (0.1 % error).
    pub percentiles: Vec<Percentile>,
    /// The whole distribution, lossless: the HDR histogram the percentiles come from (values in
    /// ns, 3 significant digits, 1 ns to 1 h) in HdrHistogram's standard V2 compressed (deflate)
    /// encoding, base64 — what HdrHistogram's `encodeIntoCompressedByteBuffer` + base64 give
    /// (starts with "HISTF"), so HdrHistogram's tools read it. Results of several hosts merge
    /// exactly by adding these. Absent in results written before csdchar stored histograms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hdr_histogram: Option<String>,
}

impl LatencyStats {
    /// The distribution of all values of `parts` together, as if one recorder
    /// had recorded them all: histograms added, counts added, min/max of the
    /// parts, mean and population standard deviation pooled from the parts',
    /// percentiles (the ones given) recomputed from the summed histogram,
    /// never averaged. Fails when a part has no histogram
    /// (a result written before csdchar stored them) or one does not decode.
    pub fn merged(
        parts: &[&LatencyStats],
        percentiles: &[f64],
    ) -> Result<LatencyStats, MergeError> {
        if let Some(i) = parts.iter().position(|p| p.hdr_histogram.is_none()) {
            return Err(MergeError::NoHistogram(i));
        }
        let hist = crate::hdr::decode_sum(parts.iter().filter_map(|p| p.hdr_histogram.as_deref()))
            .map_err(MergeError::Bad)?;
        let count: u64 = parts.iter().map(|p| p.count).sum();
        let filled: Vec<&&LatencyStats> = parts.iter().filter(|p| p.count > 0).collect();
        let min_ns = filled.iter().map(|p| p.min_ns).min().unwrap_or(0);
        let max_ns = filled.iter().map(|p| p.max_ns).max().unwrap_or(0);
        let (mean_ns, stddev_ns) = if count == 0 {
            (0.0, 0.0)
        } else {
            let n = count as f64;
            let mean = filled
                .iter()
                .map(|p| p.mean_ns * p.count as f64)
                .sum::<f64>()
                / n;
            // E[x²] of each part is stddev² + mean² (population figures).
            let ex2 = filled
                .iter()
                .map(|p| (p.stddev_ns * p.stddev_ns + p.mean_ns * p.mean_ns) * p.count as f64)
                .sum::<f64>()
                / n;
            let sd = if count < 2 {
                0.0
            } else {
                (ex2 - mean * mean).max(0.0).sqrt()
            };
            (mean, sd)
        };
        let at = |p: f64| match &hist {
            Some(h) if count > 0 => h.value_at_quantile(p / 100.0).min(max_ns),
            _ => 0,
        };
        Ok(LatencyStats {
            count,
            min_ns,
            max_ns,
            mean_ns,
            stddev_ns,
            percentiles: percentiles
                .iter()
                .map(|&p| Percentile {
                    percentile: p,
                    value_ns: at(p),
                })
                .collect(),
            hdr_histogram: hist.as_ref().map(crate::hdr::encode),
        })
    }

    /// The value recorded for percentile `p`, if it was requested.
    pub fn at(&self, p: f64) -> Option<u64> {
        self.percentiles
            .iter()
            .find(|x| (x.percentile - p).abs() < 1e-9)
            .map(|x| x.value_ns)
    }
}

/// Why latency summaries could not be merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// Part number .0 has no histogram (written before csdchar stored them).
    #[error("part {0} has no latency histogram")]
    NoHistogram(usize),
    /// A histogram did not decode or add.
    #[error(transparent)]
    Bad(crate::hdr::HdrError),
}

/// One percentile of a latency distribution.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Percentile {
    /// The percentile, 0–100 (e.g. 99.9).
    pub percentile: f64,
    /// Latency at that percentile, ns.
    pub value_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_moments_and_percentiles() {
        let mut r = LatencyRecorder::precise();
        for v in 1..=1000u64 {
            r.record(v * 1000);
        }
        assert_eq!(r.count(), 1000);
        assert!((r.mean() - 500_500.0).abs() < 1e-6);
        // population stddev of 1..=1000 scaled by 1000
        let expect = ((1000.0f64 * 1000.0 - 1.0) / 12.0).sqrt() * 1000.0;
        assert!((r.stddev() - expect).abs() / expect < 1e-9);
        let p50 = r.percentile(50.0) as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.002, "{p50}");
        let p99 = r.percentile(99.0) as f64;
        assert!((p99 - 990_000.0).abs() / 990_000.0 < 0.002, "{p99}");
        assert_eq!(r.percentile(100.0), 1_000_000);
    }

    #[test]
    fn merge_equals_recording_together() {
        let mut a = LatencyRecorder::coarse();
        let mut b = LatencyRecorder::coarse();
        let mut both = LatencyRecorder::coarse();
        for v in [5u64, 17, 1_000, 99_999, 7] {
            a.record(v);
            both.record(v);
        }
        for v in [3u64, 1 << 40, 12] {
            b.record(v);
            both.record(v);
        }
        a.merge(&b);
        assert_eq!(a.summary(&[50.0, 99.0]), both.summary(&[50.0, 99.0]));
        a.reset();
        assert_eq!(a.count(), 0);
        assert_eq!(a.summary(&[99.0]).min_ns, 0);
    }

    #[test]
    fn merged_summaries_equal_the_summary_of_all_values() {
        let ps = [1.0, 50.0, 99.0, 99.99, 100.0];
        let mut a = LatencyRecorder::precise();
        let mut b = LatencyRecorder::precise();
        let mut both = LatencyRecorder::precise();
        for v in [5u64, 17, 1_000, 99_999, 7, 123_456_789] {
            a.record(v);
            both.record(v);
        }
        for v in [3u64, 1 << 40, 12, 1_000] {
            b.record(v);
            both.record(v);
        }
        let empty = LatencyRecorder::precise().summary(&ps);
        let m = LatencyStats::merged(&[&a.summary(&ps), &empty, &b.summary(&ps)], &ps).unwrap();
        let w = both.summary(&ps);
        assert_eq!((m.count, m.min_ns, m.max_ns), (w.count, w.min_ns, w.max_ns));
        assert_eq!(m.percentiles, w.percentiles);
        assert_eq!(m.hdr_histogram, w.hdr_histogram);
        assert!((m.mean_ns - w.mean_ns).abs() <= 1e-9 * w.mean_ns);
        assert!((m.stddev_ns - w.stddev_ns).abs() <= 1e-6 * w.stddev_ns);
        let mut old = a.summary(&ps);
        old.hdr_histogram = None;
        assert_eq!(
            LatencyStats::merged(&[&empty, &old], &ps),
            Err(MergeError::NoHistogram(1))
        );
    }

    #[test]
    fn huge_values_saturate_instead_of_failing() {
        let mut r = LatencyRecorder::coarse();
        r.record(u64::MAX / 2);
        assert_eq!(r.count(), 1);
        assert_eq!(r.max_ns_for_test(), u64::MAX / 2);
    }

    impl LatencyRecorder {
        fn max_ns_for_test(&self) -> u64 {
            self.max
        }
    }
}
