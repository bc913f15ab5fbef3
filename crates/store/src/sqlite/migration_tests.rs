//! Tests of the SQLite migrations: databases migrated under earlier numbers or wordings
//! open up to date.

use super::SqliteStore;
use crate::Store as _;

#[tokio::test]
async fn a_database_of_the_old_migration_numbering_opens_up_to_date() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("sqlite://{}", dir.path().join("old.db").display());
    let store = SqliteStore::open(&url).await.expect("the store opens");
    // Make its record of applied migrations look as before the renumbering: no empty
    // version 4, the later two one lower.
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = 4")
        .execute(&store.write)
        .await
        .unwrap();
    for version in [5, 6] {
        sqlx::query("UPDATE _sqlx_migrations SET version = version - 1 WHERE version = $1")
            .bind(version)
            .execute(&store.write)
            .await
            .unwrap();
    }
    store.close().await;
    let reopened = SqliteStore::open(&url).await.expect("it opens again");
    let versions: Vec<(i64, String)> =
        sqlx::query_as("SELECT version, description FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&reopened.read)
            .await
            .unwrap();
    assert_eq!(
        versions[3..],
        [
            (4, "click path without foreign keys".to_string()),
            (5, "converted at read time".to_string()),
            (6, "partial sale indexes".to_string()),
            (7, "payouts".to_string()),
            (8, "management access".to_string()),
            (9, "partner accounts".to_string()),
            (10, "partner rollups".to_string()),
            (11, "links and coupons".to_string()),
            (12, "webhooks".to_string()),
            (13, "webhook claim order".to_string()),
            (14, "sale unearned".to_string()),
            (15, "refund ids".to_string()),
            (16, "previous api token".to_string()),
            (17, "counter overflow".to_string()),
            (18, "fraud rules".to_string()),
            (19, "audit log".to_string()),
            (20, "two factor".to_string()),
            (21, "payout details changed".to_string()),
            (23, "partner groups".to_string()),
            (24, "commissions without sale".to_string()),
            (25, "bounties".to_string()),
            (26, "currencies".to_string()),
        ]
    );
    reopened.close().await;
}

#[tokio::test]
async fn a_database_that_applied_reworded_migrations_opens_up_to_date() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("sqlite://{}", dir.path().join("reworded.db").display());
    let store = SqliteStore::open(&url).await.expect("the store opens");
    for (version, earlier) in super::REWORDED_MIGRATIONS {
        sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = $2")
            .bind(hex::decode(earlier).unwrap())
            .bind(version)
            .execute(&store.write)
            .await
            .unwrap();
    }
    store.close().await;
    let reopened = SqliteStore::open(&url).await.expect("it opens again");
    let stale: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM _sqlx_migrations WHERE version IN (1, 2) AND checksum IN ($1, $2)",
    )
    .bind(hex::decode(super::REWORDED_MIGRATIONS[0].1).unwrap())
    .bind(hex::decode(super::REWORDED_MIGRATIONS[1].1).unwrap())
    .fetch_one(&reopened.read)
    .await
    .unwrap();
    assert_eq!(stale, 0, "the current checksums are on record");
    reopened.close().await;
}

/// The currencies whose figures migration 0026 rescaled are those the domain counts in
/// whole units (divided by 100) and in thousandths (multiplied by 10).
#[test]
fn the_figures_rescale_names_the_domains_currencies() {
    use reftrack_domain::currency::decimals;
    for sql in [
        include_str!("../../../../migrations/sqlite/0026_currencies.sql"),
        include_str!("../../../../migrations/postgres/0026_currencies.sql"),
    ] {
        for statement in sql.split(';').filter(|s| s.contains("currency IN")) {
            let list = statement.split("currency IN (").nth(1).unwrap();
            let codes: Vec<&str> = list
                .split(')')
                .next()
                .unwrap()
                .split(',')
                .map(|c| c.trim().trim_matches('\''))
                .collect();
            let expected = if statement.contains("/ 100") { 0 } else { 3 };
            assert!(statement.contains("/ 100") || statement.contains("* 10"));
            for code in &codes {
                assert_eq!(decimals(code), expected, "{code}");
            }
            assert_eq!(codes.len(), if expected == 0 { 16 } else { 5 });
        }
    }
}
