//! Rewards in words: a commission's one-line description (`40% of $120.00 (product is
//! prod_enterprise)`) and the lines the partner portal shows for a reward (`30% of each
//! sale, for 12 months`, `40% on product prod_enterprise`).

use super::{Attribute, Condition, ConditionValue, Operator, Reward, RewardKind};
use crate::commission::CommissionRule;
use crate::money::display_amount;

/// A commission's description: the rule on the sale's amount, then the applied modifier's
/// conditions in brackets (`$5.00 flat (partner revenue at least $10,000.00)`).
pub(super) fn sale_description(
    rule: CommissionRule,
    sale_cents: i64,
    conditions: Option<&[Condition]>,
    currency: &str,
) -> String {
    let base = match rule {
        CommissionRule::Percentage { bps } => {
            format!(
                "{}% of {}",
                percent(bps),
                display_amount(sale_cents, currency)
            )
        }
        CommissionRule::Flat { amount_cents } => {
            format!("{} flat", display_amount(amount_cents, currency))
        }
    };
    match conditions {
        Some(cs) if !cs.is_empty() => format!("{base} ({})", joined(cs, currency, sale_words)),
        _ => base,
    }
}

/// A lead commission's description: `Lead: $2.00`.
pub(super) fn lead_description(rule: CommissionRule, currency: &str) -> String {
    match rule {
        CommissionRule::Flat { amount_cents } => {
            format!("Lead: {}", display_amount(amount_cents, currency))
        }
        CommissionRule::Percentage { bps } => format!("Lead: {}%", percent(bps)),
    }
}

impl Reward {
    /// The reward in a partner's words: one line for the base (`30% of each sale, for 12
    /// months`, `30% of the first payment only`, `$2.00 per signup`), then one a modifier
    /// (`40% on product prod_enterprise`, `35% once you have brought $10,000.00`).
    pub fn words(&self, kind: RewardKind, currency: &str) -> Vec<String> {
        let base = match kind {
            RewardKind::Lead => format!("{} per signup", rule_words(self.rule, currency)),
            RewardKind::Sale => {
                let each = match self.rule {
                    CommissionRule::Percentage { bps } => format!("{}% of", percent(bps)),
                    CommissionRule::Flat { amount_cents } => {
                        format!("{} on", display_amount(amount_cents, currency))
                    }
                };
                match self.max_duration_months {
                    None => format!("{each} each sale"),
                    Some(0) => format!("{each} the first payment only"),
                    Some(n) => format!("{each} each sale, for {}", months(n)),
                }
            }
        };
        let modifiers = self.modifiers.iter().map(|m| {
            let mut line = format!(
                "{} {}",
                rule_words(m.rule, currency),
                joined(&m.conditions, currency, portal_words)
            );
            match m.max_duration_months {
                None => {}
                Some(None) => line.push_str(", on every renewal"),
                Some(Some(0)) => line.push_str(", first payment only"),
                Some(Some(n)) => line.push_str(&format!(", for {}", months(n))),
            }
            line
        });
        std::iter::once(base).chain(modifiers).collect()
    }
}

/// A rule's amount alone: `40%`, `$5.00`.
fn rule_words(rule: CommissionRule, currency: &str) -> String {
    match rule {
        CommissionRule::Percentage { bps } => format!("{}%", percent(bps)),
        CommissionRule::Flat { amount_cents } => display_amount(amount_cents, currency),
    }
}

/// Basis points as a percent with the decimals it has: `30`, `12.5`, `0.05`.
fn percent(bps: i64) -> String {
    let sign = if bps < 0 { "-" } else { "" };
    let abs = bps.unsigned_abs();
    match abs % 100 {
        0 => format!("{sign}{}", abs / 100),
        f if f % 10 == 0 => format!("{sign}{}.{}", abs / 100, f / 10),
        f => format!("{sign}{}.{f:02}", abs / 100),
    }
}

fn months(n: i64) -> String {
    if n == 1 {
        "1 month".into()
    } else {
        format!("{n} months")
    }
}

fn sales(n: i64) -> String {
    if n == 1 {
        "1 sale".into()
    } else {
        format!("{n} sales")
    }
}

fn joined(
    conditions: &[Condition],
    currency: &str,
    words: fn(&Condition, &str) -> String,
) -> String {
    conditions
        .iter()
        .map(|c| words(c, currency))
        .collect::<Vec<_>>()
        .join(" and ")
}

/// `A`, `A or B`, `A, B or C` (with `last` the last joint).
fn list(items: &[String], last: &str) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., end] => format!("{} {last} {end}", init.join(", ")),
    }
}

