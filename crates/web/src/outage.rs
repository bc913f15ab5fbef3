//! Database outages: while the database is unreachable, answer at once with 503 instead
//! of letting every request wait for a connection; probe until it is back; and bound
//! the time of every request ([`time_limit`]).
//!
//! The first request that meets the outage (a failed query, a pool timeout, SQLite
//! staying busy) answers 503 and marks the database down. From then on requests get
//! the 503 immediately, and a background probe pings the database every
//! [`PROBE_INTERVAL`]; the first answer marks it up again, with no restart.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header::RETRY_AFTER, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::error::{DatabaseUnavailable, Error, ErrorBody};
use super::AppState;
use reftrack_service::App;

/// Longest a request may take before it is answered 503; no request hangs past it.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// The limit of the requests that may do long work, [`LONG_REQUESTS`]: as long as the
/// group committer gives a long write.
pub const LONG_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// The routes (method, matched path) of long work: creating a payout takes every due
/// commission of a program, which on a large program is seconds of work.
/// `tests/api/openapi.rs` checks that each is a route of the API.
pub const LONG_REQUESTS: &[(&str, &str)] = &[("POST", "/api/admin/programs/{id}/payouts")];
/// How often a database marked down is probed.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(500);
/// How long one probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Whether the database is known to be down.
#[derive(Debug, Default)]
pub struct DbHealth {
    down: AtomicBool,
}

impl DbHealth {
    /// Whether requests are answered 503 without trying the database.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }

    /// Marks the database down and starts probing it, unless a probe already runs.
    pub fn mark_down(self: &Arc<Self>, app: Arc<App>) {
        if self.down.swap(true, Ordering::SeqCst) {
            return;
        }
        tracing::warn!("database unavailable: answering 503 until it answers again");
        let health = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(PROBE_INTERVAL).await;
                if let Ok(Ok(())) = tokio::time::timeout(PROBE_TIMEOUT, app.ping()).await {
                    health.down.store(false, Ordering::SeqCst);
                    tracing::info!("database answers again");
                    return;
                }
            }
        });
    }
}

/// Paths that never touch the database.
fn needs_no_database(path: &str) -> bool {
    matches!(
        path,
        "/healthz" | "/tracker.js" | "/openapi.json" | "/docs" | super::metrics::PATH
    )
}

/// The 503 of a request refused while the database is down; not logged, since there
/// is one per request.
fn fail_fast() -> Response {
    let mut response = (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(ErrorBody {
            error: Error::Unavailable(anyhow::anyhow!("database down")).to_string(),
        }),
    )
        .into_response();
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// Route layer: bounds each request by [`REQUEST_TIMEOUT`], or [`LONG_REQUEST_TIMEOUT`]
/// on the routes of [`LONG_REQUESTS`] (it runs after routing, so it knows the route).
pub async fn time_limit(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    let long = LONG_REQUESTS
        .iter()
        .any(|(method, path)| req.method().as_str() == *method && route == Some(*path));
    let limit = if long {
        LONG_REQUEST_TIMEOUT
    } else {
        REQUEST_TIMEOUT
    };
    let Ok(response) = tokio::time::timeout(limit, next.run(req)).await else {
        // Not a sign of an outage by itself (a client may send its body slowly), so the
        // database is not marked down; a stuck write batch answers 503 sooner anyway.
        let mut response = Error::Unavailable(anyhow::anyhow!(
            "request not answered within {} s",
            limit.as_secs()
        ))
        .into_response();
        response.extensions_mut().remove::<DatabaseUnavailable>();
        return response;
    };
    response
}

/// Middleware: fails fast while the database is down and marks the database down when a
/// request met an outage.
pub async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if needs_no_database(req.uri().path()) {
        return next.run(req).await;
    }
    if state.db_health.is_down() {
        return fail_fast();
    }
    let response = next.run(req).await;
    if response.extensions().get::<DatabaseUnavailable>().is_some() {
        state.db_health.mark_down(state.app.clone());
    }
    response
}
