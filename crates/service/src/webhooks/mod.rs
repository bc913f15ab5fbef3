//! Outbound webhooks: a program's endpoints (create, list, change, delete), their
//! delivery log and manual resend; [`worker`] sends the outbox, [`sender`] is its HTTP
//! client. The messages themselves are written by the flows of the changes they report
//! ([`reftrack_store::WebhookTx::record_events`]).

pub mod sender;
pub mod worker;

use std::net::IpAddr;
use std::time::Duration;

use futures::FutureExt;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::access::Caller;
use crate::error::refusals;
use crate::pages::{listed, probe, PageParams};
use crate::{App, Error, Listed, Result};
use reftrack_domain::access::Access;
use reftrack_domain::audit::{Action, Changes, Entry, Scope, Target};
use reftrack_domain::status::DeliveryStatus;
use reftrack_domain::time::DAY_MS;
use reftrack_domain::webhooks::{
    is_public, new_secret, next_attempt, test_message, Subscription, DISABLE_AFTER_MS, LEASE_MS,
    TEST_MESSAGE_TYPE,
};
use reftrack_store::webhooks::{
    AttemptRecord, ClaimedDelivery, Delivery, EndpointHealth, EndpointPatch, NewEndpoint, Resend,
    WebhookEndpoint,
};
use reftrack_store::Record;

/// Longest URL an endpoint may have.
const MAX_URL_CHARS: usize = 2000;

/// How long the check of a new URL waits for its host name to resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(3);

/// The body of the call that creates an endpoint.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookBody {
    /// Where messages are POSTed: an HTTP or HTTPS URL of a public address.
    pub url: String,
    /// The event types to receive, at least one.
    pub events: Vec<String>,
}

/// The body of the call that changes an endpoint; absent fields stay as they are.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookPatchBody {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    /// `false` stops sending (pending messages wait); `true` sends again, pending
    /// messages first, and clears the failure record.
    pub enabled: Option<bool>,
}

/// A new endpoint with its signing secret, shown only in this answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedWebhook {
    #[serde(flatten)]
    pub endpoint: WebhookEndpoint,
    /// `whsec_` and the base64 of the key the messages are signed with.
    pub secret: String,
}

fn webhook_missing() -> Error {
    Error::NotFound(Record::Webhook(0).not_found())
}

fn delivery_missing() -> Error {
    Error::NotFound("Delivery not found".into())
}

/// The refusal of a private target.
fn private_target(ip: IpAddr) -> Error {
    Error::invalid(format!(
        "url must not point to a loopback, private or link-local address ({ip}); \
         set REFTRACK_WEBHOOK_ALLOW_PRIVATE=1 to allow such targets"
    ))
}

fn subscription(events: &[String]) -> Result<String> {
    Ok(Subscription::of(events)
        .map_err(Error::Invalid)?
        .to_stored())
}

impl App {
    /// Whether endpoints may be on loopback, private or link-local addresses.
    pub fn private_webhook_targets(&self) -> bool {
        self.private_webhook_targets
    }

