//! The dashboard read endpoints: performance (ranges, trends, rounding), status and the
//! events list. History of today goes through the real tracking API; past days are
//! written with SQL (into `daily_rollups` and, for the events list, the event tables),
//! since every event the API records is "now".

use crate::common::*;
use chrono::{DateTime, Days, NaiveDate, Utc};
use reftrack::domain::figures::{Deltas, RollupDelta};
use reftrack_seed::sql::{SeedEngine, Seeder};
use serde_json::{json, Value};

const PASSWORD: &str = "correct horse battery";

/// A logged-in owner of the seed's workspace; returns the `Authorization` value.
async fn owner(app: &TestApp, seed: &Seed) -> String {
    let email = format!("owner{}@example.com", seed.workspace_id);
    app.member(seed.workspace_id, &email, PASSWORD, "owner")
        .await;
    let r = app.login(&email, PASSWORD).await.expect(200);
    format!("Bearer {}", r.body["token"].as_str().unwrap())
}

async fn get(app: &TestApp, auth: &str, path: &str) -> Reply {
    app.send("GET", path, None, &[("authorization", auth)])
        .await
}

fn today() -> NaiveDate {
    Utc::now().date_naive()
}

/// The day `n` days before today, as `YYYY-MM-DD`.
fn ago(n: u64) -> String {
    (today() - Days::new(n)).format("%Y-%m-%d").to_string()
}

/// Epoch ms of `HH:MM:SS.mmm` after the start of the day `n` days ago.
fn at(n: u64, h: i64, m: i64, s: i64, ms: i64) -> i64 {
    let start = (today() - Days::new(n))
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc()
        .timestamp_millis();
    start + ((h * 60 + m) * 60 + s) * 1000 + ms
}

/// Adds `r` to the rollup of `program_id` on `day` with the group committer's own code,
/// as the tracking writes would.
async fn add_rollup(app: &TestApp, program_id: i64, day: &str, r: RollupDelta) {
    let mut deltas = Deltas::default();
    *deltas.rollup(program_id, day.to_string()) = r;
    let url = &app.database_url;
    if url.starts_with("sqlite:") {
        apply_deltas::<sqlx::Sqlite>(url, &deltas).await;
    } else {
        apply_deltas::<sqlx::Postgres>(url, &deltas).await;
    }
}

async fn apply_deltas<DB: SeedEngine>(url: &str, deltas: &Deltas) {
    let mut s = Seeder::<DB>::connect(url).await.unwrap();
    s.apply_deltas(deltas).await.unwrap();
}

fn trend(v: &Value, name: &str) -> (f64, String) {
    let t = &v["metrics"][name];
    (
        t["trend"].as_f64().unwrap(),
        t["trendDirection"].as_str().unwrap().to_string(),
    )
}

fn num_text(v: &Value) -> String {
    v.to_string()
}

// ---------------------------------------------------------------------------------
// Performance
// ---------------------------------------------------------------------------------

async fn sale(app: &TestApp, seed: &Seed, txn: &str, cents: i64, key: &str) {
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": txn, "amount_cents": cents, "customer_key": key}),
    )
    .await
    .expect(200);
}

