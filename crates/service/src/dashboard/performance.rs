//! Performance: a program's (or one partner's) daily figures over a range, their totals
//! and their trends against the window before, read from the daily rollups only. The
//! dashboard's performance endpoint and the partner API's answer the same shape.

use std::collections::HashMap;

use serde::Serialize;
use utoipa::ToSchema;

use crate::access::Caller;
use crate::{App, Error, Result};
use reftrack_domain::metrics::{self, average_minor, day_text, percent, trend, ResolvedRange};
use reftrack_domain::money::major_units;
use reftrack_domain::time::{date_of, iso};
use reftrack_store::{DailyRollup, TopPartner};

/// The range asked for: a `period` (`7d` default, `30d`, `90d`, `all`), or `date_from`
/// and `date_to` together (ISO 8601 dates or timestamps).
#[derive(Debug, Default, Clone)]
pub struct PerformanceParams {
    pub period: Option<String>,
    pub date_from: Option<String>,
    pub date_to: Option<String>,
}

/// One calendar day of the performance range.
#[derive(Debug, Serialize, ToSchema)]
pub struct DayFigures {
    /// `YYYY-MM-DD` (UTC).
    pub date: String,
    /// Same as `date`.
    pub period: String,
    pub clicks: i64,
    pub leads: i64,
    pub conversions: i64,
    /// Major units, two decimals.
    pub revenue: f64,
    pub partners: i64,
    /// Always 0 (kept for older dashboards).
    pub sales: i64,
    /// Major units, two decimals.
    pub commission: f64,
}

/// Change against the previous period.
#[derive(Debug, Serialize, ToSchema)]
pub struct TrendView {
    /// Absolute percentage change, one decimal.
    pub trend: f64,
    /// `up`, `down` or `stable`.
    #[serde(rename = "trendDirection")]
    pub trend_direction: String,
}

/// Totals of the range with their trends.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PerformanceMetrics {
    pub total_clicks: i64,
    pub total_leads: i64,
    pub total_conversions: i64,
    pub total_revenue: f64,
    pub conversion_rate: f64,
    pub average_order_value: f64,
    pub total_partners: i64,
    pub total_sales: i64,
    pub total_partners_commission: f64,
    pub clicks_trend: TrendView,
    pub leads_trend: TrendView,
    pub conversions_trend: TrendView,
    pub revenue_trend: TrendView,
    pub partners_trend: TrendView,
    pub sales_trend: TrendView,
    pub commission_trend: TrendView,
}

/// A time window as ISO 8601 timestamps.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    #[schema(format = DateTime)]
    pub date_from: String,
    #[schema(format = DateTime)]
    pub date_to: String,
}

/// The ranges actually used.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PerformanceMeta {
    /// `7d`, `30d`, `90d`, `all` or `custom`.
    pub period: String,
    #[schema(format = DateTime)]
    pub date_from: String,
    #[schema(format = DateTime)]
    pub date_to: String,
    pub previous_period: Window,
}

/// `GET /performance/{programId}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PerformanceResponse {
    pub data: Vec<DayFigures>,
    pub metrics: PerformanceMetrics,
    pub meta: PerformanceMeta,
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
    /// Adds a day; saturating, since a figure shown must never overflow, however large
    /// the counters it reads.
    fn add(&mut self, r: &DailyRollup) {
        let add = |total: &mut i64, day: i64| *total = total.saturating_add(day);
        add(&mut self.clicks, r.clicks);
        add(&mut self.leads, r.leads);
        add(&mut self.conversions, r.conversions);
        add(&mut self.revenue_cents, r.revenue_cents);
        add(&mut self.sales, r.sales);
        add(&mut self.commission_cents, r.commission_cents);
        add(&mut self.partners, r.partners);
    }
}

fn trend_view(cur: i64, prev: i64) -> TrendView {
    let t = trend(cur, prev);
    TrendView {
        trend: t.trend,
        trend_direction: t.direction.as_str().into(),
    }
}

