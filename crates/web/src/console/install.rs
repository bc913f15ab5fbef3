//! A program's setup: the checklist of the status endpoint (which the page's script
//! refreshes until the tracker, leads and sales have arrived), the tracker tag, the
//! server-side lead and sale snippets, the Stripe webhook and the allowed origins.
//!
//! The API token is kept hashed, so the snippets carry it only on the page that issued
//! it (the first run, a new program, a rotation); elsewhere they name a placeholder.

use askama::Template;
use axum::extract::State;
use axum::response::Response;

use super::frame::{Frame, Head, Tab};
use super::session::Signed;
use crate::pages::view::{ok, Chrome, Moment, PageResult, ProgramId, Query};
use crate::AppState;
use reftrack_service as app;
use reftrack_store::{EventFilter, EventKind, ListedEvent};

/// What the snippets say where the token is not known.
const TOKEN_PLACEHOLDER: &str = "YOUR_API_TOKEN";
/// Seconds between two refreshes of the checklist.
const REFRESH_SECONDS: u32 = 3;

#[derive(Template)]
#[template(path = "console/setup.html")]
struct SetupPage {
    chrome: Chrome,
    head: Head,
    checklist: Checklist,
    /// The tracker's `<script>` tag.
    tag: String,
    /// The lead's snippets, then the sale's.
    snippets: [SnippetGroup; 2],
    /// The token, when this page issued it.
    token: Option<String>,
    token_prefix: String,
    webhook_url: String,
    webhook_secret_set: bool,
    origins: Vec<String>,
}

/// The checklist, refreshed by the page's script while `waiting`.
struct Checklist {
    program_id: i64,
    steps: Vec<Step>,
    /// The tracker, leads or sales have not all arrived yet.
    waiting: bool,
    refresh_seconds: u32,
}

struct Step {
    key: &'static str,
    title: &'static str,
    done: bool,
    /// What happened, or what to do.
    detail: String,
    /// When the step's latest event arrived.
    at: Option<Moment>,
}

/// The snippets of one call.
struct SnippetGroup {
    title: &'static str,
    snippets: Vec<Snippet>,
}

/// A snippet of code to copy.
struct Snippet {
    id: String,
    label: &'static str,
    code: String,
}

/// The newest event of `kind` of the program, real or test, if any.
async fn newest(s: &AppState, id: i64, kind: EventKind, test: bool) -> app::Result<Option<i64>> {
    let filter = EventFilter {
        kinds: vec![kind],
        test,
        from_ms: None,
        to_ms: None,
    };
    let found = s.app.events_page(id, &filter, 1, 1).await?;
    Ok(found.data.first().map(|e| match e {
        ListedEvent::Click(c) => c.timestamp,
        ListedEvent::Lead(l) => l.timestamp,
        ListedEvent::Conversion(c) => c.timestamp,
    }))
}

/// The later of two instants.
fn latest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    a.max(b)
}

async fn checklist(s: &AppState, frame: &Frame) -> app::Result<Checklist> {
    let id = frame.program.id;
    let status = s.app.setup_status(id).await?;
    let test_at =
        |summary: &reftrack_store::TestEventSummary| summary.latest.as_ref().map(|e| e.timestamp);
    let click = latest(
        newest(s, id, EventKind::Click, false).await?,
        test_at(&status.pageview),
    );
    let lead = latest(
        newest(s, id, EventKind::Lead, false).await?,
        test_at(&status.referrals),
    );
    let sale = latest(
        newest(s, id, EventKind::Conversion, false).await?,
        newest(s, id, EventKind::Conversion, true).await?,
    );
    let connected = frame.program.payment_account.status == "connected";
    let steps = vec![
        Step {
            key: "pageview",
            title: "Install the tracker",
            done: click.is_some(),
            detail: if click.is_some() {
                "Clicks arrive: the tracker works.".into()
            } else {
                "Waiting for your first click… Put the tag below on your site, then open a page \
                 of it with ?aff= and a partner's link (or send a test click)."
                    .into()
            },
            at: click.map(Moment::of),
        },
        Step {
            key: "referrals",
            title: "Report signups (leads)",
            done: lead.is_some(),
            detail: if lead.is_some() {
                "Leads arrive.".into()
            } else {
                "Waiting for your first lead: call the lead endpoint when a visitor signs up."
                    .into()
            },
            at: lead.map(Moment::of),
        },
        Step {
            key: "sales",
            title: "Report sales",
            done: sale.is_some(),
            detail: if sale.is_some() {
                "Sales arrive, and earn your partners their commissions.".into()
            } else {
                "Waiting for your first sale: call the sale endpoint from your server, or \
                 connect Stripe."
                    .into()
            },
            at: sale.map(Moment::of),
        },
        Step {
            key: "payments",
            title: "Connect Stripe (optional)",
            done: connected,
            detail: match (connected, frame.program.stripe_webhook_secret_set) {
                (true, _) => "Your Stripe account is connected.".into(),
                (false, true) => {
                    "The webhook secret is set; Stripe's payments become sales.".into()
                }
                (false, false) => {
                    "Only if your payments run through Stripe: add the webhook below.".into()
                }
            },
            at: None,
        },
        Step {
            key: "partners",
            title: "Approve a partner",
            done: status.has_partners,
            detail: if status.has_partners {
                "At least one partner is approved.".into()
            } else {
                "Add a partner, or approve an application, on the Partners page.".into()
            },
            at: None,
        },
    ];
    Ok(Checklist {
        program_id: id,
        waiting: click.is_none() || lead.is_none() || sale.is_none(),
        steps,
        refresh_seconds: REFRESH_SECONDS,
    })
}

