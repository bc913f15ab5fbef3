//! The group committer's connection on SQLite: [`WritePool`] hands out the one write
//! connection, [`WriteConnection`] drives its transaction (`BEGIN IMMEDIATE`, one
//! savepoint at a time), runs the set-based statements of [`super::batch`] and adds the
//! counters of [`super::counters`].

use async_trait::async_trait;
use sqlx::pool::PoolConnection;
use sqlx::sqlite::Sqlite;
use sqlx::{Pool, SqliteConnection};

use super::{batch, counters};
use crate::domain::figures::Deltas;
use crate::store::committer::{self, WriteConn};
use crate::store::error::{StoreError, StoreResult};
use crate::store::model::{NewClick, NewSale, SaleOutcome};
use crate::store::tx::Tx;

/// `IMMEDIATE` takes the write lock up front, so a transaction never fails half-way on
/// upgrading a read lock when another process writes to the same file.
pub(super) const BEGIN_WRITE: &str = "BEGIN IMMEDIATE";

/// SQLite's result code for a statement it cannot run as written (`SQLITE_ERROR`: a
/// syntax error, a missing table, column or function).
const SQLITE_ERROR: &str = "1";

/// The write pool (one connection), as the committer takes connections from it.
pub(super) struct WritePool {
    pool: Pool<Sqlite>,
}

impl WritePool {
    /// The committer's view of `pool`.
    pub(super) fn new(pool: Pool<Sqlite>) -> Self {
        WritePool { pool }
    }
}

#[async_trait]
impl committer::WritePool for WritePool {
    async fn acquire(&self) -> StoreResult<Box<dyn WriteConn>> {
        Ok(Box::new(WriteConnection {
            conn: self.pool.acquire().await?,
        }))
    }
}

/// The write connection while the committer holds it; the jobs see it as [`Tx`].
pub struct WriteConnection {
    pub(super) conn: PoolConnection<Sqlite>,
}

#[async_trait]
impl WriteConn for WriteConnection {
    fn tx(&mut self) -> &mut dyn Tx {
        self
    }

    async fn begin(&mut self) -> StoreResult<()> {
        sqlx::query(BEGIN_WRITE).execute(&mut *self.conn).await?;
        Ok(())
    }

    async fn commit(&mut self) -> StoreResult<()> {
        sqlx::query("COMMIT").execute(&mut *self.conn).await?;
        Ok(())
    }

    async fn rollback(&mut self) {
        // Fails only when no transaction is open (a failed COMMIT may have ended it).
        if let Err(e) = sqlx::query("ROLLBACK").execute(&mut *self.conn).await {
            tracing::debug!(error = %e, "rollback of the write batch failed");
        }
    }

    async fn savepoint(&mut self) -> StoreResult<()> {
        sqlx::query("SAVEPOINT job")
            .execute(&mut *self.conn)
            .await?;
        Ok(())
    }

    async fn next_savepoint(&mut self) -> StoreResult<()> {
        Ok(raw(&mut self.conn, "RELEASE SAVEPOINT job; SAVEPOINT job").await?)
    }

    async fn rollback_to_savepoint(&mut self) -> StoreResult<()> {
        sqlx::query("ROLLBACK TO SAVEPOINT job")
            .execute(&mut *self.conn)
            .await?;
        Ok(())
    }

    async fn insert_new_clicks(&mut self, clicks: &[&NewClick]) -> StoreResult<()> {
        batch::insert_new_clicks(&mut self.conn, clicks).await
    }

    async fn commit_new_clicks(
        &mut self,
        clicks: &[&NewClick],
        deltas: &Deltas,
    ) -> StoreResult<()> {
        batch::commit_new_clicks(&mut self.conn, clicks, deltas).await
    }

    async fn record_plain_sales(
        &mut self,
        sales: &[&NewSale],
        deltas: &mut Deltas,
    ) -> StoreResult<Vec<Option<SaleOutcome>>> {
        // A savepoint of its own, so that should it fail, nothing it wrote stays and its
        // sales can run one by one; its increments join `deltas` only when it succeeds.
        raw(&mut self.conn, "SAVEPOINT sales").await?;
        let mut sale_deltas = Deltas::default();
        match batch::plain_sales(&mut self.conn, &mut sale_deltas, sales).await {
            Ok(outcomes) => {
                raw(&mut self.conn, "RELEASE SAVEPOINT sales").await?;
                deltas.merge(sale_deltas);
                Ok(outcomes)
            }
            Err(e) => {
                raw(
                    &mut self.conn,
                    "ROLLBACK TO SAVEPOINT sales; RELEASE SAVEPOINT sales",
                )
                .await?;
                Err(e)
            }
        }
    }

    async fn commit_plain_sales(
        &mut self,
        sales: &[&NewSale],
    ) -> Option<StoreResult<Vec<Option<SaleOutcome>>>> {
        Some(batch::commit_plain_sales(&mut self.conn, sales).await)
    }

    async fn apply(&mut self, deltas: &Deltas) -> StoreResult<()> {
        Ok(counters::apply(&mut self.conn, deltas).await?)
    }

    fn is_statement_bug(&self, e: &StoreError) -> bool {
        let StoreError::Other(cause) = e else {
            return false;
        };
        let Some(sqlx::Error::Database(db)) = cause.downcast_ref::<sqlx::Error>() else {
            return false;
        };
        db.code().as_deref() == Some(SQLITE_ERROR)
    }

    fn discard(mut self: Box<Self>) {
        self.conn.close_on_drop();
    }
}

/// Runs statements without arguments in one round trip, without preparing them.
async fn raw(conn: &mut SqliteConnection, sql: &'static str) -> sqlx::Result<()> {
    sqlx::Executor::execute(conn, sql).await.map(|_| ())
}
