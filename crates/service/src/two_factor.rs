//! Two-factor sign-in of dashboard users and partner accounts: time-based one-time codes
//! (RFC 6238: HMAC-SHA-1, 6 digits, 30-second steps) and recovery codes.
//!
//! - A code is checked against the step of now and the steps just before and after it
//!   (one step of clock drift, about 30 seconds either way), by the service's clock.
//! - A code works once: the step of each accepted code is stored, and a code of that step
//!   or an earlier one is refused after it; the store takes the step in one conditional
//!   update, so two requests with the same code cannot both pass.
//! - Setting up draws a new secret and keeps it pending: nothing changes until a code
//!   from it turns two-factor on, which also issues [`RECOVERY_CODES`] recovery codes,
//!   shown once and stored as SHA-256 hashes, each accepted once ever.
//! - Turning two-factor on or off happens only in [`App::enable_two_factor`],
//!   [`App::disable_two_factor`] and [`App::operator_disable_two_factor`].
//! - The secrets are stored as they are (base32): this server has no key to encrypt
//!   stored secrets with, so the database must be kept as private as the passwords it
//!   would let an attacker bypass.

use rand::{rngs::OsRng, Rng, RngCore};
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;
use totp_rs::{Algorithm, Secret, TOTP};
use utoipa::ToSchema;

use crate::dashboard::{NewSession, SESSION_LIFETIME_MS, SESSION_TOKEN_PREFIX};
use crate::secrets::{generate_token, hash_token};
use crate::{App, Caller, Error, Result};
use reftrack_domain::access::Access as AccessKind;
use reftrack_domain::audit::{Action, Actor, Entry, Origin, Scope, Target};
pub use reftrack_store::Account;
use reftrack_store::TokenGrant;
use reftrack_store::{Record, StoreError};

/// The issuer named in authenticator apps.
pub const ISSUER: &str = "Reftrack";
/// Seconds of one time step.
pub const STEP_SECS: i64 = 30;
/// Steps of clock drift accepted either way.
pub const DRIFT_STEPS: i64 = 1;
/// Digits of a code.
pub const DIGITS: usize = 6;
/// Recovery codes issued when two-factor is turned on.
pub const RECOVERY_CODES: usize = 10;
/// How long the second step of a sign-in page waits for the code: 5 minutes.
pub const PENDING_SIGN_IN_MS: i64 = 5 * 60 * 1000;
/// Prefix of the token of a pending sign-in.
pub const PENDING_PREFIX: &str = "rt2_";

/// The answer to a sign-in whose password was right but which carries no code.
pub const CODE_REQUIRED: &str = "Two-factor code required";
/// The answer to a wrong, used or malformed code or recovery code.
pub const WRONG_CODE: &str = "Invalid two-factor code";
/// The answer to a member of a workspace that requires two-factor, without it.
pub const WORKSPACE_REQUIRES: &str = "Two-factor authentication is required by this workspace";
/// The answer to a second step whose pending sign-in is unknown or expired.
pub const SIGN_IN_EXPIRED: &str = "This sign-in has expired: enter your email and password again";

/// A new pending secret: add it to an authenticator app, then confirm with a code.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TwoFactorSetup {
    /// The secret in base32, for typing into an app.
    pub secret: String,
    /// `otpauth://totp/Reftrack:<email>?secret=…&issuer=Reftrack`, the QR code's text.
    pub otpauth_url: String,
}

/// A workspace's two-factor setting.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WorkspaceTwoFactor {
    pub workspace_id: i64,
    /// Members without two-factor are refused the workspace's records.
    pub require_two_factor: bool,
}

/// The body that changes a workspace's settings.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceSettingsBody {
    /// Whether members must sign in with two-factor.
    pub require_two_factor: bool,
}

/// The recovery codes, shown this once.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RecoveryCodes {
    /// Ten codes; each signs in (or turns two-factor off) once instead of a code.
    pub recovery_codes: Vec<String>,
}

/// A second factor: a current code or a recovery code.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct SecondFactor {
    /// The 6-digit code of the authenticator app.
    #[serde(default)]
    pub code: Option<String>,
    /// One of the recovery codes.
    #[serde(default)]
    pub recovery_code: Option<String>,
}

impl SecondFactor {
    /// A current code.
    pub fn code(code: impl Into<String>) -> Self {
        SecondFactor {
            code: Some(code.into()),
            recovery_code: None,
        }
    }

    /// Neither a code nor a recovery code (blank ones count as none).
    pub fn is_empty(&self) -> bool {
        let blank = |v: &Option<String>| v.as_deref().is_none_or(|s| s.trim().is_empty());
        blank(&self.code) && blank(&self.recovery_code)
    }
}

