//! What the partner-account calls take and answer.

use super::*;

/// An invite to give to a partner.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Invite {
    /// The page where the partner sets its password: `<public URL>/partner/invite?token=…`.
    pub invite_url: String,
    #[schema(format = DateTime)]
    pub expires_at: String,
    /// Whether the link was also mailed to the partner's email: `false` when no SMTP
    /// server is configured (`REFTRACK_SMTP_URL`) or when sending failed. The invite
    /// works either way; a failure is in the server's log.
    pub emailed: bool,
}

/// One of the signed-in partner's links, as the partner API shows it: the link's fields
/// (with its active `coupon_codes`) and the address to share it at.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PartnerLink {
    #[serde(flatten)]
    pub link: Link,
    /// `<public URL>/r/<short_link>`: the address to share anywhere (a social post, a
    /// newsletter, a video description), which counts the click and sends the visitor on
    /// to the link's destination, else its program's. The public URL is the server's
    /// address: `REFTRACK_PUBLIC_URL`, else the one its owner confirmed, else the address
    /// it listens on (plain HTTP); never the request's host. Null while the
    /// link is inactive or neither it nor its program has a destination: then the
    /// partner adds `?aff=<short_link>` to a page of the program's site that carries the
    /// tracker.
    pub redirect_url: Option<String>,
}

/// What a program offers its partners: the fields of the program that decide what a
/// partner earns and when it is paid, as the portal states them to applicants and
/// partners.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramTerms {
    /// The program's currency, three lower-case letters; a flat commission and the
    /// minimum payout are in its smallest unit.
    pub currency: String,
    /// What a sale earns under the partner's group's sale reward, before its modifiers;
    /// `None`: the group pays nothing for sales.
    pub commission: Option<CommissionRule>,
    /// The sale reward's modifiers in a partner's words (`40% on product prod_enterprise`),
    /// first match first, then the lead reward's (`$2.00 per signup`).
    pub modifiers: Vec<String>,
    /// Days the browser tracker remembers a click (`docs/decisions.md`, "The attribution
    /// window").
    pub cookie_window_days: i64,
    /// Months after a subscription's first payment during which its renewals earn too:
    /// `None` for ever, `Some(0)` never
    /// ([`recurring_earns`](reftrack_domain::commission::recurring_earns)).
    pub recurring_commission_months: Option<i64>,
    /// Days a commission stays pending before it is due: the partner's group's hold, else
    /// the program's.
    pub commission_hold_days: i64,
    /// The smallest due balance a payout pays, in the currency's smallest unit.
    pub min_payout_cents: i64,
}

impl ProgramTerms {
    /// The terms of `program` for a partner whose group has `rewards` and its own hold of
    /// `hold_days` (`None`: the program's).
    pub fn of(program: &Program, rewards: &Rewards, hold_days: Option<i64>) -> ProgramTerms {
        let sale = rewards.sale.as_ref();
        let sale_modifiers = sale
            .map(|r| r.words(RewardKind::Sale, &program.currency))
            .unwrap_or_default()
            .into_iter()
            .skip(1);
        let lead = rewards
            .lead
            .as_ref()
            .map(|r| r.words(RewardKind::Lead, &program.currency))
            .unwrap_or_default();
        ProgramTerms {
            currency: program.currency.clone(),
            commission: sale.map(|r| r.rule),
            modifiers: sale_modifiers.chain(lead).collect(),
            cookie_window_days: program.cookie_window_days,
            recurring_commission_months: sale.and_then(|r| r.max_duration_months),
            commission_hold_days: hold_days.unwrap_or(program.commission_hold_days),
            min_payout_cents: program.min_payout_cents,
        }
    }
}

/// A program that takes applications.
#[derive(Debug, Clone)]
pub struct OpenProgram {
    pub id: i64,
    pub name: String,
    pub workspace_id: i64,
    /// What it offers, for the page that applies to it.
    pub terms: ProgramTerms,
}

