//! The statements of partner accounts and the partner API: sign-in, sessions and invites
//! on the pools, applications and invite acceptance on the committer's transaction.

use async_trait::async_trait;
use sqlx::Connection;

use super::engine::{stmt, Engine};
use super::partner_links::{create_link, partner_from_row, PARTNER_COLUMNS};
use super::payouts::balance_sums;
use super::write::WriteConnection;
use super::{keyset, SqlStore};
use crate::error::{StoreError, StoreResult};
use crate::model::Link;
use crate::partners::{
    InviteRow, NewApplicant, PartnerAccount, PartnerAccounts, PartnerCredentials,
    PartnerMembership, PartnerPayoutItem, PartnerTx, TokenGrant,
};
use crate::payout_model::{Balance, Page};
use reftrack_domain::self_referral::email_key;
use reftrack_domain::status::LinkStatus;

#[async_trait]
impl<DB: Engine> PartnerAccounts for SqlStore<DB> {
    async fn partner_account(&self, id: i64) -> StoreResult<PartnerAccount> {
        let sql = format!("SELECT {PARTNER_COLUMNS}, account_email FROM partners WHERE id = $1");
        let row = stmt::<DB>(&sql)
            .bind(id)
            .fetch_optional(&mut *self.read.acquire().await?)
            .await?
            .ok_or(StoreError::NotFound("partner"))?;
        Ok(PartnerAccount {
            partner: partner_from_row(&row)?,
            account_email: row.try_get("account_email")?,
        })
    }

    async fn partner_credentials(&self, email: &str) -> StoreResult<Option<PartnerCredentials>> {
        Ok(stmt::<DB>(
            "SELECT id AS partner_id, password_hash FROM partners \
             WHERE account_email = $1 AND password_hash IS NOT NULL",
        )
        .bind(email)
        .record_optional(&mut *self.read.acquire().await?)
        .await?)
    }

    async fn create_partner_session(&self, grant: &TokenGrant<'_>) -> StoreResult<()> {
        let conn = &mut *self.write.acquire().await?;
        stmt::<DB>("DELETE FROM partner_sessions WHERE expires_at <= $1")
            .bind(grant.at)
            .execute(&mut *conn)
            .await?;
        insert_token::<DB>(conn, INSERT_SESSION, grant).await
    }

