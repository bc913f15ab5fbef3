//! Abuse limits: per-client-IP rate limits on the public endpoints (GCRA from the
//! `governor` crate) and a per-account slowdown of failed logins.
//!
//! Limited are `POST /track/click`, browser-mode `POST /track/lead` (no `Authorization`
//! header) and every POST that checks or hashes a password (sign-in, invites,
//! applications, password changes, a partner's own payout details: [`logins`]), each per
//! client IP as
//! [`ClientResolver::client_ip`](super::client_ip::ClientResolver::client_ip) sees it
//! (the TCP peer, or a trusted proxy's client header). IPv6 clients are limited per /64,
//! the block one subscriber usually holds. A request whose client IP is unknown (the
//! router embedded without connection info, as tests do) is not limited: the served
//! binary always knows the peer.

use std::net::{IpAddr, Ipv6Addr};
use std::num::{NonZeroU32, NonZeroUsize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use lru::LruCache;

use super::error::Error;
use super::AppState;

/// Default of `REFTRACK_RATE_LIMIT_CLICK`.
pub const DEFAULT_RATE_LIMIT_CLICK: u32 = 600;
/// Default of `REFTRACK_RATE_LIMIT_LEAD`.
pub const DEFAULT_RATE_LIMIT_LEAD: u32 = 120;
/// Default of `REFTRACK_RATE_LIMIT_LOGIN`.
pub const DEFAULT_RATE_LIMIT_LOGIN: u32 = 10;

/// Per-client-IP request limits of the public endpoints, in requests per minute with a
/// burst of the same size; 0 turns a limit off.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct RateLimitArgs {
    /// `POST /track/click` per client IP and minute.
    #[arg(long, env = "REFTRACK_RATE_LIMIT_CLICK", default_value_t = DEFAULT_RATE_LIMIT_CLICK)]
    pub rate_limit_click: u32,
    /// Browser-mode `POST /track/lead` (no API key) per client IP and minute.
    #[arg(long, env = "REFTRACK_RATE_LIMIT_LEAD", default_value_t = DEFAULT_RATE_LIMIT_LEAD)]
    pub rate_limit_lead: u32,
    /// Calls that check or hash a password, per client IP and minute: sign-in (dashboard
    /// and partners, API and pages), the dashboard's first run, invite acceptance,
    /// partner applications, partner password changes and partners' own payout details.
    #[arg(long, env = "REFTRACK_RATE_LIMIT_LOGIN", default_value_t = DEFAULT_RATE_LIMIT_LOGIN)]
    pub rate_limit_login: u32,
}

impl Default for RateLimitArgs {
    fn default() -> Self {
        RateLimitArgs {
            rate_limit_click: DEFAULT_RATE_LIMIT_CLICK,
            rate_limit_lead: DEFAULT_RATE_LIMIT_LEAD,
            rate_limit_login: DEFAULT_RATE_LIMIT_LOGIN,
        }
    }
}

impl RateLimitArgs {
    /// Every limit off.
    pub fn off() -> Self {
        RateLimitArgs {
            rate_limit_click: 0,
            rate_limit_lead: 0,
            rate_limit_login: 0,
        }
    }
}

/// Which limit a request counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limited {
    /// `POST /api/v1/track/click` (and its legacy alias).
    Click,
    /// `POST /api/v1/track/lead` without an `Authorization` header (browser mode).
    Lead,
    /// A POST that checks or hashes a password (sign-in, invites, applications, password
    /// changes).
    Login,
}

impl Limited {
    /// The limit's name in the metrics.
    pub fn name(self) -> &'static str {
        match self {
            Limited::Click => "click",
            Limited::Lead => "lead",
            Limited::Login => "login",
        }
    }
}

/// The metrics' name of the per-account login lockout ([`LoginThrottle`]).
pub const LOGIN_ACCOUNT: &str = "login_account";

/// The per-IP limiters, one per [`Limited`] class; `None` where the limit is off.
pub struct RateLimits {
    click: Option<DefaultKeyedRateLimiter<IpAddr>>,
    lead: Option<DefaultKeyedRateLimiter<IpAddr>>,
    login: Option<DefaultKeyedRateLimiter<IpAddr>>,
    clock: DefaultClock,
    checks: AtomicU64,
}

