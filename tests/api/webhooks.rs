//! Outbound webhooks: endpoint management and what it refuses, the access rules, the
//! outbox written with every reported change (set-based sale batches included, test mode
//! excluded), deliveries verified by the Standard Webhooks reference library, the retry
//! schedule and disabling driven by an injected clock, and endpoints that answer 500,
//! hang or close the connection without holding up the others.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::receiver::{misbehaving, Answer, Misbehave, Receiver};
use crate::common::*;
use reftrack::app::webhooks::worker::{Worker, PER_ENDPOINT};
use reftrack::domain::time::{iso, Clock, ManualClock, SystemClock};
use serde_json::{json, Value};

const ALL: [&str; 10] = [
    "lead.created",
    "sale.created",
    "sale.refunded",
    "commission.created",
    "commission.approved",
    "commission.reversed",
    "partner.applied",
    "partner.approved",
    "payout.created",
    "payout.paid",
];

/// A public address no test sends to (no worker runs where it is used).
const PUBLIC: &str = "https://93.184.216.34/hooks/reftrack";

const SALE: &str = "/api/v1/track/sale";
const PASSWORD: &str = "correct horse battery";
const DAY: i64 = 86_400_000;

async fn create(app: &TestApp, program_id: i64, url: &str, events: Value) -> Reply {
    app.admin(
        "POST",
        &format!("/programs/{program_id}/webhooks"),
        Some(json!({"url": url, "events": events})),
    )
    .await
}

/// An endpoint of `events` on `rx`, which verifies with its secret; returns its id.
async fn endpoint(app: &TestApp, program_id: i64, rx: &Receiver, events: &[&str]) -> i64 {
    let r = create(app, program_id, &rx.url, json!(events))
        .await
        .expect(201);
    rx.set_secret(r.body["secret"].as_str().unwrap());
    r.body["id"].as_i64().unwrap()
}

async fn deliveries(app: &TestApp, id: i64) -> Vec<Value> {
    let r = app
        .admin("GET", &format!("/webhooks/{id}/deliveries?limit=100"), None)
        .await
        .expect(200);
    r.body["data"].as_array().unwrap().clone()
}

/// The program's endpoint `id` as the list shows it.
async fn listed_endpoint(app: &TestApp, program_id: i64, id: i64) -> Value {
    let r = app
        .admin("GET", &format!("/programs/{program_id}/webhooks"), None)
        .await
        .expect(200);
    r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .unwrap()
        .clone()
}

/// A sale of `amount` by a new customer of the seed's link; returns the click id.
async fn sale(app: &TestApp, seed: &Seed, txn: &str, amount: i64) -> String {
    let click_id = app.click(&seed.short_link).await;
    app.post_auth(
        SALE,
        &seed.api_token,
        json!({"transaction_id": txn, "amount_cents": amount, "click_id": click_id}),
    )
    .await
    .expect(200);
    click_id
}

on_both_backends!(endpoints_are_created_listed_changed_and_deleted);
async fn endpoints_are_created_listed_changed_and_deleted(app: TestApp) {
    let p = app.seed().await.program_id;
    let r = create(
        &app,
        p,
        PUBLIC,
        json!(["sale.created", "lead.created", "sale.created"]),
    )
    .await
    .expect(201);
    let secret = r.body["secret"].as_str().unwrap();
    assert!(
        secret.starts_with("whsec_") && secret.len() == 38,
        "{secret}"
    );
    assert_eq!(r.body["events"], json!(["lead.created", "sale.created"]));
    assert_eq!(r.body["enabled"], true);
    assert_eq!(r.body["url"], PUBLIC);
    assert_eq!(r.body["program_id"], p);
    assert_eq!(r.body["failing_since"], Value::Null);
    let id = r.body["id"].as_i64().unwrap();

    let listed = listed_endpoint(&app, p, id).await;
    assert!(
        listed.get("secret").is_none(),
        "the secret is shown once: {listed}"
    );
    for _ in 0..2 {
        create(&app, p, PUBLIC, json!(["payout.paid"]))
            .await
            .expect(201);
    }
    let first = app
        .admin("GET", &format!("/programs/{p}/webhooks?limit=2"), None)
        .await
        .expect(200);
    assert_eq!(first.body["data"].as_array().unwrap().len(), 2);
    let cursor = first.body["next_cursor"].as_str().unwrap().to_string();
    let rest = app
        .admin(
            "GET",
            &format!("/programs/{p}/webhooks?limit=2&cursor={cursor}"),
            None,
        )
        .await
        .expect(200);
    assert_eq!(rest.body["data"][0]["id"], id);
    assert_eq!(rest.body["next_cursor"], Value::Null);

    let r = app
        .admin(
            "PATCH",
            &format!("/webhooks/{id}"),
            Some(json!({"events": ["payout.paid"], "enabled": false})),
        )
        .await
        .expect(200);
    assert_eq!(r.body["events"], json!(["payout.paid"]));
    assert_eq!(r.body["enabled"], false);
    assert_eq!(r.body["url"], PUBLIC);
    let r = app
        .admin(
            "PATCH",
            &format!("/webhooks/{id}"),
            Some(json!({"url": "https://93.184.216.35/other", "enabled": true})),
        )
        .await
        .expect(200);
    assert_eq!(r.body["url"], "https://93.184.216.35/other");
    assert_eq!(r.body["events"], json!(["payout.paid"]));
    assert_eq!(r.body["enabled"], true);
    let shown = app
        .admin("GET", &format!("/webhooks/{id}"), None)
        .await
        .expect(200);
    assert_eq!(shown.body, r.body);
    assert!(shown.body.get("secret").is_none());

    app.admin("DELETE", &format!("/webhooks/{id}"), None)
        .await
        .expect(204);
    let gone = app
        .admin("DELETE", &format!("/webhooks/{id}"), None)
        .await
        .expect(404);
    assert_eq!(gone.error(), "Webhook not found");
    app.admin(
        "PATCH",
        &format!("/webhooks/{id}"),
        Some(json!({"enabled": false})),
    )
    .await
    .expect(404);
    let gone = app
        .admin("GET", &format!("/webhooks/{id}"), None)
        .await
        .expect(404);
    assert_eq!(gone.error(), "Webhook not found");
    app.admin("GET", &format!("/webhooks/{id}/deliveries"), None)
        .await
        .expect(404);
    let missing = create(&app, 99_999, PUBLIC, json!(["sale.created"]))
        .await
        .expect(404);
    assert_eq!(missing.error(), "Program not found");
    app.admin("GET", "/programs/99999/webhooks", None)
        .await
        .expect(404);
}

