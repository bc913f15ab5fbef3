//! Prometheus metrics: `GET /metrics` after some traffic (clicks, a lead, a sale, a 429,
//! 401s, a partner signing in), parsed by a grammar of the Prometheus text format, counts
//! each request under its route template; the exposition holds none of the traffic's
//! tokens, emails, customer keys or ids; metrics are off by default and can be served on
//! a listener of their own, outside the public CORS.

use crate::common::server::{free_port, Server};
use crate::common::*;
use openmetrics_parser::{MetricsExposition, PrometheusType, PrometheusValue};
use reftrack::config::RateLimitArgs;
use reftrack::http::client_ip::ClientResolver;
use serde_json::json;

const CLICK: &str = "/api/v1/track/click";
const OWNER_EMAIL: &str = "owner.metrics@example.com";
const PARTNER_EMAIL: &str = "partner.metrics@example.com";
const CUSTOMER_KEY: &str = "cust_key_s3cret_4711";
/// An id in a request's path, which only the route template may stand for.
const ID_IN_PATH: &str = "987654";
/// A token in the path of a request that matches no route.
const TOKEN_IN_PATH: &str = "rt_token_in_a_raw_path_5150";

type Exposition = MetricsExposition<PrometheusType, PrometheusValue>;

/// What the traffic used that the exposition must not hold.
struct Traffic {
    secrets: Vec<(&'static str, String)>,
}

/// The service with metrics on, behind a trusted proxy (so that requests name their
/// client) and a click limit of 3 per minute.
fn metered(app: TestApp) -> TestApp {
    app.with_resolver(ClientResolver::new(Some("*".parse().unwrap()), None).unwrap())
        .with_rate_limits(RateLimitArgs {
            rate_limit_click: 3,
            rate_limit_lead: 0,
            rate_limit_login: 0,
        })
        .with_metrics()
}

/// Clicks, a lead, a sale, a 429, 401s, a locked-out login, an owner and a partner
/// signing in, a 404 by id and a path that matches nothing.
async fn drive(app: &TestApp) -> Traffic {
    let seed = app.seed().await;
    let client = [("x-forwarded-for", "198.51.100.7")];
    let click = json!({"affiliate_url": format!("https://shop.example/?aff={}", seed.short_link)});
    let mut click_ids = Vec::new();
    for _ in 0..3 {
        let r = app
            .send("POST", CLICK, Some(click.clone()), &client)
            .await
            .expect(200);
        click_ids.push(r.body["click_id"].as_str().unwrap().to_string());
    }
    app.send("POST", CLICK, Some(click), &client)
        .await
        .expect(429);
    app.post_auth(
        "/api/v1/track/lead",
        &seed.api_token,
        json!({"click_id": click_ids[0], "customer_key": CUSTOMER_KEY}),
    )
    .await
    .expect(200);
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": "txn_metrics_1", "amount_cents": 4200, "customer_key": CUSTOMER_KEY}),
    )
    .await
    .expect(200);
    let wrong_key = "rt_wrong_api_key_0123456789abcdef";
    app.post_auth(
        "/api/v1/track/sale",
        wrong_key,
        json!({"transaction_id": "t", "amount_cents": 1, "customer_key": "k"}),
    )
    .await
    .expect(401);

    let owner_password = "owner password 1";
    app.member(seed.workspace_id, OWNER_EMAIL, owner_password, "owner")
        .await;
    let session = app.login(OWNER_EMAIL, owner_password).await.expect(200);
    let session_token = session.body["token"].as_str().unwrap().to_string();
    // Five failures are free; the sixth attempt finds the account locked out.
    for _ in 0..5 {
        app.login(OWNER_EMAIL, "wrong s3cret guess")
            .await
            .expect(401);
    }
    app.login(OWNER_EMAIL, "wrong s3cret guess")
        .await
        .expect(429);

    app.admin("GET", &format!("/programs/{ID_IN_PATH}"), None)
        .await
        .expect(404);
    app.send("GET", &format!("/api/v1/track/{TOKEN_IN_PATH}"), None, &[])
        .await
        .expect(404);

    let invite = app.invite_token(seed.partner_id, PARTNER_EMAIL).await;
    app.send("GET", &format!("/partner/invite?token={invite}"), None, &[])
        .await
        .expect(200);
    let partner = app
        .post(
            "/api/partner/auth/accept-invite",
            json!({"token": invite, "password": "partner password 1"}),
        )
        .await
        .expect(200);
    let partner_token = partner.body["token"].as_str().unwrap().to_string();
    app.send(
        "GET",
        "/api/partner/me",
        None,
        &[("authorization", &format!("Bearer {partner_token}"))],
    )
    .await
    .expect(200);

