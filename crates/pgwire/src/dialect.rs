//! The server dialect: what the connected server has, found by catalog
//! probes, in one place. PostgreSQL from 9.2 on and openGauss (PostgreSQL
//! 9.2-based, `server_version` 9.2.4) differ in what snapshots and loaders
//! may use: the WAL position functions (`pg_current_wal_lsn`/`pg_wal_lsn_diff`
//! from PostgreSQL 10, `pg_current_xlog_location`/`pg_xlog_location_diff`
//! before and in openGauss), `pg_ls_waldir` (10), `pg_stat_checkpointer`
//! (17), columns of `pg_stat_database` and `pg_stat_activity`, COPY FREEZE
//! (9.3) and ON CONFLICT (9.5) — and openGauss's compatibility mode A, where
//! `''` is NULL, which would silently change the data the loaders write.
//!
//! Functions, views and columns are looked up in `pg_proc`, `pg_class` and
//! `pg_attribute` (no `to_regproc`/`to_regclass`, which 9.2 lacks). Only
//! pure syntax, which no catalog shows, goes by `server_version_num`: COPY
//! FREEZE from 90300, ON CONFLICT from 90500 (openGauss reports 90204).

use tokio_postgres::{Client, SimpleQueryMessage};

use crate::error::{DbError, db_err};

/// Which server family answered (from `version()`; informational — what the
/// layer uses comes from the catalog probes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    /// PostgreSQL (or anything that does not say otherwise).
    PostgreSql,
    /// openGauss (`version()` contains "openGauss").
    OpenGauss,
}

impl ServerKind {
    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::PostgreSql => "PostgreSQL",
            ServerKind::OpenGauss => "openGauss",
        }
    }
}

/// The pair of functions that give the WAL position in bytes:
/// `SELECT {diff}({position}(), '0/0')::bigint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalFunctions {
    /// `pg_current_wal_lsn` or `pg_current_xlog_location`.
    pub position: &'static str,
    /// `pg_wal_lsn_diff` or `pg_xlog_location_diff`.
    pub diff: &'static str,
}

impl WalFunctions {
    /// PostgreSQL 10 and later.
    pub const WAL: WalFunctions = WalFunctions {
        position: "pg_current_wal_lsn",
        diff: "pg_wal_lsn_diff",
    };
    /// PostgreSQL 9.x and openGauss (text positions before 9.4's pg_lsn;
    /// the diff function takes either).
    pub const XLOG: WalFunctions = WalFunctions {
        position: "pg_current_xlog_location",
        diff: "pg_xlog_location_diff",
    };

    /// The query of the current WAL position in bytes (one bigint).
    pub fn bytes_sql(&self) -> String {
        format!("SELECT {}({}(), '0/0')::bigint", self.diff, self.position)
    }
}

/// The `pg_stat_database` columns a snapshot records, where present.
pub const STAT_DATABASE_COLUMNS: [&str; 12] = [
    "numbackends",
    "xact_commit",
    "xact_rollback",
    "blks_read",
    "blks_hit",
    "tup_returned",
    "tup_fetched",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
    "temp_bytes",
    "deadlocks",
];

/// Of [`STAT_DATABASE_COLUMNS`], those older servers lack (added in 9.2);
/// [`Feature::StatDatabaseColumns`] hides them.
pub const STAT_DATABASE_NEWER: [&str; 2] = ["temp_bytes", "deadlocks"];

/// Something a server may lack; [`Dialect::without`] hides it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// `COPY … FREEZE` (9.3).
    CopyFreeze,
    /// `INSERT … ON CONFLICT` (9.5).
    OnConflict,
    /// A pair of WAL position functions.
    WalPosition,
    /// `pg_ls_waldir()` (10).
    WalDirListing,
    /// `pg_stat_checkpointer` (17).
    StatCheckpointer,
    /// `pg_stat_bgwriter` (8.3).
    StatBgwriter,
    /// The newer `pg_stat_database` columns ([`STAT_DATABASE_NEWER`]).
    StatDatabaseColumns,
    /// `pg_stat_activity.backend_type` (10).
    BackendType,
}

impl Feature {
    /// Every feature.
    pub const ALL: [Feature; 8] = [
        Feature::CopyFreeze,
        Feature::OnConflict,
        Feature::WalPosition,
        Feature::WalDirListing,
        Feature::StatCheckpointer,
        Feature::StatBgwriter,
        Feature::StatDatabaseColumns,
        Feature::BackendType,
    ];
}

