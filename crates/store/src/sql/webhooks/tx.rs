//! [`WebhookTx`] on the committer's transaction: the outbox, changes of endpoints, and
//! the delivery worker's claims and attempts.

use async_trait::async_trait;

use super::messages::record_events;
use super::{endpoint_row, ENDPOINT_COLUMNS};
use crate::error::StoreResult;
use crate::sql::engine::{stmt, Engine};
use crate::sql::write::WriteConnection;
use crate::webhooks::{
    AttemptRecord, ClaimedDelivery, EndpointHealth, EndpointPatch, Event, WebhookEndpoint,
    WebhookTx,
};
use reftrack_domain::webhooks::new_message_id;

#[async_trait]
impl<DB: Engine> WebhookTx for WriteConnection<DB> {
    async fn record_events(
        &mut self,
        program_id: i64,
        at: i64,
        events: &[Event],
    ) -> StoreResult<()> {
        record_events::<DB>(&mut self.conn, program_id, at, events).await
    }

    async fn insert_delivery(
        &mut self,
        endpoint_id: i64,
        event_type: &str,
        payload: &str,
        at: i64,
    ) -> StoreResult<i64> {
        Ok(stmt::<DB>(
            "INSERT INTO webhook_deliveries (endpoint_id, message_id, event_type, payload, \
             next_attempt_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5, $5) \
             RETURNING id",
        )
        .bind(endpoint_id)
        .bind(new_message_id())
        .bind(event_type)
        .bind(payload)
        .bind(at)
        .scalar(&mut self.conn)
        .await?)
    }

    async fn endpoint_locked(&mut self, id: i64) -> StoreResult<Option<WebhookEndpoint>> {
        let sql = format!(
            "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 {}",
            DB::ROW_LOCK
        );
        match stmt::<DB>(&sql)
            .bind(id)
            .fetch_optional(&mut self.conn)
            .await?
        {
            Some(row) => endpoint_row(&row).map(Some),
            None => Ok(None),
        }
    }

    async fn update_endpoint(
        &mut self,
        id: i64,
        patch: &EndpointPatch,
        at: i64,
    ) -> StoreResult<Option<WebhookEndpoint>> {
        let sql = format!(
            "UPDATE webhook_endpoints SET url = COALESCE($1, url), \
             events = COALESCE($2, events), enabled = COALESCE($3, enabled), \
             failing_since = CASE WHEN $3 THEN NULL ELSE failing_since END, \
             disabled_reason = CASE WHEN $3 THEN NULL ELSE disabled_reason END, \
             updated_at = $4 WHERE id = $5 RETURNING {ENDPOINT_COLUMNS}"
        );
        let Some(row) = stmt::<DB>(&sql)
            .bind(patch.url.as_deref())
            .bind(patch.events.as_deref())
            .bind(patch.enabled)
            .bind(at)
            .bind(id)
            .fetch_optional(&mut self.conn)
            .await?
        else {
            return Ok(None);
        };
        match patch.enabled {
            Some(true) => {
                stmt::<DB>(
                    "UPDATE webhook_deliveries SET next_attempt_at = $1 \
                     WHERE endpoint_id = $2 AND status = 'pending' AND next_attempt_at IS NULL",
                )
                .bind(at)
                .bind(id)
                .execute(&mut self.conn)
                .await?;
            }
            Some(false) => unschedule::<DB>(&mut self.conn, id).await?,
            None => {}
        }
        endpoint_row(&row).map(Some)
    }

    async fn delete_endpoint(&mut self, id: i64) -> StoreResult<bool> {
        stmt::<DB>(
            "DELETE FROM webhook_attempts WHERE delivery_id IN \
             (SELECT id FROM webhook_deliveries WHERE endpoint_id = $1)",
        )
        .bind(id)
        .execute(&mut self.conn)
        .await?;
        stmt::<DB>("DELETE FROM webhook_deliveries WHERE endpoint_id = $1")
            .bind(id)
            .execute(&mut self.conn)
            .await?;
        Ok(stmt::<DB>("DELETE FROM webhook_endpoints WHERE id = $1")
            .bind(id)
            .execute(&mut self.conn)
            .await?
            == 1)
    }

