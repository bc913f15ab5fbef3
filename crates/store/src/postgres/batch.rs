//! The set-based statements of the group committer on PostgreSQL: a batch's new clicks
//! (their customers and click events) and its plain sales (resolved, then recorded with
//! their commissions and conversions), up to [`MAX_SET_ROWS`] rows per statement, each
//! statement's text made once per row count, every write of it a CTE; and the
//! one-statement transaction of a batch of nothing but new clicks.
//!
//! Each writes the same rows and counts the same figures as the flow of the service layer
//! would for each click or sale one by one.

use std::sync::OnceLock;

use async_trait::async_trait;
use sqlx::{PgConnection, Postgres};

use super::counter_ctes;
use super::rows::{self, BindRows, Rows, Value};
use crate::committer::MAX_SET_ROWS;
use crate::error::{StoreError, StoreResult};
use crate::model::{NewClick, NewSale, SaleOutcome};
use crate::sql::batch::{
    self, new_click_rows, SalesStep, SetStatements, CLICK_COLUMNS, SALE_COLUMNS,
};
use crate::sql::groups::RewardsCache;
use crate::sql::{counters, rules};
use reftrack_domain::figures::Deltas;

/// Inserts the customers of new clicks from `rows`.
const NEW_CUSTOMERS: &str = "INSERT INTO customers (program_id, click_id, customer_status, \
    partner_id, link_id, created_at, updated_at) \
    SELECT program_id, click_id, 'click', partner_id, link_id, at, at FROM rows";

/// The CTEs that insert `n` new clicks (1 to [`MAX_SET_ROWS`]) from their `rows`: the
/// customers' INSERT, whose ids the click events' INSERT joins by click id.
fn new_clicks_ctes(n: usize) -> &'static str {
    static SQL: OnceLock<Vec<String>> = OnceLock::new();
    rows::sized(&SQL, n, |n| {
        format!(
            "{}, made AS ({NEW_CUSTOMERS} RETURNING id, click_id), events AS (\
             INSERT INTO affiliate_click_events (program_id, customer_id, link_id, partner_id, \
             click_id, session_id, page_url, page_title, referrer_url, screen_resolution, \
             viewport_size, language, timezone, geo_country, geo_region, geo_city, \
             device_type, device_os, browser_name, ip, is_test, click_timestamp, created_at) \
             SELECT rows.program_id, made.id, rows.link_id, rows.partner_id, rows.click_id, \
             session_id, page_url, page_title, referrer_url, screen_resolution, viewport_size, \
             language, timezone, geo_country, geo_region, geo_city, device_type, device_os, \
             browser_name, ip, FALSE, at, at FROM rows JOIN made ON made.click_id = rows.click_id)",
            rows::cte(n, CLICK_COLUMNS)
        )
    })
}

/// The statement that inserts `n` new clicks.
fn new_clicks_sql(n: usize) -> &'static str {
    static SQL: OnceLock<Vec<String>> = OnceLock::new();
    rows::sized(&SQL, n, |n| format!("{} SELECT 1", new_clicks_ctes(n)))
}

/// The query that resolves `n` plain sales (1 to [`MAX_SET_ROWS`]).
fn resolve_sales_sql(n: usize) -> &'static str {
    static SQL: OnceLock<Vec<String>> = OnceLock::new();
    rows::sized(&SQL, n, batch::resolve_sales_sql::<Postgres>)
}

