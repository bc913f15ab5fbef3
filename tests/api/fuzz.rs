//! Hostile input, property-tested: the request parsers and the tracking and webhook
//! handlers take arbitrary input without panicking, and the HTTP surface answers it
//! with 2xx or 4xx only. Bounded so that CI stays quick: `REFTRACK_FUZZ_CASES` sets the
//! number of cases per target (default 256; the pure parsers run eight times as many).

use crate::common::*;
use axum::body::Body;
use axum::http::Request;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use reftrack::domain::attribution::extract_aff;
use reftrack::domain::stripe::{parse_event, verify_signature};
use reftrack::http::fields::{
    Amount, Id, Positive, Text, MAX_AMOUNT_CENTS, MAX_ID_LEN, MAX_TEXT_LEN,
};
use reftrack::http::track::{ClickRequest, LeadRequest, RefundRequest, SaleRequest};
use serde::Deserialize;
use serde_json::{json, Map, Value};

fn cases() -> u32 {
    std::env::var("REFTRACK_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

/// Strings that are hard on parsers: any Unicode, control characters, long runs.
fn nasty_string() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,40}",
        "[\\x00-\\x1f\"\\\\%&=?#/:]{0,20}",
        Just(String::new()),
        Just(" ".repeat(300)),
        "[a-z]{250,300}",
        Just("\u{feff}\u{202e}\u{0}".to_string()),
    ]
}

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop_oneof![
            Just(0i64),
            Just(-1),
            Just(1),
            Just(i64::MAX),
            Just(i64::MIN)
        ]
        .prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        Just(json!(1e300)),
        Just(json!(u64::MAX)),
        nasty_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn any_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(
        prop_oneof![
            Just("affiliate_url".to_string()),
            Just("click_id".to_string()),
            Just("customer_key".to_string()),
            Just("additional_data".to_string()),
            Just("program_id".to_string()),
            Just("test_mode".to_string()),
            Just("event_name".to_string()),
            "[a-z_]{1,12}",
        ],
        any_json(),
        0..8,
    )
    .prop_map(|m| m.into_iter().collect())
}

