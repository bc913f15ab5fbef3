//! One batch of writes and how its writes go in: the set-based hot paths of new clicks
//! and plain sales, the jobs in savepoints, and the end of the transaction.

use super::answers::{finish, CommitFailed, Ended, Syncer};
use super::WriteConn;
use crate::error::StoreError;
use crate::model::{NewClick, NewSale, SaleOutcome};
use crate::write::{ClickWrite, Job, OnCommit, SaleWrite, Write};
use reftrack_domain::figures::Deltas;

/// The writes of one batch, sorted by how they may go in.
#[derive(Default)]
pub(super) struct Batch {
    pub(super) jobs: Vec<Job>,
    pub(super) clicks: Vec<Box<dyn ClickWrite>>,
    pub(super) sales: Vec<Box<dyn SaleWrite>>,
    /// Whether a [`Write::Alone`] is among them: every write then runs as a job that
    /// applies its own increments.
    pub(super) alone: bool,
}

impl Batch {
    pub(super) fn of(writes: Vec<Write>) -> Self {
        let mut batch = Batch::default();
        for w in writes {
            match w {
                Write::Job(j) | Write::Long(j) => batch.jobs.push(j),
                Write::Alone(j) => {
                    batch.alone = true;
                    batch.jobs.push(j);
                }
                Write::Click(c) => batch.clicks.push(c),
                Write::Sale(s) => batch.sales.push(s),
            }
        }
        batch
    }

    /// The batch's clicks as jobs of their own.
    pub(super) fn clicks_one_by_one(&mut self) {
        self.jobs
            .extend(self.clicks.drain(..).map(|c| c.one_by_one()));
    }

    /// The batch's sales as jobs of their own.
    pub(super) fn sales_one_by_one(&mut self) {
        self.jobs
            .extend(self.sales.drain(..).map(|s| s.one_by_one()));
    }
}

/// A batch of nothing but new clicks, in one round trip; `None` when its statement failed
/// for the data (the clicks then go one by one).
pub(super) async fn commit_clicks(
    conn: &mut dyn WriteConn,
    batch: &mut Batch,
    syncer: Option<&Syncer>,
) -> Option<Ended> {
    let clicks: Vec<&NewClick> = batch.clicks.iter().map(|c| c.click()).collect();
    let mut deltas = Deltas::default();
    count_clicks(&mut deltas, &clicks);
    match conn.commit_new_clicks(&clicks, &deltas).await {
        Ok(()) => {
            let done = batch.clicks.drain(..).map(|c| c.on_commit()).collect();
            Some(finish(Ok(()), done, syncer))
        }
        Err(e @ StoreError::Unavailable(_)) => {
            // Whether it committed is unknown: no retry that could record the clicks twice.
            tracing::error!(error = %e, clicks = clicks.len(), "write batch failed");
            let failed = CommitFailed::of(&e);
            for c in batch.clicks.drain(..) {
                c.on_commit()(Err(failed.error()));
            }
            Some(Ended::Failed)
        }
        Err(e) => {
            debug_assert!(!conn.is_statement_bug(&e), "batched click commit: {e:?}");
            tracing::warn!(error = ?e, clicks = clicks.len(), "batched clicks failed; retrying one by one");
            None
        }
    }
}

/// A batch of nothing but plain sales, in one round trip where the backend has it;
/// `None` when the rest of the batch is still to run (sales left to their own jobs, or
/// no such statement).
pub(super) async fn commit_sales(
    conn: &mut dyn WriteConn,
    batch: &mut Batch,
    syncer: Option<&Syncer>,
) -> Option<Ended> {
    let sales: Vec<&NewSale> = batch.sales.iter().map(|s| s.sale()).collect();
    match conn.commit_plain_sales(&sales).await? {
        Ok(outcomes) => {
            let mut done = Vec::new();
            sort_sales(
                std::mem::take(&mut batch.sales),
                outcomes,
                &mut done,
                &mut batch.jobs,
            );
            let ended = finish(Ok(()), done, syncer);
            batch.jobs.is_empty().then_some(ended)
        }
        Err(e @ StoreError::Unavailable(_)) => {
            tracing::error!(error = %e, sales = sales.len(), "write batch failed");
            let failed = CommitFailed::of(&e);
            for s in batch.sales.drain(..) {
                let unused = SaleOutcome {
                    sale_id: 0,
                    commission_id: None,
                    unearned: None,
                };
                s.on_commit(unused)(Err(failed.error()));
            }
            Some(Ended::Failed)
        }
        Err(e) => {
            debug_assert!(!conn.is_statement_bug(&e), "batched sale commit: {e:?}");
            tracing::warn!(error = ?e, sales = sales.len(), "batched sales failed; retrying in the batch's transaction");
            None
        }
    }
}

