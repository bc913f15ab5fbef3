//! The SQLite engine: one file in WAL mode, one write connection shared by the group
//! committer (whose transactions take `BEGIN IMMEDIATE`) and the management writes, and a
//! small pool of read-only connections for everything else.
//!
//! Its modules hold what SQLite does its own way: `connect` (pools, durability,
//! checkpoints), `batch` (the set-based click and sale statements of the committer) and `rows`
//! (the `VALUES` lists those read). The statements it runs as
//! PostgreSQL does are in `store::sql`.

pub(crate) mod batch;
mod connect;
#[cfg(test)]
mod migration_tests;
mod rows;
mod serving;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::Arc;

use sqlx::sqlite::{Sqlite, SqliteQueryResult};
use sqlx::Pool;

pub use serving::{lock_for_serving, ServingLock};

use super::committer::{Committer, CommitterConfig};
use super::sql::counters::Update;
use super::sql::migrations::{self, Reworded};
use super::sql::write::WritePool;
use super::sql::{Engine, SqlStore};
use super::Backend;

/// The schema, applied when the store opens.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");

/// The newest migration this build applies to a SQLite database; a database whose record
/// names a newer one was made by a newer build.
pub fn latest_migration() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// The error of a command that needs the database at `path` and finds no file there.
pub fn no_database(path: &Path) -> anyhow::Error {
    super::opening::no_database(&path.display().to_string())
}

/// A store on one SQLite file: the read pool, the one-connection write pool and the group
/// committer writing through it.
pub type SqliteStore = SqlStore<Sqlite>;

impl SqlStore<Sqlite> {
    /// Opens (creating if missing) the database at `url` (`sqlite://PATH`), applies
    /// pending migrations and starts the writer.
    pub async fn open(url: &str) -> anyhow::Result<Self> {
        Self::open_as(url, true).await
    }

    /// Opens the database at `url` as [`SqlStore::open`] does; without `create`, a file
    /// that does not exist is refused rather than created.
    pub(super) async fn open_as(url: &str, create: bool) -> anyhow::Result<Self> {
        let (read, write) = connect::pools(url, create).await?;
        renumber_old_migrations(&write).await?;
        migrations::run(&write, &MIGRATOR, &REWORDED_MIGRATIONS).await?;
        let committer = Committer::start(
            Arc::new(WritePool::new(write.clone())),
            CommitterConfig {
                // SQLite has one writer: more tasks would only queue on its lock.
                writers: 1,
                // The write connection also serves sessions and management writes.
                keep_connection: false,
                wal_file: connect::wal_file(url),
                // A second writer would wait for the one connection SQLite writes on.
                long_writer: false,
            },
        );
        Ok(SqlStore {
            read,
            write,
            committer,
        })
    }
}

/// Databases made before the SQLite migrations took PostgreSQL's numbering hold
/// `converted at read time` as version 4 and `partial sale indexes` as version 5; now they
/// are 5 and 6, after an empty version 4. Renumbers such a database's record of applied
/// migrations (in one transaction) so that the migrator finds it up to date.
async fn renumber_old_migrations(pool: &Pool<Sqlite>) -> anyhow::Result<()> {
    let old: Option<i64> = sqlx::query_scalar(
        "SELECT version FROM _sqlx_migrations WHERE version = 4 \
         AND description = 'converted at read time'",
    )
    .fetch_optional(pool)
    .await
    // No migrations table yet: a new database.
    .unwrap_or(None);
    if old.is_none() {
        return Ok(());
    }
    let empty = MIGRATOR
        .iter()
        .find(|m| m.version == 4)
        .ok_or_else(|| anyhow::anyhow!("migration 4 is missing"))?;
    let mut tx = pool.begin().await?;
    for version in [5, 4] {
        sqlx::query("UPDATE _sqlx_migrations SET version = version + 1 WHERE version = $1")
            .bind(version)
            .execute(&mut *tx)
            .await?;
    }
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
         execution_time) VALUES (4, $1, TRUE, $2, 0)",
    )
    .bind(empty.description.as_ref())
    .bind(empty.checksum.as_ref())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    tracing::info!("renumbered the applied migrations to the shared numbering");
    Ok(())
}

/// Migrations whose comments were reworded after they shipped (their SQL is unchanged),
/// with the checksum a database that applied the earlier text has on record.
const REWORDED_MIGRATIONS: [Reworded; 2] = [
    (
        1,
        "558c173ae9c20da6bbbadab15ab60931cc3130d3046d0b72c02c3b1e5fb273cf2d087deffa443e8cfb36e58d9a9a07b9",
    ),
    (
        2,
        "c192aa05f176f969a21ddbe574f75cda7bc5a78f0d076b6cba4a1aeaed36b0cd32ca79e0dd0862e22c57b23ebd986771",
    ),
];

/// SQLite's result code for a statement it cannot run as written (`SQLITE_ERROR`: a
/// syntax error, a missing table, column or function).
const SQLITE_ERROR: &str = "1";

impl Engine for Sqlite {
    const BACKEND: Backend = Backend::Sqlite;
    const POOL_NAMES: (&'static str, Option<&'static str>) = ("read", Some("write"));
    // `IMMEDIATE` takes the write lock up front, so a transaction never fails half-way on
    // upgrading a read lock when another process writes to the same file.
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";
    // A read transaction of SQLite is one snapshot, from its first read to its end.
    const BEGIN_SNAPSHOT: &'static str = "BEGIN";
    // One process writes at a time: its claim is the only one.
    const CLAIM_LOCK: &'static str = "";
    const SALE_CLAIM_LOCK: &'static str = "";
    // The write transaction is the only one: the sale cannot change under it.
    const SALE_LOCK: &'static str = "";
    // The one writer connection's `BEGIN IMMEDIATE` already keeps others out.
    const ROW_LOCK: &'static str = "";
    const ROW_LOCK_OF_FIRST: &'static str = "";
    const CREATE_SESSION: &'static str = "DELETE FROM sessions WHERE expires_at <= $3; \
        INSERT INTO sessions (user_id, token_hash, created_at, expires_at) \
        VALUES ($1, $2, $3, $4)";

    // SQLite has no LATERAL; its nested loops look the id up through the index on the
    // customer (whose entries end with the rowid, the click's id) and then the row.
    fn latest_click_join(customer_id: &str) -> String {
        format!(
            "LEFT JOIN affiliate_click_events e ON e.id = (SELECT MAX(l.id) \
             FROM affiliate_click_events l WHERE l.customer_id = {customer_id})"
        )
    }

    fn values(rows: usize, width: usize, _first: usize) -> String {
        rows::values(rows, width)
    }

    // One statement per update, separated by `;`.
    fn counter_query(updates: &[Update]) -> String {
        let statements: Vec<String> = updates
            .iter()
            .map(|u| format!("WITH {} {}", u.rows, u.statement))
            .collect();
        statements.join("; ")
    }

    fn rows_affected(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }

    fn is_statement_bug(error: &(dyn sqlx::error::DatabaseError + 'static)) -> bool {
        error.code().as_deref() == Some(SQLITE_ERROR)
    }
}
