//! Physical I/O of database runs: the correlation pgio users work out by
//! hand — RIOPS (shared-buffer misses per second) next to the drive's reads,
//! bandwidth and latency, the share of misses the page cache absorbed, and a
//! compressing drive's logical/physical bytes — per label × workload ×
//! configuration × threads, and pgio's RIOPS and read latency A against B.

use csdchar_core::result::db::{IoRates, PgioParams};

use crate::model::IoStepRow;
use crate::tables::{Cell, Table, slug};

/// Which runs an I/O group holds.
#[derive(Debug, Clone, PartialEq)]
pub struct IoKey {
    /// Label (device).
    pub label: String,
    /// Workload name.
    pub workload: String,
    /// Table fillfactor (None: PostgreSQL's default, 100).
    pub fillfactor: Option<i64>,
    /// pgio's parameters (pgio runs only).
    pub pgio: Option<PgioParams>,
    /// What kept the page cache from absorbing reads; None: nothing.
    pub cache_control: Option<String>,
    /// Clients (pgio: threads per schema × schemas).
    pub threads: i64,
}

impl IoKey {
    fn of(r: &IoStepRow) -> IoKey {
        IoKey {
            label: r.key.label.clone(),
            workload: r.key.workload.clone(),
            fillfactor: r.key.fillfactor,
            pgio: r.pgio.clone(),
            cache_control: r.cache_control.clone(),
            threads: r.key.threads,
        }
    }

    /// The configuration in a few words: pgio's parameters, else the fillfactor.
    pub fn config(&self) -> String {
        match &self.pgio {
            Some(p) => pgio_config(p),
            None => format!(
                "fillfactor {}",
                crate::tables::ff_words(&self.workload, self.fillfactor)
            ),
        }
    }
}

/// pgio's parameters in pgio.conf's terms, without commas (they end up in CSV cells).
pub fn pgio_config(p: &PgioParams) -> String {
    format!(
        "{} schemas x {} blocks; {}% updates; work unit {}/{}{}",
        p.schemas,
        p.blocks_per_schema,
        p.update_pct,
        p.work_unit,
        p.update_work_unit,
        if p.server_side { "; server-side" } else { "" }
    )
}

/// The I/O figures of one group; several steps in one group (repeated runs)
/// are combined over their measured time.
#[derive(Debug, Clone, PartialEq)]
pub struct IoGroup {
    /// The group.
    pub key: IoKey,
    /// Steps combined.
    pub steps: usize,
    /// The rates (as recorded for one step; combined for several).
    pub io: IoRates,
}

/// Groups the steps that recorded whole-step I/O rates, in first-seen order.
pub fn io_groups(rows: &[IoStepRow]) -> Vec<IoGroup> {
    let rows: Vec<&IoStepRow> = rows.iter().filter(|r| r.io.is_some()).collect();
    let mut keys: Vec<IoKey> = Vec::new();
    for r in &rows {
        let k = IoKey::of(r);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|key| {
            let steps: Vec<(f64, &IoRates)> = rows
                .iter()
                .filter(|r| IoKey::of(r) == key)
                .filter_map(|r| Some((r.elapsed_s, r.io.as_ref()?)))
                .collect();
            IoGroup {
                key,
                steps: steps.len(),
                io: combine(&steps),
            }
        })
        .collect()
}

