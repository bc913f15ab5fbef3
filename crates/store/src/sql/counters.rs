//! A batch's folded counter and rollup increments ([`Deltas`]) as statements: each kind
//! of counter row (links, partner-program records, program days, partner days) is updated from a
//! `VALUES` list of bound parameters. The statements are the same on both databases; how
//! a part's updates become one query is the engine's (see [`Engine::counter_query`]).

use super::engine::{Engine, Param, Query};
use reftrack_domain::figures::{Deltas, LinkDelta, PartnerDayDelta, PartnerDelta, RollupDelta};

/// Most rows of one kind that one query updates; more take another query.
const ROWS: usize = 128;

/// The columns of a link's increment.
const LINK_COLUMNS: usize = 3;
/// The columns of a partner-program record's increment.
const PARTNER_COLUMNS: usize = 7;
/// The columns of a program day's increment.
const ROLLUP_COLUMNS: usize = 11;
/// The columns of a partner day's increment.
const PARTNER_DAY_COLUMNS: usize = 9;

/// Adds the link increments of `link_rows`.
const LINK_UPDATE: &str = "UPDATE referral_links SET clicks = referral_links.clicks + d.clicks, \
     last_clicked = CASE WHEN referral_links.last_clicked IS NULL \
     OR referral_links.last_clicked < d.last_clicked \
     THEN d.last_clicked ELSE referral_links.last_clicked END \
     FROM link_rows d WHERE referral_links.id = d.id";

/// Adds the partner-program increments of `partner_rows`.
const PARTNER_UPDATE: &str = "UPDATE partner_programs \
     SET total_clicks = partner_programs.total_clicks + d.clicks, \
     total_leads = partner_programs.total_leads + d.leads, \
     total_sales = partner_programs.total_sales + d.sales, \
     total_revenue_cents = partner_programs.total_revenue_cents + d.revenue_cents, \
     total_commission_cents = partner_programs.total_commission_cents + d.commission_cents \
     FROM partner_rows d \
     WHERE partner_programs.partner_id = d.partner_id \
     AND partner_programs.program_id = d.program_id";

/// Adds the program-day increments of `rollup_rows`, creating missing days. `WHERE true`:
/// SQLite reads `ON` after a bare `FROM d` as a join constraint.
const ROLLUP_UPSERT: &str = "INSERT INTO daily_rollups (program_id, day, clicks, leads, \
     conversions, revenue_cents, sales, commission_cents, partners, lead_events, \
     sale_events) SELECT * FROM rollup_rows WHERE true \
     ON CONFLICT (program_id, day) DO UPDATE SET \
     clicks = daily_rollups.clicks + excluded.clicks, \
     leads = daily_rollups.leads + excluded.leads, \
     conversions = daily_rollups.conversions + excluded.conversions, \
     revenue_cents = daily_rollups.revenue_cents + excluded.revenue_cents, \
     sales = daily_rollups.sales + excluded.sales, \
     commission_cents = daily_rollups.commission_cents + excluded.commission_cents, \
     partners = daily_rollups.partners + excluded.partners, \
     lead_events = daily_rollups.lead_events + excluded.lead_events, \
     sale_events = daily_rollups.sale_events + excluded.sale_events";

/// Adds the partner-day increments of `partner_day_rows`, creating missing days.
const PARTNER_DAY_UPSERT: &str = "INSERT INTO partner_daily_rollups (program_id, partner_id, \
     day, clicks, leads, conversions, revenue_cents, sales, commission_cents) \
     SELECT * FROM partner_day_rows WHERE true \
     ON CONFLICT (program_id, partner_id, day) DO UPDATE SET \
     clicks = partner_daily_rollups.clicks + excluded.clicks, \
     leads = partner_daily_rollups.leads + excluded.leads, \
     conversions = partner_daily_rollups.conversions + excluded.conversions, \
     revenue_cents = partner_daily_rollups.revenue_cents + excluded.revenue_cents, \
     sales = partner_daily_rollups.sales + excluded.sales, \
     commission_cents = partner_daily_rollups.commission_cents + excluded.commission_cents";

