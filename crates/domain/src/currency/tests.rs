use super::*;
use proptest::prelude::*;

fn quote(base: &str, quote: &str, rate: &str) -> Quote {
    Quote {
        base: base.into(),
        quote: quote.into(),
        rate: parse_rate(rate).unwrap(),
    }
}

fn ecb() -> Vec<Quote> {
    vec![
        quote("eur", "usd", "1.0423"),
        quote("eur", "jpy", "161.47"),
        quote("eur", "gbp", "0.8321"),
        quote("eur", "kwd", "0.3201"),
    ]
}

#[test]
fn decimals_follow_stripe() {
    assert_eq!(decimals("usd"), 2);
    assert_eq!(decimals("JPY"), 0);
    assert_eq!(decimals("krw"), 0);
    assert_eq!(decimals("vnd"), 0);
    assert_eq!(decimals("kwd"), 3);
    assert_eq!(decimals("BHD"), 3);
    assert_eq!(decimals("tnd"), 3);
    assert_eq!(decimals("chf"), 2);
    assert_eq!(minor_per_major("omr"), 1000);
    assert_eq!(minor_per_major("xof"), 1);
}

#[test]
fn only_iso_codes_with_a_minor_unit_are_known() {
    for code in ["usd", "EUR", "jpy", "kwd", "chf", "brl", "inr"] {
        assert!(is_known(code), "{code}");
    }
    for code in ["xyz", "us", "usdd", "", "xau", "eu1"] {
        assert!(!is_known(code), "{code}");
    }
}

#[test]
fn rates_read_positive_decimals_only() {
    assert_eq!(parse_rate("1.0423").unwrap().to_string(), "1.0423");
    assert_eq!(parse_rate(" 161.470 ").unwrap().to_string(), "161.47");
    assert_eq!(parse_rate("1e-3").unwrap().to_string(), "0.001");
    for bad in ["0", "-1.2", "N/A", "", "abc"] {
        assert!(parse_rate(bad).is_none(), "{bad}");
    }
}

#[test]
fn a_rate_is_direct_inverse_or_across_the_euro() {
    let q = ecb();
    assert_eq!(rate_between(&q, "usd", "usd"), Some(Decimal::ONE));
    assert_eq!(
        rate_between(&q, "eur", "usd").unwrap().to_string(),
        "1.0423"
    );
    // One dollar in euros: 1 / 1.0423, to twelve significant digits.
    assert_eq!(
        rate_between(&q, "usd", "eur").unwrap().to_string(),
        "0.959416674662"
    );
    // A yen in dollars: through the euro.
    let jpy_usd = rate_between(&q, "jpy", "usd").unwrap();
    assert_eq!(jpy_usd.to_string(), "0.00645506905307");
    assert_eq!(rate_between(&q, "usd", "chf"), None);
    assert_eq!(rate_between(&[], "usd", "eur"), None);
}

#[test]
fn conversion_moves_between_decimals() {
    let q = ecb();
    let jpy_usd = rate_between(&q, "jpy", "usd").unwrap();
    // ¥12,000 is $77.46.
    assert_eq!(convert(12_000, "jpy", "usd", jpy_usd), 7_746);
    // €100.00 is $104.23, ¥16,147 and 32.010 KWD.
    let r = |to| rate_between(&q, "eur", to).unwrap();
    assert_eq!(convert(10_000, "eur", "usd", r("usd")), 10_423);
    assert_eq!(convert(10_000, "eur", "jpy", r("jpy")), 16_147);
    assert_eq!(convert(10_000, "eur", "kwd", r("kwd")), 32_010);
    // Half a cent rounds away from zero.
    assert_eq!(convert(1, "usd", "eur", parse_rate("0.5").unwrap()), 1);
    assert_eq!(
        convert(i64::MAX, "jpy", "kwd", parse_rate("1000").unwrap()),
        i64::MAX
    );
}

#[test]
fn refund_shares_add_up_to_the_converted_amount() {
    assert_eq!(refunded_share(7_746, 12_000, 0), 0);
    assert_eq!(refunded_share(7_746, 12_000, 6_000), 3_873);
    assert_eq!(refunded_share(7_746, 12_000, 12_000), 7_746);
    assert_eq!(refunded_share(7_746, 12_000, 13_000), 7_746);
    assert_eq!(refunded_share(10, 0, 5), 0);
}

