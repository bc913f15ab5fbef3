use proptest::prelude::*;

use super::*;
use crate::lifecycle::{self, Approval};
use crate::status::{CommissionFlag, CommissionStatus};

fn facts() -> SaleFacts<'static> {
    SaleFacts {
        at: 1_000_000,
        ..SaleFacts::default()
    }
}

fn one(rule: Rule, action: Action) -> FraudRules {
    let mut rules = FraudRules::all(Action::Off);
    rules.set(rule, action);
    rules
}

#[test]
fn defaults_flag_self_referrals_and_disposable_mail_only() {
    let d = FraudRules::default();
    assert_eq!(d.get(Rule::SelfReferral), Action::Flag);
    assert_eq!(d.get(Rule::DisposableEmail), Action::Flag);
    assert_eq!(d.get(Rule::DuplicateIp), Action::Off);
    assert_eq!(d.get(Rule::PartnerIp), Action::Off);
    assert_eq!(d.get(Rule::FastConversion), Action::Off);
    assert_eq!(
        d.to_json(),
        r#"{"self_referral":"flag","disposable_email":"flag","duplicate_ip":"off","partner_ip":"off","fast_conversion":"off"}"#
    );
    assert_eq!(FraudRules::from_json(&d.to_json()), Ok(d));
}

#[test]
fn a_patch_changes_only_the_rules_it_names() {
    let patch = FraudRulesPatch::parse(&serde_json::json!({"disposable_email": "reject"})).unwrap();
    let merged = FraudRules::default().merge(&patch);
    assert_eq!(merged.get(Rule::DisposableEmail), Action::Reject);
    assert_eq!(merged.get(Rule::SelfReferral), Action::Flag);
    assert_eq!(
        FraudRules::default().merge(&FraudRulesPatch::default()),
        FraudRules::default()
    );
}

