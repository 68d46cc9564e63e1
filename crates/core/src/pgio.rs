//! pgio (Kevin Closson's SLOB method for PostgreSQL): schema, scale rule,
//! load order, the `mypgio` operation mix and its statements, driver-free.
//!
//! Facts from pgio's `setup.sh`, `runit.sh`, `pgio.conf`, `pgio.sql` and
//! `pgio_get_rand.sql` (therealkevinc/pgio, 2019):
//! - `SCALE` is blocks per schema (`1G` = 2^30 / 8192 blocks) and the base
//!   table gets exactly `SCALE` rows (`generate_series(1, SCALE)`); with
//!   fillfactor 10 and ~1 KiB rows the server puts one row in each block.
//! - Rows are written ordered by a random `scratch`, so the `mykey` index
//!   points at random heap blocks.
//! - Each loop iteration draws `mykey = trunc(random() * (hi - lo) + lo)` with
//!   `lo = 1`, `hi = SCALE - WORK_UNIT`, i.e. keys 1 ..= SCALE - WORK_UNIT - 1,
//!   then runs `SELECT sum(scratch) … WHERE mykey BETWEEN k AND k + WORK_UNIT`
//!   or `UPDATE … SET scratch = scratch + 1 WHERE mykey BETWEEN k AND
//!   k + UPDATE_WORK_UNIT` (both bounds inclusive: WORK_UNIT + 1 rows; pypgio
//!   later changed the upper bound to `k + WORK_UNIT - 1`, we keep pgio's).
//! - The update share: in every window of 100 operations an even key makes an
//!   update until UPDATE_PCT updates are done, and once 100 − UPDATE_PCT
//!   selects are done the rest are updates — exactly UPDATE_PCT updates per
//!   100 operations. UPDATE_PCT 0 and 100 short-cut the mix; 51–99 are refused.

use rand_core::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// PostgreSQL's block size, which pgio's scale is counted in.
pub const BLOCK_SIZE: u64 = 8192;
/// pgio's `WORK_UNIT` (rows per select, minus one; see the module doc).
pub const WORK_UNIT: u32 = 255;
/// pgio.conf's `UPDATE_WORK_UNIT`.
pub const UPDATE_WORK_UNIT: u32 = 8;
/// pgio's smallest scale, blocks (`MIN_SCALE`).
pub const MIN_SCALE: u64 = 1024;
/// The tables' fillfactor.
pub const FILLFACTOR: u8 = 10;
/// Characters of `filler` (`repeat('X', 1024)::char(1024)`).
pub const FILLER_LEN: usize = 1024;
/// Operations per window of mypgio's update/select quota.
pub const OPS_PER_WINDOW: u32 = 100;
/// Upper bound of `scratch` at load (`(random() * 1000000000)::bigint`).
pub const SCRATCH_MAX: i64 = 1_000_000_000;

/// Table `n` (1-based) of pgio's schemas.
pub fn table_name(n: u32) -> String {
    format!("pgio{n}")
}

/// pgio's table (setup.sh's `create table … with (fillfactor=10) as select * from pgio_base`).
pub fn create_table_sql(qualified: &str) -> String {
    format!(
        "CREATE TABLE {qualified} (mykey bigint, scratch bigint, filler char({FILLER_LEN})) \
         WITH (fillfactor={FILLFACTOR})"
    )
}

/// pgio's index on `mykey`, named `pgioN_idx` like setup.sh names it.
pub fn create_index_sql(schema: &str, n: u32) -> String {
    format!("CREATE INDEX pgio{n}_idx ON {schema}.pgio{n} (mykey)")
}

/// Blocks for a size in bytes (setup.sh's `f_fix_scale`: bytes / 8192, truncated).
pub fn blocks_for_bytes(bytes: u64) -> u64 {
    bytes / BLOCK_SIZE
}

/// pgio's row as stored: 24-byte tuple header, two bigints, char(1024) with
/// a 4-byte varlena header = 1068 bytes, MAXALIGNed to 1072.
pub const TUPLE_BYTES: u64 = 1072;

