//! The request bodies of the management operations, as the API and `reftrack admin`
//! read them, and how a patch body becomes the store's change.

use super::*;

/// The body of the management call that creates a workspace.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceBody {
    pub name: String,
}

/// The body of the management call that creates a program.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramBody {
    pub workspace_id: i64,
    pub name: String,
    pub cookie_window_days: Option<i64>,
    pub currency: Option<String>,
    pub commission: Option<CommissionSpec>,
    pub recurring_commission_months: Option<i64>,
    pub allowed_origins: Option<Vec<String>>,
    pub stripe_webhook_secret: Option<String>,
    /// Days a commission stays pending before it is due (default 30, 0 allowed).
    pub commission_hold_days: Option<i64>,
    /// The smallest balance a payout pays, in cents (default 5000).
    pub min_payout_cents: Option<i64>,
    /// Whether anyone may apply to join the program from its public application page
    /// (default false).
    pub applications_open: Option<bool>,
    /// Whether approved partners may create their own links (default true).
    pub partner_links_allowed: Option<bool>,
    /// Where the program's redirect links (`GET /r/{short_link}`) send visitors: an
    /// absolute http or https URL.
    #[schema(example = "https://shop.example.com/")]
    pub destination_url: Option<String>,
}

/// The body of the management call that changes a program; an absent field is left as it is.
#[derive(Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramPatchBody {
    pub name: Option<String>,
    pub cookie_window_days: Option<i64>,
    pub currency: Option<String>,
    pub commission: Option<CommissionSpec>,
    #[serde(default, deserialize_with = "nullable")]
    pub recurring_commission_months: Option<Option<i64>>,
    pub allowed_origins: Option<Vec<String>>,
    #[serde(default, deserialize_with = "nullable")]
    pub stripe_webhook_secret: Option<Option<String>>,
    pub commission_hold_days: Option<i64>,
    pub min_payout_cents: Option<i64>,
    pub applications_open: Option<bool>,
    pub partner_links_allowed: Option<bool>,
    /// Where redirect links send visitors; `null` clears it (links without a destination
    /// of their own then answer 404).
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub destination_url: Option<Option<String>>,
    /// The fraud rules to change, and only those: rule name → `off`, `flag` or `reject`
    /// (`{"disposable_email": "reject"}`).
    #[schema(value_type = Option<Object>, example = json!({"disposable_email": "reject"}))]
    pub fraud_rules: Option<serde_json::Value>,
}

impl ProgramPatchBody {
    /// Every field the body gets wrong, in the settings form's order: the use case
    /// refuses the first, the settings page shows them all at once.
    pub fn problems(&self) -> Vec<String> {
        refusals([
            self.name.as_ref().map(|n| name("name", n, 200).map(drop)),
            self.currency.as_ref().map(|c| currency(c).map(drop)),
            self.commission.as_ref().map(|c| commission(c).map(drop)),
            self.recurring_commission_months
                .map(|m| recurring_months(m).map(drop)),
            self.cookie_window_days.map(|d| window_days(d).map(drop)),
            self.commission_hold_days.map(|d| hold_days(d).map(drop)),
            self.min_payout_cents.map(|c| min_payout(c).map(drop)),
            self.allowed_origins.as_ref().map(|o| origins(o).map(drop)),
            self.destination_url
                .as_ref()
                .and_then(|d| d.as_deref())
                .map(|d| destination_url(d).map(drop)),
            self.stripe_webhook_secret
                .clone()
                .map(|s| webhook_secret(s).map(drop)),
            self.fraud_rules
                .as_ref()
                .map(|r| fraud_rules_patch(r).map(drop)),
        ])
    }
}

/// The body of the management call that creates a partner.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PartnerBody {
    pub name: String,
    pub code: String,
    pub email: Option<String>,
    /// The workspace whose owners see the partner before it joins one of their programs.
    /// A dashboard session that may change more than one workspace must name it.
    pub workspace_id: Option<i64>,
}

/// The body of the management call that changes a partner; an absent field is left as it
/// is, `null` clears a nullable one.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PartnerPatchBody {
    pub name: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub email: Option<Option<String>>,
    /// `paypal`, `wise` or `manual`.
    #[serde(default, deserialize_with = "nullable")]
    pub payout_method: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    pub payout_email: Option<Option<String>>,
}

impl PartnerBody {
    /// Every field the body gets wrong, in the add-partner form's order: the use case
    /// refuses one, the form shows them all at once.
    pub fn problems(&self) -> Vec<String> {
        refusals([
            Some(name("name", &self.name, 200).map(drop)),
            Some(partner_code(&self.code).map(drop)),
            self.email.as_ref().map(|e| email("email", e).map(drop)),
        ])
    }
}

impl PartnerPatchBody {
    /// Every field the body gets wrong, in the partner-details form's order: the use case
    /// refuses the first, the form shows them all at once.
    pub fn problems(&self) -> Vec<String> {
        let given = |field: &Option<Option<String>>| field.as_ref().and_then(|v| v.clone());
        refusals([
            self.name.as_ref().map(|n| name("name", n, 200).map(drop)),
            given(&self.email).map(|e| email("email", &e).map(drop)),
            given(&self.payout_method)
                .map(|m| one_of::<PayoutMethod>("payout_method", &m).map(drop)),
            given(&self.payout_email).map(|e| email("payout_email", &e).map(drop)),
        ])
    }
}

/// The body of the management call that adds a partner to a program.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgramPartnerBody {
    pub partner_id: i64,
    pub status: Option<String>,
    /// The program's group it joins; absent: the default group.
    pub group_id: Option<i64>,
}

/// The body of the management call that creates a referral link.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkBody {
    pub program_id: i64,
    pub partner_id: Option<i64>,
    pub short_link: String,
    pub status: Option<String>,
    /// Where `GET /r/{short_link}` sends visitors, instead of the program's
    /// `destination_url`: an absolute http or https URL.
    #[schema(example = "https://shop.example.com/podcast")]
    pub destination_url: Option<String>,
}

/// The body of the management call that changes a link; an absent field is left as it
/// is, `null` clears the destination (the program's applies again).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkPatchBody {
    /// `active` or `inactive`.
    pub status: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub destination_url: Option<Option<String>>,
}

/// The body of the management call that creates a dashboard user.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserBody {
    pub email: String,
    pub password: String,
    pub name: Option<String>,
}

/// The body of the management call that changes a dashboard user; an absent field is
/// left as it is, `null` clears the name.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct UserPatchBody {
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    pub name: Option<Option<String>>,
    /// A new password, 8 to 1024 characters: every session of the user ends.
    pub password: Option<String>,
}

/// The body of the management call that adds a user to a workspace.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberBody {
    pub user_id: i64,
    pub role: String,
    pub status: Option<String>,
}

/// The body of the management call that changes a membership; an absent field is left as it is.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemberPatchBody {
    pub role: Option<String>,
    pub status: Option<String>,
}

/// The body of the management call that sets a program's payment account.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PaymentAccountBody {
    pub status: String,
    pub account_id: Option<String>,
    #[serde(default)]
    pub charges_enabled: bool,
    #[serde(default)]
    pub payouts_enabled: bool,
    #[serde(default)]
    pub details_submitted: bool,
    pub connection_date: Option<String>,
}
