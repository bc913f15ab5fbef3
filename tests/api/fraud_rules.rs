//! Fraud rules: the program's `fraud_rules` (shown whole, changed by naming only the rules
//! to change), each rule flagging, rejecting and doing nothing when off, the review list
//! (`flagged=true`), payouts and flagged commissions, the IPs kept for the rules and
//! their purge, and concurrent plain sales (recorded set-based) with every rule on.

use std::sync::Arc;

use crate::common::*;
use reftrack::domain::time::ManualClock;
use reftrack::http::client_ip::ClientResolver;
use serde_json::{json, Value};

const DAY: i64 = 86_400_000;
/// 2026-03-02T10:00:00Z.
const START: i64 = 1_772_445_600_000;
/// The IP every rule's case clicks and signs in from.
const SHARED_IP: &str = "198.51.100.7";

/// An app on `clock` that believes `x-forwarded-for` (the tests' requests have no peer).
fn app_at(app: TestApp, clock: &Arc<ManualClock>) -> TestApp {
    app.with_clock(clock.clone())
        .with_resolver(ClientResolver::new(Some("*".parse().unwrap()), None).unwrap())
}

async fn set_rules(app: &TestApp, seed: &Seed, rules: Value) -> Reply {
    app.admin(
        "PATCH",
        &format!("/programs/{}", seed.program_id),
        Some(json!({ "fraud_rules": rules })),
    )
    .await
}

/// Every rule with `action`, but the ones named in `except` with theirs.
fn all(action: &str) -> Value {
    json!({"self_referral": action, "disposable_email": action, "duplicate_ip": action,
        "partner_ip": action, "fast_conversion": action})
}

/// A click through the seed's link from `ip`; its click id.
async fn click_from(app: &TestApp, seed: &Seed, ip: &str) -> String {
    let r = app
        .send(
            "POST",
            "/api/v1/track/click",
            Some(
                json!({"affiliate_url": format!("https://shop.example/?aff={}", seed.short_link)}),
            ),
            &[("x-forwarded-for", ip)],
        )
        .await
        .expect(200);
    r.body["click_id"].as_str().unwrap().to_string()
}

/// A customer who clicked from `ip` and signed up as `key` with `email`; then a sale of
/// `txn`. The sale's JSON answer.
async fn customer_buys(
    app: &TestApp,
    seed: &Seed,
    ip: &str,
    key: &str,
    email: Option<&str>,
    txn: &str,
) -> Value {
    let click_id = click_from(app, seed, ip).await;
    let mut lead = json!({"click_id": click_id, "customer_key": key});
    if let Some(e) = email {
        lead["email"] = json!(e);
    }
    app.post_auth("/api/v1/track/lead", &seed.api_token, lead)
        .await
        .expect(200);
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": txn, "amount_cents": 10000, "customer_key": key}),
    )
    .await
    .expect(200)
    .body
}

async fn commission(app: &TestApp, seed: &Seed, txn: &str) -> Value {
    app.sale_commission(seed.program_id, txn).await
}

async fn flagged(app: &TestApp, seed: &Seed) -> Vec<String> {
    let r = app
        .admin(
            "GET",
            &format!("/programs/{}/commissions?flagged=true", seed.program_id),
            None,
        )
        .await
        .expect(200);
    r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["transaction_id"].as_str().unwrap().to_string())
        .collect()
}

/// Gives the seed's partner the email `email` and a portal account, and signs it in
/// through the partner API from `ip`.
async fn partner_signs_in(app: &TestApp, seed: &Seed, email: &str, ip: &str) {
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"email": email, "payout_method": "paypal", "payout_email": "pay@partner.example"})),
    )
    .await
    .expect(200);
    let token = app.invite_token(seed.partner_id, email).await;
    app.post(
        "/api/partner/auth/accept-invite",
        json!({"token": token, "password": "partner password 1"}),
    )
    .await
    .expect(200);
    app.send(
        "POST",
        "/api/partner/auth/login",
        Some(json!({"email": email, "password": "partner password 1"})),
        &[("x-forwarded-for", ip)],
    )
    .await
    .expect(200);
}

