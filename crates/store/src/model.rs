//! Records the store reads and writes, and the inputs of its write operations.

use reftrack_domain::fraud::FraudRules;
use serde::Serialize;

use reftrack_domain::commission::{CommissionRule, Unearned};
use reftrack_domain::lifecycle::Approval;
use reftrack_domain::status::{
    CommissionFlag, CommissionKind, CouponStatus, CustomerStatus, LinkStatus, MembershipStatus,
    PartnerStatus, PayoutMethod, Role,
};
use reftrack_domain::time::iso;

/// Serializes epoch milliseconds as an ISO 8601 timestamp.
pub fn iso_ms<S: serde::Serializer>(ms: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&iso(*ms))
}

/// Serializes optional epoch milliseconds as an ISO 8601 timestamp or null.
pub fn iso_ms_opt<S: serde::Serializer>(ms: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
    match ms {
        Some(ms) => s.serialize_str(&iso(*ms)),
        None => s.serialize_none(),
    }
}

/// A workspace: the owner of programs and the unit of dashboard membership.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct Workspace {
    pub id: i64,
    pub name: String,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
}

/// The payment-processor account of a program, as the status endpoint reports it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PaymentAccount {
    pub status: String,
    pub account_id: Option<String>,
    pub charges_enabled: bool,
    pub payouts_enabled: bool,
    pub details_submitted: bool,
    pub connection_date: Option<i64>,
}

/// A recorded sale, as the answer to its duplicate names it: what a client that lost
/// the first answer needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordedSale {
    pub sale_id: i64,
    /// Null when the sale earned none.
    pub commission_id: Option<i64>,
    /// Whether it was recorded in test mode: a test sale uses its transaction id up too.
    pub test_mode: bool,
}

/// An affiliate program.
#[derive(Debug, Clone)]
pub struct Program {
    pub id: i64,
    pub workspace_id: i64,
    pub name: String,
    pub api_token_prefix: String,
    pub cookie_window_days: i64,
    pub currency: String,
    pub commission: CommissionRule,
    pub recurring_commission_months: Option<i64>,
    pub allowed_origins: Vec<String>,
    pub stripe_webhook_secret: Option<String>,
    pub payment: PaymentAccount,
    /// Days a commission stays `pending` before it is due.
    pub commission_hold_days: i64,
    /// The smallest balance a payout pays, in cents.
    pub min_payout_cents: i64,
    /// Whether anyone may apply to join the program.
    pub applications_open: bool,
    /// Whether approved partners may create their own links.
    pub partner_links_allowed: bool,
    /// Where the program's redirect links send visitors (a link's own wins).
    pub destination_url: Option<String>,
    /// The hash of the API token a rotation replaced while it keeps working, and until
    /// when it does.
    pub previous_token: Option<(String, i64)>,
    /// What the program does with a commission a fraud rule holds for.
    pub fraud_rules: FraudRules,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Program {
    /// An empty list allows any origin; otherwise the origin must be listed.
    pub fn origin_allowed(&self, origin: Option<&str>) -> bool {
        origin_allowed(&self.allowed_origins, origin)
    }
}

/// The origin rule for a list of allowed origins. A request without `Origin` is not a browser
/// cross-origin fetch and passes.
pub fn origin_allowed(list: &[String], origin: Option<&str>) -> bool {
    match origin {
        None => true,
        Some(o) => {
            list.is_empty()
                || list.iter().any(|a| {
                    a.trim_end_matches('/')
                        .eq_ignore_ascii_case(o.trim_end_matches('/'))
                })
        }
    }
}

/// New program fields, validated.
#[derive(Debug, Clone)]
pub struct NewProgram {
    pub workspace_id: i64,
    pub name: String,
    pub cookie_window_days: i64,
    pub currency: String,
    pub commission: CommissionRule,
    pub recurring_commission_months: Option<i64>,
    pub allowed_origins: Vec<String>,
    pub stripe_webhook_secret: Option<String>,
    pub commission_hold_days: i64,
    pub min_payout_cents: i64,
    pub applications_open: bool,
    pub partner_links_allowed: bool,
    pub destination_url: Option<String>,
    pub api_token_hash: String,
    pub api_token_prefix: String,
}

/// A change to a program: `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct ProgramPatch {
    pub name: Option<String>,
    pub cookie_window_days: Option<i64>,
    pub currency: Option<String>,
    pub commission: Option<CommissionRule>,
    pub recurring_commission_months: Option<Option<i64>>,
    pub allowed_origins: Option<Vec<String>>,
    pub stripe_webhook_secret: Option<Option<String>>,
    pub commission_hold_days: Option<i64>,
    pub min_payout_cents: Option<i64>,
    pub applications_open: Option<bool>,
    pub partner_links_allowed: Option<bool>,
    pub destination_url: Option<Option<String>>,
    /// The program's fraud rules, whole (the service merges a change into them).
    pub fraud_rules: Option<FraudRules>,
}

