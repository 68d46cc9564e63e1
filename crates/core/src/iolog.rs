//! fio's per-I/O and averaged logs (`write_bw_log`, `write_iops_log`,
//! `write_lat_log`, `log_avg_msec`, `log_max_value`, `log_offset`) in fio's
//! format (iolog.c `flush_samples`), built in memory; the caller writes them.
//!
//! - Files: `PREFIX_bw.N.log`, `PREFIX_iops.N.log`, and `PREFIX_slat.N.log`,
//!   `PREFIX_clat.N.log`, `PREFIX_lat.N.log` for the latency log, N being
//!   fio's job number (1-based over the job file, clones included).
//! - Lines: `msec, value, ddir, bs, prio`, with `offset` before prio under
//!   `log_offset=1`. ddir is 0 read, 1 write, 2 trim; prio 0.
//! - `log_avg_msec=0`: a line per I/O, at its completion: bandwidth
//!   `bs × 10^6 / clat_ns` (fio's per-I/O figure), IOPS 1, latencies in ns.
//! - `log_avg_msec=M`: a line per window of M ms and direction, at the
//!   window's end, bs and offset 0: bandwidth in KiB/s and IOPS over the
//!   window, latency the window's mean (`log_max_value=1`: its max;
//!   `2`: both, mean first).
//! - `write_hist_log`: `PREFIX_clat_hist.N.log`, written by
//!   [`crate::histlog::HistRecorder`].

use serde::{Deserialize, Serialize};

use crate::histlog::HistRecorder;

/// Which logs a job writes and how.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LogSpec {
    /// Prefix of the bandwidth log (fio's `write_bw_log`); null: none.
    pub bw: Option<String>,
    /// Prefix of the IOPS log (`write_iops_log`); null: none.
    pub iops: Option<String>,
    /// Prefix of the slat, clat and lat logs (`write_lat_log`); null: none.
    pub lat: Option<String>,
    /// Averaging window, ms (`log_avg_msec`); 0: a line per I/O.
    pub avg_msec: u64,
    /// 0: window means, 1: window maxima, 2: both (`log_max_value`).
    pub max_value: u8,
    /// Whether lines carry the I/O's offset (`log_offset`).
    pub offset: bool,
    /// fio's number of the job's first thread (1-based over the job file).
    pub first_job: u32,
    /// Prefix of the clat histogram log (`write_hist_log`: `PREFIX_clat_hist.N.log`); null: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hist: Option<String>,
    /// A histogram line per this many ms (`log_hist_msec`); 0: the log stays empty.
    #[serde(default)]
    pub hist_msec: u64,
    /// Buckets summed per histogram column, as a power of two (`log_hist_coarseness`, 0 to 6).
    #[serde(default)]
    pub hist_coarseness: u8,
}

impl LogSpec {
    /// Whether no log is written.
    pub fn is_none(&self) -> bool {
        self.bw.is_none() && self.iops.is_none() && self.lat.is_none() && self.hist.is_none()
    }
}

/// Sums of one direction over one window.
#[derive(Debug, Clone, Copy, Default)]
struct Window {
    ios: u64,
    bytes: u64,
    lat_sum: [u128; 3],
    lat_max: [u64; 3],
}

/// One job's logs as they are recorded.
#[derive(Debug)]
pub struct LogRecorder {
    spec: LogSpec,
    job: u32,
    dirs: [bool; 3],
    /// bw, iops, slat, clat, lat.
    text: [String; 5],
    windows: [Window; 3],
    window_end_ms: u64,
    hist: Option<HistRecorder>,
    /// The priority column of the I/O being recorded; None: 0.
    prio: Option<String>,
}

const KINDS: [&str; 5] = ["bw", "iops", "slat", "clat", "lat"];

impl LogRecorder {
    /// A recorder for thread `job` of the run (0-based) doing `dirs`
    /// ([read, write, trim]); None when the spec writes no log.
    pub fn new(spec: &LogSpec, job: u32, dirs: [bool; 3]) -> Option<LogRecorder> {
        (!spec.is_none()).then(|| LogRecorder {
            spec: spec.clone(),
            job,
            dirs,
            text: Default::default(),
            windows: [Window::default(); 3],
            window_end_ms: spec.avg_msec,
            hist: spec
                .hist
                .is_some()
                .then(|| HistRecorder::new(spec.hist_msec, spec.hist_coarseness)),
            prio: None,
        })
    }

    fn wants(&self, kind: usize) -> bool {
        match kind {
            0 => self.spec.bw.is_some(),
            1 => self.spec.iops.is_some(),
            _ => self.spec.lat.is_some(),
        }
    }

    fn line(&mut self, kind: usize, t_ms: u64, vals: &[u64], dir: usize, bs: u64, offset: u64) {
        let prio = std::mem::take(&mut self.prio);
        self.line_with(
            kind,
            t_ms,
            vals,
            dir,
            bs,
            offset,
            prio.as_deref().unwrap_or("0"),
        );
        self.prio = prio;
    }

    /// Records one completed I/O as [`LogRecorder::record`], its priority
    /// column `prio` as fio writes it (`log_prio`) in per-I/O lines.
    pub fn record_prio(
        &mut self,
        prio: &str,
        t_ms: u64,
        dir: usize,
        bs: u64,
        offset: u64,
        lat_ns: [u64; 3],
    ) {
        if prio != "0" && self.spec.avg_msec == 0 {
            self.prio = Some(prio.to_string());
        }
        self.record(t_ms, dir, bs, offset, lat_ns);
        self.prio = None;
    }