/// Forgets idle clients every this many checks, so that the limiters' memory follows
/// the number of recently active clients.
const SWEEP_EVERY: u64 = 4096;

fn limiter(per_minute: u32) -> Option<DefaultKeyedRateLimiter<IpAddr>> {
    NonZeroU32::new(per_minute).map(|n| RateLimiter::keyed(Quota::per_minute(n)))
}

/// The key an address is limited under: IPv4 as it is, IPv6 by its /64.
pub fn rate_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

impl RateLimits {
    /// Limiters for the given per-minute limits.
    pub fn new(args: RateLimitArgs) -> Self {
        RateLimits {
            click: limiter(args.rate_limit_click),
            lead: limiter(args.rate_limit_lead),
            login: limiter(args.rate_limit_login),
            clock: DefaultClock::default(),
            checks: AtomicU64::new(0),
        }
    }

    /// Counts one request of `class` from `ip`; `Err` with the time to wait when over
    /// the limit.
    pub fn check(&self, class: Limited, ip: IpAddr) -> Result<(), Duration> {
        let limiter = match class {
            Limited::Click => &self.click,
            Limited::Lead => &self.lead,
            Limited::Login => &self.login,
        };
        let Some(limiter) = limiter else {
            return Ok(());
        };
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            for l in [&self.click, &self.lead, &self.login].into_iter().flatten() {
                l.retain_recent();
                l.shrink_to_fit();
            }
        }
        limiter
            .check_key(&rate_key(ip))
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }
}

/// Route layer of the click routes: POST requests count against [`Limited::Click`].
pub async fn clicks(Extension(state): Extension<AppState>, req: Request, next: Next) -> Response {
    limit(&state, Limited::Click, req, next).await
}

/// Route layer of the lead routes: POST requests without an `Authorization` header
/// (browser mode) count against [`Limited::Lead`]; server calls carry an API key.
pub async fn browser_leads(
    Extension(state): Extension<AppState>,
    req: Request,
    next: Next,
) -> Response {
    if req
        .headers()
        .contains_key(axum::http::header::AUTHORIZATION)
    {
        return next.run(req).await;
    }
    limit(&state, Limited::Lead, req, next).await
}

/// Route layer of the routes that check or hash a password: POST and PATCH requests count
/// against [`Limited::Login`].
pub async fn logins(Extension(state): Extension<AppState>, req: Request, next: Next) -> Response {
    limit(&state, Limited::Login, req, next).await
}

/// Answers 429 with `Retry-After` when the client of a POST (or a PATCH, which may carry a
/// password) is over its `class` limit.
async fn limit(state: &AppState, class: Limited, req: Request, next: Next) -> Response {
    if req.method() != Method::POST && req.method() != Method::PATCH {
        return next.run(req).await;
    }
    let peer = req
        .extensions()
        .get::<ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip());
    let Some(ip) = state.clients.client_ip(peer, req.headers()) else {
        return next.run(req).await;
    };
    match state.limits.check(class, ip) {
        Ok(()) => next.run(req).await,
        Err(wait) => {
            tracing::debug!(?class, "rate limited");
            state.count_rate_limited(class.name());
            Error::TooManyRequests(retry_after_secs(wait)).into_response()
        }
    }
}

/// A wait as whole seconds for `Retry-After`, at least 1.
pub fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// Failed logins of one account that are free of delay.
pub const FREE_LOGIN_FAILURES: u32 = 5;
/// Longest lockout after repeated failed logins.
pub const MAX_LOGIN_LOCKOUT: Duration = Duration::from_secs(15 * 60);
/// Failures are forgotten after this long without one.
const FORGET_FAILURES_AFTER: Duration = Duration::from_secs(60 * 60);
/// Accounts tracked at once; the least recently tried are forgotten first.
const TRACKED_ACCOUNTS: usize = 100_000;

struct Failures {
    count: u32,
    last: Instant,
    locked_until: Option<Instant>,
}

