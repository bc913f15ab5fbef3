//! Partner groups: their statements, [`GroupStore`] on the pools, and the mirror of a
//! default group's sale reward in its program's `commission_*` columns.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use sqlx::Connection;

use super::audit::insert_entries;
use super::engine::{stmt, Engine, Rec};
use super::SqlStore;
use crate::audit::AuditOf;
use crate::error::{StoreError, StoreResult};
use crate::groups::{Group, GroupPatch, GroupStore, NewGroup};
use reftrack_domain::commission::CommissionRule;
use reftrack_domain::rewards::{storable, Reward, Rewards};

/// The columns of a [`Group`] (`g`), for [`group_from_row`].
const GROUP_SELECT: &str = "SELECT g.id, g.program_id, g.name, g.is_default, g.rewards, \
    g.commission_hold_days, \
    (SELECT COUNT(*) FROM partner_programs pp WHERE pp.group_id = g.id) AS partner_count, \
    g.created_at, g.updated_at FROM partner_groups g";

fn group_from_row<DB: Engine>(r: &Rec<DB>) -> StoreResult<Group> {
    let rewards: String = r.try_get("rewards")?;
    Ok(Group {
        id: r.try_get("id")?,
        program_id: r.try_get("program_id")?,
        name: r.try_get("name")?,
        is_default: r.try_get("is_default")?,
        rewards: serde_json::from_str(&rewards)
            .map_err(|e| StoreError::Other(anyhow::anyhow!("column rewards is unreadable: {e}")))?,
        commission_hold_days: r.try_get("commission_hold_days")?,
        partner_count: r.try_get("partner_count")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// Rewards as stored (their wire form, validated when written).
pub(crate) fn stored_rewards(text: &str) -> StoreResult<Rewards> {
    Rewards::from_stored(text)
        .map_err(|e| StoreError::Other(anyhow::anyhow!("stored rewards are unreadable: {e}")))
}

/// The parsed rewards of groups by id and version, so that a sale parses its group's
/// rewards only when they changed. Versions only rise, so an entry is never stale; the map
/// is emptied when it grows past [`RewardsCache::MAX`] entries.
#[derive(Default)]
pub struct RewardsCache {
    entries: Mutex<HashMap<(i64, i64), Arc<Rewards>>>,
}

impl RewardsCache {
    const MAX: usize = 10_000;

    /// The rewards of `group_id` at `version`, stored as `text`.
    pub fn get(&self, group_id: i64, version: i64, text: &str) -> StoreResult<Arc<Rewards>> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = entries.get(&(group_id, version)) {
            return Ok(r.clone());
        }
        let parsed = Arc::new(stored_rewards(text)?);
        if entries.len() >= Self::MAX {
            entries.clear();
        }
        entries.insert((group_id, version), parsed.clone());
        Ok(parsed)
    }
}

async fn one<DB: Engine>(conn: &mut DB::Connection, id: i64) -> StoreResult<Group> {
    let sql = format!("{GROUP_SELECT} WHERE g.id = $1");
    match stmt::<DB>(&sql).bind(id).fetch_optional(&mut *conn).await? {
        Some(row) => group_from_row(&row),
        None => Err(StoreError::NotFound("group")),
    }
}

/// Creates a program's default group, named `Default`, with `rewards`.
pub(super) async fn insert_default_group<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    rewards: &Rewards,
    at: i64,
) -> StoreResult<i64> {
    Ok(stmt::<DB>(
        "INSERT INTO partner_groups (program_id, name, is_default, rewards, created_at, \
         updated_at) VALUES ($1, 'Default', TRUE, $2, $3, $3) RETURNING id",
    )
    .bind(program_id)
    .bind(rewards.to_json().to_string())
    .bind(at)
    .scalar(&mut *conn)
    .await?)
}

/// A program's default group: its id and rewards, locked until the transaction ends.
async fn default_group_locked<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
) -> StoreResult<(i64, Rewards)> {
    let sql = format!(
        "SELECT id, rewards FROM partner_groups WHERE program_id = $1 AND is_default {}",
        DB::ROW_LOCK
    );
    let row = stmt::<DB>(&sql)
        .bind(program_id)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or(StoreError::NotFound("group"))?;
    let text: String = row.try_get_at(1)?;
    Ok((row.try_get_at(0)?, stored_rewards(&text)?))
}

