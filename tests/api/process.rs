//! The real binary: zero-configuration start, restart, shutdown, the CLI, and two
//! processes sharing one PostgreSQL database.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A running `reftrack` process and what it printed before serving.
struct Server {
    child: Child,
    base: String,
    banner: Vec<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// [`crate::common::server::command`] run in `dir`.
fn command(dir: &std::path::Path, env: &[(&str, &str)]) -> Command {
    let mut cmd = crate::common::server::command(env);
    cmd.current_dir(dir);
    cmd
}

/// Runs the binary with `args` on the database at `db`: whether it succeeded, and what it
/// printed (its output, or its error output when it failed).
fn cli(dir: &std::path::Path, db: &str, args: &[&str]) -> (bool, String) {
    crate::common::server::outcome(command(dir, &[("REFTRACK_DATABASE_URL", db)]).args(args))
}

/// Starts the server and waits for its "serving on" line.
fn start(dir: &std::path::Path, env: &[(&str, &str)]) -> Server {
    let mut child = command(dir, env)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut banner = Vec::new();
    let base = loop {
        let line = lines.next().expect("server exited before serving").unwrap();
        banner.push(line.clone());
        if let Some(addr) = line.strip_prefix("Reftrack is serving on ") {
            break addr.trim().to_string();
        }
    };
    for _ in 0..3 {
        if let Some(Ok(line)) = lines.next() {
            banner.push(line);
        }
    }
    std::thread::spawn(move || for _ in lines {});
    Server {
        child,
        base,
        banner,
    }
}

async fn call(
    method: reqwest::Method,
    url: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let client = reqwest::Client::new();
    let mut req = client.request(method, url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn zero_configuration_start_restart_and_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    // No configuration at all: 127.0.0.1:8080 and ./reftrack.db.
    let first = start(dir.path(), &[]);
    assert_eq!(first.base, "http://127.0.0.1:8080");
    assert!(dir.path().join("reftrack.db").exists());
    let token = first
        .banner
        .iter()
        .find_map(|l| l.split_whitespace().find(|w| w.starts_with("rta_")))
        .unwrap_or_else(|| panic!("no admin token printed: {:?}", first.banner))
        .to_string();
    let (status, body) = call(
        reqwest::Method::GET,
        &format!("{}/readyz", first.base),
        None,
        None,
    )
    .await;
    assert_eq!((status, body), (200, json!({"status": "ready"})));
    let (status, _) = call(
        reqwest::Method::POST,
        &format!("{}/api/admin/workspaces", first.base),
        Some(&token),
        Some(json!({"name": "A"})),
    )
    .await;
    assert_eq!(status, 201);

    // SIGTERM: a clean exit, quickly.
    let mut first = first;
    let pid = first.child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = first.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");

    // Restart: same data, no new token, the first token still works.
    let second = start(dir.path(), &[("REFTRACK_LISTEN", "127.0.0.1:0")]);
    assert!(
        !second.banner.iter().any(|l| l.contains("rta_")),
        "{:?}",
        second.banner
    );
    let (status, _) = call(
        reqwest::Method::POST,
        &format!("{}/api/admin/workspaces", second.base),
        Some(&token),
        Some(json!({"name": "B"})),
    )
    .await;
    assert_eq!(status, 201);
    let (status, _) = call(
        reqwest::Method::POST,
        &format!("{}/api/admin/workspaces", second.base),
        Some("rta_wrong"),
        Some(json!({"name": "C"})),
    )
    .await;
    assert_eq!(status, 401);
}

#[test]
fn invalid_configuration_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    for env in [
        vec![("REFTRACK_LISTEN", "not-an-address")],
        vec![
            ("REFTRACK_ADMIN_TOKEN", "short"),
            ("REFTRACK_LISTEN", "127.0.0.1:0"),
        ],
        vec![
            ("REFTRACK_TRUSTED_PROXIES", "nonsense"),
            ("REFTRACK_LISTEN", "127.0.0.1:0"),
        ],
        vec![
            ("REFTRACK_GEOIP_DB", "/nonexistent.mmdb"),
            ("REFTRACK_LISTEN", "127.0.0.1:0"),
        ],
        vec![
            ("REFTRACK_DATABASE_URL", "mysql://x"),
            ("REFTRACK_LISTEN", "127.0.0.1:0"),
        ],
    ] {
        let out = command(dir.path(), &env).output().unwrap();
        assert!(!out.status.success(), "{env:?} was accepted");
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn cli_admin_commands_print_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("cli.db").display());
    let run = |args: &[&str]| {
        let (ok, text) = cli(dir.path(), &db, args);
        (
            ok,
            serde_json::from_str::<Value>(&text).unwrap_or(Value::Null),
        )
    };
    let migrate = command(dir.path(), &[("REFTRACK_DATABASE_URL", &db)])
        .arg("migrate")
        .output()
        .unwrap();
    assert!(migrate.status.success());
    let (ok, ws) = run(&["admin", "create-workspace", "name=Acme Inc"]);
    assert!(ok);
    assert_eq!(ws["name"], "Acme Inc");
    let (ok, program) = run(&[
        "admin",
        "create-program",
        "workspace_id:=1",
        "name=Partners",
        r#"commission:={"type":"flat","amount_cents":500}"#,
    ]);
    assert!(ok, "{program}");
    assert!(program["api_token"].as_str().unwrap().starts_with("rtk_"));
    assert_eq!(program["commission"]["amount_cents"], 500);
    // A field of the wrong type is named, as the API names it.
    let (ok, refused) = run(&[
        "admin",
        "create-program",
        "workspace_id:=1",
        "name=X",
        "cookie_window_days=sixty",
    ]);
    assert!(!ok);
    assert_eq!(
        refused["error"],
        "Invalid request body: cookie_window_days: invalid type: string \"sixty\", expected i64"
    );
    let (ok, partner) = run(&["admin", "create-partner", "name=Alice", "code=alice"]);
    assert!(ok);
    let (ok, _) = run(&[
        "admin",
        "add-program-partner",
        "1",
        &format!("partner_id:={}", partner["id"]),
    ]);
    assert!(ok);
    let (ok, link) = run(&[
        "admin",
        "create-link",
        "program_id:=1",
        "partner_id:=1",
        "short_link=alice",
    ]);
    assert!(ok);
    assert_eq!(link["clicks"], 0);
    let (ok, link) = run(&["admin", "update-link", "1", "status=inactive"]);
    assert!(ok);
    assert_eq!(link["status"], "inactive");
    let (ok, got) = run(&["admin", "get-program", "1"]);
    assert!(ok);
    assert_eq!(got["name"], "Partners");
    // Lists and the partner's standing, as the management API answers them.
    let (ok, list) = run(&["admin", "list-programs", "--workspace-id", "1"]);
    assert!(ok, "{list}");
    assert_eq!(list["data"][0]["name"], "Partners");
    let (ok, list) = run(&["admin", "list-partners", "--q", "ALI", "--limit", "1"]);
    assert!(ok, "{list}");
    assert_eq!(list["data"][0]["code"], "alice");
    let (ok, list) = run(&["admin", "list-links", "--status", "inactive"]);
    assert!(ok, "{list}");
    assert_eq!(list["data"][0]["short_link"], "alice");
    let (ok, pp) = run(&["admin", "set-partner-status", "1", "1", "status=banned"]);
    assert!(ok, "{pp}");
    assert_eq!(pp["status"], "banned");
    let (ok, list) = run(&["admin", "list-program-partners", "1", "--status", "banned"]);
    assert!(ok, "{list}");
    assert_eq!(list["data"][0]["partner_id"], 1);
    let out = command(dir.path(), &[("REFTRACK_DATABASE_URL", &db)])
        .args(["admin", "list-program-partners", "1", "--csv"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let csv = String::from_utf8(out.stdout).unwrap();
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(csv.lines().nth(1).unwrap().contains("alice"), "{csv}");
    // An invite link on the public URL; without one the command is refused.
    let (ok, _) = run(&["admin", "update-partner", "1", "email=alice@example.com"]);
    assert!(ok);
    let (ok, invite) = run(&[
        "admin",
        "invite-partner",
        "1",
        "--public-url",
        "https://track.example.com",
    ]);
    assert!(ok, "{invite}");
    assert!(invite["invite_url"]
        .as_str()
        .unwrap()
        .starts_with("https://track.example.com/partner/invite?token=rti_"));
    assert_eq!(invite["emailed"], false);
    let (ok, _) = run(&["admin", "invite-partner", "1"]);
    assert!(!ok, "an invite needs the public URL");
    let (ok, err) = run(&["admin", "list-workspaces", "--limit", "0"]);
    assert!(!ok);
    assert!(err["error"].as_str().unwrap().contains("limit"), "{err}");
    // Errors: same statuses' texts, non-zero exit.
    let (ok, err) = run(&["admin", "create-partner", "name=Again", "code=alice"]);
    assert!(!ok);
    assert!(err["error"].as_str().unwrap().contains("already exists"));
    let (ok, err) = run(&["admin", "get-program", "42"]);
    assert!(!ok);
    assert_eq!(err["error"], "Program not found");
    let (ok, _) = run(&["admin", "create-program", "workspace_id=1", "name=x"]);
    assert!(!ok, "a string where an integer is due is refused");
    let (ok, token) = run(&["admin", "rotate-admin-token"]);
    assert!(ok);
    assert!(token["admin_token"].as_str().unwrap().starts_with("rta_"));
}

/// The admin token of the servers of [`two_servers`].
const RACE_ADMIN: &str = "rta_race_test_admin_token";

/// Two servers on the database at `url`, with [`RACE_ADMIN`] as their admin token.
fn two_servers(dir: &std::path::Path, url: &str) -> (Server, Server) {
    let env = [
        ("REFTRACK_DATABASE_URL", url),
        ("REFTRACK_LISTEN", "127.0.0.1:0"),
        ("REFTRACK_ADMIN_TOKEN", RACE_ADMIN),
    ];
    (start(dir, &env), start(dir, &env))
}

/// A JSON POST to `path` of the server at `base` with a bearer token.
async fn post(base: &str, path: &str, token: &str, body: Value) -> (u16, Value) {
    call(
        reqwest::Method::POST,
        &format!("{base}{path}"),
        Some(token),
        Some(body),
    )
    .await
}

/// Two server processes on one PostgreSQL database, hit with the same `transaction_id`
/// at once: exactly one sale is recorded each time.
#[tokio::test]
async fn two_processes_race_the_same_transaction_id() {
    let url = crate::common::fresh_postgres_url().await;
    crate::common::dropping_database(url.clone(), race_the_same_transaction_id(url)).await;
}

async fn race_the_same_transaction_id(url: String) {
    let dir = tempfile::tempdir().unwrap();
    let admin = RACE_ADMIN;
    let (a, b) = two_servers(dir.path(), &url);
    let (_, ws) = post(
        &a.base,
        "/api/admin/workspaces",
        admin,
        json!({"name": "W"}),
    )
    .await;
    let (_, program) = post(
        &b.base,
        "/api/admin/programs",
        admin,
        json!({"workspace_id": ws["id"], "name": "P"}),
    )
    .await;
    let key = program["api_token"].as_str().unwrap().to_string();
    let (_, partner) = post(
        &a.base,
        "/api/admin/partners",
        admin,
        json!({"name": "A", "code": "a"}),
    )
    .await;
    post(
        &a.base,
        "/api/admin/programs/1/partners",
        admin,
        json!({"partner_id": partner["id"]}),
    )
    .await;
    post(
        &a.base,
        "/api/admin/links",
        admin,
        json!({"program_id": 1, "partner_id": partner["id"], "short_link": "a"}),
    )
    .await;
    let (_, click) = post(
        &b.base,
        "/api/v1/track/click",
        "",
        json!({"affiliate_url": "https://x.io/?aff=a"}),
    )
    .await;
    let (status, _) = post(
        &a.base,
        "/api/v1/track/lead",
        &key,
        json!({"click_id": click["click_id"], "customer_key": "k"}),
    )
    .await;
    assert_eq!(status, 200);
    let rounds = 25;
    for i in 0..rounds {
        let body = json!({"transaction_id": format!("txn_{i}"), "amount_cents": 1000, "customer_key": "k"});
        let (ra, rb) = tokio::join!(
            post(&a.base, "/api/v1/track/sale", &key, body.clone()),
            post(&b.base, "/api/v1/track/sale", &key, body)
        );
        let mut statuses = [ra.0, rb.0];
        statuses.sort();
        assert_eq!(statuses, [200, 409], "round {i}: {ra:?} {rb:?}");
        // The refused one names the sale the other recorded.
        let (won, lost) = if ra.0 == 200 {
            (&ra.1, &rb.1)
        } else {
            (&rb.1, &ra.1)
        };
        assert_eq!(lost["sale_id"], won["sale_id"], "round {i}: {lost}");
    }
    assert_eq!(
        crate::common::reftrack_count(&url, "SELECT COUNT(*) FROM affiliate_sale_events").await,
        rounds
    );
    assert_eq!(
        crate::common::reftrack_count(&url, "SELECT COUNT(*) FROM commissions").await,
        rounds
    );
    assert_eq!(
        crate::common::reftrack_count(&url, "SELECT CAST(SUM(sales) AS BIGINT) FROM daily_rollups")
            .await,
        rounds
    );

    // Two partial refunds of one sale at once, more than it has together: one is
    // applied, the other finds too little left. The same refund sent to both: applied
    // once, the other answer `skipped`.
    let refund = "/api/v1/track/refund";
    for i in 0..rounds {
        let txn = format!("txn_{i}");
        let (ra, rb) = tokio::join!(
            post(
                &a.base,
                refund,
                &key,
                json!({"transaction_id": txn, "refund_amount_cents": 600, "refund_id": "a"})
            ),
            post(
                &b.base,
                refund,
                &key,
                json!({"transaction_id": txn, "refund_amount_cents": 600, "refund_id": "b"})
            )
        );
        let mut statuses = [ra.0, rb.0];
        statuses.sort();
        assert_eq!(statuses, [200, 400], "round {i}: {ra:?} {rb:?}");
        let same = json!({"transaction_id": txn, "refund_amount_cents": 100, "refund_id": "c"});
        let (ra, rb) = tokio::join!(
            post(&a.base, refund, &key, same.clone()),
            post(&b.base, refund, &key, same)
        );
        let mut answers = [ra.1["status"].clone(), rb.1["status"].clone()];
        answers.sort_by_key(|s| s.to_string());
        assert_eq!(
            answers,
            [json!("refunded"), json!("skipped")],
            "round {i}: {ra:?} {rb:?}"
        );
    }
    assert_eq!(
        crate::common::reftrack_count(
            &url,
            "SELECT COUNT(*) FROM affiliate_sale_events WHERE refunded_cents <> 700"
        )
        .await,
        0
    );
}

/// Two server processes on one PostgreSQL database create payouts of one program at
/// once: one creates it, the other finds nothing left (409); no commission is held twice.
#[tokio::test]
async fn two_processes_race_payout_creation() {
    let url = crate::common::fresh_postgres_url().await;
    crate::common::dropping_database(url.clone(), race_payouts(url)).await;
}

async fn race_payouts(url: String) {
    let dir = tempfile::tempdir().unwrap();
    let admin = RACE_ADMIN;
    let (a, b) = two_servers(dir.path(), &url);
    let (_, ws) = post(
        &a.base,
        "/api/admin/workspaces",
        admin,
        json!({"name": "W"}),
    )
    .await;
    let (_, program) = post(
        &a.base,
        "/api/admin/programs",
        admin,
        json!({"workspace_id": ws["id"], "name": "P", "commission_hold_days": 0, "min_payout_cents": 0}),
    )
    .await;
    let key = program["api_token"].as_str().unwrap().to_string();
    let p = program["id"].as_i64().unwrap();
    for code in ["a", "b", "c"] {
        let (_, partner) = post(
            &a.base,
            "/api/admin/partners",
            admin,
            json!({"name": code, "code": code}),
        )
        .await;
        let id = partner["id"].as_i64().unwrap();
        let (status, _) = call(
            reqwest::Method::PATCH,
            &format!("{}/api/admin/partners/{id}", a.base),
            Some(admin),
            Some(json!({"payout_email": format!("{code}@example.com")})),
        )
        .await;
        assert_eq!(status, 200);
        post(
            &a.base,
            &format!("/api/admin/programs/{p}/partners"),
            admin,
            json!({"partner_id": id}),
        )
        .await;
        post(
            &a.base,
            "/api/admin/links",
            admin,
            json!({"program_id": p, "partner_id": id, "short_link": code}),
        )
        .await;
    }
    let rounds = 10;
    for round in 0..rounds {
        for code in ["a", "b", "c"] {
            let (_, click) = post(
                &b.base,
                "/api/v1/track/click",
                "",
                json!({"affiliate_url": format!("https://x.io/?aff={code}")}),
            )
            .await;
            let (status, _) = post(
                &a.base,
                "/api/v1/track/sale",
                &key,
                json!({"transaction_id": format!("t{round}{code}"), "amount_cents": 1000, "click_id": click["click_id"]}),
            )
            .await;
            assert_eq!(status, 200);
        }
        let path = format!("/api/admin/programs/{p}/payouts");
        let (ra, rb) = tokio::join!(
            post(&a.base, &path, admin, json!({})),
            post(&b.base, &path, admin, json!({}))
        );
        let mut statuses = [ra.0, rb.0];
        statuses.sort();
        assert_eq!(statuses, [201, 409], "round {round}: {ra:?} {rb:?}");
        let made = if ra.0 == 201 { &ra.1 } else { &rb.1 };
        assert_eq!(made["items"].as_array().unwrap().len(), 3);
        assert_eq!(made["total_cents"], 600);
    }
    let count = |sql: &'static str| {
        let url = url.clone();
        async move { crate::common::reftrack_count(&url, sql).await }
    };
    assert_eq!(count("SELECT COUNT(*) FROM payouts").await, rounds);
    assert_eq!(
        count("SELECT COUNT(*) FROM commissions WHERE payout_id IS NULL").await,
        0
    );
    assert_eq!(
        count("SELECT CAST(SUM(commission_count) AS BIGINT) FROM payout_items").await,
        3 * rounds
    );
}

/// `reftrack commissions …` and `reftrack payouts …` call the same operations as the API.
#[tokio::test]
async fn cli_pays_partners() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("pay.db").display());
    let admin = "rta_cli_test_admin_token";
    {
        let server = start(
            dir.path(),
            &[
                ("REFTRACK_DATABASE_URL", &db),
                ("REFTRACK_LISTEN", "127.0.0.1:0"),
                ("REFTRACK_ADMIN_TOKEN", admin),
            ],
        );
        let base = server.base.as_str();
        post(base, "/api/admin/workspaces", admin, json!({"name": "W"})).await;
        let (_, program) = post(base, "/api/admin/programs",
            admin,
            json!({"workspace_id": 1, "name": "P", "commission_hold_days": 0, "min_payout_cents": 1000}),
        )
        .await;
        let key = program["api_token"].as_str().unwrap().to_string();
        post(
            base,
            "/api/admin/partners",
            admin,
            json!({"name": "Ann", "code": "ann"}),
        )
        .await;
        post(
            base,
            "/api/admin/programs/1/partners",
            admin,
            json!({"partner_id": 1}),
        )
        .await;
        post(
            base,
            "/api/admin/links",
            admin,
            json!({"program_id": 1, "partner_id": 1, "short_link": "ann"}),
        )
        .await;
        for t in ["t1", "t2"] {
            let (_, click) = post(
                base,
                "/api/v1/track/click",
                "",
                json!({"affiliate_url": "https://x.io/?aff=ann"}),
            )
            .await;
            let (status, _) = post(
                base,
                "/api/v1/track/sale",
                &key,
                json!({"transaction_id": t, "amount_cents": 20000, "click_id": click["click_id"]}),
            )
            .await;
            assert_eq!(status, 200);
        }
    }
    let run = |args: &[&str]| cli(dir.path(), &db, args);
    let json = |text: &str| serde_json::from_str::<Value>(text).unwrap();
    let (ok, out) = run(&["commissions", "list", "1", "--status", "approved"]);
    assert!(ok, "{out}");
    assert_eq!(json(&out)["data"].as_array().unwrap().len(), 2);
    let (ok, out) = run(&["commissions", "reject", "1", "--reason", "test order"]);
    assert!(ok, "{out}");
    assert_eq!(json(&out)["status"], "rejected");
    let (ok, out) = run(&["payouts", "create", "1"]);
    assert!(!ok, "Ann has no payout email yet");
    assert!(json(&out)["error"]
        .as_str()
        .unwrap()
        .contains("payout email"));
    let (ok, _) = run(&[
        "admin",
        "update-partner",
        "1",
        "payout_email=ann@example.com",
        "payout_method=paypal",
    ]);
    assert!(ok);
    let (ok, out) = run(&["payouts", "create", "1"]);
    assert!(ok, "{out}");
    assert_eq!(json(&out)["total_cents"], 4000);
    let (ok, out) = run(&["payouts", "export", "1", "--format", "paypal"]);
    assert!(ok, "{out}");
    assert_eq!(
        out,
        "ann@example.com,40.00,USD,payout-1-partner-1,Commissions (1) of payout 1,PAYPAL\n"
    );
    let (ok, out) = run(&["payouts", "mark-paid", "1", "--reference", "PP-1"]);
    assert!(ok, "{out}");
    assert_eq!(json(&out)["status"], "paid");
    let (ok, out) = run(&["payouts", "mark-paid", "1"]);
    assert!(!ok);
    assert!(json(&out)["error"].as_str().unwrap().contains("paid"));
    let (ok, out) = run(&["commissions", "list", "1", "--csv"]);
    assert!(ok, "{out}");
    assert_eq!(out.lines().count(), 3, "{out}");
    let (ok, out) = run(&["commissions", "balances", "1"]);
    assert!(ok, "{out}");
    assert_eq!(json(&out)["data"][0]["paid_cents"], 4000);
    let (ok, out) = run(&["payouts", "show", "1"]);
    assert!(ok);
    assert_eq!(json(&out)["reference"], "PP-1");
}

