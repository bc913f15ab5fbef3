//! The tracking API: `/api/v1/track/{click,lead,sale,refund}` and the legacy alias under
//! `/api/tracking/`. Each handler reads its request and answers; the use case is the
//! service layer's ([`reftrack_service::tracking`]).
//!
//! `requests` and `responses` hold the bodies, `caller` who calls, `handlers` the
//! four endpoints and `cors` the browser routes' CORS.

use axum::middleware;
use axum::routing::options;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

mod caller;
mod cors;
mod handlers;
mod requests;
mod responses;

pub(crate) use caller::MAX_USER_AGENT_LEN;
pub use caller::{ApiKey, Caller};
pub use requests::{AdditionalData, ClickRequest, LeadRequest, RefundRequest, SaleRequest};
pub use responses::{
    ClickRefused, ClickResponse, ClickTracked, LeadResponse, RefundResponse, SaleResponse,
    SaleTracked, TestModeData, TestModeResponse, Tracked,
};

use super::{rate_limit, AppState};
use cors::{browser_cors, preflight};

/// Routes of the tracking API, mounted under `/api/v1/track` and `/api/tracking`.
pub fn router() -> OpenApiRouter<AppState> {
    let clicks = OpenApiRouter::new()
        .routes(routes!(handlers::click))
        .route("/click", options(preflight))
        .route_layer(middleware::from_fn(rate_limit::clicks));
    let leads = OpenApiRouter::new()
        .routes(routes!(handlers::lead))
        .route("/lead", options(preflight))
        .route_layer(middleware::from_fn(rate_limit::browser_leads));
    let browser = clicks.merge(leads).layer(middleware::from_fn(browser_cors));
    let server = OpenApiRouter::new()
        .routes(routes!(handlers::sale))
        .routes(routes!(handlers::refund));
    browser.merge(server)
}
