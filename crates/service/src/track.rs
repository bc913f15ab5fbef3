//! The tracking use cases: a click, a lead, a sale and a refund, each one flow whatever
//! its source (the tracking API, its legacy alias, a Stripe event, the CLI).
//!
//! A flow runs inside the group committer's transaction, against [`Tx`]; it decides, the
//! store reads and writes. New clicks and plain sales may instead go in set-based with
//! the rest of their batch ([`Write::Click`], [`Write::Sale`]); whatever the batch
//! statement does not take runs as the same flow, so the answer is always the flow's.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::oneshot;

use super::{answer_or_alone, App, Error, Result};
use reftrack_domain::attribution::{self, AffError, SaleSource};
use reftrack_domain::click_id;
use reftrack_domain::commission;
use reftrack_domain::figures::{Deltas, RefundFigures, SaleFigures};
use reftrack_domain::lifecycle::{self, RefundEffect};
use reftrack_domain::refund::{self, RefundStatus};
use reftrack_domain::self_referral;
use reftrack_domain::status::{CommissionFlag, CustomerStatus, LinkStatus};
use reftrack_domain::webhooks::EventType;
use reftrack_store::tx::Tx;
use reftrack_store::webhooks::{sale_recorded, Event, Subject};
use reftrack_store::write::{self, ClickWrite, Job, OnCommit, SaleWrite, Write};
use reftrack_store::{
    origin_allowed, ClickDetails, ClickEventRow, CouponTarget, Customer, LeadEventRow, NewClick,
    NewCommission, NewCustomer, NewSale, Program, SaleEventRow, SaleOutcome, SaleProgram, Store,
};

