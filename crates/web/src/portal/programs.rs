//! A program's pages for an approved partner: its links (and a new one), its
//! commissions (and their CSV) and its payouts.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;

use super::session::{see_other, Signed};
use super::view::{
    self, notice, ok, place_error, program_tabs, render, Chrome, Field, Moment, NavItem,
    PageResult, Posted, ProgramId, Query, Section,
};
use crate::downloads::csv_stream;
use crate::pages::view::{commission_what, kind_label, share_text, COMMISSION_STATUSES};
use crate::AppState;
use reftrack_domain::money::display_amount;
use reftrack_domain::status::{CommissionFlag, LinkStatus};
use reftrack_service as app;
use reftrack_service::accounts::{
    PartnerLink, PartnerLinkBody, PartnerProgramView, MAX_PARTNER_LINKS,
};
use reftrack_service::money::exports;
use reftrack_service::money::payouts::CommissionParams;

/// What every program page shows above its content.
struct ProgramFrame {
    chrome: Chrome,
    tabs: Vec<NavItem>,
    program: PartnerProgramView,
    /// The page's own address.
    href: String,
    /// The partner has no payout email: payouts leave it out.
    no_payout_email: bool,
}

impl ProgramFrame {
    /// The frame of a program's page titled `title` (its address ends in the title in
    /// lower case); 404 / 403 pages when the partner is not approved in it.
    async fn load(
        s: &AppState,
        partner_id: i64,
        program_id: i64,
        title: &str,
        q: &Posted,
    ) -> app::Result<ProgramFrame> {
        let program = s.app.partner_program(partner_id, program_id).await?;
        let me = s.app.partner_me(partner_id).await?;
        let chrome = view::signed_in(format!("{title} · {}", program.name), &me, Section::None)
            .with_notice(notice(q.text("done").as_deref()));
        let href = format!(
            "/partner/programs/{program_id}/{}",
            title.to_ascii_lowercase()
        );
        Ok(ProgramFrame {
            chrome,
            tabs: program_tabs(program_id, &href),
            program,
            href,
            no_payout_email: me.payout_email.is_none(),
        })
    }
}

/// A page's address with the next page's cursor.
fn next_page(href: &str, extra: &str, cursor: Option<String>) -> Option<String> {
    cursor.map(|c| {
        let sep = if href.contains('?') { '&' } else { '?' };
        format!("{href}{sep}{extra}cursor={c}")
    })
}

#[derive(Template)]
#[template(path = "partner/links.html")]
struct LinksPage {
    chrome: Chrome,
    tabs: Vec<NavItem>,
    program_name: String,
    program_id: i64,
    links: Vec<LinkRow>,
    /// No site origin is known: the page explains the `aff` parameter.
    parameter_only: bool,
    /// Some link has a redirect address, which works anywhere.
    any_redirect: bool,
    /// Some link has none.
    any_plain: bool,
    can_create: bool,
    max_links: i64,
    short_link: Field,
    form_error: Option<String>,
    next_href: Option<String>,
}

struct LinkRow {
    short_link: String,
    /// What the partner shares: the redirect address when the link has one, else an
    /// address on the program's site, or the parameter to add to one.
    share: String,
    /// Beside a redirect address: the address on the program's site (or the parameter),
    /// for pages that carry the tracker.
    on_site: Option<String>,
    /// The link's active coupon codes.
    coupon_codes: Vec<String>,
    clicks: i64,
    active: bool,
    status: &'static str,
    created: Moment,
}

/// What the partner shares for its link `short_link` in a program whose site is at
/// `origins`: its redirect address when it has one, with the address on the program's
/// site (or the parameter) beside it, for pages that carry the tracker; else that
/// address (or parameter) alone.
pub(super) fn shares(
    origins: &[String],
    short_link: &str,
    redirect_url: Option<String>,
) -> (String, Option<String>) {
    let on_site = share_text(origins, short_link);
    match redirect_url {
        Some(redirect) => (redirect, Some(on_site)),
        None => (on_site, None),
    }
}

