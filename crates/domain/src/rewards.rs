//! The rewards of a partner group: what a sale or a lead earns, and the one place where a
//! commission's amount is decided. A group's [`Rewards`] has an optional sale [`Reward`]
//! and an optional lead reward; a sale reward may carry [`Modifier`]s, the first of which
//! whose [`Condition`]s all hold replaces the base rule. [`Rewards::from_json`] reads and
//! validates the wire form (`wire`), [`sale_reward`] and [`lead_reward`] decide, and the
//! `words` module says it all in a partner's words.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::commission::{self, CommissionRule};

mod conditions;
mod reads;
mod wire;
mod words;

pub use reads::storable;
pub use wire::{ConditionSpec, ModifierSpec, RewardSpec, RewardType, RewardsSpec};

/// The most modifiers a reward may have.
pub const MAX_MODIFIERS: usize = 20;

/// The most conditions a modifier may have.
pub const MAX_CONDITIONS: usize = 10;

/// The most texts an `in` / `not_in` condition may list.
pub const MAX_LIST_VALUES: usize = 100;

/// The longest product id a condition may name, in characters.
pub const MAX_PRODUCT_ID_CHARS: usize = 255;

/// The longest `max_duration_months`: a hundred years.
pub const MAX_DURATION_MONTHS: i64 = 1200;

/// A group's rewards: what a sale and what a lead earn (`None`: no commission for it).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rewards {
    /// What an attributed sale earns.
    pub sale: Option<Reward>,
    /// What an attributed customer's first lead earns (always a flat rule).
    pub lead: Option<Reward>,
}

/// One reward: a base rule, how long renewals earn, and the modifiers that may replace it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reward {
    /// The rule when no modifier applies.
    pub rule: CommissionRule,
    /// How long renewals earn: `None` for ever, `Some(0)` only the first payment, `Some(n)`
    /// payments within `n` months of the customer's first attributed sale. Sale rewards only.
    pub max_duration_months: Option<i64>,
    /// Tried in order; the first whose conditions all hold applies.
    pub modifiers: Vec<Modifier>,
}

/// A rule that replaces the base one when all its conditions hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Modifier {
    /// All must hold (at least one).
    pub conditions: Vec<Condition>,
    /// The rule that applies instead of the base one.
    pub rule: CommissionRule,
    /// `None`: the base reward's duration; `Some(limit)`: this one, as
    /// [`Reward::max_duration_months`].
    pub max_duration_months: Option<Option<i64>>,
}

/// A test on a sale: `attribute operator value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// What of the sale is tested.
    pub attribute: Attribute,
    /// How it is compared.
    pub operator: Operator,
    /// What it is compared with.
    pub value: ConditionValue,
}

/// What a condition tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Attribute {
    /// The sale's product id (text).
    ProductId,
    /// The sale's amount in the program's currency (integer, minor units).
    AmountCents,
    /// Whether the payment renews an earlier attributed sale (boolean).
    Recurring,
    /// The country of the customer's click, ISO 3166 alpha-2 upper case (text).
    CustomerCountry,
    /// The partner's earlier live sales in the program, not fully refunded (integer).
    PartnerSales,
    /// The sum of those sales' amounts in the program's currency (integer, minor units).
    PartnerRevenueCents,
}

/// How a condition compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    /// Equal.
    Eq,
    /// Not equal (holds when the sale has no value).
    Neq,
    /// One of a list.
    In,
    /// None of a list (holds when the sale has no value).
    NotIn,
    /// Greater than.
    Gt,
    /// Greater than or equal.
    Gte,
    /// Less than.
    Lt,
    /// Less than or equal.
    Lte,
}

/// The value a condition compares with.
#[derive(Debug, Clone, PartialEq)]
pub enum ConditionValue {
    /// A text: `product_id` or `customer_country` with `eq` / `neq`.
    Text(String),
    /// A list of texts: `product_id` or `customer_country` with `in` / `not_in`.
    Texts(Vec<String>),
    /// An integer: `amount_cents`, `partner_sales`, `partner_revenue_cents`.
    Integer(i64),
    /// A boolean: `recurring`.
    Boolean(bool),
}

/// Which event a reward is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewardKind {
    /// A sale.
    Sale,
    /// A lead (a signup).
    Lead,
}

/// A refused field of the wire form: its full path (`rewards.sale.percent`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field's path, e.g. `rewards.sale.modifiers[1].conditions[0].operator`.
    pub field: String,
    /// What is wrong with it, in plain English.
    pub message: String,
}

