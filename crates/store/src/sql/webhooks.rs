//! The statements of outbound webhooks: endpoints and the delivery log (on the pools),
//! and the outbox and the delivery worker's claims and attempts (on the committer's
//! transaction). [`record_events`] is also called by the engines' set-based sale
//! statements, so that a sale recorded with its batch writes the same messages as one
//! recorded by its flow.

use async_trait::async_trait;
use serde::Serialize;

use super::engine::{stmt, Engine, Rec};
use super::management::program_partner_row;
use super::payouts::{commission_by_id, payout_with_items};
use super::reports::LEAD_CONVERTED;
use super::write::WriteConnection;
use super::{keyset, named, SqlStore};
use crate::dashboard_model::{ConversionEvent, LeadEvent, ListedEvent};
use crate::error::{StoreError, StoreResult};
use crate::model::{NewSale, SaleOutcome};
use crate::payout_model::Page;
use crate::webhooks::{
    sale_recorded, Attempt, AttemptRecord, ClaimedDelivery, Delivery, EndpointHealth,
    EndpointPatch, Event, NewEndpoint, Resend, Subject, WebhookEndpoint, WebhookStore, WebhookTx,
};
use reftrack_domain::status::DeliveryStatus;
use reftrack_domain::time::iso;
use reftrack_domain::webhooks::{new_message_id, EventType, Subscription};

const ENDPOINT_COLUMNS: &str = "id, program_id, url, events, enabled, disabled_reason, \
    failing_since, created_at, updated_at";