/// The outcome of the first step of a sign-in page.
#[derive(Debug, Clone)]
pub enum SignInStep {
    /// Signed in: no second factor is needed.
    Session(NewSession),
    /// The password was right; the code is asked next, with this token standing for the
    /// checked password for [`PENDING_SIGN_IN_MS`].
    CodeNeeded { pending: String },
}

/// A fresh secret: 160 random bits in base32.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 20];
    OsRng.fill_bytes(&mut bytes);
    match Secret::Raw(bytes.to_vec()).to_encoded() {
        Secret::Encoded(s) => s,
        Secret::Raw(_) => unreachable!("to_encoded encodes"),
    }
}

fn totp(secret: &str) -> Option<TOTP> {
    let bytes = Secret::Encoded(secret.to_string()).to_bytes().ok()?;
    Some(TOTP::new_unchecked(
        Algorithm::SHA1,
        DIGITS,
        DRIFT_STEPS as u8,
        STEP_SECS as u64,
        bytes,
    ))
}

/// The code of `secret` at `step`.
pub fn code_at_step(secret: &str, step: i64) -> Option<String> {
    Some(totp(secret)?.generate((step * STEP_SECS).max(0) as u64))
}

/// The time step of the instant `now_ms`.
pub fn step_of(now_ms: i64) -> i64 {
    now_ms.div_euclid(1000 * STEP_SECS)
}

/// The step whose code `code` is, within [`DRIFT_STEPS`] of `now_ms`; `None` when it is
/// none of them (or not 6 digits). Compares in constant time.
pub fn matching_step(secret: &str, code: &str, now_ms: i64) -> Option<i64> {
    let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if code.len() != DIGITS || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let now = step_of(now_ms);
    let mut found = None;
    for step in now - DRIFT_STEPS..=now + DRIFT_STEPS {
        let expected = code_at_step(secret, step)?;
        if bool::from(expected.as_bytes().ct_eq(code.as_bytes())) && found.is_none() {
            found = Some(step);
        }
    }
    found
}

/// The `otpauth://` URL of `secret` for the account of `email`.
pub fn otpauth_url(email: &str, secret: &str) -> String {
    let label: String = email
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'@' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("otpauth://totp/{ISSUER}:{label}?secret={secret}&issuer={ISSUER}")
}

/// The letters of recovery codes: lower-case base32, without look-alikes' confusion.
const RECOVERY_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";

/// [`RECOVERY_CODES`] new recovery codes, `xxxxx-xxxxx` (50 random bits each).
pub fn new_recovery_codes() -> Vec<String> {
    (0..RECOVERY_CODES)
        .map(|_| {
            let c: String = (0..10)
                .map(|_| RECOVERY_ALPHABET[OsRng.gen_range(0..RECOVERY_ALPHABET.len())] as char)
                .collect();
            format!("{}-{}", &c[..5], &c[5..])
        })
        .collect()
}

/// The stored hash of a recovery code as typed: case, spaces and dashes do not count.
pub fn recovery_hash(code: &str) -> String {
    let clean: String = code
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    hash_token(&clean)
}

impl App {
    /// Whether the account signs in with a second factor.
    pub async fn two_factor_on(&self, account: Account) -> Result<bool> {
        Ok(self
            .store
            .two_factor(account)
            .await?
            .is_some_and(|r| r.secret.is_some()))
    }

    /// Draws a new pending secret for the account that signs in with `email`, replacing
    /// any earlier pending one; nothing changes until [`Self::enable_two_factor`]. 409
    /// when two-factor is on already.
    pub async fn two_factor_setup(&self, account: Account, email: &str) -> Result<TwoFactorSetup> {
        if self.two_factor_on(account).await? {
            return Err(Error::Conflict(
                "Two-factor sign-in is already on: turn it off first to set up another device"
                    .into(),
            ));
        }
        let secret = new_secret();
        self.store.set_pending_two_factor(account, &secret).await?;
        Ok(TwoFactorSetup {
            otpauth_url: otpauth_url(email, &secret),
            secret,
        })
    }

    /// The pending secret of the account's setup, if one is under way (for the setup
    /// page, which shows it until confirmed).
    pub async fn pending_two_factor(&self, account: Account) -> Result<Option<String>> {
        Ok(self
            .store
            .two_factor(account)
            .await?
            .filter(|r| r.secret.is_none())
            .and_then(|r| r.pending_secret))
    }

