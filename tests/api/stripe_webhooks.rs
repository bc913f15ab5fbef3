//! `POST /api/webhooks/stripe/:programId` with Stripe-shaped
//! fixtures from `tests/fixtures/stripe/`, signed as Stripe signs them.

use crate::common::*;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

const SECRET: &str = "whsec_test_secret_0123456789";

fn fixture(name: &str, vars: &[(&str, &str)]) -> String {
    let mut text = std::fs::read_to_string(format!("tests/fixtures/stripe/{name}.json")).unwrap();
    for (k, v) in vars {
        text = text.replace(&format!("{{{{{k}}}}}"), v);
    }
    assert!(!text.contains("{{"), "unfilled placeholder in {name}");
    serde_json::from_str::<Value>(&text).expect("fixture is JSON");
    text
}

fn signature(secret: &str, t: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{body}").as_bytes());
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

async fn deliver(app: &TestApp, program_id: i64, body: &str) -> Reply {
    let header = signature(SECRET, chrono::Utc::now().timestamp(), body);
    deliver_with(app, program_id, body, Some(&header)).await
}

async fn deliver_with(app: &TestApp, program_id: i64, body: &str, header: Option<&str>) -> Reply {
    let mut req = axum::http::Request::post(format!("/api/webhooks/stripe/{program_id}"))
        .header("content-type", "application/json");
    if let Some(h) = header {
        req = req.header("stripe-signature", h);
    }
    app.raw(req.body(axum::body::Body::from(body.to_string())).unwrap())
        .await
}

/// A program with a webhook secret and a customer who clicked and signed up as `key`.
async fn setup(app: &TestApp, key: &str) -> (Seed, String) {
    let seed = app.seed_with(json!({"stripe_webhook_secret": SECRET, "commission": {"type": "percentage", "percent": 30}})).await;
    let click_id = app.lead(&seed, key).await;
    (seed, click_id)
}

fn meta(click_id: &str, key: &str, program_id: i64) -> String {
    json!({"tracker_click_id": click_id, "tracker_customer_key": key, "program_id": program_id.to_string()}).to_string()
}

fn outcome(r: &Reply) -> &str {
    r.body["outcome"]
        .as_str()
        .unwrap_or_else(|| panic!("{:?}", r.body))
}

on_both_backends!(checkout_payment_is_a_sale_once);
async fn checkout_payment_is_a_sale_once(app: TestApp) {
    let (seed, click_id) = setup(&app, "bob").await;
    let body = fixture(
        "checkout.session.completed.payment",
        &[
            ("CURRENCY", "usd"),
            ("METADATA", &meta(&click_id, "bob", seed.program_id)),
        ],
    );
    let r = deliver(&app, seed.program_id, &body).await.expect(200);
    assert_eq!(r.body["received"], true);
    assert_eq!(outcome(&r), "sale recorded");
    assert_eq!(app.count("SELECT COUNT(*) FROM affiliate_sale_events WHERE processor_event_id = 'pi_3QcsPayment0001' AND amount_cents = 4999 AND payment_intent_id = 'pi_3QcsPayment0001'").await, 1);
    assert_eq!(
        app.count("SELECT amount_cents FROM commissions").await,
        1500
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM customers WHERE customer_status = 'conversion'")
            .await,
        1
    );
    // Redelivery: 200, nothing changes.
    let r = deliver(&app, seed.program_id, &body).await.expect(200);
    assert!(outcome(&r).starts_with("duplicate event"));
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_sale_events")
            .await,
        1
    );
    assert_eq!(app.count("SELECT sales FROM daily_rollups").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM stripe_events").await, 1);
}

on_both_backends!(unverifiable_requests_are_400_and_store_nothing);
async fn unverifiable_requests_are_400_and_store_nothing(app: TestApp) {
    let (seed, click_id) = setup(&app, "bob").await;
    let body = fixture(
        "checkout.session.completed.payment",
        &[
            ("CURRENCY", "usd"),
            ("METADATA", &meta(&click_id, "bob", seed.program_id)),
        ],
    );
    let now = chrono::Utc::now().timestamp();
    let cases: Vec<(i64, Option<String>)> = vec![
        (seed.program_id, None),
        (seed.program_id, Some("garbage".into())),
        (seed.program_id, Some(signature("whsec_other", now, &body))),
        (seed.program_id, Some(signature(SECRET, now - 301, &body))),
        (
            seed.program_id,
            Some(signature(SECRET, now, &body.replace("4999", "9999"))),
        ),
        (999, Some(signature(SECRET, now, &body))),
    ];
    for (program, header) in cases {
        let r = deliver_with(&app, program, &body, header.as_deref())
            .await
            .expect(400);
        assert!(!r.error().is_empty());
    }
    // A program without a secret cannot receive webhooks.
    let other = app.seed().await;
    deliver(&app, other.program_id, &body).await.expect(400);
    // Signed garbage is refused too.
    deliver(&app, seed.program_id, "{\"not\": \"an event\"}")
        .await
        .expect(400);
    deliver(&app, seed.program_id, "not json").await.expect(400);
    assert_eq!(app.count("SELECT COUNT(*) FROM stripe_events").await, 0);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_sale_events")
            .await,
        0
    );
}

