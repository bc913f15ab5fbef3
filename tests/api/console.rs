//! The owner's dashboard (`/app/`) through the real router: the first run, the session
//! cookie and the way back after sign-in, the role rules (the API's 403s, and no control
//! a role may not use), the same-origin rule of forms, errors beside their field,
//! confirmations of destructive actions, and a payout from creation to paid.

use crate::common::pages::{self, html, location, DASHBOARD, ORIGIN};
use crate::common::*;
use serde_json::json;

const PASSWORD: &str = "owner password";

/// Signs `email` in on the sign-in page; the session cookie's value.
async fn signed_in(app: &TestApp, email: &str) -> String {
    let form = format!(
        "email={}&password={}",
        email.replace('@', "%40"),
        PASSWORD.replace(' ', "+")
    );
    let r = DASHBOARD
        .post(app, "/app/login", None, &form)
        .await
        .expect(303);
    DASHBOARD.session(&r)
}

/// A member of the seed's workspace with `role`, signed in.
async fn member(app: &TestApp, seed: &Seed, email: &str, role: &str) -> String {
    app.member(seed.workspace_id, email, PASSWORD, role).await;
    signed_in(app, email).await
}

/// The forms of a page that post somewhere, but the sign-out.
fn change_forms(body: &str) -> usize {
    body.matches("method=\"post\"").count() - body.matches("action=\"/app/logout\"").count()
}

