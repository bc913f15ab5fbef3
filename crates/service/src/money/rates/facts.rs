//! What the reward decision of a sale waiting for a rate knew when the sale was recorded,
//! kept with its commission (JSON) so that the amount decided when the rate arrives is
//! the one the sale would have earned then.

use serde::{Deserialize, Serialize};

use reftrack_domain::lifecycle::{self, Approval};
use reftrack_domain::money::display_amount;
use reftrack_domain::rewards;

/// The facts of [`rewards::SaleFacts`] that the sale's row does not keep.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WaitingFacts {
    /// The country of the customer's click.
    pub country: Option<String>,
    /// The partner's earlier live sales and their revenue in the program's currency.
    pub partner_sales: i64,
    pub partner_revenue_cents: i64,
    /// For a renewal, when the first attributed sale was.
    pub first_sale_at: Option<i64>,
    /// Whether the commission waits for an owner's approval once decided (a fraud rule
    /// held it for review).
    pub manual: bool,
}

impl WaitingFacts {
    /// The facts of `f` and the customer's `country`.
    pub fn of(f: &rewards::SaleFacts, country: Option<&str>) -> Self {
        WaitingFacts {
            country: country.map(str::to_owned),
            partner_sales: f.partner_sales,
            partner_revenue_cents: f.partner_revenue_cents,
            first_sale_at: f.first_sale_at,
            manual: false,
        }
    }

    /// With how the commission comes due once decided.
    pub fn with_approval(mut self, approval: Approval) -> Self {
        self.manual = lifecycle::new_commission(approval).manual_approval;
        self
    }

    /// As stored.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Read back; facts that cannot be read (none are written so) count as none known.
    pub fn from_json(text: Option<&str>) -> Self {
        text.and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default()
    }

    /// The waiting commission's description: what it waits for.
    pub fn description(amount: i64, currency: &str) -> String {
        format!(
            "Waiting for an exchange rate: {} sale",
            display_amount(amount, currency)
        )
    }

    /// The decision's facts for a sale of `amount_cents` (program currency) with its
    /// own product, renewal flag and date.
    pub fn sale_facts<'a>(
        &'a self,
        amount_cents: i64,
        product_id: Option<&'a str>,
        recurring: bool,
        at: i64,
    ) -> rewards::SaleFacts<'a> {
        rewards::SaleFacts {
            amount_cents,
            product_id,
            recurring,
            customer_country: self.country.as_deref(),
            partner_sales: self.partner_sales,
            partner_revenue_cents: self.partner_revenue_cents,
            first_sale_at: self.first_sale_at,
            at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_round_trip_and_keep_the_review() {
        let f = rewards::SaleFacts {
            amount_cents: 0,
            partner_sales: 3,
            partner_revenue_cents: 9_000,
            first_sale_at: Some(5),
            ..Default::default()
        };
        let w = WaitingFacts::of(&f, Some("DE")).with_approval(Approval::ByOwner);
        assert!(w.manual);
        let back = WaitingFacts::from_json(Some(&w.to_json()));
        assert_eq!(back, w);
        let facts = back.sale_facts(7_746, Some("pro"), false, 10);
        assert_eq!(facts.customer_country, Some("DE"));
        assert_eq!(facts.partner_revenue_cents, 9_000);
        assert_eq!(
            WaitingFacts::from_json(Some("not json")),
            WaitingFacts::default()
        );
        assert_eq!(
            WaitingFacts::description(12_000, "jpy"),
            "Waiting for an exchange rate: ¥12,000 sale"
        );
    }
}