/// Rates of several steps over their measured time together: each rate
/// weighted by its step's seconds (the counts over all seconds), latency
/// weighted by the reads (writes) it averages, the bytes as of the last step.
fn combine(steps: &[(f64, &IoRates)]) -> IoRates {
    if let [(_, only)] = steps {
        // The recorded figures as they are: nothing to combine.
        return (*only).clone();
    }
    let secs: f64 = steps.iter().map(|(s, _)| s).sum();
    let weight = |s: f64| {
        if secs > 0.0 {
            s / secs
        } else {
            1.0 / steps.len().max(1) as f64
        }
    };
    let rate = |g: fn(&IoRates) -> Option<f64>| {
        steps
            .iter()
            .map(|(s, io)| g(io).map(|v| v * weight(*s)))
            .sum::<Option<f64>>()
    };
    let latency = |lat: fn(&IoRates) -> Option<f64>, iops: fn(&IoRates) -> Option<f64>| {
        let (mut sum, mut n) = (0.0, 0.0);
        for (s, io) in steps {
            if let (Some(l), Some(i)) = (lat(io), iops(io)) {
                sum += l * i * s;
                n += i * s;
            }
        }
        (n > 0.0).then(|| sum / n)
    };
    let riops = rate(|io| Some(io.riops)).unwrap_or(0.0);
    let dev_read_iops = rate(|io| io.dev_read_iops);
    let last = steps.last().map(|(_, io)| *io);
    let delta = |g: fn(&IoRates) -> Option<i64>| steps.iter().map(|(_, io)| g(io)).sum();
    IoRates {
        riops,
        hits_per_s: rate(|io| Some(io.hits_per_s)).unwrap_or(0.0),
        dev_read_iops,
        dev_read_bytes_per_s: rate(|io| io.dev_read_bytes_per_s),
        dev_read_latency_ms: latency(|io| io.dev_read_latency_ms, |io| io.dev_read_iops),
        dev_write_iops: rate(|io| io.dev_write_iops),
        dev_write_bytes_per_s: rate(|io| io.dev_write_bytes_per_s),
        dev_write_latency_ms: latency(|io| io.dev_write_latency_ms, |io| io.dev_write_iops),
        reads_per_miss: dev_read_iops.filter(|_| riops > 0.0).map(|d| d / riops),
        logical_bytes: last.and_then(|io| io.logical_bytes),
        physical_bytes: last.and_then(|io| io.physical_bytes),
        logical_delta_bytes: delta(|io| io.logical_delta_bytes),
        physical_delta_bytes: delta(|io| io.physical_delta_bytes),
    }
}

fn mib(v: Option<f64>) -> Option<f64> {
    v.map(|b| b / (1024.0 * 1024.0))
}

fn bytes_cell<T: Into<f64>>(v: Option<T>) -> Cell {
    v.map_or(Cell::Empty, |b| Cell::Bytes(b.into()))
}

fn cache_cell(c: &Option<String>) -> Cell {
    Cell::Text(c.clone().unwrap_or_else(|| "none".into()))
}

/// The io table: per label × workload × configuration × cache control ×
/// threads, RIOPS next to the drive's reads and writes. The logical/physical
/// bytes are shown when some group has them; the write bandwidth and latency
/// and the byte changes are in the CSV only.
pub fn io_table(groups: &[IoGroup]) -> Table {
    let with_bytes = groups
        .iter()
        .any(|g| g.io.logical_bytes.is_some() || g.io.physical_bytes.is_some());
    let mut columns: Vec<String> = [
        "label",
        "workload",
        "config",
        "threads",
        "cache control",
        "RIOPS",
        "hits/s",
        "dev read IOPS",
        "dev read MiB/s",
        "dev read lat ms",
        "dev reads/miss",
        "dev write IOPS",
    ]
    .map(String::from)
    .to_vec();
    let bytes_columns = ["logical", "physical"].map(String::from);
    if with_bytes {
        columns.extend(bytes_columns.clone());
    }
    let csv_only_from = columns.len();
    columns.extend(["dev write MiB/s", "dev write lat ms"].map(String::from));
    if !with_bytes {
        columns.extend(bytes_columns);
    }
    columns.extend(["logical change", "physical change"].map(String::from));
    let rows = groups
        .iter()
        .map(|g| {
            let io = &g.io;
            let mut row = vec![
                Cell::Text(g.key.label.clone()),
                Cell::Text(g.key.workload.clone()),
                Cell::Text(g.key.config()),
                Cell::Num(g.key.threads as f64, 0),
                cache_cell(&g.key.cache_control),
                Cell::num(Some(io.riops), 1),
                Cell::num(Some(io.hits_per_s), 1),
                Cell::num(io.dev_read_iops, 1),
                Cell::num(mib(io.dev_read_bytes_per_s), 2),
                Cell::num(io.dev_read_latency_ms, 3),
                Cell::num(io.reads_per_miss, 3),
                Cell::num(io.dev_write_iops, 1),
            ];
            let bytes = [
                bytes_cell(io.logical_bytes.map(|b| b as f64)),
                bytes_cell(io.physical_bytes.map(|b| b as f64)),
            ];
            if with_bytes {
                row.extend(bytes.clone());
            }
            row.push(Cell::num(mib(io.dev_write_bytes_per_s), 2));
            row.push(Cell::num(io.dev_write_latency_ms, 3));
            if !with_bytes {
                row.extend(bytes);
            }
            row.push(bytes_cell(io.logical_delta_bytes.map(|b| b as f64)));
            row.push(bytes_cell(io.physical_delta_bytes.map(|b| b as f64)));
            row
        })
        .collect();
    Table {
        name: "io".into(),
        title: "Database I/O: RIOPS and the drive's reads".into(),
        note: "RIOPS: shared-buffer misses per second (pgio's RIOPS, Δpg_stat_database.blks_read / s). dev: the drive holding the data directory over the same time (diskstats). dev reads/miss = dev read IOPS / RIOPS: 1 when every miss reached the drive, below 1 the page cache absorbed the rest, above 1 readahead or other processes added reads. logical/physical: the drive's counters after the step. The CSV adds write MiB/s and latency and the change of logical and physical bytes.".into(),
        columns,
        rows,
        csv_only_from: Some(csv_only_from),
    }
}

