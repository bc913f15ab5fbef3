//! Paying partners: the commission lifecycle, balances, payouts and their exports.

use std::sync::Arc;

use crate::common::*;
use reftrack::domain::time::ManualClock;
use serde_json::{json, Value};

const DAY: i64 = 86_400_000;
/// 2026-03-02T10:00:00Z.
const START: i64 = 1_772_445_600_000;

/// A program with a 30-day hold and a 10.00 minimum, whose partner Alice has a payout
/// email; the service reads the time from the returned clock.
async fn setup(app: TestApp) -> (TestApp, Seed, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::at(START));
    let app = app.with_clock(clock.clone());
    let seed = app
        .seed_with(json!({"commission_hold_days": 30, "min_payout_cents": 1000}))
        .await;
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"payout_method": "paypal", "payout_email": "alice@example.com"})),
    )
    .await
    .expect(200);
    (app, seed, clock)
}

/// A sale of `amount` cents by a customer of `short_link` (20 % commission by default).
async fn sale(app: &TestApp, seed: &Seed, short_link: &str, txn: &str, amount: i64) {
    let click_id = app.click(short_link).await;
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": txn, "amount_cents": amount, "click_id": click_id}),
    )
    .await
    .expect(200);
}

async fn refund(app: &TestApp, seed: &Seed, txn: &str, amount: Option<i64>) -> Value {
    let mut body = json!({"transaction_id": txn});
    if let Some(a) = amount {
        body["refund_amount_cents"] = json!(a);
    }
    app.post_auth("/api/v1/track/refund", &seed.api_token, body)
        .await
        .expect(200)
        .body
}

async fn commissions(app: &TestApp, seed: &Seed, query: &str) -> Vec<Value> {
    let r = app
        .admin(
            "GET",
            &format!("/programs/{}/commissions{query}", seed.program_id),
            None,
        )
        .await
        .expect(200);
    r.body["data"].as_array().unwrap().clone()
}

/// The commission of `txn` (its sale commission, not a clawback).
async fn commission_of(app: &TestApp, seed: &Seed, txn: &str) -> Value {
    commissions(app, seed, "?limit=100")
        .await
        .into_iter()
        .find(|c| c["transaction_id"] == txn && c["kind"] == "sale")
        .unwrap_or_else(|| panic!("no commission of {txn}"))
}

async fn balance(app: &TestApp, seed: &Seed, partner_id: i64) -> (i64, i64, i64) {
    let r = app
        .admin(
            "GET",
            &format!("/programs/{}/balances", seed.program_id),
            None,
        )
        .await
        .expect(200);
    let row = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["partner_id"] == partner_id)
        .cloned()
        .unwrap_or_else(|| json!({"pending_cents": 0, "approved_cents": 0, "paid_cents": 0}));
    (
        row["pending_cents"].as_i64().unwrap(),
        row["approved_cents"].as_i64().unwrap(),
        row["paid_cents"].as_i64().unwrap(),
    )
}

fn parse_csv(text: &str, header: bool) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(header)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect()
}

fn csv_header(text: &str) -> Vec<String> {
    csv::Reader::from_reader(text.as_bytes())
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect()
}

on_both_backends!(the_approval_job_records_due_commissions_in_small_writes_and_misses_none);
async fn the_approval_job_records_due_commissions_in_small_writes_and_misses_none(app: TestApp) {
    let (app, seed, clock) = setup(app).await;
    for i in 0..5 {
        sale(&app, &seed, &seed.short_link, &format!("due{i}"), 1_000).await;
    }
    clock.advance(10 * DAY);
    sale(&app, &seed, &seed.short_link, "later", 1_000).await;
    clock.advance(20 * DAY);
    let recorded = "SELECT COUNT(*) FROM commissions WHERE status = 'approved'";
    assert_eq!(app.count(recorded).await, 0);
    // Two per write: three writes for the five whose hold has passed.
    assert_eq!(
        app.state.app.approve_due_commissions_by(2).await.unwrap(),
        5
    );
    assert_eq!(app.count(recorded).await, 5);
    assert_eq!(
        commission_of(&app, &seed, "later").await["status"],
        "pending"
    );
    assert_eq!(
        app.state.app.approve_due_commissions_by(2).await.unwrap(),
        0
    );
    clock.advance(10 * DAY);
    assert_eq!(app.state.app.approve_due_commissions().await.unwrap(), 1);
    assert_eq!(app.count(recorded).await, 6);
}

