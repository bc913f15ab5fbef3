//! Coupon codes of links: created, listed and archived by the link's owners. A sale naming
//! an active coupon's code (or a Stripe checkout naming its promotion code) is attributed
//! to the link's partner when no customer attributes it (see `app::track`).

use serde::Deserialize;
use utoipa::ToSchema;

use crate::access::Caller;
use crate::error::refusals;
use crate::pages::{listed, named_filter, probe};
use crate::{App, Error, Listed, PageParams, Result};
use reftrack_domain::access::Access;
use reftrack_domain::attribution::coupon_key;
use reftrack_domain::status::CouponStatus;
use reftrack_store::{Coupon, NewCoupon, Record};

/// Longest coupon code.
pub const MAX_CODE_LEN: usize = 64;

/// The body of the management call that creates a coupon code on a link.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CouponBody {
    /// 1 to 64 letters, digits, `-` or `_`; unique among the program's active coupons
    /// whatever its case.
    #[schema(example = "PODCAST20")]
    pub code: String,
    /// The id of the Stripe promotion code (`promo_…`) that stands for this coupon in
    /// Stripe checkouts; unique among the program's active coupons.
    #[schema(example = "promo_1QcsAbCdEf")]
    pub stripe_promotion_code: Option<String>,
}

impl CouponBody {
    /// Every field the body gets wrong, in the coupon form's order: the use case refuses
    /// the first, the form shows them all at once.
    pub fn problems(&self) -> Vec<String> {
        refusals([
            Some(code(&self.code).map(drop)),
            self.stripe_promotion_code
                .as_deref()
                .map(|p| promotion_code(p).map(drop)),
        ])
    }
}

/// A coupon code as given, or the field's error.
fn code(value: &str) -> Result<String> {
    let v = value.trim();
    let fits = (1..=MAX_CODE_LEN).contains(&v.len())
        && v.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_');
    if fits {
        Ok(v.to_string())
    } else {
        Err(Error::invalid(
            "code must be 1 to 64 letters, digits, '-' or '_'",
        ))
    }
}

/// A Stripe promotion code id, or the field's error.
fn promotion_code(value: &str) -> Result<String> {
    let v = value.trim();
    let fits = v.len() <= 255
        && v.strip_prefix("promo_").is_some_and(|rest| {
            !rest.is_empty() && rest.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        });
    if fits {
        Ok(v.to_string())
    } else {
        Err(Error::invalid(
            "stripe_promotion_code must be a Stripe promotion code id (promo_…)",
        ))
    }
}

impl App {
    /// Creates a coupon code on a link.
    pub async fn create_coupon(
        &self,
        caller: &Caller,
        link_id: i64,
        b: CouponBody,
    ) -> Result<Coupon> {
        self.allow(caller, Record::Link(link_id), Access::Change)
            .await?;
        let code = code(&b.code)?;
        let coupon = NewCoupon {
            link_id,
            code_key: coupon_key(&code),
            code,
            stripe_promotion_code: b
                .stripe_promotion_code
                .as_deref()
                .map(promotion_code)
                .transpose()?,
        };
        Ok(self.store.create_coupon(&coupon, self.now_ms()).await?)
    }

    /// One page of a link's coupons, newest first; `status` keeps `active` or
    /// `archived` ones only.
    pub async fn link_coupons(
        &self,
        caller: &Caller,
        link_id: i64,
        status: Option<&str>,
        page: &PageParams,
    ) -> Result<Listed<Coupon>> {
        let status: Option<CouponStatus> = named_filter("status", status)?;
        let page = page.page()?;
        self.allow(caller, Record::Link(link_id), Access::Read)
            .await?;
        self.store.link(link_id).await?;
        let rows = self
            .store
            .link_coupons(link_id, status, probe(page))
            .await?;
        Ok(listed(rows, page, |c| c.id))
    }

    /// Archives a coupon: it attributes no more sales, and its code (and promotion code)
    /// may be given to a new coupon. A coupon archived already: 409.
    pub async fn archive_coupon(
        &self,
        caller: &Caller,
        link_id: i64,
        coupon_id: i64,
    ) -> Result<Coupon> {
        self.allow(caller, Record::Link(link_id), Access::Change)
            .await?;
        self.store
            .archive_coupon(link_id, coupon_id, self.now_ms())
            .await?
            .ok_or_else(|| Error::Conflict("The coupon is archived already".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_plain_words() {
        assert_eq!(code(" PODCAST-20_x ").unwrap(), "PODCAST-20_x");
        for bad in ["", " ", "two words", "a,b", "ünï", &"x".repeat(65)] {
            assert!(code(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_coupon_body_names_every_wrong_field() {
        let b = CouponBody {
            code: "two words".into(),
            stripe_promotion_code: Some("coupon_1".into()),
        };
        assert_eq!(b.problems().len(), 2);
        let b = CouponBody {
            code: "PODCAST20".into(),
            stripe_promotion_code: None,
        };
        assert!(b.problems().is_empty());
    }

    #[test]
    fn promotion_codes_are_stripe_ids() {
        assert_eq!(promotion_code("promo_1QcsAb").unwrap(), "promo_1QcsAb");
        for bad in ["", "promo_", "coupon_1", "promo_a b", "PROMO_1"] {
            assert!(promotion_code(bad).is_err(), "{bad:?}");
        }
    }
}
