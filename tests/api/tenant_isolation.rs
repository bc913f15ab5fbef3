//! One workspace cannot hurt another: amounts an owner sets are bounded, a counter that
//! would overflow refuses the write that caused it (a 400, nothing stored), and that write
//! fails alone inside its group commit: the other writes of its batch, of another
//! workspace's program, commit and are answered as if it had never been there.

use crate::common::*;
use futures::future::join_all;
use futures::FutureExt;
use serde_json::json;

const CLICK: &str = "/api/v1/track/click";
const SALE: &str = "/api/v1/track/sale";
const TOO_LARGE: &str =
    "This would take the program's totals past the largest amount Reftrack can store";

on_both_backends!(an_owner_cannot_set_an_unbounded_flat_commission);
async fn an_owner_cannot_set_an_unbounded_flat_commission(app: TestApp) {
    let seed = app.seed().await;
    let path = format!("/programs/{}", seed.program_id);
    for amount in [i64::MAX, 100_000_001] {
        let r = app
            .admin(
                "PATCH",
                &path,
                Some(json!({"commission": {"type": "flat", "amount_cents": amount}})),
            )
            .await
            .expect(400);
        assert_eq!(
            r.error(),
            "commission.amount_cents must be a whole number from 0 to 100000000"
        );
    }
    let body = json!({"workspace_id": seed.workspace_id, "name": "x", "commission": {"type": "flat", "amount_cents": i64::MAX}});
    app.admin("POST", "/programs", Some(body)).await.expect(400);
    let r = app
        .admin(
            "PATCH",
            &path,
            Some(json!({"commission": {"type": "flat", "amount_cents": 100_000_000}})),
        )
        .await
        .expect(200);
    assert_eq!(r.body["commission"]["amount_cents"], 100_000_000);
}

on_both_backends!(an_overflowing_sale_fails_alone_and_other_workspaces_keep_tracking);
async fn an_overflowing_sale_fails_alone_and_other_workspaces_keep_tracking(app: TestApp) {
    // The attacker's program: 100 % of each sale, its partner's totals one large sale
    // short of the largest 64-bit integer.
    let attacker = app
        .seed_with(json!({"commission": {"type": "percentage", "percent": 100}}))
        .await;
    let victim = app.seed().await;
    let attacker_click = app.click(&attacker.short_link).await;
    app.post_auth(
        SALE,
        &attacker.api_token,
        json!({"transaction_id": "a0", "amount_cents": 1000, "click_id": attacker_click}),
    )
    .await
    .expect(200);
    let near = i64::MAX - 1_000_000_000;
    reftrack_exec(
        &app.database_url,
        &format!(
        "UPDATE partner_programs SET total_revenue_cents = {near}, total_commission_cents = {near} \
             WHERE program_id = {}", attacker.program_id),
    )
    .await;
    let victim_clicks: Vec<String> = join_all((0..40).map(|_| app.click(&victim.short_link))).await;

    // Everything at once and interleaved, so that the attacker's sales share batches
    // with the victim's clicks and sales.
    let mut calls = Vec::new();
    for (i, click_id) in victim_clicks.iter().enumerate() {
        if i % 4 == 0 {
            calls.push(app.post_auth(SALE, &attacker.api_token, json!({
                "transaction_id": format!("attack{i}"), "amount_cents": 1_000_000_000_000i64,
                "click_id": attacker_click,
            })).boxed_local());
        }
        calls.push(
            app.post_auth(
                SALE,
                &victim.api_token,
                json!({
                    "transaction_id": format!("v{i}"), "amount_cents": 2500, "click_id": click_id,
                }),
            )
            .boxed_local(),
        );
        for _ in 0..4 {
            calls.push(
                app.post(
                    CLICK,
                    json!({
                        "affiliate_url": format!("https://shop.example/?aff={}", victim.short_link),
                    }),
                )
                .boxed_local(),
            );
        }
    }
    let answers = join_all(calls).await;
    let (mut refused, mut answered) = (0, 0);
    for r in &answers {
        if r.status.as_u16() == 400 {
            assert_eq!(r.error(), TOO_LARGE);
            refused += 1;
        } else {
            assert_eq!(r.status.as_u16(), 200, "{:?}", r.body);
            answered += 1;
        }
    }
    assert_eq!((refused, answered), (10, 200));

    // Nothing of the refused sales is stored; the attacker's counters still hold whole
    // numbers, so its own pages keep answering.
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM affiliate_sale_events WHERE processor_event_id LIKE 'attack%'"
        )
        .await,
        0
    );
    assert_eq!(
        app.count(&format!(
            "SELECT total_revenue_cents FROM partner_programs WHERE program_id = {}",
            attacker.program_id
        ))
        .await,
        near
    );
    assert_eq!(
        app.count(&format!(
            "SELECT total_sales FROM partner_programs WHERE program_id = {}",
            attacker.program_id
        ))
        .await,
        1
    );
    app.admin(
        "GET",
        &format!("/programs/{}/balances", attacker.program_id),
        None,
    )
    .await
    .expect(200);
    app.admin(
        "GET",
        &format!("/programs/{}/partners", attacker.program_id),
        None,
    )
    .await
    .expect(200);

    // The victim's program counted every click and sale exactly once.
    let v = victim.program_id;
    assert_eq!(
        app.count(&format!(
            "SELECT total_clicks FROM partner_programs WHERE program_id = {v}"
        ))
        .await,
        200
    );
    assert_eq!(
        app.count(&format!(
            "SELECT total_sales FROM partner_programs WHERE program_id = {v}"
        ))
        .await,
        40
    );
    assert_eq!(
        app.count(&format!(
            "SELECT total_revenue_cents FROM partner_programs WHERE program_id = {v}"
        ))
        .await,
        100_000
    );
    assert_eq!(
        app.count(&format!(
            "SELECT CAST(SUM(sales) AS BIGINT) FROM daily_rollups WHERE program_id = {v}"
        ))
        .await,
        40
    );
    assert_eq!(
        app.count(&format!(
            "SELECT CAST(SUM(clicks) AS BIGINT) FROM daily_rollups WHERE program_id = {v}"
        ))
        .await,
        200
    );
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM commissions WHERE program_id = {v}"
        ))
        .await,
        40
    );
}
