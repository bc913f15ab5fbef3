// Group commit: the write path of the tracking API.
//
// Requests hand a job (a closure over the connection) to a writer task. A writer takes
// every job waiting, up to `MAX_BATCH`, runs them in one transaction (each in a
// savepoint, so one failing job does not undo the others), applies the batch's folded
// counter and rollup increments, commits, and only then answers each request.
// Included by `sqlite.rs` and `postgres.rs`; see `store/mod.rs`.

/// Most jobs one transaction takes.
const MAX_BATCH: usize = 512;

/// Requests waiting for a writer before senders are slowed down.
const QUEUE_DEPTH: usize = 8192;

/// Longest one batch may take. A batch stuck on a dead connection is abandoned after it:
/// its transaction is dropped (rolled back, unless its COMMIT was already on its way) and
/// its callers are answered 503.
const BATCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// Longest a writer that does not keep its connection ([`KEEP_WRITE_CONNECTION`]) holds
/// it while batches keep coming. Giving it back after every batch would cost a round trip
/// to the database per batch (the pool checks a connection it gets back); never giving
/// it back would starve the other users of a one-connection pool under load.
const WRITE_CONNECTION_TURN: std::time::Duration = std::time::Duration::from_millis(50);

/// Why a batch did not commit.
#[derive(Debug, Clone)]
struct CommitFailed {
    unavailable: bool,
    message: String,
}

impl CommitFailed {
    fn from_sqlx(e: &sqlx::Error) -> Self {
        CommitFailed {
            unavailable: crate::error::is_unavailable(e),
            message: e.to_string(),
        }
    }

    fn into_error(self) -> Error {
        let cause = anyhow::anyhow!("write batch failed: {}", self.message);
        if self.unavailable {
            Error::Unavailable(cause)
        } else {
            Error::Internal("Internal server error", cause)
        }
    }
}

/// Called after the batch's commit with its outcome.
type Done = Box<dyn FnOnce(std::result::Result<(), CommitFailed>) + Send>;

/// A unit of work: runs inside the batch's transaction and returns how to answer once the
/// batch has committed, or `None` when it failed (and has already answered).
type Job =
    Box<dyn for<'c> FnOnce(&'c mut Conn, &'c mut Deltas) -> BoxFuture<'c, Option<Done>> + Send>;

/// What a writer's queue carries.
enum Work {
    /// Any write, run in its own savepoint.
    Job(Job),
    /// A click that creates its customer: inserted together with the batch's other such
    /// clicks by one statement (`track::new_clicks`) rather than one by one.
    Click(Box<NewClick>, oneshot::Sender<Result<String>>),
    /// A plain sale (`track::is_plain_sale`): recorded together with the batch's other
    /// plain sales (`track::plain_sales`) when it resolves plainly, else as a job.
    Sale(Box<NewSale>, oneshot::Sender<Result<SaleOutcome>>),
}

/// The job of a click, for when it runs on its own.
fn click_job(click: NewClick, tx: oneshot::Sender<Result<String>>) -> Job {
    job(tx, move |conn, deltas| {
        Box::pin(track::click(conn, deltas, click))
    })
}

/// The job of a sale, for when it runs on its own.
fn sale_job(sale: NewSale, tx: oneshot::Sender<Result<SaleOutcome>>) -> Job {
    job(tx, move |conn, deltas| {
        Box::pin(track::sale(conn, deltas, sale))
    })
}

/// Answers `tx` with `value` once the batch has committed.
fn answer_on_commit<T: Send + 'static>(tx: oneshot::Sender<Result<T>>, value: T) -> Done {
    Box::new(move |commit: std::result::Result<(), CommitFailed>| {
        let _ = tx.send(commit.map(|()| value).map_err(CommitFailed::into_error));
    })
}