async fn links_page(s: &AppState, p: &Signed, id: i64, q: &Posted) -> app::Result<LinksPage> {
    let frame = ProgramFrame::load(s, p.partner_id, id, "Links", q).await?;
    let page = q.page();
    let url = s.app.public_url().await?;
    let listed = s.app.partner_links(p.partner_id, id, &page, &url).await?;
    let links: Vec<LinkRow> = listed
        .data
        .into_iter()
        .map(|PartnerLink { link, redirect_url }| {
            let (share, on_site) = shares(
                &frame.program.allowed_origins,
                &link.short_link,
                redirect_url,
            );
            LinkRow {
                share,
                on_site,
                coupon_codes: link.coupon_codes,
                short_link: link.short_link,
                clicks: link.clicks,
                active: link.status == LinkStatus::Active,
                status: link.status.as_str(),
                created: Moment::of(link.created_at),
            }
        })
        .collect();
    Ok(LinksPage {
        any_redirect: links.iter().any(|l| l.on_site.is_some()),
        any_plain: links.iter().any(|l| l.on_site.is_none()),
        chrome: frame.chrome,
        tabs: frame.tabs,
        program_name: frame.program.name.clone(),
        program_id: id,
        links,
        parameter_only: frame.program.allowed_origins.is_empty(),
        can_create: frame.program.partner_links_allowed,
        max_links: MAX_PARTNER_LINKS,
        short_link: Field::new("short_link", "Short link"),
        form_error: None,
        next_href: next_page(&frame.href, "", listed.next_cursor),
    })
}

/// `GET /partner/programs/{id}/links`.
pub(super) async fn links(
    State(s): State<AppState>,
    p: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    Ok(ok(&links_page(&s, &p, id, &q).await?))
}

