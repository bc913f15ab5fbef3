//! The statements both databases run as written, generic over the [`Engine`] they run on:
//! `admin` (settings, workspaces, programs, partners, links, users, memberships and the
//! lookups of the tracking API), `reports` (dashboard sessions and reads), `verify` (the
//! integrity snapshot), `tx` (the statements of the tracking flows), `write` (the group
//! committer's connection), `counters` (the counter and rollup updates of a batch), `rows`
//! (the rows of the engines' set-based statements), `batch` (what those statements share:
//! the rows of new clicks and plain sales, the flow of plain sales), `migrations`, and,
//! for benchmarks, `seed`. What differs between the databases (connections, the
//! set-based statements of the committer, a few statement forms) is the engine's, in
//! `store::sqlite` and `store::postgres`.

mod admin;
pub mod batch;
pub mod counters;
mod coupons;
pub mod engine;
mod management;
pub mod migrations;
mod partners;
mod payouts;
mod reports;
pub mod rows;
#[cfg(feature = "bench")]
pub mod seed;
mod tx;
mod verify;
pub mod webhooks;
pub mod write;

use async_trait::async_trait;
use sqlx::Pool;

/// The upper bound of a keyset page without a cursor, as
/// `id < COALESCE($n, NO_CURSOR)`: a range the planner can seek by an index, where
/// `($n IS NULL OR id < $n)` makes every later page scan the rows before it.
pub(super) const NO_CURSOR: &str = "9223372036854775807";

/// The end of a keyset page's query, highest `key` first: the rows below the cursor
/// `$n`, at most `$n+1` of them. [`Stmt::page`](engine::Stmt::page) binds the two.
pub(super) fn keyset(key: &str, n: usize) -> String {
    format!(
        "{key} < COALESCE(${n}, {NO_CURSOR}) ORDER BY {key} DESC LIMIT ${}",
        n + 1
    )
}

/// Whether the emails of a sale's customer `c` and of its partner `pa` (`LEFT JOIN`ed)
/// show, by their stored self-referral keys, that the sale is no self-referral. A sale
/// that fails it (the keys match, or an email predates its key) is left to its own flow,
/// which applies the rule ([`crate::domain::self_referral`]) and flags it.
pub const NO_SELF_REFERRAL: &str = "(c.email IS NULL OR (c.email_key IS NOT NULL \
    AND (pa.email IS NULL OR (pa.email_key IS NOT NULL AND pa.email_key <> c.email_key)) \
    AND (pa.account_email IS NULL OR (pa.account_email_key IS NOT NULL \
    AND pa.account_email_key <> c.email_key))))";

pub use engine::Engine;
use engine::{stmt, Rec};

use super::committer::{CommitStats, Committer};
use super::error::{StoreError, StoreResult};
use super::write::Write;
use super::{
    integrity, Backend, Coupon, Credentials, DailyRollup, DashboardProgram, EventFilter,
    FirstRunRecords, Link, LinkPatch, LinkTarget, ListedEvent, Membership, NewCoupon, NewOwner,
    NewProgram, Page, Partner, PartnerPatch, PartnerProgram, PaymentAccount, PoolUse, Program,
    ProgramPatch, SessionUser, SetupStatus, Store, User, Workspace,
};
use crate::domain::status::{
    CommissionFlag, CouponStatus, LinkStatus, MembershipStatus, Role, UnknownValue,
};

/// A store on a database of engine `DB`: the read pool, the write pool (the same pool on
/// PostgreSQL) and the group committer writing through it.
pub struct SqlStore<DB: Engine> {
    pub(super) read: Pool<DB>,
    pub(super) write: Pool<DB>,
    pub(super) committer: Committer,
}

#[async_trait]
impl<DB: Engine> Store for SqlStore<DB> {
    fn backend(&self) -> Backend {
        DB::BACKEND
    }