    /// Turns two-factor on with a code of the pending secret; answers the recovery codes,
    /// shown this once. 400 without a setup under way, or with a wrong code.
    /// `origin` is the request that asks, recorded as `two_factor.enabled` in the audit
    /// log of each workspace the account is in.
    pub async fn enable_two_factor(
        &self,
        account: Account,
        code: &str,
        origin: &Origin,
    ) -> Result<RecoveryCodes> {
        let row = self.store.two_factor(account).await?.unwrap_or_default();
        if row.secret.is_some() {
            return Err(Error::Conflict("Two-factor sign-in is already on".into()));
        }
        let Some(secret) = row.pending_secret else {
            return Err(Error::invalid(
                "Set up two-factor first: add the secret to your app, then enter its code",
            ));
        };
        if code.trim().is_empty() {
            return Err(Error::invalid("Enter the 6-digit code from your app"));
        }
        let Some(step) = matching_step(&secret, code, self.now_ms()) else {
            return Err(Error::invalid(
                "That code is not right: enter the 6-digit code your app shows now",
            ));
        };
        let codes = new_recovery_codes();
        let hashes: Vec<String> = codes.iter().map(|c| recovery_hash(c)).collect();
        let audit = self
            .two_factor_entries(account, Action::TwoFactorEnabled, origin)
            .await?;
        let enabled = self
            .store
            .enable_two_factor(account, &secret, step, &hashes, self.now_ms(), &audit)
            .await?;
        if !enabled {
            return Err(Error::invalid(
                "The setup changed meanwhile: open the two-factor page again",
            ));
        }
        Ok(RecoveryCodes {
            recovery_codes: codes,
        })
    }

    /// Turns two-factor off with a current code or an unused recovery code (which it
    /// uses up). 400 when two-factor is off, or the code is wrong or missing.
    /// Recorded as `two_factor.disabled`, from `origin`, as enabling is.
    pub async fn disable_two_factor(
        &self,
        account: Account,
        second: &SecondFactor,
        origin: &Origin,
    ) -> Result<()> {
        if !self.two_factor_on(account).await? {
            return Err(Error::invalid("Two-factor sign-in is not on"));
        }
        if second.is_empty() {
            return Err(Error::invalid(
                "Enter a code from your app, or one of your recovery codes",
            ));
        }
        self.check_second_factor(account, second)
            .await
            .map_err(|e| match e {
                Error::Unauthorized(text) => Error::Invalid(text),
                other => other,
            })?;
        let audit = self
            .two_factor_entries(account, Action::TwoFactorDisabled, origin)
            .await?;
        self.store.disable_two_factor(account, &audit).await?;
        Ok(())
    }

    /// Turns a dashboard user's two-factor off for the operator (`reftrack admin
    /// disable-two-factor`), for a user who lost both its device and its recovery codes.
    /// False when the user had none; 404 for an unknown email.
    pub async fn operator_disable_two_factor(&self, email: &str) -> Result<bool> {
        let email = email.trim().to_ascii_lowercase();
        let Some(user_id) = self.store.user_id_by_email(&email).await? else {
            return Err(Error::NotFound("No dashboard user has this email".into()));
        };
        let account = Account::User(user_id);
        let origin = Caller::operator().origin;
        let audit = self
            .two_factor_entries(account, Action::TwoFactorDisabled, &origin)
            .await?;
        Ok(self.store.disable_two_factor(account, &audit).await?)
    }

    /// The audit entries of turning the account's two-factor on or off: one in each
    /// workspace the user is a member of, or the partner is in.
    async fn two_factor_entries(
        &self,
        account: Account,
        action: Action,
        origin: &Origin,
    ) -> Result<Vec<Entry>> {
        let (workspaces, target) = match account {
            Account::User(id) => (
                self.store
                    .memberships_of(id)
                    .await?
                    .iter()
                    .map(|m| m.workspace_id)
                    .collect(),
                Target::user(id),
            ),
            Account::Partner(id) => (
                self.store.workspaces_of(Record::Partner(id)).await?,
                Target::partner(id),
            ),
        };
        let at = self.now_ms();
        Ok(workspaces
            .into_iter()
            .map(|w: i64| Entry::new(at, origin, action, Scope::Workspace(w), target))
            .collect())
    }

