//! The partner API under `/api/partner` (sign-in, applications, and the signed-in
//! partner's own programs), the [`PartnerSession`] extractor, and the management call
//! that invites a partner. Handlers read the request and call [`reftrack_service::accounts`].

use axum::extract::{FromRequestParts, RawQuery, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use reftrack_domain::audit::{Actor, Origin};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::Manager;
use super::bearer::{bearer, Bearer};
use super::dashboard::PerformanceQuery;
use super::error::{Error, ErrorBody, Result, TwoFactorRequiredBody};
use super::extract::{read_list_query, read_query, JsonBody, OptionalJsonBody, PathParams};
use super::paging::{ListQuery, PageQuery};
use super::payouts::CommissionQuery;
use super::session::{session_answer, throttled, LoginBody, LoginResponse, LogoutResponse};
use super::AppState;
use reftrack_service::accounts::{
    AcceptInviteBody, Application, ApplyBody, Invite, PartnerLink, PartnerLinkBody, PartnerMe,
    PartnerMeBody, PasswordBody, PasswordResetAnswer, PasswordResetBody, RESET_SENT,
};
use reftrack_service::dashboard::performance::PerformanceResponse;
use reftrack_service::money::exports;
use reftrack_service::two_factor::SignInStep;
use reftrack_service::Listed;
use reftrack_store::partners::PartnerPayoutItem;
use reftrack_store::{CommissionRow, PartnerBounty};

/// Routes under `/api/partner`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        // Every call that checks or hashes a password counts against the per-client-IP
        // login limit: argon2 is deliberately costly.
        .routes(routes!(partner_login))
        .routes(routes!(accept_partner_invite))
        .routes(routes!(reset_partner_password))
        .routes(routes!(apply_to_program))
        .routes(routes!(change_partner_password))
        .routes(routes!(partner_me, update_partner_me))
        .merge(super::two_factor::partner_router())
        .route_layer(axum::middleware::from_fn(super::rate_limit::logins))
        .routes(routes!(partner_logout))
        .routes(routes!(partner_links, create_partner_link))
        .routes(routes!(partner_performance))
        .routes(routes!(partner_commissions))
        .routes(routes!(partner_payouts))
        .routes(routes!(partner_bounties))
}

/// The management call that invites a partner, merged under `/api/admin`.
pub fn admin_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(invite_partner))
}

/// The partner of a live partner session (`Authorization: Bearer <partner session>`).
/// Rejects with 401 when the header is missing or the session unknown, ended or expired:
/// a dashboard session or the admin token is not a partner session.
#[derive(Debug, Clone)]
pub struct PartnerSession {
    /// The signed-in partner.
    pub partner_id: i64,
    token_hash: String,
}

impl FromRequestParts<AppState> for PartnerSession {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let Bearer::Token(token) = bearer(&parts.headers) else {
            return Err(Error::Unauthorized(
                "Authentication required: send Authorization: Bearer <partner session token>"
                    .into(),
            ));
        };
        match state.app.partner_session(token).await? {
            Some((partner_id, token_hash)) => Ok(PartnerSession {
                partner_id,
                token_hash,
            }),
            None => Err(Error::Unauthorized(
                "Invalid or expired partner session".into(),
            )),
        }
    }
}

/// The partner session a request may carry: `None` without an `Authorization` header,
/// 401 with one that is not a live partner session.
struct MaybePartner(Option<PartnerSession>);

impl FromRequestParts<AppState> for MaybePartner {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        if matches!(bearer(&parts.headers), Bearer::Absent) {
            return Ok(MaybePartner(None));
        }
        Ok(MaybePartner(Some(
            PartnerSession::from_request_parts(parts, state).await?,
        )))
    }
}

