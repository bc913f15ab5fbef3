//! The management operations: workspaces, programs, partners, links, users and
//! memberships, and the admin token. The inputs are the management API's request bodies,
//! whether they come over HTTP or from `reftrack admin`; these functions validate them
//! (with the texts a client reads), issue secrets, stamp times and keep the lookup
//! caches true.

use futures::FutureExt;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use super::access::Caller;
use super::error::refusals;
use super::secrets::{self, ADMIN_TOKEN_PREFIX, API_TOKEN_PREFIX};
use super::{App, Error, Result};
use reftrack_domain::access::Access;
use reftrack_domain::commission::{CommissionRule, CommissionSpec};
use reftrack_domain::money::normalize_currency;
use reftrack_domain::redirect;
use reftrack_domain::status::{
    LinkStatus, MembershipStatus, PartnerStatus, PayoutMethod, Role, UnknownValue,
};
use reftrack_domain::text;
use reftrack_domain::time::iso;
use reftrack_store::{
    Link, LinkPatch, MemberRow, Membership, NewProgram, Partner, PartnerPatch, PartnerProgram,
    PaymentAccount, Program, ProgramPatch, Record, StoreError, User, UserPatch, Workspace,
};

/// Settings key of the admin token's hash.
const ADMIN_TOKEN_SETTING: &str = "admin_token_hash";

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
#[derive(Deserialize, ToSchema)]
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

/// Distinguishes an explicit `null` (Some(None)) from an absent field (None).
pub(super) fn nullable<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// A trimmed text of 1 to `max` characters, or the field's error.
pub(super) fn name(field: &str, value: &str, max: usize) -> Result<String> {
    let v = value.trim();
    if v.is_empty() || v.chars().count() > max {
        return Err(Error::invalid(format!(
            "{field} must be 1 to {max} characters"
        )));
    }
    readable(field, v)?;
    Ok(v.to_string())
}

/// `Ok` unless `value` holds a control or bidirectional formatting character
/// ([`text::forbidden_char`]), which is the field's error.
pub(super) fn readable(field: &str, value: &str) -> Result<()> {
    match text::forbidden_char(value) {
        Some(_) => Err(Error::invalid(text::refusal(field))),
        None => Ok(()),
    }
}

/// One of the names of `T`, or the field's error.
pub(super) fn one_of<T: std::str::FromStr<Err = UnknownValue>>(
    field: &str,
    value: &str,
) -> Result<T> {
    value
        .parse()
        .map_err(|e: UnknownValue| Error::invalid(e.message(field)))
}

/// `value` when it lies in `range`, else the field's error.
fn in_range(field: &str, value: i64, range: std::ops::RangeInclusive<i64>) -> Result<i64> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(Error::invalid(format!(
            "{field} must be an integer from {} to {}",
            range.start(),
            range.end()
        )))
    }
}

fn window_days(days: i64) -> Result<i64> {
    in_range("cookie_window_days", days, 1..=3650)
}

fn hold_days(days: i64) -> Result<i64> {
    in_range("commission_hold_days", days, 0..=3650)
}

fn min_payout(cents: i64) -> Result<i64> {
    in_range("min_payout_cents", cents, 0..=100_000_000_000)
}

/// A trimmed email address, or the field's error.
pub(super) fn email(field: &str, value: &str) -> Result<String> {
    let v = value.trim();
    if !v.contains('@') || v.len() > 255 || v.contains(char::is_whitespace) {
        return Err(Error::invalid(format!("{field} must be an email address")));
    }
    Ok(v.to_string())
}

/// A link's short name: trimmed, 1 to 255 characters without spaces.
pub(super) fn short_link(value: &str) -> Result<&str> {
    let v = value.trim();
    if v.is_empty() || v.chars().count() > 255 || v.contains(char::is_whitespace) {
        return Err(Error::invalid(
            "short_link must be 1 to 255 characters without spaces",
        ));
    }
    readable("short_link", v)?;
    Ok(v)
}

