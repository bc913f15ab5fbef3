//! Dashboard sessions (product.md §3): `POST /api/auth/login`, `POST /api/auth/logout`
//! and the [`DashboardUser`] extractor, with the role → permission map.
//!
//! A session token is `rts_` followed by 256 random bits in hex. Only its SHA-256 hash is
//! stored. A session lasts [`SESSION_LIFETIME_MS`] (7 days) from login, fixed rather
//! than sliding, so a stolen token has a bounded life; logout ends it at once. Expired
//! rows are purged at the next login.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::JsonBody;
use crate::auth::{bearer, generate_token, hash_token, verify_password, Bearer};
use crate::domain::time::{iso, now_ms};
use crate::error::{Error, ErrorBody, Result};
use crate::AppState;

/// Prefix of dashboard session tokens.
pub const SESSION_TOKEN_PREFIX: &str = "rts_";

/// How long a session works after login: 7 days.
pub const SESSION_LIFETIME_MS: i64 = 7 * 24 * 60 * 60 * 1000;

/// The one answer to any failed login, so that it does not tell which part was wrong.
pub const INVALID_CREDENTIALS: &str = "Invalid email or password";

/// An argon2id hash with the parameters `auth::hash_password` uses, of no password
/// anyone knows: verified against when the email is unknown, so that an unknown email
/// costs as much time as a wrong password.
const DUMMY_PASSWORD_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$LCbkRkxkY9NfZ4f4WQtiAA$RwUHMRACjq/Uml6twRQ47oIRkVL6oC41B8gq6Hgjd+I";

/// Routes under `/api/auth`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(login))
        .routes(routes!(logout))
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

/// A permission a workspace role grants on the workspace's programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// `tracking:read`: program status.
    TrackingRead,
    /// `tracking:list`: the events list.
    TrackingList,
}

impl Permission {
    /// The permission's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::TrackingRead => "tracking:read",
            Permission::TrackingList => "tracking:list",
        }
    }
}

/// Whether `role` grants `permission`: `owner`, `admin` and `member` have
/// `tracking:read` and `tracking:list`; `viewer` has `tracking:read` only; anything else
/// nothing.
pub fn role_grants(role: &str, permission: Permission) -> bool {
    match role {
        "owner" | "admin" | "member" => true,
        "viewer" => permission == Permission::TrackingRead,
        _ => false,
    }
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
        let token_hash = hash_token(token);
        match state.store.session_user(&token_hash, now_ms()).await? {
            Some(u) => Ok(DashboardUser {
                user_id: u.user_id,
                email: u.email,
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
    ),
)]
async fn login(
    State(s): State<AppState>,
    JsonBody(b): JsonBody<LoginBody>,
) -> Result<Json<LoginResponse>> {
    let email = b.email.trim().to_ascii_lowercase();
    s.logins
        .begin(&email)
        .map_err(|wait| Error::TooManyRequests(super::rate_limit::retry_after_secs(wait)))?;
    let credentials = s.store.user_credentials(&email).await?;
    let password = b.password;
    // argon2 is deliberately slow; keep it off the async workers.
    let user_id = tokio::task::spawn_blocking(move || match credentials {
        Some(c) => verify_password(&password, &c.password_hash).then_some(c.user_id),
        None => {
            let _ = verify_password(&password, DUMMY_PASSWORD_HASH);
            None
        }
    })
    .await
    .map_err(|e| Error::Internal("Internal server error", e.into()))?;
    let Some(user_id) = user_id else {
        return Err(Error::Unauthorized(INVALID_CREDENTIALS.into()));
    };
    s.logins.succeeded(&email);
    let token = generate_token(SESSION_TOKEN_PREFIX);
    let now = now_ms();
    let expires_at = now + SESSION_LIFETIME_MS;
    s.store
        .create_session(user_id, &hash_token(&token), now, expires_at)
        .await?;
    Ok(Json(LoginResponse {
        token,
        expires_at: iso(expires_at),
    }))
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
    s.store.delete_session(&user.token_hash).await?;
    Ok(Json(LogoutResponse { success: true }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::PasswordHash;

    #[test]
    fn roles_grant_permissions() {
        for role in ["owner", "admin", "member"] {
            assert!(role_grants(role, Permission::TrackingRead));
            assert!(role_grants(role, Permission::TrackingList));
        }
        assert!(role_grants("viewer", Permission::TrackingRead));
        assert!(!role_grants("viewer", Permission::TrackingList));
        assert!(!role_grants("guest", Permission::TrackingRead));
        assert_eq!(Permission::TrackingList.as_str(), "tracking:list");
    }

    #[test]
    fn dummy_hash_costs_what_a_real_one_does() {
        let real = crate::auth::hash_password("some password").unwrap();
        let real = PasswordHash::new(&real).unwrap();
        let dummy = PasswordHash::new(DUMMY_PASSWORD_HASH).unwrap();
        assert_eq!(real.algorithm, dummy.algorithm);
        assert_eq!(real.version, dummy.version);
        assert_eq!(real.params, dummy.params);
        assert!(!verify_password("some password", DUMMY_PASSWORD_HASH));
        assert_eq!(SESSION_LIFETIME_MS, 7 * 86_400_000);
    }
}
