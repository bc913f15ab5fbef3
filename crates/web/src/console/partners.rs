//! A program's partners: the list with their totals and standing (applications
//! first-class: approve, reject; ban after a confirmation), a new partner (with its
//! first link and an invite), and one partner's page: its figures, links (new,
//! archived, active again) with their coupon codes (new, archived after a
//! confirmation), details and invite link.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;

use super::frame::{back, back_to, confirmed, done, Confirm, Frame, Head, Ids, Ids3, Tab};
use super::session::Signed;
use crate::pages::session::see_other;
use crate::pages::view::{
    ok, problems_or, render, share_text, show_refused, Chrome, Field, Moment, NavItem, PageError,
    PageResult, Posted, ProgramId, Query, Refusal,
};
use crate::AppState;
use reftrack_domain::money::display_amount;
use reftrack_domain::status::PartnerStatus;
use reftrack_service as app;
use reftrack_service::admin::{
    LinkBody, LinkPatchBody, PartnerBody, PartnerPatchBody, ProgramPartnerBody,
};
use reftrack_service::coupons::CouponBody;
use reftrack_service::management::{LinkParams, PartnerStatusBody};
use reftrack_service::partners::Invite;
use reftrack_service::{Caller, PageParams};
use reftrack_store::{Coupon, Link, ProgramPartnerRow, Record};

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