/// The password rule of dashboard users and partners: 8 to 1024 characters.
pub(super) fn check_password(field: &str, password: &str) -> Result<()> {
    let length = password.chars().count();
    if !(8..=1024).contains(&length) {
        return Err(Error::invalid(format!(
            "{field} must be 8 to 1024 characters"
        )));
    }
    Ok(())
}

/// The argon2id hash of a password, computed off the async workers (it is deliberately
/// slow).
pub(super) async fn hashed_password(password: String) -> Result<String> {
    secrets::password_work(move || secrets::hash_password(&password))
        .await
        .and_then(|hashed| hashed)
        .map_err(|e| Error::Internal("Internal server error", e))
}

fn currency(code: &str) -> Result<String> {
    normalize_currency(code)
        .ok_or_else(|| Error::invalid("currency must be a 3-letter currency code"))
}

fn commission(spec: &CommissionSpec) -> Result<CommissionRule> {
    CommissionRule::from_spec(spec).map_err(Error::Invalid)
}

fn recurring_months(months: Option<i64>) -> Result<Option<i64>> {
    match months {
        Some(m) if !(0..=1200).contains(&m) => Err(Error::invalid(
            "recurring_commission_months must be null or an integer from 0 to 1200",
        )),
        other => Ok(other),
    }
}

/// Normalises allowed origins to `scheme://host[:port]`. A wildcard is refused with its
/// own reason: it would parse, then match no browser's `Origin`.
fn origins(list: &[String]) -> Result<Vec<String>> {
    list.iter()
        .map(|o| {
            if o.contains('*') {
                return Err(Error::invalid(format!(
                    "allowed_origins: {o:?} has a wildcard, which is not supported: list each \
                     site, like https://shop.example.com and https://www.example.com"
                )));
            }
            let url = url::Url::parse(o.trim()).ok().filter(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.host().is_some()
                    && u.path() == "/"
                    && u.query().is_none()
                    && u.username().is_empty()
            });
            url.map(|u| u.origin().ascii_serialization())
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "allowed_origins: {o:?} is not an origin like https://shop.example.com"
                    ))
                })
        })
        .collect()
}

/// A destination URL of redirect links, or the field's error.
pub(super) fn destination_url(url: &str) -> Result<String> {
    redirect::destination(url).map_err(|e| Error::invalid(format!("destination_url {e}")))
}

fn webhook_secret(secret: Option<String>) -> Result<Option<String>> {
    match secret {
        Some(s) if s.trim().is_empty() || s.chars().count() > 255 => Err(Error::invalid(
            "stripe_webhook_secret must be 1 to 255 characters",
        )),
        other => Ok(other.map(|s| s.trim().to_string())),
    }
}

/// The program a create body asks for, validated, with its new API token (whose hash
/// the program keeps).
pub(super) fn new_program(b: ProgramBody) -> Result<(NewProgram, String)> {
    let token = secrets::generate_token(API_TOKEN_PREFIX);
    let program = NewProgram {
        workspace_id: b.workspace_id,
        name: name("name", &b.name, 200)?,
        cookie_window_days: window_days(b.cookie_window_days.unwrap_or(60))?,
        currency: currency(b.currency.as_deref().unwrap_or("usd"))?,
        commission: b
            .commission
            .as_ref()
            .map(commission)
            .transpose()?
            .unwrap_or_default(),
        recurring_commission_months: recurring_months(b.recurring_commission_months)?,
        allowed_origins: origins(&b.allowed_origins.unwrap_or_default())?,
        stripe_webhook_secret: webhook_secret(b.stripe_webhook_secret)?,
        commission_hold_days: hold_days(b.commission_hold_days.unwrap_or(30))?,
        min_payout_cents: min_payout(b.min_payout_cents.unwrap_or(5000))?,
        applications_open: b.applications_open.unwrap_or(false),
        partner_links_allowed: b.partner_links_allowed.unwrap_or(true),
        destination_url: b
            .destination_url
            .as_deref()
            .map(destination_url)
            .transpose()?,
        api_token_hash: secrets::hash_token(&token),
        api_token_prefix: secrets::token_prefix(&token),
    };
    Ok((program, token))
}

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

