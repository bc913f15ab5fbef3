//! The dashboard read endpoints under `/api/tracking`: performance, status
//! and the events list. All need a dashboard session ([`DashboardUser`]); the order of
//! refusals is 401, then 404 (no such program), then 403.
//!
//! Choices the tracking interface leaves open (see also docs/decisions.md):
//! - performance: `dateFrom`/`dateTo` must come together (400 otherwise) and span at
//!   most [`reftrack_domain::metrics::MAX_RANGE_DAYS`] days; `meta.period` is `custom` for them; an unknown
//!   `period` is a 400; empty query values count as absent.
//! - events: `pageSize` is 1 to [`MAX_PAGE_SIZE`] (100); above it is a 400 rather than a
//!   silent cap, so a client never gets fewer events per page than it asked for without
//!   knowing. A `dateFrom`/`dateTo` that is a bare date covers that whole UTC day. A page
//!   past the end answers an empty `data` with the real `total` and `pageCount`.

use axum::extract::{RawQuery, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::error::{Error, ErrorBody, Result};
use super::extract::{read_query, PathParams};
use super::fields::{QueryDate, QueryEventKind, QueryPositive};
use super::session::DashboardUser;
use super::AppState;
use reftrack_domain::status::Permission;
use reftrack_domain::time::iso;
use reftrack_service::dashboard::performance::{PerformanceParams, PerformanceResponse};
use reftrack_service::dashboard::Need;
use reftrack_store::{EventFilter, EventKind, ListedEvent};

/// Default `pageSize` of the events list.
pub const DEFAULT_PAGE_SIZE: i64 = 10;
/// Largest `pageSize` of the events list; larger values are refused with 400.
pub const MAX_PAGE_SIZE: i64 = 100;

/// Routes of the dashboard endpoints, merged into `/api/tracking`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(performance))
        .routes(routes!(status))
        .routes(routes!(events))
}

/// The latest test event of a setup step.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestEventView {
    pub id: i64,
    #[schema(format = DateTime)]
    pub timestamp: String,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// Test events of a setup step, counted up to 10.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepStatistics {
    pub test_event_count: i64,
    pub has_test_events: bool,
    pub latest_test_event: Option<TestEventView>,
}

/// The payment account as the status endpoint reports it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentStatistics {
    pub stripe_connection_status: String,
    pub is_stripe_connected: bool,
    pub stripe_account_id: Option<String>,
    pub charges_enabled: bool,
    pub payouts_enabled: bool,
    pub details_submitted: bool,
    #[schema(format = DateTime)]
    pub connection_date: Option<String>,
}

/// `complete` or `pending` per setup step.
#[derive(Debug, Serialize, ToSchema)]
pub struct StepStatuses {
    pub pageview: String,
    pub referrals: String,
    pub payments: String,
}

/// Statistics per setup step.
#[derive(Debug, Serialize, ToSchema)]
pub struct SetupStatistics {
    pub pageview: StepStatistics,
    pub referrals: StepStatistics,
    pub payments: PaymentStatistics,
}

/// The integration status of a program.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusData {
    /// The program id, as a string.
    pub program_id: String,
    pub step_statuses: StepStatuses,
    pub statistics: SetupStatistics,
    pub has_partners: bool,
    #[schema(format = DateTime)]
    pub last_updated: String,
}

/// `GET /status/{programId}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusResponse {
    pub data: StatusData,
}

/// Pagination of the events list.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pagination {
    pub page: i64,
    pub page_size: i64,
    pub page_count: i64,
    pub total: i64,
}

/// `meta` of the events list.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventsMeta {
    pub pagination: Pagination,
}

/// `GET /events/{programId}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventsResponse {
    pub data: Vec<ListedEvent>,
    pub meta: EventsMeta,
}