fn partner_row(r: &ProgramPartnerRow, currency: &str) -> PartnerRow {
    PartnerRow {
        id: r.partner_id,
        name: r.name.clone(),
        email: r.email.clone().unwrap_or_default(),
        code: r.code.clone(),
        status: r.status.as_str(),
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
    rows: Vec<PartnerRow>,
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
    let listed = s
        .app
        .program_partners(
            &frame.caller,
            id,
            Some(status.as_str()).filter(|s| !s.is_empty()),
            &q.page(),
        )
        .await?;
    let base = Tab::Partners.href(id);
    let filtered = if status.is_empty() {
        base.clone()
    } else {
        format!("{base}?status={status}")
    };
    let sep = if status.is_empty() { '?' } else { '&' };
    let currency = frame.program.currency.clone();
    Ok(PartnersPage {
        statuses: STATUSES
            .iter()
            .map(|(v, label)| NavItem {
                href: if v.is_empty() {
                    base.clone()
                } else {
                    format!("{base}?status={v}")
                },
                label: (*label).into(),
                current: *v == status,
            })
            .collect(),
        rows: listed
            .data
            .iter()
            .map(|r| partner_row(r, &currency))
            .collect(),
        next_href: listed
            .next_cursor
            .map(|c| format!("{filtered}{sep}cursor={c}")),
        first_href: q.text("cursor").map(|_| filtered.clone()),
        here: match q.text("cursor") {
            Some(c) => format!("{filtered}{sep}cursor={c}"),
            None => filtered,
        },
        status,
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
        .set_program_partner_status(&frame.caller, id, partner_id, PartnerStatusBody { status })
        .await?;
    Ok(see_other(&back_to(
        &form,
        &Tab::Partners.href(id),
        "status",
    )))
}

#[derive(Template)]
#[template(path = "console/partner.html")]
struct PartnerPage {
    chrome: Chrome,
    head: Head,
    partner: PartnerRow,
    payout_method: String,
    payout_email: String,
    links: Vec<LinkRow>,
    short_link: Field,
    link_error: Option<String>,
    edit_name: Field,
    edit_email: Field,
    edit_method: Field,
    methods: Vec<(&'static str, &'static str, bool)>,
    edit_payout_email: Field,
    edit_error: Option<String>,
    /// Whether the caller may change the partner's sign-in, email and payout details:
    /// not when the partner is also in programs of a workspace it does not manage.
    owns_account: bool,
    /// An invite link just made.
    invite: Option<Invite>,
    invite_error: Option<String>,
    /// The link a new coupon code goes on, its code and Stripe promotion code.
    coupon_link: Field,
    link_options: Vec<(i64, String, bool)>,
    coupon_code: Field,
    promotion_code: Field,
    coupon_error: Option<String>,
    here: String,
}

struct LinkRow {
    id: i64,
    short_link: String,
    share: String,
    active: bool,
    clicks: i64,
    created: Moment,
    coupons: Vec<CouponRow>,
}

/// A coupon code of a link as the partner's page shows it.
struct CouponRow {
    id: i64,
    code: String,
    promotion_code: Option<String>,
    active: bool,
}

/// Coupon codes shown per link (the newest).
const COUPONS_PER_LINK: &str = "100";

/// The coupon codes of `link`, newest first.
async fn link_coupons(s: &AppState, caller: &Caller, link: &Link) -> app::Result<Vec<CouponRow>> {
    let page = PageParams {
        limit: Some(COUPONS_PER_LINK.into()),
        cursor: None,
    };
    let listed = s.app.link_coupons(caller, link.id, None, &page).await?;
    Ok(listed
        .data
        .into_iter()
        .map(|c| CouponRow {
            id: c.id,
            active: c.status.as_str() == "active",
            code: c.code,
            promotion_code: c.stripe_promotion_code,
        })
        .collect())
}

/// The payout methods offered (the empty value is none).
const METHODS: [(&str, &str); 4] = [
    ("", "Not set"),
    ("paypal", "PayPal"),
    ("wise", "Wise"),
    ("manual", "Manual"),
];

impl PartnerPage {
    /// The page as sent: the method options follow the method field, the link options
    /// the coupon's link field (else the first active link is chosen). Only active links
    /// are offered: a coupon code on an archived link would attribute nothing.
    fn finished(mut self) -> PartnerPage {
        self.methods = METHODS
            .iter()
            .map(|(v, l)| (*v, *l, *v == self.edit_method.value))
            .collect();
        let active = || self.links.iter().filter(|l| l.active);
        let chosen = active()
            .find(|l| l.id.to_string() == self.coupon_link.value)
            .or_else(|| active().next())
            .map(|l| l.id);
        self.link_options = active()
            .map(|l| (l.id, l.short_link.clone(), Some(l.id) == chosen))
            .collect();
        self
    }
}

async fn partner_page(s: &AppState, frame: Frame, partner_id: i64) -> app::Result<PartnerPage> {
    let id = frame.program.id;
    let row = s.app.program_partner(&frame.caller, id, partner_id).await?;
    let record = s.app.partner(&frame.caller, partner_id).await?;
    let params = LinkParams {
        program_id: Some(id.to_string()),
        partner_id: Some(partner_id.to_string()),
        status: None,
    };
    let page = PageParams {
        limit: Some("100".into()),
        cursor: None,
    };
    let links = s.app.list_links(&frame.caller, &params, &page).await?;
    let mut link_rows = Vec::with_capacity(links.data.len());
    for l in &links.data {
        link_rows.push(LinkRow {
            id: l.id,
            share: share_text(&frame.program.allowed_origins, &l.short_link),
            short_link: l.short_link.clone(),
            active: l.status.as_str() == "active",
            clicks: l.clicks,
            created: Moment::of(l.created_at),
            coupons: link_coupons(s, &frame.caller, l).await?,
        });
    }
    let method = record.payout_method.map(|m| m.as_str()).unwrap_or("");
    let owns_account = s
        .app
        .may_change_everywhere(&frame.caller, Record::Partner(partner_id))
        .await?;
    Ok(PartnerPage {
        owns_account,
        partner: partner_row(&row, &frame.program.currency),
        payout_method: record
            .payout_method
            .map_or("Not set", |m| m.label())
            .to_string(),
        payout_email: record.payout_email.clone().unwrap_or_default(),
        links: link_rows,
        short_link: Field::new("short_link", "Short link"),
        link_error: None,
        edit_name: Field::new("name", "Name").with(record.name.clone()),
        edit_email: Field::new("email", "Email").with(record.email.clone().unwrap_or_default()),
        edit_method: Field::new("payout_method", "Payout method").with(method),
        methods: Vec::new(),
        edit_payout_email: Field::new("payout_email", "Payout email")
            .with(record.payout_email.unwrap_or_default()),
        edit_error: None,
        invite: None,
        invite_error: None,
        coupon_link: Field::new("link_id", "Link"),
        link_options: Vec::new(),
        coupon_code: Field::new("code", "Coupon code"),
        promotion_code: Field::new("stripe_promotion_code", "Stripe promotion code"),
        coupon_error: None,
        here: partner_href(id, partner_id),
        chrome: frame.chrome,
        head: frame.head,
    }
    .finished())
}

/// `GET /app/programs/{id}/partners/{partner_id}`.
pub(super) async fn detail(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, partner_id): Ids,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, q.text("done").as_deref()).await?;
    let mut page = partner_page(&s, frame, partner_id).await?;
    if let Some(link) = q.text("coupon_link") {
        page.coupon_link = page.coupon_link.with(link);
    }
    Ok(ok(&page.finished()))
}

/// `POST /app/programs/{id}/partners/{partner_id}`: its name, email and payout details.
pub(super) async fn edit(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, partner_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    // Only a partner of this program is edited from its pages.
    s.app.program_partner(&frame.caller, id, partner_id).await?;
    // A partner shared with another workspace's programs gets a form without the
    // fields it keeps to itself: what is not sent is left as it is.
    let sent = |name: &str| form.has(name).then(|| form.text(name));
    let b = PartnerPatchBody {
        name: Some(form.get("name")),
        email: sent("email"),
        payout_method: sent("payout_method"),
        payout_email: sent("payout_email"),
    };
    let problems = b.problems();
    let Err(refused) = s
        .app
        .update_partner(&frame.caller, partner_id, b)
        .await
        .invalid()?
    else {
        return Ok(done(&partner_href(id, partner_id), "partner-saved"));
    };
    let mut page = partner_page(&s, frame, partner_id).await?;
    page.edit_error = show_refused(
        &form,
        problems_or(problems, refused),
        &mut [
            &mut page.edit_name,
            &mut page.edit_email,
            &mut page.edit_method,
            &mut page.edit_payout_email,
        ],
    );
    Ok(render(StatusCode::BAD_REQUEST, &page.finished()))
}

/// `POST /app/programs/{id}/partners/{partner_id}/invite`: a new invite link, shown on
/// the partner's page (it is not kept anywhere it could be shown again).
pub(super) async fn invite(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, partner_id): Ids,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    let caller = frame.caller.clone();
    s.app.program_partner(&caller, id, partner_id).await?;
    let made = s
        .app
        .invite_partner(&caller, partner_id, &s.app.public_url().await?)
        .await;
    let mut page = partner_page(&s, frame, partner_id).await?;
    match made.invalid()? {
        Ok(invite) => page.invite = Some(invite),
        Err(refused) => {
            page.invite_error = Some(refused);
            return Ok(render(StatusCode::BAD_REQUEST, &page));
        }
    }
    Ok(ok(&page))
}

