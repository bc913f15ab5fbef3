//! The dashboard's session cookie and the extractor of the signed-in user.
//!
//! The cookie `rt_session` carries a dashboard session token (the API's kind: the same
//! sessions, lifetime and sign-out), on `Path=/app`; how it is set, and the same-origin
//! rule of forms, are the shared page layer's ([`crate::http::pages::session`]).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::Method;
use axum::response::{IntoResponse, Response};

use crate::http::pages::session::{referring_page, see_other, SessionCookie};
use crate::http::pages::view::PageError;
use crate::http::AppState;

/// The dashboard's session cookie.
pub(super) const COOKIE: SessionCookie = SessionCookie {
    name: "rt_session",
    path: "/app",
};

/// The signed-in user of a page. Without a live session (none, signed out, expired) the
/// visitor is sent (303) to the sign-in page, which brings it back afterwards: to the
/// page it asked for, or, for a form, to the page the form was on.
pub(super) struct Signed {
    pub user_id: i64,
    /// What the header shows: the user's name, else its email.
    pub who: String,
    pub token_hash: String,
}

/// The signed-in user, if any, on pages that signed-out visitors see too.
pub(super) struct MaybeSigned(pub Option<Signed>);

async fn signed(parts: &Parts, state: &AppState) -> Result<Option<Signed>, Response> {
    let Some(token) = COOKIE.token(&parts.headers) else {
        return Ok(None);
    };
    match state.app.session_user(token).await {
        Ok(found) => Ok(found.map(|(u, token_hash)| Signed {
            user_id: u.user_id,
            who: u.name.filter(|n| !n.trim().is_empty()).unwrap_or(u.email),
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
        let back = if parts.method == Method::GET {
            parts.uri.path_and_query().map(|p| p.as_str().to_string())
        } else {
            referring_page(&parts.headers)
        };
        let next = COOKIE.local_next(back.as_deref());
        Err(see_other(&COOKIE.login_href(next)))
    }
}

impl FromRequestParts<AppState> for MaybeSigned {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        Ok(MaybeSigned(signed(parts, state).await?))
    }
}