/// One update of a part: the rows it reads (a `name (columns) AS (VALUES …)` CTE) and
/// the statement that reads them.
pub struct Update {
    /// `link_rows (id, clicks, last_clicked) AS (VALUES …)`.
    pub rows: String,
    /// The statement reading those rows.
    pub statement: &'static str,
}

/// One query's share of a batch's increments: the `i`-th [`ROWS`] rows of each kind.
pub struct Part<'a> {
    deltas: &'a Deltas,
    i: usize,
}

/// The queries that add `deltas`: one for up to [`ROWS`] rows of each kind.
pub fn parts(deltas: &Deltas) -> impl Iterator<Item = Part<'_>> {
    let most = deltas
        .links
        .len()
        .max(deltas.partners.len())
        .max(deltas.rollups.len())
        .max(deltas.partner_days.len());
    (0..most.div_ceil(ROWS)).map(move |i| Part { deltas, i })
}

/// Adds a batch's increments to links, partner-program records and the daily rollups of
/// programs and partners, in the transaction open on `conn`.
pub async fn apply<DB: Engine>(conn: &mut DB::Connection, deltas: &Deltas) -> sqlx::Result<()> {
    for part in parts(deltas) {
        let sql = DB::counter_query(&part.updates::<DB>(1));
        let query = part.bind::<DB>(sqlx::query(&sql));
        DB::execute(query, conn).await?;
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

    fn partner_days(&self) -> impl Iterator<Item = (&'a (i64, i64, String), &'a PartnerDayDelta)> {
        self.deltas
            .partner_days
            .iter()
            .skip(self.i * ROWS)
            .take(ROWS)
    }

    /// The updates of this part, their parameters numbered from `first` (on an engine
    /// that numbers them).
    pub fn updates<DB: Engine>(&self, first: usize) -> Vec<Update> {
        let mut next = first;
        let mut updates = Vec::new();
        let mut add = |rows: usize, head: &str, width: usize, statement: &'static str| {
            if rows > 0 {
                let values = DB::values(rows, width, next);
                next += rows * width;
                updates.push(Update {
                    rows: format!("{head} AS (VALUES {values})"),
                    statement,
                });
            }
        };
        add(
            self.links().count(),
            "link_rows (id, clicks, last_clicked)",
            LINK_COLUMNS,
            LINK_UPDATE,
        );
        add(
            self.partners().count(),
            "partner_rows (partner_id, program_id, clicks, leads, sales, revenue_cents, \
             commission_cents)",
            PARTNER_COLUMNS,
            PARTNER_UPDATE,
        );
        add(
            self.rollups().count(),
            "rollup_rows (program_id, day, clicks, leads, conversions, revenue_cents, sales, \
             commission_cents, partners, lead_events, sale_events)",
            ROLLUP_COLUMNS,
            ROLLUP_UPSERT,
        );
        add(
            self.partner_days().count(),
            "partner_day_rows (program_id, partner_id, day, clicks, leads, conversions, \
             revenue_cents, sales, commission_cents)",
            PARTNER_DAY_COLUMNS,
            PARTNER_DAY_UPSERT,
        );
        updates
    }

    /// Binds this part's rows, in the order of [`Part::updates`].
    pub fn bind<'q, DB: Engine>(&self, mut query: Query<'q, DB>) -> Query<'q, DB>
    where
        'a: 'q,
    {
        for (id, d) in self.links() {
            query = bind(query, &[*id, d.clicks, d.last_clicked]);
        }
        for ((partner_id, program_id), d) in self.partners() {
            query = bind(query, &[*partner_id, *program_id]);
            query = bind(query, &d.values());
        }
        for ((program_id, day), d) in self.rollups() {
            query = bind(query, &[*program_id]);
            query = <DB as Param<'q, &'q str>>::bind(query, day.as_str());
            query = bind(query, &d.values());
        }
        for ((program_id, partner_id, day), d) in self.partner_days() {
            query = bind(query, &[*program_id, *partner_id]);
            query = <DB as Param<'q, &'q str>>::bind(query, day.as_str());
            query = bind(query, &d.values());
        }
        query
    }
}

/// `query` with `values` bound in order.
fn bind<'q, DB: Engine>(query: Query<'q, DB>, values: &[i64]) -> Query<'q, DB> {
    values
        .iter()
        .fold(query, |q, v| <DB as Param<'q, i64>>::bind(q, *v))
}
