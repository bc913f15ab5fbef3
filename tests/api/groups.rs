//! Partner groups and their sale rewards: the default group, creating, changing and
//! deleting groups, moving partners, the program's `commission` mirrored in the default
//! group, the first matching modifier with every operator, tiers by the partner's totals
//! (also under concurrent sales), reward changes applying to later sales only, and what a
//! commission says about its reward.

use crate::common::*;
use serde_json::{json, Value};

async fn groups(app: &TestApp, seed: &Seed) -> Vec<Value> {
    let r = app
        .admin(
            "GET",
            &format!("/programs/{}/groups", seed.program_id),
            None,
        )
        .await
        .expect(200);
    r.body["data"].as_array().unwrap().clone()
}

async fn create_group(app: &TestApp, seed: &Seed, body: Value) -> Reply {
    app.admin(
        "POST",
        &format!("/programs/{}/groups", seed.program_id),
        Some(body),
    )
    .await
}

async fn move_partner(app: &TestApp, seed: &Seed, partner_id: i64, group_id: i64) -> Reply {
    app.admin(
        "PATCH",
        &format!("/programs/{}/partners/{partner_id}", seed.program_id),
        Some(json!({ "group_id": group_id })),
    )
    .await
}

/// A sale of `amount` by a new customer of the seed's partner (through its link), with
/// the extra sale fields of `more`; the sale's answer.
async fn sale(app: &TestApp, seed: &Seed, key: &str, amount: i64, more: Value) -> Value {
    sale_through(app, seed, &seed.short_link, key, amount, more).await
}

async fn sale_through(
    app: &TestApp,
    seed: &Seed,
    short_link: &str,
    key: &str,
    amount: i64,
    more: Value,
) -> Value {
    sale_from(app, seed, short_link, key, None, amount, more).await
}

/// A sale by a new customer whose click came through `short_link`, from `country` when
/// given (as the GeoIP database would have set it).
async fn sale_from(
    app: &TestApp,
    seed: &Seed,
    short_link: &str,
    key: &str,
    country: Option<&str>,
    amount: i64,
    more: Value,
) -> Value {
    let click_id = app.click(short_link).await;
    if let Some(country) = country {
        reftrack_exec(
            &app.database_url,
            &format!(
                "UPDATE affiliate_click_events SET geo_country = '{country}' \
                 WHERE click_id = '{click_id}'"
            ),
        )
        .await;
    }
    app.post_auth(
        "/api/v1/track/lead",
        &seed.api_token,
        json!({"click_id": click_id, "customer_key": key}),
    )
    .await
    .expect(200);
    let mut body = json!({"transaction_id": format!("txn_{key}"), "amount_cents": amount,
        "customer_key": key});
    for (k, v) in more.as_object().unwrap() {
        body[k] = v.clone();
    }
    app.post_auth("/api/v1/track/sale", &seed.api_token, body)
        .await
        .expect(200)
        .body
}

/// The commission row of a sale's answer.
async fn commission_of(app: &TestApp, seed: &Seed, answer: &Value) -> Value {
    let id = answer["commission_id"]
        .as_i64()
        .unwrap_or_else(|| panic!("a commission: {answer}"));
    app.commission_rows(seed.program_id)
        .await
        .into_iter()
        .find(|c| c["id"].as_i64() == Some(id))
        .expect("the commission is listed")
}

async fn amount(app: &TestApp, seed: &Seed, answer: &Value) -> i64 {
    commission_of(app, seed, answer).await["amount_cents"]
        .as_i64()
        .unwrap()
}

