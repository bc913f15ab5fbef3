//! The storage interface of outbound webhooks: [`WebhookStore`] (endpoints and the
//! delivery log, on the pools) and [`WebhookTx`] (the outbox written by the flows, and
//! the claims and attempts of the delivery worker, in the group committer's
//! transaction). [`super::Store`] and [`super::tx::Tx`] include them.
//!
//! The outbox holds one row per message and subscribed endpoint (`webhook_deliveries`):
//! the message's id (the `webhook-id`, the same for every endpoint and every attempt),
//! type and body, written in the transaction of the change it reports.

use async_trait::async_trait;
use serde::Serialize;

use super::error::StoreResult;
use super::model::{iso_ms, iso_ms_opt, SaleOutcome};
use super::payout_model::Page;
use reftrack_domain::status::DeliveryStatus;
use reftrack_domain::webhooks::EventType;

/// A webhook endpoint of a program, as the management API shows it (never its secret,
/// which only its creation answers).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WebhookEndpoint {
    pub id: i64,
    pub program_id: i64,
    pub url: String,
    /// The event types it receives.
    pub events: Vec<EventType>,
    /// Whether messages are written and sent to it.
    pub enabled: bool,
    /// Why it was disabled, when Reftrack disabled it.
    pub disabled_reason: Option<String>,
    /// Since when every attempt to it has failed; null after a success.
    #[serde(serialize_with = "iso_ms_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub failing_since: Option<i64>,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: i64,
}

/// A new endpoint, validated.
#[derive(Debug, Clone)]
pub struct NewEndpoint {
    pub program_id: i64,
    pub url: String,
    pub secret: String,
    /// The stored subscription ([`reftrack_domain::webhooks::Subscription::to_stored`]).
    pub events: String,
}

/// A change to an endpoint: `None` leaves a field as it is. Enabling it clears its
/// failure record.
#[derive(Debug, Clone, Default)]
pub struct EndpointPatch {
    pub url: Option<String>,
    pub events: Option<String>,
    pub enabled: Option<bool>,
}

/// One attempt of a delivery.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Attempt {
    /// When it started.
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub at: i64,
    /// The endpoint's HTTP status, if it answered.
    pub status_code: Option<i64>,
    /// Why it failed, if it did: the status, a timeout, a refused or broken connection.
    pub error: Option<String>,
}

/// One message to one endpoint, with its attempts, oldest first.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Delivery {
    pub id: i64,
    /// The `webhook-id` it is sent with, on every attempt.
    pub message_id: String,
    /// The event type.
    #[serde(rename = "type")]
    pub event_type: String,
    pub status: DeliveryStatus,
    /// When it is next tried; null once delivered or failed.
    #[serde(serialize_with = "iso_ms_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_attempt_at: Option<i64>,
    pub attempts: Vec<Attempt>,
}

/// What a request to send a delivery again found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resend {
    /// It is due now.
    Due,
    /// No such delivery of that endpoint.
    Missing,
    /// An attempt of it is under way.
    InFlight,
}

/// A delivery claimed for one attempt by the process that claimed it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClaimedDelivery {
    pub id: i64,
    pub endpoint_id: i64,
    pub url: String,
    pub secret: String,
    pub message_id: String,
    pub payload: String,
    /// Attempts made before this one.
    pub attempts: i64,
    /// What the claim wrote, to be matched by the attempt's record.
    pub lease_token: i64,
}

/// What one attempt came to, and what follows for its delivery.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    pub delivery_id: i64,
    pub lease_token: i64,
    pub at: i64,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    /// The delivery's status after it.
    pub status: DeliveryStatus,
    /// When it is tried next, while pending.
    pub next_attempt_at: Option<i64>,
}

/// What a batch of attempts says about one endpoint.
#[derive(Debug, Clone)]
pub struct EndpointHealth {
    pub endpoint_id: i64,
    /// Whether an attempt succeeded; the failure record then starts again at
    /// `failing_since`.
    pub succeeded: bool,
    /// The first failure after the last success of the batch, if any.
    pub failing_since: Option<i64>,
    /// When it failed in the batch: disable it, with this reason, if it has been
    /// failing since this instant or before.
    pub disable: Option<(i64, String)>,
}

/// The record a change is about, whose management-API form an event carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// A lead event, as the tracking events list shows it.
    Lead(i64),
    /// A sale event, as the tracking events list shows it.
    Sale(i64),
    /// A commission row.
    Commission(i64),
    /// The program-partner row of this partner.
    ProgramPartner(i64),
    /// A payout with its items.
    Payout(i64),
}

/// One change to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub kind: EventType,
    pub subject: Subject,
}

