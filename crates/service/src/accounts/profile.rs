//! The signed-in partner's own record: its programs, contact and payout details,
//! password.

use super::*;
use reftrack_domain::audit::ActorKind;

impl App {
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
            two_factor: self.two_factor_on(Account::Partner(partner_id)).await?,
        })
    }

    /// Changes the signed-in partner's name and payout details. Where its money goes
    /// changes only with its current password, never while it is banned from a program;
    /// the change is mailed to it and recorded in the audit log of each workspace it is
    /// in, as made by the partner from `origin` (its request: client IP and request id).
    pub async fn update_partner_me(
        &self,
        partner_id: i64,
        b: PartnerMeBody,
        origin: reftrack_domain::audit::Origin,
    ) -> Result<PartnerMe> {
        let patch = partner_patch(
            PartnerPatchBody {
                name: b.name,
                email: None,
                payout_method: b.payout_method,
                payout_email: b.payout_email,
            },
            ActorKind::Partner.as_str(),
            self.now_ms(),
        )?;
        let account = self.store.partner_account(partner_id).await?;
        if patch.changes_payout_details(&account.partner) {
            let second = SecondFactor {
                code: b.code,
                recovery_code: b.recovery_code,
            };
            self.may_change_payout_details(partner_id, &account, b.current_password, &second)
                .await?;
        }
        let workspaces = self
            .store
            .workspaces_of(Record::Partner(partner_id))
            .await?;
        let origin = reftrack_domain::audit::Origin {
            actor: reftrack_domain::audit::Actor::partner(
                partner_id,
                account.account_email.as_deref(),
            ),
            ..origin
        };
        let at = patch.at;
        let audit = |old: Option<&reftrack_store::Partner>, new: &reftrack_store::Partner| {
            crate::audit::payout_details_changed(&workspaces, at, &origin, old, new)
        };
        let changed = self
            .store
            .update_partner(partner_id, &patch, &audit)
            .await?;
        self.notify_payout_details_change(&account, &changed);
        self.partner_me(partner_id).await
    }

    /// Refuses (403) a change of the partner's payout details while it is banned from
    /// any program, without its current password, or, when it signs in with two-factor,
    /// without a current code (which it uses up).
    async fn may_change_payout_details(
        &self,
        partner_id: i64,
        account: &PartnerAccount,
        current_password: Option<String>,
        second: &SecondFactor,
    ) -> Result<()> {
        let programs = self.store.partner_memberships(partner_id).await?;
        if programs.iter().any(|p| p.status == PartnerStatus::Banned) {
            return Err(Error::Forbidden(BANNED_PAYOUT_DETAILS.into()));
        }
        let Some(password) = current_password.filter(|p| !p.is_empty()) else {
            return Err(Error::Forbidden(PAYOUT_DETAILS_NEED_PASSWORD.into()));
        };
        let credentials = match &account.account_email {
            Some(email) => self.store.partner_credentials(email).await?,
            None => None,
        };
        self.check_credentials(
            credentials.map(|c| (c.partner_id, c.password_hash)),
            password,
        )
        .await
        .map_err(|_| Error::Forbidden(WRONG_CURRENT_PASSWORD.into()))?;
        let account = Account::Partner(partner_id);
        if self.two_factor_on(account).await? {
            if second.is_empty() {
                return Err(Error::Forbidden(PAYOUT_DETAILS_NEED_CODE.into()));
            }
            self.check_second_factor(account, second)
                .await
                .map_err(|e| match e {
                    Error::Unauthorized(text) => Error::Forbidden(text),
                    other => other,
                })?;
        }
        Ok(())
    }

    /// Mails the partner of `before` (at its sign-in address, else its contact email, and
    /// at its old payout email when that changed) when its payout details are no longer
    /// those of `before`, so that a change it did not make does not go unnoticed.
    pub(crate) fn notify_payout_details_change(&self, before: &PartnerAccount, after: &Partner) {
        let old = &before.partner;
        if old.payout_method == after.payout_method && old.payout_email == after.payout_email {
            return;
        }
        let mut to: Vec<&str> = before
            .account_email
            .as_deref()
            .or(old.email.as_deref())
            .into_iter()
            .collect();
        if let Some(previous) = old.payout_email.as_deref() {
            if old.payout_email != after.payout_email
                && !to.iter().any(|t| t.eq_ignore_ascii_case(previous))
            {
                to.push(previous);
            }
        }
        let mails = to
            .into_iter()
            .map(|address| payout_details_mail(address, old, after))
            .collect();
        self.notify_later("payout details notice", mails);
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
}
