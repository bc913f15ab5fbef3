//! Stripe webhooks: signature verification and what an event asks of the tracker.
//! Pure functions; the HTTP handler and the store do the I/O.

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

/// Seconds a signature's timestamp may differ from now (Stripe's default tolerance).
pub const TOLERANCE_SECS: i64 = 300;

/// Why a webhook's signature is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum SignatureError {
    /// No `Stripe-Signature` header.
    Missing,
    /// The header has no `t=` or no `v1=`.
    Malformed,
    /// The timestamp is outside the tolerance.
    Stale,
    /// No `v1` signature matches.
    Mismatch,
}

impl SignatureError {
    /// The error text sent to the caller.
    pub fn message(&self) -> &'static str {
        match self {
            SignatureError::Missing => "Missing Stripe-Signature header",
            SignatureError::Malformed => "Malformed Stripe-Signature header",
            SignatureError::Stale => "Webhook timestamp is outside the tolerance",
            SignatureError::Mismatch => "Webhook signature does not match",
        }
    }
}

/// Verifies `Stripe-Signature: t=…,v1=…[,v1=…]` over the raw body: HMAC-SHA256 of
/// `"{t}.{payload}"` with the endpoint secret, compared in constant time.
pub fn verify_signature(
    header: Option<&str>,
    payload: &[u8],
    secret: &str,
    now_secs: i64,
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", sig)) => {
                if let Ok(bytes) = hex::decode(sig) {
                    signatures.push(bytes);
                }
            }
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    // `abs_diff`: a hostile timestamp such as i64::MIN must not overflow the subtraction.
    if now_secs.abs_diff(timestamp) > TOLERANCE_SECS.unsigned_abs() {
        return Err(SignatureError::Stale);
    }
    let signed = |sig: &[u8]| {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(payload);
        // `verify_slice` compares in constant time.
        mac.verify_slice(sig).is_ok()
    };
    if signatures.iter().any(|s| signed(s)) {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// Attribution metadata carried by a checkout session or a subscription.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attribution {
    pub click_id: Option<String>,
    pub customer_key: Option<String>,
    pub program_id: Option<i64>,
    /// `tracker_product_id`: the product a reward's modifiers read.
    pub product_id: Option<String>,
}

impl Attribution {
    fn from_metadata(meta: Option<&Value>) -> Option<Self> {
        let meta = meta?.as_object()?;
        // Integrators mix snake_case and camelCase keys.
        let get = |snake: &str, camel: &str| {
            meta.get(snake)
                .or_else(|| meta.get(camel))
                .and_then(|v| match v {
                    Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => None,
                })
        };
        let a = Attribution {
            click_id: get("tracker_click_id", "trackerClickId"),
            customer_key: get("tracker_customer_key", "trackerCustomerKey"),
            program_id: get("program_id", "programId").and_then(|p| p.parse().ok()),
            product_id: get("tracker_product_id", "trackerProductId").filter(|p| fits_product(p)),
        };
        (a.click_id.is_some() || a.customer_key.is_some()).then_some(a)
    }
}

/// A payment to record as a sale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payment {
    /// The sale's `transaction_id`: the invoice id for subscription payments (so that a
    /// subscription's first payment, seen both as a checkout session and as its first
    /// invoice, is one sale), else the payment intent or session id.
    pub transaction_id: String,
    pub amount: i64,
    pub currency: String,
    pub attribution: Attribution,
    pub is_recurring: bool,
    pub subscription_id: Option<String>,
    pub payment_intent: Option<String>,
    pub charge: Option<String>,
    /// The first promotion code (`promo_…`) of the checkout's discounts: it attributes
    /// the sale like a coupon code when the metadata does not.
    pub promotion_code: Option<String>,
    /// The customer's email as the checkout collected it, for the self-referral check.
    pub customer_email: Option<String>,
    /// The product the sale is of: the metadata's `tracker_product_id`, else the first
    /// line item's price's product when the event carries line items.
    pub product_id: Option<String>,
}

/// A refund of a charge: `amount_refunded` is the cumulative total Stripe reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChargeRefund {
    pub charge: String,
    pub payment_intent: Option<String>,
    pub invoice: Option<String>,
    pub amount: i64,
    pub amount_refunded: i64,
}

