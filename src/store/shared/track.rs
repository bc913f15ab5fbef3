// Tracking writes, each run as a job of the group committer, and the click-time link
// lookup. Included by `sqlite.rs` and `postgres.rs` inside `mod track`.

pub async fn link_target(pool: &Pool<Db>, short_link: &str) -> Result<Option<LinkTarget>> {
    let row = sqlx::query(
        "SELECT l.id, l.status, l.program_id, l.partner_id, pa.code, p.cookie_window_days, \
         p.allowed_origins \
         FROM referral_links l \
         JOIN programs p ON p.id = l.program_id \
         LEFT JOIN partners pa ON pa.id = l.partner_id \
         WHERE l.short_link = $1",
    )
    .bind(short_link)
    .fetch_optional(pool)
    .await?;
    let Some(r) = row else { return Ok(None) };
    Ok(Some(LinkTarget {
        link_id: r.try_get(0)?,
        link_status: r.try_get(1)?,
        program_id: r.try_get(2)?,
        partner_id: r.try_get(3)?,
        partner_code: r.try_get(4)?,
        cookie_window_days: r.try_get(5)?,
        allowed_origins: parse_origins(&r.try_get::<String, _>(6)?),
    }))
}

/// One row of `affiliate_click_events`.
struct ClickEventRow<'a> {
    program_id: i64,
    customer_id: Option<i64>,
    link_id: Option<i64>,
    partner_id: Option<i64>,
    click_id: Option<&'a str>,
    details: &'a ClickDetails,
    is_test: bool,
    at: i64,
}

async fn insert_click_event(conn: &mut Conn, e: ClickEventRow<'_>) -> sqlx::Result<i64> {
    let d = e.details;
    sqlx::query_scalar(
        "INSERT INTO affiliate_click_events (program_id, customer_id, link_id, partner_id, \
         click_id, session_id, page_url, page_title, referrer_url, screen_resolution, \
         viewport_size, language, timezone, geo_country, geo_region, geo_city, device_type, \
         device_os, browser_name, is_test, click_timestamp, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
         $18, $19, $20, $21, $21) RETURNING id",
    )
    .bind(e.program_id)
    .bind(e.customer_id)
    .bind(e.link_id)
    .bind(e.partner_id)
    .bind(e.click_id)
    .bind(&d.session_id)
    .bind(&d.page_url)
    .bind(&d.page_title)
    .bind(&d.referrer_url)
    .bind(&d.screen_resolution)
    .bind(&d.viewport_size)
    .bind(&d.language)
    .bind(&d.timezone)
    .bind(&d.geo_country)
    .bind(&d.geo_region)
    .bind(&d.geo_city)
    .bind(&d.device_type)
    .bind(&d.device_os)
    .bind(&d.browser_name)
    .bind(e.is_test)
    .bind(e.at)
    .fetch_one(&mut *conn)
    .await
}

/// §4.1 steps 2 to 5: reuse (D5) or create the customer, store the event, count it.
pub async fn click(conn: &mut Conn, deltas: &mut Deltas, c: NewClick) -> Result<String> {
    let mut reused: Option<(i64, String)> = None;
    if let Some(existing) = c.existing_click_id.as_deref() {
        let row = sqlx::query("SELECT id, program_id FROM customers WHERE click_id = $1")
            .bind(existing)
            .fetch_optional(&mut *conn)
            .await?;
        if let Some(row) = row {
            let (id, program_id): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
            if attribution::reuse_customer(Some(program_id), c.program_id) {
                sqlx::query("UPDATE customers SET partner_id = $1, link_id = $2, updated_at = $3 WHERE id = $4")
                    .bind(c.partner_id)
                    .bind(c.link_id)
                    .bind(c.at)
                    .bind(id)
                    .execute(&mut *conn)
                    .await?;
                reused = Some((id, existing.to_string()));
            }
        }
    }
    let (customer_id, click_id) = match reused {
        Some(found) => found,
        None => {
            let click_id = click_id::generate(c.at);
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO customers (program_id, click_id, customer_status, partner_id, link_id, \
                 created_at, updated_at) VALUES ($1, $2, 'click', $3, $4, $5, $5) RETURNING id",
            )
            .bind(c.program_id)
            .bind(&click_id)
            .bind(c.partner_id)
            .bind(c.link_id)
            .bind(c.at)
            .fetch_one(&mut *conn)
            .await?;
            (id, click_id)
        }
    };
    insert_click_event(
        conn,
        ClickEventRow {
            program_id: c.program_id,
            customer_id: Some(customer_id),
            link_id: Some(c.link_id),
            partner_id: Some(c.partner_id),
            click_id: Some(&click_id),
            details: &c.details,
            is_test: false,
            at: c.at,
        },
    )
    .await?;
    deltas.rollup(c.program_id, day_of(c.at)).clicks += 1;
    deltas.link_click(c.link_id, c.at);
    deltas.partner(c.partner_id, c.program_id).clicks += 1;
    Ok(click_id)
}

/// The columns of a batch's new clicks (see [`new_clicks`]).
const CLICK_COLUMNS: &[&str] = &[
    "program_id",
    "click_id",
    "partner_id",
    "link_id",
    "at",
    "session_id",
    "page_url",
    "page_title",
    "referrer_url",
    "screen_resolution",
    "viewport_size",
    "language",
    "timezone",
    "geo_country",
    "geo_region",
    "geo_city",
    "device_type",
    "device_os",
    "browser_name",
];

/// Of [`CLICK_COLUMNS`], those the customer's row needs.
const CUSTOMER_CLICK_COLUMNS: &[&str] = CLICK_COLUMNS.split_at(5).0;

/// The columns each statement of [`new_clicks_sql`] reads, in order (for [`Rows::bind`]).
const NEW_CLICK_STATEMENTS: &[&[&str]] = &[CUSTOMER_CLICK_COLUMNS, CLICK_COLUMNS];

/// The statement that inserts `n` new clicks (1 to [`rows::CHUNK`]): their customers,
/// then their click events. One round trip.
fn new_clicks_sql(n: usize) -> &'static str {
    static SQL: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    rows::sized(&SQL, n, build_new_clicks_sql)
}

/// Inserts the customers of new clicks from `rows`.
const NEW_CUSTOMERS: &str = "INSERT INTO customers (program_id, click_id, customer_status, \
    partner_id, link_id, created_at, updated_at) \
    SELECT program_id, click_id, 'click', partner_id, link_id, at, at FROM rows";

