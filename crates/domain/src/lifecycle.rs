//! How commissions and payouts change state. Each change an owner or a refund asks for is
//! decided here, from the state as it stands (with the hold period already applied: see
//! the store's commission reads), and the store then writes it with a guard on that same
//! state, so that a change decided on a state another process has just left writes nothing.
//!
//! ```text
//!            hold passes / approve          payout marked paid
//!  pending ─────────────────────► approved ───────────────────► paid
//!     │  \                          │   ▲                          │
//!     │   \ reject                  │   │ payout cancelled         │ refund
//!     │    ▼                reject  │   │                          ▼
//!     │   rejected ◄────────────────┘   └── held by a pending   clawback (a new,
//!     │ full refund                          payout               negative, approved
//!     ▼                                                           commission)
//!  reversed
//! ```
//!
//! A commission that a fraud rule flags skips "hold passes": only an owner's approval
//! moves it on; one that a rule rejects is created `rejected` ([`approval`]).

use super::fraud::{Rule, Verdict};
use super::status::{CommissionStatus, PartnerStatus, PayoutStatus};
use super::time::DAY_MS;

/// How long a program's hold of `hold_days` days lasts, in milliseconds.
pub fn hold_ms(hold_days: i64) -> i64 {
    hold_days.saturating_mul(DAY_MS)
}

/// The hold of a commission made under a group whose own hold is `group_days` (`None`:
/// the program's), in a program whose hold is `program_ms`.
pub fn commission_hold_ms(group_days: Option<i64>, program_ms: i64) -> i64 {
    group_days.map_or(program_ms, hold_ms)
}

/// Whether a commission recorded at `created_at` is past a hold of `hold_ms` at `now`.
pub fn hold_passed(created_at: i64, hold_ms: i64, now: i64) -> bool {
    created_at <= now.saturating_sub(hold_ms)
}

/// Whether a commission stored as `stored` moves on by itself once its hold passes: it
/// is pending and does not wait for an owner's approval (a self-referral does).
pub fn approves_by_itself(stored: CommissionStatus, manual_approval: bool) -> bool {
    stored == CommissionStatus::Pending && !manual_approval
}

/// Whether the hold has approved a commission by `now`: it approves by itself and its
/// hold has passed.
pub fn approved_by_hold(
    stored: CommissionStatus,
    manual_approval: bool,
    created_at: i64,
    hold_ms: i64,
    now: i64,
) -> bool {
    approves_by_itself(stored, manual_approval) && hold_passed(created_at, hold_ms, now)
}

/// A commission's status at `now`: the stored one, except that a commission that
/// approves by itself is `approved` once its hold has passed. Commissions are not
/// rewritten when their hold passes; every read applies this rule.
pub fn status_at(
    stored: CommissionStatus,
    manual_approval: bool,
    created_at: i64,
    hold_ms: i64,
    now: i64,
) -> CommissionStatus {
    if approved_by_hold(stored, manual_approval, created_at, hold_ms, now) {
        CommissionStatus::Approved
    } else {
        stored
    }
}

/// When a commission was approved, as read at `now`: the end of its hold when the hold
/// approved it ([`status_at`]), else the stored time (`None` while not approved).
pub fn approved_at(
    stored: CommissionStatus,
    manual_approval: bool,
    created_at: i64,
    stored_approved_at: Option<i64>,
    hold_ms: i64,
    now: i64,
) -> Option<i64> {
    if approved_by_hold(stored, manual_approval, created_at, hold_ms, now) {
        Some(created_at.saturating_add(hold_ms))
    } else {
        stored_approved_at
    }
}

/// Whether a new payout may take a commission at `now`: it is due (approved, or
/// approved by its hold) and no payout holds it yet.
pub fn payout_may_take(
    stored: CommissionStatus,
    manual_approval: bool,
    held: bool,
    created_at: i64,
    hold_ms: i64,
    now: i64,
) -> bool {
    !held
        && status_at(stored, manual_approval, created_at, hold_ms, now)
            == CommissionStatus::Approved
}

