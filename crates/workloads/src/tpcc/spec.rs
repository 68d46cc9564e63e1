//! What a TPC-C load and run are: the spec, its mode and load method, BenchmarkSQL's
//! names (tables, functions, SQLSTATEs), and the connections the loader and checks use.

use csdchar_core::tpcc::{self, NurandC, TpccMix};
use tokio_postgres::Client;

use csdchar_dbloop::event::Protocol;
use csdchar_pgwire::client::connect;
use csdchar_pgwire::error::{DbError, db_err};

/// What to load and run.
#[derive(Debug, Clone)]
pub struct TpccSpec {
    /// Warehouses (BenchmarkSQL's `warehouses`).
    pub warehouses: u32,
    /// One fillfactor for every table; None: BenchmarkSQL 5.x's per-table ones.
    pub fillfactor: Option<u8>,
    /// The transaction mix.
    pub mix: TpccMix,
    /// Seed of the data and of the terminals' random streams.
    pub seed: u64,
    /// Schema the objects live in (the connections' search_path).
    pub schema: String,
    /// How the transaction calls travel.
    pub protocol: Protocol,
    /// Statements as BenchmarkSQL sends them, or one function call per transaction.
    pub mode: TpccMode,
    /// How rows reach the server at prepare.
    pub load_method: LoadMethod,
    /// The NURand constants the tables were loaded with (`bmsql_config`, see
    /// [`read_config`]); the run's C_LAST constant keeps clause 2.1.6.1's
    /// distance from them. None: those a load with `seed` uses.
    pub c_load: Option<NurandC>,
}

/// How a run sends its transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TpccMode {
    /// BenchmarkSQL 5.0's statements from the client, one round trip each
    /// (`statements`): tpmC comparable with BenchmarkSQL's; needs no
    /// object of csdchar's.
    #[default]
    Statements,
    /// One PL/pgSQL function call per transaction (`procedures`, HammerDB's
    /// way on PostgreSQL): the functions csdchar creates at prepare.
    Procedures,
}

impl TpccMode {
    /// The name results record: `statements` or `procedures`.
    pub fn name(self) -> &'static str {
        match self {
            TpccMode::Statements => "statements",
            TpccMode::Procedures => "procedures",
        }
    }
}

/// How prepare sends rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LoadMethod {
    /// COPY text, one transaction per warehouse, over `jobs` connections.
    #[default]
    Copy,
    /// BenchmarkSQL 5.0's JDBC batch path, for comparison: one connection,
    /// single-row INSERTs sent [`INSERT_BATCH`] at a time in one round trip,
    /// committed every [`INSERT_COMMIT_ROWS`] rows.
    InsertBatch,
}

/// INSERT statements per round trip of [`LoadMethod::InsertBatch`].
pub const INSERT_BATCH: usize = 1_000;
/// Rows per commit of [`LoadMethod::InsertBatch`] (BenchmarkSQL 5.0's).
pub const INSERT_COMMIT_ROWS: usize = 10_000;

/// Seconds per load step, and what was loaded.
#[derive(Debug, Clone, Default)]
pub struct TpccLoadTimes {
    /// Dropping (with `force`), creating tables and functions.
    pub create_s: f64,
    /// COPY of item and warehouses.
    pub load_s: f64,
    /// Primary keys, the two indexes, foreign keys, history id.
    pub keys_s: f64,
    /// VACUUM ANALYZE.
    pub vacuum_s: f64,
    /// Rows loaded.
    pub rows: u64,
    /// Warehouses loaded by this call.
    pub warehouses_loaded: Vec<u32>,
    /// Whether this call loaded the item table (and `bmsql_config`).
    pub item_loaded: bool,
    /// Whether a resume wrote an unusable `bmsql_config` anew (the
    /// warehouses from the tables, the NURand constants of the seed).
    pub config_rewritten: bool,
}

/// What `bmsql_config` says about a loaded database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpccConfig {
    /// `warehouses`.
    pub warehouses: u32,
    /// `nURandCLast`, `nURandCC_ID`, `nURandCI_ID`.
    pub constants: NurandC,
}

/// One consistency condition's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutcome {
    /// Short name (`condition-1` …).
    pub name: &'static str,
    /// The condition.
    pub description: &'static str,
    /// Warehouses or districts violating it (0: it holds).
    pub violations: i64,
}

/// The SQLSTATE New-Order raises for its unused item: the server rolls the
/// transaction back and the runner counts it as an intended rollback.
pub const NEW_ORDER_ROLLBACK: &str = "CSD01";

/// Retried SQLSTATEs: serialization failure, deadlock.
pub const TPCC_RETRY: &[&str] = &["40001", "40P01"];

/// The functions created at prepare, one per transaction, in [`TpccKind`] order.
pub const FUNCTIONS: [&str; 5] = [
    "bmsql_proc_new_order",
    "bmsql_proc_payment",
    "bmsql_proc_order_status",
    "bmsql_proc_delivery",
    "bmsql_proc_stock_level",
];

/// BenchmarkSQL's tables, for snapshots and cleanup.
pub fn table_names() -> Vec<String> {
    tpcc::TABLES.iter().map(|t| t.to_string()).collect()
}

/// `"name"` with embedded quotes doubled.
pub(super) fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Connects with `schema` first in the search_path, so unqualified names
/// land where [`existing_tables`] looks.
/// The `application_name` of this process's load connections, so that an
/// interrupted prepare can cancel what they left running on the server.
pub(super) fn loader_name() -> String {
    format!("csdchar-load-{}", std::process::id())
}

/// A load connection: in `schema`, named [`loader_name`].
pub(super) async fn connect_loader(conninfo: &str, schema: &str) -> Result<Client, DbError> {
    let c = connect_in(conninfo, schema).await?;
    c.batch_execute(&format!("set application_name = '{}'", loader_name()))
        .await
        .map_err(|e| db_err("setting the application_name", e))?;
    Ok(c)
}

pub(super) async fn connect_in(conninfo: &str, schema: &str) -> Result<Client, DbError> {
    let c = connect(conninfo).await?;
    c.batch_execute(&format!("set search_path to {}", quote_ident(schema)))
        .await
        .map_err(|e| db_err("setting the search_path", e))?;
    Ok(c)
}

/// Which load unit a connection works on.
#[derive(Debug, Clone, Copy)]
pub(super) enum Job {
    /// `bmsql_config` and `bmsql_item` (BenchmarkSQL's job 0).
    Item,
    /// One warehouse's rows in all its tables.
    Warehouse(u32),
}
