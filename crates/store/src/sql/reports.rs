//! Dashboard sessions and reads: login credentials, sessions, program access, daily
//! rollups, setup status, and the merged events listing with its total; their
//! statements and [`DashboardStore`] on the pools.
//!
//! Costs: the figures read `daily_rollups` only (O(days)); the setup status reads at most
//! 10 test events per step through `LIMIT` subqueries; the events list merges the three
//! event tables in the database (each branch an index range scan on
//! `(program_id, is_test, <ts> DESC, id DESC)` cut at `offset + limit`), and its total
//! comes from rollups for whole days and from indexed range counts for partial days.

use async_trait::async_trait;

use super::engine::{stmt, Engine, Rec};
use super::{named_opt, SqlStore};
use crate::dashboard_model::{
    ClickEvent, ConversionEvent, Credentials, DailyRollup, DashboardProgram, EventFilter,
    EventKind, EventPartner, LeadEvent, ListedEvent, SessionUser, SetupStatus, TestEventRef,
    TestEventSummary,
};
use crate::error::{StoreError, StoreResult};
use crate::model::PaymentAccount;
use crate::DashboardStore;
use reftrack_domain::metrics;

#[async_trait]
impl<DB: Engine> DashboardStore for SqlStore<DB> {
    async fn user_credentials(&self, email: &str) -> StoreResult<Option<Credentials>> {
        user_credentials::<DB>(&mut *self.read.acquire().await?, email).await
    }

    async fn create_session(
        &self,
        user_id: i64,
        token_hash: &str,
        now: i64,
        expires_at: i64,
    ) -> StoreResult<()> {
        let conn = &mut *self.write.acquire().await?;
        create_session::<DB>(conn, user_id, token_hash, now, expires_at).await
    }

    async fn session_user(&self, token_hash: &str, now: i64) -> StoreResult<Option<SessionUser>> {
        session_user::<DB>(&mut *self.read.acquire().await?, token_hash, now).await
    }

    async fn delete_session(&self, token_hash: &str) -> StoreResult<bool> {
        delete_session::<DB>(&mut *self.write.acquire().await?, token_hash).await
    }

    async fn program_access(
        &self,
        program_id: i64,
        user_id: i64,
    ) -> StoreResult<Option<DashboardProgram>> {
        program_access::<DB>(&mut *self.read.acquire().await?, program_id, user_id).await
    }

    async fn daily_rollups(
        &self,
        program_id: i64,
        from_day: &str,
        to_day: &str,
    ) -> StoreResult<Vec<DailyRollup>> {
        let conn = &mut *self.read.acquire().await?;
        daily_rollups::<DB>(conn, program_id, None, from_day, to_day).await
    }

    async fn partner_daily_rollups(
        &self,
        program_id: i64,
        partner_id: i64,
        from_day: &str,
        to_day: &str,
    ) -> StoreResult<Vec<DailyRollup>> {
        let conn = &mut *self.read.acquire().await?;
        daily_rollups::<DB>(conn, program_id, Some(partner_id), from_day, to_day).await
    }

    async fn setup_status(&self, program_id: i64) -> StoreResult<SetupStatus> {
        setup_status::<DB>(&mut *self.read.acquire().await?, program_id).await
    }

    async fn count_events(&self, program_id: i64, filter: &EventFilter) -> StoreResult<i64> {
        count_events::<DB>(&mut *self.read.acquire().await?, program_id, filter).await
    }

    async fn list_events(
        &self,
        program_id: i64,
        filter: &EventFilter,
        limit: i64,
        offset: i64,
    ) -> StoreResult<Vec<ListedEvent>> {
        let conn = &mut *self.read.acquire().await?;
        list_events::<DB>(conn, program_id, filter, limit, offset).await
    }
}

/// Table, timestamp column and rollup column of an event kind.
fn kind_sql(kind: EventKind) -> (&'static str, &'static str, &'static str) {
    match kind {
        EventKind::Click => ("affiliate_click_events", "click_timestamp", "clicks"),
        EventKind::Lead => ("affiliate_lead_events", "lead_timestamp", "lead_events"),
        EventKind::Conversion => ("affiliate_sale_events", "sale_date", "sale_events"),
    }
}

