//! `reftrack backup` and `reftrack restore` on SQLite: a backup taken while the real
//! server takes clicks holds every click acknowledged before it began, passes
//! `integrity_check` and `reftrack verify` once restored; a restore refuses a database in
//! use; a backup to a path it cannot write, or of a file that is not a database, fails
//! with a clear message and leaves no file behind. On PostgreSQL both commands name
//! `pg_dump` and `pg_restore`.

use std::collections::HashSet;
use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::server::{command, free_port, Server};
use crate::common::TestApp;
use serde_json::json;

const CLIENTS: usize = 4;

/// Runs `reftrack ARGS` on the database at `url`.
fn reftrack(url: &str, args: &[&str]) -> Output {
    command(&[("REFTRACK_DATABASE_URL", url)])
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Posts clicks through `link` until `stop`, logging each acknowledged click id with the
/// moment its answer arrived.
async fn clicks(
    base: String,
    link: String,
    acked: Arc<Mutex<Vec<(String, Instant)>>>,
    stop: Arc<AtomicBool>,
) {
    let http = reqwest::Client::new();
    let body = json!({"affiliate_url": format!("https://shop.example/?aff={link}")});
    while !stop.load(Ordering::SeqCst) {
        let res = http
            .post(format!("{base}/api/v1/track/click"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 200);
        let answer: serde_json::Value = res.json().await.unwrap();
        let id = answer["click_id"].as_str().unwrap().to_string();
        acked.lock().unwrap().push((id, Instant::now()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_load_holds_every_click_acknowledged_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("live.db").display());
    let seed = {
        let app = TestApp::at(url.clone()).await;
        let seed = app.seed().await;
        app.store.close().await;
        seed
    };
    let listen = format!("127.0.0.1:{}", free_port());
    let server = {
        let url = url.clone();
        tokio::task::spawn_blocking(move || {
            Server::start(&[
                ("REFTRACK_DATABASE_URL", url.as_str()),
                ("REFTRACK_LISTEN", listen.as_str()),
                ("REFTRACK_RATE_LIMIT_CLICK", "0"),
            ])
        })
        .await
        .unwrap()
    };

    let acked = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let load: Vec<_> = (0..CLIENTS)
        .map(|_| {
            tokio::spawn(clicks(
                server.base.clone(),
                seed.short_link.clone(),
                acked.clone(),
                stop.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(700)).await;

    let backup = dir.path().join("backup.db");
    let began = Instant::now();
    let out = {
        let (url, backup) = (url.clone(), backup.clone());
        tokio::task::spawn_blocking(move || reftrack(&url, &["backup", backup.to_str().unwrap()]))
            .await
            .unwrap()
    };
    let ended = Instant::now();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    for task in load {
        task.await.expect("a client failed");
    }
    assert!(out.status.success(), "backup failed: {}", text(&out));
    assert!(text(&out).contains("backup written"), "{}", text(&out));

    let acked = std::mem::take(&mut *acked.lock().unwrap());
    let before: Vec<&String> = acked
        .iter()
        .filter(|(_, at)| *at < began)
        .map(|(id, _)| id)
        .collect();
    let during = acked
        .iter()
        .filter(|(_, at)| (began..ended).contains(at))
        .count();
    eprintln!(
        "backup under load: {} clicks acknowledged, {} before the backup began, {during} while \
         it ran ({} ms)",
        acked.len(),
        before.len(),
        (ended - began).as_millis()
    );
    assert!(before.len() >= 50, "too little load to prove anything");
    assert!(during > 0, "the load did not run during the backup");

    // A second backup to the same name is refused and leaves the first as it was.
    let first = std::fs::read(&backup).unwrap();
    let again = reftrack(&url, &["backup", backup.to_str().unwrap()]);
    assert!(!again.status.success());
    assert!(text(&again).contains("exists"), "{}", text(&again));
    assert_eq!(std::fs::read(&backup).unwrap(), first);

    // Restoring over the served database is refused while the server has it open.
    let over_live = reftrack(&url, &["restore", "--force", backup.to_str().unwrap()]);
    assert!(!over_live.status.success());
    assert!(text(&over_live).contains("in use"), "{}", text(&over_live));
    let ready = reqwest::get(format!("{}/readyz", server.base))
        .await
        .unwrap();
    assert_eq!(ready.status().as_u16(), 200);
    drop(server);

    // Restored to a new file: every click acknowledged before the backup began is there,
    // the file is sound and its figures equal their recomputation.
    let restored_url = format!("sqlite://{}", dir.path().join("restored.db").display());
    let out = reftrack(&restored_url, &["restore", backup.to_str().unwrap()]);
    assert!(out.status.success(), "restore failed: {}", text(&out));
    let stored: HashSet<String> = {
        use sqlx::Connection;
        let mut c = sqlx::SqliteConnection::connect(&restored_url)
            .await
            .unwrap();
        let check: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_all(&mut c)
            .await
            .unwrap();
        assert_eq!(check, ["ok"]);
        sqlx::query_scalar("SELECT click_id FROM affiliate_click_events")
            .fetch_all(&mut c)
            .await
            .unwrap()
            .into_iter()
            .collect()
    };
    for id in &before {
        assert!(
            stored.contains(*id),
            "click {id} acknowledged before the backup is missing"
        );
    }
    let verify = reftrack(&restored_url, &["verify"]);
    assert!(verify.status.success(), "verify: {}", text(&verify));

    // A restore over an existing database needs --force.
    let out = reftrack(&restored_url, &["restore", backup.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("--force"), "{}", text(&out));
    let out = reftrack(
        &restored_url,
        &["restore", "--force", backup.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out));
}

/// The permission bits of the file at `path`.
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_backup_is_its_owners_only_and_a_restore_no_more_open_than_what_it_replaces() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("live.db").display());
    assert!(reftrack(&url, &["migrate"]).status.success());
    let backup = dir.path().join("backup.db");
    let out = reftrack(&url, &["backup", backup.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(mode(&backup), 0o600);
    let out = reftrack(&url, &["backup", "--force", backup.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(mode(&backup), 0o600);

    // A backup made before backups were the owner's only.
    std::fs::set_permissions(&backup, std::fs::Permissions::from_mode(0o644)).unwrap();
    let restored = dir.path().join("restored.db");
    let restored_url = format!("sqlite://{}", restored.display());
    let out = reftrack(&restored_url, &["restore", backup.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(mode(&restored), 0o600, "a new database is the owner's only");

    // Over an existing database: that file's permissions, whatever the backup's.
    std::fs::set_permissions(&restored, std::fs::Permissions::from_mode(0o640)).unwrap();
    let out = reftrack(
        &restored_url,
        &["restore", "--force", backup.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(mode(&restored), 0o640);
}

#[test]
fn a_backup_that_cannot_be_written_fails_clearly_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("live.db").display());
    assert!(reftrack(&url, &["migrate"]).status.success());
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let before = names(dir.path());

    let targets = [
        not_a_dir.join("backup.db"),
        dir.path().join("missing").join("backup.db"),
    ];
    for target in &targets {
        let out = reftrack(&url, &["backup", target.to_str().unwrap()]);
        assert!(!out.status.success(), "{target:?} was written");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains("cannot write in"), "{said}");
        assert!(!target.exists());
        assert_eq!(names(dir.path()), before);
    }

    // A directory without write permission (root writes anyway, so only as another user).
    let is_root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    if !is_root {
        use std::os::unix::fs::PermissionsExt;
        let locked = dir.path().join("locked");
        std::fs::create_dir(&locked).unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
        let out = reftrack(&url, &["backup", locked.join("b.db").to_str().unwrap()]);
        assert!(!out.status.success());
        assert!(names(&locked).is_empty());
    }

    // A source that is not a database: the copy fails after its file was made, and the
    // file is removed.
    let junk = dir.path().join("junk.db");
    std::fs::write(
        &junk,
        "not a database at all, but long enough to look like one ".repeat(100),
    )
    .unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let target = out_dir.path().join("backup.db");
    let out = reftrack(
        &format!("sqlite://{}", junk.display()),
        &["backup", target.to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot copy"),
        "{}",
        text(&out)
    );
    assert!(
        names(out_dir.path()).is_empty(),
        "{:?}",
        names(out_dir.path())
    );

    // Restoring something that is not a Reftrack backup changes nothing.
    let live = std::fs::read(dir.path().join("live.db")).unwrap();
    let out = reftrack(&url, &["restore", "--force", junk.to_str().unwrap()]);
    assert!(!out.status.success());
    assert_eq!(std::fs::read(dir.path().join("live.db")).unwrap(), live);
}

#[test]
fn on_postgres_backup_and_restore_name_the_postgres_tools() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("b.dump");
    let url = "postgres://reftrack@db.invalid/reftrack";
    let out = reftrack(url, &["backup", target.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("pg_dump --format=custom"),
        "{}",
        text(&out)
    );
    let out = reftrack(url, &["restore", target.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(text(&out).contains("pg_restore"), "{}", text(&out));
    assert!(names(dir.path()).is_empty());
}