on_both_backends!(performance_from_the_tracking_api);
async fn performance_from_the_tracking_api(app: TestApp) {
    let seed = app.seed().await;
    let auth = owner(&app, &seed).await;
    let path = format!("/api/tracking/performance/{}", seed.program_id);

    let mut clicks = vec![];
    for _ in 0..4 {
        clicks.push(app.click(&seed.short_link).await);
    }
    for (i, key) in ["k1", "k2", "k3"].iter().enumerate() {
        app.post_auth(
            "/api/v1/track/lead",
            &seed.api_token,
            json!({"click_id": clicks[i], "customer_key": key}),
        )
        .await
        .expect(200);
    }
    sale(&app, &seed, "t1", 10_000, "k1").await;
    sale(&app, &seed, "t2", 5_055, "k2").await;
    sale(&app, &seed, "t3", 2_000, "k1").await; // a second sale: no new conversion
    sale(&app, &seed, "t4", 3_000, "k3").await;
    // Test events count nowhere.
    let aff = format!("https://shop.example/?aff={}", seed.short_link);
    let test = json!({"test_mode": true, "program_id": seed.program_id});
    app.post(
        "/api/v1/track/click",
        json!({"affiliate_url": aff, "additional_data": test}),
    )
    .await
    .expect(200);
    app.post(
        "/api/v1/track/lead",
        json!({"customer_key": "tk", "additional_data": test}),
    )
    .await
    .expect(200);
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"amount_cents": 99_999, "customer_key": "k1", "additional_data": {"test_mode": true}}),
    )
    .await
    .expect(200);

    // Before refunds. Commission is the default 20 %: 2000 + 1011 + 400 + 600.
    let r = get(&app, &auth, &path).await.expect(200);
    let m = &r.body["metrics"];
    assert_eq!(m["totalClicks"], 4);
    assert_eq!(m["totalLeads"], 3);
    assert_eq!(m["totalConversions"], 3);
    assert_eq!(num_text(&m["totalRevenue"]), "200.55");
    assert_eq!(m["totalSales"], 4);
    assert_eq!(num_text(&m["totalPartnersCommission"]), "40.11");
    assert_eq!(num_text(&m["averageOrderValue"]), "66.85"); // 200.55 / 3 = 66.85
    assert_eq!(m["totalPartners"], 1);

    // Partial refund of t2: revenue and commission drop in proportion, sales stay.
    app.post_auth(
        "/api/v1/track/refund",
        &seed.api_token,
        json!({"transaction_id": "t2", "refund_amount_cents": 1_000}),
    )
    .await
    .expect(200);
    let r = get(&app, &auth, &path).await.expect(200);
    assert_eq!(num_text(&r.body["metrics"]["totalRevenue"]), "190.55");
    assert_eq!(
        num_text(&r.body["metrics"]["totalPartnersCommission"]),
        "38.11"
    );
    assert_eq!(r.body["metrics"]["totalSales"], 4);
    // Full refund of t4: its revenue, sale and commission leave; the conversion stays.
    app.post_auth(
        "/api/v1/track/refund",
        &seed.api_token,
        json!({"transaction_id": "t4"}),
    )
    .await
    .expect(200);

    let r = get(&app, &auth, &path).await.expect(200);
    let b = &r.body;
    let m = &b["metrics"];
    assert_eq!(m["totalClicks"], 4);
    assert_eq!(m["totalLeads"], 3);
    assert_eq!(m["totalConversions"], 3);
    assert_eq!(num_text(&m["totalRevenue"]), "160.55");
    assert_eq!(m["totalSales"], 3);
    assert_eq!(num_text(&m["totalPartnersCommission"]), "32.11");
    assert_eq!(num_text(&m["conversionRate"]), "75.0");
    assert_eq!(num_text(&m["averageOrderValue"]), "53.52"); // 160.55 / 3 = 53.5166…
    assert_eq!(m["totalPartners"], 1);
    // Nothing in the previous week: every non-zero figure is 100 % up.
    for name in [
        "clicksTrend",
        "leadsTrend",
        "conversionsTrend",
        "revenueTrend",
        "partnersTrend",
        "salesTrend",
        "commissionTrend",
    ] {
        assert_eq!(trend(b, name), (100.0, "up".into()), "{name}");
    }

    // One entry per day of the 7 days ending today; empty days are zeros.
    let data = b["data"].as_array().unwrap();
    assert_eq!(data.len(), 7);
    for (i, entry) in data.iter().enumerate() {
        let day = ago(6 - i as u64);
        assert_eq!(entry["date"], day.as_str());
        assert_eq!(entry["period"], day.as_str());
        assert_eq!(entry["sales"], 0);
        if i < 6 {
            assert_eq!(
                entry,
                &json!({"date": day, "period": day, "clicks": 0, "leads": 0, "conversions": 0,
                        "revenue": 0.0, "partners": 0, "sales": 0, "commission": 0.0})
            );
        }
    }
    let t = &data[6];
    assert_eq!(t["clicks"], 4);
    assert_eq!(t["leads"], 3);
    assert_eq!(t["conversions"], 3);
    assert_eq!(num_text(&t["revenue"]), "160.55");
    assert_eq!(num_text(&t["commission"]), "32.11");
    assert_eq!(t["partners"], 1);

    // meta: the range and the previous window as timestamps.
    assert_eq!(b["meta"]["period"], "7d");
    assert_eq!(b["meta"]["dateFrom"], format!("{}T00:00:00.000Z", ago(6)));
    assert_eq!(b["meta"]["dateTo"], format!("{}T23:59:59.999Z", ago(0)));
    assert_eq!(
        b["meta"]["previousPeriod"]["dateFrom"],
        format!("{}T00:00:00.000Z", ago(13))
    );
    assert_eq!(
        b["meta"]["previousPeriod"]["dateTo"],
        format!("{}T23:59:59.999Z", ago(7))
    );

    // `all` starts on the program's creation day: today.
    let r = get(&app, &auth, &format!("{path}?period=all"))
        .await
        .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["meta"]["period"], "all");
    assert_eq!(r.body["metrics"]["totalClicks"], 4);
    assert_eq!(
        r.body["meta"]["previousPeriod"]["dateFrom"],
        format!("{}T00:00:00.000Z", ago(1))
    );
}

