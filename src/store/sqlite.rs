//! The SQLite store: WAL, `foreign_keys=ON`, `busy_timeout`, `synchronous=FULL`, one
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
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");

/// Opens the file named by `url` as a reader pool and a single-connection writer pool.
async fn connect(url: &str) -> anyhow::Result<(Pool<Db>, Pool<Db>)> {
    let options = SqliteConnectOptions::from_str(url)?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(5))
        .statement_cache_capacity(256);
    let write = SqlitePoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options.clone())
        .await?;
    let read = SqlitePoolOptions::new()
        .max_connections(4)
        .acquire_timeout(Duration::from_secs(10))
        .connect_with(options.read_only(true))
        .await?;
    Ok((read, write))
}

include!("shared/store.rs");
include!("shared/committer.rs");

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

mod track {
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
