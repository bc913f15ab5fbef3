//! Bounties: created, changed and archived by their rules with audit entries; the event
//! that brings an approved partner of one of a bounty's groups to its threshold earns it
//! the bounty once (sales, leads and revenue, net of refunds, counted in the window from
//! the bounty's creation); archiving stops new awards; the partner reads its progress;
//! two services sharing one PostgreSQL database award a bounty once when two sales cross
//! its threshold at the same instant.

use crate::common::*;
use serde_json::{json, Value};

async fn create(app: &TestApp, seed: &Seed, body: Value) -> Reply {
    app.admin(
        "POST",
        &format!("/programs/{}/bounties", seed.program_id),
        Some(body),
    )
    .await
}

async fn bounty_commissions(app: &TestApp, seed: &Seed) -> Vec<Value> {
    let mut rows: Vec<Value> = app
        .commission_rows(seed.program_id)
        .await
        .into_iter()
        .filter(|c| c["kind"] == "bounty")
        .collect();
    rows.sort_by_key(|c| c["id"].as_i64());
    rows
}

/// A sale of `amount` by a new customer `key` of the seed's link.
async fn sale(app: &TestApp, seed: &Seed, key: &str, amount: i64) {
    app.lead(seed, key).await;
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": format!("t_{key}"), "amount_cents": amount, "customer_key": key}),
    )
    .await
    .expect(200);
}

async fn progress(app: &TestApp, bounty_id: i64, partner_id: i64) -> i64 {
    app.count(&format!(
        "SELECT COALESCE(MAX(value), 0) FROM bounty_progress \
         WHERE bounty_id = {bounty_id} AND partner_id = {partner_id}"
    ))
    .await
}

/// The signed-in partner's bounties in a program (`auth`: its bearer header).
async fn mine(app: &TestApp, auth: &str, program_id: i64) -> Vec<Value> {
    app.send(
        "GET",
        &format!("/api/partner/programs/{program_id}/bounties"),
        None,
        &[("authorization", auth)],
    )
    .await
    .expect(200)
    .body["data"]
        .as_array()
        .unwrap()
        .clone()
}

