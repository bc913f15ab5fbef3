//! Partner accounts and the partner API: invites, sign-in, applications, the signed-in
//! partner's links, commissions and payouts, and the isolation between partners and
//! between the kinds of credentials.

use std::sync::Arc;

use crate::common::*;
use reftrack::domain::time::ManualClock;
use serde_json::{json, Value};

const PASSWORD: &str = "partner password";
use reftrack::domain::time::DAY_MS;

/// A call to `/api/partner{path}` with a bearer token.
async fn partner(
    app: &TestApp,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Reply {
    let auth = format!("Bearer {token}");
    app.send(
        method,
        &format!("/api/partner{path}"),
        body,
        &[("authorization", &auth)],
    )
    .await
}

/// Signs `partner_id` in through an invite; its session token.
async fn signed_in(app: &TestApp, partner_id: i64, email: &str) -> String {
    let token = app.invite_token(partner_id, email).await;
    let r = app
        .post(
            "/api/partner/auth/accept-invite",
            json!({"token": token, "password": PASSWORD}),
        )
        .await
        .expect(200);
    r.body["token"].as_str().unwrap().to_string()
}

async fn partner_login(app: &TestApp, email: &str, password: &str) -> Reply {
    app.post(
        "/api/partner/auth/login",
        json!({"email": email, "password": password}),
    )
    .await
}

on_both_backends!(invite_accept_sign_in_and_out);
async fn invite_accept_sign_in_and_out(app: TestApp) {
    let seed = app.seed().await;
    // No email, no invite.
    let r = app
        .admin(
            "POST",
            &format!("/partners/{}/invite", seed.partner_id),
            None,
        )
        .await
        .expect(400);
    assert!(r.error().contains("no email"), "{}", r.error());
    let token = app.invite_token(seed.partner_id, "Alice@Example.com").await;
    assert!(token.starts_with("rti_"), "{token}");
    let r = app
        .admin("POST", "/partners/9999/invite", None)
        .await
        .expect(404);
    assert_eq!(r.error(), "Partner not found");

    // A weak password writes nothing: the invite still works afterwards.
    let r = app
        .post(
            "/api/partner/auth/accept-invite",
            json!({"token": token, "password": "short"}),
        )
        .await
        .expect(400);
    assert_eq!(r.error(), "password must be 8 to 1024 characters");
    partner_login(&app, "alice@example.com", "short")
        .await
        .expect(401);
    let r = app
        .post(
            "/api/partner/auth/accept-invite",
            json!({"token": "rti_nope", "password": PASSWORD}),
        )
        .await
        .expect(400);
    assert_eq!(r.error(), "This invite link is not valid");
    let r = app
        .post(
            "/api/partner/auth/accept-invite",
            json!({"token": token, "password": PASSWORD}),
        )
        .await
        .expect(200);
    let session = r.body["token"].as_str().unwrap().to_string();
    assert!(session.starts_with("rtp_"));
    let r = app
        .post(
            "/api/partner/auth/accept-invite",
            json!({"token": token, "password": PASSWORD}),
        )
        .await
        .expect(400);
    assert!(r.error().contains("already been used"), "{}", r.error());

    let me = partner(&app, &session, "GET", "/me", None)
        .await
        .expect(200);
    assert_eq!(me.body["id"], seed.partner_id);
    assert_eq!(me.body["email"], "alice@example.com");
    assert_eq!(
        me.body["programs"],
        json!([{"program_id": seed.program_id, "name": "Acme Partners", "status": "approved"}])
    );

    let r = partner(
        &app,
        &session,
        "PATCH",
        "/me",
        Some(json!({"payout_method": "paypal", "payout_email": "pay@alice.example", "current_password": PASSWORD})),
    )
    .await
    .expect(200);
    assert_eq!(r.body["payout_method"], "paypal");
    assert_eq!(r.body["payout_email"], "pay@alice.example");
    let r = partner(
        &app,
        &session,
        "PATCH",
        "/me",
        Some(json!({"payout_method": "gold"})),
    )
    .await
    .expect(400);
    assert!(r.error().contains("payout_method"), "{}", r.error());
    partner(
        &app,
        &session,
        "PATCH",
        "/me",
        Some(json!({"email": "x@y.z"})),
    )
    .await
    .expect(400);

    // Sign-in: one answer for an unknown email and a wrong password.
    let wrong = partner_login(&app, "alice@example.com", "wrong password")
        .await
        .expect(401);
    let unknown = partner_login(&app, "nobody@example.com", PASSWORD)
        .await
        .expect(401);
    assert_eq!(wrong.error(), unknown.error());
    let r = partner_login(&app, " ALICE@example.com ", PASSWORD)
        .await
        .expect(200);
    let second = r.body["token"].as_str().unwrap().to_string();
    partner(&app, &second, "POST", "/auth/logout", None)
        .await
        .expect(200);
    partner(&app, &second, "GET", "/me", None).await.expect(401);
    partner(&app, &session, "GET", "/me", None)
        .await
        .expect(200);

    // A new invite resets a forgotten password and ends every session.
    let again = app.invite_token(seed.partner_id, "alice@example.com").await;
    app.post(
        "/api/partner/auth/accept-invite",
        json!({"token": again, "password": "a new password"}),
    )
    .await
    .expect(200);
    partner(&app, &session, "GET", "/me", None)
        .await
        .expect(401);
    partner_login(&app, "alice@example.com", PASSWORD)
        .await
        .expect(401);
    partner_login(&app, "alice@example.com", "a new password")
        .await
        .expect(200);
}

on_both_backends!(only_the_newest_invite_sets_a_password);
async fn only_the_newest_invite_sets_a_password(app: TestApp) {
    let seed = app.seed().await;
    let accept = |token: String, password: &str| {
        app.post(
            "/api/partner/auth/accept-invite",
            json!({"token": token, "password": password}),
        )
    };
    // A new invite ends the older one; accepting ends any other.
    let first = app.invite_token(seed.partner_id, "alice@example.com").await;
    let second = app.invite_token(seed.partner_id, "alice@example.com").await;
    let r = accept(first, PASSWORD).await.expect(400);
    assert_eq!(r.error(), "This invite link has expired: ask for a new one");
    let session = accept(second, PASSWORD).await.expect(200).body["token"]
        .as_str()
        .unwrap()
        .to_string();
    // A password change ends the invites made before it.
    let third = app.invite_token(seed.partner_id, "alice@example.com").await;
    partner(
        &app,
        &session,
        "POST",
        "/me/password",
        Some(json!({"current_password": PASSWORD, "new_password": "another password"})),
    )
    .await
    .expect(200);
    accept(third, "taken over").await.expect(400);
    partner_login(&app, "alice@example.com", "another password")
        .await
        .expect(200);
    partner(&app, &session, "GET", "/me", None)
        .await
        .expect(200);
}

on_both_backends!(a_partner_of_two_workspaces_keeps_its_account_to_itself);
async fn a_partner_of_two_workspaces_keeps_its_account_to_itself(app: TestApp) {
    let a = app.seed().await;
    let b = app.seed_with(json!({"applications_open": true})).await;
    let session_of = |workspace_id: i64, email: &'static str| {
        let app = &app;
        async move {
            app.member(workspace_id, email, "owner password", "owner")
                .await;
            let r = app.login(email, "owner password").await.expect(200);
            format!("Bearer {}", r.body["token"].as_str().unwrap())
        }
    };
    let owner_a = session_of(a.workspace_id, "a@example.com").await;
    let owner_b = session_of(b.workspace_id, "b@example.com").await;
    let as_owner = |auth: &str, method: &str, path: String, body: Option<Value>| {
        let auth = auth.to_string();
        let method = method.to_string();
        let app = &app;
        async move {
            app.send(
                &method,
                &format!("/api/admin{path}"),
                body,
                &[("authorization", &auth)],
            )
            .await
        }
    };
    // Alice, A's partner with an account, joins B's program herself; a link A made
    // while she was only A's stops working then.
    let alice = signed_in(&app, a.partner_id, "alice@example.com").await;
    let earlier = as_owner(
        &owner_a,
        "POST",
        format!("/partners/{}/invite", a.partner_id),
        None,
    )
    .await
    .expect(201);
    let earlier = earlier.body["invite_url"]
        .as_str()
        .unwrap()
        .split("token=")
        .nth(1)
        .unwrap()
        .to_string();
    partner(
        &app,
        &alice,
        "POST",
        &format!("/apply/{}", b.program_id),
        Some(json!({})),
    )
    .await
    .expect(201);
    let r = app
        .post(
            "/api/partner/auth/accept-invite",
            json!({"token": earlier, "password": "taken over"}),
        )
        .await
        .expect(400);
    assert_eq!(r.error(), "This invite link has expired: ask for a new one");
    app.admin(
        "PATCH",
        &format!("/programs/{}/partners/{}", b.program_id, a.partner_id),
        Some(json!({"status": "approved"})),
    )
    .await
    .expect(200);
    partner(
        &app,
        &alice,
        "PATCH",
        "/me",
        Some(json!({"payout_method": "paypal", "payout_email": "pay@alice.example", "current_password": PASSWORD})),
    )
    .await
    .expect(200);

    // Neither workspace may hand out a new password or redirect her payouts and mail.
    let p = a.partner_id;
    for owner in [&owner_a, &owner_b] {
        let r = as_owner(owner, "POST", format!("/partners/{p}/invite"), None)
            .await
            .expect(403);
        assert!(
            r.error()
                .contains("also in programs of a workspace you do not manage"),
            "{}",
            r.error()
        );
        for change in [
            json!({"payout_email": "thief@example.com"}),
            json!({"payout_method": "wise"}),
            json!({"email": "thief@example.com"}),
            json!({"payout_email": null}),
        ] {
            as_owner(owner, "PATCH", format!("/partners/{p}"), Some(change))
                .await
                .expect(403);
        }
    }
    // Her name, and the same values again, are still theirs to send.
    as_owner(&owner_a, "PATCH", format!("/partners/{p}"), Some(json!({"name": "Alice A.", "payout_email": "pay@alice.example", "email": "alice@example.com"}))).await.expect(200);
    let me = partner(&app, &alice, "GET", "/me", None).await.expect(200);
    assert_eq!(
        (me.body["name"].as_str(), me.body["payout_email"].as_str()),
        (Some("Alice A."), Some("pay@alice.example"))
    );
    let now = chrono::Utc::now().timestamp_millis();
    assert_eq!(app.count(&format!("SELECT COUNT(*) FROM partner_invites WHERE partner_id = {p} AND used_at IS NULL AND expires_at > {now}")).await, 0, "no live invite");

    // The dashboard's page of her offers neither, and its form keeps them.
    let cookie = {
        let r = pages::DASHBOARD
            .post(
                &app,
                "/app/login",
                None,
                "email=a%40example.com&password=owner+password",
            )
            .await
            .expect(303);
        pages::DASHBOARD.session(&r)
    };
    let page = format!("/app/programs/{}/partners/{p}", a.program_id);
    let r = pages::DASHBOARD
        .get(&app, &page, Some(&cookie))
        .await
        .expect(200);
    let body = pages::html(&r);
    assert!(
        body.contains("its email, payout details and password are its own to change"),
        "{body}"
    );
    assert!(
        !body.contains("Make an invite link") && !body.contains("name=\"payout_email\""),
        "{body}"
    );
    pages::DASHBOARD
        .post(&app, &page, Some(&cookie), "name=Alice")
        .await
        .expect(303);
    let me = partner(&app, &alice, "GET", "/me", None).await.expect(200);
    assert_eq!(
        (
            me.body["name"].as_str(),
            me.body["payout_email"].as_str(),
            me.body["payout_method"].as_str()
        ),
        (Some("Alice"), Some("pay@alice.example"), Some("paypal"))
    );
    pages::DASHBOARD
        .post(&app, &format!("{page}/invite"), Some(&cookie), "")
        .await
        .expect(403);

    // The operator still may; so may the owner of both workspaces.
    app.admin(
        "PATCH",
        &format!("/partners/{p}"),
        Some(json!({"payout_email": "new@alice.example"})),
    )
    .await
    .expect(200);
    let both_id = app
        .admin(
            "POST",
            "/users",
            Some(json!({"email": "both@example.com", "password": "owner password"})),
        )
        .await
        .expect(201)
        .body["id"]
        .as_i64()
        .unwrap();
    for w in [a.workspace_id, b.workspace_id] {
        app.admin(
            "POST",
            &format!("/workspaces/{w}/members"),
            Some(json!({"user_id": both_id, "role": "admin"})),
        )
        .await
        .expect(201);
    }
    let r = app
        .login("both@example.com", "owner password")
        .await
        .expect(200);
    let both = format!("Bearer {}", r.body["token"].as_str().unwrap());
    as_owner(&both, "POST", format!("/partners/{p}/invite"), None)
        .await
        .expect(201);
}