on_both_backends!(the_program_shows_its_rules_and_a_patch_changes_only_those_it_names);
async fn the_program_shows_its_rules_and_a_patch_changes_only_those_it_names(app: TestApp) {
    let seed = app.seed().await;
    let path = format!("/programs/{}", seed.program_id);
    let r = app.admin("GET", &path, None).await.expect(200);
    assert_eq!(
        r.body["fraud_rules"],
        json!({"self_referral": "flag", "disposable_email": "flag", "duplicate_ip": "off",
            "partner_ip": "off", "fast_conversion": "off"})
    );
    let r = set_rules(&app, &seed, json!({"disposable_email": "reject"}))
        .await
        .expect(200);
    assert_eq!(r.body["fraud_rules"]["disposable_email"], "reject");
    assert_eq!(r.body["fraud_rules"]["self_referral"], "flag");
    let r = set_rules(&app, &seed, json!({"fast_conversion": "flag"}))
        .await
        .expect(200);
    assert_eq!(r.body["fraud_rules"]["disposable_email"], "reject", "kept");
    assert_eq!(r.body["fraud_rules"]["fast_conversion"], "flag");

    let r = set_rules(&app, &seed, json!({"vpn": "flag"}))
        .await
        .expect(400);
    assert!(r.error().contains("unknown rule \"vpn\""), "{}", r.error());
    let r = set_rules(&app, &seed, json!({"partner_ip": "block"}))
        .await
        .expect(400);
    assert!(
        r.error()
            .contains("fraud_rules.partner_ip must be one of: off, flag, reject"),
        "{}",
        r.error()
    );
    set_rules(&app, &seed, json!({"partner_ip": 1}))
        .await
        .expect(400);
    set_rules(&app, &seed, json!(["flag"])).await.expect(400);
    // Nothing of a refused change is kept.
    let r = app.admin("GET", &path, None).await.expect(200);
    assert_eq!(r.body["fraud_rules"]["partner_ip"], "off");
    assert_eq!(r.body["fraud_rules"]["fast_conversion"], "flag");
}

