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
const BEGIN_WRITE: &str = "BEGIN";
/// One writer per process: batches serialise on the counter rows they update anyway (each
/// holds their locks through its commit), and a second writer only splits the batches
/// (measured: 8,100 clicks/s with one, 6,600 with two, 5,200 with four; with each click
/// batch a single statement, 12,900 with one and 10,500 with two).
const WRITERS: usize = 1;
/// The writer keeps its connection between batches (the pool has others for everyone
/// else), saving the pool's check-out and liveness ping per batch; a batch that fails
/// closes it.
const KEEP_WRITE_CONNECTION: bool = true;
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

/// PostgreSQL commits durably itself: no file for the committer to sync.
fn wal_file(_url: &str) -> Option<std::path::PathBuf> {
    None
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
