//! Outbound webhook endpoints, under `/api/admin`: a program's endpoints, their delivery
//! log and the manual resend. Handlers read the request and call
//! [`reftrack_service::webhooks`].

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::{accepted, created, Manager};
use super::error::{ErrorBody, Result};
use super::extract::{read_list_query, JsonBody, PathParams};
use super::paging::PageQuery;
use super::AppState;
use reftrack_service::webhooks::{CreatedWebhook, WebhookBody, WebhookPatchBody};
use reftrack_service::Listed;
use reftrack_store::webhooks::{Delivery, WebhookEndpoint};

/// Routes of the webhook endpoints.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_webhook, list_webhooks))
        .routes(routes!(get_webhook, update_webhook, delete_webhook))
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

/// Register an endpoint that is sent the program's events, signed by the Standard
/// Webhooks scheme; the answer holds its secret, shown this once.
#[utoipa::path(
    post,
    path = "/programs/{id}/webhooks",
    tag = "outbound webhooks",
    request_body = WebhookBody,
    params(("id" = i64, Path, description = "Program id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 201, description = "The endpoint with its secret", body = CreatedWebhook),
        (status = 400, description = "Invalid URL, a private target, or unknown event types", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
async fn create_webhook(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<WebhookBody>,
) -> Result<(StatusCode, Json<CreatedWebhook>)> {
    Ok(created(s.app.create_webhook(&caller, id, body).await?))
}

/// Show an endpoint (without its secret): its URL, event types, and whether it is
/// enabled.
#[utoipa::path(
    get,
    path = "/webhooks/{id}",
    tag = "outbound webhooks",
    params(("id" = i64, Path, description = "Webhook endpoint id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The endpoint", body = WebhookEndpoint),
        (status = 404, description = "Unknown endpoint", body = ErrorBody),
    ),
)]
async fn get_webhook(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<WebhookEndpoint>> {
    Ok(Json(s.app.webhook(&caller, id).await?))
}

/// Change an endpoint's URL or event types, or disable or enable it.
#[utoipa::path(
    patch,
    path = "/webhooks/{id}",
    tag = "outbound webhooks",
    request_body = WebhookPatchBody,
    params(("id" = i64, Path, description = "Webhook endpoint id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The endpoint", body = WebhookEndpoint),
        (status = 400, description = "Invalid URL, a private target, or unknown event types", body = ErrorBody),
        (status = 404, description = "Unknown endpoint", body = ErrorBody),
    ),
)]
async fn update_webhook(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<WebhookPatchBody>,
) -> Result<Json<WebhookEndpoint>> {
    Ok(Json(s.app.update_webhook(&caller, id, body).await?))
}

/// Send a delivery again now, with its message id, whatever its status.
#[utoipa::path(
    post,
    path = "/webhooks/{id}/deliveries/{delivery_id}/retry",
    tag = "outbound webhooks",
    params(
        ("id" = i64, Path, description = "Webhook endpoint id"),
        ("delivery_id" = i64, Path, description = "Delivery id"),
    ),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 202, description = "Due now: the worker sends it at once", body = Delivery),
        (status = 404, description = "Unknown endpoint or delivery", body = ErrorBody),
        (status = 409, description = "An attempt is under way, or the endpoint is disabled", body = ErrorBody),
    ),
)]
async fn retry_delivery(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams((id, delivery_id)): PathParams<(i64, i64)>,
) -> Result<(StatusCode, Json<Delivery>)> {
    Ok(accepted(
        s.app.resend_delivery(&caller, id, delivery_id).await?,
    ))
}

/// Send the endpoint a test message now (type `webhook.test`, whatever types it
/// receives), signed and logged like any other, to try a receiver.
#[utoipa::path(
    post,
    path = "/webhooks/{id}/test",
    tag = "outbound webhooks",
    params(("id" = i64, Path, description = "Webhook endpoint id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 202, description = "Due now: the worker sends it at once", body = Delivery),
        (status = 404, description = "Unknown endpoint", body = ErrorBody),
        (status = 409, description = "The endpoint is disabled", body = ErrorBody),
    ),
)]
async fn test_webhook(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<(StatusCode, Json<Delivery>)> {
    Ok(accepted(s.app.send_test_webhook(&caller, id).await?))
}