#[test]
fn unknown_rules_and_actions_are_named() {
    let e = FraudRulesPatch::parse(&serde_json::json!({"vpn": "flag"})).unwrap_err();
    assert_eq!(e, FraudRulesError::UnknownRule("vpn".into()));
    assert!(e.to_string().contains("unknown rule \"vpn\""), "{e}");
    assert!(e.to_string().contains("fast_conversion"), "{e}");
    let e = FraudRulesPatch::parse(&serde_json::json!({"partner_ip": "block"})).unwrap_err();
    assert_eq!(
        e.to_string(),
        "fraud_rules.partner_ip must be one of: off, flag, reject (got \"block\")"
    );
    assert!(FraudRulesPatch::parse(&serde_json::json!({"partner_ip": 1})).is_err());
    assert_eq!(
        FraudRulesPatch::parse(&serde_json::json!(["flag"])),
        Err(FraudRulesError::NotAnObject)
    );
    assert!(serde_json::from_str::<FraudRules>(r#"{"x":"off"}"#).is_err());
}

#[test]
fn self_referral_holds_for_the_partners_email() {
    let f = SaleFacts {
        customer_emails: vec!["Ann+shop@Example.com"],
        partner_emails: vec!["ann@example.com"],
        ..facts()
    };
    assert!(holds(Rule::SelfReferral, &f));
    let other = SaleFacts {
        customer_emails: vec!["bob@example.com"],
        ..f.clone()
    };
    assert!(!holds(Rule::SelfReferral, &other));
}

#[test]
fn disposable_email_holds_for_listed_domains_and_their_subdomains() {
    assert!(is_disposable("someone@mailinator.com"));
    assert!(is_disposable(" Someone@MAILINATOR.com "));
    assert!(is_disposable("someone@eu.mailinator.com"));
    assert!(is_disposable("someone@a.b.33mail.com"));
    assert!(!is_disposable("someone@example.com"));
    assert!(!is_disposable("someone@gmail.com"));
    assert!(!is_disposable("mailinator.com"), "not an address");
    assert!(!is_disposable("someone@"));
    assert!(!is_disposable("someone@example.net"));
    let f = SaleFacts {
        customer_emails: vec!["a@example.com", "b@yopmail.com"],
        ..facts()
    };
    assert!(holds(Rule::DisposableEmail, &f));
    assert!(!holds(Rule::DisposableEmail, &facts()));
}

#[test]
fn ip_rules_hold_on_their_facts() {
    let f = SaleFacts {
        ip_converted_before: true,
        ..facts()
    };
    assert!(holds(Rule::DuplicateIp, &f));
    assert!(!holds(Rule::PartnerIp, &f));
    let f = SaleFacts {
        ip_partner_signed_in: true,
        ..facts()
    };
    assert!(holds(Rule::PartnerIp, &f));
    assert!(!holds(Rule::DuplicateIp, &f));
}

#[test]
fn fast_conversion_holds_under_ten_seconds_after_the_click() {
    let at = 1_000_000;
    let f = |click_at| SaleFacts {
        click_at,
        at,
        ..SaleFacts::default()
    };
    assert!(holds(Rule::FastConversion, &f(Some(at - 9_999))));
    assert!(holds(Rule::FastConversion, &f(Some(at))));
    assert!(!holds(Rule::FastConversion, &f(Some(at - 10_000))));
    assert!(!holds(Rule::FastConversion, &f(None)), "no click");
    assert!(!holds(Rule::FastConversion, &f(Some(i64::MIN))));
}

/// Facts for which every rule holds.
fn every_rule_holds() -> SaleFacts<'static> {
    SaleFacts {
        customer_emails: vec!["ann@mailinator.com"],
        partner_emails: vec!["ann@mailinator.com"],
        ip_converted_before: true,
        ip_partner_signed_in: true,
        click_at: Some(999_999),
        at: 1_000_000,
    }
}

#[test]
fn each_rule_flags_rejects_or_does_nothing() {
    let all_facts = every_rule_holds();
    for rule in Rule::ALL {
        let v = verdict(&all_facts, &one(rule, Action::Flag));
        assert_eq!(v.flags, vec![rule.flag()], "{rule}");
        assert_eq!(lifecycle::approval(&v), Approval::ByOwner, "{rule}");
        let v = verdict(&all_facts, &one(rule, Action::Reject));
        assert_eq!(lifecycle::approval(&v), Approval::Rejected(rule), "{rule}");
        let state = lifecycle::new_commission(lifecycle::approval(&v));
        assert_eq!(state.status, CommissionStatus::Rejected);
        assert_eq!(state.reject_reason, Some(rule.as_str()));
        let v = verdict(&all_facts, &one(rule, Action::Off));
        assert!(v.flags.is_empty(), "{rule}");
        assert_eq!(v.holding.len(), 5, "facts still hold");
        assert_eq!(lifecycle::approval(&v), Approval::AfterHold, "{rule}");
    }
}

#[test]
fn a_lead_meets_only_the_self_referral_rule() {
    let all_facts = every_rule_holds();
    let v = lead_verdict(&all_facts, &FraudRules::all(Action::Reject));
    assert_eq!(v.holding, vec![Rule::SelfReferral]);
    assert_eq!(v.rejected_by, Some(Rule::SelfReferral));
    let mut flag_all = FraudRules::all(Action::Reject);
    flag_all.set(Rule::SelfReferral, Action::Flag);
    let v = lead_verdict(&all_facts, &flag_all);
    assert_eq!(v.flags, vec![CommissionFlag::SelfReferral]);
    assert_eq!(v.rejected_by, None);
    let other = SaleFacts {
        customer_emails: vec!["bob@example.com"],
        ..all_facts
    };
    let v = lead_verdict(&other, &FraudRules::all(Action::Reject));
    assert!(v.flags.is_empty() && v.holding.is_empty());
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![Just(Action::Off), Just(Action::Flag), Just(Action::Reject)]
}

fn rules() -> impl Strategy<Value = FraudRules> {
    proptest::array::uniform5(action()).prop_map(FraudRules)
}

proptest! {
    #[test]
    fn the_verdict_follows_the_actions(
        rules in rules(),
        own in any::<bool>(),
        disposable in any::<bool>(),
        dup in any::<bool>(),
        partner in any::<bool>(),
        gap in prop::option::of(0_i64..20_000),
        hold_days in 0_i64..40,
        later in 0_i64..(100 * DAY_MS),
    ) {
        let customer = if disposable { "ann@mailinator.com" } else { "ann@example.com" };
        let partner_email = if own { customer } else { "pat@example.org" };
        let at = 50 * DAY_MS;
        let f = SaleFacts {
            customer_emails: vec![customer],
            partner_emails: vec![partner_email],
            ip_converted_before: dup,
            ip_partner_signed_in: partner,
            click_at: gap.map(|g| at - g),
            at,
        };
        let v = verdict(&f, &rules);
        // Flags: exactly the rules that hold and are on, in order.
        let expected: Vec<_> = v.holding.iter().filter(|r| rules.is_on(**r)).map(|r| r.flag()).collect();
        prop_assert_eq!(&v.flags, &expected);
        for r in &v.holding { prop_assert!(holds(*r, &f)); }
        // Rejected iff a holding rule rejects; waits iff flagged and not rejected.
        let rejects = v.holding.iter().any(|r| rules.get(*r) == Action::Reject);
        prop_assert_eq!(v.rejected_by.is_some(), rejects);
        let state = lifecycle::new_commission(lifecycle::approval(&v));
        prop_assert_eq!(state.status == CommissionStatus::Rejected, rejects);
        prop_assert_eq!(state.manual_approval, !rejects && !v.flags.is_empty());
        // No payout ever takes a flagged commission that no owner approved, at any time.
        if !v.flags.is_empty() {
            let hold = lifecycle::hold_ms(hold_days);
            prop_assert!(!lifecycle::payout_may_take(
                state.status, state.manual_approval, false, at, hold, at + later
            ));
        }
        // All off: nothing flags, whatever holds.
        let off = verdict(&f, &FraudRules::all(Action::Off));
        prop_assert!(off.flags.is_empty());
        prop_assert_eq!(lifecycle::approval(&off), Approval::AfterHold);
    }

    #[test]
    fn rules_round_trip_through_json(rules in rules()) {
        prop_assert_eq!(FraudRules::from_json(&rules.to_json()), Ok(rules));
        let patch = FraudRulesPatch(rules.iter().collect());
        prop_assert_eq!(FraudRules::default().merge(&patch), rules);
    }
}