/// The answer for `range` from its rollup `rows` (the range and the window before it);
/// money in major units of `currency`, the program's.
pub fn performance(
    range: &ResolvedRange,
    rows: &[DailyRollup],
    currency: &str,
) -> PerformanceResponse {
    let current_from = day_text(range.current.from);
    let by_day: HashMap<&str, &DailyRollup> = rows.iter().map(|r| (r.day.as_str(), r)).collect();
    let (mut cur, mut prev) = (Totals::default(), Totals::default());
    for r in rows {
        if r.day >= current_from {
            cur.add(r);
        } else {
            prev.add(r);
        }
    }
    let zero = DailyRollup::default();
    let data: Vec<DayFigures> = range
        .current
        .days()
        .map(|d| {
            let day = day_text(d);
            let r = by_day.get(day.as_str()).copied().unwrap_or(&zero);
            DayFigures {
                period: day.clone(),
                date: day,
                clicks: r.clicks,
                leads: r.leads,
                conversions: r.conversions,
                revenue: major_units(r.revenue_cents, currency),
                partners: r.partners,
                sales: 0,
                commission: major_units(r.commission_cents, currency),
            }
        })
        .collect();
    PerformanceResponse {
        data,
        metrics: PerformanceMetrics {
            total_clicks: cur.clicks,
            total_leads: cur.leads,
            total_conversions: cur.conversions,
            total_revenue: major_units(cur.revenue_cents, currency),
            conversion_rate: percent(cur.conversions, cur.clicks),
            average_order_value: major_units(
                average_minor(cur.revenue_cents, cur.conversions),
                currency,
            ),
            total_partners: cur.partners,
            total_sales: cur.sales,
            total_partners_commission: major_units(cur.commission_cents, currency),
            clicks_trend: trend_view(cur.clicks, prev.clicks),
            leads_trend: trend_view(cur.leads, prev.leads),
            conversions_trend: trend_view(cur.conversions, prev.conversions),
            revenue_trend: trend_view(cur.revenue_cents, prev.revenue_cents),
            partners_trend: trend_view(cur.partners, prev.partners),
            sales_trend: trend_view(cur.sales, prev.sales),
            commission_trend: trend_view(cur.commission_cents, prev.commission_cents),
        },
        meta: PerformanceMeta {
            period: range.period.to_string(),
            date_from: iso(range.current.start_ms()),
            date_to: iso(range.current.end_ms()),
            previous_period: Window {
                date_from: iso(range.previous.start_ms()),
                date_to: iso(range.previous.end_ms()),
            },
        },
    }
}

impl App {
    /// The range `params` name for a program created at `created_at`, by today's date.
    fn range(&self, params: &PerformanceParams, created_at: i64) -> Result<ResolvedRange> {
        metrics::resolve_range(
            params.period.as_deref(),
            params.date_from.as_deref(),
            params.date_to.as_deref(),
            date_of(self.now_ms()),
            date_of(created_at),
        )
        .map_err(Error::Invalid)
    }

    /// A program's performance; the caller has been allowed to read it.
    pub async fn program_performance(
        &self,
        program_id: i64,
        created_at: i64,
        params: &PerformanceParams,
    ) -> Result<PerformanceResponse> {
        let (range, rows) = self.program_rollups(program_id, created_at, params).await?;
        let program = self.program(program_id).await?;
        Ok(performance(&range, &rows, &program.currency))
    }

    /// The range `params` name for a program created at `created_at`, and the program's
    /// daily rollups over it and the window before it (days without events have no
    /// row); the caller has been allowed to read them.
    pub async fn program_rollups(
        &self,
        program_id: i64,
        created_at: i64,
        params: &PerformanceParams,
    ) -> Result<(ResolvedRange, Vec<DailyRollup>)> {
        let range = self.range(params, created_at)?;
        let rows = self
            .store
            .daily_rollups(
                program_id,
                &day_text(range.previous.from),
                &day_text(range.current.to),
            )
            .await?;
        Ok((range, rows))
    }

    /// The figures of a partner's own links in a program where it is approved (`partners`
    /// stays 0).
    pub async fn partner_performance(
        &self,
        partner_id: i64,
        program_id: i64,
        params: &PerformanceParams,
    ) -> Result<PerformanceResponse> {
        let (range, rows) = self.partner_rollups(partner_id, program_id, params).await?;
        let program = self.program(program_id).await?;
        Ok(performance(&range, &rows, &program.currency))
    }

    /// The range `params` name for a partner in a program where it is approved, and the
    /// partner's daily rollups over it and the window before it (days without events
    /// have no row).
    pub async fn partner_rollups(
        &self,
        partner_id: i64,
        program_id: i64,
        params: &PerformanceParams,
    ) -> Result<(ResolvedRange, Vec<DailyRollup>)> {
        let record = self.approved_in(partner_id, program_id).await?;
        let program = self.program(program_id).await?;
        // "all" starts when the partner joined, or the program began if that was later.
        let range = self.range(params, record.created_at.max(program.created_at))?;
        let rows = self
            .store
            .partner_daily_rollups(
                program_id,
                partner_id,
                &day_text(range.previous.from),
                &day_text(range.current.to),
            )
            .await?;
        Ok((range, rows))
    }

    /// The `limit` partners of a program with the most revenue over the current range
    /// of `params` (then the most clicks), with their figures there.
    pub async fn top_partners(
        &self,
        caller: &Caller,
        program_id: i64,
        params: &PerformanceParams,
        limit: i64,
    ) -> Result<Vec<TopPartner>> {
        let program = self.readable_program(caller, program_id).await?;
        let range = self.range(params, program.created_at)?;
        Ok(self
            .store
            .top_partners(
                program_id,
                &day_text(range.current.from),
                &day_text(range.current.to),
                limit,
            )
            .await?)
    }
}
