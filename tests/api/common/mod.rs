//! Test harness: the real router on a fresh SQLite file, or on a fresh PostgreSQL
//! database on the server of `REFTRACK_TEST_POSTGRES_URL`, driven through
//! `tower::ServiceExt::oneshot`.
#![allow(dead_code)]

pub mod pages;
pub mod receiver;
pub mod server;
pub mod smtp;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use futures::FutureExt;
use reftrack::app::App;
use reftrack::domain::time::{ManualClock, SystemClock};
use reftrack::http::client_ip::ClientResolver;
use reftrack::http::AppState;
use reftrack::store::{self, Store};
use serde_json::{json, Value};
use tower::ServiceExt;

pub const ADMIN_TOKEN: &str = "rta_test_admin_token_0123456789";

/// Runs the async test `async fn $name(app: TestApp)`, written beside the call, once per
/// backend, as two tests: `$name::sqlite` on SQLite, and `$name::postgres` on PostgreSQL
/// (which fails when no server is configured). The PostgreSQL database is dropped when the
/// body ends, passed or failed.
///
/// ```ignore
/// on_both_backends!(creates_a_workspace);
/// /// What the test shows (doc comments stay on the function).
/// async fn creates_a_workspace(app: TestApp) { … }
/// ```
///
/// The function is ordinary code (rustfmt and clippy see it); the macro only adds
/// `mod $name` (a module may share a function's name) with the two `#[tokio::test]`s.
/// Attributes before the name go on both tests, e.g. `on_both_backends!(#[ignore] name);`;
/// a runtime other than the default one is passed as the arguments of `#[tokio::test]`:
/// `on_both_backends!(tokio(flavor = "multi_thread", worker_threads = 2) name);`.
macro_rules! on_both_backends {
    ($(#[$meta:meta])* $name:ident) => {
        on_both_backends!(tokio() $(#[$meta])* $name);
    };
    (tokio($($runtime:tt)*) $(#[$meta:meta])* $name:ident) => {
        mod $name {
            $(#[$meta])*
            #[tokio::test($($runtime)*)]
            async fn sqlite() {
                super::$name($crate::common::TestApp::sqlite().await).await
            }

            $(#[$meta])*
            #[tokio::test($($runtime)*)]
            async fn postgres() {
                let app = $crate::common::TestApp::postgres().await;
                let url = app.database_url.clone();
                $crate::common::dropping_database(url, super::$name(app)).await
            }
        }
    };
}

/// A running service on a fresh database.
pub struct TestApp {
    pub router: Router,
    pub store: Arc<dyn Store>,
    pub state: AppState,
    pub database_url: String,
    _dir: Option<tempfile::TempDir>,
}

/// A response: status and JSON body (Null when empty).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Value,
}

impl Reply {
    /// The `error` text of an error body.
    pub fn error(&self) -> &str {
        self.body["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error in {:?}", self.body))
    }

    /// Asserts the status and returns self.
    #[track_caller]
    pub fn expect(self, status: u16) -> Self {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.body
        );
        self
    }
}

/// What a PostgreSQL test says when it has no server.
const NO_POSTGRES: &str = "PostgreSQL tests need a server: run scripts/test (it starts a \
    throw-away one), or set REFTRACK_TEST_POSTGRES_URL=postgres://USER@HOST:PORT/DB to a \
    server you started";

/// The server of `REFTRACK_TEST_POSTGRES_URL`; panics with [`NO_POSTGRES`] without one.
pub fn postgres_server() -> String {
    match std::env::var("REFTRACK_TEST_POSTGRES_URL") {
        Ok(url) if !url.trim().is_empty() => url,
        _ => panic!("{NO_POSTGRES}"),
    }
}

/// A fresh PostgreSQL database on the server of `REFTRACK_TEST_POSTGRES_URL`; panics,
/// saying how to get a server, when there is none. Drop it with [`drop_database`].
pub async fn fresh_postgres_url() -> String {
    let base = postgres_server();
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&base)
        .await
        .unwrap_or_else(|e| panic!("{NO_POSTGRES} ({base} does not answer: {e})"));
    let name = format!("reftrack_t_{}", rand::random::<u64>() & 0xffff_ffff_ffff);
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .expect("create test database");
    let mut url = url::Url::parse(&base).expect("postgres url");
    url.set_path(&format!("/{name}"));
    url.to_string()
}

/// Drops a database [`fresh_postgres_url`] made, closing its connections first.
pub async fn drop_database(url: &str) {
    use sqlx::Connection;
    let name = url::Url::parse(url)
        .expect("postgres url")
        .path()
        .trim_start_matches('/')
        .to_string();
    let mut conn = sqlx::PgConnection::connect(&postgres_server())
        .await
        .expect("the test server answers");
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut conn)
        .await
        .expect("drop test database");
}

/// Runs `body`, then drops the database at `url`, whether `body` passed or panicked.
pub async fn dropping_database(url: String, body: impl std::future::Future<Output = ()>) {
    let outcome = std::panic::AssertUnwindSafe(body).catch_unwind().await;
    drop_database(&url).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

impl TestApp {
    /// On a fresh SQLite file in a temporary directory.
    pub async fn sqlite() -> TestApp {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}", dir.path().join("test.db").display());
        Self::open(url, Some(dir)).await
    }

    /// On a fresh PostgreSQL database; panics when no server is configured.
    pub async fn postgres() -> TestApp {
        let url = fresh_postgres_url().await;
        Self::open(url, None).await
    }

    /// On an existing database (migrated if needed).
    pub async fn at(url: String) -> TestApp {
        Self::open(url, None).await
    }

    async fn open(url: String, dir: Option<tempfile::TempDir>) -> TestApp {
        let store = store::open(&url).await.expect("open store");
        let app =
            App::new(store.clone(), Arc::new(SystemClock)).with_admin_token(Some(ADMIN_TOKEN));
        let state = AppState::new(Arc::new(app), ClientResolver::new(None, None).unwrap());
        TestApp {
            router: reftrack::router(state.clone()),
            store,
            state,
            database_url: url,
            _dir: dir,
        }
    }

    /// The same database behind the router of `state`.
    fn serving(self, state: AppState) -> TestApp {
        TestApp {
            router: reftrack::router(state.clone()),
            state,
            ..self
        }
    }

    /// The same database behind the service `app` (taking [`ADMIN_TOKEN`] as its admin
    /// token), with the default client resolver.
    fn serving_app(self, app: App) -> TestApp {
        let state = AppState::new(
            Arc::new(app.with_admin_token(Some(ADMIN_TOKEN))),
            ClientResolver::new(None, None).unwrap(),
        );
        self.serving(state)
    }

    /// The same database behind a service with no configured admin token, as `reftrack
    /// serve` without `REFTRACK_ADMIN_TOKEN`: it takes the stored one, which this
    /// generates (the first start's); returned with it.
    pub async fn with_stored_admin_token(self) -> (TestApp, String) {
        let app = App::new(self.store.clone(), Arc::new(SystemClock));
        let token = app
            .first_admin_token()
            .await
            .unwrap()
            .expect("a fresh database has no admin token");
        let state = AppState::new(Arc::new(app), ClientResolver::new(None, None).unwrap());
        (self.serving(state), token)
    }

    /// The same database behind a router with another client resolver (trusted
    /// proxies, GeoIP).
    pub fn with_resolver(self, clients: ClientResolver) -> TestApp {
        let state = AppState::new(self.state.app.clone(), clients);
        self.serving(state)
    }

    /// The same database behind a service that reads the time from `clock`, for rules
    /// that depend on it (session lifetime, hold periods).
    pub fn with_clock(self, clock: Arc<ManualClock>) -> TestApp {
        let app = App::new(self.store.clone(), clock);
        self.serving_app(app)
    }

    /// The same database behind a service that reads the time from `clock` and lets
    /// webhook endpoints be on loopback addresses (the tests' receivers are).
    pub fn with_private_webhooks(self, clock: Arc<dyn reftrack::domain::time::Clock>) -> TestApp {
        let app = App::new(self.store.clone(), clock).allowing_private_webhook_targets(true);
        self.serving_app(app)
    }

    /// The same database behind a service whose clicks wait for their commit as `waits`
    /// says.
    pub fn with_click_waits(self, waits: reftrack::app::tracking::ClickWaits) -> TestApp {
        let app = App::new(self.store.clone(), Arc::new(SystemClock)).with_click_waits(waits);
        self.serving_app(app)
    }

    /// The same database behind a router with other per-IP rate limits.
    pub fn with_rate_limits(self, limits: reftrack::config::RateLimitArgs) -> TestApp {
        let state = self.state.clone().with_rate_limits(limits);
        self.serving(state)
    }

    /// The same database behind a router that counts requests and serves `GET /metrics`.
    pub fn with_metrics(self) -> TestApp {
        let readings = self.state.app.readings();
        let metrics = Arc::new(reftrack::http::metrics::Metrics::new(readings));
        let state = self.state.clone().with_metrics(metrics, true);
        self.serving(state)
    }

    /// The same database behind a service that mails invites through the SMTP server at
    /// `smtp_url`, from `from`.
    pub fn with_mailer(self, smtp_url: &str, from: &str) -> TestApp {
        let mailer = reftrack::mail::Mailer::new(smtp_url, from).expect("mailer");
        let app = App::new(self.store.clone(), Arc::new(SystemClock)).with_mailer(Some(mailer));
        self.serving_app(app)
    }

    /// [`Self::with_mailer`], on a server that knows its address `url` (the links of the
    /// mails nobody asked for by a request of their own, and those the router hands out).
    pub fn with_mailer_at(self, smtp_url: &str, from: &str, url: &str) -> TestApp {
        let mailer = reftrack::mail::Mailer::new(smtp_url, from).expect("mailer");
        let app = App::new(self.store.clone(), Arc::new(SystemClock))
            .with_mailer(Some(mailer))
            .with_public_url(Some(url.to_string()));
        let app = self.serving_app(app);
        let state = app.state.clone().with_public_url(Some(url.to_string()));
        app.serving(state)
    }

    /// The same database behind a service configured with `REFTRACK_PUBLIC_URL=url`: the
    /// links it hands out name `url`.
    pub fn with_public_url(self, url: &str) -> TestApp {
        let app = App::new(self.store.clone(), Arc::new(SystemClock))
            .with_public_url(Some(url.to_string()));
        let app = self.serving_app(app);
        let state = app.state.clone().with_public_url(Some(url.to_string()));
        app.serving(state)
    }

    /// The same database behind a service that serves on `addr`, the address of last
    /// resort of the links it hands out.
    pub fn listening_on(self, addr: &str) -> TestApp {
        let app = App::new(self.store.clone(), Arc::new(SystemClock))
            .with_listen_address(addr.parse().expect("a socket address"));
        self.serving_app(app)
    }

    /// Sends a request with optional JSON body and headers.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut req = Request::builder().method(method).uri(path);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let body = match body {
            Some(b) => {
                req = req.header("content-type", "application/json");
                Body::from(b.to_string())
            }
            None => Body::empty(),
        };
        self.raw(req.body(body).unwrap()).await
    }

    /// Sends a prepared request.
    pub async fn raw(&self, req: Request<Body>) -> Reply {
        let response = self.router.clone().oneshot(req).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    /// POST with a JSON body and no auth.
    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.send("POST", path, Some(body), &[]).await
    }

    /// POST with a JSON body and a bearer token.
    pub async fn post_auth(&self, path: &str, token: &str, body: Value) -> Reply {
        let auth = format!("Bearer {token}");
        self.send("POST", path, Some(body), &[("authorization", &auth)])
            .await
    }

    /// A management API call with the admin token.
    pub async fn admin(&self, method: &str, path: &str, body: Option<Value>) -> Reply {
        let auth = format!("Bearer {ADMIN_TOKEN}");
        self.send(
            method,
            &format!("/api/admin{path}"),
            body,
            &[("authorization", &auth)],
        )
        .await
    }

    /// Sets up a workspace, a program, a partner in it and an active link.
    pub async fn seed(&self) -> Seed {
        self.seed_with(json!({})).await
    }

    /// Like [`seed`], with extra program fields.
    pub async fn seed_with(&self, program: Value) -> Seed {
        let ws = self
            .admin("POST", "/workspaces", Some(json!({"name": "Acme"})))
            .await
            .expect(201);
        let mut body = json!({"workspace_id": ws.body["id"], "name": "Acme Partners"});
        for (k, v) in program.as_object().unwrap() {
            body[k] = v.clone();
        }
        let program = self
            .admin("POST", "/programs", Some(body))
            .await
            .expect(201);
        let program_id = program.body["id"].as_i64().unwrap();
        let suffix = program_id.to_string();
        let partner = self
            .admin(
                "POST",
                "/partners",
                Some(json!({"name": "Alice", "code": format!("alice{suffix}")})),
            )
            .await
            .expect(201);
        let partner_id = partner.body["id"].as_i64().unwrap();
        self.admin(
            "POST",
            &format!("/programs/{program_id}/partners"),
            Some(json!({"partner_id": partner_id, "status": "approved"})),
        )
        .await
        .expect(201);
        let short_link = format!("alice{suffix}");
        self.admin("POST", "/links", Some(json!({"program_id": program_id, "partner_id": partner_id, "short_link": short_link})))
            .await
            .expect(201);
        Seed {
            workspace_id: ws.body["id"].as_i64().unwrap(),
            program_id,
            api_token: program.body["api_token"].as_str().unwrap().to_string(),
            partner_id,
            short_link,
        }
    }

    /// Adds another partner with an approved record and a link; returns (partner id, short link).
    pub async fn add_partner(&self, seed: &Seed, code: &str) -> (i64, String) {
        let partner = self
            .admin(
                "POST",
                "/partners",
                Some(json!({"name": code, "code": code})),
            )
            .await
            .expect(201);
        let partner_id = partner.body["id"].as_i64().unwrap();
        self.admin(
            "POST",
            &format!("/programs/{}/partners", seed.program_id),
            Some(json!({"partner_id": partner_id})),
        )
        .await
        .expect(201);
        self.admin("POST", "/links", Some(json!({"program_id": seed.program_id, "partner_id": partner_id, "short_link": code})))
            .await
            .expect(201);
        (partner_id, code.to_string())
    }

    /// Creates a user with `password` and makes it a member of `workspace_id` with `role`
    /// (and the default status); returns the user's id.
    pub async fn member(&self, workspace_id: i64, email: &str, password: &str, role: &str) -> i64 {
        let u = self
            .admin(
                "POST",
                "/users",
                Some(json!({"email": email, "password": password})),
            )
            .await
            .expect(201);
        self.admin(
            "POST",
            &format!("/workspaces/{workspace_id}/members"),
            Some(json!({"user_id": u.body["id"], "role": role})),
        )
        .await
        .expect(201);
        u.body["id"].as_i64().unwrap()
    }

    /// The answer of a new invite of `partner_id` (given `email` first).
    pub async fn invite(&self, partner_id: i64, email: &str) -> Reply {
        self.admin(
            "PATCH",
            &format!("/partners/{partner_id}"),
            Some(json!({"email": email})),
        )
        .await
        .expect(200);
        self.admin("POST", &format!("/partners/{partner_id}/invite"), None)
            .await
            .expect(201)
    }

    /// The token of a new invite of `partner_id` (given `email` first).
    pub async fn invite_token(&self, partner_id: i64, email: &str) -> String {
        let r = self.invite(partner_id, email).await;
        let url = r.body["invite_url"].as_str().unwrap();
        url.split("token=").nth(1).unwrap().to_string()
    }

    /// `POST /api/auth/login`.
    pub async fn login(&self, email: &str, password: &str) -> Reply {
        self.post(
            "/api/auth/login",
            json!({"email": email, "password": password}),
        )
        .await
    }

    /// Tracks a click through `short_link`; returns the click id.
    pub async fn click(&self, short_link: &str) -> String {
        let r = self
            .post(
                "/api/v1/track/click",
                json!({"affiliate_url": format!("https://shop.example/landing?aff={short_link}")}),
            )
            .await
            .expect(200);
        r.body["click_id"].as_str().unwrap().to_string()
    }

    /// A customer who clicked through the seed's link and signed up as `key` (a server-mode
    /// lead); returns the click id.
    pub async fn lead(&self, seed: &Seed, key: &str) -> String {
        let click_id = self.click(&seed.short_link).await;
        self.post_auth(
            "/api/v1/track/lead",
            &seed.api_token,
            json!({"click_id": click_id, "customer_key": key}),
        )
        .await
        .expect(200);
        click_id
    }

    /// The id of the link `short_link` (through the management API's link list).
    pub async fn link_id(&self, short_link: &str) -> i64 {
        let r = self
            .admin("GET", "/links?limit=100", None)
            .await
            .expect(200);
        r.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["short_link"] == short_link)
            .unwrap_or_else(|| panic!("no link {short_link}"))["id"]
            .as_i64()
            .unwrap()
    }

    /// Runs a query returning one integer.
    /// A program's commissions as the management API lists them (the newest 100).
    pub async fn commission_rows(&self, program_id: i64) -> Vec<Value> {
        let r = self
            .admin(
                "GET",
                &format!("/programs/{program_id}/commissions?limit=100"),
                None,
            )
            .await
            .expect(200);
        r.body["data"].as_array().cloned().unwrap_or_default()
    }

    /// The commission of the sale recorded as `txn` in a program, as listed.
    pub async fn sale_commission(&self, program_id: i64, txn: &str) -> Value {
        self.commission_rows(program_id)
            .await
            .into_iter()
            .find(|c| c["transaction_id"] == txn)
            .unwrap_or_else(|| panic!("no commission of {txn}"))
    }

    pub async fn count(&self, sql: &str) -> i64 {
        reftrack_count(&self.database_url, sql).await
    }
}