/// The id and password hash of the user with `email`.
pub(super) async fn user_credentials<DB: Engine>(
    conn: &mut DB::Connection,
    email: &str,
) -> StoreResult<Option<Credentials>> {
    let row = stmt::<DB>("SELECT id, password_hash FROM users WHERE email = $1")
        .bind(email)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(r) = row else { return Ok(None) };
    Ok(Some(Credentials {
        user_id: r.try_get_at(0)?,
        password_hash: r.try_get_at(1)?,
    }))
}

/// Stores a session and purges expired ones (indexed on `expires_at`), in one round trip.
pub(super) async fn create_session<DB: Engine>(
    conn: &mut DB::Connection,
    user_id: i64,
    token_hash: &str,
    now: i64,
    expires_at: i64,
) -> StoreResult<()> {
    stmt::<DB>(DB::CREATE_SESSION)
        .bind(user_id)
        .bind(token_hash)
        .bind(now)
        .bind(expires_at)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The user of the session whose token hashes to `token_hash`, if alive at `now`.
pub(super) async fn session_user<DB: Engine>(
    conn: &mut DB::Connection,
    token_hash: &str,
    now: i64,
) -> StoreResult<Option<SessionUser>> {
    let row = stmt::<DB>(
        "SELECT s.user_id, u.email, s.expires_at, u.name FROM sessions s JOIN users u ON u.id = s.user_id \
         WHERE s.token_hash = $1 AND s.expires_at > $2",
    )
    .bind(token_hash)
    .bind(now)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(r) = row else { return Ok(None) };
    Ok(Some(SessionUser {
        user_id: r.try_get_at(0)?,
        email: r.try_get_at(1)?,
        expires_at: r.try_get_at(2)?,
        name: r.try_get_at(3)?,
    }))
}

/// Ends a session; false when there was none.
pub(super) async fn delete_session<DB: Engine>(
    conn: &mut DB::Connection,
    token_hash: &str,
) -> StoreResult<bool> {
    let done = stmt::<DB>("DELETE FROM sessions WHERE token_hash = $1")
        .bind(token_hash)
        .execute(&mut *conn)
        .await?;
    Ok(done > 0)
}

/// A program with `user_id`'s membership in its workspace; `None` without the program.
pub(super) async fn program_access<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    user_id: i64,
) -> StoreResult<Option<DashboardProgram>> {
    let row = stmt::<DB>(
        "SELECT p.id, p.workspace_id, p.created_at, p.payment_status, p.payment_account_id, \
         p.charges_enabled, p.payouts_enabled, p.details_submitted, p.connection_date, \
         m.role AS member_role, m.status AS member_status, \
         CASE WHEN w.require_two_factor AND NOT EXISTS (SELECT 1 FROM two_factor t \
           WHERE t.account_kind = 'user' AND t.account_id = $2 AND t.secret IS NOT NULL) \
           THEN CAST(1 AS BIGINT) ELSE CAST(0 AS BIGINT) END AS two_factor_missing \
         FROM programs p JOIN workspaces w ON w.id = p.workspace_id \
         LEFT JOIN memberships m ON m.workspace_id = p.workspace_id AND m.user_id = $2 \
         WHERE p.id = $1",
    )
    .bind(program_id)
    .bind(user_id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(r) = row else { return Ok(None) };
    Ok(Some(DashboardProgram {
        id: r.try_get_at(0)?,
        workspace_id: r.try_get_at(1)?,
        created_at: r.try_get_at(2)?,
        payment: PaymentAccount {
            status: r.try_get_at(3)?,
            account_id: r.try_get_at(4)?,
            charges_enabled: r.try_get_at(5)?,
            payouts_enabled: r.try_get_at(6)?,
            details_submitted: r.try_get_at(7)?,
            connection_date: r.try_get_at(8)?,
        },
        member_role: named_opt(&r, "member_role")?,
        member_status: named_opt(&r, "member_status")?,
        two_factor_missing: r.try_get::<i64>("two_factor_missing")? != 0,
    }))
}

/// Rollup rows of `program_id` from `from_day` to `to_day` inclusive, by day.
pub(super) async fn daily_rollups<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    partner_id: Option<i64>,
    from_day: &str,
    to_day: &str,
) -> StoreResult<Vec<DailyRollup>> {
    let query = match partner_id {
        None => stmt::<DB>(
            "SELECT day, clicks, leads, conversions, revenue_cents, sales, commission_cents, \
             partners FROM daily_rollups \
             WHERE program_id = $1 AND day >= $2 AND day <= $3 ORDER BY day",
        ),
        Some(_) => stmt::<DB>(
            "SELECT day, clicks, leads, conversions, revenue_cents, sales, commission_cents, \
             CAST(0 AS BIGINT) AS partners FROM partner_daily_rollups \
             WHERE program_id = $1 AND day >= $2 AND day <= $3 AND partner_id = $4 ORDER BY day",
        ),
    };
    let mut query = query.bind(program_id).bind(from_day).bind(to_day);
    if let Some(partner_id) = partner_id {
        query = query.bind(partner_id);
    }
    Ok(query.records(&mut *conn).await?)
}