/// What the connected server has, as the probes found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialect {
    /// PostgreSQL or openGauss.
    pub kind: ServerKind,
    /// The database connected to (`current_database()`).
    pub database: String,
    /// `server_version` as reported (openGauss: 9.2.4).
    pub server_version: String,
    /// `server_version_num` (90204, 150003, …).
    pub version_num: u32,
    /// openGauss's `pg_database.datcompatibility` of this database (A, B, C,
    /// PG); None where the column does not exist.
    pub compatibility: Option<String>,
    /// `SELECT ''::text IS NULL` is true (openGauss compatibility A).
    pub empty_string_is_null: bool,
    /// `COPY … FREEZE` is accepted (server_version_num ≥ 90300).
    pub copy_freeze: bool,
    /// `INSERT … ON CONFLICT` is accepted (server_version_num ≥ 90500).
    pub on_conflict: bool,
    /// The WAL position functions found in pg_catalog; None: neither pair.
    pub wal: Option<WalFunctions>,
    /// `pg_catalog.pg_ls_waldir()` exists.
    pub wal_dir_listing: bool,
    /// `pg_catalog.pg_stat_checkpointer` exists.
    pub stat_checkpointer: bool,
    /// `pg_catalog.pg_stat_bgwriter` exists.
    pub stat_bgwriter: bool,
    /// Of [`STAT_DATABASE_COLUMNS`], those `pg_stat_database` has, in that order.
    pub stat_database_columns: Vec<String>,
    /// `pg_stat_activity.backend_type` exists.
    pub activity_backend_type: bool,
}

/// One catalog query for everything that is a name in pg_catalog: kind
/// ('f' function, 'r' relation, 'c' column), relation, name. Works on 9.2.
const CATALOG_PROBE: &str = "\
SELECT 'f', '', p.proname::text FROM pg_catalog.pg_proc p \
  JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace \
  WHERE n.nspname = 'pg_catalog' AND p.proname IN \
  ('pg_current_wal_lsn', 'pg_wal_lsn_diff', 'pg_current_xlog_location', 'pg_xlog_location_diff', 'pg_ls_waldir') \
UNION ALL \
SELECT 'r', '', c.relname::text FROM pg_catalog.pg_class c \
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
  WHERE n.nspname = 'pg_catalog' AND c.relname IN ('pg_stat_checkpointer', 'pg_stat_bgwriter') \
UNION ALL \
SELECT 'c', c.relname::text, a.attname::text FROM pg_catalog.pg_attribute a \
  JOIN pg_catalog.pg_class c ON c.oid = a.attrelid \
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
  WHERE n.nspname = 'pg_catalog' AND c.relname IN ('pg_database', 'pg_stat_database', 'pg_stat_activity') \
  AND a.attnum > 0 AND NOT a.attisdropped";

/// The text rows of a simple query (NULL as None).
async fn text_rows(
    client: &Client,
    what: &str,
    sql: &str,
) -> Result<Vec<Vec<Option<String>>>, DbError> {
    let msgs = client
        .simple_query(sql)
        .await
        .map_err(|e| db_err(what, e))?;
    Ok(msgs
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect())
}

