//! Partner groups: what a program pays each of its partners. Every program has a default
//! group; every partner of a program is in one of its groups.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;

use crate::audit::AuditOf;
use crate::error::StoreResult;
use crate::model::iso_ms;
use reftrack_domain::rewards::Rewards;

/// A partner group of a program, as the management API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Group {
    pub id: i64,
    pub program_id: i64,
    pub name: String,
    /// The group partners join unless told otherwise; it cannot be deleted.
    pub is_default: bool,
    /// What its partners' sales and leads earn.
    #[schema(value_type = reftrack_domain::rewards::RewardsSpec)]
    pub rewards: serde_json::Value,
    /// Days a commission of this group's partners is held before approval; null: the
    /// program's.
    pub commission_hold_days: Option<i64>,
    /// Partners of the program in this group.
    pub partner_count: i64,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: i64,
}

/// A group to create.
#[derive(Debug, Clone)]
pub struct NewGroup {
    pub program_id: i64,
    pub name: String,
    /// `None`: a copy of the default group's.
    pub rewards: Option<Rewards>,
    pub commission_hold_days: Option<i64>,
}

/// The fields of a group a change sets.
#[derive(Debug, Clone, Default)]
pub struct GroupPatch {
    pub name: Option<String>,
    pub rewards: Option<Rewards>,
    pub commission_hold_days: Option<Option<i64>>,
}

/// A group's rewards as a sale or a lead reads them, at the version it was read.
#[derive(Debug, Clone)]
pub struct GroupRewards {
    pub group_id: i64,
    pub version: i64,
    pub rewards: Arc<Rewards>,
}

/// Partner groups on the pools, each change in a transaction of its own with its audit
/// entries.
#[async_trait]
pub trait GroupStore: Send + Sync {
    /// Creates a group; `NotFound("program")`, `Conflict("group name")`.
    async fn create_group(
        &self,
        g: &NewGroup,
        at: i64,
        audit: AuditOf<'_, Group>,
    ) -> StoreResult<Group>;
    /// The groups of a program, the default first, then by name.
    async fn groups(&self, program_id: i64) -> StoreResult<Vec<Group>>;
    /// One group; `NotFound("group")`.
    async fn group(&self, id: i64) -> StoreResult<Group>;
    /// Changes a group; `NotFound("group")`, `Conflict("group name")`. A change of the
    /// default group's sale reward is mirrored in its program's `commission` and
    /// `recurring_commission_months`.
    async fn update_group(
        &self,
        id: i64,
        patch: &GroupPatch,
        at: i64,
        audit: AuditOf<'_, Group>,
    ) -> StoreResult<Group>;
    /// Deletes a group; `NotFound("group")`, `Conflict("default group")` or
    /// `Conflict("group with partners")`.
    async fn delete_group(&self, id: i64, audit: AuditOf<'_, Group>) -> StoreResult<Group>;
}
