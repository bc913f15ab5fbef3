//! The review queue of a program: each commission a fraud rule holds for an owner, with
//! the rules that held in words, the customer's click (IP, country, device, referrer)
//! and its sale; Approve, and Reject with a reason, through the same use cases as the
//! commissions page and the API. The program's fraud rules are set on the settings page
//! (`save_rules` here).

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;

use super::frame::{done, Frame, Head, Ids, Tab};
use super::session::Signed;
use crate::pages::session::see_other;
use crate::pages::view::{
    render, show_refused, Chrome, Field, Moment, PageResult, Posted, ProgramId, Query, Refusal,
};
use crate::AppState;
use reftrack_domain::fraud::{Action, FraudRules, Rule};
use reftrack_domain::money::display_amount;
use reftrack_service as app;
use reftrack_service::money::payouts::RejectBody;
use reftrack_service::programs::ProgramPatchBody;
use reftrack_store::{Record, ReviewItem};

#[derive(Template)]
#[template(path = "console/review.html")]
struct ReviewPage {
    chrome: Chrome,
    head: Head,
    items: Vec<ItemView>,
    /// The rules that are on, in words, for the page's lead.
    rules_on: Vec<String>,
}

struct ItemView {
    id: i64,
    created: Moment,
    partner_id: i64,
    partner: String,
    amount: String,
    reasons: Vec<&'static str>,
    /// What it is for, in words.
    what: String,
    /// Its sale's transaction id and amount; none for a lead's commission.
    sale: Option<(String, String)>,
    customer_email: Option<String>,
    click: Option<ClickView>,
    reason: Field,
}

struct ClickView {
    at: Moment,
    ip: String,
    country: String,
    device: String,
    referrer: String,
}

/// What a missing value of a click reads as.
const UNKNOWN: &str = "—";

fn item_view(i: ReviewItem) -> ItemView {
    ItemView {
        id: i.commission_id,
        created: Moment::of(i.created_at),
        partner_id: i.partner_id,
        partner: i.partner_name,
        amount: display_amount(i.amount_cents, &i.currency),
        reasons: i.flags.iter().map(|f| Rule::of_flag(*f).reason()).collect(),
        what: i.description.unwrap_or_else(|| "Sale".into()),
        sale: match (i.transaction_id, i.sale_amount_cents, i.sale_currency) {
            (Some(t), Some(cents), Some(currency)) => Some((t, display_amount(cents, &currency))),
            _ => None,
        },
        customer_email: i.customer_email,
        click: i.click.map(|c| {
            let device: Vec<String> = [c.device_type, c.device_os, c.browser]
                .into_iter()
                .flatten()
                .collect();
            ClickView {
                at: Moment::of(c.at),
                ip: c.ip.unwrap_or_else(|| UNKNOWN.into()),
                country: c.country.unwrap_or_else(|| UNKNOWN.into()),
                device: if device.is_empty() {
                    UNKNOWN.into()
                } else {
                    device.join(" · ")
                },
                referrer: c.referrer.unwrap_or_else(|| UNKNOWN.into()),
            }
        }),
        reason: Field::new("reason", "Reason"),
    }
}

async fn review_page(s: &AppState, frame: Frame) -> app::Result<ReviewPage> {
    let items = s.app.review_queue(&frame.caller, frame.program.id).await?;
    Ok(ReviewPage {
        items: items.into_iter().map(item_view).collect(),
        rules_on: frame
            .program
            .fraud_rules
            .iter()
            .filter(|(_, a)| *a != Action::Off)
            .map(|(r, a)| format!("{} ({a})", r.label()))
            .collect(),
        chrome: frame.chrome,
        head: frame.head,
    })
}

/// `GET /app/programs/{id}/review`.
pub(super) async fn review(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Review, q.text("done").as_deref()).await?;
    Ok(render(StatusCode::OK, &review_page(&s, frame).await?))
}

/// The frame of the review page for a change to commission `commission_id`: 404 unless
/// it is one of the program's commissions held for review.
async fn held(s: &AppState, user: &Signed, id: i64, commission_id: i64) -> app::Result<Frame> {
    let frame = Frame::load(s, user, id, Tab::Review, None).await?;
    let queue = s.app.review_queue(&frame.caller, id).await?;
    if queue.iter().any(|i| i.commission_id == commission_id) {
        Ok(frame)
    } else {
        Err(app::Error::NotFound(
            "This commission is not waiting for review".into(),
        ))
    }
}

/// `POST /app/programs/{id}/review/{commission_id}/approve`.
pub(super) async fn approve(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, commission_id): Ids,
) -> PageResult {
    let frame = held(&s, &user, id, commission_id).await?;
    s.app
        .approve_commission(&frame.caller, commission_id)
        .await?;
    Ok(done(&Tab::Review.href(id), "approved"))
}

/// `POST /app/programs/{id}/review/{commission_id}/reject` with its `reason`; a refused
/// reason comes back beside the commission's field.
pub(super) async fn reject(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, commission_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = held(&s, &user, id, commission_id).await?;
    let b = RejectBody {
        reason: form.get("reason"),
    };
    let rejected = s
        .app
        .reject_commission(&frame.caller, commission_id, b)
        .await;
    let Err(refused) = rejected.invalid()? else {
        return Ok(done(&Tab::Review.href(id), "rejected"));
    };
    let mut page = review_page(&s, frame).await?;
    if let Some(item) = page.items.iter_mut().find(|i| i.id == commission_id) {
        if let Some(text) = show_refused(&form, [refused], &mut [&mut item.reason]) {
            item.reason.error = Some(text);
        }
    }
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

/// One rule of the settings page's fraud-rules form.
pub(super) struct RuleChoice {
    pub name: &'static str,
    pub label: &'static str,
    pub reason: &'static str,
    pub action: &'static str,
}

/// The fraud-rules form's rows for `rules`.
pub(super) fn rule_choices(rules: &FraudRules) -> Vec<RuleChoice> {
    rules
        .iter()
        .map(|(r, a)| RuleChoice {
            name: r.as_str(),
            label: r.label(),
            reason: r.reason(),
            action: a.as_str(),
        })
        .collect()
}

/// The actions a rule's select offers, with their words.
pub(super) const ACTIONS: [(&str, &str); 3] = [
    ("off", "Off"),
    ("flag", "Flag for review"),
    ("reject", "Reject"),
];

/// `POST /app/programs/{id}/settings/fraud-rules`: one action per rule, as the API's
/// `PATCH` with `fraud_rules` changes them.
pub(super) async fn save_rules(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    frame.allow_change(&s, Record::Program(id)).await?;
    let rules: serde_json::Map<String, serde_json::Value> = Rule::ALL
        .into_iter()
        .filter_map(|r| {
            form.text(r.as_str())
                .map(|a| (r.as_str().to_string(), serde_json::Value::String(a)))
        })
        .collect();
    let b = ProgramPatchBody {
        fraud_rules: Some(serde_json::Value::Object(rules)),
        ..ProgramPatchBody::default()
    };
    s.app.update_program(&frame.caller, id, b).await?;
    Ok(see_other(&format!(
        "{}?done=fraud-rules#fraud-rules",
        Tab::Settings.href(id)
    )))
}
