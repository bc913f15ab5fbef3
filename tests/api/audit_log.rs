//! The audit log: every change to money, access and settings is recorded with its actor
//! (user with email, operator, partner), target, details, client IP and request id, in
//! the transaction of the change; the list's filters, paging and CSV; who may read it;
//! a change made on a dashboard page is recorded as the same change through the API.

use std::sync::Arc;

use crate::common::*;
use reftrack::domain::time::ManualClock;
use reftrack::http::client_ip::ClientResolver;
use serde_json::{json, Value};

const PASSWORD: &str = "correct horse battery";
/// 2026-03-02T10:00:00Z.
const START: i64 = 1_772_445_600_000;
const IP: &str = "203.0.113.7";

/// The app trusting `X-Forwarded-For` (as behind a proxy), on a clock the test moves.
fn behind_proxy(app: TestApp) -> (TestApp, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::at(START));
    let app = app
        .with_clock(clock.clone())
        .with_resolver(ClientResolver::new(Some("*".parse().unwrap()), None).unwrap());
    (app, clock)
}

/// A call of the management API with a session (or the admin token) from [`IP`], with
/// the request id `rid`.
async fn call(
    app: &TestApp,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
    rid: &str,
) -> Reply {
    let auth = format!("Bearer {token}");
    app.send(
        method,
        &format!("/api/admin{path}"),
        body,
        &[
            ("authorization", &auth),
            ("x-forwarded-for", IP),
            ("x-request-id", rid),
        ],
    )
    .await
}

async fn session(app: &TestApp, email: &str) -> String {
    let r = app.login(email, PASSWORD).await.expect(200);
    r.body["token"].as_str().unwrap().to_string()
}

/// The workspace's audit log as the operator reads it (`query` after `?`).
async fn log(app: &TestApp, workspace_id: i64, query: &str) -> Vec<Value> {
    let r = app
        .admin(
            "GET",
            &format!("/workspaces/{workspace_id}/audit-log?limit=100&{query}"),
            None,
        )
        .await
        .expect(200);
    r.body["data"].as_array().unwrap().clone()
}

/// The one entry of the request `rid` in `entries`.
#[track_caller]
fn one<'a>(entries: &'a [Value], rid: &str) -> &'a Value {
    let found: Vec<_> = entries.iter().filter(|e| e["request_id"] == rid).collect();
    assert_eq!(found.len(), 1, "{rid} in {entries:#?}");
    found[0]
}

/// A sale of the seed's partner, through a new lead; its commission's id.
async fn commission(app: &TestApp, seed: &Seed, txn: &str) -> i64 {
    app.lead(seed, txn).await;
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": txn, "amount_cents": 10000, "customer_key": txn}),
    )
    .await
    .expect(200);
    app.sale_commission(seed.program_id, txn).await["id"]
        .as_i64()
        .unwrap()
}

