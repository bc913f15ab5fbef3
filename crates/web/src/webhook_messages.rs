//! The messages Reftrack sends to a program's webhook endpoints, as the OpenAPI
//! document's `webhooks` section: one entry per event type, with the Standard Webhooks
//! headers and the body `{type, timestamp, data}`, whose `data` refers to the schemas the
//! management API's answers already use. A client generator reads the payload types from
//! here; `docs/webhooks.md` says when each is sent.

use serde_json::{json, Value};
use utoipa::openapi::{OpenApi, Paths};

use reftrack_domain::webhooks::{EventType, TEST_MESSAGE_TYPE};

/// A reference to the component schema `name`.
fn schema(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// A tracking event of the events list (`event_type` fixed) with the fields a message
/// adds to it.
fn listed_event(component: &str, event_type: &str, added: Value) -> Value {
    json!({ "allOf": [
        schema(component),
        {
            "type": "object",
            "required": ["event_type"],
            "properties": { "event_type": { "type": "string", "enum": [event_type] } }
        },
        added,
    ]})
}

/// What `data` holds in a message of `kind`, and what the entry says of it.
fn data_of(kind: EventType) -> (Value, &'static str) {
    let id = json!({ "type": "integer", "format": "int64" });
    let nullable_id = json!({ "type": ["integer", "null"], "format": "int64" });
    match kind {
        EventType::LeadCreated => (
            listed_event(
                "LeadEvent",
                "lead",
                json!({
                    "type": "object",
                    "required": ["program_id", "partner_id"],
                    "properties": {
                        "program_id": id,
                        "partner_id": nullable_id,
                    },
                }),
            ),
            "A real lead was recorded (attributed or not: `partner_id` is null when not).",
        ),
        EventType::SaleCreated | EventType::SaleRefunded => (
            listed_event(
                "ConversionEvent",
                "conversion",
                json!({
                    "type": "object",
                    "required": ["program_id", "partner_id", "customer_key", "commission_id", "refunded_cents"],
                    "properties": {
                        "program_id": id,
                        "partner_id": nullable_id,
                        "customer_key": { "type": ["string", "null"] },
                        "commission_id": nullable_id,
                        "refunded_cents": { "type": "integer", "format": "int64" },
                    },
                }),
            ),
            if kind == EventType::SaleCreated {
                "A real sale was recorded (tracking API, Stripe, renewals)."
            } else {
                "A refund of a real sale was recorded; the sale as it stands after it."
            },
        ),
        EventType::CommissionCreated => (
            schema("CommissionRow"),
            "A commission was created: with its sale or its lead, as an owner's bonus, or as the clawback of a refund after payment.",
        ),
        EventType::CommissionApproved => (
            schema("CommissionRow"),
            "A commission was approved: early by an owner, or at the end of its hold.",
        ),
        EventType::CommissionReversed => (
            schema("CommissionRow"),
            "The full refund of its sale reversed a commission before payment.",
        ),
        EventType::PartnerApplied => (
            schema("ProgramPartnerRow"),
            "Someone applied to the program.",
        ),
        EventType::PartnerApproved => (
            schema("ProgramPartnerRow"),
            "A partner became approved in the program, or was added as approved.",
        ),
        EventType::PayoutCreated => (
            schema("Payout"),
            "A payout was created (with its items).",
        ),
        EventType::PayoutPaid => (
            schema("Payout"),
            "A payout was marked paid (with its items).",
        ),
    }
}

/// The entry of messages of type `name` whose `data` is `data`.
fn message(name: &str, summary: &str, data: Value) -> Value {
    let header = |name: &str, description: &str| {
        json!({
            "name": name,
            "in": "header",
            "required": true,
            "description": description,
            "schema": { "type": "string" },
        })
    };
    json!({ "post": {
        "tags": ["outbound webhooks"],
        "operationId": format!("webhook_{}", name.replace('.', "_")),
        "summary": summary,
        "description": "Sent to each enabled endpoint of the program that receives this type, \
                        signed by the Standard Webhooks scheme; see `docs/webhooks.md`.",
        "parameters": [
            header("webhook-id", "The message's id (`msg_…`), the same on every attempt: deduplicate on it."),
            header("webhook-timestamp", "When this attempt was sent, in Unix seconds."),
            header("webhook-signature", "`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the endpoint's secret (base64 after `whsec_`)."),
        ],
        "requestBody": {
            "required": true,
            "content": { "application/json": { "schema": {
                "type": "object",
                "required": ["type", "timestamp", "data"],
                "properties": {
                    "type": { "type": "string", "enum": [name] },
                    "timestamp": {
                        "type": "string",
                        "format": "date-time",
                        "description": "When the change happened (UTC).",
                    },
                    "data": data,
                },
            }}},
        },
        "responses": {
            "2XX": { "description": "Received: the delivery is done." },
            "default": {
                "description": "Anything else, or no 2xx within 10 s: sent again later, \
                                on the schedule of `docs/webhooks.md`.",
            },
        },
    }})
}

/// Adds the `webhooks` section to `doc`.
pub fn add_to(doc: &mut OpenApi) {
    let mut messages = serde_json::Map::new();
    for kind in EventType::ALL {
        let (data, summary) = data_of(kind);
        messages.insert(kind.as_str().into(), message(kind.as_str(), summary, data));
    }
    let test = json!({
        "type": "object",
        "required": ["endpoint_id", "program_id", "message"],
        "properties": {
            "endpoint_id": { "type": "integer", "format": "int64" },
            "program_id": { "type": "integer", "format": "int64" },
            "message": { "type": "string" },
        },
    });
    messages.insert(
        TEST_MESSAGE_TYPE.into(),
        message(
            TEST_MESSAGE_TYPE,
            "A test message an owner sent to try the endpoint, whatever types it receives.",
            test,
        ),
    );
    let paths: Paths =
        serde_json::from_value(Value::Object(messages)).expect("the webhook messages are a Paths");
    doc.webhooks = Some(paths);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_type_and_the_test_message_have_an_entry() {
        let mut doc = OpenApi::default();
        add_to(&mut doc);
        let value = serde_json::to_value(&doc).unwrap();
        let webhooks = value["webhooks"].as_object().unwrap();
        assert_eq!(webhooks.len(), EventType::ALL.len() + 1);
        for kind in EventType::ALL {
            let body = &webhooks[kind.as_str()]["post"]["requestBody"]["content"]
                ["application/json"]["schema"];
            assert_eq!(body["properties"]["type"]["enum"], json!([kind.as_str()]));
        }
    }
}
