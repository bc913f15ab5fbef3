//! What a reward's decision reads beyond the sale itself, so that a caller gathers only
//! the facts it needs, and the stored form of rewards.

use super::{Attribute, CommissionRule, FieldError, Reward, Rewards};

impl Reward {
    /// Whether a condition of a modifier reads the partner's totals (`partner_sales`,
    /// `partner_revenue_cents`): their counters must then be read under a lock where
    /// several processes record sales.
    pub fn reads_partner_totals(&self) -> bool {
        self.reads(|a| matches!(a, Attribute::PartnerSales | Attribute::PartnerRevenueCents))
    }

    /// Whether a condition of a modifier reads the customer's country.
    pub fn reads_country(&self) -> bool {
        self.reads(|a| a == Attribute::CustomerCountry)
    }

    fn reads(&self, wanted: impl Fn(Attribute) -> bool) -> bool {
        self.modifiers
            .iter()
            .flat_map(|m| &m.conditions)
            .any(|c| wanted(c.attribute))
    }
}

impl Rewards {
    /// Rewards as stored: the wire form, which was validated before it was written.
    pub fn from_stored(text: &str) -> Result<Rewards, FieldError> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| FieldError::new("rewards", format!("is not JSON: {e}")))?;
        Rewards::from_json(&value, "rewards")
    }
}

/// A program's commission rule as a group's sale reward holds it: a reward's percentage is
/// above 0, so a program's 0 % (which earns nothing either way) is a flat 0.
pub fn storable(rule: CommissionRule) -> CommissionRule {
    match rule {
        CommissionRule::Percentage { bps: 0 } => CommissionRule::Flat { amount_cents: 0 },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reward(attribute: &str) -> Reward {
        let value = match attribute {
            "customer_country" => json!("DE"),
            _ => json!(10),
        };
        let operator = if attribute == "customer_country" {
            "eq"
        } else {
            "gte"
        };
        let rewards = Rewards::from_json(
            &json!({"sale": {"type": "percentage", "percent": 30, "modifiers": [
                {"conditions": [{"attribute": attribute, "operator": operator, "value": value}],
                 "type": "percentage", "percent": 40}]}}),
            "rewards",
        )
        .expect("valid");
        rewards.sale.expect("a sale reward")
    }

    #[test]
    fn a_reward_reads_what_its_conditions_name() {
        assert!(reward("partner_sales").reads_partner_totals());
        assert!(reward("partner_revenue_cents").reads_partner_totals());
        assert!(!reward("partner_sales").reads_country());
        assert!(reward("customer_country").reads_country());
        assert!(!reward("customer_country").reads_partner_totals());
        assert!(!reward("amount_cents").reads_partner_totals());
    }

    #[test]
    fn a_zero_percentage_is_stored_as_a_flat_zero_and_reads_back() {
        let rule = storable(CommissionRule::Percentage { bps: 0 });
        assert_eq!(rule, CommissionRule::Flat { amount_cents: 0 });
        let rewards = Rewards::from_sale_rule(rule, None);
        let text = rewards.to_json().to_string();
        assert_eq!(Rewards::from_stored(&text), Ok(rewards));
        assert_eq!(
            storable(CommissionRule::Percentage { bps: 1 }),
            CommissionRule::Percentage { bps: 1 }
        );
    }
}
