//! `POST /api/v1/track/sale` and `POST /api/v1/track/refund`: attribution, commissions,
//! recurring limits, test mode and refund reversals.

use crate::common::*;
use serde_json::{json, Value};

const SALE: &str = "/api/v1/track/sale";
const REFUND: &str = "/api/v1/track/refund";

on_both_backends!(sale_records_event_commission_conversion_and_counters);
async fn sale_records_event_commission_conversion_and_counters(app: TestApp) {
    // A program in euros: the sale is in its currency.
    let seed = app
        .seed_with(json!({"commission": {"type": "percentage", "percent": 30}, "currency": "eur"}))
        .await;
    let click_id = app.lead(&seed, "user_42").await;
    let r = app
        .post_auth(SALE, &seed.api_token, json!({
            "transaction_id": "txn_1", "amount_cents": 9999, "customer_key": "user_42", "currency": "EUR",
            "sale_type": "subscription", "subscription_id": "sub_1", "product_id": "pro",
            "metadata": {"plan": "pro", "seats": 3},
        }))
        .await
        .expect(200);
    assert_eq!(r.body["success"], true);
    assert!(r.body["message"].is_string());
    let sale_id = r.body["sale_id"].as_i64().unwrap();
    let commission_id = r.body["commission_id"].as_i64().unwrap();
    assert_eq!(app.count(&format!(
        "SELECT COUNT(*) FROM affiliate_sale_events WHERE id = {sale_id} AND processor_event_id = 'txn_1' \
             AND amount_cents = 9999 AND currency = 'eur' AND sale_type = 'subscription' AND payment_status = 'paid' \
             AND subscription_id = 'sub_1' AND product_id = 'pro' AND metadata LIKE '%\"seats\":3%' AND NOT is_test AND NOT is_recurring"
    )).await, 1);
    // 30 % of 9999 = 2999.7, rounded half up to the cent.
    assert_eq!(app.count(&format!("SELECT amount_cents FROM commissions WHERE id = {commission_id} AND sale_id = {sale_id}")).await, 3000);
    assert_eq!(
        app.count(&format!(
            "SELECT partner_id FROM commissions WHERE id = {commission_id}"
        ))
        .await,
        seed.partner_id
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM customers WHERE customer_status = 'conversion' AND first_purchase_date IS NOT NULL").await, 1);
    assert_eq!(
        app.count("SELECT revenue_cents FROM daily_rollups").await,
        9999
    );
    assert_eq!(app.count("SELECT sales FROM daily_rollups").await, 1);
    assert_eq!(app.count("SELECT sale_events FROM daily_rollups").await, 1);
    assert_eq!(app.count("SELECT conversions FROM daily_rollups").await, 1);
    assert_eq!(
        app.count("SELECT commission_cents FROM daily_rollups")
            .await,
        3000
    );
    assert_eq!(
        app.count("SELECT total_sales * 1000000 + total_commission_cents FROM partner_programs")
            .await,
        1_003_000
    );
    // A second purchase is a sale but not a second conversion.
    app.post_auth(
        SALE,
        &seed.api_token,
        json!({"transaction_id": "txn_2", "amount_cents": 1, "click_id": click_id}),
    )
    .await
    .expect(200);
    assert_eq!(app.count("SELECT conversions FROM daily_rollups").await, 1);
    assert_eq!(app.count("SELECT sales FROM daily_rollups").await, 2);
    // The program's currency is the default.
    assert_eq!(app.count("SELECT COUNT(*) FROM affiliate_sale_events WHERE processor_event_id = 'txn_2' AND currency = 'eur'").await, 1);
}

on_both_backends!(sale_validation_and_auth);
async fn sale_validation_and_auth(app: TestApp) {
    let seed = app.seed().await;
    app.lead(&seed, "k").await;
    for (headers, _) in [
        (vec![], ()),
        (vec![("authorization", "Basic x")], ()),
        (vec![("authorization", "Bearer   ")], ()),
        (vec![("authorization", "Bearer rtk_nope")], ()),
    ] {
        let r = app
            .send(
                "POST",
                SALE,
                Some(json!({"transaction_id": "t", "amount_cents": 1, "customer_key": "k"})),
                &headers,
            )
            .await
            .expect(401);
        assert!(!r.error().is_empty());
    }
    let txn = "transaction_id is required and must be a string";
    let amount = "amount_cents is required and must be a positive integer";
    for (body, text) in [
        (json!({"amount_cents": 100, "customer_key": "k"}), txn),
        (
            json!({"transaction_id": 7, "amount_cents": 100, "customer_key": "k"}),
            txn,
        ),
        (
            json!({"transaction_id": "", "amount_cents": 100, "customer_key": "k"}),
            txn,
        ),
        (json!({"transaction_id": "t"}), amount),
        (
            json!({"transaction_id": "t", "amount_cents": 0, "customer_key": "k"}),
            amount,
        ),
        (
            json!({"transaction_id": "t", "amount_cents": -5, "customer_key": "k"}),
            amount,
        ),
        (
            json!({"transaction_id": "t", "amount_cents": 10.5, "customer_key": "k"}),
            amount,
        ),
        (
            json!({"transaction_id": "t", "amount_cents": "100", "customer_key": "k"}),
            amount,
        ),
        (
            json!({"transaction_id": "t", "amount_cents": 1e30, "customer_key": "k"}),
            amount,
        ),
        (
            json!({"transaction_id": "t", "amount_cents": 100}),
            "Customer not found. Provide customer_key or click_id.",
        ),
        (
            json!({"transaction_id": "t", "amount_cents": 100, "customer_key": "ghost"}),
            "Customer not found. Provide customer_key or click_id.",
        ),
        (
            json!({"transaction_id": "t", "amount_cents": 100, "click_id": "cust_1_1"}),
            "Customer not found. Provide customer_key or click_id.",
        ),
    ] {
        let r = app
            .post_auth(SALE, &seed.api_token, body.clone())
            .await
            .expect(400);
        assert_eq!(r.error(), text, "for {body}");
    }
    for body in [
        json!({"transaction_id": "t", "amount_cents": 1_000_000_000_001i64, "customer_key": "k"}),
        json!({"transaction_id": "t", "amount_cents": 1, "customer_key": "k", "currency": "dollars"}),
        json!({"transaction_id": "t", "amount_cents": 1, "customer_key": "k", "sale_type": "gift"}),
        json!({"transaction_id": "t", "amount_cents": 1, "customer_key": "k", "is_recurring": "yes"}),
        json!({"transaction_id": "t", "amount_cents": 1, "customer_key": "k", "metadata": [1]}),
        json!({"transaction_id": "x".repeat(300), "amount_cents": 1, "customer_key": "k"}),
    ] {
        app.post_auth(SALE, &seed.api_token, body).await.expect(400);
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_sale_events")
            .await,
        0
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM commissions").await, 0);
}

on_both_backends!(sale_attribution_failures);
async fn sale_attribution_failures(app: TestApp) {
    let seed = app.seed().await;
    let other = app.seed().await;
    // Customers of another program, by key and by click id.
    let foreign_click = app.lead(&other, "theirs").await;
    for body in [
        json!({"transaction_id": "t1", "amount_cents": 100, "customer_key": "theirs"}),
        json!({"transaction_id": "t1", "amount_cents": 100, "click_id": foreign_click}),
    ] {
        let r = app.post_auth(SALE, &seed.api_token, body).await.expect(400);
        assert_eq!(
            r.error(),
            "No affiliate attribution found for this customer in this program"
        );
    }
    // A partner without a partner-program record.
    let p = app
        .admin(
            "POST",
            "/partners",
            Some(json!({"name": "Norec", "code": "norec"})),
        )
        .await
        .expect(201);
    app.admin("POST", "/links", Some(json!({"program_id": seed.program_id, "partner_id": p.body["id"], "short_link": "norec"})))
        .await
        .expect(201);
    let click_id = app.click("norec").await;
    let r = app
        .post_auth(
            SALE,
            &seed.api_token,
            json!({"transaction_id": "t2", "amount_cents": 100, "click_id": click_id}),
        )
        .await
        .expect(400);
    assert_eq!(
        r.error(),
        "No partner-program relationship found for this customer"
    );
    // A customer without partner.
    let orphan = app.click(&seed.short_link).await;
    let sql = format!("UPDATE customers SET partner_id = NULL WHERE click_id = '{orphan}'");
    reftrack_exec(&app.database_url, &sql).await;
    let r = app
        .post_auth(
            SALE,
            &seed.api_token,
            json!({"transaction_id": "t3", "amount_cents": 100, "click_id": orphan}),
        )
        .await
        .expect(400);
    assert_eq!(r.error(), "partnerId required to create commission");
    // None of them consumed its transaction id or left a record.
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_sale_events")
            .await,
        0
    );
    app.post_auth(
        SALE,
        &other.api_token,
        json!({"transaction_id": "t1", "amount_cents": 100, "customer_key": "theirs"}),
    )
    .await
    .expect(200);
}

on_both_backends!(duplicate_transaction_id_is_409_across_programs);
async fn duplicate_transaction_id_is_409_across_programs(app: TestApp) {
    let seed = app.seed().await;
    let other = app.seed().await;
    app.lead(&seed, "a").await;
    app.lead(&other, "b").await;
    let first = app
        .post_auth(
            SALE,
            &seed.api_token,
            json!({"transaction_id": "same", "amount_cents": 500, "customer_key": "a"}),
        )
        .await
        .expect(200);
    for (token, key) in [(&seed.api_token, "a"), (&other.api_token, "b")] {
        let r = app
            .post_auth(
                SALE,
                token,
                json!({"transaction_id": "same", "amount_cents": 500, "customer_key": key}),
            )
            .await
            .expect(409);
        assert_eq!(
            r.error(),
            "Duplicate transaction_id. This sale has already been recorded."
        );
    }
    // The program's own retry learns what the first call recorded; another program
    // learns nothing of it.
    let r = app
        .post_auth(
            SALE,
            &seed.api_token,
            json!({"transaction_id": "same", "amount_cents": 500, "customer_key": "a"}),
        )
        .await
        .expect(409);
    assert_eq!(
        r.body,
        json!({"error": "Duplicate transaction_id. This sale has already been recorded.", "sale_id": first.body["sale_id"], "commission_id": first.body["commission_id"], "test_mode": false})
    );
    let r = app
        .post_auth(
            SALE,
            &other.api_token,
            json!({"transaction_id": "same", "amount_cents": 500, "customer_key": "b"}),
        )
        .await
        .expect(409);
    assert_eq!(
        r.body,
        json!({"error": "Duplicate transaction_id. This sale has already been recorded."})
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_sale_events")
            .await,
        1
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM commissions").await, 1);
    assert_eq!(
        app.count("SELECT CAST(SUM(sales) AS BIGINT) FROM daily_rollups")
            .await,
        1
    );
    // Concurrent duplicates in one process: exactly one wins.
    let calls = (0..8).map(|_| {
        app.post_auth(
            SALE,
            &seed.api_token,
            json!({"transaction_id": "race", "amount_cents": 5, "customer_key": "a"}),
        )
    });
    let replies = futures::future::join_all(calls).await;
    assert_eq!(replies.iter().filter(|r| r.status == 200).count(), 1);
    assert_eq!(replies.iter().filter(|r| r.status == 409).count(), 7);
}

on_both_backends!(flat_commission_and_recurring_limits);
async fn flat_commission_and_recurring_limits(app: TestApp) {
    let seed = app.seed_with(json!({"commission": {"type": "flat", "amount_cents": 500}, "recurring_commission_months": 0})).await;
    app.lead(&seed, "sub").await;
    let first = app
        .post_auth(SALE, &seed.api_token, json!({"transaction_id": "inv_1", "amount_cents": 2000, "customer_key": "sub", "subscription_id": "s1", "sale_type": "subscription"}))
        .await
        .expect(200);
    assert!(first.body["commission_id"].is_i64());
    assert_eq!(app.count("SELECT amount_cents FROM commissions").await, 500);
    // 0 months: renewals earn nothing, but they are sales.
    let renewal = app
        .post_auth(SALE, &seed.api_token, json!({"transaction_id": "inv_2", "amount_cents": 2000, "customer_key": "sub", "subscription_id": "s1", "is_recurring": true}))
        .await
        .expect(200);
    assert!(renewal.body["commission_id"].is_null());
    assert_eq!(
        renewal.body["message"],
        "Sale tracked successfully; no commission: the recurring commission period has ended"
    );
    assert!(renewal.body["sale_id"].is_i64());
    assert_eq!(app.count("SELECT COUNT(*) FROM commissions").await, 1);
    assert_eq!(
        app.count("SELECT revenue_cents FROM daily_rollups").await,
        4000
    );
    assert_eq!(
        app.count("SELECT commission_cents FROM daily_rollups")
            .await,
        500
    );
    // Unlimited: every renewal earns. Limited to 1 month: a renewal two months after
    // the first sale does not.
    app.admin(
        "PATCH",
        &format!("/programs/{}", seed.program_id),
        Some(json!({"recurring_commission_months": null})),
    )
    .await
    .expect(200);
    let r = app
        .post_auth(SALE, &seed.api_token, json!({"transaction_id": "inv_3", "amount_cents": 2000, "customer_key": "sub", "subscription_id": "s1", "is_recurring": true}))
        .await
        .expect(200);
    assert!(r.body["commission_id"].is_i64());
    app.admin(
        "PATCH",
        &format!("/programs/{}", seed.program_id),
        Some(json!({"recurring_commission_months": 1})),
    )
    .await
    .expect(200);
    let two_months = 62i64 * 86_400_000;
    let sql = format!("UPDATE affiliate_sale_events SET sale_date = sale_date - {two_months} WHERE processor_event_id = 'inv_1'");
    reftrack_exec(&app.database_url, &sql).await;
    let r = app
        .post_auth(SALE, &seed.api_token, json!({"transaction_id": "inv_4", "amount_cents": 2000, "customer_key": "sub", "subscription_id": "s1", "is_recurring": true}))
        .await
        .expect(200);
    assert!(r.body["commission_id"].is_null(), "{}", r.body);
}

on_both_backends!(renewals_stay_with_the_first_sales_partner);
async fn renewals_stay_with_the_first_sales_partner(app: TestApp) {
    let seed = app.seed().await;
    let click_id = app.lead(&seed, "sub").await;
    app.post_auth(SALE, &seed.api_token, json!({"transaction_id": "inv_1", "amount_cents": 1000, "customer_key": "sub", "subscription_id": "s1"})).await.expect(200);
    // The customer later clicks another partner's link: new sales credit bob, renewals
    // of the existing subscription stay with alice.
    let (bob, bob_link) = app.add_partner(&seed, "bob").await;
    app.post("/api/v1/track/click", json!({"affiliate_url": format!("https://x.io/?aff={bob_link}"), "existing_click_id": click_id}))
        .await
        .expect(200);
    app.post_auth(SALE, &seed.api_token, json!({"transaction_id": "inv_2", "amount_cents": 1000, "customer_key": "sub", "subscription_id": "s1", "is_recurring": true}))
        .await
        .expect(200);
    app.post_auth(
        SALE,
        &seed.api_token,
        json!({"transaction_id": "one_off", "amount_cents": 1000, "customer_key": "sub"}),
    )
    .await
    .expect(200);
    assert_eq!(app.count("SELECT c.partner_id FROM commissions c JOIN affiliate_sale_events s ON s.id = c.sale_id WHERE s.processor_event_id = 'inv_2'").await, seed.partner_id);
    assert_eq!(app.count("SELECT c.partner_id FROM commissions c JOIN affiliate_sale_events s ON s.id = c.sale_id WHERE s.processor_event_id = 'one_off'").await, bob);
}

on_both_backends!(test_mode_sale_creates_no_commission_or_metrics);
async fn test_mode_sale_creates_no_commission_or_metrics(app: TestApp) {
    let seed = app.seed().await;
    app.lead(&seed, "k").await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let r = app
            .post_auth(
                SALE,
                &seed.api_token,
                json!({"amount_cents": 100, "additional_data": {"test_mode": true}}),
            )
            .await
            .expect(200);
        assert_eq!(r.body["data"]["test_mode"], true);
        assert_eq!(r.body["data"]["programId"], seed.program_id);
        ids.push(r.body["data"]["eventId"].as_i64().unwrap());
    }
    assert_eq!(app.count("SELECT COUNT(DISTINCT processor_event_id) FROM affiliate_sale_events WHERE is_test AND processor_event_id LIKE 'test_txn_%'").await, 3);
    app.post_auth(SALE, &seed.api_token, json!({"transaction_id": "t_test", "amount_cents": 100, "customer_key": "k", "additional_data": {"test_mode": true}}))
        .await
        .expect(200);
    assert_eq!(app.count("SELECT COUNT(*) FROM commissions").await, 0);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM customers WHERE customer_status = 'conversion'")
            .await,
        0
    );
    assert_eq!(
        app.count(
            "SELECT CAST(SUM(sales + revenue_cents + sale_events) AS BIGINT) FROM daily_rollups"
        )
        .await,
        0
    );
    // Test mode still validates the amount and needs the API key.
    app.post_auth(
        SALE,
        &seed.api_token,
        json!({"amount_cents": 0, "additional_data": {"test_mode": true}}),
    )
    .await
    .expect(400);
    app.post(
        SALE,
        json!({"amount_cents": 1, "additional_data": {"test_mode": true}}),
    )
    .await
    .expect(401);
}

