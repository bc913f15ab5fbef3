//! Partner accounts and the partner API: invites, sign-in, applications, and what a
//! signed-in partner reads of its own programs.
//!
//! A partner session token is `rtp_` and 256 random bits in hex, an invite token `rti_`
//! likewise; only their SHA-256 hashes are stored. Sessions last 7 days from sign-in,
//! as dashboard sessions do, and are a table of their own: neither kind of session works
//! on the other's API. An invite works once, for 7 days; accepting it sets the partner's
//! password (a first one, or a new one when it forgot it) and ends its other sessions.
//!
//! A partner sees a program's links, figures, commissions and payouts only while it is
//! `approved` there; pending, rejected and banned partners see the program's name and
//! their standing (in [`App::partner_me`]) and nothing else.

use std::sync::Arc;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::access::Caller;
use super::admin::{
    check_password, email, hashed_password, name, partner_patch, short_link, user_email,
    PartnerPatchBody,
};
use super::dashboard::{NewSession, SESSION_LIFETIME_MS};
use super::error::refusals;
use super::invite_mail::invite_mail;
use super::notice_mail::{application_mail, ApplicationNotice};
use super::pages::{listed, probe, PageParams};
use super::payouts::CommissionParams;
use super::redirect::redirect_url;
use super::secrets::{generate_token, hash_token};
use super::{App, Error, Listed, Result};
use reftrack_domain::access::Access;
use reftrack_domain::commission::CommissionRule;
use reftrack_domain::status::{LinkStatus, MembershipStatus, PartnerStatus};
use reftrack_domain::webhooks::EventType;
use reftrack_store::partners::{NewApplicant, PartnerMembership, PartnerPayoutItem, TokenGrant};
use reftrack_store::webhooks::{Event, Subject};
use reftrack_store::{
    Balance, CommissionRow, Link, LinkFilter, PartnerProgram, Program, Record, StoreError,
};

/// Prefix of partner session tokens.
pub const PARTNER_SESSION_PREFIX: &str = "rtp_";
/// Prefix of invite tokens.
pub const INVITE_TOKEN_PREFIX: &str = "rti_";
/// How long an invite works: 7 days.
pub const INVITE_LIFETIME_MS: i64 = 7 * reftrack_domain::time::DAY_MS;
/// How long a password-reset link a partner asked for itself works: an hour.
pub const RESET_LIFETIME_MS: i64 = 60 * 60 * 1000;
/// The answer to a partner's password-reset request, whether or not the email has an
/// account (the answer does not tell).
pub const RESET_SENT: &str = "If a partner account signs in with this email, a link to set a \
    new password is on its way to it. The link works once, for an hour.";
/// Why a partner cannot reset its password itself on this server.
pub const RESET_UNAVAILABLE: &str = "Resetting a password by mail is not set up on this \
    server: ask the program for a new invite link, which lets you set a new password";
/// Active links a partner may have in one program when it makes its own.
pub const MAX_PARTNER_LINKS: i64 = 20;
/// The 409 of an application whose email belongs to a partner the program's workspace
/// added (or invited) and that has not set a password yet: its invite is how it signs up.
const INVITED_EMAIL: &str = "A program has added a partner with this email that has not \
     signed up yet: accept the invite you were sent (or ask the program for one), then \
     apply signed in";

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramTerms {
    /// The program's currency, three lower-case letters; a flat commission and the
    /// minimum payout are in its smallest unit.
    pub currency: String,
    /// What a sale earns.
    pub commission: CommissionRule,
    /// Days the browser tracker remembers a click (`docs/decisions.md`, "The attribution
    /// window").
    pub cookie_window_days: i64,
    /// Months after a subscription's first payment during which its renewals earn too:
    /// `None` for ever, `Some(0)` never
    /// ([`recurring_earns`](reftrack_domain::commission::recurring_earns)).
    pub recurring_commission_months: Option<i64>,
    /// Days a commission stays pending before it is due.
    pub commission_hold_days: i64,
    /// The smallest due balance a payout pays, in the currency's smallest unit.
    pub min_payout_cents: i64,
}