    async fn ping(&self) -> StoreResult<()> {
        stmt::<DB>("SELECT 1")
            .execute(&mut *self.read.acquire().await?)
            .await?;
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

    fn commit_stats(&self) -> &CommitStats {
        self.committer.stats()
    }

    fn pool_use(&self) -> Vec<PoolUse> {
        let (read, write) = DB::POOL_NAMES;
        std::iter::once((read, &self.read))
            .chain(write.map(|name| (name, &self.write)))
            .map(|(pool, p)| {
                let open = p.size();
                PoolUse {
                    pool,
                    open,
                    in_use: open.saturating_sub(p.num_idle() as u32),
                    max: p.options().get_max_connections(),
                }
            })
            .collect()
    }

    async fn setting(&self, key: &str) -> StoreResult<Option<String>> {
        admin::setting::<DB>(&mut *self.read.acquire().await?, key).await
    }

    async fn set_setting(&self, key: &str, value: &str) -> StoreResult<()> {
        admin::set_setting::<DB>(&mut *self.write.acquire().await?, key, value).await
    }

    async fn create_workspace(&self, name: &str, at: i64) -> StoreResult<Workspace> {
        admin::create_workspace::<DB>(&mut *self.write.acquire().await?, name, at).await
    }

    async fn create_program(&self, p: &NewProgram, at: i64) -> StoreResult<Program> {
        admin::create_program::<DB>(&mut *self.write.acquire().await?, p, at).await
    }

    async fn program(&self, id: i64) -> StoreResult<Program> {
        admin::program::<DB>(&mut *self.read.acquire().await?, id).await
    }

    async fn program_by_token(&self, token_hash: &str) -> StoreResult<Option<Program>> {
        admin::program_by_token::<DB>(&mut *self.read.acquire().await?, token_hash).await
    }

    async fn update_program(&self, id: i64, patch: &ProgramPatch, at: i64) -> StoreResult<Program> {
        admin::update_program::<DB>(&mut *self.write.acquire().await?, id, patch, at).await
    }

    async fn set_program_token(
        &self,
        id: i64,
        hash: &str,
        prefix: &str,
        at: i64,
    ) -> StoreResult<Program> {
        admin::set_program_token::<DB>(&mut *self.write.acquire().await?, id, hash, prefix, at)
            .await
    }

    async fn set_payment_account(
        &self,
        id: i64,
        account: &PaymentAccount,
        at: i64,
    ) -> StoreResult<Program> {
        admin::set_payment_account::<DB>(&mut *self.write.acquire().await?, id, account, at).await
    }

    async fn create_partner(
        &self,
        name: &str,
        code: &str,
        email: Option<&str>,
        workspace_id: Option<i64>,
        at: i64,
    ) -> StoreResult<Partner> {
        let conn = &mut *self.write.acquire().await?;
        admin::create_partner::<DB>(conn, name, code, email, workspace_id, at).await
    }

    async fn partner_program(
        &self,
        program_id: i64,
        partner_id: i64,
    ) -> StoreResult<PartnerProgram> {
        admin::partner_program::<DB>(&mut *self.read.acquire().await?, program_id, partner_id).await
    }

    async fn update_partner(&self, id: i64, patch: &PartnerPatch) -> StoreResult<Partner> {
        admin::update_partner::<DB>(&mut *self.write.acquire().await?, id, patch).await
    }

    async fn create_link(
        &self,
        program_id: i64,
        partner_id: Option<i64>,
        short_link: &str,
        status: LinkStatus,
        destination_url: Option<&str>,
        at: i64,
    ) -> StoreResult<Link> {
        admin::create_link::<DB>(
            &mut *self.write.acquire().await?,
            program_id,
            partner_id,
            short_link,
            status,
            destination_url,
            at,
        )
        .await
    }

    async fn link(&self, id: i64) -> StoreResult<Link> {
        admin::link::<DB>(&mut *self.read.acquire().await?, id).await
    }

    async fn update_link(&self, id: i64, patch: &LinkPatch) -> StoreResult<Link> {
        admin::update_link::<DB>(&mut *self.write.acquire().await?, id, patch).await
    }

    async fn create_coupon(&self, c: &NewCoupon, at: i64) -> StoreResult<Coupon> {
        coupons::create::<DB>(&mut *self.write.acquire().await?, c, at).await
    }

    async fn link_coupons(
        &self,
        link_id: i64,
        status: Option<CouponStatus>,
        page: Page,
    ) -> StoreResult<Vec<Coupon>> {
        coupons::of_link::<DB>(&mut *self.read.acquire().await?, link_id, status, page).await
    }

    async fn coupon(&self, link_id: i64, coupon_id: i64) -> StoreResult<Coupon> {
        coupons::one::<DB>(&mut *self.read.acquire().await?, link_id, coupon_id).await
    }

    async fn archive_coupon(
        &self,
        link_id: i64,
        coupon_id: i64,
        at: i64,
    ) -> StoreResult<Option<Coupon>> {
        coupons::archive::<DB>(&mut *self.write.acquire().await?, link_id, coupon_id, at).await
    }

    async fn create_user(
        &self,
        email: &str,
        password_hash: &str,
        name: Option<&str>,
        at: i64,
    ) -> StoreResult<User> {
        admin::create_user::<DB>(
            &mut *self.write.acquire().await?,
            email,
            password_hash,
            name,
            at,
        )
        .await
    }

    async fn has_users(&self) -> StoreResult<bool> {
        admin::has_users::<DB>(&mut *self.read.acquire().await?).await
    }

    async fn first_run(
        &self,
        owner: &NewOwner<'_>,
        p: &NewProgram,
        at: i64,
    ) -> StoreResult<FirstRunRecords> {
        admin::first_run::<DB>(&mut *self.write.acquire().await?, owner, p, at).await
    }

    async fn add_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        role: Role,
        status: MembershipStatus,
        at: i64,
    ) -> StoreResult<Membership> {
        admin::add_member::<DB>(
            &mut *self.write.acquire().await?,
            workspace_id,
            user_id,
            role,
            status,
            at,
        )
        .await
    }

