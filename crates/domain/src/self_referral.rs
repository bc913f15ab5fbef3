//! Self-referral: a partner buying through its own link. A sale is a self-referral when
//! one of its customer's emails is one of its partner's, compared as [`email_key`] reads
//! them (case and a `+tag` ignored).

/// An email as the rule compares it: trimmed, lowercase, and without the `+tag` of its
/// local part (`Ann+shop@Example.com` reads `ann@example.com`). Text that is not an
/// address is compared whole, lowercase.
pub fn email_key(email: &str) -> String {
    let email = email.trim().to_lowercase();
    match email.rsplit_once('@') {
        Some((local, domain)) => {
            let local = local.split_once('+').map_or(local, |(base, _tag)| base);
            format!("{local}@{domain}")
        }
        None => email,
    }
}

/// Whether any of the customer's emails (the lead's, the sale's, the payment's) is one of
/// the partner's (its contact and its sign-in email). Blank emails match nothing.
pub fn is_self_referral<'a>(
    customer: impl IntoIterator<Item = &'a str>,
    partner: impl IntoIterator<Item = &'a str> + Clone,
) -> bool {
    let keys = |emails: &mut dyn Iterator<Item = &'a str>| -> Vec<String> {
        emails
            .filter(|e| !e.trim().is_empty())
            .map(email_key)
            .collect()
    };
    let partner = keys(&mut partner.into_iter());
    keys(&mut customer.into_iter())
        .iter()
        .any(|c| partner.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_ignore_case_tags_and_spaces() {
        assert_eq!(email_key(" Ann+Shop@Example.COM "), "ann@example.com");
        assert_eq!(email_key("ann@example.com"), "ann@example.com");
        assert_eq!(email_key("a+b+c@x.io"), "a@x.io");
        // The tag is the local part's: a `+` in the domain is not one.
        assert_eq!(email_key("ann@ex+ample.com"), "ann@ex+ample.com");
        assert_eq!(email_key("Not An Address"), "not an address");
        assert_eq!(email_key("+tag@x.io"), "@x.io");
    }

    #[test]
    fn a_customer_email_of_the_partner_is_a_self_referral() {
        let partner = ["alice@example.com"];
        assert!(is_self_referral(["ALICE+deal@example.com"], partner));
        assert!(is_self_referral(
            ["bob@example.com", "alice@example.com"],
            partner
        ));
        assert!(!is_self_referral(["bob@example.com"], partner));
        assert!(!is_self_referral(["alice@example.org"], partner));
        // Either of the partner's emails counts.
        assert!(is_self_referral(
            ["al@shop.io"],
            ["alice@example.com", "Al@Shop.io"]
        ));
    }

    #[test]
    fn nothing_to_compare_is_no_self_referral() {
        assert!(!is_self_referral([], ["alice@example.com"]));
        assert!(!is_self_referral(["alice@example.com"], []));
        assert!(!is_self_referral([" "], [" "]));
        assert!(!is_self_referral([""], [""]));
    }
}
