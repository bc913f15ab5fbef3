//! The PostgreSQL store: one pool shared by readers and by the group committer's writer,
//! so that many processes may share the database.
//!
//! Its modules own all of its SQL: `admin` (settings, workspaces, programs, partners,
//! links, users, memberships and the lookups of the tracking API), `reports` (dashboard
//! sessions and reads), `verify` (the integrity snapshot), `tx` (the statements of the
//! tracking flows), `write` (the committer's connection), `batch` (the set-based click
//! and sale statements), `counters` and `rows` (the `VALUES` lists those read), and, for
//! benchmarks, `seed`.

mod admin;
mod batch;
mod counters;
mod reports;
mod rows;
#[cfg(feature = "bench")]
pub mod seed;
mod tx;
mod verify;
mod write;

use std::sync::Arc;

use async_trait::async_trait;
use std::time::Duration;

use sqlx::postgres::{PgPoolOptions, PgRow, Postgres};
use sqlx::{Pool, Row};

use super::committer::{Committer, CommitterConfig};
use super::error::{StoreError, StoreResult};
use super::write::Write;
use super::{
    integrity, Backend, Credentials, DailyRollup, DashboardProgram, EventFilter, Link, LinkTarget,
    ListedEvent, Membership, NewProgram, Partner, PaymentAccount, Program, ProgramPatch,
    SessionUser, SetupStatus, Store, User, Workspace,
};
use crate::domain::status::{LinkStatus, MembershipStatus, Role, UnknownValue};

/// The schema, applied when the store opens.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

/// A store on a PostgreSQL database: one pool for reads and the committer's writer.
pub struct PostgresStore {
    read: Pool<Postgres>,
    write: Pool<Postgres>,
    committer: Committer,
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://…`), applies pending migrations
    /// and starts the writer.
    pub async fn open(url: &str) -> anyhow::Result<Self> {
        // Short timeouts, so that an outage turns into quick 503s rather than hung
        // requests.
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(5))
            .connect(url)
            .await?;
        accept_reworded_migrations(&pool).await?;
        MIGRATOR.run(&pool).await?;
        let committer = Committer::start(
            Arc::new(write::WritePool::new(pool.clone())),
            CommitterConfig {
                // One writer per process: batches serialise on the counter rows they
                // update anyway (each holds their locks through its commit), and a second
                // writer only splits the batches.
                writers: 1,
                // The pool has other connections for everyone else: the writer keeps its
                // own, saving a check-out per batch.
                keep_connection: true,
                // PostgreSQL commits durably itself.
                wal_file: None,
            },
        );
        Ok(PostgresStore {
            read: pool.clone(),
            write: pool,
            committer,
        })
    }
}

/// Migrations whose comments were reworded after they shipped (their SQL is unchanged),
/// with the checksum a database that applied the earlier text has on record.
const REWORDED_MIGRATIONS: [(i64, &str); 2] = [
    (
        1,
        "111197742e781e5e9ff1d00c64b29c1d28f6a155f0c79e3af70052a91b10eb574ac89befcf82ec4116cad5dacdbd3ec1",
    ),
    (
        2,
        "075b0ea63a58c16df6e2c427ea47b3cc37db0dc47e3ffc907d7f1f95d9aa575e7aaeeafb49c6029db939f38f37920bdc",
    ),
];

/// Records the current checksum of every migration in [`REWORDED_MIGRATIONS`] that a
/// database applied in its earlier wording, so that the migrator finds it up to date.
async fn accept_reworded_migrations(pool: &Pool<Postgres>) -> anyhow::Result<()> {
    for (version, earlier) in REWORDED_MIGRATIONS {
        let Some(now) = MIGRATOR.iter().find(|m| m.version == version) else {
            continue;
        };
        let earlier = hex::decode(earlier)?;
        let updated = sqlx::query(
            "UPDATE _sqlx_migrations SET checksum = $1 WHERE version = $2 AND checksum = $3",
        )
        .bind(now.checksum.as_ref())
        .bind(version)
        .bind(earlier)
        .execute(pool)
        .await;
        // No migrations table yet: a new database.
        if updated.is_err() {
            return Ok(());
        }
    }
    Ok(())
}

#[async_trait]
impl Store for PostgresStore {
    fn backend(&self) -> Backend {
        Backend::Postgres
    }