/// A partner (affiliate).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Partner {
    pub id: i64,
    pub name: String,
    pub code: String,
    pub email: Option<String>,
    /// How the partner is paid; null until chosen.
    pub payout_method: Option<PayoutMethod>,
    /// Where payouts are sent; a partner without one is left out of payouts.
    pub payout_email: Option<String>,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    /// When its payout method or payout email last changed; null if never since it was
    /// created.
    #[serde(serialize_with = "iso_ms_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub payout_details_changed_at: Option<i64>,
    /// Who made that change: `partner` (in the portal or its API), `user` (a dashboard
    /// user) or `operator` (the admin token or the CLI).
    pub payout_details_changed_by: Option<String>,
}

/// A change to a partner: `None` leaves a field as it is, `Some(None)` clears it.
#[derive(Debug, Clone, Default)]
pub struct PartnerPatch {
    pub name: Option<String>,
    pub email: Option<Option<String>>,
    pub payout_method: Option<Option<PayoutMethod>>,
    pub payout_email: Option<Option<String>>,
    /// Who asks for the change, as [`Partner::payout_details_changed_by`] names it, and
    /// when: kept on the partner when its payout details change.
    pub changed_by: &'static str,
    pub at: i64,
}

impl PartnerPatch {
    /// Whether it changes what reaches every program of the partner beyond its name: the
    /// contact email (where invites go) or the payout details (where money goes).
    pub fn changes_account(&self, current: &Partner) -> bool {
        self.email.as_ref().is_some_and(|e| *e != current.email)
            || self.changes_payout_details(current)
    }

    /// Whether it changes where the partner's money goes: its payout method or email.
    pub fn changes_payout_details(&self, current: &Partner) -> bool {
        self.payout_method
            .as_ref()
            .is_some_and(|m| *m != current.payout_method)
            || self
                .payout_email
                .as_ref()
                .is_some_and(|e| *e != current.payout_email)
    }
}

/// A partner's membership in a program, with its running totals.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct PartnerProgram {
    pub id: i64,
    pub partner_id: i64,
    pub program_id: i64,
    #[sqlx(try_from = "String")]
    pub status: PartnerStatus,
    /// The program's partner group it is in.
    pub group_id: i64,
    pub total_clicks: i64,
    pub total_leads: i64,
    pub total_sales: i64,
    pub total_revenue_cents: i64,
    pub total_commission_cents: i64,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
}

/// A partner's record in a program as a sale or a lead reads it: what decides its reward.
#[derive(Debug, Clone)]
pub struct PartnerStanding {
    pub partner_program_id: i64,
    pub status: PartnerStatus,
    /// Its group's rewards.
    pub group: crate::groups::GroupRewards,
    /// Its live sales in the program not fully refunded (the counter).
    pub sales: i64,
    /// Their revenue net of refunds, in minor units of the program's currency (the counter).
    pub revenue_figure: i64,
}

/// A referral link.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Link {
    pub id: i64,
    pub program_id: i64,
    pub partner_id: Option<i64>,
    pub short_link: String,
    pub status: LinkStatus,
    /// Where `GET /r/{short_link}` sends visitors; null: the program's destination.
    pub destination_url: Option<String>,
    /// The link's active coupon codes, oldest first (archived ones are not shown): a sale
    /// with one of them that no click attributes counts for the link's partner.
    pub coupon_codes: Vec<String>,
    pub clicks: i64,
    #[serde(serialize_with = "iso_ms_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_clicked: Option<i64>,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
}

