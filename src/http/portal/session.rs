//! The portal's session cookie and the extractors of the signed-in partner.
//!
//! The cookie `rt_partner` carries a partner session token (the API's kind, so the same
//! sessions, lifetime and sign-out), on `Path=/partner`; how it is set, and the
//! same-origin rule of forms, are the shared page layer's ([`crate::http::pages::session`]).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::Method;
use axum::response::{IntoResponse, Response};

pub(super) use crate::http::pages::session::see_other;
use crate::http::pages::session::SessionCookie;
use crate::http::pages::view::PageError;
use crate::http::AppState;

/// The portal's session cookie.
pub(super) const COOKIE: SessionCookie = SessionCookie {
    name: "rt_partner",
    path: "/partner",
};

/// The signed-in partner of a page. Without a live session a GET is redirected (303) to
/// the sign-in page, which brings the partner back afterwards; any other method to the
/// sign-in page alone.
pub(super) struct Signed {
    pub partner_id: i64,
    pub token_hash: String,
}

/// The signed-in partner, if any, on pages that signed-out visitors see too.
pub(super) struct MaybeSigned(pub Option<Signed>);

async fn signed(parts: &Parts, state: &AppState) -> Result<Option<Signed>, Response> {
    let Some(token) = COOKIE.token(&parts.headers) else {
        return Ok(None);
    };
    match state.app.partner_session(token).await {
        Ok(found) => Ok(found.map(|(partner_id, token_hash)| Signed {
            partner_id,
            token_hash,
        })),
        Err(e) => Err(PageError::from(e).into_response()),
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
    COOKIE.login_href(next)
}

/// `next` when it is a page of the portal on this server, else `/partner`.
pub(super) fn local_next(next: Option<&str>) -> &str {
    COOKIE.local_next(next)
}