on_both_backends!(password_change_ends_the_other_sessions);
async fn password_change_ends_the_other_sessions(app: TestApp) {
    let seed = app.seed().await;
    let first = signed_in(&app, seed.partner_id, "alice@example.com").await;
    let r = partner_login(&app, "alice@example.com", PASSWORD)
        .await
        .expect(200);
    let second = r.body["token"].as_str().unwrap().to_string();
    let r = partner(
        &app,
        &first,
        "POST",
        "/me/password",
        Some(json!({"current_password": "not it", "new_password": "another password"})),
    )
    .await
    .expect(400);
    assert_eq!(r.error(), "current_password is not the current password");
    partner(
        &app,
        &first,
        "POST",
        "/me/password",
        Some(json!({"current_password": PASSWORD, "new_password": "tiny"})),
    )
    .await
    .expect(400);
    partner(
        &app,
        &first,
        "POST",
        "/me/password",
        Some(json!({"current_password": PASSWORD, "new_password": "another password"})),
    )
    .await
    .expect(200);
    partner(&app, &first, "GET", "/me", None).await.expect(200);
    partner(&app, &second, "GET", "/me", None).await.expect(401);
    partner_login(&app, "alice@example.com", "another password")
        .await
        .expect(200);
}

on_both_backends!(applications_and_partner_links);
async fn applications_and_partner_links(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let apply = json!({"name": "Bob Builder", "email": "Bob@Example.com", "password": PASSWORD, "website": "https://bob.example", "message": "Hi"});
    let r = app
        .post(&format!("/api/partner/apply/{p}"), apply.clone())
        .await
        .expect(404);
    assert_eq!(r.error(), "Program not found");
    app.post("/api/partner/apply/9999", apply.clone())
        .await
        .expect(404);
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"applications_open": true})),
    )
    .await
    .expect(200);
    let before = app.count("SELECT COUNT(*) FROM partners").await;
    for (bad, text) in [
        (
            json!({"name": "Bob", "email": "not-an-email", "password": PASSWORD}),
            "email must be an email address",
        ),
        (
            json!({"name": "Bob", "email": "bob@example.com", "password": "short"}),
            "password must be 8 to 1024 characters",
        ),
        (
            json!({"name": "", "email": "bob@example.com", "password": PASSWORD}),
            "name must be 1 to 200 characters",
        ),
        (
            json!({"name": "Bob", "email": "bob@example.com", "password": PASSWORD, "message": "x".repeat(2001)}),
            "message must be at most 2000 characters",
        ),
    ] {
        let r = app
            .post(&format!("/api/partner/apply/{p}"), bad)
            .await
            .expect(400);
        assert_eq!(r.error(), text);
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM partners").await,
        before,
        "nothing written"
    );

    let r = app
        .post(&format!("/api/partner/apply/{p}"), apply.clone())
        .await
        .expect(201);
    assert_eq!(r.body["status"], "pending");
    let bob = r.body["partner_id"].as_i64().unwrap();
    let r = app
        .post(&format!("/api/partner/apply/{p}"), apply.clone())
        .await
        .expect(409);
    assert!(r.error().contains("already exists"), "{}", r.error());
    let row = app.count(&format!("SELECT COUNT(*) FROM partner_programs WHERE partner_id = {bob} AND website = 'https://bob.example' AND message = 'Hi'")).await;
    assert_eq!(row, 1);

    // Pending: signs in, sees its standing and nothing of the program.
    let session = partner_login(&app, "bob@example.com", PASSWORD)
        .await
        .expect(200)
        .body["token"]
        .as_str()
        .unwrap()
        .to_string();
    let me = partner(&app, &session, "GET", "/me", None)
        .await
        .expect(200);
    assert_eq!(me.body["programs"][0]["status"], "pending");
    for path in ["links", "commissions", "payouts", "performance"] {
        let r = partner(
            &app,
            &session,
            "GET",
            &format!("/programs/{p}/{path}"),
            None,
        )
        .await
        .expect(403);
        assert_eq!(r.error(), "Your application to this program is pending");
    }
    partner(
        &app,
        &session,
        "POST",
        &format!("/programs/{p}/links"),
        None,
    )
    .await
    .expect(403);

    // The owner's list shows the application; approval opens the program.
    let list = app
        .admin(
            "GET",
            &format!("/programs/{p}/partners?status=pending"),
            None,
        )
        .await
        .expect(200);
    assert_eq!(list.body["data"][0]["partner_id"], bob);
    app.admin(
        "PATCH",
        &format!("/programs/{p}/partners/{bob}"),
        Some(json!({"status": "approved"})),
    )
    .await
    .expect(200);
    let r = partner(&app, &session, "GET", &format!("/programs/{p}/links"), None)
        .await
        .expect(200);
    assert_eq!(r.body["data"], json!([]));
    let r = partner(
        &app,
        &session,
        "POST",
        &format!("/programs/{p}/links"),
        None,
    )
    .await
    .expect(201);
    let made = r.body["short_link"].as_str().unwrap().to_string();
    assert!(
        made.starts_with(&format!("{}-", me.body["code"].as_str().unwrap())),
        "{made}"
    );
    assert_eq!(r.body["partner_id"], bob);
    let r = partner(
        &app,
        &session,
        "POST",
        &format!("/programs/{p}/links"),
        Some(json!({"short_link": seed.short_link})),
    )
    .await
    .expect(409);
    assert_eq!(r.error(), "A link with this short_link already exists");
    partner(
        &app,
        &session,
        "POST",
        &format!("/programs/{p}/links"),
        Some(json!({"short_link": "has space"})),
    )
    .await
    .expect(400);
    partner(
        &app,
        &session,
        "POST",
        &format!("/programs/{p}/links"),
        Some(json!({"short_link": "bob-own"})),
    )
    .await
    .expect(201);
    let r = partner(&app, &session, "GET", &format!("/programs/{p}/links"), None)
        .await
        .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 2);
    // A click through the partner's own link counts for it.
    app.click("bob-own").await;
    let list = app
        .admin(
            "GET",
            &format!("/programs/{p}/partners?status=approved"),
            None,
        )
        .await
        .expect(200);
    let row = list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["partner_id"] == bob)
        .unwrap()
        .clone();
    assert_eq!(row["clicks"], 1);
    // The 20-link bound, and programs that make the links themselves.
    for n in 2..19 {
        partner(
            &app,
            &session,
            "POST",
            &format!("/programs/{p}/links"),
            Some(json!({"short_link": format!("bob-{n}")})),
        )
        .await
        .expect(201);
    }
    // With 19, links asked for at once make one more, not one each.
    let links = format!("/programs/{p}/links");
    let asked = (0..8).map(|_| partner(&app, &session, "POST", &links, None));
    let mut made = 0;
    for r in futures::future::join_all(asked).await {
        if r.status == 201 {
            made += 1;
        } else {
            assert_eq!(r.status, 409);
            assert!(r.error().contains("20 active links"), "{}", r.error());
        }
    }
    assert_eq!(made, 1);
    let r = partner(
        &app,
        &session,
        "POST",
        &format!("/programs/{p}/links"),
        None,
    )
    .await
    .expect(409);
    assert!(r.error().contains("20 active links"), "{}", r.error());
    let active = app
        .count(&format!(
            "SELECT COUNT(*) FROM referral_links WHERE partner_id = {bob} AND status = 'active'"
        ))
        .await;
    assert_eq!(active, 20);
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"partner_links_allowed": false})),
    )
    .await
    .expect(200);
    let r = partner(
        &app,
        &session,
        "POST",
        &format!("/programs/{p}/links"),
        None,
    )
    .await
    .expect(403);
    assert_eq!(r.error(), "This program does not let partners create links");

    // A signed-in partner applies to another program with its session alone.
    let other = app.seed_with(json!({"applications_open": true})).await;
    let q = other.program_id;
    let r = partner(
        &app,
        &session,
        "POST",
        &format!("/apply/{q}"),
        Some(json!({"message": "Me too"})),
    )
    .await
    .expect(201);
    assert_eq!(r.body["partner_id"], bob);
    let r = partner(&app, &session, "POST", &format!("/apply/{q}"), None)
        .await
        .expect(409);
    assert_eq!(
        r.error(),
        "You have already applied to or joined this program"
    );
    partner(
        &app,
        "rtp_not_a_session",
        "POST",
        &format!("/apply/{q}"),
        None,
    )
    .await
    .expect(401);
    // Rejected and banned partners are told so.
    app.admin(
        "PATCH",
        &format!("/programs/{q}/partners/{bob}"),
        Some(json!({"status": "rejected"})),
    )
    .await
    .expect(200);
    let r = partner(&app, &session, "GET", &format!("/programs/{q}/links"), None)
        .await
        .expect(403);
    assert_eq!(
        r.error(),
        "Your application to this program was not accepted"
    );
    app.admin(
        "PATCH",
        &format!("/programs/{p}/partners/{bob}"),
        Some(json!({"status": "banned"})),
    )
    .await
    .expect(200);
    let r = partner(
        &app,
        &session,
        "GET",
        &format!("/programs/{p}/commissions"),
        None,
    )
    .await
    .expect(403);
    assert_eq!(r.error(), "You can no longer promote this program");
}

