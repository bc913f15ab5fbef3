//! A public endpoint must not be a way in: per-client-IP rate limits (429 with
//! `Retry-After`), login lockout per account, program API keys and dashboard sessions
//! that reach nothing outside their own program or memberships, and secrets that never
//! reach the logs.

use std::time::Duration;

use crate::common::server::{free_port, Server};
use crate::common::*;
use reftrack::config::RateLimitArgs;
use reftrack::http::client_ip::ClientResolver;
use serde_json::{json, Value};

const CLICK: &str = "/api/v1/track/click";
const LEAD: &str = "/api/v1/track/lead";
const SALE: &str = "/api/v1/track/sale";
const REFUND: &str = "/api/v1/track/refund";
const LOGIN: &str = "/api/auth/login";
const PASSWORD: &str = "correct horse battery";

fn from(ip: &'static str) -> [(&'static str, &'static str); 1] {
    [("x-forwarded-for", ip)]
}

#[track_caller]
fn assert_429(r: &Reply) {
    assert_eq!(r.status.as_u16(), 429, "{:?}", r.body);
    assert!(r.error().starts_with("Too many requests"), "{}", r.error());
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
}

#[tokio::test]
async fn public_endpoints_are_rate_limited_per_client_ip() {
    // Behind a trusted proxy, so that the test can speak for several client IPs.
    let app = TestApp::sqlite()
        .await
        .with_resolver(ClientResolver::new(Some("*".parse().unwrap()), None).unwrap())
        .with_rate_limits(RateLimitArgs {
            rate_limit_click: 5,
            rate_limit_lead: 3,
            rate_limit_login: 2,
        });
    let seed = app.seed().await;
    let click = json!({"affiliate_url": format!("https://shop.example/?aff={}", seed.short_link)});

    // Clicks: five per minute from one IP, the legacy alias sharing the budget.
    for i in 0..5 {
        let path = if i % 2 == 0 {
            CLICK
        } else {
            "/api/tracking/click"
        };
        app.send("POST", path, Some(click.clone()), &from("198.51.100.1"))
            .await
            .expect(200);
    }
    let limited = app
        .send("POST", CLICK, Some(click.clone()), &from("198.51.100.1"))
        .await;
    assert_429(&limited);
    // Nothing was recorded for the refused click.
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        5
    );
    // Another client is not affected; an IPv6 /64 is one client.
    app.send("POST", CLICK, Some(click.clone()), &from("198.51.100.2"))
        .await
        .expect(200);
    for i in 0..5 {
        let ip: &'static str = ["2001:db8:7:7::1", "2001:db8:7:7::2"][i % 2];
        app.send("POST", CLICK, Some(click.clone()), &from(ip))
            .await
            .expect(200);
    }
    assert_429(
        &app.send(
            "POST",
            CLICK,
            Some(click.clone()),
            &from("2001:db8:7:7:ffff::9"),
        )
        .await,
    );
    // Without a known client IP (no peer, no trusted header) a request is not limited.
    for _ in 0..8 {
        app.send("POST", CLICK, Some(click.clone()), &[])
            .await
            .expect(200);
    }

    // Browser-mode leads are limited; server-mode leads (with the API key) are not.
    let lead = |key: &str| json!({"customer_key": key, "additional_data": {"program_id": seed.program_id}});
    for i in 0..3 {
        app.send(
            "POST",
            LEAD,
            Some(lead(&format!("b{i}"))),
            &from("198.51.100.3"),
        )
        .await
        .expect(200);
    }
    assert_429(
        &app.send("POST", LEAD, Some(lead("b9")), &from("198.51.100.3"))
            .await,
    );
    let auth = format!("Bearer {}", seed.api_token);
    for i in 0..6 {
        app.send(
            "POST",
            LEAD,
            Some(json!({"customer_key": format!("s{i}")})),
            &[
                ("x-forwarded-for", "198.51.100.3"),
                ("authorization", &auth),
            ],
        )
        .await
        .expect(200);
    }

    // Login: two attempts per minute from one IP, whatever the account.
    for email in ["a@example.com", "b@example.com"] {
        app.send(
            "POST",
            LOGIN,
            Some(json!({"email": email, "password": "wrong password"})),
            &from("198.51.100.4"),
        )
        .await
        .expect(401);
    }
    assert_429(
        &app.send(
            "POST",
            LOGIN,
            Some(json!({"email": "c@example.com", "password": "x"})),
            &from("198.51.100.4"),
        )
        .await,
    );
    // Sales and refunds are server calls with an API key: not limited.
    for i in 0..8 {
        app.send(
            "POST",
            REFUND,
            Some(json!({"transaction_id": format!("none{i}")})),
            &[
                ("x-forwarded-for", "198.51.100.1"),
                ("authorization", &auth),
            ],
        )
        .await
        .expect(404);
    }
}

