//! Lead rewards and bonuses: a group's lead reward pays an attributed customer's first
//! lead once (never a test lead, never a partner who is not approved), the self-referral
//! rule holds it, a change applies to later leads; an owner's bonus is approved at once,
//! counted in the figures and paid with the next payout, with its audit entry and its
//! `commission.created` event.

use std::sync::Arc;

use crate::common::*;
use reftrack::domain::time::ManualClock;
use serde_json::{json, Value};

/// 2026-03-02T10:00:00Z.
const START: i64 = 1_772_445_600_000;

async fn default_group(app: &TestApp, seed: &Seed) -> i64 {
    let r = app
        .admin(
            "GET",
            &format!("/programs/{}/groups", seed.program_id),
            None,
        )
        .await
        .expect(200);
    r.body["data"][0]["id"].as_i64().unwrap()
}

async fn set_lead_reward(app: &TestApp, group_id: i64, cents: Option<i64>) {
    let lead = cents.map_or(Value::Null, |c| json!({"type": "flat", "amount_cents": c}));
    app.admin(
        "PATCH",
        &format!("/groups/{group_id}"),
        Some(
            json!({"rewards": {"sale": {"type": "percentage", "percent": 20},
            "lead": lead}}),
        ),
    )
    .await
    .expect(200);
}

async fn commissions(app: &TestApp, seed: &Seed) -> Vec<Value> {
    app.commission_rows(seed.program_id).await
}

async fn of_kind(app: &TestApp, seed: &Seed, kind: &str) -> Vec<Value> {
    let mut rows: Vec<Value> = commissions(app, seed)
        .await
        .into_iter()
        .filter(|c| c["kind"] == kind)
        .collect();
    rows.sort_by_key(|c| c["id"].as_i64());
    rows
}

/// A server-mode lead through `short_link` as `key`, with `email` when given.
async fn lead_through(
    app: &TestApp,
    seed: &Seed,
    short_link: &str,
    key: &str,
    email: Option<&str>,
) {
    let click_id = app.click(short_link).await;
    let mut body = json!({"click_id": click_id, "customer_key": key});
    if let Some(e) = email {
        body["email"] = json!(e);
    }
    app.post_auth("/api/v1/track/lead", &seed.api_token, body)
        .await
        .expect(200);
}

/// An endpoint of the program for `commission.created` (its deliveries count the events).
async fn commission_endpoint(app: &TestApp, seed: &Seed) {
    app.admin(
        "POST",
        &format!("/programs/{}/webhooks", seed.program_id),
        Some(json!({"url": "https://93.184.216.34/hooks/reftrack",
            "events": ["commission.created"]})),
    )
    .await
    .expect(201);
}

/// The `commission.created` deliveries made, whatever their commission.
async fn created_events(app: &TestApp) -> i64 {
    app.count("SELECT COUNT(*) FROM webhook_deliveries WHERE event_type = 'commission.created'")
        .await
}

