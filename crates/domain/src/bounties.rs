//! Bounties: a one-off reward for reaching a goal. A bounty counts a partner's live events
//! of one metric (sales, leads or revenue) recorded in its window; the event that brings a
//! partner of one of its groups to the threshold earns the partner the bounty's amount,
//! once.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::commission::MAX_FLAT_CENTS;
use crate::money::display_amount;

/// What a bounty counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
pub enum Metric {
    /// Live sales, each counting 1 while not fully refunded.
    #[serde(rename = "sales")]
    Sales,
    /// Attributed leads.
    #[serde(rename = "leads")]
    Leads,
    /// The amounts of live sales in the program's currency, net of refunds.
    #[serde(rename = "revenue_cents")]
    RevenueCents,
}

impl Metric {
    /// Every metric, in order.
    pub const ALL: [Metric; 3] = [Metric::Sales, Metric::Leads, Metric::RevenueCents];

    /// The stored and serialized name.
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Sales => "sales",
            Metric::Leads => "leads",
            Metric::RevenueCents => "revenue_cents",
        }
    }

    /// The metric named `name`.
    pub fn parse(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.as_str() == name)
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The most a bounty's threshold may be.
pub const MAX_THRESHOLD: i64 = 1_000_000_000_000;
/// The most characters a bounty's name holds.
pub const MAX_NAME: usize = 200;

/// An event as bounties count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// A live sale of `amount_cents` in the program's currency.
    Sale { amount_cents: i64 },
    /// An attributed lead.
    Lead,
    /// A refund of `refund_cents` of a sale; `full` when it leaves nothing of it.
    Refund { refund_cents: i64, full: bool },
    /// A sale in another currency converted after it waited for a rate: it counted as a
    /// sale when recorded, and now adds `revenue_cents` (net of refunds meanwhile).
    Converted { revenue_cents: i64 },
}

impl Progress {
    /// How much the event moves `metric` (negative for a refund).
    pub fn step(self, metric: Metric) -> i64 {
        match (self, metric) {
            (Progress::Sale { .. }, Metric::Sales) => 1,
            (Progress::Sale { amount_cents }, Metric::RevenueCents) => amount_cents,
            (Progress::Lead, Metric::Leads) => 1,
            (Progress::Refund { full: true, .. }, Metric::Sales) => -1,
            (Progress::Refund { refund_cents, .. }, Metric::RevenueCents) => -refund_cents,
            (Progress::Converted { revenue_cents }, Metric::RevenueCents) => revenue_cents,
            _ => 0,
        }
    }
}

/// A bounty as the rules read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounty {
    pub id: i64,
    pub name: String,
    pub metric: Metric,
    pub threshold: i64,
    pub amount_cents: i64,
    /// The groups whose partners may earn it; empty: every group.
    pub group_ids: Vec<i64>,
    pub starts_at: Option<i64>,
    pub ends_at: Option<i64>,
    pub archived: bool,
    pub created_at: i64,
}

impl Bounty {
    /// Whether an event recorded at `at` counts towards it: it is not archived, and `at`
    /// is in its window (from `starts_at`, inclusive, to `ends_at`, exclusive) and not
    /// before it was created. A bounty rewards what partners do once it exists, never what
    /// they did before.
    pub fn counts_at(&self, at: i64) -> bool {
        !self.archived
            && self.created_at <= at
            && self.starts_at.is_none_or(|s| s <= at)
            && self.ends_at.is_none_or(|e| at < e)
    }

    /// Whether a partner of group `group_id` may earn it.
    pub fn is_for(&self, group_id: i64) -> bool {
        self.group_ids.is_empty() || self.group_ids.contains(&group_id)
    }

    /// Whether a partner of group `group_id`, approved or not (`approved`), whose value
    /// is now `value` and who has not earned it (`earned`), earns it now.
    pub fn awards(&self, group_id: i64, approved: bool, value: i64, earned: bool) -> bool {
        approved && !earned && !self.archived && self.is_for(group_id) && value >= self.threshold
    }
}

