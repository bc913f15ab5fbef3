//! The statements of the management lists and of access checks (on the read pool).
//! `$1` of every scoped list is the dashboard user whose active memberships bound it, or
//! null for the operator.

use async_trait::async_trait;

use super::engine::{stmt, Engine};
use super::partner_links::{link_from_row, partner_from_row, LINK_COLUMNS, PARTNER_COLUMNS};
use super::programs::{program_from_row, PROGRAM_COLUMNS};
use super::{keyset, params, SqlStore};
use crate::error::StoreResult;
use crate::management::{
    LinkFilter, ManagementReads, MembershipView, ProgramPartnerFilter, ProgramPartnerRow, Record,
    TopPartner,
};
use crate::model::{Link, MemberRow, Partner, Program, Workspace};
use crate::payout_model::Page;
use reftrack_domain::status::{LinkStatus, PartnerStatus};

/// The rows of [`ProgramPartnerRow`]s, a program's partners `pp` with their partner `p`;
/// a `WHERE` follows.
pub(super) const PROGRAM_PARTNER_ROWS: &str =
    "SELECT pp.id AS record_id, pp.partner_id, p.name, p.email, \
    p.code, pp.status, pp.group_id, pp.created_at, pp.total_clicks AS clicks, pp.total_leads AS leads, \
    pp.total_sales AS sales, pp.total_revenue_cents AS revenue_cents, \
    pp.total_commission_cents AS commission_cents, pp.website, pp.message \
    FROM partner_programs pp \
    JOIN partners p ON p.id = pp.partner_id";

/// The partner `partner_id`'s row in program `program_id`, as [`PROGRAM_PARTNER_ROWS`]
/// lists it.
pub(super) async fn program_partner_row<DB: Engine>(
    conn: &mut DB::Connection,
    program_id: i64,
    partner_id: i64,
) -> StoreResult<Option<ProgramPartnerRow>> {
    let sql = format!("{PROGRAM_PARTNER_ROWS} WHERE pp.program_id = $1 AND pp.partner_id = $2");
    Ok(stmt::<DB>(&sql)
        .bind(program_id)
        .bind(partner_id)
        .record_optional(conn)
        .await?)
}

/// The workspaces where the user `$1` is an active member.
const MINE: &str =
    "(SELECT workspace_id FROM memberships WHERE user_id = $1 AND status = 'active')";

#[async_trait]
impl<DB: Engine> ManagementReads for SqlStore<DB> {
    async fn memberships_of(&self, user_id: i64) -> StoreResult<Vec<MembershipView>> {
        Ok(stmt::<DB>(
            "SELECT m.workspace_id, w.name AS workspace_name, m.role, m.status, \
             w.require_two_factor \
             FROM memberships m JOIN workspaces w ON w.id = m.workspace_id \
             WHERE m.user_id = $1 ORDER BY m.workspace_id",
        )
        .bind(user_id)
        .records(&mut *self.read.acquire().await?)
        .await?)
    }

    async fn active_owners(&self, workspace_id: i64) -> StoreResult<Vec<i64>> {
        Ok(stmt::<DB>(
            "SELECT user_id FROM memberships WHERE workspace_id = $1 \
             AND role = 'owner' AND status = 'active' ORDER BY user_id",
        )
        .bind(workspace_id)
        .scalar_all(&mut *self.read.acquire().await?)
        .await?)
    }