on_both_backends!(bounties_are_created_changed_and_archived_by_their_rules);
async fn bounties_are_created_changed_and_archived_by_their_rules(app: TestApp) {
    let seed = app.seed().await;
    let other = app.seed().await;
    let foreign_group = app
        .admin(
            "GET",
            &format!("/programs/{}/groups", other.program_id),
            None,
        )
        .await
        .expect(200)
        .body["data"][0]["id"]
        .clone();
    let ok = json!({"name": "Ten sales", "metric": "sales", "threshold": 10,
        "amount_cents": 5_000});
    for (change, field) in [
        (json!({"name": " "}), "name"),
        (json!({"metric": "clicks"}), "metric"),
        (json!({"threshold": 0}), "threshold"),
        (json!({"amount_cents": 0}), "amount_cents"),
        (json!({"amount_cents": 100_000_001}), "amount_cents"),
        (json!({"starts_at": "soon"}), "starts_at"),
        (
            json!({"starts_at": "2026-12-10", "ends_at": "2026-12-01"}),
            "ends_at",
        ),
        (json!({"group_ids": [foreign_group]}), "group_ids"),
        (
            json!({"group_ids": (1..=101).collect::<Vec<i64>>()}),
            "group_ids",
        ),
    ] {
        let mut body = ok.clone();
        for (k, v) in change.as_object().unwrap() {
            body[k] = v.clone();
        }
        let r = create(&app, &seed, body.clone()).await.expect(400);
        assert!(r.error().starts_with(field), "{body}: {}", r.error());
    }
    let mut unknown = ok.clone();
    unknown["colour"] = json!("red");
    create(&app, &seed, unknown).await.expect(400);
    assert_eq!(app.count("SELECT COUNT(*) FROM bounties").await, 0);

    let r = create(
        &app,
        &seed,
        json!({"name": "December push", "metric": "revenue_cents", "threshold": 100_000,
            "amount_cents": 2_500, "starts_at": "2026-12-01", "ends_at": "2027-01-01T00:00:00Z"}),
    )
    .await
    .expect(201);
    let b = r.body.clone();
    let id = b["id"].as_i64().unwrap();
    let keys: Vec<&String> = b.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "amount_cents",
            "archived",
            "created_at",
            "ends_at",
            "group_ids",
            "id",
            "metric",
            "name",
            "program_id",
            "starts_at",
            "threshold"
        ]
    );
    assert_eq!(b["metric"], "revenue_cents");
    assert_eq!(b["group_ids"], json!([]));
    assert_eq!(b["starts_at"], "2026-12-01T00:00:00.000Z");
    assert_eq!(b["ends_at"], "2027-01-01T00:00:00.000Z");
    assert_eq!(b["archived"], false);
    let listed = app
        .admin(
            "GET",
            &format!("/programs/{}/bounties", seed.program_id),
            None,
        )
        .await
        .expect(200);
    assert_eq!(listed.body["data"][0]["id"], id);
    app.admin("GET", &format!("/bounties/{id}"), None)
        .await
        .expect(200);

    let changed = app
        .admin(
            "PATCH",
            &format!("/bounties/{id}"),
            Some(json!({"threshold": 50_000, "ends_at": null})),
        )
        .await
        .expect(200);
    assert_eq!(changed.body["threshold"], 50_000);
    assert_eq!(changed.body["ends_at"], Value::Null);
    app.admin(
        "PATCH",
        &format!("/bounties/{id}"),
        Some(json!({"threshold": -1})),
    )
    .await
    .expect(400);
    let archived = app
        .admin("DELETE", &format!("/bounties/{id}"), None)
        .await
        .expect(200);
    assert_eq!(archived.body["archived"], true);
    app.admin("DELETE", &format!("/bounties/{id}"), None)
        .await
        .expect(200);
    app.admin(
        "PATCH",
        &format!("/bounties/{id}"),
        Some(json!({"name": "Later"})),
    )
    .await
    .expect(409);
    app.admin("GET", "/bounties/9999", None).await.expect(404);
    app.admin("POST", "/programs/9999/bounties", Some(ok))
        .await
        .expect(404);

    let audit = app
        .admin(
            "GET",
            &format!("/workspaces/{}/audit-log", seed.workspace_id),
            None,
        )
        .await
        .expect(200);
    let actions: Vec<&str> = audit.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["target"]["type"] == "bounty")
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        ["bounty.archived", "bounty.updated", "bounty.created"]
    );
    let updated = audit.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "bounty.updated")
        .unwrap();
    assert_eq!(updated["details"]["threshold"]["old"], 100_000);
    assert_eq!(updated["details"]["threshold"]["new"], 50_000);
}