/// Invite a partner to sign in.
///
/// The answer's `invite_url` opens the partner portal's page that sets a password; it
/// works once, for 7 days. Inviting again issues a new link and ends the older ones (also
/// how a partner that forgot its password gets a new one). The partner needs an email. A
/// dashboard session needs to manage every workspace whose programs the partner is in
/// (403 otherwise): a new password reaches all of them. When an SMTP server
/// is configured (`REFTRACK_SMTP_URL`) the link is also mailed to that email, and
/// `emailed` tells whether the server accepted the mail; a mail that fails leaves the
/// invite working, and the answer still carries the link.
#[utoipa::path(
    post,
    path = "/partners/{id}/invite",
    tag = "partners",
    params(("id" = i64, Path, description = "Partner id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 201, description = "The invite link", body = Invite),
        (status = 400, description = "The partner has no email", body = ErrorBody),
        (status = 404, description = "Unknown partner", body = ErrorBody),
    ),
)]
async fn invite_partner(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<(StatusCode, Json<Invite>)> {
    let url = s.app.public_url().await?;
    let invite = s.app.invite_partner(&caller, id, &url).await?;
    Ok((StatusCode::CREATED, Json(invite)))
}

/// Accept an invite: set the password and sign in.
#[utoipa::path(
    post,
    path = "/auth/accept-invite",
    tag = "partners",
    request_body = AcceptInviteBody,
    responses(
        (status = 200, description = "A partner session", body = LoginResponse),
        (status = 400, description = "Weak password, or an unknown, used or expired invite", body = ErrorBody),
        (status = 409, description = "Another partner account signs in with this email", body = ErrorBody),
        (status = 429, description = "Too many attempts from this client", body = ErrorBody),
    ),
)]
async fn accept_partner_invite(
    State(s): State<AppState>,
    JsonBody(b): JsonBody<AcceptInviteBody>,
) -> Result<Json<LoginResponse>> {
    Ok(session_answer(s.app.accept_invite(b).await?))
}

/// Ask for a new password by mail.
///
/// When the server mails (`REFTRACK_SMTP_URL`) and knows its address
/// (`REFTRACK_PUBLIC_URL`), the partner account that signs in with `email`, if any, is
/// mailed a link that sets a new password: an invite that works once, for an hour, and
/// ends the account's older invites. The answer is the same whether or not the account
/// exists. Otherwise 404: the program sends a new invite link instead.
#[utoipa::path(
    post,
    path = "/auth/reset",
    tag = "partners",
    request_body = PasswordResetBody,
    responses(
        (status = 202, description = "Mailed, if the account exists", body = PasswordResetAnswer),
        (status = 400, description = "Not an email address", body = ErrorBody),
        (status = 404, description = "Password resets by mail are not set up on this server", body = ErrorBody),
        (status = 429, description = "Too many attempts from this client", body = ErrorBody),
    ),
)]
async fn reset_partner_password(
    State(s): State<AppState>,
    JsonBody(b): JsonBody<PasswordResetBody>,
) -> Result<(StatusCode, Json<PasswordResetAnswer>)> {
    s.app.reset_partner_password(&b.email).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(PasswordResetAnswer {
            message: RESET_SENT.into(),
        }),
    ))
}

/// Sign in as a partner.
///
/// 401 with the same text for an unknown email and a wrong password; 429 with
/// `Retry-After` while the account is locked out after repeated failures, as for the
/// dashboard. A partner with two-factor on also sends `code` (or `recovery_code`), as for
/// the dashboard.
#[utoipa::path(
    post,
    path = "/auth/login",
    tag = "partners",
    request_body = LoginBody,
    responses(
        (status = 200, description = "A partner session", body = LoginResponse),
        (status = 400, description = "Invalid body", body = ErrorBody),
        (status = 401, description = "Invalid email or password, or a missing (`two_factor_required`) or wrong two-factor code", body = TwoFactorRequiredBody),
        (status = 429, description = "Too many attempts from this client or for this account; see Retry-After", body = ErrorBody),
    ),
)]
async fn partner_login(
    State(s): State<AppState>,
    caller: crate::track::Caller,
    JsonBody(b): JsonBody<LoginBody>,
) -> Result<Json<LoginResponse>> {
    let (email, password, second) = b.into_parts();
    let email = email.trim().to_ascii_lowercase();
    let attempt = s.app.partner_login(&email, password, &second);
    let session = throttled(&s, &throttle_key(&email), attempt).await?;
    if let Some(ip) = caller.client_ip(&s) {
        s.app.note_partner_sign_in(&session.token, ip).await;
    }
    Ok(session_answer(session))
}