on_both_backends!(each_rule_flags_rejects_or_does_nothing);
async fn each_rule_flags_rejects_or_does_nothing(app: TestApp) {
    let clock = Arc::new(ManualClock::at(START));
    let app = app_at(app, &clock);
    let seed = app
        .seed_with(json!({"commission_hold_days": 0, "min_payout_cents": 0}))
        .await;
    // The partner's own address is at a disposable-mail domain, it signs in from the
    // shared IP, and a first customer converts from that IP: a customer of the shared IP
    // with the partner's email who buys at once makes every rule hold.
    let partner_email = "pat@mailinator.com";
    partner_signs_in(&app, &seed, partner_email, SHARED_IP).await;
    set_rules(&app, &seed, all("off")).await.expect(200);
    customer_buys(&app, &seed, SHARED_IP, "first", None, "first").await;
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM conversion_ips WHERE ip = '{SHARED_IP}' AND partner_id = {}",
            seed.partner_id
        ))
        .await,
        1,
        "the conversion's IP is kept under the partner"
    );
    let rules = [
        "self_referral",
        "disposable_email",
        "duplicate_ip",
        "partner_ip",
        "fast_conversion",
    ];
    for (n, rule) in rules.iter().enumerate() {
        for action in ["flag", "reject"] {
            let mut only = all("off");
            only[rule] = json!(action);
            set_rules(&app, &seed, only).await.expect(200);
            let txn = format!("{rule}-{action}");
            let key = format!("k-{n}-{action}");
            let sale = customer_buys(
                &app,
                &seed,
                SHARED_IP,
                &key,
                Some("Pat+shop@mailinator.com"),
                &txn,
            )
            .await;
            assert!(sale["commission_id"].is_i64(), "{txn}: {sale}");
            let c = commission(&app, &seed, &txn).await;
            assert_eq!(c["flags"], json!([rule]), "{txn}");
            if action == "flag" {
                assert_eq!(c["status"], "pending", "{txn}: held");
                assert!(flagged(&app, &seed).await.contains(&txn), "{txn}");
            } else {
                assert_eq!(c["status"], "rejected", "{txn}");
                assert_eq!(c["reject_reason"], json!(rule), "{txn}");
                assert!(!flagged(&app, &seed).await.contains(&txn), "{txn}");
            }
        }
    }
    // Every rule off: nothing flags, and the hold (none) makes it due.
    set_rules(&app, &seed, all("off")).await.expect(200);
    customer_buys(
        &app,
        &seed,
        SHARED_IP,
        "all-off",
        Some("Pat@mailinator.com"),
        "all-off",
    )
    .await;
    let c = commission(&app, &seed, "all-off").await;
    assert_eq!(c["flags"], json!([]));
    assert_eq!(c["status"], "approved");
    // Every rule flagging: every rule is named.
    set_rules(&app, &seed, all("flag")).await.expect(200);
    customer_buys(
        &app,
        &seed,
        SHARED_IP,
        "all-on",
        Some("Pat@mailinator.com"),
        "all-on",
    )
    .await;
    let c = commission(&app, &seed, "all-on").await;
    assert_eq!(c["flags"], json!(rules));
    // A rejected commission counts in no figure.
    let totals = app
        .count(&format!(
            "SELECT total_commission_cents FROM partner_programs WHERE partner_id = {}",
            seed.partner_id
        ))
        .await;
    let counted = app
        .count(&format!(
            "SELECT CAST(COALESCE(SUM(amount_cents - reversed_cents), 0) AS BIGINT) FROM commissions \
             WHERE partner_id = {} AND status <> 'rejected'",
            seed.partner_id
        ))
        .await;
    assert_eq!(totals, counted);
}

on_both_backends!(rules_that_hold_for_nobody_flag_nothing);
async fn rules_that_hold_for_nobody_flag_nothing(app: TestApp) {
    let clock = Arc::new(ManualClock::at(START));
    let app = app_at(app, &clock);
    let seed = app.seed().await;
    partner_signs_in(&app, &seed, "pat@example.com", "203.0.113.9").await;
    set_rules(&app, &seed, all("reject")).await.expect(200);
    // Another IP than the partner's, a real address, a conversion 20 s after the click.
    let click_id = click_from(&app, &seed, "192.0.2.1").await;
    clock.advance(20_000);
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": "clean", "amount_cents": 10000, "click_id": click_id,
            "customer_email": "ann@example.org"}),
    )
    .await
    .expect(200);
    let c = commission(&app, &seed, "clean").await;
    assert_eq!(c["flags"], json!([]));
    assert_eq!(c["status"], "pending");
    // The same customer IP as that one, but another partner's conversion is not this
    // one's; and 10 s after the click is no longer fast.
    let (other_partner, other_link) = app.add_partner(&seed, "other").await;
    let _ = other_partner;
    let other = Seed {
        short_link: other_link,
        ..seed.clone()
    };
    let click_id = click_from(&app, &other, "192.0.2.1").await;
    clock.advance(10_000);
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": "other-partner", "amount_cents": 10000, "click_id": click_id}),
    )
    .await
    .expect(200);
    assert_eq!(
        commission(&app, &seed, "other-partner").await["flags"],
        json!([])
    );
}

