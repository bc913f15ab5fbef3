//! An index serves each of the fraud rules' lookups on PostgreSQL (a customer's latest
//! click, a partner's conversion and sign-in IPs, the conversion IPs a sale records):
//! with sequential scans disabled, a plan still scans a stored table only where no index
//! can serve it. Which plan the server picks on real data is `scripts/bench`'s to show.

use std::str::FromStr;

use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection, Postgres, Row};

use super::MIGRATOR;
use crate::sql::rules::{conversion_ips, latest_click, no_duplicate_ip, no_partner_ip};

/// The tables the lookups read, none of which a plan may scan.
const STORED: [&str; 4] = [
    "affiliate_click_events",
    "conversion_ips",
    "partner_sign_in_ips",
    "customers",
];

#[tokio::test]
async fn the_fraud_lookups_use_indexes() {
    let server = std::env::var("REFTRACK_TEST_POSTGRES_URL").expect(
        "REFTRACK_TEST_POSTGRES_URL names no PostgreSQL server: scripts/test starts one, or \
         set it to postgres://USER@HOST:PORT/DB",
    );
    let name = format!("reftrack_t_plan_{}", std::process::id());
    let mut admin = PgConnection::connect(&server).await.unwrap();
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .unwrap();
    let options = PgConnectOptions::from_str(&server).unwrap().database(&name);
    let mut conn = PgConnection::connect_with(&options).await.unwrap();
    let checked = plans_use_indexes(&mut conn).await;
    conn.close().await.unwrap();
    sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)"))
        .execute(&mut admin)
        .await
        .unwrap();
    let problems = checked.expect("the lookups' plans");
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Each lookup's plan that scans a stored table, with the statement.
async fn plans_use_indexes(conn: &mut PgConnection) -> Result<Vec<String>, sqlx::Error> {
    MIGRATOR.run(&mut *conn).await.map_err(|e| match e {
        sqlx::migrate::MigrateError::Execute(e) => e,
        other => sqlx::Error::Protocol(other.to_string()),
    })?;
    sqlx::query("SET enable_seqscan = off")
        .execute(&mut *conn)
        .await?;
    let at = "CAST(1800000000000 AS BIGINT)";
    let (insert, from_rows) = conversion_ips::<Postgres>();
    let statements = [
        format!(
            "SELECT e.id, e.ip, e.click_timestamp FROM (SELECT CAST(1 AS BIGINT) AS id) c {}",
            latest_click::<Postgres>("c.id")
        ),
        format!(
            "SELECT 1 FROM (SELECT CAST(1 AS BIGINT) AS id, CAST(2 AS BIGINT) AS partner_id) c, \
             (SELECT CAST('10.0.0.1' AS TEXT) AS ip) e WHERE {} AND {}",
            no_duplicate_ip(at),
            no_partner_ip(at)
        ),
        format!(
            "{insert} FROM (SELECT CAST(2 AS BIGINT) AS partner_id, CAST(1 AS BIGINT) AS \
             customer_id, {at} AS at) rows {from_rows}"
        ),
    ];
    let mut problems = Vec::new();
    for sql in &statements {
        let plan: Vec<String> = sqlx::query(&format!("EXPLAIN {sql}"))
            .fetch_all(&mut *conn)
            .await?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()?;
        let scans = plan.iter().any(|step| {
            STORED
                .iter()
                .any(|t| step.contains(&format!("Seq Scan on {t}")))
        });
        if scans {
            problems.push(format!("{sql}\n{}", plan.join("\n")));
        }
    }
    Ok(problems)
}
