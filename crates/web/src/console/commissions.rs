//! The commissions of a program: the list (filtered, with the partners' names), its
//! CSV, approving one ahead of its hold and rejecting one with a reason.

use std::collections::HashMap;

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;

use super::frame::{back_query, back_to, Frame, Head, Ids, Tab};
use super::session::Signed;
use crate::downloads::csv_stream;
use crate::pages::session::see_other;
use crate::pages::view::{
    commission_what, place_error, render, show_refused, Chrome, Field, Moment, PageError,
    PageResult, Posted, ProgramId, Query, Refusal, COMMISSION_STATUSES,
};
use crate::AppState;
use reftrack_domain::money::display_amount;
use reftrack_domain::status::CommissionKind;
use reftrack_service as app;
use reftrack_service::money::exports::{self};
use reftrack_service::money::payouts::{CommissionParams, RejectBody};
use reftrack_service::{Caller, PageParams};
use reftrack_store::CommissionRow;

/// The names of the partners `ids` of a program, for tables that list partner ids.
async fn names(
    s: &AppState,
    caller: &Caller,
    program_id: i64,
    ids: impl Iterator<Item = i64>,
) -> app::Result<HashMap<i64, String>> {
    let ids: Vec<i64> = ids.collect();
    s.app.partner_names(caller, program_id, &ids).await
}

/// The commission filter a page's query names.
fn commission_params(q: &Posted) -> CommissionParams {
    CommissionParams {
        status: q.text("status"),
        partner_id: q.text("partner_id"),
        from: q.text("from"),
        to: q.text("to"),
        flagged: None,
    }
}

#[derive(Template)]
#[template(path = "console/commissions.html")]
struct CommissionsPage {
    chrome: Chrome,
    head: Head,
    statuses: Vec<(&'static str, &'static str, bool)>,
    status: Field,
    partner: Field,
    /// The name of the partner filtered on.
    partner_name: Option<String>,
    from: Field,
    to: Field,
    filter_error: Option<String>,
    rows: Vec<CommissionView>,
    csv_href: String,
    next_href: Option<String>,
    first_href: Option<String>,
    here: String,
    hold_days: i64,
}

struct CommissionView {
    id: i64,
    created: Moment,
    partner_id: i64,
    partner: String,
    /// What it is for, in words.
    what: String,
    /// Its sale's transaction id, when it has a sale.
    transaction_id: Option<String>,
    amount: String,
    status: &'static str,
    clawback: bool,
    reject_reason: Option<String>,
    payout_id: Option<i64>,
    can_approve: bool,
    can_reject: bool,
    /// The reason typed, and why it was refused, after a failed rejection of this row.
    reason: Field,
}

fn commission_view(c: CommissionRow, names: &HashMap<i64, String>) -> CommissionView {
    let status = c.status.as_str();
    let held = c.payout_id.is_some() && status == "approved";
    CommissionView {
        id: c.id,
        created: Moment::of(c.created_at),
        partner_id: c.partner_id,
        partner: names
            .get(&c.partner_id)
            .cloned()
            .unwrap_or_else(|| format!("Partner {}", c.partner_id)),
        amount: match c.taken_back_cents {
            // Its sale waits for an exchange rate: no amount yet.
            _ if c.awaiting_rate => "no rate yet".to_string(),
            0 => display_amount(c.amount_cents, &c.currency),
            // A rejected or refunded commission: what is left, and what it was.
            back => format!(
                "{} (of {})",
                display_amount(c.amount_cents, &c.currency),
                display_amount(c.amount_cents + back, &c.currency)
            ),
        },
        can_approve: status == "pending" && !c.awaiting_rate,
        can_reject: (status == "pending" || status == "approved")
            && !held
            && c.kind != CommissionKind::Clawback,
        clawback: c.kind.as_str() == "clawback",
        what: commission_what(&c),
        reject_reason: c.reject_reason,
        payout_id: c.payout_id,
        transaction_id: c.transaction_id,
        status,
        reason: Field::new("reason", "Reason"),
    }
}

