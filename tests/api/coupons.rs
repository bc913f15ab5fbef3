//! Coupon codes: created on links (unique per program whatever their case), listed,
//! archived, shown on the link; a sale naming one that no click or customer attributes
//! goes to the link's partner, and a click attribution wins.

use crate::common::*;
use serde_json::{json, Value};

const SALE: &str = "/api/v1/track/sale";

async fn coupon(app: &TestApp, link: i64, body: Value) -> Reply {
    app.admin("POST", &format!("/links/{link}/coupons"), Some(body))
        .await
}

async fn sale(app: &TestApp, seed: &Seed, body: Value) -> Reply {
    app.post_auth(SALE, &seed.api_token, body).await
}

/// The partner of the commission of the sale `sale_id`.
async fn commission_partner(app: &TestApp, sale_id: i64) -> i64 {
    app.count(&format!(
        "SELECT partner_id FROM commissions WHERE sale_id = {sale_id} AND kind = 'sale'"
    ))
    .await
}

on_both_backends!(coupons_are_created_listed_archived_and_shown_on_the_link);
async fn coupons_are_created_listed_archived_and_shown_on_the_link(app: TestApp) {
    let seed = app.seed().await;
    let link = app.link_id(&seed.short_link).await;
    let c = coupon(&app, link, json!({"code": " Podcast20 "}))
        .await
        .expect(201);
    assert_eq!(c.body["code"], "Podcast20");
    assert_eq!(c.body["status"], "active");
    assert_eq!(c.body["link_id"], link);
    assert_eq!(c.body["program_id"], seed.program_id);
    assert!(c.body["stripe_promotion_code"].is_null());
    assert!(c.body["archived_at"].is_null());
    let first = c.body["id"].as_i64().unwrap();

    // Unique per program whatever the case; a promotion code too.
    let r = coupon(&app, link, json!({"code": "PODCAST20"}))
        .await
        .expect(409);
    assert_eq!(
        r.error(),
        "A coupon with this code already exists in this program"
    );
    coupon(
        &app,
        link,
        json!({"code": "SPRING", "stripe_promotion_code": "promo_1Spring"}),
    )
    .await
    .expect(201);
    let (_, bob_link) = app.add_partner(&seed, "bob").await;
    let bob_link = app.link_id(&bob_link).await;
    let r = coupon(&app, bob_link, json!({"code": "podcast20"}))
        .await
        .expect(409);
    assert_eq!(
        r.error(),
        "A coupon with this code already exists in this program"
    );
    let r = coupon(
        &app,
        bob_link,
        json!({"code": "BOB", "stripe_promotion_code": "promo_1Spring"}),
    )
    .await
    .expect(409);
    assert_eq!(
        r.error(),
        "A coupon with this stripe_promotion_code already exists in this program"
    );

    // Bad input and unknown links.
    for (body, text) in [
        (
            json!({"code": "two words"}),
            "code must be 1 to 64 letters, digits, '-' or '_'",
        ),
        (
            json!({"code": ""}),
            "code must be 1 to 64 letters, digits, '-' or '_'",
        ),
        (
            json!({"code": "a,b"}),
            "code must be 1 to 64 letters, digits, '-' or '_'",
        ),
        (
            json!({"code": "OK", "stripe_promotion_code": "coupon_1"}),
            "stripe_promotion_code must be a Stripe promotion code id (promo_…)",
        ),
    ] {
        let r = coupon(&app, link, body.clone()).await.expect(400);
        assert_eq!(r.error(), text, "{body}");
    }
    let r = coupon(&app, link, json!({"code": 5})).await.expect(400);
    assert!(
        r.error().starts_with("Invalid request body"),
        "{}",
        r.error()
    );
    coupon(&app, link, json!({"code": "X", "extra": 1}))
        .await
        .expect(400);
    coupon(&app, 9999, json!({"code": "NOPE"}))
        .await
        .expect(404);
    app.send(
        "POST",
        &format!("/api/admin/links/{link}/coupons"),
        Some(json!({"code": "NOAUTH"})),
        &[],
    )
    .await
    .expect(401);

    // The link shows its active codes, oldest first.
    let l = app
        .admin("GET", &format!("/links/{link}"), None)
        .await
        .expect(200);
    assert_eq!(l.body["coupon_codes"], json!(["Podcast20", "SPRING"]));
    let listed = app
        .admin(
            "GET",
            &format!("/links?program_id={}", seed.program_id),
            None,
        )
        .await
        .expect(200);
    let mine = listed.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["id"] == link)
        .unwrap()
        .clone();
    assert_eq!(mine["coupon_codes"], json!(["Podcast20", "SPRING"]));

    // The list: newest first, paged, filtered by status.
    let r = app
        .admin("GET", &format!("/links/{link}/coupons?limit=1"), None)
        .await
        .expect(200);
    assert_eq!(r.body["data"][0]["code"], "SPRING");
    let cursor = r.body["next_cursor"].as_str().unwrap().to_string();
    let r = app
        .admin(
            "GET",
            &format!("/links/{link}/coupons?limit=1&cursor={cursor}"),
            None,
        )
        .await
        .expect(200);
    assert_eq!(r.body["data"][0]["code"], "Podcast20");
    assert!(r.body["next_cursor"].is_null());
    app.admin("GET", &format!("/links/{link}/coupons?status=gone"), None)
        .await
        .expect(400);
    app.admin("GET", "/links/9999/coupons", None)
        .await
        .expect(404);

    // Archived: out of the link's codes, listed as archived, its code free again.
    let r = app
        .admin("DELETE", &format!("/links/{link}/coupons/{first}"), None)
        .await
        .expect(200);
    assert_eq!(r.body["status"], "archived");
    assert!(r.body["archived_at"].is_string());
    let r = app
        .admin("DELETE", &format!("/links/{link}/coupons/{first}"), None)
        .await
        .expect(409);
    assert_eq!(r.error(), "The coupon is archived already");
    app.admin(
        "DELETE",
        &format!("/links/{bob_link}/coupons/{first}"),
        None,
    )
    .await
    .expect(404);
    app.admin("DELETE", &format!("/links/{link}/coupons/9999"), None)
        .await
        .expect(404);
    let r = app
        .admin(
            "GET",
            &format!("/links/{link}/coupons?status=archived"),
            None,
        )
        .await
        .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["data"][0]["id"], first);
    let r = app
        .admin("GET", &format!("/links/{link}/coupons?status=active"), None)
        .await
        .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1);
    let l = app
        .admin("GET", &format!("/links/{link}"), None)
        .await
        .expect(200);
    assert_eq!(l.body["coupon_codes"], json!(["SPRING"]));
    coupon(&app, bob_link, json!({"code": "PODCAST20"}))
        .await
        .expect(201);

    // Another program may use the same code.
    let other = app.seed().await;
    let other_link = app.link_id(&other.short_link).await;
    coupon(&app, other_link, json!({"code": "spring"}))
        .await
        .expect(201);
}