/// A referral link with what a click needs of its program and partner.
#[derive(Debug, Clone)]
pub struct LinkTarget {
    pub link_id: i64,
    pub link_status: LinkStatus,
    pub program_id: i64,
    pub partner_id: Option<i64>,
    pub partner_code: Option<String>,
    pub cookie_window_days: i64,
    pub allowed_origins: Vec<String>,
    /// Where a redirect through the link goes: its own destination, else its program's.
    pub destination_url: Option<String>,
}

/// A change to a dashboard user: `None` leaves a field as it is, `Some(None)` clears the
/// name.
#[derive(Debug, Clone, Default)]
pub struct UserPatch {
    pub name: Option<Option<String>>,
    /// A new password's hash: the user's sessions end with the old one.
    pub password_hash: Option<String>,
}

/// A change to a link: `None` leaves a field as it is, `Some(None)` clears it.
#[derive(Debug, Clone, Default)]
pub struct LinkPatch {
    pub status: Option<LinkStatus>,
    pub destination_url: Option<Option<String>>,
}

/// A coupon code of a link.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Coupon {
    pub id: i64,
    pub program_id: i64,
    pub link_id: i64,
    /// The code as it was created; sales match it whatever its case.
    pub code: String,
    /// The id (`promo_…`) of the Stripe promotion code a checkout names for it.
    pub stripe_promotion_code: Option<String>,
    pub status: CouponStatus,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    #[serde(serialize_with = "iso_ms_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub archived_at: Option<i64>,
}

/// A new coupon code, validated.
#[derive(Debug, Clone)]
pub struct NewCoupon {
    pub link_id: i64,
    pub code: String,
    /// [`reftrack_domain::attribution::coupon_key`] of the code.
    pub code_key: String,
    pub stripe_promotion_code: Option<String>,
}

/// The partner a coupon attributes a sale to: its link's, while the link is active.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CouponTarget {
    pub link_id: i64,
    pub partner_id: i64,
}

/// A dashboard user (the password hash never leaves the store).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct User {
    pub id: i64,
    pub email: String,
    pub name: Option<String>,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
}

/// Settings key of the address the owner confirmed as the server's, at the first run or
/// in the dashboard's settings.
pub const PUBLIC_URL_SETTING: &str = "public_url";

/// The first user of a server, owner of its first workspace (see
/// [`super::UserAdmin::first_run`]).
#[derive(Debug, Clone)]
pub struct NewOwner<'a> {
    pub workspace_name: &'a str,
    /// Normalised.
    pub email: &'a str,
    pub password_hash: &'a str,
    pub name: Option<&'a str>,
}

/// What the first run created.
#[derive(Debug, Clone)]
pub struct FirstRunRecords {
    pub workspace: Workspace,
    pub user: User,
    pub program: Program,
}

/// A member of a workspace, with the user's email and name.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct MemberRow {
    pub user_id: i64,
    pub email: String,
    pub name: Option<String>,
    #[sqlx(try_from = "String")]
    pub role: Role,
    #[sqlx(try_from = "String")]
    pub status: MembershipStatus,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
}

/// A user's role and status in a workspace.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema, sqlx::FromRow)]
pub struct Membership {
    pub workspace_id: i64,
    pub user_id: i64,
    #[sqlx(try_from = "String")]
    pub role: Role,
    #[sqlx(try_from = "String")]
    pub status: MembershipStatus,
    #[serde(serialize_with = "iso_ms")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
}

/// What the click listing stores of a visit, derived or sent.
#[derive(Debug, Clone, Default)]
pub struct ClickDetails {
    pub session_id: Option<String>,
    pub page_url: Option<String>,
    pub page_title: Option<String>,
    pub referrer_url: Option<String>,
    pub screen_resolution: Option<String>,
    pub viewport_size: Option<String>,
    pub language: Option<String>,
    pub timezone: Option<String>,
    pub geo_country: Option<String>,
    pub geo_region: Option<String>,
    pub geo_city: Option<String>,
    pub device_type: Option<String>,
    pub device_os: Option<String>,
    pub browser_name: Option<String>,
    /// The IP the click came from, as the web layer works it out (kept for the fraud
    /// rules, purged after their retention period).
    pub ip: Option<String>,
}

