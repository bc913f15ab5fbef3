//! The dashboard read endpoints (§4.5–§4.7) under `/api/tracking`: performance, status
//! and the events list. All need a dashboard session ([`DashboardUser`]); the order of
//! refusals is 401, then 404 (no such program), then 403 (D13).
//!
//! Decisions beyond the specification:
//! - performance: `dateFrom`/`dateTo` must come together (400 otherwise) and span at
//!   most [`metrics::MAX_RANGE_DAYS`] days; `meta.period` is `custom` for them; an unknown
//!   `period` is a 400; empty query values count as absent.
//! - events: `pageSize` is 1 to [`MAX_PAGE_SIZE`] (100); above it is a 400 rather than a
//!   silent cap, so a client never gets fewer events per page than it asked for without
//!   knowing. A `dateFrom`/`dateTo` that is a bare date covers that whole UTC day. A page
//!   past the end answers an empty `data` with the real `total` and `pageCount`.

use std::collections::HashMap;

use axum::extract::{RawQuery, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::extract::PathParams;
use super::session::{role_grants, DashboardUser, Permission};
use crate::domain::metrics::{self, average_dollars, day_text, percent, trend, IsoValue};
use crate::domain::money::dollars;
use crate::domain::time::{date_of, iso, now_ms};
use crate::error::{Error, Result};
use crate::store::{DailyRollup, DashboardProgram, EventFilter, EventKind};
use crate::AppState;

/// Default `pageSize` of the events list (§8).
pub const DEFAULT_PAGE_SIZE: i64 = 10;
/// Largest `pageSize` of the events list; larger values are refused with 400.
pub const MAX_PAGE_SIZE: i64 = 100;

/// Routes of the dashboard endpoints, merged into `/api/tracking`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/performance/{program_id}", get(performance))
        .route("/status/{program_id}", get(status))
        .route("/events/{program_id}", get(events))
}

/// What an endpoint requires of the caller's membership.
#[derive(Debug, Clone, Copy)]
enum Need {
    /// Any active membership in the program's workspace (performance).
    ActiveMember,
    /// An active membership whose role grants the permission.
    Permission(Permission),
}

/// The program, once the caller may see it: 404 when it does not exist, 403 when the
/// caller lacks what `need` asks (a suspended membership is no membership).
async fn authorize(
    state: &AppState,
    user: &DashboardUser,
    program_id: i64,
    need: Need,
) -> Result<DashboardProgram> {
    let program = state
        .store
        .program_access(program_id, user.user_id)
        .await?
        .ok_or_else(|| Error::not_found("Program not found"))?;
    let role = match (&program.member_role, program.member_status.as_deref()) {
        (Some(role), Some("active")) => Some(role.as_str()),
        _ => None,
    };
    match (need, role) {
        (Need::ActiveMember, Some(_)) => Ok(program),
        (Need::Permission(p), Some(role)) if role_grants(role, p) => Ok(program),
        (Need::Permission(p), Some(_)) => Err(Error::Forbidden(format!(
            "Your role does not grant {} on this program",
            p.as_str()
        ))),
        (_, None) => Err(Error::Forbidden(
            "You are not an active member of this program's workspace".into(),
        )),
    }
}

/// The query string as a map; empty values count as absent, the last of repeated keys
/// wins.
fn query_map(raw: Option<String>) -> HashMap<String, String> {
    url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
        .filter(|(_, v)| !v.trim().is_empty())
        .map(|(k, v)| (k.into_owned(), v.trim().to_string()))
        .collect()
}

/// Sums of one window's rollups.
#[derive(Debug, Default)]
struct Totals {
    clicks: i64,
    leads: i64,
    conversions: i64,
    revenue_cents: i64,
    sales: i64,
    commission_cents: i64,
    partners: i64,
}

impl Totals {
    fn add(&mut self, r: &DailyRollup) {
        self.clicks += r.clicks;
        self.leads += r.leads;
        self.conversions += r.conversions;
        self.revenue_cents += r.revenue_cents;
        self.sales += r.sales;
        self.commission_cents += r.commission_cents;
        self.partners += r.partners;
    }
}

