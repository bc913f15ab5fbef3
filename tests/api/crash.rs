//! Crash safety: several clients send clicks, leads, sales and refunds to the real binary
//! and log every acknowledged answer, while the server is killed with SIGKILL at random
//! moments and restarted. Afterwards every acknowledged click, lead, sale and refund is
//! in the database, no sale lacks its commission (except renewals past their program's
//! limit), no `transaction_id` is recorded twice, nothing exists that was never sent,
//! and `reftrack verify` finds the rollups equal to their recomputation. Visitors follow
//! redirect links meanwhile: a redirect answered `Reftrack-Click: committed` never loses
//! its click; one answered `queued` (its wait for the commit ran out) may, and the test
//! counts how many did. On SQLite and on PostgreSQL (a database of its own on the server
//! of `REFTRACK_TEST_POSTGRES_URL`).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::server::{command, free_port, Server};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

const ADMIN: &str = "rta_crash_test_admin_token_0123456";
const CLIENTS: usize = 6;
/// Visitors following redirect links, beside the clients.
const VISITORS: usize = 2;
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";
const KILLS: usize = 8;

/// A program of the test and what clients need to send to it.
struct Program {
    key: String,
    links: Vec<String>,
    currency: &'static str,
    /// Whether renewals earn (recurring limit 12 months) or not (limit 0).
    renewals_earn: bool,
}

struct AckedSale {
    amount: i64,
    earns: bool,
}

#[derive(Default)]
struct Refunds {
    acked: i64,
    attempted: i64,
    full_acked: bool,
}

/// What the clients were told.
#[derive(Default)]
struct Ledger {
    clicks: Vec<String>,
    leads: Vec<String>,
    sales: HashMap<String, AckedSale>,
    attempted_sales: HashSet<String>,
    refunds: HashMap<String, Refunds>,
    /// The click id of each redirect that recorded one, and whether it was committed
    /// when the visitor was sent on.
    redirects: Vec<(String, bool)>,
}

#[derive(Default)]
struct Stats {
    requests: AtomicU64,
    unanswered: AtomicU64,
    unavailable: AtomicU64,
}

/// Status and body, or `None` when no answer came (connection refused or cut).
async fn post(
    http: &reqwest::Client,
    url: &str,
    key: Option<&str>,
    body: &Value,
    stats: &Stats,
) -> Option<(u16, Value)> {
    stats.requests.fetch_add(1, Ordering::Relaxed);
    let mut req = http.post(url).json(body);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let answer = async {
        let res = req.send().await.ok()?;
        let status = res.status().as_u16();
        let body = res.json::<Value>().await.ok()?;
        Some((status, body))
    }
    .await;
    match &answer {
        None => stats.unanswered.fetch_add(1, Ordering::Relaxed),
        Some((503, _)) => stats.unavailable.fetch_add(1, Ordering::Relaxed),
        _ => 0,
    };
    answer
}

/// Sends until the answer is definite: the answer, or `None` after many tries.
async fn post_until_answered(
    http: &reqwest::Client,
    url: &str,
    key: Option<&str>,
    body: &Value,
    stats: &Stats,
) -> Option<(u16, Value)> {
    for attempt in 0..60u64 {
        match post(http, url, key, body, stats).await {
            None | Some((503, _)) => {
                tokio::time::sleep(Duration::from_millis(20 + 10 * attempt.min(20))).await
            }
            answer => return answer,
        }
    }
    None
}

#[track_caller]
fn expect_no_server_error(what: &str, answer: &Option<(u16, Value)>) {
    if let Some((status, body)) = answer {
        assert!(
            *status < 500 || *status == 503,
            "{what}: {status} {body} (a crash must never cause anything but 503 or no answer)"
        );
    }
}