/// The newest test event of a kind in a program.
async fn latest_test_event<DB: Engine>(
    conn: &mut DB::Connection,
    kind: EventKind,
    program_id: i64,
) -> StoreResult<Option<TestEventRef>> {
    let (table, ts, _) = kind_sql(kind);
    let sql = format!(
        "SELECT id, {ts}, created_at FROM {table} WHERE program_id = $1 AND is_test = $2 \
         ORDER BY {ts} DESC, id DESC LIMIT 1"
    );
    let row = stmt::<DB>(&sql)
        .bind(program_id)
        .bind(true)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(r) = row else { return Ok(None) };
    Ok(Some(TestEventRef {
        id: r.try_get_at(0)?,
        timestamp: r.try_get_at(1)?,
        created_at: r.try_get_at(2)?,
    }))
}

/// Test clicks and leads (at most 10 counted each) and approved partners of a program.
pub(super) async fn setup_status<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
) -> StoreResult<SetupStatus> {
    let row = stmt::<DB>(
        "SELECT \
         (SELECT COUNT(*) FROM (SELECT id FROM affiliate_click_events \
           WHERE program_id = $1 AND is_test = $2 LIMIT 10) c), \
         (SELECT COUNT(*) FROM (SELECT id FROM affiliate_lead_events \
           WHERE program_id = $1 AND is_test = $2 LIMIT 10) l), \
         (SELECT COUNT(*) FROM (SELECT id FROM partner_programs \
           WHERE program_id = $1 AND status = 'approved' LIMIT 1) pp)",
    )
    .bind(program_id)
    .bind(true)
    .fetch_one(&mut *conn)
    .await?;
    let clicks: i64 = row.try_get_at(0)?;
    let leads: i64 = row.try_get_at(1)?;
    let partners: i64 = row.try_get_at(2)?;
    let pageview = TestEventSummary {
        count: clicks,
        latest: if clicks > 0 {
            latest_test_event::<DB>(&mut *conn, EventKind::Click, program_id).await?
        } else {
            None
        },
    };
    let referrals = TestEventSummary {
        count: leads,
        latest: if leads > 0 {
            latest_test_event::<DB>(&mut *conn, EventKind::Lead, program_id).await?
        } else {
            None
        },
    };
    Ok(SetupStatus {
        pageview,
        referrals,
        has_partners: partners > 0,
    })
}

