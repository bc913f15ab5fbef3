//! Money in every currency: the operator's exchange rates (API and the ECB file), a sale
//! in another currency converted at the rate of its date (directly, across the euro, or
//! from up to seven days before), a sale that waits for its rate and is converted once
//! the rate arrives, refunds in the sale's own currency, and the figures and payouts in
//! the program's currency.

use std::sync::Arc;

use crate::common::*;
use reftrack::domain::time::ManualClock;
use serde_json::{json, Value};

/// 2026-03-02T10:00:00Z, a Monday.
const START: i64 = 1_772_445_600_000;

const RATES: &str = "/exchange-rates";

async fn post_rates(app: &TestApp, rates: Value) -> Reply {
    app.admin("POST", RATES, Some(json!({ "rates": rates })))
        .await
}

async fn sale(app: &TestApp, seed: &Seed, key: &str, amount: i64, currency: &str) -> Value {
    let click_id = app.click(&seed.short_link).await;
    app.post_auth(
        "/api/v1/track/sale",
        &seed.api_token,
        json!({"click_id": click_id, "customer_key": key, "transaction_id": key,
               "amount_cents": amount, "currency": currency}),
    )
    .await
    .expect(200)
    .body
}

async fn commission(app: &TestApp, seed: &Seed, id: &Value) -> Value {
    let rows = app.commission_rows(seed.program_id).await;
    rows.into_iter().find(|c| &c["id"] == id).unwrap()
}

async fn revenue(app: &TestApp, seed: &Seed) -> (i64, i64, i64) {
    let n = |column: &str| {
        format!(
            "SELECT CAST(COALESCE(SUM({column}), 0) AS BIGINT) FROM daily_rollups WHERE program_id = {}",
            seed.program_id
        )
    };
    (
        app.count(&n("sales")).await,
        app.count(&n("revenue_cents")).await,
        app.count(&n("commission_cents")).await,
    )
}

on_both_backends!(the_operator_keeps_the_rates);
async fn the_operator_keeps_the_rates(app: TestApp) {
    let r = post_rates(
        &app,
        json!([
            {"date": "2026-11-27", "base": "EUR", "quote": "usd", "rate": 1.0423},
            {"date": "2026-11-27", "base": "eur", "quote": "jpy", "rate": 161.47},
        ]),
    )
    .await
    .expect(200);
    assert_eq!(r.body, json!({"imported": 2}));
    // Sent again, a rate replaces the stored one.
    post_rates(
        &app,
        json!([{"date": "2026-11-27", "base": "eur", "quote": "usd", "rate": 1.05}]),
    )
    .await
    .expect(200);
    let day = app
        .admin("GET", &format!("{RATES}?date=2026-11-27"), None)
        .await
        .expect(200);
    assert_eq!(
        day.body,
        json!([
            {"date": "2026-11-27", "base": "eur", "quote": "jpy", "rate": 161.47},
            {"date": "2026-11-27", "base": "eur", "quote": "usd", "rate": 1.05},
        ])
    );
    // One refused rate: 400 naming it, and nothing of the call is stored.
    for (rate, error) in [
        (
            json!({"date": "2026-11-28", "base": "eur", "quote": "usd", "rate": 0}),
            "rates[1].rate must be a number greater than 0",
        ),
        (
            json!({"date": "2026-11-28", "base": "eur", "quote": "usd", "rate": -2.5}),
            "rates[1].rate must be a number greater than 0",
        ),
        (
            json!({"date": "2026-11-28", "base": "eur", "quote": "xyz", "rate": 1.1}),
            "rates[1].quote must be an ISO 4217 currency code",
        ),
        (
            json!({"date": "28/11/2026", "base": "eur", "quote": "usd", "rate": 1.1}),
            "rates[1].date must be a date YYYY-MM-DD",
        ),
    ] {
        let ok = json!({"date": "2026-11-28", "base": "eur", "quote": "gbp", "rate": 0.83});
        let r = post_rates(&app, json!([ok, rate])).await.expect(400);
        assert_eq!(r.error(), error);
    }
    post_rates(&app, json!([])).await.expect(400);
    let none = app
        .admin("GET", &format!("{RATES}?date=2026-11-28"), None)
        .await
        .expect(200);
    assert_eq!(none.body, json!([]));
    app.admin("GET", &format!("{RATES}?date=tomorrow"), None)
        .await
        .expect(400);
    // A dashboard user is not the operator.
    let seed = app.seed().await;
    let token = owner(&app, &seed).await;
    let body = json!({"rates": [{"date": "2026-11-27", "base": "eur", "quote": "usd", "rate": 9}]});
    let r = app
        .post_auth(&format!("/api/admin{RATES}"), &token, body)
        .await;
    assert_eq!(r.status, 403, "{:?}", r.body);
}

