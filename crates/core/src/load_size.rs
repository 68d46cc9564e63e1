//! What a database load will write and hold in client memory, estimated
//! before it starts: a load that cannot fit is refused up front instead of
//! filling the file system (or the client's memory) hours in.
//!
//! The figures are PostgreSQL 15's on-disk sizes, measured with
//! `pg_total_relation_size` after `csdchar db prepare` on a managed cluster
//! (8 KiB pages): sysbench 1 x 100,000 rows 26.4 MB (heap 22.1 MB, 37 rows a
//! page); pgbench scale 2 31.4 MB; TPC-C 1 warehouse 131.9 MB, of which
//! `bmsql_item` 12.9 MB; pgio 16 MiB 16.9 MB. They cover tables and indexes;
//! WAL is recycled at checkpoints and not counted, so a load that passes this
//! check can still run out of space on a nearly full file system, but one that
//! fails it cannot succeed.

use crate::heap_page::heap_bytes;
use crate::pgio;

/// A B-tree entry on an int4/int8 key, leaf pages at their default 90%:
/// 22.6 bytes a row measured on `sbtest1_pkey` and `pgbench_accounts_pkey`.
const BTREE_BYTES_PER_KEY: u64 = 23;
/// A sysbench row (id, k, c char(120), pad char(60)) as stored: 24-byte
/// header + 4 + 4 + 121 + 61 bytes, MAXALIGNed to 216.
const SYSBENCH_TUPLE: u64 = 216;
/// A `pgbench_accounts` row (aid, bid, abalance, filler char(84)): 121 bytes, MAXALIGNed.
const TPCB_ACCOUNT_TUPLE: u64 = 128;
/// `pgbench_accounts` rows per scale unit.
const TPCB_ACCOUNTS_PER_SCALE: u64 = 100_000;
/// TPC-C heap bytes per warehouse at BenchmarkSQL's per-table fillfactors
/// (118.9 MB a warehouse, 17.4 MB of it indexes).
const TPCC_HEAP_PER_WAREHOUSE: u64 = 101_500_000;
/// TPC-C index bytes per warehouse.
const TPCC_INDEX_PER_WAREHOUSE: u64 = 17_400_000;
/// `bmsql_item` with its key, loaded once whatever the warehouses.
const TPCC_ITEM: u64 = 12_935_168;
/// BenchmarkSQL's per-table fillfactors weighted by heap size (stock 95,
/// order_line 80, customer 90, …): what an explicit fillfactor is relative to.
const TPCC_DEFAULT_FILLFACTOR: u64 = 88;
/// Peak client memory per pgio row while its load order is built: the keys
/// and the sorted scratch values (8 bytes each) and the zipped pairs (16).
const PGIO_ORDER_BYTES_PER_ROW: u64 = 32;

/// What a load writes and buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LoadFootprint {
    /// Bytes of tables and indexes the load leaves on the server's disk.
    pub table_bytes: u64,
    /// Peak bytes the loader holds in the client's memory at once.
    pub client_buffer_bytes: u64,
}

/// sysbench's `prepare`: `tables` x `rows` with the primary key and `k_N`.
pub fn sysbench(tables: u32, rows: u64, fillfactor: Option<u8>) -> LoadFootprint {
    let per_table = heap_bytes(rows, SYSBENCH_TUPLE, fillfactor.unwrap_or(100))
        .saturating_add(rows.saturating_mul(2 * BTREE_BYTES_PER_KEY));
    LoadFootprint {
        table_bytes: per_table.saturating_mul(u64::from(tables)),
        client_buffer_bytes: 0,
    }
}

/// `pgbench -i -s scale`: the accounts dominate (branches and tellers are a page each).
pub fn tpcb(scale: u32, fillfactor: Option<u8>) -> LoadFootprint {
    let rows = u64::from(scale).saturating_mul(TPCB_ACCOUNTS_PER_SCALE);
    LoadFootprint {
        table_bytes: heap_bytes(rows, TPCB_ACCOUNT_TUPLE, fillfactor.unwrap_or(100))
            .saturating_add(rows.saturating_mul(BTREE_BYTES_PER_KEY)),
        client_buffer_bytes: 0,
    }
}

