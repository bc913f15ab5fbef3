//! The dashboard's session cookie and the extractor of the signed-in user.
//!
//! The cookie `rt_session` carries a dashboard session token (the API's kind: the same
//! sessions, lifetime and sign-out), on `Path=/app`; how it is set, and the same-origin
//! rule of forms, are the shared page layer's ([`crate::pages::session`]).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::response::Response;

use crate::pages::session::{SessionCookie, Visitor};
use crate::AppState;

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
    /// The email the user signs in with.
    pub email: String,
    pub token_hash: String,
}

impl FromRequestParts<AppState> for Signed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        Signed::signed(parts, state).await
    }
}
