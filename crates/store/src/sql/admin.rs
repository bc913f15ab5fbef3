//! Management reads and writes outside the group committer: settings, workspaces,
//! programs, partners, links, users and memberships; and the lookups of the tracking API
//! (a link by its short link, the origins programs admit).

use sqlx::Connection;

use super::engine::{stmt, Engine, Rec, Stmt};
use super::management::like_pattern;
use super::{keyset, named, named_opt, parse_origins};
use crate::error::{StoreError, StoreResult};
use crate::model::{
    origin_allowed, FirstRunRecords, Link, LinkPatch, LinkTarget, MemberRow, Membership, NewOwner,
    NewProgram, Partner, PartnerPatch, PartnerProgram, PaymentAccount, Program, ProgramPatch, User,
    UserPatch, Workspace, PUBLIC_URL_SETTING,
};
use crate::payout_model::Page;
use reftrack_domain::commission::CommissionRule;
use reftrack_domain::self_referral::email_key;
use reftrack_domain::status::{LinkStatus, MembershipStatus, PartnerStatus, Role};

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

/// Whether the row with `id` exists in the table `sql` selects from.
async fn exists<DB: Engine>(conn: &mut DB::Connection, sql: &str, id: i64) -> StoreResult<bool> {
    Ok(stmt::<DB>(sql).bind(id).has_row(&mut *conn).await?)
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
    destination_url, previous_token_hash, previous_token_expires_at, created_at, updated_at";

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
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// The stored form of a commission rule: `commission_type`, `commission_bps`,
/// `commission_amount_cents`.
fn commission_columns(rule: CommissionRule) -> (&'static str, Option<i64>, Option<i64>) {
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

/// Creates a program; `NotFound("workspace")`.
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
    program_from_row(&row)
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
        .bind(patch.destination_url.clone().flatten());
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

/// The columns of a [`Partner`], for [`partner_from_row`].
pub(super) const PARTNER_COLUMNS: &str =
    "id, name, code, email, payout_method, payout_email, created_at";

pub(super) fn partner_from_row<DB: Engine>(r: &Rec<DB>) -> StoreResult<Partner> {
    Ok(Partner {
        id: r.try_get("id")?,
        name: r.try_get("name")?,
        code: r.try_get("code")?,
        email: r.try_get("email")?,
        payout_method: named_opt(r, "payout_method")?,
        payout_email: r.try_get("payout_email")?,
        created_at: r.try_get("created_at")?,
    })
}

/// Creates a partner; `Conflict("partner code")`.
pub(super) async fn create_partner<DB: Engine>(
    conn: &mut DB::Connection,
    name: &str,
    code: &str,
    email: Option<&str>,
    workspace_id: Option<i64>,
    at: i64,
) -> StoreResult<Partner> {
    let sql = format!(
        "INSERT INTO partners (name, code, email, email_key, workspace_id, created_at) \
         VALUES ($1, $2, $3, $6, $4, $5) RETURNING {PARTNER_COLUMNS}"
    );
    let row = stmt::<DB>(&sql)
        .bind(name)
        .bind(code)
        .bind(email)
        .bind(workspace_id)
        .bind(at)
        .bind(email.map(email_key))
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| StoreError::from(e).conflict_on("partner code"))?;
    partner_from_row(&row)
}

/// Changes the fields of a partner that `patch` sets; `NotFound("partner")`.
pub(super) async fn update_partner<DB: Engine>(
    conn: &mut DB::Connection,
    id: i64,
    patch: &PartnerPatch,
) -> StoreResult<Partner> {
    let sql = format!(
        "UPDATE partners SET name = COALESCE($1, name), \
         email = CASE WHEN $2 THEN $3 ELSE email END, \
         email_key = CASE WHEN $2 THEN $9 ELSE email_key END, \
         payout_method = CASE WHEN $4 THEN $5 ELSE payout_method END, \
         payout_email = CASE WHEN $6 THEN $7 ELSE payout_email END \
         WHERE id = $8 RETURNING {PARTNER_COLUMNS}"
    );
    let row = stmt::<DB>(&sql)
        .bind(&patch.name)
        .bind(patch.email.is_some())
        .bind(patch.email.clone().flatten())
        .bind(patch.payout_method.is_some())
        .bind(patch.payout_method.flatten().map(|m| m.as_str()))
        .bind(patch.payout_email.is_some())
        .bind(patch.payout_email.clone().flatten())
        .bind(id)
        .bind(patch.email.clone().flatten().as_deref().map(email_key))
        .fetch_optional(&mut *conn)
        .await?;
    match row {
        Some(row) => partner_from_row(&row),
        None => Err(StoreError::NotFound("partner")),
    }
}

/// The columns of a [`PartnerProgram`].
const PARTNER_PROGRAM_COLUMNS: &str = "id, partner_id, program_id, status, total_clicks, \
    total_leads, total_sales, total_revenue_cents, total_commission_cents, created_at";

/// A partner's record in a program; `NotFound("partner")`.
pub(super) async fn partner_program<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    partner_id: i64,
) -> StoreResult<PartnerProgram> {
    let sql = format!(
        "SELECT {PARTNER_PROGRAM_COLUMNS} FROM partner_programs \
         WHERE program_id = $1 AND partner_id = $2"
    );
    stmt::<DB>(&sql)
        .bind(program_id)
        .bind(partner_id)
        .record_optional(&mut *conn)
        .await?
        .ok_or(StoreError::NotFound("partner"))
}

