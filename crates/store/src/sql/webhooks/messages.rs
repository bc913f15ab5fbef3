//! The messages of the outbox: the bodies of events, rendered in the transaction that
//! changed their subjects, and their rows, one per subscribed endpoint.

use serde::Serialize;

use crate::dashboard_model::{ConversionEvent, LeadEvent, ListedEvent};
use crate::error::{StoreError, StoreResult};
use crate::model::{NewSale, SaleOutcome};
use crate::sql::engine::{stmt, Engine};
use crate::sql::management::program_partner_row;
use crate::sql::payouts::{commission_by_id, payout_with_items};
use crate::sql::reports::LEAD_CONVERTED;
use crate::webhooks::{sale_recorded, Event, Subject};
use reftrack_domain::time::iso;
use reftrack_domain::webhooks::{new_message_id, EventType, Subscription};

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
         WHERE c.sale_id = s.id AND c.kind = 'sale'), s.refunded_cents, \
         s.converted_amount_cents, s.exchange_rate, s.rate_date, s.awaiting_rate \
         FROM affiliate_sale_events s \
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
            converted_amount_cents: r.try_get_at(15)?,
            exchange_rate: r.try_get_at(16)?,
            rate_date: r.try_get_at(17)?,
            awaiting_rate: r.try_get_at(18)?,
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

/// The outbox write of [`WebhookTx::record_events`](crate::WebhookTx::record_events), on any connection in a write
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
