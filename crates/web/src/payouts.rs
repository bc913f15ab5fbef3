//! Paying partners, under `/api/admin`: commissions, balances and payouts, with their CSV
//! exports. Handlers read the request and call [`reftrack_service::payouts`].

use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::http::header::{
    CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS,
};
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::future::Future;

use futures::stream::BoxStream;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::admin::{management_endpoints, Manager};
use super::error::{ErrorBody, Result};
use super::extract::{read_list_query, JsonBody, OptionalJsonBody, PathParams};
use super::lists::management_lists;
use super::AppState;
use reftrack_service::exports::{self, PayoutFormat};
use reftrack_service::payouts::{CommissionParams, MarkPaidBody, RejectBody};
use reftrack_service::{Listed, PageParams};
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

/// Paging and, on lists that export, `format`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Rows per page, 1 to 100 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    pub limit: Option<String>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// `csv`: every matching row as `text/csv` with a header row, instead of a page.
    pub format: Option<String>,
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
}

/// The format of a payout export.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// `csv` (default), `paypal` or `wise`.
    pub format: Option<String>,
}

impl ListQuery {
    pub(super) fn page(&self) -> PageParams {
        PageParams {
            limit: self.limit.clone(),
            cursor: self.cursor.clone(),
        }
    }

    /// Whether the list is asked for as CSV; another format is a 400.
    pub(super) fn csv(&self) -> Result<bool> {
        match self.format.as_deref().map(str::trim) {
            None | Some("") | Some("json") => Ok(false),
            Some("csv") => Ok(true),
            Some(_) => Err(super::Error::bad_request("format must be csv or json")),
        }
    }

    /// The answer of a list that exports: with `format=csv` every row of `export`, as the
    /// download `file_name` written by `write` ([`csv_stream`]), else the JSON page of
    /// `page`. Only the one asked for is read.
    pub(super) async fn page_or_csv<P: Serialize, T: Send + 'static>(
        &self,
        page: impl Future<Output = reftrack_service::Result<P>>,
        export: impl Future<Output = reftrack_service::Result<CsvChunks<T>>>,
        file_name: String,
        write: fn(&[T], bool) -> Vec<u8>,
    ) -> Result<Response> {
        if self.csv()? {
            return Ok(csv_stream(&file_name, export.await?, write));
        }
        Ok(Json(page.await?).into_response())
    }
}

/// The rows of a CSV export, a chunk at a time.
pub(super) type CsvChunks<T> = BoxStream<'static, reftrack_service::Result<Vec<T>>>;

impl CommissionQuery {
    /// The service layer's parameters.
    pub(super) fn params(self) -> CommissionParams {
        CommissionParams {
            status: self.status,
            partner_id: self.partner_id,
            from: self.from,
            to: self.to,
        }
    }
}

/// A `text/csv` answer of `file_name`, every download's: kept out of caches (a
/// shared or back-button copy of partners' payout details outlives the session that
/// asked for it) and never sniffed into something a browser would run.
pub(super) fn csv_response(file_name: &str, body: Body) -> Response {
    (
        [
            (CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                CONTENT_DISPOSITION,
                format!("attachment; filename=\"{file_name}\""),
            ),
            (CACHE_CONTROL, "no-store".to_string()),
            (X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
        ],
        body,
    )
        .into_response()
}

/// A CSV answer streamed from `chunks`, each written by `write` (the first with the
/// header row). An error after the first byte ends the answer early: it is logged, and
/// the client sees a cut-off download rather than a wrong file.
pub(super) fn csv_stream<T: Send + 'static>(
    file_name: &str,
    chunks: CsvChunks<T>,
    write: fn(&[T], bool) -> Vec<u8>,
) -> Response {
    let header = Bytes::from(write(&[], true));
    let rows = chunks.map(move |chunk| match chunk {
        Ok(rows) => Ok(Bytes::from(write(&rows, false))),
        Err(e) => {
            tracing::error!(error = %e, "CSV export stopped");
            Err(std::io::Error::other("export stopped"))
        }
    });
    let body = futures::stream::once(async move { Ok(header) }).chain(rows);
    csv_response(file_name, Body::from_stream(body))
}

management_lists! {
    tag = "payouts";

    /// List a program's commissions, or export them with `?format=csv`.
    get "/programs/{id}/commissions"
        path(id: ("id" = i64, Path, description = "Program id"))
        query(ListQuery, q: CommissionQuery)
        => list_commissions -> CommissionRow = list_commissions(params = &q.params())
            csv(export_commissions, "program-{id}-commissions.csv", exports::commissions_csv);
        responses(
            "One page, or every row as text/csv",
            400 "Invalid filter, limit or cursor",
            404 "Unknown program",
        );

    /// The partners' pending, approved (unpaid) and paid amounts in a program.
    get "/programs/{id}/balances"
        path(id: ("id" = i64, Path, description = "Program id"))
        query(ListQuery)
        => list_balances -> Balance = balances();
        responses("One page of balances", 400 "Invalid limit or cursor", 404 "Unknown program");

    /// List a program's payouts, or export them with `?format=csv`.
    get "/programs/{id}/payouts"
        path(id: ("id" = i64, Path, description = "Program id"))
        query(ListQuery)
        => list_payouts -> Payout = list_payouts()
            csv(export_payouts, "program-{id}-payouts.csv", exports::payouts_csv);
        responses(
            "One page (without items), or every row as text/csv",
            400 "Invalid limit or cursor",
            404 "Unknown program",
        );
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

management_endpoints! {
    tag = "payouts";

    /// Approve a pending commission ahead of its hold period.
    post "/commissions/{id}/approve"
        path(id: ("id" = i64, Path, description = "Commission id"))
        => approve_commission -> 200 CommissionRow = approve_commission;
        responses("The approved commission", 404 "Unknown commission", 409 "Not pending");

    /// Reject a pending or unpaid approved commission: it never pays.
    post "/commissions/{id}/reject"
        path(id: ("id" = i64, Path, description = "Commission id"))
        body(b: JsonBody<RejectBody>)
        => reject_commission -> 200 CommissionRow = reject_commission;
        responses(
            "The rejected commission",
            400 "Invalid reason",
            404 "Unknown commission",
            409 "Paid, reversed, rejected, or held by a pending payout",
        );

    /// Create a payout of every qualifying partner's approved balance.
    post "/programs/{id}/payouts"
        path(id: ("id" = i64, Path, description = "Program id"))
        => create_payout -> 201 Payout = create_payout;
        responses("The payout with its items", 404 "Unknown program", 409 "No partner qualifies");

    /// Show a payout with its items.
    get "/payouts/{id}"
        path(id: ("id" = i64, Path, description = "Payout id"))
        => get_payout -> 200 Payout = payout;
        responses("The payout", 404 "Unknown payout");

    /// Mark a pending payout paid; its commissions become paid.
    post "/payouts/{id}/mark-paid"
        path(id: ("id" = i64, Path, description = "Payout id"))
        body(b: OptionalJsonBody<MarkPaidBody>)
        => mark_payout_paid -> 200 Payout = mark_payout_paid;
        responses(
            "The paid payout",
            400 "Invalid reference",
            404 "Unknown payout",
            409 "Paid or cancelled already",
        );

    /// Cancel a pending payout; its commissions may be paid by a later one.
    post "/payouts/{id}/cancel"
        path(id: ("id" = i64, Path, description = "Payout id"))
        => cancel_payout -> 200 Payout = cancel_payout;
        responses("The cancelled payout", 404 "Unknown payout", 409 "Paid or cancelled already");
}
