//! The group committer's connection on PostgreSQL: [`WritePool`] hands out a
//! connection of the pool, [`WriteConnection`] drives its transaction (`BEGIN`, one
//! savepoint at a time), runs the set-based statements of [`super::batch`] and adds the
//! counters of [`super::counters`].

use async_trait::async_trait;
use sqlx::pool::PoolConnection;
use sqlx::postgres::Postgres;
use sqlx::{PgConnection, Pool};

use super::{batch, counters};
use crate::domain::figures::Deltas;
use crate::store::committer::{self, WriteConn};
use crate::store::error::{StoreError, StoreResult};
use crate::store::model::{NewClick, NewSale, SaleOutcome};
use crate::store::tx::Tx;

/// The SQLSTATE class of a statement PostgreSQL cannot run as written (syntax error or
/// access rule violation: a syntax error, a missing table, column or function).
const SYNTAX_ERROR_CLASS: &str = "42";

/// The shared pool, as the committer takes connections from it.
pub(super) struct WritePool {
    pool: Pool<Postgres>,
}

impl WritePool {
    /// The committer's view of `pool`.
    pub(super) fn new(pool: Pool<Postgres>) -> Self {
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
    pub(super) conn: PoolConnection<Postgres>,
}

#[async_trait]
impl WriteConn for WriteConnection {
    fn tx(&mut self) -> &mut dyn Tx {
        self
    }

    async fn begin(&mut self) -> StoreResult<()> {
        sqlx::query("BEGIN").execute(&mut *self.conn).await?;
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
        _sales: &[&NewSale],
    ) -> Option<StoreResult<Vec<Option<SaleOutcome>>>> {
        // No one-statement form here: PostgreSQL records them in the batch's transaction.
        None
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
        db.code().is_some_and(|c| c.starts_with(SYNTAX_ERROR_CLASS))
    }

    fn discard(mut self: Box<Self>) {
        self.conn.close_on_drop();
    }
}

/// Runs statements without arguments in one round trip, without preparing them.
async fn raw(conn: &mut PgConnection, sql: &'static str) -> sqlx::Result<()> {
    sqlx::Executor::execute(conn, sql).await.map(|_| ())
}
