//! The admin token: generated at the first start, checked, rotated.

use super::*;

/// Settings key of the admin token's hash.
const ADMIN_TOKEN_SETTING: &str = "admin_token_hash";

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
    /// [`crate::cache::TTL`], so a rotation by another process (`reftrack admin
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
    /// [`crate::cache::TTL`]. A server with `REFTRACK_ADMIN_TOKEN` keeps that token:
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
