//! A program's outbound webhooks, under its settings: the endpoints (added with their
//! signing secret shown once, their URL and event types changed, disabled or enabled
//! again, deleted after a confirmation) and each endpoint's deliveries with their
//! attempts, sent again by hand.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;

use super::frame::{back_query, back_to, confirmed, done, Confirm, Frame, Head, Ids, Ids3, Tab};
use super::session::Signed;
use crate::pages::session::see_other;
use crate::pages::view::{
    ok, place_errors, render, Choice, Chrome, Field, Moment, PageError, PageResult, Posted,
    ProgramId, Query, Refusal,
};
use crate::AppState;
use reftrack_domain::webhooks::EventType;
use reftrack_service as app;
use reftrack_service::webhooks::{WebhookBody, WebhookPatchBody};
use reftrack_service::PageParams;
use reftrack_store::webhooks::{Delivery, WebhookEndpoint};
use reftrack_store::Record;

/// Deliveries on one page of an endpoint's log (each row lists its attempts).
const DELIVERIES_PER_PAGE: &str = "20";

/// The page of program `id`'s endpoints.
fn list_href(id: i64) -> String {
    format!("{}/webhooks", Tab::Settings.href(id))
}

/// The page of endpoint `webhook_id` of program `id`.
fn endpoint_href(id: i64, webhook_id: i64) -> String {
    format!("{}/{webhook_id}", list_href(id))
}

/// The delivery log of endpoint `webhook_id` of program `id`.
fn deliveries_href(id: i64, webhook_id: i64) -> String {
    format!("{}/deliveries", endpoint_href(id, webhook_id))
}

/// What each event type reports, in a few words beside its checkbox.
fn event_hint(t: EventType) -> &'static str {
    match t {
        EventType::LeadCreated => "a lead is recorded",
        EventType::SaleCreated => "a sale is recorded",
        EventType::SaleRefunded => "a sale is refunded, fully or in part",
        EventType::CommissionCreated => "a commission is created, or a clawback after a refund",
        EventType::CommissionApproved => "a commission is approved, early or after its hold",
        EventType::CommissionReversed => "a full refund reverses a commission",
        EventType::PartnerApplied => "someone applies to the program",
        EventType::PartnerApproved => "a partner is approved, or added as approved",
        EventType::PayoutCreated => "a payout is created",
        EventType::PayoutPaid => "a payout is marked paid",
    }
}

/// The event types' checkboxes, those named in `checked` ticked.
fn choices(checked: &[String]) -> Vec<Choice> {
    EventType::ALL
        .into_iter()
        .map(|t| Choice {
            value: t.as_str(),
            label: t.as_str(),
            hint: event_hint(t),
            checked: checked.iter().any(|c| c == t.as_str()),
        })
        .collect()
}

/// An endpoint as the pages show it.
struct EndpointView {
    id: i64,
    url: String,
    events: Vec<&'static str>,
    enabled: bool,
    /// Why Reftrack disabled it.
    disabled_reason: Option<String>,
    /// Since when every attempt has failed.
    failing_since: Option<Moment>,
    created: Moment,
}

fn endpoint_view(e: &WebhookEndpoint) -> EndpointView {
    EndpointView {
        id: e.id,
        url: e.url.clone(),
        events: e.events.iter().map(|t| t.as_str()).collect(),
        enabled: e.enabled,
        disabled_reason: e.disabled_reason.clone(),
        failing_since: e.failing_since.map(Moment::of),
        created: Moment::of(e.created_at),
    }
}

/// The form of an endpoint: its URL, a checkbox per event type, and what was refused.
struct EndpointForm {
    url: Field,
    events: Field,
    choices: Vec<Choice>,
    error: Option<String>,
}

impl EndpointForm {
    /// The form showing `url` and `events`.
    fn new(url: &str, events: &[String]) -> EndpointForm {
        EndpointForm {
            url: Field::new("url", "Endpoint URL").with(url),
            events: Field::new("events", "Events"),
            choices: choices(events),
            error: None,
        }
    }

