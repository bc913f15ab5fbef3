//! The management API, under `/api/admin`, behind the admin token. Handlers validate
//! their bodies and call the service layer ([`crate::app::admin`]).

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::bearer::{bearer, Bearer};
use super::error::{Error, ErrorBody, Result};
use super::extract::{JsonBody, PathParams};
use super::AppState;
use crate::app::admin::ProgramDraft;
use crate::app::secrets::{hash_token, hashes_match};
use crate::domain::commission::{CommissionRule, CommissionSpec};
use crate::domain::money::normalize_currency;
use crate::domain::status::UnknownValue;
use crate::domain::time::iso;
use crate::store::{
    Link, Membership, Partner, PartnerProgram, PaymentAccount, Program, ProgramPatch, User,
    Workspace,
};

/// Routes of the management API.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_workspace))
        .routes(routes!(add_member))
        .routes(routes!(update_member))
        .routes(routes!(create_program))
        .routes(routes!(get_program, update_program))
        .routes(routes!(rotate_token))
        .routes(routes!(add_program_partner))
        .routes(routes!(set_payment_account))
        .routes(routes!(create_partner))
        .routes(routes!(create_link))
        .routes(routes!(get_link, update_link))
        .routes(routes!(create_user))
}

/// Proof that the request carries the admin token.
pub struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        match bearer(&parts.headers) {
            Bearer::Token(t) if hashes_match(&hash_token(t), &state.admin_token_hash) => Ok(Admin),
            _ => Err(Error::Unauthorized("Missing or invalid admin token".into())),
        }
    }
}

/// Distinguishes an explicit `null` (Some(None)) from an absent field (None).
fn nullable<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

fn created<T>(v: T) -> (StatusCode, Json<T>) {
    (StatusCode::CREATED, Json(v))
}

fn name(field: &str, value: &str, max: usize) -> Result<String> {
    let v = value.trim();
    if v.is_empty() || v.chars().count() > max {
        return Err(Error::bad_request(format!(
            "{field} must be 1 to {max} characters"
        )));
    }
    Ok(v.to_string())
}

fn one_of<T: std::str::FromStr<Err = UnknownValue>>(field: &str, value: &str) -> Result<T> {
    value
        .parse()
        .map_err(|e: UnknownValue| Error::bad_request(e.message(field)))
}

fn window_days(days: i64) -> Result<i64> {
    if (1..=3650).contains(&days) {
        Ok(days)
    } else {
        Err(Error::bad_request(
            "cookie_window_days must be an integer from 1 to 3650",
        ))
    }
}

fn currency(code: &str) -> Result<String> {
    normalize_currency(code)
        .ok_or_else(|| Error::bad_request("currency must be a 3-letter currency code"))
}

fn commission(spec: &CommissionSpec) -> Result<CommissionRule> {
    CommissionRule::from_spec(spec).map_err(Error::BadRequest)
}

fn recurring_months(months: Option<i64>) -> Result<Option<i64>> {
    match months {
        Some(m) if !(0..=1200).contains(&m) => Err(Error::bad_request(
            "recurring_commission_months must be null or an integer from 0 to 1200",
        )),
        other => Ok(other),
    }
}

/// Normalises allowed origins to `scheme://host[:port]`.
fn origins(list: &[String]) -> Result<Vec<String>> {
    list.iter()
        .map(|o| {
            let url = url::Url::parse(o.trim()).ok().filter(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.host().is_some()
                    && u.path() == "/"
                    && u.query().is_none()
                    && u.username().is_empty()
            });
            url.map(|u| u.origin().ascii_serialization())
                .ok_or_else(|| {
                    Error::bad_request(format!(
                        "allowed_origins: {o:?} is not an origin like https://shop.example.com"
                    ))
                })
        })
        .collect()
}

fn webhook_secret(secret: Option<String>) -> Result<Option<String>> {
    match secret {
        Some(s) if s.trim().is_empty() || s.len() > 255 => Err(Error::bad_request(
            "stripe_webhook_secret must be 1 to 255 characters",
        )),
        other => Ok(other.map(|s| s.trim().to_string())),
    }
}

/// The payment-processor account of a program (what the status endpoint reports).
#[derive(Debug, Serialize, ToSchema)]
pub struct PaymentAccountView {
    /// Raw connection status, e.g. `not_connected`, `pending`, `connected`.
    pub status: String,
    pub account_id: Option<String>,
    pub charges_enabled: bool,
    pub payouts_enabled: bool,
    pub details_submitted: bool,
    #[schema(format = DateTime)]
    pub connection_date: Option<String>,
}