on_both_backends!(an_applicant_cannot_take_the_email_of_a_partner_a_program_added);
async fn an_applicant_cannot_take_the_email_of_a_partner_a_program_added(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"applications_open": true})),
    )
    .await
    .expect(200);
    let apply = |email: &str| json!({"name": "Mallory", "email": email, "password": PASSWORD});
    let refused = "A program has added a partner with this email that has not signed up yet: \
                       accept the invite you were sent (or ask the program for one), then apply signed in";
    // Added by this workspace, never invited; then a partner of another workspace
    // holding a live invite.
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"email": "Carol@Example.com"})),
    )
    .await
    .expect(200);
    let other = app.seed().await;
    app.invite(other.partner_id, "dave@example.com").await;
    let before = app.count("SELECT COUNT(*) FROM partners").await;
    for email in ["carol@example.com", "DAVE@example.com"] {
        let r = app
            .post(&format!("/api/partner/apply/{p}"), apply(email))
            .await
            .expect(409);
        assert_eq!(r.error(), refused);
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM partners").await,
        before,
        "nothing written"
    );
    // Their invites still work, and then the email has an account.
    signed_in(&app, seed.partner_id, "carol@example.com").await;
    let r = app
        .post(
            &format!("/api/partner/apply/{p}"),
            apply("carol@example.com"),
        )
        .await
        .expect(409);
    assert_eq!(
        r.error(),
        "A partner account with this email already exists: sign in to apply"
    );
    let token = app.invite_token(other.partner_id, "dave@example.com").await;
    app.post(
        "/api/partner/auth/accept-invite",
        json!({"token": token, "password": PASSWORD}),
    )
    .await
    .expect(200);
    // A partner another workspace added without inviting it does not hold the email.
    let third = app.seed().await;
    app.admin(
        "PATCH",
        &format!("/partners/{}", third.partner_id),
        Some(json!({"email": "erin@example.com"})),
    )
    .await
    .expect(200);
    app.post(
        &format!("/api/partner/apply/{p}"),
        apply("erin@example.com"),
    )
    .await
    .expect(201);
}