async fn client(
    n: usize,
    base: String,
    programs: Arc<Vec<Program>>,
    ledger: Arc<Mutex<Ledger>>,
    stats: Arc<Stats>,
    stop: Arc<AtomicBool>,
) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut rng = StdRng::seed_from_u64(n as u64 + rand::random::<u64>());
    let mut journey = 0;
    while !stop.load(Ordering::SeqCst) {
        journey += 1;
        let p = &programs[rng.gen_range(0..programs.len())];
        let link = &p.links[rng.gen_range(0..p.links.len())];
        let click = post(
            &http,
            &format!("{base}/api/v1/track/click"),
            None,
            &json!({"affiliate_url": format!("https://shop.example/?aff={link}")}),
            &stats,
        )
        .await;
        expect_no_server_error("click", &click);
        let click_id = match click {
            Some((200, body)) => body["click_id"].as_str().unwrap().to_string(),
            _ => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        ledger.lock().unwrap().clicks.push(click_id.clone());

        let customer = format!("cust_{n}_{journey}");
        let lead = post(
            &http,
            &format!("{base}/api/v1/track/lead"),
            Some(&p.key),
            &json!({"click_id": click_id, "customer_key": customer}),
            &stats,
        )
        .await;
        expect_no_server_error("lead", &lead);
        if let Some((200, _)) = lead {
            ledger.lock().unwrap().leads.push(customer.clone());
        }

        let subscription = format!("sub_{n}_{journey}");
        for k in 0..rng.gen_range(1..=3) {
            let txn = format!("txn_{n}_{journey}_{k}");
            let amount: i64 = rng.gen_range(100..100_000);
            let recurring = k > 0;
            let body = json!({
                "transaction_id": txn, "amount_cents": amount, "currency": p.currency,
                "customer_key": customer, "click_id": click_id, "sale_type": "subscription",
                "subscription_id": subscription, "is_recurring": recurring,
            });
            ledger.lock().unwrap().attempted_sales.insert(txn.clone());
            let answer = post_until_answered(
                &http,
                &format!("{base}/api/v1/track/sale"),
                Some(&p.key),
                &body,
                &stats,
            )
            .await;
            expect_no_server_error("sale", &answer);
            let earns = !recurring || p.renewals_earn;
            match &answer {
                Some((200, b)) => {
                    assert_eq!(b["commission_id"].is_i64(), earns, "{txn}: {b}");
                }
                // An earlier try was committed though its answer was lost.
                Some((409, _)) => {}
                other => panic!("sale {txn}: {other:?}"),
            }
            ledger
                .lock()
                .unwrap()
                .sales
                .insert(txn.clone(), AckedSale { amount, earns });

            if rng.gen_ratio(1, 3) {
                let refunds_url = format!("{base}/api/v1/track/refund");
                if rng.gen_bool(0.5) {
                    // A partial refund is not idempotent: sent once, acknowledged or not.
                    let part = (amount / 3).max(1);
                    ledger
                        .lock()
                        .unwrap()
                        .refunds
                        .entry(txn.clone())
                        .or_default()
                        .attempted += part;
                    let answer = post(
                        &http,
                        &refunds_url,
                        Some(&p.key),
                        &json!({"transaction_id": txn, "refund_amount_cents": part}),
                        &stats,
                    )
                    .await;
                    expect_no_server_error("refund", &answer);
                    if let Some((200, _)) = answer {
                        ledger.lock().unwrap().refunds.get_mut(&txn).unwrap().acked += part;
                    }
                } else {
                    // A full refund is: repeated until answered.
                    ledger
                        .lock()
                        .unwrap()
                        .refunds
                        .entry(txn.clone())
                        .or_default()
                        .attempted = amount;
                    let answer = post_until_answered(
                        &http,
                        &refunds_url,
                        Some(&p.key),
                        &json!({"transaction_id": txn}),
                        &stats,
                    )
                    .await;
                    expect_no_server_error("refund", &answer);
                    if let Some((200, _)) = answer {
                        let mut l = ledger.lock().unwrap();
                        let r = l.refunds.get_mut(&txn).unwrap();
                        r.acked = amount;
                        r.full_acked = true;
                    }
                }
            }
        }
    }
}

/// A visitor following the programs' redirect links until `stop`, logging each click id
/// a redirect handed out and whether it was committed then.
async fn visitor(
    n: usize,
    base: String,
    programs: Arc<Vec<Program>>,
    ledger: Arc<Mutex<Ledger>>,
    stats: Arc<Stats>,
    stop: Arc<AtomicBool>,
) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut rng = StdRng::seed_from_u64(n as u64 + rand::random::<u64>());
    while !stop.load(Ordering::SeqCst) {
        let p = &programs[rng.gen_range(0..programs.len())];
        let link = &p.links[rng.gen_range(0..p.links.len())];
        stats.requests.fetch_add(1, Ordering::Relaxed);
        let answer = http
            .get(format!("{base}/r/{link}"))
            .header("user-agent", BROWSER)
            .send()
            .await;
        let Ok(res) = answer else {
            stats.unanswered.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let status = res.status().as_u16();
        assert!(status == 302 || status == 503, "redirect: {status}");
        let location = res
            .headers()
            .get("location")
            .map(|l| l.to_str().unwrap().to_string());
        let state = res
            .headers()
            .get("reftrack-click")
            .map(|s| s.to_str().unwrap().to_string());
        let click = location.and_then(|l| {
            url::Url::parse(&l)
                .unwrap()
                .query_pairs()
                .find(|(k, _)| k == "rt_click")
                .map(|(_, v)| v.into_owned())
        });
        if let (Some(click), Some(state)) = (click, state) {
            assert!(state == "committed" || state == "queued", "{state}");
            ledger
                .lock()
                .unwrap()
                .redirects
                .push((click, state == "committed"));
        }
    }
}

