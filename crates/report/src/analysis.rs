//! The polars part: every interval sample in one DataFrame, grouped
//! statistics over it, and the Parquet/CSV exports.

use polars::prelude::*;

use crate::ReportError;
use crate::model::{DbKey, INTERVAL_COLUMNS, IntervalRow};

/// The interval samples as a DataFrame with [`INTERVAL_COLUMNS`].
pub fn interval_frame(rows: &[IntervalRow]) -> Result<DataFrame, ReportError> {
    fn s(name: &str, v: Vec<String>) -> Column {
        Column::new(name.into(), v)
    }
    fn i(name: &str, v: Vec<Option<i64>>) -> Column {
        Column::new(name.into(), v)
    }
    fn f(name: &str, v: Vec<Option<f64>>) -> Column {
        Column::new(name.into(), v)
    }
    let col_s = |g: fn(&IntervalRow) -> String| rows.iter().map(g).collect::<Vec<_>>();
    let col_i = |g: fn(&IntervalRow) -> Option<i64>| rows.iter().map(g).collect::<Vec<_>>();
    let col_f = |g: fn(&IntervalRow) -> Option<f64>| rows.iter().map(g).collect::<Vec<_>>();
    let columns = vec![
        s("source", col_s(|r| r.source.clone())),
        s("label", col_s(|r| r.label.clone())),
        s("kind", col_s(|r| r.kind.to_string())),
        s("started_at", col_s(|r| r.started_at.clone())),
        s("workload", col_s(|r| r.workload.clone())),
        i("fillfactor", col_i(|r| r.fillfactor)),
        i("threads", col_i(|r| Some(r.threads))),
        i("iodepth", col_i(|r| r.iodepth)),
        i("bs_bytes", col_i(|r| r.bs_bytes)),
        i("step", col_i(|r| Some(r.step))),
        f("t_s", col_f(|r| Some(r.t_s))),
        f("duration_s", col_f(|r| Some(r.duration_s))),
        f("tps", col_f(|r| r.tps)),
        f("qps", col_f(|r| r.qps)),
        f("reads_per_s", col_f(|r| r.reads_per_s)),
        f("writes_per_s", col_f(|r| r.writes_per_s)),
        f("others_per_s", col_f(|r| r.others_per_s)),
        f("errors_per_s", col_f(|r| r.errors_per_s)),
        f("lat_percentile", col_f(|r| r.lat_percentile)),
        f("lat_pct_ms", col_f(|r| r.lat_pct_ms)),
        f("read_iops", col_f(|r| r.read_iops)),
        f("read_bw_bytes_per_s", col_f(|r| r.read_bw_bytes_per_s)),
        f("read_lat_mean_us", col_f(|r| r.read_lat_mean_us)),
        f("read_lat_p99_us", col_f(|r| r.read_lat_p99_us)),
        f("write_iops", col_f(|r| r.write_iops)),
        f("write_bw_bytes_per_s", col_f(|r| r.write_bw_bytes_per_s)),
        f("write_lat_mean_us", col_f(|r| r.write_lat_mean_us)),
        f("write_lat_p99_us", col_f(|r| r.write_lat_p99_us)),
        f("riops", col_f(|r| r.riops)),
        f("dev_read_iops", col_f(|r| r.dev_read_iops)),
        f("dev_read_latency_ms", col_f(|r| r.dev_read_latency_ms)),
        f("reads_per_miss", col_f(|r| r.reads_per_miss)),
    ];
    debug_assert_eq!(columns.len(), INTERVAL_COLUMNS.len());
    DataFrame::new(rows.len(), columns).map_err(polars_error)
}

fn polars_error(e: PolarsError) -> ReportError {
    ReportError::Analysis(e.to_string())
}

/// Mean, sample variance and coefficient of variation of one series.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SeriesSummary {
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample variance (n − 1 in the denominator, as spreadsheets' VAR); null for one sample.
    pub variance: Option<f64>,
    /// Sample standard deviation / mean; null when either is undefined.
    pub cv: Option<f64>,
}

/// Interval statistics of one database group (label × workload × fillfactor × threads).
#[derive(Debug, Clone, PartialEq)]
pub struct DbGroupStats {
    /// The group.
    pub key: DbKey,
    /// Interval samples in the group.
    pub intervals: usize,
    /// Interval TPS.
    pub tps: SeriesSummary,
    /// Interval QPS (all statements).
    pub qps: SeriesSummary,
    /// Interval reads per second.
    pub reads: SeriesSummary,
    /// Interval writes per second.
    pub writes: SeriesSummary,
    /// Interval others per second.
    pub others: SeriesSummary,
}

