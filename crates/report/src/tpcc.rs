//! TPC-C (BenchmarkSQL-compatible) results: tpmC and per-type latency per
//! label × warehouses × fillfactor × terminals, and device A against B the
//! way the seed study tabulated it (tpmC A | tpmC B | change).

use crate::model::TpccRow;
use crate::tables::{Cell, Table, ff_text, slug};

/// TPC-C's transaction types in the workload's order; types a result names
/// beyond these follow them.
pub const TPCC_TYPES: [&str; 5] = [
    "new_order",
    "payment",
    "order_status",
    "delivery",
    "stock_level",
];

/// The types whose latency the tables show; the others are in the CSV only.
const SHOWN_TYPES: [&str; 2] = ["new_order", "payment"];

/// Which TPC-C runs a group holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TpccKey {
    /// Label (device).
    pub label: String,
    /// Warehouses (None when the result did not record them).
    pub warehouses: Option<u32>,
    /// How transactions were sent: `statements` or `procedures` (results
    /// from before the choice: procedures). Their tpmC differ by method, so
    /// groups and comparisons never mix them.
    pub mode: String,
    /// Table fillfactor (None: PostgreSQL's default, 100).
    pub fillfactor: Option<i64>,
    /// Terminals (the step's clients).
    pub terminals: i64,
}

impl TpccKey {
    /// Whether `other` is the same configuration on any label; an unset
    /// fillfactor is PostgreSQL's 100, the same tables as an explicit 100.
    pub fn same_config(&self, other: &TpccKey) -> bool {
        self.warehouses == other.warehouses
            && self.mode == other.mode
            && self.fillfactor.unwrap_or(100) == other.fillfactor.unwrap_or(100)
            && self.terminals == other.terminals
    }
}

/// One transaction type over a group's steps: a step's row, combined
/// (mean exact, transaction-weighted; percentiles weighted the same way, an
/// approximation).
pub type TpccTypeStats = crate::model::TpccTypeRow;

/// TPC-C figures of one group; several steps in one group (repeated runs)
/// are combined over their measured time.
#[derive(Debug, Clone, PartialEq)]
pub struct TpccGroup {
    /// The group.
    pub key: TpccKey,
    /// Steps combined.
    pub steps: usize,
    /// New-Orders per minute of measured time, rollbacks included.
    pub tpmc: f64,
    /// Transactions of every type per minute; None unless every step recorded it.
    pub tpm_total: Option<f64>,
    /// Transactions of every type per second.
    pub tps: Option<f64>,
    /// New-Order rollbacks in percent of New-Orders; None without New-Orders.
    pub new_order_rollback_pct: Option<f64>,
    /// Per type, TPC-C's order first.
    pub types: Vec<TpccTypeStats>,
}

impl TpccGroup {
    /// The figures of type `name`, when the group has it.
    pub fn of_type(&self, name: &str) -> Option<&TpccTypeStats> {
        self.types.iter().find(|t| t.name == name)
    }
}

/// Groups the TPC-C steps in first-seen order.
pub fn tpcc_groups(rows: &[TpccRow]) -> Vec<TpccGroup> {
    let key_of = |r: &TpccRow| TpccKey {
        label: r.key.label.clone(),
        warehouses: r.warehouses,
        mode: r.mode.clone(),
        fillfactor: r.key.fillfactor,
        terminals: r.key.threads,
    };
    let mut keys: Vec<TpccKey> = Vec::new();
    for r in rows {
        let k = key_of(r);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|key| {
            let steps: Vec<&TpccRow> = rows.iter().filter(|r| key_of(r) == key).collect();
            combine(key, &steps)
        })
        .collect()
}