/// The real binary limits by the TCP peer, configured from the environment.
#[tokio::test]
async fn the_binary_limits_by_peer_address_from_its_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("r.db").display());
    let listen = format!("127.0.0.1:{}", free_port());
    let server = Server::start(&[
        ("REFTRACK_DATABASE_URL", url.as_str()),
        ("REFTRACK_LISTEN", listen.as_str()),
        ("REFTRACK_RATE_LIMIT_CLICK", "3"),
    ]);
    let http = reqwest::Client::new();
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let r = http
            .post(format!("{}{CLICK}", server.base))
            .header("x-forwarded-for", "203.0.113.1") // not a trusted proxy: ignored
            .json(&json!({"affiliate_url": "https://x.example/?aff=nobody"}))
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
        if r.status().as_u16() == 429 {
            assert!(r.headers().contains_key("retry-after"));
            let body: Value = r.json().await.unwrap();
            assert!(body["error"]
                .as_str()
                .unwrap()
                .starts_with("Too many requests"));
        }
    }
    assert_eq!(statuses, [400, 400, 400, 429]);
}

#[tokio::test]
async fn failed_logins_lock_the_account_out_for_longer_each_time() {
    let app = TestApp::sqlite().await;
    let seed = app.seed().await;
    app.member(seed.workspace_id, "dana@example.com", PASSWORD, "owner")
        .await;
    app.member(seed.workspace_id, "erin@example.com", PASSWORD, "owner")
        .await;
    for _ in 0..5 {
        app.login("dana@example.com", "guess").await.expect(401);
    }
    // Locked: even the right password is refused, without a hint which it was.
    let r = app.login("Dana@Example.com", PASSWORD).await;
    assert_429(&r);
    assert_eq!(r.headers["retry-after"], "1");
    // Another account is not affected; an unknown account is throttled the same way.
    app.login("erin@example.com", PASSWORD).await.expect(200);
    for _ in 0..5 {
        app.login("ghost@example.com", "guess").await.expect(401);
    }
    assert_429(&app.login("ghost@example.com", "guess").await);

    // After the lockout the next failure doubles it.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    app.login("dana@example.com", "guess").await.expect(401);
    let r = app.login("dana@example.com", PASSWORD).await;
    assert_429(&r);
    assert_eq!(r.headers["retry-after"], "2");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    // Success clears the count.
    app.login("dana@example.com", PASSWORD).await.expect(200);
    for _ in 0..4 {
        app.login("dana@example.com", "guess").await.expect(401);
    }
    app.login("dana@example.com", PASSWORD).await.expect(200);
}

/// Counts of program `p`'s records and figures, to show that nothing changed.
async fn footprint(app: &TestApp, p: i64) -> Vec<i64> {
    let mut out = Vec::new();
    for sql in [
        format!("SELECT COUNT(*) FROM customers WHERE program_id = {p}"),
        format!("SELECT COUNT(*) FROM customers WHERE program_id = {p} AND customer_status = 'conversion'"),
        format!("SELECT COUNT(*) FROM affiliate_lead_events WHERE program_id = {p}"),
        format!("SELECT COUNT(*) FROM affiliate_sale_events WHERE program_id = {p}"),
        format!("SELECT COALESCE(CAST(SUM(refunded_cents) AS BIGINT), 0) FROM affiliate_sale_events WHERE program_id = {p}"),
        format!("SELECT COALESCE(CAST(SUM(reversed_cents) AS BIGINT), 0) FROM commissions WHERE program_id = {p}"),
        format!("SELECT COUNT(*) FROM commissions WHERE program_id = {p}"),
        format!("SELECT COALESCE(CAST(SUM(revenue_cents + leads + sales) AS BIGINT), 0) FROM daily_rollups WHERE program_id = {p}"),
    ] {
        out.push(app.count(&sql).await);
    }
    out
}