/// A program as the management API shows it. The API token itself is shown only when
/// it is created or rotated; the store keeps just its hash.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProgramView {
    pub id: i64,
    pub workspace_id: i64,
    pub name: String,
    pub cookie_window_days: i64,
    pub currency: String,
    pub commission: CommissionSpec,
    pub recurring_commission_months: Option<i64>,
    pub allowed_origins: Vec<String>,
    /// Whether a Stripe webhook signing secret is set (the secret is never shown).
    pub stripe_webhook_secret_set: bool,
    /// The first characters of the API key, to tell keys apart.
    pub api_token_prefix: String,
    pub payment_account: PaymentAccountView,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// The program's API key: only when the program is created or the key rotated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_token: Option<String>,
}

fn program_view(p: &Program, api_token: Option<&str>) -> ProgramView {
    ProgramView {
        id: p.id,
        workspace_id: p.workspace_id,
        name: p.name.clone(),
        cookie_window_days: p.cookie_window_days,
        currency: p.currency.clone(),
        commission: p.commission.spec(),
        recurring_commission_months: p.recurring_commission_months,
        allowed_origins: p.allowed_origins.clone(),
        stripe_webhook_secret_set: p.stripe_webhook_secret.is_some(),
        api_token_prefix: p.api_token_prefix.clone(),
        payment_account: PaymentAccountView {
            status: p.payment.status.clone(),
            account_id: p.payment.account_id.clone(),
            charges_enabled: p.payment.charges_enabled,
            payouts_enabled: p.payment.payouts_enabled,
            details_submitted: p.payment.details_submitted,
            connection_date: p.payment.connection_date.map(iso),
        },
        created_at: iso(p.created_at),
        updated_at: iso(p.updated_at),
        api_token: api_token.map(str::to_string),
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceBody {
    name: String,
}

/// Create a workspace.
#[utoipa::path(
    post,
    path = "/workspaces",
    tag = "management",
    request_body = WorkspaceBody,
    security(("admin_token" = [])),
    responses(
        (status = 201, description = "Created", body = Workspace),
        (status = 400, description = "Invalid field", body = ErrorBody),
    ),
)]
async fn create_workspace(
    _: Admin,
    State(s): State<AppState>,
    JsonBody(b): JsonBody<WorkspaceBody>,
) -> Result<(StatusCode, Json<Workspace>)> {
    let ws = s.app.create_workspace(&name("name", &b.name, 200)?).await?;
    Ok(created(ws))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramBody {
    workspace_id: i64,
    name: String,
    cookie_window_days: Option<i64>,
    currency: Option<String>,
    commission: Option<CommissionSpec>,
    recurring_commission_months: Option<i64>,
    allowed_origins: Option<Vec<String>>,
    stripe_webhook_secret: Option<String>,
}

/// Create a program; the answer carries its API key, shown only here.
#[utoipa::path(
    post,
    path = "/programs",
    tag = "management",
    request_body = ProgramBody,
    security(("admin_token" = [])),
    responses(
        (status = 201, description = "Created; carries the API key", body = ProgramView),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown workspace", body = ErrorBody),
    ),
)]
async fn create_program(
    _: Admin,
    State(s): State<AppState>,
    JsonBody(b): JsonBody<ProgramBody>,
) -> Result<(StatusCode, Json<ProgramView>)> {
    let (program, token) = s
        .app
        .create_program(ProgramDraft {
            workspace_id: b.workspace_id,
            name: name("name", &b.name, 200)?,
            cookie_window_days: window_days(b.cookie_window_days.unwrap_or(60))?,
            currency: currency(b.currency.as_deref().unwrap_or("usd"))?,
            commission: b
                .commission
                .as_ref()
                .map(commission)
                .transpose()?
                .unwrap_or_default(),
            recurring_commission_months: recurring_months(b.recurring_commission_months)?,
            allowed_origins: origins(&b.allowed_origins.unwrap_or_default())?,
            stripe_webhook_secret: webhook_secret(b.stripe_webhook_secret)?,
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(program_view(&program, Some(&token))),
    ))
}

