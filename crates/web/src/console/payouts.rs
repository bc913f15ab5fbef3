//! Paying partners: their balances, payouts (create, review the items, download the
//! CSV, PayPal or Wise file, mark paid, cancel after a confirmation).

use askama::Template;
use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;

use super::frame::{confirmed, done, Confirm, Frame, Head, Ids, Tab};
use super::session::Signed;
use crate::downloads::csv_response;
use crate::pages::view::{
    ok, render, show_refused, Chrome, Field, Moment, PageError, PageResult, Posted, ProgramId,
    Query, Refusal,
};
use crate::AppState;
use reftrack_domain::lifecycle::PayoutSkip;
use reftrack_domain::money::display_amount;
use reftrack_service as app;
use reftrack_service::money::exports::{self, PayoutFormat};
use reftrack_service::money::payouts::MarkPaidBody;
use reftrack_service::PageParams;
use reftrack_store::{Payout, Record};

/// The page of payout `payout_id` of program `id`.
fn payout_href(id: i64, payout_id: i64) -> String {
    format!("{}/{payout_id}", Tab::Payouts.href(id))
}

#[derive(Template)]
#[template(path = "console/payouts.html")]
struct PayoutsPage {
    chrome: Chrome,
    head: Head,
    balances: Vec<BalanceView>,
    balances_next: Option<String>,
    payouts: Vec<PayoutRow>,
    payouts_next: Option<String>,
    min_payout: String,
    form_error: Option<String>,
}

struct BalanceView {
    partner_id: i64,
    partner: String,
    pending: String,
    approved: String,
    paid: String,
    /// Why a new payout would leave it out, in words; empty when it would not.
    left_out: Vec<String>,
}

/// Why a new payout leaves a partner out, as the page says it.
fn skip_words(skip: PayoutSkip, min_payout: &str) -> String {
    match skip {
        PayoutSkip::NotApproved => "not approved in this program".into(),
        PayoutSkip::NoPayoutEmail => "no payout email".into(),
        PayoutSkip::BelowMinimum => format!("below the {min_payout} minimum"),
    }
}

struct PayoutRow {
    id: i64,
    status: &'static str,
    total: String,
    created: Moment,
    paid: Option<Moment>,
}

async fn payouts_page(s: &AppState, frame: Frame, q: &Posted) -> app::Result<PayoutsPage> {
    let id = frame.program.id;
    let currency = frame.program.currency.clone();
    let balances = s
        .app
        .balances(
            &frame.caller,
            id,
            &PageParams {
                limit: None,
                cursor: q.text("bcursor"),
            },
        )
        .await?;
    let payouts = s
        .app
        .list_payouts(
            &frame.caller,
            id,
            &PageParams {
                limit: None,
                cursor: q.text("cursor"),
            },
        )
        .await?;
    let ids: Vec<i64> = balances.data.iter().map(|b| b.partner_id).collect();
    let names = s.app.partner_names(&frame.caller, id, &ids).await?;
    let mut skips = s.app.payout_skips(&frame.caller, id, &ids).await?;
    let money = |c: i64| display_amount(c, &currency);
    let min_payout = money(frame.program.min_payout_cents);
    let base = Tab::Payouts.href(id);
    Ok(PayoutsPage {
        balances: balances
            .data
            .iter()
            .map(|b| BalanceView {
                partner_id: b.partner_id,
                partner: names
                    .get(&b.partner_id)
                    .cloned()
                    .unwrap_or_else(|| format!("Partner {}", b.partner_id)),
                pending: money(b.pending_cents),
                approved: money(b.approved_cents),
                paid: money(b.paid_cents),
                left_out: skips
                    .remove(&b.partner_id)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|skip| skip_words(skip, &min_payout))
                    .collect(),
            })
            .collect(),
        balances_next: balances
            .next_cursor
            .map(|c| format!("{base}?bcursor={c}#balances")),
        payouts: payouts
            .data
            .iter()
            .map(|p| PayoutRow {
                id: p.id,
                status: p.status.as_str(),
                total: display_amount(p.total_cents, &p.currency),
                created: Moment::of(p.created_at),
                paid: p.paid_at.map(Moment::of),
            })
            .collect(),
        payouts_next: payouts
            .next_cursor
            .map(|c| format!("{base}?cursor={c}#payouts")),
        min_payout,
        form_error: None,
        chrome: frame.chrome,
        head: frame.head,
    })
}

/// `GET /app/programs/{id}/payouts`: balances, a new payout, the payouts.
pub(super) async fn payouts(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Payouts, q.text("done").as_deref()).await?;
    Ok(ok(&payouts_page(&s, frame, &q).await?))
}