/// Slows down password guessing per account (keyed by the normalised email, whether or
/// not the account exists, so that it reveals nothing): the first
/// [`FREE_LOGIN_FAILURES`] attempts are free, after which each further failure locks
/// the account out of login for twice as long as the one before (1 s, 2 s, 4 s, … up to
/// [`MAX_LOGIN_LOCKOUT`]). An attempt counts as failed from the moment it starts, so
/// parallel guesses cannot slip in before the count; a successful login clears it.
pub struct LoginThrottle {
    accounts: Mutex<LruCache<String, Failures>>,
}

impl Default for LoginThrottle {
    fn default() -> Self {
        LoginThrottle {
            accounts: Mutex::new(LruCache::new(
                NonZeroUsize::new(TRACKED_ACCOUNTS).expect("non-zero"),
            )),
        }
    }
}

fn account_key(email: &str) -> String {
    super::fields::truncate(&email.trim().to_ascii_lowercase(), 320)
}

/// The lockout after the `count`-th consecutive failure.
pub fn lockout_after(count: u32) -> Option<Duration> {
    let over = count.checked_sub(FREE_LOGIN_FAILURES)?;
    let secs = 1u64.checked_shl(over).unwrap_or(u64::MAX);
    Some(Duration::from_secs(secs).min(MAX_LOGIN_LOCKOUT))
}

impl LoginThrottle {
    /// Starts a login attempt for `email`: `Err` with the time left when the account is
    /// locked out, else the attempt is counted as a failure until
    /// [`succeeded`](Self::succeeded) clears it.
    pub fn begin(&self, email: &str) -> Result<(), Duration> {
        let now = Instant::now();
        let mut accounts = self.accounts.lock().expect("login throttle lock");
        let entry = accounts.get_or_insert_mut(account_key(email), || Failures {
            count: 0,
            last: now,
            locked_until: None,
        });
        if let Some(until) = entry.locked_until.filter(|u| *u > now) {
            return Err(until - now);
        }
        if now.duration_since(entry.last) > FORGET_FAILURES_AFTER {
            entry.count = 0;
        }
        entry.count = entry.count.saturating_add(1);
        entry.last = now;
        entry.locked_until = lockout_after(entry.count).map(|d| now + d);
        Ok(())
    }

    /// Clears the failures of `email` after a successful login.
    pub fn succeeded(&self, email: &str) {
        self.accounts
            .lock()
            .expect("login throttle lock")
            .pop(&account_key(email));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_is_limited_per_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(rate_key(a), rate_key(b));
        assert_ne!(rate_key(a), rate_key(c));
        let mapped: IpAddr = "::ffff:198.51.100.7".parse().unwrap();
        assert_eq!(rate_key(mapped), "198.51.100.7".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn limits_per_ip_and_off() {
        let limits = RateLimits::new(RateLimitArgs {
            rate_limit_click: 3,
            rate_limit_lead: 0,
            rate_limit_login: 1,
        });
        let a: IpAddr = "198.51.100.1".parse().unwrap();
        let b: IpAddr = "198.51.100.2".parse().unwrap();
        for _ in 0..3 {
            assert!(limits.check(Limited::Click, a).is_ok());
        }
        let wait = limits.check(Limited::Click, a).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(20));
        assert!(limits.check(Limited::Click, b).is_ok());
        for _ in 0..100 {
            assert!(limits.check(Limited::Lead, a).is_ok());
        }
        assert!(limits.check(Limited::Login, a).is_ok());
        assert!(limits.check(Limited::Login, a).is_err());
    }

    #[test]
    fn login_lockout_doubles_and_clears() {
        assert_eq!(lockout_after(4), None);
        assert_eq!(lockout_after(5), Some(Duration::from_secs(1)));
        assert_eq!(lockout_after(7), Some(Duration::from_secs(4)));
        assert_eq!(lockout_after(40), Some(MAX_LOGIN_LOCKOUT));
        assert_eq!(lockout_after(u32::MAX), Some(MAX_LOGIN_LOCKOUT));
        let t = LoginThrottle::default();
        for _ in 0..FREE_LOGIN_FAILURES {
            assert!(t.begin("Bob@Example.com").is_ok());
        }
        let wait = t.begin("bob@example.com ").unwrap_err();
        assert!(wait <= Duration::from_secs(1));
        assert!(t.begin("carol@example.com").is_ok());
        t.succeeded("bob@example.com");
        assert!(t.begin("bob@example.com").is_ok());
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(2)), 2);
    }
}