/// The answer to a click for an origin the program does not list.
fn forbidden_origin() -> Error {
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

impl App {
    /// The program of an API token, if any (cached briefly): its current token, or the
    /// one a rotation replaced until that stops working.
    pub async fn program_by_token(&self, token: &str) -> Result<Option<Program>> {
        let hash = super::secrets::hash_token(token);
        let found = self
            .programs
            .get_or_read(hash.as_str(), || self.store.program_by_token(&hash))
            .await?;
        let now = self.now_ms();
        Ok(found.filter(|p| match &p.previous_token {
            Some((previous, until)) if *previous == hash => *until > now,
            _ => true,
        }))
    }

    /// A referral link by its code (cached briefly).
    pub(super) async fn link_target(
        &self,
        code: &str,
    ) -> Result<Option<reftrack_store::LinkTarget>> {
        Ok(self
            .links
            .get_or_read(code, || self.store.link_target(code))
            .await?)
    }

    /// Whether some program admits `origin` (CORS preflights name no program).
    pub async fn any_program_allows_origin(&self, origin: &str) -> Result<bool> {
        Ok(self.store.any_program_allows_origin(origin).await?)
    }

    /// A program that a request names explicitly; "Program not found" is a 400 there.
    async fn named_program(&self, id: i64) -> Result<Program> {
        match self.store.program(id).await {
            Err(reftrack_store::StoreError::NotFound(_)) => {
                Err(Error::invalid("Program not found"))
            }
            other => Ok(other?),
        }
    }

    /// Records a click on a referral link: reuses the customer of `existing_click_id` in
    /// the same program (last touch) or creates one, stores the event and counts it.
    pub async fn track_click(&self, c: ClickCommand) -> Result<ClickOutcome> {
        let _call = self.load.tracking_call();
        let at = self.now_ms();
        if c.test_mode {
            if let Err(e @ AffError::InvalidUrl) = &c.aff {
                return Err(Error::invalid(e.message()));
            }
            let target = match &c.aff {
                Ok(code) => self.link_target(code).await?,
                Err(_) => None,
            };
            let program_id = c
                .program_id
                .or(target.as_ref().map(|t| t.program_id))
                .ok_or_else(|| {
                    Error::invalid(
                        "Test mode needs additional_data.program_id or a known referral link",
                    )
                })?;
            let program = self.named_program(program_id).await?;
            if !program.origin_allowed(c.origin.as_deref()) {
                return Err(forbidden_origin());
            }
            let target = target.filter(|t| t.program_id == program_id);
            let details = c.details;
            let click_id = c.existing_click_id;
            let event_id = self
                .write(move |tx, _| {
                    async move {
                        let row = ClickEventRow {
                            program_id,
                            customer_id: None,
                            link_id: target.as_ref().map(|t| t.link_id),
                            partner_id: target.as_ref().and_then(|t| t.partner_id),
                            click_id: click_id.as_deref(),
                            details: &details,
                            is_test: true,
                            at,
                        };
                        Ok(tx.insert_click_event(&row).await?)
                    }
                    .boxed()
                })
                .await
                .map_err(|e| e.public_text("Click tracking failed"))?;
            return Ok(ClickOutcome::Test {
                event_id,
                program_id,
            });
        }

        let aff = c.aff.map_err(|e| Error::invalid(e.message()))?;
        let target = self
            .link_target(&aff)
            .await?
            .ok_or_else(|| Error::invalid("Referral link not found"))?;
        let (Some(partner_id), Some(partner_code)) = (target.partner_id, target.partner_code)
        else {
            return Err(Error::invalid("Invalid referral link configuration"));
        };
        if !origin_allowed(&target.allowed_origins, c.origin.as_deref()) {
            return Err(forbidden_origin());
        }
        if target.link_status == LinkStatus::Inactive {
            return Ok(ClickOutcome::Inactive);
        }
        let click = NewClick {
            program_id: target.program_id,
            link_id: target.link_id,
            partner_id,
            click_id: click_id::generate(at),
            details: c.details,
            at,
        };
        let wait = if c.redirect {
            Some(self.click_waits.redirect)
        } else {
            self.click_waits.api
        };
        let (click_id, committed) = recorded_within(
            &self.detached_clicks,
            wait,
            click.click_id.clone(),
            record_click(self.store.clone(), click, c.existing_click_id),
        )
        .await
        .map_err(|e| e.public_text("Click tracking failed"))?;
        Ok(ClickOutcome::Tracked {
            click_id,
            partner_code,
            cookie_window_days: target.cookie_window_days,
            committed,
        })
    }

    /// Records a signup. Server mode (`server_program`) or browser mode (the click id
    /// proves attribution; the origin must be allowed). Moves a `click` customer to
    /// `lead`; with only a customer key and no known customer, stores an unattributed
    /// lead.
    pub async fn track_lead(&self, l: LeadCommand) -> Result<()> {
        let _call = self.load.tracking_call();
        if l.click_id.is_none() && l.customer_key.is_none() {
            return Err(Error::invalid("click_id or customer_key is required"));
        }
        let at = self.now_ms();
        self.write(move |tx, deltas| lead_flow(tx, deltas, l, at).boxed())
            .await
            .map_err(|e| e.public_text("Lead tracking failed"))
    }

    /// Records a test lead: a flagged event, no customer change. `by_key` when the
    /// program came from a valid API key (no origin check then).
    pub async fn track_test_lead(&self, l: LeadCommand, by_key: bool) -> Result<(i64, i64)> {
        let program_id = l
            .program_id
            .or(l.server_program.as_ref().map(|p| p.id))
            .ok_or_else(|| {
                Error::invalid("Test mode needs additional_data.program_id or an API key")
            })?;
        let program = self.named_program(program_id).await?;
        if !by_key && !program.origin_allowed(l.origin.as_deref()) {
            return Err(forbidden_origin());
        }
        let at = self.now_ms();
        let id = self
            .write(move |tx, _| {
                async move {
                    let row = LeadEventRow {
                        program_id,
                        customer_id: None,
                        click_id: l.click_id.as_deref(),
                        customer_key: l.customer_key.as_deref(),
                        email: l.email.as_deref(),
                        session_id: l.session_id.as_deref(),
                        page_url: l.page_url.as_deref(),
                        event_name: l.event_name.as_deref(),
                        is_test: true,
                        at,
                    };
                    Ok(tx.insert_lead_event(&row).await?)
                }
                .boxed()
            })
            .await
            .map_err(|e| e.public_text("Lead tracking failed"))?;
        Ok((id, program_id))
    }

    /// Records a sale of `program` with its commission, the customer's conversion and
    /// the figures, in one transaction. A transaction id is accepted once, across all
    /// programs.
    pub async fn track_sale(&self, program: &Program, s: SaleCommand) -> Result<SaleOutcome> {
        let _call = self.load.tracking_call();
        if !s.test_mode
            && s.customer_key.is_none()
            && s.click_id.is_none()
            && s.coupon_code.is_none()
        {
            return Err(Error::invalid(
                "Customer not found. Provide customer_key or click_id.",
            ));
        }
        let sale = self.new_sale(program, s);
        let again = sale.clone();
        answer_or_alone(
            &*self.store,
            |answer| {
                if sale.is_plain() {
                    Write::Sale(Box::new(PlainSaleWrite { sale, answer }))
                } else {
                    Write::Job(sale_job(answer, sale))
                }
            },
            |answer| sale_job(answer, again),
        )
        .await
        .map_err(|e| e.public_text("Sale tracking failed"))
    }

    /// A sale as the store records it, with the commission its program's rule gives.
    pub(super) fn new_sale(&self, program: &Program, s: SaleCommand) -> NewSale {
        let at = self.now_ms();
        NewSale {
            program: SaleProgram {
                id: program.id,
                commission: program.commission,
                recurring_commission_months: program.recurring_commission_months,
            },
            generated_id: s.transaction_id.is_none(),
            transaction_id: s.transaction_id.unwrap_or_else(|| test_transaction_id(at)),
            commission_cents: program.commission.amount_for(s.amount_cents),
            amount_cents: s.amount_cents,
            currency: s.currency.unwrap_or_else(|| program.currency.clone()),
            customer_key: s.customer_key,
            click_id: s.click_id,
            sale_type: s.sale_type,
            is_recurring: s.is_recurring,
            subscription_id: s.subscription_id,
            product_id: s.product_id,
            metadata: s.metadata,
            is_test: s.test_mode,
            at,
            coupon_key: s.coupon_code.as_deref().map(attribution::coupon_key),
            promotion_code: s.promotion_code,
            customer_email: s.customer_email,
        }
    }

    /// Refunds a sale of `program`, fully or partly, reversing its commission in
    /// proportion; a repeated full refund is harmless (`skipped`).
    pub async fn track_refund(&self, program: &Program, r: RefundCommand) -> Result<RefundOutcome> {
        let _call = self.load.tracking_call();
        let program_id = program.id;
        let at = self.now_ms();
        self.write(move |tx, deltas| refund_flow(tx, deltas, program_id, r, at).boxed())
            .await
            .map_err(|e| e.public_text("Refund tracking failed"))
    }
}

/// The transaction id generated for a test sale sent without one: `test_txn_<epoch-ms>`.
fn test_transaction_id(ms: i64) -> String {
    format!("test_txn_{ms}")
}

/// How many milliseconds on a generated test transaction id may move before the sale is
/// refused as a duplicate: far more test sales than arrive in one millisecond.
const GENERATED_ID_TRIES: i64 = 1_000;

/// Stores a test sale event. A generated transaction id that is taken (another test sale
/// of the same millisecond, in this process or another one sharing the database) moves on
/// to the next millisecond's, so that generated ids never collide.
async fn insert_test_sale_event(tx: &mut dyn Tx, s: &mut NewSale) -> Result<i64> {
    if !s.generated_id {
        let row = SaleEventRow::test(s);
        return insert_sale_event(tx, &row).await;
    }
    for ms in s.at..s.at + GENERATED_ID_TRIES {
        s.transaction_id = test_transaction_id(ms);
        if let Some(id) = tx.insert_sale_event_if_new(&SaleEventRow::test(s)).await? {
            return Ok(id);
        }
    }
    Err(Error::DuplicateSale(None))
}

/// A click: reuses the customer of `existing` when it is in the click's program, else
/// creates one with the click's id; stores the event and counts it.
async fn click_flow(
    tx: &mut dyn Tx,
    deltas: &mut Deltas,
    c: NewClick,
    existing: Option<String>,
) -> Result<String> {
    let mut reused = None;
    if let Some(existing) = existing {
        if let Some(found) = tx.customer_by_click_id(&existing).await? {
            if attribution::reuse_customer(Some(found.program_id), c.program_id) {
                tx.repoint_customer(found.id, c.partner_id, c.link_id, c.at)
                    .await?;
                reused = Some((found.id, existing));
            }
        }
    }
    let (customer_id, click_id) = match reused {
        Some(found) => found,
        None => {
            let customer = NewCustomer {
                program_id: c.program_id,
                click_id: &c.click_id,
                customer_key: None,
                partner_id: c.partner_id,
                link_id: c.link_id,
                at: c.at,
            };
            (tx.insert_customer(&customer).await?, c.click_id.clone())
        }
    };
    let row = ClickEventRow {
        program_id: c.program_id,
        customer_id: Some(customer_id),
        link_id: Some(c.link_id),
        partner_id: Some(c.partner_id),
        click_id: Some(&click_id),
        details: &c.details,
        is_test: false,
        at: c.at,
    };
    tx.insert_click_event(&row).await?;
    deltas.count_click(c.program_id, c.partner_id, c.link_id, c.at);
    Ok(click_id)
}

/// A new click that the committer may insert with its batch.
struct NewClickWrite {
    click: NewClick,
    answer: oneshot::Sender<Result<String>>,
}

impl ClickWrite for NewClickWrite {
    fn click(&self) -> &NewClick {
        &self.click
    }

    fn on_commit(self: Box<Self>) -> OnCommit {
        write::answer_with(self.answer, self.click.click_id)
    }

    fn one_by_one(self: Box<Self>) -> Job {
        let NewClickWrite { click, answer } = *self;
        click_job(answer, click, None)
    }
}

/// Records `click` through the group committer and answers its click id once committed;
/// runs it again alone when its batch failed through another write.
async fn record_click(
    store: Arc<dyn Store>,
    click: NewClick,
    existing: Option<String>,
) -> Result<String> {
    let (again, again_existing) = (click.clone(), existing.clone());
    answer_or_alone(
        &*store,
        |answer| match &existing {
            // A click that creates its customer may go in set-based with its batch.
            None => Write::Click(Box::new(NewClickWrite { click, answer })),
            Some(_) => Write::Job(click_job(answer, click, existing)),
        },
        |answer| click_job(answer, again, again_existing),
    )
    .await
}

/// Most click recordings that may go on in tasks of their own after their wait ran out:
/// as many as the committer's queue holds. Beyond it a click waits for its commit, so
/// that a database that stopped answering cannot pile up tasks without bound.
const MAX_DETACHED_CLICKS: usize = 8192;

/// Waits for `recording` (of the click `click_id`) at most `wait` (`None`: until it
/// ends): its answer and `true`, or `click_id` and `false` when the wait ran out first.
/// The recording then goes on in a task of its own, counted in `detached`, and commits
/// with its batch.
async fn recorded_within(
    detached: &Arc<AtomicUsize>,
    wait: Option<Duration>,
    click_id: String,
    recording: impl Future<Output = Result<String>> + Send + 'static,
) -> Result<(String, bool)> {
    let wait = wait.filter(|_| detached.load(Ordering::Relaxed) < MAX_DETACHED_CLICKS);
    let Some(wait) = wait else {
        return Ok((recording.await?, true));
    };
    detached.fetch_add(1, Ordering::Relaxed);
    let count = detached.clone();
    let task = tokio::spawn(async move {
        let answered = recording.await;
        count.fetch_sub(1, Ordering::Relaxed);
        answered
    });
    match tokio::time::timeout(wait, task).await {
        Ok(Ok(answered)) => Ok((answered?, true)),
        Ok(Err(e)) => Err(Error::Internal("Click tracking failed", e.into())),
        Err(_) => Ok((click_id, false)),
    }
}

/// A click's flow as a job, answering `answer` with its click id.
fn click_job(
    answer: oneshot::Sender<Result<String>>,
    click: NewClick,
    existing: Option<String>,
) -> Job {
    write::job(answer, move |tx, deltas| {
        click_flow(tx, deltas, click, existing).boxed()
    })
}

/// A sale's flow as a job, answering `answer` with its outcome.
fn sale_job(answer: oneshot::Sender<Result<SaleOutcome>>, sale: NewSale) -> Job {
    write::job(answer, move |tx, deltas| {
        sale_flow(tx, deltas, sale).boxed()
    })
}

/// The origin rule for browser-mode leads: the program of the lead decides.
async fn check_browser_origin(tx: &mut dyn Tx, l: &LeadCommand, program_id: i64) -> Result<()> {
    if l.server_program.is_some() {
        return Ok(());
    }
    let origins = tx.program_origins(program_id).await?.unwrap_or_default();
    if origin_allowed(&origins, l.origin.as_deref()) {
        Ok(())
    } else {
        Err(forbidden_origin())
    }
}

/// Stores a lead event; a second real lead of one customer key in a program is refused.
async fn insert_lead_event(tx: &mut dyn Tx, row: &LeadEventRow<'_>) -> Result<i64> {
    tx.insert_lead_event(row).await.map_err(|e| {
        if e.is_conflict("customer_key") {
            Error::Invalid(attribution::lead_refused("lead"))
        } else {
            e.into()
        }
    })
}

/// A lead: moves a `click` customer to `lead`, or stores the lead unattributed.
async fn lead_flow(tx: &mut dyn Tx, deltas: &mut Deltas, l: LeadCommand, at: i64) -> Result<()> {
    let program_id = l.server_program.as_ref().map(|p| p.id).or(l.program_id);
    let customer: Customer = match (l.click_id.as_deref(), l.customer_key.as_deref()) {
        (Some(click_id), _) => {
            let c = tx.customer_by_click_id(click_id).await?.ok_or_else(|| {
                Error::invalid("Customer not found. Provide a valid click_id or customer_key.")
            })?;
            if program_id.is_some_and(|p| p != c.program_id) {
                return Err(Error::invalid("Customer does not belong to this program"));
            }
            check_browser_origin(tx, &l, c.program_id).await?;
            c
        }
        (None, Some(key)) => {
            let program_id = program_id.ok_or_else(|| {
                Error::invalid(
                    "additional_data.program_id is required for a lead without click_id or API key",
                )
            })?;
            // The API key's program exists and needs no origin; a program the browser
            // names must exist and admit the origin.
            if l.server_program.is_none() {
                let origins = tx
                    .program_origins(program_id)
                    .await?
                    .ok_or_else(|| Error::invalid("Program not found"))?;
                if !origin_allowed(&origins, l.origin.as_deref()) {
                    return Err(forbidden_origin());
                }
            }
            match tx.customer_by_key(program_id, key).await? {
                Some(c) => c,
                None => {
                    // No customer: the lead is kept, attributed to no partner.
                    let row = LeadEventRow {
                        program_id,
                        customer_id: None,
                        click_id: None,
                        customer_key: Some(key),
                        email: l.email.as_deref(),
                        session_id: l.session_id.as_deref(),
                        page_url: l.page_url.as_deref(),
                        event_name: l.event_name.as_deref(),
                        is_test: false,
                        at,
                    };
                    let lead_id = insert_lead_event(tx, &row).await?;
                    tx.record_events(program_id, at, &[lead_created(lead_id)])
                        .await?;
                    deltas.count_lead(program_id, None, at);
                    return Ok(());
                }
            }
        }
        (None, None) => return Err(Error::invalid("click_id or customer_key is required")),
    };
    customer.customer_status.to_lead().map_err(Error::Invalid)?;
    let key = l.customer_key.clone().or(customer.customer_key.clone());
    if let Some(new_key) = l.customer_key.as_deref() {
        if customer.customer_key.as_deref() != Some(new_key) {
            if let Some(other) = tx.customer_by_key(customer.program_id, new_key).await? {
                return Err(Error::Invalid(attribution::lead_refused(
                    other.customer_status.as_str(),
                )));
            }
        }
    }
    if !tx
        .mark_lead(customer.id, key.as_deref(), l.email.as_deref(), at)
        .await?
    {
        return Err(Error::Invalid(attribution::lead_refused(
            customer.customer_status.as_str(),
        )));
    }
    let row = LeadEventRow {
        program_id: customer.program_id,
        customer_id: Some(customer.id),
        click_id: Some(&customer.click_id),
        customer_key: key.as_deref(),
        email: l.email.as_deref(),
        session_id: l.session_id.as_deref(),
        page_url: l.page_url.as_deref(),
        event_name: l.event_name.as_deref(),
        is_test: false,
        at,
    };
    let lead_id = insert_lead_event(tx, &row).await?;
    tx.record_events(customer.program_id, at, &[lead_created(lead_id)])
        .await?;
    deltas.count_lead(customer.program_id, Some(customer.partner_id), at);
    Ok(())
}

/// The event of a lead.
fn lead_created(lead_id: i64) -> Event {
    Event::new(EventType::LeadCreated, Subject::Lead(lead_id))
}

/// Stores a sale event; a transaction id is accepted once. A duplicate names the earlier
/// sale when it is of the same program, read in this transaction, which sees a sale
/// recorded earlier in the same batch as well as one committed by another process.
async fn insert_sale_event(tx: &mut dyn Tx, row: &SaleEventRow<'_>) -> Result<i64> {
    if let Some(id) = tx.insert_sale_event_if_new(row).await? {
        return Ok(id);
    }
    let earlier = tx
        .recorded_sale(row.sale.program.id, &row.sale.transaction_id)
        .await
        .unwrap_or_else(|e| {
            // The 409 is still the answer, without the earlier sale's ids.
            tracing::warn!(error = %e, "the earlier sale of a duplicate could not be read");
            None
        });
    Err(Error::DuplicateSale(earlier))
}

/// The customer of a sale in its program: by customer key, then by click id; else why
/// there is none (a customer of another program is "no attribution").
async fn sale_customer(
    tx: &mut dyn Tx,
    s: &NewSale,
) -> Result<std::result::Result<Customer, &'static str>> {
    let by_key = match s.customer_key.as_deref() {
        Some(key) => tx.customer_by_key(s.program.id, key).await?,
        None => None,
    };
    let by_click = match (&by_key, s.click_id.as_deref()) {
        (None, Some(click_id)) => tx.customer_by_click_id(click_id).await?,
        _ => None,
    };
    let click_elsewhere = by_click
        .as_ref()
        .is_some_and(|c| c.program_id != s.program.id);
    let found = attribution::sale_customer(s.program.id, by_key, by_click, |c| c.program_id);
    if let Some(c) = found {
        return Ok(Ok(c));
    }
    let key_elsewhere = match s.customer_key.as_deref() {
        Some(key) => tx.customer_key_exists(key).await?,
        None => false,
    };
    Ok(Err(if key_elsewhere || click_elsewhere {
        "No affiliate attribution found for this customer in this program"
    } else if s.coupon_key.is_some() || s.promotion_code.is_some() {
        "Coupon code not found. Provide a coupon_code of an active link, customer_key or click_id."
    } else {
        "Customer not found. Provide customer_key or click_id."
    }))
}

