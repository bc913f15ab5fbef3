use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::commission::MAX_FLAT_CENTS;

const JAN1: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const DAY: i64 = 86_400_000;

fn facts() -> SaleFacts<'static> {
    SaleFacts {
        amount_cents: 12_000,
        at: JAN1,
        ..SaleFacts::default()
    }
}

fn pct(bps: i64) -> CommissionRule {
    CommissionRule::Percentage { bps }
}

fn flat(amount_cents: i64) -> CommissionRule {
    CommissionRule::Flat { amount_cents }
}

fn cond(attribute: Attribute, operator: Operator, value: ConditionValue) -> Condition {
    Condition {
        attribute,
        operator,
        value,
    }
}

fn text(t: &str) -> ConditionValue {
    ConditionValue::Text(t.into())
}

fn texts(ts: &[&str]) -> ConditionValue {
    ConditionValue::Texts(ts.iter().map(|t| t.to_string()).collect())
}

fn modifier(conditions: Vec<Condition>, rule: CommissionRule) -> Modifier {
    Modifier {
        conditions,
        rule,
        max_duration_months: None,
    }
}

fn reward(rule: CommissionRule, modifiers: Vec<Modifier>) -> Reward {
    Reward {
        rule,
        max_duration_months: None,
        modifiers,
    }
}

fn earned(r: SaleReward) -> Earned {
    match r {
        SaleReward::Earns(e) => e,
        other => panic!("expected a commission, got {other:?}"),
    }
}

// ---------------------------------------------------------------- conditions

#[test]
fn text_operators_hold_as_the_spec_says_absent_values_included() {
    use Operator::*;
    for (attribute, hit, miss) in [
        (Attribute::ProductId, "prod_a", "prod_b"),
        (Attribute::CustomerCountry, "DE", "FR"),
    ] {
        let with = |v: Option<&'static str>| {
            let mut f = facts();
            match attribute {
                Attribute::ProductId => f.product_id = v,
                _ => f.customer_country = v,
            }
            f
        };
        let cases = [
            (Eq, text(hit), [true, false, false]),
            (Neq, text(hit), [false, true, true]),
            (In, texts(&["XX", hit]), [true, false, false]),
            (NotIn, texts(&["XX", hit]), [false, true, true]),
        ];
        for (operator, value, expected) in cases {
            let c = cond(attribute, operator, value);
            let got = [
                c.holds(&with(Some(hit))),
                c.holds(&with(Some(miss))),
                c.holds(&with(None)),
            ];
            assert_eq!(
                got, expected,
                "{attribute:?} {operator:?} [hit, miss, absent]"
            );
        }
    }
}

#[test]
fn country_comparisons_are_exact() {
    let c = cond(Attribute::CustomerCountry, Operator::Eq, text("DE"));
    let f = SaleFacts {
        customer_country: Some("de"),
        ..facts()
    };
    assert!(!c.holds(&f));
}

#[test]
fn integer_operators_compare_the_sales_value() {
    use Operator::*;
    // [below, equal, above] the condition's 100.
    let cases = [
        (Eq, [false, true, false]),
        (Gt, [false, false, true]),
        (Gte, [false, true, true]),
        (Lt, [true, false, false]),
        (Lte, [true, true, false]),
    ];
    for attribute in [
        Attribute::AmountCents,
        Attribute::PartnerSales,
        Attribute::PartnerRevenueCents,
    ] {
        for (operator, expected) in cases {
            let c = cond(attribute, operator, ConditionValue::Integer(100));
            let got = [99, 100, 101].map(|n| {
                let mut f = facts();
                match attribute {
                    Attribute::AmountCents => f.amount_cents = n,
                    Attribute::PartnerSales => f.partner_sales = n,
                    _ => f.partner_revenue_cents = n,
                }
                c.holds(&f)
            });
            // partner_sales and partner_revenue_cents take no eq: it never holds.
            let expected = if operator == Eq && attribute != Attribute::AmountCents {
                [false; 3]
            } else {
                expected
            };
            assert_eq!(got, expected, "{attribute:?} {operator:?}");
        }
    }
}

#[test]
fn recurring_is_compared_with_a_boolean() {
    for wanted in [true, false] {
        let c = cond(
            Attribute::Recurring,
            Operator::Eq,
            ConditionValue::Boolean(wanted),
        );
        for recurring in [true, false] {
            let f = SaleFacts {
                recurring,
                ..facts()
            };
            assert_eq!(c.holds(&f), recurring == wanted);
        }
    }
}

#[test]
fn a_condition_that_does_not_fit_its_attribute_never_holds() {
    let f = SaleFacts {
        product_id: Some("1"),
        ..facts()
    };
    for c in [
        cond(Attribute::ProductId, Operator::Gt, text("0")),
        cond(Attribute::ProductId, Operator::Neq, texts(&["x"])),
        cond(Attribute::ProductId, Operator::NotIn, text("x")),
        cond(Attribute::AmountCents, Operator::Eq, text("12000")),
        cond(
            Attribute::AmountCents,
            Operator::Neq,
            ConditionValue::Integer(1),
        ),
        cond(
            Attribute::Recurring,
            Operator::Eq,
            ConditionValue::Integer(0),
        ),
        cond(
            Attribute::Recurring,
            Operator::Neq,
            ConditionValue::Boolean(true),
        ),
    ] {
        assert!(!c.holds(&f), "{c:?}");
    }
}

#[test]
fn every_attribute_and_operator_has_its_wire_name() {
    for a in Attribute::ALL {
        assert_eq!(Attribute::parse(a.as_str()), Some(a));
        assert_eq!(serde_json::to_value(a).unwrap(), json!(a.as_str()));
    }
    for o in Operator::ALL {
        assert_eq!(Operator::parse(o.as_str()), Some(o));
        assert_eq!(serde_json::to_value(o).unwrap(), json!(o.as_str()));
    }
    assert_eq!(Attribute::parse("country"), None);
    assert_eq!(Operator::parse("EQ"), None);
}

