//! [`Tx`]: the reads and writes a use case makes inside one write transaction.
//!
//! The service layer writes each tracking flow once (a click, a lead, a sale, a refund, a
//! payment-processor event) against this trait; each backend implements it with its own
//! SQL on the connection of the group committer's open transaction. Every method is one
//! statement: the flow decides, the store reads and writes. [`Tx`] includes the
//! statements of refunds ([`RefundTx`]), of the payment processor ([`ProcessorTx`]), of
//! payouts, of partner accounts and of webhooks.

use async_trait::async_trait;

use super::audit::AuditTx;
use super::bounties::BountyTx;
use super::error::StoreResult;
use super::fraud::FraudTx;
use super::model::{
    ChargeSale, ClickEventRow, CouponTarget, Customer, LeadEventRow, NewCommission, NewCustomer,
    PartnerProgram, PartnerStanding, PaymentAccount, RecordedSale, RefundableSale, SaleEventRow,
    SaleProgram,
};
use super::partners::PartnerTx;
use super::payouts::PayoutTx;
use super::webhooks::WebhookTx;
use reftrack_domain::status::PartnerStatus;

/// One open write transaction. Counters are not written here: a flow adds them to the
/// batch's [`reftrack_domain::figures::Deltas`], which the committer applies once per batch.
#[async_trait]
pub trait Tx:
    RefundTx
    + ProcessorTx
    + PayoutTx
    + PartnerTx
    + WebhookTx
    + AuditTx
    + FraudTx
    + BountyTx
    + crate::rates::RateTx
    + Send
{
    /// The customer holding `click_id`, in any program.
    async fn customer_by_click_id(&mut self, click_id: &str) -> StoreResult<Option<Customer>>;
    /// The customer with `customer_key` in `program_id`.
    async fn customer_by_key(
        &mut self,
        program_id: i64,
        customer_key: &str,
    ) -> StoreResult<Option<Customer>>;
    /// Whether any program has a customer with `customer_key`.
    async fn customer_key_exists(&mut self, customer_key: &str) -> StoreResult<bool>;
    /// Creates a customer in status `click`; returns its id.
    async fn insert_customer(&mut self, c: &NewCustomer<'_>) -> StoreResult<i64>;
    /// Points a customer at the partner and link of its latest click.
    async fn repoint_customer(
        &mut self,
        customer_id: i64,
        partner_id: i64,
        link_id: i64,
        at: i64,
    ) -> StoreResult<()>;
    /// Moves a customer from `click` to `lead`, with its key and email (kept with its
    /// self-referral key); false when it was no longer in `click`.
    async fn mark_lead(
        &mut self,
        customer_id: i64,
        customer_key: Option<&str>,
        email: Option<&str>,
        at: i64,
    ) -> StoreResult<bool>;
    /// Moves a customer to `conversion`, setting its first purchase if unset.
    async fn mark_converted(&mut self, customer_id: i64, at: i64) -> StoreResult<()>;

    /// Stores a click event; returns its id.
    async fn insert_click_event(&mut self, e: &ClickEventRow<'_>) -> StoreResult<i64>;
    /// Stores a lead event; returns its id. `Conflict("customer_key")` when a real lead
    /// of the same key exists in the program.
    async fn insert_lead_event(&mut self, e: &LeadEventRow<'_>) -> StoreResult<i64>;
    /// Stores a sale event unless its transaction id is recorded already (in any
    /// program): its id, or `None` when the id is taken.
    async fn insert_sale_event_if_new(&mut self, e: &SaleEventRow<'_>) -> StoreResult<Option<i64>>;
    /// Stores a commission; returns its id.
    async fn insert_commission(&mut self, c: &NewCommission<'_>) -> StoreResult<i64>;
    /// The sale of a program recorded under `transaction_id`, test or real, as this
    /// transaction sees it.
    async fn recorded_sale(
        &mut self,
        program_id: i64,
        transaction_id: &str,
    ) -> StoreResult<Option<RecordedSale>>;

    /// The link and partner of the active coupon of `program_id` whose code key is
    /// `code_key`, else of the one with `promotion_code`, while its link is active and has
    /// a partner.
    async fn coupon_target(
        &mut self,
        program_id: i64,
        code_key: Option<&str>,
        promotion_code: Option<&str>,
    ) -> StoreResult<Option<CouponTarget>>;
    /// A partner's emails: its contact email and its sign-in email, those it has.
    async fn partner_emails(&mut self, partner_id: i64) -> StoreResult<Vec<String>>;

    /// A program's currency and fraud rules, as a lead's commission reads them.
    async fn sale_program(&mut self, program_id: i64) -> StoreResult<Option<SaleProgram>>;
    /// The allowed origins of a program; `None` when it does not exist.
    async fn program_origins(&mut self, program_id: i64) -> StoreResult<Option<Vec<String>>>;
    /// The partner and date of the first real sale of a subscription in a program.
    async fn first_subscription_sale(
        &mut self,
        program_id: i64,
        subscription_id: &str,
    ) -> StoreResult<Option<(Option<i64>, i64)>>;
    /// The partner-program record of `partner_id` in `program_id` as a sale or a lead
    /// reads it: its id, status, group's rewards and counters. `lock`: the record stays
    /// locked until the transaction ends (PostgreSQL), so that the counters a reward reads
    /// are those no other process is changing.
    async fn partner_standing(
        &mut self,
        partner_id: i64,
        program_id: i64,
        lock: bool,
    ) -> StoreResult<Option<PartnerStanding>>;
    /// The country of the customer's latest click (upper case), if it has one.
    async fn customer_country(&mut self, customer_id: i64) -> StoreResult<Option<String>>;
    /// Moves a partner of a program to another of its groups; `None` when the partner is
    /// not in the program, `NotFound("group")` when the group is not the program's.
    async fn set_partner_group(
        &mut self,
        program_id: i64,
        partner_id: i64,
        group_id: i64,
    ) -> StoreResult<Option<PartnerProgram>>;
    /// Whether a program and a partner exist.
    async fn program_and_partner_exist(
        &mut self,
        program_id: i64,
        partner_id: i64,
    ) -> StoreResult<(bool, bool)>;
    /// Moves a partner's standing in a program from `from` to `to`; `None` when it was no
    /// longer `from`.
    async fn set_partner_status(
        &mut self,
        program_id: i64,
        partner_id: i64,
        from: PartnerStatus,
        to: PartnerStatus,
    ) -> StoreResult<Option<PartnerProgram>>;
    /// Creates a partner-program record, in `group_id` or the program's default group.
    /// `Conflict("partner_program")` when it exists.
    async fn insert_partner_program(
        &mut self,
        program_id: i64,
        partner_id: i64,
        status: PartnerStatus,
        group_id: Option<i64>,
        at: i64,
    ) -> StoreResult<PartnerProgram>;
}

/// The statements of refunds: the sale refunded, the refund kept, the sale and its
/// commission reduced. [`Tx`] includes it.
#[async_trait]
pub trait RefundTx: Send {
    /// The sale of a program recorded under `transaction_id` (test or real as asked),
    /// with its sale commission as it stands at `now`.
    async fn refundable_sale(
        &mut self,
        program_id: i64,
        transaction_id: &str,
        is_test: bool,
        now: i64,
    ) -> StoreResult<Option<RefundableSale>>;
    /// The cents refunded under the integrator's `refund_id` of a sale, if it has one.
    async fn sale_refund(&mut self, sale_id: i64, refund_id: &str) -> StoreResult<Option<i64>>;
    /// Keeps the integrator's `refund_id` of a refund of a sale;
    /// `Conflict("refund_id")` when the sale has one of that id.
    async fn insert_sale_refund(
        &mut self,
        sale_id: i64,
        refund_id: &str,
        amount_cents: i64,
        at: i64,
    ) -> StoreResult<()>;
    /// Adds a refund to a sale; `fully` marks it `refunded`.
    async fn refund_sale(
        &mut self,
        sale_id: i64,
        refund_cents: i64,
        fully: bool,
        reason: Option<&str>,
    ) -> StoreResult<()>;
    /// Takes `deduction_cents` back from a commission; `reverses` marks it `reversed`.
    async fn reverse_commission(
        &mut self,
        commission_id: i64,
        deduction_cents: i64,
        reverses: bool,
        at: i64,
    ) -> StoreResult<()>;
}

/// The statements of payment-processor events and accounts. [`Tx`] includes it.
#[async_trait]
pub trait ProcessorTx: Send {
    /// The program a transaction id is recorded in, if any.
    async fn transaction_program(&mut self, transaction_id: &str) -> StoreResult<Option<i64>>;
    /// Claims a payment-processor event id for a program; false when it was claimed before.
    async fn claim_processor_event(
        &mut self,
        program_id: i64,
        event_id: &str,
        kind: &str,
        at: i64,
    ) -> StoreResult<bool>;
    /// Records what processing a claimed event did.
    async fn set_processor_event_outcome(
        &mut self,
        program_id: i64,
        event_id: &str,
        outcome: &str,
    ) -> StoreResult<()>;
    /// Remembers the payment ids of a sale that a later refund event names.
    async fn attach_payment_ids(
        &mut self,
        program_id: i64,
        transaction_id: &str,
        payment_intent: Option<&str>,
        charge: Option<&str>,
    ) -> StoreResult<()>;
    /// The earliest real sale of a program named by a charge, payment intent or invoice.
    async fn sale_for_charge(
        &mut self,
        program_id: i64,
        charge: Option<&str>,
        payment_intent: Option<&str>,
        invoice: Option<&str>,
    ) -> StoreResult<Option<ChargeSale>>;
    /// Sets a program's payment-account fields; the connection date is kept once set.
    async fn set_payment_account(
        &mut self,
        program_id: i64,
        account: &PaymentAccount,
        at: i64,
    ) -> StoreResult<()>;
}
