//! A program's events: the events endpoint's listing as a table, filtered by kind and
//! dates, a page at a time; test events in test mode.

use askama::Template;
use axum::extract::State;

use super::frame::{Frame, Head, Tab};
use super::session::Signed;
use crate::pages::view::{ok, Chrome, Field, Moment, NavItem, PageResult, ProgramId, Query};
use crate::AppState;
use reftrack_domain::metrics::IsoValue;
use reftrack_domain::money::display_amount;
use reftrack_store::{EventFilter, EventKind, EventPartner, ListedEvent};

/// Events on one page.
const PAGE_SIZE: i64 = 25;

#[derive(Template)]
#[template(path = "console/events.html")]
struct EventsPage {
    chrome: Chrome,
    head: Head,
    modes: Vec<NavItem>,
    test: bool,
    /// (value, label, chosen) of the kind filter.
    kinds: Vec<(&'static str, &'static str, bool)>,
    from: Field,
    to: Field,
    rows: Vec<EventRow>,
    total: i64,
    page: i64,
    page_count: i64,
    newer_href: Option<String>,
    older_href: Option<String>,
    /// Any filter is set.
    filtered: bool,
}

struct EventRow {
    kind: &'static str,
    at: Moment,
    click_id: String,
    /// The partner credited, as (its page, its name).
    partner: Option<(String, String)>,
    /// What the event says, as (label, value) pairs.
    details: Vec<(&'static str, String)>,
}

/// One date of the filter: its bound, or the field's error.
fn date(field: &mut Field, upper: bool) -> Option<i64> {
    if field.value.is_empty() {
        return None;
    }
    match IsoValue::parse(&field.value) {
        Some(v) => Some(if upper { v.upper_ms() } else { v.lower_ms() }),
        None => {
            field.error = Some("Enter a date like 2026-03-01".into());
            None
        }
    }
}

fn row(e: &ListedEvent, program_id: i64, currency: &str) -> EventRow {
    // What every kind shows, and the details it has (those it lacks are left out).
    let row = |kind,
               timestamp,
               click_id: &Option<String>,
               partner: &Option<EventPartner>,
               details: Vec<Option<(&'static str, String)>>| EventRow {
        kind,
        at: Moment::of(timestamp),
        click_id: click_id.clone().unwrap_or_default(),
        partner: partner.as_ref().map(|p| {
            (
                format!("/app/programs/{program_id}/partners/{}", p.id),
                p.name.clone(),
            )
        }),
        details: details.into_iter().flatten().collect(),
    };
    let some = |label: &'static str, v: &Option<String>| {
        v.clone().filter(|v| !v.is_empty()).map(|v| (label, v))
    };
    match e {
        ListedEvent::Click(c) => {
            let place = [&c.geo_city, &c.geo_region, &c.geo_country]
                .iter()
                .filter_map(|v| v.as_deref().filter(|v| !v.is_empty()))
                .collect::<Vec<_>>()
                .join(", ");
            let device = [&c.device_type, &c.device_os, &c.browser_name]
                .iter()
                .filter_map(|v| v.as_deref().filter(|v| !v.is_empty()))
                .collect::<Vec<_>>()
                .join(" · ");
            let details = vec![
                some("Page", &c.page_url),
                some("From", &c.referrer_url),
                (!place.is_empty()).then_some(("Where", place)),
                (!device.is_empty()).then_some(("Device", device)),
                c.converted.then(|| ("Converted", "yes".to_string())),
            ];
            row("click", c.timestamp, &c.click_id, &c.partner, details)
        }
        ListedEvent::Lead(l) => {
            let details = vec![
                some("Customer", &l.customer_key),
                some("Page", &l.page_url),
                l.converted.then(|| ("Converted", "yes".to_string())),
            ];
            row("lead", l.timestamp, &l.click_id, &l.partner, details)
        }
        ListedEvent::Conversion(c) => {
            let program_currency = currency;
            let currency = if c.currency.is_empty() {
                currency
            } else {
                &c.currency
            };
            // A sale in another currency: what it counted in the program's, and at which
            // rate; or that it waits for one.
            let converted = match (c.converted_amount_cents, &c.exchange_rate, &c.rate_date) {
                (Some(amount), Some(rate), Some(day)) => Some((
                    "Exchanged",
                    format!(
                        "{} at {rate} {} per {} ({day})",
                        display_amount(amount, program_currency),
                        program_currency.to_ascii_uppercase(),
                        currency.to_ascii_uppercase()
                    ),
                )),
                _ if c.awaiting_rate => Some((
                    "Exchanged",
                    format!("waiting for a {} rate", currency.to_ascii_uppercase()),
                )),
                _ => None,
            };
            // A partial refund leaves the sale paid; the overview counts what it kept.
            let partly = c.refunded_cents > 0 && c.refunded_cents < c.amount_cents;
            let status = if partly && c.payment_status == "paid" {
                "partially refunded".to_string()
            } else {
                c.payment_status.clone()
            };
            let refunded = (c.refunded_cents > 0)
                .then(|| ("Refunded", display_amount(c.refunded_cents, currency)));
            let kind = if c.is_recurring {
                format!("{} (renewal)", c.sale_type)
            } else {
                c.sale_type.clone()
            };
            let details = vec![
                Some(("Amount", display_amount(c.amount_cents, currency))),
                converted,
                refunded,
                Some(("Transaction", c.processor_event_id.clone())),
                Some(("Status", status)),
                Some(("Type", kind)),
            ];
            row("sale", c.timestamp, &c.click_id, &c.partner, details)
        }
    }
}