/// Show a program.
#[utoipa::path(
    get,
    path = "/programs/{id}",
    tag = "management",
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The program", body = ProgramView),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
async fn get_program(
    _: Admin,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<ProgramView>> {
    Ok(Json(program_view(&s.app.program(id).await?, None)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramPatchBody {
    name: Option<String>,
    cookie_window_days: Option<i64>,
    currency: Option<String>,
    commission: Option<CommissionSpec>,
    #[serde(default, deserialize_with = "nullable")]
    recurring_commission_months: Option<Option<i64>>,
    allowed_origins: Option<Vec<String>>,
    #[serde(default, deserialize_with = "nullable")]
    stripe_webhook_secret: Option<Option<String>>,
}

/// Change a program; absent fields stay, `null` clears the nullable ones.
#[utoipa::path(
    patch,
    path = "/programs/{id}",
    tag = "management",
    request_body = ProgramPatchBody,
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The changed program", body = ProgramView),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
async fn update_program(
    _: Admin,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(b): JsonBody<ProgramPatchBody>,
) -> Result<Json<ProgramView>> {
    let patch = ProgramPatch {
        name: b.name.map(|n| name("name", &n, 200)).transpose()?,
        cookie_window_days: b.cookie_window_days.map(window_days).transpose()?,
        currency: b.currency.map(|c| currency(&c)).transpose()?,
        commission: b.commission.as_ref().map(commission).transpose()?,
        recurring_commission_months: b
            .recurring_commission_months
            .map(recurring_months)
            .transpose()?,
        allowed_origins: b.allowed_origins.map(|o| origins(&o)).transpose()?,
        stripe_webhook_secret: b.stripe_webhook_secret.map(webhook_secret).transpose()?,
    };
    Ok(Json(program_view(
        &s.app.update_program(id, patch).await?,
        None,
    )))
}

/// Issue a new API key for a program; the old one stops working.
#[utoipa::path(
    post,
    path = "/programs/{id}/rotate-token",
    tag = "management",
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The program with its new API key", body = ProgramView),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
async fn rotate_token(
    _: Admin,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<ProgramView>> {
    let (program, token) = s.app.rotate_program_token(id).await?;
    Ok(Json(program_view(&program, Some(&token))))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PartnerBody {
    name: String,
    code: String,
    email: Option<String>,
}

/// Create a partner.
#[utoipa::path(
    post,
    path = "/partners",
    tag = "management",
    request_body = PartnerBody,
    security(("admin_token" = [])),
    responses(
        (status = 201, description = "Created", body = Partner),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 409, description = "The code is taken", body = ErrorBody),
    ),
)]
async fn create_partner(
    _: Admin,
    State(s): State<AppState>,
    JsonBody(b): JsonBody<PartnerBody>,
) -> Result<(StatusCode, Json<Partner>)> {
    let code = b.code.trim();
    if code.is_empty()
        || code.len() > 64
        || !code
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
    {
        return Err(Error::bad_request(
            "code must be 1 to 64 letters, digits, '-' or '_'",
        ));
    }
    let email = match b.email.as_deref().map(str::trim) {
        Some(e) if !e.contains('@') || e.len() > 255 => {
            return Err(Error::bad_request("email must be an email address"))
        }
        other => other,
    };
    let partner = s
        .app
        .create_partner(&name("name", &b.name, 200)?, code, email)
        .await?;
    Ok(created(partner))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramPartnerBody {
    partner_id: i64,
    status: Option<String>,
}

/// Add a partner to a program (the partner-program record).
#[utoipa::path(
    post,
    path = "/programs/{id}/partners",
    tag = "management",
    request_body = ProgramPartnerBody,
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = [])),
    responses(
        (status = 201, description = "Created", body = PartnerProgram),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown program or partner", body = ErrorBody),
        (status = 409, description = "The partner is already in the program", body = ErrorBody),
    ),
)]
async fn add_program_partner(
    _: Admin,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(b): JsonBody<ProgramPartnerBody>,
) -> Result<(StatusCode, Json<PartnerProgram>)> {
    let status = one_of("status", b.status.as_deref().unwrap_or("approved"))?;
    Ok(created(
        s.app.add_program_partner(id, b.partner_id, status).await?,
    ))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkBody {
    program_id: i64,
    partner_id: Option<i64>,
    short_link: String,
    status: Option<String>,
}

/// Create a referral link.
#[utoipa::path(
    post,
    path = "/links",
    tag = "management",
    request_body = LinkBody,
    security(("admin_token" = [])),
    responses(
        (status = 201, description = "Created", body = Link),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown program or partner", body = ErrorBody),
        (status = 409, description = "The short_link is taken", body = ErrorBody),
    ),
)]
async fn create_link(
    _: Admin,
    State(s): State<AppState>,
    JsonBody(b): JsonBody<LinkBody>,
) -> Result<(StatusCode, Json<Link>)> {
    let short_link = b.short_link.trim();
    if short_link.is_empty() || short_link.len() > 255 || short_link.contains(char::is_whitespace) {
        return Err(Error::bad_request(
            "short_link must be 1 to 255 characters without spaces",
        ));
    }
    let status = one_of("status", b.status.as_deref().unwrap_or("active"))?;
    Ok(created(
        s.app
            .create_link(b.program_id, b.partner_id, short_link, status)
            .await?,
    ))
}

