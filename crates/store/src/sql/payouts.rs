//! The statements of paying partners: commission lists and balances (on the read pool),
//! and commission and payout changes (on the committer's transaction).
//!
//! The hold period is applied by the rule fragments of [`super::rules`]: a stored
//! `pending` commission whose program's hold has passed at `$1` (now) is `approved`,
//! unless it waits for an owner's approval (`manual_approval`, a self-referral).

use async_trait::async_trait;

use super::engine::{stmt, Engine, Rec};
use super::rules;
use super::write::WriteConnection;
use super::{flags, keyset, named, named_opt, params, SqlStore, NO_CURSOR};
use crate::error::StoreResult;
use crate::payout_model::{
    Balance, CommissionFilter, CommissionLock, CommissionRow, Page, Payout, PayoutCandidate,
    PayoutItem, PayoutRules,
};
use crate::payouts::{PayoutReads, PayoutTx};
use reftrack_domain::lifecycle::{self, CommissionState};
use reftrack_domain::status::{CommissionStatus, PayoutStatus};

/// A commission `c`'s hold: its group's own, else its program `p`'s.
fn hold_now() -> String {
    rules::hold_of("c.", &rules::hold_ms("p."))
}

/// A commission `c`'s status at `$1`, its program `p` joined.
pub(super) fn status_now() -> String {
    rules::status_at("c.", &hold_now(), "$1")
}

/// The pending, approved and paid sums of commissions `c` (net of what refunds took
/// back) at `$1`, their program `p` joined: with `c.partner_id`, the columns of a
/// [`Balance`].
/// The sums of a balance, over commissions `c` in their program `p`'s currency (the
/// callers' condition): what payouts pay.
pub(super) fn balance_sums() -> String {
    let net = "c.amount_cents - c.reversed_cents";
    let status = status_now();
    format!(
        "CAST(SUM(CASE WHEN {status} = 'pending' THEN {net} ELSE 0 END) AS BIGINT) \
         AS pending_cents, \
         CAST(SUM(CASE WHEN {status} = 'approved' THEN {net} ELSE 0 END) AS BIGINT) \
         AS approved_cents, \
         CAST(SUM(CASE WHEN c.status = 'paid' THEN {net} ELSE 0 END) AS BIGINT) AS paid_cents"
    )
}

fn commission_row<DB: Engine>(r: &Rec<DB>) -> StoreResult<CommissionRow> {
    Ok(CommissionRow {
        id: r.try_get("id")?,
        partner_id: r.try_get("partner_id")?,
        sale_id: r.try_get("sale_id")?,
        transaction_id: r.try_get("transaction_id")?,
        kind: named(r, "kind")?,
        group_id: r.try_get("group_id")?,
        description: r.try_get("description")?,
        amount_cents: r.try_get("amount_cents")?,
        taken_back_cents: r.try_get("reversed_cents")?,
        currency: r.try_get("currency")?,
        status: named(r, "status")?,
        original_commission_id: r.try_get("original_commission_id")?,
        reject_reason: r.try_get("reject_reason")?,
        created_at: r.try_get("created_at")?,
        approved_at: r.try_get("approved_at")?,
        paid_at: r.try_get("paid_at")?,
        payout_id: r.try_get("payout_id")?,
        flags: flags(r, "flags")?,
        awaiting_rate: r.try_get("awaiting_rate")?,
    })
}

const PAYOUT_COLUMNS: &str =
    "id, program_id, status, currency, total_cents, reference, created_at, paid_at, cancelled_at";

fn payout_row<DB: Engine>(r: &Rec<DB>) -> StoreResult<Payout> {
    Ok(Payout {
        id: r.try_get("id")?,
        program_id: r.try_get("program_id")?,
        status: named(r, "status")?,
        currency: r.try_get("currency")?,
        total_cents: r.try_get("total_cents")?,
        reference: r.try_get("reference")?,
        created_at: r.try_get("created_at")?,
        paid_at: r.try_get("paid_at")?,
        cancelled_at: r.try_get("cancelled_at")?,
        items: None,
    })
}