on_both_backends!(a_program_has_a_default_group_that_mirrors_its_commission);
async fn a_program_has_a_default_group_that_mirrors_its_commission(app: TestApp) {
    let seed = app
        .seed_with(json!({"commission": {"type": "percentage", "percent": 25},
            "recurring_commission_months": 6}))
        .await;
    let list = groups(&app, &seed).await;
    assert_eq!(list.len(), 1);
    let default = &list[0];
    assert_eq!(default["is_default"], true);
    assert_eq!(default["name"], "Default");
    assert_eq!(default["partner_count"], 1);
    assert_eq!(default["commission_hold_days"], Value::Null);
    assert_eq!(
        default["rewards"],
        json!({"sale": {"type": "percentage", "percent": 25, "max_duration_months": 6},
            "lead": null})
    );
    let partners = app
        .admin(
            "GET",
            &format!("/programs/{}/partners", seed.program_id),
            None,
        )
        .await
        .expect(200);
    assert_eq!(partners.body["data"][0]["group_id"], default["id"]);

    // The program's commission is the default group's sale reward, both ways.
    app.admin(
        "PATCH",
        &format!("/programs/{}", seed.program_id),
        Some(json!({"commission": {"type": "flat", "amount_cents": 700}})),
    )
    .await
    .expect(200);
    let default = groups(&app, &seed).await[0].clone();
    assert_eq!(
        default["rewards"]["sale"],
        json!({"type": "flat", "amount_cents": 700, "max_duration_months": 6})
    );
    let id = default["id"].as_i64().unwrap();
    app.admin(
        "PATCH",
        &format!("/groups/{id}"),
        Some(
            json!({"rewards": {"sale": {"type": "percentage", "percent": 12.5,
            "max_duration_months": null}}}),
        ),
    )
    .await
    .expect(200);
    let program = app
        .admin("GET", &format!("/programs/{}", seed.program_id), None)
        .await
        .expect(200);
    assert_eq!(
        program.body["commission"],
        json!({"type": "percentage", "percent": 12.5})
    );
    assert_eq!(program.body["recurring_commission_months"], Value::Null);
    let answer = sale(&app, &seed, "c1", 10_000, json!({})).await;
    let c = commission_of(&app, &seed, &answer).await;
    assert_eq!(c["amount_cents"], 1250);
    assert_eq!(c["kind"], "sale");
    assert_eq!(c["group_id"], id);
    assert_eq!(c["description"], "12.5% of $100.00");
}

