//! `reftrack verify`: figures recomputed from raw events match what the write path
//! stored after every kind of traffic, and any corruption is reported (library and CLI).

use crate::common::*;
use serde_json::{json, Value};

const SALE: &str = "/api/v1/track/sale";
const LEAD: &str = "/api/v1/track/lead";
const REFUND: &str = "/api/v1/track/refund";
const CLICK: &str = "/api/v1/track/click";

async fn report(app: &TestApp) -> reftrack::verify::Report {
    reftrack::verify::check(&*app.store).await.unwrap()
}

async fn lead(app: &TestApp, token: &str, click_id: &str, key: &str) {
    app.post_auth(
        LEAD,
        token,
        json!({"click_id": click_id, "customer_key": key}),
    )
    .await
    .expect(200);
}

async fn sale(app: &TestApp, token: &str, body: Value) -> Reply {
    app.post_auth(SALE, token, body).await.expect(200)
}

on_both_backends!(verify_is_clean_after_every_kind_of_traffic);
async fn verify_is_clean_after_every_kind_of_traffic(app: TestApp) {
    assert_clean(&report(&app).await);
    // Program A: 30 %, renewals never earn; program B: yen, flat ¥500.
    let a = app
        .seed_with(json!({"commission": {"type": "percentage", "percent": 30}, "recurring_commission_months": 0}))
        .await;
    let b = app
        .seed_with(json!({"currency": "jpy", "commission": {"type": "flat", "amount_cents": 500}}))
        .await;
    let (_, bob) = app.add_partner(&a, "bob").await;

    let c1 = app.click(&a.short_link).await;
    lead(&app, &a.api_token, &c1, "u1").await;
    sale(
        &app,
        &a.api_token,
        json!({"transaction_id": "t1", "amount_cents": 9999, "customer_key": "u1"}),
    )
    .await;
    let renewal = sale(&app, &a.api_token, json!({"transaction_id": "t2", "amount_cents": 2500, "customer_key": "u1", "is_recurring": true})).await;
    assert_eq!(renewal.body["commission_id"], Value::Null);
    // A sale in euros, converted at the day's rate.
    let today = reftrack::domain::time::day_of(app.state.app.now_ms());
    app.admin(
        "POST",
        "/exchange-rates",
        Some(json!({"rates": [{"date": today, "base": "eur", "quote": "usd", "rate": 1.1}]})),
    )
    .await
    .expect(200);
    sale(&app, &a.api_token, json!({"transaction_id": "t3", "amount_cents": 5000, "customer_key": "u1", "currency": "eur"})).await;
    app.post_auth(
        REFUND,
        &a.api_token,
        json!({"transaction_id": "t1", "refund_amount_cents": 1000}),
    )
    .await
    .expect(200);
    app.post_auth(REFUND, &a.api_token, json!({"transaction_id": "t3"}))
        .await
        .expect(200);
    app.post_auth(REFUND, &a.api_token, json!({"transaction_id": "t3"}))
        .await
        .expect(200);
    app.post_auth(
        REFUND,
        &a.api_token,
        json!({"transaction_id": "t2", "refund_amount_cents": 500}),
    )
    .await
    .expect(200);

    // Bob's lead, then a later click through Alice's link moves the customer (last
    // touch): the lead stays Bob's, the sale is Alice's.
    let c2 = app.click(&bob).await;
    lead(&app, &a.api_token, &c2, "u2").await;
    tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    let again = app
        .post(CLICK, json!({"affiliate_url": format!("https://shop.example/?aff={}", a.short_link), "existing_click_id": c2}))
        .await
        .expect(200);
    assert_eq!(again.body["click_id"].as_str(), Some(c2.as_str()));
    sale(
        &app,
        &a.api_token,
        json!({"transaction_id": "t4", "amount_cents": 1234, "customer_key": "u2"}),
    )
    .await;

    // Unattributed lead, browser-mode lead, and test events of every kind.
    app.post_auth(LEAD, &a.api_token, json!({"customer_key": "nobody"}))
        .await
        .expect(200);
    let c3 = app.click(&a.short_link).await;
    app.post(LEAD, json!({"click_id": c3, "customer_key": "u3"}))
        .await
        .expect(200);
    let test = json!({"test_mode": true, "program_id": a.program_id});
    app.post(
        CLICK,
        json!({"affiliate_url": "https://shop.example/", "additional_data": test}),
    )
    .await
    .expect(200);
    app.post(LEAD, json!({"customer_key": "tk", "additional_data": test}))
        .await
        .expect(200);
    app.post_auth(
        SALE,
        &a.api_token,
        json!({"transaction_id": "test_1", "amount_cents": 700, "additional_data": test}),
    )
    .await
    .expect(200);
    app.post_auth(
        REFUND,
        &a.api_token,
        json!({"transaction_id": "test_1", "additional_data": test}),
    )
    .await
    .expect(200);

    // A link made before its partner joins the program: its clicks count on the link
    // and in the rollups, not in the partner's later totals.
    let carol = app
        .admin(
            "POST",
            "/partners",
            Some(json!({"name": "Carol", "code": "carol"})),
        )
        .await
        .expect(201);
    app.admin("POST", "/links", Some(json!({"program_id": a.program_id, "partner_id": carol.body["id"], "short_link": "carol"}))).await.expect(201);
    app.click("carol").await;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    app.admin(
        "POST",
        &format!("/programs/{}/partners", a.program_id),
        Some(json!({"partner_id": carol.body["id"]})),
    )
    .await
    .expect(201);
    app.click("carol").await;

    // Yen: figures count whole yen, the program's minor unit.
    let c4 = app.click(&b.short_link).await;
    lead(&app, &b.api_token, &c4, "y1").await;
    sale(
        &app,
        &b.api_token,
        json!({"transaction_id": "y1", "amount_cents": 1000, "customer_key": "y1"}),
    )
    .await;
    app.post_auth(
        REFUND,
        &b.api_token,
        json!({"transaction_id": "y1", "refund_amount_cents": 300}),
    )
    .await
    .expect(200);

    let r = report(&app).await;
    assert_clean(&r);
    assert_eq!(r.counts.sales, 5);
    assert_eq!(r.counts.commissions, 4);
    assert_eq!(r.counts.refunded_sales, 4);
    assert_eq!(r.counts.clicks, 7);
    assert_eq!(r.counts.leads, 5);
    let json = r.to_json();
    assert_eq!(json["ok"], true);
    assert_eq!(json["checked"]["referral_links"], 4);

    // The migrations that created the partners' daily rollups and rescaled them computed
    // them for the events recorded before them the way the write path keeps them.
    let url = &app.database_url;
    reftrack_exec(url, "DELETE FROM partner_daily_rollups").await;
    assert!(!report(&app).await.ok());
    let migration = if url.starts_with("sqlite:") {
        include_str!("../../migrations/sqlite/0010_partner_rollups.sql")
    } else {
        include_str!("../../migrations/postgres/0010_partner_rollups.sql")
    };
    for statement in migration.split(';').filter(|s| s.contains("INSERT INTO")) {
        reftrack_exec(url, statement).await;
    }
    // Then migration 0026 moved them from hundredths to the program currency's units.
    let currencies = if url.starts_with("sqlite:") {
        include_str!("../../migrations/sqlite/0026_currencies.sql")
    } else {
        include_str!("../../migrations/postgres/0026_currencies.sql")
    };
    for statement in currencies
        .split(';')
        .filter(|s| s.contains("UPDATE partner_daily_rollups"))
    {
        reftrack_exec(url, statement).await;
    }
    assert_clean(&report(&app).await);
}

