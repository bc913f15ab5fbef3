//! A program's terms in a partner's words: what a sale earns, how long a click is
//! remembered, whether renewals earn, when a commission becomes payable and the smallest
//! payout. The apply page and the overview show the same lines, from here.

use reftrack_domain::money::display_amount;
use reftrack_service::accounts::ProgramTerms;

/// The lines stating `terms`, one sentence each, in the order a partner asks: what it
/// earns, on renewals, for how long a visitor counts, when it is payable, the minimum
/// payout. Amounts are in the program's currency.
pub(super) fn lines(terms: &ProgramTerms) -> Vec<String> {
    let money = |cents| display_amount(cents, &terms.currency);
    let commission = match terms.commission {
        Some(rule) => format!("You earn {}.", rule.spec().words(&terms.currency)),
        None => "Sales bring you no commission in this program.".to_string(),
    };
    // The modifiers, first match first: each replaces the base where it applies.
    let modifiers = terms.modifiers.iter().map(|m| format!("You earn {m}."));
    // `recurring_earns`: none, every renewal; 0, none; n, those within n months.
    let renewals = match terms.recurring_commission_months {
        None => "On a subscription, you also earn on every renewal.".to_string(),
        Some(months) if months <= 0 => {
            "On a subscription, you earn on the first payment only, not on renewals.".to_string()
        }
        Some(months) => format!(
            "On a subscription, you also earn on its renewals for {} after its first payment.",
            count(months, "month")
        ),
    };
    // The window is how long the tracker's cookie keeps the click (restarted by each
    // click); last touch gives a visitor to the partner of its latest click.
    let window = format!(
        "Visitors who follow your link are remembered for {}: if they sign up or buy \
         within that time, it counts as yours, unless they follow another partner's link \
         after yours.",
        count(terms.cookie_window_days, "day")
    );
    let hold = match terms.commission_hold_days {
        days if days <= 0 => "Commissions become payable as soon as the sale is recorded.".into(),
        days => format!(
            "Commissions become payable {} after the sale.",
            count(days, "day")
        ),
    };
    let payout = match terms.min_payout_cents {
        cents if cents <= 0 => "Payouts pay whatever your payable commissions add up to.".into(),
        cents => format!(
            "Payouts are made once your payable commissions add up to at least {}.",
            money(cents)
        ),
    };
    let mut lines = vec![commission];
    lines.extend(modifiers);
    lines.extend([renewals, window, hold, payout]);
    lines
}

/// `n` `unit`s, singular for one: `1 day`, `60 days`.
fn count(n: i64, unit: &str) -> String {
    if n == 1 {
        format!("1 {unit}")
    } else {
        format!("{n} {unit}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reftrack_domain::commission::CommissionRule;

    fn terms() -> ProgramTerms {
        ProgramTerms {
            currency: "usd".into(),
            commission: Some(CommissionRule::Percentage { bps: 3000 }),
            modifiers: Vec::new(),
            cookie_window_days: 60,
            recurring_commission_months: None,
            commission_hold_days: 30,
            min_payout_cents: 5000,
        }
    }

    #[test]
    fn the_defaults_read_as_sentences() {
        assert_eq!(
            lines(&terms()),
            [
                "You earn 30\u{a0}% of each sale.",
                "On a subscription, you also earn on every renewal.",
                "Visitors who follow your link are remembered for 60 days: if they sign up or \
                 buy within that time, it counts as yours, unless they follow another \
                 partner's link after yours.",
                "Commissions become payable 30 days after the sale.",
                "Payouts are made once your payable commissions add up to at least $50.00.",
            ]
        );
    }

    #[test]
    fn flat_amounts_renewals_and_zeros() {
        let t = ProgramTerms {
            currency: "eur".into(),
            commission: Some(CommissionRule::Flat { amount_cents: 500 }),
            modifiers: Vec::new(),
            cookie_window_days: 1,
            recurring_commission_months: Some(12),
            commission_hold_days: 1,
            min_payout_cents: 0,
        };
        let l = lines(&t);
        assert_eq!(l[0], "You earn €5.00 per sale.");
        assert_eq!(
            l[1],
            "On a subscription, you also earn on its renewals for 12 months after its first payment."
        );
        assert!(l[2].contains("remembered for 1 day:"), "{}", l[2]);
        assert_eq!(l[3], "Commissions become payable 1 day after the sale.");
        assert_eq!(
            l[4],
            "Payouts pay whatever your payable commissions add up to."
        );

        let t = ProgramTerms {
            recurring_commission_months: Some(0),
            commission_hold_days: 0,
            currency: "jpy".into(),
            min_payout_cents: 10_000,
            ..t
        };
        let l = lines(&t);
        assert_eq!(
            l[1],
            "On a subscription, you earn on the first payment only, not on renewals."
        );
        assert_eq!(
            l[3],
            "Commissions become payable as soon as the sale is recorded."
        );
        assert!(l[4].ends_with("at least ¥10,000."), "{}", l[4]);
        let t = ProgramTerms {
            recurring_commission_months: Some(1),
            ..t
        };
        assert!(lines(&t)[1].contains("for 1 month after"));
    }

    #[test]
    fn modifiers_follow_the_base_and_no_reward_says_so() {
        let t = ProgramTerms {
            modifiers: vec![
                "40% on product prod_enterprise".into(),
                "35% once you have brought $10,000.00".into(),
            ],
            ..terms()
        };
        let l = lines(&t);
        assert_eq!(l[1], "You earn 40% on product prod_enterprise.");
        assert_eq!(l[2], "You earn 35% once you have brought $10,000.00.");
        assert_eq!(l[3], "On a subscription, you also earn on every renewal.");
        let none = ProgramTerms {
            commission: None,
            ..terms()
        };
        assert_eq!(
            lines(&none)[0],
            "Sales bring you no commission in this program."
        );
    }
}