on_both_backends!(the_event_that_reaches_the_threshold_earns_the_bounty_once);
async fn the_event_that_reaches_the_threshold_earns_the_bounty_once(app: TestApp) {
    let seed = app.seed().await;
    // Sales before the bounty exists never count.
    sale(&app, &seed, "early", 1_000).await;
    let three = create(
        &app,
        &seed,
        json!({"name": "Three sales", "metric": "sales", "threshold": 3, "amount_cents": 5_000}),
    )
    .await
    .expect(201)
    .body["id"]
        .as_i64()
        .unwrap();
    let revenue = create(
        &app,
        &seed,
        json!({"name": "Big seller", "metric": "revenue_cents", "threshold": 11_000,
            "amount_cents": 7_500}),
    )
    .await
    .expect(201)
    .body["id"]
        .as_i64()
        .unwrap();
    let ended = create(
        &app,
        &seed,
        json!({"name": "Last year", "metric": "sales", "threshold": 1, "amount_cents": 100,
            "starts_at": "2020-01-01", "ends_at": "2021-01-01"}),
    )
    .await
    .expect(201)
    .body["id"]
        .as_i64()
        .unwrap();
    sale(&app, &seed, "s1", 4_000).await;
    sale(&app, &seed, "s2", 4_000).await;
    assert!(bounty_commissions(&app, &seed).await.is_empty());
    assert_eq!(progress(&app, three, seed.partner_id).await, 2);
    // A full refund takes a sale out of the count, a partial one only its amount.
    app.post_auth(
        "/api/v1/track/refund",
        &seed.api_token,
        json!({"transaction_id": "t_s2"}),
    )
    .await
    .expect(200);
    assert_eq!(progress(&app, three, seed.partner_id).await, 1);
    assert_eq!(progress(&app, revenue, seed.partner_id).await, 4_000);
    sale(&app, &seed, "s3", 3_000).await;
    sale(&app, &seed, "s4", 3_000).await;
    let earned = bounty_commissions(&app, &seed).await;
    assert_eq!(earned.len(), 1, "{earned:?}");
    let c = &earned[0];
    assert_eq!(c["amount_cents"], 5_000);
    assert_eq!(c["status"], "pending", "the program's hold");
    assert_eq!(c["description"], "Bounty: Three sales");
    assert_eq!(c["partner_id"], seed.partner_id);
    assert!(c["group_id"].is_i64());
    assert_eq!(c["sale_id"], Value::Null);
    app.post_auth(
        "/api/v1/track/refund",
        &seed.api_token,
        json!({"transaction_id": "t_s3", "refund_amount_cents": 1_000}),
    )
    .await
    .expect(200);
    assert_eq!(progress(&app, revenue, seed.partner_id).await, 9_000);
    sale(&app, &seed, "s5", 1_000).await;
    assert_eq!(bounty_commissions(&app, &seed).await.len(), 1);
    sale(&app, &seed, "s6", 1_000).await;
    // Revenue reached 11,000 with s6; the sales bounty is not earned twice.
    let earned = bounty_commissions(&app, &seed).await;
    let amounts: Vec<i64> = earned
        .iter()
        .map(|c| c["amount_cents"].as_i64().unwrap())
        .collect();
    assert_eq!(amounts, [5_000, 7_500]);
    assert_eq!(progress(&app, ended, seed.partner_id).await, 0);
    // Archived: no new award, the one made stays.
    let (bob, bob_link) = app.add_partner(&seed, "bob").await;
    let leads = create(
        &app,
        &seed,
        json!({"name": "Two signups", "metric": "leads", "threshold": 2, "amount_cents": 900}),
    )
    .await
    .expect(201)
    .body["id"]
        .as_i64()
        .unwrap();
    app.admin("DELETE", &format!("/bounties/{three}"), None)
        .await
        .expect(200);
    for key in ["b1", "b2", "b3"] {
        let click = app.click(&bob_link).await;
        app.post_auth(
            "/api/v1/track/lead",
            &seed.api_token,
            json!({"click_id": click, "customer_key": key}),
        )
        .await
        .expect(200);
        app.post_auth(
            "/api/v1/track/sale",
            &seed.api_token,
            json!({"transaction_id": format!("t_{key}"), "amount_cents": 100,
                "customer_key": key}),
        )
        .await
        .expect(200);
    }
    let earned = bounty_commissions(&app, &seed).await;
    let by_bob: Vec<&Value> = earned.iter().filter(|c| c["partner_id"] == bob).collect();
    assert_eq!(by_bob.len(), 1, "{earned:?}");
    assert_eq!(by_bob[0]["description"], "Bounty: Two signups");
    assert_eq!(progress(&app, leads, bob).await, 3);
    assert_eq!(progress(&app, three, bob).await, 0, "archived: not counted");
    assert_clean(&reftrack::verify::check(&*app.store).await.unwrap());
}

on_both_backends!(a_bounty_pays_only_the_groups_it_names_and_the_partner_reads_its_progress);
async fn a_bounty_pays_only_the_groups_it_names_and_the_partner_reads_its_progress(app: TestApp) {
    let seed = app.seed().await;
    let vip = app
        .admin(
            "POST",
            &format!("/programs/{}/groups", seed.program_id),
            Some(json!({"name": "VIP"})),
        )
        .await
        .expect(201)
        .body["id"]
        .as_i64()
        .unwrap();
    let for_vip = create(
        &app,
        &seed,
        json!({"name": "VIP pair", "metric": "sales", "threshold": 2, "amount_cents": 4_000,
            "group_ids": [vip]}),
    )
    .await
    .expect(201)
    .body["id"]
        .as_i64()
        .unwrap();
    let for_all = create(
        &app,
        &seed,
        json!({"name": "Five for all", "metric": "sales", "threshold": 5, "amount_cents": 100}),
    )
    .await
    .expect(201)
    .body["id"]
        .as_i64()
        .unwrap();
    sale(&app, &seed, "v1", 1_000).await;
    sale(&app, &seed, "v2", 1_000).await;
    assert!(
        bounty_commissions(&app, &seed).await.is_empty(),
        "the default group's partner"
    );
    // Signed in, the partner of the default group sees the bounty for every group only.
    let token = app.invite_token(seed.partner_id, "alice@example.com").await;
    let session = app
        .post(
            "/api/partner/auth/accept-invite",
            json!({"token": token, "password": "partner password"}),
        )
        .await
        .expect(200)
        .body["token"]
        .as_str()
        .unwrap()
        .to_string();
    let auth = format!("Bearer {session}");
    let seen = mine(&app, &auth, seed.program_id).await;
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0]["id"], for_all);
    assert_eq!(seen[0]["progress"], 2);
    assert_eq!(seen[0]["earned"], false);
    // Moved to VIP, its next sale brings it to the VIP bounty's threshold.
    app.admin(
        "PATCH",
        &format!("/programs/{}/partners/{}", seed.program_id, seed.partner_id),
        Some(json!({"group_id": vip})),
    )
    .await
    .expect(200);
    sale(&app, &seed, "v3", 1_000).await;
    let earned = bounty_commissions(&app, &seed).await;
    assert_eq!(earned.len(), 1);
    assert_eq!(earned[0]["amount_cents"], 4_000);
    assert_eq!(earned[0]["group_id"], vip);
    let seen = mine(&app, &auth, seed.program_id).await;
    let vip_row = seen.iter().find(|b| b["id"] == for_vip).unwrap();
    assert_eq!(vip_row["progress"], 3);
    assert_eq!(vip_row["earned"], true);
    // Another program's bounties are not the partner's.
    let other = app.seed().await;
    let r = app
        .send(
            "GET",
            &format!("/api/partner/programs/{}/bounties", other.program_id),
            None,
            &[("authorization", &auth)],
        )
        .await;
    assert_eq!(r.status, 404, "{:?}", r.body);
}

