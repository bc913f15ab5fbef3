//! Outbound webhooks: the event types an endpoint subscribes to, the retry schedule and
//! the rule that disables an endpoint, which addresses a delivery may not reach, and the
//! Standard Webhooks signature.

use std::fmt;
use std::net::IpAddr;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What happened, as an endpoint subscribes to it and reads it in `type`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, utoipa::ToSchema,
)]
pub enum EventType {
    /// A real lead was recorded.
    #[serde(rename = "lead.created")]
    LeadCreated,
    /// A real sale was recorded.
    #[serde(rename = "sale.created")]
    SaleCreated,
    /// A sale was refunded, fully or in part.
    #[serde(rename = "sale.refunded")]
    SaleRefunded,
    /// A commission was created: with its sale, or as a clawback of a refund.
    #[serde(rename = "commission.created")]
    CommissionCreated,
    /// A commission became approved: early by an owner, or once its hold passed.
    #[serde(rename = "commission.approved")]
    CommissionApproved,
    /// A commission was reversed by the full refund of its sale.
    #[serde(rename = "commission.reversed")]
    CommissionReversed,
    /// Someone applied to the program.
    #[serde(rename = "partner.applied")]
    PartnerApplied,
    /// A partner was approved in the program, or added to it as approved.
    #[serde(rename = "partner.approved")]
    PartnerApproved,
    /// A payout was created.
    #[serde(rename = "payout.created")]
    PayoutCreated,
    /// A payout was marked paid.
    #[serde(rename = "payout.paid")]
    PayoutPaid,
}

impl EventType {
    /// Every type, in the order the docs list them.
    pub const ALL: [EventType; 10] = [
        EventType::LeadCreated,
        EventType::SaleCreated,
        EventType::SaleRefunded,
        EventType::CommissionCreated,
        EventType::CommissionApproved,
        EventType::CommissionReversed,
        EventType::PartnerApplied,
        EventType::PartnerApproved,
        EventType::PayoutCreated,
        EventType::PayoutPaid,
    ];