on_both_backends!(the_first_run_sets_up_the_owner_and_signs_in);
async fn the_first_run_sets_up_the_owner_and_signs_in(app: TestApp) {
    let r = DASHBOARD.get(&app, "/", None).await.expect(303);
    assert_eq!(location(&r), "/app/setup");
    let r = DASHBOARD.get(&app, "/app/setup", None).await.expect(200);
    assert!(html(&r).contains("Set up Reftrack"));
    // The address is prefilled from the request, for the owner to confirm.
    assert!(
        html(&r).contains("name=\"public_url\" type=\"url\" value=\"http://pages.test\""),
        "{}",
        html(&r)
    );
    let r = DASHBOARD.get(&app, "/app", None).await.expect(303);
    assert_eq!(location(&r), "/app/login");

    let good = format!("admin_token={ADMIN_TOKEN}&public_url=https%3A%2F%2Ftrack.acme.example\
                    &workspace_name=Acme&name=Ann+Owner&email=Ann%40Acme.example&password=owner+password\
                    &confirm=owner+password&program_name=Acme+Partners&website=https%3A%2F%2Fshop.acme.example&currency=eur");
    let good = good.as_str();
    // Without the admin token, or with a wrong one, nobody can claim the server; the
    // token typed is never sent back.
    let r = DASHBOARD
        .post(
            &app,
            "/app/setup",
            None,
            &good.replace(&format!("admin_token={ADMIN_TOKEN}"), "admin_token="),
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains("id=\"f-admin_token-error\">Admin token is required"),
        "{}",
        html(&r)
    );
    let r = DASHBOARD
        .post(
            &app,
            "/app/setup",
            None,
            &good.replace(
                &format!("admin_token={ADMIN_TOKEN}"),
                "admin_token=rta_guess_guess_guess_guess",
            ),
        )
        .await
        .expect(403);
    assert!(
        html(&r).contains(
            "id=\"f-admin_token-error\">Admin token is not this server&#39;s admin token"
        ),
        "{}",
        html(&r)
    );
    assert!(!html(&r).contains("rta_guess"), "{}", html(&r));
    assert!(
        html(&r).contains("value=\"Ann@Acme.example\""),
        "the rest stays typed"
    );
    let r = DASHBOARD
        .post(
            &app,
            "/app/setup",
            None,
            &good.replace(
                "public_url=https%3A%2F%2Ftrack.acme.example",
                "public_url=track",
            ),
        )
        .await
        .expect(400);
    assert!(html(&r).contains("id=\"f-public_url-error\">Address of this server must be an http:// or https:// address"), "{}", html(&r));
    assert_eq!(
        app.count("SELECT COUNT(*) FROM users").await,
        0,
        "nothing made"
    );
    let r = DASHBOARD
        .post(
            &app,
            "/app/setup",
            None,
            &good.replace("confirm=owner+password", "confirm=other"),
        )
        .await
        .expect(400);
    assert!(html(&r).contains("id=\"f-confirm-error\">The two passwords are not the same"));
    assert!(
        html(&r).contains("value=\"Acme Partners\""),
        "typed values stay"
    );
    let r = DASHBOARD
        .post(
            &app,
            "/app/setup",
            None,
            &good.replace("Ann%40Acme.example", "ann"),
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains("id=\"f-email-error\">Email must be an email address"),
        "{}",
        html(&r)
    );
    assert!(html(&r).contains("value=\"ann\""));
    let r = DASHBOARD
        .post(
            &app,
            "/app/setup",
            None,
            &good.replace("https%3A%2F%2Fshop.acme.example", "shop"),
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains("id=\"f-website-error\">Your site must be the address of your site"),
        "{}",
        html(&r)
    );
    let r = DASHBOARD
        .post(
            &app,
            "/app/setup",
            None,
            &good.replace("workspace_name=Acme", "workspace_name=+"),
        )
        .await
        .expect(400);
    assert!(html(&r)
        .contains("id=\"f-workspace_name-error\">Company or team must be 1 to 200 characters"));
    let r = DASHBOARD
        .post(
            &app,
            "/app/setup",
            None,
            &good.replace("currency=eur", "currency=euro"),
        )
        .await
        .expect(400);
    assert!(html(&r).contains("id=\"f-currency-error\">Currency must be a 3-letter currency code"));
    // Every field's error at once, each beside its field.
    let all_wrong = "admin_token=&public_url=x&workspace_name=+&name=+&email=ann&password=short&confirm=other&program_name=+&website=shop&currency=dollars";
    let r = DASHBOARD
        .post(&app, "/app/setup", None, all_wrong)
        .await
        .expect(400);
    for field in [
        "admin_token",
        "public_url",
        "workspace_name",
        "name",
        "email",
        "password",
        "confirm",
        "program_name",
        "website",
        "currency",
    ] {
        assert!(
            html(&r).contains(&format!("id=\"f-{field}-error\"")),
            "{field}: {}",
            html(&r)
        );
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM users").await,
        0,
        "nothing half-made"
    );

    // Done: the setup page with the program's token, signed in.
    let r = DASHBOARD
        .post(&app, "/app/setup", None, good)
        .await
        .expect(200);
    let cookie = DASHBOARD.session(&r);
    assert!(cookie.starts_with("rts_"));
    let set = r.headers["set-cookie"].to_str().unwrap();
    for part in ["Path=/app", "HttpOnly", "SameSite=Lax"] {
        assert!(set.contains(part), "{set}");
    }
    let body = html(&r);
    assert!(
        body.contains("Your workspace, account and program are ready"),
        "{body}"
    );
    let token = body
        .split("id=\"api-token\" class=\"share-text\" type=\"text\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    assert!(token.starts_with("rtk_"), "{token}");
    assert!(
        body.contains(&format!("Bearer {token}")),
        "the snippets carry the token"
    );
    assert!(body.contains("data-program-id=&#34;1&#34;"), "{body}");
    assert!(body.contains("Waiting for your first click"));
    assert!(body.contains("https://shop.acme.example"));
    // The confirmed address, not the request's host, is what the tag and links name.
    assert!(
        body.contains("https://track.acme.example/tracker.js"),
        "{body}"
    );
    let r = app
        .admin(
            "POST",
            "/partners",
            Some(json!({"name": "Zoe", "code": "zoe", "email": "zoe@example.com"})),
        )
        .await
        .expect(201);
    let invite = app
        .admin("POST", &format!("/partners/{}/invite", r.body["id"]), None)
        .await
        .expect(201);
    assert!(
        invite.body["invite_url"]
            .as_str()
            .unwrap()
            .starts_with("https://track.acme.example/partner/invite?token="),
        "{}",
        invite.body
    );

    // Once set up: no second first run; `/` is the dashboard.
    let r = DASHBOARD
        .post(&app, "/app/setup", None, &good.replace("Ann%40", "Bob%40"))
        .await
        .expect(409);
    assert!(html(&r).contains("already set up"));
    assert_eq!(app.count("SELECT COUNT(*) FROM users").await, 1);
    let r = DASHBOARD.get(&app, "/", None).await.expect(303);
    assert_eq!(location(&r), "/app");
    let r = DASHBOARD.get(&app, "/app/setup", None).await.expect(303);
    assert_eq!(location(&r), "/app");
    let r = DASHBOARD.get(&app, "/app", Some(&cookie)).await.expect(303);
    assert_eq!(location(&r), "/app/programs/1");
    let r = DASHBOARD
        .get(&app, "/app/programs/1", Some(&cookie))
        .await
        .expect(200);
    assert!(html(&r).contains("Acme Partners") && html(&r).contains("badge-role\">owner"));
    // The token works on the tracking API; the admin token still manages everything.
    let sale = json!({"transaction_id": "t-1", "amount_cents": 100, "customer_key": "nobody", "additional_data": {"test_mode": true}});
    app.post_auth("/api/v1/track/sale", &token, sale)
        .await
        .expect(200);
    let r = app.admin("GET", "/programs/1", None).await.expect(200);
    assert_eq!(r.body["currency"], "eur");
    assert_eq!(
        r.body["allowed_origins"],
        json!(["https://shop.acme.example"])
    );
    let r = app.login("ann@acme.example", PASSWORD).await.expect(200);
    assert!(r.body["token"].as_str().unwrap().starts_with("rts_"));

    // Settings show the address and change it with the admin token.
    let settings = "/app/programs/1/settings";
    let r = DASHBOARD
        .get(&app, settings, Some(&cookie))
        .await
        .expect(200);
    assert!(
        html(&r).contains("name <code>https://track.acme.example</code>: confirmed by an owner"),
        "{}",
        html(&r)
    );
    let address = format!("{settings}/address");
    let r = DASHBOARD
        .post(
            &app,
            &address,
            Some(&cookie),
            "public_url=https%3A%2F%2Fgo.acme.example&admin_token=",
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains("id=\"f-admin_token-error\">Admin token is required"),
        "{}",
        html(&r)
    );
    assert!(
        html(&r).contains("value=\"https://go.acme.example\""),
        "typed values stay"
    );
    let r = DASHBOARD
        .post(
            &app,
            &address,
            Some(&cookie),
            "public_url=https%3A%2F%2Fgo.acme.example&admin_token=rta_guess_guess_guess_guess",
        )
        .await
        .expect(403);
    assert!(
        html(&r).contains("id=\"f-admin_token-error\">Admin token is not this server"),
        "{}",
        html(&r)
    );
    assert!(!html(&r).contains("rta_guess"));
    let r = DASHBOARD
        .post(
            &app,
            &address,
            Some(&cookie),
            &format!("public_url=go.acme.example&admin_token={ADMIN_TOKEN}"),
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains("id=\"f-public_url-error\">Address of this server must be"),
        "{}",
        html(&r)
    );
    let r = DASHBOARD
        .post(
            &app,
            &address,
            Some(&cookie),
            &format!("public_url=https%3A%2F%2Fgo.acme.example%2F&admin_token={ADMIN_TOKEN}"),
        )
        .await
        .expect(303);
    assert_eq!(location(&r), format!("{settings}?done=address#address"));
    let invite = app
        .admin("POST", "/partners/1/invite", None)
        .await
        .expect(201);
    assert!(
        invite.body["invite_url"]
            .as_str()
            .unwrap()
            .starts_with("https://go.acme.example/partner/invite?token="),
        "{}",
        invite.body
    );
    // A viewer may not change it, whatever token it holds.
    app.member(1, "val@acme.example", PASSWORD, "viewer").await;
    let viewer = signed_in(&app, "val@acme.example").await;
    let r = DASHBOARD
        .get(&app, settings, Some(&viewer))
        .await
        .expect(200);
    assert!(!html(&r).contains("/settings/address"));
    DASHBOARD
        .post(
            &app,
            &address,
            Some(&viewer),
            &format!("public_url=https%3A%2F%2Fevil.example&admin_token={ADMIN_TOKEN}"),
        )
        .await
        .expect(403);
    assert!(
        app.admin("POST", "/partners/1/invite", None).await.body["invite_url"]
            .as_str()
            .unwrap()
            .starts_with("https://go.acme.example/")
    );
}

on_both_backends!(pages_need_a_session_and_bring_the_owner_back);
async fn pages_need_a_session_and_bring_the_owner_back(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let partners = format!("/app/programs/{p}/partners?status=pending");
    let r = DASHBOARD.get(&app, &partners, None).await.expect(303);
    assert_eq!(
        location(&r),
        format!("/app/login?next=%2Fapp%2Fprograms%2F{p}%2Fpartners%3Fstatus%3Dpending")
    );
    DASHBOARD
        .get(&app, &partners, Some("rts_unknown"))
        .await
        .expect(303);

    app.member(seed.workspace_id, "owner@example.com", PASSWORD, "owner")
        .await;
    let r = DASHBOARD
        .get(
            &app,
            "/app/login?next=%2Fapp%2Fprograms%2F1%2Fpartners",
            None,
        )
        .await
        .expect(200);
    assert!(html(&r).contains("value=\"/app/programs/1/partners\""));
    let r = DASHBOARD
        .post(
            &app,
            "/app/login",
            None,
            "email=owner%40example.com&password=wrong+one",
        )
        .await
        .expect(401);
    assert!(html(&r).contains("id=\"f-password-error\">Invalid email or password"));
    assert!(html(&r).contains("value=\"owner@example.com\""));
    let form = format!(
        "email=owner%40example.com&password=owner+password&next={}",
        partners
            .replace('/', "%2F")
            .replace('?', "%3F")
            .replace('=', "%3D")
    );
    let r = DASHBOARD
        .post(&app, "/app/login", None, &form)
        .await
        .expect(303);
    assert_eq!(location(&r), partners);
    let cookie = DASHBOARD.session(&r);
    let r = DASHBOARD
        .post(
            &app,
            "/app/login",
            None,
            "email=owner%40example.com&password=owner+password&next=https%3A%2F%2Fevil.example",
        )
        .await
        .expect(303);
    assert_eq!(location(&r), "/app");
    // The page session is an API session too.
    let auth = format!("Bearer {cookie}");
    app.send("GET", "/api/auth/me", None, &[("authorization", &auth)])
        .await
        .expect(200);

    // Every page of the program.
    for tab in [
        "",
        "/setup",
        "/events",
        "/partners",
        "/commissions",
        "/payouts",
        "/settings",
    ] {
        let r = DASHBOARD
            .get(&app, &format!("/app/programs/{p}{tab}"), Some(&cookie))
            .await
            .expect(200);
        assert!(html(&r).contains("<main id=\"main\""), "{tab}");
        let csp = r.headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("default-src 'self'"), "{csp}");
    }

    // A session that ends while a form is open: sign-in, then back to that page.
    reftrack_exec(&app.database_url, "UPDATE sessions SET expires_at = 0").await;
    let r = DASHBOARD
        .get(&app, &format!("/app/programs/{p}/settings"), Some(&cookie))
        .await
        .expect(303);
    assert_eq!(
        location(&r),
        format!("/app/login?next=%2Fapp%2Fprograms%2F{p}%2Fsettings")
    );
    let req = axum::http::Request::post(format!("/app/programs/{p}/settings"))
        .header("host", pages::HOST)
        .header("cookie", format!("rt_session={cookie}"))
        .header("origin", ORIGIN)
        .header(
            "referer",
            format!("{ORIGIN}/app/programs/{p}/settings#members"),
        )
        .header("content-type", "application/x-www-form-urlencoded");
    let r = app
        .raw(req.body(axum::body::Body::from("name=X")).unwrap())
        .await
        .expect(303);
    assert_eq!(
        location(&r),
        format!("/app/login?next=%2Fapp%2Fprograms%2F{p}%2Fsettings")
    );

    // Sign-out ends the session.
    let cookie = signed_in(&app, "owner@example.com").await;
    let r = DASHBOARD
        .post(&app, "/app/logout", Some(&cookie), "")
        .await
        .expect(303);
    assert_eq!(location(&r), "/app/login?signed_out=1");
    assert!(r.headers["set-cookie"]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
    DASHBOARD.get(&app, "/app", Some(&cookie)).await.expect(303);

    // Errors are pages; other paths stay JSON.
    let cookie = signed_in(&app, "owner@example.com").await;
    for path in [
        "/app/programs/999",
        "/app/programs/nope/events",
        "/app/no-such-page",
        &format!("/app/programs/{p}/payouts/999"),
    ] {
        let r = DASHBOARD.get(&app, path, Some(&cookie)).await.expect(404);
        assert!(html(&r).contains("Page not found"), "{path}");
    }
    let r = app.send("GET", "/api/nope", None, &[]).await.expect(404);
    assert_eq!(r.error(), "Not found");
}

on_both_backends!(roles_see_only_what_they_may_use_and_the_server_refuses_the_rest);
async fn roles_see_only_what_they_may_use_and_the_server_refuses_the_rest(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let other = app.seed().await;
    let viewer = member(&app, &seed, "viewer@example.com", "viewer").await;
    let member_cookie = member(&app, &seed, "member@example.com", "member").await;
    let owner = member(&app, &seed, "owner@example.com", "owner").await;

    // A viewer reads every page but the events list, and sees no form but sign-out.
    for tab in [
        "",
        "/setup",
        "/partners",
        &format!("/partners/{}", seed.partner_id),
        "/commissions",
        "/payouts",
        "/settings",
    ] {
        let r = DASHBOARD
            .get(&app, &format!("/app/programs/{p}{tab}"), Some(&viewer))
            .await
            .expect(200);
        assert_eq!(change_forms(html(&r)), 0, "a form on {tab}: {}", html(&r));
        assert!(!html(&r).contains("/events\""), "no events tab");
    }
    let r = DASHBOARD
        .get(&app, &format!("/app/programs/{p}/events"), Some(&viewer))
        .await
        .expect(403);
    assert!(
        html(&r).contains("does not grant tracking:list"),
        "{}",
        html(&r)
    );
    // A member lists events, and changes nothing either.
    DASHBOARD
        .get(
            &app,
            &format!("/app/programs/{p}/events"),
            Some(&member_cookie),
        )
        .await
        .expect(200);
    let r = DASHBOARD
        .get(
            &app,
            &format!("/app/programs/{p}/partners"),
            Some(&member_cookie),
        )
        .await
        .expect(200);
    assert_eq!(change_forms(html(&r)), 0);

    // The server refuses their changes with the API's 403, and nothing changes.
    for cookie in [&viewer, &member_cookie] {
        for (path, form) in [
            (format!("/app/programs/{p}/partners/{}/status", seed.partner_id), "status=banned&confirm=yes".to_string()),
            (format!("/app/programs/{p}/settings"), "name=Mine&cookie_window_days=5&commission_hold_days=0&min_payout_cents=1&commission_type=percentage&commission_percent=50".to_string()),
            (format!("/app/programs/{p}/settings/token"), "confirm=yes".to_string()),
            (format!("/app/programs/{p}/partners"), "name=Eve&code=eve".to_string()),
            (format!("/app/programs/{p}/payouts"), String::new()),
            (format!("/app/programs/{p}/settings/members"), "email=owner%40example.com&role=viewer".to_string()),
        ] {
            let r = DASHBOARD.post(&app, &path, Some(cookie), &form).await.expect(403);
            assert!(html(&r).contains("Not available to you"), "{path}");
        }
    }
    let r = app
        .admin("GET", &format!("/programs/{p}"), None)
        .await
        .expect(200);
    assert_eq!(r.body["name"], "Acme Partners");
    let r = app
        .admin("GET", &format!("/programs/{p}/partners"), None)
        .await
        .expect(200);
    assert_eq!(r.body["data"][0]["status"], "approved");

    // The owner has the forms; another workspace's program is not there at all.
    let r = DASHBOARD
        .get(&app, &format!("/app/programs/{p}/settings"), Some(&owner))
        .await
        .expect(200);
    assert!(change_forms(html(&r)) >= 5, "{}", html(&r));
    for cookie in [&owner, &viewer] {
        let r = DASHBOARD
            .get(
                &app,
                &format!("/app/programs/{}", other.program_id),
                Some(cookie),
            )
            .await
            .expect(404);
        assert!(html(&r).contains("Page not found"));
        DASHBOARD
            .post(
                &app,
                &format!("/app/programs/{}/payouts", other.program_id),
                Some(cookie),
                "",
            )
            .await
            .expect(404);
    }
    // An owner changes a member's role; the viewer then may change things.
    let viewer_id = app
        .count("SELECT id FROM users WHERE email = 'viewer@example.com'")
        .await;
    let r = DASHBOARD
        .post(
            &app,
            &format!("/app/programs/{p}/settings/members/{viewer_id}"),
            Some(&owner),
            "role=admin&status=active",
        )
        .await
        .expect(303);
    assert!(location(&r).contains("done=member-saved"));
    let r = DASHBOARD
        .get(&app, &format!("/app/programs/{p}/partners"), Some(&viewer))
        .await
        .expect(200);
    assert!(change_forms(html(&r)) > 0);
    // The only owner cannot step down.
    let owner_id = app
        .count("SELECT id FROM users WHERE email = 'owner@example.com'")
        .await;
    let r = DASHBOARD
        .post(
            &app,
            &format!("/app/programs/{p}/settings/members/{owner_id}"),
            Some(&owner),
            "role=viewer&status=active",
        )
        .await
        .expect(400);
    assert!(html(&r).contains("only active owner"), "{}", html(&r));
    // Nor be removed; another member can.
    let r = DASHBOARD
        .post(
            &app,
            &format!("/app/programs/{p}/settings/members/{owner_id}/remove"),
            Some(&owner),
            "",
        )
        .await
        .expect(409);
    assert!(html(&r).contains("only active owner"), "{}", html(&r));
    let r = DASHBOARD
        .post(
            &app,
            &format!("/app/programs/{p}/settings/members/{viewer_id}/remove"),
            Some(&owner),
            "",
        )
        .await
        .expect(303);
    assert!(location(&r).contains("done=member-removed"));
    DASHBOARD
        .get(&app, &format!("/app/programs/{p}/partners"), Some(&viewer))
        .await
        .expect(404);
    // Members are added by the email of a user of this server.
    let r = DASHBOARD
        .post(
            &app,
            &format!("/app/programs/{p}/settings/members"),
            Some(&owner),
            "email=nobody%40example.com&role=viewer",
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains("id=\"f-email-error\">Email is not the email of a user of this server"),
        "{}",
        html(&r)
    );
    app.admin(
        "POST",
        "/users",
        Some(json!({"email": "new@example.com", "password": PASSWORD})),
    )
    .await
    .expect(201);
    let r = DASHBOARD
        .post(
            &app,
            &format!("/app/programs/{p}/settings/members"),
            Some(&owner),
            "email=New%40Example.com&role=viewer",
        )
        .await
        .expect(303);
    assert!(location(&r).contains("done=member"));
    let r = DASHBOARD
        .get(&app, &format!("/app/programs/{p}/settings"), Some(&owner))
        .await
        .expect(200);
    assert!(html(&r).contains("new@example.com"));
}

on_both_backends!(cross_site_form_posts_are_refused);
async fn cross_site_form_posts_are_refused(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let owner = member(&app, &seed, "owner@example.com", "owner").await;
    let form = Some("name=Hijacked&cookie_window_days=5&commission_hold_days=0&min_payout_cents=1&commission_type=percentage&commission_percent=90");
    let path = format!("/app/programs/{p}/settings");
    for origin in [Some("https://evil.example"), Some("null"), None] {
        let r = DASHBOARD
            .page(&app, "POST", &path, Some(&owner), form, origin)
            .await
            .expect(403);
        assert!(html(&r).contains("sent from another site"), "{origin:?}");
    }
    DASHBOARD
        .page(
            &app,
            "POST",
            &format!("/app/programs/{p}/settings/token"),
            Some(&owner),
            Some("confirm=yes"),
            Some("https://evil.example"),
        )
        .await
        .expect(403);
    DASHBOARD
        .page(
            &app,
            "POST",
            "/app/logout",
            Some(&owner),
            Some(""),
            Some("https://evil.example"),
        )
        .await
        .expect(403);
    let r = app
        .admin("GET", &format!("/programs/{p}"), None)
        .await
        .expect(200);
    assert_eq!(r.body["name"], "Acme Partners", "nothing changed");
    assert_eq!(r.body["commission"]["percent"], 20.0);
    // From this site it goes through.
    let r = DASHBOARD
        .page(&app, "POST", &path, Some(&owner), form, Some(ORIGIN))
        .await
        .expect(303);
    assert!(location(&r).ends_with("done=settings"));
}

on_both_backends!(forms_keep_what_was_typed_and_say_what_is_wrong_beside_it);
async fn forms_keep_what_was_typed_and_say_what_is_wrong_beside_it(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let owner = member(&app, &seed, "owner@example.com", "owner").await;
    let settings = format!("/app/programs/{p}/settings");
    let base = "name=Renamed&commission_type=percentage&commission_percent=25&commission_amount=&cookie_window_days=30\
                    &commission_hold_days=14&min_payout_cents=25.50&allowed_origins=https%3A%2F%2Fshop.example&applications_open=1&partner_links_allowed=1";
    for (bad, field, text) in [
        ("cookie_window_days=30", "cookie_window_days=0", "id=\"f-cookie_window_days-error\">Cookie window (days) must be an integer from 1 to 3650"),
        ("commission_hold_days=14", "commission_hold_days=soon", "id=\"f-commission_hold_days-error\">Hold period (days) must be a whole number"),
        ("min_payout_cents=25.50", "min_payout_cents=25.505", "id=\"f-min_payout_cents-error\">Minimum payout must be an amount like 50.00"),
        ("commission_percent=25", "commission_percent=250", "id=\"f-commission_percent-error\">Percent of each sale must be between 0 and 100"),
        ("allowed_origins=https%3A%2F%2Fshop.example", "allowed_origins=shop", "id=\"f-allowed_origins-error\">Allowed origins &#34;shop&#34; is not an origin"),
    ] {
        let r = DASHBOARD.post(&app, &settings, Some(&owner), &base.replace(bad, field)).await.expect(400);
        let body = html(&r);
        assert!(body.contains(text), "{field}: {body}");
        assert!(body.contains("value=\"Renamed\""), "{field}: the name typed stays");
    }
    // Every field's error at once, each beside its field, those the form reads and
    // those the service refuses alike.
    let all_wrong = "name=+&commission_type=percentage&commission_percent=250&cookie_window_days=0\
                         &commission_hold_days=soon&min_payout_cents=25.505&allowed_origins=shop&destination_url=nowhere";
    let r = DASHBOARD
        .post(&app, &settings, Some(&owner), all_wrong)
        .await
        .expect(400);
    let body = html(&r);
    for field in [
        "name",
        "commission_percent",
        "cookie_window_days",
        "commission_hold_days",
        "min_payout_cents",
        "allowed_origins",
        "destination_url",
    ] {
        assert!(
            body.contains(&format!("id=\"f-{field}-error\"")),
            "{field}: {body}"
        );
    }
    assert!(
        body.contains(
            "id=\"f-commission_hold_days-error\">Hold period (days) must be a whole number"
        ),
        "{body}"
    );
    assert!(body.contains("id=\"f-cookie_window_days-error\">Cookie window (days) must be an integer from 1 to 3650"), "{body}");
    let r = DASHBOARD
        .post(&app, &settings, Some(&owner), base)
        .await
        .expect(303);
    assert!(location(&r).ends_with("done=settings"));
    let r = app
        .admin("GET", &format!("/programs/{p}"), None)
        .await
        .expect(200);
    assert_eq!(r.body["name"], "Renamed");
    assert_eq!(r.body["min_payout_cents"], 2550);
    assert_eq!(r.body["commission_hold_days"], 14);
    assert_eq!(r.body["applications_open"], true);
    assert_eq!(
        r.body["commission"],
        json!({"type": "percentage", "percent": 25.0})
    );
    let r = DASHBOARD
        .post(
            &app,
            &settings,
            Some(&owner),
            &base
                .replace("commission_type=percentage", "commission_type=flat")
                .replace("commission_amount=", "commission_amount=4.50"),
        )
        .await
        .expect(303);
    assert!(location(&r).ends_with("done=settings"));
    let r = app
        .admin("GET", &format!("/programs/{p}"), None)
        .await
        .expect(200);
    assert_eq!(
        r.body["commission"],
        json!({"type": "flat", "amount_cents": 450})
    );

    // A new partner: a taken code beside the code field.
    let partners = format!("/app/programs/{p}/partners");
    let r = DASHBOARD
        .post(
            &app,
            &partners,
            Some(&owner),
            &format!(
                "name=Bob&email=bob%40example.com&code={}&with_link=1",
                seed.short_link
            ),
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains("id=\"f-code-error\">A partner with this code already exists"),
        "{}",
        html(&r)
    );
    assert!(html(&r).contains("value=\"bob@example.com\""));
    // Every wrong field at once, each beside its field.
    let r = DASHBOARD
        .post(
            &app,
            &partners,
            Some(&owner),
            "name=+&email=bob&code=two+words",
        )
        .await
        .expect(400);
    let body = html(&r);
    for id in ["f-name-error", "f-email-error", "f-code-error"] {
        assert!(body.contains(&format!("id=\"{id}\"")), "{id}: {body}");
    }
    let r = DASHBOARD
        .post(
            &app,
            &partners,
            Some(&owner),
            "name=Bob&email=bob%40example.com&code=bob-1&with_link=1&with_invite=1",
        )
        .await
        .expect(200);
    let body = html(&r);
    assert!(body.contains("/partner/invite?token=rti_"), "{body}");
    assert!(
        body.contains("https://shop.example/?aff=bob-1"),
        "the first link, on the program's site: {body}"
    );
    // A link of the partner, taken.
    let bob = app
        .count("SELECT id FROM partners WHERE code = 'bob-1'")
        .await;
    let r = DASHBOARD
        .post(
            &app,
            &format!("{partners}/{bob}/links"),
            Some(&owner),
            "short_link=bob-1",
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains("id=\"f-short_link-error\">A link with this short link already exists"),
        "{}",
        html(&r)
    );
    let r = DASHBOARD
        .post(
            &app,
            &format!("{partners}/{bob}/links"),
            Some(&owner),
            "short_link=bob-spring",
        )
        .await
        .expect(303);
    assert!(location(&r).ends_with("done=link"));
    // Archived, then active again.
    let link = app
        .count("SELECT id FROM referral_links WHERE short_link = 'bob-spring'")
        .await;
    let r = DASHBOARD
        .post(
            &app,
            &format!("/app/programs/{p}/links/{link}/status"),
            Some(&owner),
            &format!("status=inactive&back=%2Fapp%2Fprograms%2F{p}%2Fpartners%2F{bob}"),
        )
        .await
        .expect(303);
    assert_eq!(
        location(&r),
        format!("/app/programs/{p}/partners/{bob}?done=link-status")
    );
    let r = app
        .admin("GET", &format!("/links/{link}"), None)
        .await
        .expect(200);
    assert_eq!(r.body["status"], "inactive");
    // Payout details, with an error beside the email.
    let r = DASHBOARD
        .post(
            &app,
            &format!("{partners}/{bob}"),
            Some(&owner),
            "name=Bob&email=bob%40example.com&payout_method=paypal&payout_email=nope",
        )
        .await
        .expect(400);
    assert!(html(&r).contains("id=\"f-payout_email-error\">Payout email must be an email address"));
    assert!(html(&r).contains("value=\"paypal\" selected"));
    let r = DASHBOARD
        .post(
            &app,
            &format!("{partners}/{bob}"),
            Some(&owner),
            "name=+&email=bob&payout_method=paypal&payout_email=nope",
        )
        .await
        .expect(400);
    let body = html(&r);
    for id in ["f-name-error", "f-email-error", "f-payout_email-error"] {
        assert!(body.contains(&format!("id=\"{id}\"")), "{id}: {body}");
    }

    // Events: a date that is not one.
    let r = DASHBOARD
        .get(
            &app,
            &format!("/app/programs/{p}/events?from=2026-02-31"),
            Some(&owner),
        )
        .await
        .expect(200);
    assert!(html(&r).contains("id=\"f-from-error\">Enter a date like 2026-03-01"));
    // Commissions: a filter that is not one.
    let r = DASHBOARD
        .get(
            &app,
            &format!("/app/programs/{p}/commissions?from=yesterday"),
            Some(&owner),
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains("From must be a date (YYYY-MM-DD)"),
        "{}",
        html(&r)
    );
}

on_both_backends!(destructive_actions_ask_first);
async fn destructive_actions_ask_first(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let owner = member(&app, &seed, "owner@example.com", "owner").await;
    let status = format!("/app/programs/{p}/partners/{}/status", seed.partner_id);
    let r = DASHBOARD
        .post(&app, &status, Some(&owner), "status=banned")
        .await
        .expect(200);
    assert!(html(&r).contains("Ban Alice?") && html(&r).contains("name=\"confirm\" value=\"yes\""));
    let r = app
        .admin("GET", &format!("/programs/{p}/partners"), None)
        .await
        .expect(200);
    assert_eq!(r.body["data"][0]["status"], "approved", "not banned yet");
    let r = DASHBOARD
        .post(
            &app,
            &status,
            Some(&owner),
            &format!("status=banned&confirm=yes&back=%2Fapp%2Fprograms%2F{p}%2Fpartners"),
        )
        .await
        .expect(303);
    assert_eq!(
        location(&r),
        format!("/app/programs/{p}/partners?done=status")
    );
    let r = app
        .admin("GET", &format!("/programs/{p}/partners"), None)
        .await
        .expect(200);
    assert_eq!(r.body["data"][0]["status"], "banned");
    let page = format!("/app/programs/{p}/partners/{}", seed.partner_id);
    let without = "its sales are recorded and counted, without commission";
    assert!(html(&DASHBOARD.get(&app, &page, Some(&owner)).await.expect(200)).contains(without));
    // Approving needs no confirmation.
    DASHBOARD
        .post(&app, &status, Some(&owner), "status=approved")
        .await
        .expect(303);
    assert!(!html(&DASHBOARD.get(&app, &page, Some(&owner)).await.expect(200)).contains(without));

    let rotate = format!("/app/programs/{p}/settings/token");
    let r = DASHBOARD
        .post(&app, &rotate, Some(&owner), "")
        .await
        .expect(200);
    assert!(html(&r).contains("Rotate the API token?"));
    let sale = |n: u32| json!({"transaction_id": format!("tx-{n}"), "amount_cents": 100, "customer_key": "k", "additional_data": {"test_mode": true}});
    app.post_auth("/api/v1/track/sale", &seed.api_token, sale(1))
        .await
        .expect(200);
    let r = DASHBOARD
        .post(&app, &rotate, Some(&owner), "confirm=yes")
        .await
        .expect(200);
    let body = html(&r);
    assert!(body.contains("The API token is rotated"), "{body}");
    let token = body
        .split("id=\"api-token\" class=\"share-text\" type=\"text\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    assert_ne!(token, seed.api_token);
    app.post_auth("/api/v1/track/sale", &seed.api_token, sale(2))
        .await
        .expect(401);
    app.post_auth("/api/v1/track/sale", &token, sale(3))
        .await
        .expect(200);

    // A rotation that keeps the old token working for a day says so, and so do the
    // settings until then.
    let r = DASHBOARD
        .post(&app, &rotate, Some(&owner), "keep_old_for_hours=24")
        .await
        .expect(200);
    let body = html(&r);
    assert!(
        body.contains("the current one keeps working for 24 hours")
            && body.contains("name=\"keep_old_for_hours\" value=\"24\""),
        "{body}"
    );
    let r = DASHBOARD
        .post(
            &app,
            &rotate,
            Some(&owner),
            "keep_old_for_hours=24&confirm=yes",
        )
        .await
        .expect(200);
    let body = html(&r);
    assert!(
        body.contains("the old one keeps working for the time you chose"),
        "{body}"
    );
    let newest = body
        .split("id=\"api-token\" class=\"share-text\" type=\"text\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    app.post_auth("/api/v1/track/sale", &token, sale(4))
        .await
        .expect(200);
    app.post_auth("/api/v1/track/sale", &newest, sale(5))
        .await
        .expect(200);
    let r = DASHBOARD
        .get(&app, &format!("/app/programs/{p}/settings"), Some(&owner))
        .await
        .expect(200);
    let settings = html(&r);
    assert!(
        settings.contains("id=\"previous-token\"") && settings.contains("keeps working until"),
        "{settings}"
    );
    DASHBOARD
        .post(
            &app,
            &rotate,
            Some(&owner),
            "keep_old_for_hours=soon&confirm=yes",
        )
        .await
        .expect(400);
}

on_both_backends!(a_sale_shows_on_every_page_and_is_paid_out);
async fn a_sale_shows_on_every_page_and_is_paid_out(app: TestApp) {
    let seed = app.seed_with(json!({"commission_hold_days": 0, "commission": {"type": "percentage", "percent": 30}, "min_payout_cents": 100})).await;
    let p = seed.program_id;
    let owner = member(&app, &seed, "owner@example.com", "owner").await;
    let click_id = app.lead(&seed, "cust-1").await;
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": "txn-1", "amount_cents": 5000, "click_id": click_id}),
    )
    .await
    .expect(200);
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": "txn-2", "amount_cents": 2000, "click_id": click_id}),
    )
    .await
    .expect(200);

    let r = DASHBOARD
        .get(&app, &format!("/app/programs/{p}"), Some(&owner))
        .await
        .expect(200);
    let body = html(&r);
    for (label, total) in [
        ("Clicks", "1"),
        ("Leads", "1"),
        ("Sales", "2"),
        ("Revenue", "$70.00"),
        ("Commissions", "$21.00"),
    ] {
        let caption = format!(
            "<span class=\"chart-label\">{label}</span> <span class=\"chart-total\">{total}</span>"
        );
        assert!(body.contains(&caption), "{caption}: {body}");
    }
    assert!(
        body.contains(&format!(
            "href=\"/app/programs/{p}/partners/{}\">Alice</a>",
            seed.partner_id
        )),
        "top partners"
    );
    let r = DASHBOARD
        .get(&app, &format!("/app/programs/{p}?mode=test"), Some(&owner))
        .await
        .expect(200);
    assert!(html(&r).contains("Test mode"));
    let r = DASHBOARD
        .get(&app, &format!("/app/programs/{p}/events"), Some(&owner))
        .await
        .expect(200);
    let body = html(&r);
    assert!(
        body.contains("4 events") && body.contains("txn-1") && body.contains("cust-1"),
        "{body}"
    );
    let credited = format!(
        "<td data-label=\"Partner\"><a href=\"/app/programs/{p}/partners/{}\">Alice</a></td>",
        seed.partner_id
    );
    assert_eq!(
        body.matches(&credited).count(),
        4,
        "the click, the lead and both sales name their partner: {body}"
    );
    let r = DASHBOARD
        .get(
            &app,
            &format!("/app/programs/{p}/events?type=conversion"),
            Some(&owner),
        )
        .await
        .expect(200);
    assert!(html(&r).contains("2 events") && !html(&r).contains("cust-1"));
    let r = DASHBOARD
        .get(&app, &format!("/app/programs/{p}/setup"), Some(&owner))
        .await
        .expect(200);
    let body = html(&r);
    assert!(
        body.contains("class=\"step done\" data-step=\"pageview\"")
            && body.contains("class=\"step done\" data-step=\"sales\""),
        "{body}"
    );
    assert!(!body.contains("data-refresh="), "nothing to wait for");
    assert!(body.contains("Bearer YOUR_API_TOKEN"));

    // Commissions: reject one with a reason (an empty one is refused beside the row).
    let commissions = format!("/app/programs/{p}/commissions");
    let r = DASHBOARD
        .get(&app, &commissions, Some(&owner))
        .await
        .expect(200);
    assert!(html(&r).contains("$15.00") && html(&r).contains("$6.00"));
    let second = app
        .count("SELECT id FROM commissions WHERE amount_cents = 600")
        .await;
    let r = DASHBOARD
        .post(
            &app,
            &format!("{commissions}/{second}/reject"),
            Some(&owner),
            "reason=+",
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains(&format!(
            "id=\"reason-{second}-error\">Reason must be 1 to 500 characters"
        )),
        "{}",
        html(&r)
    );
    let r = DASHBOARD
        .post(
            &app,
            &format!("{commissions}/{second}/reject"),
            Some(&owner),
            "reason=Test+order",
        )
        .await
        .expect(303);
    assert!(location(&r).ends_with("done=rejected"));
    let r = DASHBOARD
        .get(
            &app,
            &format!("{commissions}?status=rejected"),
            Some(&owner),
        )
        .await
        .expect(200);
    assert!(html(&r).contains("Test order"));
    let r = DASHBOARD
        .get(
            &app,
            &format!("{commissions}.csv?status=rejected"),
            Some(&owner),
        )
        .await
        .expect(200);
    crate::common::assert_download(&r);
    assert!(
        r.body.as_str().unwrap().contains("Test order"),
        "{}",
        r.body
    );

    // Another program's commission is not this program's.
    DASHBOARD
        .post(
            &app,
            &format!("/app/programs/{p}/commissions/999999/approve"),
            Some(&owner),
            "",
        )
        .await
        .expect(404);

    // A payout: none qualifies without a payout email; then one.
    // The balances say who the next payout leaves out and why.
    let payouts = format!("/app/programs/{p}/payouts");
    let r = DASHBOARD
        .get(&app, &payouts, Some(&owner))
        .await
        .expect(200);
    assert!(html(&r).contains("<td data-label=\"Next payout\"><span class=\"left-out\">Left out: no payout email</span></td>"), "{}", html(&r));
    let r = DASHBOARD
        .post(&app, &payouts, Some(&owner), "")
        .await
        .expect(409);
    let body = html(&r);
    assert!(body.contains("No partner qualifies for a payout yet. A payout pays approved partners with a payout email whose due balance reaches the $1.00 minimum"), "{body}");
    assert!(body.contains("Left out: no payout email"), "{body}");
    assert!(
        !body.contains("min_payout_cents"),
        "no field names on a page: {body}"
    );
    // The API's text stays as integrators read it.
    let r = app
        .admin("POST", &format!("/programs/{p}/payouts"), None)
        .await
        .expect(409);
    assert!(
        r.body["error"]
            .as_str()
            .unwrap()
            .contains("(min_payout_cents 100)"),
        "{}",
        r.body
    );
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"payout_method": "paypal", "payout_email": "pay@alice.example"})),
    )
    .await
    .expect(200);
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"min_payout_cents": 2000})),
    )
    .await
    .expect(200);
    let r = DASHBOARD
        .get(&app, &payouts, Some(&owner))
        .await
        .expect(200);
    assert!(
        html(&r).contains("Left out: below the $20.00 minimum"),
        "{}",
        html(&r)
    );
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"min_payout_cents": 100})),
    )
    .await
    .expect(200);
    let r = DASHBOARD
        .get(&app, &payouts, Some(&owner))
        .await
        .expect(200);
    assert!(!html(&r).contains("Left out:"), "{}", html(&r));
    let r = DASHBOARD
        .post(&app, &payouts, Some(&owner), "")
        .await
        .expect(303);
    let payout = location(&r).to_string();
    assert!(payout.ends_with("?done=payout"), "{payout}");
    let r = DASHBOARD.get(&app, &payout, Some(&owner)).await.expect(200);
    assert!(html(&r).contains("pay@alice.example") && html(&r).contains("$15.00"));
    let file = payout.split('?').next().unwrap().to_string();
    let r = DASHBOARD
        .get(&app, &format!("{file}/export?format=paypal"), Some(&owner))
        .await
        .expect(200);
    crate::common::assert_download(&r);
    assert!(
        r.body
            .as_str()
            .unwrap()
            .starts_with("pay@alice.example,15.00,USD,"),
        "{}",
        r.body
    );
    let r = DASHBOARD
        .get(&app, &format!("{file}/export?format=bitcoin"), Some(&owner))
        .await
        .expect(400);
    assert!(html(&r).contains("format must be"));
    let r = DASHBOARD
        .post(&app, &format!("{file}/cancel"), Some(&owner), "")
        .await
        .expect(200);
    assert!(html(&r).contains("Cancel payout"));
    let long = "x".repeat(300);
    let r = DASHBOARD
        .post(
            &app,
            &format!("{file}/paid"),
            Some(&owner),
            &format!("reference={long}"),
        )
        .await
        .expect(400);
    assert!(html(&r).contains("id=\"f-reference-error\">Reference must be at most 255 characters"));
    let r = DASHBOARD
        .post(
            &app,
            &format!("{file}/paid"),
            Some(&owner),
            "reference=PP-123",
        )
        .await
        .expect(303);
    assert!(location(&r).ends_with("done=paid"));
    let r = DASHBOARD.get(&app, &file, Some(&owner)).await.expect(200);
    assert!(html(&r).contains("badge-paid") && html(&r).contains("PP-123"));
    let r = DASHBOARD
        .post(&app, &format!("{file}/cancel"), Some(&owner), "confirm=yes")
        .await
        .expect(409);
    assert!(html(&r).contains("paid"));
    let r = DASHBOARD
        .get(&app, &payouts, Some(&owner))
        .await
        .expect(200);
    let id = file.rsplit('/').next().unwrap();
    assert!(html(&r).contains(&format!("Payout {id}</a>")) && html(&r).contains("$15.00"));
}

