//! The delivery worker: claims due deliveries from the outbox, sends each on its own task,
//! and records what the attempts came to in batches.
//!
//! At most [`MAX_IN_FLIGHT`] deliveries are under way in a process, and at most
//! [`PER_ENDPOINT`] to one endpoint, so that a slow or failing endpoint holds a few slots
//! and the others keep flowing. A slot is freed as soon as its attempt ends; the attempt
//! is recorded meanwhile, its delivery still reserved, with the other attempts that ended
//! within [`RECORD_LINGER`]. Each claim and each record is a write, so the claimer takes
//! deliveries in batches: it claims again once [`REFILL`] slots have freed, or the last
//! busy one, or a delivery is retried by hand, or [`IDLE_POLL`] has passed (which is how
//! new events are found), rather than whenever one slot frees. A claim reserves its deliveries for [`LEASE_MS`]: every
//! process sharing a database may run a worker, and each attempt is made by one of them
//! (a process that dies mid-attempt leaves its deliveries to be claimed again when the
//! reservation lapses, with the same message id). The schedule follows the service's
//! clock. Tracking calls go first: while the tracking API is busy ([`Load::busy`]), the
//! worker claims at most [`HELD_BACK_CLAIM`] deliveries every [`IDLE_POLL`], and the
//! outbox waits (it is durable; the backlog drains once the calls are fewer).
//! Asked to stop, the worker claims nothing more and lets the attempts under way end and
//! be recorded, so that a restart does not send them again.
//!
//! [`LEASE_MS`]: reftrack_domain::webhooks::LEASE_MS
//! [`Load::busy`]: crate::tracking::load::Load::busy

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

use super::sender::{Sender, Sent};
use crate::{App, Result};
use reftrack_store::webhooks::ClaimedDelivery;

/// Most deliveries under way at once in one process.
pub const MAX_IN_FLIGHT: usize = 256;

/// Most deliveries under way at once to one endpoint, in one process.
pub const PER_ENDPOINT: usize = 32;

/// Most deliveries one claim takes.
const CLAIM_BATCH: usize = 100;

/// Most deliveries one claim takes while the tracking API is busy; the worker then
/// claims once every [`IDLE_POLL`], so at most 160 deliveries a second start.
const HELD_BACK_CLAIM: usize = 16;

/// How many freed slots make the claimer claim again while deliveries are under way.
const REFILL: usize = PER_ENDPOINT / 2;

/// Most attempts recorded in one write.
const RECORD_BATCH: usize = 256;

/// How long the recorder waits for more attempts to end before it records a batch.
const RECORD_LINGER: Duration = Duration::from_millis(10);

/// How often an idle worker looks for due deliveries.
const IDLE_POLL: Duration = Duration::from_millis(100);

/// How long the worker waits before trying again after the database failed it.
const FAILURE_PAUSE: Duration = Duration::from_secs(1);

/// The worker of one process.
pub struct Worker {
    app: Arc<App>,
    sender: Arc<Sender>,
    /// Deliveries under way, per endpoint.
    in_flight: Arc<Mutex<HashMap<i64, usize>>>,
    /// Slots freed since the last claim.
    ended: Arc<AtomicUsize>,
    /// Rung when an attempt ends and its slot is free.
    freed: Arc<tokio::sync::Notify>,
}

/// A running worker: stop it with [`Running::stop`] (dropping it stops it too, without
/// waiting).
pub struct Running {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stops the worker: it claims nothing more, and the attempts under way end and are
    /// recorded. Returns whether that happened by `deadline`; if not, the worker is
    /// aborted, and what it held is claimed again once the reservation lapses.
    pub async fn stop(self, deadline: tokio::time::Instant) -> bool {
        let _ = self.stop.send(true);
        let mut task = self.task;
        match tokio::time::timeout_at(deadline, &mut task).await {
            Ok(_) => true,
            Err(_) => {
                task.abort();
                false
            }
        }
    }
}

