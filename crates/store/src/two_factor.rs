//! The storage interface of two-factor sign-in: each account's TOTP secret (pending or in
//! use) and the step of its last accepted code, its recovery codes (as hashes), the
//! pending sign-ins of the sign-in pages, and the workspace setting that requires it.
//! [`super::Store`] includes it.

use async_trait::async_trait;

use super::audit::AuditEntry;
use super::error::StoreResult;

/// An account that may sign in with a second factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Account {
    /// A dashboard user, by id.
    User(i64),
    /// A partner account, by the partner's id.
    Partner(i64),
}

impl Account {
    /// The stored `account_kind`.
    pub fn kind(self) -> &'static str {
        match self {
            Account::User(_) => "user",
            Account::Partner(_) => "partner",
        }
    }

    /// The user's or partner's id.
    pub fn id(self) -> i64 {
        match self {
            Account::User(id) | Account::Partner(id) => id,
        }
    }

    /// The account of a stored kind and id; `None` for an unknown kind.
    pub fn of(kind: &str, id: i64) -> Option<Account> {
        match kind {
            "user" => Some(Account::User(id)),
            "partner" => Some(Account::Partner(id)),
            _ => None,
        }
    }
}

/// An account's two-factor record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TwoFactorRow {
    /// The secret in use (base32), once enabled.
    pub secret: Option<String>,
    /// The secret of a setup not yet confirmed with a code (base32).
    pub pending_secret: Option<String>,
    /// The time step of the last code accepted.
    pub last_step: Option<i64>,
}

/// Two-factor records of dashboard users and partner accounts.
#[async_trait]
pub trait TwoFactorStore: Send + Sync {
    /// The account's two-factor record, if it has one.
    async fn two_factor(&self, account: Account) -> StoreResult<Option<TwoFactorRow>>;
    /// Stores `secret` as the account's pending secret, replacing any earlier one; a
    /// secret in use stays as it is.
    async fn set_pending_two_factor(&self, account: Account, secret: &str) -> StoreResult<()>;
    /// Turns two-factor on in one transaction when the pending secret is still `secret`:
    /// it becomes the secret in use with `step` as its last accepted step, and
    /// `recovery_hashes` replace the account's recovery codes. False when the pending
    /// secret changed (or two-factor is on already). `audit` is written in the same
    /// transaction when it is turned on.
    #[allow(clippy::too_many_arguments)]
    async fn enable_two_factor(
        &self,
        account: Account,
        secret: &str,
        step: i64,
        recovery_hashes: &[String],
        at: i64,
        audit: &[AuditEntry],
    ) -> StoreResult<bool>;
    /// Records `step` as the last accepted step of the secret in use, when it is later
    /// than the last one (one statement, so two requests cannot both take it). False when
    /// it is not (the code was used already) or two-factor is off.
    async fn take_two_factor_step(&self, account: Account, step: i64) -> StoreResult<bool>;
    /// Marks the unused recovery code of `code_hash` used; false when there is none.
    async fn take_recovery_code(
        &self,
        account: Account,
        code_hash: &str,
        at: i64,
    ) -> StoreResult<bool>;
    /// How many unused recovery codes the account has.
    async fn recovery_codes_left(&self, account: Account) -> StoreResult<i64>;
    /// Turns two-factor off: deletes the account's secret, recovery codes and pending
    /// sign-ins, writing `audit` in the same transaction when it was on. False when it
    /// had no two-factor record.
    async fn disable_two_factor(&self, account: Account, audit: &[AuditEntry])
        -> StoreResult<bool>;
    /// The dashboard user's id by its email (normalised), for the operator.
    async fn user_id_by_email(&self, email: &str) -> StoreResult<Option<i64>>;

    /// Stores a pending sign-in of `account` (which signs in with `email`) by its token's
    /// hash; purges those expired at `now`.
    async fn insert_pending_login(
        &self,
        token_hash: &str,
        account: Account,
        email: &str,
        now: i64,
        expires_at: i64,
    ) -> StoreResult<()>;
    /// The account of a pending sign-in alive at `now`, with its sign-in email.
    async fn pending_login(
        &self,
        token_hash: &str,
        now: i64,
    ) -> StoreResult<Option<(Account, String)>>;
    /// Ends a pending sign-in.
    async fn delete_pending_login(&self, token_hash: &str) -> StoreResult<()>;

    /// Sets whether the workspace requires two-factor of its members;
    /// `NotFound("workspace")`.
    async fn set_require_two_factor(&self, workspace_id: i64, on: bool) -> StoreResult<()>;
    /// Whether the workspace requires two-factor of its members; `NotFound("workspace")`.
    async fn requires_two_factor(&self, workspace_id: i64) -> StoreResult<bool>;
}
