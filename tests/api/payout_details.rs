//! Where a partner's money goes: a change of its payout method or payout email needs its
//! password (403 without it or when wrong, and for a partner banned from a program), is
//! mailed to it (and to the old payout email), counts toward its lock-out, and is shown to
//! the owner, whether the partner or an owner made it.

use crate::common::pages::{html, location, DASHBOARD, PORTAL};
use crate::common::smtp::{FakeSmtp, Received};
use crate::common::*;
use serde_json::{json, Value};

const PASSWORD: &str = "partner password";
const FROM: &str = "Acme Partners <partners@acme.example>";

/// A partner session of the seed's partner, signed up as `alice@example.com`.
async fn alice(app: &TestApp, seed: &Seed) -> String {
    let token = app.invite_token(seed.partner_id, "alice@example.com").await;
    let r = app
        .post(
            "/api/partner/auth/accept-invite",
            json!({"token": token, "password": PASSWORD}),
        )
        .await
        .expect(200);
    format!("Bearer {}", r.body["token"].as_str().unwrap())
}

/// The subject and plain-text body of a received mail.
fn read(mail: &Received) -> (String, String) {
    let parsed = mail_parser::MessageParser::default()
        .parse(mail.data.as_bytes())
        .expect("a parseable message");
    (
        parsed.subject().unwrap_or_default().to_string(),
        parsed.body_text(0).expect("a text body").to_string(),
    )
}

/// The partner `id` as the management API lists it.
async fn record(app: &TestApp, id: i64) -> Value {
    let r = app
        .admin("GET", "/partners?limit=100", None)
        .await
        .expect(200);
    r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == id)
        .cloned()
        .expect("the partner is listed")
}

async fn patch_me(app: &TestApp, auth: &str, body: Value) -> Reply {
    app.send(
        "PATCH",
        "/api/partner/me",
        Some(body),
        &[("authorization", auth)],
    )
    .await
}

on_both_backends!(payout_details_change_only_with_the_password);
async fn payout_details_change_only_with_the_password(app: TestApp) {
    let seed = app.seed().await;
    let auth = alice(&app, &seed).await;
    let change = json!({"payout_method": "paypal", "payout_email": "pay@alice.example"});

    let r = patch_me(&app, &auth, change.clone()).await.expect(403);
    assert_eq!(
        r.error(),
        "current_password is required to change the payout method or payout email"
    );
    let mut wrong = change.clone();
    wrong["current_password"] = json!("guess");
    let r = patch_me(&app, &auth, wrong).await.expect(403);
    assert_eq!(r.error(), "current_password is not the current password");
    for body in [
        json!({"payout_email": "pay@alice.example"}),
        json!({"payout_method": "wise", "current_password": ""}),
    ] {
        patch_me(&app, &auth, body).await.expect(403);
    }
    let partner = record(&app, seed.partner_id).await;
    assert_eq!(partner["payout_email"], Value::Null, "nothing changed");
    assert_eq!(partner["payout_details_changed_at"], Value::Null);

    // Her name needs no password; neither do the same payout details sent again.
    patch_me(&app, &auth, json!({"name": "Alice A."}))
        .await
        .expect(200);
    let mut right = change.clone();
    right["current_password"] = json!(PASSWORD);
    let r = patch_me(&app, &auth, right).await.expect(200);
    assert_eq!(r.body["payout_email"], "pay@alice.example");
    assert_eq!(r.body["payout_method"], "paypal");
    let partner = record(&app, seed.partner_id).await;
    assert_eq!(partner["payout_details_changed_by"], "partner");
    let changed_at = partner["payout_details_changed_at"].clone();
    assert!(changed_at.is_string(), "{partner}");
    patch_me(&app, &auth, change).await.expect(200);
    patch_me(
        &app,
        &auth,
        json!({"payout_email": "pay@alice.example", "name": "Alice"}),
    )
    .await
    .expect(200);

    // An owner's change is kept as theirs.
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"payout_method": "wise"})),
    )
    .await
    .expect(200);
    let partner = record(&app, seed.partner_id).await;
    assert_eq!(partner["payout_details_changed_by"], "operator");
    assert_eq!(partner["payout_method"], "wise");
}

on_both_backends!(a_banned_partner_cannot_redirect_its_payouts);
async fn a_banned_partner_cannot_redirect_its_payouts(app: TestApp) {
    let seed = app.seed().await;
    let auth = alice(&app, &seed).await;
    app.admin(
        "PATCH",
        &format!("/programs/{}/partners/{}", seed.program_id, seed.partner_id),
        Some(json!({"status": "banned"})),
    )
    .await
    .expect(200);
    let r = patch_me(
        &app,
        &auth,
        json!({"payout_email": "thief@example.com", "current_password": PASSWORD}),
    )
    .await
    .expect(403);
    assert_eq!(
        r.error(),
        "A partner banned from a program cannot change its payout details"
    );
    patch_me(&app, &auth, json!({"name": "Still Alice"}))
        .await
        .expect(200);
    let partner = record(&app, seed.partner_id).await;
    assert_eq!(partner["payout_email"], Value::Null);
}