/// `POST /app/programs/{id}/partners/{partner_id}/links`: a new link of the partner.
pub(super) async fn create_link(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, partner_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    s.app.program_partner(&frame.caller, id, partner_id).await?;
    let b = LinkBody {
        program_id: id,
        partner_id: Some(partner_id),
        short_link: form.get("short_link"),
        status: None,
        destination_url: None,
    };
    let Err(refused) = s.app.create_link(&frame.caller, b).await.refused()? else {
        return Ok(done(&partner_href(id, partner_id), "link"));
    };
    let mut page = partner_page(&s, frame, partner_id).await?;
    page.link_error = show_refused(&form, [refused], &mut [&mut page.short_link]);
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

/// `POST /app/programs/{id}/links/{link_id}/status`: archives a link (`inactive`: its
/// clicks are refused) or makes it active again.
pub(super) async fn set_link_status(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, link_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    let link = own_link(&s, &frame.caller, id, link_id).await?;
    let b = LinkPatchBody {
        status: Some(form.get("status")),
        destination_url: None,
    };
    s.app.update_link(&frame.caller, link_id, b).await?;
    Ok(see_other(&back_to(
        &form,
        &link_page(id, &link),
        "link-status",
    )))
}

/// Link `link_id` when it is one of program `id`'s (404 otherwise).
async fn own_link(s: &AppState, caller: &Caller, id: i64, link_id: i64) -> Result<Link, PageError> {
    let link = s.app.link(caller, link_id).await?;
    if link.program_id != id {
        return Err(PageError::not_yours());
    }
    Ok(link)
}

/// The page of the partner of `link`, else the partners list.
fn link_page(id: i64, link: &Link) -> String {
    match link.partner_id {
        Some(p) => partner_href(id, p),
        None => Tab::Partners.href(id),
    }
}

/// `POST /app/programs/{id}/partners/{partner_id}/coupons`: a coupon code (`code`, and
/// optionally `stripe_promotion_code`) on the partner's link `link_id`. A refused or
/// taken code comes back beside its field, with what was typed.
pub(super) async fn create_coupon(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, partner_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    // The form's link is one of this partner's links in this program.
    let link_id = form
        .get("link_id")
        .trim()
        .parse::<i64>()
        .map_err(|_| PageError::not_yours())?;
    let link = own_link(&s, &frame.caller, id, link_id).await?;
    if link.partner_id != Some(partner_id) {
        return Err(PageError::not_yours());
    }
    // The role before what is wrong with the form (the rule and words of the coupon's
    // creation).
    frame.allow_change(&s, Record::Link(link_id)).await?;
    // The form offers active links only; one archived since the page was shown is
    // refused beside the form.
    if link.status.as_str() != "active" {
        let mut page = partner_page(&s, frame, partner_id).await?;
        form.refill(&mut [&mut page.coupon_code, &mut page.promotion_code]);
        page.coupon_error = Some(format!(
            "The link {} is archived: activate it, or choose an active link, to add a coupon code.",
            link.short_link
        ));
        return Ok(render(StatusCode::BAD_REQUEST, &page.finished()));
    }
    let b = CouponBody {
        code: form.get("code"),
        stripe_promotion_code: form.text("stripe_promotion_code"),
    };
    let problems = b.problems();
    let Err(refused) = s
        .app
        .create_coupon(&frame.caller, link_id, b)
        .await
        .refused()?
    else {
        return Ok(see_other(&format!(
            "{}?done=coupon#link-{link_id}",
            partner_href(id, partner_id)
        )));
    };
    let mut page = partner_page(&s, frame, partner_id).await?;
    page.coupon_link = page.coupon_link.with(link_id.to_string());
    page.coupon_error = show_refused(
        &form,
        problems_or(problems, refused),
        &mut [&mut page.promotion_code, &mut page.coupon_code],
    );
    Ok(render(StatusCode::BAD_REQUEST, &page.finished()))
}

/// The coupon `coupon_id` of link `link_id`, read from the link's list (404 when it is
/// not one of its coupons).
async fn link_coupon(
    s: &AppState,
    caller: &Caller,
    link_id: i64,
    coupon_id: i64,
) -> Result<Coupon, PageError> {
    let page = PageParams {
        limit: Some("1".into()),
        cursor: Some((coupon_id + 1).to_string()),
    };
    let found = s.app.link_coupons(caller, link_id, None, &page).await?;
    found
        .data
        .into_iter()
        .find(|c| c.id == coupon_id)
        .ok_or_else(PageError::not_yours)
}

/// `POST /app/programs/{id}/links/{link_id}/coupons/{coupon_id}/archive`: after a
/// confirmation, the coupon attributes no more sales (it stays listed, archived).
pub(super) async fn archive_coupon(
    State(s): State<AppState>,
    user: Signed,
    Ids3(id, link_id, coupon_id): Ids3,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Partners, None).await?;
    let link = own_link(&s, &frame.caller, id, link_id).await?;
    let back = link_page(id, &link);
    if !confirmed(&form) {
        // Only those who may archive it are asked (the rule and words of the archiving).
        frame.allow_change(&s, Record::Link(link_id)).await?;
        let coupon = link_coupon(&s, &frame.caller, link_id, coupon_id).await?;
        let mut page = Confirm::new(
            frame,
            format!("Archive coupon code {}?", coupon.code),
            &format!(
                "Sales that name it are no longer attributed through link {}, and the code \
                 may be given to a new coupon. It stays listed as archived, as do the sales \
                 it attributed.",
                link.short_link
            ),
            format!(
                "{}/links/{link_id}/coupons/{coupon_id}/archive",
                Tab::Overview.href(id)
            ),
        );
        page.button = "Archive coupon code";
        page.cancel = format!("{back}#link-{link_id}");
        return Ok(ok(&page));
    }
    s.app
        .archive_coupon(&frame.caller, link_id, coupon_id)
        .await?;
    Ok(see_other(&format!(
        "{back}?done=coupon-archived#link-{link_id}"
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