/// The key of a partner account in the per-account lockout: the throttle is shared with
/// dashboard logins, and a prefix keeps the accounts apart.
pub(crate) fn throttle_key(email: &str) -> String {
    format!("partner:{}", email.trim().to_ascii_lowercase())
}

/// The first step of the portal's sign-in page, under the per-account lockout (429
/// while the account is locked out after repeated failures): a session, or the pending
/// sign-in that waits for a two-factor code.
pub(super) async fn sign_in(s: &AppState, email: &str, password: String) -> Result<SignInStep> {
    let email = email.trim().to_ascii_lowercase();
    let attempt = s.app.begin_sign_in(true, &email, password);
    throttled(s, &throttle_key(&email), attempt).await
}

/// End the caller's partner session.
#[utoipa::path(
    post,
    path = "/auth/logout",
    tag = "partners",
    security(("partner_session" = [])),
    responses(
        (status = 200, description = "The token no longer works", body = LogoutResponse),
        (status = 401, description = "No valid partner session", body = ErrorBody),
    ),
)]
async fn partner_logout(
    State(s): State<AppState>,
    p: PartnerSession,
) -> Result<Json<LogoutResponse>> {
    s.app.partner_logout(&p.token_hash).await?;
    Ok(Json(LogoutResponse { success: true }))
}

/// Apply to a program.
///
/// Public while the program's `applications_open` is true (404 otherwise): `{name, email,
/// password, website?, message?}` creates the applicant's partner account, which may sign
/// in at once but sees no links and earns nothing until approved. An email that already
/// has an account answers 409, unless the call carries that partner's session: then
/// `{website?, message?}` suffice.
#[utoipa::path(
    post,
    path = "/apply/{program_id}",
    tag = "partners",
    params(("program_id" = i64, Path, description = "Program id")),
    request_body = ApplyBody,
    security((), ("partner_session" = [])),
    responses(
        (status = 201, description = "Applied; pending", body = Application),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 401, description = "An Authorization header that is not a live partner session", body = ErrorBody),
        (status = 404, description = "Unknown program, or one that takes no applications", body = ErrorBody),
        (status = 409, description = "The email has an account, or the partner is already in the program", body = ErrorBody),
    ),
)]
async fn apply_to_program(
    State(s): State<AppState>,
    MaybePartner(p): MaybePartner,
    PathParams(program_id): PathParams<i64>,
    OptionalJsonBody(b): OptionalJsonBody<ApplyBody>,
) -> Result<(StatusCode, Json<Application>)> {
    let partner_id = p.map(|p| p.partner_id);
    let done = s.app.apply(program_id, partner_id, b).await?;
    Ok((StatusCode::CREATED, Json(done)))
}

/// The signed-in partner and its programs.
#[utoipa::path(
    get,
    path = "/me",
    tag = "partners",
    security(("partner_session" = [])),
    responses(
        (status = 200, description = "The partner", body = PartnerMe),
        (status = 401, description = "No valid partner session", body = ErrorBody),
    ),
)]
async fn partner_me(State(s): State<AppState>, p: PartnerSession) -> Result<Json<PartnerMe>> {
    Ok(Json(s.app.partner_me(p.partner_id).await?))
}

/// Change the signed-in partner's name and payout details. Changing the payout method or
/// payout email needs `current_password` (403 without it or when wrong, and while the
/// partner is banned from a program) and is mailed to the partner.
#[utoipa::path(
    patch,
    path = "/me",
    tag = "partners",
    request_body = PartnerMeBody,
    security(("partner_session" = [])),
    responses(
        (status = 200, description = "The partner", body = PartnerMe),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 401, description = "No valid partner session", body = ErrorBody),
        (status = 403, description = "Missing or wrong current_password, or a banned partner", body = ErrorBody),
        (status = 429, description = "Too many attempts", body = ErrorBody),
    ),
)]
async fn update_partner_me(
    State(s): State<AppState>,
    p: PartnerSession,
    origin: crate::origin::RequestOrigin,
    JsonBody(b): JsonBody<PartnerMeBody>,
) -> Result<Json<PartnerMe>> {
    let origin = origin.of_actor(Actor::partner(p.partner_id, None));
    Ok(Json(update_me(&s, p.partner_id, b, origin).await?))
}

