//! Paying partners: commission lists, approvals and rejections, balances, and payouts
//! from creation to paid or cancelled. Each change is decided by
//! [`reftrack_domain::lifecycle`] on the state read in the write transaction, and written
//! with a guard on that state.

use std::collections::HashMap;

use futures::stream::BoxStream;
use futures::FutureExt;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::access::Caller;
use crate::notice_mail::{paid_mail, send_notices, PaidNotice};
use crate::pages::{chunks, id_filter, listed, named_filter, probe, PageParams};
use crate::{App, Error, Listed, Result};
use reftrack_domain::access::Access;
use reftrack_domain::audit::{Action, Entry, Origin, Scope, Target};
use reftrack_domain::lifecycle::{self, Conflict, PayoutSkip};
use reftrack_domain::money::display_amount;
use reftrack_domain::status::PayoutStatus;
use reftrack_domain::webhooks::EventType;
use reftrack_store::webhooks::{Event, Subject};
use reftrack_store::{
    Balance, CommissionFilter, CommissionLock, CommissionRow, Page, Payout, PayoutRules, Record,
};

/// Most commissions one write of the approval job records: a few milliseconds of the
/// writer's time.
const APPROVALS_PER_WRITE: i64 = 2_000;

/// The filters of the commission list: `status`, `partner_id`, and `from` / `to` dates
/// (`YYYY-MM-DD`, inclusive, UTC).
#[derive(Debug, Default, Clone)]
pub struct CommissionParams {
    pub status: Option<String>,
    pub partner_id: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    /// `true`: only commissions held for review.
    pub flagged: Option<String>,
}

/// The body of the call that rejects a commission.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectBody {
    /// Why it never pays (fraud, test order, …), 1 to 500 characters.
    pub reason: String,
}

/// The body of the call that marks a payout paid.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MarkPaidBody {
    /// The transfer's reference in the tool that sent the money, up to 255 characters.
    pub reference: Option<String>,
}

fn date_bound(field: &str, value: Option<&str>, end: bool) -> Result<Option<i64>> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let day = chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d")
        .ok()
        .filter(|d| d.format("%Y-%m-%d").to_string() == v)
        .ok_or_else(|| Error::invalid(format!("{field} must be a date (YYYY-MM-DD)")))?;
    let day = if end { day.succ_opt() } else { Some(day) };
    Ok(day.map(|d| {
        d.and_hms_opt(0, 0, 0)
            .expect("midnight")
            .and_utc()
            .timestamp_millis()
    }))
}

impl CommissionParams {
    /// The filter these parameters name, or the first invalid one's error.
    pub(crate) fn filter(&self) -> Result<CommissionFilter> {
        let status = named_filter("status", self.status.as_deref())?;
        let partner_id = id_filter("partner_id", self.partner_id.as_deref())?;
        let from_ms = date_bound("from", self.from.as_deref(), false)?;
        let to_ms = date_bound("to", self.to.as_deref(), true)?;
        if let (Some(f), Some(t)) = (from_ms, to_ms) {
            if f >= t {
                return Err(Error::invalid("from must not be after to"));
            }
        }
        let flagged = match self.flagged.as_deref() {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => return Err(Error::invalid("flagged must be true or false")),
        };
        Ok(CommissionFilter {
            status,
            partner_id,
            from_ms,
            to_ms,
            flagged,
        })
    }
}

/// `commission.approved` of each of `ids`.
fn approvals(ids: &[i64]) -> Vec<Event> {
    ids.iter()
        .map(|id| Event::new(EventType::CommissionApproved, Subject::Commission(*id)))
        .collect()
}

/// The audit entry of an owner's decision `action` on the commission `id`, as `c` stood:
/// its partner, amount and currency.
fn decision_entry(at: i64, origin: &Origin, action: Action, id: i64, c: &CommissionLock) -> Entry {
    Entry::new(
        at,
        origin,
        action,
        Scope::Program(c.program_id),
        Target::commission(id),
    )
    .with_details(serde_json::json!({
        "partner_id": c.partner_id,
        "amount_cents": c.net_cents,
        "currency": c.currency,
    }))
}