on_both_backends!(performance_trends_and_windows);
async fn performance_trends_and_windows(app: TestApp) {
    let seed = app.seed().await; // one partner record today
    let auth = owner(&app, &seed).await;
    let p = seed.program_id;
    let path = format!("/api/tracking/performance/{p}");
    // Current 7-day window: today-6 .. today. Previous: today-13 .. today-7.
    add_rollup(
        &app,
        p,
        &ago(1),
        RollupDelta {
            clicks: 25,
            leads: 4,
            conversions: 3,
            revenue_cents: 12_345,
            commission_cents: 60,
            ..RollupDelta::default()
        },
    )
    .await;
    add_rollup(
        &app,
        p,
        &ago(6),
        RollupDelta {
            clicks: 15,
            leads: 6,
            conversions: 2,
            commission_cents: 40,
            ..RollupDelta::default()
        },
    )
    .await;
    add_rollup(
        &app,
        p,
        &ago(7),
        RollupDelta {
            clicks: 20,
            leads: 15,
            conversions: 1,
            commission_cents: 200,
            ..RollupDelta::default()
        },
    )
    .await;
    add_rollup(
        &app,
        p,
        &ago(13),
        RollupDelta {
            clicks: 10,
            leads: 5,
            conversions: 4,
            commission_cents: 100,
            ..RollupDelta::default()
        },
    )
    .await;
    // Outside both windows.
    add_rollup(
        &app,
        p,
        &ago(14),
        RollupDelta {
            clicks: 1000,
            leads: 1000,
            conversions: 7,
            revenue_cents: 99_999,
            sales: 50,
            partners: 9,
            commission_cents: 5,
            ..RollupDelta::default()
        },
    )
    .await;
    // Another program's figures never leak in.
    let other = app.seed().await;
    add_rollup(
        &app,
        other.program_id,
        &ago(1),
        RollupDelta {
            clicks: 500,
            ..RollupDelta::default()
        },
    )
    .await;

    let r = get(&app, &auth, &path).await.expect(200);
    let b = &r.body;
    let m = &b["metrics"];
    assert_eq!(m["totalClicks"], 40);
    assert_eq!(m["totalLeads"], 10);
    assert_eq!(m["totalConversions"], 5);
    assert_eq!(num_text(&m["totalRevenue"]), "123.45");
    assert_eq!(m["totalSales"], 0);
    assert_eq!(num_text(&m["totalPartnersCommission"]), "1.0");
    assert_eq!(m["totalPartners"], 1);
    assert_eq!(num_text(&m["conversionRate"]), "12.5");
    assert_eq!(num_text(&m["averageOrderValue"]), "24.69");
    assert_eq!(trend(b, "clicksTrend"), (33.3, "up".into())); // 40 vs 30
    assert_eq!(trend(b, "leadsTrend"), (50.0, "down".into())); // 10 vs 20
    assert_eq!(trend(b, "conversionsTrend"), (0.0, "stable".into())); // 5 vs 5
    assert_eq!(trend(b, "revenueTrend"), (100.0, "up".into())); // previous 0
    assert_eq!(trend(b, "salesTrend"), (0.0, "stable".into())); // both 0
    assert_eq!(trend(b, "commissionTrend"), (66.7, "down".into())); // 100 vs 300
    assert_eq!(trend(b, "partnersTrend"), (100.0, "up".into()));
    let data = b["data"].as_array().unwrap();
    assert_eq!(data.len(), 7);
    assert_eq!(data[0]["date"], ago(6).as_str());
    assert_eq!(data[0]["clicks"], 15);
    assert_eq!(num_text(&data[0]["commission"]), "0.4");
    assert_eq!(data[5]["clicks"], 25);
    assert_eq!(num_text(&data[5]["revenue"]), "123.45");
    assert_eq!(data[5]["sales"], 0);
    assert_eq!(data[6]["partners"], 1);
    for (i, entry) in data.iter().enumerate().take(5).skip(1) {
        assert_eq!(entry["clicks"], 0, "{i}");
    }

    // A custom range: the previous week exactly, compared with the week before it.
    let r = get(
        &app,
        &auth,
        &format!("{path}?period=90d&dateFrom={}&dateTo={}", ago(13), ago(7)),
    )
    .await
    .expect(200);
    let b = &r.body;
    assert_eq!(b["meta"]["period"], "custom");
    assert_eq!(b["meta"]["dateFrom"], format!("{}T00:00:00.000Z", ago(13)));
    assert_eq!(b["meta"]["dateTo"], format!("{}T23:59:59.999Z", ago(7)));
    assert_eq!(
        b["meta"]["previousPeriod"]["dateFrom"],
        format!("{}T00:00:00.000Z", ago(20))
    );
    assert_eq!(
        b["meta"]["previousPeriod"]["dateTo"],
        format!("{}T23:59:59.999Z", ago(14))
    );
    assert_eq!(b["data"].as_array().unwrap().len(), 7);
    assert_eq!(b["metrics"]["totalClicks"], 30);
    assert_eq!(b["metrics"]["totalLeads"], 20);
    assert_eq!(trend(b, "clicksTrend"), (97.0, "down".into())); // 30 vs 1000
    assert_eq!(trend(b, "salesTrend"), (100.0, "down".into())); // 0 vs 50
    assert_eq!(num_text(&b["metrics"]["averageOrderValue"]), "0.0");

    // Timestamps count by their UTC date; a one-day range compares with the day before.
    let r = get(
        &app,
        &auth,
        &format!(
            "{path}?dateFrom={}T15:30:00Z&dateTo={}T01:00:00.000Z",
            ago(1),
            ago(1)
        ),
    )
    .await
    .expect(200);
    let b = &r.body;
    assert_eq!(b["data"].as_array().unwrap().len(), 1);
    assert_eq!(b["data"][0]["date"], ago(1).as_str());
    assert_eq!(b["metrics"]["totalClicks"], 25);
    assert_eq!(
        b["meta"]["previousPeriod"]["dateFrom"],
        format!("{}T00:00:00.000Z", ago(2))
    );
    assert_eq!(trend(b, "clicksTrend"), (100.0, "up".into()));

    // No clicks: conversion rate 0, not a division by zero.
    let r = get(
        &app,
        &auth,
        &format!("{path}?dateFrom={}&dateTo={}", ago(40), ago(35)),
    )
    .await
    .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 6);
    assert_eq!(num_text(&r.body["metrics"]["conversionRate"]), "0.0");
    assert_eq!(trend(&r.body, "clicksTrend"), (0.0, "stable".into()));

    // 30d and 90d windows.
    let r = get(&app, &auth, &format!("{path}?period=30d"))
        .await
        .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 30);
    assert_eq!(r.body["metrics"]["totalClicks"], 1070);
    assert_eq!(
        r.body["meta"]["previousPeriod"]["dateTo"],
        format!("{}T23:59:59.999Z", ago(30))
    );
    let r = get(&app, &auth, &format!("{path}?period=90d"))
        .await
        .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 90);
    assert_eq!(
        r.body["meta"]["dateFrom"],
        format!("{}T00:00:00.000Z", ago(89))
    );

    // `all`: the program was created today, so yesterday is the previous period.
    let r = get(&app, &auth, &format!("{path}?period=all"))
        .await
        .expect(200);
    assert_eq!(r.body["metrics"]["totalClicks"], 0);
    assert_eq!(trend(&r.body, "clicksTrend"), (100.0, "down".into())); // 0 vs 25

    // Invalid periods and dates: 400 with a JSON error.
    for q in [
        "period=5d".to_string(),
        "period=7D".to_string(),
        format!("dateFrom={}", ago(3)),
        format!("dateTo={}", ago(3)),
        format!("dateFrom={}&dateTo={}", ago(2), ago(3)),
        format!("dateFrom=yesterday&dateTo={}", ago(3)),
        "dateFrom=2026-02-30&dateTo=2026-03-02".to_string(),
        "dateFrom=2001-01-01&dateTo=2026-01-01".to_string(),
    ] {
        let r = get(&app, &auth, &format!("{path}?{q}")).await.expect(400);
        assert!(r.body["error"].is_string(), "{q}");
    }
}

