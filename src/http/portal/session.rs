//! The portal's session cookie, the extractors of the signed-in partner, where a page
//! may send a partner after sign-in, and the same-origin rule of POST forms.
//!
//! The cookie `rt_partner` carries a partner session token (the API's kind, so the same
//! sessions, lifetime and sign-out): `HttpOnly`, `SameSite=Lax`, `Path=/partner`, and
//! `Secure` when the server is reached over HTTPS.

use axum::extract::{FromRequestParts, Request};
use axum::http::header::{COOKIE, HOST, LOCATION, ORIGIN, REFERER, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Extension;

use super::view::error_page;
use crate::app::dashboard::NewSession;
use crate::http::AppState;

/// The name of the session cookie.
pub(super) const COOKIE_NAME: &str = "rt_partner";

/// The signed-in partner of a page. Without a live session a GET is redirected (303) to
/// the sign-in page, which brings the partner back afterwards; any other method to the
/// sign-in page alone.
pub(super) struct Signed {
    pub partner_id: i64,
    pub token_hash: String,
}

/// The signed-in partner, if any, on pages that signed-out visitors see too.
pub(super) struct MaybeSigned(pub Option<Signed>);

/// The partner session token of the request's cookie, if any.
fn cookie_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value.trim())
        .filter(|v| !v.is_empty())
}

async fn signed(parts: &Parts, state: &AppState) -> Result<Option<Signed>, Response> {
    let Some(token) = cookie_token(&parts.headers) else {
        return Ok(None);
    };
    match state.app.partner_session(token).await {
        Ok(found) => Ok(found.map(|(partner_id, token_hash)| Signed {
            partner_id,
            token_hash,
        })),
        Err(e) => Err(super::view::PageError::from(e).into_response()),
    }
}

impl FromRequestParts<AppState> for Signed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        if let Some(s) = signed(parts, state).await? {
            return Ok(s);
        }
        let here = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/partner");
        let back = if parts.method == Method::GET {
            local_next(Some(here))
        } else {
            "/partner"
        };
        Err(see_other(&login_href(back)))
    }
}

impl FromRequestParts<AppState> for MaybeSigned {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        Ok(MaybeSigned(signed(parts, state).await?))
    }
}

/// The sign-in page that brings the partner to `next` afterwards.
pub(super) fn login_href(next: &str) -> String {
    if next == "/partner" {
        return "/partner/login".into();
    }
    let encoded: String = url::form_urlencoded::byte_serialize(next.as_bytes()).collect();
    format!("/partner/login?next={encoded}")
}

/// `next` when it is a page of the portal on this server (`/partner` or below it, no
/// scheme, host or `//`), else `/partner`: a sign-in never sends a partner elsewhere.
pub(super) fn local_next(next: Option<&str>) -> &str {
    let Some(n) = next else { return "/partner" };
    let below = n
        .strip_prefix("/partner")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/') || rest.starts_with('?'));
    let clean = n.len() <= 2000
        && !n.contains("//")
        && !n.contains('\\')
        && !n.chars().any(char::is_control)
        && !n.starts_with("/partner/login")
        && !n.starts_with("/partner/logout");
    if below && clean {
        n
    } else {
        "/partner"
    }
}

/// A 303 to `location`.
pub(super) fn see_other(location: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(location) {
        r.headers_mut().insert(LOCATION, v);
    }
    r
}

