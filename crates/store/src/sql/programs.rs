//! Settings, workspaces and programs: their statements, outside the group committer,
//! and [`ProgramAdmin`] on the pools.

use async_trait::async_trait;
use reftrack_domain::fraud::FraudRules;
use sqlx::Connection;

use super::audit::insert_entries;
use super::engine::{stmt, Engine, Rec, Stmt};
use super::{exists, parse_origins, SqlStore};
use crate::audit::AuditOf;
use crate::error::{StoreError, StoreResult};
use crate::model::{NewProgram, PaymentAccount, Program, ProgramPatch, Workspace};
use crate::ProgramAdmin;
use reftrack_domain::commission::CommissionRule;
use reftrack_domain::rewards::{storable, Rewards};

#[async_trait]
impl<DB: Engine> ProgramAdmin for SqlStore<DB> {
    async fn setting(&self, key: &str) -> StoreResult<Option<String>> {
        setting::<DB>(&mut *self.read.acquire().await?, key).await
    }

    async fn set_setting(&self, key: &str, value: &str) -> StoreResult<()> {
        set_setting::<DB>(&mut *self.write.acquire().await?, key, value).await
    }

    async fn create_workspace(&self, name: &str, at: i64) -> StoreResult<Workspace> {
        create_workspace::<DB>(&mut *self.write.acquire().await?, name, at).await
    }

    async fn create_program(
        &self,
        p: &NewProgram,
        at: i64,
        audit: AuditOf<'_, Program>,
    ) -> StoreResult<Program> {
        let mut conn = self.write.acquire().await?;
        let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
        let program = create_program::<DB>(&mut tx, p, at).await?;
        insert_entries::<DB>(&mut tx, &audit(None, &program)).await?;
        tx.commit().await?;
        Ok(program)
    }

    async fn program(&self, id: i64) -> StoreResult<Program> {
        program::<DB>(&mut *self.read.acquire().await?, id).await
    }

    async fn program_by_token(&self, token_hash: &str) -> StoreResult<Option<Program>> {
        program_by_token::<DB>(&mut *self.read.acquire().await?, token_hash).await
    }

    async fn update_program(
        &self,
        id: i64,
        patch: &ProgramPatch,
        at: i64,
        audit: AuditOf<'_, Program>,
    ) -> StoreResult<Program> {
        let mut conn = self.write.acquire().await?;
        let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
        let old = program_locked::<DB>(&mut tx, id).await?;
        if patch.currency.as_ref().is_some_and(|c| *c != old.currency) {
            // Figures, balances and payouts are in the program's currency.
            let counted = stmt::<DB>(
                "SELECT 1 FROM affiliate_sale_events WHERE program_id = $1 AND NOT is_test \
                 UNION ALL SELECT 1 FROM commissions WHERE program_id = $1 LIMIT 1",
            )
            .bind(id)
            .has_row(&mut *tx)
            .await?;
            if counted {
                return Err(StoreError::Conflict("program currency"));
            }
        }
        let new = update_program::<DB>(&mut tx, id, patch, at).await?;
        if patch.commission.is_some() || patch.recurring_commission_months.is_some() {
            super::groups::program_commission_changed::<DB>(
                &mut tx,
                id,
                new.commission,
                new.recurring_commission_months,
                at,
            )
            .await?;
        }
        insert_entries::<DB>(&mut tx, &audit(Some(&old), &new)).await?;
        tx.commit().await?;
        Ok(new)
    }

    async fn set_program_token(
        &self,
        id: i64,
        hash: &str,
        prefix: &str,
        keep_old_until: Option<i64>,
        at: i64,
        audit: AuditOf<'_, Program>,
    ) -> StoreResult<Program> {
        let mut conn = self.write.acquire().await?;
        let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
        let old = program_locked::<DB>(&mut tx, id).await?;
        let new = set_program_token::<DB>(&mut tx, id, hash, prefix, keep_old_until, at).await?;
        insert_entries::<DB>(&mut tx, &audit(Some(&old), &new)).await?;
        tx.commit().await?;
        Ok(new)
    }

    async fn set_payment_account(
        &self,
        id: i64,
        account: &PaymentAccount,
        at: i64,
        audit: AuditOf<'_, Program>,
    ) -> StoreResult<Program> {
        let mut conn = self.write.acquire().await?;
        let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
        let old = program_locked::<DB>(&mut tx, id).await?;
        let new = set_payment_account::<DB>(&mut tx, id, account, at).await?;
        insert_entries::<DB>(&mut tx, &audit(Some(&old), &new)).await?;
        tx.commit().await?;
        Ok(new)
    }
}

