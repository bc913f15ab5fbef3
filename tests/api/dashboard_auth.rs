//! Dashboard sessions and the access rules of the dashboard endpoints (401, then 404,
//! then 403).

use std::sync::Arc;

use crate::common::*;
use reftrack::domain::time::ManualClock;
use serde_json::json;

const PASSWORD: &str = "correct horse battery";

/// Creates a user; with `membership` = Some((role, status)), a member of the seed's
/// workspace.
async fn user(app: &TestApp, seed: &Seed, email: &str, membership: Option<(&str, &str)>) -> i64 {
    let u = app
        .admin(
            "POST",
            "/users",
            Some(json!({"email": email, "password": PASSWORD, "name": "Dana"})),
        )
        .await
        .expect(201);
    let id = u.body["id"].as_i64().unwrap();
    if let Some((role, status)) = membership {
        app.admin(
            "POST",
            &format!("/workspaces/{}/members", seed.workspace_id),
            Some(json!({"user_id": id, "role": role, "status": status})),
        )
        .await
        .expect(201);
    }
    id
}

async fn token(app: &TestApp, email: &str) -> String {
    let r = app.login(email, PASSWORD).await.expect(200);
    r.body["token"].as_str().unwrap().to_string()
}

async fn get(app: &TestApp, path: &str, auth: Option<&str>) -> Reply {
    match auth {
        Some(a) => app.send("GET", path, None, &[("authorization", a)]).await,
        None => app.send("GET", path, None, &[]).await,
    }
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn paths(program_id: i64) -> [String; 3] {
    [
        format!("/api/tracking/performance/{program_id}"),
        format!("/api/tracking/status/{program_id}"),
        format!("/api/tracking/events/{program_id}"),
    ]
}

fn sha256_hex(s: &str) -> String {
    reftrack::app::secrets::hash_token(s)
}

on_both_backends!(login_logout_and_session_lifetime);
async fn login_logout_and_session_lifetime(app: TestApp) {
    let seed = app.seed().await;
    user(&app, &seed, "dana@example.com", Some(("owner", "active"))).await;

    // Same 401 text for a wrong password and an unknown email.
    let wrong = app
        .login("dana@example.com", "not the password")
        .await
        .expect(401);
    assert_eq!(wrong.error(), "Invalid email or password");
    let unknown = app.login("nobody@example.com", PASSWORD).await.expect(401);
    assert_eq!(unknown.error(), "Invalid email or password");
    // Malformed bodies are 400/415, not 401.
    app.post("/api/auth/login", json!({"email": "dana@example.com"}))
        .await
        .expect(400);
    app.send("POST", "/api/auth/login", None, &[])
        .await
        .expect(415);

    // Emails are matched trimmed and case-insensitively (they are stored lower-case).
    let before = chrono::Utc::now().timestamp_millis();
    let r = app.login("  Dana@Example.COM ", PASSWORD).await.expect(200);
    let token = r.body["token"].as_str().unwrap().to_string();
    assert!(
        token.starts_with("rts_") && token.len() == 4 + 64,
        "{token}"
    );
    let expires = chrono::DateTime::parse_from_rfc3339(r.body["expires_at"].as_str().unwrap())
        .unwrap()
        .timestamp_millis();
    let week = 7 * 86_400_000;
    assert!(
        expires >= before + week && expires <= before + week + 60_000,
        "{expires}"
    );

    // Only the token's hash is stored.
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM sessions WHERE token_hash = '{}'",
            sha256_hex(&token)
        ))
        .await,
        1
    );
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM sessions WHERE token_hash = '{token}'"
        ))
        .await,
        0
    );

    let status = format!("/api/tracking/status/{}", seed.program_id);
    get(&app, &status, Some(&bearer(&token))).await.expect(200);

    // A second session works independently of the first.
    let other = token_of(&app).await;
    assert_ne!(other, token);

    // Logout ends this session only.
    let out = app
        .post_auth("/api/auth/logout", &token, json!({}))
        .await
        .expect(200);
    assert_eq!(out.body, json!({"success": true}));
    let gone = get(&app, &status, Some(&bearer(&token))).await.expect(401);
    assert!(gone.body["error"].is_string());
    app.post_auth("/api/auth/logout", &token, json!({}))
        .await
        .expect(401);
    get(&app, &status, Some(&bearer(&other))).await.expect(200);
    // Logout needs a session.
    app.send("POST", "/api/auth/logout", None, &[])
        .await
        .expect(401);

    // An expired session stops working.
    let sql_expire = format!(
        "UPDATE sessions SET expires_at = {} WHERE token_hash = '{}'",
        chrono::Utc::now().timestamp_millis() - 1,
        sha256_hex(&other)
    );
    reftrack_exec(&app.database_url, &sql_expire).await;
    get(&app, &status, Some(&bearer(&other))).await.expect(401);
    // The next login purges expired sessions.
    token_of(&app).await;
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM sessions WHERE token_hash = '{}'",
            sha256_hex(&other)
        ))
        .await,
        0
    );
}