/// Whether a commission stored as `stored` is held for review: a fraud rule flagged it
/// (so it waits for an owner) and no owner has approved or rejected it yet. One whose sale
/// waits for an exchange rate is not: it waits for the rate first.
pub fn held_for_review(
    stored: CommissionStatus,
    manual_approval: bool,
    awaiting_rate: bool,
) -> bool {
    stored == CommissionStatus::Pending && manual_approval && !awaiting_rate
}

/// A commission as a change is decided on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommissionState {
    /// Its status, with the hold period applied.
    pub status: CommissionStatus,
    /// Whether a payout (pending or paid) holds it.
    pub held: bool,
    /// Whether it waits for an exchange rate (its sale's currency is not the program's
    /// and no rate was known): its amount is not decided yet.
    pub awaiting_rate: bool,
}

/// A requested change that the commission's or payout's state does not allow; the text
/// says which state it is in (the client reads it with a 409).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict(pub String);

/// How a new commission comes due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// `approved` at once, with no hold: an owner's bonus.
    Granted,
    /// `approved` once the program's hold period has passed (or earlier by an owner).
    AfterHold,
    /// `pending` until an owner approves it, whatever the hold period.
    ByOwner,
    /// Created `rejected`: a fraud rule that rejects holds.
    Rejected(Rule),
}

/// The approval a new commission gets from the fraud rules' verdict on its sale: a rule
/// that rejects makes it rejected, a rule that flags makes it wait for an owner, and
/// with neither it comes due after the hold.
pub fn approval(verdict: &Verdict) -> Approval {
    match verdict.rejected_by {
        Some(rule) => Approval::Rejected(rule),
        None if verdict.waits_for_owner() => Approval::ByOwner,
        None => Approval::AfterHold,
    }
}

/// How a new commission is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewState {
    /// `pending`, or `rejected` when a rule rejects it.
    pub status: CommissionStatus,
    /// Whether it waits for an owner whatever the hold.
    pub manual_approval: bool,
    /// Why it was rejected: the rule's name.
    pub reject_reason: Option<&'static str>,
}

/// How a new commission with `approval` is stored. A commission starts `pending` (the
/// hold or an owner moves it on, [`status_at`]) unless a rule rejects it.
pub fn new_commission(approval: Approval) -> NewState {
    match approval {
        Approval::Rejected(rule) => NewState {
            status: CommissionStatus::Rejected,
            manual_approval: false,
            reject_reason: Some(rule.as_str()),
        },
        Approval::Granted => NewState {
            status: CommissionStatus::Approved,
            manual_approval: false,
            reject_reason: None,
        },
        Approval::AfterHold | Approval::ByOwner => NewState {
            status: CommissionStatus::Pending,
            manual_approval: approval == Approval::ByOwner,
            reject_reason: None,
        },
    }
}

/// `pending` → `approved`, ahead of the hold; not while it waits for an exchange rate.
pub fn approve(c: CommissionState) -> Result<CommissionStatus, Conflict> {
    if c.awaiting_rate {
        return Err(Conflict(
            "The commission is waiting for an exchange rate; it can be approved once its sale \
             is converted"
                .into(),
        ));
    }
    match c.status {
        CommissionStatus::Pending => Ok(CommissionStatus::Approved),
        other => Err(Conflict(format!(
            "The commission is {other}; only a pending commission can be approved"
        ))),
    }
}

/// `pending`, or `approved` and not held by a payout → `rejected`.
pub fn reject(c: CommissionState) -> Result<CommissionStatus, Conflict> {
    match c.status {
        CommissionStatus::Approved if c.held => Err(Conflict(
            "The commission is held by a pending payout; cancel the payout first".into(),
        )),
        CommissionStatus::Pending | CommissionStatus::Approved => Ok(CommissionStatus::Rejected),
        other => Err(Conflict(format!(
            "The commission is {other}; only a pending or approved commission can be rejected"
        ))),
    }
}