/// The admin subcommands [`cli_admin_commands_print_json`] does not run, each checked by
/// what it prints and by a later read, on the database at `db`.
async fn cli_admin_commands_change_what_they_say(db: String) {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let (ok, text) = cli(dir.path(), &db, args);
        assert!(ok, "{args:?}: {text}");
        serde_json::from_str::<Value>(&text).unwrap()
    };
    let migrate = command(dir.path(), &[("REFTRACK_DATABASE_URL", &db)])
        .arg("migrate")
        .output()
        .unwrap();
    assert!(migrate.status.success());
    run(&["admin", "create-workspace", "name=W"]);
    let program = run(&["admin", "create-program", "workspace_id:=1", "name=P"]);

    // Programs.
    let p = run(&[
        "admin",
        "update-program",
        "1",
        "name=Renamed",
        "cookie_window_days:=45",
    ]);
    assert_eq!(
        (&p["name"], &p["cookie_window_days"]),
        (&json!("Renamed"), &json!(45))
    );
    let p = run(&["admin", "get-program", "1"]);
    assert_eq!(
        (&p["name"], &p["cookie_window_days"]),
        (&json!("Renamed"), &json!(45))
    );
    let rotated = run(&["admin", "rotate-token", "1"]);
    let token = rotated["api_token"].as_str().unwrap();
    assert!(token.starts_with("rtk_"), "{rotated}");
    assert_ne!(token, program["api_token"].as_str().unwrap());
    assert_eq!(
        run(&["admin", "get-program", "1"])["api_token_prefix"],
        token[..10]
    );
    let kept = run(&["admin", "rotate-token", "1", "keep_old_for_hours:=24"]);
    assert!(kept["previous_token_expires_at"].is_string(), "{kept}");
    let p = run(&[
        "admin",
        "set-payment-account",
        "1",
        "status=connected",
        "account_id=acct_1",
        "charges_enabled:=true",
    ]);
    assert_eq!(p["payment_account"]["status"], "connected");
    let account = &run(&["admin", "get-program", "1"])["payment_account"];
    assert_eq!(
        (&account["account_id"], &account["charges_enabled"]),
        (&json!("acct_1"), &json!(true))
    );

    // A link and its coupons.
    run(&["admin", "create-partner", "name=Ann", "code=ann"]);
    run(&[
        "admin",
        "add-program-partner",
        "1",
        "partner_id:=1",
        "status=pending",
    ]);
    run(&[
        "admin",
        "create-link",
        "program_id:=1",
        "partner_id:=1",
        "short_link=ann",
    ]);
    let coupon = run(&["admin", "create-coupon", "1", "code=PODCAST"]);
    assert_eq!(
        (&coupon["code"], &coupon["status"]),
        (&json!("PODCAST"), &json!("active"))
    );
    let link = run(&["admin", "get-link", "1"]);
    assert_eq!(
        (&link["short_link"], &link["coupon_codes"]),
        (&json!("ann"), &json!(["PODCAST"]))
    );
    let listed = run(&["admin", "list-coupons", "1"]);
    assert_eq!(listed["data"][0]["id"], coupon["id"]);
    let id = coupon["id"].to_string();
    assert_eq!(
        run(&["admin", "archive-coupon", "1", &id])["status"],
        "archived"
    );
    assert_eq!(
        run(&["admin", "list-coupons", "1", "--status", "active"])["data"],
        json!([])
    );
    assert_eq!(
        run(&["admin", "list-coupons", "1", "--status", "archived"])["data"][0]["id"],
        coupon["id"]
    );
    assert_eq!(run(&["admin", "get-link", "1"])["coupon_codes"], json!([]));

    // Users and memberships.
    let user = run(&[
        "admin",
        "create-user",
        "email=Owner@Example.com",
        "password=long enough",
        "name=Olive",
    ]);
    assert_eq!(
        (&user["email"], &user["name"]),
        (&json!("owner@example.com"), &json!("Olive"))
    );
    let uid = user["id"].to_string();
    let found = run(&["admin", "list-users", "--q", "OLIVE"]);
    assert_eq!(found["data"][0]["id"], user["id"]);
    assert_eq!(
        run(&["admin", "list-users", "--q", "nobody"])["data"],
        json!([])
    );
    let changed = run(&[
        "admin",
        "update-user",
        &uid,
        "password=another long one",
        "name:=null",
    ]);
    assert_eq!(
        (&changed["id"], &changed["name"]),
        (&user["id"], &Value::Null)
    );
    let m = run(&[
        "admin",
        "add-member",
        "1",
        &format!("user_id:={uid}"),
        "role=viewer",
    ]);
    assert_eq!(
        (&m["role"], &m["status"]),
        (&json!("viewer"), &json!("active"))
    );
    let m = run(&[
        "admin",
        "update-member",
        "1",
        &uid,
        "role=admin",
        "status=suspended",
    ]);
    assert_eq!(
        (&m["role"], &m["status"]),
        (&json!("admin"), &json!("suspended"))
    );
    let stored = "SELECT COUNT(*) FROM memberships m JOIN users u ON u.id = m.user_id \
                  WHERE u.email = 'owner@example.com' AND m.workspace_id = 1 \
                  AND m.role = 'admin' AND m.status = 'suspended'";
    assert_eq!(crate::common::reftrack_count(&db, stored).await, 1);

    // A failed delivery sent again: due now, with its message id.
    run(&[
        "admin",
        "add-webhook",
        "1",
        "url=https://93.184.216.34/hooks",
        r#"events:=["partner.approved"]"#,
    ]);
    run(&["admin", "set-partner-status", "1", "1", "status=approved"]);
    let queued = run(&["admin", "list-webhook-deliveries", "1"])["data"][0].clone();
    assert_eq!(queued["type"], "partner.approved");
    let failed = "UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL";
    crate::common::reftrack_exec(&db, failed).await;
    assert_eq!(
        run(&["admin", "list-webhook-deliveries", "1"])["data"][0]["status"],
        "failed"
    );
    let id = queued["id"].to_string();
    let retried = run(&["admin", "retry-webhook-delivery", "1", &id]);
    assert_eq!(
        (&retried["status"], &retried["message_id"]),
        (&json!("pending"), &queued["message_id"])
    );
    let listed = run(&["admin", "list-webhook-deliveries", "1"])["data"][0].clone();
    assert_eq!(listed["status"], "pending");
    assert!(listed["next_attempt_at"].is_string(), "{listed}");
    let test = run(&["admin", "test-webhook", "1"]);
    assert_eq!(
        (&test["type"], &test["status"]),
        (&json!("webhook.test"), &json!("pending"))
    );
    assert_eq!(
        run(&["admin", "list-webhook-deliveries", "1"])["data"][0]["id"],
        test["id"]
    );
}

