//! The writer tasks: each takes the writes waiting in its queue, runs them as one batch
//! on the connection it holds, and measures the batch.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;

use super::answers::{fail, fail_batch, finish, unavailable, Ended, Syncer};
use super::batch::{
    commit_clicks, commit_sales, count_clicks, run_jobs, run_jobs_alone, sort_sales, Batch,
};
use super::{
    CommitStats, Queued, WriteConn, WritePool, BATCH_TIMEOUT, KEPT_CONNECTION_IDLE,
    LONG_BATCH_TIMEOUT, MAX_BATCH, MAX_SET_ROWS, WRITE_CONNECTION_TURN,
};
use crate::model::{NewClick, NewSale};
use crate::write::{OnCommit, Write};
use reftrack_domain::figures::Deltas;

/// One writer task and the connection it holds between batches.
pub(super) struct Writer {
    pub(super) pool: Arc<dyn WritePool>,
    pub(super) rx: Arc<tokio::sync::Mutex<mpsc::Receiver<Queued>>>,
    pub(super) syncer: Option<Syncer>,
    pub(super) keep_connection: bool,
    pub(super) held: Option<Box<dyn WriteConn>>,
    pub(super) held_since: Instant,
    /// When the last batch ended.
    pub(super) last_batch: Instant,
    /// A long write taken from the queue while a batch was gathered: the next batch.
    pub(super) pending: Option<Queued>,
    pub(super) stats: CommitStats,
}

impl Writer {
    pub(super) async fn run(mut self) {
        loop {
            let mut writes = Vec::new();
            let queued_at = if let Some((at, w)) = self.pending.take() {
                writes.push(w);
                at
            } else {
                let mut rx = self.rx.lock().await;
                let Some((at, w)) = rx.recv().await else {
                    return;
                };
                writes.push(w);
                // A long write is a batch of its own.
                while writes.len() < MAX_BATCH && !matches!(writes[0], Write::Long(_)) {
                    match rx.try_recv() {
                        Ok((at, w @ Write::Long(_))) => {
                            self.pending = Some((at, w));
                            break;
                        }
                        Ok((_, w)) => writes.push(w),
                        Err(_) => break,
                    }
                }
                at
            };
            let n = writes.len();
            let started = Instant::now();
            self.stats.batch_size.observe(n as f64);
            self.stats
                .queue_wait
                .observe(started.duration_since(queued_at).as_secs_f64());
            if self.last_batch.elapsed() >= KEPT_CONNECTION_IDLE {
                // Back to the pool, which checks it before the batch gets it again.
                self.held = None;
            }
            if self.held.is_none() {
                self.held_since = Instant::now();
            }
            let limit = if matches!(writes[0], Write::Long(_)) {
                LONG_BATCH_TIMEOUT
            } else {
                BATCH_TIMEOUT
            };
            let ended = match tokio::time::timeout(limit, self.run_batch(writes)).await {
                Ok(ended) => ended,
                Err(_) => {
                    tracing::error!(writes = n, "write batch abandoned after {limit:?}");
                    Ended::Failed
                }
            };
            self.stats
                .batch_duration
                .observe(started.elapsed().as_secs_f64());
            self.last_batch = Instant::now();
            if ended == Ended::NotBegun {
                // The database is unreachable or locked: answer everything queued now
                // instead of letting each batch wait out its own timeout.
                let mut rx = self.rx.lock().await;
                while let Ok((_, w)) = rx.try_recv() {
                    fail(w, &unavailable("write batch could not begin".into()));
                }
            }
            if ended != Ended::Committed {
                // The connection may be broken: close it, the next batch takes another.
                if let Some(conn) = self.held.take() {
                    conn.discard();
                }
            } else if !self.keep_connection
                && (self.held_since.elapsed() >= WRITE_CONNECTION_TURN
                    || self.rx.lock().await.is_empty())
            {
                self.held = None;
            }
        }
    }

