//! The management API, under `/api/admin`, behind the admin token. Handlers validate
//! their bodies and call the service layer ([`crate::app::admin`]).

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::bearer::{bearer, Bearer};
use super::error::{Error, ErrorBody, Result};
use super::extract::{JsonBody, PathParams};
use super::AppState;
use crate::app::admin::{
    LinkBody, LinkPatchBody, MemberBody, MemberPatchBody, PartnerBody, PartnerPatchBody,
    PaymentAccountBody, ProgramBody, ProgramPartnerBody, ProgramPatchBody, ProgramView, UserBody,
    WorkspaceBody,
};
use crate::app::secrets::{hash_token, hashes_match};
use crate::app::Caller;
use crate::store::{Link, Membership, Partner, PartnerProgram, User, Workspace};

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
        .routes(routes!(update_partner))
        .routes(routes!(create_link))
        .routes(routes!(get_link, update_link))
        .routes(routes!(create_user))
}

/// The caller of a management call: the operator's admin token, or a dashboard session
/// (then scoped to its workspaces by the service layer). Rejects with 401 when the
/// request carries neither.
pub struct Manager(pub Caller);

impl FromRequestParts<AppState> for Manager {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let Bearer::Token(token) = bearer(&parts.headers) else {
            return Err(unauthorized());
        };
        if hashes_match(&hash_token(token), &state.admin_token_hash) {
            return Ok(Manager(Caller::Operator));
        }
        match state.app.session_user(token).await? {
            Some((user, _)) => Ok(Manager(state.app.member_caller(user.user_id).await?)),
            None => Err(unauthorized()),
        }
    }
}

fn unauthorized() -> Error {
    Error::Unauthorized("Missing or invalid admin token or dashboard session".into())
}

fn created<T>(v: T) -> (StatusCode, Json<T>) {
    (StatusCode::CREATED, Json(v))
}

/// Create a workspace.
#[utoipa::path(
    post,
    path = "/workspaces",
    tag = "management",
    request_body = WorkspaceBody,
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 201, description = "Created", body = Workspace),
        (status = 400, description = "Invalid field", body = ErrorBody),
    ),
)]
async fn create_workspace(
    Manager(caller): Manager,
    State(s): State<AppState>,
    JsonBody(b): JsonBody<WorkspaceBody>,
) -> Result<(StatusCode, Json<Workspace>)> {
    Ok(created(s.app.create_workspace(&caller, b).await?))
}

/// Create a program; the answer carries its API key, shown only here.
#[utoipa::path(
    post,
    path = "/programs",
    tag = "management",
    request_body = ProgramBody,
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 201, description = "Created; carries the API key", body = ProgramView),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown workspace", body = ErrorBody),
    ),
)]
async fn create_program(
    Manager(caller): Manager,
    State(s): State<AppState>,
    JsonBody(b): JsonBody<ProgramBody>,
) -> Result<(StatusCode, Json<ProgramView>)> {
    Ok(created(s.app.create_program(&caller, b).await?))
}

/// Show a program.
#[utoipa::path(
    get,
    path = "/programs/{id}",
    tag = "management",
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The program", body = ProgramView),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
async fn get_program(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<ProgramView>> {
    Ok(Json(s.app.program_view(&caller, id).await?))
}

/// Change a program; absent fields stay, `null` clears the nullable ones.
#[utoipa::path(
    patch,
    path = "/programs/{id}",
    tag = "management",
    request_body = ProgramPatchBody,
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The changed program", body = ProgramView),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
async fn update_program(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(b): JsonBody<ProgramPatchBody>,
) -> Result<Json<ProgramView>> {
    Ok(Json(s.app.update_program(&caller, id, b).await?))
}

/// Issue a new API key for a program; the old one stops working.
#[utoipa::path(
    post,
    path = "/programs/{id}/rotate-token",
    tag = "management",
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The program with its new API key", body = ProgramView),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
async fn rotate_token(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<ProgramView>> {
    Ok(Json(s.app.rotate_program_token(&caller, id).await?))
}

/// Create a partner.
#[utoipa::path(
    post,
    path = "/partners",
    tag = "management",
    request_body = PartnerBody,
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 201, description = "Created", body = Partner),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown workspace_id", body = ErrorBody),
        (status = 409, description = "The code is taken", body = ErrorBody),
    ),
)]
async fn create_partner(
    Manager(caller): Manager,
    State(s): State<AppState>,
    JsonBody(b): JsonBody<PartnerBody>,
) -> Result<(StatusCode, Json<Partner>)> {
    Ok(created(s.app.create_partner(&caller, b).await?))
}

