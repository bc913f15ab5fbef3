//! The storage interface of the audit log: [`AuditStore`] (its list, on the read pool)
//! and [`AuditTx`] (its entries, written in the group committer's transaction). The
//! store methods that change management records outside the committer take their
//! entries as an argument and write them in their own transaction. Nothing updates or
//! deletes an entry; the database refuses it (triggers of the migration `audit_log`).

use async_trait::async_trait;
use serde::Serialize;

use super::error::StoreResult;
use super::model::iso_ms;
use super::payout_model::Page;
use reftrack_domain::audit::{Action, ActorKind};

pub use reftrack_domain::audit::Entry as AuditEntry;

/// The audit entries of a change a store method makes in a transaction of its own, built
/// from the record as it was (none for a new record) and as it is after the change, both
/// read in that transaction.
pub type AuditOf<'a, T> = &'a (dyn Fn(Option<&T>, &T) -> Vec<AuditEntry> + Send + Sync);

/// Which entries of a workspace a list holds. Times are epoch milliseconds, `to_ms`
/// exclusive.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub action: Option<Action>,
    pub program_id: Option<i64>,
    pub from_ms: Option<i64>,
    pub to_ms: Option<i64>,
}

/// Who made a change, as the audit log shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AuditActor {
    /// `user`, `operator`, `partner` or `system`.
    #[serde(rename = "type")]
    pub kind: ActorKind,
    /// The user's or partner's id.
    pub id: Option<i64>,
    /// The user's or partner's email when the change was made.
    pub email: Option<String>,
}

/// The record a change was made to.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AuditTarget {
    /// `program`, `partner`, `commission`, `payout`, `user` or `webhook_endpoint`.
    #[serde(rename = "type")]
    pub kind: String,
    pub id: i64,
}

/// One entry of the audit log.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AuditRow {
    pub id: i64,
    /// When the change was made.
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub at: i64,
    pub actor: AuditActor,
    /// What was done (`program.updated`, `payout.paid`, …).
    pub action: String,
    /// The program the change was made in, if any.
    pub program_id: Option<i64>,
    pub target: AuditTarget,
    /// What changed: for settings, `{"field": {"old": …, "new": …}}` (a secret only
    /// `{"changed": true}`); never a secret, token or password.
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
    /// The client's IP address, for a change made through HTTP.
    pub ip: Option<String>,
    /// The request's `X-Request-Id`, for a change made through HTTP.
    pub request_id: Option<String>,
}

/// The audit log's list. [`super::Store`] includes it.
#[async_trait]
pub trait AuditStore: Send + Sync {
    /// One page of a workspace's entries matching `filter`, newest first.
    async fn audit_log(
        &self,
        workspace_id: i64,
        filter: &AuditFilter,
        page: Page,
    ) -> StoreResult<Vec<AuditRow>>;
}

/// The audit log's entries in the group committer's transaction. [`super::tx::Tx`]
/// includes it: a flow that changes a record calls [`AuditTx::record_audit`] in the same
/// transaction, so that the entry is written exactly when the change is.
#[async_trait]
pub trait AuditTx: Send {
    /// Writes `entries`; an entry scoped to a program is listed with its workspace.
    async fn record_audit(&mut self, entries: &[AuditEntry]) -> StoreResult<()>;
}
