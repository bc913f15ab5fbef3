//! Storage: one interface ([`Store`]), two implementations on the same SQL.
//!
//! The SQL itself is written once, in `src/store/shared/*.rs`, and compiled twice:
//! `sqlite.rs` and `postgres.rs` each `include!` it after naming their database type and
//! the few statements that differ. Each copy is checked by the compiler against its
//! concrete sqlx driver, with no generic trait bounds and no runtime type mapping.
//!
//! Writes of the tracking API go through a group committer (see `shared/committer.rs`):
//! concurrent requests share one transaction, each in its own savepoint, with their
//! counter and rollup increments folded and applied once before the commit. Every
//! caller is answered only after that commit.

pub mod cache;
pub mod dashboard_model;
pub mod deltas;
pub mod integrity;
pub mod model;
pub mod postgres;
pub mod sqlite;

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::Result;
pub use dashboard_model::*;
pub use model::*;

/// Which database a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite file (the default).
    Sqlite,
    /// A PostgreSQL server, possibly shared by several processes.
    Postgres,
}

/// The storage interface of the service. Every query about tracking data is scoped by
/// program.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The database behind this store.
    fn backend(&self) -> Backend;
    /// Succeeds when the database answers a trivial query.
    async fn ping(&self) -> Result<()>;
    /// Waits until every write accepted so far is committed, then stops the writers.
    async fn close(&self);

    /// Reads a setting.
    async fn setting(&self, key: &str) -> Result<Option<String>>;
    /// Writes a setting.
    async fn set_setting(&self, key: &str, value: &str) -> Result<()>;

    /// Creates a workspace.
    async fn create_workspace(&self, name: &str) -> Result<Workspace>;
    /// Creates a program; 404 for an unknown workspace.
    async fn create_program(&self, p: NewProgram) -> Result<Program>;
    /// One program; 404 when unknown.
    async fn program(&self, id: i64) -> Result<Program>;
    /// The program whose API token hashes to `token_hash`.
    async fn program_by_token(&self, token_hash: &str) -> Result<Option<Program>>;
    /// Changes a program.
    async fn update_program(&self, id: i64, patch: ProgramPatch) -> Result<Program>;
    /// Replaces a program's API token.
    async fn set_program_token(&self, id: i64, hash: &str, prefix: &str) -> Result<Program>;
    /// Sets a program's payment-account fields.
    async fn set_payment_account(&self, id: i64, account: PaymentAccount) -> Result<Program>;
    /// Creates a partner; 409 when the code is taken.
    async fn create_partner(&self, name: &str, code: &str, email: Option<&str>) -> Result<Partner>;
    /// Creates a partner-program record; 404 for unknown ids, 409 when it exists.
    async fn add_program_partner(
        &self,
        program_id: i64,
        partner_id: i64,
        status: &str,
    ) -> Result<PartnerProgram>;
    /// Creates a referral link.
    async fn create_link(
        &self,
        program_id: i64,
        partner_id: Option<i64>,
        short_link: &str,
        status: &str,
    ) -> Result<Link>;
    /// One link; 404 when unknown.
    async fn link(&self, id: i64) -> Result<Link>;
    /// Changes a link's status.
    async fn set_link_status(&self, id: i64, status: &str) -> Result<Link>;
    /// Creates a dashboard user.
    async fn create_user(
        &self,
        email: &str,
        password_hash: &str,
        name: Option<&str>,
    ) -> Result<User>;
    /// Adds a user to a workspace.
    async fn add_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        role: &str,
        status: &str,
    ) -> Result<Membership>;
    /// Changes a membership; `None` leaves a field as it is.
    async fn update_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        role: Option<&str>,
        status: Option<&str>,
    ) -> Result<Membership>;

    /// A referral link by its `short_link`, with its program and partner.
    async fn link_target(&self, short_link: &str) -> Result<Option<LinkTarget>>;
    /// Whether any program admits `origin` (used to answer CORS preflights, which carry
    /// no program).
    async fn any_program_allows_origin(&self, origin: &str) -> Result<bool>;

    /// Records a real click; returns its click id.
    async fn record_click(&self, click: NewClick) -> Result<String>;
    /// Records a test click; returns the event id.
    async fn record_test_click(&self, click: NewTestClick) -> Result<i64>;
    /// Records a real lead.
    async fn record_lead(&self, lead: NewLead) -> Result<()>;
    /// Records a test lead; returns the event id.
    async fn record_test_lead(&self, lead: NewTestLead) -> Result<i64>;
    /// Records a sale with its commission.
    async fn record_sale(&self, sale: NewSale) -> Result<SaleOutcome>;
    /// Applies a refund to a sale of the program.
    async fn record_refund(&self, refund: NewRefund) -> Result<RefundOutcome>;

    /// The id and password hash of the user with `email` (already normalised).
    async fn user_credentials(&self, email: &str) -> Result<Option<Credentials>>;
    /// Stores a dashboard session by its token's hash; purges expired sessions.
    async fn create_session(
        &self,
        user_id: i64,
        token_hash: &str,
        now: i64,
        expires_at: i64,
    ) -> Result<()>;
    /// The user of the session whose token hashes to `token_hash`, if it is alive at `now`.
    async fn session_user(&self, token_hash: &str, now: i64) -> Result<Option<SessionUser>>;
    /// Ends a session; false when there was none.
    async fn delete_session(&self, token_hash: &str) -> Result<bool>;
    /// A program with `user_id`'s membership in its workspace; `None` when the program
    /// does not exist.
    async fn program_access(
        &self,
        program_id: i64,
        user_id: i64,
    ) -> Result<Option<DashboardProgram>>;
    /// The program's `daily_rollups` rows from `from_day` to `to_day` (inclusive), by day.
    async fn daily_rollups(
        &self,
        program_id: i64,
        from_day: &str,
        to_day: &str,
    ) -> Result<Vec<DailyRollup>>;
    /// Test events and approved partners of a program (§4.6).
    async fn setup_status(&self, program_id: i64) -> Result<SetupStatus>;
    /// How many real events of the program match `filter` (§4.7 `total`).
    async fn count_events(&self, program_id: i64, filter: &EventFilter) -> Result<i64>;
    /// One page of the program's real events matching `filter`, newest first.
    async fn list_events(
        &self,
        program_id: i64,
        filter: &EventFilter,
        limit: i64,
        offset: i64,
    ) -> Result<Vec<ListedEvent>>;

    /// Processes a verified Stripe webhook event for a program, once per event id.
    /// Returns a short description of what it did.
    async fn record_stripe_event(
        &self,
        program: SaleProgram,
        event: crate::domain::stripe::Event,
    ) -> Result<String>;

    /// Stored and recomputed figures and broken invariants, from one snapshot (for
    /// `reftrack verify`).
    async fn integrity(&self) -> Result<integrity::Integrity>;
}

/// Opens the database named by `url` (`sqlite://…` or `postgres://…`) and applies
/// pending migrations.
pub async fn open(url: &str) -> anyhow::Result<Arc<dyn Store>> {
    if url.starts_with("sqlite:") {
        Ok(Arc::new(sqlite::SqlStore::open(url).await?))
    } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        Ok(Arc::new(postgres::SqlStore::open(url).await?))
    } else {
        anyhow::bail!("unsupported database URL: expected sqlite://PATH or postgres://…")
    }
}

/// Applies pending migrations of the database named by `url`, then returns.
pub async fn migrate(url: &str) -> anyhow::Result<()> {
    open(url).await?.close().await;
    Ok(())
}
