//! A program's overview: its daily clicks, leads, sales, revenue and commissions over a
//! range as charts, their totals with the trend against the window before, and the top
//! partners of the range. In test mode, the same charts of the range's test events.

use std::collections::HashMap;

use askama::Template;
use axum::extract::State;
use chrono::NaiveDate;

use super::frame::{Frame, Head, Tab};
use super::session::Signed;
use crate::pages::chart::{self, Chart, Series};
use crate::pages::range::{self, RangePicker};
use crate::pages::view::{ok, Chrome, NavItem, PageResult, ProgramId, Query};
use crate::AppState;
use reftrack_domain::metrics::{day_text, ResolvedRange};
use reftrack_domain::money::display_amount;
use reftrack_domain::time::date_of;
use reftrack_service as app;
use reftrack_service::dashboard::performance::{performance, TrendView};
use reftrack_store::{DailyRollup, EventFilter, EventKind, ListedEvent, ProgramRates};

/// Partners in the top-partners table.
const TOP_PARTNERS: i64 = 10;
/// Test events a test-mode chart counts at most (the newest of the range).
const TEST_EVENTS: i64 = 1000;

#[derive(Template)]
#[template(path = "console/overview.html")]
struct OverviewPage {
    chrome: Chrome,
    head: Head,
    /// Live or Test.
    modes: Vec<NavItem>,
    test: bool,
    picker: RangePicker,
    figures: Vec<Figure>,
    chart: Chart,
    /// Nothing happened in the range.
    quiet: bool,
    top: Vec<TopRow>,
    /// Test mode: how many test events the range has, when the chart counts fewer.
    test_total: Option<i64>,
    /// The rates the program's sales in other currencies used, and what waits for one.
    rates: ProgramRates,
    /// The waiting sales' currencies, upper case, comma-separated.
    waiting_currencies: String,
    /// The program's currency, upper case.
    program_currency: String,
}

/// A total of the range with its trend.
struct Figure {
    label: &'static str,
    value: String,
    /// `up`, `down` or `stable`.
    direction: String,
    /// The trend in words.
    trend: String,
}

struct TopRow {
    partner_id: i64,
    name: String,
    clicks: i64,
    leads: i64,
    sales: i64,
    revenue: String,
    commission: String,
}

/// The trend of a figure in words; `before` is its total in the previous period (the
/// API's 100 % "up" from nothing reads as new here).
fn trend_text(t: &TrendView, before: i64) -> String {
    match t.trend_direction.as_str() {
        "up" if before == 0 => "new: none in the previous period".into(),
        "up" => format!("up {:.1}% on the previous period", t.trend),
        "down" => format!("down {:.1}% on the previous period", t.trend),
        _ => "same as the previous period".into(),
    }
}

/// One value per day of `days` from `rows` (by their day), read by `f`.
fn by_day(
    days: &[NaiveDate],
    rows: &HashMap<String, &DailyRollup>,
    f: impl Fn(&DailyRollup) -> i64,
) -> Vec<i64> {
    days.iter()
        .map(|d| rows.get(&day_text(*d)).map_or(0, |r| f(r)))
        .collect()
}

/// The five series of the overview.
fn series(
    clicks: Vec<i64>,
    leads: Vec<i64>,
    sales: Vec<i64>,
    revenue: Vec<i64>,
    commission: Vec<i64>,
) -> [Series; 5] {
    [
        Series {
            key: "clicks",
            label: "Clicks",
            money: false,
            values: clicks,
        },
        Series {
            key: "leads",
            label: "Leads",
            money: false,
            values: leads,
        },
        Series {
            key: "sales",
            label: "Sales",
            money: false,
            values: sales,
        },
        Series {
            key: "revenue",
            label: "Revenue",
            money: true,
            values: revenue,
        },
        Series {
            key: "earnings",
            label: "Commissions",
            money: true,
            values: commission,
        },
    ]
}

/// `GET /app/programs/{id}?period=30d` (or `from` and `to`; `mode=test` for test events).
pub(super) async fn overview(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Overview, q.text("done").as_deref()).await?;
    let test = q.text("mode").as_deref() == Some("test");
    let currency = frame.program.currency.clone();
    let created_at = chrono::DateTime::parse_from_rfc3339(&frame.program.created_at)
        .map(|t| t.timestamp_millis())
        .unwrap_or_default();
    let page = Tab::Overview.href(id);
    let mut hidden = Vec::new();
    if test {
        hidden.push(("mode", "test".to_string()));
    }
    let ((range, rows), picker) = range::load(
        &q,
        |params| {
            let s = &s;
            async move { s.app.program_rollups(id, created_at, &params).await }
        },
        |(range, _)| range,
        &page,
        hidden,
    )
    .await?;
    let days: Vec<NaiveDate> = range.current.days().collect();
    let keep = |key: &str| {
        ["period", "from", "to"]
            .iter()
            .filter_map(|k| q.text(k).map(|v| (*k, v)))
            .chain((key == "test").then(|| ("mode", "test".to_string())))
            .map(|(k, v)| {
                let v: String = url::form_urlencoded::byte_serialize(v.as_bytes()).collect();
                format!("{k}={v}")
            })
            .collect::<Vec<_>>()
            .join("&")
    };
    let modes = [("live", "Live"), ("test", "Test")]
        .into_iter()
        .map(|(key, label)| {
            let query = keep(key);
            NavItem {
                href: if query.is_empty() {
                    page.clone()
                } else {
                    format!("{page}?{query}")
                },
                label: label.into(),
                current: (key == "test") == test,
            }
        })
        .collect();
    let (figures, chart, top, test_total) = if test {
        test_view(&s, id, &range, &days, &currency).await?
    } else {
        live_view(&s, &frame, &range, &rows, &days, &currency).await?
    };
    let quiet = chart.panels.iter().all(|p| !p.svg.contains("<rect"));
    let caller = user.caller(&s).await?;
    let rates = s.app.program_rates(&caller, id).await?;
    let waiting_currencies = rates
        .waiting_currencies
        .iter()
        .map(|c| c.to_ascii_uppercase())
        .collect::<Vec<_>>()
        .join(", ");
    Ok(ok(&OverviewPage {
        chrome: frame.chrome,
        head: frame.head,
        modes,
        test,
        picker,
        figures,
        chart,
        quiet,
        top,
        test_total,
        rates,
        waiting_currencies,
        program_currency: currency.to_ascii_uppercase(),
    }))
}