on_both_backends!(every_change_is_recorded_with_its_actor_target_details_and_request);
async fn every_change_is_recorded_with_its_actor_target_details_and_request(app: TestApp) {
    let (app, _clock) = behind_proxy(app);
    let seed = app
        .seed_with(json!({"commission_hold_days": 30, "min_payout_cents": 0}))
        .await;
    let ws = seed.workspace_id;
    let owner_id = app
        .member(ws, "owner@acme.example", PASSWORD, "owner")
        .await;
    let owner = session(&app, "owner@acme.example").await;
    let p = seed.program_id;

    // Settings: a program made, changed (a secret among them) and its token rotated.
    let made = call(
        &app,
        &owner,
        "POST",
        "/programs",
        Some(json!({"workspace_id": ws, "name": "Second"})),
        "r-create",
    )
    .await
    .expect(201);
    let second = made.body["id"].as_i64().unwrap();
    call(&app, &owner, "PATCH", &format!("/programs/{p}"),
        Some(json!({"name": "Renamed", "cookie_window_days": 60, "stripe_webhook_secret": "whsec_topsecret"})), "r-update")
        .await
        .expect(200);
    call(
        &app,
        &owner,
        "POST",
        &format!("/programs/{p}/rotate-token"),
        Some(json!({"keep_old_for_hours": 2})),
        "r-rotate",
    )
    .await
    .expect(200);

    // Partners: a status moved and back, payout details changed.
    let pp = format!("/programs/{p}/partners/{}", seed.partner_id);
    call(
        &app,
        &owner,
        "PATCH",
        &pp,
        Some(json!({"status": "rejected"})),
        "r-reject-partner",
    )
    .await
    .expect(200);
    call(
        &app,
        &owner,
        "PATCH",
        &pp,
        Some(json!({"status": "approved"})),
        "r-approve-partner",
    )
    .await
    .expect(200);
    call(
        &app,
        &owner,
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"payout_method": "paypal", "payout_email": "alice@pay.example"})),
        "r-payout-details",
    )
    .await
    .expect(200);

    // Money: commissions approved and rejected, payouts made, cancelled and paid.
    let c1 = commission(&app, &seed, "t1").await;
    let c2 = commission(&app, &seed, "t2").await;
    call(
        &app,
        &owner,
        "POST",
        &format!("/commissions/{c1}/approve"),
        None,
        "r-approve",
    )
    .await
    .expect(200);
    call(
        &app,
        &owner,
        "POST",
        &format!("/commissions/{c2}/reject"),
        Some(json!({"reason": "test order"})),
        "r-reject",
    )
    .await
    .expect(200);
    let payout = call(
        &app,
        &owner,
        "POST",
        &format!("/programs/{p}/payouts"),
        None,
        "r-payout",
    )
    .await
    .expect(201);
    let payout1 = payout.body["id"].as_i64().unwrap();
    call(
        &app,
        &owner,
        "POST",
        &format!("/payouts/{payout1}/cancel"),
        None,
        "r-cancel",
    )
    .await
    .expect(200);
    let payout = call(
        &app,
        &owner,
        "POST",
        &format!("/programs/{p}/payouts"),
        None,
        "r-payout2",
    )
    .await
    .expect(201);
    let payout2 = payout.body["id"].as_i64().unwrap();
    call(
        &app,
        &owner,
        "POST",
        &format!("/payouts/{payout2}/mark-paid"),
        Some(json!({"reference": "TX-9"})),
        "r-paid",
    )
    .await
    .expect(200);

    // Access: a member added, its role and status changed.
    let user = app
        .admin(
            "POST",
            "/users",
            Some(json!({"email": "new@acme.example", "password": PASSWORD})),
        )
        .await
        .expect(201);
    let user_id = user.body["id"].as_i64().unwrap();
    call(
        &app,
        &owner,
        "POST",
        &format!("/workspaces/{ws}/members"),
        Some(json!({"user_id": user_id, "role": "viewer"})),
        "r-member",
    )
    .await
    .expect(201);
    let m = format!("/workspaces/{ws}/members/{user_id}");
    call(
        &app,
        &owner,
        "PATCH",
        &m,
        Some(json!({"role": "admin"})),
        "r-role",
    )
    .await
    .expect(200);
    call(
        &app,
        &owner,
        "PATCH",
        &m,
        Some(json!({"status": "suspended"})),
        "r-suspend",
    )
    .await
    .expect(200);

    // Webhook endpoints: created, changed, deleted.
    let hook = call(
        &app,
        &owner,
        "POST",
        &format!("/programs/{p}/webhooks"),
        Some(json!({"url": "https://203.0.114.1/hook", "events": ["sale.created"]})),
        "r-hook",
    )
    .await
    .expect(201);
    let hook_id = hook.body["id"].as_i64().unwrap();
    call(
        &app,
        &owner,
        "PATCH",
        &format!("/webhooks/{hook_id}"),
        Some(json!({"enabled": false})),
        "r-hook-update",
    )
    .await
    .expect(200);
    call(
        &app,
        &owner,
        "DELETE",
        &format!("/webhooks/{hook_id}"),
        None,
        "r-hook-delete",
    )
    .await
    .expect(204);

    let entries = log(&app, ws, "").await;
    let by_owner = json!({"type": "user", "id": owner_id, "email": "owner@acme.example"});
    // Each call wrote one entry, found by its request id.
    let expect = |action: &str, rid: &str, target: Value, program: Value| {
        let e = one(&entries, rid);
        assert_eq!(e["action"], action, "{rid}: {e}");
        assert_eq!(e["actor"], by_owner, "{action}: {e}");
        assert_eq!(e["ip"], IP, "{action}");
        assert_eq!(e["request_id"], rid, "{action}");
        assert_eq!(e["target"], target, "{action}");
        assert_eq!(e["program_id"], program, "{action}");
        assert!(
            e["at"].as_str().unwrap().starts_with("2026-03-02T10:00:00"),
            "{e}"
        );
        e.clone()
    };
    let e = expect(
        "program.created",
        "r-create",
        json!({"type": "program", "id": second}),
        json!(second),
    );
    assert_eq!(e["details"]["name"], "Second");
    let e = expect(
        "program.updated",
        "r-update",
        json!({"type": "program", "id": p}),
        json!(p),
    );
    assert_eq!(
        e["details"],
        json!({
            "name": {"old": "Acme Partners", "new": "Renamed"},
            "stripe_webhook_secret": {"changed": true},
        }),
        "an unchanged setting (cookie_window_days) is left out, the secret only said to change"
    );
    assert!(!e.to_string().contains("whsec_topsecret"));
    let e = expect(
        "program.token_rotated",
        "r-rotate",
        json!({"type": "program", "id": p}),
        json!(p),
    );
    assert_eq!(e["details"], json!({"keep_old_for_hours": 2}));
    assert!(!e.to_string().contains("rt_"), "no token in {e}");
    let partner = json!({"type": "partner", "id": seed.partner_id});
    let moves: Vec<_> = entries
        .iter()
        .filter(|e| e["action"] == "partner.status_changed")
        .collect();
    assert_eq!(moves.len(), 2);
    // Newest first.
    assert_eq!(
        moves[0]["details"],
        json!({"status": {"old": "rejected", "new": "approved"}})
    );
    assert_eq!(moves[0]["request_id"], "r-approve-partner");
    assert_eq!(
        moves[1]["details"],
        json!({"status": {"old": "approved", "new": "rejected"}})
    );
    assert_eq!(moves[1]["target"], partner);
    let e = expect(
        "partner.payout_details_changed",
        "r-payout-details",
        partner.clone(),
        Value::Null,
    );
    assert_eq!(
        e["details"],
        json!({
            "payout_method": {"old": null, "new": "paypal"},
            "payout_email": {"old": null, "new": "alice@pay.example"},
        })
    );
    let e = expect(
        "commission.approved",
        "r-approve",
        json!({"type": "commission", "id": c1}),
        json!(p),
    );
    assert_eq!(e["details"]["partner_id"], seed.partner_id);
    let e = expect(
        "commission.rejected",
        "r-reject",
        json!({"type": "commission", "id": c2}),
        json!(p),
    );
    assert_eq!(e["details"]["reason"], "test order");
    let payouts: Vec<_> = entries
        .iter()
        .filter(|e| e["action"] == "payout.created")
        .collect();
    assert_eq!(payouts.len(), 2);
    assert_eq!(
        payouts[1]["target"],
        json!({"type": "payout", "id": payout1})
    );
    assert!(payouts[1]["details"]["total_cents"].as_i64().unwrap() > 0);
    expect(
        "payout.cancelled",
        "r-cancel",
        json!({"type": "payout", "id": payout1}),
        json!(p),
    );
    let e = expect(
        "payout.paid",
        "r-paid",
        json!({"type": "payout", "id": payout2}),
        json!(p),
    );
    assert_eq!(e["details"]["reference"], "TX-9");
    let member = json!({"type": "user", "id": user_id});
    let e = expect("member.added", "r-member", member.clone(), Value::Null);
    assert_eq!(e["details"], json!({"role": "viewer", "status": "active"}));
    let e = expect("member.role_changed", "r-role", member.clone(), Value::Null);
    assert_eq!(
        e["details"],
        json!({"role": {"old": "viewer", "new": "admin"}})
    );
    let e = expect("member.status_changed", "r-suspend", member, Value::Null);
    assert_eq!(
        e["details"],
        json!({"status": {"old": "active", "new": "suspended"}})
    );
    let hook = json!({"type": "webhook_endpoint", "id": hook_id});
    let e = expect("webhook_endpoint.created", "r-hook", hook.clone(), json!(p));
    assert_eq!(e["details"]["events"], json!(["sale.created"]));
    assert!(
        !e.to_string().contains("whsec_"),
        "no signing secret in {e}"
    );
    let e = expect(
        "webhook_endpoint.updated",
        "r-hook-update",
        hook.clone(),
        json!(p),
    );
    assert_eq!(
        e["details"],
        json!({"enabled": {"old": true, "new": false}})
    );
    expect("webhook_endpoint.deleted", "r-hook-delete", hook, json!(p));

    // The seed's own changes, by the admin token: the operator, without an email.
    let e = entries
        .iter()
        .find(|e| e["action"] == "program.created" && e["target"]["id"] == p)
        .unwrap();
    assert_eq!(
        e["actor"],
        json!({"type": "operator", "id": null, "email": null})
    );
    let ids: Vec<i64> = entries.iter().map(|e| e["id"].as_i64().unwrap()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(ids, sorted, "newest first");
}

