//! The service layer: one function per use case, and the only caller of the store.
//!
//! Every way into Reftrack (the tracking API and its legacy alias, the Stripe webhook,
//! the management API, the dashboard and the CLI) calls these functions, so a click, a
//! lead, a sale or a refund is recorded by exactly one flow whatever its source. The
//! rules they apply are the pure functions of [`reftrack_domain`]; the statements they
//! make are the store's ([`reftrack_store`]).
//!
//! The use cases, one module per context, each with the part of the store interface it
//! reads and writes through:
//!
//! - [`tracking`]: clicks, leads, sales and refunds, as flows over one write
//!   transaction (`reftrack_store::tx::Tx`); [`tracking::stripe`] a verified
//!   payment-processor event, with its sale or refund; [`tracking::redirect`] redirect
//!   links, whose visits are clicks; [`tracking::load`] the tracking calls under way.
//!   Store parts `TrackingLookups` and `Store::submit`.
//! - [`programs`]: programs and partners — the management operations (workspaces,
//!   programs, partners, links, users, members, the admin token),
//!   [`programs::management`] their lists and partners' standing, [`programs::coupons`]
//!   coupon codes of links, [`programs::first_run`] the setup of a server that has no user
//!   yet. Store parts `ProgramAdmin`, `PartnerAdmin`, `UserAdmin`, `ManagementReads`.
//! - [`accounts`]: partner accounts — invites, sign-in, applications, the partner's own
//!   record and what it reads in its programs; [`accounts::invite_mail`]. Store part
//!   `PartnerAccounts` (`PartnerTx` in a flow).
//! - [`money`]: commissions' changes, balances and payouts ([`money::payouts`]) and their
//!   files ([`money::exports`]). Store parts `PayoutReads` and `PayoutTx`.
//! - [`webhooks`]: endpoints and the outbox's delivery worker. Store parts `WebhookStore`
//!   and `WebhookTx`.
//! - [`dashboard`]: the owner's sign-in, sessions and the events page, and
//!   [`dashboard::performance`] (daily figures, totals and trends of a program or a
//!   partner). Store part `DashboardStore`.
//!
//! Shared by them: [`access`] (who may call a management use case), [`address`] (the
//! server's address, which the links it hands out name), [`cache`], [`secrets`], [`mail`]
//! and [`notice_mail`], [`error`]; and for operators [`verify`] (the integrity check) and
//! [`metrics`] (what `/metrics` reads).

pub mod access;
pub mod accounts;
pub mod address;
pub mod audit;
pub mod cache;
pub mod dashboard;
pub mod error;
pub mod mail;
pub mod metrics;
pub mod money;
pub mod notice_mail;
mod pages;
pub mod programs;
pub mod secrets;
pub mod tracking;
pub mod two_factor;
pub mod verify;
pub mod webhooks;

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use lru::LruCache;
use tokio::sync::oneshot;

pub use access::{Caller, Who};
pub use error::{Error, Result};
pub use pages::{Listed, PageParams};
pub use reftrack_store::RecordedSale;

use crate::mail::Mailer;
use cache::ReadCache;
use reftrack_domain::figures::Deltas;
use reftrack_domain::time::Clock;
use reftrack_domain::user_agent::{self, DeviceInfo};
use reftrack_store::tx::Tx;
use reftrack_store::write::{self, Write};
use reftrack_store::{LinkTarget, Program, Store};

/// The service: the store, the clock and the caches of the per-request lookups. Cheap
/// to share (`Arc<App>`).
pub struct App {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    links: ReadCache<String, LinkTarget>,
    programs: ReadCache<String, Program>,
    /// The hash of the admin token `REFTRACK_ADMIN_TOKEN` sets; `None`: the stored one.
    configured_admin_token: Option<String>,
    /// The stored admin token's hash, cached as the lookups above are.
    admin_token: ReadCache<(), String>,
    user_agents: Mutex<LruCache<String, DeviceInfo>>,
    mailer: Option<Arc<Mailer>>,
    /// Where partners and users reach the server (`REFTRACK_PUBLIC_URL`); none: the
    /// confirmed address, else the listening one ([`address`]).
    public_url: Option<String>,
    /// The confirmed address (the setting `public_url`), cached as the lookups above are.
    stored_public_url: ReadCache<(), String>,
    /// `http://` and the address the server listens on, when it serves one.
    listen_url: Option<String>,
    /// Whether webhook endpoints may be on loopback, private or link-local addresses.
    private_webhook_targets: bool,
    /// Wakes the webhook worker: a delivery was made due now.
    webhooks_due: tokio::sync::Notify,
    /// The tracking calls under way, which the webhook worker yields to.
    load: tracking::load::Load,
    /// How long clicks wait for their commit before they are answered.
    click_waits: tracking::ClickWaits,
    /// Click recordings going on after their wait ran out.
    detached_clicks: Arc<std::sync::atomic::AtomicUsize>,
    /// The rate a sale converts at, by (day number, sale currency, program currency),
    /// cached as the lookups above are ([`money::rates`]).
    sale_rates: ReadCache<money::rates::RateKey, (rust_decimal::Decimal, String)>,
    /// Wakes the conversion of waiting sales: rates were stored by this process.
    rates_arrived: tokio::sync::Notify,
}