fn conflict(c: Conflict) -> Error {
    Error::Conflict(c.0)
}

fn commission_missing() -> Error {
    Error::NotFound("Commission not found".into())
}

fn payout_missing() -> Error {
    Error::NotFound("Payout not found".into())
}

impl App {
    /// One page of a program's commissions.
    pub async fn list_commissions(
        &self,
        caller: &Caller,
        program_id: i64,
        params: &CommissionParams,
        page: &PageParams,
    ) -> Result<Listed<CommissionRow>> {
        let filter = params.filter()?;
        let page = page.page()?;
        self.readable_program(caller, program_id).await?;
        self.commission_page(program_id, &filter, page).await
    }

    /// One page of a program's commissions matching `filter`, for a caller already
    /// allowed to read them.
    pub(crate) async fn commission_page(
        &self,
        program_id: i64,
        filter: &CommissionFilter,
        page: Page,
    ) -> Result<Listed<CommissionRow>> {
        let rows = self
            .store
            .commissions(program_id, filter, probe(page), self.now_ms())
            .await?;
        Ok(listed(rows, page, |c| c.id))
    }

    /// Every commission of a program matching `params`, newest first, read in chunks as
    /// the stream is polled (an export holds one chunk in memory, whatever its size).
    pub async fn export_commissions(
        &self,
        caller: &Caller,
        program_id: i64,
        params: &CommissionParams,
    ) -> Result<BoxStream<'static, Result<Vec<CommissionRow>>>> {
        let filter = params.filter()?;
        self.readable_program(caller, program_id).await?;
        Ok(self.commission_chunks(program_id, filter))
    }

    /// Every commission of a program matching `filter`, in chunks, for a caller already
    /// allowed to read them.
    pub(crate) fn commission_chunks(
        &self,
        program_id: i64,
        filter: CommissionFilter,
    ) -> BoxStream<'static, Result<Vec<CommissionRow>>> {
        let now = self.now_ms();
        chunks(
            self.store.clone(),
            move |store, page| {
                let filter = filter.clone();
                async move { store.commissions(program_id, &filter, page, now).await }.boxed()
            },
            |c: &CommissionRow| c.id,
        )
    }

    /// One commission, read after a change to it.
    pub(crate) async fn commission(&self, id: i64) -> Result<CommissionRow> {
        self.store
            .commission(id, self.now_ms())
            .await?
            .ok_or_else(commission_missing)
    }

    /// Approves a pending commission ahead of its hold.
    pub async fn approve_commission(&self, caller: &Caller, id: i64) -> Result<CommissionRow> {
        self.allow(caller, Record::Commission(id), Access::Change)
            .await?;
        let at = self.now_ms();
        let origin = caller.origin.clone();
        self.write(move |tx, _| {
            async move {
                let c = tx
                    .commission_lock(id, at)
                    .await?
                    .ok_or_else(commission_missing)?;
                lifecycle::approve(c.state).map_err(conflict)?;
                if !tx.approve_commission(id, at).await? {
                    return Err(Error::Conflict(
                        "The commission changed while it was being approved; try again".into(),
                    ));
                }
                let entry = decision_entry(at, &origin, Action::CommissionApproved, id, &c);
                tx.record_audit(&[entry]).await?;
                tx.record_events(c.program_id, at, &approvals(&[id]))
                    .await?;
                Ok(())
            }
            .boxed()
        })
        .await?;
        self.commission(id).await
    }

    /// Rejects a pending or unpaid approved commission: it never pays, and the program's
    /// figures no longer count it.
    pub async fn reject_commission(
        &self,
        caller: &Caller,
        id: i64,
        b: RejectBody,
    ) -> Result<CommissionRow> {
        self.allow(caller, Record::Commission(id), Access::Change)
            .await?;
        let reason = b.reason.trim().to_string();
        if reason.is_empty() || reason.chars().count() > 500 {
            return Err(Error::invalid("reason must be 1 to 500 characters"));
        }
        let at = self.now_ms();
        let origin = caller.origin.clone();
        self.write(move |tx, deltas| {
            async move {
                let c = tx
                    .commission_lock(id, at)
                    .await?
                    .ok_or_else(commission_missing)?;
                lifecycle::reject(c.state).map_err(conflict)?;
                if !tx.reject_commission(id, Some(&reason), at).await? {
                    return Err(Error::Conflict(
                        "The commission changed while it was being rejected; try again".into(),
                    ));
                }
                let mut entry = decision_entry(at, &origin, Action::CommissionRejected, id, &c);
                entry.details["reason"] = serde_json::json!(reason);
                tx.record_audit(&[entry]).await?;
                deltas.count_commission_withdrawn(
                    c.program_id,
                    c.partner_id,
                    c.sale_date,
                    c.net_cents,
                );
                Ok(())
            }
            .boxed()
        })
        .await?;
        self.commission(id).await
    }

    /// One page of a program's balances, one row per partner with commissions.
    pub async fn balances(
        &self,
        caller: &Caller,
        program_id: i64,
        page: &PageParams,
    ) -> Result<Listed<Balance>> {
        let page = page.page()?;
        self.readable_program(caller, program_id).await?;
        let rows = self
            .store
            .balances(program_id, probe(page), self.now_ms())
            .await?;
        Ok(listed(rows, page, |b| b.partner_id))
    }

    /// Why a new payout of the program would leave out each of the partners
    /// `partner_ids` that has something due (a partner it would pay, or with nothing
    /// due, is not in the map).
    pub async fn payout_skips(
        &self,
        caller: &Caller,
        program_id: i64,
        partner_ids: &[i64],
    ) -> Result<HashMap<i64, Vec<PayoutSkip>>> {
        let program = self.readable_program(caller, program_id).await?;
        let rules = PayoutRules {
            hold_ms: lifecycle::hold_ms(program.commission_hold_days),
            min_payout_cents: program.min_payout_cents,
            currency: program.currency.clone(),
        };
        let candidates = self
            .store
            .payout_candidates(program_id, partner_ids, &rules, self.now_ms())
            .await?;
        Ok(candidates
            .into_iter()
            .map(|c| {
                let skips = lifecycle::payout_skips(
                    c.status,
                    c.has_payout_email,
                    c.due_cents,
                    rules.min_payout_cents,
                );
                (c.partner_id, skips)
            })
            .filter(|(_, skips)| !skips.is_empty())
            .collect())
    }

    /// Records as approved every pending commission whose hold has passed (the reads show
    /// them approved already; this makes it a fact of the record). Returns how many.
    pub async fn approve_due_commissions(&self) -> Result<u64> {
        self.approve_due_commissions_by(APPROVALS_PER_WRITE).await
    }

    /// [`Self::approve_due_commissions`] in writes of at most `per_write` commissions
    /// each, so that a program with very many commissions coming due at once never holds
    /// the writer (and the tracking API's writes queued behind it) for long.
    pub async fn approve_due_commissions_by(&self, per_write: i64) -> Result<u64> {
        let mut approved = 0;
        for (program_id, hold_days) in self.store.program_holds().await? {
            let hold_ms = lifecycle::hold_ms(hold_days);
            loop {
                let at = self.now_ms();
                let n = self
                    .write(move |tx, _| {
                        async move {
                            let ids = tx
                                .approve_due(program_id, hold_ms, at, Some(per_write))
                                .await?;
                            tx.record_events(program_id, at, &approvals(&ids)).await?;
                            Ok(ids.len() as u64)
                        }
                        .boxed()
                    })
                    .await?;
                approved += n;
                if n < per_write.max(1) as u64 {
                    break;
                }
            }
        }
        Ok(approved)
    }

    /// Creates a payout of every approved partner's due balance that reaches the
    /// program's minimum and has a payout email. The payout holds those commissions: no
    /// other payout can take them, whichever process creates it.
    pub async fn create_payout(&self, caller: &Caller, program_id: i64) -> Result<Payout> {
        self.allow(caller, Record::Program(program_id), Access::Change)
            .await?;
        let at = self.now_ms();
        let origin = caller.origin.clone();
        // A payout may take every commission of a large program: seconds of work.
        self.write_long(move |tx, _| {
            async move {
                let rules = tx
                    .lock_payout_rules(program_id)
                    .await?
                    .ok_or_else(|| Error::NotFound("Program not found".into()))?;
                // The approvals the payout is about to record in passing are recorded
                // first, with their messages.
                let due = tx.approve_due(program_id, rules.hold_ms, at, None).await?;
                tx.record_events(program_id, at, &approvals(&due)).await?;
                let id = tx.insert_payout(program_id, &rules.currency, at).await?;
                if tx.claim_commissions(program_id, id, &rules, at).await? == 0 {
                    return Err(Error::Conflict(format!(
                        "No partner qualifies for a payout: none is approved in the program \
                         with a payout email and an approved, unpaid balance of at least {} \
                         (min_payout_cents {})",
                        display_amount(rules.min_payout_cents, &rules.currency),
                        rules.min_payout_cents
                    )));
                }
                tx.write_payout_items(id).await?;
                let created = Event::new(EventType::PayoutCreated, Subject::Payout(id));
                tx.record_events(program_id, at, &[created]).await?;
                let payout = tx.payout_in_tx(id).await?.ok_or_else(payout_missing)?;
                let entry = Entry::new(
                    at,
                    &origin,
                    Action::PayoutCreated,
                    Scope::Program(program_id),
                    Target::payout(id),
                )
                .with_details(serde_json::json!({
                    "total_cents": payout.total_cents,
                    "currency": payout.currency,
                    "partners": payout.items.as_ref().map(Vec::len),
                }));
                tx.record_audit(&[entry]).await?;
                Ok(payout)
            }
            .boxed()
        })
        .await
    }

    /// One page of a program's payouts, without their items.
    pub async fn list_payouts(
        &self,
        caller: &Caller,
        program_id: i64,
        page: &PageParams,
    ) -> Result<Listed<Payout>> {
        let page = page.page()?;
        self.readable_program(caller, program_id).await?;
        let rows = self.store.payouts(program_id, probe(page)).await?;
        Ok(listed(rows, page, |p| p.id))
    }

    /// Every payout of a program, newest first, in chunks (see [`Self::export_commissions`]).
    pub async fn export_payouts(
        &self,
        caller: &Caller,
        program_id: i64,
    ) -> Result<BoxStream<'static, Result<Vec<Payout>>>> {
        self.readable_program(caller, program_id).await?;
        Ok(chunks(
            self.store.clone(),
            move |store, page| async move { store.payouts(program_id, page).await }.boxed(),
            |p: &Payout| p.id,
        ))
    }

    /// One payout with its items.
    pub async fn payout(&self, caller: &Caller, id: i64) -> Result<Payout> {
        self.allow(caller, Record::Payout(id), Access::Read).await?;
        self.store.payout(id).await?.ok_or_else(payout_missing)
    }

    /// Marks a pending payout paid: its commissions become paid.
    pub async fn mark_payout_paid(
        &self,
        caller: &Caller,
        id: i64,
        b: MarkPaidBody,
    ) -> Result<Payout> {
        self.allow(caller, Record::Payout(id), Access::Change)
            .await?;
        let reference = b.reference.map(|r| r.trim().to_string());
        if reference.as_ref().is_some_and(|r| r.chars().count() > 255) {
            return Err(Error::invalid("reference must be at most 255 characters"));
        }
        let payout = self
            .settle_payout(caller, id, reference, lifecycle::mark_paid)
            .await?;
        self.notify_paid(&payout).await;
        Ok(payout)
    }

    /// Mails each partner with an account what a paid payout sent it, when the server
    /// mails; after the answer (a payout may pay thousands), and a failure is only logged.
    async fn notify_paid(&self, payout: &Payout) {
        let Some(mailer) = self.mailer.clone() else {
            return;
        };
        let program = match self.program(payout.program_id).await {
            Ok(program) => program,
            Err(e) => {
                tracing::warn!(payout = payout.id, error = %e, "reading a paid payout's program failed");
                return;
            }
        };
        let store = self.store.clone();
        let payouts_url = self
            .address_for_notices()
            .await
            .map(|u| format!("{u}/partner/programs/{}/payouts", program.id));
        let payout = payout.clone();
        tokio::spawn(async move {
            let mut mails = Vec::new();
            for item in payout.items.iter().flatten() {
                let to = match store.partner_account(item.partner_id).await {
                    Ok(account) => account.account_email,
                    Err(e) => {
                        tracing::warn!(partner_id = item.partner_id, error = %e, "reading a paid partner failed");
                        continue;
                    }
                };
                // A partner without an account hears from the program its own way.
                let Some(to) = to else { continue };
                let method = item.payout_method.map_or("Not set", |m| m.label());
                let notice = PaidNotice {
                    name: &item.partner_name,
                    program_name: &program.name,
                    amount: &display_amount(item.amount_cents, &payout.currency),
                    commission_count: item.commission_count,
                    sent_by: format!("{method} to {}", item.payout_email),
                    reference: payout.reference.as_deref(),
                    payouts_url: payouts_url.clone(),
                };
                mails.push(paid_mail(&to, &notice));
            }
            send_notices(&mailer, "a payout notice", mails).await;
        });
    }

    /// Cancels a pending payout: its commissions return to approved, for a later payout.
    pub async fn cancel_payout(&self, caller: &Caller, id: i64) -> Result<Payout> {
        self.allow(caller, Record::Payout(id), Access::Change)
            .await?;
        self.settle_payout(caller, id, None, lifecycle::cancel)
            .await
    }

    async fn settle_payout(
        &self,
        caller: &Caller,
        id: i64,
        reference: Option<String>,
        rule: fn(PayoutStatus) -> std::result::Result<PayoutStatus, Conflict>,
    ) -> Result<Payout> {
        let at = self.now_ms();
        let origin = caller.origin.clone();
        self.write(move |tx, _| {
            async move {
                let payout = tx.payout_in_tx(id).await?.ok_or_else(payout_missing)?;
                let to = rule(payout.status).map_err(conflict)?;
                if !tx.settle_payout(id, to, reference.as_deref(), at).await? {
                    return Err(Error::Conflict(
                        "The payout changed while this call ran; read it again".into(),
                    ));
                }
                if to == PayoutStatus::Paid {
                    let paid = Event::new(EventType::PayoutPaid, Subject::Payout(id));
                    tx.record_events(payout.program_id, at, &[paid]).await?;
                }
                let (action, details) = match to {
                    PayoutStatus::Paid => (
                        Action::PayoutPaid,
                        serde_json::json!({
                            "total_cents": payout.total_cents,
                            "currency": payout.currency,
                            "reference": reference,
                        }),
                    ),
                    _ => (
                        Action::PayoutCancelled,
                        serde_json::json!({
                            "total_cents": payout.total_cents,
                            "currency": payout.currency,
                        }),
                    ),
                };
                let entry = Entry::new(
                    at,
                    &origin,
                    action,
                    Scope::Program(payout.program_id),
                    Target::payout(id),
                )
                .with_details(details);
                tx.record_audit(&[entry]).await?;
                tx.payout_in_tx(id).await?.ok_or_else(payout_missing)
            }
            .boxed()
        })
        .await
    }
}
