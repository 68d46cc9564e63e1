//! BenchmarkSQL-compatible TPC-C (5.x): the nine `bmsql_` tables and their
//! keys, the initial population of TPC-C clause 4.3.3 as PostgreSQL COPY text,
//! NURand with the C constants of clause 2.1.6, the five transactions' inputs
//! (clause 2), BenchmarkSQL's terminals and mix, and consistency conditions
//! 1–4 of clause 3.3.2. Driver-free: the database side is in csdchar-dbload.
//!
//! Files: `schema` (tables, keys, cardinalities, consistency conditions), `random`
//! (uniform, NURand, the strings of clause 4.3.2), `data` (the population as COPY text)
//! and `txn` (the transactions' inputs, terminals, mix and driver); each rule with
//! BenchmarkSQL's choice beside it, to be checked against the specification and
//! BenchmarkSQL's source.

mod data;
mod random;
mod schema;
mod txn;

pub use data::*;
pub use random::*;
pub use schema::*;
pub use txn::*;

#[cfg(test)]
mod tests {
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    use super::*;
    use proptest::prelude::*;

    fn rng(seed: u64) -> Xoshiro256PlusPlus {
        Xoshiro256PlusPlus::seed_from_u64(seed)
    }

    #[test]
    fn last_names_follow_the_syllables() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
        assert_eq!(last_name(40), "BARPRESBAR");
    }

    #[test]
    fn run_constants_keep_the_c_last_delta_rule() {
        let r = &mut rng(3);
        for load in 0..=255 {
            let c = NurandC::run(load, r);
            let d = load.abs_diff(c.c_last);
            assert!(
                (65..=119).contains(&d) && d != 96 && d != 112,
                "{load} {c:?}"
            );
            assert!(c.c_last <= 255 && c.c_id <= 1023 && c.ol_i_id <= 8191);
        }
        assert!(c_delta_ok(0, 65) && !c_delta_ok(0, 64) && !c_delta_ok(200, 104));
        assert!(!c_delta_ok(10, 122) && c_delta_ok(130, 11) && !c_delta_ok(120, 0));
    }

    #[test]
    fn nurand_uses_its_constant() {
        // With A covering the whole range the OR is still skewed; shifting C shifts every value.
        let (mut a, mut b) = (rng(9), rng(9));
        for _ in 0..1000 {
            let x = nurand(&mut a, 255, 0, 999, 0);
            let y = nurand(&mut b, 255, 0, 999, 17);
            assert_eq!((x + 17) % 1000, y);
        }
        // NURand is not uniform: the 1% most frequent last names take far more than 1%.
        let r = &mut rng(1);
        let mut hist = vec![0u32; 1000];
        for _ in 0..200_000 {
            hist[nurand(r, 255, 0, 999, 123) as usize] += 1;
        }
        hist.sort_unstable_by(|x, y| y.cmp(x));
        let top: u32 = hist[..10].iter().sum();
        assert!(top > 200_000 / 100 * 2, "top 1% share {top}");
    }

    proptest! {
        #[test]
        fn nurand_stays_in_range(seed in any::<u64>(), c in 0u32..8192, which in 0usize..3) {
            let (a, x, y) = [(255, 0, 999), (1023, 1, 3000), (8191, 1, 100_000)][which];
            let r = &mut rng(seed);
            for _ in 0..200 {
                let v = nurand(r, a, x, y, c % (a + 1));
                prop_assert!((x..=y).contains(&v));
            }
        }

        #[test]
        fn mixes_validate_and_draw_only_configured_kinds(p in 0.0f64..60.0, o in 0.0f64..10.0, seed in any::<u64>()) {
            let m = TpccMix::from_others(p, o, 0.0, 100.0 - p - o).unwrap();
            prop_assert!(m.new_order.abs() < 1e-9);
            let r = &mut rng(seed);
            for _ in 0..100 {
                let k = m.draw(r);
                prop_assert!(m.share(k) > 0.0, "{:?} drawn at 0%", k);
            }
        }
    }

    #[test]
    fn mix_validation_reports_disagreements() {
        assert!(TpccMix::default().validate().is_ok());
        assert!(TpccMix::from_others(50.0, 30.0, 20.0, 10.0).is_err());
        let m = TpccMix {
            new_order: 50.0,
            ..TpccMix::default()
        };
        assert!(m.validate().unwrap_err().contains("45.00"));
        assert!(TpccMix::from_others(-1.0, 1.0, 1.0, 1.0).is_err());
    }

    #[test]
    fn the_mix_is_drawn_as_configured() {
        for mix in [
            TpccMix::default(),
            TpccMix::from_others(43.48, 4.35, 4.35, 4.35).unwrap(),
            TpccMix::from_others(10.0, 30.0, 20.0, 15.0).unwrap(),
        ] {
            let r = &mut rng(42);
            let mut n = [0u32; 5];
            let total = 100_000;
            for _ in 0..total {
                n[mix.draw(r) as usize] += 1;
            }
            for k in TpccKind::ALL {
                let got = f64::from(n[k as usize]) / f64::from(total) * 100.0;
                assert!((got - mix.share(k)).abs() < 1.0, "{k:?}: {got} vs {mix:?}");
            }
        }
    }

    #[test]
    fn terminals_spread_over_warehouses_and_districts() {
        let t: Vec<Terminal> = (0..20).map(|i| Terminal::nth(i, 2)).collect();
        assert_eq!(t[0], Terminal { w_id: 1, d_id: 1 });
        assert_eq!(t[1], Terminal { w_id: 2, d_id: 1 });
        assert_eq!(t[2], Terminal { w_id: 1, d_id: 2 });
        let mut pairs: Vec<(u32, u32)> = t.iter().map(|t| (t.w_id, t.d_id)).collect();
        pairs.sort_unstable();
        pairs.dedup();
        assert_eq!(pairs.len(), 20);
    }

    fn driver(warehouses: u32) -> TpccDriver {
        TpccDriver {
            warehouses,
            mix: TpccMix::default(),
            c: NurandC::run(100, &mut rng(5)),
            terminal: Terminal::nth(1, warehouses),
        }
    }

    #[test]
    fn new_orders_roll_back_1_percent_and_go_remote_1_percent_of_lines() {
        let d = driver(3);
        let r = &mut rng(7);
        let (mut rollbacks, mut lines, mut remote) = (0u32, 0u32, 0u32);
        let n = 50_000;
        for _ in 0..n {
            let o = d.new_order(r);
            assert_eq!(o.w_id, 2);
            assert!((1..=10).contains(&o.d_id) && (1..=3000).contains(&o.c_id));
            assert!((5..=15).contains(&o.lines.len()));
            for (i, l) in o.lines.iter().enumerate() {
                let last_bad = o.rollback && i == o.lines.len() - 1;
                assert_eq!((1..=ITEMS).contains(&l.i_id), !last_bad, "{o:?}");
                assert!((1..=10).contains(&l.quantity) && (1..=3).contains(&l.supply_w_id));
                lines += 1;
                remote += u32::from(l.supply_w_id != o.w_id);
            }
            rollbacks += u32::from(o.rollback);
            let sorted = o.lock_order();
            assert!(
                sorted
                    .windows(2)
                    .all(|p| (p[0].supply_w_id, p[0].i_id) <= (p[1].supply_w_id, p[1].i_id))
            );
        }
        let rb = f64::from(rollbacks) / f64::from(n);
        let rm = f64::from(remote) / f64::from(lines);
        assert!((0.008..0.012).contains(&rb), "rollbacks {rb}");
        assert!((0.008..0.012).contains(&rm), "remote lines {rm}");
        // One warehouse: never remote.
        let d1 = driver(1);
        for _ in 0..5000 {
            assert!(d1.new_order(r).lines.iter().all(|l| l.supply_w_id == 1));
        }
    }

    #[test]
    fn payments_and_order_status_pick_customers_as_the_spec_says() {
        let d = driver(2);
        let r = &mut rng(11);
        let (mut by_name, mut remote) = (0u32, 0u32);
        let n = 50_000;
        for _ in 0..n {
            let p = d.payment(r);
            assert!((100..=500_000).contains(&p.amount_cents));
            if p.c_w_id != p.w_id {
                remote += 1;
            } else {
                assert_eq!(p.c_d_id, p.d_id);
            }
            match p.customer {
                CustomerRef::LastName(s) => {
                    by_name += 1;
                    assert!(s.len() >= 9 && s.len() <= 15, "{s}");
                }
                CustomerRef::Id(c) => assert!((1..=3000).contains(&c)),
            }
        }
        let share = |x: u32| f64::from(x) / f64::from(n);
        assert!((0.59..0.61).contains(&share(by_name)), "{by_name}");
        assert!((0.14..0.16).contains(&share(remote)), "{remote}");
        let os = (0..10_000)
            .filter(|_| matches!(d.order_status(r).customer, CustomerRef::LastName(_)))
            .count();
        assert!((5700..6300).contains(&os), "{os}");
        // Delivery and Stock-Level take the terminal's home.
        for _ in 0..2000 {
            match d.draw(r) {
                TpccTxn::Delivery(x) => assert!(x.w_id == 2 && (1..=10).contains(&x.carrier_id)),
                TpccTxn::StockLevel(x) => {
                    assert!(x.w_id == 2 && x.d_id == 1 && (10..=20).contains(&x.threshold))
                }
                _ => {}
            }
        }
    }

    fn lines(s: &str) -> Vec<Vec<&str>> {
        s.lines().map(|l| l.split('\t').collect()).collect()
    }

    #[test]
    fn rows_per_table_and_warehouse() {
        let data = TpccData::new(1, "2024-01-02 03:04:05");
        for (table, cols) in [
            ("bmsql_warehouse", 9),
            ("bmsql_district", 11),
            ("bmsql_customer", 21),
            ("bmsql_history", 9),
            ("bmsql_oorder", 8),
            ("bmsql_order_line", 10),
            ("bmsql_new_order", 3),
            ("bmsql_stock", 17),
        ] {
            let mut s = String::new();
            let n = data.warehouse_table_rows(table, 2, &mut s);
            let rows = lines(&s);
            assert_eq!(rows.len() as u64, n, "{table}");
            if let Some(e) = expected_rows(table, 1) {
                assert_eq!(n, e, "{table}");
            } else {
                assert!((300_000 - 40_000..300_000 + 40_000).contains(&n), "{n}");
            }
            assert!(rows.iter().all(|r| r.len() == cols), "{table}");
            // Column count matches the CREATE TABLE.
            assert_eq!(columns(table).split(", ").count(), cols, "{table}");
            assert!(rows.iter().all(|r| r[0] == "2" || table == "bmsql_history"));
        }
        let mut s = String::new();
        assert_eq!(data.item_rows(&mut s), 100_000);
        assert!(lines(&s).iter().all(|r| r.len() == 5));
        // The same seed gives the same rows, whichever warehouse is generated first.
        let (mut a, mut b) = (String::new(), String::new());
        TpccData::new(1, "2024-01-02 03:04:05").customer_rows(2, &mut a);
        data.customer_rows(2, &mut b);
        assert_eq!(a, b);
    }

    #[test]
    fn orders_and_lines_agree_and_deliveries_are_set_for_old_orders() {
        let data = TpccData::new(4, "2024-01-02 03:04:05");
        let (mut o, mut ol) = (String::new(), String::new());
        data.oorder_rows(1, &mut o);
        data.order_line_rows(1, &mut ol);
        let orders = lines(&o);
        let ol_rows = lines(&ol);
        let sum: usize = orders.iter().map(|r| r[5].parse::<usize>().unwrap()).sum();
        assert_eq!(sum, ol_rows.len());
        // A permutation of customers per district.
        let mut cids: Vec<u32> = orders[..3000]
            .iter()
            .map(|r| r[3].parse().unwrap())
            .collect();
        cids.sort_unstable();
        assert_eq!(cids, (1..=3000).collect::<Vec<_>>());
        for r in &orders {
            let id: u32 = r[2].parse().unwrap();
            assert_eq!(r[4] == "\\N", id >= FIRST_NEW_ORDER);
        }
        for r in &ol_rows {
            let id: u32 = r[2].parse().unwrap();
            if id < FIRST_NEW_ORDER {
                assert_eq!((r[5], r[6]), ("2024-01-02 03:04:05", "0.00"));
            } else {
                assert_eq!(r[5], "\\N");
                let amt: f64 = r[6].parse().unwrap();
                assert!((0.01..=9999.99).contains(&amt));
            }
            assert_eq!(r[9].len(), 24);
        }
    }

    #[test]
    fn original_in_a_tenth_of_item_and_stock_data() {
        let data = TpccData::new(8, "2024-01-02 03:04:05");
        let (mut items, mut stock) = (String::new(), String::new());
        data.item_rows(&mut items);
        data.stock_rows(1, &mut stock);
        for (s, col) in [(&items, 3), (&stock, 6)] {
            let rows = lines(s);
            let orig = rows.iter().filter(|r| r[col].contains("ORIGINAL")).count();
            let share = orig as f64 / rows.len() as f64;
            assert!((0.09..0.11).contains(&share), "{share}");
            assert!(rows.iter().all(|r| (26..=50).contains(&r[col].len())));
        }
        let rows = lines(&items);
        for r in &rows {
            let price: f64 = r[2].parse().unwrap();
            assert!((1.0..=100.0).contains(&price));
            assert!(
                (14..=24).contains(&r[1].len()) && r[1].bytes().all(|b| b.is_ascii_alphanumeric())
            );
        }
    }

    #[test]
    fn customers_follow_4_3_3() {
        let data = TpccData::new(2, "2024-01-02 03:04:05");
        let mut s = String::new();
        data.customer_rows(1, &mut s);
        let rows = lines(&s);
        let bc = rows.iter().filter(|r| r[4] == "BC").count();
        assert!((2500..3500).contains(&bc), "{bc}");
        // c_id 1..1000 take the syllables of c_id - 1.
        assert_eq!(rows[0][5], "BARBARBAR");
        assert_eq!(rows[371][5], "PRICALLYOUGHT");
        for r in &rows {
            assert_eq!(
                (r[7], r[8], r[9], r[10], r[11], r[19]),
                ("50000.00", "-10.00", "10.00", "1", "0", "OE")
            );
            assert!((300..=500).contains(&r[20].len()));
            assert_eq!(r[16].len(), 9);
            assert!(r[16].ends_with("11111") && r[17].bytes().all(|b| b.is_ascii_digit()));
            let disc: f64 = r[3].parse().unwrap();
            assert!((0.0..=0.5).contains(&disc));
        }
        // Names beyond 1000 are NURand with the load constant: some names repeat often.
        let mut names: Vec<&str> = rows[1000..3000].iter().map(|r| r[5]).collect();
        names.sort_unstable();
        names.dedup();
        assert!(names.len() < 1000, "{}", names.len());
    }

    #[test]
    fn schema_has_benchmarksqls_fillfactors_and_override() {
        let t = create_tables_sql(None);
        assert_eq!(t.len(), 12);
        let find = |v: &[String], name: &str| {
            v.iter()
                .find(|s| s.starts_with(&format!("create table {name} ")))
                .cloned()
                .unwrap()
        };
        assert!(find(&t, "bmsql_stock").ends_with("with (fillfactor=95)"));
        assert!(find(&t, "bmsql_order_line").ends_with("with (fillfactor=80)"));
        assert!(!find(&t, "bmsql_item").contains("fillfactor"));
        let o = create_tables_sql(Some(70));
        assert!(find(&o, "bmsql_item").ends_with("with (fillfactor=70)"));
        assert!(!find(&o, "bmsql_config").contains("fillfactor"));
        assert_eq!(index_sql().len(), 10);
        assert_eq!(expected_rows("bmsql_new_order", 2), Some(18_000));
        let mut s = String::new();
        push_decimal(&mut s, -1000, 2);
        push_decimal(&mut s, 5, 4);
        assert_eq!(s, "-10.000.0005");
    }
}