// ---------------------------------------------------------------------------------
// Status
// ---------------------------------------------------------------------------------

fn parses_as_timestamp(v: &Value) -> i64 {
    DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("not a string: {v}")))
        .unwrap()
        .timestamp_millis()
}

on_both_backends!(status_steps_before_and_after_test_events);
async fn status_steps_before_and_after_test_events(app: TestApp) {
    let seed = app.seed().await;
    let auth = owner(&app, &seed).await;
    let path = format!("/api/tracking/status/{}", seed.program_id);

    let r = get(&app, &auth, &path).await.expect(200);
    let d = &r.body["data"];
    assert_eq!(d["programId"], seed.program_id.to_string());
    assert_eq!(
        d["stepStatuses"],
        json!({"pageview": "pending", "referrals": "pending", "payments": "pending"})
    );
    for step in ["pageview", "referrals"] {
        assert_eq!(
            d["statistics"][step],
            json!({"testEventCount": 0, "hasTestEvents": false, "latestTestEvent": null})
        );
    }
    assert_eq!(
        d["statistics"]["payments"],
        json!({
            "stripeConnectionStatus": "not_connected", "isStripeConnected": false,
            "stripeAccountId": null, "chargesEnabled": false, "payoutsEnabled": false,
            "detailsSubmitted": false, "connectionDate": null,
        })
    );
    assert_eq!(d["hasPartners"], true);
    let now = Utc::now().timestamp_millis();
    assert!((parses_as_timestamp(&d["lastUpdated"]) - now).abs() < 60_000);

    // Real events do not complete a step.
    app.lead(&seed, "real").await;
    let r = get(&app, &auth, &path).await.expect(200);
    assert_eq!(r.body["data"]["stepStatuses"]["pageview"], "pending");
    assert_eq!(r.body["data"]["stepStatuses"]["referrals"], "pending");

    // Twelve test clicks: the count stops at 10; the latest is the last one.
    let aff = format!("https://shop.example/?aff={}", seed.short_link);
    let test = json!({"test_mode": true, "program_id": seed.program_id});
    let mut last_click = 0;
    for _ in 0..12 {
        let r = app
            .post(
                "/api/v1/track/click",
                json!({"affiliate_url": aff, "additional_data": test}),
            )
            .await
            .expect(200);
        last_click = r.body["data"]["eventId"].as_i64().unwrap();
    }
    let r = get(&app, &auth, &path).await.expect(200);
    let d = &r.body["data"];
    assert_eq!(d["stepStatuses"]["pageview"], "complete");
    assert_eq!(d["stepStatuses"]["referrals"], "pending");
    let pv = &d["statistics"]["pageview"];
    assert_eq!(pv["testEventCount"], 10);
    assert_eq!(pv["hasTestEvents"], true);
    assert_eq!(pv["latestTestEvent"]["id"], last_click);
    let ts = parses_as_timestamp(&pv["latestTestEvent"]["timestamp"]);
    assert_eq!(ts, parses_as_timestamp(&pv["latestTestEvent"]["createdAt"]));
    assert!((ts - now).abs() < 60_000);

    // One test lead completes the referrals step.
    let r = app
        .post(
            "/api/v1/track/lead",
            json!({"customer_key": "t1", "additional_data": test}),
        )
        .await
        .expect(200);
    let lead_id = r.body["data"]["eventId"].as_i64().unwrap();
    let r = get(&app, &auth, &path).await.expect(200);
    let d = &r.body["data"];
    assert_eq!(d["stepStatuses"]["referrals"], "complete");
    assert_eq!(d["statistics"]["referrals"]["testEventCount"], 1);
    assert_eq!(
        d["statistics"]["referrals"]["latestTestEvent"]["id"],
        lead_id
    );

    // A payment account that is not connected: no account id reported.
    let pay = format!("/programs/{}/payment-account", seed.program_id);
    app.admin(
        "PUT",
        &pay,
        Some(json!({"status": "pending", "account_id": "acct_123"})),
    )
    .await
    .expect(200);
    let r = get(&app, &auth, &path).await.expect(200);
    let p = &r.body["data"]["statistics"]["payments"];
    assert_eq!(p["stripeConnectionStatus"], "pending");
    assert_eq!(p["isStripeConnected"], false);
    assert_eq!(p["stripeAccountId"], Value::Null);
    assert_eq!(r.body["data"]["stepStatuses"]["payments"], "pending");

    // Connected: the payments step completes.
    app.admin(
        "PUT",
        &pay,
        Some(
            json!({"status": "connected", "account_id": "acct_123", "charges_enabled": true,
                    "payouts_enabled": true, "details_submitted": true,
                    "connection_date": "2026-01-02T03:04:05Z"}),
        ),
    )
    .await
    .expect(200);
    let r = get(&app, &auth, &path).await.expect(200);
    let d = &r.body["data"];
    assert_eq!(
        d["stepStatuses"],
        json!({"pageview": "complete", "referrals": "complete", "payments": "complete"})
    );
    assert_eq!(
        d["statistics"]["payments"],
        json!({
            "stripeConnectionStatus": "connected", "isStripeConnected": true,
            "stripeAccountId": "acct_123", "chargesEnabled": true, "payoutsEnabled": true,
            "detailsSubmitted": true, "connectionDate": "2026-01-02T03:04:05.000Z",
        })
    );
}