    /// An endpoint URL, checked: `http` or `https` with a host and no credentials, and
    /// unless private targets are allowed, neither an address nor a host name that
    /// resolves to one that is not public. A name that does not resolve now is accepted:
    /// each delivery checks its addresses again.
    async fn webhook_url(&self, raw: &str) -> Result<String> {
        let raw = raw.trim();
        if raw.chars().count() > MAX_URL_CHARS {
            return Err(Error::invalid(format!(
                "url must be at most {MAX_URL_CHARS} characters"
            )));
        }
        let invalid = || Error::invalid("url must be an http:// or https:// URL with a host");
        let url = url::Url::parse(raw).map_err(|_| invalid())?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid());
        }
        let host = url.host().ok_or_else(invalid)?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Error::invalid("url must not carry a user name or password"));
        }
        if !self.private_webhook_targets {
            match host {
                url::Host::Ipv4(ip) if !is_public(ip.into()) => {
                    return Err(private_target(ip.into()))
                }
                url::Host::Ipv6(ip) if !is_public(ip.into()) => {
                    return Err(private_target(ip.into()))
                }
                url::Host::Domain(name) => {
                    let port = url.port_or_known_default().unwrap_or(443);
                    let resolved = tokio::time::timeout(
                        RESOLVE_TIMEOUT,
                        tokio::net::lookup_host((name, port)),
                    )
                    .await;
                    if let Ok(Ok(addrs)) = resolved {
                        if let Some(a) = addrs.map(|a| a.ip()).find(|ip| !is_public(*ip)) {
                            return Err(private_target(a));
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(url.to_string())
    }

    /// Everything the endpoint use cases would refuse in an endpoint's `url` and
    /// `events`, in the form's order: they refuse the first, a page that was refused
    /// shows them all at once.
    pub async fn webhook_problems(&self, url: &str, events: &[String]) -> Vec<String> {
        refusals([
            Some(self.webhook_url(url).await.map(drop)),
            Some(subscription(events).map(drop)),
        ])
    }

    /// Creates an endpoint of a program; its secret is in this answer only.
    pub async fn create_webhook(
        &self,
        caller: &Caller,
        program_id: i64,
        b: WebhookBody,
    ) -> Result<CreatedWebhook> {
        self.allow(caller, Record::Program(program_id), Access::Change)
            .await?;
        let events = subscription(&b.events)?;
        let url = self.webhook_url(&b.url).await?;
        let secret = new_secret();
        let new = NewEndpoint {
            program_id,
            url,
            secret: secret.clone(),
            events,
        };
        let at = self.now_ms();
        let origin = &caller.origin;
        let audit = |_: Option<&WebhookEndpoint>, e: &WebhookEndpoint| {
            let entry = Entry::new(
                at,
                origin,
                Action::WebhookEndpointCreated,
                Scope::Program(e.program_id),
                Target::webhook_endpoint(e.id),
            );
            vec![entry.with_details(serde_json::json!({ "url": e.url, "events": e.events }))]
        };
        let endpoint = self.store.create_endpoint(&new, at, &audit).await?;
        Ok(CreatedWebhook { endpoint, secret })
    }

    /// One page of a program's endpoints.
    pub async fn list_webhooks(
        &self,
        caller: &Caller,
        program_id: i64,
        page: &PageParams,
    ) -> Result<Listed<WebhookEndpoint>> {
        let page = page.page()?;
        self.allow(caller, Record::Program(program_id), Access::Read)
            .await?;
        self.program(program_id).await?;
        let rows = self.store.endpoints(program_id, probe(page)).await?;
        Ok(listed(rows, page, |e| e.id))
    }

    /// Changes an endpoint's URL, event types or whether it is enabled.
    pub async fn update_webhook(
        &self,
        caller: &Caller,
        id: i64,
        b: WebhookPatchBody,
    ) -> Result<WebhookEndpoint> {
        self.allow(caller, Record::Webhook(id), Access::Change)
            .await?;
        let patch = EndpointPatch {
            events: b.events.as_deref().map(subscription).transpose()?,
            url: match b.url {
                Some(url) => Some(self.webhook_url(&url).await?),
                None => None,
            },
            enabled: b.enabled,
        };
        let at = self.now_ms();
        let origin = caller.origin.clone();
        self.write(move |tx, _| {
            async move {
                let old = tx.endpoint_locked(id).await?.ok_or_else(webhook_missing)?;
                let new = tx
                    .update_endpoint(id, &patch, at)
                    .await?
                    .ok_or_else(webhook_missing)?;
                let mut changes = Changes::new();
                changes
                    .field("url", &old.url, &new.url)
                    .field("events", &old.events, &new.events)
                    .field("enabled", &old.enabled, &new.enabled);
                if !changes.is_empty() {
                    let entry = Entry::new(
                        at,
                        &origin,
                        Action::WebhookEndpointUpdated,
                        Scope::Program(new.program_id),
                        Target::webhook_endpoint(id),
                    )
                    .with_details(changes.into_value());
                    tx.record_audit(&[entry]).await?;
                }
                Ok(new)
            }
            .boxed()
        })
        .await
    }

    /// Deletes an endpoint with its delivery log; nothing more is sent to it.
    pub async fn delete_webhook(&self, caller: &Caller, id: i64) -> Result<()> {
        self.allow(caller, Record::Webhook(id), Access::Change)
            .await?;
        let at = self.now_ms();
        let origin = caller.origin.clone();
        let deleted = self
            .write(move |tx, _| {
                async move {
                    let Some(old) = tx.endpoint_locked(id).await? else {
                        return Ok(false);
                    };
                    if !tx.delete_endpoint(id).await? {
                        return Ok(false);
                    }
                    let entry = Entry::new(
                        at,
                        &origin,
                        Action::WebhookEndpointDeleted,
                        Scope::Program(old.program_id),
                        Target::webhook_endpoint(id),
                    )
                    .with_details(serde_json::json!({ "url": old.url, "events": old.events }));
                    tx.record_audit(&[entry]).await?;
                    Ok(true)
                }
                .boxed()
            })
            .await?;
        if deleted {
            Ok(())
        } else {
            Err(webhook_missing())
        }
    }

    /// One endpoint the caller may read (404 otherwise).
    pub async fn webhook(&self, caller: &Caller, id: i64) -> Result<WebhookEndpoint> {
        self.allow(caller, Record::Webhook(id), Access::Read)
            .await?;
        self.store.endpoint(id).await?.ok_or_else(webhook_missing)
    }

    /// One page of an endpoint's deliveries, newest first, with their attempts.
    pub async fn webhook_deliveries(
        &self,
        caller: &Caller,
        id: i64,
        page: &PageParams,
    ) -> Result<Listed<Delivery>> {
        let page = page.page()?;
        self.webhook(caller, id).await?;
        let rows = self.store.deliveries(id, probe(page)).await?;
        Ok(listed(rows, page, |d| d.id))
    }

    /// An endpoint the caller may change that is enabled: 404, or 409 while it is
    /// disabled (nothing can be sent to it).
    async fn enabled_endpoint(&self, caller: &Caller, id: i64) -> Result<WebhookEndpoint> {
        self.allow(caller, Record::Webhook(id), Access::Change)
            .await?;
        let endpoint = self.store.endpoint(id).await?.ok_or_else(webhook_missing)?;
        if !endpoint.enabled {
            return Err(Error::Conflict(
                "The endpoint is disabled: enable it first (PATCH enabled=true)".into(),
            ));
        }
        Ok(endpoint)
    }

    /// Makes a delivery due now, whatever its status: the worker sends it at once, with
    /// its message id. 409 while an attempt of it is under way or the endpoint is
    /// disabled.
    pub async fn resend_delivery(
        &self,
        caller: &Caller,
        id: i64,
        delivery_id: i64,
    ) -> Result<Delivery> {
        self.enabled_endpoint(caller, id).await?;
        match self.store.resend(id, delivery_id, self.now_ms()).await? {
            Resend::Due => {}
            Resend::Missing => return Err(delivery_missing()),
            Resend::InFlight => {
                return Err(Error::Conflict(
                    "An attempt of this delivery is under way; try again when it has ended".into(),
                ))
            }
        }
        self.webhooks_due.notify_one();
        self.store
            .delivery(id, delivery_id)
            .await?
            .ok_or_else(delivery_missing)
    }

    /// Writes a test message (`webhook.test`) to an endpoint, due now, signed and
    /// delivered like any message; its delivery. 409 while the endpoint is disabled.
    pub async fn send_test_webhook(&self, caller: &Caller, id: i64) -> Result<Delivery> {
        let endpoint = self.enabled_endpoint(caller, id).await?;
        let at = self.now_ms();
        let payload = test_message(id, endpoint.program_id, at);
        let delivery_id = self
            .write(move |tx, _| {
                async move {
                    Ok(tx
                        .insert_delivery(id, TEST_MESSAGE_TYPE, &payload, at)
                        .await?)
                }
                .boxed()
            })
            .await?;
        self.webhooks_due.notify_one();
        self.store
            .delivery(id, delivery_id)
            .await?
            .ok_or_else(delivery_missing)
    }

    /// Whether a delivery is due now.
    async fn webhook_due(&self) -> Result<bool> {
        Ok(self.store.delivery_due(self.now_ms()).await?)
    }

    /// Reserves up to `limit` due deliveries for this process, at most `per_endpoint`
    /// of one endpoint counting those `in_flight` already (endpoint, count).
    async fn claim_deliveries(
        &self,
        limit: i64,
        per_endpoint: i64,
        in_flight: Vec<(i64, i64)>,
    ) -> Result<Vec<ClaimedDelivery>> {
        let now = self.now_ms();
        let token = rand::random::<i64>();
        self.write(move |tx, _| {
            async move {
                Ok(tx
                    .claim_deliveries(now, now + LEASE_MS, token, limit, per_endpoint, &in_flight)
                    .await?)
            }
            .boxed()
        })
        .await
    }

    /// Records what attempts came to: each delivery delivered, due again by the retry
    /// schedule, or failed after its last attempt; each endpoint's failure record, and an
    /// endpoint failing for five days disabled.
    async fn record_attempts(&self, done: Vec<(ClaimedDelivery, sender::Sent)>) -> Result<()> {
        let now = self.now_ms();
        let mut records = Vec::with_capacity(done.len());
        let mut health: Vec<EndpointHealth> = Vec::new();
        let mut by_time: Vec<&(ClaimedDelivery, sender::Sent)> = done.iter().collect();
        by_time.sort_by_key(|(_, s)| s.at);
        for (d, sent) in by_time {
            let attempts = d.attempts + 1;
            let (status, next) = if sent.ok() {
                (DeliveryStatus::Delivered, None)
            } else {
                match next_attempt(attempts, sent.at) {
                    Some(at) => (DeliveryStatus::Pending, Some(at)),
                    None => (DeliveryStatus::Failed, None),
                }
            };
            records.push(AttemptRecord {
                delivery_id: d.id,
                lease_token: d.lease_token,
                at: sent.at,
                status_code: sent.status_code,
                error: sent.error.clone(),
                status,
                next_attempt_at: next,
            });
            let at = match health.iter().position(|h| h.endpoint_id == d.endpoint_id) {
                Some(at) => at,
                None => {
                    health.push(EndpointHealth {
                        endpoint_id: d.endpoint_id,
                        succeeded: false,
                        failing_since: None,
                        disable: None,
                    });
                    health.len() - 1
                }
            };
            let h = &mut health[at];
            if sent.ok() {
                h.succeeded = true;
                h.failing_since = None;
            } else {
                h.failing_since = h.failing_since.or(Some(sent.at));
                let reason = format!(
                    "every delivery failed for {} days; last error: {}",
                    DISABLE_AFTER_MS / DAY_MS,
                    sent.error.as_deref().unwrap_or("unknown")
                );
                h.disable = Some((now - DISABLE_AFTER_MS, reason));
            }
        }
        for h in health.iter_mut().filter(|h| h.failing_since.is_none()) {
            h.disable = None;
        }
        self.write(move |tx, _| {
            async move { Ok(tx.record_attempts(&records, &health, now).await?) }.boxed()
        })
        .await
    }
}
