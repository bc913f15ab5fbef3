//! Storage: one interface ([`Store`]), implemented once in [`sql`] over an
//! [`sql::Engine`]: [`sqlite`] (the embedded default) and [`postgres`] are the engines,
//! holding their connections and the statements each runs its own way.
//!
//! The tracking writes do not have methods here: the service layer hands them to
//! [`Store::submit`] as [`write::Write`]s, flows written once against [`tx::Tx`], and the
//! backend's group committer ([`committer`]) runs many of them in one transaction,
//! answering each only once that transaction is committed and durable.

pub mod audit;
pub mod bounties;
pub mod committer;
pub mod dashboard_model;
pub mod error;
pub mod fraud;
pub mod groups;
pub mod integrity;
pub mod management;
pub mod model;
pub mod opening;
pub mod partners;
pub mod payout_model;
pub mod payouts;
pub mod postgres;
pub mod rates;
pub mod sql;
pub mod sqlite;
pub mod two_factor;
pub mod tx;
pub mod webhooks;
pub mod write;

use std::sync::Arc;

use async_trait::async_trait;

pub use audit::{AuditEntry, AuditFilter, AuditOf, AuditRow, AuditStore, AuditTx};
pub use bounties::{BountyEarner, BountyRow, BountyStore, BountyTx, NewBounty, PartnerBounty};
pub use dashboard_model::*;
pub use error::{StoreError, StoreResult};
pub use fraud::{FraudStore, FraudTx, ReviewClick, ReviewItem};
pub use groups::{Group, GroupPatch, GroupRewards, GroupStore, NewGroup};
pub use management::{
    LinkFilter, ManagementReads, MembershipView, ProgramPartnerFilter, ProgramPartnerRow, Record,
    TopPartner,
};
pub use model::*;
pub use partners::{PartnerAccounts, PartnerTx, TokenGrant};
pub use payout_model::*;
pub use payouts::{PayoutReads, PayoutTx};
pub use rates::{ExchangeRateRow, ProgramRates, RateStore, RateTx, RateUsed};
use reftrack_domain::status::{CouponStatus, LinkStatus, MembershipStatus, Role};
pub use two_factor::{Account, TwoFactorRow, TwoFactorStore};
pub use webhooks::{WebhookStore, WebhookTx};

/// One connection pool of a store at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolUse {
    /// `read` and `write` on SQLite; `shared` on PostgreSQL, whose one pool serves both.
    pub pool: &'static str,
    /// Connections open.
    pub open: u32,
    /// Open connections checked out by a task.
    pub in_use: u32,
    /// The most the pool opens.
    pub max: u32,
}

/// Which database a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite file (the default).
    Sqlite,
    /// A PostgreSQL server, possibly shared by several processes.
    Postgres,
}

/// The storage interface of the service: the database, its pools, the group committer
/// and the integrity check, with the parts it includes (settings and programs, partners
/// and links, users, the tracking lookups, the dashboard's sessions and reads, payouts,
/// the management lists, partner accounts, webhooks and two-factor sign-in). Records that are not found or
/// would be duplicated answer [`StoreError::NotFound`] or [`StoreError::Conflict`] naming
/// what (`"program"`, `"partner code"`, …); the service layer words the message.
#[async_trait]
pub trait Store:
    ProgramAdmin
    + PartnerAdmin
    + UserAdmin
    + TrackingLookups
    + DashboardStore
    + PayoutReads
    + ManagementReads
    + PartnerAccounts
    + WebhookStore
    + AuditStore
    + TwoFactorStore
    + FraudStore
    + BountyStore
    + GroupStore
    + rates::RateStore
    + Send
    + Sync
    + 'static
{
    /// The database behind this store.
    fn backend(&self) -> Backend;
    /// Succeeds when the database answers a trivial query.
    async fn ping(&self) -> StoreResult<()>;
    /// Waits until every write accepted so far is committed, then stops the writers.
    async fn close(&self);
    /// Hands a write to the group committer. It answers through the channel it carries;
    /// a write dropped unanswered (the store closing) drops that channel.
    async fn submit(&self, write: write::Write);
    /// What the group committer measured of its batches (for the metrics).
    fn commit_stats(&self) -> &committer::CommitStats;
    /// How many connections each pool holds now, and how many of them are in use (for the
    /// metrics).
    fn pool_use(&self) -> Vec<PoolUse>;

    /// Stored and recomputed figures and broken invariants, from one snapshot (for
    /// `reftrack verify`).
    async fn integrity(&self) -> StoreResult<integrity::Integrity>;
}

/// Settings, workspaces and programs. [`Store`] includes it.
#[async_trait]
pub trait ProgramAdmin: Send + Sync {
    /// Reads a setting.
    async fn setting(&self, key: &str) -> StoreResult<Option<String>>;
    /// Writes a setting.
    async fn set_setting(&self, key: &str, value: &str) -> StoreResult<()>;

