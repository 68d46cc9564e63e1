//! sysbench's OLTP model, driver-free: schema, data, the statements of each
//! workload's transaction and how sysbench counts them, so that csdchar's
//! figures line up with published sysbench results (see
//! `shared/reference/db-workloads.md`). The database driver lives in dbload.

use rand_core::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// The sysbench OLTP scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OltpWorkload {
    /// BEGIN, point selects, ranges, COMMIT.
    ReadOnly,
    /// Read-only's reads, then index update, non-index update, delete + insert.
    ReadWrite,
    /// BEGIN, the three write groups, COMMIT.
    WriteOnly,
    /// One point select, no transaction.
    PointSelect,
    /// One index update.
    UpdateIndex,
    /// One non-index update.
    UpdateNonIndex,
    /// One insert (id from the serial column).
    Insert,
    /// One delete.
    Delete,
}

/// One statement of a transaction plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OltpStatement {
    /// BEGIN.
    Begin,
    /// COMMIT.
    Commit,
    /// `SELECT c FROM sbtestN WHERE id=?`.
    PointSelect,
    /// `SELECT c … BETWEEN ? AND ?`.
    SimpleRange,
    /// `SELECT SUM(k) … BETWEEN ? AND ?`.
    SumRange,
    /// `SELECT c … BETWEEN ? AND ? ORDER BY c`.
    OrderRange,
    /// `SELECT DISTINCT c … BETWEEN ? AND ? ORDER BY c`.
    DistinctRange,
    /// `UPDATE … SET k=k+1 WHERE id=?`.
    IndexUpdate,
    /// `UPDATE … SET c=? WHERE id=?`.
    NonIndexUpdate,
    /// `DELETE … WHERE id=?`.
    Delete,
    /// `INSERT … (id, k, c, pad)` with the id just deleted.
    InsertWithId,
    /// `INSERT … (k, c, pad)` (serial id, oltp_insert).
    Insert,
}

impl OltpStatement {
    /// SQL for table `n` (1-based), with `$1…` placeholders.
    pub fn sql(self, n: u32) -> String {
        match self {
            OltpStatement::Begin => "BEGIN".into(),
            OltpStatement::Commit => "COMMIT".into(),
            OltpStatement::PointSelect => format!("SELECT c FROM sbtest{n} WHERE id=$1"),
            OltpStatement::SimpleRange => {
                format!("SELECT c FROM sbtest{n} WHERE id BETWEEN $1 AND $2")
            }
            OltpStatement::SumRange => {
                format!("SELECT SUM(k) FROM sbtest{n} WHERE id BETWEEN $1 AND $2")
            }
            OltpStatement::OrderRange => {
                format!("SELECT c FROM sbtest{n} WHERE id BETWEEN $1 AND $2 ORDER BY c")
            }
            OltpStatement::DistinctRange => {
                format!("SELECT DISTINCT c FROM sbtest{n} WHERE id BETWEEN $1 AND $2 ORDER BY c")
            }
            OltpStatement::IndexUpdate => format!("UPDATE sbtest{n} SET k=k+1 WHERE id=$1"),
            OltpStatement::NonIndexUpdate => format!("UPDATE sbtest{n} SET c=$1 WHERE id=$2"),
            OltpStatement::Delete => format!("DELETE FROM sbtest{n} WHERE id=$1"),
            OltpStatement::InsertWithId => {
                format!("INSERT INTO sbtest{n} (id, k, c, pad) VALUES ($1, $2, $3, $4)")
            }
            OltpStatement::Insert => {
                format!("INSERT INTO sbtest{n} (k, c, pad) VALUES ($1, $2, $3)")
            }
        }
    }
}

