//! The statements of outbound webhooks: endpoints and the delivery log (on the pools,
//! `endpoints`), the outbox and the delivery worker's claims and attempts (on the
//! committer's transaction, `tx`), and the messages the outbox holds (`messages`).
//! [`record_events`] is also called by the engines' set-based sale statements, so that a
//! sale recorded with its batch writes the same messages as one recorded by its flow.

mod endpoints;
mod messages;
mod tx;

pub use messages::{programs_with_endpoints, record_events, record_sales};

use super::engine::{Engine, Rec};
use crate::error::StoreResult;
use crate::webhooks::WebhookEndpoint;
use reftrack_domain::webhooks::Subscription;

/// The columns of a [`WebhookEndpoint`], for [`endpoint_row`].
pub(super) const ENDPOINT_COLUMNS: &str = "id, program_id, url, events, enabled, disabled_reason, \
    failing_since, created_at, updated_at";

/// The endpoint a row of [`ENDPOINT_COLUMNS`] holds.
pub(super) fn endpoint_row<DB: Engine>(r: &Rec<DB>) -> StoreResult<WebhookEndpoint> {
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