/// A payout with its items, on any connection.
pub(super) async fn payout_with_items<DB: Engine>(
    conn: &mut DB::Connection,
    id: i64,
) -> StoreResult<Option<Payout>> {
    let sql = format!("SELECT {PAYOUT_COLUMNS} FROM payouts WHERE id = $1");
    let Some(row) = stmt::<DB>(&sql).bind(id).fetch_optional(&mut *conn).await? else {
        return Ok(None);
    };
    let mut payout = payout_row(&row)?;
    let rows = stmt::<DB>(
        "SELECT partner_id, partner_name, payout_method, payout_email, amount_cents, \
         commission_count FROM payout_items WHERE payout_id = $1 ORDER BY partner_id",
    )
    .bind(id)
    .fetch_all(&mut *conn)
    .await?;
    let items = rows
        .iter()
        .map(|r| {
            Ok(PayoutItem {
                partner_id: r.try_get("partner_id")?,
                partner_name: r.try_get("partner_name")?,
                payout_method: named_opt(r, "payout_method")?,
                payout_email: r.try_get("payout_email")?,
                amount_cents: r.try_get("amount_cents")?,
                commission_count: r.try_get("commission_count")?,
            })
        })
        .collect::<StoreResult<Vec<_>>>()?;
    payout.items = Some(items);
    Ok(Some(payout))
}

/// The commission rows of [`commission_row`], `$1` being now; a `WHERE` follows.
fn select_commissions() -> String {
    let status = status_now();
    let approved_at = rules::approved_at("c.", &hold_now(), "$1");
    format!(
        "SELECT c.id, c.partner_id, c.sale_id, s.processor_event_id AS transaction_id, \
         c.kind, c.group_id, c.description, \
         c.amount_cents - c.reversed_cents AS amount_cents, c.reversed_cents, \
         c.currency, \
         {status} AS status, c.original_commission_id, c.reject_reason, c.created_at, \
         {approved_at} AS approved_at, c.paid_at, c.payout_id, c.flags, c.awaiting_rate \
         FROM commissions c JOIN programs p ON p.id = c.program_id \
         LEFT JOIN affiliate_sale_events s ON s.id = c.sale_id"
    )
}

/// One commission row at `now`, on any connection.
pub(super) async fn commission_by_id<DB: Engine>(
    conn: &mut DB::Connection,
    id: i64,
    now: i64,
) -> StoreResult<Option<CommissionRow>> {
    let sql = format!("{} WHERE c.id = $2", select_commissions());
    let row = stmt::<DB>(&sql)
        .bind(now)
        .bind(id)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(commission_row).transpose()
}

#[async_trait]
impl<DB: Engine> PayoutReads for SqlStore<DB> {
    async fn commission(&self, id: i64, now: i64) -> StoreResult<Option<CommissionRow>> {
        commission_by_id::<DB>(&mut *self.read.acquire().await?, id, now).await
    }

    async fn commissions(
        &self,
        program_id: i64,
        filter: &CommissionFilter,
        page: Page,
        now: i64,
    ) -> StoreResult<Vec<CommissionRow>> {
        // A set partner is a condition of its own, so that the (program, partner, id)
        // index serves it; `$4 IS NULL OR …` would hide it from the planner.
        let partner = if filter.partner_id.is_some() {
            "c.partner_id = $4"
        } else {
            "$4 IS NULL"
        };
        let status = status_now();
        let flagged = if filter.flagged {
            format!(" AND {}", rules::held_for_review("c."))
        } else {
            String::new()
        };
        let sql = format!(
            "{} WHERE c.program_id = $2 AND ($3 IS NULL OR {status} = $3) \
             AND {partner} AND ($5 IS NULL OR c.created_at >= $5) \
             AND ($6 IS NULL OR c.created_at < $6){flagged} AND {keyset}",
            select_commissions(),
            keyset = keyset("c.id", 7),
        );
        stmt::<DB>(&sql)
            .bind(now)
            .bind(program_id)
            .bind(filter.status.map(CommissionStatus::as_str))
            .bind(filter.partner_id)
            .bind(filter.from_ms)
            .bind(filter.to_ms)
            .page(page)
            .read_all(&mut *self.read.acquire().await?, commission_row)
            .await
    }