/// The condition's texts: one for `eq` / `neq`, a list for `in` / `not_in`.
fn texts(value: &ConditionValue) -> Vec<String> {
    match value {
        ConditionValue::Text(t) => vec![t.clone()],
        ConditionValue::Texts(ts) => ts.clone(),
        ConditionValue::Integer(n) => vec![n.to_string()],
        ConditionValue::Boolean(b) => vec![b.to_string()],
    }
}

fn integer(value: &ConditionValue) -> i64 {
    match value {
        ConditionValue::Integer(n) => *n,
        _ => 0,
    }
}

/// A condition as the sale it describes: `product is prod_1`, `sale amount over $100.00`.
fn sale_words(c: &Condition, currency: &str) -> String {
    let money = || display_amount(integer(&c.value), currency);
    let n = integer(&c.value);
    let is = |subject: &str| {
        let ts = texts(&c.value);
        match c.operator {
            Operator::Neq | Operator::NotIn if ts.len() > 1 => {
                format!("{subject} is none of {}", ts.join(", "))
            }
            Operator::Neq | Operator::NotIn => format!("{subject} is not {}", list(&ts, "or")),
            _ => format!("{subject} is {}", list(&ts, "or")),
        }
    };
    match c.attribute {
        Attribute::ProductId => is("product"),
        Attribute::CustomerCountry => is("country"),
        Attribute::AmountCents => format!("sale amount {}", comparison(c.operator, &money())),
        Attribute::PartnerRevenueCents => {
            format!("partner revenue {}", comparison(c.operator, &money()))
        }
        Attribute::Recurring => match c.value {
            ConditionValue::Boolean(false) => "first payment".into(),
            _ => "renewal".into(),
        },
        Attribute::PartnerSales => match c.operator {
            Operator::Gt => format!("after {}", sales(n.saturating_add(1))),
            Operator::Lt => format!("within the first {}", sales(n)),
            Operator::Lte => format!("within the first {}", sales(n.saturating_add(1))),
            _ => format!("after {}", sales(n)),
        },
    }
}

/// `over X`, `at least X`, `under X`, `at most X`, `of X`.
fn comparison(operator: Operator, amount: &str) -> String {
    match operator {
        Operator::Gt => format!("over {amount}"),
        Operator::Gte => format!("at least {amount}"),
        Operator::Lt => format!("under {amount}"),
        Operator::Lte => format!("at most {amount}"),
        _ => format!("of {amount}"),
    }
}

/// A condition as the portal tells a partner: `on product prod_1`, `after 10 sales`.
fn portal_words(c: &Condition, currency: &str) -> String {
    let money = || display_amount(integer(&c.value), currency);
    let n = integer(&c.value);
    let ts = texts(&c.value);
    let negated = matches!(c.operator, Operator::Neq | Operator::NotIn);
    match c.attribute {
        Attribute::ProductId if negated => format!("on products other than {}", list(&ts, "and")),
        Attribute::ProductId if ts.len() > 1 => format!("on products {}", list(&ts, "or")),
        Attribute::ProductId => format!("on product {}", list(&ts, "or")),
        Attribute::CustomerCountry if negated => {
            format!("for customers outside {}", list(&ts, "and"))
        }
        Attribute::CustomerCountry => format!("for customers in {}", list(&ts, "or")),
        Attribute::AmountCents => match c.operator {
            Operator::Gt => format!("on sales over {}", money()),
            Operator::Gte => format!("on sales of at least {}", money()),
            Operator::Lt => format!("on sales under {}", money()),
            Operator::Lte => format!("on sales of at most {}", money()),
            _ => format!("on sales of exactly {}", money()),
        },
        Attribute::Recurring => match c.value {
            ConditionValue::Boolean(false) => "on first payments".into(),
            _ => "on renewals".into(),
        },
        Attribute::PartnerSales => match c.operator {
            Operator::Gt => format!("after {}", sales(n.saturating_add(1))),
            Operator::Lt => format!("on your first {}", sales(n)),
            Operator::Lte => format!("on your first {}", sales(n.saturating_add(1))),
            _ => format!("after {}", sales(n)),
        },
        Attribute::PartnerRevenueCents => match c.operator {
            Operator::Gt => format!("once you have brought over {}", money()),
            Operator::Lt => format!("until you have brought {}", money()),
            Operator::Lte => format!("until you have brought over {}", money()),
            _ => format!("once you have brought {}", money()),
        },
    }
}