on_both_backends!(invalid_urls_private_targets_and_unknown_events_are_refused);
async fn invalid_urls_private_targets_and_unknown_events_are_refused(app: TestApp) {
    let p = app.seed().await.program_id;
    let kept = create(&app, p, PUBLIC, json!(["sale.created"]))
        .await
        .expect(201);
    let id = kept.body["id"].as_i64().unwrap();
    let not_url = "url must be an http:// or https:// URL with a host";
    for (url, text) in [
        ("not a url", not_url),
        ("ftp://93.184.216.34/x", not_url),
        ("https://", not_url),
        (
            "https://user:pw@93.184.216.34/x",
            "url must not carry a user name or password",
        ),
        ("http://127.0.0.1:9/hook", "(127.0.0.1)"),
        ("http://10.1.2.3/hook", "(10.1.2.3)"),
        ("http://192.168.0.10/hook", "(192.168.0.10)"),
        ("http://172.16.5.4/hook", "(172.16.5.4)"),
        (
            "http://169.254.169.254/latest/meta-data",
            "(169.254.169.254)",
        ),
        ("http://0.0.0.0/hook", "(0.0.0.0)"),
        ("http://[::1]/hook", "(::1)"),
        ("http://[fe80::1]/hook", "(fe80::1)"),
        ("http://[::ffff:10.0.0.1]/hook", "(::ffff:10.0.0.1)"),
        // A name that resolves to a loopback address (through /etc/hosts).
        (
            "http://localhost:8080/hook",
            "loopback, private or link-local",
        ),
    ] {
        let r = create(&app, p, url, json!(["sale.created"]))
            .await
            .expect(400);
        assert!(r.error().contains(text), "{url}: {}", r.error());
        if text.starts_with('(') || text.starts_with("loopback") {
            assert!(
                r.error().contains("REFTRACK_WEBHOOK_ALLOW_PRIVATE=1"),
                "{}",
                r.error()
            );
        }
        let r = app
            .admin(
                "PATCH",
                &format!("/webhooks/{id}"),
                Some(json!({"url": url})),
            )
            .await
            .expect(400);
        assert!(r.error().contains(text), "PATCH {url}: {}", r.error());
    }
    let long = format!("https://93.184.216.34/{}", "a".repeat(2000));
    let r = create(&app, p, &long, json!(["sale.created"]))
        .await
        .expect(400);
    assert_eq!(r.error(), "url must be at most 2000 characters");

    let r = create(&app, p, PUBLIC, json!([])).await.expect(400);
    assert!(
        r.error()
            .starts_with("events must list at least one event type"),
        "{}",
        r.error()
    );
    let r = create(&app, p, PUBLIC, json!(["sale.created", "sale.made"]))
        .await
        .expect(400);
    assert!(
        r.error().contains("unknown event type \"sale.made\""),
        "{}",
        r.error()
    );
    assert!(
        r.error().contains("payout.paid"),
        "names the known types: {}",
        r.error()
    );
    for body in [
        json!({"url": PUBLIC, "events": "sale.created"}),
        json!({"url": PUBLIC, "events": [1]}),
        json!({"url": PUBLIC}),
        json!({"events": ["sale.created"]}),
        json!({"url": PUBLIC, "events": ["sale.created"], "secret": "whsec_mine"}),
    ] {
        let r = app
            .admin(
                "POST",
                &format!("/programs/{p}/webhooks"),
                Some(body.clone()),
            )
            .await
            .expect(400);
        assert!(
            r.error().contains("Invalid request body"),
            "{body}: {}",
            r.error()
        );
    }
    for body in [
        json!({"events": ["nope"]}),
        json!({"events": []}),
        json!({"enabled": "yes"}),
        json!({"url": 5}),
    ] {
        app.admin("PATCH", &format!("/webhooks/{id}"), Some(body))
            .await
            .expect(400);
    }
    // Nothing was stored or changed by a refused call.
    let l = app
        .admin("GET", &format!("/programs/{p}/webhooks"), None)
        .await
        .expect(200);
    assert_eq!(l.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(l.body["data"][0]["url"], PUBLIC);
    assert_eq!(l.body["data"][0]["events"], json!(["sale.created"]));

    let r = app
        .admin(
            "POST",
            &format!("/webhooks/{id}/deliveries/999/retry"),
            None,
        )
        .await
        .expect(404);
    assert_eq!(r.error(), "Delivery not found");
    app.admin("GET", "/webhooks/abc/deliveries", None)
        .await
        .expect(400);
    app.admin("GET", &format!("/webhooks/{id}/deliveries?limit=0"), None)
        .await
        .expect(400);
    app.admin("GET", &format!("/webhooks/{id}/deliveries?cursor=x"), None)
        .await
        .expect(400);
}

on_both_backends!(owners_change_members_read_other_workspaces_see_nothing);
async fn owners_change_members_read_other_workspaces_see_nothing(app: TestApp) {
    let seed = app.seed().await;
    let other = app.seed().await;
    let p = seed.program_id;
    let token = |r: Reply| format!("Bearer {}", r.body["token"].as_str().unwrap());
    app.member(seed.workspace_id, "owner@x.test", PASSWORD, "owner")
        .await;
    app.member(seed.workspace_id, "viewer@x.test", PASSWORD, "viewer")
        .await;
    app.member(other.workspace_id, "outsider@x.test", PASSWORD, "owner")
        .await;
    let owner = token(app.login("owner@x.test", PASSWORD).await.expect(200));
    let viewer = token(app.login("viewer@x.test", PASSWORD).await.expect(200));
    let outsider = token(app.login("outsider@x.test", PASSWORD).await.expect(200));
    let call = |method: &'static str, path: String, body: Option<Value>, auth: String| {
        let app = &app;
        async move {
            app.send(
                method,
                &format!("/api/admin{path}"),
                body,
                &[("authorization", &auth)],
            )
            .await
        }
    };
    let body = json!({"url": PUBLIC, "events": ["sale.created"]});
    let r = call(
        "POST",
        format!("/programs/{p}/webhooks"),
        Some(body.clone()),
        owner.clone(),
    )
    .await
    .expect(201);
    let id = r.body["id"].as_i64().unwrap();
    call(
        "GET",
        format!("/programs/{p}/webhooks"),
        None,
        viewer.clone(),
    )
    .await
    .expect(200);
    call(
        "GET",
        format!("/webhooks/{id}/deliveries"),
        None,
        viewer.clone(),
    )
    .await
    .expect(200);
    call("GET", format!("/webhooks/{id}"), None, viewer.clone())
        .await
        .expect(200);
    call(
        "POST",
        format!("/programs/{p}/webhooks"),
        Some(body.clone()),
        viewer.clone(),
    )
    .await
    .expect(403);
    call(
        "PATCH",
        format!("/webhooks/{id}"),
        Some(json!({"enabled": false})),
        viewer.clone(),
    )
    .await
    .expect(403);
    call("DELETE", format!("/webhooks/{id}"), None, viewer.clone())
        .await
        .expect(403);
    call(
        "POST",
        format!("/webhooks/{id}/deliveries/1/retry"),
        None,
        viewer.clone(),
    )
    .await
    .expect(403);
    call("POST", format!("/webhooks/{id}/test"), None, viewer.clone())
        .await
        .expect(403);
    for (method, path, body) in [
        ("GET", format!("/programs/{p}/webhooks"), None),
        (
            "POST",
            format!("/programs/{p}/webhooks"),
            Some(body.clone()),
        ),
        ("GET", format!("/webhooks/{id}"), None),
        (
            "PATCH",
            format!("/webhooks/{id}"),
            Some(json!({"enabled": false})),
        ),
        ("DELETE", format!("/webhooks/{id}"), None),
        ("GET", format!("/webhooks/{id}/deliveries"), None),
        ("POST", format!("/webhooks/{id}/deliveries/1/retry"), None),
        ("POST", format!("/webhooks/{id}/test"), None),
    ] {
        call(method, path.clone(), body, outsider.clone())
            .await
            .expect(404);
        let r = app
            .send(method, &format!("/api/admin{path}"), None, &[])
            .await;
        assert_eq!(r.status.as_u16(), 401, "{method} {path} without a token");
    }
    call(
        "PATCH",
        format!("/webhooks/{id}"),
        Some(json!({"enabled": false})),
        owner.clone(),
    )
    .await
    .expect(200);
    call("DELETE", format!("/webhooks/{id}"), None, owner)
        .await
        .expect(204);
}