fn combine(key: TpccKey, steps: &[&TpccRow]) -> TpccGroup {
    // Per-minute rates weighted by measured time: New-Orders over all the
    // group's minutes. Steps that measured nothing count equally instead.
    let secs: f64 = steps.iter().map(|s| s.elapsed_s).sum();
    let weight = |s: &TpccRow| {
        if secs > 0.0 {
            s.elapsed_s / secs
        } else {
            1.0 / steps.len() as f64
        }
    };
    let tpmc = steps.iter().map(|s| s.tpmc * weight(s)).sum();
    let tpm_total = steps
        .iter()
        .map(|s| s.tpm_total.map(|v| v * weight(s)))
        .sum::<Option<f64>>();
    let transactions: u64 = steps.iter().map(|s| s.transactions).sum();
    let tps = (secs > 0.0).then(|| transactions as f64 / secs);

    let mut names: Vec<String> = TPCC_TYPES
        .iter()
        .filter(|n| {
            steps
                .iter()
                .any(|s| s.by_type.iter().any(|t| t.name == **n))
        })
        .map(|n| n.to_string())
        .collect();
    for s in steps {
        for t in &s.by_type {
            if !names.contains(&t.name) {
                names.push(t.name.clone());
            }
        }
    }
    let types: Vec<TpccTypeStats> = names
        .into_iter()
        .map(|name| {
            let of: Vec<_> = steps
                .iter()
                .flat_map(|s| s.by_type.iter().filter(|t| t.name == name))
                .collect();
            let tx: u64 = of.iter().map(|t| t.transactions).sum();
            let weighted = |g: &dyn Fn(&crate::model::TpccTypeRow) -> Option<f64>| {
                let (mut sum, mut w) = (0.0, 0.0);
                for t in &of {
                    let n = t.transactions.max(1) as f64;
                    sum += g(t)? * n;
                    w += n;
                }
                (w > 0.0).then(|| sum / w)
            };
            TpccTypeStats {
                transactions: tx,
                rollbacks: of.iter().map(|t| t.rollbacks).sum(),
                share_pct: if transactions > 0 {
                    100.0 * tx as f64 / transactions as f64
                } else {
                    // Nothing counted: the recorded shares are all there is.
                    of.iter().map(|t| t.share_pct).sum::<f64>() / of.len().max(1) as f64
                },
                avg_ms: weighted(&|t| Some(t.avg_ms)).unwrap_or(f64::NAN),
                p95_ms: weighted(&|t| t.p95_ms),
                p99_ms: weighted(&|t| t.p99_ms),
                name,
            }
        })
        .collect();
    let new_order_rollback_pct = types
        .iter()
        .find(|t| t.name == "new_order" && t.transactions > 0)
        .map(|t| 100.0 * t.rollbacks as f64 / t.transactions as f64);
    TpccGroup {
        key,
        steps: steps.len(),
        tpmc,
        tpm_total,
        tps,
        new_order_rollback_pct,
        types,
    }
}

/// Every type name of the groups, TPC-C's order first.
fn type_names(groups: &[TpccGroup]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for g in groups {
        for t in &g.types {
            if !names.contains(&t.name) {
                names.push(t.name.clone());
            }
        }
    }
    let rank = |n: &String| {
        TPCC_TYPES
            .iter()
            .position(|t| t == n)
            .unwrap_or(TPCC_TYPES.len())
    };
    // Stable: unknown names keep their first-seen order after the five.
    names.sort_by_key(rank);
    names
}

fn warehouses_cell(w: Option<u32>) -> Cell {
    w.map_or(Cell::Empty, |w| Cell::Num(w as f64, 0))
}

