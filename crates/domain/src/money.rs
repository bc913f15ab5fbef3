//! Money: integer minor units inside; major units with the currency's decimals outside
//! ([`currency::decimals`]).

use crate::currency;

/// Validates and normalises a currency code: an ISO 4217 currency ([`currency::is_known`])
/// in lower case.
pub fn normalize_currency(code: &str) -> Option<String> {
    let code = code.trim();
    currency::is_known(code).then(|| code.to_ascii_lowercase())
}

/// An amount in a currency's smallest unit in major units, as a JSON number: divided by
/// 1, 100 or 1000 as the currency's decimals say.
pub fn major_units(amount: i64, currency: &str) -> f64 {
    // Exact to the currency's decimals for any realistic amount.
    let scale = currency::minor_per_major(currency) as f64;
    (amount as f64 / scale * scale).round() / scale
}

/// An amount in a currency's smallest unit as a decimal string of major units, exactly
/// (`12345` usd → `"123.45"`, `-5` usd → `"-0.05"`, `1000` jpy → `"1000"`): the amount
/// columns of payout files. Thousandths for a three-decimal currency (`1234` kwd →
/// `"1.234"`).
pub fn major_units_text(amount: i64, currency: &str) -> String {
    let places = currency::decimals(currency) as usize;
    if places == 0 {
        return amount.to_string();
    }
    let sign = if amount < 0 { "-" } else { "" };
    let abs = amount.unsigned_abs();
    let scale = currency::minor_per_major(currency) as u64;
    format!("{sign}{}.{:0places$}", abs / scale, abs % scale)
}

/// A non-negative amount typed in major units (`50`, `50.5`, `1,250.00`) in the
/// currency's smallest unit: at most as many decimals as the currency has
/// ([`currency::decimals`]); `None` when it is not such an amount.
pub fn parse_major_units(text: &str, currency: &str) -> Option<i64> {
    let text: String = text.trim().chars().filter(|c| *c != ',').collect();
    let (whole, fraction) = match text.split_once('.') {
        Some((_, "")) => return None,
        Some((w, f)) => (w, f),
        None => (text.as_str(), ""),
    };
    let places = currency::decimals(currency) as usize;
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || fraction.len() > places {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let fraction: i64 = if fraction.is_empty() {
        0
    } else {
        format!("{fraction:0<places$}").parse().ok()?
    };
    let scale = currency::minor_per_major(currency);
    whole.checked_mul(scale)?.checked_add(fraction)
}

/// An amount in a currency's smallest unit as a person reads it: the currency's sign
/// where it has a common one (`$`, `€`, `£`, `¥`), else its code after the number, with
/// thousands grouped (`123456` usd → `"$1,234.56"`, `-500` eur → `"-€5.00"`, `1000` jpy
/// → `"¥1,000"`, `250` chf → `"2.50 CHF"`).
pub fn display_amount(amount: i64, currency: &str) -> String {
    let text = major_units_text(amount, currency);
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    let (whole, fraction) = match digits.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (digits, None),
    };
    let mut grouped = String::with_capacity(whole.len() + whole.len() / 3);
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    if let Some(f) = fraction {
        grouped.push('.');
        grouped.push_str(f);
    }
    let symbol = match currency.to_ascii_lowercase().as_str() {
        "usd" => Some("$"),
        "eur" => Some("€"),
        "gbp" => Some("£"),
        "jpy" => Some("¥"),
        _ => None,
    };
    match symbol {
        Some(sym) => format!("{sign}{sym}{grouped}"),
        None => format!("{sign}{grouped} {}", currency.to_ascii_uppercase()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_amounts_group_thousands_with_the_currency_sign() {
        assert_eq!(display_amount(123_456, "usd"), "$1,234.56");
        assert_eq!(display_amount(-500, "EUR"), "-€5.00");
        assert_eq!(display_amount(0, "gbp"), "£0.00");
        assert_eq!(display_amount(1_000, "jpy"), "¥1,000");
        assert_eq!(display_amount(250, "chf"), "2.50 CHF");
        assert_eq!(display_amount(100_000_000, "krw"), "100,000,000 KRW");
        assert_eq!(display_amount(99_999, "usd"), "$999.99");
        assert_eq!(display_amount(1_234_567, "kwd"), "1,234.567 KWD");
    }

    #[test]
    fn major_units_text_is_exact() {
        assert_eq!(major_units_text(12_345, "usd"), "123.45");
        assert_eq!(major_units_text(5, "eur"), "0.05");
        assert_eq!(major_units_text(-5, "eur"), "-0.05");
        assert_eq!(major_units_text(100, "usd"), "1.00");
        assert_eq!(major_units_text(1_000, "JPY"), "1000");
        assert_eq!(major_units_text(i64::MIN, "usd"), "-92233720368547758.08");
        assert_eq!(major_units_text(1_234, "kwd"), "1.234");
        assert_eq!(major_units_text(-5, "bhd"), "-0.005");
    }

    #[test]
    fn currency_codes() {
        assert_eq!(normalize_currency("USD").as_deref(), Some("usd"));
        assert_eq!(normalize_currency(" eur ").as_deref(), Some("eur"));
        assert_eq!(normalize_currency("US"), None);
        assert_eq!(normalize_currency("U5D"), None);
        assert_eq!(normalize_currency("XYZ"), None);
    }

    #[test]
    fn major_units_divide_by_the_currency_scale() {
        assert_eq!(major_units(12_345, "usd"), 123.45);
        assert_eq!(major_units(5, "eur"), 0.05);
        assert_eq!(major_units(-250, "usd"), -2.5);
        assert_eq!(major_units(1_000, "JPY"), 1000.0);
        assert_eq!(major_units(1_234, "kwd"), 1.234);
    }

    #[test]
    fn typed_amounts_read_in_the_smallest_unit() {
        assert_eq!(parse_major_units("50", "usd"), Some(5000));
        assert_eq!(parse_major_units(" 50.5 ", "usd"), Some(5050));
        assert_eq!(parse_major_units("1,250.00", "eur"), Some(125_000));
        assert_eq!(parse_major_units("0.07", "usd"), Some(7));
        assert_eq!(parse_major_units("1000", "jpy"), Some(1000));
        for bad in ["", "-5", "5.001", "abc", "5.", ".5", "1e3"] {
            assert_eq!(parse_major_units(bad, "usd"), None, "{bad}");
        }
        assert_eq!(parse_major_units("10.5", "jpy"), None);
        assert_eq!(parse_major_units("1.234", "kwd"), Some(1_234));
        assert_eq!(parse_major_units("1.5", "bhd"), Some(1_500));
        assert_eq!(parse_major_units("1.2345", "kwd"), None);
    }

    proptest::proptest! {
        /// An amount written to a payout file or a page and read back is the same number
        /// of minor units, in a currency of each scale.
        #[test]
        fn written_amounts_read_back_exactly(amount in 0_i64..i64::MAX / 10, pick in 0_usize..4) {
            let currency = ["usd", "jpy", "kwd", "eur"][pick];
            let text = major_units_text(amount, currency);
            proptest::prop_assert_eq!(parse_major_units(&text, currency), Some(amount));
        }
    }
}