/// Moves a partner's standing in a program, guarded by the standing it had.
pub(super) async fn set_partner_status<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    partner_id: i64,
    from: PartnerStatus,
    to: PartnerStatus,
) -> StoreResult<Option<PartnerProgram>> {
    let sql = format!(
        "UPDATE partner_programs SET status = $1 \
         WHERE program_id = $2 AND partner_id = $3 AND status = $4 \
         RETURNING {PARTNER_PROGRAM_COLUMNS}"
    );
    Ok(stmt::<DB>(&sql)
        .bind(to.as_str())
        .bind(program_id)
        .bind(partner_id)
        .bind(from.as_str())
        .record_optional(&mut *conn)
        .await?)
}

/// The columns of a [`Link`], for [`link_from_row`].
pub(super) const LINK_COLUMNS: &str =
    "id, program_id, partner_id, short_link, status, destination_url, clicks, last_clicked, \
    created_at, (SELECT string_agg(k.code, ',' ORDER BY k.id) FROM coupons k \
    WHERE k.link_id = referral_links.id AND k.archived_at IS NULL) AS coupon_codes";

pub(super) fn link_from_row<DB: Engine>(r: &Rec<DB>) -> StoreResult<Link> {
    Ok(Link {
        id: r.try_get("id")?,
        program_id: r.try_get("program_id")?,
        partner_id: r.try_get("partner_id")?,
        short_link: r.try_get("short_link")?,
        status: named(r, "status")?,
        destination_url: r.try_get("destination_url")?,
        // Codes hold no commas (see the coupon code rule).
        coupon_codes: r
            .try_get::<Option<String>>("coupon_codes")?
            .map(|codes| codes.split(',').map(str::to_string).collect())
            .unwrap_or_default(),
        clicks: r.try_get("clicks")?,
        last_clicked: r.try_get("last_clicked")?,
        created_at: r.try_get("created_at")?,
    })
}

/// Creates a referral link; `NotFound("program" | "partner")`, `Conflict("short_link")`.
pub(super) async fn create_link<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    partner_id: Option<i64>,
    short_link: &str,
    status: LinkStatus,
    destination_url: Option<&str>,
    at: i64,
) -> StoreResult<Link> {
    if !exists::<DB>(
        &mut *conn,
        "SELECT 1 FROM programs WHERE id = $1",
        program_id,
    )
    .await?
    {
        return Err(StoreError::NotFound("program"));
    }
    if let Some(partner_id) = partner_id {
        if !exists::<DB>(
            &mut *conn,
            "SELECT 1 FROM partners WHERE id = $1",
            partner_id,
        )
        .await?
        {
            return Err(StoreError::NotFound("partner"));
        }
    }
    let id: i64 = stmt::<DB>(
        "INSERT INTO referral_links (program_id, partner_id, short_link, status, \
         destination_url, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
    )
    .bind(program_id)
    .bind(partner_id)
    .bind(short_link)
    .bind(status.as_str())
    .bind(destination_url)
    .bind(at)
    .scalar(&mut *conn)
    .await
    .map_err(|e| StoreError::from(e).conflict_on("short_link"))?;
    link::<DB>(conn, id).await
}

/// One link; `NotFound("link")`.
pub(super) async fn link<DB: Engine>(conn: &mut DB::Connection, id: i64) -> StoreResult<Link> {
    let sql = format!("SELECT {LINK_COLUMNS} FROM referral_links WHERE id = $1");
    match stmt::<DB>(&sql).bind(id).fetch_optional(&mut *conn).await? {
        Some(row) => link_from_row(&row),
        None => Err(StoreError::NotFound("link")),
    }
}

/// Changes the fields of a link that `patch` sets; `NotFound("link")`.
pub(super) async fn update_link<DB: Engine>(
    conn: &mut DB::Connection,
    id: i64,
    patch: &LinkPatch,
) -> StoreResult<Link> {
    let changed = stmt::<DB>(
        "UPDATE referral_links SET status = COALESCE($1, status), \
         destination_url = CASE WHEN $2 THEN $3 ELSE destination_url END WHERE id = $4",
    )
    .bind(patch.status.map(LinkStatus::as_str))
    .bind(patch.destination_url.is_some())
    .bind(patch.destination_url.clone().flatten())
    .bind(id)
    .execute(&mut *conn)
    .await?;
    if changed == 0 {
        return Err(StoreError::NotFound("link"));
    }
    link::<DB>(conn, id).await
}