    #[allow(clippy::too_many_arguments)]
    fn line_with(
        &mut self,
        kind: usize,
        t_ms: u64,
        vals: &[u64],
        dir: usize,
        bs: u64,
        offset: u64,
        prio: &str,
    ) {
        use std::fmt::Write;
        let out = &mut self.text[kind];
        let _ = write!(out, "{t_ms}");
        for v in vals {
            let _ = write!(out, ", {v}");
        }
        let _ = write!(out, ", {dir}, {bs}");
        if self.spec.offset {
            let _ = write!(out, ", {offset}");
        }
        let _ = writeln!(out, ", {prio}");
    }

    /// Writes the windows that ended at or before `t_ms`.
    fn close_windows(&mut self, t_ms: u64) {
        let m = self.spec.avg_msec;
        while m > 0 && t_ms >= self.window_end_ms {
            let end = self.window_end_ms;
            for d in 0..3 {
                if !self.dirs[d] {
                    continue;
                }
                let w = std::mem::take(&mut self.windows[d]);
                let bw = w.bytes * 1000 / m / 1024;
                let iops = w.ios * 1000 / m;
                for (kind, v) in [(0, bw), (1, iops)] {
                    if self.wants(kind) {
                        let vals: &[u64] = if self.spec.max_value == 2 {
                            &[v, v]
                        } else {
                            &[v]
                        };
                        self.line(kind, end, vals, d, 0, 0);
                    }
                }
                if self.wants(2) && w.ios > 0 {
                    for k in 0..3 {
                        let mean = (w.lat_sum[k] / u128::from(w.ios)) as u64;
                        let max = w.lat_max[k];
                        let vals: Vec<u64> = match self.spec.max_value {
                            0 => vec![mean],
                            1 => vec![max],
                            _ => vec![mean, max],
                        };
                        self.line(2 + k, end, &vals, d, 0, 0);
                    }
                }
            }
            self.window_end_ms += m;
        }
    }

    /// Records one completed I/O at `t_ms` of the measured period.
    pub fn record(&mut self, t_ms: u64, dir: usize, bs: u64, offset: u64, lat_ns: [u64; 3]) {
        if let Some(h) = &mut self.hist {
            h.record(t_ms, dir, bs, lat_ns[1]);
        }
        if self.spec.avg_msec == 0 {
            let [_, clat, _] = lat_ns;
            if self.wants(0) {
                let bw = bs * 1_000_000 / clat.max(1);
                self.line(0, t_ms, &[bw], dir, bs, offset);
            }
            if self.wants(1) {
                self.line(1, t_ms, &[1], dir, bs, offset);
            }
            if self.wants(2) {
                for (k, v) in lat_ns.into_iter().enumerate() {
                    self.line(2 + k, t_ms, &[v], dir, bs, offset);
                }
            }
            return;
        }
        self.close_windows(t_ms);
        let w = &mut self.windows[dir.min(2)];
        w.ios += 1;
        w.bytes += bs;
        for (k, v) in lat_ns.into_iter().enumerate() {
            w.lat_sum[k] += u128::from(v);
            w.lat_max[k] = w.lat_max[k].max(v);
        }
    }

    /// The log files, `(name, text)`, once the job ended at `end_ms`: the
    /// windows that ended by then are written (fio drops a last partial one).
    pub fn finish(mut self, end_ms: u64) -> Vec<(String, String)> {
        self.close_windows(end_ms);
        let n = self.spec.first_job + self.job;
        let mut out = Vec::new();
        for (kind, name) in KINDS.iter().enumerate() {
            let prefix = match kind {
                0 => &self.spec.bw,
                1 => &self.spec.iops,
                _ => &self.spec.lat,
            };
            if let Some(p) = prefix {
                out.push((
                    format!("{p}_{name}.{n}.log"),
                    std::mem::take(&mut self.text[kind]),
                ));
            }
        }
        if let (Some(p), Some(h)) = (&self.spec.hist, self.hist) {
            out.push((format!("{p}_clat_hist.{n}.log"), h.finish()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(avg: u64) -> LogSpec {
        LogSpec {
            bw: Some("j".into()),
            iops: Some("j".into()),
            lat: Some("j".into()),
            avg_msec: avg,
            max_value: 0,
            offset: false,
            first_job: 1,
            ..LogSpec::default()
        }
    }

    #[test]
    fn per_io_lines_are_fio_s() {
        let mut r = LogRecorder::new(&spec(0), 0, [true, false, false]).unwrap();
        r.record(0, 0, 4096, 8192, [7952, 37165, 45117]);
        let files = r.finish(1);
        let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "j_bw.1.log",
                "j_iops.1.log",
                "j_slat.1.log",
                "j_clat.1.log",
                "j_lat.1.log"
            ]
        );
        // fio 3.33's own first line of the same I/O (bw = bs * 10^6 / clat).
        assert_eq!(files[0].1, "0, 110211, 0, 4096, 0\n");
        assert_eq!(files[1].1, "0, 1, 0, 4096, 0\n");
        assert_eq!(files[4].1, "0, 45117, 0, 4096, 0\n");
    }

    #[test]
    fn averaged_windows_end_on_the_window() {
        let mut s = spec(500);
        s.offset = true;
        s.max_value = 2;
        let mut r = LogRecorder::new(&s, 1, [true, false, false]).unwrap();
        for i in 0..1000u64 {
            r.record(i, 0, 4096, i * 4096, [100, 1000 + i, 1100 + i]);
        }
        let files = r.finish(1000);
        assert_eq!(files[0].0, "j_bw.2.log");
        let iops: Vec<&str> = files[1].1.lines().collect();
        assert_eq!(
            iops,
            [
                "500, 1000, 1000, 0, 0, 0, 0",
                "1000, 1000, 1000, 0, 0, 0, 0"
            ]
        );
        let clat: Vec<&str> = files[3].1.lines().collect();
        assert_eq!(clat[0], "500, 1249, 1499, 0, 0, 0, 0");
    }
}