/// Inserts the click events of new clicks from `from`, which holds `rows` and their
/// customers' ids as `customer_id`.
fn new_click_events(customer_id: &str, from: &str) -> String {
    format!(
        "INSERT INTO affiliate_click_events (program_id, customer_id, link_id, partner_id, \
         click_id, session_id, page_url, page_title, referrer_url, screen_resolution, \
         viewport_size, language, timezone, geo_country, geo_region, geo_city, device_type, \
         device_os, browser_name, is_test, click_timestamp, created_at) \
         SELECT rows.program_id, {customer_id}, rows.link_id, rows.partner_id, rows.click_id, \
         session_id, page_url, page_title, referrer_url, screen_resolution, viewport_size, \
         language, timezone, geo_country, geo_region, geo_city, device_type, device_os, \
         browser_name, FALSE, at, at FROM {from}"
    )
}

fn build_new_clicks_sql(n: usize) -> String {
    let rows = |columns| Rows::cte(CLICK_COLUMNS, n, columns);
    match BACKEND {
        // Two statements in one query, each with the rows' columns it needs; the events
        // find their customers by click id.
        Backend::Sqlite => format!(
            "{} {NEW_CUSTOMERS}; {} {}",
            rows(CUSTOMER_CLICK_COLUMNS),
            rows(CLICK_COLUMNS),
            new_click_events(
                "(SELECT id FROM customers c WHERE c.click_id = rows.click_id)",
                "rows"
            )
        ),
        // One statement: see `new_clicks_ctes`.
        Backend::Postgres => format!("{} SELECT 1", new_clicks_ctes(n)),
    }
}

/// PostgreSQL's `WITH` of `n` new clicks: the customers' INSERT is a CTE whose ids the
/// events' INSERT, another CTE, joins.
fn new_clicks_ctes(n: usize) -> &'static str {
    static SQL: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    rows::sized(&SQL, n, |n| {
        format!(
            "{}, made AS ({} RETURNING id, click_id), events AS ({})",
            Rows::cte(CLICK_COLUMNS, n, CLICK_COLUMNS),
            NEW_CUSTOMERS,
            new_click_events("made.id", "rows JOIN made ON made.click_id = rows.click_id")
        )
    })
}

/// §4.1 steps 2 to 5 for clicks that each create their customer, all at once: the
/// customers and the click events go in by one statement per [`rows::CHUNK`] clicks and
/// the counters are folded. Returns the click ids in the order of `clicks`. Same rows and
/// counters as [`click`] for each.
pub async fn new_clicks(
    conn: &mut Conn,
    deltas: &mut Deltas,
    clicks: &[&NewClick],
) -> Result<Vec<String>> {
    let ids: Vec<String> = clicks.iter().map(|c| click_id::generate(c.at)).collect();
    let rows = new_click_rows(clicks, &ids);
    for (n, chunk) in rows.chunks() {
        let query = sqlx::query(new_clicks_sql(n));
        rows.bind(query, chunk, NEW_CLICK_STATEMENTS)
            .execute(&mut *conn)
            .await?;
    }
    count_new_clicks(deltas, clicks);
    Ok(ids)
}

/// [`new_clicks`] as a transaction of its own, in one round trip: on SQLite one query
/// from `BEGIN IMMEDIATE` to `COMMIT`, on PostgreSQL one statement (which commits on its
/// own) whose inserts and counter updates are CTEs. At most [`rows::CHUNK`] clicks. When
/// it fails, nothing of it is left.
pub async fn commit_new_clicks(conn: &mut Conn, clicks: &[&NewClick]) -> sqlx::Result<Vec<String>> {
    debug_assert!((1..=rows::CHUNK).contains(&clicks.len()));
    let ids: Vec<String> = clicks.iter().map(|c| click_id::generate(c.at)).collect();
    let rows = new_click_rows(clicks, &ids);
    let mut deltas = Deltas::default();
    count_new_clicks(&mut deltas, clicks);
    let (Some((n, chunk)), Some(counts)) = (rows.chunks().next(), counters::parts(&deltas).next())
    else {
        // No clicks: nothing was written, so nothing may be answered as recorded.
        return Err(sqlx::Error::InvalidArgument("no clicks to commit".into()));
    };
    let sql = match BACKEND {
        Backend::Sqlite => format!(
            "BEGIN IMMEDIATE; {}; {}; COMMIT",
            new_clicks_sql(n),
            counts.sql(1)
        ),
        Backend::Postgres => format!(
            "{}, {} SELECT 1",
            new_clicks_ctes(n),
            counts.sql(n * CLICK_COLUMNS.len() + 1)
        ),
    };
    let query = rows.bind(sqlx::query(&sql), chunk, NEW_CLICK_STATEMENTS);
    if let Err(e) = counts.bind(query).execute(&mut *conn).await {
        if BACKEND == Backend::Sqlite {
            // The query stopped at its failing statement: end the transaction it began
            // (an error here means it never began).
            let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
        }
        return Err(e);
    }
    Ok(ids)
}

/// The rows of [`CLICK_COLUMNS`] for `clicks`, whose click ids are `ids`.
fn new_click_rows<'c>(clicks: &[&'c NewClick], ids: &'c [String]) -> Rows<'c> {
    use rows::Value::{Int, Text};
    let mut rows = Rows::new(CLICK_COLUMNS);
    for (c, id) in clicks.iter().zip(ids) {
        let d = &c.details;
        rows.push(&[
            Int(c.program_id),
            Text(Some(id)),
            Int(c.partner_id),
            Int(c.link_id),
            Int(c.at),
            Text(d.session_id.as_deref()),
            Text(d.page_url.as_deref()),
            Text(d.page_title.as_deref()),
            Text(d.referrer_url.as_deref()),
            Text(d.screen_resolution.as_deref()),
            Text(d.viewport_size.as_deref()),
            Text(d.language.as_deref()),
            Text(d.timezone.as_deref()),
            Text(d.geo_country.as_deref()),
            Text(d.geo_region.as_deref()),
            Text(d.geo_city.as_deref()),
            Text(d.device_type.as_deref()),
            Text(d.device_os.as_deref()),
            Text(d.browser_name.as_deref()),
        ]);
    }
    rows
}

/// Folds the counters of new clicks into `deltas`.
fn count_new_clicks(deltas: &mut Deltas, clicks: &[&NewClick]) {
    // Most clicks of a batch fall on one day: format it once.
    let mut day: Option<(i64, String)> = None;
    for c in clicks {
        let n = c.at.div_euclid(86_400_000);
        if day.as_ref().is_none_or(|(d, _)| *d != n) {
            day = Some((n, day_of(c.at)));
        }
        let text = day.as_ref().map(|(_, t)| t.clone()).unwrap_or_default();
        deltas.rollup(c.program_id, text).clicks += 1;
        deltas.link_click(c.link_id, c.at);
        deltas.partner(c.partner_id, c.program_id).clicks += 1;
    }
}

