//! fio's completion-latency histogram log (`write_hist_log`, `log_hist_msec`,
//! `log_hist_coarseness`) in fio's format, built in memory; the caller
//! writes it.
//!
//! - Buckets: fio's `io_u_plat` layout (stat.h): 29 groups of 64 buckets,
//!   1,856 in all; values below 128 ns have a bucket each, above that a
//!   bucket spans 1/64 of its power of two ([`plat_val_to_idx`]).
//! - File: `PREFIX_clat_hist.N.log`, N being fio's job number.
//! - Lines (stat.c `add_clat_sample`, iolog.c `flush_hist_samples`): per
//!   direction, when a completion comes `log_hist_msec` or more after the
//!   direction's window start (its first completion), a line
//!   `msec, ddir, bs, c0, c1, …`: the clat counts of the window (the
//!   cumulative histogram minus the one of the previous line), that I/O
//!   included; bs is that I/O's. The next window starts `log_hist_msec` after
//!   the previous start, so windows do not drift. Completions after the
//!   last line are not written (fio drops them too).
//! - Coarseness `c` (0 to 6) sums each run of `2^c` buckets: 1,856 / 2^c
//!   columns.

/// Bits of a bucket's index within its group (fio's `FIO_IO_U_PLAT_BITS`).
pub const PLAT_BITS: u32 = 6;
/// Buckets per group (`FIO_IO_U_PLAT_VAL`).
pub const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Groups (`FIO_IO_U_PLAT_GROUP_NR`).
pub const PLAT_GROUP_NR: u64 = 29;
/// Buckets (`FIO_IO_U_PLAT_NR`).
pub const PLAT_NR: u64 = PLAT_GROUP_NR * PLAT_VAL;
/// Largest `log_hist_coarseness` fio takes.
pub const MAX_COARSENESS: u8 = 6;

/// fio's `plat_val_to_idx`: the bucket of `val` ns.
pub fn plat_val_to_idx(val: u64) -> u64 {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= PLAT_BITS {
        return val;
    }
    let error_bits = msb - PLAT_BITS;
    let base = u64::from(error_bits + 1) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (val >> error_bits);
    (base + offset).min(PLAT_NR - 1)
}

