//! Partner invites mailed through SMTP (a fake server in the test): the mail reaches the
//! partner's email with the link of the answer; a new password is worded as such; an SMTP
//! server that cannot be reached loses no invite (`emailed: false`, the link works).

use crate::common::server::free_port;
use crate::common::smtp::{FakeSmtp, Received};
use crate::common::*;
use serde_json::json;

const FROM: &str = "Acme Partners <invites@acme.example>";

/// Checks a received mail: envelope and headers name `to` and the sender, the subject is
/// `subject`, and the plain-text body holds `link`.
#[track_caller]
fn assert_mail(mail: &Received, to: &str, subject: &str, link: &str) {
    assert_eq!(mail.from, "invites@acme.example");
    assert_eq!(mail.to, [to]);
    let parsed = mail_parser::MessageParser::default()
        .parse(mail.data.as_bytes())
        .expect("a parseable message");
    assert_eq!(parsed.subject(), Some(subject));
    let header_to = parsed
        .to()
        .and_then(|a| a.first())
        .and_then(|a| a.address());
    assert_eq!(header_to, Some(to));
    let header_from = parsed.from().and_then(|a| a.first());
    assert_eq!(
        header_from.and_then(|a| a.address()),
        Some("invites@acme.example")
    );
    assert_eq!(header_from.and_then(|a| a.name()), Some("Acme Partners"));
    let body = parsed.body_text(0).expect("a text body");
    assert!(body.contains(link), "the link {link} is not in:\n{body}");
}

fn token_of(link: &str) -> &str {
    link.split("token=").nth(1).expect("a token in the link")
}

on_both_backends!(invites_and_new_passwords_are_mailed_with_the_link);
async fn invites_and_new_passwords_are_mailed_with_the_link(app: TestApp) {
    let mut smtp = FakeSmtp::start().await;
    let app = app.with_mailer_at(&smtp.url, FROM, "https://partners.example.com");
    let seed = app.seed().await;

    let first = app.invite(seed.partner_id, "alice@example.com").await;
    assert_eq!(first.body["emailed"], true, "{}", first.body);
    let link = first.body["invite_url"].as_str().unwrap();
    assert!(link.starts_with("https://partners.example.com/partner/invite?token=rti_"));
    let mail = smtp.next().await;
    assert_mail(
        &mail,
        "alice@example.com",
        "Your invite to the partner portal",
        link,
    );
    assert!(!smtp.has_more(), "one invite, one mail");

    // The mailed link works.
    app.post(
        "/api/partner/auth/accept-invite",
        json!({"token": token_of(link), "password": "alice password 1"}),
    )
    .await
    .expect(200);

    // Inviting a partner that has a password is how it gets a new one.
    let again = app
        .admin(
            "POST",
            &format!("/partners/{}/invite", seed.partner_id),
            None,
        )
        .await
        .expect(201);
    assert_eq!(again.body["emailed"], true);
    let link = again.body["invite_url"].as_str().unwrap();
    let mail = smtp.next().await;
    assert_mail(
        &mail,
        "alice@example.com",
        "Set a new password for the partner portal",
        link,
    );
    app.post(
        "/api/partner/auth/accept-invite",
        json!({"token": token_of(link), "password": "alice password 2"}),
    )
    .await
    .expect(200);
    app.post(
        "/api/partner/auth/login",
        json!({"email": "alice@example.com", "password": "alice password 2"}),
    )
    .await
    .expect(200);
}

on_both_backends!(an_unreachable_smtp_server_loses_no_invite);
async fn an_unreachable_smtp_server_loses_no_invite(app: TestApp) {
    // Nothing listens there: the connection is refused.
    let app = app.with_mailer(&format!("smtp://127.0.0.1:{}", free_port()), FROM);
    let seed = app.seed().await;
    let r = app.invite(seed.partner_id, "bob@example.com").await;
    assert_eq!(r.body["emailed"], false, "{}", r.body);
    let link = r.body["invite_url"].as_str().unwrap();
    assert!(r.body["expires_at"].is_string());
    // The invite was committed before the mail failed: the link works.
    app.post(
        "/api/partner/auth/accept-invite",
        json!({"token": token_of(link), "password": "bob password 1"}),
    )
    .await
    .expect(200);
}

on_both_backends!(without_smtp_nothing_is_mailed);
async fn without_smtp_nothing_is_mailed(app: TestApp) {
    let seed = app.seed().await;
    let r = app.invite(seed.partner_id, "carol@example.com").await;
    assert_eq!(r.body["emailed"], false, "{}", r.body);
    assert!(r.body["invite_url"]
        .as_str()
        .unwrap()
        .contains("token=rti_"));
}