/// What a refund of a commission's sale does to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefundEffect {
    /// Take the deduction off the commission itself.
    Reduce {
        /// Whether it becomes `reversed` (its sale is now fully refunded); otherwise its
        /// status stays as it is.
        reverses: bool,
        /// Whether the program's figures lose the deduction (not when the commission was
        /// rejected: rejecting it took its whole amount out of them already).
        counts: bool,
    },
    /// It was paid, or a payout holds it: a new negative commission takes the deduction
    /// back from the partner's next payout.
    Clawback,
}

/// The effect of a refund (of the whole sale when `fully`) on its commission.
pub fn on_refund(c: CommissionState, fully: bool) -> RefundEffect {
    match c.status {
        _ if c.held || c.status == CommissionStatus::Paid => RefundEffect::Clawback,
        CommissionStatus::Rejected => RefundEffect::Reduce {
            reverses: false,
            counts: false,
        },
        CommissionStatus::Pending | CommissionStatus::Approved => RefundEffect::Reduce {
            reverses: fully,
            counts: true,
        },
        _ => RefundEffect::Reduce {
            reverses: false,
            counts: true,
        },
    }
}

/// A payout that is marked paid must be pending.
pub fn mark_paid(p: PayoutStatus) -> Result<PayoutStatus, Conflict> {
    match p {
        PayoutStatus::Pending => Ok(PayoutStatus::Paid),
        other => Err(Conflict(format!(
            "The payout is {other}; only a pending payout can be marked paid"
        ))),
    }
}

/// A payout that is cancelled must be pending.
pub fn cancel(p: PayoutStatus) -> Result<PayoutStatus, Conflict> {
    match p {
        PayoutStatus::Pending => Ok(PayoutStatus::Cancelled),
        PayoutStatus::Paid => Err(Conflict(
            "The payout is paid; a paid payout cannot be cancelled".into(),
        )),
        PayoutStatus::Cancelled => Err(Conflict("The payout is cancelled already".into())),
    }
}

/// A partner's standing in a program may move between approved, rejected and banned
/// as an owner decides; `pending` means "applied, not yet decided", so no decided
/// partner goes back to it. Setting the standing it has already is no change.
pub fn partner_status(from: PartnerStatus, to: PartnerStatus) -> Result<PartnerStatus, Conflict> {
    if to == PartnerStatus::Pending && from != PartnerStatus::Pending {
        return Err(Conflict(format!(
            "The partner is {from} in this program; a decided partner cannot go back to pending"
        )));
    }
    Ok(to)
}

/// Why a new payout leaves out a partner that has commissions due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayoutSkip {
    /// Its standing in the program is not `approved`.
    NotApproved,
    /// It has no payout email to be paid at.
    NoPayoutEmail,
    /// Its due balance is below the program's minimum payout.
    BelowMinimum,
}

/// Whether a new payout pays a partner that is `status` in the program, has a payout
/// email or not, and `due_cents` due: something is due and [`payout_skips`] finds no
/// reason to leave it out.
pub fn payout_pays(
    status: PartnerStatus,
    has_payout_email: bool,
    due_cents: i64,
    min_payout_cents: i64,
) -> bool {
    due_cents > 0 && payout_skips(status, has_payout_email, due_cents, min_payout_cents).is_empty()
}

/// Why a new payout would leave out a partner that is `status` in the program, has a
/// payout email or not, and `due_cents` due and not held by a pending payout; empty
/// when it pays it, and when nothing is due (nothing to leave out). The store's
/// `claim_commissions` takes the partners [`payout_pays`] pays, in one statement.
pub fn payout_skips(
    status: PartnerStatus,
    has_payout_email: bool,
    due_cents: i64,
    min_payout_cents: i64,
) -> Vec<PayoutSkip> {
    if due_cents <= 0 {
        return Vec::new();
    }
    let mut skips = Vec::new();
    if status != PartnerStatus::Approved {
        skips.push(PayoutSkip::NotApproved);
    }
    if !has_payout_email {
        skips.push(PayoutSkip::NoPayoutEmail);
    }
    if due_cents < min_payout_cents {
        skips.push(PayoutSkip::BelowMinimum);
    }
    skips
}

