//! The partner portal's pages through the real router: the session cookie, redirects to
//! sign-in, HTML error pages, the same-origin rule of forms, errors beside their field,
//! and the CSV download.

use axum::body::Body;
use axum::http::Request;

use crate::common::pages::{html, location, HOST, ORIGIN, PORTAL};
use crate::common::*;
use serde_json::json;

/// Accepts an invite on the page; the session cookie it sets.
async fn accepted(app: &TestApp, partner_id: i64, email: &str) -> String {
    let token = app.invite_token(partner_id, email).await;
    let form = format!("token={token}&password=partner+password&confirm=partner+password");
    let r = PORTAL
        .post(app, "/partner/invite", None, &form)
        .await
        .expect(303);
    assert_eq!(location(&r), "/partner?done=welcome");
    PORTAL.session(&r)
}

on_both_backends!(sign_in_sets_the_cookie_and_pages_need_it);
async fn sign_in_sets_the_cookie_and_pages_need_it(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let token = app.invite_token(seed.partner_id, "alice@example.com").await;
    let r = PORTAL
        .get(&app, &format!("/partner/invite?token={token}"), None)
        .await
        .expect(200);
    assert!(html(&r).contains("Set your password"));
    let csp = r.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'self'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    assert_eq!(r.headers["cache-control"], "no-store");
    let r = PORTAL.get(&app, "/partner/invite", None).await.expect(400);
    assert!(html(&r).contains("This invite link is not valid"));

    // Errors of the invite, in the service's words.
    let form = format!("token={token}&password=short&confirm=short");
    let r = PORTAL
        .post(&app, "/partner/invite", None, &form)
        .await
        .expect(400);
    assert!(
        html(&r).contains("id=\"f-password-error\">New password must be 8 to 1024 characters"),
        "{}",
        html(&r)
    );
    let form = format!("token={token}&password=partner+password&confirm=other+password");
    let r = PORTAL
        .post(&app, "/partner/invite", None, &form)
        .await
        .expect(400);
    assert!(html(&r).contains("id=\"f-confirm-error\">The two passwords are not the same"));
    assert!(!html(&r).contains("f-password-error"), "{}", html(&r));
    // A short password and no repeat: both, each beside its field.
    let form = format!("token={token}&password=short&confirm=");
    let r = PORTAL
        .post(&app, "/partner/invite", None, &form)
        .await
        .expect(400);
    assert!(
        html(&r).contains("id=\"f-password-error\">New password must be 8 to 1024 characters"),
        "{}",
        html(&r)
    );
    assert!(
        html(&r).contains("id=\"f-confirm-error\">The two passwords are not the same"),
        "{}",
        html(&r)
    );
    let r = PORTAL
        .post(
            &app,
            "/partner/invite",
            None,
            "token=rti_nope&password=partner+password&confirm=partner+password",
        )
        .await
        .expect(400);
    assert!(html(&r).contains("This invite link is not valid"));

    let form = format!("token={token}&password=partner+password&confirm=partner+password");
    let r = PORTAL
        .post(&app, "/partner/invite", None, &form)
        .await
        .expect(303);
    let set = r.headers["set-cookie"].to_str().unwrap();
    for part in [
        "rt_partner=rtp_",
        "Path=/partner",
        "HttpOnly",
        "SameSite=Lax",
        "Max-Age=6047",
    ] {
        assert!(set.contains(part), "{set}");
    }
    assert!(!set.contains("Secure"), "{set}");
    let cookie = PORTAL.session(&r);
    let r = PORTAL
        .post(&app, "/partner/invite", None, &form)
        .await
        .expect(400);
    assert!(html(&r).contains("already been used"));

    // Without the cookie every page sends to sign-in, and back afterwards.
    let r = PORTAL.get(&app, "/partner", None).await.expect(303);
    assert_eq!(location(&r), "/partner/login");
    let links = format!("/partner/programs/{p}/links");
    let r = PORTAL.get(&app, &links, None).await.expect(303);
    assert_eq!(
        location(&r),
        format!("/partner/login?next=%2Fpartner%2Fprograms%2F{p}%2Flinks")
    );
    PORTAL
        .get(&app, "/partner", Some("rtp_unknown"))
        .await
        .expect(303);

    // With it, every page.
    let r = PORTAL
        .get(&app, "/partner", Some(&cookie))
        .await
        .expect(200);
    let body = html(&r);
    assert!(
        body.contains("Acme Partners") && body.contains("Earnings") && body.contains("Pending"),
        "{body}"
    );
    assert!(body.contains("$0.00"));
    let r = PORTAL.get(&app, &links, Some(&cookie)).await.expect(200);
    assert!(html(&r).contains(&format!("?aff={}", seed.short_link)));
    assert!(html(&r).contains("carries its tracker"));
    for path in [
        format!("/partner/programs/{p}/commissions"),
        format!("/partner/programs/{p}/payouts"),
        "/partner/settings".to_string(),
    ] {
        let r = PORTAL.get(&app, &path, Some(&cookie)).await.expect(200);
        assert!(html(&r).contains("<main id=\"main\""), "{path}");
    }
    let r = PORTAL
        .get(&app, "/partner/", Some(&cookie))
        .await
        .expect(303);
    assert_eq!(location(&r), "/partner");

    // Sign-in: an error beside the field, the cookie, the way back.
    let r = PORTAL
        .get(&app, "/partner/login?next=%2Fpartner%2Fsettings", None)
        .await
        .expect(200);
    assert!(html(&r).contains("value=\"/partner/settings\""));
    let r = PORTAL
        .post(
            &app,
            "/partner/login",
            None,
            "email=alice%40example.com&password=wrong+password",
        )
        .await
        .expect(401);
    assert!(html(&r).contains("id=\"f-password-error\">Invalid email or password"));
    assert!(html(&r).contains("value=\"alice@example.com\""));
    let r = PORTAL
        .post(&app, "/partner/login", None, "email=&password=")
        .await
        .expect(400);
    assert!(html(&r).contains("id=\"f-email-error\""));
    let r = PORTAL
        .post(
            &app,
            "/partner/login",
            None,
            "email=ALICE%40example.com&password=partner+password&next=%2Fpartner%2Fsettings",
        )
        .await
        .expect(303);
    assert_eq!(location(&r), "/partner/settings");
    let second = PORTAL.session(&r);
    let r = PORTAL.post(&app, "/partner/login", None, "email=alice%40example.com&password=partner+password&next=https%3A%2F%2Fevil.example%2F").await.expect(303);
    assert_eq!(location(&r), "/partner");
    // A signed-in visit of the sign-in page goes on.
    let r = PORTAL
        .get(&app, "/partner/login", Some(&second))
        .await
        .expect(303);
    assert_eq!(location(&r), "/partner");

    // Sign-out ends the session and clears the cookie.
    let r = PORTAL
        .post(&app, "/partner/logout", Some(&second), "")
        .await
        .expect(303);
    assert_eq!(location(&r), "/partner/login?signed_out=1");
    assert_eq!(PORTAL.session(&r), "");
    assert!(r.headers["set-cookie"]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
    PORTAL
        .get(&app, "/partner", Some(&second))
        .await
        .expect(303);
    PORTAL
        .get(&app, "/partner", Some(&cookie))
        .await
        .expect(200);
    // The page session is an API session too.
    let auth = format!("Bearer {cookie}");
    app.send("GET", "/api/partner/me", None, &[("authorization", &auth)])
        .await
        .expect(200);
}

on_both_backends!(another_partners_program_is_a_404_page);
async fn another_partners_program_is_a_404_page(app: TestApp) {
    let seed = app.seed().await;
    let other = app.seed().await;
    let cookie = accepted(&app, seed.partner_id, "alice@example.com").await;
    for path in [
        format!("/partner/programs/{}/links", other.program_id),
        format!("/partner/programs/{}/commissions", other.program_id),
        format!("/partner/programs/{}/commissions.csv", other.program_id),
        format!("/partner/programs/{}/payouts", other.program_id),
        "/partner/programs/nope/links".to_string(),
        format!("/partner?program={}", other.program_id),
        "/partner/no-such-page".to_string(),
    ] {
        let r = PORTAL.get(&app, &path, Some(&cookie)).await.expect(404);
        assert!(html(&r).contains("Page not found"), "{path}: {}", html(&r));
        assert!(r.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"));
    }
    let r = PORTAL
        .post(
            &app,
            &format!("/partner/programs/{}/links", other.program_id),
            Some(&cookie),
            "short_link=mine",
        )
        .await
        .expect(404);
    assert!(html(&r).contains("Page not found"));
    // A program that takes no applications has no apply page: the 404 page says so,
    // in the same words as for a program that does not exist (signed in or not, GET or
    // POST).
    let closed = format!("/partner/apply/{}", seed.program_id);
    for (path, cookie) in [
        (closed.as_str(), None),
        (closed.as_str(), Some(cookie.as_str())),
        ("/partner/apply/999999999", None),
        ("/partner/apply/nope", None),
    ] {
        let r = PORTAL.get(&app, path, cookie).await.expect(404);
        assert!(html(&r).contains("Page not found"), "{path}");
        assert!(
            html(&r)
                .contains("This program does not exist or is not taking applications right now."),
            "{path}: {}",
            html(&r)
        );
        assert!(!html(&r).contains("What you earn"), "{path}");
    }
    let r = PORTAL
        .post(
            &app,
            &closed,
            None,
            "name=Bob&email=bob%40example.com&password=partner+password",
        )
        .await
        .expect(404);
    assert!(
        html(&r).contains("This program does not exist or is not taking applications right now.")
    );
    assert!(!html(
        &PORTAL
            .get(&app, "/partner/no-such-page", None)
            .await
            .expect(404)
    )
    .contains("taking applications"));

    // A pending partner sees its standing and nothing of the program.
    app.admin(
        "PATCH",
        &format!("/programs/{}/partners/{}", seed.program_id, seed.partner_id),
        Some(json!({"status": "banned"})),
    )
    .await
    .expect(200);
    let r = PORTAL
        .get(&app, "/partner", Some(&cookie))
        .await
        .expect(200);
    assert!(html(&r).contains("You can no longer promote this program"));
    assert!(!html(&r).contains("Earnings"));
    let r = PORTAL
        .get(
            &app,
            &format!("/partner/programs/{}/links", seed.program_id),
            Some(&cookie),
        )
        .await
        .expect(403);
    assert!(html(&r).contains("You can no longer promote this program"));
}

on_both_backends!(cross_origin_posts_are_refused);
async fn cross_origin_posts_are_refused(app: TestApp) {
    let seed = app.seed().await;
    let cookie = accepted(&app, seed.partner_id, "alice@example.com").await;
    let form = Some("name=Mallory&payout_method=&payout_email=");
    for origin in [Some("http://evil.test"), Some("null"), None] {
        let r = PORTAL
            .page(
                &app,
                "POST",
                "/partner/settings",
                Some(&cookie),
                form,
                origin,
            )
            .await
            .expect(403);
        assert!(html(&r).contains("sent from another site"), "{origin:?}");
    }
    PORTAL
        .page(
            &app,
            "POST",
            "/partner/logout",
            Some(&cookie),
            Some(""),
            Some("https://evil.test"),
        )
        .await
        .expect(403);
    let r = PORTAL
        .page(
            &app,
            "POST",
            "/partner/login",
            None,
            Some("email=a%40b.c&password=x"),
            Some("http://evil.test"),
        )
        .await
        .expect(403);
    assert!(html(&r).contains("sent from another site"));
    PORTAL
        .get(&app, "/partner/settings", Some(&cookie))
        .await
        .expect(200);
    let r = PORTAL.get(&app, "/partner/settings", Some(&cookie)).await;
    assert!(html(&r).contains("value=\"Alice\""), "nothing changed");

    // Referer stands in for a missing Origin.
    let mut req = Request::post("/partner/settings")
        .header("host", HOST)
        .header("cookie", format!("rt_partner={cookie}"))
        .header("referer", format!("{ORIGIN}/partner/settings"))
        .header("content-type", "application/x-www-form-urlencoded");
    let r = app
        .raw(
            req.body(Body::from("name=Alice+B&payout_method=&payout_email="))
                .unwrap(),
        )
        .await
        .expect(303);
    assert_eq!(location(&r), "/partner/settings?done=profile");
    req = Request::post("/partner/settings")
        .header("host", HOST)
        .header("cookie", format!("rt_partner={cookie}"))
        .header("referer", "http://evil.test/partner/settings");
    app.raw(req.body(Body::from("name=X")).unwrap())
        .await
        .expect(403);

    // Behind a proxy, the public URL is this site, and the cookie is Secure.
    let app = app.with_public_url("https://partners.example.com");
    let r = PORTAL
        .page(
            &app,
            "POST",
            "/partner/settings",
            Some(&cookie),
            form,
            Some("https://partners.example.com"),
        )
        .await
        .expect(303);
    assert_eq!(location(&r), "/partner/settings?done=profile");
    let r = PORTAL
        .page(
            &app,
            "POST",
            "/partner/login",
            None,
            Some("email=alice%40example.com&password=partner+password"),
            Some("https://partners.example.com"),
        )
        .await
        .expect(303);
    assert!(r.headers["set-cookie"]
        .to_str()
        .unwrap()
        .contains("; Secure"));
}

on_both_backends!(form_errors_sit_beside_their_field);
async fn form_errors_sit_beside_their_field(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let cookie = accepted(&app, seed.partner_id, "alice@example.com").await;

    let r = PORTAL
        .post(
            &app,
            "/partner/settings",
            Some(&cookie),
            "name=Alice&payout_method=paypal&payout_email=not-an-email",
        )
        .await
        .expect(400);
    let body = html(&r);
    assert!(
        body.contains("id=\"f-payout_email-error\">Payout email must be an email address"),
        "{body}"
    );
    assert!(body.contains("value=\"not-an-email\""));
    let r = PORTAL
        .post(
            &app,
            "/partner/settings",
            Some(&cookie),
            "name=+&payout_method=&payout_email=",
        )
        .await
        .expect(400);
    assert!(html(&r).contains("id=\"f-name-error\">Name must be 1 to 200 characters"));
    let r = PORTAL
        .post(
            &app,
            "/partner/settings",
            Some(&cookie),
            "name=Alice+A&payout_method=wise&payout_email=pay%40alice.example&password=partner+password",
        )
        .await
        .expect(303);
    let r = PORTAL
        .get(&app, location(&r), Some(&cookie))
        .await
        .expect(200);
    let body = html(&r);
    assert!(
        body.contains("Your details are saved")
            && body.contains("value=\"pay@alice.example\"")
            && body.contains("value=\"wise\" selected"),
        "{body}"
    );

    let r = PORTAL.post(&app, "/partner/settings/password", Some(&cookie), "current_password=wrong+one&new_password=another+password&confirm_password=another+password").await.expect(400);
    assert!(
        html(&r).contains("id=\"f-current_password-error\">That is not your current password</p>"),
        "{}",
        html(&r)
    );
    let r = PORTAL
        .post(
            &app,
            "/partner/settings/password",
            Some(&cookie),
            "current_password=partner+password&new_password=tiny&confirm_password=tiny",
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains("id=\"f-new_password-error\">New password must be 8 to 1024 characters")
    );
    let r = PORTAL.post(&app, "/partner/settings/password", Some(&cookie), "current_password=partner+password&new_password=another+password&confirm_password=another+password").await.expect(303);
    assert_eq!(location(&r), "/partner/settings?done=password");
    PORTAL
        .get(&app, "/partner/settings", Some(&cookie))
        .await
        .expect(200);

    // Links: a taken short link, then a new one.
    let links = format!("/partner/programs/{p}/links");
    let r = PORTAL
        .post(
            &app,
            &links,
            Some(&cookie),
            &format!("short_link={}", seed.short_link),
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains("id=\"f-short_link-error\">A link with this short link already exists"),
        "{}",
        html(&r)
    );
    let r = PORTAL
        .post(&app, &links, Some(&cookie), "short_link=has+space")
        .await
        .expect(400);
    assert!(html(&r).contains(
        "id=\"f-short_link-error\">Short link must be 1 to 255 characters without spaces"
    ));
    // The hint says what is accepted: any characters but spaces.
    let r = PORTAL.get(&app, &links, Some(&cookie)).await.expect(200);
    assert!(
        html(&r).contains("id=\"f-short_link-hint\">1 to 255 characters without spaces."),
        "{}",
        html(&r)
    );
    PORTAL
        .post(&app, &links, Some(&cookie), "short_link=alice%21x")
        .await
        .expect(303);
    let r = PORTAL
        .post(&app, &links, Some(&cookie), "short_link=alice-summer")
        .await
        .expect(303);
    let r = PORTAL
        .get(&app, location(&r), Some(&cookie))
        .await
        .expect(200);
    assert!(html(&r).contains("?aff=alice-summer") && html(&r).contains("Your new link is ready"));
    // With the program's site known, the link to share is on it.
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"allowed_origins": ["https://shop.example"], "partner_links_allowed": false})),
    )
    .await
    .expect(200);
    let r = PORTAL.get(&app, &links, Some(&cookie)).await.expect(200);
    let body = html(&r);
    assert!(
        body.contains("value=\"https://shop.example/?aff=alice-summer\""),
        "{body}"
    );
    assert!(!body.contains("Create link") && body.contains("makes its partners' links"));

    // Commissions: a status that does not exist, beside the filter.
    let r = PORTAL
        .get(
            &app,
            &format!("/partner/programs/{p}/commissions?status=gold"),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert!(
        html(&r).contains("id=\"f-status-error\">Status must be"),
        "{}",
        html(&r)
    );
}

