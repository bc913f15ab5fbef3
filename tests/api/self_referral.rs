//! Self-referrals: a sale whose customer has the partner's email (case and `+tag`
//! ignored) is flagged `self_referral` and stays pending until an owner approves it,
//! whatever the hold; the flag is in the commission lists (JSON and CSV) of the
//! management API and of the partner API.

use std::sync::Arc;

use crate::common::*;
use reftrack::domain::time::ManualClock;
use serde_json::{json, Value};

const DAY: i64 = 86_400_000;
/// 2026-03-02T10:00:00Z.
const START: i64 = 1_772_445_600_000;
const PASSWORD: &str = "correct horse battery";

/// The program's commissions, newest first, by transaction id.
async fn commission(app: &TestApp, seed: &Seed, txn: &str) -> Value {
    app.sale_commission(seed.program_id, txn).await
}

/// A customer of the seed's link who signed up as `key` with `email`.
async fn lead(app: &TestApp, seed: &Seed, key: &str, email: Option<&str>) {
    let click_id = app.click(&seed.short_link).await;
    let mut body = json!({"click_id": click_id, "customer_key": key});
    if let Some(e) = email {
        body["email"] = json!(e);
    }
    app.post_auth("/api/v1/track/lead", &seed.api_token, body)
        .await
        .expect(200);
}

async fn sale(app: &TestApp, seed: &Seed, body: Value) -> Value {
    app.post_auth("/api/v1/track/sale", &seed.api_token, body)
        .await
        .expect(200)
        .body
}

on_both_backends!(a_sale_to_the_partners_own_email_is_flagged_and_held_for_an_owner);
async fn a_sale_to_the_partners_own_email_is_flagged_and_held_for_an_owner(app: TestApp) {
    let clock = Arc::new(ManualClock::at(START));
    let app = app.with_clock(clock.clone());
    // No hold: an ordinary commission is due at once.
    let seed = app
        .seed_with(json!({"commission_hold_days": 0, "min_payout_cents": 0}))
        .await;
    app.admin("PATCH", &format!("/partners/{}", seed.partner_id),
        Some(json!({"email": "Alice@Example.com", "payout_method": "paypal", "payout_email": "pay@alice.example"})))
        .await
        .expect(200);

    // The lead's email, another case and a +tag: flagged. A plain sale, so also what
    // the committer would otherwise record set-based.
    lead(&app, &seed, "own", Some("alice+deal@example.COM")).await;
    sale(
        &app,
        &seed,
        json!({"transaction_id": "own-1", "amount_cents": 10000, "customer_key": "own"}),
    )
    .await;
    // The sale's own customer_email: flagged.
    lead(&app, &seed, "own2", None).await;
    sale(&app, &seed, json!({"transaction_id": "own-2", "amount_cents": 10000, "customer_key": "own2", "customer_email": "ALICE@example.com"})).await;
    // Someone else: not flagged.
    lead(&app, &seed, "bob", Some("bob@example.com")).await;
    sale(
        &app,
        &seed,
        json!({"transaction_id": "other", "amount_cents": 10000, "customer_key": "bob"}),
    )
    .await;
    lead(&app, &seed, "carol", None).await;
    sale(
        &app,
        &seed,
        json!({"transaction_id": "other-2", "amount_cents": 10000, "customer_key": "carol"}),
    )
    .await;

    clock.advance(DAY);
    for txn in ["own-1", "own-2"] {
        let c = commission(&app, &seed, txn).await;
        assert_eq!(c["flags"], json!(["self_referral"]), "{txn}");
        assert_eq!(
            c["status"], "pending",
            "{txn}: held whatever the hold period"
        );
        assert!(c["approved_at"].is_null());
    }
    for txn in ["other", "other-2"] {
        let c = commission(&app, &seed, txn).await;
        assert_eq!(c["flags"], json!([]), "{txn}");
        assert_eq!(c["status"], "approved", "{txn}");
    }
    // Filters, balances and the minute job agree.
    let r = app
        .admin(
            "GET",
            &format!("/programs/{}/commissions?status=pending", seed.program_id),
            None,
        )
        .await
        .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 2);
    let b = app
        .admin(
            "GET",
            &format!("/programs/{}/balances", seed.program_id),
            None,
        )
        .await
        .expect(200);
    assert_eq!(b.body["data"][0]["pending_cents"], 4000);
    assert_eq!(b.body["data"][0]["approved_cents"], 4000);
    app.state.app.approve_due_commissions().await.unwrap();
    assert_eq!(commission(&app, &seed, "own-1").await["status"], "pending");

    // A payout leaves them out.
    let p = app
        .admin(
            "POST",
            &format!("/programs/{}/payouts", seed.program_id),
            Some(json!({})),
        )
        .await
        .expect(201);
    assert_eq!(p.body["items"][0]["commission_count"], 2);
    assert!(commission(&app, &seed, "own-1").await["payout_id"].is_null());

    // An owner approves one: due, flag kept; the other can be rejected.
    let id = commission(&app, &seed, "own-1").await["id"]
        .as_i64()
        .unwrap();
    let r = app
        .admin("POST", &format!("/commissions/{id}/approve"), None)
        .await
        .expect(200);
    assert_eq!(r.body["status"], "approved");
    assert_eq!(r.body["flags"], json!(["self_referral"]));
    let id2 = commission(&app, &seed, "own-2").await["id"]
        .as_i64()
        .unwrap();
    app.admin(
        "POST",
        &format!("/commissions/{id2}/reject"),
        Some(json!({"reason": "self-referral"})),
    )
    .await
    .expect(200);

    // The CSV export carries the flags.
    let r = app
        .admin(
            "GET",
            &format!("/programs/{}/commissions?format=csv", seed.program_id),
            None,
        )
        .await
        .expect(200);
    let text = r.body.as_str().unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    let flags_at = header
        .iter()
        .position(|h| h == "flags")
        .expect("a flags column");
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let flags_of = |txn: &str| rows.iter().find(|r| &r[3] == txn).unwrap()[flags_at].to_string();
    assert_eq!(flags_of("own-1"), "self_referral");
    assert_eq!(flags_of("own-2"), "self_referral");
    assert_eq!(flags_of("other"), "");

    // The partner sees its own commissions with their flags, in JSON and CSV.
    let invite = app.invite_token(seed.partner_id, "alice@example.com").await;
    let token = app
        .post(
            "/api/partner/auth/accept-invite",
            json!({"token": invite, "password": PASSWORD}),
        )
        .await
        .expect(200)
        .body["token"]
        .as_str()
        .unwrap()
        .to_string();
    let auth = format!("Bearer {token}");
    let r = app
        .send(
            "GET",
            &format!("/api/partner/programs/{}/commissions", seed.program_id),
            None,
            &[("authorization", &auth)],
        )
        .await
        .expect(200);
    let own = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["transaction_id"] == "own-1")
        .unwrap()
        .clone();
    assert_eq!(own["flags"], json!(["self_referral"]));
    let r = app
        .send(
            "GET",
            &format!(
                "/api/partner/programs/{}/commissions?format=csv",
                seed.program_id
            ),
            None,
            &[("authorization", &auth)],
        )
        .await
        .expect(200);
    assert!(r.body.as_str().unwrap().contains("self_referral"));
}