/// Changes the partner's own details: the API's and the portal's way. A change that
/// carries the partner's password counts toward the account's lock-out as a sign-in
/// does, so that a stolen session cannot guess it quickly.
pub(super) async fn update_me(
    s: &AppState,
    partner_id: i64,
    b: PartnerMeBody,
    origin: Origin,
) -> Result<PartnerMe> {
    if b.current_password.is_none() {
        return Ok(s.app.update_partner_me(partner_id, b, origin).await?);
    }
    let account = format!("partner-id:{partner_id}");
    throttled(s, &account, s.app.update_partner_me(partner_id, b, origin)).await
}

/// Change the signed-in partner's password; its other sessions end.
#[utoipa::path(
    post,
    path = "/me/password",
    tag = "partners",
    request_body = PasswordBody,
    security(("partner_session" = [])),
    responses(
        (status = 200, description = "Changed", body = LogoutResponse),
        (status = 400, description = "Wrong current password, or a weak new one", body = ErrorBody),
        (status = 401, description = "No valid partner session", body = ErrorBody),
    ),
)]
async fn change_partner_password(
    State(s): State<AppState>,
    p: PartnerSession,
    JsonBody(b): JsonBody<PasswordBody>,
) -> Result<Json<LogoutResponse>> {
    s.app
        .change_partner_password(p.partner_id, &p.token_hash, b)
        .await?;
    Ok(Json(LogoutResponse { success: true }))
}

/// The signed-in partner's links in a program, newest first, each with its active
/// `coupon_codes` and, when it leads somewhere, the `redirect_url` to share.
#[utoipa::path(
    get,
    path = "/programs/{id}/links",
    tag = "partners",
    params(("id" = i64, Path, description = "Program id"), PageQuery),
    security(("partner_session" = [])),
    responses(
        (status = 200, description = "One page", body = Listed<PartnerLink>),
        (status = 401, description = "No valid partner session", body = ErrorBody),
        (status = 403, description = "Not approved in this program", body = ErrorBody),
        (status = 404, description = "Not in this program", body = ErrorBody),
    ),
)]
async fn partner_links(
    State(s): State<AppState>,
    p: PartnerSession,
    PathParams(id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<PartnerLink>>> {
    let page = read_list_query::<PageQuery>(raw.as_deref())?.page();
    let url = s.app.public_url().await?;
    Ok(Json(
        s.app.partner_links(p.partner_id, id, &page, &url).await?,
    ))
}

/// Make a link in a program, when the program lets partners do so (at most 20 active);
/// answered as a row of the list.
#[utoipa::path(
    post,
    path = "/programs/{id}/links",
    tag = "partners",
    params(("id" = i64, Path, description = "Program id")),
    request_body = PartnerLinkBody,
    security(("partner_session" = [])),
    responses(
        (status = 201, description = "Created", body = PartnerLink),
        (status = 400, description = "Invalid short_link", body = ErrorBody),
        (status = 401, description = "No valid partner session", body = ErrorBody),
        (status = 403, description = "Not approved, or the program makes the links", body = ErrorBody),
        (status = 404, description = "Not in this program", body = ErrorBody),
        (status = 409, description = "The short_link is taken, or 20 links are active", body = ErrorBody),
    ),
)]
async fn create_partner_link(
    State(s): State<AppState>,
    p: PartnerSession,
    PathParams(id): PathParams<i64>,
    OptionalJsonBody(b): OptionalJsonBody<PartnerLinkBody>,
) -> Result<(StatusCode, Json<PartnerLink>)> {
    let url = s.app.public_url().await?;
    let link = s.app.create_partner_link(p.partner_id, id, b, &url).await?;
    Ok((StatusCode::CREATED, Json(link)))
}

