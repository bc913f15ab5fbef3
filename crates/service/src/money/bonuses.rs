//! An owner's bonus to a partner: a commission of its own, due at once, paid with the
//! partner's next payout.

use futures::FutureExt;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::access::Caller;
use crate::{App, Error, Result};
use reftrack_domain::access::Access;
use reftrack_domain::audit::{Action, Entry, Scope, Target};
use reftrack_domain::commission::MAX_FLAT_CENTS;
use reftrack_domain::lifecycle::Approval;
use reftrack_domain::rewards::bonus_description;
use reftrack_domain::status::{CommissionKind, PartnerStatus};
use reftrack_domain::webhooks::EventType;
use reftrack_store::webhooks::{Event, Subject};
use reftrack_store::{CommissionRow, NewCommission, Record};

/// The most characters a bonus's description holds.
pub const MAX_BONUS_DESCRIPTION: usize = 500;

/// A bonus for a partner of a program.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BonusBody {
    /// The amount in the program's currency's minor units: above 0, at most 100000000.
    pub amount_cents: i64,
    /// What it is for, as the partner reads it (1 to 500 characters).
    pub description: String,
}

impl BonusBody {
    /// The description, trimmed, once the body is valid; else what is wrong, naming the
    /// field.
    pub fn checked(&self) -> Result<String> {
        if !(1..=MAX_FLAT_CENTS).contains(&self.amount_cents) {
            return Err(Error::invalid(format!(
                "amount_cents must be a whole number from 1 to {MAX_FLAT_CENTS}"
            )));
        }
        let description = self.description.trim();
        if description.is_empty() || description.chars().count() > MAX_BONUS_DESCRIPTION {
            return Err(Error::invalid(format!(
                "description must be 1 to {MAX_BONUS_DESCRIPTION} characters"
            )));
        }
        Ok(description.to_string())
    }
}

impl App {
    /// Gives an approved partner of a program a bonus: a commission of kind `bonus`,
    /// approved at once (no hold), in the program's currency, written with its audit
    /// entry and its `commission.created` event. A partner not approved in the program
    /// gets none (409).
    pub async fn give_bonus(
        &self,
        caller: &Caller,
        program_id: i64,
        partner_id: i64,
        b: BonusBody,
    ) -> Result<CommissionRow> {
        self.allow(caller, Record::Program(program_id), Access::Change)
            .await?;
        let text = b.checked()?;
        let at = self.now_ms();
        let origin = caller.origin.clone();
        let id = self
            .write(move |tx, deltas| {
                async move {
                    let program = tx
                        .sale_program(program_id)
                        .await?
                        .ok_or_else(|| Error::NotFound("Program not found".into()))?;
                    let standing = tx
                        .partner_standing(partner_id, program_id, false)
                        .await?
                        .ok_or_else(|| {
                            Error::NotFound("Partner not found in this program".into())
                        })?;
                    if standing.status != PartnerStatus::Approved {
                        return Err(Error::Conflict(format!(
                            "The partner is {} in this program; only an approved partner \
                             gets a bonus",
                            standing.status
                        )));
                    }
                    let description = bonus_description(&text);
                    let id = tx
                        .insert_commission(&NewCommission {
                            program_id,
                            kind: CommissionKind::Bonus,
                            sale_id: None,
                            lead_id: None,
                            bounty_id: None,
                            partner_id,
                            partner_program_id: standing.partner_program_id,
                            amount_cents: b.amount_cents,
                            currency: &program.currency,
                            at,
                            flags: &[],
                            approval: Approval::Granted,
                            group_id: None,
                            description: Some(&description),
                            reward_facts: None,
                        })
                        .await?;
                    deltas.count_commission(program_id, partner_id, at, b.amount_cents);
                    let entry = Entry::new(
                        at,
                        &origin,
                        Action::BonusCreated,
                        Scope::Program(program_id),
                        Target::commission(id),
                    )
                    .with_details(serde_json::json!({
                        "partner_id": partner_id,
                        "amount_cents": b.amount_cents,
                        "currency": program.currency,
                        "description": text,
                    }));
                    tx.record_audit(&[entry]).await?;
                    let created = Event::new(EventType::CommissionCreated, Subject::Commission(id));
                    tx.record_events(program_id, at, &[created]).await?;
                    Ok(id)
                }
                .boxed()
            })
            .await?;
        self.commission(id).await
    }
}