    /// Checks the account's second factor and uses it up: a current code (accepted once:
    /// its step is taken) or an unused recovery code (used once ever). 401
    /// [`WRONG_CODE`] otherwise, and when the account has no two-factor. For any call
    /// that asks a signed-in account for a current code (such as a change of payout
    /// details) as well as for sign-in.
    pub async fn check_second_factor(&self, account: Account, second: &SecondFactor) -> Result<()> {
        let wrong = || Error::Unauthorized(WRONG_CODE.into());
        let row = self.store.two_factor(account).await?.unwrap_or_default();
        let Some(secret) = row.secret else {
            return Err(wrong());
        };
        let now = self.now_ms();
        if let Some(code) = second.code.as_deref().filter(|c| !c.trim().is_empty()) {
            let step = matching_step(&secret, code, now).ok_or_else(wrong)?;
            if !self.store.take_two_factor_step(account, step).await? {
                return Err(wrong());
            }
            return Ok(());
        }
        if let Some(code) = second
            .recovery_code
            .as_deref()
            .filter(|c| !c.trim().is_empty())
        {
            if self
                .store
                .take_recovery_code(account, &recovery_hash(code), now)
                .await?
            {
                return Ok(());
            }
        }
        Err(wrong())
    }

    /// Sets whether workspace `workspace_id` requires two-factor of its members: its
    /// owners only (and the operator). A member without two-factor is then refused the
    /// workspace's records (403 [`WORKSPACE_REQUIRES`]) until it turns it on.
    pub async fn set_require_two_factor(
        &self,
        caller: &Caller,
        workspace_id: i64,
        on: bool,
    ) -> Result<WorkspaceTwoFactor> {
        let record = Record::Workspace(workspace_id);
        self.allow(caller, record, AccessKind::ManageMembers)
            .await?;
        self.store
            .set_require_two_factor(workspace_id, on)
            .await
            .map_err(|e| match e {
                StoreError::NotFound(_) => Error::NotFound(record.not_found()),
                other => other.into(),
            })?;
        Ok(WorkspaceTwoFactor {
            workspace_id,
            require_two_factor: on,
        })
    }

    /// Whether workspace `workspace_id` requires two-factor of its members, for a caller
    /// that may read it.
    pub async fn require_two_factor(&self, caller: &Caller, workspace_id: i64) -> Result<bool> {
        let record = Record::Workspace(workspace_id);
        self.allow(caller, record, AccessKind::Read).await?;
        self.store
            .requires_two_factor(workspace_id)
            .await
            .map_err(|e| match e {
                StoreError::NotFound(_) => Error::NotFound(record.not_found()),
                other => other.into(),
            })
    }

    /// How many unused recovery codes the account has.
    pub async fn recovery_codes_left(&self, account: Account) -> Result<i64> {
        Ok(self.store.recovery_codes_left(account).await?)
    }

    /// The second factor of a sign-in whose password was right: nothing when the
    /// account has no two-factor; else 401 [`CODE_REQUIRED`]
    /// ([`Error::TwoFactorRequired`]) without one, 401 [`WRONG_CODE`] with a wrong one.
    pub(crate) async fn sign_in_second_factor(
        &self,
        account: Account,
        second: &SecondFactor,
    ) -> Result<()> {
        if !self.two_factor_on(account).await? {
            return Ok(());
        }
        if second.is_empty() {
            return Err(Error::TwoFactorRequired);
        }
        self.check_second_factor(account, second).await
    }

