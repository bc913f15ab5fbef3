//! Bad input gets a JSON `{"error": …}` with a 4xx, never a 500 or a panic.

use crate::common::pages::{html, DASHBOARD, PORTAL};
use crate::common::*;
use axum::body::Body;
use axum::http::Request;
use serde_json::json;

fn post(
    path: &str,
    token: &str,
    content_type: Option<&str>,
    body: impl Into<Body>,
) -> Request<Body> {
    let mut r = Request::post(path);
    if let Some(ct) = content_type {
        r = r.header("content-type", ct);
    }
    r.header("authorization", format!("Bearer {token}"))
        .body(body.into())
        .unwrap()
}

on_both_backends!(every_bad_request_is_a_json_4xx);
async fn every_bad_request_is_a_json_4xx(app: TestApp) {
    let seed = app.seed().await;
    let json_ct = Some("application/json");
    let paths = [
        "/api/v1/track/click",
        "/api/v1/track/lead",
        "/api/v1/track/sale",
        "/api/v1/track/refund",
        "/api/tracking/click",
    ];
    for path in paths {
        for token in [seed.api_token.as_str(), "not-a-key"] {
            let cases: Vec<(Request<Body>, u16)> = vec![
                (post(path, token, json_ct, "{not json"), 400),
                (post(path, token, json_ct, ""), 400),
                (post(path, token, json_ct, "[1, 2]"), 400),
                (post(path, token, json_ct, "\"string\""), 400),
                (
                    post(path, token, json_ct, vec![0xff, 0xfe, 0x7b, 0x7d]),
                    400,
                ),
                (post(path, token, json_ct, "[".repeat(100_000)), 413),
                (
                    post(
                        path,
                        token,
                        json_ct,
                        format!("{}{}", "[".repeat(5_000), "]".repeat(5_000)),
                    ),
                    400,
                ),
                (post(path, token, Some("text/plain"), "{}"), 415),
                (post(path, token, None, "{}"), 415),
                (
                    post(
                        path,
                        token,
                        Some("application/x-www-form-urlencoded"),
                        "a=b",
                    ),
                    415,
                ),
                (
                    post(
                        path,
                        token,
                        json_ct,
                        format!(
                            "{{\"affiliate_url\": \"{}\"}}",
                            "x".repeat(10 * 1024 * 1024)
                        ),
                    ),
                    413,
                ),
            ];
            for (req, status) in cases {
                let r = app.raw(req).await;
                // Sale and refund check the API key before reading the body.
                let key_first = path.ends_with("sale") || path.ends_with("refund");
                let expected = if key_first && token == "not-a-key" {
                    401
                } else {
                    status
                };
                assert_eq!(r.status.as_u16(), expected, "{path}: {}", r.body);
                assert!(r.body["error"].is_string(), "{path}: {:?}", r.body);
            }
        }
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        0
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_lead_events")
            .await,
        0
    );
}

on_both_backends!(unknown_routes_and_methods);
async fn unknown_routes_and_methods(app: TestApp) {
    let r = app.send("GET", "/nope", None, &[]).await.expect(404);
    assert_eq!(r.error(), "Not found");
    app.send("POST", "/api/v1/track/unknown", Some(json!({})), &[])
        .await
        .expect(404);
    let r = app
        .send("GET", "/api/v1/track/click", None, &[])
        .await
        .expect(405);
    assert_eq!(r.error(), "Method not allowed");
    app.send("DELETE", "/api/admin/programs/1", None, &[])
        .await
        .expect(405);
    // Healthy service endpoints.
    let r = app.send("GET", "/healthz", None, &[]).await.expect(200);
    assert_eq!(r.body["status"], "ok");
    let r = app.send("GET", "/readyz", None, &[]).await.expect(200);
    assert_eq!(r.body["status"], "ready");
}