/// A public address no test sends to (no worker runs where it is used).
const PUBLIC_HOOK: &str = "https://93.184.216.34/hooks/reftrack";

/// A form value, urlencoded.
fn enc(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// The value of the input `id` of a page.
fn input_value(body: &str, id: &str) -> Option<String> {
    let at = body.find(&format!("id=\"{id}\""))?;
    let rest = &body[at..];
    let value = rest.split("value=\"").nth(1)?;
    Some(value.split('"').next()?.to_string())
}

on_both_backends!(webhook_endpoints_are_added_changed_and_deleted_in_the_settings);
async fn webhook_endpoints_are_added_changed_and_deleted_in_the_settings(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let owner = member(&app, &seed, "owner@example.com", "owner").await;
    let webhooks = format!("/app/programs/{p}/settings/webhooks");
    let r = DASHBOARD
        .get(&app, &format!("/app/programs/{p}/settings"), Some(&owner))
        .await
        .expect(200);
    assert!(
        html(&r).contains(&format!("href=\"{webhooks}\">Manage webhooks")),
        "{}",
        html(&r)
    );
    let r = DASHBOARD
        .get(&app, &webhooks, Some(&owner))
        .await
        .expect(200);
    assert!(html(&r).contains("No endpoints yet") && html(&r).contains("Add endpoint"));
    assert_eq!(
        html(&r)
            .matches("type=\"checkbox\" name=\"events\"")
            .count(),
        10,
        "every event type"
    );

    // Refused: beside the field, what was typed kept, nothing stored.
    for (url, events, id, text) in [
        (
            "not a url",
            "&events=sale.created",
            "f-url-error",
            "Endpoint URL must be an http:// or https:// URL with a host",
        ),
        (
            "http://127.0.0.1:9/hook",
            "&events=sale.created",
            "f-url-error",
            "Endpoint URL must not point to a loopback, private or link-local address (127.0.0.1)",
        ),
        (
            "http://10.1.2.3/hook",
            "&events=sale.created",
            "f-url-error",
            "REFTRACK_WEBHOOK_ALLOW_PRIVATE=1",
        ),
        (
            PUBLIC_HOOK,
            "",
            "f-events-error",
            "Events must list at least one event type",
        ),
        (
            PUBLIC_HOOK,
            "&events=sale.made",
            "f-events-error",
            "Events include an unknown event type &#34;sale.made&#34;",
        ),
    ] {
        let form = format!("url={}{events}", enc(url));
        let r = DASHBOARD
            .post(&app, &webhooks, Some(&owner), &form)
            .await
            .expect(400);
        let body = html(&r);
        let error = body
            .split(&format!("id=\"{id}\">"))
            .nth(1)
            .unwrap_or_else(|| panic!("{url}{events}: {body}"));
        assert!(
            error.split("</p>").next().unwrap().contains(text),
            "{url}{events}: {body}"
        );
        assert_eq!(
            input_value(body, "f-url").as_deref(),
            Some(url.replace('&', "&amp;").as_str()),
            "typed URL kept"
        );
        assert_eq!(
            body.contains("value=\"sale.created\" checked"),
            events.contains("sale.created"),
            "{events}"
        );
    }
    // A bad URL and no event type: both at once, each beside its field.
    let r = DASHBOARD
        .post(&app, &webhooks, Some(&owner), "url=not+a+url")
        .await
        .expect(400);
    let body = html(&r);
    assert!(
        body.contains(
            "id=\"f-url-error\">Endpoint URL must be an http:// or https:// URL with a host"
        ),
        "{body}"
    );
    assert!(
        body.contains("id=\"f-events-error\">Events must list at least one event type"),
        "{body}"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM webhook_endpoints").await,
        0,
        "nothing stored"
    );

    // Added: the secret shown once, on the answer only.
    let form = format!(
        "url={}&events=sale.created&events=lead.created",
        enc(PUBLIC_HOOK)
    );
    let r = DASHBOARD
        .post(&app, &webhooks, Some(&owner), &form)
        .await
        .expect(200);
    let body = html(&r);
    let secret = input_value(body, "webhook-secret").unwrap();
    assert!(
        secret.starts_with("whsec_") && secret.len() == 38,
        "{secret}"
    );
    assert!(
        body.contains("It will not be shown again")
            && body.contains("data-copy=\"webhook-secret\""),
        "{body}"
    );
    assert!(body.contains(PUBLIC_HOOK));
    let r = DASHBOARD
        .get(&app, &webhooks, Some(&owner))
        .await
        .expect(200);
    let body = html(&r);
    assert!(
        !body.contains("whsec_") && !body.contains("webhook-secret"),
        "the secret is not shown again: {body}"
    );
    assert!(
        body.contains(PUBLIC_HOOK) && body.contains("badge-enabled\">enabled"),
        "{body}"
    );
    assert!(
        body.contains("<li class=\"mono\">lead.created</li><li class=\"mono\">sale.created</li>"),
        "{body}"
    );
    let listed = app
        .admin("GET", &format!("/programs/{p}/webhooks"), None)
        .await
        .expect(200);
    let id = listed.body["data"][0]["id"].as_i64().unwrap();
    assert_eq!(
        listed.body["data"][0]["events"],
        json!(["lead.created", "sale.created"])
    );

    // Its page: the form shows it; a refused change leaves it as it was.
    let endpoint = format!("{webhooks}/{id}");
    let r = DASHBOARD
        .get(&app, &endpoint, Some(&owner))
        .await
        .expect(200);
    let body = html(&r);
    assert_eq!(input_value(body, "f-url").as_deref(), Some(PUBLIC_HOOK));
    assert!(
        body.contains("value=\"lead.created\" checked")
            && body.contains("value=\"sale.created\" checked")
            && !body.contains("value=\"payout.paid\" checked")
    );
    let r = DASHBOARD
        .post(
            &app,
            &endpoint,
            Some(&owner),
            "url=ftp%3A%2F%2Fx&events=payout.paid",
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains(
            "id=\"f-url-error\">Endpoint URL must be an http:// or https:// URL with a host"
        ),
        "{}",
        html(&r)
    );
    assert_eq!(input_value(html(&r), "f-url").as_deref(), Some("ftp://x"));
    assert!(
        html(&r).contains("value=\"payout.paid\" checked")
            && !html(&r).contains("value=\"sale.created\" checked")
    );
    let r = DASHBOARD
        .post(
            &app,
            &endpoint,
            Some(&owner),
            &format!("url={}", enc(PUBLIC_HOOK)),
        )
        .await
        .expect(400);
    assert!(html(&r).contains("id=\"f-events-error\">Events must list at least one event type"));
    let e = app
        .admin("GET", &format!("/programs/{p}/webhooks"), None)
        .await
        .expect(200);
    assert_eq!(
        e.body["data"][0]["events"],
        json!(["lead.created", "sale.created"]),
        "unchanged"
    );
    let r = DASHBOARD
        .post(
            &app,
            &endpoint,
            Some(&owner),
            "url=https%3A%2F%2F93.184.216.35%2Fother&events=payout.paid&events=payout.created",
        )
        .await
        .expect(303);
    assert_eq!(location(&r), format!("{endpoint}?done=webhook-saved"));
    let e = app
        .admin("GET", &format!("/programs/{p}/webhooks"), None)
        .await
        .expect(200);
    assert_eq!(e.body["data"][0]["url"], "https://93.184.216.35/other");
    assert_eq!(
        e.body["data"][0]["events"],
        json!(["payout.created", "payout.paid"])
    );
    let r = DASHBOARD
        .get(&app, location(&r), Some(&owner))
        .await
        .expect(200);
    assert!(html(&r).contains("The endpoint is saved."));

    // Disabled and enabled again.
    let r = DASHBOARD
        .post(
            &app,
            &format!("{endpoint}/enabled"),
            Some(&owner),
            "enabled=false",
        )
        .await
        .expect(303);
    assert_eq!(location(&r), format!("{endpoint}?done=webhook-disabled"));
    let e = app
        .admin("GET", &format!("/programs/{p}/webhooks"), None)
        .await
        .expect(200);
    assert_eq!(e.body["data"][0]["enabled"], false);
    let r = DASHBOARD
        .get(&app, &webhooks, Some(&owner))
        .await
        .expect(200);
    assert!(
        html(&r).contains("badge-disabled\">disabled")
            && html(&r).contains("Disabled by an owner or admin."),
        "{}",
        html(&r)
    );
    let r = DASHBOARD
        .get(&app, &endpoint, Some(&owner))
        .await
        .expect(200);
    assert!(html(&r).contains("name=\"enabled\" value=\"true\""));
    DASHBOARD
        .post(
            &app,
            &format!("{endpoint}/enabled"),
            Some(&owner),
            "enabled=maybe",
        )
        .await
        .expect(400);
    DASHBOARD
        .post(
            &app,
            &format!("{endpoint}/enabled"),
            Some(&owner),
            "enabled=true",
        )
        .await
        .expect(303);
    let e = app
        .admin("GET", &format!("/programs/{p}/webhooks"), None)
        .await
        .expect(200);
    assert_eq!(e.body["data"][0]["enabled"], true);

    // Another program's endpoint is not this program's.
    let other = app.seed().await;
    let r = app
        .admin(
            "POST",
            &format!("/programs/{}/webhooks", other.program_id),
            Some(json!({"url": PUBLIC_HOOK, "events": ["sale.created"]})),
        )
        .await
        .expect(201);
    let foreign = r.body["id"].as_i64().unwrap();
    for path in [
        format!("{webhooks}/{foreign}"),
        format!("{webhooks}/{foreign}/deliveries"),
        format!("{webhooks}/nope"),
    ] {
        DASHBOARD.get(&app, &path, Some(&owner)).await.expect(404);
    }
    DASHBOARD
        .post(
            &app,
            &format!("{webhooks}/{foreign}/delete"),
            Some(&owner),
            "confirm=yes",
        )
        .await
        .expect(404);
    DASHBOARD
        .post(
            &app,
            &format!("{webhooks}/{foreign}/enabled"),
            Some(&owner),
            "enabled=false",
        )
        .await
        .expect(404);
    let r = app
        .admin(
            "GET",
            &format!("/programs/{}/webhooks", other.program_id),
            None,
        )
        .await
        .expect(200);
    assert_eq!(r.body["data"][0]["enabled"], true);

    // A form of another site is refused, and adds nothing.
    let form = format!("url={}&events=sale.created", enc(PUBLIC_HOOK));
    let r = DASHBOARD
        .page(
            &app,
            "POST",
            &webhooks,
            Some(&owner),
            Some(&form),
            Some("https://evil.example"),
        )
        .await
        .expect(403);
    assert!(html(&r).contains("sent from another site"));
    DASHBOARD
        .page(
            &app,
            "POST",
            &format!("{endpoint}/delete"),
            Some(&owner),
            Some("confirm=yes"),
            Some("https://evil.example"),
        )
        .await
        .expect(403);
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM webhook_endpoints WHERE program_id = {p}"
        ))
        .await,
        1
    );

    // Deleting asks first.
    let r = DASHBOARD
        .post(&app, &format!("{endpoint}/delete"), Some(&owner), "")
        .await
        .expect(200);
    assert!(
        html(&r).contains("Delete this endpoint?")
            && html(&r).contains("name=\"confirm\" value=\"yes\""),
        "{}",
        html(&r)
    );
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM webhook_endpoints WHERE program_id = {p}"
        ))
        .await,
        1,
        "not yet"
    );
    let r = DASHBOARD
        .post(
            &app,
            &format!("{endpoint}/delete"),
            Some(&owner),
            "confirm=yes",
        )
        .await
        .expect(303);
    assert_eq!(location(&r), format!("{webhooks}?done=webhook-deleted"));
    let r = DASHBOARD
        .get(&app, location(&r), Some(&owner))
        .await
        .expect(200);
    assert!(html(&r).contains("The endpoint is deleted") && html(&r).contains("No endpoints yet"));
    DASHBOARD
        .get(&app, &endpoint, Some(&owner))
        .await
        .expect(404);
}

