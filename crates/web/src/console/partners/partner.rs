//! One partner's page in a program: its figures, links with their coupon codes, details
//! and invite link, and the forms that change the partner or make an invite.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;

use super::{partner_href, partner_row, PartnerRow};
use crate::console::frame::{done, Frame, Head, Ids, Tab};
use crate::console::session::Signed;
use crate::pages::view::{
    ok, problems_or, render, share_text, show_refused, Chrome, Field, Moment, PageResult, Posted,
    Query, Refusal,
};
use crate::AppState;
use reftrack_service as app;
use reftrack_service::accounts::Invite;
use reftrack_service::programs::management::LinkParams;
use reftrack_service::programs::PartnerPatchBody;
use reftrack_service::{Caller, PageParams};
use reftrack_store::{Link, Record};

#[derive(Template)]
#[template(path = "console/partner.html")]
pub(super) struct PartnerPage {
    /// The program's groups: the control moves the partner to another.
    groups: Vec<super::GroupOption>,
    pub(super) chrome: Chrome,
    pub(super) head: Head,
    pub(super) partner: PartnerRow,
    pub(super) payout_method: String,
    pub(super) payout_email: String,
    /// When the payout details last changed, and by whom in words.
    pub(super) payout_details_changed: Option<(Moment, &'static str)>,
    links: Vec<LinkRow>,
    pub(super) short_link: Field,
    pub(super) link_error: Option<String>,
    pub(super) edit_name: Field,
    pub(super) edit_email: Field,
    pub(super) edit_method: Field,
    pub(super) methods: Vec<(&'static str, &'static str, bool)>,
    pub(super) edit_payout_email: Field,
    pub(super) edit_error: Option<String>,
    /// Whether the caller may change the partner's sign-in, email and payout details:
    /// not when the partner is also in programs of a workspace it does not manage.
    pub(super) owns_account: bool,
    /// An invite link just made.
    pub(super) invite: Option<Invite>,
    pub(super) invite_error: Option<String>,
    /// The link a new coupon code goes on, its code and Stripe promotion code.
    pub(super) coupon_link: Field,
    pub(super) link_options: Vec<(i64, String, bool)>,
    pub(super) coupon_code: Field,
    pub(super) promotion_code: Field,
    pub(super) coupon_error: Option<String>,
    /// A bonus's amount (in the program's currency, major units) and description.
    pub(super) bonus_amount: Field,
    pub(super) bonus_hint: String,
    pub(super) bonus_description: Field,
    pub(super) bonus_error: Option<String>,
    pub(super) here: String,
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
    pub(super) fn finished(mut self) -> PartnerPage {
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

pub(super) async fn partner_page(
    s: &AppState,
    frame: Frame,
    partner_id: i64,
) -> app::Result<PartnerPage> {
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
    let groups = super::group_options(s, &frame).await?;
    Ok(PartnerPage {
        owns_account,
        partner: partner_row(&row, &frame.program.currency, &groups),
        groups,
        payout_method: record
            .payout_method
            .map_or("Not set", |m| m.label())
            .to_string(),
        payout_email: record.payout_email.clone().unwrap_or_default(),
        payout_details_changed: record.payout_details_changed_at.map(|at| {
            let by = match record.payout_details_changed_by.as_deref() {
                Some("partner") => "by the partner",
                Some("operator") => "by the server's operator",
                _ => "by a dashboard user",
            };
            (Moment::of(at), by)
        }),
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
        bonus_amount: Field::new("amount", "Amount"),
        bonus_hint: format!(
            "In {}, such as 25.00.",
            frame.program.currency.to_ascii_uppercase()
        ),
        bonus_description: Field::new("description", "Description"),
        bonus_error: None,
        here: partner_href(id, partner_id),
        chrome: frame.chrome,
        head: frame.head,
    }
    .finished())
}

/// `GET /app/programs/{id}/partners/{partner_id}`.
pub(in crate::console) async fn detail(
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
pub(in crate::console) async fn edit(
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
pub(in crate::console) async fn invite(
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