/// sysbench's options that shape a transaction (names and defaults as sysbench's).
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct OltpOptions {
    /// Statements per group.
    pub point_selects: u32,
    /// Simple range selects.
    pub simple_ranges: u32,
    /// SUM range selects.
    pub sum_ranges: u32,
    /// ORDER BY range selects.
    pub order_ranges: u32,
    /// DISTINCT range selects.
    pub distinct_ranges: u32,
    /// Index updates.
    pub index_updates: u32,
    /// Non-index updates.
    pub non_index_updates: u32,
    /// Delete + insert pairs.
    pub delete_inserts: u32,
    /// Run the range selects at all.
    pub range_selects: bool,
    /// No BEGIN/COMMIT.
    pub skip_trx: bool,
}

impl Default for OltpOptions {
    fn default() -> Self {
        OltpOptions {
            point_selects: 10,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
            range_selects: true,
            skip_trx: false,
        }
    }
}

/// A group of statements that share one randomly chosen table, as sysbench runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatementGroup {
    /// The statement (delete+insert pairs are `Delete` followed by `InsertWithId`).
    pub statement: OltpStatement,
    /// How many times.
    pub count: u32,
}

/// The statement groups of one transaction (event) of `workload`.
pub fn transaction_plan(workload: OltpWorkload, o: &OltpOptions) -> Vec<StatementGroup> {
    use OltpStatement as S;
    let g = |statement, count| StatementGroup { statement, count };
    let reads = |v: &mut Vec<StatementGroup>| {
        v.push(g(S::PointSelect, o.point_selects));
        if o.range_selects {
            v.extend([
                g(S::SimpleRange, o.simple_ranges),
                g(S::SumRange, o.sum_ranges),
                g(S::OrderRange, o.order_ranges),
                g(S::DistinctRange, o.distinct_ranges),
            ]);
        }
    };
    let writes = |v: &mut Vec<StatementGroup>| {
        v.extend([
            g(S::IndexUpdate, o.index_updates),
            g(S::NonIndexUpdate, o.non_index_updates),
            g(S::Delete, o.delete_inserts),
        ]);
    };
    let mut plan = Vec::new();
    let trx = !o.skip_trx;
    match workload {
        OltpWorkload::ReadOnly | OltpWorkload::ReadWrite | OltpWorkload::WriteOnly => {
            if trx {
                plan.push(g(S::Begin, 1));
            }
            if workload != OltpWorkload::WriteOnly {
                reads(&mut plan);
            }
            if workload != OltpWorkload::ReadOnly {
                writes(&mut plan);
            }
            if trx {
                plan.push(g(S::Commit, 1));
            }
        }
        // The single-statement scripts force one statement and run no transaction.
        OltpWorkload::PointSelect => plan.push(g(S::PointSelect, 1)),
        OltpWorkload::UpdateIndex => plan.push(g(S::IndexUpdate, 1)),
        OltpWorkload::UpdateNonIndex => plan.push(g(S::NonIndexUpdate, 1)),
        OltpWorkload::Insert => plan.push(g(S::Insert, 1)),
        OltpWorkload::Delete => plan.push(g(S::Delete, 1)),
    }
    plan.retain(|x| x.count > 0);
    plan
}

/// How sysbench counts a statement's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryClass {
    /// Returned a result set (PGRES_TUPLES_OK).
    Read,
    /// Changed at least one row.
    Write,
    /// Anything else: BEGIN, COMMIT, an UPDATE or DELETE that matched nothing.
    Other,
}

/// sysbench's rule: a result set is a read, affected rows > 0 a write, the rest other.
pub fn classify(returned_rows: bool, affected: u64) -> QueryClass {
    if returned_rows {
        QueryClass::Read
    } else if affected > 0 {
        QueryClass::Write
    } else {
        QueryClass::Other
    }
}

