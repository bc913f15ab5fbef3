//! The storage interface of partner accounts and the partner API: [`PartnerAccounts`]
//! (reads and single-statement writes) and [`PartnerTx`] (the steps of the flows that
//! change several rows at once, run by the group committer in one transaction).
//! [`super::Store`] and [`super::tx::Tx`] include them.

use async_trait::async_trait;
use serde::Serialize;

use super::error::StoreResult;
use super::model::{iso_ms, iso_ms_opt, Link, Partner};
use super::payout_model::{Balance, Page};
use reftrack_domain::status::{PartnerStatus, PayoutStatus};

/// A partner with the email it signs in with (none until it has an account).
#[derive(Debug, Clone)]
pub struct PartnerAccount {
    pub partner: Partner,
    pub account_email: Option<String>,
}

/// What a partner sign-in checks.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PartnerCredentials {
    pub partner_id: i64,
    pub password_hash: String,
}

/// A program a partner is in, with its standing there.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct PartnerMembership {
    pub program_id: i64,
    /// The program's name.
    pub name: String,
    #[sqlx(try_from = "String")]
    pub status: PartnerStatus,
}

/// What one payout pays a partner.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct PartnerPayoutItem {
    pub payout_id: i64,
    #[sqlx(try_from = "String")]
    pub status: PayoutStatus,
    pub amount_cents: i64,
    pub currency: String,
    pub commission_count: i64,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    #[serde(serialize_with = "iso_ms_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub paid_at: Option<i64>,
}

/// An invite as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct InviteRow {
    pub expires_at: i64,
    pub used_at: Option<i64>,
}

/// A new partner who applied to a program, with its account.
#[derive(Debug, Clone)]
pub struct NewApplicant<'a> {
    pub name: &'a str,
    pub code: &'a str,
    /// Normalised: trimmed, lowercase.
    pub email: &'a str,
    pub password_hash: &'a str,
    /// The workspace of the program it applied to.
    pub workspace_id: i64,
}

/// A token issued to a partner (an invite or a session), as the store keeps it: by hash.
#[derive(Debug, Clone, Copy)]
pub struct TokenGrant<'a> {
    /// The partner it is issued to.
    pub partner_id: i64,
    /// The hash of the token; the token itself is only given to the partner.
    pub token_hash: &'a str,
    /// When it was issued (epoch ms).
    pub at: i64,
    /// When it stops working (epoch ms).
    pub expires_at: i64,
}

/// Partner accounts and what the partner API reads.
#[async_trait]
pub trait PartnerAccounts {
    /// A partner with its account email; `NotFound("partner")`.
    async fn partner_account(&self, id: i64) -> StoreResult<PartnerAccount>;
    /// The partner whose account email is `email` (normalised), if any.
    async fn partner_credentials(&self, email: &str) -> StoreResult<Option<PartnerCredentials>>;
    /// A new session; purges expired partner sessions on the way.
    async fn create_partner_session(&self, grant: &TokenGrant<'_>) -> StoreResult<()>;
    /// The partner of a live session, if any.
    async fn partner_session(&self, token_hash: &str, now: i64) -> StoreResult<Option<i64>>;
    /// Ends a session.
    async fn delete_partner_session(&self, token_hash: &str) -> StoreResult<()>;
    /// The programs a partner is in, by program id.
    async fn partner_memberships(&self, partner_id: i64) -> StoreResult<Vec<PartnerMembership>>;
    /// One page of what payouts of a program pay a partner, newest first.
    async fn partner_payout_items(
        &self,
        program_id: i64,
        partner_id: i64,
        page: Page,
    ) -> StoreResult<Vec<PartnerPayoutItem>>;
    /// Creates an active link of a partner in a program unless the partner already has
    /// `max_active` active links there (`Conflict("active links")`), counting and
    /// inserting in one transaction that holds the partner's record in the program, so
    /// that links made at once, on any process, cannot pass the limit;
    /// `Conflict("short_link")` as
    /// [`PartnerAdmin::create_link`](super::PartnerAdmin::create_link).
    async fn create_partner_link(
        &self,
        program_id: i64,
        partner_id: i64,
        short_link: &str,
        max_active: i64,
        at: i64,
    ) -> StoreResult<Link>;
    /// A partner's pending, approved and paid commission sums in a program at `now`
    /// (the hold period applied, net of refunds); zeros without commissions.
    async fn partner_balance(
        &self,
        program_id: i64,
        partner_id: i64,
        now: i64,
    ) -> StoreResult<Balance>;
}

/// The steps of accepting an invite and applying, inside the committer's transaction.
#[async_trait]
pub trait PartnerTx: Send {
    /// Uses the invite whose token hashes to `token_hash` if it is unused and alive at
    /// `at` (one statement, so that two acceptances cannot both use it); its partner.
    async fn claim_invite(&mut self, token_hash: &str, at: i64) -> StoreResult<Option<i64>>;
    /// The invite whose token hashes to `token_hash`, to tell why it could not be used.
    async fn invite(&mut self, token_hash: &str) -> StoreResult<Option<InviteRow>>;
    /// The email an invite makes the partner sign in with: the one it signs in with
    /// already, else its contact email; `NotFound("partner")`.
    async fn partner_sign_in_email(&mut self, partner_id: i64) -> StoreResult<Option<String>>;
    /// Ends the partner's unused invites at `at` (it joined a program of another workspace
    /// with its own session: a link made earlier must not reach that one).
    async fn end_invites(&mut self, partner_id: i64, at: i64) -> StoreResult<()>;
    /// A new invite; the partner's unused invites expire at `grant.at`, so that only the
    /// newest link sets a password.
    async fn insert_invite(&mut self, grant: &TokenGrant<'_>) -> StoreResult<()>;
    /// Gives a partner an account (or a new password) at `at`, ending its sessions and
    /// its unused invites; `Conflict("account email")` when another partner signs in with
    /// that email.
    async fn set_partner_account(
        &mut self,
        partner_id: i64,
        email: &str,
        password_hash: &str,
        at: i64,
    ) -> StoreResult<()>;
    /// Replaces a partner's password at `at`, ending its unused invites and its other
    /// sessions (all but the one whose token hashes to `keep`).
    async fn set_partner_password(
        &mut self,
        partner_id: i64,
        password_hash: &str,
        keep: &str,
        at: i64,
    ) -> StoreResult<()>;
    /// A new session.
    async fn insert_partner_session(&mut self, grant: &TokenGrant<'_>) -> StoreResult<()>;
    /// Creates an applicant's partner record with its account; returns its id.
    /// `Conflict("account email")` when a partner signs in with its email,
    /// `Conflict("invited email")` when a partner without an account has it and is known
    /// to the program's workspace or holds a live invite, `Conflict("partner code")`.
    async fn insert_applicant(&mut self, a: &NewApplicant<'_>, at: i64) -> StoreResult<i64>;
    /// Keeps an application's website and message on its partner-program record.
    async fn set_application(
        &mut self,
        program_id: i64,
        partner_id: i64,
        website: Option<&str>,
        message: Option<&str>,
    ) -> StoreResult<()>;
}
