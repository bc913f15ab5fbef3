// Stripe webhook events, each run as one job of the group committer: the event id is
// claimed in the same transaction as the event's effect, so a redelivery changes
// nothing. Included by `sqlite.rs` and `postgres.rs` inside `mod webhooks`.

/// Processes one verified event for `program`; returns what was done.
pub async fn stripe_event(
    conn: &mut Conn,
    deltas: &mut Deltas,
    program: SaleProgram,
    event: stripe::Event,
    at: i64,
) -> Result<String> {
    let claimed = sqlx::query(
        "INSERT INTO stripe_events (program_id, event_id, event_type, outcome, received_at) \
         VALUES ($1, $2, $3, '', $4) ON CONFLICT (program_id, event_id) DO NOTHING",
    )
    .bind(program.id)
    .bind(&event.id)
    .bind(&event.kind)
    .bind(at)
    .execute(&mut *conn)
    .await?;
    if claimed.rows_affected() == 0 {
        return Ok("duplicate event: already processed".into());
    }
    let outcome = match event.action {
        stripe::Action::Ignore(reason) => format!("ignored: {reason}"),
        stripe::Action::Account(a) => account(conn, program.id, a, at).await?,
        stripe::Action::Sale(p) => payment(conn, deltas, program.clone(), p, at).await?,
        stripe::Action::Refund(r) => charge_refund(conn, deltas, program.id, r, at).await?,
    };
    sqlx::query("UPDATE stripe_events SET outcome = $1 WHERE program_id = $2 AND event_id = $3")
        .bind(&outcome)
        .bind(program.id)
        .bind(&event.id)
        .execute(&mut *conn)
        .await?;
    Ok(outcome)
}

async fn account(
    conn: &mut Conn,
    program_id: i64,
    a: stripe::AccountState,
    at: i64,
) -> Result<String> {
    let status = a.status();
    sqlx::query(
        "UPDATE programs SET payment_status = $1, payment_account_id = $2, charges_enabled = $3, \
         payouts_enabled = $4, details_submitted = $5, \
         connection_date = CASE WHEN $1 = 'connected' THEN COALESCE(connection_date, $6) ELSE connection_date END, \
         updated_at = $6 WHERE id = $7",
    )
    .bind(status)
    .bind(&a.account_id)
    .bind(a.charges_enabled)
    .bind(a.payouts_enabled)
    .bind(a.details_submitted)
    .bind(at)
    .bind(program_id)
    .execute(&mut *conn)
    .await?;
    Ok(format!("payment account {status}"))
}

/// Remembers the payment ids a later `charge.refunded` will name.
async fn attach_payment_ids(conn: &mut Conn, program_id: i64, p: &stripe::Payment) -> Result<()> {
    sqlx::query(
        "UPDATE affiliate_sale_events SET payment_intent_id = COALESCE(payment_intent_id, $1), \
         charge_id = COALESCE(charge_id, $2) WHERE program_id = $3 AND processor_event_id = $4",
    )
    .bind(&p.payment_intent)
    .bind(&p.charge)
    .bind(program_id)
    .bind(&p.transaction_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn payment(
    conn: &mut Conn,
    deltas: &mut Deltas,
    program: SaleProgram,
    p: stripe::Payment,
    at: i64,
) -> Result<String> {
    if p.attribution.program_id.is_some_and(|id| id != program.id) {
        return Ok("ignored: metadata names another program".into());
    }
    let recorded: Option<i64> = sqlx::query_scalar(
        "SELECT program_id FROM affiliate_sale_events WHERE processor_event_id = $1",
    )
    .bind(&p.transaction_id)
    .fetch_optional(&mut *conn)
    .await?;
    if recorded.is_some() {
        // A subscription's first payment arrives as a checkout session and as its first
        // invoice; both name the invoice, so the second finds the sale recorded.
        attach_payment_ids(conn, program.id, &p).await?;
        return Ok("sale already recorded".into());
    }
    let program_id = program.id;
    let currency = money::normalize_currency(&p.currency).unwrap_or_else(|| "usd".into());
    let metadata = serde_json::json!({
        "source": "stripe",
        "payment_intent": p.payment_intent,
        "charge": p.charge,
    });
    let sale = NewSale {
        program,
        transaction_id: p.transaction_id.clone(),
        amount_cents: p.amount,
        currency,
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
        product_id: None,
        metadata: Some(metadata.to_string()),
        is_test: false,
        at,
    };
    match track::sale(conn, deltas, sale).await {
        Ok(outcome) => {
            attach_payment_ids(conn, program_id, &p).await?;
            Ok(match outcome.commission_id {
                Some(_) => "sale recorded".into(),
                None => "sale recorded without commission (recurring period ended)".into(),
            })
        }
        // Attribution failures are answered 200 so that Stripe does not retry a payment
        // that can never be attributed; the reason is kept with the event.
        Err(Error::BadRequest(reason)) => Ok(format!("not attributed: {reason}")),
        Err(e) => Err(e),
    }
}

/// `charge.refunded`: Stripe reports the cumulative amount refunded; the refund applied is
/// what that adds to what the sale already had refunded.
async fn charge_refund(
    conn: &mut Conn,
    deltas: &mut Deltas,
    program_id: i64,
    r: stripe::ChargeRefund,
    at: i64,
) -> Result<String> {
    // One index lookup per way of naming the sale (an OR of them scans the program's
    // sales), the earliest sale found.
    let row = sqlx::query(
        "SELECT processor_event_id, refunded_cents FROM affiliate_sale_events WHERE id = \
         (SELECT MIN(id) FROM ( \
         SELECT id FROM affiliate_sale_events WHERE program_id = $1 AND charge_id = $2 \
         AND NOT is_test UNION ALL \
         SELECT id FROM affiliate_sale_events WHERE program_id = $1 AND payment_intent_id = $3 \
         AND NOT is_test UNION ALL \
         SELECT id FROM affiliate_sale_events WHERE processor_event_id IN ($3, $4) \
         AND program_id = $1 AND NOT is_test) found)",
    )
    .bind(program_id)
    .bind(&r.charge)
    .bind(&r.payment_intent)
    .bind(&r.invoice)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Ok("ignored: no tracked sale for this charge".into());
    };
    let transaction_id: String = row.try_get(0)?;
    let already: i64 = row.try_get(1)?;
    let full = r.amount_refunded >= r.amount;
    let more = r.amount_refunded - already;
    if !full && more <= 0 {
        return Ok("refund already applied".into());
    }
    let refund = NewRefund {
        program_id,
        transaction_id,
        amount_cents: if full { None } else { Some(more) },
        reason: Some("stripe: charge.refunded".into()),
        is_test: false,
        at,
    };
    match track::refund(conn, deltas, refund).await {
        Ok(o) => Ok(format!("refund {}", o.status.as_str())),
        Err(Error::BadRequest(reason)) => Ok(format!("refund not applied: {reason}")),
        Err(e) => Err(e),
    }
}
