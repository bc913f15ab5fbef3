//! The delivery worker: claims due deliveries from the outbox, sends each on its own task,
//! and records what the attempts came to in batches.
//!
//! At most [`MAX_IN_FLIGHT`] deliveries are under way in a process, and at most
//! [`PER_ENDPOINT`] to one endpoint, so that a slow or failing endpoint holds a few slots
//! and the others keep flowing. A slot is freed as soon as its attempt ends, and wakes
//! the claimer; the attempt is recorded meanwhile, its delivery still reserved. A claim reserves its deliveries for [`LEASE_MS`]: every
//! process sharing a database may run a worker, and each attempt is made by one of them
//! (a process that dies mid-attempt leaves its deliveries to be claimed again when the
//! reservation lapses, with the same message id). The schedule follows the service's
//! clock. The worker runs on a thread of its own, apart from the requests.
//!
//! [`LEASE_MS`]: crate::domain::webhooks::LEASE_MS

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;

use super::sender::{Sender, Sent};
use crate::app::{App, Result};
use crate::store::webhooks::ClaimedDelivery;

/// Most deliveries under way at once in one process.
pub const MAX_IN_FLIGHT: usize = 256;

/// Most deliveries under way at once to one endpoint, in one process.
pub const PER_ENDPOINT: usize = 32;

/// Most deliveries one claim takes.
const CLAIM_BATCH: usize = 100;

/// Most attempts recorded in one write.
const RECORD_BATCH: usize = 256;

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
    /// Wakes the claimer: an attempt has ended, its slot is free.
    freed: Arc<tokio::sync::Notify>,
}

/// The runtime the worker runs on: one thread of its own, so that sending never takes
/// turns from the requests' tasks.
fn worker_runtime() -> tokio::runtime::Handle {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("reftrack-webhooks")
                .enable_all()
                .build()
                .expect("the webhook worker's runtime starts")
        })
        .handle()
        .clone()
}

impl Worker {
    /// The worker of `app`, its sender allowing private targets as `app` does.
    pub fn new(app: Arc<App>) -> Self {
        let sender = Arc::new(Sender::new(app.private_webhook_targets()));
        Worker {
            app,
            sender,
            in_flight: Arc::new(Mutex::new(HashMap::new())),
            freed: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Starts the worker of `app` on its own thread; it runs until the handle is aborted.
    pub fn spawn(app: Arc<App>) -> tokio::task::JoinHandle<()> {
        worker_runtime().spawn(async move { Worker::new(app).run().await })
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

    /// Claims what room allows; `None` when the database failed.
    async fn claim(&self) -> Option<Vec<ClaimedDelivery>> {
        let (total, per) = self.busy();
        let room = MAX_IN_FLIGHT.saturating_sub(total).min(CLAIM_BATCH);
        if room == 0 {
            return Some(Vec::new());
        }
        match self
            .app
            .claim_deliveries(room as i64, PER_ENDPOINT as i64, per)
            .await
        {
            Ok(claimed) => {
                let mut in_flight = self.in_flight.lock().expect("in-flight lock");
                for d in &claimed {
                    *in_flight.entry(d.endpoint_id).or_insert(0) += 1;
                }
                Some(claimed)
            }
            Err(e) => {
                tracing::warn!(error = %e, "claiming webhook deliveries failed");
                None
            }
        }
    }

    /// Sends a claimed delivery on a task of its own; its result goes to `done`, and its
    /// slot is freed at once.
    fn start(&self, d: ClaimedDelivery, done: &mpsc::UnboundedSender<(ClaimedDelivery, Sent)>) {
        let sender = self.sender.clone();
        let app = self.app.clone();
        let done = done.clone();
        let (in_flight, freed) = (self.in_flight.clone(), self.freed.clone());
        tokio::spawn(async move {
            let sent = sender.send(&d, app.now_ms()).await;
            Self::release(&in_flight, d.endpoint_id);
            freed.notify_one();
            let _ = done.send((d, sent));
        });
    }

    /// Claims and sends due deliveries and records their attempts, until aborted.
    pub async fn run(self) {
        let (done_tx, mut done_rx) = mpsc::unbounded_channel::<(ClaimedDelivery, Sent)>();
        let recorder = async {
            while let Some(first) = done_rx.recv().await {
                let mut batch = vec![first];
                while batch.len() < RECORD_BATCH {
                    match done_rx.try_recv() {
                        Ok(more) => batch.push(more),
                        Err(_) => break,
                    }
                }
                // Should this fail, the deliveries stay reserved until their lease lapses,
                // then any process makes the attempt again.
                if let Err(e) = self.app.record_attempts(batch).await {
                    tracing::warn!(error = %e, "recording webhook attempts failed");
                }
            }
        };
        let claimer = async {
            loop {
                let claimed = match self.app.webhook_due().await {
                    Ok(true) => self.claim().await,
                    Ok(false) => Some(Vec::new()),
                    Err(e) => {
                        tracing::warn!(error = %e, "looking for due webhook deliveries failed");
                        None
                    }
                };
                let Some(claimed) = claimed else {
                    tokio::time::sleep(FAILURE_PAUSE).await;
                    continue;
                };
                if claimed.is_empty() {
                    tokio::select! {
                        _ = self.app.webhooks_due.notified() => {}
                        _ = self.freed.notified() => {}
                        _ = tokio::time::sleep(IDLE_POLL) => {}
                    }
                    continue;
                }
                for d in claimed {
                    self.start(d, &done_tx);
                }
            }
        };
        // One task: aborting it stops both.
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
