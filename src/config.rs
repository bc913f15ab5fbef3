//! Command line and environment configuration (`REFTRACK_*`), validated at start.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::app::mail::Mailer;

use crate::http::client_ip::TrustedProxies;
use crate::http::connections::{Timeouts, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT};
pub use crate::http::rate_limit::RateLimitArgs;

/// Reftrack: affiliate tracking service.
#[derive(Debug, Parser)]
#[command(name = "reftrack", version, about)]
pub struct Cli {
    /// What to do; `serve` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of `serve`, also accepted without the subcommand.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// The subcommands of the binary.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the tracking, dashboard and management APIs (the default).
    Serve(ServeArgs),
    /// Apply pending database migrations and exit.
    Migrate(DatabaseArgs),
    /// Management operations, the same as the `/api/admin` API; prints JSON.
    Admin(crate::cli::AdminArgs),
    /// Commissions: list (JSON or CSV), approve, reject, balances; prints JSON.
    Commissions(crate::cli::payouts::CommissionsArgs),
    /// Payouts: create, list, show, mark-paid, cancel, export (CSV, PayPal, Wise).
    Payouts(crate::cli::payouts::PayoutsArgs),
    /// Exchange rates: import the European Central Bank's reference-rate CSV.
    Rates(crate::cli::rates::RatesArgs),
    /// Recompute every rollup and counter from the raw events and check cross-record
    /// invariants; prints a JSON report and exits non-zero when anything drifted.
    Verify(DatabaseArgs),
    /// Copy a SQLite database to a new file, consistently, while it is being served.
    Backup(crate::backup::BackupArgs),
    /// Replace a SQLite database with a backup, after checking the backup (server stopped).
    Restore(crate::backup::RestoreArgs),
    /// Ask a running server whether it is ready (`GET /readyz`); exit 0 if so, 1 if not.
    Healthcheck(crate::healthcheck::HealthcheckArgs),
}

/// Where the data lives.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// `sqlite://PATH` (`serve` and `migrate` create a missing file; the other commands
    /// refuse it) or `postgres://USER@HOST/DB`.
    #[arg(
        long,
        env = "REFTRACK_DATABASE_URL",
        default_value = "sqlite://reftrack.db",
        hide_env_values = true
    )]
    pub database_url: String,
}

/// Options of `reftrack serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Address to serve on.
    #[arg(long, env = "REFTRACK_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Bearer token of the management API. When unset, one is generated at first
    /// start, stored (hashed) and printed once.
    #[arg(long, env = "REFTRACK_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Peers whose proxy/CDN headers are believed for client IP and geo: comma-separated
    /// IPs or CIDRs, or `*` for any peer.
    #[arg(long, env = "REFTRACK_TRUSTED_PROXIES")]
    pub trusted_proxies: Option<TrustedProxies>,
    /// Path of a MaxMind-format `.mmdb` database for server-side geo lookup.
    #[arg(long, env = "REFTRACK_GEOIP_DB")]
    pub geoip_db: Option<PathBuf>,
    /// Seconds to finish in-flight requests and pending writes after SIGTERM or SIGINT;
    /// the process exits when they are done or when this has passed.
    #[arg(long, env = "REFTRACK_SHUTDOWN_TIMEOUT", default_value_t = 30)]
    pub shutdown_timeout: u64,
    /// Seconds a connection has to send a request's complete headers, from its start or
    /// from the request's first byte; then it is closed.
    #[arg(long, env = "REFTRACK_HEADER_TIMEOUT", default_value_t = DEFAULT_HEADER_TIMEOUT)]
    pub header_timeout: u64,
    /// Seconds a kept-alive connection may stay idle between requests before it is
    /// closed; longer than the idle time of the proxy in front (docs/deploy.md).
    #[arg(long, env = "REFTRACK_KEEP_ALIVE_TIMEOUT", default_value_t = DEFAULT_IDLE_TIMEOUT)]
    pub keep_alive_timeout: u64,
    /// Where partners and browsers reach this server (`https://track.example.com`), for
    /// the links it hands out and mails; by default the address confirmed at the first
    /// run (changeable in the dashboard's settings), else `http://` and the listening
    /// address. Never the request's host.
    #[arg(long, env = "REFTRACK_PUBLIC_URL", value_parser = crate::domain::redirect::server_url)]
    pub public_url: Option<String>,
    #[command(flatten)]
    pub rate_limits: RateLimitArgs,
    #[command(flatten)]
    pub metrics: MetricsArgs,
    #[command(flatten)]
    pub mail: MailArgs,
    #[command(flatten)]
    pub webhooks: WebhookArgs,
    #[command(flatten)]
    pub rates: RatesFetchArgs,
    #[command(flatten)]
    pub click_waits: ClickWaitArgs,
}