/// The number of real events matching `f`: whole days from `daily_rollups`, partial
/// edge days from the event tables.
pub(super) async fn count_events<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    f: &EventFilter,
) -> StoreResult<i64> {
    // Rollups count real events only: test events are always counted row by row (a
    // program has few).
    let plan = if f.test {
        metrics::CountPlan {
            whole_days: None,
            edges: vec![(f.from_ms.unwrap_or(i64::MIN), f.to_ms.unwrap_or(i64::MAX))],
        }
    } else {
        metrics::count_plan(f.from_ms, f.to_ms)
    };
    let mut total = 0i64;
    if let Some((first, last)) = plan.whole_days {
        let cols: Vec<&str> = f.kinds.iter().map(|k| kind_sql(*k).2).collect();
        let sql = format!(
            "SELECT CAST(COALESCE(SUM({}), 0) AS BIGINT) FROM daily_rollups \
             WHERE program_id = $1 AND day >= $2 AND day <= $3",
            cols.join(" + ")
        );
        let from = first.map_or_else(|| "0000-01-01".to_string(), metrics::day_text);
        let to = last.map_or_else(|| "9999-12-31".to_string(), metrics::day_text);
        let n: i64 = stmt::<DB>(&sql)
            .bind(program_id)
            .bind(from)
            .bind(to)
            .scalar(&mut *conn)
            .await?;
        total += n;
    }
    if plan.edges.is_empty() {
        return Ok(total);
    }
    let counts: Vec<String> = f
        .kinds
        .iter()
        .map(|k| {
            let (table, ts, _) = kind_sql(*k);
            format!(
                "(SELECT COUNT(*) FROM {table} WHERE program_id = $1 AND is_test = $2 \
                 AND {ts} >= $3 AND {ts} <= $4)"
            )
        })
        .collect();
    let sql = format!("SELECT {}", counts.join(" + "));
    for (lo, hi) in plan.edges {
        let n: i64 = stmt::<DB>(&sql)
            .bind(program_id)
            .bind(f.test)
            .bind(lo)
            .bind(hi)
            .scalar(&mut *conn)
            .await?;
        total += n;
    }
    Ok(total)
}

/// Whether a listed click event `c` (its customer `ck`) converted: it is the customer's
/// latest click at or before the customer's first purchase. Derived when listed rather
/// than written by the sale (docs/decisions.md).
const CLICK_CONVERTED: &str = "CASE WHEN ck.first_purchase_date >= c.click_timestamp \
     AND NOT EXISTS (SELECT 1 FROM affiliate_click_events n \
     WHERE n.customer_id = c.customer_id AND n.id > c.id \
     AND n.click_timestamp <= ck.first_purchase_date) THEN TRUE ELSE FALSE END";

/// Whether a listed lead event `l` (its customer `lk`) converted: its customer has
/// purchased.
pub(super) const LEAD_CONVERTED: &str =
    "CASE WHEN lk.first_purchase_date IS NOT NULL THEN TRUE ELSE FALSE END";

/// One page of real events matching `f`, newest first (`timestamp DESC, id DESC`, then
/// the kind so that equal keys of different tables keep a stable order).
pub(super) async fn list_events<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    f: &EventFilter,
    limit: i64,
    offset: i64,
) -> StoreResult<Vec<ListedEvent>> {
    let branches: Vec<String> = f
        .kinds
        .iter()
        .map(|k| {
            let (table, ts, _) = kind_sql(*k);
            let kind = k.as_str();
            format!(
                "SELECT kind, id, ts FROM (SELECT '{kind}' AS kind, id, {ts} AS ts FROM {table} \
                 WHERE program_id = $1 AND is_test = $2 AND {ts} >= $3 AND {ts} <= $4 \
                 ORDER BY {ts} DESC, id DESC LIMIT $5) b_{kind}"
            )
        })
        .collect();
    let sql = format!(
        "SELECT p.kind, p.id, p.ts, \
         c.created_at, c.click_id, c.session_id, c.page_url, c.referrer_url, c.geo_country, \
         c.geo_region, c.geo_city, c.device_type, c.device_os, c.browser_name, {CLICK_CONVERTED}, \
         l.created_at, l.click_id, l.customer_key, l.session_id, l.page_url, {LEAD_CONVERTED}, \
         s.created_at, s.click_id, s.amount_cents, s.currency, s.sale_type, s.payment_status, \
         s.processor_event_id, s.is_recurring, pa.id, pa.name, s.refunded_cents, \
         s.converted_amount_cents, s.exchange_rate, s.rate_date, s.awaiting_rate \
         FROM ({} ORDER BY ts DESC, id DESC, kind LIMIT $6 OFFSET $7) p \
         LEFT JOIN affiliate_click_events c ON p.kind = 'click' AND c.id = p.id \
         LEFT JOIN customers ck ON ck.id = c.customer_id \
         LEFT JOIN affiliate_lead_events l ON p.kind = 'lead' AND l.id = p.id \
         LEFT JOIN customers lk ON lk.id = l.customer_id \
         LEFT JOIN affiliate_sale_events s ON p.kind = 'conversion' AND s.id = p.id \
         LEFT JOIN partners pa ON pa.id = COALESCE(c.partner_id, lk.partner_id, s.partner_id) \
         ORDER BY p.ts DESC, p.id DESC, p.kind",
        branches.join(" UNION ALL ")
    );
    stmt::<DB>(&sql)
        .bind(program_id)
        .bind(f.test)
        .bind(f.from_ms.unwrap_or(i64::MIN))
        .bind(f.to_ms.unwrap_or(i64::MAX))
        .bind(offset.saturating_add(limit))
        .bind(limit)
        .bind(offset)
        .read_all(&mut *conn, listed_event)
        .await
}