on_both_backends!(a_session_ends_seven_days_after_login_by_the_services_clock);
async fn a_session_ends_seven_days_after_login_by_the_services_clock(app: TestApp) {
    let seed = app.seed().await;
    user(&app, &seed, "dana@example.com", Some(("owner", "active"))).await;
    let clock = Arc::new(ManualClock::at(1_772_445_600_000)); // 2026-03-02T10:00:00Z
    let app = app.with_clock(clock.clone());
    let r = app.login("dana@example.com", PASSWORD).await.expect(200);
    assert_eq!(r.body["expires_at"], "2026-03-09T10:00:00.000Z");
    let token = r.body["token"].as_str().unwrap().to_string();
    let status = format!("/api/tracking/status/{}", seed.program_id);
    clock.advance(7 * 86_400_000 - 1);
    get(&app, &status, Some(&bearer(&token))).await.expect(200);
    clock.advance(1);
    get(&app, &status, Some(&bearer(&token))).await.expect(401);
}

async fn token_of(app: &TestApp) -> String {
    token(app, "dana@example.com").await
}

fn assert_status(r: &Reply, status: u16, what: &str) {
    assert_eq!(r.status.as_u16(), status, "{what}: {}", r.body);
    assert!(
        r.body["error"].is_string(),
        "{what}: JSON error body expected, got {}",
        r.body
    );
}

on_both_backends!(refusals_come_in_order_401_404_403);
async fn refusals_come_in_order_401_404_403(app: TestApp) {
    let seed = app.seed().await;
    user(&app, &seed, "owner@example.com", Some(("owner", "active"))).await;
    user(
        &app,
        &seed,
        "viewer@example.com",
        Some(("viewer", "active")),
    )
    .await;
    user(
        &app,
        &seed,
        "suspended@example.com",
        Some(("member", "suspended")),
    )
    .await;
    // A member of another workspace only.
    let outsider = user(&app, &seed, "outsider@example.com", None).await;
    let ws = app
        .admin("POST", "/workspaces", Some(json!({"name": "Other"})))
        .await
        .expect(201);
    app.admin(
        "POST",
        &format!("/workspaces/{}/members", ws.body["id"]),
        Some(json!({"user_id": outsider, "role": "owner"})),
    )
    .await
    .expect(201);

    let owner = bearer(&token(&app, "owner@example.com").await);
    let viewer = bearer(&token(&app, "viewer@example.com").await);
    let suspended = bearer(&token(&app, "suspended@example.com").await);
    let outsider = bearer(&token(&app, "outsider@example.com").await);
    let logged_out = token(&app, "owner@example.com").await;
    app.post_auth("/api/auth/logout", &logged_out, json!({}))
        .await
        .expect(200);
    let logged_out = bearer(&logged_out);

    for (known, unknown) in paths(seed.program_id).iter().zip(paths(999_999).iter()) {
        // 401: no session, whatever the program.
        for path in [known, unknown] {
            assert_status(&get(&app, path, None).await, 401, "no header");
            assert_status(&get(&app, path, Some("Bearer")).await, 401, "empty bearer");
            assert_status(&get(&app, path, Some("Basic abc")).await, 401, "not bearer");
            assert_status(
                &get(&app, path, Some("Bearer rts_nope")).await,
                401,
                "bad token",
            );
            assert_status(&get(&app, path, Some(&logged_out)).await, 401, "logged out");
            // A program API key is not a session.
            assert_status(
                &get(&app, path, Some(&bearer(&seed.api_token))).await,
                401,
                "api key",
            );
        }
        // 404 before 403: an unknown program is 404 even for a non-member.
        for who in [&owner, &outsider, &suspended, &viewer] {
            assert_status(&get(&app, unknown, Some(who)).await, 404, "unknown program");
        }
        // 403: not a member, or a suspended one.
        assert_status(&get(&app, known, Some(&outsider)).await, 403, "outsider");
        assert_status(&get(&app, known, Some(&suspended)).await, 403, "suspended");
        get(&app, known, Some(&owner)).await.expect(200);
    }
    // A malformed program id is a 400 once authenticated.
    get(&app, "/api/tracking/status/abc", Some(&owner))
        .await
        .expect(400);
    assert_status(
        &get(&app, "/api/tracking/status/abc", None).await,
        401,
        "401 first",
    );

    // viewer: tracking:read and workspace membership, but not tracking:list.
    let [performance, status, events] = paths(seed.program_id);
    get(&app, &performance, Some(&viewer)).await.expect(200);
    get(&app, &status, Some(&viewer)).await.expect(200);
    let r = get(&app, &events, Some(&viewer)).await;
    assert_status(&r, 403, "viewer on events");
    assert!(r.error().contains("tracking:list"), "{}", r.error());

    // Suspending and reactivating a membership takes effect at once.
    let owner_id = app
        .count("SELECT id FROM users WHERE email = 'owner@example.com'")
        .await;
    let member_path = format!("/workspaces/{}/members/{owner_id}", seed.workspace_id);
    app.admin("PATCH", &member_path, Some(json!({"status": "suspended"})))
        .await
        .expect(200);
    assert_status(
        &get(&app, &performance, Some(&owner)).await,
        403,
        "now suspended",
    );
    app.admin(
        "PATCH",
        &member_path,
        Some(json!({"status": "active", "role": "member"})),
    )
    .await
    .expect(200);
    for path in paths(seed.program_id) {
        get(&app, &path, Some(&owner)).await.expect(200);
    }
}

