//! `POST /api/v1/track/lead`: server and browser mode, dedupe, test mode, origins.

use crate::common::*;
use serde_json::json;

const LEAD: &str = "/api/v1/track/lead";

on_both_backends!(server_mode_lead_moves_click_to_lead);
async fn server_mode_lead_moves_click_to_lead(app: TestApp) {
    let seed = app.seed().await;
    let click_id = app.click(&seed.short_link).await;
    let r = app
        .post_auth(
            LEAD,
            &seed.api_token,
            json!({
                "click_id": click_id, "customer_key": "user_42", "email": "bob@example.com",
                "additional_data": {"event_name": "signup"},
            }),
        )
        .await
        .expect(200);
    assert_eq!(r.body["success"], true);
    assert!(r.body["message"].is_string());
    assert_eq!(app.count("SELECT COUNT(*) FROM customers WHERE customer_status = 'lead' AND customer_key = 'user_42' AND signup_date IS NOT NULL").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM affiliate_lead_events WHERE event_name = 'signup' AND NOT is_test AND customer_id IS NOT NULL").await, 1);
    assert_eq!(app.count("SELECT leads FROM daily_rollups").await, 1);
    assert_eq!(app.count("SELECT lead_events FROM daily_rollups").await, 1);
    assert_eq!(
        app.count("SELECT total_leads FROM partner_programs").await,
        1
    );
    // Second lead: by click id, by key, both refused with the status text.
    for body in [
        json!({"click_id": click_id}),
        json!({"customer_key": "user_42"}),
    ] {
        let r = app.post_auth(LEAD, &seed.api_token, body).await.expect(400);
        assert_eq!(
            r.error(),
            "Customer status cannot be updated to lead. Current status: lead"
        );
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_lead_events")
            .await,
        1
    );
    assert_eq!(app.count("SELECT leads FROM daily_rollups").await, 1);
}

on_both_backends!(lead_errors_of_7_1);
async fn lead_errors_of_7_1(app: TestApp) {
    let seed = app.seed().await;
    let other = app.seed().await;
    let r = app
        .post_auth(LEAD, &seed.api_token, json!({}))
        .await
        .expect(400);
    assert_eq!(r.error(), "click_id or customer_key is required");
    let r = app
        .post_auth(LEAD, &seed.api_token, json!({"click_id": "cust_1_2"}))
        .await
        .expect(400);
    assert_eq!(
        r.error(),
        "Customer not found. Provide a valid click_id or customer_key."
    );
    let foreign = app.click(&other.short_link).await;
    let r = app
        .post_auth(LEAD, &seed.api_token, json!({"click_id": foreign}))
        .await
        .expect(400);
    assert_eq!(r.error(), "Customer does not belong to this program");
    app.post_auth(LEAD, "rtk_wrong", json!({"click_id": foreign}))
        .await
        .expect(401);
    app.send(
        "POST",
        LEAD,
        Some(json!({"click_id": foreign})),
        &[("authorization", "Token abc")],
    )
    .await
    .expect(401);
    app.send(
        "POST",
        LEAD,
        Some(json!({"click_id": foreign})),
        &[("authorization", "Bearer  ")],
    )
    .await
    .expect(401);
    let r = app
        .post_auth(LEAD, &seed.api_token, json!({"click_id": 5}))
        .await
        .expect(400);
    assert_eq!(r.error(), "click_id must be a string");
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_lead_events")
            .await,
        0
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM customers WHERE customer_status <> 'click'")
            .await,
        0
    );
}