impl App {
    /// Creates a workspace.
    pub async fn create_workspace(&self, caller: &Caller, b: WorkspaceBody) -> Result<Workspace> {
        caller.operator_only("create workspaces")?;
        let name = name("name", &b.name, 200)?;
        Ok(self.store.create_workspace(&name, self.now_ms()).await?)
    }

    /// Creates a program with a new API token; the view carries the token (shown once:
    /// only its hash is kept).
    pub async fn create_program(&self, caller: &Caller, b: ProgramBody) -> Result<ProgramView> {
        self.allow(caller, Record::Workspace(b.workspace_id), Access::Change)
            .await?;
        let (program, token) = new_program(b)?;
        let program = self.store.create_program(&program, self.now_ms()).await?;
        Ok(program_view(&program, Some(&token)))
    }

    /// One program.
    pub async fn program(&self, id: i64) -> Result<Program> {
        Ok(self.store.program(id).await?)
    }

    /// One program as the management API shows it.
    pub async fn program_view(&self, caller: &Caller, id: i64) -> Result<ProgramView> {
        self.allow(caller, Record::Program(id), Access::Read)
            .await?;
        Ok(program_view(&self.program(id).await?, None))
    }

    /// Changes a program.
    pub async fn update_program(
        &self,
        caller: &Caller,
        id: i64,
        b: ProgramPatchBody,
    ) -> Result<ProgramView> {
        self.allow(caller, Record::Program(id), Access::Change)
            .await?;
        let patch = ProgramPatch {
            name: b.name.map(|n| name("name", &n, 200)).transpose()?,
            cookie_window_days: b.cookie_window_days.map(window_days).transpose()?,
            currency: b.currency.map(|c| currency(&c)).transpose()?,
            commission: b.commission.as_ref().map(commission).transpose()?,
            recurring_commission_months: b
                .recurring_commission_months
                .map(recurring_months)
                .transpose()?,
            allowed_origins: b.allowed_origins.map(|o| origins(&o)).transpose()?,
            stripe_webhook_secret: b.stripe_webhook_secret.map(webhook_secret).transpose()?,
            commission_hold_days: b.commission_hold_days.map(hold_days).transpose()?,
            min_payout_cents: b.min_payout_cents.map(min_payout).transpose()?,
            applications_open: b.applications_open,
            partner_links_allowed: b.partner_links_allowed,
            destination_url: b
                .destination_url
                .map(|d| d.as_deref().map(destination_url).transpose())
                .transpose()?,
        };
        let done = self.store.update_program(id, &patch, self.now_ms()).await;
        self.changed();
        Ok(program_view(&done?, None))
    }

    /// Replaces a program's API token; the view carries the new token. With
    /// `keep_old_for_hours` (1 to 168) the replaced token keeps working that long, so
    /// servers can move to the new one without refused calls; without it (or 0), it
    /// stops at once. Either way an older previous token stops.
    pub async fn rotate_program_token(
        &self,
        caller: &Caller,
        id: i64,
        b: RotateTokenBody,
    ) -> Result<ProgramView> {
        self.allow(caller, Record::Program(id), Access::Change)
            .await?;
        let hours = match b.keep_old_for_hours {
            None | Some(0) => None,
            Some(h @ 1..=MAX_KEEP_OLD_TOKEN_HOURS) => Some(h),
            Some(_) => {
                return Err(Error::invalid(format!(
                    "keep_old_for_hours must be an integer from 0 to {MAX_KEEP_OLD_TOKEN_HOURS}"
                )))
            }
        };
        let token = secrets::generate_token(API_TOKEN_PREFIX);
        let at = self.now_ms();
        let done = self
            .store
            .set_program_token(
                id,
                &secrets::hash_token(&token),
                &secrets::token_prefix(&token),
                hours.map(|h| at + h * 3_600_000),
                at,
            )
            .await;
        self.changed();
        Ok(program_view(&done?, Some(&token)))
    }