/// Wraps `work` into a job that answers on `tx`.
fn job<T, F>(tx: oneshot::Sender<Result<T>>, work: F) -> Job
where
    T: Send + 'static,
    F: for<'c> FnOnce(&'c mut Conn, &'c mut Deltas) -> BoxFuture<'c, Result<T>> + Send + 'static,
{
    Box::new(move |conn, deltas| {
        Box::pin(async move {
            match work(conn, deltas).await {
                Ok(value) => Some(answer_on_commit(tx, value)),
                Err(e) => {
                    let _ = tx.send(Err(e));
                    None
                }
            }
        })
    })
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

/// The sending side of the writers' queue; `None` once closed.
struct Committer {
    queue: std::sync::Mutex<Option<mpsc::Sender<Work>>>,
}

impl Committer {
    /// Starts `writers` writer tasks on `pool`; with a `wal_file`, a syncer task makes
    /// each committed batch durable before it is answered (see [`run_syncer`]).
    fn start(
        pool: Pool<Db>,
        writers: usize,
        wal_file: Option<std::path::PathBuf>,
    ) -> (Self, Vec<tokio::task::JoinHandle<()>>) {
        let (queue, rx) = mpsc::channel::<Work>(QUEUE_DEPTH);
        let rx = Arc::new(tokio::sync::Mutex::new(rx));
        let mut handles = Vec::new();
        let runtime = writer_runtime();
        let syncer = wal_file.map(|file| {
            let (tx, rx) = std::sync::mpsc::channel::<Vec<Done>>();
            handles.push(runtime.spawn_blocking(move || run_syncer(file, rx)));
            tx
        });
        handles.extend(
            (0..writers)
                .map(|_| runtime.spawn(run_writer(pool.clone(), rx.clone(), syncer.clone()))),
        );
        let queue = std::sync::Mutex::new(Some(queue));
        (Committer { queue }, handles)
    }

    /// Stops taking jobs; the writers finish what is queued, then exit.
    fn close(&self) {
        self.queue.lock().expect("queue lock").take();
    }

    /// Runs `work` in the next batch and returns its result once the batch has committed.
    async fn submit<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Conn, &'c mut Deltas) -> BoxFuture<'c, Result<T>>
            + Send
            + 'static,
    {
        let (tx, rx) = oneshot::channel::<Result<T>>();
        self.send(Work::Job(job(tx, work)), rx).await
    }

    /// Records a click in the next batch; returns its click id once committed.
    async fn submit_click(&self, click: NewClick) -> Result<String> {
        let (tx, rx) = oneshot::channel::<Result<String>>();
        self.send(Work::Click(Box::new(click), tx), rx).await
    }

    /// Records a sale in the next batch; returns what it produced once committed.
    async fn submit_sale(&self, sale: NewSale) -> Result<SaleOutcome> {
        let (tx, rx) = oneshot::channel::<Result<SaleOutcome>>();
        let work = if track::is_plain_sale(&sale) {
            Work::Sale(Box::new(sale), tx)
        } else {
            Work::Job(sale_job(sale, tx))
        };
        self.send(work, rx).await
    }

    async fn send<T>(&self, work: Work, rx: oneshot::Receiver<Result<T>>) -> Result<T> {
        let queue = self.queue.lock().expect("queue lock").clone();
        let shut_down = || Error::Unavailable(anyhow::anyhow!("store is shut down"));
        queue
            .ok_or_else(shut_down)?
            .send(work)
            .await
            .map_err(|_| shut_down())?;
        rx.await.unwrap_or_else(|_| {
            Err(Error::Unavailable(anyhow::anyhow!(
                "write batch could not start a transaction"
            )))
        })
    }
}

/// Committed batches waiting to be made durable, then answered.
type Syncer = std::sync::mpsc::Sender<Vec<Done>>;

/// Syncs the WAL file after commits and only then answers their callers. One
/// `fdatasync` covers every batch committed before it starts, so the flush of one batch
/// overlaps the work of the next. Runs on a blocking thread of its own (no hand-off to
/// and from a runtime per sync); ends when every writer has ended.
fn run_syncer(file: std::path::PathBuf, rx: std::sync::mpsc::Receiver<Vec<Done>>) {
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
        let outcome = synced.map_err(|e| {
            tracing::error!(error = %e, file = %file.display(), "syncing the WAL failed");
            wal = None;
            CommitFailed {
                unavailable: true,
                message: format!("syncing the WAL failed: {e}"),
            }
        });
        for d in batches.into_iter().flatten() {
            d(outcome.clone());
        }
    }
}

