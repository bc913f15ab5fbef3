//! The set-based statements of the group committer on SQLite: a batch's new clicks (their
//! customers and click events) and its plain sales (resolved, then recorded with their
//! commissions and conversions), up to [`MAX_SET_ROWS`] rows per query, each query's text
//! made once per row count; and the one-round-trip transactions of a batch of nothing but
//! new clicks or nothing but plain sales, from `BEGIN IMMEDIATE` to `COMMIT`.
//!
//! Each writes the same rows and counts the same figures as the flow of the service layer
//! would for each click or sale one by one.

use std::sync::OnceLock;

use async_trait::async_trait;
use sqlx::{Row, Sqlite, SqliteConnection};

use super::rows::{self, BindRows, Rows, Value};
use crate::committer::MAX_SET_ROWS;
use crate::error::{StoreError, StoreResult};
use crate::model::{NewClick, NewSale, SaleOutcome};
use crate::sql::batch::{
    self, new_click_rows, place, SalesStep, SetStatements, CLICK_COLUMNS, SALE_CUSTOMER_ID,
    SALE_EVENT_COLUMNS, SALE_KEY_COLUMNS,
};
use crate::sql::groups::RewardsCache;
use crate::sql::rules::{NO_DISPOSABLE_EMAIL, SQLITE_SALE_BATCH_COUNTERS};
use crate::sql::{counters, rules, Engine, APPROVED_PARTNER_RECORD, NO_SELF_REFERRAL};
use reftrack_domain::figures::Deltas;

use reftrack_domain::time::day_of;

/// How the batches that are transactions of their own begin.
const BEGIN_WRITE: &str = <Sqlite as Engine>::BEGIN_WRITE;

/// Of [`CLICK_COLUMNS`], those the customer's row needs.
const CUSTOMER_CLICK_COLUMNS: &[&str] = CLICK_COLUMNS.split_at(5).0;

/// The columns each statement of [`new_clicks_sql`] reads, in order (for [`BindRows::bind`]).
const NEW_CLICK_STATEMENTS: &[&[&str]] = &[CUSTOMER_CLICK_COLUMNS, CLICK_COLUMNS];

/// Inserts the customers of new clicks from `rows`.
const NEW_CUSTOMERS: &str = "INSERT INTO customers (program_id, click_id, customer_status, \
    partner_id, link_id, created_at, updated_at) \
    SELECT program_id, click_id, 'click', partner_id, link_id, at, at FROM rows";

/// Inserts the click events of new clicks from `rows`; each finds its customer, inserted
/// just before, by its click id.
const NEW_CLICK_EVENTS: &str = "INSERT INTO affiliate_click_events (program_id, customer_id, \
    link_id, partner_id, click_id, session_id, page_url, page_title, referrer_url, \
    screen_resolution, viewport_size, language, timezone, geo_country, geo_region, geo_city, \
    device_type, device_os, browser_name, ip, is_test, click_timestamp, created_at) \
    SELECT rows.program_id, (SELECT id FROM customers c WHERE c.click_id = rows.click_id), \
    rows.link_id, rows.partner_id, rows.click_id, session_id, page_url, page_title, \
    referrer_url, screen_resolution, viewport_size, language, timezone, geo_country, \
    geo_region, geo_city, device_type, device_os, browser_name, ip, FALSE, at, at FROM rows";

/// The query that inserts `n` new clicks (1 to [`MAX_SET_ROWS`]): their customers, then
/// their click events, two statements each with the rows' columns it needs.
fn new_clicks_sql(n: usize) -> &'static str {
    static SQL: OnceLock<Vec<String>> = OnceLock::new();
    rows::sized(&SQL, n, |n| {
        format!(
            "{} {NEW_CUSTOMERS}; {} {NEW_CLICK_EVENTS}",
            rows::cte(n, CUSTOMER_CLICK_COLUMNS),
            rows::cte(n, CLICK_COLUMNS)
        )
    })
}

/// Ends the transaction a one-query batch began and stopped in at its failing statement
/// (an error here means it never began).
async fn rollback(conn: &mut SqliteConnection) {
    let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
}

