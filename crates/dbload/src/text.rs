//! A db step in the peers' words: sysbench's, pgbench's and
//! BenchmarkSQL's interval lines and summaries, pgio's I/O figures, the
//! study's table and the load lines. Pure text from results and specs; the
//! CLI prints it.

use std::fmt::Write as _;

use csdchar_core::result::db::DbStep;
use csdchar_core::result::study::{StudyRow, StudyUnfinished};
use csdchar_core::tpcb::TpcbScript;

use crate::orchestrate::LoadPhases;
use csdchar_dbloop::event::Protocol;
use csdchar_dbloop::runner::OltpInterval;
use csdchar_workloads::bench::Bench;
use csdchar_workloads::pgio::PgioSpec;
use csdchar_workloads::tpcb::TpcbSpec;
use csdchar_workloads::tpcc::{TpccMode, TpccSpec};

/// What a load writes, for its line.
pub fn load_description(bench: &Bench, warehouse_range: Option<(u32, u32)>) -> String {
    match bench {
        Bench::Sysbench(spec) => format!("{} table(s) x {} rows", spec.tables, spec.table_size),
        Bench::Tpcb(t) => format!("pgbench scale {}: accounts", t.scale),
        Bench::Tpcc(t) => {
            let (from, to) = warehouse_range.unwrap_or((1, t.warehouses));
            format!("TPC-C warehouses {from}..{to}: all tables")
        }
        Bench::Pgio(p) => format!(
            "pgio {} schema(s) x {} blocks ({})",
            p.schemas,
            p.blocks_per_schema,
            csdchar_core::units::format_bytes(p.data_bytes() as f64)
        ),
        Bench::Script(s) => format!("the script's tables ({})", s.tables.join(", ")),
    }
}

/// A load's phases as the peer reports them (pgbench's init steps, the TPC-C loader's).
pub fn load_phases(phases: &LoadPhases) -> String {
    match phases {
        LoadPhases::None => String::new(),
        LoadPhases::Tpcb(t) => format!(
            " (create tables {:.2} s, generate {:.2} s, vacuum {:.2} s, primary keys {:.2} s)",
            t.create_s, t.generate_s, t.vacuum_s, t.primary_keys_s
        ),
        LoadPhases::Tpcc(t) => format!(
            " (create {:.2} s, load {:.2} s, keys {:.2} s, vacuum {:.2} s; {} warehouse(s){}{})",
            t.create_s,
            t.load_s,
            t.keys_s,
            t.vacuum_s,
            t.warehouses_loaded.len(),
            if t.item_loaded { " and item" } else { "" },
            if t.config_rewritten {
                "; bmsql_config written anew: the warehouses from the tables, the NURand constants of --seed"
            } else {
                ""
            }
        ),
    }
}

/// What an interrupted load leaves behind.
pub fn interrupted_load_state(bench: &Bench) -> &'static str {
    match bench {
        Bench::Sysbench(..) | Bench::Pgio(_) => {
            "each table loads in one transaction: complete tables stay, the one being loaded was rolled back"
        }
        Bench::Tpcb(_) => "the rows being loaded were rolled back",
        Bench::Script(_) => "the script's tables are as the interruption left them",
        Bench::Tpcc(_) => {
            "each warehouse loads in one transaction: complete warehouses stay, those being loaded were rolled back \
             (resume with --warehouse-range FROM-TO and the same --seed)"
        }
    }
}

/// pgbench's `--progress` line, plus the interval's first `--percentile`.
pub fn progress_line(iv: &OltpInterval, pct: f64) -> String {
    let d = iv.duration_s.max(1e-9);
    let t = &iv.tally;
    format!(
        "progress: {:.1} s, {:.1} tps, lat {:.3} ms stddev {:.3}, {} failed, lat p{pct} {:.3} ms\n",
        iv.t_s,
        t.transactions as f64 / d,
        iv.lat_mean_ms,
        iv.lat_stddev_ms,
        t.error_total(),
        iv.lat_pct_ms,
    )
}

pub fn interval_line(iv: &OltpInterval, threads: u32, pct: f64) -> String {
    let d = iv.duration_s.max(1e-9);
    let t = &iv.tally;
    format!(
        "[ {:.0}s ] thds: {threads} tps: {:.2} qps: {:.2} (r/w/o: {:.2}/{:.2}/{:.2}) lat (ms,{pct}%): {:.2} err/s: {:.2} reconn/s: {:.2}\n",
        iv.t_s,
        t.transactions as f64 / d,
        (t.reads + t.writes + t.others) as f64 / d,
        t.reads as f64 / d,
        t.writes as f64 / d,
        t.others as f64 / d,
        iv.lat_pct_ms,
        t.error_total() as f64 / d,
        t.reconnects as f64 / d,
    )
}

