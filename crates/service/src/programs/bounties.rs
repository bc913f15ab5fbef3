//! Bounties: created, listed, changed and archived by a program's owners; each partner's
//! bounties with its value and whether it earned them. What an event does to them is the
//! tracking flows' ([`crate::tracking`]), decided by [`reftrack_domain::bounties`].

use super::*;
use crate::Listed;
use reftrack_domain::bounties::{self, Metric};
use reftrack_domain::time::parse_instant;
use reftrack_store::{BountyEarner, BountyRow, NewBounty, PartnerBounty};

/// The body of the call that creates a bounty.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BountyBody {
    /// 1 to 200 characters, shown to partners.
    #[schema(example = "Ten sales in December")]
    pub name: String,
    /// What it counts: `sales`, `leads` or `revenue_cents`.
    #[schema(example = "sales")]
    pub metric: String,
    /// The value of the metric that earns it (at least 1).
    pub threshold: i64,
    /// What it pays, in the program's currency's minor units (1 to 100000000).
    pub amount_cents: i64,
    /// The groups whose partners may earn it (at most 100); empty or absent: every group.
    #[serde(default)]
    pub group_ids: Option<Vec<i64>>,
    /// When it starts counting: an RFC 3339 date-time or a date (its midnight UTC);
    /// absent: from now.
    pub starts_at: Option<String>,
    /// When it stops counting (exclusive); absent: never.
    pub ends_at: Option<String>,
}

/// The body of the call that changes a bounty: the fields it names.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BountyPatchBody {
    pub name: Option<String>,
    pub metric: Option<String>,
    pub threshold: Option<i64>,
    pub amount_cents: Option<i64>,
    pub group_ids: Option<Vec<i64>>,
    /// Null: from its creation.
    #[serde(default, deserialize_with = "nullable")]
    pub starts_at: Option<Option<String>>,
    /// Null: never ends.
    #[serde(default, deserialize_with = "nullable")]
    pub ends_at: Option<Option<String>>,
}

/// A bounty with the partners that earned it, for the dashboard.
#[derive(Debug, Clone)]
pub struct BountyWithEarners {
    pub bounty: BountyRow,
    pub earners: Vec<BountyEarner>,
}

fn metric(text: &str) -> Result<Metric> {
    Metric::parse(text.trim()).ok_or_else(|| {
        Error::invalid("metric must be one of: sales, leads, revenue_cents".to_string())
    })
}

fn instant(field: &str, text: Option<&str>) -> Result<Option<i64>> {
    match text.map(str::trim) {
        None | Some("") => Ok(None),
        Some(t) => parse_instant(t).map(Some).ok_or_else(|| {
            Error::invalid(format!(
                "{field} must be an RFC 3339 date-time (2026-12-01T00:00:00Z) or a date (2026-12-01)"
            ))
        }),
    }
}

/// The bounty's fields checked, the first wrong one named.
fn checked(b: &BountyRow) -> Result<()> {
    bounties::check(&b.name, b.threshold, b.amount_cents, b.starts_at, b.ends_at)
        .map_err(Error::invalid)
}

/// The audit entry of a bounty: what it holds.
fn bounty_entry(
    at: i64,
    origin: &reftrack_domain::audit::Origin,
    action: Action,
    b: &BountyRow,
) -> Entry {
    Entry::new(
        at,
        origin,
        action,
        Scope::Program(b.program_id),
        Target::bounty(b.id),
    )
    .with_details(serde_json::json!({
        "name": b.name,
        "metric": b.metric,
        "threshold": b.threshold,
        "amount_cents": b.amount_cents,
        "group_ids": b.group_ids,
        "starts_at": b.starts_at.map(iso),
        "ends_at": b.ends_at.map(iso),
    }))
}

fn bounty_missing() -> Error {
    Error::NotFound("Bounty not found".into())
}