on_both_backends!(applicants_are_signed_in_and_see_their_application_pending);
async fn applicants_are_signed_in_and_see_their_application_pending(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"applications_open": true})),
    )
    .await
    .expect(200);
    let apply = format!("/partner/apply/{p}");
    let r = PORTAL.get(&app, &apply, None).await.expect(200);
    assert!(html(&r).contains("Apply to Acme Partners") && html(&r).contains("name=\"password\""));
    // The program's terms, the defaults: 20 %, 60 days, every renewal, 30 days, $50.00.
    let body = html(&r);
    for line in [
        "<h2>What you earn</h2>",
        "<li>You earn 20\u{a0}% of each sale.</li>",
        "<li>On a subscription, you also earn on every renewal.</li>",
        "<li>Visitors who follow your link are remembered for 60 days: if they sign up or buy within that time, it counts as yours, unless they follow another partner&#39;s link after yours.</li>",
        "<li>Commissions become payable 30 days after the sale.</li>",
        "<li>Payouts are made once your payable commissions add up to at least $50.00.</li>",
    ] {
        assert!(body.contains(line), "{line}: {body}");
    }
    // Changed terms read as changed, a fixed amount in the program's currency.
    app.admin("PATCH", &format!("/programs/{p}"), Some(json!({"currency": "eur", "commission": {"type": "flat", "amount_cents": 500}, "cookie_window_days": 1, "recurring_commission_months": 12, "commission_hold_days": 0, "min_payout_cents": 2500}))).await.expect(200);
    let body = html(&PORTAL.get(&app, &apply, None).await.expect(200)).to_string();
    for line in [
        "<li>You earn €5.00 per sale.</li>",
        "<li>On a subscription, you also earn on its renewals for 12 months after its first payment.</li>",
        "remembered for 1 day: if they",
        "<li>Commissions become payable as soon as the sale is recorded.</li>",
        "<li>Payouts are made once your payable commissions add up to at least €25.00.</li>",
    ] {
        assert!(body.contains(line), "{line}: {body}");
    }
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"recurring_commission_months": 0})),
    )
    .await
    .expect(200);
    let body = html(&PORTAL.get(&app, &apply, None).await.expect(200)).to_string();
    assert!(
        body.contains(
            "<li>On a subscription, you earn on the first payment only, not on renewals.</li>"
        ),
        "{body}"
    );
    let r = PORTAL
        .post(
            &app,
            &apply,
            None,
            "name=Bob&email=bob&password=partner+password",
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains("id=\"f-email-error\">Email must be an email address"),
        "{}",
        html(&r)
    );
    assert!(html(&r).contains("value=\"Bob\""));
    // Every field's error at once, each beside its field.
    let all_wrong = format!(
        "name=+&email=bob&password=short&website={}&message=Hi",
        "w".repeat(501)
    );
    let r = PORTAL
        .post(&app, &apply, None, &all_wrong)
        .await
        .expect(400);
    for field in ["name", "email", "password", "website"] {
        assert!(
            html(&r).contains(&format!("id=\"f-{field}-error\"")),
            "{field}: {}",
            html(&r)
        );
    }
    assert!(
        html(&r).contains("id=\"f-password-error\">Password must be 8 to 1024 characters"),
        "{}",
        html(&r)
    );
    let r = PORTAL.post(&app, &apply, None, "name=Bob&email=Bob%40Example.com&password=partner+password&website=https%3A%2F%2Fbob.example&message=Hi").await.expect(303);
    assert_eq!(location(&r), format!("/partner?program={p}&done=applied"));
    let bob = PORTAL.session(&r);
    let r = PORTAL.get(&app, location(&r), Some(&bob)).await.expect(200);
    let body = html(&r);
    assert!(
        body.contains("Your application is pending") && body.contains("Thanks for applying"),
        "{body}"
    );
    assert!(!body.contains("Earnings"));
    let r = app
        .admin(
            "GET",
            &format!("/programs/{p}/partners?status=pending"),
            None,
        )
        .await
        .expect(200);
    assert_eq!(r.body["data"][0]["email"], "bob@example.com");

    // The same email again: beside the email field.
    let r = PORTAL
        .post(
            &app,
            &apply,
            None,
            "name=Bob&email=bob%40example.com&password=partner+password",
        )
        .await
        .expect(400);
    assert!(
        html(&r).contains("id=\"f-email-error\">A partner account with this email already exists")
    );
    // Signed in: one click, and once in, the standing.
    let r = PORTAL.get(&app, &apply, Some(&bob)).await.expect(200);
    assert!(html(&r).contains("already in this program"));
    let alice = accepted(&app, seed.partner_id, "alice@example.com").await;
    let r = PORTAL.get(&app, &apply, Some(&alice)).await.expect(200);
    assert!(html(&r).contains("already in this program"));
    let other = app.seed().await;
    app.admin(
        "PATCH",
        &format!("/programs/{}", other.program_id),
        Some(json!({"applications_open": true})),
    )
    .await
    .expect(200);
    let r = PORTAL
        .get(
            &app,
            &format!("/partner/apply/{}", other.program_id),
            Some(&alice),
        )
        .await
        .expect(200);
    assert!(html(&r).contains("Apply with my account") && !html(&r).contains("name=\"password\""));
    let r = PORTAL
        .post(
            &app,
            &format!("/partner/apply/{}", other.program_id),
            Some(&alice),
            "website=&message=Me+too",
        )
        .await
        .expect(303);
    assert_eq!(
        location(&r),
        format!("/partner?program={}&done=applied", other.program_id)
    );
    // Two programs: a picker.
    let r = PORTAL.get(&app, "/partner", Some(&alice)).await.expect(200);
    assert!(html(&r).contains("Your programs"));
    assert!(
        html(&r).contains(&format!(
            "href=\"/partner?program={}\" aria-current=\"page\"",
            p
        )),
        "{}",
        html(&r)
    );
}