on_both_backends!(hold_approve_and_reject);
async fn hold_approve_and_reject(app: TestApp) {
    let (app, seed, clock) = setup(app).await;
    sale(&app, &seed, &seed.short_link, "t1", 10_000).await;
    let c1 = commission_of(&app, &seed, "t1").await;
    assert_eq!(c1["status"], "pending");
    assert_eq!(c1["amount_cents"], 2_000);
    assert_eq!(c1["kind"], "sale");
    assert!(c1["original_commission_id"].is_null() && c1["approved_at"].is_null());
    assert_eq!(balance(&app, &seed, seed.partner_id).await, (2_000, 0, 0));

    // An owner approves early; twice is a conflict.
    let id = c1["id"].as_i64().unwrap();
    let r = app
        .admin("POST", &format!("/commissions/{id}/approve"), None)
        .await
        .expect(200);
    assert_eq!(r.body["status"], "approved");
    assert_eq!(r.body["approved_at"], "2026-03-02T10:00:00.000Z");
    let r = app
        .admin("POST", &format!("/commissions/{id}/approve"), None)
        .await
        .expect(409);
    assert!(r.error().contains("approved"), "{}", r.error());

    // Rejection needs a reason, takes the commission out of the figures, and is final.
    sale(&app, &seed, &seed.short_link, "t2", 5_000).await;
    let c2 = commission_of(&app, &seed, "t2").await["id"]
        .as_i64()
        .unwrap();
    let path = format!("/commissions/{c2}/reject");
    app.admin("POST", &path, Some(json!({"reason": "  "})))
        .await
        .expect(400);
    app.admin("POST", &path, Some(json!({}))).await.expect(400);
    let r = app
        .admin("POST", &path, Some(json!({"reason": "test order"})))
        .await
        .expect(200);
    assert_eq!(r.body["status"], "rejected");
    assert_eq!(r.body["reject_reason"], "test order");
    app.admin("POST", &path, Some(json!({"reason": "again"})))
        .await
        .expect(409);
    app.admin("POST", &format!("/commissions/{c2}/approve"), None)
        .await
        .expect(409);
    let total = app
        .count(&format!(
            "SELECT total_commission_cents FROM partner_programs WHERE partner_id = {}",
            seed.partner_id
        ))
        .await;
    assert_eq!(
        total, 2_000,
        "the rejected commission left the partner's total"
    );
    let day = app
        .count("SELECT CAST(SUM(commission_cents) AS BIGINT) FROM daily_rollups")
        .await;
    assert_eq!(day, 2_000);
    assert_eq!(balance(&app, &seed, seed.partner_id).await, (0, 2_000, 0));

    // The hold passes: a read shows the commission approved, at the end of its hold.
    sale(&app, &seed, &seed.short_link, "t3", 1_000).await;
    assert_eq!(commission_of(&app, &seed, "t3").await["status"], "pending");
    clock.advance(30 * DAY - 1);
    assert_eq!(commission_of(&app, &seed, "t3").await["status"], "pending");
    clock.advance(1);
    let c3 = commission_of(&app, &seed, "t3").await;
    assert_eq!(c3["status"], "approved");
    assert_eq!(c3["approved_at"], "2026-04-01T10:00:00.000Z");
    let r = app
        .admin("POST", &format!("/commissions/{}/approve", c3["id"]), None)
        .await
        .expect(409);
    assert!(r.error().contains("approved"));
    assert_eq!(balance(&app, &seed, seed.partner_id).await, (0, 2_200, 0));
    // The job records it; nothing a reader sees changes.
    assert_eq!(app.state.app.approve_due_commissions().await.unwrap(), 1);
    assert_eq!(commission_of(&app, &seed, "t3").await, c3);

    // Filters.
    let approved = commissions(&app, &seed, "?status=approved").await;
    assert_eq!(approved.len(), 2);
    assert_eq!(commissions(&app, &seed, "?status=rejected").await.len(), 1);
    assert_eq!(commissions(&app, &seed, "?partner_id=999").await.len(), 0);
    assert_eq!(
        commissions(&app, &seed, "?from=2026-03-02&to=2026-03-02")
            .await
            .len(),
        3
    );
    assert_eq!(commissions(&app, &seed, "?from=2026-04-01").await.len(), 0);
    let p = seed.program_id;
    for (query, field) in [
        ("status=late", "status"),
        ("partner_id=x", "partner_id"),
        ("from=2026-02-30", "from"),
        ("to=yesterday", "to"),
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("cursor=abc", "cursor"),
        ("format=xml", "format"),
    ] {
        let r = app
            .admin("GET", &format!("/programs/{p}/commissions?{query}"), None)
            .await
            .expect(400);
        assert!(r.error().contains(field), "{query}: {}", r.error());
    }
    let r = app
        .admin(
            "GET",
            &format!("/programs/{p}/commissions?from=2026-03-03&to=2026-03-02"),
            None,
        )
        .await
        .expect(400);
    assert!(r.error().contains("from"));
    app.admin("GET", "/programs/999/commissions", None)
        .await
        .expect(404);
    app.admin("GET", "/programs/999/balances", None)
        .await
        .expect(404);
    app.admin("POST", "/commissions/999/approve", None)
        .await
        .expect(404);
    app.admin(
        "POST",
        "/commissions/999/reject",
        Some(json!({"reason": "x"})),
    )
    .await
    .expect(404);
    app.send(
        "GET",
        &format!("/api/admin/programs/{p}/commissions"),
        None,
        &[],
    )
    .await
    .expect(401);
    app.send("POST", "/api/admin/commissions/1/approve", None, &[])
        .await
        .expect(401);
}