fn endpoint_row<DB: Engine>(r: &Rec<DB>) -> StoreResult<WebhookEndpoint> {
    let events: String = r.try_get("events")?;
    Ok(WebhookEndpoint {
        id: r.try_get("id")?,
        program_id: r.try_get("program_id")?,
        url: r.try_get("url")?,
        events: Subscription::stored(&events).types().to_vec(),
        enabled: r.try_get("enabled")?,
        disabled_reason: r.try_get("disabled_reason")?,
        failing_since: r.try_get("failing_since")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// The body of a message: `{type, timestamp, data}`.
#[derive(Serialize)]
struct Envelope<T: Serialize> {
    #[serde(rename = "type")]
    kind: EventType,
    timestamp: String,
    data: T,
}

/// A lead or sale as the tracking events list shows it, with what the list leaves out.
#[derive(Serialize)]
struct Tracked {
    #[serde(flatten)]
    event: ListedEvent,
    program_id: i64,
    partner_id: Option<i64>,
    /// Sales only: a lead's listing has its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    customer_key: Option<Option<String>>,
    /// Sales only.
    #[serde(skip_serializing_if = "Option::is_none")]
    commission_id: Option<Option<i64>>,
    /// Sales only: the cents refunded so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    refunded_cents: Option<i64>,
}

fn vanished(subject: Subject) -> StoreError {
    StoreError::Other(anyhow::anyhow!(
        "the subject of a webhook event, {subject:?}, is not in the transaction"
    ))
}

fn envelope<T: Serialize>(kind: EventType, at: i64, data: T) -> StoreResult<String> {
    serde_json::to_string(&Envelope {
        kind,
        timestamp: iso(at),
        data,
    })
    .map_err(|e| StoreError::Other(e.into()))
}

/// A lead event as listed, with its program and partner.
async fn lead_data<DB: Engine>(conn: &mut DB::Connection, id: i64) -> StoreResult<Option<Tracked>> {
    let sql = format!(
        "SELECT l.id, l.lead_timestamp, l.click_id, l.created_at, l.customer_key, \
         l.session_id, l.page_url, {LEAD_CONVERTED}, l.program_id, lk.partner_id \
         FROM affiliate_lead_events l LEFT JOIN customers lk ON lk.id = l.customer_id \
         WHERE l.id = $1"
    );
    let Some(r) = stmt::<DB>(&sql).bind(id).fetch_optional(conn).await? else {
        return Ok(None);
    };
    Ok(Some(Tracked {
        event: ListedEvent::Lead(LeadEvent {
            id: r.try_get_at(0)?,
            timestamp: r.try_get_at(1)?,
            click_id: r.try_get_at(2)?,
            created_at: r.try_get_at(3)?,
            customer_key: r.try_get_at(4)?,
            session_id: r.try_get_at(5)?,
            page_url: r.try_get_at(6)?,
            converted: r.try_get_at(7)?,
            partner: None,
        }),
        program_id: r.try_get_at(8)?,
        partner_id: r.try_get_at(9)?,
        customer_key: None,
        commission_id: None,
        refunded_cents: None,
    }))
}

/// A sale event as listed, with its program, partner, customer key and commission.
async fn sale_data<DB: Engine>(conn: &mut DB::Connection, id: i64) -> StoreResult<Option<Tracked>> {
    let row = stmt::<DB>(
        "SELECT s.id, s.sale_date, s.click_id, s.created_at, s.amount_cents, s.currency, \
         s.sale_type, s.payment_status, s.processor_event_id, s.is_recurring, s.program_id, \
         s.partner_id, s.customer_key, (SELECT c.id FROM commissions c \
         WHERE c.sale_id = s.id AND c.kind = 'sale'), s.refunded_cents FROM affiliate_sale_events s \
         WHERE s.id = $1",
    )
    .bind(id)
    .fetch_optional(conn)
    .await?;
    let Some(r) = row else { return Ok(None) };
    Ok(Some(Tracked {
        event: ListedEvent::Conversion(ConversionEvent {
            id: r.try_get_at(0)?,
            timestamp: r.try_get_at(1)?,
            click_id: r.try_get_at(2)?,
            created_at: r.try_get_at(3)?,
            amount_cents: r.try_get_at(4)?,
            currency: r.try_get_at(5)?,
            sale_type: r.try_get_at(6)?,
            payment_status: r.try_get_at(7)?,
            processor_event_id: r.try_get_at(8)?,
            is_recurring: r.try_get_at(9)?,
            partner: None,
            refunded_cents: r.try_get_at(14)?,
        }),
        program_id: r.try_get_at(10)?,
        partner_id: r.try_get_at(11)?,
        customer_key: Some(r.try_get_at(12)?),
        commission_id: Some(r.try_get_at(13)?),
        refunded_cents: Some(r.try_get_at(14)?),
    }))
}

/// The body of `event`: its subject as the management API shows it, read in the
/// transaction that changed it, at `at`.
async fn render<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    at: i64,
    event: Event,
) -> StoreResult<String> {
    let missing = || vanished(event.subject);
    match event.subject {
        Subject::Lead(id) => {
            let data = lead_data::<DB>(conn, id).await?.ok_or_else(missing)?;
            envelope(event.kind, at, data)
        }
        Subject::Sale(id) => {
            let data = sale_data::<DB>(conn, id).await?.ok_or_else(missing)?;
            envelope(event.kind, at, data)
        }
        Subject::Commission(id) => {
            let data = commission_by_id::<DB>(conn, id, at)
                .await?
                .ok_or_else(missing)?;
            envelope(event.kind, at, data)
        }
        Subject::ProgramPartner(partner_id) => {
            let data = program_partner_row::<DB>(conn, program_id, partner_id)
                .await?
                .ok_or_else(missing)?;
            envelope(event.kind, at, data)
        }
        Subject::Payout(id) => {
            let data = payout_with_items::<DB>(conn, id)
                .await?
                .ok_or_else(missing)?;
            envelope(event.kind, at, data)
        }
    }
}

/// The programs among `program_ids` with an enabled endpoint: the set-based sale
/// statements ask once per batch, so that a batch of programs without webhooks pays one
/// small query.
pub async fn programs_with_endpoints<DB: Engine>(
    conn: &mut DB::Connection,
    program_ids: &[i64],
) -> StoreResult<Vec<i64>> {
    if program_ids.is_empty() {
        return Ok(Vec::new());
    }
    // Ids of the store's own rows, written as numbers.
    let list: Vec<String> = program_ids.iter().map(i64::to_string).collect();
    let sql = format!(
        "SELECT DISTINCT program_id FROM webhook_endpoints WHERE enabled \
         AND program_id IN ({})",
        list.join(", ")
    );
    Ok(stmt::<DB>(&sql).scalar_all(conn).await?)
}

/// The outbox write of [`WebhookTx::record_events`], on any connection in a write
/// transaction.
pub async fn record_events<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    at: i64,
    events: &[Event],
) -> StoreResult<()> {
    if events.is_empty() {
        return Ok(());
    }
    let rows =
        stmt::<DB>("SELECT id, events FROM webhook_endpoints WHERE program_id = $1 AND enabled")
            .bind(program_id)
            .fetch_all(&mut *conn)
            .await?;
    if rows.is_empty() {
        return Ok(());
    }
    let endpoints: Vec<(i64, Subscription)> = rows
        .iter()
        .map(|r| {
            let events: String = r.try_get_at(1)?;
            Ok((r.try_get_at(0)?, Subscription::stored(&events)))
        })
        .collect::<StoreResult<_>>()?;
    for event in events {
        let targets: Vec<i64> = endpoints
            .iter()
            .filter(|(_, s)| s.includes(event.kind))
            .map(|(id, _)| *id)
            .collect();
        if targets.is_empty() {
            continue;
        }
        let payload = render::<DB>(conn, program_id, at, *event).await?;
        let message_id = new_message_id();
        let sql = format!(
            "INSERT INTO webhook_deliveries (endpoint_id, message_id, event_type, payload, \
             next_attempt_at, created_at, updated_at) VALUES {}",
            DB::values(targets.len(), 7, 1)
        );
        let mut insert = stmt::<DB>(&sql);
        for endpoint_id in targets {
            insert = insert
                .bind(endpoint_id)
                .bind(message_id.as_str())
                .bind(event.kind.as_str())
                .bind(payload.as_str())
                .bind(at)
                .bind(at)
                .bind(at);
        }
        insert.execute(conn).await?;
    }
    Ok(())
}

/// The messages of the sales a batch recorded set-based (`outcomes` in the order of
/// `sales`), the same as their flow writes.
pub async fn record_sales<DB: Engine>(
    conn: &mut DB::Connection,
    sales: &[&NewSale],
    outcomes: &[Option<SaleOutcome>],
) -> StoreResult<()> {
    let mut programs: Vec<i64> = sales
        .iter()
        .zip(outcomes)
        .filter(|(_, o)| o.is_some())
        .map(|(s, _)| s.program.id)
        .collect();
    programs.sort_unstable();
    programs.dedup();
    let with_endpoints = programs_with_endpoints::<DB>(conn, &programs).await?;
    if with_endpoints.is_empty() {
        return Ok(());
    }
    for (s, outcome) in sales.iter().zip(outcomes) {
        if let Some(o) = outcome
            .as_ref()
            .filter(|_| with_endpoints.contains(&s.program.id))
        {
            record_events::<DB>(conn, s.program.id, s.at, &sale_recorded(o)).await?;
        }
    }
    Ok(())
}

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
    async fn create_endpoint(&self, e: &NewEndpoint, at: i64) -> StoreResult<WebhookEndpoint> {
        let conn = &mut *self.write.acquire().await?;
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
            .fetch_one(conn)
            .await?;
        endpoint_row(&row)
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
