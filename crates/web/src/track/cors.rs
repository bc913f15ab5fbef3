//! CORS of the browser routes (click and lead): the preflight, and the allowed origin on
//! their answers.

use axum::extract::{Request, State};
use axum::http::header::ORIGIN;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::caller::forbidden_origin;
use crate::error::Result;
use crate::AppState;

/// CORS preflight of the browser routes. A preflight names no program, so it is
/// answered for origins that some program admits; the request itself is then checked
/// against its own program and refused with 403 when that program does not list it.
pub(super) async fn preflight(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response> {
    let Some(origin) = headers.get(ORIGIN).and_then(|v| v.to_str().ok()) else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    if !state.app.any_program_allows_origin(origin).await? {
        return Err(forbidden_origin());
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    let h = response.headers_mut();
    h.insert(
        "access-control-allow-methods",
        HeaderValue::from_static("POST, OPTIONS"),
    );
    h.insert(
        "access-control-allow-headers",
        HeaderValue::from_static("content-type, authorization"),
    );
    h.insert("access-control-max-age", HeaderValue::from_static("600"));
    Ok(response)
}

/// Adds `Access-Control-Allow-Origin` for the calling origin to browser-route responses,
/// except when the origin was refused.
pub(super) async fn browser_cors(req: Request, next: Next) -> Response {
    let origin = req.headers().get(ORIGIN).cloned();
    let is_preflight = req.method() == Method::OPTIONS;
    let mut response = next.run(req).await;
    let refused = response.status() == StatusCode::FORBIDDEN;
    if let (Some(origin), false) = (origin, refused) {
        let h = response.headers_mut();
        h.insert("access-control-allow-origin", origin);
        h.append("vary", HeaderValue::from_static("Origin"));
        if is_preflight {
            h.append(
                "vary",
                HeaderValue::from_static("Access-Control-Request-Headers"),
            );
        }
    }
    response
}