on_both_backends!(a_test_message_reaches_the_endpoint_whatever_it_receives);
async fn a_test_message_reaches_the_endpoint_whatever_it_receives(app: TestApp) {
    let app = app.with_private_webhooks(Arc::new(SystemClock));
    let seed = app.seed().await;
    let p = seed.program_id;
    let rx = Receiver::start(Answer::Ok).await;
    let id = endpoint(&app, p, &rx, &["payout.paid"]).await;
    let r = app
        .admin("POST", &format!("/webhooks/{id}/test"), None)
        .await
        .expect(202);
    assert_eq!(r.body["type"], "webhook.test");
    assert_eq!(r.body["status"], "pending");
    let message_id = r.body["message_id"].as_str().unwrap().to_string();
    assert_eq!(
        Worker::new(app.state.app.clone()).run_once().await.unwrap(),
        1
    );
    // Signed as every message: the reference verifier accepts it.
    assert_eq!(rx.bad(), Vec::<String>::new());
    let got = rx.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].id, message_id);
    assert_eq!(got[0].body["type"], "webhook.test");
    assert_eq!(
        got[0].body["data"],
        json!({"endpoint_id": id, "program_id": p, "message": "A test message from Reftrack"})
    );
    let listed = deliveries(&app, id).await;
    assert_eq!(
        (listed[0]["type"].as_str(), listed[0]["status"].as_str()),
        (Some("webhook.test"), Some("delivered"))
    );
    // Nothing is sent to a disabled endpoint; an unknown one is 404.
    app.admin(
        "PATCH",
        &format!("/webhooks/{id}"),
        Some(json!({"enabled": false})),
    )
    .await
    .expect(200);
    let r = app
        .admin("POST", &format!("/webhooks/{id}/test"), None)
        .await
        .expect(409);
    assert_eq!(
        r.error(),
        "The endpoint is disabled: enable it first (PATCH enabled=true)"
    );
    app.admin("POST", "/webhooks/999999/test", None)
        .await
        .expect(404);
    assert_eq!(deliveries(&app, id).await.len(), 1);
}