on_both_backends!(every_password_call_shares_the_login_limit);
async fn every_password_call_shares_the_login_limit(app: TestApp) {
    // Applying, accepting an invite and changing a password hash a password (argon2,
    // deliberately costly): each counts against the login limit like signing in.
    let app = app
        .with_resolver(ClientResolver::new(Some("*".parse().unwrap()), None).unwrap())
        .with_rate_limits(RateLimitArgs {
            rate_limit_click: 0,
            rate_limit_lead: 0,
            rate_limit_login: 2,
        });
    let p = app
        .seed_with(json!({"applications_open": true}))
        .await
        .program_id;
    let apply = format!("/api/partner/apply/{p}");
    let body = |i: u32| json!({"name": "Spam", "email": format!("spam{i}@example.com"), "password": "partner password"});
    app.send("POST", &apply, Some(body(0)), &from("198.51.100.7"))
        .await
        .expect(201);
    app.send("POST", &apply, Some(body(1)), &from("198.51.100.7"))
        .await
        .expect(201);
    assert_429(
        &app.send("POST", &apply, Some(body(2)), &from("198.51.100.7"))
            .await,
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM partners WHERE email = 'spam2@example.com'")
            .await,
        0
    );

    // A password change from one client, whatever its session.
    let login = json!({"email": "spam0@example.com", "password": "partner password"});
    let r = app
        .send(
            "POST",
            "/api/partner/auth/login",
            Some(login),
            &from("198.51.100.10"),
        )
        .await
        .expect(200);
    let auth = format!("Bearer {}", r.body["token"].as_str().unwrap());
    let change =
        json!({"current_password": "wrong password", "new_password": "new partner password"});
    for _ in 0..2 {
        app.send(
            "POST",
            "/api/partner/me/password",
            Some(change.clone()),
            &[
                ("x-forwarded-for", "198.51.100.8"),
                ("authorization", &auth),
            ],
        )
        .await
        .expect(400);
    }
    let r = app
        .send(
            "POST",
            "/api/partner/me/password",
            Some(change),
            &[
                ("x-forwarded-for", "198.51.100.8"),
                ("authorization", &auth),
            ],
        )
        .await;
    assert_429(&r);

    // The portal's application form, from a third client: the third is refused.
    let form = |i: u32| {
        axum::http::Request::builder()
            .method("POST")
            .uri(format!("/partner/apply/{p}"))
            .header("host", pages::HOST)
            .header("origin", pages::ORIGIN)
            .header("x-forwarded-for", "198.51.100.9")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(axum::body::Body::from(format!(
                "name=Spam&email=page{i}%40example.com&password=partner+password"
            )))
            .unwrap()
    };
    app.raw(form(0)).await.expect(303);
    app.raw(form(1)).await.expect(303);
    let r = app.raw(form(2)).await;
    assert_eq!(r.status.as_u16(), 429);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM partners WHERE email = 'page2@example.com'")
            .await,
        0
    );
}