on_both_backends!(cursor_pages_stay_stable_while_rows_arrive);
async fn cursor_pages_stay_stable_while_rows_arrive(app: TestApp) {
    let (app, seed, _clock) = setup(app).await;
    for i in 0..5 {
        sale(&app, &seed, &seed.short_link, &format!("p{i}"), 1_000).await;
    }
    let p = seed.program_id;
    let first = app
        .admin("GET", &format!("/programs/{p}/commissions?limit=2"), None)
        .await
        .expect(200);
    let ids = |v: &Value| {
        v["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["transaction_id"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&first.body), ["p4", "p3"]);
    // New rows arrive between pages: they are newer, so the next pages do not move.
    sale(&app, &seed, &seed.short_link, "p5", 1_000).await;
    let cursor = first.body["next_cursor"].as_str().unwrap().to_string();
    let second = app
        .admin(
            "GET",
            &format!("/programs/{p}/commissions?limit=2&cursor={cursor}"),
            None,
        )
        .await
        .expect(200);
    assert_eq!(ids(&second.body), ["p2", "p1"]);
    let cursor = second.body["next_cursor"].as_str().unwrap().to_string();
    let last = app
        .admin(
            "GET",
            &format!("/programs/{p}/commissions?limit=2&cursor={cursor}"),
            None,
        )
        .await
        .expect(200);
    assert_eq!(ids(&last.body), ["p0"]);
    assert!(last.body["next_cursor"].is_null());

    // The CSV export has every row, not a page, with its header.
    let r = app
        .admin(
            "GET",
            &format!("/programs/{p}/commissions?format=csv&limit=1"),
            None,
        )
        .await
        .expect(200);
    crate::common::assert_download(&r);
    let text = r.body.as_str().unwrap();
    assert_eq!(
        csv_header(text),
        reftrack::app::money::exports::COMMISSION_HEADER
    );
    let rows = parse_csv(text, true);
    assert_eq!(rows.len(), 6);
    assert_eq!(rows[0][3], "p5");
    assert_eq!(rows[0][5], "200");
    assert_eq!(rows[0][7], "pending");
}

on_both_backends!(payouts_from_creation_to_paid);
async fn payouts_from_creation_to_paid(app: TestApp) {
    let (app, seed, clock) = setup(app).await;
    let p = seed.program_id;
    // Bob has no payout email; Carol's balance stays under the minimum.
    let (bob, bob_link) = app.add_partner(&seed, "bob").await;
    let (carol, carol_link) = app.add_partner(&seed, "carol").await;
    app.admin(
        "PATCH",
        &format!("/partners/{carol}"),
        Some(json!({"payout_method": "wise", "payout_email": "carol@example.com"})),
    )
    .await
    .expect(200);
    sale(&app, &seed, &seed.short_link, "a1", 10_000).await; // 2000
    sale(&app, &seed, &seed.short_link, "a2", 2_500).await; // 500
    sale(&app, &seed, &bob_link, "b1", 10_000).await;
    sale(&app, &seed, &carol_link, "c1", 4_000).await; // 800 < 1000
                                                       // Nothing is due while the hold runs.
    let r = app
        .admin("POST", &format!("/programs/{p}/payouts"), Some(json!({})))
        .await
        .expect(409);
    assert!(r.error().contains("1000"), "{}", r.error());
    assert_eq!(
        app.count("SELECT COUNT(*) FROM payouts").await,
        0,
        "nothing half-written"
    );
    clock.advance(31 * DAY);

    let created = app
        .admin("POST", &format!("/programs/{p}/payouts"), None)
        .await
        .expect(201);
    let payout = created.body.clone();
    assert_eq!(payout["status"], "pending");
    assert_eq!(payout["currency"], "usd");
    assert_eq!(payout["total_cents"], 2_500);
    assert_eq!(
        payout["items"],
        json!([{
            "partner_id": seed.partner_id, "partner_name": "Alice", "payout_method": "paypal",
            "payout_email": "alice@example.com", "amount_cents": 2_500, "commission_count": 2,
        }])
    );
    let id = payout["id"].as_i64().unwrap();
    let held = commissions(&app, &seed, &format!("?partner_id={}", seed.partner_id)).await;
    assert!(held
        .iter()
        .all(|c| c["payout_id"] == id && c["status"] == "approved"));
    assert_eq!(balance(&app, &seed, seed.partner_id).await, (0, 2_500, 0));
    assert_eq!(balance(&app, &seed, bob).await, (0, 2_000, 0));
    // What a payout holds cannot be taken again or rejected.
    app.admin("POST", &format!("/programs/{p}/payouts"), None)
        .await
        .expect(409);
    let c = held[0]["id"].as_i64().unwrap();
    let r = app
        .admin(
            "POST",
            &format!("/commissions/{c}/reject"),
            Some(json!({"reason": "x"})),
        )
        .await
        .expect(409);
    assert!(r.error().contains("payout"));

    // Exports.
    let csv_of = |format: &str| {
        let path = format!("/payouts/{id}/export?format={format}");
        let app = &app;
        async move {
            let r = app.admin("GET", &path, None).await.expect(200);
            crate::common::assert_download(&r);
            assert!(r.headers["content-disposition"]
                .to_str()
                .unwrap()
                .contains(&format!("payout-{id}")));
            r.body.as_str().unwrap().to_string()
        }
    };
    let text = csv_of("csv").await;
    assert_eq!(
        csv_header(&text),
        reftrack::app::money::exports::ITEM_HEADER
    );
    let items = parse_csv(&text, true);
    assert_eq!(
        items,
        vec![vec![
            id.to_string(),
            seed.partner_id.to_string(),
            "Alice".into(),
            "paypal".into(),
            "alice@example.com".into(),
            "2500".into(),
            "usd".into(),
            "2".into()
        ]]
    );
    let paypal = parse_csv(&csv_of("paypal").await, false);
    assert_eq!(
        paypal,
        vec![vec![
            "alice@example.com".to_string(),
            "25.00".into(),
            "USD".into(),
            format!("payout-{id}-partner-{}", seed.partner_id),
            format!("Commissions (2) of payout {id}"),
            "PAYPAL".into()
        ]]
    );
    let wise = csv_of("wise").await;
    assert_eq!(
        csv_header(&wise),
        reftrack::app::money::exports::WISE_HEADER
    );
    assert_eq!(
        parse_csv(&wise, true),
        vec![vec![
            "Alice".to_string(),
            "alice@example.com".into(),
            format!("Payout {id}"),
            "PERSON".into(),
            "target".into(),
            "25.00".into(),
            "USD".into(),
            "USD".into()
        ]]
    );
    app.admin("GET", &format!("/payouts/{id}/export?format=xls"), None)
        .await
        .expect(400);
    app.admin("GET", "/payouts/999/export?format=csv", None)
        .await
        .expect(404);

    // Cancel, then pay again with a new payout.
    let r = app
        .admin("POST", &format!("/payouts/{id}/cancel"), None)
        .await
        .expect(200);
    assert_eq!(r.body["status"], "cancelled");
    assert!(r.body["cancelled_at"].is_string());
    app.admin("POST", &format!("/payouts/{id}/cancel"), None)
        .await
        .expect(409);
    app.admin("POST", &format!("/payouts/{id}/mark-paid"), None)
        .await
        .expect(409);
    assert!(commissions(&app, &seed, "")
        .await
        .iter()
        .all(|c| c["payout_id"].is_null()));
    let again = app
        .admin("POST", &format!("/programs/{p}/payouts"), None)
        .await
        .expect(201);
    let id2 = again.body["id"].as_i64().unwrap();
    assert_ne!(id2, id);
    assert_eq!(again.body["total_cents"], 2_500);
    app.admin(
        "POST",
        &format!("/payouts/{id2}/mark-paid"),
        Some(json!({"reference": "x".repeat(256)})),
    )
    .await
    .expect(400);
    let paid = app
        .admin(
            "POST",
            &format!("/payouts/{id2}/mark-paid"),
            Some(json!({"reference": "PP-123"})),
        )
        .await
        .expect(200);
    assert_eq!(paid.body["status"], "paid");
    assert_eq!(paid.body["reference"], "PP-123");
    assert!(paid.body["paid_at"].is_string());
    app.admin(
        "POST",
        &format!("/payouts/{id2}/mark-paid"),
        Some(json!({"reference": "again"})),
    )
    .await
    .expect(409);
    let r = app
        .admin("POST", &format!("/payouts/{id2}/cancel"), None)
        .await
        .expect(409);
    assert!(r.error().contains("paid"));
    let mine = commissions(&app, &seed, &format!("?partner_id={}", seed.partner_id)).await;
    assert!(mine
        .iter()
        .all(|c| c["status"] == "paid" && c["payout_id"] == id2 && c["paid_at"].is_string()));
    assert_eq!(commissions(&app, &seed, "?status=paid").await.len(), 2);
    assert_eq!(balance(&app, &seed, seed.partner_id).await, (0, 0, 2_500));
    app.admin(
        "POST",
        &format!("/commissions/{}/reject", mine[0]["id"]),
        Some(json!({"reason": "late"})),
    )
    .await
    .expect(409);

    // Bob gets an email: the next payout pays him; Carol is still under the minimum.
    app.admin(
        "PATCH",
        &format!("/partners/{bob}"),
        Some(json!({"payout_email": "bob@example.com"})),
    )
    .await
    .expect(200);
    let third = app
        .admin("POST", &format!("/programs/{p}/payouts"), None)
        .await
        .expect(201);
    assert_eq!(third.body["items"].as_array().unwrap().len(), 1);
    assert_eq!(third.body["items"][0]["partner_id"], bob);
    assert!(third.body["items"][0]["payout_method"].is_null());

    // Reads and lists.
    let got = app
        .admin("GET", &format!("/payouts/{id2}"), None)
        .await
        .expect(200);
    assert_eq!(got.body, paid.body);
    let list = app
        .admin("GET", &format!("/programs/{p}/payouts?limit=2"), None)
        .await
        .expect(200);
    let rows = list.body["data"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["id"], third.body["id"]);
    assert!(rows[0].get("items").is_none());
    let cursor = list.body["next_cursor"].as_str().unwrap();
    let rest = app
        .admin(
            "GET",
            &format!("/programs/{p}/payouts?limit=2&cursor={cursor}"),
            None,
        )
        .await
        .expect(200);
    assert_eq!(rest.body["data"][0]["id"], id);
    let export = app
        .admin("GET", &format!("/programs/{p}/payouts?format=csv"), None)
        .await
        .expect(200);
    crate::common::assert_download(&export);
    let text = export.body.as_str().unwrap();
    assert_eq!(
        csv_header(text),
        reftrack::app::money::exports::PAYOUT_HEADER
    );
    let rows = parse_csv(text, true);
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1][2], "paid");
    assert_eq!(rows[1][5], "PP-123");
    app.admin("GET", "/payouts/999", None).await.expect(404);
    app.admin("POST", "/programs/999/payouts", None)
        .await
        .expect(404);
    app.admin("POST", "/payouts/999/cancel", None)
        .await
        .expect(404);
    app.admin("GET", "/programs/999/payouts", None)
        .await
        .expect(404);
}