/// How long a click waits for its commit before it is answered (docs/reliability.md).
#[derive(Debug, Clone, Args)]
pub struct ClickWaitArgs {
    /// Milliseconds a redirect link's visit (`GET /r/…`) waits for its click's commit
    /// before the visitor is sent on anyway; the click stays queued and commits with its
    /// batch, unless the process dies first.
    #[arg(long, env = "REFTRACK_REDIRECT_WAIT_MS", default_value_t = 25)]
    pub redirect_wait_ms: u64,
    /// Milliseconds `POST /api/v1/track/click` waits for its commit before it answers
    /// anyway (`Reftrack-Click: queued`). Unset: it answers once committed, so that a 200
    /// means the click is on disk.
    #[arg(long, env = "REFTRACK_CLICK_WAIT_MS")]
    pub click_wait_ms: Option<u64>,
}

/// Prometheus metrics (`GET /metrics`): off unless one of these is set.
#[derive(Debug, Clone, Default, Args)]
pub struct MetricsArgs {
    /// Serve `GET /metrics` on the main listener (`1`/`true`/`yes`/`on` or
    /// `0`/`false`/`no`/`off`).
    #[arg(
        long = "metrics",
        env = "REFTRACK_METRICS",
        value_parser = clap::builder::BoolishValueParser::new(),
        action = clap::ArgAction::Set,
        default_value_t = false,
        num_args = 0..=1,
        default_missing_value = "true"
    )]
    pub enabled: bool,
    /// Serve `GET /metrics` on this address instead, and only there (not on the main
    /// listener, whatever `REFTRACK_METRICS` says).
    #[arg(long, env = "REFTRACK_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,
}

impl MetricsArgs {
    /// Whether metrics are counted at all.
    pub fn on(&self) -> bool {
        self.enabled || self.metrics_listen.is_some()
    }

    /// Whether the main listener serves them.
    pub fn on_main_listener(&self) -> bool {
        self.enabled && self.metrics_listen.is_none()
    }
}

/// Outbound mail: partner invites are mailed when both are set.
#[derive(Debug, Clone, Default, Args)]
pub struct MailArgs {
    /// SMTP server: `smtp://USER:PASSWORD@HOST:PORT` (plain; add `?tls=required` for
    /// STARTTLS) or `smtps://USER:PASSWORD@HOST:PORT` (TLS from the start).
    #[arg(long, env = "REFTRACK_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<String>,
    /// Sender of the mails: `invites@example.com` or `Acme Partners <invites@example.com>`.
    #[arg(long, env = "REFTRACK_MAIL_FROM")]
    pub mail_from: Option<String>,
}

impl MailArgs {
    /// The mailer these settings configure; `None` when no SMTP server is set.
    pub fn mailer(&self) -> anyhow::Result<Option<Mailer>> {
        match (&self.smtp_url, &self.mail_from) {
            (Some(url), Some(from)) => Ok(Some(Mailer::new(url, from)?)),
            (None, None) => Ok(None),
            (Some(_), None) => anyhow::bail!("REFTRACK_SMTP_URL needs REFTRACK_MAIL_FROM"),
            (None, Some(_)) => anyhow::bail!("REFTRACK_MAIL_FROM needs REFTRACK_SMTP_URL"),
        }
    }
}