/// D6: one flagged event; no customer, counter or metric.
pub async fn test_click(conn: &mut Conn, c: NewTestClick) -> Result<i64> {
    let row = ClickEventRow {
        program_id: c.program_id,
        customer_id: None,
        link_id: c.link_id,
        partner_id: c.partner_id,
        click_id: c.click_id.as_deref(),
        details: &c.details,
        is_test: true,
        at: c.at,
    };
    Ok(insert_click_event(conn, row).await?)
}

/// One row of `affiliate_lead_events`.
struct LeadEventRow<'a> {
    program_id: i64,
    customer_id: Option<i64>,
    click_id: Option<&'a str>,
    customer_key: Option<&'a str>,
    email: Option<&'a str>,
    session_id: Option<&'a str>,
    page_url: Option<&'a str>,
    event_name: Option<&'a str>,
    is_test: bool,
    at: i64,
}

async fn insert_lead_event(conn: &mut Conn, e: LeadEventRow<'_>) -> Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO affiliate_lead_events (program_id, customer_id, click_id, customer_key, \
         email, session_id, page_url, event_name, is_test, lead_timestamp, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) RETURNING id",
    )
    .bind(e.program_id)
    .bind(e.customer_id)
    .bind(e.click_id)
    .bind(e.customer_key)
    .bind(e.email)
    .bind(e.session_id)
    .bind(e.page_url)
    .bind(e.event_name)
    .bind(e.is_test)
    .bind(e.at)
    .fetch_one(&mut *conn)
    .await
    .map_err(|e| match Error::from(e) {
        // The unique index on (program, customer_key) of real leads: D7's dedupe.
        Error::Conflict(_) => Error::bad_request(attribution::lead_refused("lead")),
        other => other,
    })
}

/// A customer as a lead or sale sees it.
struct CustomerRow {
    id: i64,
    program_id: i64,
    click_id: String,
    customer_key: Option<String>,
    status: String,
    partner_id: Option<i64>,
    first_purchase_date: Option<i64>,
}

const CUSTOMER_COLUMNS: &str =
    "id, program_id, click_id, customer_key, customer_status, partner_id, first_purchase_date";

fn customer_from_row(r: &DbRow) -> sqlx::Result<CustomerRow> {
    Ok(CustomerRow {
        id: r.try_get(0)?,
        program_id: r.try_get(1)?,
        click_id: r.try_get(2)?,
        customer_key: r.try_get(3)?,
        status: r.try_get(4)?,
        partner_id: r.try_get(5)?,
        first_purchase_date: r.try_get(6)?,
    })
}

async fn customer_by_click_id(conn: &mut Conn, click_id: &str) -> Result<Option<CustomerRow>> {
    let sql = format!("SELECT {CUSTOMER_COLUMNS} FROM customers WHERE click_id = $1");
    let row = sqlx::query(&sql)
        .bind(click_id)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(row.map(|r| customer_from_row(&r)).transpose()?)
}

async fn customer_by_key(
    conn: &mut Conn,
    program_id: i64,
    key: &str,
) -> Result<Option<CustomerRow>> {
    let sql = format!(
        "SELECT {CUSTOMER_COLUMNS} FROM customers WHERE program_id = $1 AND customer_key = $2"
    );
    let row = sqlx::query(&sql)
        .bind(program_id)
        .bind(key)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(row.map(|r| customer_from_row(&r)).transpose()?)
}

async fn program_origins(conn: &mut Conn, program_id: i64) -> Result<Option<Vec<String>>> {
    let stored: Option<String> =
        sqlx::query_scalar("SELECT allowed_origins FROM programs WHERE id = $1")
            .bind(program_id)
            .fetch_optional(&mut *conn)
            .await?;
    Ok(stored.map(|s| parse_origins(&s)))
}

/// D11 for browser-mode leads: the program of the lead decides which origins may send it.
async fn check_browser_origin(conn: &mut Conn, l: &NewLead, program_id: i64) -> Result<()> {
    if l.server_mode {
        return Ok(());
    }
    let origins = program_origins(conn, program_id).await?.unwrap_or_default();
    if origin_allowed(&origins, l.origin.as_deref()) {
        Ok(())
    } else {
        Err(Error::Forbidden("Origin not allowed".into()))
    }
}

/// D7: a lead moves a `click` customer to `lead`, or is stored unattributed.
pub async fn lead(conn: &mut Conn, deltas: &mut Deltas, l: NewLead) -> Result<()> {
    let customer = match (l.click_id.as_deref(), l.customer_key.as_deref()) {
        (Some(click_id), _) => {
            let found = customer_by_click_id(conn, click_id).await?;
            let c = found.ok_or_else(|| {
                Error::bad_request("Customer not found. Provide a valid click_id or customer_key.")
            })?;
            if l.program_id.is_some_and(|p| p != c.program_id) {
                return Err(Error::bad_request(
                    "Customer does not belong to this program",
                ));
            }
            check_browser_origin(conn, &l, c.program_id).await?;
            Some(c)
        }
        (None, Some(key)) => {
            let program_id = l.program_id.ok_or_else(|| {
                Error::bad_request(
                    "additional_data.program_id is required for a lead without click_id or API key",
                )
            })?;
            if program_origins(conn, program_id).await?.is_none() {
                return Err(Error::bad_request("Program not found"));
            }
            check_browser_origin(conn, &l, program_id).await?;
            match customer_by_key(conn, program_id, key).await? {
                Some(c) => Some(c),
                None => {
                    // Unattributed: no customer, no partner (§8, D7).
                    insert_lead_event(
                        conn,
                        LeadEventRow {
                            program_id,
                            customer_id: None,
                            click_id: None,
                            customer_key: Some(key),
                            email: l.email.as_deref(),
                            session_id: l.session_id.as_deref(),
                            page_url: l.page_url.as_deref(),
                            event_name: l.event_name.as_deref(),
                            is_test: false,
                            at: l.at,
                        },
                    )
                    .await?;
                    deltas.rollup(program_id, day_of(l.at)).lead_events += 1;
                    return Ok(());
                }
            }
        }
        (None, None) => return Err(Error::bad_request("click_id or customer_key is required")),
    };
    let Some(c) = customer else { return Ok(()) };
    let status = CustomerStatus::parse(&c.status).unwrap_or(CustomerStatus::Conversion);
    status.to_lead().map_err(Error::BadRequest)?;
    let key = l.customer_key.clone().or(c.customer_key.clone());
    if let Some(key) = l.customer_key.as_deref() {
        if c.customer_key.as_deref() != Some(key) {
            if let Some(other) = customer_by_key(conn, c.program_id, key).await? {
                return Err(Error::bad_request(attribution::lead_refused(&other.status)));
            }
        }
    }
    let updated = sqlx::query(
        "UPDATE customers SET customer_status = 'lead', signup_date = $1, \
         customer_key = $2, email = COALESCE($3, email), updated_at = $1 \
         WHERE id = $4 AND customer_status = 'click'",
    )
    .bind(l.at)
    .bind(&key)
    .bind(&l.email)
    .bind(c.id)
    .execute(&mut *conn)
    .await?;
    if updated.rows_affected() != 1 {
        return Err(Error::bad_request(attribution::lead_refused(&c.status)));
    }
    insert_lead_event(
        conn,
        LeadEventRow {
            program_id: c.program_id,
            customer_id: Some(c.id),
            click_id: Some(&c.click_id),
            customer_key: key.as_deref(),
            email: l.email.as_deref(),
            session_id: l.session_id.as_deref(),
            page_url: l.page_url.as_deref(),
            event_name: l.event_name.as_deref(),
            is_test: false,
            at: l.at,
        },
    )
    .await?;
    let r = deltas.rollup(c.program_id, day_of(l.at));
    r.leads += 1;
    r.lead_events += 1;
    if let Some(partner_id) = c.partner_id {
        deltas.partner(partner_id, c.program_id).leads += 1;
    }
    Ok(())
}