fn trend_json(cur: i64, prev: i64) -> Value {
    let t = trend(cur, prev);
    json!({ "trend": t.trend, "trendDirection": t.direction.as_str() })
}

/// `GET /api/tracking/performance/{programId}` (§4.5, D1–D3): figures from
/// `daily_rollups` only, one entry per day of the range.
async fn performance(
    user: DashboardUser,
    State(s): State<AppState>,
    PathParams(program_id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Value>> {
    let program = authorize(&s, &user, program_id, Need::ActiveMember).await?;
    let q = query_map(raw);
    let range = metrics::resolve_range(
        q.get("period").map(String::as_str),
        q.get("dateFrom").map(String::as_str),
        q.get("dateTo").map(String::as_str),
        date_of(now_ms()),
        date_of(program.created_at),
    )
    .map_err(Error::BadRequest)?;
    let rows = s
        .store
        .daily_rollups(
            program_id,
            &day_text(range.previous.from),
            &day_text(range.current.to),
        )
        .await?;
    let current_from = day_text(range.current.from);
    let by_day: HashMap<&str, &DailyRollup> = rows.iter().map(|r| (r.day.as_str(), r)).collect();
    let (mut cur, mut prev) = (Totals::default(), Totals::default());
    for r in &rows {
        if r.day >= current_from {
            cur.add(r);
        } else {
            prev.add(r);
        }
    }
    let zero = DailyRollup::default();
    let data: Vec<Value> = range
        .current
        .days()
        .map(|d| {
            let day = day_text(d);
            let r = by_day.get(day.as_str()).copied().unwrap_or(&zero);
            json!({
                "date": day,
                "period": day,
                "clicks": r.clicks,
                "leads": r.leads,
                "conversions": r.conversions,
                "revenue": dollars(r.revenue_cents),
                "partners": r.partners,
                "sales": 0,
                "commission": dollars(r.commission_cents),
            })
        })
        .collect();
    Ok(Json(json!({
        "data": data,
        "metrics": {
            "totalClicks": cur.clicks,
            "totalLeads": cur.leads,
            "totalConversions": cur.conversions,
            "totalRevenue": dollars(cur.revenue_cents),
            "conversionRate": percent(cur.conversions, cur.clicks),
            "averageOrderValue": average_dollars(cur.revenue_cents, cur.conversions),
            "totalPartners": cur.partners,
            "totalSales": cur.sales,
            "totalPartnersCommission": dollars(cur.commission_cents),
            "clicksTrend": trend_json(cur.clicks, prev.clicks),
            "leadsTrend": trend_json(cur.leads, prev.leads),
            "conversionsTrend": trend_json(cur.conversions, prev.conversions),
            "revenueTrend": trend_json(cur.revenue_cents, prev.revenue_cents),
            "partnersTrend": trend_json(cur.partners, prev.partners),
            "salesTrend": trend_json(cur.sales, prev.sales),
            "commissionTrend": trend_json(cur.commission_cents, prev.commission_cents),
        },
        "meta": {
            "period": range.period,
            "dateFrom": iso(range.current.start_ms()),
            "dateTo": iso(range.current.end_ms()),
            "previousPeriod": {
                "dateFrom": iso(range.previous.start_ms()),
                "dateTo": iso(range.previous.end_ms()),
            },
        },
    })))
}

fn step(done: bool) -> &'static str {
    if done {
        "complete"
    } else {
        "pending"
    }
}

fn test_events_json(s: &crate::store::TestEventSummary) -> Value {
    json!({
        "testEventCount": s.count,
        "hasTestEvents": s.count > 0,
        "latestTestEvent": s.latest.as_ref().map(|e| json!({
            "id": e.id,
            "timestamp": iso(e.timestamp),
            "createdAt": iso(e.created_at),
        })),
    })
}

/// `GET /api/tracking/status/{programId}` (§4.6): integration steps from test events
/// and the payment account.
async fn status(
    user: DashboardUser,
    State(s): State<AppState>,
    PathParams(program_id): PathParams<i64>,
) -> Result<Json<Value>> {
    let program = authorize(
        &s,
        &user,
        program_id,
        Need::Permission(Permission::TrackingRead),
    )
    .await?;
    let setup = s.store.setup_status(program_id).await?;
    let pay = &program.payment;
    let connected = pay.status == "connected";
    Ok(Json(json!({
        "data": {
            "programId": program_id.to_string(),
            "stepStatuses": {
                "pageview": step(setup.pageview.count > 0),
                "referrals": step(setup.referrals.count > 0),
                "payments": step(connected),
            },
            "statistics": {
                "pageview": test_events_json(&setup.pageview),
                "referrals": test_events_json(&setup.referrals),
                "payments": {
                    "stripeConnectionStatus": pay.status,
                    "isStripeConnected": connected,
                    "stripeAccountId": if connected { pay.account_id.clone() } else { None },
                    "chargesEnabled": pay.charges_enabled,
                    "payoutsEnabled": pay.payouts_enabled,
                    "detailsSubmitted": pay.details_submitted,
                    "connectionDate": pay.connection_date.map(iso),
                },
            },
            "hasPartners": setup.has_partners,
            "lastUpdated": iso(now_ms()),
        }
    })))
}

/// Reads a positive integer query parameter.
fn positive(q: &HashMap<String, String>, key: &str, default: i64) -> Result<i64> {
    match q.get(key) {
        None => Ok(default),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| Error::bad_request(format!("{key} must be a positive integer"))),
    }
}