    async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.read).await?;
        Ok(())
    }

    async fn close(&self) {
        self.committer.close().await;
        self.write.close().await;
    }

    async fn submit(&self, write: Write) {
        self.committer.submit(write).await;
    }

    async fn setting(&self, key: &str) -> StoreResult<Option<String>> {
        admin::setting(&self.read, key).await
    }

    async fn set_setting(&self, key: &str, value: &str) -> StoreResult<()> {
        admin::set_setting(&self.write, key, value).await
    }

    async fn create_workspace(&self, name: &str, at: i64) -> StoreResult<Workspace> {
        admin::create_workspace(&self.write, name, at).await
    }

    async fn create_program(&self, p: &NewProgram, at: i64) -> StoreResult<Program> {
        admin::create_program(&self.write, p, at).await
    }

    async fn program(&self, id: i64) -> StoreResult<Program> {
        admin::program(&self.read, id).await
    }

    async fn program_by_token(&self, token_hash: &str) -> StoreResult<Option<Program>> {
        admin::program_by_token(&self.read, token_hash).await
    }

    async fn update_program(&self, id: i64, patch: &ProgramPatch, at: i64) -> StoreResult<Program> {
        admin::update_program(&self.write, id, patch, at).await
    }

    async fn set_program_token(
        &self,
        id: i64,
        hash: &str,
        prefix: &str,
        at: i64,
    ) -> StoreResult<Program> {
        admin::set_program_token(&self.write, id, hash, prefix, at).await
    }

    async fn set_payment_account(
        &self,
        id: i64,
        account: &PaymentAccount,
        at: i64,
    ) -> StoreResult<Program> {
        admin::set_payment_account(&self.write, id, account, at).await
    }

    async fn create_partner(
        &self,
        name: &str,
        code: &str,
        email: Option<&str>,
        at: i64,
    ) -> StoreResult<Partner> {
        admin::create_partner(&self.write, name, code, email, at).await
    }

    async fn create_link(
        &self,
        program_id: i64,
        partner_id: Option<i64>,
        short_link: &str,
        status: LinkStatus,
        at: i64,
    ) -> StoreResult<Link> {
        admin::create_link(&self.write, program_id, partner_id, short_link, status, at).await
    }

    async fn link(&self, id: i64) -> StoreResult<Link> {
        admin::link(&self.read, id).await
    }

    async fn set_link_status(&self, id: i64, status: LinkStatus) -> StoreResult<Link> {
        admin::set_link_status(&self.write, id, status).await
    }

    async fn create_user(
        &self,
        email: &str,
        password_hash: &str,
        name: Option<&str>,
        at: i64,
    ) -> StoreResult<User> {
        admin::create_user(&self.write, email, password_hash, name, at).await
    }

    async fn add_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        role: Role,
        status: MembershipStatus,
        at: i64,
    ) -> StoreResult<Membership> {
        admin::add_member(&self.write, workspace_id, user_id, role, status, at).await
    }

    async fn update_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        role: Option<Role>,
        status: Option<MembershipStatus>,
    ) -> StoreResult<Membership> {
        admin::update_member(&self.write, workspace_id, user_id, role, status).await
    }

    async fn link_target(&self, short_link: &str) -> StoreResult<Option<LinkTarget>> {
        admin::link_target(&self.read, short_link).await
    }

    async fn any_program_allows_origin(&self, origin: &str) -> StoreResult<bool> {
        admin::any_program_allows_origin(&self.read, origin).await
    }

    async fn user_credentials(&self, email: &str) -> StoreResult<Option<Credentials>> {
        reports::user_credentials(&self.read, email).await
    }

    async fn create_session(
        &self,
        user_id: i64,
        token_hash: &str,
        now: i64,
        expires_at: i64,
    ) -> StoreResult<()> {
        reports::create_session(&self.write, user_id, token_hash, now, expires_at).await
    }

    async fn session_user(&self, token_hash: &str, now: i64) -> StoreResult<Option<SessionUser>> {
        reports::session_user(&self.read, token_hash, now).await
    }

    async fn delete_session(&self, token_hash: &str) -> StoreResult<bool> {
        reports::delete_session(&self.write, token_hash).await
    }

    async fn program_access(
        &self,
        program_id: i64,
        user_id: i64,
    ) -> StoreResult<Option<DashboardProgram>> {
        reports::program_access(&self.read, program_id, user_id).await
    }

    async fn daily_rollups(
        &self,
        program_id: i64,
        from_day: &str,
        to_day: &str,
    ) -> StoreResult<Vec<DailyRollup>> {
        reports::daily_rollups(&self.read, program_id, from_day, to_day).await
    }

    async fn setup_status(&self, program_id: i64) -> StoreResult<SetupStatus> {
        reports::setup_status(&self.read, program_id).await
    }

    async fn count_events(&self, program_id: i64, filter: &EventFilter) -> StoreResult<i64> {
        reports::count_events(&self.read, program_id, filter).await
    }

    async fn list_events(
        &self,
        program_id: i64,
        filter: &EventFilter,
        limit: i64,
        offset: i64,
    ) -> StoreResult<Vec<ListedEvent>> {
        reports::list_events(&self.read, program_id, filter, limit, offset).await
    }

    async fn integrity(&self) -> StoreResult<integrity::Integrity> {
        verify::integrity(&self.read).await
    }
}

/// Decodes the stored JSON list of a program's allowed origins.
fn parse_origins(stored: &str) -> Vec<String> {
    serde_json::from_str(stored).unwrap_or_default()
}

/// Reads a text column holding one name of a closed set (a status, a role).
fn named<T>(row: &PgRow, column: &str) -> StoreResult<T>
where
    T: TryFrom<String, Error = UnknownValue>,
{
    let stored: String = row.try_get(column)?;
    T::try_from(stored).map_err(|e| unreadable(column, e))
}

/// Reads a nullable text column holding one name of a closed set.
fn named_opt<T>(row: &PgRow, column: &str) -> StoreResult<Option<T>>
where
    T: TryFrom<String, Error = UnknownValue>,
{
    let stored: Option<String> = row.try_get(column)?;
    stored
        .map(T::try_from)
        .transpose()
        .map_err(|e| unreadable(column, e))
}

/// A stored name outside its set: the data, not the request, is wrong.
fn unreadable(column: &str, e: UnknownValue) -> StoreError {
    StoreError::Other(anyhow::anyhow!("column {column} holds a value not {e}"))
}
