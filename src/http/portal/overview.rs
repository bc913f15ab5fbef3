//! The overview: the partner's programs, and for the one chosen its standing or, once
//! approved, its earnings and the daily chart of a range.

use askama::Template;
use axum::extract::State;
use axum::response::Response;
use std::collections::HashMap;

use super::chart::{self, Chart, Day};
use super::session::{see_other, Signed};
use super::view::{
    notice, ok, program_tabs, standing_text, Chrome, Field, NavItem, PageResult, Posted, Query,
    Section,
};
use crate::app;
use crate::app::partners::PartnerProgramView;
use crate::app::performance::PerformanceParams;
use crate::domain::metrics;
use crate::domain::money::{display_amount, from_hundredths};
use crate::domain::status::PartnerStatus;
use crate::http::{AppState, Error};
use crate::store::DailyRollup;

/// The range shown when none is asked for.
const DEFAULT_PERIOD: &str = "30d";

/// The ranges offered as links.
const PERIODS: [(&str, &str); 4] = [
    ("7d", "7 days"),
    ("30d", "30 days"),
    ("90d", "90 days"),
    ("all", "All time"),
];

#[derive(Template)]
#[template(path = "partner/overview.html")]
struct OverviewPage {
    chrome: Chrome,
    /// Every program of the partner; a picker when there are several.
    programs: Vec<NavItem>,
    chosen: Option<Chosen>,
}

/// The program shown.
struct Chosen {
    id: i64,
    name: String,
    /// Why the partner sees nothing of it (not approved).
    standing: Option<&'static str>,
    approved: Option<Approved>,
}

/// What an approved partner sees of the program.
struct Approved {
    tabs: Vec<NavItem>,
    pending: String,
    approved: String,
    paid: String,
    hold_days: i64,
    /// 7d / 30d / 90d / all.
    periods: Vec<NavItem>,
    from: Field,
    to: Field,
    range_error: Option<String>,
    /// The range in words.
    range_label: String,
    chart: Chart,
}

/// `GET /partner/`: the overview's address without the slash.
pub(super) async fn to_overview() -> Response {
    see_other("/partner")
}

/// `GET /partner?program=ID&period=30d` (or `&from=YYYY-MM-DD&to=YYYY-MM-DD`).
pub(super) async fn overview(State(s): State<AppState>, p: Signed, Query(q): Query) -> PageResult {
    let me = s.app.partner_me(p.partner_id).await?;
    let wanted = match q.text("program") {
        Some(id) => Some(
            me.programs
                .iter()
                .find(|m| id.parse() == Ok(m.program_id))
                .ok_or_else(|| Error::not_found("Program not found"))?,
        ),
        None => me
            .programs
            .iter()
            .find(|m| m.status == PartnerStatus::Approved)
            .or(me.programs.first()),
    };
    let programs = if me.programs.len() > 1 {
        me.programs
            .iter()
            .map(|m| NavItem {
                href: format!("/partner?program={}", m.program_id),
                label: m.name.clone(),
                current: wanted.is_some_and(|w| w.program_id == m.program_id),
            })
            .collect()
    } else {
        Vec::new()
    };
    let chosen = match wanted {
        None => None,
        Some(m) if m.status != PartnerStatus::Approved => Some(Chosen {
            id: m.program_id,
            name: m.name.clone(),
            standing: Some(standing_text(m.status)),
            approved: None,
        }),
        Some(m) => {
            let program = s.app.partner_program(p.partner_id, m.program_id).await?;
            Some(Chosen {
                id: m.program_id,
                name: m.name.clone(),
                standing: None,
                approved: Some(approved(&s, p.partner_id, &program, &q).await?),
            })
        }
    };
    let chrome = Chrome::signed_in("Overview", &me, Section::Overview)
        .with_notice(notice(q.text("done").as_deref()));
    Ok(ok(&OverviewPage {
        chrome,
        programs,
        chosen,
    }))
}

/// The earnings and chart of an approved partner's program.
async fn approved(
    s: &AppState,
    partner_id: i64,
    program: &PartnerProgramView,
    q: &Posted,
) -> app::Result<Approved> {
    let balance = s.app.partner_balance(partner_id, program.id).await?;
    let money = |cents| display_amount(cents, &program.currency);
    let (from, to) = (q.text("from"), q.text("to"));
    let mut from_field = Field::new("from", "From").with(from.clone().unwrap_or_default());
    let mut to_field = Field::new("to", "To").with(to.clone().unwrap_or_default());
    let params = PerformanceParams {
        period: q.text("period"),
        date_from: from,
        date_to: to,
    };
    let default = PerformanceParams {
        period: Some(DEFAULT_PERIOD.into()),
        ..PerformanceParams::default()
    };
    let asked = if params.period.is_none() && params.date_from.is_none() && params.date_to.is_none()
    {
        &default
    } else {
        &params
    };
    let (range_error, (range, rows)) =
        match s.app.partner_rollups(partner_id, program.id, asked).await {
            Ok(found) => (None, found),
            Err(app::Error::Invalid(text)) => {
                let text = range_error_text(&text);
                if text.starts_with("The end") {
                    to_field.error = Some(text.clone());
                } else {
                    from_field.error = Some(text.clone());
                }
                let found = s
                    .app
                    .partner_rollups(partner_id, program.id, &default)
                    .await?;
                (Some(text), found)
            }
            Err(e) => return Err(e),
        };
    let periods = PERIODS
        .iter()
        .map(|(value, text)| NavItem {
            href: format!("/partner?program={}&period={value}", program.id),
            label: (*text).into(),
            current: *value == range.period,
        })
        .collect();
    let by_day: HashMap<&str, &DailyRollup> = rows.iter().map(|r| (r.day.as_str(), r)).collect();
    let days: Vec<Day> = range
        .current
        .days()
        .map(|day| {
            let r = by_day.get(metrics::day_text(day).as_str()).copied();
            Day {
                day,
                clicks: r.map_or(0, |r| r.clicks),
                leads: r.map_or(0, |r| r.leads),
                sales: r.map_or(0, |r| r.sales),
                // Rollups keep hundredths of the major unit whatever the currency.
                earnings: r.map_or(0, |r| {
                    from_hundredths(r.commission_cents, &program.currency)
                }),
            }
        })
        .collect();
    Ok(Approved {
        tabs: program_tabs(program.id, &format!("/partner?program={}", program.id)),
        pending: money(balance.pending_cents),
        approved: money(balance.approved_cents),
        paid: money(balance.paid_cents),
        hold_days: program.commission_hold_days,
        periods,
        from: from_field,
        to: to_field,
        range_error,
        range_label: format!(
            "{} to {} (UTC)",
            metrics::day_text(range.current.from),
            metrics::day_text(range.current.to)
        ),
        chart: chart::chart(&days, &program.currency),
    })
}

/// A range error of the service in the words of the page's form.
fn range_error_text(text: &str) -> String {
    text.replace(
        "dateFrom and dateTo must be given together",
        "Give both dates",
    )
    .replace("dateFrom", "The start date")
    .replace("dateTo", "The end date")
    .replace(" or timestamp", "")
    .replace("period must", "The range must")
}
