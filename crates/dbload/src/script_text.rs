//! A pgbench script step in pgbench's words: its summary (transaction type, scaling
//! factor, query mode, failed, retried, latency, tps), the per-script sections when
//! there are several scripts, and `-r`'s per-statement latencies, failures and retries.

use std::fmt::Write as _;

use csdchar_core::result::db::DbStep;
use csdchar_core::result::script::ScriptStats;
use csdchar_workloads::script::ScriptSpec;

fn pct(n: u64, of: u64) -> String {
    if of == 0 {
        "NaN".into()
    } else {
        format!("{:.3}", 100.0 * n as f64 / of as f64)
    }
}

/// pgbench's end-of-run report for a script step.
pub fn script_summary(out: &mut String, s: &DbStep, spec: &ScriptSpec) {
    let scripts = spec.program.scripts();
    let title = if scripts.len() == 1 {
        scripts[0].name().to_string()
    } else {
        "multiple scripts".to_string()
    };
    let _ = writeln!(out, "transaction type: {title}");
    let _ = writeln!(out, "scaling factor: {}", spec.scale);
    let _ = writeln!(out, "query mode: {}", spec.program.mode().name());
    let _ = writeln!(out, "number of clients: {}", s.threads);
    let _ = writeln!(out, "number of threads: {}", s.threads);
    if spec.max_tries != 1 {
        let _ = writeln!(out, "maximum number of tries: {}", spec.max_tries);
    }
    let Some(sc) = &s.script else {
        return;
    };
    let failed = sc.serialization_failures + sc.deadlock_failures;
    match spec.transactions {
        Some(t) => {
            let _ = writeln!(out, "number of transactions per client: {t}");
            let _ = writeln!(
                out,
                "number of transactions actually processed: {}/{}",
                s.transactions,
                t * u64::from(s.threads)
            );
        }
        None => {
            let _ = writeln!(out, "duration: {:.0} s", s.elapsed_s);
            let _ = writeln!(
                out,
                "number of transactions actually processed: {}",
                s.transactions
            );
        }
    }
    let all = s.transactions + failed;
    let _ = writeln!(
        out,
        "number of failed transactions: {failed} ({}%)",
        pct(failed, all)
    );
    if spec.failures_detailed {
        let _ = writeln!(
            out,
            "number of serialization failures: {} ({}%)",
            sc.serialization_failures,
            pct(sc.serialization_failures, all)
        );
        let _ = writeln!(
            out,
            "number of deadlock failures: {} ({}%)",
            sc.deadlock_failures,
            pct(sc.deadlock_failures, all)
        );
    }
    if spec.max_tries != 1 {
        let _ = writeln!(
            out,
            "number of transactions retried: {} ({}%)",
            sc.retried,
            pct(sc.retried, all)
        );
        let _ = writeln!(out, "total number of retries: {}", sc.retries);
    }
    let _ = writeln!(out, "latency average = {:.3} ms", s.latency.mean_ns / 1e6);
    let _ = writeln!(out, "latency stddev = {:.3} ms", s.latency.stddev_ns / 1e6);
    for p in &s.latency.percentiles {
        let _ = writeln!(
            out,
            "latency {}th percentile = {:.3} ms",
            p.percentile,
            p.value_ns as f64 / 1e6
        );
    }
    let _ = writeln!(out, "tps = {:.6} (without initial connection time)", s.tps);
    let secs = s.elapsed_s.max(1e-9);
    let total_weight: u64 = sc.scripts.iter().map(|x| u64::from(x.weight)).sum();
    for (i, x) in sc.scripts.iter().enumerate() {
        if sc.scripts.len() > 1 {
            let _ = writeln!(out, "SQL script {}: {}", i + 1, x.name);
            let _ = writeln!(
                out,
                " - weight: {} (targets {:.1}% of total)",
                x.weight,
                100.0 * f64::from(x.weight) / total_weight.max(1) as f64
            );
            let _ = writeln!(
                out,
                " - {} transactions ({:.1}% of total, tps = {:.6})",
                x.transactions,
                100.0 * x.transactions as f64 / s.transactions.max(1) as f64,
                x.transactions as f64 / secs
            );
            let f = x.serialization_failures + x.deadlock_failures;
            let _ = writeln!(
                out,
                " - number of failed transactions: {f} ({}%)",
                pct(f, x.transactions + f)
            );
            let _ = writeln!(out, " - latency average = {:.3} ms", x.latency_avg_ms);
            let _ = writeln!(out, " - latency stddev = {:.3} ms", x.latency_stddev_ms);
            let _ = writeln!(out, " - statement latencies in milliseconds and failures:");
        } else {
            let _ = writeln!(out, "statement latencies in milliseconds and failures:");
        }
        statement_lines(out, x, spec.max_tries != 1);
    }
    for a in &sc.aborted_clients {
        let _ = writeln!(out, "{}", a.message);
    }
    if !sc.aborted_clients.is_empty() {
        let _ = writeln!(out, "Run was aborted; the above results are incomplete.");
    }
}

/// `-r`'s lines: `%11.3f  %10d [%10d] command`.
fn statement_lines(out: &mut String, x: &ScriptStats, retries: bool) {
    for c in &x.commands {
        if retries {
            let _ = writeln!(
                out,
                "   {:>11.3}  {:>10}  {:>10}  {}",
                c.latency_avg_ms, c.failures, c.retries, c.text
            );
        } else {
            let _ = writeln!(
                out,
                "   {:>11.3}  {:>10}  {}",
                c.latency_avg_ms, c.failures, c.text
            );
        }
    }
}