/// The query that resolves `n` plain sales (1 to [`MAX_SET_ROWS`]).
fn resolve_sales_sql(n: usize) -> &'static str {
    static SQL: OnceLock<Vec<String>> = OnceLock::new();
    rows::sized(&SQL, n, batch::resolve_sales_sql::<Sqlite>)
}

/// The columns each statement of [`record_sales`] reads.
const RECORD_SALES_COLUMNS: [&[&str]; 5] = [
    SALE_EVENT_COLUMNS,
    &[
        "transaction_id",
        "partner_program_id",
        "commission",
        "group_id",
        "description",
        "program_currency",
    ],
    &["partner_id", "customer_id", "at"],
    &["customer_id", "at"],
    &["idx", "transaction_id"],
];

/// The statements that record resolved plain sales read from `from` (a table whose rows
/// are named `rows`): the sale events, their commissions, the IPs of the customers who
/// convert ([`rules::conversion_ips`]), the customers' conversion, and per row its index,
/// sale id and commission id. The later ones find the new sales by transaction id.
fn record_sales(from: &str) -> [String; 5] {
    let (status, manual) = rules::new_plain_commission();
    [
        format!(
            "INSERT INTO affiliate_sale_events (program_id, customer_id, partner_id, click_id, \
             customer_key, processor_event_id, amount_cents, currency, sale_type, \
             payment_status, is_recurring, subscription_id, product_id, metadata, is_test, \
             sale_date, created_at, converted_amount_cents, exchange_rate, rate_date) \
             SELECT program_id, customer_id, partner_id, click_id, customer_key, \
             transaction_id, amount_cents, currency, sale_type, 'paid', FALSE, NULL, \
             product_id, metadata, FALSE, at, at, converted_amount_cents, exchange_rate, \
             rate_date FROM {from} ORDER BY idx"
        ),
        format!(
            "INSERT INTO commissions (program_id, sale_id, partner_id, partner_program_id, \
             amount_cents, currency, status, manual_approval, created_at, updated_at, \
             group_id, description) \
             SELECT s.program_id, s.id, s.partner_id, rows.partner_program_id, \
             rows.commission, rows.program_currency, {status}, {manual}, s.sale_date, \
             s.sale_date, rows.group_id, rows.description \
             FROM {from} JOIN affiliate_sale_events s \
             ON s.processor_event_id = rows.transaction_id"
        ),
        {
            let (insert, from_rows) = rules::conversion_ips::<Sqlite>();
            format!("{insert} FROM {from} {from_rows}")
        },
        format!(
            "UPDATE customers SET customer_status = 'conversion', \
             first_purchase_date = COALESCE(customers.first_purchase_date, rows.at), \
             updated_at = rows.at FROM {from} WHERE customers.id = rows.customer_id"
        ),
        format!(
            "SELECT rows.idx, s.id AS sale_id, c.id AS commission_id FROM {from} \
             JOIN affiliate_sale_events s ON s.processor_event_id = rows.transaction_id \
             LEFT JOIN commissions c ON c.sale_id = s.id AND c.kind = 'sale'"
        ),
    ]
}