    /// The name in `type` and in an endpoint's `events`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::LeadCreated => "lead.created",
            EventType::SaleCreated => "sale.created",
            EventType::SaleRefunded => "sale.refunded",
            EventType::CommissionCreated => "commission.created",
            EventType::CommissionApproved => "commission.approved",
            EventType::CommissionReversed => "commission.reversed",
            EventType::PartnerApplied => "partner.applied",
            EventType::PartnerApproved => "partner.approved",
            EventType::PayoutCreated => "payout.created",
            EventType::PayoutPaid => "payout.paid",
        }
    }

    /// The type of a name; `None` for an unknown one.
    pub fn parse(name: &str) -> Option<EventType> {
        EventType::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Every name, comma-separated (for messages).
    pub fn names() -> String {
        EventType::ALL.map(EventType::as_str).join(", ")
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The event types an endpoint subscribes to, stored as their names, comma-separated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription(Vec<EventType>);

impl Subscription {
    /// The subscription to `names`: at least one, each a known type (duplicates are
    /// dropped). The error names the first unknown one.
    pub fn of(names: &[String]) -> Result<Subscription, String> {
        if names.is_empty() {
            return Err(format!(
                "events must list at least one event type: {}",
                EventType::names()
            ));
        }
        let mut types = Vec::new();
        for name in names {
            let t = EventType::parse(name.trim()).ok_or_else(|| {
                format!(
                    "events: unknown event type {name:?}; known types: {}",
                    EventType::names()
                )
            })?;
            if !types.contains(&t) {
                types.push(t);
            }
        }
        types.sort();
        Ok(Subscription(types))
    }

    /// A stored subscription; names it does not know (none are written) are skipped.
    pub fn stored(text: &str) -> Subscription {
        Subscription(text.split(',').filter_map(EventType::parse).collect())
    }

    /// The stored form.
    pub fn to_stored(&self) -> String {
        self.0
            .iter()
            .map(|t| t.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Whether it includes `t`.
    pub fn includes(&self, t: EventType) -> bool {
        self.0.contains(&t)
    }

    /// The types, in the order of [`EventType::ALL`].
    pub fn types(&self) -> &[EventType] {
        &self.0
    }
}

/// Longest one attempt may take, from connecting to the end of the answer.
pub const ATTEMPT_TIMEOUT_MS: i64 = 10_000;

/// How long a claimed delivery is reserved for the process that claimed it: longer than
/// an attempt may take, so that no other process starts the same attempt; a process that
/// died with the delivery in flight leaves it to be claimed again once this has passed.
pub const LEASE_MS: i64 = 20_000;

/// The waits before the 2nd, 3rd, … attempt, each after the one before failed: 5
/// seconds, 5 minutes, 30 minutes, 2, 5, 10 and 10 hours. Eight attempts in all, the
/// last about 27.6 hours after the first.
pub const RETRY_DELAYS_MS: [i64; 7] = [
    5_000,
    5 * 60_000,
    30 * 60_000,
    2 * 3_600_000,
    5 * 3_600_000,
    10 * 3_600_000,
    10 * 3_600_000,
];

/// An endpoint whose attempts have all failed for this long is disabled.
pub const DISABLE_AFTER_MS: i64 = 5 * 24 * 3_600_000;

/// When to try a delivery again after its `attempts`-th attempt (counting that one)
/// failed at `at`; `None` when that was the last.
pub fn next_attempt(attempts: i64, at: i64) -> Option<i64> {
    let index = usize::try_from(attempts.checked_sub(1)?).ok()?;
    RETRY_DELAYS_MS.get(index).map(|delay| at + delay)
}

/// Whether a delivery may connect to `ip` when private targets are not allowed: only
/// globally routable unicast addresses. Loopback, private, link-local, shared (CGNAT),
/// documentation, benchmarking and reserved ranges, multicast, and IPv6 addresses that
/// map or embed one of those are refused.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => !v4.is_multicast() && ip_rfc::global_v4(&v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) reach IPv4 addresses through a
            // translator; IPv4-compatible (::/96) is deprecated and never global.
            let translated = (first == 0x64 && v6.segments()[1] == 0xff9b) || first == 0x2002;
            let compatible = v6.segments()[..6].iter().all(|s| *s == 0);
            !v6.is_multicast() && !translated && !compatible && ip_rfc::global_v6(&v6)
        }
    }
}

/// A new endpoint secret: `whsec_` and the base64 of 24 random bytes.
pub fn new_secret() -> String {
    let bytes: [u8; 24] = rand::random();
    format!("whsec_{}", BASE64.encode(bytes))
}

/// The type of the message an owner sends to try an endpoint: not an event, so no
/// endpoint subscribes to it, and it is sent to the one endpoint it names.
pub const TEST_MESSAGE_TYPE: &str = "webhook.test";

/// The body of a test message to endpoint `endpoint_id` of program `program_id`, sent at
/// `at`: the envelope of every message, its `data` naming the endpoint.
pub fn test_message(endpoint_id: i64, program_id: i64, at: i64) -> String {
    serde_json::json!({
        "type": TEST_MESSAGE_TYPE,
        "timestamp": crate::time::iso(at),
        "data": {
            "endpoint_id": endpoint_id,
            "program_id": program_id,
            "message": "A test message from Reftrack"
        }
    })
    .to_string()
}

/// A new message id (`webhook-id`): `msg_` and 24 random alphanumeric characters.
pub fn new_message_id() -> String {
    use rand::distributions::{Alphanumeric, DistString};
    format!(
        "msg_{}",
        Alphanumeric.sample_string(&mut rand::thread_rng(), 24)
    )
}

/// The `webhook-signature` of a message by the Standard Webhooks scheme: `v1,` and the
/// base64 of the HMAC-SHA256, keyed with the base64-decoded part of the secret after
/// `whsec_`, of `id.timestamp.body`. `None` for a secret that is not base64.
pub fn signature(secret: &str, message_id: &str, timestamp_s: i64, body: &str) -> Option<String> {
    let key = BASE64
        .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
        .ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(format!("{message_id}.{timestamp_s}.{body}").as_bytes());
    Some(format!("v1,{}", BASE64.encode(mac.finalize().into_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_as_the_reference_implementation() {
        // The example of the Standard Webhooks reference libraries.
        assert_eq!(
            signature(
                "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
                "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk",
                1649367553,
                r#"{"email":"test@example.com","username":"test_user"}"#
            )
            .as_deref(),
            Some("v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw=")
        );
        assert_eq!(signature("whsec_not base64!", "m", 1, "{}"), None);
    }

    #[test]
    fn secrets_decode_to_24_bytes() {
        let s = new_secret();
        let raw = BASE64.decode(s.strip_prefix("whsec_").unwrap()).unwrap();
        assert_eq!(raw.len(), 24);
        assert_ne!(new_secret(), s);
        assert!(new_message_id().starts_with("msg_"));
        assert_eq!(new_message_id().len(), 28);
    }

    #[test]
    fn schedule_spans_more_than_a_day_then_gives_up() {
        assert_eq!(next_attempt(1, 1000), Some(6000));
        assert_eq!(next_attempt(2, 0), Some(300_000));
        let mut at = 0;
        let mut attempts = 1;
        while let Some(next) = next_attempt(attempts, at) {
            at = next;
            attempts += 1;
        }
        assert_eq!(attempts, 8);
        assert!(at > 24 * 3_600_000, "last attempt at {at} ms");
        assert_eq!(next_attempt(0, 0), None);
        assert_eq!(next_attempt(9, 0), None);
    }

    #[test]
    fn only_public_addresses_pass() {
        for refused in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "192.0.2.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:a00:1::1",
            "2001:db8::1",
        ] {
            assert!(!is_public(refused.parse().unwrap()), "{refused} passed");
        }
        for allowed in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(allowed.parse().unwrap()), "{allowed} refused");
        }
    }

    #[test]
    fn names_serialize_as_written() {
        for t in EventType::ALL {
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
            assert_eq!(EventType::parse(t.as_str()), Some(t));
        }
        assert_eq!(EventType::parse("sale.made"), None);
    }

    #[test]
    fn subscriptions_name_unknown_types() {
        let s = Subscription::of(&["sale.created".into(), "lead.created".into()]).unwrap();
        assert_eq!(s.to_stored(), "lead.created,sale.created");
        assert_eq!(Subscription::stored(&s.to_stored()), s);
        assert!(s.includes(EventType::SaleCreated));
        assert!(!s.includes(EventType::PayoutPaid));
        let e = Subscription::of(&["sale.made".into()]).unwrap_err();
        assert!(e.contains("\"sale.made\""), "{e}");
        assert!(Subscription::of(&[]).is_err());
        let dup = Subscription::of(&["payout.paid".into(), "payout.paid".into()]).unwrap();
        assert_eq!(dup.types(), &[EventType::PayoutPaid]);
    }
}
