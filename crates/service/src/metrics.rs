//! What the metrics read of the service's database: the group committer's measurements,
//! the webhook backlog and the connection pools ([`Readings`]).

use std::sync::Arc;

use reftrack_store::committer::CommitStats;
use reftrack_store::{PoolUse, Store, StoreResult};

use crate::App;

/// The readings a metrics scrape takes of a service's store. Cheap to clone.
#[derive(Clone)]
pub struct Readings {
    store: Arc<dyn Store>,
}

impl Readings {
    /// The readings of `store`.
    pub(crate) fn new(store: Arc<dyn Store>) -> Self {
        Readings { store }
    }

    /// What the group committer measures of its batches; the histograms are shared, so
    /// registering them exports every later batch.
    pub fn commit_stats(&self) -> CommitStats {
        self.store.commit_stats().clone()
    }

    /// The outbound webhook deliveries waiting to be sent (due now or retrying later).
    pub async fn pending_deliveries(&self) -> StoreResult<i64> {
        self.store.pending_deliveries().await
    }

    /// How many connections each pool holds now, and how many of them are in use.
    pub fn pool_use(&self) -> Vec<PoolUse> {
        self.store.pool_use()
    }
}

impl App {
    /// The readings a metrics scrape takes of this service's store.
    pub fn readings(&self) -> Readings {
        Readings::new(self.store.clone())
    }
}