on_both_backends!(every_partner_email_counts_and_old_rows_are_still_checked);
async fn every_partner_email_counts_and_old_rows_are_still_checked(app: TestApp) {
    let seed = app.seed().await;
    // The sign-in email of an invited partner counts as much as its contact email.
    let invite = app
        .invite_token(seed.partner_id, "alice@shop.example")
        .await;
    app.post(
        "/api/partner/auth/accept-invite",
        json!({"token": invite, "password": PASSWORD}),
    )
    .await
    .expect(200);
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"email": "contact@alice.example"})),
    )
    .await
    .expect(200);
    lead(&app, &seed, "k1", Some("Alice+x@Shop.Example")).await;
    sale(
        &app,
        &seed,
        json!({"transaction_id": "t1", "amount_cents": 1000, "customer_key": "k1"}),
    )
    .await;
    assert_eq!(
        commission(&app, &seed, "t1").await["flags"],
        json!(["self_referral"])
    );

    // Batches of plain sales: the others stay unflagged (the set-based statement may
    // take them), the partner's own is flagged (its keys match: left to the flow).
    for i in 0..6 {
        lead(
            &app,
            &seed,
            &format!("n{i}"),
            Some(&format!("n{i}@example.com")),
        )
        .await;
    }
    lead(&app, &seed, "own", Some("CONTACT@alice.example")).await;
    let mut sales = Vec::new();
    for key in ["n0", "n1", "own", "n2", "n3", "n4", "n5"] {
        let body = json!({"transaction_id": format!("b-{key}"), "amount_cents": 1000, "customer_key": key});
        sales.push(app.post_auth("/api/v1/track/sale", &seed.api_token, body));
    }
    for r in futures::future::join_all(sales).await {
        r.expect(200);
    }
    assert_eq!(
        commission(&app, &seed, "b-own").await["flags"],
        json!(["self_referral"])
    );
    for i in 0..6 {
        assert_eq!(
            commission(&app, &seed, &format!("b-n{i}")).await["flags"],
            json!([])
        );
    }

    // Emails stored before they had their comparison keys are still checked: a
    // customer's, then a partner's.
    lead(&app, &seed, "k2", Some("contact@alice.example")).await;
    reftrack_exec(&app.database_url, "UPDATE customers SET email_key = NULL").await;
    sale(
        &app,
        &seed,
        json!({"transaction_id": "t2", "amount_cents": 1000, "customer_key": "k2"}),
    )
    .await;
    assert_eq!(
        commission(&app, &seed, "t2").await["flags"],
        json!(["self_referral"])
    );
    lead(&app, &seed, "k3", Some("ALICE@shop.example")).await;
    reftrack_exec(
        &app.database_url,
        "UPDATE partners SET email_key = NULL, account_email_key = NULL",
    )
    .await;
    sale(
        &app,
        &seed,
        json!({"transaction_id": "t3", "amount_cents": 1000, "customer_key": "k3"}),
    )
    .await;
    assert_eq!(
        commission(&app, &seed, "t3").await["flags"],
        json!(["self_referral"])
    );
    let report = reftrack::verify::check(&*app.store).await.unwrap();
    assert!(
        report.ok(),
        "{}",
        serde_json::to_string_pretty(&report.to_json()).unwrap()
    );
}