/// The TPC-C table: tpmC, tpmTOTAL, TPS, New-Order rollback % and per-type
/// latency per label × warehouses × fillfactor × terminals. New-Order and
/// Payment latency are shown; every type's latency and share are in the CSV.
pub fn tpcc_table(groups: &[TpccGroup]) -> Table {
    let names = type_names(groups);
    let (shown, rest): (Vec<&String>, Vec<&String>) = names
        .iter()
        .partition(|n| SHOWN_TYPES.contains(&n.as_str()));
    let mut columns: Vec<String> = [
        "label",
        "warehouses",
        "mode",
        "fillfactor",
        "terminals",
        "tpmC",
        "tpmTOTAL",
        "tps",
        "new_order rollback %",
    ]
    .map(String::from)
    .to_vec();
    let lat_columns = |columns: &mut Vec<String>, n: &str| {
        for what in ["avg", "p95", "p99"] {
            columns.push(format!("{n} {what} ms"));
        }
    };
    for n in &shown {
        lat_columns(&mut columns, n);
    }
    let csv_only_from = columns.len();
    for n in &rest {
        lat_columns(&mut columns, n);
    }
    for n in &names {
        columns.push(format!("{n} share %"));
    }
    let rows = groups
        .iter()
        .map(|g| {
            let mut row = vec![
                Cell::Text(g.key.label.clone()),
                warehouses_cell(g.key.warehouses),
                Cell::Text(g.key.mode.clone()),
                ff_text("tpcc", g.key.fillfactor),
                Cell::Num(g.key.terminals as f64, 0),
                Cell::num(Some(g.tpmc), 2),
                Cell::num(g.tpm_total, 2),
                Cell::num(g.tps, 2),
                Cell::num(g.new_order_rollback_pct, 2),
            ];
            for n in shown.iter().chain(&rest) {
                let t = g.of_type(n);
                row.push(Cell::num(t.map(|t| t.avg_ms), 3));
                row.push(Cell::num(t.and_then(|t| t.p95_ms), 3));
                row.push(Cell::num(t.and_then(|t| t.p99_ms), 3));
            }
            for n in &names {
                row.push(Cell::num(g.of_type(n).map(|t| t.share_pct), 2));
            }
            row
        })
        .collect();
    let hidden: Vec<&str> = rest.iter().map(|s| s.as_str()).collect();
    let csv_note = if hidden.is_empty() {
        "The CSV adds every type's share of the transactions.".to_string()
    } else {
        format!(
            "The CSV adds the latency of {} and every type's share of the transactions.",
            hidden.join(", ")
        )
    };
    Table {
        name: "tpcc".into(),
        title: "TPC-C: tpmC and latency by transaction type".into(),
        note: format!(
            "tpmC: New-Orders per minute of measured time, rollbacks included (BenchmarkSQL's count); mode: statements (BenchmarkSQL's statements from the client, comparable with BenchmarkSQL's tpmC) or procedures (one function call per transaction: a higher tpmC by method, not comparable with the other mode); tpmTOTAL: every type per minute; rollback %: intended New-Order rollbacks of all New-Orders. {csv_note}"
        ),
        columns,
        rows,
        csv_only_from: Some(csv_only_from),
    }
}

