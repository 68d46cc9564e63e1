//! The workloads' tables in the server's catalog, always schema-qualified:
//! which exist, their fillfactor, the schema csdchar creates (and marks), and
//! dropping only what csdchar made. Shared by every workload's prepare, run
//! and cleanup.

use csdchar_pgwire::client::{Client, connect};

use csdchar_pgwire::error::{DbError, db_err};

/// Which of the tables `names` exist in `schema` (tables of the same name in
/// other schemas are not the workload's and never count).
pub async fn existing_tables(
    client: &Client,
    schema: &str,
    names: &[String],
) -> Result<Vec<String>, DbError> {
    let rows = client
        .query(
            "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relkind IN ('r', 'p') AND n.nspname = $1 AND c.relname = ANY($2) ORDER BY c.relname",
            &[&schema, &names.to_vec()],
        )
        .await
        .map_err(|e| db_err("listing tables", e))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// The effective fillfactor of `schema.table` (100, PostgreSQL's default
/// for tables, when none is set).
pub async fn table_fillfactor(client: &Client, schema: &str, table: &str) -> Result<u8, DbError> {
    let row = client
        .query_one(
            "SELECT COALESCE((SELECT substr(o, 12)::int FROM unnest(c.reloptions) o \
             WHERE o LIKE 'fillfactor=%'), 100) FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2",
            &[&schema, &table],
        )
        .await
        .map_err(|e| db_err(&format!("reading the fillfactor of {schema}.{table}"), e))?;
    let ff: i32 = row.get(0);
    Ok(ff.clamp(10, 100) as u8)
}

/// Creates `schema` if it is missing (marked as csdchar's, so cleanup may
/// drop it again once it is empty).
pub async fn ensure_schema(client: &Client, schema: &str) -> Result<(), DbError> {
    let exists = client
        .query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema])
        .await
        .map_err(|e| db_err("looking up the schema", e))?
        .is_some();
    if !exists {
        // Not IF NOT EXISTS (9.3): one created meanwhile by another session
        // (duplicate_schema) is not ours and keeps its comment.
        match client
            .batch_execute(&format!(
                "CREATE SCHEMA {schema}; COMMENT ON SCHEMA {schema} IS '{SCHEMA_MARK}'"
            ))
            .await
        {
            Ok(()) => {}
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::DUPLICATE_SCHEMA) => {}
            Err(e) => return Err(db_err(&format!("creating schema {schema}"), e)),
        }
    }
    Ok(())
}

/// The comment on schemas csdchar created.
const SCHEMA_MARK: &str = "created by csdchar";

/// Drops `tables` of `schema` that exist (qualified: nothing in another schema
/// is touched), then `schema` itself if csdchar created it and it is now
/// empty. Returns the tables dropped, in order.
pub async fn drop_tables(
    conninfo: &str,
    schema: &str,
    tables: &[String],
) -> Result<Vec<String>, DbError> {
    let client = connect(conninfo).await?;
    let existing = existing_tables(&client, schema, tables).await?;
    for t in &existing {
        client
            .batch_execute(&format!("DROP TABLE {schema}.{t}"))
            .await
            .map_err(|e| db_err(&format!("dropping {schema}.{t}"), e))?;
    }
    let ours_and_empty = client
        .query_opt(
            "SELECT 1 FROM pg_namespace n WHERE n.nspname = $1 \
             AND obj_description(n.oid, 'pg_namespace') = $2 \
             AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.relnamespace = n.oid)",
            &[&schema, &SCHEMA_MARK],
        )
        .await
        .map_err(|e| db_err("looking up the schema", e))?
        .is_some();
    if ours_and_empty {
        // RESTRICT (the default): refuses if anything was created in it meanwhile.
        let _ = client.batch_execute(&format!("DROP SCHEMA {schema}")).await;
    }
    Ok(existing)
}