    /// Creates a workspace.
    async fn create_workspace(&self, name: &str, at: i64) -> StoreResult<Workspace>;
    /// Creates a program, with the audit entries `audit` makes of it;
    /// `NotFound("workspace")`.
    async fn create_program(
        &self,
        p: &NewProgram,
        at: i64,
        audit: AuditOf<'_, Program>,
    ) -> StoreResult<Program>;
    /// One program; `NotFound("program")`.
    async fn program(&self, id: i64) -> StoreResult<Program>;
    /// The program whose API token, or previous token, hashes to `token_hash`.
    async fn program_by_token(&self, token_hash: &str) -> StoreResult<Option<Program>>;
    /// Changes a program, with the audit entries `audit` makes of it before and after;
    /// `NotFound("program")`.
    async fn update_program(
        &self,
        id: i64,
        patch: &ProgramPatch,
        at: i64,
        audit: AuditOf<'_, Program>,
    ) -> StoreResult<Program>;
    /// Replaces a program's API token; the replaced one keeps working until
    /// `keep_old_until` when that is later than `at`, and any earlier previous token
    /// stops. `NotFound("program")`.
    async fn set_program_token(
        &self,
        id: i64,
        hash: &str,
        prefix: &str,
        keep_old_until: Option<i64>,
        at: i64,
        audit: AuditOf<'_, Program>,
    ) -> StoreResult<Program>;
    /// Sets a program's payment-account fields as given; `NotFound("program")`.
    async fn set_payment_account(
        &self,
        id: i64,
        account: &PaymentAccount,
        at: i64,
        audit: AuditOf<'_, Program>,
    ) -> StoreResult<Program>;
}

/// Partners, their records in programs, referral links and the links' coupons.
/// [`Store`] includes it.
#[async_trait]
pub trait PartnerAdmin: Send + Sync {
    /// Creates a partner, remembering the workspace that created it, if any;
    /// `Conflict("partner code")`.
    async fn create_partner(
        &self,
        name: &str,
        code: &str,
        email: Option<&str>,
        workspace_id: Option<i64>,
        at: i64,
    ) -> StoreResult<Partner>;
    /// A partner's record in a program; `NotFound("partner")` when it is not in it.
    async fn partner_program(
        &self,
        program_id: i64,
        partner_id: i64,
    ) -> StoreResult<PartnerProgram>;
    /// Changes a partner, with the audit entries `audit` makes of it before and after;
    /// `NotFound("partner")`.
    async fn update_partner(
        &self,
        id: i64,
        patch: &PartnerPatch,
        audit: AuditOf<'_, Partner>,
    ) -> StoreResult<Partner>;
    /// Creates a referral link; `NotFound("program" | "partner")`,
    /// `Conflict("short_link")`.
    async fn create_link(
        &self,
        program_id: i64,
        partner_id: Option<i64>,
        short_link: &str,
        status: LinkStatus,
        destination_url: Option<&str>,
        at: i64,
    ) -> StoreResult<Link>;
    /// One link; `NotFound("link")`.
    async fn link(&self, id: i64) -> StoreResult<Link>;
    /// Changes a link; `NotFound("link")`.
    async fn update_link(&self, id: i64, patch: &LinkPatch) -> StoreResult<Link>;
    /// Creates a coupon code of a link; `NotFound("link")`, `Conflict("coupon code")` or
    /// `Conflict("stripe_promotion_code")` when an active coupon of the program has it.
    async fn create_coupon(&self, c: &NewCoupon, at: i64) -> StoreResult<Coupon>;
    /// One page of a link's coupons, newest first; only those of `status` when set.
    async fn link_coupons(
        &self,
        link_id: i64,
        status: Option<CouponStatus>,
        page: Page,
    ) -> StoreResult<Vec<Coupon>>;
    /// One coupon of a link; `NotFound("coupon")`.
    async fn coupon(&self, link_id: i64, coupon_id: i64) -> StoreResult<Coupon>;
    /// Archives an active coupon of a link; `None` when it was archived already.
    /// `NotFound("coupon")`.
    async fn archive_coupon(
        &self,
        link_id: i64,
        coupon_id: i64,
        at: i64,
    ) -> StoreResult<Option<Coupon>>;
}

/// Dashboard users, their memberships of workspaces, and the first run of a server.
/// [`Store`] includes it.
#[async_trait]
pub trait UserAdmin: Send + Sync {
    /// Creates a dashboard user; `Conflict("email")`.
    async fn create_user(
        &self,
        email: &str,
        password_hash: &str,
        name: Option<&str>,
        at: i64,
    ) -> StoreResult<User>;
    /// Whether any dashboard user exists.
    async fn has_users(&self) -> StoreResult<bool>;
    /// Changes a dashboard user in one transaction; a new password ends every session
    /// the user had. `NotFound("user")`.
    async fn update_user(&self, id: i64, patch: &UserPatch) -> StoreResult<User>;
    /// One page of dashboard users, newest first; with `q`, only those whose email or
    /// name contains it (any case).
    async fn list_users(&self, q: Option<&str>, page: Page) -> StoreResult<Vec<User>>;
    /// The first run of a server: its first workspace, its owner (an active `owner`
    /// membership), its first program (`p.workspace_id` is ignored) and, when given, the
    /// address the owner confirmed as the server's (the setting `public_url`), in one
    /// transaction; `Conflict("first run")` when it has run before or a user exists.
    async fn first_run(
        &self,
        owner: &NewOwner<'_>,
        p: &NewProgram,
        public_url: Option<&str>,
        at: i64,
    ) -> StoreResult<FirstRunRecords>;
    /// Adds a user to a workspace; `NotFound("workspace" | "user")`,
    /// `Conflict("membership")`.
    async fn add_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        role: Role,
        status: MembershipStatus,
        at: i64,
        audit: AuditOf<'_, Membership>,
    ) -> StoreResult<Membership>;
    /// Changes a membership; `None` leaves a field as it is. `NotFound("membership")`.
    async fn update_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        role: Option<Role>,
        status: Option<MembershipStatus>,
        audit: AuditOf<'_, Membership>,
    ) -> StoreResult<Membership>;
    /// Removes a membership, answering it as it was; `audit` gets it as the record after
    /// the change (and none before). `NotFound("membership")`.
    async fn remove_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        audit: AuditOf<'_, Membership>,
    ) -> StoreResult<Membership>;
}

