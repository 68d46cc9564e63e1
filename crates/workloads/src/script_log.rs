//! pgbench's transaction logs (`-l`), in its file formats so existing readers work: one line
//! per transaction (`client_id transaction_no latency_us script_no epoch_s epoch_us
//! [retries]`, latency replaced by `failed` or, with `--failures-detailed`,
//! `serialization`/`deadlock`; `--sampling-rate` keeps that fraction, drawn from the
//! thread's sampling state as pgbench does), or with `--aggregate-interval` one line per
//! interval (`start n sum sum2 min max lag_sum lag_sum2 lag_min lag_max skipped retried
//! retries serialization_failures deadlock_failures`, all 15 always, empty intervals
//! included, the last partial one not written, as pgbench 15 does). One file per client: pgbench's per-thread files with
//! `-j` equal to `-c`. Kept in memory; the CLI writes them under the output rule.

use std::io::Write as _;

use csdchar_pgbench_script::{PgPrng, TxnStatus};

/// What `-l` asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogSpec {
    /// `--aggregate-interval` in seconds; None: a line per transaction.
    pub aggregate_interval_s: Option<u64>,
    /// `--sampling-rate` (0 < rate ≤ 1); None: every transaction.
    pub sampling_rate: Option<f64>,
    /// `--max-tries` (the retries column when not 1).
    pub max_tries: u32,
    /// `--failures-detailed`.
    pub failures_detailed: bool,
}

#[derive(Debug, Clone, Copy, Default)]
struct Agg {
    start_us: i64,
    cnt: u64,
    sum: f64,
    sum2: f64,
    min: f64,
    max: f64,
    retried: u64,
    retries: u64,
    serialization: u64,
    deadlock: u64,
}

/// One client's log.
#[derive(Debug)]
pub struct TxnLog {
    spec: LogSpec,
    client: usize,
    sample: PgPrng,
    /// Transactions ended (transaction_no of the next line is this + 1).
    ended: u64,
    agg: Option<Agg>,
    /// The file's text so far.
    pub text: Vec<u8>,
}

impl TxnLog {
    /// Client `client`'s log; `sample` is its thread's sampling state; `start_us` (epoch
    /// µs) starts the first aggregation interval.
    pub fn new(spec: LogSpec, client: usize, sample: PgPrng, start_us: i64) -> TxnLog {
        TxnLog {
            spec,
            client,
            sample,
            ended: 0,
            agg: spec.aggregate_interval_s.map(|_| Agg {
                start_us,
                ..Agg::default()
            }),
            text: Vec::new(),
        }
    }

    /// Its options.
    pub fn spec(&self) -> LogSpec {
        self.spec
    }

    /// Its client.
    pub fn client(&self) -> usize {
        self.client
    }

    /// Its sampling state.
    pub fn sample(&self) -> PgPrng {
        self.sample
    }

    /// A transaction of script `script` ended at `now_us` (epoch µs) after `latency_us`.
    pub fn record(
        &mut self,
        now_us: i64,
        latency_us: f64,
        script: usize,
        status: TxnStatus,
        tries: u32,
    ) {
        self.ended += 1;
        if let Some(interval) = self.spec.aggregate_interval_s {
            let step = interval as i64 * 1_000_000;
            self.flush_until(now_us, step);
            let a = self.agg.as_mut().expect("aggregating");
            if tries > 1 {
                a.retried += 1;
                a.retries += u64::from(tries - 1);
            }
            match status {
                TxnStatus::Success => {
                    if a.cnt == 0 || latency_us < a.min {
                        a.min = latency_us;
                    }
                    if a.cnt == 0 || latency_us > a.max {
                        a.max = latency_us;
                    }
                    a.cnt += 1;
                    a.sum += latency_us;
                    a.sum2 += latency_us * latency_us;
                }
                TxnStatus::SerializationFailure => a.serialization += 1,
                TxnStatus::DeadlockFailure => a.deadlock += 1,
            }
            return;
        }
        if let Some(rate) = self.spec.sampling_rate
            && self.sample.double() > rate
        {
            return;
        }
        let (secs, us) = (now_us.div_euclid(1_000_000), now_us.rem_euclid(1_000_000));
        let _ = write!(self.text, "{} {} ", self.client, self.ended);
        match status {
            TxnStatus::Success => {
                let _ = write!(self.text, "{latency_us:.0}");
            }
            TxnStatus::SerializationFailure if self.spec.failures_detailed => {
                self.text.extend_from_slice(b"serialization")
            }
            TxnStatus::DeadlockFailure if self.spec.failures_detailed => {
                self.text.extend_from_slice(b"deadlock")
            }
            _ => self.text.extend_from_slice(b"failed"),
        }
        let _ = write!(self.text, " {script} {secs} {us}");
        if self.spec.max_tries != 1 {
            let _ = write!(self.text, " {}", tries.saturating_sub(1));
        }
        self.text.push(b'\n');
    }