on_both_backends!(the_partners_own_change_of_payout_details_is_recorded_as_the_partner);
async fn the_partners_own_change_of_payout_details_is_recorded_as_the_partner(app: TestApp) {
    let (app, _clock) = behind_proxy(app);
    let seed = app.seed().await;
    let invite = app
        .invite_token(seed.partner_id, "alice@partner.example")
        .await;
    app.post(
        "/api/partner/auth/accept-invite",
        json!({"token": invite, "password": PASSWORD}),
    )
    .await;
    let login = app
        .post(
            "/api/partner/auth/login",
            json!({"email": "alice@partner.example", "password": PASSWORD}),
        )
        .await
        .expect(200);
    let token = login.body["token"].as_str().unwrap().to_string();
    app.send(
        "PATCH",
        "/api/partner/me",
        Some(json!({"payout_method": "wise", "payout_email": "alice@wise.example", "current_password": PASSWORD})),
        &[
            ("authorization", &format!("Bearer {token}")),
            ("x-forwarded-for", IP),
            ("x-request-id", "r-partner"),
        ],
    )
    .await
    .expect(200);
    let entries = log(
        &app,
        seed.workspace_id,
        "action=partner.payout_details_changed",
    )
    .await;
    assert_eq!(entries.len(), 1, "{entries:#?}");
    assert_eq!(
        entries[0]["actor"],
        json!({"type": "partner", "id": seed.partner_id, "email": "alice@partner.example"})
    );
    assert_eq!(entries[0]["ip"], IP);
    assert_eq!(entries[0]["request_id"], "r-partner");
}