on_both_backends!(fast_conversions_are_flagged_and_plain_sales_still_batch);
async fn fast_conversions_are_flagged_and_plain_sales_still_batch(app: TestApp) {
    let clock = Arc::new(ManualClock::at(START));
    let app = app_at(app, &clock);
    let seed = app.seed().await;
    set_rules(&app, &seed, json!({"fast_conversion": "flag"}))
        .await
        .expect(200);
    let quick = click_from(&app, &seed, "192.0.2.10").await;
    let slow = click_from(&app, &seed, "192.0.2.11").await;
    clock.advance(9_999);
    for (txn, click) in [("quick", &quick)] {
        app.post_auth(
            "/api/v1/track/sale",
            &seed.api_token,
            json!({"transaction_id": txn, "amount_cents": 500, "click_id": click}),
        )
        .await
        .expect(200);
    }
    clock.advance(1);
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": "slow", "amount_cents": 500, "click_id": slow}),
    )
    .await
    .expect(200);
    assert_eq!(
        commission(&app, &seed, "quick").await["flags"],
        json!(["fast_conversion"])
    );
    assert_eq!(commission(&app, &seed, "slow").await["flags"], json!([]));
    assert_eq!(flagged(&app, &seed).await, vec!["quick".to_string()]);
    // The clicks kept their IPs.
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM affiliate_click_events WHERE ip IN ('192.0.2.10', '192.0.2.11')"
        )
        .await,
        2
    );
    // A lead's disposable email keeps its sale out of the set-based batch, which would
    // not flag it: the default rules flag it.
    set_rules(&app, &seed, json!({"fast_conversion": "off"}))
        .await
        .expect(200);
    customer_buys(
        &app,
        &seed,
        "192.0.2.12",
        "temp",
        Some("someone@yopmail.com"),
        "temp-mail",
    )
    .await;
    assert_eq!(
        commission(&app, &seed, "temp-mail").await["flags"],
        json!(["disposable_email"])
    );
    let r = app
        .admin(
            "GET",
            &format!("/programs/{}/commissions?flagged=maybe", seed.program_id),
            None,
        )
        .await
        .expect(400);
    assert!(r.error().contains("flagged"), "{}", r.error());
}

on_both_backends!(a_payout_takes_a_flagged_commission_only_once_an_owner_approved_it);
async fn a_payout_takes_a_flagged_commission_only_once_an_owner_approved_it(app: TestApp) {
    let clock = Arc::new(ManualClock::at(START));
    let app = app_at(app, &clock);
    let seed = app
        .seed_with(json!({"commission_hold_days": 0, "min_payout_cents": 0}))
        .await;
    app.admin(
        "PATCH",
        &format!("/partners/{}", seed.partner_id),
        Some(json!({"payout_method": "paypal", "payout_email": "pay@partner.example"})),
    )
    .await
    .expect(200);
    customer_buys(
        &app,
        &seed,
        "192.0.2.20",
        "a",
        Some("a@mailinator.com"),
        "held-a",
    )
    .await;
    customer_buys(
        &app,
        &seed,
        "192.0.2.21",
        "b",
        Some("b@mailinator.com"),
        "held-b",
    )
    .await;
    clock.advance(40 * DAY);
    app.state.app.approve_due_commissions().await.unwrap();
    assert_eq!(
        flagged(&app, &seed).await.len(),
        2,
        "held whatever the hold"
    );
    let a = commission(&app, &seed, "held-a").await["id"]
        .as_i64()
        .unwrap();
    app.admin("POST", &format!("/commissions/{a}/approve"), None)
        .await
        .expect(200);
    assert_eq!(flagged(&app, &seed).await, vec!["held-b".to_string()]);
    let p = app
        .admin(
            "POST",
            &format!("/programs/{}/payouts", seed.program_id),
            Some(json!({})),
        )
        .await
        .expect(201);
    assert_eq!(p.body["items"][0]["commission_count"], 1);
    assert_eq!(
        commission(&app, &seed, "held-a").await["payout_id"],
        p.body["id"]
    );
    assert!(commission(&app, &seed, "held-b").await["payout_id"].is_null());
    // Rejecting the other takes it off the list for good.
    let b = commission(&app, &seed, "held-b").await["id"]
        .as_i64()
        .unwrap();
    app.admin(
        "POST",
        &format!("/commissions/{b}/reject"),
        Some(json!({"reason": "test order"})),
    )
    .await
    .expect(200);
    assert!(flagged(&app, &seed).await.is_empty());
}

