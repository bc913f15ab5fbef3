//! What the service layer hands to the group committer: [`Write`]s.
//!
//! A write carries its own answer. A [`Job`] is a flow of the service layer run on the
//! batch's open transaction ([`Tx`]); it answers its caller through the [`OnCommit`] it
//! returns, which the committer calls once the batch is committed and durable (or failed).
//! New clicks and plain sales may instead be recorded together with the rest of their
//! batch by one set-based statement of the backend; whatever that statement does not take
//! runs as the write's own job, so every answer is the one its flow gives.

use futures::future::BoxFuture;
use tokio::sync::oneshot;

use super::error::StoreError;
use super::model::{NewClick, NewSale, SaleOutcome};
use super::tx::Tx;
use reftrack_domain::figures::Deltas;

/// How a write is answered once its batch has ended: `Ok` when committed and durable.
pub type OnCommit = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

/// A unit of work in the batch's transaction. It adds its counters to the `Deltas` and
/// returns how to answer once the batch has committed, or `None` when it failed (it has
/// then answered already, and the committer undoes what it wrote).
pub type Job = Box<
    dyn for<'t> FnOnce(&'t mut dyn Tx, &'t mut Deltas) -> BoxFuture<'t, Option<OnCommit>> + Send,
>;

/// A new click that the batch may insert set-based.
pub trait ClickWrite: Send {
    /// The click.
    fn click(&self) -> &NewClick;
    /// Answers once the batch that inserted it has ended.
    fn on_commit(self: Box<Self>) -> OnCommit;
    /// The click as a job of its own.
    fn one_by_one(self: Box<Self>) -> Job;
}

/// A plain sale (see [`NewSale::is_plain`]) that the batch may record set-based.
pub trait SaleWrite: Send {
    /// The sale.
    fn sale(&self) -> &NewSale;
    /// Answers with `outcome` once the batch that recorded it has ended.
    fn on_commit(self: Box<Self>, outcome: SaleOutcome) -> OnCommit;
    /// The sale as a job of its own, which gives it its exact answer.
    fn one_by_one(self: Box<Self>) -> Job;
}

/// One write for the group committer.
pub enum Write {
    /// Any flow, run in a savepoint of its own.
    Job(Job),
    /// A click that creates its customer.
    Click(Box<dyn ClickWrite>),
    /// A plain sale.
    Sale(Box<dyn SaleWrite>),
    /// A flow that may take long (the payout of a whole program): it runs in a batch of
    /// its own with a longer timeout, on a writer of its own where the backend has one
    /// (PostgreSQL), so that the tracking writes do not wait for it.
    Long(Job),
    /// A write run again after its batch failed through another write
    /// ([`StoreError::Retry`]): its batch applies each job's counter increments in the
    /// job's own savepoint, so that a write whose increments fail (an overflow) fails
    /// alone and the others commit.
    Alone(Job),
}

/// The job of a flow `work` whose result goes to `answer` once the batch has committed.
/// Errors of the commit itself reach the caller as `E::from(StoreError)`.
pub fn job<T, E, W>(answer: oneshot::Sender<Result<T, E>>, work: W) -> Job
where
    T: Send + 'static,
    E: From<StoreError> + Send + 'static,
    W: for<'t> FnOnce(&'t mut dyn Tx, &'t mut Deltas) -> BoxFuture<'t, Result<T, E>>
        + Send
        + 'static,
{
    Box::new(move |tx, deltas| {
        Box::pin(async move {
            match work(tx, deltas).await {
                Ok(value) => Some(answer_with(answer, value)),
                Err(e) => {
                    let _ = answer.send(Err(e));
                    None
                }
            }
        })
    })
}

/// An [`OnCommit`] that answers `answer` with `value` when the batch committed.
pub fn answer_with<T, E>(answer: oneshot::Sender<Result<T, E>>, value: T) -> OnCommit
where
    T: Send + 'static,
    E: From<StoreError> + Send + 'static,
{
    Box::new(move |commit| {
        let _ = answer.send(commit.map(|()| value).map_err(E::from));
    })
}
