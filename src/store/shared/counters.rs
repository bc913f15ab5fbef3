// A batch's folded counter and rollup increments (`Deltas`), added in one round trip:
// each kind of counter row (links, partner-program records, program days) is updated from
// a `VALUES` list of bound parameters. On SQLite that is up to three statements of one
// query, on PostgreSQL one statement whose updates are CTEs. Included by `sqlite.rs` and
// `postgres.rs` inside `mod counters`.

/// Most rows of one kind that one query updates; more take another query.
const ROWS: usize = 128;

/// The columns of a link's increment.
const LINK_COLUMNS: usize = 3;
/// The columns of a partner-program record's increment.
const PARTNER_COLUMNS: usize = 7;
/// The columns of a program day's increment.
const ROLLUP_COLUMNS: usize = 11;

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
        .max(deltas.rollups.len());
    (0..most.div_ceil(ROWS)).map(move |i| Part { deltas, i })
}

/// Adds a batch's increments to links, partner-program records and daily rollups, in the
/// transaction open on `conn`.
pub async fn apply(conn: &mut Conn, deltas: &Deltas) -> sqlx::Result<()> {
    for part in parts(deltas) {
        let sql = match BACKEND {
            Backend::Sqlite => part.sql(1),
            Backend::Postgres => format!("WITH {} SELECT 1", part.sql(1)),
        };
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

    /// The updates of this part: on SQLite statements separated by `;`, on PostgreSQL
    /// CTEs separated by `,` (for a `WITH`), their parameters numbered from `first`.
    pub fn sql(&self, first: usize) -> String {
        let mut next = first;
        let mut parts = Vec::new();
        let links = self.links().count();
        if links > 0 {
            let values = values(links, LINK_COLUMNS, &mut next);
            parts.push(update(
                "link_rows (id, clicks, last_clicked)",
                &values,
                "referral_links SET clicks = referral_links.clicks + d.clicks, \
                 last_clicked = CASE WHEN referral_links.last_clicked IS NULL \
                 OR referral_links.last_clicked < d.last_clicked \
                 THEN d.last_clicked ELSE referral_links.last_clicked END \
                 FROM link_rows d WHERE referral_links.id = d.id",
            ));
        }
        let partners = self.partners().count();
        if partners > 0 {
            let values = values(partners, PARTNER_COLUMNS, &mut next);
            parts.push(update(
                "partner_rows (partner_id, program_id, clicks, leads, sales, revenue_cents, \
                 commission_cents)",
                &values,
                "partner_programs SET total_clicks = partner_programs.total_clicks + d.clicks, \
                 total_leads = partner_programs.total_leads + d.leads, \
                 total_sales = partner_programs.total_sales + d.sales, \
                 total_revenue_cents = partner_programs.total_revenue_cents + d.revenue_cents, \
                 total_commission_cents = \
                 partner_programs.total_commission_cents + d.commission_cents \
                 FROM partner_rows d \
                 WHERE partner_programs.partner_id = d.partner_id \
                 AND partner_programs.program_id = d.program_id",
            ));
        }
        let rollups = self.rollups().count();
        if rollups > 0 {
            let values = values(rollups, ROLLUP_COLUMNS, &mut next);
            let columns = "program_id, day, clicks, leads, conversions, revenue_cents, sales, \
                 commission_cents, partners, lead_events, sale_events";
            let add = |c: &str| format!("{c} = daily_rollups.{c} + excluded.{c}");
            let sums: Vec<String> = columns.split(", ").skip(2).map(add).collect();
            // `WHERE true`: SQLite reads `ON` after a bare `FROM d` as a join constraint.
            let insert = format!(
                "INSERT INTO daily_rollups ({columns}) SELECT * FROM rollup_rows WHERE true \
                 ON CONFLICT (program_id, day) DO UPDATE SET {}",
                sums.join(", ")
            );
            parts.push(match BACKEND {
                Backend::Sqlite => {
                    format!("WITH rollup_rows ({columns}) AS (VALUES {values}) {insert}")
                }
                Backend::Postgres => {
                    format!(
                        "rollup_rows ({columns}) AS (VALUES {values}), rollup_upsert AS ({insert})"
                    )
                }
            });
        }
        match BACKEND {
            Backend::Sqlite => parts.join("; "),
            Backend::Postgres => parts.join(", "),
        }
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

/// `UPDATE … FROM` rows `values` named `rows`: a statement on SQLite, a CTE on PostgreSQL.
fn update(rows: &str, values: &str, set: &str) -> String {
    let name = rows.split(' ').next().unwrap_or(rows);
    match BACKEND {
        Backend::Sqlite => format!("WITH {rows} AS (VALUES {values}) UPDATE {set}"),
        Backend::Postgres => {
            format!("{rows} AS (VALUES {values}), {name}_update AS (UPDATE {set})")
        }
    }
}
