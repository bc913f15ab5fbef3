//! [`AppState`]: what every handler gets, cheap to clone.

use std::sync::Arc;

use super::client_ip::ClientResolver;
use super::metrics::Metrics;
use super::outage::DbHealth;
use super::rate_limit::{LoginThrottle, RateLimits};
use crate::rate_limit::RateLimitArgs;
use reftrack_service::App;

/// Everything a request handler needs, cheap to clone: one reference count, since axum
/// clones the state for each request and each extractor.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// The parts of [`AppState`].
#[derive(Clone)]
pub struct Shared {
    /// The service layer.
    pub app: Arc<App>,
    /// Client IP and geo resolution.
    pub clients: Arc<ClientResolver>,
    /// Per-client-IP limits of the public endpoints.
    pub limits: Arc<RateLimits>,
    /// Per-account slowdown of failed logins.
    pub logins: Arc<LoginThrottle>,
    /// Whether the database is known to be down (requests then fail fast).
    pub db_health: Arc<DbHealth>,
    /// `REFTRACK_PUBLIC_URL`, for the same-origin rule of forms and the `Secure` cookie
    /// flag; the links Reftrack hands out ask [`reftrack_service::App::public_url`].
    pub public_url: Option<Arc<str>>,
    /// What the service counts for Prometheus; `None` when metrics are off.
    pub metrics: Option<Arc<Metrics>>,
    /// Whether the main router serves `GET /metrics` (else they are off, or served on an
    /// address of their own).
    pub metrics_route: bool,
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl AppState {
    /// Builds the state from its parts, with the default rate limits.
    pub fn new(app: Arc<App>, clients: ClientResolver) -> Self {
        AppState(Arc::new(Shared {
            app,
            clients: Arc::new(clients),
            limits: Arc::new(RateLimits::new(RateLimitArgs::default())),
            logins: Arc::new(LoginThrottle::default()),
            db_health: Arc::new(DbHealth::default()),
            public_url: None,
            metrics: None,
            metrics_route: false,
        }))
    }

    /// The same state with the public URL of the server.
    pub fn with_public_url(mut self, url: Option<String>) -> Self {
        Arc::make_mut(&mut self.0).public_url = url.map(|u| Arc::from(u.trim_end_matches('/')));
        self
    }

    /// The same state counting requests into `metrics`, served at `GET /metrics` by the
    /// main router when `route` is true.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>, route: bool) -> Self {
        let shared = Arc::make_mut(&mut self.0);
        shared.metrics = Some(metrics);
        shared.metrics_route = route;
        self
    }

    /// Counts a request refused by `limit`, when metrics are on.
    pub fn count_rate_limited(&self, limit: &'static str) {
        if let Some(metrics) = &self.metrics {
            metrics.rate_limited(limit);
        }
    }

    /// The same state with other per-IP rate limits.
    pub fn with_rate_limits(mut self, limits: RateLimitArgs) -> Self {
        Arc::make_mut(&mut self.0).limits = Arc::new(RateLimits::new(limits));
        self
    }
}