    /// The form as `form` was sent, with each of the service's `refused` texts beside
    /// its field (the service names an unknown type `events: …`).
    fn refused(form: &Posted, refused: &[String]) -> EndpointForm {
        let mut f = EndpointForm::new(&form.get("url"), &form.all("events"));
        let refused = refused
            .iter()
            .map(|text| text.replacen("events: unknown", "events include an unknown", 1));
        f.error = place_errors(refused, &mut [&mut f.url, &mut f.events]);
        f
    }
}

#[derive(Template)]
#[template(path = "console/webhooks.html")]
struct WebhooksPage {
    chrome: Chrome,
    head: Head,
    endpoints: Vec<EndpointView>,
    next_href: Option<String>,
    first_href: Option<String>,
    /// The signing secret of the endpoint just added: this page is the only one that
    /// shows it.
    secret: Option<String>,
    form: EndpointForm,
}

async fn webhooks_page(s: &AppState, frame: Frame, q: &Posted) -> app::Result<WebhooksPage> {
    let id = frame.program.id;
    let listed = s.app.list_webhooks(&frame.caller, id, &q.page()).await?;
    let base = list_href(id);
    Ok(WebhooksPage {
        endpoints: listed.data.iter().map(endpoint_view).collect(),
        next_href: listed
            .next_cursor
            .map(|c| format!("{base}?cursor={c}#endpoints")),
        first_href: q.text("cursor").map(|_| format!("{base}#endpoints")),
        secret: None,
        form: EndpointForm::new("", &[]),
        chrome: frame.chrome,
        head: frame.head,
    })
}

/// `GET /app/programs/{id}/settings/webhooks?cursor=…`: the endpoints, and a new one.
pub(super) async fn list(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, q.text("done").as_deref()).await?;
    Ok(ok(&webhooks_page(&s, frame, &q).await?))
}

/// `POST /app/programs/{id}/settings/webhooks`: a new endpoint; the page that answers
/// shows its signing secret, which no later page shows. A refused URL or event list
/// comes back beside its field with what was typed, and nothing is stored.
pub(super) async fn add(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    let b = WebhookBody {
        url: form.get("url"),
        events: form.all("events"),
    };
    let refused = match s.app.create_webhook(&frame.caller, id, b).await.invalid()? {
        Ok(created) => {
            let mut page = webhooks_page(&s, frame, &Posted::parse(b"")).await?;
            page.chrome.notice = Some(
                "The endpoint is added. Copy its signing secret below: it will not be shown again."
                    .into(),
            );
            page.secret = Some(created.secret);
            return Ok(ok(&page));
        }
        Err(refused) => refused,
    };
    let refused = all_problems(&s, &form, refused).await;
    let mut page = webhooks_page(&s, frame, &Posted::parse(b"")).await?;
    page.form = EndpointForm::refused(&form, &refused);
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

/// Every field's error of an endpoint form the use case refused with `refused`, which
/// names only the first: a refusal means the caller may change endpoints, so the form
/// is checked whole.
async fn all_problems(s: &AppState, form: &Posted, refused: String) -> Vec<String> {
    let all = s
        .app
        .webhook_problems(&form.get("url"), &form.all("events"))
        .await;
    if all.is_empty() {
        vec![refused]
    } else {
        all
    }
}

/// Endpoint `webhook_id` when it is one of the frame's program's (404 otherwise).
async fn own_endpoint(
    s: &AppState,
    frame: &Frame,
    webhook_id: i64,
) -> Result<WebhookEndpoint, PageError> {
    let endpoint = s.app.webhook(&frame.caller, webhook_id).await?;
    if endpoint.program_id != frame.program.id {
        return Err(PageError::not_yours());
    }
    Ok(endpoint)
}

#[derive(Template)]
#[template(path = "console/webhook.html")]
struct EndpointPage {
    chrome: Chrome,
    head: Head,
    endpoint: EndpointView,
    form: EndpointForm,
}

fn endpoint_page(frame: Frame, e: &WebhookEndpoint) -> EndpointPage {
    let subscribed: Vec<String> = e.events.iter().map(|t| t.as_str().to_string()).collect();
    EndpointPage {
        endpoint: endpoint_view(e),
        form: EndpointForm::new(&e.url, &subscribed),
        chrome: frame.chrome,
        head: frame.head,
    }
}

/// `GET /app/programs/{id}/settings/webhooks/{webhook_id}`: one endpoint, and (for
/// owners and admins) its form, its switch and its deletion.
pub(super) async fn detail(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, webhook_id): Ids,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, q.text("done").as_deref()).await?;
    let e = own_endpoint(&s, &frame, webhook_id).await?;
    Ok(ok(&endpoint_page(frame, &e)))
}

