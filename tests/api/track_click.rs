//! `POST /api/v1/track/click` (click ids, last touch, test mode, origins) and its legacy
//! alias.

use crate::common::*;
use serde_json::json;

on_both_backends!(click_creates_customer_event_and_counters);
async fn click_creates_customer_event_and_counters(app: TestApp) {
    let seed = app.seed().await;
    let r = app
        .post("/api/v1/track/click", json!({
            "affiliate_url": format!("https://shop.example/?aff={}", seed.short_link),
            "page_url": "https://shop.example/",
            "session_id": "s1",
            "user_agent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
        }))
        .await
        .expect(200);
    assert_eq!(r.body["success"], true);
    assert_eq!(r.body["partner_code"], seed.short_link.as_str());
    assert_eq!(r.body["cookie_window_days"], 60);
    let click_id = r.body["click_id"].as_str().unwrap();
    assert!(
        reftrack::domain::click_id::is_well_formed(click_id),
        "{click_id}"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM customers WHERE customer_status = 'click'")
            .await,
        1
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events WHERE device_type = 'desktop' AND browser_name = 'Chrome' AND session_id = 's1'").await,
        1
    );
    let link = app.admin("GET", "/links/1", None).await.expect(200);
    assert_eq!(link.body["clicks"], 1);
    assert!(link.body["last_clicked"].is_string());
    assert_eq!(
        app.count("SELECT total_clicks FROM partner_programs").await,
        1
    );
    assert_eq!(app.count("SELECT clicks FROM daily_rollups").await, 1);
}

on_both_backends!(click_validation_rows_of_7_1);
async fn click_validation_rows_of_7_1(app: TestApp) {
    let seed = app.seed().await;
    for (body, text) in [
        (json!({}), "affiliate_url is required"),
        (json!({"affiliate_url": ""}), "affiliate_url is required"),
        (json!({"affiliate_url": 42}), "affiliate_url is required"),
        (
            json!({"affiliate_url": "shop.example/?aff=x"}),
            "Invalid affiliate_url",
        ),
        (
            json!({"affiliate_url": "https://shop.example/?ref=x"}),
            "No aff parameter found in affiliate_url",
        ),
        (
            json!({"affiliate_url": "https://shop.example/?aff=nobody"}),
            "Referral link not found",
        ),
    ] {
        let r = app
            .post("/api/v1/track/click", body.clone())
            .await
            .expect(400);
        assert_eq!(r.error(), text, "for {body}");
    }
    // A link without partner is a broken configuration.
    app.admin(
        "POST",
        "/links",
        Some(json!({"program_id": seed.program_id, "partner_id": null, "short_link": "orphan"})),
    )
    .await
    .expect(201);
    let r = app
        .post(
            "/api/v1/track/click",
            json!({"affiliate_url": "https://x.io/?aff=orphan"}),
        )
        .await
        .expect(400);
    assert_eq!(r.error(), "Invalid referral link configuration");
    assert_eq!(app.count("SELECT COUNT(*) FROM customers").await, 0);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        0
    );
}

on_both_backends!(inactive_link_answers_200_with_success_false_and_records_nothing);
async fn inactive_link_answers_200_with_success_false_and_records_nothing(app: TestApp) {
    let seed = app.seed().await;
    app.admin("PATCH", "/links/1", Some(json!({"status": "inactive"})))
        .await
        .expect(200);
    let r = app
        .post(
            "/api/v1/track/click",
            json!({"affiliate_url": format!("https://x.io/?aff={}", seed.short_link)}),
        )
        .await
        .expect(200);
    assert_eq!(r.body["success"], false);
    assert!(r.body.get("click_id").is_none());
    assert_eq!(app.count("SELECT COUNT(*) FROM customers").await, 0);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        0
    );
    assert_eq!(
        app.count("SELECT clicks FROM referral_links WHERE id = 1")
            .await,
        0
    );
}

on_both_backends!(last_touch_reuses_and_repoints_the_customer);
async fn last_touch_reuses_and_repoints_the_customer(app: TestApp) {
    let seed = app.seed().await;
    let first = app.click(&seed.short_link).await;
    let (bob, bob_link) = app.add_partner(&seed, "bob").await;
    let r = app
        .post(
            "/api/v1/track/click",
            json!({
                "affiliate_url": format!("https://x.io/?aff={bob_link}"),
                "existing_click_id": first,
            }),
        )
        .await
        .expect(200);
    assert_eq!(
        r.body["click_id"],
        first.as_str(),
        "same customer, same click id"
    );
    assert_eq!(r.body["partner_code"], "bob");
    assert_eq!(app.count("SELECT COUNT(*) FROM customers").await, 1);
    assert_eq!(app.count("SELECT partner_id FROM customers").await, bob);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        2
    );
    assert_eq!(app.count("SELECT clicks FROM daily_rollups").await, 2);
    // An unknown click id, or one of another program, starts a new customer.
    let r = app
        .post(
            "/api/v1/track/click",
            json!({
                "affiliate_url": format!("https://x.io/?aff={}", seed.short_link),
                "existing_click_id": "cust_1_1",
            }),
        )
        .await
        .expect(200);
    assert_ne!(r.body["click_id"], first.as_str());
    let other = app.seed().await;
    let r = app
        .post(
            "/api/v1/track/click",
            json!({
                "affiliate_url": format!("https://x.io/?aff={}", other.short_link),
                "existing_click_id": first,
            }),
        )
        .await
        .expect(200);
    assert_ne!(r.body["click_id"], first.as_str());
    assert_eq!(app.count("SELECT COUNT(*) FROM customers").await, 3);
    assert_eq!(
        app.count(&format!(
            "SELECT partner_id FROM customers WHERE click_id = '{first}'"
        ))
        .await,
        bob
    );
}

