//! The overview: the partner's programs, and for the one chosen its standing or, once
//! approved, its earnings, the program's terms, its newest active links to share and the
//! daily chart of a range.

use askama::Template;
use axum::extract::State;
use axum::response::Response;
use std::collections::HashMap;

use super::programs::shares;
use super::session::{see_other, Signed};
use super::terms;
use super::view::{
    self, notice, ok, program_tabs, standing_text, Chrome, NavItem, PageResult, Posted, Query,
    Section,
};
use crate::pages::chart::{self, Chart, Series};
use crate::pages::range::{self, RangePicker};
use crate::{AppState, Error};
use reftrack_domain::bounties::{goal_words, offer_words, Metric};
use reftrack_domain::metrics;
use reftrack_domain::money::display_amount;
use reftrack_domain::status::PartnerStatus;
use reftrack_domain::time::day_of;
use reftrack_service as app;
use reftrack_service::accounts::{PartnerLink, PartnerProgramView};
use reftrack_service::PageParams;
use reftrack_store::DailyRollup;

#[derive(Template)]
#[template(path = "partner/overview.html")]
struct OverviewPage {
    chrome: Chrome,
    /// Every program of the partner; a picker when there are several.
    programs: Vec<NavItem>,
    chosen: Option<Chosen>,
    /// The partner has no payout email: payouts leave it out.
    no_payout_email: bool,
}

/// The program shown.
struct Chosen {
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
    /// What the program offers, one sentence a line ([`terms::lines`]).
    terms: Vec<String>,
    /// The partner's newest active links, what to share for each.
    links: Vec<Share>,
    /// It has more active links than shown.
    more_links: bool,
    /// No site origin is known: a link without a redirect address is a parameter.
    parameter_only: bool,
    /// Some link shown is a parameter, which the page explains.
    any_parameter: bool,
    /// The partner may make its own links.
    can_create: bool,
    picker: RangePicker,
    chart: Chart,
    /// The bounties the partner's group may earn, and those it earned.
    bounties: Vec<BountyView>,
}

/// A bounty as the partner's overview shows it.
struct BountyView {
    name: String,
    /// `Reach 3 sales to earn $50.00`.
    words: String,
    /// `2 of 3 sales`.
    progress: String,
    /// The value and the goal, for the progress bar (the value capped at the goal).
    value: i64,
    goal: i64,
    earned: bool,
    /// Until when it counts, if it ends.
    ends: Option<String>,
}

/// What the partner shares for one of its links, as on the links page.
struct Share {
    share: String,
    on_site: Option<String>,
}

/// Active links the overview shows; the links page has them all.
const LINKS_SHOWN: &str = "3";

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
            name: m.name.clone(),
            standing: Some(standing_text(m.status)),
            approved: None,
        }),
        Some(m) => {
            let program = s.app.partner_program(p.partner_id, m.program_id).await?;
            Some(Chosen {
                name: m.name.clone(),
                standing: None,
                approved: Some(approved(&s, p.partner_id, &program, &q).await?),
            })
        }
    };
    let chrome = view::signed_in("Overview", &me, Section::Overview)
        .with_notice(notice(q.text("done").as_deref()));
    Ok(ok(&OverviewPage {
        chrome,
        programs,
        chosen,
        no_payout_email: me.payout_email.is_none(),
    }))
}

/// The earnings, terms, links and chart of an approved partner's program.
async fn approved(
    s: &AppState,
    partner_id: i64,
    program: &PartnerProgramView,
    q: &Posted,
) -> app::Result<Approved> {
    let balance = s.app.partner_balance(partner_id, program.id).await?;
    let first = PageParams {
        limit: Some(LINKS_SHOWN.into()),
        cursor: None,
    };
    let url = s.app.public_url().await?;
    let listed = s
        .app
        .partner_active_links(partner_id, program.id, &first, &url)
        .await?;
    let links = listed
        .data
        .into_iter()
        .map(|PartnerLink { link, redirect_url }| {
            let (share, on_site) = shares(&program.allowed_origins, &link.short_link, redirect_url);
            Share { share, on_site }
        })
        .collect::<Vec<Share>>();
    let parameter_only = program.allowed_origins.is_empty();
    let any_parameter = parameter_only && links.iter().any(|l| l.on_site.is_none());
    let money = |cents| display_amount(cents, &program.currency);
    let ((range, rows), picker) = range::load(
        q,
        |params| async move { s.app.partner_rollups(partner_id, program.id, &params).await },
        |(range, _)| range,
        "/partner",
        vec![("program", program.id.to_string())],
    )
    .await?;
    let by_day: HashMap<&str, &DailyRollup> = rows.iter().map(|r| (r.day.as_str(), r)).collect();
    let days: Vec<_> = range.current.days().collect();
    let rollups: Vec<Option<&DailyRollup>> = days
        .iter()
        .map(|day| by_day.get(metrics::day_text(*day).as_str()).copied())
        .collect();
    let values = |f: fn(&DailyRollup) -> i64| -> Vec<i64> {
        rollups.iter().map(|r| r.map_or(0, f)).collect()
    };
    let series = [
        Series {
            key: "clicks",
            label: "Clicks",
            money: false,
            values: values(|r| r.clicks),
        },
        Series {
            key: "leads",
            label: "Leads",
            money: false,
            values: values(|r| r.leads),
        },
        Series {
            key: "sales",
            label: "Sales",
            money: false,
            values: values(|r| r.sales),
        },
        Series {
            key: "earnings",
            label: "Earnings",
            money: true,
            // Rollups keep minor units of the program's currency.
            values: rollups
                .iter()
                .map(|r| r.map_or(0, |r| r.commission_cents))
                .collect(),
        },
    ];
    Ok(Approved {
        tabs: program_tabs(program.id, &format!("/partner?program={}", program.id)),
        pending: money(balance.pending_cents),
        approved: money(balance.approved_cents),
        paid: money(balance.paid_cents),
        terms: terms::lines(&program.terms),
        more_links: listed.next_cursor.is_some(),
        links,
        any_parameter,
        parameter_only,
        can_create: program.partner_links_allowed,
        picker,
        chart: chart::chart(&days, &series, &program.currency),
        bounties: bounty_views(s, partner_id, program).await?,
    })
}

/// The partner's bounties in `program`, with its progress towards each.
async fn bounty_views(
    s: &AppState,
    partner_id: i64,
    program: &PartnerProgramView,
) -> app::Result<Vec<BountyView>> {
    let currency = &program.currency;
    Ok(s.app
        .partner_bounties(partner_id, program.id)
        .await?
        .into_iter()
        .map(|b| {
            let goal = goal_words(b.bounty.metric, b.bounty.threshold, currency);
            let done = match b.bounty.metric {
                Metric::RevenueCents => display_amount(b.progress.max(0), currency),
                _ => b.progress.max(0).to_string(),
            };
            BountyView {
                words: offer_words(
                    b.bounty.metric,
                    b.bounty.threshold,
                    b.bounty.amount_cents,
                    currency,
                ),
                progress: format!("{done} of {goal}"),
                value: b.progress.clamp(0, b.bounty.threshold),
                goal: b.bounty.threshold,
                earned: b.earned,
                ends: b.bounty.ends_at.map(day_of),
                name: b.bounty.name,
            }
        })
        .collect())
}
