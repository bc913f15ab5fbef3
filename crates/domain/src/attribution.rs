//! Attribution rules: the `aff` parameter, customer states, last touch, the lead
//! transition, and who a sale belongs to (its customer's partner, else a coupon's).

pub use crate::status::CustomerStatus;

/// Why an `affiliate_url` yields no referral code.
#[derive(Debug, PartialEq, Eq)]
pub enum AffError {
    /// Not parseable as an absolute URL.
    InvalidUrl,
    /// Parseable, but without a non-empty `aff` query parameter.
    NoAff,
}

impl AffError {
    /// The error text clients read.
    pub fn message(&self) -> &'static str {
        match self {
            AffError::InvalidUrl => "Invalid affiliate_url",
            AffError::NoAff => "No aff parameter found in affiliate_url",
        }
    }
}

/// Extracts the value of the first non-empty `aff` query parameter of an absolute URL.
pub fn extract_aff(affiliate_url: &str) -> Result<String, AffError> {
    let url = url::Url::parse(affiliate_url.trim()).map_err(|_| AffError::InvalidUrl)?;
    if url.cannot_be_a_base() {
        return Err(AffError::InvalidUrl);
    }
    url.query_pairs()
        .find(|(k, v)| k == "aff" && !v.trim().is_empty())
        .map(|(_, v)| v.trim().to_string())
        .ok_or(AffError::NoAff)
}

impl CustomerStatus {
    /// Only a customer at `click` may become a lead; anything else is refused with a 400.
    pub fn to_lead(self) -> Result<CustomerStatus, String> {
        match self {
            CustomerStatus::Click => Ok(CustomerStatus::Lead),
            other => Err(lead_refused(other.as_str())),
        }
    }
}

/// The text of a refused lead transition.
pub fn lead_refused(current: &str) -> String {
    format!("Customer status cannot be updated to lead. Current status: {current}")
}

/// Last touch: an `existing_click_id` is honoured only when it names a customer of
/// the clicked link's program; otherwise the click starts a new customer.
pub fn reuse_customer(existing_customer_program: Option<i64>, link_program: i64) -> bool {
    existing_customer_program == Some(link_program)
}

/// The customer a sale of program `program_id` belongs to: the customer its customer key
/// names in the program (`by_key`), else the customer its click id names (`by_click`),
/// when that one is of the same program; `program_of` reads a customer's program.
pub fn sale_customer<C>(
    program_id: i64,
    by_key: Option<C>,
    by_click: Option<C>,
    program_of: impl Fn(&C) -> i64,
) -> Option<C> {
    by_key.or(by_click.filter(|c| program_of(c) == program_id))
}

/// What attributes a sale to a partner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaleSource<C, K> {
    /// Its customer, found by customer key or click id: the partner of the customer's
    /// last click.
    Customer(C),
    /// A coupon code the sale names (or a payment's promotion code): the partner of the
    /// coupon's link.
    Coupon(K),
}

/// Who a sale belongs to: its customer when one is found (a click attribution wins),
/// else the coupon it names, else nobody.
pub fn sale_source<C, K>(customer: Option<C>, coupon: Option<K>) -> Option<SaleSource<C, K>> {
    match (customer, coupon) {
        (Some(c), _) => Some(SaleSource::Customer(c)),
        (None, Some(k)) => Some(SaleSource::Coupon(k)),
        (None, None) => None,
    }
}

/// A coupon code as it is compared: trimmed and lowercase (codes are unique per program
/// whatever their case).
pub fn coupon_key(code: &str) -> String {
    code.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sale_finds_its_customer_by_key_then_by_click_id_in_its_own_program() {
        let program = |c: &(i64, i64)| c.1;
        assert_eq!(
            sale_customer(7, Some((1, 7)), Some((2, 7)), program),
            Some((1, 7))
        );
        assert_eq!(sale_customer(7, None, Some((2, 7)), program), Some((2, 7)));
        assert_eq!(sale_customer(7, None, Some((2, 8)), program), None);
        assert_eq!(sale_customer::<(i64, i64)>(7, None, None, program), None);
    }

    #[test]
    fn aff_extraction() {
        assert_eq!(
            extract_aff("https://shop.example/p?aff=alice").unwrap(),
            "alice"
        );
        assert_eq!(extract_aff("https://x.io/?utm=1&aff=b%20o").unwrap(), "b o");
        assert_eq!(
            extract_aff("https://x.io/?aff=&aff=second").unwrap(),
            "second"
        );
        assert_eq!(extract_aff("https://x.io/?ref=alice"), Err(AffError::NoAff));
        assert_eq!(extract_aff("https://x.io/?aff="), Err(AffError::NoAff));
        assert_eq!(extract_aff("/relative?aff=a"), Err(AffError::InvalidUrl));
        assert_eq!(extract_aff("not a url"), Err(AffError::InvalidUrl));
        assert_eq!(extract_aff("mailto:a@b.c?aff=x"), Err(AffError::InvalidUrl));
    }

    #[test]
    fn lead_transition_only_from_click() {
        assert_eq!(CustomerStatus::Click.to_lead(), Ok(CustomerStatus::Lead));
        assert_eq!(
            CustomerStatus::Lead.to_lead().unwrap_err(),
            "Customer status cannot be updated to lead. Current status: lead"
        );
        assert_eq!(
            CustomerStatus::Conversion.to_lead().unwrap_err(),
            "Customer status cannot be updated to lead. Current status: conversion"
        );
    }

    #[test]
    fn a_customer_wins_over_a_coupon() {
        assert_eq!(
            sale_source(Some(1), Some('k')),
            Some(SaleSource::Customer(1))
        );
        assert_eq!(
            sale_source(None::<i32>, Some('k')),
            Some(SaleSource::Coupon('k'))
        );
        assert_eq!(
            sale_source(Some(1), None::<char>),
            Some(SaleSource::Customer(1))
        );
        assert_eq!(sale_source(None::<i32>, None::<char>), None);
    }

    #[test]
    fn coupon_codes_compare_without_case() {
        assert_eq!(coupon_key(" Podcast20 "), "podcast20");
        assert_eq!(coupon_key("PODCAST20"), coupon_key("podcast20"));
    }

    #[test]
    fn last_touch_reuses_only_same_program() {
        assert!(reuse_customer(Some(3), 3));
        assert!(!reuse_customer(Some(4), 3));
        assert!(!reuse_customer(None, 3));
    }
}
