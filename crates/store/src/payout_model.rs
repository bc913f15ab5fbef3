//! Records of paying partners: commissions as the management API lists them, balances,
//! payouts and their items, and the pages they are read in.

use serde::Serialize;

use super::model::{iso_ms, iso_ms_opt};
use reftrack_domain::lifecycle::CommissionState;
use reftrack_domain::status::{
    CommissionFlag, CommissionKind, CommissionStatus, PartnerStatus, PayoutMethod, PayoutStatus,
};

/// One page of a list: at most `limit` rows, newest first, after the row `before` (the
/// last id of the previous page).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub limit: i64,
    pub before: Option<i64>,
}

/// Which commissions a list holds. Times are epoch milliseconds, `to_ms` exclusive.
#[derive(Debug, Clone, Default)]
pub struct CommissionFilter {
    pub status: Option<CommissionStatus>,
    pub partner_id: Option<i64>,
    pub from_ms: Option<i64>,
    pub to_ms: Option<i64>,
    /// Only commissions held for review: flagged by a fraud rule, still pending, not yet
    /// approved by an owner.
    pub flagged: bool,
}

/// A commission as the management API lists it. Its status has the hold period applied:
/// a `pending` commission whose hold has passed reads as `approved` from then on.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CommissionRow {
    pub id: i64,
    pub partner_id: i64,
    /// The sale that earned it; null for lead and bonus commissions.
    pub sale_id: Option<i64>,
    /// The sale's transaction id; null without a sale.
    pub transaction_id: Option<String>,
    pub kind: CommissionKind,
    /// The partner group whose reward made it; null for clawbacks and for commissions
    /// recorded before groups existed.
    pub group_id: Option<i64>,
    /// The rule that made it, in words (`40% of $120.00 (product is prod_enterprise)`);
    /// null for clawbacks and for commissions recorded before groups existed.
    pub description: Option<String>,
    /// What it pays now, in cents: the original amount less what refunds took back
    /// (negative for a clawback).
    pub amount_cents: i64,
    /// What refunds or a rejection took back of the original amount, in cents: pages
    /// show it beside the net; the API's rows carry the net only.
    #[serde(skip)]
    pub taken_back_cents: i64,
    pub currency: String,
    pub status: CommissionStatus,
    /// The commission a clawback takes back from; null on sale commissions.
    pub original_commission_id: Option<i64>,
    /// Why an owner rejected it.
    pub reject_reason: Option<String>,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    #[serde(serialize_with = "iso_ms_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub approved_at: Option<i64>,
    #[serde(serialize_with = "iso_ms_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub paid_at: Option<i64>,
    /// The payout holding it (pending) or that paid it.
    pub payout_id: Option<i64>,
    /// The fraud rules that held for it (`self_referral`, `disposable_email`,
    /// `duplicate_ip`, `partner_ip`, `fast_conversion`); with the rule's action `flag` it
    /// stays pending until an owner approves or rejects it.
    pub flags: Vec<CommissionFlag>,
    /// Its sale is in another currency and waits for an exchange rate: its amount is 0
    /// until the rate arrives, and it cannot be approved or paid before.
    pub awaiting_rate: bool,
}

/// A partner's money in a program, in cents.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct Balance {
    pub partner_id: i64,
    /// Still in its hold period.
    pub pending_cents: i64,
    /// Due and not yet paid (held by a pending payout included), net of clawbacks.
    pub approved_cents: i64,
    /// Paid by payouts marked paid.
    pub paid_cents: i64,
}

/// Where a partner stands for its program's next payout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayoutCandidate {
    pub partner_id: i64,
    /// Its standing in the program.
    pub status: PartnerStatus,
    pub has_payout_email: bool,
    /// Due and not held by a pending payout, net of what refunds took back: what a new
    /// payout would pay it.
    pub due_cents: i64,
}

/// What one partner is paid by a payout, as it stood when the payout was created.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PayoutItem {
    pub partner_id: i64,
    pub partner_name: String,
    pub payout_method: Option<PayoutMethod>,
    pub payout_email: String,
    pub amount_cents: i64,
    pub commission_count: i64,
}

/// A payout: the approved balances of a program's partners, paid together.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Payout {
    pub id: i64,
    pub program_id: i64,
    pub status: PayoutStatus,
    pub currency: String,
    pub total_cents: i64,
    /// The owner's reference of the transfer, given when it is marked paid.
    pub reference: Option<String>,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    #[serde(serialize_with = "iso_ms_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub paid_at: Option<i64>,
    #[serde(serialize_with = "iso_ms_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub cancelled_at: Option<i64>,
    /// One per partner paid; left out of lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<PayoutItem>>,
}

/// A commission as a change to it is decided in a write transaction.
#[derive(Debug, Clone)]
pub struct CommissionLock {
    pub program_id: i64,
    pub partner_id: i64,
    pub state: CommissionState,
    /// What it pays now, in cents.
    pub net_cents: i64,
    pub currency: String,
    /// The date of its sale (of its creation, without a sale), whose day's figures count
    /// it.
    pub sale_date: i64,
}

/// What a program's payout is made by (read under the program's lock when one is made).
#[derive(Debug, Clone)]
pub struct PayoutRules {
    pub hold_ms: i64,
    pub min_payout_cents: i64,
    pub currency: String,
}
