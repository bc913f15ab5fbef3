//! Partners and their standing in programs: the management calls that create and change
//! partners, add them to programs and decide on them, and their lists.

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
use reftrack_service::money::exports;
use reftrack_service::programs::management::{PartnerStatusBody, ProgramPartnerParams};
use reftrack_service::programs::{PartnerBody, PartnerPatchBody, ProgramPartnerBody};
use reftrack_service::Listed;
use reftrack_store::{Partner, PartnerProgram, ProgramPartnerRow};

/// The filter of the partner list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PartnerQuery {
    /// Partners whose name, email or code contains this text (any case).
    pub q: Option<String>,
}

/// The filter of a program's partner list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProgramPartnerQuery {
    /// `approved`, `pending`, `rejected` or `banned`.
    pub status: Option<String>,
    /// Only the partners of this group of the program.
    pub group_id: Option<String>,
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
pub(super) async fn create_partner(
    Manager(caller): Manager,
    State(s): State<AppState>,
    JsonBody(body): JsonBody<PartnerBody>,
) -> Result<(StatusCode, Json<Partner>)> {
    Ok(created(s.app.create_partner(&caller, body).await?))
}

/// Change a partner's name, email or payout details; absent fields stay, `null` clears.
/// Changing the email or payout details of a partner that is also in programs of a
/// workspace the session does not manage is refused (403): that is for the partner
/// itself, or the operator.
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
pub(super) async fn update_partner(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<PartnerPatchBody>,
) -> Result<Json<Partner>> {
    Ok(Json(s.app.update_partner(&caller, id, body).await?))
}

/// List partners, searching with `q`. A dashboard session sees the partners of its
/// workspaces' programs and those its workspaces created.
#[utoipa::path(
    get,
    path = "/partners",
    tag = "management",
    params(PartnerQuery, PageQuery),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "One page", body = Listed<Partner>),
        (status = 400, description = "Invalid filter, limit or cursor", body = ErrorBody),
    ),
)]
pub(super) async fn list_partners(
    Manager(caller): Manager,
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<Partner>>> {
    let list: PageQuery = read_list_query(raw.as_deref())?;
    let q: PartnerQuery = read_list_query(raw.as_deref())?;
    Ok(Json(
        s.app
            .list_partners(&caller, q.q.as_deref(), &list.page())
            .await?,
    ))
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
pub(super) async fn add_program_partner(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<ProgramPartnerBody>,
) -> Result<(StatusCode, Json<PartnerProgram>)> {
    Ok(created(s.app.add_program_partner(&caller, id, body).await?))
}

/// List a program's partners with their totals, or export them with `?format=csv`.
#[utoipa::path(
    get,
    path = "/programs/{id}/partners",
    tag = "management",
    params(("id" = i64, Path, description = "Program id"), ProgramPartnerQuery, ListQuery),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "One page, or every row as text/csv", body = Listed<ProgramPartnerRow>),
        (status = 400, description = "Invalid filter, limit or cursor", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
pub(super) async fn list_program_partners(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let list: ListQuery = read_list_query(raw.as_deref())?;
    let q: ProgramPartnerQuery = read_list_query(raw.as_deref())?;
    let filter = ProgramPartnerParams {
        status: q.status,
        group_id: q.group_id,
    };
    list.page_or_csv(
        s.app.program_partners(&caller, id, &filter, &list.page()),
        s.app.export_program_partners(&caller, id, &filter),
        format!("program-{id}-partners.csv"),
        exports::program_partners_csv,
    )
    .await
}

/// Change a partner's standing in a program, or move it to another of the program's
/// groups. A decided partner cannot go back to `pending`.
#[utoipa::path(
    patch,
    path = "/programs/{id}/partners/{partner_id}",
    tag = "management",
    request_body = PartnerStatusBody,
    params(
        ("id" = i64, Path, description = "Program id"),
        ("partner_id" = i64, Path, description = "Partner id"),
    ),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The partner-program record", body = PartnerProgram),
        (status = 400, description = "Invalid status, or a group of another program", body = ErrorBody),
        (status = 404, description = "Unknown program, or the partner is not in it", body = ErrorBody),
        (status = 409, description = "Back to pending, or changed meanwhile", body = ErrorBody),
    ),
)]
pub(super) async fn set_program_partner_status(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams((id, partner_id)): PathParams<(i64, i64)>,
    JsonBody(body): JsonBody<PartnerStatusBody>,
) -> Result<Json<PartnerProgram>> {
    Ok(Json(
        s.app
            .set_program_partner_status(&caller, id, partner_id, body)
            .await?,
    ))
}