on_both_backends!(key_only_lead_is_unattributed_and_deduplicated);
async fn key_only_lead_is_unattributed_and_deduplicated(app: TestApp) {
    let seed = app.seed().await;
    app.post_auth(
        LEAD,
        &seed.api_token,
        json!({"customer_key": "k1", "email": "k@x.io"}),
    )
    .await
    .expect(200);
    assert_eq!(app.count("SELECT COUNT(*) FROM affiliate_lead_events WHERE customer_id IS NULL AND customer_key = 'k1'").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM customers").await, 0);
    let r = app
        .post_auth(LEAD, &seed.api_token, json!({"customer_key": "k1"}))
        .await
        .expect(400);
    assert_eq!(
        r.error(),
        "Customer status cannot be updated to lead. Current status: lead"
    );
    // Unattributed leads are events, not customers: the events total counts them, the
    // leads figure (customers) does not.
    assert_eq!(app.count("SELECT lead_events FROM daily_rollups").await, 1);
    assert_eq!(app.count("SELECT leads FROM daily_rollups").await, 0);
    // Browser mode with only a key names the program in additional_data.
    let r = app
        .post(LEAD, json!({"customer_key": "k2"}))
        .await
        .expect(400);
    assert!(r.error().contains("program_id"), "{}", r.error());
    app.post(
        LEAD,
        json!({"customer_key": "k2", "additional_data": {"program_id": seed.program_id}}),
    )
    .await
    .expect(200);
}

on_both_backends!(concurrent_identical_leads_record_one);
async fn concurrent_identical_leads_record_one(app: TestApp) {
    let seed = app.seed().await;
    let click_id = app.click(&seed.short_link).await;
    let calls = (0..10).map(|i| {
        let body = if i % 2 == 0 {
            json!({"click_id": click_id, "customer_key": "dup"})
        } else {
            json!({"customer_key": "dup"})
        };
        app.post_auth(LEAD, &seed.api_token, body)
    });
    let replies = futures::future::join_all(calls).await;
    let ok = replies.iter().filter(|r| r.status == 200).count();
    assert_eq!(ok, 1, "{replies:?}");
    assert!(replies.iter().all(|r| r.status == 200 || r.status == 400));
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_lead_events WHERE NOT is_test")
            .await,
        1
    );
}

on_both_backends!(browser_mode_lead_checks_origin);
async fn browser_mode_lead_checks_origin(app: TestApp) {
    let seed = app
        .seed_with(json!({"allowed_origins": ["https://shop.example"]}))
        .await;
    let click_id = app.click(&seed.short_link).await;
    let r = app
        .send(
            "POST",
            LEAD,
            Some(json!({"click_id": click_id})),
            &[("origin", "https://evil.example")],
        )
        .await
        .expect(403);
    assert_eq!(r.error(), "Origin not allowed");
    let r = app
        .send(
            "POST",
            LEAD,
            Some(json!({"click_id": click_id})),
            &[("origin", "https://shop.example")],
        )
        .await
        .expect(200);
    assert_eq!(
        r.headers["access-control-allow-origin"],
        "https://shop.example"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM customers WHERE customer_status = 'lead'")
            .await,
        1
    );
}

on_both_backends!(test_mode_lead_needs_no_token_and_changes_no_customer);
async fn test_mode_lead_needs_no_token_and_changes_no_customer(app: TestApp) {
    let seed = app.seed().await;
    let click_id = app.click(&seed.short_link).await;
    let r = app
        .post(LEAD, json!({"click_id": click_id, "additional_data": {"test_mode": true, "program_id": seed.program_id}}))
        .await
        .expect(200);
    assert_eq!(r.body["data"]["test_mode"], true);
    assert_eq!(r.body["data"]["programId"], seed.program_id);
    let id = r.body["data"]["eventId"].as_i64().unwrap();
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM affiliate_lead_events WHERE id = {id} AND is_test"
        ))
        .await,
        1
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM customers WHERE customer_status = 'click'")
            .await,
        1
    );
    assert_eq!(
        app.count(
            "SELECT CAST(COALESCE(SUM(leads + lead_events), 0) AS BIGINT) FROM daily_rollups"
        )
        .await,
        0
    );
    // A placeholder token is ignored when the program is named.
    app.post_auth(
        LEAD,
        "placeholder",
        json!({"additional_data": {"test_mode": true, "program_id": seed.program_id}}),
    )
    .await
    .expect(200);
    // The token's program when none is named; nothing to go on: 400.
    app.post_auth(
        LEAD,
        &seed.api_token,
        json!({"additional_data": {"test_mode": true}}),
    )
    .await
    .expect(200);
    app.post(LEAD, json!({"additional_data": {"test_mode": true}}))
        .await
        .expect(400);
    // The real lead still works afterwards.
    app.post_auth(LEAD, &seed.api_token, json!({"click_id": click_id}))
        .await
        .expect(200);
}

on_both_backends!(legacy_alias_tracks_leads);
async fn legacy_alias_tracks_leads(app: TestApp) {
    let seed = app.seed().await;
    let click_id = app.click(&seed.short_link).await;
    app.post_auth(
        "/api/tracking/lead",
        &seed.api_token,
        json!({"click_id": click_id}),
    )
    .await
    .expect(200);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM customers WHERE customer_status = 'lead'")
            .await,
        1
    );
}
