//! The SQLite store: one file in WAL mode, one write connection shared by the group
//! committer (whose transactions take `BEGIN IMMEDIATE`) and the management writes, and a
//! small pool of read-only connections for everything else.
//!
//! Its modules own all of its SQL: `connect` (pools, durability, checkpoints), `admin`
//! (settings, workspaces, programs, partners, links, users, memberships and the lookups
//! of the tracking API), `reports` (dashboard sessions and reads), `verify` (the
//! integrity snapshot), `tx` (the statements of the tracking flows), `write` (the
//! committer's connection), `batch` (the set-based click and sale statements), `counters`
//! and `rows` (the `VALUES` lists those read), and, for benchmarks, `seed`.

mod admin;
mod batch;
mod connect;
mod counters;
mod reports;
mod rows;
#[cfg(feature = "bench")]
pub mod seed;
#[cfg(test)]
mod tests;
mod tx;
mod verify;
mod write;

use std::sync::Arc;

use async_trait::async_trait;
use sqlx::sqlite::{Sqlite, SqliteRow};
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
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");

/// A store on one SQLite file: the read pool, the one-connection write pool and the group
/// committer writing through it.
pub struct SqliteStore {
    read: Pool<Sqlite>,
    write: Pool<Sqlite>,
    committer: Committer,
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `url` (`sqlite://PATH`), applies
    /// pending migrations and starts the writer.
    pub async fn open(url: &str) -> anyhow::Result<Self> {
        let (read, write) = connect::pools(url).await?;
        accept_reworded_migrations(&write).await?;
        renumber_old_migrations(&write).await?;
        MIGRATOR.run(&write).await?;
        let committer = Committer::start(
            Arc::new(write::WritePool::new(write.clone())),
            CommitterConfig {
                // SQLite has one writer: more tasks would only queue on its lock.
                writers: 1,
                // The write connection also serves sessions and management writes.
                keep_connection: false,
                wal_file: connect::wal_file(url),
            },
        );
        Ok(SqliteStore {
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
const REWORDED_MIGRATIONS: [(i64, &str); 2] = [
    (
        1,
        "558c173ae9c20da6bbbadab15ab60931cc3130d3046d0b72c02c3b1e5fb273cf2d087deffa443e8cfb36e58d9a9a07b9",
    ),
    (
        2,
        "c192aa05f176f969a21ddbe574f75cda7bc5a78f0d076b6cba4a1aeaed36b0cd32ca79e0dd0862e22c57b23ebd986771",
    ),
];

/// Records the current checksum of every migration in [`REWORDED_MIGRATIONS`] that a
/// database applied in its earlier wording, so that the migrator finds it up to date.
async fn accept_reworded_migrations(pool: &Pool<Sqlite>) -> anyhow::Result<()> {
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
impl Store for SqliteStore {
    fn backend(&self) -> Backend {
        Backend::Sqlite
    }

    async fn ping(&self) -> StoreResult<()> {
        sqlx::query("SELECT 1").execute(&self.read).await?;
        Ok(())
    }

    async fn close(&self) {
        self.committer.close().await;
        self.write.close().await;
        self.read.close().await;
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
fn named<T>(row: &SqliteRow, column: &str) -> StoreResult<T>
where
    T: TryFrom<String, Error = UnknownValue>,
{
    let stored: String = row.try_get(column)?;
    T::try_from(stored).map_err(|e| unreadable(column, e))
}

/// Reads a nullable text column holding one name of a closed set.
fn named_opt<T>(row: &SqliteRow, column: &str) -> StoreResult<Option<T>>
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