on_both_backends!(earnings_commissions_and_the_csv_download);
async fn earnings_commissions_and_the_csv_download(app: TestApp) {
    let seed = app
        .seed_with(
            json!({"commission_hold_days": 0, "commission": {"type": "percentage", "percent": 30}}),
        )
        .await;
    let p = seed.program_id;
    for (n, cents) in [(1, 10_000), (2, 123_456)] {
        let click_id = app.click(&seed.short_link).await;
        app.post_auth("/api/v1/track/sale", &seed.api_token, json!({"transaction_id": format!("txn-{n}"), "amount_cents": cents, "click_id": click_id}))
            .await
            .expect(200);
    }
    let cookie = accepted(&app, seed.partner_id, "alice@example.com").await;
    let r = PORTAL
        .get(&app, "/partner", Some(&cookie))
        .await
        .expect(200);
    // The program's terms, in the words of the apply page.
    let body = html(&r);
    for line in [
        "<h3>What you earn</h3>",
        "<li>You earn 30\u{a0}% of each sale.</li>",
        "<li>On a subscription, you also earn on every renewal.</li>",
        "remembered for 60 days",
        "<li>Commissions become payable as soon as the sale is recorded.</li>",
        "<li>Payouts are made once your payable commissions add up to at least $50.00.</li>",
    ] {
        assert!(body.contains(line), "{line}: {body}");
    }
    // Its link, with a copy button: no site origin, so the parameter, explained.
    assert!(
        body.contains(&format!(
            "id=\"share-1\" class=\"share-text\" type=\"text\" value=\"?aff={}\" readonly>",
            seed.short_link
        )),
        "{body}"
    );
    assert!(
        body.contains("data-copy=\"share-1\"")
            && body.contains("class=\"copy-status visually-hidden\""),
        "{body}"
    );
    assert!(
        body.contains("<label for=\"share-1\">Parameter</label>")
            && body.contains("that carries its tracker"),
        "{body}"
    );
    assert!(!body.contains("id=\"share-2\""), "{body}");
    // 30 % of $100.00 and $1,234.56, due at once (no hold).
    assert!(
        html(&r).contains("<dt>Approved</dt><dd>$400.37</dd>"),
        "{}",
        html(&r)
    );
    assert!(html(&r).contains("<dt>Pending</dt><dd>$0.00</dd>"));
    // The chart of the last 30 days, from the partner's daily rollups.
    for (label, total) in [("Clicks", "2"), ("Sales", "2"), ("Earnings", "$400.37")] {
        let caption = format!(
            "<span class=\"chart-label\">{label}</span> <span class=\"chart-total\">{total}</span>"
        );
        assert!(html(&r).contains(&caption), "{caption}");
    }
    let r = PORTAL
        .get(&app, "/partner?period=all", Some(&cookie))
        .await
        .expect(200);
    assert!(html(&r).contains("<span class=\"chart-total\">$400.37</span>"));
    let r = PORTAL
        .get(
            &app,
            "/partner?from=2026-13-01&to=2026-01-01",
            Some(&cookie),
        )
        .await
        .expect(200);
    assert!(
        html(&r)
            .contains("id=\"range-error\">The start date must be an ISO 8601 date (YYYY-MM-DD)"),
        "{}",
        html(&r)
    );
    let r = PORTAL
        .get(
            &app,
            &format!("/partner/programs/{p}/commissions"),
            Some(&cookie),
        )
        .await
        .expect(200);
    let body = html(&r);
    assert!(
        body.contains("txn-2") && body.contains("$370.37") && body.contains("$30.00"),
        "{body}"
    );
    assert!(body.contains(&format!("/partner/programs/{p}/commissions.csv")));
    let r = PORTAL
        .get(
            &app,
            &format!("/partner/programs/{p}/commissions?status=paid"),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert!(!html(&r).contains("txn-2"));
    assert!(html(&r).contains(&format!(
        "/partner/programs/{p}/commissions.csv?status=paid"
    )));

    let r = PORTAL
        .get(
            &app,
            &format!("/partner/programs/{p}/commissions.csv"),
            Some(&cookie),
        )
        .await
        .expect(200);
    crate::common::assert_download(&r);
    assert!(r.headers["content-disposition"]
        .to_str()
        .unwrap()
        .contains(&format!("program-{p}-my-commissions.csv")));
    let text = r.body.as_str().unwrap();
    assert!(text.starts_with("id,partner_id,"), "{text}");
    assert_eq!(text.lines().count(), 3);
    assert!(text.contains("txn-1") && text.contains("txn-2"));
    let r = PORTAL
        .get(
            &app,
            &format!("/partner/programs/{p}/commissions.csv?status=nope"),
            Some(&cookie),
        )
        .await
        .expect(400);
    assert!(html(&r).contains("status must be"));
    let r = PORTAL
        .get(
            &app,
            &format!("/partner/programs/{p}/commissions.csv"),
            None,
        )
        .await
        .expect(303);
    assert!(location(&r).starts_with("/partner/login?next="));

    // A payout shows on the payouts page.
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"payout_method": "paypal", "payout_email": "pay@alice.example"})),
    )
    .await
    .expect(200);
    app.admin("POST", &format!("/programs/{p}/payouts"), None)
        .await
        .expect(201);
    let r = PORTAL
        .get(
            &app,
            &format!("/partner/programs/{p}/payouts"),
            Some(&cookie),
        )
        .await
        .expect(200);
    assert!(
        html(&r).contains("$400.37") && html(&r).contains("badge-pending"),
        "{}",
        html(&r)
    );
}