on_both_backends!(a_partner_sees_its_own_commissions_and_payouts);
async fn a_partner_sees_its_own_commissions_and_payouts(app: TestApp) {
    let seed = app
        .seed_with(json!({"commission_hold_days": 0, "min_payout_cents": 100}))
        .await;
    let p = seed.program_id;
    let (carol, carol_link) = app.add_partner(&seed, "carol-own").await;
    for (n, link) in [
        (1, &seed.short_link),
        (2, &carol_link),
        (3, &seed.short_link),
    ] {
        let click_id = app.click(link).await;
        app.post_auth("/api/v1/track/sale", &seed.api_token, json!({"transaction_id": format!("t{n}"), "amount_cents": 10000 * n, "click_id": click_id}))
            .await
            .expect(200);
    }
    let alice = signed_in(&app, seed.partner_id, "alice@example.com").await;
    let carol_session = signed_in(&app, carol, "carol@example.com").await;
    // Each partner's figures count its own links only.
    let perf = partner(
        &app,
        &alice,
        "GET",
        &format!("/programs/{p}/performance?period=7d"),
        None,
    )
    .await
    .expect(200);
    let m = &perf.body["metrics"];
    assert_eq!(
        (
            m["totalClicks"].as_i64(),
            m["totalSales"].as_i64(),
            m["totalConversions"].as_i64()
        ),
        (Some(2), Some(2), Some(2))
    );
    assert_eq!(m["totalRevenue"], 400.0);
    assert_eq!(m["totalPartnersCommission"], 80.0);
    assert_eq!(m["totalPartners"], 0);
    assert_eq!(perf.body["data"].as_array().unwrap().len(), 7);
    assert_eq!(perf.body["data"][6]["clicks"], 2);
    let perf = partner(
        &app,
        &carol_session,
        "GET",
        &format!("/programs/{p}/performance?period=all"),
        None,
    )
    .await
    .expect(200);
    assert_eq!(perf.body["metrics"]["totalClicks"], 1);
    assert_eq!(perf.body["metrics"]["totalRevenue"], 200.0);
    let r = partner(
        &app,
        &alice,
        "GET",
        &format!("/programs/{p}/performance?period=1y"),
        None,
    )
    .await
    .expect(400);
    assert!(r.error().contains("period"), "{}", r.error());
    let r = partner(
        &app,
        &alice,
        "GET",
        &format!("/programs/{p}/commissions?partner_id={carol}"),
        None,
    )
    .await
    .expect(200);
    let rows = r.body["data"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|c| c["partner_id"] == seed.partner_id));
    assert_eq!(rows[0]["transaction_id"], "t3");
    let r = partner(
        &app,
        &alice,
        "GET",
        &format!("/programs/{p}/commissions?limit=1"),
        None,
    )
    .await
    .expect(200);
    let cursor = r.body["next_cursor"].as_str().unwrap().to_string();
    let r = partner(
        &app,
        &alice,
        "GET",
        &format!("/programs/{p}/commissions?limit=1&cursor={cursor}"),
        None,
    )
    .await
    .expect(200);
    assert_eq!(r.body["data"][0]["transaction_id"], "t1");
    partner(
        &app,
        &alice,
        "GET",
        &format!("/programs/{p}/commissions?status=nope"),
        None,
    )
    .await
    .expect(400);
    let csv = partner(
        &app,
        &alice,
        "GET",
        &format!("/programs/{p}/commissions?format=csv"),
        None,
    )
    .await
    .expect(200);
    crate::common::assert_download(&csv);
    let mut reader = csv::Reader::from_reader(csv.body.as_str().unwrap().as_bytes());
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 2);
    let r = partner(
        &app,
        &carol_session,
        "GET",
        &format!("/programs/{p}/commissions"),
        None,
    )
    .await
    .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 1);

    // A payout, seen by the partners it pays, each its own part.
    for (id, email) in [
        (seed.partner_id, "alice-pay@example.com"),
        (carol, "carol-pay@example.com"),
    ] {
        app.admin(
            "PATCH",
            &format!("/partners/{id}"),
            Some(json!({"payout_email": email})),
        )
        .await
        .expect(200);
    }
    let payout = app
        .admin("POST", &format!("/programs/{p}/payouts"), None)
        .await
        .expect(201);
    let payout_id = payout.body["id"].as_i64().unwrap();
    let r = partner(&app, &alice, "GET", &format!("/programs/{p}/payouts"), None)
        .await
        .expect(200);
    let items = r.body["data"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["payout_id"], payout_id);
    assert_eq!(items[0]["status"], "pending");
    assert_eq!(items[0]["commission_count"], 2);
    assert_eq!(items[0]["paid_at"], Value::Null);
    let alice_cents = items[0]["amount_cents"].as_i64().unwrap();
    let r = partner(
        &app,
        &carol_session,
        "GET",
        &format!("/programs/{p}/payouts"),
        None,
    )
    .await
    .expect(200);
    let carol_cents = r.body["data"][0]["amount_cents"].as_i64().unwrap();
    assert_eq!(
        alice_cents + carol_cents,
        payout.body["total_cents"].as_i64().unwrap()
    );
    app.admin(
        "POST",
        &format!("/payouts/{payout_id}/mark-paid"),
        Some(json!({"reference": "batch-1"})),
    )
    .await
    .expect(200);
    let r = partner(&app, &alice, "GET", &format!("/programs/{p}/payouts"), None)
        .await
        .expect(200);
    assert_eq!(r.body["data"][0]["status"], "paid");
    assert!(r.body["data"][0]["paid_at"].is_string());
    let r = partner(
        &app,
        &alice,
        "GET",
        &format!("/programs/{p}/commissions?status=paid"),
        None,
    )
    .await
    .expect(200);
    assert_eq!(r.body["data"].as_array().unwrap().len(), 2);
}