/// The query that records `n` resolved plain sales (1 to [`MAX_SET_ROWS`]): the four
/// statements of [`record_sales`], each after a `rows` of the columns it reads.
fn record_sales_sql(n: usize) -> &'static str {
    static SQL: OnceLock<Vec<String>> = OnceLock::new();
    rows::sized(&SQL, n, |n| {
        record_sales("rows")
            .iter()
            .zip(RECORD_SALES_COLUMNS)
            .map(|(sql, columns)| format!("{} {sql}", rows::cte(n, columns)))
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// The columns of the sales [`commit_plain_sales`] takes: what [`SALE_COLUMNS`] holds
/// before the customer is known, with the figures its counters add (minor units of the
/// program's currency, the day).
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
    "revenue_figure",
    "commission_figure",
    "day",
    "check_duplicate_ip",
    "check_partner_ip",
    "check_fast_conversion",
    "group_id",
    "group_version",
    "description",
    "converted_amount_cents",
    "exchange_rate",
    "rate_date",
    "program_currency",
];

/// The sales of the batch [`commit_plain_sales`] records: a table of the write
/// connection's own (`TEMP`, in memory), filled and read within one transaction.
pub(crate) const SALE_BATCH_TABLE: &str =
    "CREATE TEMP TABLE IF NOT EXISTS sale_batch (idx INTEGER, \
    program_id INTEGER, customer_id INTEGER, partner_id INTEGER, partner_program_id INTEGER, \
    click_id TEXT, customer_key TEXT, transaction_id TEXT, amount_cents INTEGER, \
    currency TEXT, sale_type TEXT, product_id TEXT, metadata TEXT, at INTEGER, \
    commission INTEGER, revenue_figure INTEGER, commission_figure INTEGER, \
    day TEXT, converts INTEGER, group_id INTEGER, description TEXT, \
    converted_amount_cents INTEGER, exchange_rate TEXT, rate_date TEXT, program_currency TEXT)";

/// The statement of [`commit_plain_sales`] after its `rows` and `ranked`: the sales that
/// resolve plainly (an approved partner's, [`APPROVED_PARTNER_RECORD`], for which no
/// fraud rule that is on may hold: [`NO_SELF_REFERRAL`], [`NO_DISPOSABLE_EMAIL`],
/// [`rules::no_click_rule`]) go into `sale_batch`, which the writes of [`record_sales`]
/// then read. A sale of a program with webhook endpoints is left to the batch's
/// transaction, where its messages are written with it.
///
/// `duplicate_ip` is applied here to the conversions recorded before the batch: the IPs
/// its own sales convert from are written after this statement. So a sale whose program
/// has the rule on is taken only when it is the first of the batch from its click's IP
/// under its partner (`nth_of_ip`); a later one is left to its own job, which runs in a
/// transaction after this one, sees the earlier sale's conversion and applies the rule.
/// (That leaves out more than it must, as the earlier sale may convert nothing; two sales
/// from one IP in one batch are rare.) With that, the sales taken come out as if recorded
/// one by one in batch order: a conversion's IP is the only thing a sale writes that
/// another sale's rules read.
fn resolve_sale_batch() -> String {
    format!(
        "INSERT INTO temp.sale_batch SELECT r.idx, r.program_id, c.id, c.partner_id, pp.id, \
    c.click_id, COALESCE(r.customer_key, c.customer_key), r.transaction_id, r.amount_cents, \
    r.currency, r.sale_type, r.product_id, r.metadata, r.at, r.commission, \
    r.revenue_figure, r.commission_figure, r.day, c.first_purchase_date IS NULL, \
    r.group_id, r.description, r.converted_amount_cents, r.exchange_rate, r.rate_date, \
    r.program_currency \
    FROM ranked r JOIN customers c ON c.id = r.customer_id \
    JOIN partner_programs pp ON {APPROVED_PARTNER_RECORD} \
    JOIN partner_groups g ON g.id = pp.group_id AND g.id = r.group_id \
    AND g.version = r.group_version \
    LEFT JOIN partners pa ON pa.id = c.partner_id \
    LEFT JOIN affiliate_click_events e ON e.id = r.click_event \
    WHERE r.nth_of_customer = 1 AND r.nth_of_transaction = 1 AND {NO_SELF_REFERRAL} \
    AND {NO_DISPOSABLE_EMAIL} AND {} \
    AND (r.check_duplicate_ip = 0 OR r.click_ip IS NULL OR r.nth_of_ip = 1) \
    AND NOT EXISTS (SELECT 1 FROM affiliate_sale_events s \
    WHERE s.processor_event_id = r.transaction_id) \
    AND NOT EXISTS (SELECT 1 FROM webhook_endpoints w \
    WHERE w.program_id = r.program_id AND w.enabled)",
        rules::no_click_rule("r.")
    )
}

/// The last statement of [`commit_plain_sales`]: the rows of `ids` (the last statement
/// of [`record_sales`]), that is per recorded sale its place in the batch, its sale id
/// and its commission id, as one text value (`idx sale commission`, comma-separated).
/// sqlx hands each row from SQLite's thread to the writer's as a message of its own,
/// which usually has to wake the writer; one row per batch instead of one per sale saves
/// most of those wake-ups.
fn sale_batch_ids(ids: &str) -> String {
    format!(
        "SELECT group_concat(idx || ' ' || sale_id || ' ' || COALESCE(commission_id, ''), ',') \
         FROM ({ids})"
    )
}

/// The query of [`commit_plain_sales`] for `n` sales (1 to [`MAX_SET_ROWS`]).
fn commit_sale_batch_sql(n: usize) -> &'static str {
    static SQL: OnceLock<Vec<String>> = OnceLock::new();
    rows::sized(&SQL, n, |n| {
        let [sales, commissions, ips, customers, ids] = record_sales("temp.sale_batch AS rows");
        // `ranked`: per sale, its customer, that customer's latest click, and whether an
        // earlier sale of the batch names the same customer or transaction id, or comes
        // from the same partner and click IP (see `resolve_sale_batch`).
        format!(
            "{BEGIN_WRITE}; {SALE_BATCH_TABLE}; DELETE FROM temp.sale_batch; \
             {}, ranked AS (SELECT *, \
             ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY idx) AS nth_of_customer, \
             ROW_NUMBER() OVER (PARTITION BY transaction_id ORDER BY idx) AS nth_of_transaction, \
             ROW_NUMBER() OVER (PARTITION BY customer_partner, click_ip ORDER BY idx) \
             AS nth_of_ip \
             FROM (SELECT rows.*, k.id AS customer_id, k.partner_id AS customer_partner, \
             e.id AS click_event, e.ip AS click_ip FROM rows \
             LEFT JOIN customers k ON k.id = {SALE_CUSTOMER_ID} \
             {})) \
             {}; {sales}; {commissions}; {ips}; {customers}; \
             {SQLITE_SALE_BATCH_COUNTERS}; {}; COMMIT",
            rows::cte(n, BATCH_SALE_COLUMNS),
            rules::latest_click::<Sqlite>("k.id"),
            resolve_sale_batch(),
            sale_batch_ids(&ids)
        )
    })
}