on_both_backends!(refunds_before_and_after_payment);
async fn refunds_before_and_after_payment(app: TestApp) {
    let (app, seed, clock) = setup(app).await;
    let p = seed.program_id;
    sale(&app, &seed, &seed.short_link, "r1", 10_000).await; // 2000
    sale(&app, &seed, &seed.short_link, "r2", 10_000).await; // 2000
    sale(&app, &seed, &seed.short_link, "r3", 10_000).await; // 2000
                                                             // Before payment: a partial refund shrinks the commission and keeps its status;
                                                             // a full one reverses it.
    let r = refund(&app, &seed, "r1", Some(2_500)).await;
    assert_eq!(r["status"], "refunded");
    let c1 = commission_of(&app, &seed, "r1").await;
    assert_eq!(
        (c1["amount_cents"].as_i64(), c1["status"].as_str()),
        (Some(1_500), Some("pending"))
    );
    refund(&app, &seed, "r2", None).await;
    let c2 = commission_of(&app, &seed, "r2").await;
    assert_eq!(
        (c2["amount_cents"].as_i64(), c2["status"].as_str()),
        (Some(0), Some("reversed"))
    );

    clock.advance(31 * DAY);
    let payout = app
        .admin("POST", &format!("/programs/{p}/payouts"), None)
        .await
        .expect(201);
    assert_eq!(payout.body["total_cents"], 3_500);
    // A refund while the payout holds the commission: a clawback, not a change to
    // what the payout pays.
    refund(&app, &seed, "r3", Some(5_000)).await;
    let id = payout.body["id"].as_i64().unwrap();
    app.admin(
        "POST",
        &format!("/payouts/{id}/mark-paid"),
        Some(json!({"reference": "B-1"})),
    )
    .await
    .expect(200);
    assert_eq!(
        commission_of(&app, &seed, "r3").await["amount_cents"],
        2_000
    );
    // After payment: a refund claws back, and its answer names the clawback.
    let answer = refund(&app, &seed, "r1", None).await;
    let all = commissions(&app, &seed, "").await;
    let clawbacks: Vec<&Value> = all.iter().filter(|c| c["kind"] == "clawback").collect();
    assert_eq!(clawbacks.len(), 2);
    for c in &clawbacks {
        assert_eq!(c["status"], "approved");
        assert!(c["payout_id"].is_null());
    }
    let r3 = commission_of(&app, &seed, "r3").await;
    let r1 = commission_of(&app, &seed, "r1").await;
    assert_eq!(r1["status"], "paid", "a paid commission stays paid");
    let of = |original: &Value| {
        clawbacks
            .iter()
            .find(|c| c["original_commission_id"] == original["id"])
            .unwrap()["amount_cents"]
            .as_i64()
            .unwrap()
    };
    assert_eq!(of(&r3), -1_000);
    assert_eq!(of(&r1), -1_500);
    let r1_clawback = clawbacks
        .iter()
        .find(|c| c["original_commission_id"] == r1["id"])
        .unwrap();
    assert_eq!(answer["clawback_commission_id"], r1_clawback["id"]);
    assert_eq!(answer["commission_id"], r1["id"]);
    assert_eq!(
        balance(&app, &seed, seed.partner_id).await,
        (0, -2_500, 3_500)
    );
    // Refunding the rest of r3 takes back the rest, and no more.
    refund(&app, &seed, "r3", None).await;
    assert_eq!(
        balance(&app, &seed, seed.partner_id).await,
        (0, -3_500, 3_500)
    );
    // The clawbacks net against the next payout: a new sale of 10000 earns 2000,
    // less 3500 owed, is under the minimum.
    sale(&app, &seed, &seed.short_link, "r4", 50_000).await; // 10000
    clock.advance(31 * DAY);
    let next = app
        .admin("POST", &format!("/programs/{p}/payouts"), None)
        .await
        .expect(201);
    assert_eq!(next.body["total_cents"], 6_500);
    assert_eq!(next.body["items"][0]["commission_count"], 4);
    // The figures and `reftrack verify` agree with the records.
    let total = app
        .count(&format!(
            "SELECT total_commission_cents FROM partner_programs WHERE partner_id = {}",
            seed.partner_id
        ))
        .await;
    assert_eq!(total, 10_000);
    let report = reftrack::verify::check(&*app.store).await.unwrap();
    assert!(report.ok(), "{}", report.to_json());
}