async fn admin(http: &reqwest::Client, base: &str, path: &str, body: Value) -> Value {
    let res = http
        .post(format!("{base}/api/admin{path}"))
        .bearer_auth(ADMIN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 201, "{path}");
    res.json().await.unwrap()
}

async fn setup(base: &str) -> Vec<Program> {
    let http = reqwest::Client::new();
    let ws = admin(&http, base, "/workspaces", json!({"name": "Crash"})).await;
    let mut programs = Vec::new();
    for (i, (currency, months, commission)) in [
        ("usd", 12, json!({"type": "percentage", "percent": 25})),
        ("jpy", 0, json!({"type": "flat", "amount_cents": 300})),
    ]
    .into_iter()
    .enumerate()
    {
        let program = admin(
            &http,
            base,
            "/programs",
            json!({"workspace_id": ws["id"], "name": format!("P{i}"), "currency": currency,
                   "commission": commission, "recurring_commission_months": months,
                   "destination_url": "https://shop.example/landing"}),
        )
        .await;
        let mut links = Vec::new();
        for j in 0..3 {
            let code = format!("p{i}partner{j}");
            let partner = admin(
                &http,
                base,
                "/partners",
                json!({"name": code, "code": code}),
            )
            .await;
            admin(
                &http,
                base,
                &format!("/programs/{}/partners", program["id"]),
                json!({"partner_id": partner["id"]}),
            )
            .await;
            admin(
                &http,
                base,
                "/links",
                json!({"program_id": program["id"], "partner_id": partner["id"], "short_link": code}),
            )
            .await;
            links.push(code);
        }
        programs.push(Program {
            key: program["api_token"].as_str().unwrap().to_string(),
            links,
            currency,
            renewals_earn: months > 0,
        });
    }
    programs
}

/// Rows of a query on either backend.
async fn rows<T>(url: &str, sql: &str) -> Vec<T>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow>
        + for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>
        + Send
        + Unpin,
{
    use sqlx::Connection;
    if url.starts_with("sqlite:") {
        let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
        sqlx::query_as(sql).fetch_all(&mut c).await.unwrap()
    } else {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query_as(sql).fetch_all(&mut c).await.unwrap()
    }
}

