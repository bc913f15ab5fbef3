//! The request bodies of the tracking API, with the error texts of their fields.

use serde::Deserialize;
use utoipa::ToSchema;

use crate::extract::TrackRequest;
use crate::fields::{
    nested, Amount, Currency, Flag, Id, NotARefundAmount, Object, Positive, Required, SaleType,
    Text,
};

/// `additional_data` of a tracking request.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct AdditionalData {
    /// Store a test event (`is_test: true`) that touches no real attribution or figure.
    #[schema(value_type = Option<bool>)]
    #[serde(default)]
    pub test_mode: Flag,
    /// Program of a test event, or of a browser-mode lead sent with only `customer_key`.
    #[schema(value_type = Option<i64>, minimum = 1)]
    #[serde(default)]
    pub program_id: Positive,
    /// Name of the lead event (lead only).
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub event_name: Text,
}

impl AdditionalData {
    /// Whether the call asks for test mode.
    pub(super) fn test_mode(&self) -> bool {
        self.test_mode.0.unwrap_or(false)
    }
}

/// Body of `POST /track/click`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct ClickRequest {
    /// Full landing URL including the `aff` query parameter.
    #[schema(value_type = String, required = true, example = "https://shop.example.com/?aff=alice", min_length = 1)]
    #[serde(default)]
    pub affiliate_url: Required,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub page_url: Text,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub page_title: Text,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub referrer_url: Text,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub session_id: Text,
    /// Falls back to the `User-Agent` header.
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub user_agent: Text,
    /// `<width>x<height>`.
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub screen_resolution: Text,
    /// `<width>x<height>`.
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub viewport_size: Text,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub language: Text,
    /// IANA time zone name.
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub timezone: Text,
    /// A click id issued before: the same customer is reused (last touch).
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub existing_click_id: Id,
    #[serde(default, deserialize_with = "nested")]
    pub additional_data: Option<AdditionalData>,
}

impl TrackRequest for ClickRequest {}

/// Body of `POST /track/lead`. Outside test mode, `click_id` or `customer_key` is required.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct LeadRequest {
    /// Value of the `tracker_click_id` cookie.
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub click_id: Id,
    /// Your own stable id of the customer; use the same one at sale time.
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub customer_key: Id,
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub email: Id,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub session_id: Text,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub page_url: Text,
    #[serde(default, deserialize_with = "nested")]
    pub additional_data: Option<AdditionalData>,
}

impl TrackRequest for LeadRequest {}

/// Body of `POST /track/sale`. `customer_key` or `click_id` must resolve a customer, or
/// `coupon_code` name an active coupon.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct SaleRequest {
    /// Idempotency key, globally unique (test and real sales share it). Required, except
    /// in test mode, where one is made when it is left out.
    #[schema(value_type = Option<String>, example = "pi_1001", min_length = 1, max_length = 255)]
    #[serde(default)]
    pub transaction_id: Id,
    /// Positive integer in the smallest currency unit, at most 10^12.
    #[schema(value_type = i64, required = true, example = 4999, minimum = 1, maximum = 1_000_000_000_000_i64)]
    #[serde(default)]
    pub amount_cents: Amount,
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub customer_key: Id,
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub click_id: Id,
    /// 3-letter code; the program's currency when omitted.
    #[schema(value_type = Option<String>, pattern = "^[A-Za-z]{3}$")]
    #[serde(default)]
    pub currency: Currency,
    /// `payment` (default) or `subscription`.
    #[schema(value_type = Option<String>, pattern = "^(payment|subscription)$")]
    #[serde(default)]
    pub sale_type: SaleType,
    #[schema(value_type = Option<bool>)]
    #[serde(default)]
    pub is_recurring: Flag,
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub subscription_id: Id,
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub product_id: Id,
    /// Stored with the sale.
    #[schema(value_type = Option<Object>)]
    #[serde(default)]
    pub metadata: Object,
    /// A coupon code the customer used (any case). When neither `customer_key` nor
    /// `click_id` finds a customer, the sale is attributed to the partner of the link
    /// holding this code; a click attribution wins.
    #[schema(value_type = Option<String>, max_length = 255, example = "PODCAST20")]
    #[serde(default)]
    pub coupon_code: Id,
    /// The customer's email: a sale whose customer has the partner's email (case and
    /// `+tag` ignored) is flagged `self_referral` and waits for an owner's approval.
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub customer_email: Id,
    #[serde(default, deserialize_with = "nested")]
    pub additional_data: Option<AdditionalData>,
}

/// The text of a missing or malformed `transaction_id` of a sale.
pub(super) const SALE_TRANSACTION_ID: &str = "transaction_id is required and must be a string";

impl TrackRequest for SaleRequest {
    fn error_text(field: &str, text: String) -> String {
        if field == "transaction_id" && text.ends_with("must be a string") {
            SALE_TRANSACTION_ID.into()
        } else {
            text
        }
    }
}

/// Body of `POST /track/refund`.
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct RefundRequest {
    /// The `transaction_id` of the sale.
    #[schema(value_type = String, required = true, min_length = 1, max_length = 255)]
    #[serde(default)]
    pub transaction_id: Id,
    /// Partial refund; omitted (or equal to the sale amount): everything left.
    #[schema(value_type = Option<i64>, minimum = 1)]
    #[serde(default)]
    pub refund_amount_cents: Positive,
    #[schema(value_type = Option<String>)]
    #[serde(default)]
    pub refund_reason: Text,
    /// Your id of this refund (a payment processor's refund id, say): a refund sent
    /// again under the same id changes nothing and answers `skipped`, so a retried
    /// partial refund is applied once. Another amount under a used id: 409.
    #[schema(value_type = Option<String>, max_length = 255)]
    #[serde(default)]
    pub refund_id: Id,
    /// Not a refund field (the sale's): refused, since ignoring it would refund
    /// everything left.
    #[schema(ignore)]
    #[serde(default)]
    pub amount_cents: NotARefundAmount,
    /// Not a refund field: refused, as `amount_cents`.
    #[schema(ignore)]
    #[serde(default)]
    pub amount: NotARefundAmount,
    #[serde(default, deserialize_with = "nested")]
    pub additional_data: Option<AdditionalData>,
}

/// The text of a missing or malformed `transaction_id` of a refund.
pub(super) const REFUND_TRANSACTION_ID: &str = "transaction_id is required";

impl TrackRequest for RefundRequest {
    fn error_text(field: &str, text: String) -> String {
        if field == "transaction_id" && text.ends_with("must be a string") {
            REFUND_TRANSACTION_ID.into()
        } else {
            text
        }
    }
}
