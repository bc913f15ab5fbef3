//! `POST /api/v1/track/click` (§4.1, D4–D6, D11) and its legacy alias.

mod common;
use common::*;
use serde_json::json;

on_both_backends! {
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
        assert!(reftrack::domain::click_id::is_well_formed(click_id), "{click_id}");
        assert_eq!(app.count("SELECT COUNT(*) FROM customers WHERE customer_status = 'click'").await, 1);
        assert_eq!(
            app.count("SELECT COUNT(*) FROM affiliate_click_events WHERE device_type = 'desktop' AND browser_name = 'Chrome' AND session_id = 's1'").await,
            1
        );
        let link = app.admin("GET", "/links/1", None).await.expect(200);
        assert_eq!(link.body["clicks"], 1);
        assert!(link.body["last_clicked"].is_string());
        assert_eq!(app.count("SELECT total_clicks FROM partner_programs").await, 1);
        assert_eq!(app.count("SELECT clicks FROM daily_rollups").await, 1);
    }
}
