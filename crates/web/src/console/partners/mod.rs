//! A program's partners: the list with their totals and standing (applications
//! first-class: approve, reject; ban after a confirmation), a new partner (with its
//! first link and an invite), and one partner's page: its figures, links (new,
//! archived, active again) with their coupon codes (new, archived after a
//! confirmation), details and invite link.

mod bonus;
mod links;
mod partner;

pub(super) use bonus::create_bonus;
pub(super) use links::{archive_coupon, create_coupon, create_link, set_link_status};
pub(super) use partner::{detail, edit, invite};

use partner::partner_page;

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;

use super::frame::{back, back_to, confirmed, done, Confirm, Frame, Head, Ids, Tab};
use super::session::Signed;
use crate::pages::session::see_other;
use crate::pages::view::{
    ok, problems_or, render, show_refused, Chrome, Field, Moment, NavItem, PageResult, Posted,
    ProgramId, Query, Refusal,
};
use crate::AppState;
use reftrack_domain::money::display_amount;
use reftrack_domain::status::PartnerStatus;
use reftrack_service as app;
use reftrack_service::programs::management::{PartnerStatusBody, ProgramPartnerParams};
use reftrack_service::programs::{LinkBody, PartnerBody, ProgramPartnerBody};
use reftrack_store::{ProgramPartnerRow, Record};

/// The page of partner `partner_id` of program `id`.
fn partner_href(id: i64, partner_id: i64) -> String {
    format!("{}/{partner_id}", Tab::Partners.href(id))
}

/// A change of standing a page offers, as a button.
struct Action {
    status: &'static str,
    label: &'static str,
    /// Asks for a confirmation first.
    danger: bool,
}

/// The changes of standing offered to a partner that is `status`.
fn actions(status: PartnerStatus) -> Vec<Action> {
    let a = |status, label, danger| Action {
        status,
        label,
        danger,
    };
    match status {
        PartnerStatus::Pending => vec![
            a("approved", "Approve", false),
            a("rejected", "Reject", false),
        ],
        PartnerStatus::Approved => vec![a("banned", "Ban", true)],
        PartnerStatus::Rejected => vec![a("approved", "Approve", false)],
        PartnerStatus::Banned => vec![a("approved", "Reinstate", false)],
    }
}

/// A partner as the list and its page show it.
struct PartnerRow {
    id: i64,
    name: String,
    email: String,
    code: String,
    status: &'static str,
    /// The program's group it is in.
    group_id: i64,
    group: String,
    joined: Moment,
    clicks: i64,
    leads: i64,
    sales: i64,
    revenue: String,
    commission: String,
    actions: Vec<Action>,
    /// What its application said, when it said anything.
    application: Option<Application>,
}

/// The website and message an applicant gave, as typed (the template escapes them).
struct Application {
    website: Option<String>,
    /// The website as a link's address: only an http(s) address is one.
    website_href: Option<String>,
    message: Option<String>,
}

/// The application of `r`, when it gave a website or a message.
fn application(r: &ProgramPartnerRow) -> Option<Application> {
    let given = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let website = given(&r.website);
    let message = given(&r.message);
    if website.is_none() && message.is_none() {
        return None;
    }
    Some(Application {
        website_href: website.as_deref().and_then(web_address),
        website,
        message,
    })
}

/// `text` when it is an http or https address with a host: anything else (a
/// `javascript:` address, a bare domain) is shown as text, never followed.
fn web_address(text: &str) -> Option<String> {
    let url = url::Url::parse(text).ok()?;
    (matches!(url.scheme(), "http" | "https") && url.host().is_some()).then(|| url.to_string())
}

/// A group of the program as the group controls list it.
struct GroupOption {
    id: i64,
    name: String,
}

/// The program's groups, the default first, for the pages' group controls.
async fn group_options(s: &AppState, frame: &Frame) -> app::Result<Vec<GroupOption>> {
    Ok(s.app
        .list_groups(&frame.caller, frame.program.id)
        .await?
        .data
        .into_iter()
        .map(|g| GroupOption {
            id: g.id,
            name: g.name,
        })
        .collect())
}