on_both_backends!(test_mode_click_stores_one_flagged_event_and_nothing_else);
async fn test_mode_click_stores_one_flagged_event_and_nothing_else(app: TestApp) {
    let seed = app.seed().await;
    let r = app
        .post(
            "/api/v1/track/click",
            json!({
                "affiliate_url": format!("https://x.io/?aff={}", seed.short_link),
                "additional_data": {"test_mode": true, "program_id": seed.program_id},
            }),
        )
        .await
        .expect(200);
    assert_eq!(r.body["success"], true);
    assert!(r.body["message"].is_string());
    assert_eq!(r.body["data"]["programId"], seed.program_id);
    assert_eq!(r.body["data"]["test_mode"], true);
    let event_id = r.body["data"]["eventId"].as_i64().unwrap();
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM affiliate_click_events WHERE id = {event_id} AND is_test"
        ))
        .await,
        1
    );
    // Program from the link when not given.
    app.post(
        "/api/v1/track/click",
        json!({
            "affiliate_url": format!("https://x.io/?aff={}", seed.short_link),
            "additional_data": {"test_mode": true},
        }),
    )
    .await
    .expect(200);
    // No aff needed when the program is named.
    app.post(
        "/api/v1/track/click",
        json!({
            "affiliate_url": "https://x.io/",
            "additional_data": {"test_mode": true, "program_id": seed.program_id},
        }),
    )
    .await
    .expect(200);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events WHERE is_test")
            .await,
        3
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM customers").await, 0);
    assert_eq!(
        app.count("SELECT clicks FROM referral_links WHERE id = 1")
            .await,
        0
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM daily_rollups WHERE clicks > 0")
            .await,
        0
    );
    assert_eq!(
        app.count("SELECT total_clicks FROM partner_programs").await,
        0
    );
    // Neither program nor link: 400; unknown program: 400.
    let r = app
        .post("/api/v1/track/click", json!({"affiliate_url": "https://x.io/?aff=nobody", "additional_data": {"test_mode": true}}))
        .await
        .expect(400);
    assert!(r.error().contains("program_id"), "{}", r.error());
    app.post("/api/v1/track/click", json!({"affiliate_url": "https://x.io/", "additional_data": {"test_mode": true, "program_id": 999}}))
        .await
        .expect(400);
}

on_both_backends!(browser_origins_and_cors);
async fn browser_origins_and_cors(app: TestApp) {
    let seed = app
        .seed_with(json!({"allowed_origins": ["https://shop.example"]}))
        .await;
    let body = json!({"affiliate_url": format!("https://shop.example/?aff={}", seed.short_link)});
    let r = app
        .send(
            "POST",
            "/api/v1/track/click",
            Some(body.clone()),
            &[("origin", "https://evil.example")],
        )
        .await
        .expect(403);
    assert_eq!(r.error(), "Origin not allowed");
    assert!(r.headers.get("access-control-allow-origin").is_none());
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        0
    );
    let r = app
        .send(
            "POST",
            "/api/v1/track/click",
            Some(body.clone()),
            &[("origin", "https://shop.example")],
        )
        .await
        .expect(200);
    assert_eq!(
        r.headers["access-control-allow-origin"],
        "https://shop.example"
    );
    // Server-side calls carry no Origin and pass.
    app.post("/api/v1/track/click", body).await.expect(200);
    // Preflight: allowed origin gets the CORS headers, another one 403.
    let pre = |origin: &'static str| {
        axum::http::Request::builder()
            .method("OPTIONS")
            .uri("/api/v1/track/click")
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type")
            .body(axum::body::Body::empty())
            .unwrap()
    };
    let ok = app.raw(pre("https://shop.example")).await.expect(204);
    assert_eq!(
        ok.headers["access-control-allow-origin"],
        "https://shop.example"
    );
    assert!(ok.headers["access-control-allow-methods"]
        .to_str()
        .unwrap()
        .contains("POST"));
    let no = app.raw(pre("https://evil.example")).await.expect(403);
    assert!(no.headers.get("access-control-allow-origin").is_none());
    // Sale and refund are backend-only: no CORS at all.
    let r = app
        .send(
            "POST",
            "/api/v1/track/sale",
            Some(json!({})),
            &[("origin", "https://shop.example")],
        )
        .await
        .expect(401);
    assert!(r.headers.get("access-control-allow-origin").is_none());
}

