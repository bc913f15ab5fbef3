//! Connecting to the SQLite file: the connection settings (WAL, durability, foreign
//! keys, busy timeout, statement cache), the one-connection write pool and the read-only
//! pool, the WAL file the committer syncs, and the background checkpointer.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions, Pool};

use crate::opening;

/// How often the background checkpointer folds the WAL into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(100);

/// Opens the file named by `url` as a pool of readers and a pool of one writer; returns
/// `(read, write)`. A missing file is created when `create`, and refused otherwise.
pub(super) async fn pools(url: &str, create: bool) -> anyhow::Result<(Pool<Sqlite>, Pool<Sqlite>)> {
    let file = database_file(url);
    if let Some(path) = &file {
        if !path.exists() {
            if !create {
                return Err(super::no_database(path));
            }
            create_owner_only(path);
        }
    }
    let failed = |e: sqlx::Error| match &file {
        Some(path) => opening::cannot_open_file(path, &e),
        None => opening::cannot_open(url, &e),
    };
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|e| anyhow::anyhow!("invalid database URL: {}", opening::cause(&e)))?
        .create_if_missing(create)
        .journal_mode(SqliteJournalMode::Wal)
        // With a WAL file the committer syncs it before answering (see `wal_file`).
        .synchronous(if wal_file(url).is_some() {
            SqliteSynchronous::Normal
        } else {
            SqliteSynchronous::Full
        })
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(5))
        .statement_cache_capacity(256)
        // Statement journals (multi-row INSERTs) and savepoints in memory, not temp files.
        .pragma("temp_store", "memory");
    // The writer pool connects first: it creates the file the readers open.
    let write = SqlitePoolOptions::new()
        .max_connections(1)
        // No liveness ping (a round trip to sqlx's connection thread) on each check-out by
        // the committer: a file does not drop a connection, and a failed batch closes it.
        .test_before_acquire(false)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options.clone())
        .await
        .map_err(failed)?;
    let read = SqlitePoolOptions::new()
        .max_connections(4)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options.clone().read_only(true))
        .await
        .map_err(failed)?;
    spawn_checkpointer(options, write.clone());
    Ok((read, write))
}

/// Creates the empty database file at `path` readable and writable by its owner alone,
/// as a backup and a restored database are: it will hold password and token hashes and
/// partners' emails, and SQLite gives the WAL and shared-memory files the database file's
/// permissions. Where it cannot (a directory that does not exist, say), SQLite's own
/// attempt says why.
fn create_owner_only(path: &Path) {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let _ = options.open(path);
}

/// The WAL file of the database at `url`, which the committer syncs (`fdatasync`) after
/// each commit and before answering its callers: the durability of `synchronous=FULL`,
/// but off the writer's path, so that the next batch runs while the disk flushes the
/// last one. `None` for an in-memory database (which then runs `synchronous=FULL`).
pub(super) fn wal_file(url: &str) -> Option<PathBuf> {
    let mut wal = database_file(url)?.into_os_string();
    wal.push("-wal");
    Some(wal.into())
}

/// The file of the database at `url`; `None` for an in-memory database.
pub(super) fn database_file(url: &str) -> Option<PathBuf> {
    let options = SqliteConnectOptions::from_str(url).ok()?;
    let path = options.get_filename();
    let name = path.to_str()?;
    if name.is_empty() || url.contains(":memory:") || url.contains("mode=memory") {
        return None;
    }
    Some(path.to_path_buf())
}

/// Checkpoints the WAL (`PASSIVE`: never blocking the writer or readers) from a
/// connection of its own, so that the writer's automatic checkpoint (every 1,000 WAL
/// pages, in the commit that crosses the mark) finds the pages already copied, completes
/// quickly and lets the WAL restart from its beginning. Stops once the writer pool is
/// closed.
fn spawn_checkpointer(options: SqliteConnectOptions, write: Pool<Sqlite>) {
    tokio::spawn(async move {
        let mut conn = match options.connect().await {
            Ok(conn) => conn,
            Err(e) => {
                tracing::warn!(error = %e, "no background checkpointer; the writer checkpoints");
                return;
            }
        };
        let mut tick = tokio::time::interval(CHECKPOINT_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if write.is_closed() {
                break;
            }
            if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&mut conn)
                .await
            {
                tracing::debug!(error = %e, "background checkpoint failed");
            }
        }
        let _ = sqlx::Connection::close(conn).await;
    });
}