fn partner_row(r: &ProgramPartnerRow, currency: &str, groups: &[GroupOption]) -> PartnerRow {
    PartnerRow {
        id: r.partner_id,
        name: r.name.clone(),
        email: r.email.clone().unwrap_or_default(),
        code: r.code.clone(),
        status: r.status.as_str(),
        group_id: r.group_id,
        group: groups
            .iter()
            .find(|g| g.id == r.group_id)
            .map(|g| g.name.clone())
            .unwrap_or_default(),
        joined: Moment::of(r.created_at),
        clicks: r.clicks,
        leads: r.leads,
        sales: r.sales,
        revenue: display_amount(r.revenue_cents, currency),
        commission: display_amount(r.commission_cents, currency),
        actions: actions(r.status),
        application: application(r),
    }
}

#[derive(Template)]
#[template(path = "console/partners.html")]
struct PartnersPage {
    chrome: Chrome,
    head: Head,
    statuses: Vec<NavItem>,
    /// The status filter's words ("pending", …), empty for all.
    status: String,
    /// The group whose partners alone the page shows, if any.
    group_filter: Option<(i64, String)>,
    rows: Vec<PartnerRow>,
    /// The program's groups: a partner's control moves it to another.
    groups: Vec<GroupOption>,
    next_href: Option<String>,
    first_href: Option<String>,
    /// This page, for the forms' way back.
    here: String,
    name: Field,
    email: Field,
    code: Field,
    /// Create a first link named after the code.
    with_link: bool,
    /// Make an invite link right away.
    with_invite: bool,
    form_error: Option<String>,
}

/// The status filters.
const STATUSES: [(&str, &str); 5] = [
    ("", "All"),
    ("pending", "Applications"),
    ("approved", "Approved"),
    ("rejected", "Rejected"),
    ("banned", "Banned"),
];

async fn partners_page(s: &AppState, frame: Frame, q: &Posted) -> app::Result<PartnersPage> {
    let id = frame.program.id;
    let status = q
        .text("status")
        .filter(|v| STATUSES.iter().any(|(s, _)| s == v))
        .unwrap_or_default();
    let groups = group_options(s, &frame).await?;
    // A group of the program, when the page shows only its partners.
    let group = q
        .text("group")
        .and_then(|g| groups.iter().find(|o| o.id.to_string() == g));
    let filter = ProgramPartnerParams {
        status: Some(status.clone()).filter(|s| !s.is_empty()),
        group_id: group.map(|g| g.id.to_string()),
    };
    let listed = s
        .app
        .program_partners(&frame.caller, id, &filter, &q.page())
        .await?;
    let base = Tab::Partners.href(id);
    let mut query: Vec<String> = Vec::new();
    if !status.is_empty() {
        query.push(format!("status={status}"));
    }
    if let Some(g) = group {
        query.push(format!("group={}", g.id));
    }
    let filtered = if query.is_empty() {
        base.clone()
    } else {
        format!("{base}?{}", query.join("&"))
    };
    let sep = if query.is_empty() { '?' } else { '&' };
    let currency = frame.program.currency.clone();
    let group_filter = group.map(|g| (g.id, g.name.clone()));
    Ok(PartnersPage {
        statuses: STATUSES
            .iter()
            .map(|(v, label)| NavItem {
                href: match (v.is_empty(), group) {
                    (true, None) => base.clone(),
                    (true, Some(g)) => format!("{base}?group={}", g.id),
                    (false, None) => format!("{base}?status={v}"),
                    (false, Some(g)) => format!("{base}?status={v}&group={}", g.id),
                },
                label: (*label).into(),
                current: *v == status,
            })
            .collect(),
        rows: listed
            .data
            .iter()
            .map(|r| partner_row(r, &currency, &groups))
            .collect(),
        groups,
        next_href: listed
            .next_cursor
            .map(|c| format!("{filtered}{sep}cursor={c}")),
        first_href: q.text("cursor").map(|_| filtered.clone()),
        here: match q.text("cursor") {
            Some(c) => format!("{filtered}{sep}cursor={c}"),
            None => filtered,
        },
        status,
        group_filter,
        name: Field::new("name", "Name"),
        email: Field::new("email", "Email"),
        code: Field::new("code", "Code"),
        with_link: true,
        with_invite: true,
        form_error: None,
        chrome: frame.chrome,
        head: frame.head,
    })
}

/// `GET /app/programs/{id}/partners?status=…&cursor=…`.
pub(super) async fn list(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, q.text("done").as_deref()).await?;
    Ok(ok(&partners_page(&s, frame, &q).await?))
}