on_both_backends!(legacy_alias_tracks_clicks);
async fn legacy_alias_tracks_clicks(app: TestApp) {
    let seed = app.seed().await;
    let r = app
        .post(
            "/api/tracking/click",
            json!({"affiliate_url": format!("https://x.io/?aff={}", seed.short_link)}),
        )
        .await
        .expect(200);
    assert_eq!(r.body["success"], true);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        1
    );
}

on_both_backends!(concurrent_clicks_are_all_counted_once);
async fn concurrent_clicks_are_all_counted_once(app: TestApp) {
    let seed = app.seed().await;
    let n = 300;
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let router = app.router.clone();
            let link = seed.short_link.clone();
            tokio::spawn(async move {
                use tower::ServiceExt;
                let req = axum::http::Request::post("/api/v1/track/click")
                    .header("content-type", "application/json")
                    .body(axum::body::Body::from(
                        json!({"affiliate_url": format!("https://x.io/?aff={link}")}).to_string(),
                    ))
                    .unwrap();
                let res = router.oneshot(req).await.unwrap();
                assert_eq!(res.status(), 200);
                let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
                    .await
                    .unwrap();
                serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()["click_id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
        })
        .collect();
    let mut ids = std::collections::HashSet::new();
    for t in tasks {
        ids.insert(t.await.unwrap());
    }
    assert_eq!(ids.len(), n);
    assert_eq!(
        app.count("SELECT clicks FROM referral_links WHERE id = 1")
            .await,
        n as i64
    );
    assert_eq!(
        app.count("SELECT clicks FROM daily_rollups").await,
        n as i64
    );
    assert_eq!(
        app.count("SELECT total_clicks FROM partner_programs").await,
        n as i64
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        n as i64
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM customers").await, n as i64);
}

#[tokio::test]
async fn geo_comes_from_cdn_headers_only_behind_a_trusted_proxy() {
    use reftrack::http::client_ip::ClientResolver;
    for trusted in [true, false] {
        let app = TestApp::sqlite().await;
        let seed = app.seed().await;
        let resolver = ClientResolver::new(trusted.then(|| "*".parse().unwrap()), None).unwrap();
        let proxied = app.with_resolver(resolver);
        proxied
            .send(
                "POST",
                "/api/v1/track/click",
                Some(json!({"affiliate_url": format!("https://x.io/?aff={}", seed.short_link)})),
                &[
                    ("cf-ipcountry", "DE"),
                    ("x-vercel-ip-city", "Berlin"),
                    ("cf-region-code", "BE"),
                ],
            )
            .await
            .expect(200);
        let with_geo = proxied
            .count("SELECT COUNT(*) FROM affiliate_click_events WHERE geo_country = 'DE' AND geo_city = 'Berlin' AND geo_region = 'BE'")
            .await;
        let no_geo = proxied
            .count("SELECT COUNT(*) FROM affiliate_click_events WHERE geo_country IS NULL")
            .await;
        assert_eq!((with_geo, no_geo), if trusted { (1, 0) } else { (0, 1) });
    }
}

on_both_backends!(management_writes_get_the_write_connection_during_a_click_stream);
async fn management_writes_get_the_write_connection_during_a_click_stream(app: TestApp) {
    // On SQLite the committer holds the one write connection while batches keep
    // coming and gives it back when its queue is empty or in turns
    // (`WRITE_CONNECTION_TURN`); management writes share that connection. A writer
    // that never gave it back would fail them with the pool's check-out timeout.
    let seed = app.seed().await;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let clickers = (0..32).map(|_| async {
        let mut clicks = 0;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            app.post(
                "/api/v1/track/click",
                json!({"affiliate_url": format!("https://shop.example/?aff={}", seed.short_link)}),
            )
            .await
            .expect(200);
            clicks += 1;
        }
        clicks
    });
    let management = async {
        for i in 0..20 {
            app.admin(
                "POST",
                "/links",
                Some(json!({"program_id": seed.program_id, "partner_id": seed.partner_id, "short_link": format!("turn{i}")})),
            )
            .await
            .expect(201);
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    };
    let (clicks, ()) = futures::future::join(futures::future::join_all(clickers), management).await;
    let clicks: i64 = clicks.iter().sum();
    assert!(clicks >= 32, "the clicks kept flowing: {clicks}");
    assert_eq!(
        app.count("SELECT COUNT(*) FROM referral_links WHERE short_link LIKE 'turn%'")
            .await,
        20
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        clicks
    );
}
