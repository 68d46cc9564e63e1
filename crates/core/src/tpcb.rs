//! pgbench's TPC-B-like workloads: schema and scale rule, the built-in
//! scripts' statements and random ranges (PostgreSQL's `pgbench.c`).

use rand_core::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Accounts per scale unit.
pub const ACCOUNTS_PER_SCALE: u64 = 100_000;
/// Tellers per scale unit.
pub const TELLERS_PER_SCALE: u64 = 10;
/// Branches per scale unit.
pub const BRANCHES_PER_SCALE: u64 = 1;
/// From this scale pgbench makes `aid` a bigint.
pub const BIGINT_AID_SCALE: u32 = 20_000;

/// The four tables, in pgbench's creation order.
pub const TABLES: [&str; 4] = [
    "pgbench_history",
    "pgbench_tellers",
    "pgbench_accounts",
    "pgbench_branches",
];

/// pgbench's built-in scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpcbScript {
    /// `tpcb-like` (the default): three updates, a select, an insert.
    TpcbLike,
    /// `simple-update` (`-N`): no teller and branch updates.
    SimpleUpdate,
    /// `select-only` (`-S`): one select.
    SelectOnly,
}

impl TpcbScript {
    /// pgbench's name.
    pub fn name(self) -> &'static str {
        match self {
            TpcbScript::TpcbLike => "tpcb-like",
            TpcbScript::SimpleUpdate => "simple-update",
            TpcbScript::SelectOnly => "select-only",
        }
    }

    /// The statements of one transaction, in order.
    pub fn statements(self) -> &'static [TpcbStatement] {
        use TpcbStatement::*;
        match self {
            TpcbScript::TpcbLike => &[
                Begin,
                UpdateAccount,
                SelectAccount,
                UpdateTeller,
                UpdateBranch,
                InsertHistory,
                End,
            ],
            TpcbScript::SimpleUpdate => &[Begin, UpdateAccount, SelectAccount, InsertHistory, End],
            TpcbScript::SelectOnly => &[SelectAccount],
        }
    }
}

/// One statement of the built-in scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpcbStatement {
    /// `BEGIN;`
    Begin,
    /// `UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;`
    UpdateAccount,
    /// `SELECT abalance FROM pgbench_accounts WHERE aid = :aid;`
    SelectAccount,
    /// `UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;`
    UpdateTeller,
    /// `UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;`
    UpdateBranch,
    /// `INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (…, CURRENT_TIMESTAMP);`
    InsertHistory,
    /// `END;`
    End,
}

impl TpcbStatement {
    /// Every statement, in declaration order.
    pub const ALL: [TpcbStatement; 7] = [
        TpcbStatement::Begin,
        TpcbStatement::UpdateAccount,
        TpcbStatement::SelectAccount,
        TpcbStatement::UpdateTeller,
        TpcbStatement::UpdateBranch,
        TpcbStatement::InsertHistory,
        TpcbStatement::End,
    ];

    /// SQL with `$n` parameters, as pgbench prepares it (`-M prepared`).
    pub fn sql(self) -> &'static str {
        match self {
            TpcbStatement::Begin => "BEGIN",
            TpcbStatement::UpdateAccount => {
                "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2"
            }
            TpcbStatement::SelectAccount => "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
            TpcbStatement::UpdateTeller => {
                "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2"
            }
            TpcbStatement::UpdateBranch => {
                "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2"
            }
            TpcbStatement::InsertHistory => {
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)"
            }
            TpcbStatement::End => "END",
        }
    }

    /// Parameter values for this statement from one transaction's draw.
    pub fn params(self, d: &TpcbDraw) -> Vec<i64> {
        match self {
            TpcbStatement::Begin | TpcbStatement::End => vec![],
            TpcbStatement::UpdateAccount => vec![d.delta, d.aid],
            TpcbStatement::SelectAccount => vec![d.aid],
            TpcbStatement::UpdateTeller => vec![d.delta, d.tid],
            TpcbStatement::UpdateBranch => vec![d.delta, d.bid],
            TpcbStatement::InsertHistory => vec![d.tid, d.bid, d.aid, d.delta],
        }
    }
}

/// The `\set` variables of one transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpcbDraw {
    /// `random(1, 100000 * :scale)`
    pub aid: i64,
    /// `random(1, :scale)`
    pub bid: i64,
    /// `random(1, 10 * :scale)`
    pub tid: i64,
    /// `random(-5000, 5000)`
    pub delta: i64,
}

/// Uniform integer in [lo, hi].
fn random(rng: &mut Xoshiro256PlusPlus, lo: i64, hi: i64) -> i64 {
    let span = (hi - lo + 1) as u64;
    lo + ((u128::from(rng.next_u64()) * u128::from(span)) >> 64) as i64
}