/// The physical-I/O correlation in one line: the database's misses (pgio's
/// RIOPS) next to the drive's reads, and how many reads each miss caused.
pub fn io_line(r: &csdchar_core::result::db::IoRates) -> String {
    let opt = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |v| format!("{v:.d$}"));
    format!(
        "I/O: RIOPS {:.0} (hits/s {:.0}); device reads/s {}, read MiB/s {}, read latency {} ms, writes/s {}; reads per miss {}{}",
        r.riops,
        r.hits_per_s,
        opt(r.dev_read_iops, 0),
        opt(r.dev_read_bytes_per_s.map(|b| b / 1048576.0), 1),
        opt(r.dev_read_latency_ms, 3),
        opt(r.dev_write_iops, 0),
        opt(r.reads_per_miss, 2),
        match (r.logical_bytes, r.physical_bytes) {
            (Some(l), Some(p)) => format!(
                "; drive logical {:.1} MiB, physical {:.1} MiB",
                l as f64 / 1048576.0,
                p as f64 / 1048576.0
            ),
            _ => String::new(),
        }
    )
}

/// An interval of a pgio run: operations like sysbench's line, then RIOPS
/// next to the drive's reads (what pgio users compute by hand from
/// pg_stat_database and iostat).
pub fn pgio_interval_line(iv: &OltpInterval, clients: u32, pct: f64) -> String {
    let d = iv.duration_s.max(1e-9);
    let t = &iv.tally;
    let io = iv.io.as_ref().map_or(String::new(), |r| {
        format!(
            " RIOPS: {:.0} dev r/s: {} dev rMiB/s: {} dev r lat (ms): {} reads/miss: {}",
            r.riops,
            r.dev_read_iops.map_or("-".into(), |v| format!("{v:.0}")),
            r.dev_read_bytes_per_s
                .map_or("-".into(), |v| format!("{:.1}", v / 1048576.0)),
            r.dev_read_latency_ms
                .map_or("-".into(), |v| format!("{v:.3}")),
            r.reads_per_miss.map_or("-".into(), |v| format!("{v:.2}")),
        )
    });
    format!(
        "[ {:.0}s ] thds: {clients} ops/s: {:.2} lat (ms,{pct}%): {:.2} err/s: {:.2}{io}\n",
        iv.t_s,
        t.transactions as f64 / d,
        iv.lat_pct_ms,
        t.error_total() as f64 / d,
    )
}

/// pgio's parameters and operation counts for one step (the I/O line follows).
pub fn pgio_summary(out: &mut String, s: &DbStep, p: &PgioSpec) {
    let ms = |ns: f64| ns / 1e6;
    let _ = writeln!(
        out,
        "pgio: NUM_SCHEMAS {} x SCALE {} blocks, {} client(s), UPDATE_PCT {}, WORK_UNIT {}, UPDATE_WORK_UNIT {}{}",
        p.schemas,
        p.blocks_per_schema,
        s.threads,
        p.update_pct,
        p.work_unit,
        p.update_work_unit,
        if p.server_side {
            " (server-side mypgio, 100 operations per call)"
        } else {
            ""
        }
    );
    let by = |n: &str| {
        s.by_type
            .iter()
            .find(|k| k.name == n)
            .map_or(0, |k| k.transactions)
    };
    let _ = writeln!(
        out,
        "{} in {:.0} s: {:.1}/s ({} selects, {} updates); latency avg {:.3} ms, p95 {:.3} ms, p99 {:.3} ms",
        if p.server_side { "calls" } else { "operations" },
        s.elapsed_s,
        s.tps,
        by("select"),
        by("update"),
        ms(s.latency.mean_ns),
        s.latency.at(95.0).map_or(f64::NAN, |v| ms(v as f64)),
        s.latency.at(99.0).map_or(f64::NAN, |v| ms(v as f64)),
    );
}