/// `POST /app/programs/{id}/partners/{partner_id}/group`: the partner moves to the
/// program's group `group_id`; its later sales earn that group's reward.
pub(super) async fn set_group(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, partner_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    let group_id = form
        .get("group_id")
        .trim()
        .parse()
        .map_err(|_| app::Error::invalid("group_id must be a group of this program"))?;
    s.app
        .set_program_partner_status(
            &frame.caller,
            id,
            partner_id,
            PartnerStatusBody {
                status: None,
                group_id: Some(group_id),
            },
        )
        .await?;
    Ok(see_other(&back_to(&form, &Tab::Partners.href(id), "group")))
}

/// `POST /app/programs/{id}/partners`: a new partner of the program (approved), with a
/// first link named after its code and, when it has an email, an invite link: its page
/// opens showing that link.
pub(super) async fn add(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    let caller = frame.caller.clone();
    let email = form.text("email");
    let b = PartnerBody {
        name: form.get("name"),
        code: form.get("code"),
        email: email.clone(),
        workspace_id: Some(frame.program.workspace_id),
    };
    // Every wrong field at once, should the service refuse one.
    let problems = b.problems();
    let refused = match s.app.create_partner(&caller, b).await.refused()? {
        Ok(partner) => {
            let add = ProgramPartnerBody {
                partner_id: partner.id,
                status: Some("approved".into()),
                group_id: None,
            };
            s.app.add_program_partner(&caller, id, add).await?;
            if form.text("with_link").is_some() {
                let link = LinkBody {
                    program_id: id,
                    partner_id: Some(partner.id),
                    short_link: partner.code.clone(),
                    status: None,
                    destination_url: None,
                };
                s.app.create_link(&caller, link).await?;
            }
            if email.is_some() && form.text("with_invite").is_some() {
                let invite = s
                    .app
                    .invite_partner(&caller, partner.id, &s.app.public_url().await?)
                    .await?;
                let mut page = partner_page(&s, frame, partner.id).await?;
                page.chrome.notice = Some(
                    "The partner is added. Send it the invite link below: it sets its password and signs in."
                        .into(),
                );
                page.invite = Some(invite);
                return Ok(ok(&page));
            }
            return Ok(done(&partner_href(id, partner.id), "partner"));
        }
        Err(refused) => refused,
    };
    let mut page = partners_page(&s, frame, &Posted::parse(b"")).await?;
    page.with_link = form.text("with_link").is_some();
    page.with_invite = form.text("with_invite").is_some();
    // The store names a taken code "partner code".
    let refused = refused.replace("partner code", "this code");
    page.form_error = show_refused(
        &form,
        problems_or(problems, refused),
        &mut [&mut page.name, &mut page.email, &mut page.code],
    );
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

/// `POST /app/programs/{id}/partners/{partner_id}/status`: approve, reject, reinstate,
/// or (after a confirmation) ban.
pub(super) async fn set_status(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, partner_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    let status = form.get("status");
    if status == "banned" && !confirmed(&form) {
        // Only those who may ban it are asked (the rule and words of the change).
        frame.allow_change(&s, Record::Program(id)).await?;
        let partner = s.app.program_partner(&frame.caller, id, partner_id).await?;
        let here = partner_href(id, partner_id);
        let mut page = Confirm::new(
            frame,
            format!("Ban {}?", partner.name),
            "Its links stop counting for it, it no longer earns commissions in this program \
             and its portal shows it is banned. You can reinstate it later.",
            format!("{here}/status"),
        );
        page.fields = vec![("status", status), ("back", form.get("back"))];
        page.button = "Ban partner";
        page.cancel = back(&form).unwrap_or(here);
        return Ok(ok(&page));
    }
    s.app
        .set_program_partner_status(
            &frame.caller,
            id,
            partner_id,
            PartnerStatusBody {
                status: Some(status),
                group_id: None,
            },
        )
        .await?;
    Ok(see_other(&back_to(
        &form,
        &Tab::Partners.href(id),
        "status",
    )))
}

#[cfg(test)]
mod tests {
    use super::web_address;

    #[test]
    fn only_http_addresses_become_links() {
        assert_eq!(
            web_address("https://bob.example/blog").as_deref(),
            Some("https://bob.example/blog")
        );
        assert!(web_address("http://bob.example").is_some());
        for text in [
            "javascript:alert(1)",
            "bob.example",
            "mailto:bob@example.com",
            "data:text/html,x",
            "https://",
        ] {
            assert_eq!(web_address(text), None, "{text}");
        }
    }
}
