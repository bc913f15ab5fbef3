//! Paying partners, under `/api/admin`: commissions, balances and payouts, with their CSV
//! exports. Handlers read the request and call [`reftrack_service::money::payouts`].

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::{created, Manager};
use super::downloads::csv_response;
use super::error::{ErrorBody, Result};
use super::extract::{read_list_query, JsonBody, OptionalJsonBody, PathParams};
use super::paging::ListQuery;
use super::AppState;
use reftrack_service::money::exports::{self, PayoutFormat};
use reftrack_service::money::payouts::{CommissionParams, MarkPaidBody, RejectBody};
use reftrack_service::Listed;
use reftrack_store::{Balance, CommissionRow, Payout};

/// Routes of paying partners.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_commissions))
        .routes(routes!(approve_commission))
        .routes(routes!(reject_commission))
        .routes(routes!(list_balances))
        .routes(routes!(create_payout, list_payouts))
        .routes(routes!(get_payout))
        .routes(routes!(mark_payout_paid))
        .routes(routes!(cancel_payout))
        .routes(routes!(export_payout))
}

/// The filters of the commission list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CommissionQuery {
    /// `pending`, `approved`, `paid`, `reversed` or `rejected` (the hold applied).
    pub status: Option<String>,
    /// Only this partner's commissions.
    #[param(value_type = Option<i64>)]
    pub partner_id: Option<String>,
    /// First day, `YYYY-MM-DD` (UTC), inclusive.
    pub from: Option<String>,
    /// Last day, `YYYY-MM-DD` (UTC), inclusive.
    pub to: Option<String>,
    /// `true`: only the commissions held for review (a fraud rule flagged them; still
    /// pending, not yet approved or rejected by an owner).
    #[param(value_type = Option<bool>)]
    pub flagged: Option<String>,
}

/// The format of a payout export.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// `csv` (default), `paypal` or `wise`.
    pub format: Option<String>,
}

impl CommissionQuery {
    /// The service layer's parameters.
    pub(super) fn params(self) -> CommissionParams {
        CommissionParams {
            status: self.status,
            partner_id: self.partner_id,
            from: self.from,
            to: self.to,
            flagged: self.flagged,
        }
    }
}

/// List a program's commissions, or export them with `?format=csv`.
#[utoipa::path(
    get,
    path = "/programs/{id}/commissions",
    tag = "payouts",
    params(("id" = i64, Path, description = "Program id"), CommissionQuery, ListQuery),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "One page, or every row as text/csv", body = Listed<CommissionRow>),
        (status = 400, description = "Invalid filter, limit or cursor", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
async fn list_commissions(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let list: ListQuery = read_list_query(raw.as_deref())?;
    let q: CommissionQuery = read_list_query(raw.as_deref())?;
    let params = &q.params();
    list.page_or_csv(
        s.app.list_commissions(&caller, id, params, &list.page()),
        s.app.export_commissions(&caller, id, params),
        format!("program-{id}-commissions.csv"),
        exports::commissions_csv,
    )
    .await
}

/// The partners' pending, approved (unpaid) and paid amounts in a program.
#[utoipa::path(
    get,
    path = "/programs/{id}/balances",
    tag = "payouts",
    params(("id" = i64, Path, description = "Program id"), ListQuery),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "One page of balances", body = Listed<Balance>),
        (status = 400, description = "Invalid limit or cursor", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
async fn list_balances(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Listed<Balance>>> {
    let list: ListQuery = read_list_query(raw.as_deref())?;
    Ok(Json(s.app.balances(&caller, id, &list.page()).await?))
}

/// List a program's payouts, or export them with `?format=csv`.
#[utoipa::path(
    get,
    path = "/programs/{id}/payouts",
    tag = "payouts",
    params(("id" = i64, Path, description = "Program id"), ListQuery),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "One page (without items), or every row as text/csv", body = Listed<Payout>),
        (status = 400, description = "Invalid limit or cursor", body = ErrorBody),
        (status = 404, description = "Unknown program", body = ErrorBody),
    ),
)]
async fn list_payouts(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let list: ListQuery = read_list_query(raw.as_deref())?;
    list.page_or_csv(
        s.app.list_payouts(&caller, id, &list.page()),
        s.app.export_payouts(&caller, id),
        format!("program-{id}-payouts.csv"),
        exports::payouts_csv,
    )
    .await
}