/// `POST /app/programs/{id}/settings/webhooks/{webhook_id}`: its URL and event types.
pub(super) async fn edit(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, webhook_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    let e = own_endpoint(&s, &frame, webhook_id).await?;
    let b = WebhookPatchBody {
        url: Some(form.get("url")),
        events: Some(form.all("events")),
        enabled: None,
    };
    let Err(refused) = s
        .app
        .update_webhook(&frame.caller, webhook_id, b)
        .await
        .invalid()?
    else {
        return Ok(done(&endpoint_href(id, webhook_id), "webhook-saved"));
    };
    let refused = all_problems(&s, &form, refused).await;
    let mut page = endpoint_page(frame, &e);
    page.form = EndpointForm::refused(&form, &refused);
    Ok(render(StatusCode::BAD_REQUEST, &page))
}

/// `POST /app/programs/{id}/settings/webhooks/{webhook_id}/enabled` with
/// `enabled=true|false`: stops sending to it, or sends again (pending messages first).
pub(super) async fn set_enabled(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, webhook_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    own_endpoint(&s, &frame, webhook_id).await?;
    frame.allow_change(&s, Record::Webhook(webhook_id)).await?;
    let enabled = match form.get("enabled").as_str() {
        "true" => true,
        "false" => false,
        _ => {
            return Err(PageError::new(
                StatusCode::BAD_REQUEST,
                "enabled must be true or false",
            ))
        }
    };
    let b = WebhookPatchBody {
        url: None,
        events: None,
        enabled: Some(enabled),
    };
    s.app.update_webhook(&frame.caller, webhook_id, b).await?;
    let change = if enabled {
        "webhook-enabled"
    } else {
        "webhook-disabled"
    };
    Ok(done(&endpoint_href(id, webhook_id), change))
}

/// `POST /app/programs/{id}/settings/webhooks/{webhook_id}/test`: a test message is
/// written to the endpoint, due now; its deliveries page shows it.
pub(super) async fn send_test(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, webhook_id): Ids,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    own_endpoint(&s, &frame, webhook_id).await?;
    s.app.send_test_webhook(&frame.caller, webhook_id).await?;
    Ok(done(&deliveries_href(id, webhook_id), "webhook-test"))
}

/// `POST /app/programs/{id}/settings/webhooks/{webhook_id}/delete`: after a
/// confirmation, the endpoint and its delivery log are deleted.
pub(super) async fn delete(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, webhook_id): Ids,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    let e = own_endpoint(&s, &frame, webhook_id).await?;
    if !confirmed(&form) {
        // Only those who may delete it are asked (the rule and words of the deletion).
        frame.allow_change(&s, Record::Webhook(webhook_id)).await?;
        let here = endpoint_href(id, webhook_id);
        let mut page = Confirm::new(
            frame,
            "Delete this endpoint?".into(),
            &format!(
                "Nothing more is sent to {}, and its delivery log is deleted with it, \
                 pending messages included. To stop sending for a while, disable it instead.",
                e.url
            ),
            format!("{here}/delete"),
        );
        page.button = "Delete endpoint";
        page.cancel = here;
        return Ok(ok(&page));
    }
    s.app.delete_webhook(&frame.caller, webhook_id).await?;
    Ok(done(&list_href(id), "webhook-deleted"))
}

