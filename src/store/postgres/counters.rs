//! A batch's folded counter and rollup increments ([`Deltas`]), added in one round trip:
//! each kind of counter row (links, partner-program records, program days) is updated from
//! a `VALUES` list of bound parameters, every update a CTE of one statement.

use sqlx::PgConnection;

use super::rows::{values, Query};
use crate::domain::figures::{Deltas, LinkDelta, PartnerDelta, RollupDelta};

/// Most rows of one kind that one statement updates; more take another statement.
const ROWS: usize = 128;

/// The columns of a link's increment.
const LINK_COLUMNS: usize = 3;
/// The columns of a partner-program record's increment.
const PARTNER_COLUMNS: usize = 7;
/// The columns of a program day's increment.
const ROLLUP_COLUMNS: usize = 11;

/// One statement's share of a batch's increments: the `i`-th [`ROWS`] rows of each kind.
pub struct Part<'a> {
    deltas: &'a Deltas,
    i: usize,
}

/// The statements that add `deltas`: one for up to [`ROWS`] rows of each kind.
pub fn parts(deltas: &Deltas) -> impl Iterator<Item = Part<'_>> {
    let most = deltas
        .links
        .len()
        .max(deltas.partners.len())
        .max(deltas.rollups.len());
    (0..most.div_ceil(ROWS)).map(move |i| Part { deltas, i })
}

/// Adds a batch's increments to links, partner-program records and daily rollups, in the
/// transaction open on `conn`.
pub async fn apply(conn: &mut PgConnection, deltas: &Deltas) -> sqlx::Result<()> {
    for part in parts(deltas) {
        let sql = format!("WITH {} SELECT 1", part.sql(1));
        part.bind(sqlx::query(&sql)).execute(&mut *conn).await?;
    }
    Ok(())
}

impl<'a> Part<'a> {
    fn links(&self) -> impl Iterator<Item = (&'a i64, &'a LinkDelta)> {
        self.deltas.links.iter().skip(self.i * ROWS).take(ROWS)
    }

    fn partners(&self) -> impl Iterator<Item = (&'a (i64, i64), &'a PartnerDelta)> {
        self.deltas.partners.iter().skip(self.i * ROWS).take(ROWS)
    }

    fn rollups(&self) -> impl Iterator<Item = (&'a (i64, String), &'a RollupDelta)> {
        self.deltas.rollups.iter().skip(self.i * ROWS).take(ROWS)
    }

    /// The updates of this part as CTEs separated by `,` (for a `WITH`), their
    /// parameters numbered from `first`.
    pub fn sql(&self, first: usize) -> String {
        let mut next = first;
        let mut parts = Vec::new();
        let links = self.links().count();
        if links > 0 {
            parts.push(format!(
                "link_rows (id, clicks, last_clicked) AS (VALUES {}), \
                 link_update AS (UPDATE referral_links SET clicks = referral_links.clicks + d.clicks, \
                 last_clicked = CASE WHEN referral_links.last_clicked IS NULL \
                 OR referral_links.last_clicked < d.last_clicked \
                 THEN d.last_clicked ELSE referral_links.last_clicked END \
                 FROM link_rows d WHERE referral_links.id = d.id)",
                values(links, LINK_COLUMNS, &mut next)
            ));
        }
        let partners = self.partners().count();
        if partners > 0 {
            parts.push(format!(
                "partner_rows (partner_id, program_id, clicks, leads, sales, \
                 revenue_cents, commission_cents) AS (VALUES {}), \
                 partner_update AS (UPDATE partner_programs \
                 SET total_clicks = partner_programs.total_clicks + d.clicks, \
                 total_leads = partner_programs.total_leads + d.leads, \
                 total_sales = partner_programs.total_sales + d.sales, \
                 total_revenue_cents = partner_programs.total_revenue_cents + d.revenue_cents, \
                 total_commission_cents = \
                 partner_programs.total_commission_cents + d.commission_cents \
                 FROM partner_rows d \
                 WHERE partner_programs.partner_id = d.partner_id \
                 AND partner_programs.program_id = d.program_id)",
                values(partners, PARTNER_COLUMNS, &mut next)
            ));
        }
        let rollups = self.rollups().count();
        if rollups > 0 {
            parts.push(format!(
                "rollup_rows (program_id, day, clicks, leads, conversions, revenue_cents, \
                 sales, commission_cents, partners, lead_events, sale_events) AS (VALUES {}), \
                 rollup_upsert AS (INSERT INTO daily_rollups (program_id, day, clicks, leads, \
                 conversions, revenue_cents, sales, commission_cents, partners, lead_events, \
                 sale_events) SELECT * FROM rollup_rows \
                 ON CONFLICT (program_id, day) DO UPDATE SET \
                 clicks = daily_rollups.clicks + excluded.clicks, \
                 leads = daily_rollups.leads + excluded.leads, \
                 conversions = daily_rollups.conversions + excluded.conversions, \
                 revenue_cents = daily_rollups.revenue_cents + excluded.revenue_cents, \
                 sales = daily_rollups.sales + excluded.sales, \
                 commission_cents = daily_rollups.commission_cents + excluded.commission_cents, \
                 partners = daily_rollups.partners + excluded.partners, \
                 lead_events = daily_rollups.lead_events + excluded.lead_events, \
                 sale_events = daily_rollups.sale_events + excluded.sale_events)",
                values(rollups, ROLLUP_COLUMNS, &mut next)
            ));
        }
        parts.join(", ")
    }

    /// Binds this part's rows, in the order of [`Part::sql`].
    pub fn bind<'q>(&self, mut query: Query<'q>) -> Query<'q>
    where
        'a: 'q,
    {
        for (id, d) in self.links() {
            query = query.bind(*id).bind(d.clicks).bind(d.last_clicked);
        }
        for ((partner_id, program_id), d) in self.partners() {
            query = query
                .bind(*partner_id)
                .bind(*program_id)
                .bind(d.clicks)
                .bind(d.leads)
                .bind(d.sales)
                .bind(d.revenue_cents)
                .bind(d.commission_cents);
        }
        for ((program_id, day), d) in self.rollups() {
            query = query
                .bind(*program_id)
                .bind(day.as_str())
                .bind(d.clicks)
                .bind(d.leads)
                .bind(d.conversions)
                .bind(d.revenue_cents)
                .bind(d.sales)
                .bind(d.commission_cents)
                .bind(d.partners)
                .bind(d.lead_events)
                .bind(d.sale_events);
        }
        query
    }
}
