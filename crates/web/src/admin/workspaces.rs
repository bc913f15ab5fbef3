//! Workspaces, their members, and the server's dashboard users: the management calls
//! that create and change them, and their lists.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;

use super::{created, Manager};
use crate::error::{ErrorBody, Result};
use crate::extract::{read_list_query, JsonBody, PathParams};
use crate::paging::{ListQuery, PageQuery};
use crate::AppState;
use reftrack_service::audit::AuditParams;
use reftrack_service::money::exports;
use reftrack_service::programs::{
    MemberBody, MemberPatchBody, UserBody, UserPatchBody, WorkspaceBody,
};
use reftrack_service::two_factor::{WorkspaceSettingsBody, WorkspaceTwoFactor};
use reftrack_service::Listed;
use reftrack_store::{AuditRow, Membership, User, Workspace};

/// The filter of the user list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UserQuery {
    /// Users whose email or name contains this text (any case).
    pub q: Option<String>,
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
pub(super) async fn create_workspace(
    Manager(caller): Manager,
    State(s): State<AppState>,
    JsonBody(body): JsonBody<WorkspaceBody>,
) -> Result<(StatusCode, Json<Workspace>)> {
    Ok(created(s.app.create_workspace(&caller, body).await?))
}

/// Change a workspace's settings.
///
/// `{require_two_factor}`: whether members must sign in with two-factor. While it is on, a
/// member without two-factor is refused the workspace's records with 403 (`Two-factor
/// authentication is required by this workspace`) until it turns two-factor on; the admin
/// token is not affected. Owners of the workspace only (and the admin token).
#[utoipa::path(
    patch,
    path = "/workspaces/{id}",
    tag = "management",
    request_body = WorkspaceSettingsBody,
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The settings", body = WorkspaceTwoFactor),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 403, description = "Not an owner of the workspace", body = ErrorBody),
        (status = 404, description = "Unknown workspace", body = ErrorBody),
    ),
)]
pub(super) async fn update_workspace(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<WorkspaceSettingsBody>,
) -> Result<Json<WorkspaceTwoFactor>> {
    Ok(Json(
        s.app
            .set_require_two_factor(&caller, id, body.require_two_factor)
            .await?,
    ))
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
pub(super) async fn add_member(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<MemberBody>,
) -> Result<(StatusCode, Json<Membership>)> {
    Ok(created(s.app.add_member(&caller, id, body).await?))
}

/// Change a member's role or status.
#[utoipa::path(
    patch,
    path = "/workspaces/{id}/members/{user_id}",
    tag = "management",
    request_body = MemberPatchBody,
    params(
        ("id" = i64, Path, description = "id"),
        ("user_id" = i64, Path, description = "user id"),
    ),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The changed membership", body = Membership),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown membership", body = ErrorBody),
    ),
)]
pub(super) async fn update_member(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams((id, user_id)): PathParams<(i64, i64)>,
    JsonBody(body): JsonBody<MemberPatchBody>,
) -> Result<Json<Membership>> {
    Ok(Json(s.app.update_member(&caller, id, user_id, body).await?))
}