/// Heap rows PostgreSQL puts in one 8 KiB block at `fillfactor`, for pgio's row.
pub fn rows_per_block(fillfactor: u8) -> u64 {
    crate::heap_page::heap_rows_per_page(TUPLE_BYTES, fillfactor)
}

/// Rows of a schema of `blocks` blocks: pgio loads one row per block.
pub fn rows_for_blocks(blocks: u64) -> u64 {
    blocks
}

/// Checks a schema's size: mypgio draws keys below `blocks - work_unit`,
/// and pgio refuses fewer than [`MIN_SCALE`] blocks.
pub fn check_blocks(blocks: u64, work_unit: u32) -> Result<(), String> {
    if blocks < MIN_SCALE {
        return Err(format!(
            "{blocks} blocks per schema is below pgio's minimum of {MIN_SCALE} blocks (8 MiB)"
        ));
    }
    if blocks <= u64::from(work_unit) + 1 {
        return Err(format!(
            "{blocks} blocks per schema leave no room for a work unit of {work_unit} rows"
        ));
    }
    Ok(())
}

/// Checks `UPDATE_PCT` as mypgio does: 0–50 or 100.
pub fn check_update_pct(pct: u8) -> Result<(), String> {
    match pct {
        0..=50 | 100 => Ok(()),
        _ => Err(format!(
            "update percentage {pct} is not supported by pgio: use 0 to 50, or 100"
        )),
    }
}

/// The load order of one schema: `(mykey, scratch)` for keys 1..=rows, sorted
/// by a random `scratch` in [0, 1e9] — as pgio's base table
/// (`… order by scratch`) hands its rows to every pgioN. Sorting i.i.d.
/// (key, scratch) pairs by scratch is the same as a uniform permutation of the
/// keys beside sorted i.i.d. scratch values, which is what is built here.
pub fn load_order(rows: u64, rng: &mut Xoshiro256PlusPlus) -> Vec<(i64, i64)> {
    let mut keys: Vec<i64> = (1..=rows as i64).collect();
    for i in (1..keys.len()).rev() {
        let j = below(rng, i as u64 + 1) as usize;
        keys.swap(i, j);
    }
    let mut scratch: Vec<i64> = (0..rows)
        .map(|_| below(rng, SCRATCH_MAX as u64 + 1) as i64)
        .collect();
    scratch.sort_unstable();
    keys.into_iter().zip(scratch).collect()
}

/// Uniform integer in [0, n).
fn below(rng: &mut Xoshiro256PlusPlus, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

/// mypgio's `pgio_get_random_number(1, rows - work_unit)`:
/// `trunc(random() * (hi - lo) + lo)`, i.e. a key in 1 ..= rows − work_unit − 1.
pub fn draw_key(rng: &mut Xoshiro256PlusPlus, rows: u64, work_unit: u32) -> i64 {
    let hi = rows.saturating_sub(u64::from(work_unit)).max(2);
    1 + below(rng, hi - 1) as i64
}

/// One pgio operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PgioOp {
    /// `SELECT sum(scratch) … WHERE mykey BETWEEN k AND k + WORK_UNIT`.
    Select,
    /// `UPDATE … SET scratch = scratch + 1 WHERE mykey BETWEEN k AND k + UPDATE_WORK_UNIT`.
    Update,
}

impl PgioOp {
    /// Index into a workload's kinds: select 0, update 1.
    pub fn kind(self) -> usize {
        match self {
            PgioOp::Select => 0,
            PgioOp::Update => 1,
        }
    }

    /// SQL with `$1`, `$2` the key range, as pgio's EXECUTE strings read.
    pub fn sql(self, table: &str) -> String {
        match self {
            PgioOp::Select => {
                format!("SELECT sum(scratch) FROM {table} WHERE mykey BETWEEN $1 AND $2")
            }
            PgioOp::Update => {
                format!("UPDATE {table} SET scratch = scratch + 1 WHERE mykey BETWEEN $1 AND $2")
            }
        }
    }
}