on_both_backends!(the_log_filters_pages_and_exports_as_csv);
async fn the_log_filters_pages_and_exports_as_csv(app: TestApp) {
    let (app, clock) = behind_proxy(app);
    let seed = app.seed().await;
    let ws = seed.workspace_id;
    let other = app
        .admin(
            "POST",
            "/programs",
            Some(json!({"workspace_id": ws, "name": "Other"})),
        )
        .await
        .expect(201);
    let other_id = other.body["id"].as_i64().unwrap();
    // A day later, two changes of the seed's program; one of them starts like a formula.
    clock.advance(86_400_000);
    app.admin(
        "PATCH",
        &format!("/programs/{}", seed.program_id),
        Some(json!({"name": "=HYPERLINK(\"x\")"})),
    )
    .await
    .expect(200);
    app.admin(
        "PATCH",
        &format!("/programs/{}", seed.program_id),
        Some(json!({"cookie_window_days": 7})),
    )
    .await
    .expect(200);

    assert_eq!(log(&app, ws, "action=program.updated").await.len(), 2);
    let created = log(&app, ws, "action=program.created").await;
    assert_eq!(created.len(), 2);
    let of_other = log(&app, ws, &format!("program_id={other_id}")).await;
    assert_eq!(of_other.len(), 1);
    assert_eq!(of_other[0]["action"], "program.created");
    // From the next day on (a date, or a timestamp): only the two updates.
    assert_eq!(log(&app, ws, "from=2026-03-03").await.len(), 2);
    assert_eq!(log(&app, ws, "from=2026-03-03T00:00:00Z").await.len(), 2);
    // Up to the first day, whole: the rest.
    let first_day = log(&app, ws, "to=2026-03-02").await;
    assert!(first_day.iter().all(|e| e["action"] != "program.updated"));
    assert!(!first_day.is_empty());
    assert!(log(
        &app,
        ws,
        "from=2026-03-03&to=2026-03-03&action=partner.added"
    )
    .await
    .is_empty());

    // Paging by cursor, newest first.
    let all = log(&app, ws, "").await;
    let first = app
        .admin("GET", &format!("/workspaces/{ws}/audit-log?limit=2"), None)
        .await
        .expect(200);
    assert_eq!(first.body["data"].as_array().unwrap().len(), 2);
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let second = app
        .admin(
            "GET",
            &format!("/workspaces/{ws}/audit-log?limit=100&cursor={cursor}"),
            None,
        )
        .await
        .expect(200);
    assert_eq!(second.body["data"].as_array().unwrap().len(), all.len() - 2);
    assert_eq!(second.body["data"][0], all[2]);

    // Bad filters: 400 with the reason.
    for q in [
        "action=program.deleted",
        "program_id=abc",
        "from=yesterday",
        "to=2026-13-01",
        "from=2026-03-04&to=2026-03-03",
        "format=xml",
        "limit=0",
    ] {
        let r = app
            .admin("GET", &format!("/workspaces/{ws}/audit-log?{q}"), None)
            .await
            .expect(400);
        assert!(!r.error().is_empty(), "{q}");
    }
    app.admin("GET", "/workspaces/999999/audit-log", None)
        .await
        .expect(404);

    // CSV: the same rows, every text cell formula-safe, a download's headers.
    let r = app
        .admin(
            "GET",
            &format!("/workspaces/{ws}/audit-log?format=csv&action=program.updated"),
            None,
        )
        .await
        .expect(200);
    assert_download(&r);
    let text = r.body.as_str().unwrap().to_string();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "id,at,actor_type,actor_id,actor_email,action,program_id,target_type,target_id,details,ip,request_id"
    );
    let rows: Vec<_> = lines.collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(rows[0].contains(",program.updated,"), "{text}");
    assert!(rows[1].contains("HYPERLINK"), "{text}");
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    for record in reader.records() {
        let record = record.unwrap();
        for cell in record.iter() {
            assert!(
                !cell.starts_with(['=', '+', '@']),
                "a cell a spreadsheet would run: {cell}"
            );
        }
    }
}