on_both_backends!(partners_patch_and_new_program_fields);
async fn partners_patch_and_new_program_fields(app: TestApp) {
    let seed = app.seed().await;
    let r = app
        .admin("GET", &format!("/programs/{}", seed.program_id), None)
        .await
        .expect(200);
    assert_eq!(r.body["commission_hold_days"], 30);
    assert_eq!(r.body["min_payout_cents"], 5_000);
    let path = format!("/programs/{}", seed.program_id);
    let r = app
        .admin(
            "PATCH",
            &path,
            Some(json!({"commission_hold_days": 0, "min_payout_cents": 0})),
        )
        .await
        .expect(200);
    assert_eq!(
        (
            r.body["commission_hold_days"].as_i64(),
            r.body["min_payout_cents"].as_i64()
        ),
        (Some(0), Some(0))
    );
    for body in [
        json!({"commission_hold_days": -1}),
        json!({"commission_hold_days": 3651}),
        json!({"min_payout_cents": -5}),
        json!({"min_payout_cents": 1.5}),
    ] {
        app.admin("PATCH", &path, Some(body)).await.expect(400);
    }
    let partner = format!("/partners/{}", seed.partner_id);
    let r = app.admin("PATCH", &partner, Some(json!({"name": "Alice B", "email": "A@x.io", "payout_method": "wise", "payout_email": "pay@x.io"}))).await.expect(200);
    assert_eq!(r.body["name"], "Alice B");
    assert_eq!(r.body["payout_method"], "wise");
    assert_eq!(r.body["payout_email"], "pay@x.io");
    let r = app
        .admin("PATCH", &partner, Some(json!({"payout_method": null})))
        .await
        .expect(200);
    assert!(r.body["payout_method"].is_null());
    assert_eq!(r.body["payout_email"], "pay@x.io", "absent fields stay");
    for (body, field) in [
        (json!({"payout_method": "cheque"}), "payout_method"),
        (json!({"payout_email": "nope"}), "payout_email"),
        (json!({"name": ""}), "name"),
        (json!({"email": "x"}), "email"),
        (json!({"colour": "red"}), "colour"),
    ] {
        let r = app.admin("PATCH", &partner, Some(body)).await.expect(400);
        assert!(r.error().contains(field), "{}", r.error());
    }
    app.admin("PATCH", "/partners/999", Some(json!({"name": "x"})))
        .await
        .expect(404);
}

