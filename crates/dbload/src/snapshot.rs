//! The correlation snapshot: database-side and device-side figures at one
//! moment, taken before and after every run step.

use std::collections::BTreeMap;
use std::path::Path;

use csdchar_core::result::db::{DbSnapshot, RelationSize};
use tokio_postgres::Client;

use csdchar_pgwire::dialect::Dialect;

/// Numeric columns of a one-row query as name → value (non-numeric ones skipped).
async fn numeric_row(client: &Client, sql: &str) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    let Ok(rows) = client.simple_query(sql).await else {
        return out;
    };
    for msg in rows {
        if let tokio_postgres::SimpleQueryMessage::Row(row) = msg {
            for (i, col) in row.columns().iter().enumerate() {
                if let Some(v) = row.get(i).and_then(|t| t.parse::<i64>().ok()) {
                    out.insert(col.name().to_string(), v);
                }
            }
        }
    }
    out
}

/// Takes a snapshot of the database and of the workload's tables `names`;
/// figures the server does not grant, or lacks (see `dialect`), stay empty or null.
pub async fn take(client: &Client, dialect: &Dialect, names: &[String]) -> DbSnapshot {
    let relations = client
        .query(
            "SELECT relname::text, pg_relation_size(oid)::bigint, pg_indexes_size(oid)::bigint, \
             COALESCE(pg_total_relation_size(NULLIF(reltoastrelid, 0)), 0)::bigint \
             FROM pg_class WHERE relkind = 'r' AND relname = ANY($1) \
             AND relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) ORDER BY relname",
            &[&names.to_vec()],
        )
        .await
        .map(|rows| {
            rows.iter()
                .map(|r| RelationSize {
                    name: r.get(0),
                    table_bytes: r.get(1),
                    index_bytes: r.get(2),
                    toast_bytes: r.get(3),
                })
                .collect()
        })
        .unwrap_or_default();
    let database_bytes = client
        .query_one("SELECT pg_database_size(current_database())::bigint", &[])
        .await
        .map(|r| r.get(0))
        .unwrap_or(-1);
    let stat_database = match dialect.stat_database_sql() {
        Some(sql) => numeric_row(client, &sql).await,
        None => BTreeMap::new(),
    };
    let mut bgwriter = if dialect.stat_bgwriter {
        numeric_row(client, "SELECT * FROM pg_stat_bgwriter").await
    } else {
        BTreeMap::new()
    };
    if dialect.stat_checkpointer {
        bgwriter.extend(
            numeric_row(client, "SELECT * FROM pg_stat_checkpointer")
                .await
                .into_iter()
                .map(|(k, v)| (format!("checkpointer_{k}"), v)),
        );
    }
    let wal_lsn_bytes = wal_bytes(client, dialect).await;
    let data_directory: Option<String> = client
        .query_one("SHOW data_directory", &[])
        .await
        .ok()
        .map(|r| r.get(0));
    let device = data_directory.as_deref().and_then(|d| {
        csdchar_devices::Sysfs::from_env()
            .snapshot_of(Path::new(d))
            .ok()
    });
    DbSnapshot {
        taken_at: humantime_now(),
        database_bytes,
        relations,
        stat_database,
        wal_lsn_bytes,
        bgwriter,
        data_directory,
        device,
    }
}

/// The server's WAL position in bytes (by the functions the dialect found);
/// None without them or when the server refuses (a standby in recovery).
pub async fn wal_bytes(client: &Client, dialect: &Dialect) -> Option<i64> {
    let sql = dialect.wal_bytes_sql()?;
    client
        .query_one(sql.as_str(), &[])
        .await
        .ok()
        .map(|r| r.get(0))
}

/// Bytes of the server's WAL directory (`pg_ls_waldir()`: PostgreSQL 10
/// and later, superusers and pg_monitor members); None when the server
/// lacks it or does not grant it.
pub async fn wal_dir_bytes(client: &Client, dialect: &Dialect) -> Option<i64> {
    if !dialect.wal_dir_listing {
        return None;
    }
    client
        .query_one(
            "SELECT COALESCE(sum(size), 0)::bigint FROM pg_ls_waldir()",
            &[],
        )
        .await
        .ok()
        .map(|r| r.get(0))
}