#[test]
fn field_types_and_requests_take_any_json() {
    runner(cases() * 8)
        .run(&(any_object(), any_json()), |(map, value)| {
            if let Ok(Id(Some(id))) = Id::deserialize(&value) {
                prop_assert!(!id.is_empty() && id.len() <= MAX_ID_LEN);
            }
            if let Ok(Text(Some(text))) = Text::deserialize(&value) {
                prop_assert!(text.len() <= MAX_TEXT_LEN);
            }
            if let Ok(Positive(Some(n))) = Positive::deserialize(&value) {
                prop_assert!(n > 0);
            }
            if let Ok(Amount(Some(n))) = Amount::deserialize(&value) {
                prop_assert!(n > 0 && n <= MAX_AMOUNT_CENTS);
            }
            let body = serde_json::Value::Object(map);
            let _ = ClickRequest::deserialize(&body);
            let _ = LeadRequest::deserialize(&body);
            let _ = RefundRequest::deserialize(&body);
            if let Ok(sale) = SaleRequest::deserialize(&body) {
                let extra = sale.additional_data.unwrap_or_default();
                prop_assert!(extra.program_id.0.is_none_or(|id| id > 0));
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn extract_aff_takes_any_string() {
    let url_like = (
        prop_oneof![
            Just("https://"),
            Just("http://"),
            Just(""),
            Just("javascript:"),
            Just("data:")
        ],
        "[a-zA-Z0-9.\\-\\[\\]:@]{0,30}",
        "[/?&=a-z0-9%#+ ]{0,60}",
    )
        .prop_map(|(scheme, host, rest)| format!("{scheme}{host}{rest}"));
    runner(cases() * 8)
        .run(&prop_oneof![url_like, nasty_string()], |s| {
            if let Ok(code) = extract_aff(&s) {
                prop_assert!(!code.trim().is_empty());
                prop_assert_eq!(code.trim(), code.as_str());
            }
            Ok(())
        })
        .unwrap();
}

/// Stripe-shaped events with arbitrary values where Stripe puts amounts, ids and metadata.
fn stripe_like() -> impl Strategy<Value = Vec<u8>> {
    let kind = prop_oneof![
        Just("checkout.session.completed"),
        Just("checkout.session.async_payment_succeeded"),
        Just("invoice.payment_succeeded"),
        Just("invoice.paid"),
        Just("charge.refunded"),
        Just("account.updated"),
        Just("something.else"),
    ];
    let metadata = prop_oneof![
        any_json(),
        (any_json(), any_json(), any_json()).prop_map(|(c, k, p)| json!({
            "tracker_click_id": c, "tracker_customer_key": k, "program_id": p
        })),
    ];
    (kind, any_json(), any_json(), any_json(), metadata, any_json(), any_object())
        .prop_map(|(kind, amount, id, status, metadata, lines, extra)| {
            let mut object = json!({
                "id": id, "payment_status": status, "amount_total": amount, "amount_paid": amount,
                "amount": amount, "amount_refunded": amount, "currency": "usd", "metadata": metadata,
                "subscription": id, "invoice": id, "payment_intent": id, "charge": id,
                "billing_reason": status, "lines": {"data": lines}, "charges_enabled": status,
                "subscription_details": {"metadata": metadata},
            });
            for (k, v) in extra {
                object[k] = v;
            }
            serde_json::to_vec(&json!({"id": "evt_1", "type": kind, "data": {"object": object}}))
                .unwrap()
        })
}

#[test]
fn stripe_parser_and_signature_take_any_input() {
    let bodies = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        any_json().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        stripe_like(),
    ];
    let header = prop_oneof![
        Just(None),
        ".{0,80}".prop_map(Some),
        ("-?[0-9]{1,20}", "[0-9a-f]{0,70}").prop_map(|(t, s)| Some(format!("t={t},v1={s},v0=x"))),
    ];
    runner(cases() * 8)
        .run(
            &(bodies, header, ".{0,40}", any::<i64>()),
            |(body, header, secret, now)| {
                let _ = parse_event(&body);
                prop_assert!(verify_signature(header.as_deref(), &body, &secret, now).is_err());
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn a_signed_payload_verifies_and_any_change_does_not() {
    use hmac::{Hmac, Mac};
    runner(cases())
        .run(
            &(
                prop::collection::vec(any::<u8>(), 0..100),
                "[ -~]{1,30}",
                0usize..100,
                any::<u8>(),
            ),
            |(body, secret, at, byte)| {
                let t = 1_700_000_000i64;
                let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
                mac.update(format!("{t}.").as_bytes());
                mac.update(&body);
                let header = format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()));
                prop_assert!(verify_signature(Some(&header), &body, &secret, t + 10).is_ok());
                prop_assert!(verify_signature(Some(&header), &body, &secret, t + 10_000).is_err());
                let mut changed = body.clone();
                if changed.is_empty() {
                    changed.push(byte);
                } else {
                    let i = at % changed.len();
                    changed[i] ^= byte.max(1);
                }
                prop_assert!(verify_signature(Some(&header), &changed, &secret, t + 10).is_err());
                Ok(())
            },
        )
        .unwrap();
}

/// What the HTTP fuzzer may put in a field: mostly valid values, so that requests get
/// deep into the handlers, sometimes invalid ones, sometimes anything at all.
fn field(valid: Vec<Value>, invalid: Vec<Value>) -> impl Strategy<Value = Value> {
    prop_oneof![
        10 => prop::sample::select(valid),
        2 => prop::sample::select(invalid),
        1 => any_json(),
    ]
}

#[test]
fn tracking_and_webhook_endpoints_answer_hostile_requests_with_2xx_or_4xx() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (app, seed, click_id) = rt.block_on(async {
        let app = TestApp::sqlite().await;
        let seed = app
            .seed_with(json!({"stripe_webhook_secret": "whsec_fuzz"}))
            .await;
        let click_id = app.lead(&seed, "k").await;
        app.post_auth(
            "/api/v1/track/sale",
            &seed.api_token,
            json!({"transaction_id": "t1", "amount_cents": 10_000_000, "customer_key": "k"}),
        )
        .await
        .expect(200);
        (app, seed, click_id)
    });
    let pid = seed.program_id;
    let url = format!("https://shop.example/?aff={}", seed.short_link);
    let ids = |valid: Vec<Value>| field(valid, vec![json!(""), json!(7), json!("x".repeat(300))]);
    let extra = field(
        vec![
            Value::Null,
            Value::Null,
            json!({"test_mode": true, "program_id": pid}),
            json!({"test_mode": false}),
            json!({"program_id": pid}),
        ],
        vec![
            json!({"program_id": 999_999}),
            json!({"test_mode": true}),
            json!(5),
        ],
    );
    let body = (
        field(
            vec![json!(url)],
            vec![
                json!("https://x/?aff="),
                json!("not a url"),
                json!("https://x/?aff=nobody"),
            ],
        ),
        ids(vec![json!(click_id.clone()), Value::Null]),
        ids(vec![json!("k"), json!("k2")]),
        prop_oneof![2 => "t[0-9]{1,5}".prop_map(Value::String), 1 => ids(vec![json!("t1")])],
        field(
            vec![json!(1), json!(100), json!(4999), json!(123_456)],
            vec![
                json!(0),
                json!(-5),
                json!(1_000_000_000_001i64),
                json!("100"),
                json!(1.5),
            ],
        ),
        field(
            vec![Value::Null, json!("usd"), json!("JPY"), json!("eur")],
            vec![json!("us"), json!(1)],
        ),
        field(
            vec![Value::Null, json!(false), json!(true)],
            vec![json!("true")],
        ),
        ids(vec![Value::Null, json!("sub_1")]),
        extra,
        prop_oneof![3 => Just(Map::new()), 1 => any_object()],
        (
            ids(vec![json!("u@example.com"), json!("U@EXAMPLE.COM ")]),
            ids(vec![json!("a password"), json!("")]),
        ),
    )
        .prop_map(
            |(aff, click, key, txn, amount, currency, recurring, sub, extra, rest, login)| {
                let mut body: Map<String, Value> = rest;
                for (k, v) in [
                    ("email", login.0),
                    ("password", login.1),
                    ("affiliate_url", aff),
                    ("click_id", click.clone()),
                    ("existing_click_id", click),
                    ("customer_key", key),
                    ("transaction_id", txn.clone()),
                    ("amount_cents", amount.clone()),
                    ("refund_amount_cents", amount),
                    ("currency", currency),
                    ("is_recurring", recurring),
                    ("subscription_id", sub),
                    ("additional_data", extra),
                ] {
                    body.insert(k.into(), v);
                }
                Value::Object(body)
            },
        );
    let endpoint = prop::sample::select(vec![
        "/api/v1/track/click",
        "/api/v1/track/lead",
        "/api/v1/track/sale",
        "/api/v1/track/refund",
        "/api/tracking/sale",
        "/api/auth/login",
    ]);
    let auth = prop_oneof![
        6 => Just(Some(format!("Bearer {}", seed.api_token))),
        1 => Just(None),
        1 => Just(Some("Bearer rtk_wrong".to_string())),
        1 => Just(Some("Basic Zm9vOmJhcg==".to_string())),
    ];
    let raw = prop_oneof![
        8 => body.prop_map(|b| serde_json::to_vec(&b).unwrap()),
        1 => any_json().prop_map(|b| serde_json::to_vec(&b).unwrap()),
        1 => prop::collection::vec(any::<u8>(), 0..100),
    ];
    let content_type = prop::sample::select(vec![
        "application/json",
        "application/json",
        "application/json; charset=utf-8",
        "text/plain",
        "application/vnd.api+json",
    ]);
    let origin = prop::sample::select(vec![None, Some("https://evil.example"), Some("null")]);
    let statuses = std::sync::Mutex::new(std::collections::BTreeMap::<(&str, u16), u32>::new());
    runner(cases())
        .run(
            &(endpoint, auth, raw, content_type, origin),
            |(path, auth, raw, content_type, origin)| {
                let mut req = Request::post(path).header("content-type", content_type);
                if let Some(a) = &auth {
                    req = req.header("authorization", a.as_str());
                }
                if let Some(o) = origin {
                    req = req.header("origin", o);
                }
                let r = rt.block_on(app.raw(req.body(Body::from(raw.clone())).unwrap()));
                *statuses
                    .lock()
                    .unwrap()
                    .entry((path, r.status.as_u16()))
                    .or_default() += 1;
                prop_assert!(
                    r.status.is_success() || r.status.is_client_error(),
                    "{path} answered {} {} to {}",
                    r.status,
                    r.body,
                    String::from_utf8_lossy(&raw)
                );
                if !r.status.is_success() {
                    prop_assert!(r.body["error"].is_string(), "{path}: {}", r.body);
                }
                Ok(())
            },
        )
        .unwrap();

    eprintln!(
        "answers by endpoint and status: {:?}",
        statuses.lock().unwrap()
    );

    // Webhooks: any body, any signature header; and validly signed hostile events.
    let signed = prop_oneof![
        stripe_like(),
        any_json().prop_map(|b| serde_json::to_vec(&b).unwrap()),
        prop::collection::vec(any::<u8>(), 0..100),
    ];
    runner(cases())
        .run(&(signed, any::<bool>()), |(body, sign)| {
            use hmac::{Hmac, Mac};
            let t = chrono::Utc::now().timestamp();
            let signature = if sign {
                let mut mac = Hmac::<sha2::Sha256>::new_from_slice(b"whsec_fuzz").unwrap();
                mac.update(format!("{t}.").as_bytes());
                mac.update(&body);
                format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
            } else {
                format!("t={t},v1=00")
            };
            let req = Request::post(format!("/api/webhooks/stripe/{pid}"))
                .header("content-type", "application/json")
                .header("stripe-signature", signature)
                .body(Body::from(body.clone()))
                .unwrap();
            let r = rt.block_on(app.raw(req));
            prop_assert!(
                r.status.is_success() || r.status.is_client_error(),
                "webhook answered {} {} to {}",
                r.status,
                r.body,
                String::from_utf8_lossy(&body)
            );
            Ok(())
        })
        .unwrap();

    // Whatever was accepted left consistent figures.
    let report = rt.block_on(reftrack::verify::check(&*app.store)).unwrap();
    assert!(report.ok(), "{}", report.to_json());
}