on_both_backends!(a_sale_s_delivery_is_listed_and_sent_again_by_hand);
async fn a_sale_s_delivery_is_listed_and_sent_again_by_hand(app: TestApp) {
    use crate::common::receiver::{Answer, Receiver};
    use reftrack::app::webhooks::worker::Worker;
    use reftrack::domain::time::{iso, Clock, ManualClock};
    use std::sync::Arc;

    let clock = Arc::new(ManualClock::default());
    let app = app.with_private_webhooks(clock.clone());
    let seed = app.seed().await;
    let p = seed.program_id;
    let owner = member(&app, &seed, "owner@example.com", "owner").await;
    let rx = Receiver::start(Answer::Fail).await;
    let webhooks = format!("/app/programs/{p}/settings/webhooks");
    let form = format!(
        "url={}&events=sale.created&events=lead.created",
        enc(&rx.url)
    );
    let r = DASHBOARD
        .post(&app, &webhooks, Some(&owner), &form)
        .await
        .expect(200);
    rx.set_secret(&input_value(html(&r), "webhook-secret").unwrap());
    let id = app
        .count(&format!(
            "SELECT id FROM webhook_endpoints WHERE program_id = {p}"
        ))
        .await;
    let deliveries = format!("{webhooks}/{id}/deliveries");
    let r = DASHBOARD
        .get(&app, &deliveries, Some(&owner))
        .await
        .expect(200);
    assert!(html(&r).contains("No deliveries yet"));

    // A sale: its message, tried once and refused by the receiver.
    let click_id = app.click(&seed.short_link).await;
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": "txn-1", "amount_cents": 5000, "click_id": click_id}),
    )
    .await
    .expect(200);
    let worker = Worker::new(app.state.app.clone());
    assert_eq!(worker.run_once().await.unwrap(), 1);
    assert_eq!(
        rx.received().len(),
        1,
        "signed with the secret the page showed: {:?}",
        rx.bad()
    );
    let api = app
        .admin("GET", &format!("/webhooks/{id}/deliveries"), None)
        .await
        .expect(200);
    let d = api.body["data"][0].clone();
    let delivery = d["id"].as_i64().unwrap();
    let message = d["message_id"].as_str().unwrap().to_string();
    let r = DASHBOARD
        .get(&app, &deliveries, Some(&owner))
        .await
        .expect(200);
    let body = html(&r);
    let row = body
        .split(&format!("data-delivery=\"{delivery}\""))
        .nth(1)
        .unwrap()
        .split("</tr>")
        .next()
        .unwrap();
    for part in [
        "sale.created",
        &message,
        "badge-pending\">pending",
        "HTTP 500",
        &format!("datetime=\"{}\"", iso(clock.now_ms() + 5_000)),
        "Retry",
    ] {
        assert!(row.contains(part), "{part}: {row}");
    }
    assert!(
        row.contains(&format!(
            "datetime=\"{}\" data-show=\"minute\"",
            d["attempts"][0]["at"].as_str().unwrap()
        )),
        "{row}"
    );

    // Retry: due now, sent again with the same message id, delivered.
    rx.set_answer(Answer::Ok);
    let retry = format!("{deliveries}/{delivery}/retry");
    let r = DASHBOARD
        .post(
            &app,
            &retry,
            Some(&owner),
            &format!("back={}", enc(&deliveries)),
        )
        .await
        .expect(303);
    assert_eq!(location(&r), format!("{deliveries}?done=retry"));
    let r = DASHBOARD
        .get(&app, location(&r), Some(&owner))
        .await
        .expect(200);
    assert!(html(&r).contains("The delivery is due now"));
    assert!(
        html(&r).contains(&format!("datetime=\"{}\"", iso(clock.now_ms()))),
        "due now"
    );
    assert_eq!(worker.run_once().await.unwrap(), 1);
    assert_eq!(rx.received().len(), 2);
    assert_eq!(rx.received()[1].id, message);
    let r = DASHBOARD
        .get(&app, &deliveries, Some(&owner))
        .await
        .expect(200);
    let body = html(&r);
    assert!(
        body.contains("badge-delivered\">delivered") && body.contains("HTTP 200"),
        "{body}"
    );
    // A delivery of another endpoint is not found here.
    DASHBOARD
        .post(
            &app,
            &format!("{deliveries}/999999/retry"),
            Some(&owner),
            "",
        )
        .await
        .expect(404);

    // The endpoint's page sends a test message, listed on its deliveries.
    let page = format!("{webhooks}/{id}");
    assert!(
        html(&DASHBOARD.get(&app, &page, Some(&owner)).await.expect(200))
            .contains(">Send a test message</button>")
    );
    let r = DASHBOARD
        .post(&app, &format!("{page}/test"), Some(&owner), "")
        .await
        .expect(303);
    assert_eq!(location(&r), format!("{deliveries}?done=webhook-test"));
    let r = DASHBOARD
        .get(&app, location(&r), Some(&owner))
        .await
        .expect(200);
    assert!(
        html(&r).contains("A test message (webhook.test) is due now")
            && html(&r).contains("webhook.test"),
        "{}",
        html(&r)
    );
    assert_eq!(worker.run_once().await.unwrap(), 1);
    assert_eq!(rx.received().len(), 3);
    assert_eq!(rx.received()[2].body["type"], "webhook.test");

    // A disabled endpoint offers no retry, and refuses one with the reason.
    app.admin(
        "PATCH",
        &format!("/webhooks/{id}"),
        Some(json!({"enabled": false})),
    )
    .await
    .expect(200);
    let r = DASHBOARD
        .get(&app, &deliveries, Some(&owner))
        .await
        .expect(200);
    assert!(
        !html(&r).contains(">Retry</button>")
            && html(&r).contains("Enable the endpoint to send again.")
    );
    assert!(
        !html(&DASHBOARD.get(&app, &page, Some(&owner)).await.expect(200))
            .contains("Send a test message")
    );
    let r = DASHBOARD
        .post(
            &app,
            &retry,
            Some(&owner),
            &format!("back={}", enc(&deliveries)),
        )
        .await
        .expect(409);
    assert!(
        html(&r).contains("role=\"alert\">The endpoint is disabled: enable it first<"),
        "{}",
        html(&r)
    );
    assert_eq!(worker.run_once().await.unwrap(), 0);
    app.admin(
        "PATCH",
        &format!("/webhooks/{id}"),
        Some(json!({"enabled": true})),
    )
    .await
    .expect(200);

    // Pages of 20, newest first: 19 leads and the test message, then the sale.
    for n in 0..19 {
        app.lead(&seed, &format!("cust-{n}")).await;
    }
    let r = DASHBOARD
        .get(&app, &deliveries, Some(&owner))
        .await
        .expect(200);
    let body = html(&r);
    assert_eq!(body.matches("<tr data-delivery=").count(), 20);
    assert!(
        !body.contains(&format!("data-delivery=\"{delivery}\"")),
        "the sale is on the next page"
    );
    let next = body
        .split("href=\"")
        .filter_map(|h| h.split('"').next())
        .find(|h| h.contains("cursor="))
        .unwrap()
        .to_string();
    let r = DASHBOARD.get(&app, &next, Some(&owner)).await.expect(200);
    let body = html(&r);
    assert_eq!(body.matches("<tr data-delivery=").count(), 1);
    assert!(body.contains(&format!("data-delivery=\"{delivery}\"")) && body.contains("First page"));
}