fn humantime_now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// The files (all 1 GiB segments) of the tables, their indexes and TOAST tables.
pub async fn relation_files(
    client: &Client,
    tables: &[String],
    data_dir: &std::path::Path,
) -> Vec<std::path::PathBuf> {
    let Ok(rows) = client
        .query(
            "WITH t AS (SELECT oid, reltoastrelid FROM pg_class WHERE relkind = 'r' AND relname = ANY($1) \
               AND relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())) \
             SELECT pg_relation_filepath(c.oid) FROM pg_class c \
             WHERE c.oid IN (SELECT oid FROM t) \
             OR c.oid IN (SELECT i.indexrelid FROM pg_index i WHERE i.indrelid IN (SELECT oid FROM t) \
                          OR i.indrelid IN (SELECT reltoastrelid FROM t)) \
             OR c.oid IN (SELECT reltoastrelid FROM t)",
            &[&tables.to_vec()],
        )
        .await
    else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for r in rows {
        let Some(rel): Option<String> = r.get(0) else {
            continue;
        };
        // Every fork (main, free space map, visibility map, init), every 1 GiB segment.
        for fork in ["", "_fsm", "_vm", "_init"] {
            let base = data_dir.join(format!("{rel}{fork}"));
            if base.is_file() {
                files.push(base.clone());
            }
            for seg in 1.. {
                let p = std::path::PathBuf::from(format!("{}.{seg}", base.display()));
                if !p.is_file() {
                    break;
                }
                files.push(p);
            }
        }
    }
    files
}

/// One relation file's identity, as the server names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationName {
    /// Database OID of the file's directory; None for shared catalogs (`global`).
    pub db: Option<u32>,
    /// The file's relfilenode.
    pub relfilenode: u32,
    /// `schema.name`.
    pub name: String,
    /// For TOAST tables and their indexes: the owning table's `schema.name`.
    pub toast_of: Option<String>,
}

/// Names of the relations of the connected database and the shared catalogs,
/// keyed the way files are (`base/<db oid>/<relfilenode>`, `global/<relfilenode>`).
/// Other databases' files stay unnamed: their catalogs need their own connection.
pub async fn relation_names(client: &Client) -> Result<Vec<RelationName>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT CASE WHEN c.relisshared THEN NULL \
                    ELSE (SELECT oid FROM pg_database WHERE datname = current_database()) END::oid, \
                    pg_relation_filenode(c.oid)::oid, \
                    n.nspname || '.' || c.relname, \
                    (SELECT tn.nspname || '.' || t.relname FROM pg_class t JOIN pg_namespace tn ON tn.oid = t.relnamespace \
                      WHERE t.reltoastrelid = c.oid \
                         OR t.reltoastrelid = (SELECT i.indrelid FROM pg_index i WHERE i.indexrelid = c.oid)) \
             FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE pg_relation_filenode(c.oid) IS NOT NULL",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| RelationName {
            db: r.get::<_, Option<u32>>(0),
            relfilenode: r.get(1),
            name: r.get(2),
            toast_of: r.get(3),
        })
        .collect())
}

/// Fills in the relation names (and TOAST owners) of an estimate of a data
/// directory from its server at `url` (blocking: `csdchar estimate --url`).
pub fn name_relations(
    url: &str,
    pg: &mut csdchar_core::estimate::PgBreakdown,
) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let names = rt.block_on(async {
        let client = csdchar_pgwire::client::connect(url)
            .await
            .map_err(|e| e.message)?;
        relation_names(&client)
            .await
            .map_err(|e| format!("reading pg_class: {e}"))
    })?;
    let by_file: BTreeMap<(Option<u32>, u32), &RelationName> =
        names.iter().map(|n| ((n.db, n.relfilenode), n)).collect();
    for rel in &mut pg.relations {
        if let Some(n) = by_file.get(&(rel.db, rel.relfilenode)) {
            rel.name = Some(n.name.clone());
            rel.toast_of = n.toast_of.clone();
        }
    }
    Ok(())
}
