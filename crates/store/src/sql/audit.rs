//! The audit log: its insert (shared by the committer's transaction and the store
//! methods that write their own) and its list.

use async_trait::async_trait;

use super::engine::{stmt, Engine, Rec};
use super::write::WriteConnection;
use super::{keyset, SqlStore};
use crate::audit::{
    AuditActor, AuditEntry, AuditFilter, AuditRow, AuditStore, AuditTarget, AuditTx,
};
use crate::error::{StoreError, StoreResult};
use crate::payout_model::Page;
use reftrack_domain::audit::Scope;

/// Writes `entries` on `conn`, inside the caller's transaction. A program's entry takes
/// the program's workspace, read by the insert itself.
pub(crate) async fn insert_entries<DB: Engine>(
    conn: &mut DB::Connection,
    entries: &[AuditEntry],
) -> StoreResult<()> {
    for e in entries {
        let (workspace, program) = match e.scope {
            Scope::Workspace(id) => (Some(id), None),
            Scope::Program(id) => (None, Some(id)),
        };
        let written = stmt::<DB>(
            "INSERT INTO audit_log (workspace_id, program_id, at, actor_type, actor_id, \
             actor_email, action, target_type, target_id, details, ip, request_id) \
             SELECT COALESCE($1, (SELECT workspace_id FROM programs WHERE id = $2)), $2, $3, \
             $4, $5, $6, $7, $8, $9, $10, $11, $12 \
             WHERE COALESCE($1, (SELECT workspace_id FROM programs WHERE id = $2)) IS NOT NULL",
        )
        .bind(workspace)
        .bind(program)
        .bind(e.at)
        .bind(e.origin.actor.kind.as_str())
        .bind(e.origin.actor.id)
        .bind(e.origin.actor.email.clone())
        .bind(e.action.as_str())
        .bind(e.target.kind)
        .bind(e.target.id)
        .bind(e.details_json())
        .bind(e.origin.ip.clone())
        .bind(e.origin.request_id.clone())
        .execute(&mut *conn)
        .await?;
        if written == 0 {
            return Err(StoreError::NotFound(match e.scope {
                Scope::Workspace(_) => "workspace",
                Scope::Program(_) => "program",
            }));
        }
    }
    Ok(())
}

fn audit_row<DB: Engine>(r: &Rec<DB>) -> StoreResult<AuditRow> {
    let kind: String = r.try_get("actor_type")?;
    let details: String = r.try_get("details")?;
    Ok(AuditRow {
        id: r.try_get("id")?,
        at: r.try_get("at")?,
        actor: AuditActor {
            kind: kind
                .parse()
                .map_err(|e| StoreError::Other(anyhow::anyhow!("audit_log.actor_type: {e}")))?,
            id: r.try_get("actor_id")?,
            email: r.try_get("actor_email")?,
        },
        action: r.try_get("action")?,
        program_id: r.try_get("program_id")?,
        target: AuditTarget {
            kind: r.try_get("target_type")?,
            id: r.try_get("target_id")?,
        },
        details: serde_json::from_str(&details).unwrap_or(serde_json::Value::String(details)),
        ip: r.try_get("ip")?,
        request_id: r.try_get("request_id")?,
    })
}

#[async_trait]
impl<DB: Engine> AuditStore for SqlStore<DB> {
    async fn audit_log(
        &self,
        workspace_id: i64,
        filter: &AuditFilter,
        page: Page,
    ) -> StoreResult<Vec<AuditRow>> {
        // An absent filter is a NULL parameter that lets every row through.
        let sql = format!(
            "SELECT id, at, actor_type, actor_id, actor_email, action, program_id, \
             target_type, target_id, details, ip, request_id FROM audit_log \
             WHERE workspace_id = $1 AND ($2 IS NULL OR action = $2) \
             AND ($3 IS NULL OR program_id = $3) AND ($4 IS NULL OR at >= $4) \
             AND ($5 IS NULL OR at < $5) AND {keyset}",
            keyset = keyset("id", 6),
        );
        stmt::<DB>(&sql)
            .bind(workspace_id)
            .bind(filter.action.map(|a| a.as_str()))
            .bind(filter.program_id)
            .bind(filter.from_ms)
            .bind(filter.to_ms)
            .page(page)
            .read_all(&mut *self.read.acquire().await?, audit_row)
            .await
    }
}

#[async_trait]
impl<DB: Engine> AuditTx for WriteConnection<DB> {
    async fn record_audit(&mut self, entries: &[AuditEntry]) -> StoreResult<()> {
        insert_entries::<DB>(&mut self.conn, entries).await
    }
}
