//! [`RefundTx`] on the committer's transaction: the sale a refund names, the refund kept,
//! the sale and its commission reduced.

use async_trait::async_trait;

use crate::error::{StoreError, StoreResult};
use crate::model::{RefundableSale, SaleCommission};
use crate::sql::engine::{stmt, Engine};
use crate::sql::named_at;
use crate::sql::payouts::status_now;
use crate::sql::write::WriteConnection;
use crate::tx::RefundTx;
use reftrack_domain::lifecycle::CommissionState;

#[async_trait]
impl<DB: Engine> RefundTx for WriteConnection<DB> {
    async fn refundable_sale(
        &mut self,
        program_id: i64,
        transaction_id: &str,
        is_test: bool,
        now: i64,
    ) -> StoreResult<Option<RefundableSale>> {
        let status = status_now();
        let sql = format!(
            "SELECT s.id, s.amount_cents, s.refunded_cents, s.partner_id, s.sale_date, \
             COALESCE(c.currency, s.currency), c.id, c.amount_cents, CAST(c.reversed_cents + COALESCE(( \
               SELECT -SUM(k.amount_cents) FROM commissions k \
               WHERE k.original_commission_id = c.id), 0) AS BIGINT), \
             {status}, c.payout_id IS NOT NULL, \
             CASE WHEN s.awaiting_rate THEN NULL \
             ELSE COALESCE(s.converted_amount_cents, s.amount_cents) END, \
             COALESCE(c.awaiting_rate, FALSE) \
             FROM affiliate_sale_events s \
             LEFT JOIN commissions c ON c.sale_id = s.id AND c.kind = 'sale' \
             LEFT JOIN programs p ON p.id = c.program_id \
             WHERE s.processor_event_id = $2 AND s.program_id = $3 AND s.is_test = $4 {}",
            DB::SALE_LOCK
        );
        let row = stmt::<DB>(&sql)
            .bind(now)
            .bind(transaction_id)
            .bind(program_id)
            .bind(is_test)
            .fetch_optional(&mut *self.conn)
            .await?;
        let Some(r) = row else { return Ok(None) };
        let commission_id: Option<i64> = r.try_get_at(6)?;
        let commission = match commission_id {
            Some(id) => Some(SaleCommission {
                id,
                amount_cents: r.try_get_at(7)?,
                taken_back_cents: r.try_get_at(8)?,
                state: CommissionState {
                    status: named_at(&r, 9)?,
                    held: r.try_get_at(10)?,
                    awaiting_rate: r.try_get_at(12)?,
                },
            }),
            None => None,
        };
        Ok(Some(RefundableSale {
            sale_id: r.try_get_at(0)?,
            amount_cents: r.try_get_at(1)?,
            refunded_cents: r.try_get_at(2)?,
            partner_id: r.try_get_at(3)?,
            sale_date: r.try_get_at(4)?,
            currency: r.try_get_at(5)?,
            program_amount_cents: r.try_get_at(11)?,
            commission,
        }))
    }

    async fn sale_refund(&mut self, sale_id: i64, refund_id: &str) -> StoreResult<Option<i64>> {
        Ok(stmt::<DB>(
            "SELECT amount_cents FROM sale_refunds WHERE sale_id = $1 AND refund_id = $2",
        )
        .bind(sale_id)
        .bind(refund_id)
        .scalar_optional(&mut *self.conn)
        .await?)
    }

    async fn insert_sale_refund(
        &mut self,
        sale_id: i64,
        refund_id: &str,
        amount_cents: i64,
        at: i64,
    ) -> StoreResult<()> {
        stmt::<DB>(
            "INSERT INTO sale_refunds (sale_id, refund_id, amount_cents, created_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(sale_id)
        .bind(refund_id)
        .bind(amount_cents)
        .bind(at)
        .execute(&mut *self.conn)
        .await
        .map_err(|e| StoreError::from(e).conflict_on("refund_id"))?;
        Ok(())
    }

    async fn refund_sale(
        &mut self,
        sale_id: i64,
        refund_cents: i64,
        fully: bool,
        reason: Option<&str>,
    ) -> StoreResult<()> {
        stmt::<DB>(
            "UPDATE affiliate_sale_events SET refunded_cents = refunded_cents + $1, \
             payment_status = CASE WHEN $2 THEN 'refunded' ELSE payment_status END, \
             refund_reason = COALESCE($3, refund_reason) WHERE id = $4",
        )
        .bind(refund_cents)
        .bind(fully)
        .bind(reason)
        .bind(sale_id)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }

    async fn reverse_commission(
        &mut self,
        commission_id: i64,
        deduction_cents: i64,
        reverses: bool,
        at: i64,
    ) -> StoreResult<()> {
        stmt::<DB>(
            "UPDATE commissions SET reversed_cents = reversed_cents + $1, \
             status = CASE WHEN $2 THEN 'reversed' ELSE status END, \
             updated_at = $3 WHERE id = $4",
        )
        .bind(deduction_cents)
        .bind(reverses)
        .bind(at)
        .bind(commission_id)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }
}