async fn run_writer(
    pool: Pool<Db>,
    rx: Arc<tokio::sync::Mutex<mpsc::Receiver<Work>>>,
    syncer: Option<Syncer>,
) {
    let mut held: Option<sqlx::pool::PoolConnection<Db>> = None;
    let mut held_since = std::time::Instant::now();
    loop {
        let mut jobs = Vec::new();
        {
            let mut rx = rx.lock().await;
            match rx.recv().await {
                Some(job) => jobs.push(job),
                None => return,
            }
            while jobs.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(job) => jobs.push(job),
                    Err(_) => break,
                }
            }
        }
        let n = jobs.len();
        if held.is_none() {
            held_since = std::time::Instant::now();
        }
        let batch = run_batch(&pool, &mut held, jobs, syncer.as_ref());
        let ended = match tokio::time::timeout(BATCH_TIMEOUT, batch).await {
            Ok(ended) => ended,
            Err(_) => {
                tracing::error!(jobs = n, "write batch abandoned after {BATCH_TIMEOUT:?}");
                Ended::Failed
            }
        };
        if ended == Ended::NotBegun {
            // The database is unreachable or locked: answer everything queued now
            // (503) instead of letting each batch wait out its own timeout.
            let mut rx = rx.lock().await;
            while let Ok(work) = rx.try_recv() {
                drop(work);
            }
        }
        if ended != Ended::Committed {
            // The connection may be broken: close it, the next batch checks out another.
            if let Some(mut conn) = held.take() {
                conn.close_on_drop();
            }
        } else if !KEEP_WRITE_CONNECTION
            && (held_since.elapsed() >= WRITE_CONNECTION_TURN || rx.lock().await.is_empty())
        {
            held = None;
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

/// Begins the write transaction of a batch on `conn`.
async fn begin(conn: &mut Conn) -> Option<sqlx::Transaction<'_, Db>> {
    sqlx::Connection::begin_with(conn, BEGIN_WRITE)
        .await
        .map_err(|e| {
            // Dropping the jobs answers each caller with 503.
            tracing::warn!(error = %e, "write batch could not begin");
        })
        .ok()
}