/// A real click on a resolved, active link that creates its customer: what the
/// committer's batched click statement takes.
#[derive(Debug, Clone)]
pub struct NewClick {
    pub program_id: i64,
    pub link_id: i64,
    pub partner_id: i64,
    /// The click id of the new customer, issued before the write.
    pub click_id: String,
    pub details: ClickDetails,
    pub at: i64,
}

/// A customer (attribution record) as leads and sales read it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Customer {
    pub id: i64,
    pub program_id: i64,
    pub click_id: String,
    pub customer_key: Option<String>,
    #[sqlx(try_from = "String")]
    pub customer_status: CustomerStatus,
    pub partner_id: Option<i64>,
    pub first_purchase_date: Option<i64>,
    /// The email its lead gave.
    pub email: Option<String>,
}

/// A customer created by a click, or by a sale a coupon attributes.
#[derive(Debug, Clone)]
pub struct NewCustomer<'a> {
    pub program_id: i64,
    pub click_id: &'a str,
    pub customer_key: Option<&'a str>,
    pub partner_id: i64,
    pub link_id: i64,
    pub at: i64,
}

/// One row of `affiliate_click_events`.
#[derive(Debug, Clone)]
pub struct ClickEventRow<'a> {
    pub program_id: i64,
    pub customer_id: Option<i64>,
    pub link_id: Option<i64>,
    pub partner_id: Option<i64>,
    pub click_id: Option<&'a str>,
    pub details: &'a ClickDetails,
    pub is_test: bool,
    pub at: i64,
}

/// One row of `affiliate_lead_events`.
#[derive(Debug, Clone)]
pub struct LeadEventRow<'a> {
    pub program_id: i64,
    pub customer_id: Option<i64>,
    pub click_id: Option<&'a str>,
    pub customer_key: Option<&'a str>,
    pub email: Option<&'a str>,
    pub session_id: Option<&'a str>,
    pub page_url: Option<&'a str>,
    pub event_name: Option<&'a str>,
    pub is_test: bool,
    pub at: i64,
}

/// What a program contributes to a sale.
#[derive(Debug, Clone)]
pub struct SaleProgram {
    pub id: i64,
    /// The program's currency: its rewards' and figures'.
    pub currency: String,
    /// The program's fraud rules.
    pub fraud_rules: FraudRules,
}

/// A sale as the service layer hands it to the store.
#[derive(Debug, Clone)]
pub struct NewSale {
    pub program: SaleProgram,
    pub transaction_id: String,
    /// Whether `transaction_id` was generated (`test_txn_<epoch-ms>`, a test sale sent
    /// without one): a taken one moves on to the next millisecond's.
    pub generated_id: bool,
    pub amount_cents: i64,
    pub currency: String,
    pub customer_key: Option<String>,
    pub click_id: Option<String>,
    pub sale_type: String,
    pub is_recurring: bool,
    pub subscription_id: Option<String>,
    pub product_id: Option<String>,
    pub metadata: Option<String>,
    pub is_test: bool,
    pub at: i64,
    /// The coupon code the sale names, as compared
    /// ([`reftrack_domain::attribution::coupon_key`]).
    pub coupon_key: Option<String>,
    /// The Stripe promotion code (`promo_…`) a payment names.
    pub promotion_code: Option<String>,
    /// The customer's email as the sale or the payment gives it.
    pub customer_email: Option<String>,
    /// How its amount counts in the program's currency.
    pub conversion: SaleConversion,
}

/// How a sale's amount counts in its program's currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaleConversion {
    /// The sale is in the program's currency.
    Same,
    /// Converted at a stored rate when it was recorded.
    Converted {
        /// The amount in the program's currency, minor units.
        amount_cents: i64,
        /// Program-currency units for one unit of the sale's currency, decimal text.
        rate: String,
        /// The date of that rate, `YYYY-MM-DD`.
        rate_date: String,
    },
    /// No rate is known yet: recorded with `awaiting_rate`, converted when one arrives.
    Awaiting,
}

impl NewSale {
    /// The sale's amount in the program's currency, minor units: 0 while it waits for a
    /// rate (it then counts as a sale, without revenue).
    pub fn program_amount(&self) -> i64 {
        match &self.conversion {
            SaleConversion::Same => self.amount_cents,
            SaleConversion::Converted { amount_cents, .. } => *amount_cents,
            SaleConversion::Awaiting => 0,
        }
    }