    /// Sets a program's payment-account fields (what the status endpoint reports), as the
    /// operator or an owner or admin of its workspace states them.
    pub async fn set_payment_account(
        &self,
        caller: &Caller,
        id: i64,
        b: PaymentAccountBody,
    ) -> Result<ProgramView> {
        self.allow(caller, Record::Program(id), Access::Change)
            .await?;
        let connection_date = match b.connection_date.as_deref() {
            None => None,
            Some(d) => Some(
                chrono::DateTime::parse_from_rfc3339(d)
                    .map_err(|_| Error::invalid("connection_date must be an ISO 8601 timestamp"))?
                    .timestamp_millis(),
            ),
        };
        let account = PaymentAccount {
            status: name("status", &b.status, 64)?,
            account_id: b
                .account_id
                .map(|a| name("account_id", &a, 255))
                .transpose()?,
            charges_enabled: b.charges_enabled,
            payouts_enabled: b.payouts_enabled,
            details_submitted: b.details_submitted,
            connection_date,
        };
        let done = self
            .store
            .set_payment_account(id, &account, self.now_ms())
            .await;
        self.changed();
        Ok(program_view(&done?, None))
    }

    /// Creates a partner.
    pub async fn create_partner(&self, caller: &Caller, b: PartnerBody) -> Result<Partner> {
        let workspace_id = match (b.workspace_id, caller.changeable_workspaces()) {
            (Some(id), _) => Some(id),
            (None, None) => None,
            (None, Some(mine)) if mine.len() == 1 => Some(mine[0]),
            (None, Some(mine)) if mine.is_empty() => {
                return Err(Error::Forbidden(
                    "Your role may not do this: it needs an owner or admin of a workspace".into(),
                ))
            }
            (None, Some(_)) => {
                return Err(Error::invalid(
                    "workspace_id is required: you may change more than one workspace",
                ))
            }
        };
        if let Some(id) = workspace_id {
            let record = Record::Workspace(id);
            self.allow(caller, record, Access::Change).await?;
            if self.store.workspaces_of(record).await?.is_empty() {
                return Err(Error::NotFound(record.not_found()));
            }
        }
        let code = partner_code(&b.code)?;
        let email = b.email.map(|e| email("email", &e)).transpose()?;
        let name = name("name", &b.name, 200)?;
        Ok(self
            .store
            .create_partner(&name, code, email.as_deref(), workspace_id, self.now_ms())
            .await?)
    }

    /// Changes a partner's name, email or payout details.
    pub async fn update_partner(
        &self,
        caller: &Caller,
        id: i64,
        b: PartnerPatchBody,
    ) -> Result<Partner> {
        self.allow(caller, Record::Partner(id), Access::Change)
            .await?;
        let patch = partner_patch(b)?;
        let current = self.store.partner_account(id).await?.partner;
        if patch.changes_account(&current) {
            self.allow(caller, Record::Partner(id), Access::ChangeEverywhere)
                .await?;
        }
        Ok(self.store.update_partner(id, &patch).await?)
    }
}

/// A partner code as given (trimmed), or the field's error.
fn partner_code(value: &str) -> Result<&str> {
    let code = value.trim();
    let fits = (1..=64).contains(&code.len())
        && code
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_');
    if fits {
        Ok(code)
    } else {
        Err(Error::invalid(
            "code must be 1 to 64 letters, digits, '-' or '_'",
        ))
    }
}

