//! How busy the tracking API is. Tracking calls go first: while many are under way, the
//! webhook worker holds back (the outbox is durable, and drains once they are fewer).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Tracking calls under way in a process from which it counts as busy. A process whose
/// calls each wait about a millisecond for their write has this many under way at some
/// thousands of calls a second.
pub const BUSY_FROM: usize = 8;

/// The tracking calls under way in this process.
#[derive(Debug, Default)]
pub struct Load {
    tracking: AtomicUsize,
}

/// A tracking call under way: counted until dropped.
pub struct TrackingCall<'a>(&'a AtomicUsize);

impl Load {
    /// Counts a tracking call until the returned value is dropped.
    pub fn tracking_call(&self) -> TrackingCall<'_> {
        self.tracking.fetch_add(1, Ordering::Relaxed);
        TrackingCall(&self.tracking)
    }

    /// Whether at least [`BUSY_FROM`] tracking calls are under way.
    pub fn busy(&self) -> bool {
        self.tracking.load(Ordering::Relaxed) >= BUSY_FROM
    }
}

impl Drop for TrackingCall<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_while_enough_calls_are_under_way() {
        let load = Load::default();
        let calls: Vec<TrackingCall> = (0..BUSY_FROM - 1).map(|_| load.tracking_call()).collect();
        assert!(!load.busy());
        let last = load.tracking_call();
        assert!(load.busy());
        drop(last);
        assert!(!load.busy());
        drop(calls);
        assert_eq!(load.tracking.load(Ordering::Relaxed), 0);
    }
}