/// The filters of an events request.
fn event_filter(q: &HashMap<String, String>) -> Result<EventFilter> {
    let kinds = match q.get("eventType") {
        None => EventKind::ALL.to_vec(),
        Some(t) => vec![EventKind::parse(t).ok_or_else(|| {
            Error::bad_request("eventType must be one of: click, lead, conversion")
        })?],
    };
    let bound = |key: &str| -> Result<Option<IsoValue>> {
        q.get(key)
            .map(|v| {
                IsoValue::parse(v).ok_or_else(|| {
                    Error::bad_request(format!(
                        "{key} must be an ISO 8601 date (YYYY-MM-DD) or timestamp"
                    ))
                })
            })
            .transpose()
    };
    let from_ms = bound("dateFrom")?.map(|v| v.lower_ms());
    let to_ms = bound("dateTo")?.map(|v| v.upper_ms());
    if let (Some(f), Some(t)) = (from_ms, to_ms) {
        if f > t {
            return Err(Error::bad_request("dateFrom must not be after dateTo"));
        }
    }
    Ok(EventFilter {
        kinds,
        from_ms,
        to_ms,
    })
}

/// `GET /api/tracking/events/{programId}` (§4.7): real click, lead and sale events
/// merged newest first, filtered and paginated in the database.
async fn events(
    user: DashboardUser,
    State(s): State<AppState>,
    PathParams(program_id): PathParams<i64>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Value>> {
    authorize(
        &s,
        &user,
        program_id,
        Need::Permission(Permission::TrackingList),
    )
    .await?;
    let q = query_map(raw);
    let page = positive(&q, "page", 1)?;
    let page_size = positive(&q, "pageSize", DEFAULT_PAGE_SIZE)?;
    if page_size > MAX_PAGE_SIZE {
        return Err(Error::bad_request(format!(
            "pageSize must be at most {MAX_PAGE_SIZE}"
        )));
    }
    let filter = event_filter(&q)?;
    let total = s.store.count_events(program_id, &filter).await?;
    let page_count = (total + page_size - 1) / page_size;
    let offset = (page - 1).checked_mul(page_size);
    let data = match offset {
        Some(offset) if offset < total => {
            s.store
                .list_events(program_id, &filter, page_size, offset)
                .await?
        }
        _ => vec![],
    };
    Ok(Json(json!({
        "data": data,
        "meta": {
            "pagination": {
                "page": page,
                "pageSize": page_size,
                "pageCount": page_count,
                "total": total,
            }
        }
    })))
}