on_both_backends!(owners_admins_and_the_operator_read_the_log_members_and_viewers_do_not);
async fn owners_admins_and_the_operator_read_the_log_members_and_viewers_do_not(app: TestApp) {
    let seed = app.seed().await;
    let ws = seed.workspace_id;
    let other = app.seed().await;
    for (email, role, status) in [
        ("owner@x.example", "owner", 200),
        ("admin@x.example", "admin", 200),
        ("member@x.example", "member", 403),
        ("viewer@x.example", "viewer", 403),
    ] {
        app.member(ws, email, PASSWORD, role).await;
        let token = session(&app, email).await;
        let r = app
            .send(
                "GET",
                &format!("/api/admin/workspaces/{ws}/audit-log"),
                None,
                &[("authorization", &format!("Bearer {token}"))],
            )
            .await
            .expect(status);
        if status == 403 {
            assert!(!r.error().is_empty());
        }
        // Another workspace's log is not found, whatever the role.
        app.send(
            "GET",
            &format!("/api/admin/workspaces/{}/audit-log", other.workspace_id),
            None,
            &[("authorization", &format!("Bearer {token}"))],
        )
        .await
        .expect(404);
    }
    app.send(
        "GET",
        &format!("/api/admin/workspaces/{ws}/audit-log"),
        None,
        &[],
    )
    .await
    .expect(401);
}