/// D10: a flagged lead event; no customer change.
pub async fn test_lead(conn: &mut Conn, l: NewTestLead) -> Result<i64> {
    insert_lead_event(
        conn,
        LeadEventRow {
            program_id: l.program_id,
            customer_id: None,
            click_id: l.click_id.as_deref(),
            customer_key: l.customer_key.as_deref(),
            email: l.email.as_deref(),
            session_id: l.session_id.as_deref(),
            page_url: l.page_url.as_deref(),
            event_name: l.event_name.as_deref(),
            is_test: true,
            at: l.at,
        },
    )
    .await
}

async fn insert_sale_event(
    conn: &mut Conn,
    s: &NewSale,
    customer_id: Option<i64>,
    partner_id: Option<i64>,
    click_id: Option<&str>,
    customer_key: Option<&str>,
) -> Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO affiliate_sale_events (program_id, customer_id, partner_id, click_id, \
         customer_key, processor_event_id, amount_cents, currency, sale_type, payment_status, \
         is_recurring, subscription_id, product_id, metadata, is_test, sale_date, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'paid', $10, $11, $12, $13, $14, $15, $15) \
         RETURNING id",
    )
    .bind(s.program.id)
    .bind(customer_id)
    .bind(partner_id)
    .bind(click_id)
    .bind(customer_key)
    .bind(&s.transaction_id)
    .bind(s.amount_cents)
    .bind(&s.currency)
    .bind(&s.sale_type)
    .bind(s.is_recurring)
    .bind(&s.subscription_id)
    .bind(&s.product_id)
    .bind(&s.metadata)
    .bind(s.is_test)
    .bind(s.at)
    .fetch_one(&mut *conn)
    .await
    .map_err(|e| match Error::from(e) {
        Error::Conflict(_) => {
            Error::Conflict("Duplicate transaction_id. This sale has already been recorded.".into())
        }
        other => other,
    })
}

/// D8: resolve by `customer_key`, then `click_id`; a customer of another program is
/// "No affiliate attribution".
async fn resolve_sale_customer(conn: &mut Conn, s: &NewSale) -> Result<CustomerRow> {
    let mut elsewhere = false;
    if let Some(key) = s.customer_key.as_deref() {
        if let Some(c) = customer_by_key(conn, s.program.id, key).await? {
            return Ok(c);
        }
        elsewhere = sqlx::query("SELECT 1 FROM customers WHERE customer_key = $1 LIMIT 1")
            .bind(key)
            .fetch_optional(&mut *conn)
            .await?
            .is_some();
    }
    if let Some(click_id) = s.click_id.as_deref() {
        if let Some(c) = customer_by_click_id(conn, click_id).await? {
            if c.program_id == s.program.id {
                return Ok(c);
            }
            elsewhere = true;
        }
    }
    Err(Error::bad_request(if elsewhere {
        "No affiliate attribution found for this customer in this program"
    } else {
        "Customer not found. Provide customer_key or click_id."
    }))
}

/// D8: the sale event, its commission, the customer's conversion and the counters.
pub async fn sale(conn: &mut Conn, deltas: &mut Deltas, s: NewSale) -> Result<SaleOutcome> {
    if s.is_test {
        let sale_id = insert_sale_event(
            conn,
            &s,
            None,
            None,
            s.click_id.as_deref(),
            s.customer_key.as_deref(),
        )
        .await?;
        return Ok(SaleOutcome {
            sale_id,
            commission_id: None,
        });
    }
    let c = resolve_sale_customer(conn, &s).await?;
    // Renewals stay with the partner of the subscription's first sale (D5) and earn
    // within the program's recurring limit counted from that sale (D8).
    let mut partner_id = c.partner_id;
    let mut first_sale_at = None;
    if let Some(sub) = s.subscription_id.as_deref() {
        let first = sqlx::query(
            "SELECT partner_id, sale_date FROM affiliate_sale_events \
             WHERE program_id = $1 AND subscription_id = $2 AND NOT is_test \
             ORDER BY sale_date, id LIMIT 1",
        )
        .bind(s.program.id)
        .bind(sub)
        .fetch_optional(&mut *conn)
        .await?;
        if let Some(first) = first {
            partner_id = first.try_get::<Option<i64>, _>(0)?.or(partner_id);
            first_sale_at = Some(first.try_get::<i64, _>(1)?);
        }
    } else if s.is_recurring {
        first_sale_at = c.first_purchase_date;
    }
    let partner_id =
        partner_id.ok_or_else(|| Error::bad_request("partnerId required to create commission"))?;
    let partner_program_id: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM partner_programs WHERE partner_id = $1 AND program_id = $2",
    )
    .bind(partner_id)
    .bind(s.program.id)
    .fetch_optional(&mut *conn)
    .await?;
    let partner_program_id = partner_program_id.ok_or_else(|| {
        Error::bad_request("No partner-program relationship found for this customer")
    })?;

    let key = s.customer_key.as_deref().or(c.customer_key.as_deref());
    let sale_id = insert_sale_event(
        conn,
        &s,
        Some(c.id),
        Some(partner_id),
        Some(&c.click_id),
        key,
    )
    .await?;
    let earns = !s.is_recurring
        || commission::recurring_earns(s.program.recurring_commission_months, first_sale_at, s.at);
    let (commission_id, commission_cents) = if earns {
        let amount = s.program.commission.amount_for(s.amount_cents);
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO commissions (program_id, sale_id, partner_id, partner_program_id, \
             amount_cents, currency, status, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $7) RETURNING id",
        )
        .bind(s.program.id)
        .bind(sale_id)
        .bind(partner_id)
        .bind(partner_program_id)
        .bind(amount)
        .bind(&s.currency)
        .bind(s.at)
        .fetch_one(&mut *conn)
        .await?;
        (Some(id), amount)
    } else {
        (None, 0)
    };

    sqlx::query(
        "UPDATE customers SET customer_status = 'conversion', \
         first_purchase_date = COALESCE(first_purchase_date, $1), updated_at = $1 WHERE id = $2",
    )
    .bind(s.at)
    .bind(c.id)
    .execute(&mut *conn)
    .await?;

    count_sale(
        deltas,
        &s,
        partner_id,
        commission_cents,
        c.first_purchase_date.is_none(),
    );
    Ok(SaleOutcome {
        sale_id,
        commission_id,
    })
}

