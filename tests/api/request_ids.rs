//! Request ids and structured logs: every answer carries `X-Request-Id` (the caller's
//! when sane, a new one otherwise), and with `REFTRACK_LOG_FORMAT=json` every line the
//! binary logs is a JSON object, a request's lines carrying its id.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::common::server::{command, free_port};
use crate::common::*;
use axum::body::Body;
use axum::http::Request;
use reftrack::config::RateLimitArgs;
use reftrack::http::client_ip::ClientResolver;
use serde_json::{json, Value};

/// The request id an answer carries; fails when it has none or more than one.
#[track_caller]
fn id_of(r: &Reply) -> String {
    let ids: Vec<_> = r.headers.get_all("x-request-id").iter().collect();
    assert_eq!(
        ids.len(),
        1,
        "X-Request-Id of a {} answer: {ids:?}",
        r.status
    );
    ids[0].to_str().unwrap().to_string()
}

/// A request id this service made: a UUID.
#[track_caller]
fn assert_made(id: &str) {
    assert_eq!(id.len(), 36, "{id}");
    assert_eq!(id.matches('-').count(), 4, "{id}");
}

on_both_backends!(every_answer_carries_a_request_id);
async fn every_answer_carries_a_request_id(app: TestApp) {
    let seed = app.seed().await;
    // Made here: 200, 404, 401, 405, 400, each its own.
    let answers = [
        app.send("GET", "/healthz", None, &[]).await.expect(200),
        app.send("GET", "/readyz", None, &[]).await.expect(200),
        app.send("GET", "/no/such/page", None, &[])
            .await
            .expect(404),
        app.send("GET", "/api/admin/workspaces", None, &[])
            .await
            .expect(401),
        app.send("DELETE", "/api/v1/track/click", None, &[])
            .await
            .expect(405),
        app.post("/api/v1/track/sale", json!({})).await.expect(401),
        app.post_auth("/api/v1/track/sale", &seed.api_token, json!({}))
            .await
            .expect(400),
    ];
    let ids: Vec<String> = answers.iter().map(id_of).collect();
    for id in &ids {
        assert_made(id);
    }
    let distinct: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len(), "{ids:?}");

    // A sane id is kept, on success and on error alike.
    let mine = "req-42_ABC.def:ghi/jkl";
    for (method, path) in [
        ("GET", "/healthz"),
        ("GET", "/nope"),
        ("POST", "/api/v1/track/click"),
    ] {
        let r = app
            .send(method, path, None, &[("x-request-id", mine)])
            .await;
        assert_eq!(id_of(&r), mine, "{method} {path}");
    }
    let longest = "x".repeat(64);
    let r = app
        .send("GET", "/healthz", None, &[("x-request-id", &longest)])
        .await;
    assert_eq!(id_of(&r), longest);

    // Anything else is replaced: too long, empty, spaces, non-ASCII, given twice.
    for insane in ["y".repeat(65), String::new(), "two words".into()] {
        let r = app
            .send("GET", "/healthz", None, &[("x-request-id", &insane)])
            .await;
        assert_made(&id_of(&r));
    }
    let mut req = Request::get("/healthz")
        .header(
            "x-request-id",
            axum::http::HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap(),
        )
        .body(Body::empty())
        .unwrap();
    assert_made(&id_of(&app.raw(req).await));
    req = Request::get("/healthz")
        .header("x-request-id", "first")
        .header("x-request-id", "second")
        .body(Body::empty())
        .unwrap();
    assert_made(&id_of(&app.raw(req).await));
}