on_both_backends!(concurrent_payouts_never_share_a_commission);
async fn concurrent_payouts_never_share_a_commission(app: TestApp) {
    let (app, seed, clock) = setup(app).await;
    let p = seed.program_id;
    for round in 0..6 {
        sale(&app, &seed, &seed.short_link, &format!("c{round}"), 10_000).await;
        clock.advance(31 * DAY);
        let path = format!("/programs/{p}/payouts");
        let (a, b) = tokio::join!(
            app.admin("POST", &path, None),
            app.admin("POST", &path, None)
        );
        let mut statuses = [a.status.as_u16(), b.status.as_u16()];
        statuses.sort();
        assert_eq!(statuses, [201, 409], "round {round}: {a:?} {b:?}");
    }
    assert_eq!(app.count("SELECT COUNT(*) FROM payouts").await, 6);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM commissions WHERE payout_id IS NULL")
            .await,
        0
    );
    assert_eq!(
        app.count("SELECT CAST(SUM(commission_count) AS BIGINT) FROM payout_items")
            .await,
        6
    );
}

on_both_backends!(only_approved_partners_earn_commission);
async fn only_approved_partners_earn_commission(app: TestApp) {
    let seed = app.seed_with(json!({"commission_hold_days": 0})).await;
    let p = seed.program_id;
    // An applicant (pending) with a link the owner made for it, a rejected partner and
    // a banned one.
    let r = app
        .admin(
            "POST",
            "/partners",
            Some(json!({"name": "Pat", "code": "pat"})),
        )
        .await
        .expect(201);
    let pat = r.body["id"].as_i64().unwrap();
    app.admin(
        "POST",
        &format!("/programs/{p}/partners"),
        Some(json!({"partner_id": pat, "status": "pending"})),
    )
    .await
    .expect(201);
    app.admin(
        "POST",
        "/links",
        Some(json!({"program_id": p, "partner_id": pat, "short_link": "pat"})),
    )
    .await
    .expect(201);
    let (rex, _) = app.add_partner(&seed, "rex").await;
    app.admin(
        "PATCH",
        &format!("/programs/{p}/partners/{rex}"),
        Some(json!({"status": "rejected"})),
    )
    .await
    .expect(200);
    let (bo, _) = app.add_partner(&seed, "bo").await;
    app.admin(
        "PATCH",
        &format!("/programs/{p}/partners/{bo}"),
        Some(json!({"status": "banned"})),
    )
    .await
    .expect(200);

    // Their sales are recorded and counted, without commission, whether they arrive
    // alone or together (a batch of sales resolves the plain ones at once).
    sale(&app, &seed, "pat", "t-pat", 10000).await;
    let mut sales = Vec::new();
    for (link, txn) in [
        ("rex", "t-rex"),
        ("bo", "t-bo"),
        ("rex", "t-rex-2"),
        ("bo", "t-bo-2"),
    ] {
        let click_id = app.click(link).await;
        let body = json!({"transaction_id": txn, "amount_cents": 5000, "click_id": click_id});
        sales.push(app.post_auth("/api/v1/track/sale", &seed.api_token, body));
    }
    for r in futures::future::join_all(sales).await {
        assert_eq!(r.status, 200);
        // The answer says why, and so does the sale, for `reftrack verify`.
        assert_eq!(r.body["commission_id"], Value::Null);
        assert_eq!(
            r.body["message"],
            "Sale tracked successfully; no commission: the partner is not approved in this program"
        );
    }
    let r = app
        .admin("GET", &format!("/programs/{p}/commissions"), None)
        .await
        .expect(200);
    assert_eq!(r.body["data"], json!([]), "no commission");
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM affiliate_sale_events WHERE unearned = 'partner_not_approved'"
        )
        .await,
        5
    );
    let r = app
        .admin("GET", &format!("/programs/{p}/partners"), None)
        .await
        .expect(200);
    for row in r.body["data"].as_array().unwrap() {
        if [pat, rex, bo].contains(&row["partner_id"].as_i64().unwrap()) {
            let sales = if row["partner_id"] == pat { 1 } else { 2 };
            assert_eq!(
                (row["sales"].as_i64(), row["revenue_cents"].as_i64()),
                (Some(sales), Some(10000)),
                "{row}"
            );
            assert_eq!(row["commission_cents"], 0, "{row}");
        }
    }
    let r = app
        .admin("GET", &format!("/programs/{p}/balances"), None)
        .await
        .expect(200);
    for row in r.body["data"].as_array().unwrap() {
        assert_eq!(
            row["pending_cents"].as_i64().unwrap() + row["approved_cents"].as_i64().unwrap(),
            0,
            "{row}"
        );
    }

    // Approved, the applicant earns on its next sale, and the approved seed partner
    // on each.
    app.admin(
        "PATCH",
        &format!("/programs/{p}/partners/{pat}"),
        Some(json!({"status": "approved"})),
    )
    .await
    .expect(200);
    sale(&app, &seed, "pat", "t-pat-2", 10000).await;
    sale(&app, &seed, &seed.short_link, "t-seed", 10000).await;
    let r = app
        .admin("GET", &format!("/programs/{p}/commissions"), None)
        .await
        .expect(200);
    let mut earners: Vec<i64> = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["partner_id"].as_i64().unwrap())
        .collect();
    earners.sort_unstable();
    let mut expected = vec![seed.partner_id, pat];
    expected.sort_unstable();
    assert_eq!(earners, expected);
    let report = reftrack::verify::check(&*app.store).await.unwrap();
    assert!(report.ok(), "{}", report.to_json());
}