/// Sorts batched sales by what the set-based statement made of them: those it recorded
/// are answered once the batch commits (`done`); the others run as jobs of their own.
pub(super) fn sort_sales(
    sales: Vec<Box<dyn SaleWrite>>,
    outcomes: Vec<Option<SaleOutcome>>,
    done: &mut Vec<OnCommit>,
    jobs: &mut Vec<Job>,
) {
    for (sale, outcome) in sales.into_iter().zip(outcomes) {
        match outcome {
            Some(o) => done.push(sale.on_commit(o)),
            None => jobs.push(sale.one_by_one()),
        }
    }
}

/// Runs the batch's jobs in the open transaction, one savepoint at a time, applies the
/// counters and commits. A single job runs without a savepoint.
pub(super) async fn run_jobs(
    conn: &mut dyn WriteConn,
    jobs: Vec<Job>,
    done: &mut Vec<OnCommit>,
    mut deltas: Deltas,
) -> Result<(), CommitFailed> {
    let single = jobs.len() == 1 && done.is_empty();
    let count = jobs.len();
    let mut failed: Option<CommitFailed> = None;
    // One savepoint at a time: opened before the first job, released and opened again
    // after each successful job in one round trip, rolled back to (and so kept for the
    // next job) after a failed one; COMMIT releases the last.
    if !single && count > 0 {
        if let Err(e) = conn.savepoint().await {
            failed = Some(CommitFailed::of(&e));
        }
    }
    for (i, job) in jobs.into_iter().enumerate() {
        if failed.is_some() {
            // The transaction is unusable; dropping the job answers its caller.
            continue;
        }
        let last = i + 1 == count;
        let mut job_deltas = Deltas::default();
        match job(conn.tx(), &mut job_deltas).await {
            Some(d) => {
                if !single && !last {
                    if let Err(e) = conn.next_savepoint().await {
                        failed = Some(CommitFailed::of(&e));
                    }
                }
                deltas.merge(job_deltas);
                done.push(d);
            }
            None if single => {}
            None => {
                if let Err(e) = conn.rollback_to_savepoint().await {
                    failed = Some(CommitFailed::of(&e));
                }
            }
        }
    }
    if failed.is_none() && !done.is_empty() {
        if let Err(e) = conn.apply(&deltas).await {
            failed = Some(CommitFailed::of_shared(&e, done.len()));
        }
    }
    end_jobs(conn, failed, done.len()).await
}

/// Runs the jobs of a batch with a [`Write::Alone`] in the open transaction, each in a
/// savepoint with its own counter increments: a job whose increments fail for their data
/// is undone and answered with that failure, and the others commit.
pub(super) async fn run_jobs_alone(
    conn: &mut dyn WriteConn,
    jobs: Vec<Job>,
    done: &mut Vec<OnCommit>,
) -> Result<(), CommitFailed> {
    let mut failed: Option<CommitFailed> = None;
    if let Err(e) = conn.savepoint().await {
        failed = Some(CommitFailed::of(&e));
    }
    for job in jobs {
        if failed.is_some() {
            continue;
        }
        let mut deltas = Deltas::default();
        let Some(d) = job(conn.tx(), &mut deltas).await else {
            if let Err(e) = conn.rollback_to_savepoint().await {
                failed = Some(CommitFailed::of(&e));
            }
            continue;
        };
        let kept = match conn.apply(&deltas).await {
            Ok(()) => conn.next_savepoint().await,
            Err(e @ StoreError::Unavailable(_)) => Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "a write's counter increments failed; it alone is refused");
                match conn.rollback_to_savepoint().await {
                    Ok(()) => {
                        d(Err(e));
                        continue;
                    }
                    Err(undo) => Err(undo),
                }
            }
        };
        if let Err(e) = kept {
            failed = Some(CommitFailed::of(&e));
        }
        done.push(d);
    }
    end_jobs(conn, failed, done.len()).await
}

/// Ends a batch's transaction after its jobs: rolls it back when it `failed` or has
/// no write to commit (`writes`), commits it otherwise.
pub(super) async fn end_jobs(
    conn: &mut dyn WriteConn,
    failed: Option<CommitFailed>,
    writes: usize,
) -> Result<(), CommitFailed> {
    match failed {
        Some(f) => {
            conn.rollback().await;
            Err(f)
        }
        None if writes == 0 => {
            conn.rollback().await;
            Ok(())
        }
        None => conn
            .commit()
            .await
            .map_err(|e| CommitFailed::of_shared(&e, writes)),
    }
}

/// Adds what new clicks count to `deltas`.
pub(super) fn count_clicks(deltas: &mut Deltas, clicks: &[&NewClick]) {
    deltas.count_clicks(
        clicks
            .iter()
            .map(|c| (c.program_id, c.partner_id, c.link_id, c.at)),
    );
}
