//! [`Tx`]: the statements of the tracking flows, on the write connection's open
//! transaction.

use async_trait::async_trait;

use super::engine::{stmt, Engine, Stmt};
use super::flags_text;
use super::payouts::STATUS;
use super::write::WriteConnection;
use super::{named_at, parse_origins};
use crate::error::{StoreError, StoreResult};
use crate::model::{
    ChargeSale, ClickEventRow, CouponTarget, Customer, LeadEventRow, NewCommission, NewCustomer,
    PartnerProgram, PaymentAccount, RecordedSale, RefundableSale, SaleCommission, SaleEventRow,
};
use crate::tx::Tx;
use reftrack_domain::commission::Unearned;
use reftrack_domain::lifecycle::Approval;
use reftrack_domain::lifecycle::CommissionState;
use reftrack_domain::self_referral::email_key;
use reftrack_domain::status::PartnerStatus;

/// The insert of a sale event, without its `RETURNING`: a literal, so that each
/// statement built on it is one too.
macro_rules! insert_sale_event {
    () => {
        "INSERT INTO affiliate_sale_events (program_id, customer_id, partner_id, click_id, \
         customer_key, processor_event_id, amount_cents, currency, sale_type, payment_status, \
         is_recurring, subscription_id, product_id, metadata, is_test, sale_date, created_at, \
         unearned) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'paid', $10, $11, $12, $13, $14, $15, $15, \
         $16)"
    };
}

const CUSTOMER: &str = "SELECT id, program_id, click_id, customer_key, customer_status, \
    partner_id, first_purchase_date, email FROM customers";

#[async_trait]
impl<DB: Engine> Tx for WriteConnection<DB> {
    async fn customer_by_click_id(&mut self, click_id: &str) -> StoreResult<Option<Customer>> {
        let sql = format!("{CUSTOMER} WHERE click_id = $1");
        Ok(stmt::<DB>(&sql)
            .bind(click_id)
            .record_optional(&mut *self.conn)
            .await?)
    }

    async fn customer_by_key(
        &mut self,
        program_id: i64,
        customer_key: &str,
    ) -> StoreResult<Option<Customer>> {
        let sql = format!("{CUSTOMER} WHERE program_id = $1 AND customer_key = $2");
        Ok(stmt::<DB>(&sql)
            .bind(program_id)
            .bind(customer_key)
            .record_optional(&mut *self.conn)
            .await?)
    }

    async fn customer_key_exists(&mut self, customer_key: &str) -> StoreResult<bool> {
        Ok(
            stmt::<DB>("SELECT 1 FROM customers WHERE customer_key = $1 LIMIT 1")
                .bind(customer_key)
                .has_row(&mut *self.conn)
                .await?,
        )
    }

    async fn insert_customer(&mut self, c: &NewCustomer<'_>) -> StoreResult<i64> {
        Ok(stmt::<DB>(
            "INSERT INTO customers (program_id, click_id, customer_key, customer_status, \
             partner_id, link_id, created_at, updated_at) \
             VALUES ($1, $2, $6, 'click', $3, $4, $5, $5) RETURNING id",
        )
        .bind(c.program_id)
        .bind(c.click_id)
        .bind(c.partner_id)
        .bind(c.link_id)
        .bind(c.at)
        .bind(c.customer_key)
        .scalar(&mut *self.conn)
        .await?)
    }

    async fn repoint_customer(
        &mut self,
        customer_id: i64,
        partner_id: i64,
        link_id: i64,
        at: i64,
    ) -> StoreResult<()> {
        stmt::<DB>(
            "UPDATE customers SET partner_id = $1, link_id = $2, updated_at = $3 WHERE id = $4",
        )
        .bind(partner_id)
        .bind(link_id)
        .bind(at)
        .bind(customer_id)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }

    async fn mark_lead(
        &mut self,
        customer_id: i64,
        customer_key: Option<&str>,
        email: Option<&str>,
        at: i64,
    ) -> StoreResult<bool> {
        let updated = stmt::<DB>(
            "UPDATE customers SET customer_status = 'lead', signup_date = $1, \
             customer_key = $2, email = COALESCE($3, email), \
             email_key = CASE WHEN $3 IS NULL THEN email_key ELSE $5 END, updated_at = $1 \
             WHERE id = $4 AND customer_status = 'click'",
        )
        .bind(at)
        .bind(customer_key)
        .bind(email)
        .bind(customer_id)
        .bind(email.map(email_key))
        .execute(&mut *self.conn)
        .await?;
        Ok(updated == 1)
    }

    async fn mark_converted(&mut self, customer_id: i64, at: i64) -> StoreResult<()> {
        stmt::<DB>(
            "UPDATE customers SET customer_status = 'conversion', \
             first_purchase_date = COALESCE(first_purchase_date, $1), updated_at = $1 \
             WHERE id = $2",
        )
        .bind(at)
        .bind(customer_id)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }

