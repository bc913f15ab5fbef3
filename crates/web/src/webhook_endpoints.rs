//! Outbound webhook endpoints, under `/api/admin`: a program's endpoints, their delivery
//! log and the manual resend. Handlers read the request and call
//! [`reftrack_service::webhooks`].

use axum::extract::State;
use axum::http::StatusCode;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::{management_endpoints, Manager};
use super::error::{ErrorBody, Result};
use super::extract::{JsonBody, PathParams};
use super::lists::{management_lists, PageQuery};
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

management_lists! {
    tag = "outbound webhooks";

    /// List a program's webhook endpoints (without their secrets).
    get "/programs/{id}/webhooks"
        path(id: ("id" = i64, Path, description = "Program id"))
        query(PageQuery)
        => list_webhooks -> WebhookEndpoint = list_webhooks();
        responses("One page", 400 "Invalid limit or cursor", 404 "Unknown program");

    /// List an endpoint's deliveries, one per message, newest first, with their attempts.
    get "/webhooks/{id}/deliveries"
        path(id: ("id" = i64, Path, description = "Webhook endpoint id"))
        query(PageQuery)
        => list_deliveries -> Delivery = webhook_deliveries();
        responses("One page", 400 "Invalid limit or cursor", 404 "Unknown endpoint");
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

    /// Show an endpoint (without its secret): its URL, event types, and whether it is
    /// enabled.
    get "/webhooks/{id}"
        path(id: ("id" = i64, Path, description = "Webhook endpoint id"))
        => get_webhook -> 200 WebhookEndpoint = webhook;
        responses("The endpoint", 404 "Unknown endpoint");

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