/// mypgio's select/update decision, one terminal's state across operations.
#[derive(Debug, Clone)]
pub struct PgioMix {
    pct: u8,
    op_cnt: u32,
    select_cnt: u32,
    update_cnt: u32,
    update_quota: bool,
    select_quota: bool,
}

impl PgioMix {
    /// A mix at `pct` percent updates (checked with [`check_update_pct`] by the caller).
    pub fn new(pct: u8) -> Self {
        PgioMix {
            pct,
            op_cnt: 0,
            select_cnt: 0,
            update_cnt: 0,
            update_quota: false,
            select_quota: false,
        }
    }

    /// The operation for drawn key `key`, advancing the window as mypgio's loop does.
    pub fn next(&mut self, key: i64) -> PgioOp {
        let pct = u32::from(self.pct);
        // mypgio: update-only at 100%; else an even key while the update
        // quota is open, or anything once the select quota is full.
        let update =
            pct == 100 || (pct != 0 && key % 2 == 0 && !self.update_quota) || self.select_quota;
        let op = if update {
            PgioOp::Update
        } else {
            PgioOp::Select
        };
        match op {
            PgioOp::Select => {
                self.select_cnt += 1;
                if self.select_cnt >= OPS_PER_WINDOW - pct.min(OPS_PER_WINDOW) {
                    self.select_quota = true;
                }
            }
            PgioOp::Update => {
                self.update_cnt += 1;
                if self.update_cnt >= pct {
                    self.update_quota = true;
                }
            }
        }
        self.op_cnt += 1;
        if self.op_cnt >= OPS_PER_WINDOW {
            *self = PgioMix::new(self.pct);
        }
        op
    }
}

/// One drawn operation: what to run over which inclusive key range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgioDraw {
    /// Select or update.
    pub op: PgioOp,
    /// `$1`: the drawn key.
    pub lo: i64,
    /// `$2`: key + WORK_UNIT (select) or key + UPDATE_WORK_UNIT (update).
    pub hi: i64,
}

/// Draws the next operation of a terminal, as one mypgio loop iteration does.
pub fn draw(
    rng: &mut Xoshiro256PlusPlus,
    mix: &mut PgioMix,
    rows: u64,
    work_unit: u32,
    update_work_unit: u32,
) -> PgioDraw {
    let lo = draw_key(rng, rows, work_unit);
    let op = mix.next(lo);
    let width = match op {
        PgioOp::Select => work_unit,
        PgioOp::Update => update_work_unit,
    };
    PgioDraw {
        op,
        lo,
        hi: lo + i64::from(width),
    }
}

/// Argument types of [`mypgio_function_sql`]'s function, for DROP FUNCTION.
pub const MYPGIO_SIGNATURE: &str = "mypgio(varchar, int, bigint, bigint, int, int, bigint)";