on_both_backends!(absurd_values_are_refused_or_bounded);
async fn absurd_values_are_refused_or_bounded(app: TestApp) {
    let seed = app.seed().await;
    let long = "y".repeat(60_000);
    // Free text is cut to its bound; identifiers over their bound are refused.
    let r = app
        .post("/api/v1/track/click", json!({"affiliate_url": format!("https://x.io/?aff={}", seed.short_link), "page_title": long}))
        .await
        .expect(200);
    assert!(r.body["click_id"].is_string());
    assert_eq!(
        app.count("SELECT CAST(LENGTH(page_title) AS BIGINT) FROM affiliate_click_events")
            .await,
        2048
    );
    app.post("/api/v1/track/click", json!({"affiliate_url": format!("https://x.io/?aff={}", seed.short_link), "existing_click_id": "c".repeat(1000)}))
        .await
        .expect(400);
    app.post(
        "/api/v1/track/click",
        json!({"affiliate_url": format!("https://x.io/?aff={}", seed.short_link), "page_url": 5}),
    )
    .await
    .expect(400);
    app.post("/api/v1/track/click", json!({"affiliate_url": format!("https://x.io/?aff={}", seed.short_link), "additional_data": "x"}))
        .await
        .expect(400);
    app.post(
        "/api/v1/track/click",
        json!({"affiliate_url": format!("https://x.io/?aff={}", "\u{0}".repeat(3))}),
    )
    .await
    .expect(400);
    for amount in [
        json!(-1),
        json!(i64::MAX),
        json!(u64::MAX),
        json!(1e300),
        json!(null),
        json!([1]),
        json!({"a": 1}),
    ] {
        let r = app
            .post_auth(
                "/api/v1/track/sale",
                &seed.api_token,
                json!({"transaction_id": "t", "amount_cents": amount, "customer_key": "k"}),
            )
            .await;
        assert_eq!(r.status, 400, "{amount}");
    }
    let r = app
        .send(
            "GET",
            "/api/admin/links/99999999999999999999999",
            None,
            &[("authorization", &format!("Bearer {ADMIN_TOKEN}"))],
        )
        .await
        .expect(400);
    assert!(r.body["error"].is_string());
}

on_both_backends!(a_wrong_typed_body_field_is_named);
async fn a_wrong_typed_body_field_is_named(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    // Management API: the field by its path, nested ones too, without serde's position.
    for (path, body, text) in [
        (
            format!("/partners/{}", seed.partner_id),
            json!({"name": 5}),
            "name: invalid type: integer `5`, expected a string",
        ),
        (
            format!("/programs/{p}"),
            json!({"commission": {"percent": "30", "type": "percentage"}}),
            "commission.percent: invalid type: string \"30\", expected f64",
        ),
        (
            format!("/programs/{p}"),
            json!({"commission": {"type": "bonus"}}),
            "commission.type: unknown variant `bonus`, expected `percentage` or `flat`",
        ),
        (
            format!("/programs/{p}"),
            json!({"allowed_origins": ["https://a.example", 5]}),
            "allowed_origins[1]: invalid type: integer `5`, expected a string",
        ),
    ] {
        let r = app
            .admin("PATCH", &path, Some(body.clone()))
            .await
            .expect(400);
        assert_eq!(r.error(), format!("Invalid request body: {text}"), "{body}");
    }
    let r = app
        .admin(
            "PATCH",
            &format!("/programs/{p}"),
            Some(json!({"extra": 1})),
        )
        .await
        .expect(400);
    assert!(
        r.error()
            .starts_with("Invalid request body: extra: unknown field `extra`"),
        "{}",
        r.error()
    );

    // Partner API.
    let token = app.invite_token(seed.partner_id, "alice@example.com").await;
    let r = app
        .post(
            "/api/partner/auth/accept-invite",
            json!({"token": token, "password": "partner password"}),
        )
        .await
        .expect(200);
    let auth = format!("Bearer {}", r.body["token"].as_str().unwrap());
    let r = app
        .send(
            "PATCH",
            "/api/partner/me",
            Some(json!({"payout_email": 5})),
            &[("authorization", &auth)],
        )
        .await
        .expect(400);
    assert_eq!(
        r.error(),
        "Invalid request body: payout_email: invalid type: integer `5`, expected a string"
    );
    let path = format!("/api/partner/programs/{p}/links");
    let r = app
        .send(
            "POST",
            &path,
            Some(json!({"short_link": ["a"]})),
            &[("authorization", &auth)],
        )
        .await
        .expect(400);
    assert_eq!(
        r.error(),
        "Invalid request body: short_link: invalid type: sequence, expected a string"
    );
}

