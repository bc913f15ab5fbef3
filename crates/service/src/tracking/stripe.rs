//! A verified Stripe event: claimed once per program and event id in the same
//! transaction as its effect, so a redelivery changes nothing. A payment becomes a sale
//! and a charge refund a refund through the same flows as the tracking API's.

use futures::FutureExt;

use crate::tracking::{refund_flow, sale_flow, RefundCommand, SaleCommand};
use crate::{App, Error, Result};
use reftrack_domain::figures::Deltas;
use reftrack_domain::money;
use reftrack_domain::stripe::{AccountState, Action, ChargeRefund, Event, Payment};
use reftrack_store::tx::Tx;
use reftrack_store::{NewSale, PaymentAccount, Program};

impl App {
    /// Processes a verified event for `program`; returns what it did, in a few words.
    pub async fn ingest_stripe_event(&self, program: &Program, event: Event) -> Result<String> {
        let at = self.now_ms();
        // A payment is recorded as the sale the tracking API would record.
        let sale = match &event.action {
            Action::Sale(p) => Some(self.new_sale(program, payment_sale(p)).await?),
            _ => None,
        };
        let program_id = program.id;
        let done = self
            .write(move |tx, deltas| stripe_flow(tx, deltas, program_id, event, sale, at).boxed())
            .await
            .map_err(|e| e.public_text("Webhook processing failed"));
        // `account.updated` changes the program's payment account.
        self.changed();
        done
    }
}

/// The sale a payment asks for (its transaction id, amount and attribution).
fn payment_sale(p: &Payment) -> SaleCommand {
    let metadata = serde_json::json!({
        "source": "stripe",
        "payment_intent": p.payment_intent,
        "charge": p.charge,
    });
    SaleCommand {
        transaction_id: Some(p.transaction_id.clone()),
        amount_cents: p.amount,
        currency: Some(money::normalize_currency(&p.currency).unwrap_or_else(|| "usd".into())),
        customer_key: p.attribution.customer_key.clone(),
        click_id: p.attribution.click_id.clone(),
        sale_type: if p.subscription_id.is_some() {
            "subscription"
        } else {
            "payment"
        }
        .into(),
        is_recurring: p.is_recurring,
        subscription_id: p.subscription_id.clone(),
        product_id: p.product_id.clone(),
        metadata: Some(metadata.to_string()),
        test_mode: false,
        coupon_code: None,
        promotion_code: p.promotion_code.clone(),
        customer_email: p.customer_email.clone(),
    }
}

async fn stripe_flow(
    tx: &mut dyn Tx,
    deltas: &mut Deltas,
    program_id: i64,
    event: Event,
    sale: Option<NewSale>,
    at: i64,
) -> Result<String> {
    if !tx
        .claim_processor_event(program_id, &event.id, &event.kind, at)
        .await?
    {
        return Ok("duplicate event: already processed".into());
    }
    let outcome = match event.action {
        Action::Ignore(reason) => format!("ignored: {reason}"),
        Action::Account(a) => account(tx, program_id, a, at).await?,
        Action::Sale(p) => match sale {
            Some(sale) => payment(tx, deltas, program_id, &p, sale).await?,
            None => "ignored: no sale".into(),
        },
        Action::Refund(r) => charge_refund(tx, deltas, program_id, r, at).await?,
    };
    tx.set_processor_event_outcome(program_id, &event.id, &outcome)
        .await?;
    Ok(outcome)
}

async fn account(tx: &mut dyn Tx, program_id: i64, a: AccountState, at: i64) -> Result<String> {
    let status = a.status();
    let account = PaymentAccount {
        status: status.into(),
        account_id: Some(a.account_id),
        charges_enabled: a.charges_enabled,
        payouts_enabled: a.payouts_enabled,
        details_submitted: a.details_submitted,
        connection_date: None,
    };
    tx.set_payment_account(program_id, &account, at).await?;
    Ok(format!("payment account {status}"))
}

async fn payment(
    tx: &mut dyn Tx,
    deltas: &mut Deltas,
    program_id: i64,
    p: &Payment,
    sale: NewSale,
) -> Result<String> {
    if p.attribution.program_id.is_some_and(|id| id != program_id) {
        return Ok("ignored: metadata names another program".into());
    }
    if tx.transaction_program(&p.transaction_id).await?.is_some() {
        // A subscription's first payment arrives as a checkout session and as its first
        // invoice; both name the invoice, so the second finds the sale recorded.
        attach_payment_ids(tx, program_id, p).await?;
        return Ok("sale already recorded".into());
    }
    match sale_flow(tx, deltas, sale).await {
        Ok(outcome) => {
            attach_payment_ids(tx, program_id, p).await?;
            Ok(match outcome.commission_id {
                Some(_) => "sale recorded".into(),
                None => "sale recorded without commission (recurring period ended)".into(),
            })
        }
        // Attribution failures are answered 200 so that Stripe does not retry a payment
        // that can never be attributed; the reason is kept with the event.
        Err(Error::Invalid(reason)) => Ok(format!("not attributed: {reason}")),
        Err(e) => Err(e),
    }
}

/// Remembers the payment ids of a payment's sale, which a later `charge.refunded` names.
async fn attach_payment_ids(tx: &mut dyn Tx, program_id: i64, p: &Payment) -> Result<()> {
    Ok(tx
        .attach_payment_ids(
            program_id,
            &p.transaction_id,
            p.payment_intent.as_deref(),
            p.charge.as_deref(),
        )
        .await?)
}

/// `charge.refunded`: Stripe reports the cumulative amount refunded; the refund applied is
/// what that adds to what the sale already had refunded.
async fn charge_refund(
    tx: &mut dyn Tx,
    deltas: &mut Deltas,
    program_id: i64,
    r: ChargeRefund,
    at: i64,
) -> Result<String> {
    let Some(sale) = tx
        .sale_for_charge(
            program_id,
            Some(&r.charge),
            r.payment_intent.as_deref(),
            r.invoice.as_deref(),
        )
        .await?
    else {
        return Ok("ignored: no tracked sale for this charge".into());
    };
    let full = r.amount_refunded >= r.amount;
    let more = r.amount_refunded - sale.refunded_cents;
    if !full && more <= 0 {
        return Ok("refund already applied".into());
    }
    let refund = RefundCommand {
        transaction_id: sale.transaction_id,
        amount_cents: if full { None } else { Some(more) },
        reason: Some("stripe: charge.refunded".into()),
        refund_id: None,
        test_mode: false,
    };
    match refund_flow(tx, deltas, program_id, refund, at).await {
        Ok(o) => Ok(format!("refund {}", o.status.as_str())),
        Err(Error::Invalid(reason)) => Ok(format!("refund not applied: {reason}")),
        Err(e) => Err(e),
    }
}