on_both_backends!(ips_are_purged_after_their_retention);
async fn ips_are_purged_after_their_retention(app: TestApp) {
    let clock = Arc::new(ManualClock::at(START));
    let app = app_at(app, &clock);
    let seed = app.seed().await;
    partner_signs_in(&app, &seed, "pat@example.com", "203.0.113.50").await;
    customer_buys(&app, &seed, "192.0.2.30", "old", None, "old").await;
    assert_eq!(
        app.count("SELECT COUNT(*) FROM partner_sign_in_ips").await,
        1
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM conversion_ips").await, 1);
    // 89 days on, nothing is purged; a newer click comes.
    clock.advance(89 * DAY);
    assert_eq!(app.state.app.purge_old_ips().await.unwrap(), 0);
    click_from(&app, &seed, "192.0.2.31").await;
    // Past 90 days, the old ones go; the newer click keeps its IP.
    clock.advance(2 * DAY);
    assert_eq!(app.state.app.purge_old_ips().await.unwrap(), 3);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events WHERE ip IS NOT NULL")
            .await,
        1
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events WHERE ip = '192.0.2.31'")
            .await,
        1
    );
    assert_eq!(app.count("SELECT COUNT(*) FROM conversion_ips").await, 0);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM partner_sign_in_ips").await,
        0
    );
    // The click events themselves stay.
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_click_events")
            .await,
        2
    );
}

/// The click id of a click from `ip` and a lead of it as `key` (no email).
async fn customer_from(app: &TestApp, seed: &Seed, ip: &str, key: &str) {
    let click_id = click_from(app, seed, ip).await;
    app.post_auth(
        "/api/v1/track/lead",
        &seed.api_token,
        json!({"click_id": click_id, "customer_key": key}),
    )
    .await
    .expect(200);
}