on_both_backends!(a_nul_character_is_refused_wherever_text_comes_in);
async fn a_nul_character_is_refused_wherever_text_comes_in(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"applications_open": true})),
    )
    .await
    .expect(200);
    let nul = "a\u{0}b";
    let url = format!("https://shop.example/?aff={}", seed.short_link);
    let refused = "Text must not contain the NUL character (\\u0000)";
    for r in [
        app.post(
            "/api/v1/track/click",
            json!({"affiliate_url": url, "page_title": nul}),
        )
        .await,
        app.post(
            "/api/tracking/click",
            json!({"affiliate_url": url, "user_agent": nul}),
        )
        .await,
        app.post(
            "/api/v1/track/lead",
            json!({"customer_key": nul, "click_id": "x"}),
        )
        .await,
        app.post_auth(
            "/api/v1/track/sale",
            &seed.api_token,
            json!({"customer_key": nul, "amount_cents": 100}),
        )
        .await,
        app.post_auth(
            "/api/v1/track/refund",
            &seed.api_token,
            json!({"transaction_id": nul}),
        )
        .await,
        app.post("/api/auth/login", json!({"email": nul, "password": "x"}))
            .await,
        app.post(
            "/api/partner/auth/login",
            json!({"email": nul, "password": "x"}),
        )
        .await,
        app.post(
            &format!("/api/partner/apply/{p}"),
            json!({"name": nul, "email": "n@example.com", "password": "partner password"}),
        )
        .await,
        app.admin(
            "POST",
            "/partners",
            Some(json!({"name": nul, "code": "nul"})),
        )
        .await,
        app.admin("GET", "/partners?q=a%00b", None).await,
    ] {
        assert_eq!(r.status, 400, "{}", r.body);
        assert_eq!(r.error(), refused);
    }
    // A backslash before it makes it text, not a NUL.
    app.post(
        "/api/v1/track/click",
        json!({"affiliate_url": url, "page_title": "a\\u0000b"}),
    )
    .await
    .expect(200);
    let r = PORTAL
        .post(&app, "/partner/login", None, "email=a%00b&password=x")
        .await
        .expect(400);
    assert!(
        html(&r).contains("Text must not contain the NUL character"),
        "{}",
        html(&r)
    );
    DASHBOARD
        .get(&app, "/app/login?next=%00", None)
        .await
        .expect(400);
    let r = app.send("GET", "/r/a%00b", None, &[]).await.expect(404);
    assert!(
        r.body.as_str().is_some_and(|b| b.contains("<html")),
        "{}",
        r.body
    );
    // Nothing was taken for an outage: the next calls are served.
    app.post("/api/v1/track/click", json!({"affiliate_url": url}))
        .await
        .expect(200);
    app.admin("GET", &format!("/programs/{p}"), None)
        .await
        .expect(200);
    assert_eq!(app.count("SELECT COUNT(*) FROM partners").await, 1);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        2
    );
}

