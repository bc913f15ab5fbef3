//! Reftrack: an affiliate tracking service.
//!
//! The library holds everything; `main.rs` only parses the command line. Layers, outside
//! in: [`http`] (one module per surface) calls [`app`] (one function per use case), which
//! applies the rules of [`domain`] and reads and writes through [`store`]. Tests build the
//! real router with [`router`] and run it through `tower::ServiceExt::oneshot` or on a
//! port-0 listener with [`serve_with`].

pub use reftrack_service as app;
pub mod backup;
pub mod cli;
pub mod config;
pub use reftrack_domain as domain;
pub mod healthcheck;
pub use reftrack_web as http;
pub mod logging;
pub use reftrack_service::mail;
pub use reftrack_service::verify;
pub use reftrack_store as store;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;

use crate::app::tracking::ClickWaits;
use crate::app::App;
use crate::config::ServeArgs;
use crate::domain::time::SystemClock;
use crate::http::client_ip::ClientResolver;
use crate::http::connections::Timeouts;
use crate::http::metrics::Metrics;
use crate::http::AppState;

/// The text of `error` and its causes on one line, separated by `: `, leaving out a
/// cause whose text the line already holds: sqlx, for one, repeats an error's source in
/// its own text.
pub fn error_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// The router of the whole service.
pub fn router(state: AppState) -> Router {
    http::router(state)
}

