//! Bounties: their records, the reads of the dashboard and the portal ([`BountyStore`]),
//! and the statements of the flows that create, change and count them ([`BountyTx`]).

use async_trait::async_trait;
use serde::Serialize;

use crate::error::StoreResult;
use crate::model::{iso_ms, iso_ms_opt};
use reftrack_domain::bounties::{Bounty, Metric};

/// A bounty, as the management API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct BountyRow {
    pub id: i64,
    pub program_id: i64,
    pub name: String,
    /// `sales`, `leads` or `revenue_cents`.
    pub metric: Metric,
    /// The value of the metric that earns it.
    pub threshold: i64,
    /// What it pays, in the program's currency's minor units.
    pub amount_cents: i64,
    /// The groups whose partners may earn it; empty: every group.
    pub group_ids: Vec<i64>,
    /// When it starts counting (null: from its creation).
    #[serde(serialize_with = "iso_ms_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub starts_at: Option<i64>,
    /// When it stops counting (null: never).
    #[serde(serialize_with = "iso_ms_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub ends_at: Option<i64>,
    /// An archived bounty makes no new awards; those made stay.
    pub archived: bool,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    #[serde(skip)]
    pub updated_at: i64,
}

impl BountyRow {
    /// The bounty as its rules read it.
    pub fn rule(&self) -> Bounty {
        Bounty {
            id: self.id,
            name: self.name.clone(),
            metric: self.metric,
            threshold: self.threshold,
            amount_cents: self.amount_cents,
            group_ids: self.group_ids.clone(),
            starts_at: self.starts_at,
            ends_at: self.ends_at,
            archived: self.archived,
            created_at: self.created_at,
        }
    }
}

/// A bounty as a partner sees it: with its own value and whether it earned it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PartnerBounty {
    #[serde(flatten)]
    pub bounty: BountyRow,
    /// The partner's current value of the bounty's metric, counted in its window.
    pub progress: i64,
    /// Whether the partner earned it.
    pub earned: bool,
}

/// A partner that earned a bounty.
#[derive(Debug, Clone, Serialize)]
pub struct BountyEarner {
    pub partner_id: i64,
    pub partner_name: String,
    pub commission_id: i64,
    pub earned_at: i64,
}

/// A new bounty's fields, checked.
#[derive(Debug, Clone)]
pub struct NewBounty {
    pub program_id: i64,
    pub name: String,
    pub metric: Metric,
    pub threshold: i64,
    pub amount_cents: i64,
    pub group_ids: Vec<i64>,
    pub starts_at: Option<i64>,
    pub ends_at: Option<i64>,
}

/// Reads of bounties, on the read pool.
#[async_trait]
pub trait BountyStore: Send + Sync {
    /// A program's bounties, newest first.
    async fn bounties(&self, program_id: i64) -> StoreResult<Vec<BountyRow>>;
    /// One bounty.
    async fn bounty(&self, id: i64) -> StoreResult<Option<BountyRow>>;
    /// The partners that earned a bounty, first earner first.
    async fn bounty_earners(&self, bounty_id: i64) -> StoreResult<Vec<BountyEarner>>;
    /// A program's bounties with a partner's value of each and whether it earned it:
    /// those not archived, and archived ones it earned.
    async fn partner_bounties(
        &self,
        program_id: i64,
        partner_id: i64,
    ) -> StoreResult<Vec<PartnerBounty>>;
}

/// The statements of bounties in a write transaction. [`crate::tx::Tx`] includes it.
#[async_trait]
pub trait BountyTx: Send {
    /// Creates a bounty.
    async fn insert_bounty(&mut self, b: &NewBounty, at: i64) -> StoreResult<BountyRow>;
    /// A bounty, locked until the transaction ends (PostgreSQL).
    async fn lock_bounty(&mut self, id: i64) -> StoreResult<Option<BountyRow>>;
    /// Writes every field of `b` (a bounty changed or archived).
    async fn save_bounty(&mut self, b: &BountyRow, at: i64) -> StoreResult<BountyRow>;
    /// The program's bounties that are not archived.
    async fn live_bounties(&mut self, program_id: i64) -> StoreResult<Vec<Bounty>>;
    /// Adds `step` to a partner's value of a bounty (the row locked until the transaction
    /// ends); the new value and whether the partner earned it already.
    async fn add_bounty_progress(
        &mut self,
        bounty_id: i64,
        partner_id: i64,
        step: i64,
    ) -> StoreResult<(i64, bool)>;
    /// Marks a bounty earned by a partner.
    async fn mark_bounty_earned(&mut self, bounty_id: i64, partner_id: i64) -> StoreResult<()>;
    /// Which of `group_ids` are not groups of the program.
    async fn foreign_groups(&mut self, program_id: i64, group_ids: &[i64])
        -> StoreResult<Vec<i64>>;
}