on_both_backends!(a_refused_or_failed_change_writes_no_entry);
async fn a_refused_or_failed_change_writes_no_entry(app: TestApp) {
    let seed = app.seed_with(json!({"commission_hold_days": 30})).await;
    let ws = seed.workspace_id;
    let before = log(&app, ws, "").await.len();
    // Refused before any write: an invalid setting, a move that is not allowed.
    app.admin(
        "PATCH",
        &format!("/programs/{}", seed.program_id),
        Some(json!({"cookie_window_days": -1})),
    )
    .await
    .expect(400);
    // A payout with nothing due fails inside its transaction: its entry goes with it.
    app.admin(
        "POST",
        &format!("/programs/{}/payouts", seed.program_id),
        None,
    )
    .await
    .expect(409);
    // A rejection of a commission that is no longer pending fails in the flow.
    let c = commission(&app, &seed, "t1").await;
    app.admin(
        "POST",
        &format!("/commissions/{c}/reject"),
        Some(json!({"reason": "fraud"})),
    )
    .await
    .expect(200);
    let after_reject = log(&app, ws, "").await.len();
    assert_eq!(after_reject, before + 1);
    app.admin("POST", &format!("/commissions/{c}/approve"), None)
        .await
        .expect(409);
    // A member that does not exist.
    app.admin(
        "PATCH",
        &format!("/workspaces/{ws}/members/999999"),
        Some(json!({"role": "admin"})),
    )
    .await
    .expect(404);
    // An unchanged setting changes nothing: no entry either.
    app.admin(
        "PATCH",
        &format!("/programs/{}", seed.program_id),
        Some(json!({"name": "Acme Partners"})),
    )
    .await
    .expect(200);
    assert_eq!(log(&app, ws, "").await.len(), after_reject);
}

on_both_backends!(no_entry_can_be_changed_or_deleted);
async fn no_entry_can_be_changed_or_deleted(app: TestApp) {
    let seed = app.seed().await;
    assert!(!log(&app, seed.workspace_id, "").await.is_empty());
    for sql in ["UPDATE audit_log SET action = 'x'", "DELETE FROM audit_log"] {
        let url = app.database_url.clone();
        let refused = tokio::spawn(async move { reftrack_exec(&url, sql).await })
            .await
            .is_err();
        assert!(refused, "{sql} was let through");
    }
    assert!(!log(&app, seed.workspace_id, "").await.is_empty());
}

/// A page request of the dashboard with the session `cookie`, from [`IP`] with the
/// request id `rid` (`form`: a POST from this site).
async fn page(app: &TestApp, path: &str, cookie: &str, form: Option<&str>, rid: &str) -> Reply {
    use crate::common::pages::{HOST, ORIGIN};
    let mut req = axum::http::Request::builder()
        .method(if form.is_some() { "POST" } else { "GET" })
        .uri(path)
        .header("host", HOST)
        .header("cookie", format!("rt_session={cookie}"))
        .header("x-forwarded-for", IP)
        .header("x-request-id", rid);
    let body = match form {
        Some(f) => {
            req = req
                .header("origin", ORIGIN)
                .header("content-type", "application/x-www-form-urlencoded");
            axum::body::Body::from(f.to_string())
        }
        None => axum::body::Body::empty(),
    };
    app.raw(req.body(body).unwrap()).await
}