/// `GET /app/programs/{id}/events?type=…&from=…&to=…&page=N` (`mode=test` for test
/// events).
pub(super) async fn events(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    let frame = Frame::load(&s, &user, id, Tab::Events, q.text("done").as_deref()).await?;
    let test = q.text("mode").as_deref() == Some("test");
    let kind = q.text("type").and_then(|t| EventKind::parse(&t));
    let mut from = Field::new("from", "From").with(q.text("from").unwrap_or_default());
    let mut to = Field::new("to", "To").with(q.text("to").unwrap_or_default());
    let from_ms = date(&mut from, false);
    let to_ms = date(&mut to, true);
    if let (Some(f), Some(t)) = (from_ms, to_ms) {
        if f > t {
            to.error = Some("The end date must not be before the start date".into());
        }
    }
    let invalid = from.error.is_some() || to.error.is_some();
    let page = q
        .text("page")
        .and_then(|p| p.parse::<i64>().ok())
        .filter(|p| *p >= 1)
        .unwrap_or(1);
    let filter = EventFilter {
        kinds: kind.map_or_else(|| EventKind::ALL.to_vec(), |k| vec![k]),
        test,
        from_ms: if invalid { None } else { from_ms },
        to_ms: if invalid { None } else { to_ms },
    };
    let found = s.app.events_page(id, &filter, page, PAGE_SIZE).await?;
    let currency = frame.program.currency.clone();
    let base = Tab::Events.href(id);
    let mut query: Vec<(&str, String)> = Vec::new();
    if let Some(k) = kind {
        query.push(("type", k.as_str().into()));
    }
    if !invalid {
        for f in [&from, &to] {
            if !f.value.is_empty() {
                query.push((f.name, f.value.clone()));
            }
        }
    }
    let href = |mode_test: bool, page: Option<i64>| {
        let mut parts: Vec<String> = query
            .iter()
            .map(|(k, v)| {
                let v: String = url::form_urlencoded::byte_serialize(v.as_bytes()).collect();
                format!("{k}={v}")
            })
            .collect();
        if mode_test {
            parts.push("mode=test".into());
        }
        if let Some(p) = page {
            parts.push(format!("page={p}"));
        }
        if parts.is_empty() {
            base.clone()
        } else {
            format!("{base}?{}", parts.join("&"))
        }
    };
    let modes = [("Live", false), ("Test", true)]
        .into_iter()
        .map(|(label, t)| NavItem {
            href: href(t, None),
            label: label.into(),
            current: t == test,
        })
        .collect();
    let kinds = [
        ("", "All events"),
        ("click", "Clicks"),
        ("lead", "Leads"),
        ("conversion", "Sales"),
    ]
    .into_iter()
    .map(|(v, l)| (v, l, kind.map_or("", |k| k.as_str()) == v))
    .collect();
    Ok(ok(&EventsPage {
        chrome: frame.chrome,
        head: frame.head,
        modes,
        test,
        kinds,
        rows: found.data.iter().map(|e| row(e, id, &currency)).collect(),
        total: found.total,
        page,
        page_count: found.page_count,
        newer_href: (page > 1).then(|| href(test, Some((page - 1).min(found.page_count.max(1))))),
        older_href: (page < found.page_count).then(|| href(test, Some(page + 1))),
        filtered: kind.is_some() || !from.value.is_empty() || !to.value.is_empty(),
        from,
        to,
    }))
}