on_both_backends!(coupon_codes_are_added_and_archived_on_the_partner_page);
async fn coupon_codes_are_added_and_archived_on_the_partner_page(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let owner = member(&app, &seed, "owner@example.com", "owner").await;
    let link = app.link_id(&seed.short_link).await;
    let partner = format!("/app/programs/{p}/partners/{}", seed.partner_id);
    let coupons = format!("{partner}/coupons");
    let r = DASHBOARD
        .get(&app, &partner, Some(&owner))
        .await
        .expect(200);
    let body = html(&r);
    assert!(
        body.contains("Coupon codes") && body.contains("New coupon code"),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "<option value=\"{link}\" selected>{}</option>",
            seed.short_link
        )),
        "{body}"
    );

    let r = DASHBOARD
        .post(
            &app,
            &coupons,
            Some(&owner),
            &format!("link_id={link}&code=PODCAST20"),
        )
        .await
        .expect(303);
    assert_eq!(location(&r), format!("{partner}?done=coupon#link-{link}"));
    // Taken in this program, whatever the case; bad codes: beside their field, typed values kept.
    for (form, id, text) in [
        (
            "code=podcast20",
            "f-code-error",
            "A coupon with this coupon code already exists in this program",
        ),
        (
            "code=two+words",
            "f-code-error",
            "Coupon code must be 1 to 64 letters, digits, &#39;-&#39; or &#39;_&#39;",
        ),
        (
            "code=SPRING&stripe_promotion_code=coupon_1",
            "f-stripe_promotion_code-error",
            "Stripe promotion code must be a Stripe promotion code id (promo_…)",
        ),
    ] {
        let r = DASHBOARD
            .post(
                &app,
                &coupons,
                Some(&owner),
                &format!("link_id={link}&{form}"),
            )
            .await
            .expect(400);
        let body = html(&r);
        assert!(
            body.contains(&format!("id=\"{id}\">{text}")),
            "{form}: {body}"
        );
        let code = form
            .split('&')
            .next()
            .unwrap()
            .trim_start_matches("code=")
            .replace('+', " ");
        assert_eq!(input_value(body, "f-code"), Some(code), "{form}");
    }
    let r = DASHBOARD
        .post(
            &app,
            &coupons,
            Some(&owner),
            &format!("link_id={link}&code=two+words&stripe_promotion_code=coupon_1"),
        )
        .await
        .expect(400);
    let body = html(&r);
    assert!(
        body.contains("id=\"f-code-error\"")
            && body.contains("id=\"f-stripe_promotion_code-error\""),
        "{body}"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM coupons").await,
        1,
        "nothing more stored"
    );
    DASHBOARD
        .post(
            &app,
            &coupons,
            Some(&owner),
            &format!("link_id={link}&code=SPRING&stripe_promotion_code=promo_1Spring"),
        )
        .await
        .expect(303);
    let r = DASHBOARD
        .get(&app, &format!("{partner}?done=coupon"), Some(&owner))
        .await
        .expect(200);
    let body = html(&r);
    assert!(body.contains("The coupon code is added."));
    assert!(
        body.contains("coupon-code\">PODCAST20</span>")
            && body.contains("coupon-code\">SPRING</span>")
    );
    assert!(
        body.contains("Stripe: <span class=\"mono\">promo_1Spring</span>")
            && body.contains("no Stripe promotion code")
    );
    let r = app
        .admin("GET", &format!("/links/{link}"), None)
        .await
        .expect(200);
    assert_eq!(r.body["coupon_codes"], json!(["PODCAST20", "SPRING"]));

    // Another partner's link is not this partner's; no link is not a form of this page.
    let (_, bob_link) = app.add_partner(&seed, "bob").await;
    let bob_link = app.link_id(&bob_link).await;
    DASHBOARD
        .post(
            &app,
            &coupons,
            Some(&owner),
            &format!("link_id={bob_link}&code=BOB"),
        )
        .await
        .expect(404);
    DASHBOARD
        .post(&app, &coupons, Some(&owner), "code=BOB")
        .await
        .expect(404);
    // The link named in the address is chosen in the form.
    let r = DASHBOARD
        .get(
            &app,
            &format!(
                "/app/programs/{p}/partners/{}?coupon_link={link}",
                seed.partner_id
            ),
            Some(&owner),
        )
        .await
        .expect(200);
    assert!(html(&r).contains(&format!("<option value=\"{link}\" selected>")));

    // Archiving asks first.
    let first = app
        .count("SELECT id FROM coupons WHERE code = 'PODCAST20'")
        .await;
    let archive = format!("/app/programs/{p}/links/{link}/coupons/{first}/archive");
    let r = DASHBOARD
        .post(&app, &archive, Some(&owner), "")
        .await
        .expect(200);
    assert!(
        html(&r).contains("Archive coupon code PODCAST20?")
            && html(&r).contains("name=\"confirm\" value=\"yes\""),
        "{}",
        html(&r)
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM coupons WHERE archived_at IS NULL")
            .await,
        2,
        "not yet"
    );
    let r = DASHBOARD
        .post(&app, &archive, Some(&owner), "confirm=yes")
        .await
        .expect(303);
    assert_eq!(
        location(&r),
        format!("{partner}?done=coupon-archived#link-{link}")
    );
    let r = DASHBOARD
        .get(&app, &partner, Some(&owner))
        .await
        .expect(200);
    let body = html(&r);
    let row = body
        .split(&format!("data-coupon=\"{first}\""))
        .nth(1)
        .unwrap()
        .split("</li>")
        .next()
        .unwrap();
    assert!(
        row.contains("badge-archived\">archived") && !row.contains("Archive"),
        "{row}"
    );
    let r = app
        .admin("GET", &format!("/links/{link}"), None)
        .await
        .expect(200);
    assert_eq!(r.body["coupon_codes"], json!(["SPRING"]));
    let r = DASHBOARD
        .post(&app, &archive, Some(&owner), "confirm=yes")
        .await
        .expect(409);
    assert!(html(&r).contains("The coupon is archived already"));
    // Its code is free again.
    DASHBOARD
        .post(
            &app,
            &coupons,
            Some(&owner),
            &format!("link_id={link}&code=podcast20"),
        )
        .await
        .expect(303);
    // A coupon of another link, or a link of another program: not found.
    DASHBOARD
        .post(
            &app,
            &format!("/app/programs/{p}/links/{bob_link}/coupons/{first}/archive"),
            Some(&owner),
            "",
        )
        .await
        .expect(404);
    let other = app.seed().await;
    let other_link = app.link_id(&other.short_link).await;
    DASHBOARD
        .post(
            &app,
            &format!("/app/programs/{p}/links/{other_link}/coupons/{first}/archive"),
            Some(&owner),
            "confirm=yes",
        )
        .await
        .expect(404);

    // An archived link is not offered for a new code, and one posted anyway is refused.
    DASHBOARD
        .post(
            &app,
            &format!("/app/programs/{p}/links/{link}/status"),
            Some(&owner),
            "status=inactive",
        )
        .await
        .expect(303);
    let r = DASHBOARD
        .get(&app, &format!("{partner}?coupon_link={link}"), Some(&owner))
        .await
        .expect(200);
    let body = html(&r);
    let card = body
        .split(&format!("id=\"link-{link}\""))
        .nth(1)
        .unwrap()
        .split("class=\"share\"")
        .next()
        .unwrap();
    assert!(card.contains("badge-archived\">archived</span>"), "{card}");
    assert!(
        !body.contains(&format!("<option value=\"{link}\""))
            && !body.contains("Add a coupon code<"),
        "{body}"
    );
    assert!(
        body.contains("links are all archived: activate one to add a code"),
        "{body}"
    );
    let stored = app.count("SELECT COUNT(*) FROM coupons").await;
    let r = DASHBOARD
        .post(
            &app,
            &coupons,
            Some(&owner),
            &format!("link_id={link}&code=AUTUMN"),
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains(&format!(
            "The link {} is archived: activate it",
            seed.short_link
        )),
        "{}",
        html(&r)
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM coupons").await,
        stored,
        "nothing stored"
    );
}