on_both_backends!(an_api_key_reaches_nothing_of_another_program);
async fn an_api_key_reaches_nothing_of_another_program(app: TestApp) {
    let a = app.seed().await;
    let b = app.seed().await;
    let b_click = app.click(&b.short_link).await;
    app.post_auth(
        LEAD,
        &b.api_token,
        json!({"click_id": b_click, "customer_key": "kb"}),
    )
    .await
    .expect(200);
    app.post_auth(
        SALE,
        &b.api_token,
        json!({"transaction_id": "txb", "amount_cents": 5000, "customer_key": "kb"}),
    )
    .await
    .expect(200);
    let before = footprint(&app, b.program_id).await;

    // Lead with A's key on B's customer: refused by click id; by key it is only an
    // unattributed lead of A's own.
    let r = app
        .post_auth(
            LEAD,
            &a.api_token,
            json!({"click_id": b_click, "customer_key": "x"}),
        )
        .await
        .expect(400);
    assert_eq!(r.error(), "Customer does not belong to this program");
    app.post_auth(LEAD, &a.api_token, json!({"customer_key": "kb"}))
        .await
        .expect(200);
    assert_eq!(app.count(&format!("SELECT COUNT(*) FROM affiliate_lead_events WHERE customer_key = 'kb' AND program_id = {} AND customer_id IS NULL", a.program_id)).await, 1);
    // Sale with A's key for B's customer, by key or by click id.
    for body in [
        json!({"transaction_id": "t_a1", "amount_cents": 100, "customer_key": "kb"}),
        json!({"transaction_id": "t_a2", "amount_cents": 100, "click_id": b_click}),
    ] {
        let r = app.post_auth(SALE, &a.api_token, body).await.expect(400);
        assert_eq!(
            r.error(),
            "No affiliate attribution found for this customer in this program"
        );
    }
    // B's transaction id: A learns only that it is taken (ids are global, D-dup).
    let a_click = app.click(&a.short_link).await;
    app.post_auth(
        LEAD,
        &a.api_token,
        json!({"click_id": a_click, "customer_key": "ka"}),
    )
    .await
    .expect(200);
    app.post_auth(
        SALE,
        &a.api_token,
        json!({"transaction_id": "txb", "amount_cents": 1, "customer_key": "ka"}),
    )
    .await
    .expect(409);
    // Refunds of B's sale with A's key, real or test mode, partial or full.
    for body in [
        json!({"transaction_id": "txb"}),
        json!({"transaction_id": "txb", "refund_amount_cents": 100}),
        json!({"transaction_id": "txb", "additional_data": {"test_mode": true}}),
    ] {
        let r = app.post_auth(REFUND, &a.api_token, body).await.expect(404);
        assert_eq!(r.error(), "Sale not found for transaction_id");
    }
    // Credentials of one kind are no credentials of another.
    let admin_auth = format!("Bearer {ADMIN_TOKEN}");
    app.send(
        "POST",
        SALE,
        Some(json!({"transaction_id": "t", "amount_cents": 1, "customer_key": "kb"})),
        &[("authorization", &admin_auth)],
    )
    .await
    .expect(401);
    app.send(
        "GET",
        &format!("/api/admin/programs/{}", b.program_id),
        None,
        &[("authorization", &format!("Bearer {}", a.api_token))],
    )
    .await
    .expect(401);
    app.send(
        "GET",
        &format!("/api/tracking/performance/{}", b.program_id),
        None,
        &[("authorization", &format!("Bearer {}", b.api_token))],
    )
    .await
    .expect(401);

    assert_eq!(
        footprint(&app, b.program_id).await,
        before,
        "program B changed"
    );
    let report = reftrack::verify::check(&*app.store).await.unwrap();
    assert!(report.ok(), "{}", report.to_json());
}

on_both_backends!(a_dashboard_session_sees_only_its_memberships);
async fn a_dashboard_session_sees_only_its_memberships(app: TestApp) {
    let a = app.seed().await;
    let b = app.seed().await;
    app.member(a.workspace_id, "owner.a@example.com", PASSWORD, "owner")
        .await;
    let session = app.login("owner.a@example.com", PASSWORD).await.expect(200);
    let auth = format!("Bearer {}", session.body["token"].as_str().unwrap());
    for endpoint in ["performance", "status", "events"] {
        app.send(
            "GET",
            &format!("/api/tracking/{endpoint}/{}", a.program_id),
            None,
            &[("authorization", &auth)],
        )
        .await
        .expect(200);
        let r = app
            .send(
                "GET",
                &format!("/api/tracking/{endpoint}/{}", b.program_id),
                None,
                &[("authorization", &auth)],
            )
            .await
            .expect(403);
        assert!(r.error().contains("not an active member"), "{}", r.error());
    }
    // On the management API the session reaches its own workspace, and another's
    // program does not exist for it; it is no API key.
    app.send(
        "GET",
        &format!("/api/admin/programs/{}", a.program_id),
        None,
        &[("authorization", &auth)],
    )
    .await
    .expect(200);
    app.send(
        "GET",
        &format!("/api/admin/programs/{}", b.program_id),
        None,
        &[("authorization", &auth)],
    )
    .await
    .expect(404);
    app.send(
        "POST",
        SALE,
        Some(json!({"transaction_id": "t", "amount_cents": 1, "customer_key": "k"})),
        &[("authorization", &auth)],
    )
    .await
    .expect(401);
    app.send(
        "POST",
        REFUND,
        Some(json!({"transaction_id": "t"})),
        &[("authorization", &auth)],
    )
    .await
    .expect(401);
    // A suspended membership is no membership.
    let user_id = app
        .count("SELECT id FROM users WHERE email = 'owner.a@example.com'")
        .await;
    app.admin(
        "PATCH",
        &format!("/workspaces/{}/members/{user_id}", a.workspace_id),
        Some(json!({"status": "suspended"})),
    )
    .await
    .expect(200);
    app.send(
        "GET",
        &format!("/api/tracking/performance/{}", a.program_id),
        None,
        &[("authorization", &auth)],
    )
    .await
    .expect(403);
}

