//! Dashboard sign-in, sessions and access, and the dashboard's reads.
//!
//! A session token is `rts_` followed by 256 random bits in hex; only its SHA-256 hash is
//! stored. A session lasts [`SESSION_LIFETIME_MS`] (7 days) from sign-in, fixed rather
//! than sliding, so a stolen token has a bounded life; sign-out ends it at once. Expired
//! sessions are purged at the next sign-in.

pub mod performance;

use crate::secrets::{hash_token, password_work, verify_password};
use crate::two_factor::{Account, SecondFactor, WORKSPACE_REQUIRES};
use crate::{App, Error, Result};
use reftrack_domain::status::{MembershipStatus, Permission};
use reftrack_store::{
    DailyRollup, DashboardProgram, EventFilter, ListedEvent, SessionUser, SetupStatus,
};

/// Prefix of dashboard session tokens.
pub const SESSION_TOKEN_PREFIX: &str = "rts_";

/// How long a session works after sign-in: 7 days.
pub const SESSION_LIFETIME_MS: i64 = 7 * reftrack_domain::time::DAY_MS;

/// The one answer to any failed sign-in, so that it does not tell which part was wrong.
pub const INVALID_CREDENTIALS: &str = "Invalid email or password";

/// An argon2id hash with the parameters `secrets::hash_password` uses, of no password
/// anyone knows: verified against when the email is unknown, so that an unknown email
/// costs as much time as a wrong password.
const DUMMY_PASSWORD_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$LCbkRkxkY9NfZ4f4WQtiAA$RwUHMRACjq/Uml6twRQ47oIRkVL6oC41B8gq6Hgjd+I";

/// A new session: its token (shown once) and when it expires (epoch ms).
#[derive(Debug, Clone)]
pub struct NewSession {
    pub token: String,
    pub expires_at: i64,
}

/// What a dashboard call needs of the caller's membership.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Any active membership of the program's workspace.
    ActiveMember,
    /// A role that grants this permission.
    Permission(Permission),
}

impl App {
    /// Signs a user in: a new session, or [`INVALID_CREDENTIALS`] whatever was wrong.
    /// `email` is already normalised. A user with two-factor needs `second` as well:
    /// [`Error::TwoFactorRequired`] without it, 401 with a wrong one.
    pub async fn login(
        &self,
        email: &str,
        password: String,
        second: &SecondFactor,
    ) -> Result<NewSession> {
        let account = Account::User(self.user_credentials_ok(email, password).await?);
        self.sign_in_second_factor(account, second).await?;
        self.new_session(account).await
    }

    /// The id of `account` (an id and its password hash) when `password` is its password;
    /// [`INVALID_CREDENTIALS`] otherwise, after as long a check when there is no account,
    /// so that the time taken does not tell whether the email exists.
    pub(crate) async fn check_credentials(
        &self,
        account: Option<(i64, String)>,
        password: String,
    ) -> Result<i64> {
        password_work(move || match account {
            Some((id, hash)) => verify_password(&password, &hash).then_some(id),
            None => {
                let _ = verify_password(&password, DUMMY_PASSWORD_HASH);
                None
            }
        })
        .await
        .map_err(|e| Error::Internal("Internal server error", e))?
        .ok_or_else(|| Error::Unauthorized(INVALID_CREDENTIALS.into()))
    }

    /// The user of a live session token, if any.
    pub async fn session_user(&self, token: &str) -> Result<Option<(SessionUser, String)>> {
        let token_hash = hash_token(token);
        let user = self.store.session_user(&token_hash, self.now_ms()).await?;
        Ok(user.map(|u| (u, token_hash)))
    }

    /// Ends the session whose token hashes to `token_hash`.
    pub async fn logout(&self, token_hash: &str) -> Result<()> {
        self.store.delete_session(token_hash).await?;
        Ok(())
    }

    /// The program, once `user_id` may see it as `need` asks: 404 when it does not
    /// exist, 403 when the caller lacks the role (a suspended membership is none).
    pub async fn authorize(
        &self,
        user_id: i64,
        program_id: i64,
        need: Need,
    ) -> Result<DashboardProgram> {
        let program = self
            .store
            .program_access(program_id, user_id)
            .await?
            .ok_or_else(|| Error::NotFound("Program not found".into()))?;
        let role = match (program.member_role, program.member_status) {
            (Some(role), Some(MembershipStatus::Active)) => Some(role),
            _ => None,
        };
        match (need, role) {
            (_, Some(_)) if program.two_factor_missing => {
                Err(Error::Forbidden(WORKSPACE_REQUIRES.into()))
            }
            (Need::ActiveMember, Some(_)) => Ok(program),
            (Need::Permission(p), Some(role)) if role.grants(p) => Ok(program),
            (Need::Permission(p), Some(role)) => Err(Error::Forbidden(format!(
                "Your role ({}) does not grant {} on this program: an owner or admin of its \
                 workspace can give you a role that does",
                role.as_str(),
                p.as_str()
            ))),
            (_, None) => Err(Error::Forbidden(
                "You are not an active member of this program's workspace".into(),
            )),
        }
    }

    /// The program's daily rollups from `from_day` to `to_day` (inclusive).
    pub async fn daily_rollups(
        &self,
        program_id: i64,
        from_day: &str,
        to_day: &str,
    ) -> Result<Vec<DailyRollup>> {
        Ok(self
            .store
            .daily_rollups(program_id, from_day, to_day)
            .await?)
    }

    /// Test events and approved partners of a program, for its setup checklist.
    pub async fn setup_status(&self, program_id: i64) -> Result<SetupStatus> {
        Ok(self.store.setup_status(program_id).await?)
    }

    /// One page (1-indexed, `page_size` events) of a program's events matching
    /// `filter`, newest first, with their total; a page past the end is empty. The
    /// caller has been allowed to list them.
    pub async fn events_page(
        &self,
        program_id: i64,
        filter: &EventFilter,
        page: i64,
        page_size: i64,
    ) -> Result<EventsPage> {
        let total = self.store.count_events(program_id, filter).await?;
        let page_count = (total + page_size - 1) / page_size;
        let data = match (page - 1).checked_mul(page_size) {
            Some(offset) if offset < total => {
                self.store
                    .list_events(program_id, filter, page_size, offset)
                    .await?
            }
            _ => vec![],
        };
        Ok(EventsPage {
            data,
            total,
            page_count,
        })
    }
}

/// One page of a program's events and how many match.
#[derive(Debug)]
pub struct EventsPage {
    pub data: Vec<ListedEvent>,
    /// Events matching the filter, on every page.
    pub total: i64,
    /// Pages of that many.
    pub page_count: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::PasswordHash;

    #[test]
    fn dummy_hash_costs_what_a_real_one_does() {
        let real = crate::secrets::hash_password("some password").unwrap();
        let real = PasswordHash::new(&real).unwrap();
        let dummy = PasswordHash::new(DUMMY_PASSWORD_HASH).unwrap();
        assert_eq!(real.algorithm, dummy.algorithm);
        assert_eq!(real.version, dummy.version);
        assert_eq!(real.params, dummy.params);
        assert!(!verify_password("some password", DUMMY_PASSWORD_HASH));
        assert_eq!(SESSION_LIFETIME_MS, 7 * reftrack_domain::time::DAY_MS);
    }
}
