//! HTTP surfaces, one module each, assembled by [`router`].

pub mod admin;
pub mod bearer;
pub mod client_ip;
pub mod connections;
pub mod console;
pub mod coupons;
pub mod dashboard;
pub mod downloads;
pub mod error;
pub mod extract;
pub mod fields;
pub mod metrics;
pub mod openapi;
pub mod origin;
pub mod outage;
pub mod pages;
pub mod paging;
pub mod partner;
pub mod payouts;
pub mod portal;
pub mod rate_limit;
pub mod redirect;
pub mod request_id;
pub mod service;
pub mod session;
pub mod state;
pub mod track;
pub mod tracker;
pub mod two_factor;
pub mod webhook_endpoints;
pub mod webhook_messages;
pub mod webhooks;

use axum::extract::{DefaultBodyLimit, Request};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower::util::MapRequestLayer;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use utoipa_axum::router::OpenApiRouter;

pub use error::{Error, ErrorBody};
pub use state::AppState;

/// The routes of every surface with their OpenAPI description, before state and
/// middleware. The document and the router come from the same declarations, so they
/// cannot drift apart.
pub fn api() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    // Legacy alias of the tracking writes, kept for older trackers.
    let mut legacy = OpenApiRouter::new().nest("/api/tracking", track::router());
    openapi::deprecate(legacy.get_openapi_mut());
    let (router, doc) = OpenApiRouter::with_openapi(openapi::base())
        .merge(service::router())
        .merge(tracker::router())
        .nest("/api/v1/track", track::router())
        .merge(legacy)
        .nest("/api/tracking", dashboard::router())
        .nest(
            "/api/admin",
            admin::router()
                .merge(payouts::router())
                .merge(coupons::router())
                .merge(partner::admin_router())
                .merge(webhook_endpoints::router()),
        )
        .nest("/api/partner", partner::router())
        .nest("/api/auth", session::router())
        .nest("/api/webhooks", webhooks::router())
        .merge(redirect::router())
        .split_for_parts();
    (router, openapi::finish(doc))
}

/// The OpenAPI document of the service.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    api().1
}

/// The whole service: every surface, `/openapi.json` and `/docs`, and the middleware
/// (request ids and their log span outermost, see [`request_id`]).
pub fn router(state: AppState) -> Router {
    let (routes, doc) = api();
    let scrape = match &state.metrics {
        Some(m) if state.metrics_route => metrics::route(m.clone()),
        _ => Router::new(),
    };
    let router = routes
        .merge(portal::router())
        .merge(console::router())
        .merge(pages::assets::router())
        .route_layer(middleware::from_fn(outage::time_limit))
        .merge(openapi::router(&doc))
        .merge(scrape)
        .fallback(|| async { Error::not_found("Not found") })
        .layer(middleware::from_fn(json_errors))
        .layer(middleware::from_fn_with_state(state.clone(), outage::guard))
        .layer(DefaultBodyLimit::max(extract::MAX_BODY_BYTES))
        .layer(CatchPanicLayer::custom(|_| {
            Error::Internal("Internal server error", anyhow::anyhow!("handler panicked"))
                .into_response()
        }))
        .layer(request_id::trace())
        .layer(PropagateRequestIdLayer::new(request_id::X_REQUEST_ID))
        .layer(SetRequestIdLayer::new(
            request_id::X_REQUEST_ID,
            MakeRequestUuid,
        ))
        .layer(MapRequestLayer::new(request_id::drop_unfit))
        // The route layers of the rate limits read the state from here.
        .layer(axum::Extension(state.clone()));
    // Outermost, so that every answer is counted as the client got it; absent when
    // metrics are off, so that requests then pay nothing for them.
    let router = match &state.metrics {
        Some(m) => router.layer(middleware::from_fn_with_state(m.clone(), metrics::count)),
        None => router,
    };
    router.with_state(state)
}

/// Turns any error response that is not already JSON (axum's own 405s and rejections)
/// into `{"error": …}`, so that clients always get the same shape; the portal's HTML
/// error pages stay pages.
async fn json_errors(req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let status = response.status();
    let is_json = response.headers().get(CONTENT_TYPE).is_some_and(|v| {
        v.as_bytes().starts_with(b"application/json") || v.as_bytes().starts_with(b"text/html")
    });
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let error = match status {
        StatusCode::METHOD_NOT_ALLOWED => Error::MethodNotAllowed,
        StatusCode::PAYLOAD_TOO_LARGE => Error::PayloadTooLarge,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => Error::UnsupportedMediaType,
        StatusCode::NOT_FOUND => Error::not_found("Not found"),
        s if s.is_client_error() => {
            Error::bad_request(s.canonical_reason().unwrap_or("Bad request"))
        }
        _ => Error::Internal(
            "Internal server error",
            anyhow::anyhow!("non-JSON {status} response"),
        ),
    };
    let mut fixed = error.into_response();
    *fixed.status_mut() = status;
    for (name, value) in response.headers() {
        if name != CONTENT_TYPE && name != CONTENT_LENGTH {
            fixed.headers_mut().insert(name, value.clone());
        }
    }
    fixed
}