/// Where outbound webhooks may go.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct WebhookArgs {
    /// Allow webhook endpoints on loopback, private and link-local addresses (`1`,
    /// `true`); refused by default, when endpoints are created and at each delivery.
    #[arg(
        long = "webhook-allow-private",
        env = "REFTRACK_WEBHOOK_ALLOW_PRIVATE",
        value_parser = clap::builder::BoolishValueParser::new(),
        action = clap::ArgAction::Set,
        default_value_t = false
    )]
    pub allow_private: bool,
}

/// The optional daily fetch of the European Central Bank's reference rates.
#[derive(Debug, Clone, Args)]
pub struct RatesFetchArgs {
    /// Fetch the ECB's reference rates at start and then every day (`1`, `true`); off by
    /// default. A failed fetch is logged and tried again in 15 minutes.
    #[arg(
        long = "fetch-ecb-rates",
        env = "REFTRACK_FETCH_ECB_RATES",
        value_parser = clap::builder::BoolishValueParser::new(),
        action = clap::ArgAction::Set,
        default_value_t = false
    )]
    pub fetch: bool,
    /// Where the daily fetch downloads the rates: the ECB's `eurofxref.zip`, or any URL
    /// serving that file or its CSV.
    #[arg(long = "ecb-rates-url", env = "REFTRACK_ECB_RATES_URL", default_value = crate::app::money::rates::fetch::ECB_DAILY_URL)]
    pub url: String,
}

impl ServeArgs {
    /// The connection timeouts these arguments set.
    pub fn connection_timeouts(&self) -> Timeouts {
        Timeouts {
            header: Duration::from_secs(self.header_timeout),
            idle: Duration::from_secs(self.keep_alive_timeout),
        }
    }

    /// Checks what clap cannot: an admin token long enough to resist guessing.
    pub fn validate(&self) -> anyhow::Result<()> {
        if let Some(token) = &self.admin_token {
            if token.trim().len() < 16 {
                anyhow::bail!("REFTRACK_ADMIN_TOKEN must be at least 16 characters");
            }
        }
        if self.shutdown_timeout == 0 {
            anyhow::bail!("REFTRACK_SHUTDOWN_TIMEOUT must be at least 1 second");
        }
        if self.header_timeout == 0 {
            anyhow::bail!("REFTRACK_HEADER_TIMEOUT must be at least 1 second");
        }
        if self.keep_alive_timeout == 0 {
            anyhow::bail!("REFTRACK_KEEP_ALIVE_TIMEOUT must be at least 1 second");
        }
        if let Some(path) = &self.geoip_db {
            if !path.is_file() {
                anyhow::bail!("REFTRACK_GEOIP_DB: no file at {}", path.display());
            }
        }
        if self.metrics.metrics_listen == Some(self.listen) {
            anyhow::bail!("REFTRACK_METRICS_LISTEN must differ from REFTRACK_LISTEN");
        }
        Ok(())
    }
}

/// A database URL with its password hidden, for logs.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_have_30_seconds_for_their_headers_by_default() {
        let cli = Cli::try_parse_from(["reftrack"]).unwrap();
        let timeouts = cli.serve.connection_timeouts();
        assert_eq!(timeouts.header, Duration::from_secs(30));
        assert_eq!(timeouts.idle, Duration::from_secs(150));
        let cli = Cli::try_parse_from(["reftrack", "--header-timeout", "1"]).unwrap();
        assert_eq!(
            cli.serve.connection_timeouts().header,
            Duration::from_secs(1)
        );
    }

    #[test]
    fn redacts_password_only() {
        assert_eq!(
            redact_url("postgres://app:s3cret@db:5432/reftrack"),
            "postgres://app:***@db:5432/reftrack"
        );
        assert_eq!(redact_url("sqlite://reftrack.db"), "sqlite://reftrack.db");
    }
}

/// Settings read outside the command line's definition: the log filter and format.
const LOG_SETTINGS: &[&str] = &["REFTRACK_LOG", "REFTRACK_LOG_FORMAT"];