/// The snippets of a call to `path` with `body` (JSON), in curl, Node.js and Python.
fn snippets(
    kind: &str,
    base: &str,
    path: &str,
    token: &str,
    body: &[(&str, &str)],
) -> Vec<Snippet> {
    let url = format!("{base}{path}");
    let json = |sep: &str, quote_keys: bool| {
        body.iter()
            .map(|(k, v)| {
                if quote_keys {
                    format!("\"{k}\": {v}")
                } else {
                    format!("{k}: {v}")
                }
            })
            .collect::<Vec<_>>()
            .join(sep)
    };
    vec![
        Snippet {
            id: format!("{kind}-curl"),
            label: "curl",
            code: format!(
                "curl -X POST {url} \\\n  -H \"Authorization: Bearer {token}\" \\\n  \
                 -H \"Content-Type: application/json\" \\\n  -d '{{{}}}'",
                json(", ", true)
            ),
        },
        Snippet {
            id: format!("{kind}-node"),
            label: "Node.js",
            code: format!(
                "await fetch(\"{url}\", {{\n  method: \"POST\",\n  headers: {{\n    \
                 Authorization: \"Bearer {token}\",\n    \"Content-Type\": \"application/json\",\n  }},\n  \
                 body: JSON.stringify({{ {} }}),\n}});",
                json(", ", false)
            ),
        },
        Snippet {
            id: format!("{kind}-python"),
            label: "Python",
            code: format!(
                "import requests\n\nrequests.post(\n    \"{url}\",\n    \
                 headers={{\"Authorization\": \"Bearer {token}\"}},\n    json={{{}}},\n    timeout=10,\n)",
                json(", ", true)
            ),
        },
    ]
}

/// The setup page of program `id` for `user`; `token` when this answer issued it.
pub(super) async fn setup_page(
    s: &AppState,
    user: &Signed,
    id: i64,
    token: Option<String>,
    done: Option<&str>,
) -> app::Result<Response> {
    let frame = Frame::load(s, user, id, Tab::Setup, done).await?;
    let base = s.app.public_url().await?;
    let shown = token.as_deref().unwrap_or(TOKEN_PLACEHOLDER);
    let currency = format!("\"{}\"", frame.program.currency);
    let page = SetupPage {
        checklist: checklist(s, &frame).await?,
        tag: format!("<script src=\"{base}/tracker.js\" data-program-id=\"{id}\" async></script>"),
        snippets: [
            SnippetGroup {
                title: "Lead",
                snippets: snippets(
                    "lead",
                    &base,
                    "/api/v1/track/lead",
                    shown,
                    &[
                        ("click_id", "\"CLICK_ID_FROM_THE_COOKIE\""),
                        ("customer_key", "\"user_123\""),
                        ("email", "\"customer@example.com\""),
                    ],
                ),
            },
            SnippetGroup {
                title: "Sale",
                snippets: snippets(
                    "sale",
                    &base,
                    "/api/v1/track/sale",
                    shown,
                    &[
                        ("transaction_id", "\"order_1001\""),
                        ("amount_cents", "4900"),
                        ("currency", &currency),
                        ("customer_key", "\"user_123\""),
                    ],
                ),
            },
        ],
        token,
        token_prefix: frame.program.api_token_prefix.clone(),
        webhook_url: format!("{base}/api/webhooks/stripe/{id}"),
        webhook_secret_set: frame.program.stripe_webhook_secret_set,
        origins: frame.program.allowed_origins.clone(),
        chrome: frame.chrome,
        head: frame.head,
    };
    Ok(ok(&page))
}

/// `GET /app/programs/{id}/setup`.
pub(super) async fn setup(
    State(s): State<AppState>,
    user: Signed,
    ProgramId(id): ProgramId,
    Query(q): Query,
) -> PageResult {
    Ok(setup_page(&s, &user, id, None, q.text("done").as_deref()).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_carry_the_url_token_and_body() {
        let s = snippets(
            "sale",
            "https://t.example",
            "/api/v1/track/sale",
            "rtk_secret",
            &[("transaction_id", "\"order_1\""), ("amount_cents", "4900")],
        );
        assert_eq!(s.len(), 3);
        assert_eq!(
            s[0].code,
            "curl -X POST https://t.example/api/v1/track/sale \\\n  -H \"Authorization: Bearer rtk_secret\" \\\n  -H \"Content-Type: application/json\" \\\n  -d '{\"transaction_id\": \"order_1\", \"amount_cents\": 4900}'"
        );
        assert!(s[1]
            .code
            .contains("body: JSON.stringify({ transaction_id: \"order_1\", amount_cents: 4900 })"));
        assert!(s[2]
            .code
            .contains("json={\"transaction_id\": \"order_1\", \"amount_cents\": 4900}"));
        assert_eq!(s[2].id, "sale-python");
    }
}