    async fn insert_click_event(&mut self, e: &ClickEventRow<'_>) -> StoreResult<i64> {
        let d = e.details;
        Ok(stmt::<DB>(
            "INSERT INTO affiliate_click_events (program_id, customer_id, link_id, partner_id, \
             click_id, session_id, page_url, page_title, referrer_url, screen_resolution, \
             viewport_size, language, timezone, geo_country, geo_region, geo_city, device_type, \
             device_os, browser_name, is_test, click_timestamp, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
             $18, $19, $20, $21, $21) RETURNING id",
        )
        .bind(e.program_id)
        .bind(e.customer_id)
        .bind(e.link_id)
        .bind(e.partner_id)
        .bind(e.click_id)
        .bind(&d.session_id)
        .bind(&d.page_url)
        .bind(&d.page_title)
        .bind(&d.referrer_url)
        .bind(&d.screen_resolution)
        .bind(&d.viewport_size)
        .bind(&d.language)
        .bind(&d.timezone)
        .bind(&d.geo_country)
        .bind(&d.geo_region)
        .bind(&d.geo_city)
        .bind(&d.device_type)
        .bind(&d.device_os)
        .bind(&d.browser_name)
        .bind(e.is_test)
        .bind(e.at)
        .scalar(&mut *self.conn)
        .await?)
    }

    async fn insert_lead_event(&mut self, e: &LeadEventRow<'_>) -> StoreResult<i64> {
        stmt::<DB>(
            "INSERT INTO affiliate_lead_events (program_id, customer_id, click_id, customer_key, \
             email, session_id, page_url, event_name, is_test, lead_timestamp, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) RETURNING id",
        )
        .bind(e.program_id)
        .bind(e.customer_id)
        .bind(e.click_id)
        .bind(e.customer_key)
        .bind(e.email)
        .bind(e.session_id)
        .bind(e.page_url)
        .bind(e.event_name)
        .bind(e.is_test)
        .bind(e.at)
        .scalar(&mut *self.conn)
        .await
        .map_err(|e| StoreError::from(e).conflict_on("customer_key"))
    }

    async fn insert_sale_event_if_new(&mut self, e: &SaleEventRow<'_>) -> StoreResult<Option<i64>> {
        let sql = concat!(
            insert_sale_event!(),
            " ON CONFLICT (processor_event_id) DO NOTHING RETURNING id"
        );
        Ok(sale_event::<DB>(sql, e)
            .scalar_optional(&mut *self.conn)
            .await?)
    }

    async fn insert_commission(&mut self, c: &NewCommission<'_>) -> StoreResult<i64> {
        Ok(stmt::<DB>(
            "INSERT INTO commissions (program_id, sale_id, partner_id, partner_program_id, \
             amount_cents, currency, status, flags, manual_approval, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, 'pending', $8, $9, $7, $7) RETURNING id",
        )
        .bind(c.program_id)
        .bind(c.sale_id)
        .bind(c.partner_id)
        .bind(c.partner_program_id)
        .bind(c.amount_cents)
        .bind(c.currency)
        .bind(c.at)
        .bind(flags_text(c.flags))
        .bind(c.approval == Approval::ByOwner)
        .scalar(&mut *self.conn)
        .await?)
    }

    async fn coupon_target(
        &mut self,
        program_id: i64,
        code_key: Option<&str>,
        promotion_code: Option<&str>,
    ) -> StoreResult<Option<CouponTarget>> {
        // A code names its coupon first; the promotion code only when no code matched.
        let row = stmt::<DB>(
            "SELECT l.id, l.partner_id FROM coupons k \
             JOIN referral_links l ON l.id = k.link_id \
             WHERE k.program_id = $1 AND k.archived_at IS NULL \
             AND (k.code_key = $2 OR k.stripe_promotion_code = $3) \
             AND l.status = 'active' AND l.partner_id IS NOT NULL \
             ORDER BY CASE WHEN k.code_key = $2 THEN 0 ELSE 1 END LIMIT 1",
        )
        .bind(program_id)
        .bind(code_key)
        .bind(promotion_code)
        .fetch_optional(&mut *self.conn)
        .await?;
        row.map(|r| {
            Ok(CouponTarget {
                link_id: r.try_get_at(0)?,
                partner_id: r.try_get_at(1)?,
            })
        })
        .transpose()
    }

    async fn partner_emails(&mut self, partner_id: i64) -> StoreResult<Vec<String>> {
        let row = stmt::<DB>("SELECT email, account_email FROM partners WHERE id = $1")
            .bind(partner_id)
            .fetch_optional(&mut *self.conn)
            .await?;
        let Some(r) = row else { return Ok(Vec::new()) };
        let (email, account): (Option<String>, Option<String>) =
            (r.try_get_at(0)?, r.try_get_at(1)?);
        Ok(email.into_iter().chain(account).collect())
    }

    async fn program_origins(&mut self, program_id: i64) -> StoreResult<Option<Vec<String>>> {
        let stored: Option<String> =
            stmt::<DB>("SELECT allowed_origins FROM programs WHERE id = $1")
                .bind(program_id)
                .scalar_optional(&mut *self.conn)
                .await?;
        Ok(stored.map(|s| parse_origins(&s)))
    }

    async fn first_subscription_sale(
        &mut self,
        program_id: i64,
        subscription_id: &str,
    ) -> StoreResult<Option<(Option<i64>, i64)>> {
        Ok(stmt::<DB>(
            "SELECT partner_id, sale_date FROM affiliate_sale_events \
             WHERE program_id = $1 AND subscription_id = $2 AND NOT is_test \
             ORDER BY sale_date, id LIMIT 1",
        )
        .bind(program_id)
        .bind(subscription_id)
        .record_optional(&mut *self.conn)
        .await?)
    }

    async fn partner_program(
        &mut self,
        partner_id: i64,
        program_id: i64,
    ) -> StoreResult<Option<(i64, PartnerStatus)>> {
        let row = stmt::<DB>(
            "SELECT id, status FROM partner_programs WHERE partner_id = $1 AND program_id = $2",
        )
        .bind(partner_id)
        .bind(program_id)
        .fetch_optional(&mut *self.conn)
        .await?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some((r.try_get_at(0)?, named_at(&r, 1)?)))
    }

    async fn program_and_partner_exist(
        &mut self,
        program_id: i64,
        partner_id: i64,
    ) -> StoreResult<(bool, bool)> {
        Ok(stmt::<DB>(
            "SELECT EXISTS (SELECT 1 FROM programs WHERE id = $1), \
             EXISTS (SELECT 1 FROM partners WHERE id = $2)",
        )
        .bind(program_id)
        .bind(partner_id)
        .record(&mut *self.conn)
        .await?)
    }

    async fn set_partner_status(
        &mut self,
        program_id: i64,
        partner_id: i64,
        from: PartnerStatus,
        to: PartnerStatus,
    ) -> StoreResult<Option<PartnerProgram>> {
        super::partner_links::set_partner_status::<DB>(
            &mut self.conn,
            program_id,
            partner_id,
            from,
            to,
        )
        .await
    }

    async fn insert_partner_program(
        &mut self,
        program_id: i64,
        partner_id: i64,
        status: PartnerStatus,
        at: i64,
    ) -> StoreResult<PartnerProgram> {
        stmt::<DB>(
            "INSERT INTO partner_programs (partner_id, program_id, status, created_at) \
             VALUES ($1, $2, $3, $4) RETURNING id, partner_id, program_id, status, \
             total_clicks, total_leads, total_sales, total_revenue_cents, \
             total_commission_cents, created_at",
        )
        .bind(partner_id)
        .bind(program_id)
        .bind(status.as_str())
        .bind(at)
        .record(&mut *self.conn)
        .await
        .map_err(|e| StoreError::from(e).conflict_on("partner_program"))
    }

    async fn refundable_sale(
        &mut self,
        program_id: i64,
        transaction_id: &str,
        is_test: bool,
        now: i64,
    ) -> StoreResult<Option<RefundableSale>> {
        let sql = format!(
            "SELECT s.id, s.amount_cents, s.refunded_cents, s.partner_id, s.sale_date, \
             s.currency, c.id, c.amount_cents, CAST(c.reversed_cents + COALESCE(( \
               SELECT -SUM(k.amount_cents) FROM commissions k \
               WHERE k.original_commission_id = c.id), 0) AS BIGINT), \
             {STATUS}, c.payout_id IS NOT NULL \
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
            commission,
        }))
    }

    async fn recorded_sale(
        &mut self,
        program_id: i64,
        transaction_id: &str,
    ) -> StoreResult<Option<RecordedSale>> {
        let row = stmt::<DB>(
            "SELECT s.id, (SELECT c.id FROM commissions c WHERE c.sale_id = s.id \
             AND c.kind = 'sale'), s.is_test FROM affiliate_sale_events s \
             WHERE s.processor_event_id = $1 AND s.program_id = $2",
        )
        .bind(transaction_id)
        .bind(program_id)
        .fetch_optional(&mut *self.conn)
        .await?;
        row.map(|r| {
            Ok(RecordedSale {
                sale_id: r.try_get_at(0)?,
                commission_id: r.try_get_at(1)?,
                test_mode: r.try_get_at(2)?,
            })
        })
        .transpose()
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

/// `sql`, an insert of `insert_sale_event!`'s parameters, bound to the sale event `e`.
fn sale_event<'q, DB: Engine>(sql: &'q str, e: &'q SaleEventRow<'_>) -> Stmt<'q, DB> {
    let s = e.sale;
    stmt::<DB>(sql)
        .bind(s.program.id)
        .bind(e.customer_id)
        .bind(e.partner_id)
        .bind(e.click_id)
        .bind(e.customer_key)
        .bind(&s.transaction_id)
        .bind(s.amount_cents)
        .bind(&s.currency)
        .bind(&s.sale_type)
        .bind(s.is_recurring)
        .bind(&s.subscription_id)
        .bind(&s.product_id)
        .bind(&s.metadata)
        .bind(s.is_test)
        .bind(s.at)
        .bind(e.unearned.map(Unearned::as_str))
}
