//! What the management operations answer about a program: its view, with the API token
//! when one was just issued, and its payment-processor account.

use super::*;

/// The payment-processor account of a program (what the status endpoint reports).
#[derive(Debug, Serialize, ToSchema)]
pub struct PaymentAccountView {
    /// Raw connection status, e.g. `not_connected`, `pending`, `connected`.
    pub status: String,
    pub account_id: Option<String>,
    pub charges_enabled: bool,
    pub payouts_enabled: bool,
    pub details_submitted: bool,
    #[schema(format = DateTime)]
    pub connection_date: Option<String>,
}

/// A program as the management API shows it. The API token itself is shown only when
/// it is created or rotated; the store keeps just its hash.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProgramView {
    pub id: i64,
    pub workspace_id: i64,
    pub name: String,
    pub cookie_window_days: i64,
    pub currency: String,
    pub commission: CommissionSpec,
    pub recurring_commission_months: Option<i64>,
    pub allowed_origins: Vec<String>,
    /// Days a commission stays pending before it is due.
    pub commission_hold_days: i64,
    /// The smallest balance a payout pays, in cents.
    pub min_payout_cents: i64,
    /// Whether anyone may apply to join the program.
    pub applications_open: bool,
    /// Whether approved partners may create their own links.
    pub partner_links_allowed: bool,
    /// Where the program's redirect links send visitors.
    pub destination_url: Option<String>,
    /// What the program does with a commission each fraud rule holds for: `off`, `flag`
    /// (held for an owner's review) or `reject` (created rejected, the rule its reason),
    /// for each of `self_referral`, `disposable_email`, `duplicate_ip`, `partner_ip` and
    /// `fast_conversion`.
    #[schema(value_type = Object, example = json!({"self_referral": "flag", "disposable_email": "flag", "duplicate_ip": "off", "partner_ip": "off", "fast_conversion": "off"}))]
    pub fraud_rules: FraudRules,
    /// Whether a Stripe webhook signing secret is set (the secret is never shown).
    pub stripe_webhook_secret_set: bool,
    /// The first characters of the API key, to tell keys apart.
    pub api_token_prefix: String,
    pub payment_account: PaymentAccountView,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// The program's API key: only when the program is created or the key rotated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_token: Option<String>,
    /// When the API token a rotation replaced stops (or stopped) working; absent when
    /// the last rotation kept none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub previous_token_expires_at: Option<String>,
}

/// The longest a replaced API token may keep working: a week.
pub const MAX_KEEP_OLD_TOKEN_HOURS: i64 = 168;

/// The body of an API token rotation; it may be left out.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateTokenBody {
    /// Hours the replaced token keeps working (0 to 168; 0 or absent: it stops at once).
    pub keep_old_for_hours: Option<i64>,
}

/// The management view of `p`, with its API token when it was just issued.
pub fn program_view(p: &Program, api_token: Option<&str>) -> ProgramView {
    ProgramView {
        id: p.id,
        workspace_id: p.workspace_id,
        name: p.name.clone(),
        cookie_window_days: p.cookie_window_days,
        currency: p.currency.clone(),
        commission: p.commission.spec(),
        recurring_commission_months: p.recurring_commission_months,
        allowed_origins: p.allowed_origins.clone(),
        commission_hold_days: p.commission_hold_days,
        min_payout_cents: p.min_payout_cents,
        applications_open: p.applications_open,
        partner_links_allowed: p.partner_links_allowed,
        destination_url: p.destination_url.clone(),
        fraud_rules: p.fraud_rules,
        stripe_webhook_secret_set: p.stripe_webhook_secret.is_some(),
        api_token_prefix: p.api_token_prefix.clone(),
        payment_account: PaymentAccountView {
            status: p.payment.status.clone(),
            account_id: p.payment.account_id.clone(),
            charges_enabled: p.payment.charges_enabled,
            payouts_enabled: p.payment.payouts_enabled,
            details_submitted: p.payment.details_submitted,
            connection_date: p.payment.connection_date.map(iso),
        },
        created_at: iso(p.created_at),
        updated_at: iso(p.updated_at),
        api_token: api_token.map(str::to_string),
        previous_token_expires_at: p.previous_token.as_ref().map(|(_, until)| iso(*until)),
    }
}
