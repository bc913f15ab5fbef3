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
    Ok(())
}

/// The event of a lead.
pub(super) fn lead_created(lead_id: i64) -> Event {
    Event::new(EventType::LeadCreated, Subject::Lead(lead_id))
}
