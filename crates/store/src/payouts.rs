//! The storage interface of paying partners: [`PayoutReads`] (lists and balances, on the
//! read pool) and [`PayoutTx`] (the statements of commission and payout changes, in the
//! group committer's transaction). [`super::Store`] and [`super::tx::Tx`] include them.
//!
//! Every read applies the hold period with `now`: a `pending` commission whose hold has
//! passed reads as `approved`, in lists, balances and payouts alike.

use async_trait::async_trait;

use super::error::StoreResult;
use super::payout_model::{
    Balance, CommissionFilter, CommissionLock, CommissionRow, Page, Payout, PayoutCandidate,
    PayoutRules,
};
use reftrack_domain::status::PayoutStatus;

/// Reads of commissions, balances and payouts.
#[async_trait]
pub trait PayoutReads: Send + Sync {
    /// One commission.
    async fn commission(&self, id: i64, now: i64) -> StoreResult<Option<CommissionRow>>;
    /// One page of a program's commissions matching `filter`, newest first.
    async fn commissions(
        &self,
        program_id: i64,
        filter: &CommissionFilter,
        page: Page,
        now: i64,
    ) -> StoreResult<Vec<CommissionRow>>;
    /// One page of a program's balances, one per partner with commissions, by partner id
    /// from the highest.
    async fn balances(&self, program_id: i64, page: Page, now: i64) -> StoreResult<Vec<Balance>>;
    /// Where the partners `partner_ids` of a program stand for a payout under `rules`
    /// at `now`: one row per partner of the program among them.
    async fn payout_candidates(
        &self,
        program_id: i64,
        partner_ids: &[i64],
        rules: &PayoutRules,
        now: i64,
    ) -> StoreResult<Vec<PayoutCandidate>>;
    /// One page of a program's payouts (without items), newest first.
    async fn payouts(&self, program_id: i64, page: Page) -> StoreResult<Vec<Payout>>;
    /// One payout with its items.
    async fn payout(&self, id: i64) -> StoreResult<Option<Payout>>;
    /// The programs with their hold periods, for the job that records approvals.
    async fn program_holds(&self) -> StoreResult<Vec<(i64, i64)>>;
}

/// The statements of commission and payout changes. Each change is guarded by the state
/// it was decided on and answers whether it applied.
#[async_trait]
pub trait PayoutTx: Send {
    /// A commission's state at `now`, to decide a change on (the change's statement is
    /// guarded by that state).
    async fn commission_lock(&mut self, id: i64, now: i64) -> StoreResult<Option<CommissionLock>>;
    /// `pending` → `approved` at `at`.
    async fn approve_commission(&mut self, id: i64, at: i64) -> StoreResult<bool>;
    /// `pending` or unheld `approved` → `rejected`, with the owner's reason.
    async fn reject_commission(
        &mut self,
        id: i64,
        reason: Option<&str>,
        at: i64,
    ) -> StoreResult<bool>;
    /// A clawback of `amount_cents` (positive: what is taken back) on commission `id`;
    /// returns the clawback's id.
    async fn insert_clawback(&mut self, id: i64, amount_cents: i64, at: i64) -> StoreResult<i64>;
    /// Records as `approved` the pending commissions of `program_id` whose hold of
    /// `hold_ms` has passed at `now`, with `approved_at` at the end of their hold, at most
    /// `most` of them (the oldest first; `None`: all); returns their ids.
    async fn approve_due(
        &mut self,
        program_id: i64,
        hold_ms: i64,
        now: i64,
        most: Option<i64>,
    ) -> StoreResult<Vec<i64>>;

    /// Locks a program against other payouts being created for it until this transaction
    /// ends, and reads what its payouts are made by; `None` when it does not exist.
    async fn lock_payout_rules(&mut self, program_id: i64) -> StoreResult<Option<PayoutRules>>;
    /// A new pending payout with no items; returns its id.
    async fn insert_payout(&mut self, program_id: i64, currency: &str, at: i64)
        -> StoreResult<i64>;
    /// Makes `payout_id` hold every due, unheld commission (clawbacks included) of the
    /// program's approved partners with a payout email whose such commissions add up to
    /// at least the minimum; then lets go of any partner whose held commissions, as
    /// taken, add up to less (a change that raced the claim). Returns how many it holds.
    async fn claim_commissions(
        &mut self,
        program_id: i64,
        payout_id: i64,
        rules: &PayoutRules,
        now: i64,
    ) -> StoreResult<u64>;
    /// Writes the payout's items from the commissions it holds, and its total.
    async fn write_payout_items(&mut self, payout_id: i64) -> StoreResult<()>;
    /// A payout with its items, as this transaction sees it.
    async fn payout_in_tx(&mut self, id: i64) -> StoreResult<Option<Payout>>;
    /// Moves a payout from `pending` to `to` (`paid` with its reference, or `cancelled`),
    /// with its commissions: paid, or released back to approved. False when the payout
    /// was no longer pending.
    async fn settle_payout(
        &mut self,
        id: i64,
        to: PayoutStatus,
        reference: Option<&str>,
        at: i64,
    ) -> StoreResult<bool>;
}