on_both_backends!(partners_see_nothing_of_one_another_and_credentials_do_not_cross);
async fn partners_see_nothing_of_one_another_and_credentials_do_not_cross(app: TestApp) {
    let seed = app.seed().await;
    let other = app.seed().await;
    let alice = signed_in(&app, seed.partner_id, "alice@example.com").await;
    let owner = {
        app.member(
            seed.workspace_id,
            "owner@example.com",
            "owner password",
            "owner",
        )
        .await;
        app.login("owner@example.com", "owner password")
            .await
            .expect(200)
            .body["token"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let calls = |p: i64| {
        vec![
            ("GET", format!("/programs/{p}/links"), None),
            (
                "POST",
                format!("/programs/{p}/links"),
                Some(json!({"short_link": format!("try-{p}")})),
            ),
            ("GET", format!("/programs/{p}/commissions"), None),
            ("GET", format!("/programs/{p}/commissions?format=csv"), None),
            ("GET", format!("/programs/{p}/payouts"), None),
            ("GET", format!("/programs/{p}/performance"), None),
        ]
    };
    // Another program (Alice is not in it), and one that does not exist: 404 alike.
    for p in [other.program_id, 9999] {
        for (method, path, body) in calls(p) {
            let r = partner(&app, &alice, method, &path, body).await;
            assert_eq!(r.status, 404, "{method} {path}: {}", r.body);
            assert_eq!(r.error(), "Program not found");
        }
    }
    // Dashboard sessions and the admin token are not partner sessions, nor the reverse.
    let mut every = calls(seed.program_id);
    every.extend([
        ("GET", "/me".to_string(), None),
        ("PATCH", "/me".to_string(), Some(json!({"name": "X"}))),
        (
            "POST",
            "/me/password".to_string(),
            Some(json!({"current_password": PASSWORD, "new_password": "whatever123"})),
        ),
        ("POST", "/auth/logout".to_string(), None),
    ]);
    for token in [owner.as_str(), ADMIN_TOKEN] {
        for (method, path, body) in &every {
            let r = partner(&app, token, method, path, body.clone()).await;
            assert_eq!(
                r.status,
                401,
                "{method} {path} with {}: {}",
                &token[..4],
                r.body
            );
        }
        partner(
            &app,
            token,
            "POST",
            &format!("/apply/{}", seed.program_id),
            None,
        )
        .await
        .expect(401);
    }
    for (method, path) in [
        ("GET", "/api/admin/programs".to_string()),
        (
            "GET",
            format!("/api/tracking/performance/{}", seed.program_id),
        ),
        ("GET", "/api/auth/me".to_string()),
    ] {
        let auth = format!("Bearer {alice}");
        let r = app
            .send(method, &path, None, &[("authorization", &auth)])
            .await;
        assert_eq!(r.status, 401, "{path}: {}", r.body);
    }
    // A dashboard session of another workspace cannot invite this workspace's partner.
    let stranger = {
        app.member(
            other.workspace_id,
            "stranger@example.com",
            "owner password",
            "owner",
        )
        .await;
        app.login("stranger@example.com", "owner password")
            .await
            .expect(200)
            .body["token"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let auth = format!("Bearer {stranger}");
    let r = app
        .send(
            "POST",
            &format!("/api/admin/partners/{}/invite", seed.partner_id),
            None,
            &[("authorization", &auth)],
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.body);
}

/// An invite works for 7 days by the service's clock; sessions for 7 days from sign-in.
#[tokio::test]
async fn invites_and_partner_sessions_expire_by_the_services_clock() {
    let clock = Arc::new(ManualClock::at(1_780_000_000_000));
    let app = TestApp::sqlite().await.with_clock(clock.clone());
    let seed = app.seed().await;
    let token = app.invite_token(seed.partner_id, "alice@example.com").await;
    clock.advance(7 * DAY_MS);
    let r = app
        .post(
            "/api/partner/auth/accept-invite",
            json!({"token": token, "password": PASSWORD}),
        )
        .await
        .expect(400);
    assert_eq!(r.error(), "This invite link has expired: ask for a new one");
    let session = signed_in(&app, seed.partner_id, "alice@example.com").await;
    clock.advance(7 * DAY_MS - 1);
    partner(&app, &session, "GET", "/me", None)
        .await
        .expect(200);
    clock.advance(1);
    partner(&app, &session, "GET", "/me", None)
        .await
        .expect(401);
}

/// Partner sign-in is throttled per account like dashboard sign-in, apart from it.
#[tokio::test]
async fn failed_partner_logins_lock_the_account_out() {
    let app = TestApp::sqlite().await;
    let seed = app.seed().await;
    signed_in(&app, seed.partner_id, "alice@example.com").await;
    for _ in 0..5 {
        partner_login(&app, "alice@example.com", "guess")
            .await
            .expect(401);
    }
    let r = partner_login(&app, "alice@example.com", PASSWORD).await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.headers["retry-after"], "1");
}

on_both_backends!(invite_links_name_the_servers_address_never_the_requests_host);
/// The invite link names REFTRACK_PUBLIC_URL, else the confirmed address, else the
/// listening one; never the host a request names.
async fn invite_links_name_the_servers_address_never_the_requests_host(app: TestApp) {
    let seed = app.seed().await;
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"email": "a@example.com"})),
    )
    .await
    .expect(200);
    let p = seed.partner_id;
    let evil = [
        ("host", "evil.example"),
        ("x-forwarded-proto", "https"),
        ("x-forwarded-host", "evil.example"),
    ];
    let app = app.listening_on("0.0.0.0:8080");
    let url = invite_url(&app, p, &evil).await;
    assert!(
        url.starts_with("http://0.0.0.0:8080/partner/invite?token=rti_"),
        "{url}"
    );
    // The address confirmed at the first run or in the settings.
    app.store
        .set_setting("public_url", "https://track.example.com")
        .await
        .unwrap();
    let app = app.listening_on("0.0.0.0:8080");
    let url = invite_url(&app, p, &evil).await;
    assert!(
        url.starts_with("https://track.example.com/partner/invite?token=rti_"),
        "{url}"
    );
    // REFTRACK_PUBLIC_URL wins over it.
    let app = app.with_public_url("https://partners.example.com/");
    let url = invite_url(&app, p, &evil).await;
    assert!(
        url.starts_with("https://partners.example.com/partner/invite?token=rti_"),
        "{url}"
    );
}