    async fn balances(&self, program_id: i64, page: Page, now: i64) -> StoreResult<Vec<Balance>> {
        let sql = format!(
            "SELECT c.partner_id, {} \
             FROM commissions c JOIN programs p ON p.id = c.program_id \
             WHERE c.program_id = $2 AND c.currency = p.currency \
             AND c.partner_id < COALESCE($3, {NO_CURSOR}) \
             GROUP BY c.partner_id ORDER BY c.partner_id DESC LIMIT $4",
            balance_sums()
        );
        Ok(stmt::<DB>(&sql)
            .bind(now)
            .bind(program_id)
            .page(page)
            .records(&mut *self.read.acquire().await?)
            .await?)
    }

    async fn payout_candidates(
        &self,
        program_id: i64,
        partner_ids: &[i64],
        rules: &PayoutRules,
        now: i64,
    ) -> StoreResult<Vec<PayoutCandidate>> {
        if partner_ids.is_empty() {
            return Ok(Vec::new());
        }
        // What `claim_commissions` takes, per partner, without its conditions: the page
        // says which of them a partner misses.
        let sql = format!(
            "SELECT pp.partner_id, pp.status, pa.payout_email IS NOT NULL AS has_payout_email, \
             CAST(COALESCE((SELECT SUM(c.amount_cents - c.reversed_cents) FROM commissions c \
               WHERE c.program_id = $3 AND c.partner_program_id = pp.id AND {due}), 0) \
               AS BIGINT) AS due_cents \
             FROM partner_programs pp JOIN partners pa ON pa.id = pp.partner_id \
             WHERE pp.program_id = $2 AND pp.partner_id IN ({ids})",
            due = due_unheld("c."),
            ids = params(6, partner_ids.len()),
        );
        let mut q = stmt::<DB>(&sql)
            .bind(now)
            .bind(program_id)
            .bind(program_id)
            .bind(&rules.currency)
            .bind(rules.hold_ms);
        for id in partner_ids {
            q = q.bind(*id);
        }
        let rows = q.fetch_all(&mut *self.read.acquire().await?).await?;
        rows.iter()
            .map(|r| {
                Ok(PayoutCandidate {
                    partner_id: r.try_get("partner_id")?,
                    status: named(r, "status")?,
                    has_payout_email: r.try_get("has_payout_email")?,
                    due_cents: r.try_get("due_cents")?,
                })
            })
            .collect()
    }

    async fn payouts(&self, program_id: i64, page: Page) -> StoreResult<Vec<Payout>> {
        let sql = format!(
            "SELECT {PAYOUT_COLUMNS} FROM payouts WHERE program_id = $1 \
             AND {keyset}",
            keyset = keyset("id", 2),
        );
        stmt::<DB>(&sql)
            .bind(program_id)
            .page(page)
            .read_all(&mut *self.read.acquire().await?, payout_row)
            .await
    }

    async fn payout(&self, id: i64) -> StoreResult<Option<Payout>> {
        payout_with_items::<DB>(&mut *self.read.acquire().await?, id).await
    }

    async fn program_holds(&self) -> StoreResult<Vec<(i64, i64)>> {
        let rows = stmt::<DB>("SELECT id, commission_hold_days FROM programs ORDER BY id")
            .fetch_all(&mut *self.read.acquire().await?)
            .await?;
        rows.iter()
            .map(|r| Ok((r.try_get_at(0)?, r.try_get_at(1)?)))
            .collect()
    }
}