/// Variables of the project's own scripts and tests, which the binary never reads but
/// which are set around it when they start it.
const TOOLING: &[&str] = &[
    "REFTRACK_BIN",
    "REFTRACK_FUZZ_CASES",
    "REFTRACK_WEBHOOK_SECRET",
];

/// Every `REFTRACK_*` variable some command reads.
fn known_settings() -> Vec<String> {
    use clap::CommandFactory;
    fn walk(cmd: &clap::Command, out: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            if let Some(env) = arg.get_env() {
                out.push(env.to_string_lossy().into_owned());
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, out);
        }
    }
    let mut out: Vec<String> = LOG_SETTINGS.iter().map(|s| s.to_string()).collect();
    walk(&Cli::command(), &mut out);
    out.sort();
    out.dedup();
    out
}

/// The `REFTRACK_*` names among `names` that no command reads, each with the known
/// setting it most likely meant: a misspelt setting would otherwise be ignored without a
/// word (`REFTRACK_LISTN` leaves the server on its default address).
pub fn unknown_settings(names: impl IntoIterator<Item = String>) -> Vec<(String, Option<String>)> {
    let known = known_settings();
    let mut unknown: Vec<(String, Option<String>)> = names
        .into_iter()
        .filter(|n| n.starts_with("REFTRACK_") && !n.starts_with("REFTRACK_TEST_"))
        .filter(|n| !known.contains(n) && !TOOLING.contains(&n.as_str()))
        .map(|n| {
            // Compared without the prefix they all share.
            let tail = |s: &str| s.trim_start_matches("REFTRACK_").to_string();
            let near = known
                .iter()
                .map(|k| {
                    (
                        strsim::normalized_damerau_levenshtein(&tail(&n), &tail(k)),
                        k,
                    )
                })
                .filter(|(score, _)| *score >= 0.7)
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, k)| k.clone());
            (n, near)
        })
        .collect();
    unknown.sort();
    unknown
}

/// Logs a warning for each `REFTRACK_*` variable of the environment that no command
/// reads.
pub fn warn_of_unknown_settings() {
    for (name, near) in
        unknown_settings(std::env::vars_os().filter_map(|(k, _)| k.into_string().ok()))
    {
        match near {
            Some(k) => tracing::warn!("{name} is not a setting and is ignored; did you mean {k}?"),
            None => tracing::warn!("{name} is not a setting and is ignored"),
        }
    }
}

#[cfg(test)]
mod unknown_setting_tests {
    use super::*;

    #[test]
    fn a_misspelt_setting_is_named_with_the_one_it_likely_meant() {
        let names = [
            "REFTRACK_LISTEN",
            "REFTRACK_DATABSE_URL",
            "REFTRACK_LOG",
            "REFTRACK_TEST_POSTGRES_URL",
            "REFTRACK_BIN",
            "REFTRACK_LISTN",
            // Too far from REFTRACK_LISTEN to be suggested.
            "REFTRACK_BIND",
            "REFTRACK_SOMETHING_ELSE",
            "HOME",
        ]
        .map(String::from);
        assert_eq!(
            unknown_settings(names),
            vec![
                ("REFTRACK_BIND".to_string(), None),
                (
                    "REFTRACK_DATABSE_URL".to_string(),
                    Some("REFTRACK_DATABASE_URL".to_string())
                ),
                (
                    "REFTRACK_LISTN".to_string(),
                    Some("REFTRACK_LISTEN".to_string())
                ),
                ("REFTRACK_SOMETHING_ELSE".to_string(), None),
            ]
        );
    }

    #[test]
    fn every_documented_setting_is_known() {
        let known = known_settings();
        for name in [
            "REFTRACK_SMTP_URL",
            "REFTRACK_RATE_LIMIT_LOGIN",
            "REFTRACK_LOG_FORMAT",
        ] {
            assert!(known.iter().any(|k| k == name), "{name}: {known:?}");
        }
    }
}