on_both_backends!(the_operator_lists_users_and_sets_a_forgotten_password);
async fn the_operator_lists_users_and_sets_a_forgotten_password(app: TestApp) {
    let seed = app.seed().await;
    let dana = user(&app, &seed, "dana@example.com", Some(("owner", "active"))).await;
    user(&app, &seed, "erin@example.com", None).await;
    let session = token(&app, "dana@example.com").await;

    let r = app.admin("GET", "/users?q=DANA%40", None).await.expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(
        (&r.body["data"][0]["id"], &r.body["data"][0]["email"]),
        (&json!(dana), &json!("dana@example.com"))
    );
    assert!(r.body["data"][0].get("password_hash").is_none());
    // Newest first.
    let r = app.admin("GET", "/users?limit=1", None).await.expect(200);
    assert_eq!(r.body["data"][0]["email"], "erin@example.com");
    let next = r.body["next_cursor"].as_str().unwrap().to_string();
    let r = app
        .admin("GET", &format!("/users?limit=1&cursor={next}"), None)
        .await
        .expect(200);
    assert_eq!(r.body["data"][0]["email"], "dana@example.com");

    // A member, even an owner, neither lists users nor changes them.
    let auth = bearer(&session);
    let r = app
        .send("GET", "/api/admin/users", None, &[("authorization", &auth)])
        .await
        .expect(403);
    assert_eq!(r.error(), "Only the operator (admin token) may list users");
    let r = app
        .send(
            "PATCH",
            &format!("/api/admin/users/{dana}"),
            Some(json!({"password": "taken over!"})),
            &[("authorization", &auth)],
        )
        .await
        .expect(403);
    assert_eq!(
        r.error(),
        "Only the operator (admin token) may change users"
    );

    for (body, text) in [
        (
            json!({"password": "short"}),
            "password must be 8 to 1024 characters",
        ),
        (json!({"name": ""}), "name must be 1 to 200 characters"),
    ] {
        let r = app
            .admin("PATCH", &format!("/users/{dana}"), Some(body))
            .await
            .expect(400);
        assert_eq!(r.error(), text);
    }
    app.admin(
        "PATCH",
        &format!("/users/{dana}"),
        Some(json!({"email": "x@example.com"})),
    )
    .await
    .expect(400);
    app.admin("PATCH", "/users/9999", Some(json!({"name": "X"})))
        .await
        .expect(404);
    get(&app, "/api/admin/workspaces", Some(&auth))
        .await
        .expect(200);

    // The name alone keeps the password and the session.
    let r = app
        .admin(
            "PATCH",
            &format!("/users/{dana}"),
            Some(json!({"name": "Dana S."})),
        )
        .await
        .expect(200);
    assert_eq!(r.body["name"], "Dana S.");
    get(&app, "/api/admin/workspaces", Some(&auth))
        .await
        .expect(200);
    // A new password: the old one and every session end.
    let r = app
        .admin(
            "PATCH",
            &format!("/users/{dana}"),
            Some(json!({"password": "a brand new one", "name": null})),
        )
        .await
        .expect(200);
    assert_eq!(r.body["name"], serde_json::Value::Null);
    get(&app, "/api/admin/workspaces", Some(&auth))
        .await
        .expect(401);
    app.login("dana@example.com", PASSWORD).await.expect(401);
    app.login("dana@example.com", "a brand new one")
        .await
        .expect(200);
}