on_both_backends!(a_rate_limited_answer_carries_its_request_id);
async fn a_rate_limited_answer_carries_its_request_id(app: TestApp) {
    let app = app
        .with_resolver(ClientResolver::new(Some("*".parse().unwrap()), None).unwrap())
        .with_rate_limits(RateLimitArgs {
            rate_limit_click: 1,
            ..RateLimitArgs::off()
        });
    let seed = app.seed().await;
    let click = json!({"affiliate_url": format!("https://shop.example/?aff={}", seed.short_link)});
    let from = ("x-forwarded-for", "198.51.100.20");
    app.send("POST", "/api/v1/track/click", Some(click.clone()), &[from])
        .await
        .expect(200);
    let limited = app
        .send(
            "POST",
            "/api/v1/track/click",
            Some(click.clone()),
            &[from, ("x-request-id", "limited-1")],
        )
        .await
        .expect(429);
    assert_eq!(id_of(&limited), "limited-1");
    let limited = app
        .send("POST", "/api/v1/track/click", Some(click), &[from])
        .await
        .expect(429);
    assert_made(&id_of(&limited));
}

/// A server whose stdout and stderr are kept apart.
struct Logged {
    child: Child,
    base: String,
    stderr: std::thread::JoinHandle<String>,
}

impl Drop for Logged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_logged(env: &[(&str, &str)]) -> Logged {
    let mut child = command(env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = err.read_to_string(&mut all);
        all
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = loop {
        let line = lines.next().expect("server exited before serving").unwrap();
        if let Some(addr) = line.strip_prefix("Reftrack is serving on ") {
            break addr.trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Logged {
        child,
        base,
        stderr,
    }
}

/// Whether a JSON log line was logged in a span carrying `request_id`.
fn carries(line: &Value, request_id: &str) -> bool {
    line["span"]["request_id"] == request_id
        || line["spans"]
            .as_array()
            .is_some_and(|spans| spans.iter().any(|s| s["request_id"] == request_id))
}

async fn json_logs_on(url: String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let mut server = start_logged(&[
        ("REFTRACK_DATABASE_URL", url.as_str()),
        ("REFTRACK_LISTEN", listen.as_str()),
        ("REFTRACK_ADMIN_TOKEN", ADMIN_TOKEN),
        ("REFTRACK_LOG_FORMAT", "json"),
        ("REFTRACK_LOG", "reftrack=info,tower_http=info"),
    ]);
    let http = reqwest::Client::new();
    let res = http
        .get(format!("{}/healthz", server.base))
        .header("x-request-id", "log-test-healthz")
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["x-request-id"], "log-test-healthz");
    let res = http
        .post(format!("{}/api/admin/workspaces", server.base))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"name": "Logs"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 201);
    let made = res.headers()["x-request-id"].to_str().unwrap().to_string();
    assert_made(&made);

    std::process::Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    let started = Instant::now();
    while server.child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "no exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let stderr = std::mem::replace(&mut server.stderr, std::thread::spawn(String::new))
        .join()
        .unwrap();

    let lines: Vec<Value> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {l}"))
        })
        .collect();
    assert!(lines.len() >= 4, "{stderr}");
    for line in &lines {
        assert!(
            line["timestamp"].is_string() && line["level"].is_string(),
            "{line}"
        );
    }
    for id in ["log-test-healthz", made.as_str()] {
        let of_request: Vec<&Value> = lines.iter().filter(|l| carries(l, id)).collect();
        assert!(
            of_request
                .iter()
                .any(|l| l["fields"]["message"] == "finished processing request"),
            "no line of request {id} in {stderr}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l["fields"]["message"] == "opening database"),
        "{stderr}"
    );
}

#[tokio::test]
async fn json_logs_carry_request_ids_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    json_logs_on(format!("sqlite://{}", dir.path().join("logs.db").display())).await;
}

#[tokio::test]
async fn json_logs_carry_request_ids_postgres() {
    let url = fresh_postgres_url().await;
    dropping_database(url.clone(), json_logs_on(url)).await;
}

#[test]
fn an_unknown_log_format_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = command(&[
        ("REFTRACK_LOG_FORMAT", "xml"),
        ("REFTRACK_LISTEN", "127.0.0.1:0"),
    ])
    .current_dir(dir.path())
    .output()
    .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("REFTRACK_LOG_FORMAT must be `text` or `json`, not `xml`"),
        "{said}"
    );
    // Refused before anything else: no database was made.
    assert!(!dir.path().join("reftrack.db").exists());
}