fn invoice(
    shape: &str,
    event: &str,
    invoice_id: &str,
    reason: &str,
    charge: &str,
    metadata: &str,
) -> String {
    fixture(
        shape,
        &[
            ("EVENT_ID", event),
            ("INVOICE_ID", invoice_id),
            ("BILLING_REASON", reason),
            ("CHARGE_ID", charge),
            ("PAYMENT_INTENT", &format!("pi_{invoice_id}")),
            ("METADATA", metadata),
        ],
    )
}

on_both_backends!(subscription_first_payment_counts_once_in_either_order);
async fn subscription_first_payment_counts_once_in_either_order(app: TestApp) {
    for invoice_first in [false, true] {
        let (seed, click_id) = setup(&app, "carol").await;
        let m = meta(&click_id, "carol", seed.program_id);
        let session = fixture(
            "checkout.session.completed.subscription",
            &[("METADATA", &m)],
        );
        let first = invoice(
            "invoice.payment_succeeded",
            "evt_first_inv",
            "in_1QcsFirst0001",
            "subscription_create",
            "ch_first",
            &m,
        );
        let order = if invoice_first {
            [&first, &session]
        } else {
            [&session, &first]
        };
        let a = deliver(&app, seed.program_id, order[0]).await.expect(200);
        let b = deliver(&app, seed.program_id, order[1]).await.expect(200);
        assert_eq!(outcome(&a), "sale recorded");
        assert_eq!(outcome(&b), "sale already recorded");
        let p = seed.program_id;
        assert_eq!(
            app.count(&format!(
                "SELECT COUNT(*) FROM affiliate_sale_events WHERE program_id = {p}"
            ))
            .await,
            1
        );
        assert_eq!(app.count(&format!("SELECT COUNT(*) FROM affiliate_sale_events WHERE program_id = {p} AND charge_id = 'ch_first' AND NOT is_recurring AND subscription_id = 'sub_1QcsSubscr0001'")).await, 1);
        // Clean the processed ids so the second round can reuse the fixtures.
        reftrack_exec(&app.database_url, "DELETE FROM stripe_events").await;
        reftrack_exec(
            &app.database_url,
            "UPDATE affiliate_sale_events SET processor_event_id = processor_event_id || '_old'",
        )
        .await;
    }
}