// ---------------------------------------------------------------- the decision

fn tiered() -> Reward {
    reward(
        pct(3000),
        vec![
            modifier(
                vec![cond(
                    Attribute::ProductId,
                    Operator::In,
                    texts(&["prod_enterprise"]),
                )],
                pct(4000),
            ),
            modifier(
                vec![cond(
                    Attribute::PartnerRevenueCents,
                    Operator::Gte,
                    ConditionValue::Integer(1_000_000),
                )],
                pct(3500),
            ),
            modifier(
                vec![cond(
                    Attribute::PartnerRevenueCents,
                    Operator::Gte,
                    ConditionValue::Integer(0),
                )],
                flat(1),
            ),
        ],
    )
}

#[test]
fn the_first_modifier_whose_conditions_hold_applies() {
    let r = tiered();
    let enterprise_and_big = SaleFacts {
        product_id: Some("prod_enterprise"),
        partner_revenue_cents: 2_000_000,
        ..facts()
    };
    let e = earned(sale_reward(Some(&r), &enterprise_and_big, "usd"));
    assert_eq!(e.applied, Applied::Modifier(0));
    assert_eq!(e.amount_cents, 4_800);
    assert_eq!(e.description, "40% of $120.00 (product is prod_enterprise)");

    let big = SaleFacts {
        partner_revenue_cents: 1_000_000,
        ..facts()
    };
    let e = earned(sale_reward(Some(&r), &big, "usd"));
    assert_eq!(e.applied, Applied::Modifier(1));
    assert_eq!(e.amount_cents, 4_200);

    // The third always holds: the base is never reached.
    let e = earned(sale_reward(Some(&r), &facts(), "usd"));
    assert_eq!(e.applied, Applied::Modifier(2));
    assert_eq!(e.amount_cents, 1);
}

#[test]
fn all_conditions_of_a_modifier_must_hold() {
    let r = reward(
        pct(3000),
        vec![modifier(
            vec![
                cond(
                    Attribute::CustomerCountry,
                    Operator::In,
                    texts(&["DE", "FR"]),
                ),
                cond(
                    Attribute::AmountCents,
                    Operator::Gt,
                    ConditionValue::Integer(10_000),
                ),
            ],
            pct(5000),
        )],
    );
    let de = |amount_cents| SaleFacts {
        customer_country: Some("DE"),
        amount_cents,
        ..facts()
    };
    let e = earned(sale_reward(Some(&r), &de(12_000), "eur"));
    assert_eq!(e.applied, Applied::Modifier(0));
    assert_eq!(
        e.description,
        "50% of €120.00 (country is DE or FR and sale amount over €100.00)"
    );
    let e = earned(sale_reward(Some(&r), &de(10_000), "eur"));
    assert_eq!(e.applied, Applied::Base);
    assert_eq!(e.description, "30% of €100.00");
    assert_eq!(
        applicable_modifier(&r, &de(10_001)).map(|(i, _)| i),
        Some(0)
    );
}

#[test]
fn no_reward_earns_nothing() {
    assert_eq!(sale_reward(None, &facts(), "usd"), SaleReward::NoReward);
    assert_eq!(lead_reward(None, "usd"), None);
}

#[test]
fn a_lead_earns_its_flat_amount() {
    let r = reward(flat(200), vec![]);
    assert_eq!(
        lead_reward(Some(&r), "usd"),
        Some(Earned {
            amount_cents: 200,
            applied: Applied::Base,
            description: "Lead: $2.00".into(),
        })
    );
}

fn renewal(months_after: i64) -> SaleFacts<'static> {
    SaleFacts {
        recurring: true,
        first_sale_at: Some(JAN1),
        at: JAN1 + months_after * 31 * DAY,
        ..facts()
    }
}

#[test]
fn renewals_earn_within_the_duration() {
    let with = |limit| Reward {
        max_duration_months: limit,
        ..reward(pct(3000), vec![])
    };
    // None: for ever.
    assert!(matches!(
        sale_reward(Some(&with(None)), &renewal(100), "usd"),
        SaleReward::Earns(_)
    ));
    // 0: only the first payment.
    assert_eq!(
        sale_reward(Some(&with(Some(0))), &renewal(1), "usd"),
        SaleReward::RecurringPeriodEnded
    );
    let first = SaleFacts {
        recurring: false,
        first_sale_at: Some(JAN1),
        ..renewal(50)
    };
    assert!(matches!(
        sale_reward(Some(&with(Some(0))), &first, "usd"),
        SaleReward::Earns(_)
    ));
    // N: within N months of the first sale.
    assert!(matches!(
        sale_reward(Some(&with(Some(12))), &renewal(11), "usd"),
        SaleReward::Earns(_)
    ));
    assert_eq!(
        sale_reward(Some(&with(Some(12))), &renewal(12), "usd"),
        SaleReward::RecurringPeriodEnded
    );
}

