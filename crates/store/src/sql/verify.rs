//! The integrity snapshot behind `reftrack verify`: the stored figures, the same figures
//! recomputed from the raw events the way the write paths maintain them, and the records
//! that break a cross-record invariant, all read in one read transaction (one snapshot).

use sqlx::pool::Pool;
use sqlx::Connection;

use super::engine::{stmt, Engine};
use super::rules::SALE_NET_REVENUE;

use crate::error::StoreResult;
use crate::integrity::{Figures, Integrity, RawCounts, Violation};
use reftrack_domain::time::{day_of, DAY_MS};

/// The `YYYY-MM-DD` of a day number since the epoch.
fn day(number: i64) -> String {
    day_of(number * DAY_MS)
}

/// The commissions the figures count, `c`: every one not rejected, but those of test
/// sales. A `FROM` clause with its `WHERE`.
const COUNTED_COMMISSIONS: &str = "FROM commissions c \
    LEFT JOIN affiliate_sale_events s ON s.id = c.sale_id \
    WHERE NOT COALESCE(s.is_test, FALSE) AND c.status <> 'rejected'";

/// The day a commission `c` counts on: its sale's, else its creation's (a lead or a
/// bonus).
const COMMISSION_DATE: &str = "COALESCE(s.sale_date, c.created_at)";

/// The real attributed leads `l (program_id, at, partner_id)`, each with the partner its
/// customer had then: the one of the customer's latest click before it (a later click
/// may have moved the customer since), or, when none is earlier by the clock, of the
/// click that created the customer.
const ATTRIBUTED_LEADS: &str = "( \
    SELECT e.program_id, e.lead_timestamp AS at, COALESCE( \
      (SELECT ce.partner_id FROM affiliate_click_events ce \
       WHERE ce.customer_id = e.customer_id AND NOT ce.is_test \
       AND ce.click_timestamp < e.lead_timestamp \
       ORDER BY ce.click_timestamp DESC, ce.id DESC LIMIT 1), \
      (SELECT ce.partner_id FROM affiliate_click_events ce \
       WHERE ce.customer_id = e.customer_id AND NOT ce.is_test \
       ORDER BY ce.id LIMIT 1)) AS partner_id \
    FROM affiliate_lead_events e \
    WHERE NOT e.is_test AND e.customer_id IS NOT NULL) l";

/// Reads everything `reftrack verify` compares, in one snapshot.
pub(super) async fn integrity<DB: Engine>(pool: &Pool<DB>) -> StoreResult<Integrity> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_with(DB::BEGIN_SNAPSHOT).await?;
    let stored = stored::<DB>(&mut tx).await?;
    let recomputed = recompute::<DB>(&mut tx, &stored).await?;
    let violations = violations::<DB>(&mut tx).await?;
    let counts = counts::<DB>(&mut tx).await?;
    tx.rollback().await?;
    Ok(Integrity {
        stored,
        recomputed,
        violations,
        counts,
    })
}

/// The figures as the counter and rollup tables hold them.
async fn stored<DB: Engine>(conn: &mut DB::Connection) -> StoreResult<Figures> {
    let mut f = Figures::default();
    let rows = stmt::<DB>(
        "SELECT program_id, day, clicks, leads, conversions, revenue_cents, sales, \
         commission_cents, partners, lead_events, sale_events FROM daily_rollups",
    )
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        let d = f.rollup(r.try_get_at(0)?, r.try_get_at(1)?);
        d.clicks = r.try_get_at(2)?;
        d.leads = r.try_get_at(3)?;
        d.conversions = r.try_get_at(4)?;
        d.revenue_cents = r.try_get_at(5)?;
        d.sales = r.try_get_at(6)?;
        d.commission_cents = r.try_get_at(7)?;
        d.partners = r.try_get_at(8)?;
        d.lead_events = r.try_get_at(9)?;
        d.sale_events = r.try_get_at(10)?;
    }
    let rows = stmt::<DB>(
        "SELECT partner_id, program_id, total_clicks, total_leads, total_sales, \
         total_revenue_cents, total_commission_cents FROM partner_programs",
    )
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        let p = f.partner(r.try_get_at(0)?, r.try_get_at(1)?);
        p.clicks = r.try_get_at(2)?;
        p.leads = r.try_get_at(3)?;
        p.sales = r.try_get_at(4)?;
        p.revenue_cents = r.try_get_at(5)?;
        p.commission_cents = r.try_get_at(6)?;
    }
    let rows = stmt::<DB>(
        "SELECT program_id, partner_id, day, clicks, leads, conversions, revenue_cents, \
         sales, commission_cents FROM partner_daily_rollups",
    )
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        let d = f.partner_day(r.try_get_at(0)?, r.try_get_at(1)?, r.try_get_at(2)?);
        d.clicks = r.try_get_at(3)?;
        d.leads = r.try_get_at(4)?;
        d.conversions = r.try_get_at(5)?;
        d.revenue_cents = r.try_get_at(6)?;
        d.sales = r.try_get_at(7)?;
        d.commission_cents = r.try_get_at(8)?;
    }
    let sql = "SELECT id, clicks, last_clicked FROM referral_links";
    links::<DB>(conn, sql, &mut f).await?;
    Ok(f)
}