/// The server-side loop in `schema`: pgio's `mypgio` with the same key draw,
/// quota logic and EXECUTEd statements, plus a seventh argument: stop after
/// `v_iterations` loop iterations (0: no limit), and `v_runtime_secs` 0 means
/// no time limit — so a driver can run short, countable slices. The random
/// key is computed inline instead of calling `pgio_get_random_number` (same
/// arithmetic, one object fewer) and the result is OUT columns instead of
/// the `pgio_return` type (nothing else to create and drop).
pub fn mypgio_function_sql(schema: &str) -> String {
    format!(
        r#"CREATE OR REPLACE FUNCTION {schema}.mypgio(
    v_mytab varchar, v_pctupd int, v_runtime_secs bigint, v_scale bigint,
    v_select_batch_size int, v_update_batch_size int, v_iterations bigint,
    OUT loop_iterations bigint, OUT sql_selects bigint, OUT sql_updates bigint,
    OUT select_blk_touch_cnt bigint, OUT update_blk_touch_cnt bigint)
LANGUAGE plpgsql AS $pgio$
DECLARE
    v_end_time timestamp;
    v_scratch bigint;
    v_optype int;
    v_mykey bigint;
    v_op_cnt int := 0;
    v_select_cnt int := 0;
    v_update_cnt int := 0;
    v_update_quota boolean := false;
    v_select_quota boolean := false;
    v_select_only boolean := false;
    v_update_only boolean := false;
BEGIN
    loop_iterations := 0; sql_selects := 0; sql_updates := 0;
    select_blk_touch_cnt := 0; update_blk_touch_cnt := 0;
    CASE
        WHEN v_pctupd = 0 THEN v_select_only := true;
        WHEN v_pctupd = 100 THEN v_update_only := true;
        WHEN v_pctupd > 100 OR v_pctupd < 0 OR v_pctupd BETWEEN 51 AND 99 THEN
            RAISE EXCEPTION 'UPDATE_PCT "%" is not supported (0 to 50, or 100)', v_pctupd;
        ELSE NULL;
    END CASE;
    v_end_time := clock_timestamp() + (v_runtime_secs || ' seconds')::interval;
    WHILE (v_runtime_secs <= 0 OR clock_timestamp()::timestamp < v_end_time)
          AND (v_iterations <= 0 OR loop_iterations < v_iterations) LOOP
        v_mykey := trunc(random() * ((v_scale - v_select_batch_size) - 1) + 1);
        IF v_update_only THEN
            v_optype := 1;
        ELSIF (NOT v_update_only AND NOT v_select_only AND mod(v_mykey, 2) = 0
               AND NOT v_update_quota) OR v_select_quota THEN
            v_optype := 1;
        ELSE
            v_optype := 0;
        END IF;
        IF v_optype = 0 THEN
            EXECUTE 'SELECT sum(scratch) FROM ' || v_mytab || ' WHERE mykey BETWEEN '
                || v_mykey || ' AND ' || v_mykey + v_select_batch_size INTO v_scratch;
            v_select_cnt := v_select_cnt + 1;
            sql_selects := sql_selects + 1;
            select_blk_touch_cnt := select_blk_touch_cnt + v_select_batch_size;
            IF v_select_cnt >= (100 - v_pctupd) THEN v_select_quota := true; END IF;
        ELSE
            EXECUTE 'UPDATE ' || v_mytab || ' SET scratch = scratch + 1 WHERE mykey BETWEEN '
                || v_mykey || ' AND ' || v_mykey + v_update_batch_size;
            v_update_cnt := v_update_cnt + 1;
            sql_updates := sql_updates + 1;
            update_blk_touch_cnt := update_blk_touch_cnt + v_update_batch_size;
            IF v_update_cnt >= v_pctupd THEN v_update_quota := true; END IF;
        END IF;
        v_op_cnt := v_op_cnt + 1;
        loop_iterations := loop_iterations + 1;
        IF v_op_cnt >= 100 THEN
            v_op_cnt := 0; v_select_cnt := 0; v_update_cnt := 0;
            v_update_quota := false; v_select_quota := false;
        END IF;
    END LOOP;
END;
$pgio$"#
    )
}

