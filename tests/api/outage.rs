//! Database outages. PostgreSQL: a throwaway cluster (initdb + pg_ctl on a temporary
//! directory and a free port) is stopped with `pg_ctl stop -m immediate` in the middle
//! of load; requests must fail fast with a 503 JSON error, `/readyz` must turn 503, and
//! the service must recover by itself when the cluster is back, with nothing half
//! written. SQLite: another connection holding the write lock past `busy_timeout` gives
//! a 503 JSON error, never a 500.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::server::{command, free_port, Server};
use crate::common::*;
use serde_json::{json, Value};

/// A PostgreSQL cluster of its own, removed when dropped.
struct Cluster {
    bin: PathBuf,
    data: PathBuf,
    port: u16,
    as_postgres: bool,
    _dir: tempfile::TempDir,
}

/// The newest PostgreSQL server binaries installed, if any.
fn pg_bin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").is_file() && p.join("pg_ctl").is_file())
        .collect();
    dirs.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name()?.to_str()?.parse::<u32>().ok())
            .unwrap_or(0)
    });
    dirs.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl Cluster {
    /// initdb refuses to run as root; then the cluster belongs to the `postgres` user.
    fn run(&self, tool: &str, args: &[&str]) -> std::process::Output {
        Self::run_as(self.as_postgres, &self.bin.join(tool), args)
    }

    fn run_as(as_postgres: bool, tool: &Path, args: &[&str]) -> std::process::Output {
        let mut cmd = if as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(tool);
            c
        } else {
            Command::new(tool)
        };
        cmd.args(args).output().unwrap()
    }

    fn create() -> Option<Cluster> {
        let bin = pg_bin()?;
        let dir = tempfile::tempdir().unwrap();
        let as_postgres = is_root();
        if as_postgres {
            let chown = Command::new("chown")
                .args(["postgres:", dir.path().to_str().unwrap()])
                .status()
                .unwrap();
            assert!(chown.success());
        }
        let data = dir.path().join("data");
        let out = Self::run_as(
            as_postgres,
            &bin.join("initdb"),
            &[
                "-D",
                data.to_str().unwrap(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        );
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let cluster = Cluster {
            bin,
            data,
            port: free_port(),
            as_postgres,
            _dir: dir,
        };
        cluster.start();
        Some(cluster)
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn start(&self) {
        let socket_dir = self.data.parent().unwrap().to_str().unwrap().to_string();
        let opts = format!(
            "-p {} -k {socket_dir} -c listen_addresses=127.0.0.1 -c max_connections=50",
            self.port
        );
        let log = format!("{socket_dir}/log");
        let out = self.run(
            "pg_ctl",
            &[
                "-D",
                self.data.to_str().unwrap(),
                "-o",
                &opts,
                "-l",
                &log,
                "-w",
                "start",
            ],
        );
        assert!(
            out.status.success(),
            "pg_ctl start: {} {}",
            String::from_utf8_lossy(&out.stdout),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    fn stop(&self, mode: &str) {
        self.run(
            "pg_ctl",
            &["-D", self.data.to_str().unwrap(), "-m", mode, "-w", "stop"],
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop("immediate");
    }
}

const ADMIN: &str = "rta_outage_test_admin_token_01234";

/// One answer seen by a client.
#[derive(Debug, Clone)]
struct Seen {
    at: Instant,
    latency: Duration,
    status: u16,
    body: Value,
    what: &'static str,
}

/// Why an outage test cannot run.
const NO_CLUSTER: &str = "the outage tests run a PostgreSQL cluster of their own: they need \
    the server binaries (initdb, pg_ctl) under /usr/lib/postgresql/<version>/bin, from the \
    postgresql package";

async fn admin(base: &str, path: &str, body: Value) -> Value {
    let res = reqwest::Client::new()
        .post(format!("{base}/api/admin{path}"))
        .bearer_auth(ADMIN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 201, "{path}");
    res.json().await.unwrap()
}

/// A program with a partner and its link `a`; the program's API key.
async fn set_up_program(base: &str) -> String {
    let ws = admin(base, "/workspaces", json!({"name": "W"})).await;
    let program = admin(
        base,
        "/programs",
        json!({"workspace_id": ws["id"], "name": "P"}),
    )
    .await;
    let partner = admin(base, "/partners", json!({"name": "A", "code": "a"})).await;
    admin(
        base,
        &format!("/programs/{}/partners", program["id"]),
        json!({"partner_id": partner["id"]}),
    )
    .await;
    admin(
        base,
        "/links",
        json!({"program_id": program["id"], "partner_id": partner["id"], "short_link": "a"}),
    )
    .await;
    program["api_token"].as_str().unwrap().to_string()
}

async fn timed(
    http: &reqwest::Client,
    url: String,
    key: Option<&str>,
    body: Value,
    what: &'static str,
) -> Seen {
    let started = Instant::now();
    let mut req = http.post(url).json(&body);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let res = req.send().await.expect("the server must always answer");
    let status = res.status().as_u16();
    let body = res.json().await.unwrap_or(Value::Null);
    Seen {
        at: Instant::now(),
        latency: started.elapsed(),
        status,
        body,
        what,
    }
}

/// A click through the link `a`.
async fn click(http: &reqwest::Client, base: &str) -> Seen {
    timed(
        http,
        format!("{base}/api/v1/track/click"),
        None,
        json!({"affiliate_url": "https://shop.example/?aff=a"}),
        "click",
    )
    .await
}

async fn load(
    n: usize,
    base: String,
    key: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    sent_sales: Arc<Mutex<Vec<(String, bool)>>>,
    stop: Arc<AtomicBool>,
) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let mut i = 0;
    while !stop.load(Ordering::SeqCst) {
        i += 1;
        let click = click(&http, &base).await;
        let ok = click.status == 200;
        let click_id = click.body["click_id"].as_str().map(str::to_string);
        seen.lock().unwrap().push(click);
        let Some(click_id) = click_id.filter(|_| ok) else {
            tokio::time::sleep(Duration::from_millis(25)).await;
            continue;
        };
        let customer = format!("c{n}_{i}");
        let lead = timed(
            &http,
            format!("{base}/api/v1/track/lead"),
            Some(&key),
            json!({"click_id": click_id, "customer_key": customer}),
            "lead",
        )
        .await;
        seen.lock().unwrap().push(lead);
        let txn = format!("t{n}_{i}");
        let sale = timed(
            &http,
            format!("{base}/api/v1/track/sale"),
            Some(&key),
            json!({"transaction_id": txn, "amount_cents": 1000 + i, "click_id": click_id}),
            "sale",
        )
        .await;
        sent_sales.lock().unwrap().push((txn, sale.status == 200));
        seen.lock().unwrap().push(sale);
    }
}

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort();
    v[((v.len() - 1) as f64 * p).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_outage_fails_fast_and_recovers() {
    let cluster = Cluster::create().expect(NO_CLUSTER);
    let url = cluster.url();
    let server = Server::on(
        &url,
        ADMIN,
        &[
            ("REFTRACK_RATE_LIMIT_CLICK", "0"),
            ("REFTRACK_METRICS", "1"),
        ],
    );
    let base = server.base.clone();
    let key = set_up_program(&base).await;

    let seen = Arc::new(Mutex::new(Vec::new()));
    let sent_sales = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|n| {
            tokio::spawn(load(
                n,
                base.clone(),
                key.clone(),
                seen.clone(),
                sent_sales.clone(),
                stop.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // The database goes away in the middle of the load.
    cluster.stop("immediate");
    let stopped = Instant::now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let http = reqwest::Client::new();
    let t = Instant::now();
    let ready = http.get(format!("{base}/readyz")).send().await.unwrap();
    let readyz_latency = t.elapsed();
    assert_eq!(ready.status().as_u16(), 503);
    let ready_body: Value = ready.json().await.unwrap();
    assert_eq!(ready_body["error"], "Service temporarily unavailable");
    let metrics = || async {
        let r = http.get(format!("{base}/metrics")).send().await.unwrap();
        r.text().await.unwrap()
    };
    assert!(metrics().await.contains("\nreftrack_database_up 0\n"));
    assert!(http
        .get(format!("{base}/healthz"))
        .send()
        .await
        .unwrap()
        .status()
        .is_success());

    // It comes back; the service notices by itself.
    // pg_ctl returns only after it has seen the server accept connections (it polls), so
    // requests answered in that moment may already succeed: the outage ends here.
    let restarting = Instant::now();
    cluster.start();
    let restarted = Instant::now();
    let recovered = loop {
        let r = http.get(format!("{base}/readyz")).send().await.unwrap();
        if r.status().is_success() {
            break restarted.elapsed();
        }
        assert!(
            restarted.elapsed() < Duration::from_secs(15),
            "no recovery 15 s after the database came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(metrics().await.contains("\nreftrack_database_up 1\n"));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.store(true, Ordering::SeqCst);
    for c in clients {
        c.await.unwrap();
    }

    let seen = seen.lock().unwrap().clone();
    let during: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.at > stopped + Duration::from_millis(100) && s.at < restarting)
        .collect();
    assert!(!during.is_empty());
    for s in &seen {
        assert!(
            s.status == 200 || s.status == 503,
            "{} answered {}: {}",
            s.what,
            s.status,
            s.body
        );
        if s.status == 503 {
            assert_eq!(s.body["error"], "Service temporarily unavailable", "{s:?}");
        }
    }
    for s in &during {
        assert_eq!(s.status, 503, "{s:?}");
    }
    // Fail fast: no request hangs; once the outage is known, answers are immediate.
    let slowest = seen.iter().max_by_key(|s| s.latency).unwrap();
    eprintln!(
        "slowest: {} {} in {:?}, answered {:?} after the stop",
        slowest.what,
        slowest.status,
        slowest.latency,
        slowest.at.checked_duration_since(stopped)
    );
    let slowest = slowest.latency;
    assert!(
        slowest < Duration::from_secs(8),
        "slowest answer {slowest:?}"
    );
    let known = stopped + Duration::from_secs(1);
    let fast: Vec<Duration> = seen
        .iter()
        .filter(|s| s.at > known && s.at < restarting)
        .map(|s| s.latency)
        .collect();
    let p95 = percentile(fast.clone(), 0.95);
    assert!(
        p95 < Duration::from_millis(200),
        "p95 of outage 503s {p95:?}"
    );
    let after: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.at > restarted + recovered + Duration::from_millis(200))
        .collect();
    assert!(
        after.iter().any(|s| s.what == "sale" && s.status == 200),
        "no sale recorded after recovery"
    );
    assert!(after.iter().all(|s| s.status == 200));

    // Nothing half-written: every acknowledged sale has its commission, nothing else
    // exists, and the figures equal their recomputation.
    let sales = sent_sales.lock().unwrap().clone();
    for (txn, acked) in &sales {
        let n = reftrack_count(
            &url,
            &format!(
                "SELECT COUNT(*) FROM affiliate_sale_events s JOIN commissions c ON c.sale_id = s.id \
                 WHERE s.processor_event_id = '{txn}'"
            ),
        )
        .await;
        if *acked {
            assert_eq!(n, 1, "acknowledged sale {txn}");
        }
    }
    let stored = reftrack_count(&url, "SELECT COUNT(*) FROM affiliate_sale_events").await;
    assert!(stored as usize <= sales.len());
    let out = command(&[("REFTRACK_DATABASE_URL", &url)])
        .arg("verify")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let first_503 = seen
        .iter()
        .filter(|s| s.status == 503 && s.at > stopped)
        .map(|s| s.at - stopped)
        .min()
        .unwrap_or_default();
    eprintln!(
        "PostgreSQL outage: first 503 {} ms after the stop; {} answers during the outage, \
         p50 {:?}, p95 {p95:?}, slowest answer overall {slowest:?}; /readyz 503 in {readyz_latency:?}; \
         ready again {recovered:?} after the cluster was back; {} sales sent, {} acknowledged",
        first_503.as_millis(),
        during.len(),
        percentile(fast, 0.5),
        sales.len(),
        sales.iter().filter(|s| s.1).count()
    );
}

/// An outage in which nothing was written (the outage guard answered every write): the
/// connection the writer kept died with the database, and the first sale after it is
/// back must still be recorded, with `/readyz` staying ready.
#[tokio::test]
async fn the_first_write_after_a_quiet_postgres_outage_succeeds() {
    let cluster = Cluster::create().expect(NO_CLUSTER);
    let url = cluster.url();
    let server = Server::on(&url, ADMIN, &[]);
    let base = server.base.clone();
    let key = set_up_program(&base).await;
    let http = reqwest::Client::new();
    let sale = |txn: &str| {
        timed(
            &http,
            format!("{base}/api/v1/track/sale"),
            Some(&key),
            json!({"transaction_id": txn, "amount_cents": 1000, "customer_key": "c"}),
            "sale",
        )
    };
    let click = click(&http, &base).await;
    let lead = timed(
        &http,
        format!("{base}/api/v1/track/lead"),
        Some(&key),
        json!({"customer_key": "c", "click_id": click.body["click_id"]}),
        "lead",
    )
    .await;
    assert_eq!(lead.status, 200, "{:?}", lead.body);
    assert_eq!(sale("before").await.status, 200);

    cluster.stop("immediate");
    let readyz = || async {
        http.get(format!("{base}/readyz"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    };
    let down = Instant::now();
    while readyz().await != 503 {
        assert!(
            down.elapsed() < Duration::from_secs(10),
            "/readyz never saw the outage"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cluster.start();
    let back = Instant::now();
    while readyz().await != 200 {
        assert!(back.elapsed() < Duration::from_secs(15), "no recovery");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = sale("after").await;
    assert_eq!(after.status, 200, "{:?}", after.body);
    for _ in 0..10 {
        assert_eq!(readyz().await, 200);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Another connection holds SQLite's write lock for longer than the 5 s `busy_timeout`:
/// writes answer 503 with a JSON error (not 500), and work again once it lets go.
#[tokio::test]
async fn sqlite_locked_by_another_connection_is_503_not_500() {
    use sqlx::Connection;
    let app = TestApp::sqlite().await;
    let seed = app.seed().await;
    app.lead(&seed, "k").await;

    let mut holder = sqlx::SqliteConnection::connect(&app.database_url)
        .await
        .unwrap();
    sqlx::query("BEGIN EXCLUSIVE")
        .execute(&mut holder)
        .await
        .unwrap();
    sqlx::query("UPDATE settings SET value = value")
        .execute(&mut holder)
        .await
        .unwrap();

    let started = Instant::now();
    let sale = json!({"transaction_id": "t1", "amount_cents": 1000, "customer_key": "k"});
    let (sale_r, click_r, partner_r) = tokio::join!(
        app.post_auth("/api/v1/track/sale", &seed.api_token, sale.clone()),
        app.post(
            "/api/v1/track/click",
            json!({"affiliate_url": format!("https://shop.example/?aff={}", seed.short_link)})
        ),
        app.admin(
            "POST",
            "/partners",
            Some(json!({"name": "B", "code": "bee"}))
        ),
    );
    let waited = started.elapsed();
    for r in [&sale_r, &click_r, &partner_r] {
        assert_eq!(r.status.as_u16(), 503, "{:?}", r.body);
        assert_eq!(r.error(), "Service temporarily unavailable");
        assert_eq!(r.headers["retry-after"], "1");
    }
    assert!(waited >= Duration::from_secs(4), "{waited:?}");
    // Reads still work: readers are not blocked by a writer in WAL mode.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    app.send("GET", "/readyz", None, &[]).await.expect(200);

    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    let r = app
        .post_auth("/api/v1/track/sale", &seed.api_token, sale)
        .await
        .expect(200);
    assert!(r.body["commission_id"].is_i64());
    assert_eq!(
        app.count("SELECT COUNT(*) FROM affiliate_sale_events")
            .await,
        1
    );
    let report = reftrack::verify::check(&*app.store).await.unwrap();
    assert!(report.ok(), "{}", report.to_json());
    eprintln!("SQLite locked: 503 after {waited:?}");
}
