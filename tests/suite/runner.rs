//! The measured loop's workload-independent features against a real server:
//! event kinds counted and timed on their own, intended rollbacks, warm-up
//! and the rate limit.

use std::sync::Arc;
use std::time::Duration;

use csdchar_dbloop::event::{Event, EventSource, Protocol, StatementSet, Workload};

use csdchar_pgcluster::{ClusterSpec, ManagedCluster};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::common;

// The tests whose runs take a different path on the io_uring client driver run again on it
// (the others load, check or clean up, where the driver plays no part).
crate::on_uring_too!("kinds_rollbacks_warmup_and_rate");

/// Kind 0 succeeds; every fourth event is kind 1 and fails with 22012
/// (division by zero), which this workload declares an intended rollback.
struct Alternate {
    n: u64,
}

impl EventSource for Alternate {
    fn draw(&mut self, _: &mut Xoshiro256PlusPlus, ev: &mut Event) {
        self.n += 1;
        if self.n.is_multiple_of(4) {
            ev.set_kind(1);
            ev.push(1, &[]);
        } else {
            ev.push(0, &[]);
        }
    }
}

fn workload() -> Workload {
    let mut statements = StatementSet::default();
    statements.push("ok".into(), "SELECT 1".into());
    statements.push("fails".into(), "SELECT 1/0".into());
    Workload {
        statements,
        sources: Box::new(|| Box::new(Alternate { n: 0 })),
        retry_codes: &["40001"],
        rollback_codes: &["22012"],
        abandon_codes: &[],
        keeps_rows: false,
        kinds: vec!["ok", "rolled_back"],
        protocol: Protocol::Prepared,
        seed: 1,
    }
}

#[test]
fn kinds_rollbacks_warmup_and_rate() {
    if !common::postgres_or_skip() {
        return;
    }
    let cluster = ManagedCluster::start(&ClusterSpec::default()).unwrap();
    let conninfo = cluster.conninfo("postgres");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let w = Arc::new(workload());

    // Kinds and intended rollbacks: every fourth transaction rolls back, none is an error.
    let out = rt
        .block_on(common::run_workload(
            &conninfo,
            Arc::clone(&w),
            &common::run_settings(2, 1000, None),
            |_, _| {},
        ))
        .unwrap();
    assert!(out.error.is_none(), "{:?}", out.error);
    let t = &out.tally;
    assert!(t.transactions > 40, "{t:?}");
    assert_eq!(t.error_total(), 0, "{t:?}");
    assert_eq!(out.by_kind.len(), 2);
    let (ok, rb) = (&out.by_kind[0], &out.by_kind[1]);
    assert_eq!((ok.name, rb.name), ("ok", "rolled_back"));
    assert_eq!(ok.transactions + rb.transactions, t.transactions);
    assert_eq!((ok.rollbacks, rb.rollbacks), (0, rb.transactions));
    assert_eq!(t.rollbacks, rb.transactions);
    let share = rb.transactions as f64 / t.transactions as f64;
    assert!((share - 0.25).abs() < 0.05, "rollback share {share}");
    assert!(rb.latency.mean_ns > 0.0 && ok.latency.mean_ns > 0.0);

    // Rate: 40 transactions/s for 2 s across 2 clients, after a 1 s warm-up
    // that is not counted and does not stretch the measured time.
    let paced = csdchar_dbloop::settings::RunSettings {
        rate: Some(40.0),
        warmup: Duration::from_secs(1),
        ..common::run_settings(2, 2000, Some(500))
    };
    let out = rt
        .block_on(common::run_workload(
            &conninfo,
            Arc::clone(&w),
            &paced,
            |_, _| {},
        ))
        .unwrap();
    let n = out.tally.transactions;
    assert!((60..=90).contains(&n), "40/s for 2 s gave {n}");
    assert!(
        (out.elapsed_s - 2.0).abs() < 0.5,
        "measured {} s",
        out.elapsed_s
    );
    let series: u64 = out.intervals.iter().map(|i| i.tally.transactions).sum();
    assert_eq!(
        series, n,
        "the interval series covers the measured time only"
    );
}