/// Counts (reads, writes, others) a transaction makes when every statement
/// succeeds and every update/delete/insert finds its row.
pub fn expected_counts(plan: &[StatementGroup]) -> (u64, u64, u64) {
    let mut c = (0u64, 0u64, 0u64);
    for g in plan {
        let n = u64::from(g.count);
        match g.statement {
            OltpStatement::Begin | OltpStatement::Commit => c.2 += n,
            OltpStatement::PointSelect
            | OltpStatement::SimpleRange
            | OltpStatement::SumRange
            | OltpStatement::OrderRange
            | OltpStatement::DistinctRange => c.0 += n,
            // A delete is followed by the insert of the same id.
            OltpStatement::Delete => c.1 += 2 * n,
            _ => c.1 += n,
        }
    }
    c
}

/// `CREATE TABLE sbtestN` as sysbench does on PostgreSQL, plus `fillfactor`.
pub fn create_table_sql(n: u32, auto_inc: bool, fillfactor: Option<u8>) -> String {
    let id = if auto_inc {
        "SERIAL"
    } else {
        "INTEGER NOT NULL"
    };
    let with = fillfactor.map_or(String::new(), |f| format!(" WITH (fillfactor={f})"));
    format!(
        "CREATE TABLE sbtest{n}(id {id}, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, \
         pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)){with}"
    )
}

/// `CREATE INDEX k_N ON sbtestN(k)` (sysbench's --create-secondary).
pub fn create_secondary_sql(n: u32) -> String {
    format!("CREATE INDEX k_{n} ON sbtest{n}(k)")
}

/// Random row data: sysbench's `c` and `pad` strings, optionally drawn from a
/// small set of repeated strings (`--string-dup`) to model business data.
pub struct OltpStrings {
    dup_pct: u8,
    c_pool: Vec<String>,
    pad_pool: Vec<String>,
}

/// Distinct strings repeated under `--string-dup`.
const DUP_POOL: usize = 16;

impl OltpStrings {
    /// A generator; `dup_pct` % of values come from a pool of 16 strings.
    pub fn new(dup_pct: u8, rng: &mut Xoshiro256PlusPlus) -> Self {
        OltpStrings {
            dup_pct,
            c_pool: (0..DUP_POOL).map(|_| digit_groups(rng, 10)).collect(),
            pad_pool: (0..DUP_POOL).map(|_| digit_groups(rng, 5)).collect(),
        }
    }

    fn pick(&self, rng: &mut Xoshiro256PlusPlus, pool: &[String], groups: usize) -> String {
        if self.dup_pct > 0 && (rng.next_u32() % 100) < u32::from(self.dup_pct) {
            pool[(rng.next_u32() as usize) % pool.len()].clone()
        } else {
            digit_groups(rng, groups)
        }
    }

    /// A `c` value: 10 groups of 11 digits joined by '-' (119 characters).
    pub fn c(&self, rng: &mut Xoshiro256PlusPlus) -> String {
        self.pick(rng, &self.c_pool, 10)
    }

    /// A `pad` value: 5 groups of 11 digits (59 characters).
    pub fn pad(&self, rng: &mut Xoshiro256PlusPlus) -> String {
        self.pick(rng, &self.pad_pool, 5)
    }
}

/// sysbench's `###########-###########-…` with `groups` groups of random digits.
fn digit_groups(rng: &mut Xoshiro256PlusPlus, groups: usize) -> String {
    let mut s = String::with_capacity(groups * 12);
    for g in 0..groups {
        if g > 0 {
            s.push('-');
        }
        for _ in 0..11 {
            s.push(char::from(b'0' + (rng.next_u32() % 10) as u8));
        }
    }
    s
}

/// sysbench's `--rand-type` (defaults to uniform, as in the published runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RandType {
    /// Uniform over [1, n].
    Uniform,
    /// Mean of 12 uniforms (sysbench's gaussian).
    Gaussian,
    /// sysbench 1.0's default: 75% of draws in the central 1% of the range, the rest gaussian.
    Special,
    /// Pareto with h = 0.2: most draws near the low end.
    Pareto,
    /// Zipf with exponent 0.8 by rejection-inversion (sysbench HEAD).
    Zipfian,
}