impl FieldError {
    /// An error on `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for FieldError {}

impl Rewards {
    /// A program's default rewards: a sale earns `rule` for `recurring_months` (the
    /// program's `recurring_commission_months`), with no modifiers; a lead earns nothing.
    pub fn from_sale_rule(rule: CommissionRule, recurring_months: Option<i64>) -> Rewards {
        Rewards {
            sale: Some(Reward {
                rule,
                max_duration_months: recurring_months,
                modifiers: Vec::new(),
            }),
            lead: None,
        }
    }
}

/// What the decision knows of a sale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SaleFacts<'a> {
    /// The sale's amount in the program's currency, minor units.
    pub amount_cents: i64,
    /// The sale's product id, if it has one.
    pub product_id: Option<&'a str>,
    /// Whether the payment renews an earlier attributed sale.
    pub recurring: bool,
    /// The country of the customer's click, ISO 3166 alpha-2 upper case, if known.
    pub customer_country: Option<&'a str>,
    /// The partner's earlier live sales in the program, not fully refunded.
    pub partner_sales: i64,
    /// The sum of those sales' amounts in the program's currency, minor units.
    pub partner_revenue_cents: i64,
    /// For a renewal, when the customer's (subscription's) first attributed sale was, ms.
    pub first_sale_at: Option<i64>,
    /// When this sale was, ms.
    pub at: i64,
}

/// What a sale earns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaleReward {
    /// A commission of this amount.
    Earns(Earned),
    /// Nothing: a renewal past the applied rule's `max_duration_months`.
    RecurringPeriodEnded,
    /// Nothing: the group has no sale reward.
    NoReward,
}

/// A commission decided: its amount, the rule that made it and that rule in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Earned {
    /// The commission, in the program's currency, minor units.
    pub amount_cents: i64,
    /// Which rule applied.
    pub applied: Applied,
    /// One line a partner understands: `40% of $120.00 (product is prod_enterprise)`.
    pub description: String,
}

/// Which rule of a reward applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The reward's base rule.
    Base,
    /// The modifier at this index.
    Modifier(usize),
}

/// What a sale with `facts` earns under the group's sale `reward`, in `currency` (the
/// program's). The first modifier whose conditions all hold sets the rule (and its
/// duration when it names one), else the base; a renewal earns only within that duration.
pub fn sale_reward(reward: Option<&Reward>, facts: &SaleFacts, currency: &str) -> SaleReward {
    let Some(reward) = reward else {
        return SaleReward::NoReward;
    };
    let (applied, rule, limit) = match applicable_modifier(reward, facts) {
        Some((i, m)) => (
            Applied::Modifier(i),
            m.rule,
            m.max_duration_months.unwrap_or(reward.max_duration_months),
        ),
        None => (Applied::Base, reward.rule, reward.max_duration_months),
    };
    if facts.recurring && !commission::recurring_earns(limit, facts.first_sale_at, facts.at) {
        return SaleReward::RecurringPeriodEnded;
    }
    let conditions = match applied {
        Applied::Modifier(i) => reward.modifiers.get(i).map(|m| m.conditions.as_slice()),
        Applied::Base => None,
    };
    SaleReward::Earns(Earned {
        amount_cents: amount_for(rule, facts.amount_cents),
        applied,
        description: words::sale_description(rule, facts.amount_cents, conditions, currency),
    })
}

/// The first modifier of `reward` whose conditions all hold for `facts`, with its index.
pub fn applicable_modifier<'r>(
    reward: &'r Reward,
    facts: &SaleFacts,
) -> Option<(usize, &'r Modifier)> {
    reward
        .modifiers
        .iter()
        .enumerate()
        .find(|(_, m)| m.conditions.iter().all(|c| c.holds(facts)))
}

/// What a lead earns under the group's lead `reward`, in `currency`: `None` without one.
/// A lead reward is flat (a percentage one, which validation refuses, earns its rule on 0).
pub fn lead_reward(reward: Option<&Reward>, currency: &str) -> Option<Earned> {
    let reward = reward?;
    let amount_cents = amount_for(reward.rule, 0);
    Some(Earned {
        amount_cents,
        applied: Applied::Base,
        description: words::lead_description(reward.rule, currency),
    })
}

/// The description of a bonus commission: `Bonus: {text}`.
pub fn bonus_description(text: &str) -> String {
    format!("Bonus: {}", text.trim())
}

/// The description of a bounty's commission: `Bounty: {name}`.
pub fn bounty_description(name: &str) -> String {
    format!("Bounty: {}", name.trim())
}

/// [`CommissionRule::amount_for`] that never overflows whatever the rule's fields: the
/// same half-up rounding in 128 bits, saturated to `i64`.
fn amount_for(rule: CommissionRule, sale_cents: i64) -> i64 {
    match rule {
        CommissionRule::Percentage { bps } => {
            let amount = (i128::from(sale_cents) * i128::from(bps) + 5_000) / 10_000;
            i64::try_from(amount).unwrap_or(if amount < 0 { i64::MIN } else { i64::MAX })
        }
        CommissionRule::Flat { amount_cents } => amount_cents,
    }
}

#[cfg(test)]
mod tests;
