//! [`WebhookStore`] on the pools: endpoints, the delivery log and its resends, and what
//! the worker and the metrics ask of the backlog.

use async_trait::async_trait;

use super::{endpoint_row, ENDPOINT_COLUMNS};
use crate::error::{StoreError, StoreResult};
use crate::payout_model::Page;
use crate::sql::engine::{stmt, Engine, Rec};
use crate::sql::{keyset, named, SqlStore};
use crate::webhooks::{Attempt, Delivery, NewEndpoint, Resend, WebhookEndpoint, WebhookStore};
use reftrack_domain::status::DeliveryStatus;

/// Deliveries of a page (`$1` endpoint, the page's bounds after it), with their
/// attempts read by one more statement.
async fn with_attempts<DB: Engine>(
    conn: &mut DB::Connection,
    endpoint_id: i64,
    rows: Vec<Rec<DB>>,
) -> StoreResult<Vec<Delivery>> {
    let mut deliveries = rows
        .iter()
        .map(|r| {
            Ok(Delivery {
                id: r.try_get("id")?,
                message_id: r.try_get("message_id")?,
                event_type: r.try_get("event_type")?,
                status: named(r, "status")?,
                next_attempt_at: r.try_get("next_attempt_at")?,
                attempts: Vec::new(),
            })
        })
        .collect::<StoreResult<Vec<_>>>()?;
    let (Some(high), Some(low)) = (
        deliveries.iter().map(|d| d.id).max(),
        deliveries.iter().map(|d| d.id).min(),
    ) else {
        return Ok(deliveries);
    };
    let attempts = stmt::<DB>(
        "SELECT a.delivery_id, a.at, a.status_code, a.error FROM webhook_attempts a \
         JOIN webhook_deliveries d ON d.id = a.delivery_id \
         WHERE d.endpoint_id = $1 AND d.id >= $2 AND d.id <= $3 ORDER BY a.id",
    )
    .bind(endpoint_id)
    .bind(low)
    .bind(high)
    .fetch_all(conn)
    .await?;
    for a in &attempts {
        let delivery_id: i64 = a.try_get_at(0)?;
        if let Some(d) = deliveries.iter_mut().find(|d| d.id == delivery_id) {
            d.attempts.push(Attempt {
                at: a.try_get_at(1)?,
                status_code: a.try_get_at(2)?,
                error: a.try_get_at(3)?,
            });
        }
    }
    Ok(deliveries)
}

const DELIVERY_COLUMNS: &str = "id, message_id, event_type, status, next_attempt_at";

#[async_trait]
impl<DB: Engine> WebhookStore for SqlStore<DB> {
    async fn create_endpoint(
        &self,
        e: &NewEndpoint,
        at: i64,
        audit: crate::audit::AuditOf<'_, WebhookEndpoint>,
    ) -> StoreResult<WebhookEndpoint> {
        let mut conn = self.write.acquire().await?;
        let mut tx = sqlx::Connection::begin_with(&mut *conn, DB::BEGIN_WRITE).await?;
        let conn = &mut *tx;
        let exists = stmt::<DB>("SELECT id FROM programs WHERE id = $1")
            .bind(e.program_id)
            .has_row(&mut *conn)
            .await?;
        if !exists {
            return Err(StoreError::NotFound("program"));
        }
        let sql = format!(
            "INSERT INTO webhook_endpoints (program_id, url, secret, events, created_at, \
             updated_at) VALUES ($1, $2, $3, $4, $5, $5) RETURNING {ENDPOINT_COLUMNS}"
        );
        let row = stmt::<DB>(&sql)
            .bind(e.program_id)
            .bind(e.url.as_str())
            .bind(e.secret.as_str())
            .bind(e.events.as_str())
            .bind(at)
            .fetch_one(&mut *conn)
            .await?;
        let endpoint = endpoint_row(&row)?;
        crate::sql::audit::insert_entries::<DB>(&mut *conn, &audit(None, &endpoint)).await?;
        tx.commit().await?;
        Ok(endpoint)
    }

