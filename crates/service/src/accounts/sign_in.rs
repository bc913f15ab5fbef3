//! Invites, password resets and sign-in of partner accounts.

use super::*;

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
    pub(crate) async fn grant_invite(
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
    pub(crate) async fn mail_reset(&self, email: &str) -> Result<()> {
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

    /// Signs a partner in: a new session, or [`INVALID_CREDENTIALS`](crate::dashboard::INVALID_CREDENTIALS) whatever was wrong.
    /// `email` is already normalised. A partner with two-factor needs `second` as well:
    /// [`Error::TwoFactorRequired`] without it, 401 with a wrong one.
    pub async fn partner_login(
        &self,
        email: &str,
        password: String,
        second: &SecondFactor,
    ) -> Result<NewSession> {
        let account = Account::Partner(self.partner_credentials_ok(email, password).await?);
        self.sign_in_second_factor(account, second).await?;
        self.new_session(account).await
    }

    /// Keeps that the partner of the new session `token` signed in from `ip`, for the
    /// `partner_ip` fraud rule. A failure is logged, never the sign-in's: the session
    /// stands.
    pub async fn note_partner_sign_in(&self, token: &str, ip: std::net::IpAddr) {
        let noted = async {
            if let Some((partner_id, _)) = self.partner_session(token).await? {
                self.store
                    .record_partner_sign_in_ip(partner_id, &ip.to_string(), self.now_ms())
                    .await?;
            }
            Ok::<_, Error>(())
        };
        if let Err(e) = noted.await {
            tracing::warn!(error = %e, "a partner's sign-in IP could not be kept");
        }
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
}
