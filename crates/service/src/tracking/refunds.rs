//! A refund's flow.

use super::*;
use reftrack_domain::currency;

/// A refund: full, partial or repeated, of a sale of the program.
pub(crate) async fn refund_flow(
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
    // What the refund takes of the sale's revenue in the program's currency: its share
    // of the converted amount; nothing while the sale waits for a rate.
    let refunded_in_program = sale.program_amount_cents.map_or(0, |converted| {
        let after = sale.refunded_cents + plan.refund_cents;
        currency::refunded_share(converted, sale.amount_cents, after)
            - currency::refunded_share(converted, sale.amount_cents, sale.refunded_cents)
    });
    if !r.test_mode {
        if let Some(partner_id) = sale.partner_id {
            let refunded = Progress::Refund {
                refund_cents: refunded_in_program,
                full: plan.fully_refunded,
            };
            count_bounties(tx, deltas, program_id, partner_id, refunded, sale.sale_date).await?;
        }
        tx.record_events(program_id, at, &events).await?;
        deltas.count_refund(RefundFigures {
            program_id,
            partner_id: sale.partner_id,
            sale_date: sale.sale_date,
            refunded_cents: refunded_in_program,
            deducted_cents,
            full: plan.fully_refunded,
        });
    }
    Ok(RefundOutcome {
        clawback_id,
        ..outcome(&plan)
    })
}