/// The invite URL the admin API answers for `partner_id`, asked with `headers` too.
async fn invite_url(app: &TestApp, partner_id: i64, headers: &[(&str, &str)]) -> String {
    let auth = format!("Bearer {ADMIN_TOKEN}");
    let mut all = vec![("authorization", auth.as_str())];
    all.extend_from_slice(headers);
    let path = format!("/api/admin/partners/{partner_id}/invite");
    let r = app.send("POST", &path, None, &all).await.expect(201);
    r.body["invite_url"].as_str().unwrap().to_string()
}

/// The partner's links in `program_id`, asked of the server as `host`: the page's rows.
async fn links_via(app: &TestApp, token: &str, program_id: i64, host: &str) -> Vec<Value> {
    let auth = format!("Bearer {token}");
    let path = format!("/api/partner/programs/{program_id}/links");
    let r = app
        .send(
            "GET",
            &path,
            None,
            &[("authorization", &auth), ("host", host)],
        )
        .await
        .expect(200);
    r.body["data"].as_array().unwrap().clone()
}

/// The row of `short_link` among `rows`.
fn row<'a>(rows: &'a [Value], short_link: &str) -> &'a Value {
    rows.iter()
        .find(|l| l["short_link"] == short_link)
        .unwrap_or_else(|| panic!("no {short_link} in {rows:?}"))
}

