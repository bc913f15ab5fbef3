//! A lead's flow.

use super::*;

/// The origin rule for browser-mode leads: the program of the lead decides.
pub(super) async fn check_browser_origin(
    tx: &mut dyn Tx,
    l: &LeadCommand,
    program_id: i64,
) -> Result<()> {
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
pub(super) async fn insert_lead_event(tx: &mut dyn Tx, row: &LeadEventRow<'_>) -> Result<i64> {
    tx.insert_lead_event(row).await.map_err(|e| {
        if e.is_conflict("customer_key") {
            Error::Invalid(attribution::lead_refused("lead"))
        } else {
            e.into()
        }
    })
}

/// A lead: moves a `click` customer to `lead`, or stores the lead unattributed.
pub(super) async fn lead_flow(
    tx: &mut dyn Tx,
    deltas: &mut Deltas,
    l: LeadCommand,
    at: i64,
) -> Result<()> {
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
    if let Some(partner_id) = customer.partner_id {
        count_bounties(
            tx,
            deltas,
            customer.program_id,
            partner_id,
            Progress::Lead,
            at,
        )
        .await?;
        let lead = Lead {
            customer: &customer,
            partner_id,
            lead_id,
            email: l.email.as_deref(),
            at,
        };
        lead_commission(tx, deltas, lead).await?;
    }
    Ok(())
}

/// An attributed customer's first lead, as its commission reads it.
struct Lead<'a> {
    customer: &'a Customer,
    partner_id: i64,
    lead_id: i64,
    /// The email the lead gave, if any.
    email: Option<&'a str>,
    at: i64,
}

/// The commission of a lead under its partner's group's lead reward
/// ([`rewards::lead_reward`]): made in the lead's transaction when the partner is approved
/// in the program and its group has one. A customer leads once, so it earns once; the
/// self-referral rule applies to it as to a sale.
async fn lead_commission(tx: &mut dyn Tx, deltas: &mut Deltas, l: Lead<'_>) -> Result<()> {
    let program_id = l.customer.program_id;
    let Some(standing) = tx.partner_standing(l.partner_id, program_id, false).await? else {
        return Ok(());
    };
    let lead_reward = standing.group.rewards.lead.as_ref();
    if !commission::partner_earns(standing.status) || lead_reward.is_none() {
        return Ok(());
    }
    let Some(program) = tx.sale_program(program_id).await? else {
        return Ok(());
    };
    let Some(earned) = rewards::lead_reward(lead_reward, &program.currency) else {
        return Ok(());
    };
    let customer_emails: Vec<&str> = [l.customer.email.as_deref(), l.email]
        .into_iter()
        .flatten()
        .collect();
    let partner = if program.fraud_rules.is_on(Rule::SelfReferral) && !customer_emails.is_empty() {
        tx.partner_emails(l.partner_id).await?
    } else {
        Vec::new()
    };
    let facts = SaleFacts {
        customer_emails,
        partner_emails: partner.iter().map(String::as_str).collect(),
        at: l.at,
        ..SaleFacts::default()
    };
    let verdict = fraud::lead_verdict(&facts, &program.fraud_rules);
    let approval = lifecycle::approval(&verdict);
    let commission = NewCommission {
        program_id,
        kind: CommissionKind::Lead,
        sale_id: None,
        lead_id: Some(l.lead_id),
        bounty_id: None,
        partner_id: l.partner_id,
        partner_program_id: standing.partner_program_id,
        amount_cents: earned.amount_cents,
        currency: &program.currency,
        at: l.at,
        flags: &verdict.flags,
        approval,
        group_id: Some(standing.group.group_id),
        description: Some(&earned.description),
        reward_facts: None,
    };
    let id = tx.insert_commission(&commission).await?;
    if !matches!(approval, lifecycle::Approval::Rejected(_)) {
        deltas.count_commission(program_id, l.partner_id, l.at, earned.amount_cents);
    }
    tx.record_events(program_id, l.at, &[commission_created(id)])
        .await?;
    Ok(())
}

/// The event of a new commission.
pub(super) fn commission_created(id: i64) -> Event {
    Event::new(EventType::CommissionCreated, Subject::Commission(id))
}

/// The event of a lead.
pub(super) fn lead_created(lead_id: i64) -> Event {
    Event::new(EventType::LeadCreated, Subject::Lead(lead_id))
}