on_both_backends!(renewals_in_both_metadata_shapes_with_recurring_limits);
async fn renewals_in_both_metadata_shapes_with_recurring_limits(app: TestApp) {
    let (seed, click_id) = setup(&app, "carol").await;
    app.admin(
        "PATCH",
        &format!("/programs/{}", seed.program_id),
        Some(json!({"recurring_commission_months": null})),
    )
    .await
    .expect(200);
    let m = meta(&click_id, "carol", seed.program_id);
    // Renewal before the checkout session: recorded as recurring, credited, earning.
    let r = deliver(
        &app,
        seed.program_id,
        &invoice(
            "invoice.payment_succeeded",
            "evt_r1",
            "in_renew1",
            "subscription_cycle",
            "ch_r1",
            &m,
        ),
    )
    .await
    .expect(200);
    assert_eq!(outcome(&r), "sale recorded");
    let session = fixture(
        "checkout.session.completed.subscription",
        &[("METADATA", &m)],
    );
    assert_eq!(
        outcome(&deliver(&app, seed.program_id, &session).await.expect(200)),
        "sale recorded"
    );
    // The 2025 "basil" shape: metadata under parent.subscription_details.
    let basil = invoice(
        "invoice.payment_succeeded.basil",
        "evt_r2",
        "in_renew2",
        "subscription_cycle",
        "",
        &m,
    );
    assert_eq!(
        outcome(&deliver(&app, seed.program_id, &basil).await.expect(200)),
        "sale recorded"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM affiliate_sale_events WHERE is_recurring AND sale_type = 'subscription'").await, 2);
    assert_eq!(app.count("SELECT COUNT(*) FROM commissions").await, 3);
    // First payment only: a further renewal earns nothing.
    app.admin(
        "PATCH",
        &format!("/programs/{}", seed.program_id),
        Some(json!({"recurring_commission_months": 0})),
    )
    .await
    .expect(200);
    let r = deliver(
        &app,
        seed.program_id,
        &invoice(
            "invoice.payment_succeeded",
            "evt_r3",
            "in_renew3",
            "subscription_cycle",
            "ch_r3",
            &m,
        ),
    )
    .await
    .expect(200);
    assert_eq!(
        outcome(&r),
        "sale recorded without commission (recurring period ended)"
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM commissions").await, 3);
    // Refund of an invoice's charge reverses that renewal's commission.
    let refund = fixture(
        "charge.refunded",
        &[
            ("EVENT_ID", "evt_ref_r1"),
            ("CHARGE_ID", "ch_r1"),
            ("AMOUNT", "2000"),
            ("AMOUNT_REFUNDED", "2000"),
            ("INVOICE", "\"in_renew1\""),
            ("PAYMENT_INTENT", "pi_in_renew1"),
            ("FULLY", "true"),
        ],
    );
    assert_eq!(
        outcome(&deliver(&app, seed.program_id, &refund).await.expect(200)),
        "refund reversed"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM commissions WHERE status = 'reversed'")
            .await,
        1
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM affiliate_sale_events WHERE processor_event_id = 'in_renew1' AND payment_status = 'refunded'").await, 1);
}

on_both_backends!(charge_refunds_partial_then_full_like_the_refund_endpoint);
async fn charge_refunds_partial_then_full_like_the_refund_endpoint(app: TestApp) {
    let (seed, click_id) = setup(&app, "bob").await;
    let body = fixture(
        "checkout.session.completed.payment",
        &[
            ("CURRENCY", "usd"),
            ("METADATA", &meta(&click_id, "bob", seed.program_id)),
        ],
    );
    deliver(&app, seed.program_id, &body).await.expect(200);
    let refund = |event: &str, refunded: &str, fully: &str| {
        fixture(
            "charge.refunded",
            &[
                ("EVENT_ID", event),
                ("CHARGE_ID", "ch_3QcsPayment0001"),
                ("AMOUNT", "4999"),
                ("AMOUNT_REFUNDED", refunded),
                ("INVOICE", "null"),
                ("PAYMENT_INTENT", "pi_3QcsPayment0001"),
                ("FULLY", fully),
            ],
        )
    };
    let partial = refund("evt_ref1", "1000", "false");
    assert_eq!(
        outcome(&deliver(&app, seed.program_id, &partial).await.expect(200)),
        "refund refunded"
    );
    assert_eq!(
        app.count("SELECT reversed_cents FROM commissions").await,
        300
    );
    assert_eq!(
        app.count("SELECT revenue_cents FROM daily_rollups").await,
        3999
    );
    // Replayed, then a second event reporting the same cumulative amount: no effect.
    assert!(
        outcome(&deliver(&app, seed.program_id, &partial).await.expect(200))
            .starts_with("duplicate")
    );
    assert_eq!(
        outcome(
            &deliver(&app, seed.program_id, &refund("evt_ref1b", "1000", "false"))
                .await
                .expect(200)
        ),
        "refund already applied"
    );
    let full = refund("evt_ref2", "4999", "true");
    assert_eq!(
        outcome(&deliver(&app, seed.program_id, &full).await.expect(200)),
        "refund reversed"
    );
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM commissions WHERE status = 'reversed' AND reversed_cents = 1500"
        )
        .await,
        1
    );
    assert_eq!(
        app.count("SELECT revenue_cents + sales + commission_cents FROM daily_rollups")
            .await,
        0
    );
    // A charge no sale knows: ignored.
    let unknown = fixture(
        "charge.refunded",
        &[
            ("EVENT_ID", "evt_ref3"),
            ("CHARGE_ID", "ch_unknown"),
            ("AMOUNT", "100"),
            ("AMOUNT_REFUNDED", "100"),
            ("INVOICE", "null"),
            ("PAYMENT_INTENT", "pi_unknown"),
            ("FULLY", "true"),
        ],
    );
    assert!(
        outcome(&deliver(&app, seed.program_id, &unknown).await.expect(200)).starts_with("ignored")
    );
}

on_both_backends!(account_updated_sets_the_payment_account);
async fn account_updated_sets_the_payment_account(app: TestApp) {
    let (seed, _) = setup(&app, "bob").await;
    let event = |id: &str, charges: &str, details: &str| {
        fixture(
            "account.updated",
            &[
                ("EVENT_ID", id),
                ("CHARGES", charges),
                ("DETAILS", details),
                ("PAYOUTS", charges),
            ],
        )
    };
    assert_eq!(
        outcome(
            &deliver(&app, seed.program_id, &event("evt_a1", "false", "true"))
                .await
                .expect(200)
        ),
        "payment account pending"
    );
    let p = app
        .admin("GET", &format!("/programs/{}", seed.program_id), None)
        .await
        .expect(200);
    assert_eq!(p.body["payment_account"]["status"], "pending");
    assert!(p.body["payment_account"]["connection_date"].is_null());
    assert_eq!(
        outcome(
            &deliver(&app, seed.program_id, &event("evt_a2", "true", "true"))
                .await
                .expect(200)
        ),
        "payment account connected"
    );
    let p = app
        .admin("GET", &format!("/programs/{}", seed.program_id), None)
        .await
        .expect(200);
    assert_eq!(p.body["payment_account"]["status"], "connected");
    assert_eq!(
        p.body["payment_account"]["account_id"],
        "acct_1QcsConnect01"
    );
    assert_eq!(p.body["payment_account"]["charges_enabled"], true);
    assert!(p.body["payment_account"]["connection_date"].is_string());
}

on_both_backends!(zero_decimal_camel_case_and_ignored_events);
async fn zero_decimal_camel_case_and_ignored_events(app: TestApp) {
    let (seed, click_id) = setup(&app, "bob").await;
    let camel = json!({"trackerClickId": click_id, "trackerCustomerKey": "bob", "programId": seed.program_id.to_string()}).to_string();
    let today = reftrack::domain::time::day_of(app.state.app.now_ms());
    app.admin(
        "POST",
        "/exchange-rates",
        Some(json!({"rates": [{"date": today, "base": "usd", "quote": "jpy", "rate": 100}]})),
    )
    .await
    .expect(200);
    let body = fixture(
        "checkout.session.completed.payment",
        &[("CURRENCY", "jpy"), ("METADATA", &camel)],
    );
    assert_eq!(
        outcome(&deliver(&app, seed.program_id, &body).await.expect(200)),
        "sale recorded"
    );
    // ¥4999 is 4999 yen (a zero-decimal currency); at 100 yen to the dollar it counts
    // $49.99 in the dollar program, which earns 30 % of it.
    assert_eq!(app.count("SELECT COUNT(*) FROM affiliate_sale_events WHERE currency = 'jpy' AND amount_cents = 4999 AND converted_amount_cents = 4999").await, 1);
    assert_eq!(
        app.count("SELECT revenue_cents FROM daily_rollups").await,
        4_999
    );
    assert_eq!(
        app.count("SELECT commission_cents FROM daily_rollups")
            .await,
        1_500
    );
    // Unhandled types, metadata of another program, no metadata: 200, nothing recorded.
    let other = fixture(
        "checkout.session.completed.payment",
        &[
            ("CURRENCY", "usd"),
            ("METADATA", &meta(&click_id, "bob", 777)),
        ],
    )
    .replace("evt_1QcsPayment0001", "evt_other");
    assert!(
        outcome(&deliver(&app, seed.program_id, &other).await.expect(200))
            .contains("another program")
    );
    let none = fixture(
        "checkout.session.completed.payment",
        &[("CURRENCY", "usd"), ("METADATA", "{}")],
    )
    .replace("evt_1QcsPayment0001", "evt_none");
    assert!(
        outcome(&deliver(&app, seed.program_id, &none).await.expect(200)).starts_with("ignored")
    );
    let unhandled = json!({"id": "evt_x", "object": "event", "type": "customer.created", "data": {"object": {"id": "cus_1", "object": "customer"}}}).to_string();
    assert_eq!(
        outcome(&deliver(&app, seed.program_id, &unhandled).await.expect(200)),
        "ignored: unhandled event type"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_sale_events")
            .await,
        1
    );
    // A large event (over the 64 KiB API limit) is accepted.
    let big = fixture(
        "checkout.session.completed.payment",
        &[
            ("CURRENCY", "usd"),
            ("METADATA", &meta(&click_id, "bob", seed.program_id)),
        ],
    )
    .replace("evt_1QcsPayment0001", "evt_big")
    .replace("pi_3QcsPayment0001", "pi_big")
    .replace(
        "\"locale\": null",
        &format!("\"locale\": null, \"padding\": \"{}\"", "x".repeat(200_000)),
    );
    assert_eq!(
        outcome(&deliver(&app, seed.program_id, &big).await.expect(200)),
        "sale recorded"
    );
}

on_both_backends!(webhook_program_matches_an_api_program);
async fn webhook_program_matches_an_api_program(app: TestApp) {
    // The same history through the tracking API and through webhooks gives the same
    // sales, commissions, refunds and figures.
    let (api, api_click) = setup(&app, "bob").await;
    let (hook, hook_click) = setup(&app, "bob").await;
    app.post_auth("/api/v1/track/sale", &api.api_token, json!({"transaction_id": "api_pi", "amount_cents": 4999, "click_id": api_click, "customer_key": "bob"})).await.expect(200);
    app.post_auth(
        "/api/v1/track/refund",
        &api.api_token,
        json!({"transaction_id": "api_pi", "refund_amount_cents": 1000}),
    )
    .await
    .expect(200);
    let body = fixture(
        "checkout.session.completed.payment",
        &[
            ("CURRENCY", "usd"),
            ("METADATA", &meta(&hook_click, "bob", hook.program_id)),
        ],
    );
    deliver(&app, hook.program_id, &body).await.expect(200);
    let refund = fixture(
        "charge.refunded",
        &[
            ("EVENT_ID", "evt_r"),
            ("CHARGE_ID", "ch_x"),
            ("AMOUNT", "4999"),
            ("AMOUNT_REFUNDED", "1000"),
            ("INVOICE", "null"),
            ("PAYMENT_INTENT", "pi_3QcsPayment0001"),
            ("FULLY", "false"),
        ],
    );
    deliver(&app, hook.program_id, &refund).await.expect(200);
    let figures = |p: i64| {
        format!(
        "SELECT clicks * 1000000000000 + leads * 100000000000 + conversions * 10000000000 + sales * 1000000000 + revenue_cents * 100000 + commission_cents FROM daily_rollups WHERE program_id = {p}"
    )
    };
    assert_eq!(
        app.count(&figures(api.program_id)).await,
        app.count(&figures(hook.program_id)).await
    );
    let totals = |p: i64| {
        format!("SELECT total_sales * 100000000 + total_revenue_cents * 10000 + total_commission_cents FROM partner_programs WHERE program_id = {p}")
    };
    assert_eq!(
        app.count(&totals(api.program_id)).await,
        app.count(&totals(hook.program_id)).await
    );
}

/// A paid checkout with the promotion code `promo`, the customer email `email` and the
/// attribution metadata `metadata`.
fn promotion_checkout(suffix: &str, promo: &str, email: &str, metadata: &str) -> String {
    fixture(
        "checkout.session.completed.promotion",
        &[
            ("EVENT_ID", &format!("evt_promo_{suffix}")),
            ("SUFFIX", suffix),
            ("PROMOTION_CODE", promo),
            ("EMAIL", email),
            ("METADATA", metadata),
        ],
    )
}

on_both_backends!(a_promotion_code_attributes_a_checkout_and_a_click_wins);
async fn a_promotion_code_attributes_a_checkout_and_a_click_wins(app: TestApp) {
    let (seed, click_id) = setup(&app, "bob").await;
    let link = app.link_id(&seed.short_link).await;
    app.admin(
        "POST",
        &format!("/links/{link}/coupons"),
        Some(json!({"code": "PODCAST20", "stripe_promotion_code": "promo_1Podcast"})),
    )
    .await
    .expect(201);
    let (carl, _) = app.add_partner(&seed, "carl").await;

    // No metadata: the promotion code names the coupon, whose partner earns.
    let body = promotion_checkout("A1", "promo_1Podcast", "dora@example.com", "{}");
    let r = deliver(&app, seed.program_id, &body).await.expect(200);
    assert_eq!(outcome(&r), "sale recorded");
    assert_eq!(app.count("SELECT c.partner_id FROM commissions c JOIN affiliate_sale_events s ON s.id = c.sale_id WHERE s.processor_event_id = 'pi_3QcsA1'").await, seed.partner_id);
    assert_eq!(app.count("SELECT c.amount_cents FROM commissions c JOIN affiliate_sale_events s ON s.id = c.sale_id WHERE s.processor_event_id = 'pi_3QcsA1'").await, 1200);

    // A promotion code no coupon has: not attributed, and Stripe is not asked to retry.
    let body = promotion_checkout("A2", "promo_unknown", "dora@example.com", "{}");
    let r = deliver(&app, seed.program_id, &body).await.expect(200);
    assert!(
        outcome(&r).starts_with("not attributed: Coupon code not found"),
        "{}",
        outcome(&r)
    );

    // The metadata's click wins over the promotion code of another partner's link.
    let carl_link = app.link_id("carl").await;
    app.admin(
        "POST",
        &format!("/links/{carl_link}/coupons"),
        Some(json!({"code": "CARL", "stripe_promotion_code": "promo_1Carl"})),
    )
    .await
    .expect(201);
    let body = promotion_checkout(
        "A3",
        "promo_1Carl",
        "bob@example.com",
        &meta(&click_id, "bob", seed.program_id),
    );
    let r = deliver(&app, seed.program_id, &body).await.expect(200);
    assert_eq!(outcome(&r), "sale recorded");
    assert_eq!(app.count("SELECT c.partner_id FROM commissions c JOIN affiliate_sale_events s ON s.id = c.sale_id WHERE s.processor_event_id = 'pi_3QcsA3'").await, seed.partner_id);

    // The checkout's customer email is the partner's own: flagged.
    app.admin(
        "PATCH",
        &format!("/partners/{carl}"),
        Some(json!({"email": "carl@example.com"})),
    )
    .await
    .expect(200);
    let body = promotion_checkout("A4", "promo_1Carl", "Carl+test@Example.com", "{}");
    deliver(&app, seed.program_id, &body).await.expect(200);
    let r = app
        .admin(
            "GET",
            &format!(
                "/programs/{}/commissions?partner_id={carl}",
                seed.program_id
            ),
            None,
        )
        .await
        .expect(200);
    assert_eq!(r.body["data"][0]["transaction_id"], "pi_3QcsA4");
    assert_eq!(r.body["data"][0]["flags"], json!(["self_referral"]));
}

on_both_backends!(processor_events_write_their_webhook_messages);
async fn processor_events_write_their_webhook_messages(app: TestApp) {
    let (seed, click_id) = setup(&app, "bob").await;
    let p = seed.program_id;
    // No worker runs here: the messages stay in the outbox, read from the delivery log.
    let endpoint = app
        .admin("POST", &format!("/programs/{p}/webhooks"), Some(json!({"url": "https://93.184.216.34/hook", "events": ["sale.created", "commission.created", "sale.refunded"]})))
        .await
        .expect(201);
    let id = endpoint.body["id"].as_i64().unwrap();
    let outbox = || async {
        let r = app
            .admin("GET", &format!("/webhooks/{id}/deliveries"), None)
            .await
            .expect(200);
        let mut types: Vec<String> = r.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["type"].as_str().unwrap().to_string())
            .collect();
        types.sort();
        types
    };
    let checkout = fixture(
        "checkout.session.completed.payment",
        &[
            ("CURRENCY", "usd"),
            ("METADATA", &meta(&click_id, "bob", p)),
        ],
    );
    deliver(&app, p, &checkout).await.expect(200);
    assert_eq!(outbox().await, ["commission.created", "sale.created"]);
    // A redelivered event changes nothing and reports nothing.
    deliver(&app, p, &checkout).await.expect(200);
    assert_eq!(outbox().await.len(), 2);
    let refund = fixture(
        "charge.refunded",
        &[
            ("EVENT_ID", "evt_refund_1"),
            ("CHARGE_ID", "ch_1"),
            ("AMOUNT", "4999"),
            ("AMOUNT_REFUNDED", "999"),
            ("INVOICE", "null"),
            ("PAYMENT_INTENT", "pi_3QcsPayment0001"),
            ("FULLY", "false"),
        ],
    );
    let r = deliver(&app, p, &refund).await.expect(200);
    assert_eq!(outcome(&r), "refund refunded");
    assert_eq!(
        outbox().await,
        ["commission.created", "sale.created", "sale.refunded"]
    );
}