/// Counts a recorded sale in its program's rollup and its partner's totals; `converts`
/// when it is the customer's first purchase.
fn count_sale(deltas: &mut Deltas, s: &NewSale, partner_id: i64, commission: i64, converts: bool) {
    // Figures are kept in hundredths of the major unit, whatever the currency.
    let revenue = money::hundredths(s.amount_cents, &s.currency);
    let commission_cents = money::hundredths(commission, &s.currency);
    let r = deltas.rollup(s.program.id, day_of(s.at));
    r.revenue_cents += revenue;
    r.sales += 1;
    r.sale_events += 1;
    r.commission_cents += commission_cents;
    if converts {
        r.conversions += 1;
    }
    let p = deltas.partner(partner_id, s.program.id);
    p.sales += 1;
    p.revenue_cents += revenue;
    p.commission_cents += commission_cents;
}

/// Whether [`plain_sales`] may take this sale: a live sale outside a subscription and not
/// flagged recurring, whose commission depends on nothing but its program and amount.
pub fn is_plain_sale(s: &NewSale) -> bool {
    !s.is_test && s.subscription_id.is_none() && !s.is_recurring
}

/// D8's customer of a sale in its program, as an SQL expression over the program id, the
/// customer key and the click id: by customer key, then by click id.
fn sale_customer_id(program_id: &str, customer_key: &str, click_id: &str) -> String {
    format!(
        "COALESCE(\
         (SELECT k.id FROM customers k WHERE k.program_id = {program_id} \
         AND k.customer_key = {customer_key}), \
         (SELECT k.id FROM customers k WHERE k.click_id = {click_id} \
         AND k.program_id = {program_id}))"
    )
}

/// The columns of the sales a batch resolves (see [`plain_sales`]); `idx` is the sale's
/// place in the batch.
const SALE_KEY_COLUMNS: &[&str] = &[
    "idx",
    "program_id",
    "customer_key",
    "click_id",
    "transaction_id",
];

/// The query that resolves `n` plain sales (1 to [`rows::CHUNK`]): per sale (by `idx`),
/// the customer D8 finds in the sale's program, that customer's partner-program record,
/// and whether the transaction id is already recorded. Sales whose customer is not in
/// the program have no row.
fn resolve_sales_sql(n: usize) -> &'static str {
    static SQL: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    rows::sized(&SQL, n, |n| {
        format!(
            "{} SELECT rows.idx, c.id, c.click_id, c.customer_key, c.partner_id, \
             c.first_purchase_date, pp.id, \
             EXISTS (SELECT 1 FROM affiliate_sale_events s \
             WHERE s.processor_event_id = rows.transaction_id) \
             FROM rows JOIN customers c ON c.id = {} \
             LEFT JOIN partner_programs pp ON pp.partner_id = c.partner_id \
             AND pp.program_id = c.program_id",
            Rows::cte(SALE_KEY_COLUMNS, n, SALE_KEY_COLUMNS),
            sale_customer_id("rows.program_id", "rows.customer_key", "rows.click_id"),
        )
    })
}

/// The columns of the resolved sales a batch records (see [`plain_sales`]).
const SALE_COLUMNS: &[&str] = &[
    "idx",
    "program_id",
    "customer_id",
    "partner_id",
    "click_id",
    "customer_key",
    "transaction_id",
    "amount_cents",
    "currency",
    "sale_type",
    "product_id",
    "metadata",
    "at",
    "commission",
    "partner_program_id",
];

/// Of [`SALE_COLUMNS`], those the sale event's row needs.
const SALE_EVENT_COLUMNS: &[&str] = SALE_COLUMNS.split_at(13).0;

/// The writes that record resolved plain sales, each with the columns of the rows it
/// reads: the sale events, their commissions, the customers' conversion, and per row its
/// index, sale id and commission id. The same rows [`sale`] writes for each. `SALES` and
/// `COMMISSIONS` stand for the tables the later ones find the new rows in.
const RECORD_SALES: [(&[&str], &str); 4] = [
    (
        SALE_EVENT_COLUMNS,
        "INSERT INTO affiliate_sale_events (program_id, customer_id, partner_id, click_id, \
         customer_key, processor_event_id, amount_cents, currency, sale_type, payment_status, \
         is_recurring, subscription_id, product_id, metadata, is_test, sale_date, created_at) \
         SELECT program_id, customer_id, partner_id, click_id, customer_key, transaction_id, \
         amount_cents, currency, sale_type, 'paid', FALSE, NULL, product_id, metadata, FALSE, \
         at, at FROM rows ORDER BY idx",
    ),
    (
        &["transaction_id", "partner_program_id", "commission"],
        "INSERT INTO commissions (program_id, sale_id, partner_id, partner_program_id, \
         amount_cents, currency, status, created_at, updated_at) \
         SELECT s.program_id, s.id, s.partner_id, rows.partner_program_id, rows.commission, \
         s.currency, 'pending', s.sale_date, s.sale_date \
         FROM rows JOIN SALES s ON s.processor_event_id = rows.transaction_id",
    ),
    (
        &["customer_id", "at"],
        "UPDATE customers SET customer_status = 'conversion', \
         first_purchase_date = COALESCE(customers.first_purchase_date, rows.at), \
         updated_at = rows.at FROM rows WHERE customers.id = rows.customer_id",
    ),
    (
        &["idx", "transaction_id"],
        "SELECT rows.idx, s.id AS sale_id, c.id AS commission_id FROM rows \
         JOIN SALES s ON s.processor_event_id = rows.transaction_id \
         LEFT JOIN COMMISSIONS c ON c.sale_id = s.id",
    ),
];