/// Opens the database, then serves on `listener` until SIGINT or SIGTERM; then stops
/// accepting, finishes in-flight requests and pending writes, and returns. When that
/// takes longer than `args.shutdown_timeout` seconds it returns an error instead of
/// waiting longer.
pub async fn serve(args: ServeArgs, listener: TcpListener) -> anyhow::Result<()> {
    args.validate()?;
    let timeouts = args.connection_timeouts();
    let mailer = args.mail.mailer()?;
    if let Some(url) = &args.mail.smtp_url {
        tracing::info!(smtp = %config::redact_url(url), "partner invites are mailed");
    }
    let url = &args.database.database_url;
    tracing::info!(database = %config::redact_url(url), "opening database");
    // Held until `serve` returns; a second server on the same SQLite file stops here.
    let _serving = store::sqlite::lock_for_serving(url)?;
    let store = store::open(url).await?;
    let clients = ClientResolver::new(args.trusted_proxies.clone(), args.geoip_db.as_deref())?;
    let metrics_listener = match args.metrics.metrics_listen {
        Some(at) => Some(TcpListener::bind(at).await.map_err(|e| {
            anyhow::anyhow!("cannot listen on {at} (REFTRACK_METRICS_LISTEN): {e}")
        })?),
        None => None,
    };
    let app = Arc::new(
        App::new(store.clone(), Arc::new(SystemClock))
            .with_admin_token(args.admin_token.as_deref())
            .with_mailer(mailer)
            .with_public_url(args.public_url.clone())
            .with_click_waits(ClickWaits {
                redirect: Duration::from_millis(args.click_waits.redirect_wait_ms),
                api: args.click_waits.click_wait_ms.map(Duration::from_millis),
            })
            .with_listen_address(listener.local_addr()?)
            .allowing_private_webhook_targets(args.webhooks.allow_private),
    );
    let generated = app.first_admin_token().await?;
    let addr = listener.local_addr()?;
    let signal = shutdown_signal();
    println!("Reftrack is serving on http://{addr}");
    println!("  tracking API:   http://{addr}/api/v1/track/click");
    println!("  management API: http://{addr}/api/admin");
    match generated {
        Some(token) => println!(
            "  admin token (generated now, shown only once; store it): {token}"
        ),
        None if args.admin_token.is_some() => println!(
            "  admin token: from REFTRACK_ADMIN_TOKEN (to change it, change the variable and restart)"
        ),
        None => println!(
            "  admin token: the stored one (`reftrack admin rotate-admin-token` replaces it on running servers too, within {} s)",
            crate::app::cache::TTL.as_secs()
        ),
    }
    let approvals = tokio::spawn(record_approvals(app.clone()));
    let conversions = tokio::spawn(convert_waiting_sales(app.clone()));
    let rate_fetch = args.rates.fetch.then(|| {
        println!("  exchange rates: fetched daily from {}", args.rates.url);
        tokio::spawn(fetch_rates_daily(app.clone(), args.rates.url.clone()))
    });
    let webhooks = crate::app::webhooks::worker::Worker::spawn(app.clone());
    let mut state = AppState::new(app, clients)
        .with_rate_limits(args.rate_limits)
        .with_public_url(args.public_url);
    let mut metrics_server = None;
    if args.metrics.on() {
        let metrics = Arc::new(Metrics::new(state.app.readings()));
        state = state.with_metrics(metrics.clone(), args.metrics.on_main_listener());
        let at = match metrics_listener {
            Some(listener) => {
                let at = listener.local_addr()?;
                let router = http::metrics::listener_router(metrics);
                metrics_server = Some(tokio::spawn(async move {
                    if let Err(e) = axum::serve(listener, router).await {
                        tracing::error!(error = %e, "the metrics listener stopped");
                    }
                }));
                at
            }
            None => addr,
        };
        println!("  metrics:        http://{at}{}", http::metrics::PATH);
    }
    let grace = Duration::from_secs(args.shutdown_timeout);
    let signalled = Arc::new(tokio::sync::Notify::new());
    let notify = signalled.clone();
    let server = serve_with(state, listener, timeouts, async move {
        signal.await;
        notify.notify_one();
    });
    tokio::pin!(server);
    // The grace period starts at the signal, not at start-up.
    let grace_ends = async {
        signalled.notified().await;
        tokio::time::Instant::now() + grace
    };
    let deadline = tokio::select! {
        () = &mut server => {
            tokio::time::Instant::now() + grace
        }
        at = grace_ends => {
            match tokio::time::timeout_at(at, &mut server).await {
                Ok(()) => {}
                Err(_) => anyhow::bail!(
                    "shutdown: requests still in flight after {} s; exiting anyway",
                    grace.as_secs()
                ),
            }
            at
        }
    };
    approvals.abort();
    conversions.abort();
    if let Some(fetch) = rate_fetch {
        fetch.abort();
    }
    if let Some(server) = metrics_server {
        server.abort();
    }
    // Before the store closes: the attempts under way are recorded through it.
    if !webhooks.stop(deadline).await {
        tracing::warn!(
            "shutdown: webhook attempts still under way after {} s; they are made again after a restart",
            grace.as_secs()
        );
    }
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

/// Every minute, records as approved the commissions whose hold period has passed (reads
/// show them approved from that instant already), purges the IPs the fraud rules keep
/// once they are older than their retention (`domain::fraud::IP_RETENTION_DAYS`), and
/// marks the lead emails stored before the disposable-mail rule.
/// Each process runs it; the update is
/// the same whichever runs it first.
async fn record_approvals(app: Arc<App>) {
    let mut every = tokio::time::interval(Duration::from_secs(60));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        match app.approve_due_commissions().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(commissions = n, "recorded approvals after the hold"),
            Err(e) => {
                tracing::warn!(error = %e, "recording approvals failed; retrying in a minute")
            }
        }
        match app.purge_old_ips().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(records = n, "purged IPs past their retention"),
            Err(e) => tracing::warn!(error = %e, "purging old IPs failed; retrying in a minute"),
        }
        // Customers stored before the disposable-mail rule: runs one after the other, a
        // pause between them for the tracking writes, until none is left.
        loop {
            match app.mark_disposable_emails().await {
                Ok(0) => break,
                Ok(n) => tracing::info!(customers = n, "marked stored lead emails"),
                Err(e) => {
                    tracing::warn!(error = %e, "marking lead emails failed; retrying in a minute");
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Every 30 seconds, and at once when rates are stored through this process, converts the
/// sales waiting for an exchange rate that the stored rates now convert
/// ([`App::convert_waiting_pass`]): a rate stored by another process (a second server, or
/// `reftrack rates import`) converts its sales within a minute. While no stored rate
/// converts any of them, a pass is one read and takes no write. Each process runs it;
/// each sale is converted once.
async fn convert_waiting_sales(app: Arc<App>) {
    let mut every = tokio::time::interval(Duration::from_secs(30));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            () = app.rates_arrived().notified() => {}
        }
        match app.convert_waiting_pass().await {
            Ok(pass) if pass.converted > 0 => tracing::info!(
                target: "reftrack::conversions",
                sales = pass.converted,
                writes = pass.writes,
                longest_write_ms = pass.longest_write.as_millis() as u64,
                "converted sales that waited for an exchange rate"
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(
                error = %e,
                "converting sales waiting for a rate failed; retrying in 30 seconds"
            ),
        }
    }
}

/// When `REFTRACK_FETCH_ECB_RATES` is on: fetches the ECB's reference rates from `url`
/// at start and then every day; a failed fetch is logged and tried again in 15 minutes,
/// and never stops the server.
async fn fetch_rates_daily(app: Arc<App>, url: String) {
    const DAILY: Duration = Duration::from_secs(24 * 60 * 60);
    const RETRY: Duration = Duration::from_secs(15 * 60);
    loop {
        let wait = match app.fetch_ecb_rates(&url).await {
            Ok(done) => {
                tracing::info!(
                    rates = done.stored,
                    last_day = %done.last_day,
                    "fetched the ECB's reference rates"
                );
                DAILY
            }
            Err(e) => {
                tracing::warn!(error = ?e, url = %url, "fetching the ECB's reference rates failed; retrying in 15 minutes");
                RETRY
            }
        };
        tokio::time::sleep(wait).await;
    }
}

/// Serves `state` on `listener` until `shutdown` completes, then finishes in-flight
/// requests; connections that are slow to send their headers, or idle for long, are
/// closed after `timeouts` ([`http::connections`]).
pub async fn serve_with(
    state: AppState,
    listener: TcpListener,
    timeouts: Timeouts,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    http::connections::serve(listener, router(state), timeouts, shutdown).await
}

/// Completes on SIGINT or SIGTERM. SIGHUP, which asks many services to reload, is
/// logged and ignored: settings are read at start, and dying of it would cut the
/// requests in flight. The handlers are in place when this returns, before the future
/// is first polled, so that a signal sent as soon as the server says it serves is seen.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let wait = {
        use tokio::signal::unix::{signal, SignalKind};
        let streams = [
            SignalKind::interrupt(),
            SignalKind::terminate(),
            SignalKind::hangup(),
        ]
        .map(|kind| signal(kind).ok());
        async move {
            let [interrupt, terminate, hangup] = streams;
            let stop = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            let ignore_hangups = async move {
                let Some(mut hangup) = hangup else {
                    return std::future::pending::<()>().await;
                };
                loop {
                    hangup.recv().await;
                    tracing::warn!(
                        "SIGHUP ignored: settings are read at start, so there is nothing to \
                         reload; restart the process to change them"
                    );
                }
            };
            tokio::select! {
                _ = stop(interrupt) => {},
                _ = stop(terminate) => {},
                _ = ignore_hangups => {},
            }
        }
    };
    #[cfg(not(unix))]
    let wait = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    async move {
        wait.await;
        tracing::info!("shutting down: finishing in-flight requests");
    }
}

#[cfg(test)]
mod tests {
    use anyhow::Context;

    #[test]
    fn an_error_line_tells_each_cause_once() {
        let error = anyhow::anyhow!("no such table").context("cannot migrate");
        assert_eq!(super::error_line(&error), "cannot migrate: no such table");
        let io = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let error = Err::<(), _>(sqlx::Error::Io(io))
            .context("cannot open")
            .unwrap_err();
        assert_eq!(
            super::error_line(&error),
            "cannot open: error communicating with database: connection refused"
        );
    }
}
