//! The way in: `/` (the first-run setup, the sign-in page or the dashboard), and the
//! dashboard's sessions, which the shared sign-in and sign-out pages begin and end
//! ([`crate::pages::sign_in`]).

use axum::extract::State;
use axum::http::request::Parts;
use axum::http::Method;

use super::frame::CONSOLE;
use super::session::{Signed, COOKIE};
use crate::error::Result;
use crate::pages::session::{referring_page, see_other, Visitor};
use crate::pages::sign_in::SignIn;
use crate::pages::two_factor::TwoFactorVisitor;
use crate::pages::view::Chrome;
use crate::pages::view::PageResult;
use crate::AppState;
use reftrack_service as app;
use reftrack_service::two_factor::Account;
use reftrack_service::two_factor::SignInStep;

/// `GET /`: the first-run setup while no user exists, else the dashboard (which sends a
/// signed-out visitor to the sign-in page).
pub(super) async fn root(State(s): State<AppState>) -> PageResult {
    if s.app.needs_first_run().await? {
        return Ok(see_other("/app/setup"));
    }
    Ok(see_other("/app"))
}

impl TwoFactorVisitor for Signed {
    const PAGE: &'static str = "/app/two-factor";

    fn account(&self) -> Account {
        Account::User(self.user_id)
    }

    async fn frame(&self, _: &AppState, title: &str) -> app::Result<(Chrome, String)> {
        Ok((
            super::frame::signed_in(title, self, false),
            self.email.clone(),
        ))
    }
}

impl Visitor for Signed {
    const SIGN_IN: SignIn = SignIn {
        site: CONSOLE,
        cookie: COOKIE,
        lead: "Sign in to run your partner programs.",
        help: "Forgot your password? The operator of this server can set a new one \
               (reftrack admin update-user).",
        reset: None,
        partner: false,
    };

    async fn find(state: &AppState, token: &str) -> app::Result<Option<Signed>> {
        let found = state.app.session_user(token).await?;
        Ok(found.map(|(u, token_hash)| Signed {
            user_id: u.user_id,
            who: u
                .name
                .filter(|n| !n.trim().is_empty())
                .unwrap_or_else(|| u.email.clone()),
            email: u.email,
            token_hash,
            request: Default::default(),
        }))
    }

    async fn sign_in(state: &AppState, email: &str, password: String) -> Result<SignInStep> {
        crate::session::sign_in(state, email, password).await
    }

    async fn sign_out(self, state: &AppState) -> app::Result<()> {
        state.app.logout(&self.token_hash).await
    }

    /// The page asked for, or, for a form, the page the form was on.
    fn back_after_sign_in(parts: &Parts) -> Option<String> {
        if parts.method == Method::GET {
            parts.uri.path_and_query().map(|p| p.as_str().to_string())
        } else {
            referring_page(&parts.headers)
        }
    }
}