/// One row of [`list_events`] as the event of its kind.
fn listed_event<DB: Engine>(r: &Rec<DB>) -> StoreResult<ListedEvent> {
    let kind: String = r.try_get_at(0)?;
    let id: i64 = r.try_get_at(1)?;
    let timestamp: i64 = r.try_get_at(2)?;
    // The page was read in one statement: an event it names is in its own table.
    let missing = || StoreError::Other(anyhow::anyhow!("listed {kind} event {id} vanished"));
    let partner = match r.try_get_at::<Option<i64>>(29)? {
        Some(id) => Some(EventPartner {
            id,
            name: r.try_get_at::<Option<String>>(30)?.unwrap_or_default(),
        }),
        None => None,
    };
    Ok(match EventKind::parse(&kind) {
        Some(EventKind::Click) => ListedEvent::Click(ClickEvent {
            id,
            timestamp,
            created_at: r.try_get_at::<Option<i64>>(3)?.ok_or_else(missing)?,
            click_id: r.try_get_at(4)?,
            session_id: r.try_get_at(5)?,
            page_url: r.try_get_at(6)?,
            referrer_url: r.try_get_at(7)?,
            geo_country: r.try_get_at(8)?,
            geo_region: r.try_get_at(9)?,
            geo_city: r.try_get_at(10)?,
            device_type: r.try_get_at(11)?,
            device_os: r.try_get_at(12)?,
            browser_name: r.try_get_at(13)?,
            converted: r.try_get_at::<Option<bool>>(14)?.unwrap_or(false),
            partner,
        }),
        Some(EventKind::Lead) => ListedEvent::Lead(LeadEvent {
            id,
            timestamp,
            created_at: r.try_get_at::<Option<i64>>(15)?.ok_or_else(missing)?,
            click_id: r.try_get_at(16)?,
            customer_key: r.try_get_at(17)?,
            session_id: r.try_get_at(18)?,
            page_url: r.try_get_at(19)?,
            converted: r.try_get_at::<Option<bool>>(20)?.unwrap_or(false),
            partner,
        }),
        Some(EventKind::Conversion) => ListedEvent::Conversion(ConversionEvent {
            id,
            timestamp,
            created_at: r.try_get_at::<Option<i64>>(21)?.ok_or_else(missing)?,
            click_id: r.try_get_at(22)?,
            amount_cents: r.try_get_at::<Option<i64>>(23)?.unwrap_or(0),
            currency: r.try_get_at::<Option<String>>(24)?.unwrap_or_default(),
            sale_type: r.try_get_at::<Option<String>>(25)?.unwrap_or_default(),
            payment_status: r.try_get_at::<Option<String>>(26)?.unwrap_or_default(),
            processor_event_id: r.try_get_at::<Option<String>>(27)?.unwrap_or_default(),
            is_recurring: r.try_get_at::<Option<bool>>(28)?.unwrap_or(false),
            partner,
            refunded_cents: r.try_get_at::<Option<i64>>(31)?.unwrap_or(0),
            converted_amount_cents: r.try_get_at(32)?,
            exchange_rate: r.try_get_at(33)?,
            rate_date: r.try_get_at(34)?,
            awaiting_rate: r.try_get_at::<Option<bool>>(35)?.unwrap_or(false),
        }),
        None => return Err(missing()),
    })
}