/// The one message of `type` the receiver got.
fn message<'a>(got: &'a [Value], kind: &str) -> &'a Value {
    let all: Vec<&Value> = got.iter().filter(|m| m["type"] == kind).collect();
    assert_eq!(all.len(), 1, "one {kind}, got {all:?}");
    all[0]
}

on_both_backends!(every_event_type_reaches_a_verifying_receiver);
async fn every_event_type_reaches_a_verifying_receiver(app: TestApp) {
    let app = app.with_private_webhooks(Arc::new(SystemClock));
    let seed = app
        .seed_with(
            json!({"commission_hold_days": 30, "min_payout_cents": 100, "applications_open": true}),
        )
        .await;
    let p = seed.program_id;
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"payout_email": "alice@example.com"})),
    )
    .await
    .expect(200);
    let rx = Receiver::start(Answer::Ok).await;
    let id = endpoint(&app, p, &rx, &ALL).await;
    let silent = Receiver::start(Answer::Ok).await;
    endpoint(&app, p, &silent, &["payout.paid"]).await;

    let bob = app
        .admin(
            "POST",
            "/partners",
            Some(json!({"name": "Bob", "code": "bob"})),
        )
        .await
        .expect(201);
    let bob = bob.body["id"].as_i64().unwrap();
    app.admin(
        "POST",
        &format!("/programs/{p}/partners"),
        Some(json!({"partner_id": bob, "status": "approved"})),
    )
    .await
    .expect(201);
    let click_id = app.lead(&seed, "cust-1").await;
    app.post_auth(
        SALE,
        &seed.api_token,
        json!({"transaction_id": "txn-1", "amount_cents": 10_000, "customer_key": "cust-1"}),
    )
    .await
    .expect(200);
    sale(&app, &seed, "txn-2", 5_000).await;
    app.post_auth(
        "/api/v1/track/refund",
        &seed.api_token,
        json!({"transaction_id": "txn-2"}),
    )
    .await
    .expect(200);
    let commissions = app
        .admin("GET", &format!("/programs/{p}/commissions"), None)
        .await
        .expect(200);
    let c1 = commissions.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["transaction_id"] == "txn-1")
        .unwrap()
        .clone();
    let c1_id = c1["id"].as_i64().unwrap();
    let approved = app
        .admin("POST", &format!("/commissions/{c1_id}/approve"), None)
        .await
        .expect(200);
    app.post(
        &format!("/api/partner/apply/{p}"),
        json!({"name": "Carol", "email": "carol@example.com", "password": PASSWORD}),
    )
    .await
    .expect(201);
    let payout = app
        .admin("POST", &format!("/programs/{p}/payouts"), Some(json!({})))
        .await
        .expect(201);
    let payout_id = payout.body["id"].as_i64().unwrap();
    let paid = app
        .admin(
            "POST",
            &format!("/payouts/{payout_id}/mark-paid"),
            Some(json!({"reference": "T-1"})),
        )
        .await
        .expect(200);
    // Test mode is not reported.
    app.post_auth(
        SALE,
        &seed.api_token,
        json!({"amount_cents": 100, "additional_data": {"test_mode": true}}),
    )
    .await
    .expect(200);

    let expected: HashMap<&str, usize> = [
        ("partner.approved", 1),
        ("lead.created", 1),
        ("sale.created", 2),
        ("commission.created", 2),
        ("sale.refunded", 1),
        ("commission.reversed", 1),
        ("commission.approved", 1),
        ("partner.applied", 1),
        ("payout.created", 1),
        ("payout.paid", 1),
    ]
    .into_iter()
    .collect();
    let outbox = deliveries(&app, id).await;
    let mut kinds: HashMap<&str, usize> = HashMap::new();
    for d in &outbox {
        *kinds.entry(d["type"].as_str().unwrap()).or_default() += 1;
        assert_eq!(d["status"], "pending");
        assert_eq!(d["attempts"], json!([]));
        assert!(d["message_id"].as_str().unwrap().starts_with("msg_"));
    }
    assert_eq!(kinds, expected);

    let attempts = Worker::new(app.state.app.clone()).run_once().await.unwrap();
    assert_eq!(
        attempts,
        outbox.len() + 1,
        "every message, and payout.paid to the second endpoint"
    );
    assert_eq!(rx.bad(), Vec::<String>::new());
    let received = rx.received();
    assert_eq!(received.len(), outbox.len());
    for d in &outbox {
        let got: Vec<_> = received
            .iter()
            .filter(|r| r.id == d["message_id"].as_str().unwrap())
            .collect();
        assert_eq!(got.len(), 1, "{d}");
        assert_eq!(got[0].body["type"], d["type"]);
    }
    for d in deliveries(&app, id).await {
        assert_eq!(d["status"], "delivered", "{d}");
        assert_eq!(d["next_attempt_at"], Value::Null);
        assert_eq!(d["attempts"].as_array().unwrap().len(), 1);
        assert_eq!(d["attempts"][0]["status_code"], 200);
        assert_eq!(d["attempts"][0]["error"], Value::Null);
    }
    assert_eq!(silent.received().len(), 1);
    assert_eq!(silent.received()[0].body["type"], "payout.paid");
    // The second endpoint gets the same message id as the first.
    let paid_id = &silent.received()[0].id;
    assert!(received
        .iter()
        .any(|r| &r.id == paid_id && r.body["type"] == "payout.paid"));

    let got: Vec<Value> = received.iter().map(|r| r.body.clone()).collect();
    for m in &got {
        let ts = m["timestamp"].as_str().unwrap();
        assert!(chrono::DateTime::parse_from_rfc3339(ts).is_ok(), "{ts}");
        assert_eq!(
            m.as_object().unwrap().len(),
            3,
            "only type, timestamp and data: {m}"
        );
    }
    let lead = &message(&got, "lead.created")["data"];
    assert_eq!(lead["event_type"], "lead");
    assert_eq!(lead["customer_key"], "cust-1");
    assert_eq!(lead["click_id"], click_id.as_str());
    assert_eq!(lead["program_id"], p);
    assert_eq!(lead["partner_id"], seed.partner_id);
    assert_eq!(lead["converted"], false);
    let sales: Vec<&Value> = got
        .iter()
        .filter(|m| m["type"] == "sale.created")
        .map(|m| &m["data"])
        .collect();
    let s1 = sales
        .iter()
        .find(|s| s["processor_event_id"] == "txn-1")
        .unwrap();
    assert_eq!(s1["event_type"], "conversion");
    assert_eq!(s1["amount_cents"], 10_000);
    assert_eq!(s1["payment_status"], "paid");
    assert_eq!(s1["customer_key"], "cust-1");
    assert_eq!(s1["click_id"], click_id.as_str());
    assert_eq!(s1["program_id"], p);
    assert_eq!(s1["partner_id"], seed.partner_id);
    assert_eq!(s1["commission_id"], c1_id);
    assert_eq!(s1["refunded_cents"], 0);
    let created: Vec<&Value> = got
        .iter()
        .filter(|m| m["type"] == "commission.created")
        .map(|m| &m["data"])
        .collect();
    let cc1 = created.iter().find(|c| c["id"] == c1_id).unwrap();
    // The commission row of the management API, as it stood: only its status and
    // approval changed since.
    let mut as_created = approved.body.clone();
    as_created["status"] = json!("pending");
    as_created["approved_at"] = Value::Null;
    assert_eq!(**cc1, as_created);
    let refunded = &message(&got, "sale.refunded")["data"];
    assert_eq!(refunded["processor_event_id"], "txn-2");
    assert_eq!(refunded["payment_status"], "refunded");
    assert_eq!(refunded["refunded_cents"], refunded["amount_cents"]);
    let reversed = &message(&got, "commission.reversed")["data"];
    assert_eq!(reversed["transaction_id"], "txn-2");
    assert_eq!(reversed["status"], "reversed");
    assert_eq!(reversed["amount_cents"], 0);
    assert_eq!(message(&got, "commission.approved")["data"], approved.body);
    let joined = &message(&got, "partner.approved")["data"];
    assert_eq!(joined["partner_id"], bob);
    assert_eq!(joined["status"], "approved");
    assert_eq!(joined["code"], "bob");
    let applied = &message(&got, "partner.applied")["data"];
    assert_eq!(applied["email"], "carol@example.com");
    assert_eq!(applied["status"], "pending");
    let partners = app
        .admin(
            "GET",
            &format!("/programs/{p}/partners?status=pending"),
            None,
        )
        .await
        .expect(200);
    assert_eq!(*applied, partners.body["data"][0]);
    assert_eq!(message(&got, "payout.created")["data"], payout.body);
    assert_eq!(message(&got, "payout.paid")["data"], paid.body);
}