on_both_backends!(viewers_and_members_see_webhooks_and_coupons_and_change_nothing);
async fn viewers_and_members_see_webhooks_and_coupons_and_change_nothing(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let link = app.link_id(&seed.short_link).await;
    let r = app
        .admin(
            "POST",
            &format!("/programs/{p}/webhooks"),
            Some(json!({"url": PUBLIC_HOOK, "events": ["lead.created"]})),
        )
        .await
        .expect(201);
    let id = r.body["id"].as_i64().unwrap();
    let r = app
        .admin(
            "POST",
            &format!("/links/{link}/coupons"),
            Some(json!({"code": "PODCAST20"})),
        )
        .await
        .expect(201);
    let coupon = r.body["id"].as_i64().unwrap();
    app.lead(&seed, "cust-1").await;
    let delivery = app.count("SELECT id FROM webhook_deliveries").await;
    let next_attempt = app
        .count("SELECT next_attempt_at FROM webhook_deliveries")
        .await;
    let viewer = member(&app, &seed, "viewer@example.com", "viewer").await;
    let member_cookie = member(&app, &seed, "member@example.com", "member").await;
    let webhooks = format!("/app/programs/{p}/settings/webhooks");

    for cookie in [&viewer, &member_cookie] {
        // Everything is there to read, with no form but sign-out.
        for (path, shows) in [
            (webhooks.clone(), PUBLIC_HOOK),
            (format!("{webhooks}/{id}"), "lead.created"),
            (
                format!("{webhooks}/{id}/deliveries"),
                "badge-pending\">pending",
            ),
            (
                format!("/app/programs/{p}/partners/{}", seed.partner_id),
                "coupon-code\">PODCAST20</span>",
            ),
        ] {
            let r = DASHBOARD.get(&app, &path, Some(cookie)).await.expect(200);
            let body = html(&r);
            assert!(body.contains(shows), "{path}: {body}");
            assert_eq!(change_forms(body), 0, "a form on {path}: {body}");
            for control in [
                "Add endpoint",
                "Retry",
                "Delete",
                "Disable",
                "Add coupon code",
                "Archive",
            ] {
                assert!(!body.contains(control), "{control} on {path}");
            }
        }
        // A forced post is refused with the API's 403, confirmed or not.
        for (path, form) in [
            (
                webhooks.clone(),
                format!("url={}&events=sale.created", enc(PUBLIC_HOOK)),
            ),
            (
                format!("{webhooks}/{id}"),
                format!("url={}&events=payout.paid", enc("https://93.184.216.35/x")),
            ),
            (
                format!("{webhooks}/{id}/enabled"),
                "enabled=false".to_string(),
            ),
            (format!("{webhooks}/{id}/delete"), String::new()),
            (format!("{webhooks}/{id}/delete"), "confirm=yes".to_string()),
            (
                format!("{webhooks}/{id}/deliveries/{delivery}/retry"),
                String::new(),
            ),
            (
                format!("/app/programs/{p}/partners/{}/coupons", seed.partner_id),
                format!("link_id={link}&code=MINE"),
            ),
            (
                format!("/app/programs/{p}/links/{link}/coupons/{coupon}/archive"),
                String::new(),
            ),
            (
                format!("/app/programs/{p}/links/{link}/coupons/{coupon}/archive"),
                "confirm=yes".to_string(),
            ),
        ] {
            let r = DASHBOARD
                .post(&app, &path, Some(cookie), &form)
                .await
                .expect(403);
            assert!(
                html(&r).contains("Not available to you") && html(&r).contains("may not do this"),
                "{path}: {}",
                html(&r)
            );
        }
    }
    // Nothing changed.
    let r = app
        .admin("GET", &format!("/programs/{p}/webhooks"), None)
        .await
        .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["data"][0]["url"], PUBLIC_HOOK);
    assert_eq!(r.body["data"][0]["events"], json!(["lead.created"]));
    assert_eq!(r.body["data"][0]["enabled"], true);
    assert_eq!(
        app.count("SELECT next_attempt_at FROM webhook_deliveries")
            .await,
        next_attempt,
        "not made due"
    );
    let r = app
        .admin("GET", &format!("/links/{link}/coupons"), None)
        .await
        .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["data"][0]["status"], "active");
}