    /// A new session of the account.
    pub(crate) async fn new_session(&self, account: Account) -> Result<NewSession> {
        let now = self.now_ms();
        let expires_at = now + SESSION_LIFETIME_MS;
        match account {
            Account::User(user_id) => {
                let token = generate_token(SESSION_TOKEN_PREFIX);
                self.store
                    .create_session(user_id, &hash_token(&token), now, expires_at)
                    .await?;
                Ok(NewSession { token, expires_at })
            }
            Account::Partner(partner_id) => {
                let token = generate_token(crate::accounts::PARTNER_SESSION_PREFIX);
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
        }
    }

    /// The first step of a sign-in page: the account of `email` and `password` (a
    /// partner's when `partner`) is signed in, or, when it has two-factor, a pending
    /// sign-in waits for its code ([`Self::finish_sign_in`]).
    pub async fn begin_sign_in(
        &self,
        partner: bool,
        email: &str,
        password: String,
    ) -> Result<SignInStep> {
        let account = if partner {
            Account::Partner(self.partner_credentials_ok(email, password).await?)
        } else {
            Account::User(self.user_credentials_ok(email, password).await?)
        };
        if !self.two_factor_on(account).await? {
            return Ok(SignInStep::Session(self.new_session(account).await?));
        }
        let pending = generate_token(PENDING_PREFIX);
        let now = self.now_ms();
        self.store
            .insert_pending_login(
                &hash_token(&pending),
                account,
                email,
                now,
                now + PENDING_SIGN_IN_MS,
            )
            .await?;
        Ok(SignInStep::CodeNeeded { pending })
    }

    /// The account and sign-in email of a live pending sign-in (a partner's when
    /// `partner`); `None` when it is unknown, expired or of the other site.
    pub async fn pending_sign_in(
        &self,
        partner: bool,
        pending: &str,
    ) -> Result<Option<(Account, String)>> {
        let found = self
            .store
            .pending_login(&hash_token(pending.trim()), self.now_ms())
            .await?;
        Ok(found.filter(|(a, _)| matches!(a, Account::Partner(_)) == partner))
    }

    /// The second step of a sign-in page: the code (or recovery code) of a pending
    /// sign-in's account, then its session; the pending sign-in ends. 401
    /// [`SIGN_IN_EXPIRED`] when it is unknown or expired, [`WRONG_CODE`] for a wrong code.
    pub async fn finish_sign_in(
        &self,
        partner: bool,
        pending: &str,
        second: &SecondFactor,
    ) -> Result<NewSession> {
        let Some((account, _)) = self.pending_sign_in(partner, pending).await? else {
            return Err(Error::Unauthorized(SIGN_IN_EXPIRED.into()));
        };
        if second.is_empty() {
            return Err(Error::Unauthorized(
                "Enter the 6-digit code from your app, or a recovery code".into(),
            ));
        }
        self.check_second_factor(account, second).await?;
        self.store
            .delete_pending_login(&hash_token(pending.trim()))
            .await?;
        self.new_session(account).await
    }

    /// The id of the dashboard user of `email` (normalised) and `password`;
    /// [`INVALID_CREDENTIALS`](crate::dashboard::INVALID_CREDENTIALS) otherwise.
    pub(crate) async fn user_credentials_ok(&self, email: &str, password: String) -> Result<i64> {
        let credentials = self.store.user_credentials(email).await?;
        self.check_credentials(credentials.map(|c| (c.user_id, c.password_hash)), password)
            .await
    }

    /// The id of the partner of `email` (normalised) and `password`;
    /// [`INVALID_CREDENTIALS`](crate::dashboard::INVALID_CREDENTIALS) otherwise.
    pub(crate) async fn partner_credentials_ok(
        &self,
        email: &str,
        password: String,
    ) -> Result<i64> {
        let credentials = self.store.partner_credentials(email).await?;
        self.check_credentials(
            credentials.map(|c| (c.partner_id, c.password_hash)),
            password,
        )
        .await
    }
}

/// The account, signing in with `email`, as the audit log names who acted.
pub fn actor_of(account: Account, email: &str) -> Actor {
    match account {
        Account::User(id) => Actor::user(id, email),
        Account::Partner(id) => Actor::partner(id, Some(email)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238's SHA-1 test secret ("12345678901234567890") and vectors, 6 digits.
    const RFC_SECRET: &str = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";

    #[test]
    fn rfc_6238_vectors() {
        for (t, code) in [
            (59, "287082"),
            (1111111109, "081804"),
            (1111111111, "050471"),
            (1234567890, "005924"),
            (2000000000, "279037"),
        ] {
            assert_eq!(code_at_step(RFC_SECRET, t / 30).unwrap(), code, "t={t}");
        }
    }

    #[test]
    fn one_step_of_drift_either_way() {
        let now = 1_700_000_000_000;
        let step = step_of(now);
        for d in -1..=1 {
            let code = code_at_step(RFC_SECRET, step + d).unwrap();
            assert_eq!(matching_step(RFC_SECRET, &code, now), Some(step + d));
        }
        for d in [-2, 2] {
            let code = code_at_step(RFC_SECRET, step + d).unwrap();
            assert_eq!(matching_step(RFC_SECRET, &code, now), None);
        }
        assert_eq!(matching_step(RFC_SECRET, "12345", now), None);
        assert_eq!(matching_step(RFC_SECRET, "abcdef", now), None);
    }

    #[test]
    fn secrets_urls_and_recovery_codes() {
        let s = new_secret();
        assert_eq!(s.len(), 32);
        assert!(totp(&s).is_some());
        assert_eq!(
            otpauth_url("a+b@example.com", "ABC"),
            "otpauth://totp/Reftrack:a%2Bb@example.com?secret=ABC&issuer=Reftrack"
        );
        let codes = new_recovery_codes();
        assert_eq!(codes.len(), 10);
        assert!(codes.iter().all(|c| c.len() == 11 && &c[5..6] == "-"));
        assert_eq!(
            recovery_hash(&codes[0]),
            recovery_hash(&codes[0].to_uppercase().replace('-', " "))
        );
        assert!(SecondFactor::default().is_empty());
        assert!(!SecondFactor::code("123456").is_empty());
    }
}