/// The figures from the raw tables. Money counts in the program's currency: a sale's
/// revenue is [`SALE_NET_REVENUE`], as the write path counts it; refunds and reversals
/// count on the sale's own day.
async fn recompute<DB: Engine>(
    conn: &mut DB::Connection,
    stored: &Figures,
) -> StoreResult<Figures> {
    let mut f = Figures::default();

    let rows = stmt::<DB>(&format!(
        "SELECT program_id, click_timestamp / {DAY_MS}, COUNT(*) FROM affiliate_click_events \
         WHERE NOT is_test GROUP BY 1, 2",
    ))
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        f.rollup(r.try_get_at(0)?, day(r.try_get_at(1)?)).clicks += r.try_get_at::<i64>(2)?;
    }

    // A lead counts as attributed (`leads`) when it found its customer.
    let rows = stmt::<DB>(&format!(
        "SELECT program_id, lead_timestamp / {DAY_MS}, \
         CAST(SUM(CASE WHEN customer_id IS NULL THEN 0 ELSE 1 END) AS BIGINT), COUNT(*) \
         FROM affiliate_lead_events WHERE NOT is_test GROUP BY 1, 2",
    ))
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        let d = f.rollup(r.try_get_at(0)?, day(r.try_get_at(1)?));
        d.leads += r.try_get_at::<i64>(2)?;
        d.lead_events += r.try_get_at::<i64>(3)?;
    }

    // A fully refunded sale no longer counts in `sales`; its event still does.
    let rows = stmt::<DB>(&format!(
        "SELECT program_id, sale_date / {DAY_MS}, COUNT(*), \
         CAST(SUM(CASE WHEN payment_status = 'refunded' THEN 0 ELSE 1 END) AS BIGINT), \
         CAST(SUM({SALE_NET_REVENUE}) AS BIGINT) \
         FROM affiliate_sale_events s WHERE NOT is_test GROUP BY 1, 2",
    ))
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        let d = f.rollup(r.try_get_at(0)?, day(r.try_get_at(1)?));
        d.sale_events += r.try_get_at::<i64>(2)?;
        d.sales += r.try_get_at::<i64>(3)?;
        d.revenue_cents += r.try_get_at::<i64>(4)?;
    }

    let rows = stmt::<DB>(&format!(
        "SELECT c.program_id, {COMMISSION_DATE} / {DAY_MS}, \
         CAST(SUM(c.amount_cents - c.reversed_cents) AS BIGINT) {COUNTED_COMMISSIONS} \
         GROUP BY 1, 2",
    ))
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        f.rollup(r.try_get_at(0)?, day(r.try_get_at(1)?))
            .commission_cents += r.try_get_at::<i64>(2)?;
    }

    // A conversion is a customer's first purchase.
    let rows = stmt::<DB>(&format!(
        "SELECT program_id, first_purchase_date / {DAY_MS}, COUNT(*) FROM customers \
         WHERE first_purchase_date IS NOT NULL GROUP BY 1, 2",
    ))
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        f.rollup(r.try_get_at(0)?, day(r.try_get_at(1)?))
            .conversions += r.try_get_at::<i64>(2)?;
    }

    let rows = stmt::<DB>(&format!(
        "SELECT program_id, created_at / {DAY_MS}, COUNT(*) FROM partner_programs GROUP BY 1, 2",
    ))
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        f.rollup(r.try_get_at(0)?, day(r.try_get_at(1)?)).partners += r.try_get_at::<i64>(2)?;
    }

    // Partner-program totals exist only for records; clicks and leads count from the
    // record's creation (a link may be made before its partner joins the program).
    for key in stored.partners.keys() {
        f.partners.insert(*key, Default::default());
    }
    let rows = stmt::<DB>(
        "SELECT pp.partner_id, pp.program_id, COUNT(*) FROM partner_programs pp \
         JOIN affiliate_click_events e ON e.partner_id = pp.partner_id \
         AND e.program_id = pp.program_id AND NOT e.is_test AND e.click_timestamp >= pp.created_at \
         GROUP BY 1, 2",
    )
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        f.partner(r.try_get_at(0)?, r.try_get_at(1)?).clicks += r.try_get_at::<i64>(2)?;
    }
    let sql = format!(
        "SELECT pp.partner_id, pp.program_id, COUNT(*) FROM {ATTRIBUTED_LEADS} \
         JOIN partner_programs pp ON pp.partner_id = l.partner_id \
         AND pp.program_id = l.program_id AND l.at >= pp.created_at \
         GROUP BY 1, 2",
    );
    let rows = stmt::<DB>(&sql).fetch_all(&mut *conn).await?;
    for r in rows {
        f.partner(r.try_get_at(0)?, r.try_get_at(1)?).leads += r.try_get_at::<i64>(2)?;
    }
    let rows = stmt::<DB>(&format!(
        "SELECT partner_id, program_id, \
             CAST(SUM(CASE WHEN payment_status = 'refunded' THEN 0 ELSE 1 END) AS BIGINT), \
             CAST(SUM({SALE_NET_REVENUE}) AS BIGINT) \
             FROM affiliate_sale_events s WHERE NOT is_test AND partner_id IS NOT NULL \
             GROUP BY 1, 2",
    ))
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        let key: (i64, i64) = (r.try_get_at(0)?, r.try_get_at(1)?);
        if let Some(p) = f.partners.get_mut(&key) {
            p.sales += r.try_get_at::<i64>(2)?;
            p.revenue_cents += r.try_get_at::<i64>(3)?;
        }
    }
    let rows = stmt::<DB>(&format!(
        "SELECT c.partner_id, c.program_id, \
         CAST(SUM(c.amount_cents - c.reversed_cents) AS BIGINT) {COUNTED_COMMISSIONS} \
         GROUP BY 1, 2",
    ))
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        let key: (i64, i64) = (r.try_get_at(0)?, r.try_get_at(1)?);
        if let Some(p) = f.partners.get_mut(&key) {
            p.commission_cents += r.try_get_at::<i64>(2)?;
        }
    }

    recompute_partner_days::<DB>(conn, &mut f).await?;

    let sql = "SELECT l.id, COUNT(e.id), MAX(e.click_timestamp) FROM referral_links l \
        LEFT JOIN affiliate_click_events e ON e.link_id = l.id AND NOT e.is_test \
        GROUP BY l.id";
    links::<DB>(conn, sql, &mut f).await?;
    Ok(f)
}