    let mut secrets = vec![
        ("admin token", ADMIN_TOKEN.to_string()),
        ("API key", seed.api_token.clone()),
        ("wrong API key", wrong_key.to_string()),
        ("session token", session_token),
        ("partner session token", partner_token),
        ("invite token", invite),
        ("owner email", OWNER_EMAIL.to_string()),
        ("partner email", PARTNER_EMAIL.to_string()),
        ("customer key", CUSTOMER_KEY.to_string()),
        ("owner password", owner_password.to_string()),
        ("id in a path", format!("/{ID_IN_PATH}")),
        ("token in a path", TOKEN_IN_PATH.to_string()),
        ("client IP", "198.51.100.7".to_string()),
        ("short link", format!("aff={}", seed.short_link)),
    ];
    secrets.extend(click_ids.into_iter().map(|id| ("click id", id)));
    Traffic { secrets }
}

/// `GET /metrics`: its text, after checking the status and content type.
async fn scrape(app: &TestApp) -> String {
    let r = app.send("GET", "/metrics", None, &[]).await.expect(200);
    assert_eq!(
        r.headers["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    r.body.as_str().expect("a text body").to_string()
}

/// The value of the sample of `family` whose labels include `labels`.
fn sample<'a>(
    exposition: &'a Exposition,
    family: &str,
    labels: &[(&str, &str)],
) -> Option<&'a PrometheusValue> {
    let family = exposition.families.get(family)?;
    family
        .iter_samples()
        .find(|s| {
            let set = s.get_labelset().expect("labels");
            labels
                .iter()
                .all(|(k, v)| set.get_label_value(k) == Some(*v))
        })
        .map(|s| &s.value)
}

/// A counter's value.
#[track_caller]
fn counter(exposition: &Exposition, family: &str, labels: &[(&str, &str)]) -> f64 {
    match sample(exposition, family, labels) {
        Some(PrometheusValue::Counter(c)) => c.value.as_f64(),
        other => panic!("no counter {family}{labels:?}: {other:?}"),
    }
}

/// A gauge's value.
#[track_caller]
fn gauge(exposition: &Exposition, family: &str, labels: &[(&str, &str)]) -> f64 {
    match sample(exposition, family, labels) {
        Some(PrometheusValue::Gauge(g)) => g.as_f64(),
        other => panic!("no gauge {family}{labels:?}: {other:?}"),
    }
}

/// A histogram's observation count and sum, after checking that its buckets are
/// cumulative and end with `+Inf` at the count.
#[track_caller]
fn histogram(exposition: &Exposition, family: &str, labels: &[(&str, &str)]) -> (u64, f64) {
    let Some(PrometheusValue::Histogram(h)) = sample(exposition, family, labels) else {
        panic!("no histogram {family}{labels:?}");
    };
    let count = h.count.expect("a count");
    let counts: Vec<f64> = h.buckets.iter().map(|b| b.count.as_f64()).collect();
    assert!(
        counts.windows(2).all(|w| w[0] <= w[1]),
        "{family}: buckets not cumulative: {counts:?}"
    );
    let last = h.buckets.last().expect("buckets");
    assert!(last.upper_bound.is_infinite(), "{family}: no +Inf bucket");
    assert_eq!(
        last.count.as_f64(),
        count as f64,
        "{family}: +Inf is not the count"
    );
    (count, h.sum.expect("a sum").as_f64())
}