on_both_backends!(a_change_is_mailed_to_the_partner_and_the_old_payout_email);
async fn a_change_is_mailed_to_the_partner_and_the_old_payout_email(app: TestApp) {
    let mut smtp = FakeSmtp::start().await;
    let app = app.with_mailer_at(&smtp.url, FROM, "https://partners.example.com");
    let seed = app.seed().await;
    let token = app.invite_token(seed.partner_id, "alice@example.com").await;
    smtp.next().await; // the invite
    let r = app
        .post(
            "/api/partner/auth/accept-invite",
            json!({"token": token, "password": PASSWORD}),
        )
        .await
        .expect(200);
    let auth = format!("Bearer {}", r.body["token"].as_str().unwrap());

    patch_me(
        &app,
        &auth,
        json!({"payout_method": "paypal", "payout_email": "pay@alice.example", "current_password": PASSWORD}),
    )
    .await
    .expect(200);
    let mail = smtp.next().await;
    assert_eq!(mail.to, ["alice@example.com"]);
    let (subject, body) = read(&mail);
    assert_eq!(subject, "Your payout details were changed");
    assert!(
        body.contains("Payout email: pay@alice.example (was not set)"),
        "{body}"
    );
    assert!(
        body.contains("Payout method: paypal (was not set)"),
        "{body}"
    );
    assert!(body.contains("from your partner account"), "{body}");

    patch_me(
        &app,
        &auth,
        json!({"payout_email": "new@alice.example", "current_password": PASSWORD}),
    )
    .await
    .expect(200);
    let mut to: Vec<String> = Vec::new();
    for _ in 0..2 {
        let mail = smtp.next().await;
        let (_, body) = read(&mail);
        assert!(
            body.contains("Payout email: new@alice.example (was pay@alice.example)"),
            "{body}"
        );
        to.extend(mail.to);
    }
    to.sort();
    assert_eq!(to, ["alice@example.com", "pay@alice.example"]);

    // A name-only change mails nothing; an owner's change of the details does.
    patch_me(&app, &auth, json!({"name": "Alice A."}))
        .await
        .expect(200);
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"payout_method": "wise"})),
    )
    .await
    .expect(200);
    let mail = smtp.next().await;
    assert_eq!(mail.to, ["alice@example.com"]);
    let (_, body) = read(&mail);
    assert!(body.contains("Payout method: wise (was paypal)"), "{body}");
    assert!(body.contains("by a program you belong to"), "{body}");
    assert!(!smtp.has_more());
}

#[tokio::test]
async fn wrong_passwords_lock_the_change_out() {
    let app = TestApp::sqlite().await;
    let seed = app.seed().await;
    let auth = alice(&app, &seed).await;
    for _ in 0..5 {
        patch_me(
            &app,
            &auth,
            json!({"payout_email": "thief@example.com", "current_password": "guess"}),
        )
        .await
        .expect(403);
    }
    let r = patch_me(
        &app,
        &auth,
        json!({"payout_email": "thief@example.com", "current_password": PASSWORD}),
    )
    .await
    .expect(429);
    assert!(r.error().starts_with("Too many requests"), "{}", r.error());
    // Her sign-in is not locked by it, nor a change without a password.
    app.post(
        "/api/partner/auth/login",
        json!({"email": "alice@example.com", "password": PASSWORD}),
    )
    .await
    .expect(200);
    patch_me(&app, &auth, json!({"name": "Alice"}))
        .await
        .expect(200);
}

on_both_backends!(the_portal_asks_for_the_password_and_the_owner_sees_the_change);
async fn the_portal_asks_for_the_password_and_the_owner_sees_the_change(app: TestApp) {
    let seed = app.seed().await;
    let token = app.invite_token(seed.partner_id, "alice@example.com").await;
    let form = format!("token={token}&password=partner+password&confirm=partner+password");
    let r = PORTAL
        .post(&app, "/partner/invite", None, &form)
        .await
        .expect(303);
    let cookie = PORTAL.session(&r);

    let details = "name=Alice&payout_method=paypal&payout_email=pay%40alice.example";
    let r = PORTAL
        .post(&app, "/partner/settings", Some(&cookie), details)
        .await
        .expect(403);
    let body = html(&r);
    assert!(
        body.contains(
            "id=\"f-password-error\">Enter your password to change where your payouts go"
        ),
        "{body}"
    );
    assert!(
        body.contains("value=\"pay@alice.example\""),
        "the form keeps what was sent"
    );
    let r = PORTAL
        .post(
            &app,
            "/partner/settings",
            Some(&cookie),
            &format!("{details}&password=wrong"),
        )
        .await
        .expect(403);
    assert!(html(&r).contains("id=\"f-password-error\">That is not your current password"));
    let r = PORTAL
        .post(
            &app,
            "/partner/settings",
            Some(&cookie),
            &format!("{details}&password=partner+password"),
        )
        .await
        .expect(303);
    assert_eq!(location(&r), "/partner/settings?done=profile");

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
    let session = DASHBOARD.session(&r);
    let page = format!(
        "/app/programs/{}/partners/{}",
        seed.program_id, seed.partner_id
    );
    let r = DASHBOARD.get(&app, &page, Some(&session)).await.expect(200);
    let body = html(&r);
    assert!(body.contains("payout details changed"), "{body}");
    assert!(body.contains("by the partner"), "{body}");
}
