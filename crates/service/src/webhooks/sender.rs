//! The webhook sender: one kept HTTP client (connections reused per endpoint) that signs
//! each message by the Standard Webhooks scheme and POSTs it, within the attempt's time
//! limit, never following a redirect, and connecting only to public addresses unless
//! private targets are allowed: a host name's addresses are checked by the client's own
//! resolver, at each connection, so that a name re-pointed after the endpoint was created
//! cannot reach an inner address.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use reftrack_domain::time::now_ms;
use reftrack_domain::webhooks::{is_public, signature, ATTEMPT_TIMEOUT_MS};
use reftrack_store::webhooks::ClaimedDelivery;

/// Most bytes of an answer read (and dropped), so that its connection can be reused.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// What one attempt came to.
#[derive(Debug, Clone)]
pub struct Sent {
    /// When it started (by the service's clock).
    pub at: i64,
    /// The endpoint's status, if it answered.
    pub status_code: Option<i64>,
    /// Why it failed; `None` when the endpoint answered 2xx.
    pub error: Option<String>,
}

impl Sent {
    /// Whether the endpoint accepted the message.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
}

/// Resolves host names to their public addresses only (every address when private
/// targets are allowed); a name with none is an error.
struct PublicResolver {
    allow_private: bool,
}

impl Resolve for PublicResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| allow_private || is_public(a.ip()))
                .collect();
            if allowed.is_empty() {
                let what = if found.is_empty() {
                    "no address"
                } else {
                    "only loopback, private or link-local addresses"
                };
                return Err(format!("{} resolves to {what}", name.as_str()).into());
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// The HTTP client of the webhook worker.
pub struct Sender {
    client: reqwest::Client,
    allow_private: bool,
}

impl Sender {
    /// A sender; `allow_private` lets it reach loopback, private and link-local
    /// addresses.
    pub fn new(allow_private: bool) -> Self {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(ATTEMPT_TIMEOUT_MS as u64))
            .connect_timeout(Duration::from_millis(ATTEMPT_TIMEOUT_MS as u64))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .pool_idle_timeout(Duration::from_secs(60))
            .user_agent(concat!("Reftrack-Webhooks/", env!("CARGO_PKG_VERSION")))
            .dns_resolver(Arc::new(PublicResolver { allow_private }))
            .build()
            .expect("the webhook HTTP client builds");
        Sender {
            client,
            allow_private,
        }
    }

    /// Sends one delivery once, started at `at`: a POST of its body, signed.
    pub async fn send(&self, d: &ClaimedDelivery, at: i64) -> Sent {
        let failed = |status_code: Option<i64>, error: String| Sent {
            at,
            status_code,
            error: Some(error),
        };
        // Addresses written in the URL reach no resolver: they are checked here.
        if let Some(ip) = literal_address(&d.url) {
            if !self.allow_private && !is_public(ip) {
                return failed(
                    None,
                    format!("refused: {ip} is a loopback, private or link-local address"),
                );
            }
        }
        // Receivers compare the signature's timestamp with their own clock.
        let timestamp = now_ms() / 1000;
        let Some(signed) = signature(&d.secret, &d.message_id, timestamp, &d.payload) else {
            return failed(None, "the endpoint's secret is not base64".into());
        };
        let request = self
            .client
            .post(&d.url)
            .header("content-type", "application/json")
            .header("webhook-id", &d.message_id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signed)
            .body(d.payload.clone());
        let mut answer = match request.send().await {
            Ok(a) => a,
            Err(e) => return failed(None, describe(&e)),
        };
        let status = answer.status();
        // The rest of the answer is read, up to a bound, so that the connection is kept.
        let mut read = 0;
        while read < MAX_ANSWER_BYTES {
            match answer.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                Ok(None) => break,
                Err(e) if status.is_success() => {
                    tracing::debug!(error = %e, "webhook answer cut short after its status");
                    break;
                }
                Err(_) => break,
            }
        }
        let code = Some(i64::from(status.as_u16()));
        if status.is_success() {
            Sent {
                at,
                status_code: code,
                error: None,
            }
        } else {
            failed(code, format!("HTTP {}", status.as_u16()))
        }
    }
}

/// The address a URL names by number, if it does.
fn literal_address(url: &str) -> Option<IpAddr> {
    match url::Url::parse(url).ok()?.host()? {
        url::Host::Ipv4(ip) => Some(ip.into()),
        url::Host::Ipv6(ip) => Some(ip.into()),
        url::Host::Domain(_) => None,
    }
}

/// A failed request in a few words: timeout, connection, or the error with its causes.
fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return format!("timed out after {} s", ATTEMPT_TIMEOUT_MS / 1000);
    }
    let mut text = if e.is_connect() {
        "connection failed".to_string()
    } else {
        "request failed".to_string()
    };
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