/// Groups the database interval samples by label, workload, fillfactor and
/// threads, in first-seen order, with the moments of each rate.
pub fn db_group_stats(df: &DataFrame) -> Result<Vec<DbGroupStats>, ReportError> {
    let kind = df.column("kind").map_err(polars_error)?;
    let mask = kind.str().map_err(polars_error)?.equal("db");
    let db = df.filter(&mask).map_err(polars_error)?;
    if db.height() == 0 {
        return Ok(Vec::new());
    }
    // partition_by keeps first-seen group order when asked to (stable).
    let parts = db
        .partition_by_stable(["label", "workload", "fillfactor", "threads"], true)
        .map_err(polars_error)?;
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        let first_str = |name: &str| -> Result<String, ReportError> {
            part.column(name)
                .and_then(|c| c.str().map(|s| s.get(0).unwrap_or_default().to_string()))
                .map_err(polars_error)
        };
        let first_int = |name: &str| -> Result<Option<i64>, ReportError> {
            part.column(name)
                .and_then(|c| c.i64().map(|s| s.get(0)))
                .map_err(polars_error)
        };
        let summary = |name: &str| -> Result<SeriesSummary, ReportError> {
            let ca = part
                .column(name)
                .and_then(|c| c.f64().cloned())
                .map_err(polars_error)?;
            let mean = ca.mean().unwrap_or(f64::NAN);
            let variance = ca.var(1);
            let cv = variance.filter(|_| mean != 0.0).map(|v| v.sqrt() / mean);
            Ok(SeriesSummary { mean, variance, cv })
        };
        out.push(DbGroupStats {
            key: DbKey {
                label: first_str("label")?,
                workload: first_str("workload")?,
                fillfactor: first_int("fillfactor")?,
                threads: first_int("threads")?.unwrap_or(0),
            },
            intervals: part.height(),
            tps: summary("tps")?,
            qps: summary("qps")?,
            reads: summary("reads_per_s")?,
            writes: summary("writes_per_s")?,
            others: summary("others_per_s")?,
        });
    }
    Ok(out)
}

/// The frame as Parquet bytes (zstd).
pub fn to_parquet(df: &DataFrame) -> Result<Vec<u8>, ReportError> {
    let mut buf = Vec::new();
    let mut df = df.clone();
    ParquetWriter::new(&mut buf)
        .finish(&mut df)
        .map_err(polars_error)?;
    Ok(buf)
}

/// The frame as CSV bytes with a header line.
pub fn to_csv(df: &DataFrame) -> Result<Vec<u8>, ReportError> {
    let mut buf = Vec::new();
    let mut df = df.clone();
    CsvWriter::new(&mut buf)
        .include_header(true)
        .finish(&mut df)
        .map_err(polars_error)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn db_row(label: &str, threads: i64, tps: f64) -> IntervalRow {
        IntervalRow {
            source: "x.json".into(),
            label: label.into(),
            kind: "db",
            workload: "oltp_read_write".into(),
            threads,
            t_s: 1.0,
            duration_s: 1.0,
            tps: Some(tps),
            qps: Some(tps * 20.0),
            reads_per_s: Some(tps * 14.0),
            writes_per_s: Some(tps * 4.0),
            others_per_s: Some(tps * 2.0),
            ..IntervalRow::default()
        }
    }

    #[test]
    fn parquet_export_reads_back_identical() {
        let mut rows: Vec<IntervalRow> =
            (0..50).map(|i| db_row("a", 1 + i % 3, i as f64)).collect();
        rows.push(IntervalRow {
            kind: "block",
            iodepth: Some(32),
            bs_bytes: Some(4096),
            read_iops: Some(1e5),
            ..IntervalRow::default()
        });
        // A db sample with physical I/O beside ones without: nulls survive.
        rows.push(IntervalRow {
            riops: Some(2210.0),
            dev_read_iops: Some(2121.6),
            dev_read_latency_ms: Some(3.9),
            reads_per_miss: Some(0.96),
            ..db_row("a", 4, 180.0)
        });
        let df = interval_frame(&rows).unwrap();
        let bytes = to_parquet(&df).unwrap();
        let back = ParquetReader::new(std::io::Cursor::new(bytes))
            .finish()
            .unwrap();
        assert_eq!(back.shape(), df.shape());
        assert!(back.equals_missing(&df));
        let names: Vec<&str> = df.get_column_names().iter().map(|n| n.as_str()).collect();
        let documented: Vec<&str> = INTERVAL_COLUMNS.iter().map(|c| c.name).collect();
        assert_eq!(names, documented);
    }

    proptest! {
        /// polars' grouped moments agree with a plain two-pass computation.
        #[test]
        fn group_moments_match_two_pass(
            a in prop::collection::vec(0.0f64..1e6, 1..40),
            b in prop::collection::vec(0.0f64..1e6, 1..40),
        ) {
            let mut rows: Vec<IntervalRow> = a.iter().map(|&v| db_row("a", 8, v)).collect();
            rows.extend(b.iter().map(|&v| db_row("b", 8, v)));
            let stats = db_group_stats(&interval_frame(&rows).unwrap()).unwrap();
            prop_assert_eq!(stats.len(), 2);
            for (g, xs) in stats.iter().zip([&a, &b]) {
                let n = xs.len() as f64;
                let mean = xs.iter().sum::<f64>() / n;
                prop_assert!((g.tps.mean - mean).abs() <= 1e-9 * mean.max(1.0));
                prop_assert_eq!(g.intervals, xs.len());
                match g.tps.variance {
                    None => prop_assert_eq!(xs.len(), 1),
                    Some(v) => {
                        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
                        prop_assert!((v - var).abs() <= 1e-6 * var.max(1.0), "{} vs {}", v, var);
                        let qv = g.qps.variance.unwrap();
                        prop_assert!((qv - 400.0 * var).abs() <= 1e-6 * (400.0 * var).max(1.0));
                    }
                }
            }
        }
    }
}