/// A bounty's goal in words: `3 sales`, `1 signup`, `$1,000.00 in sales`.
pub fn goal_words(metric: Metric, threshold: i64, currency: &str) -> String {
    let plural =
        |one: &str, many: &str| format!("{threshold} {}", if threshold == 1 { one } else { many });
    match metric {
        Metric::Sales => plural("sale", "sales"),
        Metric::Leads => plural("signup", "signups"),
        Metric::RevenueCents => format!("{} in sales", display_amount(threshold, currency)),
    }
}

/// A bounty in words: `Reach 3 sales to earn $50.00`.
pub fn offer_words(metric: Metric, threshold: i64, amount_cents: i64, currency: &str) -> String {
    format!(
        "Reach {} to earn {}",
        goal_words(metric, threshold, currency),
        display_amount(amount_cents, currency)
    )
}

/// A bounty's fields as an owner sets them, checked: the first wrong one, named.
pub fn check(
    name: &str,
    threshold: i64,
    amount_cents: i64,
    starts_at: Option<i64>,
    ends_at: Option<i64>,
) -> Result<(), String> {
    let n = name.trim().chars().count();
    if n == 0 || n > MAX_NAME {
        return Err(format!("name must be 1 to {MAX_NAME} characters"));
    }
    if !(1..=MAX_THRESHOLD).contains(&threshold) {
        return Err(format!(
            "threshold must be a whole number from 1 to {MAX_THRESHOLD}"
        ));
    }
    if !(1..=MAX_FLAT_CENTS).contains(&amount_cents) {
        return Err(format!(
            "amount_cents must be a whole number from 1 to {MAX_FLAT_CENTS}"
        ));
    }
    if let (Some(s), Some(e)) = (starts_at, ends_at) {
        if e <= s {
            return Err("ends_at must be after starts_at".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bounty() -> Bounty {
        Bounty {
            id: 1,
            name: "Three sales".into(),
            metric: Metric::Sales,
            threshold: 3,
            amount_cents: 5_000,
            group_ids: vec![],
            starts_at: Some(1_000),
            ends_at: Some(2_000),
            archived: false,
            created_at: 500,
        }
    }

    #[test]
    fn the_window_counts_from_its_start_to_before_its_end_once_created() {
        let b = bounty();
        assert!(!b.counts_at(999));
        assert!(b.counts_at(1_000));
        assert!(b.counts_at(1_999));
        assert!(!b.counts_at(2_000));
        let later = Bounty {
            created_at: 1_500,
            ..bounty()
        };
        assert!(!later.counts_at(1_200), "nothing before its creation");
        let open = Bounty {
            starts_at: None,
            ends_at: None,
            ..bounty()
        };
        assert!(open.counts_at(i64::MAX));
        let archived = Bounty {
            archived: true,
            ..bounty()
        };
        assert!(!archived.counts_at(1_500));
    }

    #[test]
    fn each_event_moves_its_metric() {
        let sale = Progress::Sale { amount_cents: 700 };
        assert_eq!(sale.step(Metric::Sales), 1);
        assert_eq!(sale.step(Metric::RevenueCents), 700);
        assert_eq!(sale.step(Metric::Leads), 0);
        assert_eq!(Progress::Lead.step(Metric::Leads), 1);
        assert_eq!(Progress::Lead.step(Metric::Sales), 0);
        // A sale converted after it waited adds its revenue, not a second sale.
        let converted = Progress::Converted {
            revenue_cents: 7_817,
        };
        assert_eq!(converted.step(Metric::RevenueCents), 7_817);
        assert_eq!(converted.step(Metric::Sales), 0);
        assert_eq!(converted.step(Metric::Leads), 0);
        let partial = Progress::Refund {
            refund_cents: 200,
            full: false,
        };
        assert_eq!(partial.step(Metric::Sales), 0);
        assert_eq!(partial.step(Metric::RevenueCents), -200);
        let full = Progress::Refund {
            refund_cents: 500,
            full: true,
        };
        assert_eq!(full.step(Metric::Sales), -1);
        assert_eq!(full.step(Metric::RevenueCents), -500);
    }

    #[test]
    fn only_an_approved_partner_of_its_groups_earns_it_once() {
        let b = Bounty {
            group_ids: vec![7],
            ..bounty()
        };
        assert!(b.awards(7, true, 3, false));
        assert!(b.awards(7, true, 9, false), "past the threshold too");
        assert!(!b.awards(7, true, 2, false));
        assert!(!b.awards(7, true, 3, true), "once");
        assert!(!b.awards(8, true, 3, false), "another group");
        assert!(!b.awards(7, false, 3, false), "not approved");
        assert!(bounty().awards(8, true, 3, false), "every group");
    }

    #[test]
    fn a_goal_reads_as_words() {
        assert_eq!(goal_words(Metric::Sales, 1, "usd"), "1 sale");
        assert_eq!(goal_words(Metric::Sales, 10, "usd"), "10 sales");
        assert_eq!(goal_words(Metric::Leads, 2, "usd"), "2 signups");
        assert_eq!(
            goal_words(Metric::RevenueCents, 100_000, "usd"),
            "$1,000.00 in sales"
        );
        assert_eq!(
            offer_words(Metric::Sales, 1, 5_000, "usd"),
            "Reach 1 sale to earn $50.00"
        );
    }

    #[test]
    fn a_wrong_field_is_named() {
        assert!(check("Ten sales", 10, 5_000, None, None).is_ok());
        assert!(check(" ", 10, 5_000, None, None)
            .unwrap_err()
            .starts_with("name"));
        assert!(check("x", 0, 5_000, None, None)
            .unwrap_err()
            .starts_with("threshold"));
        assert!(check("x", 1, 0, None, None)
            .unwrap_err()
            .starts_with("amount_cents"));
        assert!(check("x", 1, MAX_FLAT_CENTS + 1, None, None)
            .unwrap_err()
            .starts_with("amount_cents"));
        assert!(check("x", 1, 1, Some(5), Some(5))
            .unwrap_err()
            .starts_with("ends_at"));
        assert_eq!(Metric::parse("revenue_cents"), Some(Metric::RevenueCents));
        assert_eq!(Metric::parse("clicks"), None);
    }

    proptest! {
        /// Whatever the order of a partner's sales and refunds, its value for a sales or
        /// revenue bounty is what is live: the sales not fully refunded, their amounts net
        /// of refunds.
        #[test]
        fn the_value_is_what_is_live(sales in proptest::collection::vec((1i64..100_000, 0u8..3), 0..40)) {
            let (mut count, mut revenue) = (0, 0);
            let (mut live_count, mut live_revenue) = (0, 0);
            for (amount, refund) in sales {
                let sale = Progress::Sale { amount_cents: amount };
                count += sale.step(Metric::Sales);
                revenue += sale.step(Metric::RevenueCents);
                // 0: kept; 1: half refunded; 2: fully refunded, in two refunds.
                let refunds = match refund {
                    0 => vec![],
                    1 => vec![Progress::Refund { refund_cents: amount / 2, full: amount / 2 == amount }],
                    _ => vec![
                        Progress::Refund { refund_cents: amount / 2, full: false },
                        Progress::Refund { refund_cents: amount - amount / 2, full: true },
                    ],
                };
                for r in refunds {
                    count += r.step(Metric::Sales);
                    revenue += r.step(Metric::RevenueCents);
                }
                match refund {
                    0 => { live_count += 1; live_revenue += amount; }
                    1 => { live_count += 1; live_revenue += amount - amount / 2; }
                    _ => {}
                }
            }
            prop_assert_eq!(count, live_count);
            prop_assert_eq!(revenue, live_revenue);
        }
    }
}