#[test]
fn a_modifier_that_names_a_duration_replaces_the_base_one() {
    let renewal_condition = || {
        vec![cond(
            Attribute::Recurring,
            Operator::Eq,
            ConditionValue::Boolean(true),
        )]
    };
    let base = |limit, m_limit| Reward {
        rule: pct(3000),
        max_duration_months: limit,
        modifiers: vec![Modifier {
            conditions: renewal_condition(),
            rule: pct(1000),
            max_duration_months: m_limit,
        }],
    };
    // Not named: the base's 0 holds.
    assert_eq!(
        sale_reward(Some(&base(Some(0), None)), &renewal(1), "usd"),
        SaleReward::RecurringPeriodEnded
    );
    // Named null: every renewal earns, at the modifier's rate.
    let e = earned(sale_reward(
        Some(&base(Some(0), Some(None))),
        &renewal(40),
        "usd",
    ));
    assert_eq!((e.applied, e.amount_cents), (Applied::Modifier(0), 1_200));
    assert_eq!(e.description, "10% of $120.00 (renewal)");
    // Named 3 over a base that earns for ever.
    assert_eq!(
        sale_reward(Some(&base(None, Some(Some(3)))), &renewal(4), "usd"),
        SaleReward::RecurringPeriodEnded
    );
    assert!(matches!(
        sale_reward(Some(&base(None, Some(Some(3)))), &renewal(2), "usd"),
        SaleReward::Earns(_)
    ));
}

#[test]
fn negative_and_huge_amounts_never_panic() {
    let full = reward(pct(10_000), vec![]);
    // Negative amounts (a sale never has one) keep amount_for's division, which truncates
    // towards zero after adding the half: 100 % of -1 is 0.
    for (amount_cents, expected) in [
        (i64::MIN, i64::MIN + 1),
        (-1, 0),
        (0, 0),
        (i64::MAX, i64::MAX),
    ] {
        let f = SaleFacts {
            amount_cents,
            ..facts()
        };
        let e = earned(sale_reward(Some(&full), &f, "usd"));
        assert_eq!(e.amount_cents, expected, "{amount_cents}");
        assert_eq!(e.amount_cents, full.rule.amount_for(amount_cents));
    }
    // A rule no validation lets through still saturates.
    let absurd = reward(pct(i64::MAX), vec![]);
    let f = SaleFacts {
        amount_cents: i64::MAX,
        ..facts()
    };
    assert_eq!(
        earned(sale_reward(Some(&absurd), &f, "usd")).amount_cents,
        i64::MAX
    );
    let f = SaleFacts {
        amount_cents: i64::MIN,
        ..facts()
    };
    assert_eq!(
        earned(sale_reward(Some(&absurd), &f, "usd")).amount_cents,
        i64::MIN
    );
}

// ---------------------------------------------------------------- words

#[test]
fn descriptions_name_the_rule_and_its_conditions() {
    let one = |c: Condition, rule| {
        let r = reward(pct(3000), vec![modifier(vec![c], rule)]);
        let f = SaleFacts {
            product_id: Some("p9"),
            customer_country: Some("US"),
            partner_sales: 10,
            partner_revenue_cents: 1_000_000,
            ..facts()
        };
        earned(sale_reward(Some(&r), &f, "usd")).description
    };
    use Attribute as A;
    use ConditionValue::Integer;
    use Operator as O;
    assert_eq!(
        one(
            cond(A::PartnerRevenueCents, O::Gte, Integer(1_000_000)),
            flat(500)
        ),
        "$5.00 flat (partner revenue at least $10,000.00)"
    );
    assert_eq!(
        one(cond(A::PartnerSales, O::Gte, Integer(10)), pct(3500)),
        "35% of $120.00 (after 10 sales)"
    );
    assert_eq!(
        one(cond(A::PartnerSales, O::Gt, Integer(0)), pct(3500)),
        "35% of $120.00 (after 1 sale)"
    );
    assert_eq!(
        one(cond(A::PartnerSales, O::Lt, Integer(20)), pct(1250)),
        "12.5% of $120.00 (within the first 20 sales)"
    );
    assert_eq!(
        one(cond(A::ProductId, O::NotIn, texts(&["a", "b"])), pct(1234)),
        "12.34% of $120.00 (product is none of a, b)"
    );
    assert_eq!(
        one(cond(A::ProductId, O::Neq, text("a")), pct(5)),
        "0.05% of $120.00 (product is not a)"
    );
    assert_eq!(
        one(
            cond(A::CustomerCountry, O::In, texts(&["CA", "MX", "US"])),
            pct(3000)
        ),
        "30% of $120.00 (country is CA, MX or US)"
    );
    assert_eq!(
        one(cond(A::AmountCents, O::Lte, Integer(12_000)), pct(3000)),
        "30% of $120.00 (sale amount at most $120.00)"
    );
    assert_eq!(
        one(
            cond(A::Recurring, O::Eq, ConditionValue::Boolean(false)),
            pct(3000)
        ),
        "30% of $120.00 (first payment)"
    );
    let base = earned(sale_reward(
        Some(&reward(flat(1_000), vec![])),
        &facts(),
        "jpy",
    ));
    assert_eq!(base.description, "¥1,000 flat");
    assert_eq!(
        bonus_description(" Black Friday push "),
        "Bonus: Black Friday push"
    );
    assert_eq!(
        bounty_description("First 10 sales"),
        "Bounty: First 10 sales"
    );
}