/// `POST /app/programs/{id}/payouts`: a payout of every qualifying partner's due
/// balance; its page opens.
pub(super) async fn create_payout(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Payouts, None).await?;
    // A refusal is "no partner qualifies": the service's text names the API's fields,
    // so the page says it in its own words.
    if let Ok(p) = s.app.create_payout(&frame.caller, id).await.conflict()? {
        return Ok(done(&payout_href(id, p.id), "payout"));
    }
    let mut page = payouts_page(&s, frame, &Posted::parse(b"")).await?;
    page.form_error = Some(format!(
        "No partner qualifies for a payout yet. A payout pays approved partners with a \
         payout email whose due balance reaches the {} minimum: the balances above say \
         who is left out and why.",
        page.min_payout
    ));
    Ok(render(StatusCode::CONFLICT, &page))
}

#[derive(Template)]
#[template(path = "console/payout.html")]
struct PayoutPage {
    chrome: Chrome,
    head: Head,
    id: i64,
    status: &'static str,
    pending: bool,
    total: String,
    created: Moment,
    paid: Option<Moment>,
    cancelled: Option<Moment>,
    reference: String,
    items: Vec<ItemView>,
    reference_field: Field,
    form_error: Option<String>,
}

struct ItemView {
    partner_id: i64,
    partner: String,
    method: String,
    email: String,
    amount: String,
    commissions: i64,
}

/// Payout `payout_id` when it is one of program `id`'s (404 otherwise).
async fn own_payout(s: &AppState, frame: &Frame, payout_id: i64) -> Result<Payout, PageError> {
    let payout = s.app.payout(&frame.caller, payout_id).await?;
    if payout.program_id != frame.program.id {
        return Err(PageError::not_yours());
    }
    Ok(payout)
}

fn payout_page(frame: Frame, p: Payout) -> PayoutPage {
    PayoutPage {
        id: p.id,
        status: p.status.as_str(),
        pending: p.status.as_str() == "pending",
        total: display_amount(p.total_cents, &p.currency),
        created: Moment::of(p.created_at),
        paid: p.paid_at.map(Moment::of),
        cancelled: p.cancelled_at.map(Moment::of),
        reference: p.reference.clone().unwrap_or_default(),
        items: p
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|i| ItemView {
                partner_id: i.partner_id,
                partner: i.partner_name,
                method: i.payout_method.map_or("Not set", |m| m.label()).to_string(),
                email: i.payout_email,
                amount: display_amount(i.amount_cents, &p.currency),
                commissions: i.commission_count,
            })
            .collect(),
        reference_field: Field::new("reference", "Reference"),
        form_error: None,
        chrome: frame.chrome,
        head: frame.head,
    }
}

/// `GET /app/programs/{id}/payouts/{payout_id}`.
pub(super) async fn payout(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, payout_id): Ids,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Payouts, q.text("done").as_deref()).await?;
    let p = own_payout(&s, &frame, payout_id).await?;
    Ok(ok(&payout_page(frame, p)))
}

/// `GET /app/programs/{id}/payouts/{payout_id}/export?format=csv|paypal|wise`.
pub(super) async fn export(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, payout_id): Ids,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Payouts, None).await?;
    let format = PayoutFormat::parse(q.text("format").as_deref())?;
    let p = own_payout(&s, &frame, payout_id).await?;
    let body = Body::from(exports::payout_file(&p, format));
    Ok(csv_response(&format.file_name(payout_id), body))
}

/// `POST /app/programs/{id}/payouts/{payout_id}/paid` with the transfer's `reference`.
pub(super) async fn mark_paid(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, payout_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Payouts, None).await?;
    own_payout(&s, &frame, payout_id).await?;
    let b = MarkPaidBody {
        reference: form.text("reference"),
    };
    let paid = s.app.mark_payout_paid(&frame.caller, payout_id, b).await;
    let Err(refused) = paid.refused()? else {
        return Ok(done(&payout_href(id, payout_id), "paid"));
    };
    let p = own_payout(&s, &frame, payout_id).await?;
    let mut page = payout_page(frame, p);
    page.form_error = show_refused(&form, [refused], &mut [&mut page.reference_field]);
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

/// `POST /app/programs/{id}/payouts/{payout_id}/cancel`, after a confirmation.
pub(super) async fn cancel(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, payout_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Payouts, None).await?;
    let p = own_payout(&s, &frame, payout_id).await?;
    let here = payout_href(id, payout_id);
    if !confirmed(&form) {
        // Only those who may cancel it are asked (the rule and words of the cancel).
        frame.allow_change(&s, Record::Payout(payout_id)).await?;
        let mut page = Confirm::new(
            frame,
            format!("Cancel payout {payout_id}?"),
            &format!(
                "Its commissions ({} in all) are no longer held by it and are due again: a \
                 later payout pays them. Do not cancel a payout whose money you already sent.",
                display_amount(p.total_cents, &p.currency)
            ),
            format!("{here}/cancel"),
        );
        page.button = "Cancel payout";
        page.cancel = here;
        return Ok(ok(&page));
    }
    s.app.cancel_payout(&frame.caller, payout_id).await?;
    Ok(done(&here, "cancelled"))
}