impl App {
    /// The service over `store`, reading the time from `clock`.
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        App {
            store,
            clock,
            links: ReadCache::new(4096, cache::TTL),
            programs: ReadCache::new(256, cache::TTL),
            configured_admin_token: None,
            admin_token: ReadCache::new(1, cache::TTL),
            user_agents: Mutex::new(LruCache::new(NonZeroUsize::new(4096).expect("non-zero"))),
            mailer: None,
            public_url: None,
            stored_public_url: ReadCache::new(1, cache::TTL),
            listen_url: None,
            private_webhook_targets: false,
            webhooks_due: tokio::sync::Notify::new(),
            load: tracking::load::Load::default(),
            click_waits: tracking::ClickWaits::default(),
            detached_clicks: Arc::default(),
            sale_rates: ReadCache::new(1024, cache::TTL),
            rates_arrived: tokio::sync::Notify::new(),
        }
    }

    /// The same service answering clicks after `waits` at the latest.
    pub fn with_click_waits(mut self, waits: tracking::ClickWaits) -> Self {
        self.click_waits = waits;
        self
    }

    /// The tracking calls under way in this process, which the webhook worker yields to.
    pub fn load(&self) -> &tracking::load::Load {
        &self.load
    }

    /// The same service mailing partner invites through `mailer` (none: nothing is mailed).
    pub fn with_mailer(mut self, mailer: Option<Mailer>) -> Self {
        self.mailer = mailer.map(Arc::new);
        self
    }

    /// The same service taking `configured` (`REFTRACK_ADMIN_TOKEN`) as the admin token
    /// instead of the stored one; `None`: the stored one.
    pub fn with_admin_token(mut self, configured: Option<&str>) -> Self {
        self.configured_admin_token = configured.map(|t| secrets::hash_token(t.trim()));
        self
    }

    /// The same service knowing its public address (`REFTRACK_PUBLIC_URL`), which every
    /// link it hands out or mails then names.
    pub fn with_public_url(mut self, url: Option<String>) -> Self {
        self.public_url = url.map(|u| u.trim_end_matches('/').to_string());
        self
    }

    /// The same service, allowing webhook endpoints on loopback, private or link-local
    /// addresses (`REFTRACK_WEBHOOK_ALLOW_PRIVATE=1`) or not.
    pub fn allowing_private_webhook_targets(mut self, allow: bool) -> Self {
        self.private_webhook_targets = allow;
        self
    }

    /// The store (for health checks and `reftrack verify`).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Succeeds when the database answers.
    pub async fn ping(&self) -> Result<()> {
        Ok(self.store.ping().await?)
    }

    /// Now, in epoch milliseconds, by the service's clock.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Device, OS and browser of a user agent; repeated agents come from a small cache.
    pub fn device_info(&self, ua: &str) -> DeviceInfo {
        if let Some(hit) = self.user_agents.lock().expect("ua cache").get(ua) {
            return hit.clone();
        }
        let info = user_agent::parse(ua);
        self.user_agents
            .lock()
            .expect("ua cache")
            .put(ua.to_string(), info.clone());
        info
    }

    /// Drops the cached lookups; called after every change to programs or links (a
    /// link's lookup carries its program's cookie window and origins).
    fn changed(&self) {
        self.links.clear();
        self.programs.clear();
    }

    /// Runs `flow` in the group committer's transaction and returns its result once that
    /// transaction is committed and durable. A write the committer drops unanswered (the
    /// store closing) is "unavailable".
    async fn write<T: Send + 'static>(&self, flow: impl Flow<T>) -> Result<T> {
        self.submit(Write::Job, flow).await
    }

    /// [`Self::write`] for a flow that may take long (see [`Write::Long`]).
    async fn write_long<T: Send + 'static>(&self, flow: impl Flow<T>) -> Result<T> {
        self.submit(Write::Long, flow).await
    }

    /// Hands `flow` to the committer as the write `kind` makes of its job, and waits for
    /// its answer; runs it again alone when its batch failed through another write.
    async fn submit<T: Send + 'static>(
        &self,
        kind: fn(write::Job) -> Write,
        flow: impl Flow<T>,
    ) -> Result<T> {
        let again = flow.clone();
        answer_or_alone(
            &*self.store,
            |answer| kind(write::job(answer, flow)),
            |answer| write::job(answer, again),
        )
        .await
    }
}

/// Queues on `store` the write that `first` builds around its answer and waits for that
/// answer; when its batch failed through another write ([`Error::Retry`]), queues the job
/// that `alone` builds as a [`Write::Alone`] and waits for its answer instead. The one
/// place a write runs again.
async fn answer_or_alone<T: Send + 'static>(
    store: &dyn Store,
    first: impl FnOnce(oneshot::Sender<Result<T>>) -> Write,
    alone: impl FnOnce(oneshot::Sender<Result<T>>) -> write::Job,
) -> Result<T> {
    match answer_from(store, first).await {
        Err(Error::Retry) => answer_from(store, |answer| Write::Alone(alone(answer))).await,
        answered => answered,
    }
}

/// Queues on `store` the write that `make` builds around its answer, and waits for that
/// answer.
async fn answer_from<T: Send + 'static>(
    store: &dyn Store,
    make: impl FnOnce(oneshot::Sender<Result<T>>) -> Write,
) -> Result<T> {
    let (answer, answered) = oneshot::channel();
    store.submit(make(answer)).await;
    answered.await.unwrap_or_else(|_| Err(dropped()))
}

/// A flow of the group committer's transaction, answering a `T`. It may run twice (see
/// [`Write::Alone`]): what it captures is cloned for the second run.
trait Flow<T>:
    for<'t> FnOnce(&'t mut dyn Tx, &'t mut Deltas) -> BoxFuture<'t, Result<T>> + Clone + Send + 'static
{
}

impl<T, F> Flow<T> for F where
    F: for<'t> FnOnce(&'t mut dyn Tx, &'t mut Deltas) -> BoxFuture<'t, Result<T>>
        + Clone
        + Send
        + 'static
{
}

/// The error of a write the committer dropped without answering.
fn dropped() -> Error {
    Error::Unavailable(anyhow::anyhow!("the write queue closed before answering"))
}
