//! Coupon codes of links, under `/api/admin/links/{id}/coupons`: created, listed and
//! archived by the link's owners ([`reftrack_service::programs::coupons`]).

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::{created, Manager};
use super::error::{ErrorBody, Result};
use super::extract::{read_list_query, JsonBody, PathParams};
use super::paging::PageQuery;
use super::AppState;
use reftrack_service::programs::coupons::CouponBody;
use reftrack_service::Listed;
use reftrack_store::Coupon;

/// Routes of coupon codes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_coupon, list_coupons))
        .routes(routes!(archive_coupon))
}

/// The filter of a link's coupon list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CouponQuery {
    /// `active` or `archived`; every coupon when absent.
    pub status: Option<String>,
}

/// List a link's coupon codes, newest first.
#[utoipa::path(
    get,
    path = "/links/{id}/coupons",
    tag = "management",
    params(("id" = i64, Path, description = "link id"), CouponQuery, PageQuery),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "One page", body = Listed<Coupon>),
        (status = 400, description = "Invalid filter, limit or cursor", body = ErrorBody),
        (status = 404, description = "Unknown link", body = ErrorBody),
    ),
)]
async fn list_coupons(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<Coupon>>> {
    let list: PageQuery = read_list_query(raw.as_deref())?;
    let q: CouponQuery = read_list_query(raw.as_deref())?;
    Ok(Json(
        s.app
            .link_coupons(&caller, id, q.status.as_deref(), &list.page())
            .await?,
    ))
}

/// Create a coupon code on a link.
///
/// A sale with this `coupon_code` (any case), or a Stripe checkout with this
/// `stripe_promotion_code`, that no click or customer attributes is attributed to the
/// link's partner. Codes are unique among a program's active coupons, whatever their case.
#[utoipa::path(
    post,
    path = "/links/{id}/coupons",
    tag = "management",
    request_body = CouponBody,
    params(("id" = i64, Path, description = "link id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 201, description = "Created", body = Coupon),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 404, description = "Unknown link", body = ErrorBody),
        (status = 409, description = "An active coupon of the program has this code or promotion code", body = ErrorBody),
    ),
)]
async fn create_coupon(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<CouponBody>,
) -> Result<(StatusCode, Json<Coupon>)> {
    Ok(created(s.app.create_coupon(&caller, id, body).await?))
}

/// Archive a coupon code.
///
/// The coupon attributes no more sales and its code and promotion code may be given to a
/// new coupon; it stays listed (status `archived`), as do the sales it attributed.
#[utoipa::path(
    delete,
    path = "/links/{id}/coupons/{coupon_id}",
    tag = "management",
    params(
        ("id" = i64, Path, description = "link id"),
        ("coupon_id" = i64, Path, description = "coupon id"),
    ),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The archived coupon", body = Coupon),
        (status = 404, description = "Unknown link or coupon", body = ErrorBody),
        (status = 409, description = "The coupon is archived already", body = ErrorBody),
    ),
)]
async fn archive_coupon(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams((id, coupon_id)): PathParams<(i64, i64)>,
) -> Result<Json<Coupon>> {
    Ok(Json(s.app.archive_coupon(&caller, id, coupon_id).await?))
}