    /// Runs one batch on the held connection, taking one from the pool when none is held.
    async fn run_batch(&mut self, writes: Vec<Write>) -> Ended {
        let mut batch = Batch::of(writes);
        if self.held.is_none() {
            match self.pool.acquire().await {
                Ok(conn) => self.held = Some(conn),
                Err(e) => {
                    tracing::warn!(error = %e, "write batch could not begin");
                    fail_batch(batch, &e);
                    return Ended::NotBegun;
                }
            }
        }
        let conn = self.held.as_mut().expect("a connection is held");
        let syncer = self.syncer.as_ref();
        if batch.alone {
            batch.clicks_one_by_one();
            batch.sales_one_by_one();
        }
        if batch.jobs.is_empty()
            && batch.sales.is_empty()
            && (1..=MAX_SET_ROWS).contains(&batch.clicks.len())
        {
            // The hot path under click traffic: the whole batch in one round trip.
            match commit_clicks(conn.as_mut(), &mut batch, syncer).await {
                Some(ended) => return ended,
                None => batch.clicks_one_by_one(),
            }
        }
        if batch.jobs.is_empty()
            && batch.clicks.is_empty()
            && (1..=MAX_SET_ROWS).contains(&batch.sales.len())
        {
            // The hot path under sale traffic, where the backend has it.
            if let Some(ended) = commit_sales(conn.as_mut(), &mut batch, syncer).await {
                return ended;
            }
        }
        if batch.clicks.len() == 1 {
            batch.clicks_one_by_one();
        }
        if batch.sales.len() == 1 {
            batch.sales_one_by_one();
        }
        if let Err(e) = conn.begin().await {
            tracing::warn!(error = %e, "write batch could not begin");
            fail_batch(batch, &e);
            return Ended::NotBegun;
        }
        let mut done: Vec<OnCommit> = Vec::new();
        let mut deltas = Deltas::default();
        if !batch.clicks.is_empty() {
            // The batch's new clicks go first, without a savepoint (whose page copies
            // would cost more than the inserts): should their statement fail, the
            // transaction starts again with each click as a job of its own, so that only
            // a faulty one fails.
            let clicks: Vec<&NewClick> = batch.clicks.iter().map(|c| c.click()).collect();
            match conn.insert_new_clicks(&clicks).await {
                Ok(()) => {
                    count_clicks(&mut deltas, &clicks);
                    done.extend(batch.clicks.drain(..).map(|c| c.on_commit()));
                }
                Err(e) => {
                    debug_assert!(!conn.is_statement_bug(&e), "batched click insert: {e:?}");
                    tracing::warn!(error = ?e, clicks = clicks.len(), "batched click insert failed; retrying one by one");
                    conn.rollback().await;
                    batch.clicks_one_by_one();
                    if let Err(e) = conn.begin().await {
                        fail_batch(batch, &e);
                        return Ended::NotBegun;
                    }
                }
            }
        }
        if !batch.sales.is_empty() {
            let sales: Vec<&NewSale> = batch.sales.iter().map(|s| s.sale()).collect();
            match conn.record_plain_sales(&sales, &mut deltas).await {
                Ok(outcomes) => sort_sales(
                    std::mem::take(&mut batch.sales),
                    outcomes,
                    &mut done,
                    &mut batch.jobs,
                ),
                Err(e) => {
                    debug_assert!(!conn.is_statement_bug(&e), "batched sales: {e:?}");
                    tracing::warn!(error = ?e, sales = sales.len(), "batched sales failed; running them one by one");
                    batch.sales_one_by_one();
                }
            }
        }
        let outcome = if batch.alone {
            run_jobs_alone(conn.as_mut(), batch.jobs, &mut done).await
        } else {
            run_jobs(conn.as_mut(), batch.jobs, &mut done, deltas).await
        };
        finish(outcome, done, syncer)
    }
}
