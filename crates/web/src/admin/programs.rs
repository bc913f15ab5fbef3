//! Programs: the management calls that create, show and change them (their API key and
//! payment account included), and their list.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;

use super::{created, Manager};
use crate::error::{ErrorBody, Result};
use crate::extract::{read_list_query, JsonBody, OptionalJsonBody, PathParams};
use crate::paging::PageQuery;
use crate::AppState;
use reftrack_service::programs::{
    PaymentAccountBody, ProgramBody, ProgramPatchBody, ProgramView, RotateTokenBody,
};
use reftrack_service::Listed;

/// The filter of the program list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProgramQuery {
    /// Only this workspace's programs.
    #[param(value_type = Option<i64>)]
    pub workspace_id: Option<String>,
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
pub(super) async fn create_program(
    Manager(caller): Manager,
    State(s): State<AppState>,
    JsonBody(body): JsonBody<ProgramBody>,
) -> Result<(StatusCode, Json<ProgramView>)> {
    Ok(created(s.app.create_program(&caller, body).await?))
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
pub(super) async fn get_program(
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
pub(super) async fn update_program(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<ProgramPatchBody>,
) -> Result<Json<ProgramView>> {
    Ok(Json(s.app.update_program(&caller, id, body).await?))
}

/// Issue a new API key for a program. The old one stops working at once, or after
/// `keep_old_for_hours` (up to 168), so servers can switch keys without refused
/// calls; the body may be left out.
#[utoipa::path(
    post,
    path = "/programs/{id}/rotate-token",
    tag = "management",
    request_body = Option<RotateTokenBody>,
    params(("id" = i64, Path, description = "id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The program with its new API key", body = ProgramView),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
pub(super) async fn rotate_token(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    OptionalJsonBody(body): OptionalJsonBody<RotateTokenBody>,
) -> Result<Json<ProgramView>> {
    Ok(Json(s.app.rotate_program_token(&caller, id, body).await?))
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
pub(super) async fn set_payment_account(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<PaymentAccountBody>,
) -> Result<Json<ProgramView>> {
    Ok(Json(s.app.set_payment_account(&caller, id, body).await?))
}

/// List programs, of one workspace with `workspace_id`.
#[utoipa::path(
    get,
    path = "/programs",
    tag = "management",
    params(ProgramQuery, PageQuery),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "One page", body = Listed<ProgramView>),
        (status = 400, description = "Invalid filter, limit or cursor", body = ErrorBody),
        (status = 404, description = "Unknown workspace", body = ErrorBody),
    ),
)]
pub(super) async fn list_programs(
    Manager(caller): Manager,
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<ProgramView>>> {
    let list: PageQuery = read_list_query(raw.as_deref())?;
    let q: ProgramQuery = read_list_query(raw.as_deref())?;
    Ok(Json(
        s.app
            .list_programs(&caller, q.workspace_id.as_deref(), &list.page())
            .await?,
    ))
}
