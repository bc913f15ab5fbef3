//! Group commit: the write path of the tracking API, the same for every backend.
//!
//! Requests hand a [`Write`] to a writer task. A writer takes every write waiting, up to
//! [`MAX_BATCH`], runs them in one transaction (each job in a savepoint, so one failing
//! job does not undo the others), applies the batch's folded counter and rollup
//! increments, commits, and only then answers each request. New clicks and plain sales go
//! in set-based, by statements of the backend ([`WriteConn`]); a batch of nothing but
//! those commits in one round trip where the backend can.
//!
//! A write that fails fails alone. A job's own failure is undone by its savepoint. When
//! the step the batch's writes share fails for their data (the folded increments
//! overflow a counter), the batch is rolled back and each of its writes is answered
//! [`StoreError::Retry`]: the service layer runs it again as a [`Write::Alone`], whose
//! batch applies each job's increments in the job's own savepoint, so that only the write
//! whose increments fail is refused and every other commits as if it had never been
//! there.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use tokio::sync::mpsc;

use super::error::{StoreError, StoreResult};
use super::model::{NewClick, NewSale, SaleOutcome};
use super::tx::Tx;
use super::write::{ClickWrite, Job, OnCommit, SaleWrite, Write};
use reftrack_domain::figures::Deltas;

/// Most writes one transaction takes.
const MAX_BATCH: usize = 512;

/// Writes waiting for a writer before senders are slowed down.
const QUEUE_DEPTH: usize = 8192;

/// Longest one batch may take. A batch stuck on a dead connection is abandoned after it:
/// its transaction is dropped (rolled back, unless its COMMIT was already on its way) and
/// its callers are answered "unavailable".
const BATCH_TIMEOUT: Duration = Duration::from_secs(15);

/// Longest a batch of a [`Write::Long`] may take.
const LONG_BATCH_TIMEOUT: Duration = Duration::from_secs(600);

/// Longest a writer that does not keep its connection holds it while batches keep
/// coming. Giving it back after every batch would cost a round trip to the database per
/// batch (the pool checks a connection it gets back); never giving it back would starve
/// the other users of a one-connection pool under load.
const WRITE_CONNECTION_TURN: Duration = Duration::from_millis(50);

/// Longest a writer that keeps its connection uses it again without the pool's check.
/// After an outage with no writes in it (the outage guard answered them), the kept
/// connection is dead: the pool's check on the way back finds that, and the first write
/// after the database returns does not fail. Under load batches come far more often, so
/// the check costs nothing there.
const KEPT_CONNECTION_IDLE: Duration = Duration::from_secs(1);

/// Where a backend's writers get their connections.
#[async_trait]
pub trait WritePool: Send + Sync + 'static {
    /// A connection for the next batch.
    async fn acquire(&self) -> StoreResult<Box<dyn WriteConn>>;
}

/// A backend's write connection, as the committer drives it: the transaction
/// statements, the set-based statements of new clicks and plain sales, and the counters.
#[async_trait]
pub trait WriteConn: Send {
    /// The connection as the jobs see it.
    fn tx(&mut self) -> &mut dyn Tx;
    /// Begins the batch's write transaction.
    async fn begin(&mut self) -> StoreResult<()>;
    /// Commits it.
    async fn commit(&mut self) -> StoreResult<()>;
    /// Rolls it back.
    async fn rollback(&mut self);
    /// Opens the savepoint a job runs in.
    async fn savepoint(&mut self) -> StoreResult<()>;
    /// Releases the savepoint of a successful job and opens the next one.
    async fn next_savepoint(&mut self) -> StoreResult<()>;
    /// Undoes what a failed job wrote; its savepoint stays open for the next job.
    async fn rollback_to_savepoint(&mut self) -> StoreResult<()>;
    /// Inserts new clicks (their customers and events) in the open transaction.
    async fn insert_new_clicks(&mut self, clicks: &[&NewClick]) -> StoreResult<()>;
    /// Inserts new clicks and adds `deltas` as a transaction of its own, in one round
    /// trip when the backend can. At most [`MAX_SET_ROWS`] clicks. When it fails,
    /// nothing of it is left.
    async fn commit_new_clicks(&mut self, clicks: &[&NewClick], deltas: &Deltas)
        -> StoreResult<()>;
    /// Records the plain sales that resolve plainly, in the open transaction, and adds
    /// their counters to `deltas`; `None` for a sale left to its own job. Should it fail,
    /// it leaves nothing written and `deltas` unchanged.
    async fn record_plain_sales(
        &mut self,
        sales: &[&NewSale],
        deltas: &mut Deltas,
    ) -> StoreResult<Vec<Option<SaleOutcome>>>;
    /// [`WriteConn::record_plain_sales`] with its counters as a transaction of its own in
    /// one round trip, where the backend has such a statement (`None` otherwise). At most
    /// [`MAX_SET_ROWS`] sales. When it fails, nothing of it is left.
    async fn commit_plain_sales(
        &mut self,
        sales: &[&NewSale],
    ) -> Option<StoreResult<Vec<Option<SaleOutcome>>>>;
    /// Adds a batch's counter and rollup increments in the open transaction.
    async fn apply(&mut self, deltas: &Deltas) -> StoreResult<()>;
    /// Whether a set-based statement failed because its SQL does not suit the database
    /// (syntax, a missing table) rather than because of the data or the connection. The
    /// one-by-one fallback would hide such a bug, so debug builds (the tests) stop on it.
    fn is_statement_bug(&self, e: &StoreError) -> bool;
    /// Closes the connection instead of returning it to its pool (it may be broken).
    fn discard(self: Box<Self>);
}