on_both_backends!(refunds_partial_full_repeated);
async fn refunds_partial_full_repeated(app: TestApp) {
    let seed = app
        .seed_with(json!({"commission": {"type": "percentage", "percent": 30}}))
        .await;
    app.lead(&seed, "k").await;
    let sale = app
        .post_auth(
            SALE,
            &seed.api_token,
            json!({"transaction_id": "txn", "amount_cents": 10000, "customer_key": "k"}),
        )
        .await
        .expect(200);
    let r = app.post_auth(REFUND, &seed.api_token, json!({"transaction_id": "txn", "refund_amount_cents": 2500, "refund_reason": "partial"})).await.expect(200);
    assert_eq!(
        r.body,
        json!({"success": true, "status": "refunded", "sale_id": sale.body["sale_id"], "commission_id": sale.body["commission_id"], "deduction_amount": 7.5})
    );
    assert_eq!(
        app.count("SELECT reversed_cents FROM commissions").await,
        750
    );
    // A partial refund shrinks the commission and leaves its status (pending, in its hold).
    assert_eq!(
        app.count("SELECT COUNT(*) FROM commissions WHERE status = 'pending'")
            .await,
        1
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM affiliate_sale_events WHERE payment_status = 'paid' AND refunded_cents = 2500 AND refund_reason = 'partial'").await, 1);
    assert_eq!(
        app.count("SELECT revenue_cents FROM daily_rollups").await,
        7500
    );
    assert_eq!(
        app.count("SELECT commission_cents FROM daily_rollups")
            .await,
        2250
    );
    assert_eq!(app.count("SELECT sales FROM daily_rollups").await, 1);
    // Over what is left: 400, nothing changes.
    let r = app
        .post_auth(
            REFUND,
            &seed.api_token,
            json!({"transaction_id": "txn", "refund_amount_cents": 7501}),
        )
        .await
        .expect(400);
    assert!(r.error().contains("refund_amount_cents"));
    // The rest, then a repeat.
    let r = app
        .post_auth(REFUND, &seed.api_token, json!({"transaction_id": "txn"}))
        .await
        .expect(200);
    assert_eq!(r.body["status"], "reversed");
    assert_eq!(r.body["deduction_amount"], 22.5);
    assert_eq!(app.count("SELECT COUNT(*) FROM affiliate_sale_events WHERE payment_status = 'refunded' AND refunded_cents = 10000").await, 1);
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM commissions WHERE status = 'reversed' AND reversed_cents = 3000"
        )
        .await,
        1
    );
    assert_eq!(
        app.count("SELECT revenue_cents + sales + commission_cents FROM daily_rollups")
            .await,
        0
    );
    assert_eq!(app.count("SELECT total_revenue_cents + total_sales + total_commission_cents FROM partner_programs").await, 0);
    for body in [
        json!({"transaction_id": "txn"}),
        json!({"transaction_id": "txn", "refund_amount_cents": 10000}),
    ] {
        let r = app
            .post_auth(REFUND, &seed.api_token, body)
            .await
            .expect(200);
        assert_eq!(r.body["status"], "skipped");
        assert_eq!(r.body["deduction_amount"], 0.0);
    }
    assert_eq!(
        app.count("SELECT revenue_cents + sales + commission_cents FROM daily_rollups")
            .await,
        0
    );
    // Conversions stay: the customer did buy.
    assert_eq!(app.count("SELECT conversions FROM daily_rollups").await, 1);
}