on_both_backends!(approvals_by_status_change_and_by_the_end_of_a_hold_are_reported);
async fn approvals_by_status_change_and_by_the_end_of_a_hold_are_reported(app: TestApp) {
    let clock = Arc::new(ManualClock::default());
    let app = app.with_private_webhooks(clock.clone());
    let seed = app
        .seed_with(json!({"commission_hold_days": 30, "min_payout_cents": 100}))
        .await;
    let p = seed.program_id;
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"payout_email": "alice@example.com"})),
    )
    .await
    .expect(200);
    let rx = Receiver::start(Answer::Ok).await;
    let id = endpoint(&app, p, &rx, &["partner.approved", "commission.approved"]).await;

    // A pending partner approved by a status change; a rejection is not reported.
    let mut pending = Vec::new();
    for code in ["bob", "carol"] {
        let r = app
            .admin(
                "POST",
                "/partners",
                Some(json!({"name": code, "code": code})),
            )
            .await
            .expect(201);
        let partner = r.body["id"].as_i64().unwrap();
        let r = app
            .admin(
                "POST",
                &format!("/programs/{p}/partners"),
                Some(json!({"partner_id": partner, "status": "pending"})),
            )
            .await
            .expect(201);
        assert_eq!(r.body["status"], "pending");
        pending.push(partner);
    }
    let (bob, carol) = (pending[0], pending[1]);
    assert_eq!(deliveries(&app, id).await, Vec::<Value>::new());
    app.admin(
        "PATCH",
        &format!("/programs/{p}/partners/{bob}"),
        Some(json!({"status": "approved"})),
    )
    .await
    .expect(200);
    app.admin(
        "PATCH",
        &format!("/programs/{p}/partners/{carol}"),
        Some(json!({"status": "rejected"})),
    )
    .await
    .expect(200);
    let kinds = |outbox: Vec<Value>| {
        outbox
            .iter()
            .map(|d| d["type"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(kinds(deliveries(&app, id).await), ["partner.approved"]);

    // A commission whose hold has passed, approved by the job; another by creating a
    // payout, which approves the due ones in passing.
    sale(&app, &seed, "by-job", 10_000).await;
    clock.advance(30 * DAY);
    assert_eq!(app.state.app.approve_due_commissions().await.unwrap(), 1);
    assert_eq!(
        kinds(deliveries(&app, id).await)
            .iter()
            .filter(|k| *k == "commission.approved")
            .count(),
        1
    );
    sale(&app, &seed, "by-payout", 5_000).await;
    clock.advance(30 * DAY);
    app.admin("POST", &format!("/programs/{p}/payouts"), Some(json!({})))
        .await
        .expect(201);
    // Nothing is left for the job, and nothing reported twice.
    assert_eq!(app.state.app.approve_due_commissions().await.unwrap(), 0);
    let mut outbox = kinds(deliveries(&app, id).await);
    outbox.sort();
    assert_eq!(
        outbox,
        [
            "commission.approved",
            "commission.approved",
            "partner.approved"
        ]
    );

    Worker::new(app.state.app.clone()).run_once().await.unwrap();
    assert_eq!(rx.bad(), Vec::<String>::new());
    let got: Vec<Value> = rx.received().iter().map(|r| r.body.clone()).collect();
    let joined = &message(&got, "partner.approved")["data"];
    assert_eq!(joined["partner_id"], bob);
    assert_eq!(joined["status"], "approved");
    let commissions = app
        .admin("GET", &format!("/programs/{p}/commissions"), None)
        .await
        .expect(200);
    for txn in ["by-job", "by-payout"] {
        let c = commissions.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["transaction_id"] == txn)
            .unwrap();
        let reported: Vec<&Value> = got
            .iter()
            .filter(|m| m["type"] == "commission.approved" && m["data"]["id"] == c["id"])
            .collect();
        assert_eq!(reported.len(), 1, "{txn}: {got:?}");
        assert_eq!(reported[0]["data"]["transaction_id"], txn);
        assert_eq!(reported[0]["data"]["status"], "approved");
    }
}

on_both_backends!(sales_recorded_in_batches_write_their_messages);
async fn sales_recorded_in_batches_write_their_messages(app: TestApp) {
    let app = app.with_private_webhooks(Arc::new(SystemClock));
    let seed = app.seed().await;
    let quiet = app.seed().await;
    let rx = Receiver::start(Answer::Ok).await;
    let id = endpoint(
        &app,
        seed.program_id,
        &rx,
        &["sale.created", "commission.created", "lead.created"],
    )
    .await;
    const N: usize = 40;
    let mut clicks = Vec::new();
    let mut quiet_clicks = Vec::new();
    for _ in 0..N {
        clicks.push(app.click(&seed.short_link).await);
        quiet_clicks.push(app.click(&quiet.short_link).await);
    }
    // Sales of both programs, with leads between them, at once: batches mix plain
    // sales, recorded set-based, with jobs.
    let mut calls = Vec::new();
    for (i, (c, q)) in clicks.iter().zip(&quiet_clicks).enumerate() {
        calls.push(app.post_auth(
            SALE,
            &seed.api_token,
            json!({"transaction_id": format!("b-{i}"), "amount_cents": 1000 + i, "click_id": c}),
        ));
        calls.push(app.post_auth(
            SALE,
            &quiet.api_token,
            json!({"transaction_id": format!("q-{i}"), "amount_cents": 1000, "click_id": q}),
        ));
    }
    let leads: Vec<String> =
        futures::future::join_all((0..10).map(|_| app.click(&seed.short_link))).await;
    let lead_calls = leads.iter().enumerate().map(|(i, c)| {
        app.post_auth(
            "/api/v1/track/lead",
            &seed.api_token,
            json!({"click_id": c, "customer_key": format!("lead-{i}")}),
        )
    });
    let (sales, leads) = futures::join!(
        futures::future::join_all(calls),
        futures::future::join_all(lead_calls)
    );
    for r in sales.into_iter().chain(leads) {
        r.expect(200);
    }
    let outbox = deliveries(&app, id).await;
    assert_eq!(outbox.len(), 2 * N + 10);
    Worker::new(app.state.app.clone()).run_once().await.unwrap();
    assert_eq!(rx.bad(), Vec::<String>::new());
    let got: Vec<Value> = rx.received().iter().map(|r| r.body.clone()).collect();
    for i in 0..N {
        let txn = format!("b-{i}");
        let sale: Vec<&Value> = got
            .iter()
            .filter(|m| {
                m["type"] == "sale.created" && m["data"]["processor_event_id"] == txn.as_str()
            })
            .collect();
        assert_eq!(sale.len(), 1, "{txn}");
        assert_eq!(sale[0]["data"]["amount_cents"], 1000 + i as i64);
        let commission_id = &sale[0]["data"]["commission_id"];
        let commission: Vec<&Value> = got
            .iter()
            .filter(|m| m["type"] == "commission.created" && m["data"]["id"] == *commission_id)
            .collect();
        assert_eq!(commission.len(), 1, "{txn}");
        assert_eq!(commission[0]["data"]["transaction_id"], txn.as_str());
    }
    assert!(
        got.iter().all(|m| !m.to_string().contains("\"q-")),
        "no message of the program without endpoints"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_sale_events WHERE processor_event_id LIKE 'q-%'")
            .await,
        N as i64
    );
}

on_both_backends!(failed_attempts_follow_the_schedule_then_fail);
async fn failed_attempts_follow_the_schedule_then_fail(app: TestApp) {
    let clock = Arc::new(ManualClock::default());
    let app = app.with_private_webhooks(clock.clone());
    let seed = app.seed().await;
    let rx = Receiver::start(Answer::Fail).await;
    let id = endpoint(&app, seed.program_id, &rx, &["lead.created"]).await;
    app.lead(&seed, "k1").await;
    let worker = Worker::new(app.state.app.clone());
    let first = clock.now_ms();
    assert_eq!(worker.run_once().await.unwrap(), 1);
    let delays = [
        5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000,
    ];
    for (n, delay) in delays.iter().enumerate() {
        let d = deliveries(&app, id).await.remove(0);
        assert_eq!(d["status"], "pending");
        assert_eq!(d["attempts"].as_array().unwrap().len(), n + 1);
        assert_eq!(d["next_attempt_at"], iso(clock.now_ms() + delay));
        clock.advance(delay - 1);
        assert_eq!(
            worker.run_once().await.unwrap(),
            0,
            "attempt {} too early",
            n + 2
        );
        clock.advance(1);
        assert_eq!(worker.run_once().await.unwrap(), 1, "attempt {}", n + 2);
    }
    let d = deliveries(&app, id).await.remove(0);
    assert_eq!(d["status"], "failed");
    assert_eq!(d["next_attempt_at"], Value::Null);
    let attempts = d["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 8);
    assert!(clock.now_ms() - first > DAY, "retried for more than a day");
    for a in attempts {
        assert_eq!(a["status_code"], 500);
        assert_eq!(a["error"], "HTTP 500");
    }
    let received = rx.received();
    assert_eq!(received.len(), 8);
    assert!(
        received
            .iter()
            .all(|r| r.id == received[0].id && r.raw == received[0].raw),
        "same id and body each time"
    );
    clock.advance(10 * DAY);
    assert_eq!(worker.run_once().await.unwrap(), 0);
    let e = listed_endpoint(&app, seed.program_id, id).await;
    assert_eq!(e["enabled"], true, "failing for 27.6 h, not 5 days");
    assert_eq!(e["failing_since"], iso(first));

    // Sent again by hand, with the same message id, and delivered.
    rx.set_answer(Answer::Ok);
    let delivery_id = d["id"].as_i64().unwrap();
    let r = app
        .admin(
            "POST",
            &format!("/webhooks/{id}/deliveries/{delivery_id}/retry"),
            None,
        )
        .await
        .expect(202);
    assert_eq!(r.body["status"], "pending");
    assert_eq!(r.body["next_attempt_at"], iso(clock.now_ms()));
    assert_eq!(worker.run_once().await.unwrap(), 1);
    let d = deliveries(&app, id).await.remove(0);
    assert_eq!(d["status"], "delivered");
    assert_eq!(d["attempts"].as_array().unwrap().len(), 9);
    assert_eq!(rx.received().last().unwrap().id, received[0].id);
    assert_eq!(
        listed_endpoint(&app, seed.program_id, id).await["failing_since"],
        Value::Null
    );
    // A delivered one can be sent again too.
    app.admin(
        "POST",
        &format!("/webhooks/{id}/deliveries/{delivery_id}/retry"),
        None,
    )
    .await
    .expect(202);
    assert_eq!(worker.run_once().await.unwrap(), 1);
    assert_eq!(rx.received().len(), 10);
}

on_both_backends!(an_endpoint_failing_for_five_days_is_disabled);
async fn an_endpoint_failing_for_five_days_is_disabled(app: TestApp) {
    let clock = Arc::new(ManualClock::default());
    let app = app.with_private_webhooks(clock.clone());
    let seed = app.seed().await;
    let p = seed.program_id;
    let rx = Receiver::start(Answer::Fail).await;
    let id = endpoint(&app, p, &rx, &["lead.created"]).await;
    let worker = Worker::new(app.state.app.clone());
    let first = clock.now_ms();
    for day in 0..5 {
        app.lead(&seed, &format!("day-{day}")).await;
        assert!(worker.run_once().await.unwrap() >= 1);
        let e = listed_endpoint(&app, p, id).await;
        assert_eq!(e["enabled"], true, "day {day}");
        assert_eq!(e["failing_since"], iso(first));
        clock.advance(DAY);
    }
    // Five days after the first failure, the next one disables it.
    app.lead(&seed, "day-5").await;
    worker.run_once().await.unwrap();
    let e = listed_endpoint(&app, p, id).await;
    assert_eq!(e["enabled"], false);
    let reason = e["disabled_reason"].as_str().unwrap();
    assert!(
        reason.contains("5 days") && reason.contains("HTTP 500"),
        "{reason}"
    );
    // Disabled: no new message, nothing sent, nothing resent.
    let before = deliveries(&app, id).await;
    app.lead(&seed, "after").await;
    assert_eq!(deliveries(&app, id).await.len(), before.len());
    clock.advance(DAY);
    assert_eq!(worker.run_once().await.unwrap(), 0);
    let pending: Vec<&Value> = before.iter().filter(|d| d["status"] == "pending").collect();
    assert!(!pending.is_empty());
    assert!(
        pending.iter().all(|d| d["next_attempt_at"].is_null()),
        "off the schedule"
    );
    let pending_id = pending[0]["id"].as_i64().unwrap();
    let r = app
        .admin(
            "POST",
            &format!("/webhooks/{id}/deliveries/{pending_id}/retry"),
            None,
        )
        .await
        .expect(409);
    assert!(r.error().contains("disabled"), "{}", r.error());

    // Enabled again: its pending messages go out.
    rx.set_answer(Answer::Ok);
    let e = app
        .admin(
            "PATCH",
            &format!("/webhooks/{id}"),
            Some(json!({"enabled": true})),
        )
        .await
        .expect(200);
    assert_eq!(e.body["failing_since"], Value::Null);
    assert_eq!(e.body["disabled_reason"], Value::Null);
    assert_eq!(worker.run_once().await.unwrap(), pending.len());
    for d in deliveries(&app, id).await {
        assert_ne!(d["status"], "pending", "{d}");
    }
    assert_eq!(rx.bad(), Vec::<String>::new());
}

/// Waits up to `limit` for `done`.
async fn until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what} within {limit:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The first attempt's error of each of an endpoint's deliveries, once all `n` have one
/// recorded (within 5 s).
async fn first_errors(app: &TestApp, endpoint: i64, n: usize, what: &str) -> Vec<String> {
    let started = Instant::now();
    loop {
        let d = deliveries(app, endpoint).await;
        let tried: Vec<String> = d
            .iter()
            .filter_map(|d| d["attempts"][0]["error"].as_str().map(String::from))
            .collect();
        if tried.len() == n {
            return tried;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

on_both_backends!(hanging_closing_and_failing_endpoints_do_not_hold_up_others);
async fn hanging_closing_and_failing_endpoints_do_not_hold_up_others(app: TestApp) {
    let app = app.with_private_webhooks(Arc::new(SystemClock));
    let seed = app.seed().await;
    let p = seed.program_id;
    let (hang_url, _hang) = misbehaving(Misbehave::Hang).await;
    let (close_url, _close) = misbehaving(Misbehave::Close).await;
    let failing = Receiver::start(Answer::Fail).await;
    let good = Receiver::start(Answer::Ok).await;
    let hang = create(&app, p, &hang_url, json!(["lead.created"]))
        .await
        .expect(201)
        .body["id"]
        .as_i64()
        .unwrap();
    let close = create(&app, p, &close_url, json!(["lead.created"]))
        .await
        .expect(201)
        .body["id"]
        .as_i64()
        .unwrap();
    let fail = endpoint(&app, p, &failing, &["lead.created"]).await;
    endpoint(&app, p, &good, &["lead.created"]).await;
    let (_running, stop) = tokio::sync::watch::channel(false);
    let worker = tokio::spawn(Worker::new(app.state.app.clone()).run(stop));
    const LEADS: usize = 40;
    let started = Instant::now();
    for i in 0..LEADS {
        app.lead(&seed, &format!("k{i}")).await;
    }
    until(
        Duration::from_secs(5),
        "the good endpoint gets every message",
        || good.received().len() == LEADS,
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(8));
    // The tracking API answers at once meanwhile.
    let t = Instant::now();
    app.click(&seed.short_link).await;
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "a click took {:?}",
        t.elapsed()
    );
    until(
        Duration::from_secs(5),
        "the failing endpoint is tried",
        || failing.received().len() >= LEADS,
    )
    .await;
    let closed_errors = first_errors(&app, close, LEADS, "the closing endpoint is tried").await;
    assert!(
        closed_errors
            .iter()
            .all(|e| e.starts_with("request failed") || e.starts_with("connection failed")),
        "{closed_errors:?}"
    );
    // The receiver has every request; their attempts may still be on their way to the
    // database.
    let failed_errors = first_errors(
        &app,
        fail,
        LEADS,
        "the failing endpoint's attempts are recorded",
    )
    .await;
    assert!(
        failed_errors.iter().all(|e| e == "HTTP 500"),
        "{failed_errors:?}"
    );
    for d in deliveries(&app, fail).await {
        assert_eq!(d["status"], "pending");
    }
    // The hanging endpoint holds no more than its share, and its attempts end after
    // the time limit.
    tokio::time::sleep(Duration::from_secs(11)).await;
    let hung = deliveries(&app, hang).await;
    let tried: Vec<&Value> = hung
        .iter()
        .filter(|d| !d["attempts"].as_array().unwrap().is_empty())
        .collect();
    assert!(
        !tried.is_empty() && tried.len() <= PER_ENDPOINT,
        "{} tried at once",
        tried.len()
    );
    for d in tried {
        assert_eq!(d["attempts"][0]["error"], "timed out after 10 s", "{d}");
        assert_eq!(d["attempts"][0]["status_code"], Value::Null);
    }
    worker.abort();
    assert_eq!(good.bad(), Vec::<String>::new());
}

on_both_backends!(the_worker_holds_back_while_the_tracking_api_is_busy);
async fn the_worker_holds_back_while_the_tracking_api_is_busy(app: TestApp) {
    let app = app.with_private_webhooks(Arc::new(SystemClock));
    let seed = app.seed().await;
    let good = Receiver::start(Answer::Ok).await;
    endpoint(&app, seed.program_id, &good, &["lead.created"]).await;
    const LEADS: usize = 60;
    for i in 0..LEADS {
        app.lead(&seed, &format!("k{i}")).await;
    }
    // As many tracking calls under way as make the API busy.
    let load = app.state.app.load();
    let calls: Vec<_> = (0..reftrack::app::tracking::load::BUSY_FROM)
        .map(|_| load.tracking_call())
        .collect();
    let (_running, stop) = tokio::sync::watch::channel(false);
    let worker = tokio::spawn(Worker::new(app.state.app.clone()).run(stop));
    until(Duration::from_secs(5), "a first claim is delivered", || {
        !good.received().is_empty()
    })
    .await;
    // One claim of at most 16 per 100 ms: within 150 ms of seeing the first (which
    // may come late), three at the most; without holding back all 60 go at once.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let held = good.received().len();
    assert!(
        held <= 48,
        "{held} delivered while the tracking API was busy"
    );
    drop(calls);
    until(
        Duration::from_secs(5),
        "every message once the calls have ended",
        || good.received().len() == LEADS,
    )
    .await;
    worker.abort();
    assert_eq!(good.bad(), Vec::<String>::new());
}