impl ProgramTerms {
    /// The terms of `program`.
    pub fn of(program: &Program) -> ProgramTerms {
        ProgramTerms {
            currency: program.currency.clone(),
            commission: program.commission,
            cookie_window_days: program.cookie_window_days,
            recurring_commission_months: program.recurring_commission_months,
            commission_hold_days: program.commission_hold_days,
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
}

/// What a partner may change of itself; an absent field is left as it is, `null` clears
/// a nullable one.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PartnerMeBody {
    pub name: Option<String>,
    /// `paypal`, `wise` or `manual`.
    #[serde(default, deserialize_with = "super::admin::nullable")]
    pub payout_method: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::admin::nullable")]
    pub payout_email: Option<Option<String>>,
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

/// Why an invite could not be used.
fn invite_refused(invite: Option<reftrack_store::partners::InviteRow>, now: i64) -> Error {
    Error::invalid(match invite {
        None => "This invite link is not valid",
        Some(i) if i.used_at.is_some() => {
            "This invite link has already been used: sign in, or ask for a new one"
        }
        Some(i) if i.expires_at <= now => "This invite link has expired: ask for a new one",
        Some(_) => "This invite link is not valid",
    })
}

/// A partner's link with its redirect address, when it has one.
fn partner_link(link: Link, program_destination: Option<&str>, public_url: &str) -> PartnerLink {
    PartnerLink {
        redirect_url: redirect_url(public_url, &link, program_destination),
        link,
    }
}

/// A short link made for a partner: its code and 6 random hex digits.
fn generated_short_link(code: &str) -> String {
    let random = generate_token("");
    format!("{}-{}", code.to_ascii_lowercase(), &random[..6])
}

/// A partner code made for an applicant: letters and digits of its name, and 6 random
/// hex digits.
fn applicant_code(name: &str) -> String {
    let stem: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(20)
        .collect::<String>()
        .to_ascii_lowercase();
    let random = generate_token("");
    if stem.is_empty() {
        format!("partner-{}", &random[..6])
    } else {
        format!("{stem}-{}", &random[..6])
    }
}

/// An optional free text of at most `max` characters, trimmed; empty is none.
fn note(field: &str, value: Option<String>, max: usize) -> Result<Option<String>> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) if v.chars().count() > max => Err(Error::invalid(format!(
            "{field} must be at most {max} characters"
        ))),
        Some(v) => Ok(Some(v.to_string())),
    }
}

/// The API's answer to a password change whose current password is wrong.
pub const WRONG_CURRENT_PASSWORD: &str = "current_password is not the current password";

