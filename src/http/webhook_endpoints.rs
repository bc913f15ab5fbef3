//! Outbound webhook endpoints, under `/api/admin`: a program's endpoints, their delivery
//! log and the manual resend. Handlers read the request and call
//! [`crate::app::webhooks`].

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::{management_endpoints, Manager};
use super::error::{ErrorBody, Result};
use super::extract::{read_list_query, JsonBody, PathParams};
use super::lists::PageQuery;
use super::AppState;
use crate::app::webhooks::{CreatedWebhook, WebhookBody, WebhookPatchBody};
use crate::app::Listed;
use crate::store::webhooks::{Delivery, WebhookEndpoint};

/// Routes of the webhook endpoints.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_webhook, list_webhooks))
        .routes(routes!(update_webhook, delete_webhook))
        .routes(routes!(list_deliveries))
        .routes(routes!(retry_delivery))
        .routes(routes!(test_webhook))
}

/// List a program's webhook endpoints (without their secrets).
#[utoipa::path(
    get,
    path = "/programs/{id}/webhooks",
    tag = "outbound webhooks",
    params(("id" = i64, Path, description = "Program id"), PageQuery),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "One page", body = Listed<WebhookEndpoint>),
        (status = 400, description = "Invalid limit or cursor", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
async fn list_webhooks(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<WebhookEndpoint>>> {
    let list: PageQuery = read_list_query(raw.as_deref())?;
    Ok(Json(s.app.list_webhooks(&caller, id, &list.page()).await?))
}

/// Delete an endpoint with its delivery log.
#[utoipa::path(
    delete,
    path = "/webhooks/{id}",
    tag = "outbound webhooks",
    params(("id" = i64, Path, description = "Webhook endpoint id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "Unknown endpoint", body = ErrorBody),
    ),
)]
async fn delete_webhook(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<StatusCode> {
    s.app.delete_webhook(&caller, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// List an endpoint's deliveries, one per message, newest first, with their attempts.
#[utoipa::path(
    get,
    path = "/webhooks/{id}/deliveries",
    tag = "outbound webhooks",
    params(("id" = i64, Path, description = "Webhook endpoint id"), PageQuery),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "One page", body = Listed<Delivery>),
        (status = 400, description = "Invalid limit or cursor", body = ErrorBody),
        (status = 404, description = "Unknown endpoint", body = ErrorBody),
    ),
)]
async fn list_deliveries(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<Delivery>>> {
    let list: PageQuery = read_list_query(raw.as_deref())?;
    Ok(Json(
        s.app.webhook_deliveries(&caller, id, &list.page()).await?,
    ))
}

management_endpoints! {
    tag = "outbound webhooks";

    /// Register an endpoint that is sent the program's events, signed by the Standard
    /// Webhooks scheme; the answer holds its secret, shown this once.
    post "/programs/{id}/webhooks"
        path(id: ("id" = i64, Path, description = "Program id"))
        body(b: JsonBody<WebhookBody>)
        => create_webhook -> 201 CreatedWebhook = create_webhook;
        responses(
            "The endpoint with its secret",
            400 "Invalid URL, a private target, or unknown event types",
            404 "Unknown program",
        );

    /// Change an endpoint's URL or event types, or disable or enable it.
    patch "/webhooks/{id}"
        path(id: ("id" = i64, Path, description = "Webhook endpoint id"))
        body(b: JsonBody<WebhookPatchBody>)
        => update_webhook -> 200 WebhookEndpoint = update_webhook;
        responses(
            "The endpoint",
            400 "Invalid URL, a private target, or unknown event types",
            404 "Unknown endpoint",
        );

    /// Send a delivery again now, with its message id, whatever its status.
    post "/webhooks/{id}/deliveries/{delivery_id}/retry"
        path(
            id: ("id" = i64, Path, description = "Webhook endpoint id"),
            delivery_id: ("delivery_id" = i64, Path, description = "Delivery id"),
        )
        => retry_delivery -> 202 Delivery = resend_delivery;
        responses(
            "Due now: the worker sends it at once",
            404 "Unknown endpoint or delivery",
            409 "An attempt is under way, or the endpoint is disabled",
        );

    /// Send the endpoint a test message now (type `webhook.test`, whatever types it
    /// receives), signed and logged like any other, to try a receiver.
    post "/webhooks/{id}/test"
        path(id: ("id" = i64, Path, description = "Webhook endpoint id"))
        => test_webhook -> 202 Delivery = send_test_webhook;
        responses(
            "Due now: the worker sends it at once",
            404 "Unknown endpoint",
            409 "The endpoint is disabled",
        );
}