    async fn update_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        role: Option<Role>,
        status: Option<MembershipStatus>,
    ) -> StoreResult<Membership> {
        admin::update_member::<DB>(
            &mut *self.write.acquire().await?,
            workspace_id,
            user_id,
            role,
            status,
        )
        .await
    }

    async fn link_target(&self, short_link: &str) -> StoreResult<Option<LinkTarget>> {
        admin::link_target::<DB>(&mut *self.read.acquire().await?, short_link).await
    }

    async fn any_program_allows_origin(&self, origin: &str) -> StoreResult<bool> {
        admin::any_program_allows_origin::<DB>(&mut *self.read.acquire().await?, origin).await
    }

    async fn user_credentials(&self, email: &str) -> StoreResult<Option<Credentials>> {
        reports::user_credentials::<DB>(&mut *self.read.acquire().await?, email).await
    }

    async fn create_session(
        &self,
        user_id: i64,
        token_hash: &str,
        now: i64,
        expires_at: i64,
    ) -> StoreResult<()> {
        reports::create_session::<DB>(
            &mut *self.write.acquire().await?,
            user_id,
            token_hash,
            now,
            expires_at,
        )
        .await
    }

    async fn session_user(&self, token_hash: &str, now: i64) -> StoreResult<Option<SessionUser>> {
        reports::session_user::<DB>(&mut *self.read.acquire().await?, token_hash, now).await
    }

    async fn delete_session(&self, token_hash: &str) -> StoreResult<bool> {
        reports::delete_session::<DB>(&mut *self.write.acquire().await?, token_hash).await
    }

    async fn program_access(
        &self,
        program_id: i64,
        user_id: i64,
    ) -> StoreResult<Option<DashboardProgram>> {
        reports::program_access::<DB>(&mut *self.read.acquire().await?, program_id, user_id).await
    }

    async fn daily_rollups(
        &self,
        program_id: i64,
        from_day: &str,
        to_day: &str,
    ) -> StoreResult<Vec<DailyRollup>> {
        reports::daily_rollups::<DB>(
            &mut *self.read.acquire().await?,
            program_id,
            None,
            from_day,
            to_day,
        )
        .await
    }

    async fn partner_daily_rollups(
        &self,
        program_id: i64,
        partner_id: i64,
        from_day: &str,
        to_day: &str,
    ) -> StoreResult<Vec<DailyRollup>> {
        reports::daily_rollups::<DB>(
            &mut *self.read.acquire().await?,
            program_id,
            Some(partner_id),
            from_day,
            to_day,
        )
        .await
    }

    async fn setup_status(&self, program_id: i64) -> StoreResult<SetupStatus> {
        reports::setup_status::<DB>(&mut *self.read.acquire().await?, program_id).await
    }

    async fn count_events(&self, program_id: i64, filter: &EventFilter) -> StoreResult<i64> {
        reports::count_events::<DB>(&mut *self.read.acquire().await?, program_id, filter).await
    }

    async fn list_events(
        &self,
        program_id: i64,
        filter: &EventFilter,
        limit: i64,
        offset: i64,
    ) -> StoreResult<Vec<ListedEvent>> {
        reports::list_events::<DB>(
            &mut *self.read.acquire().await?,
            program_id,
            filter,
            limit,
            offset,
        )
        .await
    }

    async fn integrity(&self) -> StoreResult<integrity::Integrity> {
        verify::integrity::<DB>(&self.read).await
    }
}

