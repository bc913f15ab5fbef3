//! The statements both databases run as written, generic over the [`Engine`] they run on:
//! `admin` (settings, workspaces, programs, partners, links, users, memberships and the
//! lookups of the tracking API), `reports` (dashboard sessions and reads), `verify` (the
//! integrity snapshot), `tx` (the statements of the tracking flows), `write` (the group
//! committer's connection), `counters` (the counter and rollup updates of a batch), `rows`
//! (the rows of the engines' set-based statements), `batch` (what those statements share:
//! the rows of new clicks and plain sales, the flow of plain sales) and `migrations`. What differs between the databases (connections, the
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
pub mod rules;
pub use rules::{APPROVED_PARTNER_RECORD, NO_SELF_REFERRAL};
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

/// The placeholders `$first, $first+1, …` of `n` values, for an `IN (…)` list.
pub(super) fn params(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub use engine::Engine;
use engine::{stmt, Rec};

use super::committer::{CommitStats, Committer};
use super::error::{StoreError, StoreResult};
use super::write::Write;
use super::{
    integrity, Backend, Coupon, Credentials, DailyRollup, DashboardProgram, EventFilter,
    FirstRunRecords, Link, LinkPatch, LinkTarget, ListedEvent, Membership, NewCoupon, NewOwner,
    NewProgram, Page, Partner, PartnerPatch, PartnerProgram, PaymentAccount, PoolUse, Program,
    ProgramPatch, SessionUser, SetupStatus, Store, User, UserPatch, Workspace,
};
use reftrack_domain::status::{
    CommissionFlag, CouponStatus, LinkStatus, MembershipStatus, Role, UnknownValue,
};

/// A store on a database of engine `DB`: the read pool, the write pool (the same pool on
/// PostgreSQL) and the group committer writing through it.
pub struct SqlStore<DB: Engine> {
    pub(super) read: Pool<DB>,
    pub(super) write: Pool<DB>,
    pub(super) committer: Committer,
}

/// Implements [`Store`] for [`SqlStore`]: first the methods written out, then those that
/// run one statement function (`admin::setting`, …) on a connection of the `read` or the
/// `write` pool, passing their arguments on in order.
macro_rules! impl_store {
    (
        { $($own:tt)* }
        $($pool:ident $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty = $m:ident::$f:ident;)*
    ) => {
        #[async_trait]
        impl<DB: Engine> Store for SqlStore<DB> {
            $($own)*

            $(async fn $name(&self, $($arg: $ty),*) -> StoreResult<$ret> {
                $m::$f::<DB>(&mut *self.$pool.acquire().await?, $($arg),*).await
            })*
        }
    };
}

impl_store! {
    {
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

        async fn daily_rollups(
            &self,
            program_id: i64,
            from_day: &str,
            to_day: &str,
        ) -> StoreResult<Vec<DailyRollup>> {
            let conn = &mut *self.read.acquire().await?;
            reports::daily_rollups::<DB>(conn, program_id, None, from_day, to_day).await
        }

        async fn partner_daily_rollups(
            &self,
            program_id: i64,
            partner_id: i64,
            from_day: &str,
            to_day: &str,
        ) -> StoreResult<Vec<DailyRollup>> {
            let conn = &mut *self.read.acquire().await?;
            reports::daily_rollups::<DB>(conn, program_id, Some(partner_id), from_day, to_day)
                .await
        }

        async fn integrity(&self) -> StoreResult<integrity::Integrity> {
            verify::integrity::<DB>(&self.read).await
        }
    }

    read setting(key: &str) -> Option<String> = admin::setting;
    write set_setting(key: &str, value: &str) -> () = admin::set_setting;
    write create_workspace(name: &str, at: i64) -> Workspace = admin::create_workspace;
    write create_program(p: &NewProgram, at: i64) -> Program = admin::create_program;
    read program(id: i64) -> Program = admin::program;
    read program_by_token(token_hash: &str) -> Option<Program> = admin::program_by_token;
    write update_program(id: i64, patch: &ProgramPatch, at: i64) -> Program
        = admin::update_program;
    write set_program_token(
        id: i64,
        hash: &str,
        prefix: &str,
        keep_old_until: Option<i64>,
        at: i64
    ) -> Program
        = admin::set_program_token;
    write set_payment_account(id: i64, account: &PaymentAccount, at: i64) -> Program
        = admin::set_payment_account;
    write create_partner(
        name: &str,
        code: &str,
        email: Option<&str>,
        workspace_id: Option<i64>,
        at: i64
    ) -> Partner = admin::create_partner;
    read partner_program(program_id: i64, partner_id: i64) -> PartnerProgram
        = admin::partner_program;
    write update_partner(id: i64, patch: &PartnerPatch) -> Partner = admin::update_partner;
    write create_link(
        program_id: i64,
        partner_id: Option<i64>,
        short_link: &str,
        status: LinkStatus,
        destination_url: Option<&str>,
        at: i64
    ) -> Link = admin::create_link;
    read link(id: i64) -> Link = admin::link;
    write update_link(id: i64, patch: &LinkPatch) -> Link = admin::update_link;
    write create_coupon(c: &NewCoupon, at: i64) -> Coupon = coupons::create;
    read link_coupons(link_id: i64, status: Option<CouponStatus>, page: Page) -> Vec<Coupon>
        = coupons::of_link;
    read coupon(link_id: i64, coupon_id: i64) -> Coupon = coupons::one;
    write archive_coupon(link_id: i64, coupon_id: i64, at: i64) -> Option<Coupon>
        = coupons::archive;
    write create_user(email: &str, password_hash: &str, name: Option<&str>, at: i64) -> User
        = admin::create_user;
    read has_users() -> bool = admin::has_users;
    write update_user(id: i64, patch: &UserPatch) -> User = admin::update_user;
    read list_users(q: Option<&str>, page: Page) -> Vec<User> = admin::list_users;
    write first_run(owner: &NewOwner<'_>, p: &NewProgram, public_url: Option<&str>, at: i64)
        -> FirstRunRecords
        = admin::first_run;
    write add_member(
        workspace_id: i64,
        user_id: i64,
        role: Role,
        status: MembershipStatus,
        at: i64
    ) -> Membership = admin::add_member;
    write update_member(
        workspace_id: i64,
        user_id: i64,
        role: Option<Role>,
        status: Option<MembershipStatus>
    ) -> Membership = admin::update_member;
    read link_target(short_link: &str) -> Option<LinkTarget> = admin::link_target;
    read any_program_allows_origin(origin: &str) -> bool = admin::any_program_allows_origin;
    read user_credentials(email: &str) -> Option<Credentials> = reports::user_credentials;
    write create_session(user_id: i64, token_hash: &str, now: i64, expires_at: i64) -> ()
        = reports::create_session;
    read session_user(token_hash: &str, now: i64) -> Option<SessionUser>
        = reports::session_user;
    write delete_session(token_hash: &str) -> bool = reports::delete_session;
    read program_access(program_id: i64, user_id: i64) -> Option<DashboardProgram>
        = reports::program_access;
    read setup_status(program_id: i64) -> SetupStatus = reports::setup_status;
    read count_events(program_id: i64, filter: &EventFilter) -> i64 = reports::count_events;
    read list_events(program_id: i64, filter: &EventFilter, limit: i64, offset: i64)
        -> Vec<ListedEvent> = reports::list_events;
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