fn stripe_signature(payload: &str, secret: &str) -> String {
    use hmac::{Hmac, Mac};
    let t = chrono::Utc::now().timestamp();
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{payload}").as_bytes());
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// With every log at debug level, logins, sales, webhooks and an invite whose mail fails
/// leave no secret in the process's output: not the admin token, the API key, the
/// session token, the password, the webhook secret, the invite token, nor the database's
/// or the SMTP server's password.
#[tokio::test]
async fn secrets_never_reach_the_logs() {
    let database = fresh_postgres_url().await;
    dropping_database(database.clone(), secrets_never_reach_the_logs_on(database)).await;
}

async fn secrets_never_reach_the_logs_on(database: String) {
    let admin_token = "rta_s3cret_admin_token_never_logged";
    let (url, db_password) = {
        let mut u = url::Url::parse(&database).unwrap();
        // The test server trusts local connections, so any password is accepted.
        u.set_password(Some("pg_s3cret_password")).unwrap();
        (u.to_string(), Some("pg_s3cret_password"))
    };
    let listen = format!("127.0.0.1:{}", free_port());
    // Nothing listens there: mailing the invite fails, and says so in the log.
    let smtp_password = "smtp_s3cret_password";
    let smtp = format!("smtp://mailer:{smtp_password}@127.0.0.1:{}", free_port());
    let mut server = Server::start(&[
        ("REFTRACK_DATABASE_URL", url.as_str()),
        ("REFTRACK_LISTEN", listen.as_str()),
        ("REFTRACK_ADMIN_TOKEN", admin_token),
        ("REFTRACK_LOG", "debug"),
        ("REFTRACK_SMTP_URL", smtp.as_str()),
        ("REFTRACK_MAIL_FROM", "invites@example.com"),
    ]);
    let base = server.base.clone();
    let http = reqwest::Client::new();
    let call = |method: reqwest::Method, path: &str, token: Option<&str>, body: Option<Value>| {
        let mut req = http.request(method, format!("{base}{path}"));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        async move {
            let res = req.send().await.unwrap();
            let status = res.status().as_u16();
            (status, res.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    use reqwest::Method;
    let webhook_secret = "whsec_s3cret_webhook_signing_key";
    let (_, ws) = call(
        Method::POST,
        "/api/admin/workspaces",
        Some(admin_token),
        Some(json!({"name": "W"})),
    )
    .await;
    let (_, program) = call(
        Method::POST,
        "/api/admin/programs",
        Some(admin_token),
        Some(
            json!({"workspace_id": ws["id"], "name": "P", "stripe_webhook_secret": webhook_secret}),
        ),
    )
    .await;
    let program_id = program["id"].as_i64().unwrap();
    let api_key = program["api_token"].as_str().unwrap().to_string();
    let (_, partner) = call(
        Method::POST,
        "/api/admin/partners",
        Some(admin_token),
        Some(json!({"name": "A", "code": "a"})),
    )
    .await;
    call(
        Method::POST,
        &format!("/api/admin/programs/{program_id}/partners"),
        Some(admin_token),
        Some(json!({"partner_id": partner["id"]})),
    )
    .await;
    call(
        Method::POST,
        "/api/admin/links",
        Some(admin_token),
        Some(json!({"program_id": program_id, "partner_id": partner["id"], "short_link": "a"})),
    )
    .await;
    let (_, rotated) = call(
        Method::POST,
        &format!("/api/admin/programs/{program_id}/rotate-token"),
        Some(admin_token),
        None,
    )
    .await;
    let old_key = api_key;
    let api_key = rotated["api_token"].as_str().unwrap().to_string();
    call(
        Method::PATCH,
        &format!("/api/admin/partners/{}", partner["id"]),
        Some(admin_token),
        Some(json!({"email": "a@example.com"})),
    )
    .await;
    let (status, invite) = call(
        Method::POST,
        &format!("/api/admin/partners/{}/invite", partner["id"]),
        Some(admin_token),
        None,
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(invite["emailed"], false);
    let invite_token = invite["invite_url"]
        .as_str()
        .unwrap()
        .split("token=")
        .nth(1)
        .unwrap()
        .to_string();
    let user_password = "user s3cret passphrase";
    let (_, user) = call(
        Method::POST,
        "/api/admin/users",
        Some(admin_token),
        Some(json!({"email": "u@example.com", "password": user_password})),
    )
    .await;
    call(
        Method::POST,
        &format!("/api/admin/workspaces/{}/members", ws["id"]),
        Some(admin_token),
        Some(json!({"user_id": user["id"], "role": "owner"})),
    )
    .await;
    let (status, _) = call(
        Method::POST,
        LOGIN,
        None,
        Some(json!({"email": "u@example.com", "password": "wrong s3cret guess"})),
    )
    .await;
    assert_eq!(status, 401);
    let (status, session) = call(
        Method::POST,
        LOGIN,
        None,
        Some(json!({"email": "u@example.com", "password": user_password})),
    )
    .await;
    assert_eq!(status, 200);
    let session_token = session["token"].as_str().unwrap().to_string();
    let (status, _) = call(
        Method::GET,
        &format!("/api/tracking/performance/{program_id}"),
        Some(&session_token),
        None,
    )
    .await;
    assert_eq!(status, 200);

    let (_, click) = call(
        Method::POST,
        CLICK,
        None,
        Some(json!({"affiliate_url": "https://x.example/?aff=a"})),
    )
    .await;
    let click_id = click["click_id"].as_str().unwrap().to_string();
    let (status, _) = call(
        Method::POST,
        LEAD,
        Some(&api_key),
        Some(json!({"click_id": click_id, "customer_key": "k"})),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = call(
        Method::POST,
        SALE,
        Some(&api_key),
        Some(json!({"transaction_id": "t1", "amount_cents": 100, "customer_key": "k"})),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = call(
        Method::POST,
        SALE,
        Some(&old_key),
        Some(json!({"transaction_id": "t2", "amount_cents": 100, "customer_key": "k"})),
    )
    .await;
    assert_eq!(status, 401);
    let (status, _) = call(
        Method::POST,
        REFUND,
        Some(&api_key),
        Some(json!({"transaction_id": "t1"})),
    )
    .await;
    assert_eq!(status, 200);

    let event = json!({
        "id": "evt_1", "type": "checkout.session.completed",
        "data": {"object": {"id": "cs_1", "object": "checkout.session", "payment_status": "paid",
            "amount_total": 2500, "currency": "usd", "payment_intent": "pi_1",
            "metadata": {"tracker_click_id": click_id, "tracker_customer_key": "k", "program_id": program_id.to_string()}}}
    })
    .to_string();
    let webhook = |signature: String| {
        http.post(format!("{base}/api/webhooks/stripe/{program_id}"))
            .header("stripe-signature", signature)
            .header("content-type", "application/json")
            .body(event.clone())
            .send()
    };
    assert_eq!(
        webhook(stripe_signature(&event, webhook_secret))
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    assert_eq!(
        webhook(stripe_signature(&event, "whsec_wrong"))
            .await
            .unwrap()
            .status()
            .as_u16(),
        400
    );
    let (status, _) = call(Method::POST, "/api/auth/logout", Some(&session_token), None).await;
    assert_eq!(status, 200);
    let (status, _) = call(
        Method::GET,
        &format!("/api/tracking/status/{program_id}"),
        Some(&session_token),
        None,
    )
    .await;
    assert_eq!(status, 401);

    server.signal("TERM");
    server.wait_exit(Duration::from_secs(10)).expect("exit");
    std::thread::sleep(Duration::from_millis(100));
    let output = server.output();
    assert!(
        output.contains("DEBUG"),
        "no debug logging captured:\n{output}"
    );
    assert!(output.contains("started processing request") || output.contains("stripe webhook"));
    assert!(
        output.contains("mailing a partner invite failed"),
        "the failed mail is not logged:\n{output}"
    );
    let mut secrets = vec![
        ("admin token", admin_token.to_string()),
        ("API key", api_key.clone()),
        ("rotated-out API key", old_key.clone()),
        ("session token", session_token.clone()),
        ("user password", user_password.to_string()),
        ("wrong password", "wrong s3cret guess".to_string()),
        ("webhook secret", webhook_secret.to_string()),
        ("SMTP password", smtp_password.to_string()),
        ("invite token", invite_token.clone()),
        ("invite token body", invite_token[4..].to_string()),
        // The tokens' random part, in case a log line cut or re-encoded the prefix.
        ("API key body", api_key[4..].to_string()),
        ("session token body", session_token[4..].to_string()),
    ];
    if let Some(p) = db_password {
        secrets.push(("database password", p.to_string()));
    }
    for (what, secret) in &secrets {
        assert!(
            !output.contains(secret.as_str()),
            "the {what} appears in the logs"
        );
    }
    eprintln!(
        "{} bytes of debug output checked for {} secrets",
        output.len(),
        secrets.len()
    );
}
