//! The overview: the partner's programs, and for the one chosen its standing or, once
//! approved, its earnings and the daily chart of a range.

use askama::Template;
use axum::extract::{RawQuery, State};
use axum::response::Response;
use chrono::NaiveDate;

use super::chart::{self, Chart, Day};
use super::session::{see_other, Signed};
use super::view::{
    notice, ok, program_tabs, standing_text, Chrome, Field, NavItem, PageResult, Posted, Section,
};
use crate::app;
use crate::app::partners::PartnerProgramView;
use crate::domain::metrics::{self, DayRange};
use crate::domain::money::display_amount;
use crate::domain::status::PartnerStatus;
use crate::domain::time::date_of;
use crate::http::{AppState, Error};

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
    chart: Option<Chart>,
}

/// `GET /partner/`: the overview's address without the slash.
pub(super) async fn to_overview() -> Response {
    see_other("/partner")
}

/// `GET /partner?program=ID&period=30d` (or `&from=YYYY-MM-DD&to=YYYY-MM-DD`).
pub(super) async fn overview(
    State(s): State<AppState>,
    p: Signed,
    RawQuery(raw): RawQuery,
) -> PageResult {
    let q = Posted::parse(raw.unwrap_or_default().as_bytes());
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
    let today = date_of(s.app.now_ms());
    let (period, from, to) = (q.text("period"), q.text("from"), q.text("to"));
    let mut from_field = Field::new("from", "From").with(from.clone().unwrap_or_default());
    let mut to_field = Field::new("to", "To").with(to.clone().unwrap_or_default());
    let joined = date_of(program.joined_at);
    let resolved = metrics::resolve_range(
        period.as_deref().or(Some("30d")),
        from.as_deref(),
        to.as_deref(),
        today,
        joined,
    );
    let (range, range_error) = match resolved {
        Ok(r) => (r, None),
        Err(text) => {
            let text = text
                .replace(
                    "dateFrom and dateTo must be given together",
                    "Give both dates",
                )
                .replace("dateFrom", "The start date")
                .replace("dateTo", "The end date")
                .replace(" or timestamp", "")
                .replace("period must", "The range must");
            if text.starts_with("The end") {
                to_field.error = Some(text.clone());
            } else if text.starts_with("The start") {
                from_field.error = Some(text.clone());
            }
            let default = metrics::resolve_range(Some("30d"), None, None, today, joined)
                .expect("30d is a period");
            (default, Some(text))
        }
    };
    let label = range.period.as_str();
    let periods = PERIODS
        .iter()
        .map(|(value, text)| NavItem {
            href: format!("/partner?program={}&period={value}", program.id),
            label: (*text).into(),
            current: *value == label,
        })
        .collect();
    let days = figures(s, partner_id, program.id, range.current).await?;
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
        chart: days.map(|d| chart::chart(&d, &program.currency)),
    })
}

/// The partner's figures for every day of `range`, or none while the service cannot
/// give them.
async fn figures(
    _s: &AppState,
    _partner_id: i64,
    _program_id: i64,
    range: DayRange,
) -> app::Result<Option<Vec<Day>>> {
    let _days: Vec<NaiveDate> = range.days().collect();
    Ok(None)
}
