//! The cached per-request lookups (a link by `short_link`, a program by API key; see
//! `src/store/cache.rs`) never serve a value this process has changed: every test warms
//! the cache with a request first, changes the record through the management API, and
//! expects the very next request to see the change.

use crate::common::*;
use serde_json::json;

fn click_body(short_link: &str) -> serde_json::Value {
    json!({"affiliate_url": format!("https://shop.example/?aff={short_link}")})
}

on_both_backends!(rotated_token_is_refused_at_once);
async fn rotated_token_is_refused_at_once(app: TestApp) {
    let seed = app.seed().await;
    let sale = json!({"transaction_id": "t1", "amount_cents": 100, "customer_key": "nobody"});
    // Cached by this call (400: unknown customer, but the key was accepted).
    app.post_auth("/api/v1/track/sale", &seed.api_token, sale.clone())
        .await
        .expect(400);
    let rotated = app
        .admin(
            "POST",
            &format!("/programs/{}/rotate-token", seed.program_id),
            None,
        )
        .await
        .expect(200);
    let new_token = rotated.body["api_token"].as_str().unwrap();
    app.post_auth("/api/v1/track/sale", &seed.api_token, sale.clone())
        .await
        .expect(401);
    app.post_auth(
        "/api/v1/track/refund",
        &seed.api_token,
        json!({"transaction_id": "t1"}),
    )
    .await
    .expect(401);
    app.post_auth("/api/v1/track/sale", new_token, sale)
        .await
        .expect(400);
}

on_both_backends!(inactive_link_stops_clicks_at_once_and_active_again_resumes);
async fn inactive_link_stops_clicks_at_once_and_active_again_resumes(app: TestApp) {
    let seed = app.seed().await;
    let r = app
        .post("/api/v1/track/click", click_body(&seed.short_link))
        .await
        .expect(200);
    assert_eq!(r.body["success"], true);
    app.admin("PATCH", "/links/1", Some(json!({"status": "inactive"})))
        .await
        .expect(200);
    let r = app
        .post("/api/v1/track/click", click_body(&seed.short_link))
        .await
        .expect(200);
    assert_eq!(r.body["success"], false, "{}", r.body);
    app.admin("PATCH", "/links/1", Some(json!({"status": "active"})))
        .await
        .expect(200);
    let r = app
        .post("/api/v1/track/click", click_body(&seed.short_link))
        .await
        .expect(200);
    assert_eq!(r.body["success"], true);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        2
    );
}

on_both_backends!(program_changes_reach_the_next_click);
async fn program_changes_reach_the_next_click(app: TestApp) {
    let seed = app.seed().await;
    let r = app
        .post("/api/v1/track/click", click_body(&seed.short_link))
        .await
        .expect(200);
    assert_eq!(r.body["cookie_window_days"], 60);
    app.admin(
        "PATCH",
        &format!("/programs/{}", seed.program_id),
        Some(json!({"cookie_window_days": 7, "allowed_origins": ["https://shop.example"]})),
    )
    .await
    .expect(200);
    let r = app
        .post("/api/v1/track/click", click_body(&seed.short_link))
        .await
        .expect(200);
    assert_eq!(
        r.body["cookie_window_days"], 7,
        "the link's lookup carries the program's window"
    );
    let r = app
        .send(
            "POST",
            "/api/v1/track/click",
            Some(click_body(&seed.short_link)),
            &[("origin", "https://evil.example")],
        )
        .await
        .expect(403);
    assert_eq!(r.error(), "Origin not allowed");
}

on_both_backends!(program_changes_reach_the_next_sale);
async fn program_changes_reach_the_next_sale(app: TestApp) {
    let seed = app.seed().await;
    app.lead(&seed, "cust-1").await;
    let sale =
        |t: &str| json!({"transaction_id": t, "amount_cents": 10_000, "customer_key": "cust-1"});
    app.post_auth("/api/v1/track/sale", &seed.api_token, sale("s1"))
        .await
        .expect(200);
    app.admin(
        "PATCH",
        &format!("/programs/{}", seed.program_id),
        Some(json!({"commission": {"type": "flat", "amount_cents": 123}})),
    )
    .await
    .expect(200);
    app.post_auth("/api/v1/track/sale", &seed.api_token, sale("s2"))
        .await
        .expect(200);
    assert_eq!(
        app.count("SELECT amount_cents FROM commissions WHERE id = 2")
            .await,
        123,
        "the second sale used the changed commission"
    );
}

on_both_backends!(a_link_created_after_a_miss_is_found);
async fn a_link_created_after_a_miss_is_found(app: TestApp) {
    let seed = app.seed().await;
    let r = app
        .post("/api/v1/track/click", click_body("later"))
        .await
        .expect(400);
    assert_eq!(r.error(), "Referral link not found");
    app.admin(
        "POST",
        "/links",
        Some(json!({"program_id": seed.program_id, "partner_id": seed.partner_id, "short_link": "later"})),
    )
    .await
    .expect(201);
    let r = app
        .post("/api/v1/track/click", click_body("later"))
        .await
        .expect(200);
    assert_eq!(r.body["success"], true);
}

on_both_backends!(concurrent_new_clicks_share_a_batch_with_exact_counters);
async fn concurrent_new_clicks_share_a_batch_with_exact_counters(app: TestApp) {
    let seed = app.seed().await;
    let (_, bob_link) = app.add_partner(&seed, "bob").await;
    // More clicks than one batched statement takes (64): a batch of them is split.
    let mut calls = Vec::new();
    for i in 0..150 {
        let link = if i % 3 == 0 {
            bob_link.clone()
        } else {
            seed.short_link.clone()
        };
        let app = &app;
        calls.push(async move {
            let r = app
                .post("/api/v1/track/click", click_body(&link))
                .await
                .expect(200);
            r.body["click_id"].as_str().unwrap().to_string()
        });
    }
    let ids = futures::future::join_all(calls).await;
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), 150);
    assert_eq!(app.count("SELECT COUNT(*) FROM customers").await, 150);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        150
    );
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM affiliate_click_events e JOIN customers c \
                 ON c.id = e.customer_id AND c.click_id = e.click_id \
                 AND c.link_id = e.link_id AND c.partner_id = e.partner_id"
        )
        .await,
        150,
        "each event points at its own customer"
    );
    assert_eq!(app.count("SELECT clicks FROM daily_rollups").await, 150);
    assert_eq!(
        app.count("SELECT CAST(SUM(clicks) AS BIGINT) FROM referral_links")
            .await,
        150
    );
    assert_eq!(
        app.count("SELECT clicks FROM referral_links WHERE short_link = 'bob'")
            .await,
        50
    );
    assert_eq!(
        app.count("SELECT CAST(SUM(total_clicks) AS BIGINT) FROM partner_programs")
            .await,
        150
    );
    // Each click id works for a lead.
    for (i, id) in ids.iter().enumerate().take(5) {
        app.post_auth(
            "/api/v1/track/lead",
            &seed.api_token,
            json!({"click_id": id, "customer_key": format!("k{i}")}),
        )
        .await
        .expect(200);
    }
}
