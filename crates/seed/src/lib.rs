//! Bulk seeding for benchmarks (`reftrack-seed-bench`, used by `scripts/bench`).
//!
//! Creates a workspace, a dashboard user with a live session, and programs whose click,
//! lead and sale events are spread over the last [`SeedOptions::days`] days, with the
//! customers, commissions, link and partner counters and `daily_rollups` the tracking API
//! would have produced for the same events. Metadata (workspace, programs, partners,
//! links, user) goes through the [`Store`](reftrack_store::Store) like any management call;
//! the events go in with multi-row `INSERT`s in large transactions on a connection of
//! its own (`synchronous=OFF` on SQLite, `synchronous_commit=off` on PostgreSQL: a crash
//! mid-seed loses the seed, nothing else), and the counters are added at the end by the
//! group committer's own `counters::apply`.
//!
//! The shape of the generated data: every click creates its customer (no repeat
//! visits); one customer in ten becomes a lead 30 minutes after its click, with
//! `customer_key` `<key_prefix><n>` for the n-th lead (0-based) so that load generators
//! can address them; one lead in five buys 2 hours later (one sale each, a percentage
//! commission). Timestamps increase with ids, as they do when the API records them.
//! A commission whose hold period (the program's `commission_hold_days`) has passed is
//! seeded `approved`, with `approved_at` at the end of its hold, as the server's minute job
//! would have recorded it; the others are `pending`.
//!
//! [`run_payouts`] adds a program for the payouts benchmark ([`PayoutsSpec`]) to a
//! database, seeded or not: one partner per 100 commissions, each approved in the program
//! with a link and PayPal payout details; customers that each click once, sign up 30
//! minutes later and buy ten times; every sale earns a commission that is past its hold
//! (all `approved`).

use std::collections::BTreeMap;
use std::sync::Arc;

use reftrack_domain::commission::CommissionRule;
use reftrack_domain::figures::{Deltas, PartnerDayDelta, RollupDelta};
use reftrack_domain::lifecycle;
use reftrack_domain::time::{day_of, now_ms, DAY_MS};
use reftrack_service::programs::{
    LinkBody, MemberBody, PartnerBody, ProgramBody, UserBody, WorkspaceBody,
};
use reftrack_service::{App, Caller};

use reftrack_store::{Store, Workspace};
use sql::{SeedEngine, Seeder};
use sqlx::{Postgres, Sqlite};

mod generator;
mod payouts;
mod rows;
mod seeding;
pub mod sql;

use generator::*;
use payouts::*;
use rows::*;
pub use rows::{Chunk, NewSeedPartner, SeedClick, SeedCustomer, SeedLead, SeedPartner, SeedSale};
use seeding::*;

/// Commission of seeded programs: 30 % (basis points).
const COMMISSION_BPS: i64 = 3_000;

/// One program to seed.
#[derive(Debug, Clone)]
pub struct ProgramSpec {
    /// Program name.
    pub name: String,
    /// Click events to create.
    pub clicks: u64,
    /// Partners (each with one approved partner-program record and one link).
    pub partners: u64,
    /// Prefix of the generated short links and partner codes (`<prefix><n>`).
    pub link_prefix: String,
    /// Prefix of the generated lead customers' keys (`<prefix><n>`).
    pub key_prefix: String,
}

/// What to seed.
#[derive(Debug, Clone)]
pub struct SeedOptions {
    /// The programs, in order.
    pub programs: Vec<ProgramSpec>,
    /// Days the events span, ending now.
    pub days: i64,
    /// Password of the created dashboard user (`bench@reftrack.invalid`).
    pub user_password: String,
}

/// What was created, for the load generator.
#[derive(Debug, Clone)]
pub struct SeededProgram {
    /// Program id.
    pub id: i64,
    /// The program's API key.
    pub api_token: String,
    /// Short link of its first partner.
    pub short_link: String,
    /// Id of that link.
    pub link_id: i64,
    /// Click events created.
    pub clicks: u64,
    /// Lead customers created (keys `<key_prefix>0` to `<key_prefix>{leads-1}`).
    pub leads: u64,
    /// Sales created.
    pub sales: u64,
}

/// The program of the payouts benchmark: every partner has a payout email and due
/// commissions, so that a payout takes them all.
#[derive(Debug, Clone)]
pub struct PayoutsSpec {
    /// Program name.
    pub name: String,
    /// Commissions to create, one sale each; the program gets one partner per
    /// [`COMMISSIONS_PER_PARTNER`] of them (at least one).
    pub commissions: u64,
    /// Prefix of the partner codes and short links (`<prefix>-p<n>`) and of the
    /// customers' keys (`<prefix>-c<n>`).
    pub prefix: String,
    /// Days the events span, ending now (more than the program's hold of 30 days).
    pub days: i64,
}

/// Commissions per partner of the payouts program.
pub const COMMISSIONS_PER_PARTNER: u64 = 100;
/// Sales (and commissions) per customer of the payouts program.
pub const SALES_PER_CUSTOMER: u64 = 10;

/// What was created for the payouts benchmark.
#[derive(Debug, Clone)]
pub struct SeededPayouts {
    /// Program id.
    pub id: i64,
    /// Partners, each with a link, an approved membership and a payout email.
    pub partners: u64,
    /// Customers (one click and one lead each).
    pub customers: u64,
    /// Sales, each with its commission (all approved).
    pub commissions: u64,
}

/// The outcome of a seed.
#[derive(Debug, Clone)]
pub struct SeedReport {
    /// One entry per [`SeedOptions::programs`].
    pub programs: Vec<SeededProgram>,
    /// A live dashboard session token of a workspace owner.
    pub session_token: String,
}

/// Clicks per generated chunk (and per committed transaction group).
const CHUNK: u64 = 20_000;

/// Seeds the database named by `url` (created and migrated if needed). `progress` is
/// called after each chunk with the program index and the clicks done so far.
pub async fn run(
    url: &str,
    opts: &SeedOptions,
    progress: impl FnMut(usize, u64),
) -> anyhow::Result<SeedReport> {
    if url.starts_with("sqlite:") {
        run_on::<Sqlite>(url, opts, progress).await
    } else {
        run_on::<Postgres>(url, opts, progress).await
    }
}

/// Adds the program of the payouts benchmark, in a workspace of its own, to the database
/// named by `url` (created and migrated if needed; it may hold a seed of [`run`] or
/// anything else). `progress` is called after each chunk with the sales done so far.
pub async fn run_payouts(
    url: &str,
    spec: &PayoutsSpec,
    progress: impl FnMut(u64),
) -> anyhow::Result<SeededPayouts> {
    if url.starts_with("sqlite:") {
        run_payouts_on::<Sqlite>(url, spec, progress).await
    } else {
        run_payouts_on::<Postgres>(url, spec, progress).await
    }
}