/// [`plain_sales`](crate::sql::batch::plain_sales) as a transaction of its own, in two
/// round trips. The first resolves the sales and decides their rewards
/// ([`batch::decide_plain_sales`]) outside a transaction: this connection is the
/// database's one writer, so what it reads stays true until it writes. The second is one
/// query from `BEGIN IMMEDIATE` to `COMMIT` that resolves them again, records those that
/// still resolve plainly under the group version their reward was decided by, adds their
/// counters, and returns what it recorded. At most [`MAX_SET_ROWS`] sales (any more are
/// answered `None`). When it fails, nothing of it is left; a sale answered `None` was not
/// written and is left to its own job.
async fn commit_plain_sales(
    conn: &mut SqliteConnection,
    sales: &[&NewSale],
    cache: &RewardsCache,
) -> StoreResult<Vec<Option<SaleOutcome>>> {
    use Value::{Int, Text};
    let all = sales.len();
    let sales = &sales[..all.min(MAX_SET_ROWS)];
    let decided =
        batch::decide_plain_sales::<Sqlite>(conn, &Deltas::default(), sales, cache).await?;
    let figures: Vec<(i64, i64, String)> = decided
        .iter()
        .map(|d| {
            let s = sales[d.i];
            (s.program_amount(), d.commission_cents, day_of(s.at))
        })
        .collect();
    let mut rows = Rows::new(BATCH_SALE_COLUMNS);
    for (d, (revenue, commission, day)) in decided.iter().zip(&figures) {
        let s = sales[d.i];
        let [dup, partner, fast] = batch::click_rule_flags(s);
        let [converted, rate, rate_date] = batch::conversion_values(s);
        rows.push(&[
            place(d.i),
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
            Int(d.commission_cents),
            Int(*revenue),
            Int(*commission),
            Text(Some(day)),
            dup,
            partner,
            fast,
            Int(d.group_id),
            Int(d.group_version),
            Text(Some(&d.description)),
            converted,
            rate,
            rate_date,
            Text(Some(&s.program.currency)),
        ]);
    }
    let mut outcomes: Vec<Option<SaleOutcome>> = vec![None; all];
    let Some((n, chunk)) = rows.chunks().next() else {
        return Ok(outcomes);
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
            rollback(conn).await;
            return Err(e.into());
        }
    };
    for triple in recorded
        .as_deref()
        .unwrap_or("")
        .split(',')
        .filter(|t| !t.is_empty())
    {
        // Integers this query wrote itself: unreadable only through a bug in it.
        let (i, outcome) = parse_recorded_sale(triple).ok_or_else(|| {
            StoreError::Other(anyhow::anyhow!("unreadable sale batch answer {triple:?}"))
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
            unearned: None,
        },
    ))
}