/// A session token of an owner of the seed's workspace.
async fn owner(app: &TestApp, seed: &Seed) -> String {
    app.member(
        seed.workspace_id,
        "owner@example.com",
        "a long password 1",
        "owner",
    )
    .await;
    let session = app.login("owner@example.com", "a long password 1").await;
    session.body["token"].as_str().unwrap().to_string()
}

on_both_backends!(a_sale_in_another_currency_counts_converted);
async fn a_sale_in_another_currency_counts_converted(app: TestApp) {
    let app = app.with_clock(Arc::new(ManualClock::at(START)));
    let seed = app.seed().await; // usd, 20 %
                                 // Friday's rates: the Monday sale uses them (no rates since).
    post_rates(
        &app,
        json!([
            {"date": "2026-02-27", "base": "eur", "quote": "usd", "rate": 1.0423},
            {"date": "2026-02-27", "base": "eur", "quote": "jpy", "rate": 160},
        ]),
    )
    .await
    .expect(200);
    let s = sale(&app, &seed, "yen", 12_000, "jpy").await;
    let c = commission(&app, &seed, &s["commission_id"]).await;
    // ¥12,000 at 1.0423 / 160 = 0.006514375 is $78.17; 20 % of it is $15.63.
    assert_eq!(c["amount_cents"], 1_563);
    assert_eq!(c["currency"], "usd");
    assert_eq!(c["awaiting_rate"], false);
    assert_eq!(revenue(&app, &seed).await, (1, 7_817, 1_563));
    let stored = app
        .count(
            "SELECT COUNT(*) FROM affiliate_sale_events WHERE converted_amount_cents = 7817 \
                AND exchange_rate = '0.006514375' AND rate_date = '2026-02-27' \
                AND amount_cents = 12000 AND currency = 'jpy'",
        )
        .await;
    assert_eq!(stored, 1);
    // Euros straight from the stored pair, kept to the cent.
    let s = sale(&app, &seed, "euro", 10_000, "eur").await;
    assert_eq!(
        commission(&app, &seed, &s["commission_id"]).await["amount_cents"],
        2_085
    );
    // The same sale through its own flow (an email makes it leave the set-based batch)
    // is recorded alike.
    let click_id = app.click(&seed.short_link).await;
    let flow = app
        .post_auth(
            "/api/v1/track/sale",
            &seed.api_token,
            json!({"click_id": click_id, "customer_key": "euro-flow", "transaction_id": "euro-flow",
                   "amount_cents": 10_000, "currency": "eur", "customer_email": "buyer@example.com"}),
        )
        .await
        .expect(200)
        .body;
    let c = commission(&app, &seed, &flow["commission_id"]).await;
    assert_eq!(
        (c["amount_cents"].as_i64(), c["currency"].as_str()),
        (Some(2_085), Some("usd"))
    );
    let alike = app
        .count(
            "SELECT COUNT(*) FROM affiliate_sale_events WHERE processor_event_id IN ('euro', 'euro-flow') \
             AND converted_amount_cents = 10423 AND exchange_rate = '1.0423' AND rate_date = '2026-02-27' \
             AND NOT awaiting_rate",
        )
        .await;
    assert_eq!(alike, 2);
    app.post_auth(
        "/api/v1/track/refund",
        &seed.api_token,
        json!({"transaction_id": "euro-flow"}),
    )
    .await
    .expect(200);
    // A sale in the program's currency is as before.
    let s = sale(&app, &seed, "dollar", 10_000, "usd").await;
    assert_eq!(
        commission(&app, &seed, &s["commission_id"]).await["amount_cents"],
        2_000
    );
    assert_eq!(
        revenue(&app, &seed).await,
        (3, 7_817 + 10_423 + 10_000, 1_563 + 2_085 + 2_000)
    );
    // The dashboard's money is in dollars; the events list shows the yen sale's
    // conversion, and nothing of the kind on the dollar sale.
    let token = owner(&app, &seed).await;
    let auth = format!("Bearer {token}");
    let perf = app
        .send(
            "GET",
            &format!("/api/tracking/performance/{}?period=all", seed.program_id),
            None,
            &[("authorization", &auth)],
        )
        .await
        .expect(200);
    assert_eq!(perf.body["metrics"]["totalRevenue"], json!(282.4));
    let events = app
        .send(
            "GET",
            &format!("/api/tracking/events/{}", seed.program_id),
            None,
            &[("authorization", &auth)],
        )
        .await
        .expect(200);
    let listed = events.body.to_string();
    assert!(listed.contains("\"exchange_rate\":0.006514375"), "{listed}");
    assert!(
        listed.contains("\"converted_amount_cents\":7817"),
        "{listed}"
    );
    assert_eq!(listed.matches("exchange_rate").count(), 3, "{listed}");
    // A partial refund in yen takes back the same share, in dollars.
    let r = app
        .post_auth(
            "/api/v1/track/refund",
            &seed.api_token,
            json!({"transaction_id": "yen", "refund_amount_cents": 6_000}),
        )
        .await
        .expect(200);
    assert_eq!(r.body["deduction_amount"], json!(7.81));
    let after = revenue(&app, &seed).await;
    assert_eq!(after.1, 7_817 - 3_909 + 10_423 + 10_000);
    app.post_auth(
        "/api/v1/track/refund",
        &seed.api_token,
        json!({"transaction_id": "yen"}),
    )
    .await
    .expect(200);
    assert_eq!(
        revenue(&app, &seed).await,
        (2, 10_423 + 10_000, 2_085 + 2_000)
    );
    assert_clean(&reftrack::verify::check(&*app.store).await.unwrap());
    // Its figures and balances are in dollars now: the currency stays.
    let r = app
        .admin(
            "PATCH",
            &format!("/programs/{}", seed.program_id),
            Some(json!({"currency": "eur"})),
        )
        .await
        .expect(409);
    assert!(r.error().contains("cannot change"), "{}", r.error());
    // A program without sales may still change it.
    let fresh = app.seed().await;
    let r = app
        .admin(
            "PATCH",
            &format!("/programs/{}", fresh.program_id),
            Some(json!({"currency": "EUR"})),
        )
        .await
        .expect(200);
    assert_eq!(r.body["currency"], "eur");
}