/// Decodes the stored JSON list of a program's allowed origins.
fn parse_origins(stored: &str) -> Vec<String> {
    serde_json::from_str(stored).unwrap_or_default()
}

/// Reads a text column holding one name of a closed set (a status, a role).
fn named<DB: Engine, T>(row: &Rec<DB>, column: &str) -> StoreResult<T>
where
    T: TryFrom<String, Error = UnknownValue>,
{
    let stored: String = row.try_get(column)?;
    T::try_from(stored).map_err(|e| unreadable(column, e))
}

/// Reads the text column at `index` holding one name of a closed set.
fn named_at<DB: Engine, T>(row: &Rec<DB>, index: usize) -> StoreResult<T>
where
    T: TryFrom<String, Error = UnknownValue>,
{
    let stored: String = row.try_get_at(index)?;
    T::try_from(stored).map_err(|e| unreadable("status", e))
}

/// Reads a nullable text column holding one name of a closed set.
fn named_opt<DB: Engine, T>(row: &Rec<DB>, column: &str) -> StoreResult<Option<T>>
where
    T: TryFrom<String, Error = UnknownValue>,
{
    let stored: Option<String> = row.try_get(column)?;
    stored
        .map(T::try_from)
        .transpose()
        .map_err(|e| unreadable(column, e))
}

/// Commission flags as stored: their names, comma-separated; null when there are none.
fn flags_text(flags: &[CommissionFlag]) -> Option<String> {
    (!flags.is_empty()).then(|| {
        flags
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join(",")
    })
}

/// Reads the commission flags of [`flags_text`] from `column`.
fn flags<DB: Engine>(row: &Rec<DB>, column: &str) -> StoreResult<Vec<CommissionFlag>> {
    let stored: Option<String> = row.try_get(column)?;
    stored
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|f| !f.is_empty())
        .map(|f| f.parse().map_err(|e| unreadable(column, e)))
        .collect()
}

/// A stored name outside its set: the data, not the request, is wrong.
fn unreadable(column: &str, e: UnknownValue) -> StoreError {
    StoreError::Other(anyhow::anyhow!("column {column} holds a value not {e}"))
}