/// Creates a dashboard user; `Conflict("email")`.
pub(super) async fn create_user<DB: Engine>(
    conn: &mut DB::Connection,
    email: &str,
    password_hash: &str,
    name: Option<&str>,
    at: i64,
) -> StoreResult<User> {
    let id: i64 = stmt::<DB>(
        "INSERT INTO users (email, password_hash, name, created_at) VALUES ($1, $2, $3, $4) \
         RETURNING id",
    )
    .bind(email)
    .bind(password_hash)
    .bind(name)
    .bind(at)
    .scalar(&mut *conn)
    .await
    .map_err(|e| StoreError::from(e).conflict_on("email"))?;
    Ok(User {
        id,
        email: email.to_string(),
        name: name.map(str::to_string),
        created_at: at,
    })
}

/// The columns of a [`User`].
const USER_COLUMNS: &str = "id, email, name, created_at";

/// Changes a user's name and password in one transaction; a new password deletes the
/// user's sessions.
pub(super) async fn update_user<DB: Engine>(
    conn: &mut DB::Connection,
    id: i64,
    patch: &UserPatch,
) -> StoreResult<User> {
    let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
    let sql = format!(
        "UPDATE users SET name = CASE WHEN $1 THEN $2 ELSE name END, \
         password_hash = COALESCE($3, password_hash) WHERE id = $4 RETURNING {USER_COLUMNS}"
    );
    let row = stmt::<DB>(&sql)
        .bind(patch.name.is_some())
        .bind(patch.name.clone().flatten())
        .bind(patch.password_hash.as_deref())
        .bind(id)
        .fetch_optional(&mut tx)
        .await?
        .ok_or(StoreError::NotFound("user"))?;
    let user = row.record()?;
    if patch.password_hash.is_some() {
        stmt::<DB>("DELETE FROM sessions WHERE user_id = $1")
            .bind(id)
            .execute(&mut tx)
            .await?;
    }
    tx.commit().await?;
    Ok(user)
}

/// One page of users, newest first, of those whose email or name contains `q`.
pub(super) async fn list_users<DB: Engine>(
    conn: &mut DB::Connection,
    q: Option<&str>,
    page: Page,
) -> StoreResult<Vec<User>> {
    let sql = format!(
        "SELECT {USER_COLUMNS} FROM users \
         WHERE ($1 IS NULL OR LOWER(email) LIKE $1 ESCAPE '\\' OR LOWER(name) LIKE $1 ESCAPE '\\') \
         AND {keyset}",
        keyset = keyset("id", 2),
    );
    Ok(stmt::<DB>(&sql)
        .bind(q.map(|q| like_pattern(&q.to_lowercase())))
        .page(page)
        .records(&mut *conn)
        .await?)
}

/// Whether any dashboard user exists.
pub(super) async fn has_users<DB: Engine>(conn: &mut DB::Connection) -> StoreResult<bool> {
    Ok(stmt::<DB>("SELECT 1 FROM users LIMIT 1")
        .has_row(&mut *conn)
        .await?)
}

/// Settings key claimed by the first run, so that it runs once even when two requests
/// race on two processes.
const FIRST_RUN_SETTING: &str = "first_run_at";

/// The first workspace, its owner, its first program and the server's confirmed
/// address, in one transaction.
pub(super) async fn first_run<DB: Engine>(
    conn: &mut DB::Connection,
    owner: &NewOwner<'_>,
    p: &NewProgram,
    public_url: Option<&str>,
    at: i64,
) -> StoreResult<FirstRunRecords> {
    let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
    // The claim conflicts with (or, on PostgreSQL, waits for) any other first run.
    stmt::<DB>("INSERT INTO settings (key, value) VALUES ($1, $2)")
        .bind(FIRST_RUN_SETTING)
        .bind(at.to_string())
        .execute(&mut tx)
        .await
        .map_err(|e| StoreError::from(e).conflict_on("first run"))?;
    if has_users::<DB>(&mut tx).await? {
        return Err(StoreError::Conflict("first run"));
    }
    let workspace = create_workspace::<DB>(&mut tx, owner.workspace_name, at).await?;
    let user = create_user::<DB>(&mut tx, owner.email, owner.password_hash, owner.name, at).await?;
    add_member::<DB>(
        &mut tx,
        workspace.id,
        user.id,
        Role::Owner,
        MembershipStatus::Active,
        at,
    )
    .await?;
    let program = NewProgram {
        workspace_id: workspace.id,
        ..p.clone()
    };
    let program = create_program::<DB>(&mut tx, &program, at).await?;
    if let Some(url) = public_url {
        set_setting::<DB>(&mut tx, PUBLIC_URL_SETTING, url).await?;
    }
    tx.commit().await?;
    Ok(FirstRunRecords {
        workspace,
        user,
        program,
    })
}