/// BenchmarkSQL's load of `warehouses` warehouses, plus `bmsql_item` when
/// `with_item` (a `--warehouse-range` that does not start at 1 skips it);
/// `fillfactor` None keeps BenchmarkSQL's per-table ones.
pub fn tpcc(warehouses: u32, with_item: bool, fillfactor: Option<u8>) -> LoadFootprint {
    let heap = match fillfactor {
        None => TPCC_HEAP_PER_WAREHOUSE,
        Some(ff) => TPCC_HEAP_PER_WAREHOUSE * TPCC_DEFAULT_FILLFACTOR / u64::from(ff.max(10)),
    };
    let per_warehouse = heap + TPCC_INDEX_PER_WAREHOUSE;
    LoadFootprint {
        table_bytes: per_warehouse
            .saturating_mul(u64::from(warehouses))
            .saturating_add(if with_item { TPCC_ITEM } else { 0 }),
        client_buffer_bytes: 0,
    }
}

/// pgio's setup: `schemas` tables of `blocks` rows, one a block, with their
/// index; `loaders` schemas are loaded at once, each building its load order
/// in memory first.
pub fn pgio(schemas: u32, blocks: u64, loaders: u32) -> LoadFootprint {
    let rows = pgio::rows_for_blocks(blocks);
    let per_schema = heap_bytes(rows, pgio::TUPLE_BYTES, pgio::FILLFACTOR)
        .saturating_add(rows.saturating_mul(BTREE_BYTES_PER_KEY));
    let at_once = u64::from(loaders.clamp(1, schemas.max(1)));
    LoadFootprint {
        table_bytes: per_schema.saturating_mul(u64::from(schemas)),
        client_buffer_bytes: rows
            .saturating_mul(PGIO_ORDER_BYTES_PER_ROW)
            .saturating_mul(at_once),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap_page::heap_rows_per_page;

    /// Within 3% of what the measured loads (module doc) left on disk.
    fn near(estimate: u64, measured: u64) -> bool {
        (estimate as f64 / measured as f64 - 1.0).abs() < 0.03
    }

    #[test]
    fn estimates_match_the_measured_loads() {
        assert!(near(sysbench(1, 100_000, None).table_bytes, 26_386_432));
        assert!(near(tpcb(2, None).table_bytes, 31_408_128 + 4 * 57_344));
        assert!(near(tpcc(1, true, None).table_bytes, 131_858_432));
        assert!(near(pgio(1, 2048, 2).table_bytes, 16_883_712 + 65_536));
    }

    #[test]
    fn the_page_model_counts_rows_as_postgresql_does() {
        assert_eq!(heap_rows_per_page(SYSBENCH_TUPLE, 100), 37);
        assert_eq!(heap_rows_per_page(TPCB_ACCOUNT_TUPLE, 100), 61);
        assert_eq!(heap_rows_per_page(pgio::TUPLE_BYTES, 10), 1);
        assert_eq!(heap_rows_per_page(pgio::TUPLE_BYTES, 100), 7);
    }

    #[test]
    fn lower_fillfactor_writes_more_and_sizes_never_overflow() {
        assert!(
            sysbench(4, 1_000_000, Some(70)).table_bytes > sysbench(4, 1_000_000, None).table_bytes
        );
        assert!(tpcc(10, true, Some(50)).table_bytes > tpcc(10, true, None).table_bytes);
        let huge = pgio(u32::MAX, u64::MAX / 8192, u32::MAX);
        assert_eq!(huge.table_bytes, u64::MAX);
        // 100 TiB of pgio: ~13.4 G rows, 32 bytes each while ordering.
        let p = pgio(1, pgio::blocks_for_bytes(100 << 40), 2);
        assert_eq!(p.client_buffer_bytes, (100u64 << 40) / 8192 * 32);
    }
}
