//! Two-factor sign-in's API: setting it up, turning it on and off, for dashboard users
//! under `/api/auth/2fa/…` and partners under `/api/partner/auth/2fa/…`. The rules are
//! the service layer's ([`reftrack_service::two_factor`]); sign-in itself takes the code
//! in the login bodies ([`super::session`], [`super::partner`]).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::error::{Error, ErrorBody, Result};
use super::extract::JsonBody;
use super::origin::RequestOrigin;
use super::partner::{throttle_key, PartnerSession};
use super::session::{throttled, DashboardUser};
use super::AppState;
use reftrack_service::two_factor::{
    actor_of, Account, RecoveryCodes, SecondFactor, TwoFactorSetup,
};

/// The dashboard user's routes, merged under `/api/auth`.
pub fn user_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(user_setup))
        .routes(routes!(user_enable))
        .routes(routes!(user_disable))
}

/// The partner's routes, merged under `/api/partner`.
pub fn partner_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(partner_setup))
        .routes(routes!(partner_enable))
        .routes(routes!(partner_disable))
}

/// The code that confirms a setup.
#[derive(Debug, Deserialize, ToSchema)]
pub struct EnableBody {
    /// The 6-digit code the authenticator app shows for the new secret.
    pub code: String,
}

/// Set up two-factor sign-in.
///
/// Draws a new secret and keeps it pending: add it to an authenticator app (the
/// `otpauth_url` is what a QR code holds), then confirm it with `POST /2fa/enable`. Nothing
/// changes until then; another setup replaces the pending secret. 409 when two-factor is
/// on already.
#[utoipa::path(
    post,
    path = "/2fa/setup",
    tag = "auth",
    security(("session" = [])),
    responses(
        (status = 200, description = "The pending secret", body = TwoFactorSetup),
        (status = 401, description = "No valid session", body = ErrorBody),
        (status = 409, description = "Two-factor is on already", body = ErrorBody),
    ),
)]
async fn user_setup(
    State(s): State<AppState>,
    user: DashboardUser,
) -> Result<Json<TwoFactorSetup>> {
    let account = Account::User(user.user_id);
    Ok(Json(s.app.two_factor_setup(account, &user.email).await?))
}

/// Turn two-factor sign-in on.
///
/// `{code}`: a current code of the pending secret (one step of clock drift either way is
/// accepted). Answers ten recovery codes, shown this once: each signs in once instead of
/// a code. 400 without a setup under way or with a wrong code.
#[utoipa::path(
    post,
    path = "/2fa/enable",
    tag = "auth",
    request_body = EnableBody,
    security(("session" = [])),
    responses(
        (status = 200, description = "On; the recovery codes", body = RecoveryCodes),
        (status = 400, description = "No setup under way, or a wrong code", body = ErrorBody),
        (status = 401, description = "No valid session", body = ErrorBody),
        (status = 409, description = "Two-factor is on already", body = ErrorBody),
    ),
)]
async fn user_enable(
    State(s): State<AppState>,
    user: DashboardUser,
    origin: RequestOrigin,
    JsonBody(b): JsonBody<EnableBody>,
) -> Result<Json<RecoveryCodes>> {
    let account = Account::User(user.user_id);
    let origin = origin.of_actor(actor_of(account, &user.email));
    Ok(Json(
        s.app.enable_two_factor(account, &b.code, &origin).await?,
    ))
}