on_both_backends!(assets_are_served_with_caching_headers);
async fn assets_are_served_with_caching_headers(app: TestApp) {
    let r = PORTAL.get(&app, "/partner/login", None).await.expect(200);
    let body = html(&r).to_string();
    let css = body
        .split("href=\"/assets/app.css")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    assert!(css.starts_with("?v="), "{css}");
    let r = app
        .send("GET", &format!("/assets/app.css{css}"), None, &[])
        .await
        .expect(200);
    assert_eq!(r.headers["content-type"], "text/css; charset=utf-8");
    assert!(r.headers["cache-control"]
        .to_str()
        .unwrap()
        .contains("max-age"));
    let etag = r.headers["etag"].to_str().unwrap().to_string();
    app.send("GET", "/assets/app.css", None, &[("if-none-match", &etag)])
        .await
        .expect(304);
    let r = app
        .send("GET", "/assets/app.js", None, &[])
        .await
        .expect(200);
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/javascript"));
    // Other paths stay JSON.
    let r = app.send("GET", "/api/nope", None, &[]).await.expect(404);
    assert_eq!(r.error(), "Not found");
}

on_both_backends!(a_link_card_shares_the_redirect_address_and_shows_its_coupon_codes);
async fn a_link_card_shares_the_redirect_address_and_shows_its_coupon_codes(app: TestApp) {
    let seed = app
        .seed_with(json!({"allowed_origins": ["https://shop.example"]}))
        .await;
    let p = seed.program_id;
    let short = seed.short_link.clone();
    let cookie = accepted(&app, seed.partner_id, "alice@example.com").await;
    let links = format!("/partner/programs/{p}/links");

    // Without a destination the site's address is the link to share, as before.
    let body = html(&PORTAL.get(&app, &links, Some(&cookie)).await.expect(200)).to_string();
    assert!(body.contains(&format!("id=\"share-1\" class=\"share-text\" type=\"text\" value=\"https://shop.example/?aff={short}\"")), "{body}");
    assert!(
        !body.contains("/r/") && !body.contains("id=\"site-1\"") && !body.contains("Coupon code"),
        "{body}"
    );

    // With the program's destination the redirect address is, and the site's is beside it.
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"destination_url": "https://shop.example/"})),
    )
    .await
    .expect(200);
    let link = app.link_id(&short).await;
    app.admin(
        "POST",
        &format!("/links/{link}/coupons"),
        Some(json!({"code": "SUMMER10"})),
    )
    .await
    .expect(201);
    let body = html(&PORTAL.get(&app, &links, Some(&cookie)).await.expect(200)).to_string();
    assert!(body.contains(&format!("id=\"share-1\" class=\"share-text\" type=\"text\" value=\"http://localhost/r/{short}\"")), "{body}");
    assert!(body.contains(&format!("id=\"site-1\" class=\"share-text\" type=\"text\" value=\"https://shop.example/?aff={short}\"")), "{body}");
    assert!(
        body.contains("data-copy=\"share-1\"") && body.contains("data-copy=\"site-1\""),
        "{body}"
    );
    assert!(body.contains("Share your links anywhere"), "{body}");
    assert!(
        body.contains("Coupon code: <code>SUMMER10</code>")
            && body.contains("Sales with this code count as yours"),
        "{body}"
    );
    app.admin(
        "POST",
        &format!("/links/{link}/coupons"),
        Some(json!({"code": "PODCAST"})),
    )
    .await
    .expect(201);
    let body = html(&PORTAL.get(&app, &links, Some(&cookie)).await.expect(200)).to_string();
    assert!(
        body.contains("Coupon codes: <code>SUMMER10</code> <code>PODCAST</code>")
            && body.contains("Sales with these codes count"),
        "{body}"
    );
    // The overview shares the same addresses, with the same copy buttons.
    let body = html(
        &PORTAL
            .get(&app, "/partner", Some(&cookie))
            .await
            .expect(200),
    )
    .to_string();
    assert!(body.contains(&format!("id=\"share-1\" class=\"share-text\" type=\"text\" value=\"http://localhost/r/{short}\"")), "{body}");
    assert!(body.contains(&format!("id=\"site-1\" class=\"share-text\" type=\"text\" value=\"https://shop.example/?aff={short}\"")), "{body}");
    assert!(
        body.contains("data-copy=\"share-1\"") && body.contains("data-copy=\"site-1\""),
        "{body}"
    );
    assert!(
        !body.contains("that carries its tracker, for example"),
        "{body}"
    );

    // REFTRACK_PUBLIC_URL names the server; a link made on the page has its address too.
    let app = app.with_public_url("https://go.example.com");
    let r = PORTAL
        .post(&app, &links, Some(&cookie), "short_link=alice-summer")
        .await
        .expect(303);
    let body = html(
        &PORTAL
            .get(&app, location(&r), Some(&cookie))
            .await
            .expect(200),
    )
    .to_string();
    assert!(
        body.contains("value=\"https://go.example.com/r/alice-summer\""),
        "{body}"
    );
    assert!(
        body.contains(&format!("value=\"https://go.example.com/r/{short}\"")),
        "{body}"
    );
    let body = html(
        &PORTAL
            .get(&app, "/partner", Some(&cookie))
            .await
            .expect(200),
    )
    .to_string();
    assert!(body.contains("id=\"share-1\" class=\"share-text\" type=\"text\" value=\"https://go.example.com/r/alice-summer\""), "{body}");
    assert!(body.contains(&format!("id=\"share-2\" class=\"share-text\" type=\"text\" value=\"https://go.example.com/r/{short}\"")), "{body}");

    // An inactive link: back to the site's address, and its codes no longer count.
    app.admin(
        "PATCH",
        &format!("/links/{link}"),
        Some(json!({"status": "inactive"})),
    )
    .await
    .expect(200);
    let body = html(&PORTAL.get(&app, &links, Some(&cookie)).await.expect(200)).to_string();
    assert!(!body.contains(&format!("/r/{short}")), "{body}");
    assert!(
        body.contains("sales with its codes no longer count"),
        "{body}"
    );
    // The overview shows active links only.
    let body = html(
        &PORTAL
            .get(&app, "/partner", Some(&cookie))
            .await
            .expect(200),
    )
    .to_string();
    assert!(
        body.contains("value=\"https://go.example.com/r/alice-summer\"")
            && !body.contains(&format!("?aff={short}\"")),
        "{body}"
    );
    assert!(
        !body.contains("id=\"share-2\"") && !body.contains("Your other links"),
        "{body}"
    );
    for n in 1..=3 {
        PORTAL
            .post(
                &app,
                &links,
                Some(&cookie),
                &format!("short_link=alice-{n}"),
            )
            .await
            .expect(303);
    }
    let body = html(
        &PORTAL
            .get(&app, "/partner", Some(&cookie))
            .await
            .expect(200),
    )
    .to_string();
    assert!(
        body.contains("value=\"https://go.example.com/r/alice-3\"")
            && body.contains("id=\"share-3\"")
            && !body.contains("id=\"share-4\""),
        "{body}"
    );
    assert!(
        body.contains("Your other links, their clicks and coupon codes are on the Links tab."),
        "{body}"
    );
    // Without the site's origin: the parameter, explained for the link that has no address.
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"allowed_origins": []})),
    )
    .await
    .expect(200);
    let body = html(&PORTAL.get(&app, &links, Some(&cookie)).await.expect(200)).to_string();
    assert!(
        body.contains("value=\"?aff=alice-summer\"")
            && body.contains(&format!("value=\"?aff={short}\"")),
        "{body}"
    );
    assert!(
        body.contains("A link without an address to share gives a parameter")
            && body.contains("added to the address of a page"),
        "{body}"
    );
}