/// The statement that records `n` resolved plain sales (1 to [`MAX_SET_ROWS`]) from
/// their `rows`: the sale events, their commissions, the converting customers' IPs and
/// the customers' conversion as CTEs, then per row its index, sale id and commission id.
fn record_sales_sql(n: usize) -> &'static str {
    static SQL: OnceLock<Vec<String>> = OnceLock::new();
    rows::sized(&SQL, n, |n| {
        let (status, manual) = rules::new_plain_commission();
        format!(
            "{}, sales AS (INSERT INTO affiliate_sale_events (program_id, customer_id, \
             partner_id, click_id, customer_key, processor_event_id, amount_cents, currency, \
             sale_type, payment_status, is_recurring, subscription_id, product_id, metadata, \
             is_test, sale_date, created_at, converted_amount_cents, exchange_rate, \
             rate_date) \
             SELECT program_id, customer_id, partner_id, click_id, customer_key, \
             transaction_id, amount_cents, currency, sale_type, 'paid', FALSE, NULL, \
             product_id, metadata, FALSE, at, at, converted_amount_cents, exchange_rate, \
             rate_date FROM rows ORDER BY idx \
             RETURNING id, processor_event_id, program_id, partner_id, currency, sale_date), \
             comm AS (INSERT INTO commissions (program_id, sale_id, partner_id, \
             partner_program_id, amount_cents, currency, status, manual_approval, created_at, \
             updated_at, group_id, description) \
             SELECT s.program_id, s.id, s.partner_id, rows.partner_program_id, \
             rows.commission, rows.program_currency, {status}, {manual}, s.sale_date, \
             s.sale_date, \
             rows.group_id, rows.description \
             FROM rows JOIN sales s ON s.processor_event_id = rows.transaction_id \
             RETURNING id, sale_id), \
             ips AS ({} FROM rows {} RETURNING 1), \
             cust AS (UPDATE customers SET customer_status = 'conversion', \
             first_purchase_date = COALESCE(customers.first_purchase_date, rows.at), \
             updated_at = rows.at FROM rows WHERE customers.id = rows.customer_id \
             RETURNING 1) \
             SELECT rows.idx, s.id AS sale_id, c.id AS commission_id FROM rows \
             JOIN sales s ON s.processor_event_id = rows.transaction_id \
             LEFT JOIN comm c ON c.sale_id = s.id",
            rows::cte(n, SALE_COLUMNS),
            rules::conversion_ips::<Postgres>().0,
            rules::conversion_ips::<Postgres>().1
        )
    })
}

#[async_trait]
impl SetStatements for Postgres {
    /// Inserts new clicks, their customers and click events, in the transaction open on
    /// `conn`: one statement per [`MAX_SET_ROWS`] clicks.
    async fn insert_new_clicks(conn: &mut PgConnection, clicks: &[&NewClick]) -> StoreResult<()> {
        let rows = new_click_rows(clicks);
        for (n, chunk) in rows.chunks() {
            let query = sqlx::query(new_clicks_sql(n));
            rows.bind(query, chunk).execute(&mut *conn).await?;
        }
        Ok(())
    }

    /// [`Self::insert_new_clicks`] and the counters `deltas` as a transaction of its own:
    /// one statement (which commits on its own) whose inserts and counter updates are CTEs.
    /// At most [`MAX_SET_ROWS`] clicks and one part of counters. When it fails, nothing of
    /// it is left.
    async fn commit_new_clicks(
        conn: &mut PgConnection,
        clicks: &[&NewClick],
        deltas: &Deltas,
    ) -> StoreResult<()> {
        let rows = new_click_rows(clicks);
        let mut chunks = rows.chunks();
        let mut parts = counters::parts(deltas);
        let (Some((n, chunk)), None, Some(counts), None) =
            (chunks.next(), chunks.next(), parts.next(), parts.next())
        else {
            // Nothing written may be answered as recorded, and more than one chunk would
            // take more than one statement.
            return Err(StoreError::Other(anyhow::anyhow!(
                "{} clicks to commit in one statement (1 to {MAX_SET_ROWS})",
                clicks.len()
            )));
        };
        let sql = format!(
            "{}, {} SELECT 1",
            new_clicks_ctes(n),
            counter_ctes(&counts.updates::<Postgres>(n * CLICK_COLUMNS.len() + 1))
        );
        let query = rows.bind(sqlx::query(&sql), chunk);
        counts.bind::<Postgres>(query).execute(&mut *conn).await?;
        Ok(())
    }

    /// The statement of `step` of a batch's plain sales for `n` of them, with `chunk`, a
    /// chunk of `rows`, bound.
    fn plain_sales_query<'q>(
        step: SalesStep,
        n: usize,
        rows: &Rows<'q>,
        chunk: &[Value<'q>],
    ) -> rows::Query<'q> {
        let sql = match step {
            SalesStep::Resolve => resolve_sales_sql(n),
            SalesStep::Record => record_sales_sql(n),
        };
        rows.bind(sqlx::query(sql), chunk)
    }

    async fn commit_plain_sales(
        _conn: &mut PgConnection,
        _sales: &[&NewSale],
        _cache: &RewardsCache,
    ) -> Option<StoreResult<Vec<Option<SaleOutcome>>>> {
        // No one-statement form here: PostgreSQL records them in the batch's transaction.
        None
    }
}