/// Reads the links' figures from the rows of `sql`: per link its id, its clicks and
/// its last click (NULL: none).
async fn links<DB: Engine>(
    conn: &mut DB::Connection,
    sql: &str,
    f: &mut Figures,
) -> StoreResult<()> {
    for r in stmt::<DB>(sql).fetch_all(&mut *conn).await? {
        let l = f.links.entry(r.try_get_at(0)?).or_default();
        l.clicks = r.try_get_at(1)?;
        l.last_clicked = r.try_get_at::<Option<i64>>(2)?.unwrap_or(0);
    }
    Ok(())
}

/// The partners' daily figures from the raw events: what each partner's own links
/// brought, by the rules of the write path (a lead counts for the partner its customer
/// had then, a conversion for the partner of the customer's first sale, refunds and
/// reversals on the sale's day).
async fn recompute_partner_days<DB: Engine>(
    conn: &mut DB::Connection,
    f: &mut Figures,
) -> StoreResult<()> {
    let rows = stmt::<DB>(&format!(
        "SELECT program_id, partner_id, click_timestamp / {DAY_MS}, COUNT(*) \
         FROM affiliate_click_events WHERE NOT is_test AND partner_id IS NOT NULL \
         GROUP BY 1, 2, 3",
    ))
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        f.partner_day(r.try_get_at(0)?, r.try_get_at(1)?, day(r.try_get_at(2)?))
            .clicks += r.try_get_at::<i64>(3)?;
    }
    let sql = format!(
        "SELECT program_id, partner_id, at / {DAY_MS}, COUNT(*) FROM {ATTRIBUTED_LEADS} \
         WHERE partner_id IS NOT NULL GROUP BY 1, 2, 3"
    );
    let rows = stmt::<DB>(&sql).fetch_all(&mut *conn).await?;
    for r in rows {
        f.partner_day(r.try_get_at(0)?, r.try_get_at(1)?, day(r.try_get_at(2)?))
            .leads += r.try_get_at::<i64>(3)?;
    }
    let rows = stmt::<DB>(&format!(
        "SELECT program_id, partner_id, sale_date / {DAY_MS}, \
         CAST(SUM(CASE WHEN payment_status = 'refunded' THEN 0 ELSE 1 END) AS BIGINT), \
         CAST(SUM({SALE_NET_REVENUE}) AS BIGINT) \
         FROM affiliate_sale_events s WHERE NOT is_test AND partner_id IS NOT NULL \
         GROUP BY 1, 2, 3",
    ))
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        let d = f.partner_day(r.try_get_at(0)?, r.try_get_at(1)?, day(r.try_get_at(2)?));
        d.sales += r.try_get_at::<i64>(3)?;
        d.revenue_cents += r.try_get_at::<i64>(4)?;
    }
    let rows = stmt::<DB>(&format!(
        "SELECT c.program_id, c.partner_id, {COMMISSION_DATE} / {DAY_MS}, \
         CAST(SUM(c.amount_cents - c.reversed_cents) AS BIGINT) {COUNTED_COMMISSIONS} \
         GROUP BY 1, 2, 3",
    ))
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        f.partner_day(r.try_get_at(0)?, r.try_get_at(1)?, day(r.try_get_at(2)?))
            .commission_cents += r.try_get_at::<i64>(3)?;
    }
    let rows = stmt::<DB>(&format!(
        "SELECT s.program_id, s.partner_id, s.sale_date / {DAY_MS}, COUNT(*) \
         FROM affiliate_sale_events s \
         JOIN (SELECT MIN(id) AS id FROM affiliate_sale_events \
               WHERE NOT is_test AND customer_id IS NOT NULL GROUP BY customer_id) first \
         ON first.id = s.id WHERE s.partner_id IS NOT NULL GROUP BY 1, 2, 3",
    ))
    .fetch_all(&mut *conn)
    .await?;
    for r in rows {
        f.partner_day(r.try_get_at(0)?, r.try_get_at(1)?, day(r.try_get_at(2)?))
            .conversions += r.try_get_at::<i64>(3)?;
    }
    Ok(())
}