on_both_backends!(a_partner_resets_a_forgotten_password_by_mail);
async fn a_partner_resets_a_forgotten_password_by_mail(app: TestApp) {
    use crate::common::pages::{html, PORTAL};
    // Without mail, or without its own address, the server sends nobody a link.
    let r = app
        .post(
            "/api/partner/auth/reset",
            json!({"email": "alice@example.com"}),
        )
        .await
        .expect(404);
    assert!(
        r.error()
            .starts_with("Resetting a password by mail is not set up"),
        "{}",
        r.error()
    );
    let r = PORTAL.get(&app, "/partner/reset", None).await.expect(200);
    assert!(
        html(&r).contains("Ask the program for a new invite link"),
        "{}",
        html(&r)
    );

    let mut smtp = FakeSmtp::start().await;
    let app = app.with_mailer_at(&smtp.url, FROM, "https://partners.example.com");
    let seed = app.seed().await;
    let first = app.invite(seed.partner_id, "alice@example.com").await;
    smtp.next().await;
    let link = first.body["invite_url"].as_str().unwrap();
    app.post(
        "/api/partner/auth/accept-invite",
        json!({"token": token_of(link), "password": "alice password 1"}),
    )
    .await
    .expect(200);

    // Her contact email changes; she still signs in, and resets, with her own.
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"email": "alice@newjob.example"})),
    )
    .await
    .expect(200);
    // The sign-in page links the reset page; an unknown email gets the same answer and
    // no mail; a bad one is refused.
    let r = PORTAL.get(&app, "/partner/login", None).await.expect(200);
    assert!(html(&r).contains("href=\"/partner/reset\""), "{}", html(&r));
    let unknown = app
        .post(
            "/api/partner/auth/reset",
            json!({"email": "nobody@example.com"}),
        )
        .await
        .expect(202);
    app.post("/api/partner/auth/reset", json!({"email": "nobody"}))
        .await
        .expect(400);
    let known = app
        .post(
            "/api/partner/auth/reset",
            json!({"email": " Alice@Example.com "}),
        )
        .await
        .expect(202);
    assert_eq!(unknown.body, known.body);
    let mail = smtp.next().await;
    let parsed = mail_parser::MessageParser::default()
        .parse(mail.data.as_bytes())
        .unwrap();
    let body = parsed.body_text(0).unwrap().to_string();
    let link = body
        .split_whitespace()
        .find(|w| w.starts_with("https://partners.example.com/partner/invite?token=rti_"))
        .expect("the link on the server's own address")
        .to_string();
    assert_mail(
        &mail,
        "alice@example.com",
        "Set a new password for the partner portal",
        &link,
    );
    // The link sets the new password; the old one stops working.
    app.post(
        "/api/partner/auth/accept-invite",
        json!({"token": token_of(&link), "password": "alice password 2"}),
    )
    .await
    .expect(200);
    app.post(
        "/api/partner/auth/login",
        json!({"email": "alice@example.com", "password": "alice password 1"}),
    )
    .await
    .expect(401);
    app.post(
        "/api/partner/auth/login",
        json!({"email": "alice@example.com", "password": "alice password 2"}),
    )
    .await
    .expect(200);

    // The portal's page: the form, then the same words whatever the email.
    let r = PORTAL.get(&app, "/partner/reset", None).await.expect(200);
    assert!(html(&r).contains("name=\"email\""), "{}", html(&r));
    let r = PORTAL
        .post(&app, "/partner/reset", None, "email=alice%40example.com")
        .await
        .expect(200);
    assert!(
        html(&r).contains("a link to set a new password is on its way"),
        "{}",
        html(&r)
    );
    smtp.next().await;
    let r = PORTAL
        .post(&app, "/partner/reset", None, "email=nope")
        .await
        .expect(400);
    assert!(html(&r).contains("id=\"f-email-error\""), "{}", html(&r));
}

on_both_backends!(owners_are_told_of_an_application_and_the_applicant_of_its_approval);
async fn owners_are_told_of_an_application_and_the_applicant_of_its_approval(app: TestApp) {
    let mut smtp = FakeSmtp::start().await;
    let app = app.with_mailer_at(&smtp.url, FROM, "https://partners.example.com");
    let seed = app.seed_with(json!({"applications_open": true})).await;
    let w = seed.workspace_id;
    app.member(w, "owner@acme.example", "owner password", "owner")
        .await;
    app.member(w, "admin@acme.example", "admin password", "admin")
        .await;
    app.member(w, "viewer@acme.example", "viewer password", "viewer")
        .await;
    let r = app
        .post(
            &format!("/api/partner/apply/{}", seed.program_id),
            json!({"name": "Bob", "email": "Bob@Example.com", "password": "bob password 1", "website": "https://bob.example", "message": "I write about shoes."}),
        )
        .await
        .expect(201);
    let mut to: Vec<String> = Vec::new();
    for _ in 0..2 {
        let mail = smtp.next().await;
        let review = format!(
            "https://partners.example.com/app/programs/{}/partners?status=pending",
            seed.program_id
        );
        let recipient = mail.to[0].clone();
        assert_mail(
            &mail,
            &recipient,
            "New partner application: Acme Partners",
            &review,
        );
        let body = mail_parser::MessageParser::default()
            .parse(mail.data.as_bytes())
            .unwrap()
            .body_text(0)
            .unwrap()
            .to_string();
        assert!(
            body.contains("Bob (bob@example.com) applied to join Acme Partners.")
                && body.contains("I write about shoes."),
            "{body}"
        );
        to.push(recipient);
    }
    to.sort();
    assert_eq!(
        to,
        ["admin@acme.example", "owner@acme.example"],
        "owners and admins only"
    );
    assert_eq!(r.body["status"], "pending");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!smtp.has_more(), "no mail to the viewer");

    // Approved, the applicant is told where to sign in.
    let bob = r.body["partner_id"].as_i64().unwrap();
    app.admin(
        "PATCH",
        &format!("/programs/{}/partners/{bob}", seed.program_id),
        Some(json!({"status": "approved"})),
    )
    .await
    .expect(200);
    let mail = smtp.next().await;
    assert_mail(
        &mail,
        "bob@example.com",
        "You are approved: Acme Partners",
        "https://partners.example.com/partner/login",
    );
    // Rejecting tells nobody.
    app.admin(
        "PATCH",
        &format!("/programs/{}/partners/{bob}", seed.program_id),
        Some(json!({"status": "rejected"})),
    )
    .await
    .expect(200);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!smtp.has_more());
}

