//! [`AppState`]: what every handler gets, cheap to clone.

use std::sync::Arc;

use super::client_ip::ClientResolver;
use super::outage::DbHealth;
use super::rate_limit::{LoginThrottle, RateLimits};
use crate::app::App;
use crate::config::RateLimitArgs;

/// Everything a request handler needs, cheap to clone: one reference count, since axum
/// clones the state for each request and each extractor.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// The parts of [`AppState`].
#[derive(Clone)]
pub struct Shared {
    /// The service layer.
    pub app: Arc<App>,
    /// SHA-256 of the management API's admin token.
    pub admin_token_hash: Arc<str>,
    /// Client IP and geo resolution.
    pub clients: Arc<ClientResolver>,
    /// Per-client-IP limits of the public endpoints.
    pub limits: Arc<RateLimits>,
    /// Per-account slowdown of failed logins.
    pub logins: Arc<LoginThrottle>,
    /// Whether the database is known to be down (requests then fail fast).
    pub db_health: Arc<DbHealth>,
    /// Where partners and browsers reach this server (`REFTRACK_PUBLIC_URL`), for the
    /// links it hands out; `None`: the request's own host.
    pub public_url: Option<Arc<str>>,
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl AppState {
    /// Builds the state from its parts, with the default rate limits.
    pub fn new(app: Arc<App>, admin_token_hash: &str, clients: ClientResolver) -> Self {
        AppState(Arc::new(Shared {
            app,
            admin_token_hash: admin_token_hash.into(),
            clients: Arc::new(clients),
            limits: Arc::new(RateLimits::new(RateLimitArgs::default())),
            logins: Arc::new(LoginThrottle::default()),
            db_health: Arc::new(DbHealth::default()),
            public_url: None,
        }))
    }

    /// The same state with the public URL of the server.
    pub fn with_public_url(mut self, url: Option<String>) -> Self {
        Arc::make_mut(&mut self.0).public_url = url.map(|u| Arc::from(u.trim_end_matches('/')));
        self
    }

    /// The same state with other per-IP rate limits.
    pub fn with_rate_limits(mut self, limits: RateLimitArgs) -> Self {
        Arc::make_mut(&mut self.0).limits = Arc::new(RateLimits::new(limits));
        self
    }
}
