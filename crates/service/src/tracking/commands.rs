//! What the tracking calls take and answer.

use super::*;

/// The answer to a click for an origin the program does not list.
pub(super) fn forbidden_origin() -> Error {
    Error::Forbidden("Origin not allowed".into())
}

/// A click on a referral link, as the tracking API received it.
#[derive(Debug)]
pub struct ClickCommand {
    /// The link's code read from the landing URL, or why none could be read.
    pub aff: std::result::Result<String, AffError>,
    /// The browser's `Origin`, if any.
    pub origin: Option<String>,
    /// What the click listing stores of the visit.
    pub details: ClickDetails,
    /// The click id the browser already holds, to reuse its customer (last touch).
    pub existing_click_id: Option<String>,
    /// Test mode: a flagged event, no customer and no figures.
    pub test_mode: bool,
    /// The program named by `additional_data` (test mode).
    pub program_id: Option<i64>,
    /// Whether the click is a redirect link's visit, which waits for its commit at most
    /// the redirect's wait ([`ClickWaits`]).
    pub redirect: bool,
}

/// How long a click waits for its commit before it is answered anyway. The click stays
/// queued and commits with its batch; a crash in between loses it, so the tracking API
/// waits for the commit unless the operator chose otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClickWaits {
    /// A redirect link's visit (`GET /r/…`): the visitor is sent on after this.
    pub redirect: Duration,
    /// `POST /api/v1/track/click`; `None`: until committed.
    pub api: Option<Duration>,
}

impl Default for ClickWaits {
    fn default() -> Self {
        ClickWaits {
            redirect: Duration::from_millis(25),
            api: None,
        }
    }
}

/// What a click did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClickOutcome {
    /// Recorded; the browser keeps `click_id` for the cookie window.
    Tracked {
        click_id: String,
        partner_code: String,
        cookie_window_days: i64,
        /// Whether its commit was done when it was answered (else it was still queued
        /// when its wait ran out).
        committed: bool,
    },
    /// The link exists but is inactive: nothing recorded.
    Inactive,
    /// A test click was stored.
    Test { event_id: i64, program_id: i64 },
}

/// A signup, as the tracking API received it.
#[derive(Debug, Clone, Default)]
pub struct LeadCommand {
    /// The program of the API key, in server mode; `None` in browser mode.
    pub server_program: Option<Program>,
    /// The program named by `additional_data`.
    pub program_id: Option<i64>,
    /// The browser's `Origin`, if any.
    pub origin: Option<String>,
    pub click_id: Option<String>,
    pub customer_key: Option<String>,
    pub email: Option<String>,
    pub session_id: Option<String>,
    pub page_url: Option<String>,
    pub event_name: Option<String>,
}

/// A sale, as the tracking API or a payment processor reports it.
#[derive(Debug, Clone, Default)]
pub struct SaleCommand {
    /// `None` only in test mode, which then issues `test_txn_<ms>`.
    pub transaction_id: Option<String>,
    pub amount_cents: i64,
    /// Lowercase ISO 4217 code; the program's currency when `None`.
    pub currency: Option<String>,
    pub customer_key: Option<String>,
    pub click_id: Option<String>,
    /// `payment` or `subscription`.
    pub sale_type: String,
    pub is_recurring: bool,
    pub subscription_id: Option<String>,
    pub product_id: Option<String>,
    /// A JSON object, as text.
    pub metadata: Option<String>,
    pub test_mode: bool,
    /// A coupon code the customer used: attributes the sale when no customer does.
    pub coupon_code: Option<String>,
    /// The Stripe promotion code (`promo_…`) of a payment, matched like a coupon code.
    pub promotion_code: Option<String>,
    /// The customer's email, for the self-referral check.
    pub customer_email: Option<String>,
}

/// A refund, as the tracking API or a payment processor reports it.
#[derive(Debug, Clone)]
pub struct RefundCommand {
    pub transaction_id: String,
    /// `None` refunds what is left.
    pub amount_cents: Option<i64>,
    pub reason: Option<String>,
    /// The integrator's id of this refund: sent again, it changes nothing.
    pub refund_id: Option<String>,
    pub test_mode: bool,
}

/// What a refund did.
#[derive(Debug, Clone)]
pub struct RefundOutcome {
    pub status: RefundStatus,
    pub sale_id: i64,
    pub commission_id: Option<i64>,
    /// Cents taken back from the commission by this refund.
    pub deduction_cents: i64,
    /// Cents of the sale refunded by this refund.
    pub refunded_cents: i64,
    pub currency: String,
    /// The clawback commission that takes the refund's share back when the sale's
    /// commission was already paid.
    pub clawback_id: Option<i64>,
}