/// Most rows one set-based statement takes (a bigger batch runs it once per chunk).
pub const MAX_SET_ROWS: usize = 64;

/// How a backend's writers run.
pub struct CommitterConfig {
    /// Writer tasks.
    pub writers: usize,
    /// Whether a writer keeps its connection between batches (else it gives it back
    /// when its queue is empty or after [`WRITE_CONNECTION_TURN`]).
    pub keep_connection: bool,
    /// A WAL file the committer syncs (`fdatasync`) after each commit and before
    /// answering: the durability of a full sync at commit, but off the writer's path, so
    /// that the next batch runs while the disk flushes the last one.
    pub wal_file: Option<PathBuf>,
    /// Whether [`Write::Long`]s get a writer of their own, with its own connection;
    /// otherwise they queue with the other writes.
    pub long_writer: bool,
}

/// What the committer measures of its batches, for the metrics. Recorded once per batch
/// whether or not metrics are served: three short locked additions beside a transaction.
#[derive(Debug, Clone)]
pub struct CommitStats {
    /// Writes per batch.
    pub batch_size: Histogram,
    /// Seconds the oldest write of a batch waited in the queue before its batch began.
    pub queue_wait: Histogram,
    /// Seconds a batch ran, from taking its connection to the end of its transaction
    /// (on SQLite the WAL sync that makes it durable follows, off the writer's path).
    pub batch_duration: Histogram,
}

impl Default for CommitStats {
    fn default() -> Self {
        // 1 to 512 writes; 100 µs to about 13 s.
        let seconds = || Histogram::new(exponential_buckets(0.0001, 2.0, 18));
        CommitStats {
            batch_size: Histogram::new(exponential_buckets(1.0, 2.0, 10)),
            queue_wait: seconds(),
            batch_duration: seconds(),
        }
    }
}

/// A write in a queue, with the instant it was queued.
type Queued = (Instant, Write);

/// The sending sides of the writers' queues; `None` once closed.
pub struct Committer {
    queue: std::sync::Mutex<Option<mpsc::Sender<Queued>>>,
    /// The long writes' own queue, where they have a writer of their own.
    long: std::sync::Mutex<Option<mpsc::Sender<Queued>>>,
    handles: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    stats: CommitStats,
}

/// The runtime the writers and the syncer run on: one thread of their own, shared by
/// every store of the process. A writer waits for the database several times per batch;
/// on the request-serving runtime each of those wake-ups would queue behind every
/// request ready to run, and the whole write path would stall with it under load.
fn writer_runtime() -> tokio::runtime::Handle {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("reftrack-writer")
                .enable_all()
                .build()
                .expect("the writers' runtime starts")
        })
        .handle()
        .clone()
}

impl Committer {
    /// Starts the writers of `pool` as `config` says.
    pub fn start(pool: Arc<dyn WritePool>, config: CommitterConfig) -> Self {
        let (queue, rx) = mpsc::channel::<Queued>(QUEUE_DEPTH);
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let mut handles = Vec::new();
        let runtime = writer_runtime();
        let syncer = config.wal_file.map(|file| {
            let (tx, rx) = std::sync::mpsc::channel::<Vec<OnCommit>>();
            handles.push(runtime.spawn_blocking(move || run_syncer(file, rx)));
            tx
        });
        let stats = CommitStats::default();
        let writer = |rx: &Arc<tokio::sync::Mutex<mpsc::Receiver<Queued>>>, keep| Writer {
            pool: pool.clone(),
            rx: rx.clone(),
            syncer: syncer.clone(),
            keep_connection: keep,
            held: None,
            held_since: Instant::now(),
            last_batch: Instant::now(),
            pending: None,
            stats: stats.clone(),
        };
        for _ in 0..config.writers {
            handles.push(runtime.spawn(writer(&rx, config.keep_connection).run()));
        }
        let long = config.long_writer.then(|| {
            let (long, rx) = mpsc::channel::<Queued>(QUEUE_DEPTH);
            // Long writes are rare: the writer gives its connection back after each.
            handles
                .push(runtime.spawn(writer(&Arc::new(tokio::sync::Mutex::new(rx)), false).run()));
            long
        });
        Committer {
            queue: std::sync::Mutex::new(Some(queue)),
            long: std::sync::Mutex::new(long),
            handles: std::sync::Mutex::new(handles),
            stats,
        }
    }