on_both_backends!(the_overview_names_new_figures_and_the_dates_it_shows);
async fn the_overview_names_new_figures_and_the_dates_it_shows(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let owner = member(&app, &seed, "owner@example.com", "owner").await;
    app.click(&seed.short_link).await;
    let r = DASHBOARD
        .get(&app, &format!("/app/programs/{p}"), Some(&owner))
        .await
        .expect(200);
    let body = html(&r);
    // Clicks from none: new, not "up 100 %".
    assert!(body.contains("new: none in the previous period"), "{body}");
    assert!(!body.contains("up 100.0%"), "{body}");
    // The date fields hold the 30 days shown.
    let today = chrono::Utc::now().date_naive();
    let from = today - chrono::Days::new(29);
    assert!(
        body.contains(&format!("name=\"from\" type=\"date\" value=\"{from}\"")),
        "{body}"
    );
    assert!(
        body.contains(&format!("name=\"to\" type=\"date\" value=\"{today}\"")),
        "{body}"
    );
    // "Programs" lists them, even when there is one (`/app` opens that one).
    assert!(body.contains("href=\"/app?all=1\""), "{body}");
    DASHBOARD
        .get(&app, "/app?all=1", Some(&owner))
        .await
        .expect(200);
    // A refused range says so in the picker's words.
    let r = DASHBOARD
        .get(
            &app,
            &format!("/app/programs/{p}?from=2026-03-02&to=2026-03-01"),
            Some(&owner),
        )
        .await
        .expect(200);
    assert!(
        html(&r).contains("The start date must not be after the end date"),
        "{}",
        html(&r)
    );
}