async fn commissions_page(s: &AppState, frame: Frame, q: &Posted) -> app::Result<CommissionsPage> {
    let id = frame.program.id;
    let mut status = Field::new("status", "Status").with(q.text("status").unwrap_or_default());
    let mut partner =
        Field::new("partner_id", "Partner").with(q.text("partner_id").unwrap_or_default());
    let mut from = Field::new("from", "From").with(q.text("from").unwrap_or_default());
    let mut to = Field::new("to", "To").with(q.text("to").unwrap_or_default());
    let params = commission_params(q);
    let (listed, filter_error) = match s
        .app
        .list_commissions(&frame.caller, id, &params, &q.page())
        .await
    {
        Ok(l) => (Some(l), None),
        Err(app::Error::Invalid(text)) => {
            let text = text.replace(
                "partner_id must be a positive integer",
                "partner_id is not a partner of this program",
            );
            (
                None,
                place_error(&text, &mut [&mut status, &mut partner, &mut from, &mut to]),
            )
        }
        Err(e) => return Err(e),
    };
    let (rows, next) = listed.map_or((Vec::new(), None), |l| (l.data, l.next_cursor));
    let mut ids: Vec<i64> = rows.iter().map(|c| c.partner_id).collect();
    let wanted = partner.value.parse::<i64>().ok();
    ids.extend(wanted);
    let names = names(s, &frame.caller, id, ids.into_iter()).await?;
    let filters: Vec<(&str, &str)> = [
        ("status", status.value.as_str()),
        ("partner_id", partner.value.as_str()),
        ("from", from.value.as_str()),
        ("to", to.value.as_str()),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .collect();
    let query = filters
        .iter()
        .map(|(k, v)| {
            let v: String = url::form_urlencoded::byte_serialize(v.as_bytes()).collect();
            format!("{k}={v}")
        })
        .collect::<Vec<_>>()
        .join("&");
    let base = Tab::Commissions.href(id);
    let with = |extra: &str| {
        let parts: Vec<&str> = [query.as_str(), extra]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect();
        if parts.is_empty() {
            base.clone()
        } else {
            format!("{base}?{}", parts.join("&"))
        }
    };
    let cursor = q.text("cursor").map(|c| format!("cursor={c}"));
    Ok(CommissionsPage {
        statuses: COMMISSION_STATUSES
            .iter()
            .map(|(v, l)| (*v, *l, *v == status.value))
            .collect(),
        partner_name: wanted.and_then(|w| names.get(&w).cloned()),
        rows: rows
            .into_iter()
            .map(|c| commission_view(c, &names))
            .collect(),
        csv_href: if query.is_empty() {
            format!("/app/programs/{id}/commissions.csv")
        } else {
            format!("/app/programs/{id}/commissions.csv?{query}")
        },
        next_href: if filter_error.is_none() {
            next.map(|c| with(&format!("cursor={c}")))
        } else {
            None
        },
        first_href: cursor.as_ref().map(|_| with("")),
        here: with(cursor.as_deref().unwrap_or("")),
        hold_days: frame.program.commission_hold_days,
        status,
        partner,
        from,
        to,
        filter_error,
        chrome: frame.chrome,
        head: frame.head,
    })
}

/// `GET /app/programs/{id}/commissions?status=…&partner_id=…&from=…&to=…&cursor=…`.
pub(super) async fn commissions(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Commissions, q.text("done").as_deref()).await?;
    let page = commissions_page(&s, frame, &q).await?;
    let status = if page.filter_error.is_some()
        || [&page.status, &page.partner, &page.from, &page.to]
            .iter()
            .any(|f| f.error.is_some())
    {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    Ok(render(status, &page))
}

/// `GET /app/programs/{id}/commissions.csv?…`: every commission of the filter.
pub(super) async fn commissions_csv(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Commissions, None).await?;
    let chunks = s
        .app
        .export_commissions(&frame.caller, id, &commission_params(&q))
        .await?;
    Ok(csv_stream(
        &format!("program-{id}-commissions.csv"),
        chunks,
        exports::commissions_csv,
    ))
}

/// The frame of program `id`'s commissions, for a change to its commission
/// `commission_id` (404 when that commission is not one of the program's).
async fn commission_frame(
    s: &AppState,
    user: &Signed,
    id: i64,
    commission_id: i64,
) -> Result<Frame, PageError> {
    let frame = Frame::load(s, user, id, Tab::Commissions, None).await?;
    let params = CommissionParams::default();
    // Reads the program's commission list at this id: a commission of another program
    // is not found there, whatever its workspace.
    let page = PageParams {
        limit: Some("1".into()),
        cursor: Some((commission_id + 1).to_string()),
    };
    let found = s
        .app
        .list_commissions(&frame.caller, frame.program.id, &params, &page)
        .await?;
    if found.data.first().map(|c| c.id) == Some(commission_id) {
        Ok(frame)
    } else {
        Err(PageError::not_yours())
    }
}

/// `POST /app/programs/{id}/commissions/{commission_id}/approve`.
pub(super) async fn approve(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, commission_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = commission_frame(&s, &user, id, commission_id).await?;
    s.app
        .approve_commission(&frame.caller, commission_id)
        .await?;
    Ok(see_other(&back_to(
        &form,
        &Tab::Commissions.href(id),
        "approved",
    )))
}

/// `POST /app/programs/{id}/commissions/{commission_id}/reject` with its `reason`; a
/// refused reason comes back beside the row's field.
pub(super) async fn reject(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, commission_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = commission_frame(&s, &user, id, commission_id).await?;
    let b = RejectBody {
        reason: form.get("reason"),
    };
    let rejected = s
        .app
        .reject_commission(&frame.caller, commission_id, b)
        .await;
    let Err(refused) = rejected.invalid()? else {
        let done = back_to(&form, &Tab::Commissions.href(id), "rejected");
        return Ok(see_other(&done));
    };
    // The list the form was on, with the reason and its error beside the row's field.
    let q = back_query(&form, &Tab::Commissions.href(id));
    let mut page = commissions_page(&s, frame, &q).await?;
    if let Some(row) = page.rows.iter_mut().find(|r| r.id == commission_id) {
        if let Some(text) = show_refused(&form, [refused], &mut [&mut row.reason]) {
            row.reason.error = Some(text);
        }
    }
    Ok(render(StatusCode::BAD_REQUEST, &page))
}
