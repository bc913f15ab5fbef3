//! The way in: `/` (the first-run setup, the sign-in page or the dashboard), signing in
//! and out.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;

use super::frame::CONSOLE;
use super::session::{MaybeSigned, COOKIE};
use crate::http::pages::session::see_other;
use crate::http::pages::sign_in::SignIn;
use crate::http::pages::view::{PageResult, Query};
use crate::http::session::sign_in;
use crate::http::AppState;

/// The dashboard's sign-in page.
const SIGN_IN: SignIn = SignIn {
    site: CONSOLE,
    cookie: COOKIE,
    lead: "Sign in to run your partner programs.",
    help: "Forgot your password? The operator of this server can set a new one \
           (reftrack admin), or an owner of your workspace can add you again.",
};

/// `GET /`: the first-run setup while no user exists, else the dashboard (which sends a
/// signed-out visitor to the sign-in page).
pub(super) async fn root(State(s): State<AppState>) -> PageResult {
    if s.app.needs_first_run().await? {
        return Ok(see_other("/app/setup"));
    }
    Ok(see_other("/app"))
}

/// `GET /app/login`.
pub(super) async fn login_page(MaybeSigned(signed): MaybeSigned, Query(q): Query) -> Response {
    SIGN_IN.form(signed.is_some(), &q)
}

/// `POST /app/login`.
pub(super) async fn login(State(s): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let state = &s;
    SIGN_IN
        .submit(state, &headers, &body, |email, password| async move {
            sign_in(state, &email, password).await
        })
        .await
}

/// `POST /app/logout`: ends the session and clears the cookie.
pub(super) async fn logout(
    State(s): State<AppState>,
    headers: HeaderMap,
    MaybeSigned(signed): MaybeSigned,
) -> PageResult {
    if let Some(u) = signed {
        s.app.logout(&u.token_hash).await?;
    }
    Ok(COOKIE.signed_out(&s, &headers))
}