/// Invariants across records: (name, what the id column is, what the key column is,
/// query returning at most 100 offending `(id, key)` rows).
const INVARIANTS: [(&str, &str, &str, &str); 11] = [
    (
        // A sale earns unless it says why not (its partner was not approved, or a
        // renewal past the recurring limit).
        "sale_without_commission",
        "sale_id",
        "transaction_id",
        "SELECT s.id, s.processor_event_id FROM affiliate_sale_events s \
         LEFT JOIN commissions c ON c.sale_id = s.id AND c.kind = 'sale' \
         WHERE NOT s.is_test AND s.payment_status IN ('paid', 'refunded') \
         AND s.unearned IS NULL AND c.id IS NULL ORDER BY s.id LIMIT 100",
    ),
    (
        "unearned_sale_with_commission",
        "sale_id",
        "transaction_id",
        "SELECT s.id, s.processor_event_id FROM affiliate_sale_events s \
         JOIN commissions c ON c.sale_id = s.id AND c.kind = 'sale' \
         WHERE s.unearned IS NOT NULL ORDER BY s.id LIMIT 100",
    ),
    (
        "test_sale_with_commission",
        "sale_id",
        "transaction_id",
        "SELECT s.id, s.processor_event_id FROM affiliate_sale_events s \
         JOIN commissions c ON c.sale_id = s.id WHERE s.is_test ORDER BY s.id LIMIT 100",
    ),
    (
        "commission_reversed_beyond_amount",
        "commission_id",
        "transaction_id",
        "SELECT c.id, s.processor_event_id FROM commissions c \
         JOIN affiliate_sale_events s ON s.id = c.sale_id \
         WHERE c.kind = 'sale' AND (c.reversed_cents > c.amount_cents OR c.reversed_cents < 0) \
         ORDER BY c.id LIMIT 100",
    ),
    (
        "sale_refunded_beyond_amount",
        "sale_id",
        "transaction_id",
        "SELECT id, processor_event_id FROM affiliate_sale_events \
         WHERE refunded_cents > amount_cents OR refunded_cents < 0 ORDER BY id LIMIT 100",
    ),
    (
        "sale_refund_status_mismatch",
        "sale_id",
        "transaction_id",
        "SELECT id, processor_event_id FROM affiliate_sale_events \
         WHERE (payment_status = 'refunded' AND refunded_cents <> amount_cents) \
         OR (payment_status <> 'refunded' AND refunded_cents >= amount_cents) \
         ORDER BY id LIMIT 100",
    ),
    (
        "refunded_sale_commission_not_reversed",
        "commission_id",
        "transaction_id",
        "SELECT c.id, s.processor_event_id FROM commissions c \
         JOIN affiliate_sale_events s ON s.id = c.sale_id \
         WHERE c.kind = 'sale' AND s.payment_status = 'refunded' \
         AND c.reversed_cents + COALESCE((SELECT -SUM(k.amount_cents) FROM commissions k \
           WHERE k.original_commission_id = c.id), 0) <> c.amount_cents \
         ORDER BY c.id LIMIT 100",
    ),
    (
        "duplicate_transaction_id",
        "count",
        "transaction_id",
        "SELECT COUNT(*), processor_event_id FROM affiliate_sale_events \
         GROUP BY processor_event_id HAVING COUNT(*) > 1 ORDER BY 2 LIMIT 100",
    ),
    (
        "commission_sale_mismatch",
        "commission_id",
        "transaction_id",
        "SELECT c.id, s.processor_event_id FROM commissions c \
         JOIN affiliate_sale_events s ON s.id = c.sale_id \
         WHERE c.program_id <> s.program_id OR s.partner_id IS NULL OR c.partner_id <> s.partner_id \
         ORDER BY c.id LIMIT 100",
    ),
    (
        // Foreign keys keep these on SQLite; checked all the same, for a file some
        // connection wrote with `foreign_keys` off.
        "customer_reference_missing",
        "customer_id",
        "click_id",
        "SELECT c.id, c.click_id FROM customers c \
         WHERE NOT EXISTS (SELECT 1 FROM programs p WHERE p.id = c.program_id) \
         OR (c.partner_id IS NOT NULL \
             AND NOT EXISTS (SELECT 1 FROM partners pa WHERE pa.id = c.partner_id)) \
         OR (c.link_id IS NOT NULL \
             AND NOT EXISTS (SELECT 1 FROM referral_links l WHERE l.id = c.link_id)) \
         ORDER BY c.id LIMIT 100",
    ),
    (
        "click_reference_missing",
        "click_event_id",
        "click_id",
        "SELECT e.id, COALESCE(e.click_id, '') FROM affiliate_click_events e \
         WHERE NOT EXISTS (SELECT 1 FROM programs p WHERE p.id = e.program_id) \
         OR (e.customer_id IS NOT NULL \
             AND NOT EXISTS (SELECT 1 FROM customers c WHERE c.id = e.customer_id)) \
         OR (e.partner_id IS NOT NULL \
             AND NOT EXISTS (SELECT 1 FROM partners pa WHERE pa.id = e.partner_id)) \
         OR (e.link_id IS NOT NULL \
             AND NOT EXISTS (SELECT 1 FROM referral_links l WHERE l.id = e.link_id)) \
         ORDER BY e.id LIMIT 100",
    ),
];