on_both_backends!(a_refunded_commission_shows_what_it_was);
async fn a_refunded_commission_shows_what_it_was(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let owner = member(&app, &seed, "owner@example.com", "owner").await;
    app.lead(&seed, "k").await;
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": "t1", "amount_cents": 3000, "customer_key": "k"}),
    )
    .await
    .expect(200);
    app.post_auth(
        "/api/v1/track/refund",
        &seed.api_token,
        json!({"transaction_id": "t1"}),
    )
    .await
    .expect(200);
    let r = DASHBOARD
        .get(
            &app,
            &format!("/app/programs/{p}/commissions"),
            Some(&owner),
        )
        .await
        .expect(200);
    assert!(html(&r).contains("$0.00 (of $6.00)"), "{}", html(&r));
    // The API's row keeps its fields: the net only.
    let api = app
        .admin("GET", &format!("/programs/{p}/commissions"), None)
        .await
        .expect(200);
    let row = &api.body["data"][0];
    assert_eq!(row["amount_cents"], 0);
    assert!(row.get("taken_back_cents").is_none(), "{row}");
}

on_both_backends!(an_application_s_website_and_message_show_beside_approve_and_reject);
async fn an_application_s_website_and_message_show_beside_approve_and_reject(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"applications_open": true})),
    )
    .await
    .expect(200);
    let apply = |name: &str, website: &str, message: &str| json!({"name": name, "email": format!("{name}@example.com"), "password": "partner password", "website": website, "message": message});
    app.post(
        &format!("/api/partner/apply/{p}"),
        apply(
            "bob",
            "https://bob.example/blog",
            "<b>Hi</b>\nI review tools.",
        ),
    )
    .await
    .expect(201);
    app.post(
        &format!("/api/partner/apply/{p}"),
        apply("eve", "javascript:alert(1)", ""),
    )
    .await
    .expect(201);
    let bob = app
        .count("SELECT id FROM partners WHERE email = 'bob@example.com'")
        .await;
    let eve = app
        .count("SELECT id FROM partners WHERE email = 'eve@example.com'")
        .await;
    // The management API's rows carry them.
    let r = app
        .admin(
            "GET",
            &format!("/programs/{p}/partners?status=pending"),
            None,
        )
        .await
        .expect(200);
    let row = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["partner_id"] == bob)
        .unwrap()
        .clone();
    assert_eq!(row["website"], "https://bob.example/blog");
    assert_eq!(row["message"], "<b>Hi</b>\nI review tools.");
    assert_eq!(
        r.body["data"][0]["message"],
        json!(null),
        "none given: null"
    );

    let owner = member(&app, &seed, "owner@example.com", "owner").await;
    let viewer = member(&app, &seed, "viewer@example.com", "viewer").await;
    for cookie in [&owner, &viewer] {
        let r = DASHBOARD
            .get(
                &app,
                &format!("/app/programs/{p}/partners?status=pending"),
                Some(cookie),
            )
            .await
            .expect(200);
        let body = html(&r);
        assert!(
            body.contains(&format!("data-application=\"{bob}\"")),
            "{body}"
        );
        assert!(body.contains("<a href=\"https://bob.example/blog\" rel=\"noopener nofollow ugc\">https://bob.example/blog</a>"), "{body}");
        assert!(
            body.contains("&#60;b&#62;Hi&#60;/b&#62;\nI review tools."),
            "escaped: {body}"
        );
        assert!(!body.contains("<b>Hi"), "{body}");
        // Not an http(s) address: text, never a link.
        assert!(body.contains("website: javascript:alert(1)"), "{body}");
        assert!(!body.contains("href=\"javascript:"), "{body}");
    }
    let r = DASHBOARD
        .get(
            &app,
            &format!("/app/programs/{p}/partners/{bob}"),
            Some(&owner),
        )
        .await
        .expect(200);
    let body = html(&r);
    assert!(body.contains("Its application"), "{body}");
    assert!(
        body.contains("rel=\"noopener nofollow ugc\">https://bob.example/blog</a>"),
        "{body}"
    );
    assert!(
        body.contains(
            "<dd class=\"application-message\">&#60;b&#62;Hi&#60;/b&#62;\nI review tools.</dd>"
        ),
        "{body}"
    );
    assert!(
        body.contains("value=\"approved\"") && body.contains(">Reject</button>"),
        "{body}"
    );
    // The new link's hint says what the rule accepts.
    assert!(
        body.contains("id=\"f-short_link-hint\">1 to 255 characters without spaces."),
        "{body}"
    );
    let r = DASHBOARD
        .get(
            &app,
            &format!("/app/programs/{p}/partners/{eve}"),
            Some(&owner),
        )
        .await
        .expect(200);
    assert!(
        html(&r).contains("<dd>javascript:alert(1)</dd>"),
        "{}",
        html(&r)
    );
    assert!(
        !html(&r).contains("<dt>Message</dt>"),
        "an empty message is not shown"
    );
    // A partner that applied for nothing has no application.
    let r = DASHBOARD
        .get(
            &app,
            &format!("/app/programs/{p}/partners/{}", seed.partner_id),
            Some(&owner),
        )
        .await
        .expect(200);
    assert!(!html(&r).contains("Its application"));
}

on_both_backends!(a_role_that_may_not_change_is_refused_before_the_form_is_checked);
async fn a_role_that_may_not_change_is_refused_before_the_form_is_checked(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let link = app.link_id(&seed.short_link).await;
    let r = app
        .admin(
            "POST",
            &format!("/programs/{p}/webhooks"),
            Some(json!({"url": PUBLIC_HOOK, "events": ["lead.created"]})),
        )
        .await
        .expect(201);
    let hook = r.body["id"].as_i64().unwrap();
    app.admin(
        "PATCH",
        &format!("/links/{link}"),
        Some(json!({"status": "inactive"})),
    )
    .await
    .expect(200);
    let viewer = member(&app, &seed, "viewer@example.com", "viewer").await;
    let member_cookie = member(&app, &seed, "member@example.com", "member").await;
    let viewer_id = app
        .count("SELECT id FROM users WHERE email = 'viewer@example.com'")
        .await;
    let partner = format!("/app/programs/{p}/partners/{}", seed.partner_id);
    for cookie in [&viewer, &member_cookie] {
        // Each form is incomplete or wrong: an owner would get it back with the error
        // beside the field (or a confirmation); these roles get the 403 page.
        for (path, form) in [
            (
                format!("/app/programs/{p}/settings"),
                "name=Mine".to_string(),
            ),
            (format!("/app/programs/{p}/settings"), String::new()),
            (
                format!("/app/programs/{p}/settings/token"),
                "keep_old_for_hours=soon".to_string(),
            ),
            (
                format!("/app/programs/{p}/settings/token"),
                "keep_old_for_hours=99999&confirm=yes".to_string(),
            ),
            (format!("/app/programs/{p}/settings/token"), String::new()),
            (format!("{partner}/status"), "status=banned".to_string()),
            (format!("{partner}/status"), "status=bogus".to_string()),
            (
                format!("{partner}/coupons"),
                format!("link_id={link}&code=MINE"),
            ),
            (
                format!("/app/programs/{p}/settings/webhooks/{hook}/enabled"),
                "enabled=maybe".to_string(),
            ),
            (
                format!("/app/programs/{p}/settings/members/{viewer_id}"),
                "role=king&status=active".to_string(),
            ),
        ] {
            let r = DASHBOARD
                .post(&app, &path, Some(cookie), &form)
                .await
                .expect(403);
            assert!(
                html(&r).contains("Not available to you"),
                "{path} {form}: {}",
                html(&r)
            );
        }
    }
    // The owner still gets the form back with its errors.
    let owner = member(&app, &seed, "owner@example.com", "owner").await;
    let r = DASHBOARD
        .post(
            &app,
            &format!("/app/programs/{p}/settings"),
            Some(&owner),
            "name=Mine",
        )
        .await
        .expect(400);
    assert!(html(&r).contains("field-error"), "{}", html(&r));
    let r = app
        .admin("GET", &format!("/programs/{p}"), None)
        .await
        .expect(200);
    assert_eq!(r.body["name"], "Acme Partners");
}

on_both_backends!(the_events_page_shows_what_refunds_took_back);
async fn the_events_page_shows_what_refunds_took_back(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let owner = member(&app, &seed, "owner@example.com", "owner").await;
    app.lead(&seed, "k").await;
    for txn in ["t1", "t2"] {
        app.post_auth(
            "/api/v1/track/sale",
            &seed.api_token,
            json!({"transaction_id": txn, "amount_cents": 10_000, "customer_key": "k"}),
        )
        .await
        .expect(200);
    }
    app.post_auth(
        "/api/v1/track/refund",
        &seed.api_token,
        json!({"transaction_id": "t1", "refund_amount_cents": 5000}),
    )
    .await
    .expect(200);
    app.post_auth(
        "/api/v1/track/refund",
        &seed.api_token,
        json!({"transaction_id": "t2"}),
    )
    .await
    .expect(200);
    let r = DASHBOARD
        .get(
            &app,
            &format!("/app/programs/{p}/events?type=conversion"),
            Some(&owner),
        )
        .await
        .expect(200);
    let body = html(&r);
    let row = |txn: &str| {
        body.split("<tr data-kind=\"sale\">")
            .find(|r| r.contains(&format!("<dd>{txn}</dd>")))
            .unwrap_or_else(|| panic!("{txn}: {body}"))
            .split("</tr>")
            .next()
            .unwrap()
            .to_string()
    };
    let partial = row("t1");
    assert!(
        partial
            .contains("<dt>Amount</dt><dd>$100.00</dd></div><div><dt>Refunded</dt><dd>$50.00</dd>"),
        "{partial}"
    );
    assert!(
        partial.contains("<dt>Status</dt><dd>partially refunded</dd>"),
        "{partial}"
    );
    let full = row("t2");
    assert!(
        full.contains("<dt>Refunded</dt><dd>$100.00</dd>")
            && full.contains("<dt>Status</dt><dd>refunded</dd>"),
        "{full}"
    );
}