#[cfg(test)]
mod tests {
    use super::*;
    use CommissionStatus::*;

    #[test]
    fn a_payout_skips_partners_without_standing_email_or_minimum() {
        use PartnerStatus as P;
        use PayoutSkip as S;
        assert_eq!(payout_skips(P::Approved, true, 5000, 5000), vec![]);
        assert_eq!(
            payout_skips(P::Approved, false, 6000, 5000),
            vec![S::NoPayoutEmail]
        );
        assert_eq!(
            payout_skips(P::Approved, true, 4999, 5000),
            vec![S::BelowMinimum]
        );
        assert_eq!(
            payout_skips(P::Banned, false, 100, 5000),
            vec![S::NotApproved, S::NoPayoutEmail, S::BelowMinimum]
        );
        assert_eq!(
            payout_skips(P::Banned, false, 0, 5000),
            vec![],
            "nothing due"
        );
        assert_eq!(payout_skips(P::Approved, true, -10, 0), vec![]);
    }

    #[test]
    fn partners_never_return_to_pending() {
        use PartnerStatus as P;
        for from in P::ALL {
            for to in P::ALL {
                let ok = partner_status(*from, *to).is_ok();
                assert_eq!(
                    ok,
                    *to != P::Pending || *from == P::Pending,
                    "{from} → {to}"
                );
            }
        }
    }

    fn c(status: CommissionStatus, held: bool) -> CommissionState {
        CommissionState {
            status,
            held,
            awaiting_rate: false,
        }
    }

    #[test]
    fn a_commission_waiting_for_a_rate_cannot_be_approved_but_can_be_rejected() {
        let waiting = CommissionState {
            awaiting_rate: true,
            ..c(Pending, false)
        };
        assert!(approve(waiting).unwrap_err().0.contains("exchange rate"));
        assert_eq!(reject(waiting), Ok(Rejected));
    }

    #[test]
    fn a_hold_approves_a_pending_commission_once_it_has_passed() {
        let hold = hold_ms(2);
        assert_eq!(hold, 2 * DAY_MS);
        let created = 10 * DAY_MS;
        let at = |now| status_at(Pending, false, created, hold, now);
        assert_eq!(at(created + hold - 1), Pending);
        assert_eq!(at(created + hold), Approved);
        assert_eq!(
            approved_at(Pending, false, created, None, hold, created + hold - 1),
            None
        );
        assert_eq!(
            approved_at(Pending, false, created, None, hold, created + 5 * DAY_MS),
            Some(created + hold)
        );
        // Waiting for an owner, or settled, the hold changes nothing.
        assert_eq!(status_at(Pending, true, created, hold, i64::MAX), Pending);
        for stored in [Approved, Rejected, Paid, Reversed] {
            assert_eq!(status_at(stored, false, created, hold, i64::MAX), stored);
        }
        assert!(
            hold_passed(i64::MIN, i64::MAX, i64::MIN),
            "saturates instead of overflowing"
        );
    }

    #[test]
    fn a_payout_takes_due_unheld_commissions_and_pays_partners_it_skips_for_nothing() {
        let hold = hold_ms(1);
        assert!(payout_may_take(Pending, false, false, 0, hold, hold));
        assert!(!payout_may_take(Pending, false, true, 0, hold, hold));
        assert!(!payout_may_take(Pending, true, false, 0, hold, hold));
        assert!(!payout_may_take(Pending, false, false, 0, hold, hold - 1));
        assert!(payout_may_take(Approved, false, false, 0, hold, 0));
        assert!(!payout_may_take(Paid, false, false, 0, hold, hold));
        assert!(payout_pays(PartnerStatus::Approved, true, 100, 100));
        assert!(!payout_pays(PartnerStatus::Approved, true, 0, 0));
        assert!(!payout_pays(PartnerStatus::Approved, false, 100, 0));
        assert!(!payout_pays(PartnerStatus::Banned, true, 100, 0));
        assert!(!payout_pays(PartnerStatus::Approved, true, 99, 100));
    }

