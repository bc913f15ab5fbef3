//! Two-factor records, pending sign-ins and the workspace setting: their statements and
//! [`TwoFactorStore`] on the pools.

use async_trait::async_trait;
use sqlx::Connection;

use super::audit::insert_entries;
use super::engine::{stmt, Engine};
use super::SqlStore;
use crate::audit::AuditEntry;
use crate::error::{StoreError, StoreResult};
use crate::two_factor::{Account, TwoFactorRow, TwoFactorStore};

#[async_trait]
impl<DB: Engine> TwoFactorStore for SqlStore<DB> {
    async fn two_factor(&self, account: Account) -> StoreResult<Option<TwoFactorRow>> {
        let row = stmt::<DB>(
            "SELECT secret, pending_secret, last_step FROM two_factor \
             WHERE account_kind = $1 AND account_id = $2",
        )
        .bind(account.kind())
        .bind(account.id())
        .fetch_optional(&mut *self.read.acquire().await?)
        .await?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(TwoFactorRow {
            secret: r.try_get("secret")?,
            pending_secret: r.try_get("pending_secret")?,
            last_step: r.try_get("last_step")?,
        }))
    }

    async fn set_pending_two_factor(&self, account: Account, secret: &str) -> StoreResult<()> {
        stmt::<DB>(
            "INSERT INTO two_factor (account_kind, account_id, pending_secret) VALUES ($1, $2, $3) \
             ON CONFLICT (account_kind, account_id) DO UPDATE SET pending_secret = $3",
        )
        .bind(account.kind())
        .bind(account.id())
        .bind(secret)
        .execute(&mut *self.write.acquire().await?)
        .await?;
        Ok(())
    }

    async fn enable_two_factor(
        &self,
        account: Account,
        secret: &str,
        step: i64,
        recovery_hashes: &[String],
        at: i64,
        audit: &[AuditEntry],
    ) -> StoreResult<bool> {
        let conn = &mut *self.write.acquire().await?;
        let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
        let enabled = stmt::<DB>(
            "UPDATE two_factor SET secret = pending_secret, pending_secret = NULL, \
             enabled_at = $4, last_step = $5 \
             WHERE account_kind = $1 AND account_id = $2 AND pending_secret = $3 \
             AND secret IS NULL",
        )
        .bind(account.kind())
        .bind(account.id())
        .bind(secret)
        .bind(at)
        .bind(step)
        .execute(&mut tx)
        .await?;
        if enabled == 0 {
            return Ok(false);
        }
        stmt::<DB>(
            "DELETE FROM two_factor_recovery_codes WHERE account_kind = $1 AND account_id = $2",
        )
        .bind(account.kind())
        .bind(account.id())
        .execute(&mut tx)
        .await?;
        for hash in recovery_hashes {
            stmt::<DB>(
                "INSERT INTO two_factor_recovery_codes (account_kind, account_id, code_hash) \
                 VALUES ($1, $2, $3)",
            )
            .bind(account.kind())
            .bind(account.id())
            .bind(hash.as_str())
            .execute(&mut tx)
            .await?;
        }
        insert_entries::<DB>(&mut tx, audit).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn take_two_factor_step(&self, account: Account, step: i64) -> StoreResult<bool> {
        let taken = stmt::<DB>(
            "UPDATE two_factor SET last_step = $3 \
             WHERE account_kind = $1 AND account_id = $2 AND secret IS NOT NULL \
             AND (last_step IS NULL OR last_step < $3)",
        )
        .bind(account.kind())
        .bind(account.id())
        .bind(step)
        .execute(&mut *self.write.acquire().await?)
        .await?;
        Ok(taken == 1)
    }

    async fn take_recovery_code(
        &self,
        account: Account,
        code_hash: &str,
        at: i64,
    ) -> StoreResult<bool> {
        let taken = stmt::<DB>(
            "UPDATE two_factor_recovery_codes SET used_at = $4 \
             WHERE account_kind = $1 AND account_id = $2 AND code_hash = $3 AND used_at IS NULL",
        )
        .bind(account.kind())
        .bind(account.id())
        .bind(code_hash)
        .bind(at)
        .execute(&mut *self.write.acquire().await?)
        .await?;
        Ok(taken == 1)
    }

    async fn recovery_codes_left(&self, account: Account) -> StoreResult<i64> {
        Ok(stmt::<DB>(
            "SELECT COUNT(*) FROM two_factor_recovery_codes \
             WHERE account_kind = $1 AND account_id = $2 AND used_at IS NULL",
        )
        .bind(account.kind())
        .bind(account.id())
        .scalar(&mut *self.read.acquire().await?)
        .await?)
    }

    async fn disable_two_factor(
        &self,
        account: Account,
        audit: &[AuditEntry],
    ) -> StoreResult<bool> {
        let conn = &mut *self.write.acquire().await?;
        let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
        let mut deleted = 0;
        for table in [
            "two_factor",
            "two_factor_recovery_codes",
            "two_factor_pending_logins",
        ] {
            let sql = format!("DELETE FROM {table} WHERE account_kind = $1 AND account_id = $2");
            let n = stmt::<DB>(&sql)
                .bind(account.kind())
                .bind(account.id())
                .execute(&mut tx)
                .await?;
            if table == "two_factor" {
                deleted = n;
            }
        }
        if deleted > 0 {
            insert_entries::<DB>(&mut tx, audit).await?;
        }
        tx.commit().await?;
        Ok(deleted > 0)
    }

    async fn user_id_by_email(&self, email: &str) -> StoreResult<Option<i64>> {
        Ok(stmt::<DB>("SELECT id FROM users WHERE email = $1")
            .bind(email)
            .scalar_optional(&mut *self.read.acquire().await?)
            .await?)
    }

    async fn insert_pending_login(
        &self,
        token_hash: &str,
        account: Account,
        email: &str,
        now: i64,
        expires_at: i64,
    ) -> StoreResult<()> {
        let conn = &mut *self.write.acquire().await?;
        stmt::<DB>("DELETE FROM two_factor_pending_logins WHERE expires_at <= $1")
            .bind(now)
            .execute(&mut *conn)
            .await?;
        stmt::<DB>(
            "INSERT INTO two_factor_pending_logins (token_hash, account_kind, account_id, email, \
             expires_at) VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(token_hash)
        .bind(account.kind())
        .bind(account.id())
        .bind(email)
        .bind(expires_at)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    async fn pending_login(
        &self,
        token_hash: &str,
        now: i64,
    ) -> StoreResult<Option<(Account, String)>> {
        let row = stmt::<DB>(
            "SELECT account_kind, account_id, email FROM two_factor_pending_logins \
             WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now)
        .fetch_optional(&mut *self.read.acquire().await?)
        .await?;
        let Some(r) = row else { return Ok(None) };
        let kind: String = r.try_get("account_kind")?;
        let email: String = r.try_get("email")?;
        Ok(Account::of(&kind, r.try_get("account_id")?).map(|a| (a, email)))
    }

    async fn delete_pending_login(&self, token_hash: &str) -> StoreResult<()> {
        stmt::<DB>("DELETE FROM two_factor_pending_logins WHERE token_hash = $1")
            .bind(token_hash)
            .execute(&mut *self.write.acquire().await?)
            .await?;
        Ok(())
    }

    async fn set_require_two_factor(&self, workspace_id: i64, on: bool) -> StoreResult<()> {
        let changed = stmt::<DB>("UPDATE workspaces SET require_two_factor = $1 WHERE id = $2")
            .bind(on)
            .bind(workspace_id)
            .execute(&mut *self.write.acquire().await?)
            .await?;
        if changed == 0 {
            return Err(StoreError::NotFound("workspace"));
        }
        Ok(())
    }

    async fn requires_two_factor(&self, workspace_id: i64) -> StoreResult<bool> {
        stmt::<DB>("SELECT require_two_factor FROM workspaces WHERE id = $1")
            .bind(workspace_id)
            .scalar_optional(&mut *self.read.acquire().await?)
            .await?
            .ok_or(StoreError::NotFound("workspace"))
    }
}
