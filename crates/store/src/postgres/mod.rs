//! The PostgreSQL engine: one pool shared by readers and by the group committer's writer,
//! so that many processes may share the database.
//!
//! Its modules hold what PostgreSQL does its own way: `batch` (the set-based click and
//! sale statements of the committer) and `rows` (the `VALUES` lists those read). The statements it runs as SQLite does are in `store::sql`.

mod batch;
mod rows;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgQueryResult, Postgres};
use sqlx::{ConnectOptions, Connection};

use super::committer::{Committer, CommitterConfig};
use super::sql::counters::Update;
use super::sql::migrations::{self, Reworded};
use super::sql::write::WritePool;
use super::sql::{Engine, SqlStore};
use super::{opening, Backend};

/// The schema, applied when the store opens.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/postgres");

/// A store on a PostgreSQL database: one pool for reads and the committer's writer.
pub type PostgresStore = SqlStore<Postgres>;

impl SqlStore<Postgres> {
    /// Connects to the database at `url` (`postgres://…`), applies pending migrations
    /// and starts the writer.
    pub async fn open(url: &str) -> anyhow::Result<Self> {
        Self::open_as(url, true).await
    }

    /// Opens the database at `url` as [`Self::open`] does; without `create`, one without
    /// Reftrack's tables is refused rather than given them.
    pub(super) async fn open_as(url: &str, create: bool) -> anyhow::Result<Self> {
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| anyhow::anyhow!("invalid database URL: {}", opening::cause(&e)))?;
        let what = name(&options);
        // One connection first, for its error: the pool's is only that it timed out.
        let mut first = first_connection(&options, &what).await?;
        if !create {
            let migrated: bool =
                sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
                    .fetch_one(&mut first)
                    .await
                    .map_err(|e| opening::cannot_open(&what, &e))?;
            if !migrated {
                return Err(opening::no_database(&what));
            }
        }
        let _ = first.close().await;
        // Short timeouts, so that an outage turns into quick 503s rather than hung
        // requests.
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(CONNECT_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| opening::cannot_open(&what, &e))?;
        migrations::run(&pool, &MIGRATOR, &REWORDED_MIGRATIONS).await?;
        let committer = Committer::start(
            Arc::new(WritePool::new(pool.clone())),
            CommitterConfig {
                // One writer per process: batches serialise on the counter rows they
                // update anyway (each holds their locks through its commit), and a second
                // writer only splits the batches.
                writers: 1,
                // The pool has other connections for everyone else: the writer keeps its
                // own, saving a check-out per batch.
                keep_connection: true,
                // PostgreSQL commits durably itself.
                wal_file: None,
                // A payout of a whole program may take seconds: tracking writes go on
                // beside it, on their own connection.
                long_writer: true,
            },
        );
        Ok(SqlStore {
            read: pool.clone(),
            write: pool,
            committer,
        })
    }
}