on_both_backends!(a_sale_in_another_currency_is_paid_once_converted);
async fn a_sale_in_another_currency_is_paid_once_converted(app: TestApp) {
    let (app, seed, clock) = setup(app).await;
    let p = seed.program_id;
    sale(&app, &seed, &seed.short_link, "usd-1", 10_000).await; // 2000
    let sold_on = reftrack::domain::time::day_of(app.state.app.now_ms());
    let click_id = app.click(&seed.short_link).await;
    app.post_auth("/api/v1/track/sale", &seed.api_token, json!({"transaction_id": "eur-1", "amount_cents": 5_000, "currency": "EUR", "click_id": click_id}))
        .await
        .expect(200);
    clock.advance(31 * DAY);
    // No rate yet: the commission is in dollars, waits with amount 0, is not approved by
    // the hold, and neither balances nor payouts count it.
    let eur = commission_of(&app, &seed, "eur-1").await;
    assert_eq!(
        (eur["currency"].as_str(), eur["amount_cents"].as_i64()),
        (Some("usd"), Some(0))
    );
    assert_eq!(eur["awaiting_rate"], true);
    assert_eq!(eur["status"], "pending");
    assert_eq!(balance(&app, &seed, seed.partner_id).await, (0, 2_000, 0));
    let created = app
        .admin("POST", &format!("/programs/{p}/payouts"), None)
        .await
        .expect(201);
    assert_eq!(created.body["total_cents"], 2_000);
    assert_eq!(
        commission_of(&app, &seed, "eur-1").await["payout_id"],
        Value::Null
    );
    // The rate of the sale's day arrives: €50.00 is $55.00, 20 % of it $11.00, past its
    // hold, in the next payout.
    app.admin(
        "POST",
        "/exchange-rates",
        Some(json!({"rates": [{"date": sold_on, "base": "eur", "quote": "usd", "rate": 1.1}]})),
    )
    .await
    .expect(200);
    assert_eq!(app.state.app.convert_waiting_sales().await.unwrap(), 1);
    let eur = commission_of(&app, &seed, "eur-1").await;
    assert_eq!(eur["amount_cents"], 1_100);
    assert_eq!(eur["status"], "approved");
    assert_eq!(balance(&app, &seed, seed.partner_id).await, (0, 3_100, 0));
    let next = app
        .admin("POST", &format!("/programs/{p}/payouts"), None)
        .await
        .expect(201);
    assert_eq!(next.body["total_cents"], 1_100);
}