/// The query of the performance endpoints (the dashboard's and the partner API's).
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PerformanceQuery {
    /// `7d` (default), `30d`, `90d` or `all`; ignored when dateFrom and dateTo are given.
    #[serde(default)]
    pub period: Option<String>,
    /// ISO 8601 date or timestamp; with dateTo.
    #[serde(default, rename = "dateFrom")]
    #[param(rename = "dateFrom")]
    pub date_from: Option<String>,
    /// ISO 8601 date or timestamp; with dateFrom.
    #[serde(default, rename = "dateTo")]
    #[param(rename = "dateTo")]
    pub date_to: Option<String>,
}

impl PerformanceQuery {
    /// The service layer's parameters.
    pub(super) fn params(self) -> PerformanceParams {
        PerformanceParams {
            period: self.period,
            date_from: self.date_from,
            date_to: self.date_to,
        }
    }
}

/// The query of the events endpoint.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventsQuery {
    /// 1-indexed page, default 1.
    #[serde(default)]
    #[param(value_type = Option<i64>, minimum = 1)]
    pub page: QueryPositive,
    /// Events per page, default 10, at most 100.
    #[serde(default, rename = "pageSize")]
    #[param(rename = "pageSize", value_type = Option<i64>, minimum = 1, maximum = 100)]
    pub page_size: QueryPositive,
    /// `click`, `lead` or `conversion`.
    #[serde(default, rename = "eventType")]
    #[param(rename = "eventType", value_type = Option<String>)]
    pub event_type: QueryEventKind,
    /// Inclusive lower bound: ISO 8601 date or timestamp.
    #[serde(default, rename = "dateFrom")]
    #[param(rename = "dateFrom", value_type = Option<String>)]
    pub date_from: QueryDate,
    /// Inclusive upper bound: ISO 8601 date or timestamp.
    #[serde(default, rename = "dateTo")]
    #[param(rename = "dateTo", value_type = Option<String>)]
    pub date_to: QueryDate,
}

impl EventsQuery {
    /// The filter of the listing: the kinds asked for (all by default) and the bounds.
    fn filter(&self) -> Result<EventFilter> {
        let kinds = match self.event_type.0 {
            None => EventKind::ALL.to_vec(),
            Some(kind) => vec![kind],
        };
        let from_ms = self.date_from.0.map(|v| v.lower_ms());
        let to_ms = self.date_to.0.map(|v| v.upper_ms());
        if let (Some(f), Some(t)) = (from_ms, to_ms) {
            if f > t {
                return Err(Error::bad_request("dateFrom must not be after dateTo"));
            }
        }
        Ok(EventFilter {
            kinds,
            test: false,
            from_ms,
            to_ms,
        })
    }
}