/// An interval of a TPC-C run: transactions of every type per minute, like
/// BenchmarkSQL's "Current tpmTOTAL", with sysbench's latency and errors.
pub fn tpcc_interval_line(iv: &OltpInterval, terminals: u32, pct: f64) -> String {
    let d = iv.duration_s.max(1e-9);
    let t = &iv.tally;
    format!(
        "[ {:.0}s ] terminals: {terminals} tpmTOTAL: {:.0} tps: {:.2} rollbacks/s: {:.2} lat (ms,{pct}%): {:.2} err/s: {:.2}\n",
        iv.t_s,
        t.transactions as f64 * 60.0 / d,
        t.transactions as f64 / d,
        t.rollbacks as f64 / d,
        iv.lat_pct_ms,
        t.error_total() as f64 / d,
    )
}
/// The peer's end-of-run summary for one step (sysbench's or pgbench's), then
/// what the step did to space and I/O.
pub fn summary(out: &mut String, s: &DbStep, bench: &Bench, protocol: Protocol) {
    match bench {
        Bench::Sysbench(..) => sysbench_summary(out, s),
        Bench::Tpcb(t) => pgbench_summary(out, s, t, protocol),
        Bench::Tpcc(t) => tpcc_summary(out, s, t),
        Bench::Pgio(p) => pgio_summary(out, s, p),
        Bench::Script(sc) => crate::script_text::script_summary(out, s, sc),
    }
    if let Some(r) = &s.io {
        let _ = writeln!(out, "{}", io_line(r));
    }
    let (Some(b), Some(a)) = (&s.before, &s.after) else {
        return;
    };
    let get = |m: &std::collections::BTreeMap<String, i64>, k: &str| m.get(k).copied().unwrap_or(0);
    let mib = |v: i64| v as f64 / (1 << 20) as f64;
    let _ = writeln!(
        out,
        "Database: {:.1} MiB -> {:.1} MiB; WAL written {}; blocks read {} / hit {}",
        mib(b.database_bytes),
        mib(a.database_bytes),
        match (b.wal_lsn_bytes, a.wal_lsn_bytes) {
            (Some(x), Some(y)) => format!("{:.1} MiB", mib(y - x)),
            _ => "-".into(),
        },
        get(&a.stat_database, "blks_read") - get(&b.stat_database, "blks_read"),
        get(&a.stat_database, "blks_hit") - get(&b.stat_database, "blks_hit"),
    );
    if let (Some(db), Some(da)) = (&b.device, &a.device) {
        let d = csdchar_core::capacity::CapacityDelta::between(db, da);
        let _ = writeln!(
            out,
            "Device {}: host wrote {} MiB; logical {} physical {}{}",
            da.device,
            d.host_written_bytes.map_or("-".into(), |v| format!(
                "{:.1}",
                v as f64 / (1 << 20) as f64
            )),
            da.logical_bytes
                .map_or("-".into(), |v| format!("{:.1} MiB", mib(v as i64))),
            da.physical_bytes
                .map_or("-".into(), |v| format!("{:.1} MiB", mib(v as i64))),
            da.compression_ratio
                .map_or(String::new(), |r| format!(" ({r:.2}:1)")),
        );
    }
    let _ = writeln!(out);
}

pub fn sysbench_summary(out: &mut String, s: &DbStep) {
    let secs = s.elapsed_s.max(1e-9);
    let total = s.reads + s.writes + s.others;
    let errors: u64 = s.errors.values().sum();
    let _ = writeln!(out, "SQL statistics ({} thread(s)):", s.threads);
    let _ = writeln!(out, "    queries performed:");
    let _ = writeln!(out, "        read:                            {}", s.reads);
    let _ = writeln!(out, "        write:                           {}", s.writes);
    let _ = writeln!(out, "        other:                           {}", s.others);
    let _ = writeln!(out, "        total:                           {total}");
    let _ = writeln!(
        out,
        "    transactions:                        {:<8} ({:.2} per sec.)",
        s.transactions, s.tps
    );
    let _ = writeln!(
        out,
        "    queries:                             {total:<8} ({:.2} per sec.)",
        s.qps
    );
    let by_code: Vec<String> = s.errors.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let _ = writeln!(
        out,
        "    ignored errors:                      {errors:<8} ({:.2} per sec.){}",
        errors as f64 / secs,
        if by_code.is_empty() {
            String::new()
        } else {
            format!(" [{}]", by_code.join(", "))
        }
    );
    let _ = writeln!(
        out,
        "    reconnects:                          {:<8} ({:.2} per sec.)",
        s.reconnects,
        s.reconnects as f64 / secs
    );
    let _ = writeln!(out, "Latency (ms):");
    let ms = |ns: f64| ns / 1e6;
    let _ = writeln!(
        out,
        "         min:                            {:.2}",
        ms(s.latency.min_ns as f64)
    );
    let _ = writeln!(
        out,
        "         avg:                            {:.2}",
        ms(s.latency.mean_ns)
    );
    let _ = writeln!(
        out,
        "         max:                            {:.2}",
        ms(s.latency.max_ns as f64)
    );
    for p in &s.latency.percentiles {
        let _ = writeln!(
            out,
            "         {:>4}th percentile:              {:.2}",
            p.percentile,
            ms(p.value_ns as f64)
        );
    }
    let _ = writeln!(out);
}