    /// Whether the sale waits for an exchange rate.
    pub fn awaits_rate(&self) -> bool {
        self.conversion == SaleConversion::Awaiting
    }

    /// Whether the committer may record this sale set-based with others: a live sale in
    /// its program's currency or converted, outside a subscription and not flagged recurring, whose commission depends on
    /// nothing but its program and amount, and that names no coupon and no email (those
    /// may attribute it or flag it, which only its flow decides). Whatever the program's
    /// fraud rules: the set-based statements leave a sale any rule that is on may hold
    /// for to its own flow (`sql::rules`).
    pub fn is_plain(&self) -> bool {
        !self.is_test
            && !self.awaits_rate()
            && self.subscription_id.is_none()
            && !self.is_recurring
            && self.coupon_key.is_none()
            && self.promotion_code.is_none()
            && self.customer_email.is_none()
    }
}

/// One row of `affiliate_sale_events`.
#[derive(Debug, Clone)]
pub struct SaleEventRow<'a> {
    pub sale: &'a NewSale,
    pub customer_id: Option<i64>,
    pub partner_id: Option<i64>,
    pub click_id: Option<&'a str>,
    pub customer_key: Option<&'a str>,
    /// Why the sale earns no commission; `None` when it earns (or is a test sale).
    pub unearned: Option<Unearned>,
}

impl<'a> SaleEventRow<'a> {
    /// The row of a test sale: no customer or partner, the ids it was sent with.
    pub fn test(sale: &'a NewSale) -> Self {
        SaleEventRow {
            sale,
            customer_id: None,
            partner_id: None,
            click_id: sale.click_id.as_deref(),
            customer_key: sale.customer_key.as_deref(),
            unearned: None,
        }
    }
}

/// A new commission of a sale.
#[derive(Debug, Clone)]
pub struct NewCommission<'a> {
    pub program_id: i64,
    /// What earned it: a sale, a lead, or an owner's bonus.
    pub kind: CommissionKind,
    /// The sale of a sale commission.
    pub sale_id: Option<i64>,
    /// The lead event of a lead commission.
    pub lead_id: Option<i64>,
    /// The bounty of a bounty commission.
    pub bounty_id: Option<i64>,
    pub partner_id: i64,
    pub partner_program_id: i64,
    pub amount_cents: i64,
    pub currency: &'a str,
    pub at: i64,
    /// What an owner should know about it.
    pub flags: &'a [CommissionFlag],
    /// How it comes due.
    pub approval: Approval,
    /// The group whose reward made it.
    pub group_id: Option<i64>,
    /// The rule that applied, in words ([`reftrack_domain::rewards::Earned`]).
    pub description: Option<&'a str>,
    /// For the commission of a sale waiting for an exchange rate, what its reward
    /// decision knew (JSON): it is stored with `awaiting_rate`, amount 0, and waits for
    /// no hold until its amount is decided.
    pub reward_facts: Option<&'a str>,
}

/// What a recorded sale produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaleOutcome {
    pub sale_id: i64,
    /// `None` when the sale earns no commission (see `unearned`, or test mode).
    pub commission_id: Option<i64>,
    /// Why a sale not in test mode earns no commission.
    pub unearned: Option<Unearned>,
}

/// A sale as a refund reads it, with its commission.
#[derive(Debug, Clone)]
pub struct RefundableSale {
    pub sale_id: i64,
    pub amount_cents: i64,
    pub refunded_cents: i64,
    pub partner_id: Option<i64>,
    pub sale_date: i64,
    /// The currency of its commission (the program's); the sale's own without one.
    pub currency: String,
    /// Its amount in the program's currency (minor units); `None` while it waits for a
    /// rate.
    pub program_amount_cents: Option<i64>,
    /// Its sale commission, if it earned one.
    pub commission: Option<SaleCommission>,
}

/// The commission of a sale as a refund reads it.
#[derive(Debug, Clone)]
pub struct SaleCommission {
    pub id: i64,
    pub amount_cents: i64,
    /// What refunds took back so far: from the commission itself, or by clawbacks.
    pub taken_back_cents: i64,
    pub state: reftrack_domain::lifecycle::CommissionState,
}

/// A sale a payment processor's refund event names.
#[derive(Debug, Clone)]
pub struct ChargeSale {
    pub transaction_id: String,
    pub refunded_cents: i64,
}