/// The query that records `n` resolved plain sales (1 to [`rows::CHUNK`]) by
/// [`RECORD_SALES`]: four statements on SQLite, later ones finding the new sales by
/// transaction id; one statement on PostgreSQL, each write a CTE.
fn record_sales_sql(n: usize) -> &'static str {
    static SQL: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    rows::sized(&SQL, n, build_record_sales_sql)
}

fn build_record_sales_sql(n: usize) -> String {
    let [sales, commissions, customers, ids] = RECORD_SALES.map(|(_, sql)| sql);
    match BACKEND {
        Backend::Sqlite => RECORD_SALES
            .map(|(columns, sql)| {
                format!(
                    "{} {}",
                    Rows::cte(SALE_COLUMNS, n, columns),
                    sql.replace("JOIN SALES", "JOIN affiliate_sale_events")
                        .replace("JOIN COMMISSIONS", "JOIN commissions")
                )
            })
            .join("; "),
        Backend::Postgres => format!(
            "{}, sales AS ({sales} RETURNING id, processor_event_id, program_id, partner_id, \
             currency, sale_date), \
             comm AS ({} RETURNING id, sale_id), \
             cust AS ({customers} RETURNING 1) {}",
            Rows::cte(SALE_COLUMNS, n, SALE_COLUMNS),
            commissions.replace("SALES", "sales"),
            ids.replace("SALES", "sales").replace("COMMISSIONS", "comm"),
        ),
    }
}

/// The columns of the sales [`commit_plain_sales`] takes: what [`SALE_COLUMNS`] holds
/// before the customer is known, with the figures its counters add (hundredths of the
/// major unit, the day).
const BATCH_SALE_COLUMNS: &[&str] = &[
    "idx",
    "program_id",
    "customer_key",
    "click_id",
    "transaction_id",
    "amount_cents",
    "currency",
    "sale_type",
    "product_id",
    "metadata",
    "at",
    "commission",
    "revenue_hundredths",
    "commission_hundredths",
    "day",
];

/// The sales of the batch [`commit_plain_sales`] records: a table of the write
/// connection's own (`TEMP`, in memory), filled and read within one transaction.
const SALE_BATCH_TABLE: &str = "CREATE TEMP TABLE IF NOT EXISTS sale_batch (idx INTEGER, \
    program_id INTEGER, customer_id INTEGER, partner_id INTEGER, partner_program_id INTEGER, \
    click_id TEXT, customer_key TEXT, transaction_id TEXT, amount_cents INTEGER, \
    currency TEXT, sale_type TEXT, product_id TEXT, metadata TEXT, at INTEGER, \
    commission INTEGER, revenue_hundredths INTEGER, commission_hundredths INTEGER, \
    day TEXT, converts INTEGER)";

/// The statement of [`commit_plain_sales`] after its `rows` and `ranked`: the sales that
/// resolve plainly go into `sale_batch`, which the writes of [`RECORD_SALES`] then read.
const RESOLVE_SALE_BATCH: &str = "\
    INSERT INTO temp.sale_batch SELECT r.idx, r.program_id, c.id, c.partner_id, pp.id, \
    c.click_id, COALESCE(r.customer_key, c.customer_key), r.transaction_id, r.amount_cents, \
    r.currency, r.sale_type, r.product_id, r.metadata, r.at, r.commission, \
    r.revenue_hundredths, r.commission_hundredths, r.day, c.first_purchase_date IS NULL \
    FROM ranked r JOIN customers c ON c.id = r.customer_id \
    JOIN partner_programs pp ON pp.partner_id = c.partner_id AND pp.program_id = c.program_id \
    WHERE r.nth_of_customer = 1 AND r.nth_of_transaction = 1 \
    AND NOT EXISTS (SELECT 1 FROM affiliate_sale_events s \
    WHERE s.processor_event_id = r.transaction_id)";

/// The counters of the sales in `sale_batch`: what [`count_sale`] adds for each, summed
/// per partner-program record and per program day.
const SALE_BATCH_COUNTERS: &str = "\
    UPDATE partner_programs SET total_sales = partner_programs.total_sales + d.sales, \
    total_revenue_cents = partner_programs.total_revenue_cents + d.revenue, \
    total_commission_cents = partner_programs.total_commission_cents + d.commission \
    FROM (SELECT partner_program_id, COUNT(*) AS sales, SUM(revenue_hundredths) AS revenue, \
    SUM(commission_hundredths) AS commission FROM temp.sale_batch \
    GROUP BY partner_program_id) d WHERE partner_programs.id = d.partner_program_id; \
    INSERT INTO daily_rollups (program_id, day, clicks, leads, conversions, revenue_cents, \
    sales, commission_cents, partners, lead_events, sale_events) \
    SELECT program_id, day, 0, 0, SUM(converts), SUM(revenue_hundredths), COUNT(*), \
    SUM(commission_hundredths), 0, 0, COUNT(*) FROM temp.sale_batch WHERE true \
    GROUP BY program_id, day ON CONFLICT (program_id, day) DO UPDATE SET \
    conversions = daily_rollups.conversions + excluded.conversions, \
    revenue_cents = daily_rollups.revenue_cents + excluded.revenue_cents, \
    sales = daily_rollups.sales + excluded.sales, \
    commission_cents = daily_rollups.commission_cents + excluded.commission_cents, \
    sale_events = daily_rollups.sale_events + excluded.sale_events";

/// The last statement of [`commit_plain_sales`]: the rows of `ids` (the last statement
/// of [`RECORD_SALES`]), that is per recorded sale its place in the batch, its sale id and
/// its commission id, as one text value (`idx sale commission`, comma-separated). sqlx
/// hands each row from SQLite's thread to the writer's as a message of its own, which
/// usually has to wake the writer; one row per batch instead of one per sale saves most
/// of those wake-ups.
fn sale_batch_ids(ids: &str) -> String {
    format!(
        "SELECT group_concat(idx || ' ' || sale_id || ' ' || COALESCE(commission_id, ''), ',') \
         FROM ({ids})"
    )
}

