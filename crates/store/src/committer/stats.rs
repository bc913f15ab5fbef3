//! What the committer measures of its batches ([`CommitStats`]), for the metrics.

use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

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
