//! Graceful shutdown of the real binary: on SIGTERM or SIGINT it stops accepting,
//! answers the requests in flight, commits their writes and exits 0; a request that
//! never finishes cannot hold it past `REFTRACK_SHUTDOWN_TIMEOUT`.

use std::time::{Duration, Instant};

use crate::common::server::Server;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ADMIN: &str = "rta_shutdown_test_admin_token_012";

async fn call(base: &str, path: &str, token: &str, body: Value) -> Value {
    let res = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{path}: {}", res.status());
    res.json().await.unwrap()
}

/// A program with a partner, a link and a customer `k` who clicked and signed up;
/// returns the program's API key.
async fn seed(base: &str) -> String {
    let ws = call(base, "/api/admin/workspaces", ADMIN, json!({"name": "W"})).await;
    let program = call(
        base,
        "/api/admin/programs",
        ADMIN,
        json!({"workspace_id": ws["id"], "name": "P"}),
    )
    .await;
    let key = program["api_token"].as_str().unwrap().to_string();
    let partner = call(
        base,
        "/api/admin/partners",
        ADMIN,
        json!({"name": "A", "code": "a"}),
    )
    .await;
    call(
        base,
        &format!("/api/admin/programs/{}/partners", program["id"]),
        ADMIN,
        json!({"partner_id": partner["id"]}),
    )
    .await;
    call(
        base,
        "/api/admin/links",
        ADMIN,
        json!({"program_id": program["id"], "partner_id": partner["id"], "short_link": "a"}),
    )
    .await;
    let click = call(
        base,
        "/api/v1/track/click",
        "",
        json!({"affiliate_url": "https://x.example/?aff=a"}),
    )
    .await;
    call(
        base,
        "/api/v1/track/lead",
        &key,
        json!({"click_id": click["click_id"], "customer_key": "k"}),
    )
    .await;
    key
}

/// Opens a connection and sends a sale request's head and the first half of its body.
async fn half_sent_sale(base: &str, key: &str, body: &str) -> tokio::net::TcpStream {
    let addr = base.strip_prefix("http://").unwrap();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /api/v1/track/sale HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
        .write_all(&body.as_bytes()[..body.len() / 2])
        .await
        .unwrap();
    stream.flush().await.unwrap();
    stream
}

async fn in_flight_request_is_answered_and_committed(url: &str, signal: &str) {
    let mut server = Server::on(url, ADMIN, &[]);
    let listen = server.listen().to_string();
    let key = seed(&server.base).await;
    let body =
        json!({"transaction_id": "txn_in_flight", "amount_cents": 4200, "customer_key": "k"})
            .to_string();
    let mut stream = half_sent_sale(&server.base, &key, &body).await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    server.signal(signal);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // No longer accepting...
    assert!(
        tokio::net::TcpStream::connect(&listen).await.is_err(),
        "still accepting connections after SIGTERM"
    );
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "exited with a request in flight"
    );
    // ...but the request in flight finishes, and is answered after its commit.
    let half = body.len() / 2;
    stream.write_all(&body.as_bytes()[half..]).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"sale_id\""), "{answer}");

    let started = Instant::now();
    let status = server
        .wait_exit(Duration::from_secs(10))
        .expect("no exit after the last request");
    assert!(status.success(), "{status:?}: {}", server.output());
    eprintln!(
        "exit {:.0} ms after the last answer",
        started.elapsed().as_secs_f64() * 1000.0
    );
    assert!(server.output().contains("shut down cleanly"));
    for (sql, want) in [
        (
            "SELECT COUNT(*) FROM affiliate_sale_events WHERE processor_event_id = 'txn_in_flight'",
            1,
        ),
        ("SELECT COUNT(*) FROM commissions", 1),
        ("SELECT CAST(SUM(sales) AS BIGINT) FROM daily_rollups", 1),
    ] {
        assert_eq!(crate::common::reftrack_count(url, sql).await, want, "{sql}");
    }
}

#[tokio::test]
async fn sigterm_finishes_the_request_in_flight_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("s.db").display());
    in_flight_request_is_answered_and_committed(&url, "TERM").await;
}

#[tokio::test]
async fn sigint_finishes_the_request_in_flight_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("s.db").display());
    in_flight_request_is_answered_and_committed(&url, "INT").await;
}

#[tokio::test]
async fn sigterm_finishes_the_request_in_flight_postgres() {
    let url = crate::common::fresh_postgres_url().await;
    crate::common::dropping_database(
        url.clone(),
        in_flight_request_is_answered_and_committed(&url, "TERM"),
    )
    .await;
}

/// A client that never finishes its request cannot keep the process alive past the
/// grace period: it exits (non-zero, saying why) soon after.
#[tokio::test]
async fn shutdown_is_bounded_by_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("s.db").display());
    let mut server = Server::on(&url, ADMIN, &[("REFTRACK_SHUTDOWN_TIMEOUT", "1")]);
    let key = seed(&server.base).await;
    let _stuck = half_sent_sale(
        &server.base,
        &key,
        r#"{"transaction_id": "never", "amount_cents": 1, "customer_key": "k"}"#,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.signal("TERM");
    let started = Instant::now();
    let status = server
        .wait_exit(Duration::from_secs(10))
        .expect("the grace period did not bound the shutdown");
    let took = started.elapsed();
    assert!(!status.success());
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(
        server.output().contains("still in flight"),
        "{}",
        server.output()
    );
    assert_eq!(
        crate::common::reftrack_count(
            &url,
            "SELECT COUNT(*) FROM affiliate_sale_events WHERE processor_event_id = 'never'"
        )
        .await,
        0
    );
}

/// SIGHUP, which asks many services to reload, is logged and ignored: the server goes
/// on serving, and SIGTERM still stops it cleanly.
#[tokio::test]
async fn sighup_is_ignored_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("s.db").display());
    let mut server = Server::on(&url, ADMIN, &[]);
    server.signal("HUP");
    let http = reqwest::Client::new();
    let seen = Instant::now();
    while !server.output().contains("SIGHUP ignored") {
        assert!(
            seen.elapsed() < Duration::from_secs(5),
            "{}",
            server.output()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        server.child.try_wait().unwrap().is_none(),
        "{}",
        server.output()
    );
    let r = http
        .get(format!("{}/readyz", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    server.signal("TERM");
    let status = server.wait_exit(Duration::from_secs(10)).expect("no exit");
    assert!(status.success(), "{status:?}: {}", server.output());
}
