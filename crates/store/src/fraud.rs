//! What the fraud rules read and keep: the facts of a sale's flow inside the committer's
//! transaction ([`FraudTx`]), and the review queue, the partners' sign-in IPs and the
//! purge of old IPs on the pools ([`FraudStore`]).

use async_trait::async_trait;
use serde::Serialize;

use crate::error::StoreResult;
use reftrack_domain::status::CommissionFlag;

/// The fraud rules' statements inside the committer's transaction. [`crate::tx::Tx`]
/// includes it.
#[async_trait]
pub trait FraudTx: Send {
    /// The IP (if kept) and time of the customer's latest click; `None` without a click.
    async fn customer_click(
        &mut self,
        customer_id: i64,
    ) -> StoreResult<Option<(Option<String>, i64)>>;
    /// Whether another customer than `customer_id` of the partner converted from `ip` at
    /// `since` or later (an index read).
    async fn ip_converted_before(
        &mut self,
        partner_id: i64,
        ip: &str,
        customer_id: i64,
        since: i64,
    ) -> StoreResult<bool>;
    /// Whether the partner signed in to the portal from `ip` at `since` or later.
    async fn partner_signed_in_from(
        &mut self,
        partner_id: i64,
        ip: &str,
        since: i64,
    ) -> StoreResult<bool>;
    /// Keeps, under the partner, the IP of the converting customer's latest click (when it
    /// has one). Called in the transaction of the customer's first purchase.
    async fn record_conversion_ip(
        &mut self,
        partner_id: i64,
        customer_id: i64,
        at: i64,
    ) -> StoreResult<()>;
}

/// The review queue, the partners' sign-in IPs and the purge. [`crate::Store`] includes it.
#[async_trait]
pub trait FraudStore: Send + Sync {
    /// The commissions of the program held for review (flagged, pending, not approved by
    /// an owner), oldest first, at most `limit`, each with its sale and its customer's
    /// latest click.
    async fn review_queue(&self, program_id: i64, limit: i64) -> StoreResult<Vec<ReviewItem>>;
    /// How many commissions of the program are held for review.
    async fn review_count(&self, program_id: i64) -> StoreResult<i64>;
    /// Keeps that the partner signed in to the portal from `ip` at `at`.
    async fn record_partner_sign_in_ip(
        &self,
        partner_id: i64,
        ip: &str,
        at: i64,
    ) -> StoreResult<()>;
    /// Forgets up to `limit` click IPs, conversion IPs and partner sign-in IPs (each)
    /// recorded before `before`; how many records it changed. A caller runs it again
    /// until it changes fewer than it may: each run holds the writer only briefly.
    async fn purge_ips(&self, before: i64, limit: i64) -> StoreResult<u64>;
    /// Marks whether the stored lead email of up to `limit` customers that have one but
    /// no mark yet (those stored before the rule existed) is at a disposable-mail domain,
    /// as [`fraud::is_disposable`](reftrack_domain::fraud::is_disposable) says; how many
    /// it marked. Until a customer is marked, the set-based sale statements leave its
    /// sales to their own flow.
    async fn mark_disposable_emails(&self, limit: i64) -> StoreResult<u64>;
}

/// A commission held for review, as the review page shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewItem {
    pub commission_id: i64,
    pub partner_id: i64,
    pub partner_name: String,
    pub amount_cents: i64,
    pub currency: String,
    pub flags: Vec<CommissionFlag>,
    pub created_at: i64,
    /// What it is for, in words.
    pub description: Option<String>,
    /// The sale's transaction id, amount and currency; none for a lead commission.
    pub transaction_id: Option<String>,
    pub sale_amount_cents: Option<i64>,
    pub sale_currency: Option<String>,
    /// The email the customer's lead gave.
    pub customer_email: Option<String>,
    /// The customer's latest click, if it had one.
    pub click: Option<ReviewClick>,
}

/// The click of a commission held for review.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewClick {
    pub ip: Option<String>,
    pub country: Option<String>,
    pub device_type: Option<String>,
    pub device_os: Option<String>,
    pub browser: Option<String>,
    pub referrer: Option<String>,
    pub at: i64,
}
