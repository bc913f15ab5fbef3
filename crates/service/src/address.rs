//! Where the server is reached, for the links it hands out and mails (invites, password
//! resets, redirect links, the tracker's snippets): `REFTRACK_PUBLIC_URL`, else the
//! address the owner confirmed (at the first run, or later in the dashboard's settings),
//! else `http://` and the address the server listens on. Never the `Host` of a request:
//! whoever sends a request names it, and a link built from it would send a partner's
//! invite, or a new-password link, wherever that sender likes.

use std::net::SocketAddr;

use crate::{App, Error, Result};
use reftrack_store::PUBLIC_URL_SETTING;

/// Where the server's address came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressSource {
    /// `REFTRACK_PUBLIC_URL`.
    Configured,
    /// Confirmed by the owner at the first run or in the settings.
    Confirmed,
    /// Neither: the address the server listens on.
    Listening,
}

/// An `http://` or `https://` address with a host and no query, trimmed, without a
/// trailing slash; else `field`'s error.
pub fn server_address(field: &str, value: &str) -> Result<String> {
    reftrack_domain::redirect::server_url(value).map_err(|_| {
        Error::invalid(format!(
            "{field} must be an http:// or https:// address with a host, like https://track.example.com"
        ))
    })
}

impl App {
    /// The same service knowing the address it listens on, the last resort of
    /// [`App::public_url`].
    pub fn with_listen_address(mut self, addr: SocketAddr) -> Self {
        self.listen_url = Some(format!("http://{addr}"));
        self
    }

    /// The server's address and where it came from: `REFTRACK_PUBLIC_URL`, else the
    /// confirmed one (read through a cache of [`crate::cache::TTL`], so a change by
    /// another process is seen within it), else the listening address (`http://localhost`
    /// for a service that serves no listener, as in tests).
    pub async fn public_address(&self) -> Result<(String, AddressSource)> {
        if let Some(url) = &self.public_url {
            return Ok((url.clone(), AddressSource::Configured));
        }
        let stored = self
            .stored_public_url
            .get_or_read(&(), || self.store.setting(PUBLIC_URL_SETTING))
            .await?;
        if let Some(url) = stored {
            return Ok((url, AddressSource::Confirmed));
        }
        let listening = self.listen_url.as_deref().unwrap_or("http://localhost");
        Ok((listening.to_string(), AddressSource::Listening))
    }

    /// The address the links Reftrack hands out name ([`App::public_address`]).
    pub async fn public_url(&self) -> Result<String> {
        Ok(self.public_address().await?.0)
    }

    /// The address someone said is the server's (configured or confirmed), for links in
    /// mails nobody asked for by a request of their own and for password resets; `None`
    /// when only the listening address is known, which is often not one a partner can
    /// reach (`0.0.0.0`, a private network).
    pub async fn known_public_url(&self) -> Result<Option<String>> {
        let (url, source) = self.public_address().await?;
        Ok((source != AddressSource::Listening).then_some(url))
    }

    /// [`App::known_public_url`] for the links of notices (applications, approvals,
    /// payouts), which go without them when it cannot be read.
    pub(super) async fn address_for_notices(&self) -> Option<String> {
        self.known_public_url().await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "reading the server's address failed; the notice has no link");
            None
        })
    }

    /// Stores `url` as the server's confirmed address; the caller must give the admin
    /// token (`admin_token`), as the address is the whole server's, not a workspace's.
    /// Refused while `REFTRACK_PUBLIC_URL` sets it.
    pub async fn set_public_url(&self, admin_token: &str, url: &str) -> Result<String> {
        if self.public_url.is_some() {
            return Err(Error::Conflict(
                "REFTRACK_PUBLIC_URL sets this server's address: change the variable and restart"
                    .into(),
            ));
        }
        let url = server_address("public_url", url)?;
        self.check_admin_token(admin_token).await?;
        self.store.set_setting(PUBLIC_URL_SETTING, &url).await?;
        self.stored_public_url.clear();
        Ok(url)
    }

    /// `Ok` when `token` is the admin token, else a 403 naming the `admin_token` field.
    pub(super) async fn check_admin_token(&self, token: &str) -> Result<()> {
        if token.trim().is_empty() {
            return Err(Error::invalid(
                crate::programs::first_run::ADMIN_TOKEN_REQUIRED,
            ));
        }
        if !self.is_admin_token(token.trim()).await? {
            return Err(Error::Forbidden(
                "admin_token is not this server's admin token".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_address_is_an_http_url_with_a_host() {
        assert_eq!(
            server_address("public_url", " https://track.example.com/ ").unwrap(),
            "https://track.example.com"
        );
        assert_eq!(
            server_address("public_url", "http://10.0.0.5:8080").unwrap(),
            "http://10.0.0.5:8080"
        );
        for bad in [
            "",
            "track.example.com",
            "ftp://x.example",
            "https://x.example/?a=1",
            "javascript:alert(1)",
        ] {
            let Err(Error::Invalid(text)) = server_address("public_url", bad) else {
                panic!("{bad:?} accepted");
            };
            assert!(text.starts_with("public_url must be"), "{text}");
        }
    }
}