/// Label `other` against `base` for every configuration both ran, as the seed
/// study tabulated it: tpmC A | tpmC B | change, then the same for the
/// New-Order and Payment p95 latency. None when they share no configuration.
pub fn tpcc_comparison_table(base: &str, other: &str, groups: &[TpccGroup]) -> Option<Table> {
    let mut rows = Vec::new();
    for a in groups.iter().filter(|g| g.key.label == base) {
        let Some(b) = groups
            .iter()
            .find(|g| g.key.label == other && g.key.same_config(&a.key))
        else {
            continue;
        };
        let mut row = vec![
            warehouses_cell(a.key.warehouses),
            Cell::Text(a.key.mode.clone()),
            ff_text("tpcc", a.key.fillfactor),
            Cell::Num(a.key.terminals as f64, 0),
        ];
        let trio = |x: Option<f64>, y: Option<f64>, d: usize| {
            [Cell::num(x, d), Cell::num(y, d), Cell::change(x, y)]
        };
        row.extend(trio(Some(a.tpmc), Some(b.tpmc), 2));
        for n in SHOWN_TYPES {
            let p95 = |g: &TpccGroup| g.of_type(n).and_then(|t| t.p95_ms);
            row.extend(trio(p95(a), p95(b), 3));
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return None;
    }
    let mut columns: Vec<String> = ["warehouses", "mode", "fillfactor", "terminals"]
        .map(String::from)
        .to_vec();
    let what: Vec<String> = std::iter::once("tpmC".to_string())
        .chain(SHOWN_TYPES.iter().map(|n| format!("{n} p95 ms")))
        .collect();
    for w in &what {
        columns.push(format!("{w} {base}"));
        columns.push(format!("{w} {other}"));
        columns.push(format!("{w} change %"));
    }
    Some(Table {
        name: format!("tpcc-compare-{}-vs-{}", slug(other), slug(base)),
        title: format!("TPC-C: {other} vs {base}"),
        note: format!(
            "change % = {other} / {base} - 1: positive means {other} is higher (better for tpmC, worse for latency)."
        ),
        columns,
        rows,
        csv_only_from: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DbKey, TpccTypeRow};

    fn step(
        label: &str,
        terminals: i64,
        elapsed_s: f64,
        new_orders: u64,
        payments: u64,
    ) -> TpccRow {
        let ty = |name: &str, tx: u64, rollbacks: u64, avg_ms: f64| TpccTypeRow {
            name: name.into(),
            transactions: tx,
            rollbacks,
            share_pct: 100.0 * tx as f64 / (new_orders + payments) as f64,
            avg_ms,
            p95_ms: Some(avg_ms * 2.0),
            p99_ms: None,
        };
        TpccRow {
            key: DbKey {
                label: label.into(),
                workload: "tpcc".into(),
                fillfactor: None,
                threads: terminals,
            },
            warehouses: Some(2),
            mode: "statements".into(),
            source: "x.json".into(),
            elapsed_s,
            transactions: new_orders + payments,
            tpmc: new_orders as f64 * 60.0 / elapsed_s,
            tpm_total: Some((new_orders + payments) as f64 * 60.0 / elapsed_s),
            // Payment first: the table puts New-Order first regardless.
            by_type: vec![
                ty("payment", payments, 0, 2.0),
                ty(
                    "new_order",
                    new_orders,
                    new_orders / 100,
                    10.0 * terminals as f64,
                ),
            ],
        }
    }

    #[test]
    fn repeated_runs_combine_over_measured_time() {
        // 600 New-Orders in 60 s and 900 in 30 s: 1500 in 1.5 minutes.
        let groups = tpcc_groups(&[step("a", 4, 60.0, 600, 400), step("a", 4, 30.0, 900, 100)]);
        assert_eq!(groups.len(), 1);
        let g = &groups[0];
        assert_eq!(g.steps, 2);
        assert!((g.tpmc - 1000.0).abs() < 1e-9, "{}", g.tpmc);
        assert!((g.tpm_total.unwrap() - 2000.0 / 1.5).abs() < 1e-9);
        assert!((g.tps.unwrap() - 2000.0 / 90.0).abs() < 1e-9);
        assert_eq!(g.types[0].name, "new_order");
        assert_eq!(g.types[0].transactions, 1500);
        assert!((g.new_order_rollback_pct.unwrap() - 100.0 * 15.0 / 1500.0).abs() < 1e-9);
        assert!((g.types[1].share_pct - 25.0).abs() < 1e-9);
        assert_eq!(g.types[1].p99_ms, None);
    }

    #[test]
    fn comparison_change_is_b_over_a_minus_one_and_table_hides_csv_only_columns() {
        let groups = tpcc_groups(&[
            step("a", 1, 60.0, 1000, 1000),
            step("a", 8, 60.0, 28731, 1000),
            step("b", 8, 60.0, 33757, 1000),
        ]);
        let t = tpcc_comparison_table("a", "b", &groups).unwrap();
        assert_eq!(t.rows.len(), 1, "only the terminals both ran");
        let change = t.columns.iter().position(|c| c == "tpmC change %").unwrap();
        match t.rows[0][change] {
            Cell::Change(v) => assert!((v - (33757.0 / 28731.0 - 1.0) * 100.0).abs() < 1e-9),
            ref c => panic!("{c:?}"),
        }
        assert_eq!(t.rows[0][change].display(), "+17.5%");
        assert!(tpcc_comparison_table("b", "c", &groups).is_none());
        // The two modes measure different things: never side by side.
        let mut procedures = step("c", 8, 60.0, 90000, 1000);
        procedures.mode = "procedures".into();
        let mixed = tpcc_groups(&[step("a", 8, 60.0, 28731, 1000), procedures]);
        assert!(tpcc_comparison_table("a", "c", &mixed).is_none());
        assert_eq!(
            tpcc_groups(&[step("a", 8, 60.0, 1, 1), {
                let mut p = step("a", 8, 60.0, 1, 1);
                p.mode = "procedures".into();
                p
            }])
            .len(),
            2,
            "one group per mode"
        );

        let table = tpcc_table(&groups);
        assert!(table.columns.iter().any(|c| c == "payment share %"));
        assert!(!table.shown_columns().iter().any(|c| c.contains("share")));
        assert!(table.to_markdown().contains("new_order p95 ms"));
        assert!(!table.to_terminal().contains("share %"));
        let csv = String::from_utf8(table.to_csv()).unwrap();
        assert!(csv.lines().next().unwrap().ends_with("payment share %"));
    }
}