    #[test]
    fn flagged_commissions_wait_for_an_owner_and_rejected_ones_start_rejected() {
        use crate::status::CommissionFlag;
        assert_eq!(approval(&Verdict::clear()), Approval::AfterHold);
        let flagged = Verdict {
            holding: vec![Rule::SelfReferral],
            flags: vec![CommissionFlag::SelfReferral],
            rejected_by: None,
        };
        assert_eq!(approval(&flagged), Approval::ByOwner);
        let state = new_commission(approval(&flagged));
        assert_eq!((state.status, state.manual_approval), (Pending, true));
        // Approving it is the owner's ordinary approval of a pending commission.
        assert_eq!(approve(c(Pending, false)), Ok(Approved));
        let rejected = Verdict {
            rejected_by: Some(Rule::DisposableEmail),
            ..flagged
        };
        let state = new_commission(approval(&rejected));
        assert_eq!(state.status, Rejected);
        assert_eq!(state.reject_reason, Some("disposable_email"));
        let plain = new_commission(Approval::AfterHold);
        assert_eq!((plain.status, plain.manual_approval), (Pending, false));
    }

    #[test]
    fn a_granted_commission_is_approved_at_once() {
        let bonus = new_commission(Approval::Granted);
        assert_eq!(
            (bonus.status, bonus.manual_approval, bonus.reject_reason),
            (Approved, false, None)
        );
    }

    #[test]
    fn only_pending_approves() {
        assert_eq!(approve(c(Pending, false)), Ok(Approved));
        for s in [Approved, Paid, Reversed, Rejected] {
            let e = approve(c(s, false)).unwrap_err();
            assert!(e.0.contains(s.as_str()), "{e:?}");
        }
    }

    #[test]
    fn reject_refuses_held_and_settled() {
        assert_eq!(reject(c(Pending, false)), Ok(Rejected));
        assert_eq!(reject(c(Approved, false)), Ok(Rejected));
        assert!(reject(c(Approved, true)).unwrap_err().0.contains("payout"));
        for s in [Paid, Reversed, Rejected] {
            assert!(reject(c(s, false)).is_err());
        }
    }

    #[test]
    fn refunds_reduce_before_payment_and_claw_back_after() {
        let reduce = |reverses, counts| RefundEffect::Reduce { reverses, counts };
        assert_eq!(on_refund(c(Pending, false), false), reduce(false, true));
        assert_eq!(on_refund(c(Approved, false), false), reduce(false, true));
        assert_eq!(on_refund(c(Pending, false), true), reduce(true, true));
        assert_eq!(on_refund(c(Approved, false), true), reduce(true, true));
        assert_eq!(on_refund(c(Rejected, false), true), reduce(false, false));
        assert_eq!(on_refund(c(Approved, true), false), RefundEffect::Clawback);
        assert_eq!(on_refund(c(Approved, true), true), RefundEffect::Clawback);
        assert_eq!(on_refund(c(Paid, true), true), RefundEffect::Clawback);
    }

    #[test]
    fn payouts_pay_or_cancel_once() {
        assert_eq!(mark_paid(PayoutStatus::Pending), Ok(PayoutStatus::Paid));
        assert!(mark_paid(PayoutStatus::Paid).is_err());
        assert!(mark_paid(PayoutStatus::Cancelled).is_err());
        assert_eq!(cancel(PayoutStatus::Pending), Ok(PayoutStatus::Cancelled));
        assert!(cancel(PayoutStatus::Paid).unwrap_err().0.contains("paid"));
        assert!(cancel(PayoutStatus::Cancelled).is_err());
    }
}