on_both_backends!(a_lead_reward_pays_each_customers_first_lead_once);
async fn a_lead_reward_pays_each_customers_first_lead_once(app: TestApp) {
    let seed = app.seed().await;
    commission_endpoint(&app, &seed).await;
    let group = default_group(&app, &seed).await;
    // Without a lead reward, a lead earns nothing.
    lead_through(&app, &seed, &seed.short_link, "before", None).await;
    assert!(of_kind(&app, &seed, "lead").await.is_empty());

    set_lead_reward(&app, group, Some(200)).await;
    lead_through(&app, &seed, &seed.short_link, "k1", None).await;
    let leads = of_kind(&app, &seed, "lead").await;
    assert_eq!(leads.len(), 1, "{leads:?}");
    let c = &leads[0];
    assert_eq!(c["amount_cents"], 200);
    assert_eq!(c["currency"], "usd");
    assert_eq!(c["status"], "pending");
    assert_eq!(c["group_id"], group);
    assert_eq!(c["description"], "Lead: $2.00");
    assert_eq!(c["partner_id"], seed.partner_id);
    assert_eq!(c["sale_id"], Value::Null);
    assert_eq!(c["transaction_id"], Value::Null);
    assert_eq!(c["flags"], json!([]));

    // The same customer leading again is refused and earns nothing more.
    let r = app
        .post_auth(
            "/api/v1/track/lead",
            &seed.api_token,
            json!({"customer_key": "k1"}),
        )
        .await;
    assert_eq!(r.status, 400, "{:?}", r.body);
    // A test lead and a lead without attribution earn nothing.
    let click_id = app.click(&seed.short_link).await;
    app.post_auth(
        "/api/v1/track/lead",
        &seed.api_token,
        json!({"click_id": click_id, "customer_key": "t1",
            "additional_data": {"test_mode": true}}),
    )
    .await
    .expect(200);
    app.post_auth(
        "/api/v1/track/lead",
        &seed.api_token,
        json!({"customer_key": "nobody", "additional_data": {"program_id": seed.program_id}}),
    )
    .await
    .expect(200);
    assert_eq!(of_kind(&app, &seed, "lead").await.len(), 1);

    // A partner who is not approved earns nothing for its customers' leads.
    let (bob, bob_link) = app.add_partner(&seed, "bob").await;
    let click_id = app.click(&bob_link).await;
    app.admin(
        "PATCH",
        &format!("/programs/{}/partners/{bob}", seed.program_id),
        Some(json!({"status": "banned"})),
    )
    .await
    .expect(200);
    app.post_auth(
        "/api/v1/track/lead",
        &seed.api_token,
        json!({"click_id": click_id, "customer_key": "b1"}),
    )
    .await
    .expect(200);
    assert_eq!(of_kind(&app, &seed, "lead").await.len(), 1);

    // A change applies to later leads; the earlier commission keeps its amount.
    set_lead_reward(&app, group, Some(350)).await;
    lead_through(&app, &seed, &seed.short_link, "k2", None).await;
    let amounts: Vec<i64> = of_kind(&app, &seed, "lead")
        .await
        .iter()
        .map(|c| c["amount_cents"].as_i64().unwrap())
        .collect();
    assert_eq!(amounts, [200, 350]);
    // The customer's sale earns its sale commission besides.
    let sale = app
        .post_auth(
            "/api/v1/track/sale",
            &seed.api_token,
            json!({"transaction_id": "t-k1", "amount_cents": 10_000, "customer_key": "k1"}),
        )
        .await
        .expect(200);
    assert!(sale.body["commission_id"].is_i64());
    // The figures count the lead commissions on their day, and every invariant holds.
    let partner = app
        .count(&format!(
            "SELECT total_commission_cents FROM partner_programs WHERE partner_id = {}",
            seed.partner_id
        ))
        .await;
    assert_eq!(partner, 200 + 350 + 2_000);
    assert_clean(&reftrack::verify::check(&*app.store).await.unwrap());
    // A commission.created event for each lead commission and the sale's.
    assert_eq!(created_events(&app).await, 3);
}

on_both_backends!(the_self_referral_rule_holds_a_lead_commission);
async fn the_self_referral_rule_holds_a_lead_commission(app: TestApp) {
    let seed = app.seed().await;
    let group = default_group(&app, &seed).await;
    set_lead_reward(&app, group, Some(500)).await;
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"email": "alice@example.com"})),
    )
    .await
    .expect(200);
    lead_through(
        &app,
        &seed,
        &seed.short_link,
        "own",
        Some("Alice@Example.com"),
    )
    .await;
    let leads = of_kind(&app, &seed, "lead").await;
    assert_eq!(leads[0]["flags"], json!(["self_referral"]));
    assert_eq!(leads[0]["status"], "pending");
    let queue = app
        .admin(
            "GET",
            &format!("/programs/{}/commissions?flagged=true", seed.program_id),
            None,
        )
        .await
        .expect(200);
    assert_eq!(queue.body["data"].as_array().unwrap().len(), 1);
    // With the rule set to reject, the lead's commission is created rejected.
    app.admin(
        "PATCH",
        &format!("/programs/{}", seed.program_id),
        Some(json!({"fraud_rules": {"self_referral": "reject"}})),
    )
    .await
    .expect(200);
    lead_through(
        &app,
        &seed,
        &seed.short_link,
        "own2",
        Some("alice@example.com"),
    )
    .await;
    let leads = of_kind(&app, &seed, "lead").await;
    assert_eq!(leads[1]["status"], "rejected");
    assert_eq!(leads[1]["reject_reason"], "self_referral");
    assert_clean(&reftrack::verify::check(&*app.store).await.unwrap());
}