proptest! {
    /// However a sale is refunded in parts, what the refunds take back of its converted
    /// amount grows with each part, never passes the converted amount, and is exactly it
    /// once the sale is fully refunded.
    #[test]
    fn partial_refunds_never_take_back_more(
        amount in 1_i64..10_000_000,
        converted in 0_i64..10_000_000,
        cuts in proptest::collection::vec(1_i64..1_000, 1..8),
    ) {
        let total: i64 = cuts.iter().sum();
        let mut refunded = 0;
        let mut taken = 0;
        for cut in &cuts {
            refunded += amount * cut / total;
            let share = refunded_share(converted, amount, refunded);
            prop_assert!(share >= taken);
            prop_assert!(share <= converted);
            taken = share;
        }
        prop_assert_eq!(refunded_share(converted, amount, amount), converted);
    }

    /// Converting there and back at a rate and its inverse lands within one minor unit
    /// per unit of rounding, and a conversion never changes sign.
    #[test]
    fn conversion_keeps_sign_and_scale(amount in 0_i64..1_000_000_000, cents in 1_i64..100_000) {
        let rate = Decimal::new(cents, 4);
        let there = convert(amount, "usd", "eur", rate);
        prop_assert!(there >= 0);
        let exact = Decimal::from(amount) * rate;
        prop_assert!((Decimal::from(there) - exact).abs() <= Decimal::new(5, 1));
    }
}

proptest! {
    /// A sale in one currency converted to its program's, its commission, and refunds of
    /// it in parts in the sale's own currency: no refund takes back more than is left of
    /// the commission, the commission's part taken back never passes it and is all of it
    /// once the sale is fully refunded, the revenue taken back adds up to exactly the
    /// converted amount, and what is left to pay reads back from a payout file unchanged.
    #[test]
    fn a_converted_sale_refunded_in_parts_loses_no_minor_unit(
        amount in 1_i64..1_000_000_000,
        pick in 0_usize..9,
        rate_units in 1_i64..10_000_000,
        percent in 0_i64..=100,
        cuts in proptest::collection::vec(1_i64..1_000, 1..6),
    ) {
        let (from, to) = [
            ("jpy", "usd"), ("usd", "jpy"), ("eur", "kwd"), ("kwd", "eur"), ("jpy", "kwd"),
            ("kwd", "jpy"), ("eur", "usd"), ("usd", "eur"), ("gbp", "chf"),
        ][pick];
        let rate = Decimal::new(rate_units, 4);
        let converted = convert(amount, from, to, rate);
        prop_assert!(converted >= 0);
        let commission = converted * percent / 100;
        let total: i64 = cuts.iter().sum();
        let (mut refunded, mut reversed, mut revenue_back) = (0_i64, 0_i64, 0_i64);
        for (n, cut) in cuts.iter().enumerate() {
            let last = n + 1 == cuts.len();
            let ask = if last { None } else { Some((amount * cut / total).max(1)) };
            let state = crate::refund::SaleState {
                amount_cents: amount,
                refunded_cents: refunded,
                commission: Some((commission, reversed)),
            };
            let Ok(plan) = crate::refund::plan(state, ask) else { continue };
            prop_assert!(plan.deduction_cents >= 0);
            prop_assert!(plan.deduction_cents <= commission - reversed);
            let back = refunded_share(converted, amount, refunded + plan.refund_cents)
                - refunded_share(converted, amount, refunded);
            prop_assert!(back >= 0);
            refunded += plan.refund_cents;
            reversed += plan.deduction_cents;
            revenue_back += back;
            let left = commission - reversed;
            let text = crate::money::major_units_text(left, to);
            prop_assert_eq!(crate::money::parse_major_units(&text, to), Some(left));
        }
        prop_assert_eq!(refunded, amount);
        prop_assert_eq!(reversed, commission);
        prop_assert_eq!(revenue_back, converted);
    }
}