/// How long opening a connection, or waiting for one of the pool, may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// One connection to the database of `options` (named `what` in an error), tried as the
/// pool tries one: a refused connection or a server still starting up is tried again
/// until [`CONNECT_TIMEOUT`] has passed, and the error is the last attempt's.
async fn first_connection(
    options: &PgConnectOptions,
    what: &str,
) -> anyhow::Result<sqlx::PgConnection> {
    let deadline = tokio::time::Instant::now() + CONNECT_TIMEOUT;
    let mut pause = Duration::from_millis(10);
    loop {
        let error = match tokio::time::timeout_at(deadline, options.connect()).await {
            Ok(Ok(conn)) => return Ok(conn),
            Ok(Err(e)) => e,
            Err(_) => anyhow::bail!(
                "cannot open the database {what}: no answer within {} s",
                CONNECT_TIMEOUT.as_secs()
            ),
        };
        if !starting_up(&error) {
            return Err(opening::cannot_open(what, &error));
        }
        if tokio::time::Instant::now() + pause >= deadline {
            anyhow::bail!(
                "cannot open the database {what}: {}, still after {} s",
                opening::cause(&error),
                CONNECT_TIMEOUT.as_secs()
            );
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

/// Whether `error` may mean a server still starting: the connection was refused, or the
/// server answered that it cannot accept connections yet (SQLSTATE 57P03).
fn starting_up(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(e) => e.kind() == std::io::ErrorKind::ConnectionRefused,
        sqlx::Error::Database(db) => db.code().as_deref() == Some("57P03"),
        _ => false,
    }
}

/// The database `options` name, as `host:port/dbname` (or the socket's directory for
/// `host`): never the password.
fn name(options: &PgConnectOptions) -> String {
    let database = options
        .get_database()
        .unwrap_or_else(|| options.get_username());
    match options.get_socket() {
        Some(socket) => format!("{}:{}/{database}", socket.display(), options.get_port()),
        None => format!("{}:{}/{database}", options.get_host(), options.get_port()),
    }
}

/// Migrations whose comments were reworded after they shipped (their SQL is unchanged),
/// with the checksum a database that applied the earlier text has on record.
const REWORDED_MIGRATIONS: [Reworded; 2] = [
    (
        1,
        "111197742e781e5e9ff1d00c64b29c1d28f6a155f0c79e3af70052a91b10eb574ac89befcf82ec4116cad5dacdbd3ec1",
    ),
    (
        2,
        "075b0ea63a58c16df6e2c427ea47b3cc37db0dc47e3ffc907d7f1f95d9aa575e7aaeeafb49c6029db939f38f37920bdc",
    ),
];

/// The SQLSTATE class of a statement PostgreSQL cannot run as written (syntax error or
/// access rule violation: a syntax error, a missing table, column or function).
const SYNTAX_ERROR_CLASS: &str = "42";

impl Engine for Postgres {
    const BACKEND: Backend = Backend::Postgres;
    const POOL_NAMES: (&'static str, Option<&'static str>) = ("shared", None);
    const BEGIN_WRITE: &'static str = "BEGIN";
    // Under READ COMMITTED each statement would see its own snapshot.
    const BEGIN_SNAPSHOT: &'static str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
    // Two workers claiming at once each skip the other's rows instead of waiting for
    // them and then claiming them again.
    const CLAIM_LOCK: &'static str = "FOR UPDATE OF d SKIP LOCKED";
    const SALE_CLAIM_LOCK: &'static str = "FOR UPDATE OF s SKIP LOCKED";
    // Two refunds of one sale on two processes: the second reads what the first left.
    const SALE_LOCK: &'static str = "FOR UPDATE OF s";
    const ROW_LOCK: &'static str = "FOR UPDATE";
    const ROW_LOCK_OF_FIRST: &'static str = "FOR UPDATE OF pp";
    // One statement: the purge is a CTE of the insert.
    const CREATE_SESSION: &'static str =
        "WITH purged AS (DELETE FROM sessions WHERE expires_at <= $3) \
        INSERT INTO sessions (user_id, token_hash, created_at, expires_at) \
        VALUES ($1, $2, $3, $4)";

    // A lateral subquery, so that the planner looks the click up by its customer for
    // each row rather than joining the clicks on a computed id: that join, planned
    // without fresh statistics, hashed the whole clicks table for every batch. The index
    // on (customer_id, id) answers it from its last entry for the customer.
    fn latest_click_join(customer_id: &str) -> String {
        format!(
            "LEFT JOIN LATERAL (SELECT l.id, l.ip, l.click_timestamp, l.geo_country \
             FROM affiliate_click_events l WHERE l.customer_id = {customer_id} \
             ORDER BY l.id DESC LIMIT 1) e ON TRUE"
        )
    }

    fn values(rows: usize, width: usize, first: usize) -> String {
        rows::values(rows, width, &mut { first })
    }

    // One statement: every update a CTE.
    fn counter_query(updates: &[Update]) -> String {
        format!("WITH {} SELECT 1", counter_ctes(updates))
    }

    fn rows_affected(result: &PgQueryResult) -> u64 {
        result.rows_affected()
    }

    fn is_statement_bug(error: &(dyn sqlx::error::DatabaseError + 'static)) -> bool {
        error
            .code()
            .is_some_and(|c| c.starts_with(SYNTAX_ERROR_CLASS))
    }
}

/// A part's counter updates as CTEs separated by `,` (for a `WITH`).
fn counter_ctes(updates: &[Update]) -> String {
    let ctes: Vec<String> = updates
        .iter()
        .enumerate()
        .map(|(i, u)| format!("{}, counter_update_{i} AS ({})", u.rows, u.statement))
        .collect();
    ctes.join(", ")
}

#[cfg(test)]
mod plan_tests;