    /// Writes every interval that ended by `now_us`.
    fn flush_until(&mut self, now_us: i64, step: i64) {
        while let Some(a) = self.agg
            && a.start_us + step <= now_us
        {
            self.write_agg(&a);
            self.agg = Some(Agg {
                start_us: a.start_us + step,
                ..Agg::default()
            });
        }
    }

    fn write_agg(&mut self, a: &Agg) {
        let _ = writeln!(
            self.text,
            "{} {} {:.0} {:.0} {:.0} {:.0} 0 0 0 0 0 {} {} {} {}",
            a.start_us.div_euclid(1_000_000),
            a.cnt,
            a.sum,
            a.sum2,
            a.min,
            a.max,
            a.retried,
            a.retries,
            a.serialization,
            a.deadlock
        );
    }

    /// The client ended at `now_us`: the intervals that ended by then are written; the last,
    /// partial one is not (pgbench 15's final `doLog` flushes ended intervals only, so a
    /// `-t` run shorter than the interval leaves an empty file: seen).
    pub fn finish(&mut self, now_us: i64) {
        if let Some(interval) = self.spec.aggregate_interval_s {
            self.flush_until(now_us, interval as i64 * 1_000_000);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(agg: Option<u64>, rate: Option<f64>, max_tries: u32) -> LogSpec {
        LogSpec {
            aggregate_interval_s: agg,
            sampling_rate: rate,
            max_tries,
            failures_detailed: false,
        }
    }

    #[test]
    fn lines_follow_pgbench_s_formats() {
        let mut l = TxnLog::new(spec(None, None, 1), 3, PgPrng::seed(1), 0);
        l.record(1_700_000_000_123_456, 1234.4, 0, TxnStatus::Success, 1);
        l.record(
            1_700_000_001_000_001,
            99.0,
            1,
            TxnStatus::SerializationFailure,
            1,
        );
        assert_eq!(
            String::from_utf8(l.text).unwrap(),
            "3 1 1234 0 1700000000 123456\n3 2 failed 1 1700000001 1\n"
        );
        let mut l = TxnLog::new(spec(None, None, 5), 0, PgPrng::seed(1), 0);
        l.record(2_000_000, 10.0, 0, TxnStatus::Success, 3);
        assert_eq!(String::from_utf8(l.text).unwrap(), "0 1 10 0 2 0 2\n");
    }

    #[test]
    fn aggregates_print_empty_intervals_but_not_the_last_partial_one() {
        let mut l = TxnLog::new(spec(Some(2), None, 1), 0, PgPrng::seed(1), 10_000_000);
        l.record(10_500_000, 100.0, 0, TxnStatus::Success, 1);
        l.record(11_000_000, 300.0, 0, TxnStatus::Success, 2);
        l.record(16_100_000, 50.0, 0, TxnStatus::DeadlockFailure, 1);
        l.finish(16_200_000);
        assert_eq!(
            String::from_utf8(l.text).unwrap(),
            "10 2 400 100000 100 300 0 0 0 0 0 1 1 0 0\n\
             12 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n\
             14 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
        );
    }

    #[test]
    fn sampling_keeps_about_the_rate() {
        let mut l = TxnLog::new(spec(None, Some(0.1), 1), 0, PgPrng::seed(7), 0);
        for i in 0..10_000 {
            l.record(i, 1.0, 0, TxnStatus::Success, 1);
        }
        let n = l.text.iter().filter(|b| **b == b'\n').count();
        assert!((800..1200).contains(&n), "{n}");
    }
}