on_both_backends!(a_refund_sent_again_under_its_refund_id_is_applied_once);
async fn a_refund_sent_again_under_its_refund_id_is_applied_once(app: TestApp) {
    let seed = app
        .seed_with(json!({"commission": {"type": "percentage", "percent": 30}}))
        .await;
    app.lead(&seed, "k").await;
    app.post_auth(
        SALE,
        &seed.api_token,
        json!({"transaction_id": "txn", "amount_cents": 10000, "customer_key": "k"}),
    )
    .await
    .expect(200);
    let partial =
        json!({"transaction_id": "txn", "refund_amount_cents": 2500, "refund_id": "re_1"});
    let r = app
        .post_auth(REFUND, &seed.api_token, partial.clone())
        .await
        .expect(200);
    assert_eq!(
        (&r.body["status"], &r.body["deduction_amount"]),
        (&json!("refunded"), &json!(7.5))
    );
    // A backend retrying after a lost answer: no second refund.
    let r = app
        .post_auth(REFUND, &seed.api_token, partial.clone())
        .await
        .expect(200);
    assert_eq!(
        (&r.body["status"], &r.body["deduction_amount"]),
        (&json!("skipped"), &json!(0.0))
    );
    assert!(
        r.body["sale_id"].is_i64() && r.body["commission_id"].is_i64(),
        "{}",
        r.body
    );
    assert_eq!(
        app.count("SELECT refunded_cents FROM affiliate_sale_events")
            .await,
        2500
    );
    assert_eq!(
        app.count("SELECT reversed_cents FROM commissions").await,
        750
    );
    assert_eq!(
        app.count("SELECT revenue_cents FROM daily_rollups").await,
        7500
    );
    // Another amount under a used id is a mistake, said so; another id is another refund.
    let r = app
        .post_auth(
            REFUND,
            &seed.api_token,
            json!({"transaction_id": "txn", "refund_amount_cents": 1000, "refund_id": "re_1"}),
        )
        .await
        .expect(409);
    assert_eq!(
        r.error(),
        "refund_id re_1 was already used for a refund of 2500 cents of this sale"
    );
    app.post_auth(
        REFUND,
        &seed.api_token,
        json!({"transaction_id": "txn", "refund_amount_cents": 2500, "refund_id": "re_2"}),
    )
    .await
    .expect(200);
    assert_eq!(
        app.count("SELECT refunded_cents FROM affiliate_sale_events")
            .await,
        5000
    );
    let r = app
        .post_auth(
            REFUND,
            &seed.api_token,
            json!({"transaction_id": "txn", "refund_id": 7}),
        )
        .await
        .expect(400);
    assert_eq!(r.error(), "refund_id must be a string");

    // The sale's amount field is not a refund field: refused, not read as "refund everything".
    for field in ["amount_cents", "amount"] {
        let r = app
            .post_auth(
                REFUND,
                &seed.api_token,
                json!({"transaction_id": "txn", field: 50}),
            )
            .await
            .expect(400);
        assert_eq!(r.error(), format!("{field} is not a refund field: send refund_amount_cents for a partial refund, or leave the amount out to refund all that is left"));
    }
    assert_eq!(
        app.count("SELECT refunded_cents FROM affiliate_sale_events")
            .await,
        5000
    );
    // The interface's first check stays first.
    let r = app
        .post_auth(REFUND, &seed.api_token, json!({"amount_cents": 50}))
        .await
        .expect(400);
    assert_eq!(r.error(), "transaction_id is required");
}