    async fn endpoints(&self, program_id: i64, page: Page) -> StoreResult<Vec<WebhookEndpoint>> {
        let sql = format!(
            "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE program_id = $1 \
             AND {keyset}",
            keyset = keyset("id", 2),
        );
        stmt::<DB>(&sql)
            .bind(program_id)
            .page(page)
            .read_all(&mut *self.read.acquire().await?, endpoint_row)
            .await
    }

    async fn endpoint(&self, id: i64) -> StoreResult<Option<WebhookEndpoint>> {
        let sql = format!("SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1");
        let row = stmt::<DB>(&sql)
            .bind(id)
            .fetch_optional(&mut *self.read.acquire().await?)
            .await?;
        row.as_ref().map(endpoint_row).transpose()
    }

    async fn deliveries(&self, endpoint_id: i64, page: Page) -> StoreResult<Vec<Delivery>> {
        let conn = &mut *self.read.acquire().await?;
        let sql = format!(
            "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = $1 \
             AND {keyset}",
            keyset = keyset("id", 2),
        );
        let rows = stmt::<DB>(&sql)
            .bind(endpoint_id)
            .page(page)
            .fetch_all(&mut *conn)
            .await?;
        with_attempts::<DB>(conn, endpoint_id, rows).await
    }

    async fn delivery(&self, endpoint_id: i64, delivery_id: i64) -> StoreResult<Option<Delivery>> {
        let conn = &mut *self.read.acquire().await?;
        let sql = format!(
            "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE endpoint_id = $1 AND id = $2"
        );
        let rows = stmt::<DB>(&sql)
            .bind(endpoint_id)
            .bind(delivery_id)
            .fetch_all(&mut *conn)
            .await?;
        Ok(with_attempts::<DB>(conn, endpoint_id, rows).await?.pop())
    }

    async fn resend(&self, endpoint_id: i64, delivery_id: i64, now: i64) -> StoreResult<Resend> {
        let conn = &mut *self.write.acquire().await?;
        let due = stmt::<DB>(
            "UPDATE webhook_deliveries SET status = $1, next_attempt_at = $2, updated_at = $2 \
             WHERE id = $3 AND endpoint_id = $4 AND (lease_until IS NULL OR lease_until <= $2)",
        )
        .bind(DeliveryStatus::Pending.as_str())
        .bind(now)
        .bind(delivery_id)
        .bind(endpoint_id)
        .execute(&mut *conn)
        .await?;
        if due == 1 {
            return Ok(Resend::Due);
        }
        let exists =
            stmt::<DB>("SELECT id FROM webhook_deliveries WHERE id = $1 AND endpoint_id = $2")
                .bind(delivery_id)
                .bind(endpoint_id)
                .has_row(conn)
                .await?;
        Ok(if exists {
            Resend::InFlight
        } else {
            Resend::Missing
        })
    }

    async fn pending_deliveries(&self) -> StoreResult<i64> {
        Ok(
            stmt::<DB>("SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending'")
                .scalar(&mut *self.read.acquire().await?)
                .await?,
        )
    }

    async fn delivery_due(&self, now: i64) -> StoreResult<bool> {
        // In the claim's order, so that it reads the due index from its start rather
        // than scanning past the delivered rows.
        Ok(stmt::<DB>(
            "SELECT d.id FROM webhook_deliveries d \
             JOIN webhook_endpoints e ON e.id = d.endpoint_id \
             WHERE d.status = 'pending' AND d.next_attempt_at <= $1 \
             AND (d.lease_until IS NULL OR d.lease_until <= $1) AND e.enabled \
             ORDER BY d.next_attempt_at, d.id LIMIT 1",
        )
        .bind(now)
        .has_row(&mut *self.read.acquire().await?)
        .await?)
    }
}