on_both_backends!(verify_reports_corrupted_figures_and_broken_invariants);
async fn verify_reports_corrupted_figures_and_broken_invariants(app: TestApp) {
    let seed = app.seed().await;
    let c = app.click(&seed.short_link).await;
    lead(&app, &seed.api_token, &c, "k").await;
    sale(
        &app,
        &seed.api_token,
        json!({"transaction_id": "t1", "amount_cents": 10000, "customer_key": "k"}),
    )
    .await;
    sale(
        &app,
        &seed.api_token,
        json!({"transaction_id": "t2", "amount_cents": 500, "customer_key": "k"}),
    )
    .await;
    assert_clean(&report(&app).await);

    let url = &app.database_url;
    reftrack_exec(url, "UPDATE daily_rollups SET clicks = clicks + 1").await;
    let r = report(&app).await;
    assert!(!r.ok());
    assert_eq!(r.drift.len(), 1, "{:?}", r.drift);
    let d = &r.drift[0];
    assert_eq!(
        (d.table, d.field, d.stored, d.recomputed),
        ("daily_rollups", "clicks", 2, 1)
    );
    assert_eq!(d.key["program_id"], seed.program_id);

    reftrack_exec(
        url,
        "UPDATE partner_programs SET total_sales = total_sales + 2",
    )
    .await;
    reftrack_exec(url, "UPDATE referral_links SET clicks = 0").await;
    reftrack_exec(url, "DELETE FROM commissions WHERE sale_id = (SELECT id FROM affiliate_sale_events WHERE processor_event_id = 't2')").await;
    reftrack_exec(url, "UPDATE affiliate_sale_events SET refunded_cents = 20000, unearned = 'partner_not_approved' WHERE processor_event_id = 't1'").await;
    let r = report(&app).await;
    let fields: Vec<(&str, &str)> = r.drift.iter().map(|d| (d.table, d.field)).collect();
    for expected in [
        ("daily_rollups", "clicks"),
        ("daily_rollups", "revenue_cents"),
        ("daily_rollups", "commission_cents"),
        ("partner_programs", "total_sales"),
        ("partner_programs", "total_revenue_cents"),
        ("partner_programs", "total_commission_cents"),
        ("referral_links", "clicks"),
    ] {
        assert!(fields.contains(&expected), "{expected:?} not in {fields:?}");
    }
    let checks: Vec<(&str, &str)> = r
        .violations
        .iter()
        .map(|v| (v.check, v.key.as_str()))
        .collect();
    for expected in [
        ("sale_without_commission", "t2"),
        ("sale_refunded_beyond_amount", "t1"),
        ("sale_refund_status_mismatch", "t1"),
        ("unearned_sale_with_commission", "t1"),
    ] {
        assert!(checks.contains(&expected), "{expected:?} not in {checks:?}");
    }

    // The command: JSON on stdout, non-zero exit on drift.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_reftrack"))
        .arg("verify")
        .env("REFTRACK_DATABASE_URL", url)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["ok"], false);
    assert!(printed["drift"].as_array().unwrap().len() >= 7);
    assert!(printed["violations"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["check"] == "sale_without_commission"
            && v["transaction_id"] == "t2"
            && v["sale_id"].is_i64()));
}