/// The connected account's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountState {
    pub account_id: String,
    pub charges_enabled: bool,
    pub payouts_enabled: bool,
    pub details_submitted: bool,
}

impl AccountState {
    /// `connected` once charges are enabled and details submitted, else `pending`.
    pub fn status(&self) -> &'static str {
        if self.charges_enabled && self.details_submitted {
            "connected"
        } else {
            "pending"
        }
    }
}

/// What an event asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Boxed: a payment is several times the size of the other actions.
    Sale(Box<Payment>),
    Refund(ChargeRefund),
    Account(AccountState),
    /// Nothing to do, and why.
    Ignore(&'static str),
}

/// A verified event: its id and what it asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: String,
    pub kind: String,
    pub action: Action,
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// An id field that Stripe sends either as a string or, when expanded, as an object.
fn id_of(v: &Value, key: &str) -> Option<String> {
    match v.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Object(o)) => o.get("id").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

/// Reads an event body. `Err` for a body that is not a Stripe event at all.
pub fn parse_event(body: &[u8]) -> Result<Event, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("Malformed JSON: {e}"))?;
    let id = str_of(&v, "id").ok_or("Event has no id")?.to_string();
    let kind = str_of(&v, "type").ok_or("Event has no type")?.to_string();
    let object = v
        .pointer("/data/object")
        .ok_or("Event has no data.object")?;
    let action = match kind.as_str() {
        "checkout.session.completed" | "checkout.session.async_payment_succeeded" => {
            checkout_session(object)
        }
        "invoice.payment_succeeded" | "invoice.paid" => invoice(object),
        "charge.refunded" => charge_refunded(object),
        "account.updated" => account(object),
        _ => Action::Ignore("unhandled event type"),
    };
    Ok(Event { id, kind, action })
}

/// The longest product id a sale takes (as the tracking API's `product_id`).
pub const MAX_PRODUCT_ID_LEN: usize = 255;

fn fits_product(id: &str) -> bool {
    id.chars().count() <= MAX_PRODUCT_ID_LEN
}

/// The product of the first line item of `lines` (`line_items` of a checkout session when
/// expanded, `lines` of an invoice): its price's `product`, an id or the expanded object,
/// also where newer API versions nest the price (`pricing.price_details`).
fn first_line_product(lines: Option<&Value>) -> Option<String> {
    let line = lines?.pointer("/data/0")?;
    line.get("price")
        .and_then(|p| id_of(p, "product"))
        .or_else(|| {
            line.pointer("/pricing/price_details")
                .and_then(|p| id_of(p, "product"))
        })
        .filter(|p| fits_product(p))
}

fn amount_of(object: &Value, key: &str) -> Option<i64> {
    object.get(key).and_then(Value::as_i64)
}

/// The promotion code of a checkout session's first discount that has one; Stripe sends
/// its id, or the object when expanded.
fn promotion_code(s: &Value) -> Option<String> {
    s.get("discounts")?
        .as_array()?
        .iter()
        .find_map(|d| id_of(d, "promotion_code"))
        .filter(|id| id.starts_with("promo_"))
}

fn checkout_session(s: &Value) -> Action {
    if str_of(s, "payment_status") != Some("paid") {
        return Action::Ignore("checkout session is not paid");
    }
    let promotion_code = promotion_code(s);
    let attribution = match Attribution::from_metadata(s.get("metadata")) {
        Some(a) => a,
        None if promotion_code.is_some() => Attribution::default(),
        None => return Action::Ignore("no attribution metadata and no promotion code"),
    };
    let Some(amount) = amount_of(s, "amount_total").filter(|a| *a > 0) else {
        return Action::Ignore("nothing was paid");
    };
    let product_id = attribution
        .product_id
        .clone()
        .or_else(|| first_line_product(s.get("line_items")));
    let subscription = id_of(s, "subscription");
    let invoice = id_of(s, "invoice");
    let payment_intent = id_of(s, "payment_intent");
    let transaction_id = match (&invoice, &payment_intent) {
        (Some(inv), _) => inv.clone(),
        (None, Some(pi)) => pi.clone(),
        (None, None) => match str_of(s, "id") {
            Some(id) => id.to_string(),
            None => return Action::Ignore("checkout session has no id"),
        },
    };
    Action::Sale(Box::new(Payment {
        transaction_id,
        amount,
        currency: str_of(s, "currency").unwrap_or("usd").to_string(),
        attribution,
        is_recurring: false,
        subscription_id: subscription,
        payment_intent,
        charge: None,
        promotion_code,
        customer_email: s
            .pointer("/customer_details/email")
            .and_then(Value::as_str)
            .or_else(|| str_of(s, "customer_email"))
            .filter(|e| !e.trim().is_empty())
            .map(str::to_string),
        product_id,
    }))
}

