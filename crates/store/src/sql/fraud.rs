//! The statements of the fraud rules: the facts a sale's flow reads in the committer's
//! transaction, the IPs kept for them and their purge, and the review queue.

use async_trait::async_trait;

use super::engine::{stmt, Engine, Rec};
use super::rules;
use super::write::WriteConnection;
use super::{flags, SqlStore};
use crate::error::StoreResult;
use crate::fraud::{FraudStore, FraudTx, ReviewClick, ReviewItem};

#[async_trait]
impl<DB: Engine> FraudTx for WriteConnection<DB> {
    async fn customer_click(
        &mut self,
        customer_id: i64,
    ) -> StoreResult<Option<(Option<String>, i64)>> {
        let row = stmt::<DB>(
            "SELECT ip, click_timestamp FROM affiliate_click_events WHERE customer_id = $1 \
             ORDER BY id DESC LIMIT 1",
        )
        .bind(customer_id)
        .fetch_optional(&mut *self.conn)
        .await?;
        Ok(row
            .map(|r| Ok::<_, sqlx::Error>((r.try_get_at(0)?, r.try_get_at(1)?)))
            .transpose()?)
    }

    async fn ip_converted_before(
        &mut self,
        partner_id: i64,
        ip: &str,
        customer_id: i64,
        since: i64,
    ) -> StoreResult<bool> {
        Ok(stmt::<DB>(
            "SELECT 1 FROM conversion_ips WHERE partner_id = $1 AND ip = $2 \
             AND converted_at >= $3 AND customer_id <> $4 LIMIT 1",
        )
        .bind(partner_id)
        .bind(ip)
        .bind(since)
        .bind(customer_id)
        .has_row(&mut *self.conn)
        .await?)
    }

    async fn partner_signed_in_from(
        &mut self,
        partner_id: i64,
        ip: &str,
        since: i64,
    ) -> StoreResult<bool> {
        Ok(stmt::<DB>(
            "SELECT 1 FROM partner_sign_in_ips WHERE partner_id = $1 AND ip = $2 \
             AND signed_in_at >= $3",
        )
        .bind(partner_id)
        .bind(ip)
        .bind(since)
        .has_row(&mut *self.conn)
        .await?)
    }

    async fn record_conversion_ip(
        &mut self,
        partner_id: i64,
        customer_id: i64,
        at: i64,
    ) -> StoreResult<()> {
        let (insert, from_rows) = rules::conversion_ips::<DB>();
        let sql = format!(
            "{insert} FROM (SELECT CAST($1 AS BIGINT) AS partner_id, \
             CAST($2 AS BIGINT) AS customer_id, CAST($3 AS BIGINT) AS at) rows {from_rows}"
        );
        stmt::<DB>(&sql)
            .bind(partner_id)
            .bind(customer_id)
            .bind(at)
            .execute(&mut *self.conn)
            .await?;
        Ok(())
    }
}

/// The columns of a [`ReviewItem`], for [`review_item`].
const REVIEW_COLUMNS: &str = "c.id, c.partner_id, pa.name AS partner_name, \
    c.amount_cents - c.reversed_cents AS amount_cents, c.currency, c.flags, c.created_at, \
    c.description, s.processor_event_id AS transaction_id, s.amount_cents AS sale_amount_cents, \
    s.currency AS sale_currency, k.email AS customer_email, e.ip, e.geo_country, \
    e.device_type, e.device_os, e.browser_name, e.referrer_url, e.click_timestamp";

fn review_item<DB: Engine>(r: &Rec<DB>) -> StoreResult<ReviewItem> {
    let click_at: Option<i64> = r.try_get("click_timestamp")?;
    Ok(ReviewItem {
        commission_id: r.try_get("id")?,
        partner_id: r.try_get("partner_id")?,
        partner_name: r.try_get("partner_name")?,
        amount_cents: r.try_get("amount_cents")?,
        currency: r.try_get("currency")?,
        flags: flags(r, "flags")?,
        created_at: r.try_get("created_at")?,
        description: r.try_get("description")?,
        transaction_id: r.try_get("transaction_id")?,
        sale_amount_cents: r.try_get("sale_amount_cents")?,
        sale_currency: r.try_get("sale_currency")?,
        customer_email: r.try_get("customer_email")?,
        click: match click_at {
            None => None,
            Some(at) => Some(ReviewClick {
                ip: r.try_get("ip")?,
                country: r.try_get("geo_country")?,
                device_type: r.try_get("device_type")?,
                device_os: r.try_get("device_os")?,
                browser: r.try_get("browser_name")?,
                referrer: r.try_get("referrer_url")?,
                at,
            }),
        },
    })
}

