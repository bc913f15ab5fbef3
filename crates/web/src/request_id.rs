//! Request ids. Every request gets one: the caller's `X-Request-Id` when it is sane (1 to
//! 64 visible ASCII characters, given once), a new UUID otherwise. tower-http's
//! `SetRequestIdLayer` and `PropagateRequestIdLayer` set it and answer it in
//! `X-Request-Id` on every response; [`trace`] records it in the request's span, so each
//! log line of the request carries it.
//!
//! The layers, outermost first: [`drop_unfit`], `SetRequestIdLayer`,
//! `PropagateRequestIdLayer`, [`trace`]; everything that answers (routes, rate limits,
//! the outage guard, the panic catcher, the fallback) sits inside them.

use axum::extract::Request;
use axum::http::HeaderName;
use tower_http::request_id::RequestId;
use tower_http::trace::{
    DefaultOnRequest, DefaultOnResponse, HttpMakeClassifier, MakeSpan, TraceLayer,
};
use tracing::{Level, Span};

/// The header carrying the request id, both ways.
pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The longest request id a caller may give.
pub const MAX_LEN: usize = 64;

/// Whether a caller's request id is kept: 1 to [`MAX_LEN`] visible ASCII characters.
pub fn is_sane(id: &[u8]) -> bool {
    !id.is_empty() && id.len() <= MAX_LEN && id.iter().all(u8::is_ascii_graphic)
}

/// Removes the caller's `X-Request-Id` unless it is one sane value, so that
/// `SetRequestIdLayer` makes a new id; the caller's text never reaches the logs otherwise.
pub fn drop_unfit(mut req: Request) -> Request {
    let mut given = req.headers().get_all(&X_REQUEST_ID).iter();
    let fit = match (given.next(), given.next()) {
        (None, _) => true,
        (Some(id), None) => is_sane(id.as_bytes()),
        (Some(_), Some(_)) => false,
    };
    if !fit {
        req.headers_mut().remove(&X_REQUEST_ID);
    }
    req
}

/// The span of a request: method, path (not the query) and request id, at INFO under
/// this crate's target, so that the default filter keeps it and every line logged while
/// serving the request carries its fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestSpan;

impl<B> MakeSpan<B> for RequestSpan {
    fn make_span(&mut self, req: &axum::http::Request<B>) -> Span {
        let id = req
            .extensions()
            .get::<RequestId>()
            .and_then(|id| id.header_value().to_str().ok())
            .unwrap_or_default();
        tracing::info_span!(
            "request",
            method = %req.method(),
            path = req.uri().path(),
            request_id = id
        )
    }
}

/// tower-http's trace layer with [`RequestSpan`]; its line per answered request is at
/// INFO under `tower_http` (off by default; `REFTRACK_LOG=reftrack=info,tower_http=info`
/// turns it on), its line per 5xx at ERROR.
pub fn trace() -> TraceLayer<HttpMakeClassifier, RequestSpan, DefaultOnRequest, DefaultOnResponse> {
    TraceLayer::new_for_http()
        .make_span_with(RequestSpan)
        .on_response(DefaultOnResponse::new().level(Level::INFO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    #[test]
    fn sane_ids_are_short_visible_ascii() {
        assert!(is_sane(b"abc-123_XYZ.req:42"));
        assert!(is_sane("a".repeat(MAX_LEN).as_bytes()));
        assert!(!is_sane("a".repeat(MAX_LEN + 1).as_bytes()));
        assert!(!is_sane(b""));
        assert!(!is_sane(b"has space"));
        assert!(!is_sane(b"tab\there"));
        assert!(!is_sane("caf\u{e9}".as_bytes()));
    }

    #[test]
    fn unfit_ids_are_removed_and_fit_ones_kept() {
        let with = |ids: &[&str]| {
            let mut req = Request::new(Body::empty());
            for id in ids {
                req.headers_mut()
                    .append(X_REQUEST_ID, id.parse().expect("header value"));
            }
            drop_unfit(req)
                .headers()
                .get_all(X_REQUEST_ID)
                .iter()
                .map(|v| v.to_str().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(with(&["req-1"]), ["req-1"]);
        assert!(with(&[]).is_empty());
        assert!(with(&["two words"]).is_empty());
        assert!(with(&["a", "b"]).is_empty());
    }
}