on_both_backends!(metrics_count_requests_by_route_template);
async fn metrics_count_requests_by_route_template(app: TestApp) {
    let app = metered(app);
    drive(&app).await;
    let text = scrape(&app).await;
    let exposition: Exposition = openmetrics_parser::prometheus::parse_prometheus(&text)
        .unwrap_or_else(|e| panic!("{e:?} in:\n{text}"));

    let requests = "reftrack_http_requests_total";
    let click = [("method", "POST"), ("route", CLICK)];
    assert_eq!(
        counter(
            &exposition,
            requests,
            &[click[0], click[1], ("status", "200")]
        ),
        3.0
    );
    assert_eq!(
        counter(
            &exposition,
            requests,
            &[click[0], click[1], ("status", "429")]
        ),
        1.0
    );
    let sale = [("method", "POST"), ("route", "/api/v1/track/sale")];
    assert_eq!(
        counter(
            &exposition,
            requests,
            &[sale[0], sale[1], ("status", "200")]
        ),
        1.0
    );
    assert_eq!(
        counter(
            &exposition,
            requests,
            &[sale[0], sale[1], ("status", "401")]
        ),
        1.0
    );
    let login = [("method", "POST"), ("route", "/api/auth/login")];
    assert_eq!(
        counter(
            &exposition,
            requests,
            &[login[0], login[1], ("status", "401")]
        ),
        5.0
    );
    assert_eq!(
        counter(
            &exposition,
            requests,
            &[login[0], login[1], ("status", "429")]
        ),
        1.0
    );
    assert_eq!(
        counter(
            &exposition,
            requests,
            &[("route", "/api/admin/programs/{id}"), ("status", "404")]
        ),
        1.0
    );
    assert!(
        counter(
            &exposition,
            requests,
            &[("route", "/api/admin/programs"), ("status", "201")]
        ) >= 1.0
    );
    assert_eq!(
        counter(
            &exposition,
            requests,
            &[("route", "unmatched"), ("status", "404")]
        ),
        1.0
    );
    assert_eq!(
        counter(
            &exposition,
            requests,
            &[("route", "/partner/invite"), ("method", "GET")]
        ),
        1.0
    );
    assert_eq!(
        counter(
            &exposition,
            requests,
            &[("route", "/api/partner/me"), ("status", "200")]
        ),
        1.0
    );
    // No series of a raw path: every route label is a template or `unmatched`.
    for s in exposition.families[requests].iter_samples() {
        let route = s
            .get_labelset()
            .unwrap()
            .get_label_value("route")
            .unwrap()
            .to_string();
        assert!(route == "unmatched" || route.starts_with('/'), "{route}");
        let id = |segment: &str| !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit());
        assert!(!route.split('/').any(id), "an id in {route}");
    }

    let durations = "reftrack_http_request_duration_seconds";
    let (n, sum) = histogram(&exposition, durations, &click);
    assert_eq!(n, 4, "three clicks and a refused one");
    assert!(sum > 0.0 && sum < 60.0, "{sum}");

    let limited = "reftrack_rate_limited_total";
    assert_eq!(counter(&exposition, limited, &[("limit", "click")]), 1.0);
    assert_eq!(
        counter(&exposition, limited, &[("limit", "login_account")]),
        1.0
    );

    // Three clicks, a lead and a sale went through the group committer.
    let (batches, writes) = histogram(&exposition, "reftrack_commit_batch_size", &[]);
    assert!(
        batches >= 1 && (5.0..=64.0).contains(&writes),
        "{batches} batches, {writes} writes"
    );
    let (waits, waited) = histogram(&exposition, "reftrack_commit_queue_wait_seconds", &[]);
    assert_eq!(waits, batches);
    assert!((0.0..60.0).contains(&waited), "{waited}");
    let (runs, ran) = histogram(&exposition, "reftrack_commit_batch_duration_seconds", &[]);
    // A batch's duration is recorded just after it answered its writes.
    assert!(
        runs == batches || runs + 1 == batches,
        "{runs} of {batches} batches timed"
    );
    assert!(ran > 0.0 && ran < 60.0, "{ran}");

    let pools: &[&str] = match app.store.backend() {
        reftrack::store::Backend::Sqlite => &["read", "write"],
        reftrack::store::Backend::Postgres => &["shared"],
    };
    for pool in pools {
        let max = gauge(
            &exposition,
            "reftrack_db_connections_max",
            &[("pool", pool)],
        );
        let in_use = gauge(
            &exposition,
            "reftrack_db_connections",
            &[("pool", pool), ("state", "in_use")],
        );
        let idle = gauge(
            &exposition,
            "reftrack_db_connections",
            &[("pool", pool), ("state", "idle")],
        );
        assert!(max >= 1.0, "{pool}: max {max}");
        assert!(
            in_use >= 0.0 && idle >= 0.0 && in_use + idle <= max,
            "{pool}: {in_use} in use, {idle} idle, max {max}"
        );
    }
    assert_eq!(
        gauge(
            &exposition,
            "reftrack_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        1.0
    );
}

on_both_backends!(metrics_hold_no_token_email_key_or_id);
async fn metrics_hold_no_token_email_key_or_id(app: TestApp) {
    let app = metered(app);
    let traffic = drive(&app).await;
    // Scraped twice, so that the first scrape is in the second.
    scrape(&app).await;
    let text = scrape(&app).await;
    assert!(text.contains("reftrack_http_requests_total"), "{text}");
    for (what, secret) in &traffic.secrets {
        assert!(
            !text.contains(secret.as_str()),
            "the {what} ({secret}) is in the metrics:\n{text}"
        );
    }
    // The random part of each token too, should a prefix have been cut off.
    for (what, secret) in &traffic.secrets {
        if let Some((_, body)) = secret.split_once('_').filter(|(_, b)| b.len() >= 16) {
            assert!(!text.contains(body), "part of the {what} is in the metrics");
        }
    }
}