/// The query of [`commit_plain_sales`] for `n` sales (1 to [`rows::CHUNK`]).
fn commit_sale_batch_sql(n: usize) -> &'static str {
    static SQL: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    rows::sized(&SQL, n, |n| {
        // Per sale, D8's customer in its program and whether an earlier sale of the batch
        // names the same customer or transaction id (that one is left to `sale`).
        let ranked = format!(
            "ranked AS (SELECT *, \
             ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY idx) AS nth_of_customer, \
             ROW_NUMBER() OVER (PARTITION BY transaction_id ORDER BY idx) AS nth_of_transaction \
             FROM (SELECT rows.*, {} AS customer_id FROM rows))",
            sale_customer_id("rows.program_id", "rows.customer_key", "rows.click_id")
        );
        // The writes of `RECORD_SALES`, with `sale_batch` (whose columns have the same
        // names) as their `rows`.
        let [sales, commissions, customers, ids] = RECORD_SALES.map(|(_, sql)| {
            sql.replace("FROM rows", "FROM temp.sale_batch AS rows")
                .replace("JOIN SALES", "JOIN affiliate_sale_events")
                .replace("JOIN COMMISSIONS", "JOIN commissions")
        });
        format!(
            "{BEGIN_WRITE}; {SALE_BATCH_TABLE}; DELETE FROM temp.sale_batch; {}, {ranked} \
             {RESOLVE_SALE_BATCH}; {sales}; {commissions}; {customers}; \
             {SALE_BATCH_COUNTERS}; {}; COMMIT",
            Rows::cte(BATCH_SALE_COLUMNS, n, BATCH_SALE_COLUMNS),
            sale_batch_ids(&ids)
        )
    })
}

/// [`plain_sales`] as a transaction of its own, on SQLite, in one round trip: one query
/// from `BEGIN IMMEDIATE` to `COMMIT` that resolves the sales, records those that resolve
/// plainly with their counters, and returns what it recorded. At most [`rows::CHUNK`]
/// sales. When it fails, nothing of it is left; a sale answered `None` was not written
/// and is left to [`sale`].
pub async fn commit_plain_sales(
    conn: &mut Conn,
    sales: &[&NewSale],
) -> Result<Vec<Option<SaleOutcome>>> {
    use rows::Value::{Int, Text};
    debug_assert!(BACKEND == Backend::Sqlite && (1..=rows::CHUNK).contains(&sales.len()));
    let figures: Vec<(i64, i64, i64, String)> = sales
        .iter()
        .map(|s| {
            let commission = s.program.commission.amount_for(s.amount_cents);
            (
                commission,
                money::hundredths(s.amount_cents, &s.currency),
                money::hundredths(commission, &s.currency),
                day_of(s.at),
            )
        })
        .collect();
    let mut rows = Rows::new(BATCH_SALE_COLUMNS);
    for (i, (s, (commission, revenue, commission_hundredths, day))) in
        sales.iter().zip(&figures).enumerate()
    {
        rows.push(&[
            place(i),
            Int(s.program.id),
            Text(s.customer_key.as_deref()),
            Text(s.click_id.as_deref()),
            Text(Some(&s.transaction_id)),
            Int(s.amount_cents),
            Text(Some(&s.currency)),
            Text(Some(&s.sale_type)),
            Text(s.product_id.as_deref()),
            Text(s.metadata.as_deref()),
            Int(s.at),
            Int(*commission),
            Int(*revenue),
            Int(*commission_hundredths),
            Text(Some(day)),
        ]);
    }
    // Sales past the first chunk (none, from the committer) are answered `None`: left
    // to `sale`.
    let Some((n, chunk)) = rows.chunks().next() else {
        return Ok(Vec::new());
    };
    let query = rows.bind(
        sqlx::query(commit_sale_batch_sql(n)),
        chunk,
        &[BATCH_SALE_COLUMNS],
    );
    // `fetch_all`: the query must run to its `COMMIT`, past the row it returns.
    let recorded: Option<String> = match query.fetch_all(&mut *conn).await {
        Ok(rows) => match rows.first() {
            Some(row) => row.try_get(0)?,
            None => None,
        },
        Err(e) => {
            // The query stopped at its failing statement: end the transaction it began
            // (an error here means it never began).
            let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
            return Err(e.into());
        }
    };
    let mut outcomes: Vec<Option<SaleOutcome>> = vec![None; sales.len()];
    for triple in recorded
        .as_deref()
        .unwrap_or("")
        .split(',')
        .filter(|t| !t.is_empty())
    {
        // Integers this query wrote itself: unreadable only through a bug in it, which
        // `concurrent_sales_answer_and_count_as_one_by_one` (every answer checked) shows.
        let (i, outcome) = parse_recorded_sale(triple).ok_or_else(|| {
            Error::Internal(
                "Internal server error",
                anyhow::anyhow!("unreadable sale batch answer {triple:?}"),
            )
        })?;
        if let Some(slot) = outcomes.get_mut(i) {
            *slot = Some(outcome);
        }
    }
    Ok(outcomes)
}

/// One `idx sale commission` triple of [`sale_batch_ids`] (the commission may be empty).
fn parse_recorded_sale(triple: &str) -> Option<(usize, SaleOutcome)> {
    let mut parts = triple.split(' ');
    let idx = parts.next()?.parse().ok()?;
    let sale_id = parts.next()?.parse().ok()?;
    let commission_id = match parts.next()? {
        "" => None,
        id => Some(id.parse().ok()?),
    };
    parts.next().is_none().then_some((
        idx,
        SaleOutcome {
            sale_id,
            commission_id,
        },
    ))
}

/// A batched sale's place in its batch, as the `idx` of its row.
fn place(i: usize) -> rows::Value<'static> {
    rows::Value::Int(i64::try_from(i).unwrap_or(i64::MAX))
}