on_both_backends!(a_partner_without_a_payout_email_is_told_payouts_leave_it_out);
async fn a_partner_without_a_payout_email_is_told_payouts_leave_it_out(app: TestApp) {
    let seed = app.seed_with(json!({"commission_hold_days": 0})).await;
    let p = seed.program_id;
    let cookie = accepted(&app, seed.partner_id, "alice@example.com").await;
    let notice = "You have no payout email, so payouts leave you out. <a href=\"/partner/settings\">Add a payout email in Settings</a>";
    let payouts = format!("/partner/programs/{p}/payouts");
    let r = PORTAL
        .get(&app, "/partner", Some(&cookie))
        .await
        .expect(200);
    assert!(html(&r).contains(notice), "{}", html(&r));
    let r = PORTAL.get(&app, &payouts, Some(&cookie)).await.expect(200);
    let body = html(&r);
    assert!(body.contains(notice), "{body}");
    assert!(
        !body.contains("paid with the program's next payout"),
        "not promised: {body}"
    );

    // With one: no notice, and the promise again.
    PORTAL
        .post(
            &app,
            "/partner/settings",
            Some(&cookie),
            "name=Alice&payout_method=paypal&payout_email=pay%40alice.example&password=partner+password",
        )
        .await
        .expect(303);
    let r = PORTAL
        .get(&app, "/partner", Some(&cookie))
        .await
        .expect(200);
    assert!(!html(&r).contains("no-payout-email"), "{}", html(&r));
    let r = PORTAL.get(&app, &payouts, Some(&cookie)).await.expect(200);
    assert!(!html(&r).contains("no-payout-email"));
    assert!(html(&r)
        .contains("No payouts yet. Approved commissions are paid with the program's next payout."));
}

