//! A partner's links and their coupon codes: a new link, archived or active again, and a
//! new coupon code, archived after a confirmation.

use axum::extract::State;
use axum::http::StatusCode;

use super::partner::partner_page;
use super::partner_href;
use crate::console::frame::{back_to, confirmed, done, Confirm, Frame, Ids, Ids3, Tab};
use crate::console::session::Signed;
use crate::pages::session::see_other;
use crate::pages::view::{
    ok, problems_or, render, show_refused, PageError, PageResult, Posted, Refusal,
};
use crate::AppState;
use reftrack_service::programs::coupons::CouponBody;
use reftrack_service::programs::{LinkBody, LinkPatchBody};
use reftrack_service::{Caller, PageParams};
use reftrack_store::{Coupon, Link, Record};

/// `POST /app/programs/{id}/partners/{partner_id}/links`: a new link of the partner.
pub(in crate::console) async fn create_link(
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
pub(in crate::console) async fn set_link_status(
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
pub(in crate::console) async fn create_coupon(
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
pub(in crate::console) async fn archive_coupon(
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