/// Show a referral link.
#[utoipa::path(
    get,
    path = "/links/{id}",
    tag = "management",
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The link with its click counter", body = Link),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown link", body = ErrorBody),
    ),
)]
async fn get_link(
    _: Admin,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<Link>> {
    Ok(Json(s.app.link(id).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkPatchBody {
    status: String,
}

/// Change a link's status.
#[utoipa::path(
    patch,
    path = "/links/{id}",
    tag = "management",
    request_body = LinkPatchBody,
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The changed link", body = Link),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown link", body = ErrorBody),
    ),
)]
async fn update_link(
    _: Admin,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(b): JsonBody<LinkPatchBody>,
) -> Result<Json<Link>> {
    let status = one_of("status", &b.status)?;
    Ok(Json(s.app.set_link_status(id, status).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserBody {
    email: String,
    password: String,
    name: Option<String>,
}

/// Create a dashboard user (password stored with argon2id).
#[utoipa::path(
    post,
    path = "/users",
    tag = "management",
    request_body = UserBody,
    security(("admin_token" = [])),
    responses(
        (status = 201, description = "Created", body = User),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 409, description = "The email is taken", body = ErrorBody),
    ),
)]
async fn create_user(
    _: Admin,
    State(s): State<AppState>,
    JsonBody(b): JsonBody<UserBody>,
) -> Result<(StatusCode, Json<User>)> {
    let email = b.email.trim().to_ascii_lowercase();
    if !email.contains('@') || email.len() > 255 {
        return Err(Error::bad_request("email must be an email address"));
    }
    if b.password.chars().count() < 8 || b.password.len() > 1024 {
        return Err(Error::bad_request("password must be 8 to 1024 characters"));
    }
    let display = b.name.map(|n| name("name", &n, 200)).transpose()?;
    Ok(created(
        s.app
            .create_user(&email, b.password, display.as_deref())
            .await?,
    ))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberBody {
    user_id: i64,
    role: String,
    status: Option<String>,
}

/// Add a user to a workspace with a role.
#[utoipa::path(
    post,
    path = "/workspaces/{id}/members",
    tag = "management",
    request_body = MemberBody,
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = [])),
    responses(
        (status = 201, description = "Created", body = Membership),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown workspace or user", body = ErrorBody),
        (status = 409, description = "Already a member", body = ErrorBody),
    ),
)]
async fn add_member(
    _: Admin,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(b): JsonBody<MemberBody>,
) -> Result<(StatusCode, Json<Membership>)> {
    let role = one_of("role", &b.role)?;
    let status = one_of("status", b.status.as_deref().unwrap_or("active"))?;
    Ok(created(
        s.app.add_member(id, b.user_id, role, status).await?,
    ))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberPatchBody {
    role: Option<String>,
    status: Option<String>,
}

/// Change a member's role or status.
#[utoipa::path(
    patch,
    path = "/workspaces/{id}/members/{user_id}",
    tag = "management",
    request_body = MemberPatchBody,
    params(("id" = i64, Path, description = "id"), ("user_id" = i64, Path, description = "user id")),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The changed membership", body = Membership),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown membership", body = ErrorBody),
    ),
)]
async fn update_member(
    _: Admin,
    State(s): State<AppState>,
    PathParams((id, user_id)): PathParams<(i64, i64)>,
    JsonBody(b): JsonBody<MemberPatchBody>,
) -> Result<Json<Membership>> {
    let role = b.role.map(|r| one_of("role", &r)).transpose()?;
    let status = b.status.map(|st| one_of("status", &st)).transpose()?;
    Ok(Json(s.app.update_member(id, user_id, role, status).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PaymentAccountBody {
    status: String,
    account_id: Option<String>,
    #[serde(default)]
    charges_enabled: bool,
    #[serde(default)]
    payouts_enabled: bool,
    #[serde(default)]
    details_submitted: bool,
    connection_date: Option<String>,
}

/// Set a program's payment-account fields.
#[utoipa::path(
    put,
    path = "/programs/{id}/payment-account",
    tag = "management",
    request_body = PaymentAccountBody,
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The program", body = ProgramView),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
async fn set_payment_account(
    _: Admin,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(b): JsonBody<PaymentAccountBody>,
) -> Result<Json<ProgramView>> {
    let connection_date = match b.connection_date.as_deref() {
        None => None,
        Some(d) => Some(
            chrono::DateTime::parse_from_rfc3339(d)
                .map_err(|_| Error::bad_request("connection_date must be an ISO 8601 timestamp"))?
                .timestamp_millis(),
        ),
    };
    let account = PaymentAccount {
        status: name("status", &b.status, 64)?,
        account_id: b
            .account_id
            .map(|a| name("account_id", &a, 255))
            .transpose()?,
        charges_enabled: b.charges_enabled,
        payouts_enabled: b.payouts_enabled,
        details_submitted: b.details_submitted,
        connection_date,
    };
    Ok(Json(program_view(
        &s.app.set_payment_account(id, account).await?,
        None,
    )))
}
