//! [`ProcessorTx`] on the committer's transaction: payment-processor events claimed and
//! their outcomes, payment ids of sales, and programs' payment accounts.

use async_trait::async_trait;

use crate::error::StoreResult;
use crate::model::{ChargeSale, PaymentAccount};
use crate::sql::engine::{stmt, Engine};
use crate::sql::write::WriteConnection;
use crate::tx::ProcessorTx;

#[async_trait]
impl<DB: Engine> ProcessorTx for WriteConnection<DB> {
    async fn transaction_program(&mut self, transaction_id: &str) -> StoreResult<Option<i64>> {
        Ok(
            stmt::<DB>(
                "SELECT program_id FROM affiliate_sale_events WHERE processor_event_id = $1",
            )
            .bind(transaction_id)
            .scalar_optional(&mut *self.conn)
            .await?,
        )
    }

    async fn claim_processor_event(
        &mut self,
        program_id: i64,
        event_id: &str,
        kind: &str,
        at: i64,
    ) -> StoreResult<bool> {
        let claimed = stmt::<DB>(
            "INSERT INTO stripe_events (program_id, event_id, event_type, outcome, received_at) \
             VALUES ($1, $2, $3, '', $4) ON CONFLICT (program_id, event_id) DO NOTHING",
        )
        .bind(program_id)
        .bind(event_id)
        .bind(kind)
        .bind(at)
        .execute(&mut *self.conn)
        .await?;
        Ok(claimed == 1)
    }

    async fn set_processor_event_outcome(
        &mut self,
        program_id: i64,
        event_id: &str,
        outcome: &str,
    ) -> StoreResult<()> {
        stmt::<DB>("UPDATE stripe_events SET outcome = $1 WHERE program_id = $2 AND event_id = $3")
            .bind(outcome)
            .bind(program_id)
            .bind(event_id)
            .execute(&mut *self.conn)
            .await?;
        Ok(())
    }

    async fn attach_payment_ids(
        &mut self,
        program_id: i64,
        transaction_id: &str,
        payment_intent: Option<&str>,
        charge: Option<&str>,
    ) -> StoreResult<()> {
        stmt::<DB>(
            "UPDATE affiliate_sale_events SET payment_intent_id = COALESCE(payment_intent_id, $1), \
             charge_id = COALESCE(charge_id, $2) WHERE program_id = $3 AND processor_event_id = $4",
        )
        .bind(payment_intent)
        .bind(charge)
        .bind(program_id)
        .bind(transaction_id)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }

    async fn sale_for_charge(
        &mut self,
        program_id: i64,
        charge: Option<&str>,
        payment_intent: Option<&str>,
        invoice: Option<&str>,
    ) -> StoreResult<Option<ChargeSale>> {
        // One index lookup per way of naming the sale (an OR of them scans the program's
        // sales), the earliest sale found.
        let row: Option<(String, i64)> = stmt::<DB>(
            "SELECT processor_event_id, refunded_cents FROM affiliate_sale_events WHERE id = \
             (SELECT MIN(id) FROM ( \
             SELECT id FROM affiliate_sale_events WHERE program_id = $1 AND charge_id = $2 \
             AND NOT is_test UNION ALL \
             SELECT id FROM affiliate_sale_events WHERE program_id = $1 \
             AND payment_intent_id = $3 AND NOT is_test UNION ALL \
             SELECT id FROM affiliate_sale_events WHERE processor_event_id IN ($3, $4) \
             AND program_id = $1 AND NOT is_test) found)",
        )
        .bind(program_id)
        .bind(charge)
        .bind(payment_intent)
        .bind(invoice)
        .record_optional(&mut *self.conn)
        .await?;
        Ok(row.map(|(transaction_id, refunded_cents)| ChargeSale {
            transaction_id,
            refunded_cents,
        }))
    }

    async fn set_payment_account(
        &mut self,
        program_id: i64,
        a: &PaymentAccount,
        at: i64,
    ) -> StoreResult<()> {
        stmt::<DB>(
            "UPDATE programs SET payment_status = $1, payment_account_id = $2, \
             charges_enabled = $3, payouts_enabled = $4, details_submitted = $5, \
             connection_date = CASE WHEN $1 = 'connected' THEN COALESCE(connection_date, $6) \
             ELSE connection_date END, updated_at = $6 WHERE id = $7",
        )
        .bind(&a.status)
        .bind(&a.account_id)
        .bind(a.charges_enabled)
        .bind(a.payouts_enabled)
        .bind(a.details_submitted)
        .bind(at)
        .bind(program_id)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }
}