/// One attempt of a delivery as its page shows it.
struct AttemptView {
    at: Moment,
    status_code: Option<i64>,
    error: Option<String>,
}

/// One delivery as its page shows it.
struct DeliveryView {
    id: i64,
    message_id: String,
    kind: String,
    status: &'static str,
    attempts: Vec<AttemptView>,
    next_attempt: Option<Moment>,
}

fn delivery_view(d: Delivery) -> DeliveryView {
    DeliveryView {
        id: d.id,
        message_id: d.message_id,
        kind: d.event_type,
        status: d.status.as_str(),
        attempts: d
            .attempts
            .into_iter()
            .map(|a| {
                // A refused answer's error only repeats its status ("HTTP 500").
                let says_status = a.status_code.map(|c| format!("HTTP {c}")) == a.error;
                AttemptView {
                    at: Moment::of(a.at),
                    status_code: a.status_code,
                    error: a.error.filter(|_| !says_status),
                }
            })
            .collect(),
        next_attempt: d.next_attempt_at.map(Moment::of),
    }
}

#[derive(Template)]
#[template(path = "console/webhook_deliveries.html")]
struct DeliveriesPage {
    chrome: Chrome,
    head: Head,
    endpoint: EndpointView,
    rows: Vec<DeliveryView>,
    next_href: Option<String>,
    first_href: Option<String>,
    /// This page, for the forms' way back.
    here: String,
    form_error: Option<String>,
}

async fn deliveries_page(
    s: &AppState,
    frame: Frame,
    e: &WebhookEndpoint,
    q: &Posted,
) -> app::Result<DeliveriesPage> {
    let page = PageParams {
        limit: Some(DELIVERIES_PER_PAGE.into()),
        cursor: q.text("cursor"),
    };
    let listed = s.app.webhook_deliveries(&frame.caller, e.id, &page).await?;
    let base = deliveries_href(frame.program.id, e.id);
    Ok(DeliveriesPage {
        endpoint: endpoint_view(e),
        rows: listed.data.into_iter().map(delivery_view).collect(),
        next_href: listed.next_cursor.map(|c| format!("{base}?cursor={c}")),
        first_href: q.text("cursor").map(|_| base.clone()),
        here: match q.text("cursor") {
            Some(c) => format!("{base}?cursor={c}"),
            None => base,
        },
        form_error: None,
        chrome: frame.chrome,
        head: frame.head,
    })
}

/// `GET /app/programs/{id}/settings/webhooks/{webhook_id}/deliveries?cursor=…`: the
/// endpoint's deliveries, newest first, with their attempts.
pub(super) async fn deliveries(
    State(s): State<AppState>,
    user: Signed,
    Ids(id, webhook_id): Ids,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, q.text("done").as_deref()).await?;
    let e = own_endpoint(&s, &frame, webhook_id).await?;
    Ok(ok(&deliveries_page(&s, frame, &e, &q).await?))
}

/// `POST /app/programs/{id}/settings/webhooks/{webhook_id}/deliveries/{delivery_id}/retry`:
/// the delivery is due now and the worker sends it again at once, with its message id.
/// Refused while an attempt is under way or the endpoint is disabled: the page says why.
pub(super) async fn retry(
    State(s): State<AppState>,
    user: Signed,
    Ids3(id, webhook_id, delivery_id): Ids3,
    form: Posted,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Settings, None).await?;
    let e = own_endpoint(&s, &frame, webhook_id).await?;
    let fallback = deliveries_href(id, webhook_id);
    let resent = s
        .app
        .resend_delivery(&frame.caller, webhook_id, delivery_id);
    let Err(refused) = resent.await.conflict()? else {
        return Ok(see_other(&back_to(&form, &fallback, "retry")));
    };
    // The API's words name its own call.
    let refused = refused.replace(" (PATCH enabled=true)", "");
    // The page the form was on, with the reason at its top.
    let q = back_query(&form, &fallback);
    let mut page = deliveries_page(&s, frame, &e, &q).await?;
    page.form_error = Some(refused);
    Ok(render(StatusCode::CONFLICT, &page))
}