/// The change a partner patch body asks for, validated.
pub(super) fn partner_patch(b: PartnerPatchBody) -> Result<PartnerPatch> {
    Ok(PartnerPatch {
        name: b.name.map(|n| name("name", &n, 200)).transpose()?,
        email: b
            .email
            .map(|e| e.map(|e| email("email", &e)).transpose())
            .transpose()?,
        payout_method: b
            .payout_method
            .map(|m| {
                m.map(|m| one_of::<PayoutMethod>("payout_method", &m))
                    .transpose()
            })
            .transpose()?,
        payout_email: b
            .payout_email
            .map(|e| e.map(|e| email("payout_email", &e)).transpose())
            .transpose()?,
    })
}

impl App {
    /// Adds a partner to a program; the day's partner count rises with it.
    pub async fn add_program_partner(
        &self,
        caller: &Caller,
        program_id: i64,
        b: ProgramPartnerBody,
    ) -> Result<PartnerProgram> {
        self.allow(caller, Record::Program(program_id), Access::Change)
            .await?;
        self.allow(caller, Record::Partner(b.partner_id), Access::Read)
            .await?;
        let status: PartnerStatus = one_of("status", b.status.as_deref().unwrap_or("approved"))?;
        let partner_id = b.partner_id;
        let at = self.now_ms();
        self.write(move |tx, deltas| {
            async move {
                match tx.program_and_partner_exist(program_id, partner_id).await? {
                    (false, _) => return Err(StoreError::NotFound("program").into()),
                    (_, false) => return Err(StoreError::NotFound("partner").into()),
                    _ => {}
                }
                let pp = tx
                    .insert_partner_program(program_id, partner_id, status, at)
                    .await?;
                if status == PartnerStatus::Approved {
                    let approved = super::management::partner_approved(partner_id);
                    tx.record_events(program_id, at, &[approved]).await?;
                }
                deltas.count_partner_joined(program_id, at);
                Ok(pp)
            }
            .boxed()
        })
        .await
    }

    /// Creates a referral link.
    pub async fn create_link(&self, caller: &Caller, b: LinkBody) -> Result<Link> {
        self.allow(caller, Record::Program(b.program_id), Access::Change)
            .await?;
        if let Some(partner_id) = b.partner_id {
            self.allow(caller, Record::Partner(partner_id), Access::Read)
                .await?;
        }
        let short_link = short_link(&b.short_link)?;
        let status: LinkStatus = one_of("status", b.status.as_deref().unwrap_or("active"))?;
        let destination = b
            .destination_url
            .as_deref()
            .map(destination_url)
            .transpose()?;
        let done = self
            .store
            .create_link(
                b.program_id,
                b.partner_id,
                short_link,
                status,
                destination.as_deref(),
                self.now_ms(),
            )
            .await;
        self.changed();
        Ok(done?)
    }

    /// One link.
    pub async fn link(&self, caller: &Caller, id: i64) -> Result<Link> {
        self.allow(caller, Record::Link(id), Access::Read).await?;
        Ok(self.store.link(id).await?)
    }

    /// Changes a link's status or destination.
    pub async fn update_link(&self, caller: &Caller, id: i64, b: LinkPatchBody) -> Result<Link> {
        self.allow(caller, Record::Link(id), Access::Change).await?;
        let patch = LinkPatch {
            status: b.status.map(|s| one_of("status", &s)).transpose()?,
            destination_url: b
                .destination_url
                .map(|d| d.as_deref().map(destination_url).transpose())
                .transpose()?,
        };
        let done = self.store.update_link(id, &patch).await;
        self.changed();
        Ok(done?)
    }

    /// Creates a dashboard user; the email is normalised, the password hashed.
    pub async fn create_user(&self, caller: &Caller, b: UserBody) -> Result<User> {
        caller.operator_only("create users")?;
        let (email, display) = user_fields(&b)?;
        let hash = hashed_password(b.password).await?;
        Ok(self
            .store
            .create_user(&email, &hash, display.as_deref(), self.now_ms())
            .await?)
    }

