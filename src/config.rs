//! Command line and environment configuration (`REFTRACK_*`), validated at start.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::http::client_ip::TrustedProxies;

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
}

/// Where the data lives.
#[derive(Debug, Clone, Args)]
pub struct DatabaseArgs {
    /// `sqlite://PATH` (created if missing) or `postgres://USER@HOST/DB`.
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
}

impl ServeArgs {
    /// Checks what clap cannot: an admin token long enough to resist guessing.
    pub fn validate(&self) -> anyhow::Result<()> {
        if let Some(token) = &self.admin_token {
            if token.trim().len() < 16 {
                anyhow::bail!("REFTRACK_ADMIN_TOKEN must be at least 16 characters");
            }
        }
        if let Some(path) = &self.geoip_db {
            if !path.is_file() {
                anyhow::bail!("REFTRACK_GEOIP_DB: no file at {}", path.display());
            }
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
    fn redacts_password_only() {
        assert_eq!(
            redact_url("postgres://app:s3cret@db:5432/reftrack"),
            "postgres://app:***@db:5432/reftrack"
        );
        assert_eq!(redact_url("sqlite://reftrack.db"), "sqlite://reftrack.db");
    }
}