#[test]
fn a_reward_in_the_partners_words() {
    let r = Reward {
        max_duration_months: Some(12),
        modifiers: vec![
            modifier(
                vec![cond(
                    Attribute::ProductId,
                    Operator::Eq,
                    text("prod_enterprise"),
                )],
                pct(4000),
            ),
            modifier(
                vec![cond(
                    Attribute::PartnerRevenueCents,
                    Operator::Gte,
                    ConditionValue::Integer(1_000_000),
                )],
                pct(3500),
            ),
            Modifier {
                max_duration_months: Some(Some(0)),
                ..modifier(
                    vec![
                        cond(
                            Attribute::PartnerSales,
                            Operator::Gte,
                            ConditionValue::Integer(10),
                        ),
                        cond(
                            Attribute::CustomerCountry,
                            Operator::NotIn,
                            texts(&["DE", "FR"]),
                        ),
                    ],
                    flat(500),
                )
            },
        ],
        ..reward(pct(3000), vec![])
    };
    assert_eq!(
        r.words(RewardKind::Sale, "usd"),
        [
            "30% of each sale, for 12 months",
            "40% on product prod_enterprise",
            "35% once you have brought $10,000.00",
            "$5.00 after 10 sales and for customers outside DE and FR, first payment only",
        ]
    );
    let forever = reward(pct(3000), vec![]);
    assert_eq!(forever.words(RewardKind::Sale, "usd"), ["30% of each sale"]);
    let once = Reward {
        max_duration_months: Some(0),
        ..forever.clone()
    };
    assert_eq!(
        once.words(RewardKind::Sale, "usd"),
        ["30% of the first payment only"]
    );
    let monthly = Reward {
        max_duration_months: Some(1),
        ..reward(flat(500), vec![])
    };
    assert_eq!(
        monthly.words(RewardKind::Sale, "eur"),
        ["€5.00 on each sale, for 1 month"]
    );
    let lead = reward(flat(200), vec![]);
    assert_eq!(lead.words(RewardKind::Lead, "usd"), ["$2.00 per signup"]);
    let renewals = reward(
        pct(3000),
        vec![Modifier {
            max_duration_months: Some(None),
            ..modifier(
                vec![
                    cond(
                        Attribute::Recurring,
                        Operator::Eq,
                        ConditionValue::Boolean(true),
                    ),
                    cond(
                        Attribute::AmountCents,
                        Operator::Gt,
                        ConditionValue::Integer(10_000),
                    ),
                ],
                pct(1000),
            )
        }],
    );
    assert_eq!(
        renewals.words(RewardKind::Sale, "usd")[1],
        "10% on renewals and on sales over $100.00, on every renewal"
    );
}

// ---------------------------------------------------------------- the wire form

fn spec_example() -> serde_json::Value {
    json!({
      "sale": {
        "type": "percentage", "percent": 30,
        "max_duration_months": 12,
        "modifiers": [
          {"conditions": [{"attribute": "product_id", "operator": "in", "value": ["prod_enterprise"]}],
           "type": "percentage", "percent": 40},
          {"conditions": [{"attribute": "partner_revenue_cents", "operator": "gte", "value": 1000000}],
           "type": "percentage", "percent": 35}
        ]
      },
      "lead": {"type": "flat", "amount_cents": 200}
    })
}

#[test]
fn the_specs_example_reads_and_writes_back() {
    let r = Rewards::from_json(&spec_example(), "rewards").unwrap();
    let expected = Rewards {
        sale: Some(Reward {
            rule: pct(3000),
            max_duration_months: Some(12),
            modifiers: vec![
                modifier(
                    vec![cond(
                        Attribute::ProductId,
                        Operator::In,
                        texts(&["prod_enterprise"]),
                    )],
                    pct(4000),
                ),
                modifier(
                    vec![cond(
                        Attribute::PartnerRevenueCents,
                        Operator::Gte,
                        ConditionValue::Integer(1_000_000),
                    )],
                    pct(3500),
                ),
            ],
        }),
        lead: Some(reward(flat(200), vec![])),
    };
    assert_eq!(r, expected);
    assert_eq!(r.to_json(), spec_example());
    let spec: RewardsSpec = serde_json::from_value(spec_example()).unwrap();
    assert_eq!(spec, r.spec());
}

#[test]
fn defaults_and_nulls() {
    assert_eq!(
        Rewards::from_json(&json!({}), "rewards"),
        Ok(Rewards::default())
    );
    assert_eq!(
        Rewards::from_json(&json!({"sale": null, "lead": null}), "rewards"),
        Ok(Rewards::default())
    );
    assert_eq!(
        Rewards::default().to_json(),
        json!({"sale": null, "lead": null})
    );
    let program = Rewards::from_sale_rule(pct(2000), None);
    assert_eq!(
        program.to_json(),
        json!({"sale": {"type": "percentage", "percent": 20, "max_duration_months": null}, "lead": null})
    );
    assert_eq!(
        Rewards::from_json(&program.to_json(), "rewards"),
        Ok(program)
    );
    let fraction = Rewards::from_sale_rule(pct(1234), Some(0));
    assert_eq!(fraction.to_json()["sale"]["percent"], json!(12.34));
    // A lead's null duration reads as none.
    let lead = json!({"lead": {"type": "flat", "amount_cents": 0, "max_duration_months": null, "modifiers": []}});
    assert_eq!(
        Rewards::from_json(&lead, "rewards").unwrap().lead,
        Some(reward(flat(0), vec![]))
    );
}

#[test]
fn a_modifier_duration_is_absent_null_or_named() {
    let read = |extra: serde_json::Value| {
        let mut m = json!({"conditions": [{"attribute": "recurring", "operator": "eq", "value": true}],
                           "type": "flat", "amount_cents": 100});
        if let (Some(m), Some(extra)) = (m.as_object_mut(), extra.as_object()) {
            m.extend(extra.clone());
        }
        let v = json!({"sale": {"type": "flat", "amount_cents": 1, "modifiers": [m]}});
        let r = Rewards::from_json(&v, "rewards").unwrap();
        assert_eq!(Rewards::from_json(&r.to_json(), "rewards").as_ref(), Ok(&r));
        r.sale.unwrap().modifiers[0].max_duration_months
    };
    assert_eq!(read(json!({})), None);
    assert_eq!(read(json!({"max_duration_months": null})), Some(None));
    assert_eq!(read(json!({"max_duration_months": 6})), Some(Some(6)));
}

fn refused(value: serde_json::Value) -> (String, String) {
    let e = Rewards::from_json(&value, "rewards").unwrap_err();
    assert_eq!(e.to_string(), format!("{}: {}", e.field, e.message));
    (e.field, e.message)
}