/// Every member of a workspace with its user's email and name, by user id.
pub(super) async fn workspace_members<DB: Engine>(
    conn: &mut DB::Connection,
    workspace_id: i64,
) -> StoreResult<Vec<MemberRow>> {
    Ok(stmt::<DB>(
        "SELECT m.user_id, u.email, u.name, m.role, m.status, m.created_at FROM memberships m \
         JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 ORDER BY m.user_id",
    )
    .bind(workspace_id)
    .records(&mut *conn)
    .await?)
}

/// The columns of a [`Membership`].
const MEMBERSHIP_COLUMNS: &str = "workspace_id, user_id, role, status, created_at";

/// Adds a user to a workspace; `NotFound("workspace" | "user")`, `Conflict("membership")`.
pub(super) async fn add_member<DB: Engine>(
    conn: &mut DB::Connection,
    workspace_id: i64,
    user_id: i64,
    role: Role,
    status: MembershipStatus,
    at: i64,
) -> StoreResult<Membership> {
    if !exists::<DB>(
        &mut *conn,
        "SELECT 1 FROM workspaces WHERE id = $1",
        workspace_id,
    )
    .await?
    {
        return Err(StoreError::NotFound("workspace"));
    }
    if !exists::<DB>(&mut *conn, "SELECT 1 FROM users WHERE id = $1", user_id).await? {
        return Err(StoreError::NotFound("user"));
    }
    let sql = format!(
        "INSERT INTO memberships (workspace_id, user_id, role, status, created_at) \
         VALUES ($1, $2, $3, $4, $5) RETURNING {MEMBERSHIP_COLUMNS}"
    );
    stmt::<DB>(&sql)
        .bind(workspace_id)
        .bind(user_id)
        .bind(role.as_str())
        .bind(status.as_str())
        .bind(at)
        .record(&mut *conn)
        .await
        .map_err(|e| StoreError::from(e).conflict_on("membership"))
}

/// Changes a membership; `None` leaves a field as it is. `NotFound("membership")`.
pub(super) async fn update_member<DB: Engine>(
    conn: &mut DB::Connection,
    workspace_id: i64,
    user_id: i64,
    role: Option<Role>,
    status: Option<MembershipStatus>,
) -> StoreResult<Membership> {
    let sql = format!(
        "UPDATE memberships SET role = COALESCE($1, role), status = COALESCE($2, status) \
         WHERE workspace_id = $3 AND user_id = $4 RETURNING {MEMBERSHIP_COLUMNS}"
    );
    stmt::<DB>(&sql)
        .bind(role.map(Role::as_str))
        .bind(status.map(MembershipStatus::as_str))
        .bind(workspace_id)
        .bind(user_id)
        .record_optional(&mut *conn)
        .await?
        .ok_or(StoreError::NotFound("membership"))
}

/// A referral link by its `short_link`, with what a click needs of its program and
/// partner.
pub(super) async fn link_target<DB: Engine>(
    conn: &mut DB::Connection,
    short_link: &str,
) -> StoreResult<Option<LinkTarget>> {
    let row = stmt::<DB>(
        "SELECT l.id, l.status, l.program_id, l.partner_id, pa.code, p.cookie_window_days, \
         p.allowed_origins, COALESCE(l.destination_url, p.destination_url) AS destination_url \
         FROM referral_links l \
         JOIN programs p ON p.id = l.program_id \
         LEFT JOIN partners pa ON pa.id = l.partner_id \
         WHERE l.short_link = $1",
    )
    .bind(short_link)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(r) = row else { return Ok(None) };
    Ok(Some(LinkTarget {
        link_id: r.try_get("id")?,
        link_status: named(&r, "status")?,
        program_id: r.try_get("program_id")?,
        partner_id: r.try_get("partner_id")?,
        partner_code: r.try_get("code")?,
        cookie_window_days: r.try_get("cookie_window_days")?,
        allowed_origins: parse_origins(&r.try_get::<String>("allowed_origins")?),
        destination_url: r.try_get("destination_url")?,
    }))
}

/// Whether any program admits `origin`.
pub(super) async fn any_program_allows_origin<DB: Engine>(
    conn: &mut DB::Connection,
    origin: &str,
) -> StoreResult<bool> {
    let lists: Vec<String> = stmt::<DB>("SELECT allowed_origins FROM programs")
        .scalar_all(&mut *conn)
        .await?;
    Ok(lists
        .iter()
        .any(|l| origin_allowed(&parse_origins(l), Some(origin))))
}
