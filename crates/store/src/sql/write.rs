//! The group committer's connection: [`WritePool`] hands out a write connection,
//! [`WriteConnection`] drives its transaction (one savepoint at a time), runs the engine's
//! set-based statements and adds the counters.

use std::sync::Arc;

use async_trait::async_trait;
use sqlx::pool::PoolConnection;
use sqlx::Pool;

use super::counters;
use super::engine::{stmt, Engine};
use super::groups::RewardsCache;
use crate::committer::{self, WriteConn};
use crate::error::{StoreError, StoreResult};
use crate::model::{NewClick, NewSale, SaleOutcome};
use crate::tx::Tx;
use reftrack_domain::figures::Deltas;

/// The write pool, as the committer takes connections from it.
pub struct WritePool<DB: Engine> {
    pool: Pool<DB>,
    rewards: Arc<RewardsCache>,
}

impl<DB: Engine> WritePool<DB> {
    /// The committer's view of `pool`.
    pub fn new(pool: Pool<DB>) -> Self {
        WritePool {
            pool,
            rewards: Arc::default(),
        }
    }
}

#[async_trait]
impl<DB: Engine> committer::WritePool for WritePool<DB> {
    async fn acquire(&self) -> StoreResult<Box<dyn WriteConn>> {
        Ok(Box::new(WriteConnection {
            conn: self.pool.acquire().await?,
            rewards: self.rewards.clone(),
        }))
    }
}

/// The write connection while the committer holds it; the jobs see it as [`Tx`].
pub struct WriteConnection<DB: Engine> {
    pub(super) conn: PoolConnection<DB>,
    /// The parsed rewards of the groups its sales and leads read.
    pub(super) rewards: Arc<RewardsCache>,
}

#[async_trait]
impl<DB: Engine> WriteConn for WriteConnection<DB> {
    fn tx(&mut self) -> &mut dyn Tx {
        self
    }

    async fn begin(&mut self) -> StoreResult<()> {
        stmt::<DB>(DB::BEGIN_WRITE).execute(&mut self.conn).await?;
        Ok(())
    }

    async fn commit(&mut self) -> StoreResult<()> {
        stmt::<DB>("COMMIT").execute(&mut self.conn).await?;
        Ok(())
    }

    async fn rollback(&mut self) {
        // Fails only when no transaction is open (a failed COMMIT may have ended it).
        if let Err(e) = stmt::<DB>("ROLLBACK").execute(&mut self.conn).await {
            tracing::debug!(error = %e, "rollback of the write batch failed");
        }
    }

    async fn savepoint(&mut self) -> StoreResult<()> {
        stmt::<DB>("SAVEPOINT job").execute(&mut self.conn).await?;
        Ok(())
    }

    async fn next_savepoint(&mut self) -> StoreResult<()> {
        Ok(DB::raw(&mut self.conn, "RELEASE SAVEPOINT job; SAVEPOINT job").await?)
    }

    async fn rollback_to_savepoint(&mut self) -> StoreResult<()> {
        stmt::<DB>("ROLLBACK TO SAVEPOINT job")
            .execute(&mut self.conn)
            .await?;
        Ok(())
    }

    async fn insert_new_clicks(&mut self, clicks: &[&NewClick]) -> StoreResult<()> {
        DB::insert_new_clicks(&mut self.conn, clicks).await
    }

    async fn commit_new_clicks(
        &mut self,
        clicks: &[&NewClick],
        deltas: &Deltas,
    ) -> StoreResult<()> {
        DB::commit_new_clicks(&mut self.conn, clicks, deltas).await
    }

    async fn record_plain_sales(
        &mut self,
        sales: &[&NewSale],
        deltas: &mut Deltas,
    ) -> StoreResult<Vec<Option<SaleOutcome>>> {
        // A savepoint of its own, so that should it fail, nothing it wrote stays and its
        // sales can run one by one; its increments join `deltas` only when it succeeds.
        DB::raw(&mut self.conn, "SAVEPOINT sales").await?;
        let mut sale_deltas = Deltas::default();
        match super::batch::plain_sales::<DB>(
            &mut self.conn,
            deltas,
            &mut sale_deltas,
            sales,
            &self.rewards,
        )
        .await
        {
            Ok(outcomes) => {
                DB::raw(&mut self.conn, "RELEASE SAVEPOINT sales").await?;
                deltas.merge(sale_deltas);
                Ok(outcomes)
            }
            Err(e) => {
                DB::raw(
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
        DB::commit_plain_sales(&mut self.conn, sales, &self.rewards).await
    }

    async fn apply(&mut self, deltas: &Deltas) -> StoreResult<()> {
        Ok(counters::apply::<DB>(&mut self.conn, deltas).await?)
    }

    fn is_statement_bug(&self, e: &StoreError) -> bool {
        let StoreError::Other(cause) = e else {
            return false;
        };
        let Some(sqlx::Error::Database(db)) = cause.downcast_ref::<sqlx::Error>() else {
            return false;
        };
        DB::is_statement_bug(db.as_ref())
    }

    fn discard(mut self: Box<Self>) {
        self.conn.close_on_drop();
    }
}