    async fn claim_deliveries(
        &mut self,
        now: i64,
        lease_until: i64,
        token: i64,
        limit: i64,
        per_endpoint: i64,
        in_flight: &[(i64, i64)],
    ) -> StoreResult<Vec<ClaimedDelivery>> {
        // Ids of the store's own rows, written as numbers.
        let list = |ids: &mut dyn Iterator<Item = i64>| {
            ids.map(|id| id.to_string()).collect::<Vec<_>>().join(", ")
        };
        let full = list(
            &mut in_flight
                .iter()
                .filter(|(_, n)| *n >= per_endpoint)
                .map(|(e, _)| *e),
        );
        let full = if full.is_empty() {
            String::new()
        } else {
            format!("AND d.endpoint_id NOT IN ({full})")
        };
        let sql = format!(
            "SELECT d.id, d.endpoint_id FROM webhook_deliveries d \
             JOIN webhook_endpoints e ON e.id = d.endpoint_id \
             WHERE d.status = 'pending' AND d.next_attempt_at <= $1 \
             AND (d.lease_until IS NULL OR d.lease_until <= $1) AND e.enabled {full} \
             ORDER BY d.next_attempt_at, d.id LIMIT $2 {}",
            DB::CLAIM_LOCK
        );
        let candidates = stmt::<DB>(&sql)
            .bind(now)
            .bind(limit)
            .fetch_all(&mut self.conn)
            .await?;
        let mut taken: Vec<(i64, i64)> = in_flight.to_vec();
        let mut chosen = Vec::new();
        for r in &candidates {
            let (id, endpoint_id): (i64, i64) = (r.try_get_at(0)?, r.try_get_at(1)?);
            let at = match taken.iter().position(|(e, _)| *e == endpoint_id) {
                Some(at) => at,
                None => {
                    taken.push((endpoint_id, 0));
                    taken.len() - 1
                }
            };
            if taken[at].1 < per_endpoint {
                taken[at].1 += 1;
                chosen.push(id);
            }
        }
        if chosen.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "UPDATE webhook_deliveries SET lease_until = $1, lease_token = $2 WHERE id IN ({})",
            list(&mut chosen.into_iter())
        );
        stmt::<DB>(&sql)
            .bind(lease_until)
            .bind(token)
            .execute(&mut self.conn)
            .await?;
        Ok(stmt::<DB>(
            "SELECT d.id, d.endpoint_id, e.url, e.secret, d.message_id, d.payload, d.attempts, \
             d.lease_token FROM webhook_deliveries d \
             JOIN webhook_endpoints e ON e.id = d.endpoint_id \
             WHERE d.lease_token = $1 ORDER BY d.next_attempt_at, d.id",
        )
        .bind(token)
        .records(&mut self.conn)
        .await?)
    }

    async fn record_attempts(
        &mut self,
        attempts: &[AttemptRecord],
        endpoints: &[EndpointHealth],
        at: i64,
    ) -> StoreResult<()> {
        // Set-based: one update and one insert per chunk, whatever the batch's size.
        for chunk in attempts.chunks(ATTEMPTS_PER_STATEMENT) {
            // A delivery whose claim lapsed and was taken over by another attempt is left
            // out: that attempt reports.
            let sql = format!(
                "UPDATE webhook_deliveries SET status = v.column3, attempts = attempts + 1, \
                 next_attempt_at = v.column4, lease_until = NULL, lease_token = NULL, \
                 updated_at = v.column5 FROM (VALUES {}) AS v \
                 WHERE webhook_deliveries.id = v.column1 \
                 AND webhook_deliveries.lease_token = v.column2 \
                 RETURNING webhook_deliveries.id",
                DB::values(chunk.len(), 5, 1)
            );
            let mut update = stmt::<DB>(&sql);
            for a in chunk {
                update = update
                    .bind(a.delivery_id)
                    .bind(a.lease_token)
                    .bind(a.status.as_str())
                    .bind(a.next_attempt_at)
                    .bind(at);
            }
            let moved = update
                .fetch_all(&mut self.conn)
                .await?
                .iter()
                .map(|r| r.try_get_at::<i64>(0))
                .collect::<Result<std::collections::HashSet<i64>, _>>()?;
            let recorded: Vec<&AttemptRecord> = chunk
                .iter()
                .filter(|a| moved.contains(&a.delivery_id))
                .collect();
            if recorded.is_empty() {
                continue;
            }
            let sql = format!(
                "INSERT INTO webhook_attempts (delivery_id, at, status_code, error) VALUES {}",
                DB::values(recorded.len(), 4, 1)
            );
            let mut insert = stmt::<DB>(&sql);
            for a in recorded {
                insert = insert
                    .bind(a.delivery_id)
                    .bind(a.at)
                    .bind(a.status_code)
                    .bind(a.error.as_deref());
            }
            insert.execute(&mut self.conn).await?;
        }
        for e in endpoints {
            let sql = if e.succeeded {
                "UPDATE webhook_endpoints SET failing_since = $1 WHERE id = $2"
            } else {
                "UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, $1) \
                 WHERE id = $2"
            };
            stmt::<DB>(sql)
                .bind(e.failing_since)
                .bind(e.endpoint_id)
                .execute(&mut self.conn)
                .await?;
            if let Some((failing_before, reason)) = &e.disable {
                let disabled = stmt::<DB>(
                    "UPDATE webhook_endpoints SET enabled = FALSE, disabled_reason = $1, \
                     updated_at = $2 WHERE id = $3 AND enabled \
                     AND failing_since IS NOT NULL AND failing_since <= $4",
                )
                .bind(reason.as_str())
                .bind(at)
                .bind(e.endpoint_id)
                .bind(*failing_before)
                .execute(&mut self.conn)
                .await?;
                if disabled == 1 {
                    unschedule::<DB>(&mut self.conn, e.endpoint_id).await?;
                }
            }
        }
        Ok(())
    }
}

/// Most attempts one statement records (five parameters each, well under either
/// database's limit).
const ATTEMPTS_PER_STATEMENT: usize = 500;

/// Takes the pending deliveries of a disabled endpoint off the schedule: they stay
/// pending, and are due again when it is enabled.
async fn unschedule<DB: Engine>(conn: &mut DB::Connection, endpoint_id: i64) -> StoreResult<()> {
    stmt::<DB>(
        "UPDATE webhook_deliveries SET next_attempt_at = NULL \
         WHERE endpoint_id = $1 AND status = 'pending'",
    )
    .bind(endpoint_id)
    .execute(conn)
    .await?;
    Ok(())
}