    /// Changes a dashboard user's name or password: the operator's alone, for a user who
    /// forgot a password (a new one ends every session the user had).
    pub async fn update_user(&self, caller: &Caller, id: i64, b: UserPatchBody) -> Result<User> {
        caller.operator_only("change users")?;
        let name = b
            .name
            .map(|n| n.as_deref().map(|n| name("name", n, 200)).transpose())
            .transpose()?;
        let password_hash = match b.password {
            Some(p) => {
                check_password("password", &p)?;
                Some(hashed_password(p).await?)
            }
            None => None,
        };
        let patch = UserPatch {
            name,
            password_hash,
        };
        Ok(self.store.update_user(id, &patch).await?)
    }

    /// Adds a user to a workspace.
    pub async fn add_member(
        &self,
        caller: &Caller,
        workspace_id: i64,
        b: MemberBody,
    ) -> Result<Membership> {
        self.allow(
            caller,
            Record::Workspace(workspace_id),
            Access::ManageMembers,
        )
        .await?;
        let role: Role = one_of("role", &b.role)?;
        let status: MembershipStatus = one_of("status", b.status.as_deref().unwrap_or("active"))?;
        Ok(self
            .store
            .add_member(workspace_id, b.user_id, role, status, self.now_ms())
            .await?)
    }

    /// Changes a membership's role or status.
    pub async fn update_member(
        &self,
        caller: &Caller,
        workspace_id: i64,
        user_id: i64,
        b: MemberPatchBody,
    ) -> Result<Membership> {
        self.allow(
            caller,
            Record::Workspace(workspace_id),
            Access::ManageMembers,
        )
        .await?;
        let role: Option<Role> = b.role.map(|r| one_of("role", &r)).transpose()?;
        let status: Option<MembershipStatus> =
            b.status.map(|st| one_of("status", &st)).transpose()?;
        // An owner may not leave its workspace without one; the operator, who can always
        // add an owner back, may.
        let stays_owner = role.is_none_or(|r| r == Role::Owner)
            && status.is_none_or(|s| s == MembershipStatus::Active);
        if !stays_owner
            && caller.member().is_some()
            && self.store.active_owners(workspace_id).await? == [user_id]
        {
            return Err(Error::Conflict(
                "This is the workspace's only active owner; make another member owner first".into(),
            ));
        }
        Ok(self
            .store
            .update_member(workspace_id, user_id, role, status)
            .await?)
    }
}

/// A user's sign-in email, normalised (trimmed, lower-case).
pub(super) fn user_email(value: &str) -> Result<String> {
    let email = value.trim().to_ascii_lowercase();
    if !email.contains('@') || email.chars().count() > 255 {
        return Err(Error::invalid("email must be an email address"));
    }
    Ok(email)
}

/// A new user's normalised email and display name, once its body is valid.
pub(super) fn user_fields(b: &UserBody) -> Result<(String, Option<String>)> {
    let email = user_email(&b.email)?;
    check_password("password", &b.password)?;
    let display = b
        .name
        .as_deref()
        .map(|n| name("name", n, 200))
        .transpose()?;
    Ok((email, display))
}

impl App {
    /// Every member of a workspace, with its user's email and name.
    pub async fn workspace_members(
        &self,
        caller: &Caller,
        workspace_id: i64,
    ) -> Result<Vec<MemberRow>> {
        let record = Record::Workspace(workspace_id);
        self.allow(caller, record, Access::Read).await?;
        if self.store.workspaces_of(record).await?.is_empty() {
            return Err(Error::NotFound(record.not_found()));
        }
        Ok(self.store.workspace_members(workspace_id).await?)
    }