/// Remove a member from a workspace.
///
/// The user no longer reaches the workspace's records; its account stays. A member may
/// not remove the workspace's only active owner (409); the operator may.
#[utoipa::path(
    delete,
    path = "/workspaces/{id}/members/{user_id}",
    tag = "management",
    params(
        ("id" = i64, Path, description = "id"),
        ("user_id" = i64, Path, description = "user id"),
    ),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 204, description = "Removed"),
        (status = 403, description = "Not an owner of the workspace", body = ErrorBody),
        (status = 404, description = "Unknown membership", body = ErrorBody),
        (status = 409, description = "The workspace's only active owner", body = ErrorBody),
    ),
)]
pub(super) async fn remove_member(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams((id, user_id)): PathParams<(i64, i64)>,
) -> Result<StatusCode> {
    s.app.remove_member(&caller, id, user_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// List workspaces (a dashboard session sees those it is an active member of).
#[utoipa::path(
    get,
    path = "/workspaces",
    tag = "management",
    params(PageQuery),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "One page", body = Listed<Workspace>),
        (status = 400, description = "Invalid limit or cursor", body = ErrorBody),
    ),
)]
pub(super) async fn list_workspaces(
    Manager(caller): Manager,
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<Workspace>>> {
    let list: PageQuery = read_list_query(raw.as_deref())?;
    Ok(Json(s.app.list_workspaces(&caller, &list.page()).await?))
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
pub(super) async fn create_user(
    Manager(caller): Manager,
    State(s): State<AppState>,
    JsonBody(body): JsonBody<UserBody>,
) -> Result<(StatusCode, Json<User>)> {
    Ok(created(s.app.create_user(&caller, body).await?))
}

/// Change a dashboard user's name or password: the operator's alone, for a user who
/// forgot a password. A new password ends every session the user had.
#[utoipa::path(
    patch,
    path = "/users/{id}",
    tag = "management",
    request_body = UserPatchBody,
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The changed user", body = User),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 403, description = "Not the operator", body = ErrorBody),
        (status = 404, description = "Unknown user", body = ErrorBody),
    ),
)]
pub(super) async fn update_user(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<UserPatchBody>,
) -> Result<Json<User>> {
    Ok(Json(s.app.update_user(&caller, id, body).await?))
}

// The operator's alone: unlike the other lists, a dashboard session may not ask for it.
/// List the server's dashboard users, searching with `q`: the operator's alone (admin
/// token), to find the user whose password to set or whom to add to a workspace.
#[utoipa::path(
    get,
    path = "/users",
    tag = "management",
    params(UserQuery, PageQuery),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "One page", body = Listed<User>),
        (status = 400, description = "Invalid filter, limit or cursor", body = ErrorBody),
        (status = 403, description = "Not the operator", body = ErrorBody),
    ),
)]
pub(super) async fn list_users(
    Manager(caller): Manager,
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<User>>> {
    let list: PageQuery = read_list_query(raw.as_deref())?;
    let q: UserQuery = read_list_query(raw.as_deref())?;
    Ok(Json(
        s.app
            .list_users(&caller, q.q.as_deref(), &list.page())
            .await?,
    ))
}

/// The filters of the audit log.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only entries of this action (`program.updated`, `payout.paid`, …).
    pub action: Option<String>,
    /// Only entries of this program.
    #[param(value_type = Option<i64>)]
    pub program_id: Option<String>,
    /// From this instant on: an ISO 8601 timestamp, or a date `YYYY-MM-DD` (its start,
    /// UTC).
    pub from: Option<String>,
    /// Up to this instant: an ISO 8601 timestamp, or a date `YYYY-MM-DD` (the whole day,
    /// UTC).
    pub to: Option<String>,
}

impl AuditQuery {
    /// The service layer's parameters.
    pub(crate) fn params(self) -> AuditParams {
        AuditParams {
            action: self.action,
            program_id: self.program_id,
            from: self.from,
            to: self.to,
        }
    }
}

/// A workspace's audit log, newest first, or every matching entry with `?format=csv`:
/// the changes to money, access and settings, who made them, and from where. Owners and
/// admins of the workspace, and the operator.
#[utoipa::path(
    get,
    path = "/workspaces/{id}/audit-log",
    tag = "management",
    params(("id" = i64, Path, description = "Workspace id"), AuditQuery, ListQuery),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "One page, or every entry as text/csv", body = Listed<AuditRow>),
        (status = 400, description = "Invalid filter, limit or cursor", body = ErrorBody),
        (status = 403, description = "The caller's role may not read it", body = ErrorBody),
        (status = 404, description = "Unknown workspace", body = ErrorBody),
    ),
)]
pub async fn audit_log(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let list: ListQuery = read_list_query(raw.as_deref())?;
    let q: AuditQuery = read_list_query(raw.as_deref())?;
    let params = &q.params();
    list.page_or_csv(
        s.app.audit_log(&caller, id, params, &list.page()),
        s.app.export_audit_log(&caller, id, params),
        format!("workspace-{id}-audit-log.csv"),
        exports::audit_csv,
    )
    .await
}