/// Whether a commission (its columns prefixed by `prefix`, `""` for the unaliased table) is
/// due and no payout holds it, in the program's currency `$4`: recorded as approved, or
/// pending past its hold (its group's own, else the program's `$5` milliseconds, before
/// now, `$1`) and not waiting for an owner.
fn due_unheld(prefix: &str) -> String {
    format!(
        "{prefix}currency = $4 AND {}",
        rules::payout_may_take(prefix, &rules::hold_of(qualified(prefix), "$5"), "$1")
    )
}

/// The prefix that names a commission's columns inside a subquery: the alias, or the
/// table's name when it has none.
fn qualified(prefix: &str) -> &str {
    if prefix.is_empty() {
        "commissions."
    } else {
        prefix
    }
}

#[async_trait]
impl<DB: Engine> PayoutTx for WriteConnection<DB> {
    async fn commission_lock(&mut self, id: i64, now: i64) -> StoreResult<Option<CommissionLock>> {
        let status = status_now();
        let sql = format!(
            "SELECT c.program_id, c.partner_id, {status} AS status, \
             c.payout_id IS NOT NULL AS held, c.amount_cents - c.reversed_cents AS net, \
             c.currency, COALESCE(s.sale_date, c.created_at) AS sale_date, \
             c.awaiting_rate FROM commissions c \
             JOIN programs p ON p.id = c.program_id \
             LEFT JOIN affiliate_sale_events s ON s.id = c.sale_id WHERE c.id = $2"
        );
        let row = stmt::<DB>(&sql)
            .bind(now)
            .bind(id)
            .fetch_optional(&mut *self.conn)
            .await?;
        row.map(|r| {
            Ok(CommissionLock {
                program_id: r.try_get("program_id")?,
                partner_id: r.try_get("partner_id")?,
                state: CommissionState {
                    status: named(&r, "status")?,
                    held: r.try_get("held")?,
                    awaiting_rate: r.try_get("awaiting_rate")?,
                },
                net_cents: r.try_get("net")?,
                currency: r.try_get("currency")?,
                sale_date: r.try_get("sale_date")?,
            })
        })
        .transpose()
    }

    async fn approve_commission(&mut self, id: i64, at: i64) -> StoreResult<bool> {
        let changed = stmt::<DB>(
            "UPDATE commissions SET status = 'approved', approved_at = $1, updated_at = $1 \
             WHERE id = $2 AND status = 'pending'",
        )
        .bind(at)
        .bind(id)
        .execute(&mut *self.conn)
        .await?;
        Ok(changed == 1)
    }

    async fn reject_commission(
        &mut self,
        id: i64,
        reason: Option<&str>,
        at: i64,
    ) -> StoreResult<bool> {
        let changed = stmt::<DB>(
            "UPDATE commissions SET status = 'rejected', reject_reason = $1, updated_at = $2 \
             WHERE id = $3 AND status IN ('pending', 'approved') AND payout_id IS NULL",
        )
        .bind(reason)
        .bind(at)
        .bind(id)
        .execute(&mut *self.conn)
        .await?;
        Ok(changed == 1)
    }

    async fn insert_clawback(&mut self, id: i64, amount_cents: i64, at: i64) -> StoreResult<i64> {
        Ok(stmt::<DB>(
            "INSERT INTO commissions (program_id, sale_id, partner_id, partner_program_id, \
             kind, original_commission_id, amount_cents, currency, status, approved_at, \
             created_at, updated_at) \
             SELECT program_id, sale_id, partner_id, partner_program_id, 'clawback', id, $1, \
             currency, 'approved', $2, $2, $2 FROM commissions WHERE id = $3 RETURNING id",
        )
        .bind(-amount_cents)
        .bind(at)
        .bind(id)
        .scalar(&mut *self.conn)
        .await?)
    }

