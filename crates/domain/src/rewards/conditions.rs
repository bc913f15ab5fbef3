//! Conditions: their names on the wire, which operators each attribute takes, and whether
//! one holds for a sale.

use std::cmp::Ordering;

use super::{Attribute, Condition, ConditionValue, Operator, SaleFacts};

impl Attribute {
    /// Every attribute, in the order the spec lists them.
    pub const ALL: [Attribute; 6] = [
        Attribute::ProductId,
        Attribute::AmountCents,
        Attribute::Recurring,
        Attribute::CustomerCountry,
        Attribute::PartnerSales,
        Attribute::PartnerRevenueCents,
    ];

    /// The wire name: `product_id`, `amount_cents`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Attribute::ProductId => "product_id",
            Attribute::AmountCents => "amount_cents",
            Attribute::Recurring => "recurring",
            Attribute::CustomerCountry => "customer_country",
            Attribute::PartnerSales => "partner_sales",
            Attribute::PartnerRevenueCents => "partner_revenue_cents",
        }
    }

    /// The attribute of a wire name.
    pub fn parse(name: &str) -> Option<Attribute> {
        Attribute::ALL.into_iter().find(|a| a.as_str() == name)
    }

    /// The operators this attribute takes.
    pub fn operators(self) -> &'static [Operator] {
        use Operator::*;
        match self {
            Attribute::ProductId | Attribute::CustomerCountry => &[Eq, Neq, In, NotIn],
            Attribute::AmountCents => &[Eq, Gt, Gte, Lt, Lte],
            Attribute::Recurring => &[Eq],
            Attribute::PartnerSales | Attribute::PartnerRevenueCents => &[Gt, Gte, Lt, Lte],
        }
    }
}

impl Operator {
    /// Every operator.
    pub const ALL: [Operator; 8] = [
        Operator::Eq,
        Operator::Neq,
        Operator::In,
        Operator::NotIn,
        Operator::Gt,
        Operator::Gte,
        Operator::Lt,
        Operator::Lte,
    ];

    /// The wire name: `eq`, `neq`, `in`, `not_in`, `gt`, `gte`, `lt`, `lte`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Eq => "eq",
            Operator::Neq => "neq",
            Operator::In => "in",
            Operator::NotIn => "not_in",
            Operator::Gt => "gt",
            Operator::Gte => "gte",
            Operator::Lt => "lt",
            Operator::Lte => "lte",
        }
    }

    /// The operator of a wire name.
    pub fn parse(name: &str) -> Option<Operator> {
        Operator::ALL.into_iter().find(|o| o.as_str() == name)
    }

    /// Whether `ordering` (the sale's value against the condition's) satisfies an ordering
    /// operator (`eq` counts as one); `false` for `neq`, `in`, `not_in`.
    fn accepts(self, ordering: Ordering) -> bool {
        match self {
            Operator::Eq => ordering.is_eq(),
            Operator::Gt => ordering.is_gt(),
            Operator::Gte => ordering.is_ge(),
            Operator::Lt => ordering.is_lt(),
            Operator::Lte => ordering.is_le(),
            Operator::Neq | Operator::In | Operator::NotIn => false,
        }
    }
}

impl Condition {
    /// Whether the condition holds for a sale. A text attribute the sale has no value for
    /// satisfies `neq` and `not_in` only. A condition whose value or operator does not fit
    /// its attribute (validation refuses those) never holds.
    pub fn holds(&self, facts: &SaleFacts) -> bool {
        if !self.attribute.operators().contains(&self.operator) {
            return false;
        }
        match self.attribute {
            Attribute::ProductId => text_holds(self.operator, &self.value, facts.product_id),
            Attribute::CustomerCountry => {
                text_holds(self.operator, &self.value, facts.customer_country)
            }
            Attribute::AmountCents => int_holds(self.operator, &self.value, facts.amount_cents),
            Attribute::PartnerSales => int_holds(self.operator, &self.value, facts.partner_sales),
            Attribute::PartnerRevenueCents => {
                int_holds(self.operator, &self.value, facts.partner_revenue_cents)
            }
            Attribute::Recurring => match self.value {
                ConditionValue::Boolean(b) => self.operator == Operator::Eq && facts.recurring == b,
                _ => false,
            },
        }
    }
}

fn text_holds(operator: Operator, value: &ConditionValue, actual: Option<&str>) -> bool {
    match (operator, value) {
        (Operator::Eq, ConditionValue::Text(v)) => actual == Some(v.as_str()),
        (Operator::Neq, ConditionValue::Text(v)) => actual != Some(v.as_str()),
        (Operator::In, ConditionValue::Texts(vs)) => {
            actual.is_some_and(|a| vs.iter().any(|v| v == a))
        }
        (Operator::NotIn, ConditionValue::Texts(vs)) => {
            !actual.is_some_and(|a| vs.iter().any(|v| v == a))
        }
        _ => false,
    }
}

fn int_holds(operator: Operator, value: &ConditionValue, actual: i64) -> bool {
    match value {
        ConditionValue::Integer(v) => operator.accepts(actual.cmp(v)),
        _ => false,
    }
}
