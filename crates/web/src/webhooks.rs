//! Payment-processor webhooks: `POST /api/webhooks/stripe/:programId`.

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::error::{Error, ErrorBody, Result};
use super::extract::PathParams;
use super::AppState;
use reftrack_domain::stripe::{parse_event, verify_signature};

/// Stripe sends events of up to a few hundred KiB (invoices with many lines).
const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// Routes of the webhook receivers.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(stripe))
        .layer(DefaultBodyLimit::max(MAX_EVENT_BYTES))
}

/// The answer to a verified event.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookReceived {
    /// Always `true`.
    pub received: bool,
    /// What was done, e.g. `sale recorded`, `duplicate event: already processed`,
    /// `ignored: unhandled event type`.
    pub outcome: String,
}

/// Receive a Stripe webhook event.
///
/// Verifies the signature on the raw body with the program's `stripe_webhook_secret`,
/// then records what the event asks for, once per event id. Anything unverifiable is a
/// 400 and stores nothing; a verified event is answered 200 even when there is nothing to
/// do, so that Stripe does not retry it.
#[utoipa::path(
    post,
    path = "/stripe/{program_id}",
    tag = "webhooks",
    params(
        ("program_id" = i64, Path, description = "Program id"),
        ("Stripe-Signature" = String, Header, description = "`t=<unix time>,v1=<hex HMAC-SHA256>`"),
    ),
    request_body(content = Object, description = "A Stripe event, as Stripe sends it", content_type = "application/json"),
    responses(
        (status = 200, description = "Verified and processed (or a redelivery, or nothing to do)", body = WebhookReceived),
        (status = 400, description = "Missing or bad signature, stale timestamp, unknown program, program without a secret, or not an event", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
    ),
)]
async fn stripe(
    State(state): State<AppState>,
    PathParams(program_id): PathParams<i64>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<WebhookReceived>> {
    let program = state.app.program(program_id).await.map_err(|e| match e {
        reftrack_service::Error::NotFound(_) => Error::bad_request("Unknown program"),
        other => other.into(),
    })?;
    let secret = program
        .stripe_webhook_secret
        .as_deref()
        .ok_or_else(|| Error::bad_request("This program has no stripe_webhook_secret"))?;
    let signature = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok());
    let now = state.app.now_ms() / 1000;
    verify_signature(signature, &body, secret, now).map_err(|e| Error::bad_request(e.message()))?;
    crate::extract::refuse_nul_in_json(&body)?;
    let event = parse_event(&body).map_err(Error::BadRequest)?;
    let event_id = event.id.clone();
    let outcome = state.app.ingest_stripe_event(&program, event).await?;
    tracing::info!(program_id, event_id, outcome, "stripe webhook");
    Ok(Json(WebhookReceived {
        received: true,
        outcome,
    }))
}
