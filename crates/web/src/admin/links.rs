//! Referral links: the management calls that create, show and change them, and their
//! list.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;

use super::{created, Manager};
use crate::error::{ErrorBody, Result};
use crate::extract::{read_list_query, JsonBody, PathParams};
use crate::paging::PageQuery;
use crate::AppState;
use reftrack_service::programs::management::LinkParams;
use reftrack_service::programs::{LinkBody, LinkPatchBody};
use reftrack_service::Listed;
use reftrack_store::Link;

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

impl LinkQuery {
    /// The service layer's parameters.
    fn params(self) -> LinkParams {
        LinkParams {
            program_id: self.program_id,
            partner_id: self.partner_id,
            status: self.status,
        }
    }
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
pub(super) async fn create_link(
    Manager(caller): Manager,
    State(s): State<AppState>,
    JsonBody(body): JsonBody<LinkBody>,
) -> Result<(StatusCode, Json<Link>)> {
    Ok(created(s.app.create_link(&caller, body).await?))
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
pub(super) async fn get_link(
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
pub(super) async fn update_link(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<LinkPatchBody>,
) -> Result<Json<Link>> {
    Ok(Json(s.app.update_link(&caller, id, body).await?))
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
pub(super) async fn list_links(
    Manager(caller): Manager,
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<Link>>> {
    let list: PageQuery = read_list_query(raw.as_deref())?;
    let q: LinkQuery = read_list_query(raw.as_deref())?;
    Ok(Json(
        s.app.list_links(&caller, &q.params(), &list.page()).await?,
    ))
}