type View = (Vec<Figure>, Chart, Vec<TopRow>, Option<i64>);

/// The live figures: the program's rollups, their trends and the top partners.
async fn live_view(
    s: &AppState,
    frame: &Frame,
    range: &ResolvedRange,
    rows: &[DailyRollup],
    days: &[NaiveDate],
    currency: &str,
) -> app::Result<View> {
    let current: HashMap<String, &DailyRollup> = rows
        .iter()
        .filter(|r| r.day >= day_text(range.current.from))
        .map(|r| (r.day.clone(), r))
        .collect();
    let series = series(
        by_day(days, &current, |r| r.clicks),
        by_day(days, &current, |r| r.leads),
        by_day(days, &current, |r| r.sales),
        by_day(days, &current, |r| r.revenue_cents),
        by_day(days, &current, |r| r.commission_cents),
    );
    let m = performance(range, rows, currency).metrics;
    let from = day_text(range.current.from);
    let before = |f: fn(&DailyRollup) -> i64| -> i64 {
        crate::pages::chart::saturating_sum(rows.iter().filter(|r| r.day < from).map(f))
    };
    let trends = [
        (&m.clicks_trend, before(|r| r.clicks)),
        (&m.leads_trend, before(|r| r.leads)),
        (&m.sales_trend, before(|r| r.sales)),
        (&m.revenue_trend, before(|r| r.revenue_cents)),
        (&m.commission_trend, before(|r| r.commission_cents)),
    ];
    let figures = series
        .iter()
        .zip(trends)
        .map(|(s, (t, before))| Figure {
            label: s.label,
            value: s.total(currency),
            direction: t.trend_direction.clone(),
            trend: trend_text(t, before),
        })
        .collect();
    let params = app::dashboard::performance::PerformanceParams {
        period: None,
        date_from: Some(day_text(range.current.from)),
        date_to: Some(day_text(range.current.to)),
    };
    let top = s
        .app
        .top_partners(&frame.caller, frame.program.id, &params, TOP_PARTNERS)
        .await?
        .into_iter()
        .map(|t| TopRow {
            partner_id: t.partner_id,
            name: t.name,
            clicks: t.clicks,
            leads: t.leads,
            sales: t.sales,
            revenue: display_amount(t.revenue_figure, currency),
            commission: display_amount(t.commission_figure, currency),
        })
        .collect();
    let chart = chart::chart(days, &series, currency);
    Ok((figures, chart, top, None))
}

/// The test events of the range (the newest [`TEST_EVENTS`]) as the same charts: test
/// events touch no rollup, commission or payout.
async fn test_view(
    s: &AppState,
    program_id: i64,
    range: &ResolvedRange,
    days: &[NaiveDate],
    currency: &str,
) -> app::Result<View> {
    let filter = EventFilter {
        kinds: EventKind::ALL.to_vec(),
        test: true,
        from_ms: Some(range.current.start_ms()),
        to_ms: Some(range.current.end_ms()),
    };
    let found = s
        .app
        .events_page(program_id, &filter, 1, TEST_EVENTS)
        .await?;
    let index: HashMap<NaiveDate, usize> = days.iter().enumerate().map(|(i, d)| (*d, i)).collect();
    let mut values = vec![vec![0i64; days.len()]; 5];
    for e in &found.data {
        let (ts, column, amount) = match e {
            ListedEvent::Click(c) => (c.timestamp, 0, 1),
            ListedEvent::Lead(l) => (l.timestamp, 1, 1),
            ListedEvent::Conversion(c) => (c.timestamp, 2, c.amount_cents),
        };
        if let Some(i) = index.get(&date_of(ts)) {
            values[column][*i] += 1;
            if column == 2 {
                values[3][*i] += amount;
            }
        }
    }
    let [clicks, leads, sales, revenue, commission]: [Vec<i64>; 5] =
        values.try_into().expect("five series");
    let series = series(clicks, leads, sales, revenue, commission);
    let figures = series
        .iter()
        .map(|s| Figure {
            label: s.label,
            value: s.total(currency),
            direction: "stable".into(),
            trend: if s.key == "earnings" {
                "test sales earn no commission".into()
            } else {
                "test events".into()
            },
        })
        .collect();
    let chart = chart::chart(days, &series, currency);
    let total = (found.total > TEST_EVENTS).then_some(found.total);
    Ok((figures, chart, Vec::new(), total))
}