on_both_backends!(a_sale_waits_for_its_rate_and_is_converted_once);
async fn a_sale_waits_for_its_rate_and_is_converted_once(app: TestApp) {
    let app = app.with_clock(Arc::new(ManualClock::at(START)));
    let seed = app.seed().await;
    // Rates older than seven days do not convert.
    post_rates(
        &app,
        json!([{"date": "2026-02-20", "base": "gbp", "quote": "usd", "rate": 1.25}]),
    )
    .await
    .expect(200);
    let s = sale(&app, &seed, "pound", 8_000, "gbp").await;
    let c = commission(&app, &seed, &s["commission_id"]).await;
    assert_eq!(c["amount_cents"], 0);
    assert_eq!(c["awaiting_rate"], true);
    assert_eq!(c["status"], "pending");
    assert_eq!(
        c["description"],
        "Waiting for an exchange rate: £80.00 sale"
    );
    // It counts as a sale, without revenue, and cannot be approved.
    assert_eq!(revenue(&app, &seed).await, (1, 0, 0));
    let r = app
        .admin("POST", &format!("/commissions/{}/approve", c["id"]), None)
        .await
        .expect(409);
    assert!(r.error().contains("exchange rate"), "{}", r.error());
    // Nothing to convert yet.
    assert_eq!(app.state.app.convert_waiting_sales().await.unwrap(), 0);
    // A refund in pounds while it waits takes nothing from the figures.
    app.post_auth(
        "/api/v1/track/refund",
        &seed.api_token,
        json!({"transaction_id": "pound", "refund_amount_cents": 2_000}),
    )
    .await
    .expect(200);
    post_rates(
        &app,
        json!([{"date": "2026-03-01", "base": "usd", "quote": "gbp", "rate": 0.8}]),
    )
    .await
    .expect(200);
    assert_eq!(app.state.app.convert_waiting_sales().await.unwrap(), 1);
    assert_eq!(app.state.app.convert_waiting_sales().await.unwrap(), 0);
    // £80.00 at 1 / 0.8 is $100.00; 20 % is $20.00, less the quarter refunded.
    let c = commission(&app, &seed, &s["commission_id"]).await;
    assert_eq!(c["awaiting_rate"], false);
    assert_eq!(c["amount_cents"], 1_500);
    assert_eq!(revenue(&app, &seed).await, (1, 7_500, 1_500));
    app.admin("POST", &format!("/commissions/{}/approve", c["id"]), None)
        .await
        .expect(200);
    assert_clean(&reftrack::verify::check(&*app.store).await.unwrap());
}