on_both_backends!(status_has_partners_needs_an_approved_record);
async fn status_has_partners_needs_an_approved_record(app: TestApp) {
    let seed = app.seed().await;
    let auth = owner(&app, &seed).await;
    // A second program of the same workspace with a pending partner only.
    let program = app
        .admin(
            "POST",
            "/programs",
            Some(json!({"workspace_id": seed.workspace_id, "name": "Second"})),
        )
        .await
        .expect(201);
    let pid = program.body["id"].as_i64().unwrap();
    app.admin(
        "POST",
        &format!("/programs/{pid}/partners"),
        Some(json!({"partner_id": seed.partner_id, "status": "pending"})),
    )
    .await
    .expect(201);
    let r = get(&app, &auth, &format!("/api/tracking/status/{pid}"))
        .await
        .expect(200);
    assert_eq!(r.body["data"]["hasPartners"], false);
    assert_eq!(r.body["data"]["programId"], pid.to_string());
    // Test events of another program do not count.
    let aff = format!("https://shop.example/?aff={}", seed.short_link);
    app.post("/api/v1/track/click", json!({"affiliate_url": aff, "additional_data": {"test_mode": true, "program_id": seed.program_id}}))
        .await
        .expect(200);
    let r = get(&app, &auth, &format!("/api/tracking/status/{pid}"))
        .await
        .expect(200);
    assert_eq!(r.body["data"]["stepStatuses"]["pageview"], "pending");
}

// ---------------------------------------------------------------------------------
// Events list
// ---------------------------------------------------------------------------------

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

fn sorted(list: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

async fn pause() {
    // Distinct millisecond timestamps, so that "newest first" is unambiguous.
    tokio::time::sleep(std::time::Duration::from_millis(3)).await;
}

on_both_backends!(events_from_the_tracking_api);
async fn events_from_the_tracking_api(app: TestApp) {
    let seed = app.seed().await;
    let auth = owner(&app, &seed).await;
    let path = format!("/api/tracking/events/{}", seed.program_id);
    let aff = format!("https://shop.example/landing?aff={}", seed.short_link);
    let ua = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";

    let r = get(&app, &auth, &path).await.expect(200);
    assert_eq!(
        r.body,
        json!({"data": [], "meta": {"pagination": {"page": 1, "pageSize": 10, "pageCount": 0, "total": 0}}})
    );

    let c1 = app
        .post("/api/v1/track/click", json!({
            "affiliate_url": aff, "page_url": "https://shop.example/landing", "session_id": "s1",
            "referrer_url": "https://blog.example/", "user_agent": ua,
        }))
        .await
        .expect(200)
        .body["click_id"].as_str().unwrap().to_string();
    pause().await;
    let c2 = app.click(&seed.short_link).await;
    pause().await;
    app.post_auth(
        "/api/v1/track/lead",
        &seed.api_token,
        json!({"click_id": c1, "customer_key": "k1"}),
    )
    .await
    .expect(200);
    pause().await;
    let sale = app
        .post_auth(
            "/api/v1/track/sale",
            &seed.api_token,
            json!({"transaction_id": "txn-1", "amount_cents": 2_500, "customer_key": "k1"}),
        )
        .await
        .expect(200);
    let sale_id = sale.body["sale_id"].as_i64().unwrap();
    // Test events are never listed.
    let test = json!({"test_mode": true, "program_id": seed.program_id});
    app.post(
        "/api/v1/track/click",
        json!({"affiliate_url": aff, "additional_data": test}),
    )
    .await
    .expect(200);
    app.post(
        "/api/v1/track/lead",
        json!({"customer_key": "tk", "additional_data": test}),
    )
    .await
    .expect(200);
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"amount_cents": 1, "customer_key": "k1", "additional_data": {"test_mode": true}}),
    )
    .await
    .expect(200);

    let r = get(&app, &auth, &path).await.expect(200);
    assert_eq!(
        r.body["meta"]["pagination"],
        json!({"page": 1, "pageSize": 10, "pageCount": 1, "total": 4})
    );
    let data = r.body["data"].as_array().unwrap();
    let types: Vec<&str> = data
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["conversion", "lead", "click", "click"]);
    let stamps: Vec<i64> = data
        .iter()
        .map(|e| parses_as_timestamp(&e["timestamp"]))
        .collect();
    assert!(stamps.windows(2).all(|w| w[0] > w[1]), "{stamps:?}");

    let s = &data[0];
    assert_eq!(
        keys(s),
        sorted(&[
            "id",
            "event_type",
            "timestamp",
            "click_id",
            "createdAt",
            "amount_cents",
            "currency",
            "sale_type",
            "payment_status",
            "processor_event_id",
            "is_recurring"
        ])
    );
    assert_eq!(s["id"], sale_id);
    assert_eq!(s["click_id"], c1.as_str());
    assert_eq!(s["amount_cents"], 2_500);
    assert_eq!(s["currency"], "usd");
    assert_eq!(s["sale_type"], "payment");
    assert_eq!(s["payment_status"], "paid");
    assert_eq!(s["processor_event_id"], "txn-1");
    assert_eq!(s["is_recurring"], false);
    assert_eq!(parses_as_timestamp(&s["createdAt"]), stamps[0]);

    let l = &data[1];
    assert_eq!(
        keys(l),
        sorted(&[
            "id",
            "event_type",
            "timestamp",
            "click_id",
            "createdAt",
            "customer_key",
            "session_id",
            "page_url",
            "converted"
        ])
    );
    assert_eq!(l["click_id"], c1.as_str());
    assert_eq!(l["customer_key"], "k1");
    assert_eq!(l["converted"], true);

    let click_keys = sorted(&[
        "id",
        "event_type",
        "timestamp",
        "click_id",
        "createdAt",
        "session_id",
        "page_url",
        "referrer_url",
        "geo_country",
        "geo_region",
        "geo_city",
        "device_type",
        "device_os",
        "browser_name",
        "converted",
    ]);
    let (k2, k1) = (&data[2], &data[3]);
    assert_eq!(keys(k1), click_keys);
    assert_eq!(keys(k2), click_keys);
    assert_eq!(k2["click_id"], c2.as_str());
    assert_eq!(k2["converted"], false);
    assert_eq!(k1["click_id"], c1.as_str());
    assert_eq!(k1["converted"], true);
    assert_eq!(k1["session_id"], "s1");
    assert_eq!(k1["page_url"], "https://shop.example/landing");
    assert_eq!(k1["referrer_url"], "https://blog.example/");
    assert_eq!(k1["device_type"], "desktop");
    assert_eq!(k1["browser_name"], "Chrome");
    assert!(k1["device_os"].is_string());
    assert_eq!(k1["geo_country"], Value::Null);

    // A full refund shows on the sale; the list still holds it.
    app.post_auth(
        "/api/v1/track/refund",
        &seed.api_token,
        json!({"transaction_id": "txn-1"}),
    )
    .await
    .expect(200);
    let r = get(&app, &auth, &format!("{path}?eventType=conversion"))
        .await
        .expect(200);
    assert_eq!(r.body["meta"]["pagination"]["total"], 1);
    assert_eq!(r.body["data"][0]["payment_status"], "refunded");

    // Today's date as a filter.
    let r = get(
        &app,
        &auth,
        &format!("{path}?dateFrom={}&dateTo={}", ago(0), ago(0)),
    )
    .await
    .expect(200);
    assert_eq!(r.body["meta"]["pagination"]["total"], 4);
    let r = get(&app, &auth, &format!("{path}?dateTo={}", ago(1)))
        .await
        .expect(200);
    assert_eq!(r.body["meta"]["pagination"]["total"], 0);
}

