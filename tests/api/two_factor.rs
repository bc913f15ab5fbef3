//! Two-factor sign-in: setup, enable, sign-in with codes and recovery codes, once-only
//! codes, drift, the lock-out, disable, the workspace setting; for users and partners.

use std::sync::Arc;

use crate::common::*;
use reftrack::app::two_factor::{code_at_step, step_of};
use reftrack::domain::time::ManualClock;
use reftrack::http::client_ip::ClientResolver;
use serde_json::{json, Value};

const PASSWORD: &str = "correct horse battery";
const T0: i64 = 1_772_445_600_000; // 2026-03-02T10:00:00Z, on a step boundary

/// The two kinds of account: where their calls live.
#[derive(Clone, Copy)]
enum Kind {
    User,
    Partner,
}

impl Kind {
    fn base(self) -> &'static str {
        match self {
            Kind::User => "/api/auth",
            Kind::Partner => "/api/partner/auth",
        }
    }

    fn me(self) -> &'static str {
        match self {
            Kind::User => "/api/auth/me",
            Kind::Partner => "/api/partner/me",
        }
    }
}

/// A test app on a manual clock at [`T0`].
fn clocked(app: TestApp) -> (TestApp, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::at(T0));
    (app.with_clock(clock.clone()), clock)
}

/// An account of `kind` signing in with `email` and [`PASSWORD`]; its session token.
async fn account(app: &TestApp, seed: &Seed, kind: Kind, email: &str) -> String {
    match kind {
        Kind::User => {
            app.member(seed.workspace_id, email, PASSWORD, "owner")
                .await;
        }
        Kind::Partner => {
            let token = app.invite_token(seed.partner_id, email).await;
            app.post(
                "/api/partner/auth/accept-invite",
                json!({"token": token, "password": PASSWORD}),
            )
            .await
            .expect(200);
        }
    }
    login(app, kind, json!({"email": email, "password": PASSWORD}))
        .await
        .expect(200)
        .body["token"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn login(app: &TestApp, kind: Kind, body: Value) -> Reply {
    app.post(&format!("{}/login", kind.base()), body).await
}

async fn call(app: &TestApp, kind: Kind, token: &str, what: &str, body: Value) -> Reply {
    app.post_auth(&format!("{}/2fa/{what}", kind.base()), token, body)
        .await
}

async fn me(app: &TestApp, kind: Kind, token: &str) -> Value {
    let auth = format!("Bearer {token}");
    app.send("GET", kind.me(), None, &[("authorization", &auth)])
        .await
        .expect(200)
        .body
}

fn code(secret: &str, clock: &ManualClock, drift: i64) -> String {
    code_at_step(secret, step_of(clock.now_ms_for_tests()) + drift).unwrap()
}

trait Now {
    fn now_ms_for_tests(&self) -> i64;
}

impl Now for ManualClock {
    fn now_ms_for_tests(&self) -> i64 {
        reftrack::domain::time::Clock::now_ms(self)
    }
}

/// Sets two-factor up and on; the secret and the recovery codes.
async fn enable(
    app: &TestApp,
    clock: &ManualClock,
    kind: Kind,
    token: &str,
) -> (String, Vec<String>) {
    let setup = call(app, kind, token, "setup", json!({})).await.expect(200);
    let secret = setup.body["secret"].as_str().unwrap().to_string();
    let r = call(
        app,
        kind,
        token,
        "enable",
        json!({"code": code(&secret, clock, 0)}),
    )
    .await
    .expect(200);
    let codes = r.body["recovery_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    (secret, codes)
}

fn creds(email: &str) -> Value {
    json!({"email": email, "password": PASSWORD})
}

fn with(email: &str, key: &str, value: &str) -> Value {
    let mut b = creds(email);
    b[key] = json!(value);
    b
}

async fn setup_then_enable(app: TestApp, kind: Kind) {
    let (app, clock) = clocked(app);
    let seed = app.seed().await;
    let email = "dana@example.com";
    let token = account(&app, &seed, kind, email).await;
    assert_eq!(me(&app, kind, &token).await["two_factor"], false);

    // Setup alone changes nothing: sign-in needs no code.
    let first = call(&app, kind, &token, "setup", json!({}))
        .await
        .expect(200);
    let secret = first.body["secret"].as_str().unwrap().to_string();
    assert_eq!(
        first.body["otpauth_url"],
        format!("otpauth://totp/Reftrack:{email}?secret={secret}&issuer=Reftrack")
    );
    assert_eq!(me(&app, kind, &token).await["two_factor"], false);
    login(&app, kind, creds(email)).await.expect(200);

    // A second setup replaces the pending secret: the first one's code is refused.
    let second = call(&app, kind, &token, "setup", json!({}))
        .await
        .expect(200);
    let secret2 = second.body["secret"].as_str().unwrap().to_string();
    assert_ne!(secret, secret2);
    let r = call(
        &app,
        kind,
        &token,
        "enable",
        json!({"code": code(&secret, &clock, 0)}),
    )
    .await
    .expect(400);
    assert!(r.error().contains("not right"), "{}", r.error());
    call(&app, kind, &token, "enable", json!({"code": "12"}))
        .await
        .expect(400);
    let r = call(
        &app,
        kind,
        &token,
        "enable",
        json!({"code": code(&secret2, &clock, 0)}),
    )
    .await
    .expect(200);
    let codes = r.body["recovery_codes"].as_array().unwrap();
    assert_eq!(codes.len(), 10);
    assert_eq!(me(&app, kind, &token).await["two_factor"], true);
    // On already: another setup is refused.
    call(&app, kind, &token, "setup", json!({}))
        .await
        .expect(409);

    // Sign-in now asks for the code.
    let r = login(&app, kind, creds(email)).await.expect(401);
    assert_eq!(
        r.body,
        json!({"error": "Two-factor code required", "two_factor_required": true})
    );
    // A wrong password still says only that.
    let mut wrong = with(email, "code", &code(&secret2, &clock, 0));
    wrong["password"] = json!("wrong password!");
    let r = login(&app, kind, wrong).await.expect(401);
    assert_eq!(r.error(), "Invalid email or password");
    // The code used to enable (this step) is used up; the next step's works once.
    login(&app, kind, with(email, "code", &code(&secret2, &clock, 0)))
        .await
        .expect(401);
    clock.advance(30_000);
    let c = code(&secret2, &clock, 0);
    let r = login(&app, kind, with(email, "code", &c)).await.expect(200);
    assert!(r.body["token"].is_string());
    let r = login(&app, kind, with(email, "code", &c)).await.expect(401);
    assert_eq!(r.error(), "Invalid two-factor code");
    assert!(r.body.get("two_factor_required").is_none());
    login(&app, kind, with(email, "code", "000000"))
        .await
        .expect(401);
}

on_both_backends!(user_setup_then_enable);
/// A user: setup does not enable; enable with a wrong, then the right code; sign-in
/// needs the code; a wrong or used code is 401.
async fn user_setup_then_enable(app: TestApp) {
    setup_then_enable(app, Kind::User).await
}

on_both_backends!(partner_setup_then_enable);
/// The same for a partner.
async fn partner_setup_then_enable(app: TestApp) {
    setup_then_enable(app, Kind::Partner).await
}

async fn drift_recovery_and_disable(app: TestApp, kind: Kind) {
    let (app, clock) = clocked(app);
    let seed = app.seed().await;
    let email = "erin@example.com";
    let token = account(&app, &seed, kind, email).await;
    let (secret, codes) = enable(&app, &clock, kind, &token).await;

    // One step of drift either way is accepted; two are not.
    clock.advance(10 * 30_000);
    for drift in [-2, 2] {
        login(
            &app,
            kind,
            with(email, "code", &code(&secret, &clock, drift)),
        )
        .await
        .expect(401);
    }
    login(&app, kind, with(email, "code", &code(&secret, &clock, -1)))
        .await
        .expect(200);
    login(&app, kind, with(email, "code", &code(&secret, &clock, 1)))
        .await
        .expect(200);
    // After the step ahead was used, this step's code is an older one: refused.
    login(&app, kind, with(email, "code", &code(&secret, &clock, 0)))
        .await
        .expect(401);

    // A recovery code works once ever, in any case and spacing (an unknown one is refused
    // in the lock-out test's way: this test stays under its five free failures).
    let shouted = codes[0].to_uppercase().replace('-', " ");
    login(&app, kind, with(email, "recovery_code", &shouted))
        .await
        .expect(200);
    login(&app, kind, with(email, "recovery_code", &codes[0]))
        .await
        .expect(401);

    // Disable: a wrong code is 400 and changes nothing; a recovery code turns it off.
    let r = call(&app, kind, &token, "disable", json!({"code": "123456"}))
        .await
        .expect(400);
    assert_eq!(r.error(), "Invalid two-factor code");
    call(&app, kind, &token, "disable", json!({}))
        .await
        .expect(400);
    call(
        &app,
        kind,
        &token,
        "disable",
        json!({"recovery_code": codes[0]}),
    )
    .await
    .expect(400);
    assert_eq!(me(&app, kind, &token).await["two_factor"], true);
    call(
        &app,
        kind,
        &token,
        "disable",
        json!({"recovery_code": codes[1]}),
    )
    .await
    .expect(204);
    assert_eq!(me(&app, kind, &token).await["two_factor"], false);
    login(&app, kind, creds(email)).await.expect(200);
    call(&app, kind, &token, "disable", json!({"code": "123456"}))
        .await
        .expect(400);

    // On again with a new secret; a current code turns it off too.
    clock.advance(30_000);
    let (secret, _) = enable(&app, &clock, kind, &token).await;
    clock.advance(30_000);
    call(
        &app,
        kind,
        &token,
        "disable",
        json!({"code": code(&secret, &clock, 0)}),
    )
    .await
    .expect(204);
}

on_both_backends!(user_drift_recovery_and_disable);
/// A user: ±1 step accepted, 2 refused; recovery codes once; disable.
async fn user_drift_recovery_and_disable(app: TestApp) {
    drift_recovery_and_disable(app, Kind::User).await
}

on_both_backends!(partner_drift_recovery_and_disable);
/// The same for a partner.
async fn partner_drift_recovery_and_disable(app: TestApp) {
    drift_recovery_and_disable(app, Kind::Partner).await
}

async fn failed_codes_lock_out(app: TestApp, kind: Kind) {
    let (app, clock) = clocked(app);
    let seed = app.seed().await;
    let email = "finn@example.com";
    let token = account(&app, &seed, kind, email).await;
    let (secret, _) = enable(&app, &clock, kind, &token).await;
    clock.advance(30_000);
    // Five wrong codes after a right password are free, as five wrong passwords are…
    for _ in 0..5 {
        login(&app, kind, with(email, "code", "000000"))
            .await
            .expect(401);
    }
    // …then the account is locked out, even with the right code.
    let r = login(&app, kind, with(email, "code", &code(&secret, &clock, 0)))
        .await
        .expect(429);
    assert!(r.headers.get("retry-after").is_some());
}

on_both_backends!(user_failed_codes_lock_out);
/// Failed codes count toward the account's lock-out.
async fn user_failed_codes_lock_out(app: TestApp) {
    failed_codes_lock_out(app, Kind::User).await
}

on_both_backends!(partner_failed_codes_lock_out);
/// The same for a partner.
async fn partner_failed_codes_lock_out(app: TestApp) {
    failed_codes_lock_out(app, Kind::Partner).await
}

on_both_backends!(failed_codes_hit_the_ip_limit);
/// Failed codes count toward the per-client-IP sign-in limit, being sign-in calls.
async fn failed_codes_hit_the_ip_limit(app: TestApp) {
    let (app, clock) = clocked(app);
    let seed = app.seed().await;
    let token = account(&app, &seed, Kind::User, "gus@example.com").await;
    enable(&app, &clock, Kind::User, &token).await;
    let app = app
        .with_resolver(ClientResolver::new(Some("*".parse().unwrap()), None).unwrap())
        .with_rate_limits(reftrack::config::RateLimitArgs {
            rate_limit_login: 2,
            ..Default::default()
        });
    let from = [("x-forwarded-for", "203.0.113.9")];
    let mut last = 0;
    for _ in 0..3 {
        let body = with("gus@example.com", "code", "000000");
        last = app
            .send("POST", "/api/auth/login", Some(body), &from)
            .await
            .status
            .as_u16();
    }
    assert_eq!(last, 429);
}

async fn patch(app: &TestApp, ws: &str, token: &str, on: bool) -> Reply {
    let auth = format!("Bearer {token}");
    app.send(
        "PATCH",
        &format!("/api/admin{ws}"),
        Some(json!({"require_two_factor": on})),
        &[("authorization", &auth)],
    )
    .await
}

async fn get(app: &TestApp, token: &str, path: &str) -> Reply {
    let auth = format!("Bearer {token}");
    app.send("GET", path, None, &[("authorization", &auth)])
        .await
}

on_both_backends!(workspace_requires_two_factor);
/// `require_two_factor`: owners only; a member without two-factor is refused the
/// workspace's data with 403 until it turns it on; the admin token is not affected.
async fn workspace_requires_two_factor(app: TestApp) {
    let (app, clock) = clocked(app);
    let seed = app.seed().await;
    let ws = format!("/workspaces/{}", seed.workspace_id);
    app.member(seed.workspace_id, "olga@example.com", PASSWORD, "owner")
        .await;
    app.member(seed.workspace_id, "adam@example.com", PASSWORD, "admin")
        .await;
    let owner = login(&app, Kind::User, creds("olga@example.com"))
        .await
        .body["token"]
        .as_str()
        .unwrap()
        .to_string();
    let admin = login(&app, Kind::User, creds("adam@example.com"))
        .await
        .body["token"]
        .as_str()
        .unwrap()
        .to_string();
    // Owners only: an admin is refused; bad bodies are 400.
    patch(&app, &ws, &admin, true).await.expect(403);
    app.admin("PATCH", &ws, Some(json!({"require_two_factor": "yes"})))
        .await
        .expect(400);
    app.admin(
        "PATCH",
        "/workspaces/999999",
        Some(json!({"require_two_factor": true})),
    )
    .await
    .expect(404);
    let r = patch(&app, &ws, &owner, true).await.expect(200);
    assert_eq!(r.body["require_two_factor"], true);

    let program = format!("/api/admin/programs/{}", seed.program_id);
    let status = format!("/api/tracking/status/{}", seed.program_id);
    const TEXT: &str = "Two-factor authentication is required by this workspace";
    for token in [&owner, &admin] {
        for path in [&program, &status, &"/api/admin/programs".to_string()] {
            let r = get(&app, token, path).await.expect(403);
            assert_eq!(r.error(), TEXT, "{path}");
        }
    }
    // me still answers, and tells the workspace's setting.
    let m = me(&app, Kind::User, &admin).await;
    assert_eq!(m["memberships"][0]["require_two_factor"], true);
    // The admin token is not affected.
    app.admin("GET", &format!("/programs/{}", seed.program_id), None)
        .await
        .expect(200);

    // After enabling, the admin is let through; the owner still is not.
    enable(&app, &clock, Kind::User, &admin).await;
    get(&app, &admin, &program).await.expect(200);
    get(&app, &admin, &status).await.expect(200);
    get(&app, &admin, "/api/admin/programs").await.expect(200);
    get(&app, &owner, &program).await.expect(403);
    // The owner too must turn it on before changing the workspace again.
    patch(&app, &ws, &owner, false).await.expect(403);
    enable(&app, &clock, Kind::User, &owner).await;
    patch(&app, &ws, &owner, false).await.expect(200);
    // Off: a member without two-factor may read again.
    app.member(seed.workspace_id, "vic@example.com", PASSWORD, "viewer")
        .await;
    let viewer = login(&app, Kind::User, creds("vic@example.com")).await.body["token"]
        .as_str()
        .unwrap()
        .to_string();
    get(&app, &viewer, &program).await.expect(200);
}

/// The value of the hidden `pending` field of a code page.
fn pending_of(page: &str) -> String {
    let at = page
        .find("name=\"pending\" value=\"")
        .expect("a pending field")
        + 22;
    page[at..].split('"').next().unwrap().to_string()
}

/// The text of the element with `id`.
fn text_of(page: &str, id: &str) -> String {
    let at = page.find(&format!("id=\"{id}\"")).expect(id);
    let start = page[at..].find('>').unwrap() + at + 1;
    page[start..].split('<').next().unwrap().to_string()
}

async fn pages_sign_in_with_a_code(app: TestApp, kind: Kind) {
    use crate::common::pages::{html, location, DASHBOARD, PORTAL};
    let (app, clock) = clocked(app);
    let seed = app.seed().await;
    let email = "hana@example.com";
    let token = account(&app, &seed, kind, email).await;
    let (site, home) = match kind {
        Kind::User => (DASHBOARD, "/app"),
        Kind::Partner => (PORTAL, "/partner"),
    };
    let cookie = site.session(
        &site
            .post(
                &app,
                &format!("{home}/login"),
                None,
                &format!("email={email}&password=correct+horse+battery"),
            )
            .await
            .expect(303),
    );

    // The page shows the QR code (an SVG), the secret and its URL; a wrong code is said
    // beside the field; the right one shows the recovery codes once.
    let page = site
        .get(&app, &format!("{home}/two-factor"), Some(&cookie))
        .await
        .expect(200);
    let page = html(&page);
    assert!(page.contains("<svg"), "{page}");
    let secret = text_of(page, "secret");
    assert_eq!(me(&app, kind, &token).await["two_factor"], false);
    let r = site
        .post(
            &app,
            &format!("{home}/two-factor/enable"),
            Some(&cookie),
            "code=000000",
        )
        .await
        .expect(400);
    assert!(html(&r).contains("field-error"));
    let c = code(&secret, &clock, 0);
    let r = site
        .post(
            &app,
            &format!("{home}/two-factor/enable"),
            Some(&cookie),
            &format!("code={c}"),
        )
        .await
        .expect(200);
    assert_eq!(html(&r).matches("<li><code>").count(), 10);
    assert_eq!(me(&app, kind, &token).await["two_factor"], true);

    // Sign-in: the password, then the code page with a pending token, not the password.
    clock.advance(30_000);
    let form = format!("email={email}&password=correct+horse+battery");
    let r = site
        .post(&app, &format!("{home}/login"), None, &form)
        .await
        .expect(200);
    let code_page = html(&r);
    assert!(code_page.contains("name=\"code\""));
    assert!(!code_page.contains("correct horse"));
    let pending = pending_of(code_page);
    let r = site
        .post(
            &app,
            &format!("{home}/login"),
            None,
            &format!("pending={pending}&code=000000"),
        )
        .await
        .expect(401);
    assert!(html(&r).contains("Invalid two-factor code"));
    let c = code(&secret, &clock, 0);
    let r = site
        .post(
            &app,
            &format!("{home}/login"),
            None,
            &format!("pending={pending}&code={c}"),
        )
        .await
        .expect(303);
    assert_eq!(location(&r), home);
    assert!(!site.session(&r).is_empty());
    // The pending sign-in ended with it; an unknown one goes back to the first step.
    let r = site
        .post(
            &app,
            &format!("{home}/login"),
            None,
            &format!("pending={pending}&code={c}"),
        )
        .await
        .expect(401);
    assert!(html(&r).contains("expired"));
}

on_both_backends!(dashboard_pages_sign_in_with_a_code);
/// The dashboard's two-factor page and the sign-in page's second step.
async fn dashboard_pages_sign_in_with_a_code(app: TestApp) {
    pages_sign_in_with_a_code(app, Kind::User).await
}

on_both_backends!(portal_pages_sign_in_with_a_code);
/// The portal's two-factor page and the sign-in page's second step.
async fn portal_pages_sign_in_with_a_code(app: TestApp) {
    pages_sign_in_with_a_code(app, Kind::Partner).await
}

on_both_backends!(dashboard_pages_lead_to_the_setup_page);
/// A member of a workspace that requires two-factor, without it, is led to the setup page.
async fn dashboard_pages_lead_to_the_setup_page(app: TestApp) {
    use crate::common::pages::{html, location, DASHBOARD};
    let seed = app.seed().await;
    app.member(seed.workspace_id, "ida@example.com", PASSWORD, "admin")
        .await;
    app.admin(
        "PATCH",
        &format!("/workspaces/{}", seed.workspace_id),
        Some(json!({"require_two_factor": true})),
    )
    .await
    .expect(200);
    let cookie = DASHBOARD.session(
        &DASHBOARD
            .post(
                &app,
                "/app/login",
                None,
                "email=ida@example.com&password=correct+horse+battery",
            )
            .await
            .expect(303),
    );
    for path in [format!("/app/programs/{}", seed.program_id), "/app".into()] {
        let r = DASHBOARD.get(&app, &path, Some(&cookie)).await.expect(303);
        assert_eq!(location(&r), "/app/two-factor?required=1", "{path}");
    }
    let r = DASHBOARD
        .get(&app, "/app/two-factor?required=1", Some(&cookie))
        .await
        .expect(200);
    assert!(html(&r).contains("required by your workspace"));
}

/// The audit log's entries of `action` in the seed's workspace.
async fn audit(app: &TestApp, seed: &Seed, action: &str) -> Vec<Value> {
    let r = app
        .admin(
            "GET",
            &format!(
                "/workspaces/{}/audit-log?action={action}",
                seed.workspace_id
            ),
            None,
        )
        .await
        .expect(200);
    r.body["data"].as_array().unwrap().clone()
}

async fn on_and_off_are_audited(app: TestApp, kind: Kind) {
    let (app, clock) = clocked(app);
    let seed = app.seed().await;
    let email = "gail@example.com";
    let token = account(&app, &seed, kind, email).await;
    let (secret, _) = enable(&app, &clock, kind, &token).await;
    let (actor, target) = match kind {
        Kind::User => ("user", "user"),
        Kind::Partner => ("partner", "partner"),
    };
    let on = audit(&app, &seed, "two_factor.enabled").await;
    assert_eq!(on.len(), 1, "{on:?}");
    assert_eq!(on[0]["actor"]["type"], actor);
    assert_eq!(on[0]["actor"]["email"], email);
    assert_eq!(on[0]["target"]["type"], target);
    assert!(
        !on[0]["details"].to_string().contains(&secret),
        "no secret in the log"
    );
    // A refused disable writes nothing; a done one writes its entry.
    call(&app, kind, &token, "disable", json!({"code": "000000"}))
        .await
        .expect(400);
    assert!(audit(&app, &seed, "two_factor.disabled").await.is_empty());
    clock.advance(30_000);
    call(
        &app,
        kind,
        &token,
        "disable",
        json!({"code": code(&secret, &clock, 0)}),
    )
    .await
    .expect(204);
    let off = audit(&app, &seed, "two_factor.disabled").await;
    assert_eq!(off.len(), 1, "{off:?}");
    assert_eq!(off[0]["actor"]["type"], actor);
}

on_both_backends!(user_on_and_off_are_audited);
async fn user_on_and_off_are_audited(app: TestApp) {
    on_and_off_are_audited(app, Kind::User).await
}

on_both_backends!(partner_on_and_off_are_audited);
async fn partner_on_and_off_are_audited(app: TestApp) {
    on_and_off_are_audited(app, Kind::Partner).await
}

on_both_backends!(payout_details_need_a_code_with_two_factor);
async fn payout_details_need_a_code_with_two_factor(app: TestApp) {
    let (app, clock) = clocked(app);
    let seed = app.seed().await;
    let token = account(&app, &seed, Kind::Partner, "hana@example.com").await;
    let (secret, codes) = enable(&app, &clock, Kind::Partner, &token).await;
    let auth = format!("Bearer {token}");
    let patch = |body: Value| {
        let app = &app;
        let auth = auth.clone();
        async move {
            app.send(
                "PATCH",
                "/api/partner/me",
                Some(body),
                &[("authorization", &auth)],
            )
            .await
        }
    };
    let change = json!({"payout_email": "pay@hana.example", "current_password": PASSWORD});
    let r = patch(change.clone()).await.expect(403);
    assert_eq!(
        r.error(),
        "code (from your authenticator app) is required to change the payout method or payout email"
    );
    let mut wrong = change.clone();
    wrong["code"] = json!("000000");
    let r = patch(wrong).await.expect(403);
    assert_eq!(r.error(), "Invalid two-factor code");
    clock.advance(30_000);
    let current = code(&secret, &clock, 0);
    let mut right = change.clone();
    right["code"] = json!(current);
    patch(right.clone()).await.expect(200);
    // The same code again is used up.
    right["payout_email"] = json!("other@hana.example");
    patch(right).await.expect(403);
    // A recovery code does instead of a code; a password alone never does.
    let mut recovered = change.clone();
    recovered["payout_email"] = json!("third@hana.example");
    recovered["recovery_code"] = json!(codes[0]);
    let r = patch(recovered).await.expect(200);
    assert_eq!(r.body["payout_email"], "third@hana.example");
}
