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
//!
//! Here: the committer, its queues and what a backend provides ([`WritePool`],
//! [`WriteConn`]); in `writer` the writer tasks, in `batch` how one batch's writes go in,
//! in `answers` how they are answered, in `stats` what is measured.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::mpsc;

use super::error::{StoreError, StoreResult};
use super::model::{NewClick, NewSale, SaleOutcome};
use super::tx::Tx;
use super::write::{OnCommit, Write};
use answers::run_syncer;
use reftrack_domain::figures::Deltas;
use writer::Writer;

mod answers;
mod batch;
mod stats;
mod writer;

pub use stats::CommitStats;

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