#[tokio::test]
async fn cli_admin_commands_change_what_they_say_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("cli.db").display());
    cli_admin_commands_change_what_they_say(db).await;
}

#[tokio::test]
async fn cli_admin_commands_change_what_they_say_on_postgres() {
    let url = crate::common::fresh_postgres_url().await;
    crate::common::dropping_database(url.clone(), cli_admin_commands_change_what_they_say(url))
        .await;
}

/// The first start's admin token, as its banner shows it.
fn printed_token(server: &Server) -> String {
    server
        .banner
        .iter()
        .find_map(|l| l.split_whitespace().find(|w| w.starts_with("rta_")))
        .unwrap_or_else(|| panic!("no admin token printed: {:?}", server.banner))
        .to_string()
}

/// The status of a management read on the server at `base` with `token`.
async fn admin_read(base: &str, token: &str) -> u16 {
    let url = format!("{base}/api/admin/workspaces");
    call(reqwest::Method::GET, &url, Some(token), None).await.0
}

/// Runs `reftrack admin rotate-admin-token` on `db` with `env` besides the database:
/// whether it succeeded, and its JSON answer or error.
fn rotate_admin_token(dir: &std::path::Path, db: &str, env: &[(&str, &str)]) -> (bool, Value) {
    let mut all = vec![("REFTRACK_DATABASE_URL", db)];
    all.extend_from_slice(env);
    let (ok, text) =
        crate::common::server::outcome(command(dir, &all).args(["admin", "rotate-admin-token"]));
    let answer = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    (ok, answer)
}