on_both_backends!(converted_marks_the_click_and_lead_of_the_first_purchase);
async fn converted_marks_the_click_and_lead_of_the_first_purchase(app: TestApp) {
    let seed = app.seed().await;
    let auth = owner(&app, &seed).await;
    let path = format!("/api/tracking/events/{}", seed.program_id);
    let aff = format!("https://shop.example/landing?aff={}", seed.short_link);
    let click = |existing: Option<&str>| {
        let mut body = json!({"affiliate_url": aff});
        if let Some(id) = existing {
            body["existing_click_id"] = json!(id);
        }
        app.post("/api/v1/track/click", body)
    };
    let sale = |txn: &'static str| {
        app.post_auth(
            "/api/v1/track/sale",
            &seed.api_token,
            json!({"transaction_id": txn, "amount_cents": 1_000, "customer_key": "buyer"}),
        )
    };
    // One customer clicks twice, signs up and buys, then clicks and buys again; another
    // clicks and signs up without buying.
    let first = click(None).await.expect(200).body["click_id"]
        .as_str()
        .unwrap()
        .to_string();
    pause().await;
    let again = click(Some(&first)).await.expect(200).body["click_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(again, first);
    pause().await;
    app.post_auth(
        "/api/v1/track/lead",
        &seed.api_token,
        json!({"click_id": first, "customer_key": "buyer"}),
    )
    .await
    .expect(200);
    let other = app.click(&seed.short_link).await;
    app.post_auth(
        "/api/v1/track/lead",
        &seed.api_token,
        json!({"click_id": other, "customer_key": "browser"}),
    )
    .await
    .expect(200);
    pause().await;
    sale("txn-a").await.expect(200);
    pause().await;
    click(Some(&first)).await.expect(200);
    pause().await;
    sale("txn-b").await.expect(200);

    // Per listed event of `kind`, newest first: its `field` and whether it converted.
    let converted = |kind: &'static str, field: &'static str| {
        let url = format!("{path}?eventType={kind}");
        let (app, auth) = (&app, &auth);
        async move {
            let r = get(app, auth, &url).await.expect(200);
            r.body["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    (
                        e[field].as_str().unwrap().to_string(),
                        e["converted"].as_bool().unwrap(),
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    // The click after the purchase, the other customer's, the second click (the one
    // that converted), the first.
    assert_eq!(
        converted("click", "click_id").await,
        [
            (first.clone(), false),
            (other.clone(), false),
            (first.clone(), true),
            (first.clone(), false)
        ]
    );
    assert_eq!(
        converted("lead", "customer_key").await,
        [("browser".to_string(), false), ("buyer".to_string(), true)]
    );
}

/// An event written straight into its table (and counted in its day's rollup, as the
/// tracking writes would).
#[derive(Debug, Clone)]
struct Ev {
    kind: &'static str,
    id: i64,
    ts: i64,
}

async fn insert_event(
    app: &TestApp,
    program_id: i64,
    kind: &'static str,
    ts: i64,
    is_test: bool,
) -> Ev {
    let n = ts.rem_euclid(1_000_000_007);
    let test = if is_test { "TRUE" } else { "FALSE" };
    let sql = match kind {
        "click" => format!(
            "INSERT INTO affiliate_click_events (program_id, click_id, session_id, page_url, \
             is_test, click_timestamp, created_at) VALUES ({program_id}, 'cust_{n}', 'sess', \
             'https://shop.example/', {test}, {ts}, {ts}) RETURNING id"
        ),
        "lead" => format!(
            "INSERT INTO affiliate_lead_events (program_id, customer_key, is_test, \
             lead_timestamp, created_at) VALUES ({program_id}, 'key_{n}_{test}', {test}, {ts}, {ts}) \
             RETURNING id"
        ),
        _ => format!(
            "INSERT INTO affiliate_sale_events (program_id, processor_event_id, amount_cents, currency, \
             sale_type, payment_status, is_recurring, is_test, sale_date, created_at) VALUES \
             ({program_id}, 'txn_{program_id}_{n}_{test}', 1000, 'usd', 'payment', 'paid', FALSE, {test}, {ts}, {ts}) \
             RETURNING id"
        ),
    };
    let id = app.count(&sql).await;
    if !is_test {
        let day = reftrack::domain::time::day_of(ts);
        let mut r = RollupDelta::default();
        match kind {
            "click" => r.clicks = 1,
            "lead" => r.lead_events = 1,
            _ => r.sale_events = 1,
        }
        add_rollup(app, program_id, &day, r).await;
    }
    Ev { kind, id, ts }
}

/// Which events a filter keeps.
type Keep = Box<dyn Fn(&Ev) -> bool>;

/// The listing's order: timestamp, then id, newest first; then the kind.
fn newest_first(mut evs: Vec<Ev>) -> Vec<Ev> {
    evs.sort_by(|a, b| {
        b.ts.cmp(&a.ts)
            .then(b.id.cmp(&a.id))
            .then(a.kind.cmp(b.kind))
    });
    evs
}

fn listed(r: &Reply) -> Vec<(String, i64, i64)> {
    r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["event_type"].as_str().unwrap().to_string(),
                e["id"].as_i64().unwrap(),
                parses_as_timestamp(&e["timestamp"]),
            )
        })
        .collect()
}

