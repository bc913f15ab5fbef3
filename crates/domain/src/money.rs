//! Money: integer cents inside, dollars with two decimals outside.

/// Cents as dollars, rounded to two decimals for JSON output.
pub fn dollars(cents: i64) -> f64 {
    // Exact for any realistic amount: cents are integers, so /100 then round(2) is stable.
    (cents as f64 / 100.0 * 100.0).round() / 100.0
}

/// Validates and normalises a currency code to three lower-case letters.
pub fn normalize_currency(code: &str) -> Option<String> {
    let code = code.trim();
    (code.len() == 3 && code.bytes().all(|b| b.is_ascii_alphabetic()))
        .then(|| code.to_ascii_lowercase())
}

/// Currencies whose smallest unit is the whole unit (no cents).
pub fn is_zero_decimal(currency: &str) -> bool {
    matches!(
        currency.to_ascii_lowercase().as_str(),
        "bif"
            | "clp"
            | "djf"
            | "gnf"
            | "jpy"
            | "kmf"
            | "krw"
            | "mga"
            | "pyg"
            | "rwf"
            | "ugx"
            | "vnd"
            | "vuv"
            | "xaf"
            | "xof"
            | "xpf"
    )
}

/// An amount in a currency's smallest unit, as hundredths of its major unit: the scale
/// of every figure in the rollups, so that `/100` always gives major units. Cents stay
/// as they are; a zero-decimal amount (¥1000) is multiplied by 100.
pub fn hundredths(amount: i64, currency: &str) -> i64 {
    if is_zero_decimal(currency) {
        amount.saturating_mul(100)
    } else {
        amount
    }
}

/// Hundredths of a currency's major unit (the scale of the rollups) in its smallest
/// unit: the inverse of [`hundredths`].
pub fn from_hundredths(hundredths: i64, currency: &str) -> i64 {
    if is_zero_decimal(currency) {
        hundredths / 100
    } else {
        hundredths
    }
}

/// An amount in a currency's smallest unit, in major units with two decimals.
pub fn major_units(amount: i64, currency: &str) -> f64 {
    dollars(hundredths(amount, currency))
}

/// An amount in a currency's smallest unit as a decimal string of major units, exactly
/// (`12345` usd → `"123.45"`, `-5` usd → `"-0.05"`, `1000` jpy → `"1000"`): the amount
/// columns of payout files.
pub fn major_units_text(amount: i64, currency: &str) -> String {
    if is_zero_decimal(currency) {
        return amount.to_string();
    }
    let sign = if amount < 0 { "-" } else { "" };
    let abs = amount.unsigned_abs();
    format!("{sign}{}.{:02}", abs / 100, abs % 100)
}

/// A non-negative amount typed in major units (`50`, `50.5`, `1,250.00`) in the
/// currency's smallest unit: at most two decimals, none for zero-decimal currencies;
/// `None` when it is not such an amount.
pub fn parse_major_units(text: &str, currency: &str) -> Option<i64> {
    let text: String = text.trim().chars().filter(|c| *c != ',').collect();
    let (whole, fraction) = match text.split_once('.') {
        Some((_, "")) => return None,
        Some((w, f)) => (w, f),
        None => (text.as_str(), ""),
    };
    let places = if is_zero_decimal(currency) { 0 } else { 2 };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits(whole) || !digits(fraction) || fraction.len() > places {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let fraction: i64 = if fraction.is_empty() {
        0
    } else {
        format!("{fraction:0<2}").parse().ok()?
    };
    let scale = if places == 0 { 1 } else { 100 };
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
    }

    #[test]
    fn major_units_text_is_exact() {
        assert_eq!(major_units_text(12_345, "usd"), "123.45");
        assert_eq!(major_units_text(5, "eur"), "0.05");
        assert_eq!(major_units_text(-5, "eur"), "-0.05");
        assert_eq!(major_units_text(100, "usd"), "1.00");
        assert_eq!(major_units_text(1_000, "JPY"), "1000");
        assert_eq!(major_units_text(i64::MIN, "usd"), "-92233720368547758.08");
    }

    #[test]
    fn dollars_have_two_decimals() {
        assert_eq!(dollars(12345), 123.45);
        assert_eq!(dollars(5), 0.05);
        assert_eq!(dollars(-250), -2.5);
        assert_eq!(dollars(0), 0.0);
    }

    #[test]
    fn currency_codes() {
        assert_eq!(normalize_currency("USD").as_deref(), Some("usd"));
        assert_eq!(normalize_currency(" eur ").as_deref(), Some("eur"));
        assert_eq!(normalize_currency("US"), None);
        assert_eq!(normalize_currency("U5D"), None);
        assert!(is_zero_decimal("JPY"));
        assert!(!is_zero_decimal("usd"));
    }

    #[test]
    fn zero_decimal_amounts_are_not_divided() {
        assert_eq!(hundredths(1000, "jpy"), 100_000);
        assert_eq!(major_units(1000, "JPY"), 1000.0);
        assert_eq!(hundredths(1000, "usd"), 1000);
        assert_eq!(from_hundredths(hundredths(1000, "jpy"), "jpy"), 1000);
        assert_eq!(from_hundredths(1050, "usd"), 1050);
        assert_eq!(major_units(1050, "usd"), 10.5);
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
    }
}