on_both_backends!(a_checkouts_product_decides_the_reward);
async fn a_checkouts_product_decides_the_reward(app: TestApp) {
    let (seed, click_id) = setup(&app, "bob").await;
    let groups = app
        .admin(
            "GET",
            &format!("/programs/{}/groups", seed.program_id),
            None,
        )
        .await
        .expect(200);
    let group = groups.body["data"][0]["id"].as_i64().unwrap();
    app.admin(
        "PATCH",
        &format!("/groups/{group}"),
        Some(
            json!({"rewards": {"sale": {"type": "percentage", "percent": 30, "modifiers": [
            {"conditions": [{"attribute": "product_id", "operator": "eq",
             "value": "prod_enterprise"}], "type": "percentage", "percent": 40}]}}}),
        ),
    )
    .await
    .expect(200);
    let mut metadata: Value =
        serde_json::from_str(&meta(&click_id, "bob", seed.program_id)).unwrap();
    metadata["tracker_product_id"] = json!("prod_enterprise");
    let body = fixture(
        "checkout.session.completed.payment",
        &[("CURRENCY", "usd"), ("METADATA", &metadata.to_string())],
    );
    let r = deliver(&app, seed.program_id, &body).await.expect(200);
    assert_eq!(outcome(&r), "sale recorded");
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM affiliate_sale_events WHERE product_id = 'prod_enterprise'"
        )
        .await,
        1
    );
    // 40 % of $49.99, rounded half up.
    assert_eq!(
        app.count("SELECT amount_cents FROM commissions").await,
        2000
    );
}