fn invoice(i: &Value) -> Action {
    // Metadata of the subscription: `subscription_details.metadata` (API versions up to
    // 2025-02) or `parent.subscription_details.metadata` (2025-03 "basil" and later).
    let details = i
        .get("subscription_details")
        .or_else(|| i.pointer("/parent/subscription_details"));
    let meta = details.and_then(|d| d.get("metadata"));
    let Some(attribution) = Attribution::from_metadata(meta) else {
        return Action::Ignore("no attribution metadata on the subscription");
    };
    let Some(amount) = amount_of(i, "amount_paid").filter(|a| *a > 0) else {
        return Action::Ignore("nothing was paid");
    };
    let Some(invoice_id) = str_of(i, "id") else {
        return Action::Ignore("invoice has no id");
    };
    let subscription =
        id_of(i, "subscription").or_else(|| details.and_then(|d| id_of(d, "subscription")));
    let first_payment_intent = i
        .pointer("/payments/data/0/payment")
        .and_then(|p| id_of(p, "payment_intent"));
    let product_id = attribution
        .product_id
        .clone()
        .or_else(|| first_line_product(i.get("lines")));
    Action::Sale(Box::new(Payment {
        transaction_id: invoice_id.to_string(),
        amount,
        currency: str_of(i, "currency").unwrap_or("usd").to_string(),
        attribution,
        is_recurring: str_of(i, "billing_reason") != Some("subscription_create"),
        subscription_id: subscription,
        payment_intent: id_of(i, "payment_intent").or(first_payment_intent),
        charge: id_of(i, "charge"),
        promotion_code: None,
        customer_email: str_of(i, "customer_email").map(str::to_string),
        product_id,
    }))
}

fn charge_refunded(c: &Value) -> Action {
    let (Some(charge), Some(amount), Some(amount_refunded)) = (
        str_of(c, "id"),
        amount_of(c, "amount"),
        amount_of(c, "amount_refunded"),
    ) else {
        return Action::Ignore("charge has no id or amounts");
    };
    Action::Refund(ChargeRefund {
        charge: charge.to_string(),
        payment_intent: id_of(c, "payment_intent"),
        invoice: id_of(c, "invoice"),
        amount,
        amount_refunded,
    })
}