impl App {
    /// Creates a bounty of a program. It counts the events recorded from now on, in its
    /// window.
    pub async fn create_bounty(
        &self,
        caller: &Caller,
        program_id: i64,
        b: BountyBody,
    ) -> Result<BountyRow> {
        self.allow(caller, Record::Program(program_id), Access::Change)
            .await?;
        let new = NewBounty {
            program_id,
            name: name("name", &b.name, bounties::MAX_NAME)?,
            metric: metric(&b.metric)?,
            threshold: b.threshold,
            amount_cents: b.amount_cents,
            group_ids: dedup(b.group_ids.unwrap_or_default())?,
            starts_at: instant("starts_at", b.starts_at.as_deref())?,
            ends_at: instant("ends_at", b.ends_at.as_deref())?,
        };
        bounties::check(
            &new.name,
            new.threshold,
            new.amount_cents,
            new.starts_at,
            new.ends_at,
        )
        .map_err(Error::invalid)?;
        self.program(program_id).await?;
        let at = self.now_ms();
        let origin = caller.origin.clone();
        self.write(move |tx, _| {
            async move {
                refuse_foreign_groups(tx, program_id, &new.group_ids).await?;
                let row = tx.insert_bounty(&new, at).await?;
                let entry = bounty_entry(at, &origin, Action::BountyCreated, &row);
                tx.record_audit(&[entry]).await?;
                Ok(row)
            }
            .boxed()
        })
        .await
    }

    /// A program's bounties, newest first, as one page (a program has few).
    pub async fn list_bounties(
        &self,
        caller: &Caller,
        program_id: i64,
    ) -> Result<Listed<BountyRow>> {
        self.readable_program(caller, program_id).await?;
        Ok(Listed {
            data: self.store.bounties(program_id).await?,
            next_cursor: None,
        })
    }

    /// One bounty the caller may read.
    pub async fn bounty(&self, caller: &Caller, id: i64) -> Result<BountyRow> {
        self.allow(caller, Record::Bounty(id), Access::Read).await?;
        self.store.bounty(id).await?.ok_or_else(bounty_missing)
    }

    /// A program's bounties with the partners that earned each, for the dashboard.
    pub async fn bounties_with_earners(
        &self,
        caller: &Caller,
        program_id: i64,
    ) -> Result<Vec<BountyWithEarners>> {
        self.readable_program(caller, program_id).await?;
        let mut out = Vec::new();
        for bounty in self.store.bounties(program_id).await? {
            let earners = self.store.bounty_earners(bounty.id).await?;
            out.push(BountyWithEarners { bounty, earners });
        }
        Ok(out)
    }

    /// The partners that earned a bounty the caller may read, first earner first.
    pub async fn bounty_earners(&self, caller: &Caller, id: i64) -> Result<Vec<BountyEarner>> {
        self.allow(caller, Record::Bounty(id), Access::Read).await?;
        Ok(self.store.bounty_earners(id).await?)
    }

    /// Changes a bounty's fields. The change applies to the events recorded from now on;
    /// the awards made stay. An archived bounty is not changed (409).
    pub async fn update_bounty(
        &self,
        caller: &Caller,
        id: i64,
        b: BountyPatchBody,
    ) -> Result<BountyRow> {
        self.allow(caller, Record::Bounty(id), Access::Change)
            .await?;
        let name_of = b
            .name
            .as_deref()
            .map(|n| name("name", n, bounties::MAX_NAME))
            .transpose()?;
        let metric_of = b.metric.as_deref().map(metric).transpose()?;
        let groups_of = b.group_ids.map(dedup).transpose()?;
        let starts = b
            .starts_at
            .map(|s| instant("starts_at", s.as_deref()))
            .transpose()?;
        let ends = b
            .ends_at
            .map(|e| instant("ends_at", e.as_deref()))
            .transpose()?;
        let at = self.now_ms();
        let origin = caller.origin.clone();
        self.write(move |tx, _| {
            async move {
                let old = tx.lock_bounty(id).await?.ok_or_else(bounty_missing)?;
                if old.archived {
                    return Err(Error::Conflict(
                        "The bounty is archived; it no longer changes".into(),
                    ));
                }
                let mut new = old.clone();
                if let Some(n) = name_of {
                    new.name = n;
                }
                if let Some(m) = metric_of {
                    new.metric = m;
                }
                if let Some(t) = b.threshold {
                    new.threshold = t;
                }
                if let Some(a) = b.amount_cents {
                    new.amount_cents = a;
                }
                if let Some(g) = groups_of {
                    new.group_ids = g;
                }
                if let Some(s) = starts {
                    new.starts_at = s;
                }
                if let Some(e) = ends {
                    new.ends_at = e;
                }
                checked(&new)?;
                refuse_foreign_groups(tx, new.program_id, &new.group_ids).await?;
                if new == old {
                    return Ok(old);
                }
                let saved = tx.save_bounty(&new, at).await?;
                let mut changes = Changes::new();
                changes
                    .field("name", &old.name, &saved.name)
                    .field("metric", &old.metric, &saved.metric)
                    .field("threshold", &old.threshold, &saved.threshold)
                    .field("amount_cents", &old.amount_cents, &saved.amount_cents)
                    .field("group_ids", &old.group_ids, &saved.group_ids)
                    .field(
                        "starts_at",
                        &old.starts_at.map(iso),
                        &saved.starts_at.map(iso),
                    )
                    .field("ends_at", &old.ends_at.map(iso), &saved.ends_at.map(iso));
                if !changes.is_empty() {
                    let entry = Entry::new(
                        at,
                        &origin,
                        Action::BountyUpdated,
                        Scope::Program(saved.program_id),
                        Target::bounty(saved.id),
                    )
                    .with_details(changes.into_value());
                    tx.record_audit(&[entry]).await?;
                }
                Ok(saved)
            }
            .boxed()
        })
        .await
    }