/// Stores a group's new rewards, a new version of them.
async fn set_rewards<DB: Engine>(
    conn: &mut DB::Connection,
    id: i64,
    rewards: &Rewards,
    at: i64,
) -> StoreResult<()> {
    stmt::<DB>(
        "UPDATE partner_groups SET rewards = $1, version = version + 1, updated_at = $2 \
         WHERE id = $3",
    )
    .bind(rewards.to_json().to_string())
    .bind(at)
    .bind(id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// A program's `commission` and `recurring_commission_months` changed by a `PATCH` of the
/// program: the default group's sale reward takes them, keeping its modifiers (a group
/// without a sale reward gets one of that rule).
pub(super) async fn program_commission_changed<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    rule: CommissionRule,
    recurring_months: Option<i64>,
    at: i64,
) -> StoreResult<()> {
    let rule = storable(rule);
    let (id, mut rewards) = default_group_locked::<DB>(conn, program_id).await?;
    let sale = rewards.sale.get_or_insert_with(|| Reward {
        rule,
        max_duration_months: recurring_months,
        modifiers: Vec::new(),
    });
    sale.rule = rule;
    sale.max_duration_months = recurring_months;
    set_rewards::<DB>(conn, id, &rewards, at).await
}

/// The program columns that mirror a default group's sale reward: a group without one
/// reads as a flat 0 commission, which creates none either.
async fn mirror_in_program<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    sale: Option<&Reward>,
    at: i64,
) -> StoreResult<()> {
    let (rule, months) = match sale {
        Some(r) => (r.rule, r.max_duration_months),
        None => (CommissionRule::Flat { amount_cents: 0 }, None),
    };
    let (kind, bps, flat) = super::programs::commission_columns(rule);
    stmt::<DB>(
        "UPDATE programs SET commission_type = $1, commission_bps = $2, \
         commission_amount_cents = $3, recurring_commission_months = $4, updated_at = $5 \
         WHERE id = $6",
    )
    .bind(kind)
    .bind(bps)
    .bind(flat)
    .bind(months)
    .bind(at)
    .bind(program_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

#[async_trait]
impl<DB: Engine> GroupStore for SqlStore<DB> {
    async fn create_group(
        &self,
        g: &NewGroup,
        at: i64,
        audit: AuditOf<'_, Group>,
    ) -> StoreResult<Group> {
        let mut conn = self.write.acquire().await?;
        let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
        let rewards = match &g.rewards {
            Some(r) => r.clone(),
            None => default_group_locked::<DB>(&mut tx, g.program_id).await?.1,
        };
        let id: i64 = stmt::<DB>(
            "INSERT INTO partner_groups (program_id, name, is_default, rewards, \
             commission_hold_days, created_at, updated_at) \
             VALUES ($1, $2, FALSE, $3, $4, $5, $5) RETURNING id",
        )
        .bind(g.program_id)
        .bind(&g.name)
        .bind(rewards.to_json().to_string())
        .bind(g.commission_hold_days)
        .bind(at)
        .scalar(&mut *tx)
        .await
        .map_err(|e| StoreError::from(e).conflict_on("group name"))?;
        let group = one::<DB>(&mut tx, id).await?;
        insert_entries::<DB>(&mut tx, &audit(None, &group)).await?;
        tx.commit().await?;
        Ok(group)
    }

    async fn groups(&self, program_id: i64) -> StoreResult<Vec<Group>> {
        let sql = format!(
            "{GROUP_SELECT} WHERE g.program_id = $1 ORDER BY g.is_default DESC, \
             lower(g.name), g.id"
        );
        stmt::<DB>(&sql)
            .bind(program_id)
            .read_all(&mut *self.read.acquire().await?, group_from_row)
            .await
    }

    async fn group(&self, id: i64) -> StoreResult<Group> {
        one::<DB>(&mut *self.read.acquire().await?, id).await
    }

    async fn update_group(
        &self,
        id: i64,
        patch: &GroupPatch,
        at: i64,
        audit: AuditOf<'_, Group>,
    ) -> StoreResult<Group> {
        let mut conn = self.write.acquire().await?;
        let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
        let lock = format!(
            "SELECT id FROM partner_groups WHERE id = $1 {}",
            DB::ROW_LOCK
        );
        if !stmt::<DB>(&lock).bind(id).has_row(&mut *tx).await? {
            return Err(StoreError::NotFound("group"));
        }
        let old = one::<DB>(&mut tx, id).await?;
        stmt::<DB>(
            "UPDATE partner_groups SET name = COALESCE($1, name), \
             commission_hold_days = CASE WHEN $2 THEN $3 ELSE commission_hold_days END, \
             updated_at = $4 WHERE id = $5",
        )
        .bind(&patch.name)
        .bind(patch.commission_hold_days.is_some())
        .bind(patch.commission_hold_days.flatten())
        .bind(at)
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(|e| StoreError::from(e).conflict_on("group name"))?;
        if let Some(rewards) = &patch.rewards {
            set_rewards::<DB>(&mut tx, id, rewards, at).await?;
            if old.is_default {
                mirror_in_program::<DB>(&mut tx, old.program_id, rewards.sale.as_ref(), at).await?;
            }
        }
        let new = one::<DB>(&mut tx, id).await?;
        insert_entries::<DB>(&mut tx, &audit(Some(&old), &new)).await?;
        tx.commit().await?;
        Ok(new)
    }

    async fn delete_group(&self, id: i64, audit: AuditOf<'_, Group>) -> StoreResult<Group> {
        let mut conn = self.write.acquire().await?;
        let mut tx = conn.begin_with(DB::BEGIN_WRITE).await?;
        let lock = format!(
            "SELECT id FROM partner_groups WHERE id = $1 {}",
            DB::ROW_LOCK
        );
        if !stmt::<DB>(&lock).bind(id).has_row(&mut *tx).await? {
            return Err(StoreError::NotFound("group"));
        }
        let old = one::<DB>(&mut tx, id).await?;
        if old.is_default {
            return Err(StoreError::Conflict("default group"));
        }
        if old.partner_count > 0 {
            return Err(StoreError::Conflict("group with partners"));
        }
        stmt::<DB>("DELETE FROM partner_groups WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        insert_entries::<DB>(&mut tx, &audit(Some(&old), &old)).await?;
        tx.commit().await?;
        Ok(old)
    }
}
