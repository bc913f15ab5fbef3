//! Dashboard sessions: `POST /api/auth/login`, `POST /api/auth/logout` and the
//! [`DashboardUser`] extractor. Sessions themselves are the service layer's
//! ([`reftrack_service::dashboard`]).

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::bearer::{bearer, Bearer};
use super::error::{Error, ErrorBody, Result, TwoFactorRequiredBody};
use super::extract::JsonBody;
use super::AppState;
use reftrack_domain::time::iso;
use reftrack_service::access::Me;
use reftrack_service::dashboard::NewSession;
use reftrack_service::two_factor::{SecondFactor, SignInStep};

/// Routes under `/api/auth`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(login))
        .merge(super::two_factor::user_router())
        .route_layer(axum::middleware::from_fn(super::rate_limit::logins))
        .routes(routes!(logout))
        .routes(routes!(me))
}

/// A new session.
#[derive(Debug, Serialize, ToSchema)]
pub struct LoginResponse {
    /// Send as `Authorization: Bearer <token>` to the dashboard endpoints.
    pub token: String,
    #[schema(format = DateTime)]
    pub expires_at: String,
}

/// The answer of logout.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogoutResponse {
    /// Always `true`.
    pub success: bool,
}

/// The user of a live dashboard session (`Authorization: Bearer <session token>`).
/// Rejects with 401 when the header is missing or malformed, or the session is unknown,
/// logged out or expired.
#[derive(Debug, Clone)]
pub struct DashboardUser {
    /// The user's id.
    pub user_id: i64,
    /// The user's email.
    pub email: String,
    /// The user's name.
    pub name: Option<String>,
    /// When the session expires (epoch ms).
    pub expires_at: i64,
    pub(crate) token_hash: String,
}

impl FromRequestParts<AppState> for DashboardUser {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let Bearer::Token(token) = bearer(&parts.headers) else {
            return Err(Error::Unauthorized(
                "Authentication required: send Authorization: Bearer <session token>".into(),
            ));
        };
        match state.app.session_user(token).await? {
            Some((u, token_hash)) => Ok(DashboardUser {
                user_id: u.user_id,
                email: u.email,
                name: u.name,
                expires_at: u.expires_at,
                token_hash,
            }),
            None => Err(Error::Unauthorized("Invalid or expired session".into())),
        }
    }
}

/// Credentials of a dashboard user (or partner). An account with two-factor needs
/// `code` (the 6-digit code of its app) or `recovery_code` as well.
#[derive(Deserialize, ToSchema)]
pub struct LoginBody {
    email: String,
    password: String,
    /// The current code of the authenticator app, for an account with two-factor.
    #[serde(default)]
    code: Option<String>,
    /// One of the account's recovery codes, instead of `code`.
    #[serde(default)]
    recovery_code: Option<String>,
}

impl LoginBody {
    /// The email, the password and the second factor.
    pub(super) fn into_parts(self) -> (String, String, SecondFactor) {
        let second = SecondFactor {
            code: self.code,
            recovery_code: self.recovery_code,
        };
        (self.email, self.password, second)
    }
}

/// Log in to the dashboard.
///
/// `{email, password}` → `{token, expires_at}`; 401 with the same text for an unknown
/// email and a wrong password; 429 with `Retry-After` while the account is locked out
/// after repeated failures (`LoginThrottle`). A user with two-factor on also sends `code`
/// (or `recovery_code`): without one the answer is 401 `{"error": "Two-factor code
/// required", "two_factor_required": true}`; a wrong, used or expired code is 401 and
/// counts as a failed sign-in.
#[utoipa::path(
    post,
    path = "/login",
    tag = "auth",
    request_body = LoginBody,
    responses(
        (status = 200, description = "A new session", body = LoginResponse),
        (status = 400, description = "Invalid body", body = ErrorBody),
        (status = 401, description = "Invalid email or password, or a missing (`two_factor_required`) or wrong two-factor code", body = TwoFactorRequiredBody),
        (status = 429, description = "Too many attempts from this client or for this account; see Retry-After", body = ErrorBody),
    ),
)]
async fn login(
    State(s): State<AppState>,
    JsonBody(b): JsonBody<LoginBody>,
) -> Result<Json<LoginResponse>> {
    let (email, password, second) = b.into_parts();
    let email = email.trim().to_ascii_lowercase();
    let session = throttled(&s, &email, s.app.login(&email, password, &second)).await?;
    Ok(session_answer(session))
}

/// The first step of the owner's sign-in page, under the per-account lockout (429 while
/// the account is locked out after repeated failures): a session, or the pending sign-in
/// that waits for a two-factor code.
pub(super) async fn sign_in(s: &AppState, email: &str, password: String) -> Result<SignInStep> {
    let email = email.trim().to_ascii_lowercase();
    throttled(s, &email, s.app.begin_sign_in(false, &email, password)).await
}

/// A sign-in `attempt` of `account` (or another call that checks its password or a
/// second factor), refused with 429 while the account is locked out after repeated
/// failures; a success clears its count. Wrong passwords and wrong two-factor codes count
/// alike.
pub(super) async fn throttled<T>(
    s: &AppState,
    account: &str,
    attempt: impl std::future::Future<Output = reftrack_service::Result<T>>,
) -> Result<T> {
    s.logins.begin(account).map_err(|wait| {
        s.count_rate_limited(super::rate_limit::LOGIN_ACCOUNT);
        Error::TooManyRequests(super::rate_limit::retry_after_secs(wait))
    })?;
    let session = attempt.await?;
    s.logins.succeeded(account);
    Ok(session)
}

/// The answer of a sign-in.
pub(super) fn session_answer(s: NewSession) -> Json<LoginResponse> {
    Json(LoginResponse {
        token: s.token,
        expires_at: iso(s.expires_at),
    })
}

/// End the caller's session.
#[utoipa::path(
    post,
    path = "/logout",
    tag = "auth",
    security(("session" = [])),
    responses(
        (status = 200, description = "The token no longer works", body = LogoutResponse),
        (status = 401, description = "No valid session", body = ErrorBody),
    ),
)]
async fn logout(State(s): State<AppState>, user: DashboardUser) -> Result<Json<LogoutResponse>> {
    s.app.logout(&user.token_hash).await?;
    Ok(Json(LogoutResponse { success: true }))
}

/// Who the session belongs to, and its memberships.
#[utoipa::path(
    get,
    path = "/me",
    tag = "auth",
    security(("session" = [])),
    responses(
        (status = 200, description = "The user and its memberships", body = Me),
        (status = 401, description = "No valid session", body = ErrorBody),
    ),
)]
async fn me(State(s): State<AppState>, user: DashboardUser) -> Result<Json<Me>> {
    Ok(Json(s.app.me(user.user_id, user.email, user.name).await?))
}