/// The customer a sale's coupon brings: a new customer of the coupon's link and partner
/// (with the sale's customer key, so that the customer's later sales stay the partner's),
/// as a click would have made it.
async fn coupon_customer(tx: &mut dyn Tx, s: &NewSale, k: CouponTarget) -> Result<Customer> {
    let click_id = click_id::generate(s.at);
    let new = NewCustomer {
        program_id: s.program.id,
        click_id: &click_id,
        customer_key: s.customer_key.as_deref(),
        partner_id: k.partner_id,
        link_id: k.link_id,
        at: s.at,
    };
    let id = tx.insert_customer(&new).await?;
    Ok(Customer {
        id,
        program_id: s.program.id,
        click_id,
        customer_key: s.customer_key.clone(),
        customer_status: CustomerStatus::Click,
        partner_id: Some(k.partner_id),
        first_purchase_date: None,
        email: None,
    })
}

/// The sale's attribution: its customer, else the coupon it names (a click attribution
/// wins, [`attribution::sale_source`]), else the reason there is none.
async fn attributed_customer(tx: &mut dyn Tx, s: &NewSale) -> Result<Customer> {
    let found = sale_customer(tx, s).await?;
    let coupon = match &found {
        Err(_) if s.coupon_key.is_some() || s.promotion_code.is_some() => {
            tx.coupon_target(
                s.program.id,
                s.coupon_key.as_deref(),
                s.promotion_code.as_deref(),
            )
            .await?
        }
        _ => None,
    };
    let missing = found.as_ref().err().copied();
    match attribution::sale_source(found.ok(), coupon) {
        Some(SaleSource::Customer(c)) => Ok(c),
        Some(SaleSource::Coupon(k)) => coupon_customer(tx, s, k).await,
        None => Err(Error::invalid(missing.unwrap_or_default())),
    }
}

