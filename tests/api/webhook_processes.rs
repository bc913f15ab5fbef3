//! Webhook delivery by the real binary: killed with SIGKILL while deliveries are pending
//! and in flight, then restarted, it still delivers every message with its message id
//! (on SQLite and on PostgreSQL); stopped by SIGTERM, it finishes the attempts under way
//! first; and two processes on one PostgreSQL database deliver
//! each attempt once. The receiver verifies every delivery with the Standard Webhooks
//! reference library.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::common::receiver::{Answer, Receiver};
use crate::common::server::Server;
use crate::common::{dropping_database, fresh_postgres_url, reftrack_count};
use serde_json::{json, Value};

const ADMIN: &str = "rta_webhook_process_admin_token_01";

async fn call(
    http: &reqwest::Client,
    base: &str,
    method: &str,
    path: &str,
    key: &str,
    body: Value,
) -> Value {
    let req = match method {
        "GET" => http.get(format!("{base}{path}")),
        _ => http.post(format!("{base}{path}")).json(&body),
    };
    let res = req.bearer_auth(key).send().await.unwrap();
    let status = res.status();
    let body: Value = res.json().await.unwrap();
    assert!(status.is_success(), "{method} {path}: {status} {body}");
    body
}

/// A program with a partner and a link, and an endpoint of `lead.created` on `rx`;
/// returns the API key and the endpoint's id.
async fn setup(http: &reqwest::Client, base: &str, rx: &Receiver) -> (String, i64) {
    let ws = call(
        http,
        base,
        "POST",
        "/api/admin/workspaces",
        ADMIN,
        json!({"name": "W"}),
    )
    .await;
    let program = call(
        http,
        base,
        "POST",
        "/api/admin/programs",
        ADMIN,
        json!({"workspace_id": ws["id"], "name": "P"}),
    )
    .await;
    let p = program["id"].as_i64().unwrap();
    let partner = call(
        http,
        base,
        "POST",
        "/api/admin/partners",
        ADMIN,
        json!({"name": "Ann", "code": "ann"}),
    )
    .await;
    call(
        http,
        base,
        "POST",
        &format!("/api/admin/programs/{p}/partners"),
        ADMIN,
        json!({"partner_id": partner["id"]}),
    )
    .await;
    call(
        http,
        base,
        "POST",
        "/api/admin/links",
        ADMIN,
        json!({"program_id": p, "partner_id": partner["id"], "short_link": "ann"}),
    )
    .await;
    let endpoint = call(
        http,
        base,
        "POST",
        &format!("/api/admin/programs/{p}/webhooks"),
        ADMIN,
        json!({"url": rx.url, "events": ["lead.created"]}),
    )
    .await;
    rx.set_secret(endpoint["secret"].as_str().unwrap());
    (
        program["api_token"].as_str().unwrap().to_string(),
        endpoint["id"].as_i64().unwrap(),
    )
}

/// A click and a lead: one `lead.created`.
async fn lead(http: &reqwest::Client, base: &str, key: &str, n: usize) {
    let click = call(
        http,
        base,
        "POST",
        "/api/v1/track/click",
        "",
        json!({"affiliate_url": "https://shop.example/?aff=ann"}),
    )
    .await;
    call(
        http,
        base,
        "POST",
        "/api/v1/track/lead",
        key,
        json!({"click_id": click["click_id"], "customer_key": format!("c{n}")}),
    )
    .await;
}

/// Every delivery of the endpoint, with its status and message id.
async fn deliveries(http: &reqwest::Client, base: &str, endpoint: i64) -> Vec<Value> {
    let mut all = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = call(
            http,
            base,
            "GET",
            &format!("/api/admin/webhooks/{endpoint}/deliveries?limit=100{cursor}"),
            ADMIN,
            Value::Null,
        )
        .await;
        all.extend(page["data"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return all,
        }
    }
}