/// `reftrack rates import` reads both shapes of the ECB's file.
#[tokio::test]
async fn the_command_line_imports_the_ecb_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = crate::common::server::migrated_cli_db(dir.path());
    let daily = dir.path().join("eurofxref.csv");
    std::fs::write(
        &daily,
        "Date, USD, JPY, BGN, CYP, GBP, \n27 November 2026, 1.0423, 161.47, 1.9558, N/A, 0.83210, \n",
    )
    .unwrap();
    let (ok, out) = crate::common::server::cli(&db, &["rates", "import", daily.to_str().unwrap()]);
    assert!(ok, "{out}");
    assert_eq!(out["stored"], 4);
    assert_eq!(out["first_day"], "2026-11-27");
    assert_eq!(out["skipped_currencies"], json!(["CYP"]));
    let hist = dir.path().join("eurofxref-hist.csv");
    std::fs::write(
        &hist,
        "Date,USD,JPY,GBP,\n2026-11-27,1.05,161.47,0.8321,\n2026-11-26,1.0398,N/A,0.8330,\n",
    )
    .unwrap();
    let (ok, out) = crate::common::server::cli(&db, &["rates", "import", hist.to_str().unwrap()]);
    assert!(ok, "{out}");
    assert_eq!(out["stored"], 5);
    assert_eq!(out["first_day"], "2026-11-26");
    assert_eq!(out["last_day"], "2026-11-27");
    let usd = reftrack_count(
        &db,
        "SELECT COUNT(*) FROM exchange_rates WHERE rate_date = '2026-11-27' AND base = 'eur' \
         AND quote = 'usd' AND rate = '1.05'",
    )
    .await;
    assert_eq!(usd, 1);
    assert_eq!(
        reftrack_count(&db, "SELECT COUNT(*) FROM exchange_rates").await,
        6
    );
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "Day,USD\n2026-11-27,1.1\n").unwrap();
    let (ok, out) = crate::common::server::cli(&db, &["rates", "import", bad.to_str().unwrap()]);
    assert!(!ok);
    assert!(out.to_string().contains("Date"), "{out}");
}

/// Serves `body` at every path of a local port as HTTP `status`, for the rate fetch;
/// the URL of `/eurofxref.csv` there.
async fn file_server(status: u16, body: &'static str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let answer = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/eurofxref.csv")
}

const DAILY_FILE: &str = "Date, USD, JPY, GBP, \n27 November 2026, 1.0423, 161.47, 0.83210, \n";