#[async_trait]
impl<DB: Engine> FraudStore for SqlStore<DB> {
    async fn review_queue(&self, program_id: i64, limit: i64) -> StoreResult<Vec<ReviewItem>> {
        let sql = format!(
            "SELECT {REVIEW_COLUMNS} FROM commissions c \
             JOIN partners pa ON pa.id = c.partner_id \
             LEFT JOIN affiliate_sale_events s ON s.id = c.sale_id \
             LEFT JOIN affiliate_lead_events le ON le.id = c.lead_id \
             LEFT JOIN customers k ON k.id = COALESCE(s.customer_id, le.customer_id) \
             LEFT JOIN affiliate_click_events e ON e.id = (SELECT MAX(l.id) \
             FROM affiliate_click_events l WHERE l.customer_id = k.id) \
             WHERE c.program_id = $1 AND {} ORDER BY c.id LIMIT $2",
            rules::held_for_review("c.")
        );
        stmt::<DB>(&sql)
            .bind(program_id)
            .bind(limit)
            .read_all(&mut *self.read.acquire().await?, review_item)
            .await
    }

    async fn review_count(&self, program_id: i64) -> StoreResult<i64> {
        let sql = format!(
            "SELECT COUNT(*) FROM commissions c WHERE c.program_id = $1 AND {}",
            rules::held_for_review("c.")
        );
        Ok(stmt::<DB>(&sql)
            .bind(program_id)
            .scalar(&mut *self.read.acquire().await?)
            .await?)
    }

    async fn record_partner_sign_in_ip(
        &self,
        partner_id: i64,
        ip: &str,
        at: i64,
    ) -> StoreResult<()> {
        stmt::<DB>(
            "INSERT INTO partner_sign_in_ips (partner_id, ip, signed_in_at) VALUES ($1, $2, $3) \
             ON CONFLICT (partner_id, ip) DO UPDATE SET signed_in_at = excluded.signed_in_at",
        )
        .bind(partner_id)
        .bind(ip)
        .bind(at)
        .execute(&mut *self.write.acquire().await?)
        .await?;
        Ok(())
    }

    async fn purge_ips(&self, before: i64, limit: i64) -> StoreResult<u64> {
        let conn = &mut *self.write.acquire().await?;
        let mut changed = 0;
        for sql in [
            "UPDATE affiliate_click_events SET ip = NULL WHERE id IN (SELECT id \
             FROM affiliate_click_events WHERE ip IS NOT NULL AND click_timestamp < $1 \
             LIMIT $2)",
            "DELETE FROM conversion_ips WHERE id IN (SELECT id FROM conversion_ips \
             WHERE converted_at < $1 LIMIT $2)",
            "DELETE FROM partner_sign_in_ips WHERE (partner_id, ip) IN (SELECT partner_id, ip \
             FROM partner_sign_in_ips WHERE signed_in_at < $1 LIMIT $2)",
        ] {
            changed += stmt::<DB>(sql)
                .bind(before)
                .bind(limit)
                .execute(&mut *conn)
                .await?;
        }
        Ok(changed)
    }

    async fn mark_disposable_emails(&self, limit: i64) -> StoreResult<u64> {
        let conn = &mut *self.write.acquire().await?;
        let unmarked: Vec<(i64, String)> = stmt::<DB>(
            "SELECT id, email FROM customers \
             WHERE email IS NOT NULL AND email_disposable IS NULL LIMIT $1",
        )
        .bind(limit)
        .read_all(&mut *conn, |r| {
            Ok::<_, sqlx::Error>((r.try_get_at(0)?, r.try_get_at(1)?))
        })
        .await?;
        let mut tx = sqlx::Connection::begin_with(&mut *conn, DB::BEGIN_WRITE).await?;
        for (id, email) in &unmarked {
            stmt::<DB>(
                "UPDATE customers SET email_disposable = $1 \
                 WHERE id = $2 AND email = $3 AND email_disposable IS NULL",
            )
            .bind(reftrack_domain::fraud::is_disposable(email))
            .bind(*id)
            .bind(email.as_str())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(unmarked.len() as u64)
    }
}
