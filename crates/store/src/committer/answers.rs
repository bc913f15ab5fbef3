//! How a batch's writes are answered: once durable, through the WAL syncer, when it
//! committed; with the batch's failure ([`CommitFailed`]) when it did not.

use std::path::PathBuf;

use super::batch::Batch;
use crate::error::StoreError;
use crate::model::SaleOutcome;
use crate::write::{OnCommit, Write};

/// Committed batches waiting to be made durable, then answered.
pub(super) type Syncer = std::sync::mpsc::Sender<Vec<OnCommit>>;

/// Syncs the WAL file after commits and only then answers their callers. One
/// `fdatasync` covers every batch committed before it starts, so the flush of one batch
/// overlaps the work of the next. Runs on a blocking thread of its own; ends when every
/// writer has ended.
pub(super) fn run_syncer(file: PathBuf, rx: std::sync::mpsc::Receiver<Vec<OnCommit>>) {
    let mut wal: Option<std::fs::File> = None;
    while let Ok(first) = rx.recv() {
        let mut batches = vec![first];
        batches.extend(rx.try_iter());
        let synced = match &wal {
            Some(f) => f.sync_data(),
            None => std::fs::File::open(&file).and_then(|f| {
                let synced = f.sync_data();
                wal = Some(f);
                synced
            }),
        };
        let failed = synced.err().map(|e| {
            tracing::error!(error = %e, file = %file.display(), "syncing the WAL failed");
            wal = None;
            e.to_string()
        });
        for done in batches.into_iter().flatten() {
            done(match &failed {
                None => Ok(()),
                Some(e) => Err(unavailable(format!("syncing the WAL failed: {e}"))),
            });
        }
    }
}

pub(super) fn unavailable(message: String) -> StoreError {
    StoreError::Unavailable(anyhow::anyhow!(message))
}

/// What a failed batch answers each of its writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FailedAs {
    /// [`StoreError::Unavailable`].
    Unavailable,
    /// [`StoreError::TooLarge`]: the batch's one write overflowed a counter.
    TooLarge,
    /// [`StoreError::Retry`]: the shared step of several writes failed for their data.
    Retry,
    /// [`StoreError::Other`].
    Other,
}

/// A batch's failure, answered to each of its writes.
#[derive(Debug, Clone)]
pub(super) struct CommitFailed {
    pub(super) answer: FailedAs,
    pub(super) message: String,
}

impl CommitFailed {
    pub(super) fn of(e: &StoreError) -> Self {
        let answer = match e {
            StoreError::Unavailable(_) => FailedAs::Unavailable,
            StoreError::TooLarge => FailedAs::TooLarge,
            _ => FailedAs::Other,
        };
        CommitFailed {
            answer,
            message: e.to_string(),
        }
    }

    /// The failure of the increments the batch's `writes` share: a failure of their data
    /// is the one write's own when there is one, else each runs again alone.
    pub(super) fn of_shared(e: &StoreError, writes: usize) -> Self {
        let mut failed = CommitFailed::of(e);
        if writes > 1 && failed.answer != FailedAs::Unavailable {
            failed.answer = FailedAs::Retry;
        }
        failed
    }

    pub(super) fn error(&self) -> StoreError {
        let cause = || anyhow::anyhow!("write batch failed: {}", self.message);
        match self.answer {
            FailedAs::Unavailable => StoreError::Unavailable(cause()),
            FailedAs::TooLarge => StoreError::TooLarge,
            FailedAs::Retry => StoreError::Retry,
            FailedAs::Other => StoreError::Other(cause()),
        }
    }
}

/// How a batch ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// Committed (or had nothing to commit).
    Committed,
    /// Its transaction failed or was abandoned.
    Failed,
    /// It could not even begin a transaction.
    NotBegun,
}

/// Ends a batch whose transaction ended with `outcome`: answers the writes in `done`
/// (through the syncer, once durable, when it committed) and tells how it ended.
pub(super) fn finish(
    outcome: Result<(), CommitFailed>,
    done: Vec<OnCommit>,
    syncer: Option<&Syncer>,
) -> Ended {
    match &outcome {
        Err(f) if f.answer == FailedAs::Retry => {
            tracing::warn!(error = %f.message, writes = done.len(), "write batch failed for one write's data; each runs again alone");
        }
        Err(f) => tracing::error!(error = %f.message, writes = done.len(), "write batch failed"),
        Ok(()) => {}
    }
    if let (Ok(()), Some(syncer), false) = (&outcome, syncer, done.is_empty()) {
        // Answered once the WAL holding the commit is on disk.
        if let Err(std::sync::mpsc::SendError(done)) = syncer.send(done) {
            for d in done {
                d(Err(unavailable("the WAL syncer has stopped".into())));
            }
        }
        return Ended::Committed;
    }
    let ended = if outcome.is_ok() {
        Ended::Committed
    } else {
        Ended::Failed
    };
    for d in done {
        d(outcome.clone().map_err(|f| f.error()));
    }
    ended
}

/// Answers every write of a batch that never began with `e`.
pub(super) fn fail_batch(batch: Batch, e: &StoreError) {
    let failed = CommitFailed::of(e);
    for c in batch.clicks {
        c.on_commit()(Err(failed.error()));
    }
    for s in batch.sales {
        let unused = SaleOutcome {
            sale_id: 0,
            commission_id: None,
            unearned: None,
        };
        s.on_commit(unused)(Err(failed.error()));
    }
    // Dropped jobs answer their callers "unavailable".
}

/// Answers one queued write with `e` without running it.
pub(super) fn fail(write: Write, e: &StoreError) {
    fail_batch(Batch::of(vec![write]), e);
}