impl Worker {
    /// The worker of `app`, its sender allowing private targets as `app` does.
    pub fn new(app: Arc<App>) -> Self {
        let sender = Arc::new(Sender::new(app.private_webhook_targets()));
        Worker {
            app,
            sender,
            in_flight: Arc::new(Mutex::new(HashMap::new())),
            ended: Arc::new(AtomicUsize::new(0)),
            freed: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Starts the worker of `app`; it runs until stopped.
    pub fn spawn(app: Arc<App>) -> Running {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let worker = Worker::new(app);
        let task = tokio::spawn(worker.run(stopped));
        Running { stop, task }
    }

    fn busy(&self) -> (usize, Vec<(i64, i64)>) {
        let in_flight = self.in_flight.lock().expect("in-flight lock");
        let total = in_flight.values().sum();
        let per = in_flight.iter().map(|(e, n)| (*e, *n as i64)).collect();
        (total, per)
    }

    /// Frees the slot of an attempt that has ended. Its delivery stays reserved until
    /// the attempt is recorded, so no claim takes it meanwhile.
    fn release(in_flight: &Mutex<HashMap<i64, usize>>, endpoint_id: i64) {
        let mut in_flight = in_flight.lock().expect("in-flight lock");
        if let Some(n) = in_flight.get_mut(&endpoint_id) {
            *n -= 1;
            if *n == 0 {
                in_flight.remove(&endpoint_id);
            }
        }
    }

    /// Claims what room allows, and says whether it got all it asked for (more may be
    /// due); `None` when the database failed.
    async fn claim(&self, most: usize) -> Option<(Vec<ClaimedDelivery>, bool)> {
        let (total, per) = self.busy();
        let room = MAX_IN_FLIGHT.saturating_sub(total).min(most);
        if room == 0 {
            return Some((Vec::new(), false));
        }
        let claimed = self
            .app
            .claim_deliveries(room as i64, PER_ENDPOINT as i64, per)
            .await;
        match claimed {
            Ok(claimed) => {
                let mut in_flight = self.in_flight.lock().expect("in-flight lock");
                for d in &claimed {
                    *in_flight.entry(d.endpoint_id).or_insert(0) += 1;
                }
                let all = claimed.len() == room;
                Some((claimed, all))
            }
            Err(e) => {
                tracing::warn!(error = %e, "claiming webhook deliveries failed");
                None
            }
        }
    }

    /// Returns once enough slots have freed since the last look for due deliveries for
    /// a claim to be worth its write: [`REFILL`] of them, or the last one under way.
    async fn refilled(&self) {
        loop {
            let ended = self.ended.load(Ordering::Relaxed);
            if ended >= REFILL || (ended > 0 && self.busy().0 == 0) {
                return;
            }
            // A slot freed since the check left a permit: this returns at once.
            self.freed.notified().await;
        }
    }

    /// Sends a claimed delivery on a task of its own; its result goes to `done`, and its
    /// slot is freed at once.
    fn start(&self, d: ClaimedDelivery, done: &mpsc::UnboundedSender<(ClaimedDelivery, Sent)>) {
        let sender = self.sender.clone();
        let app = self.app.clone();
        let done = done.clone();
        let (in_flight, ended, freed) = (
            self.in_flight.clone(),
            self.ended.clone(),
            self.freed.clone(),
        );
        tokio::spawn(async move {
            let sent = sender.send(&d, app.now_ms()).await;
            Self::release(&in_flight, d.endpoint_id);
            ended.fetch_add(1, Ordering::Relaxed);
            freed.notify_one();
            let _ = done.send((d, sent));
        });
    }

    /// Claims and sends due deliveries and records their attempts, until `stop` turns
    /// true; then waits for the attempts under way and records them.
    pub async fn run(self, mut stop: tokio::sync::watch::Receiver<bool>) {
        let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(ClaimedDelivery, Sent)>();
        let recorder = async {
            while let Some(first) = done_rx.recv().await {
                let mut batch = vec![first];
                let linger = tokio::time::sleep(RECORD_LINGER);
                tokio::pin!(linger);
                while batch.len() < RECORD_BATCH {
                    tokio::select! {
                        more = done_rx.recv() => match more {
                            Some(more) => batch.push(more),
                            None => break,
                        },
                        _ = &mut linger => break,
                    }
                }
                // Should this fail, the deliveries stay reserved until their lease lapses,
                // then any process makes the attempt again.
                let recorded = self.app.record_attempts(batch).await;
                if let Err(e) = recorded {
                    tracing::warn!(error = %e, "recording webhook attempts failed");
                }
            }
        };
        let claimer = async {
            // Owned here: once the claimer and the attempts under way have dropped their
            // senders, the recorder has seen every result and ends.
            let done_tx = done_tx;
            // Whether the last claim took any: then the next claims without looking first.
            let mut flowing = false;
            // A dropped handle stops the worker as well.
            while stop.has_changed().is_ok() && !*stop.borrow() {
                self.ended.store(0, Ordering::Relaxed);
                let held_back = self.app.load.busy();
                // The look is a read, cheaper than a claim when nothing is due; while
                // deliveries flow it would only come before a claim that finds some.
                let due = match flowing {
                    true => Ok(true),
                    false => self.app.webhook_due().await,
                };
                let most = if held_back {
                    HELD_BACK_CLAIM
                } else {
                    CLAIM_BATCH
                };
                let claimed = match due {
                    Ok(true) => self.claim(most).await,
                    Ok(false) => Some((Vec::new(), false)),
                    Err(e) => {
                        tracing::warn!(error = %e, "looking for due webhook deliveries failed");
                        None
                    }
                };
                let Some((claimed, more)) = claimed else {
                    tokio::select! {
                        _ = stop.changed() => {}
                        _ = tokio::time::sleep(FAILURE_PAUSE) => {}
                    }
                    continue;
                };
                flowing = !claimed.is_empty();
                for d in claimed {
                    self.start(d, &done_tx);
                }
                if held_back {
                    tokio::select! {
                        _ = stop.changed() => {}
                        _ = self.app.webhooks_due.notified() => {}
                        _ = tokio::time::sleep(IDLE_POLL) => {}
                    }
                } else if !more {
                    tokio::select! {
                        _ = stop.changed() => {}
                        _ = self.app.webhooks_due.notified() => {}
                        _ = self.refilled() => {}
                        _ = tokio::time::sleep(IDLE_POLL) => {}
                    }
                }
            }
        };
        tokio::join!(recorder, claimer);
    }

    /// Sends every delivery due now, waits for all of them and records their attempts;
    /// returns how many attempts it made. Tests drive the schedule with it.
    pub async fn run_once(&self) -> Result<usize> {
        let mut attempts = 0;
        loop {
            let claimed = self
                .app
                .claim_deliveries(CLAIM_BATCH as i64, PER_ENDPOINT as i64, Vec::new())
                .await?;
            if claimed.is_empty() {
                return Ok(attempts);
            }
            attempts += claimed.len();
            let sends = claimed.into_iter().map(|d| {
                let sender = self.sender.clone();
                let at = self.app.now_ms();
                async move {
                    let sent = sender.send(&d, at).await;
                    (d, sent)
                }
            });
            let done = futures::future::join_all(sends).await;
            self.app.record_attempts(done).await?;
        }
    }
}