async fn page_session(app: &TestApp, email: &str) -> String {
    let form = format!(
        "email={}&password={}",
        email.replace('@', "%40"),
        PASSWORD.replace(' ', "+")
    );
    let r = crate::common::pages::DASHBOARD
        .post(app, "/app/login", None, &form)
        .await
        .expect(303);
    crate::common::pages::DASHBOARD.session(&r)
}

on_both_backends!(a_change_on_a_page_is_recorded_as_the_same_change_through_the_api);
async fn a_change_on_a_page_is_recorded_as_the_same_change_through_the_api(app: TestApp) {
    let (app, _clock) = behind_proxy(app);
    let seed = app.seed().await;
    let (other, _) = app.add_partner(&seed, "bob").await;
    let owner_id = app
        .member(seed.workspace_id, "owner@acme.example", PASSWORD, "owner")
        .await;
    let p = seed.program_id;

    // The same change, once on the partner's page and once through the API.
    let cookie = page_session(&app, "owner@acme.example").await;
    page(
        &app,
        &format!("/app/programs/{p}/partners/{}/status", seed.partner_id),
        &cookie,
        Some("status=rejected"),
        "r-page",
    )
    .await
    .expect(303);
    let token = session(&app, "owner@acme.example").await;
    call(
        &app,
        &token,
        "PATCH",
        &format!("/programs/{p}/partners/{other}"),
        Some(json!({"status": "rejected"})),
        "r-api",
    )
    .await
    .expect(200);

    let entries = log(&app, seed.workspace_id, "action=partner.status_changed").await;
    let on_page = one(&entries, "r-page").clone();
    let through_api = one(&entries, "r-api").clone();
    let without = |mut e: Value| {
        for k in ["id", "request_id", "target"] {
            e.as_object_mut().unwrap().remove(k);
        }
        e
    };
    assert_eq!(
        on_page["target"],
        json!({"type": "partner", "id": seed.partner_id})
    );
    assert_eq!(
        on_page["actor"],
        json!({"type": "user", "id": owner_id, "email": "owner@acme.example"})
    );
    assert_eq!(on_page["ip"], IP);
    assert_eq!(without(on_page), without(through_api));

    // The log's page under Settings shows it to the owner, with the CSV of its filter.
    let r = page(
        &app,
        &format!("/app/programs/{p}/settings/audit?action=partner.status_changed"),
        &cookie,
        None,
        "r-view",
    )
    .await
    .expect(200);
    let html = crate::common::pages::html(&r);
    assert!(
        html.contains("r-page") && html.contains("owner@acme.example"),
        "{html}"
    );
    assert!(html.contains(&format!(
        "/app/programs/{p}/settings/audit.csv?action=partner.status_changed"
    )));
    let r = page(
        &app,
        &format!("/app/programs/{p}/settings/audit.csv?action=partner.status_changed"),
        &cookie,
        None,
        "r-csv",
    )
    .await
    .expect(200);
    assert_download(&r);
    assert_eq!(r.body.as_str().unwrap().lines().count(), 3);
    // A bad filter is shown beside its field, not a failure.
    let r = page(
        &app,
        &format!("/app/programs/{p}/settings/audit?from=soon"),
        &cookie,
        None,
        "r-bad",
    )
    .await
    .expect(200);
    assert!(crate::common::pages::html(&r).contains("f-from-error"));
    // A viewer may not see it.
    app.member(seed.workspace_id, "viewer@acme.example", PASSWORD, "viewer")
        .await;
    let viewer = page_session(&app, "viewer@acme.example").await;
    page(
        &app,
        &format!("/app/programs/{p}/settings/audit"),
        &viewer,
        None,
        "r-viewer",
    )
    .await
    .expect(403);
}