    async fn approve_due(
        &mut self,
        program_id: i64,
        hold_ms: i64,
        now: i64,
        most: Option<i64>,
    ) -> StoreResult<Vec<i64>> {
        // The program's hold is `$1`; a commission whose group has its own follows that.
        // The shortest hold of the program's commissions bounds `created_at` as well, so
        // that the index on (program, created_at) of pending commissions serves the job.
        let shortest: Option<i64> = stmt::<DB>(
            "SELECT MIN(commission_hold_days) FROM partner_groups WHERE program_id = $1",
        )
        .bind(program_id)
        .scalar(&mut *self.conn)
        .await?;
        let shortest = shortest.map_or(hold_ms, |d| lifecycle::hold_ms(d).min(hold_ms));
        let bound = if most.is_some() { "$5" } else { "$4" };
        let hold = rules::hold_of("commissions.", "$1");
        let due = format!(
            "program_id = $3 AND created_at <= $2 - {bound} AND {}",
            rules::approved_by_hold("", &hold, "$2")
        );
        let approved_at = rules::approved_at("", &hold, "$2");
        let sql = match most {
            None => format!(
                "UPDATE commissions SET status = 'approved', approved_at = {approved_at}, \
                 updated_at = $2 WHERE {due} RETURNING id"
            ),
            Some(_) => format!(
                "UPDATE commissions SET status = 'approved', approved_at = {approved_at}, \
                 updated_at = $2 WHERE id IN (SELECT id FROM commissions WHERE {due} \
                 ORDER BY id LIMIT $4) RETURNING id"
            ),
        };
        let mut query = stmt::<DB>(&sql).bind(hold_ms).bind(now).bind(program_id);
        if let Some(most) = most {
            query = query.bind(most);
        }
        let query = query.bind(shortest);
        Ok(query.scalar_all(&mut *self.conn).await?)
    }

    async fn lock_payout_rules(&mut self, program_id: i64) -> StoreResult<Option<PayoutRules>> {
        // A write to the program's row: a second payout of the program, on any process,
        // waits here until this transaction ends, then sees what this one took.
        let row = stmt::<DB>(
            "UPDATE programs SET updated_at = updated_at WHERE id = $1 \
             RETURNING commission_hold_days, min_payout_cents, currency",
        )
        .bind(program_id)
        .fetch_optional(&mut *self.conn)
        .await?;
        row.map(|r| {
            Ok(PayoutRules {
                hold_ms: lifecycle::hold_ms(r.try_get::<i64>("commission_hold_days")?),
                min_payout_cents: r.try_get("min_payout_cents")?,
                currency: r.try_get("currency")?,
            })
        })
        .transpose()
    }

    async fn insert_payout(
        &mut self,
        program_id: i64,
        currency: &str,
        at: i64,
    ) -> StoreResult<i64> {
        Ok(stmt::<DB>(
            "INSERT INTO payouts (program_id, status, currency, total_cents, created_at) \
             VALUES ($1, 'pending', $2, 0, $3) RETURNING id",
        )
        .bind(program_id)
        .bind(currency)
        .bind(at)
        .scalar(&mut *self.conn)
        .await?)
    }