/// `server_version_num` from a `server_version` string, for servers that
/// do not report it: "9.2.4" → 90204, "15.3" → 150003, "16beta1" → 160000.
pub fn parse_version_num(version: &str) -> Option<u32> {
    let leading = |s: &str| -> Option<u32> {
        let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    let mut parts = version.trim().split('.');
    let major = leading(parts.next()?)?;
    let second = parts.next().and_then(leading);
    if major >= 10 {
        Some(major * 10_000 + second.unwrap_or(0))
    } else {
        let third = parts.next().and_then(leading);
        Some(major * 10_000 + second.unwrap_or(0) * 100 + third.unwrap_or(0))
    }
}

/// `"name"` when `name` is not a plain lower-case identifier.
fn ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

impl Dialect {
    /// Probes the server `client` is connected to (a few catalog queries,
    /// all valid on PostgreSQL 9.2 and openGauss).
    pub async fn probe(client: &Client) -> Result<Dialect, DbError> {
        let what = "probing the server";
        let basics = text_rows(
            client,
            what,
            "SELECT current_database()::text, current_setting('server_version'), version(), \
             CASE WHEN ''::text IS NULL THEN 't' ELSE 'f' END",
        )
        .await?;
        let row = basics
            .into_iter()
            .next()
            .ok_or_else(|| DbError::other(format!("{what}: no row")))?;
        let field = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        let (database, server_version, version) = (field(0), field(1), field(2));
        let empty_string_is_null = field(3) == "t";
        // server_version_num exists from 8.2 on; parse server_version where it does not.
        let version_num = text_rows(
            client,
            what,
            "SELECT setting FROM pg_catalog.pg_settings WHERE name = 'server_version_num'",
        )
        .await?
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .and_then(|s| s.trim().parse().ok())
        .or_else(|| parse_version_num(&server_version))
        .unwrap_or(0);
        let kind = if version.contains("openGauss") {
            ServerKind::OpenGauss
        } else {
            ServerKind::PostgreSql
        };
        let mut functions = Vec::new();
        let mut relations = Vec::new();
        let mut columns: Vec<(String, String)> = Vec::new();
        for r in text_rows(client, what, CATALOG_PROBE).await? {
            let get = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
            match get(0).as_str() {
                "f" => functions.push(get(2)),
                "r" => relations.push(get(2)),
                _ => columns.push((get(1), get(2))),
            }
        }
        let has_column = |rel: &str, col: &str| columns.iter().any(|(r, c)| r == rel && c == col);
        let compatibility = if has_column("pg_database", "datcompatibility") {
            text_rows(
                client,
                what,
                "SELECT datcompatibility::text FROM pg_catalog.pg_database \
                 WHERE datname = current_database()",
            )
            .await?
            .first()
            .and_then(|r| r.first().cloned().flatten())
        } else {
            None
        };
        let has_fn = |f: &str| functions.iter().any(|x| x == f);
        let wal = [WalFunctions::WAL, WalFunctions::XLOG]
            .into_iter()
            .find(|w| has_fn(w.position) && has_fn(w.diff));
        Ok(Dialect {
            kind,
            database,
            server_version,
            version_num,
            compatibility,
            empty_string_is_null,
            copy_freeze: version_num >= 90300,
            on_conflict: version_num >= 90500,
            wal,
            wal_dir_listing: has_fn("pg_ls_waldir"),
            stat_checkpointer: relations.iter().any(|r| r == "pg_stat_checkpointer"),
            stat_bgwriter: relations.iter().any(|r| r == "pg_stat_bgwriter"),
            stat_database_columns: STAT_DATABASE_COLUMNS
                .iter()
                .filter(|c| has_column("pg_stat_database", c))
                .map(|c| c.to_string())
                .collect(),
            activity_backend_type: has_column("pg_stat_activity", "backend_type"),
        })
    }

    /// Connects to `conninfo` and probes (for callers without a connection).
    pub async fn probe_conninfo(conninfo: &str) -> Result<Dialect, DbError> {
        let client = crate::client::connect(conninfo).await?;
        Dialect::probe(&client).await
    }

    /// The same dialect with `absent` hidden: emulates a server that lacks
    /// them (the code paths openGauss and old PostgreSQL take, on any server).
    pub fn without(mut self, absent: &[Feature]) -> Self {
        for f in absent {
            match f {
                Feature::CopyFreeze => self.copy_freeze = false,
                Feature::OnConflict => self.on_conflict = false,
                Feature::WalPosition => self.wal = None,
                Feature::WalDirListing => self.wal_dir_listing = false,
                Feature::StatCheckpointer => self.stat_checkpointer = false,
                Feature::StatBgwriter => self.stat_bgwriter = false,
                Feature::StatDatabaseColumns => self
                    .stat_database_columns
                    .retain(|c| !STAT_DATABASE_NEWER.contains(&c.as_str())),
                Feature::BackendType => self.activity_backend_type = false,
            }
        }
        self
    }

    /// Whether the loaders may write here: refused where `''` is NULL
    /// (openGauss compatibility A), which would store NULL for the
    /// workloads' empty strings. The message names the database, the mode
    /// and the fix.
    pub fn check_loadable(&self) -> Result<(), DbError> {
        if !self.empty_string_is_null {
            return Ok(());
        }
        let db = &self.database;
        let mode = match &self.compatibility {
            Some(m) => format!("compatibility mode {m} (pg_database.datcompatibility)"),
            None => "its compatibility mode".to_string(),
        };
        let new_db = format!("{db}_pg");
        Err(DbError::other(format!(
            "database {db} treats '' as NULL ({} {}, {mode}): the workloads' empty strings \
             (pgbench's filler, the column defaults) would be stored as NULL and change the data, \
             so nothing was created; create a PostgreSQL-compatible database and connect to it: \
             CREATE DATABASE {} DBCOMPATIBILITY 'PG'; then use dbname={new_db} in --url",
            self.kind.name(),
            self.server_version,
            ident(&new_db),
        )))
    }

    /// The snapshot's `pg_stat_database` query over the columns present;
    /// None when none are.
    pub fn stat_database_sql(&self) -> Option<String> {
        (!self.stat_database_columns.is_empty()).then(|| {
            format!(
                "SELECT {} FROM pg_stat_database WHERE datname = current_database()",
                self.stat_database_columns.join(", ")
            )
        })
    }

    /// The WAL position query (bytes since 0/0); None without the functions.
    pub fn wal_bytes_sql(&self) -> Option<String> {
        self.wal.map(|w| w.bytes_sql())
    }

    /// The count of other client sessions in the current database with this
    /// session's `application_name`: csdchar's clients all run with one
    /// (`csdchar`, `PGAPPNAME` or the URL's), and a `--hosts` controller gives
    /// each host its own, so one load host does not wait for another's clients.
    /// Without `backend_type` (before 10, openGauss), every such session but
    /// autovacuum's counts.
    pub fn other_clients_sql(&self) -> &'static str {
        if self.activity_backend_type {
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND backend_type = 'client backend' AND pid <> pg_backend_pid() \
             AND application_name = current_setting('application_name')"
        } else {
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND pid <> pg_backend_pid() AND query NOT LIKE 'autovacuum:%' \
             AND application_name = current_setting('application_name')"
        }
    }

    /// One line: server, version, database, and what it has and lacks.
    pub fn describe(&self) -> String {
        let mut has = Vec::new();
        let mut lacks = Vec::new();
        let mut sort = |present: bool, what: String| {
            if present { &mut has } else { &mut lacks }.push(what);
        };
        sort(self.copy_freeze, "COPY FREEZE".into());
        sort(self.on_conflict, "ON CONFLICT".into());
        match self.wal {
            Some(w) => sort(true, format!("WAL position by {}/{}", w.position, w.diff)),
            None => sort(false, "WAL position functions".into()),
        }
        sort(self.wal_dir_listing, "pg_ls_waldir".into());
        sort(self.stat_bgwriter, "pg_stat_bgwriter".into());
        sort(self.stat_checkpointer, "pg_stat_checkpointer".into());
        sort(
            self.activity_backend_type,
            "pg_stat_activity.backend_type".into(),
        );
        let missing: Vec<&str> = STAT_DATABASE_COLUMNS
            .iter()
            .copied()
            .filter(|c| !self.stat_database_columns.iter().any(|x| x == c))
            .collect();
        if !missing.is_empty() {
            lacks.push(format!("pg_stat_database.{}", missing.join("/")));
        }
        let mut s = format!(
            "{} {} ({}), database {}",
            self.kind.name(),
            self.server_version,
            self.version_num,
            self.database
        );
        if let Some(m) = &self.compatibility {
            s.push_str(&format!(", compatibility {m}"));
        }
        if self.empty_string_is_null {
            s.push_str(", '' is NULL");
        }
        if !has.is_empty() {
            s.push_str(&format!("; has {}", has.join(", ")));
        }
        if !lacks.is_empty() {
            s.push_str(&format!("; lacks {}", lacks.join(", ")));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the probe finds on PostgreSQL 15 (pure: no server).
    fn pg15() -> Dialect {
        Dialect {
            kind: ServerKind::PostgreSql,
            database: "postgres".into(),
            server_version: "15.3".into(),
            version_num: 150003,
            compatibility: None,
            empty_string_is_null: false,
            copy_freeze: true,
            on_conflict: true,
            wal: Some(WalFunctions::WAL),
            wal_dir_listing: true,
            stat_checkpointer: false,
            stat_bgwriter: true,
            stat_database_columns: STAT_DATABASE_COLUMNS
                .iter()
                .map(|c| c.to_string())
                .collect(),
            activity_backend_type: true,
        }
    }

    /// What it finds on openGauss in its default compatibility mode.
    fn opengauss_a() -> Dialect {
        Dialect {
            kind: ServerKind::OpenGauss,
            server_version: "9.2.4".into(),
            version_num: 90204,
            compatibility: Some("A".into()),
            empty_string_is_null: true,
            copy_freeze: false,
            on_conflict: false,
            wal: Some(WalFunctions::XLOG),
            wal_dir_listing: false,
            activity_backend_type: false,
            ..pg15()
        }
    }

    #[test]
    fn version_numbers_parse_like_server_version_num() {
        assert_eq!(parse_version_num("9.2.4"), Some(90204));
        assert_eq!(parse_version_num("9.6"), Some(90600));
        assert_eq!(parse_version_num("15.3"), Some(150003));
        assert_eq!(parse_version_num("16beta1"), Some(160000));
        assert_eq!(
            parse_version_num("17.2 (Debian 17.2-1.pgdg120+1)"),
            Some(170002)
        );
        assert_eq!(parse_version_num("openGauss"), None);
        assert_eq!(parse_version_num(""), None);
    }

    #[test]
    fn wal_queries_name_the_found_functions() {
        assert_eq!(
            pg15().wal_bytes_sql().unwrap(),
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint"
        );
        assert_eq!(
            opengauss_a().wal_bytes_sql().unwrap(),
            "SELECT pg_xlog_location_diff(pg_current_xlog_location(), '0/0')::bigint"
        );
        assert_eq!(
            pg15().without(&[Feature::WalPosition]).wal_bytes_sql(),
            None
        );
    }

    #[test]
    fn without_hides_each_feature() {
        let d = pg15().without(&Feature::ALL);
        assert!(!d.copy_freeze && !d.on_conflict && d.wal.is_none() && !d.wal_dir_listing);
        assert!(!d.stat_checkpointer && !d.stat_bgwriter && !d.activity_backend_type);
        assert_eq!(d.stat_database_columns.len(), 10);
        assert!(
            !d.stat_database_sql().unwrap().contains("deadlocks")
                && d.stat_database_sql().unwrap().contains("blks_read")
        );
        assert!(!d.other_clients_sql().contains("backend_type"));
        assert!(pg15().other_clients_sql().contains("backend_type"));
        // Hiding changes nothing else.
        let d = pg15().without(&[Feature::CopyFreeze]);
        assert_eq!(
            d,
            Dialect {
                copy_freeze: false,
                ..pg15()
            }
        );
        let none = Dialect {
            stat_database_columns: Vec::new(),
            ..pg15()
        };
        assert_eq!(none.stat_database_sql(), None);
    }

    #[test]
    fn empty_string_as_null_is_refused_with_the_fix() {
        assert!(pg15().check_loadable().is_ok());
        let e = opengauss_a().check_loadable().unwrap_err().message;
        for part in [
            "database postgres",
            "compatibility mode A",
            "openGauss 9.2.4",
            "CREATE DATABASE postgres_pg DBCOMPATIBILITY 'PG'",
            "dbname=postgres_pg",
            "nothing was created",
        ] {
            assert!(e.contains(part), "{part}: {e}");
        }
        // openGauss in PG mode loads.
        let pg_mode = Dialect {
            compatibility: Some("PG".into()),
            empty_string_is_null: false,
            ..opengauss_a()
        };
        assert!(pg_mode.check_loadable().is_ok());
        let odd = Dialect {
            database: "My DB".into(),
            compatibility: None,
            ..opengauss_a()
        };
        let e = odd.check_loadable().unwrap_err().message;
        assert!(e.contains("CREATE DATABASE \"My DB_pg\""), "{e}");
        assert!(e.contains("its compatibility mode"), "{e}");
    }

    #[test]
    fn describe_says_what_is_there_and_what_is_not() {
        let d = pg15().describe();
        assert!(d.starts_with("PostgreSQL 15.3 (150003), database postgres; has COPY FREEZE"));
        assert!(
            d.contains("WAL position by pg_current_wal_lsn/pg_wal_lsn_diff"),
            "{d}"
        );
        assert!(d.ends_with("; lacks pg_stat_checkpointer"), "{d}");
        let g = opengauss_a().describe();
        assert!(
            g.starts_with(
                "openGauss 9.2.4 (90204), database postgres, compatibility A, '' is NULL"
            ),
            "{g}"
        );
        assert!(
            g.contains("lacks COPY FREEZE, ON CONFLICT, pg_ls_waldir, pg_stat_checkpointer"),
            "{g}"
        );
        assert!(g.contains("pg_current_xlog_location"), "{g}");
        let bare = pg15().without(&Feature::ALL).describe();
        assert!(
            bare.contains("pg_stat_database.temp_bytes/deadlocks"),
            "{bare}"
        );
        assert!(!bare.contains("; has"), "{bare}");
    }

    #[test]
    fn identifiers_are_quoted_when_needed() {
        assert_eq!(ident("bench_pg"), "bench_pg");
        assert_eq!(ident("Bench"), "\"Bench\"");
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(ident("1x"), "\"1x\"");
    }
}
