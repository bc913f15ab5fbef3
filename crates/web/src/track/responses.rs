//! The answers of the tracking API: what a tracked click, lead, sale or refund returns,
//! and the body of a test-mode call.

use serde::Serialize;
use utoipa::ToSchema;

/// The test-mode body of click, lead and sale.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TestModeResponse {
    /// Always `true`.
    pub success: bool,
    pub message: String,
    pub data: TestModeData,
}

/// What a test-mode call stored.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TestModeData {
    /// Id of the stored test event.
    #[serde(rename = "eventId")]
    pub event_id: i64,
    #[serde(rename = "programId")]
    pub program_id: i64,
    /// Always `true`.
    pub test_mode: bool,
}

/// A tracked click.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClickTracked {
    /// Always `true`.
    pub success: bool,
    /// Store it in the `tracker_click_id` cookie and send it with the lead.
    #[schema(example = "cust_17953290031505782117260909434975_1795329003150")]
    pub click_id: String,
    pub partner_code: String,
    pub cookie_window_days: i64,
}

/// A click on an inactive link: nothing is recorded.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClickRefused {
    /// Always `false`.
    pub success: bool,
    pub message: String,
}

/// The answers of `POST /track/click`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ClickResponse {
    Tracked(ClickTracked),
    Inactive(ClickRefused),
    Test(TestModeResponse),
}

/// A plain success with a message (lead).
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Tracked {
    /// Always `true`.
    pub success: bool,
    pub message: String,
}

/// The answers of `POST /track/lead`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum LeadResponse {
    Tracked(Tracked),
    Test(TestModeResponse),
}

/// A recorded sale.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SaleTracked {
    /// Always `true`.
    pub success: bool,
    pub sale_id: i64,
    /// `null` when the sale earns no commission: its partner is not approved in the
    /// program, or a renewal is past the recurring limit (`message` says which).
    pub commission_id: Option<i64>,
    pub message: String,
}

/// The answers of `POST /track/sale`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum SaleResponse {
    Tracked(SaleTracked),
    Test(TestModeResponse),
}

/// What a refund did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundResponse {
    /// Always `true`.
    pub success: bool,
    /// `reversed` (fully refunded), `refunded` (partial), `skipped` (nothing left),
    /// `no_commission` (the sale had none).
    #[schema(example = "refunded")]
    pub status: String,
    pub sale_id: i64,
    pub commission_id: Option<i64>,
    /// Commission taken back by this refund, in major units with two decimals.
    pub deduction_amount: f64,
    /// Present when the sale's commission was already paid: that commission stays
    /// `paid`, and this new clawback commission (a negative amount) takes the refund's
    /// share back from the partner's next payout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clawback_commission_id: Option<i64>,
    /// Present and `true` for test-mode refunds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_mode: Option<bool>,
}
