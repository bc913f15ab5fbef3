//! Reftrack: an affiliate tracking service.
//!
//! The library holds everything; `main.rs` only parses the command line. Tests build the
//! real router with [`app`] and run it through `tower::ServiceExt::oneshot` or on a
//! port-0 listener with [`serve_with`].

pub mod auth;
pub mod cli;
pub mod config;
pub mod domain;
pub mod error;
pub mod http;
pub mod seed;
pub mod store;
pub mod verify;

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use lru::LruCache;
use tokio::net::TcpListener;

use crate::config::{RateLimitArgs, ServeArgs};
use crate::domain::user_agent::{self, DeviceInfo};
use crate::http::client_ip::ClientResolver;
use crate::http::outage::DbHealth;
use crate::http::rate_limit::{LoginThrottle, RateLimits};
use crate::store::Store;

/// Settings key of the generated admin token's hash.
const ADMIN_TOKEN_SETTING: &str = "admin_token_hash";

/// Everything a request handler needs, cheap to clone: one reference count, since axum
/// clones the state for each request and each extractor.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// The parts of [`AppState`].
#[derive(Clone)]
pub struct Shared {
    /// The database.
    pub store: Arc<dyn Store>,
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
    ua_cache: Arc<Mutex<LruCache<String, DeviceInfo>>>,
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl AppState {
    /// Builds the state from its parts, with the default rate limits.
    pub fn new(store: Arc<dyn Store>, admin_token_hash: &str, clients: ClientResolver) -> Self {
        AppState(Arc::new(Shared {
            store,
            admin_token_hash: admin_token_hash.into(),
            clients: Arc::new(clients),
            limits: Arc::new(RateLimits::new(RateLimitArgs::default())),
            logins: Arc::new(LoginThrottle::default()),
            db_health: Arc::new(DbHealth::default()),
            ua_cache: Arc::new(Mutex::new(LruCache::new(
                NonZeroUsize::new(4096).expect("non-zero"),
            ))),
        }))
    }

    /// The same state with other per-IP rate limits.
    pub fn with_rate_limits(mut self, limits: RateLimitArgs) -> Self {
        Arc::make_mut(&mut self.0).limits = Arc::new(RateLimits::new(limits));
        self
    }

    /// Device, OS and browser of a user agent; repeated agents come from a small cache.
    pub fn device_info(&self, ua: &str) -> DeviceInfo {
        if let Some(hit) = self.ua_cache.lock().expect("ua cache").get(ua) {
            return hit.clone();
        }
        let info = user_agent::parse(ua);
        self.ua_cache
            .lock()
            .expect("ua cache")
            .put(ua.to_string(), info.clone());
        info
    }
}

/// The router of the whole service.
pub fn app(state: AppState) -> Router {
    http::router(state)
}

/// The admin token's hash: from `configured` when given, else the stored one, else a
/// newly generated token, stored hashed and returned so that it can be shown once.
pub async fn admin_token(
    store: &dyn Store,
    configured: Option<&str>,
) -> anyhow::Result<(String, Option<String>)> {
    if let Some(token) = configured {
        return Ok((auth::hash_token(token.trim()), None));
    }
    if let Some(hash) = store.setting(ADMIN_TOKEN_SETTING).await? {
        return Ok((hash, None));
    }
    let token = auth::generate_token(auth::ADMIN_TOKEN_PREFIX);
    let hash = auth::hash_token(&token);
    store.set_setting(ADMIN_TOKEN_SETTING, &hash).await?;
    Ok((hash, Some(token)))
}

/// Replaces the stored admin token with a new one and returns it.
pub async fn rotate_admin_token(store: &dyn Store) -> anyhow::Result<String> {
    let token = auth::generate_token(auth::ADMIN_TOKEN_PREFIX);
    store
        .set_setting(ADMIN_TOKEN_SETTING, &auth::hash_token(&token))
        .await?;
    Ok(token)
}

/// Opens the database, then serves on `listener` until SIGINT or SIGTERM; then stops
/// accepting, finishes in-flight requests and pending writes, and returns. When that
/// takes longer than `args.shutdown_timeout` seconds it returns an error instead of
/// waiting longer.
pub async fn serve(args: ServeArgs, listener: TcpListener) -> anyhow::Result<()> {
    args.validate()?;
    let url = &args.database.database_url;
    tracing::info!(database = %config::redact_url(url), "opening database");
    let store = store::open(url).await?;
    let (hash, generated) = admin_token(&*store, args.admin_token.as_deref()).await?;
    let clients = ClientResolver::new(args.trusted_proxies.clone(), args.geoip_db.as_deref())?;
    let addr = listener.local_addr()?;
    println!("Reftrack is serving on http://{addr}");
    println!("  tracking API:   http://{addr}/api/v1/track/click");
    println!("  management API: http://{addr}/api/admin");
    match generated {
        Some(token) => println!(
            "  admin token (generated now, shown only once; store it): {token}"
        ),
        None if args.admin_token.is_some() => println!("  admin token: from REFTRACK_ADMIN_TOKEN"),
        None => println!(
            "  admin token: the one generated at first start (new one: `reftrack admin rotate-admin-token`)"
        ),
    }
    let state = AppState::new(store.clone(), &hash, clients).with_rate_limits(args.rate_limits);
    let grace = Duration::from_secs(args.shutdown_timeout);
    let signalled = Arc::new(tokio::sync::Notify::new());
    let notify = signalled.clone();
    let server = serve_with(state, listener, async move {
        shutdown_signal().await;
        notify.notify_one();
    });
    tokio::pin!(server);
    // The grace period starts at the signal, not at start-up.
    let grace_ends = async {
        signalled.notified().await;
        tokio::time::Instant::now() + grace
    };
    let deadline = tokio::select! {
        served = &mut server => {
            served?;
            tokio::time::Instant::now() + grace
        }
        at = grace_ends => {
            match tokio::time::timeout_at(at, &mut server).await {
                Ok(served) => served?,
                Err(_) => anyhow::bail!(
                    "shutdown: requests still in flight after {} s; exiting anyway",
                    grace.as_secs()
                ),
            }
            at
        }
    };
    if tokio::time::timeout_at(deadline, store.close())
        .await
        .is_err()
    {
        anyhow::bail!(
            "shutdown: pending writes not finished after {} s; exiting anyway",
            grace.as_secs()
        );
    }
    tracing::info!("shut down cleanly");
    Ok(())
}

/// Serves `state` on `listener` until `shutdown` completes, then finishes in-flight
/// requests.
pub async fn serve_with(
    state: AppState,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(
        listener,
        app(state).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}