    /// What the writers measured so far.
    pub fn stats(&self) -> &CommitStats {
        &self.stats
    }

    /// Queues a write: a [`Write::Long`] on the long writes' writer where there is one,
    /// any other with the other writes. Once the committer is closed the write is dropped,
    /// which its caller reads as "unavailable".
    pub async fn submit(&self, write: Write) {
        let queue = match write {
            Write::Long(_) => self.long.lock().expect("queue lock").clone(),
            _ => None,
        }
        .or_else(|| self.queue.lock().expect("queue lock").clone());
        if let Some(queue) = queue {
            let _ = queue.send((Instant::now(), write)).await;
        }
    }

    /// Stops taking writes, waits until the writers have committed what is queued, and
    /// until the syncer has made it durable.
    pub async fn close(&self) {
        self.queue.lock().expect("queue lock").take();
        self.long.lock().expect("queue lock").take();
        let handles = std::mem::take(&mut *self.handles.lock().expect("handles lock"));
        for h in handles {
            let _ = h.await;
        }
    }
}

/// Committed batches waiting to be made durable, then answered.
type Syncer = std::sync::mpsc::Sender<Vec<OnCommit>>;

/// Syncs the WAL file after commits and only then answers their callers. One
/// `fdatasync` covers every batch committed before it starts, so the flush of one batch
/// overlaps the work of the next. Runs on a blocking thread of its own; ends when every
/// writer has ended.
fn run_syncer(file: PathBuf, rx: std::sync::mpsc::Receiver<Vec<OnCommit>>) {
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

fn unavailable(message: String) -> StoreError {
    StoreError::Unavailable(anyhow::anyhow!(message))
}

/// What a failed batch answers each of its writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FailedAs {
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
struct CommitFailed {
    answer: FailedAs,
    message: String,
}

impl CommitFailed {
    fn of(e: &StoreError) -> Self {
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
    fn of_shared(e: &StoreError, writes: usize) -> Self {
        let mut failed = CommitFailed::of(e);
        if writes > 1 && failed.answer != FailedAs::Unavailable {
            failed.answer = FailedAs::Retry;
        }
        failed
    }

    fn error(&self) -> StoreError {
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
enum Ended {
    /// Committed (or had nothing to commit).
    Committed,
    /// Its transaction failed or was abandoned.
    Failed,
    /// It could not even begin a transaction.
    NotBegun,
}

/// The writes of one batch, sorted by how they may go in.
#[derive(Default)]
struct Batch {
    jobs: Vec<Job>,
    clicks: Vec<Box<dyn ClickWrite>>,
    sales: Vec<Box<dyn SaleWrite>>,
    /// Whether a [`Write::Alone`] is among them: every write then runs as a job that
    /// applies its own increments.
    alone: bool,
}

impl Batch {
    fn of(writes: Vec<Write>) -> Self {
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
    fn clicks_one_by_one(&mut self) {
        self.jobs
            .extend(self.clicks.drain(..).map(|c| c.one_by_one()));
    }

    /// The batch's sales as jobs of their own.
    fn sales_one_by_one(&mut self) {
        self.jobs
            .extend(self.sales.drain(..).map(|s| s.one_by_one()));
    }
}

/// One writer task and the connection it holds between batches.
struct Writer {
    pool: Arc<dyn WritePool>,
    rx: Arc<tokio::sync::Mutex<mpsc::Receiver<Queued>>>,
    syncer: Option<Syncer>,
    keep_connection: bool,
    held: Option<Box<dyn WriteConn>>,
    held_since: Instant,
    /// When the last batch ended.
    last_batch: Instant,
    /// A long write taken from the queue while a batch was gathered: the next batch.
    pending: Option<Queued>,
    stats: CommitStats,
}

impl Writer {
    async fn run(mut self) {
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

/// A batch of nothing but new clicks, in one round trip; `None` when its statement failed
/// for the data (the clicks then go one by one).
async fn commit_clicks(
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
async fn commit_sales(
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
fn sort_sales(
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
async fn run_jobs(
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
async fn run_jobs_alone(
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
async fn end_jobs(
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

/// Ends a batch whose transaction ended with `outcome`: answers the writes in `done`
/// (through the syncer, once durable, when it committed) and tells how it ended.
fn finish(
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
fn fail_batch(batch: Batch, e: &StoreError) {
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
fn fail(write: Write, e: &StoreError) {
    fail_batch(Batch::of(vec![write]), e);
}

/// Adds what new clicks count to `deltas`.
fn count_clicks(deltas: &mut Deltas, clicks: &[&NewClick]) {
    deltas.count_clicks(
        clicks
            .iter()
            .map(|c| (c.program_id, c.partner_id, c.link_id, c.at)),
    );
}