on_both_backends!(a_paid_partner_is_told_what_it_was_paid);
async fn a_paid_partner_is_told_what_it_was_paid(app: TestApp) {
    let mut smtp = FakeSmtp::start().await;
    let app = app.with_mailer_at(&smtp.url, FROM, "https://partners.example.com");
    let seed = app
        .seed_with(json!({"commission_hold_days": 0, "min_payout_cents": 100}))
        .await;
    let p = seed.program_id;
    let invite = app.invite(seed.partner_id, "alice@example.com").await;
    smtp.next().await;
    let link = invite.body["invite_url"].as_str().unwrap();
    app.post(
        "/api/partner/auth/accept-invite",
        json!({"token": token_of(link), "password": "alice password 1"}),
    )
    .await
    .expect(200);
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"payout_method": "paypal", "payout_email": "pay@alice.example"})),
    )
    .await
    .expect(200);
    let notice = smtp.next().await;
    assert!(notice
        .data
        .contains("Subject: Your payout details were changed"));
    app.lead(&seed, "k").await;
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": "t1", "amount_cents": 10000, "customer_key": "k"}),
    )
    .await
    .expect(200);
    let payout = app
        .admin("POST", &format!("/programs/{p}/payouts"), None)
        .await
        .expect(201);
    let id = payout.body["id"].as_i64().unwrap();
    assert!(!smtp.has_more(), "nothing is told before it is paid");
    app.admin(
        "POST",
        &format!("/payouts/{id}/mark-paid"),
        Some(json!({"reference": "PP-123"})),
    )
    .await
    .expect(200);
    let mail = smtp.next().await;
    assert_mail(
        &mail,
        "alice@example.com",
        "Payout sent: $20.00 from Acme Partners",
        &format!("https://partners.example.com/partner/programs/{p}/payouts"),
    );
    let body = mail_parser::MessageParser::default()
        .parse(mail.data.as_bytes())
        .unwrap()
        .body_text(0)
        .unwrap()
        .to_string();
    assert!(
        body.contains("by PayPal to pay@alice.example") && body.contains("Reference: PP-123"),
        "{body}"
    );
}

/// The binary refuses an incomplete or unusable mail configuration at start, without
/// repeating the SMTP password.
#[test]
fn a_bad_mail_configuration_stops_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("m.db").display());
    let stderr = |env: &[(&str, &str)]| {
        let mut all = vec![("REFTRACK_DATABASE_URL", url.as_str())];
        all.extend_from_slice(env);
        let out = crate::common::server::command(&all).output().unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let e = stderr(&[("REFTRACK_SMTP_URL", "smtp://u:smtp_s3cret@127.0.0.1:25")]);
    assert!(
        e.contains("REFTRACK_SMTP_URL needs REFTRACK_MAIL_FROM"),
        "{e}"
    );
    let e = stderr(&[("REFTRACK_MAIL_FROM", "invites@example.com")]);
    assert!(
        e.contains("REFTRACK_MAIL_FROM needs REFTRACK_SMTP_URL"),
        "{e}"
    );
    let e = stderr(&[
        ("REFTRACK_SMTP_URL", "imap://u:smtp_s3cret@mail.example"),
        ("REFTRACK_MAIL_FROM", "invites@example.com"),
    ]);
    assert!(
        e.contains("REFTRACK_SMTP_URL is not a usable SMTP URL"),
        "{e}"
    );
    let e = stderr(&[
        ("REFTRACK_SMTP_URL", "smtps://u:smtp_s3cret@mail.example"),
        ("REFTRACK_MAIL_FROM", "not an address"),
    ]);
    assert!(
        e.contains("REFTRACK_MAIL_FROM is not a mail address"),
        "{e}"
    );
    assert!(!e.contains("smtp_s3cret"), "{e}");
    // Nothing was opened: the database file was not even created.
    assert!(!dir.path().join("m.db").exists());
}
