//! The SQLite store: WAL, `foreign_keys=ON`, `busy_timeout`, durable commits (see
//! [`wal_file`]), one
//! writer connection taking `BEGIN IMMEDIATE`, and a small pool of readers.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Pool, Row};
use tokio::sync::{mpsc, oneshot};

use super::deltas::{Deltas, RollupDelta};
use super::{
    origin_allowed, Backend, Link, LinkTarget, Membership, NewClick, NewLead, NewProgram,
    NewRefund, NewSale, NewTestClick, NewTestLead, Partner, PartnerProgram, PaymentAccount,
    Program, ProgramPatch, RefundOutcome, SaleOutcome, Store, User, Workspace,
};
use crate::error::{Error, Result};

type Db = Sqlite;
type Conn = sqlx::SqliteConnection;
const BACKEND: Backend = Backend::Sqlite;
/// `IMMEDIATE` takes the write lock up front, so a transaction never fails half-way on
/// upgrading a read lock when another process writes to the same file.
const BEGIN_WRITE: &str = "BEGIN IMMEDIATE";
/// SQLite has one writer; more tasks would only queue on its lock.
const WRITERS: usize = 1;
/// The single write connection also serves sessions and management writes, so the
/// writer gives it back when its queue is empty or after [`WRITE_CONNECTION_TURN`].
const KEEP_WRITE_CONNECTION: bool = false;
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");

/// Opens the file named by `url` as a reader pool and a single-connection writer pool.
async fn connect(url: &str) -> anyhow::Result<(Pool<Db>, Pool<Db>)> {
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
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
    let write = SqlitePoolOptions::new()
        .max_connections(1)
        // No liveness ping (a round trip to sqlx's connection thread) on each check-out by
        // the committer: a file does not drop a connection, and a failed batch closes it.
        .test_before_acquire(false)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options.clone())
        .await?;
    let read = SqlitePoolOptions::new()
        .max_connections(4)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options.clone().read_only(true))
        .await?;
    spawn_checkpointer(options, write.clone());
    Ok((read, write))
}

/// The WAL file of the database at `url`, which the committer syncs (`fdatasync`) after
/// each commit and before answering its callers: the durability of `synchronous=FULL`,
/// but off the writer's path, so that the next batch runs while the disk flushes the
/// last one. `None` for an in-memory database (which then runs `synchronous=FULL`).
fn wal_file(url: &str) -> Option<std::path::PathBuf> {
    let options = SqliteConnectOptions::from_str(url).ok()?;
    let path = options.get_filename();
    let name = path.to_str()?;
    if name.is_empty() || name == ":memory:" || url.contains("mode=memory") {
        return None;
    }
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    Some(wal.into())
}

/// How often the background checkpointer folds the WAL into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(100);

/// Checkpoints the WAL (`PASSIVE`: never blocking the writer or readers) from a
/// connection of its own, so that the writer's automatic checkpoint (every 1,000 WAL
/// pages, in the commit that crosses the mark) finds the pages already copied, completes
/// quickly and lets the WAL restart from its beginning. Stops once the writer pool is
/// closed.
fn spawn_checkpointer(options: SqliteConnectOptions, write: Pool<Db>) {
    use sqlx::ConnectOptions;
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

include!("shared/store.rs");
include!("shared/committer.rs");

/// Bulk inserts of the benchmark seed (`reftrack-seed-bench`).
pub mod seed {
    use super::*;
    include!("shared/seed.rs");
}

mod admin {
    use super::*;
    use crate::domain::commission::CommissionRule;
    use crate::domain::time::{day_of, now_ms};
    include!("shared/admin.rs");
}

mod webhooks {
    use super::track;
    use super::*;
    use crate::domain::{money, stripe};
    use crate::store::{NewRefund, NewSale, SaleProgram};
    include!("shared/webhooks.rs");
}

mod dashboard {
    use super::*;
    use crate::domain::metrics;
    use crate::store::{
        ClickEvent, ConversionEvent, Credentials, DailyRollup, DashboardProgram, EventFilter,
        EventKind, LeadEvent, ListedEvent, SessionUser, SetupStatus, TestEventRef,
        TestEventSummary,
    };
    include!("shared/dashboard.rs");
}

mod rows {
    use super::*;
    include!("shared/rows.rs");
}

mod counters {
    use super::rows::{values, Query};
    use super::*;
    use crate::store::deltas::{LinkDelta, PartnerDelta};
    include!("shared/counters.rs");
}

mod track {
    use super::counters;
    use super::rows::{self, Rows};
    use super::*;
    use crate::domain::attribution::{self, CustomerStatus};
    use crate::domain::refund::{self, RefundStatus};
    use crate::domain::time::day_of;
    use crate::domain::{click_id, commission, money};
    use crate::store::ClickDetails;
    include!("shared/track.rs");
}

mod verify {
    use super::*;
    use crate::domain::money;
    use crate::domain::time::day_of;
    use crate::store::integrity::{Figures, Integrity, RawCounts, Violation};
    include!("shared/verify.rs");
}