/// The spec's example with its second modifier's first condition replaced.
fn with_condition(c: serde_json::Value) -> serde_json::Value {
    let mut v = spec_example();
    v["sale"]["modifiers"][1]["conditions"][0] = c;
    v
}

#[test]
fn condition_errors_name_the_field() {
    let path = "rewards.sale.modifiers[1].conditions[0]";
    assert_eq!(
        refused(with_condition(
            json!({"attribute": "plan", "operator": "eq", "value": "x"})
        )),
        (
            format!("{path}.attribute"),
            "must be one of product_id, amount_cents, recurring, customer_country, \
             partner_sales, partner_revenue_cents"
                .into()
        )
    );
    assert_eq!(
        refused(with_condition(
            json!({"attribute": "product_id", "operator": "gte", "value": "x"})
        )),
        (
            format!("{path}.operator"),
            "must be one of eq, neq, in, not_in for product_id".into()
        )
    );
    assert_eq!(
        refused(with_condition(
            json!({"attribute": "partner_sales", "operator": "eq", "value": 3})
        ))
        .0,
        format!("{path}.operator")
    );
    assert_eq!(
        refused(with_condition(
            json!({"attribute": "recurring", "operator": "neq", "value": true})
        )),
        (
            format!("{path}.operator"),
            "must be one of eq for recurring".into()
        )
    );
    assert_eq!(
        refused(with_condition(
            json!({"attribute": "amount_cents", "operator": "like", "value": 1})
        ))
        .1,
        "must be one of eq, gt, gte, lt, lte for amount_cents"
    );
    assert_eq!(
        refused(with_condition(
            json!({"attribute": "partner_revenue_cents", "operator": "gte"})
        ))
        .0,
        format!("{path}.value")
    );
    assert_eq!(
        refused(with_condition(
            json!({"attribute": "partner_revenue_cents", "operator": "gte", "value": "1000"})
        )),
        (
            format!("{path}.value"),
            "must be a whole number of minor units, 0 or more".into()
        )
    );
    for (attribute, operator, value) in [
        ("amount_cents", "gt", json!(-1)),
        ("amount_cents", "gt", json!(1.5)),
        ("partner_sales", "gt", json!(true)),
        ("recurring", "eq", json!("true")),
        ("recurring", "eq", json!(1)),
        ("product_id", "eq", json!(["a"])),
        ("product_id", "eq", json!("")),
        ("product_id", "eq", json!("x".repeat(256))),
        ("product_id", "in", json!("a")),
        ("product_id", "in", json!([])),
        ("product_id", "not_in", json!(vec!["a"; 101])),
        ("customer_country", "eq", json!("de")),
        ("customer_country", "neq", json!("DEU")),
        ("customer_country", "in", json!(null)),
    ] {
        let c = json!({"attribute": attribute, "operator": operator, "value": value});
        assert_eq!(
            refused(with_condition(c.clone())).0,
            format!("{path}.value"),
            "{c}"
        );
    }
    assert_eq!(
        refused(with_condition(
            json!({"attribute": "customer_country", "operator": "not_in", "value": ["DE", "fr"]})
        )),
        (
            format!("{path}.value[1]"),
            "must be a country code of two upper-case letters such as DE".into()
        )
    );
    assert_eq!(
        refused(with_condition(
            json!({"attribute": "product_id", "operator": "in", "value": ["a", 1]})
        ))
        .0,
        format!("{path}.value[1]")
    );
    assert_eq!(
        refused(with_condition(
            json!({"attribute": "recurring", "operator": "eq", "value": true, "negate": true})
        )),
        (
            format!("{path}.negate"),
            "is not a known field (expected attribute, operator, value)".into()
        )
    );
    assert_eq!(
        refused(with_condition(json!("product_id = x"))),
        (path.into(), "must be an object".into())
    );
    // The edges that are accepted.
    for (attribute, operator, value) in [
        ("product_id", "eq", json!("x".repeat(255))),
        ("product_id", "in", json!(vec!["a"; 100])),
        ("customer_country", "in", json!(["DE", "FR"])),
        ("amount_cents", "eq", json!(0)),
        ("partner_sales", "lt", json!(i64::MAX)),
        ("recurring", "eq", json!(false)),
    ] {
        let c = json!({"attribute": attribute, "operator": operator, "value": value});
        assert!(
            Rewards::from_json(&with_condition(c.clone()), "rewards").is_ok(),
            "{c}"
        );
    }
}