on_both_backends!(a_bonus_is_due_at_once_and_paid_with_the_next_payout);
async fn a_bonus_is_due_at_once_and_paid_with_the_next_payout(app: TestApp) {
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
    commission_endpoint(&app, &seed).await;
    let path = format!(
        "/programs/{}/partners/{}/bonuses",
        seed.program_id, seed.partner_id
    );
    // Refusals name the field, and write nothing.
    for (body, field) in [
        (
            json!({"amount_cents": 0, "description": "x"}),
            "amount_cents",
        ),
        (
            json!({"amount_cents": -5, "description": "x"}),
            "amount_cents",
        ),
        (
            json!({"amount_cents": 100, "description": "  "}),
            "description",
        ),
        (
            json!({"amount_cents": 100, "description": "x".repeat(501)}),
            "description",
        ),
    ] {
        let r = app
            .admin("POST", &path, Some(body.clone()))
            .await
            .expect(400);
        assert!(r.error().starts_with(field), "{body}: {}", r.error());
    }
    app.admin("POST", &path, Some(json!({"amount_cents": 100})))
        .await
        .expect(400);
    assert_eq!(of_kind(&app, &seed, "bonus").await.len(), 0);

    let r = app
        .admin(
            "POST",
            &path,
            Some(json!({"amount_cents": 2_500, "description": "Launch week"})),
        )
        .await
        .expect(201);
    let bonus = r.body.clone();
    assert_eq!(bonus["kind"], "bonus");
    assert_eq!(bonus["status"], "approved");
    assert_eq!(bonus["amount_cents"], 2_500);
    assert_eq!(bonus["group_id"], Value::Null);
    assert_eq!(bonus["sale_id"], Value::Null);
    assert_eq!(bonus["description"], "Bonus: Launch week");
    assert!(bonus["approved_at"].is_string());
    // Recorded in the audit log, with a commission.created event.
    let audit = app
        .admin(
            "GET",
            &format!(
                "/workspaces/{}/audit-log?action=bonus.created",
                seed.workspace_id
            ),
            None,
        )
        .await
        .expect(200);
    let entry = &audit.body["data"][0];
    assert_eq!(entry["target"]["type"], "commission");
    assert_eq!(entry["target"]["id"], bonus["id"]);
    assert_eq!(entry["details"]["amount_cents"], 2_500);
    assert_eq!(entry["details"]["description"], "Launch week");
    assert_eq!(created_events(&app).await, 1);
    // Due at once: a payout takes it without waiting for the hold.
    let payout = app
        .admin(
            "POST",
            &format!("/programs/{}/payouts", seed.program_id),
            None,
        )
        .await
        .expect(201);
    assert_eq!(payout.body["total_cents"], 2_500);
    assert_clean(&reftrack::verify::check(&*app.store).await.unwrap());

    // A partner not approved in the program, or not in it, gets none.
    let (bob, _) = app.add_partner(&seed, "bob").await;
    app.admin(
        "PATCH",
        &format!("/programs/{}/partners/{bob}", seed.program_id),
        Some(json!({"status": "banned"})),
    )
    .await
    .expect(200);
    let body = json!({"amount_cents": 100, "description": "x"});
    let r = app
        .admin(
            "POST",
            &format!("/programs/{}/partners/{bob}/bonuses", seed.program_id),
            Some(body.clone()),
        )
        .await
        .expect(409);
    assert!(r.error().contains("banned"), "{}", r.error());
    let outsider = app
        .admin(
            "POST",
            "/partners",
            Some(json!({"name": "Eve", "code": "eve"})),
        )
        .await
        .expect(201);
    app.admin(
        "POST",
        &format!(
            "/programs/{}/partners/{}/bonuses",
            seed.program_id, outsider.body["id"]
        ),
        Some(body.clone()),
    )
    .await
    .expect(404);
    app.admin("POST", "/programs/999/partners/1/bonuses", Some(body))
        .await
        .expect(404);
    assert_eq!(of_kind(&app, &seed, "bonus").await.len(), 1);
}

/// `reftrack commissions bonus` gives the API's bonus, with its refusals.
#[tokio::test]
async fn the_command_line_gives_a_bonus() {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::common::server::migrated_cli_db(dir.path());
    let admin = |args: &[&str]| {
        let admin: Vec<&str> = std::iter::once("admin")
            .chain(args.iter().copied())
            .collect();
        let (ok, out) = crate::common::server::cli(&db, &admin);
        assert!(ok, "{out}");
    };
    admin(&["create-workspace", "name=W"]);
    admin(&["create-program", "workspace_id:=1", "name=P"]);
    admin(&["create-partner", "name=A", "code=a"]);
    admin(&[
        "add-program-partner",
        "1",
        "partner_id:=1",
        "status=approved",
    ]);
    let bonus = |amount: &str| {
        crate::common::server::cli(
            &db,
            &[
                "commissions",
                "bonus",
                "1",
                "1",
                "--amount-cents",
                amount,
                "--description",
                "Webinar",
            ],
        )
    };
    let (ok, row) = bonus("700");
    assert!(ok, "{row}");
    assert_eq!(row["kind"], "bonus");
    assert_eq!(row["amount_cents"], 700);
    assert_eq!(row["description"], "Bonus: Webinar");
    let (ok, out) = bonus("0");
    assert!(!ok);
    assert!(out.to_string().contains("amount_cents"), "{out}");
}