/// Two services on one PostgreSQL database, each with its own pool and group committer:
/// when sales through both cross a bounty's threshold at the same instant, exactly one
/// award is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_award_a_bounty_once() {
    let url = fresh_postgres_url().await;
    dropping_database(url.clone(), async {
        let a = TestApp::at(url.clone()).await;
        let b = TestApp::at(url.clone()).await;
        let seed = a.seed().await;
        create(
            &a,
            &seed,
            json!({"name": "Ten sales", "metric": "sales", "threshold": 10,
                "amount_cents": 5_000}),
        )
        .await
        .expect(201);
        let n = 30;
        for i in 0..n {
            a.lead(&seed, &format!("k{i}")).await;
        }
        let sales = (0..n).map(|i| {
            let app = if i % 2 == 0 { &a } else { &b };
            let seed = &seed;
            async move {
                app.post_auth(
                    "/api/v1/track/sale",
                    &seed.api_token,
                    json!({"transaction_id": format!("p_{i}"), "amount_cents": 1_000,
                        "customer_key": format!("k{i}")}),
                )
                .await
                .expect(200)
            }
        });
        futures::future::join_all(sales).await;
        assert_eq!(
            a.count("SELECT COUNT(*) FROM commissions WHERE kind = 'bounty'")
                .await,
            1
        );
        assert_eq!(
            a.count("SELECT MAX(value) FROM bounty_progress").await,
            n as i64
        );
        a.store.close().await;
        b.store.close().await;
    })
    .await;
}

/// `reftrack admin list-bounties`, `add-bounty`, `get-bounty`, `update-bounty` and
/// `archive-bounty` call the API's operations, with its refusals.
#[tokio::test]
async fn cli_manages_bounties() {
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
    let (ok, out) = run(&[
        "add-bounty",
        "1",
        "name=Ten sales",
        "metric=sales",
        "threshold:=10",
        "amount_cents:=5000",
        "starts_at=2026-12-01",
    ]);
    assert!(ok, "{out}");
    assert_eq!(out["starts_at"], "2026-12-01T00:00:00.000Z");
    let id = out["id"].as_i64().unwrap().to_string();
    let (ok, out) = run(&[
        "add-bounty",
        "1",
        "name=x",
        "metric=clicks",
        "threshold:=1",
        "amount_cents:=1",
    ]);
    assert!(!ok);
    assert!(out.to_string().contains("metric"), "{out}");
    let (ok, out) = run(&["update-bounty", &id, "threshold:=12", "starts_at:=null"]);
    assert!(ok, "{out}");
    assert_eq!(out["threshold"], 12);
    assert_eq!(out["starts_at"], Value::Null);
    let (ok, out) = run(&["list-bounties", "1"]);
    assert!(ok);
    assert_eq!(out["data"][0]["name"], "Ten sales");
    let (ok, out) = run(&["archive-bounty", &id]);
    assert!(ok);
    assert_eq!(out["archived"], true);
    let (ok, out) = run(&["get-bounty", &id]);
    assert!(ok);
    assert_eq!(out["archived"], true);
}
