//! What an event does to the program's bounties: it moves the partner's value of each live
//! bounty whose window holds the event, and earns the partner each one it brings it to
//! ([`reftrack_domain::bounties`]), in the event's transaction.

use super::*;

/// Counts an event of `partner_id` recorded at `at` (for a refund, its sale's time) in
/// the program's live bounties. A step up that brings an approved partner of one of a
/// bounty's groups to its threshold earns it the bounty's commission, once: the value's
/// row is locked by the statement that adds to it, so a second process counting the same
/// partner waits and then reads it earned.
pub(crate) async fn count_bounties(
    tx: &mut dyn Tx,
    deltas: &mut Deltas,
    program_id: i64,
    partner_id: i64,
    progress: Progress,
    at: i64,
) -> Result<()> {
    let bounties = tx.live_bounties(program_id).await?;
    // Read once, and only when a bounty is reached.
    let mut standing = None;
    let mut program = None;
    for b in bounties.iter().filter(|b| b.counts_at(at)) {
        let step = progress.step(b.metric);
        if step == 0 {
            continue;
        }
        let (value, earned) = tx.add_bounty_progress(b.id, partner_id, step).await?;
        if step < 0 || earned || value < b.threshold {
            continue;
        }
        if standing.is_none() {
            standing = tx.partner_standing(partner_id, program_id, false).await?;
        }
        let Some(s) = standing.as_ref() else { continue };
        let approved = commission::partner_earns(s.status);
        if !b.awards(s.group.group_id, approved, value, earned) {
            continue;
        }
        if program.is_none() {
            program = tx.sale_program(program_id).await?;
        }
        let Some(program) = program.as_ref() else {
            continue;
        };
        let description = rewards::bounty_description(&b.name);
        let id = tx
            .insert_commission(&NewCommission {
                program_id,
                kind: CommissionKind::Bounty,
                sale_id: None,
                lead_id: None,
                bounty_id: Some(b.id),
                partner_id,
                partner_program_id: s.partner_program_id,
                amount_cents: b.amount_cents,
                currency: &program.currency,
                at,
                flags: &[],
                approval: lifecycle::Approval::AfterHold,
                group_id: Some(s.group.group_id),
                description: Some(&description),
                reward_facts: None,
            })
            .await?;
        tx.mark_bounty_earned(b.id, partner_id).await?;
        deltas.count_commission(program_id, partner_id, at, b.amount_cents);
        tx.record_events(program_id, at, &[commission_created(id)])
            .await?;
    }
    Ok(())
}