/// One integer from a SQL query against either backend.
pub async fn reftrack_count(url: &str, sql: &str) -> i64 {
    use sqlx::Connection;
    if url.starts_with("sqlite:") {
        let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
        sqlx::query_scalar::<_, i64>(sql)
            .fetch_one(&mut c)
            .await
            .unwrap()
    } else {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query_scalar::<_, i64>(sql)
            .fetch_one(&mut c)
            .await
            .unwrap()
    }
}

/// Runs one SQL statement against either backend (to corrupt or prepare data).
pub async fn reftrack_exec(url: &str, sql: &str) {
    use sqlx::Connection;
    if url.starts_with("sqlite:") {
        let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
        sqlx::query(sql).execute(&mut c).await.unwrap();
    } else {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query(sql).execute(&mut c).await.unwrap();
    }
}

/// Asserts that `reftrack verify` found nothing wrong, printing what it found otherwise.
#[track_caller]
pub fn assert_clean(r: &reftrack::verify::Report) {
    assert!(
        r.ok(),
        "verify found problems: {}",
        serde_json::to_string_pretty(&r.to_json()).unwrap()
    );
}

/// What [`TestApp::seed`] created.
#[derive(Debug, Clone)]
pub struct Seed {
    pub workspace_id: i64,
    pub program_id: i64,
    pub api_token: String,
    pub partner_id: i64,
    pub short_link: String,
}

/// Asserts that `r` is a CSV download with the headers every download carries: kept out
/// of caches and never sniffed as another type.
#[track_caller]
pub fn assert_download(r: &Reply) {
    let header = |name: &str| {
        r.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("no {name} header in {:?}", r.headers))
    };
    assert!(
        header("content-type").starts_with("text/csv"),
        "{:?}",
        r.headers
    );
    assert!(
        header("content-disposition").starts_with("attachment"),
        "{:?}",
        r.headers
    );
    assert_eq!(header("cache-control"), "no-store");
    assert_eq!(header("x-content-type-options"), "nosniff");
}