/// D8 for a batch of plain sales ([`is_plain_sale`]) at once: one query per
/// [`rows::CHUNK`] resolves their customers, one records every sale that resolves plainly
/// (its customer found in the program, with a partner and its partner-program record, a
/// transaction id not yet recorded nor used by an earlier sale of the batch, a customer
/// no earlier sale of the batch names), with the same rows and counters as [`sale`].
/// Returns an outcome per sale, `None` for those left to [`sale`], which gives them their
/// exact answer. Should it fail, the caller rolls back what it wrote and runs every sale
/// through [`sale`].
pub async fn plain_sales(
    conn: &mut Conn,
    deltas: &mut Deltas,
    sales: &[&NewSale],
) -> Result<Vec<Option<SaleOutcome>>> {
    use rows::Value::{Int, Text};
    let mut keys = Rows::new(SALE_KEY_COLUMNS);
    for (i, s) in sales.iter().enumerate() {
        keys.push(&[
            place(i),
            Int(s.program.id),
            Text(s.customer_key.as_deref()),
            Text(s.click_id.as_deref()),
            Text(Some(&s.transaction_id)),
        ]);
    }
    let mut found = Vec::with_capacity(sales.len());
    for (n, chunk) in keys.chunks() {
        let query = sqlx::query(resolve_sales_sql(n));
        found.extend(
            keys.bind(query, chunk, &[SALE_KEY_COLUMNS])
                .fetch_all(&mut *conn)
                .await?,
        );
    }
    // Per sale: customer id, click id, customer key, first purchase, partner and
    // partner-program record.
    type Resolved = (i64, String, Option<String>, Option<i64>, i64, i64);
    let mut resolved: Vec<Option<Resolved>> = (0..sales.len()).map(|_| None).collect();
    for r in &found {
        let i: i64 = r.try_get(0)?;
        let (partner_id, partner_program_id, recorded): (Option<i64>, Option<i64>, bool) =
            (r.try_get(4)?, r.try_get(6)?, r.try_get(7)?);
        let (Some(partner_id), Some(partner_program_id), false) =
            (partner_id, partner_program_id, recorded)
        else {
            continue;
        };
        if let Some(slot) = usize::try_from(i).ok().and_then(|i| resolved.get_mut(i)) {
            *slot = Some((
                r.try_get(1)?,
                r.try_get(2)?,
                r.try_get(3)?,
                r.try_get(5)?,
                partner_id,
                partner_program_id,
            ));
        }
    }
    let mut customers = std::collections::HashSet::new();
    let mut transactions = std::collections::HashSet::new();
    let mut rows = Rows::new(SALE_COLUMNS);
    let mut taken = Vec::new();
    for (i, (s, found)) in sales.iter().zip(&resolved).enumerate() {
        let Some((customer_id, click_id, customer_key, first_purchase, partner_id, pp_id)) = found
        else {
            continue;
        };
        if !customers.insert(*customer_id) || !transactions.insert(s.transaction_id.as_str()) {
            continue;
        }
        let commission = s.program.commission.amount_for(s.amount_cents);
        rows.push(&[
            place(i),
            Int(s.program.id),
            Int(*customer_id),
            Int(*partner_id),
            Text(Some(click_id)),
            Text(s.customer_key.as_deref().or(customer_key.as_deref())),
            Text(Some(&s.transaction_id)),
            Int(s.amount_cents),
            Text(Some(&s.currency)),
            Text(Some(&s.sale_type)),
            Text(s.product_id.as_deref()),
            Text(s.metadata.as_deref()),
            Int(s.at),
            Int(commission),
            Int(*pp_id),
        ]);
        taken.push((i, first_purchase.is_none(), *partner_id, commission));
    }
    let mut outcomes: Vec<Option<SaleOutcome>> = vec![None; sales.len()];
    for (n, chunk) in rows.chunks() {
        let query = sqlx::query(record_sales_sql(n));
        let query = rows.bind(query, chunk, &RECORD_SALES.map(|(columns, _)| columns));
        for r in &query.fetch_all(&mut *conn).await? {
            let i: i64 = r.try_get(0)?;
            if let Some(slot) = usize::try_from(i).ok().and_then(|i| outcomes.get_mut(i)) {
                *slot = Some(SaleOutcome {
                    sale_id: r.try_get(1)?,
                    commission_id: r.try_get(2)?,
                });
            }
        }
    }
    for (i, converts, partner_id, commission) in taken {
        if outcomes[i].is_none() {
            return Err(Error::Internal(
                "Internal server error",
                anyhow::anyhow!("a batched sale was not recorded"),
            ));
        }
        count_sale(deltas, sales[i], partner_id, commission, converts);
    }
    Ok(outcomes)
}

/// D9: full, partial or repeated refunds of a sale of the program.
pub async fn refund(conn: &mut Conn, deltas: &mut Deltas, r: NewRefund) -> Result<RefundOutcome> {
    let row = sqlx::query(
        "SELECT s.id, s.amount_cents, s.refunded_cents, s.partner_id, s.sale_date, \
         c.id, c.amount_cents, c.reversed_cents, s.currency \
         FROM affiliate_sale_events s LEFT JOIN commissions c ON c.sale_id = s.id \
         WHERE s.processor_event_id = $1 AND s.program_id = $2 AND s.is_test = $3",
    )
    .bind(&r.transaction_id)
    .bind(r.program_id)
    .bind(r.is_test)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Err(Error::not_found("Sale not found for transaction_id"));
    };
    let sale_id: i64 = row.try_get(0)?;
    let partner_id: Option<i64> = row.try_get(3)?;
    let sale_date: i64 = row.try_get(4)?;
    let commission_id: Option<i64> = row.try_get(5)?;
    let currency: String = row.try_get(8)?;
    let state = refund::SaleState {
        amount_cents: row.try_get(1)?,
        refunded_cents: row.try_get(2)?,
        commission: match commission_id {
            Some(_) => Some((row.try_get(6)?, row.try_get(7)?)),
            None => None,
        },
    };
    let plan = refund::plan(state, r.amount_cents).map_err(Error::BadRequest)?;
    let outcome = RefundOutcome {
        status: plan.status,
        sale_id,
        commission_id,
        deduction_cents: plan.deduction_cents,
        refunded_cents: plan.refund_cents,
        currency: currency.clone(),
    };
    if plan.status == RefundStatus::Skipped {
        return Ok(outcome);
    }
    sqlx::query(
        "UPDATE affiliate_sale_events SET refunded_cents = refunded_cents + $1, \
         payment_status = CASE WHEN $2 THEN 'refunded' ELSE payment_status END, \
         refund_reason = COALESCE($3, refund_reason) WHERE id = $4",
    )
    .bind(plan.refund_cents)
    .bind(plan.fully_refunded)
    .bind(&r.reason)
    .bind(sale_id)
    .execute(&mut *conn)
    .await?;
    if let Some(commission_id) = commission_id {
        sqlx::query(
            "UPDATE commissions SET reversed_cents = reversed_cents + $1, status = $2, updated_at = $3 \
             WHERE id = $4",
        )
        .bind(plan.deduction_cents)
        .bind(if plan.fully_refunded { "reversed" } else { "refunded" })
        .bind(r.at)
        .bind(commission_id)
        .execute(&mut *conn)
        .await?;
    }
    if !r.is_test {
        // Reversed amounts leave the figures of the sale's own day (D9).
        let full = i64::from(plan.fully_refunded);
        let refunded = money::hundredths(plan.refund_cents, &currency);
        let deducted = money::hundredths(plan.deduction_cents, &currency);
        let d = deltas.rollup(r.program_id, day_of(sale_date));
        d.revenue_cents -= refunded;
        d.sales -= full;
        d.commission_cents -= deducted;
        if let Some(partner_id) = partner_id {
            let p = deltas.partner(partner_id, r.program_id);
            p.revenue_cents -= refunded;
            p.sales -= full;
            p.commission_cents -= deducted;
        }
    }
    Ok(outcome)
}