    /// Archives a bounty: it makes no new awards, and those made stay. Archiving an
    /// archived bounty changes nothing.
    pub async fn archive_bounty(&self, caller: &Caller, id: i64) -> Result<BountyRow> {
        self.allow(caller, Record::Bounty(id), Access::Change)
            .await?;
        let at = self.now_ms();
        let origin = caller.origin.clone();
        self.write(move |tx, _| {
            async move {
                let old = tx.lock_bounty(id).await?.ok_or_else(bounty_missing)?;
                if old.archived {
                    return Ok(old);
                }
                let saved = tx
                    .save_bounty(
                        &BountyRow {
                            archived: true,
                            ..old
                        },
                        at,
                    )
                    .await?;
                let entry = bounty_entry(at, &origin, Action::BountyArchived, &saved);
                tx.record_audit(&[entry]).await?;
                Ok(saved)
            }
            .boxed()
        })
        .await
    }

    /// The bounties of a program where the partner is approved that its group may earn,
    /// and those it earned, each with its value and whether it earned it.
    pub async fn partner_bounties(
        &self,
        partner_id: i64,
        program_id: i64,
    ) -> Result<Vec<PartnerBounty>> {
        self.approved_in(partner_id, program_id).await?;
        let group_id = self
            .store
            .partner_program(program_id, partner_id)
            .await?
            .group_id;
        Ok(self
            .store
            .partner_bounties(program_id, partner_id)
            .await?
            .into_iter()
            .filter(|b| b.earned || b.bounty.rule().is_for(group_id))
            .collect())
    }
}

/// The most groups a bounty names.
pub const MAX_BOUNTY_GROUPS: usize = 100;

/// `ids` without repeats, in their order; 400 past [`MAX_BOUNTY_GROUPS`].
fn dedup(ids: Vec<i64>) -> Result<Vec<i64>> {
    let mut seen = std::collections::HashSet::new();
    let ids: Vec<i64> = ids.into_iter().filter(|id| seen.insert(*id)).collect();
    if ids.len() > MAX_BOUNTY_GROUPS {
        return Err(Error::invalid(format!(
            "group_ids must name at most {MAX_BOUNTY_GROUPS} groups"
        )));
    }
    Ok(ids)
}

/// 400 when a group of `group_ids` is not one of the program's.
async fn refuse_foreign_groups(
    tx: &mut dyn reftrack_store::tx::Tx,
    program_id: i64,
    group_ids: &[i64],
) -> Result<()> {
    match tx.foreign_groups(program_id, group_ids).await?.first() {
        None => Ok(()),
        Some(id) => Err(Error::invalid(format!(
            "group_ids must be groups of this program ({id} is not)"
        ))),
    }
}
