//! The management operations: workspaces, programs, partners, links, users and
//! memberships, and the admin token. Inputs arrive validated by the HTTP layer or the
//! CLI; these functions issue secrets, stamp times, keep the lookup caches true and word
//! the store's refusals.

use futures::FutureExt;

use super::secrets::{self, ADMIN_TOKEN_PREFIX, API_TOKEN_PREFIX};
use super::{App, Error, Result};
use crate::domain::commission::CommissionRule;
use crate::domain::status::{LinkStatus, MembershipStatus, PartnerStatus, Role};
use crate::store::{
    Link, Membership, NewProgram, Partner, PartnerProgram, PaymentAccount, Program, ProgramPatch,
    Store, StoreError, User, Workspace,
};

/// Settings key of the admin token's hash.
const ADMIN_TOKEN_SETTING: &str = "admin_token_hash";

/// A new program's fields, validated; the service issues its API token.
#[derive(Debug, Clone)]
pub struct ProgramDraft {
    pub workspace_id: i64,
    pub name: String,
    pub cookie_window_days: i64,
    pub currency: String,
    pub commission: CommissionRule,
    pub recurring_commission_months: Option<i64>,
    pub allowed_origins: Vec<String>,
    pub stripe_webhook_secret: Option<String>,
}

impl App {
    /// Creates a workspace.
    pub async fn create_workspace(&self, name: &str) -> Result<Workspace> {
        Ok(self.store.create_workspace(name, self.now_ms()).await?)
    }

    /// Creates a program with a new API token; returns the program and the token (shown
    /// once: only its hash is kept).
    pub async fn create_program(&self, d: ProgramDraft) -> Result<(Program, String)> {
        let token = secrets::generate_token(API_TOKEN_PREFIX);
        let program = NewProgram {
            workspace_id: d.workspace_id,
            name: d.name,
            cookie_window_days: d.cookie_window_days,
            currency: d.currency,
            commission: d.commission,
            recurring_commission_months: d.recurring_commission_months,
            allowed_origins: d.allowed_origins,
            stripe_webhook_secret: d.stripe_webhook_secret,
            api_token_hash: secrets::hash_token(&token),
            api_token_prefix: secrets::token_prefix(&token),
        };
        let program = self.store.create_program(&program, self.now_ms()).await?;
        Ok((program, token))
    }

    /// One program.
    pub async fn program(&self, id: i64) -> Result<Program> {
        Ok(self.store.program(id).await?)
    }

    /// Changes a program.
    pub async fn update_program(&self, id: i64, patch: ProgramPatch) -> Result<Program> {
        let done = self.store.update_program(id, &patch, self.now_ms()).await;
        self.changed();
        Ok(done?)
    }

    /// Replaces a program's API token; returns the program and the new token.
    pub async fn rotate_program_token(&self, id: i64) -> Result<(Program, String)> {
        let token = secrets::generate_token(API_TOKEN_PREFIX);
        let done = self
            .store
            .set_program_token(
                id,
                &secrets::hash_token(&token),
                &secrets::token_prefix(&token),
                self.now_ms(),
            )
            .await;
        self.changed();
        Ok((done?, token))
    }

    /// Sets a program's payment-account fields as an operator states them.
    pub async fn set_payment_account(&self, id: i64, account: PaymentAccount) -> Result<Program> {
        let done = self
            .store
            .set_payment_account(id, &account, self.now_ms())
            .await;
        self.changed();
        Ok(done?)
    }

    /// Creates a partner.
    pub async fn create_partner(
        &self,
        name: &str,
        code: &str,
        email: Option<&str>,
    ) -> Result<Partner> {
        Ok(self
            .store
            .create_partner(name, code, email, self.now_ms())
            .await?)
    }

    /// Adds a partner to a program; the day's partner count rises with it.
    pub async fn add_program_partner(
        &self,
        program_id: i64,
        partner_id: i64,
        status: PartnerStatus,
    ) -> Result<PartnerProgram> {
        let at = self.now_ms();
        self.write(move |tx, deltas| {
            async move {
                match tx.program_and_partner_exist(program_id, partner_id).await? {
                    (false, _) => return Err(StoreError::NotFound("program").into()),
                    (_, false) => return Err(StoreError::NotFound("partner").into()),
                    _ => {}
                }
                let pp = tx
                    .insert_partner_program(program_id, partner_id, status, at)
                    .await?;
                deltas.count_partner_joined(program_id, at);
                Ok(pp)
            }
            .boxed()
        })
        .await
    }

    /// Creates a referral link.
    pub async fn create_link(
        &self,
        program_id: i64,
        partner_id: Option<i64>,
        short_link: &str,
        status: LinkStatus,
    ) -> Result<Link> {
        let done = self
            .store
            .create_link(program_id, partner_id, short_link, status, self.now_ms())
            .await;
        self.changed();
        Ok(done?)
    }

    /// One link.
    pub async fn link(&self, id: i64) -> Result<Link> {
        Ok(self.store.link(id).await?)
    }

    /// Changes a link's status.
    pub async fn set_link_status(&self, id: i64, status: LinkStatus) -> Result<Link> {
        let done = self.store.set_link_status(id, status).await;
        self.changed();
        Ok(done?)
    }

    /// Creates a dashboard user; `email` is normalised, the password hashed.
    pub async fn create_user(
        &self,
        email: &str,
        password: String,
        name: Option<&str>,
    ) -> Result<User> {
        // Hashing is deliberately slow; keep it off the async workers.
        let hash = tokio::task::spawn_blocking(move || secrets::hash_password(&password))
            .await
            .map_err(|e| Error::Internal("Internal server error", e.into()))?
            .map_err(|e| Error::Internal("Internal server error", e))?;
        Ok(self
            .store
            .create_user(email, &hash, name, self.now_ms())
            .await?)
    }

    /// Adds a user to a workspace.
    pub async fn add_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        role: Role,
        status: MembershipStatus,
    ) -> Result<Membership> {
        Ok(self
            .store
            .add_member(workspace_id, user_id, role, status, self.now_ms())
            .await?)
    }

    /// Changes a membership's role or status.
    pub async fn update_member(
        &self,
        workspace_id: i64,
        user_id: i64,
        role: Option<Role>,
        status: Option<MembershipStatus>,
    ) -> Result<Membership> {
        Ok(self
            .store
            .update_member(workspace_id, user_id, role, status)
            .await?)
    }
}

/// The admin token's hash: from `configured` when given, else the stored one, else a
/// newly generated token, stored hashed and returned so that it can be shown once.
pub async fn admin_token(
    store: &dyn Store,
    configured: Option<&str>,
) -> anyhow::Result<(String, Option<String>)> {
    if let Some(token) = configured {
        return Ok((secrets::hash_token(token.trim()), None));
    }
    if let Some(hash) = store.setting(ADMIN_TOKEN_SETTING).await? {
        return Ok((hash, None));
    }
    let token = secrets::generate_token(ADMIN_TOKEN_PREFIX);
    let hash = secrets::hash_token(&token);
    store.set_setting(ADMIN_TOKEN_SETTING, &hash).await?;
    Ok((hash, Some(token)))
}

/// Replaces the stored admin token with a new one and returns it.
pub async fn rotate_admin_token(store: &dyn Store) -> anyhow::Result<String> {
    let token = secrets::generate_token(ADMIN_TOKEN_PREFIX);
    store
        .set_setting(ADMIN_TOKEN_SETTING, &secrets::hash_token(&token))
        .await?;
    Ok(token)
}