    async fn workspaces_of(&self, record: Record) -> StoreResult<Vec<i64>> {
        // A record of one program belongs to that program's workspace.
        let of_program = |table: &str| {
            format!(
                "SELECT g.workspace_id FROM {table} r \
                 JOIN programs g ON g.id = r.program_id WHERE r.id = $1"
            )
        };
        let (sql, id) = match record {
            Record::Workspace(id) => ("SELECT id FROM workspaces WHERE id = $1".into(), id),
            Record::Program(id) => ("SELECT workspace_id FROM programs WHERE id = $1".into(), id),
            Record::Partner(id) => (
                "SELECT workspace_id FROM partners WHERE id = $1 AND workspace_id IS NOT NULL \
                 UNION SELECT g.workspace_id FROM partner_programs pp \
                 JOIN programs g ON g.id = pp.program_id WHERE pp.partner_id = $1"
                    .into(),
                id,
            ),
            Record::Link(id) => (of_program("referral_links"), id),
            Record::Commission(id) => (of_program("commissions"), id),
            Record::Webhook(id) => (of_program("webhook_endpoints"), id),
            Record::Payout(id) => (of_program("payouts"), id),
            Record::Group(id) => (of_program("partner_groups"), id),
            Record::Bounty(id) => (of_program("bounties"), id),
        };
        Ok(stmt::<DB>(&sql)
            .bind(id)
            .scalar_all(&mut *self.read.acquire().await?)
            .await?)
    }

    async fn list_workspaces(
        &self,
        member: Option<i64>,
        page: Page,
    ) -> StoreResult<Vec<Workspace>> {
        let sql = format!(
            "SELECT id, name, created_at FROM workspaces \
             WHERE ($1 IS NULL OR id IN {MINE}) AND {keyset}",
            keyset = keyset("id", 2),
        );
        Ok(stmt::<DB>(&sql)
            .bind(member)
            .page(page)
            .records(&mut *self.read.acquire().await?)
            .await?)
    }

    async fn list_programs(
        &self,
        member: Option<i64>,
        workspace_id: Option<i64>,
        page: Page,
    ) -> StoreResult<Vec<Program>> {
        let sql = format!(
            "SELECT {PROGRAM_COLUMNS} FROM programs \
             WHERE ($1 IS NULL OR workspace_id IN {MINE}) \
             AND ($2 IS NULL OR workspace_id = $2) AND {keyset}",
            keyset = keyset("id", 3),
        );
        stmt::<DB>(&sql)
            .bind(member)
            .bind(workspace_id)
            .page(page)
            .read_all(&mut *self.read.acquire().await?, program_from_row)
            .await
    }

    async fn list_partners(
        &self,
        member: Option<i64>,
        q: Option<&str>,
        page: Page,
    ) -> StoreResult<Vec<Partner>> {
        let pattern = q.map(like_pattern);
        let sql = format!(
            "SELECT {PARTNER_COLUMNS} FROM partners p \
             WHERE ($1 IS NULL OR p.workspace_id IN {MINE} OR EXISTS (\
               SELECT 1 FROM partner_programs pp JOIN programs g ON g.id = pp.program_id \
               WHERE pp.partner_id = p.id AND g.workspace_id IN {MINE})) \
             AND ($2 IS NULL OR LOWER(p.name) LIKE $2 ESCAPE '\\' \
               OR LOWER(p.email) LIKE $2 ESCAPE '\\' OR LOWER(p.code) LIKE $2 ESCAPE '\\') \
             AND {keyset}",
            keyset = keyset("p.id", 3),
        );
        stmt::<DB>(&sql)
            .bind(member)
            .bind(pattern)
            .page(page)
            .read_all(&mut *self.read.acquire().await?, partner_from_row)
            .await
    }

    async fn program_partners(
        &self,
        program_id: i64,
        filter: ProgramPartnerFilter,
        page: Page,
    ) -> StoreResult<Vec<ProgramPartnerRow>> {
        let sql = format!(
            "{PROGRAM_PARTNER_ROWS} WHERE pp.program_id = $1 \
             AND ($2 IS NULL OR pp.status = $2) AND ($5 IS NULL OR pp.group_id = $5) \
             AND {keyset}",
            keyset = keyset("pp.id", 3),
        );
        Ok(stmt::<DB>(&sql)
            .bind(program_id)
            .bind(filter.status.map(PartnerStatus::as_str))
            .page(page)
            .bind(filter.group_id)
            .records(&mut *self.read.acquire().await?)
            .await?)
    }