#[test]
fn reward_and_modifier_errors_name_the_field() {
    let sale = |s: serde_json::Value| json!({"sale": s});
    let cases: Vec<(serde_json::Value, &str, &str)> = vec![
        (json!([]), "rewards", "must be an object with sale and lead"),
        (json!({"sale": null, "bonus": 1}), "rewards.bonus", "is not a known field (expected sale, lead)"),
        (sale(json!(30)), "rewards.sale", "must be an object or null"),
        (sale(json!({"type": "percentage", "percent": 0})), "rewards.sale.percent", "must be a number greater than 0 and at most 100, with at most two decimals"),
        (sale(json!({"type": "percentage", "percent": 100.001})), "rewards.sale.percent", "must be a number greater than 0 and at most 100, with at most two decimals"),
        (sale(json!({"type": "percentage", "percent": 12.345})), "rewards.sale.percent", "must be a number greater than 0 and at most 100, with at most two decimals"),
        (sale(json!({"type": "percentage", "percent": -5})), "rewards.sale.percent", "must be a number greater than 0 and at most 100, with at most two decimals"),
        (sale(json!({"type": "percentage", "percent": "30"})), "rewards.sale.percent", "must be a number greater than 0 and at most 100, with at most two decimals"),
        (sale(json!({"type": "percentage"})), "rewards.sale.percent", "is required for a percentage reward"),
        (sale(json!({"type": "percentage", "percent": 30, "amount_cents": 5})), "rewards.sale.amount_cents", "only a flat reward has amount_cents"),
        (sale(json!({"type": "flat", "amount_cents": 5, "percent": 30})), "rewards.sale.percent", "only a percentage reward has percent"),
        (sale(json!({"type": "flat"})), "rewards.sale.amount_cents", "is required for a flat reward"),
        (sale(json!({"type": "flat", "amount_cents": -1})), "rewards.sale.amount_cents", "must be a whole number of minor units from 0 to 100000000"),
        (sale(json!({"type": "flat", "amount_cents": MAX_FLAT_CENTS + 1})), "rewards.sale.amount_cents", "must be a whole number of minor units from 0 to 100000000"),
        (sale(json!({"type": "flat", "amount_cents": 2.5})), "rewards.sale.amount_cents", "must be a whole number of minor units from 0 to 100000000"),
        (sale(json!({"type": "bonus", "amount_cents": 1})), "rewards.sale.type", "must be percentage or flat"),
        (sale(json!({"amount_cents": 1})), "rewards.sale.type", "must be percentage or flat"),
        (sale(json!({"type": "flat", "amount_cents": 1, "max_duration_months": 1201})), "rewards.sale.max_duration_months", "must be null (every renewal earns) or a whole number of months from 0 to 1200"),
        (sale(json!({"type": "flat", "amount_cents": 1, "max_duration_months": -1})), "rewards.sale.max_duration_months", "must be null (every renewal earns) or a whole number of months from 0 to 1200"),
        (sale(json!({"type": "flat", "amount_cents": 1, "recurring": true})), "rewards.sale.recurring", "is not a known field (expected type, percent, amount_cents, max_duration_months, modifiers)"),
        (sale(json!({"type": "flat", "amount_cents": 1, "modifiers": {}})), "rewards.sale.modifiers", "must be a list of at most 20 modifiers"),
        (json!({"lead": {"type": "percentage", "percent": 10}}), "rewards.lead.type", "a lead reward is flat"),
        (json!({"lead": {"type": "flat", "amount_cents": 1, "max_duration_months": 3}}), "rewards.lead.max_duration_months", "only a sale reward has a duration"),
        (json!({"lead": {"type": "flat", "amount_cents": 1, "modifiers": [{"conditions": []}]}}), "rewards.lead.modifiers", "a lead reward has no modifiers"),
    ];
    for (value, field, message) in cases {
        assert_eq!(
            refused(value.clone()),
            (field.into(), message.into()),
            "{value}"
        );
    }
    assert!(Rewards::from_json(
        &sale(json!({"type": "percentage", "percent": 100})),
        "rewards"
    )
    .is_ok());
    assert!(Rewards::from_json(
        &sale(json!({"type": "percentage", "percent": 0.01})),
        "rewards"
    )
    .is_ok());
    assert!(Rewards::from_json(
        &sale(json!({"type": "flat", "amount_cents": 0, "max_duration_months": 1200})),
        "rewards"
    )
    .is_ok());
}

#[test]
fn modifier_errors_name_the_field() {
    let cond = json!({"attribute": "recurring", "operator": "eq", "value": true});
    let m = json!({"conditions": [cond], "type": "flat", "amount_cents": 1});
    let with_modifiers = |ms: serde_json::Value| json!({"sale": {"type": "percentage", "percent": 30, "modifiers": ms}});
    assert_eq!(
        refused(with_modifiers(json!(vec![m.clone(); 21]))),
        (
            "rewards.sale.modifiers".into(),
            "must have at most 20 modifiers".into()
        )
    );
    assert!(Rewards::from_json(&with_modifiers(json!(vec![m.clone(); 20])), "rewards").is_ok());
    let one = |m: serde_json::Value| {
        refused(with_modifiers(
            json!([{"conditions": [cond], "type": "flat", "amount_cents": 1}, m]),
        ))
    };
    assert_eq!(
        one(json!({"conditions": [], "type": "flat", "amount_cents": 1})),
        (
            "rewards.sale.modifiers[1].conditions".into(),
            "must have at least one condition".into()
        )
    );
    assert_eq!(
        one(json!({"conditions": vec![cond.clone(); 11], "type": "flat", "amount_cents": 1})),
        (
            "rewards.sale.modifiers[1].conditions".into(),
            "must have at most 10 conditions".into()
        )
    );
    assert!(Rewards::from_json(
        &with_modifiers(
            json!([{"conditions": vec![cond.clone(); 10], "type": "flat", "amount_cents": 1}])
        ),
        "rewards"
    )
    .is_ok());
    assert_eq!(
        one(json!({"type": "flat", "amount_cents": 1})),
        (
            "rewards.sale.modifiers[1].conditions".into(),
            "must be a list of 1 to 10 conditions".into()
        )
    );
    assert_eq!(
        one(json!({"conditions": [cond], "type": "percentage", "percent": 0})),
        (
            "rewards.sale.modifiers[1].percent".into(),
            "must be a number greater than 0 and at most 100, with at most two decimals".into()
        )
    );
    assert_eq!(
        one(json!({"conditions": [cond], "type": "flat", "amount_cents": 1, "max_duration_months": "6"})).0,
        "rewards.sale.modifiers[1].max_duration_months"
    );
    assert_eq!(
        one(json!({"conditions": [cond], "type": "flat", "amount_cents": 1, "priority": 1})),
        (
            "rewards.sale.modifiers[1].priority".into(),
            "is not a known field (expected conditions, type, percent, amount_cents, max_duration_months)".into()
        )
    );
    assert_eq!(
        one(json!(null)),
        (
            "rewards.sale.modifiers[1]".into(),
            "must be an object".into()
        )
    );
    // The field name given is the root of every path.
    let e = Rewards::from_json(&json!({"sale": 1}), "groups[2].rewards").unwrap_err();
    assert_eq!(
        e.to_string(),
        "groups[2].rewards.sale: must be an object or null"
    );
}

