//! A sale's flow: its customer (by key, click id or coupon), its commission and flags,
//! the sale event and its figures; a plain sale's set-based write.

use super::*;

/// The transaction id generated for a test sale sent without one: `test_txn_<epoch-ms>`.
pub(super) fn test_transaction_id(ms: i64) -> String {
    format!("test_txn_{ms}")
}

/// How many milliseconds on a generated test transaction id may move before the sale is
/// refused as a duplicate: far more test sales than arrive in one millisecond.
pub(super) const GENERATED_ID_TRIES: i64 = 1_000;

/// Stores a test sale event. A generated transaction id that is taken (another test sale
/// of the same millisecond, in this process or another one sharing the database) moves on
/// to the next millisecond's, so that generated ids never collide.
pub(super) async fn insert_test_sale_event(tx: &mut dyn Tx, s: &mut NewSale) -> Result<i64> {
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

/// A sale's flow as a job, answering `answer` with its outcome.
pub(super) fn sale_job(answer: oneshot::Sender<Result<SaleOutcome>>, sale: NewSale) -> Job {
    write::job(answer, move |tx, deltas| {
        sale_flow(tx, deltas, sale).boxed()
    })
}

/// Stores a sale event; a transaction id is accepted once. A duplicate names the earlier
/// sale when it is of the same program, read in this transaction, which sees a sale
/// recorded earlier in the same batch as well as one committed by another process.
pub(super) async fn insert_sale_event(tx: &mut dyn Tx, row: &SaleEventRow<'_>) -> Result<i64> {
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
pub(super) async fn sale_customer(
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
pub(super) async fn coupon_customer(
    tx: &mut dyn Tx,
    s: &NewSale,
    k: CouponTarget,
) -> Result<Customer> {
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
pub(super) async fn attributed_customer(tx: &mut dyn Tx, s: &NewSale) -> Result<Customer> {
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

/// The fraud rules' verdict on a sale's commission ([`fraud::verdict`]). It gathers only
/// the facts the program's rules that are on read: the customer's emails (its lead's, the
/// sale's) and the partner's for `self_referral` and `disposable_email`; the customer's
/// latest click, its IP and time, for `duplicate_ip`, `partner_ip` and
/// `fast_conversion`, each IP looked up through its index over [`fraud::LOOKBACK_MS`].
pub(super) async fn commission_flags(
    tx: &mut dyn Tx,
    c: &Customer,
    s: &NewSale,
    partner_id: i64,
) -> Result<Verdict> {
    let rules = &s.program.fraud_rules;
    let customer: Vec<&str> = [c.email.as_deref(), s.customer_email.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    let partner = if rules.is_on(Rule::SelfReferral) && !customer.is_empty() {
        tx.partner_emails(partner_id).await?
    } else {
        Vec::new()
    };
    let mut facts = SaleFacts {
        customer_emails: customer,
        partner_emails: partner.iter().map(String::as_str).collect(),
        at: s.at,
        ..SaleFacts::default()
    };
    let by_click = [Rule::DuplicateIp, Rule::PartnerIp, Rule::FastConversion];
    if by_click.iter().any(|r| rules.is_on(*r)) {
        if let Some((ip, click_at)) = tx.customer_click(c.id).await? {
            facts.click_at = Some(click_at);
            let since = s.at.saturating_sub(fraud::LOOKBACK_MS);
            if let Some(ip) = ip.as_deref() {
                if rules.is_on(Rule::DuplicateIp) {
                    facts.ip_converted_before =
                        tx.ip_converted_before(partner_id, ip, c.id, since).await?;
                }
                if rules.is_on(Rule::PartnerIp) {
                    facts.ip_partner_signed_in =
                        tx.partner_signed_in_from(partner_id, ip, since).await?;
                }
            }
        }
    }
    Ok(fraud::verdict(&facts, rules))
}

/// A sale: the sale event, its commission, the customer's conversion and the figures.
/// Renewals stay with the partner of the subscription's first sale and earn within the
/// program's recurring limit counted from that sale.
pub(crate) async fn sale_flow(
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
    let standing = partner_standing(tx, partner_id, s.program.id).await?;
    // What the reward decision knew, kept for when a rate decides the amount.
    let mut waiting: Option<WaitingFacts> = None;
    let reward = if commission::partner_earns(standing.status) {
        let country = match standing.group.rewards.sale.as_ref() {
            Some(r) if r.reads_country() => tx.customer_country(c.id).await?,
            _ => None,
        };
        let (pending_sales, pending_revenue) = deltas.partner_pending(partner_id, s.program.id);
        let facts = rewards::SaleFacts {
            amount_cents: s.program_amount(),
            product_id: s.product_id.as_deref(),
            recurring: s.is_recurring,
            customer_country: country.as_deref(),
            partner_sales: standing.sales.saturating_add(pending_sales),
            partner_revenue_cents: standing.revenue_figure.saturating_add(pending_revenue),
            first_sale_at,
            at: s.at,
        };
        if s.awaits_rate() {
            waiting = Some(WaitingFacts::of(&facts, country.as_deref()));
        }
        rewards::sale_reward(
            standing.group.rewards.sale.as_ref(),
            &facts,
            &s.program.currency,
        )
    } else {
        SaleReward::NoReward
    };
    let unearned = match &reward {
        _ if !commission::partner_earns(standing.status) => Some(Unearned::PartnerNotApproved),
        SaleReward::Earns(_) => None,
        SaleReward::RecurringPeriodEnded => Some(Unearned::RecurringPeriodEnded),
        SaleReward::NoReward => Some(Unearned::NoReward),
    };
    let row = SaleEventRow {
        sale: &s,
        customer_id: Some(c.id),
        partner_id: Some(partner_id),
        click_id: Some(&c.click_id),
        customer_key: s.customer_key.as_deref().or(c.customer_key.as_deref()),
        unearned,
    };
    let sale_id = insert_sale_event(tx, &row).await?;
    let (commission_id, commission_cents) = if let SaleReward::Earns(earned) = reward {
        let verdict = commission_flags(tx, &c, &s, partner_id).await?;
        let approval = lifecycle::approval(&verdict);
        let waiting = waiting.map(|w| w.with_approval(approval).to_json());
        let description = match &waiting {
            Some(_) => WaitingFacts::description(s.amount_cents, &s.currency),
            None => earned.description.clone(),
        };
        let amount_cents = if waiting.is_some() {
            0
        } else {
            earned.amount_cents
        };
        let commission = NewCommission {
            program_id: s.program.id,
            kind: CommissionKind::Sale,
            sale_id: Some(sale_id),
            lead_id: None,
            bounty_id: None,
            partner_id,
            partner_program_id: standing.partner_program_id,
            amount_cents,
            currency: &s.program.currency,
            at: s.at,
            flags: &verdict.flags,
            approval,
            group_id: Some(standing.group.group_id),
            description: Some(&description),
            reward_facts: waiting.as_deref(),
        };
        // A commission created rejected counts in no figure, as one an owner rejected.
        let counted = match approval {
            lifecycle::Approval::Rejected(_) => 0,
            _ => amount_cents,
        };
        (Some(tx.insert_commission(&commission).await?), counted)
    } else {
        (None, 0)
    };
    if c.first_purchase_date.is_none() {
        // Before the conversion is written: the statement keeps first purchases only.
        tx.record_conversion_ip(partner_id, c.id, s.at).await?;
    }
    tx.mark_converted(c.id, s.at).await?;
    let sold = Progress::Sale {
        amount_cents: s.program_amount(),
    };
    count_bounties(tx, deltas, s.program.id, partner_id, sold, s.at).await?;
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
        amount_cents: s.program_amount(),
        commission_cents,
        converts: c.first_purchase_date.is_none(),
    });
    Ok(outcome)
}

/// The partner's record in the sale's program, read again under a lock when its group's
/// sale reward reads the partner's totals, so that no other process changes them before
/// this transaction ends.
pub(super) async fn partner_standing(
    tx: &mut dyn Tx,
    partner_id: i64,
    program_id: i64,
) -> Result<PartnerStanding> {
    let missing = || Error::invalid("No partner-program relationship found for this customer");
    let standing = tx
        .partner_standing(partner_id, program_id, false)
        .await?
        .ok_or_else(missing)?;
    let reads_totals = standing
        .group
        .rewards
        .sale
        .as_ref()
        .is_some_and(|r| r.reads_partner_totals());
    if !reads_totals {
        return Ok(standing);
    }
    tx.partner_standing(partner_id, program_id, true)
        .await?
        .ok_or_else(missing)
}

/// A plain sale that the committer may record with its batch.
pub(super) struct PlainSaleWrite {
    pub(super) sale: NewSale,
    pub(super) answer: oneshot::Sender<Result<SaleOutcome>>,
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