const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";

on_both_backends!(a_partners_links_carry_their_redirect_address_and_coupon_codes);
async fn a_partners_links_carry_their_redirect_address_and_coupon_codes(app: TestApp) {
    let seed = app.seed().await;
    let p = seed.program_id;
    let short = seed.short_link.clone();
    let alice = signed_in(&app, seed.partner_id, "alice@example.com").await;
    let host = "track.example.com";

    // No destination anywhere: no redirect address; every field of a link is still there.
    let rows = links_via(&app, &alice, p, host).await;
    let first = row(&rows, &short);
    assert!(first["redirect_url"].is_null(), "{first}");
    assert_eq!(first["coupon_codes"], json!([]));
    for field in [
        "id",
        "program_id",
        "partner_id",
        "short_link",
        "status",
        "destination_url",
        "clicks",
        "last_clicked",
        "created_at",
    ] {
        assert!(first.get(field).is_some(), "{field} missing from {first}");
    }

    // The program's destination: the server's address names it, not the request's host
    // (no address is confirmed here: the listening one, `localhost` in these tests).
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"destination_url": "https://shop.example/"})),
    )
    .await
    .expect(200);
    let rows = links_via(&app, &alice, p, host).await;
    assert_eq!(
        row(&rows, &short)["redirect_url"],
        format!("http://localhost/r/{short}")
    );
    // A made link is answered with its address too, its short link as one path segment,
    // and the address leads where the redirect route sends visitors.
    let auth = format!("Bearer {alice}");
    let made = app
        .send(
            "POST",
            &format!("/api/partner/programs/{p}/links"),
            Some(json!({"short_link": "alice/pod?1"})),
            &[("authorization", &auth), ("host", host)],
        )
        .await
        .expect(201);
    assert_eq!(
        made.body["redirect_url"],
        "http://localhost/r/alice%2Fpod%3F1"
    );
    let path = made.body["redirect_url"]
        .as_str()
        .unwrap()
        .trim_start_matches("http://localhost")
        .to_string();
    let r = app
        .send("GET", &path, None, &[("user-agent", BROWSER)])
        .await
        .expect(302);
    let location = r.headers["location"].to_str().unwrap();
    assert!(
        location.starts_with("https://shop.example/?aff=alice"),
        "{location}"
    );
    assert!(location.contains("rt_click=cust_"), "{location}");

    // Only the link's own destination: that link has an address, the other has none.
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"destination_url": null})),
    )
    .await
    .expect(200);
    let made_id = made.body["id"].as_i64().unwrap();
    app.admin(
        "PATCH",
        &format!("/links/{made_id}"),
        Some(json!({"destination_url": "https://shop.example/podcast"})),
    )
    .await
    .expect(200);
    let rows = links_via(&app, &alice, p, host).await;
    assert_eq!(
        row(&rows, "alice/pod?1")["redirect_url"],
        "http://localhost/r/alice%2Fpod%3F1"
    );
    assert!(row(&rows, &short)["redirect_url"].is_null());
    // An inactive link has none, destination or not.
    app.admin(
        "PATCH",
        &format!("/links/{made_id}"),
        Some(json!({"status": "inactive"})),
    )
    .await
    .expect(200);
    let rows = links_via(&app, &alice, p, host).await;
    assert!(row(&rows, "alice/pod?1")["redirect_url"].is_null());
    app.send("GET", &path, None, &[("user-agent", BROWSER)])
        .await
        .expect(404);

    // Coupon codes: the active ones, oldest first, on every page of the list.
    let link = app.link_id(&short).await;
    for code in ["SUMMER10", "WINTER5"] {
        app.admin(
            "POST",
            &format!("/links/{link}/coupons"),
            Some(json!({"code": code})),
        )
        .await
        .expect(201);
    }
    let winter = app
        .admin("GET", &format!("/links/{link}/coupons"), None)
        .await
        .expect(200)
        .body["data"][0]["id"]
        .as_i64()
        .unwrap();
    app.admin("DELETE", &format!("/links/{link}/coupons/{winter}"), None)
        .await
        .expect(200);
    app.admin(
        "POST",
        &format!("/links/{link}/coupons"),
        Some(json!({"code": "Autumn"})),
    )
    .await
    .expect(201);
    app.admin(
        "POST",
        &format!("/links/{made_id}/coupons"),
        Some(json!({"code": "POD"})),
    )
    .await
    .expect(201);
    let rows = links_via(&app, &alice, p, host).await;
    assert_eq!(
        row(&rows, &short)["coupon_codes"],
        json!(["SUMMER10", "Autumn"])
    );
    assert_eq!(row(&rows, "alice/pod?1")["coupon_codes"], json!(["POD"]));
    let page = partner(
        &app,
        &alice,
        "GET",
        &format!("/programs/{p}/links?limit=1"),
        None,
    )
    .await
    .expect(200);
    assert_eq!(page.body["data"][0]["coupon_codes"], json!(["POD"]));
    let cursor = page.body["next_cursor"].as_str().unwrap().to_string();
    let page = partner(
        &app,
        &alice,
        "GET",
        &format!("/programs/{p}/links?limit=1&cursor={cursor}"),
        None,
    )
    .await
    .expect(200);
    assert_eq!(
        page.body["data"][0]["coupon_codes"],
        json!(["SUMMER10", "Autumn"])
    );

    // REFTRACK_PUBLIC_URL names the server.
    app.admin(
        "PATCH",
        &format!("/programs/{p}"),
        Some(json!({"destination_url": "https://shop.example/"})),
    )
    .await
    .expect(200);
    let app = app.with_public_url("https://go.example.com/");
    let rows = links_via(&app, &alice, p, host).await;
    assert_eq!(
        row(&rows, &short)["redirect_url"],
        format!("https://go.example.com/r/{short}")
    );

    // Another partner's program, however it is set up, stays a 404.
    let other = app
        .seed_with(json!({"destination_url": "https://other.example/"}))
        .await;
    let link = app.link_id(&other.short_link).await;
    app.admin(
        "POST",
        &format!("/links/{link}/coupons"),
        Some(json!({"code": "THEIRS"})),
    )
    .await
    .expect(201);
    let r = partner(
        &app,
        &alice,
        "GET",
        &format!("/programs/{}/links", other.program_id),
        None,
    )
    .await
    .expect(404);
    assert_eq!(r.error(), "Program not found");
}