/// The flags of a sale's commission: `self_referral` when one of the customer's emails
/// (its lead's, the sale's) is one of the partner's.
async fn commission_flags(
    tx: &mut dyn Tx,
    c: &Customer,
    s: &NewSale,
    partner_id: i64,
) -> Result<Vec<CommissionFlag>> {
    let customer: Vec<&str> = [c.email.as_deref(), s.customer_email.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if customer.is_empty() {
        return Ok(Vec::new());
    }
    let partner = tx.partner_emails(partner_id).await?;
    let own = self_referral::is_self_referral(customer, partner.iter().map(String::as_str));
    Ok(if own {
        vec![CommissionFlag::SelfReferral]
    } else {
        Vec::new()
    })
}

/// A sale: the sale event, its commission, the customer's conversion and the figures.
/// Renewals stay with the partner of the subscription's first sale and earn within the
/// program's recurring limit counted from that sale.
pub(super) async fn sale_flow(
    tx: &mut dyn Tx,
    deltas: &mut Deltas,
    s: NewSale,
) -> Result<SaleOutcome> {
    if s.is_test {
        let mut s = s;
        let sale_id = insert_test_sale_event(tx, &mut s).await?;
        return Ok(SaleOutcome {
            sale_id,
            commission_id: None,
            unearned: None,
        });
    }
    let c = attributed_customer(tx, &s).await?;
    let mut partner_id = c.partner_id;
    let mut first_sale_at = None;
    if let Some(sub) = s.subscription_id.as_deref() {
        if let Some((first_partner, first_at)) =
            tx.first_subscription_sale(s.program.id, sub).await?
        {
            partner_id = first_partner.or(partner_id);
            first_sale_at = Some(first_at);
        }
    } else if s.is_recurring {
        first_sale_at = c.first_purchase_date;
    }
    let partner_id =
        partner_id.ok_or_else(|| Error::invalid("partnerId required to create commission"))?;
    let (partner_program_id, standing) = tx
        .partner_program(partner_id, s.program.id)
        .await?
        .ok_or_else(|| Error::invalid("No partner-program relationship found for this customer"))?;
    let unearned = commission::unearned(
        standing,
        !s.is_recurring
            || commission::recurring_earns(
                s.program.recurring_commission_months,
                first_sale_at,
                s.at,
            ),
    );
    let row = SaleEventRow {
        sale: &s,
        customer_id: Some(c.id),
        partner_id: Some(partner_id),
        click_id: Some(&c.click_id),
        customer_key: s.customer_key.as_deref().or(c.customer_key.as_deref()),
        unearned,
    };
    let sale_id = insert_sale_event(tx, &row).await?;
    let (commission_id, commission_cents) = if unearned.is_none() {
        let flags = commission_flags(tx, &c, &s, partner_id).await?;
        let commission = NewCommission {
            program_id: s.program.id,
            sale_id,
            partner_id,
            partner_program_id,
            amount_cents: s.commission_cents,
            currency: &s.currency,
            at: s.at,
            flags: &flags,
            approval: lifecycle::approval(&flags),
        };
        (
            Some(tx.insert_commission(&commission).await?),
            s.commission_cents,
        )
    } else {
        (None, 0)
    };
    tx.mark_converted(c.id, s.at).await?;
    let outcome = SaleOutcome {
        sale_id,
        commission_id,
        unearned,
    };
    tx.record_events(s.program.id, s.at, &sale_recorded(&outcome))
        .await?;
    deltas.count_sale(SaleFigures {
        program_id: s.program.id,
        partner_id,
        at: s.at,
        amount_cents: s.amount_cents,
        commission_cents,
        currency: &s.currency,
        converts: c.first_purchase_date.is_none(),
    });
    Ok(outcome)
}

/// A plain sale that the committer may record with its batch.
struct PlainSaleWrite {
    sale: NewSale,
    answer: oneshot::Sender<Result<SaleOutcome>>,
}

impl SaleWrite for PlainSaleWrite {
    fn sale(&self) -> &NewSale {
        &self.sale
    }

    fn on_commit(self: Box<Self>, outcome: SaleOutcome) -> OnCommit {
        write::answer_with(self.answer, outcome)
    }

    fn one_by_one(self: Box<Self>) -> Job {
        let PlainSaleWrite { sale, answer } = *self;
        sale_job(answer, sale)
    }
}

/// A refund: full, partial or repeated, of a sale of the program.
pub(super) async fn refund_flow(
    tx: &mut dyn Tx,
    deltas: &mut Deltas,
    program_id: i64,
    r: RefundCommand,
    at: i64,
) -> Result<RefundOutcome> {
    let sale = tx
        .refundable_sale(program_id, &r.transaction_id, r.test_mode, at)
        .await?
        .ok_or_else(|| Error::NotFound("Sale not found for transaction_id".into()))?;
    let state = refund::SaleState {
        amount_cents: sale.amount_cents,
        refunded_cents: sale.refunded_cents,
        commission: sale
            .commission
            .as_ref()
            .map(|c| (c.amount_cents, c.taken_back_cents)),
    };
    let outcome = |plan: &refund::RefundPlan| RefundOutcome {
        status: plan.status,
        sale_id: sale.sale_id,
        commission_id: sale.commission.as_ref().map(|c| c.id),
        deduction_cents: plan.deduction_cents,
        refunded_cents: plan.refund_cents,
        currency: sale.currency.clone(),
        clawback_id: None,
    };
    if let Some(refund_id) = &r.refund_id {
        if let Some(earlier) = tx.sale_refund(sale.sale_id, refund_id).await? {
            let plan = refund::repeated(state, earlier, r.amount_cents)
                .map_err(|e| Error::Conflict(format!("refund_id {refund_id} {e}")))?;
            return Ok(outcome(&plan));
        }
    }
    let plan = refund::plan(state, r.amount_cents).map_err(Error::Invalid)?;
    if plan.status == RefundStatus::Skipped {
        return Ok(outcome(&plan));
    }
    if let Some(refund_id) = &r.refund_id {
        tx.insert_sale_refund(sale.sale_id, refund_id, plan.refund_cents, at)
            .await?;
    }
    tx.refund_sale(
        sale.sale_id,
        plan.refund_cents,
        plan.fully_refunded,
        r.reason.as_deref(),
    )
    .await?;
    let mut deducted_cents = plan.deduction_cents;
    let mut clawback_id = None;
    let mut events = vec![Event::new(
        EventType::SaleRefunded,
        Subject::Sale(sale.sale_id),
    )];
    if let Some(c) = &sale.commission {
        match lifecycle::on_refund(c.state, plan.fully_refunded) {
            RefundEffect::Reduce { reverses, counts } => {
                tx.reverse_commission(c.id, plan.deduction_cents, reverses, at)
                    .await?;
                if reverses {
                    events.push(Event::new(
                        EventType::CommissionReversed,
                        Subject::Commission(c.id),
                    ));
                }
                if !counts {
                    deducted_cents = 0;
                }
            }
            RefundEffect::Clawback if plan.deduction_cents > 0 => {
                let clawback = tx.insert_clawback(c.id, plan.deduction_cents, at).await?;
                clawback_id = Some(clawback);
                events.push(Event::new(
                    EventType::CommissionCreated,
                    Subject::Commission(clawback),
                ));
            }
            RefundEffect::Clawback => {}
        }
    }
    if !r.test_mode {
        tx.record_events(program_id, at, &events).await?;
        deltas.count_refund(RefundFigures {
            program_id,
            partner_id: sale.partner_id,
            sale_date: sale.sale_date,
            refunded_cents: plan.refund_cents,
            deducted_cents,
            currency: &sale.currency,
            full: plan.fully_refunded,
        });
    }
    Ok(RefundOutcome {
        clawback_id,
        ..outcome(&plan)
    })
}