/// Program performance: daily figures, totals and trends.
///
/// Figures come from `daily_rollups` only, one entry per UTC day of the
/// range (zero days included), compared with the equal-length window before it. Needs an
/// active membership in the program's workspace.
#[utoipa::path(
    get,
    path = "/performance/{program_id}",
    tag = "dashboard",
    params(
        ("program_id" = i64, Path, description = "Program id"),
        PerformanceQuery,
    ),
    security(("session" = [])),
    responses(
        (status = 200, description = "Performance of the range", body = PerformanceResponse),
        (status = 400, description = "Invalid period or dates", body = ErrorBody),
        (status = 401, description = "No valid session", body = ErrorBody),
        (status = 403, description = "Not an active member of the program's workspace", body = ErrorBody),
        (status = 404, description = "No such program", body = ErrorBody),
    ),
)]
async fn performance(
    user: DashboardUser,
    State(s): State<AppState>,
    PathParams(program_id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Json<PerformanceResponse>> {
    let program = s
        .app
        .authorize(user.user_id, program_id, Need::ActiveMember)
        .await?;
    let q: PerformanceQuery = read_query(raw.as_deref())?;
    let done = s
        .app
        .program_performance(program_id, program.created_at, &q.params())
        .await?;
    Ok(Json(done))
}

fn step(done: bool) -> String {
    if done { "complete" } else { "pending" }.to_string()
}

fn step_statistics(s: &reftrack_store::TestEventSummary) -> StepStatistics {
    StepStatistics {
        test_event_count: s.count,
        has_test_events: s.count > 0,
        latest_test_event: s.latest.as_ref().map(|e| TestEventView {
            id: e.id,
            timestamp: iso(e.timestamp),
            created_at: iso(e.created_at),
        }),
    }
}

/// Integration status of a program.
///
/// Setup steps from test click and test lead events (counted up to 10) and the
/// payment account. Needs `tracking:read` on the program.
#[utoipa::path(
    get,
    path = "/status/{program_id}",
    tag = "dashboard",
    params(("program_id" = i64, Path, description = "Program id")),
    security(("session" = [])),
    responses(
        (status = 200, description = "Setup status", body = StatusResponse),
        (status = 400, description = "Invalid program id", body = ErrorBody),
        (status = 401, description = "No valid session", body = ErrorBody),
        (status = 403, description = "No tracking:read on the program", body = ErrorBody),
        (status = 404, description = "No such program", body = ErrorBody),
    ),
)]
async fn status(
    user: DashboardUser,
    State(s): State<AppState>,
    PathParams(program_id): PathParams<i64>,
) -> Result<Json<StatusResponse>> {
    let program = s
        .app
        .authorize(
            user.user_id,
            program_id,
            Need::Permission(Permission::TrackingRead),
        )
        .await?;
    let setup = s.app.setup_status(program_id).await?;
    let pay = &program.payment;
    let connected = pay.status == "connected";
    Ok(Json(StatusResponse {
        data: StatusData {
            program_id: program_id.to_string(),
            step_statuses: StepStatuses {
                pageview: step(setup.pageview.count > 0),
                referrals: step(setup.referrals.count > 0),
                payments: step(connected),
            },
            statistics: SetupStatistics {
                pageview: step_statistics(&setup.pageview),
                referrals: step_statistics(&setup.referrals),
                payments: PaymentStatistics {
                    stripe_connection_status: pay.status.clone(),
                    is_stripe_connected: connected,
                    stripe_account_id: if connected {
                        pay.account_id.clone()
                    } else {
                        None
                    },
                    charges_enabled: pay.charges_enabled,
                    payouts_enabled: pay.payouts_enabled,
                    details_submitted: pay.details_submitted,
                    connection_date: pay.connection_date.map(iso),
                },
            },
            has_partners: setup.has_partners,
            last_updated: iso(s.app.now_ms()),
        },
    }))
}

/// The program's events, newest first.
///
/// Real click, lead and sale (`conversion`) events merged, filtered and paginated
/// in the database. Needs `tracking:list` on the program.
#[utoipa::path(
    get,
    path = "/events/{program_id}",
    tag = "dashboard",
    params(
        ("program_id" = i64, Path, description = "Program id"),
        EventsQuery,
    ),
    security(("session" = [])),
    responses(
        (status = 200, description = "A page of events", body = EventsResponse),
        (status = 400, description = "Invalid filter or page", body = ErrorBody),
        (status = 401, description = "No valid session", body = ErrorBody),
        (status = 403, description = "No tracking:list on the program", body = ErrorBody),
        (status = 404, description = "No such program", body = ErrorBody),
    ),
)]
async fn events(
    user: DashboardUser,
    State(s): State<AppState>,
    PathParams(program_id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Json<EventsResponse>> {
    s.app
        .authorize(
            user.user_id,
            program_id,
            Need::Permission(Permission::TrackingList),
        )
        .await?;
    let q: EventsQuery = read_query(raw.as_deref())?;
    let page = q.page.0.unwrap_or(1);
    let page_size = q.page_size.0.unwrap_or(DEFAULT_PAGE_SIZE);
    if page_size > MAX_PAGE_SIZE {
        return Err(Error::bad_request(format!(
            "pageSize must be at most {MAX_PAGE_SIZE}"
        )));
    }
    let filter = q.filter()?;
    let found = s
        .app
        .events_page(program_id, &filter, page, page_size)
        .await?;
    Ok(Json(EventsResponse {
        data: found.data,
        meta: EventsMeta {
            pagination: Pagination {
                page,
                page_size,
                page_count: found.page_count,
                total: found.total,
            },
        },
    }))
}