on_both_backends!(refund_errors_and_program_scope);
async fn refund_errors_and_program_scope(app: TestApp) {
    let seed = app.seed().await;
    let other = app.seed().await;
    app.lead(&seed, "k").await;
    app.post_auth(
        SALE,
        &seed.api_token,
        json!({"transaction_id": "mine", "amount_cents": 100, "customer_key": "k"}),
    )
    .await
    .expect(200);
    app.post(REFUND, json!({"transaction_id": "mine"}))
        .await
        .expect(401);
    let r = app
        .post_auth(REFUND, &seed.api_token, json!({}))
        .await
        .expect(400);
    assert_eq!(r.error(), "transaction_id is required");
    let r = app
        .post_auth(REFUND, &seed.api_token, json!({"transaction_id": 5}))
        .await
        .expect(400);
    assert_eq!(r.error(), "transaction_id is required");
    let r = app
        .post_auth(REFUND, &seed.api_token, json!({"transaction_id": "nope"}))
        .await
        .expect(404);
    assert_eq!(r.error(), "Sale not found for transaction_id");
    // Another program's key cannot refund this sale.
    let r = app
        .post_auth(REFUND, &other.api_token, json!({"transaction_id": "mine"}))
        .await
        .expect(404);
    assert_eq!(r.error(), "Sale not found for transaction_id");
    for amount in [json!(0), json!(-1), json!("5"), json!(1.5)] {
        app.post_auth(
            REFUND,
            &seed.api_token,
            json!({"transaction_id": "mine", "refund_amount_cents": amount}),
        )
        .await
        .expect(400);
    }
    assert_eq!(
        app.count("SELECT refunded_cents FROM affiliate_sale_events")
            .await,
        0
    );
    // Legacy alias.
    app.post_auth(
        "/api/tracking/refund",
        &seed.api_token,
        json!({"transaction_id": "mine"}),
    )
    .await
    .expect(200);
}