async fn crash_and_check(url: String, backend: &str) {
    let started = Instant::now();
    let listen = format!("127.0.0.1:{}", free_port());
    let env: Vec<(String, String)> = [
        ("REFTRACK_DATABASE_URL", url.as_str()),
        ("REFTRACK_LISTEN", listen.as_str()),
        ("REFTRACK_ADMIN_TOKEN", ADMIN),
        ("REFTRACK_RATE_LIMIT_CLICK", "0"),
        ("REFTRACK_RATE_LIMIT_LEAD", "0"),
        ("REFTRACK_RATE_LIMIT_LOGIN", "0"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let start = {
        let env = env.clone();
        move || {
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            Server::start(&env)
        }
    };
    let mut server = tokio::task::spawn_blocking(start.clone()).await.unwrap();
    let base = server.base.clone();
    let programs = Arc::new(setup(&base).await);

    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let stats = Arc::new(Stats::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients: Vec<_> = (0..CLIENTS)
        .map(|n| {
            tokio::spawn(client(
                n,
                base.clone(),
                programs.clone(),
                ledger.clone(),
                stats.clone(),
                stop.clone(),
            ))
        })
        .collect();
    clients.extend((0..VISITORS).map(|n| {
        tokio::spawn(visitor(
            n,
            base.clone(),
            programs.clone(),
            ledger.clone(),
            stats.clone(),
            stop.clone(),
        ))
    }));

    let mut rng = StdRng::from_entropy();
    let mut downtime = Duration::ZERO;
    for _ in 0..KILLS {
        tokio::time::sleep(Duration::from_millis(rng.gen_range(300..1500))).await;
        server.signal("KILL");
        server
            .wait_exit(Duration::from_secs(10))
            .expect("no exit after SIGKILL");
        let down = Instant::now();
        server = tokio::task::spawn_blocking(start.clone()).await.unwrap();
        downtime += down.elapsed();
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    stop.store(true, Ordering::SeqCst);
    for c in clients {
        c.await.expect("a client failed");
    }
    server.signal("TERM");
    let status = server
        .wait_exit(Duration::from_secs(30))
        .expect("no exit after SIGTERM");
    assert!(status.success(), "{status:?}: {}", server.output());

    // The integrity check: rollups and counters equal their recomputation, invariants hold.
    let out = command(&[("REFTRACK_DATABASE_URL", &url)])
        .arg("verify")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert!(out.status.success(), "reftrack verify: {report:#}");

    let ledger = std::mem::take(&mut *ledger.lock().unwrap());
    let customers: HashSet<String> = rows::<(String,)>(&url, "SELECT click_id FROM customers")
        .await
        .into_iter()
        .map(|r| r.0)
        .collect();
    for click in &ledger.clicks {
        assert!(customers.contains(click), "acknowledged click {click} lost");
    }
    let click_events: HashSet<String> = rows::<(String,)>(
        &url,
        "SELECT click_id FROM affiliate_click_events WHERE NOT is_test",
    )
    .await
    .into_iter()
    .map(|r| r.0)
    .collect();
    assert!(ledger.clicks.iter().all(|c| click_events.contains(c)));
    // A redirect answered after its commit never loses its click; one answered before may.
    let mut queued = 0;
    let mut queued_lost = 0;
    for (click, committed) in &ledger.redirects {
        let stored = click_events.contains(click);
        if *committed {
            assert!(
                stored,
                "redirect click {click} answered committed, then lost"
            );
        } else {
            queued += 1;
            queued_lost += usize::from(!stored);
        }
    }
    let leads: HashSet<String> = rows::<(String,)>(
        &url,
        "SELECT customer_key FROM affiliate_lead_events WHERE NOT is_test AND customer_id IS NOT NULL",
    )
    .await
    .into_iter()
    .map(|r| r.0)
    .collect();
    for lead in &ledger.leads {
        assert!(leads.contains(lead), "acknowledged lead {lead} lost");
    }
    let sales: Vec<(String, i64, i64, i64)> = rows(
        &url,
        "SELECT s.processor_event_id, s.amount_cents, s.refunded_cents, \
         CAST(CASE WHEN c.id IS NULL THEN 0 ELSE 1 END AS BIGINT) \
         FROM affiliate_sale_events s LEFT JOIN commissions c ON c.sale_id = s.id WHERE NOT s.is_test",
    )
    .await;
    let mut stored: HashMap<&str, (i64, i64, bool)> = HashMap::new();
    for (txn, amount, refunded, commission) in &sales {
        assert!(
            ledger.attempted_sales.contains(txn),
            "sale {txn} was never sent"
        );
        let dup = stored.insert(txn, (*amount, *refunded, *commission == 1));
        assert!(dup.is_none(), "transaction_id {txn} recorded twice");
    }
    for (txn, acked) in &ledger.sales {
        let (amount, refunded, commission) = *stored
            .get(txn.as_str())
            .unwrap_or_else(|| panic!("acknowledged sale {txn} lost"));
        assert_eq!(amount, acked.amount, "{txn}");
        assert_eq!(
            commission, acked.earns,
            "{txn}: commission present = {commission}"
        );
        let r = ledger.refunds.get(txn);
        let (lo, hi) = r.map_or((0, 0), |r| (r.acked, r.attempted));
        assert!(
            lo <= refunded && refunded <= hi,
            "{txn}: refunded {refunded}, acknowledged {lo}, sent {hi}"
        );
        if r.is_some_and(|r| r.full_acked) {
            assert_eq!(refunded, amount, "{txn}: full refund acknowledged");
        }
    }
    let refunds_acked = ledger.refunds.values().filter(|r| r.acked > 0).count();
    eprintln!(
        "crash test ({backend}): {KILLS} SIGKILLs, {:.1} s restarting in total, {:.1} s overall; \
         {} requests ({} unanswered, {} answered 503); acknowledged {} clicks, {} leads, {} sales, {} refunds; \
         {} sales and {} refunded sales in the database; {} redirects with a click, {} of them \
         answered before their commit, {} of those clicks lost",
        downtime.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        stats.requests.load(Ordering::Relaxed),
        stats.unanswered.load(Ordering::Relaxed),
        stats.unavailable.load(Ordering::Relaxed),
        ledger.clicks.len(),
        ledger.leads.len(),
        ledger.sales.len(),
        refunds_acked,
        sales.len(),
        sales.iter().filter(|s| s.2 > 0).count(),
        ledger.redirects.len(),
        queued,
        queued_lost,
    );
    assert!(
        ledger.redirects.len() >= 100,
        "too few redirects to prove anything"
    );
    assert!(
        ledger.sales.len() >= 30,
        "too little load to prove anything"
    );
    assert!(refunds_acked >= 5, "too few refunds to prove anything");
    assert_eq!(report["ok"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_survives_sigkill_under_load() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("crash.db").display());
    crash_and_check(url, "sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_survives_sigkill_under_load() {
    let url = crate::common::fresh_postgres_url().await;
    crate::common::dropping_database(url.clone(), crash_and_check(url, "postgres")).await;
}