impl App {
    /// Issues an invite for a partner; `public_url` is where the server is reached.
    pub async fn invite_partner(
        &self,
        caller: &Caller,
        partner_id: i64,
        public_url: &str,
    ) -> Result<Invite> {
        self.allow(
            caller,
            Record::Partner(partner_id),
            Access::ChangeEverywhere,
        )
        .await?;
        let account = self.store.partner_account(partner_id).await?;
        let Some(email) = &account.partner.email else {
            return Err(Error::invalid(
                "The partner has no email: set its email before inviting it",
            ));
        };
        let (invite_url, expires_at) = self
            .grant_invite(partner_id, INVITE_LIFETIME_MS, public_url)
            .await?;
        let emailed = match &self.mailer {
            None => false,
            Some(mailer) => {
                let reset = account.account_email.is_some();
                let mail =
                    invite_mail(email, &account.partner.name, &invite_url, expires_at, reset);
                // The invite is committed: a mail that fails loses nothing, the owner
                // still gets the link.
                match mailer.send(mail).await {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::warn!(partner_id, error = %e, "mailing a partner invite failed");
                        false
                    }
                }
            }
        };
        Ok(Invite {
            invite_url,
            expires_at: reftrack_domain::time::iso(expires_at),
            emailed,
        })
    }

    /// A new invite of `partner_id` working for `lifetime` ms (its older ones end): its
    /// URL on `public_url`, and when it expires.
    async fn grant_invite(
        &self,
        partner_id: i64,
        lifetime: i64,
        public_url: &str,
    ) -> Result<(String, i64)> {
        let token = generate_token(INVITE_TOKEN_PREFIX);
        let now = self.now_ms();
        let expires_at = now + lifetime;
        let token_hash = hash_token(&token);
        self.write(move |tx, _| {
            Box::pin(async move {
                tx.insert_invite(&TokenGrant {
                    partner_id,
                    token_hash: &token_hash,
                    at: now,
                    expires_at,
                })
                .await?;
                Ok(())
            })
        })
        .await?;
        let url = format!(
            "{}/partner/invite?token={token}",
            public_url.trim_end_matches('/')
        );
        Ok((url, expires_at))
    }

    /// Whether a partner may reset a forgotten password itself: only when the server
    /// mails and someone said where it is reached (`REFTRACK_PUBLIC_URL` or the confirmed
    /// address, [`App::known_public_url`]), so that a mailed link never names a request's
    /// host, nor a listening address partners cannot reach.
    pub async fn partner_reset_available(&self) -> Result<bool> {
        Ok(self.mailer.is_some() && self.known_public_url().await?.is_some())
    }

    /// Mails a link that sets a new password (an invite of [`RESET_LIFETIME_MS`]) to the
    /// partner account that signs in with `email`, if there is one. The answer comes once
    /// the email is read, and is the same either way: the lookup, the invite and the mail
    /// run after it, so that its time does not tell whether the account exists. 404
    /// [`RESET_UNAVAILABLE`] when the server cannot ([`Self::partner_reset_available`]).
    pub async fn reset_partner_password(self: &Arc<Self>, email: &str) -> Result<()> {
        if !self.partner_reset_available().await? {
            return Err(Error::NotFound(RESET_UNAVAILABLE.into()));
        }
        let email = user_email(email)?;
        let app = self.clone();
        tokio::spawn(async move {
            if let Err(e) = app.mail_reset(&email).await {
                tracing::warn!(error = %e, "a password reset failed");
            }
        });
        Ok(())
    }

    /// The work of [`Self::reset_partner_password`] after its answer.
    async fn mail_reset(&self, email: &str) -> Result<()> {
        let (Some(mailer), Some(public_url)) = (&self.mailer, self.known_public_url().await?)
        else {
            return Ok(());
        };
        let Some(found) = self.store.partner_credentials(email).await? else {
            return Ok(());
        };
        let account = self.store.partner_account(found.partner_id).await?;
        let (url, expires_at) = self
            .grant_invite(found.partner_id, RESET_LIFETIME_MS, &public_url)
            .await?;
        let mail = invite_mail(email, &account.partner.name, &url, expires_at, true);
        mailer
            .send(mail)
            .await
            .map_err(|e| Error::Internal("Internal server error", e.into()))
    }

    /// Accepts an invite: sets the partner's password and signs it in.
    pub async fn accept_invite(&self, b: AcceptInviteBody) -> Result<NewSession> {
        check_password("password", &b.password)?;
        let invite_hash = hash_token(b.token.trim());
        let hash = hashed_password(b.password).await?;
        let token = generate_token(PARTNER_SESSION_PREFIX);
        let session_hash = hash_token(&token);
        let now = self.now_ms();
        let expires_at = now + SESSION_LIFETIME_MS;
        self.write(move |tx, _| {
            Box::pin(async move {
                let Some(partner_id) = tx.claim_invite(&invite_hash, now).await? else {
                    return Err(invite_refused(tx.invite(&invite_hash).await?, now));
                };
                let email = tx
                    .partner_sign_in_email(partner_id)
                    .await?
                    .map(|e| e.trim().to_ascii_lowercase())
                    .ok_or_else(|| {
                        Error::invalid("The partner has no email: ask the program for a new invite")
                    })?;
                tx.set_partner_account(partner_id, &email, &hash, now)
                    .await
                    .map_err(|e| match e {
                        StoreError::Conflict(_) => Error::Conflict(
                            "Another partner account already signs in with this email".into(),
                        ),
                        other => other.into(),
                    })?;
                tx.insert_partner_session(&TokenGrant {
                    partner_id,
                    token_hash: &session_hash,
                    at: now,
                    expires_at,
                })
                .await?;
                Ok(())
            })
        })
        .await?;
        Ok(NewSession { token, expires_at })
    }

    /// Signs a partner in: a new session, or [`INVALID_CREDENTIALS`] whatever was wrong.
    /// `email` is already normalised.
    pub async fn partner_login(&self, email: &str, password: String) -> Result<NewSession> {
        let credentials = self.store.partner_credentials(email).await?;
        let partner_id = self
            .check_credentials(
                credentials.map(|c| (c.partner_id, c.password_hash)),
                password,
            )
            .await?;
        let token = generate_token(PARTNER_SESSION_PREFIX);
        let now = self.now_ms();
        let expires_at = now + SESSION_LIFETIME_MS;
        self.store
            .create_partner_session(&TokenGrant {
                partner_id,
                token_hash: &hash_token(&token),
                at: now,
                expires_at,
            })
            .await?;
        Ok(NewSession { token, expires_at })
    }

    /// The partner of a live partner session token, with the token's hash.
    pub async fn partner_session(&self, token: &str) -> Result<Option<(i64, String)>> {
        let token_hash = hash_token(token);
        let partner = self
            .store
            .partner_session(&token_hash, self.now_ms())
            .await?;
        Ok(partner.map(|p| (p, token_hash)))
    }

    /// Ends the partner session whose token hashes to `token_hash`.
    pub async fn partner_logout(&self, token_hash: &str) -> Result<()> {
        Ok(self.store.delete_partner_session(token_hash).await?)
    }

    /// A program that takes applications: its id, name and terms for the page that
    /// applies to it; 404 otherwise, as for an unknown program.
    pub async fn open_program(&self, program_id: i64) -> Result<OpenProgram> {
        match self.store.program(program_id).await {
            Ok(p) if p.applications_open => Ok(OpenProgram {
                terms: ProgramTerms::of(&p),
                id: p.id,
                name: p.name,
                workspace_id: p.workspace_id,
            }),
            Ok(_) | Err(StoreError::NotFound(_)) => {
                Err(Error::NotFound("Program not found".into()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// An application to a program that takes them (404 otherwise). Without a session it
    /// creates the applicant's partner account; with one (`partner_id`), it adds the
    /// signed-in partner.
    pub async fn apply(
        &self,
        program_id: i64,
        partner_id: Option<i64>,
        b: ApplyBody,
    ) -> Result<Application> {
        let program = self.open_program(program_id).await?;
        let website = note("website", b.website, 500)?;
        let message = note("message", b.message, 2000)?;
        let at = self.now_ms();
        let applicant = match partner_id {
            Some(id) => Err(id),
            None => {
                let name = name("name", b.name.as_deref().unwrap_or(""), 200)?;
                let email = email("email", b.email.as_deref().unwrap_or(""))?.to_ascii_lowercase();
                let password = b.password.unwrap_or_default();
                check_password("password", &password)?;
                if self.store.partner_credentials(&email).await?.is_some() {
                    return Err(Error::Conflict(
                        "A partner account with this email already exists: sign in to apply".into(),
                    ));
                }
                Ok((name, email, hashed_password(password).await?))
            }
        };
        let workspace_id = program.workspace_id;
        let noted = (website.clone(), message.clone());
        let partner_id = self
            .write(move |tx, deltas| {
                Box::pin(async move {
                    let partner_id = match &applicant {
                        Err(id) => {
                            // A signed-in partner needs no invite; one made earlier by
                            // a workspace must not reach this program's.
                            tx.end_invites(*id, at).await?;
                            *id
                        }
                        Ok((name, email, hash)) => {
                            let code = applicant_code(name);
                            let new = NewApplicant {
                                name,
                                code: &code,
                                email,
                                password_hash: hash,
                                workspace_id,
                            };
                            tx.insert_applicant(&new, at).await.map_err(|e| match e {
                                StoreError::Conflict("invited email") => {
                                    Error::Conflict(INVITED_EMAIL.into())
                                }
                                StoreError::Conflict(_) => Error::Conflict(
                                    "A partner account with this email already exists: \
                                     sign in to apply"
                                        .into(),
                                ),
                                other => other.into(),
                            })?
                        }
                    };
                    tx.insert_partner_program(program_id, partner_id, PartnerStatus::Pending, at)
                        .await
                        .map_err(|e| match e {
                            StoreError::Conflict(_) => Error::Conflict(
                                "You have already applied to or joined this program".into(),
                            ),
                            other => other.into(),
                        })?;
                    tx.set_application(
                        program_id,
                        partner_id,
                        website.as_deref(),
                        message.as_deref(),
                    )
                    .await?;
                    let applied = Event::new(
                        EventType::PartnerApplied,
                        Subject::ProgramPartner(partner_id),
                    );
                    tx.record_events(program_id, at, &[applied]).await?;
                    deltas.count_partner_joined(program_id, at);
                    Ok(partner_id)
                })
            })
            .await?;
        self.notify_application(&program, partner_id, noted).await;
        Ok(Application {
            partner_id,
            program_id,
            status: PartnerStatus::Pending,
        })
    }

    /// Mails the program's active owners and admins that `partner_id` applied, when the
    /// server mails. The application is committed: a notice that cannot be sent is
    /// logged, and the mails go out after the answer.
    async fn notify_application(
        &self,
        program: &OpenProgram,
        partner_id: i64,
        (website, message): (Option<String>, Option<String>),
    ) {
        if self.mailer.is_none() {
            return;
        }
        let found = async {
            let members = self.store.workspace_members(program.workspace_id).await?;
            let account = self.store.partner_account(partner_id).await?;
            Ok::<_, StoreError>((members, account))
        };
        let (members, account) = match found.await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(partner_id, error = %e, "reading who to tell of an application failed");
                return;
            }
        };
        let review_url = self
            .address_for_notices()
            .await
            .map(|u| format!("{u}/app/programs/{}/partners?status=pending", program.id));
        let applicant_email = account
            .account_email
            .or(account.partner.email)
            .unwrap_or_default();
        let notice = ApplicationNotice {
            program_name: &program.name,
            applicant_name: &account.partner.name,
            applicant_email: &applicant_email,
            website: website.as_deref(),
            message: message.as_deref(),
            review_url: review_url.as_deref(),
        };
        let mails = members
            .iter()
            .filter(|m| m.status == MembershipStatus::Active && m.role.allows(Access::Change))
            .map(|m| application_mail(&m.email, &notice))
            .collect();
        self.notify_later("an application notice", mails);
    }

    /// The signed-in partner and its programs.
    pub async fn partner_me(&self, partner_id: i64) -> Result<PartnerMe> {
        let account = self.store.partner_account(partner_id).await?;
        let programs = self.store.partner_memberships(partner_id).await?;
        let p = account.partner;
        Ok(PartnerMe {
            id: p.id,
            name: p.name,
            email: account.account_email,
            code: p.code,
            payout_method: p.payout_method,
            payout_email: p.payout_email,
            programs,
        })
    }

    /// Changes the signed-in partner's name and payout details.
    pub async fn update_partner_me(&self, partner_id: i64, b: PartnerMeBody) -> Result<PartnerMe> {
        let patch = partner_patch(PartnerPatchBody {
            name: b.name,
            email: None,
            payout_method: b.payout_method,
            payout_email: b.payout_email,
        })?;
        self.store.update_partner(partner_id, &patch).await?;
        self.partner_me(partner_id).await
    }

    /// Changes the signed-in partner's password; its other sessions end.
    pub async fn change_partner_password(
        &self,
        partner_id: i64,
        session_hash: &str,
        b: PasswordBody,
    ) -> Result<()> {
        check_password("new_password", &b.new_password)?;
        let account = self.store.partner_account(partner_id).await?;
        let credentials = match account.account_email {
            Some(email) => self.store.partner_credentials(&email).await?,
            None => None,
        };
        self.check_credentials(
            credentials.map(|c| (c.partner_id, c.password_hash)),
            b.current_password,
        )
        .await
        .map_err(|_| Error::invalid(WRONG_CURRENT_PASSWORD))?;
        let hash = hashed_password(b.new_password).await?;
        let keep = session_hash.to_string();
        let now = self.now_ms();
        self.write(move |tx, _| {
            Box::pin(async move {
                tx.set_partner_password(partner_id, &hash, &keep, now)
                    .await?;
                Ok(())
            })
        })
        .await
    }

    /// The partner's record in a program where it is approved: 404 when it is not in the
    /// program, 403 naming its standing otherwise.
    pub(super) async fn approved_in(
        &self,
        partner_id: i64,
        program_id: i64,
    ) -> Result<PartnerProgram> {
        let pp = self
            .store
            .partner_program(program_id, partner_id)
            .await
            .map_err(|e| match e {
                StoreError::NotFound(_) => Error::NotFound("Program not found".into()),
                other => other.into(),
            })?;
        match pp.status {
            PartnerStatus::Approved => Ok(pp),
            PartnerStatus::Pending => Err(Error::Forbidden(
                "Your application to this program is pending".into(),
            )),
            PartnerStatus::Rejected => Err(Error::Forbidden(
                "Your application to this program was not accepted".into(),
            )),
            PartnerStatus::Banned => Err(Error::Forbidden(
                "You can no longer promote this program".into(),
            )),
        }
    }

    /// The partner's links in a program, newest first; `public_url` is where the server
    /// is reached, for their redirect addresses. The links' coupon codes come with them,
    /// in the same statement.
    pub async fn partner_links(
        &self,
        partner_id: i64,
        program_id: i64,
        page: &PageParams,
        public_url: &str,
    ) -> Result<Listed<PartnerLink>> {
        self.partner_links_in(partner_id, program_id, None, page, public_url)
            .await
    }

    /// The partner's active links in a program, newest first, one page of them: the
    /// addresses it shares now, for its overview.
    pub async fn partner_active_links(
        &self,
        partner_id: i64,
        program_id: i64,
        page: &PageParams,
        public_url: &str,
    ) -> Result<Listed<PartnerLink>> {
        let active = Some(LinkStatus::Active);
        self.partner_links_in(partner_id, program_id, active, page, public_url)
            .await
    }

    /// The partner's links in a program with `status` (any when `None`), newest first.
    async fn partner_links_in(
        &self,
        partner_id: i64,
        program_id: i64,
        status: Option<LinkStatus>,
        page: &PageParams,
        public_url: &str,
    ) -> Result<Listed<PartnerLink>> {
        let page = page.page()?;
        self.approved_in(partner_id, program_id).await?;
        let destination = self.store.program(program_id).await?.destination_url;
        let filter = LinkFilter {
            program_id: Some(program_id),
            partner_id: Some(partner_id),
            status,
        };
        let rows = self.store.list_links(None, filter, probe(page)).await?;
        let Listed { data, next_cursor } = listed(rows, page, |l| l.id);
        Ok(Listed {
            data: data
                .into_iter()
                .map(|link| partner_link(link, destination.as_deref(), public_url))
                .collect(),
            next_cursor,
        })
    }

    /// A link the partner makes in a program that allows it.
    pub async fn create_partner_link(
        &self,
        partner_id: i64,
        program_id: i64,
        b: PartnerLinkBody,
        public_url: &str,
    ) -> Result<PartnerLink> {
        let wanted = b.short_link.as_deref().map(short_link).transpose()?;
        self.approved_in(partner_id, program_id).await?;
        let program = self.store.program(program_id).await?;
        if !program.partner_links_allowed {
            return Err(Error::Forbidden(
                "This program does not let partners create links".into(),
            ));
        }
        let short_link = match wanted {
            Some(s) => s.to_string(),
            None => {
                generated_short_link(&self.store.partner_account(partner_id).await?.partner.code)
            }
        };
        let done = self
            .store
            .create_partner_link(
                program_id,
                partner_id,
                &short_link,
                MAX_PARTNER_LINKS,
                self.now_ms(),
            )
            .await;
        self.changed();
        Ok(partner_link(
            done?,
            program.destination_url.as_deref(),
            public_url,
        ))
    }

    /// What an approved partner sees of a program: its name, currency, origins, whether
    /// it may make links, and its terms (404 when not in it, 403 naming its standing
    /// otherwise).
    pub async fn partner_program(
        &self,
        partner_id: i64,
        program_id: i64,
    ) -> Result<PartnerProgramView> {
        self.approved_in(partner_id, program_id).await?;
        let p = self.store.program(program_id).await?;
        Ok(PartnerProgramView {
            terms: ProgramTerms::of(&p),
            id: p.id,
            name: p.name,
            currency: p.currency,
            allowed_origins: p.allowed_origins,
            partner_links_allowed: p.partner_links_allowed,
        })
    }

    /// The partner's earnings in a program where it is approved: pending (in the hold
    /// period), approved (due, not yet paid) and paid, net of refunds.
    pub async fn partner_balance(&self, partner_id: i64, program_id: i64) -> Result<Balance> {
        self.approved_in(partner_id, program_id).await?;
        Ok(self
            .store
            .partner_balance(program_id, partner_id, self.now_ms())
            .await?)
    }

    /// One page of the partner's commissions in a program (`params.partner_id` is
    /// ignored: it is always the partner's own).
    pub async fn partner_commissions(
        &self,
        partner_id: i64,
        program_id: i64,
        params: &CommissionParams,
        page: &PageParams,
    ) -> Result<Listed<CommissionRow>> {
        let mut filter = params.filter()?;
        filter.partner_id = Some(partner_id);
        let page = page.page()?;
        self.approved_in(partner_id, program_id).await?;
        self.commission_page(program_id, &filter, page).await
    }

    /// Every commission of the partner in a program matching `params`, in chunks.
    pub async fn export_partner_commissions(
        &self,
        partner_id: i64,
        program_id: i64,
        params: &CommissionParams,
    ) -> Result<BoxStream<'static, Result<Vec<CommissionRow>>>> {
        let mut filter = params.filter()?;
        filter.partner_id = Some(partner_id);
        self.approved_in(partner_id, program_id).await?;
        Ok(self.commission_chunks(program_id, filter))
    }

    /// One page of what the program's payouts pay the partner, newest first.
    pub async fn partner_payouts(
        &self,
        partner_id: i64,
        program_id: i64,
        page: &PageParams,
    ) -> Result<Listed<PartnerPayoutItem>> {
        let page = page.page()?;
        self.approved_in(partner_id, program_id).await?;
        let rows = self
            .store
            .partner_payout_items(program_id, partner_id, probe(page))
            .await?;
        Ok(listed(rows, page, |i| i.payout_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_up_codes_and_links_are_lowercase_and_distinct() {
        let a = applicant_code("Ana María O'Neil");
        assert!(a.starts_with("anamaraoneil-"), "{a}");
        assert_eq!(a.len(), "anamaraoneil-".len() + 6);
        assert_ne!(applicant_code("x"), applicant_code("x"));
        assert!(applicant_code("日本").starts_with("partner-"));
        let l = generated_short_link("ALICE");
        assert!(l.starts_with("alice-") && l.len() == 12, "{l}");
    }

    #[test]
    fn notes_are_trimmed_and_bounded() {
        assert_eq!(
            note("m", Some("  hi ".into()), 5).unwrap(),
            Some("hi".into())
        );
        assert_eq!(note("m", Some("   ".into()), 5).unwrap(), None);
        assert!(note("m", Some("toolong".into()), 5).is_err());
    }

    #[test]
    fn invite_refusals_say_why() {
        use reftrack_store::partners::InviteRow;
        let used = InviteRow {
            expires_at: 10,
            used_at: Some(5),
        };
        let expired = InviteRow {
            expires_at: 10,
            used_at: None,
        };
        assert!(invite_refused(Some(used), 0)
            .to_string()
            .contains("already been used"));
        assert!(invite_refused(Some(expired), 20)
            .to_string()
            .contains("expired"));
        assert!(invite_refused(None, 0).to_string().contains("not valid"));
    }
}
