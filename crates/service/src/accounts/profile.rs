//! The signed-in partner's own record: its programs, contact and payout details,
//! password.

use super::*;

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
}