// ---------------------------------------------------------------- properties

fn arb_rule() -> impl Strategy<Value = CommissionRule> {
    prop_oneof![
        (1..=10_000i64).prop_map(pct),
        (0..=MAX_FLAT_CENTS).prop_map(flat),
    ]
}

/// Mostly short durations, so that generated renewals often fall past them.
fn arb_duration() -> impl Strategy<Value = Option<i64>> {
    prop::option::of(prop_oneof![0..=24i64, 0..=MAX_DURATION_MONTHS])
}

/// Values from small sets, so that generated conditions often hold for generated facts.
fn arb_text(attribute: Attribute) -> BoxedStrategy<String> {
    match attribute {
        Attribute::CustomerCountry => prop::sample::select(vec!["DE", "FR", "US"])
            .prop_map(String::from)
            .boxed(),
        _ => prop_oneof![
            prop::sample::select(vec!["p1", "p2", "p3"]).prop_map(String::from),
            "[a-zA-Z0-9_ é-]{1,20}",
        ]
        .boxed(),
    }
}

fn arb_condition() -> impl Strategy<Value = Condition> {
    prop::sample::select(Attribute::ALL.to_vec())
        .prop_flat_map(|attribute| {
            let operator = prop::sample::select(attribute.operators().to_vec());
            (Just(attribute), operator)
        })
        .prop_flat_map(|(attribute, operator)| {
            let value = match attribute {
                Attribute::Recurring => any::<bool>().prop_map(ConditionValue::Boolean).boxed(),
                Attribute::PartnerSales => (0..20i64).prop_map(ConditionValue::Integer).boxed(),
                Attribute::AmountCents | Attribute::PartnerRevenueCents => {
                    (0..200_000i64).prop_map(ConditionValue::Integer).boxed()
                }
                _ if matches!(operator, Operator::In | Operator::NotIn) => {
                    prop::collection::vec(arb_text(attribute), 1..4)
                        .prop_map(ConditionValue::Texts)
                        .boxed()
                }
                _ => arb_text(attribute).prop_map(ConditionValue::Text).boxed(),
            };
            (Just(attribute), Just(operator), value)
        })
        .prop_map(|(attribute, operator, value)| Condition {
            attribute,
            operator,
            value,
        })
}

fn arb_modifier() -> impl Strategy<Value = Modifier> {
    (
        prop::collection::vec(arb_condition(), 1..=3),
        arb_rule(),
        prop::option::of(arb_duration()),
    )
        .prop_map(|(conditions, rule, max_duration_months)| Modifier {
            conditions,
            rule,
            max_duration_months,
        })
}

fn arb_sale_reward() -> impl Strategy<Value = Reward> {
    (
        arb_rule(),
        arb_duration(),
        prop::collection::vec(arb_modifier(), 0..6),
    )
        .prop_map(|(rule, max_duration_months, modifiers)| Reward {
            rule,
            max_duration_months,
            modifiers,
        })
}

fn arb_rewards() -> impl Strategy<Value = Rewards> {
    (
        prop::option::of(arb_sale_reward()),
        prop::option::of((0..=MAX_FLAT_CENTS).prop_map(|c| reward(flat(c), vec![]))),
    )
        .prop_map(|(sale, lead)| Rewards { sale, lead })
}

/// Owned sale facts; [`Owned::facts`] borrows them.
#[derive(Debug, Clone)]
struct Owned {
    amount_cents: i64,
    product_id: Option<String>,
    recurring: bool,
    customer_country: Option<String>,
    partner_sales: i64,
    partner_revenue_cents: i64,
    first_sale_at: Option<i64>,
    at: i64,
}

impl Owned {
    fn facts(&self) -> SaleFacts<'_> {
        SaleFacts {
            amount_cents: self.amount_cents,
            product_id: self.product_id.as_deref(),
            recurring: self.recurring,
            customer_country: self.customer_country.as_deref(),
            partner_sales: self.partner_sales,
            partner_revenue_cents: self.partner_revenue_cents,
            first_sale_at: self.first_sale_at,
            at: self.at,
        }
    }
}

fn arb_facts(amount: impl Strategy<Value = i64>) -> impl Strategy<Value = Owned> {
    (
        amount,
        prop::option::of(arb_text(Attribute::ProductId)),
        any::<bool>(),
        prop::option::of(arb_text(Attribute::CustomerCountry)),
        0..25i64,
        0..250_000i64,
        prop::option::of(JAN1..JAN1 + 400 * DAY),
        0..800 * DAY,
    )
        .prop_map(
            |(
                amount_cents,
                product_id,
                recurring,
                customer_country,
                sales,
                revenue,
                first,
                after,
            )| {
                Owned {
                    amount_cents,
                    product_id,
                    recurring,
                    customer_country,
                    partner_sales: sales,
                    partner_revenue_cents: revenue,
                    first_sale_at: first,
                    at: first.unwrap_or(JAN1) + after,
                }
            },
        )
}

fn amounts() -> impl Strategy<Value = i64> {
    prop_oneof![0..300_000i64, 0..=i64::MAX]
}