on_both_backends!(groups_are_created_changed_and_deleted_by_their_rules);
async fn groups_are_created_changed_and_deleted_by_their_rules(app: TestApp) {
    let seed = app.seed().await;
    let created = create_group(&app, &seed, json!({"name": "Influencers"}))
        .await
        .expect(201);
    // Without rewards, a copy of the default group's.
    assert_eq!(
        created.body["rewards"],
        groups(&app, &seed).await[0]["rewards"]
    );
    assert_eq!(created.body["is_default"], false);
    assert_eq!(created.body["partner_count"], 0);
    let id = created.body["id"].as_i64().unwrap();
    let again = create_group(&app, &seed, json!({"name": "INFLUENCERS"}))
        .await
        .expect(409);
    assert_eq!(
        again.error(),
        "A group with this name already exists in this program"
    );
    let bad = create_group(
        &app,
        &seed,
        json!({"name": "Resellers", "rewards": {"sale": {"type": "percentage", "percent": 30,
            "modifiers": [{"conditions": [{"attribute": "product_id", "operator": "eq",
            "value": "p"}], "type": "flat", "amount_cents": 1},
            {"conditions": [{"attribute": "product_id", "operator": "gte", "value": "p"}],
            "type": "flat", "amount_cents": 1}]}}}),
    )
    .await
    .expect(400);
    assert!(
        bad.error()
            .starts_with("rewards.sale.modifiers[1].conditions[0].operator"),
        "{}",
        bad.error()
    );
    for (body, field) in [
        (json!({"name": ""}), "name"),
        (
            json!({"name": "x", "rewards": {"lead": {"type": "percentage", "percent": 5}}}),
            "rewards.lead.type",
        ),
        (
            json!({"name": "x", "rewards": {"lead": {"type": "flat", "amount_cents": -1}}}),
            "rewards.lead.amount_cents",
        ),
        (
            json!({"name": "x", "rewards": {"sale": {"type": "percentage", "percent": 0}}}),
            "rewards.sale.percent",
        ),
        (
            json!({"name": "x", "rewards": {"sale": {"type": "flat", "amount_cents": 1,
                "modifiers": [{"conditions": [{"attribute": "colour", "operator": "eq",
                "value": "red"}], "type": "flat", "amount_cents": 2}]}}}),
            "rewards.sale.modifiers[0].conditions[0].attribute",
        ),
        (
            json!({"name": "x", "rewards": {"sale": {"type": "flat", "amount_cents": 1,
                "modifiers": [{"conditions": [{"attribute": "amount_cents", "operator": "gt",
                "value": "many"}], "type": "flat", "amount_cents": 2}]}}}),
            "rewards.sale.modifiers[0].conditions[0].value",
        ),
        (
            json!({"name": "x", "commission_hold_days": -1}),
            "commission_hold_days",
        ),
    ] {
        let r = create_group(&app, &seed, body.clone()).await.expect(400);
        assert!(r.error().starts_with(field), "{body}: {}", r.error());
    }
    // Renamed, its hold set; then the partner joins it and it cannot be deleted.
    let changed = app
        .admin(
            "PATCH",
            &format!("/groups/{id}"),
            Some(json!({"name": "Creators", "commission_hold_days": 7})),
        )
        .await
        .expect(200);
    assert_eq!(changed.body["name"], "Creators");
    assert_eq!(changed.body["commission_hold_days"], 7);
    move_partner(&app, &seed, seed.partner_id, id)
        .await
        .expect(200);
    let listed = groups(&app, &seed).await;
    assert_eq!(listed[1]["partner_count"], 1);
    // The partner list filters on the group.
    let (bob, _) = app.add_partner(&seed, "bob").await;
    let of_group = |group: i64| {
        let app = &app;
        let path = format!("/programs/{}/partners?group_id={group}", seed.program_id);
        async move {
            let r = app.admin("GET", &path, None).await.expect(200);
            r.body["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["partner_id"].as_i64().unwrap())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(of_group(id).await, [seed.partner_id]);
    assert_eq!(of_group(listed[0]["id"].as_i64().unwrap()).await, [bob]);
    app.admin(
        "GET",
        &format!("/programs/{}/partners?group_id=x", seed.program_id),
        None,
    )
    .await
    .expect(400);
    let held = app
        .admin("DELETE", &format!("/groups/{id}"), None)
        .await
        .expect(409);
    assert_eq!(
        held.error(),
        "The group still has partners: move them to another group first"
    );
    let default_id = listed[0]["id"].as_i64().unwrap();
    let refused = app
        .admin("DELETE", &format!("/groups/{default_id}"), None)
        .await
        .expect(409);
    assert_eq!(refused.error(), "The default group cannot be deleted");
    move_partner(&app, &seed, seed.partner_id, default_id)
        .await
        .expect(200);
    app.admin("DELETE", &format!("/groups/{id}"), None)
        .await
        .expect(200);
    app.admin("GET", &format!("/groups/{id}"), None)
        .await
        .expect(404);
    // A group of another program: 400, also when a partner is added.
    let other = app.seed().await;
    let foreign = groups(&app, &other).await[0]["id"].as_i64().unwrap();
    let r = move_partner(&app, &seed, seed.partner_id, foreign)
        .await
        .expect(400);
    assert_eq!(r.error(), "group_id must be a group of this program");
    let partner = app
        .admin(
            "POST",
            "/partners",
            Some(json!({"name": "Bo", "code": "bo"})),
        )
        .await
        .expect(201);
    app.admin(
        "POST",
        &format!("/programs/{}/partners", seed.program_id),
        Some(json!({"partner_id": partner.body["id"], "group_id": foreign})),
    )
    .await
    .expect(400);
    // Every change is in the audit log.
    let log = app
        .admin(
            "GET",
            &format!("/workspaces/{}/audit-log?limit=100", seed.workspace_id),
            None,
        )
        .await
        .expect(200);
    let actions: Vec<&str> = log.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    for action in [
        "group.created",
        "group.updated",
        "group.deleted",
        "partner.group_changed",
    ] {
        assert!(actions.contains(&action), "{action} in {actions:?}");
    }
}

/// A sale reward of a 10 % base with one modifier per attribute and operator; each
/// sale below meets exactly the conditions it names.
fn every_operator() -> Value {
    let m = |attribute: &str, operator: &str, value: Value, percent: i64| {
        json!({"conditions": [{"attribute": attribute, "operator": operator, "value": value}],
            "type": "percentage", "percent": percent})
    };
    json!({"sale": {"type": "percentage", "percent": 10, "modifiers": [
        m("product_id", "eq", json!("gold"), 50),
        m("product_id", "in", json!(["silver", "bronze"]), 40),
        m("customer_country", "eq", json!("DE"), 35),
        m("customer_country", "in", json!(["FR", "ES"]), 33),
        m("amount_cents", "gt", json!(900_000), 30),
        m("amount_cents", "eq", json!(777), 29),
        m("amount_cents", "lt", json!(100), 28),
        m("amount_cents", "lte", json!(150), 27),
        m("amount_cents", "gte", json!(800_000), 26),
        m("product_id", "neq", json!("plain"), 25),
        m("product_id", "not_in", json!(["plain", "basic"]), 24),
        m("customer_country", "not_in", json!(["US"]), 23),
        m("customer_country", "neq", json!("GB"), 22),
    ]}})
}

on_both_backends!(the_first_modifier_whose_conditions_hold_sets_the_reward);
async fn the_first_modifier_whose_conditions_hold_sets_the_reward(app: TestApp) {
    let seed = app.seed().await;
    let default = groups(&app, &seed).await[0]["id"].as_i64().unwrap();
    app.admin(
        "PATCH",
        &format!("/groups/{default}"),
        Some(json!({ "rewards": every_operator() })),
    )
    .await
    .expect(200);
    // The customers' clicks carry the country each case needs.
    let cases: [(&str, i64, Value, Option<&str>, i64); 14] = [
        ("gold", 1000, json!({"product_id": "gold"}), Some("US"), 500),
        (
            "silver",
            1000,
            json!({"product_id": "silver"}),
            Some("US"),
            400,
        ),
        ("de", 1000, json!({"product_id": "plain"}), Some("DE"), 350),
        ("fr", 1000, json!({"product_id": "plain"}), Some("FR"), 330),
        (
            "big",
            1_000_000,
            json!({"product_id": "plain"}),
            Some("US"),
            300_000,
        ),
        (
            "seven",
            777,
            json!({"product_id": "plain"}),
            Some("US"),
            225,
        ),
        ("tiny", 99, json!({"product_id": "plain"}), Some("US"), 28),
        ("small", 150, json!({"product_id": "plain"}), Some("US"), 41),
        (
            "large",
            800_000,
            json!({"product_id": "plain"}),
            Some("US"),
            208_000,
        ),
        (
            "other",
            1000,
            json!({"product_id": "other"}),
            Some("US"),
            250,
        ),
        // No product: neq and not_in hold, eq and in do not.
        ("none", 1000, json!({}), Some("US"), 250),
        // No country: not_in holds.
        ("nowhere", 1000, json!({"product_id": "plain"}), None, 230),
        // Outside the US: not_in holds; in the US, only neq GB is left.
        ("gb", 1000, json!({"product_id": "plain"}), Some("GB"), 230),
        ("us", 1000, json!({"product_id": "plain"}), Some("US"), 220),
    ];
    for (key, amount, more, country, expected) in cases {
        let answer = sale_from(&app, &seed, &seed.short_link, key, country, amount, more).await;
        assert_eq!(amount_of(&app, &seed, &answer).await, expected, "{key}");
    }
    let gold = commission_of(
        &app,
        &seed,
        &json!({"commission_id": app.count("SELECT MIN(id) FROM commissions").await}),
    )
    .await;
    assert_eq!(gold["description"], "50% of $10.00 (product is gold)");
}

async fn amount_of(app: &TestApp, seed: &Seed, answer: &Value) -> i64 {
    amount(app, seed, answer).await
}

on_both_backends!(groups_pay_their_partners_and_changes_apply_to_later_sales);
async fn groups_pay_their_partners_and_changes_apply_to_later_sales(app: TestApp) {
    let seed = app.seed().await;
    let (bob, bob_link) = app.add_partner(&seed, "bob").await;
    let vip = create_group(
        &app,
        &seed,
        json!({"name": "VIP", "rewards": {"sale": {"type": "flat", "amount_cents": 900}}}),
    )
    .await
    .expect(201);
    let vip_id = vip.body["id"].as_i64().unwrap();
    move_partner(&app, &seed, bob, vip_id).await.expect(200);
    let alice = sale(&app, &seed, "a1", 10_000, json!({})).await;
    let bobs = sale_through(&app, &seed, &bob_link, "b1", 10_000, json!({})).await;
    assert_eq!(amount(&app, &seed, &alice).await, 2000);
    let c = commission_of(&app, &seed, &bobs).await;
    assert_eq!(c["amount_cents"], 900);
    assert_eq!(c["group_id"], vip_id);
    assert_eq!(c["description"], "$9.00 flat");
    // A change applies to later sales; the earlier commission keeps its amount.
    app.admin(
        "PATCH",
        &format!("/groups/{vip_id}"),
        Some(json!({"rewards": {"sale": {"type": "flat", "amount_cents": 1100}}})),
    )
    .await
    .expect(200);
    let later = sale_through(&app, &seed, &bob_link, "b2", 10_000, json!({})).await;
    assert_eq!(amount(&app, &seed, &later).await, 1100);
    assert_eq!(amount(&app, &seed, &bobs).await, 900);
    // A group without a sale reward: the sale is recorded, without commission.
    app.admin(
        "PATCH",
        &format!("/groups/{vip_id}"),
        Some(json!({"rewards": {"sale": null}})),
    )
    .await
    .expect(200);
    let none = sale_through(&app, &seed, &bob_link, "b3", 10_000, json!({})).await;
    assert_eq!(none["commission_id"], Value::Null, "{none}");
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM affiliate_sale_events WHERE processor_event_id = 'txn_b3' \
             AND unearned = 'no_reward'"
        )
        .await,
        1
    );
}

/// A base of 10 % and 20 % from the partner's third sale, 30 % once it brought $500.
fn tiers() -> Value {
    json!({"sale": {"type": "percentage", "percent": 10, "modifiers": [
        {"conditions": [{"attribute": "partner_revenue_cents", "operator": "gte",
            "value": 50_000}], "type": "percentage", "percent": 30},
        {"conditions": [{"attribute": "partner_sales", "operator": "gte", "value": 2}],
            "type": "percentage", "percent": 20}]}})
}

on_both_backends!(tiers_read_the_partners_totals_before_each_sale);
async fn tiers_read_the_partners_totals_before_each_sale(app: TestApp) {
    let seed = app.seed().await;
    let default = groups(&app, &seed).await[0]["id"].as_i64().unwrap();
    app.admin(
        "PATCH",
        &format!("/groups/{default}"),
        Some(json!({ "rewards": tiers() })),
    )
    .await
    .expect(200);
    let mut amounts = Vec::new();
    for (i, amount) in [20_000, 20_000, 10_000, 10_000].into_iter().enumerate() {
        let answer = sale(&app, &seed, &format!("t{i}"), amount, json!({})).await;
        amounts.push(self::amount(&app, &seed, &answer).await);
    }
    // Before each: 0 sales, 1 sale, 2 sales ($400), 3 sales ($500).
    assert_eq!(amounts, [2000, 2000, 2000, 3000]);
    // A fully refunded sale no longer counts.
    app.post_auth(
        "/api/v1/track/refund",
        &seed.api_token,
        json!({"transaction_id": "txn_t0"}),
    )
    .await
    .expect(200);
    let answer = sale(&app, &seed, "t4", 10_000, json!({})).await;
    // Before it: 3 live sales, $400.
    assert_eq!(amount(&app, &seed, &answer).await, 2000);
    let c = commission_of(&app, &seed, &answer).await;
    assert_eq!(c["description"], "20% of $100.00 (after 2 sales)");
}

on_both_backends!(concurrent_sales_count_each_earlier_sale_exactly_once);
async fn concurrent_sales_count_each_earlier_sale_exactly_once(app: TestApp) {
    let seed = app.seed().await;
    let default = groups(&app, &seed).await[0]["id"].as_i64().unwrap();
    // 10 % for the first five sales, then 20 %.
    app.admin(
        "PATCH",
        &format!("/groups/{default}"),
        Some(
            json!({"rewards": {"sale": {"type": "percentage", "percent": 10, "modifiers": [
            {"conditions": [{"attribute": "partner_sales", "operator": "gte", "value": 5}],
             "type": "percentage", "percent": 20}]}}}),
        ),
    )
    .await
    .expect(200);
    let n = 20;
    let mut keys = Vec::new();
    for i in 0..n {
        let key = format!("k{i}");
        app.lead(&seed, &key).await;
        keys.push(key);
    }
    let sales = keys.iter().map(|key| {
        let app = &app;
        let seed = &seed;
        async move {
            app.post_auth(
                "/api/v1/track/sale",
                &seed.api_token,
                json!({"transaction_id": format!("c_{key}"), "amount_cents": 1000,
                    "customer_key": key}),
            )
            .await
            .expect(200)
        }
    });
    futures::future::join_all(sales).await;
    // Whatever the batches, exactly five sales saw fewer than five before them.
    assert_eq!(
        app.count("SELECT COUNT(*) FROM commissions WHERE amount_cents = 100")
            .await,
        5
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM commissions WHERE amount_cents = 200")
            .await,
        n - 5
    );
}

/// `reftrack admin list-groups`, `add-group`, `get-group`, `update-group`,
/// `set-partner-status … group_id:=N` and `delete-group` call the API's operations, with
/// its refusals.
#[tokio::test]
async fn cli_manages_groups() {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::common::server::migrated_cli_db(dir.path());
    let run = |args: &[&str]| {
        let admin: Vec<&str> = std::iter::once("admin")
            .chain(args.iter().copied())
            .collect();
        crate::common::server::cli(&db, &admin)
    };
    assert!(run(&["create-workspace", "name=W"]).0);
    assert!(run(&["create-program", "workspace_id:=1", "name=P"]).0);
    assert!(run(&["create-partner", "name=A", "code=a"]).0);
    assert!(run(&["add-program-partner", "1", "partner_id:=1"]).0);
    let (ok, out) = run(&["list-groups", "1"]);
    assert!(ok, "{out}");
    assert_eq!(out["data"][0]["name"], "Default");
    let (ok, out) = run(&[
        "add-group",
        "1",
        "name=VIP",
        r#"rewards:={"sale":{"type":"flat","amount_cents":900,"modifiers":[{"conditions":[{"attribute":"amount_cents","operator":"above","value":1}],"type":"flat","amount_cents":1}]}}"#,
    ]);
    assert!(!ok);
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .starts_with("rewards.sale.modifiers[0].conditions[0].operator"),
        "{out}"
    );
    let (ok, out) = run(&[
        "add-group",
        "1",
        "name=VIP",
        r#"rewards:={"sale":{"type":"flat","amount_cents":900}}"#,
    ]);
    assert!(ok, "{out}");
    let id = out["id"].as_i64().unwrap().to_string();
    let (ok, out) = run(&["update-group", &id, "name=Gold", "commission_hold_days:=3"]);
    assert!(ok, "{out}");
    assert_eq!(out["name"], "Gold");
    let (ok, out) = run(&["set-partner-status", "1", "1", &format!("group_id:={id}")]);
    assert!(ok, "{out}");
    assert_eq!(out["group_id"].to_string(), id);
    let (ok, out) = run(&["get-group", &id]);
    assert!(ok);
    assert_eq!(out["partner_count"], 1);
    let (ok, out) = run(&["delete-group", &id]);
    assert!(!ok);
    assert_eq!(
        out["error"],
        "The group still has partners: move them to another group first"
    );
}

