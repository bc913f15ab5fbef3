//! The server's exchange rates, under `/api/admin/exchange-rates`, kept by the operator
//! ([`reftrack_service::money::rates`]).

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;

use super::Manager;
use crate::error::{ErrorBody, Result};
use crate::extract::{read_query, JsonBody};
use crate::AppState;
use reftrack_service::money::rates::{RatesBody, RatesImported};
use reftrack_store::ExchangeRateRow;

/// The day whose rates to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RatesQuery {
    /// `YYYY-MM-DD`.
    pub date: String,
}

/// Store exchange rates.
///
/// Server-wide; the operator's admin token only. Each rate is `rate` units of `quote`
/// for one unit of `base` on `date`; a (date, base, quote) sent again replaces the rate.
/// Sales waiting for a rate are converted within a minute. Nothing is stored when one
/// rate is refused.
#[utoipa::path(
    post,
    path = "/exchange-rates",
    tag = "management",
    request_body = RatesBody,
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "How many rates were stored", body = RatesImported),
        (status = 400, description = "A refused rate (the error names it)", body = ErrorBody),
        (status = 403, description = "Not the operator", body = ErrorBody),
    ),
)]
pub(super) async fn import_rates(
    Manager(caller): Manager,
    State(s): State<AppState>,
    JsonBody(body): JsonBody<RatesBody>,
) -> Result<Json<RatesImported>> {
    Ok(Json(s.app.import_exchange_rates(&caller, body).await?))
}

/// The exchange rates stored for a day.
#[utoipa::path(
    get,
    path = "/exchange-rates",
    tag = "management",
    params(RatesQuery),
    security(("admin_token" = [])),
    responses(
        (status = 200, description = "The day's rates, by base and quote", body = [ExchangeRateRow]),
        (status = 400, description = "No date, or not YYYY-MM-DD", body = ErrorBody),
        (status = 403, description = "Not the operator", body = ErrorBody),
    ),
)]
pub(super) async fn list_rates(
    Manager(caller): Manager,
    State(s): State<AppState>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Vec<ExchangeRateRow>>> {
    let q: RatesQuery = read_query(raw.as_deref())?;
    Ok(Json(s.app.exchange_rates(&caller, &q.date).await?))
}