on_both_backends!(refund_of_a_sale_without_commission_and_test_refunds);
async fn refund_of_a_sale_without_commission_and_test_refunds(app: TestApp) {
    let seed = app
        .seed_with(json!({"recurring_commission_months": 0}))
        .await;
    app.lead(&seed, "k").await;
    app.post_auth(SALE, &seed.api_token, json!({"transaction_id": "first", "amount_cents": 100, "customer_key": "k", "subscription_id": "s"})).await.expect(200);
    app.post_auth(SALE, &seed.api_token, json!({"transaction_id": "renew", "amount_cents": 100, "customer_key": "k", "subscription_id": "s", "is_recurring": true})).await.expect(200);
    let r = app
        .post_auth(REFUND, &seed.api_token, json!({"transaction_id": "renew"}))
        .await
        .expect(200);
    assert_eq!(r.body["status"], "no_commission");
    assert!(r.body["commission_id"].is_null());
    assert_eq!(
        app.count("SELECT revenue_cents FROM daily_rollups").await,
        100
    );
    // Test refunds touch test sales only.
    app.post_auth(SALE, &seed.api_token, json!({"transaction_id": "tt", "amount_cents": 100, "additional_data": {"test_mode": true}})).await.expect(200);
    let r = app
        .post_auth(
            REFUND,
            &seed.api_token,
            json!({"transaction_id": "tt", "additional_data": {"test_mode": true}}),
        )
        .await
        .expect(200);
    assert_eq!(r.body["test_mode"], true);
    app.post_auth(REFUND, &seed.api_token, json!({"transaction_id": "tt"}))
        .await
        .expect(404);
    app.post_auth(
        REFUND,
        &seed.api_token,
        json!({"transaction_id": "first", "additional_data": {"test_mode": true}}),
    )
    .await
    .expect(404);
    assert_eq!(
        app.count("SELECT revenue_cents FROM daily_rollups").await,
        100
    );
}