fn expected(evs: &[Ev]) -> Vec<(String, i64, i64)> {
    evs.iter()
        .map(|e| {
            let kind = if e.kind == "sale" {
                "conversion"
            } else {
                e.kind
            };
            (kind.to_string(), e.id, e.ts)
        })
        .collect()
}

on_both_backends!(events_pagination_and_filters);
async fn events_pagination_and_filters(app: TestApp) {
    let seed = app.seed().await;
    let auth = owner(&app, &seed).await;
    let p = seed.program_id;
    let path = format!("/api/tracking/events/{p}");

    let plan: Vec<(&'static str, i64)> = vec![
        // three days ago: 5
        ("click", at(3, 1, 0, 0, 0)),
        ("click", at(3, 2, 0, 0, 0)),
        ("click", at(3, 3, 0, 0, 0)),
        ("lead", at(3, 2, 30, 0, 0)),
        ("sale", at(3, 4, 0, 0, 0)),
        // two days ago: 8, with edges at midnight and ties across tables
        ("click", at(2, 0, 0, 0, 0)),
        ("click", at(2, 6, 0, 0, 0)),
        ("click", at(2, 12, 0, 0, 0)),
        ("click", at(2, 23, 59, 59, 999)),
        ("lead", at(2, 6, 0, 0, 0)),
        ("lead", at(2, 7, 0, 0, 0)),
        ("sale", at(2, 12, 0, 0, 0)),
        ("sale", at(2, 13, 0, 0, 0)),
        // yesterday: 12
        ("click", at(1, 1, 0, 0, 0)),
        ("click", at(1, 2, 0, 0, 0)),
        ("click", at(1, 3, 0, 0, 0)),
        ("click", at(1, 4, 0, 0, 0)),
        ("click", at(1, 5, 0, 0, 0)),
        ("click", at(1, 6, 0, 0, 0)),
        ("click", at(1, 7, 0, 0, 0)),
        ("click", at(1, 8, 0, 0, 0)),
        ("lead", at(1, 9, 0, 0, 0)),
        ("lead", at(1, 10, 0, 0, 0)),
        ("sale", at(1, 11, 0, 0, 0)),
        ("sale", at(1, 12, 0, 0, 0)),
    ];
    let mut all = vec![];
    for (kind, ts) in plan {
        all.push(insert_event(&app, p, kind, ts, false).await);
    }
    // Test events on the same days, and another program's events: never listed.
    for (kind, ts) in [
        ("click", at(1, 5, 0, 0, 1)),
        ("lead", at(2, 6, 0, 0, 0)),
        ("sale", at(3, 4, 0, 0, 0)),
    ] {
        insert_event(&app, p, kind, ts, true).await;
    }
    let other = app.seed().await;
    insert_event(&app, other.program_id, "click", at(1, 5, 0, 0, 0), false).await;
    let all = newest_first(all);
    assert_eq!(all.len(), 25);

    // Pages of 10: two full pages, a partial third, an empty fourth.
    for (page, range) in [(1, 0..10), (2, 10..20), (3, 20..25)] {
        let r = get(&app, &auth, &format!("{path}?page={page}&pageSize=10"))
            .await
            .expect(200);
        assert_eq!(
            r.body["meta"]["pagination"],
            json!({"page": page, "pageSize": 10, "pageCount": 3, "total": 25})
        );
        assert_eq!(listed(&r), expected(&all[range]), "page {page}");
    }
    for page in ["4", "1000000", "9223372036854775807"] {
        let r = get(&app, &auth, &format!("{path}?page={page}&pageSize=10"))
            .await
            .expect(200);
        assert_eq!(r.body["data"], json!([]));
        assert_eq!(r.body["meta"]["pagination"]["total"], 25);
        assert_eq!(r.body["meta"]["pagination"]["pageCount"], 3);
    }
    // Defaults: page 1 of 10; the largest page size takes everything.
    let r = get(&app, &auth, &path).await.expect(200);
    assert_eq!(listed(&r), expected(&all[0..10]));
    let r = get(&app, &auth, &format!("{path}?pageSize=100"))
        .await
        .expect(200);
    assert_eq!(listed(&r), expected(&all));
    let r = get(&app, &auth, &format!("{path}?pageSize=7&page=4"))
        .await
        .expect(200);
    assert_eq!(listed(&r), expected(&all[21..25]));
    assert_eq!(r.body["meta"]["pagination"]["pageCount"], 4);

    // Filters: type, dates (whole days, partial days, one side only), combined.
    let day = |n: u64| ago(n);
    let cases: Vec<(String, Keep)> = vec![
        (
            "eventType=click".into(),
            Box::new(|e: &Ev| e.kind == "click"),
        ),
        ("eventType=lead".into(), Box::new(|e: &Ev| e.kind == "lead")),
        (
            "eventType=conversion".into(),
            Box::new(|e: &Ev| e.kind == "sale"),
        ),
        (
            format!("dateFrom={}&dateTo={}", day(2), day(2)),
            Box::new(|e: &Ev| e.ts >= at(2, 0, 0, 0, 0) && e.ts <= at(2, 23, 59, 59, 999)),
        ),
        (
            format!(
                "dateFrom={}T06:00:00Z&dateTo={}T09:00:00.000Z",
                day(2),
                day(1)
            ),
            Box::new(|e: &Ev| e.ts >= at(2, 6, 0, 0, 0) && e.ts <= at(1, 9, 0, 0, 0)),
        ),
        (
            format!(
                "dateFrom={}T06:00:00.001Z&dateTo={}T05:00:00Z",
                day(2),
                day(1)
            ),
            Box::new(|e: &Ev| e.ts > at(2, 6, 0, 0, 0) && e.ts <= at(1, 5, 0, 0, 0)),
        ),
        (
            format!("dateFrom={}T02:00:00Z&dateTo={}T12:00:00Z", day(2), day(2)),
            Box::new(|e: &Ev| e.ts >= at(2, 2, 0, 0, 0) && e.ts <= at(2, 12, 0, 0, 0)),
        ),
        (
            format!("dateFrom={}T05:00:00Z", day(1)),
            Box::new(|e: &Ev| e.ts >= at(1, 5, 0, 0, 0)),
        ),
        (
            format!("dateFrom={}", day(2)),
            Box::new(|e: &Ev| e.ts >= at(2, 0, 0, 0, 0)),
        ),
        (
            format!("dateTo={}T02:00:00Z", day(3)),
            Box::new(|e: &Ev| e.ts <= at(3, 2, 0, 0, 0)),
        ),
        (
            format!("dateTo={}", day(3)),
            Box::new(|e: &Ev| e.ts <= at(3, 23, 59, 59, 999)),
        ),
        (
            format!("dateFrom={}T23:00:00Z&dateTo={}T00:30:00Z", day(3), day(2)),
            Box::new(|e: &Ev| e.ts >= at(3, 23, 0, 0, 0) && e.ts <= at(2, 0, 30, 0, 0)),
        ),
        (
            format!(
                "eventType=click&dateFrom={}T02:00:00Z&dateTo={}",
                day(3),
                day(2)
            ),
            Box::new(|e: &Ev| {
                e.kind == "click" && e.ts >= at(3, 2, 0, 0, 0) && e.ts <= at(2, 23, 59, 59, 999)
            }),
        ),
        (
            format!("eventType=lead&dateFrom={}&dateTo={}", day(10), day(5)),
            Box::new(|_: &Ev| false),
        ),
    ];
    for (q, keep) in &cases {
        let want: Vec<Ev> = all.iter().filter(|e| keep(e)).cloned().collect();
        let r = get(&app, &auth, &format!("{path}?{q}&pageSize=100"))
            .await
            .expect(200);
        assert_eq!(r.body["meta"]["pagination"]["total"], want.len(), "{q}");
        assert_eq!(listed(&r), expected(&want), "{q}");
        // And paginated the same way.
        let r = get(&app, &auth, &format!("{path}?{q}&pageSize=3&page=2"))
            .await
            .expect(200);
        let from = want.len().min(3);
        let to = want.len().min(6);
        assert_eq!(listed(&r), expected(&want[from..to]), "{q} page 2");
        assert_eq!(
            r.body["meta"]["pagination"]["pageCount"],
            want.len().div_ceil(3),
            "{q}"
        );
    }

    // Bad parameters: 400 with a JSON error.
    let too_big = get(&app, &auth, &format!("{path}?pageSize=101"))
        .await
        .expect(400);
    assert_eq!(too_big.error(), "pageSize must be at most 100");
    for q in [
        "pageSize=0",
        "pageSize=-1",
        "pageSize=ten",
        "page=0",
        "page=-2",
        "page=1.5",
        "eventType=sale",
        "eventType=CLICK",
        "dateFrom=yesterday",
        "dateTo=2026-13-01",
    ] {
        let r = get(&app, &auth, &format!("{path}?{q}")).await.expect(400);
        assert!(r.body["error"].is_string(), "{q}");
    }
    get(
        &app,
        &auth,
        &format!("{path}?dateFrom={}&dateTo={}", day(1), day(2)),
    )
    .await
    .expect(400);

    // Without date filters the total is read from the daily rollups, O(days): a
    // rollup-only figure shows in it (the tracking writes keep both in step).
    add_rollup(
        &app,
        p,
        &ago(30),
        RollupDelta {
            clicks: 5,
            lead_events: 2,
            sale_events: 1,
            ..RollupDelta::default()
        },
    )
    .await;
    let r = get(&app, &auth, &path).await.expect(200);
    assert_eq!(r.body["meta"]["pagination"]["total"], 33);
    let r = get(&app, &auth, &format!("{path}?eventType=lead"))
        .await
        .expect(200);
    assert_eq!(r.body["meta"]["pagination"]["total"], 7);
}