fn account(a: &Value) -> Action {
    let Some(id) = str_of(a, "id") else {
        return Action::Ignore("account has no id");
    };
    let flag = |k: &str| a.get(k).and_then(Value::as_bool).unwrap_or(false);
    Action::Account(AccountState {
        account_id: id.to_string(),
        charges_enabled: flag("charges_enabled"),
        payouts_enabled: flag("payouts_enabled"),
        details_submitted: flag("details_submitted"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sign(secret: &str, t: i64, payload: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{t}.").as_bytes());
        mac.update(payload);
        hex::encode(mac.finalize().into_bytes())
    }

    #[test]
    fn signatures() {
        let body = br#"{"id":"evt_1"}"#;
        let now = 1_700_000_000;
        let good = sign("whsec_a", now, body);
        let header = format!("t={now},v1={good}");
        assert_eq!(
            verify_signature(Some(&header), body, "whsec_a", now),
            Ok(())
        );
        // Several v1 (secret rotation), one matching.
        let h = format!("t={now},v1={},v1={good},v0=zzz", "00".repeat(32));
        assert_eq!(
            verify_signature(Some(&h), body, "whsec_a", now + 10),
            Ok(())
        );
        assert_eq!(
            verify_signature(None, body, "whsec_a", now),
            Err(SignatureError::Missing)
        );
        assert_eq!(
            verify_signature(Some("v1=abc"), body, "whsec_a", now),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify_signature(Some(&format!("t={now}")), body, "whsec_a", now),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            verify_signature(Some(&header), body, "whsec_b", now),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(Some(&header), b"{}", "whsec_a", now),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(Some(&header), body, "whsec_a", now + 301),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify_signature(Some(&header), body, "whsec_a", now - 301),
            Err(SignatureError::Stale)
        );
        // Found by the fuzzer: extreme timestamps, whose distance from now overflows an
        // i64, are stale.
        assert_eq!(
            verify_signature(Some("t=-9223372036854775808,v1=00"), body, "whsec_a", now),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify_signature(Some(&header), body, "whsec_a", i64::MIN),
            Err(SignatureError::Stale)
        );
    }

    #[test]
    fn metadata_in_both_cases_and_numbers() {
        let a = Attribution::from_metadata(Some(
            &json!({"trackerClickId": "cust_1_2", "programId": "3"}),
        ))
        .unwrap();
        assert_eq!(a.click_id.as_deref(), Some("cust_1_2"));
        assert_eq!(a.program_id, Some(3));
        let b = Attribution::from_metadata(Some(
            &json!({"tracker_customer_key": "u1", "program_id": 3}),
        ))
        .unwrap();
        assert_eq!(b.customer_key.as_deref(), Some("u1"));
        assert_eq!(b.program_id, Some(3));
        assert_eq!(
            Attribution::from_metadata(Some(&json!({"program_id": "3"}))),
            None
        );
        assert_eq!(Attribution::from_metadata(None), None);
    }

    #[test]
    fn the_product_comes_from_the_metadata_else_the_first_line_item() {
        let session = |meta: Value, lines: Option<Value>| {
            let mut s = json!({"id": "cs_1", "payment_status": "paid", "amount_total": 5000,
                "currency": "usd", "payment_intent": "pi_1", "metadata": meta});
            if let Some(lines) = lines {
                s["line_items"] = lines;
            }
            match checkout_session(&s) {
                Action::Sale(p) => p.product_id,
                other => panic!("{other:?}"),
            }
        };
        let lines = json!({"data": [{"price": {"id": "price_1", "product": "prod_team"}},
            {"price": {"id": "price_2", "product": "prod_other"}}]});
        assert_eq!(
            session(
                json!({"tracker_click_id": "c1", "tracker_product_id": "prod_enterprise"}),
                Some(lines.clone())
            ),
            Some("prod_enterprise".into())
        );
        assert_eq!(
            session(
                json!({"trackerClickId": "c1", "trackerProductId": "prod_x"}),
                None
            ),
            Some("prod_x".into())
        );
        assert_eq!(
            session(json!({"tracker_click_id": "c1"}), Some(lines)),
            Some("prod_team".into())
        );
        let expanded =
            json!({"data": [{"price": {"product": {"id": "prod_obj", "name": "Team"}}}]});
        assert_eq!(
            session(json!({"tracker_click_id": "c1"}), Some(expanded)),
            Some("prod_obj".into())
        );
        assert_eq!(session(json!({"tracker_click_id": "c1"}), None), None);
        let long = "p".repeat(MAX_PRODUCT_ID_LEN + 1);
        assert_eq!(
            session(
                json!({"tracker_click_id": "c1", "tracker_product_id": long}),
                None
            ),
            None
        );
        // An invoice's lines, in the older shape and in the newer `pricing` one.
        for line in [
            json!({"price": {"product": "prod_inv"}}),
            json!({"pricing": {"type": "price_details", "price_details": {"price": "price_1", "product": "prod_inv"}}}),
        ] {
            let inv = json!({"id": "in_1", "amount_paid": 2000, "currency": "usd",
                "billing_reason": "subscription_create", "subscription": "sub_1",
                "subscription_details": {"metadata": {"tracker_customer_key": "u1"}},
                "lines": {"data": [line]}});
            let Action::Sale(p) = invoice(&inv) else {
                panic!()
            };
            assert_eq!(p.product_id.as_deref(), Some("prod_inv"));
        }
    }

    #[test]
    fn invoice_metadata_in_both_shapes() {
        let old = json!({"id": "in_1", "amount_paid": 2000, "currency": "usd", "billing_reason": "subscription_cycle",
            "subscription": "sub_1", "charge": "ch_1", "payment_intent": "pi_1",
            "subscription_details": {"metadata": {"tracker_customer_key": "u1"}}});
        let new = json!({"id": "in_1", "amount_paid": 2000, "currency": "usd", "billing_reason": "subscription_cycle",
            "parent": {"type": "subscription_details", "subscription_details": {"metadata": {"tracker_customer_key": "u1"}, "subscription": "sub_1"}}});
        for (inv, charge) in [(old, Some("ch_1")), (new, None)] {
            let Action::Sale(p) = invoice(&inv) else {
                panic!()
            };
            assert_eq!(p.transaction_id, "in_1");
            assert!(p.is_recurring);
            assert_eq!(p.subscription_id.as_deref(), Some("sub_1"));
            assert_eq!(p.charge.as_deref(), charge);
        }
    }

    #[test]
    fn subscription_checkout_uses_the_first_invoice_id() {
        let s = json!({"id": "cs_1", "mode": "subscription", "payment_status": "paid", "amount_total": 1500,
            "currency": "eur", "invoice": "in_first", "subscription": "sub_9", "payment_intent": null,
            "metadata": {"tracker_click_id": "cust_1_2"}});
        let Action::Sale(p) = checkout_session(&s) else {
            panic!()
        };
        assert_eq!(p.transaction_id, "in_first");
        assert!(!p.is_recurring);
        let unpaid = json!({"id": "cs_2", "payment_status": "unpaid", "metadata": {"tracker_click_id": "x"}});
        assert_eq!(
            checkout_session(&unpaid),
            Action::Ignore("checkout session is not paid")
        );
    }

    #[test]
    fn a_promotion_code_attributes_a_checkout_without_metadata() {
        let s = json!({"id": "cs_3", "payment_status": "paid", "amount_total": 900, "currency": "usd",
            "payment_intent": "pi_3", "metadata": {},
            "customer_details": {"email": "Bob@Example.com"},
            "discounts": [{"coupon": "co_1", "promotion_code": null},
                          {"coupon": "co_2", "promotion_code": {"id": "promo_ABC", "object": "promotion_code"}}]});
        let Action::Sale(p) = checkout_session(&s) else {
            panic!()
        };
        assert_eq!(p.promotion_code.as_deref(), Some("promo_ABC"));
        assert_eq!(p.attribution, Attribution::default());
        assert_eq!(p.customer_email.as_deref(), Some("Bob@Example.com"));
        let plain = json!({"id": "cs_4", "payment_status": "paid", "amount_total": 900,
            "discounts": [{"promotion_code": "promo_Z"}], "customer_email": "c@x.io"});
        let Action::Sale(p) = checkout_session(&plain) else {
            panic!()
        };
        assert_eq!(p.promotion_code.as_deref(), Some("promo_Z"));
        assert_eq!(p.customer_email.as_deref(), Some("c@x.io"));
        let neither =
            json!({"id": "cs_5", "payment_status": "paid", "amount_total": 900, "discounts": []});
        assert_eq!(
            checkout_session(&neither),
            Action::Ignore("no attribution metadata and no promotion code")
        );
    }

    #[test]
    fn unknown_events_are_ignored_and_garbage_refused() {
        let e = parse_event(br#"{"id":"evt_1","type":"customer.created","data":{"object":{}}}"#)
            .unwrap();
        assert_eq!(e.action, Action::Ignore("unhandled event type"));
        assert!(parse_event(b"not json").is_err());
        assert!(parse_event(br#"{"type":"x"}"#).is_err());
    }

    #[test]
    fn account_status() {
        let a = AccountState {
            account_id: "acct".into(),
            charges_enabled: true,
            payouts_enabled: false,
            details_submitted: true,
        };
        assert_eq!(a.status(), "connected");
        let b = AccountState {
            details_submitted: false,
            ..a
        };
        assert_eq!(b.status(), "pending");
    }
}