/// pgbench's end-of-run report, with the percentiles pgbench lacks.
pub fn pgbench_summary(out: &mut String, s: &DbStep, t: &TpcbSpec, protocol: Protocol) {
    let ms = |ns: f64| ns / 1e6;
    let failed: u64 = s.errors.values().sum();
    let title = match t.script {
        TpcbScript::TpcbLike => "<builtin: TPC-B (sort of)>",
        TpcbScript::SimpleUpdate => "<builtin: simple update>",
        TpcbScript::SelectOnly => "<builtin: select only>",
    };
    let _ = writeln!(out, "transaction type: {title}");
    let _ = writeln!(out, "scaling factor: {}", t.scale);
    let _ = writeln!(out, "query mode: {}", protocol.name());
    let _ = writeln!(out, "number of clients: {}", s.threads);
    let _ = writeln!(out, "number of threads: {}", s.threads);
    let _ = writeln!(out, "duration: {:.0} s", s.elapsed_s);
    let _ = writeln!(
        out,
        "number of transactions actually processed: {}",
        s.transactions
    );
    let _ = writeln!(
        out,
        "number of retried transactions: {failed} (serialization failures and deadlocks, each retried)"
    );
    let _ = writeln!(out, "latency average = {:.3} ms", ms(s.latency.mean_ns));
    let _ = writeln!(out, "latency stddev = {:.3} ms", ms(s.latency.stddev_ns));
    for p in &s.latency.percentiles {
        let _ = writeln!(
            out,
            "latency {}th percentile = {:.3} ms",
            p.percentile,
            ms(p.value_ns as f64)
        );
    }
    let _ = writeln!(out, "tps = {:.6} (without initial connection time)", s.tps);
}

/// BenchmarkSQL's end-of-run figures (tpmC, tpmTOTAL), then per transaction
/// type the counts and the latency percentiles BenchmarkSQL 5.x lacks.
pub fn tpcc_summary(out: &mut String, s: &DbStep, t: &TpccSpec) {
    let ms = |ns: f64| ns / 1e6;
    let _ = writeln!(
        out,
        "TPC-C (BenchmarkSQL 5.x), {} mode, {} warehouse(s), {} terminal(s), {:.0} s measured",
        t.mode.name(),
        t.warehouses,
        s.threads,
        s.elapsed_s
    );
    let _ = writeln!(
        out,
        "Measured tpmC (NewOrders) = {:.2}",
        s.tpmc.unwrap_or(0.0)
    );
    let _ = writeln!(out, "Measured tpmTOTAL = {:.2}", s.tpm_total.unwrap_or(0.0));
    let _ = writeln!(
        out,
        "Transaction count = {} ({} rolled back, {} {})",
        s.transactions,
        s.rollbacks,
        s.errors.values().sum::<u64>(),
        match t.mode {
            // BenchmarkSQL rolls back on a deadlock or serialization failure and goes on.
            TpccMode::Statements => "abandoned on a deadlock or serialization failure",
            TpccMode::Procedures => "retried",
        }
    );
    let _ = writeln!(
        out,
        "{:<14} {:>10} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "type", "count", "share", "rollback", "avg ms", "p50 ms", "p95 ms", "p99 ms"
    );
    for k in &s.by_type {
        let p = |q: f64| k.latency.at(q).map_or(f64::NAN, |v| ms(v as f64));
        let _ = writeln!(
            out,
            "{:<14} {:>10} {:>6.2}% {:>9} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
            k.name,
            k.transactions,
            k.share_pct,
            k.rollbacks,
            ms(k.latency.mean_ns),
            p(50.0),
            p(95.0),
            p(99.0)
        );
    }
}

