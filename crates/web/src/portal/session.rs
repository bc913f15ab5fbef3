//! The portal's session cookie and the extractors of the signed-in partner.
//!
//! The cookie `rt_partner` carries a partner session token (the API's kind, so the same
//! sessions, lifetime and sign-out), on `Path=/partner`; how it is set, and the
//! same-origin rule of forms, are the shared page layer's ([`crate::pages::session`]).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::response::Response;

pub(super) use crate::pages::session::see_other;
use crate::pages::session::{SessionCookie, Visitor};
use crate::AppState;

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

impl FromRequestParts<AppState> for Signed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        Signed::signed(parts, state).await
    }
}

/// The sign-in page that brings the partner to `next` afterwards.
pub(super) fn login_href(next: &str) -> String {
    COOKIE.login_href(next)
}