/// Label `other` against `base` for every pgio configuration × threads both
/// ran: RIOPS A | B | change %, device read latency A | B | change %. None
/// when they share none.
pub fn io_comparison_table(base: &str, other: &str, groups: &[IoGroup]) -> Option<Table> {
    let mut rows = Vec::new();
    for a in groups
        .iter()
        .filter(|g| g.key.label == base && g.key.pgio.is_some())
    {
        let Some(b) = groups.iter().find(|g| {
            g.key.label == other && g.key.pgio == a.key.pgio && g.key.threads == a.key.threads
        }) else {
            continue;
        };
        // Different cache limits change RIOPS as much as the drives do: say so in the row.
        let cache = if a.key.cache_control == b.key.cache_control {
            cache_cell(&a.key.cache_control)
        } else {
            let text = |c: &Option<String>| c.clone().unwrap_or_else(|| "none".into());
            Cell::Text(format!(
                "{base}: {}; {other}: {}",
                text(&a.key.cache_control),
                text(&b.key.cache_control)
            ))
        };
        let mut row = vec![
            Cell::Text(a.key.config()),
            Cell::Num(a.key.threads as f64, 0),
            cache,
        ];
        let trio = |x: Option<f64>, y: Option<f64>, d: usize| {
            [Cell::num(x, d), Cell::num(y, d), Cell::change(x, y)]
        };
        row.extend(trio(Some(a.io.riops), Some(b.io.riops), 1));
        row.extend(trio(a.io.dev_read_latency_ms, b.io.dev_read_latency_ms, 3));
        rows.push(row);
    }
    if rows.is_empty() {
        return None;
    }
    let mut columns: Vec<String> = ["config", "threads", "cache control"]
        .map(String::from)
        .to_vec();
    for w in ["RIOPS", "dev read lat ms"] {
        columns.push(format!("{w} {base}"));
        columns.push(format!("{w} {other}"));
        columns.push(format!("{w} change %"));
    }
    Some(Table {
        name: format!("pgio-compare-{}-vs-{}", slug(other), slug(base)),
        title: format!("pgio I/O: {other} vs {base}"),
        note: format!(
            "change % = {other} / {base} - 1: positive means {other} is higher (more misses served per second; slower reads)."
        ),
        columns,
        rows,
        csv_only_from: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DbKey;

    fn pgio() -> PgioParams {
        PgioParams {
            schemas: 4,
            blocks_per_schema: 4096,
            update_pct: 0,
            work_unit: 255,
            update_work_unit: 8,
            server_side: false,
        }
    }

    fn step(
        label: &str,
        threads: i64,
        elapsed_s: f64,
        riops: f64,
        dev: f64,
        lat: f64,
    ) -> IoStepRow {
        IoStepRow {
            key: DbKey {
                label: label.into(),
                workload: "pgio".into(),
                fillfactor: None,
                threads,
            },
            pgio: Some(pgio()),
            cache_control: Some("caches dropped before each step".into()),
            source: "x.json".into(),
            started_at: "2026-11-21T10:00:00Z".into(),
            elapsed_s,
            io: Some(IoRates {
                riops,
                hits_per_s: riops * 3.0,
                dev_read_iops: Some(dev),
                dev_read_bytes_per_s: Some(dev * 8192.0),
                dev_read_latency_ms: Some(lat),
                reads_per_miss: Some(dev / riops),
                physical_delta_bytes: Some(100),
                ..IoRates::default()
            }),
            intervals: Vec::new(),
        }
    }

    #[test]
    fn repeated_runs_combine_over_measured_time() {
        // 1000 misses/s for 10 s and 4000/s for 30 s: 130,000 misses in 40 s.
        // Device reads: 500/s at 2 ms and 3000/s at 1 ms: 5,000 and 90,000 reads.
        let groups = io_groups(&[
            step("a", 4, 10.0, 1000.0, 500.0, 2.0),
            step("a", 4, 30.0, 4000.0, 3000.0, 1.0),
        ]);
        assert_eq!(groups.len(), 1);
        let io = &groups[0].io;
        assert_eq!(groups[0].steps, 2);
        assert!((io.riops - 3250.0).abs() < 1e-9, "{}", io.riops);
        assert!((io.dev_read_iops.unwrap() - 95_000.0 / 40.0).abs() < 1e-9);
        let lat = (5_000.0 * 2.0 + 90_000.0 * 1.0) / 95_000.0;
        assert!((io.dev_read_latency_ms.unwrap() - lat).abs() < 1e-12);
        assert!((io.reads_per_miss.unwrap() - 95_000.0 / 130_000.0).abs() < 1e-12);
        assert_eq!(io.physical_delta_bytes, Some(200));
        // Without a device on one of them, no combined device figure.
        let mut bare = step("a", 4, 10.0, 1000.0, 0.0, 0.0);
        bare.io.as_mut().unwrap().dev_read_iops = None;
        let groups = io_groups(&[bare, step("a", 4, 30.0, 4000.0, 3000.0, 1.0)]);
        assert_eq!(groups[0].io.dev_read_iops, None);
        assert_eq!(groups[0].io.reads_per_miss, None);
    }

    #[test]
    fn comparison_matches_pgio_configuration_and_threads() {
        let mut other_config = step("b", 8, 60.0, 9000.0, 9000.0, 0.1);
        other_config.pgio.as_mut().unwrap().update_pct = 20;
        let groups = io_groups(&[
            step("a", 4, 60.0, 2000.0, 2000.0, 4.0),
            step("a", 8, 60.0, 2500.0, 2500.0, 5.0),
            step("b", 8, 60.0, 10000.0, 10000.0, 0.2),
            other_config,
        ]);
        let t = io_comparison_table("a", "b", &groups).unwrap();
        assert_eq!(t.rows.len(), 1, "only pgio 8 threads of one configuration");
        let at = |name: &str| t.columns.iter().position(|c| c == name).unwrap();
        assert_eq!(t.rows[0][at("RIOPS change %")].display(), "+300.0%");
        match t.rows[0][at("dev read lat ms change %")] {
            Cell::Change(v) => assert!((v - (0.2 / 5.0 - 1.0) * 100.0).abs() < 1e-9),
            ref c => panic!("{c:?}"),
        }
        assert!(io_comparison_table("b", "c", &groups).is_none());

        // No drive counters of logical/physical bytes: they are CSV-only columns.
        let table = io_table(&groups);
        assert_eq!(table.rows.len(), 4);
        assert!(!table.shown_columns().iter().any(|c| c == "logical"));
        assert!(table.columns.iter().any(|c| c == "logical"));
        assert!(table.to_markdown().contains("| 2,000.0 |"));
    }
}
