//! The storage interface of the management API's lists and of its access checks:
//! [`ManagementReads`], on the read pool. [`super::Store`] includes it.
//!
//! A list scoped to a dashboard user (`member: Some(user_id)`) holds only records of the
//! workspaces where that user's membership is active; `None` (the operator) holds all.

use async_trait::async_trait;
use serde::Serialize;

use super::error::StoreResult;
use super::model::{iso_ms, Link, MemberRow, Partner, Program, Workspace};
use super::payout_model::Page;
use reftrack_domain::status::{LinkStatus, MembershipStatus, PartnerStatus, Role};

/// Which of a program's partners a list holds: those of a standing, of a group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgramPartnerFilter {
    pub status: Option<PartnerStatus>,
    pub group_id: Option<i64>,
}

/// A record of the management API by id, for finding the workspaces it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    Workspace(i64),
    Program(i64),
    /// Shared: every workspace of a program it is in, and the one that created it.
    Partner(i64),
    Link(i64),
    Commission(i64),
    Payout(i64),
    /// A webhook endpoint.
    Webhook(i64),
    /// A partner group of a program.
    Group(i64),
    /// A bounty of a program.
    Bounty(i64),
}

impl Record {
    /// What a client reads when the record is hidden or missing.
    pub fn not_found(self) -> String {
        format!("{} not found", self.kind())
    }

    /// The kind of record, as a sentence starts with it.
    pub fn kind(self) -> &'static str {
        match self {
            Record::Workspace(_) => "Workspace",
            Record::Program(_) => "Program",
            Record::Partner(_) => "Partner",
            Record::Link(_) => "Link",
            Record::Commission(_) => "Commission",
            Record::Payout(_) => "Payout",
            Record::Webhook(_) => "Webhook",
            Record::Group(_) => "Group",
            Record::Bounty(_) => "Bounty",
        }
    }
}

/// One of a user's memberships, with its workspace's name.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct MembershipView {
    pub workspace_id: i64,
    pub workspace_name: String,
    #[sqlx(try_from = "String")]
    pub role: Role,
    #[sqlx(try_from = "String")]
    pub status: MembershipStatus,
    /// Whether the workspace requires its members to sign in with two-factor.
    pub require_two_factor: bool,
}

/// A partner of a program, with its totals in that program.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct ProgramPartnerRow {
    /// The partner's record in the program: the key of the list, newest joined first.
    #[serde(skip)]
    #[schema(ignore)]
    pub record_id: i64,
    pub partner_id: i64,
    pub name: String,
    pub email: Option<String>,
    pub code: String,
    /// Its standing in this program.
    #[sqlx(try_from = "String")]
    pub status: PartnerStatus,
    /// The program's partner group it is in.
    pub group_id: i64,
    /// When it joined the program.
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    pub clicks: i64,
    pub leads: i64,
    pub sales: i64,
    pub revenue_cents: i64,
    pub commission_cents: i64,
    /// The website its application gave (trimmed); null when it gave none.
    pub website: Option<String>,
    /// The message its application gave (trimmed); null when it gave none.
    pub message: Option<String>,
}

/// A partner's figures in a program over a range of days, from its daily rollups.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TopPartner {
    pub partner_id: i64,
    pub name: String,
    pub clicks: i64,
    pub leads: i64,
    pub sales: i64,
    /// Hundredths of the major unit, as the rollups keep them.
    pub revenue_figure: i64,
    /// Hundredths of the major unit.
    pub commission_figure: i64,
}

/// Which links a list holds.
#[derive(Debug, Clone, Copy, Default)]
pub struct LinkFilter {
    pub program_id: Option<i64>,
    pub partner_id: Option<i64>,
    pub status: Option<LinkStatus>,
}

/// The management lists, newest (highest id) first, and what access checks read.
#[async_trait]
pub trait ManagementReads: Send + Sync {
    /// Every membership of a user, with the workspaces' names, by workspace id.
    async fn memberships_of(&self, user_id: i64) -> StoreResult<Vec<MembershipView>>;
    /// The users who are active owners of a workspace.
    async fn active_owners(&self, workspace_id: i64) -> StoreResult<Vec<i64>>;
    /// The workspaces `record` belongs to; empty when it does not exist.
    async fn workspaces_of(&self, record: Record) -> StoreResult<Vec<i64>>;
    /// One page of workspaces.
    async fn list_workspaces(&self, member: Option<i64>, page: Page)
        -> StoreResult<Vec<Workspace>>;
    /// One page of programs, of one workspace if `workspace_id` is set.
    async fn list_programs(
        &self,
        member: Option<i64>,
        workspace_id: Option<i64>,
        page: Page,
    ) -> StoreResult<Vec<Program>>;
    /// One page of partners whose name, email or code contains `q` (lowercase), if set.
    /// A user sees the partners of its workspaces' programs and those its workspaces
    /// created.
    async fn list_partners(
        &self,
        member: Option<i64>,
        q: Option<&str>,
        page: Page,
    ) -> StoreResult<Vec<Partner>>;
    /// One page of a program's partners with their totals, by partner id from the highest.
    async fn program_partners(
        &self,
        program_id: i64,
        filter: ProgramPartnerFilter,
        page: Page,
    ) -> StoreResult<Vec<ProgramPartnerRow>>;
    /// One partner's row in a program, if it is in it.
    async fn program_partner(
        &self,
        program_id: i64,
        partner_id: i64,
    ) -> StoreResult<Option<ProgramPartnerRow>>;
    /// One page of links matching `filter`.
    async fn list_links(
        &self,
        member: Option<i64>,
        filter: LinkFilter,
        page: Page,
    ) -> StoreResult<Vec<Link>>;
    /// Every member of a workspace with its user's email and name, by user id.
    async fn workspace_members(&self, workspace_id: i64) -> StoreResult<Vec<MemberRow>>;
    /// The `limit` partners of a program with the most revenue from `from_day` to
    /// `to_day` (inclusive), then the most clicks; partners without activity then are
    /// left out.
    async fn top_partners(
        &self,
        program_id: i64,
        from_day: &str,
        to_day: &str,
        limit: i64,
    ) -> StoreResult<Vec<TopPartner>>;
    /// The names of those of `ids` that are partners of the program.
    async fn partner_names(&self, program_id: i64, ids: &[i64]) -> StoreResult<Vec<(i64, String)>>;
}