/// What a study that stopped inside a fillfactor kept of it: its finished
/// loads (their mean) and what was cut short.
pub fn study_unfinished(u: &StudyUnfinished) -> String {
    let mib = |b: f64| b / (1u64 << 20) as f64;
    let n = u.loads.len() as f64;
    let mut out = format!(
        "fillfactor {}: stopped in {}; {} of {} load(s) finished, kept in the result (unfinished.loads)",
        u.fillfactor,
        u.stopped_in,
        u.loads.len(),
        u.loads_planned
    );
    if !u.loads.is_empty() {
        let mean = |f: &dyn Fn(&csdchar_core::result::study::StudyLoad) -> f64| {
            u.loads.iter().map(f).sum::<f64>() / n
        };
        let physical: Option<f64> = u
            .loads
            .iter()
            .map(|l| l.physical_bytes)
            .sum::<Option<f64>>()
            .map(|s| s / n);
        let _ = write!(
            out,
            ": mean load {:.1} s, logical {:.1} MiB, physical {}",
            mean(&|l| l.load_s),
            mib(mean(&|l| l.relation_bytes as f64)),
            physical.map_or("-".into(), |p| format!("{:.1} MiB", mib(p)))
        );
    }
    out.push('\n');
    out
}

/// The study table, as the published studies tabulate it.
pub fn study_table(rows: &[StudyRow], method: &str) -> String {
    let mib = |b: f64| b / (1u64 << 20) as f64;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{:>10} {:>7} {:>8} {:>12} {:>12} {:>7} {:>10} {:>9} {:>9} {:>9} {:>8} {:>9}",
        "fillfactor",
        "threads",
        "load s",
        "logical MiB",
        "physical MiB",
        "ratio",
        "TPS",
        "avg ms",
        "p95 ms",
        "p99 ms",
        "logical+",
        "physical+"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:>10} {:>7} {:>8.1} {:>12.1} {:>12} {:>7} {:>10.1} {:>9.3} {:>9.3} {:>9.3} {:>7.1}% {:>9}",
            r.fillfactor,
            r.threads,
            r.load_s,
            mib(r.relation_bytes as f64),
            r.physical_bytes.map_or("-".into(), |p| format!(
                "{:.1}{}",
                mib(p),
                if r.physical_estimated { "*" } else { "" }
            )),
            r.ratio.map_or("-".into(), |x| format!("{x:.2}")),
            r.tps,
            r.lat_avg_ms,
            r.lat_p95_ms,
            r.lat_p99_ms,
            100.0 * r.logical_growth,
            r.physical_growth
                .map_or("-".into(), |g| format!("{:.1}%", 100.0 * g)),
        );
    }
    if let Some(r) = rows.first() {
        let wal: Vec<String> = rows
            .iter()
            .filter(|r| r.threads == rows[0].threads)
            .filter_map(|r| {
                Some(format!(
                    "ff {}: {:.1} MiB written, pg_wal {:+.1} MiB",
                    r.fillfactor,
                    mib(r.load_wal_bytes? as f64),
                    mib(r.wal_dir_growth_bytes.unwrap_or(0) as f64)
                ))
            })
            .collect();
        let _ = writeln!(
            out,
            "logical: the workload's tables, indexes and TOAST; physical ({}): {method}{}; growth versus the first row",
            r.physical_source,
            if r.physical_estimated {
                " (* = estimated)"
            } else {
                ""
            }
        );
        if !wal.is_empty() {
            let _ = writeln!(out, "WAL over each load: {}", wal.join("; "));
        }
        // Where the drive's change went, per fillfactor: the headline is the
        // relations' part; the rest is shown, not hidden.
        for r in rows.iter().filter(|r| r.threads == rows[0].threads) {
            let Some(sp) = &r.physical_split else {
                continue;
            };
            let spread = |s: &Option<csdchar_core::result::study::Spread>| {
                s.map_or(String::new(), |s| {
                    format!(" (min {:.1}, max {:.1})", mib(s.min), mib(s.max))
                })
            };
            let _ = writeln!(
                out,
                "ff {}: drive {:+.1} MiB{} = relations {:.1}{} + WAL {} + rest {:+.1} ({})",
                r.fillfactor,
                mib(sp.drive_bytes),
                spread(&r.drive_spread),
                mib(sp.relations_bytes),
                spread(&r.physical_spread),
                sp.wal_bytes
                    .map_or("-".to_string(), |w| format!("{:+.1}", mib(w))),
                mib(sp.rest_bytes),
                if r.loads.len() > 1 {
                    format!("mean of {} loads", r.loads.len())
                } else {
                    "one load".to_string()
                }
            );
        }
    }
    out
}