/// Draws the variables in the scripts' order; select-only draws only `aid`.
pub fn draw(rng: &mut Xoshiro256PlusPlus, script: TpcbScript, scale: u32) -> TpcbDraw {
    let s = i64::from(scale);
    let aid = random(rng, 1, ACCOUNTS_PER_SCALE as i64 * s);
    if script == TpcbScript::SelectOnly {
        return TpcbDraw {
            aid,
            bid: 0,
            tid: 0,
            delta: 0,
        };
    }
    let bid = random(rng, 1, s);
    let tid = random(rng, 1, TELLERS_PER_SCALE as i64 * s);
    let delta = random(rng, -5000, 5000);
    TpcbDraw {
        aid,
        bid,
        tid,
        delta,
    }
}

/// pgbench's CREATE TABLE statements; `fillfactor` goes on tellers, accounts
/// and branches (not history, not indexes), as `-F` does.
pub fn create_tables_sql(scale: u32, fillfactor: Option<u8>) -> Vec<String> {
    let aid = if scale >= BIGINT_AID_SCALE {
        "bigint"
    } else {
        "int"
    };
    let with = fillfactor
        .map(|f| format!(" with (fillfactor={f})"))
        .unwrap_or_default();
    vec![
        format!(
            "create table pgbench_history(tid int,bid int,aid {aid},delta int,mtime timestamp,filler char(22))"
        ),
        format!(
            "create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)){with}"
        ),
        format!(
            "create table pgbench_accounts(aid {aid} not null,bid int,abalance int,filler char(84)){with}"
        ),
        format!(
            "create table pgbench_branches(bid int not null,bbalance int,filler char(88)){with}"
        ),
    ]
}

/// pgbench's primary keys (init step `p`), one statement per table.
pub const PRIMARY_KEYS: [&str; 3] = [
    "alter table pgbench_branches add primary key (bid)",
    "alter table pgbench_tellers add primary key (tid)",
    "alter table pgbench_accounts add primary key (aid)",
];

/// Row counts at `scale`: (branches, tellers, accounts).
pub fn row_counts(scale: u32) -> (u64, u64, u64) {
    let s = u64::from(scale);
    (
        BRANCHES_PER_SCALE * s,
        TELLERS_PER_SCALE * s,
        ACCOUNTS_PER_SCALE * s,
    )
}

/// pgbench's server-side generation (init step `G`) for one table, or for a
/// key range of accounts `[from, to]` so several connections can share it.
pub fn generate_sql(table: &str, from: u64, to: u64) -> String {
    match table {
        "pgbench_branches" => format!(
            "insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series({from}, {to}) as bid"
        ),
        "pgbench_tellers" => format!(
            "insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / {TELLERS_PER_SCALE} + 1, 0 from generate_series({from}, {to}) as tid"
        ),
        _ => format!(
            "insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / {ACCOUNTS_PER_SCALE} + 1, 0, '' from generate_series({from}, {to}) as aid"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn scripts_have_pgbenchs_statements() {
        assert_eq!(TpcbScript::TpcbLike.statements().len(), 7);
        assert_eq!(TpcbScript::SimpleUpdate.statements().len(), 5);
        assert_eq!(
            TpcbScript::SelectOnly.statements(),
            &[TpcbStatement::SelectAccount]
        );
        let d = TpcbDraw {
            aid: 11,
            bid: 2,
            tid: 13,
            delta: -4,
        };
        assert_eq!(TpcbStatement::InsertHistory.params(&d), vec![13, 2, 11, -4]);
        assert_eq!(TpcbStatement::UpdateAccount.params(&d), vec![-4, 11]);
    }

    #[test]
    fn schema_follows_scale_and_fillfactor() {
        let t = create_tables_sql(10, Some(70));
        assert!(t[0].starts_with("create table pgbench_history") && !t[0].contains("fillfactor"));
        assert!(t[2].contains("aid int not null") && t[2].ends_with("with (fillfactor=70)"));
        assert!(create_tables_sql(20_000, None)[2].contains("aid bigint not null"));
        assert_eq!(row_counts(3), (3, 30, 300_000));
    }

    #[test]
    fn draws_stay_in_pgbenchs_ranges() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let (mut lo_delta, mut hi_delta) = (0, 0);
        for _ in 0..50_000 {
            let d = draw(&mut rng, TpcbScript::TpcbLike, 2);
            assert!((1..=200_000).contains(&d.aid));
            assert!((1..=2).contains(&d.bid));
            assert!((1..=20).contains(&d.tid));
            assert!((-5000..=5000).contains(&d.delta));
            lo_delta = lo_delta.min(d.delta);
            hi_delta = hi_delta.max(d.delta);
        }
        assert!(lo_delta < -4900 && hi_delta > 4900);
    }
}