on_both_backends!(the_daily_fetch_stores_the_ecbs_rates);
async fn the_daily_fetch_stores_the_ecbs_rates(app: TestApp) {
    let url = file_server(200, DAILY_FILE).await;
    let done = app.state.app.fetch_ecb_rates(&url).await.unwrap();
    assert_eq!((done.stored, done.last_day.as_str()), (3, "2026-11-27"));
    let day = app
        .admin("GET", &format!("{RATES}?date=2026-11-27"), None)
        .await
        .expect(200);
    assert_eq!(day.body.as_array().unwrap().len(), 3);
    // A missing file, a page that is no rate file, or no server: an error, nothing stored.
    let missing = file_server(404, "not here").await;
    assert!(app.state.app.fetch_ecb_rates(&missing).await.is_err());
    let page = file_server(200, "<html>maintenance</html>").await;
    assert!(app.state.app.fetch_ecb_rates(&page).await.is_err());
    assert!(app
        .state
        .app
        .fetch_ecb_rates("http://127.0.0.1:9/eurofxref.zip")
        .await
        .is_err());
    assert_eq!(app.count("SELECT COUNT(*) FROM exchange_rates").await, 3);
}

/// The server with `REFTRACK_FETCH_ECB_RATES` fetches at start; one whose fetch fails
/// logs it and serves on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_fetches_rates_when_asked_and_serves_on_when_it_cannot() {
    use crate::common::server::Server;
    let dir = tempfile::tempdir().unwrap();
    let db = crate::common::server::migrated_cli_db(dir.path());
    let url = file_server(200, DAILY_FILE).await;
    let server = Server::on(
        &db,
        ADMIN_TOKEN,
        &[
            ("REFTRACK_FETCH_ECB_RATES", "1"),
            ("REFTRACK_ECB_RATES_URL", &url),
        ],
    );
    let mut stored = 0;
    for _ in 0..100 {
        stored = reftrack_count(&db, "SELECT COUNT(*) FROM exchange_rates").await;
        if stored == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(stored, 3, "{}", server.output());
    drop(server);
    let failing = Server::on(
        &db,
        ADMIN_TOKEN,
        &[
            ("REFTRACK_FETCH_ECB_RATES", "1"),
            ("REFTRACK_ECB_RATES_URL", "http://127.0.0.1:9/eurofxref.zip"),
        ],
    );
    let mut logged = false;
    for _ in 0..100 {
        if failing
            .output()
            .contains("fetching the ECB's reference rates failed")
        {
            logged = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(logged, "{}", failing.output());
    let health = reqwest::get(format!("http://{}/healthz", failing.listen()))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
}

/// Two services on one PostgreSQL database converting the same waiting sales at once
/// convert each once: the figures count each sale's revenue once, and every commission
/// has its amount.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_convert_each_waiting_sale_once() {
    let url = fresh_postgres_url().await;
    dropping_database(url.clone(), async {
        let a = TestApp::at(url.clone()).await;
        let b = TestApp::at(url.clone()).await;
        let seed = a.seed().await;
        let n: i64 = 1_200;
        let sales = (0..n).map(|i| {
            let (a, seed) = (&a, &seed);
            async move {
                let click_id = a.click(&seed.short_link).await;
                a.post_auth(
                    "/api/v1/track/sale",
                    &seed.api_token,
                    json!({"click_id": click_id, "customer_key": format!("c{i}"),
                           "transaction_id": format!("chf_{i}"), "amount_cents": 1_000,
                           "currency": "chf"}),
                )
                .await
                .expect(200);
            }
        });
        futures::future::join_all(sales).await;
        assert_eq!(
            a.count("SELECT COUNT(*) FROM affiliate_sale_events WHERE awaiting_rate").await,
            n
        );
        let today = reftrack::domain::time::day_of(a.state.app.now_ms());
        a.admin(
            "POST",
            RATES,
            Some(json!({"rates": [{"date": today, "base": "chf", "quote": "usd", "rate": 1.25}]})),
        )
        .await
        .expect(200);
        let (x, y) = tokio::join!(
            a.state.app.convert_waiting_sales(),
            b.state.app.convert_waiting_sales()
        );
        let (x, y) = (x.unwrap(), y.unwrap());
        // Each converted some, and together every sale, once.
        assert_eq!(x + y, n as u64, "{x} + {y}");
        assert_eq!(
            a.count("SELECT COUNT(*) FROM affiliate_sale_events WHERE awaiting_rate").await,
            0
        );
        // CHF 10.00 is $12.50; 20 % of it $2.50.
        let revenue = a
            .count(&format!(
                "SELECT CAST(SUM(revenue_cents) AS BIGINT) FROM daily_rollups WHERE program_id = {}",
                seed.program_id
            ))
            .await;
        assert_eq!(revenue, n * 1_250);
        assert_eq!(
            a.count("SELECT COUNT(*) FROM commissions WHERE amount_cents = 250 AND NOT awaiting_rate")
                .await,
            n
        );
        assert_clean(&reftrack::verify::check(&*a.store).await.unwrap());
    })
    .await;
}

on_both_backends!(a_converted_sales_revenue_moves_a_revenue_bounty);
async fn a_converted_sales_revenue_moves_a_revenue_bounty(app: TestApp) {
    let app = app.with_clock(Arc::new(ManualClock::at(START)));
    let seed = app.seed().await;
    app.admin(
        "POST",
        &format!("/programs/{}/bounties", seed.program_id),
        Some(
            json!({"name": "A hundred dollars", "metric": "revenue_cents",
                    "threshold": 10_000, "amount_cents": 2_500}),
        ),
    )
    .await
    .expect(201);
    // CHF 80.00 waits: it counts no revenue yet, and earns no bounty.
    sale(&app, &seed, "franc", 8_000, "chf").await;
    const BOUNTIES: &str = "SELECT COUNT(*) FROM commissions WHERE kind = 'bounty'";
    assert_eq!(app.count(BOUNTIES).await, 0);
    post_rates(
        &app,
        json!([{"date": "2026-03-02", "base": "chf", "quote": "usd", "rate": 1.25}]),
    )
    .await
    .expect(200);
    assert_eq!(app.state.app.convert_waiting_sales().await.unwrap(), 1);
    // $100.00 of revenue reaches the goal.
    assert_eq!(app.count(BOUNTIES).await, 1);
    assert_eq!(app.count("SELECT value FROM bounty_progress").await, 10_000);
    assert_clean(&reftrack::verify::check(&*app.store).await.unwrap());
}

/// Two server processes on one PostgreSQL database, neither told of the rate (it is
/// written straight into the database, as another process's import would be): their
/// periodic passes convert the waiting sales within a minute, each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_server_processes_convert_waiting_sales_within_a_minute_once() {
    use crate::common::server::Server;
    let url = fresh_postgres_url().await;
    dropping_database(url.clone(), async {
        let a = TestApp::at(url.clone()).await;
        let seed = a.seed().await;
        let n: i64 = 300;
        for i in 0..n {
            let click_id = a.click(&seed.short_link).await;
            a.post_auth(
                "/api/v1/track/sale",
                &seed.api_token,
                json!({"click_id": click_id, "customer_key": format!("p{i}"),
                       "transaction_id": format!("proc_{i}"), "amount_cents": 1_000,
                       "currency": "chf"}),
            )
            .await
            .expect(200);
        }
        let first = Server::on(&url, ADMIN_TOKEN, &[]);
        let second = Server::on(&url, ADMIN_TOKEN, &[]);
        let today = reftrack::domain::time::day_of(a.state.app.now_ms());
        reftrack_exec(
            &url,
            &format!(
                "INSERT INTO exchange_rates (rate_date, base, quote, rate, updated_at) \
                 VALUES ('{today}', 'chf', 'usd', '1.25', 0)"
            ),
        )
        .await;
        let waiting = "SELECT COUNT(*) FROM affiliate_sale_events WHERE awaiting_rate";
        let mut left = n;
        for _ in 0..700 {
            left = reftrack_count(&url, waiting).await;
            if left == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(left, 0, "{}\n{}", first.output(), second.output());
        let revenue = reftrack_count(
            &url,
            "SELECT CAST(SUM(revenue_cents) AS BIGINT) FROM daily_rollups",
        )
        .await;
        assert_eq!(revenue, n * 1_250);
        assert_eq!(
            reftrack_count(
                &url,
                "SELECT COUNT(*) FROM commissions WHERE amount_cents = 250"
            )
            .await,
            n
        );
        assert_clean(&reftrack::verify::check(&*a.store).await.unwrap());
        drop((first, second));
    })
    .await;
}