    async fn partner_session(&self, token_hash: &str, now: i64) -> StoreResult<Option<i64>> {
        let row = stmt::<DB>(
            "SELECT partner_id FROM partner_sessions WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now)
        .fetch_optional(&mut *self.read.acquire().await?)
        .await?;
        Ok(row.map(|r| r.try_get_at(0)).transpose()?)
    }

    async fn delete_partner_session(&self, token_hash: &str) -> StoreResult<()> {
        stmt::<DB>("DELETE FROM partner_sessions WHERE token_hash = $1")
            .bind(token_hash)
            .execute(&mut *self.write.acquire().await?)
            .await?;
        Ok(())
    }

    async fn partner_memberships(&self, partner_id: i64) -> StoreResult<Vec<PartnerMembership>> {
        Ok(stmt::<DB>(
            "SELECT pp.program_id, g.name, pp.status FROM partner_programs pp \
             JOIN programs g ON g.id = pp.program_id WHERE pp.partner_id = $1 \
             ORDER BY pp.program_id",
        )
        .bind(partner_id)
        .records(&mut *self.read.acquire().await?)
        .await?)
    }

    async fn partner_payout_items(
        &self,
        program_id: i64,
        partner_id: i64,
        page: Page,
    ) -> StoreResult<Vec<PartnerPayoutItem>> {
        let sql = format!(
            "SELECT p.id AS payout_id, p.status, i.amount_cents, p.currency, \
             i.commission_count, p.created_at, p.paid_at \
             FROM payout_items i JOIN payouts p ON p.id = i.payout_id \
             WHERE i.partner_id = $1 AND p.program_id = $2 AND {keyset}",
            keyset = keyset("p.id", 3),
        );
        Ok(stmt::<DB>(&sql)
            .bind(partner_id)
            .bind(program_id)
            .page(page)
            .records(&mut *self.read.acquire().await?)
            .await?)
    }

    async fn partner_balance(
        &self,
        program_id: i64,
        partner_id: i64,
        now: i64,
    ) -> StoreResult<Balance> {
        // The (program_id, partner_id, id) index of commissions serves the filter.
        let sql = format!(
            "SELECT c.partner_id, {} FROM commissions c JOIN programs p ON p.id = c.program_id \
             WHERE c.program_id = $2 AND c.partner_id = $3 AND c.currency = p.currency \
             GROUP BY c.partner_id",
            balance_sums()
        );
        let balance = stmt::<DB>(&sql)
            .bind(now)
            .bind(program_id)
            .bind(partner_id)
            .record_optional(&mut *self.read.acquire().await?)
            .await?;
        Ok(balance.unwrap_or(Balance {
            partner_id,
            pending_cents: 0,
            approved_cents: 0,
            paid_cents: 0,
        }))
    }

    async fn create_partner_link(
        &self,
        program_id: i64,
        partner_id: i64,
        short_link: &str,
        max_active: i64,
        at: i64,
    ) -> StoreResult<Link> {
        let mut conn = self.write.acquire().await?;
        let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
        // A write to the partner's record: a second link of the partner in the program,
        // on any process, waits here until this transaction ends, then counts this one.
        let held = stmt::<DB>(
            "UPDATE partner_programs SET status = status \
             WHERE program_id = $1 AND partner_id = $2 RETURNING id",
        )
        .bind(program_id)
        .bind(partner_id)
        .has_row(&mut *tx)
        .await?;
        if !held {
            return Err(StoreError::NotFound("partner"));
        }
        let active: i64 = stmt::<DB>(
            "SELECT COUNT(*) FROM referral_links \
             WHERE program_id = $1 AND partner_id = $2 AND status = 'active'",
        )
        .bind(program_id)
        .bind(partner_id)
        .scalar(&mut *tx)
        .await?;
        if active >= max_active {
            return Err(StoreError::Conflict("active links"));
        }
        let link = create_link::<DB>(
            &mut tx,
            program_id,
            Some(partner_id),
            short_link,
            LinkStatus::Active,
            None,
            at,
        )
        .await?;
        tx.commit().await?;
        Ok(link)
    }
}

/// Inserts a partner invite: `$1` partner, `$2` token hash, `$3` now, `$4` expiry.
const INSERT_INVITE: &str = "INSERT INTO partner_invites \
    (partner_id, token_hash, created_at, expires_at) VALUES ($1, $2, $3, $4)";

/// Inserts a partner session, with the parameters of [`INSERT_INVITE`].
const INSERT_SESSION: &str = "INSERT INTO partner_sessions \
    (partner_id, token_hash, created_at, expires_at) VALUES ($1, $2, $3, $4)";

/// Ends a partner's unused invites at `at`: they answer as expired from then on.
async fn expire_invites<DB: Engine>(
    conn: &mut DB::Connection,
    partner_id: i64,
    at: i64,
) -> StoreResult<()> {
    stmt::<DB>(
        "UPDATE partner_invites SET expires_at = $2 \
         WHERE partner_id = $1 AND used_at IS NULL AND expires_at > $2",
    )
    .bind(partner_id)
    .bind(at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Runs `sql`, [`INSERT_INVITE`] or [`INSERT_SESSION`], for a partner's new token.
async fn insert_token<DB: Engine>(
    conn: &mut DB::Connection,
    sql: &str,
    grant: &TokenGrant<'_>,
) -> StoreResult<()> {
    stmt::<DB>(sql)
        .bind(grant.partner_id)
        .bind(grant.token_hash)
        .bind(grant.at)
        .bind(grant.expires_at)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

#[async_trait]
impl<DB: Engine> PartnerTx for WriteConnection<DB> {
    async fn claim_invite(&mut self, token_hash: &str, at: i64) -> StoreResult<Option<i64>> {
        let row = stmt::<DB>(
            "UPDATE partner_invites SET used_at = $2 \
             WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 \
             RETURNING partner_id",
        )
        .bind(token_hash)
        .bind(at)
        .fetch_optional(&mut *self.conn)
        .await?;
        Ok(row.map(|r| r.try_get_at(0)).transpose()?)
    }

    async fn invite(&mut self, token_hash: &str) -> StoreResult<Option<InviteRow>> {
        Ok(
            stmt::<DB>("SELECT expires_at, used_at FROM partner_invites WHERE token_hash = $1")
                .bind(token_hash)
                .record_optional(&mut *self.conn)
                .await?,
        )
    }

    async fn partner_sign_in_email(&mut self, partner_id: i64) -> StoreResult<Option<String>> {
        let row = stmt::<DB>("SELECT COALESCE(account_email, email) FROM partners WHERE id = $1")
            .bind(partner_id)
            .fetch_optional(&mut *self.conn)
            .await?
            .ok_or(StoreError::NotFound("partner"))?;
        Ok(row.try_get_at(0)?)
    }

    async fn end_invites(&mut self, partner_id: i64, at: i64) -> StoreResult<()> {
        expire_invites::<DB>(&mut self.conn, partner_id, at).await
    }

    async fn insert_invite(&mut self, grant: &TokenGrant<'_>) -> StoreResult<()> {
        expire_invites::<DB>(&mut self.conn, grant.partner_id, grant.at).await?;
        insert_token::<DB>(&mut self.conn, INSERT_INVITE, grant).await
    }

    async fn set_partner_account(
        &mut self,
        partner_id: i64,
        email: &str,
        password_hash: &str,
        at: i64,
    ) -> StoreResult<()> {
        stmt::<DB>(
            "UPDATE partners SET account_email = $1, account_email_key = $4, \
             password_hash = $2 WHERE id = $3",
        )
        .bind(email)
        .bind(password_hash)
        .bind(partner_id)
        .bind(email_key(email))
        .execute(&mut *self.conn)
        .await
        .map_err(|e| StoreError::from(e).conflict_on("account email"))?;
        stmt::<DB>("DELETE FROM partner_sessions WHERE partner_id = $1")
            .bind(partner_id)
            .execute(&mut *self.conn)
            .await?;
        expire_invites::<DB>(&mut self.conn, partner_id, at).await
    }

    async fn set_partner_password(
        &mut self,
        partner_id: i64,
        password_hash: &str,
        keep: &str,
        at: i64,
    ) -> StoreResult<()> {
        stmt::<DB>("UPDATE partners SET password_hash = $1 WHERE id = $2")
            .bind(password_hash)
            .bind(partner_id)
            .execute(&mut *self.conn)
            .await?;
        stmt::<DB>("DELETE FROM partner_sessions WHERE partner_id = $1 AND token_hash <> $2")
            .bind(partner_id)
            .bind(keep)
            .execute(&mut *self.conn)
            .await?;
        expire_invites::<DB>(&mut self.conn, partner_id, at).await
    }

    async fn insert_partner_session(&mut self, grant: &TokenGrant<'_>) -> StoreResult<()> {
        insert_token::<DB>(&mut self.conn, INSERT_SESSION, grant).await
    }

    async fn insert_applicant(&mut self, a: &NewApplicant<'_>, at: i64) -> StoreResult<i64> {
        let taken = stmt::<DB>("SELECT 1 FROM partners WHERE account_email = $1")
            .bind(a.email)
            .has_row(&mut *self.conn)
            .await?;
        if taken {
            return Err(StoreError::Conflict("account email"));
        }
        // A partner a program added with this email, not signed up yet: the applicant
        // must not take its email first, or its invite could never be accepted.
        let added = stmt::<DB>(
            "SELECT 1 FROM partners p WHERE LOWER(p.email) = $1 AND p.account_email IS NULL \
             AND (p.workspace_id = $2 \
               OR EXISTS (SELECT 1 FROM partner_programs pp JOIN programs g ON g.id = pp.program_id \
                          WHERE pp.partner_id = p.id AND g.workspace_id = $2) \
               OR EXISTS (SELECT 1 FROM partner_invites i WHERE i.partner_id = p.id \
                          AND i.used_at IS NULL AND i.expires_at > $3))",
        )
        .bind(a.email)
        .bind(a.workspace_id)
        .bind(at)
        .has_row(&mut *self.conn)
        .await?;
        if added {
            return Err(StoreError::Conflict("invited email"));
        }
        let row = stmt::<DB>(
            "INSERT INTO partners (name, code, email, account_email, email_key, \
             account_email_key, password_hash, workspace_id, created_at) \
             VALUES ($1, $2, $3, $3, $7, $7, $4, $5, $6) RETURNING id",
        )
        .bind(a.name)
        .bind(a.code)
        .bind(a.email)
        .bind(a.password_hash)
        .bind(a.workspace_id)
        .bind(at)
        .bind(email_key(a.email))
        .fetch_one(&mut *self.conn)
        .await
        .map_err(|e| StoreError::from(e).conflict_on("partner code"))?;
        Ok(row.try_get_at(0)?)
    }

    async fn set_application(
        &mut self,
        program_id: i64,
        partner_id: i64,
        website: Option<&str>,
        message: Option<&str>,
    ) -> StoreResult<()> {
        stmt::<DB>(
            "UPDATE partner_programs SET website = $1, message = $2 \
             WHERE program_id = $3 AND partner_id = $4",
        )
        .bind(website)
        .bind(message)
        .bind(program_id)
        .bind(partner_id)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }
}
