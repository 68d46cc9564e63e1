//! PostgreSQL's heap page arithmetic (8 KiB pages): how many tuples of a size fit a
//! page at a fillfactor, and what a table of rows takes. Shared by the load-size
//! estimates and the workload models that size their tables by pages (pgio).

/// PostgreSQL's page size.
pub const PAGE: u64 = 8192;
/// Page header bytes.
const PAGE_HEADER: u64 = 24;
/// Line pointer bytes per tuple.
const LINE_POINTER: u64 = 4;

/// Rows PostgreSQL puts in one heap page at `fillfactor` for tuples of
/// `tuple` bytes (MAXALIGNed, without the line pointer): a page takes another
/// tuple while `tuple + reserved <= free - line pointer`
/// (`RelationGetBufferForTuple`); an empty page always takes one.
pub fn heap_rows_per_page(tuple: u64, fillfactor: u8) -> u64 {
    let reserved = PAGE * (100 - u64::from(fillfactor.clamp(10, 100))) / 100;
    let mut free = PAGE - PAGE_HEADER;
    let mut rows = 0;
    loop {
        let fits = free.saturating_sub(LINE_POINTER) >= tuple + reserved;
        if rows > 0 && !fits {
            return rows;
        }
        rows += 1;
        free = free.saturating_sub(tuple + LINE_POINTER);
    }
}

/// Heap bytes of `rows` tuples of `tuple` bytes at `fillfactor`.
pub fn heap_bytes(rows: u64, tuple: u64, fillfactor: u8) -> u64 {
    rows.div_ceil(heap_rows_per_page(tuple, fillfactor))
        .saturating_mul(PAGE)
}
