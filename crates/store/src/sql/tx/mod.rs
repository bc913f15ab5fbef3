//! [`Tx`]: the statements of the tracking flows, on the write connection's open
//! transaction; the refunds' in `refunds`, the payment processor's in `processor`.

mod processor;
mod refunds;

use async_trait::async_trait;

use super::engine::{stmt, Engine, Stmt};
use super::flags_text;
use super::write::WriteConnection;
use super::{named_at, parse_origins};
use crate::error::{StoreError, StoreResult};
use crate::groups::GroupRewards;
use crate::model::{
    ClickEventRow, CouponTarget, Customer, LeadEventRow, NewCommission, NewCustomer,
    PartnerProgram, PartnerStanding, RecordedSale, SaleConversion, SaleEventRow, SaleProgram,
};
use crate::tx::Tx;
use reftrack_domain::commission::Unearned;
use reftrack_domain::fraud;
use reftrack_domain::lifecycle;
use reftrack_domain::self_referral::email_key;
use reftrack_domain::status::PartnerStatus;

/// The insert of a sale event unless its `processor_event_id` is taken, returning its
/// id; [`sale_event`] binds it.
const INSERT_SALE_EVENT_IF_NEW: &str =
    "INSERT INTO affiliate_sale_events (program_id, customer_id, partner_id, click_id, \
    customer_key, processor_event_id, amount_cents, currency, sale_type, payment_status, \
    is_recurring, subscription_id, product_id, metadata, is_test, sale_date, created_at, \
    unearned, converted_amount_cents, exchange_rate, rate_date, awaiting_rate) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'paid', $10, $11, $12, $13, $14, $15, $15, \
    $16, $17, $18, $19, $20) ON CONFLICT (processor_event_id) DO NOTHING RETURNING id";

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
             email_key = CASE WHEN $3 IS NULL THEN email_key ELSE $5 END, \
             email_disposable = CASE WHEN $3 IS NULL THEN email_disposable ELSE $6 END, \
             updated_at = $1 WHERE id = $4 AND customer_status = 'click'",
        )
        .bind(at)
        .bind(customer_key)
        .bind(email)
        .bind(customer_id)
        .bind(email.map(email_key))
        .bind(email.map(fraud::is_disposable))
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
             device_os, browser_name, is_test, click_timestamp, created_at, ip) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
             $18, $19, $20, $21, $21, $22) RETURNING id",
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
        .bind(&d.ip)
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
        Ok(sale_event::<DB>(INSERT_SALE_EVENT_IF_NEW, e)
            .scalar_optional(&mut *self.conn)
            .await?)
    }

    async fn insert_commission(&mut self, c: &NewCommission<'_>) -> StoreResult<i64> {
        let state = lifecycle::new_commission(c.approval);
        Ok(stmt::<DB>(
            "INSERT INTO commissions (program_id, sale_id, partner_id, partner_program_id, \
             amount_cents, currency, status, flags, manual_approval, created_at, updated_at, \
             reject_reason, group_id, description, kind, lead_id, approved_at, bounty_id, \
             awaiting_rate, reward_facts) \
             VALUES ($1, $2, $3, $4, $5, $6, $10, $8, $9, $7, $7, $11, $12, $13, $14, $15, \
             CASE WHEN $10 = 'approved' THEN $7 END, $16, $17, $18) RETURNING id",
        )
        .bind(c.program_id)
        .bind(c.sale_id)
        .bind(c.partner_id)
        .bind(c.partner_program_id)
        .bind(c.amount_cents)
        .bind(c.currency)
        .bind(c.at)
        .bind(flags_text(c.flags))
        // A commission waiting for a rate comes due by no hold until its amount is known.
        .bind(state.manual_approval || c.reward_facts.is_some())
        .bind(state.status.as_str())
        .bind(state.reject_reason)
        .bind(c.group_id)
        .bind(c.description)
        .bind(c.kind.as_str())
        .bind(c.lead_id)
        .bind(c.bounty_id)
        .bind(c.reward_facts.is_some())
        .bind(c.reward_facts)
        .scalar(&mut *self.conn)
        .await?)
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

    async fn sale_program(&mut self, program_id: i64) -> StoreResult<Option<SaleProgram>> {
        let row = stmt::<DB>("SELECT currency, fraud_rules FROM programs WHERE id = $1")
            .bind(program_id)
            .fetch_optional(&mut *self.conn)
            .await?;
        let Some(r) = row else { return Ok(None) };
        Ok(Some(SaleProgram {
            id: program_id,
            currency: r.try_get_at(0)?,
            fraud_rules: super::programs::stored_fraud_rules(r.try_get_at(1)?)?,
        }))
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

    async fn partner_standing(
        &mut self,
        partner_id: i64,
        program_id: i64,
        lock: bool,
    ) -> StoreResult<Option<PartnerStanding>> {
        let sql = format!(
            "SELECT pp.id, pp.status, g.id, g.version, g.rewards, pp.total_sales, \
             pp.total_revenue_cents FROM partner_programs pp \
             JOIN partner_groups g ON g.id = pp.group_id \
             WHERE pp.partner_id = $1 AND pp.program_id = $2 {}",
            if lock { DB::ROW_LOCK_OF_FIRST } else { "" }
        );
        let row = stmt::<DB>(&sql)
            .bind(partner_id)
            .bind(program_id)
            .fetch_optional(&mut *self.conn)
            .await?;
        let Some(r) = row else { return Ok(None) };
        let group_id: i64 = r.try_get_at(2)?;
        let version: i64 = r.try_get_at(3)?;
        let text: String = r.try_get_at(4)?;
        Ok(Some(PartnerStanding {
            partner_program_id: r.try_get_at(0)?,
            status: named_at(&r, 1)?,
            group: GroupRewards {
                group_id,
                version,
                rewards: self.rewards.get(group_id, version, &text)?,
            },
            sales: r.try_get_at(5)?,
            revenue_figure: r.try_get_at(6)?,
        }))
    }

    async fn customer_country(&mut self, customer_id: i64) -> StoreResult<Option<String>> {
        // As `customer_click` reads the latest click: by the index on (customer, id).
        let country: Option<Option<String>> = stmt::<DB>(
            "SELECT geo_country FROM affiliate_click_events WHERE customer_id = $1 \
             ORDER BY id DESC LIMIT 1",
        )
        .bind(customer_id)
        .scalar_optional(&mut *self.conn)
        .await?;
        Ok(country.flatten().map(|c| c.to_ascii_uppercase()))
    }

    async fn set_partner_group(
        &mut self,
        program_id: i64,
        partner_id: i64,
        group_id: i64,
    ) -> StoreResult<Option<PartnerProgram>> {
        let lock = format!(
            "SELECT id FROM partner_groups WHERE id = $1 AND program_id = $2 {}",
            DB::ROW_LOCK
        );
        if !stmt::<DB>(&lock)
            .bind(group_id)
            .bind(program_id)
            .has_row(&mut *self.conn)
            .await?
        {
            return Err(StoreError::NotFound("group"));
        }
        let sql = format!(
            "UPDATE partner_programs SET group_id = $1 WHERE program_id = $2 \
             AND partner_id = $3 RETURNING {}",
            super::partner_links::PARTNER_PROGRAM_COLUMNS
        );
        Ok(stmt::<DB>(&sql)
            .bind(group_id)
            .bind(program_id)
            .bind(partner_id)
            .record_optional(&mut *self.conn)
            .await?)
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
        group_id: Option<i64>,
        at: i64,
    ) -> StoreResult<PartnerProgram> {
        let sql = format!(
            "INSERT INTO partner_programs (partner_id, program_id, status, group_id, \
             created_at) VALUES ($1, $2, $3, COALESCE($5, (SELECT id FROM partner_groups \
             WHERE program_id = $2 AND is_default)), $4) \
             RETURNING {}",
            super::partner_links::PARTNER_PROGRAM_COLUMNS
        );
        stmt::<DB>(&sql)
            .bind(partner_id)
            .bind(program_id)
            .bind(status.as_str())
            .bind(at)
            .bind(group_id)
            .record(&mut *self.conn)
            .await
            .map_err(|e| StoreError::from(e).conflict_on("partner_program"))
    }
}

/// `sql`, an insert of [`INSERT_SALE_EVENT_IF_NEW`]'s parameters, bound to the sale event
/// `e`.
fn sale_event<'q, DB: Engine>(sql: &'q str, e: &'q SaleEventRow<'_>) -> Stmt<'q, DB> {
    let s = e.sale;
    let converted = match &s.conversion {
        SaleConversion::Converted {
            amount_cents,
            rate,
            rate_date,
        } => Some((*amount_cents, rate.as_str(), rate_date.as_str())),
        _ => None,
    };
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
        .bind(converted.map(|c| c.0))
        .bind(converted.map(|c| c.1))
        .bind(converted.map(|c| c.2))
        .bind(s.awaits_rate() && !s.is_test)
}