/// Download a payout's items as CSV, or as PayPal's or Wise's bulk payment file.
#[utoipa::path(
    get,
    path = "/payouts/{id}/export",
    tag = "payouts",
    params(("id" = i64, Path, description = "Payout id"), ExportQuery),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "text/csv in the format asked for", content_type = "text/csv", body = String),
        (status = 400, description = "Unknown format", body = ErrorBody),
        (status = 404, description = "Unknown payout", body = ErrorBody),
    ),
)]
async fn export_payout(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Response> {
    let q: ExportQuery = read_list_query(raw.as_deref())?;
    let format = PayoutFormat::parse(q.format.as_deref())?;
    let payout = s.app.payout(&caller, id).await?;
    let body = Body::from(exports::payout_file(&payout, format));
    Ok(csv_response(&format.file_name(id), body))
}

/// Approve a pending commission ahead of its hold period.
#[utoipa::path(
    post,
    path = "/commissions/{id}/approve",
    tag = "payouts",
    params(("id" = i64, Path, description = "Commission id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The approved commission", body = CommissionRow),
        (status = 404, description = "Unknown commission", body = ErrorBody),
        (status = 409, description = "Not pending", body = ErrorBody),
    ),
)]
async fn approve_commission(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<CommissionRow>> {
    Ok(Json(s.app.approve_commission(&caller, id).await?))
}

/// Reject a pending or unpaid approved commission: it never pays.
#[utoipa::path(
    post,
    path = "/commissions/{id}/reject",
    tag = "payouts",
    request_body = RejectBody,
    params(("id" = i64, Path, description = "Commission id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The rejected commission", body = CommissionRow),
        (status = 400, description = "Invalid reason", body = ErrorBody),
        (status = 404, description = "Unknown commission", body = ErrorBody),
        (status = 409, description = "Paid, reversed, rejected, or held by a pending payout", body = ErrorBody),
    ),
)]
async fn reject_commission(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    JsonBody(body): JsonBody<RejectBody>,
) -> Result<Json<CommissionRow>> {
    Ok(Json(s.app.reject_commission(&caller, id, body).await?))
}

/// Create a payout of every qualifying partner's approved balance.
#[utoipa::path(
    post,
    path = "/programs/{id}/payouts",
    tag = "payouts",
    params(("id" = i64, Path, description = "Program id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 201, description = "The payout with its items", body = Payout),
        (status = 404, description = "Unknown program", body = ErrorBody),
        (status = 409, description = "No partner qualifies", body = ErrorBody),
    ),
)]
async fn create_payout(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<(StatusCode, Json<Payout>)> {
    Ok(created(s.app.create_payout(&caller, id).await?))
}

/// Show a payout with its items.
#[utoipa::path(
    get,
    path = "/payouts/{id}",
    tag = "payouts",
    params(("id" = i64, Path, description = "Payout id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The payout", body = Payout),
        (status = 404, description = "Unknown payout", body = ErrorBody),
    ),
)]
async fn get_payout(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<Payout>> {
    Ok(Json(s.app.payout(&caller, id).await?))
}

/// Mark a pending payout paid; its commissions become paid.
#[utoipa::path(
    post,
    path = "/payouts/{id}/mark-paid",
    tag = "payouts",
    request_body = MarkPaidBody,
    params(("id" = i64, Path, description = "Payout id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The paid payout", body = Payout),
        (status = 400, description = "Invalid reference", body = ErrorBody),
        (status = 404, description = "Unknown payout", body = ErrorBody),
        (status = 409, description = "Paid or cancelled already", body = ErrorBody),
    ),
)]
async fn mark_payout_paid(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
    OptionalJsonBody(body): OptionalJsonBody<MarkPaidBody>,
) -> Result<Json<Payout>> {
    Ok(Json(s.app.mark_payout_paid(&caller, id, body).await?))
}

/// Cancel a pending payout; its commissions may be paid by a later one.
#[utoipa::path(
    post,
    path = "/payouts/{id}/cancel",
    tag = "payouts",
    params(("id" = i64, Path, description = "Payout id")),
    security(("admin_token" = []), ("session" = [])),
    responses(
        (status = 200, description = "The cancelled payout", body = Payout),
        (status = 404, description = "Unknown payout", body = ErrorBody),
        (status = 409, description = "Paid or cancelled already", body = ErrorBody),
    ),
)]
async fn cancel_payout(
    Manager(caller): Manager,
    State(s): State<AppState>,
    PathParams(id): PathParams<i64>,
) -> Result<Json<Payout>> {
    Ok(Json(s.app.cancel_payout(&caller, id).await?))
}
