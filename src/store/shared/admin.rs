// Management queries: workspaces, programs, partners, links, users, memberships.
// Included by `sqlite.rs` and `postgres.rs` inside `mod admin`; see `store/mod.rs`.

const PROGRAM_COLUMNS: &str = "id, workspace_id, name, api_token_prefix, cookie_window_days, \
    currency, commission_type, commission_bps, commission_amount_cents, \
    recurring_commission_months, allowed_origins, stripe_webhook_secret, payment_status, \
    payment_account_id, charges_enabled, payouts_enabled, details_submitted, connection_date, \
    created_at, updated_at";

fn program_from_row(r: &DbRow) -> Result<Program> {
    let commission = match r.try_get::<String, _>("commission_type")?.as_str() {
        "flat" => CommissionRule::Flat {
            amount_cents: r
                .try_get::<Option<i64>, _>("commission_amount_cents")?
                .unwrap_or(0),
        },
        _ => CommissionRule::Percentage {
            bps: r.try_get::<Option<i64>, _>("commission_bps")?.unwrap_or(0),
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
        allowed_origins: parse_origins(&r.try_get::<String, _>("allowed_origins")?),
        stripe_webhook_secret: r.try_get("stripe_webhook_secret")?,
        payment: PaymentAccount {
            status: r.try_get("payment_status")?,
            account_id: r.try_get("payment_account_id")?,
            charges_enabled: r.try_get("charges_enabled")?,
            payouts_enabled: r.try_get("payouts_enabled")?,
            details_submitted: r.try_get("details_submitted")?,
            connection_date: r.try_get("connection_date")?,
        },
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

fn commission_columns(rule: CommissionRule) -> (&'static str, Option<i64>, Option<i64>) {
    match rule {
        CommissionRule::Percentage { bps } => ("percentage", Some(bps), None),
        CommissionRule::Flat { amount_cents } => ("flat", None, Some(amount_cents)),
    }
}

fn origins_json(origins: &[String]) -> String {
    serde_json::to_string(origins).unwrap_or_else(|_| "[]".into())
}

async fn exists(pool: &Pool<Db>, sql: &str, id: i64) -> Result<bool> {
    Ok(sqlx::query(sql)
        .bind(id)
        .fetch_optional(pool)
        .await?
        .is_some())
}

/// Turns a unique violation into a 409 with `text`.
fn conflict(text: &str) -> impl Fn(sqlx::Error) -> Error + '_ {
    move |e| match Error::from(e) {
        Error::Conflict(_) => Error::Conflict(text.to_string()),
        other => other,
    }
}

pub async fn create_workspace(pool: &Pool<Db>, name: &str) -> Result<Workspace> {
    let now = now_ms();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO workspaces (name, created_at) VALUES ($1, $2) RETURNING id",
    )
    .bind(name)
    .bind(now)
    .fetch_one(pool)
    .await?;
    Ok(Workspace {
        id,
        name: name.to_string(),
        created_at: now,
    })
}

pub async fn create_program(pool: &Pool<Db>, p: NewProgram) -> Result<Program> {
    if !exists(
        pool,
        "SELECT 1 FROM workspaces WHERE id = $1",
        p.workspace_id,
    )
    .await?
    {
        return Err(Error::not_found("Workspace not found"));
    }
    let now = now_ms();
    let (kind, bps, flat) = commission_columns(p.commission);
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO programs (workspace_id, name, api_token_hash, api_token_prefix, \
         cookie_window_days, currency, commission_type, commission_bps, commission_amount_cents, \
         recurring_commission_months, allowed_origins, stripe_webhook_secret, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13) RETURNING id",
    )
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
    .bind(now)
    .fetch_one(pool)
    .await?;
    program(pool, id).await
}

pub async fn program(pool: &Pool<Db>, id: i64) -> Result<Program> {
    let sql = format!("SELECT {PROGRAM_COLUMNS} FROM programs WHERE id = $1");
    match sqlx::query(&sql).bind(id).fetch_optional(pool).await? {
        Some(row) => program_from_row(&row),
        None => Err(Error::not_found("Program not found")),
    }
}

pub async fn program_by_token(pool: &Pool<Db>, token_hash: &str) -> Result<Option<Program>> {
    let sql = format!("SELECT {PROGRAM_COLUMNS} FROM programs WHERE api_token_hash = $1");
    match sqlx::query(&sql)
        .bind(token_hash)
        .fetch_optional(pool)
        .await?
    {
        Some(row) => Ok(Some(program_from_row(&row)?)),
        None => Ok(None),
    }
}