on_both_backends!(verify_reports_clicks_and_customers_whose_references_do_not_resolve);
async fn verify_reports_clicks_and_customers_whose_references_do_not_resolve(app: TestApp) {
    // PostgreSQL keeps no foreign keys on the click path; this check stands in for them.
    let seed = app.seed().await;
    let first = app.click(&seed.short_link).await;
    let second = app.click(&seed.short_link).await;
    assert_clean(&report(&app).await);

    let url = &app.database_url;
    // SQLite keeps its foreign keys: switch them off to break the references.
    let unchecked = if url.starts_with("sqlite:") {
        "PRAGMA foreign_keys = OFF; "
    } else {
        ""
    };
    reftrack_exec(
        url,
        &format!("{unchecked}UPDATE customers SET link_id = 999999 WHERE click_id = '{first}'"),
    )
    .await;
    reftrack_exec(url, &format!("{unchecked}UPDATE affiliate_click_events SET customer_id = 999999 WHERE click_id = '{second}'")).await;
    let r = report(&app).await;
    assert!(!r.ok());
    let checks: Vec<(&str, &str, &str)> = r
        .violations
        .iter()
        .map(|v| (v.check, v.id_label, v.key.as_str()))
        .collect();
    assert_eq!(
        checks,
        vec![
            ("customer_reference_missing", "customer_id", first.as_str()),
            ("click_reference_missing", "click_event_id", second.as_str()),
        ]
    );
    let printed = r.to_json();
    assert!(printed["violations"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["check"] == "customer_reference_missing"
            && v["click_id"] == first.as_str()
            && v["customer_id"].is_i64()));
}

on_both_backends!(verify_command_exits_zero_on_a_healthy_database);
async fn verify_command_exits_zero_on_a_healthy_database(app: TestApp) {
    let seed = app.seed().await;
    let c = app.click(&seed.short_link).await;
    lead(&app, &seed.api_token, &c, "k").await;
    sale(
        &app,
        &seed.api_token,
        json!({"transaction_id": "t1", "amount_cents": 100, "customer_key": "k"}),
    )
    .await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_reftrack"))
        .args(["verify", "--database-url", &app.database_url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["ok"], true);
    assert_eq!(printed["checked"]["sale_events"], 1);
    assert_eq!(printed["checked"]["commissions"], 1);
}
