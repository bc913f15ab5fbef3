//! Money: integer cents inside, dollars with two decimals outside (D3).

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
