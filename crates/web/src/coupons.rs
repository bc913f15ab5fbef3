//! Coupon codes of links, under `/api/admin/links/{id}/coupons`: created, listed and
//! archived by the link's owners ([`reftrack_service::coupons`]).

use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::management_endpoints;
use super::extract::JsonBody;
use super::lists::{management_lists, PageQuery};
use super::AppState;
use reftrack_service::coupons::CouponBody;
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

management_lists! {
    tag = "management";

    /// List a link's coupon codes, newest first.
    get "/links/{id}/coupons"
        path(id: ("id" = i64, Path, description = "link id"))
        query(PageQuery, q: CouponQuery)
        => list_coupons -> Coupon = link_coupons(status = q.status.as_deref());
        responses("One page", 400 "Invalid filter, limit or cursor", 404 "Unknown link");
}

management_endpoints! {
    tag = "management";

    /// Create a coupon code on a link.
    ///
    /// A sale with this `coupon_code` (any case), or a Stripe checkout with this
    /// `stripe_promotion_code`, that no click or customer attributes is attributed to the
    /// link's partner. Codes are unique among a program's active coupons, whatever their case.
    post "/links/{id}/coupons"
        path(id: ("id" = i64, Path, description = "link id"))
        body(b: JsonBody<CouponBody>)
        => create_coupon -> 201 Coupon = create_coupon;
        responses(
            "Created",
            400 "Invalid field",
            404 "Unknown link",
            409 "An active coupon of the program has this code or promotion code",
        );

    /// Archive a coupon code.
    ///
    /// The coupon attributes no more sales and its code and promotion code may be given to a
    /// new coupon; it stays listed (status `archived`), as do the sales it attributed.
    delete "/links/{id}/coupons/{coupon_id}"
        path(
            id: ("id" = i64, Path, description = "link id"),
            coupon_id: ("coupon_id" = i64, Path, description = "coupon id"),
        )
        => archive_coupon -> 200 Coupon = archive_coupon;
        responses(
            "The archived coupon",
            404 "Unknown link or coupon",
            409 "The coupon is archived already",
        );
}
