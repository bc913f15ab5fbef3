//! Records of the dashboard: sessions, program access, rollups, setup status and the
//! merged event listing.

use reftrack_domain::status::{MembershipStatus, Role};
use serde::Serialize;

use super::model::{iso_ms, PaymentAccount};

/// What login needs of a user.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// The user's id.
    pub user_id: i64,
    /// The stored argon2id hash.
    pub password_hash: String,
}

/// The user behind a live session.
#[derive(Debug, Clone)]
pub struct SessionUser {
    /// The user's id.
    pub user_id: i64,
    /// The user's email.
    pub email: String,
    /// The user's name.
    pub name: Option<String>,
    /// When the session stops working (epoch ms).
    pub expires_at: i64,
}

/// A program as the dashboard sees it, with the caller's membership in its workspace.
#[derive(Debug, Clone)]
pub struct DashboardProgram {
    /// The program's id.
    pub id: i64,
    /// The workspace owning the program.
    pub workspace_id: i64,
    /// Creation instant (epoch ms): `period=all` starts on its day.
    pub created_at: i64,
    /// The payment-processor account fields.
    pub payment: PaymentAccount,
    /// The caller's role in the workspace, if a member.
    pub member_role: Option<Role>,
    /// The caller's membership status (`active`, `suspended`), if a member.
    pub member_status: Option<MembershipStatus>,
    /// The workspace requires two-factor sign-in and the caller has not turned it on.
    pub two_factor_missing: bool,
}

/// One program-day row of `daily_rollups`.
#[derive(Debug, Clone, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct DailyRollup {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    /// Real clicks.
    pub clicks: i64,
    /// Customers who became leads that day.
    pub leads: i64,
    /// Customers whose first purchase was that day.
    pub conversions: i64,
    /// Paid revenue, net of refunds, in cents.
    pub revenue_cents: i64,
    /// Paid sale events not fully refunded.
    pub sales: i64,
    /// Commissions created that day, net of reversals, in cents.
    pub commission_cents: i64,
    /// Partner-program records created that day.
    pub partners: i64,
}

/// The latest test event of a setup step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestEventRef {
    /// Event id.
    pub id: i64,
    /// Event timestamp (epoch ms).
    pub timestamp: i64,
    /// Row creation (epoch ms).
    pub created_at: i64,
}

/// Test events of one setup step: how many (at most 10) and the latest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestEventSummary {
    /// Test events found, capped at 10.
    pub count: i64,
    /// The newest, if any.
    pub latest: Option<TestEventRef>,
}

/// What the status endpoint reads besides the program row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupStatus {
    /// Test clicks.
    pub pageview: TestEventSummary,
    /// Test leads.
    pub referrals: TestEventSummary,
    /// Whether an approved partner-program record exists.
    pub has_partners: bool,
}

/// The kinds of events the listing merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// `affiliate_click_events`.
    Click,
    /// `affiliate_lead_events`.
    Lead,
    /// `affiliate_sale_events`, listed as `conversion`.
    Conversion,
}

impl EventKind {
    /// All kinds.
    pub const ALL: [EventKind; 3] = [EventKind::Click, EventKind::Lead, EventKind::Conversion];

    /// The wire value of `eventType` / `event_type`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Click => "click",
            EventKind::Lead => "lead",
            EventKind::Conversion => "conversion",
        }
    }

    /// Parses `click`, `lead` or `conversion`.
    pub fn parse(s: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// Which events to count or list: real ones, or test-mode ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFilter {
    /// Kinds to include (non-empty).
    pub kinds: Vec<EventKind>,
    /// Test-mode events instead of real ones (the tracking interface's listing has only
    /// real ones; the owner's dashboard shows test events in its test mode).
    pub test: bool,
    /// Inclusive lower bound on the event timestamp (epoch ms).
    pub from_ms: Option<i64>,
    /// Inclusive upper bound on the event timestamp (epoch ms).
    pub to_ms: Option<i64>,
}

/// A click in the listing.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ClickEvent {
    pub id: i64,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: i64,
    pub click_id: Option<String>,
    #[serde(rename = "createdAt", serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    pub session_id: Option<String>,
    pub page_url: Option<String>,
    pub referrer_url: Option<String>,
    pub geo_country: Option<String>,
    pub geo_region: Option<String>,
    pub geo_city: Option<String>,
    pub device_type: Option<String>,
    pub device_os: Option<String>,
    pub browser_name: Option<String>,
    /// Whether this is the click that converted its customer: the customer's latest
    /// click at or before its first purchase.
    pub converted: bool,
    /// The event's partner, for the dashboard's listing; not part of the listing's
    /// JSON shape.
    #[serde(skip)]
    pub partner: Option<EventPartner>,
}

/// A lead in the listing.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LeadEvent {
    pub id: i64,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: i64,
    pub click_id: Option<String>,
    #[serde(rename = "createdAt", serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    pub customer_key: Option<String>,
    pub session_id: Option<String>,
    pub page_url: Option<String>,
    /// Whether the lead's customer has made a purchase.
    pub converted: bool,
    /// The event's partner, for the dashboard's listing; not part of the listing's
    /// JSON shape.
    #[serde(skip)]
    pub partner: Option<EventPartner>,
}

/// A sale in the listing (`event_type` `conversion`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConversionEvent {
    pub id: i64,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: i64,
    pub click_id: Option<String>,
    #[serde(rename = "createdAt", serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    pub amount_cents: i64,
    pub currency: String,
    pub sale_type: String,
    pub payment_status: String,
    pub processor_event_id: String,
    pub is_recurring: bool,
    /// The event's partner, for the dashboard's listing; not part of the listing's
    /// JSON shape.
    #[serde(skip)]
    pub partner: Option<EventPartner>,
    /// What refunds took back of it, for the dashboard's listing; not part of the
    /// listing's JSON shape.
    #[serde(skip)]
    pub refunded_cents: i64,
    /// A sale in another currency than the program's: its amount in the program's
    /// currency (minor units). Absent for a sale in the program's currency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub converted_amount_cents: Option<i64>,
    /// Program-currency units for one unit of the sale's currency, the rate it was
    /// converted at. Absent for a sale in the program's currency.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::rates::rate_number_opt"
    )]
    #[schema(value_type = Option<f64>)]
    pub exchange_rate: Option<String>,
    /// The date of that rate, `YYYY-MM-DD`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_date: Option<String>,
    /// A sale in another currency whose rate is not known yet; present only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub awaiting_rate: bool,
}

/// The partner an event is credited to: the click's, the lead's customer's or the
/// sale's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventPartner {
    pub id: i64,
    pub name: String,
}

/// One entry of the merged listing; serializes with its `event_type`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(tag = "event_type", rename_all = "lowercase")]
pub enum ListedEvent {
    /// A click.
    Click(ClickEvent),
    /// A lead.
    Lead(LeadEvent),
    /// A sale.
    Conversion(ConversionEvent),
}