/// sysbench's `--rand-spec-iter`, `--rand-spec-pct`, `--rand-spec-res`, `--rand-pareto-h`, `--rand-zipfian-exp` defaults.
const SPEC_ITER: u32 = 12;
const SPEC_PCT: f64 = 1.0;
const SPEC_RES: f64 = 75.0;
const PARETO_H: f64 = 0.2;
const ZIPF_EXP: f64 = 0.8;

/// A double in [0, 1).
fn unit(rng: &mut Xoshiro256PlusPlus) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// A row id in [1, n] drawn the sysbench way.
pub fn rand_id(rng: &mut Xoshiro256PlusPlus, kind: RandType, n: u64) -> u64 {
    let uniform = |rng: &mut Xoshiro256PlusPlus| {
        1 + ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
    };
    match kind {
        RandType::Uniform => uniform(rng),
        RandType::Gaussian => {
            let sum: u64 = (0..SPEC_ITER).map(|_| uniform(rng)).sum();
            (sum / u64::from(SPEC_ITER)).clamp(1, n)
        }
        RandType::Special => {
            // The first draw picks the branch and, in the hot branch, the value.
            let t = (n - 1) as f64;
            let rnd = unit(rng);
            if rnd * t * 100.0 / (100.0 - SPEC_RES) < t {
                let sum: f64 = (0..SPEC_ITER).map(|_| unit(rng)).sum();
                return (1 + (sum * t / f64::from(SPEC_ITER)) as u64).min(n);
            }
            let d = t * SPEC_PCT / 100.0;
            let v = rnd * (d + 1.0) + t / 2.0 - t * SPEC_PCT / 200.0;
            (1 + v.max(0.0) as u64).min(n)
        }
        RandType::Pareto => {
            let power = PARETO_H.ln() / (1.0 - PARETO_H).ln();
            (1 + (n as f64 * unit(rng).powf(power)) as u64).min(n)
        }
        RandType::Zipfian => zipf(rng, n, ZIPF_EXP),
    }
}