    async fn claim_commissions(
        &mut self,
        program_id: i64,
        payout_id: i64,
        rules: &PayoutRules,
        now: i64,
    ) -> StoreResult<u64> {
        let (due, due_c) = (due_unheld(""), due_unheld("c."));
        let approved_at = rules::approved_at("", &rules::hold_of("commissions.", "$5"), "$1");
        let pays = rules::payout_pays(
            "pp.status",
            "pa.payout_email",
            "SUM(c.amount_cents - c.reversed_cents)",
            "$6",
        );
        let sql = format!(
            "UPDATE commissions SET payout_id = $2, status = 'approved', \
             approved_at = {approved_at}, updated_at = $1 \
             WHERE program_id = $3 AND {due} AND partner_id IN ( \
               SELECT c.partner_id FROM commissions c \
               JOIN partner_programs pp ON pp.id = c.partner_program_id \
               JOIN partners pa ON pa.id = c.partner_id \
               WHERE c.program_id = $3 AND {due_c} \
               GROUP BY c.partner_id, pp.status, pa.payout_email HAVING {pays})"
        );
        let claimed = stmt::<DB>(&sql)
            .bind(now)
            .bind(payout_id)
            .bind(program_id)
            .bind(&rules.currency)
            .bind(rules.hold_ms)
            .bind(rules.min_payout_cents)
            .execute(&mut *self.conn)
            .await?;
        // A partner whose claimed sum fell short (a commission changed between the
        // subquery and its row) is released. Found first, then released one by one: it
        // is rare, and PostgreSQL planned the single-statement form as a nested loop over
        // the payout's commissions, an hour on a million of them.
        let short = stmt::<DB>(
            "SELECT partner_id FROM commissions WHERE payout_id = $1 GROUP BY partner_id \
             HAVING SUM(amount_cents - reversed_cents) < $2 \
             OR SUM(amount_cents - reversed_cents) <= 0",
        )
        .bind(payout_id)
        .bind(rules.min_payout_cents)
        .fetch_all(&mut *self.conn)
        .await?;
        let mut released = 0;
        for row in short {
            let partner_id: i64 = row.try_get_at(0)?;
            released += stmt::<DB>(
                "UPDATE commissions SET payout_id = NULL, updated_at = $1 \
                 WHERE payout_id = $2 AND partner_id = $3",
            )
            .bind(now)
            .bind(payout_id)
            .bind(partner_id)
            .execute(&mut *self.conn)
            .await?;
        }
        Ok(claimed - released)
    }

    async fn write_payout_items(&mut self, payout_id: i64) -> StoreResult<()> {
        stmt::<DB>(
            "INSERT INTO payout_items (payout_id, partner_id, partner_name, payout_method, \
             payout_email, amount_cents, commission_count) \
             SELECT $1, pa.id, pa.name, pa.payout_method, pa.payout_email, \
             CAST(SUM(c.amount_cents - c.reversed_cents) AS BIGINT), COUNT(*) \
             FROM commissions c JOIN partners pa ON pa.id = c.partner_id \
             WHERE c.payout_id = $1 \
             GROUP BY pa.id, pa.name, pa.payout_method, pa.payout_email",
        )
        .bind(payout_id)
        .execute(&mut *self.conn)
        .await?;
        stmt::<DB>(
            "UPDATE payouts SET total_cents = COALESCE((SELECT CAST(SUM(amount_cents) AS BIGINT) \
             FROM payout_items WHERE payout_id = $1), 0) WHERE id = $1",
        )
        .bind(payout_id)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }

    async fn payout_in_tx(&mut self, id: i64) -> StoreResult<Option<Payout>> {
        payout_with_items::<DB>(&mut *self.conn, id).await
    }

    async fn settle_payout(
        &mut self,
        id: i64,
        to: PayoutStatus,
        reference: Option<&str>,
        at: i64,
    ) -> StoreResult<bool> {
        let (payout, commissions) = match to {
            PayoutStatus::Paid => (
                "UPDATE payouts SET status = 'paid', reference = $1, paid_at = $2 \
                 WHERE id = $3 AND status = 'pending'",
                "UPDATE commissions SET status = 'paid', paid_at = $1, updated_at = $1 \
                 WHERE payout_id = $2",
            ),
            _ => (
                "UPDATE payouts SET status = 'cancelled', reference = $1, cancelled_at = $2 \
                 WHERE id = $3 AND status = 'pending'",
                "UPDATE commissions SET payout_id = NULL, updated_at = $1 WHERE payout_id = $2",
            ),
        };
        let changed = stmt::<DB>(payout)
            .bind(reference)
            .bind(at)
            .bind(id)
            .execute(&mut *self.conn)
            .await?;
        if changed == 0 {
            return Ok(false);
        }
        stmt::<DB>(commissions)
            .bind(at)
            .bind(id)
            .execute(&mut *self.conn)
            .await?;
        Ok(true)
    }
}