/// Turn two-factor sign-in off.
///
/// `{code}` (a current code, accepted once) or `{recovery_code}` (used up) → 204. A
/// wrong or missing code is 400 and counts toward the account's sign-in lock-out, as a
/// failed sign-in does (429 while locked out).
#[utoipa::path(
    post,
    path = "/2fa/disable",
    tag = "auth",
    request_body = SecondFactor,
    security(("session" = [])),
    responses(
        (status = 204, description = "Off"),
        (status = 400, description = "Two-factor is off, or a wrong or missing code", body = ErrorBody),
        (status = 401, description = "No valid session", body = ErrorBody),
        (status = 429, description = "Too many failed codes for this account; see Retry-After", body = ErrorBody),
    ),
)]
async fn user_disable(
    State(s): State<AppState>,
    user: DashboardUser,
    origin: RequestOrigin,
    JsonBody(b): JsonBody<SecondFactor>,
) -> Result<StatusCode> {
    let account = Account::User(user.user_id);
    let origin = origin.of_actor(actor_of(account, &user.email));
    let email = user.email.trim().to_ascii_lowercase();
    throttled(&s, &email, s.app.disable_two_factor(account, &b, &origin)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The email a partner signs in with, for its authenticator app's label.
async fn partner_email(s: &AppState, partner_id: i64) -> Result<String> {
    s.app
        .partner_me(partner_id)
        .await?
        .email
        .ok_or_else(|| Error::bad_request("The partner account has no sign-in email"))
}

/// Set up two-factor sign-in (partner).
///
/// As for dashboard users: a new pending secret, nothing changes until enabled.
#[utoipa::path(
    post,
    path = "/auth/2fa/setup",
    tag = "partners",
    security(("partner_session" = [])),
    responses(
        (status = 200, description = "The pending secret", body = TwoFactorSetup),
        (status = 401, description = "No valid partner session", body = ErrorBody),
        (status = 409, description = "Two-factor is on already", body = ErrorBody),
    ),
)]
async fn partner_setup(
    State(s): State<AppState>,
    p: PartnerSession,
) -> Result<Json<TwoFactorSetup>> {
    let email = partner_email(&s, p.partner_id).await?;
    let account = Account::Partner(p.partner_id);
    Ok(Json(s.app.two_factor_setup(account, &email).await?))
}

/// Turn two-factor sign-in on (partner).
///
/// As for dashboard users: `{code}` → ten recovery codes, shown once; a wrong code 400.
#[utoipa::path(
    post,
    path = "/auth/2fa/enable",
    tag = "partners",
    request_body = EnableBody,
    security(("partner_session" = [])),
    responses(
        (status = 200, description = "On; the recovery codes", body = RecoveryCodes),
        (status = 400, description = "No setup under way, or a wrong code", body = ErrorBody),
        (status = 401, description = "No valid partner session", body = ErrorBody),
        (status = 409, description = "Two-factor is on already", body = ErrorBody),
    ),
)]
async fn partner_enable(
    State(s): State<AppState>,
    p: PartnerSession,
    origin: RequestOrigin,
    JsonBody(b): JsonBody<EnableBody>,
) -> Result<Json<RecoveryCodes>> {
    let email = partner_email(&s, p.partner_id).await?;
    let account = Account::Partner(p.partner_id);
    let origin = origin.of_actor(actor_of(account, &email));
    Ok(Json(
        s.app.enable_two_factor(account, &b.code, &origin).await?,
    ))
}

/// Turn two-factor sign-in off (partner).
///
/// As for dashboard users: `{code}` or `{recovery_code}` → 204; wrong: 400, counted
/// toward the account's lock-out.
#[utoipa::path(
    post,
    path = "/auth/2fa/disable",
    tag = "partners",
    request_body = SecondFactor,
    security(("partner_session" = [])),
    responses(
        (status = 204, description = "Off"),
        (status = 400, description = "Two-factor is off, or a wrong or missing code", body = ErrorBody),
        (status = 401, description = "No valid partner session", body = ErrorBody),
        (status = 429, description = "Too many failed codes for this account; see Retry-After", body = ErrorBody),
    ),
)]
async fn partner_disable(
    State(s): State<AppState>,
    p: PartnerSession,
    origin: RequestOrigin,
    JsonBody(b): JsonBody<SecondFactor>,
) -> Result<StatusCode> {
    let email = partner_email(&s, p.partner_id).await?;
    let account = Account::Partner(p.partner_id);
    let origin = origin.of_actor(actor_of(account, &email));
    throttled(
        &s,
        &throttle_key(&email),
        s.app.disable_two_factor(account, &b, &origin),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