#[async_trait]
impl SetStatements for Sqlite {
    /// Inserts new clicks, their customers and click events, in the transaction open on
    /// `conn`: one query per [`MAX_SET_ROWS`] clicks.
    async fn insert_new_clicks(
        conn: &mut SqliteConnection,
        clicks: &[&NewClick],
    ) -> StoreResult<()> {
        let rows = new_click_rows(clicks);
        for (n, chunk) in rows.chunks() {
            let query = sqlx::query(new_clicks_sql(n));
            rows.bind(query, chunk, NEW_CLICK_STATEMENTS)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    /// [`Self::insert_new_clicks`] and the counters `deltas` as a transaction of its own,
    /// in one query from `BEGIN IMMEDIATE` to `COMMIT`. At most [`MAX_SET_ROWS`] clicks.
    /// When it fails, nothing of it is left.
    async fn commit_new_clicks(
        conn: &mut SqliteConnection,
        clicks: &[&NewClick],
        deltas: &Deltas,
    ) -> StoreResult<()> {
        let rows = new_click_rows(clicks);
        let mut chunks = rows.chunks();
        let (Some((n, chunk)), None) = (chunks.next(), chunks.next()) else {
            // Nothing written may be answered as recorded, and more than one chunk would
            // take more than one query.
            return Err(StoreError::Other(anyhow::anyhow!(
                "{} clicks to commit in one query (1 to {MAX_SET_ROWS})",
                clicks.len()
            )));
        };
        let parts: Vec<counters::Part<'_>> = counters::parts(deltas).collect();
        let mut sql = format!("{BEGIN_WRITE}; {}", new_clicks_sql(n));
        for part in &parts {
            sql.push_str("; ");
            sql.push_str(&Sqlite::counter_query(&part.updates::<Sqlite>(1)));
        }
        sql.push_str("; COMMIT");
        let mut query = rows.bind(sqlx::query(&sql), chunk, NEW_CLICK_STATEMENTS);
        for part in &parts {
            query = part.bind::<Sqlite>(query);
        }
        if let Err(e) = query.execute(&mut *conn).await {
            rollback(conn).await;
            return Err(e.into());
        }
        Ok(())
    }

    /// The query of `step` of a batch's plain sales for `n` of them, with `chunk`, a chunk
    /// of `rows`, bound for each of its statements.
    fn plain_sales_query<'q>(
        step: SalesStep,
        n: usize,
        rows: &Rows<'q>,
        chunk: &[Value<'q>],
    ) -> rows::Query<'q> {
        let (sql, statements): (_, &[&[&str]]) = match step {
            SalesStep::Resolve => (resolve_sales_sql(n), &[SALE_KEY_COLUMNS]),
            SalesStep::Record => (record_sales_sql(n), &RECORD_SALES_COLUMNS),
        };
        rows.bind(sqlx::query(sql), chunk, statements)
    }

    async fn commit_plain_sales(
        conn: &mut SqliteConnection,
        sales: &[&NewSale],
        cache: &RewardsCache,
    ) -> Option<StoreResult<Vec<Option<SaleOutcome>>>> {
        Some(commit_plain_sales(conn, sales, cache).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store as _;

    #[test]
    fn recorded_sales_parse_with_and_without_commission() {
        assert_eq!(
            parse_recorded_sale("3 17 9"),
            Some((
                3,
                SaleOutcome {
                    sale_id: 17,
                    commission_id: Some(9),
                    unearned: None,
                }
            ))
        );
        assert_eq!(
            parse_recorded_sale("0 5 "),
            Some((
                0,
                SaleOutcome {
                    sale_id: 5,
                    commission_id: None,
                    unearned: None,
                }
            ))
        );
        assert_eq!(parse_recorded_sale("1 x 2"), None);
        assert_eq!(parse_recorded_sale("1 2 3 4"), None);
    }

    /// The batches' statements run on indexes: an automatic index or a scan of a stored
    /// table costs time in proportion to the program's history on every batch (a join on
    /// a partial index without the index's condition once did that to the commissions
    /// table).
    #[tokio::test]
    async fn batch_statements_use_indexes() {
        use sqlx::Connection as _;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = super::super::SqliteStore::open(&url)
            .await
            .expect("the store opens");
        let mut conn = SqliteConnection::connect(&url).await.expect("connects");
        // A multi-row insert into a parent table plans a scan of each child table for
        // the foreign-key check, which only runs while a violation is outstanding.
        sqlx::query("PRAGMA foreign_keys = OFF")
            .execute(&mut conn)
            .await
            .expect("foreign keys off");
        sqlx::query(SALE_BATCH_TABLE)
            .execute(&mut conn)
            .await
            .expect("the batch table");
        // What a batch may read whole: its own rows, never a stored table.
        let batch = ["rows", "r", "d", "CONSTANT ROW", "temp.sale_batch"];
        let mut checked = 0;
        // The resolving statements read the customers' latest clicks and, for the fraud
        // rules that are on, the conversion and sign-in IPs: each by its index.
        let statements = [
            commit_sale_batch_sql(1),
            new_clicks_sql(1),
            resolve_sales_sql(1),
        ];
        for statement in statements.iter().flat_map(|sql| sql.split(';')) {
            let statement = statement.trim();
            if ["BEGIN", "COMMIT", "CREATE", "DELETE"]
                .iter()
                .any(|word| statement.starts_with(word))
            {
                continue;
            }
            // Placeholders left unbound are NULL, which is enough for a plan.
            let plan = sqlx::query(&format!("EXPLAIN QUERY PLAN {statement}"))
                .fetch_all(&mut conn)
                .await
                .expect("a plan");
            let plan: Vec<String> = plan
                .iter()
                .map(|r| r.try_get("detail").expect("a step"))
                .collect();
            for step in &plan {
                let scans_stored = step
                    .strip_prefix("SCAN ")
                    .is_some_and(|what| !batch.contains(&what) && !what.starts_with("(subquery"));
                assert!(
                    !step.contains("AUTOMATIC") && !scans_stored,
                    "{plan:?} in {statement}"
                );
            }
            checked += 1;
        }
        assert_eq!(checked, 12, "statements checked");
        conn.close().await.expect("closes");
        store.close().await;
    }

    #[test]
    fn statements_take_every_row_size() {
        for n in [1, 2, MAX_SET_ROWS] {
            let marks = |sql: &str| sql.matches('?').count();
            assert_eq!(
                marks(new_clicks_sql(n)),
                n * (CUSTOMER_CLICK_COLUMNS.len() + CLICK_COLUMNS.len())
            );
            assert_eq!(marks(resolve_sales_sql(n)), n * SALE_KEY_COLUMNS.len());
            let record: usize = RECORD_SALES_COLUMNS.iter().map(|c| n * c.len()).sum();
            assert_eq!(marks(record_sales_sql(n)), record);
            assert_eq!(
                marks(commit_sale_batch_sql(n)),
                n * BATCH_SALE_COLUMNS.len()
            );
        }
    }
}