on_both_backends!(a_coupon_attributes_a_sale_that_no_click_does);
async fn a_coupon_attributes_a_sale_that_no_click_does(app: TestApp) {
    let seed = app.seed().await;
    let link = app.link_id(&seed.short_link).await;
    coupon(&app, link, json!({"code": "PODCAST20"}))
        .await
        .expect(201);

    // Only a coupon code, in another case: the link's partner earns.
    let r = sale(
        &app,
        &seed,
        json!({"transaction_id": "c1", "amount_cents": 10000, "coupon_code": "podcast20"}),
    )
    .await
    .expect(200);
    let sale_id = r.body["sale_id"].as_i64().unwrap();
    assert!(r.body["commission_id"].is_i64());
    assert_eq!(commission_partner(&app, sale_id).await, seed.partner_id);
    assert_eq!(
        app.count(&format!(
            "SELECT partner_id FROM affiliate_sale_events WHERE id = {sale_id}"
        ))
        .await,
        seed.partner_id
    );
    assert_eq!(
        app.count("SELECT total_sales FROM partner_programs").await,
        1
    );
    assert_eq!(app.count("SELECT conversions FROM daily_rollups").await, 1);

    // With a customer key the customer is the partner's from then on.
    sale(&app, &seed, json!({"transaction_id": "c2", "amount_cents": 1000, "coupon_code": "Podcast20", "customer_key": "carol"})).await.expect(200);
    let r = sale(
        &app,
        &seed,
        json!({"transaction_id": "c3", "amount_cents": 1000, "customer_key": "carol"}),
    )
    .await
    .expect(200);
    assert_eq!(
        commission_partner(&app, r.body["sale_id"].as_i64().unwrap()).await,
        seed.partner_id
    );

    // A click attribution wins over the coupon of another partner's link.
    let (bob, bob_link) = app.add_partner(&seed, "bob").await;
    let click_id = app.click(&bob_link).await;
    app.post_auth(
        "/api/v1/track/lead",
        &seed.api_token,
        json!({"click_id": click_id, "customer_key": "dave"}),
    )
    .await
    .expect(200);
    let r = sale(&app, &seed, json!({"transaction_id": "c4", "amount_cents": 1000, "customer_key": "dave", "coupon_code": "PODCAST20"})).await.expect(200);
    assert_eq!(
        commission_partner(&app, r.body["sale_id"].as_i64().unwrap()).await,
        bob
    );
    let click_id = app.click(&bob_link).await;
    let r = sale(&app, &seed, json!({"transaction_id": "c5", "amount_cents": 1000, "click_id": click_id, "coupon_code": "PODCAST20"})).await.expect(200);
    assert_eq!(
        commission_partner(&app, r.body["sale_id"].as_i64().unwrap()).await,
        bob
    );

    // No coupon of that code, no customer: nothing recorded.
    let text =
        "Coupon code not found. Provide a coupon_code of an active link, customer_key or click_id.";
    let r = sale(
        &app,
        &seed,
        json!({"transaction_id": "c6", "amount_cents": 1000, "coupon_code": "NOPE"}),
    )
    .await
    .expect(400);
    assert_eq!(r.error(), text);
    let r = sale(&app, &seed, json!({"transaction_id": "c6", "amount_cents": 1000, "coupon_code": "NOPE", "customer_key": "nobody"})).await.expect(400);
    assert_eq!(r.error(), text);
    // Without a coupon the interface's own text stays.
    let r = sale(
        &app,
        &seed,
        json!({"transaction_id": "c6", "amount_cents": 1000}),
    )
    .await
    .expect(400);
    assert_eq!(
        r.error(),
        "Customer not found. Provide customer_key or click_id."
    );
    let r = sale(
        &app,
        &seed,
        json!({"transaction_id": "c6", "amount_cents": 1000, "coupon_code": 7}),
    )
    .await
    .expect(400);
    assert!(r.error().contains("coupon_code"), "{}", r.error());
    // A coupon of another program attributes nothing here.
    let other = app.seed().await;
    let other_link = app.link_id(&other.short_link).await;
    coupon(&app, other_link, json!({"code": "ELSEWHERE"}))
        .await
        .expect(201);
    sale(
        &app,
        &seed,
        json!({"transaction_id": "c6", "amount_cents": 1000, "coupon_code": "ELSEWHERE"}),
    )
    .await
    .expect(400);

    // An archived coupon, or one of an inactive link, attributes nothing.
    let listed = app
        .admin("GET", &format!("/links/{link}/coupons"), None)
        .await
        .expect(200);
    let id = listed.body["data"][0]["id"].as_i64().unwrap();
    app.admin("DELETE", &format!("/links/{link}/coupons/{id}"), None)
        .await
        .expect(200);
    sale(
        &app,
        &seed,
        json!({"transaction_id": "c7", "amount_cents": 1000, "coupon_code": "PODCAST20"}),
    )
    .await
    .expect(400);
    coupon(&app, link, json!({"code": "WINTER"}))
        .await
        .expect(201);
    app.admin(
        "PATCH",
        &format!("/links/{link}"),
        Some(json!({"status": "inactive"})),
    )
    .await
    .expect(200);
    sale(
        &app,
        &seed,
        json!({"transaction_id": "c7", "amount_cents": 1000, "coupon_code": "winter"}),
    )
    .await
    .expect(400);
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM affiliate_sale_events WHERE processor_event_id IN ('c6', 'c7')"
        )
        .await,
        0
    );

    // A transaction id is still accepted once.
    let bob_link_id = app.link_id(&bob_link).await;
    coupon(&app, bob_link_id, json!({"code": "BOB"}))
        .await
        .expect(201);
    let r = sale(
        &app,
        &seed,
        json!({"transaction_id": "c1", "amount_cents": 1000, "coupon_code": "bob"}),
    )
    .await
    .expect(409);
    assert_eq!(
        r.error(),
        "Duplicate transaction_id. This sale has already been recorded."
    );

    // What the write path stored agrees with the figures recomputed from the events.
    let report = reftrack::verify::check(&*app.store).await.unwrap();
    assert!(
        report.ok(),
        "{}",
        serde_json::to_string_pretty(&report.to_json()).unwrap()
    );
}