/// fio's `plat_idx_to_val`: the bucket's midpoint.
pub fn plat_idx_to_val(idx: u64) -> u64 {
    if idx < (PLAT_VAL << 1) {
        return idx;
    }
    let error_bits = (idx >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + u64::from(PLAT_BITS));
    let k = idx % PLAT_VAL;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// One direction's histograms.
#[derive(Debug, Clone)]
struct Direction {
    /// Counts since the start, per bucket (empty until the first I/O).
    total: Vec<u64>,
    /// `total` at the previous line.
    at_last_line: Vec<u64>,
    /// Start of the current window, ms (fio's `hist_last`; 0: not set).
    window_start: u64,
}

/// One job's histogram log as it is recorded.
#[derive(Debug, Clone)]
pub struct HistRecorder {
    msec: u64,
    stride: usize,
    dirs: [Direction; 3],
    text: String,
}

impl HistRecorder {
    /// A recorder writing a line per `msec` ms with `coarseness` (clamped to
    /// fio's 0 to 6). `msec` 0 writes no line (fio's log is then empty).
    pub fn new(msec: u64, coarseness: u8) -> HistRecorder {
        let empty = Direction {
            total: Vec::new(),
            at_last_line: Vec::new(),
            window_start: 0,
        };
        HistRecorder {
            msec,
            stride: 1 << coarseness.min(MAX_COARSENESS),
            dirs: [empty.clone(), empty.clone(), empty],
            text: String::new(),
        }
    }

    /// Records one completion of `clat_ns` at `t_ms` of the measured period.
    pub fn record(&mut self, t_ms: u64, dir: usize, bs: u64, clat_ns: u64) {
        if self.msec == 0 {
            return;
        }
        let d = &mut self.dirs[dir.min(2)];
        if d.total.is_empty() {
            d.total = vec![0; PLAT_NR as usize];
            d.at_last_line = vec![0; PLAT_NR as usize];
        }
        d.total[plat_val_to_idx(clat_ns) as usize] += 1;
        if d.window_start == 0 {
            d.window_start = t_ms;
        }
        let this_window = t_ms.saturating_sub(d.window_start);
        if this_window < self.msec {
            return;
        }
        use std::fmt::Write;
        let out = &mut self.text;
        let _ = write!(out, "{t_ms}, {}, {bs}", dir.min(2));
        for (now, before) in d
            .total
            .chunks(self.stride)
            .zip(d.at_last_line.chunks(self.stride))
        {
            let n: u64 = now.iter().zip(before).map(|(a, b)| a - b).sum();
            let _ = write!(out, ", {n}");
        }
        out.push('\n');
        d.at_last_line.copy_from_slice(&d.total);
        d.window_start = t_ms - (this_window - self.msec);
    }

    /// The log's text.
    pub fn finish(self) -> String {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_fio_s() {
        for v in 0..128 {
            assert_eq!(plat_val_to_idx(v), v);
            assert_eq!(plat_idx_to_val(plat_val_to_idx(v)), v);
        }
        assert_eq!(plat_val_to_idx(128), 128);
        assert_eq!(plat_idx_to_val(128), 129, "midpoint of [128, 130)");
        // 1 ms: msb 19, 13 error bits, group 14.
        assert_eq!(plat_val_to_idx(1_000_000), 14 * 64 + (1_000_000 >> 13) % 64);
        // fio clamps at its last bucket (about 17 s).
        assert_eq!(plat_val_to_idx(1 << 40), PLAT_NR - 1);
        assert_eq!(plat_val_to_idx(u64::MAX), PLAT_NR - 1);
        for v in [200u64, 5_000, 123_456, 9_999_999, 10_000_000_000] {
            let mid = plat_idx_to_val(plat_val_to_idx(v));
            assert!(
                v.abs_diff(mid) as f64 <= v as f64 / 128.0 + 1.0,
                "{v} {mid}"
            );
        }
    }

    fn columns(line: &str) -> Vec<u64> {
        line.split(", ").map(|c| c.parse().unwrap()).collect()
    }

    #[test]
    fn lines_are_window_differences_and_do_not_drift() {
        let mut r = HistRecorder::new(100, 0);
        // First I/O at 5 ms opens the window; 100 ms later a line.
        r.record(5, 1, 4096, 50);
        r.record(60, 1, 4096, 50);
        r.record(107, 1, 8192, 1_000_000);
        // Next window starts at 105, not 107: a line at 205.
        r.record(204, 1, 4096, 70);
        r.record(205, 1, 4096, 70);
        // Reads keep their own window.
        r.record(206, 0, 4096, 3);
        r.record(250, 1, 4096, 70);
        let text = r.finish();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let a = columns(lines[0]);
        assert_eq!(a.len(), 3 + PLAT_NR as usize);
        assert_eq!(&a[..3], &[107, 1, 8192]);
        assert_eq!(a[3 + 50], 2);
        assert_eq!(a[3 + plat_val_to_idx(1_000_000) as usize], 1);
        assert_eq!(a[3..].iter().sum::<u64>(), 3);
        let b = columns(lines[1]);
        assert_eq!(&b[..3], &[205, 1, 4096]);
        assert_eq!(b[3 + 70], 2, "only this window's I/Os");
        assert_eq!(b[3..].iter().sum::<u64>(), 2);
    }

    #[test]
    fn coarseness_sums_runs_of_buckets() {
        for c in 0..=MAX_COARSENESS {
            let mut r = HistRecorder::new(10, c);
            r.record(1, 0, 4096, 5);
            r.record(1, 0, 4096, 1_000_000);
            r.record(11, 0, 4096, 6);
            let text = r.finish();
            let cols = columns(text.lines().next().unwrap());
            assert_eq!(cols.len() - 3, (PLAT_NR >> c) as usize, "coarseness {c}");
            assert_eq!(cols[3..].iter().sum::<u64>(), 3);
            assert_eq!(cols[3 + (5 >> c)], if (5 >> c) == (6 >> c) { 2 } else { 1 });
            let big = plat_val_to_idx(1_000_000) as usize >> c;
            assert_eq!(cols[3 + big], 1);
        }
        assert_eq!(HistRecorder::new(10, 9).stride, 64, "clamped to 6");
        let mut none = HistRecorder::new(0, 0);
        none.record(5, 0, 4096, 5);
        none.record(5000, 0, 4096, 5);
        assert_eq!(none.finish(), "");
    }
}