/// The daily figures of the signed-in partner's own links in a program: the dashboard
/// performance endpoint's shape (`partners` is 0), its range starting, for `all`, when
/// the partner joined the program.
#[utoipa::path(
    get,
    path = "/programs/{id}/performance",
    tag = "partners",
    params(("id" = i64, Path, description = "Program id"), PerformanceQuery),
    security(("partner_session" = [])),
    responses(
        (status = 200, description = "Performance of the range", body = PerformanceResponse),
        (status = 400, description = "Invalid period or dates", body = ErrorBody),
        (status = 401, description = "No valid partner session", body = ErrorBody),
        (status = 403, description = "Not approved in this program", body = ErrorBody),
        (status = 404, description = "Not in this program", body = ErrorBody),
    ),
)]
async fn partner_performance(
    State(s): State<AppState>,
    p: PartnerSession,
    PathParams(id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Json<PerformanceResponse>> {
    let q: PerformanceQuery = read_query(raw.as_deref())?;
    let done = s
        .app
        .partner_performance(p.partner_id, id, &q.params())
        .await?;
    Ok(Json(done))
}

/// The signed-in partner's commissions in a program, or all of them with `?format=csv`.
/// The `partner_id` filter is ignored.
#[utoipa::path(
    get,
    path = "/programs/{id}/commissions",
    tag = "partners",
    params(("id" = i64, Path, description = "Program id"), CommissionQuery, ListQuery),
    security(("partner_session" = [])),
    responses(
        (status = 200, description = "One page, or every row as text/csv", body = Listed<CommissionRow>),
        (status = 400, description = "Invalid filter, limit or cursor", body = ErrorBody),
        (status = 401, description = "No valid partner session", body = ErrorBody),
        (status = 403, description = "Not approved in this program", body = ErrorBody),
        (status = 404, description = "Not in this program", body = ErrorBody),
    ),
)]
async fn partner_commissions(
    State(s): State<AppState>,
    p: PartnerSession,
    PathParams(id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let list: ListQuery = read_list_query(raw.as_deref())?;
    let params = read_list_query::<CommissionQuery>(raw.as_deref())?.params();
    let page = list.page();
    list.page_or_csv(
        s.app.partner_commissions(p.partner_id, id, &params, &page),
        s.app.export_partner_commissions(p.partner_id, id, &params),
        format!("program-{id}-my-commissions.csv"),
        exports::commissions_csv,
    )
    .await
}

/// What the program's payouts pay the signed-in partner, newest first.
#[utoipa::path(
    get,
    path = "/programs/{id}/payouts",
    tag = "partners",
    params(("id" = i64, Path, description = "Program id"), PageQuery),
    security(("partner_session" = [])),
    responses(
        (status = 200, description = "One page", body = Listed<PartnerPayoutItem>),
        (status = 401, description = "No valid partner session", body = ErrorBody),
        (status = 403, description = "Not approved in this program", body = ErrorBody),
        (status = 404, description = "Not in this program", body = ErrorBody),
    ),
)]
async fn partner_payouts(
    State(s): State<AppState>,
    p: PartnerSession,
    PathParams(id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<PartnerPayoutItem>>> {
    let page = read_list_query::<PageQuery>(raw.as_deref())?.page();
    Ok(Json(s.app.partner_payouts(p.partner_id, id, &page).await?))
}

/// The signed-in partner's bounties in a program: those its group may earn and those it
/// earned, each with its `progress` (its value of the bounty's metric, counted in the
/// bounty's window) and whether it is `earned`.
#[utoipa::path(
    get,
    path = "/programs/{id}/bounties",
    tag = "partners",
    params(("id" = i64, Path, description = "Program id")),
    security(("partner_session" = [])),
    responses(
        (status = 200, description = "The partner's bounties, newest first", body = Listed<PartnerBounty>),
        (status = 401, description = "No valid partner session", body = ErrorBody),
        (status = 403, description = "Not approved in this program", body = ErrorBody),
        (status = 404, description = "Not in this program", body = ErrorBody),
    ),
)]
async fn partner_bounties(
    State(s): State<AppState>,
    p: PartnerSession,
    PathParams(id): PathParams<i64>,
) -> Result<Json<Listed<PartnerBounty>>> {
    Ok(Json(Listed {
        data: s.app.partner_bounties(p.partner_id, id).await?,
        next_cursor: None,
    }))
}