on_both_backends!(names_short_links_and_codes_refuse_control_and_bidirectional_characters);
async fn names_short_links_and_codes_refuse_control_and_bidirectional_characters(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let rule = "must not contain control characters or bidirectional formatting characters";
    // The right-to-left override that turns "gpj.exe" around, an isolate, a mark, a
    // newline inside a name, an escape, a C1 control.
    let bad = [
        "Acme\u{202E}gpj.exe",
        "Acme\u{2067}Partners",
        "Acme\u{200F}Partners",
        "Acme\nPartners",
        "Acme\u{1b}[31m",
        "Acme\u{85}Partners",
    ];
    for name in bad {
        let r = app
            .admin("POST", "/workspaces", Some(json!({"name": name})))
            .await
            .expect(400);
        assert_eq!(r.error(), format!("name {rule}"), "{name:?}");
        let r = app
            .admin(
                "POST",
                "/programs",
                Some(json!({"workspace_id": seed.workspace_id, "name": name})),
            )
            .await
            .expect(400);
        assert_eq!(r.error(), format!("name {rule}"));
        let r = app
            .admin(
                "PATCH",
                &format!("/programs/{p}"),
                Some(json!({"name": name})),
            )
            .await
            .expect(400);
        assert_eq!(r.error(), format!("name {rule}"));
        let r = app
            .admin(
                "POST",
                "/partners",
                Some(json!({"name": name, "code": "zed"})),
            )
            .await
            .expect(400);
        assert_eq!(r.error(), format!("name {rule}"));
        let r = app
            .admin(
                "PATCH",
                &format!("/partners/{}", seed.partner_id),
                Some(json!({"name": name})),
            )
            .await
            .expect(400);
        assert_eq!(r.error(), format!("name {rule}"));
        let r = app
            .admin(
                "POST",
                "/users",
                Some(json!({"email": "u@example.com", "password": "long enough", "name": name})),
            )
            .await
            .expect(400);
        assert_eq!(r.error(), format!("name {rule}"));
        let short = name.replace(' ', "-");
        let r = app
            .admin(
                "POST",
                "/links",
                Some(json!({"program_id": p, "partner_id": seed.partner_id, "short_link": short})),
            )
            .await
            .expect(400);
        assert!(r.error().starts_with("short_link "), "{}", r.error());
    }
    let r = app
        .admin(
            "POST",
            "/links",
            Some(json!({"program_id": p, "short_link": "promo\u{202E}fdp"})),
        )
        .await
        .expect(400);
    assert_eq!(r.error(), format!("short_link {rule}"));
    // Codes are letters, digits, '-' and '_', which keeps these out too.
    let r = app
        .admin(
            "POST",
            "/partners",
            Some(json!({"name": "Zed", "code": "zed\u{202E}"})),
        )
        .await
        .expect(400);
    assert!(r.error().starts_with("code must be"), "{}", r.error());
    let link = app.link_id(&seed.short_link).await;
    let r = app
        .admin(
            "POST",
            &format!("/links/{link}/coupons"),
            Some(json!({"code": "SAVE\u{2066}10"})),
        )
        .await
        .expect(400);
    assert!(r.error().starts_with("code must be"), "{}", r.error());
    // Text of any script stays welcome.
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"name": "شركاء أكمي"})),
    )
    .await
    .expect(200);
    app.admin(
        "POST",
        "/links",
        Some(json!({"program_id": p, "short_link": "זוג-1"})),
    )
    .await
    .expect(201);

    // The partner API: its own name and its own links.
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"partner_links_allowed": true})),
    )
    .await
    .expect(200);
    let token = app.invite_token(seed.partner_id, "alice@example.com").await;
    let session = app
        .post(
            "/api/partner/auth/accept-invite",
            json!({"token": token, "password": "partner password"}),
        )
        .await
        .expect(200);
    let auth = format!("Bearer {}", session.body["token"].as_str().unwrap());
    let r = app
        .send(
            "PATCH",
            "/api/partner/me",
            Some(json!({"name": "Alice\u{202E}"})),
            &[("authorization", &auth)],
        )
        .await
        .expect(400);
    assert_eq!(r.error(), format!("name {rule}"));
    let r = app
        .send(
            "POST",
            &format!("/api/partner/programs/{p}/links"),
            Some(json!({"short_link": "alice\u{7}"})),
            &[("authorization", &auth)],
        )
        .await
        .expect(400);
    assert_eq!(r.error(), format!("short_link {rule}"));
    // An application names its applicant.
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"applications_open": true})),
    )
    .await
    .expect(200);
    let r = app.post(&format!("/api/partner/apply/{p}"), json!({"name": "Bob\u{2069}", "email": "bob@example.com", "password": "partner password"})).await.expect(400);
    assert_eq!(r.error(), format!("name {rule}"));

    // Pages: the message beside the field.
    let owner = app
        .member(
            seed.workspace_id,
            "owner@example.com",
            "owner password",
            "owner",
        )
        .await;
    assert!(owner > 0);
    let r = DASHBOARD
        .post(
            &app,
            "/app/login",
            None,
            "email=owner%40example.com&password=owner+password",
        )
        .await
        .expect(303);
    let cookie = DASHBOARD.session(&r);
    let r = DASHBOARD
        .post(
            &app,
            &format!("/app/programs/{p}/partners"),
            Some(&cookie),
            "name=Eve%E2%80%AEexe&code=eve",
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains(&format!("id=\"f-name-error\">Name {rule}")),
        "{}",
        html(&r)
    );
    let form = format!(
        "token={}&password=partner+password&confirm=partner+password",
        app.invite_token(seed.partner_id, "alice@example.com").await
    );
    let r = PORTAL
        .post(&app, "/partner/invite", None, &form)
        .await
        .expect(303);
    let partner_cookie = PORTAL.session(&r);
    let r = PORTAL
        .post(
            &app,
            "/partner/settings",
            Some(&partner_cookie),
            "name=Alice%0D%0AAdmin&payout_method=&payout_email=",
        )
        .await
        .expect(400);
    assert!(html(&r).contains(&format!("Name {rule}")), "{}", html(&r));

    assert_eq!(app.count("SELECT COUNT(*) FROM workspaces").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM partners").await, 1);
    assert_eq!(app.count("SELECT COUNT(*) FROM users").await, 1);
}
