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
use super::error::{Error, ErrorBody, Result};
use super::extract::JsonBody;
use super::AppState;
use reftrack_domain::time::iso;
use reftrack_service::access::Me;
use reftrack_service::dashboard::NewSession;

/// Routes under `/api/auth`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(login))
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
    token_hash: String,
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

/// Credentials of a dashboard user.
#[derive(Deserialize, ToSchema)]
pub struct LoginBody {
    email: String,
    password: String,
}

impl LoginBody {
    /// The email and the password.
    pub(super) fn into_parts(self) -> (String, String) {
        (self.email, self.password)
    }
}

/// Log in to the dashboard.
///
/// `{email, password}` → `{token, expires_at}`; 401 with the same text for an unknown
/// email and a wrong password; 429 with `Retry-After` while the account is locked out
/// after repeated failures (`LoginThrottle`).
#[utoipa::path(
    post,
    path = "/login",
    tag = "auth",
    request_body = LoginBody,
    responses(
        (status = 200, description = "A new session", body = LoginResponse),
        (status = 400, description = "Invalid body", body = ErrorBody),
        (status = 401, description = "Invalid email or password", body = ErrorBody),
        (status = 429, description = "Too many attempts from this client or for this account; see Retry-After", body = ErrorBody),
    ),
)]
async fn login(
    State(s): State<AppState>,
    JsonBody(b): JsonBody<LoginBody>,
) -> Result<Json<LoginResponse>> {
    let session = sign_in(&s, &b.email, b.password).await?;
    Ok(session_answer(session))
}

/// Signs a dashboard user in by email and password, under the per-account lockout (429
/// while the account is locked out after repeated failures): the API's and the owner's
/// pages' way.
pub(super) async fn sign_in(s: &AppState, email: &str, password: String) -> Result<NewSession> {
    let email = email.trim().to_ascii_lowercase();
    throttled(s, &email, s.app.login(&email, password)).await
}

/// A sign-in `attempt` of `account` (or another call that checks its password), refused
/// with 429 while the account is locked out after repeated failures; a success clears
/// its count.
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