on_both_backends!(a_groups_own_hold_decides_when_its_commissions_are_due);
async fn a_groups_own_hold_decides_when_its_commissions_are_due(app: TestApp) {
    const DAY: i64 = 86_400_000;
    let clock = std::sync::Arc::new(reftrack::domain::time::ManualClock::at(1_772_445_600_000));
    let app = app.with_clock(clock.clone());
    let seed = app
        .seed_with(json!({"commission_hold_days": 30, "min_payout_cents": 0}))
        .await;
    let fast = create_group(
        &app,
        &seed,
        json!({"name": "Fast", "commission_hold_days": 7}),
    )
    .await
    .expect(201)
    .body["id"]
        .as_i64()
        .unwrap();
    let (bob, bob_link) = app.add_partner(&seed, "bob").await;
    move_partner(&app, &seed, bob, fast).await.expect(200);
    for id in [seed.partner_id, bob] {
        app.admin(
            "PATCH",
            &format!("/partners/{id}"),
            Some(json!({"payout_method": "paypal", "payout_email": format!("p{id}@example.com")})),
        )
        .await
        .expect(200);
    }
    let alice_sale = sale(&app, &seed, "a1", 10_000, json!({})).await;
    let bob_sale = sale_through(&app, &seed, &bob_link, "b1", 10_000, json!({})).await;
    clock.advance(8 * DAY);
    // Read at eight days: Bob's is due by its group's 7 days, Alice's waits for the program's 30.
    assert_eq!(
        commission_of(&app, &seed, &bob_sale).await["status"],
        "approved"
    );
    assert_eq!(
        commission_of(&app, &seed, &alice_sale).await["status"],
        "pending"
    );
    // The approval job and a payout follow the same holds.
    assert_eq!(app.state.app.approve_due_commissions().await.unwrap(), 1);
    let payout = app
        .admin(
            "POST",
            &format!("/programs/{}/payouts", seed.program_id),
            None,
        )
        .await
        .expect(201);
    let items = payout.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["partner_id"], bob);
    // A group without its own hold follows the program's.
    app.admin(
        "PATCH",
        &format!("/groups/{fast}"),
        Some(json!({"commission_hold_days": null})),
    )
    .await
    .expect(200);
    let later = sale_through(&app, &seed, &bob_link, "b2", 10_000, json!({})).await;
    clock.advance(8 * DAY);
    assert_eq!(
        commission_of(&app, &seed, &later).await["status"],
        "pending"
    );
    assert_eq!(app.state.app.approve_due_commissions().await.unwrap(), 0);
}