/// Bounded Zipf over [1, n] with exponent `e` (Hörmann and Derflinger's
/// rejection-inversion, as sysbench and Apache Commons RNG use it).
fn zipf(rng: &mut Xoshiro256PlusPlus, n: u64, e: f64) -> u64 {
    // (exp(x)-1)/x and log(1+x)/x, with their limits at 0.
    let expm1_over = |x: f64| {
        if x.abs() > 1e-8 {
            x.exp_m1() / x
        } else {
            1.0 + x / 2.0
        }
    };
    let ln1p_over = |x: f64| {
        if x.abs() > 1e-8 {
            x.ln_1p() / x
        } else {
            1.0 - x / 2.0
        }
    };
    // H(x), the integral of the hat h(x) = x^-e, and its inverse.
    let big_h = |x: f64| {
        let l = x.ln();
        expm1_over((1.0 - e) * l) * l
    };
    let big_h_inv = |x: f64| (ln1p_over((x * (1.0 - e)).max(-1.0)) * x).exp();
    let h = |x: f64| (-e * x.ln()).exp();
    let h_x1 = big_h(1.5) - 1.0;
    let s = 2.0 - big_h_inv(big_h(2.5) - h(2.0));
    let h_n = big_h(n as f64 + 0.5);
    loop {
        let u = h_n + unit(rng) * (h_x1 - h_n);
        let x = big_h_inv(u);
        let k = ((x + 0.5) as u64).clamp(1, n);
        let kf = k as f64;
        if kf - x <= s || u >= big_h(kf + 0.5) - h(kf) {
            return k;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn sysbench_counts_per_transaction() {
        let o = OltpOptions::default();
        let counts = |w| expected_counts(&transaction_plan(w, &o));
        assert_eq!(counts(OltpWorkload::ReadWrite), (14, 4, 2));
        assert_eq!(counts(OltpWorkload::ReadOnly), (14, 0, 2));
        assert_eq!(counts(OltpWorkload::WriteOnly), (0, 4, 2));
        assert_eq!(counts(OltpWorkload::PointSelect), (1, 0, 0));
        assert_eq!(counts(OltpWorkload::UpdateIndex), (0, 1, 0));
        let skip = OltpOptions {
            skip_trx: true,
            range_selects: false,
            ..OltpOptions::default()
        };
        assert_eq!(
            expected_counts(&transaction_plan(OltpWorkload::ReadWrite, &skip)),
            (10, 4, 0)
        );
    }

    #[test]
    fn classification_follows_sysbench() {
        assert_eq!(classify(true, 0), QueryClass::Read);
        assert_eq!(classify(false, 1), QueryClass::Write);
        assert_eq!(classify(false, 0), QueryClass::Other);
    }

    #[test]
    fn schema_and_sql() {
        let t = create_table_sql(3, true, Some(70));
        assert!(t.starts_with("CREATE TABLE sbtest3(id SERIAL,"));
        assert!(t.ends_with("WITH (fillfactor=70)"));
        assert!(!create_table_sql(1, false, None).contains("WITH"));
        assert_eq!(
            OltpStatement::SumRange.sql(2),
            "SELECT SUM(k) FROM sbtest2 WHERE id BETWEEN $1 AND $2"
        );
        assert_eq!(create_secondary_sql(4), "CREATE INDEX k_4 ON sbtest4(k)");
    }

    #[test]
    fn strings_have_sysbench_shape_and_dup_repeats() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let s = OltpStrings::new(0, &mut rng);
        let c = s.c(&mut rng);
        assert_eq!(c.len(), 119);
        assert_eq!(c.split('-').count(), 10);
        assert!(
            c.split('-')
                .all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit()))
        );
        assert_eq!(s.pad(&mut rng).len(), 59);
        let dup = OltpStrings::new(100, &mut rng);
        let distinct: std::collections::HashSet<String> =
            (0..1000).map(|_| dup.c(&mut rng)).collect();
        assert!(distinct.len() <= DUP_POOL);
    }

    #[test]
    fn distributions_stay_in_range_and_have_their_shape() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let n = 10_000;
        for kind in [
            RandType::Uniform,
            RandType::Gaussian,
            RandType::Special,
            RandType::Pareto,
            RandType::Zipfian,
        ] {
            let v: Vec<u64> = (0..20_000).map(|_| rand_id(&mut rng, kind, n)).collect();
            assert!(v.iter().all(|&x| (1..=n).contains(&x)), "{kind:?}");
            let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
            match kind {
                RandType::Uniform | RandType::Gaussian => {
                    assert!((mean / 5000.0 - 1.0).abs() < 0.03, "{kind:?} {mean}")
                }
                RandType::Pareto => assert!(mean < 2000.0, "pareto mean {mean}"),
                RandType::Special => {
                    // 75% within the central 1% (4950..5050), the rest spread wide.
                    let hot = v.iter().filter(|&&x| (4940..=5060).contains(&x)).count();
                    let share = hot as f64 / v.len() as f64;
                    assert!((0.74..0.80).contains(&share), "special hot share {share}");
                }
                RandType::Zipfian => {
                    // P(1) / P(2) = 2^0.8 for Zipf with exponent 0.8.
                    let ones = v.iter().filter(|&&x| x == 1).count() as f64;
                    let twos = v.iter().filter(|&&x| x == 2).count() as f64;
                    let r = ones / twos;
                    assert!((r / 2f64.powf(0.8) - 1.0).abs() < 0.15, "zipf 1:2 = {r}");
                    assert!(mean < 3500.0, "zipf mean {mean}");
                }
            }
        }
        let g: Vec<u64> = (0..20_000)
            .map(|_| rand_id(&mut rng, RandType::Gaussian, n))
            .collect();
        let central = g.iter().filter(|&&x| (4000..6000).contains(&x)).count();
        assert!(central > 15_000, "gaussian concentrates: {central}");
    }
}
