//! Bounties: [`BountyStore`] on the pools and [`BountyTx`] on the write connection.

use async_trait::async_trait;

use super::engine::{stmt, Engine, Rec};
use super::write::WriteConnection;
use super::{params, SqlStore};
use crate::bounties::{BountyEarner, BountyRow, BountyStore, BountyTx, NewBounty, PartnerBounty};
use crate::error::{StoreError, StoreResult};
use reftrack_domain::bounties::{Bounty, Metric};

/// The columns of a [`BountyRow`] (`b`), for [`bounty_from_row`].
const BOUNTY_COLUMNS: &str = "b.id, b.program_id, b.name, b.metric, b.threshold, \
    b.amount_cents, b.group_ids, b.starts_at, b.ends_at, b.archived, b.created_at, \
    b.updated_at";

fn bounty_from_row<DB: Engine>(r: &Rec<DB>) -> StoreResult<BountyRow> {
    let metric: String = r.try_get("metric")?;
    let groups: String = r.try_get("group_ids")?;
    let unreadable = |column: &str, e: &dyn std::fmt::Display| {
        StoreError::Other(anyhow::anyhow!("column {column} is unreadable: {e}"))
    };
    Ok(BountyRow {
        id: r.try_get("id")?,
        program_id: r.try_get("program_id")?,
        name: r.try_get("name")?,
        metric: Metric::parse(&metric).ok_or_else(|| unreadable("metric", &metric))?,
        threshold: r.try_get("threshold")?,
        amount_cents: r.try_get("amount_cents")?,
        group_ids: serde_json::from_str(&groups).map_err(|e| unreadable("group_ids", &e))?,
        starts_at: r.try_get("starts_at")?,
        ends_at: r.try_get("ends_at")?,
        archived: r.try_get("archived")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// Runs `sql`, an insert or update of a bounty's fields, bound to `key` ($1: the program of
/// a new bounty, or the bounty), `b`'s fields ($2 to $9) and `at` ($10); the row written.
async fn write_bounty<DB: Engine>(
    conn: &mut DB::Connection,
    sql: &str,
    key: i64,
    b: &BountyRow,
    at: i64,
) -> StoreResult<BountyRow> {
    let row = stmt::<DB>(sql)
        .bind(key)
        .bind(&b.name)
        .bind(b.metric.as_str())
        .bind(b.threshold)
        .bind(b.amount_cents)
        .bind(groups_text(&b.group_ids))
        .bind(b.starts_at)
        .bind(b.ends_at)
        .bind(b.archived)
        .bind(at)
        .fetch_one(conn)
        .await?;
    bounty_from_row(&row)
}

fn groups_text(group_ids: &[i64]) -> String {
    serde_json::to_string(group_ids).unwrap_or_else(|_| "[]".into())
}

#[async_trait]
impl<DB: Engine> BountyStore for SqlStore<DB> {
    async fn bounties(&self, program_id: i64) -> StoreResult<Vec<BountyRow>> {
        let sql = format!(
            "SELECT {BOUNTY_COLUMNS} FROM bounties b WHERE b.program_id = $1 ORDER BY b.id DESC"
        );
        stmt::<DB>(&sql)
            .bind(program_id)
            .read_all(&mut *self.read.acquire().await?, bounty_from_row)
            .await
    }

    async fn bounty(&self, id: i64) -> StoreResult<Option<BountyRow>> {
        let sql = format!("SELECT {BOUNTY_COLUMNS} FROM bounties b WHERE b.id = $1");
        let row = stmt::<DB>(&sql)
            .bind(id)
            .fetch_optional(&mut *self.read.acquire().await?)
            .await?;
        row.as_ref().map(bounty_from_row).transpose()
    }

    async fn bounty_earners(&self, bounty_id: i64) -> StoreResult<Vec<BountyEarner>> {
        stmt::<DB>(
            "SELECT c.partner_id, pa.name, c.id, c.created_at FROM commissions c \
             JOIN partners pa ON pa.id = c.partner_id \
             WHERE c.bounty_id = $1 AND c.kind = 'bounty' ORDER BY c.id",
        )
        .bind(bounty_id)
        .read_all(&mut *self.read.acquire().await?, |r| {
            Ok(BountyEarner {
                partner_id: r.try_get_at(0)?,
                partner_name: r.try_get_at(1)?,
                commission_id: r.try_get_at(2)?,
                earned_at: r.try_get_at(3)?,
            })
        })
        .await
    }

    async fn partner_bounties(
        &self,
        program_id: i64,
        partner_id: i64,
    ) -> StoreResult<Vec<PartnerBounty>> {
        let sql = format!(
            "SELECT {BOUNTY_COLUMNS}, COALESCE(g.value, 0) AS progress, \
             COALESCE(g.earned, FALSE) AS earned FROM bounties b \
             LEFT JOIN bounty_progress g ON g.bounty_id = b.id AND g.partner_id = $2 \
             WHERE b.program_id = $1 AND (NOT b.archived OR COALESCE(g.earned, FALSE)) \
             ORDER BY b.id DESC"
        );
        stmt::<DB>(&sql)
            .bind(program_id)
            .bind(partner_id)
            .read_all(&mut *self.read.acquire().await?, |r| {
                Ok(PartnerBounty {
                    bounty: bounty_from_row(r)?,
                    progress: r.try_get("progress")?,
                    earned: r.try_get("earned")?,
                })
            })
            .await
    }
}

#[async_trait]
impl<DB: Engine> BountyTx for WriteConnection<DB> {
    async fn insert_bounty(&mut self, b: &NewBounty, at: i64) -> StoreResult<BountyRow> {
        let sql = format!(
            "INSERT INTO bounties (program_id, name, metric, threshold, amount_cents, \
             group_ids, starts_at, ends_at, archived, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) RETURNING {}",
            BOUNTY_COLUMNS.replace("b.", "")
        );
        let row = BountyRow {
            id: 0,
            program_id: b.program_id,
            name: b.name.clone(),
            metric: b.metric,
            threshold: b.threshold,
            amount_cents: b.amount_cents,
            group_ids: b.group_ids.clone(),
            starts_at: b.starts_at,
            ends_at: b.ends_at,
            archived: false,
            created_at: at,
            updated_at: at,
        };
        write_bounty::<DB>(&mut *self.conn, &sql, b.program_id, &row, at).await
    }

    async fn lock_bounty(&mut self, id: i64) -> StoreResult<Option<BountyRow>> {
        let sql = format!(
            "SELECT {BOUNTY_COLUMNS} FROM bounties b WHERE b.id = $1 {}",
            DB::ROW_LOCK
        );
        let row = stmt::<DB>(&sql)
            .bind(id)
            .fetch_optional(&mut *self.conn)
            .await?;
        row.as_ref().map(bounty_from_row).transpose()
    }

    async fn save_bounty(&mut self, b: &BountyRow, at: i64) -> StoreResult<BountyRow> {
        let sql = format!(
            "UPDATE bounties SET name = $2, metric = $3, threshold = $4, amount_cents = $5, \
             group_ids = $6, starts_at = $7, ends_at = $8, archived = $9, updated_at = $10 \
             WHERE id = $1 RETURNING {}",
            BOUNTY_COLUMNS.replace("b.", "")
        );
        write_bounty::<DB>(&mut *self.conn, &sql, b.id, b, at).await
    }

    async fn live_bounties(&mut self, program_id: i64) -> StoreResult<Vec<Bounty>> {
        let sql = format!(
            "SELECT {BOUNTY_COLUMNS} FROM bounties b WHERE b.program_id = $1 AND NOT b.archived"
        );
        let rows = stmt::<DB>(&sql)
            .bind(program_id)
            .read_all(&mut *self.conn, bounty_from_row)
            .await?;
        Ok(rows.iter().map(BountyRow::rule).collect())
    }

    async fn add_bounty_progress(
        &mut self,
        bounty_id: i64,
        partner_id: i64,
        step: i64,
    ) -> StoreResult<(i64, bool)> {
        // One statement: on PostgreSQL the row stays locked until the transaction ends, so
        // a second process adding to it waits and then reads this one's value.
        let row = stmt::<DB>(
            "INSERT INTO bounty_progress (bounty_id, partner_id, value) VALUES ($1, $2, $3) \
             ON CONFLICT (bounty_id, partner_id) \
             DO UPDATE SET value = bounty_progress.value + excluded.value \
             RETURNING value, earned",
        )
        .bind(bounty_id)
        .bind(partner_id)
        .bind(step)
        .fetch_one(&mut *self.conn)
        .await?;
        Ok((row.try_get_at(0)?, row.try_get_at(1)?))
    }

    async fn mark_bounty_earned(&mut self, bounty_id: i64, partner_id: i64) -> StoreResult<()> {
        stmt::<DB>(
            "UPDATE bounty_progress SET earned = TRUE WHERE bounty_id = $1 AND partner_id = $2",
        )
        .bind(bounty_id)
        .bind(partner_id)
        .execute(&mut *self.conn)
        .await?;
        Ok(())
    }

    async fn foreign_groups(
        &mut self,
        program_id: i64,
        group_ids: &[i64],
    ) -> StoreResult<Vec<i64>> {
        if group_ids.is_empty() {
            return Ok(Vec::new());
        }
        // One statement for the list, as the payout statements read their partners.
        let sql = format!(
            "SELECT id FROM partner_groups WHERE program_id = $1 AND id IN ({})",
            params(2, group_ids.len())
        );
        let mut q = stmt::<DB>(&sql).bind(program_id);
        for id in group_ids {
            q = q.bind(*id);
        }
        let ours: Vec<i64> = q.scalar_all(&mut *self.conn).await?;
        let foreign = group_ids
            .iter()
            .copied()
            .filter(|id| !ours.contains(id))
            .collect();
        Ok(foreign)
    }
}