    async fn program_partner(
        &self,
        program_id: i64,
        partner_id: i64,
    ) -> StoreResult<Option<ProgramPartnerRow>> {
        program_partner_row::<DB>(&mut *self.read.acquire().await?, program_id, partner_id).await
    }

    async fn list_links(
        &self,
        member: Option<i64>,
        filter: LinkFilter,
        page: Page,
    ) -> StoreResult<Vec<Link>> {
        let sql = format!(
            "SELECT {LINK_COLUMNS} FROM referral_links \
             WHERE ($1 IS NULL OR program_id IN (SELECT id FROM programs WHERE workspace_id IN {MINE})) \
             AND ($2 IS NULL OR program_id = $2) AND ($3 IS NULL OR partner_id = $3) \
             AND ($4 IS NULL OR status = $4) AND {keyset}",
            keyset = keyset("id", 5),
        );
        stmt::<DB>(&sql)
            .bind(member)
            .bind(filter.program_id)
            .bind(filter.partner_id)
            .bind(filter.status.map(LinkStatus::as_str))
            .page(page)
            .read_all(&mut *self.read.acquire().await?, link_from_row)
            .await
    }

    async fn workspace_members(&self, workspace_id: i64) -> StoreResult<Vec<MemberRow>> {
        super::users::workspace_members::<DB>(&mut *self.read.acquire().await?, workspace_id).await
    }

    async fn top_partners(
        &self,
        program_id: i64,
        from_day: &str,
        to_day: &str,
        limit: i64,
    ) -> StoreResult<Vec<TopPartner>> {
        Ok(stmt::<DB>(
            "SELECT r.partner_id, p.name, r.clicks, r.leads, r.sales, \
             r.revenue AS revenue_figure, r.commission AS commission_figure \
             FROM (SELECT partner_id, CAST(SUM(clicks) AS BIGINT) AS clicks, \
               CAST(SUM(leads) AS BIGINT) AS leads, CAST(SUM(sales) AS BIGINT) AS sales, \
               CAST(SUM(revenue_cents) AS BIGINT) AS revenue, \
               CAST(SUM(commission_cents) AS BIGINT) AS commission \
               FROM partner_daily_rollups WHERE program_id = $1 AND day >= $2 AND day <= $3 \
               GROUP BY partner_id) r \
             JOIN partners p ON p.id = r.partner_id \
             WHERE r.clicks > 0 OR r.leads > 0 OR r.sales > 0 OR r.revenue <> 0 \
             ORDER BY r.revenue DESC, r.clicks DESC, r.partner_id LIMIT $4",
        )
        .bind(program_id)
        .bind(from_day)
        .bind(to_day)
        .bind(limit)
        .records(&mut *self.read.acquire().await?)
        .await?)
    }

    async fn partner_names(&self, program_id: i64, ids: &[i64]) -> StoreResult<Vec<(i64, String)>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT p.id, p.name FROM partner_programs pp JOIN partners p ON p.id = pp.partner_id \
             WHERE pp.program_id = $1 AND pp.partner_id IN ({})",
            params(2, ids.len())
        );
        let mut q = stmt::<DB>(&sql).bind(program_id);
        for id in ids {
            q = q.bind(*id);
        }
        let rows = q.fetch_all(&mut *self.read.acquire().await?).await?;
        rows.iter()
            .map(|r| Ok((r.try_get_at(0)?, r.try_get_at(1)?)))
            .collect()
    }
}

/// A `LIKE` pattern matching any text that contains `q`, its own `%`, `_` and `\`
/// escaped with `\`.
pub(super) fn like_pattern(q: &str) -> String {
    let mut p = String::with_capacity(q.len() + 2);
    p.push('%');
    for c in q.chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

#[cfg(test)]
mod tests {
    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(super::like_pattern("a_b%c\\"), "%a\\_b\\%c\\\\%");
    }
}