/// `POST /partner/programs/{id}/links`: a new link, then back to the list.
pub(super) async fn create_link(
    State(s): State<AppState>,
    p: Signed,
    ProgramId(id): ProgramId,
    form: Posted,
) -> PageResult {
    let wanted = form.text("short_link");
    let b = PartnerLinkBody {
        short_link: wanted.clone(),
    };
    let url = s.app.public_url().await?;
    let refused = match s.app.create_partner_link(p.partner_id, id, b, &url).await {
        Ok(_) => {
            return Ok(see_other(&format!(
                "/partner/programs/{id}/links?done=created"
            )))
        }
        Err(app::Error::Invalid(t) | app::Error::Conflict(t) | app::Error::Forbidden(t)) => t,
        Err(e) => return Err(e.into()),
    };
    let mut page = links_page(&s, &p, id, &Posted::parse(b"")).await?;
    page.short_link = page.short_link.with(wanted.unwrap_or_default());
    page.form_error = place_error(&refused, &mut [&mut page.short_link]);
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

#[derive(Template)]
#[template(path = "partner/commissions.html")]
struct CommissionsPage {
    chrome: Chrome,
    tabs: Vec<NavItem>,
    program_name: String,
    program_id: i64,
    rows: Vec<CommissionView>,
    statuses: Vec<StatusOption>,
    status_error: Option<String>,
    csv_href: String,
    next_href: Option<String>,
    /// Set on a page after the first: back to the first.
    first_href: Option<String>,
}

struct CommissionView {
    created: Moment,
    /// What it is for: the rule that made it in words, else its kind.
    what: String,
    /// Its kind in words: sale, lead, bonus, bounty or a refund taken back.
    kind: &'static str,
    transaction_id: Option<String>,
    amount: String,
    status: &'static str,
    clawback: bool,
    /// Waits for the owner's review: the customer has the partner's email.
    self_referral: bool,
    paid: Option<Moment>,
}

struct StatusOption {
    value: &'static str,
    label: &'static str,
    selected: bool,
}

/// `GET /partner/programs/{id}/commissions?status=…&cursor=…`.
pub(super) async fn commissions(
    State(s): State<AppState>,
    p: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = ProgramFrame::load(&s, p.partner_id, id, "Commissions", &q).await?;
    let status = q.text("status").unwrap_or_default();
    let params = CommissionParams {
        status: Some(status.clone()).filter(|s| !s.is_empty()),
        ..CommissionParams::default()
    };
    let page = q.page();
    let (listed, status_error) = match s
        .app
        .partner_commissions(p.partner_id, id, &params, &page)
        .await
    {
        Ok(l) => (Some(l), None),
        Err(app::Error::Invalid(text)) if text.starts_with("status") => {
            (None, Some(text.replacen("status", "Status", 1)))
        }
        Err(e) => return Err(e.into()),
    };
    let filter = if status.is_empty() || status_error.is_some() {
        String::new()
    } else {
        format!("status={status}&")
    };
    let (rows, next) = match listed {
        Some(l) => (l.data, l.next_cursor),
        None => (Vec::new(), None),
    };
    let rows = rows
        .into_iter()
        .map(|c| CommissionView {
            created: Moment::of(c.created_at),
            what: commission_what(&c),
            kind: kind_label(c.kind),
            amount: if c.awaiting_rate {
                // Its sale waits for an exchange rate: no amount yet.
                "no rate yet".to_string()
            } else {
                display_amount(c.amount_cents, &c.currency)
            },
            status: c.status.as_str(),
            clawback: c.kind.as_str() == "clawback",
            self_referral: c.flags.contains(&CommissionFlag::SelfReferral),
            paid: c.paid_at.map(Moment::of),
            transaction_id: c.transaction_id,
        })
        .collect();
    let with_filter = format!("{}?{}", frame.href, filter.trim_end_matches('&'));
    let page = CommissionsPage {
        chrome: frame.chrome,
        tabs: frame.tabs,
        program_name: frame.program.name,
        program_id: id,
        rows,
        statuses: COMMISSION_STATUSES
            .iter()
            .map(|(value, label)| StatusOption {
                value,
                label,
                selected: *value == status,
            })
            .collect(),
        status_error,
        csv_href: format!(
            "/partner/programs/{id}/commissions.csv{}",
            if filter.is_empty() {
                String::new()
            } else {
                format!("?{}", filter.trim_end_matches('&'))
            }
        ),
        next_href: next_page(&frame.href, &filter, next),
        first_href: q
            .text("cursor")
            .map(|_| with_filter.trim_end_matches('?').to_string()),
    };
    Ok(ok(&page))
}

/// `GET /partner/programs/{id}/commissions.csv?status=…`: every matching commission.
pub(super) async fn commissions_csv(
    State(s): State<AppState>,
    p: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let params = CommissionParams {
        status: q.text("status"),
        ..CommissionParams::default()
    };
    let chunks = s
        .app
        .export_partner_commissions(p.partner_id, id, &params)
        .await?;
    let name = format!("program-{id}-my-commissions.csv");
    Ok(csv_stream(&name, chunks, exports::commissions_csv))
}

#[derive(Template)]
#[template(path = "partner/payouts.html")]
struct PayoutsPage {
    chrome: Chrome,
    tabs: Vec<NavItem>,
    program_name: String,
    rows: Vec<PayoutView>,
    next_href: Option<String>,
    no_payout_email: bool,
}

struct PayoutView {
    payout_id: i64,
    status: &'static str,
    amount: String,
    commission_count: i64,
    created: Moment,
    paid: Option<Moment>,
}

/// `GET /partner/programs/{id}/payouts`.
pub(super) async fn payouts(
    State(s): State<AppState>,
    p: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = ProgramFrame::load(&s, p.partner_id, id, "Payouts", &q).await?;
    let page = q.page();
    let listed = s.app.partner_payouts(p.partner_id, id, &page).await?;
    let rows = listed
        .data
        .into_iter()
        .map(|i| PayoutView {
            payout_id: i.payout_id,
            status: i.status.as_str(),
            amount: display_amount(i.amount_cents, &i.currency),
            commission_count: i.commission_count,
            created: Moment::of(i.created_at),
            paid: i.paid_at.map(Moment::of),
        })
        .collect();
    Ok(ok(&PayoutsPage {
        chrome: frame.chrome,
        tabs: frame.tabs,
        program_name: frame.program.name,
        rows,
        next_href: next_page(&frame.href, "", listed.next_cursor),
        no_payout_email: frame.no_payout_email,
    }))
}