    /// Adds the user who signs in with `email` to a workspace (as [`Self::add_member`]).
    /// Only whoever may manage the workspace's members learns whether such a user exists.
    pub async fn add_member_by_email(
        &self,
        caller: &Caller,
        workspace_id: i64,
        email: &str,
        role: &str,
    ) -> Result<Membership> {
        self.allow(
            caller,
            Record::Workspace(workspace_id),
            Access::ManageMembers,
        )
        .await?;
        let email = email.trim().to_ascii_lowercase();
        if email.is_empty() {
            return Err(Error::invalid("email must be an email address"));
        }
        let user = self.store.user_credentials(&email).await?.ok_or_else(|| {
            Error::invalid(
                "email is not the email of a user of this server: the operator creates \
                 users (reftrack admin create-user)",
            )
        })?;
        let b = MemberBody {
            user_id: user.user_id,
            role: role.to_string(),
            status: None,
        };
        self.add_member(caller, workspace_id, b)
            .await
            .map_err(|e| match e {
                Error::Conflict(_) => {
                    Error::Conflict("email is already a member of this workspace".into())
                }
                other => other,
            })
    }
}

impl App {
    /// Makes sure there is an admin token: with none configured and none stored (the
    /// first start), generates one, stores its hash and returns it, to be shown once.
    pub async fn first_admin_token(&self) -> Result<Option<String>> {
        if self.configured_admin_token.is_some()
            || self.store.setting(ADMIN_TOKEN_SETTING).await?.is_some()
        {
            return Ok(None);
        }
        let token = secrets::generate_token(ADMIN_TOKEN_PREFIX);
        self.store
            .set_setting(ADMIN_TOKEN_SETTING, &secrets::hash_token(&token))
            .await?;
        self.admin_token.clear();
        Ok(Some(token))
    }

    /// Whether `token` is the admin token, compared in constant time: the configured one
    /// (`REFTRACK_ADMIN_TOKEN`), else the stored one. The stored hash is cached for at most
    /// [`super::cache::TTL`], so a rotation by another process (`reftrack admin
    /// rotate-admin-token`, a second server) takes effect here within that time, and
    /// management calls do not read the database for it each time.
    pub async fn is_admin_token(&self, token: &str) -> Result<bool> {
        let presented = secrets::hash_token(token);
        if let Some(configured) = &self.configured_admin_token {
            return Ok(secrets::hashes_match(&presented, configured));
        }
        let stored = self
            .admin_token
            .get_or_read(&(), || self.store.setting(ADMIN_TOKEN_SETTING))
            .await?;
        Ok(stored.is_some_and(|stored| secrets::hashes_match(&presented, &stored)))
    }

    /// Replaces the stored admin token with a new one and returns it; every server
    /// without `REFTRACK_ADMIN_TOKEN` accepts it, and refuses the old one, within
    /// [`super::cache::TTL`]. A server with `REFTRACK_ADMIN_TOKEN` keeps that token:
    /// `reftrack admin rotate-admin-token` refuses to run where it is set.
    pub async fn rotate_admin_token(&self) -> Result<String> {
        let token = secrets::generate_token(ADMIN_TOKEN_PREFIX);
        self.store
            .set_setting(ADMIN_TOKEN_SETTING, &secrets::hash_token(&token))
            .await?;
        self.admin_token.clear();
        Ok(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partner_bodies_name_every_wrong_field_in_form_order() {
        let b = PartnerBody {
            name: " ".into(),
            code: "no spaces".into(),
            email: Some("nobody".into()),
            workspace_id: None,
        };
        let problems = b.problems();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[1].starts_with("code must be"), "{problems:?}");
        assert_eq!(problems[2], "email must be an email address");

        let b = PartnerPatchBody {
            name: None,
            email: Some(None),
            payout_method: Some(Some("cheque".into())),
            payout_email: Some(Some("x".into())),
        };
        let problems = b.problems();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("payout_method"), "{problems:?}");
        assert_eq!(problems[1], "payout_email must be an email address");
    }
}