async fn all_delivered(
    http: &reqwest::Client,
    base: &str,
    endpoint: i64,
    n: usize,
    limit: Duration,
) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let d = deliveries(http, base, endpoint).await;
        if d.len() == n && d.iter().all(|d| d["status"] == "delivered") {
            return d;
        }
        assert!(
            started.elapsed() < limit,
            "not all delivered after {limit:?}: {:?}",
            d.iter().map(|d| d["status"].clone()).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn env(url: &str) -> Vec<(&'static str, String)> {
    vec![
        ("REFTRACK_DATABASE_URL", url.to_string()),
        ("REFTRACK_LISTEN", "127.0.0.1:0".into()),
        ("REFTRACK_ADMIN_TOKEN", ADMIN.into()),
        ("REFTRACK_WEBHOOK_ALLOW_PRIVATE", "1".into()),
    ]
}

fn start(url: &str) -> Server {
    let env = env(url);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start(&env)
}

/// SIGKILL while some deliveries are in flight (the receiver holds them) and the rest
/// are pending; after a restart every message arrives, with the id it was written with.
async fn killed_while_delivering(url: String) {
    const LEADS: usize = 40;
    let http = reqwest::Client::new();
    let rx = Receiver::start(Answer::Slow(Duration::from_secs(3))).await;
    let mut server = start(&url);
    let (key, endpoint) = setup(&http, &server.base, &rx).await;
    for n in 0..LEADS {
        lead(&http, &server.base, &key, n).await;
    }
    let started = Instant::now();
    while rx.received().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no delivery started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.signal("KILL");
    server.wait_exit(Duration::from_secs(10)).expect("killed");
    let before_kill: Vec<String> = rx.received().iter().map(|r| r.id.clone()).collect();
    assert!(
        before_kill.len() < LEADS,
        "some were still pending at the kill"
    );
    rx.set_answer(Answer::Ok);

    let server = start(&url);
    // In-flight deliveries wait for their reservation to lapse (20 s).
    let delivered = all_delivered(
        &http,
        &server.base,
        endpoint,
        LEADS,
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(rx.bad(), Vec::<String>::new());
    let received = rx.received();
    let mut bodies: HashMap<&str, &str> = HashMap::new();
    for r in &received {
        let first = bodies.entry(r.id.as_str()).or_insert(r.raw.as_str());
        assert_eq!(*first, r.raw, "one body per message id");
    }
    for d in &delivered {
        let id = d["message_id"].as_str().unwrap();
        assert!(bodies.contains_key(id), "{id} never arrived");
    }
    assert_eq!(bodies.len(), LEADS, "no message that was not written");
    // Those in flight at the kill came again, with the same id.
    let again = before_kill
        .iter()
        .filter(|id| received.iter().filter(|r| &&r.id == id).count() >= 2)
        .count();
    assert_eq!(
        again,
        before_kill.len(),
        "every message in flight at the kill is sent again"
    );
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_delivers_everything_after_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    killed_while_delivering(format!("sqlite://{}", dir.path().join("w.db").display())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_delivers_everything_after_sigkill() {
    let url = fresh_postgres_url().await;
    dropping_database(url.clone(), killed_while_delivering(url)).await;
}

/// SIGTERM while a delivery is in flight: the process lets the attempt end and records
/// it before it exits, so a restart finds it delivered and sends nothing again.
async fn terminated_while_delivering(url: String) {
    let http = reqwest::Client::new();
    let rx = Receiver::start(Answer::Slow(Duration::from_secs(2))).await;
    let mut server = start(&url);
    let (key, endpoint) = setup(&http, &server.base, &rx).await;
    lead(&http, &server.base, &key, 0).await;
    let started = Instant::now();
    while rx.received().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no delivery started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.signal("TERM");
    let exit = server.wait_exit(Duration::from_secs(20)).expect("exited");
    assert!(exit.success(), "{exit:?}: {}", server.output());
    rx.set_answer(Answer::Ok);

    let server = start(&url);
    let d = deliveries(&http, &server.base, endpoint).await;
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["status"], "delivered", "{}", d[0]);
    assert_eq!(d[0]["attempts"].as_array().unwrap().len(), 1, "{}", d[0]);
    assert_eq!(d[0]["attempts"][0]["status_code"], 200, "{}", d[0]);
    assert_eq!(rx.received().len(), 1, "sent once");
    assert_eq!(rx.bad(), Vec::<String>::new());
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_finishes_deliveries_under_way_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    terminated_while_delivering(format!("sqlite://{}", dir.path().join("w.db").display())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_finishes_deliveries_under_way_on_sigterm() {
    let url = fresh_postgres_url().await;
    dropping_database(url.clone(), terminated_while_delivering(url)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_on_one_postgres_deliver_each_attempt_once() {
    let url = fresh_postgres_url().await;
    dropping_database(url.clone(), async move {
        const LEADS: usize = 200;
        let http = reqwest::Client::new();
        let rx = Receiver::start(Answer::Ok).await;
        let first = start(&url);
        let second = start(&url);
        let (key, endpoint) = setup(&http, &first.base, &rx).await;
        let bases = [first.base.clone(), second.base.clone()];
        let sends = (0..LEADS).map(|n| {
            let (http, key, base) = (http.clone(), key.clone(), bases[n % 2].clone());
            async move { lead(&http, &base, &key, n).await }
        });
        futures::future::join_all(sends).await;
        let delivered = all_delivered(
            &http,
            &second.base,
            endpoint,
            LEADS,
            Duration::from_secs(60),
        )
        .await;
        assert_eq!(rx.bad(), Vec::<String>::new());
        let mut seen: HashMap<String, usize> = HashMap::new();
        for r in rx.received() {
            *seen.entry(r.id).or_default() += 1;
        }
        assert_eq!(seen.len(), LEADS);
        let twice: Vec<_> = seen.iter().filter(|(_, n)| **n != 1).collect();
        assert!(twice.is_empty(), "sent more than once: {twice:?}");
        for d in &delivered {
            assert_eq!(d["attempts"].as_array().unwrap().len(), 1, "{d}");
        }
        assert_eq!(
            reftrack_count(&url, "SELECT COUNT(*) FROM webhook_attempts").await,
            LEADS as i64
        );
        drop((first, second));
    })
    .await;
}

/// `reftrack admin add-webhook`, `list-webhooks`, `get-webhook`, `update-webhook`,
/// `list-webhook-deliveries` and `delete-webhook` call the API's operations, with its
/// refusals; a loopback target passes only with `REFTRACK_WEBHOOK_ALLOW_PRIVATE=1`.
#[tokio::test]
async fn cli_manages_webhooks() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("cli.db").display());
    let run = |private: bool, args: &[&str]| {
        let mut env = vec![("REFTRACK_DATABASE_URL", db.as_str())];
        if private {
            env.push(("REFTRACK_WEBHOOK_ALLOW_PRIVATE", "1"));
        }
        let (ok, text) = crate::common::server::outcome(
            crate::common::server::command(&env).arg("admin").args(args),
        );
        (ok, serde_json::from_str::<Value>(&text).unwrap())
    };
    let migrated = crate::common::server::command(&[("REFTRACK_DATABASE_URL", db.as_str())])
        .arg("migrate")
        .status()
        .unwrap();
    assert!(migrated.success());
    assert!(run(false, &["create-workspace", "name=W"]).0);
    assert!(run(false, &["create-program", "workspace_id:=1", "name=P"]).0);
    let (ok, out) = run(
        false,
        &[
            "add-webhook",
            "1",
            "url=http://127.0.0.1:9/hook",
            "events:=[\"sale.created\"]",
        ],
    );
    assert!(!ok);
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("REFTRACK_WEBHOOK_ALLOW_PRIVATE=1"),
        "{out}"
    );
    let (ok, out) = run(
        false,
        &[
            "add-webhook",
            "1",
            "url=https://93.184.216.34/x",
            "events:=[\"sale.made\"]",
        ],
    );
    assert!(!ok);
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("unknown event type"),
        "{out}"
    );
    let (ok, out) = run(
        true,
        &[
            "add-webhook",
            "1",
            "url=http://127.0.0.1:9/hook",
            "events:=[\"sale.created\",\"payout.paid\"]",
        ],
    );
    assert!(ok, "{out}");
    assert!(out["secret"].as_str().unwrap().starts_with("whsec_"));
    let id = out["id"].as_i64().unwrap().to_string();
    let (ok, out) = run(false, &["list-webhooks", "1"]);
    assert!(ok);
    assert_eq!(
        out["data"][0]["events"],
        json!(["sale.created", "payout.paid"])
    );
    assert!(out["data"][0].get("secret").is_none());
    let (ok, out) = run(false, &["update-webhook", &id, "enabled:=false"]);
    assert!(ok);
    assert_eq!(out["enabled"], false);
    let (ok, out) = run(false, &["get-webhook", &id]);
    assert!(ok);
    assert_eq!(out["enabled"], false);
    assert_eq!(out["url"], "http://127.0.0.1:9/hook");
    assert!(out.get("secret").is_none());
    let (ok, out) = run(false, &["list-webhook-deliveries", &id]);
    assert!(ok);
    assert_eq!(out["data"], json!([]));
    assert!(run(false, &["delete-webhook", &id]).0);
    let (ok, out) = run(false, &["delete-webhook", &id]);
    assert!(!ok);
    assert_eq!(out["error"], "Webhook not found");
}
