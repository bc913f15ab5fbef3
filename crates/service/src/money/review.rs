//! The review queue of the fraud rules: the commissions a rule flagged, waiting for an
//! owner's approval or rejection (which are the ordinary [`App::approve_commission`] and
//! [`App::reject_commission`]); and the purge of the IPs the rules keep.

use crate::access::Caller;
use crate::{App, Result};
use reftrack_domain::access::Access;
use reftrack_domain::fraud::IP_RETENTION_MS;
use reftrack_store::{Record, ReviewItem};

/// The most commissions the review page shows at once (oldest first).
pub const REVIEW_PAGE_LIMIT: i64 = 100;

/// Records of each kind [`App::purge_old_ips`] forgets at most per statement.
pub const PURGE_PER_RUN: i64 = 2_000;

/// Customers [`App::mark_disposable_emails`] marks at most per run.
pub const MARK_PER_RUN: i64 = 5_000;

impl App {
    /// The program's commissions held for review, oldest first, each with its sale and
    /// its customer's click.
    pub async fn review_queue(&self, caller: &Caller, program_id: i64) -> Result<Vec<ReviewItem>> {
        self.allow(caller, Record::Program(program_id), Access::Read)
            .await?;
        Ok(self
            .store
            .review_queue(program_id, REVIEW_PAGE_LIMIT)
            .await?)
    }

    /// How many of the program's commissions are held for review.
    pub async fn review_count(&self, caller: &Caller, program_id: i64) -> Result<i64> {
        self.allow(caller, Record::Program(program_id), Access::Read)
            .await?;
        Ok(self.store.review_count(program_id).await?)
    }

    /// Forgets the click IPs, conversion IPs and partner sign-in IPs older than
    /// [`IP_RETENTION_MS`](reftrack_domain::fraud::IP_RETENTION_MS); how many records
    /// changed. The periodic job runs it with the approvals.
    ///
    /// It forgets them [`PURGE_PER_RUN`] of each kind at a time, with a pause between
    /// runs, so that a large purge (the first after IPs were kept, or a busy day leaving
    /// the window) never holds the writer, and the tracking writes queued behind it, for
    /// long.
    pub async fn purge_old_ips(&self) -> Result<u64> {
        let before = self.now_ms().saturating_sub(IP_RETENTION_MS);
        let mut purged = 0;
        loop {
            let n = self.store.purge_ips(before, PURGE_PER_RUN).await?;
            purged += n;
            if n == 0 {
                return Ok(purged);
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Marks up to [`MARK_PER_RUN`] customers whose lead email was stored before the
    /// `disposable_email` rule existed with whether it is disposable; how many it marked.
    /// Until a customer is marked, its sales take their own flow rather than the
    /// set-based one: slower, never wrong. The periodic job runs it until none is left.
    pub async fn mark_disposable_emails(&self) -> Result<u64> {
        Ok(self.store.mark_disposable_emails(MARK_PER_RUN).await?)
    }
}