impl Event {
    /// `kind` about `subject`.
    pub fn new(kind: EventType, subject: Subject) -> Self {
        Event { kind, subject }
    }
}

/// What a recorded sale reports: `sale.created`, and `commission.created` when it earned
/// one. Its flow and the set-based statements of a batch both write these.
pub fn sale_recorded(outcome: &SaleOutcome) -> Vec<Event> {
    let mut events = vec![Event::new(
        EventType::SaleCreated,
        Subject::Sale(outcome.sale_id),
    )];
    if let Some(id) = outcome.commission_id {
        events.push(Event::new(
            EventType::CommissionCreated,
            Subject::Commission(id),
        ));
    }
    events
}

/// Endpoints and the delivery log.
#[async_trait]
pub trait WebhookStore: Send + Sync {
    /// Creates an endpoint, with the audit entries `audit` makes of it;
    /// `NotFound("program")`.
    async fn create_endpoint(
        &self,
        e: &NewEndpoint,
        at: i64,
        audit: crate::audit::AuditOf<'_, WebhookEndpoint>,
    ) -> StoreResult<WebhookEndpoint>;
    /// One page of a program's endpoints, newest first.
    async fn endpoints(&self, program_id: i64, page: Page) -> StoreResult<Vec<WebhookEndpoint>>;
    /// One endpoint.
    async fn endpoint(&self, id: i64) -> StoreResult<Option<WebhookEndpoint>>;
    /// One page of an endpoint's deliveries with their attempts, newest first.
    async fn deliveries(&self, endpoint_id: i64, page: Page) -> StoreResult<Vec<Delivery>>;
    /// One delivery of an endpoint with its attempts.
    async fn delivery(&self, endpoint_id: i64, delivery_id: i64) -> StoreResult<Option<Delivery>>;
    /// Makes a delivery of an endpoint due at `now`, whatever its status, unless an
    /// attempt of it is under way.
    async fn resend(&self, endpoint_id: i64, delivery_id: i64, now: i64) -> StoreResult<Resend>;
    /// Whether a delivery to an enabled endpoint is due at `now` and not reserved.
    async fn delivery_due(&self, now: i64) -> StoreResult<bool>;
    /// How many deliveries wait to be sent (the outbox's backlog, for the metrics).
    async fn pending_deliveries(&self) -> StoreResult<i64>;
}

/// The outbox and the worker's statements, in the write transaction.
#[async_trait]
pub trait WebhookTx: Send {
    /// Writes a message of each event to every enabled endpoint of the program that
    /// subscribes to its type, its body the subject as this transaction sees it; nothing
    /// when none does.
    async fn record_events(
        &mut self,
        program_id: i64,
        at: i64,
        events: &[Event],
    ) -> StoreResult<()>;
    /// Writes one message of type `event_type` and body `payload` to an endpoint, due
    /// at `at`, whatever the types it receives; its delivery id.
    async fn insert_delivery(
        &mut self,
        endpoint_id: i64,
        event_type: &str,
        payload: &str,
        at: i64,
    ) -> StoreResult<i64>;
    /// One endpoint as this transaction sees it, locked against other changes until the
    /// transaction ends (what a change of it changes, for the audit log).
    async fn endpoint_locked(&mut self, id: i64) -> StoreResult<Option<WebhookEndpoint>>;
    /// Changes an endpoint; `None` when there is none. Disabling it takes its pending
    /// deliveries off the schedule; enabling it makes them due at `at`.
    async fn update_endpoint(
        &mut self,
        id: i64,
        patch: &EndpointPatch,
        at: i64,
    ) -> StoreResult<Option<WebhookEndpoint>>;
    /// Deletes an endpoint with its deliveries and their attempts; false when there was
    /// none.
    async fn delete_endpoint(&mut self, id: i64) -> StoreResult<bool>;
    /// Reserves, until `lease_until` and marked with `token`, up to `limit` deliveries
    /// due at `now` to enabled endpoints that no process has reserved, oldest due first:
    /// at most `per_endpoint` of one endpoint, counting those of `in_flight` (endpoint,
    /// deliveries) the caller is sending already.
    async fn claim_deliveries(
        &mut self,
        now: i64,
        lease_until: i64,
        token: i64,
        limit: i64,
        per_endpoint: i64,
        in_flight: &[(i64, i64)],
    ) -> StoreResult<Vec<ClaimedDelivery>>;
    /// Logs attempts and moves their deliveries on, each only while the claim it was
    /// made under still holds; then updates the endpoints' failure records.
    async fn record_attempts(
        &mut self,
        attempts: &[AttemptRecord],
        endpoints: &[EndpointHealth],
        at: i64,
    ) -> StoreResult<()>;
}