/// Asks every server of `bases` with both tokens until each refuses `old` and accepts
/// `new`; fails when one still answers otherwise to a request sent one cache lifetime
/// after `rotated` (the bound the docs state).
async fn until_rotated(bases: &[&str], old: &str, new: &str, rotated: Instant) {
    let bound = reftrack::app::cache::TTL + Duration::from_millis(100);
    for base in bases {
        loop {
            let asked = rotated.elapsed();
            let answers = (admin_read(base, old).await, admin_read(base, new).await);
            if answers == (401, 200) {
                break;
            }
            assert!(
                asked < bound,
                "{base} after {asked:?}: (old, new) answered {answers:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A server on a SQLite file takes a token rotated by the CLI while it runs.
#[tokio::test]
async fn rotate_admin_token_reaches_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("rotate.db").display());
    let server = start(
        dir.path(),
        &[
            ("REFTRACK_DATABASE_URL", &db),
            ("REFTRACK_LISTEN", "127.0.0.1:0"),
        ],
    );
    let first = printed_token(&server);
    assert_eq!(admin_read(&server.base, &first).await, 200);

    let (ok, answer) = rotate_admin_token(dir.path(), &db, &[]);
    let rotated = Instant::now();
    assert!(ok, "{answer}");
    let second = answer["admin_token"].as_str().unwrap().to_string();
    assert!(second.starts_with("rta_") && second != first, "{answer}");
    until_rotated(&[&server.base], &first, &second, rotated).await;
}

/// Two servers on one PostgreSQL database, neither restarted, agree on the admin token
/// after the CLI rotates it.
#[tokio::test]
async fn rotate_admin_token_reaches_two_running_servers() {
    let url = crate::common::fresh_postgres_url().await;
    crate::common::dropping_database(url.clone(), rotate_on_two_servers(url)).await;
}

async fn rotate_on_two_servers(url: String) {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("REFTRACK_DATABASE_URL", url.as_str()),
        ("REFTRACK_LISTEN", "127.0.0.1:0"),
    ];
    // One after the other: the first generates the token, the second reads it.
    let a = start(dir.path(), &env);
    let b = start(dir.path(), &env);
    let first = printed_token(&a);
    for server in [&a, &b] {
        assert_eq!(
            admin_read(&server.base, &first).await,
            200,
            "cached by this call"
        );
    }

    let (ok, answer) = rotate_admin_token(dir.path(), &url, &[]);
    let rotated = Instant::now();
    assert!(ok, "{answer}");
    let second = answer["admin_token"].as_str().unwrap().to_string();
    until_rotated(&[&a.base, &b.base], &first, &second, rotated).await;

    // Again, now that both have the second token cached.
    let (ok, answer) = rotate_admin_token(dir.path(), &url, &[]);
    let rotated = Instant::now();
    assert!(ok, "{answer}");
    let third = answer["admin_token"].as_str().unwrap().to_string();
    until_rotated(&[&a.base, &b.base], &second, &third, rotated).await;
}

/// Where REFTRACK_ADMIN_TOKEN is set, `rotate-admin-token` refuses (a server started with
/// it accepts that token only) and changes nothing; a rotation made without the variable
/// does not change the token of a server that has it.
#[tokio::test]
async fn rotate_admin_token_refuses_when_the_token_is_configured() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("configured.db").display());
    let configured = "rta_configured_admin_token_0123";
    let server = start(
        dir.path(),
        &[
            ("REFTRACK_DATABASE_URL", &db),
            ("REFTRACK_LISTEN", "127.0.0.1:0"),
            ("REFTRACK_ADMIN_TOKEN", configured),
        ],
    );
    assert!(
        server
            .banner
            .iter()
            .any(|l| l.contains("admin token: from REFTRACK_ADMIN_TOKEN")),
        "{:?}",
        server.banner
    );
    let stored = "SELECT COUNT(*) FROM settings WHERE key = 'admin_token_hash'";
    assert_eq!(crate::common::reftrack_count(&db, stored).await, 0);

    let (ok, answer) = rotate_admin_token(dir.path(), &db, &[("REFTRACK_ADMIN_TOKEN", configured)]);
    assert!(!ok, "{answer}");
    assert_eq!(
        answer["error"],
        reftrack::cli::ROTATE_CONFIGURED_TOKEN,
        "{answer}"
    );
    assert_eq!(
        crate::common::reftrack_count(&db, stored).await,
        0,
        "nothing stored"
    );
    assert_eq!(admin_read(&server.base, configured).await, 200);

    // Run without the variable, the command stores a token; the server keeps its own.
    let (ok, answer) = rotate_admin_token(dir.path(), &db, &[]);
    assert!(ok, "{answer}");
    let stored_token = answer["admin_token"].as_str().unwrap();
    tokio::time::sleep(reftrack::app::cache::TTL + Duration::from_millis(100)).await;
    assert_eq!(admin_read(&server.base, stored_token).await, 401);
    assert_eq!(admin_read(&server.base, configured).await, 200);
}

/// A reader that stops reading (`reftrack admin … | head`, `reftrack verify | true`) ends
/// the answer, not the process: no panic, and the command still succeeds.
#[test]
fn cli_answers_into_a_closed_pipe_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("pipe.db").display());
    let env = [("REFTRACK_DATABASE_URL", db.as_str())];
    assert!(command(dir.path(), &env)
        .arg("migrate")
        .status()
        .unwrap()
        .success());
    for args in [
        &["admin", "create-workspace", "name=Piped"][..],
        &["verify"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        // Closed before the command writes: its first line meets a broken pipe.
        drop(reader);
        let out = command(dir.path(), &env)
            .args(args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {said}");
        assert!(!said.contains("panicked"), "{args:?}: {said}");
    }
}