/// Runs one batch on the writer's connection `held`, checked out of `pool` when there is
/// none.
async fn run_batch(
    pool: &Pool<Db>,
    held: &mut Option<sqlx::pool::PoolConnection<Db>>,
    work: Vec<Work>,
    syncer: Option<&Syncer>,
) -> Ended {
    let mut jobs: Vec<Job> = Vec::with_capacity(work.len());
    let mut clicks = Vec::new();
    let mut sales = Vec::new();
    for w in work {
        match w {
            Work::Job(j) => jobs.push(j),
            Work::Click(c, tx) if c.existing_click_id.is_some() => jobs.push(click_job(*c, tx)),
            Work::Click(c, tx) => clicks.push((*c, tx)),
            Work::Sale(s, tx) => sales.push((*s, tx)),
        }
    }
    let conn: &mut Conn = match held {
        Some(conn) => conn,
        None => match pool.acquire().await {
            Ok(conn) => held.insert(conn),
            Err(e) => {
                tracing::warn!(error = %e, "write batch could not begin");
                return Ended::NotBegun;
            }
        },
    };
    if jobs.is_empty() && sales.is_empty() && (1..=rows::CHUNK).contains(&clicks.len()) {
        // The hot path under click traffic: the whole batch in one round trip.
        let new: Vec<&NewClick> = clicks.iter().map(|(c, _)| c).collect();
        let committed: BoxFuture<'_, sqlx::Result<Vec<String>>> =
            Box::pin(track::commit_new_clicks(&mut *conn, &new));
        match committed.await {
            Ok(ids) => {
                let done = clicks
                    .into_iter()
                    .zip(ids)
                    .map(|((_, answer), id)| answer_on_commit(answer, id))
                    .collect();
                return finish(Ok(()), done, syncer);
            }
            Err(e) => {
                let failed = CommitFailed::from_sqlx(&e);
                if failed.unavailable {
                    // Whether it committed is unknown: no retry that could record the
                    // clicks twice.
                    tracing::error!(error = %failed.message, clicks = clicks.len(), "write batch failed");
                    for (_, answer) in clicks {
                        let _ = answer.send(Err(failed.clone().into_error()));
                    }
                    return Ended::Failed;
                }
                let e = Error::from(e);
                debug_assert!(
                    !is_statement_bug(&e),
                    "the batched click commit is wrong: {e:?}"
                );
                tracing::warn!(error = ?e, clicks = clicks.len(), "batched clicks failed; retrying one by one");
                jobs.extend(clicks.drain(..).map(|(c, tx)| click_job(c, tx)));
            }
        }
    }
    if BACKEND == Backend::Sqlite
        && jobs.is_empty()
        && clicks.is_empty()
        && (1..=rows::CHUNK).contains(&sales.len())
    {
        // The hot path under sale traffic: the batch in one round trip of its own.
        let plain: Vec<&NewSale> = sales.iter().map(|(s, _)| s).collect();
        let committed: BoxFuture<'_, Result<Vec<Option<SaleOutcome>>>> =
            Box::pin(track::commit_plain_sales(&mut *conn, &plain));
        match committed.await {
            Ok(outcomes) => {
                let mut done = Vec::with_capacity(sales.len());
                sort_sales(sales.drain(..), outcomes, &mut done, &mut jobs);
                let ended = finish(Ok(()), done, syncer);
                if jobs.is_empty() {
                    return ended;
                }
            }
            Err(e @ Error::Unavailable(_)) => {
                tracing::error!(error = ?e, sales = sales.len(), "write batch failed");
                for (_, answer) in sales {
                    let _ = answer.send(Err(Error::Unavailable(anyhow::anyhow!(
                        "write batch failed"
                    ))));
                }
                return Ended::Failed;
            }
            Err(e) => {
                debug_assert!(
                    !is_statement_bug(&e),
                    "the batched sale commit is wrong: {e:?}"
                );
                tracing::warn!(error = ?e, sales = sales.len(), "batched sales failed; retrying in the batch's transaction");
            }
        }
    }
    if clicks.len() == 1 {
        let (c, tx) = clicks.pop().expect("one click");
        jobs.push(click_job(c, tx));
    }
    if sales.len() == 1 {
        let (s, tx) = sales.pop().expect("one sale");
        jobs.push(sale_job(s, tx));
    }
    let Some(mut tx) = begin(&mut *conn).await else {
        return Ended::NotBegun;
    };
    let mut done: Vec<Done> = Vec::with_capacity(jobs.len() + clicks.len() + sales.len());
    let mut deltas = Deltas::default();
    let mut failed: Option<CommitFailed> = None;
    if !clicks.is_empty() {
        // The batch's new clicks go first, without a savepoint (whose page copies would
        // cost more than the INSERTs): should their statement fail, the transaction
        // starts again with each click as a job of its own, so that only a faulty one
        // fails.
        let new: Vec<&NewClick> = clicks.iter().map(|(c, _)| c).collect();
        let insert: BoxFuture<'_, Result<Vec<String>>> =
            Box::pin(track::new_clicks(&mut tx, &mut deltas, &new));
        match insert.await {
            Ok(ids) => {
                for ((_, answer), id) in clicks.into_iter().zip(ids) {
                    done.push(answer_on_commit(answer, id));
                }
            }
            Err(e) => {
                debug_assert!(
                    !is_statement_bug(&e),
                    "the batched click insert is wrong: {e:?}"
                );
                tracing::warn!(error = ?e, clicks = clicks.len(), "batched click insert failed; retrying one by one");
                let _ = tx.rollback().await;
                deltas = Deltas::default();
                jobs.extend(clicks.into_iter().map(|(c, tx)| click_job(c, tx)));
                let Some(again) = begin(&mut *conn).await else {
                    return Ended::NotBegun;
                };
                tx = again;
            }
        }
    }
    if !sales.is_empty() {
        match plain_sales(&mut tx, &mut deltas, &sales).await {
            Ok(outcomes) => sort_sales(sales, outcomes, &mut done, &mut jobs),
            Err(e) => {
                debug_assert!(
                    !is_statement_bug(&e),
                    "the batched sale statements are wrong: {e:?}"
                );
                tracing::warn!(error = ?e, sales = sales.len(), "batched sales failed; running them one by one");
                jobs.extend(sales.into_iter().map(|(s, tx)| sale_job(s, tx)));
            }
        }
    }
    let single = jobs.len() == 1 && done.is_empty();
    let count = jobs.len();
    // One savepoint, `job`, at a time: opened before the first job, released and opened
    // again after each successful job in one round trip, rolled back to (and so kept for
    // the next job) after a failed one; COMMIT releases the last.
    if !single && count > 0 {
        if let Err(e) = sqlx::query("SAVEPOINT job").execute(&mut *tx).await {
            failed = Some(CommitFailed::from_sqlx(&e));
        }
    }
    for (i, job) in jobs.into_iter().enumerate() {
        if failed.is_some() {
            // The transaction is unusable; dropping the job answers its caller with 503.
            continue;
        }
        let last = i + 1 == count;
        let mut job_deltas = Deltas::default();
        match job(&mut tx, &mut job_deltas).await {
            Some(d) => {
                if !single && !last {
                    if let Err(e) = raw(&mut tx, "RELEASE SAVEPOINT job; SAVEPOINT job").await {
                        failed = Some(CommitFailed::from_sqlx(&e));
                    }
                }
                deltas.merge(job_deltas);
                done.push(d);
            }
            None if single => {}
            None => {
                if let Err(e) = sqlx::query("ROLLBACK TO SAVEPOINT job")
                    .execute(&mut *tx)
                    .await
                {
                    failed = Some(CommitFailed::from_sqlx(&e));
                }
            }
        }
    }
    if failed.is_none() && !done.is_empty() {
        if let Err(e) = counters::apply(&mut tx, &deltas).await {
            failed = Some(CommitFailed::from_sqlx(&e));
        }
    }
    let outcome = match failed {
        Some(f) => {
            let _ = tx.rollback().await;
            Err(f)
        }
        None if done.is_empty() => {
            let _ = tx.rollback().await;
            Ok(())
        }
        None => tx.commit().await.map_err(|e| CommitFailed::from_sqlx(&e)),
    };
    finish(outcome, done, syncer)
}

