//! A visitor is never held by the disk: a redirect link's visit waits for its click's
//! commit at most the redirect's wait (25 ms by default), then sends the visitor on with
//! the click id (`Reftrack-Click: queued`) while the click stays queued and commits with
//! its batch. The tracking API answers a click only once committed, unless the operator
//! set a wait for it too. The commit is held here by a lock another connection keeps on
//! the rows the click's batch updates.

use std::time::Duration;

use crate::common::*;
use reftrack::app::tracking::ClickWaits;
use serde_json::json;

const BROWSER: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36";

/// A lock that keeps the click batches of `program_id` from committing while it is held:
/// SQLite's write lock, or PostgreSQL's row lock on the program's partner records.
struct HeldCommit {
    _connection: Box<dyn std::any::Any + Send>,
}

async fn hold_commits(app: &TestApp, program_id: i64) -> HeldCommit {
    use sqlx::Connection;
    let url = &app.database_url;
    if url.starts_with("sqlite:") {
        let mut c = sqlx::SqliteConnection::connect(url).await.unwrap();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut c)
            .await
            .unwrap();
        HeldCommit {
            _connection: Box::new(c),
        }
    } else {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query("BEGIN").execute(&mut c).await.unwrap();
        sqlx::query(&format!(
            "SELECT id FROM partner_programs WHERE program_id = {program_id} FOR UPDATE"
        ))
        .execute(&mut c)
        .await
        .unwrap();
        sqlx::query("SELECT id FROM referral_links FOR UPDATE")
            .execute(&mut c)
            .await
            .unwrap();
        HeldCommit {
            _connection: Box::new(c),
        }
    }
}

/// Clicks stored for the program, waiting (up to 10 s) until there are `n`.
async fn clicks_become(app: &TestApp, program_id: i64, n: i64) {
    let sql =
        format!("SELECT COUNT(*) FROM affiliate_click_events WHERE program_id = {program_id}");
    for _ in 0..200 {
        if app.count(&sql).await == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(app.count(&sql).await, n);
}

fn click_body(short_link: &str) -> serde_json::Value {
    json!({"affiliate_url": format!("https://shop.example/?aff={short_link}")})
}

on_both_backends!(a_redirect_does_not_wait_for_a_held_commit_but_the_click_api_does);
async fn a_redirect_does_not_wait_for_a_held_commit_but_the_click_api_does(app: TestApp) {
    // A wait long enough for any unheld commit of a debug build on a busy machine.
    let app = app.with_click_waits(ClickWaits {
        redirect: Duration::from_secs(1),
        api: None,
    });
    let seed = app
        .seed_with(json!({"destination_url": "https://shop.example/landing"}))
        .await;
    let path = format!("/r/{}", seed.short_link);
    let r = app
        .send("GET", &path, None, &[("user-agent", BROWSER)])
        .await
        .expect(302);
    assert_eq!(r.headers["reftrack-click"], "committed");
    clicks_become(&app, seed.program_id, 1).await;

    let held = hold_commits(&app, seed.program_id).await;
    // The visitor is sent on with a click id while its commit is held.
    let r = app
        .send("GET", &path, None, &[("user-agent", BROWSER)])
        .await
        .expect(302);
    assert_eq!(r.headers["reftrack-click"], "queued");
    let location = r.headers["location"].to_str().unwrap().to_string();
    let queued = url::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "rt_click")
        .map(|(_, v)| v.into_owned())
        .expect("rt_click");
    // The tracking API's click answers only once committed.
    let api = app.post("/api/v1/track/click", click_body(&seed.short_link));
    tokio::pin!(api);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut api)
            .await
            .is_err(),
        "the click API answered while its commit was held"
    );
    drop(held);
    let r = api.await.expect(200);
    assert_eq!(r.headers["reftrack-click"], "committed");
    // The queued click committed with its batch.
    clicks_become(&app, seed.program_id, 3).await;
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM affiliate_click_events WHERE click_id = '{queued}'"
        ))
        .await,
        1
    );
}

on_both_backends!(an_operator_may_let_the_click_api_answer_after_a_bounded_wait);
async fn an_operator_may_let_the_click_api_answer_after_a_bounded_wait(app: TestApp) {
    let app = app.with_click_waits(ClickWaits {
        redirect: Duration::from_secs(1),
        api: Some(Duration::from_secs(1)),
    });
    let seed = app.seed().await;
    let held = hold_commits(&app, seed.program_id).await;
    let r = app
        .post("/api/v1/track/click", click_body(&seed.short_link))
        .await
        .expect(200);
    assert_eq!(r.headers["reftrack-click"], "queued");
    let click_id = r.body["click_id"].as_str().unwrap().to_string();
    drop(held);
    clicks_become(&app, seed.program_id, 1).await;
    assert_eq!(
        app.count(&format!(
            "SELECT COUNT(*) FROM affiliate_click_events WHERE click_id = '{click_id}'"
        ))
        .await,
        1
    );
    // Unheld, it answers committed, within the wait.
    let r = app
        .post("/api/v1/track/click", click_body(&seed.short_link))
        .await
        .expect(200);
    assert_eq!(r.headers["reftrack-click"], "committed");
}