/// One call of mypgio on `table`: `iterations` loop iterations, no time limit.
pub fn mypgio_call_sql(
    table: &str,
    pct: u8,
    blocks: u64,
    work_unit: u32,
    update_work_unit: u32,
    iterations: u64,
) -> String {
    format!(
        "SELECT loop_iterations, sql_selects, sql_updates FROM mypgio('{table}', {pct}, 0, {blocks}, {work_unit}, {update_work_unit}, {iterations})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    #[test]
    fn one_row_per_block_at_fillfactor_10() {
        assert_eq!(rows_per_block(FILLFACTOR), 1);
        // 7 × 1076 bytes fill an 8168-byte page at fillfactor 100; 50% leaves room for 3.
        assert_eq!(rows_per_block(100), 7);
        assert_eq!(rows_per_block(50), 3);
        assert_eq!(blocks_for_bytes(1 << 30), 131_072);
        assert_eq!(blocks_for_bytes(8 << 30), 1_048_576);
        assert_eq!(rows_for_blocks(8192), 8192);
    }

    #[test]
    fn update_share_is_exactly_pct_per_window() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for pct in [0u8, 1, 10, 25, 50, 100] {
            let mut mix = PgioMix::new(pct);
            let n = 100_000;
            let mut updates = 0;
            for i in 0..n {
                let d = draw(&mut rng, &mut mix, 10_000, WORK_UNIT, UPDATE_WORK_UNIT);
                if d.op == PgioOp::Update {
                    updates += 1;
                }
                if (i + 1) % 100 == 0 {
                    assert_eq!(updates, (i + 1) / 100 * u32::from(pct), "pct {pct}");
                }
            }
            assert_eq!(updates, n / 100 * u32::from(pct));
        }
    }

    #[test]
    fn updates_come_from_even_keys_until_the_quota() {
        let mut mix = PgioMix::new(25);
        // Odd keys: selects until 75 selects are done, then updates.
        let ops: Vec<PgioOp> = (0..100).map(|_| mix.next(1)).collect();
        assert!(ops[..75].iter().all(|o| *o == PgioOp::Select));
        assert!(ops[75..].iter().all(|o| *o == PgioOp::Update));
        // Even keys: updates until 25 are done, then selects.
        let ops: Vec<PgioOp> = (0..100).map(|_| mix.next(2)).collect();
        assert!(ops[..25].iter().all(|o| *o == PgioOp::Update));
        assert!(ops[25..].iter().all(|o| *o == PgioOp::Select));
    }

    #[test]
    fn keys_and_ranges_stay_in_the_table() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(9);
        let mut mix = PgioMix::new(50);
        let rows = 1024;
        let (mut min, mut max) = (i64::MAX, 0);
        for _ in 0..200_000 {
            let d = draw(&mut rng, &mut mix, rows, WORK_UNIT, UPDATE_WORK_UNIT);
            assert!(d.lo >= 1 && d.hi < rows as i64, "{d:?}");
            let w = if d.op == PgioOp::Select { 255 } else { 8 };
            assert_eq!(d.hi - d.lo, w);
            min = min.min(d.lo);
            max = max.max(d.lo);
        }
        // pgio's arithmetic: 1 ..= rows − work_unit − 1.
        assert_eq!((min, max), (1, rows as i64 - 256));
    }

    #[test]
    fn load_order_is_a_permutation_sorted_by_scratch() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let order = load_order(10_000, &mut rng);
        let mut keys: Vec<i64> = order.iter().map(|r| r.0).collect();
        assert!(order.windows(2).all(|w| w[0].1 <= w[1].1));
        assert!(order.iter().all(|r| (0..=SCRATCH_MAX).contains(&r.1)));
        // Random order: few keys sit next to their successor.
        let adjacent = keys.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(adjacent < 10, "{adjacent}");
        keys.sort_unstable();
        assert_eq!(keys, (1..=10_000).collect::<Vec<_>>());
    }

    #[test]
    fn checks_follow_pgio() {
        assert!(check_update_pct(0).is_ok() && check_update_pct(50).is_ok());
        assert!(check_update_pct(100).is_ok());
        assert!(check_update_pct(51).is_err() && check_update_pct(99).is_err());
        assert!(check_blocks(1023, WORK_UNIT).is_err());
        assert!(check_blocks(1024, WORK_UNIT).is_ok());
    }

    #[test]
    fn statements_match_pgio() {
        assert_eq!(
            PgioOp::Select.sql("pgio3"),
            "SELECT sum(scratch) FROM pgio3 WHERE mykey BETWEEN $1 AND $2"
        );
        assert_eq!(
            PgioOp::Update.sql("pgio3"),
            "UPDATE pgio3 SET scratch = scratch + 1 WHERE mykey BETWEEN $1 AND $2"
        );
        assert!(create_table_sql("s.pgio1").ends_with("WITH (fillfactor=10)"));
        let f = mypgio_function_sql("s");
        assert!(f.starts_with("CREATE OR REPLACE FUNCTION s.mypgio("));
        assert!(f.contains("v_select_cnt >= (100 - v_pctupd)"));
        assert_eq!(
            mypgio_call_sql("pgio1", 0, 8192, 255, 8, 100),
            "SELECT loop_iterations, sql_selects, sql_updates FROM mypgio('pgio1', 0, 0, 8192, 255, 8, 100)"
        );
    }
}