/// Ends a batch whose transaction ended with `outcome`: answers the callers in `done`
/// (through the syncer, once durable, when it committed) and tells how it ended.
fn finish(
    outcome: std::result::Result<(), CommitFailed>,
    done: Vec<Done>,
    syncer: Option<&Syncer>,
) -> Ended {
    if let Err(f) = &outcome {
        tracing::error!(error = %f.message, jobs = done.len(), "write batch failed");
    }
    if let (Ok(()), Some(syncer), false) = (&outcome, syncer, done.is_empty()) {
        // Answered once the WAL holding the commit is on disk.
        if let Err(std::sync::mpsc::SendError(done)) = syncer.send(done) {
            let gone = CommitFailed {
                unavailable: true,
                message: "the WAL syncer has stopped".into(),
            };
            for d in done {
                d(Err(gone.clone()));
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
        d(outcome.clone());
    }
    ended
}

/// Sorts batched sales by what `track::plain_sales` made of them: those it recorded are
/// answered once the batch commits (`done`); the others run as jobs of their own, which
/// give them their exact answer.
fn sort_sales(
    sales: impl IntoIterator<Item = (NewSale, oneshot::Sender<Result<SaleOutcome>>)>,
    outcomes: Vec<Option<SaleOutcome>>,
    done: &mut Vec<Done>,
    jobs: &mut Vec<Job>,
) {
    for ((sale, answer), outcome) in sales.into_iter().zip(outcomes) {
        match outcome {
            Some(o) => done.push(answer_on_commit(answer, o)),
            None => jobs.push(sale_job(sale, answer)),
        }
    }
}

/// Runs `track::plain_sales` in a savepoint of its own, so that should it fail, nothing it
/// wrote stays and its sales can run one by one. Its increments join `deltas` only when
/// it succeeds.
async fn plain_sales(
    conn: &mut Conn,
    deltas: &mut Deltas,
    sales: &[(NewSale, oneshot::Sender<Result<SaleOutcome>>)],
) -> Result<Vec<Option<SaleOutcome>>> {
    raw(conn, "SAVEPOINT sales").await?;
    let refs: Vec<&NewSale> = sales.iter().map(|(s, _)| s).collect();
    let mut sale_deltas = Deltas::default();
    let recorded: BoxFuture<'_, Result<Vec<Option<SaleOutcome>>>> =
        Box::pin(track::plain_sales(conn, &mut sale_deltas, &refs));
    match recorded.await {
        Ok(outcomes) => {
            raw(conn, "RELEASE SAVEPOINT sales").await?;
            deltas.merge(sale_deltas);
            Ok(outcomes)
        }
        Err(e) => {
            raw(conn, "ROLLBACK TO SAVEPOINT sales; RELEASE SAVEPOINT sales").await?;
            Err(e)
        }
    }
}

/// Whether a batched statement failed because its SQL does not suit the database (a
/// syntax error, a missing table or function), rather than because of the data or the
/// connection. The one-by-one fallback would hide such a bug, so debug builds (the tests)
/// stop on it.
fn is_statement_bug(e: &Error) -> bool {
    let Error::Internal(_, cause) = e else {
        return false;
    };
    let Some(sqlx::Error::Database(db)) = cause.downcast_ref::<sqlx::Error>() else {
        return false;
    };
    let code = db.code();
    match BACKEND {
        Backend::Sqlite => code.as_deref() == Some("1"),
        Backend::Postgres => code.is_some_and(|c| c.starts_with("42")),
    }
}

/// Runs statements without arguments in one round trip.
fn raw<'c>(conn: &'c mut Conn, sql: &'static str) -> BoxFuture<'c, sqlx::Result<()>> {
    Box::pin(async move { sqlx::Executor::execute(conn, sql).await.map(|_| ()) })
}