/// Change a partner's name, email or payout details; absent fields stay, `null` clears.
#[utoipa::path(
    patch,
    path = "/partners/{id}",
    tag = "management",
    request_body = PartnerPatchBody,
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The changed partner", body = Partner),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown partner", body = ErrorBody),
    ),
)]
async fn update_partner(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(b): JsonBody<PartnerPatchBody>,
) -> Result<Json<Partner>> {
    Ok(Json(s.app.update_partner(&caller, id, b).await?))
}

/// Add a partner to a program (the partner-program record).
#[utoipa::path(
    post,
    path = "/programs/{id}/partners",
    tag = "management",
    request_body = ProgramPartnerBody,
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 201, description = "Created", body = PartnerProgram),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown program or partner", body = ErrorBody),
        (status = 409, description = "The partner is already in the program", body = ErrorBody),
    ),
)]
async fn add_program_partner(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(b): JsonBody<ProgramPartnerBody>,
) -> Result<(StatusCode, Json<PartnerProgram>)> {
    Ok(created(s.app.add_program_partner(&caller, id, b).await?))
}

/// Create a referral link.
#[utoipa::path(
    post,
    path = "/links",
    tag = "management",
    request_body = LinkBody,
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 201, description = "Created", body = Link),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown program or partner", body = ErrorBody),
        (status = 409, description = "The short_link is taken", body = ErrorBody),
    ),
)]
async fn create_link(
    Manager(caller): Manager,
    State(s): State<AppState>,
    JsonBody(b): JsonBody<LinkBody>,
) -> Result<(StatusCode, Json<Link>)> {
    Ok(created(s.app.create_link(&caller, b).await?))
}

/// Show a referral link, with its click counter and active coupon codes.
#[utoipa::path(
    get,
    path = "/links/{id}",
    tag = "management",
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The link with its click counter", body = Link),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown link", body = ErrorBody),
    ),
)]
async fn get_link(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<Link>> {
    Ok(Json(s.app.link(&caller, id).await?))
}

/// Change a link's status or destination; absent fields stay, a `null` destination
/// falls back to the program's.
#[utoipa::path(
    patch,
    path = "/links/{id}",
    tag = "management",
    request_body = LinkPatchBody,
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The changed link", body = Link),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown link", body = ErrorBody),
    ),
)]
async fn update_link(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(b): JsonBody<LinkPatchBody>,
) -> Result<Json<Link>> {
    Ok(Json(s.app.update_link(&caller, id, b).await?))
}

/// Create a dashboard user (password stored with argon2id).
#[utoipa::path(
    post,
    path = "/users",
    tag = "management",
    request_body = UserBody,
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 201, description = "Created", body = User),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 409, description = "The email is taken", body = ErrorBody),
    ),
)]
async fn create_user(
    Manager(caller): Manager,
    State(s): State<AppState>,
    JsonBody(b): JsonBody<UserBody>,
) -> Result<(StatusCode, Json<User>)> {
    Ok(created(s.app.create_user(&caller, b).await?))
}

/// Add a user to a workspace with a role.
#[utoipa::path(
    post,
    path = "/workspaces/{id}/members",
    tag = "management",
    request_body = MemberBody,
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 201, description = "Created", body = Membership),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown workspace or user", body = ErrorBody),
        (status = 409, description = "Already a member", body = ErrorBody),
    ),
)]
async fn add_member(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(b): JsonBody<MemberBody>,
) -> Result<(StatusCode, Json<Membership>)> {
    Ok(created(s.app.add_member(&caller, id, b).await?))
}

/// Change a member's role or status.
#[utoipa::path(
    patch,
    path = "/workspaces/{id}/members/{user_id}",
    tag = "management",
    request_body = MemberPatchBody,
    params(("id" = i64, Path, description = "id"), ("user_id" = i64, Path, description = "user id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The changed membership", body = Membership),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown membership", body = ErrorBody),
    ),
)]
async fn update_member(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams((id, user_id)): PathParams<(i64, i64)>,
    JsonBody(b): JsonBody<MemberPatchBody>,
) -> Result<Json<Membership>> {
    Ok(Json(s.app.update_member(&caller, id, user_id, b).await?))
}

/// Set a program's payment-account fields.
#[utoipa::path(
    put,
    path = "/programs/{id}/payment-account",
    tag = "management",
    request_body = PaymentAccountBody,
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The program", body = ProgramView),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
async fn set_payment_account(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(b): JsonBody<PaymentAccountBody>,
) -> Result<Json<ProgramView>> {
    Ok(Json(s.app.set_payment_account(&caller, id, b).await?))
}
