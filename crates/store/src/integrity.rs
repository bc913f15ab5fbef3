//! What `reftrack verify` reads from a store: the figures as stored, the same figures
//! recomputed from the raw events, and the records that break a cross-record invariant.
//! The comparison and the report are the service layer's (`reftrack verify`).

use reftrack_domain::figures::Deltas;

/// Every derived figure: daily rollups by (program, day), partner-program totals by
/// (partner, program) and link click counters by link, each as an increment from zero.
pub type Figures = Deltas;

/// One record that breaks an invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The invariant's name (`sale_without_commission`, …).
    pub check: &'static str,
    /// What the id names (`sale_id`, `commission_id`, `customer_id`, `count`, …).
    pub id_label: &'static str,
    /// The record's id, or a count.
    pub id: i64,
    /// What the key names (`transaction_id`, `click_id`).
    pub key_label: &'static str,
    /// The sale's `transaction_id` (`processor_event_id`), or the customer's or click
    /// event's click id.
    pub key: String,
}

/// How many raw records were checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct RawCounts {
    /// Real click events.
    pub clicks: i64,
    /// Real lead events.
    pub leads: i64,
    /// Real sale events.
    pub sales: i64,
    /// Commissions.
    pub commissions: i64,
    /// Real sales with something refunded.
    pub refunded_sales: i64,
}

/// One consistent snapshot of stored and recomputed figures and broken invariants.
#[derive(Debug, Default)]
pub struct Integrity {
    /// Figures as the counters and rollup tables hold them.
    pub stored: Figures,
    /// The same figures recomputed from the raw events.
    pub recomputed: Figures,
    /// Records breaking a cross-record invariant (at most 100 per invariant).
    pub violations: Vec<Violation>,
    /// Sizes of the raw tables checked.
    pub counts: RawCounts,
}