pub async fn update_program(pool: &Pool<Db>, id: i64, patch: ProgramPatch) -> Result<Program> {
    let current = program(pool, id).await?;
    let commission = patch.commission.unwrap_or(current.commission);
    let (kind, bps, flat) = commission_columns(commission);
    sqlx::query(
        "UPDATE programs SET name = $1, cookie_window_days = $2, currency = $3, \
         commission_type = $4, commission_bps = $5, commission_amount_cents = $6, \
         recurring_commission_months = $7, allowed_origins = $8, stripe_webhook_secret = $9, \
         updated_at = $10 WHERE id = $11",
    )
    .bind(patch.name.unwrap_or(current.name))
    .bind(
        patch
            .cookie_window_days
            .unwrap_or(current.cookie_window_days),
    )
    .bind(patch.currency.unwrap_or(current.currency))
    .bind(kind)
    .bind(bps)
    .bind(flat)
    .bind(
        patch
            .recurring_commission_months
            .unwrap_or(current.recurring_commission_months),
    )
    .bind(origins_json(
        &patch.allowed_origins.unwrap_or(current.allowed_origins),
    ))
    .bind(
        patch
            .stripe_webhook_secret
            .unwrap_or(current.stripe_webhook_secret),
    )
    .bind(now_ms())
    .bind(id)
    .execute(pool)
    .await?;
    program(pool, id).await
}

pub async fn set_program_token(
    pool: &Pool<Db>,
    id: i64,
    hash: &str,
    prefix: &str,
) -> Result<Program> {
    let done = sqlx::query("UPDATE programs SET api_token_hash = $1, api_token_prefix = $2, updated_at = $3 WHERE id = $4")
        .bind(hash)
        .bind(prefix)
        .bind(now_ms())
        .bind(id)
        .execute(pool)
        .await?;
    if done.rows_affected() == 0 {
        return Err(Error::not_found("Program not found"));
    }
    program(pool, id).await
}

pub async fn set_payment_account(pool: &Pool<Db>, id: i64, a: PaymentAccount) -> Result<Program> {
    let done = sqlx::query(
        "UPDATE programs SET payment_status = $1, payment_account_id = $2, charges_enabled = $3, \
         payouts_enabled = $4, details_submitted = $5, connection_date = $6, updated_at = $7 \
         WHERE id = $8",
    )
    .bind(&a.status)
    .bind(&a.account_id)
    .bind(a.charges_enabled)
    .bind(a.payouts_enabled)
    .bind(a.details_submitted)
    .bind(a.connection_date)
    .bind(now_ms())
    .bind(id)
    .execute(pool)
    .await?;
    if done.rows_affected() == 0 {
        return Err(Error::not_found("Program not found"));
    }
    program(pool, id).await
}

pub async fn create_partner(
    pool: &Pool<Db>,
    name: &str,
    code: &str,
    email: Option<&str>,
) -> Result<Partner> {
    let now = now_ms();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO partners (name, code, email, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
    )
    .bind(name)
    .bind(code)
    .bind(email)
    .bind(now)
    .fetch_one(pool)
    .await
    .map_err(conflict("A partner with this code already exists"))?;
    Ok(Partner {
        id,
        name: name.to_string(),
        code: code.to_string(),
        email: email.map(str::to_string),
        created_at: now,
    })
}

/// Runs as a committer job: the record and its `partners` rollup commit together.
pub async fn add_program_partner(
    conn: &mut Conn,
    deltas: &mut Deltas,
    program_id: i64,
    partner_id: i64,
    status: String,
) -> Result<PartnerProgram> {
    if sqlx::query("SELECT 1 FROM programs WHERE id = $1")
        .bind(program_id)
        .fetch_optional(&mut *conn)
        .await?
        .is_none()
    {
        return Err(Error::not_found("Program not found"));
    }
    if sqlx::query("SELECT 1 FROM partners WHERE id = $1")
        .bind(partner_id)
        .fetch_optional(&mut *conn)
        .await?
        .is_none()
    {
        return Err(Error::not_found("Partner not found"));
    }
    let now = now_ms();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO partner_programs (partner_id, program_id, status, created_at) \
         VALUES ($1, $2, $3, $4) RETURNING id",
    )
    .bind(partner_id)
    .bind(program_id)
    .bind(&status)
    .bind(now)
    .fetch_one(&mut *conn)
    .await
    .map_err(conflict("This partner is already in this program"))?;
    deltas.rollup(program_id, day_of(now)).partners += 1;
    Ok(PartnerProgram {
        id,
        partner_id,
        program_id,
        status,
        total_clicks: 0,
        total_leads: 0,
        total_sales: 0,
        total_revenue_cents: 0,
        total_commission_cents: 0,
        created_at: now,
    })
}

const LINK_COLUMNS: &str =
    "id, program_id, partner_id, short_link, status, clicks, last_clicked, created_at";