/// Whether the partner reaches this server over HTTPS: the public URL says so, or a
/// proxy in front of it does (a false claim only keeps the cookie from being sent back
/// over plain HTTP).
fn https(state: &AppState, headers: &HeaderMap) -> bool {
    state
        .public_url
        .as_deref()
        .is_some_and(|u| u.starts_with("https://"))
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// The `Set-Cookie` of a cookie named [`COOKIE_NAME`] with `value`, kept `max_age`
/// seconds.
fn cookie(state: &AppState, headers: &HeaderMap, value: &str, max_age: i64) -> HeaderValue {
    let secure = if https(state, headers) {
        "; Secure"
    } else {
        ""
    };
    let text = format!(
        "{COOKIE_NAME}={value}; Path=/partner; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}"
    );
    HeaderValue::from_str(&text).expect("tokens are hex")
}

/// Signs the partner in on this browser and sends it to `next` (303).
pub(super) fn signed_in_to(
    state: &AppState,
    headers: &HeaderMap,
    session: &NewSession,
    next: &str,
) -> Response {
    let max_age = ((session.expires_at - state.app.now_ms()) / 1000).max(0);
    let mut r = see_other(next);
    r.headers_mut()
        .insert(SET_COOKIE, cookie(state, headers, &session.token, max_age));
    r
}

/// Clears the session cookie and sends the visitor to the sign-in page (303).
pub(super) fn signed_out(state: &AppState, headers: &HeaderMap) -> Response {
    let mut r = see_other("/partner/login?signed_out=1");
    r.headers_mut()
        .insert(SET_COOKIE, cookie(state, headers, "", 0));
    r
}

/// Refuses (403 page) a POST, PUT, PATCH or DELETE whose `Origin` (or, without one,
/// `Referer`) is not this server: a form of another site cannot act for the partner.
/// A request that names neither is refused too; browsers send `Origin` with every form.
pub(super) async fn same_origin_posts(
    Extension(state): Extension<AppState>,
    req: Request,
    next: Next,
) -> Response {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    if from_this_site(
        &state,
        req.headers(),
        req.uri().authority().map(|a| a.as_str()),
    ) {
        return next.run(req).await;
    }
    tracing::debug!("cross-site form refused");
    error_page(
        StatusCode::FORBIDDEN,
        "This form was sent from another site, so it was not accepted. Open the page on \
         this site and send the form again.",
    )
}

/// Whether the request's `Origin`, or its `Referer` when it has no `Origin`, is this
/// server: the request's own host, or the public URL.
fn from_this_site(state: &AppState, headers: &HeaderMap, authority: Option<&str>) -> bool {
    let claimed = match headers.get(ORIGIN) {
        Some(o) => o.to_str().ok(),
        None => headers.get(REFERER).and_then(|r| r.to_str().ok()),
    };
    let Some(url) = claimed.and_then(|c| url::Url::parse(c).ok()) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let claimed_authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    };
    let own = headers
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .or(authority);
    if own.is_some_and(|own| own.eq_ignore_ascii_case(&claimed_authority)) {
        return true;
    }
    state
        .public_url
        .as_deref()
        .and_then(|p| url::Url::parse(p).ok())
        .is_some_and(|public| public.origin() == url.origin())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_stays_in_the_portal() {
        assert_eq!(local_next(None), "/partner");
        assert_eq!(
            local_next(Some("/partner/programs/3/links?x=1")),
            "/partner/programs/3/links?x=1"
        );
        assert_eq!(local_next(Some("/partner?program=2")), "/partner?program=2");
        for bad in [
            "https://evil.example/partner",
            "//evil.example/partner",
            "/partner//evil.example",
            "/partnerx",
            "/api/admin",
            "/partner/login?next=/partner",
            "/partner/\\evil",
            "/partner/\nx",
        ] {
            assert_eq!(local_next(Some(bad)), "/partner", "{bad}");
        }
        assert_eq!(
            login_href("/partner/programs/1/links"),
            "/partner/login?next=%2Fpartner%2Fprograms%2F1%2Flinks"
        );
        assert_eq!(login_href("/partner"), "/partner/login");
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            COOKIE,
            HeaderValue::from_static("a=1; rt_partner=rtp_abc; b=2"),
        );
        assert_eq!(cookie_token(&h), Some("rtp_abc"));
        h.insert(COOKIE, HeaderValue::from_static("rt_partner="));
        assert_eq!(cookie_token(&h), None);
    }
}