/// What an approved partner sees of one of its programs.
#[derive(Debug, Clone)]
pub struct PartnerProgramView {
    pub id: i64,
    pub name: String,
    /// Three lower-case letters.
    pub currency: String,
    /// The origins of the program's site; the first is where shared links point.
    pub allowed_origins: Vec<String>,
    /// Whether the partner may make its own links.
    pub partner_links_allowed: bool,
    /// What the program offers: commission, cookie window, renewals, hold, minimum payout.
    pub terms: ProgramTerms,
}

/// The body of accepting an invite.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcceptInviteBody {
    /// The `token` of the invite URL.
    pub token: String,
    /// At least 8 characters.
    pub password: String,
}

impl AcceptInviteBody {
    /// What the use case would refuse in the password, for a page that shows it beside
    /// the field together with its own checks; `None` when it is acceptable.
    pub fn password_problem(&self) -> Option<String> {
        match check_password("password", &self.password) {
            Err(Error::Invalid(text)) => Some(text),
            _ => None,
        }
    }
}

/// The body of a partner's request for a new password.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordResetBody {
    /// The email the partner signs in with.
    pub email: String,
}

/// The answer to a password-reset request: the same whether or not the email has an
/// account.
#[derive(Debug, Serialize, ToSchema)]
pub struct PasswordResetAnswer {
    pub message: String,
}

/// The body of an application to a program. A caller signed in as a partner sends only
/// `website` and `message`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyBody {
    pub name: Option<String>,
    pub email: Option<String>,
    /// At least 8 characters.
    pub password: Option<String>,
    /// Where the applicant will promote the program.
    pub website: Option<String>,
    /// A note to the program's owners.
    pub message: Option<String>,
}

impl ApplyBody {
    /// Every field the body gets wrong, in the apply form's order (the fields it sends):
    /// the use case refuses the first, the apply page shows them all at once.
    pub fn problems(&self) -> Vec<String> {
        refusals([
            self.name.as_ref().map(|n| name("name", n, 200).map(drop)),
            self.email.as_ref().map(|e| email("email", e).map(drop)),
            self.password
                .as_ref()
                .map(|p| check_password("password", p)),
            Some(note("website", self.website.clone(), 500).map(drop)),
            Some(note("message", self.message.clone(), 2000).map(drop)),
        ])
    }
}

/// An application, as recorded.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Application {
    pub partner_id: i64,
    pub program_id: i64,
    /// `pending` until the program's owners decide.
    pub status: PartnerStatus,
}

/// The signed-in partner.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PartnerMe {
    pub id: i64,
    pub name: String,
    /// The email it signs in with.
    pub email: Option<String>,
    pub code: String,
    pub payout_method: Option<reftrack_domain::status::PayoutMethod>,
    pub payout_email: Option<String>,
    /// Every program it is in, with its standing there.
    pub programs: Vec<PartnerMembership>,
    /// Whether it signs in with a second factor.
    pub two_factor: bool,
}

/// What a partner may change of itself; an absent field is left as it is, `null` clears
/// a nullable one.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PartnerMeBody {
    pub name: Option<String>,
    /// `paypal`, `wise` or `manual`.
    #[serde(default, deserialize_with = "crate::programs::nullable")]
    pub payout_method: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::programs::nullable")]
    pub payout_email: Option<Option<String>>,
    /// The partner's password: required (403 without it or when wrong) when the change
    /// would change its payout method or payout email.
    #[schema(format = Password)]
    pub current_password: Option<String>,
    /// A current code of the partner's authenticator app: required as well (403) to
    /// change the payout details when the partner signs in with two-factor.
    pub code: Option<String>,
    /// One of the partner's unused recovery codes, instead of `code`.
    pub recovery_code: Option<String>,
}

/// The body of a password change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordBody {
    pub current_password: String,
    /// At least 8 characters.
    pub new_password: String,
}

/// The body of a link a partner makes.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PartnerLinkBody {
    /// Made from the partner's code when absent.
    pub short_link: Option<String>,
}