fn link_from_row(r: &DbRow) -> Result<Link> {
    Ok(Link {
        id: r.try_get("id")?,
        program_id: r.try_get("program_id")?,
        partner_id: r.try_get("partner_id")?,
        short_link: r.try_get("short_link")?,
        status: r.try_get("status")?,
        clicks: r.try_get("clicks")?,
        last_clicked: r.try_get("last_clicked")?,
        created_at: r.try_get("created_at")?,
    })
}

pub async fn create_link(
    pool: &Pool<Db>,
    program_id: i64,
    partner_id: Option<i64>,
    short_link: &str,
    status: &str,
) -> Result<Link> {
    if !exists(pool, "SELECT 1 FROM programs WHERE id = $1", program_id).await? {
        return Err(Error::not_found("Program not found"));
    }
    if let Some(partner_id) = partner_id {
        if !exists(pool, "SELECT 1 FROM partners WHERE id = $1", partner_id).await? {
            return Err(Error::not_found("Partner not found"));
        }
    }
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO referral_links (program_id, partner_id, short_link, status, created_at) \
         VALUES ($1, $2, $3, $4, $5) RETURNING id",
    )
    .bind(program_id)
    .bind(partner_id)
    .bind(short_link)
    .bind(status)
    .bind(now_ms())
    .fetch_one(pool)
    .await
    .map_err(conflict("A link with this short_link already exists"))?;
    link(pool, id).await
}

pub async fn link(pool: &Pool<Db>, id: i64) -> Result<Link> {
    let sql = format!("SELECT {LINK_COLUMNS} FROM referral_links WHERE id = $1");
    match sqlx::query(&sql).bind(id).fetch_optional(pool).await? {
        Some(row) => link_from_row(&row),
        None => Err(Error::not_found("Link not found")),
    }
}

pub async fn set_link_status(pool: &Pool<Db>, id: i64, status: &str) -> Result<Link> {
    let done = sqlx::query("UPDATE referral_links SET status = $1 WHERE id = $2")
        .bind(status)
        .bind(id)
        .execute(pool)
        .await?;
    if done.rows_affected() == 0 {
        return Err(Error::not_found("Link not found"));
    }
    link(pool, id).await
}

pub async fn create_user(
    pool: &Pool<Db>,
    email: &str,
    password_hash: &str,
    name: Option<&str>,
) -> Result<User> {
    let now = now_ms();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO users (email, password_hash, name, created_at) VALUES ($1, $2, $3, $4) RETURNING id",
    )
    .bind(email)
    .bind(password_hash)
    .bind(name)
    .bind(now)
    .fetch_one(pool)
    .await
    .map_err(conflict("A user with this email already exists"))?;
    Ok(User {
        id,
        email: email.to_string(),
        name: name.map(str::to_string),
        created_at: now,
    })
}

fn membership_from_row(r: &DbRow) -> Result<Membership> {
    Ok(Membership {
        workspace_id: r.try_get("workspace_id")?,
        user_id: r.try_get("user_id")?,
        role: r.try_get("role")?,
        status: r.try_get("status")?,
        created_at: r.try_get("created_at")?,
    })
}

pub async fn add_member(
    pool: &Pool<Db>,
    workspace_id: i64,
    user_id: i64,
    role: &str,
    status: &str,
) -> Result<Membership> {
    if !exists(pool, "SELECT 1 FROM workspaces WHERE id = $1", workspace_id).await? {
        return Err(Error::not_found("Workspace not found"));
    }
    if !exists(pool, "SELECT 1 FROM users WHERE id = $1", user_id).await? {
        return Err(Error::not_found("User not found"));
    }
    let row = sqlx::query(
        "INSERT INTO memberships (workspace_id, user_id, role, status, created_at) \
         VALUES ($1, $2, $3, $4, $5) RETURNING workspace_id, user_id, role, status, created_at",
    )
    .bind(workspace_id)
    .bind(user_id)
    .bind(role)
    .bind(status)
    .bind(now_ms())
    .fetch_one(pool)
    .await
    .map_err(conflict("This user is already a member of this workspace"))?;
    membership_from_row(&row)
}

pub async fn update_member(
    pool: &Pool<Db>,
    workspace_id: i64,
    user_id: i64,
    role: Option<&str>,
    status: Option<&str>,
) -> Result<Membership> {
    let row = sqlx::query(
        "UPDATE memberships SET role = COALESCE($1, role), status = COALESCE($2, status) \
         WHERE workspace_id = $3 AND user_id = $4 \
         RETURNING workspace_id, user_id, role, status, created_at",
    )
    .bind(role)
    .bind(status)
    .bind(workspace_id)
    .bind(user_id)
    .fetch_optional(pool)
    .await?;
    match row {
        Some(row) => membership_from_row(&row),
        None => Err(Error::not_found("Membership not found")),
    }
}
