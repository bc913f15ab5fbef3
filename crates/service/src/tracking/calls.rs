//! The tracking calls of [`App`]: a click, a lead, a sale and a refund, and the program
//! of an API token.

use super::*;

impl App {
    /// The program of an API token, if any (cached briefly): its current token, or the
    /// one a rotation replaced until that stops working.
    pub async fn program_by_token(&self, token: &str) -> Result<Option<Program>> {
        let hash = crate::secrets::hash_token(token);
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
    pub(crate) async fn link_target(
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
    pub(crate) async fn named_program(&self, id: i64) -> Result<Program> {
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
        let sale = self.new_sale(program, s).await?;
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

    /// A sale as the store records it; its reward is decided where it is recorded, from
    /// its partner's group as the transaction reads it.
    /// A sale in another currency converts at the rate of its date, or waits for one
    /// ([`crate::money::rates`]).
    pub(crate) async fn new_sale(&self, program: &Program, s: SaleCommand) -> Result<NewSale> {
        let at = self.now_ms();
        let currency = s.currency.unwrap_or_else(|| program.currency.clone());
        let conversion = self
            .sale_conversion(s.amount_cents, &currency, &program.currency, at)
            .await?;
        Ok(NewSale {
            program: SaleProgram {
                id: program.id,
                currency: program.currency.clone(),
                fraud_rules: program.fraud_rules,
            },
            generated_id: s.transaction_id.is_none(),
            transaction_id: s.transaction_id.unwrap_or_else(|| test_transaction_id(at)),
            amount_cents: s.amount_cents,
            currency,
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
            conversion,
        })
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
