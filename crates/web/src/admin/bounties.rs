//! Bounties of programs, under `/api/admin/programs/{id}/bounties` and
//! `/api/admin/bounties/{id}` ([`reftrack_service::programs::bounties`]).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;

use super::{created, Manager};
use crate::error::{ErrorBody, Result};
use crate::extract::{JsonBody, PathParams};
use crate::AppState;
use reftrack_service::programs::bounties::{BountyBody, BountyPatchBody};
use reftrack_service::Listed;
use reftrack_store::BountyRow;

/// List a program's bounties, newest first.
#[utoipa::path(
    get,
    path = "/programs/{id}/bounties",
    tag = "management",
    params(("id" = i64, Path, description = "Program id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "Every bounty of the program", body = Listed<BountyRow>),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
pub(super) async fn list_bounties(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<Listed<BountyRow>>> {
    Ok(Json(s.app.list_bounties(&caller, id).await?))
}

/// Create a bounty: a one-off reward for reaching a goal.
///
/// It counts each partner's live events of its metric recorded from now on in its window
/// (`starts_at` inclusive, `ends_at` exclusive). The event that brings an approved partner
/// of one of its groups to `threshold` creates a commission of kind `bounty` of
/// `amount_cents` for that partner, once, with the program's hold.
#[utoipa::path(
    post,
    path = "/programs/{id}/bounties",
    tag = "management",
    request_body = BountyBody,
    params(("id" = i64, Path, description = "Program id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 201, description = "Created", body = BountyRow),
        (status = 400, description = "Invalid field (the error names it)", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
pub(super) async fn create_bounty(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<BountyBody>,
) -> Result<(StatusCode, Json<BountyRow>)> {
    Ok(created(s.app.create_bounty(&caller, id, body).await?))
}

/// One bounty.
#[utoipa::path(
    get,
    path = "/bounties/{id}",
    tag = "management",
    params(("id" = i64, Path, description = "Bounty id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The bounty", body = BountyRow),
        (status = 404, description = "Unknown bounty", body = ErrorBody),
    ),
)]
pub(super) async fn get_bounty(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<BountyRow>> {
    Ok(Json(s.app.bounty(&caller, id).await?))
}

/// Change a bounty.
///
/// The change applies to the events recorded from now on; the awards made stay. An
/// archived bounty does not change.
#[utoipa::path(
    patch,
    path = "/bounties/{id}",
    tag = "management",
    request_body = BountyPatchBody,
    params(("id" = i64, Path, description = "Bounty id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The bounty", body = BountyRow),
        (status = 400, description = "Invalid field (the error names it)", body = ErrorBody),
        (status = 404, description = "Unknown bounty", body = ErrorBody),
        (status = 409, description = "The bounty is archived", body = ErrorBody),
    ),
)]
pub(super) async fn update_bounty(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<BountyPatchBody>,
) -> Result<Json<BountyRow>> {
    Ok(Json(s.app.update_bounty(&caller, id, body).await?))
}

/// Archive a bounty: it makes no new awards; those made stay.
#[utoipa::path(
    delete,
    path = "/bounties/{id}",
    tag = "management",
    params(("id" = i64, Path, description = "Bounty id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The archived bounty", body = BountyRow),
        (status = 404, description = "Unknown bounty", body = ErrorBody),
    ),
)]
pub(super) async fn archive_bounty(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<BountyRow>> {
    Ok(Json(s.app.archive_bounty(&caller, id).await?))
}
