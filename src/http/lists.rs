//! The management lists, under `/api/admin`: workspaces, programs, partners, a program's
//! partners (and their standing), links. Handlers read the query and call
//! [`crate::app::management`].

use axum::extract::{RawQuery, State};
use axum::response::Response;
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::{management_endpoints, Manager};
use super::error::{ErrorBody, Result};
use super::extract::{read_list_query, JsonBody, PathParams};
use super::payouts::ListQuery;
use super::AppState;
use crate::app::admin::ProgramView;
use crate::app::exports;
use crate::app::management::{LinkParams, PartnerStatusBody};
use crate::app::{Listed, PageParams};
use crate::store::{Link, Partner, PartnerProgram, ProgramPartnerRow, User, Workspace};

/// Routes of the management lists.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_workspaces))
        .routes(routes!(list_programs))
        .routes(routes!(list_partners))
        .routes(routes!(list_users))
        .routes(routes!(list_program_partners))
        .routes(routes!(set_program_partner_status))
        .routes(routes!(list_links))
}

/// The paging of a list that has no CSV form.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Rows per page, 1 to 100 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl PageQuery {
    /// The paging asked for.
    pub(super) fn page(self) -> PageParams {
        PageParams {
            limit: self.limit,
            cursor: self.cursor,
        }
    }
}

/// The filter of the program list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProgramQuery {
    /// Only this workspace's programs.
    #[param(value_type = Option<i64>)]
    pub workspace_id: Option<String>,
}

/// The filter of the partner list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PartnerQuery {
    /// Partners whose name, email or code contains this text (any case).
    pub q: Option<String>,
}

/// The filter of the user list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UserQuery {
    /// Users whose email or name contains this text (any case).
    pub q: Option<String>,
}

/// The filter of a program's partner list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProgramPartnerQuery {
    /// `approved`, `pending`, `rejected` or `banned`.
    pub status: Option<String>,
}

/// The filters of the link list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LinkQuery {
    /// Only this program's links.
    #[param(value_type = Option<i64>)]
    pub program_id: Option<String>,
    /// Only this partner's links.
    #[param(value_type = Option<i64>)]
    pub partner_id: Option<String>,
    /// `active` or `inactive`.
    pub status: Option<String>,
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
async fn list_workspaces(
    Manager(caller): Manager,
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<Workspace>>> {
    let list: PageQuery = read_list_query(raw.as_deref())?;
    Ok(Json(s.app.list_workspaces(&caller, &list.page()).await?))
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
async fn list_programs(
    Manager(caller): Manager,
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<ProgramView>>> {
    let list: PageQuery = read_list_query(raw.as_deref())?;
    let q: ProgramQuery = read_list_query(raw.as_deref())?;
    let page = list.page();
    Ok(Json(
        s.app
            .list_programs(&caller, q.workspace_id.as_deref(), &page)
            .await?,
    ))
}

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
async fn list_users(
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
async fn list_partners(
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
async fn list_program_partners(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let list: ListQuery = read_list_query(raw.as_deref())?;
    let q: ProgramPartnerQuery = read_list_query(raw.as_deref())?;
    let status = q.status.as_deref();
    let page = list.page();
    list.page_or_csv(
        s.app.program_partners(&caller, id, status, &page),
        s.app.export_program_partners(&caller, id, status),
        format!("program-{id}-partners.csv"),
        exports::program_partners_csv,
    )
    .await
}

/// List links, filtered by program, partner or status.
#[utoipa::path(
    get,
    path = "/links",
    tag = "management",
    params(LinkQuery, PageQuery),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "One page", body = Listed<Link>),
        (status = 400, description = "Invalid filter, limit or cursor", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
async fn list_links(
    Manager(caller): Manager,
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<Link>>> {
    let list: PageQuery = read_list_query(raw.as_deref())?;
    let q: LinkQuery = read_list_query(raw.as_deref())?;
    let params = LinkParams {
        program_id: q.program_id,
        partner_id: q.partner_id,
        status: q.status,
    };
    Ok(Json(
        s.app.list_links(&caller, &params, &list.page()).await?,
    ))
}

management_endpoints! {
    tag = "management";

    /// Change a partner's standing in a program. A decided partner cannot go back to
    /// `pending`.
    patch "/programs/{id}/partners/{partner_id}"
        path(
            id: ("id" = i64, Path, description = "Program id"),
            partner_id: ("partner_id" = i64, Path, description = "Partner id"),
        )
        body(b: JsonBody<PartnerStatusBody>)
        => set_program_partner_status -> 200 PartnerProgram = set_program_partner_status;
        responses(
            "The partner-program record",
            400 "Invalid status",
            404 "Unknown program, or the partner is not in it",
            409 "Back to pending, or changed meanwhile",
        );
}
