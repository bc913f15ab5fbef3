//! What the deployment files rely on, checked without Docker or a running systemd:
//! `reftrack healthcheck` (the image's health check) against the real server, the
//! image's environment (SQLite in the `/data` volume, a wildcard listen address, the
//! health check reaching it through loopback), and the systemd unit passing
//! `systemd-analyze verify`.

use std::path::Path;
use std::process::Output;
use std::str::FromStr;

use crate::common::server::{command, free_port, Server, BIN};
use crate::common::{dropping_database, fresh_postgres_url};

fn repo_file(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn healthcheck(env: &[(&str, &str)], url: Option<&str>) -> Output {
    let mut cmd = command(env);
    cmd.arg("healthcheck");
    if let Some(url) = url {
        cmd.arg(url);
    }
    cmd.output().unwrap()
}

async fn healthcheck_on(database_url: String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let env = [
        ("REFTRACK_DATABASE_URL", database_url.as_str()),
        ("REFTRACK_LISTEN", listen.as_str()),
    ];
    let mut server = {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        tokio::task::spawn_blocking(move || {
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            Server::start(&env)
        })
        .await
        .unwrap()
    };
    let base = server.base.clone();
    let check = move |url: Option<String>| {
        let listen = listen.clone();
        tokio::task::spawn_blocking(move || {
            healthcheck(&[("REFTRACK_LISTEN", listen.as_str())], url.as_deref())
        })
    };

    let ready = check(None).await.unwrap();
    assert!(ready.status.success(), "{}", said(&ready));
    assert!(
        said(&ready).contains("ready: http://127.0.0.1:"),
        "{}",
        said(&ready)
    );
    let ready = check(Some(format!("{base}/readyz"))).await.unwrap();
    assert!(ready.status.success(), "{}", said(&ready));
    // The server's address alone (the root redirects): its /readyz is asked.
    for url in [base.clone(), format!("{base}/")] {
        let ready = check(Some(url)).await.unwrap();
        assert!(ready.status.success(), "{}", said(&ready));
        assert!(
            said(&ready).contains(&format!("ready: {base}/readyz")),
            "{}",
            said(&ready)
        );
    }

    let missing = check(Some(format!("{base}/no-such-page"))).await.unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        said(&missing).contains("answered 404"),
        "{}",
        said(&missing)
    );
    let bad = check(Some("https://127.0.0.1:1/readyz".into()))
        .await
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(said(&bad).contains("only http://"), "{}", said(&bad));

    server.signal("TERM");
    server
        .wait_exit(std::time::Duration::from_secs(15))
        .expect("no exit after SIGTERM");
    let down = check(None).await.unwrap();
    assert_eq!(down.status.code(), Some(1));
    assert!(said(&down).contains("not ready"), "{}", said(&down));
}

#[tokio::test]
async fn healthcheck_exits_zero_only_when_the_server_is_ready_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    healthcheck_on(format!("sqlite://{}", dir.path().join("h.db").display())).await;
}

#[tokio::test]
async fn healthcheck_exits_zero_only_when_the_server_is_ready_postgres() {
    let url = fresh_postgres_url().await;
    dropping_database(url.clone(), healthcheck_on(url)).await;
}

/// The `ENV` settings of the Dockerfile, continuation lines joined.
fn dockerfile_env(dockerfile: &str) -> Vec<(String, String)> {
    let joined = dockerfile.replace("\\\n", " ");
    joined
        .lines()
        .filter_map(|l| l.trim().strip_prefix("ENV "))
        .flat_map(|l| l.split_whitespace())
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The image's settings: SQLite in the `/data` volume, a wildcard listen address on the
/// exposed port, the binary as health check. The binary started with them (the volume
/// and port moved to the test's) serves with no other configuration, prints its admin
/// token, and its health check reaches it through loopback.
#[test]
fn the_image_settings_serve_and_pass_their_health_check() {
    let dockerfile = repo_file("Dockerfile");
    let env = dockerfile_env(&dockerfile);
    let get = |k: &str| {
        env.iter()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no ENV {k} in the Dockerfile"))
    };
    let database = get("REFTRACK_DATABASE_URL");
    let file = sqlx::sqlite::SqliteConnectOptions::from_str(&database)
        .unwrap()
        .get_filename()
        .to_path_buf();
    assert_eq!(file, Path::new("/data/reftrack.db"), "{database}");
    assert!(dockerfile.contains("\nVOLUME /data\n"));
    let listen: std::net::SocketAddr = get("REFTRACK_LISTEN").parse().unwrap();
    assert!(listen.ip().is_unspecified(), "{listen}");
    assert!(dockerfile.contains(&format!("\nEXPOSE {}\n", listen.port())));
    assert!(dockerfile.contains(r#"CMD ["reftrack", "healthcheck"]"#));
    assert!(dockerfile.contains("--locked"));

    let data = tempfile::tempdir().unwrap();
    let database = database.replace("/data/", &format!("{}/", data.path().display()));
    let port = free_port();
    let server = Server::start(&[
        ("REFTRACK_DATABASE_URL", database.as_str()),
        ("REFTRACK_LISTEN", &format!("127.0.0.1:{port}")),
    ]);
    assert!(data.path().join("reftrack.db").exists());
    let printed = std::time::Instant::now();
    while !server
        .output()
        .contains("admin token (generated now, shown only once")
    {
        assert!(
            printed.elapsed() < std::time::Duration::from_secs(5),
            "no admin token printed: {}",
            server.output()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let wildcard = format!("{}:{port}", listen.ip());
    let ready = healthcheck(&[("REFTRACK_LISTEN", wildcard.as_str())], None);
    assert!(ready.status.success(), "{}", said(&ready));
}

/// The systemd unit passes `systemd-analyze verify` (offline: unknown or misspelt keys
/// and sections, bad values, a missing executable), with its `ExecStart` pointed at the
/// binary under test.
#[test]
fn the_systemd_unit_verifies() {
    let unit = repo_file("deploy/reftrack.service").replace("/usr/local/bin/reftrack", BIN);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reftrack.service");
    std::fs::write(&path, unit).unwrap();
    let out = std::process::Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .unwrap_or_else(|e| {
            panic!("systemd-analyze is needed to check deploy/reftrack.service (the systemd package): {e}")
        });
    assert!(out.status.success(), "{}", said(&out));
    assert!(out.stderr.is_empty(), "{}", said(&out));
}