/// The lookups of the tracking API. [`Store`] includes it.
#[async_trait]
pub trait TrackingLookups: Send + Sync {
    /// A referral link by its `short_link`, with its program and partner.
    async fn link_target(&self, short_link: &str) -> StoreResult<Option<LinkTarget>>;
    /// Whether any program admits `origin` (CORS preflights carry no program).
    async fn any_program_allows_origin(&self, origin: &str) -> StoreResult<bool>;
}

/// The dashboard's sign-in sessions and its reads: access, rollups, setup status and
/// events. [`Store`] includes it.
#[async_trait]
pub trait DashboardStore: Send + Sync {
    /// The id and password hash of the user with `email` (already normalised).
    async fn user_credentials(&self, email: &str) -> StoreResult<Option<Credentials>>;
    /// Stores a dashboard session by its token's hash; purges expired sessions.
    async fn create_session(
        &self,
        user_id: i64,
        token_hash: &str,
        now: i64,
        expires_at: i64,
    ) -> StoreResult<()>;
    /// The user of the session whose token hashes to `token_hash`, if alive at `now`.
    async fn session_user(&self, token_hash: &str, now: i64) -> StoreResult<Option<SessionUser>>;
    /// Ends a session; false when there was none.
    async fn delete_session(&self, token_hash: &str) -> StoreResult<bool>;
    /// A program with `user_id`'s membership in its workspace; `None` when the program
    /// does not exist.
    async fn program_access(
        &self,
        program_id: i64,
        user_id: i64,
    ) -> StoreResult<Option<DashboardProgram>>;
    /// The program's `daily_rollups` rows from `from_day` to `to_day` (inclusive), by day.
    async fn daily_rollups(
        &self,
        program_id: i64,
        from_day: &str,
        to_day: &str,
    ) -> StoreResult<Vec<DailyRollup>>;
    /// A partner's `partner_daily_rollups` rows in a program from `from_day` to `to_day`
    /// (inclusive), by day (`partners` is 0).
    async fn partner_daily_rollups(
        &self,
        program_id: i64,
        partner_id: i64,
        from_day: &str,
        to_day: &str,
    ) -> StoreResult<Vec<DailyRollup>>;
    /// Test events and approved partners of a program, for its setup status.
    async fn setup_status(&self, program_id: i64) -> StoreResult<SetupStatus>;
    /// How many real events of the program match `filter`.
    async fn count_events(&self, program_id: i64, filter: &EventFilter) -> StoreResult<i64>;
    /// One page of the program's real events matching `filter`, newest first.
    async fn list_events(
        &self,
        program_id: i64,
        filter: &EventFilter,
        limit: i64,
        offset: i64,
    ) -> StoreResult<Vec<ListedEvent>>;
}

/// Opens the database named by `url` (`sqlite://…` or `postgres://…`) and applies
/// pending migrations.
pub async fn open(url: &str) -> anyhow::Result<Arc<dyn Store>> {
    open_as(url, true).await
}

/// Opens the database named by `url` as [`open`] does, for a command that works on an
/// existing database: a SQLite file that does not exist, or a PostgreSQL database
/// without Reftrack's tables, is refused rather than created.
pub async fn open_existing(url: &str) -> anyhow::Result<Arc<dyn Store>> {
    open_as(url, false).await
}

/// The store of `url`; `create`: a missing SQLite file, or PostgreSQL database without
/// tables, is made rather than refused.
async fn open_as(url: &str, create: bool) -> anyhow::Result<Arc<dyn Store>> {
    if url.starts_with("sqlite:") {
        Ok(Arc::new(sqlite::SqliteStore::open_as(url, create).await?))
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        Ok(Arc::new(
            postgres::PostgresStore::open_as(url, create).await?,
        ))
    } else {
        anyhow::bail!("unsupported database URL: expected sqlite://PATH or postgres://…")
    }
}

/// Applies pending migrations of the database named by `url`, then returns.
pub async fn migrate(url: &str) -> anyhow::Result<()> {
    open(url).await?.close().await;
    Ok(())
}