on_both_backends!(concurrent_plain_sales_with_every_rule_on_get_the_flows_verdicts);
async fn concurrent_plain_sales_with_every_rule_on_get_the_flows_verdicts(app: TestApp) {
    let clock = Arc::new(ManualClock::at(START));
    let app = app_at(app, &clock);
    let seed = app.seed().await;
    let partner_ip = "203.0.113.77";
    let converted_ip = "198.51.100.20";
    partner_signs_in(&app, &seed, "pat@example.com", partner_ip).await;
    let mut rules = all("flag");
    rules["partner_ip"] = json!("reject");
    set_rules(&app, &seed, rules).await.expect(200);
    // Other customers of the partner converted from `converted_ip` and `partner_ip`.
    customer_buys(&app, &seed, converted_ip, "prior", None, "prior").await;
    customer_buys(&app, &seed, partner_ip, "prior-2", None, "prior-2").await;

    // 50 customers, by `i % 10`: 0 and 5 clicked from the partner's IP (which another
    // customer converted from as well), 1 and 6 from the converted one, 2 less than 10 s before the sales, 7 exactly 10 s before, 3 and 8
    // from IPs of their own, 4 and 9 from an IP the two share (a pair per ten). No
    // customer has an email: sales without one are plain, and the committer may record
    // them set-based.
    const N: usize = 50;
    let ip_of = |i: usize| match i % 10 {
        0 | 5 => partner_ip.to_string(),
        1 | 6 => converted_ip.to_string(),
        4 | 9 => format!("192.0.2.{}", 200 + i / 10),
        _ => format!("192.0.2.{i}"),
    };
    for i in (0..N).filter(|i| ![2, 7].contains(&(i % 10))) {
        customer_from(&app, &seed, &ip_of(i), &format!("k{i}")).await;
    }
    clock.advance(60_000);
    for i in (0..N).filter(|i| i % 10 == 7) {
        customer_from(&app, &seed, &ip_of(i), &format!("k{i}")).await;
    }
    clock.advance(5_000);
    for i in (0..N).filter(|i| i % 10 == 2) {
        customer_from(&app, &seed, &ip_of(i), &format!("k{i}")).await;
    }
    clock.advance(5_000);

    let sales = (0..N).map(|i| {
        app.post_auth(
            "/api/v1/track/sale",
            &seed.api_token,
            json!({"transaction_id": format!("t{i}"), "amount_cents": 10000,
                "customer_key": format!("k{i}")}),
        )
    });
    for r in futures::future::join_all(sales).await {
        r.expect(200);
    }

    let all_commissions = app
        .admin(
            "GET",
            &format!("/programs/{}/commissions?limit=100", seed.program_id),
            None,
        )
        .await
        .expect(200);
    let of = |txn: &str| {
        all_commissions.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["transaction_id"] == txn)
            .unwrap_or_else(|| panic!("no commission of {txn}"))
            .clone()
    };
    let mut held = Vec::new();
    for i in 0..N {
        let txn = format!("t{i}");
        let c = of(&txn);
        match i % 10 {
            0 | 5 => {
                assert_eq!(c["flags"], json!(["duplicate_ip", "partner_ip"]), "{txn}");
                assert_eq!(c["status"], "rejected", "{txn}");
                assert_eq!(c["reject_reason"], "partner_ip", "{txn}");
            }
            1 | 6 | 2 => {
                let rule = if i % 10 == 2 {
                    "fast_conversion"
                } else {
                    "duplicate_ip"
                };
                assert_eq!(c["flags"], json!([rule]), "{txn}");
                assert_eq!(c["status"], "pending", "{txn}");
                held.push(txn);
            }
            4 => {
                // Two first purchases from one IP: whichever is recorded second finds the
                // other's conversion.
                let pair = format!("t{}", i + 5);
                let flags = [c["flags"].clone(), of(&pair)["flags"].clone()];
                let dup = json!(["duplicate_ip"]);
                assert!(
                    flags == [dup.clone(), json!([])] || flags == [json!([]), dup],
                    "{txn} and {pair}: {flags:?}"
                );
                held.push(if flags[0] == json!([]) { pair } else { txn });
            }
            9 => {}
            _ => {
                assert_eq!(c["flags"], json!([]), "{txn}");
                assert_eq!(c["status"], "pending", "{txn}");
            }
        }
    }
    let mut listed = flagged(&app, &seed).await;
    listed.retain(|t| !t.starts_with("prior"));
    listed.sort();
    held.sort();
    assert_eq!(listed, held);
    let report = reftrack::verify::check(&*app.store).await.unwrap();
    assert!(report.ok(), "{}", report.to_json());
}

on_both_backends!(lead_emails_stored_before_the_rule_are_marked);
async fn lead_emails_stored_before_the_rule_are_marked(app: TestApp) {
    let seed = app.seed().await;
    for (key, email) in [("a", "ann@example.com"), ("b", "bob@yopmail.com")] {
        let click_id = app.click(&seed.short_link).await;
        app.post_auth(
            "/api/v1/track/lead",
            &seed.api_token,
            json!({"click_id": click_id, "customer_key": key, "email": email}),
        )
        .await
        .expect(200);
    }
    let marked = "SELECT COUNT(*) FROM customers WHERE email_disposable IS NOT NULL";
    assert_eq!(app.count(marked).await, 2, "new leads are marked as stored");
    // As if stored before the rule existed.
    reftrack_exec(
        &app.database_url,
        "UPDATE customers SET email_disposable = NULL",
    )
    .await;
    assert_eq!(app.state.app.mark_disposable_emails().await.unwrap(), 2);
    assert_eq!(app.state.app.mark_disposable_emails().await.unwrap(), 0);
    assert_eq!(
        app.count("SELECT COUNT(*) FROM customers WHERE email_disposable = TRUE")
            .await,
        1
    );
    assert_eq!(
        app.count(
            "SELECT COUNT(*) FROM customers WHERE email_disposable = FALSE \
             AND email = 'ann@example.com'"
        )
        .await,
        1
    );
}