/// The records breaking each of [`INVARIANTS`], at most 100 per invariant.
async fn violations<DB: Engine>(conn: &mut DB::Connection) -> StoreResult<Vec<Violation>> {
    let mut found = Vec::new();
    for (check, id_label, key_label, sql) in INVARIANTS {
        for r in stmt::<DB>(sql).fetch_all(&mut *conn).await? {
            found.push(Violation {
                check,
                id_label,
                id: r.try_get_at(0)?,
                key_label,
                key: r.try_get_at(1)?,
            });
        }
    }
    Ok(found)
}

/// How many raw records the check read.
async fn counts<DB: Engine>(conn: &mut DB::Connection) -> StoreResult<RawCounts> {
    Ok(stmt::<DB>(
        "SELECT \
         (SELECT COUNT(*) FROM affiliate_click_events WHERE NOT is_test) AS clicks, \
         (SELECT COUNT(*) FROM affiliate_lead_events WHERE NOT is_test) AS leads, \
         (SELECT COUNT(*) FROM affiliate_sale_events WHERE NOT is_test) AS sales, \
         (SELECT COUNT(*) FROM commissions) AS commissions, \
         (SELECT COUNT(*) FROM affiliate_sale_events WHERE NOT is_test AND refunded_cents > 0) \
         AS refunded_sales",
    )
    .record(&mut *conn)
    .await?)
}
