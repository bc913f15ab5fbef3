//! Redirect links: `GET /r/{short_link}` (and `HEAD`) send a visitor to the link's
//! destination, recording the visit as a click ([`reftrack_service::tracking::redirect`]).
//!
//! A page, not an API: no CORS (a browser navigates here), and the answers are a `302`
//! or a small HTML page. A `HEAD`, a crawler or link-preview fetcher (by its user agent),
//! and a client over the click API's per-IP rate limit are sent on without a click.
//! docs/links-and-coupons.md says where a visitor is sent.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION, REFERER, USER_AGENT};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::fields::{truncate, MAX_TEXT_LEN};
use super::rate_limit::Limited;
use super::track::{Caller, MAX_USER_AGENT_LEN};
use super::AppState;
use reftrack_domain::user_agent::is_bot;
use reftrack_service::tracking::redirect::Visit;
use reftrack_service::Error;
use reftrack_store::ClickDetails;

/// The route of redirect links.
pub fn router() -> OpenApiRouter<AppState> {
    // A `get` route answers `HEAD` with the same handler, without the body.
    OpenApiRouter::new().routes(routes!(follow))
}

/// The page of a link that leads nowhere.
const NOT_FOUND_PAGE: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"robots\" content=\"noindex\"><title>Link not found</title></head>\
<body style=\"font-family: system-ui, sans-serif; max-width: 32rem; margin: 4rem auto; \
padding: 0 1rem; line-height: 1.5\"><h1>Link not found</h1>\
<p>This link does not exist or no longer leads anywhere.</p></body></html>\n";

/// The page of a link that cannot be followed now.
const UNAVAILABLE_PAGE: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"robots\" content=\"noindex\"><title>Try again soon</title></head>\
<body style=\"font-family: system-ui, sans-serif; max-width: 32rem; margin: 4rem auto; \
padding: 0 1rem; line-height: 1.5\"><h1>Try again soon</h1>\
<p>This link cannot be followed right now. Please try again in a moment.</p></body></html>\n";

/// An HTML page with `status`, never cached.
fn page(status: StatusCode, html: &'static str) -> Response {
    let mut r = (status, html).into_response();
    let h = r.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-robots-tag", HeaderValue::from_static("noindex"));
    r
}

/// Whether the visit counts a click: a `GET` from a person's browser, within the click
/// API's per-IP rate limit (a client over it is still sent on).
fn counts(state: &AppState, method: &Method, caller: &Caller, user_agent: &str) -> bool {
    if method != Method::GET || is_bot(user_agent) {
        return false;
    }
    match caller.client_ip(state) {
        Some(ip) => state.limits.check(Limited::Click, ip).is_ok(),
        None => true,
    }
}

/// The header that tells whether a click was committed when it was answered.
pub const CLICK_STATE: HeaderName = HeaderName::from_static("reftrack-click");

/// The value of [`CLICK_STATE`].
pub fn click_state(committed: bool) -> HeaderValue {
    HeaderValue::from_static(if committed { "committed" } else { "queued" })
}

/// Follow a redirect link: 302 to its destination with `aff` (and, for a counted visit,
/// `rt_click` and `rt_window`), or an HTML 404 page.
///
/// A `HEAD`, a crawler or link-preview fetcher and a client over the click rate limit are
/// sent on without a click. The query string of the visit is passed on to the destination.
#[utoipa::path(
    get,
    path = "/r/{short_link}",
    tag = "redirects",
    params(("short_link" = String, Path, description = "The link's short_link")),
    responses(
        (status = 302, description = "To the link's destination (or its program's)", headers(("Location" = String, description = "The destination with aff, rt_click and rt_window"), ("Reftrack-Click" = String, description = "When the visit counted a click: `committed`, or `queued` when the redirect's wait for the commit ran out first (the click commits with its batch)"))),
        (status = 404, description = "Unknown or inactive link, or one without a destination: an HTML page", content_type = "text/html", body = String),
        (status = 503, description = "The database cannot answer now: an HTML page", content_type = "text/html", body = String),
    ),
)]
async fn follow(
    State(state): State<AppState>,
    method: Method,
    caller: Caller,
    short_link: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Response {
    // No short link holds a NUL character, and the database is not asked for one.
    let Some(short_link) = short_link
        .ok()
        .map(|Path(s)| s)
        .filter(|s| !s.contains('\0'))
    else {
        return page(StatusCode::NOT_FOUND, NOT_FOUND_PAGE);
    };
    let user_agent = caller
        .header(USER_AGENT, MAX_USER_AGENT_LEN)
        .unwrap_or_default();
    let click = counts(&state, &method, &caller, &user_agent).then(|| ClickDetails {
        referrer_url: caller.header(REFERER, MAX_TEXT_LEN),
        ..caller.derived_details(&state, &user_agent)
    });
    let visit = Visit {
        short_link: truncate(&short_link, 255),
        query,
        click,
    };
    match state.app.follow_link(visit).await {
        Ok(Some(to)) => match HeaderValue::try_from(to.location) {
            Ok(location) => {
                let mut r = StatusCode::FOUND.into_response();
                let h = r.headers_mut();
                h.insert(LOCATION, location);
                // Every visit is a request of its own, so that each one counts.
                h.insert(CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
                if to.click_id.is_some() {
                    h.insert(CLICK_STATE, click_state(to.committed));
                }
                r
            }
            Err(_) => page(StatusCode::NOT_FOUND, NOT_FOUND_PAGE),
        },
        Ok(None) => page(StatusCode::NOT_FOUND, NOT_FOUND_PAGE),
        Err(Error::Unavailable(e)) => {
            tracing::warn!(error = %e, "redirect link lookup failed");
            page(StatusCode::SERVICE_UNAVAILABLE, UNAVAILABLE_PAGE)
        }
        Err(e) => {
            tracing::error!(error = ?e, "redirect failed");
            page(StatusCode::INTERNAL_SERVER_ERROR, UNAVAILABLE_PAGE)
        }
    }
}
