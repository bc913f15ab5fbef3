//! The PostgreSQL store: one pool shared by readers and by several writer tasks, so that
//! group commits overlap; many processes may share the database.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use sqlx::postgres::{PgPoolOptions, Postgres};
use sqlx::{Pool, Row};
use tokio::sync::{mpsc, oneshot};

use super::deltas::{Deltas, RollupDelta};
use super::{
    origin_allowed, Backend, Link, LinkTarget, Membership, NewClick, NewLead, NewProgram,
    NewRefund, NewSale, NewTestClick, NewTestLead, Partner, PartnerProgram, PaymentAccount,
    Program, ProgramPatch, RefundOutcome, SaleOutcome, Store, User, Workspace,
};
use crate::error::{Error, Result};

type Db = Postgres;
type Conn = sqlx::PgConnection;
const BACKEND: Backend = Backend::Postgres;
/// Several batches in flight at once; each holds one connection while it commits.
const WRITERS: usize = 4;
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

/// Connects one pool, used for reads and writes alike. Timeouts are short so that an
/// outage turns into quick 503s rather than hung requests.
async fn connect(url: &str) -> anyhow::Result<(Pool<Db>, Pool<Db>)> {
    let pool = PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(Duration::from_secs(5))
        .connect(url)
        .await?;
    Ok((pool.clone(), pool))
}

/// Batches commit with `synchronous_commit = off`, which releases their row locks (the
/// counters every batch updates) without waiting for the disk; the committer then makes
/// them durable with one synchronous commit, which flushes the WAL up to it, before
/// answering. Acknowledged writes are as durable as with `synchronous_commit = on`.
const BEGIN_WRITE: &str = "BEGIN; SET LOCAL synchronous_commit = off";

/// How committed batches are made durable before they are answered: a transaction
/// committed synchronously, whose flush covers every commit before it.
struct Durability {
    pool: Pool<Db>,
}

fn durability(_url: &str, write: &Pool<Db>) -> Option<Durability> {
    Some(Durability {
        pool: write.clone(),
    })
}

impl Durability {
    /// Flushes every commit made so far to disk.
    fn flush(&mut self) -> BoxFuture<'static, std::io::Result<()>> {
        let pool = self.pool.clone();
        Box::pin(async move {
            sqlx::raw_sql("BEGIN; SELECT txid_current(); COMMIT")
                .execute(&pool)
                .await
                .map(|_| ())
                .map_err(std::io::Error::other)
        })
    }
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