/// Off by default: `/metrics` is a 404 like any unknown path.
#[tokio::test]
async fn metrics_are_off_by_default() {
    let app = TestApp::sqlite().await;
    let r = app.send("GET", "/metrics", None, &[]).await.expect(404);
    assert_eq!(r.error(), "Not found");
}

/// The answer of `GET url` with an `Origin`: status, CORS header, body.
async fn get(url: &str) -> (u16, Option<String>, String) {
    let r = reqwest::Client::new()
        .get(url)
        .header("origin", "https://shop.example")
        .send()
        .await
        .unwrap();
    let cors = r
        .headers()
        .get("access-control-allow-origin")
        .map(|v| v.to_str().unwrap().to_string());
    (r.status().as_u16(), cors, r.text().await.unwrap())
}

/// The binary: no metrics without configuration; `REFTRACK_METRICS=1` serves them on
/// the main listener without CORS; `REFTRACK_METRICS_LISTEN` serves them on that
/// address only.
#[tokio::test]
async fn the_binary_serves_metrics_as_configured() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("m.db").display());
    let off = start(&url, &[]);
    assert_eq!(get(&format!("{}/metrics", off.base)).await.0, 404);
    drop(off);

    let main = start(&url, &[("REFTRACK_METRICS", "1")]);
    let (status, _, _) = get(&format!("{}{CLICK}", main.base)).await;
    assert_eq!(status, 405);
    let (status, cors, text) = get(&format!("{}/metrics", main.base)).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        cors, None,
        "the metrics are not for browsers of other sites"
    );
    assert!(
        text.contains(&format!(
            "reftrack_http_requests_total{{method=\"GET\",route=\"{CLICK}\",status=\"405\"}} 1"
        )),
        "{text}"
    );
    assert!(main
        .output()
        .contains(&format!("metrics:        {}/metrics", main.base)));
    drop(main);

    let metrics_at = format!("127.0.0.1:{}", free_port());
    let apart = start(
        &url,
        &[
            ("REFTRACK_METRICS", "1"),
            ("REFTRACK_METRICS_LISTEN", metrics_at.as_str()),
        ],
    );
    let (status, _, _) = get(&format!("{}/readyz", apart.base)).await;
    assert_eq!(status, 200);
    assert_eq!(get(&format!("{}/metrics", apart.base)).await.0, 404);
    let (status, cors, text) = get(&format!("http://{metrics_at}/metrics")).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(cors, None);
    assert!(
        text.contains(
            "reftrack_http_requests_total{method=\"GET\",route=\"/readyz\",status=\"200\"} 1"
        ),
        "{text}"
    );
    let (status, _, body) = get(&format!("http://{metrics_at}/readyz")).await;
    assert_eq!(status, 404, "only the metrics there: {body}");
    assert!(apart
        .output()
        .contains(&format!("metrics:        http://{metrics_at}/metrics")));

    // A bad value stops the start with a message.
    let out = crate::common::server::command(&[
        ("REFTRACK_DATABASE_URL", url.as_str()),
        ("REFTRACK_METRICS", "maybe"),
    ])
    .output()
    .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("metrics"), "{stderr}");
}

/// The binary on the database at `url` with the admin token and `extra` settings.
fn start(url: &str, extra: &[(&str, &str)]) -> Server {
    Server::on(url, ADMIN_TOKEN, extra)
}

on_both_backends!(metrics_count_the_webhook_backlog);
async fn metrics_count_the_webhook_backlog(app: TestApp) {
    // The tests' service runs no delivery worker: what the outbox holds stays pending.
    let app = app.with_metrics();
    let seed = app.seed().await;
    let backlog = |text: &str| {
        let exposition: Exposition =
            openmetrics_parser::prometheus::parse_prometheus(text).expect("a valid exposition");
        gauge(&exposition, "reftrack_webhook_deliveries_pending", &[])
    };
    assert_eq!(backlog(&scrape(&app).await), 0.0);
    assert!(scrape(&app).await.contains("\nreftrack_database_up 1\n"));
    app.admin(
        "POST",
        &format!("/programs/{}/webhooks", seed.program_id),
        Some(json!({"url": "https://93.184.216.34/hooks/a", "events": ["sale.created"]})),
    )
    .await
    .expect(201);
    app.admin(
        "POST",
        &format!("/programs/{}/webhooks", seed.program_id),
        Some(json!({"url": "https://93.184.216.34/hooks/b", "events": ["sale.created", "lead.created"]})),
    )
    .await
    .expect(201);
    let click_id = app.click(&seed.short_link).await;
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"transaction_id": "backlog-1", "amount_cents": 5000, "click_id": click_id}),
    )
    .await
    .expect(200);
    // One sale.created message for each endpoint.
    assert_eq!(backlog(&scrape(&app).await), 2.0);
}