on_both_backends!(concurrent_sales_answer_and_count_as_one_by_one);
async fn concurrent_sales_answer_and_count_as_one_by_one(app: TestApp) {
    // Sales arriving together are recorded together (one statement per batch for those
    // that resolve plainly, one by one for the rest): every answer and figure must be
    // what sequential sales give.
    let seed = app
        .seed_with(json!({"commission": {"type": "percentage", "percent": 30}, "currency": "eur"}))
        .await;
    let other = app.seed().await;
    for i in 0..12 {
        app.lead(&seed, &format!("k{i}")).await;
    }
    app.lead(&other, "elsewhere").await;
    let sale = |tx: String, key: &str| {
        app.post_auth(
            SALE,
            &seed.api_token,
            json!({"transaction_id": tx, "amount_cents": 1000, "customer_key": key}),
        )
    };
    let mut requests = Vec::new();
    requests.push(app.post_auth(
        SALE,
        &seed.api_token,
        json!({
            "transaction_id": "t0", "amount_cents": 1000, "customer_key": "k0", "currency": "EUR",
            "sale_type": "subscription", "product_id": "pro", "metadata": {"plan": "pro"},
        }),
    ));
    for i in 1..10 {
        requests.push(sale(format!("t{i}"), &format!("k{i}")));
    }
    requests.push(sale("t0-again".into(), "k0"));
    requests.push(sale("same".into(), "k10"));
    requests.push(sale("same".into(), "k11"));
    requests.push(sale("t-unknown".into(), "nobody"));
    requests.push(sale("t-elsewhere".into(), "elsewhere"));
    let replies = futures::future::join_all(requests).await;

    let statuses: Vec<u16> = replies.iter().map(|r| r.status.as_u16()).collect();
    assert!(statuses[..11].iter().all(|s| *s == 200), "{statuses:?}");
    let mut same: Vec<u16> = statuses[11..13].to_vec();
    same.sort();
    assert_eq!(same, [200, 409]);
    let conflict = replies[11..13].iter().find(|r| r.status == 409).unwrap();
    assert_eq!(
        conflict.error(),
        "Duplicate transaction_id. This sale has already been recorded."
    );
    assert_eq!(replies[13].status, 400);
    assert_eq!(
        replies[13].error(),
        "Customer not found. Provide customer_key or click_id."
    );
    assert_eq!(replies[14].status, 400);
    assert_eq!(
        replies[14].error(),
        "No affiliate attribution found for this customer in this program"
    );

    // Each answer names its own sale and that sale's commission.
    let mut sale_ids = std::collections::HashSet::new();
    for r in replies.iter().filter(|r| r.status == 200) {
        let (sale_id, commission_id) = (
            r.body["sale_id"].as_i64().unwrap(),
            r.body["commission_id"].as_i64().unwrap(),
        );
        assert!(sale_ids.insert(sale_id));
        assert_eq!(app.count(&format!(
            "SELECT COUNT(*) FROM commissions c JOIN affiliate_sale_events s ON s.id = c.sale_id \
                 WHERE c.id = {commission_id} AND s.id = {sale_id} AND c.amount_cents = 300 AND c.status = 'pending' \
                 AND s.amount_cents = 1000 AND s.partner_id = {} AND s.customer_key LIKE 'k%'", seed.partner_id
        )).await, 1);
    }
    assert_eq!(sale_ids.len(), 12);
    let p = seed.program_id;
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM affiliate_sale_events WHERE program_id = {p}"
        ))
        .await,
        12
    );
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM commissions WHERE program_id = {p}"
        ))
        .await,
        12
    );
    // k0 bought twice: 11 customers converted (their events' `converted` follows:
    // dashboard_reports.rs).
    assert_eq!(app.count(&format!("SELECT COUNT(*) FROM customers WHERE program_id = {p} AND customer_status = 'conversion' AND first_purchase_date IS NOT NULL")).await, 11);
    assert_eq!(app.count(&format!("SELECT CAST(SUM(sales) * 1000 + SUM(conversions) AS BIGINT) FROM daily_rollups WHERE program_id = {p}")).await, 12_011);
    assert_eq!(
        app.count(&format!(
            "SELECT CAST(SUM(revenue_cents) AS BIGINT) FROM daily_rollups WHERE program_id = {p}"
        ))
        .await,
        12_000
    );
    assert_eq!(app.count(&format!("SELECT CAST(SUM(commission_cents) AS BIGINT) FROM daily_rollups WHERE program_id = {p}")).await, 3_600);
    assert_eq!(app.count(&format!(
        "SELECT total_sales * 1000000 + total_commission_cents FROM partner_programs WHERE program_id = {p}"
    )).await, 12_003_600);
    assert_eq!(app.count(
        "SELECT COUNT(*) FROM affiliate_sale_events s JOIN commissions c ON c.sale_id = s.id \
             WHERE s.processor_event_id = 't0' AND s.currency = 'eur' AND c.currency = 'eur' \
             AND s.sale_type = 'subscription' AND s.product_id = 'pro' AND s.metadata LIKE '%\"plan\":\"pro\"%' \
             AND s.payment_status = 'paid' AND NOT s.is_recurring AND NOT s.is_test AND s.sale_date = s.created_at"
    ).await, 1);
    // Nothing was written for the refused sales, nor in the other program.
    assert_eq!(app.count("SELECT COUNT(*) FROM affiliate_sale_events WHERE processor_event_id IN ('t-unknown', 't-elsewhere')").await, 0);
    assert_eq!(app.count(&format!("SELECT COUNT(*) FROM customers WHERE program_id = {} AND customer_status = 'conversion'", other.program_id)).await, 0);
}