/// The spec's conditions, written out again as plainly as possible.
fn naive_holds(c: &Condition, f: &SaleFacts) -> bool {
    use Attribute as A;
    use ConditionValue as V;
    use Operator as O;
    match (c.attribute, c.operator, &c.value) {
        (A::ProductId, O::Eq, V::Text(v)) => f.product_id == Some(v),
        (A::ProductId, O::Neq, V::Text(v)) => f.product_id != Some(v),
        (A::ProductId, O::In, V::Texts(vs)) => vs.iter().any(|v| f.product_id == Some(v)),
        (A::ProductId, O::NotIn, V::Texts(vs)) => vs.iter().all(|v| f.product_id != Some(v)),
        (A::CustomerCountry, O::Eq, V::Text(v)) => f.customer_country == Some(v),
        (A::CustomerCountry, O::Neq, V::Text(v)) => f.customer_country != Some(v),
        (A::CustomerCountry, O::In, V::Texts(vs)) => {
            vs.iter().any(|v| f.customer_country == Some(v))
        }
        (A::CustomerCountry, O::NotIn, V::Texts(vs)) => {
            vs.iter().all(|v| f.customer_country != Some(v))
        }
        (A::Recurring, O::Eq, V::Boolean(b)) => f.recurring == *b,
        (A::AmountCents, O::Eq, V::Integer(n)) => f.amount_cents == *n,
        (A::AmountCents, O::Gt, V::Integer(n)) => f.amount_cents > *n,
        (A::AmountCents, O::Gte, V::Integer(n)) => f.amount_cents >= *n,
        (A::AmountCents, O::Lt, V::Integer(n)) => f.amount_cents < *n,
        (A::AmountCents, O::Lte, V::Integer(n)) => f.amount_cents <= *n,
        (A::PartnerSales, O::Gt, V::Integer(n)) => f.partner_sales > *n,
        (A::PartnerSales, O::Gte, V::Integer(n)) => f.partner_sales >= *n,
        (A::PartnerSales, O::Lt, V::Integer(n)) => f.partner_sales < *n,
        (A::PartnerSales, O::Lte, V::Integer(n)) => f.partner_sales <= *n,
        (A::PartnerRevenueCents, O::Gt, V::Integer(n)) => f.partner_revenue_cents > *n,
        (A::PartnerRevenueCents, O::Gte, V::Integer(n)) => f.partner_revenue_cents >= *n,
        (A::PartnerRevenueCents, O::Lt, V::Integer(n)) => f.partner_revenue_cents < *n,
        (A::PartnerRevenueCents, O::Lte, V::Integer(n)) => f.partner_revenue_cents <= *n,
        _ => false,
    }
}

proptest! {
    #[test]
    fn the_wire_form_round_trips(r in arb_rewards()) {
        let json = r.to_json();
        prop_assert_eq!(Rewards::from_json(&json, "rewards"), Ok(r.clone()));
        // The documented structs read the same JSON and write it back.
        let spec: RewardsSpec = serde_json::from_value(json.clone()).unwrap();
        prop_assert_eq!(&spec, &r.spec());
        prop_assert_eq!(serde_json::to_value(&spec).unwrap(), json);
    }

    #[test]
    fn the_applied_modifier_is_the_first_whose_conditions_hold(
        r in arb_sale_reward(),
        owned in arb_facts(amounts()),
    ) {
        let f = owned.facts();
        let naive = r
            .modifiers
            .iter()
            .position(|m| m.conditions.iter().all(|c| naive_holds(c, &f)));
        for m in &r.modifiers {
            for c in &m.conditions {
                prop_assert_eq!(c.holds(&f), naive_holds(c, &f), "{:?}", c);
            }
        }
        let (rule, limit) = match naive {
            Some(i) => (
                r.modifiers[i].rule,
                r.modifiers[i].max_duration_months.unwrap_or(r.max_duration_months),
            ),
            None => (r.rule, r.max_duration_months),
        };
        let expected_applied = naive.map_or(Applied::Base, Applied::Modifier);
        match sale_reward(Some(&r), &f, "usd") {
            SaleReward::Earns(e) => {
                prop_assert_eq!(e.applied, expected_applied);
                prop_assert_eq!(e.amount_cents, rule.amount_for(f.amount_cents));
                prop_assert!(e.amount_cents >= 0);
                if let CommissionRule::Percentage { .. } = rule {
                    prop_assert!(e.amount_cents <= f.amount_cents);
                }
                prop_assert!(!f.recurring || crate::commission::recurring_earns(limit, f.first_sale_at, f.at));
            }
            SaleReward::RecurringPeriodEnded => {
                prop_assert!(f.recurring);
                prop_assert!(!crate::commission::recurring_earns(limit, f.first_sale_at, f.at));
            }
            SaleReward::NoReward => prop_assert!(false, "a reward was given"),
        }
    }

    #[test]
    fn without_modifiers_a_sale_earns_the_rule(
        rule in arb_rule(),
        duration in arb_duration(),
        owned in arb_facts(any::<i64>()),
    ) {
        let r = Reward { rule, max_duration_months: duration, modifiers: vec![] };
        let f = SaleFacts { recurring: false, ..owned.facts() };
        let e = earned(sale_reward(Some(&r), &f, "usd"));
        prop_assert_eq!(e.applied, Applied::Base);
        prop_assert_eq!(e.amount_cents, rule.amount_for(f.amount_cents));
    }
}

#[test]
fn the_documented_schema_has_every_field() {
    let schema = serde_json::to_value(<RewardSpec as utoipa::PartialSchema>::schema()).unwrap();
    let text = schema.to_string();
    for field in [
        "type",
        "percent",
        "amount_cents",
        "max_duration_months",
        "modifiers",
    ] {
        assert!(schema["properties"][field].is_object(), "{field}: {text}");
    }
    let schema = serde_json::to_value(<ConditionSpec as utoipa::PartialSchema>::schema()).unwrap();
    for field in ["attribute", "operator", "value"] {
        assert!(schema["properties"][field].is_object(), "{field}: {schema}");
    }
}
