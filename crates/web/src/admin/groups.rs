//! Partner groups of programs, under `/api/admin/programs/{id}/groups` and
//! `/api/admin/groups/{id}` ([`reftrack_service::programs::groups`]).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;

use super::{created, Manager};
use crate::error::{ErrorBody, Result};
use crate::extract::{JsonBody, PathParams};
use crate::AppState;
use reftrack_service::programs::groups::{GroupBody, GroupPatchBody};
use reftrack_service::Listed;
use reftrack_store::Group;

/// List a program's partner groups, the default group first.
#[utoipa::path(
    get,
    path = "/programs/{id}/groups",
    tag = "management",
    params(("id" = i64, Path, description = "Program id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "Every group of the program", body = Listed<Group>),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
pub(super) async fn list_groups(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<Listed<Group>>> {
    Ok(Json(s.app.list_groups(&caller, id).await?))
}

/// Create a partner group.
///
/// Without `rewards`, the group starts with a copy of the default group's. Its partners'
/// sales and leads earn its rewards from the moment they join it.
#[utoipa::path(
    post,
    path = "/programs/{id}/groups",
    tag = "management",
    request_body = GroupBody,
    params(("id" = i64, Path, description = "Program id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 201, description = "Created", body = Group),
        (status = 400, description = "Invalid field (the error names it)", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
        (status = 409, description = "A group of the program has this name", body = ErrorBody),
    ),
)]
pub(super) async fn create_group(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<GroupBody>,
) -> Result<(StatusCode, Json<Group>)> {
    Ok(created(s.app.create_group(&caller, id, body).await?))
}

/// One partner group.
#[utoipa::path(
    get,
    path = "/groups/{id}",
    tag = "management",
    params(("id" = i64, Path, description = "Group id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The group", body = Group),
        (status = 404, description = "Unknown group", body = ErrorBody),
    ),
)]
pub(super) async fn get_group(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<Group>> {
    Ok(Json(s.app.group(&caller, id).await?))
}

/// Change a partner group's name, rewards or hold.
///
/// New rewards apply to sales and leads recorded after the change; commissions already
/// created keep their amount. A change of the default group's sale reward is also the
/// program's `commission` and `recurring_commission_months`.
#[utoipa::path(
    patch,
    path = "/groups/{id}",
    tag = "management",
    request_body = GroupPatchBody,
    params(("id" = i64, Path, description = "Group id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The group", body = Group),
        (status = 400, description = "Invalid field (the error names it)", body = ErrorBody),
        (status = 404, description = "Unknown group", body = ErrorBody),
        (status = 409, description = "A group of the program has this name", body = ErrorBody),
    ),
)]
pub(super) async fn update_group(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<GroupPatchBody>,
) -> Result<Json<Group>> {
    Ok(Json(s.app.update_group(&caller, id, body).await?))
}

/// Delete a partner group: not the default group, and only once it has no partners.
#[utoipa::path(
    delete,
    path = "/groups/{id}",
    tag = "management",
    params(("id" = i64, Path, description = "Group id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The deleted group", body = Group),
        (status = 404, description = "Unknown group", body = ErrorBody),
        (status = 409, description = "The default group, or a group with partners", body = ErrorBody),
    ),
)]
pub(super) async fn delete_group(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<Group>> {
    Ok(Json(s.app.delete_group(&caller, id).await?))
}