on_both_backends!(generated_test_transaction_ids_never_collide);
async fn generated_test_transaction_ids_never_collide(app: TestApp) {
    let at = 1_790_000_000_000;
    let app = app.with_clock(std::sync::Arc::new(
        reftrack::domain::time::ManualClock::at(at),
    ));
    let seed = app.seed().await;
    let test_sale = |id: Option<String>| {
        let mut body = json!({"amount_cents": 100, "additional_data": {"test_mode": true}});
        if let Some(id) = id {
            body["transaction_id"] = json!(id);
        }
        app.post_auth(SALE, &seed.api_token, body)
    };
    // This millisecond's id is taken already (by a client, or another process on the
    // same database): generated ids move on past it, and past each other.
    test_sale(Some(format!("test_txn_{at}"))).await.expect(200);
    test_sale(None).await.expect(200);
    test_sale(None).await.expect(200);
    let taken = app
        .count(&format!(
            "SELECT COUNT(*) FROM affiliate_sale_events WHERE is_test AND processor_event_id IN \
             ('test_txn_{at}', 'test_txn_{}', 'test_txn_{}')",
            at + 1,
            at + 2
        ))
        .await;
    assert_eq!(taken, 3);
    // An id sent twice is still a duplicate, and the answer says the first was a test.
    let r = test_sale(Some(format!("test_txn_{at}"))).await.expect(409);
    assert_eq!(
        r.error(),
        "Duplicate transaction_id. This sale has already been recorded."
    );
    assert_eq!(
        (&r.body["test_mode"], &r.body["commission_id"]),
        (&json!(true), &Value::Null)
    );
}