/// Reads a setting.
pub(super) async fn setting<DB: Engine>(
    conn: &mut DB::Connection,
    key: &str,
) -> StoreResult<Option<String>> {
    Ok(stmt::<DB>("SELECT value FROM settings WHERE key = $1")
        .bind(key)
        .scalar_optional(&mut *conn)
        .await?)
}

/// Writes a setting, replacing its value.
pub(super) async fn set_setting<DB: Engine>(
    conn: &mut DB::Connection,
    key: &str,
    value: &str,
) -> StoreResult<()> {
    stmt::<DB>(
        "INSERT INTO settings (key, value) VALUES ($1, $2) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )
    .bind(key)
    .bind(value)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Creates a workspace.
pub(super) async fn create_workspace<DB: Engine>(
    conn: &mut DB::Connection,
    name: &str,
    at: i64,
) -> StoreResult<Workspace> {
    let id: i64 =
        stmt::<DB>("INSERT INTO workspaces (name, created_at) VALUES ($1, $2) RETURNING id")
            .bind(name)
            .bind(at)
            .scalar(&mut *conn)
            .await?;
    Ok(Workspace {
        id,
        name: name.to_string(),
        created_at: at,
    })
}

/// The columns of a [`Program`], for [`program_from_row`].
pub(super) const PROGRAM_COLUMNS: &str =
    "id, workspace_id, name, api_token_prefix, cookie_window_days, \
    currency, commission_type, commission_bps, commission_amount_cents, \
    recurring_commission_months, allowed_origins, stripe_webhook_secret, payment_status, \
    payment_account_id, charges_enabled, payouts_enabled, details_submitted, connection_date, \
    commission_hold_days, min_payout_cents, applications_open, partner_links_allowed, \
    destination_url, previous_token_hash, previous_token_expires_at, fraud_rules, created_at, \
    updated_at";

pub(super) fn program_from_row<DB: Engine>(r: &Rec<DB>) -> StoreResult<Program> {
    let commission = match r.try_get::<String>("commission_type")?.as_str() {
        "flat" => CommissionRule::Flat {
            amount_cents: r
                .try_get::<Option<i64>>("commission_amount_cents")?
                .unwrap_or(0),
        },
        _ => CommissionRule::Percentage {
            bps: r.try_get::<Option<i64>>("commission_bps")?.unwrap_or(0),
        },
    };
    Ok(Program {
        id: r.try_get("id")?,
        workspace_id: r.try_get("workspace_id")?,
        name: r.try_get("name")?,
        api_token_prefix: r.try_get("api_token_prefix")?,
        cookie_window_days: r.try_get("cookie_window_days")?,
        currency: r.try_get("currency")?,
        commission,
        recurring_commission_months: r.try_get("recurring_commission_months")?,
        allowed_origins: parse_origins(&r.try_get::<String>("allowed_origins")?),
        stripe_webhook_secret: r.try_get("stripe_webhook_secret")?,
        payment: PaymentAccount {
            status: r.try_get("payment_status")?,
            account_id: r.try_get("payment_account_id")?,
            charges_enabled: r.try_get("charges_enabled")?,
            payouts_enabled: r.try_get("payouts_enabled")?,
            details_submitted: r.try_get("details_submitted")?,
            connection_date: r.try_get("connection_date")?,
        },
        commission_hold_days: r.try_get("commission_hold_days")?,
        min_payout_cents: r.try_get("min_payout_cents")?,
        applications_open: r.try_get("applications_open")?,
        partner_links_allowed: r.try_get("partner_links_allowed")?,
        destination_url: r.try_get("destination_url")?,
        previous_token: match (
            r.try_get::<Option<String>>("previous_token_hash")?,
            r.try_get::<Option<i64>>("previous_token_expires_at")?,
        ) {
            (Some(hash), Some(until)) => Some((hash, until)),
            _ => None,
        },
        fraud_rules: stored_fraud_rules(r.try_get("fraud_rules")?)?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// The fraud rules of a program's `fraud_rules` column.
pub(super) fn stored_fraud_rules(text: Option<String>) -> StoreResult<FraudRules> {
    match text {
        // NULL: a program whose rules were never changed has the defaults.
        None => Ok(FraudRules::default()),
        Some(text) => FraudRules::from_json(&text).map_err(|e| {
            StoreError::Other(anyhow::anyhow!("column fraud_rules is unreadable: {e}"))
        }),
    }
}

/// The stored form of a commission rule: `commission_type`, `commission_bps`,
/// `commission_amount_cents`.
pub(super) fn commission_columns(rule: CommissionRule) -> (&'static str, Option<i64>, Option<i64>) {
    match rule {
        CommissionRule::Percentage { bps } => ("percentage", Some(bps), None),
        CommissionRule::Flat { amount_cents } => ("flat", None, Some(amount_cents)),
    }
}

/// The stored form of a list of allowed origins (read back by [`parse_origins`]).
fn origins_json(origins: &[String]) -> String {
    serde_json::to_string(origins).unwrap_or_else(|_| "[]".into())
}

/// The program a `… RETURNING` query leaves; `NotFound("program")` when it returns
/// nothing.
async fn returned_program<DB: Engine>(
    query: Stmt<'_, DB>,
    conn: &mut DB::Connection,
) -> StoreResult<Program> {
    match query.fetch_optional(&mut *conn).await? {
        Some(row) => program_from_row(&row),
        None => Err(StoreError::NotFound("program")),
    }
}

/// Creates a program with its default group; `NotFound("workspace")`.
pub(super) async fn create_program<DB: Engine>(
    conn: &mut DB::Connection,
    p: &NewProgram,
    at: i64,
) -> StoreResult<Program> {
    if !exists::<DB>(
        &mut *conn,
        "SELECT 1 FROM workspaces WHERE id = $1",
        p.workspace_id,
    )
    .await?
    {
        return Err(StoreError::NotFound("workspace"));
    }
    let (kind, bps, flat) = commission_columns(p.commission);
    let sql = format!(
        "INSERT INTO programs (workspace_id, name, api_token_hash, api_token_prefix, \
         cookie_window_days, currency, commission_type, commission_bps, \
         commission_amount_cents, recurring_commission_months, allowed_origins, \
         stripe_webhook_secret, commission_hold_days, min_payout_cents, applications_open, \
         partner_links_allowed, destination_url, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $14, $15, $16, $17, \
         $18, $13, $13) \
         RETURNING {PROGRAM_COLUMNS}"
    );
    let row = stmt::<DB>(&sql)
        .bind(p.workspace_id)
        .bind(&p.name)
        .bind(&p.api_token_hash)
        .bind(&p.api_token_prefix)
        .bind(p.cookie_window_days)
        .bind(&p.currency)
        .bind(kind)
        .bind(bps)
        .bind(flat)
        .bind(p.recurring_commission_months)
        .bind(origins_json(&p.allowed_origins))
        .bind(&p.stripe_webhook_secret)
        .bind(at)
        .bind(p.commission_hold_days)
        .bind(p.min_payout_cents)
        .bind(p.applications_open)
        .bind(p.partner_links_allowed)
        .bind(&p.destination_url)
        .fetch_one(&mut *conn)
        .await?;
    let program = program_from_row(&row)?;
    let rewards = Rewards::from_sale_rule(storable(p.commission), p.recurring_commission_months);
    super::groups::insert_default_group::<DB>(&mut *conn, program.id, &rewards, at).await?;
    Ok(program)
}

/// One program; `NotFound("program")`.
pub(super) async fn program<DB: Engine>(
    conn: &mut DB::Connection,
    id: i64,
) -> StoreResult<Program> {
    let sql = format!("SELECT {PROGRAM_COLUMNS} FROM programs WHERE id = $1");
    match stmt::<DB>(&sql).bind(id).fetch_optional(&mut *conn).await? {
        Some(row) => program_from_row(&row),
        None => Err(StoreError::NotFound("program")),
    }
}

/// One program, locked against other changes until the transaction ends;
/// `NotFound("program")`.
async fn program_locked<DB: Engine>(conn: &mut DB::Connection, id: i64) -> StoreResult<Program> {
    let sql = format!(
        "SELECT {PROGRAM_COLUMNS} FROM programs WHERE id = $1 {}",
        DB::ROW_LOCK
    );
    match stmt::<DB>(&sql).bind(id).fetch_optional(&mut *conn).await? {
        Some(row) => program_from_row(&row),
        None => Err(StoreError::NotFound("program")),
    }
}

/// The program whose API token, or previous token, hashes to `token_hash` (whether the
/// previous one still works is the caller's to tell, by its expiry).
pub(super) async fn program_by_token<DB: Engine>(
    conn: &mut DB::Connection,
    token_hash: &str,
) -> StoreResult<Option<Program>> {
    let sql = format!(
        "SELECT {PROGRAM_COLUMNS} FROM programs \
         WHERE api_token_hash = $1 OR previous_token_hash = $1"
    );
    let row = stmt::<DB>(&sql)
        .bind(token_hash)
        .fetch_optional(&mut *conn)
        .await?;
    row.as_ref().map(program_from_row).transpose()
}

/// Changes the fields of a program that `patch` sets, in one statement;
/// `NotFound("program")`.
pub(super) async fn update_program<DB: Engine>(
    conn: &mut DB::Connection,
    id: i64,
    patch: &ProgramPatch,
    at: i64,
) -> StoreResult<Program> {
    let commission = patch.commission.map(commission_columns);
    // A flag per field the patch may set to NULL (or, for the commission, to three
    // columns at once): `COALESCE` cannot tell "unchanged" from "cleared".
    let sql = format!(
        "UPDATE programs SET name = COALESCE($1, name), \
         cookie_window_days = COALESCE($2, cookie_window_days), \
         currency = COALESCE($3, currency), \
         commission_type = CASE WHEN $4 THEN $5 ELSE commission_type END, \
         commission_bps = CASE WHEN $4 THEN $6 ELSE commission_bps END, \
         commission_amount_cents = CASE WHEN $4 THEN $7 ELSE commission_amount_cents END, \
         recurring_commission_months = CASE WHEN $8 THEN $9 \
         ELSE recurring_commission_months END, \
         allowed_origins = COALESCE($10, allowed_origins), \
         stripe_webhook_secret = CASE WHEN $11 THEN $12 ELSE stripe_webhook_secret END, \
         commission_hold_days = COALESCE($15, commission_hold_days), \
         min_payout_cents = COALESCE($16, min_payout_cents), \
         applications_open = COALESCE($17, applications_open), \
         partner_links_allowed = COALESCE($18, partner_links_allowed), \
         destination_url = CASE WHEN $19 THEN $20 ELSE destination_url END, \
         fraud_rules = COALESCE($21, fraud_rules), \
         updated_at = $13 WHERE id = $14 RETURNING {PROGRAM_COLUMNS}"
    );
    let query = stmt::<DB>(&sql)
        .bind(&patch.name)
        .bind(patch.cookie_window_days)
        .bind(&patch.currency)
        .bind(commission.is_some())
        .bind(commission.map(|(kind, _, _)| kind))
        .bind(commission.and_then(|(_, bps, _)| bps))
        .bind(commission.and_then(|(_, _, flat)| flat))
        .bind(patch.recurring_commission_months.is_some())
        .bind(patch.recurring_commission_months.flatten())
        .bind(patch.allowed_origins.as_deref().map(origins_json))
        .bind(patch.stripe_webhook_secret.is_some())
        .bind(patch.stripe_webhook_secret.clone().flatten())
        .bind(at)
        .bind(id)
        .bind(patch.commission_hold_days)
        .bind(patch.min_payout_cents)
        .bind(patch.applications_open)
        .bind(patch.partner_links_allowed)
        .bind(patch.destination_url.is_some())
        .bind(patch.destination_url.clone().flatten())
        .bind(patch.fraud_rules.map(|r| r.to_json()));
    returned_program(query, &mut *conn).await
}

/// Replaces a program's API token; `NotFound("program")`.
pub(super) async fn set_program_token<DB: Engine>(
    conn: &mut DB::Connection,
    id: i64,
    hash: &str,
    prefix: &str,
    keep_old_until: Option<i64>,
    at: i64,
) -> StoreResult<Program> {
    // The token replaced becomes the previous one while it keeps working; any earlier
    // previous token stops at once.
    let sql = format!(
        "UPDATE programs SET previous_token_hash = CASE WHEN $5 > $3 THEN api_token_hash END, \
         previous_token_expires_at = CASE WHEN $5 > $3 THEN $5 END, \
         api_token_hash = $1, api_token_prefix = $2, updated_at = $3 \
         WHERE id = $4 RETURNING {PROGRAM_COLUMNS}"
    );
    let query = stmt::<DB>(&sql)
        .bind(hash)
        .bind(prefix)
        .bind(at)
        .bind(id)
        .bind(keep_old_until.unwrap_or(0));
    returned_program(query, &mut *conn).await
}

/// Sets a program's payment-account fields as given; `NotFound("program")`.
pub(super) async fn set_payment_account<DB: Engine>(
    conn: &mut DB::Connection,
    id: i64,
    a: &PaymentAccount,
    at: i64,
) -> StoreResult<Program> {
    let sql = format!(
        "UPDATE programs SET payment_status = $1, payment_account_id = $2, \
         charges_enabled = $3, payouts_enabled = $4, details_submitted = $5, \
         connection_date = $6, updated_at = $7 WHERE id = $8 RETURNING {PROGRAM_COLUMNS}"
    );
    let query = stmt::<DB>(&sql)
        .bind(&a.status)
        .bind(&a.account_id)
        .bind(a.charges_enabled)
        .bind(a.payouts_enabled)
        .bind(a.details_submitted)
        .bind(a.connection_date)
        .bind(at)
        .bind(id);
    returned_program(query, &mut *conn).await
}