on_both_backends!(a_link_counts_one_click_in_the_singular);
async fn a_link_counts_one_click_in_the_singular(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    app.click(&seed.short_link).await;
    app.admin(
        "POST",
        "/links",
        Some(json!({"program_id": p, "partner_id": seed.partner_id, "short_link": "alice-two"})),
    )
    .await
    .expect(201);
    let cookie = accepted(&app, seed.partner_id, "alice@example.com").await;
    let r = PORTAL
        .get(&app, &format!("/partner/programs/{p}/links"), Some(&cookie))
        .await
        .expect(200);
    let body = html(&r);
    assert!(body.contains("</span> 1 click · since"), "{body}");
    assert!(body.contains("</span> 0 clicks · since"), "{body}");
    assert!(!body.contains("1 clicks"), "{body}");
    // The owner's page of the partner says it the same way.
    app.member(
        seed.workspace_id,
        "owner@example.com",
        "owner password",
        "owner",
    )
    .await;
    let r = crate::common::pages::DASHBOARD
        .post(
            &app,
            "/app/login",
            None,
            "email=owner%40example.com&password=owner+password",
        )
        .await
        .expect(303);
    let owner = crate::common::pages::DASHBOARD.session(&r);
    let r = crate::common::pages::DASHBOARD
        .get(
            &app,
            &format!("/app/programs/{p}/partners/{}", seed.partner_id),
            Some(&owner),
        )
        .await
        .expect(200);
    let body = html(&r);
    assert!(
        body.contains("</span> 1 click · since") && body.contains("</span> 0 clicks · since"),
        "{body}"
    );
}
